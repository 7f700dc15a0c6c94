//! One run of a sweep: its scenario, its execution in its own output
//! directory with its own FMU instances, its metrics and its verdict.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use cosim_core::CoreError;
use cosim_core::execution::RunSummary;
use cosim_core::metrics::{Table, bond_metrics, compare_columns, match_columns};
use cosim_core::output::{Kept, OutputsHandle};
use cosim_scenario::runner::{self, PrepareError};
use serde::{Deserialize, Serialize};

use crate::axis::{AxisValue, format_float};
use crate::edit;
use crate::spec::SweepSpec;
use crate::summary::{Cells, MAX_ABS, RESIDUAL_ENERGY, RMS};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Completed and not diverged.
    Ok,
    /// Failed: a scenario value the FMUs reject, an FMU error.
    Error,
    /// Stopped at a NaN/Inf output, or completed with outputs beyond the
    /// bound or a growing residual power (see `docs/sweep.md`).
    Diverged,
    /// Its process died under it: an FMU called `exit()`, segfaulted or
    /// aborted (a run in a worker process; the sweep goes on).
    Crashed,
    /// Stopped by SIGINT or SIGTERM at a macro step (its outputs hold the
    /// steps made), or not started because the sweep was interrupted.
    Interrupted,
}

impl Status {
    /// The summary's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Diverged => "diverged",
            Status::Crashed => "crashed",
            Status::Interrupted => "interrupted",
        }
    }

    /// Parses the summary's word.
    pub fn parse(s: &str) -> Option<Status> {
        match s {
            "ok" => Some(Status::Ok),
            "error" => Some(Status::Error),
            "diverged" => Some(Status::Diverged),
            "crashed" => Some(Status::Crashed),
            "interrupted" => Some(Status::Interrupted),
            _ => None,
        }
    }
}

/// A run to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// Its index (grid runs first, in axis order; then refinement runs).
    pub index: usize,
    /// 0 for the grid, k for the k-th bisection step.
    pub stage: u32,
    /// One value per axis.
    pub values: Vec<AxisValue>,
}

/// What a run gave.
#[derive(Debug, Clone)]
pub struct Record {
    /// The run.
    pub planned: Planned,
    /// Its name: the directory under `runs/`.
    pub name: String,
    /// How it ended.
    pub status: Status,
    /// Why it failed or diverged (empty when ok).
    pub message: String,
    /// Every summary cell, by column (wall time included).
    pub cells: Cells,
    /// Wall time of the whole run (preparation, stepping, metrics), s.
    pub wall_time_s: f64,
}

/// The directory name of a run: the zero-padded index, then the axis
/// values (`007-step=0.00235`).
pub fn run_name(spec: &SweepSpec, planned: &Planned) -> String {
    let mut name = format!("{:03}", planned.index);
    let mut parts = String::new();
    for (a, v) in spec.axes.iter().zip(&planned.values) {
        if !parts.is_empty() {
            parts.push('_');
        }
        parts.push_str(&format!("{}={}", a.short_name(), v.slug()));
    }
    if !parts.is_empty() {
        name.push('-');
        name.extend(parts.chars().take(80));
    }
    name
}

fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}

fn prepare_message(e: &PrepareError) -> String {
    match e {
        PrepareError::Scenario(s) => match &s.help {
            Some(h) => format!("{} ({h})", s.message),
            None => s.message.clone(),
        },
        other => one_line(&other.to_string()),
    }
}

fn first_cells(spec: &SweepSpec, planned: &Planned, name: &str) -> Cells {
    let mut cells: Cells = vec![
        ("index".into(), planned.index.to_string()),
        ("run".into(), name.to_string()),
        ("stage".into(), planned.stage.to_string()),
    ];
    for (a, v) in spec.axes.iter().zip(&planned.values) {
        cells.push((a.key.clone(), v.cell()));
    }
    cells
}

