//! The timing of FMI 3 time-based input Clocks (FMI 3.0 sec. 2.2.9.2,
//! table "Overview of Clock types"): `fmi3GetIntervalDecimal`,
//! `fmi3GetShiftDecimal`, `fmi3SetIntervalDecimal`, `fmi3SetShiftDecimal`,
//! when an activation (`fmi3SetClock`, `fmi3ActivateModelPartition`) is
//! allowed, and the timing the model decides ([`crate::EventModel`]).
//!
//! - periodic Clocks tick at `anchor + k * interval`: the anchor is the
//!   start time plus the shift, or, after a tunable interval changed, the
//!   time of that Event Mode / Clock Activation Mode (ticks from one
//!   interval later). `constant` ones and `fixed` / `tunable` ones with
//!   `intervalDecimal` have the model description's interval (the importer
//!   sets `fixed` ones in Initialization Mode, `tunable` ones in
//!   Initialization and Event Mode, and shifts in Initialization Mode);
//!   `fmi3GetIntervalDecimal` answers `fmi3IntervalUnchanged`;
//! - `fixed` / `tunable` Clocks without `intervalDecimal`: the model gives
//!   interval and shift from its parameters
//!   ([`crate::EventModel::periodic_clock`]); the importer reads them
//!   (`fmi3IntervalChanged` the first time; `fmi3IntervalUnchanged` after,
//!   and always for a fixed Clock after initialization) and never sets
//!   them; a tunable Clock whose tunable parameters changed answers
//!   `fmi3IntervalChanged` once more, its new interval counted from that
//!   Event Mode / Clock Activation Mode;
//! - `changing` Clocks: T_0 in Initialization Mode (first activation at
//!   t_start + T_0), then after each activation at t_i the model's next
//!   interval ([`crate::EventModel::changing_interval`]): the next
//!   activation at t_i + T_{i+1}; `fmi3IntervalChanged` the first time the
//!   importer reads it after the activation, `fmi3IntervalUnchanged` after;
//! - `countdown` Clocks: `fmi3IntervalNotYetKnown` until the model arms the
//!   Clock ([`crate::EventModel::countdown_interval`], asked after every
//!   update / partition); the first read after an arming answers
//!   `fmi3IntervalChanged` and T, and the Clock ticks T after that Event
//!   Mode / Clock Update Mode (FMI 3.0: t_i = t_event + T_i);
//!   `fmi3IntervalUnchanged` after, until its activation uses the arming up;
//! - a Clock whose timing the model decides is activated only once the
//!   importer read its current interval (else it cannot know when it
//!   ticks), and only when it ticks (aperiodic: at the announced time; the
//!   kit's time tolerance applies); shifts exist for periodic Clocks only;
//!   the Fraction variants are refused (`supportsFraction = false`).

use super::clocks::ClockRt;
use super::{Fail, Instance, Mode, R, tolerance};
use crate::event_mode::{EventModel, PeriodicTiming};
use crate::model::{Causality, ClockAttrs, IntervalVariability, Model, Values, Variable, Vr};

/// `fmi3IntervalNotYetKnown` (fmi3FunctionTypes.h `fmi3IntervalQualifier`).
pub const INTERVAL_NOT_YET_KNOWN: i32 = 0;
/// `fmi3IntervalUnchanged`.
pub const INTERVAL_UNCHANGED: i32 = 1;
/// `fmi3IntervalChanged`.
pub const INTERVAL_CHANGED: i32 = 2;

