//! Batch sweeps of a cosim scenario (`cosim sweep`, `docs/sweep.md`).
//!
//! A sweep varies scenario values along axes (the step, the tolerance, the
//! master, a parameter: any key of `[simulation]`, `[master]`, `[outputs]`,
//! of a `[[subsystems]]` entry, or a subsystem variable), combined as a
//! cartesian product or a zip. Every run gets its own scenario (the TOML
//! text edited with `toml_edit`, then parsed as the scenario file it came
//! from), its own FMU instances and its own output directory
//! `<out>/runs/<index>-<values>/`; runs go in parallel, each in a worker
//! process of a pool ([`Options::worker`]; `pool.rs`, `worker.rs`) or on
//! threads of this one. A run that fails, diverges or crashes its process
//! is recorded and the sweep goes on; its row is in the summary as soon
//! as it ends. The output directory is locked for the sweep.
//!
//! The result is one summary CSV (one row per run, deterministic: merged
//! shards reproduce an unsharded sweep byte for byte except the last
//! column, the wall time), a JSON sidecar with the sweep's layout and the
//! stability limits, and an SVG plot.
//!
//! ```no_run
//! # fn demo() -> Result<(), cosim_sweep::SweepError> {
//! use cosim_sweep::{Options, SweepSpec};
//! let spec = SweepSpec::load("scenarios/sweeps/b1_a_stability.toml".as_ref())?;
//! let outcome = cosim_sweep::run(&spec, &Options::default(), &cosim_sweep::Silent)?;
//! for l in outcome.limits() {
//!     println!("{}: stable up to {:?}, diverged from {:?}", l.axis, l.stable, l.unstable);
//! }
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

pub mod axis;
mod edit;
mod error;
pub mod limits;
pub mod plot;
mod pool;
pub mod runs;
pub mod shard;
pub mod slurm;
pub mod spec;
pub mod summary;
pub mod threshold;
pub mod worker;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use cosim_core::output_lock::OutputLock;
use serde::{Deserialize, Serialize};

pub use axis::{Axis, AxisValue, Scale, Target};
pub use error::{Located, SweepError};
pub use limits::Limit;
pub use pool::WorkerCommand;
pub use runs::{Planned, Record, Status};
pub use shard::ShardArg;
pub use spec::{Combine, SweepSpec};
pub use summary::Summary;
pub use threshold::{Threshold, Violation};

/// A slice of a sweep: runs whose index `i` has `i % n == k - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// Which slice, 1-based.
    pub k: usize,
    /// How many slices.
    pub n: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// Parses `K/N` with `1 <= K <= N`.
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("'{s}' is not a shard: expected K/N with 1 <= K <= N, e.g. 2/3");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let k: usize = k.trim().parse().map_err(|_| bad())?;
        let n: usize = n.trim().parse().map_err(|_| bad())?;
        if k == 0 || n == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }
}

impl Shard {
    /// Whether run `index` belongs to this shard.
    pub fn owns(&self, index: usize) -> bool {
        index % self.n == self.k - 1
    }
}

/// How to run a sweep.
#[derive(Debug, Clone)]
pub struct Options {
    /// Runs at the same time (`None`: one per core).
    pub jobs: Option<usize>,
    /// Run only this slice.
    pub shard: Option<Shard>,
    /// The output directory, replacing the sweep's.
    pub out: Option<PathBuf>,
    /// Thresholds in addition to the sweep file's.
    pub fail_if: Vec<Threshold>,
    /// Draw the plot.
    pub plot: bool,
    /// Bisect the stability limit when the sweep asks for it (never in a
    /// shard: the bisection needs every run's result).
    pub refine: bool,
    /// Keep no file of a run: its metrics are computed from its rows in
    /// memory; its record is all that is kept (no run directory, trace,
    /// logs or summary.json).
    pub prune: bool,
    /// Set to stop: runs not started are skipped, running ones stop at
    /// their next macro step.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// Run each run in a worker process started with this command (a pool
    /// of `jobs` long-lived workers), so that an FMU that ends its process
    /// (`exit()`, a segfault, an abort) is a `crashed` row, not the end of
    /// the sweep. `None`: in this process, on threads (an FMU's crash
    /// ends the sweep; `step_timeout` does not apply).
    pub worker: Option<WorkerCommand>,
    /// Instantiate every run's FMUs anew, instead of resetting the
    /// instances of the run before (`fmi2Reset`, `fmi3Reset`) and reusing
    /// them ([`cosim_fmi::reuse`]): for an FMU whose reset does not bring
    /// it back to the state of a new instance.
    pub fresh_instances: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            jobs: None,
            shard: None,
            out: None,
            fail_if: Vec::new(),
            plot: true,
            refine: true,
            prune: false,
            interrupt: None,
            worker: None,
            fresh_instances: false,
        }
    }
}