fn record(
    planned: &Planned,
    name: &str,
    out: &Path,
    mut cells: Cells,
    status: Status,
    message: &str,
    started: Instant,
) -> Record {
    // Paths of this machine would differ between shards: keep them out.
    // (A run that was not executed has no directory: nothing to replace.)
    // (As a path's beginning only: an `out` of "out" is in "outputs".)
    let dir = out.display().to_string();
    let message = if dir.is_empty() {
        one_line(message)
    } else {
        one_line(message).replace(&format!("{dir}/"), "<out>/")
    };
    let wall = started.elapsed().as_secs_f64();
    cells.push(("status".into(), status.as_str().into()));
    cells.push(("message".into(), message.clone()));
    cells.push(("wall_time_s".into(), format_float(wall)));
    Record {
        planned: planned.clone(),
        name: name.to_string(),
        status,
        message,
        cells,
        wall_time_s: wall,
    }
}

/// The record of a run that could not be executed (`why`: no worker
/// process for it ...), status `error`.
pub fn skipped(spec: &SweepSpec, planned: &Planned, why: &str) -> Record {
    not_run(spec, planned, Status::Error, why)
}

/// The record of a run not started because the sweep was interrupted,
/// status `interrupted`.
pub fn not_started(spec: &SweepSpec, planned: &Planned) -> Record {
    not_run(
        spec,
        planned,
        Status::Interrupted,
        "interrupted before it started",
    )
}

fn not_run(spec: &SweepSpec, planned: &Planned, status: Status, why: &str) -> Record {
    let name = run_name(spec, planned);
    let cells = first_cells(spec, planned, &name);
    record(
        planned,
        &name,
        Path::new(""),
        cells,
        status,
        why,
        Instant::now(),
    )
}

/// The files and times of a run once it is prepared: what its metrics
/// are computed from, also by the sweep's process when the run's worker
/// process died under it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFiles {
    /// The trace, when written.
    pub trace: Option<PathBuf>,
    /// The energy log, when written.
    pub energy_log: Option<PathBuf>,
    /// The step log, when written.
    pub step_log: Option<PathBuf>,
    /// The start time, s.
    pub t_start: f64,
    /// The stop time, s.
    pub t_stop: f64,
    /// The run's `[master] step_timeout` and `init_timeout`, s, their
    /// defaults applied (`None`: no limit).
    pub call_timeouts: (Option<f64>, Option<f64>),
}

/// Runs one planned run into `out/runs/<name>/` and computes its metrics.
pub fn execute(
    spec: &SweepSpec,
    planned: &Planned,
    out: &Path,
    prune: bool,
    interrupt: Option<Arc<AtomicBool>>,
) -> Record {
    execute_watched(spec, planned, out, prune, interrupt, |_, _| {})
}

/// Like [`execute`], handing `watch` the run's files and a handle on its
/// outputs just before it starts stepping (a worker process keeps them to
/// end the outputs and report the run should the process be ended under
/// it).
pub fn execute_watched(
    spec: &SweepSpec,
    planned: &Planned,
    out: &Path,
    prune: bool,
    interrupt: Option<Arc<AtomicBool>>,
    watch: impl FnOnce(&RunFiles, OutputsHandle),
) -> Record {
    let started = Instant::now();
    let name = run_name(spec, planned);
    let dir = out.join("runs").join(&name);
    let cells = first_cells(spec, planned, &name);
    let failed = |message: String| {
        record(
            planned,
            &name,
            out,
            cells.clone(),
            Status::Error,
            &message,
            started,
        )
    };
    // A stale output of an earlier sweep must not be read as this run's.
    // It is removed under its lock: a run writing there now (started by
    // hand into this directory) keeps every file, and this run is an error.
    if dir.exists() {
        match cosim_core::output_lock::OutputLock::exclusive(&dir) {
            Ok(lock) => {
                let _ = std::fs::remove_dir_all(&dir);
                drop(lock);
            }
            Err(e) => return failed(e.to_string()),
        }
    }
    let (scenario, _) = match edit::build(spec, &planned.values, &dir) {
        Ok(s) => s,
        Err(m) => return failed(m),
    };
    let mut prepared = match runner::prepare_scenario(&scenario, Some(1)) {
        Ok(p) => p,
        Err(e) => return failed(prepare_message(&e)),
    };
    // The metrics take the trace and the energy log from memory. A pruned
    // run keeps nothing else: it writes no file (its row is its summary).
    let kept = if prune {
        prepared.resolved.outputs.step_log = None;
        prepared.resolved.outputs.summary = None;
        Kept::InMemoryOnly
    } else {
        Kept::AlsoInMemory
    };
    let outputs = &prepared.resolved.outputs;
    let files = RunFiles {
        trace: outputs.trace.clone(),
        energy_log: outputs.energy_log.clone(),
        step_log: outputs.step_log.clone(),
        t_start: prepared.resolved.start,
        t_stop: prepared.resolved.stop,
        call_timeouts: {
            let (step, init) = prepared.resolved.master.call_timeouts();
            (step.map(|d| d.as_secs_f64()), init.map(|d| d.as_secs_f64()))
        },
    };
    let outcome = match runner::run_keeping(prepared, Vec::new(), interrupt, Some(kept), |h| {
        watch(&files, h)
    }) {
        Ok(o) => o,
        Err(e) => return failed(e.to_string()),
    };
    let (status, message) = match &outcome.error {
        None => (Status::Ok, String::new()),
        // An FMU ended the run (a normal end, before the stop time).
        Some(e @ CoreError::TerminatedByFmu { .. }) => (Status::Ok, e.to_string()),
        Some(e @ CoreError::NonFinite { .. }) => (Status::Diverged, e.to_string()),
        Some(e @ CoreError::Interrupted { .. }) => (Status::Interrupted, e.to_string()),
        Some(e) => (Status::Error, e.to_string()),
    };
    let ran = Ran {
        planned,
        out,
        files: &files,
        started,
        tables: outcome.tables,
    };
    ran.record(spec, Some(&outcome.summary), status, message, prune)
}

