//! FMI 3 Clocks on a Co-Simulation [`Instance`] with event mode (FMI 3.0
//! sec. 2.2.9, 2.3.5): `fmi3SetClock` / `fmi3GetClock`, the intervals and
//! shifts of periodic Clocks, and the access rules of clocked variables.
//!
//! A Clock's activation is its value in [`crate::Values`] (1 while active,
//! so the model reads `v.bool(CLOCK)` in its outputs and update, and FMU
//! states hold it); the rest (intervals, shifts, which periodic Clocks an
//! update of this Event Mode saw, which output ticks were read) is
//! [`ClockState`], part of the FMU state too.
//!
//! The rules (a refused call returns Error and changes nothing):
//! - Clocks need `eventModeUsed = true` (FMI 3.0 sec. 2.3.1):
//!   `fmi3EnterInitializationMode` is refused without;
//! - `fmi3SetClock`: input Clocks only, in Event Mode only; `true`
//!   activates (a periodic Clock only at one of its ticks, `anchor + k *
//!   interval`, and at most for one `fmi3UpdateDiscreteStates` per Event
//!   Mode); `false` only for `canBeDeactivated` Clocks;
//! - `fmi3GetClock`: output Clocks only, in Event Mode only; true once per
//!   activation (the next call returns false);
//! - `fmi3UpdateDiscreteStates` deactivates every Clock that was active
//!   when it was called; an output Clock the model ticks in its update
//!   stays active, and the update asks for another
//!   (`discreteStatesNeedUpdate`), so that the importer reads it;
//! - clocked variables: read (and, inputs, set) only in Initialization
//!   Mode and, in Event Mode, while one of their Clocks is active (clocked
//!   inputs also in Instantiated: their start values);
//! - intervals and shifts: periodic Clocks only; `fmi3GetIntervalDecimal`
//!   (qualifier `fmi3IntervalUnchanged`: every periodic Clock of the kit has
//!   its `intervalDecimal`, FMI 3.0 sec. 2.2.9.4) and `fmi3GetShiftDecimal`
//!   in Initialization and Event Mode; `fmi3SetIntervalDecimal` on `fixed`
//!   Clocks in Initialization Mode, on `tunable` ones in Initialization and
//!   Event Mode (the new interval counts from the current time);
//!   `fmi3SetShiftDecimal` on `fixed` and `tunable` Clocks in
//!   Initialization Mode; the Fraction variants refused
//!   (`supportsFraction = false`).

use super::{Fail, Instance, Interface, Mode, R, Reader, tolerance};
use crate::caps::FmiVersion;
use crate::model::{Causality, IntervalVariability, Variable, Vr};

/// `fmi3IntervalUnchanged` (fmi3FunctionTypes.h `fmi3IntervalQualifier`).
pub const INTERVAL_UNCHANGED: i32 = 1;

/// The run-time state of one Clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockRt {
    /// The Clock's value reference.
    pub vr: Vr,
    /// Periodic Clocks: the current interval.
    interval: f64,
    /// Periodic Clocks: the delay of the first tick after the start time.
    shift: f64,
    /// Periodic Clocks: a tick time (the start time plus the shift, or
    /// where a tunable interval changed); the ticks are `anchor + k *
    /// interval`, k >= 0 (k >= 1 after a change).
    anchor: f64,
    /// A tunable Clock's interval changed at `anchor`: its first tick is
    /// one interval later.
    changed: bool,
    /// Periodic Clocks: an update of the current Event Mode ran with the
    /// Clock active.
    updated: bool,
    /// Output Clocks: `fmi3GetClock` reported the current activation.
    reported: bool,
    /// Scheduled Execution: the time of the partition's last activation
    /// (NaN: none yet).
    last_activation: f64,
}

/// The Clocks of an instance (part of its FMU state).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClockState {
    clocks: Vec<ClockRt>,
    /// Scheduled Execution: a value was set since the last partition
    /// activation (no `fmi3Get*` until the next, FMI 3.0 sec. 5.2.1).
    set_since_activation: std::cell::Cell<bool>,
}

