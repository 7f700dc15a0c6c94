//! Monolithic reference solutions of the benchmark systems, written from
//! the equations in docs/benchmarks.md independently of the model code
//! (nothing here calls a model struct), so a model bug cannot hide in the
//! reference.
//!
//! Linear systems are solved analytically: x(t) = e^{A (t - t0)} x0 for the
//! state augmented with a constant 1 (which carries the constant road input),
//! with the matrix exponential computed by scaling and squaring of a Taylor
//! series ([`expm`]). The nonlinear quarter car is solved with classical RK4
//! at a tiny step ([`b1_nonlinear`]; the tests check it against half the
//! step).

// Index loops read like the equations here.
#![allow(clippy::needless_range_loop)]

use std::collections::HashMap;
use std::fmt::Write as _;

/// A dense square matrix, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Mat {
    n: usize,
    a: Vec<f64>,
}

impl Mat {
    /// n x n zeros.
    pub fn zeros(n: usize) -> Self {
        Mat {
            n,
            a: vec![0.0; n * n],
        }
    }

    /// Identity.
    pub fn identity(n: usize) -> Self {
        let mut m = Self::zeros(n);
        for i in 0..n {
            m.a[i * n + i] = 1.0;
        }
        m
    }

    /// Dimension.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// Element (i, j).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.a[i * self.n + j]
    }

    /// Sets element (i, j).
    pub fn set(&mut self, i: usize, j: usize, x: f64) {
        self.a[i * self.n + j] = x;
    }

    fn mul(&self, o: &Mat) -> Mat {
        let n = self.n;
        let mut r = Mat::zeros(n);
        for i in 0..n {
            for k in 0..n {
                let aik = self.a[i * n + k];
                if aik != 0.0 {
                    for j in 0..n {
                        r.a[i * n + j] += aik * o.a[k * n + j];
                    }
                }
            }
        }
        r
    }

    fn scale(&self, s: f64) -> Mat {
        Mat {
            n: self.n,
            a: self.a.iter().map(|x| x * s).collect(),
        }
    }

    fn add(&self, o: &Mat) -> Mat {
        Mat {
            n: self.n,
            a: self.a.iter().zip(&o.a).map(|(x, y)| x + y).collect(),
        }
    }

    fn norm1(&self) -> f64 {
        (0..self.n)
            .map(|j| (0..self.n).map(|i| self.get(i, j).abs()).sum::<f64>())
            .fold(0.0, f64::max)
    }

    /// Matrix-vector product.
    pub fn apply(&self, x: &[f64]) -> Vec<f64> {
        (0..self.n)
            .map(|i| (0..self.n).map(|j| self.get(i, j) * x[j]).sum())
            .collect()
    }
}

/// The matrix exponential e^A: scaling so that ||A / 2^s||_1 <= 1/2, a
/// degree-18 Taylor polynomial (truncation error below 1e-22 relative), and
/// s squarings.
pub fn expm(a: &Mat) -> Mat {
    let norm = a.norm1();
    let s = if norm > 0.5 {
        (norm / 0.5).log2().ceil() as i32
    } else {
        0
    };
    let scaled = a.scale(0.5f64.powi(s));
    let mut sum = Mat::identity(a.dim());
    let mut term = Mat::identity(a.dim());
    for k in 1..=18 {
        term = term.mul(&scaled).scale(1.0 / f64::from(k));
        sum = sum.add(&term);
    }
    for _ in 0..s {
        sum = sum.mul(&sum);
    }
    sum
}

/// Solution of the affine system x' = A x + b at `times` (ascending, >= t0),
/// from x(t0) = x0: exact up to rounding (matrix exponential of the system
/// augmented with a constant state).
pub fn affine_solution(a: &Mat, b: &[f64], x0: &[f64], t0: f64, times: &[f64]) -> Vec<Vec<f64>> {
    let n = a.dim();
    let mut aug = Mat::zeros(n + 1);
    for i in 0..n {
        for j in 0..n {
            aug.set(i, j, a.get(i, j));
        }
        aug.set(i, n, b[i]);
    }
    let mut x: Vec<f64> = x0.iter().copied().chain(std::iter::once(1.0)).collect();
    let mut t = t0;
    let mut cache: HashMap<u64, Mat> = HashMap::new();
    let mut out = Vec::with_capacity(times.len());
    for &ti in times {
        let dt = ti - t;
        if dt != 0.0 {
            let phi = cache
                .entry(dt.to_bits())
                .or_insert_with(|| expm(&aug.scale(dt)));
            x = phi.apply(&x);
            t = ti;
        }
        out.push(x[..n].to_vec());
    }
    out
}

/// Sampled trajectories with named columns (time first), written as CSV.
#[derive(Debug, Clone, PartialEq)]
pub struct Trajectory {
    /// Column names after `time`.
    pub names: Vec<String>,
    /// Sample times.
    pub times: Vec<f64>,
    /// One row per time.
    pub rows: Vec<Vec<f64>>,
}

impl Trajectory {
    /// Column index by name.
    pub fn column(&self, name: &str) -> Option<Vec<f64>> {
        let j = self.names.iter().position(|n| n == name)?;
        Some(self.rows.iter().map(|r| r[j]).collect())
    }

    /// CSV text: header `time,<names>`, full precision.
    pub fn to_csv(&self) -> String {
        let mut s = String::with_capacity(self.rows.len() * 24 * (self.names.len() + 1));
        s.push_str("time");
        for n in &self.names {
            s.push(',');
            s.push_str(n);
        }
        s.push('\n');
        for (t, r) in self.times.iter().zip(&self.rows) {
            let _ = write!(s, "{t:?}");
            for x in r {
                let _ = write!(s, ",{x:?}");
            }
            s.push('\n');
        }
        s
    }
}

