//! Standard output and standard error that may fail: a closed pipe
//! (`cosim inspect DIR --json | head -1`, `cosim run s.toml 2>&1 | head`),
//! a full device (`> /dev/full`), a terminal that went away. `println!`
//! and `eprintln!` panic there; nothing here does.
//!
//! - Messages to standard error (`say!`) ignore every failure: a lost
//!   message is not worth a panic, nor stopping a run whose results are
//!   files. A run whose terminal is gone goes on and completes.
//! - What a command produces on standard output (`out!`) is its result,
//!   so failing to write it ends the command: quietly with status 0 when
//!   the reader has gone (a closed pipe: `head` took what it wanted), and
//!   otherwise with a message and status 1.

use std::io::Write;

use crate::run::{Failed, exit};

/// Writes a message (one line, `format!` syntax) to standard error,
/// ignoring failures.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::console::stderr_line(&format!($($arg)*))
    };
}
pub(crate) use say;

/// Writes `format!` text to standard output; an error (with its exit
/// status) when it cannot be written. `out!` adds no newline.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::console::stdout_text(&format!($($arg)*))
    };
}
pub(crate) use out;

/// One line to standard error with a single write; failures ignored.
/// Control characters are escaped (`\x1b`): messages quote FMU text (its
/// log lines in an error), which must not drive the terminal.
pub fn stderr_line(text: &str) {
    let text = cosim_fmi::text::escape_controls(text);
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(&text);
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Text to standard output, flushed; see the module documentation for
/// what a failure does.
pub fn stdout_text(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(stdout_failed)
}

fn stdout_failed(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        return anyhow::Error::new(Failed(0));
    }
    stderr_line(&format!("error: cannot write to standard output: {e}"));
    anyhow::Error::new(Failed(exit::RUN_FAILED))
}

/// `n` and the noun that goes with it ([`cosim_core::text::count`]).
pub fn count(n: usize, one: &str, many: &str) -> String {
    cosim_core::text::count(n, one, many)
}

/// `path` as messages show it: normalised lexically
/// ([`cosim_core::text::path`]).
pub fn shown(path: &std::path::Path) -> std::path::PathBuf {
    cosim_core::text::path(path)
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(count(0, "power bond", "power bonds"), "0 power bonds");
        assert_eq!(count(1, "power bond", "power bonds"), "1 power bond");
        assert_eq!(count(2, "axis", "axes"), "2 axes");
    }
}
