//! Fixed macro step, Jacobi or Gauss-Seidel (kyllingstad sec. 3.1,
//! Algorithm 1; docs/algorithms.md).

use super::stepper::{StepPlan, Stepper};
use super::{Master, MasterStats, QuietSteps, StepReport};
use crate::error::{CoreError, Result};
use crate::inputs::InputExtrapolation;
use crate::system::System;

/// How subsystems are stepped within a macro step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheme {
    /// All subsystems from the same inputs (may run in parallel).
    Jacobi,
    /// One after the other in this order, each using the newest outputs of
    /// those before it.
    GaussSeidel(Vec<usize>),
}

/// The fixed-step master.
///
/// Communication points are `t0 + n h` computed in integer ticks of the
/// system's time base (see [`crate::time`]), so they neither drift nor
/// differ from libcosim's; the last step is shortened to end exactly at the
/// stop time. The step must be a whole number of ticks. In a nested system
/// the stop times are the outer communication points: a step shortened to
/// one off the grid is followed by one to the next grid point, so no step
/// is longer than `h` and the grid stays `t0 + n h`. A subsystem with step
/// multiple `k` steps from each multiple of `k h` to the next and
/// publishes its outputs when the master reaches the end of that step (it
/// never exposes values from the future); a stop time between two of its
/// points ends its step there too, and its next step ends on its next
/// point, so none is longer than `k h`.
///
/// With Jacobi, a coupling between two subsystems whose step multiples do
/// not divide one another (2 and 3, 4 and 6) carries the source's outputs
/// of the last macro step that is a multiple of the least common multiple
/// of the two, as libcosim's `fixed_step_algorithm` transfers them; every
/// other coupling carries the outputs published last.
#[derive(Debug, Clone)]
pub struct FixedStep {
    h: f64,
    scheme: Scheme,
    extrapolation_order: u32,
    run: Option<Running>,
    stats: MasterStats,
}

#[derive(Debug, Clone)]
struct Running {
    inputs: InputExtrapolation,
    stepper: Stepper,
    plan: StepPlan,
    /// Start and step in ticks, and the step in seconds (what a whole
    /// macro step reports, without a division every step).
    t0: i64,
    h: i64,
    h_seconds: f64,
    /// The index of the last grid point `t0 + k h` at or before the
    /// current time. It is the number of macro steps taken unless a step
    /// ended before its grid point, at a stop time off the grid (a nested
    /// system's outer communication points under an adaptive outer
    /// master): the next step then ends on the next grid point, so no step
    /// is longer than `h`.
    grid: u64,
    /// The end of the next macro step, computed at the end of the one
    /// before (its division then overlaps what the run loop does between
    /// the two): its grid index, the stop it was computed for (in ticks),
    /// its ticks and seconds.
    next_point: (u64, i64, i64, f64),
    /// Per subsystem (multi-rate): the end of its current step, in ticks.
    /// It is due for a new step when that is not after the current time,
    /// and publishes when a macro step ends there.
    step_end: Vec<i64>,
    /// Every step multiple is 1: the plan is "all, over the macro step".
    single_rate: bool,
    /// Single rate, Jacobi, zero-order hold and no held couplings: a
    /// macro step needs no plan (`System::step_held_all_inline`).
    held_inline: bool,
    /// Couplings held between multiples of an lcm (Jacobi only).
    holds: Option<Holds>,
    /// The last stop time asked for and its ticks (the run loop asks for
    /// the same one every macro step: rounded once).
    stop: (f64, i64),
    /// The system can take a run of quiet steps in one go
    /// ([`System::step_held_run`], or [`System::step_held_run_in_order`]
    /// for Gauss-Seidel): false once it said it cannot.
    quiet_runs: bool,
}