/// A run that was started: what its record is made of.
pub struct Ran<'a> {
    /// The run.
    pub planned: &'a Planned,
    /// The sweep's output directory.
    pub out: &'a Path,
    /// Its files and times.
    pub files: &'a RunFiles,
    /// When it started (its wall time is measured from there).
    pub started: Instant,
    /// The files whose rows the run kept in memory, with their tables
    /// (the others are read from disk).
    pub tables: Vec<(PathBuf, Option<Table>)>,
}

impl Ran<'_> {
    /// The run's trace and energy log: kept in memory, else read from
    /// their files.
    fn take_tables(&mut self) -> RunTables {
        let mut kept = std::mem::take(&mut self.tables);
        let mut table = |file: &Option<PathBuf>| {
            let path = file.as_ref()?;
            match kept.iter().position(|(p, _)| p == path) {
                Some(i) => kept.swap_remove(i).1,
                None => Table::read(path).ok(),
            }
        };
        RunTables {
            trace: table(&self.files.trace),
            energy: table(&self.files.energy_log),
            t_start: self.files.t_start,
            t_stop: self.files.t_stop,
        }
    }

    /// The record of the run, from its summary (`None`: the process that
    /// ran it died without one; the time reached is the trace's last row)
    /// and its outputs: the run's figures, the metrics, the verdict (a
    /// run that completed with `Status::Ok` may be found diverged).
    /// `prune` deletes its trace and logs afterwards.
    pub fn record(
        mut self,
        spec: &SweepSpec,
        summary: Option<&RunSummary>,
        mut status: Status,
        mut message: String,
        prune: bool,
    ) -> Record {
        let name = run_name(spec, self.planned);
        let mut cells = first_cells(spec, self.planned, &name);
        match summary {
            Some(s) => summary_cells(&mut cells, s),
            None => {
                if let Some(t) = last_time(self.files) {
                    cells.push(("t_reached".into(), format_float(t)));
                }
            }
        }
        let m = metrics(spec, &self.take_tables(), status == Status::Ok);
        cells.extend(m.cells);
        if status == Status::Ok {
            if let Some(reason) = m.diverged {
                status = Status::Diverged;
                message = reason;
            } else if !m.notes.is_empty() {
                message = m.notes.join("; ");
            }
        }
        if prune {
            let f = self.files;
            for f in [&f.trace, &f.energy_log, &f.step_log].into_iter().flatten() {
                let _ = std::fs::remove_file(f);
            }
        }
        record(
            self.planned,
            &name,
            self.out,
            cells,
            status,
            &message,
            self.started,
        )
    }
}

