//! Running a scenario file end to end: load, override, open the FMUs,
//! resolve, assemble, run, write the summary. The `cosim run` command, the
//! end-to-end tests and batch sweeps all go through here, so they behave
//! the same way.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use cosim_core::execution::{Execution, RunSummary};
use cosim_core::metrics::Table;
use cosim_core::observer::Observer;
use cosim_core::output::{Kept, Outputs, OutputsHandle};
use cosim_core::output_lock::OutputLock;

use crate::assemble::{self, AssembleError, Assembly};
use crate::{Overrides, ResolvedScenario, Scenario, ScenarioError, nest};

/// Why a scenario could not be prepared (before any step was taken).
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The scenario (or a command-line override) is wrong, located.
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// Assembly failed (an FMU could not be instantiated or configured).
    #[error("error: {0}")]
    Assemble(AssembleError),
}

impl From<AssembleError> for PrepareError {
    fn from(e: AssembleError) -> Self {
        match e {
            AssembleError::Scenario(s) => PrepareError::Scenario(s),
            other => PrepareError::Assemble(other),
        }
    }
}

/// A scenario ready to run.
pub struct Prepared {
    /// The resolved scenario (settings, output paths, warnings).
    pub resolved: ResolvedScenario,
    /// The assembled system, master, diagnostics and report.
    pub assembly: Assembly,
    /// It has nested systems (whose energy logs are files of their own,
    /// written from the stepping thread).
    pub nested: bool,
}

/// Loads a scenario file, applies the overrides, opens its FMUs, resolves
/// and assembles it. `threads`, when given, replaces the scenario's.
///
/// `path` may also be an FMU ([`crate::single::is_fmu`]): the scenario
/// [`crate::single::scenario`] makes for it is run.
pub fn prepare(
    path: &Path,
    overrides: &Overrides,
    threads: Option<usize>,
) -> Result<Prepared, PrepareError> {
    if crate::single::is_fmu(path) {
        let mut scenario = crate::single::scenario(path, overrides.start)?;
        scenario.apply_overrides(overrides)?;
        let unplaced = |e| crate::single::unplaced(e, path);
        let mut prepared = prepare_scenario(&scenario, threads).map_err(|e| match e {
            PrepareError::Scenario(s) => PrepareError::Scenario(unplaced(s)),
            other => other,
        })?;
        let warnings = std::mem::take(&mut prepared.resolved.warnings);
        prepared.resolved.warnings = warnings.into_iter().map(unplaced).collect();
        return Ok(prepared);
    }
    let mut scenario = Scenario::load(path)?;
    scenario.apply_overrides(overrides)?;
    prepare_scenario(&scenario, threads)
}

/// Like [`prepare`] for a scenario already loaded (and overridden).
pub fn prepare_scenario(
    scenario: &Scenario,
    threads: Option<usize>,
) -> Result<Prepared, PrepareError> {
    let (nodes, mut resolved) = load_and_resolve(scenario)?;
    if let Some(t) = threads {
        resolved.master.threads = t;
    }
    // One open log shared by every FMU of this process (hosts open their own).
    let call_log = match &scenario.call_log {
        Some(target) => Some(target.open().map_err(|e| {
            ScenarioError::argument(
                &scenario.source.path,
                &format!("--log-fmi-calls {target}"),
                format!("cannot open the FMI call log for writing: {e}"),
            )
        })?),
        None => None,
    };
    let level = assemble::Level {
        isolation: scenario.isolation_override,
        call_log,
        ..assemble::Level::top(&resolved)
    };
    let assembly = assemble::assemble_nodes(&resolved, &nodes, &level)?;
    // Refuse a system the master cannot drive (missing capabilities) now,
    // as bad input, rather than as a failed run.
    assembly
        .master
        .check(&assembly.system)
        .map_err(|e| PrepareError::Assemble(AssembleError::Core(e)))?;
    // Outputs estimated above 1 GB: said before the run starts.
    let threshold = crate::output_size::warning_threshold();
    if let Some(w) = crate::output_size::warning(&resolved, &assembly, threshold) {
        resolved.warnings.push(w);
    }
    let nested = nodes.iter().any(|n| matches!(n, nest::Node::Nest(_)));
    Ok(Prepared {
        resolved,
        assembly,
        nested,
    })
}

/// Loads `scenario`'s FMUs (their model descriptions; nested systems
/// prepared in turn) and resolves the scenario against them, instantiating
/// nothing: every check of a scenario's values but those the FMUs make
/// themselves (a sweep checks each axis value so).
///
/// # Errors
///
/// As [`prepare_scenario`], before instantiation.
pub fn resolve_scenario(scenario: &Scenario) -> Result<ResolvedScenario, PrepareError> {
    load_and_resolve(scenario).map(|(_, resolved)| resolved)
}

