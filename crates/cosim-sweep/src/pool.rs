//! The sweep's side of its worker processes ([`crate::worker`]): a slot
//! per job, each with a long-lived worker that takes the slot's runs one
//! after the other over a pipe, so a sweep of many short runs starts a
//! process per job, not per run. A worker that dies under its run (an
//! FMU's segfault, abort or `exit()`) makes that run a `crashed` row and
//! is replaced; the sweep goes on.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::error::SweepError;
use crate::runs::{self, Planned, Ran, Record, RunFiles, Status};
use crate::spec::SweepSpec;
use crate::worker::{FromWorker, ToWorker, Value};

/// How to start a sweep's worker process: a program whose standard input
/// and output speak [`crate::worker`]'s protocol, as `cosim sweep-worker`
/// ([`crate::worker::serve`]) does; from Python, the interpreter running
/// the package's worker module.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Environment variables set for it (on top of this process's).
    pub env: Vec<(OsString, OsString)>,
}

/// A live worker.
struct Worker {
    child: Child,
    stdout: BufReader<ChildStdout>,
}

/// A slot: its worker and, apart (the interrupt is written to it while
/// the slot's thread waits for an answer), the worker's input.
#[derive(Default)]
struct Slot {
    worker: Mutex<Option<Worker>>,
    stdin: Mutex<Option<ChildStdin>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The workers of a sweep, one slot per job. Dropping it ends them (the
/// end of their input), waiting for each.
pub(crate) struct Pool {
    command: WorkerCommand,
    /// Delete each run's trace and logs once its row is made.
    prune: bool,
    /// The setup line every worker gets first.
    setup: String,
    slots: Vec<Slot>,
}

impl Pool {
    /// The pool for `spec`, `jobs` slots; the first worker starts now, so
    /// a command that cannot start is an error before any run.
    pub(crate) fn new(
        command: WorkerCommand,
        spec: &SweepSpec,
        out: &Path,
        prune: bool,
        fresh_instances: bool,
        jobs: usize,
    ) -> Result<Pool, SweepError> {
        let setup = serde_json::to_string(&ToWorker::Setup {
            file: spec.file.clone(),
            text: spec.source.text.clone(),
            out: out.to_path_buf(),
            prune,
            extracted: cosim_fmi::reuse::extracted(),
            fresh_instances,
        })
        .map_err(|e| SweepError::Other(format!("the sweep's worker setup: {e}")))?;
        let pool = Pool {
            command,
            prune,
            setup,
            slots: (0..jobs.max(1)).map(|_| Slot::default()).collect(),
        };
        pool.start(0).map_err(|e| {
            SweepError::Other(format!(
                "cannot start the sweep's worker process ({}): {e}",
                pool.command.program.display()
            ))
        })?;
        Ok(pool)
    }

    /// How many runs go at the same time.
    pub(crate) fn jobs(&self) -> usize {
        self.slots.len()
    }

    /// Starts the worker of slot `i` and hands it the sweep.
    fn start(&self, i: usize) -> std::io::Result<()> {
        let Some(slot) = self.slots.get(i) else {
            return Ok(());
        };
        let mut child = Command::new(&self.command.program)
            .args(&self.command.args)
            .envs(self.command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("no pipes to the worker"));
        };
        stdin.write_all(format!("{}\n", self.setup).as_bytes())?;
        *lock(&slot.stdin) = Some(stdin);
        *lock(&slot.worker) = Some(Worker {
            child,
            stdout: BufReader::new(stdout),
        });
        Ok(())
    }

    /// Tells every worker to stop its run at the next macro step.
    pub(crate) fn interrupt(&self) {
        let line = serde_json::to_string(&ToWorker::Interrupt).unwrap_or_default() + "\n";
        for slot in &self.slots {
            if let Some(stdin) = lock(&slot.stdin).as_mut() {
                let _ = stdin.write_all(line.as_bytes());
            }
        }
    }

    /// Hands run `planned` to slot `i`'s worker (started first if the
    /// slot has none), which makes it after the runs handed to it before;
    /// [`Pool::collect`] takes its record, in the order they were handed.
    pub(crate) fn dispatch(&self, i: usize, planned: &Planned) -> Result<(), String> {
        let slot = self
            .slots
            .get(i)
            .ok_or_else(|| "internal: no worker slot".to_string())?;
        if lock(&slot.worker).is_none() {
            self.start(i)
                .map_err(|e| format!("cannot start a worker process: {e}"))?;
        }
        self.send_run(slot, planned)
    }

    /// The record of the oldest run handed to slot `i`'s worker
    /// (`started`: when the worker began it), and whether the worker was
    /// replaced: it ended after the run (an FMU's `exit()`, a hung call),
    /// or died under it (a `crashed` record). The runs handed to a
    /// replaced worker after this one were not made: hand them again.
    pub(crate) fn collect(
        &self,
        i: usize,
        spec: &SweepSpec,
        planned: &Planned,
        out: &Path,
        started: Instant,
    ) -> (Record, bool) {
        let Some(slot) = self.slots.get(i) else {
            return (
                runs::skipped(spec, planned, "internal: no worker slot"),
                false,
            );
        };
        let mut files = None;
        let answer = {
            let mut worker = lock(&slot.worker);
            match worker.as_mut() {
                Some(w) => read_answer(w, &mut files),
                None => Err("no worker".to_string()),
            }
        };
        match answer {
            Ok((record, last)) => {
                if last {
                    self.retire(i, false);
                    self.replace(i);
                }
                let record = Record {
                    planned: planned.clone(),
                    name: runs::run_name(spec, planned),
                    ..record
                };
                (record, last)
            }
            Err(why) => {
                let how = match self.retire(i, true) {
                    Some(status) => describe_exit(status),
                    None => why,
                };
                self.replace(i);
                let ran = Ran {
                    planned,
                    out,
                    files: &files.unwrap_or_default(),
                    started,
                    tables: Vec::new(),
                };
                (crashed(spec, ran, &how, self.prune), true)
            }
        }
    }

    fn send_run(&self, slot: &Slot, planned: &Planned) -> Result<(), String> {
        let line = serde_json::to_string(&ToWorker::Run {
            index: planned.index,
            stage: planned.stage,
            values: planned.values.iter().map(Value::from).collect(),
        })
        .map_err(|e| e.to_string())?;
        let mut stdin = lock(&slot.stdin);
        let stdin = stdin.as_mut().ok_or_else(|| "no worker".to_string())?;
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|e| format!("the worker does not take the run: {e}"))
    }

