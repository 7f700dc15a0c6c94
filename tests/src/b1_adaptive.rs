//! The adaptive masters on the B1 quarter car, written from the papers and
//! the docs, independently of the master: Jacobi with zero-order hold
//! ([`crate::b1_jacobi::step_with`], the model equations), an error
//! indicator, and the PI step controller of "Energy Conservation and Power
//! Bonds in Co-Simulations: Non-Iterative Adaptive Step Size Control and
//! Error Estimation" (Sadjina, Skjong, Pedersen; eq. 15 with the gains and
//! limits of its Table I, in the log form of "Error estimation and step
//! size control with minimal subsystem interfaces" by Kyllingstad et al.),
//! on the nanosecond grid of docs/algorithms.md. The indicators: ECCO's
//! energy residual (eq. 14 with one bond) and the explicit
//! predictor/corrector (eqs. 16-17), as published or with the lag of
//! feed-through outputs corrected (docs/algorithms.md). What the adaptive
//! rows of the B1 table are checked against (`tests/adaptive.rs`): a
//! change of the indicator, the controller or the coupling moves every
//! step after it.
//!
//! Beyond the paper ([`run_coupled`]): ECCO with first-order input
//! extrapolation and with Gauss-Seidel, from docs/algorithms.md ("Input
//! extrapolation", "Start-up at full order", "Step", "Energy account",
//! "ECCO") and the subsystems' steps with polynomial inputs
//! ([`crate::b1_jacobi::step_mass`], `step_suspension`): what the table
//! `b1-beyond` is checked against.

use crate::b1_jacobi::{Damper, Line, outputs, start, step_mass, step_suspension, step_with};

/// The error indicator driving the controller.
#[derive(Debug, Clone, Copy)]
pub enum Indicator {
    /// ECCO (eq. 14): `|dE| / (r (E0 + |E|))`, order 2 (ZOH).
    Ecco {
        /// Relative tolerance r of the bond.
        tolerance: f64,
        /// Energy scale E0 of the bond, J.
        energy_scale: f64,
    },
    /// The predictor/corrector (eq. 17, `rho = 1e-4`): each coupled
    /// output predicted at the step end by the line through its last two
    /// values, order 1 (ZOH, a feed-through output).
    PredictorCorrector {
        /// TOL.
        tolerance: f64,
        /// The feed-through output corrected to the input just exchanged
        /// (`y~ = y + D (u - u_used)`), its own error `-D (u - u_used)`
        /// added.
        lag_correction: bool,
    },
}

impl Indicator {
    /// Its order in the step, for the gains `kI = 0.3 / p`, `kP = 0.4 / p`,
    /// with input extrapolation of order `m`.
    fn order(&self, m: u32) -> f64 {
        match self {
            Indicator::Ecco { .. } => f64::from(m) + 2.0,
            Indicator::PredictorCorrector { .. } => 1.0,
        }
    }
}

/// How the two subsystems are coupled in a macro step (docs/algorithms.md,
/// "Input extrapolation", "Step").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coupling {
    /// Gauss-Seidel in the derived order: the subsystem whose coupled
    /// output has no feed-through (the mass's velocity: A's chassis, B's
    /// wheel) first, then the suspension with the velocity it has just
    /// published. Otherwise Jacobi.
    pub gauss_seidel: bool,
    /// Input extrapolation order m: 0 (zero-order hold) or 1.
    pub order: u32,
}

impl Coupling {
    /// The paper's: Jacobi with zero-order hold.
    pub const PAPER: Coupling = Coupling {
        gauss_seidel: false,
        order: 0,
    };
}

/// One accepted macro step: where it ends, its size, the power the bond
/// transmits at its end, the residual energy it created and the
/// indicator.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// End of the step, s.
    pub t: f64,
    /// Its size, s, from the whole nanoseconds (as logs print it; the
    /// FMUs step by the difference of the two points in seconds).
    pub dt: f64,
    /// Transmitted power at `t`, W.
    pub transmitted: f64,
    /// Residual energy of the step, J (eq. 10b).
    pub residual_energy: f64,
    /// The indicator.
    pub indicator: f64,
}

