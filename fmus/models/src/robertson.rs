//! `Robertson` (Model Exchange only): Robertson's chemical kinetics, the
//! classic stiff test problem (Hairer & Wanner, Solving Ordinary
//! Differential Equations II, sec. IV.1):
//!
//! y1' = -k1 y1 + k3 y2 y3
//! y2' =  k1 y1 - k3 y2 y3 - k2 y2^2
//! y3' =  k2 y2^2
//!
//! with k1 = 0.04, k2 = 3e7, k3 = 1e4 and y(0) = (1, 0, 0); y1 + y2 + y3 = 1
//! for all t. The eigenvalues of the Jacobian reach about -3e3 while the
//! solution changes on a scale of seconds to years: an explicit method
//! needs steps below about 1e-3 s, a BDF method takes a few hundred steps
//! to t = 40. y2 stays below 4e-5 (its nominal is 1e-5, which an
//! importer's absolute tolerance follows). The model gives the Jacobian
//! (directional derivatives).
//!
//! The reference at t = 40 (Hairer & Wanner's table, checked by a tight
//! solve in the tests, [`crate::reference::ROBERTSON_T40`]):
//! y1 = 0.7158270687, y2 = 9.185534764e-6, y3 = 0.2841637457.

use fmu_kit::{
    ContinuousModel, ContinuousState, DependencyKind, Inputs, Model, ModelExchangeSpec, ModelSpec,
    Values, Variable, Vr,
};

/// Output (state): y1.
pub const Y1: Vr = 1;
/// Output (state): y2.
pub const Y2: Vr = 2;
/// Output (state): y3.
pub const Y3: Vr = 3;
/// Local: der(y1).
pub const DER_Y1: Vr = 4;
/// Local: der(y2).
pub const DER_Y2: Vr = 5;
/// Local: der(y3).
pub const DER_Y3: Vr = 6;
/// Parameter: k1.
pub const K1: Vr = 7;
/// Parameter: k2.
pub const K2: Vr = 8;
/// Parameter: k3.
pub const K3: Vr = 9;

/// The spec.
pub fn spec() -> ModelSpec {
    use DependencyKind::Dependent as D;
    ModelSpec::new(
        "Robertson",
        "Robertson's stiff chemical kinetics (Model Exchange only): y1' = -k1 y1 + k3 y2 y3, y2' = k1 y1 - k3 y2 y3 - k2 y2^2, y3' = k2 y2^2, y(0) = (1, 0, 0)",
        build,
    )
    .var(Variable::output(Y1, "y1", "Concentration of species 1").depends_on(&[]).initial_depends_on(&[]))
    .var(Variable::output(Y2, "y2", "Concentration of species 2").depends_on(&[]).initial_depends_on(&[]))
    .var(Variable::output(Y3, "y3", "Concentration of species 3").depends_on(&[]).initial_depends_on(&[]))
    .var(Variable::local(DER_Y1, "der(y1)", "-k1 y1 + k3 y2 y3").depends_on(&[(Y1, D), (Y2, D), (Y3, D)]))
    .var(Variable::local(DER_Y2, "der(y2)", "k1 y1 - k3 y2 y3 - k2 y2^2").depends_on(&[(Y1, D), (Y2, D), (Y3, D)]))
    .var(Variable::local(DER_Y3, "der(y3)", "k2 y2^2").depends_on(&[(Y2, D)]))
    .var(Variable::parameter(K1, "k1", 0.04, "Rate constant of y1 -> y2").min(0.0))
    .var(Variable::parameter(K2, "k2", 3e7, "Rate constant of 2 y2 -> y2 + y3").min(0.0))
    .var(Variable::parameter(K3, "k3", 1e4, "Rate constant of y2 + y3 -> y1 + y3").min(0.0))
    .experiment(0.0, 40.0, 0.1)
    .model_exchange(
        ModelExchangeSpec::new()
            .state(ContinuousState::new(Y1, DER_Y1))
            .state(ContinuousState::new(Y2, DER_Y2).nominal(1e-5))
            .state(ContinuousState::new(Y3, DER_Y3))
            .partial_derivatives()
            .without_co_simulation(),
    )
}

struct Robertson {
    k1: f64,
    k2: f64,
    k3: f64,
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(Robertson {
        k1: v.non_negative("k1", K1)?,
        k2: v.non_negative("k2", K2)?,
        k3: v.non_negative("k3", K3)?,
    }))
}

impl Model for Robertson {
    fn init(&mut self, v: &mut Values) {
        v[Y1] = 1.0;
        v[Y2] = 0.0;
        v[Y3] = 0.0;
    }

    fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

    fn model_exchange(&mut self) -> Option<&mut dyn ContinuousModel> {
        Some(self)
    }
}

impl ContinuousModel for Robertson {
    fn derivatives(&mut self, _t: f64, v: &mut Values, _u: &Inputs) {
        let (y1, y2, y3) = (v[Y1], v[Y2], v[Y3]);
        v[DER_Y1] = -self.k1 * y1 + self.k3 * y2 * y3;
        v[DER_Y2] = self.k1 * y1 - self.k3 * y2 * y3 - self.k2 * y2 * y2;
        v[DER_Y3] = self.k2 * y2 * y2;
    }

    fn partial_derivative(&self, unknown: Vr, known: Vr, _t: f64, v: &Values, _u: &Inputs) -> f64 {
        let (y2, y3) = (v[Y2], v[Y3]);
        match (unknown, known) {
            (DER_Y1, Y1) => -self.k1,
            (DER_Y1, Y2) => self.k3 * y3,
            (DER_Y1, Y3) => self.k3 * y2,
            (DER_Y2, Y1) => self.k1,
            (DER_Y2, Y2) => -self.k3 * y3 - 2.0 * self.k2 * y2,
            (DER_Y2, Y3) => -self.k3 * y2,
            (DER_Y3, Y2) => 2.0 * self.k2 * y2,
            _ => 0.0,
        }
    }
}
