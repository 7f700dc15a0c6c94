//! The `cosim` Python package's native module, `cosim._cosim`: the
//! engine of the `cosim` command (scenario loading, FMUs, masters,
//! outputs) in the Python process. The typed, documented API is the pure
//! Python package around it (`python/cosim/__init__.py`, with `.pyi`
//! stubs); this module does the work:
//!
//! - [`run`]: a whole run as `cosim run` does it (same preparation, same
//!   run loop, same output files); the engine steps on a worker thread
//!   while the calling thread, with the GIL released, waits and checks for
//!   Python signals every 50 ms: Ctrl-C sets the run's interrupt flag, and
//!   the run stops at the next macro step as on the command line.
//! - [`Simulation`]: step-wise control ([`cosim_scenario::session`]).
//! - [`sweep`], [`inspect`], [`read_csv`].
//!
//! Errors carry the messages the command prints.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use cosim_core::execution::RunStatus;
use cosim_fmi::Fmu;
use cosim_fmi::archive::platform_directories;
use cosim_fmi::inspect::InspectReport;
use cosim_scenario::runner::{self, PrepareError, Prepared};
use cosim_scenario::session::{Session, SessionError};
use cosim_scenario::{FmuInterface, Overrides, Scenario, SolverMethod, SolverSpec};
// The exceptions' module is `cosim`, the package that exports them (the
// native module `cosim._cosim` is an implementation detail): tracebacks
// and repr show `cosim.ScenarioError`, and pickling finds them there.
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

create_exception!(
    cosim,
    CosimError,
    PyException,
    "Base class of the errors of cosim."
);
create_exception!(
    cosim,
    ScenarioError,
    CosimError,
    "Bad input: a scenario, FMU, sweep or argument that cosim refuses before running (the command's exit status 2)."
);
create_exception!(
    cosim,
    OutputInUseError,
    ScenarioError,
    "The output directory is in use by another run or sweep (it holds the directory's lock): nothing was written. `path` is the directory, `pid` the holder's process id (None when unknown)."
);
create_exception!(
    cosim,
    RunError,
    CosimError,
    "A run that started and failed: an FMU error, a divergence (the command's exit status 1)."
);

/// The flag that makes waits for isolated FMUs give up (one per process:
/// `cosim_isolation::watch_interrupt`).
fn isolation_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let f = Arc::new(AtomicBool::new(false));
        cosim_isolation::watch_interrupt(Arc::clone(&f));
        f
    })
    .clone()
}

/// Runs `work` on a worker thread; meanwhile the calling thread, with the
/// GIL released, waits for it and every 50 ms checks for Python signals.
/// A signal handler that raises (Ctrl-C: `KeyboardInterrupt`) sets
/// `interrupt`, and the work (which polls it) stops at its next step.
/// Returns the work's result and the exception the handler raised, if any.
fn on_worker<T: Send>(
    py: Python<'_>,
    interrupt: &Arc<AtomicBool>,
    work: impl FnOnce() -> T + Send,
) -> PyResult<(T, Option<PyErr>)> {
    let finished = (Mutex::new(false), Condvar::new());
    std::thread::scope(|scope| {
        let done_signal = &finished;
        let handle = std::thread::Builder::new()
            .name("cosim-py-run".into())
            .spawn_scoped(scope, move || {
                let r = work();
                let (lock, cv) = done_signal;
                if let Ok(mut d) = lock.lock() {
                    *d = true;
                }
                cv.notify_all();
                r
            })
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start a thread: {e}")))?;
        let mut raised = None;
        loop {
            let done = py.detach(|| {
                let (lock, cv) = &finished;
                match lock.lock() {
                    Ok(d) => cv
                        .wait_timeout_while(d, Duration::from_millis(50), |d| !*d)
                        .map_or(true, |(d, _)| *d),
                    Err(_) => true,
                }
            });
            if done {
                break;
            }
            if raised.is_none()
                && let Err(e) = py.check_signals()
            {
                interrupt.store(true, Ordering::SeqCst);
                isolation_flag().store(true, Ordering::SeqCst);
                raised = Some(e);
            }
        }
        let result = py
            .detach(|| handle.join())
            .map_err(|_| PyRuntimeError::new_err("the cosim engine thread panicked"))?;
        Ok((result, raised))
    })
}

