//! B2: the quarter car of arnold2013 (Example 1, sec. 5) for Richardson
//! error estimates, with accurate subsystem solvers (RK4, micro step <= h_max,
//! inputs evaluated as polynomials at the stages) so that coupling error
//! dominates.
//!
//! m_c x_c'' = F_susp;  m_w x_w'' = F_tire - F_susp
//! F_susp = k_c (x_w - x_c) + d_c (v_w - v_c);  F_tire = k_w (z - x_w) + d_w (z' - v_w)
//! with z = z_road for t >= 0 (so z' = 0).

use fmu_kit::units::{KG, M, M_PER_S, N, N_PER_M, N_S_PER_M, S};
use fmu_kit::{
    DependencyKind, Inputs, LogLevel, Model, ModelSpec, StepError, Values, Variable, Vr,
};

use crate::solvers::rk4;

/// Published defaults.
pub mod defaults {
    /// Chassis mass.
    pub const M_C: f64 = 400.0;
    /// Wheel mass.
    pub const M_W: f64 = 40.0;
    /// Suspension stiffness.
    pub const K_C: f64 = 15000.0;
    /// Tyre stiffness.
    pub const K_W: f64 = 150000.0;
    /// Suspension damping.
    pub const D_C: f64 = 1000.0;
    /// Tyre damping.
    pub const D_W: f64 = 0.0;
    /// Road step height.
    pub const Z_ROAD: f64 = 0.1;
    /// RK4 micro step bound.
    pub const H_MAX: f64 = 1e-5;
}

fn h_max(vr: Vr) -> Variable {
    Variable::parameter(
        vr,
        "h_max",
        defaults::H_MAX,
        "Largest RK4 micro step (shortened to divide the interval)",
    )
    .unit(S)
    .min(0.0)
}

/// Wheel-side parameters and its acceleration.
struct WheelParams {
    m_w: f64,
    k_c: f64,
    d_c: f64,
    k_w: f64,
    d_w: f64,
    z: f64,
    h_max: f64,
    x0: f64,
    v0: f64,
}

struct WheelVrs {
    m_w: Vr,
    k_c: Vr,
    d_c: Vr,
    k_w: Vr,
    d_w: Vr,
    z: Vr,
    h_max: Vr,
    x0: Vr,
    v0: Vr,
}

impl WheelParams {
    fn read(v: &Values, r: &WheelVrs) -> Result<Self, String> {
        Ok(WheelParams {
            m_w: v.positive("m_w", r.m_w)?,
            k_c: v.non_negative("k_c", r.k_c)?,
            d_c: v.non_negative("d_c", r.d_c)?,
            k_w: v.non_negative("k_w", r.k_w)?,
            d_w: v.non_negative("d_w", r.d_w)?,
            z: v.finite("z_road", r.z)?,
            h_max: v.positive("h_max", r.h_max)?,
            x0: v.finite("x_w0", r.x0)?,
            v0: v.finite("v_w0", r.v0)?,
        })
    }
    fn f_susp(&self, x_w: f64, v_w: f64, x_c: f64, v_c: f64) -> f64 {
        self.k_c * (x_w - x_c) + self.d_c * (v_w - v_c)
    }
    fn accel(&self, x_w: f64, v_w: f64, x_c: f64, v_c: f64) -> f64 {
        let f_tire = self.k_w * (self.z - x_w) - self.d_w * v_w;
        (f_tire - self.f_susp(x_w, v_w, x_c, v_c)) / self.m_w
    }
    /// Derivatives of order 1 and 2 of (x_w, v_w, F_susp) from the state and
    /// the chassis inputs' derivatives (x_c, x_c', x_c''), (v_c, v_c', v_c'').
    fn derivs(
        &self,
        x_w: f64,
        v_w: f64,
        xc: [f64; 3],
        vc: [f64; 3],
    ) -> ([f64; 2], [f64; 2], [f64; 2]) {
        let a = self.accel(x_w, v_w, xc[0], vc[0]);
        let fs1 = self.k_c * (v_w - xc[1]) + self.d_c * (a - vc[1]);
        let f_tire1 = -self.k_w * v_w - self.d_w * a;
        let j = (f_tire1 - fs1) / self.m_w;
        let fs2 = self.k_c * (a - xc[2]) + self.d_c * (j - vc[2]);
        ([v_w, a], [a, j], [fs1, fs2])
    }
    fn step(&self, t: f64, h: f64, v: &mut Values, u: &Inputs, ids: (Vr, Vr, Vr, Vr)) {
        let (x_w, v_w, x_c, v_c) = ids;
        let mut x = [v[x_w], v[v_w]];
        rk4(t, h, self.h_max, &mut x, |s, x| {
            [x[1], self.accel(x[0], x[1], u.at(x_c, s), u.at(v_c, s))]
        });
        [v[x_w], v[v_w]] = x;
    }
}

