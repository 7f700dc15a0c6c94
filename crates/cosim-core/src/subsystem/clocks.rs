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
    /// `priority` (Scheduled Execution: the smaller activates first).
    priority: u32,
    /// The interval in effect (periodic Clocks), s.
    interval: Option<f64>,
    /// Its next activation, s (`None`: not scheduled).
    next: Option<f64>,
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
    partitions: Vec<Partition>,
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
    /// clocked slot. Clocked arrays are not supported.
    pub(super) fn new(
        md: &ModelDescription,
        inputs: &[SlotVar],
        observed: &[SlotVar],
        n_outputs: usize,
        name: &str,
    ) -> Result<Option<Box<Clocks>>> {
        let clocks: Vec<&Variable> = md.variables.iter().filter(|v| v.clock.is_some()).collect();
        let clocked = |vars: &[SlotVar]| -> Vec<bool> {
            vars.iter()
                .flat_map(|sv| {
                    let c = !md.variables[sv.variable].clocks.is_empty();
                    std::iter::repeat_n(c, sv.len())
                })
                .collect()
        };
        let (clocked_inputs, clocked_observed) = (clocked(inputs), clocked(observed));
        let is_clock = |sv: &SlotVar| md.variables[sv.variable].clock.is_some();
        let triggered = inputs
            .iter()
            .enumerate()
            .filter(|(_, sv)| is_clock(sv))
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
        for c in &clocks {
            let Some(attrs) = c.clock else { continue };
            use cosim_fmi::model_description::Causality;
            match c.causality {
                Causality::Input if attrs.interval_variability.is_time_based() => {
                    timed.push(TimedClock {
                        vr: c.value_reference,
                        variability: attrs.interval_variability,
                        declared_interval: attrs.interval_decimal,
                        declared_shift: attrs.shift_decimal,
                        priority: attrs.priority.unwrap_or(u32::MAX),
                        interval: attrs.interval_decimal,
                        next: None,
                    })
                }
                Causality::Output => outputs.push(c.value_reference),
                _ => {}
            }
            let of_clock = |v: &Variable| v.clocks.contains(&c.value_reference);
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
        Ok(Some(Box::new(Clocks {
            last: clocks.iter().map(|c| (c.value_reference, None)).collect(),
            triggered,
            clock_slots,
            timed,
            outputs,
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
    /// interval the FMU gives for the aperiodic ones), and the values of
    /// the clocked observed slots (readable there).
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
                }
                I::Triggered => {}
            }
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
    /// partition of every time-based input Clock due, in the order of
    /// their priorities (the smaller first; FMI 3.0 sec. 5.1), each with
    /// its clocked inputs set before `fmi3ActivateModelPartition` and its
    /// clocked outputs read after it.
    pub(super) fn activate_partitions(
        &mut self,
        inst: &mut Instance,
        now: f64,
        info: &SubsystemInfo,
    ) -> Result<()> {
        let mut due: Vec<(u32, u32)> = self
            .timed
            .iter()
            .filter(|c| c.next.is_some_and(|t| reached(t, now)))
            .map(|c| (c.priority, c.vr))
            .collect();
        // (Stable: Clocks of one priority in the model description's order.)
        due.sort_by_key(|&(priority, _)| priority);
        let n = self.y.len();
        for (_, clock) in due {
            let mut part = self.partitions.iter_mut().find(|p| p.clock == clock);
            if let Some(p) = part.as_mut()
                && p.has_inputs
            {
                p.inputs.set(inst, &self.u)?;
            }
            inst.activate_model_partition(clock, now)?;
            if let Some(p) = part
                && p.has_observed
            {
                p.observed.get(inst, &mut self.y, (0, n), info)?;
            }
            for (vr, at) in &mut self.last {
                if *vr == clock {
                    *at = Some(now);
                }
            }
        }
        Ok(())
    }

    /// After the update at `now`: the next activation of every time-based
    /// input Clock that ticked (periodic: one interval on, or the new
    /// interval from now where a tunable one's changed; aperiodic: the
    /// interval the FMU gives), and of the countdown Clocks (asked at
    /// every event).
    pub(super) fn reschedule(&mut self, inst: &mut Instance, now: f64) -> Result<()> {
        use IntervalVariability as I;
        for c in &mut self.timed {
            let ticked = c.next.is_some_and(|t| reached(t, now));
            let ask = match c.variability {
                I::Countdown => true,
                I::Changing => ticked,
                I::Tunable => ticked && c.declared_interval.is_none(),
                _ => false,
            };
            if ask {
                let (interval, q) = inst.get_interval_decimal(&[c.vr])?[0];
                match q {
                    IntervalQualifier::Changed => {
                        c.interval = Some(interval);
                        c.next = Some(now + interval);
                        continue;
                    }
                    IntervalQualifier::NotYetKnown if c.variability != I::Tunable => {
                        c.next = None;
                        continue;
                    }
                    _ => {}
                }
            }
            if ticked {
                c.next = match (c.variability, c.interval, c.next) {
                    (I::Constant | I::Fixed | I::Tunable, Some(i), Some(t)) if i > 0.0 => {
                        Some(t + i)
                    }
                    // (An aperiodic Clock the FMU said nothing new of.)
                    _ => None,
                };
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
        for p in self.partitions.iter_mut().filter(|p| p.has_observed) {
            p.observed.get(inst, &mut self.y, (0, n), info)?;
        }
        Ok(())
    }
}