/// `path` as messages show it: normalised lexically
/// ([`cosim_core::text::path`]).
pub(crate) fn shown(path: &Path) -> PathBuf {
    cosim_core::text::path(path)
}

/// Told about the progress of a sweep (from several threads).
pub trait Progress: Sync {
    /// The runs planned so far: `total` in all, those made and those to
    /// come, the bisection's stages ([sweep.refine]) counted at their most:
    /// a run per group (the other axes' values) and stage before the grid
    /// is made, then a run per bracket the grid found and stage (a bracket
    /// is never gained), lowered to the runs made when the bisection ends
    /// early (no bracket, or every bracket as narrow as it can be).
    fn planned(&self, total: usize);
    /// A run finished.
    fn finished(&self, record: &Record);
}

/// A [`Progress`] that ignores everything.
pub struct Silent;

impl Progress for Silent {
    fn planned(&self, _total: usize) {}
    fn finished(&self, _record: &Record) {}
}

/// An axis as the sidecar JSON records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AxisMeta {
    /// The key (the summary column).
    pub key: String,
    /// How the values were given.
    pub scale: Scale,
    /// The values, as summary cells.
    pub values: Vec<String>,
}

/// The JSON sidecar of a summary CSV (same path, `.json`): what merging
/// and plotting need to know about the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// The sweep file.
    pub sweep: PathBuf,
    /// The scenario.
    pub scenario: PathBuf,
    /// Runs of the grid.
    pub grid_runs: usize,
    /// The shard this summary holds, if any.
    pub shard: Option<Shard>,
    /// The axes in order.
    pub axes: Vec<AxisMeta>,
    /// The values set in every run (`[sweep] set`), in order (absent from
    /// the sidecars of earlier versions).
    #[serde(default)]
    pub set: Vec<AxisMeta>,
    /// The plot's horizontal axis.
    pub plot_x: Option<String>,
    /// The plot's metric.
    pub plot_metric: Option<String>,
    /// The plot file name.
    pub plot_file: String,
    /// Runs by status.
    pub counts: Counts,
    /// Stability limits along the plot's axis.
    pub limits: Vec<Limit>,
    /// The sweep file's thresholds (a merge checks them too).
    pub fail_if: Vec<String>,
}

impl Meta {
    fn axes(&self) -> Vec<(String, Scale)> {
        self.axes.iter().map(|a| (a.key.clone(), a.scale)).collect()
    }

    fn x_index(&self) -> Option<usize> {
        let x = self.plot_x.as_ref()?;
        self.axes.iter().position(|a| &a.key == x)
    }
}

/// Runs by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Completed, not diverged.
    pub ok: usize,
    /// Diverged.
    pub diverged: usize,
    /// Failed otherwise (an error, a crash).
    pub error: usize,
    /// Interrupted by SIGINT or SIGTERM, or not started because of one.
    #[serde(default)]
    pub interrupted: usize,
}

impl Counts {
    fn of(summary: &Summary) -> Counts {
        let mut c = Counts::default();
        for s in summary.column("status").unwrap_or_default() {
            match Status::parse(s) {
                Some(Status::Ok) => c.ok += 1,
                Some(Status::Diverged) => c.diverged += 1,
                Some(Status::Interrupted) => c.interrupted += 1,
                _ => c.error += 1,
            }
        }
        c
    }
}

/// What a sweep (or a merge) produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The summary table.
    pub summary: Summary,
    /// Where it was written.
    pub summary_path: PathBuf,
    /// The sidecar.
    pub meta: Meta,
    /// The plot, when drawn.
    pub plot_path: Option<PathBuf>,
    /// Rows that failed a threshold.
    pub violations: Vec<Violation>,
    /// The runs of this execution (empty for a merge).
    pub records: Vec<Record>,
}

impl Outcome {
    /// The stability limits along the plot's axis.
    pub fn limits(&self) -> &[Limit] {
        &self.meta.limits
    }
}