fn load_and_resolve(
    scenario: &Scenario,
) -> Result<(Vec<nest::Node>, ResolvedScenario), PrepareError> {
    // Nested systems run on the times of the top level; their own
    // `[simulation]` does not apply (any values do for resolving them).
    let start = scenario.simulation.start.as_ref().map(|s| s.value);
    let stop = scenario.simulation.stop.as_ref().map(|s| s.value);
    let (nest_start, nest_stop) = match (start, stop) {
        (Some(a), Some(b)) => (a, b),
        (a, _) => (a.unwrap_or(0.0), a.unwrap_or(0.0) + 1.0),
    };
    let nodes = nest::prepare_nodes(scenario, Some(nest_start), Some(nest_stop))?;
    nest::solver_options_used(scenario, &nodes)?;
    let names: Vec<String> = scenario
        .subsystems()
        .iter()
        .map(|s| s.name.value.clone())
        .collect();
    let models: Vec<(&str, &cosim_fmi::ModelDescription)> = names
        .iter()
        .zip(&nodes)
        .map(|(n, node)| (n.as_str(), node.model_description()))
        .collect();
    let resolved = scenario.resolve(&models)?;
    Ok((nodes, resolved))
}

/// What a run produced.
pub struct Outcome {
    /// The summary (also written to the summary file when configured).
    pub summary: RunSummary,
    /// The error that stopped the run, if any.
    pub error: Option<cosim_core::CoreError>,
    /// The files whose rows were kept in memory ([`run_keeping`]), each
    /// with its table (`None`: its file would not read back as one).
    pub tables: Vec<(PathBuf, Option<Table>)>,
    /// The output directory.
    pub output_dir: PathBuf,
    /// The lock on the output directory, held until this is dropped (a
    /// caller that writes more there, a plot, keeps it until then).
    pub lock: Option<OutputLock>,
}

/// Runs a prepared scenario with its configured outputs plus `extra`
/// observers (a progress display, say); the summary file is written at the
/// end. The output directory is locked first ([`OutputLock`]: another
/// run writing there is an error, [`cosim_core::CoreError::OutputInUse`],
/// before any output is created or truncated). Outputs that cannot be
/// created are an error before any step; a write that fails during the
/// run stops it (the outcome's error, [`cosim_core::CoreError::OutputWrite`]).
pub fn run(
    prepared: Prepared,
    extra: Vec<Box<dyn Observer>>,
    interrupt: Option<Arc<AtomicBool>>,
) -> Result<Outcome, cosim_core::CoreError> {
    run_watched(prepared, extra, interrupt, |_| {})
}

/// Like [`run`], handing `watch` a handle on the run's outputs just before
/// the run starts: another thread (a watchdog of hung FMU calls, a second
/// Ctrl-C) can then end every output and write the summary while the
/// stepping thread is stuck ([`OutputsHandle::finish_now`]).
pub fn run_watched(
    prepared: Prepared,
    extra: Vec<Box<dyn Observer>>,
    interrupt: Option<Arc<AtomicBool>>,
    watch: impl FnOnce(OutputsHandle),
) -> Result<Outcome, cosim_core::CoreError> {
    run_keeping(prepared, extra, interrupt, None, watch)
}

/// Like [`run_watched`], the rows of the trace and the energy log also
/// kept in memory (`kept`), as their files read back: the outcome's
/// [`Outcome::tables`]. With [`Kept::InMemoryOnly`] neither file is
/// created, and the output directory is neither created nor locked where
/// nothing else is written there (a step log, a summary, the energy logs
/// of nested systems).
pub fn run_keeping(
    prepared: Prepared,
    extra: Vec<Box<dyn Observer>>,
    interrupt: Option<Arc<AtomicBool>>,
    kept: Option<Kept>,
    watch: impl FnOnce(OutputsHandle),
) -> Result<Outcome, cosim_core::CoreError> {
    let Prepared {
        resolved,
        assembly,
        nested,
    } = prepared;
    let o = &resolved.outputs;
    let writes_files =
        kept != Some(Kept::InMemoryOnly) || nested || o.step_log.is_some() || o.summary.is_some();
    let lock = if writes_files {
        OutputLock::exclusive(&o.dir)?
    } else {
        None
    };
    let outputs = Outputs::new(&o.dir, o.summary.clone())?;
    if let Some(k) = kept {
        for path in [&o.trace, &o.energy_log].into_iter().flatten() {
            outputs.keep_table(path, k);
        }
    }
    // A run not warned about at the start (an adaptive master, whose
    // steps are not known) is warned about when its outputs pass the size.
    let threshold = crate::output_size::warning_threshold();
    if crate::output_size::warning(&resolved, &assembly, threshold).is_none() {
        outputs.warn_above(threshold as u64, crate::output_size::ADVICE);
    }
    let mut observers = assemble::observers(&resolved, &assembly, &outputs)?;
    observers.extend(extra);
    let Assembly {
        system,
        master,
        diagnostics,
        events,
        ..
    } = assembly;
    let execution = Execution {
        system,
        master,
        observers,
        t_start: resolved.start,
        t_stop: resolved.stop,
        interrupt,
        diagnostics,
        events,
        real_time: resolved.real_time,
    };
    watch(outputs.handle());
    let (summary, error) = execution.run_with_outputs(Some(&outputs));
    let _ = outputs.close_files();
    let tables = outputs.take_tables();
    drop(outputs);
    Ok(Outcome {
        summary,
        error,
        tables,
        output_dir: resolved.outputs.dir.clone(),
        lock,
    })
}