impl ClockState {
    /// The Clocks of `spec` at the start time `t0`.
    pub(super) fn new(spec: &crate::ModelSpec, t0: f64) -> Self {
        ClockState {
            clocks: spec
                .clock_variables()
                .map(|v| {
                    let c = v.clock.unwrap_or_else(|| unreachable!("a Clock"));
                    let shift = c.shift_decimal.unwrap_or(0.0);
                    ClockRt {
                        vr: v.vr,
                        interval: c.interval_decimal.unwrap_or(0.0),
                        shift,
                        anchor: t0 + shift,
                        changed: false,
                        updated: false,
                        reported: false,
                        last_activation: f64::NAN,
                    }
                })
                .collect(),
            set_since_activation: std::cell::Cell::new(false),
        }
    }

    fn get(&self, vr: Vr) -> Option<&ClockRt> {
        self.clocks.iter().find(|c| c.vr == vr)
    }

    fn get_mut(&mut self, vr: Vr) -> Option<&mut ClockRt> {
        self.clocks.iter_mut().find(|c| c.vr == vr)
    }

    /// The start time changed (`fmi3EnterInitializationMode`).
    pub(super) fn set_start(&mut self, t0: f64) {
        for c in &mut self.clocks {
            c.anchor = t0 + c.shift;
            c.changed = false;
        }
    }

    /// A new Event Mode: no update saw a Clock yet.
    pub(super) fn enter_event_mode(&mut self) {
        for c in &mut self.clocks {
            c.updated = false;
        }
    }

    /// The bytes of the serialized FMU state.
    pub(super) fn to_bytes(&self, b: &mut Vec<u8>) {
        for c in &self.clocks {
            for x in [c.interval, c.shift, c.anchor, c.last_activation] {
                b.extend_from_slice(&x.to_le_bytes());
            }
            b.push(u8::from(c.changed) | u8::from(c.updated) << 1 | u8::from(c.reported) << 2);
        }
        if !self.clocks.is_empty() {
            b.push(u8::from(self.set_since_activation.get()));
        }
    }

    /// Reads [`ClockState::to_bytes`] of the Clocks of `self` (their
    /// value references).
    pub(super) fn read(&self, r: &mut Reader<'_>) -> Result<Self, String> {
        let mut out = self.clone();
        for c in &mut out.clocks {
            c.interval = r.f64()?;
            c.shift = r.f64()?;
            c.anchor = r.f64()?;
            c.last_activation = r.f64()?;
            let flags = r.u8()?;
            if flags > 7 {
                return Err("corrupt serialized FMU state (clock flags)".into());
            }
            c.changed = flags & 1 != 0;
            c.updated = flags & 2 != 0;
            c.reported = flags & 4 != 0;
        }
        if !out.clocks.is_empty() {
            out.set_since_activation.set(match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err("corrupt serialized FMU state (clock flags)".into()),
            });
        }
        Ok(out)
    }
}

impl Instance {
    /// Whether the instance has Clocks (a Co-Simulation instance of a
    /// model with Clocks).
    pub fn has_clocks(&self) -> bool {
        self.interface == Interface::CoSimulation && !self.clocks.clocks.is_empty()
    }

