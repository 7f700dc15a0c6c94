//! B4, the two-mass oscillator of "IFOSMONDI co-simulation algorithm with
//! Jacobian-free methods in PETSc" (Éguillon, Lamiable, Caupin et al.,
//! sec. 4), co-simulated from the model equations
//! (`fmus/models/src/two_mass.rs`: RK4 in equal micro steps of at most
//! `h_max`, inputs evaluated as polynomials at the stages) and from the
//! masters as docs/algorithms.md describes them, independently of the
//! master's code: the fixed-step master (Jacobi, zero-order hold), and
//! IFOSMONDI and its affine variant (fixed-point iteration of each macro
//! step on the input polynomials, eq. 27, step halving). What
//! `tests/iterative.rs` and `tests/intermediate_update.rs` check the
//! figures of their B4 tables against.

use cosim_core::metrics::Table;

/// The parameters of `TwoMassS1` / `TwoMassS2`: their defaults, which the
/// B4 scenarios keep.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// m1, c1, d1 of S1.
    pub m1: f64,
    /// See `m1`.
    pub c1: f64,
    /// See `m1`.
    pub d1: f64,
    /// m2, c2, d2, ck, dk of S2.
    pub m2: f64,
    /// See `m2`.
    pub c2: f64,
    /// See `m2`.
    pub d2: f64,
    /// See `m2`.
    pub ck: f64,
    /// See `m2`.
    pub dk: f64,
    /// Initial (x1, v1) and (x2, v2).
    pub start: [[f64; 2]; 2],
    /// The RK4 micro step bound of both FMUs, s.
    pub h_max: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            m1: 1.0,
            c1: 1e3,
            d1: 1.0,
            m2: 1.0,
            c2: 1e5,
            d2: 10.0,
            ck: 1e5,
            dk: 10.0,
            start: [[0.1, 0.0], [0.0, 0.0]],
            h_max: 1e-5,
        }
    }
}

/// An input over one step as the FMU takes it: value and derivatives 1..3
/// at the step start (`fmi2SetRealInputDerivatives`).
type Poly = [f64; 4];

/// The `order`-th derivative of `p` at offset `s` from the step start.
fn eval(p: &Poly, order: usize, s: f64) -> f64 {
    let mut acc = 0.0;
    for j in (order..4).rev() {
        acc = acc * s / (j - order + 1) as f64 + p[j];
    }
    acc
}

/// Classical RK4 over a step of `h` of `x' = v, v' = (-c x - d v + f(s)) /
/// m` in equal micro steps of at most `h_max` (one more only when
/// `h / h_max` exceeds an integer by more than rounding), with the forcing
/// `f` a cubic in the offset from the step start (monomial coefficients).
/// Written out (no closures) because the tests run it unoptimised,
/// millions of micro steps per table.
fn rk4(h: f64, h_max: f64, x: &mut [f64; 2], (m, c, d): (f64, f64, f64), f: [f64; 4]) {
    let ratio = h / h_max;
    let n = (ratio - 1e-9 * ratio.max(1.0)).ceil().max(1.0) as usize;
    let dt = h / n as f64;
    let force = |s: f64| f[0] + s * (f[1] + s * (f[2] + s * f[3]));
    let [mut p, mut v] = *x;
    for i in 0..n {
        let s = i as f64 * dt;
        let s_next = if i + 1 == n { h } else { (i + 1) as f64 * dt };
        let (f0, f_half, f1) = (force(s), force(s + 0.5 * dt), force(s_next));
        let a1 = (-c * p - d * v + f0) / m;
        let (p2, v2) = (p + 0.5 * dt * v, v + 0.5 * dt * a1);
        let a2 = (-c * p2 - d * v2 + f_half) / m;
        let (p3, v3) = (p + 0.5 * dt * v2, v + 0.5 * dt * a2);
        let a3 = (-c * p3 - d * v3 + f_half) / m;
        let (p4, v4) = (p + dt * v3, v + dt * a3);
        let a4 = (-c * p4 - d * v4 + f1) / m;
        p += dt / 6.0 * (v + 2.0 * v2 + 2.0 * v3 + v4);
        v += dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4);
    }
    *x = [p, v];
}

