//! B1 (the quarter car, linear or with the nonlinear damper) co-simulated
//! by the fixed-step master's scheme, Jacobi with zero-order hold, written
//! from the model equations (`fmus/models/src/quarter_car.rs`, Table II
//! parameters: forward Euler with `micro_steps` micro steps, the chassis
//! of reticulation A exact for its held force) independently of the master
//! and of the FMUs: what the master's figures are checked against
//! (`tests/fixed_step.rs`, and through `ecco` `tests/adaptive.rs`), and the
//! linear one-step map whose spectral radius gives the stability limits
//! (`tests/sweep.rs`).
//!
//! States are taken relative to the road (the road step of 0.1 m is an
//! initial offset of the positions); each reticulation keeps both copies
//! of the position its two subsystems integrate.

use cosim_models::quarter_car::defaults::{D_C, K_C, K_W, M_C, M_W, Z_ROAD};

/// One macro step `h` of reticulation A (`b = false`) or B (`b = true`)
/// from state `x`, `micro` the forward-Euler micro steps of the chassis
/// (B) and of the wheel. The feed-through output `F_c` is evaluated right
/// after `doStep` with the held input (what the fixed-step master does),
/// or, with `fresh`, with the other FMU's velocity of the new
/// communication point.
///
/// A: `x = [v_c | z_c copy, z_w, v_w | F held, v_c held]`;
/// B: `x = [z_c - z_w copy, v_c | z_w, v_w | F held, v_w held]`.
pub fn step(b: bool, h: f64, micro: [usize; 2], fresh: bool, x: [f64; 6]) -> [f64; 6] {
    step_with(Damper::LINEAR, b, h, micro, fresh, x)
}

/// The suspension's damper: force `d_c g(v)` with the law of the B1
/// paper's nonlinear case, `g(v) = sign(v) |v|^p`, `p = 2 / (1 + 2 n_d)`
/// (`n_d = 0.5`: linear).
#[derive(Debug, Clone, Copy)]
pub struct Damper {
    /// Damping constant d_c.
    pub d_c: f64,
    /// Damping linearity n_d.
    pub n_d: f64,
}

impl Damper {
    /// The linear damper of Table II.
    pub const LINEAR: Damper = Damper { d_c: D_C, n_d: 0.5 };

    /// The damper force at relative velocity `v`.
    pub fn force(&self, v: f64) -> f64 {
        let p = 2.0 / (1.0 + 2.0 * self.n_d);
        if p == 1.0 {
            self.d_c * v
        } else {
            self.d_c * v.signum() * v.abs().powf(p)
        }
    }
}

/// [`step`] with the damper `damper`.
pub fn step_with(
    damper: Damper,
    b: bool,
    h: f64,
    micro: [usize; 2],
    fresh: bool,
    x: [f64; 6],
) -> [f64; 6] {
    let [n_chassis, n_wheel] = micro;
    if !b {
        let [v_c, mut zc, mut z_w, mut v_w, f, vh] = x;
        let v_c1 = v_c + f * h / M_C;
        let dt = h / n_wheel as f64;
        for _ in 0..n_wheel {
            let f_c = K_C * (zc - z_w) + damper.force(vh - v_w);
            let a_w = (-K_W * z_w + f_c) / M_W;
            (zc, z_w, v_w) = (zc + dt * vh, z_w + dt * v_w, v_w + dt * a_w);
        }
        let v_in = if fresh { v_c1 } else { vh };
        let f_c = K_C * (zc - z_w) + damper.force(v_in - v_w);
        [v_c1, zc, z_w, v_w, -f_c, v_c1]
    } else {
        let [mut d, mut v_c, mut z_w, mut v_w, f, vh] = x;
        let dt = h / n_chassis as f64;
        for _ in 0..n_chassis {
            let f_c = K_C * d + damper.force(v_c - vh);
            (d, v_c) = (d + dt * (v_c - vh), v_c - dt * f_c / M_C);
        }
        let dt = h / n_wheel as f64;
        for _ in 0..n_wheel {
            let a_w = (-K_W * z_w + f) / M_W;
            (z_w, v_w) = (z_w + dt * v_w, v_w + dt * a_w);
        }
        let v_in = if fresh { v_w } else { vh };
        let f_c = K_C * d + damper.force(v_c - v_in);
        [d, v_c, z_w, v_w, f_c, v_w]
    }
}

