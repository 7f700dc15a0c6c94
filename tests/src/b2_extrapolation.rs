//! B2 (the quarter car of arnold2013 with displacement-displacement
//! coupling, `fmus/models/src/b2.rs`) co-simulated by the fixed-step
//! master's scheme, Jacobi with input extrapolation of order m, written
//! from the model equations and the algorithm's description
//! (`docs/algorithms.md`, "Input extrapolation" and "Start-up at full
//! order") independently of the master and of
//! the FMUs: what the master's figures of the `b2-slopes` table are checked
//! against (`tests/fixed_step.rs`).
//!
//! Each subsystem integrates its two states with classical RK4 over equal
//! micro steps no longer than `H_MAX`, its two inputs evaluated at every
//! stage as the polynomial the master delivers: the Lagrange polynomial of
//! degree m through the other subsystem's last m + 1 outputs (fewer at the
//! start, see [`Input`]). The polynomials are evaluated here in Lagrange
//! form at absolute time, not as the Taylor expansion the master sends, so
//! that the two agree only up to rounding if both are right.
//!
//! One Jacobi step from a given state with given input polynomials,
//! [`jacobi_step`], is public, with [`Input`], the equations and `rk4`
//! for the crate: the Richardson double step of `crate::b2_richardson` is
//! made of such steps.

use cosim_models::b2::defaults::{D_C, D_W, H_MAX, K_C, K_W, M_C, M_W, Z_ROAD};

/// Suspension force on the chassis, `k_c (x_w - x_c) + d_c (v_w - v_c)`.
pub(crate) fn f_susp(x_c: f64, v_c: f64, x_w: f64, v_w: f64) -> f64 {
    K_C * (x_w - x_c) + D_C * (v_w - v_c)
}

/// Chassis acceleration, `m_c x_c'' = F_susp`.
pub(crate) fn a_chassis(x_c: f64, v_c: f64, x_w: f64, v_w: f64) -> f64 {
    f_susp(x_c, v_c, x_w, v_w) / M_C
}

/// Wheel acceleration, `m_w x_w'' = F_tire - F_susp` with the road at
/// `Z_ROAD` from t = 0 on (so `z' = 0` in the tyre's damping).
pub(crate) fn a_wheel(x_c: f64, v_c: f64, x_w: f64, v_w: f64) -> f64 {
    (K_W * (Z_ROAD - x_w) - D_W * v_w - f_susp(x_c, v_c, x_w, v_w)) / M_W
}

/// One coupled input over a macro step, as a function of absolute time:
/// the polynomial through the source's outputs `(t_j, y_j)` in Lagrange
/// form, `u(s) = sum_j w_j prod_{k != j} (s - t_k)` with the weights
/// `w_j = y_j / prod_{k != j} (t_j - t_k)` computed once per step (one
/// point is a held value), or the start-up's tangent.
pub enum Input {
    Lagrange {
        /// Communication points (the first `len`).
        times: [f64; 3],
        /// Their weights.
        weights: [f64; 3],
        /// Number of points, 1 to 3.
        len: usize,
    },
    /// The start-up of m = 2 on the first step: the history holds only
    /// t0, so the input is the tangent through the source's output and its
    /// output derivative there (a held value would have error O(h) and
    /// make the global order 2).
    Tangent {
        /// The start of the run.
        t0: f64,
        /// The source's output there.
        value: f64,
        /// Its time derivative there.
        slope: f64,
    },
}

impl Input {
    /// The polynomial through `(times[j], values[j])` (1 to 3 points).
    pub fn lagrange(times: &[f64], values: impl Iterator<Item = f64>) -> Input {
        let len = times.len();
        assert!((1..=3).contains(&len));
        let (mut t, mut weights) = ([0.0; 3], [0.0; 3]);
        t[..len].copy_from_slice(times);
        for (j, y) in values.take(len).enumerate() {
            let mut d = 1.0;
            for k in (0..len).filter(|&k| k != j) {
                d *= t[j] - t[k];
            }
            weights[j] = y / d;
        }
        Input::Lagrange {
            times: t,
            weights,
            len,
        }
    }

    /// The value at time `s`.
    pub fn at(&self, s: f64) -> f64 {
        match self {
            Input::Lagrange {
                times,
                weights,
                len,
            } => {
                let ([t0, t1, t2], [w0, w1, w2]) = (times, weights);
                match len {
                    1 => *w0,
                    2 => w0 * (s - t1) + w1 * (s - t0),
                    _ => {
                        w0 * (s - t1) * (s - t2)
                            + w1 * (s - t0) * (s - t2)
                            + w2 * (s - t0) * (s - t1)
                    }
                }
            }
            Input::Tangent { t0, value, slope } => value + slope * (s - t0),
        }
    }
}

