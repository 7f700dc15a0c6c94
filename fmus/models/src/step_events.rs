//! `StepEvents` (Model Exchange only): a sawtooth reset by step events, the
//! test model of `completedIntegratorStep`.
//!
//! x' = rate. The model checks x only when the importer completes an
//! integrator step (`fmi2CompletedIntegratorStep` /
//! `fmi3CompletedIntegratorStep`, which it needs:
//! `completedIntegratorStepNotNeeded="false"`, `needsCompletedIntegratorStep="true"`):
//! a completed step with x >= x_max asks for Event Mode (`enterEventMode`),
//! where x is reset to 0 and `resets` counts one. No event indicator, no
//! time event: when the reset happens depends on the importer's steps, as
//! for a dynamic state selection.
//!
//! Reference ([`crate::reference::step_events`]), for an importer that
//! completes its steps at the multiples of h: a reset every m = ceil(x_max
//! / (rate h)) steps, so after n steps resets = floor(n / m) and x = rate h
//! (n mod m). With the defaults (rate 1, x_max = 0.255) and h = 0.01: a
//! reset every 0.26 s (at 0.26, 0.52, 0.78, ...).

use fmu_kit::{
    ContinuousModel, ContinuousState, EventUpdate, Inputs, LogLevel, Model, ModelExchangeSpec,
    ModelSpec, StepEvent, Values, Variable, Vr,
};

/// Output (state): the sawtooth x.
pub const X: Vr = 1;
/// Local: der(x) = rate.
pub const DER_X: Vr = 2;
/// Output (Integer): the number of resets so far.
pub const RESETS: Vr = 3;
/// Parameter: the slope of x.
pub const RATE: Vr = 4;
/// Parameter: x at or above which a completed step asks for a reset.
pub const X_MAX: Vr = 5;

/// The spec.
pub fn spec() -> ModelSpec {
    ModelSpec::new(
        "StepEvents",
        "Step events (Model Exchange only): x' = rate; a completed integrator step with x >= x_max asks for Event Mode, where x is reset to 0",
        build,
    )
    .var(Variable::output(X, "x", "Sawtooth, reset at step events").depends_on(&[]).initial_depends_on(&[]))
    .var(Variable::local(DER_X, "der(x)", "Derivative of x: rate").depends_on(&[]).initial_depends_on(&[RATE]))
    .var(Variable::int_output(RESETS, "resets", "Number of resets so far").depends_on(&[]))
    .var(Variable::parameter(RATE, "rate", 1.0, "Slope of x").min(0.0))
    .var(Variable::parameter(X_MAX, "x_max", 0.255, "x at or above which a completed step asks for a reset").min(0.0))
    .experiment(0.0, 1.0, 0.01)
    .model_exchange(
        ModelExchangeSpec::new()
            .state(ContinuousState::new(X, DER_X).reinit())
            .needs_completed_integrator_step()
            .partial_derivatives()
            .without_co_simulation(),
    )
}

struct StepEvents {
    rate: f64,
    x_max: f64,
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(StepEvents {
        rate: v.positive("rate", RATE)?,
        x_max: v.positive("x_max", X_MAX)?,
    }))
}

impl Model for StepEvents {
    fn init(&mut self, v: &mut Values) {
        v[X] = 0.0;
        v[RESETS] = 0.0;
    }

    fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

    fn model_exchange(&mut self) -> Option<&mut dyn ContinuousModel> {
        Some(self)
    }
}

impl ContinuousModel for StepEvents {
    fn derivatives(&mut self, _t: f64, v: &mut Values, _u: &Inputs) {
        v[DER_X] = self.rate;
    }

    fn completed_integrator_step(
        &mut self,
        _t: f64,
        v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> StepEvent {
        StepEvent {
            enter_event_mode: v[X] >= self.x_max,
            terminate_simulation: false,
        }
    }

    fn update_discrete_states(
        &mut self,
        t: f64,
        v: &mut Values,
        _u: &Inputs,
        log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        let reset = v[X] >= self.x_max;
        if reset {
            log(
                LogLevel::Info,
                &format!("StepEvents: x = {} reset at t = {t}", v[X]),
            );
            v[X] = 0.0;
            v[RESETS] += 1.0;
        }
        EventUpdate {
            values_of_continuous_states_changed: reset,
            ..EventUpdate::default()
        }
    }
}
