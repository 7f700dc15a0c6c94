//! The FMI 3 Clocks of an FMU subsystem (FMI 3.0 sec. 2.2.8; docs/events.md):
//! its time-based input Clocks' schedule, its output Clocks, and its
//! clocked variables, which are set and read only while one of their
//! Clocks is active, in Event Mode.
//!
//! Between activations a clocked input is not set (the coupled value
//! waits for the next tick) and a clocked output keeps the value read at
//! its Clock's last activation: the steps set and read the other
//! variables only. At a tick the system's event iteration enters Event
//! Mode and calls [`Clocks::activate`] before the update: the Clocks due
//! are set active (`fmi3SetClock`), their clocked inputs set from the
//! coupled values, their clocked outputs read; then the output Clocks
//! that ticked (`fmi3GetClock`) have their clocked outputs read; after
//! the update ([`Clocks::reschedule`]) each Clock that ticked gets its
//! next activation (its interval, or `fmi3GetIntervalDecimal` for the
//! Clocks whose interval the FMU decides).

use cosim_fmi::model_description::{IntervalVariability, ModelDescription, Variable};
use cosim_fmi::{Instance, IntervalQualifier};

use super::{SlotVar, SubsystemInfo, TypedSlots};
use crate::error::Result;

/// Two times within this (relative) are the same tick: the importer's
/// communication points are on its time grid, the FMU's ticks sums of
/// intervals.
const SAME_TIME: f64 = 1e-9;

fn reached(tick: f64, now: f64) -> bool {
    tick <= now + SAME_TIME * now.abs().max(1.0)
}

fn same_instant(a: f64, b: f64) -> bool {
    (a - b).abs() <= SAME_TIME * b.abs().max(1.0)
}

/// A time-based input Clock.
#[derive(Debug)]
struct TimedClock {
    vr: u32,
    variability: IntervalVariability,
    /// The interval the model description gives (`intervalDecimal`).
    declared_interval: Option<f64>,
    /// The shift it gives (`shiftDecimal`, 0 when absent).
    declared_shift: f64,
    /// The interval in effect (periodic Clocks), s.
    interval: Option<f64>,
    /// Its next activation, s (`None`: not scheduled).
    next: Option<f64>,
}

impl TimedClock {
    /// The Clock was activated at `now` (its update done): its next
    /// activation. Periodic: one interval on. Changing: the interval the
    /// FMU gives now. Countdown: none until the FMU arms it again (in
    /// Event Mode asked by [`Clocks::reschedule`], in Scheduled Execution
    /// said in Clock Update Mode).
    fn advance(&mut self, inst: &mut Instance, now: f64) -> Result<()> {
        use IntervalVariability as I;
        self.next = match (self.variability, self.interval) {
            (I::Constant | I::Fixed | I::Tunable, Some(i)) if i > 0.0 => self.next.map(|t| t + i),
            (I::Changing, _) => {
                let (interval, q) = inst.get_interval_decimal(&[self.vr])?[0];
                match q {
                    IntervalQualifier::Changed => self.interval = Some(interval),
                    IntervalQualifier::NotYetKnown => self.interval = None,
                    IntervalQualifier::Unchanged => {}
                }
                self.interval.map(|i| now + i)
            }
            _ => None,
        };
        Ok(())
    }
}

/// The clocked variables of one Clock, among the subsystem's slots.
#[derive(Debug)]
struct Partition {
    clock: u32,
    inputs: Box<TypedSlots>,
    observed: Box<TypedSlots>,
    has_inputs: bool,
    has_observed: bool,
}

