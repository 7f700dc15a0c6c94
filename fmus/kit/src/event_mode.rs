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

use crate::input::Inputs;
use crate::model::{LogLevel, StepError, Values};
use crate::model_exchange::EventUpdate;

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
}
