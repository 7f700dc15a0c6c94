//! B3: the three-mass oscillator of hafner sec. 3, three subsystems with
//! explicit Euler at fixed micro steps (the last micro step of a
//! communication step is shortened when h does not divide it).
//!
//! S1: m1 v1' = -c1 x1 - d1 v1 + l12
//! S2: m2 v2' = -c12 (x2 - x1) - d12 (v2 - v1) + l23,  l12 = c12 (x2 - x1) + d12 (v2 - v1)
//! S3: m3 v3' = -c23 (x3 - x2) - d23 (v3 - v2) - c3 x3 - d3 v3,  l23 = c23 (x3 - x2) + d23 (v3 - v2)
//! Defaults: scenario 1.

use fmu_kit::units::{KG, M, M_PER_S, N, N_PER_M, N_S_PER_M, S};
use fmu_kit::{
    DependencyKind, Inputs, LogLevel, Model, ModelSpec, StepError, Values, Variable, Vr,
};

use crate::solvers::euler_fixed;

fn mass(vr: Vr, name: &'static str) -> Variable {
    Variable::parameter(vr, name, 10.0, "Mass")
        .unit(KG)
        .min(0.0)
}
fn stiffness(vr: Vr, name: &'static str, x: f64) -> Variable {
    Variable::parameter(vr, name, x, "Spring stiffness")
        .unit(N_PER_M)
        .min(0.0)
}
fn damping(vr: Vr, name: &'static str, x: f64) -> Variable {
    Variable::parameter(vr, name, x, "Damping coefficient")
        .unit(N_S_PER_M)
        .min(0.0)
}
fn micro_h(vr: Vr, x: f64) -> Variable {
    Variable::parameter(vr, "h", x, "Explicit Euler micro step (last one shortened)")
        .unit(S)
        .min(0.0)
}

/// `ThreeMassS1`: mass 1 on spring c1 / damper d1, driven by l12.
pub mod s1 {
    use super::*;

