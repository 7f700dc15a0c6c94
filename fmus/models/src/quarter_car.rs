//! B1: the quarter car of sadjina2016 sec. IV, split two ways.
//!
//! m_c z_c'' = -F_c;  m_w z_w'' = -F_w + F_c
//! F_c = k_c (z_c - z_w) + d_c sign(v) |v|^(2/(1+2 n_d)),  v = z_c' - z_w'
//! F_w = k_w (z_w - z_road)
//!
//! Reticulation A: `QuarterCarChassis` (input F = -F_c, output v_c, exact)
//! and `QuarterCarWheelSuspension` (input v_c, output F_c, forward Euler).
//! Reticulation B: `QuarterCarChassisSuspension` (input v_w, output F_c) and
//! `QuarterCarWheel` (input F = +F_c, output v_w), both forward Euler.
//!
//! Each half also has a Model Exchange interface beside its Co-Simulation
//! one: its states and their derivatives are those of the monolithic
//! reference ([`crate::reference::b1_linear`], `b1_nonlinear`: z_c' = v_c,
//! z_w' = v_w, m_c v_c' = -F_c, m_w v_w' = -F_w + F_c), each half the
//! equations of its own states; a half that integrates a position from a
//! velocity input has it as a state with derivative = the input (z_c of
//! `QuarterCarWheelSuspension`, z_w of `QuarterCarChassisSuspension`).
//! Integrated together as one ODE with the couplings resolved in every
//! evaluation, the two halves of a reticulation are the monolithic
//! reference (the duplicated position following the same equation as its
//! original). Directional derivatives give the partial derivatives of the
//! state derivatives and outputs with respect to the states and inputs.

use fmu_kit::units::{KG, M, M_PER_S, M_PER_S2, N, N_PER_M, N_S_PER_M};
use fmu_kit::{
    ContinuousModel, ContinuousState, DependencyKind, Inputs, LogLevel, Model, ModelExchangeSpec,
    ModelSpec, StepError, Values, Variable, Vr,
};

use crate::solvers::euler_n;

/// Published defaults (linear case, Table II).
pub mod defaults {
    /// Chassis mass.
    pub const M_C: f64 = 400.0;
    /// Wheel mass.
    pub const M_W: f64 = 40.0;
    /// Suspension stiffness.
    pub const K_C: f64 = 15000.0;
    /// Tyre stiffness.
    pub const K_W: f64 = 150000.0;
    /// Damping constant.
    pub const D_C: f64 = 1000.0;
    /// Damping linearity (0.5: linear).
    pub const N_D: f64 = 0.5;
    /// Road step height.
    pub const Z_ROAD: f64 = 0.1;
    /// Forward-Euler micro steps per communication step.
    pub const MICRO_STEPS: i32 = 10;
}

/// Floor on |v| in d/dv of the damper law: for n_d > 0.5 the exponent
/// p = 2/(1+2 n_d) < 1 and p |v|^(p-1) is infinite at v = 0.
pub const DAMPER_SLOPE_FLOOR: f64 = 1e-9;

/// The damper force law g(v) = sign(v) |v|^p, p = 2 / (1 + 2 n_d).
pub fn damper(v: f64, n_d: f64) -> f64 {
    let p = 2.0 / (1.0 + 2.0 * n_d);
    v.signum() * v.abs().powf(p)
}

/// dg/dv = p |v|^(p-1), with |v| floored at [`DAMPER_SLOPE_FLOOR`].
pub fn damper_slope(v: f64, n_d: f64) -> f64 {
    let p = 2.0 / (1.0 + 2.0 * n_d);
    if p == 1.0 {
        1.0
    } else {
        p * v.abs().max(DAMPER_SLOPE_FLOOR).powf(p - 1.0)
    }
}

fn micro_param(vr: Vr) -> Variable {
    Variable::int_parameter(
        vr,
        "micro_steps",
        defaults::MICRO_STEPS,
        "Forward-Euler micro steps per communication step (micro step = dt / micro_steps)",
    )
    .min(1.0)
}

struct Susp {
    k_c: f64,
    d_c: f64,
    n_d: f64,
}