/// The Clocks of an FMU subsystem.
#[derive(Debug)]
pub(super) struct Clocks {
    timed: Vec<TimedClock>,
    /// Triggered input Clocks fed by a connection: (input slot, value
    /// reference, last activation). The slot's value 1 activates it, once
    /// per instant.
    triggered: Vec<(usize, u32, Option<f64>)>,
    /// Every Clock's last activation (input Clocks set, output Clocks
    /// read active), s.
    last: Vec<(u32, Option<f64>)>,
    /// Observed slots that are Clocks: (slot, value reference); 1 at the
    /// instant of an activation, else 0.
    clock_slots: Vec<(usize, u32)>,
    /// Triggered output Clocks' value references.
    outputs: Vec<u32>,
    /// Input Clocks' priorities: (value reference, priority).
    priorities: Vec<(u32, u32)>,
    /// Scheduled Execution: what the Clock Update Mode callbacks of the
    /// last activation said.
    updates: cosim_fmi::ClockUpdates,
    partitions: Vec<Partition>,
    /// Scheduled Execution: the variables no Clock clocks, set before and
    /// read after every activation (FMI 3.0 sec. 5.2.1: no `fmi3Get*`
    /// after `fmi3Set*` without an activation between; the steps set and
    /// read nothing).
    unclocked: Option<Partition>,
    /// Per observed slot: it is a clocked variable.
    pub(super) clocked_observed: Vec<bool>,
    /// Per input slot: it is a clocked variable.
    pub(super) clocked_inputs: Vec<bool>,
    /// The coupled input values last given ([`Clocks::remember_inputs`]).
    u: Vec<f64>,
    /// The clocked observed values read at their Clocks' last activation
    /// (the others are not read here).
    y: Vec<f64>,
    /// Scratch: the Clocks activated now, and `fmi3GetClock`'s answers.
    active: Vec<u32>,
    flags: Vec<bool>,
}

impl Clocks {
    /// The Clocks of an FMU (`md`) whose slots are `inputs` and `observed`
    /// (`n_outputs` of them outputs); `None` when it has no Clock and no
    /// clocked slot. Clocked arrays are not supported. `scheduled`: the
    /// FMU runs Scheduled Execution, where every slot is set and read at
    /// the activations only.
    pub(super) fn new(
        md: &ModelDescription,
        inputs: &[SlotVar],
        observed: &[SlotVar],
        n_outputs: usize,
        name: &str,
        scheduled: bool,
    ) -> Result<Option<Box<Clocks>>> {
        let clocks: Vec<&Variable> = md.variables.iter().filter(|v| v.clock.is_some()).collect();
        let clocked = |vars: &[SlotVar]| -> Vec<bool> {
            vars.iter()
                .flat_map(|sv| {
                    let c = scheduled || !md.variables[sv.variable].clocks.is_empty();
                    std::iter::repeat_n(c, sv.len())
                })
                .collect()
        };
        let (clocked_inputs, clocked_observed) = (clocked(inputs), clocked(observed));
        let is_clock = |sv: &SlotVar| md.variables[sv.variable].clock.is_some();
        let is_triggered = |sv: &SlotVar| {
            md.variables[sv.variable]
                .clock
                .is_some_and(|c| c.interval_variability == IntervalVariability::Triggered)
        };
        let triggered = inputs
            .iter()
            .enumerate()
            .filter(|(_, sv)| is_triggered(sv))
            .map(|(slot, sv)| (slot, md.variables[sv.variable].value_reference, None))
            .collect();
        let clock_slots = observed
            .iter()
            .enumerate()
            .filter(|(_, sv)| is_clock(sv))
            .map(|(slot, sv)| (slot, md.variables[sv.variable].value_reference))
            .collect();
        if clocks.is_empty() && !clocked_inputs.contains(&true) && !clocked_observed.contains(&true)
        {
            return Ok(None);
        }
        if let Some(sv) = inputs
            .iter()
            .chain(observed)
            .find(|sv| !md.variables[sv.variable].clocks.is_empty() && !sv.shape.is_empty())
        {
            return Err(crate::CoreError::Config(format!(
                "subsystem '{name}': '{}' is a clocked array, which cosim does not couple or trace yet",
                md.variables[sv.variable].name
            )));
        }
        let mut timed = Vec::new();
        let mut outputs = Vec::new();
        let mut partitions = Vec::new();
        let mut priorities = Vec::new();
        for c in &clocks {
            let Some(attrs) = c.clock else { continue };
            use cosim_fmi::model_description::Causality;
            if c.causality == Causality::Input {
                priorities.push((c.value_reference, attrs.priority.unwrap_or(u32::MAX)));
            }
            match c.causality {
                Causality::Input if attrs.interval_variability.is_time_based() => {
                    timed.push(TimedClock {
                        vr: c.value_reference,
                        variability: attrs.interval_variability,
                        declared_interval: attrs.interval_decimal,
                        declared_shift: attrs.shift_decimal,
                        interval: attrs.interval_decimal,
                        next: None,
                    })
                }
                Causality::Output => outputs.push(c.value_reference),
                _ => {}
            }
            // (A Clock clocked by a Clock, as a countdown Clock armed in
            // another's partition, is not one of its clocked variables.)
            let of_clock =
                |v: &Variable| v.clock.is_none() && v.clocks.contains(&c.value_reference);
            let part = Partition {
                clock: c.value_reference,
                inputs: TypedSlots::of(md, inputs, 0, name, of_clock)?,
                observed: TypedSlots::of(md, observed, n_outputs, name, of_clock)?,
                has_inputs: inputs.iter().any(|sv| of_clock(&md.variables[sv.variable])),
                has_observed: observed
                    .iter()
                    .any(|sv| of_clock(&md.variables[sv.variable])),
            };
            partitions.push(part);
        }
        let unclocked = if scheduled {
            let of_none = |v: &Variable| v.clock.is_none() && v.clocks.is_empty();
            let any = |vars: &[SlotVar]| vars.iter().any(|sv| of_none(&md.variables[sv.variable]));
            Some(Partition {
                clock: u32::MAX,
                inputs: TypedSlots::of(md, inputs, 0, name, of_none)?,
                observed: TypedSlots::of(md, observed, n_outputs, name, of_none)?,
                has_inputs: any(inputs),
                has_observed: any(observed),
            })
        } else {
            None
        };
        Ok(Some(Box::new(Clocks {
            unclocked,
            last: clocks.iter().map(|c| (c.value_reference, None)).collect(),
            triggered,
            clock_slots,
            timed,
            outputs,
            priorities,
            updates: cosim_fmi::ClockUpdates::default(),
            partitions,
            u: vec![0.0; clocked_inputs.len()],
            y: vec![0.0; clocked_observed.len()],
            clocked_observed,
            clocked_inputs,
            active: Vec::new(),
            flags: Vec::new(),
        })))
    }

