//! FMI 3 event mode in Co-Simulation (FMI 3.0 sec. 4.2; the call sequence
//! of the Reference FMUs' `cs_event_mode.c`): a subsystem instantiated
//! with `eventModeUsed` ends a step at an event it cannot handle alone
//! (`eventHandlingNeeded`, at the end of the step or, where early return
//! is allowed, before it) and announces its time events (`nextEventTime`).
//!
//! The system handles the events of every such subsystem at the
//! communication point where they occur: it enters Event Mode, sets the
//! inputs of that point (the other subsystems' outputs there), iterates
//! `fmi3UpdateDiscreteStates`, reads and publishes the new outputs and
//! exchanges them; a subsystem in event mode whose inputs that changed is
//! handled in the next round at the same point (a super-dense instant),
//! until no input of one changes. Then each returns to Step Mode. After
//! initialization every such subsystem is in Event Mode, and the same
//! iteration runs once for all of them.
//!
//! Where a subsystem returns early, the Jacobi step ends there for all:
//! the subsystems that may return early step first, the others then step
//! only to the event. Time events end the run loop's steps
//! ([`System::next_event_ticks`]) for every master.

use cosim_fmi::EventHandling;

use super::{Buffers, System, keep_error, step_subsystem};
use crate::error::{CoreError, Result};
use crate::subsystem::Subsystem;

/// The most rounds of one event iteration between subsystems (each round
/// handles those whose inputs the last one changed).
const MAX_ROUNDS: usize = 100;

/// What the system knows of its subsystems' events.
#[derive(Debug, Clone, Default)]
pub(crate) struct EventState {
    /// Per subsystem: `eventModeUsed`, `earlyReturnAllowed`.
    handling: Vec<EventHandling>,
    /// Some subsystem uses event mode.
    pub(super) any: bool,
    /// The Jacobi order of a step with events: those that may return
    /// early first, then the other event-mode subsystems, then the rest.
    order: Vec<usize>,
    /// Per subsystem: its next time event (`nextEventTime`), s.
    next: Vec<Option<f64>>,
    /// Where the last macro step ended when an early return shortened it.
    early_end: Option<f64>,
    /// Communication points at which events were handled, and the
    /// subsystem event iterations there.
    points: u64,
    iterations: u64,
}

impl EventState {
    pub(super) fn new(subsystems: &[Box<dyn Subsystem>]) -> Self {
        let handling: Vec<EventHandling> = subsystems.iter().map(|s| s.event_handling()).collect();
        let rank = |h: &EventHandling| match (h.event_mode_used, h.early_return_allowed) {
            (true, true) => 0,
            (true, false) => 1,
            _ => 2,
        };
        let mut order: Vec<usize> = (0..subsystems.len()).collect();
        order.sort_by_key(|&s| rank(&handling[s]));
        EventState {
            any: handling.iter().any(|h| h.event_mode_used),
            next: vec![None; handling.len()],
            handling,
            order,
            ..EventState::default()
        }
    }
}

/// The event handling of a run: at how many communication points, and
/// how many event iterations of subsystems there were.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct EventsHandled {
    /// Communication points with an event.
    pub points: u64,
    /// Event iterations of a subsystem (`fmi3EnterEventMode` ...
    /// `fmi3EnterStepMode`, or a further round at the same point).
    pub iterations: u64,
}

impl System {
    /// Whether some subsystem uses FMI 3 event mode.
    #[inline]
    pub fn uses_event_mode(&self) -> bool {
        self.events.any
    }

    /// The events handled so far.
    pub fn events_handled(&self) -> EventsHandled {
        EventsHandled {
            points: self.events.points,
            iterations: self.events.iterations,
        }
    }

    /// The earliest time event a subsystem announced (`nextEventTime`)
    /// after the current communication point, in ticks: a step must end
    /// there (FMI 3.0: the importer enters Event Mode when the time
    /// reaches it).
    pub fn next_event_ticks(&self) -> Option<i64> {
        if !self.events.any {
            return None;
        }
        let base = self.time_base;
        let ticks = self.subsystems.iter().map(|s| s.next_clock_tick());
        self.events
            .next
            .iter()
            .copied()
            .chain(ticks)
            .flatten()
            .map(|t| base.round(t))
            .filter(|&t| t > self.ticks)
            .min()
    }

    /// Where the last macro step ended when an early return shortened it
    /// (`None`: where it was meant to).
    #[inline]
    pub fn early_end(&self) -> Option<f64> {
        self.events.early_end
    }

    /// A Jacobi step of a system with event-mode subsystems, inline: those
    /// that may return early step first; where one does, at t_e, the
    /// others step only to t_e. `hold`: the inputs are held (zero-order
    /// hold) from the coupled values. [`System::early_end`] says where
    /// the step ended.
    pub(super) fn step_jacobi_events(
        &mut self,
        t: f64,
        h: &[f64],
        due: &[bool],
        hold: bool,
    ) -> Result<()> {
        self.rest_stale |= self.lazy;
        let policy = (self.nonfinite, self.divergence_limit);
        self.events.early_end = None;
        let base = self.time_base;
        let t_ticks = base.round(t);
        let mut end: Option<f64> = None;
        // (The first subsystem stepped to its full step, once an early
        // return would have to take it back.)
        let mut full: Option<usize> = None;
        let mut error = None;
        for i in 0..self.events.order.len() {
            let s = self.events.order[i];
            if !due[s] {
                continue;
            }
            let b: &mut Buffers = &mut self.buffers[s];
            if hold {
                b.hold_inputs();
            }
            b.event_at = None;
            let hs = end.map_or(h[s], |te| te - t);
            if hs <= 0.0 {
                // (An event at the step's start: the others do not step.)
                continue;
            }
            let sub = self.subsystems[s].as_mut();
            if let Err(e) = step_subsystem(sub, b, t, hs, policy, &mut self.nonfinite_warned[s]) {
                keep_error(&mut error, e)?;
                continue;
            }
            // (The event's time on the tick grid: before the step's end only
            // by at least a tick.)
            let at = b.event_at.map(|te| base.round(te));
            match at {
                Some(te) if te < base.round(t + hs) => {
                    let te = if te <= t_ticks { t } else { base.seconds(te) };
                    if let Some(f) = full {
                        return Err(self.early_after_full(s, f, te));
                    }
                    end = Some(te);
                }
                _ => {
                    full.get_or_insert(s);
                }
            }
        }
        self.events.early_end = end;
        error.map_or(Ok(()), Err)
    }

