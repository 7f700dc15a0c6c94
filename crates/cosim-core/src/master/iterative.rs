//! Fixed-point iteration per macro step (docs/algorithms.md):
//! IFOSMONDI (ifosmondi2019 sec. 3, Algorithm 1) with C1 cubic Hermite
//! inputs, and the Kübler-Schiehlen variant with affine inputs.
//!
//! Per macro step `[t_N, t_N + dt]`, from FMU states saved at `t_N`:
//!
//! - iteration 1: every input as SOH, the quadratic with the value and
//!   derivative of `t_N` that returns to the value at `t_N + dt`
//!   (affine variant: held constant);
//! - iteration m >= 2: the cubic Hermite through `(t_N, u_N, u'_N)` and
//!   `(t_N + dt, y, y')`, the coupled outputs and their derivatives of
//!   iteration m - 1, built on normalised time (affine variant: the line
//!   through `(t_N, u_N)` and `(t_N + dt, y)`);
//! - every subsystem steps from the saved state (Jacobi, in parallel);
//! - converged when every input satisfies eq. 27,
//!   `|u - y_L| < eps_rel |u| + eps_abs`, with `u` the input's value at the
//!   step end and `y_L` the newly coupled value;
//! - after `max_iterations` without convergence the step is halved and
//!   retried from `t_N`; after convergence the next step is
//!   `min(dt_base, 1.3 dt)`.
//!
//! Polynomial inputs reach FMI 2 FMUs as value plus derivatives of order
//! 1-3 (`fmi2SetRealInputDerivatives`), which represent the cubic exactly.
//! An FMU that cannot interpolate inputs gets the best it accepts — the
//! value at the step start in the first iteration and the iterated end
//! value afterwards — and the master says once that its inputs are not C1.
//! Output derivatives come from the FMU where it provides them
//! (`maxOutputDerivativeOrder >= 1`), else from the finite difference of
//! the outputs over the step (eq. 12); which one is reported per FMU.

use super::{Master, MasterStats, StepFields, StepReport};
use crate::error::{CoreError, Result};
use crate::extrapolation::hermite_taylor;
use crate::subsystem::StateId;
use crate::system::{BufferSnapshot, System};

/// Which input polynomials the iteration uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Interpolation {
    /// IFOSMONDI: SOH, then cubic Hermite (C1 inputs).
    Hermite,
    /// Kübler-Schiehlen: constant, then affine (C0 inputs, no derivatives).
    Affine,
}

/// Settings of the iterative master.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct IterativeSettings {
    /// Input polynomials.
    pub interpolation: Interpolation,
    /// Base (largest) macro step.
    pub dt_base: f64,
    /// Smallest step before giving up.
    pub dt_min: f64,
    /// Absolute convergence tolerance of eq. 27.
    pub eps_abs: f64,
    /// Relative convergence tolerance of eq. 27.
    pub eps_rel: f64,
    /// Iterations per attempt before the step is halved.
    pub max_iterations: u32,
}

/// The iterative master (`ifosmondi`, `iterative-affine`).
#[derive(Debug, Clone)]
pub struct Iterative {
    s: IterativeSettings,
    run: Option<Running>,
    stats: MasterStats,
}

#[derive(Debug, Clone)]
struct Running {
    states: Vec<StateId>,
    snapshot: BufferSnapshot,
    dt: f64,
    /// Coupled inputs and their derivatives at the step start, per
    /// subsystem.
    u0: Vec<Vec<f64>>,
    du0: Vec<Vec<f64>>,
    /// Iterated end values and derivatives (the newly coupled ones).
    u1: Vec<Vec<f64>>,
    du1: Vec<Vec<f64>>,
    /// Outputs at the step start, for finite-difference derivatives.
    y0: Vec<Vec<f64>>,
    fd: Vec<bool>,
    /// Per subsystem and input slot: the input takes a polynomial (the
    /// subsystem interpolates inputs and the slot is a float). The others
    /// take values only: the start value, then the iterated end value.
    smooth: Vec<Vec<bool>>,
    due: Vec<bool>,
    hs: Vec<f64>,
}