fn wheel_params(spec: ModelSpec, r: &WheelVrs) -> ModelSpec {
    spec.var(
        Variable::parameter(r.m_w, "m_w", defaults::M_W, "Wheel mass")
            .unit(KG)
            .min(0.0),
    )
    .var(
        Variable::parameter(r.k_c, "k_c", defaults::K_C, "Suspension stiffness")
            .unit(N_PER_M)
            .min(0.0),
    )
    .var(
        Variable::parameter(r.d_c, "d_c", defaults::D_C, "Suspension damping")
            .unit(N_S_PER_M)
            .min(0.0),
    )
    .var(
        Variable::parameter(r.k_w, "k_w", defaults::K_W, "Tyre stiffness")
            .unit(N_PER_M)
            .min(0.0),
    )
    .var(
        Variable::parameter(r.d_w, "d_w", defaults::D_W, "Tyre damping")
            .unit(N_S_PER_M)
            .min(0.0),
    )
    .var(
        Variable::parameter(
            r.z,
            "z_road",
            defaults::Z_ROAD,
            "Road height (step at t = 0)",
        )
        .unit(M),
    )
    .var(h_max(r.h_max))
    .var(Variable::parameter(r.x0, "x_w0", 0.0, "Initial wheel position").unit(M))
    .var(Variable::parameter(r.v0, "v_w0", 0.0, "Initial wheel velocity").unit(M_PER_S))
}

/// `B2ChassisDD`: chassis, displacement-displacement coupling.
pub mod chassis_dd {
    use super::*;

    /// Input: wheel position.
    pub const X_W: Vr = 1;
    /// Input: wheel velocity.
    pub const V_W: Vr = 2;
    /// Output: chassis position.
    pub const X_C: Vr = 3;
    /// Output: chassis velocity.
    pub const V_C: Vr = 4;
    /// Chassis mass.
    pub const M_C: Vr = 5;
    /// Suspension stiffness.
    pub const K_C: Vr = 6;
    /// Suspension damping.
    pub const D_C: Vr = 7;
    /// RK4 micro step bound.
    pub const H_MAX: Vr = 8;
    /// Initial chassis position.
    pub const X_C0: Vr = 9;
    /// Initial chassis velocity.
    pub const V_C0: Vr = 10;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "B2ChassisDD",
            "B2 chassis, displacement-displacement coupling: m_c x_c'' = k_c (x_w - x_c) + d_c (v_w - v_c); RK4",
            build,
        )
        .var(Variable::input(X_W, "x_w", 0.0, "Wheel position").unit(M))
        .var(Variable::input(V_W, "v_w", 0.0, "Wheel velocity").unit(M_PER_S))
        .var(Variable::output(X_C, "x_c", "Chassis position").unit(M).depends_on(&[]).initial_depends_on(&[X_C0]))
        .var(Variable::output(V_C, "v_c", "Chassis velocity").unit(M_PER_S).depends_on(&[]).initial_depends_on(&[V_C0]))
        .var(Variable::parameter(M_C, "m_c", defaults::M_C, "Chassis mass").unit(KG).min(0.0))
        .var(Variable::parameter(K_C, "k_c", defaults::K_C, "Suspension stiffness").unit(N_PER_M).min(0.0))
        .var(Variable::parameter(D_C, "d_c", defaults::D_C, "Suspension damping").unit(N_S_PER_M).min(0.0))
        .var(h_max(H_MAX))
        .var(Variable::parameter(X_C0, "x_c0", 0.0, "Initial chassis position").unit(M))
        .var(Variable::parameter(V_C0, "v_c0", 0.0, "Initial chassis velocity").unit(M_PER_S))
        .experiment(0.0, 2.0, 1e-3)
        .output_derivatives(2)
    }

    struct ChassisDd {
        m_c: f64,
        k_c: f64,
        d_c: f64,
        h_max: f64,
        x0: f64,
        v0: f64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(ChassisDd {
            m_c: v.positive("m_c", M_C)?,
            k_c: v.non_negative("k_c", K_C)?,
            d_c: v.non_negative("d_c", D_C)?,
            h_max: v.positive("h_max", H_MAX)?,
            x0: v.finite("x_c0", X_C0)?,
            v0: v.finite("v_c0", V_C0)?,
        }))
    }

    impl ChassisDd {
        fn accel(&self, x_c: f64, v_c: f64, x_w: f64, v_w: f64) -> f64 {
            (self.k_c * (x_w - x_c) + self.d_c * (v_w - v_c)) / self.m_c
        }
    }

    impl Model for ChassisDd {
        fn init(&mut self, v: &mut Values) {
            v[X_C] = self.x0;
            v[V_C] = self.v0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let mut x = [v[X_C], v[V_C]];
            rk4(t, h, self.h_max, &mut x, |s, x| {
                [x[1], self.accel(x[0], x[1], u.at(X_W, s), u.at(V_W, s))]
            });
            [v[X_C], v[V_C]] = x;
            Ok(())
        }

        fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            let a = self.accel(v[X_C], v[V_C], u.value(X_W), u.value(V_W));
            let j = (self.k_c * (u.derivative(X_W, 1, t) - v[V_C])
                + self.d_c * (u.derivative(V_W, 1, t) - a))
                / self.m_c;
            match (vr, order) {
                (X_C, 1) => Some(v[V_C]),
                (X_C, 2) | (V_C, 1) => Some(a),
                (V_C, 2) => Some(j),
                _ => None,
            }
        }
    }
}