/// The run figures of a run's summary.
fn summary_cells(cells: &mut Cells, s: &RunSummary) {
    cells.push(("master".into(), s.master.clone()));
    cells.push(("t_reached".into(), format_float(s.t_reached)));
    cells.push(("macro_steps".into(), s.stats.macro_steps.to_string()));
    cells.push(("rejected_steps".into(), s.stats.rejected_steps.to_string()));
    cells.push(("do_step_calls".into(), s.calls.do_step.to_string()));
    cells.push(("mean_step".into(), format_float(s.mean_step)));
    cells.push(("max_indicator".into(), format_float(s.max_indicator)));
    for b in &s.bonds {
        cells.push((
            format!("{RESIDUAL_ENERGY}{}", b.name),
            format_float(b.cumulative_residual_energy),
        ));
    }
}

/// The time of the trace's last row (else the energy log's).
fn last_time(files: &RunFiles) -> Option<f64> {
    [&files.trace, &files.energy_log]
        .into_iter()
        .flatten()
        .filter_map(|p| Table::read(p).ok())
        .find_map(|t| t.time().last().copied())
}

/// Metrics of a run and the divergence verdict.
struct Metrics {
    cells: Cells,
    diverged: Option<String>,
    notes: Vec<String>,
}

/// The growth of a signal: its root-mean-square over the last `window` of
/// `[t0, t1]` divided by that over the window before; also the last
/// window's RMS and the largest |value| of the whole signal. `None` with
/// fewer than four rows in either window. A NaN makes the growth infinite.
fn envelope_growth(
    time: &[f64],
    y: &[f64],
    t0: f64,
    t1: f64,
    window: f64,
) -> Option<(f64, f64, f64)> {
    let w = window * (t1 - t0);
    let (late_from, early_from) = (t1 - w, t1 - 2.0 * w);
    let (mut late, mut early, mut all) = (0.0f64, 0.0f64, 0.0f64);
    let (mut n_late, mut n_early) = (0usize, 0usize);
    for (&t, &v) in time.iter().zip(y) {
        let a = if v.is_nan() { f64::INFINITY } else { v.abs() };
        all = all.max(a);
        if t > late_from {
            late += a * a;
            n_late += 1;
        } else if t > early_from {
            early += a * a;
            n_early += 1;
        }
    }
    if n_late < 4 || n_early < 4 {
        return None;
    }
    let (late, early) = (
        (late / n_late as f64).sqrt(),
        (early / n_early as f64).sqrt(),
    );
    let ratio = if late.is_infinite() {
        f64::INFINITY
    } else if early > 0.0 {
        late / early
    } else if late > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    Some((ratio, late, all))
}

fn largest_abs(y: &[f64]) -> f64 {
    y.iter().fold(0.0f64, |m, v| {
        if v.is_nan() {
            f64::INFINITY
        } else {
            m.max(v.abs())
        }
    })
}

/// What a run's metrics are computed from.
struct RunTables {
    trace: Option<Table>,
    energy: Option<Table>,
    t_start: f64,
    t_stop: f64,
}

