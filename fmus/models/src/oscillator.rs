//! B5: the mass-spring(-damper) oscillator of kyllingstad sec. 2.1, split
//! into a mass (input force, output velocity) and a spring or spring-damper
//! (input velocity, output force). Initial state: x = 1 m, v = 0, so 0.5 J
//! is stored in the spring (the paper: "a state where an energy ... is
//! stored in the spring").

use fmu_kit::units::{KG, M, M_PER_S, N, N_PER_M, N_S_PER_M};
use fmu_kit::{
    DependencyKind, Inputs, LogLevel, Model, ModelSpec, StepError, Values, Variable, Vr,
};

use crate::solvers::euler_n;

/// `Mass`: m v' = F, x' = v, integrated exactly for the polynomial force.
pub mod mass {
    use super::*;

    /// Input: force on the mass.
    pub const F: Vr = 1;
    /// Output: velocity.
    pub const V: Vr = 2;
    /// Local: position.
    pub const X: Vr = 3;
    /// Mass.
    pub const M_: Vr = 4;
    /// Initial position.
    pub const X0: Vr = 5;
    /// Initial velocity.
    pub const V0: Vr = 6;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "Mass",
            "B5 mass: m v' = F, x' = v, exact for polynomial F; output v",
            build,
        )
        .var(Variable::input(F, "F", 0.0, "Force on the mass").unit(N))
        .var(
            Variable::output(V, "v", "Velocity")
                .unit(M_PER_S)
                .depends_on(&[])
                .initial_depends_on(&[V0]),
        )
        .var(Variable::local(X, "x", "Position").unit(M))
        .var(Variable::parameter(M_, "m", 1.0, "Mass").unit(KG).min(0.0))
        .var(Variable::parameter(X0, "x0", 1.0, "Initial position").unit(M))
        .var(Variable::parameter(V0, "v0", 0.0, "Initial velocity").unit(M_PER_S))
        .experiment(0.0, 10.0, 0.1)
        .output_derivatives(3)
    }

    struct Mass {
        m: f64,
        x0: f64,
        v0: f64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(Mass {
            m: v.positive("m", M_)?,
            x0: v.finite("x0", X0)?,
            v0: v.finite("v0", V0)?,
        }))
    }

    impl Model for Mass {
        fn init(&mut self, v: &mut Values) {
            v[X] = self.x0;
            v[V] = self.v0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let v0 = v[V];
            v[X] += v0 * h + u.integral2(F, t + h) / self.m;
            v[V] = v0 + u.integral(F, t + h) / self.m;
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
            (vr == V && order >= 1).then(|| u.derivative(F, order as usize - 1, t) / self.m)
        }
    }
}

fn spring_common(spec: ModelSpec, v: Vr, f: Vr, x: Vr, k: Vr, x0: Vr) -> ModelSpec {
    spec.var(Variable::input(v, "v", 0.0, "Velocity of the spring end (the mass)").unit(M_PER_S))
        .var(Variable::output(f, "F", "Force on the mass").unit(N))
        .var(Variable::local(x, "x", "Spring elongation (position of the mass)").unit(M))
        .var(
            Variable::parameter(k, "k", 1.0, "Spring stiffness")
                .unit(N_PER_M)
                .min(0.0),
        )
        .var(Variable::parameter(x0, "x0", 1.0, "Initial elongation").unit(M))
}

fn micro(vr: Vr) -> Variable {
    Variable::int_parameter(
        vr,
        "micro_steps",
        10,
        "Forward-Euler micro steps per communication step",
    )
    .min(1.0)
}

/// `Spring`: x' = v (forward Euler), F = -k x (no feed-through).
pub mod spring {
    use super::*;

    /// Input: velocity.
    pub const V: Vr = 1;
    /// Output: force on the mass.
    pub const F: Vr = 2;
    /// Local: elongation.
    pub const X: Vr = 3;
    /// Stiffness.
    pub const K: Vr = 4;
    /// Initial elongation.
    pub const X0: Vr = 5;
    /// Micro steps.
    pub const MICRO_STEPS: Vr = 6;