/// `n + 1` equally spaced times from `t0` to `t1` (computed as t0 + i dt).
pub fn grid(t0: f64, t1: f64, n: usize) -> Vec<f64> {
    let dt = (t1 - t0) / n as f64;
    (0..=n)
        .map(|i| if i == n { t1 } else { t0 + i as f64 * dt })
        .collect()
}

/// B1 (sadjina2016) quarter-car parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuarterCar {
    /// Chassis mass.
    pub m_c: f64,
    /// Wheel mass.
    pub m_w: f64,
    /// Suspension stiffness.
    pub k_c: f64,
    /// Tyre stiffness.
    pub k_w: f64,
    /// Damping constant.
    pub d_c: f64,
    /// Damping linearity.
    pub n_d: f64,
    /// Road height for t >= 0.
    pub z_road: f64,
}

impl QuarterCar {
    /// Linear case (Table II).
    pub const LINEAR: QuarterCar = QuarterCar {
        m_c: 400.0,
        m_w: 40.0,
        k_c: 15000.0,
        k_w: 150000.0,
        d_c: 1000.0,
        n_d: 0.5,
        z_road: 0.1,
    };
    /// Nonlinear case (d_c 900, n_d 1.5).
    pub const NONLINEAR: QuarterCar = QuarterCar {
        d_c: 900.0,
        n_d: 1.5,
        ..Self::LINEAR
    };

    fn damper(&self, v: f64) -> f64 {
        let p = 2.0 / (1.0 + 2.0 * self.n_d);
        self.d_c * v.signum() * v.abs().powf(p)
    }

    /// F_c and F_w for a state (z_c, z_w, v_c, v_w).
    pub fn forces(&self, s: &[f64]) -> (f64, f64) {
        let f_c = self.k_c * (s[0] - s[1]) + self.damper(s[2] - s[3]);
        let f_w = self.k_w * (s[1] - self.z_road);
        (f_c, f_w)
    }

    fn rhs(&self, s: &[f64; 4]) -> [f64; 4] {
        let (f_c, f_w) = self.forces(s);
        [s[2], s[3], -f_c / self.m_c, (-f_w + f_c) / self.m_w]
    }

    fn trajectory(&self, times: &[f64], states: Vec<Vec<f64>>) -> Trajectory {
        let rows = states
            .into_iter()
            .map(|s| {
                let (f_c, f_w) = self.forces(&s);
                // Power transmitted through the bond of reticulation A:
                // chassis velocity times the suspension force.
                let mut r = s.clone();
                r.extend([f_c, f_w, f_c * s[2]]);
                r
            })
            .collect();
        Trajectory {
            names: ["z_c", "z_w", "v_c", "v_w", "F_c", "F_w", "P_c"]
                .map(String::from)
                .to_vec(),
            times: times.to_vec(),
            rows,
        }
    }
}

/// B1 with linear damping (n_d = 0.5), analytically: all states 0 at t = 0.
/// Columns z_c, z_w, v_c, v_w, F_c, F_w, P_c = F_c v_c.
pub fn b1_linear(p: &QuarterCar, times: &[f64]) -> Trajectory {
    let mut a = Mat::zeros(4);
    // state (z_c, z_w, v_c, v_w)
    a.set(0, 2, 1.0);
    a.set(1, 3, 1.0);
    a.set(2, 0, -p.k_c / p.m_c);
    a.set(2, 1, p.k_c / p.m_c);
    a.set(2, 2, -p.d_c / p.m_c);
    a.set(2, 3, p.d_c / p.m_c);
    a.set(3, 0, p.k_c / p.m_w);
    a.set(3, 1, -(p.k_c + p.k_w) / p.m_w);
    a.set(3, 2, p.d_c / p.m_w);
    a.set(3, 3, -p.d_c / p.m_w);
    let b = [0.0, 0.0, 0.0, p.k_w * p.z_road / p.m_w];
    let states = affine_solution(&a, &b, &[0.0; 4], 0.0, times);
    p.trajectory(times, states)
}

/// B1 with any damping law, by classical RK4 with steps of at most `h`.
/// With h = 1e-6 s the nonlinear case (n_d = 1.5) differs from h/2 by about
/// 3e-8 in the states (the damper |v|^0.5 is not smooth at v = 0, which costs
/// RK4 its order at each velocity reversal). All states 0 at t = 0.
pub fn b1_nonlinear(p: &QuarterCar, times: &[f64], h: f64) -> Trajectory {
    let mut s = [0.0; 4];
    let mut t = 0.0;
    let mut states = Vec::with_capacity(times.len());
    for &ti in times {
        let n = ((ti - t) / h - 1e-9).ceil().max(0.0) as usize;
        if n > 0 {
            let dt = (ti - t) / n as f64;
            for _ in 0..n {
                let k1 = p.rhs(&s);
                let k2 = p.rhs(&add(&s, 0.5 * dt, &k1));
                let k3 = p.rhs(&add(&s, 0.5 * dt, &k2));
                let k4 = p.rhs(&add(&s, dt, &k3));
                for j in 0..4 {
                    s[j] += dt / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
                }
            }
            t = ti;
        }
        states.push(s.to_vec());
    }
    p.trajectory(times, states)
}

