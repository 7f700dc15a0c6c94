//! Co-Simulation with events on an [`Instance`] (FMI 3.0 sec. 4.1.2,
//! 4.2): a model with [`crate::ModelSpec::event_mode`], stepped through its
//! events ([`crate::EventModel`]).
//!
//! With `eventModeUsed = true` (FMI 3), the importer handles the events:
//! - initialization ends in Event Mode; `fmi3UpdateDiscreteStates` (the
//!   Model Exchange implementation, [`Instance::update_discrete_states`])
//!   until `discreteStatesNeedUpdate = false`, then `fmi3EnterStepMode`
//!   (refused before: [`Instance::enter_step_mode`]);
//! - `fmi3DoStep(t, h)` stops at the first event t_e in (t, t + h]: with
//!   `earlyReturnAllowed` and t_e < t + h, it returns there
//!   (`earlyReturn`, `lastSuccessfulTime = t_e`); without, the events
//!   before t + h are handled inside the step; an event at t + h (or where
//!   the step returned early) is reported with `eventHandlingNeeded`, and
//!   the next `fmi3DoStep` is refused until the importer passed through
//!   Event Mode (`fmi3EnterEventMode`, allowed in Step Mode at any
//!   communication point). A step never passes the time event the last
//!   update announced (`nextEventTime`).
//!
//! Without Event Mode (FMI 2, `eventModeUsed = false`) the kit runs the
//! event iteration in the importer's place: at the end of initialization,
//! at the start of every step (where an importer would enter Event Mode
//! for its input changes) and at every event inside the step.

use super::model_exchange::discrete_update;
use super::{Fail, Instance, Interface, Mode, R, Reader, evaluate, model_log, tolerance};
use crate::input::Inputs;
use crate::model::{LogLevel, Model, StepError, TIME, Values};
use crate::model_exchange::EventUpdate;

/// The most updates at one time instant before the kit gives up (a model
/// whose event iteration does not converge).
const MAX_EVENT_ITERATIONS: usize = 1000;

/// The most events a step handles at one and the same time (a time event
/// that is announced again and again at the same time).
const MAX_EVENTS_AT_ONE_TIME: usize = 100;

/// The Co-Simulation event bookkeeping of an instance (part of its FMU
/// state).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CsEvents {
    /// A step reported `eventHandlingNeeded = true`: the importer enters
    /// Event Mode before the next step.
    pub(super) pending: bool,
    /// The next time event, as the last update announced it
    /// (`nextEventTime`): steps stop there.
    pub(super) next_event_time: Option<f64>,
}

impl CsEvents {
    /// The bytes of the serialized FMU state.
    pub(super) fn to_bytes(self, b: &mut Vec<u8>) {
        b.push(u8::from(self.pending));
        b.extend_from_slice(&self.next_event_time.unwrap_or(f64::NAN).to_le_bytes());
    }

    /// Reads [`CsEvents::to_bytes`].
    pub(super) fn from_reader(r: &mut Reader<'_>) -> Result<Self, String> {
        let pending = match r.u8()? {
            0 => false,
            1 => true,
            _ => return Err("corrupt serialized FMU state (pending event)".into()),
        };
        let next = r.f64()?;
        Ok(CsEvents {
            pending,
            next_event_time: (!next.is_nan()).then_some(next),
        })
    }
}

/// The event iteration at `t`, in the importer's place: the model's
/// update ([`discrete_update`]) until it asks for no other (or for the end
/// of the simulation), the outputs computed before each.
fn event_iteration(
    model: &mut dyn Model,
    t: f64,
    values: &mut Values,
    inputs: &Inputs,
    log: &dyn Fn(LogLevel, &str),
) -> Result<EventUpdate, String> {
    values[TIME] = t;
    for _ in 0..MAX_EVENT_ITERATIONS {
        evaluate(model, t, values, inputs);
        let update = discrete_update(model, Interface::CoSimulation, t, values, inputs, log)?;
        if !update.discrete_states_need_update || update.terminate_simulation {
            evaluate(model, t, values, inputs);
            return Ok(update);
        }
    }
    Err(format!(
        "the event iteration at t = {t} did not converge in {MAX_EVENT_ITERATIONS} updates \
         (discreteStatesNeedUpdate stays true)"
    ))
}