/// libcosim's transfer rule for the couplings between subsystems whose
/// step multiples do not divide one another.
///
/// libcosim's `fixed_step_algorithm` (`calculate_and_transfer`,
/// `transfer_variables` in `src/cosim/algorithm/fixed_step_algorithm.cpp`)
/// counts macro steps and, after macro step `n` (`n` steps done), copies
/// an output of a simulator with decimation factor `ks` to an input of a
/// simulator with factor `kd` only when `n` is a multiple of `lcm(ks, kd)`;
/// a function (its factor the lcm of those of the simulators it feeds, one
/// simulator in an OSP file) is fed and calculated the same way. When one
/// factor divides the other, the input a simulator starts a step with is
/// then the source's output published last, as everywhere in `cosim`; when
/// neither does (2 and 3), it is the source's output of the last multiple
/// of the lcm, possibly older. This holds exactly those pairs: the source's
/// published outputs at the last multiple of their lcm are kept, and the
/// destination's inputs are exchanged from them (through functions too).
#[derive(Debug, Clone)]
struct Holds {
    /// `(destination, source, lcm)` of every such coupled pair, grouped by
    /// destination.
    pairs: Vec<(usize, usize, u64)>,
    /// Per pair: the source's published outputs at the last multiple of
    /// the lcm.
    held: Vec<Vec<f64>>,
    /// Per pair: its destination took the held outputs in the last
    /// exchange, not the source's newest ones.
    stale: Vec<bool>,
    /// Per destination: its pairs (a range of `pairs`), its coupled inputs
    /// as exchanged from the held outputs, and whether they differ from the
    /// published ones in this exchange.
    dests: Vec<Dest>,
}

