//! Ending a run from outside the stepping thread, when that thread is
//! stuck in an FMU call or the process is being ended under it: an FMU
//! call that outlives `step_timeout`, Ctrl-C during a hung call (the
//! watchdog, `cosim_core::watchdog`), a second Ctrl-C, an FMU that calls
//! `exit()`. Each writes every completed row and the summary
//! ([`cosim_core::output::OutputsHandle::finish_now`]), says what
//! happened, and ends the process with a fixed status without waiting
//! for the FMU.

use std::path::PathBuf;
use std::sync::OnceLock;

use cosim_core::execution::RunStatus;
use cosim_core::output::OutputsHandle;

use crate::console::say;

/// The outputs of the run in progress, and their directory.
static RUN: OnceLock<(OutputsHandle, PathBuf)> = OnceLock::new();

/// Exit status when an FMU ended the process with `exit()`.
pub const FMU_EXITED: u8 = 1;

/// Remembers the outputs of the run about to start (once per process).
pub fn watch(outputs: OutputsHandle, dir: PathBuf) {
    let _ = RUN.set((outputs, dir));
}

/// Writes every completed row and the summary (`status`, `message`),
/// says so, and ends the process with `code`.
pub fn end_now(status: RunStatus, message: &str, code: u8) -> ! {
    match RUN.get() {
        Some((outputs, dir)) => {
            let (t, steps) = outputs.progress();
            let written = outputs
                .summary_now(status, Some(message.to_string()))
                .map(|summary| outputs.finish_now(&summary));
            say!("error: {message}");
            match written {
                Some(Ok(())) => say!(
                    "the outputs hold every completed step up to t = {t} ({steps} macro steps) and the summary ({})",
                    dir.display()
                ),
                Some(Err(e)) => say!("writing the outputs failed: {e}"),
                None => say!(
                    "no step was made; the outputs hold their headers only ({})",
                    dir.display()
                ),
            }
        }
        None => say!("error: {message}"),
    }
    // The stuck thread holds the FMUs: their extraction directories are
    // not dropped, so they are removed here (hosts clean up after
    // themselves when this process is gone).
    cosim_fmi::archive::remove_extractions();
    cosim_fmi::ffi::exit_process(code)
}