fn threads(jobs: Option<usize>) -> usize {
    jobs.filter(|&j| j > 0)
        .unwrap_or_else(cosim_core::parallel::processors)
}

/// Prepares the first run of the grid with its FMUs (opened, resolved,
/// instantiated, not stepped), so a scenario the FMUs reject stops the
/// sweep before it starts. Returns the scenario's warnings.
///
/// # Errors
///
/// The first run's scenario does not resolve or assemble.
pub fn check(spec: &SweepSpec) -> Result<Vec<String>, SweepError> {
    let values = spec.grid_values(0);
    let (scenario, _) = edit::build(spec, &values, &spec.out.join("check"))
        .map_err(|m| SweepError::Other(format!("{}: run 0: {m}", spec.file.display())))?;
    let warnings = check_first_run(spec, &scenario)?;
    check_every_value(spec, &values)?;
    Ok(warnings)
}

/// Every axis value that run 0 does not have, each once, resolved against
/// the FMUs (nothing instantiated): a value the scenario or the FMUs'
/// model descriptions refuse is an error at that value, before any run.
/// (With `combine = "zip"` each run is checked: its values go together.)
fn check_every_value(spec: &SweepSpec, first: &[AxisValue]) -> Result<(), SweepError> {
    let dir = spec.out.join("check");
    let mut trials: Vec<(usize, usize, Vec<AxisValue>)> = Vec::new();
    match spec.combine {
        spec::Combine::Product => {
            for (a, axis) in spec.axes.iter().enumerate() {
                for (j, v) in axis.values.iter().enumerate() {
                    if first.get(a) != Some(v) {
                        let mut values = first.to_vec();
                        values[a] = v.clone();
                        trials.push((a, j, values));
                    }
                }
            }
        }
        spec::Combine::Zip => {
            for j in 1..spec.grid_len() {
                trials.push((0, j, spec.grid_values(j)));
            }
        }
    }
    for (a, j, values) in trials {
        let axis = &spec.axes[a];
        let at = |message: String| -> SweepError {
            let span = axis
                .value_spans
                .get(j)
                .cloned()
                .flatten()
                .or_else(|| axis.key_span.clone());
            spec.error_at(
                span,
                format!("{} = {}: {message}", axis.key, values[a].cell()),
            )
            .with_note(format!(
                "in the scenario {}",
                shown(&spec.scenario).display()
            ))
            .into()
        };
        let (scenario, _) = edit::build(spec, &values, &dir).map_err(&at)?;
        match cosim_scenario::runner::resolve_scenario(&scenario) {
            Ok(_) => {}
            Err(cosim_scenario::runner::PrepareError::Scenario(e)) => {
                return Err(at(e.message.clone()));
            }
            Err(e) => return Err(at(e.to_string())),
        }
    }
    Ok(())
}