#[derive(Debug, Clone)]
struct Dest {
    sub: usize,
    pairs: std::ops::Range<usize>,
    u: Vec<f64>,
    holding: bool,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl Holds {
    /// The holds of `sys` (after initialization: its published outputs are
    /// what libcosim transfers at step 0), or `None` when of every two
    /// coupled subsystems one step multiple divides the other.
    fn new(sys: &System) -> Option<Holds> {
        let k = sys.step_multiples();
        let k = |s: usize| u64::from(k[s].max(1));
        let mut pairs: Vec<(usize, usize, u64)> = sys
            .couplings()
            .iter()
            .filter_map(|c| {
                let (ks, kd) = (k(c.from_subsystem), k(c.to_subsystem));
                (ks % kd != 0 && kd % ks != 0)
                    .then(|| (c.to_subsystem, c.from_subsystem, ks / gcd(ks, kd) * kd))
            })
            .collect();
        if pairs.is_empty() {
            return None;
        }
        pairs.sort_unstable();
        pairs.dedup();
        let held = pairs
            .iter()
            .map(|&(_, s, _)| sys.buffers()[s].y.clone())
            .collect();
        let mut dests: Vec<Dest> = Vec::new();
        for (p, &(d, _, _)) in pairs.iter().enumerate() {
            match dests.last_mut() {
                Some(last) if last.sub == d => last.pairs.end = p + 1,
                _ => dests.push(Dest {
                    sub: d,
                    pairs: p..p + 1,
                    u: sys.buffers()[d].u.clone(),
                    holding: false,
                }),
            }
        }
        let stale = vec![false; pairs.len()];
        Some(Holds {
            pairs,
            held,
            stale,
            dests,
        })
    }

    /// The exchange after the publications that end the macro step whose
    /// end is grid point `done` (`None`: a stop time off the grid): every
    /// input from the published outputs, but those of each held pair's
    /// destination from the held outputs, renewed where `done` is a
    /// multiple of the lcm.
    fn exchange(&mut self, sys: &mut System, done: Option<u64>) {
        let renews = |lcm: u64| done.is_some_and(|d| d.is_multiple_of(lcm));
        for (p, &(_, s, lcm)) in self.pairs.iter().enumerate() {
            self.stale[p] = !renews(lcm);
            if renews(lcm) {
                self.held[p].copy_from_slice(&sys.buffers()[s].y);
            }
        }
        // The held destinations' inputs first (evaluating the functions
        // upstream of them from the held outputs), then every input from
        // the published outputs (which leaves the functions' values those
        // of the published outputs), then the held ones back.
        for dest in &mut self.dests {
            dest.holding = self.pairs[dest.pairs.clone()]
                .iter()
                .any(|&(_, _, lcm)| !renews(lcm));
            if !dest.holding {
                continue;
            }
            for p in dest.pairs.clone() {
                std::mem::swap(&mut sys.buffers_mut(self.pairs[p].1).y, &mut self.held[p]);
            }
            sys.exchange_into(dest.sub);
            for p in dest.pairs.clone() {
                std::mem::swap(&mut sys.buffers_mut(self.pairs[p].1).y, &mut self.held[p]);
            }
            dest.u.copy_from_slice(&sys.buffers()[dest.sub].u);
        }
        sys.exchange_all();
        for dest in &self.dests {
            if dest.holding {
                sys.buffers_mut(dest.sub).u.copy_from_slice(&dest.u);
            }
        }
    }

    /// Whether destination `d` took the newest outputs of source `src` in
    /// the last exchange (not those held at the last multiple of an lcm).
    fn takes_newest(&self, d: usize, src: usize) -> bool {
        !self
            .pairs
            .iter()
            .zip(&self.stale)
            .any(|(&(pd, ps, _), &stale)| pd == d && ps == src && stale)
    }
}

impl FixedStep {
    /// A fixed-step master with macro step `h`, the given scheme and input
    /// extrapolation order (0 = ZOH).
    pub fn new(h: f64, scheme: Scheme, extrapolation_order: u32) -> Self {
        FixedStep {
            h,
            scheme,
            extrapolation_order,
            run: None,
            stats: MasterStats::default(),
        }
    }
}

/// Checks that a Gauss-Seidel order lists every subsystem exactly once.
pub(crate) fn check_scheme(scheme: &Scheme, sys: &System) -> Result<()> {
    if let Scheme::GaussSeidel(order) = scheme {
        let mut seen = vec![false; sys.len()];
        for &s in order {
            if s >= sys.len() || seen[s] {
                return Err(CoreError::Config(
                    "Gauss-Seidel order must list every subsystem exactly once".into(),
                ));
            }
            seen[s] = true;
        }
        if seen.iter().any(|&x| !x) {
            return Err(CoreError::Config(
                "Gauss-Seidel order must list every subsystem exactly once".into(),
            ));
        }
    }
    Ok(())
}

impl Running {
    /// A macro step by the plan: who steps now, over how long, and who
    /// publishes at its end. The step starts after grid point `g` (at it,
    /// or at a stop time after it) and ends at `next` ticks, `t_next`
    /// seconds; `done` is the index of that end when it is a grid point.
    /// `point_ticks` is the end of a macro step by its index, as in
    /// `advance_into`.
    fn step_planned(
        &mut self,
        sys: &mut System,
        (g, done): (u64, Option<u64>),
        (t, next, t_next): (f64, i64, f64),
        point_ticks: impl Fn(u64) -> i64,
    ) -> Result<f64> {
        // Which subsystems start a step now, over how long, and who
        // publishes at the end of this macro step. Single rate: everyone,
        // over the macro step (the plan's flags stay all true).
        if self.single_rate {
            self.plan.h.fill(t_next - t);
        } else {
            let (now, base) = (sys.ticks(), sys.time_base());
            for s in 0..sys.len() {
                let k = u64::from(sys.step_multiples()[s].max(1));
                self.plan.due[s] = self.step_end[s] <= now;
                if self.plan.due[s] {
                    // To its next point: the first multiple of k after g.
                    let end = point_ticks((g / k + 1) * k);
                    self.plan.h[s] = base.seconds(end) - t;
                    self.step_end[s] = end;
                }
                self.plan.publish[s] = self.step_end[s] == next;
            }
        }
        let end = match &mut self.holds {
            None => self.stepper.step_exchanging(
                sys,
                &mut self.inputs,
                &self.plan,
                t,
                t_next,
                System::exchange,
            )?,
            Some(holds) => self.stepper.step_exchanging(
                sys,
                &mut self.inputs,
                &self.plan,
                t,
                t_next,
                |sys| holds.exchange(sys, done),
            )?,
        };
        // An input takes a new value where its source published (and,
        // held couplings, where the destination takes it): the history
        // has each value at the time it was published.
        let (publish, holds) = (&self.plan.publish, &self.holds);
        self.inputs.record_fresh(sys, end, |d, src| {
            publish[src] && holds.as_ref().is_none_or(|h| h.takes_newest(d, src))
        });
        Ok(end)
    }
}

impl Master for FixedStep {
    fn name(&self) -> &'static str {
        "fixed-step"
    }