    /// Whether the subsystem has clocked inputs or observed slots (their
    /// steps then set and read the others only).
    pub(super) fn has_clocked_slots(&self) -> bool {
        self.clocked_inputs.contains(&true)
            || self.clocked_observed.contains(&true)
            || !self.triggered.is_empty()
            || !self.clock_slots.is_empty()
    }

    /// In Initialization Mode, at the start time `t0`: the first
    /// activation of each time-based input Clock (its shift, or the
    /// interval the FMU gives for the aperiodic ones). In Scheduled
    /// Execution, also the Clocks the Clock Update Mode callback asks
    /// about.
    pub(super) fn start(&mut self, inst: &mut Instance, t0: f64) -> Result<()> {
        use IntervalVariability as I;
        for c in &mut self.timed {
            match c.variability {
                I::Constant | I::Fixed | I::Tunable => {
                    if c.interval.is_none() {
                        let (interval, _) = inst.get_interval_decimal(&[c.vr])?[0];
                        c.interval = Some(interval);
                    }
                    // (Without an interval in the model description, the
                    // FMU gives interval and shift.)
                    let shift = match c.declared_interval {
                        Some(_) => c.declared_shift,
                        None => inst.get_shift_decimal(&[c.vr])?[0],
                    };
                    c.next = Some(t0 + shift);
                }
                I::Changing | I::Countdown => {
                    let (interval, q) = inst.get_interval_decimal(&[c.vr])?[0];
                    c.next = (q != IntervalQualifier::NotYetKnown).then_some(t0 + interval);
                    c.interval = c.next.map(|_| interval);
                }
                I::Triggered => {}
            }
        }
        if inst.interface() == cosim_fmi::Interface::ScheduledExecution {
            let countdowns: Vec<u32> = self
                .timed
                .iter()
                .filter(|c| c.variability == I::Countdown)
                .map(|c| c.vr)
                .collect();
            inst.watch_clock_updates(&self.outputs, &countdowns)?;
        }
        Ok(())
    }

    /// The earliest scheduled activation of a time-based input Clock.
    pub(super) fn next_tick(&self) -> Option<f64> {
        self.timed.iter().filter_map(|c| c.next).reduce(f64::min)
    }

