//! Richardson extrapolation with rollback (arnold2013 sec. 4;
//! docs/algorithms.md).
//!
//! Each accepted unit is a double step `T_n -> T_n + 2H` of two Jacobi
//! macro steps of size `H` (exchange at `T_n + H`), giving `y_bar`. The
//! local error of the outputs is estimated from a second solution:
//!
//! - `EST_Rich` (eq. 24): one step of size `2H` from the saved state at
//!   `T_n`, inputs extrapolated from the data at the double-step boundaries
//!   `T_n, T_n - 2H, ...`, giving `y_tilde`;
//!   `EST = (y_tilde - y_bar) / (2^(k+1) - 1)`.
//! - `EST_mod` (eq. 26): the first step of size `H` is shared; the second
//!   is taken twice from the state saved at `T_n + H`, once with the input
//!   polynomial of the first step continued, giving `y_tilde_bar`, once
//!   with the newly exchanged data, giving `y_bar`;
//!   `EST = (y_tilde_bar - y_bar) / (c_k - 1)`, `c_k = 2, 14/5, 32/9`
//!   (the opposite of eq. 26's sign, so that both estimates approximate
//!   `y_bar - y_exact`).
//!
//! The estimate is normalised per coupled output (`atol + rtol |y|`) and
//! aggregated; above 1 the double step is rejected: every subsystem is
//! restored to `T_n` and the step shrunk. Accepted, the next step is
//! `H * clamp(alpha eps^(-1/q), theta_min, theta_max)` with `q = k + 2`
//! without direct feed-through and `k + 1` with it (from ModelStructure).
//! A step that yields a non-finite output or an FMU's Discard counts as
//! rejected too.

use super::{Master, MasterStats, StepFields, StepReport};
use crate::controller::PiSettings;
use crate::error::{CoreError, Result};
use crate::indicators::{Aggregator, Tolerances, physical_ports};
use crate::inputs::InputExtrapolation;
use crate::subsystem::StateId;
use crate::system::{BufferSnapshot, System};

/// The second solution the local error is estimated from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Estimate {
    /// Classical Richardson extrapolation, eq. 24 (a single step of 2H).
    Richardson,
    /// The modified estimate of eq. 26 (only the second step repeated).
    Modified,
}

/// Settings of the Richardson master.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RichardsonSettings {
    /// Input extrapolation order k (0, 1 or 2).
    pub extrapolation_order: u32,
    /// Which estimate.
    pub estimate: Estimate,
    /// Normalisation and aggregation of the estimate.
    pub tolerances: Tolerances,
    /// Safety factor, step and ratio bounds (the gains are not used: the
    /// step follows from the estimate's order directly).
    pub controller: PiSettings,
    /// First (small) step H.
    pub initial_step: f64,
    /// Rejections of one double step before giving up.
    pub max_rejections: u32,
}

/// The Richardson master.
#[derive(Debug, Clone)]
pub struct Richardson {
    s: RichardsonSettings,
    run: Option<Running>,
    stats: MasterStats,
}

#[derive(Debug, Clone)]
struct Running {
    /// Coupled inputs at every communication point (the double steps).
    fine: InputExtrapolation,
    /// Coupled inputs at double-step boundaries only (the 2H step).
    coarse: InputExtrapolation,
    /// Physical coupled outputs the estimate covers.
    outputs: Vec<(usize, usize)>,
    /// Error order q of the estimate.
    order: u32,
    h: f64,
    at_start: Vec<StateId>,
    at_middle: Vec<StateId>,
    snap_start: BufferSnapshot,
    snap_middle: BufferSnapshot,
    y_bar: Vec<f64>,
    y_other: Vec<f64>,
    due: Vec<bool>,
    hs: Vec<f64>,
}

impl Richardson {
    /// A Richardson master.
    pub fn new(settings: RichardsonSettings) -> Self {
        Richardson {
            s: settings,
            run: None,
            stats: MasterStats::default(),
        }
    }

