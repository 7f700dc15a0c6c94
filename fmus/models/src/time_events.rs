//! `TimeEvents` (Model Exchange only): a staircase source and its
//! integral, the test model of time events.
//!
//! y(t) = floor(t / period), a discrete output that changes only in Event
//! Mode, at the time events t = k period the model announces
//! (`nextEventTime`, one at a time); x' = y, x(start) = 0.
//!
//! Reference ([`crate::reference::time_events`]), from t = 0: with
//! n = floor(t / period), y = n and x = period n (n - 1) / 2 + n (t - n period)
//! (x is piecewise linear: exact for any integrator that steps to the
//! event times). The event at k period is handled in the Event Mode
//! entered at or after it (an importer may arrive slightly early by
//! rounding: within 1e-9 relative counts as reached).

use fmu_kit::{
    ContinuousModel, ContinuousState, DependencyKind, EventUpdate, Inputs, LogLevel, Model,
    ModelExchangeSpec, ModelSpec, TIME, Values, Variable, Vr,
};

/// Output (discrete): the staircase y = floor(t / period).
pub const Y: Vr = 1;
/// Output (state): x, the integral of y.
pub const X: Vr = 2;
/// Local: der(x) = y.
pub const DER_X: Vr = 3;
/// Parameter: the period of the steps.
pub const PERIOD: Vr = 4;

/// The spec.
pub fn spec() -> ModelSpec {
    ModelSpec::new(
        "TimeEvents",
        "Time events (Model Exchange only): the staircase y = floor(t / period), changed at the announced time events, and x' = y",
        build,
    )
    .var(Variable::output(Y, "y", "Staircase floor(t / period), changed at time events").discrete().depends_on(&[]))
    .var(Variable::output(X, "x", "Integral of y").depends_on(&[]).initial_depends_on(&[]))
    .var(
        Variable::local(DER_X, "der(x)", "Derivative of x: y")
            .depends_on(&[(Y, DependencyKind::Constant)]),
    )
    .var(Variable::parameter(PERIOD, "period", 0.25, "Time between two steps of y").min(0.0))
    .experiment(0.0, 2.0, 0.01)
    .model_exchange(
        ModelExchangeSpec::new()
            .state(ContinuousState::new(X, DER_X))
            .partial_derivatives()
            .without_co_simulation(),
    )
}

struct TimeEvents {
    period: f64,
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(TimeEvents {
        period: v.positive("period", PERIOD)?,
    }))
}

impl TimeEvents {
    /// The time of the step after y = `n`.
    fn next(&self, n: f64) -> f64 {
        (n + 1.0) * self.period
    }
}

impl Model for TimeEvents {
    fn init(&mut self, v: &mut Values) {
        v[Y] = (v[TIME] / self.period).floor();
        v[X] = 0.0;
    }

    fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

    fn model_exchange(&mut self) -> Option<&mut dyn ContinuousModel> {
        Some(self)
    }
}

impl ContinuousModel for TimeEvents {
    fn derivatives(&mut self, _t: f64, v: &mut Values, _u: &Inputs) {
        v[DER_X] = v[Y];
    }

    fn update_discrete_states(
        &mut self,
        t: f64,
        v: &mut Values,
        _u: &Inputs,
        log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        let next = self.next(v[Y]);
        // The importer may reach the event time by rounding, just before.
        if t >= next - 1e-9 * next.abs().max(1.0) {
            v[Y] += 1.0;
            log(
                LogLevel::Info,
                &format!("TimeEvents: y = {} at t = {t}", v[Y]),
            );
        }
        EventUpdate {
            next_event_time: Some(self.next(v[Y])),
            ..EventUpdate::default()
        }
    }
}
