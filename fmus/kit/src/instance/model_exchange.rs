//! Model Exchange on an [`Instance`]: the state machine of FMI 2.0 sec.
//! 3.2.3 and FMI 3.0 sec. 3.2 (Event Mode, Continuous-Time Mode), its
//! call-sequence rules, and the calls that evaluate the model
//! ([`crate::ContinuousModel`]). One implementation for both versions: the
//! C layers only convert pointers ([`MeCall`] names each call and its
//! allowed states per version).
//!
//! Strictness, as for co-simulation (a refused call returns Error, logs
//! `<function>: Illegal call sequence: <why>` and changes nothing):
//! - each call in the states the standards' tables allow ([`MeCall::mask`]);
//! - Continuous-Time Mode only after the event iteration converged: the
//!   discrete-state update (`fmi2NewDiscreteStates` /
//!   `fmi3UpdateDiscreteStates`) called in this Event Mode and its last
//!   call without `newDiscreteStatesNeeded` / `discreteStatesNeedUpdate`;
//! - time never goes back before the start time, the last Event Mode or
//!   the second-last completed integrator step (FMI 3.0 `fmi3SetTime`; FMI
//!   2.0 sec. 3.2.2 says the same of the "previous" completed step), and a
//!   completed integrator step never before the previous one;
//! - no integrator step completed and no event after the stop time the
//!   importer defined (time set beyond it is accepted: variable-step
//!   integrators evaluate past their output points);
//! - after the model asked to terminate, no further integration (no
//!   Continuous-Time Mode, completed step or event).

use super::{Fail, Instance, Interface, Mode, R, model_log, tolerance};
use crate::caps::FmiVersion;
use crate::model::{Causality, TIME, Variability, Variable};
use crate::model_exchange::{EventUpdate, ModelExchangeSpec, StepEvent};

const INST: u32 = Mode::Instantiated.bit();
const INIT: u32 = Mode::Initialization.bit();
const EVENT: u32 = Mode::EventMode.bit();
const CONT: u32 = Mode::ContinuousTimeMode.bit();
const TERM: u32 = Mode::Terminated.bit();
const ERR: u32 = Mode::Error.bit();

/// The Model Exchange bookkeeping an instance keeps for the call-sequence
/// rules (part of its FMU state).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MeState {
    /// When the current or last Event Mode began (the end of
    /// initialization, `EnterEventMode`): time never goes back before it.
    event_time: Option<f64>,
    /// The times of the last two completed integrator steps, the latest
    /// last.
    completed: [Option<f64>; 2],
    /// The discrete states were updated in this Event Mode.
    updated: bool,
    /// The last update asked for another one (event iteration goes on).
    need_update: bool,
}

impl MeState {
    /// At the start of an Event Mode at time `t`.
    pub(super) fn at_event(t: f64) -> Self {
        MeState {
            event_time: Some(t),
            ..MeState::default()
        }
    }

    /// The bytes of the serialized FMU state.
    pub(super) fn to_bytes(self, b: &mut Vec<u8>) {
        for x in [self.event_time, self.completed[0], self.completed[1]] {
            b.extend_from_slice(&x.unwrap_or(f64::NAN).to_le_bytes());
        }
        b.push(u8::from(self.updated) | (u8::from(self.need_update) << 1));
    }

    /// Reads [`MeState::to_bytes`].
    pub(super) fn from_reader(r: &mut super::Reader<'_>) -> Result<Self, String> {
        let some = |x: f64| (!x.is_nan()).then_some(x);
        let event_time = some(r.f64()?);
        let completed = [some(r.f64()?), some(r.f64()?)];
        let flags = r.u8()?;
        if flags > 3 {
            return Err("corrupt serialized FMU state (Model Exchange flags)".into());
        }
        Ok(MeState {
            event_time,
            completed,
            updated: flags & 1 != 0,
            need_update: flags & 2 != 0,
        })
    }
}