    /// The error of subsystem `s` returning early at `te` after `f` had
    /// completed its step (two subsystems that may return early on one
    /// level: the scenario allows it only where one can).
    #[cold]
    fn early_after_full(&self, s: usize, f: usize, te: f64) -> CoreError {
        CoreError::Config(format!(
            "subsystem '{}' returned early from its step at t = {} (an event), after '{}' had completed the step: the macro step cannot end at the event for both (only one subsystem of a level may return early)",
            self.subsystems[s].info().name,
            crate::text::number(te),
            self.subsystems[f].info().name
        ))
    }

    /// Handles the events at the current communication point: of every
    /// event-mode subsystem whose last step ended at one, or whose time
    /// event is due (see the module's documentation). Nothing to do
    /// costs one look at each subsystem.
    pub fn handle_events(&mut self) -> Result<()> {
        if !self.events.any {
            return Ok(());
        }
        let (now, base) = (self.ticks, self.time_base);
        let reached = |t: Option<f64>| t.is_some_and(|te| base.round(te) <= now);
        let mut due: Vec<bool> = Vec::new();
        for (s, b) in self.buffers.iter().enumerate() {
            let has_event = b.event_at.is_some()
                || reached(self.events.next[s])
                || reached(self.subsystems[s].next_clock_tick());
            if self.events.handling[s].event_mode_used && has_event {
                due.resize(self.subsystems.len(), false);
                due[s] = true;
            }
        }
        if due.is_empty() {
            return Ok(());
        }
        let in_event_mode = vec![false; due.len()];
        self.event_iteration(due, in_event_mode)
    }

    /// After initialization, where every event-mode subsystem is in Event
    /// Mode: their event iteration (the initial one of the standard).
    pub(super) fn initial_events(&mut self) -> Result<()> {
        if !self.events.any {
            return Ok(());
        }
        let modes: Vec<bool> = self
            .events
            .handling
            .iter()
            .map(|h| h.event_mode_used)
            .collect();
        self.event_iteration(modes.clone(), modes)
    }

    /// The event iteration at the current point of the subsystems `due`
    /// (those `in_event_mode` already are), in rounds until no event-mode
    /// subsystem's inputs change; then each returns to Step Mode.
    fn event_iteration(&mut self, mut due: Vec<bool>, mut in_event_mode: Vec<bool>) -> Result<()> {
        self.events.points += 1;
        let n = self.subsystems.len();
        for _round in 0..MAX_ROUNDS {
            let mut terminated = None;
            for s in (0..n).filter(|&s| due[s]) {
                self.events.iterations += 1;
                let sub = self.subsystems[s].as_mut();
                if !in_event_mode[s] {
                    sub.enter_event_mode()?;
                    in_event_mode[s] = true;
                }
                let b = &mut self.buffers[s];
                sub.set_inputs(&b.u)?;
                let update = sub.update_discrete_states()?;
                self.events.next[s] = update.next_event_time;
                sub.get_observed(&mut b.y_new)?;
                b.event_at = None;
                self.publish(s);
                if update.terminate_simulation {
                    terminated.get_or_insert(s);
                }
            }
            if let Some(s) = terminated {
                return Err(CoreError::TerminatedByFmu {
                    subsystem: self.subsystems[s].info().name.clone(),
                    function: "fmi3UpdateDiscreteStates",
                    t: self.time,
                });
            }
            // The new outputs reach every input; an event-mode subsystem
            // whose inputs changed takes them in Event Mode, and one whose
            // Clock its update scheduled for now (an interval 0) ticks
            // again in the same instant.
            let mut again = false;
            let (now, base) = (self.ticks, self.time_base);
            for (s, due) in due.iter_mut().enumerate() {
                let changed = self.exchange_into(s);
                let tick = self.subsystems[s].next_clock_tick();
                let ticks_now = tick.is_some_and(|t| base.round(t) <= now);
                *due = (changed || ticks_now) && self.events.handling[s].event_mode_used;
                again |= *due;
            }
            if !again {
                for s in (0..n).filter(|&s| in_event_mode[s]) {
                    self.subsystems[s].enter_step_mode()?;
                }
                return Ok(());
            }
        }
        let names: Vec<&str> = (0..n)
            .filter(|&s| due[s])
            .map(|s| self.subsystems[s].info().name.as_str())
            .collect();
        Err(CoreError::Config(format!(
            "the event iteration at t = {} did not settle after {MAX_ROUNDS} rounds: the inputs of {} still changed (an algebraic loop through discrete variables?)",
            crate::text::number(self.time),
            names.join(", ")
        )))
    }
}
