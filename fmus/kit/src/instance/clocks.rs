//! FMI 3 Clocks on a Co-Simulation [`Instance`] with event mode (FMI 3.0
//! sec. 2.2.9, 2.3.5): `fmi3SetClock` / `fmi3GetClock` and the access
//! rules of clocked variables. The timing of the time-based input Clocks
//! (intervals, shifts, when an activation is allowed) is in
//! `clock_timing`, Scheduled Execution (model partitions, Clock Update
//! Mode) in `scheduled`.
//!
//! A Clock's activation is its value in [`crate::Values`] (1 while active,
//! so the model reads `v.bool(CLOCK)` in its outputs and update, and FMU
//! states hold it); the rest (intervals, shifts, announced activation
//! times, which periodic Clocks an update of this Event Mode saw, which
//! output ticks were read) is [`ClockState`], part of the FMU state too.
//!
//! The rules (a refused call returns Error and changes nothing):
//! - Clocks need `eventModeUsed = true` (FMI 3.0 sec. 2.3.1):
//!   `fmi3EnterInitializationMode` is refused without;
//! - `fmi3SetClock`: input Clocks only, in Event Mode only; `true`
//!   activates (a time-based Clock only when it ticks: a periodic one at
//!   `anchor + k * interval` and at most for one `fmi3UpdateDiscreteStates`
//!   per Event Mode, an aperiodic one at the time its interval announced,
//!   and a Clock whose timing the model decides only once the importer read
//!   it, see `clock_timing`); `false` only for `canBeDeactivated` Clocks;
//! - `fmi3GetClock`: output Clocks only, in Event Mode (Scheduled
//!   Execution: Clock Update Mode) only; true once per activation (the
//!   next call returns false);
//! - `fmi3UpdateDiscreteStates` deactivates every Clock that was active
//!   when it was called; an output Clock the model ticks in its update
//!   stays active, and the update asks for another
//!   (`discreteStatesNeedUpdate`), so that the importer reads it;
//! - clocked variables: read (and, inputs, set) only in Initialization
//!   Mode and, in Event Mode, while one of their Clocks is active (clocked
//!   inputs also in Instantiated: their start values).

use super::{Fail, Instance, Interface, Mode, R, Reader};
use crate::caps::FmiVersion;
use crate::model::{Causality, ClockAttrs, Variable, Vr};

/// The run-time state of one Clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockRt {
    /// The Clock's value reference.
    pub vr: Vr,
    /// Time-based Clocks: the current interval (NaN while the model did
    /// not give one yet).
    pub(super) interval: f64,
    /// Periodic Clocks: the delay of the first tick after the start time.
    pub(super) shift: f64,
    /// Periodic Clocks: a tick time (the start time plus the shift, or
    /// where a tunable interval changed); the ticks are `anchor + k *
    /// interval`, k >= 0 (k >= 1 after a change).
    pub(super) anchor: f64,
    /// A tunable Clock's interval changed at `anchor`: its first tick is
    /// one interval later.
    pub(super) changed: bool,
    /// Periodic Clocks: an update of the current Event Mode ran with the
    /// Clock active.
    pub(super) updated: bool,
    /// Output Clocks: `fmi3GetClock` reported the current activation.
    pub(super) reported: bool,
    /// Scheduled Execution: the time of the partition's last activation
    /// (output Clocks: of the last tick; NaN: none yet).
    pub(super) last_activation: f64,
    /// Clocks whose timing the model decides ([`ClockAttrs::model_timed`]):
    /// the importer read the current interval with
    /// `fmi3GetIntervalDecimal` (until then it cannot know when the Clock
    /// ticks, and activations are refused).
    pub(super) known: bool,
    /// Clocks whose timing the model decides: the interval changed since
    /// the importer last read it (the next `fmi3GetIntervalDecimal`
    /// answers `fmi3IntervalChanged`).
    pub(super) pending: bool,
    /// Aperiodic Clocks: the time of the next activation, as announced to
    /// the importer (NaN: none; a countdown Clock not armed, or armed and
    /// not yet read).
    pub(super) next: f64,
}

impl ClockRt {
    fn new(vr: Vr, c: &ClockAttrs, t0: f64) -> Self {
        let shift = c.shift_decimal.unwrap_or(0.0);
        ClockRt {
            vr,
            // NaN: a Clock whose timing the model decides has none yet.
            interval: c.interval_decimal.unwrap_or(f64::NAN),
            shift,
            anchor: t0 + shift,
            changed: false,
            updated: false,
            reported: false,
            last_activation: f64::NAN,
            known: false,
            pending: false,
            next: f64::NAN,
        }
    }

    fn flags(&self) -> u8 {
        u8::from(self.changed)
            | u8::from(self.updated) << 1
            | u8::from(self.reported) << 2
            | u8::from(self.known) << 3
            | u8::from(self.pending) << 4
    }

    fn set_flags(&mut self, flags: u8) {
        self.changed = flags & 1 != 0;
        self.updated = flags & 2 != 0;
        self.reported = flags & 4 != 0;
        self.known = flags & 8 != 0;
        self.pending = flags & 16 != 0;
    }
}

/// The Clocks of an instance (part of its FMU state).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClockState {
    pub(super) clocks: Vec<ClockRt>,
    /// Scheduled Execution: a value was set since the last partition
    /// activation (no `fmi3Get*` until the next, FMI 3.0 sec. 5.2.1).
    pub(super) set_since_activation: std::cell::Cell<bool>,
}