/// The Model Exchange functions, for their names and allowed states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeCall {
    /// `fmi2EnterEventMode` / `fmi3EnterEventMode`.
    EnterEventMode,
    /// `fmi2NewDiscreteStates` / `fmi3UpdateDiscreteStates`.
    UpdateDiscreteStates,
    /// `fmi2EnterContinuousTimeMode` / `fmi3EnterContinuousTimeMode`.
    EnterContinuousTimeMode,
    /// `fmi2CompletedIntegratorStep` / `fmi3CompletedIntegratorStep`.
    CompletedIntegratorStep,
    /// `fmi2SetTime` / `fmi3SetTime`.
    SetTime,
    /// `fmi2SetContinuousStates` / `fmi3SetContinuousStates`.
    SetContinuousStates,
    /// `fmi2GetDerivatives` / `fmi3GetContinuousStateDerivatives`.
    GetDerivatives,
    /// `fmi2GetEventIndicators` / `fmi3GetEventIndicators`.
    GetEventIndicators,
    /// `fmi2GetContinuousStates` / `fmi3GetContinuousStates`.
    GetContinuousStates,
    /// `fmi2GetNominalsOfContinuousStates` / `fmi3GetNominalsOfContinuousStates`.
    GetNominals,
    /// `fmi3GetNumberOfEventIndicators` (FMI 3 only).
    GetNumberOfEventIndicators,
    /// `fmi3GetNumberOfContinuousStates` (FMI 3 only).
    GetNumberOfContinuousStates,
}

impl MeCall {
    /// The function's name in `version`.
    pub fn name(self, version: FmiVersion) -> &'static str {
        let (two, three) = match self {
            MeCall::EnterEventMode => ("fmi2EnterEventMode", "fmi3EnterEventMode"),
            MeCall::UpdateDiscreteStates => ("fmi2NewDiscreteStates", "fmi3UpdateDiscreteStates"),
            MeCall::EnterContinuousTimeMode => {
                ("fmi2EnterContinuousTimeMode", "fmi3EnterContinuousTimeMode")
            }
            MeCall::CompletedIntegratorStep => {
                ("fmi2CompletedIntegratorStep", "fmi3CompletedIntegratorStep")
            }
            MeCall::SetTime => ("fmi2SetTime", "fmi3SetTime"),
            MeCall::SetContinuousStates => ("fmi2SetContinuousStates", "fmi3SetContinuousStates"),
            MeCall::GetDerivatives => ("fmi2GetDerivatives", "fmi3GetContinuousStateDerivatives"),
            MeCall::GetEventIndicators => ("fmi2GetEventIndicators", "fmi3GetEventIndicators"),
            MeCall::GetContinuousStates => ("fmi2GetContinuousStates", "fmi3GetContinuousStates"),
            MeCall::GetNominals => (
                "fmi2GetNominalsOfContinuousStates",
                "fmi3GetNominalsOfContinuousStates",
            ),
            MeCall::GetNumberOfEventIndicators => (
                "fmi3GetNumberOfEventIndicators",
                "fmi3GetNumberOfEventIndicators",
            ),
            MeCall::GetNumberOfContinuousStates => (
                "fmi3GetNumberOfContinuousStates",
                "fmi3GetNumberOfContinuousStates",
            ),
        };
        match version {
            FmiVersion::Fmi2 => two,
            FmiVersion::Fmi3 => three,
        }
    }

    /// The states that allow the call: FMI 2.0 sec. 3.2.3 (the table of
    /// allowed calls; the Error state's "always, values for debugging
    /// only" included for the getters), FMI 3.0 sec. 2.3 and 3.2 (the
    /// allowed calls of each state). FMI 2 `fmi2SetTime` in Event Mode is
    /// further restricted to a pure discrete-time FMU ([`Instance::set_time`]).
    pub fn mask(self, version: FmiVersion) -> u32 {
        let fmi2 = version == FmiVersion::Fmi2;
        match self {
            MeCall::EnterEventMode if fmi2 => EVENT | CONT,
            MeCall::EnterEventMode => CONT,
            MeCall::UpdateDiscreteStates | MeCall::EnterContinuousTimeMode => EVENT,
            MeCall::CompletedIntegratorStep | MeCall::SetContinuousStates => CONT,
            MeCall::SetTime if fmi2 => EVENT | CONT,
            MeCall::SetTime => CONT,
            MeCall::GetDerivatives | MeCall::GetEventIndicators | MeCall::GetContinuousStates => {
                INIT | EVENT | CONT | TERM | ERR
            }
            MeCall::GetNominals if fmi2 => INST | INIT | EVENT | CONT | TERM | ERR,
            MeCall::GetNominals => INIT | EVENT | CONT | TERM | ERR,
            MeCall::GetNumberOfEventIndicators | MeCall::GetNumberOfContinuousStates => !0,
        }
    }
}

