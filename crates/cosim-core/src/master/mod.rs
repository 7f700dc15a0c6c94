//! The master interface and the masters.
//!
//! A master decides how the subsystems of a [`System`] step and exchange
//! values: it advances the system by one *accepted* macro step per call to
//! [`Master::advance`]. Whatever it does inside (rejected attempts rolled
//! back, fixed-point iterations) stays inside; observers only ever see
//! accepted steps. Building blocks shared by all masters live beside this
//! module: [`crate::inputs`] (extrapolation), [`crate::indicators`] (error
//! indicators), [`crate::controller`] (step control) and the rollback
//! primitives of [`System`].

mod adaptive;
mod fixed_step;
mod iterative;
mod richardson;
pub mod stepper;
mod strongly_coupled;

pub use adaptive::Adaptive;
pub use fixed_step::{FixedStep, Scheme};
pub use iterative::{Interpolation, Iterative, IterativeSettings};
pub use richardson::{Estimate, Richardson, RichardsonSettings};
pub use strongly_coupled::StronglyCoupled;

use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use smallvec::SmallVec;

use crate::error::{CoreError, Result};
use crate::observer::{AfterStep, DirectRows, ObservedValues, Observer};
use crate::output::OutputsHandle;
use crate::system::System;

/// What one accepted macro step did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepReport {
    /// Start of the step.
    pub t: f64,
    /// Its size.
    pub dt: f64,
    /// The master's error indicator for the step (NaN when it has none).
    pub indicator: f64,
    /// Attempts rejected before this step was accepted.
    pub rejections: u32,
    /// Fixed-point iterations (1 for non-iterative masters).
    pub iterations: u32,
    /// Final coupling residual of an iterative master (NaN otherwise).
    pub residual: f64,
}

impl StepReport {
    /// A plain accepted step with no indicator.
    pub fn simple(t: f64, dt: f64) -> Self {
        StepReport {
            t,
            dt,
            indicator: f64::NAN,
            rejections: 0,
            iterations: 1,
            residual: f64::NAN,
        }
    }
}

/// Which figures of a [`StepReport`] a master produces. The step log has
/// a column for each and none for the others (a column that would always
/// say the same is left out).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepFields {
    /// `indicator`: the master's own error indicator (the one its step
    /// control uses). A master without one reports NaN, and the run loop
    /// fills in the energy indicator when the system has power bonds.
    pub indicator: bool,
    /// `rejections`: attempts rejected (or halvings) before acceptance.
    pub rejections: bool,
    /// `iterations`: fixed-point iterations of the step.
    pub iterations: bool,
    /// `residual`: the final coupling residual of an iterative master,
    /// which is also its indicator (`indicator` is then false: the step
    /// log has the value once).
    pub residual: bool,
}

/// Totals a master reports at the end of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct MasterStats {
    /// Accepted macro steps.
    pub macro_steps: u64,
    /// Rejected attempts.
    pub rejected_steps: u64,
    /// Fixed-point iterations over all steps.
    pub iterations: u64,
    /// Step halvings (IFOSMONDI).
    pub halvings: u64,
    /// The integrator's figures of a strongly coupled level (its FMUs are
    /// integrated by the master).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solver: Option<cosim_fmi::ModelExchangeStatistics>,
}

/// A stretch of quiet macro steps ([`Master::advance_quiet`]): the run
/// loop's bookkeeping of each step, and how far the stretch goes.
#[derive(Debug)]
pub struct QuietSteps<'a> {
    /// At most this many steps.
    pub limit: u64,
    /// Only steps that end before this communication point (ticks).
    pub until: i64,
    /// The run's accepted macro steps, counted up by each step.
    pub macro_steps: u64,
    /// The user's interrupt: no step after it is set (a flag never set
    /// where the run has none).
    pub interrupt: &'a AtomicBool,
    /// Told the time reached and the steps after each step.
    pub outputs: Option<&'a OutputsHandle>,
    /// The observers that write their rows on the quiet path.
    pub rows: QuietRows<'a>,
    /// The report of the next step (its start and size), set by the
    /// master before the stretch; each step moves its start on.
    pub step: StepReport,
    /// Where an observer is next due (the communication point in ticks
    /// and the macro step number from which it is): the stretch may also
    /// take the step after its quiet ones, which ends there, and leave
    /// what the run loop does after it to the run loop (not counted, no
    /// row written here; `due_taken` says it was taken). So the step a
    /// sampled trace writes a row after is taken with the quiet ones (in
    /// a host process, in the same request). `None`: quiet steps only.
    pub due: Option<(i64, u64)>,
    /// The stretch ended with the step [`QuietSteps::due`] names.
    pub due_taken: bool,
}

/// The observers that write their rows on the quiet path: after every
/// quiet step, with the values that step read; straight into their rings
/// where they can ([`Observer::direct_rows`]), else by
/// [`Observer::quiet_row`].
#[derive(Default)]
pub struct QuietRows<'a> {
    direct: SmallVec<[DirectRows<'a>; 2]>,
    others: SmallVec<[&'a mut Box<dyn Observer>; 4]>,
    /// The error of a row that could not be written: the stretch stops
    /// at that step.
    pub failed: Option<CoreError>,
}

impl std::fmt::Debug for QuietRows<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuietRows")
            .field("direct", &self.direct)
            .field("others", &self.others.len())
            .field("failed", &self.failed)
            .finish()
    }
}