/// The scenario or file to run: a path, or scenario text (TOML).
enum Target {
    Path(PathBuf),
    Text(String),
}

/// The options of `cosim run` that choose and set up the interface of
/// the FMUs (`--interface`, `--solver`, `--relative-tolerance`).
#[derive(Debug, Clone, Default)]
struct InterfaceOptions {
    interface: Option<String>,
    solver: Option<String>,
    relative_tolerance: Option<f64>,
}

/// The overrides of `cosim run` that the Python API takes; an error (the
/// message) for an interface or solver it does not know.
fn overrides(
    stop: Option<f64>,
    step: Option<f64>,
    set: Vec<String>,
    out: Option<PathBuf>,
    options: InterfaceOptions,
) -> Result<Overrides, String> {
    let interface = match options.interface.as_deref() {
        None => None,
        Some("me" | "model-exchange") => Some(FmuInterface::ModelExchange),
        Some("cs" | "co-simulation") => Some(FmuInterface::CoSimulation),
        Some(other) => {
            return Err(format!(
                "error: interface must be \"cs\" (Co-Simulation) or \"me\" (Model Exchange, integrated by cosim's solver), not {other:?}"
            ));
        }
    };
    let method = match options.solver.as_deref() {
        None => None,
        Some("bdf") => Some(SolverMethod::Bdf),
        Some("rk45") => Some(SolverMethod::Rk45),
        Some(other) => {
            return Err(format!(
                "error: solver must be \"bdf\" or \"rk45\", not {other:?}"
            ));
        }
    };
    Ok(Overrides {
        set,
        stop,
        step,
        out,
        interface,
        solver: SolverSpec {
            method,
            relative_tolerance: options.relative_tolerance,
            ..SolverSpec::default()
        },
        ..Overrides::default()
    })
}

/// A sweep file given to `run`: the command's message.
fn refuse_sweep_file(path: &Path) -> Result<(), String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    let is_sweep = text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("[sweep]") || l.starts_with("[sweep.") || l.starts_with("[[sweep.")
    });
    if is_sweep {
        return Err(format!(
            "{}: error: this is a sweep file (it has a [sweep] table): run it with `cosim sweep {}`",
            path.display(),
            path.display()
        ));
    }
    Ok(())
}

/// Loads, resolves and assembles the target as `cosim run` does
/// (`run.rs`: `prepare_in`). The error is the message the command prints.
fn prepare(target: &Target, overrides: &Overrides) -> Result<(Prepared, Vec<String>), String> {
    let mut warnings = Vec::new();
    let prepared = match target {
        Target::Path(path) if cosim_ssp::is_system_structure(path) => {
            let imported = cosim_ssp::prepare(path, overrides, None).map_err(|e| e.to_string())?;
            warnings.extend(imported.diagnostics.iter().map(ToString::to_string));
            imported.prepared
        }
        Target::Path(path) => {
            refuse_sweep_file(path)?;
            runner::prepare(path, overrides, None).map_err(|e| e.to_string())?
        }
        Target::Text(text) => {
            // Relative paths in the text are relative to the working directory.
            let cwd = std::env::current_dir().map_err(|e| format!("error: {e}"))?;
            let load = || -> Result<Prepared, PrepareError> {
                let mut scenario = Scenario::from_str(text, cwd.join("<scenario text>.toml"))?;
                scenario.check_fmu_files()?;
                scenario.read_input_files()?;
                scenario.apply_overrides(overrides)?;
                runner::prepare_scenario(&scenario, None)
            };
            load().map_err(|e| e.to_string())?
        }
    };
    warnings.extend(prepared.resolved.warnings.iter().map(ToString::to_string));
    Ok((prepared, warnings))
}