impl Instance {
    /// Whether steps go through the model's events: a Co-Simulation
    /// instance of a model with [`crate::ModelSpec::event_mode`].
    pub fn steps_through_events(&self) -> bool {
        self.interface == Interface::CoSimulation && self.spec.event_mode
    }

    /// FMI 3 `eventModeUsed` of `fmi3InstantiateCoSimulation`: refused
    /// (true) unless the model has event mode (`hasEventMode`).
    pub fn set_event_mode_used(&mut self, used: bool) -> R<()> {
        if used && !self.steps_through_events() {
            return Err(Fail::usage(
                "eventModeUsed=true, but this FMU has hasEventMode=false",
            ));
        }
        self.event_mode_used = used;
        Ok(())
    }

    /// Whether the importer handles the events in Event Mode
    /// (`eventModeUsed = true`).
    pub fn event_mode_used(&self) -> bool {
        self.event_mode_used
    }

    /// FMI 3 `eventHandlingNeeded` of the last step: an event is at its
    /// end, and the importer must enter Event Mode before the next step.
    pub fn event_handling_needed(&self) -> bool {
        self.cs_event.pending
    }

    /// The next time event the model announced (Co-Simulation with events).
    pub fn next_event_time(&self) -> Option<f64> {
        self.cs_event.next_event_time
    }

    /// Checks a Co-Simulation Event Mode call (`fmi3EnterEventMode`,
    /// `fmi3UpdateDiscreteStates`, `fmi3EnterStepMode`) of an instance that
    /// [`steps_through_events`](Instance::steps_through_events): refused
    /// without `eventModeUsed` (FMI 3.0 sec. 4.2: "must not be called, if
    /// fmi3InstantiateCoSimulation signaled eventModeUsed = fmi3False"),
    /// and outside the states of `mask`.
    pub fn check_cs_event_call(&self, fname: &str, mask: u32) -> R<()> {
        if !self.event_mode_used {
            return Err(Fail::sequence(format!(
                "{fname} is an Event Mode function, and this instance was made with eventModeUsed = fmi3False \
                 (fmi3InstantiateCoSimulation): the FMU handles its events inside fmi3DoStep"
            )));
        }
        self.require_mode(fname, mask)
    }

    /// Event Mode -> Step Mode (`fmi3EnterStepMode`, Co-Simulation with
    /// `eventModeUsed`), once the event iteration converged (as for Model
    /// Exchange's Continuous-Time Mode); refused after the model asked to
    /// terminate.
    pub fn enter_step_mode(&mut self) -> R<()> {
        self.refuse_after_termination()?;
        self.require_event_iteration_converged("Step Mode")?;
        self.mode = Mode::StepComplete;
        self.last_successful_time = self.time;
        Ok(())
    }

    /// Why a step is refused after `eventHandlingNeeded = true`.
    #[cold]
    #[inline(never)]
    pub(super) fn pending_event_refusal(&self) -> Fail {
        Fail::sequence(format!(
            "the last fmi3DoStep returned eventHandlingNeeded = fmi3True at t = {}: the importer has to enter \
             Event Mode (fmi3EnterEventMode, fmi3UpdateDiscreteStates, fmi3EnterStepMode) before the next step",
            self.time
        ))
    }

    /// An output Clock the model ticked in a step from `t` (stopped at
    /// `reached`) must come with an event there, which the importer
    /// handles: at the step's end `end`, or before it with early return.
    fn check_clock_ticks(
        &self,
        t: f64,
        reached: f64,
        end: f64,
        event: bool,
        early: bool,
    ) -> Result<(), StepError> {
        let ticked = self.ticked_output_clocks();
        let Some(&vr) = ticked.first() else {
            return Ok(());
        };
        let name = self.spec.variable(vr).map_or("?", |v| v.name);
        if !event {
            return Err(StepError::Error(format!(
                "the model ticked the output Clock {name} in its step from t = {t} to t = {reached} without an event there (a model error)"
            )));
        }
        if reached < end && !early {
            return Err(StepError::Error(format!(
                "the output Clock {name} ticked at t = {reached}, inside the step to t = {end}, and earlyReturnAllowed = false: \
                 the importer cannot see the tick (a Clock tick is handled in Event Mode, never inside the step)"
            )));
        }
        Ok(())
    }