fn add(x: &[f64; 4], a: f64, k: &[f64; 4]) -> [f64; 4] {
    [
        x[0] + a * k[0],
        x[1] + a * k[1],
        x[2] + a * k[2],
        x[3] + a * k[3],
    ]
}

/// B2 (arnold2013) parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct B2 {
    /// Chassis mass.
    pub m_c: f64,
    /// Wheel mass.
    pub m_w: f64,
    /// Suspension stiffness.
    pub k_c: f64,
    /// Tyre stiffness.
    pub k_w: f64,
    /// Suspension damping.
    pub d_c: f64,
    /// Tyre damping.
    pub d_w: f64,
    /// Road height for t >= 0.
    pub z_road: f64,
}

impl B2 {
    /// Published values.
    pub const DEFAULT: B2 = B2 {
        m_c: 400.0,
        m_w: 40.0,
        k_c: 15000.0,
        k_w: 150000.0,
        d_c: 1000.0,
        d_w: 0.0,
        z_road: 0.1,
    };
}

/// B2 from an arbitrary state `x0 = (x_c, x_w, v_c, v_w)` at `t0` (z' = 0 for
/// t > 0). Columns x_c, x_w, v_c, v_w, F_susp.
pub fn b2(p: &B2, x0: [f64; 4], t0: f64, times: &[f64]) -> Trajectory {
    let mut a = Mat::zeros(4);
    a.set(0, 2, 1.0);
    a.set(1, 3, 1.0);
    // m_c v_c' = k_c (x_w - x_c) + d_c (v_w - v_c)
    a.set(2, 0, -p.k_c / p.m_c);
    a.set(2, 1, p.k_c / p.m_c);
    a.set(2, 2, -p.d_c / p.m_c);
    a.set(2, 3, p.d_c / p.m_c);
    // m_w v_w' = k_w (z - x_w) - d_w v_w - k_c (x_w - x_c) - d_c (v_w - v_c)
    a.set(3, 0, p.k_c / p.m_w);
    a.set(3, 1, -(p.k_w + p.k_c) / p.m_w);
    a.set(3, 2, p.d_c / p.m_w);
    a.set(3, 3, -(p.d_w + p.d_c) / p.m_w);
    let b = [0.0, 0.0, 0.0, p.k_w * p.z_road / p.m_w];
    let states = affine_solution(&a, &b, &x0, t0, times);
    let rows = states
        .into_iter()
        .map(|s| {
            let f = p.k_c * (s[1] - s[0]) + p.d_c * (s[3] - s[2]);
            let mut r = s;
            r.push(f);
            r
        })
        .collect();
    Trajectory {
        names: ["x_c", "x_w", "v_c", "v_w", "F_susp"]
            .map(String::from)
            .to_vec(),
        times: times.to_vec(),
        rows,
    }
}

/// B3 (hafner) parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThreeMass {
    /// Masses m1, m2, m3.
    pub m: [f64; 3],
    /// Stiffnesses (c1, c12, c23, c3).
    pub c: [f64; 4],
    /// Dampings (d1, d12, d23, d3).
    pub d: [f64; 4],
    /// Initial positions.
    pub x0: [f64; 3],
    /// Initial velocities.
    pub v0: [f64; 3],
}

impl ThreeMass {
    /// Scenario 1, 2 or 3 of hafner Table 1 (others: scenario 1).
    pub fn scenario(k: u32) -> Self {
        let c = match k {
            2 => [1e-3, 1e-1, 10.0, 100.0],
            3 => [1.0, 10.0, 10.0, 100.0],
            _ => [1e-2, 1e-1, 1.0, 10.0],
        };
        ThreeMass {
            m: [10.0; 3],
            c,
            d: [0.1, 0.4, 1.0, 2.0],
            x0: [1.0, 2.0, 3.0],
            v0: [0.0; 3],
        }
    }
}

/// B3 analytically. Columns x1, x2, x3, v1, v2, v3.
pub fn three_mass(p: &ThreeMass, times: &[f64]) -> Trajectory {
    let [m1, m2, m3] = p.m;
    let [c1, c12, c23, c3] = p.c;
    let [d1, d12, d23, d3] = p.d;
    let mut a = Mat::zeros(6);
    for i in 0..3 {
        a.set(i, i + 3, 1.0);
    }
    // m1 v1' = -c1 x1 - d1 v1 + c12 (x2 - x1) + d12 (v2 - v1)
    a.set(3, 0, -(c1 + c12) / m1);
    a.set(3, 1, c12 / m1);
    a.set(3, 3, -(d1 + d12) / m1);
    a.set(3, 4, d12 / m1);
    // m2 v2' = -c12 (x2 - x1) - d12 (v2 - v1) + c23 (x3 - x2) + d23 (v3 - v2)
    a.set(4, 0, c12 / m2);
    a.set(4, 1, -(c12 + c23) / m2);
    a.set(4, 2, c23 / m2);
    a.set(4, 3, d12 / m2);
    a.set(4, 4, -(d12 + d23) / m2);
    a.set(4, 5, d23 / m2);
    // m3 v3' = -c23 (x3 - x2) - d23 (v3 - v2) - c3 x3 - d3 v3
    a.set(5, 1, c23 / m3);
    a.set(5, 2, -(c23 + c3) / m3);
    a.set(5, 4, d23 / m3);
    a.set(5, 5, -(d23 + d3) / m3);
    let x0 = [p.x0[0], p.x0[1], p.x0[2], p.v0[0], p.v0[1], p.v0[2]];
    let states = affine_solution(&a, &[0.0; 6], &x0, 0.0, times);
    Trajectory {
        names: ["x1", "x2", "x3", "v1", "v2", "v3"]
            .map(String::from)
            .to_vec(),
        times: times.to_vec(),
        rows: states,
    }
}

