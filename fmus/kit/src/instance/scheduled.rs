//! FMI 3 Scheduled Execution on an [`Instance`] (FMI 3.0 sec. 5): model
//! partitions activated in Clock Activation Mode
//! (`fmi3ActivateModelPartition`), and Clock Update Mode, in which the
//! importer's `clockUpdate` callback reads what a partition did to the
//! output and `countdown` Clocks.
//!
//! The rules (a refused call returns Error and changes nothing):
//! - `fmi3ActivateModelPartition`: input Clocks, in Clock Activation Mode,
//!   at a time not before the start time, later than the partition's last
//!   activation (an aperiodic Clock may tick again at the same time when
//!   its interval 0 announced it), and for time-based Clocks when they
//!   tick (`clock_timing`);
//! - no `fmi3Get*` after an `fmi3Set*` without an activation in between
//!   (FMI 3.0 sec. 5.2.1); clocked variables set before their partition
//!   runs, read after it ran (variables clocked by an output Clock: after
//!   a partition ticked it);
//! - a partition that ticks an output Clock or arms a countdown Clock
//!   leaves the instance in Clock Update Mode
//!   ([`Instance::activate_partition`] returns true): the caller (the C
//!   layer) calls the importer's `clockUpdate` without holding the
//!   instance, the importer reads `fmi3GetClock` (true once per tick) and
//!   `fmi3GetIntervalDecimal` from inside it, and the caller then ends
//!   Clock Update Mode ([`Instance::exit_clock_update`]), which
//!   deactivates the output Clocks.