    /// The initial event iteration at the end of initialization, without
    /// Event Mode (the kit in the importer's place).
    pub(super) fn initial_events(&mut self, model: &mut dyn Model) -> Result<(), String> {
        let log = model_log(&self.sink);
        let update = event_iteration(model, self.time, &mut self.values, &self.inputs, &log)?;
        self.cs_event.next_event_time = update.next_event_time;
        if update.terminate_simulation {
            self.terminate_requested = true;
        }
        Ok(())
    }

    /// A step from `t` to `end` through the model's events (the model is
    /// taken out of the instance): returns the time reached, `end` or,
    /// with early return, the event before it. An event the importer
    /// handles sets [`CsEvents::pending`]; the others are handled here
    /// ([`event_iteration`]). A model's request to terminate in an event
    /// ends the step there ([`StepError::Terminate`]).
    pub(super) fn advance_through_events(
        &mut self,
        model: &mut dyn Model,
        t: f64,
        end: f64,
    ) -> Result<f64, StepError> {
        let log = model_log(&self.sink);
        let signal = self.event_mode_used;
        let early = signal && self.early_return_allowed;
        let mut cur = t;
        let mut at_same_time = 0;
        let mut handle_here = !signal;
        loop {
            if handle_here {
                // An event here, handled in the importer's place (without
                // Event Mode: also the input changes at the start).
                self.inputs.shift_to(cur);
                let update = event_iteration(model, cur, &mut self.values, &self.inputs, &log)
                    .map_err(StepError::Error)?;
                self.cs_event.next_event_time = update.next_event_time;
                if update.terminate_simulation {
                    return Err(StepError::Terminate {
                        reached: cur,
                        message: format!("the model asked to terminate at t = {cur}"),
                    });
                }
                if cur >= end {
                    return Ok(end);
                }
            }
            // The time event the last update announced, if it comes by `end`.
            let next = self
                .cs_event
                .next_event_time
                .filter(|&te| te <= end + tolerance(end));
            let (reached, event) = match next {
                Some(te) if te <= cur + tolerance(cur) => (cur, true),
                _ => {
                    let limit = next.map_or(end, |te| te.min(end));
                    let Some(em) = model.event_mode() else {
                        return Err(StepError::Error(
                            "the model has no event equations (Model::event_mode)".into(),
                        ));
                    };
                    self.values[TIME] = cur;
                    let step =
                        em.step_until_event(cur, limit, &mut self.values, &self.inputs, &log)?;
                    if !step.reached.is_finite() {
                        return Err(StepError::Error(format!(
                            "the model's step from t = {cur} ended at t = {}",
                            step.reached
                        )));
                    }
                    let reached = if (step.reached - end).abs() <= tolerance(end) {
                        end
                    } else if (step.reached - limit).abs() <= tolerance(limit) {
                        limit
                    } else {
                        step.reached.clamp(cur, limit)
                    };
                    let time_event = next.is_some_and(|te| (reached - te).abs() <= tolerance(te));
                    if self.has_clocks() {
                        self.check_clock_ticks(cur, reached, end, step.event, early)?;
                    }
                    if !step.event && !time_event && reached < end {
                        return Err(StepError::Error(format!(
                            "the model's step from t = {cur} toward t = {limit} stopped at t = {reached} without an event"
                        )));
                    }
                    (reached, step.event || time_event)
                }
            };
            if !event {
                return Ok(end);
            }
            at_same_time = if reached == cur { at_same_time + 1 } else { 1 };
            if at_same_time > MAX_EVENTS_AT_ONE_TIME {
                return Err(StepError::Error(format!(
                    "{MAX_EVENTS_AT_ONE_TIME} events at t = {cur}: the model's events do not advance in time"
                )));
            }
            cur = reached;
            if signal && (early || cur >= end) {
                // The importer handles it in Event Mode.
                self.cs_event.pending = true;
                return Ok(cur);
            }
            handle_here = true;
        }
    }
}