impl Iterative {
    /// An iterative master.
    pub fn new(settings: IterativeSettings) -> Self {
        Iterative {
            s: settings,
            run: None,
            stats: MasterStats::default(),
        }
    }

    fn name_of(&self) -> &'static str {
        match self.s.interpolation {
            Interpolation::Hermite => "ifosmondi",
            Interpolation::Affine => "iterative-affine",
        }
    }
}

/// Output derivatives at the current end of step: from the FMU, or the
/// finite difference against `y0` over `dt` (eq. 12).
fn output_derivatives(sys: &mut System, fd: &[bool], y0: &[Vec<f64>], dt: f64) -> Result<()> {
    for s in 0..sys.len() {
        if fd[s] {
            let b = sys.buffers_mut(s);
            for (k, d) in b.dy.iter_mut().enumerate() {
                *d = (b.y[k] - y0[s][k]) / dt;
            }
        } else {
            sys.read_output_derivatives(s)?;
        }
    }
    Ok(())
}

impl Master for Iterative {
    fn name(&self) -> &'static str {
        self.name_of()
    }

    fn check(&self, sys: &System) -> Result<()> {
        let name = self.name_of();
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
                master: name,
                reason: format!(
                    "it repeats every macro step until the coupling converges, which needs FMU state save/restore, and {} cannot: use a master without rollback (\"ecco\", \"predictor-corrector\", \"nepce\" or \"fixed-step\")",
                    missing.join(", ")
                ),
            });
        }
        if sys.step_multiples().iter().any(|&k| k > 1) {
            return Err(CoreError::Config(format!(
                "{name} master: step_multiple is only supported by the fixed-step master"
            )));
        }
        let s = &self.s;
        if !(s.dt_base > 0.0 && s.dt_min > 0.0 && s.max_iterations >= 1) {
            return Err(CoreError::Config(format!(
                "{name} master: inconsistent settings {s:?}"
            )));
        }
        Ok(())
    }

    fn start(&mut self, sys: &mut System) -> Result<()> {
        // Each iteration restores the state at the macro step's start, from
        // which every subsystem made its one doStep.
        sys.allow_rollback(crate::subsystem::RollbackTo::StepStart)?;
        let n = sys.len();
        let mut fd = vec![true; n];
        for (s, f) in fd.iter_mut().enumerate() {
            let info = sys.subsystems()[s].info();
            *f = info.max_output_derivative_order < 1;
            if self.s.interpolation == Interpolation::Hermite {
                if info.n_outputs > 0 {
                    tracing::info!(
                        "{}: output derivatives of '{}' {}",
                        self.name_of(),
                        info.name,
                        if *f {
                            "by finite differences over the step (the FMU declares maxOutputDerivativeOrder = 0)"
                        } else {
                            "from the FMU (fmi2GetRealOutputDerivatives / fmi3GetOutputDerivatives)"
                        }
                    );
                }
                if !info.inputs.is_empty() && !info.can_interpolate_inputs {
                    tracing::warn!(
                        "{}: '{}' ({}) cannot interpolate inputs: it gets the value at the step start in the first iteration and the iterated end value afterwards, so its inputs are not C1",
                        self.name_of(),
                        info.name,
                        info.origin
                    );
                }
            }
        }
        let vecs = |f: &dyn Fn(&crate::system::Buffers) -> usize| -> Vec<Vec<f64>> {
            sys.buffers().iter().map(|b| vec![0.0; f(b)]).collect()
        };
        let mut run = Running {
            states: Vec::new(),
            snapshot: BufferSnapshot::default(),
            dt: self.s.dt_base,
            u0: vecs(&|b| b.u.len()),
            du0: vecs(&|b| b.u.len()),
            u1: vecs(&|b| b.u.len()),
            du1: vecs(&|b| b.u.len()),
            y0: vecs(&|b| b.y.len()),
            fd,
            smooth: sys
                .subsystems()
                .iter()
                .map(|s| {
                    let info = s.info();
                    let interp = info.can_interpolate_inputs;
                    info.inputs.iter().map(|p| interp && !p.discrete).collect()
                })
                .collect(),
            due: vec![true; n],
            hs: vec![0.0; n],
        };
        for (s, u) in run.u0.iter_mut().enumerate() {
            u.copy_from_slice(&sys.buffers()[s].u);
        }
        // Derivatives of the coupled inputs at the start: from the FMUs'
        // output derivatives where available, zero otherwise.
        if self.s.interpolation == Interpolation::Hermite {
            for s in 0..n {
                if !run.fd[s] {
                    sys.read_output_derivatives(s)?;
                }
            }
            sys.exchange_derivatives_all();
            for (s, du) in run.du0.iter_mut().enumerate() {
                du.copy_from_slice(&sys.buffers()[s].du);
            }
        }
        self.run = Some(run);
        Ok(())
    }

    fn advance(&mut self, sys: &mut System, t_stop: f64) -> Result<StepReport> {
        let s = self.s;
        let name = self.name_of();
        let run = self
            .run
            .as_mut()
            .ok_or_else(|| CoreError::Config(format!("{name} master used before start")))?;
        let t = sys.time();
        sys.save_states(&mut run.states)?;
        sys.save_buffers(&mut run.snapshot);
        for (i, b) in sys.buffers().iter().enumerate() {
            run.y0[i].copy_from_slice(&b.y);
        }
        let mut halvings = 0u32;
        let mut iterations_total = 0u32;
        // The error of the last iteration when a step failed (a smaller
        // step may cure it): what a give-up then names.
        let mut failure: Option<CoreError> = None;
        loop {
            // The step in whole ticks, shortened to hit the stop time (or
            // the next output point).
            let base = sys.time_base();
            let t_next = base.step_end(t, run.dt, t_stop);
            let dt = t_next - t;
            let mut residual = f64::INFINITY;
            for m in 1..=s.max_iterations {
                if m > 1 {
                    sys.restore_states(&run.states)?;
                    sys.restore_buffers(&run.snapshot);
                }
                for sub in 0..sys.len() {
                    let interp = sys.subsystems()[sub].info().can_interpolate_inputs;
                    let b = sys.buffers_mut(sub);
                    for i in 0..b.taylor.len() {
                        let (ua, dua) = (run.u0[sub][i], run.du0[sub][i]);
                        let (ub, dub) = (run.u1[sub][i], run.du1[sub][i]);
                        b.taylor[i] = match (s.interpolation, m, run.smooth[sub][i]) {
                            // Second-order hold: value and slope at t_N,
                            // back to the value at t_N + dt.
                            (Interpolation::Hermite, 1, true) => [ua, dua, -2.0 * dua / dt, 0.0],
                            (Interpolation::Hermite, _, true) => {
                                hermite_taylor(dt, ua, dua, ub, dub)
                            }
                            (Interpolation::Affine, 1, true) => [ua, 0.0, 0.0, 0.0],
                            (Interpolation::Affine, _, true) => [ua, (ub - ua) / dt, 0.0, 0.0],
                            // Values only: the start value, then the
                            // iterated end value.
                            (_, 1, false) => [ua, 0.0, 0.0, 0.0],
                            (_, _, false) => [ub, 0.0, 0.0, 0.0],
                        };
                    }
                    b.deliver_orders = match (interp, s.interpolation) {
                        (false, _) => 0,
                        (true, Interpolation::Hermite) => 3,
                        (true, Interpolation::Affine) => 1,
                    };
                    b.held = false;
                }
                for x in run.hs.iter_mut() {
                    *x = dt;
                }
                let stepped = sys.step_jacobi(t, &run.hs, &run.due);
                iterations_total += 1;
                self.stats.iterations += 1;
                match stepped {
                    Ok(()) => failure = None,
                    // A step an FMU refuses or that blows up: halve.
                    Err(
                        e @ (CoreError::NonFinite { .. }
                        | CoreError::Diverged { .. }
                        | CoreError::Discarded { .. }),
                    ) => {
                        tracing::debug!("{name}: the step at t = {t}, dt = {dt} failed: {e}");
                        failure = Some(e);
                        residual = f64::INFINITY;
                        break;
                    }
                    Err(e) => return Err(e),
                }
                sys.publish_all();
                sys.exchange_all();
                sys.set_time(t_next);
                if s.interpolation == Interpolation::Hermite {
                    output_derivatives(sys, &run.fd, &run.y0, dt)?;
                    sys.exchange_derivatives_all();
                }
                // Eq. 27 on every input: the value it had at the step end
                // against the newly coupled one.
                residual = 0.0;
                for (sub, b) in sys.buffers().iter().enumerate() {
                    for i in 0..b.u.len() {
                        let used = b.u_end[i];
                        let coupled = b.u[i];
                        let r = (used - coupled).abs() / (s.eps_rel * used.abs() + s.eps_abs);
                        residual = if r.is_nan() {
                            f64::INFINITY
                        } else {
                            residual.max(r)
                        };
                        run.u1[sub][i] = coupled;
                        run.du1[sub][i] = b.du[i];
                    }
                }
                if residual < 1.0 {
                    break;
                }
            }
            if residual < 1.0 {
                // Converged. The next step starts where this step's input
                // polynomial ends (value and slope), which keeps the inputs
                // C1 (C0 for the affine variant); it differs from the newly
                // coupled value by less than the convergence tolerance.
                // Inputs held constant restart from the coupled value.
                for sub in 0..sys.len() {
                    let b = &sys.buffers()[sub];
                    for i in 0..b.u.len() {
                        let tay = &b.taylor[i];
                        if run.smooth[sub][i] {
                            run.u0[sub][i] = b.u_end[i];
                            run.du0[sub][i] = match s.interpolation {
                                Interpolation::Hermite => {
                                    tay[1] + dt * (tay[2] + dt * tay[3] / 2.0)
                                }
                                Interpolation::Affine => b.du[i],
                            };
                        } else {
                            run.u0[sub][i] = b.u[i];
                            run.du0[sub][i] = b.du[i];
                        }
                    }
                }
                // From the nominal step when this one was shortened to hit
                // the stop time or an output point (it says nothing about
                // the step the coupling allows).
                let nominal = if base.round(t_next) - base.round(t) < base.round(run.dt).max(1) {
                    run.dt
                } else {
                    dt
                };
                run.dt = (1.3 * nominal).min(s.dt_base);
                self.stats.macro_steps += 1;
                self.stats.halvings += u64::from(halvings);
                self.stats.rejected_steps += u64::from(halvings);
                return Ok(StepReport {
                    t,
                    dt: base.span(t, t_next),
                    indicator: residual,
                    rejections: halvings,
                    iterations: iterations_total,
                    residual,
                });
            }
            // Not converged: back to t_N with half the step.
            sys.restore_states(&run.states)?;
            sys.restore_buffers(&run.snapshot);
            halvings += 1;
            if dt / 2.0 < s.dt_min {
                let reason = match &failure {
                    Some(e) => format!(
                        "the step failed down to the minimum step {}: {}",
                        crate::text::number(s.dt_min),
                        e.attempt_failure()
                    ),
                    None => format!(
                        "no convergence within {} iterations down to the minimum step {} (last coupling residual {} of the tolerance, eq. 27); raise max_iterations or the tolerances, or lower dt_min",
                        s.max_iterations,
                        crate::text::number(s.dt_min),
                        crate::text::significant(residual, 4)
                    ),
                };
                return Err(CoreError::StepControl {
                    master: name,
                    t,
                    reason,
                });
            }
            run.dt = dt / 2.0;
            // The first iteration of the retry extrapolates from t_N again.
            for (sub, b) in sys.buffers().iter().enumerate() {
                run.u1[sub].copy_from_slice(&b.u);
                run.du1[sub].copy_from_slice(&run.du0[sub]);
            }
        }
    }

    fn stats(&self) -> MasterStats {
        self.stats
    }

    /// The indicator of an iterative step is its residual: the step log
    /// has it once, as `residual`.
    fn step_fields(&self, _sys: &System) -> StepFields {
        StepFields {
            indicator: false,
            rejections: true,
            iterations: true,
            residual: true,
        }
    }

    fn clone_box(&self) -> Box<dyn Master> {
        Box::new(self.clone())
    }
}