/// B4 (ifosmondi2019, docs/benchmarks.md parameter set) parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TwoMass {
    /// Mass 1.
    pub m1: f64,
    /// Mass 2.
    pub m2: f64,
    /// Spring of mass 1 to the wall.
    pub c1: f64,
    /// Spring of mass 2 to the wall.
    pub c2: f64,
    /// Coupling spring.
    pub ck: f64,
    /// Damper of mass 1.
    pub d1: f64,
    /// Damper of mass 2.
    pub d2: f64,
    /// Coupling damper.
    pub dk: f64,
    /// Initial state (x1, x2, v1, v2).
    pub x0: [f64; 4],
}

impl TwoMass {
    /// The stiff, unbalanced set of docs/benchmarks.md B4.
    pub const DEFAULT: TwoMass = TwoMass {
        m1: 1.0,
        m2: 1.0,
        c1: 1e3,
        c2: 1e5,
        ck: 1e5,
        d1: 1.0,
        d2: 10.0,
        dk: 10.0,
        x0: [0.1, 0.0, 0.0, 0.0],
    };
}

/// B4 analytically. Columns x1, x2, v1, v2, f2 (= ck (x2 - x1) + dk (v2 - v1)).
pub fn two_mass(p: &TwoMass, times: &[f64]) -> Trajectory {
    let mut a = Mat::zeros(4);
    a.set(0, 2, 1.0);
    a.set(1, 3, 1.0);
    // m1 v1' = -c1 x1 - d1 v1 + ck (x2 - x1) + dk (v2 - v1)
    a.set(2, 0, -(p.c1 + p.ck) / p.m1);
    a.set(2, 1, p.ck / p.m1);
    a.set(2, 2, -(p.d1 + p.dk) / p.m1);
    a.set(2, 3, p.dk / p.m1);
    // m2 v2' = -c2 x2 - d2 v2 - ck (x2 - x1) - dk (v2 - v1)
    a.set(3, 0, p.ck / p.m2);
    a.set(3, 1, -(p.c2 + p.ck) / p.m2);
    a.set(3, 2, p.dk / p.m2);
    a.set(3, 3, -(p.d2 + p.dk) / p.m2);
    let states = affine_solution(&a, &[0.0; 4], &p.x0, 0.0, times);
    let rows = states
        .into_iter()
        .map(|s| {
            let f2 = p.ck * (s[1] - s[0]) + p.dk * (s[3] - s[2]);
            let mut r = s;
            r.push(f2);
            r
        })
        .collect();
    Trajectory {
        names: ["x1", "x2", "v1", "v2", "f2"].map(String::from).to_vec(),
        times: times.to_vec(),
        rows,
    }
}

/// B5 (kyllingstad) mass-spring(-damper): m x'' = -k x - d x', closed form.
/// Columns x, v, F (= -k x - d v, the force on the mass), E (= m v^2/2 + k x^2/2).
pub fn oscillator(m: f64, k: f64, d: f64, x0: f64, v0: f64, times: &[f64]) -> Trajectory {
    let w0 = (k / m).sqrt();
    let zeta = d / (2.0 * (k * m).sqrt());
    let rows = times
        .iter()
        .map(|&t| {
            let (x, v) = if zeta < 1.0 {
                let wd = w0 * (1.0 - zeta * zeta).sqrt();
                let s = zeta * w0;
                let e = (-s * t).exp();
                let (sn, cs) = (wd * t).sin_cos();
                let b = (v0 + s * x0) / wd;
                let x = e * (x0 * cs + b * sn);
                let v = e * (-s * (x0 * cs + b * sn) + (-x0 * wd * sn + b * wd * cs));
                (x, v)
            } else {
                // Over- or critically damped: not used by the benchmark; use the
                // matrix exponential.
                let mut a = Mat::zeros(2);
                a.set(0, 1, 1.0);
                a.set(1, 0, -k / m);
                a.set(1, 1, -d / m);
                let s = affine_solution(&a, &[0.0, 0.0], &[x0, v0], 0.0, &[t]);
                (s[0][0], s[0][1])
            };
            vec![x, v, -k * x - d * v, 0.5 * m * v * v + 0.5 * k * x * x]
        })
        .collect();
    Trajectory {
        names: ["x", "v", "F", "E"].map(String::from).to_vec(),
        times: times.to_vec(),
        rows,
    }
}

// ------------------------------------------------------------ Model Exchange

/// The first `n` contact times of a ball dropped from `h0` (at rest) onto
/// the floor, gravity `g`, coefficient of restitution `e`, bouncing for
/// ever (`BouncingBallME` stops at a rebound slower than its `v_min`, see
/// [`bouncing_ball_contact_count`]): t1 = sqrt(2 h0 / g), the impact speed
/// v1 = sqrt(2 g h0), and after contact k the flight 2 e^k v1 / g.
pub fn bouncing_ball_contacts(h0: f64, e: f64, g: f64, n: usize) -> Vec<f64> {
    let t1 = (2.0 * h0 / g).sqrt();
    let v1 = (2.0 * g * h0).sqrt();
    let mut out = Vec::with_capacity(n);
    let mut t = t1;
    let mut rebound = v1;
    for _ in 0..n {
        out.push(t);
        rebound *= e;
        t += 2.0 * rebound / g;
    }
    out
}

