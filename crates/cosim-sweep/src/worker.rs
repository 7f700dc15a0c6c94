//! A sweep's worker process: runs the sweep's runs one after the other,
//! as its parent ([`crate::pool`]) hands them over, so that an FMU that
//! ends its process (`exit()`, a segfault, an abort) costs one run, not
//! the sweep.
//!
//! The parent writes JSON lines to the worker's standard input: the sweep
//! first ([`ToWorker::Setup`]), then one run at a time, and
//! [`ToWorker::Interrupt`] at Ctrl-C; end of input (the parent closed it,
//! or died) interrupts too, and the worker ends after its run. The worker
//! answers on its standard output: the run's files once it is prepared
//! ([`FromWorker::Started`]: what the parent computes the row of a run
//! whose worker died from), then its record ([`FromWorker::Done`]). An
//! FMU's own writes to standard output go to standard error instead
//! (descriptor 1 is pointed there once the channel is set aside).
//!
//! What the worker survives of its FMUs, as `cosim run` does: an FMU that
//! calls `exit()` (the exit handler writes every completed row and the
//! run's summary, sends the run's record and ends the worker), a call that
//! outlives the run's `step_timeout` (`init_timeout` before its first
//! step) or hangs through an interrupt (the
//! watchdog does the same). A segfault or an abort kills the worker: the
//! parent records the run as crashed and starts another worker, whose
//! first act is to remove the extraction directories the dead one left.
//!
//! The worker opens the FMUs from the parent's extraction (each FMU is
//! extracted once per sweep) and keeps them from run to run, with their
//! instances reset and reused ([`cosim_fmi::reuse`]); a worker whose
//! parent was killed removes those directories as it ends.

use std::fs::File;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use cosim_core::RunStatus;
use cosim_core::output::OutputsHandle;
use cosim_core::watchdog::{Hang, Timeouts, Watchdog};
use serde::{Deserialize, Serialize};

use crate::axis::AxisValue;
use crate::runs::{self, Planned, Ran, Record, RunFiles, Status};
use crate::spec::SweepSpec;
use crate::summary::Cells;

/// What the parent tells a worker, one JSON line each.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum ToWorker {
    /// The sweep, first: the sweep file's text as the parent read it.
    Setup {
        /// The sweep file (relative paths in it are relative to its
        /// directory).
        file: PathBuf,
        /// Its text.
        text: String,
        /// The sweep's output directory.
        out: PathBuf,
        /// Delete each run's trace and logs once its row is made.
        prune: bool,
        /// The FMUs the parent extracted (and keeps while the sweep runs):
        /// opened there, not extracted again.
        extracted: Vec<cosim_fmi::reuse::Extracted>,
        /// Instantiate anew every run (no reset and reuse).
        fresh_instances: bool,
    },
    /// A run to make.
    Run {
        /// Its index.
        index: usize,
        /// Its bisection stage.
        stage: u32,
        /// Its axis values.
        values: Vec<Value>,
    },
    /// Stop the run at its next macro step (Ctrl-C, SIGTERM).
    Interrupt,
}

/// An axis value on the wire (a float by its bits: JSON has no NaN).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Value {
    Int(i64),
    Float(u64),
    Bool(bool),
    Str(String),
}

impl From<&AxisValue> for Value {
    fn from(v: &AxisValue) -> Value {
        match v {
            AxisValue::Int(i) => Value::Int(*i),
            AxisValue::Float(x) => Value::Float(x.to_bits()),
            AxisValue::Bool(b) => Value::Bool(*b),
            AxisValue::Str(s) => Value::Str(s.clone()),
        }
    }
}

impl From<Value> for AxisValue {
    fn from(v: Value) -> AxisValue {
        match v {
            Value::Int(i) => AxisValue::Int(i),
            Value::Float(bits) => AxisValue::Float(f64::from_bits(bits)),
            Value::Bool(b) => AxisValue::Bool(b),
            Value::Str(s) => AxisValue::Str(s),
        }
    }
}