impl Susp {
    fn read(v: &Values, k_c: Vr, d_c: Vr, n_d: Vr) -> Result<Self, String> {
        Ok(Susp {
            k_c: v.non_negative("k_c", k_c)?,
            d_c: v.non_negative("d_c", d_c)?,
            n_d: v.non_negative("n_d", n_d)?,
        })
    }
    fn force(&self, z_c: f64, z_w: f64, v_c: f64, v_w: f64) -> f64 {
        self.k_c * (z_c - z_w) + self.d_c * damper(v_c - v_w, self.n_d)
    }
    fn force_rate(&self, v_c: f64, v_w: f64, a_c: f64, a_w: f64) -> f64 {
        self.k_c * (v_c - v_w) + self.d_c * damper_slope(v_c - v_w, self.n_d) * (a_c - a_w)
    }
    /// d F_c / d(z_c, z_w, v_c, v_w) at the velocities `v_c`, `v_w`.
    fn force_partials(&self, v_c: f64, v_w: f64) -> [f64; 4] {
        let slope = self.d_c * damper_slope(v_c - v_w, self.n_d);
        [self.k_c, -self.k_c, slope, -slope]
    }
}

/// Reticulation A, S1: the chassis alone, m_c v_c' = F, exact for polynomial F.
pub mod chassis {
    use super::*;

    /// Input: force on the chassis (u1 = -F_c).
    pub const F: Vr = 1;
    /// Output: chassis velocity.
    pub const V_C: Vr = 2;
    /// Local: chassis position.
    pub const Z_C: Vr = 3;
    /// Chassis mass.
    pub const M_C: Vr = 4;
    /// Local: der(v_c) = F / m_c (Model Exchange; v_c is der(z_c)).
    pub const DER_V_C: Vr = 5;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "QuarterCarChassis",
            "B1 reticulation A, S1: chassis mass, m_c v_c' = F, integrated exactly for polynomial F",
            build,
        )
        .var(Variable::input(F, "F", 0.0, "Force on the chassis (connect -F_c)").unit(N))
        .var(Variable::output(V_C, "v_c", "Chassis velocity").unit(M_PER_S).depends_on(&[]).initial_depends_on(&[]))
        .var(Variable::local(Z_C, "z_c", "Chassis position").unit(M))
        .var(Variable::parameter(M_C, "m_c", defaults::M_C, "Chassis mass").unit(KG).min(0.0))
        .var(
            Variable::local(DER_V_C, "der(v_c)", "Chassis acceleration F / m_c")
                .unit(M_PER_S2)
                .depends_on(&[(F, DependencyKind::Fixed)])
                .initial_depends_on(&[F, M_C]),
        )
        .experiment(0.0, 10.0, 1e-3)
        .output_derivatives(3)
        .model_exchange(
            ModelExchangeSpec::new()
                .state(ContinuousState::new(Z_C, V_C))
                .state(ContinuousState::new(V_C, DER_V_C))
                .partial_derivatives(),
        )
    }

    struct Chassis {
        m_c: f64,
    }

    impl ContinuousModel for Chassis {
        fn derivatives(&mut self, _t: f64, v: &mut Values, u: &Inputs) {
            v[DER_V_C] = u.value(F) / self.m_c;
        }

        fn partial_derivative(
            &self,
            unknown: Vr,
            known: Vr,
            _t: f64,
            _v: &Values,
            _u: &Inputs,
        ) -> f64 {
            if (unknown, known) == (DER_V_C, F) {
                1.0 / self.m_c
            } else {
                0.0
            }
        }
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(Chassis {
            m_c: v.positive("m_c", M_C)?,
        }))
    }

    impl Model for Chassis {
        fn init(&mut self, v: &mut Values) {
            v[Z_C] = 0.0;
            v[V_C] = 0.0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let v0 = v[V_C];
            v[Z_C] += v0 * h + u.integral2(F, t + h) / self.m_c;
            v[V_C] = v0 + u.integral(F, t + h) / self.m_c;
            Ok(())
        }

        fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            _v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            (vr == V_C && order >= 1).then(|| u.derivative(F, order as usize - 1, t) / self.m_c)
        }

        fn model_exchange(&mut self) -> Option<&mut dyn ContinuousModel> {
            Some(self)
        }
    }
}