/// `B2WheelDD`: wheel, displacement-displacement coupling.
pub mod wheel_dd {
    use super::*;

    /// Input: chassis position.
    pub const X_C: Vr = 1;
    /// Input: chassis velocity.
    pub const V_C: Vr = 2;
    /// Output: wheel position.
    pub const X_W: Vr = 3;
    /// Output: wheel velocity.
    pub const V_W: Vr = 4;
    /// Wheel mass.
    pub const M_W: Vr = 5;
    /// Suspension stiffness.
    pub const K_C: Vr = 6;
    /// Suspension damping.
    pub const D_C: Vr = 7;
    /// Tyre stiffness.
    pub const K_W: Vr = 8;
    /// Tyre damping.
    pub const D_W: Vr = 9;
    /// Road height.
    pub const Z_ROAD: Vr = 10;
    /// RK4 micro step bound.
    pub const H_MAX: Vr = 11;
    /// Initial wheel position.
    pub const X_W0: Vr = 12;
    /// Initial wheel velocity.
    pub const V_W0: Vr = 13;

    const VRS: WheelVrs = WheelVrs {
        m_w: M_W,
        k_c: K_C,
        d_c: D_C,
        k_w: K_W,
        d_w: D_W,
        z: Z_ROAD,
        h_max: H_MAX,
        x0: X_W0,
        v0: V_W0,
    };

    /// The spec.
    pub fn spec() -> ModelSpec {
        let s = ModelSpec::new(
            "B2WheelDD",
            "B2 wheel, displacement-displacement coupling: m_w x_w'' = F_tire - F_susp(x_c, v_c); RK4",
            build,
        )
        .var(Variable::input(X_C, "x_c", 0.0, "Chassis position").unit(M))
        .var(Variable::input(V_C, "v_c", 0.0, "Chassis velocity").unit(M_PER_S))
        .var(Variable::output(X_W, "x_w", "Wheel position").unit(M).depends_on(&[]).initial_depends_on(&[X_W0]))
        .var(Variable::output(V_W, "v_w", "Wheel velocity").unit(M_PER_S).depends_on(&[]).initial_depends_on(&[V_W0]));
        wheel_params(s, &VRS)
            .experiment(0.0, 2.0, 1e-3)
            .output_derivatives(2)
    }