fn target_of(target: &str, is_text: bool) -> Target {
    if is_text {
        Target::Text(target.to_string())
    } else {
        Target::Path(PathBuf::from(target))
    }
}

/// Why a run or sweep did not start: bad input (the message), or an
/// output directory in use.
enum NotRun {
    Bad(String),
    InUse {
        message: String,
        dir: PathBuf,
        pid: Option<u32>,
    },
}

impl NotRun {
    fn of_core(e: cosim_core::CoreError, prefix: &str) -> NotRun {
        match e {
            cosim_core::CoreError::OutputInUse { ref dir, pid, .. } => NotRun::InUse {
                message: format!("{prefix}{e}"),
                dir: dir.clone(),
                pid,
            },
            other => NotRun::Bad(format!("{prefix}{other}")),
        }
    }

    fn of_sweep(e: cosim_sweep::SweepError) -> NotRun {
        match e {
            cosim_sweep::SweepError::Output(core) => NotRun::of_core(core, "error: "),
            other => NotRun::Bad(other.to_string()),
        }
    }

    fn into_err(self, py: Python<'_>) -> PyErr {
        match self {
            NotRun::Bad(message) => ScenarioError::new_err(message),
            NotRun::InUse { message, dir, pid } => {
                let err = OutputInUseError::new_err(message);
                let value = err.value(py);
                let _ = value.setattr("path", dir);
                let _ = value.setattr("pid", pid);
                err
            }
        }
    }
}

/// The lock on a run's output directory, handed to the Python layer so
/// that it holds it while it reads the outputs back.
#[pyclass(module = "cosim._cosim")]
struct OutputLock {
    lock: Mutex<Option<cosim_core::output_lock::OutputLock>>,
}

#[pymethods]
impl OutputLock {
    /// Releases the lock (once; later calls do nothing).
    fn release(&self) {
        if let Ok(mut l) = self.lock.lock() {
            l.take();
        }
    }
}

/// What [`run`] hands back to the Python layer.
struct Ran {
    status: RunStatus,
    summary_json: String,
    error: Option<String>,
    out_dir: PathBuf,
    trace: Option<PathBuf>,
    energy: Option<PathBuf>,
    steps: Option<PathBuf>,
    warnings: Vec<String>,
    t_reached: f64,
    macro_steps: u64,
    lock: Option<cosim_core::output_lock::OutputLock>,
}