use super::{Fail, Instance, Interface, Mode, R, tolerance};
use crate::model::{Causality, ClockAttrs, Model, Variable, Vr};

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

    /// Clock Activation Mode: a clocked variable is set before its
    /// partition runs, and read after one of its Clocks ran (an input
    /// Clock's partition, or a partition that ticked an output Clock).
    pub(super) fn partition_access(&self, v: &Variable, set: bool) -> R<()> {
        let ran = v.clocks.iter().any(|&c| {
            self.clocks
                .get(c)
                .is_some_and(|rt| !rt.last_activation.is_nan())
        });
        if set || ran {
            return Ok(());
        }
        Err(Fail::sequence(format!(
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
        )))
    }

    /// `fmi3ActivateModelPartition(clock, t)` (Clock Activation Mode):
    /// the model partition of input Clock `clock` at `t`, the Clock active
    /// for its output equation ([`crate::Model::outputs`]) and its update
    /// ([`crate::EventModel::update_discrete_states`]), between the
    /// importer's `lockPreemption` and `unlockPreemption`; then the
    /// Clocks' timing (`Instance::clock_timing_after_update`). Refused for
    /// anything but an input Clock, before the start time, at a time that
    /// is not after the partition's last activation, and for a
    /// time-based Clock when it does not tick. Returns true when the
    /// partition ticked an output Clock or armed a countdown Clock: the
    /// instance is then in Clock Update Mode, until
    /// [`Instance::exit_clock_update`].
    pub fn activate_partition(&mut self, clock: Vr, t: f64) -> R<bool> {
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
        self.check_partition(fname, clock, t)?;
        let Some(mut model) = self.model.take() else {
            return Err(Fail::usage("the model is not initialized"));
        };
        if let Some(lock) = &preemption.lock {
            lock();
        }
        let ran = self.run_partition(model.as_mut(), clock, t);
        if let Some(unlock) = &preemption.unlock {
            unlock();
        }
        self.model = Some(model);
        self.dirty = false;
        let armed = ran?;
        if let Some(rt) = self.clocks.get_mut(clock) {
            rt.last_activation = t;
        }
        self.clocks.set_since_activation.set(false);
        let ticked = self.mark_output_ticks(t);
        if armed || ticked {
            self.mode = Mode::ClockUpdate;
        }
        Ok(armed || ticked)
    }

    /// Why input Clock `clock` cannot be activated at `t`, if it cannot.
    fn check_partition(&mut self, fname: &str, clock: Vr, t: f64) -> R<()> {
        let v = self.clock(fname, clock)?;
        if v.causality != Causality::Input {
            return Err(Fail::usage(format!(
                "{fname}: {} (vr {clock}) is an output Clock (only input Clocks have model partitions)",
                v.name
            )));
        }
        if !t.is_finite() || t < self.start_time - tolerance(self.start_time) {
            return Err(Fail::usage(format!(
                "{fname}: activationTime {t} (must be finite, not before the start time {})",
                self.start_time
            )));
        }
        let c = self.clock_attrs(clock);
        self.check_increasing(fname, v, &c, t)?;
        self.check_activation_time(fname, v, &c, t)
    }

    /// Activation times increase strictly per Clock (FMI 3.0 sec. 5.2.1);
    /// an aperiodic Clock may tick again at its last activation time where
    /// its interval 0 announced it (a later super-dense instant, FMI 3.0
    /// sec. 2.3.5), which `Instance::check_activation_time` checks.
    fn check_increasing(&self, fname: &str, v: &Variable, c: &ClockAttrs, t: f64) -> R<()> {
        let last = self.clock_rt(v.vr).last_activation;
        let again = c.interval_variability.is_aperiodic() && t == last;
        if last.is_nan() || t > last || again {
            return Ok(());
        }
        Err(Fail::usage(format!(
            "{fname}: activationTime {t} of {} is not after its last activation at {last} \
             (strictly increasing, FMI 3.0 sec. 5.2.1)",
            v.name
        )))
    }

    /// The partition of `clock` at `t` (the model taken out of the
    /// instance): output equation and update with the Clock active, the
    /// Clocks' timing, the output equation again with it inactive.
    /// Returns whether the model armed a countdown Clock.
    fn run_partition(&mut self, model: &mut dyn Model, clock: Vr, t: f64) -> R<bool> {
        self.time = t;
        self.values[crate::model::TIME] = t;
        self.values[clock] = 1.0;
        super::evaluate(model, t, &mut self.values, &self.inputs);
        let log = super::model_log(&self.sink);
        let update = super::model_exchange::discrete_update(
            model,
            self.interface,
            t,
            &mut self.values,
            &self.inputs,
            &log,
        );
        drop(log);
        let armed = match &update {
            Ok(_) => self.clock_timing_after_update(model, t, &[clock]),
            Err(_) => Ok(false),
        };
        self.values[clock] = 0.0;
        super::evaluate(model, t, &mut self.values, &self.inputs);
        let update = update.map_err(Fail::failure)?;
        if update.terminate_simulation {
            self.terminate_requested = true;
        }
        armed
    }

    /// The output Clocks the partition just ran ticked (value 1): each
    /// reported once by `fmi3GetClock`, its clocked variables readable from
    /// now on. Returns whether one ticked.
    fn mark_output_ticks(&mut self, t: f64) -> bool {
        let ticked = self.ticked_output_clocks();
        for &vr in &ticked {
            if let Some(rt) = self.clocks.get_mut(vr) {
                rt.reported = false;
                rt.last_activation = t;
            }
        }
        !ticked.is_empty()
    }

    /// Clock Update Mode -> Clock Activation Mode, once the importer's
    /// `clockUpdate` returned: the output Clocks are deactivated (a tick
    /// not read is gone).
    pub fn exit_clock_update(&mut self) -> R<()> {
        if self.mode != Mode::ClockUpdate {
            return Err(Fail::sequence(format!(
                "Clock Update Mode ends after the importer's clockUpdate callback returned, \
                 and the instance is in state {}",
                self.mode_name()
            )));
        }
        for vr in self.ticked_output_clocks() {
            self.values[vr] = 0.0;
        }
        self.mode = Mode::ClockActivation;
        Ok(())
    }
}