/// Table I of the ECCO paper.
const ALPHA: f64 = 0.8;
const DT_MIN: f64 = 1e-4;
const DT_MAX: f64 = 1e-2;
const THETA_MIN: f64 = 0.2;
const THETA_MAX: f64 = 1.5;
/// The predictor/corrector's rho (eq. 17).
const RHO: f64 = 1e-4;
/// The model's floor on |v| in the damper's slope (infinite at 0 for the
/// square-root damper).
const SLOPE_FLOOR: f64 = 1e-9;

/// The slope of the damper force at relative velocity `v`, the interface
/// Jacobian's entry the lag correction uses.
fn damper_slope(damper: Damper, v: f64) -> f64 {
    let p = 2.0 / (1.0 + 2.0 * damper.n_d);
    if p == 1.0 {
        damper.d_c
    } else {
        damper.d_c * p * v.abs().max(SLOPE_FLOOR).powf(p - 1.0)
    }
}

/// The run from t = 0 to `t_end` on reticulation A (`b = false`) or B with
/// the suspension's damper `damper`, driven by `indicator`, the first step
/// `dt_min`.
pub fn run(
    damper: Damper,
    b: bool,
    micro: [usize; 2],
    indicator: Indicator,
    t_end: f64,
) -> Vec<Step> {
    run_coupled(damper, b, micro, indicator, Coupling::PAPER, t_end)
}

/// [`run`] with the subsystems coupled by `coupling` (the
/// predictor/corrector only as in the paper, [`Coupling::PAPER`]).
pub fn run_coupled(
    damper: Damper,
    b: bool,
    micro: [usize; 2],
    indicator: Indicator,
    coupling: Coupling,
    t_end: f64,
) -> Vec<Step> {
    assert!(
        coupling.order <= 1
            && (coupling == Coupling::PAPER || matches!(indicator, Indicator::Ecco { .. })),
        "{coupling:?} with {indicator:?}"
    );
    const NS: f64 = 1e9;
    let end = (t_end * NS).round() as i64;
    let (mut now, mut x) = (0i64, start(b));
    let mut dt = DT_MIN;
    let mut previous: Option<f64> = None;
    // The coupled values [force, velocity] at the communication point
    // before the current one, once there is one.
    let mut before: Option<(f64, [f64; 2])> = None;
    let p = indicator.order(coupling.order);
    let (k_i, k_p) = (0.3 / p, 0.4 / p);
    // An indicator below the one at which the PI law already asks for
    // theta_max (with the previous equal to it) is raised to it: a step
    // without error grows at theta_max.
    let floor = (ALPHA / THETA_MAX).powf(1.0 / k_i);
    // The predictor's history: the last two (time, coupled outputs), the
    // outputs corrected for the lag where that is asked; all at rest at
    // the start.
    let mut history = [(0.0, [0.0; 2]); 2];
    let mut known = 1;
    let mut out = Vec::new();
    while now < end {
        // The step in whole nanoseconds, shortened to hit the end (and
        // stretched to it over a sliver of a millionth of the step).
        let n = ((dt * NS).round() as i64).max(1);
        let next = if n >= end - now || ((end - now - n) as f64) <= 1e-6 * n as f64 {
            end
        } else {
            now + n
        };
        let (t0, t1) = (now as f64 / NS, next as f64 / NS);
        let h = t1 - t0;
        // The new state and the inputs as the subsystems held them at the
        // step end, [force, velocity].
        let (x1, [u_force, u_velocity]) = if coupling == Coupling::PAPER {
            (step_with(damper, b, h, micro, false, x), [x[4], x[5]])
        } else {
            coupled_step(damper, b, micro, coupling, before, (t0, t1), x)
        };
        before = Some((t0, [x[4], x[5]]));
        // As b1_jacobi::run: the power at the new point and eq. 10a.
        let (transmitted, residual) = if b {
            (-x1[4] * x1[3], u_force * x1[3] - u_velocity * x1[4])
        } else {
            (-x1[4] * x1[0], u_force * x1[0] - u_velocity * x1[4])
        };
        let eps = match indicator {
            Indicator::Ecco {
                tolerance,
                energy_scale,
            } => {
                let (de, e) = (residual * h, transmitted * h);
                (de / (tolerance * (energy_scale + e.abs()))).abs()
            }
            Indicator::PredictorCorrector {
                tolerance,
                lag_correction,
            } => {
                // The coupled outputs: [flow, force]. A: the chassis' v_c
                // and the wheel's F_c, which feeds through from its input
                // v_c; B: the wheel's v_w and the chassis' F_c, through
                // from v_w. `D (u - u_used)` at the step end's state.
                let (y, correction) = if b {
                    let slope = -damper_slope(damper, x1[1] - x[5]);
                    ([x1[3], x1[4]], [0.0, slope * (x1[3] - x[5])])
                } else {
                    let slope = damper_slope(damper, x[5] - x1[3]);
                    ([x1[0], -x1[4]], [0.0, slope * (x1[0] - x[5])])
                };
                let correction = if lag_correction { correction } else { [0.0; 2] };
                let mut worst = 0.0f64;
                let mut corrected = [0.0; 2];
                for i in 0..2 {
                    corrected[i] = y[i] + correction[i];
                    // The line through the last two values (the value
                    // itself after the first step).
                    let predicted = if known == 1 {
                        history[1].1[i]
                    } else {
                        let ((ta, a), (tb, c)) = (history[0], history[1]);
                        let (a, c) = (a[i], c[i]);
                        a + (c - a) * (t1 - ta) / (tb - ta)
                    };
                    let e = corrected[i] - predicted - correction[i];
                    let q = e.abs()
                        / (tolerance * (1.0 + RHO * corrected[i].abs().max(predicted.abs())));
                    worst = worst.max(q);
                }
                history = [history[1], (t1, corrected)];
                known += 1;
                worst
            }
        };
        out.push(Step {
            t: t1,
            dt: (next - now) as f64 / NS,
            transmitted,
            residual_energy: residual * h,
            indicator: eps,
        });
        // The controller reasons from the step it asked for when the end
        // cut it short.
        let nominal = if next - now < n { dt } else { h };
        let e_i = eps.max(floor);
        let e_prev = previous.unwrap_or(e_i);
        previous = Some(e_i);
        let ratio = (ALPHA * e_i.powf(-(k_i + k_p)) * e_prev.powf(k_p)).clamp(THETA_MIN, THETA_MAX);
        dt = (ratio * nominal).clamp(DT_MIN, DT_MAX);
        (now, x) = (next, x1);
    }
    out
}