/// How many contacts `BouncingBallME` makes before it rests: up to and
/// including the first one whose rebound speed e^k v1 is below `v_min`.
pub fn bouncing_ball_contact_count(h0: f64, e: f64, g: f64, v_min: f64) -> usize {
    let v1 = (2.0 * g * h0).sqrt();
    let mut k = 1;
    let mut rebound = e * v1;
    while rebound >= v_min && k < 10_000 {
        k += 1;
        rebound *= e;
    }
    k
}

/// The height of `BouncingBallME` at `t` (free fall between the contacts
/// of [`bouncing_ball_contacts`], 0 once at rest).
pub fn bouncing_ball_height(h0: f64, e: f64, g: f64, v_min: f64, t: f64) -> f64 {
    let n = bouncing_ball_contact_count(h0, e, g, v_min);
    let contacts = bouncing_ball_contacts(h0, e, g, n);
    let v1 = (2.0 * g * h0).sqrt();
    match contacts.iter().rposition(|&tc| tc <= t) {
        None => h0 - 0.5 * g * t * t,
        Some(k) if k + 1 == n => 0.0,
        Some(k) => {
            let s = t - contacts[k];
            let up = e.powi(k as i32 + 1) * v1;
            up * s - 0.5 * g * s * s
        }
    }
}

/// Robertson's kinetics at t = 40 (y1, y2, y3), as Hairer & Wanner give
/// them (Solving ODEs II, sec. IV.10, Table 10.1 reference solution):
/// checked against [`robertson`] with small steps in the tests.
pub const ROBERTSON_T40: [f64; 3] = [0.7158270687, 9.185534764e-6, 0.2841637457];

/// Robertson's kinetics (k1 = 0.04, k2 = 3e7, k3 = 1e4, y(0) = (1, 0, 0))
/// at `t_end`, by classical RK4 with steps of at most `h`: stable for h
/// below about 8e-4 (the stiff eigenvalue stays above -3.5e3 on [0, 40]),
/// accurate to about 1e-12 with h = 1e-4.
pub fn robertson(t_end: f64, h: f64) -> [f64; 3] {
    let f = |y: &[f64; 3]| -> [f64; 3] {
        let (k1, k2, k3) = (0.04, 3e7, 1e4);
        [
            -k1 * y[0] + k3 * y[1] * y[2],
            k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] * y[1],
            k2 * y[1] * y[1],
        ]
    };
    let n = (t_end / h).ceil().max(1.0) as usize;
    let dt = t_end / n as f64;
    let mut y = [1.0, 0.0, 0.0];
    let at =
        |y: &[f64; 3], a: f64, k: &[f64; 3]| [y[0] + a * k[0], y[1] + a * k[1], y[2] + a * k[2]];
    for _ in 0..n {
        let k1 = f(&y);
        let k2 = f(&at(&y, 0.5 * dt, &k1));
        let k3 = f(&at(&y, 0.5 * dt, &k2));
        let k4 = f(&at(&y, dt, &k3));
        for j in 0..3 {
            y[j] += dt / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
        }
    }
    y
}

/// `TimeEvents` at `t` (from t = 0): (y, x) with n = floor(t / period),
/// y = n and x = period n (n - 1) / 2 + n (t - n period).
pub fn time_events(period: f64, t: f64) -> (f64, f64) {
    let n = (t / period + 1e-12).floor();
    (n, period * n * (n - 1.0) / 2.0 + n * (t - n * period))
}

/// `StepEvents` at `t` (from t = 0, x(0) = 0) for an importer that
/// completes its steps at the multiples of `h`: (x, resets), a reset every
/// m = ceil(x_max / (rate h)) steps.
pub fn step_events(rate: f64, x_max: f64, h: f64, t: f64) -> (f64, f64) {
    let n = (t / h + 1e-9).floor() as u64;
    let m = (x_max / (rate * h) - 1e-9).ceil().max(1.0) as u64;
    ((rate * h) * (n % m) as f64, (n / m) as f64)
}

// --------------------------------------------- Co-Simulation with events

/// `Ticker`'s count at `t` after the event there: floor(t / period), a
/// time within 1e-9 (relative) of a tick k period counting as the tick.
pub fn ticker_count(period: f64, t: f64) -> f64 {
    let x = t / period;
    let k = x.round();
    if (x - k).abs() <= 1e-9 * k.abs().max(1.0) {
        k
    } else {
        x.floor()
    }
}

/// `Ballistic`'s bounces, dropped from `h0` at rest (gravity `g`,
/// restitution `e`): (time, rebound speed) of each, up to and including
/// the one whose rebound is below `v_rest` (then at rest, speed 0). The
/// first at t_1 = sqrt(2 h0 / g) with impact speed v_1 = sqrt(2 g h0); the
/// k-th rebound e^k v_1, the next bounce 2 e^k v_1 / g later. `limit`
/// bounds the count (e = 1 bounces for ever).
pub fn ballistic_bounces(h0: f64, g: f64, e: f64, v_rest: f64, limit: usize) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    if h0 <= 0.0 {
        return out;
    }
    let mut t = (2.0 * h0 / g).sqrt();
    let mut speed = (2.0 * g * h0).sqrt();
    while out.len() < limit {
        speed *= e;
        if speed < v_rest {
            out.push((t, 0.0));
            break;
        }
        out.push((t, speed));
        t += 2.0 * speed / g;
    }
    out
}

