//! `ThresholdTrigger` (FMI 3 only, Co-Simulation with event mode and
//! Clocks): a triggered output Clock, the event source of a clocked
//! partition elsewhere.
//!
//! The continuous input x is held over each communication step at the
//! value set at its start (no input derivatives). Let x_i be the value of x
//! when the i-th step starts (at t_i), and x_{-1} its value when
//! initialization ends. The output Clock `crossed` ticks at the end
//! t_i + h_i of step i iff x crossed `threshold` upward there:
//! x_{i-1} < threshold <= x_i. The step then returns
//! `eventHandlingNeeded = true` at its end (never inside it: the tick is
//! at the step's end, so early return never applies), and `count`, the
//! clocked output (by `crossed`), is the number of ticks so far, this one
//! included. In that Event Mode the importer reads `fmi3GetClock(crossed)`
//! = true (once) and `count`; `fmi3UpdateDiscreteStates` deactivates the
//! Clock. `count` can be read only while `crossed` is active (or in
//! Initialization Mode, where it is 0).
//!
//! Reference: [`crate::reference::threshold_ticks`] (the tick times and
//! counts from the x_i and step ends).

use fmu_kit::{
    EventModel, EventStep, EventUpdate, Inputs, LogLevel, Model, ModelSpec, StepError, Values,
    Variable, Vr,
};

/// Input: the watched signal x (held over each step).
pub const X: Vr = 1;
/// Parameter: the threshold.
pub const THRESHOLD: Vr = 2;
/// Output Clock (triggered): ticks where x crossed the threshold upward.
pub const CROSSED: Vr = 3;
/// Clocked output (by `crossed`): the number of ticks so far.
pub const COUNT: Vr = 4;
/// Local (discrete): x at the start of the last step (x_{i-1}).
pub const X_LAST: Vr = 5;

/// The spec.
pub fn spec() -> ModelSpec {
    ModelSpec::new(
        "ThresholdTrigger",
        "Triggered output Clock (FMI 3 Clocks): crossed ticks at the end of the step where the held input x crossed threshold upward; count counts the ticks",
        build,
    )
    .var(Variable::input(X, "x", 0.0, "Watched signal (held over each step)"))
    .var(Variable::parameter(THRESHOLD, "threshold", 0.5, "Threshold"))
    .var(
        Variable::output_clock(
            CROSSED,
            "crossed",
            "Ticks at the end of the step where x crossed threshold upward",
        )
        .depends_on(&[])
        .initial_depends_on(&[]),
    )
    .var(
        Variable::int_output(COUNT, "count", "Number of ticks of crossed so far")
            .clocked_by(&[CROSSED])
            .depends_on(&[]),
    )
    .var(
        Variable::local(X_LAST, "x_last", "x at the start of the last step")
            .discrete(),
    )
    .experiment(0.0, 1.0, 0.1)
    .interpolate_inputs(false)
    .directional_derivatives(false)
    .event_mode()
}

struct ThresholdTrigger {
    threshold: f64,
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(ThresholdTrigger {
        threshold: v.finite("threshold", THRESHOLD)?,
    }))
}

impl Model for ThresholdTrigger {
    fn init(&mut self, v: &mut Values) {
        v[COUNT] = 0.0;
        v[X_LAST] = v[X];
    }

    fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

    fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
        Some(self)
    }
}

impl EventModel for ThresholdTrigger {
    fn step_until_event(
        &mut self,
        _t: f64,
        t_end: f64,
        v: &mut Values,
        u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<EventStep, StepError> {
        let x = u.value(X);
        let crossed = v[X_LAST] < self.threshold && x >= self.threshold;
        v[X_LAST] = x;
        if crossed {
            v[COUNT] += 1.0;
            v.set_bool(CROSSED, true);
            Ok(EventStep::event_at(t_end))
        } else {
            Ok(EventStep::completed(t_end))
        }
    }

    fn update_discrete_states(
        &mut self,
        _t: f64,
        _v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        EventUpdate::default()
    }
}