    /// Input: coupling force from S2.
    pub const L12: Vr = 1;
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
    /// Euler micro step.
    pub const H: Vr = 9;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "ThreeMassS1",
            "B3 S1: m1 v1' = -c1 x1 - d1 v1 + l12; explicit Euler, micro step h",
            build,
        )
        .var(Variable::input(L12, "l12", 0.0, "Coupling force from S2").unit(N))
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
        .var(mass(M1, "m1"))
        .var(stiffness(C1, "c1", 1e-2))
        .var(damping(D1, "d1", 0.1))
        .var(Variable::parameter(X1_0, "x1_0", 1.0, "Initial position").unit(M))
        .var(Variable::parameter(V1_0, "v1_0", 0.0, "Initial velocity").unit(M_PER_S))
        .var(micro_h(H, 0.005))
        .experiment(0.0, 25.0, 0.1)
        .output_derivatives(2)
    }

    struct S1 {
        m: f64,
        c: f64,
        d: f64,
        x0: f64,
        v0: f64,
        h: f64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(S1 {
            m: v.positive("m1", M1)?,
            c: v.non_negative("c1", C1)?,
            d: v.non_negative("d1", D1)?,
            x0: v.finite("x1_0", X1_0)?,
            v0: v.finite("v1_0", V1_0)?,
            h: v.positive("h", H)?,
        }))
    }

    impl S1 {
        fn accel(&self, x: f64, v: f64, l: f64) -> f64 {
            (-self.c * x - self.d * v + l) / self.m
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
            euler_fixed(t, h, self.h, &mut x, |s, x| {
                [x[1], self.accel(x[0], x[1], u.at(L12, s))]
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
            let a = self.accel(v[X1], v[V1], u.value(L12));
            match (vr, order) {
                (X1, 1) => Some(v[V1]),
                (X1, 2) | (V1, 1) => Some(a),
                (V1, 2) => Some((-self.c * v[V1] - self.d * a + u.derivative(L12, 1, t)) / self.m),
                _ => None,
            }
        }
    }
}

/// `ThreeMassS2`: mass 2 with the coupling spring-damper 12.
pub mod s2 {
    use super::*;

    /// Input: position of mass 1.
    pub const X1: Vr = 1;
    /// Input: velocity of mass 1.
    pub const V1: Vr = 2;
    /// Input: coupling force from S3.
    pub const L23: Vr = 3;
    /// Output: position of mass 2.
    pub const X2: Vr = 4;
    /// Output: velocity of mass 2.
    pub const V2: Vr = 5;
    /// Output: coupling force on mass 1.
    pub const L12: Vr = 6;
    /// Mass.
    pub const M2: Vr = 7;
    /// Coupling spring 12.
    pub const C12: Vr = 8;
    /// Coupling damper 12.
    pub const D12: Vr = 9;
    /// Initial position.
    pub const X2_0: Vr = 10;
    /// Initial velocity.
    pub const V2_0: Vr = 11;
    /// Euler micro step.
    pub const H: Vr = 12;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "ThreeMassS2",
            "B3 S2: m2 v2' = -c12 (x2 - x1) - d12 (v2 - v1) + l23, l12 = c12 (x2 - x1) + d12 (v2 - v1); explicit Euler",
            build,
        )
        .var(Variable::input(X1, "x1", 1.0, "Position of mass 1").unit(M))
        .var(Variable::input(V1, "v1", 0.0, "Velocity of mass 1").unit(M_PER_S))
        .var(Variable::input(L23, "l23", 0.0, "Coupling force from S3").unit(N))
        .var(Variable::output(X2, "x2", "Position of mass 2").unit(M).depends_on(&[]).initial_depends_on(&[X2_0]))
        .var(Variable::output(V2, "v2", "Velocity of mass 2").unit(M_PER_S).depends_on(&[]).initial_depends_on(&[V2_0]))
        .var(
            Variable::output(L12, "l12", "Coupling force on mass 1: c12 (x2 - x1) + d12 (v2 - v1)")
                .unit(N)
                .depends_on(&[(X1, DependencyKind::Fixed), (V1, DependencyKind::Fixed)])
                .initial_depends_on(&[X1, V1, C12, D12, X2_0, V2_0]),
        )
        .var(mass(M2, "m2"))
        .var(stiffness(C12, "c12", 1e-1))
        .var(damping(D12, "d12", 0.4))
        .var(Variable::parameter(X2_0, "x2_0", 2.0, "Initial position").unit(M))
        .var(Variable::parameter(V2_0, "v2_0", 0.0, "Initial velocity").unit(M_PER_S))
        .var(micro_h(H, 0.0025))
        .experiment(0.0, 25.0, 0.1)
        .output_derivatives(1)
    }

    struct S2 {
        m: f64,
        c: f64,
        d: f64,
        x0: f64,
        v0: f64,
        h: f64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(S2 {
            m: v.positive("m2", M2)?,
            c: v.non_negative("c12", C12)?,
            d: v.non_negative("d12", D12)?,
            x0: v.finite("x2_0", X2_0)?,
            v0: v.finite("v2_0", V2_0)?,
            h: v.positive("h", H)?,
        }))
    }

    impl S2 {
        fn l12(&self, x2: f64, v2: f64, x1: f64, v1: f64) -> f64 {
            self.c * (x2 - x1) + self.d * (v2 - v1)
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
            euler_fixed(t, h, self.h, &mut x, |s, x| {
                let l12 = self.l12(x[0], x[1], u.at(X1, s), u.at(V1, s));
                [x[1], (-l12 + u.at(L23, s)) / self.m]
            });
            [v[X2], v[V2]] = x;
            Ok(())
        }

        fn outputs(&self, _t: f64, v: &mut Values, u: &Inputs) {
            v[L12] = self.l12(v[X2], v[V2], u.value(X1), u.value(V1));
        }

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            if order != 1 {
                return None;
            }
            let l12 = self.l12(v[X2], v[V2], u.value(X1), u.value(V1));
            let a = (-l12 + u.value(L23)) / self.m;
            match vr {
                X2 => Some(v[V2]),
                V2 => Some(a),
                L12 => Some(
                    self.c * (v[V2] - u.derivative(X1, 1, t))
                        + self.d * (a - u.derivative(V1, 1, t)),
                ),
                _ => None,
            }
        }

        fn partial_derivative(&self, output: Vr, input: Vr, _v: &Values) -> f64 {
            match (output, input) {
                (L12, X1) => -self.c,
                (L12, V1) => -self.d,
                _ => 0.0,
            }
        }
    }
}

/// `ThreeMassS3`: mass 3 with the coupling spring-damper 23 and its own
/// spring c3 / damper d3 to the wall.
pub mod s3 {
    use super::*;

