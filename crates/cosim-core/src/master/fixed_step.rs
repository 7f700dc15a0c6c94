//! Fixed macro step, Jacobi or Gauss-Seidel (kyllingstad sec. 3.1,
//! Algorithm 1; ALGORITHMS.md sec. 2).

use super::stepper::{StepPlan, Stepper};
use super::{Master, MasterStats, StepReport};
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
/// the stop times are the outer communication points: single rate, a step
/// shortened to one off the grid is followed by one to the next grid
/// point, so no step is longer than `h` and the grid stays `t0 + n h`. A subsystem with step multiple `k` steps every k-th macro step over
/// `k h` and publishes its outputs when the master reaches the end of that
/// step (it never exposes values from the future).
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
    /// Macro steps taken.
    n: u64,
    /// The index of the last grid point `t0 + k h` at or before the
    /// current time. It is `n` unless (single rate) a step ended before its
    /// grid point, at a stop time off the grid (a nested system's outer
    /// communication points under an adaptive outer master): the next step
    /// then ends on the next grid point, so no step is longer than `h`.
    grid: u64,
    /// The end of the next macro step, computed at the end of the one
    /// before (its division then overlaps what the run loop does between
    /// the two): its grid index, the stop it was computed for (in ticks),
    /// its ticks and seconds.
    next_point: (u64, i64, i64, f64),
    /// Per subsystem: macro step index at whose end its outputs publish.
    publish_at: Vec<Option<u64>>,
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
        Some(Holds { pairs, held, dests })
    }

    /// The exchange after the publications that end the macro step whose
    /// end is `done` macro steps from the start: every input from the
    /// published outputs, but those of each held pair's destination from
    /// the held outputs, renewed where `done` is a multiple of the lcm.
    fn exchange(&mut self, sys: &mut System, done: u64) {
        for (p, &(_, s, lcm)) in self.pairs.iter().enumerate() {
            if done.is_multiple_of(lcm) {
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
                .any(|&(_, _, lcm)| !done.is_multiple_of(lcm));
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
    /// publishes at its end (`n` macro steps done; `t_next` seconds,
    /// `point` the end of a macro step by its index, as in `advance`).
    fn step_planned(
        &mut self,
        sys: &mut System,
        n: u64,
        (t, t_stop): (f64, f64),
        t_next: f64,
        point: impl Fn(u64) -> f64,
    ) -> Result<()> {
        // Which subsystems start a step now, over how long, and who
        // publishes at the end of this macro step. Single rate: everyone,
        // over the macro step (the plan's flags stay all true).
        if self.single_rate {
            self.plan.h.fill(t_next - t);
        } else {
            for s in 0..sys.len() {
                let k = u64::from(sys.step_multiples()[s].max(1));
                self.plan.due[s] = n.is_multiple_of(k);
                if self.plan.due[s] {
                    let end = point(n + k);
                    self.plan.h[s] = end - t;
                    self.publish_at[s] = Some(if end >= t_stop { u64::MAX } else { n + k - 1 });
                }
                self.plan.publish[s] = match self.publish_at[s] {
                    Some(at) => at == n || (at == u64::MAX && t_next >= t_stop),
                    None => false,
                };
                if self.plan.publish[s] {
                    self.publish_at[s] = None;
                }
            }
        }
        match &mut self.holds {
            None => self
                .stepper
                .step(sys, &mut self.inputs, &self.plan, t, t_next)?,
            Some(holds) => self.stepper.step_exchanging(
                sys,
                &mut self.inputs,
                &self.plan,
                t,
                t_next,
                |sys| holds.exchange(sys, n + 1),
            )?,
        }
        Ok(())
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
        let held_inline = single_rate
            && holds.is_none()
            && self.scheme == Scheme::Jacobi
            && self.extrapolation_order == 0;
        self.run = Some(Running {
            inputs,
            stepper: Stepper::new(sys, self.scheme.clone()),
            plan: StepPlan::new(sys.len()),
            t0: sys.ticks(),
            h,
            h_seconds: base.seconds(h),
            n: 0,
            grid: 0,
            next_point: (0, 0, 0, f64::NAN),
            publish_at: vec![None; sys.len()],
            single_rate,
            held_inline,
            stop: (f64::NAN, 0),
            holds,
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
        let n = run.n;
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
        let point = |m: u64| base.seconds(point_ticks(m));
        // The step ends on the next grid point after `g` (single rate: the
        // grid point at or before now; multi-rate plans count steps).
        let g = run.grid;
        let (next, t_next) = match run.next_point {
            (m, s, ticks, seconds) if m == g + 1 && s == stop => (ticks, seconds),
            _ => (point_ticks(g + 1), point(g + 1)),
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
            run.step_planned(sys, n, (t, t_stop), t_next, point)?;
        }
        run.n += 1;
        // On to the next grid point, unless the step ended at a stop time
        // before it (then the next step ends on it). (Tested only where
        // the step ended at the stop: one comparison on the grid.)
        let g = if next == stop && run.single_rate && {
            let end = t0.saturating_add(((g + 1) as i64).saturating_mul(h));
            (end - next) as f64 > 1e-6 * h as f64
        } {
            g
        } else {
            g + 1
        };
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
