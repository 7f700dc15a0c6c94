//! Timed events (libcosim's scenarios): at given times a subsystem's input
//! or output is overridden, biased or reset to normal.
//!
//! An [`EventSubsystem`] wraps the subsystem whose variables events touch,
//! as [`crate::input_file::FileInputs`] wraps one fed from files, so events
//! work the same in process, in a host process and at every nesting level,
//! and no master needs to know of them beyond ending a macro step at each
//! event time ([`EventSchedule::next_after`]).
//!
//! What is in effect is a function of time alone: for each variable, the
//! last event at or before the time (an override or a bias, or a reset that
//! ends them). A master that restores earlier FMU states and steps again
//! therefore meets every event again, and none is lost or applied twice.
//!
//! - An **input** event changes the value the subsystem is given for every
//!   step that starts at or after the event time: the override replaces
//!   what the connection gives (its derivatives are then zero), the bias is
//!   added to it. The FMU reports the new value after its next step, as it
//!   reports every coupled input.
//! - An **output** event changes the value read from the subsystem from the
//!   communication point at the event time on: the trace shows it at that
//!   row, and the connections pass it on.
//!
//! As in libcosim, an event between two communication points takes effect
//! at the next one; adaptive masters end a macro step at each event time,
//! so there it takes effect exactly.

use std::collections::HashMap;
use std::sync::Arc;

use cosim_fmi::StepOutcome;

use crate::error::Result;
use crate::subsystem::{CallCounters, RollbackTo, StateId, Subsystem, SubsystemInfo};

/// What an event does to its variable.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EventAction {
    /// The variable takes this value (Booleans as 0/1).
    Override(f64),
    /// This is added to the variable's value.
    Bias(f64),
    /// Back to normal: the connection's value, the FMU's output.
    Reset,
}

impl EventAction {
    /// The action's name, as in libcosim's scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            EventAction::Override(_) => "override",
            EventAction::Bias(_) => "bias",
            EventAction::Reset => "reset",
        }
    }
}

/// Which slot of a subsystem an event changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventSlot {
    /// An input slot (the value the subsystem is given).
    Input(usize),
    /// An observed slot (the value read from it: an output).
    Observed(usize),
}

/// One event on one slot of one subsystem.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotEvent {
    /// When it takes effect, s.
    pub time: f64,
    /// The slot.
    pub slot: EventSlot,
    /// What it does.
    pub action: EventAction,
}

/// Every event of a run, for the master loop: the times a macro step must
/// end at, and a line for the log per event.
#[derive(Debug, Clone, Default)]
pub struct EventSchedule {
    /// (time, description) sorted by time.
    events: Vec<(f64, String)>,
}

impl EventSchedule {
    /// A schedule of `events` (time, description), in any order.
    pub fn new(mut events: Vec<(f64, String)>) -> Self {
        events.sort_by(|a, b| a.0.total_cmp(&b.0));
        EventSchedule { events }
    }

    /// No events.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The first event time strictly after `t` (beyond round-off).
    pub fn next_after(&self, t: f64) -> Option<f64> {
        let i = self.events.partition_point(|(time, _)| !after(*time, t));
        self.events.get(i).map(|(time, _)| *time)
    }

    /// The events that take effect in `(t0, t1]` (the communication point
    /// `t1` ends the step from `t0`); at the start time, `t0 == t1` gives
    /// those at `t0`.
    /// Two binary searches: the run loop asks after every macro step.
    pub fn between(&self, t0: f64, t1: f64) -> impl Iterator<Item = &(f64, String)> {
        let first = if t0 == t1 {
            0
        } else {
            self.events.partition_point(|(time, _)| !after(*time, t0))
        };
        let end = self.events.partition_point(|(time, _)| reached(t1, *time));
        self.events[first..end.max(first)].iter()
    }
}

/// Whether time `t` has reached event time `time` (equal up to round-off:
/// both are whole ticks of the run's time base, converted to seconds).
fn reached(t: f64, time: f64) -> bool {
    t + 1e-12 * t.abs().max(1.0) >= time
}

/// Whether event time `time` lies after `t`, beyond round-off.
fn after(time: f64, t: f64) -> bool {
    !reached(t, time)
}