    struct WheelDd(WheelParams);

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(WheelDd(WheelParams::read(v, &VRS)?)))
    }

    impl Model for WheelDd {
        fn init(&mut self, v: &mut Values) {
            v[X_W] = self.0.x0;
            v[V_W] = self.0.v0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            self.0.step(t, h, v, u, (X_W, V_W, X_C, V_C));
            Ok(())
        }

        fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            let xc = [
                u.value(X_C),
                u.derivative(X_C, 1, t),
                u.derivative(X_C, 2, t),
            ];
            let vc = [
                u.value(V_C),
                u.derivative(V_C, 1, t),
                u.derivative(V_C, 2, t),
            ];
            let (d1, d2, _) = self.0.derivs(v[X_W], v[V_W], xc, vc);
            match (vr, order) {
                (X_W, 1) => Some(d1[0]),
                (V_W, 1) => Some(d1[1]),
                (X_W, 2) => Some(d2[0]),
                (V_W, 2) => Some(d2[1]),
                _ => None,
            }
        }
    }
}

/// `B2ChassisFD`: chassis, force-displacement coupling (input F_susp).
pub mod chassis_fd {
    use super::*;

    /// Input: suspension force on the chassis.
    pub const F_SUSP: Vr = 1;
    /// Output: chassis position.
    pub const X_C: Vr = 2;
    /// Output: chassis velocity.
    pub const V_C: Vr = 3;
    /// Chassis mass.
    pub const M_C: Vr = 4;
    /// RK4 micro step bound.
    pub const H_MAX: Vr = 5;
    /// Initial chassis position.
    pub const X_C0: Vr = 6;
    /// Initial chassis velocity.
    pub const V_C0: Vr = 7;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "B2ChassisFD",
            "B2 chassis, force-displacement coupling: m_c x_c'' = F_susp; RK4",
            build,
        )
        .var(Variable::input(F_SUSP, "F_susp", 0.0, "Suspension force on the chassis").unit(N))
        .var(
            Variable::output(X_C, "x_c", "Chassis position")
                .unit(M)
                .depends_on(&[])
                .initial_depends_on(&[X_C0]),
        )
        .var(
            Variable::output(V_C, "v_c", "Chassis velocity")
                .unit(M_PER_S)
                .depends_on(&[])
                .initial_depends_on(&[V_C0]),
        )
        .var(
            Variable::parameter(M_C, "m_c", defaults::M_C, "Chassis mass")
                .unit(KG)
                .min(0.0),
        )
        .var(h_max(H_MAX))
        .var(Variable::parameter(X_C0, "x_c0", 0.0, "Initial chassis position").unit(M))
        .var(Variable::parameter(V_C0, "v_c0", 0.0, "Initial chassis velocity").unit(M_PER_S))
        .experiment(0.0, 2.0, 1e-3)
        .output_derivatives(2)
    }

    struct ChassisFd {
        m_c: f64,
        h_max: f64,
        x0: f64,
        v0: f64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(ChassisFd {
            m_c: v.positive("m_c", M_C)?,
            h_max: v.positive("h_max", H_MAX)?,
            x0: v.finite("x_c0", X_C0)?,
            v0: v.finite("v_c0", V_C0)?,
        }))
    }

    impl Model for ChassisFd {
        fn init(&mut self, v: &mut Values) {
            v[X_C] = self.x0;
            v[V_C] = self.v0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let mut x = [v[X_C], v[V_C]];
            rk4(t, h, self.h_max, &mut x, |s, x| {
                [x[1], u.at(F_SUSP, s) / self.m_c]
            });
            [v[X_C], v[V_C]] = x;
            Ok(())
        }

        fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            match (vr, order) {
                (X_C, 1) => Some(v[V_C]),
                (X_C, 2) | (V_C, 1) => Some(u.value(F_SUSP) / self.m_c),
                (V_C, 2) => Some(u.derivative(F_SUSP, 1, t) / self.m_c),
                _ => None,
            }
        }
    }
}

/// `B2WheelFD`: wheel, force-displacement coupling (outputs F_susp: feed-through).
pub mod wheel_fd {
    use super::*;

