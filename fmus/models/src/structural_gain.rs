//! `StructuralGain` (FMI 3 only): `y = k * n * u` with direct feed-through,
//! where `n` is a structural parameter (`causality="structuralParameter"`,
//! UInt64, fixed) and `k` an ordinary parameter, for testing an importer's
//! use of FMI 3 Configuration Mode.
//!
//! `n` can be set only in Configuration Mode (`fmi3EnterConfigurationMode`
//! from Instantiated, `fmi3ExitConfigurationMode` back); setting it in any
//! other state is refused as an illegal call sequence, and so is setting
//! anything else (`u`, `k`) in Configuration Mode (see
//! `fmu_kit::instance::settable_in`). `k` is set as usual, in Instantiated
//! or Initialization Mode. Both are validated when initialization ends:
//! `n must be >= 1, got 0`, `k must be finite, got inf`.
//!
//! The output follows the current input value (`y` reflects an input set
//! after the step); `dy/du = k n` (directional derivatives). Inputs are
//! held over each step (no intermediate update), so the first output
//! derivative, `k n u'`, is 0.

use fmu_kit::{
    DependencyKind, Inputs, LogLevel, Model, ModelSpec, StepError, Values, VarType, Variable, Vr,
};

/// Input u (Float64), start 0.
pub const U: Vr = 1;
/// Output y = k n u (Float64, direct feed-through from u).
pub const Y: Vr = 2;
/// Parameter k (Float64, fixed), start 1.
pub const K: Vr = 3;
/// Structural parameter n (UInt64, fixed), start 1, n >= 1.
pub const N: Vr = 4;

/// The spec.
pub fn spec() -> ModelSpec {
    ModelSpec::new(
        "StructuralGain",
        "FMI 3 only: y = k * n * u (direct feed-through); n is a structural parameter (UInt64, settable in Configuration Mode only), k an ordinary parameter",
        build,
    )
    .var(Variable::input(U, "u", 0.0, "Input"))
    .var(
        Variable::output(Y, "y", "Output y = k * n * u")
            .depends_on(&[(U, DependencyKind::Fixed)])
            .initial_depends_on(&[U, K, N]),
    )
    .var(Variable::parameter(K, "k", 1.0, "Gain (ordinary parameter)"))
    .var(
        Variable::structural_parameter(
            N,
            "n",
            1.0,
            "Integer gain factor >= 1 (structural parameter: set in Configuration Mode only)",
        )
        .typed(VarType::UInt64)
        .min(1.0),
    )
    .experiment(0.0, 10.0, 0.01)
    .output_derivatives(1)
    .interpolate_inputs(false)
}

struct StructuralGain {
    /// k * n.
    gain: f64,
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    let k = v.finite("k", K)?;
    let n = v.int_at_least("n", N, 1)?;
    Ok(Box::new(StructuralGain { gain: k * n as f64 }))
}

impl Model for StructuralGain {
    fn init(&mut self, _v: &mut Values) {}

    fn do_step(
        &mut self,
        _t: f64,
        _h: f64,
        _v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<(), StepError> {
        Ok(())
    }

    fn outputs(&self, _t: f64, v: &mut Values, u: &Inputs) {
        v[Y] = self.gain * u.value(U);
    }

    fn output_derivative(
        &self,
        vr: Vr,
        order: u32,
        t: f64,
        _v: &Values,
        u: &Inputs,
    ) -> Option<f64> {
        (vr == Y && order == 1).then(|| self.gain * u.derivative(U, 1, t))
    }

    fn partial_derivative(&self, output: Vr, input: Vr, _v: &Values) -> f64 {
        if output == Y && input == U {
            self.gain
        } else {
            0.0
        }
    }
}