/// The model's interval and shift of a `fixed` / `tunable` Clock without
/// `intervalDecimal`, checked.
fn model_periodic(
    em: &dyn EventModel,
    v: &Values,
    clock: &Variable,
) -> Result<PeriodicTiming, String> {
    let iv = clock_type(clock);
    match em.periodic_clock(clock.vr, v) {
        Some(p)
            if p.interval.is_finite()
                && p.interval > 0.0
                && p.shift.is_finite()
                && p.shift >= 0.0 =>
        {
            Ok(p)
        }
        Some(p) => Err(format!(
            "the model gives the {iv} Clock {} interval {} and shift {} (EventModel::periodic_clock: \
             the interval finite and > 0, the shift finite and >= 0)",
            clock.name, p.interval, p.shift
        )),
        None => Err(format!(
            "the model gives no interval for the {iv} Clock {} without intervalDecimal (EventModel::periodic_clock)",
            clock.name
        )),
    }
}

/// The model's next interval of a `changing` Clock at `t`, checked.
fn model_changing(
    em: &dyn EventModel,
    v: &Values,
    clock: &Variable,
    t: f64,
) -> Result<f64, String> {
    match em.changing_interval(clock.vr, t, v) {
        Some(x) => checked_interval(x, clock, "EventModel::changing_interval"),
        None => Err(format!(
            "the model gives no interval for the changing Clock {} at t = {t} (EventModel::changing_interval)",
            clock.name
        )),
    }
}

/// The model's arming of a `countdown` Clock at `t`, checked.
fn model_countdown(
    em: &dyn EventModel,
    v: &Values,
    clock: &Variable,
    t: f64,
) -> Result<Option<f64>, String> {
    em.countdown_interval(clock.vr, t, v)
        .map(|x| checked_interval(x, clock, "EventModel::countdown_interval"))
        .transpose()
}

/// An aperiodic interval: finite and >= 0.
fn checked_interval(x: f64, clock: &Variable, api: &str) -> Result<f64, String> {
    if x.is_finite() && x >= 0.0 {
        return Ok(x);
    }
    Err(format!(
        "the model gives the {} Clock {} the interval {x} ({api}: finite and >= 0)",
        clock_type(clock),
        clock.name
    ))
}

fn clock_type(clock: &Variable) -> &'static str {
    clock.clock.map_or("?", |c| c.interval_variability.as_str())
}

/// Runs `f` on the event equations of `model`.
fn ask<T>(
    model: &mut dyn Model,
    v: &Values,
    f: impl FnOnce(&dyn EventModel, &Values) -> Result<T, String>,
) -> Result<T, String> {
    let em = model
        .event_mode()
        .ok_or("the model has no event equations (Model::event_mode)")?;
    f(em, v)
}

/// An armed countdown Clock, or one whose next interval changed: the
/// importer has to read it (`fmi3IntervalChanged`) before it ticks.
fn announce(rt: &mut ClockRt, interval: f64) {
    rt.interval = interval;
    rt.pending = true;
    rt.known = false;
}

/// A countdown Clock without arming (`fmi3IntervalNotYetKnown`).
fn disarm(rt: &mut ClockRt) {
    rt.pending = false;
    rt.known = false;
    rt.next = f64::NAN;
}

