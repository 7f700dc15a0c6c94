//! B4: the two-mass oscillator of ifosmondi2019 sec. 4, with the stiff,
//! unbalanced parameter set of docs/benchmarks.md (the paper's figure was lost):
//! m1 = m2 = 1, c1 = 1e3, c2 = 1e5, ck = 1e5, d1 = 1, d2 = 10, dk = 10,
//! x1(0) = 0.1, other initial values 0. Accurate RK4 (micro step <= h_max).
//!
//! S1: m1 v1' = -c1 x1 - d1 v1 + f2
//! S2: m2 v2' = -c2 x2 - d2 v2 - f2,  f2 = ck (x2 - x1) + dk (v2 - v1)

use fmu_kit::units::{KG, M, M_PER_S, N, N_PER_M, N_S_PER_M, S};
use fmu_kit::{
    DependencyKind, Inputs, LogLevel, Model, ModelSpec, StepError, Values, Variable, Vr,
};

use crate::solvers::rk4;

fn h_max(vr: Vr) -> Variable {
    Variable::parameter(
        vr,
        "h_max",
        1e-5,
        "Largest RK4 micro step (shortened to divide the interval)",
    )
    .unit(S)
    .min(0.0)
}

/// `TwoMassS1`: mass 1 on spring c1 / damper d1, driven by the coupling force f2.
pub mod s1 {
    use super::*;

    /// Input: coupling force from S2.
    pub const F2: Vr = 1;
    /// Output: position of mass 1.
    pub const X1: Vr = 2;
    /// Output: velocity of mass 1.
    pub const V1: Vr = 3;
    /// Mass.
    pub const M1: Vr = 4;
    /// Spring to the wall.
    pub const C1: Vr = 5;
    /// Damper to the wall.
    pub const D1: Vr = 6;
    /// Initial position.
    pub const X1_0: Vr = 7;
    /// Initial velocity.
    pub const V1_0: Vr = 8;
    /// RK4 micro step bound.
    pub const H_MAX: Vr = 9;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "TwoMassS1",
            "B4 S1: m1 v1' = -c1 x1 - d1 v1 + f2; RK4",
            build,
        )
        .var(Variable::input(F2, "f2", 0.0, "Coupling force from S2").unit(N))
        .var(
            Variable::output(X1, "x1", "Position of mass 1")
                .unit(M)
                .depends_on(&[])
                .initial_depends_on(&[X1_0]),
        )
        .var(
            Variable::output(V1, "v1", "Velocity of mass 1")
                .unit(M_PER_S)
                .depends_on(&[])
                .initial_depends_on(&[V1_0]),
        )
        .var(Variable::parameter(M1, "m1", 1.0, "Mass").unit(KG).min(0.0))
        .var(
            Variable::parameter(C1, "c1", 1e3, "Spring to the wall")
                .unit(N_PER_M)
                .min(0.0),
        )
        .var(
            Variable::parameter(D1, "d1", 1.0, "Damper to the wall")
                .unit(N_S_PER_M)
                .min(0.0),
        )
        .var(Variable::parameter(X1_0, "x1_0", 0.1, "Initial position").unit(M))
        .var(Variable::parameter(V1_0, "v1_0", 0.0, "Initial velocity").unit(M_PER_S))
        .var(h_max(H_MAX))
        .experiment(0.0, 1.0, 1e-3)
        .output_derivatives(2)
    }

    struct S1 {
        m: f64,
        c: f64,
        d: f64,
        x0: f64,
        v0: f64,
        h_max: f64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(S1 {
            m: v.positive("m1", M1)?,
            c: v.non_negative("c1", C1)?,
            d: v.non_negative("d1", D1)?,
            x0: v.finite("x1_0", X1_0)?,
            v0: v.finite("v1_0", V1_0)?,
            h_max: v.positive("h_max", H_MAX)?,
        }))
    }

    impl S1 {
        fn accel(&self, x: f64, v: f64, f: f64) -> f64 {
            (-self.c * x - self.d * v + f) / self.m
        }
    }

    impl Model for S1 {
        fn init(&mut self, v: &mut Values) {
            v[X1] = self.x0;
            v[V1] = self.v0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let mut x = [v[X1], v[V1]];
            rk4(t, h, self.h_max, &mut x, |s, x| {
                [x[1], self.accel(x[0], x[1], u.at(F2, s))]
            });
            [v[X1], v[V1]] = x;
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
            let a = self.accel(v[X1], v[V1], u.value(F2));
            match (vr, order) {
                (X1, 1) => Some(v[V1]),
                (X1, 2) | (V1, 1) => Some(a),
                (V1, 2) => Some((-self.c * v[V1] - self.d * a + u.derivative(F2, 1, t)) / self.m),
                _ => None,
            }
        }
    }
}

/// `TwoMassS2`: mass 2 on spring c2 / damper d2 and the coupling ck / dk to mass 1.
pub mod s2 {
    use super::*;