/// Runs a scenario, an SSP/OSP file or an FMU as `cosim run` does, writing
/// its outputs into `out` (or the scenario's directory). Returns a dict:
/// `status`, `summary` (JSON text), `error`, `message` (what the command
/// says), `out_dir`, `trace`, `energy`, `steps` (paths or None),
/// `warnings`, `interrupted`, `lock` (the output directory's, to release
/// once the outputs are read).
///
/// `interface` (`"cs"`, `"me"`), `solver` (`"bdf"`, `"rk45"`) and
/// `relative_tolerance` are `cosim run`'s `--interface`, `--solver` and
/// `--relative-tolerance`.
///
/// Raises ScenarioError for bad input (nothing ran), OutputInUseError
/// for an output directory another run holds, KeyboardInterrupt never:
/// an interrupted run comes back with status "interrupted".
#[pyfunction]
#[pyo3(signature = (target, is_text, stop=None, step=None, set=Vec::new(), out=None, interface=None, solver=None, relative_tolerance=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    target: &str,
    is_text: bool,
    stop: Option<f64>,
    step: Option<f64>,
    set: Vec<String>,
    out: Option<PathBuf>,
    interface: Option<String>,
    solver: Option<String>,
    relative_tolerance: Option<f64>,
) -> PyResult<Py<PyDict>> {
    let target = target_of(target, is_text);
    let options = InterfaceOptions {
        interface,
        solver,
        relative_tolerance,
    };
    let overrides = overrides(stop, step, set, out, options).map_err(ScenarioError::new_err)?;
    let interrupt = Arc::new(AtomicBool::new(false));
    isolation_flag().store(false, Ordering::SeqCst);
    let flag = Arc::clone(&interrupt);
    let work = move || -> Result<Ran, NotRun> {
        let (prepared, warnings) = prepare(&target, &overrides).map_err(NotRun::Bad)?;
        let paths = prepared.resolved.outputs.clone();
        let mut outcome = runner::run(prepared, Vec::new(), Some(flag))
            .map_err(|e| NotRun::of_core(e, "error: "))?;
        let lock = outcome.lock.take();
        let s = &outcome.summary;
        Ok(Ran {
            status: s.status,
            summary_json: serde_json::to_string(s).unwrap_or_else(|_| "{}".into()),
            error: outcome.error.map(|e| e.to_string()),
            out_dir: outcome.output_dir.clone(),
            trace: paths.trace,
            energy: paths.energy_log,
            steps: paths.step_log,
            warnings,
            t_reached: s.t_reached,
            macro_steps: s.stats.macro_steps,
            lock,
        })
    };
    let (result, raised) = on_worker(py, &interrupt, work)?;
    let mut ran = match result {
        Ok(ran) => ran,
        Err(not_run) => {
            if let Some(e) = raised {
                return Err(e);
            }
            return Err(not_run.into_err(py));
        }
    };
    let d = PyDict::new(py);
    let status = match ran.status {
        RunStatus::Completed => "completed",
        RunStatus::Terminated => "terminated",
        RunStatus::Error => "error",
        RunStatus::Interrupted => "interrupted",
    };
    d.set_item("status", status)?;
    d.set_item("summary", ran.summary_json)?;
    let message = match ran.status {
        RunStatus::Interrupted => Some(format!(
            "interrupted by SIGINT at t = {} after {} macro steps: FMUs terminated; the outputs hold every completed step ({})",
            ran.t_reached,
            ran.macro_steps,
            ran.out_dir.display()
        )),
        RunStatus::Error => Some(format!("error: {}", ran.error.clone().unwrap_or_default())),
        _ => None,
    };
    d.set_item("message", message)?;
    d.set_item("error", ran.error)?;
    d.set_item("out_dir", ran.out_dir)?;
    d.set_item("trace", ran.trace)?;
    d.set_item("energy", ran.energy)?;
    d.set_item("steps", ran.steps)?;
    d.set_item("warnings", ran.warnings)?;
    d.set_item("interrupted", raised.is_some())?;
    let lock = OutputLock {
        lock: Mutex::new(ran.lock.take()),
    };
    d.set_item("lock", Py::new(py, lock)?)?;
    Ok(d.unbind())
}

/// Reads a CSV file that cosim wrote: a list of `(header, values)`, where
/// values is `bytes` of native-endian float64 when every cell is a number
/// (an empty cell is NaN), else a list of str.
#[pyfunction]
fn read_csv(py: Python<'_>, path: PathBuf) -> PyResult<Py<PyList>> {
    let columns = py
        .detach(|| read_columns(&path))
        .map_err(|e| CosimError::new_err(format!("{}: {e}", path.display())))?;
    let list = PyList::empty(py);
    for (name, col) in columns {
        match col {
            Column::Numbers(v) => {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
                list.append((name, PyBytes::new(py, &bytes)))?;
            }
            Column::Text(v) => list.append((name, v))?,
        }
    }
    Ok(list.unbind())
}

enum Column {
    Numbers(Vec<f64>),
    Text(Vec<String>),
}