    fn check(&self, sys: &System) -> Result<()> {
        if !(self.h > 0.0 && self.h.is_finite()) {
            return Err(CoreError::Config(format!(
                "fixed-step master: the step must be positive, got {}",
                self.h
            )));
        }
        check_scheme(&self.scheme, sys)
    }

    fn start(&mut self, sys: &mut System) -> Result<()> {
        let t0 = sys.time();
        let base = sys.time_base();
        let h = base.exact_ticks(self.h).filter(|&h| h > 0).ok_or_else(|| {
            CoreError::Config(format!(
                "fixed-step master: the step {} s is not a whole number of ticks of {} (the time resolution of this run)",
                self.h,
                base.describe()
            ))
        })?;
        // (No input history at ZOH: nothing reads it.)
        let mut inputs = InputExtrapolation::new(sys, self.extrapolation_order).without_history();
        inputs.start(sys, t0)?;
        let single_rate = sys.step_multiples().iter().all(|&k| k <= 1);
        let holds = match self.scheme {
            Scheme::Jacobi => Holds::new(sys),
            Scheme::GaussSeidel(_) => None,
        };
        // (A system with FMI 3 event mode steps through the stepper: a
        // step may end at an event, and events are handled after it.)
        let held_inline = single_rate
            && !sys.uses_event_mode()
            && holds.is_none()
            && self.scheme == Scheme::Jacobi
            && self.extrapolation_order == 0;
        // Gauss-Seidel's steps go by the plan one by one, and its quiet
        // stretches in one go on the same terms.
        let held_in_order = single_rate
            && !sys.uses_event_mode()
            && matches!(self.scheme, Scheme::GaussSeidel(_))
            && self.extrapolation_order == 0;
        self.run = Some(Running {
            inputs,
            stepper: Stepper::new(sys, self.scheme.clone()),
            plan: StepPlan::new(sys.len()),
            t0: sys.ticks(),
            h,
            h_seconds: base.seconds(h),
            grid: 0,
            next_point: (0, 0, 0, f64::NAN),
            step_end: vec![sys.ticks(); sys.len()],
            single_rate,
            held_inline,
            stop: (f64::NAN, 0),
            holds,
            quiet_runs: held_inline || held_in_order,
        });
        Ok(())
    }

    fn advance(&mut self, sys: &mut System, t_stop: f64) -> Result<StepReport> {
        let mut report = StepReport::simple(f64::NAN, f64::NAN);
        self.advance_into(sys, t_stop, &mut report)?;
        Ok(report)
    }

