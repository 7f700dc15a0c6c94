//! The host's standard error on the master's side: forwarded to the
//! master's, its last lines kept for error messages, in bounded memory
//! whatever the host writes (a line of gigabytes is forwarded piece by
//! piece and kept only in part).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use cosim_fmi::text::{LOG_MESSAGE_MAX, bounded_text};

/// Lines of the host's standard error kept for error messages.
const TAIL_LINES: usize = 20;

/// The most bytes of one line kept for error messages: a log line of the
/// FMU (its message bounded by [`LOG_MESSAGE_MAX`]) with room for its
/// prefix. A longer line is kept cut, with a note.
const KEPT_LINE_MAX: usize = LOG_MESSAGE_MAX + 4096;

/// A line up to this long is forwarded with one write (lines of several
/// hosts and of the master do not mix); a longer one in writes of this
/// size as it arrives, rather than held whole.
const PIECE: usize = KEPT_LINE_MAX;

/// The host's standard error: forwarded to ours, the last lines kept
/// (except FMI call-log lines, which are only forwarded: the lines kept
/// are quoted in error messages as the FMU's last words).
pub(crate) struct Tail {
    lines: Mutex<(VecDeque<String>, bool)>,
    done: Condvar,
    /// The instances whose FMI call log goes to the host's standard error.
    call_logs: Mutex<Vec<String>>,
}

impl Tail {
    /// Starts forwarding `stderr` of the host of `name` (its first
    /// instance) on a thread of its own.
    pub(crate) fn start(stderr: std::process::ChildStderr, name: &str) -> Arc<Tail> {
        let tail = Arc::new(Tail {
            lines: Mutex::new((VecDeque::new(), false)),
            done: Condvar::new(),
            call_logs: Mutex::new(Vec::new()),
        });
        let t = Arc::clone(&tail);
        let spawned = std::thread::Builder::new()
            .name(format!("host-stderr-{name}"))
            .spawn(move || {
                split_lines(
                    stderr,
                    |bytes| {
                        let _ = std::io::stderr().lock().write_all(bytes);
                    },
                    |line| {
                        if t.is_call_log_line(&line) {
                            return;
                        }
                        t.keep(strip_ansi(&line));
                    },
                );
                if let Ok(mut l) = t.lines.lock() {
                    l.1 = true;
                }
                t.done.notify_all();
            });
        if spawned.is_err()
            && let Ok(mut l) = tail.lines.lock()
        {
            l.1 = true;
        }
        tail
    }

    /// A tail of a host without standard error: closed from the start.
    pub(crate) fn start_closed() -> Arc<Tail> {
        Arc::new(Tail {
            lines: Mutex::new((VecDeque::new(), true)),
            done: Condvar::new(),
            call_logs: Mutex::new(Vec::new()),
        })
    }

    /// Instance `name` writes its FMI call log to the host's standard
    /// error: its lines are forwarded, not kept.
    pub(crate) fn skip_call_log_of(&self, name: &str) {
        if let Ok(mut names) = self.call_logs.lock() {
            names.push(name.to_string());
        }
    }

    fn is_call_log_line(&self, line: &str) -> bool {
        self.call_logs.lock().is_ok_and(|names| {
            names
                .iter()
                .any(|n| cosim_fmi::ffi::call_log::is_call_log_line(line, n))
        })
    }

    fn keep(&self, line: String) {
        if let Ok(mut l) = self.lines.lock() {
            if l.0.len() == TAIL_LINES {
                l.0.pop_front();
            }
            l.0.push_back(line);
        }
    }

    /// Waits (at most `limit`) until the host's standard error is closed.
    pub(crate) fn wait_closed(&self, limit: Duration) {
        let Ok(guard) = self.lines.lock() else {
            return;
        };
        let _ = self.done.wait_timeout_while(guard, limit, |l| !l.1);
    }

    /// The lines kept, oldest first, and forgets them.
    pub(crate) fn take(&self) -> Vec<String> {
        self.lines
            .lock()
            .map(|mut l| l.0.drain(..).collect())
            .unwrap_or_default()
    }
}