/// What a worker tells its parent, one JSON line each.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum FromWorker {
    /// The run is prepared and about to step: its files and times.
    Started(RunFiles),
    /// The run's record.
    Done {
        /// How it ended.
        status: Status,
        /// Why it failed or diverged.
        message: String,
        /// Every summary cell.
        cells: Cells,
        /// Its wall time, s.
        wall_time_s: f64,
        /// The worker ends after this record (its process cannot go on:
        /// an FMU called `exit()`, a call hangs).
        last: bool,
    },
}

impl FromWorker {
    fn done(record: Record, last: bool) -> FromWorker {
        FromWorker::Done {
            status: record.status,
            message: record.message,
            cells: record.cells,
            wall_time_s: record.wall_time_s,
            last,
        }
    }
}

/// The sweep this worker runs runs of.
struct Sweep {
    spec: SweepSpec,
    out: PathBuf,
    prune: bool,
}

/// The run in progress: what ending it without its stepping thread needs.
struct Current {
    planned: Planned,
    started: Instant,
    /// Once it is prepared.
    running: Option<(RunFiles, OutputsHandle)>,
}

static SWEEP: OnceLock<Sweep> = OnceLock::new();
static CURRENT: Mutex<Option<Current>> = Mutex::new(None);
/// The channel to the parent (the original standard output).
static CHANNEL: Mutex<Option<File>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn send(message: &FromWorker) {
    let Ok(mut line) = serde_json::to_string(message) else {
        return;
    };
    line.push('\n');
    if let Some(channel) = lock(&CHANNEL).as_mut() {
        // (A parent that is gone reads nothing; the run is on disk.)
        let _ = channel.write_all(line.as_bytes());
    }
}

/// Says what stopped the worker on standard error (a write that fails is
/// ignored: `eprintln!` would panic).
fn complain(message: &str) {
    let _ = writeln!(std::io::stderr(), "error: sweep worker: {message}");
}

/// Exit status of a worker that ended because its run could not go on
/// (the record was sent first).
const ENDED_WITH_ITS_RUN: u8 = 3;