    /// Input: position of mass 1.
    pub const X1: Vr = 1;
    /// Input: velocity of mass 1.
    pub const V1: Vr = 2;
    /// Output: coupling force on mass 1.
    pub const F2: Vr = 3;
    /// Local: position of mass 2.
    pub const X2: Vr = 4;
    /// Local: velocity of mass 2.
    pub const V2: Vr = 5;
    /// Mass.
    pub const M2: Vr = 6;
    /// Spring to the wall.
    pub const C2: Vr = 7;
    /// Damper to the wall.
    pub const D2: Vr = 8;
    /// Coupling spring.
    pub const CK: Vr = 9;
    /// Coupling damper.
    pub const DK: Vr = 10;
    /// Initial position.
    pub const X2_0: Vr = 11;
    /// Initial velocity.
    pub const V2_0: Vr = 12;
    /// RK4 micro step bound.
    pub const H_MAX: Vr = 13;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "TwoMassS2",
            "B4 S2: m2 v2' = -c2 x2 - d2 v2 - f2, f2 = ck (x2 - x1) + dk (v2 - v1); RK4",
            build,
        )
        .var(Variable::input(X1, "x1", 0.1, "Position of mass 1").unit(M))
        .var(Variable::input(V1, "v1", 0.0, "Velocity of mass 1").unit(M_PER_S))
        .var(
            Variable::output(
                F2,
                "f2",
                "Coupling force on mass 1: ck (x2 - x1) + dk (v2 - v1)",
            )
            .unit(N)
            .depends_on(&[(X1, DependencyKind::Fixed), (V1, DependencyKind::Fixed)])
            .initial_depends_on(&[X1, V1, CK, DK, X2_0, V2_0]),
        )
        .var(Variable::local(X2, "x2", "Position of mass 2").unit(M))
        .var(Variable::local(V2, "v2", "Velocity of mass 2").unit(M_PER_S))
        .var(Variable::parameter(M2, "m2", 1.0, "Mass").unit(KG).min(0.0))
        .var(
            Variable::parameter(C2, "c2", 1e5, "Spring to the wall")
                .unit(N_PER_M)
                .min(0.0),
        )
        .var(
            Variable::parameter(D2, "d2", 10.0, "Damper to the wall")
                .unit(N_S_PER_M)
                .min(0.0),
        )
        .var(
            Variable::parameter(CK, "ck", 1e5, "Coupling spring")
                .unit(N_PER_M)
                .min(0.0),
        )
        .var(
            Variable::parameter(DK, "dk", 10.0, "Coupling damper")
                .unit(N_S_PER_M)
                .min(0.0),
        )
        .var(Variable::parameter(X2_0, "x2_0", 0.0, "Initial position").unit(M))
        .var(Variable::parameter(V2_0, "v2_0", 0.0, "Initial velocity").unit(M_PER_S))
        .var(h_max(H_MAX))
        .experiment(0.0, 1.0, 1e-3)
        .output_derivatives(2)
    }

    struct S2 {
        m: f64,
        c: f64,
        d: f64,
        ck: f64,
        dk: f64,
        x0: f64,
        v0: f64,
        h_max: f64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(S2 {
            m: v.positive("m2", M2)?,
            c: v.non_negative("c2", C2)?,
            d: v.non_negative("d2", D2)?,
            ck: v.non_negative("ck", CK)?,
            dk: v.non_negative("dk", DK)?,
            x0: v.finite("x2_0", X2_0)?,
            v0: v.finite("v2_0", V2_0)?,
            h_max: v.positive("h_max", H_MAX)?,
        }))
    }

    impl S2 {
        fn f2(&self, x2: f64, v2: f64, x1: f64, v1: f64) -> f64 {
            self.ck * (x2 - x1) + self.dk * (v2 - v1)
        }
        fn accel(&self, x2: f64, v2: f64, x1: f64, v1: f64) -> f64 {
            (-self.c * x2 - self.d * v2 - self.f2(x2, v2, x1, v1)) / self.m
        }
    }

    impl Model for S2 {
        fn init(&mut self, v: &mut Values) {
            v[X2] = self.x0;
            v[V2] = self.v0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let mut x = [v[X2], v[V2]];
            rk4(t, h, self.h_max, &mut x, |s, x| {
                [x[1], self.accel(x[0], x[1], u.at(X1, s), u.at(V1, s))]
            });
            [v[X2], v[V2]] = x;
            Ok(())
        }

        fn outputs(&self, _t: f64, v: &mut Values, u: &Inputs) {
            v[F2] = self.f2(v[X2], v[V2], u.value(X1), u.value(V1));
        }

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            if vr != F2 {
                return None;
            }
            let (x1, v1) = (u.value(X1), u.value(V1));
            let (x1d, v1d) = (u.derivative(X1, 1, t), u.derivative(V1, 1, t));
            let a = self.accel(v[X2], v[V2], x1, v1);
            let f1 = self.ck * (v[V2] - x1d) + self.dk * (a - v1d);
            match order {
                1 => Some(f1),
                2 => {
                    let j = (-self.c * v[V2] - self.d * a - f1) / self.m;
                    Some(
                        self.ck * (a - u.derivative(X1, 2, t))
                            + self.dk * (j - u.derivative(V1, 2, t)),
                    )
                }
                _ => None,
            }
        }

        fn partial_derivative(&self, output: Vr, input: Vr, _v: &Values) -> f64 {
            match (output, input) {
                (F2, X1) => -self.ck,
                (F2, V1) => -self.dk,
                _ => 0.0,
            }
        }
    }
}