    /// Replaces the input histories after [`Master::start`] with known
    /// coupled inputs at earlier communication points (oldest first, each a
    /// time and every subsystem's input slots), followed by the current
    /// ones: a restart with history, or an error analysis from exact data.
    /// `fine` are the communication points, `coarse` the double-step
    /// boundaries (every other one) the 2H step of `EST_Rich` extrapolates
    /// from.
    pub fn warm_start(
        &mut self,
        sys: &mut System,
        fine: &[(f64, Vec<Vec<f64>>)],
        coarse: &[(f64, Vec<Vec<f64>>)],
    ) -> Result<()> {
        let k = self.s.extrapolation_order.min(2);
        let run = self
            .run
            .as_mut()
            .ok_or_else(|| CoreError::Config("richardson master used before start".into()))?;
        let now: Vec<Vec<f64>> = sys.buffers().iter().map(|b| b.u.clone()).collect();
        let t = sys.time();
        let mut rebuild = |points: &[(f64, Vec<Vec<f64>>)]| -> Result<InputExtrapolation> {
            let mut h = InputExtrapolation::new(sys, k);
            for (tp, u) in points.iter().chain(std::iter::once(&(t, now.clone()))) {
                if u.len() != sys.len() {
                    return Err(CoreError::Config(
                        "warm start: one input vector per subsystem".into(),
                    ));
                }
                for (s, us) in u.iter().enumerate() {
                    let b = sys.buffers_mut(s);
                    if us.len() != b.u.len() {
                        return Err(CoreError::Config(format!(
                            "warm start: subsystem {s} has {} inputs, got {}",
                            b.u.len(),
                            us.len()
                        )));
                    }
                    b.u.copy_from_slice(us);
                }
                h.record(sys, *tp);
            }
            Ok(h)
        };
        run.fine = rebuild(fine)?;
        run.coarse = rebuild(coarse)?;
        Ok(())
    }

    /// Carries out one double step of size `2h` from the current state
    /// without step control (the system ends in the accepted `y_bar` state)
    /// and returns `(y_bar, EST)` for the physically coupled outputs, in
    /// the order of [`Richardson::estimated_outputs`].
    pub fn double_step_estimate(
        &mut self,
        sys: &mut System,
        h: f64,
    ) -> Result<(Vec<f64>, Vec<f64>)> {
        let divisor = self.divisor();
        let estimate = self.s.estimate;
        let run = self
            .run
            .as_mut()
            .ok_or_else(|| CoreError::Config("richardson master used before start".into()))?;
        let t = sys.time();
        let base = sys.time_base();
        let half = base.round(h).max(1);
        let t_mid = base.seconds(sys.ticks() + half);
        let t_end = base.seconds(sys.ticks() + 2 * half);
        sys.save_states(&mut run.at_start)?;
        sys.save_buffers(&mut run.snap_start);
        attempt(run, sys, estimate, [t, t_mid, t_end])?;
        run.coarse.record(sys, t_end);
        let est = run
            .y_bar
            .iter()
            .zip(&run.y_other)
            .map(|(yb, yo)| (yo - yb) / divisor)
            .collect();
        Ok((run.y_bar.clone(), est))
    }

    /// The outputs the estimate covers, as (subsystem, observed slot).
    pub fn estimated_outputs(&self) -> &[(usize, usize)] {
        self.run.as_ref().map_or(&[], |r| r.outputs.as_slice())
    }

    /// `(2^(k+1) - 1)` or `(c_k - 1)`: the divisor of the estimate.
    fn divisor(&self) -> f64 {
        let k = self.s.extrapolation_order.min(2) as i32;
        match self.s.estimate {
            Estimate::Richardson => 2f64.powi(k + 1) - 1.0,
            Estimate::Modified => [2.0, 14.0 / 5.0, 32.0 / 9.0][k as usize] - 1.0,
        }
    }
}

/// One Jacobi step of every subsystem from `t` to `t_end` (points on the
/// tick grid) with the inputs prepared by `prepare`; publishes and
/// exchanges, but records nothing.
fn jacobi_step(
    sys: &mut System,
    due: &[bool],
    hs: &mut [f64],
    t: f64,
    t_end: f64,
    mut prepare: impl FnMut(&mut System, usize),
) -> Result<()> {
    for s in 0..sys.len() {
        prepare(sys, s);
    }
    hs.iter_mut().for_each(|x| *x = t_end - t);
    sys.step_jacobi(t, hs, due)?;
    sys.publish_all();
    sys.exchange_all();
    sys.set_time(t_end);
    Ok(())
}