/// Serves runs on standard input until it ends; returns the exit status
/// (0 at the end of the input, 2 when the setup is wrong). The caller
/// ends the process with [`cosim_fmi::ffi::exit_process`]: neither C exit
/// handlers (they would take the end for an FMU's `exit()`) nor library
/// destructors run.
pub fn serve() -> u8 {
    if let Err(e) = set_channel_aside() {
        complain(&format!("cannot set up the channel to the sweep: {e}"));
        return 2;
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    if let Err(e) = handle_signals(&interrupt) {
        complain(&format!("cannot install the signal handlers: {e}"));
        return 2;
    }
    remove_left_extractions();
    let (tx, rx) = std::sync::mpsc::channel::<ToWorker>();
    let flag = Arc::clone(&interrupt);
    let reader = std::thread::Builder::new()
        .name("sweep-worker-input".into())
        .spawn(move || read_input(&tx, &flag));
    if let Err(e) = reader {
        complain(&format!("cannot start a thread: {e}"));
        return 2;
    }
    // FMUs kept from run to run; dropped at the end (parked instances freed).
    let keep = cosim_fmi::reuse::keep_open();
    let sweep = match rx.recv() {
        Ok(ToWorker::Setup {
            file,
            text,
            out,
            prune,
            extracted,
            fresh_instances,
        }) => match SweepSpec::from_checked_str(&text, &file) {
            Ok(spec) => {
                let roots = extracted.iter().map(|e| e.root.clone()).collect();
                let _ = LENT.set((rustix::process::getppid(), roots));
                cosim_fmi::reuse::use_extracted(extracted);
                cosim_fmi::reuse::fresh_instances(fresh_instances);
                SWEEP.get_or_init(|| Sweep { spec, out, prune })
            }
            Err(e) => {
                complain(&e.to_string());
                return 2;
            }
        },
        // No sweep: the parent is gone, or speaks another protocol.
        _ => return 2,
    };
    // An FMU that ends the process: the run ends as `cosim run`'s does.
    cosim_fmi::ffi::on_foreign_exit(|| {
        end_run(
            Status::Crashed,
            "an FMU ended the run's process: it called exit() during the run",
            RunStatus::Error,
        )
    });
    let mut watching: Watching = None;
    while let Ok(message) = rx.recv() {
        if let ToWorker::Run {
            index,
            stage,
            values,
        } = message
        {
            let planned = Planned {
                index,
                stage,
                values: values.into_iter().map(AxisValue::from).collect(),
            };
            // (A run handed ahead, not started when the interrupt came.)
            let record = if interrupt.load(Ordering::Relaxed) {
                runs::not_started(&sweep.spec, &planned)
            } else {
                run_one(sweep, planned, &interrupt, &mut watching)
            };
            send(&FromWorker::done(record, false));
        }
    }
    drop(keep);
    remove_lent_extractions_of_a_dead_parent();
    0
}

/// The parent's process id and the extraction directories it lent.
static LENT: OnceLock<(Option<rustix::process::Pid>, Vec<PathBuf>)> = OnceLock::new();

/// The parent killed (the worker's input ended without it): the
/// extraction directories it lent are removed here, as a host removes its
/// master's (the next process to extract would otherwise).
fn remove_lent_extractions_of_a_dead_parent() {
    if let Some((parent, roots)) = LENT.get()
        && rustix::process::getppid() != *parent
    {
        for root in roots {
            cosim_fmi::extraction::remove_orphaned(root);
        }
    }
}

/// The watchdog of hung FMU calls, kept from run to run while the runs'
/// `step_timeout` and `init_timeout` are the same (starting one per run
/// would cost a run the wait for the thread to stop, up to its 50 ms
/// period).
type Watching = Option<((Option<f64>, Option<f64>), Watchdog)>;

/// One run, watched: its outputs known to the exit handler, its calls to
/// the watchdog (the run's `step_timeout` and `init_timeout`, or half a
/// second after an interrupt).
fn run_one(
    sweep: &Sweep,
    planned: Planned,
    interrupt: &Arc<AtomicBool>,
    watching: &mut Watching,
) -> Record {
    *lock(&CURRENT) = Some(Current {
        planned: planned.clone(),
        started: Instant::now(),
        running: None,
    });
    let record = runs::execute_watched(
        &sweep.spec,
        &planned,
        &sweep.out,
        sweep.prune,
        Some(Arc::clone(interrupt)),
        |files, outputs| {
            if let Some(c) = lock(&CURRENT).as_mut() {
                c.running = Some((files.clone(), outputs));
            }
            // (What the parent reads a crashed run's rows from; a pruned
            // run has no files, and the message would cost it a wake-up.)
            if !sweep.prune {
                send(&FromWorker::Started(files.clone()));
            }
            if watching
                .as_ref()
                .is_none_or(|(timeouts, _)| *timeouts != files.call_timeouts)
            {
                // (One watchdog at a time: the old one stops first.)
                drop(watching.take());
                *watching = watch(files.call_timeouts, interrupt).map(|w| (files.call_timeouts, w));
            }
        },
    );
    *lock(&CURRENT) = None;
    record
}

/// A watchdog that ends the run in progress when a call outlives its
/// limit (`step_timeout`, `init_timeout`: s), or hangs half a second after
/// an interrupt.
fn watch(
    (step, init): (Option<f64>, Option<f64>),
    interrupt: &Arc<AtomicBool>,
) -> Option<Watchdog> {
    let on_hang = Box::new(|hang: Hang| {
        let (row, status) = if hang.interrupted {
            (Status::Interrupted, RunStatus::Interrupted)
        } else {
            (Status::Error, RunStatus::Error)
        };
        end_run(row, &hang.to_string(), status)
    });
    let timeouts = Timeouts {
        step: step.map(Duration::from_secs_f64),
        init: init.map(Duration::from_secs_f64),
    };
    match Watchdog::start(timeouts, Some(Arc::clone(interrupt)), on_hang) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!("no watchdog of hung FMU calls: {e}");
            None
        }
    }
}