    /// Input: position of mass 2.
    pub const X2: Vr = 1;
    /// Input: velocity of mass 2.
    pub const V2: Vr = 2;
    /// Output: position of mass 3.
    pub const X3: Vr = 3;
    /// Output: velocity of mass 3.
    pub const V3: Vr = 4;
    /// Output: coupling force on mass 2.
    pub const L23: Vr = 5;
    /// Mass.
    pub const M3: Vr = 6;
    /// Coupling spring 23.
    pub const C23: Vr = 7;
    /// Coupling damper 23.
    pub const D23: Vr = 8;
    /// Spring to the wall.
    pub const C3: Vr = 9;
    /// Damper to the wall.
    pub const D3: Vr = 10;
    /// Initial position.
    pub const X3_0: Vr = 11;
    /// Initial velocity.
    pub const V3_0: Vr = 12;
    /// Euler micro step.
    pub const H: Vr = 13;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "ThreeMassS3",
            "B3 S3: m3 v3' = -c23 (x3 - x2) - d23 (v3 - v2) - c3 x3 - d3 v3, l23 = c23 (x3 - x2) + d23 (v3 - v2); explicit Euler",
            build,
        )
        .var(Variable::input(X2, "x2", 2.0, "Position of mass 2").unit(M))
        .var(Variable::input(V2, "v2", 0.0, "Velocity of mass 2").unit(M_PER_S))
        .var(Variable::output(X3, "x3", "Position of mass 3").unit(M).depends_on(&[]).initial_depends_on(&[X3_0]))
        .var(Variable::output(V3, "v3", "Velocity of mass 3").unit(M_PER_S).depends_on(&[]).initial_depends_on(&[V3_0]))
        .var(
            Variable::output(L23, "l23", "Coupling force on mass 2: c23 (x3 - x2) + d23 (v3 - v2)")
                .unit(N)
                .depends_on(&[(X2, DependencyKind::Fixed), (V2, DependencyKind::Fixed)])
                .initial_depends_on(&[X2, V2, C23, D23, X3_0, V3_0]),
        )
        .var(mass(M3, "m3"))
        .var(stiffness(C23, "c23", 1.0))
        .var(damping(D23, "d23", 1.0))
        .var(stiffness(C3, "c3", 10.0))
        .var(damping(D3, "d3", 2.0))
        .var(Variable::parameter(X3_0, "x3_0", 3.0, "Initial position").unit(M))
        .var(Variable::parameter(V3_0, "v3_0", 0.0, "Initial velocity").unit(M_PER_S))
        .var(micro_h(H, 0.00125))
        .experiment(0.0, 25.0, 0.1)
        .output_derivatives(1)
    }

    struct S3 {
        m: f64,
        c23: f64,
        d23: f64,
        c3: f64,
        d3: f64,
        x0: f64,
        v0: f64,
        h: f64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(S3 {
            m: v.positive("m3", M3)?,
            c23: v.non_negative("c23", C23)?,
            d23: v.non_negative("d23", D23)?,
            c3: v.non_negative("c3", C3)?,
            d3: v.non_negative("d3", D3)?,
            x0: v.finite("x3_0", X3_0)?,
            v0: v.finite("v3_0", V3_0)?,
            h: v.positive("h", H)?,
        }))
    }

    impl S3 {
        fn l23(&self, x3: f64, v3: f64, x2: f64, v2: f64) -> f64 {
            self.c23 * (x3 - x2) + self.d23 * (v3 - v2)
        }
        fn accel(&self, x3: f64, v3: f64, x2: f64, v2: f64) -> f64 {
            (-self.l23(x3, v3, x2, v2) - self.c3 * x3 - self.d3 * v3) / self.m
        }
    }

    impl Model for S3 {
        fn init(&mut self, v: &mut Values) {
            v[X3] = self.x0;
            v[V3] = self.v0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let mut x = [v[X3], v[V3]];
            euler_fixed(t, h, self.h, &mut x, |s, x| {
                [x[1], self.accel(x[0], x[1], u.at(X2, s), u.at(V2, s))]
            });
            [v[X3], v[V3]] = x;
            Ok(())
        }

        fn outputs(&self, _t: f64, v: &mut Values, u: &Inputs) {
            v[L23] = self.l23(v[X3], v[V3], u.value(X2), u.value(V2));
        }

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            if order != 1 {
                return None;
            }
            let a = self.accel(v[X3], v[V3], u.value(X2), u.value(V2));
            match vr {
                X3 => Some(v[V3]),
                V3 => Some(a),
                L23 => Some(
                    self.c23 * (v[V3] - u.derivative(X2, 1, t))
                        + self.d23 * (a - u.derivative(V2, 1, t)),
                ),
                _ => None,
            }
        }

        fn partial_derivative(&self, output: Vr, input: Vr, _v: &Values) -> f64 {
            match (output, input) {
                (L23, X2) => -self.c23,
                (L23, V2) => -self.d23,
                _ => 0.0,
            }
        }
    }
}