/// `Ballistic`'s (h, v, bounces) at `t` after the events there, from the
/// bounces of [`ballistic_bounces`] (the model's closed form, written
/// independently; a bounce within 1e-9 relative of `t` is at `t`).
pub fn ballistic_state(h0: f64, g: f64, bounces: &[(f64, f64)], t: f64) -> (f64, f64, usize) {
    let at = t + 1e-9 * t.abs().max(1.0);
    match bounces.iter().rposition(|&(tb, _)| tb <= at) {
        None => (h0 - 0.5 * g * t * t, -g * t, 0),
        Some(k) => {
            let (tb, up) = bounces[k];
            if up == 0.0 {
                return (0.0, 0.0, k + 1);
            }
            let s = t - tb;
            (up * s - 0.5 * g * s * s, up - g * s, k + 1)
        }
    }
}

/// `ClockedController`'s outputs u_k at its ticks, from the samples x_k of
/// its input at the ticks: I_k = I_{k-1} + T x_k (I_{-1} = 0),
/// u_k = -(kp x_k + ki I_k).
pub fn clocked_controller(kp: f64, ki: f64, interval: f64, xs: &[f64]) -> Vec<f64> {
    let mut integral = 0.0;
    xs.iter()
        .map(|&x| {
            integral += interval * x;
            -(kp * x + ki * integral)
        })
        .collect()
}

/// `ThresholdTrigger`'s ticks: for steps i = 0, 1, ... from `t[i]` to
/// `t[i + 1]` with the input `x[i]` held over step i, and `x_init` the
/// input when initialization ended, the (time, count) of each tick of
/// `crossed`: at `t[i + 1]` where x_{i-1} < threshold <= x_i (x_{-1} =
/// `x_init`), count the ticks so far.
pub fn threshold_ticks(threshold: f64, x_init: f64, t: &[f64], x: &[f64]) -> Vec<(f64, i32)> {
    let mut last = x_init;
    let mut count = 0;
    let mut ticks = Vec::new();
    for (i, &xi) in x.iter().enumerate() {
        if last < threshold && xi >= threshold {
            count += 1;
            ticks.push((t[i + 1], count));
        }
        last = xi;
    }
    ticks
}

/// `ClockedCounter`'s outputs at its activations, from the values v_k
/// set at them: at the k-th activation (k = 1, 2, ...) n = k and held =
/// v_k.
pub fn clocked_counter(values: &[f64]) -> Vec<(i32, f64)> {
    (1..).zip(values.iter().copied()).collect()
}

/// A partition of `Partitions`: its fast (id 1) or its slow (id 2)
/// Clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partition {
    /// `fast`: interval 0.1 s, priority 1.
    Fast,
    /// `slow`: interval 0.2 s, priority 2.
    Slow,
}

/// `Partitions`' activations in priority order from t = 0 up to `t_end`
/// (inclusive): at t_k = 0.1 k `fast`, and at the even k, where `slow`
/// ticks too (t = 0.2 j), `slow` after it (priority 2 after 1). The times
/// are k / 10, computed from k (no accumulated sum).
pub fn partitions_schedule(t_end: f64) -> Vec<(f64, Partition)> {
    let mut out = Vec::new();
    let mut k: u32 = 0;
    while f64::from(k) / 10.0 <= t_end + 1e-9 {
        let t = f64::from(k) / 10.0;
        out.push((t, Partition::Fast));
        if k.is_multiple_of(2) {
            out.push((t, Partition::Slow));
        }
        k += 1;
    }
    out
}

/// `Partitions`' outputs after each of `activations` (in the order the
/// importer made them; each with the `gain` set before it, used by the
/// slow ones): (`fast_n`, `slow_n`, `pair`, `y`), where `fast_n` and
/// `slow_n` count the activations of each Clock so far, `pair` = 10 p +
/// id (id 1 fast, 2 slow, p the id of the activation before, 0 for the
/// first) and `y` = gain * `slow_n` at the last slow activation (0 before
/// it).
pub fn partitions(activations: &[(Partition, f64)]) -> Vec<(i32, i32, i32, f64)> {
    let (mut fast_n, mut slow_n, mut y) = (0, 0, 0.0);
    let mut previous = 0;
    let mut out = Vec::with_capacity(activations.len());
    for &(p, gain) in activations {
        let id = match p {
            Partition::Fast => {
                fast_n += 1;
                1
            }
            Partition::Slow => {
                slow_n += 1;
                y = gain * f64::from(slow_n);
                2
            }
        };
        out.push((fast_n, slow_n, 10 * previous + id, y));
        previous = id;
    }
    out
}

/// The activation times of `AperiodicClocks`' Clocks up to a time.
#[derive(Debug, Clone, PartialEq)]
pub struct AperiodicTimes {
    /// `sample`: offset + k period, k = 0, 1, ...
    pub sample: Vec<f64>,
    /// `burst`: t_k = 0.05 k (k + 1), k = 1, 2, ... (the sums of the
    /// intervals 0.1, 0.2, ..., 0.1 k).
    pub burst: Vec<f64>,
    /// `delayed`: t_k + delay for each burst time t_k.
    pub delayed: Vec<f64>,
}

/// `AperiodicClocks`' activations up to `t_end` (inclusive, 1e-9), from
/// its parameters: `sample` (fixed) at offset + k period; `burst`
/// (changing, intervals T_0 = 0.1, T_i = 0.1 (i + 1)) at 0.05 k (k + 1);
/// `delayed` (countdown, armed with `delay` at each burst) at each burst
/// time plus `delay` (delay < 0.2: each arming ticks before the next
/// burst). The times are computed from k, not summed.
pub fn aperiodic_clocks(period: f64, offset: f64, delay: f64, t_end: f64) -> AperiodicTimes {
    let until = |f: &dyn Fn(u32) -> f64, k0: u32| -> Vec<f64> {
        (k0..).map(f).take_while(|&t| t <= t_end + 1e-9).collect()
    };
    let burst = until(&|k| 0.05 * f64::from(k) * f64::from(k + 1), 1);
    AperiodicTimes {
        sample: until(&|k| offset + f64::from(k) * period, 0),
        delayed: burst
            .iter()
            .map(|t| t + delay)
            .filter(|&t| t <= t_end + 1e-9)
            .collect(),
        burst,
    }
}