/// Classical RK4 for `x'' = a(x, x', u(s))` (state `[x, x']`, inputs
/// `u`) from `t` over `h`, in the fewest equal micro steps no longer than
/// `H_MAX` (up to rounding of `h / H_MAX`, so that 4 ms is 400 micro
/// steps, not 401), the last ending at `t + h`. The inputs are evaluated
/// once per distinct stage time (the end of one micro step is the start of
/// the next), which halves the cost in a debug build.
pub(crate) fn rk4(
    t: f64,
    h: f64,
    [mut x, mut v]: [f64; 2],
    u: impl Fn(f64) -> [f64; 2],
    a: impl Fn(f64, f64, [f64; 2]) -> f64,
) -> [f64; 2] {
    let n = ((h / H_MAX) * (1.0 - 1e-9)).ceil().max(1.0) as usize;
    let dt = h / n as f64;
    let mut u_start = u(t);
    for i in 0..n {
        let s = t + i as f64 * dt;
        let end = if i + 1 == n {
            t + h
        } else {
            t + (i + 1) as f64 * dt
        };
        let (u_mid, u_end) = (u(s + 0.5 * dt), u(end));
        let (x1, v1) = (v, a(x, v, u_start));
        let (x2, v2) = (
            v + 0.5 * dt * v1,
            a(x + 0.5 * dt * x1, v + 0.5 * dt * v1, u_mid),
        );
        let (x3, v3) = (
            v + 0.5 * dt * v2,
            a(x + 0.5 * dt * x2, v + 0.5 * dt * v2, u_mid),
        );
        let (x4, v4) = (v + dt * v3, a(x + dt * x3, v + dt * v3, u_end));
        x += dt / 6.0 * (x1 + 2.0 * x2 + 2.0 * x3 + x4);
        v += dt / 6.0 * (v1 + 2.0 * v2 + 2.0 * v3 + v4);
        u_start = u_end;
    }
    [x, v]
}

/// The outputs of both subsystems at one communication point (they are
/// the states: no output depends directly on an input).
#[derive(Debug, Clone, Copy)]
pub struct Point {
    /// Time, s.
    pub t: f64,
    /// Chassis position, m.
    pub x_c: f64,
    /// Chassis velocity, m/s.
    pub v_c: f64,
    /// Wheel position, m.
    pub x_w: f64,
    /// Wheel velocity, m/s.
    pub v_w: f64,
}

/// Runs B2 from rest (every state 0, the road stepped up to `Z_ROAD` at
/// t = 0) to `t_end` at macro step `h`, Jacobi with extrapolation order
/// `m` (0, 1 or 2): every communication point, the start included.
///
/// Communication points are whole nanoseconds, `t_n = n h / 10^9 s`
/// rounded once, and each subsystem steps over `t_{n+1} - t_n` of those
/// (as the master hands them over), so `h` and `t_end` must be whole
/// nanoseconds and `t_end` a multiple of `h`.
///
/// The input polynomial of step n has degree `min(m, n)`, through the
/// outputs at `t_{n - min(m, n)} .. t_n`: with fewer than m + 1 points in
/// the history it takes all there are, except that m = 2 starts on the
/// tangent (see [`Input::Tangent`]); m = 1 starts held.
pub fn run(m: usize, h: f64, t_end: f64) -> Vec<Point> {
    assert!(m <= 2, "extrapolation order {m}: only 0, 1, 2 are written");
    let ns = |x: f64| {
        let n = (x * 1e9).round();
        assert!((x * 1e9 - n).abs() < 1e-6, "{x} s is no whole number of ns");
        n as i64
    };
    let (h_ns, end_ns) = (ns(h), ns(t_end));
    assert!(
        h_ns > 0 && end_ns % h_ns == 0,
        "{t_end} s is no multiple of {h} s"
    );
    let steps = (end_ns / h_ns) as usize;
    let times: Vec<f64> = (0..=steps)
        .map(|n| (n as i64 * h_ns) as f64 / 1e9)
        .collect();
    // Outputs at every point so far: [x_c, v_c, x_w, v_w].
    let mut y: Vec<[f64; 4]> = Vec::with_capacity(steps + 1);
    y.push([0.0; 4]);
    // Output derivatives at t0 from the model equations, with the inputs
    // coupled: x' = v, v' = the acceleration.
    let [x_c, v_c, x_w, v_w] = y[0];
    let slope0 = [
        v_c,
        a_chassis(x_c, v_c, x_w, v_w),
        v_w,
        a_wheel(x_c, v_c, x_w, v_w),
    ];
    for n in 0..steps {
        let (t, h) = (times[n], times[n + 1] - times[n]);
        let first = n.saturating_sub(m);
        let input = |i: usize| {
            if m == 2 && n == 0 {
                Input::Tangent {
                    t0: t,
                    value: y[0][i],
                    slope: slope0[i],
                }
            } else {
                Input::lagrange(&times[first..=n], y[first..=n].iter().map(|p| p[i]))
            }
        };
        let inputs = [input(0), input(1), input(2), input(3)];
        y.push(jacobi_step(t, h, y[n], &inputs));
    }
    times
        .iter()
        .zip(&y)
        .map(|(&t, &[x_c, v_c, x_w, v_w])| Point {
            t,
            x_c,
            v_c,
            x_w,
            v_w,
        })
        .collect()
}

/// One Jacobi step of both subsystems from `t` over `h`, from the outputs
/// (= states) `[x_c, v_c, x_w, v_w]`, each subsystem's inputs the
/// polynomials `inputs` of the other's outputs, in the same order (the
/// chassis reads those of x_w, v_w, the wheel those of x_c, v_c): the
/// outputs at `t + h`.
pub fn jacobi_step(
    t: f64,
    h: f64,
    [x_c, v_c, x_w, v_w]: [f64; 4],
    inputs: &[Input; 4],
) -> [f64; 4] {
    let [xc_in, vc_in, xw_in, vw_in] = inputs;
    let chassis = rk4(
        t,
        h,
        [x_c, v_c],
        |s| [xw_in.at(s), vw_in.at(s)],
        |x_c, v_c, [x_w, v_w]| a_chassis(x_c, v_c, x_w, v_w),
    );
    let wheel = rk4(
        t,
        h,
        [x_w, v_w],
        |s| [xc_in.at(s), vc_in.at(s)],
        |x_w, v_w, [x_c, v_c]| a_wheel(x_c, v_c, x_w, v_w),
    );
    [chassis[0], chassis[1], wheel[0], wheel[1]]
}