/// The points `[t, t + H, t + 2H]` of a double step of nominal half step
/// `h` from `t` towards `t_stop`, in whole ticks (a half step of at least
/// one), the last double step ending exactly at the stop time (its halves
/// then differ by at most one tick); and whether it was shortened.
fn double_step_points(sys: &System, h: f64, t_stop: f64) -> ([f64; 3], bool) {
    let base = sys.time_base();
    let (now, stop) = (sys.ticks(), base.round(t_stop));
    let half = base.round(h).max(1);
    let remaining = stop - now;
    let slack = (1e-6 * half as f64).max(2.0);
    let (mid, end, shortened) = if (2 * half) as f64 >= remaining as f64 - slack {
        (now + (remaining / 2).max(1), stop, true)
    } else {
        (now + half, now + 2 * half, false)
    };
    (
        [base.seconds(now), base.seconds(mid), base.seconds(end)],
        shortened,
    )
}

/// An attempt that failed in a way a smaller step may cure.
fn recoverable(e: &CoreError) -> bool {
    matches!(
        e,
        CoreError::NonFinite { .. } | CoreError::Diverged { .. } | CoreError::Discarded { .. }
    )
}

impl Master for Richardson {
    fn name(&self) -> &'static str {
        "richardson"
    }

    fn check(&self, sys: &System) -> Result<()> {
        let missing: Vec<String> = sys
            .subsystems()
            .iter()
            .map(|s| s.info())
            .filter(|i| i.has_state && !i.can_get_set_state)
            .map(|i| {
                format!(
                    "'{}' ({}: canGetAndSetFMUstate=\"false\")",
                    i.name, i.origin
                )
            })
            .collect();
        if !missing.is_empty() {
            return Err(CoreError::Capability {
                master: "richardson",
                reason: format!(
                    "it rolls steps back, which needs FMU state save/restore, and {} cannot: use a master without rollback (\"ecco\", \"predictor-corrector\", \"nepce\" or \"fixed-step\")",
                    missing.join(", ")
                ),
            });
        }
        let fixed: Vec<String> = sys
            .subsystems()
            .iter()
            .filter(|s| !s.info().can_handle_variable_step)
            .map(|s| format!("'{}'", s.info().name))
            .collect();
        if !fixed.is_empty() {
            return Err(CoreError::Capability {
                master: "richardson",
                reason: format!(
                    "it varies the step, but {} declare canHandleVariableCommunicationStepSize=\"false\"",
                    fixed.join(", ")
                ),
            });
        }
        if sys.step_multiples().iter().any(|&k| k > 1) {
            return Err(CoreError::Config(
                "richardson master: step_multiple is only supported by the fixed-step master"
                    .into(),
            ));
        }
        let c = &self.s.controller;
        if !(self.s.initial_step > 0.0 && c.dt_min > 0.0 && c.dt_min <= c.dt_max) {
            return Err(CoreError::Config(format!(
                "richardson master: inconsistent step settings (step {}, dt_min {}, dt_max {})",
                self.s.initial_step, c.dt_min, c.dt_max
            )));
        }
        Ok(())
    }

    fn start(&mut self, sys: &mut System) -> Result<()> {
        // The double step restores the state at its start after two doSteps.
        sys.allow_rollback(crate::subsystem::RollbackTo::Earlier)?;
        let k = self.s.extrapolation_order.min(2);
        let t0 = sys.time();
        let mut fine = InputExtrapolation::new(sys, k);
        let mut coarse = InputExtrapolation::new(sys, k);
        fine.start(sys, t0)?;
        coarse.start(sys, t0)?;
        let outputs = physical_ports(sys).0;
        let feedthrough = outputs.iter().any(|&(s, o)| {
            sys.subsystems()[s]
                .info()
                .feedthrough
                .get(o)
                .is_some_and(|d| !d.is_empty())
        });
        let n = sys.len();
        self.run = Some(Running {
            fine,
            coarse,
            order: if feedthrough { k + 1 } else { k + 2 },
            y_bar: vec![0.0; outputs.len()],
            y_other: vec![0.0; outputs.len()],
            outputs,
            h: self
                .s
                .initial_step
                .clamp(self.s.controller.dt_min, self.s.controller.dt_max),
            at_start: Vec::new(),
            at_middle: Vec::new(),
            snap_start: BufferSnapshot::default(),
            snap_middle: BufferSnapshot::default(),
            due: vec![true; n],
            hs: vec![0.0; n],
        });
        Ok(())
    }

    fn advance(&mut self, sys: &mut System, t_stop: f64) -> Result<StepReport> {
        let divisor = self.divisor();
        let s = self.s;
        let run = self
            .run
            .as_mut()
            .ok_or_else(|| CoreError::Config("richardson master used before start".into()))?;
        let t = sys.time();
        let mut rejections = 0u32;
        sys.save_states(&mut run.at_start)?;
        sys.save_buffers(&mut run.snap_start);
        loop {
            // The last double step ends exactly at the stop time (or the
            // next output point); the step size is kept over it.
            let (points, shortened) = double_step_points(sys, run.h, t_stop);
            let [_, t_mid, t_end] = points;
            let h = t_mid - t;
            let attempt = attempt(run, sys, s.estimate, points);
            // (`failure`: the error of an attempt that failed in a way a
            // smaller step may cure; what a give-up then names.)
            let (eps, failure) = match attempt {
                Ok(()) => {
                    let mut agg = Aggregator::new(s.tolerances.aggregate);
                    for (yb, yo) in run.y_bar.iter().zip(&run.y_other) {
                        let est = (yo - yb) / divisor;
                        agg.add(s.tolerances.normalise(est, *yb));
                    }
                    (agg.value(), None)
                }
                Err(e) if recoverable(&e) => {
                    tracing::debug!("richardson: attempt at t = {t}, H = {h} failed: {e}");
                    (f64::INFINITY, Some(e))
                }
                Err(e) => return Err(e),
            };
            let c = &s.controller;
            let q = f64::from(run.order);
            if eps <= 1.0 {
                run.coarse.record(sys, t_end);
                let factor =
                    (c.alpha * eps.max(1e-300).powf(-1.0 / q)).clamp(c.theta_min, c.theta_max);
                if !shortened {
                    run.h = (run.h * factor).clamp(c.dt_min, c.dt_max);
                }
                self.stats.macro_steps += 1;
                self.stats.rejected_steps += u64::from(rejections);
                self.stats.iterations += 1;
                return Ok(StepReport {
                    indicator: eps,
                    rejections,
                    ..StepReport::simple(t, sys.time_base().span(t, t_end))
                });
            }
            // Rejected: back to T_n, shrink, retry.
            rejections += 1;
            sys.restore_states(&run.at_start)?;
            sys.restore_buffers(&run.snap_start);
            run.fine.forget_after(t);
            if h <= c.dt_min * (1.0 + 1e-12) || rejections > s.max_rejections {
                let why = if h <= c.dt_min * (1.0 + 1e-12) {
                    format!(
                        "the error estimate is {} > 1 at the minimum step dt_min = {}",
                        crate::text::significant(eps, 4),
                        crate::text::number(c.dt_min)
                    )
                } else {
                    format!(
                        "{rejections} rejections of one double step (max_rejections = {}); the last estimate was {} at H = {}",
                        s.max_rejections,
                        crate::text::significant(eps, 4),
                        crate::text::number(h)
                    )
                };
                let detail = match &failure {
                    Some(e) => format!("the last attempt failed: {}", e.attempt_failure()),
                    None => dominant(run, sys, divisor, &s.tolerances),
                };
                return Err(CoreError::StepControl {
                    master: "richardson",
                    t,
                    reason: format!("{why}; {detail}"),
                });
            }
            let factor = if eps.is_finite() {
                (c.alpha * eps.powf(-1.0 / q)).clamp(c.theta_min, 1.0)
            } else {
                c.theta_min
            };
            run.h = (h * factor).max(c.dt_min);
        }
    }

    fn stats(&self) -> MasterStats {
        self.stats
    }

    fn step_fields(&self, _sys: &System) -> StepFields {
        StepFields {
            indicator: true,
            rejections: true,
            ..StepFields::default()
        }
    }

    fn clone_box(&self) -> Box<dyn Master> {
        Box::new(self.clone())
    }
}