/// A model partition of `CountdownPartitions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountdownPartition {
    /// `inClock1`: constant, 1 s, priority 0.
    InClock1,
    /// `inClock2`: triggered, priority 1.
    InClock2,
    /// `inClock3`: countdown, priority 2.
    InClock3,
}

/// `CountdownPartitions`' values after one activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CountdownValues {
    /// `inClock1Ticks`.
    pub in_clock1_ticks: i32,
    /// `inClock2Ticks`.
    pub in_clock2_ticks: i32,
    /// `inClock3Ticks`.
    pub in_clock3_ticks: i32,
    /// `totalInClockTicks`.
    pub total: i32,
    /// `result2`.
    pub result2: i32,
    /// `output3`.
    pub output3: i32,
    /// `outClock` ticked in this activation.
    pub out_clock: bool,
    /// This activation armed `inClock3` (interval 0).
    pub armed: bool,
}

/// `CountdownPartitions`' values after each of `activations` (time,
/// partition, the `input2` set before it, `None`: not set): every
/// activation counts in its Clock's ticks and in the total; inClock2 adds
/// `input2` to `result2` and sets `input2` to 0; inClock3 sets `output3`
/// to 1000; inClock1 at floor(t) = 4 arms inClock3; `outClock` ticks where
/// the total becomes a multiple of 5.
pub fn countdown_partitions(
    activations: &[(f64, CountdownPartition, Option<i32>)],
) -> Vec<CountdownValues> {
    let mut s = CountdownValues::default();
    let mut input2 = 0;
    let mut out = Vec::with_capacity(activations.len());
    for &(t, p, set) in activations {
        if let Some(x) = set {
            input2 = x;
        }
        s.armed = false;
        match p {
            CountdownPartition::InClock1 => {
                s.in_clock1_ticks += 1;
                s.armed = t.floor() == 4.0;
            }
            CountdownPartition::InClock2 => {
                s.in_clock2_ticks += 1;
                s.result2 += input2;
                input2 = 0;
            }
            CountdownPartition::InClock3 => {
                s.in_clock3_ticks += 1;
                s.output3 = 1000;
            }
        }
        s.total += 1;
        s.out_clock = s.total % 5 == 0;
        out.push(s);
    }
    out
}