/// The monomial coefficients in the offset of the polynomial `p`.
fn monomial(p: &Poly) -> [f64; 4] {
    [p[0], p[1], p[2] / 2.0, p[3] / 6.0]
}

/// The states of both masses and the polynomials of the three inputs:
/// S1's f2, S2's x1 and v1.
#[derive(Debug, Clone, Copy)]
struct Pair {
    s1: [f64; 2],
    s2: [f64; 2],
    /// f2, x1, v1.
    u: [Poly; 3],
}

impl Pair {
    /// At the start, each input the output feeding it (S2's f2 from the
    /// initial x1, v1).
    fn start(p: &Params) -> Pair {
        let [s1, s2] = p.start;
        let mut pair = Pair {
            s1,
            s2,
            u: [[0.0; 4], [s1[0], 0.0, 0.0, 0.0], [s1[1], 0.0, 0.0, 0.0]],
        };
        pair.u[0][0] = pair.f2(p, 0.0);
        pair
    }

    /// Both subsystems over a step of `h` from the input polynomials: S2's
    /// `m2 v2' = -c2 x2 - d2 v2 - ck (x2 - x1) - dk (v2 - v1)` is the same
    /// oscillator with springs `c2 + ck`, dampers `d2 + dk` and the forcing
    /// `ck x1 + dk v1`.
    fn step(&mut self, p: &Params, h: f64) {
        let [f2, x1, v1] = self.u.map(|u| monomial(&u));
        rk4(h, p.h_max, &mut self.s1, (p.m1, p.c1, p.d1), f2);
        let forcing = [0, 1, 2, 3].map(|k| p.ck * x1[k] + p.dk * v1[k]);
        let s2 = (p.m2, p.c2 + p.ck, p.d2 + p.dk);
        rk4(h, p.h_max, &mut self.s2, s2, forcing);
    }

    /// S2's output f2, its inputs at offset `s` of their polynomials.
    fn f2(&self, p: &Params, s: f64) -> f64 {
        let (x1, v1) = (eval(&self.u[1], 0, s), eval(&self.u[2], 0, s));
        p.ck * (self.s2[0] - x1) + p.dk * (self.s2[1] - v1)
    }

    /// The coupled outputs feeding f2, x1, v1 after a step of `h`.
    fn outputs(&self, p: &Params, h: f64) -> [f64; 3] {
        [self.f2(p, h), self.s1[0], self.s1[1]]
    }

    /// Their time derivatives as the FMUs report them after a step of `h`
    /// (`fmi2GetRealOutputDerivatives`): S1's from its state and its input
    /// f2 there; S2's `f2' = ck (v2 - x1') + dk (a2 - v1')` with the slopes
    /// of its input polynomials, or without them (`input_slopes = false`:
    /// FMI 3, which has no input derivatives).
    fn output_slopes(&self, p: &Params, h: f64, input_slopes: bool) -> [f64; 3] {
        let [x1, v1] = self.s1;
        let a1 = (-p.c1 * x1 - p.d1 * v1 + eval(&self.u[0], 0, h)) / p.m1;
        let [x2, v2] = self.s2;
        let a2 = (-p.c2 * x2 - p.d2 * v2 - self.f2(p, h)) / p.m2;
        let (x1d, v1d) = if input_slopes {
            (eval(&self.u[1], 1, h), eval(&self.u[2], 1, h))
        } else {
            (0.0, 0.0)
        };
        [p.ck * (v2 - x1d) + p.dk * (a2 - v1d), v1, a1]
    }
}