/// The events of one slot, by time.
#[derive(Debug, Clone)]
struct Timeline {
    slot: EventSlot,
    /// (time, action), sorted by time (stable: file order among equal times).
    events: Vec<(f64, EventAction)>,
}

impl Timeline {
    /// The modification in effect at `t`: the last event at or before it.
    fn at(&self, t: f64) -> Option<EventAction> {
        let i = self.events.partition_point(|(time, _)| reached(t, *time));
        match i.checked_sub(1).map(|i| self.events[i].1) {
            Some(EventAction::Reset) | None => None,
            other => other,
        }
    }
}

/// A subsystem some of whose inputs or outputs events change (see the
/// module documentation).
pub struct EventSubsystem {
    inner: Box<dyn Subsystem>,
    /// Input timelines, then observed ones.
    inputs: Vec<Timeline>,
    observed: Vec<Timeline>,
    /// The values and derivatives (orders 1-3) as the master set them.
    u: Vec<f64>,
    du: Vec<f64>,
    orders: u32,
    /// What is given to the inner subsystem.
    scratch: Vec<f64>,
    /// Input slots no connection feeds, with the value they have when no
    /// event changes them (their start value): the master's value for
    /// them means nothing.
    unfed: Vec<(usize, f64)>,
    /// The current communication point.
    now: f64,
    initializing: bool,
    /// The inner subsystem is in Event Mode (FMI 3 event mode): inputs
    /// set count at once, as in Initialization Mode.
    event_mode: bool,
    started: Option<(f64, f64)>,
    /// The communication point of each saved state.
    saved_times: HashMap<usize, f64>,
    /// Shared description of the events, for `Debug`.
    name: Arc<str>,
}

impl std::fmt::Debug for EventSubsystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSubsystem")
            .field("name", &self.name)
            .field("inputs", &self.inputs)
            .field("observed", &self.observed)
            .finish()
    }
}

impl EventSubsystem {
    /// Wraps `inner` with `events` on its slots; `unfed` are the input
    /// slots no connection feeds, with their start values. Slots out of
    /// range are a programming error of the caller (the scenario resolves
    /// names).
    pub fn new(
        inner: Box<dyn Subsystem>,
        events: Vec<SlotEvent>,
        unfed: Vec<(usize, f64)>,
    ) -> Self {
        let n_in = inner.info().inputs.len();
        let mut timelines: Vec<Timeline> = Vec::new();
        for e in events {
            match timelines.iter_mut().find(|t| t.slot == e.slot) {
                Some(t) => t.events.push((e.time, e.action)),
                None => timelines.push(Timeline {
                    slot: e.slot,
                    events: vec![(e.time, e.action)],
                }),
            }
        }
        for t in &mut timelines {
            t.events.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let (inputs, observed) = timelines
            .into_iter()
            .partition(|t| matches!(t.slot, EventSlot::Input(_)));
        let name: Arc<str> = inner.info().name.as_str().into();
        EventSubsystem {
            inputs,
            observed,
            u: vec![0.0; n_in],
            du: vec![0.0; 3 * n_in],
            orders: 0,
            scratch: vec![0.0; n_in],
            unfed,
            now: 0.0,
            initializing: false,
            event_mode: false,
            started: None,
            saved_times: HashMap::new(),
            name,
            inner,
        }
    }

    /// Sets the inputs in effect at `t` (values, then the derivatives the
    /// master gave, zero for overridden inputs) on the inner subsystem.
    fn apply_inputs(&mut self, t: f64) -> Result<()> {
        self.scratch.copy_from_slice(&self.u);
        for &(i, base) in &self.unfed {
            self.scratch[i] = base;
        }
        for tl in &self.inputs {
            let EventSlot::Input(i) = tl.slot else {
                continue;
            };
            match tl.at(t) {
                Some(EventAction::Override(v)) => self.scratch[i] = v,
                Some(EventAction::Bias(b)) => self.scratch[i] += b,
                _ => {}
            }
        }
        self.inner.set_inputs(&self.scratch)?;
        let n = self.u.len();
        for order in 1..=self.orders {
            let o = (order as usize - 1) * n;
            self.scratch.copy_from_slice(&self.du[o..o + n]);
            for &(i, _) in &self.unfed {
                self.scratch[i] = 0.0;
            }
            for tl in &self.inputs {
                if let (EventSlot::Input(i), Some(EventAction::Override(_))) = (tl.slot, tl.at(t)) {
                    self.scratch[i] = 0.0;
                }
            }
            self.inner.set_input_derivatives(order, &self.scratch)?;
        }
        Ok(())
    }

    /// Changes the observed `values[range]` by the output events in effect
    /// now.
    fn modify_observed(&self, values: &mut [f64], first: usize, end: usize) {
        for tl in &self.observed {
            let EventSlot::Observed(k) = tl.slot else {
                continue;
            };
            if k < first || k >= end {
                continue;
            }
            match tl.at(self.now) {
                Some(EventAction::Override(v)) => values[k] = v,
                Some(EventAction::Bias(b)) => values[k] += b,
                _ => {}
            }
        }
    }
}

impl Subsystem for EventSubsystem {
    fn info(&self) -> &SubsystemInfo {
        self.inner.info()
    }