impl Instance {
    /// The Clock `vr` (a Clock of the spec).
    fn clock_var(&self, vr: Vr) -> &'static Variable {
        let spec: &'static crate::ModelSpec = self.spec;
        spec.variable(vr).unwrap_or_else(|| unreachable!("a Clock"))
    }

    /// The time-based Clock `vr` for `fmi3GetIntervalDecimal`, else why
    /// not.
    fn time_based(&self, fname: &str, vr: Vr) -> R<()> {
        let v = self.clock(fname, vr)?;
        let iv = self.clock_attrs(vr).interval_variability;
        if iv == IntervalVariability::Triggered {
            return Err(Fail::usage(format!(
                "{fname}: Clock {} (vr {vr}) is triggered: only time-based Clocks (constant, fixed, tunable, \
                 changing, countdown) have an interval",
                v.name
            )));
        }
        Ok(())
    }

    /// The periodic Clock `vr` for a shift function or
    /// `fmi3SetIntervalDecimal` (`what` it lacks otherwise), else why not.
    fn periodic(&self, fname: &str, vr: Vr, what: &str) -> R<(&'static Variable, ClockAttrs)> {
        let v = self.clock(fname, vr)?;
        let c = self.clock_attrs(vr);
        if !c.interval_variability.is_periodic() {
            return Err(Fail::usage(format!(
                "{fname}: Clock {} (vr {vr}) is {}: only periodic Clocks (constant, fixed, tunable) have {what}",
                v.name,
                c.interval_variability.as_str()
            )));
        }
        Ok((v, c))
    }

    /// A periodic Clock whose interval and shift the importer may set
    /// (one with `intervalDecimal`), else why not.
    fn importer_timed(
        &self,
        fname: &str,
        vr: Vr,
        what: &str,
    ) -> R<(&'static Variable, ClockAttrs)> {
        let (v, c) = self.periodic(fname, vr, what)?;
        if c.model_timed() {
            return Err(Fail::usage(format!(
                "{fname}: Clock {} (vr {vr}) is {} without intervalDecimal: the FMU gives its interval and shift \
                 (fmi3GetIntervalDecimal, fmi3GetShiftDecimal), the importer never sets them",
                v.name,
                c.interval_variability.as_str()
            )));
        }
        Ok((v, c))
    }

    /// Runs `f` on the model's event equations and the current values:
    /// the instance's model, or in Initialization Mode (where it has none
    /// yet) one built from the values, the parameters as set so far.
    fn ask_model<T>(
        &mut self,
        f: impl FnOnce(&dyn EventModel, &Values) -> Result<T, String>,
    ) -> R<T> {
        if let Some(model) = self.model.as_mut() {
            return ask(model.as_mut(), &self.values, f).map_err(Fail::failure);
        }
        if self.mode != Mode::Initialization {
            return Err(Fail::usage("the model is not initialized"));
        }
        self.refresh()?;
        let mut model = self.build_model().map_err(Fail::usage)?;
        ask(model.as_mut(), &self.values, f).map_err(Fail::failure)
    }

    /// Brings the timing of a Clock the model decides up to date with the
    /// model where it can change: in Initialization Mode every kind (the
    /// parameters may change), a tunable Clock's interval at any time.
    fn sync_timing(&mut self, vr: Vr) -> R<()> {
        let c = self.clock_attrs(vr);
        if !c.model_timed() {
            return Ok(());
        }
        let init = self.mode == Mode::Initialization;
        match c.interval_variability {
            IntervalVariability::Tunable => self.sync_periodic(vr),
            IntervalVariability::Fixed if init => self.sync_periodic(vr),
            IntervalVariability::Changing if init => self.sync_changing_start(vr),
            IntervalVariability::Countdown if init => self.sync_countdown_start(vr),
            _ => Ok(()),
        }
    }

    /// A `fixed` / `tunable` Clock without `intervalDecimal`: the model's
    /// interval (a new one announced), in Initialization Mode its shift.
    fn sync_periodic(&mut self, vr: Vr) -> R<()> {
        let clock = self.clock_var(vr);
        let p = self.ask_model(|em, v| model_periodic(em, v, clock))?;
        let init = self.mode == Mode::Initialization;
        let t0 = self.start_time;
        let rt = self.clocks.get_mut(vr).unwrap_or_else(|| unreachable!());
        if p.interval != rt.interval {
            announce(rt, p.interval);
            if !init {
                // A tunable interval changed: the ticks restart where the
                // importer reads it (`Instance::interval_answer`).
                rt.anchor = f64::NAN;
                rt.changed = true;
            }
        }
        if init {
            rt.shift = p.shift;
            rt.anchor = t0 + p.shift;
            rt.changed = false;
        }
        Ok(())
    }

    /// A `changing` Clock in Initialization Mode: T_0, the first
    /// activation at t_start + T_0.
    fn sync_changing_start(&mut self, vr: Vr) -> R<()> {
        let clock = self.clock_var(vr);
        let t0 = self.start_time;
        let x = self.ask_model(|em, v| model_changing(em, v, clock, t0))?;
        let rt = self.clocks.get_mut(vr).unwrap_or_else(|| unreachable!());
        if x != rt.interval {
            announce(rt, x);
        }
        rt.next = t0 + x;
        Ok(())
    }

    /// A `countdown` Clock in Initialization Mode: armed at the start time
    /// (T_0), or not.
    fn sync_countdown_start(&mut self, vr: Vr) -> R<()> {
        let clock = self.clock_var(vr);
        let t0 = self.start_time;
        let armed = self.ask_model(|em, v| model_countdown(em, v, clock, t0))?;
        let rt = self.clocks.get_mut(vr).unwrap_or_else(|| unreachable!());
        match armed {
            Some(x) if x == rt.interval && (rt.known || rt.pending) => {}
            Some(x) => {
                announce(rt, x);
                rt.next = f64::NAN;
            }
            None => disarm(rt),
        }
        Ok(())
    }

    /// The end of Initialization Mode (the instance's model just built and
    /// initialized, the mode still Initialization): the timing of every
    /// Clock the model decides, from the final parameters (a value that
    /// differs from the one the importer read is announced again).
    pub(super) fn start_clock_timing(&mut self) -> R<()> {
        let spec = self.spec;
        for v in spec.clock_variables() {
            self.sync_timing(v.vr)?;
        }
        Ok(())
    }

    /// `fmi3GetIntervalDecimal` (time-based Clocks; Initialization, Event,
    /// Clock Activation and Clock Update Mode): the intervals and their
    /// qualifiers (see the module docs).
    pub fn get_intervals(&mut self, vrs: &[Vr], out: &mut [f64], q: &mut [i32]) -> R<()> {
        let fname = "fmi3GetIntervalDecimal";
        self.require_clocks()?;
        self.require_clock_mode(
            fname,
            &[
                Mode::Initialization,
                Mode::EventMode,
                Mode::ClockActivation,
                Mode::ClockUpdate,
            ],
            "intervals are read in Initialization Mode, Event Mode, Clock Activation Mode and Clock Update Mode",
        )?;
        for &vr in vrs {
            self.time_based(fname, vr)?;
        }
        for &vr in vrs {
            self.sync_timing(vr)?;
        }
        for (i, &vr) in vrs.iter().enumerate() {
            (out[i], q[i]) = self.interval_answer(vr);
        }
        Ok(())
    }

    /// The interval and qualifier `fmi3GetIntervalDecimal` answers for
    /// Clock `vr` now; a Clock whose timing the model decides is then
    /// known to the importer (and a countdown Clock's activation time
    /// fixed, a tunable one's grid restarted).
    fn interval_answer(&mut self, vr: Vr) -> (f64, i32) {
        let c = self.clock_attrs(vr);
        let iv = c.interval_variability;
        let init = self.mode == Mode::Initialization;
        let now = if init { self.start_time } else { self.time };
        let rt = self.clocks.get_mut(vr).unwrap_or_else(|| unreachable!());
        if !c.model_timed() {
            return (rt.interval, INTERVAL_UNCHANGED);
        }
        if iv == IntervalVariability::Countdown && !rt.pending && !rt.known {
            return (0.0, INTERVAL_NOT_YET_KNOWN);
        }
        // A fixed Clock's interval cannot change once initialized (FMI
        // 3.0, table "Allowed qualifiers", (d)).
        let changed = rt.pending && (init || iv != IntervalVariability::Fixed);
        if rt.pending {
            match iv {
                IntervalVariability::Countdown => rt.next = now + rt.interval,
                // (The grid of a tunable interval that changed after
                // initialization: from now on, one interval later.)
                IntervalVariability::Tunable if rt.anchor.is_nan() => rt.anchor = now,
                _ => {}
            }
        }
        rt.pending = false;
        rt.known = true;
        let q = if changed {
            INTERVAL_CHANGED
        } else {
            INTERVAL_UNCHANGED
        };
        (rt.interval, q)
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
            self.periodic(fname, vr, "a shift")?;
        }
        if self.mode == Mode::Initialization {
            for &vr in vrs {
                self.sync_timing(vr)?;
            }
        }
        for (slot, &vr) in out.iter_mut().zip(vrs) {
            *slot = self.clock_rt(vr).shift;
        }
        Ok(())
    }

    /// `fmi3SetIntervalDecimal`: `fixed` Clocks in Initialization Mode,
    /// `tunable` ones in Initialization and Event Mode (from Event Mode the
    /// new interval counts from the current time), both with
    /// `intervalDecimal`; intervals finite and > 0.
    pub fn set_intervals(&mut self, vrs: &[Vr], intervals: &[f64]) -> R<()> {
        let fname = "fmi3SetIntervalDecimal";
        self.require_clocks()?;
        self.require_clock_mode(
            fname,
            &[Mode::Initialization, Mode::EventMode],
            "intervals are set in Initialization Mode (fixed and tunable Clocks) and Event Mode (tunable Clocks)",
        )?;
        for (&vr, &x) in vrs.iter().zip(intervals) {
            let (v, c) = self.periodic(fname, vr, "an interval the importer sets")?;
            let iv = c.interval_variability;
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
            self.importer_timed(fname, vr, "an interval the importer sets")?;
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

    /// `fmi3SetShiftDecimal`: `fixed` and `tunable` Clocks with
    /// `intervalDecimal`, in Initialization Mode; shifts finite and >= 0.
    pub fn set_shifts(&mut self, vrs: &[Vr], shifts: &[f64]) -> R<()> {
        let fname = "fmi3SetShiftDecimal";
        self.require_clocks()?;
        self.require_clock_mode(
            fname,
            &[Mode::Initialization],
            "shifts are set in Initialization Mode only",
        )?;
        for (&vr, &x) in vrs.iter().zip(shifts) {
            let (v, c) = self.periodic(fname, vr, "a shift")?;
            if c.interval_variability == IntervalVariability::Constant {
                return Err(Fail::usage(format!(
                    "{fname}: Clock {} (vr {vr}) is constant: its shift is the model description's, never set",
                    v.name
                )));
            }
            self.importer_timed(fname, vr, "a shift")?;
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

    /// Whether input Clock `v` may be activated at `t` (`fmi3SetClock`,
    /// `fmi3ActivateModelPartition`), else why not: a triggered Clock at
    /// any time; a Clock whose timing the model decides once the importer
    /// read its current interval; a periodic one at its ticks, an
    /// aperiodic one at its announced activation time.
    pub(super) fn check_activation_time(
        &mut self,
        fname: &str,
        v: &Variable,
        c: &ClockAttrs,
        t: f64,
    ) -> R<()> {
        let iv = c.interval_variability;
        if iv == IntervalVariability::Triggered || v.causality != Causality::Input {
            return Ok(());
        }
        if c.model_timed() {
            if iv == IntervalVariability::Tunable {
                self.sync_periodic(v.vr)?;
            }
            if !self.clock_rt(v.vr).known {
                return Err(self.timing_unknown(fname, v, c));
            }
        }
        if iv.is_periodic() {
            self.check_tick(fname, v, c, t)
        } else {
            self.check_announced(fname, v, c, t)
        }
    }

    /// A periodic Clock ticks at `anchor + k * interval` (k >= 1 after a
    /// tunable interval changed).
    fn check_tick(&self, fname: &str, v: &Variable, c: &ClockAttrs, t: f64) -> R<()> {
        let rt = self.clock_rt(v.vr);
        let k_min = if rt.changed { 1.0 } else { 0.0 };
        let k = (t - rt.anchor) / rt.interval;
        let kr = k.round();
        let on_grid = (t - (rt.anchor + kr * rt.interval)).abs() <= tolerance(t) + 1e-12;
        if on_grid && kr >= k_min {
            return Ok(());
        }
        let next = rt.anchor + k.ceil().max(k_min) * rt.interval;
        Err(Fail::usage(format!(
            "{fname}: the {} Clock {} (vr {}, interval {}, first tick at {}) does not tick at t = {t} \
             (its next tick is at t = {next})",
            c.interval_variability.as_str(),
            v.name,
            v.vr,
            rt.interval,
            rt.anchor + k_min * rt.interval,
        )))
    }

    /// An aperiodic Clock ticks at the time its interval announced.
    fn check_announced(&self, fname: &str, v: &Variable, c: &ClockAttrs, t: f64) -> R<()> {
        let next = self.clock_rt(v.vr).next;
        if (t - next).abs() <= tolerance(t) + 1e-12 {
            return Ok(());
        }
        Err(Fail::usage(format!(
            "{fname}: the {} Clock {} (vr {}) ticks next at t = {next} (as fmi3GetIntervalDecimal announced), \
             not at t = {t}",
            c.interval_variability.as_str(),
            v.name,
            v.vr
        )))
    }

    /// Why a Clock whose timing the model decides cannot be activated
    /// before the importer read its interval.
    fn timing_unknown(&self, fname: &str, v: &Variable, c: &ClockAttrs) -> Fail {
        let rt = self.clock_rt(v.vr);
        let iv = c.interval_variability;
        let why = match iv {
            IntervalVariability::Countdown if !rt.pending => {
                "is not armed (fmi3GetIntervalDecimal answers fmi3IntervalNotYetKnown): it does not tick".to_string()
            }
            IntervalVariability::Countdown => "was armed, and the importer did not read its interval \
                 (fmi3GetIntervalDecimal, in the Event Mode / Clock Update Mode of the arming)"
                .to_string(),
            IntervalVariability::Changing => "has an interval the importer did not read \
                 (fmi3GetIntervalDecimal, in Initialization Mode and after each activation)"
                .to_string(),
            _ => "has no intervalDecimal: the FMU gives its interval, which the importer did not read \
                 since the FMU set it (fmi3GetIntervalDecimal)"
                .to_string(),
        };
        Fail::sequence(format!(
            "{fname}: the {} Clock {} (vr {}) {why}, so the importer cannot know when it ticks",
            iv.as_str(),
            v.name,
            v.vr
        ))
    }

    /// After an update (Scheduled Execution: a partition) at `t` in which
    /// the Clocks `active` were active (still active in the values): an
    /// active changing Clock's next interval (announced: the next
    /// activation at t + T), an active countdown Clock's arming used up,
    /// the countdown Clocks the model arms now (announced). Returns
    /// whether it armed one. A model error fails (the instance is then
    /// unusable).
    pub(super) fn clock_timing_after_update(
        &mut self,
        model: &mut dyn Model,
        t: f64,
        active: &[Vr],
    ) -> R<bool> {
        let Some(em) = model.event_mode() else {
            return Ok(false);
        };
        let spec = self.spec;
        let mut armed = false;
        for v in spec.clock_variables() {
            let iv = v.clock.map(|c| c.interval_variability);
            let was_active = active.contains(&v.vr);
            let rt = self.clocks.get_mut(v.vr).unwrap_or_else(|| unreachable!());
            match iv {
                Some(IntervalVariability::Changing) if was_active => {
                    let x = model_changing(em, &self.values, v, t).map_err(Fail::failure)?;
                    announce(rt, x);
                    rt.next = t + x;
                }
                Some(IntervalVariability::Countdown) => {
                    if was_active {
                        disarm(rt);
                    }
                    if let Some(x) =
                        model_countdown(em, &self.values, v, t).map_err(Fail::failure)?
                    {
                        announce(rt, x);
                        rt.next = f64::NAN;
                        armed = true;
                    }
                }
                _ => {}
            }
        }
        Ok(armed)
    }
}