    /// The coupled input values given now (`set_inputs`): the clocked ones
    /// are set at their Clocks' activations.
    pub(super) fn remember_inputs(&mut self, values: &[f64]) {
        let n = self.u.len().min(values.len());
        self.u[..n].copy_from_slice(&values[..n]);
    }

    /// In Event Mode at `now`, before the update: activates the
    /// time-based input Clocks due, sets their clocked inputs and reads
    /// their clocked outputs; then reads which output Clocks ticked and
    /// their clocked outputs.
    pub(super) fn activate(
        &mut self,
        inst: &mut Instance,
        now: f64,
        info: &SubsystemInfo,
    ) -> Result<()> {
        self.active.clear();
        for c in &self.timed {
            if c.next.is_some_and(|t| reached(t, now)) {
                self.active.push(c.vr);
            }
        }
        for (slot, vr, at) in &mut self.triggered {
            let already = at.is_some_and(|t| same_instant(t, now));
            if self.u[*slot] != 0.0 && !already {
                self.active.push(*vr);
                *at = Some(now);
            }
        }
        if !self.active.is_empty() {
            let on = vec![true; self.active.len()];
            inst.set_clock(&self.active, &on)?;
        }
        let n_inputs = self.active.len();
        if !self.outputs.is_empty() {
            self.flags.clear();
            self.flags.resize(self.outputs.len(), false);
            inst.get_clock(&self.outputs, &mut self.flags)?;
            for (&vr, &on) in self.outputs.iter().zip(&self.flags) {
                if on {
                    self.active.push(vr);
                }
            }
        }
        for (vr, at) in &mut self.last {
            if self.active.contains(vr) {
                *at = Some(now);
            }
        }
        for (k, &clock) in self.active.iter().enumerate() {
            let Some(p) = self.partitions.iter_mut().find(|p| p.clock == clock) else {
                continue;
            };
            if k < n_inputs && p.has_inputs {
                p.inputs.set(inst, &self.u)?;
            }
            if p.has_observed {
                let n = self.y.len();
                p.observed.get(inst, &mut self.y, (0, n), info)?;
            }
        }
        Ok(())
    }

    /// Scheduled Execution, at `now` (Clock Activation Mode): the model
    /// partition of every input Clock due, in the order of their
    /// priorities (the smaller first; FMI 3.0 sec. 5.1), each once: the
    /// time-based Clocks whose activation is due, the triggered ones a
    /// connection activates now, and the countdown Clocks an activation
    /// armed for now.
    pub(super) fn activate_partitions(
        &mut self,
        inst: &mut Instance,
        now: f64,
        info: &SubsystemInfo,
    ) -> Result<()> {
        while let Some(clock) = self.next_due_partition(now) {
            self.activate_partition(inst, clock, now, info)?;
        }
        Ok(())
    }

    /// The input Clock of the highest priority (the smallest value; of one
    /// priority, the first in the model description) due at `now` and not
    /// activated at `now` yet.
    fn next_due_partition(&self, now: f64) -> Option<u32> {
        let fresh = |vr: u32| !self.activated_at(vr, now);
        let timed = self
            .timed
            .iter()
            .filter(|c| c.next.is_some_and(|t| reached(t, now)) && fresh(c.vr))
            .map(|c| c.vr);
        let triggered = self
            .triggered
            .iter()
            .filter(|&&(slot, vr, _)| self.u[slot] != 0.0 && fresh(vr))
            .map(|&(_, vr, _)| vr);
        let priority = |vr: u32| {
            let p = self.priorities.iter().find(|p| p.0 == vr);
            p.map_or(u32::MAX, |p| p.1)
        };
        let position = |vr: u32| self.last.iter().position(|l| l.0 == vr);
        timed
            .chain(triggered)
            .min_by_key(|&vr| (priority(vr), position(vr)))
    }

    /// Whether Clock `vr` was activated (input) or reported active
    /// (output) at `now`.
    fn activated_at(&self, vr: u32, now: f64) -> bool {
        self.last
            .iter()
            .any(|&(c, at)| c == vr && at.is_some_and(|t| same_instant(t, now)))
    }

    fn mark_activated(&mut self, vr: u32, now: f64) {
        for (c, at) in &mut self.last {
            if *c == vr {
                *at = Some(now);
            }
        }
        for (_, c, at) in &mut self.triggered {
            if *c == vr {
                *at = Some(now);
            }
        }
    }