/// A co-simulation run: one row per communication point.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// (t, x1, v1, f2) from t = 0 on, as the trace shows them.
    pub rows: Vec<(f64, [f64; 3])>,
    /// `doStep` calls, both FMUs.
    pub do_steps: u64,
    /// Halvings of the iterative masters.
    pub halvings: u64,
}

impl Run {
    fn push(&mut self, t: f64, pair: &Pair, p: &Params, h: f64) {
        self.rows.push((t, [pair.s1[0], pair.s1[1], pair.f2(p, h)]));
    }

    /// B4's accuracy measure (the paper's sec. 4, as
    /// `cosim_tests::b4_mean_relative_error` computes it from a trace):
    /// per coupling variable x1, v1, f2 the mean |error| over the rows
    /// divided by the largest |reference| there, averaged over the three.
    pub fn mean_relative_error(&self, reference: &Table) -> f64 {
        let mut total = 0.0;
        for (k, name) in ["x1", "v1", "f2"].iter().enumerate() {
            let c = reference
                .names
                .iter()
                .position(|n| n == name)
                .unwrap_or_else(|| panic!("the reference has no column {name}"));
            let (mut sum, mut peak) = (0.0, 0.0f64);
            for (t, y) in &self.rows {
                let r = reference.interpolate(c, *t);
                sum += (y[k] - r).abs();
                peak = peak.max(r.abs());
            }
            total += sum / self.rows.len() as f64 / peak;
        }
        total / 3.0
    }
}

/// The fixed-step master, Jacobi with zero-order hold, at step `h` to
/// `t_end`: both FMUs step from the held inputs, the outputs are read
/// (f2 with S2's inputs as held), then exchanged.
pub fn fixed_step(p: &Params, h: f64, t_end: f64) -> Run {
    let mut pair = Pair::start(p);
    let mut run = Run::default();
    run.push(0.0, &pair, p, 0.0);
    let steps = (t_end / h).round() as usize;
    for k in 0..steps {
        pair.step(p, h);
        run.do_steps += 2;
        let t_next = (k + 1) as f64 * h;
        run.push(t_next, &pair, p, h);
        let y = pair.outputs(p, h);
        pair.u = y.map(|v| [v, 0.0, 0.0, 0.0]);
    }
    run
}

/// The iterative masters of docs/algorithms.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// IFOSMONDI: second-order hold, then the cubic Hermite.
    Ifosmondi,
    /// Kübler-Schiehlen: the start value held, then the line to the
    /// previous iteration's coupled value.
    Affine,
}

/// How the inputs reach the FMUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// FMI 2 with input derivatives: the polynomial, and S2's output
    /// derivative sees its inputs' slopes.
    Fmi2,
    /// FMI 3 intermediate update: the polynomial, but S2's output
    /// derivative without its inputs' slopes (FMI 3 has none).
    Fmi3,
    /// Values only: the start value held, then the previous iteration's
    /// coupled value held; the next step starts from the newly coupled
    /// value.
    Values,
}

/// The settings of an iterative run (`[master]`).
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// The base macro step, s.
    pub step: f64,
    /// eq. 27's tolerances.
    pub eps_abs: f64,
    /// See `eps_abs`.
    pub eps_rel: f64,
    /// Iterations before halving.
    pub max_iterations: u32,
    /// The smallest step, s.
    pub dt_min: f64,
}

/// The `[master]` of `scenarios/b4_two_mass_ifosmondi.toml`.
pub const SCENARIO: Settings = Settings {
    step: 2e-3,
    eps_abs: 1e-2,
    eps_rel: 1e-2,
    max_iterations: 10,
    dt_min: 1e-7,
};