/// Carries out one double step attempt over `[t, t_mid, t_end]` (states
/// saved by the caller): fills `y_bar` and `y_other` (y_tilde or
/// y_tilde_bar) and leaves the system in the `y_bar` state at `t_end`.
fn attempt(
    run: &mut Running,
    sys: &mut System,
    estimate: Estimate,
    [t, t_mid, t_end]: [f64; 3],
) -> Result<()> {
    let gather = |sys: &System, out: &mut [f64], outputs: &[(usize, usize)]| {
        for (dst, &(s, k)) in out.iter_mut().zip(outputs) {
            *dst = sys.buffers()[s].y[k];
        }
    };
    match estimate {
        Estimate::Richardson => {
            // One step of 2H with inputs from the double-step boundaries.
            let coarse = &mut run.coarse;
            jacobi_step(sys, &run.due, &mut run.hs, t, t_end, |sys, s| {
                coarse.prepare(sys, s, t)
            })?;
            gather(sys, &mut run.y_other, &run.outputs);
            sys.restore_states(&run.at_start)?;
            sys.restore_buffers(&run.snap_start);
            // Two steps of H.
            for (a, b) in [(t, t_mid), (t_mid, t_end)] {
                let fine = &mut run.fine;
                jacobi_step(sys, &run.due, &mut run.hs, a, b, |sys, s| {
                    fine.prepare(sys, s, a)
                })?;
                run.fine.record(sys, b);
            }
            gather(sys, &mut run.y_bar, &run.outputs);
        }
        Estimate::Modified => {
            let fine = &mut run.fine;
            jacobi_step(sys, &run.due, &mut run.hs, t, t_mid, |sys, s| {
                fine.prepare(sys, s, t)
            })?;
            run.fine.record(sys, t_mid);
            sys.save_states(&mut run.at_middle)?;
            sys.save_buffers(&mut run.snap_middle);
            // The second step with the first step's input polynomial continued.
            let fine = &mut run.fine;
            jacobi_step(sys, &run.due, &mut run.hs, t_mid, t_end, |sys, s| {
                fine.prepare_continuing(sys, s, t_mid, 1)
            })?;
            gather(sys, &mut run.y_other, &run.outputs);
            sys.restore_states(&run.at_middle)?;
            sys.restore_buffers(&run.snap_middle);
            // ... and with the data exchanged at T_n + H.
            let fine = &mut run.fine;
            jacobi_step(sys, &run.due, &mut run.hs, t_mid, t_end, |sys, s| {
                fine.prepare(sys, s, t_mid)
            })?;
            run.fine.record(sys, t_end);
            gather(sys, &mut run.y_bar, &run.outputs);
        }
    }
    Ok(())
}

/// Names the outputs with the largest normalised estimates (for the error
/// message when the step cannot be made small enough).
fn dominant(run: &Running, sys: &System, divisor: f64, tol: &Tolerances) -> String {
    let mut v: Vec<(f64, String)> = run
        .outputs
        .iter()
        .zip(run.y_bar.iter().zip(&run.y_other))
        .map(|(&(s, k), (yb, yo))| {
            let info = sys.subsystems()[s].info();
            (
                tol.normalise((yo - yb) / divisor, *yb).abs(),
                format!("{}.{}", info.name, info.observed[k].name),
            )
        })
        .collect();
    v.sort_by(|a, b| b.0.total_cmp(&a.0));
    let top: Vec<String> = v
        .iter()
        .take(3)
        .map(|(e, n)| format!("{n} ({})", crate::text::significant(*e, 4)))
        .collect();
    format!("largest normalised estimates: {}", top.join(", "))
}