fn read_columns(path: &Path) -> Result<Vec<(String, Column)>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_path(path)
        .map_err(|e| e.to_string())?;
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| e.to_string())?
        .iter()
        .map(str::to_string)
        .collect();
    let mut cells: Vec<Vec<String>> = vec![Vec::new(); headers.len()];
    for record in reader.records() {
        let record = record.map_err(|e| e.to_string())?;
        for (c, cell) in cells.iter_mut().zip(record.iter()) {
            c.push(cell.to_string());
        }
    }
    Ok(headers
        .into_iter()
        .zip(cells)
        .map(|(name, col)| {
            let numbers: Option<Vec<f64>> = col
                .iter()
                .map(|s| {
                    if s.is_empty() {
                        Some(f64::NAN)
                    } else {
                        s.parse::<f64>().ok()
                    }
                })
                .collect();
            match numbers {
                Some(v) if col.iter().any(|s| !s.is_empty()) || col.is_empty() => {
                    (name, Column::Numbers(v))
                }
                _ => (name, Column::Text(col)),
            }
        })
        .collect())
}

/// `cosim inspect --json`: the JSON text of an FMU (a file or unpacked
/// directory), or a list of reports for a directory of `.fmu` files.
#[pyfunction]
fn inspect(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    py.detach(|| inspect_json(&path))
        .map_err(ScenarioError::new_err)
}

fn inspect_json(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("error: {}: {e}", path.display()))?;
    let targets = if meta.is_dir() && !path.join("modelDescription.xml").is_file() {
        let mut fmus: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| format!("error: {}: {e}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("fmu")))
            .collect();
        fmus.sort();
        if fmus.is_empty() {
            return Err(format!(
                "error: {}: no .fmu files in this directory",
                path.display()
            ));
        }
        fmus
    } else {
        vec![path.to_path_buf()]
    };
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    for t in &targets {
        match Fmu::open(t) {
            Ok(fmu) => {
                let platforms = platform_directories(fmu.root());
                reports.push(InspectReport::new(
                    t,
                    fmu.model_description(),
                    Some(&platforms),
                ));
            }
            Err(e) => errors.push(format!("error: {e}")),
        }
    }
    if !errors.is_empty() {
        if targets.len() > 1 {
            errors.push(format!(
                "error: {} of {} FMUs could not be inspected",
                errors.len(),
                targets.len()
            ));
        }
        return Err(errors.join("\n"));
    }
    let text = if reports.len() == 1 && targets.len() == 1 {
        serde_json::to_string(&reports[0])
    } else {
        serde_json::to_string(&reports)
    };
    text.map_err(|e| format!("error: {e}"))
}