/// Reticulation A, S2: wheel and suspension; integrates z_c from its input v_c.
pub mod wheel_suspension {
    use super::*;

    /// Input: chassis velocity.
    pub const V_C: Vr = 1;
    /// Output: suspension force F_c.
    pub const F_C: Vr = 2;
    /// Local: chassis position (integrated from v_c).
    pub const Z_C: Vr = 3;
    /// Local: wheel position.
    pub const Z_W: Vr = 4;
    /// Local: wheel velocity.
    pub const V_W: Vr = 5;
    /// Local: tyre force.
    pub const F_W: Vr = 6;
    /// Wheel mass.
    pub const M_W: Vr = 7;
    /// Suspension stiffness.
    pub const K_C: Vr = 8;
    /// Tyre stiffness.
    pub const K_W: Vr = 9;
    /// Damping constant.
    pub const D_C: Vr = 10;
    /// Damping linearity.
    pub const N_D: Vr = 11;
    /// Road height.
    pub const Z_ROAD: Vr = 12;
    /// Micro steps.
    pub const MICRO_STEPS: Vr = 13;
    /// Local: der(z_c) = v_c, the input (Model Exchange).
    pub const DER_Z_C: Vr = 14;
    /// Local: der(v_w) = (-F_w + F_c) / m_w (Model Exchange; v_w is der(z_w)).
    pub const DER_V_W: Vr = 15;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "QuarterCarWheelSuspension",
            "B1 reticulation A, S2: wheel, suspension spring-damper and tyre; forward Euler with micro_steps per step",
            build,
        )
        .var(Variable::input(V_C, "v_c", 0.0, "Chassis velocity").unit(M_PER_S))
        .var(
            Variable::output(F_C, "F_c", "Suspension force k_c (z_c - z_w) + d_c g(v_c - v_w)")
                .unit(N)
                .depends_on(&[
                    (V_C, DependencyKind::Dependent),
                    (Z_C, DependencyKind::Fixed),
                    (Z_W, DependencyKind::Fixed),
                    (V_W, DependencyKind::Dependent),
                ])
                .initial_depends_on(&[V_C, D_C, N_D]),
        )
        .var(Variable::local(Z_C, "z_c", "Chassis position (integrated from v_c)").unit(M))
        .var(Variable::local(Z_W, "z_w", "Wheel position").unit(M))
        .var(Variable::local(V_W, "v_w", "Wheel velocity").unit(M_PER_S))
        .var(Variable::local(F_W, "F_w", "Tyre force k_w (z_w - z_road)").unit(N))
        .var(Variable::parameter(M_W, "m_w", defaults::M_W, "Wheel mass").unit(KG).min(0.0))
        .var(Variable::parameter(K_C, "k_c", defaults::K_C, "Suspension stiffness").unit(N_PER_M).min(0.0))
        .var(Variable::parameter(K_W, "k_w", defaults::K_W, "Tyre stiffness").unit(N_PER_M).min(0.0))
        .var(Variable::parameter(D_C, "d_c", defaults::D_C, "Damping constant").unit(N_S_PER_M).min(0.0))
        .var(Variable::parameter(N_D, "n_d", defaults::N_D, "Damping linearity (0.5: linear)").min(0.0))
        .var(Variable::parameter(Z_ROAD, "z_road", defaults::Z_ROAD, "Road height (step at t = 0)").unit(M))
        .var(micro_param(MICRO_STEPS))
        .var(
            Variable::local(DER_Z_C, "der(z_c)", "Chassis velocity v_c (the input)")
                .unit(M_PER_S)
                .depends_on(&[(V_C, DependencyKind::Constant)])
                .initial_depends_on(&[V_C]),
        )
        .var(
            Variable::local(DER_V_W, "der(v_w)", "Wheel acceleration (-F_w + F_c) / m_w")
                .unit(M_PER_S2)
                .depends_on(&[
                    (V_C, DependencyKind::Dependent),
                    (Z_C, DependencyKind::Fixed),
                    (Z_W, DependencyKind::Fixed),
                    (V_W, DependencyKind::Dependent),
                ])
                .initial_depends_on(&[V_C, M_W, K_C, K_W, D_C, N_D, Z_ROAD]),
        )
        .experiment(0.0, 10.0, 1e-3)
        .output_derivatives(1)
        .model_exchange(
            ModelExchangeSpec::new()
                .state(ContinuousState::new(Z_C, DER_Z_C))
                .state(ContinuousState::new(Z_W, V_W))
                .state(ContinuousState::new(V_W, DER_V_W))
                .partial_derivatives(),
        )
    }

    impl WheelSusp {
        /// d F_c / d known (the suspension force's partial derivatives).
        fn force_partial(&self, known: Vr, v: &Values) -> f64 {
            let d = self.susp.force_partials(v[V_C], v[V_W]);
            [Z_C, Z_W, V_C, V_W]
                .iter()
                .position(|&k| k == known)
                .map_or(0.0, |i| d[i])
        }
    }

    impl ContinuousModel for WheelSusp {
        fn derivatives(&mut self, _t: f64, v: &mut Values, u: &Inputs) {
            let v_c = u.value(V_C);
            let f_c = self.susp.force(v[Z_C], v[Z_W], v_c, v[V_W]);
            let f_w = self.k_w * (v[Z_W] - self.z_road);
            v[DER_Z_C] = v_c;
            v[DER_V_W] = (-f_w + f_c) / self.m_w;
        }

        fn partial_derivative(
            &self,
            unknown: Vr,
            known: Vr,
            _t: f64,
            v: &Values,
            _u: &Inputs,
        ) -> f64 {
            match (unknown, known) {
                (DER_Z_C, V_C) => 1.0,
                (F_C, k) => self.force_partial(k, v),
                (DER_V_W, Z_W) => (-self.k_w + self.force_partial(Z_W, v)) / self.m_w,
                (DER_V_W, k) => self.force_partial(k, v) / self.m_w,
                _ => 0.0,
            }
        }
    }

    struct WheelSusp {
        m_w: f64,
        k_w: f64,
        z_road: f64,
        susp: Susp,
        n: usize,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(WheelSusp {
            m_w: v.positive("m_w", M_W)?,
            k_w: v.non_negative("k_w", K_W)?,
            z_road: v.finite("z_road", Z_ROAD)?,
            susp: Susp::read(v, K_C, D_C, N_D)?,
            n: v.int_at_least("micro_steps", MICRO_STEPS, 1)? as usize,
        }))
    }

    impl Model for WheelSusp {
        fn init(&mut self, v: &mut Values) {
            v[Z_C] = 0.0;
            v[Z_W] = 0.0;
            v[V_W] = 0.0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let mut x = [v[Z_C], v[Z_W], v[V_W]];
            euler_n(t, h, self.n, &mut x, |s, x| {
                let v_c = u.at(V_C, s);
                let f_c = self.susp.force(x[0], x[1], v_c, x[2]);
                let f_w = self.k_w * (x[1] - self.z_road);
                [v_c, x[2], (-f_w + f_c) / self.m_w]
            });
            [v[Z_C], v[Z_W], v[V_W]] = x;
            Ok(())
        }

        fn outputs(&self, _t: f64, v: &mut Values, u: &Inputs) {
            v[F_C] = self.susp.force(v[Z_C], v[Z_W], u.value(V_C), v[V_W]);
            v[F_W] = self.k_w * (v[Z_W] - self.z_road);
        }

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            if vr != F_C || order != 1 {
                return None;
            }
            let v_c = u.value(V_C);
            let f_c = self.susp.force(v[Z_C], v[Z_W], v_c, v[V_W]);
            let a_w = (-self.k_w * (v[Z_W] - self.z_road) + f_c) / self.m_w;
            Some(
                self.susp
                    .force_rate(v_c, v[V_W], u.derivative(V_C, 1, t), a_w),
            )
        }

        fn partial_derivative(&self, output: Vr, input: Vr, v: &Values) -> f64 {
            if output == F_C && input == V_C {
                self.susp.d_c * damper_slope(v[V_C] - v[V_W], self.susp.n_d)
            } else {
                0.0
            }
        }

        fn model_exchange(&mut self) -> Option<&mut dyn ContinuousModel> {
            Some(self)
        }
    }
}