    fn advance_into(
        &mut self,
        sys: &mut System,
        t_stop: f64,
        report: &mut StepReport,
    ) -> Result<()> {
        let run = self
            .run
            .as_mut()
            .ok_or_else(|| CoreError::Config("fixed-step master used before start".into()))?;
        let t = sys.time();
        let sys_ticks = sys.ticks();
        let base = sys.time_base();
        if run.stop.0.to_bits() != t_stop.to_bits() {
            run.stop = (t_stop, base.round(t_stop));
        }
        let (t0, h, stop) = (run.t0, run.h, run.stop.1);
        // The end of macro step m, in seconds: the stop time where less
        // than a millionth of a step would be left.
        let point_ticks = |m: u64| {
            let end = t0.saturating_add((m as i64).saturating_mul(h));
            if (stop - end) as f64 <= 1e-6 * h as f64 {
                stop
            } else {
                end
            }
        };
        // The step ends on the next grid point after `g` (the grid point
        // at or before now), or at the stop before it.
        let g = run.grid;
        let (mut next, mut t_next) = match run.next_point {
            (m, s, ticks, seconds) if m == g + 1 && s == stop => (ticks, seconds),
            _ => {
                let ticks = point_ticks(g + 1);
                (ticks, base.seconds(ticks))
            }
        };
        // On to the next grid point, unless the step ends at a stop time
        // before it (then the next step ends on it). (Tested only where
        // the step ends at the stop: one comparison on the grid.)
        let mut off_grid = next == stop && {
            let end = t0.saturating_add(((g + 1) as i64).saturating_mul(h));
            (end - next) as f64 > 1e-6 * h as f64
        };

        if run.held_inline && sys.steps_inline() {
            // The common case, as the stepper makes it (Jacobi, zero-order
            // hold, single rate, no held couplings, every step inline):
            // all step by the macro step, publish, and exchange.
            sys.step_held_all_inline(t, t_next - t)?;
            sys.publish_read();
            sys.exchange();
            sys.set_time_at(next, t_next);
        } else {
            let done = (!off_grid).then_some(g + 1);
            run.step_planned(sys, (g, done), (t, next, t_next), point_ticks)?;
            if sys.ticks() < next {
                // A subsystem returned early at an event (FMI 3 event
                // mode): the step ended there, off the grid, as at a stop
                // before the grid point; the next one ends on it.
                (next, t_next, off_grid) = (sys.ticks(), sys.time(), true);
            }
        }
        let g = if off_grid { g } else { g + 1 };
        run.grid = g;
        let after = point_ticks(g + 1);
        run.next_point = (g + 1, stop, after, base.seconds(after));
        self.stats.macro_steps += 1;
        self.stats.iterations += 1;
        // `base.span(t, t_next)`, from the ticks at hand where they convert
        // to seconds and back exactly.
        const EXACT: u64 = 1 << 53;
        let dt = if next.unsigned_abs() < EXACT && sys_ticks.unsigned_abs() < EXACT {
            if next - sys_ticks == h {
                run.h_seconds
            } else {
                base.seconds(next - sys_ticks)
            }
        } else {
            base.span(t, t_next)
        };
        *report = StepReport::simple(t, dt);
        Ok(())
    }

    /// The common case's steps ([`System::step_held_run`]) on the grid:
    /// the whole steps before the last one before the stop.
    fn advance_quiet(
        &mut self,
        sys: &mut System,
        t_stop: f64,
        quiet: &mut QuietSteps<'_>,
        report: &mut StepReport,
    ) -> Option<Result<()>> {
        // Not worth binding the FMUs' calls for fewer steps.
        const LEAST: u64 = 8;
        let run = self.run.as_mut()?;
        if !run.quiet_runs {
            return None;
        }
        let base = sys.time_base();
        if run.stop.0.to_bits() != t_stop.to_bits() {
            run.stop = (t_stop, base.round(t_stop));
        }
        let (t0, h, stop, g) = (run.t0, run.h, run.stop.1, run.grid);
        let grid_ticks = |m: u64| {
            i64::try_from(m)
                .ok()
                .and_then(|m| m.checked_mul(h))
                .and_then(|d| d.checked_add(t0))
        };
        // On the grid now (not after a stop off it).
        if grid_ticks(g)? != sys.ticks() {
            return None;
        }
        // The last grid point a whole step ends on: more than a millionth
        // of a step before the stop (advance_into's rule; the step after
        // it ends at the stop).
        let whole = |m: u64| grid_ticks(m).is_some_and(|end| (stop - end) as f64 > 1e-6 * h as f64);
        let mut last = u64::try_from((stop - t0) / h).ok()?;
        while last > g && !whole(last) {
            last -= 1;
        }
        // And before the point where an observer is due, then the step
        // to it where the run loop takes it from there (`QuietSteps::due`).
        let until = u64::try_from(quiet.until.saturating_sub(1).saturating_sub(sys.ticks()) / h)
            .unwrap_or(0);
        let quiet_steps = until.min(quiet.limit);
        let due = u64::from(quiet.due.is_some());
        let steps = (last - g.min(last)).min(quiet_steps.saturating_add(due));
        if steps < LEAST {
            return None;
        }
        let t = sys.time();
        quiet.step = StepReport::simple(t, run.h_seconds);
        let after_step = &mut *quiet;
        let held = match &self.scheme {
            Scheme::Jacobi => sys.step_held_run(steps, h, after_step),
            Scheme::GaussSeidel(order) => sys.step_held_run_in_order(order, steps, h, after_step),
        };
        let Some((taken, result)) = held else {
            run.quiet_runs = false;
            return None;
        };
        if taken == 0 && result.is_ok() {
            // (Not now: the worker pool's turn.)
            return None;
        }
        tracing::debug!("fixed-step master: {taken} macro steps from t = {t} in one quiet run");
        run.grid = g + taken;
        self.stats.macro_steps += taken;
        self.stats.iterations += taken;
        if taken > 0 {
            let t_last = if taken == 1 {
                t
            } else {
                base.seconds(sys.ticks() - h)
            };
            *report = StepReport::simple(t_last, run.h_seconds);
        }
        Some(result)
    }

