//! Richardson extrapolation with rollback ("Error analysis and error
//! estimates for co-simulation in FMI for Model Exchange and Co-Simulation
//! V2.0", Arnold, Clauß, Schierz, sec. 4, as docs/algorithms.md states
//! it) on reticulation A of the B1 quarter car
//! with zero-order hold (k = 0), written from the papers and the docs,
//! independently of the master: each double step `T_n -> T_n + 2H` is two
//! Jacobi steps of `H` ([`crate::b1_jacobi::step_with`], the model
//! equations), checked against one step of `2H` from the same state; the
//! estimate `EST = y_tilde - y_bar` (eq. 24 with k = 0), normalised per
//! coupled output by `atol + rtol |y_bar|` and aggregated by RMS; above 1
//! the attempt is rejected and `H` shrunk by
//! `clamp(alpha eps^(-1/q), theta_min, 1)`, accepted the next
//! `H = H clamp(alpha eps^(-1/q), theta_min, theta_max)` in
//! `[dt_min, dt_max]`, with `q = k + 1 = 1` (the wheel's force feeds
//! through). Points are whole nanoseconds; the last double step ends at
//! the stop time with halves that differ by a tick at most. What
//! `tests/richardson.rs` checks the master's steps and the figures of its
//! B1 block against.

use crate::b1_jacobi::{Damper, start, step_with};

/// The settings of a run.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Absolute and relative tolerance of the normalisation.
    pub atol: f64,
    /// See `atol`.
    pub rtol: f64,
    /// The first half step `H`, s.
    pub initial_step: f64,
    /// Bounds of `H`, s.
    pub dt: (f64, f64),
}

/// One accepted double step.
#[derive(Debug, Clone, Copy)]
pub struct DoubleStep {
    /// Its end, s.
    pub t: f64,
    /// Its length `2H` from the whole nanoseconds, s.
    pub dt: f64,
    /// The aggregated, normalised estimate.
    pub indicator: f64,
    /// Attempts rejected before it.
    pub rejections: u32,
    /// The chassis velocity at `t`.
    pub v_c: f64,
    /// The suspension force at `t`.
    pub f_c: f64,
}

/// Table I of the ECCO paper, the controller's remaining defaults.
const ALPHA: f64 = 0.8;
const THETA_MIN: f64 = 0.2;
const THETA_MAX: f64 = 1.5;
/// The estimate's order in `H`, k + 1 with feed-through.
const Q: f64 = 1.0;

/// Richardson on reticulation A with the linear damper, Euler micro steps
/// `micro`, from 0 to `t_end`.
pub fn run(micro: [usize; 2], s: Settings, t_end: f64) -> Vec<DoubleStep> {
    const NS: f64 = 1e9;
    let secs = |ticks: i64| ticks as f64 / NS;
    let end = (t_end * NS).round() as i64;
    let (mut now, mut x) = (0i64, start(false));
    let mut h = s.initial_step.clamp(s.dt.0, s.dt.1);
    let jacobi = |h: f64, x: [f64; 6]| step_with(Damper::LINEAR, false, h, micro, false, x);
    // The coupled outputs: the chassis' v_c and the wheel's F_c.
    let outputs = |x: &[f64; 6]| [x[0], -x[4]];
    let mut out = Vec::new();
    while now < end {
        let mut rejections = 0;
        loop {
            let half = ((h * NS).round() as i64).max(1);
            let remaining = end - now;
            let slack = (1e-6 * half as f64).max(2.0);
            let shortened = (2 * half) as f64 >= remaining as f64 - slack;
            let (mid, stop) = if shortened {
                (now + (remaining / 2).max(1), end)
            } else {
                (now + half, now + 2 * half)
            };
            let (t0, t1, t2) = (secs(now), secs(mid), secs(stop));
            let coarse = jacobi(t2 - t0, x);
            let fine = jacobi(t2 - t1, jacobi(t1 - t0, x));
            let (y_tilde, y_bar) = (outputs(&coarse), outputs(&fine));
            let sum: f64 = (0..2)
                .map(|i| ((y_tilde[i] - y_bar[i]) / (s.atol + s.rtol * y_bar[i].abs())).powi(2))
                .sum();
            let eps = (sum / 2.0).sqrt();
            if eps <= 1.0 {
                if !shortened {
                    let factor =
                        (ALPHA * eps.max(1e-300).powf(-1.0 / Q)).clamp(THETA_MIN, THETA_MAX);
                    h = (h * factor).clamp(s.dt.0, s.dt.1);
                }
                out.push(DoubleStep {
                    t: t2,
                    dt: secs(stop - now),
                    indicator: eps,
                    rejections,
                    v_c: y_bar[0],
                    f_c: y_bar[1],
                });
                (now, x) = (stop, fine);
                break;
            }
            rejections += 1;
            assert!(t1 - t0 > s.dt.0, "rejected at dt_min");
            h = ((t1 - t0) * (ALPHA * eps.powf(-1.0 / Q)).clamp(THETA_MIN, 1.0)).max(s.dt.0);
        }
    }
    out
}