/// `cosim sweep`: runs a sweep file (or the shard `K/N`, `auto`, `auto/N`
/// of it). Returns a dict: `columns`, `rows` (the summary table, cells as
/// text), `summary_path`, `plot_path`, `counts`, `limits` (JSON text),
/// `violations`, `warnings`, `interrupted`. `worker`: the command (and
/// `worker_env` its environment) that starts a worker process running
/// [`sweep_worker`]; each run goes to one, so that an FMU that ends its
/// process is a `crashed` row; `None` runs them in this process.
/// `fresh_instances`: instantiate every run's FMUs anew instead of
/// resetting and reusing the instances of the run before. `prune`: keep
/// no file of a run (`--prune`): its metrics are computed from its rows
/// in memory, its row of the summary is all that is written.
///
/// Raises ScenarioError for bad input, OutputInUseError for an output
/// directory another run or sweep holds.
#[pyfunction]
#[pyo3(signature = (path, shard=None, out=None, jobs=None, plot=true, worker=None, worker_env=Vec::new(), fresh_instances=false, prune=false))]
#[allow(clippy::too_many_arguments)]
fn sweep(
    py: Python<'_>,
    path: PathBuf,
    shard: Option<String>,
    out: Option<PathBuf>,
    jobs: Option<usize>,
    plot: bool,
    worker: Option<Vec<String>>,
    worker_env: Vec<(String, String)>,
    fresh_instances: bool,
    prune: bool,
) -> PyResult<Py<PyDict>> {
    let shard = match shard {
        None => None,
        Some(arg) => {
            let arg: cosim_sweep::ShardArg = arg
                .parse()
                .map_err(|e: String| ScenarioError::new_err(format!("error: {e}")))?;
            let r = arg
                .resolve(|name| std::env::var(name).ok())
                .map_err(|e| ScenarioError::new_err(format!("error: {e}")))?;
            Some(r.shard)
        }
    };
    // The limit of `cosim sweep --jobs` and of the scenario key `threads`.
    let max = cosim_scenario::defaults::MAX_THREADS;
    if let Some(j) = jobs.filter(|&j| i64::try_from(j).map_or(true, |j| j > max)) {
        return Err(ScenarioError::new_err(format!(
            "error: jobs must be between 0 and {max}, not {j}"
        )));
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    isolation_flag().store(false, Ordering::SeqCst);
    let worker = worker.and_then(|command| {
        let mut words = command.into_iter();
        Some(cosim_sweep::WorkerCommand {
            program: words.next()?.into(),
            args: words.map(Into::into).collect(),
            env: worker_env
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        })
    });
    let options = cosim_sweep::Options {
        jobs,
        shard,
        out,
        plot,
        interrupt: Some(Arc::clone(&interrupt)),
        worker,
        fresh_instances,
        prune,
        ..cosim_sweep::Options::default()
    };
    let work = move || -> Result<(cosim_sweep::Outcome, Vec<String>), NotRun> {
        let spec = cosim_sweep::SweepSpec::load(&path).map_err(NotRun::of_sweep)?;
        // The FMUs the check opens are the ones the runs use.
        let _keep = cosim_fmi::reuse::keep_open();
        let warnings = cosim_sweep::check(&spec).map_err(NotRun::of_sweep)?;
        let outcome =
            cosim_sweep::run(&spec, &options, &cosim_sweep::Silent).map_err(NotRun::of_sweep)?;
        Ok((outcome, warnings))
    };
    let (result, raised) = on_worker(py, &interrupt, work)?;
    if let Some(e) = raised {
        return Err(e);
    }
    let (outcome, warnings) = result.map_err(|e| e.into_err(py))?;
    let d = PyDict::new(py);
    d.set_item("columns", outcome.summary.columns.clone())?;
    d.set_item("rows", outcome.summary.rows.clone())?;
    d.set_item("summary_path", outcome.summary_path.clone())?;
    d.set_item("plot_path", outcome.plot_path.clone())?;
    let c = outcome.meta.counts;
    d.set_item("counts", (c.ok, c.diverged, c.error, c.interrupted))?;
    d.set_item(
        "limits",
        serde_json::to_string(&outcome.meta.limits).unwrap_or_else(|_| "[]".into()),
    )?;
    d.set_item(
        "violations",
        outcome
            .violations
            .iter()
            .map(|v| {
                let value = if v.value.is_empty() {
                    "no value"
                } else {
                    v.value.as_str()
                };
                format!(
                    "{}: run {} (index {}) has {value}",
                    v.threshold, v.run, v.index
                )
            })
            .collect::<Vec<_>>(),
    )?;
    d.set_item("warnings", warnings)?;
    Ok(d.unbind())
}

/// Serves a sweep's runs on standard input, as `cosim sweep-worker` does
/// (the worker process of [`sweep`], `python -m cosim._sweep_worker`),
/// and ends the process: it never returns to Python.
#[pyfunction]
fn sweep_worker(py: Python<'_>) -> PyResult<()> {
    let code = py.detach(cosim_sweep::worker::serve);
    cosim_fmi::ffi::exit_process(code)
}

/// Step-wise control of a scenario (the engine behind `cosim.Simulation`).
#[pyclass(module = "cosim._cosim")]
struct Simulation {
    state: Mutex<SimState>,
}

struct SimState {
    session: Session,
    target: Target,
    overrides: Overrides,
    warnings: Vec<String>,
}

fn session_err(e: SessionError) -> PyErr {
    match e {
        SessionError::Core(e) => RunError::new_err(format!("error: {e}")),
        SessionError::Request(m) => CosimError::new_err(m),
    }
}

impl Simulation {
    /// The state, or an error when another thread is using it: waiting
    /// for it here would hold the GIL that the other thread needs to
    /// return (the engine steps with the GIL released).
    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, SimState>> {
        self.state.try_lock().map_err(|e| match e {
            std::sync::TryLockError::WouldBlock => PyRuntimeError::new_err(
                "this Simulation is in use by another thread (one call at a time)",
            ),
            std::sync::TryLockError::Poisoned(_) => {
                PyRuntimeError::new_err("a previous call panicked in this simulation")
            }
        })
    }
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (target, is_text, stop=None, step=None, set=Vec::new(), interface=None, solver=None, relative_tolerance=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        target: &str,
        is_text: bool,
        stop: Option<f64>,
        step: Option<f64>,
        set: Vec<String>,
        interface: Option<String>,
        solver: Option<String>,
        relative_tolerance: Option<f64>,
    ) -> PyResult<Self> {
        let target = target_of(target, is_text);
        let options = InterfaceOptions {
            interface,
            solver,
            relative_tolerance,
        };
        let overrides =
            overrides(stop, step, set, None, options).map_err(ScenarioError::new_err)?;
        let (prepared, warnings) = py
            .detach(|| prepare(&target, &overrides))
            .map_err(ScenarioError::new_err)?;
        Ok(Simulation {
            state: Mutex::new(SimState {
                session: Session::new(prepared),
                target,
                overrides,
                warnings,
            }),
        })
    }

    /// The scenario's warnings (as `cosim run` prints them).
    #[getter]
    fn warnings(&self) -> PyResult<Vec<String>> {
        Ok(self.lock()?.warnings.clone())
    }

    /// Sets a parameter or start value before the first step, as
    /// `--set NAME=VALUE` does (the FMUs are instantiated anew with it).
    fn set_start(&self, py: Python<'_>, assignment: String) -> PyResult<()> {
        let mut st = self.lock()?;
        if st.session.started() {
            return Err(CosimError::new_err(format!(
                "cannot set '{assignment}' at t = {}: parameters and start values are set before the first step (or read: the first get() initialises the FMUs); during the run, inputs are fed by connections and input files",
                st.session.time()
            )));
        }
        let mut overrides = st.overrides.clone();
        overrides.set.push(assignment);
        let target = &st.target;
        let (prepared, warnings) = py
            .detach(|| prepare(target, &overrides))
            .map_err(ScenarioError::new_err)?;
        st.session = Session::new(prepared);
        st.overrides = overrides;
        st.warnings = warnings;
        Ok(())
    }

    /// One macro step towards `t` (default: the stop time); returns the
    /// new time.
    #[pyo3(signature = (t=None))]
    fn step(&self, py: Python<'_>, t: Option<f64>) -> PyResult<f64> {
        let mut st = self.lock()?;
        let session = &mut st.session;
        let target = t.unwrap_or_else(|| session.stop_time());
        py.detach(|| session.step_towards(target).map(|_| session.time()))
            .map_err(session_err)
    }

    /// Steps until `t`; returns the number of macro steps made. Checks for
    /// Python signals every 50 ms (Ctrl-C stops at a macro step and raises
    /// KeyboardInterrupt; the simulation can go on from there).
    fn run_until(&self, py: Python<'_>, t: f64) -> PyResult<u64> {
        let mut st = self.lock()?;
        let session = &mut st.session;
        let mut total = 0;
        loop {
            let deadline = Instant::now() + Duration::from_millis(50);
            let mut k = 0u32;
            let n = py
                .detach(|| {
                    session.run_until(t, || {
                        k = k.wrapping_add(1);
                        !k.is_multiple_of(64) || Instant::now() < deadline
                    })
                })
                .map_err(session_err)?;
            total += n;
            if session.reached(t) || session.ended().is_some() {
                return Ok(total);
            }
            py.check_signals()?;
        }
    }

    /// The value of `name` (`subsystem.variable`) now: a float; a value
    /// traced as text as an exact int (an FMU's Int64 or UInt64) or as its
    /// text (a String; a Binary as hexadecimal digits).
    fn get(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        let mut st = self.lock()?;
        let session = &mut st.session;
        let key = |e| match e {
            SessionError::Request(m) => pyo3::exceptions::PyKeyError::new_err(m),
            other => session_err(other),
        };
        if !matches!(
            session.slot(name),
            Some(cosim_scenario::session::Slot::Text { .. })
        ) {
            let x = py.detach(|| session.get(name)).map_err(key)?;
            return Ok(x.into_pyobject(py)?.into_any().unbind());
        }
        let text = py.detach(|| session.get_text(name)).map_err(key)?;
        Ok(match text.parse::<i128>() {
            Ok(i) => i.into_pyobject(py)?.into_any().unbind(),
            Err(_) => text.into_pyobject(py)?.into_any().unbind(),
        })
    }

    /// Initialises the FMUs (the first step or get does it otherwise).
    fn start(&self, py: Python<'_>) -> PyResult<()> {
        let mut st = self.lock()?;
        let session = &mut st.session;
        py.detach(|| session.start()).map_err(session_err)
    }

    /// Terminates the FMUs; no more steps.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mut st = self.lock()?;
        let session = &mut st.session;
        py.detach(|| session.terminate()).map_err(session_err)
    }

    /// The readable names.
    fn names(&self) -> PyResult<Vec<String>> {
        Ok(self.lock()?.session.names())
    }

    /// Whether `name` can be read.
    fn has(&self, name: &str) -> PyResult<bool> {
        Ok(self.lock()?.session.slot(name).is_some())
    }

    /// The current time, s.
    #[getter]
    fn time(&self) -> PyResult<f64> {
        Ok(self.lock()?.session.time())
    }

    /// The start time, s.
    #[getter]
    fn start_time(&self) -> PyResult<f64> {
        Ok(self.lock()?.session.start_time())
    }

    /// The stop time, s.
    #[getter]
    fn stop_time(&self) -> PyResult<f64> {
        Ok(self.lock()?.session.stop_time())
    }

    /// Accepted macro steps.
    #[getter]
    fn macro_steps(&self) -> PyResult<u64> {
        Ok(self.lock()?.session.macro_steps())
    }

    /// Whether the FMUs are initialised.
    #[getter]
    fn started(&self) -> PyResult<bool> {
        Ok(self.lock()?.session.started())
    }

    /// Why no more steps can be made, if so.
    #[getter]
    fn ended(&self) -> PyResult<Option<String>> {
        Ok(self.lock()?.session.ended().map(str::to_string))
    }

    /// The master's name.
    #[getter]
    fn master(&self) -> PyResult<&'static str> {
        Ok(self.lock()?.session.master())
    }

    /// The solver figures of each Model Exchange subsystem so far, as the
    /// JSON text of an object by subsystem name (the summary's
    /// `calls.solver`).
    fn solver_statistics(&self) -> PyResult<String> {
        let stats: serde_json::Map<String, serde_json::Value> = self
            .lock()?
            .session
            .solver_statistics()
            .into_iter()
            .map(|(name, s)| (name, serde_json::to_value(s).unwrap_or_default()))
            .collect();
        Ok(serde_json::Value::Object(stats).to_string())
    }

    /// `(bond, cumulative residual energy J, cumulative transmitted
    /// energy J)` per power bond.
    fn energy(&self) -> PyResult<Vec<(String, f64, f64)>> {
        Ok(self.lock()?.session.energy())
    }
}

#[pymodule]
fn _cosim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CosimError", py.get_type::<CosimError>())?;
    m.add("ScenarioError", py.get_type::<ScenarioError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    m.add("OutputInUseError", py.get_type::<OutputInUseError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(read_csv, m)?)?;
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_worker, m)?)?;
    m.add_class::<OutputLock>()?;
    m.add_class::<Simulation>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