/// The polynomial of one input over a step of `dt` in iteration
/// `iteration` (1 first) from its start value and slope `(u, du)`, given
/// the previous iteration's coupled value and slope `(y, dy)`.
fn input(
    (kind, delivery): (Kind, Delivery),
    iteration: u32,
    dt: f64,
    (u, du): (f64, f64),
    (y, dy): (f64, f64),
) -> Poly {
    match (delivery, kind, iteration) {
        (Delivery::Values, _, 1) | (Delivery::Fmi2 | Delivery::Fmi3, Kind::Affine, 1) => {
            [u, 0.0, 0.0, 0.0]
        }
        (Delivery::Values, _, _) => [y, 0.0, 0.0, 0.0],
        (_, Kind::Affine, _) => [u, (y - u) / dt, 0.0, 0.0],
        // Second-order hold: back to u at t + dt.
        (_, Kind::Ifosmondi, 1) => [u, du, -2.0 * du / dt, 0.0],
        // The cubic Hermite through (0, u, du) and (dt, y, dy).
        (_, Kind::Ifosmondi, _) => {
            let c2 = (3.0 * (y - u) / dt - 2.0 * du - dy) / dt;
            let c3 = (2.0 * (u - y) / dt + du + dy) / (dt * dt);
            [u, du, 2.0 * c2, 6.0 * c3]
        }
    }
}

/// IFOSMONDI or its affine variant with inputs delivered as `delivery`
/// says, from 0 to `t_end`: each macro step iterated from the states at its
/// start until every input's value at the step end is within eq. 27 of the
/// newly coupled value (`|u - y| < eps_rel |u| + eps_abs`), else halved
/// after `max_iterations`; the next step `min(step, 1.3 dt)`. Each
/// iteration is two doStep calls.
pub fn iterative(p: &Params, kind: Kind, delivery: Delivery, s: Settings, t_end: f64) -> Run {
    let mut pair = Pair::start(p);
    let mut run = Run::default();
    run.push(0.0, &pair, p, 0.0);
    // Each input's value and slope at the step start: at 0 the coupled
    // value and the source's output derivative as the FMU gives it before
    // any input derivative is set (S2's f2' without its inputs' slopes).
    let mut start: [(f64, f64); 3] = {
        let y = pair.outputs(p, 0.0);
        let dy = pair.output_slopes(p, 0.0, false);
        [0, 1, 2].map(|i| (y[i], dy[i]))
    };
    let mut t = 0.0;
    let mut dt = s.step;
    while t < t_end - 1e-12 {
        dt = dt.min(t_end - t);
        let saved = pair;
        loop {
            let mut prev: Option<([f64; 3], [f64; 3])> = None;
            let mut converged = false;
            for iteration in 1..=s.max_iterations {
                pair = saved;
                for i in 0..3 {
                    let previous = prev.map_or((0.0, 0.0), |(y, dy)| (y[i], dy[i]));
                    pair.u[i] = input((kind, delivery), iteration, dt, start[i], previous);
                }
                pair.step(p, dt);
                run.do_steps += 2;
                let y = pair.outputs(p, dt);
                let dy = pair.output_slopes(p, dt, delivery == Delivery::Fmi2);
                converged = (0..3).all(|i| {
                    let u = eval(&pair.u[i], 0, dt);
                    (u - y[i]).abs() < s.eps_rel * u.abs() + s.eps_abs
                });
                if converged {
                    break;
                }
                prev = Some((y, dy));
            }
            if converged {
                break;
            }
            run.halvings += 1;
            dt /= 2.0;
            assert!(dt >= s.dt_min, "step below dt_min at t = {t}");
        }
        // The next step starts where these polynomials end (C1 inputs); a
        // held input from the newly coupled value.
        let y = pair.outputs(p, dt);
        for i in 0..3 {
            start[i] = if delivery == Delivery::Values {
                (y[i], 0.0)
            } else {
                (eval(&pair.u[i], 0, dt), eval(&pair.u[i], 1, dt))
            };
        }
        t += dt;
        run.push(t, &pair, p, dt);
        dt = (1.3 * dt).min(s.step);
    }
    run
}