impl Instance {
    /// The Model Exchange declaration, for a Model Exchange instance.
    fn me_spec(&self) -> Option<&'static ModelExchangeSpec> {
        let spec: &'static crate::ModelSpec = self.spec;
        match self.interface {
            Interface::ModelExchange => spec.model_exchange.as_ref(),
            Interface::CoSimulation => None,
        }
    }

    /// Checks a Model Exchange call: made on a Model Exchange instance
    /// (else refused with `refusal`, the message of an FMU without Model
    /// Exchange, or a message naming the instance's interface), in a state
    /// that allows it ([`MeCall::mask`]).
    pub fn check_me_call(&self, call: MeCall, refusal: &str) -> R<()> {
        if self.me_spec().is_none() {
            let fname = call.name(self.version);
            if !self.spec.has_model_exchange() {
                return Err(Fail::usage(refusal.to_string()));
            }
            let how = match self.version {
                FmiVersion::Fmi2 => {
                    "fmi2Instantiate with fmuType fmi2CoSimulation; a Model Exchange instance is made with fmuType fmi2ModelExchange"
                }
                FmiVersion::Fmi3 => {
                    "fmi3InstantiateCoSimulation; a Model Exchange instance is made with fmi3InstantiateModelExchange"
                }
            };
            return Err(Fail::usage(format!(
                "model exchange is not supported by this instance: {fname} is a Model Exchange function, \
                 and the instance was made for Co-Simulation ({how})"
            )));
        }
        self.require_mode(call.name(self.version), call.mask(self.version))
    }

    /// Whether directional derivatives are provided by this instance: the
    /// build's capability, and for Model Exchange the model's partial
    /// derivatives ([`ModelExchangeSpec::partial_derivatives`]).
    pub(super) fn directional_provided(&self) -> bool {
        self.caps.directional_derivatives && self.me_spec().is_none_or(|me| me.partial_derivatives)
    }

    /// Whether setting a tunable parameter now rebuilds the model: at a
    /// communication point (stepComplete / Step Mode) or in Event Mode.
    pub(super) fn tunes_model(&self) -> bool {
        matches!(
            self.mode,
            Mode::StepComplete | Mode::EventMode | Mode::ClockActivation
        )
    }

    /// Whether `v` may be set now ([`super::settable_in`] for the states
    /// both interfaces have). Event Mode: inputs and tunable parameters
    /// (FMI 2.0 table footnote 4), and in FMI 3 continuous states without
    /// `reinit` (FMI 3.0 sec. 2.3.5). Continuous-Time Mode: continuous
    /// inputs and continuous states (FMI 2.0 footnote 5, FMI 3.0 sec. 3.2.1).
    pub(super) fn settable(&self, v: &Variable) -> Result<(), &'static str> {
        let state = self
            .me_spec()
            .and_then(|me| me.state_of(v.vr))
            .filter(|_| v.causality != Causality::StructuralParameter);
        let input = v.causality == Causality::Input;
        match self.mode {
            Mode::EventMode => {
                let tunable =
                    v.causality == Causality::Parameter && v.variability == Variability::Tunable;
                let state_ok = self.version == FmiVersion::Fmi3 && state.is_some_and(|s| !s.reinit);
                if input || tunable || state_ok {
                    Ok(())
                } else if self.version == FmiVersion::Fmi3 {
                    Err(
                        "only inputs, tunable parameters and continuous states without reinit can be set there",
                    )
                } else {
                    Err("only inputs and tunable parameters can be set there")
                }
            }
            Mode::ClockActivation => {
                let tunable =
                    v.causality == Causality::Parameter && v.variability == Variability::Tunable;
                if input || tunable {
                    Ok(())
                } else {
                    Err("only inputs and tunable parameters can be set there")
                }
            }
            Mode::ContinuousTimeMode => {
                if (input && v.variability == Variability::Continuous) || state.is_some() {
                    Ok(())
                } else {
                    Err("only continuous inputs and continuous states can be set there")
                }
            }
            mode => super::settable_in(v, mode),
        }
    }

    /// Refuses a call that would integrate further after the model asked
    /// to terminate.
    pub(super) fn refuse_after_termination(&self) -> R<()> {
        if self.terminate_requested {
            return Err(Fail::sequence(format!(
                "the FMU requested termination at t = {} (terminateSimulation): the simulation must end \
                 (terminate, reset, or an FMU state from before)",
                self.me.event_time.unwrap_or(self.time).max(self.time)
            )));
        }
        Ok(())
    }

    /// Refuses a completed step or an event after the stop time the
    /// importer defined.
    fn refuse_after_stop(&self, what: &str) -> R<()> {
        if let Some(stop) = self.stop_time
            && self.time > stop + tolerance(stop)
        {
            return Err(Fail::sequence(format!(
                "{what} at t = {} is after the stop time {stop} (stopTimeDefined = true in {})",
                self.time,
                match self.version {
                    FmiVersion::Fmi2 => "fmi2SetupExperiment",
                    FmiVersion::Fmi3 => "fmi3EnterInitializationMode",
                }
            )));
        }
        Ok(())
    }

    /// Continuous-Time Mode -> Event Mode (`fmi2EnterEventMode` /
    /// `fmi3EnterEventMode`; FMI 2 also from Event Mode: a new event
    /// instant). Time cannot go back before this event afterwards.
    /// Co-Simulation (FMI 3, `eventModeUsed`): Step Mode -> Event Mode,
    /// at a communication point; the event a step reported
    /// (`eventHandlingNeeded`) is handled here.
    pub fn enter_event_mode(&mut self) -> R<()> {
        if self.is_scheduled() {
            return Err(Fail::sequence(
                "fmi3EnterEventMode called on a Scheduled Execution instance (Clock Activation Mode has \
                 no Event Mode: fmi3ActivateModelPartition runs the model partitions)",
            ));
        }
        self.refuse_after_termination()?;
        self.refuse_after_stop("an event")?;
        self.me = MeState::at_event(self.time);
        self.cs_event.pending = false;
        self.clocks.enter_event_mode();
        self.mode = Mode::EventMode;
        self.dirty = true;
        Ok(())
    }

    /// `fmi2NewDiscreteStates` / `fmi3UpdateDiscreteStates` (Event Mode):
    /// the model's event update at the current time
    /// ([`crate::ContinuousModel::update_discrete_states`]). A next event
    /// time that is not finite or lies before the current time is a model
    /// error.
    pub fn update_discrete_states(&mut self) -> R<EventUpdate> {
        self.refresh()?;
        let t = self.time;
        let Some(mut model) = self.model.take() else {
            return Err(Fail::usage("the model is not initialized"));
        };
        let active = self.active_clocks();
        let log = model_log(&self.sink);
        let update = discrete_update(
            model.as_mut(),
            self.interface,
            t,
            &mut self.values,
            &self.inputs,
            &log,
        );
        drop(log);
        // The Clocks' timing, with the Clocks of the update still active.
        let timing = match &update {
            Ok(_) if self.has_clocks() => {
                self.clock_timing_after_update(model.as_mut(), t, &active)
            }
            _ => Ok(false),
        };
        self.model = Some(model);
        self.dirty = true;
        let mut update = update.map_err(Fail::failure)?;
        timing?;
        if self.has_clocks() && self.deactivate_clocks(&active) {
            // An output Clock ticked in the update: the importer reads it
            // (fmi3GetClock) and handles it in another update.
            update.discrete_states_need_update = true;
        }
        self.me.updated = true;
        self.me.need_update = update.discrete_states_need_update;
        if self.interface == Interface::CoSimulation {
            self.cs_event.next_event_time = update.next_event_time;
        }
        if update.terminate_simulation {
            self.terminate_requested = true;
        }
        Ok(update)
    }

    /// Event Mode -> Continuous-Time Mode (`fmi2EnterContinuousTimeMode` /
    /// `fmi3EnterContinuousTimeMode`), once the event iteration converged.
    pub fn enter_continuous_time_mode(&mut self) -> R<()> {
        self.refuse_after_termination()?;
        self.require_event_iteration_converged("Continuous-Time Mode")?;
        self.mode = Mode::ContinuousTimeMode;
        Ok(())
    }

    /// Refuses to leave Event Mode for `target` unless the event iteration
    /// converged: the discrete states were updated in this Event Mode and
    /// the last update did not ask for another (FMI 3.0 sec. 2.3.5:
    /// "When discreteStatesNeedUpdate = fmi3True, the importer must stay
    /// in Event Mode for another event iteration").
    pub(super) fn require_event_iteration_converged(&self, target: &str) -> R<()> {
        let update = MeCall::UpdateDiscreteStates.name(self.version);
        let (flag, yes) = match self.version {
            FmiVersion::Fmi2 => ("newDiscreteStatesNeeded", "fmi2True"),
            FmiVersion::Fmi3 => ("discreteStatesNeedUpdate", "fmi3True"),
        };
        if !self.me.updated {
            return Err(Fail::sequence(format!(
                "{update} was not called in this Event Mode (the event iteration ends with it, \
                 returning {flag} = false, before {target})"
            )));
        }
        if self.me.need_update {
            return Err(Fail::sequence(format!(
                "{update} returned {flag} = {yes}: the event iteration goes on (call {update} again) \
                 before {target}"
            )));
        }
        Ok(())
    }

    /// `fmi2CompletedIntegratorStep` / `fmi3CompletedIntegratorStep`
    /// (Continuous-Time Mode): the importer accepted its step at the
    /// current time and states; the model may ask for a step event
    /// ([`crate::ContinuousModel::completed_integrator_step`]). With
    /// `no_set_prior`, FMU states from before now can no longer be restored.
    pub fn completed_integrator_step(&mut self, no_set_prior: bool) -> R<StepEvent> {
        self.refuse_after_termination()?;
        let t = self.time;
        if let Some(last) = self.me.completed[1]
            && t < last - tolerance(last)
        {
            return Err(Fail::sequence(format!(
                "the integrator step completed at t = {t} is before the previous one, at t = {last}"
            )));
        }
        self.refuse_after_stop("the integrator step completed")?;
        self.refresh()?;
        let Some(mut model) = self.model.take() else {
            return Err(Fail::usage("the model is not initialized"));
        };
        let event = match model.model_exchange() {
            Some(me) => {
                let log = model_log(&self.sink);
                me.completed_integrator_step(t, &mut self.values, &self.inputs, &log)
            }
            None => StepEvent::default(),
        };
        self.model = Some(model);
        self.dirty = true;
        self.me.completed = [self.me.completed[1], Some(t)];
        if no_set_prior {
            self.no_set_prior_from = Some(self.no_set_prior_from.map_or(t, |p| p.max(t)));
        }
        if event.terminate_simulation {
            self.terminate_requested = true;
        }
        Ok(event)
    }

    /// The earliest time `fmi*SetTime` accepts: the start time, the last
    /// Event Mode's time, the second-last completed integrator step.
    fn earliest_time(&self) -> f64 {
        let mut t = self.start_time;
        for x in [self.me.event_time, self.me.completed[0]]
            .into_iter()
            .flatten()
        {
            t = t.max(x);
        }
        t
    }

    /// `fmi2SetTime` / `fmi3SetTime`: the time of the next evaluations.
    /// FMI 2 in Event Mode: only for a pure discrete-time FMU (no
    /// continuous states) after the event iteration converged, where it
    /// starts the next event instant (FMI 2.0 sec. 3.2.3, footnote 8).
    pub fn set_time(&mut self, t: f64) -> R<()> {
        if !t.is_finite() {
            return Err(Fail::usage(format!("time must be finite, got {t}")));
        }
        if self.mode == Mode::EventMode {
            let states = self.me_spec().map_or(0, |me| me.states.len());
            if states > 0 || !self.me.updated || self.me.need_update {
                return Err(Fail::sequence(format!(
                    "called in state Event Mode: only a pure discrete-time FMU (this one has {states} continuous \
                     states) may set the time there, after fmi2NewDiscreteStates returned newDiscreteStatesNeeded = fmi2False"
                )));
            }
        }
        let earliest = self.earliest_time();
        if t < earliest - tolerance(earliest) {
            return Err(Fail::sequence(format!(
                "time {t} is before {earliest}: time may not go back before the start time, the last Event Mode \
                 or the second-last completed integrator step"
            )));
        }
        if self.mode == Mode::EventMode {
            self.me = MeState::at_event(t);
        }
        self.time = t;
        self.values[TIME] = t;
        self.dirty = true;
        Ok(())
    }

    /// The Model Exchange declaration of a Model Exchange instance (the C
    /// layer checked the interface: [`Instance::check_me_call`]).
    fn me_declared(&self) -> R<&'static ModelExchangeSpec> {
        self.me_spec()
            .ok_or_else(|| Fail::usage("this instance is no Model Exchange instance"))
    }

    /// Checks the length the importer gave for an array of states
    /// (`nx` / `nContinuousStates`) or of event indicators.
    fn check_length(&self, n: usize, expected: usize, what: &str) -> R<()> {
        if n == expected {
            return Ok(());
        }
        let name = match (what, self.version) {
            ("states", FmiVersion::Fmi2) => "nx",
            ("states", FmiVersion::Fmi3) => "nContinuousStates",
            (_, FmiVersion::Fmi2) => "ni",
            (_, FmiVersion::Fmi3) => "nEventIndicators",
        };
        Err(Fail::usage(format!(
            "{name} ({n}) differs from the number of {} ({expected})",
            if what == "states" {
                "continuous states"
            } else {
                "event indicators"
            }
        )))
    }

    /// `fmi2SetContinuousStates` / `fmi3SetContinuousStates`: the states
    /// in the order of the declaration.
    pub fn set_continuous_states(&mut self, x: &[f64]) -> R<()> {
        let me = self.me_declared()?;
        self.check_length(x.len(), me.states.len(), "states")?;
        for (s, &xi) in me.states.iter().zip(x) {
            self.values[s.state] = xi;
        }
        self.dirty = true;
        Ok(())
    }

    /// `fmi2GetContinuousStates` / `fmi3GetContinuousStates`.
    pub fn get_continuous_states(&mut self, out: &mut [f64]) -> R<()> {
        self.read_per_state(out, |s| s.state)
    }

    /// `fmi2GetDerivatives` / `fmi3GetContinuousStateDerivatives`:
    /// f(t, x, u) at the current time, states and inputs.
    pub fn get_derivatives(&mut self, out: &mut [f64]) -> R<()> {
        self.read_per_state(out, |s| s.derivative)
    }

    /// Reads, per continuous state, the (computed) variable `pick` names.
    fn read_per_state(
        &mut self,
        out: &mut [f64],
        pick: fn(&crate::ContinuousState) -> crate::model::Vr,
    ) -> R<()> {
        let me = self.me_declared()?;
        self.check_length(out.len(), me.states.len(), "states")?;
        self.refresh()?;
        for (slot, s) in out.iter_mut().zip(&me.states) {
            *slot = self.values[pick(s)];
        }
        Ok(())
    }

    /// `fmi2GetEventIndicators` / `fmi3GetEventIndicators`.
    pub fn get_event_indicators(&mut self, out: &mut [f64]) -> R<()> {
        let me = self.me_declared()?;
        self.check_length(out.len(), me.event_indicators.len(), "indicators")?;
        self.refresh()?;
        for (slot, &z) in out.iter_mut().zip(&me.event_indicators) {
            *slot = self.values[z];
        }
        Ok(())
    }

    /// `fmi2GetNominalsOfContinuousStates` /
    /// `fmi3GetNominalsOfContinuousStates` (1.0 where none is declared).
    pub fn get_nominals(&self, out: &mut [f64]) -> R<()> {
        let me = self.me_declared()?;
        self.check_length(out.len(), me.states.len(), "states")?;
        for (slot, s) in out.iter_mut().zip(&me.states) {
            *slot = s.nominal_value();
        }
        Ok(())
    }

    /// The number of continuous states (`fmi3GetNumberOfContinuousStates`).
    pub fn number_of_continuous_states(&self) -> R<usize> {
        Ok(self.me_declared()?.states.len())
    }

    /// The number of event indicators (`fmi3GetNumberOfEventIndicators`).
    pub fn number_of_event_indicators(&self) -> R<usize> {
        Ok(self.me_declared()?.event_indicators.len())
    }

    /// Whether `mode` belongs to this instance's interface (a restored or
    /// deserialized FMU state of the other interface is refused).
    pub(super) fn mode_fits_interface(&self, mode: Mode) -> bool {
        match mode {
            Mode::StepComplete | Mode::StepFailed => {
                self.interface == Interface::CoSimulation && self.scheduled.is_none()
            }
            Mode::EventMode => {
                self.interface == Interface::ModelExchange
                    || (self.spec.event_mode && self.event_mode_used && self.scheduled.is_none())
            }
            Mode::ContinuousTimeMode => self.interface == Interface::ModelExchange,
            Mode::ClockActivation => self.scheduled.is_some(),
            // Never saved: inside fmi3ActivateModelPartition only.
            Mode::ClockUpdate => false,
            _ => true,
        }
    }
}