impl<'a> QuietRows<'a> {
    /// The rows of `observers[i]` for each `i` of `which` (ascending).
    pub fn new(observers: &'a mut [Box<dyn Observer>], which: &[usize]) -> Self {
        let mut rows = QuietRows::default();
        for (i, o) in observers.iter_mut().enumerate() {
            if which.binary_search(&i).is_err() {
                continue;
            }
            // (Asked twice: the first answer's borrow ends at once.)
            if o.direct_rows().is_none() {
                rows.others.push(o);
            } else if let Some(d) = o.direct_rows() {
                rows.direct.push(d);
            }
        }
        rows
    }

    /// The rows after accepted macro step number `macro_step` (`report`),
    /// which ended at `t` (`ticks`): false when one failed.
    #[inline(always)]
    pub fn write<V: ObservedValues>(
        &mut self,
        at: (f64, i64),
        macro_step: u64,
        report: &StepReport,
        values: &V,
    ) -> bool {
        for d in &mut self.direct {
            if let Err(e) = d.write(at, macro_step, values) {
                self.failed = Some(e);
                return false;
            }
        }
        for o in &mut self.others {
            if let Err(e) = o.quiet_row(at, macro_step, report, values) {
                self.failed = Some(e);
                return false;
            }
        }
        true
    }
}

/// The interrupt of a run that has none (never set).
pub(crate) static NEVER_INTERRUPTED: AtomicBool = AtomicBool::new(false);

impl AfterStep for QuietSteps<'_> {
    /// A step ended at `t` (`ticks`), `values` what it read: counts it,
    /// writes the quiet rows, and says whether to go on. (Inlined into
    /// the quiet run's loop, a row's values read where the step left
    /// them.)
    #[inline(always)]
    fn after_step<V: ObservedValues>(&mut self, t: f64, ticks: i64, values: &V) -> bool {
        if let Some((due_ticks, due_step)) = self.due
            && (ticks >= due_ticks || self.macro_steps + 1 >= due_step)
        {
            // (The run loop's from here: see `due`.)
            self.due_taken = true;
            return false;
        }
        self.macro_steps += 1;
        if let Some(o) = self.outputs {
            o.record_step(t, self.macro_steps);
        }
        let written = self
            .rows
            .write((t, ticks), self.macro_steps, &self.step, values);
        self.step.t = t;
        written && !self.interrupt.load(Ordering::Relaxed)
    }
}

/// The interface every master implements.
pub trait Master: Send {
    /// Name for messages and the summary.
    fn name(&self) -> &'static str;

    /// Refuses a system this master cannot drive (missing capabilities),
    /// naming each subsystem and the missing flag.
    fn check(&self, _sys: &System) -> Result<()> {
        Ok(())
    }

    /// Called once after initialization, with the coupled values at the
    /// start time exchanged.
    fn start(&mut self, sys: &mut System) -> Result<()>;

    /// Advances by one accepted macro step, never beyond `t_stop`, ending
    /// exactly at `t_stop` when a step would pass it (the stop time, or
    /// the next output point: see [`Master::fixed_step`]).
    fn advance(&mut self, sys: &mut System, t_stop: f64) -> Result<StepReport>;

    /// [`Master::advance`], writing the step's report into `report` (the
    /// run loop's: no report copied out of a returned `Result` every macro
    /// step). Unchanged on an error.
    fn advance_into(
        &mut self,
        sys: &mut System,
        t_stop: f64,
        report: &mut StepReport,
    ) -> Result<()> {
        *report = self.advance(sys, t_stop)?;
        Ok(())
    }

    /// Advances by as many accepted macro steps of a quiet stretch as it
    /// can in one go ([`QuietSteps`]: nothing watches the system between
    /// them), each as [`Master::advance_into`] would make it, bit for bit,
    /// and never beyond `t_stop` nor the last step before it (that one is
    /// left to [`Master::advance_into`]), nor beyond the step to
    /// [`QuietSteps::due`]'s point (that one taken too where it can be,
    /// `due_taken`). `report` is the last step's.
    /// `None`, with nothing done, where the master has no such way (the
    /// default) or it does not serve now; else the outcome: on an error,
    /// the steps before the failing one were taken (counted in `quiet`)
    /// and the error is that of the step after them, as from
    /// [`Master::advance_into`].
    fn advance_quiet(
        &mut self,
        _sys: &mut System,
        _t_stop: f64,
        _quiet: &mut QuietSteps<'_>,
        _report: &mut StepReport,
    ) -> Option<Result<()>> {
        None
    }

    /// Totals so far.
    fn stats(&self) -> MasterStats;

    /// The figures of [`StepReport`] this master produces on `sys` (the
    /// default: none beyond the step).
    fn step_fields(&self, _sys: &System) -> StepFields {
        StepFields::default()
    }

    /// The macro step, for a master whose communication points are the
    /// fixed grid `t0 + n h`. Such a master is given the stop time only;
    /// every other master is asked to end a step exactly on each output
    /// point (the `t_stop` of [`Master::advance`] is then the next output
    /// point), which it does by shortening the step that would pass it.
    fn fixed_step(&self) -> Option<f64> {
        None
    }

    /// True when the master's steps read no observed value but those that
    /// feed connections, functions and bonds (the fixed-step master): the
    /// run loop then has the steps read only those, and the other values
    /// only for the rows that show them ([`System::read_needed_only`]).
    /// Default false: masters that compare or differentiate every output
    /// (error estimates, iterations) see every value after every step.
    fn reads_coupled_only(&self) -> bool {
        false
    }

    /// A copy of the master with its whole state (histories, step size,
    /// counters), so that a nested system can save and restore it with the
    /// states of its subsystems.
    fn clone_box(&self) -> Box<dyn Master>;
}
