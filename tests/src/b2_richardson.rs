//! One double step of the Richardson master on B2 ("Error analysis and
//! error estimates for co-simulation in FMI for Model Exchange and
//! Co-Simulation V2.0", Arnold, Clauß, Schierz: Example 1, sec. 4-5),
//! written from the model equations (`fmus/models/src/b2.rs`) and the
//! algorithm as `docs/algorithms.md` ("richardson", "Input extrapolation")
//! and docs/algorithms.md state it, independently of the master
//! and of the FMUs: what the figures of the `richardson-b2` block
//! (`tests/richardson.rs`) are checked against.
//!
//! The double step `T_n -> T_n + 2H` starts from the exact state with the
//! exact coupled values at the earlier communication points `T_n - H`,
//! `T_n - 2H` (the double steps' halves) and at the double-step boundaries
//! `T_n - 2H`, `T_n - 4H`, as if every earlier step had been exact:
//!
//! - `y_bar`: two Jacobi steps of `H`, each subsystem's inputs the Lagrange
//!   polynomial of degree k through the other's last k + 1 outputs at the
//!   communication points (`T_n - H .. T_n`, then `T_n .. T_n + H`, the
//!   latter co-simulated);
//! - `y_tilde` (eq. 24): one step of `2H` from `T_n`, the polynomial
//!   through the boundaries `T_n - 2kH, ..., T_n - 2H, T_n`;
//!   `EST = (y_tilde - y_bar) / (2^(k+1) - 1)`;
//! - `y_tilde_bar` (eq. 26): the second step of `H` again from the state at
//!   `T_n + H`, the first step's polynomial continued;
//!   `EST = (y_tilde_bar - y_bar) / (c_k - 1)` (the docs' sign: both
//!   estimates approximate `y_bar - y_exact`), `c_k` computed here from the
//!   paper's integrals (eqs. 17 and 27), not copied.
//!
//! Each subsystem integrates with RK4, its inputs evaluated at the stages
//! (`b2_extrapolation::rk4`). A feed-through output (force coupling: the
//! wheel's `F_susp`) is evaluated at the step end from the wheel's state
//! there and its inputs as it held them, the polynomial's value at the step
//! end (the FMU re-expands its inputs at the reached time; docs: "its value
//! at `t_{i+1}` was computed with the input held (or extrapolated) over the
//! step"). Points after `T_n` are whole nanoseconds, as the master takes
//! them.

use cosim_models::b2::defaults::M_C;
use cosim_models::reference::{B2, b2};

use crate::b2_extrapolation::{Input, a_wheel, f_susp, jacobi_step, rk4};

/// How chassis and wheel are coupled (the paper's Example 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coupling {
    /// Displacement-displacement (`B2ChassisDD`/`B2WheelDD`): each
    /// outputs its position and velocity, no feed-through; the coupled
    /// outputs are x_c, v_c, x_w, v_w.
    Displacement,
    /// Force-displacement (`B2ChassisFD`/`B2WheelFD`): the chassis takes
    /// the suspension force, which the wheel computes from its state and
    /// its inputs x_c, v_c (feed-through); the coupled outputs are x_c,
    /// v_c, F_susp.
    Force,
}

impl Coupling {
    /// Names of the coupled outputs, in the order of every vector here.
    pub fn outputs(self) -> &'static [&'static str] {
        match self {
            Coupling::Displacement => &["x_c", "v_c", "x_w", "v_w"],
            Coupling::Force => &["x_c", "v_c", "F_susp"],
        }
    }
}

/// The second solution the estimate compares with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Estimate {
    /// One step of `2H` (eq. 24).
    Richardson,
    /// The second step repeated with the first step's inputs (eq. 26).
    Modified,
}

/// What one double step gives, per coupled output ([`Coupling::outputs`]).
#[derive(Debug, Clone)]
pub struct DoubleStep {
    /// The accepted solution at `T_n + 2H`.
    pub y_bar: Vec<f64>,
    /// `y_tilde` or `y_tilde_bar`.
    pub y_other: Vec<f64>,
    /// The estimate `EST`.
    pub est: Vec<f64>,
    /// The exact solution at `T_n + 2H`.
    pub exact: Vec<f64>,
}

impl DoubleStep {
    /// The true local error `y_bar - y_exact`.
    pub fn local_error(&self) -> Vec<f64> {
        self.y_bar
            .iter()
            .zip(&self.exact)
            .map(|(y, e)| y - e)
            .collect()
    }
}

/// The 2-norm.
pub fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// `int_a^b prod_{i=0}^{k} (i + s) ds` by Simpson's rule, exact for the
/// cubic of k = 2.
fn integral(k: usize, a: f64, b: f64) -> f64 {
    let p = |s: f64| (0..=k).map(|i| i as f64 + s).product::<f64>();
    (b - a) / 6.0 * (p(a) + 4.0 * p(0.5 * (a + b)) + p(b))
}

/// The divisor of the estimate: `2^(k+1) - 1` (eq. 24), or
/// `c_k,mod - 1` with `c_k,mod = c_bar_k / c_k`, `c_k = 2 int_0^1
/// prod (i + s) ds` (eq. 17) and `c_bar_k = int_0^2 prod (i + s) ds`
/// (eq. 27).
pub fn divisor(estimate: Estimate, k: usize) -> f64 {
    match estimate {
        Estimate::Richardson => 2f64.powi(k as i32 + 1) - 1.0,
        Estimate::Modified => integral(k, 0.0, 2.0) / (2.0 * integral(k, 0.0, 1.0)) - 1.0,
    }
}