impl ClockState {
    /// The Clocks of `spec` at the start time `t0`.
    pub(super) fn new(spec: &crate::ModelSpec, t0: f64) -> Self {
        ClockState {
            clocks: spec
                .clock_variables()
                .map(|v| ClockRt::new(v.vr, &v.clock.unwrap_or_else(|| unreachable!()), t0))
                .collect(),
            set_since_activation: std::cell::Cell::new(false),
        }
    }

    pub(super) fn get(&self, vr: Vr) -> Option<&ClockRt> {
        self.clocks.iter().find(|c| c.vr == vr)
    }

    pub(super) fn get_mut(&mut self, vr: Vr) -> Option<&mut ClockRt> {
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
            for x in [c.interval, c.shift, c.anchor, c.last_activation, c.next] {
                b.extend_from_slice(&x.to_le_bytes());
            }
            b.push(c.flags());
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
            c.next = r.f64()?;
            let flags = r.u8()?;
            if flags > 31 {
                return Err("corrupt serialized FMU state (clock flags)".into());
            }
            c.set_flags(flags);
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
    pub(super) fn clock(&self, fname: &str, vr: Vr) -> R<&'static Variable> {
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

    /// The attributes of Clock `vr` (a Clock of the spec).
    pub(super) fn clock_attrs(&self, vr: Vr) -> ClockAttrs {
        self.spec
            .variable(vr)
            .and_then(|v| v.clock)
            .unwrap_or_else(|| unreachable!("a Clock"))
    }

    /// The run-time state of Clock `vr` (a Clock of the spec).
    pub(super) fn clock_rt(&self, vr: Vr) -> ClockRt {
        self.clocks
            .get(vr)
            .copied()
            .unwrap_or_else(|| unreachable!("a Clock"))
    }

    /// Refuses a Clock function of an instance without Clocks.
    pub(super) fn require_clocks(&self) -> R<()> {
        if self.has_clocks() {
            Ok(())
        } else {
            Err(Fail::usage("this FMU has no clocks"))
        }
    }

    /// Refuses a Clock function outside the states of `allowed` (names
    /// for the message).
    pub(super) fn require_clock_mode(&self, fname: &str, modes: &[Mode], allowed: &str) -> R<()> {
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
    /// nothing. A time-based Clock is activated only when it ticks
    /// (`Instance::check_activation_time`).
    pub fn set_clocks(&mut self, vrs: &[Vr], active: &[bool]) -> R<()> {
        let fname = "fmi3SetClock";
        self.require_clocks()?;
        self.require_clock_mode(
            fname,
            &[Mode::EventMode],
            "Clocks are activated in Event Mode only",
        )?;
        let t = self.time;
        for (&vr, &on) in vrs.iter().zip(active) {
            let v = self.clock(fname, vr)?;
            let c = self.clock_attrs(vr);
            if v.causality != Causality::Input {
                return Err(Fail::usage(format!(
                    "{fname}: {} (vr {vr}) is an output Clock: the FMU activates it (fmi3GetClock reads it)",
                    v.name
                )));
            }
            if on {
                self.refuse_second_periodic_update(fname, v, &c)?;
                self.check_activation_time(fname, v, &c, t)?;
            } else if !c.can_be_deactivated {
                return Err(Fail::usage(format!(
                    "{fname}: Clock {} (vr {vr}) has canBeDeactivated = false: it cannot be set to fmi3ClockInactive",
                    v.name
                )));
            }
        }
        for (&vr, &on) in vrs.iter().zip(active) {
            self.values[vr] = if on { 1.0 } else { 0.0 };
        }
        self.dirty = true;
        Ok(())
    }

    /// A periodic Clock is active for at most one update per Event Mode
    /// (FMI 3.0 sec. 2.3.5; aperiodic and triggered Clocks may tick again
    /// in the same time instant).
    fn refuse_second_periodic_update(&self, fname: &str, v: &Variable, c: &ClockAttrs) -> R<()> {
        if !c.interval_variability.is_periodic() || !self.clock_rt(v.vr).updated {
            return Ok(());
        }
        Err(Fail::sequence(format!(
            "{fname}: the periodic Clock {} (vr {}) was already active in an fmi3UpdateDiscreteStates of this Event Mode \
             (periodic Clocks are active for at most one update per Event Mode, FMI 3.0 sec. 2.3.5)",
            v.name, v.vr
        )))
    }

    /// `fmi3GetClock` (output Clocks; Event Mode, Scheduled Execution:
    /// Clock Update Mode): true once per activation.
    pub fn get_clocks(&mut self, vrs: &[Vr], out: &mut [bool]) -> R<()> {
        let fname = "fmi3GetClock";
        self.require_clocks()?;
        self.require_clock_mode(
            fname,
            &[Mode::EventMode, Mode::ClockUpdate],
            "output Clocks are read in Event Mode only (Scheduled Execution: in Clock Update Mode only, \
             inside the importer's clockUpdate callback)",
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
    /// Instantiated); Scheduled Execution: see
    /// `Instance::partition_access`.
    pub(super) fn clocked_access(&self, v: &Variable, set: bool) -> R<()> {
        if v.clocks.is_empty() || self.interface != Interface::CoSimulation {
            return Ok(());
        }
        let ok = match self.mode {
            Mode::Initialization => true,
            Mode::Instantiated => set,
            Mode::EventMode => v.clocks.iter().any(|&c| self.values[c] != 0.0),
            Mode::ClockActivation => return self.partition_access(v, set),
            _ => false,
        };
        if ok {
            return Ok(());
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
