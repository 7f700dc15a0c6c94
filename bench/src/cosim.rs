//! The `cosim` contender, in process through the library: the same code
//! path as `cosim run` (`cosim_scenario::runner::prepare_scenario` and
//! `runner::run`). The time taken is the run summary's `wall_time_s`: the
//! stepping loop of `Execution::run` from the first macro step to the stop
//! time, after the FMUs are loaded, instantiated and initialised, and before
//! they are terminated. It includes everything the loop does per step:
//! the master, the energy account and indicators, and the observers (the
//! trace writer when one is configured).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use cosim_scenario::Overrides;
use cosim_scenario::runner;

use crate::plan::load_scenario;

/// What one run measured.
#[derive(Debug, Clone, Copy)]
pub struct CosimRun {
    /// The stepping loop.
    pub elapsed: Duration,
    /// Macro steps taken.
    pub steps: u64,
    /// Worker threads the system used.
    pub threads: usize,
}

/// Runs the scenario at `path` once with `overrides` and `threads` (0 = all
/// cores).
pub fn run(path: &Path, overrides: &Overrides, threads: usize) -> Result<CosimRun> {
    let scenario = load_scenario(path, overrides)?;
    let prepared =
        runner::prepare_scenario(&scenario, Some(threads)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let used = prepared.assembly.system.threads();
    let outcome = runner::run(prepared, Vec::new(), None).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(e) = outcome.error {
        bail!("{}: the run failed: {e}", path.display());
    }
    let s = &outcome.summary;
    Ok(CosimRun {
        elapsed: Duration::from_secs_f64(s.wall_time_s),
        steps: s.stats.macro_steps,
        threads: used,
    })
}

/// Starts the scenario at `path` (with `overrides`) on one thread: returns
/// the time to load the scenario file, extract and load the FMUs and
/// instantiate them (`runner::prepare_scenario`), and the time to
/// initialise them (the run summary's `init_time_s`); the run itself is
/// as short as `overrides` make it.
pub fn startup(path: &Path, overrides: &Overrides) -> Result<(Duration, Duration)> {
    let started = Instant::now();
    let scenario = load_scenario(path, overrides)?;
    let prepared =
        runner::prepare_scenario(&scenario, Some(1)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let prepare = started.elapsed();
    let outcome = runner::run(prepared, Vec::new(), None).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(e) = outcome.error {
        bail!("{}: the run failed: {e}", path.display());
    }
    Ok((
        prepare,
        Duration::from_secs_f64(outcome.summary.init_time_s),
    ))
}