/// [`step`] of reticulation A with both subsystems integrated exactly
/// (the wheel's linear equations with the input held, by the matrix
/// exponential of `cosim_models::reference`): the coupling error alone,
/// what a master reaches with Model Exchange halves integrated to a tight
/// tolerance.
pub fn step_exact_a(h: f64, x: [f64; 6]) -> [f64; 6] {
    use cosim_models::reference::{Mat, affine_solution};
    let [v_c, zc, z_w, v_w, f, vh] = x;
    let v_c1 = v_c + f * h / M_C;
    // [z_c copy, z_w, v_w]' = A [..] + b for the held chassis velocity.
    let mut a = Mat::zeros(3);
    a.set(1, 2, 1.0);
    a.set(2, 0, K_C / M_W);
    a.set(2, 1, -(K_W + K_C) / M_W);
    a.set(2, 2, -D_C / M_W);
    let b = [vh, 0.0, D_C * vh / M_W];
    let end = affine_solution(&a, &b, &[zc, z_w, v_w], 0.0, &[h]).remove(0);
    let [zc, z_w, v_w] = [end[0], end[1], end[2]];
    let f_c = K_C * (zc - z_w) + D_C * (vh - v_w);
    [v_c1, zc, z_w, v_w, -f_c, v_c1]
}

/// The project's B1 scenarios (`scenarios/b1_quarter_car_*.toml`) this
/// module computes: the damper, the reticulation (B: true) and the micro
/// steps of the chassis and the wheel.
pub fn of_scenario(file: &str) -> Option<(Damper, bool, [usize; 2])> {
    // The nonlinear scenarios' suspension parameters.
    let nonlinear = Damper {
        d_c: 900.0,
        n_d: 1.5,
    };
    match file {
        "b1_quarter_car_a.toml" => Some((Damper::LINEAR, false, [10, 10])),
        "b1_quarter_car_a_nonlinear.toml" => Some((nonlinear, false, [10, 10])),
        "b1_quarter_car_b.toml" => Some((Damper::LINEAR, true, [10, 10])),
        "b1_quarter_car_b_nonlinear.toml" => Some((nonlinear, true, [10, 10])),
        "b1_quarter_car_b_coarse_wheel.toml" => Some((Damper::LINEAR, true, [10, 1])),
        _ => None,
    }
}

/// The state at the start: everything at rest, the wheel (and A's copy of
/// the chassis position) `Z_ROAD` below the road that has just stepped up.
pub fn start(b: bool) -> [f64; 6] {
    if b {
        [0.0, 0.0, -Z_ROAD, 0.0, 0.0, 0.0]
    } else {
        [0.0, -Z_ROAD, -Z_ROAD, 0.0, 0.0, 0.0]
    }
}

/// One communication point of a run: its time, the power the bond
/// transmits there (A: `F_c v_c`; B: `-F_c v_w`, the power at the wheel)
/// and the residual power of the step to it (eq. 10a, `u0 y0 + c u1 y1`
/// with the inputs held over the step and the outputs at its end).
#[derive(Debug, Clone, Copy)]
pub struct Point {
    /// Time, s.
    pub t: f64,
    /// Transmitted power, W.
    pub transmitted: f64,
    /// Residual power of the step, W.
    pub residual: f64,
}

/// Runs B1 from its start to `t_end` at macro step `h`: every
/// communication point after the start.
pub fn run(b: bool, h: f64, micro: [usize; 2], t_end: f64) -> Vec<Point> {
    run_with(Damper::LINEAR, b, h, micro, t_end)
}

/// [`run`] with the damper `damper`.
pub fn run_with(damper: Damper, b: bool, h: f64, micro: [usize; 2], t_end: f64) -> Vec<Point> {
    let steps = (t_end / h).round() as usize;
    let mut x = start(b);
    let mut out = Vec::with_capacity(steps);
    for k in 0..steps {
        let x1 = step_with(damper, b, h, micro, false, x);
        let (transmitted, residual) = if b {
            // Wheel: input F (the held x[4]), output v_w; chassis: input
            // v_w (held x[5]), output F_c; c = -1.
            (-x1[4] * x1[3], x[4] * x1[3] - x[5] * x1[4])
        } else {
            // Chassis: input F = -F_c (held x[4]), output v_c; wheel:
            // input v_c (held x[5]), output F_c = -x1[4]; c = 1.
            (-x1[4] * x1[0], x[4] * x1[0] - x[5] * x1[4])
        };
        out.push(Point {
            t: (k + 1) as f64 * h,
            transmitted,
            residual,
        });
        x = x1;
    }
    out
}

