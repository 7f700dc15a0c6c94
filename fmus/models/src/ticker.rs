//! `Ticker` (Co-Simulation with event mode): time events, the test model
//! of FMI 3 Co-Simulation's Event Mode with `nextEventTime`.
//!
//! count(t) = floor(t / period), a discrete output that changes only in
//! Event Mode, at the time events t_k = k period that the model announces
//! one at a time (`nextEventTime` of each update: (count + 1) period). A
//! step never passes the announced time event: with `eventModeUsed` and
//! early return allowed, `fmi3DoStep` returns at t_k (`earlyReturn`,
//! `eventHandlingNeeded`, `lastSuccessfulTime = t_k`, count still k - 1),
//! and the update in Event Mode makes count = k; without Event Mode (FMI
//! 2, `eventModeUsed = false`) the kit handles the tick inside the step.
//! A time within 1e-9 (relative) of a tick counts as the tick (an
//! importer's communication points may miss it by an ulp).
//!
//! Reference ([`crate::reference::ticker_count`]): count = floor(t /
//! period) after the event at t, floor(t / period) - 1 just before it, at
//! the exact times k period (computed as `k as f64 * period`).

use fmu_kit::{
    EventModel, EventStep, EventUpdate, Inputs, LogLevel, Model, ModelSpec, StepError, TIME,
    Values, Variable, Vr,
};

use crate::reference::ticker_count;

/// Output (Int32, discrete): the number of ticks so far.
pub const COUNT: Vr = 1;
/// Parameter: the time between two ticks.
pub const PERIOD: Vr = 2;
/// Output (Float64, discrete): the time of the last tick, count period
/// (0 before the first): what a Float64 input takes at the events.
pub const LAST: Vr = 3;

/// The spec.
pub fn spec() -> ModelSpec {
    ModelSpec::new(
        "Ticker",
        "Time events (Co-Simulation with event mode): count = floor(t / period), changed in Event Mode at the announced time events k period",
        build,
    )
    .var(Variable::int_output(COUNT, "count", "Number of ticks so far: floor(t / period), changed at the time events").depends_on(&[]))
    .var(Variable::parameter(PERIOD, "period", 0.35, "Time between two ticks").min(0.0))
    .var(Variable::output(LAST, "last", "Time of the last tick: count period, changed at the time events").discrete().depends_on(&[]))
    .experiment(0.0, 2.0, 0.05)
    .directional_derivatives(false)
    .output_derivatives(1)
    .event_mode()
}

struct Ticker {
    period: f64,
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(Ticker {
        period: v.positive("period", PERIOD)?,
    }))
}

impl Model for Ticker {
    fn init(&mut self, v: &mut Values) {
        v[COUNT] = ticker_count(self.period, v[TIME]);
        v[LAST] = v[COUNT] * self.period;
    }

    fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

    /// `last` is held between the ticks: its derivatives are 0.
    fn output_derivative(
        &self,
        vr: Vr,
        _order: u32,
        _t: f64,
        _v: &Values,
        _u: &Inputs,
    ) -> Option<f64> {
        (vr == LAST).then_some(0.0)
    }

    fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
        Some(self)
    }
}

impl EventModel for Ticker {
    fn step_until_event(
        &mut self,
        _t: f64,
        t_end: f64,
        _v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<EventStep, StepError> {
        // Nothing moves between the ticks; the kit stops the step at the
        // announced tick.
        Ok(EventStep::completed(t_end))
    }

    fn update_discrete_states(
        &mut self,
        t: f64,
        v: &mut Values,
        _u: &Inputs,
        log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        let n = ticker_count(self.period, t);
        if n != v[COUNT] {
            v[COUNT] = n;
            v[LAST] = n * self.period;
            log(LogLevel::Info, &format!("Ticker: count = {n} at t = {t}"));
        }
        EventUpdate {
            next_event_time: Some((n + 1.0) * self.period),
            ..EventUpdate::default()
        }
    }
}