/// One macro step from `t0` to `t1` coupled by `coupling` from the state
/// `x` (the layout of [`crate::b1_jacobi::step`], the last two entries the
/// current coupled force and velocity), `before` the coupled values at
/// the previous communication point: the new state, and the inputs at the
/// step end as the subsystems held them (eq. 10a's `u`).
///
/// Extrapolated inputs (order 1) follow the line through their last two
/// coupled values, held on the first step (one point). With
/// Gauss-Seidel the suspension steps after the mass has published its new
/// velocity, which it interpolates instead: held at that value (order 0),
/// or the line from the velocity at `t0` to it (order 1, the first step
/// included).
fn coupled_step(
    damper: Damper,
    b: bool,
    micro: [usize; 2],
    coupling: Coupling,
    before: Option<(f64, [f64; 2])>,
    (t0, t1): (f64, f64),
    x: [f64; 6],
) -> ([f64; 6], [f64; 2]) {
    let h = t1 - t0;
    let extrapolated = |i: usize| match before {
        Some((t_a, a)) if coupling.order == 1 => Line::through(t_a, a[i], t0, x[4 + i]),
        _ => Line::held(x[4 + i]),
    };
    let states = [x[0], x[1], x[2], x[3]];
    let force = extrapolated(0);
    let states = step_mass(b, h, micro, states, force);
    let velocity = if coupling.gauss_seidel {
        // The mass's velocity (its output does not feed through).
        let fresh = outputs(damper, b, states, 0.0)[0];
        if coupling.order == 1 {
            Line {
                value: x[5],
                slope: (fresh - x[5]) / h,
            }
        } else {
            Line::held(fresh)
        }
    } else {
        extrapolated(1)
    };
    let states = step_suspension(damper, b, h, micro, states, velocity);
    let v_end = velocity.at(h);
    let [v, f_c] = outputs(damper, b, states, v_end);
    // The couplings: A's chassis takes -F_c, B's wheel +F_c.
    let f = if b { f_c } else { -f_c };
    let [s0, s1, s2, s3] = states;
    ([s0, s1, s2, s3, f, v], [force.at(h), v_end])
}