/// Reads `input` to its end (or an error), line by line: `forward` gets
/// every byte, a line up to [`PIECE`] bytes in one call with its newline
/// (one added to a last line without one), a longer one in pieces as they
/// arrive; `finished` gets each line's text without its line end, at most
/// [`KEPT_LINE_MAX`] bytes of it (then cut with a note). Memory stays
/// within a few pieces whatever the lines' length.
fn split_lines(input: impl Read, mut forward: impl FnMut(&[u8]), mut finished: impl FnMut(String)) {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    // The current line's bytes not forwarded yet, and its first bytes
    // (one more than kept, to tell a cut line).
    let mut pending: Vec<u8> = Vec::new();
    let mut kept: Vec<u8> = Vec::new();
    loop {
        let chunk = match reader.fill_buf() {
            Ok([]) => break,
            Ok(chunk) => chunk,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let (part, ends) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..=i], true),
            None => (chunk, false),
        };
        let room = (KEPT_LINE_MAX + 1).saturating_sub(kept.len());
        kept.extend_from_slice(&part[..part.len().min(room)]);
        pending.extend_from_slice(part);
        let n = part.len();
        reader.consume(n);
        if ends {
            forward(&pending);
            pending.clear();
            finished(line_text(&kept));
            kept.clear();
        } else if pending.len() >= PIECE {
            forward(&pending);
            pending.clear();
        }
    }
    if !kept.is_empty() {
        pending.push(b'\n');
        forward(&pending);
        finished(line_text(&kept));
    }
}

/// The text of a line's first bytes (one more than [`KEPT_LINE_MAX`] if
/// it is longer) without its line end.
fn line_text(kept: &[u8]) -> String {
    let mut bytes = kept;
    if bytes.len() <= KEPT_LINE_MAX {
        while let [rest @ .., b'\n' | b'\r'] = bytes {
            bytes = rest;
        }
    }
    bounded_text(bytes, KEPT_LINE_MAX, false, "line")
}

/// `line` without ANSI escape sequences (the host's log lines are coloured
/// like the master's; quoted in a message, the codes are noise).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        // ESC [ parameters... final byte (0x40..=0x7e); other escapes: one char.
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_codes_are_stripped() {
        assert_eq!(
            strip_ansi(
                "\u{1b}[31mERROR\u{1b}[0m boom \u{1b}[3minstance\u{1b}[0m\u{1b}[2m=\u{1b}[0mx"
            ),
            "ERROR boom instance=x"
        );
        assert_eq!(strip_ansi("plain"), "plain");
    }

    /// Splits `input`, returning the forwarded writes and the lines kept.
    fn split(input: &[u8]) -> (Vec<Vec<u8>>, Vec<String>) {
        let (mut writes, mut lines) = (Vec::new(), Vec::new());
        split_lines(input, |b| writes.push(b.to_vec()), |l| lines.push(l));
        (writes, lines)
    }

    #[test]
    fn short_lines_are_forwarded_whole_and_kept_without_their_line_end() {
        let (writes, lines) = split(b"one\ntwo\r\nlast");
        assert_eq!(writes, [&b"one\n"[..], b"two\r\n", b"last\n"]);
        assert_eq!(lines, ["one", "two", "last"]);
    }

    /// A host line of 20 MB (an FMU writing to its standard error without
    /// the logger) is forwarded in full, in pieces of bounded size, and
    /// kept cut with a note; the lines after it are whole.
    #[test]
    fn a_huge_line_is_forwarded_in_pieces_and_kept_cut() {
        let mut input = vec![b'x'; 20 << 20];
        input.extend_from_slice(b"\nafter\n");
        let (writes, lines) = split(&input);
        let forwarded: usize = writes.iter().map(Vec::len).sum();
        assert_eq!(forwarded, input.len());
        assert!(
            writes.iter().all(|w| w.len() <= PIECE + 64 * 1024),
            "{:?}",
            writes.iter().map(Vec::len).max()
        );
        assert_eq!(writes.last().map(Vec::as_slice), Some(&b"after\n"[..]));
        assert_eq!(lines.len(), 2);
        let note = format!(" ... [line cut at {KEPT_LINE_MAX} bytes]");
        assert!(
            lines[0].ends_with(&note),
            "{}",
            &lines[0][lines[0].len() - 60..]
        );
        assert_eq!(lines[0].len(), KEPT_LINE_MAX + note.len());
        assert_eq!(lines[1], "after");
    }
}