    fn enter_initialization(&mut self, t0: f64, t_stop: Option<f64>) -> Result<()> {
        self.initializing = true;
        self.now = t0;
        self.inner.enter_initialization(t0, t_stop)
    }

    fn allow_rollback(&mut self, to: RollbackTo) -> Result<()> {
        self.inner.allow_rollback(to)
    }

    fn exit_initialization(&mut self) -> Result<()> {
        self.initializing = false;
        self.inner.exit_initialization()?;
        // (With event mode, the inner subsystem leaves initialization
        // into Event Mode.)
        self.event_mode = self.inner.event_handling().event_mode_used;
        Ok(())
    }

    fn event_handling(&self) -> cosim_fmi::EventHandling {
        self.inner.event_handling()
    }

    fn enter_event_mode(&mut self) -> Result<()> {
        self.inner.enter_event_mode()?;
        self.event_mode = true;
        Ok(())
    }

    fn update_discrete_states(&mut self) -> Result<cosim_fmi::DiscreteStatesUpdate> {
        self.inner.update_discrete_states()
    }

    fn next_clock_tick(&self) -> Option<f64> {
        self.inner.next_clock_tick()
    }

    fn enter_step_mode(&mut self) -> Result<()> {
        self.inner.enter_step_mode()?;
        self.event_mode = false;
        Ok(())
    }

    fn set_inputs(&mut self, values: &[f64]) -> Result<()> {
        let n = self.u.len().min(values.len());
        self.u[..n].copy_from_slice(&values[..n]);
        self.orders = 0;
        if self.initializing || self.event_mode {
            // In Initialization and Event Mode the values count at once
            // (the outputs are read right after).
            return self.apply_inputs(self.now);
        }
        // Else they are set, modified, when the step starts.
        Ok(())
    }

    fn set_input_derivatives(&mut self, order: u32, values: &[f64]) -> Result<()> {
        if (1..=3).contains(&order) {
            let n = self.u.len();
            let o = (order as usize - 1) * n;
            self.du[o..o + n].copy_from_slice(values);
            self.orders = self.orders.max(order);
        }
        Ok(())
    }

    fn do_step(&mut self, t: f64, h: f64) -> Result<StepOutcome> {
        self.apply_inputs(t)?;
        let outcome = self.inner.do_step(t, h);
        self.now = crate::subsystem::time_after_step(&outcome, t, h, self.now);
        outcome
    }

    fn can_start_step(&self) -> bool {
        self.inner.can_start_step()
    }

    fn start_step(&mut self, t: f64, h: f64) -> Result<bool> {
        self.apply_inputs(t)?;
        let started = self.inner.start_step(t, h)?;
        self.started = started.then_some((t, h));
        Ok(started)
    }

    fn send_started_steps(&mut self) {
        self.inner.send_started_steps();
    }

    fn finish_step(&mut self) -> Result<StepOutcome> {
        let outcome = self.inner.finish_step();
        if let Some((t, h)) = self.started.take() {
            self.now = crate::subsystem::time_after_step(&outcome, t, h, self.now);
        }
        outcome
    }

    fn get_observed(&mut self, values: &mut [f64]) -> Result<()> {
        self.inner.get_observed(values)?;
        self.modify_observed(values, 0, values.len());
        Ok(())
    }