/// Run 0 prepared as it will run: its warnings, or its error (at the axis
/// a variable refers to).
fn check_first_run(
    spec: &SweepSpec,
    scenario: &cosim_scenario::Scenario,
) -> Result<Vec<String>, SweepError> {
    match cosim_scenario::runner::prepare_scenario(scenario, Some(1)) {
        Ok(prepared) => Ok(prepared
            .resolved
            .warnings
            .iter()
            .map(ToString::to_string)
            .collect()),
        Err(cosim_scenario::runner::PrepareError::Scenario(e)) => {
            // A variable axis the FMU does not have: point at the axis.
            let axis = e.argument.as_deref().and_then(|arg| {
                spec.axes.iter().chain(&spec.set).find(|a| match &a.target {
                    Target::Variable {
                        subsystem,
                        variable,
                    } => arg.starts_with(&format!("--set {subsystem}.{variable}=")),
                    _ => false,
                })
            });
            match axis {
                Some(a) => Err(spec
                    .error_at(a.key_span.clone(), format!("{}: {}", a.key, e.message))
                    .with_help(e.help.clone())
                    .with_note(format!(
                        "in the scenario {}",
                        shown(&spec.scenario).display()
                    ))
                    .into()),
                None => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// How the runs are made: in this process, or each in a worker process.
enum Runner {
    InProcess { jobs: usize },
    Workers(pool::Pool),
}

impl Runner {
    fn jobs(&self) -> usize {
        match self {
            Runner::InProcess { jobs } => *jobs,
            Runner::Workers(pool) => pool.jobs(),
        }
    }
}

/// What the threads of [`execute_all`] share.
struct Batch<'a> {
    spec: &'a SweepSpec,
    out: &'a Path,
    options: &'a Options,
    runner: &'a Runner,
    progress: &'a dyn Progress,
    live: &'a Mutex<summary::LiveSummary>,
}

impl Batch<'_> {
    fn interrupted(&self) -> bool {
        self.options
            .interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Makes the runs of job slot `slot`, each taking the next run not
    /// taken (`next`, an index into `planned`), until none is left; each
    /// record into `records`, its row into the summary at once.
    fn serve_slot(
        &self,
        slot: usize,
        planned: &[Planned],
        next: &AtomicUsize,
        records: &[Mutex<Option<Record>>],
    ) {
        let take = || {
            let k = next.fetch_add(1, Ordering::Relaxed);
            (k < planned.len()).then_some(k)
        };
        match self.runner {
            Runner::InProcess { .. } => {
                while let Some(k) = take() {
                    let p = &planned[k];
                    let record = if self.interrupted() {
                        runs::not_started(self.spec, p)
                    } else {
                        runs::execute(
                            self.spec,
                            p,
                            self.out,
                            self.options.prune,
                            self.options.interrupt.clone(),
                        )
                    };
                    self.finished(&records[k], record);
                }
            }
            Runner::Workers(pool) => self.serve_worker(pool, slot, planned, take, records),
        }
    }

    /// [`Batch::serve_slot`] with a worker process. While its runs are
    /// short, the worker is handed the next run before it ends the one it
    /// makes, so that it does not wait for this process between runs (a
    /// round trip between the processes costs as much as a short run);
    /// longer runs are handed one at a time, so that no run waits behind
    /// another while a slot is idle.
    fn serve_worker(
        &self,
        pool: &pool::Pool,
        slot: usize,
        planned: &[Planned],
        take: impl Fn() -> Option<usize>,
        records: &[Mutex<Option<Record>>],
    ) {
        let mut handed: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
        // (Not before a run said it is short: a long first run would keep
        // the run handed after it waiting.)
        let mut ahead = false;
        let mut started = Instant::now();
        loop {
            while handed.len() < if ahead { 2 } else { 1 } {
                let Some(k) = take() else { break };
                let p = &planned[k];
                if self.interrupted() {
                    self.finished(&records[k], runs::not_started(self.spec, p));
                } else if let Err(e) = pool.dispatch(slot, p) {
                    self.finished(&records[k], runs::skipped(self.spec, p, &e));
                } else {
                    handed.push_back(k);
                }
            }
            let Some(k) = handed.pop_front() else { break };
            let (record, replaced) = pool.collect(slot, self.spec, &planned[k], self.out, started);
            started = Instant::now();
            if replaced {
                // The runs handed to the worker that ended were not made.
                for k in std::mem::take(&mut handed) {
                    let p = &planned[k];
                    match pool.dispatch(slot, p) {
                        Ok(()) => handed.push_back(k),
                        Err(e) => self.finished(&records[k], runs::skipped(self.spec, p, &e)),
                    }
                }
            }
            ahead = record.wall_time_s < SHORT_RUN_S;
            self.finished(&records[k], record);
        }
    }

    /// A run's record: its row into the summary, the progress told.
    fn finished(&self, cell: &Mutex<Option<Record>>, record: Record) {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(&record.cells);
        self.progress.finished(&record);
        *cell.lock().unwrap_or_else(PoisonError::into_inner) = Some(record);
    }
}

/// A run this short (wall time, s) makes its worker take the next run
/// ahead ([`Batch::serve_worker`]).
const SHORT_RUN_S: f64 = 0.05;

/// Makes the `planned` runs, `jobs` at a time, each job slot taking the
/// next run not taken; the records in the order of `planned`.
fn execute_all(batch: &Batch<'_>, planned: &[Planned]) -> Result<Vec<Record>, SweepError> {
    let next = AtomicUsize::new(0);
    let records: Vec<Mutex<Option<Record>>> = planned.iter().map(|_| Mutex::new(None)).collect();
    let threads = batch.runner.jobs().min(planned.len());
    std::thread::scope(|scope| -> Result<(), SweepError> {
        // The interrupt forwarder ends when `done` is dropped: when every
        // run is made, or at any return from here, before the scope waits
        // for its threads.
        let (done, done_rx) = std::sync::mpsc::channel::<()>();
        let mut handles = Vec::new();
        for slot in 0..threads {
            let (next, records) = (&next, &records);
            let handle = std::thread::Builder::new()
                .name(format!("sweep-{slot}"))
                .spawn_scoped(scope, move || {
                    batch.serve_slot(slot, planned, next, records)
                })
                .map_err(|e| SweepError::Other(format!("cannot start a thread: {e}")))?;
            handles.push(handle);
        }
        if let (Runner::Workers(pool), Some(flag)) = (batch.runner, &batch.options.interrupt) {
            scope.spawn(move || pool::forward_interrupt(pool, flag, &done_rx));
        }
        for h in handles {
            let _ = h.join();
        }
        drop(done);
        Ok(())
    })?;
    Ok(records
        .into_iter()
        .zip(planned)
        .map(|(r, p)| {
            r.into_inner()
                .unwrap_or_else(PoisonError::into_inner)
                .unwrap_or_else(|| runs::skipped(batch.spec, p, "internal: the run was lost"))
        })
        .collect())
}

fn write_meta(path: &Path, meta: &Meta) -> Result<(), SweepError> {
    let text = serde_json::to_string_pretty(meta)
        .map_err(|e| SweepError::io(path, std::io::Error::other(e)))?;
    summary::write_atomic(path, (text + "\n").as_bytes()).map_err(|e| SweepError::io(path, e))
}

fn check_thresholds(
    summary: &Summary,
    thresholds: &[Threshold],
) -> Result<Vec<Violation>, SweepError> {
    let mut out = Vec::new();
    for t in thresholds {
        out.extend(t.check(summary).map_err(SweepError::Other)?);
    }
    Ok(out)
}

/// Removes the run directories in `runs_dir` (named like runs: three
/// digits first) that are not in `current`.
fn remove_stale_runs(runs_dir: &Path, current: &std::collections::HashSet<String>) {
    let Ok(entries) = std::fs::read_dir(runs_dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let looks_like_a_run =
            name.len() >= 3 && name.as_bytes()[..3].iter().all(u8::is_ascii_digit);
        if looks_like_a_run && !current.contains(&name) && e.path().is_dir() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Checks every threshold's metric (the file's `fail_if` and `extra`, the
/// command line's) before any run: a misspelt metric is an error now, not
/// after the whole sweep. Metrics whose name depends on the run (a bond's
/// residual energy, a compared column's error) are checked for their kind;
/// their bond or column is checked against the summary after the runs.
///
/// # Errors
///
/// The first threshold whose metric no run can have, with the metrics.
pub fn check_metrics(spec: &SweepSpec, extra: &[Threshold]) -> Result<(), SweepError> {
    use summary::{BOND_METRICS, LEAD, MAX_ABS, MIDDLE, RESIDUAL_ENERGY, RMS, TAIL};
    let axes = spec.axis_keys();
    let fixed: Vec<&str> = LEAD
        .iter()
        .chain(MIDDLE)
        .chain(TAIL)
        .copied()
        .chain(axes.iter().map(String::as_str))
        .chain(
            BOND_METRICS
                .iter()
                .copied()
                .filter(|_| spec.reference.as_ref().is_some_and(|r| r.power.is_some())),
        )
        .collect();
    for t in spec.fail_if.iter().chain(extra) {
        let m = t.metric.as_str();
        if fixed.contains(&m) || m.starts_with(RESIDUAL_ENERGY) {
            continue;
        }
        let compared = m.starts_with(MAX_ABS) || m.starts_with(RMS);
        if compared && spec.reference.is_some() {
            continue;
        }
        let why = if compared {
            " (errors against a reference need [sweep.reference])".to_string()
        } else if BOND_METRICS.contains(&m) {
            " (power-bond metrics need [sweep.reference] with 'power')".to_string()
        } else {
            error::did_you_mean(m, fixed.iter().copied())
                .map(|h| format!(" ({h})"))
                .unwrap_or_default()
        };
        return Err(SweepError::Other(format!(
            "threshold '{t}': no run has a metric '{m}'{why}; metrics: {}, {RESIDUAL_ENERGY}<bond>{}",
            fixed.join(", "),
            if spec.reference.is_some() {
                format!(", {MAX_ABS}<column>, {RMS}<column>")
            } else {
                String::new()
            }
        )));
    }
    Ok(())
}

/// Runs a sweep (or the shard of it `options.shard` names): every run,
/// the bisection of the stability limit, the summary CSV and its sidecar,
/// the plot, the thresholds. The output directory is locked for the
/// sweep (shared by the shards of one sweep); each run's row is in the
/// summary as soon as the run has ended.
///
/// # Errors
///
/// A threshold names no metric a run has ([`check_metrics`], before any
/// run), the output directory is in use ([`SweepError::Output`]) or
/// cannot be written, the worker processes cannot be started, a threshold
/// names a column the summary does not have. Failed runs are not errors:
/// they are rows.
pub fn run(
    spec: &SweepSpec,
    options: &Options,
    progress: &dyn Progress,
) -> Result<Outcome, SweepError> {
    check_metrics(spec, &options.fail_if)?;
    // Each FMU extracted once for the sweep (its workers open this
    // process's extraction), instances reset and reused from run to run.
    let _keep = cosim_fmi::reuse::keep_open();
    cosim_fmi::reuse::fresh_instances(options.fresh_instances);
    open_the_fmus(spec);
    let out = options.out.clone().unwrap_or_else(|| spec.out.clone());
    // Held until the plot is written: the directory is this sweep's.
    let lock = lock_output(&out, options.shard)?;
    let runs_dir = out.join("runs");
    // (A pruned sweep writes no run directory, nor the directory of them.)
    if !options.prune {
        std::fs::create_dir_all(&runs_dir).map_err(|e| SweepError::io(&runs_dir, e))?;
    }
    let (csv_name, json_name) = match options.shard {
        Some(s) => (
            format!("summary.shard-{}-of-{}.csv", s.k, s.n),
            format!("summary.shard-{}-of-{}.json", s.k, s.n),
        ),
        None => ("summary.csv".to_string(), "summary.json".to_string()),
    };
    // A sidecar of an earlier sweep would pass for this one's until the end.
    let json_path = out.join(&json_name);
    match std::fs::remove_file(&json_path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(SweepError::io(&json_path, e));
        }
        _ => {}
    }
    let keys = spec.axis_keys();
    let summary_path = out.join(csv_name);
    let live = Mutex::new(summary::LiveSummary::new(&summary_path, &keys)?);
    let jobs = threads(options.jobs);
    let runner = match &options.worker {
        Some(command) => Runner::Workers(pool::Pool::new(
            command.clone(),
            spec,
            &out,
            options.prune,
            options.fresh_instances,
            jobs,
        )?),
        None => Runner::InProcess { jobs },
    };
    let batch = Batch {
        spec,
        out: &out,
        options,
        runner: &runner,
        progress,
        live: &live,
    };
    let records = execute_stages(&batch)?;
    drop(runner);

    // The run directories of an earlier, different sweep in the same
    // place would read as this sweep's: remove those it has not made (a
    // shard leaves the others' alone).
    if options.shard.is_none() {
        let current: std::collections::HashSet<String> = records
            .iter()
            .map(|r| runs::run_name(spec, &r.planned))
            .collect();
        remove_stale_runs(&runs_dir, &current);
        if options.prune {
            // (Only if empty: the energy logs of nested systems are kept.)
            let _ = std::fs::remove_dir(&runs_dir);
        }
    }
    let summary = Summary::build(records.iter().map(|r| r.cells.clone()).collect(), &keys);
    summary.write(&summary_path)?;
    let meta = meta_of(spec, options.shard, &summary);
    write_meta(&json_path, &meta)?;
    let plot_path = if options.plot && options.shard.is_none() {
        let p = out.join(&spec.plot.file);
        draw_plot(&p, &summary, &meta)?;
        Some(p)
    } else {
        None
    };
    drop(lock);
    let thresholds: Vec<Threshold> = spec
        .fail_if
        .iter()
        .chain(&options.fail_if)
        .cloned()
        .collect();
    let violations = check_thresholds(&summary, &thresholds)?;
    Ok(Outcome {
        summary,
        summary_path,
        meta,
        plot_path,
        violations,
        records,
    })
}

/// Opens the FMUs of the sweep's first run (their model descriptions,
/// nothing instantiated) so that they are extracted in this process, once,
/// before the workers start: [`cosim_fmi::reuse::extracted`] hands them
/// over. (Already done when [`check`] ran under the same guard. A failure
/// is the first run's to report.)
fn open_the_fmus(spec: &SweepSpec) {
    let values = spec.grid_values(0);
    if let Ok((scenario, _)) = edit::build(spec, &values, &spec.out.join("check")) {
        let _ = cosim_scenario::runner::resolve_scenario(&scenario);
    }
}

/// Locks a sweep's output directory: the whole of it for a sweep, shared
/// with the other shards for a shard (their runs and summaries never
/// collide).
fn lock_output(out: &Path, shard: Option<Shard>) -> Result<Option<OutputLock>, SweepError> {
    match shard {
        None => OutputLock::exclusive(out),
        Some(s) => OutputLock::shard(out, s.k, s.n),
    }
    .map_err(SweepError::Output)
}

/// The grid's runs, then the bisection's stages (unsharded sweeps that
/// ask for it).
fn execute_stages(batch: &Batch<'_>) -> Result<Vec<Record>, SweepError> {
    let (spec, options) = (batch.spec, batch.options);
    let grid: Vec<Planned> = (0..spec.grid_len())
        .filter(|&i| options.shard.is_none_or(|s| s.owns(i)))
        .map(|index| Planned {
            index,
            stage: 0,
            values: spec.grid_values(index),
        })
        .collect();
    let keys = spec.axis_keys();
    let refine = spec
        .refine
        .filter(|_| options.refine && options.shard.is_none());
    // At most a bisection run per group and stage.
    let most = refine.map_or(0, |r| {
        let groups: std::collections::HashSet<String> = grid
            .iter()
            .map(|p| {
                let cells: Vec<String> = p.values.iter().map(AxisValue::cell).collect();
                limits::group_label(&keys, &cells, r.axis)
            })
            .collect();
        groups.len() * r.iterations as usize
    });
    batch.progress.planned(grid.len() + most);
    let mut records = execute_all(batch, &grid)?;
    if let Some(refine) = refine {
        let scale = spec
            .axes
            .get(refine.axis)
            .map_or(Scale::Linear, |a| a.scale);
        for stage in 1..=refine.iterations {
            let next = records
                .iter()
                .map(|r| r.planned.index + 1)
                .max()
                .unwrap_or(0);
            let planned = limits::bisect(&records, &keys, refine.axis, scale, stage, next);
            if planned.is_empty() {
                batch.progress.planned(records.len());
                break;
            }
            // At most as many runs in each stage to come as in this one.
            let stages_left = (refine.iterations - stage + 1) as usize;
            batch
                .progress
                .planned(records.len() + planned.len() * stages_left);
            records.extend(execute_all(batch, &planned)?);
        }
    }
    Ok(records)
}

/// The sidecar of a sweep's summary.
fn meta_of(spec: &SweepSpec, shard: Option<Shard>, summary: &Summary) -> Meta {
    let keys = spec.axis_keys();
    let axes: Vec<(String, Scale)> = spec.axes.iter().map(|a| (a.key.clone(), a.scale)).collect();
    let metric = spec
        .plot
        .metric
        .clone()
        .unwrap_or_else(|| plot::default_metric(summary));
    // A shard alone cannot bracket the limit: merge computes it.
    let limits = match (spec.plot.x, shard) {
        (Some(x), None) => limits::from_summary(summary, &axes, x),
        _ => Vec::new(),
    };
    let axis_meta = |a: &Axis| AxisMeta {
        key: a.key.clone(),
        scale: a.scale,
        values: a.values.iter().map(AxisValue::cell).collect(),
    };
    Meta {
        sweep: spec.file.clone(),
        scenario: spec.scenario.clone(),
        grid_runs: spec.grid_len(),
        shard,
        axes: spec.axes.iter().map(axis_meta).collect(),
        set: spec.set.iter().map(axis_meta).collect(),
        plot_x: spec.plot.x.and_then(|x| keys.get(x).cloned()),
        plot_metric: Some(metric),
        plot_file: spec.plot.file.clone(),
        counts: Counts::of(summary),
        limits,
        fail_if: spec.fail_if.iter().map(ToString::to_string).collect(),
    }
}

fn draw_plot(path: &Path, summary: &Summary, meta: &Meta) -> Result<(), SweepError> {
    let name = meta
        .sweep
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let metric = meta
        .plot_metric
        .clone()
        .unwrap_or_else(|| plot::default_metric(summary));
    let title = format!("{name}: {metric} and run time");
    plot::draw(
        path,
        &title,
        summary,
        &meta.axes(),
        meta.x_index(),
        &metric,
        &meta.limits,
    )
    .map_err(|e| SweepError::io(path, std::io::Error::other(e)))
}

/// Where the sidecar of a summary CSV is.
pub fn meta_path(csv: &Path) -> PathBuf {
    csv.with_extension("json")
}

/// Joins shard summaries into one table, identical to the unsharded
/// sweep's (but for the wall times), written to `output` with its sidecar;
/// draws the plot when `plot` is given (default name from the sweep beside
/// `output` when `plot` is `Some` of an empty path). Checks that the shards
/// are of one sweep and complete.
///
/// # Errors
///
/// A shard cannot be read, shards of different sweeps, a run missing or
/// present twice, a threshold naming a missing column.
pub fn merge(
    inputs: &[PathBuf],
    output: &Path,
    plot: Option<&Path>,
    fail_if: &[Threshold],
) -> Result<Outcome, SweepError> {
    if inputs.is_empty() {
        return Err(SweepError::Other(
            "nothing to merge: give the shard summaries".into(),
        ));
    }
    let mut cells = Vec::new();
    let mut meta: Option<Meta> = None;
    let mut seen = std::collections::BTreeMap::<u64, PathBuf>::new();
    for path in inputs {
        let s = Summary::read(path)?;
        // Every shard's sidecar says which sweep it is of: one without it
        // cannot be checked, so it is not merged.
        let mp = meta_path(path);
        let text = std::fs::read_to_string(&mp).map_err(|e| {
            SweepError::Other(format!(
                "{}: no sidecar {} ({e}): merge needs the .json each shard writes next to its CSV",
                path.display(),
                mp.display()
            ))
        })?;
        let m: Meta = serde_json::from_str(&text).map_err(|e| {
            SweepError::io(&mp, std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        })?;
        if let Some(first) = &meta {
            let what = if first.axes != m.axes || first.grid_runs != m.grid_runs {
                Some("different axes or run count")
            } else if first.set != m.set {
                Some("different values set in every run ([sweep] set)")
            } else {
                None
            };
            if let Some(what) = what {
                return Err(SweepError::Other(format!(
                    "{} is not a shard of the same sweep as {} ({what})",
                    path.display(),
                    inputs[0].display()
                )));
            }
        }
        meta.get_or_insert(m);
        for index in s.column("index").unwrap_or_default() {
            let i: u64 = index.parse().map_err(|_| {
                SweepError::Other(format!("{}: bad run index '{index}'", path.display()))
            })?;
            if let Some(other) = seen.insert(i, path.clone()) {
                return Err(SweepError::Other(format!(
                    "run {i} is in both {} and {}",
                    other.display(),
                    path.display()
                )));
            }
        }
        cells.extend(s.cells());
    }
    let mut meta = meta.ok_or_else(|| {
        SweepError::Other(format!(
            "no sidecar {} beside the shard summaries: merge needs the .json each shard writes next to its CSV",
            meta_path(&inputs[0]).display()
        ))
    })?;
    let missing: Vec<String> = (0..meta.grid_runs as u64)
        .filter(|i| !seen.contains_key(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(SweepError::Other(format!(
            "the shards are incomplete: run(s) {} of {} missing",
            missing.join(", "),
            meta.grid_runs
        )));
    }
    let keys: Vec<String> = meta.axes.iter().map(|a| a.key.clone()).collect();
    let summary = Summary::build(cells, &keys);
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| SweepError::io(dir, e))?;
    }
    summary.write(output)?;
    meta.shard = None;
    meta.counts = Counts::of(&summary);
    meta.limits = meta
        .x_index()
        .map(|x| limits::from_summary(&summary, &meta.axes(), x))
        .unwrap_or_default();
    write_meta(&meta_path(output), &meta)?;
    let plot_path = match plot {
        None => None,
        Some(p) => {
            let p = if p.as_os_str().is_empty() {
                output.with_file_name(&meta.plot_file)
            } else {
                p.to_path_buf()
            };
            draw_plot(&p, &summary, &meta)?;
            Some(p)
        }
    };
    let mut thresholds = Vec::new();
    for t in &meta.fail_if {
        thresholds.push(t.parse::<Threshold>().map_err(SweepError::Other)?);
    }
    thresholds.extend(fail_if.iter().cloned());
    let violations = check_thresholds(&summary, &thresholds)?;
    Ok(Outcome {
        summary,
        summary_path: output.to_path_buf(),
        meta,
        plot_path,
        violations,
        records: Vec::new(),
    })
}