    /// The spec.
    pub fn spec() -> ModelSpec {
        let mut s = spring_common(
            ModelSpec::new(
                "Spring",
                "B5 spring: x' = v (forward Euler micro steps), F = -k x",
                build,
            ),
            V,
            F,
            X,
            K,
            X0,
        )
        .var(micro(MICRO_STEPS))
        .experiment(0.0, 10.0, 0.1)
        .output_derivatives(3);
        if let Some(f) = s.variables.iter_mut().find(|x| x.vr == F) {
            *f = f.clone().depends_on(&[]).initial_depends_on(&[K, X0]);
        }
        s
    }

    struct Spring {
        k: f64,
        x0: f64,
        n: usize,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(Spring {
            k: v.non_negative("k", K)?,
            x0: v.finite("x0", X0)?,
            n: v.int_at_least("micro_steps", MICRO_STEPS, 1)? as usize,
        }))
    }

    impl Model for Spring {
        fn init(&mut self, v: &mut Values) {
            v[X] = self.x0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let mut x = [v[X]];
            euler_n(t, h, self.n, &mut x, |s, _| [u.at(V, s)]);
            v[X] = x[0];
            Ok(())
        }

        fn outputs(&self, _t: f64, v: &mut Values, _u: &Inputs) {
            v[F] = -self.k * v[X];
        }

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            _v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            (vr == F && order >= 1).then(|| -self.k * u.derivative(V, order as usize - 1, t))
        }
    }
}

/// `SpringDamper`: x' = v (forward Euler), F = -k x - d v (feed-through on v).
pub mod spring_damper {
    use super::*;

    /// Input: velocity.
    pub const V: Vr = 1;
    /// Output: force on the mass.
    pub const F: Vr = 2;
    /// Local: elongation.
    pub const X: Vr = 3;
    /// Stiffness.
    pub const K: Vr = 4;
    /// Initial elongation.
    pub const X0: Vr = 5;
    /// Damping.
    pub const D: Vr = 6;
    /// Micro steps.
    pub const MICRO_STEPS: Vr = 7;

    /// The spec.
    pub fn spec() -> ModelSpec {
        let mut s = spring_common(
            ModelSpec::new(
                "SpringDamper",
                "B5 spring-damper: x' = v (forward Euler micro steps), F = -k x - d v (feed-through)",
                build,
            ),
            V,
            F,
            X,
            K,
            X0,
        )
        .var(Variable::parameter(D, "d", 0.1, "Damping coefficient").unit(N_S_PER_M).min(0.0))
        .var(micro(MICRO_STEPS))
        .experiment(0.0, 10.0, 0.1)
        .output_derivatives(3);
        if let Some(f) = s.variables.iter_mut().find(|x| x.vr == F) {
            *f = f
                .clone()
                .depends_on(&[(V, DependencyKind::Fixed)])
                .initial_depends_on(&[V, K, X0, D]);
        }
        s
    }

    struct SpringDamper {
        k: f64,
        d: f64,
        x0: f64,
        n: usize,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(SpringDamper {
            k: v.non_negative("k", K)?,
            d: v.non_negative("d", D)?,
            x0: v.finite("x0", X0)?,
            n: v.int_at_least("micro_steps", MICRO_STEPS, 1)? as usize,
        }))
    }

    impl Model for SpringDamper {
        fn init(&mut self, v: &mut Values) {
            v[X] = self.x0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let mut x = [v[X]];
            euler_n(t, h, self.n, &mut x, |s, _| [u.at(V, s)]);
            v[X] = x[0];
            Ok(())
        }

        fn outputs(&self, _t: f64, v: &mut Values, u: &Inputs) {
            v[F] = -self.k * v[X] - self.d * u.value(V);
        }

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            _v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            (vr == F && order >= 1).then(|| {
                let k = order as usize;
                -self.k * u.derivative(V, k - 1, t) - self.d * u.derivative(V, k, t)
            })
        }

        fn partial_derivative(&self, output: Vr, input: Vr, _v: &Values) -> f64 {
            if output == F && input == V {
                -self.d
            } else {
                0.0
            }
        }
    }
}
