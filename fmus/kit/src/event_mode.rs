//! Co-Simulation with events (FMI 3.0 sec. 4.1.2 and 4.2, Event Mode of
//! Co-Simulation): what a model declares
//! ([`ModelSpec::event_mode`](crate::ModelSpec::event_mode)) and what it
//! computes ([`EventModel`], reached through
//! [`Model::event_mode`](crate::Model::event_mode)).
//!
//! A step advances from t toward t_end and stops at the first event
//! t_e in (t, t_end]: a state event the model located, or the time event
//! its last update announced (`nextEventTime`; the kit never lets a step
//! pass it). The discrete states change only in the event update
//! ([`EventModel::update_discrete_states`], the same [`EventUpdate`] as
//! Model Exchange's), which the kit calls:
//! - with `eventModeUsed = true` (FMI 3): through the importer, who enters
//!   Event Mode when `fmi3DoStep` reports `eventHandlingNeeded`, and calls
//!   `fmi3UpdateDiscreteStates` until `discreteStatesNeedUpdate = false`;
//! - else (FMI 2, or `eventModeUsed = false`): itself, inside the step at
//!   each event, at the end of initialization, and at the start of each
//!   step (where an importer with Event Mode would enter it for its input
//!   changes).
//!
//! So an update must be a function of the values and the time: called
//! where nothing happens, it changes nothing (the importer may enter
//! Event Mode at any communication point).
//!
//! FMI 3 time-based input Clocks whose timing the model decides (FMI 3.0
//! sec. 2.2.9.2; the importer reads it with `fmi3GetIntervalDecimal` /
//! `fmi3GetShiftDecimal` and schedules the activations itself, so the model
//! announces no `nextEventTime` for them): the model answers the kit's
//! questions through [`EventModel::periodic_clock`] (`fixed` / `tunable`
//! Clocks declared without `intervalDecimal`),
//! [`EventModel::changing_interval`] (`changing` Clocks) and
//! [`EventModel::countdown_interval`] (`countdown` Clocks); the kit keeps
//! the announced activation times and refuses activations elsewhere
//! (`crate::instance` `clocks`).

use crate::input::Inputs;
use crate::model::{LogLevel, StepError, Values, Vr};
use crate::model_exchange::EventUpdate;

/// The interval and the shift of a `fixed` or `tunable` input Clock
/// declared without `intervalDecimal` ([`EventModel::periodic_clock`]):
/// its activations are at t_start + shift + k interval, k = 0, 1, ...
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeriodicTiming {
    /// The interval (finite, > 0).
    pub interval: f64,
    /// The delay of the first activation after the start time (finite,
    /// >= 0).
    pub shift: f64,
}

/// Where a step of an [`EventModel`] stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EventStep {
    /// The time reached: `t_end`, or the event time t_e < `t_end`. The
    /// values in [`Values`] are those at `reached`, just before the event
    /// is handled.
    pub reached: f64,
    /// Whether an event is at `reached` (a state event the model located;
    /// the kit adds the announced time event itself).
    pub event: bool,
}

impl EventStep {
    /// The step reached `t_end` without an event.
    pub fn completed(t_end: f64) -> Self {
        EventStep {
            reached: t_end,
            event: false,
        }
    }

    /// The step stopped at the event at `t_e`.
    pub fn event_at(t_e: f64) -> Self {
        EventStep {
            reached: t_e,
            event: true,
        }
    }
}

/// The equations of a co-simulation model with events.
pub trait EventModel {
    /// Advances the values from `t` toward `t_end` (the end of the
    /// communication step, or the announced time event if that comes
    /// first) and stops at the first state event t_e in (`t`, `t_end`],
    /// writing the values at t_e before the event is handled. An event at
    /// `t` itself (just handled) is not reported again. `u` gives the
    /// inputs expanded at `t`.
    fn step_until_event(
        &mut self,
        t: f64,
        t_end: f64,
        v: &mut Values,
        u: &Inputs,
        log: &dyn Fn(LogLevel, &str),
    ) -> Result<EventStep, StepError>;

    /// Event Mode at time `t` (`fmi3UpdateDiscreteStates`, or the kit in
    /// the importer's place): handles the events due at `t` (a located
    /// state event, a time event reached, input changes), updates the
    /// discrete states and announces the next time event. Where nothing is
    /// due it changes nothing.
    fn update_discrete_states(
        &mut self,
        t: f64,
        v: &mut Values,
        u: &Inputs,
        log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate;

    /// A `fixed` or `tunable` input Clock declared without
    /// `intervalDecimal`: its interval and shift, derived from the
    /// parameters in `v` (the importer reads them in Initialization Mode;
    /// a tunable Clock's interval again after it changed, counted from
    /// that Event Mode / Clock Activation Mode on). Asked on a model built
    /// from the current values: in Initialization Mode, at its end, and
    /// (tunable) in Event Mode and Clock Activation Mode. `None` (the
    /// default): the model has no such Clock (an error for one).
    fn periodic_clock(&self, clock: Vr, v: &Values) -> Option<PeriodicTiming> {
        let _ = (clock, v);
        None
    }

    /// A `changing` input Clock: the interval T (finite, >= 0) from `t` to
    /// its next activation. Asked in Initialization Mode with `t` the
    /// start time (T_0: the first activation at t_start + T_0), and right
    /// after each update (Scheduled Execution: partition) in which the
    /// Clock was active, at its activation time `t`, the Clock still
    /// active in `v` (T_i: the next activation at t + T_i; 0 means again in
    /// the same time instant). `None` (the default): the model has no such
    /// Clock (an error for one).
    fn changing_interval(&self, clock: Vr, t: f64, v: &Values) -> Option<f64> {
        let _ = (clock, t, v);
        None
    }

    /// A `countdown` input Clock: whether the model arms it now, and with
    /// which interval T (finite, >= 0). Asked in Initialization Mode with
    /// `t` the start time, and after every update (Scheduled Execution:
    /// partition) at `t`, with the Clocks active in it still active in
    /// `v`. `Some(T)`: the Clock's next activation is T after the Event
    /// Mode (Clock Update Mode) in which the importer reads it with
    /// `fmi3GetIntervalDecimal`, normally this one (0: in the same time
    /// instant); an arming replaces one not yet activated. `None` (the
    /// default): not armed now (an earlier arming stays). An activation
    /// of the Clock uses its arming up.
    fn countdown_interval(&self, clock: Vr, t: f64, v: &Values) -> Option<f64> {
        let _ = (clock, t, v);
        None
    }
}