    fn get_observed_first(&mut self, n: usize, values: &mut [f64]) -> Result<()> {
        self.inner.get_observed_first(n, values)?;
        // Only the slots surely read now: a bias on one left as it was
        // would be added twice (the rest are changed when they are read,
        // by `get_observed_from`).
        self.modify_observed(values, 0, n.min(values.len()));
        Ok(())
    }

    fn reads_after_step(&mut self, n: usize) {
        self.inner.reads_after_step(n);
    }

    fn request_observed_from(&mut self, first: usize) {
        self.inner.request_observed_from(first);
    }

    fn get_observed_from(&mut self, first: usize, values: &mut [f64]) -> Result<()> {
        self.inner.get_observed_from(first, values)?;
        self.modify_observed(values, first, values.len());
        Ok(())
    }

    fn traced_strings(&self) -> &[String] {
        self.inner.traced_strings()
    }

    fn get_strings(&mut self, values: &mut [String]) -> Result<()> {
        self.inner.get_strings(values)
    }

    fn set_values(&mut self, values: &[crate::subsystem::InputValue]) -> Result<()> {
        self.inner.set_values(values)
    }

    fn get_output_derivatives(&mut self, order: u32, values: &mut [f64]) -> Result<()> {
        self.inner.get_output_derivatives(order, values)?;
        // An overridden output is constant; a bias does not change slopes.
        for tl in &self.observed {
            if let (EventSlot::Observed(k), Some(EventAction::Override(_))) =
                (tl.slot, tl.at(self.now))
                && k < values.len()
            {
                values[k] = 0.0;
            }
        }
        Ok(())
    }

    fn save_state(&mut self, reuse: Option<StateId>) -> Result<StateId> {
        let id = self.inner.save_state(reuse)?;
        self.saved_times.insert(id.0, self.now);
        Ok(id)
    }

    fn restore_state(&mut self, id: StateId) -> Result<()> {
        self.inner.restore_state(id)?;
        if let Some(&t) = self.saved_times.get(&id.0) {
            self.now = t;
        }
        Ok(())
    }

    fn free_state(&mut self, id: StateId) -> Result<()> {
        self.saved_times.remove(&id.0);
        self.inner.free_state(id)
    }

    fn terminate(&mut self) -> Result<()> {
        self.inner.terminate()
    }

    fn counters(&self) -> CallCounters {
        self.inner.counters()
    }

    fn step_function(&self) -> &'static str {
        self.inner.step_function()
    }

    fn take_recent_log(&mut self) -> Vec<String> {
        self.inner.take_recent_log()
    }

    fn feedthrough_jacobian(&mut self, jacobian: &mut [f64]) -> Result<bool> {
        self.inner.feedthrough_jacobian(jacobian)
    }

    fn as_system(&mut self) -> Option<&mut crate::system::System> {
        self.inner.as_system()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_event_at_or_before_the_time_is_in_effect() {
        let tl = Timeline {
            slot: EventSlot::Input(0),
            events: vec![
                (1.0, EventAction::Override(5.0)),
                (2.0, EventAction::Bias(1.0)),
                (3.0, EventAction::Reset),
            ],
        };
        assert_eq!(tl.at(0.5), None);
        assert_eq!(tl.at(1.0), Some(EventAction::Override(5.0)));
        assert_eq!(tl.at(1.0 - 1e-15), Some(EventAction::Override(5.0)));
        assert_eq!(tl.at(2.5), Some(EventAction::Bias(1.0)));
        assert_eq!(tl.at(3.0), None);
        assert_eq!(tl.at(10.0), None);
    }

    #[test]
    fn the_schedule_gives_the_next_time_and_the_events_of_a_step() {
        let s = EventSchedule::new(vec![
            (0.3, "b".into()),
            (0.1, "a".into()),
            (0.3, "c".into()),
        ]);
        assert_eq!(s.next_after(0.0), Some(0.1));
        assert_eq!(s.next_after(0.1), Some(0.3));
        assert_eq!(s.next_after(0.1 + 0.2), None);
        assert_eq!(s.next_after(0.3), None);
        let names: Vec<&str> = s.between(0.2, 0.3).map(|e| e.1.as_str()).collect();
        assert_eq!(names, ["b", "c"]);
        assert_eq!(s.between(0.1, 0.1).count(), 1);
        assert_eq!(s.between(0.0, 0.05).count(), 0);
    }
}