/// Ends the run in progress without its stepping thread (stuck in an FMU
/// call, or inside an FMU's `exit()`): writes every completed row and the
/// run's summary, sends its record, removes this process's extraction
/// directories and ends the process.
fn end_run(status: Status, message: &str, summary_status: RunStatus) -> ! {
    let current = lock(&CURRENT).take();
    if let (Some(sweep), Some(c)) = (SWEEP.get(), current) {
        let (files, summary, tables) = match &c.running {
            Some((files, outputs)) => {
                let summary = outputs.summary_now(summary_status, Some(message.to_string()));
                if let Some(s) = &summary
                    && let Err(e) = outputs.finish_now(s)
                {
                    tracing::error!("writing the outputs failed: {e}");
                }
                (files.clone(), summary, outputs.take_tables())
            }
            None => (RunFiles::default(), None, Vec::new()),
        };
        let ran = Ran {
            planned: &c.planned,
            out: &sweep.out,
            files: &files,
            started: c.started,
            tables,
        };
        let record = ran.record(
            &sweep.spec,
            summary.as_ref(),
            status,
            message.to_string(),
            sweep.prune,
        );
        send(&FromWorker::done(record, true));
    }
    cosim_fmi::archive::remove_extractions();
    remove_lent_extractions_of_a_dead_parent();
    cosim_fmi::ffi::exit_process(ENDED_WITH_ITS_RUN)
}

/// Reads the parent's lines: runs go to the serving thread, an interrupt
/// or the end of the input sets the flag.
fn read_input(tx: &std::sync::mpsc::Sender<ToWorker>, interrupt: &AtomicBool) {
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else {
            break;
        };
        match serde_json::from_str::<ToWorker>(&line) {
            Ok(ToWorker::Interrupt) => interrupt.store(true, Ordering::SeqCst),
            Ok(message) => {
                if tx.send(message).is_err() {
                    break;
                }
            }
            Err(e) => {
                tracing::error!("sweep worker: a line it does not understand ({e}): {line}");
                break;
            }
        }
    }
    interrupt.store(true, Ordering::SeqCst);
}

/// Keeps the original standard output as the channel to the parent and
/// points descriptor 1 at standard error, where an FMU's `printf` then
/// goes instead of into the channel.
fn set_channel_aside() -> std::io::Result<()> {
    let channel = rustix::io::dup(std::io::stdout())?;
    rustix::stdio::dup2_stdout(std::io::stderr())?;
    *lock(&CHANNEL) = Some(File::from(channel));
    Ok(())
}

/// SIGINT and SIGTERM (a Ctrl-C at the terminal reaches the workers too)
/// stop the run at its next macro step, as the parent's interrupt does;
/// SIGXFSZ (a file size limit) is an error of the write, not a kill.
fn handle_signals(interrupt: &Arc<AtomicBool>) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM, SIGXFSZ};
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(interrupt))?;
    }
    signal_hook::flag::register(SIGXFSZ, Arc::new(AtomicBool::new(false)))?;
    Ok(())
}

/// Removes the extraction directories of processes that are gone: a
/// worker started in place of one that died of its FMU cleans up after
/// it. (The first extraction directory a process makes does that; this
/// one is made for nothing else and removed at once.)
fn remove_left_extractions() {
    match cosim_fmi::extraction::create_dir(cosim_fmi::extraction::PREFIX) {
        Ok(dir) => drop(dir),
        Err(e) => tracing::debug!("sweep worker: no extraction directory: {e}"),
    }
}
