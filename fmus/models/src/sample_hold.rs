//! `SampleHold` (Co-Simulation with event mode): events from inputs, the
//! test model of input changes handled in FMI 3 Co-Simulation's Event
//! Mode.
//!
//! y takes the value of the input u at each event update, and holds it in
//! between: with `eventModeUsed`, y = u only in Event Mode (each
//! `fmi3UpdateDiscreteStates`, including the initial one), so y keeps its
//! value through every step however u changes in Step Mode. Without Event
//! Mode (FMI 2, `eventModeUsed = false`) the kit runs the update at the
//! start of every step: y follows u at each communication point, y after
//! the step from t_i is the u set at t_i (a zero-order hold on the
//! communication grid). No time or state events of its own.
//!
//! Reference: y = the value of u at the last update (the tests keep it).

use fmu_kit::{
    EventModel, EventStep, EventUpdate, Inputs, LogLevel, Model, ModelSpec, StepError, Values,
    Variable, Vr,
};

/// Input: the sampled signal u.
pub const U: Vr = 1;
/// Output (discrete): the held sample y.
pub const Y: Vr = 2;

/// The spec.
pub fn spec() -> ModelSpec {
    ModelSpec::new(
        "SampleHold",
        "Events from inputs (Co-Simulation with event mode): y := u at each event update (Event Mode), held in Step Mode",
        build,
    )
    .var(Variable::input(U, "u", 0.0, "Sampled signal"))
    .var(
        Variable::output(Y, "y", "Held sample: u at the last event update")
            .discrete()
            .depends_on(&[]),
    )
    .experiment(0.0, 1.0, 0.1)
    .output_derivatives(1)
    .interpolate_inputs(false)
    .directional_derivatives(false)
    .event_mode()
}

struct SampleHold;

fn build(_v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(SampleHold))
}

impl Model for SampleHold {
    fn init(&mut self, v: &mut Values) {
        v[Y] = v[U];
    }

    fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

    /// y is held between the events: its derivatives are 0.
    fn output_derivative(
        &self,
        vr: Vr,
        _order: u32,
        _t: f64,
        _v: &Values,
        _u: &Inputs,
    ) -> Option<f64> {
        (vr == Y).then_some(0.0)
    }

    fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
        Some(self)
    }
}

impl EventModel for SampleHold {
    fn step_until_event(
        &mut self,
        _t: f64,
        t_end: f64,
        _v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<EventStep, StepError> {
        Ok(EventStep::completed(t_end))
    }

    fn update_discrete_states(
        &mut self,
        _t: f64,
        v: &mut Values,
        u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        v[Y] = u.value(U);
        EventUpdate::default()
    }
}