/// Reticulation B, S1: chassis with spring-damper; integrates z_w from its input v_w.
pub mod chassis_suspension {
    use super::*;

    /// Input: wheel velocity.
    pub const V_W: Vr = 1;
    /// Output: suspension force F_c.
    pub const F_C: Vr = 2;
    /// Local: chassis position.
    pub const Z_C: Vr = 3;
    /// Local: chassis velocity.
    pub const V_C: Vr = 4;
    /// Local: wheel position (integrated from v_w).
    pub const Z_W: Vr = 5;
    /// Chassis mass.
    pub const M_C: Vr = 6;
    /// Suspension stiffness.
    pub const K_C: Vr = 7;
    /// Damping constant.
    pub const D_C: Vr = 8;
    /// Damping linearity.
    pub const N_D: Vr = 9;
    /// Micro steps.
    pub const MICRO_STEPS: Vr = 10;
    /// Local: der(v_c) = -F_c / m_c (Model Exchange; v_c is der(z_c)).
    pub const DER_V_C: Vr = 11;
    /// Local: der(z_w) = v_w, the input (Model Exchange).
    pub const DER_Z_W: Vr = 12;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "QuarterCarChassisSuspension",
            "B1 reticulation B, S1: chassis with suspension spring-damper; forward Euler with micro_steps per step",
            build,
        )
        .var(Variable::input(V_W, "v_w", 0.0, "Wheel velocity").unit(M_PER_S))
        .var(
            Variable::output(F_C, "F_c", "Suspension force k_c (z_c - z_w) + d_c g(v_c - v_w)")
                .unit(N)
                .depends_on(&[
                    (V_W, DependencyKind::Dependent),
                    (Z_C, DependencyKind::Fixed),
                    (V_C, DependencyKind::Dependent),
                    (Z_W, DependencyKind::Fixed),
                ])
                .initial_depends_on(&[V_W, D_C, N_D]),
        )
        .var(Variable::local(Z_C, "z_c", "Chassis position").unit(M))
        .var(Variable::local(V_C, "v_c", "Chassis velocity").unit(M_PER_S))
        .var(Variable::local(Z_W, "z_w", "Wheel position (integrated from v_w)").unit(M))
        .var(Variable::parameter(M_C, "m_c", defaults::M_C, "Chassis mass").unit(KG).min(0.0))
        .var(Variable::parameter(K_C, "k_c", defaults::K_C, "Suspension stiffness").unit(N_PER_M).min(0.0))
        .var(Variable::parameter(D_C, "d_c", defaults::D_C, "Damping constant").unit(N_S_PER_M).min(0.0))
        .var(Variable::parameter(N_D, "n_d", defaults::N_D, "Damping linearity (0.5: linear)").min(0.0))
        .var(micro_param(MICRO_STEPS))
        .var(
            Variable::local(DER_V_C, "der(v_c)", "Chassis acceleration -F_c / m_c")
                .unit(M_PER_S2)
                .depends_on(&[
                    (V_W, DependencyKind::Dependent),
                    (Z_C, DependencyKind::Fixed),
                    (V_C, DependencyKind::Dependent),
                    (Z_W, DependencyKind::Fixed),
                ])
                .initial_depends_on(&[V_W, M_C, D_C, N_D]),
        )
        .var(
            Variable::local(DER_Z_W, "der(z_w)", "Wheel velocity v_w (the input)")
                .unit(M_PER_S)
                .depends_on(&[(V_W, DependencyKind::Constant)])
                .initial_depends_on(&[V_W]),
        )
        .experiment(0.0, 10.0, 1e-3)
        .output_derivatives(1)
        .model_exchange(
            ModelExchangeSpec::new()
                .state(ContinuousState::new(Z_C, V_C))
                .state(ContinuousState::new(V_C, DER_V_C))
                .state(ContinuousState::new(Z_W, DER_Z_W))
                .partial_derivatives(),
        )
    }

    impl ChassisSusp {
        /// d F_c / d known (the suspension force's partial derivatives).
        fn force_partial(&self, known: Vr, v: &Values) -> f64 {
            let d = self.susp.force_partials(v[V_C], v[V_W]);
            [Z_C, Z_W, V_C, V_W]
                .iter()
                .position(|&k| k == known)
                .map_or(0.0, |i| d[i])
        }
    }

    impl ContinuousModel for ChassisSusp {
        fn derivatives(&mut self, _t: f64, v: &mut Values, u: &Inputs) {
            let v_w = u.value(V_W);
            let f_c = self.susp.force(v[Z_C], v[Z_W], v[V_C], v_w);
            v[DER_V_C] = -f_c / self.m_c;
            v[DER_Z_W] = v_w;
        }

        fn partial_derivative(
            &self,
            unknown: Vr,
            known: Vr,
            _t: f64,
            v: &Values,
            _u: &Inputs,
        ) -> f64 {
            match (unknown, known) {
                (DER_Z_W, V_W) => 1.0,
                (F_C, k) => self.force_partial(k, v),
                (DER_V_C, k) => -self.force_partial(k, v) / self.m_c,
                _ => 0.0,
            }
        }
    }

    struct ChassisSusp {
        m_c: f64,
        susp: Susp,
        n: usize,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(ChassisSusp {
            m_c: v.positive("m_c", M_C)?,
            susp: Susp::read(v, K_C, D_C, N_D)?,
            n: v.int_at_least("micro_steps", MICRO_STEPS, 1)? as usize,
        }))
    }

    impl Model for ChassisSusp {
        fn init(&mut self, v: &mut Values) {
            v[Z_C] = 0.0;
            v[V_C] = 0.0;
            v[Z_W] = 0.0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let mut x = [v[Z_C], v[V_C], v[Z_W]];
            euler_n(t, h, self.n, &mut x, |s, x| {
                let v_w = u.at(V_W, s);
                let f_c = self.susp.force(x[0], x[2], x[1], v_w);
                [x[1], -f_c / self.m_c, v_w]
            });
            [v[Z_C], v[V_C], v[Z_W]] = x;
            Ok(())
        }

        fn outputs(&self, _t: f64, v: &mut Values, u: &Inputs) {
            v[F_C] = self.susp.force(v[Z_C], v[Z_W], v[V_C], u.value(V_W));
        }

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            if vr != F_C || order != 1 {
                return None;
            }
            let v_w = u.value(V_W);
            let f_c = self.susp.force(v[Z_C], v[Z_W], v[V_C], v_w);
            Some(
                self.susp
                    .force_rate(v[V_C], v_w, -f_c / self.m_c, u.derivative(V_W, 1, t)),
            )
        }

        fn partial_derivative(&self, output: Vr, input: Vr, v: &Values) -> f64 {
            if output == F_C && input == V_W {
                -self.susp.d_c * damper_slope(v[V_C] - v[V_W], self.susp.n_d)
            } else {
                0.0
            }
        }

        fn model_exchange(&mut self) -> Option<&mut dyn ContinuousModel> {
            Some(self)
        }
    }
}