    /// One `fmi3ActivateModelPartition` of `clock` at `now`: its clocked
    /// inputs set before, its next activation and what the Clock Update
    /// Mode callbacks said (output Clocks that ticked, countdown Clocks
    /// armed) taken after, and the clocked outputs read.
    fn activate_partition(
        &mut self,
        inst: &mut Instance,
        clock: u32,
        now: f64,
        info: &SubsystemInfo,
    ) -> Result<()> {
        let n = self.y.len();
        let own = self.partitions.iter_mut().find(|p| p.clock == clock);
        for p in own.into_iter().chain(self.unclocked.as_mut()) {
            if p.has_inputs {
                p.inputs.set(inst, &self.u)?;
            }
        }
        inst.activate_model_partition(clock, now)?;
        self.mark_activated(clock, now);
        if let Some(c) = self.timed.iter_mut().find(|c| c.vr == clock) {
            c.advance(inst, now)?;
        }
        inst.take_clock_updates(&mut self.updates)?;
        for &(vr, interval, q) in &self.updates.countdowns {
            if let Some(c) = self.timed.iter_mut().find(|c| c.vr == vr) {
                c.next = (q == IntervalQualifier::Changed).then_some(now + interval);
            }
        }
        let mut read = std::mem::take(&mut self.updates.output_clocks);
        read.push(clock);
        for &vr in &read {
            self.mark_activated(vr, now);
            if let Some(p) = self.partitions.iter_mut().find(|p| p.clock == vr)
                && p.has_observed
            {
                p.observed.get(inst, &mut self.y, (0, n), info)?;
            }
        }
        read.clear();
        self.updates.output_clocks = read;
        if let Some(p) = self.unclocked.as_mut().filter(|p| p.has_observed) {
            p.observed.get(inst, &mut self.y, (0, n), info)?;
        }
        Ok(())
    }

    /// Event Mode, after the update at `now`: the next activation of
    /// every time-based input Clock activated now, the countdown Clocks'
    /// intervals (asked in every Event Mode), and the intervals of the
    /// tunable Clocks the FMU decides (asked in every Event Mode: a
    /// tunable parameter may have changed).
    pub(super) fn reschedule(&mut self, inst: &mut Instance, now: f64) -> Result<()> {
        use IntervalVariability as I;
        for c in &mut self.timed {
            if c.next.is_some_and(|t| reached(t, now)) {
                c.advance(inst, now)?;
            }
            let ask = match c.variability {
                I::Countdown => true,
                I::Tunable => c.declared_interval.is_none(),
                _ => false,
            };
            if ask {
                let (interval, q) = inst.get_interval_decimal(&[c.vr])?[0];
                match q {
                    IntervalQualifier::Changed => {
                        c.interval = Some(interval);
                        c.next = Some(now + interval);
                    }
                    IntervalQualifier::NotYetKnown => c.next = None,
                    IntervalQualifier::Unchanged => {}
                }
            }
        }
        Ok(())
    }

    /// Writes the clocked observed values (as read at their Clocks' last
    /// activation) into `values` (every observed slot), and each observed
    /// Clock's: 1 where it was activated at `now`, else 0.
    pub(super) fn fill_observed(&self, values: &mut [f64], now: f64) {
        for ((v, &y), &c) in values.iter_mut().zip(&self.y).zip(&self.clocked_observed) {
            if c {
                *v = y;
            }
        }
        for &(slot, vr) in &self.clock_slots {
            let ticked = self
                .last
                .iter()
                .any(|&(c, at)| c == vr && at.is_some_and(|t| same_instant(t, now)));
            if let Some(v) = values.get_mut(slot) {
                *v = if ticked { 1.0 } else { 0.0 };
            }
        }
    }

    /// In Initialization Mode: the clocked observed values there.
    pub(super) fn read_initial(&mut self, inst: &mut Instance, info: &SubsystemInfo) -> Result<()> {
        let n = self.y.len();
        let all = self.partitions.iter_mut().chain(self.unclocked.as_mut());
        for p in all.filter(|p| p.has_observed) {
            p.observed.get(inst, &mut self.y, (0, n), info)?;
        }
        Ok(())
    }
}