fn metrics(spec: &SweepSpec, tables: &RunTables, completed: bool) -> Metrics {
    let (t_start, t_stop) = (tables.t_start, tables.t_stop);
    let mut cells = Cells::new();
    let mut diverged = None;
    let mut notes = Vec::new();
    let div = &spec.divergence;
    let reference = spec.reference.as_ref();
    let until = reference.map_or(t_stop, |r| r.until.min(t_stop));

    let (energy, trace) = (&tables.energy, &tables.trace);

    // Growth of the residual power of each bond.
    if let Some(e) = &energy {
        let mut worst: Option<(f64, f64, f64, String)> = None;
        for (c, name) in e.names.iter().enumerate() {
            let Some(bond) = name.strip_suffix(".residual_power") else {
                continue;
            };
            let Some(col) = e.columns.get(c) else {
                continue;
            };
            if let Some((ratio, late, all)) =
                envelope_growth(e.time(), col, t_start, t_stop, div.window)
                && worst.as_ref().is_none_or(|w| ratio > w.0)
            {
                worst = Some((ratio, late, all, bond.to_string()));
            }
        }
        if let Some((ratio, late, all, bond)) = &worst {
            cells.push(("growth".into(), format_float(*ratio)));
            if completed
                && let Some(limit) = div.growth
                && *ratio > limit
                && *late > 1e-9 * all
            {
                let pct = (div.window * 100.0).round();
                diverged = Some(format!(
                    "the residual power of bond '{bond}' grows: its RMS over the last {pct} % of the run is {} times that over the {pct} % before (divergence.growth = {limit})",
                    cosim_core::text::significant(*ratio, 4)
                ));
            }
        }
    }

    if let Some(tr) = &trace {
        let max_out = tr
            .columns
            .iter()
            .skip(1)
            .map(|c| largest_abs(c))
            .fold(0.0f64, f64::max);
        cells.push(("max_abs_output".into(), format_float(max_out)));
    }

    if let Some(r) = reference {
        if let Some(tr) = &trace {
            let pairs = match_columns(tr, &r.table, &r.columns);
            match compare_columns(tr, &r.table, &pairs, r.from, until) {
                Ok(errors) => {
                    for e in &errors {
                        cells.push((format!("{MAX_ABS}{}", e.column), format_float(e.max_abs)));
                        cells.push((format!("{RMS}{}", e.column), format_float(e.rms)));
                    }
                }
                Err(e) => notes.push(format!("reference comparison: {e}")),
            }
            if let Some(bound) = div.bound
                && diverged.is_none()
            {
                for (tc, rc) in &pairs {
                    let (Some(y), Some(yr)) = (tr.column(tc), r.table.column(rc)) else {
                        continue;
                    };
                    let (peak, ref_peak) = (largest_abs(y), largest_abs(yr));
                    if ref_peak > 0.0 && peak > bound * ref_peak {
                        diverged = Some(format!(
                            "|{tc}| reached {}, more than {bound} times the reference's largest |{rc}| ({}) (divergence.bound)",
                            cosim_core::text::significant(peak, 5),
                            cosim_core::text::significant(ref_peak, 5)
                        ));
                        break;
                    }
                }
            }
        }
        if let (Some((_, power)), Some(e)) = (&r.power, &energy) {
            let bonds: Vec<&str> = e
                .names
                .iter()
                .filter_map(|n| n.strip_suffix(".residual_power"))
                .collect();
            let bond = r.bond.as_deref().or(bonds.first().copied());
            match bond {
                Some(b) if bonds.contains(&b) => {
                    match bond_metrics(e, b, until, |t| power.at(&r.table, t)) {
                        Ok(m) => {
                            cells.push((
                                "mean_abs_power_error".into(),
                                format_float(m.mean_abs_power_error),
                            ));
                            cells.push((
                                "integral_residual_power".into(),
                                format_float(m.integral_residual_power),
                            ));
                            cells.push((
                                "mean_transmitted_power".into(),
                                format_float(m.mean_transmitted_power),
                            ));
                        }
                        Err(err) => notes.push(format!("power metrics: {err}")),
                    }
                }
                Some(b) => notes.push(format!(
                    "power metrics: no bond '{b}' in the energy log (bonds: {})",
                    bonds.join(", ")
                )),
                None => notes.push("power metrics: the run has no power bond".into()),
            }
        }
    }
    Metrics {
        cells,
        diverged,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_compares_the_last_two_windows() {
        let time: Vec<f64> = (1..=100).map(|i| i as f64 * 0.1).collect();
        let growing: Vec<f64> = time
            .iter()
            .map(|t| (0.5 * t).exp() * (7.0 * t).sin())
            .collect();
        let (ratio, _, _) = envelope_growth(&time, &growing, 0.0, 10.0, 0.25).unwrap();
        assert!(ratio > 2.5 && ratio < 4.5, "{ratio}");
        let decaying: Vec<f64> = time
            .iter()
            .map(|t| (-0.5 * t).exp() * (7.0 * t).sin())
            .collect();
        let (ratio, _, _) = envelope_growth(&time, &decaying, 0.0, 10.0, 0.25).unwrap();
        assert!(ratio < 0.5, "{ratio}");
        assert!(envelope_growth(&time[..5], &growing[..5], 0.0, 0.5, 0.25).is_none());
        let nan = vec![f64::NAN; 100];
        assert_eq!(
            envelope_growth(&time, &nan, 0.0, 10.0, 0.25).unwrap().0,
            f64::INFINITY
        );
    }
}