/// The Reference FMUs' `scs_synchronous` schedule of `CountdownPartitions`
/// for t = 0, 1, ..., `t_end` - 1: inClock1 at t; inClock2 at t where t
/// mod 8 is 0 or 1; inClock3 at t = 4, where inClock1 arms it with 0; in
/// priority order.
pub fn countdown_partitions_schedule(t_end: u32) -> Vec<(f64, CountdownPartition)> {
    let mut out = Vec::new();
    for k in 0..t_end {
        let t = f64::from(k);
        out.push((t, CountdownPartition::InClock1));
        if k % 8 <= 1 {
            out.push((t, CountdownPartition::InClock2));
        }
        if k == 4 {
            out.push((t, CountdownPartition::InClock3));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expm_of_rotation() {
        let mut a = Mat::zeros(2);
        a.set(0, 1, 1.0);
        a.set(1, 0, -1.0);
        for t in [0.1, 1.0, 10.0, 100.0] {
            let e = expm(&a.scale(t));
            assert!((e.get(0, 0) - t.cos()).abs() < 1e-12 * t.max(1.0));
            assert!((e.get(0, 1) - t.sin()).abs() < 1e-12 * t.max(1.0));
        }
    }

    fn rk4_linear(a: &Mat, b: &[f64], x0: &[f64], t1: f64, n: usize) -> Vec<f64> {
        let f = |x: &[f64]| -> Vec<f64> { a.apply(x).iter().zip(b).map(|(y, c)| y + c).collect() };
        let h = t1 / n as f64;
        let mut x = x0.to_vec();
        let ax = |x: &[f64], s: f64, k: &[f64]| -> Vec<f64> {
            x.iter().zip(k).map(|(x, k)| x + s * k).collect()
        };
        for _ in 0..n {
            let k1 = f(&x);
            let k2 = f(&ax(&x, h / 2.0, &k1));
            let k3 = f(&ax(&x, h / 2.0, &k2));
            let k4 = f(&ax(&x, h, &k3));
            for j in 0..x.len() {
                x[j] += h / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
            }
        }
        x
    }

    #[test]
    fn b1_linear_agrees_with_rk4_and_with_the_nonlinear_solver() {
        let p = QuarterCar::LINEAR;
        let times = [0.0, 0.05, 0.3, 1.0];
        let exact = b1_linear(&p, &times);
        let rk = b1_nonlinear(&p, &times, 1e-5);
        for (e, r) in exact.rows.iter().zip(&rk.rows) {
            for j in 0..4 {
                assert!((e[j] - r[j]).abs() < 1e-10, "{e:?} vs {r:?}");
            }
        }
        // Settles at the road height.
        let late = b1_linear(&p, &[30.0]);
        assert!((late.rows[0][0] - 0.1).abs() < 1e-6);
        assert!((late.rows[0][1] - 0.1).abs() < 1e-6);
        // Initial energy in the tyre spring: k_w z^2 / 2 = 750 J.
        assert!((0.5 * p.k_w * p.z_road * p.z_road - 750.0).abs() < 1e-9);
    }

    #[test]
    fn b1_nonlinear_converges_under_step_halving() {
        let p = QuarterCar::NONLINEAR;
        let times = grid(0.0, 2.0, 20);
        let a = b1_nonlinear(&p, &times, 2e-6);
        let b = b1_nonlinear(&p, &times, 1e-6);
        let mut worst: f64 = 0.0;
        for (x, y) in a.rows.iter().zip(&b.rows) {
            for j in 0..4 {
                worst = worst.max((x[j] - y[j]).abs());
            }
        }
        // The damper |v|^0.5 is not Lipschitz at v = 0, so RK4 loses order at
        // each zero crossing of v; the h vs h/2 difference is about 3e-8.
        assert!(worst < 1e-7, "step-halving difference {worst}");
    }

    #[test]
    fn three_mass_matches_rk4() {
        let p = ThreeMass::scenario(1);
        let tr = three_mass(&p, &[5.0]);
        let mut a = Mat::zeros(6);
        // Rebuild A through the public solution: compare to RK4 on the same
        // equations written out again.
        let [m1, m2, m3] = p.m;
        let [c1, c12, c23, c3] = p.c;
        let [d1, d12, d23, d3] = p.d;
        for i in 0..3 {
            a.set(i, i + 3, 1.0);
        }
        let rows = [
            (3, [-(c1 + c12), c12, 0.0, -(d1 + d12), d12, 0.0], m1),
            (4, [c12, -(c12 + c23), c23, d12, -(d12 + d23), d23], m2),
            (5, [0.0, c23, -(c23 + c3), 0.0, d23, -(d23 + d3)], m3),
        ];
        for (i, r, m) in rows {
            for (j, x) in r.iter().enumerate() {
                a.set(i, j, x / m);
            }
        }
        let x = rk4_linear(&a, &[0.0; 6], &[1.0, 2.0, 3.0, 0.0, 0.0, 0.0], 5.0, 50_000);
        for j in 0..6 {
            assert!(
                (tr.rows[0][j] - x[j]).abs() < 1e-10,
                "state {j}: {} vs {}",
                tr.rows[0][j],
                x[j]
            );
        }
    }

    #[test]
    fn two_mass_energy_decays_and_matches_rk4() {
        let p = TwoMass::DEFAULT;
        let tr = two_mass(&p, &[0.05]);
        let mut a = Mat::zeros(4);
        a.set(0, 2, 1.0);
        a.set(1, 3, 1.0);
        a.set(2, 0, -(p.c1 + p.ck));
        a.set(2, 1, p.ck);
        a.set(2, 2, -(p.d1 + p.dk));
        a.set(2, 3, p.dk);
        a.set(3, 0, p.ck);
        a.set(3, 1, -(p.c2 + p.ck));
        a.set(3, 2, p.dk);
        a.set(3, 3, -(p.d2 + p.dk));
        let x = rk4_linear(&a, &[0.0; 4], &p.x0, 0.05, 200_000);
        for j in 0..4 {
            assert!(
                (tr.rows[0][j] - x[j]).abs() < 1e-9,
                "state {j}: {} vs {}",
                tr.rows[0][j],
                x[j]
            );
        }
    }

    #[test]
    fn oscillator_closed_form() {
        let tr = oscillator(1.0, 1.0, 0.0, 1.0, 0.0, &[0.0, 1.0, 2.0]);
        assert!((tr.rows[1][0] - 1f64.cos()).abs() < 1e-15);
        assert!((tr.rows[2][1] + 2f64.sin()).abs() < 1e-15);
        assert!((tr.rows[2][3] - 0.5).abs() < 1e-15);
        // Damped: compare with the matrix exponential.
        let d = oscillator(1.0, 1.0, 0.1, 1.0, 0.0, &[3.0]);
        let mut a = Mat::zeros(2);
        a.set(0, 1, 1.0);
        a.set(1, 0, -1.0);
        a.set(1, 1, -0.1);
        let s = affine_solution(&a, &[0.0, 0.0], &[1.0, 0.0], 0.0, &[3.0]);
        assert!((d.rows[0][0] - s[0][0]).abs() < 1e-13);
        assert!((d.rows[0][1] - s[0][1]).abs() < 1e-13);
    }

    #[test]
    fn b2_from_rest_equals_b1_linear() {
        // With d_w = 0 and n_d = 0.5 both benchmarks are the same system.
        let times = [0.1, 0.7];
        let a = b2(&B2::DEFAULT, [0.0; 4], 0.0, &times);
        let b = b1_linear(&QuarterCar::LINEAR, &times);
        for (x, y) in a.rows.iter().zip(&b.rows) {
            for j in 0..4 {
                assert!((x[j] - y[j]).abs() < 1e-12);
            }
        }
        // Restarting from an intermediate state continues the trajectory.
        let mid = b2(&B2::DEFAULT, [0.0; 4], 0.0, &[0.3]);
        let s: [f64; 4] = [
            mid.rows[0][0],
            mid.rows[0][1],
            mid.rows[0][2],
            mid.rows[0][3],
        ];
        let cont = b2(&B2::DEFAULT, s, 0.3, &[0.7]);
        for j in 0..4 {
            assert!((cont.rows[0][j] - a.rows[1][j]).abs() < 1e-12);
        }
    }
}
