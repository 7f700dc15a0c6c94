//! Ending a run from outside the stepping thread, when that thread is
//! stuck in an FMU call or the process is being ended under it: an FMU
//! call that outlives `step_timeout`, Ctrl-C during a hung call (the
//! watchdog, `cosim_core::watchdog`), a second Ctrl-C, an FMU that calls
//! `exit()`. Each writes every completed row and the summary
//! ([`cosim_core::output::OutputsHandle::finish_now`]), says what
//! happened, and ends the process with a fixed status without waiting
//! for the FMU. Once the run has ended (its summary written), what is
//! left is freeing the FMUs: the run's outcome then stands, and so does
//! the exit status its summary calls for.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use cosim_core::execution::RunStatus;
use cosim_core::output::OutputsHandle;

use crate::console::say;
use crate::interrupt::Interrupt;
use crate::run::exit;

/// The run in progress: its outputs, their directory, and the signal
/// handlers (for the status of an interrupted run).
struct Run {
    outputs: OutputsHandle,
    dir: PathBuf,
    interrupt: Interrupt,
}

static RUN: OnceLock<Run> = OnceLock::new();

/// Set by the first thread that ends the process.
static ENDING: AtomicBool = AtomicBool::new(false);

/// Exit status when an FMU ended the process with `exit()`.
pub const FMU_EXITED: u8 = 1;

/// Remembers the outputs of the run about to start (once per process).
pub fn watch(outputs: OutputsHandle, dir: PathBuf, interrupt: Interrupt) {
    let _ = RUN.set(Run {
        outputs,
        dir,
        interrupt,
    });
}

/// Writes every completed row and the summary (`status`, `message`),
/// says so, and ends the process with `code`; after the run's end, ends
/// it as the run ended ([`after_the_run`]).
pub fn end_now(status: RunStatus, message: &str, code: u8) -> ! {
    // The watchdog, a second signal, an FMU's exit() and an interrupted
    // check may all get here: the first ends the process, the others
    // wait for it (one message, one status).
    if ENDING.swap(true, Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
    match RUN.get() {
        Some(run) => {
            if let Some(ended) = run.outputs.ended() {
                after_the_run(run, ended, message)
            }
            let (t, steps) = run.outputs.progress();
            let written = run
                .outputs
                .summary_now(status, Some(message.to_string()))
                .map(|summary| run.outputs.finish_now(&summary));
            say!("error: {message}");
            // `-o FILE.csv`: the trace alone, no summary.
            let (outputs, hold, and_summary) = if PRIVATE_DIR.get().is_some() {
                ("the trace", "holds", "")
            } else {
                ("the outputs", "hold", " and the summary")
            };
            match written {
                Some(Ok(())) if steps == 0 => say!(
                    "no step was made; {outputs} {hold} their headers only{and_summary} ({})",
                    run.dir.display()
                ),
                Some(Ok(())) => say!(
                    "{outputs} {hold} every completed step up to t = {t} ({}){and_summary} ({})",
                    crate::console::count(
                        usize::try_from(steps).unwrap_or(usize::MAX),
                        "macro step",
                        "macro steps"
                    ),
                    run.dir.display()
                ),
                Some(Err(e)) => say!("writing the outputs failed: {e}"),
                None => say!(
                    "no step was made; {outputs} {hold} their headers only ({})",
                    run.dir.display()
                ),
            }
        }
        None => say!("error: {message}"),
    }
    leave(code)
}

/// The run had ended, every output and its summary written, when an FMU
/// call hung (`fmi2FreeInstance` past `step_timeout`), a second signal
/// came or an FMU called `exit()`: only freeing the FMUs was left. The
/// outputs are complete and the summary says how the run ended; the exit
/// status is the one that ending calls for (0 for a completed run), so
/// that status and summary agree. The FMU's misbehaviour is a warning.
fn after_the_run(run: &Run, ended: RunStatus, message: &str) -> ! {
    let (word, code) = match ended {
        RunStatus::Completed => ("completed", 0),
        RunStatus::Terminated => ("ended by an FMU", 0),
        RunStatus::Interrupted => ("interrupted", run.interrupt.exit_status()),
        RunStatus::Error => ("failed", exit::RUN_FAILED),
    };
    say!("warning: {message}");
    let written = if PRIVATE_DIR.get().is_some() {
        "its trace is written"
    } else {
        "its outputs and summary are written"
    };
    say!(
        "the run had {word} and {written} ({}): freeing the FMUs is not waited for",
        run.dir.display()
    );
    leave(code)
}

/// The private output directory of a run that writes its trace alone
/// (`-o FILE.csv`): it holds the run's lock only.
static PRIVATE_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Creates the private output directory of this process's run (in the
/// temporary directory, named after the process id).
pub fn private_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("cosim-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let _ = PRIVATE_DIR.set(dir.clone());
    Ok(dir)
}

/// Removes the private output directory, if there is one.
pub fn remove_private_dir() {
    if let Some(dir) = PRIVATE_DIR.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Ends the process with `code`, without the FMUs.
fn leave(code: u8) -> ! {
    remove_private_dir();
    // The stuck thread holds the FMUs: their extraction directories are
    // not dropped, so they are removed here (hosts clean up after
    // themselves when this process is gone).
    cosim_fmi::archive::remove_extractions();
    cosim_fmi::ffi::exit_process(code)
}