    /// The Clock `vr`, else why not.
    fn clock(&self, fname: &str, vr: Vr) -> R<&'static Variable> {
        let spec: &'static crate::ModelSpec = self.spec;
        match spec.variable(vr) {
            Some(v) if v.is_clock() => Ok(v),
            Some(v) => Err(Fail::usage(format!(
                "{fname}: {} {} (vr {vr}) is no Clock",
                v.ty.fmi3_name(),
                v.name
            ))),
            None => Err(Fail::usage(format!(
                "{fname}: unknown value reference {vr}"
            ))),
        }
    }

    /// Refuses a Clock function of an instance without Clocks.
    fn require_clocks(&self) -> R<()> {
        if self.has_clocks() {
            Ok(())
        } else {
            Err(Fail::usage("this FMU has no clocks"))
        }
    }

    /// Refuses a Clock function outside the states of `allowed` (names
    /// for the message).
    fn require_clock_mode(&self, fname: &str, modes: &[Mode], allowed: &str) -> R<()> {
        if modes.contains(&self.mode) {
            Ok(())
        } else {
            Err(Fail::sequence(format!(
                "{fname} called in state {} ({allowed})",
                self.mode_name()
            )))
        }
    }

    /// The active Clocks (value references), in vr order.
    pub fn active_clocks(&self) -> Vec<Vr> {
        self.clocks
            .clocks
            .iter()
            .filter(|c| self.values[c.vr] != 0.0)
            .map(|c| c.vr)
            .collect()
    }

    /// `fmi3SetClock` (Event Mode, input Clocks): activates (`true`) or
    /// deactivates (`false`, `canBeDeactivated` only) Clocks; all or
    /// nothing.
    pub fn set_clocks(&mut self, vrs: &[Vr], active: &[bool]) -> R<()> {
        let fname = "fmi3SetClock";
        self.require_clocks()?;
        self.require_clock_mode(
            fname,
            &[Mode::EventMode],
            "Clocks are activated in Event Mode only",
        )?;
        for (&vr, &on) in vrs.iter().zip(active) {
            let v = self.clock(fname, vr)?;
            let c = v.clock.unwrap_or_else(|| unreachable!("a Clock"));
            if v.causality != Causality::Input {
                return Err(Fail::usage(format!(
                    "{fname}: {} (vr {vr}) is an output Clock: the FMU activates it (fmi3GetClock reads it)",
                    v.name
                )));
            }
            if !on {
                if !c.can_be_deactivated {
                    return Err(Fail::usage(format!(
                        "{fname}: Clock {} (vr {vr}) has canBeDeactivated = false: it cannot be set to fmi3ClockInactive",
                        v.name
                    )));
                }
                continue;
            }
            if !c.interval_variability.is_periodic() {
                continue;
            }
            let rt = self
                .clocks
                .get(vr)
                .copied()
                .unwrap_or_else(|| unreachable!());
            if rt.updated {
                return Err(Fail::sequence(format!(
                    "{fname}: the periodic Clock {} (vr {vr}) was already active in an fmi3UpdateDiscreteStates of this Event Mode \
                     (periodic Clocks are active for at most one update per Event Mode, FMI 3.0 sec. 2.3.5)",
                    v.name
                )));
            }
            let t = self.time;
            let k = (t - rt.anchor) / rt.interval;
            let kr = k.round();
            let on_grid = (t - (rt.anchor + kr * rt.interval)).abs() <= tolerance(t) + 1e-12;
            if !on_grid || kr < if rt.changed { 1.0 } else { 0.0 } {
                let next =
                    rt.anchor + (k.ceil().max(if rt.changed { 1.0 } else { 0.0 })) * rt.interval;
                return Err(Fail::usage(format!(
                    "{fname}: the {} Clock {} (vr {vr}, interval {}, first tick at {}) does not tick at t = {t} \
                     (its next tick is at t = {next})",
                    c.interval_variability.as_str(),
                    v.name,
                    rt.interval,
                    rt.anchor + if rt.changed { rt.interval } else { 0.0 },
                )));
            }
        }
        for (&vr, &on) in vrs.iter().zip(active) {
            self.values[vr] = if on { 1.0 } else { 0.0 };
        }
        self.dirty = true;
        Ok(())
    }

    /// `fmi3GetClock` (Event Mode, output Clocks): true once per
    /// activation.
    pub fn get_clocks(&mut self, vrs: &[Vr], out: &mut [bool]) -> R<()> {
        let fname = "fmi3GetClock";
        self.require_clocks()?;
        self.require_clock_mode(
            fname,
            &[Mode::EventMode],
            "output Clocks are read in Event Mode only",
        )?;
        for &vr in vrs {
            let v = self.clock(fname, vr)?;
            if v.causality != Causality::Output {
                return Err(Fail::usage(format!(
                    "{fname}: {} (vr {vr}) is an input Clock: the importer activates it (fmi3SetClock); \
                     fmi3GetClock reads output Clocks",
                    v.name
                )));
            }
        }
        for (slot, &vr) in out.iter_mut().zip(vrs) {
            let active = self.values[vr] != 0.0;
            let rt = self
                .clocks
                .get_mut(vr)
                .unwrap_or_else(|| unreachable!("a Clock"));
            *slot = active && !rt.reported;
            if active {
                rt.reported = true;
            }
        }
        Ok(())
    }

    /// The periodic Clock `vr` for an interval / shift function, else why
    /// not.
    fn periodic(&self, fname: &str, vr: Vr) -> R<(&'static Variable, IntervalVariability)> {
        let v = self.clock(fname, vr)?;
        let iv = v
            .clock
            .unwrap_or_else(|| unreachable!("a Clock"))
            .interval_variability;
        if !iv.is_periodic() {
            return Err(Fail::usage(format!(
                "{fname}: Clock {} (vr {vr}) is {}: only periodic Clocks (constant, fixed, tunable) have an interval and a shift here",
                v.name,
                iv.as_str()
            )));
        }
        Ok((v, iv))
    }

    /// `fmi3GetIntervalDecimal` (Initialization and Event Mode, periodic
    /// Clocks): the current intervals, each `fmi3IntervalUnchanged`.
    pub fn get_intervals(&mut self, vrs: &[Vr], out: &mut [f64], q: &mut [i32]) -> R<()> {
        let fname = "fmi3GetIntervalDecimal";
        self.require_clocks()?;
        self.require_clock_mode(
            fname,
            &[Mode::Initialization, Mode::EventMode],
            "intervals are read in Initialization Mode and Event Mode",
        )?;
        for &vr in vrs {
            self.periodic(fname, vr)?;
        }
        for (i, &vr) in vrs.iter().enumerate() {
            let rt = self.clocks.get(vr).unwrap_or_else(|| unreachable!());
            out[i] = rt.interval;
            q[i] = INTERVAL_UNCHANGED;
        }
        Ok(())
    }

    /// `fmi3GetShiftDecimal` (Initialization and Event Mode, periodic
    /// Clocks).
    pub fn get_shifts(&mut self, vrs: &[Vr], out: &mut [f64]) -> R<()> {
        let fname = "fmi3GetShiftDecimal";
        self.require_clocks()?;
        self.require_clock_mode(
            fname,
            &[Mode::Initialization, Mode::EventMode],
            "shifts are read in Initialization Mode and Event Mode",
        )?;
        for &vr in vrs {
            self.periodic(fname, vr)?;
        }
        for (slot, &vr) in out.iter_mut().zip(vrs) {
            *slot = self.clocks.get(vr).unwrap_or_else(|| unreachable!()).shift;
        }
        Ok(())
    }

    /// `fmi3SetIntervalDecimal`: `fixed` Clocks in Initialization Mode,
    /// `tunable` ones in Initialization and Event Mode (from Event Mode the
    /// new interval counts from the current time); intervals finite and > 0.
    pub fn set_intervals(&mut self, vrs: &[Vr], intervals: &[f64]) -> R<()> {
        let fname = "fmi3SetIntervalDecimal";
        self.require_clocks()?;
        self.require_clock_mode(
            fname,
            &[Mode::Initialization, Mode::EventMode],
            "intervals are set in Initialization Mode (fixed and tunable Clocks) and Event Mode (tunable Clocks)",
        )?;
        for (&vr, &x) in vrs.iter().zip(intervals) {
            let (v, iv) = self.periodic(fname, vr)?;
            let ok = match iv {
                IntervalVariability::Fixed => self.mode == Mode::Initialization,
                IntervalVariability::Tunable => true,
                _ => false,
            };
            if !ok {
                return Err(Fail::usage(format!(
                    "{fname}: Clock {} (vr {vr}) is {}: its interval {} (FMI 3.0 sec. 2.2.9.2)",
                    v.name,
                    iv.as_str(),
                    if iv == IntervalVariability::Constant {
                        "is the intervalDecimal of the model description, never set"
                    } else {
                        "is set in Initialization Mode only"
                    }
                )));
            }
            if !(x.is_finite() && x > 0.0) {
                return Err(Fail::usage(format!(
                    "{fname}: the interval of Clock {} must be finite and > 0, got {x}",
                    v.name
                )));
            }
        }
        let t = self.time;
        let in_event_mode = self.mode == Mode::EventMode;
        for (&vr, &x) in vrs.iter().zip(intervals) {
            let rt = self.clocks.get_mut(vr).unwrap_or_else(|| unreachable!());
            rt.interval = x;
            if in_event_mode {
                rt.anchor = t;
                rt.changed = true;
            }
        }
        Ok(())
    }

    /// `fmi3SetShiftDecimal`: `fixed` and `tunable` Clocks, in
    /// Initialization Mode; shifts finite and >= 0.
    pub fn set_shifts(&mut self, vrs: &[Vr], shifts: &[f64]) -> R<()> {
        let fname = "fmi3SetShiftDecimal";
        self.require_clocks()?;
        self.require_clock_mode(
            fname,
            &[Mode::Initialization],
            "shifts are set in Initialization Mode only",
        )?;
        for (&vr, &x) in vrs.iter().zip(shifts) {
            let (v, iv) = self.periodic(fname, vr)?;
            if iv == IntervalVariability::Constant {
                return Err(Fail::usage(format!(
                    "{fname}: Clock {} (vr {vr}) is constant: its shift is the model description's, never set",
                    v.name
                )));
            }
            if !(x.is_finite() && x >= 0.0) {
                return Err(Fail::usage(format!(
                    "{fname}: the shift of Clock {} must be finite and >= 0, got {x}",
                    v.name
                )));
            }
        }
        let t0 = self.start_time;
        for (&vr, &x) in vrs.iter().zip(shifts) {
            let rt = self.clocks.get_mut(vr).unwrap_or_else(|| unreachable!());
            rt.shift = x;
            rt.anchor = t0 + x;
            rt.changed = false;
        }
        Ok(())
    }

    /// The Fraction variants: refused (`supportsFraction = false`).
    pub fn refuse_fraction(&self, fname: &str) -> R<()> {
        self.require_clocks()?;
        Err(Fail::usage(format!(
            "{fname}: the Clocks of this FMU have supportsFraction = false (use the Decimal variant)"
        )))
    }

    /// Whether clocked variable `v` may be accessed now (`set`: set,
    /// else read), else why not: Initialization Mode, and in Event Mode
    /// while one of its Clocks is active (clocked inputs also set in
    /// Instantiated).
    pub(super) fn clocked_access(&self, v: &Variable, set: bool) -> R<()> {
        if v.clocks.is_empty() || self.interface != Interface::CoSimulation {
            return Ok(());
        }
        let ok = match self.mode {
            Mode::Initialization => true,
            Mode::Instantiated => set,
            Mode::EventMode => v.clocks.iter().any(|&c| self.values[c] != 0.0),
            // Scheduled Execution: inputs set before their partition runs,
            // values read after it ran.
            Mode::ClockActivation => {
                set || v.clocks.iter().any(|&c| {
                    self.clocks
                        .get(c)
                        .is_some_and(|rt| !rt.last_activation.is_nan())
                })
            }
            _ => false,
        };
        if ok {
            return Ok(());
        }
        if self.mode == Mode::ClockActivation {
            return Err(Fail::sequence(format!(
                "{} {} (vr {}) belongs to the model partition of {}: it can be read only after \
                 fmi3ActivateModelPartition computed it",
                v.causality.as_str(),
                v.name,
                v.vr,
                v.clocks
                    .iter()
                    .map(|&c| self.spec.variable(c).map_or("?", |k| k.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let names: Vec<&str> = v
            .clocks
            .iter()
            .map(|&c| self.spec.variable(c).map_or("?", |k| k.name))
            .collect();
        Err(Fail::sequence(format!(
            "{} {} (vr {}) is clocked by {}: it can be {} only while one of its Clocks is active (Event Mode, \
             after fmi3SetClock / a tick fmi3GetClock reports) or in Initialization Mode, not in state {}{}",
            v.causality.as_str(),
            v.name,
            v.vr,
            names.join(", "),
            if set { "set" } else { "read" },
            self.mode.name(FmiVersion::Fmi3),
            if self.mode == Mode::EventMode {
                " with its Clocks inactive"
            } else {
                ""
            }
        )))
    }

    /// After an update: the Clocks active when it was called (`before`)
    /// are deactivated (periodic ones marked as updated in this Event
    /// Mode); an output Clock the model ticked in the update stays active,
    /// unreported. Returns whether one did (the importer then needs
    /// another update to handle it).
    pub(super) fn deactivate_clocks(&mut self, before: &[Vr]) -> bool {
        let mut ticked = false;
        let spec = self.spec;
        for rt in &mut self.clocks.clocks {
            let was = before.contains(&rt.vr);
            if was {
                self.values[rt.vr] = 0.0;
                rt.reported = false;
                let periodic = spec
                    .variable(rt.vr)
                    .and_then(|v| v.clock)
                    .is_some_and(|c| c.interval_variability.is_periodic());
                if periodic {
                    rt.updated = true;
                }
            } else if self.values[rt.vr] != 0.0 {
                rt.reported = false;
                ticked = true;
            }
        }
        ticked
    }

    /// The output Clocks active now (ticked by the model), in vr order.
    pub(super) fn ticked_output_clocks(&self) -> Vec<Vr> {
        self.clocks
            .clocks
            .iter()
            .filter(|c| {
                self.values[c.vr] != 0.0
                    && self
                        .spec
                        .variable(c.vr)
                        .is_some_and(|v| v.causality == Causality::Output)
            })
            .map(|c| c.vr)
            .collect()
    }
}

/// The importer's `lockPreemption` and `unlockPreemption` of
/// `fmi3InstantiateScheduledExecution` (either may be absent), wrapped by
/// the C layer.
#[derive(Clone, Default)]
pub struct Preemption {
    /// `fmi3LockPreemptionCallback`.
    pub lock: Option<std::sync::Arc<dyn Fn() + Send + Sync>>,
    /// `fmi3UnlockPreemptionCallback`.
    pub unlock: Option<std::sync::Arc<dyn Fn() + Send + Sync>>,
}

impl std::fmt::Debug for Preemption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preemption")
            .field("lock", &self.lock.is_some())
            .field("unlock", &self.unlock.is_some())
            .finish()
    }
}

impl Instance {
    /// Makes the instance one of Scheduled Execution
    /// (`fmi3InstantiateScheduledExecution`): refused unless the model
    /// declares it ([`crate::ModelSpec::scheduled_execution`]).
    pub fn set_scheduled_execution(&mut self, preemption: Preemption) -> R<()> {
        if !self.spec.scheduled_execution || self.interface != Interface::CoSimulation {
            return Err(Fail::usage(
                "this FMU has no Scheduled Execution interface (no <ScheduledExecution>)",
            ));
        }
        self.scheduled = Some(preemption);
        // Clocks without Event Mode: the partitions are the importer's.
        self.event_mode_used = true;
        Ok(())
    }

    /// Whether the instance is one of Scheduled Execution.
    pub fn is_scheduled(&self) -> bool {
        self.scheduled.is_some()
    }

    /// Scheduled Execution: no `fmi3Get*` after an `fmi3Set*` without an
    /// activation in between (FMI 3.0 sec. 5.2.1).
    pub(super) fn scheduled_get_allowed(&self, v: &Variable) -> R<()> {
        if self.mode == Mode::ClockActivation && self.clocks.set_since_activation.get() {
            return Err(Fail::sequence(format!(
                "{} {} (vr {}) read after an fmi3Set* without an fmi3ActivateModelPartition in between \
                 (FMI 3.0 sec. 5.2.1: not allowed in Scheduled Execution)",
                v.causality.as_str(),
                v.name,
                v.vr
            )));
        }
        Ok(())
    }

    /// Scheduled Execution: a value is set (until the next activation no
    /// value can be read).
    pub(super) fn scheduled_set(&self, _v: &Variable) {
        if self.mode == Mode::ClockActivation {
            self.clocks.set_since_activation.set(true);
        }
    }

    /// `fmi3ActivateModelPartition(clock, t)` (Clock Activation Mode):
    /// the model partition of input Clock `clock` at `t`, the Clock active
    /// for its output equation ([`crate::Model::outputs`]) and its update
    /// ([`crate::EventModel::update_discrete_states`]), between the
    /// importer's `lockPreemption` and `unlockPreemption`. Refused for
    /// anything but an input Clock, at a time that is not after the
    /// partition's last activation or before the start time, and, for a
    /// periodic Clock, off its ticks.
    pub fn activate_partition(&mut self, clock: Vr, t: f64) -> R<()> {
        let fname = "fmi3ActivateModelPartition";
        let Some(preemption) = self.scheduled.clone() else {
            return Err(Fail::usage(
                "fmi3ActivateModelPartition is a Scheduled Execution function (fmi3InstantiateScheduledExecution)",
            ));
        };
        self.require_clock_mode(
            fname,
            &[Mode::ClockActivation],
            "model partitions are activated in Clock Activation Mode only",
        )?;
        let v = self.clock(fname, clock)?;
        if v.causality != Causality::Input {
            return Err(Fail::usage(format!(
                "{fname}: {} (vr {clock}) is an output Clock (only input Clocks have model partitions)",
                v.name
            )));
        }
        let c = v.clock.unwrap_or_else(|| unreachable!("a Clock"));
        let rt = self
            .clocks
            .get(clock)
            .copied()
            .unwrap_or_else(|| unreachable!());
        if !t.is_finite() || t < self.start_time - tolerance(self.start_time) {
            return Err(Fail::usage(format!(
                "{fname}: activationTime {t} (must be finite, not before the start time {})",
                self.start_time
            )));
        }
        if !rt.last_activation.is_nan() && t <= rt.last_activation {
            return Err(Fail::usage(format!(
                "{fname}: activationTime {t} of {} is not after its last activation at {} \
                 (strictly increasing, FMI 3.0 sec. 5.2.1)",
                v.name, rt.last_activation
            )));
        }
        if c.interval_variability.is_periodic() {
            let first = rt.anchor + if rt.changed { rt.interval } else { 0.0 };
            let k = ((t - rt.anchor) / rt.interval).round();
            let on_grid = (t - (rt.anchor + k * rt.interval)).abs() <= tolerance(t) + 1e-12;
            if !on_grid || t < first - tolerance(first) {
                return Err(Fail::usage(format!(
                    "{fname}: the {} Clock {} (vr {clock}, interval {}, first tick at {first}) does not tick at t = {t}",
                    c.interval_variability.as_str(),
                    v.name,
                    rt.interval
                )));
            }
        }
        let Some(mut model) = self.model.take() else {
            return Err(Fail::usage("the model is not initialized"));
        };
        if let Some(lock) = &preemption.lock {
            lock();
        }
        self.time = t;
        self.values[crate::model::TIME] = t;
        self.values[clock] = 1.0;
        super::evaluate(model.as_mut(), t, &mut self.values, &self.inputs);
        let log = super::model_log(&self.sink);
        let update = super::model_exchange::discrete_update(
            model.as_mut(),
            self.interface,
            t,
            &mut self.values,
            &self.inputs,
            &log,
        );
        drop(log);
        self.values[clock] = 0.0;
        super::evaluate(model.as_mut(), t, &mut self.values, &self.inputs);
        if let Some(unlock) = &preemption.unlock {
            unlock();
        }
        self.model = Some(model);
        self.dirty = false;
        let update = update.map_err(Fail::failure)?;
        if update.terminate_simulation {
            self.terminate_requested = true;
        }
        if let Some(rt) = self.clocks.get_mut(clock) {
            rt.last_activation = t;
        }
        self.clocks.set_since_activation.set(false);
        Ok(())
    }
}