/// An input over one macro step as the FMU integrates it: its value at the
/// step start and its slope there, the first-order polynomial the master
/// delivers as value and first input derivative
/// (`fmi2SetRealInputDerivatives`; slope 0: zero-order hold). The FMUs
/// evaluate it at the offset `tau` from the step start
/// (`fmus/kit/src/input.rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    /// Value at the step start.
    pub value: f64,
    /// Slope over the step, per second.
    pub slope: f64,
}

impl Line {
    /// The value `value` held over the step.
    pub fn held(value: f64) -> Line {
        Line { value, slope: 0.0 }
    }

    /// The line through `(t_a, a)` and `(t_b, b)`, seen from the step
    /// start `t_b` (first-order extrapolation: `t_a` the communication
    /// point before).
    pub fn through(t_a: f64, a: f64, t_b: f64, b: f64) -> Line {
        Line {
            value: b,
            slope: (b - a) / (t_b - t_a),
        }
    }

    /// The value at `tau` after the step start.
    pub fn at(&self, tau: f64) -> f64 {
        self.value + self.slope * tau
    }
}

/// One macro step `h` of the subsystem whose coupled input is the force
/// and whose output the mass's velocity (A: the chassis, whose velocity
/// integrates the force line exactly; B: the wheel, forward Euler with
/// `micro[1]` micro steps, the force evaluated at each micro step's start,
/// as `solvers::euler_n` does), from the states `x` (the first four
/// entries of [`step`]'s layout; the other subsystem's are left as they
/// are). Independent of the other subsystem's step: Gauss-Seidel takes it
/// first.
pub fn step_mass(b: bool, h: f64, micro: [usize; 2], x: [f64; 4], force: Line) -> [f64; 4] {
    let mut x = x;
    if !b {
        x[0] += (force.value * h + force.slope * h * h / 2.0) / M_C;
    } else {
        let (mut z_w, mut v_w) = (x[2], x[3]);
        let dt = h / micro[1] as f64;
        for i in 0..micro[1] {
            let a_w = (-K_W * z_w + force.at(i as f64 * dt)) / M_W;
            (z_w, v_w) = (z_w + dt * v_w, v_w + dt * a_w);
        }
        (x[2], x[3]) = (z_w, v_w);
    }
    x
}

/// One macro step `h` of the subsystem whose coupled input is the other
/// mass's velocity and whose output the suspension force (A: wheel and
/// suspension, `micro[1]` micro steps; B: chassis and suspension,
/// `micro[0]`), forward Euler with the velocity evaluated at each micro
/// step's start; `x` as in [`step_mass`].
pub fn step_suspension(
    damper: Damper,
    b: bool,
    h: f64,
    micro: [usize; 2],
    x: [f64; 4],
    velocity: Line,
) -> [f64; 4] {
    if !b {
        let [v_c, mut zc, mut z_w, mut v_w] = x;
        let dt = h / micro[1] as f64;
        for i in 0..micro[1] {
            let vh = velocity.at(i as f64 * dt);
            let f_c = K_C * (zc - z_w) + damper.force(vh - v_w);
            let a_w = (-K_W * z_w + f_c) / M_W;
            (zc, z_w, v_w) = (zc + dt * vh, z_w + dt * v_w, v_w + dt * a_w);
        }
        [v_c, zc, z_w, v_w]
    } else {
        let [mut d, mut v_c, z_w, v_w] = x;
        let dt = h / micro[0] as f64;
        for i in 0..micro[0] {
            let vh = velocity.at(i as f64 * dt);
            let f_c = K_C * d + damper.force(v_c - vh);
            (d, v_c) = (d + dt * (v_c - vh), v_c - dt * f_c / M_C);
        }
        [d, v_c, z_w, v_w]
    }
}

/// The coupled outputs at the states `x`: the mass's velocity (A: `v_c`,
/// B: `v_w`) and the suspension force `F_c`, which feeds through from the
/// velocity input: `v_in` is that input's value at the step end (the FMU
/// carries its input polynomial on to the step end, fmu_kit's rule 3, and
/// computes `F_c` with it).
pub fn outputs(damper: Damper, b: bool, x: [f64; 4], v_in: f64) -> [f64; 2] {
    if !b {
        [x[0], K_C * (x[1] - x[2]) + damper.force(v_in - x[3])]
    } else {
        [x[3], K_C * x[0] + damper.force(x[1] - v_in)]
    }
}
