//! Ctrl-C (SIGINT) and SIGTERM during `cosim run`.
//!
//! The first signal sets a flag that the run loop reads before each macro
//! step: the run stops at the next communication point, terminates its
//! FMUs, flushes its outputs and writes the summary with status
//! `"interrupted"`; `cosim` then exits with 130 (SIGINT) or 143 (SIGTERM).
//! A second signal ends the run at once with the same status, without
//! waiting for the FMU call in progress: every completed row and the
//! summary are written first (`ending.rs`). A call that hangs through the
//! first signal is ended the same way half a second later by the
//! watchdog (`cosim_core::watchdog`), so one Ctrl-C is enough.
//!
//! The handlers only store to atomics (async-signal-safe); a small thread
//! prints what happened.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;
use signal_hook::iterator::Signals;

use crate::console::say;

/// The signals handled, with the exit status each leads to (128 + number,
/// the shell convention).
const SIGNALS: [(i32, u8); 2] = [(SIGINT, 130), (SIGTERM, 143)];

/// The installed handlers: the flag handed to the run loop and the signal
/// that set it.
#[derive(Debug, Clone)]
pub struct Interrupt {
    flag: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

impl Interrupt {
    /// Installs the handlers for SIGINT and SIGTERM (for the rest of the
    /// process).
    pub fn install() -> std::io::Result<Interrupt> {
        let interrupted = Arc::new(AtomicBool::new(false));
        let signal = Arc::new(AtomicUsize::new(0));
        for (sig, _) in SIGNALS {
            flag::register_usize(sig, Arc::clone(&signal), sig as usize)?;
            flag::register(sig, Arc::clone(&interrupted))?;
        }
        let mut signals = Signals::new(SIGNALS.map(|(s, _)| s))?;
        std::thread::Builder::new()
            .name("cosim-signals".into())
            .spawn(move || {
                let mut received = signals.forever();
                if let Some(sig) = received.next() {
                    say!(
                        "{}: stopping at the next macro step (send it again to end at once)",
                        name(sig)
                    );
                }
                if let Some(sig) = received.next() {
                    let status = SIGNALS
                        .iter()
                        .find(|(s, _)| *s == sig)
                        .map_or(130, |(_, status)| *status);
                    crate::ending::end_now(
                        cosim_core::execution::RunStatus::Interrupted,
                        &format!("interrupted by a second {}", name(sig)),
                        status,
                    );
                }
            })?;
        Ok(Interrupt {
            flag: interrupted,
            signal,
        })
    }

    /// The flag the run loop polls.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }

    /// The signal received, as a name (`SIGINT`, `SIGTERM`), if any.
    pub fn signal_name(&self) -> Option<&'static str> {
        let sig = self.signal.load(Ordering::SeqCst);
        (sig != 0).then(|| name(sig as i32))
    }

    /// The exit status for an interrupted run: 130 after SIGINT, 143 after
    /// SIGTERM.
    pub fn exit_status(&self) -> u8 {
        let sig = self.signal.load(Ordering::SeqCst) as i32;
        SIGNALS
            .iter()
            .find(|(s, _)| *s == sig)
            .map_or(130, |(_, status)| *status)
    }
}

fn name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        _ => "signal",
    }
}