    fn stats(&self) -> MasterStats {
        self.stats
    }

    fn fixed_step(&self) -> Option<f64> {
        Some(self.h)
    }

    fn reads_coupled_only(&self) -> bool {
        true
    }

    fn clone_box(&self) -> Box<dyn Master> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::float_cmp)]

    use std::sync::{Arc, Mutex};

    use cosim_fmi::StepOutcome;

    use super::*;
    use crate::subsystem::{CallCounters, Port, RollbackTo, StateId, Subsystem, SubsystemInfo};
    use crate::system::{NonFinitePolicy, SystemSpec};

    /// The `(t, h)` of each step a [`Recorder`] took.
    type Steps = Arc<Mutex<Vec<(f64, f64)>>>;

    /// Records the `(t, h)` of each step; its one output is the end of its
    /// last step, `t + h`.
    struct Recorder {
        info: SubsystemInfo,
        steps: Steps,
        end: f64,
    }

    fn recorder(name: &str) -> (Box<dyn Subsystem>, Steps) {
        let steps = Arc::new(Mutex::new(Vec::new()));
        let port = Port {
            name: "end".into(),
            unit: None,
            discrete: false,
        };
        let info = SubsystemInfo {
            name: name.into(),
            inputs: Vec::new(),
            observed: vec![port],
            n_outputs: 1,
            feedthrough: vec![Vec::new()],
            can_interpolate_inputs: false,
            max_output_derivative_order: 0,
            can_get_set_state: false,
            can_serialize_state: false,
            can_handle_variable_step: true,
            provides_directional_derivatives: false,
            has_state: false,
            origin: "test".into(),
        };
        let sub = Recorder {
            info,
            steps: Arc::clone(&steps),
            end: 0.0,
        };
        (Box::new(sub), steps)
    }

    impl Subsystem for Recorder {
        fn info(&self) -> &SubsystemInfo {
            &self.info
        }
        fn enter_initialization(&mut self, _t0: f64, _t_stop: Option<f64>) -> Result<()> {
            Ok(())
        }
        fn allow_rollback(&mut self, _to: RollbackTo) -> Result<()> {
            Ok(())
        }
        fn exit_initialization(&mut self) -> Result<()> {
            Ok(())
        }
        fn set_inputs(&mut self, _values: &[f64]) -> Result<()> {
            Ok(())
        }
        fn set_input_derivatives(&mut self, _order: u32, _values: &[f64]) -> Result<()> {
            Ok(())
        }
        fn do_step(&mut self, t: f64, h: f64) -> Result<StepOutcome> {
            self.steps.lock().unwrap().push((t, h));
            self.end = t + h;
            Ok(StepOutcome::Completed)
        }
        fn get_observed(&mut self, values: &mut [f64]) -> Result<()> {
            values[0] = self.end;
            Ok(())
        }
        fn get_output_derivatives(&mut self, _order: u32, _values: &mut [f64]) -> Result<()> {
            Ok(())
        }
        fn save_state(&mut self, _reuse: Option<StateId>) -> Result<StateId> {
            Ok(StateId(0))
        }
        fn restore_state(&mut self, _id: StateId) -> Result<()> {
            Ok(())
        }
        fn free_state(&mut self, _id: StateId) -> Result<()> {
            Ok(())
        }
        fn terminate(&mut self) -> Result<()> {
            Ok(())
        }
        fn counters(&self) -> CallCounters {
            CallCounters::default()
        }
    }

    /// Whether `t` is a multiple of `step` (to a nanosecond).
    fn on(t: f64, step: f64) -> bool {
        ((t / step).round() * step - t).abs() < 1e-9
    }

    /// A multi-rate fixed-step master driven to stop times off its grid,
    /// as a nested system's master is by an adaptive outer master: each
    /// subsystem's steps end on its own points (the multiples of `k h`) or
    /// at a stop, so none is longer than `k h`, every one of its points is
    /// the end of a step, and what it publishes is never from the future.
    #[test]
    fn a_multi_rate_master_keeps_to_its_grid_between_stop_times_off_it() {
        let h = 0.1;
        let stops = [0.07, 0.19, 0.33, 0.5, 0.62, 0.64, 0.8, 0.95, 1.2];
        for scheme in [Scheme::Jacobi, Scheme::GaussSeidel(vec![1, 0])] {
            let ((fast, fast_steps), (slow, slow_steps)) = (recorder("fast"), recorder("slow"));
            let mut sys = System::new(SystemSpec {
                subsystems: vec![fast, slow],
                step_multiple: vec![1, 3],
                connections: Vec::new(),
                bonds: Vec::new(),
                nonfinite: NonFinitePolicy::Error,
                threads: 1,
            })
            .unwrap();
            sys.initialize(0.0, None).unwrap();
            let mut master = FixedStep::new(h, scheme.clone(), 0);
            master.check(&sys).unwrap();
            master.start(&mut sys).unwrap();
            for &stop in &stops {
                let end = sys.time_base().round(stop);
                while sys.ticks() < end {
                    master.advance(&mut sys, stop).unwrap();
                    // The slow subsystem's published output is the end of
                    // a step it has reached, the last one it has.
                    let now = sys.time();
                    let published = sys.buffers()[1].y[0];
                    let reached = slow_steps
                        .lock()
                        .unwrap()
                        .iter()
                        .map(|&(t, h)| t + h)
                        .filter(|&e| e <= now + 1e-12)
                        .fold(0.0, f64::max);
                    assert_eq!(published, reached, "{scheme:?} at {now}");
                }
                assert_eq!(sys.time(), stop);
            }
            for (steps, k) in [(&fast_steps, 1), (&slow_steps, 3)] {
                let steps = steps.lock().unwrap();
                let span = k as f64 * h;
                let mut t = 0.0;
                for &(t0, dt) in steps.iter() {
                    assert!(t0 == t, "{scheme:?}, k = {k}: a step from {t0} after {t}");
                    assert!(dt <= span + 1e-12, "{scheme:?}, k = {k}: a step of {dt}");
                    t = t0 + dt;
                    assert!(
                        on(t, span) || stops.iter().any(|&s| (s - t).abs() < 1e-12),
                        "{scheme:?}, k = {k}: a step ends at {t}, off its grid"
                    );
                }
                assert!((t - 1.2).abs() < 1e-12);
                let points = steps.iter().filter(|&&(t0, dt)| on(t0 + dt, span)).count();
                assert_eq!(points, (1.2 / span).round() as usize, "{scheme:?}, k = {k}");
            }
        }
    }
}