    /// Ends slot `i`'s worker (the end of its input; `kill`: a worker
    /// that broke the protocol is killed) and returns how it ended. A
    /// worker that died is reaped here, so its status is its own.
    fn retire(&self, i: usize, kill: bool) -> Option<ExitStatus> {
        let slot = self.slots.get(i)?;
        drop(lock(&slot.stdin).take());
        let mut worker = lock(&slot.worker).take()?;
        if kill {
            let _ = worker.child.kill();
        }
        worker.child.wait().ok()
    }

    /// A new worker in slot `i`: at once, so that it removes the
    /// extraction directories of the one that died, also when no run is
    /// left for it.
    fn replace(&self, i: usize) {
        if let Err(e) = self.start(i) {
            tracing::warn!("cannot start a worker process in place of one that ended: {e}");
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        for i in 0..self.slots.len() {
            self.retire(i, false);
        }
    }
}

/// Reads the worker's answers to a run: its files, then its record (and
/// whether the worker ends after it). An error when the worker died.
fn read_answer(w: &mut Worker, files: &mut Option<RunFiles>) -> Result<(Record, bool), String> {
    let mut line = String::new();
    loop {
        line.clear();
        match w.stdout.read_line(&mut line) {
            Ok(0) => return Err("the worker process ended".into()),
            Ok(_) => {}
            Err(e) => return Err(format!("reading from the worker process: {e}")),
        }
        match serde_json::from_str::<FromWorker>(&line) {
            Ok(FromWorker::Started(f)) => *files = Some(f),
            Ok(FromWorker::Done {
                status,
                message,
                cells,
                wall_time_s,
                last,
            }) => {
                let record = Record {
                    planned: Planned {
                        index: 0,
                        stage: 0,
                        values: Vec::new(),
                    },
                    name: String::new(),
                    status,
                    message,
                    cells,
                    wall_time_s,
                };
                return Ok((record, last));
            }
            Err(e) => {
                // Not the protocol: the worker cannot be trusted further
                // (the caller kills it).
                return Err(format!(
                    "the worker process wrote something else than its answer ({e}): {}",
                    line.trim_end()
                ));
            }
        }
    }
}

/// The record of a run whose worker process died under it: what its
/// outputs hold (the trace's rows written before the death, the metrics
/// over them), status `crashed`.
fn crashed(spec: &SweepSpec, ran: Ran<'_>, how: &str, prune: bool) -> Record {
    // The reserve of the summary the run could not write.
    let dir = ran.out.join("runs").join(runs::run_name(spec, ran.planned));
    let _ = std::fs::remove_file(dir.join(".summary.json.tmp"));
    let message = format!(
        "the run's process {how}: an FMU crashed it (run FMUs that may crash with isolation = \"process\"); its outputs hold the rows written before"
    );
    ran.record(spec, None, Status::Crashed, message, prune)
}

/// "died of a segmentation fault (SIGSEGV)", "exited with status 3".
fn describe_exit(status: ExitStatus) -> String {
    cosim_isolation::describe_exit(status)
}

/// Forwards `flag` to the pool's workers until `done` is closed (its
/// sender dropped): the parent's Ctrl-C (or SIGTERM) stops every worker's
/// run at its next macro step. The flag (set by a signal handler) is
/// looked at every 50 ms; the end of the sweep does not wait out that
/// period, the closed channel wakes this thread at once.
pub(crate) fn forward_interrupt(pool: &Pool, flag: &AtomicBool, done: &Receiver<()>) {
    loop {
        if flag.load(Ordering::Relaxed) {
            pool.interrupt();
            return;
        }
        if let Err(RecvTimeoutError::Disconnected) = done.recv_timeout(Duration::from_millis(50)) {
            return;
        }
    }
}