/// The exact solution (analytic, from rest with the road stepped at 0) at
/// `t`: the state `[x_c, v_c, x_w, v_w]` and the coupled outputs.
fn exact(coupling: Coupling, t: f64) -> ([f64; 4], Vec<f64>) {
    let tr = b2(&B2::DEFAULT, [0.0; 4], 0.0, &[t]);
    let at = |name: &str| {
        let j = tr.names.iter().position(|n| n == name).unwrap();
        tr.rows[0][j]
    };
    let state = [at("x_c"), at("v_c"), at("x_w"), at("v_w")];
    (state, coupling.outputs().iter().map(|n| at(n)).collect())
}

/// Coupled outputs at communication points, oldest first.
type Points = Vec<(f64, Vec<f64>)>;

/// The input polynomials of a step: per coupled output, the Lagrange
/// polynomial through its values at the newest k + 1 of `points`.
fn inputs(points: &[(f64, Vec<f64>)], k: usize, outputs: usize) -> Vec<Input> {
    let from = points.len() - (k + 1);
    let times: Vec<f64> = points[from..].iter().map(|p| p.0).collect();
    (0..outputs)
        .map(|j| Input::lagrange(&times, points[from..].iter().map(|p| p.1[j])))
        .collect()
}

/// One Jacobi step of both subsystems from `t` over `h` from `state`
/// (`[x_c, v_c, x_w, v_w]`) with the input polynomials `u` of the coupled
/// outputs: the state and the coupled outputs at `t + h`.
fn step(coupling: Coupling, t: f64, h: f64, state: [f64; 4], u: &[Input]) -> ([f64; 4], Vec<f64>) {
    match coupling {
        Coupling::Displacement => {
            let u: &[Input; 4] = u.try_into().expect("four coupled outputs");
            let y = jacobi_step(t, h, state, u);
            (y, y.to_vec())
        }
        Coupling::Force => {
            let [xc_in, vc_in, f_in] = u else {
                unreachable!("three coupled outputs")
            };
            let [x_c, v_c, x_w, v_w] = state;
            // m_c x_c'' = F_susp, the force as the chassis's input.
            let chassis = rk4(
                t,
                h,
                [x_c, v_c],
                |s| [f_in.at(s), 0.0],
                |_, _, [f, _]| f / M_C,
            );
            // The wheel's equations are those of displacement coupling.
            let wheel = rk4(
                t,
                h,
                [x_w, v_w],
                |s| [xc_in.at(s), vc_in.at(s)],
                |x_w, v_w, [x_c, v_c]| a_wheel(x_c, v_c, x_w, v_w),
            );
            let end = t + h;
            let force = f_susp(xc_in.at(end), vc_in.at(end), wheel[0], wheel[1]);
            (
                [chassis[0], chassis[1], wheel[0], wheel[1]],
                vec![chassis[0], chassis[1], force],
            )
        }
    }
}

/// One double step of size `2h` from the exact state at `t_n` with
/// extrapolation order `k` (0, 1 or 2) and the second solution
/// `estimate`, the earlier points exact (see the module docs).
pub fn double_step(
    coupling: Coupling,
    k: usize,
    estimate: Estimate,
    t_n: f64,
    h: f64,
) -> DoubleStep {
    assert!(k <= 2, "extrapolation order {k}: only 0, 1, 2 are written");
    let n = coupling.outputs().len();
    let (state, now) = exact(coupling, t_n);
    let past = |js: [f64; 2]| -> Points {
        let mut p: Points = js
            .iter()
            .map(|&j| (t_n - j * h, exact(coupling, t_n - j * h).1))
            .collect();
        p.push((t_n, now.clone()));
        p
    };
    let (mut fine, coarse) = (past([2.0, 1.0]), past([4.0, 2.0]));
    // T_n + H and T_n + 2H in whole nanoseconds.
    let ns = |x: f64| (x * 1e9).round() as i64;
    let half = ns(h).max(1);
    let t_mid = (ns(t_n) + half) as f64 / 1e9;
    let t_end = (ns(t_n) + 2 * half) as f64 / 1e9;
    let first = inputs(&fine, k, n);
    let (s_mid, y_mid) = step(coupling, t_n, t_mid - t_n, state, &first);
    fine.push((t_mid, y_mid));
    let (_, y_bar) = step(coupling, t_mid, t_end - t_mid, s_mid, &inputs(&fine, k, n));
    let y_other = match estimate {
        Estimate::Richardson => step(coupling, t_n, t_end - t_n, state, &inputs(&coarse, k, n)).1,
        Estimate::Modified => step(coupling, t_mid, t_end - t_mid, s_mid, &first).1,
    };
    let d = divisor(estimate, k);
    let est = y_other
        .iter()
        .zip(&y_bar)
        .map(|(o, b)| (o - b) / d)
        .collect();
    DoubleStep {
        y_bar,
        y_other,
        est,
        exact: exact(coupling, t_end).1,
    }
}