/// Reticulation B, S2: the wheel, m_w v_w' = -F_w + F.
pub mod wheel {
    use super::*;

    /// Input: force on the wheel from the suspension (= +F_c, gain +1).
    pub const F: Vr = 1;
    /// Output: wheel velocity.
    pub const V_W: Vr = 2;
    /// Local: wheel position.
    pub const Z_W: Vr = 3;
    /// Local: tyre force.
    pub const F_W: Vr = 4;
    /// Wheel mass.
    pub const M_W: Vr = 5;
    /// Tyre stiffness.
    pub const K_W: Vr = 6;
    /// Road height.
    pub const Z_ROAD: Vr = 7;
    /// Micro steps.
    pub const MICRO_STEPS: Vr = 8;
    /// Local: der(v_w) = (-F_w + F) / m_w (Model Exchange; v_w is der(z_w)).
    pub const DER_V_W: Vr = 9;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "QuarterCarWheel",
            "B1 reticulation B, S2: wheel and tyre, m_w v_w' = -F_w + F; forward Euler with micro_steps per step",
            build,
        )
        .var(Variable::input(F, "F", 0.0, "Force on the wheel from the suspension (connect +F_c)").unit(N))
        .var(Variable::output(V_W, "v_w", "Wheel velocity").unit(M_PER_S).depends_on(&[]).initial_depends_on(&[]))
        .var(Variable::local(Z_W, "z_w", "Wheel position").unit(M))
        .var(Variable::local(F_W, "F_w", "Tyre force k_w (z_w - z_road)").unit(N))
        .var(Variable::parameter(M_W, "m_w", defaults::M_W, "Wheel mass").unit(KG).min(0.0))
        .var(Variable::parameter(K_W, "k_w", defaults::K_W, "Tyre stiffness").unit(N_PER_M).min(0.0))
        .var(Variable::parameter(Z_ROAD, "z_road", defaults::Z_ROAD, "Road height (step at t = 0)").unit(M))
        .var(micro_param(MICRO_STEPS))
        .var(
            Variable::local(DER_V_W, "der(v_w)", "Wheel acceleration (-F_w + F) / m_w")
                .unit(M_PER_S2)
                .depends_on(&[(F, DependencyKind::Fixed), (Z_W, DependencyKind::Fixed)])
                .initial_depends_on(&[F, M_W, K_W, Z_ROAD]),
        )
        .experiment(0.0, 10.0, 1e-3)
        .output_derivatives(3)
        .model_exchange(
            ModelExchangeSpec::new()
                .state(ContinuousState::new(Z_W, V_W))
                .state(ContinuousState::new(V_W, DER_V_W))
                .partial_derivatives(),
        )
    }

    impl ContinuousModel for Wheel {
        fn derivatives(&mut self, _t: f64, v: &mut Values, u: &Inputs) {
            v[DER_V_W] = (-self.k_w * (v[Z_W] - self.z_road) + u.value(F)) / self.m_w;
        }

        fn partial_derivative(
            &self,
            unknown: Vr,
            known: Vr,
            _t: f64,
            _v: &Values,
            _u: &Inputs,
        ) -> f64 {
            match (unknown, known) {
                (DER_V_W, F) => 1.0 / self.m_w,
                (DER_V_W, Z_W) => -self.k_w / self.m_w,
                _ => 0.0,
            }
        }
    }

    struct Wheel {
        m_w: f64,
        k_w: f64,
        z_road: f64,
        n: usize,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(Wheel {
            m_w: v.positive("m_w", M_W)?,
            k_w: v.non_negative("k_w", K_W)?,
            z_road: v.finite("z_road", Z_ROAD)?,
            n: v.int_at_least("micro_steps", MICRO_STEPS, 1)? as usize,
        }))
    }

    impl Model for Wheel {
        fn init(&mut self, v: &mut Values) {
            v[Z_W] = 0.0;
            v[V_W] = 0.0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let mut x = [v[Z_W], v[V_W]];
            euler_n(t, h, self.n, &mut x, |s, x| {
                let f_w = self.k_w * (x[0] - self.z_road);
                [x[1], (-f_w + u.at(F, s)) / self.m_w]
            });
            [v[Z_W], v[V_W]] = x;
            Ok(())
        }

        fn outputs(&self, _t: f64, v: &mut Values, _u: &Inputs) {
            v[F_W] = self.k_w * (v[Z_W] - self.z_road);
        }

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            if vr != V_W {
                return None;
            }
            // v_w^(k) = (-k_w z_w^(k-1) + F^(k-1)) / m_w, z_w^(j) = v_w^(j-1)
            let a = (-self.k_w * (v[Z_W] - self.z_road) + u.value(F)) / self.m_w;
            let j = (-self.k_w * v[V_W] + u.derivative(F, 1, t)) / self.m_w;
            let s = (-self.k_w * a + u.derivative(F, 2, t)) / self.m_w;
            match order {
                1 => Some(a),
                2 => Some(j),
                3 => Some(s),
                _ => None,
            }
        }

        fn model_exchange(&mut self) -> Option<&mut dyn ContinuousModel> {
            Some(self)
        }
    }
}