    /// Input: chassis position.
    pub const X_C: Vr = 1;
    /// Input: chassis velocity.
    pub const V_C: Vr = 2;
    /// Output: wheel position.
    pub const X_W: Vr = 3;
    /// Output: wheel velocity.
    pub const V_W: Vr = 4;
    /// Output: suspension force on the chassis (feed-through from x_c, v_c).
    pub const F_SUSP: Vr = 5;
    /// Wheel mass.
    pub const M_W: Vr = 6;
    /// Suspension stiffness.
    pub const K_C: Vr = 7;
    /// Suspension damping.
    pub const D_C: Vr = 8;
    /// Tyre stiffness.
    pub const K_W: Vr = 9;
    /// Tyre damping.
    pub const D_W: Vr = 10;
    /// Road height.
    pub const Z_ROAD: Vr = 11;
    /// RK4 micro step bound.
    pub const H_MAX: Vr = 12;
    /// Initial wheel position.
    pub const X_W0: Vr = 13;
    /// Initial wheel velocity.
    pub const V_W0: Vr = 14;

    const VRS: WheelVrs = WheelVrs {
        m_w: M_W,
        k_c: K_C,
        d_c: D_C,
        k_w: K_W,
        d_w: D_W,
        z: Z_ROAD,
        h_max: H_MAX,
        x0: X_W0,
        v0: V_W0,
    };

    /// The spec.
    pub fn spec() -> ModelSpec {
        let s = ModelSpec::new(
            "B2WheelFD",
            "B2 wheel, force-displacement coupling: outputs x_w, v_w and F_susp = k_c (x_w - x_c) + d_c (v_w - v_c); RK4",
            build,
        )
        .var(Variable::input(X_C, "x_c", 0.0, "Chassis position").unit(M))
        .var(Variable::input(V_C, "v_c", 0.0, "Chassis velocity").unit(M_PER_S))
        .var(Variable::output(X_W, "x_w", "Wheel position").unit(M).depends_on(&[]).initial_depends_on(&[X_W0]))
        .var(Variable::output(V_W, "v_w", "Wheel velocity").unit(M_PER_S).depends_on(&[]).initial_depends_on(&[V_W0]))
        .var(
            Variable::output(F_SUSP, "F_susp", "Suspension force on the chassis k_c (x_w - x_c) + d_c (v_w - v_c)")
                .unit(N)
                .depends_on(&[(X_C, DependencyKind::Fixed), (V_C, DependencyKind::Fixed)])
                .initial_depends_on(&[X_C, V_C, K_C, D_C, X_W0, V_W0]),
        );
        wheel_params(s, &VRS)
            .experiment(0.0, 2.0, 1e-3)
            .output_derivatives(2)
    }

    struct WheelFd(WheelParams);

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(WheelFd(WheelParams::read(v, &VRS)?)))
    }

    impl Model for WheelFd {
        fn init(&mut self, v: &mut Values) {
            v[X_W] = self.0.x0;
            v[V_W] = self.0.v0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            self.0.step(t, h, v, u, (X_W, V_W, X_C, V_C));
            Ok(())
        }

        fn outputs(&self, _t: f64, v: &mut Values, u: &Inputs) {
            v[F_SUSP] = self.0.f_susp(v[X_W], v[V_W], u.value(X_C), u.value(V_C));
        }

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            let xc = [
                u.value(X_C),
                u.derivative(X_C, 1, t),
                u.derivative(X_C, 2, t),
            ];
            let vc = [
                u.value(V_C),
                u.derivative(V_C, 1, t),
                u.derivative(V_C, 2, t),
            ];
            let (d1, d2, fs) = self.0.derivs(v[X_W], v[V_W], xc, vc);
            match (vr, order) {
                (X_W, 1) => Some(d1[0]),
                (V_W, 1) => Some(d1[1]),
                (X_W, 2) => Some(d2[0]),
                (V_W, 2) => Some(d2[1]),
                (F_SUSP, 1) => Some(fs[0]),
                (F_SUSP, 2) => Some(fs[1]),
                _ => None,
            }
        }

        fn partial_derivative(&self, output: Vr, input: Vr, _v: &Values) -> f64 {
            match (output, input) {
                (F_SUSP, X_C) => -self.0.k_c,
                (F_SUSP, V_C) => -self.0.d_c,
                _ => 0.0,
            }
        }
    }
}