/// The model's event update at `t` (one call of `fmi2NewDiscreteStates` /
/// `fmi3UpdateDiscreteStates`, by the importer or by the kit in its
/// place): the Model Exchange equations of a Model Exchange instance, the
/// Co-Simulation event equations ([`crate::EventModel`]) of a
/// Co-Simulation one (nothing happens for a model without them). A next
/// event time that is not finite or lies before `t` is a model error.
pub(super) fn discrete_update(
    model: &mut dyn crate::Model,
    interface: Interface,
    t: f64,
    values: &mut crate::Values,
    inputs: &crate::Inputs,
    log: &dyn Fn(crate::LogLevel, &str),
) -> Result<EventUpdate, String> {
    let update = match interface {
        Interface::ModelExchange => model
            .model_exchange()
            .map(|me| me.update_discrete_states(t, values, inputs, log)),
        Interface::CoSimulation => model
            .event_mode()
            .map(|em| em.update_discrete_states(t, values, inputs, log)),
    }
    .unwrap_or_default();
    if let Some(next) = update.next_event_time
        && !(next.is_finite() && next >= t - tolerance(t))
    {
        return Err(format!(
            "the model announced the next time event at t = {next}, which is not after the current time {t} (a model error)"
        ));
    }
    Ok(update)
}
