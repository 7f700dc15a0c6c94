//! One FMU instance: the state machine, variable access, stepping, FMU
//! states. Safe Rust, shared by the FMI 2 and FMI 3 C layers (which only
//! convert pointers and pick masks).
//!
//! Error policy: a call made in the wrong state or with bad arguments
//! returns `Error` with a log line and changes nothing; a failing model
//! computation (invalid parameters at the end of initialization, a failing
//! step) returns `Error` and puts the instance into the `Error` state, from
//! which only getters, reset, free and FMU-state restore are accepted.
//!
//! Strictness: every call is checked against the FMI 2.0 / FMI 3.0
//! co-simulation state machines (Model Exchange: [`model_exchange`]) and
//! the standards' rules on call sequences,
//! and a call they forbid is refused with a log line
//! `<fmiFunction>: Illegal call sequence: <why>` ([`Fail::sequence`]):
//! a function called in a state that does not allow it
//! ([`Instance::require_mode`]); `fmi2EnterInitializationMode` without
//! `fmi2SetupExperiment` since instantiation or reset; setting a variable
//! in a state where its causality, variability and `initial` do not allow
//! it ([`Instance::check_settable`]; FMI 3 structural parameters only in
//! Configuration Mode, [`Instance::enter_configuration`], and nothing else
//! there); a step that does not start where the
//! last one ended, that ends after the stop time the importer defined, or
//! that follows the FMU's request to terminate; restoring an FMU state from
//! before a point where a step was started with
//! `noSetFMUStatePriorToCurrentPoint = true`; Co-Simulation with events
//! ([`crate::event_mode`]): Event Mode only with `eventModeUsed`, Step Mode only
//! after the event iteration converged, no step after
//! `eventHandlingNeeded = true` before Event Mode.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::caps::{Capabilities, FmiVersion, Quirk, token};
use crate::input::{InputSource, Inputs, MAX_INPUT_ORDER};
use crate::model::{
    Causality, Dimension, Initial, LogLevel, MAX_ARRAY_ELEMENTS, Model, ModelSpec, StepError, TIME,
    Values, VarType, Variability, Variable, Vr, element_count, resized,
};

mod clock_timing;
mod clocks;
mod event_mode;
mod model_exchange;
mod scheduled;

pub use clock_timing::{INTERVAL_CHANGED, INTERVAL_NOT_YET_KNOWN, INTERVAL_UNCHANGED};
pub use clocks::{ClockRt, ClockState};
pub use event_mode::CsEvents;
pub use model_exchange::{MeCall, MeState};
pub use scheduled::Preemption;

/// The interface an instance was made for (FMI 2 `fmuType`, FMI 3 the
/// instantiation function).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interface {
    /// Co-Simulation (`fmi2CoSimulation`, `fmi3InstantiateCoSimulation`).
    CoSimulation,
    /// Model Exchange (`fmi2ModelExchange`, `fmi3InstantiateModelExchange`).
    ModelExchange,
}

/// FMI status (same numbering in FMI 2 and FMI 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i32)]
pub enum Status {
    /// fmi2OK / fmi3OK.
    Ok = 0,
    /// Warning.
    Warning = 1,
    /// Discard.
    Discard = 2,
    /// Error.
    Error = 3,
    /// Fatal.
    Fatal = 4,
}

impl Status {
    /// The log category used for messages of this status.
    pub fn category(self) -> &'static str {
        match self {
            Status::Ok => "logDebug",
            Status::Warning => "logStatusWarning",
            Status::Discard => "logStatusDiscard",
            Status::Error => "logStatusError",
            Status::Fatal => "logStatusFatal",
        }
    }
}

/// The log categories declared in `modelDescription.xml`.
pub const LOG_CATEGORIES: [(&str, &str); 5] = [
    ("logStatusWarning", "Warnings"),
    ("logStatusDiscard", "Discarded steps"),
    (
        "logStatusError",
        "Errors, e.g. invalid parameters or illegal calls",
    ),
    ("logStatusFatal", "Fatal errors"),
    (
        "logDebug",
        "Informative messages about calls and input handling",
    ),
];

/// Instance states of the FMI 2 / FMI 3 co-simulation state machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// After instantiate / reset.
    Instantiated = 0,
    /// Initialization mode.
    Initialization = 1,
    /// FMI 2 stepComplete / FMI 3 Step Mode.
    StepComplete = 2,
    /// After a step returned Discard (FMI 2 stepFailed / FMI 3 Step Discarded).
    StepFailed = 3,
    /// After terminate.
    Terminated = 4,
    /// After a failing computation.
    Error = 5,
    /// After a fatal failure.
    Fatal = 6,
    /// FMI 3 Configuration Mode (`fmi3EnterConfigurationMode` from
    /// Instantiated, `fmi3ExitConfigurationMode` back): only structural
    /// parameters can be set and read.
    Configuration = 7,
    /// Model Exchange Event Mode: after initialization and
    /// `fmi2EnterEventMode` / `fmi3EnterEventMode`; discrete states are
    /// updated (`fmi2NewDiscreteStates` / `fmi3UpdateDiscreteStates`).
    EventMode = 8,
    /// Model Exchange Continuous-Time Mode (`fmi2EnterContinuousTimeMode` /
    /// `fmi3EnterContinuousTimeMode`): the importer integrates.
    ContinuousTimeMode = 9,
    /// FMI 3 Scheduled Execution's Clock Activation Mode (after
    /// initialization): the importer activates model partitions
    /// (`fmi3ActivateModelPartition`).
    ClockActivation = 10,
    /// FMI 3 Scheduled Execution's Clock Update Mode: inside
    /// `fmi3ActivateModelPartition`, while the importer's `clockUpdate`
    /// callback reads the output Clocks and the countdown Clocks'
    /// intervals (`fmi3GetClock`, `fmi3GetIntervalDecimal`).
    ClockUpdate = 11,
}

impl Mode {
    /// Bit for state masks.
    pub const fn bit(self) -> u32 {
        1 << (self as u8)
    }

    fn from_u8(b: u8) -> Option<Mode> {
        [
            Mode::Instantiated,
            Mode::Initialization,
            Mode::StepComplete,
            Mode::StepFailed,
            Mode::Terminated,
            Mode::Error,
            Mode::Fatal,
            Mode::Configuration,
            Mode::EventMode,
            Mode::ContinuousTimeMode,
            Mode::ClockActivation,
            Mode::ClockUpdate,
        ]
        .into_iter()
        .find(|m| *m as u8 == b)
    }

    fn name(self, version: FmiVersion) -> &'static str {
        match (self, version) {
            (Mode::Instantiated, _) => "Instantiated",
            (Mode::Initialization, _) => "Initialization Mode",
            (Mode::StepComplete, FmiVersion::Fmi2) => "stepComplete",
            (Mode::StepComplete, FmiVersion::Fmi3) => "Step Mode",
            (Mode::StepFailed, FmiVersion::Fmi2) => "stepFailed",
            (Mode::StepFailed, FmiVersion::Fmi3) => "Step Discarded",
            (Mode::Terminated, _) => "Terminated",
            (Mode::Error, _) => "Error",
            (Mode::Fatal, _) => "Fatal",
            (Mode::Configuration, _) => "Configuration Mode",
            (Mode::EventMode, _) => "Event Mode",
            (Mode::ContinuousTimeMode, _) => "Continuous-Time Mode",
            (Mode::ClockActivation, _) => "Clock Activation Mode",
            (Mode::ClockUpdate, _) => "Clock Update Mode",
        }
    }
}

/// The phrase that starts the message of every call refused because the
/// standard's state machine or call-sequence rules forbid it.
pub const ILLEGAL_CALL_SEQUENCE: &str = "Illegal call sequence";

/// Why `fmi3EnterConfigurationMode` / `fmi3ExitConfigurationMode` are
/// refused by a model without structural parameters.
pub const NO_CONFIGURATION_MODE: &str = "this FMU has no structural parameters (causality=\"structuralParameter\"), \
     so it has no Configuration Mode";

/// A failed call: the status to return and the message to log.
#[derive(Debug, Clone, PartialEq)]
pub struct Fail {
    /// Status returned.
    pub status: Status,
    /// Message logged.
    pub message: String,
    /// Whether the instance moves to the `Error` state.
    pub poison: bool,
}

impl Fail {
    /// A refused call (wrong state or arguments): no state change.
    pub fn usage(message: impl Into<String>) -> Self {
        Fail {
            status: Status::Error,
            message: message.into(),
            poison: false,
        }
    }

    /// A call the state machine or the call-sequence rules of the standard
    /// forbid: no state change; the message reads
    /// `Illegal call sequence: <why>` (the function name is prefixed when
    /// it is logged).
    pub fn sequence(why: impl std::fmt::Display) -> Self {
        Fail::usage(format!("{ILLEGAL_CALL_SEQUENCE}: {why}"))
    }

    /// A failed computation: the instance moves to `Error`.
    pub fn failure(message: impl Into<String>) -> Self {
        Fail {
            status: Status::Error,
            message: message.into(),
            poison: true,
        }
    }
}

/// Result of instance operations.
pub type R<T> = Result<T, Fail>;

/// A capability that a build can switch off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// Get/set FMU state.
    State,
    /// Serialize FMU state.
    Serialize,
    /// Output derivatives.
    OutputDerivatives,
    /// Input derivatives (FMI 2).
    Interpolate,
    /// Directional / adjoint derivatives.
    Directional,
}

/// A log callback: (status, category, message).
pub type LogFn = Box<dyn Fn(Status, &str, &str) + Send>;

/// Where messages go and which are let through.
pub struct LogSink {
    logger: Option<LogFn>,
    version: FmiVersion,
    logging_on: bool,
    categories: Option<Vec<String>>,
}

impl LogSink {
    /// A sink. `logger` may be absent (nothing is logged then).
    pub fn new(logger: Option<LogFn>, version: FmiVersion, logging_on: bool) -> Self {
        LogSink {
            logger,
            version,
            logging_on,
            categories: None,
        }
    }

    /// Logs a message if the settings let it through. FMI 2: warnings and
    /// worse always go out (unless a category list excludes them), debug
    /// messages only with logging on. FMI 3: nothing without logging on.
    pub fn log(&self, status: Status, message: &str) {
        let Some(logger) = &self.logger else { return };
        if self.enabled(status) {
            logger(status, status.category(), message);
        }
    }

    /// Whether a message of this status would go out (a logger is set and
    /// the settings let it through).
    pub fn enabled(&self, status: Status) -> bool {
        if self.logger.is_none() {
            return false;
        }
        let category = status.category();
        match (&self.categories, self.logging_on) {
            (Some(list), true) => list.iter().any(|c| c == category),
            (None, true) => true,
            (_, false) => self.version == FmiVersion::Fmi2 && status >= Status::Warning,
        }
    }
}

/// An FMU state as saved by get-FMU-state.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    mode: Mode,
    time: f64,
    start_time: f64,
    values: Vec<f64>,
    /// The strings of a model with `String` variables (else empty).
    strings: Vec<String>,
    /// The arrays of a model with arrays (else empty).
    arrays: Vec<Vec<f64>>,
    inputs: Vec<[f64; MAX_INPUT_ORDER + 1]>,
    last_step_status: Status,
    last_successful_time: f64,
    fixed_step: Option<f64>,
    stop_time: Option<f64>,
    experiment_set: bool,
    terminate_requested: bool,
    /// The Model Exchange bookkeeping (default for co-simulation; the
    /// event iteration of Co-Simulation's Event Mode too).
    me: MeState,
    /// Co-Simulation events: a pending event, the next time event.
    cs_event: CsEvents,
    /// FMI 3 Clocks: intervals, shifts, what this Event Mode saw.
    clocks: ClockState,
    /// The model's own state ([`Model::save_state`]), if it keeps one.
    model: Option<crate::model::ModelState>,
}

const SNAPSHOT_MAGIC: &[u8; 8] = b"COSIMFS2";

static NEXT_STATE_ID: AtomicUsize = AtomicUsize::new(0x1000);

/// One FMU instance.
pub struct Instance {
    /// The model.
    pub spec: &'static ModelSpec,
    /// The capabilities of this build.
    pub caps: Capabilities,
    /// FMI version of the interface used.
    pub version: FmiVersion,
    /// Co-Simulation or Model Exchange.
    interface: Interface,
    /// Instance name given by the importer.
    pub name: String,
    token_hash: u64,
    /// The model has FMI 3 arrays (`ModelSpec::has_arrays`): values are
    /// counted and set by element.
    has_arrays: bool,
    sink: LogSink,
    mode: Mode,
    time: f64,
    start_time: f64,
    values: Values,
    inputs: Inputs,
    model: Option<Box<dyn Model>>,
    dirty: bool,
    last_step_status: Status,
    last_successful_time: f64,
    fixed_step: Option<f64>,
    /// The stop time the importer defined (`stopTimeDefined`).
    stop_time: Option<f64>,
    /// FMI 2: `fmi2SetupExperiment` was called since instantiation / reset.
    experiment_set: bool,
    /// The latest `currentCommunicationPoint` of a step started with
    /// `noSetFMUStatePriorToCurrentPoint = true` in this run.
    no_set_prior_from: Option<f64>,
    /// The model asked to end the simulation ([`StepError::Terminate`]).
    terminate_requested: bool,
    /// FMI 3 `earlyReturnAllowed` of the instantiation.
    early_return_allowed: bool,
    /// FMI 3: the last step returned early (`earlyReturn`).
    early_return: bool,
    /// FMI 3 `eventModeUsed` of the instantiation (a model with
    /// [`ModelSpec::event_mode`] only): the importer handles the events in
    /// Event Mode.
    event_mode_used: bool,
    /// Co-Simulation events ([`ModelSpec::event_mode`]): a pending event,
    /// the next time event (part of the FMU state).
    cs_event: CsEvents,
    /// FMI 3 Clocks (a model with Clocks): their run-time state (the
    /// activations are the Clocks' values).
    clocks: ClockState,
    /// FMI 3 Scheduled Execution (`fmi3InstantiateScheduledExecution`):
    /// the importer's `lockPreemption` / `unlockPreemption`, called around
    /// each model partition's computation.
    scheduled: Option<Preemption>,
    states: HashMap<usize, Snapshot>,
    /// The C strings the last `fmi2GetString` / `fmi3GetString` handed
    /// out: valid until the next such call (the standards ask for "until
    /// the next call on the instance").
    c_strings: Vec<CString>,
    /// Model Exchange: the times and event iteration the call-sequence
    /// rules need (default for co-simulation).
    me: MeState,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("model", &self.spec.name)
            .field("name", &self.name)
            .field("mode", &self.mode)
            .field("time", &self.time)
            .finish_non_exhaustive()
    }
}

/// Computes the outputs and locals ([`Model::outputs`]) and, for a model
/// with Model Exchange equations, the state derivatives
/// ([`crate::ContinuousModel::derivatives`]).
fn evaluate(model: &mut dyn Model, t: f64, values: &mut Values, inputs: &Inputs) {
    model.outputs(t, values, inputs);
    if let Some(me) = model.model_exchange() {
        me.derivatives(t, values, inputs);
    }
}

/// The entries of [`Instance::jacobian`], once the variables are checked:
/// 0 where the unknown does not list the known among its dependencies, 1
/// for a state with respect to itself (an output or state derivative that
/// is a state depends on itself, FMI 3.0 sec. 2.4.8), else the model's
/// partial derivative.
fn jacobian_of(
    spec: &ModelSpec,
    interface: Interface,
    model: &mut dyn Model,
    (t, values, inputs): (f64, &Values, &Inputs),
    unknowns: &[Vr],
    knowns: &[Vr],
) -> Vec<f64> {
    let me_spec = spec.model_exchange.as_ref();
    let mut jac = Vec::with_capacity(unknowns.len() * knowns.len());
    for &u in unknowns {
        let deps = spec.variable(u).map(|v| &v.dependencies);
        for &k in knowns {
            let declared = deps.is_some_and(|d| d.iter().any(|(i, _)| *i == k));
            let x = match interface {
                Interface::CoSimulation if declared => model.partial_derivative(u, k, values),
                Interface::ModelExchange
                    if u == k && me_spec.is_some_and(|me| me.state_of(k).is_some()) =>
                {
                    1.0
                }
                Interface::ModelExchange if declared => model
                    .model_exchange()
                    .map_or(0.0, |me| me.partial_derivative(u, k, t, values, inputs)),
                _ => 0.0,
            };
            jac.push(x);
        }
    }
    jac
}

/// The log function handed to a model's step and event calls.
fn model_log(sink: &LogSink) -> impl Fn(LogLevel, &str) + '_ {
    move |level: LogLevel, msg: &str| {
        let status = match level {
            LogLevel::Info => Status::Ok,
            LogLevel::Warning => Status::Warning,
            LogLevel::Error => Status::Error,
        };
        sink.log(status, msg);
    }
}

fn tolerance(t: f64) -> f64 {
    1e-9 * t.abs().max(1.0)
}

/// The error of [`Instance::check_readable`] in Configuration Mode.
#[cold]
#[inline(never)]
fn unreadable_in_configuration(v: &Variable) -> Fail {
    Fail::sequence(format!(
        "{} {} (vr {}) cannot be read in state Configuration Mode: only structural parameters can",
        v.causality.as_str(),
        v.name,
        v.vr
    ))
}

/// Whether `v` may be set in state `mode` (co-simulation), else the rule
/// that forbids it. The rules of FMI 2.0 (sec. 4.2.4, footnotes 1, 3, 6 of
/// the table of allowed calls; sec. 2.2.7) and FMI 3.0 (sec. 2.3.2 -
/// 2.3.4, 4.2.1), in the form FMPy applies them, with `initial` as
/// declared or implied ([`Variable::effective_initial`]):
///
/// - Instantiated: inputs, and variables that are not constant with
///   `initial` exact or approx (FMI 2.0 excludes inputs here: "this does not
///   include inputs"; FMI 3.0 and FMPy allow them, and so does the kit);
/// - Initialization Mode: inputs, variables that are not constant with
///   `initial` exact, tunable parameters;
/// - stepComplete / Step Mode: inputs and tunable parameters;
/// - Configuration Mode (FMI 3): structural parameters (fixed or tunable;
///   the kit's are fixed) and nothing else;
/// - any other state: nothing.
///
/// So constants, outputs and locals with `initial` calculated, and the
/// independent variable are never settable, and structural parameters only
/// in Configuration Mode (FMI 3.0 sec. 2.3.6; the Reference FMUs:
/// "Structural variables can only be set in Configuration Mode").
pub fn settable_in(v: &Variable, mode: Mode) -> Result<(), &'static str> {
    let structural = v.causality == Causality::StructuralParameter;
    if mode == Mode::Configuration {
        return if structural && matches!(v.variability, Variability::Fixed | Variability::Tunable) {
            Ok(())
        } else {
            Err("only structural parameters can be set there")
        };
    }
    if structural {
        return Err(
            "structural parameters can only be set in Configuration Mode (fmi3EnterConfigurationMode)",
        );
    }
    let input = v.causality == Causality::Input;
    let not_constant = v.variability != Variability::Constant;
    let tunable_parameter =
        v.causality == Causality::Parameter && v.variability == Variability::Tunable;
    let initial = v.effective_initial();
    let (ok, rule) = match mode {
        Mode::Instantiated => (
            input || (not_constant && matches!(initial, Some(Initial::Exact | Initial::Approx))),
            "only inputs and variables with initial exact or approx (not constant) can be set there",
        ),
        Mode::Initialization => (
            input || tunable_parameter || (not_constant && initial == Some(Initial::Exact)),
            "only inputs, tunable parameters and variables with initial exact (not constant) can be set there",
        ),
        Mode::StepComplete => (
            input || tunable_parameter,
            "only inputs and tunable parameters can be set there",
        ),
        _ => (false, "no variable can be set there"),
    };
    if ok { Ok(()) } else { Err(rule) }
}

impl Instance {
    /// A new Co-Simulation instance in state `Instantiated`, with start values.
    pub fn new(
        spec: &'static ModelSpec,
        caps: Capabilities,
        version: FmiVersion,
        name: &str,
        sink: LogSink,
    ) -> Self {
        Self::with_interface(spec, caps, version, Interface::CoSimulation, name, sink)
    }

    /// A new instance of `interface` in state `Instantiated`, with start
    /// values (Model Exchange: for a model with
    /// [`ModelSpec::model_exchange`], else its calls are refused).
    pub fn with_interface(
        spec: &'static ModelSpec,
        caps: Capabilities,
        version: FmiVersion,
        interface: Interface,
        name: &str,
        sink: LogSink,
    ) -> Self {
        let mut h = crate::model::Fnv::new();
        h.str(&token(spec, version, &caps));
        let n = spec.variables.len();
        let mut inst = Instance {
            spec,
            caps,
            version,
            interface,
            name: name.to_string(),
            token_hash: h.finish(),
            has_arrays: spec.has_arrays(),
            sink,
            mode: Mode::Instantiated,
            time: spec.experiment.start_time,
            start_time: spec.experiment.start_time,
            values: spec.start_values(),
            inputs: Inputs::new(n, spec.experiment.start_time),
            model: None,
            dirty: true,
            last_step_status: Status::Ok,
            last_successful_time: spec.experiment.start_time,
            fixed_step: None,
            stop_time: None,
            experiment_set: false,
            no_set_prior_from: None,
            terminate_requested: false,
            early_return_allowed: false,
            early_return: false,
            event_mode_used: false,
            cs_event: CsEvents::default(),
            clocks: ClockState::new(spec, spec.experiment.start_time),
            scheduled: None,
            states: HashMap::new(),
            c_strings: Vec::new(),
            me: MeState::default(),
        };
        inst.reset_values();
        inst
    }

    /// The interface the instance was made for.
    pub fn interface(&self) -> Interface {
        self.interface
    }

    fn reset_values(&mut self) {
        self.values = self.spec.start_values();
        self.inputs = Inputs::new(self.values.len(), self.start_time);
        for v in self.spec.with_causality(Causality::Input) {
            self.inputs.set_value(v.vr, v.start.unwrap_or(0.0));
        }
        self.values[TIME] = self.time;
    }

    /// Current state.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Current time.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Logs through the instance's sink.
    pub fn log(&self, status: Status, message: &str) {
        self.sink.log(status, message);
    }

    /// Whether a message of this status would be logged now.
    pub fn log_enabled(&self, status: Status) -> bool {
        self.sink.enabled(status)
    }

    /// Per vr: whether the importer may set the variable in Intermediate
    /// Update Mode (a continuous Real input of a build that provides
    /// intermediate update).
    pub fn intermediate_update_mask(&self) -> Vec<bool> {
        self.spec
            .variables
            .iter()
            .map(|v| self.caps.intermediate_update && v.is_continuous_real_input())
            .collect()
    }

    /// True when this build provides intermediate update and the model has
    /// an input to update (else steps never call the importer back).
    pub fn takes_intermediate_inputs(&self) -> bool {
        self.caps.intermediate_update
            && self
                .spec
                .variables
                .iter()
                .any(|v| v.is_continuous_real_input())
    }

    /// Switches debug logging (`fmi2SetDebugLogging` / `fmi3SetDebugLogging`).
    pub fn set_debug_logging(&mut self, on: bool, categories: &[&str]) -> R<()> {
        for c in categories {
            if !LOG_CATEGORIES.iter().any(|(n, _)| n == c) {
                return Err(Fail::usage(format!("unknown log category \"{c}\"")));
            }
        }
        self.sink.logging_on = on;
        self.sink.categories = if categories.is_empty() {
            None
        } else {
            Some(categories.iter().map(|c| c.to_string()).collect())
        };
        Ok(())
    }

    /// Refuses the call unless the instance is in one of the states of
    /// `mask`: `<fname>: Illegal call sequence: called in state <state>`.
    #[inline]
    pub fn require_mode(&self, fname: &str, mask: u32) -> R<()> {
        if self.mode.bit() & mask != 0 {
            return Ok(());
        }
        self.illegal_in_mode(fname)
    }

    /// The error of [`Instance::require_mode`] (out of the calls' way).
    #[cold]
    #[inline(never)]
    fn illegal_in_mode(&self, fname: &str) -> R<()> {
        let mut why = format!("called in state {}", self.mode.name(self.version));
        if self.terminate_requested
            && matches!(
                self.mode,
                Mode::StepComplete | Mode::StepFailed | Mode::EventMode | Mode::ContinuousTimeMode
            )
        {
            why.push_str(&format!(
                " (the FMU requested termination at t = {})",
                self.last_successful_time
            ));
        }
        Err(Fail::usage(format!(
            "{fname}: {ILLEGAL_CALL_SEQUENCE}: {why}"
        )))
    }

    /// The name of the current state, as the standard of this instance
    /// calls it (`stepComplete` / `Step Mode`, ...).
    pub fn mode_name(&self) -> &'static str {
        self.mode.name(self.version)
    }

    /// FMI 3 `earlyReturnAllowed` (from `fmi3InstantiateCoSimulation`):
    /// whether a step that ends early ([`StepError::Terminate`] before
    /// `t + h`) returns `fmi3OK` with `earlyReturn = true` (else
    /// `fmi3Discard`).
    pub fn set_early_return_allowed(&mut self, allowed: bool) {
        self.early_return_allowed = allowed;
    }

    /// Whether the model asked to end the simulation (FMI 2
    /// `fmi2Terminated`, FMI 3 `terminateSimulation`).
    pub fn terminate_requested(&self) -> bool {
        self.terminate_requested
    }

    /// FMI 3 `earlyReturn` of the last step.
    pub fn early_return(&self) -> bool {
        self.early_return
    }

    /// The stop time the importer defined, if it did.
    pub fn stop_time(&self) -> Option<f64> {
        self.stop_time
    }

    /// Refuses the call if the capability is switched off in this build.
    pub fn require_cap(&self, cap: Cap) -> R<()> {
        let (on, name) = match (cap, self.version) {
            (Cap::State, FmiVersion::Fmi2) => (self.caps.get_set_state, "canGetAndSetFMUstate"),
            (Cap::State, FmiVersion::Fmi3) => (self.caps.get_set_state, "canGetAndSetFMUState"),
            (Cap::Serialize, FmiVersion::Fmi2) => {
                (self.caps.serialize_state, "canSerializeFMUstate")
            }
            (Cap::Serialize, FmiVersion::Fmi3) => {
                (self.caps.serialize_state, "canSerializeFMUState")
            }
            (Cap::OutputDerivatives, _) => (
                self.caps.max_output_derivative_order > 0,
                "maxOutputDerivativeOrder",
            ),
            (Cap::Interpolate, _) => (self.caps.interpolate_inputs, "canInterpolateInputs"),
            (Cap::Directional, FmiVersion::Fmi2) => {
                (self.directional_provided(), "providesDirectionalDerivative")
            }
            (Cap::Directional, FmiVersion::Fmi3) => (
                self.directional_provided(),
                "providesDirectionalDerivatives",
            ),
        };
        if on {
            Ok(())
        } else {
            Err(Fail::usage(format!(
                "capability {name} is disabled in this build"
            )))
        }
    }

    /// Applies a failure: logs it and moves to `Error` / `Fatal` if needed.
    pub fn fail(&mut self, fname: &str, f: Fail) -> Status {
        let msg = if f.message.starts_with(fname) {
            f.message.clone()
        } else {
            format!("{fname}: {}", f.message)
        };
        self.log(f.status, &msg);
        if f.status == Status::Fatal {
            self.mode = Mode::Fatal;
        } else if f.poison {
            self.mode = Mode::Error;
        }
        f.status
    }

    /// Sets the start time and the stop time, if the importer defines one
    /// (`fmi2SetupExperiment`; the arguments of
    /// `fmi3EnterInitializationMode`). A step that ends after the stop time
    /// is refused (FMI 2.0 sec. 2.1.6 / FMI 3.0 sec. 2.3.2: "if the
    /// environment tries to compute past stopTime the FMU has to return
    /// Error").
    pub fn setup_experiment(&mut self, start_time: f64, stop_time: Option<f64>) -> R<()> {
        if !start_time.is_finite() {
            return Err(Fail::usage(format!(
                "startTime must be finite, got {start_time}"
            )));
        }
        if let Some(stop) = stop_time
            && !(stop.is_finite() && stop >= start_time)
        {
            return Err(Fail::usage(format!(
                "stopTime must be finite and >= startTime {start_time}, got {stop} (stopTimeDefined = true)"
            )));
        }
        self.start_time = start_time;
        self.time = start_time;
        self.values[TIME] = start_time;
        self.inputs.set_t0(start_time);
        self.last_successful_time = start_time;
        self.stop_time = stop_time;
        self.experiment_set = true;
        self.clocks.set_start(start_time);
        if self.caps.quirk == Some(Quirk::ResetsInSetup) {
            // The reproduced exporter bug: parameters set before
            // fmi2SetupExperiment are silently lost.
            for v in self.spec.with_causality(Causality::Parameter) {
                self.values[v.vr] = v.start.unwrap_or(0.0);
                if let Some(s) = v.start_string {
                    self.values.set_str(v.vr, s);
                }
                if v.is_array() {
                    let shape = self.spec.shape(v, &self.values);
                    let start = self.spec.array_start_at(v, &shape);
                    self.values.set_array(v.vr, start);
                }
            }
            self.dirty = true;
        }
        Ok(())
    }

    /// Instantiated -> Initialization (FMI 3: `fmi3EnterInitializationMode`
    /// sets the start time first, [`Instance::setup_experiment`]; through
    /// this Rust API an FMI 3 instance starts at the default experiment's
    /// start time unless set). FMI 2: refused unless
    /// `fmi2SetupExperiment` was called since instantiation or the last
    /// reset (FMI 2.0 sec. 2.1.6: "fmi2SetupExperiment must be called at
    /// least once before calling fmi2EnterInitializationMode").
    pub fn enter_initialization(&mut self) -> R<()> {
        if self.version == FmiVersion::Fmi2 && !self.experiment_set {
            return Err(Fail::sequence(
                "fmi2SetupExperiment was not called since fmi2Instantiate / fmi2Reset \
                 (it must be called at least once before fmi2EnterInitializationMode)",
            ));
        }
        if self.has_clocks() && !self.event_mode_used {
            return Err(Fail::sequence(
                "this FMU has Clocks, and the instance was made with eventModeUsed = fmi3False \
                 (FMI 3.0 sec. 2.3.1: \"For FMUs that have clocks, eventModeUsed = fmi3True is required\")",
            ));
        }
        self.mode = Mode::Initialization;
        self.time = self.start_time;
        self.values[TIME] = self.time;
        self.inputs.set_t0(self.time);
        self.dirty = true;
        Ok(())
    }

    fn build_model(&self) -> Result<Box<dyn Model>, String> {
        (self.spec.factory)(&self.values, &self.name)
    }

    /// Initialization -> StepComplete (Co-Simulation) / Event Mode (Model
    /// Exchange): validates the parameters, initializes states.
    pub fn exit_initialization(&mut self) -> R<()> {
        let mut model = self.build_model().map_err(Fail::failure)?;
        if self.interface == Interface::ModelExchange && model.model_exchange().is_none() {
            return Err(Fail::failure(format!(
                "{} declares Model Exchange but its model has no Model Exchange equations (Model::model_exchange)",
                self.spec.name
            )));
        }
        if self.steps_through_events() && model.event_mode().is_none() {
            return Err(Fail::failure(format!(
                "{} declares event mode but its model has no event equations (Model::event_mode)",
                self.spec.name
            )));
        }
        self.values[TIME] = self.time;
        model.init(&mut self.values);
        evaluate(model.as_mut(), self.time, &mut self.values, &self.inputs);
        self.cs_event = CsEvents::default();
        if self.steps_through_events() && !self.event_mode_used {
            // The initial event iteration, in the importer's place.
            self.initial_events(model.as_mut()).map_err(Fail::failure)?;
        }
        self.model = Some(model);
        self.dirty = false;
        if self.has_clocks() {
            // (Still in Initialization Mode: the timing from the final
            // parameters, on the model just built.)
            self.start_clock_timing()?;
        }
        self.last_successful_time = self.time;
        self.mode = match self.interface {
            Interface::CoSimulation if self.scheduled.is_some() => Mode::ClockActivation,
            Interface::CoSimulation if self.event_mode_used => {
                // FMI 3.0 sec. 4.2: with eventModeUsed, initialization
                // ends in Event Mode.
                self.me = MeState::at_event(self.time);
                Mode::EventMode
            }
            Interface::CoSimulation => Mode::StepComplete,
            Interface::ModelExchange => {
                // The initial event instant (FMI 2.0 sec. 3.2.3, FMI 3.0
                // sec. 2.3.4: initialization ends in Event Mode).
                self.me = MeState::at_event(self.time);
                Mode::EventMode
            }
        };
        Ok(())
    }

    /// Refuses Configuration Mode calls of a model without structural
    /// parameters (or of an FMI 2 instance).
    fn require_configuration_mode_exists(&self) -> R<()> {
        if self.version == FmiVersion::Fmi2 {
            return Err(Fail::usage("FMI 2.0 has no Configuration Mode"));
        }
        if !self.spec.has_structural_parameters() {
            return Err(Fail::usage(NO_CONFIGURATION_MODE));
        }
        Ok(())
    }

    /// Instantiated -> Configuration Mode (`fmi3EnterConfigurationMode`),
    /// where only structural parameters can be set and read. Refused with
    /// [`NO_CONFIGURATION_MODE`] for a model without structural parameters
    /// (FMI 3.0 sec. 2.3.2: Configuration Mode is where the importer changes
    /// structural parameters), and as an
    /// illegal call sequence from any state but Instantiated (the kit's
    /// structural parameters are fixed: no Reconfiguration Mode from Step
    /// Mode).
    pub fn enter_configuration(&mut self) -> R<()> {
        self.require_configuration_mode_exists()?;
        if self.mode != Mode::Instantiated {
            let mut why = format!(
                "called in state {} (Configuration Mode is entered from Instantiated only",
                self.mode_name()
            );
            if self.mode == Mode::StepComplete {
                why.push_str(
                    "; Reconfiguration Mode, from Step Mode, exists for tunable structural parameters, \
                     which this FMU has not",
                );
            }
            why.push(')');
            return Err(Fail::sequence(why));
        }
        self.mode = Mode::Configuration;
        Ok(())
    }

    /// Configuration Mode -> Instantiated (`fmi3ExitConfigurationMode`).
    /// The structural parameters are validated with the other parameters,
    /// by the model's factory, when initialization ends.
    pub fn exit_configuration(&mut self) -> R<()> {
        self.require_configuration_mode_exists()?;
        if self.mode != Mode::Configuration {
            return Err(Fail::sequence(format!(
                "called in state {} (only in Configuration Mode, after fmi3EnterConfigurationMode)",
                self.mode_name()
            )));
        }
        self.mode = Mode::Instantiated;
        self.dirty = true;
        Ok(())
    }

    /// -> Terminated; the model ends its run ([`Model::terminate`]).
    pub fn terminate(&mut self) -> R<()> {
        self.mode = Mode::Terminated;
        let log = model_log(&self.sink);
        if let Some(model) = self.model.as_mut() {
            model.terminate(&log);
        }
        Ok(())
    }

    /// -> Instantiated with start values (FMU states stay valid). A new run
    /// begins: the start / stop time must be set again, the
    /// `noSetFMUStatePriorToCurrentPoint` promises and a termination
    /// request are forgotten.
    pub fn reset(&mut self) -> R<()> {
        self.mode = Mode::Instantiated;
        self.start_time = self.spec.experiment.start_time;
        self.time = self.start_time;
        self.model = None;
        self.fixed_step = None;
        self.last_step_status = Status::Ok;
        self.last_successful_time = self.time;
        self.stop_time = None;
        self.experiment_set = false;
        self.no_set_prior_from = None;
        self.terminate_requested = false;
        self.early_return = false;
        self.me = MeState::default();
        self.cs_event = CsEvents::default();
        self.clocks = ClockState::new(self.spec, self.start_time);
        self.reset_values();
        self.dirty = true;
        Ok(())
    }

    /// Brings calculated values up to date.
    fn refresh(&mut self) -> R<()> {
        if !self.dirty {
            return Ok(());
        }
        self.values[TIME] = self.time;
        match self.mode {
            Mode::Instantiated | Mode::Configuration => {}
            Mode::Initialization => {
                let mut model = self.build_model().map_err(Fail::usage)?;
                model.init(&mut self.values);
                evaluate(model.as_mut(), self.time, &mut self.values, &self.inputs);
            }
            _ => {
                if let Some(model) = &mut self.model {
                    evaluate(model.as_mut(), self.time, &mut self.values, &self.inputs);
                }
            }
        }
        self.dirty = false;
        Ok(())
    }

    #[inline]
    fn lookup(&self, vr: Vr, ty: VarType) -> R<&'static crate::model::Variable> {
        let spec: &'static ModelSpec = self.spec;
        match spec.variable(vr) {
            Some(v) if v.ty == ty && v.clock.is_none() => Ok(v),
            found => Err(self.lookup_failure(vr, ty, found)),
        }
    }

    /// The error of [`Instance::lookup`] (out of the calls' way).
    #[cold]
    #[inline(never)]
    fn lookup_failure(&self, vr: Vr, ty: VarType, found: Option<&crate::model::Variable>) -> Fail {
        match found {
            None => Fail::usage(format!("unknown value reference {vr}")),
            Some(v) if v.is_clock() => Fail::usage(format!(
                "variable {} (vr {vr}) is a Clock: fmi3GetClock / fmi3SetClock read and set it",
                v.name
            )),
            Some(v) => Fail::usage(format!(
                "variable {} (vr {vr}) is of type {}, not {}",
                v.name,
                self.type_name(v.ty),
                self.type_name(ty)
            )),
        }
    }

    fn type_name(&self, ty: VarType) -> &'static str {
        match self.version {
            FmiVersion::Fmi2 => ty.fmi2_name(),
            FmiVersion::Fmi3 => ty.fmi3_name(),
        }
    }

    /// Looks up a variable that must be of a float type for a derivative
    /// call (`what` names the call's subject, e.g. "output derivatives"):
    /// `Real` / `Float64`, and `Float32` too if `float32` (output and
    /// directional derivatives; input derivatives exist in FMI 2 only).
    fn lookup_float(
        &self,
        vr: Vr,
        what: &str,
        float32: bool,
    ) -> R<&'static crate::model::Variable> {
        let spec: &'static ModelSpec = self.spec;
        let v = spec
            .variable(vr)
            .ok_or_else(|| Fail::usage(format!("unknown value reference {vr}")))?;
        if v.is_array() {
            return Err(Fail::usage(format!(
                "{what} are not provided for arrays; {} (vr {vr}) is an array",
                v.name
            )));
        }
        let ok = v.ty == VarType::Real || (float32 && v.ty == VarType::Float32);
        if !ok {
            let types = if float32 && self.version == FmiVersion::Fmi3 {
                "Float64 and Float32"
            } else {
                self.type_name(VarType::Real)
            };
            return Err(Fail::usage(format!(
                "{what} are defined for {types} variables only; {} (vr {vr}) is {} ({})",
                v.name,
                self.type_name(v.ty),
                v.variability.as_str()
            )));
        }
        Ok(v)
    }

    /// Reads values of one type. `Float32` values come as the `f32` value
    /// (as `f64`); integer values are checked to be whole and in the type's
    /// range (a model that computed anything else gets an error naming the
    /// variable, never a wrapped or truncated value).
    ///
    /// In Configuration Mode only structural parameters can be read (an
    /// illegal call sequence for any other variable).
    /// `String` values are read with [`Instance::get_strings`].
    pub fn get(&mut self, vrs: &[Vr], ty: VarType, out: &mut dyn FnMut(usize, f64)) -> R<()> {
        if ty == VarType::String {
            return Err(Fail::usage(
                "String values are not numbers (Instance::get_strings reads them)",
            ));
        }
        self.check_readable(vrs, ty)?;
        self.refresh()?;
        if self.has_arrays {
            return self.get_elements(vrs, ty, out);
        }
        let value = |vr: Vr| {
            if vr == TIME {
                self.time
            } else {
                self.values[vr]
            }
        };
        if ty.is_integer() {
            for &vr in vrs {
                let x = value(vr);
                if !ty.holds(x) {
                    let name = self.spec.variable(vr).map_or("?", |v| v.name);
                    return Err(Fail::usage(format!(
                        "variable {name} (vr {vr}) has the value {x}, which {} cannot represent (a model error)",
                        self.type_name(ty)
                    )));
                }
            }
        }
        for (i, &vr) in vrs.iter().enumerate() {
            let x = value(vr);
            out(
                i,
                if ty == VarType::Float32 {
                    f64::from(x as f32)
                } else {
                    x
                },
            );
        }
        Ok(())
    }

    /// [`Instance::get`] for a model with arrays: every element of an
    /// array, row-major, each variable's after the previous one's.
    fn get_elements(&self, vrs: &[Vr], ty: VarType, out: &mut dyn FnMut(usize, f64)) -> R<()> {
        let mut flat = Vec::with_capacity(vrs.len());
        for &vr in vrs {
            let v = self.lookup(vr, ty)?;
            let start = flat.len();
            if v.is_array() {
                flat.extend_from_slice(self.values.array(vr));
            } else if vr == TIME {
                flat.push(self.time);
            } else {
                flat.push(self.values[vr]);
            }
            if ty.is_integer()
                && let Some(bad) = flat[start..].iter().position(|&x| !ty.holds(x))
            {
                let element = if v.is_array() {
                    format!(" element {}", bad + 1)
                } else {
                    String::new()
                };
                return Err(Fail::usage(format!(
                    "variable {}{element} (vr {vr}) has the value {}, which {} cannot represent (a model error)",
                    v.name,
                    flat[start + bad],
                    self.type_name(ty)
                )));
            }
        }
        for (i, x) in flat.into_iter().enumerate() {
            out(
                i,
                if ty == VarType::Float32 {
                    f64::from(x as f32)
                } else {
                    x
                },
            );
        }
        Ok(())
    }

    /// The number of values `fmi3Get<Type>` / `fmi3Set<Type>` exchange for
    /// `vrs`: one per scalar, the current size of each array (its
    /// structural parameters' current values). Unknown value references
    /// count 1 (they are refused by the call itself).
    pub fn value_count(&self, vrs: &[Vr]) -> usize {
        if !self.has_arrays {
            return vrs.len();
        }
        vrs.iter()
            .map(|&vr| match self.spec.variable(vr) {
                Some(v) if v.is_array() => self.values.array(vr).len(),
                _ => 1,
            })
            .sum()
    }

    /// Checks the `nValues` of an FMI 3 getter or setter: it must be
    /// [`Instance::value_count`] (FMI 3.0: the values of all variables,
    /// arrays serialized row-major, so the sum of their sizes), else the
    /// call is refused with a message giving the expected and the given
    /// count (as the Reference FMUs: `Expected nValues = 3 but was 4`).
    pub fn check_value_count(&self, vrs: &[Vr], n: usize) -> R<()> {
        if !self.has_arrays {
            return if n == vrs.len() {
                Ok(())
            } else {
                Err(Fail::usage(format!(
                    "nValues ({n}) differs from nValueReferences ({}); all variables are scalars",
                    vrs.len()
                )))
            };
        }
        let expected = self.value_count(vrs);
        if n == expected {
            return Ok(());
        }
        let mut parts = Vec::new();
        let mut scalars = 0usize;
        for &vr in vrs {
            match self.spec.variable(vr) {
                Some(v) if v.is_array() => {
                    let shape = self.spec.shape(v, &self.values);
                    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
                    parts.push(format!(
                        "{}[{}]: {}",
                        v.name,
                        dims.join(","),
                        self.values.array(vr).len()
                    ));
                }
                _ => scalars += 1,
            }
        }
        if scalars > 0 {
            parts.push(format!(
                "{scalars} scalar{}: {scalars}",
                if scalars == 1 { "" } else { "s" }
            ));
        }
        Err(Fail::usage(format!(
            "Expected nValues = {expected} but was {n}: nValues must be the sum of the current sizes \
             of the variables ({})",
            parts.join(", ")
        )))
    }

    /// Checks that every `vr` is a variable of type `ty` that can be read
    /// in the current state: in Configuration Mode structural parameters
    /// only (an illegal call sequence for any other variable).
    #[inline]
    fn check_readable(&self, vrs: &[Vr], ty: VarType) -> R<()> {
        for &vr in vrs {
            let v = self.lookup(vr, ty)?;
            if self.mode == Mode::Configuration && v.causality != Causality::StructuralParameter {
                return Err(unreadable_in_configuration(v));
            }
            self.clocked_access(v, false)?;
            self.scheduled_get_allowed(v)?;
        }
        Ok(())
    }

    /// Reads `String` values (`fmi2GetString` / `fmi3GetString`), with the
    /// checks of [`Instance::get`]: `out(i, value)` for each `vrs[i]`.
    pub fn get_strings(&mut self, vrs: &[Vr], out: &mut dyn FnMut(usize, &str)) -> R<()> {
        self.check_readable(vrs, VarType::String)?;
        self.refresh()?;
        for (i, &vr) in vrs.iter().enumerate() {
            out(i, self.values.str(vr));
        }
        Ok(())
    }

    /// Reads `String` values as C strings for the C getters: the pointers
    /// stay valid until the next call of this function on the instance
    /// (longer than FMI 2.0 and FMI 3.0 promise: until the next call of
    /// any function of the instance). A NUL inside a value (only a model
    /// can make one) becomes a space.
    pub fn get_c_strings(&mut self, vrs: &[Vr], out: &mut [*const std::ffi::c_char]) -> R<()> {
        let mut held = std::mem::take(&mut self.c_strings);
        held.clear();
        self.get_strings(vrs, &mut |_, s| {
            held.push(CString::new(s.replace('\0', " ")).unwrap_or_default());
        })?;
        for (slot, c) in out.iter_mut().zip(&held) {
            *slot = c.as_ptr();
        }
        self.c_strings = held;
        Ok(())
    }

    /// Checks that every `vr` is a variable of type `ty` that can be set
    /// in the current state ([`settable_in`]), else
    /// `Illegal call sequence: ...` naming the variable and the rule.
    #[inline]
    pub fn check_settable(&self, vrs: &[Vr], ty: VarType) -> R<()> {
        for &vr in vrs {
            let v = self.lookup(vr, ty)?;
            if let Err(rule) = self.settable(v) {
                return Err(self.unsettable(v, rule));
            }
            self.clocked_access(v, true)?;
            self.scheduled_set(v);
        }
        Ok(())
    }

    /// The error of [`Instance::check_settable`] (out of the calls' way).
    #[cold]
    #[inline(never)]
    fn unsettable(&self, v: &crate::model::Variable, rule: &str) -> Fail {
        let initial = v
            .effective_initial()
            .map_or(String::new(), |i| format!(", initial {}", i.as_str()));
        Fail::sequence(format!(
            "{} {} (vr {}, variability {}{initial}) cannot be set in state {}: {rule}",
            v.causality.as_str(),
            v.name,
            v.vr,
            v.variability.as_str(),
            self.mode.name(self.version)
        ))
    }

    /// Writes values of one type (all-or-nothing). Booleans are stored as
    /// 0.0 / 1.0 (any non-zero value is true); `Float32` values are rounded
    /// to `f32` (a finite value beyond the `f32` range is refused); integer
    /// values must be whole and within the type's range
    /// ([`VarType::holds`]), else the call is refused naming the variable.
    /// `String` values are written with [`Instance::set_strings`].
    pub fn set(&mut self, vrs: &[Vr], ty: VarType, vals: &[f64]) -> R<()> {
        if ty == VarType::String {
            return Err(Fail::usage(
                "String values are not numbers (Instance::set_strings writes them)",
            ));
        }
        self.check_settable(vrs, ty)?;
        if self.has_arrays {
            return self.set_elements(vrs, ty, vals);
        }
        // All-or-nothing: every value is checked before any is written
        // (`stored_value` is a pure function of its arguments, so the
        // write below recomputes what was checked; no allocation per call).
        for (&vr, &x) in vrs.iter().zip(vals) {
            self.stored_value(ty, vr, x)?;
        }
        // A tunable parameter set at a communication point: the model is
        // rebuilt from the new values (refused, changing nothing, if they
        // are invalid).
        if self.tunes_model()
            && vrs.iter().any(|&vr| {
                self.spec.variable(vr).is_some_and(|v| {
                    v.causality == Causality::Parameter && v.variability == Variability::Tunable
                })
            })
        {
            let mut trial = self.values.clone();
            for (&vr, &x) in vrs.iter().zip(vals) {
                trial[vr] = self.stored_value(ty, vr, x)?;
            }
            self.model = Some((self.spec.factory)(&trial, &self.name).map_err(Fail::usage)?);
        }
        for (&vr, &x) in vrs.iter().zip(vals) {
            let x = self.stored_value(ty, vr, x)?;
            if let Some(v) = self.spec.variable(vr)
                && v.causality == Causality::Input
                && self.inputs.set_value(vr, x)
            {
                self.log(
                    Status::Ok,
                    &format!(
                        "input {}: value set, its derivatives are reset to 0",
                        v.name
                    ),
                );
            }
            self.values[vr] = x;
        }
        self.dirty = true;
        Ok(())
    }

    /// The value stored for `x` set on `vr` of type `ty`: Booleans 0.0 /
    /// 1.0, `Float32` rounded (a finite value beyond its range refused),
    /// integers whole and in range (else refused).
    #[inline]
    fn stored_value(&self, ty: VarType, vr: Vr, x: f64) -> R<f64> {
        if ty == VarType::Real {
            return Ok(x);
        }
        self.stored_typed_value(ty, vr, x)
    }

    /// [`Instance::stored_value`] of a type other than `Real`.
    fn stored_typed_value(&self, ty: VarType, vr: Vr, x: f64) -> R<f64> {
        let name = || self.spec.variable(vr).map_or("?", |v| v.name);
        Ok(match ty {
            VarType::Boolean => crate::model::bool_value(x != 0.0),
            VarType::Float32 => {
                let r = f64::from(x as f32);
                if x.is_finite() && !r.is_finite() {
                    return Err(Fail::usage(format!(
                        "value {x:?} of {} (vr {vr}) is outside the range of Float32",
                        name()
                    )));
                }
                r
            }
            ty if ty.is_integer() && !ty.holds(x) => {
                let (lo, hi) = ty.bounds().unwrap_or((0.0, 0.0));
                return Err(Fail::usage(format!(
                    "value {x} of {} (vr {vr}) is not a whole number in the range of {} ({} to {})",
                    name(),
                    self.type_name(ty),
                    lo as i128,
                    hi as i128
                )));
            }
            _ => x,
        })
    }

    /// [`Instance::set`] for a model with arrays (all-or-nothing): `vals`
    /// holds every element of each array, row-major, each variable's after
    /// the previous one's ([`Instance::check_value_count`]). Setting a
    /// structural parameter that sizes arrays (in Configuration Mode)
    /// resizes them at once: an element whose multi-index exists in the old
    /// and the new shape keeps its value, the others take their start
    /// values ([`resized`], as the Reference FMUs); a value outside the
    /// parameter's declared `min` / `max`, or one that would make an array
    /// larger than [`MAX_ARRAY_ELEMENTS`], is refused.
    fn set_elements(&mut self, vrs: &[Vr], ty: VarType, vals: &[f64]) -> R<()> {
        self.check_value_count(vrs, vals.len())?;
        let mut trial = self.values.clone();
        let mut structural = Vec::new();
        let mut inputs = Vec::new();
        let mut k = 0;
        for &vr in vrs {
            let v = self.lookup(vr, ty)?;
            if v.is_array() {
                let len = trial.array(vr).len();
                let mut elements = Vec::with_capacity(len);
                for &x in &vals[k..k + len] {
                    elements.push(self.stored_value(ty, vr, x)?);
                }
                trial.array_mut(vr).copy_from_slice(&elements);
                k += len;
            } else {
                let x = self.stored_value(ty, vr, vals[k])?;
                k += 1;
                trial[vr] = x;
                if v.causality == Causality::StructuralParameter {
                    structural.push(v);
                }
                if v.causality == Causality::Input {
                    inputs.push((v, x));
                }
            }
        }
        if !structural.is_empty() {
            self.resize_arrays(&structural, &mut trial)?;
        }
        // A tunable parameter set at a communication point: the model is
        // rebuilt from the new values (refused, changing nothing, if they
        // are invalid).
        if self.tunes_model()
            && vrs.iter().any(|&vr| {
                self.spec.variable(vr).is_some_and(|v| {
                    v.causality == Causality::Parameter && v.variability == Variability::Tunable
                })
            })
        {
            self.model = Some((self.spec.factory)(&trial, &self.name).map_err(Fail::usage)?);
        }
        for (v, x) in inputs {
            if self.inputs.set_value(v.vr, x) {
                self.log(
                    Status::Ok,
                    &format!(
                        "input {}: value set, its derivatives are reset to 0",
                        v.name
                    ),
                );
            }
        }
        self.values = trial;
        self.dirty = true;
        Ok(())
    }

    /// Resizes, in `trial`, the arrays sized by the structural parameters
    /// `changed` from their shapes in the current values to those in
    /// `trial`, each array once (see [`Instance::set_elements`]).
    fn resize_arrays(&self, changed: &[&Variable], trial: &mut Values) -> R<()> {
        for p in changed {
            let mut sized = self.spec.sized_by(p.vr).peekable();
            if sized.peek().is_none() {
                continue;
            }
            let x = trial[p.vr];
            let bound = match (p.min, p.max) {
                (Some(lo), _) if x < lo => Some(("below its min", lo)),
                (_, Some(hi)) if x > hi => Some(("above its max", hi)),
                _ => None,
            };
            if let Some((what, b)) = bound {
                let names: Vec<&str> = sized.map(|a| a.name).collect();
                return Err(Fail::usage(format!(
                    "value {x} of {} (vr {}) is {what} {b} ({} sizes the arrays {})",
                    p.name,
                    p.vr,
                    p.name,
                    names.join(", ")
                )));
            }
        }
        for a in self.spec.variables.iter().filter(|a| {
            changed
                .iter()
                .any(|p| a.dimensions.contains(&Dimension::Structural(p.vr)))
        }) {
            let old_shape = self.spec.shape(a, &self.values);
            let new_shape = self.spec.shape(a, trial);
            if old_shape == new_shape {
                continue;
            }
            if new_shape
                .iter()
                .try_fold(1usize, |n, &d| n.checked_mul(d))
                .is_none_or(|n| n > MAX_ARRAY_ELEMENTS)
            {
                let dims: Vec<String> = new_shape.iter().map(usize::to_string).collect();
                return Err(Fail::usage(format!(
                    "the structural parameters would make array {}[{}] larger than {MAX_ARRAY_ELEMENTS} elements",
                    a.name,
                    dims.join(",")
                )));
            }
            let start = a.array_start;
            let elements = resized(self.values.array(a.vr), &old_shape, &new_shape, &|i| {
                start.map_or(0.0, |s| s.at(i))
            });
            trial.set_array(a.vr, elements);
        }
        Ok(())
    }

    /// Whether the arrays of `values` have the sizes their shapes in
    /// `values` give (a restored or deserialized FMU state).
    fn arrays_fit(&self, values: &Values) -> bool {
        if !self.has_arrays {
            return values.arrays().is_empty();
        }
        values.arrays().len() == self.spec.variables.len()
            && self.spec.variables.iter().all(|v| {
                let len = values.array(v.vr).len();
                if v.is_array() {
                    len == element_count(&self.spec.shape(v, values))
                } else {
                    len == 0
                }
            })
    }

    /// Writes integer values given exactly (the FMI 3 integer setters):
    /// refused, naming the variable, if a value is outside the type's range
    /// or is no `f64` (an `Int64` / `UInt64` beyond 2^53 in magnitude that
    /// a double cannot represent: the kit stores values as `f64` and rounds
    /// none), else as [`Instance::set`].
    pub fn set_integers(&mut self, vrs: &[Vr], ty: VarType, vals: &[i128]) -> R<()> {
        self.check_settable(vrs, ty)?;
        let mut xs = Vec::with_capacity(vals.len());
        for (&vr, &n) in vrs.iter().zip(vals) {
            let x = n as f64;
            if x as i128 != n {
                let name = self.spec.variable(vr).map_or("?", |v| v.name);
                let (below, above) = if (x as i128) < n {
                    (x, x.next_up())
                } else {
                    (x.next_down(), x)
                };
                return Err(Fail::usage(format!(
                    "value {n} of {name} (vr {vr}) cannot be stored exactly: this FMU keeps values as \
                     64-bit floats, which hold every integer up to 2^53 in magnitude and beyond that \
                     only some (the nearest are {} and {})",
                    below as i128, above as i128
                )));
            }
            xs.push(x);
        }
        self.set(vrs, ty, &xs)
    }

    /// Writes `String` values (`fmi2SetString` / `fmi3SetString`;
    /// all-or-nothing), with the checks of [`Instance::set`]: which
    /// variables may be set in which state ([`settable_in`]); a tunable
    /// String parameter set in stepComplete / Step Mode rebuilds the model
    /// (refused if the factory refuses the new values). A String input
    /// holds its value until set again (no derivatives).
    pub fn set_strings(&mut self, vrs: &[Vr], vals: &[&str]) -> R<()> {
        self.check_settable(vrs, VarType::String)?;
        let retuned = if self.tunes_model()
            && vrs.iter().any(|&vr| {
                self.spec
                    .variable(vr)
                    .is_some_and(|v| v.variability == Variability::Tunable)
            }) {
            let mut trial = self.values.clone();
            for (&vr, s) in vrs.iter().zip(vals) {
                trial.set_str(vr, s);
            }
            Some((self.spec.factory)(&trial, &self.name).map_err(Fail::usage)?)
        } else {
            None
        };
        if retuned.is_some() {
            self.model = retuned;
        }
        for (&vr, s) in vrs.iter().zip(vals) {
            self.values.set_str(vr, s);
        }
        self.dirty = true;
        Ok(())
    }

    /// `fmi2SetRealInputDerivatives`.
    pub fn set_input_derivatives(&mut self, vrs: &[Vr], orders: &[i32], vals: &[f64]) -> R<()> {
        self.require_cap(Cap::Interpolate)?;
        for (&vr, &order) in vrs.iter().zip(orders) {
            let v = self.lookup_float(vr, "input derivatives", false)?;
            if v.causality != Causality::Input {
                return Err(Fail::usage(format!("variable {} is not an input", v.name)));
            }
            if order < 1 || order as usize > MAX_INPUT_ORDER {
                return Err(Fail::usage(format!(
                    "input derivative order {order} of {} is outside 1..={MAX_INPUT_ORDER}",
                    v.name
                )));
            }
        }
        for ((&vr, &order), &x) in vrs.iter().zip(orders).zip(vals) {
            self.inputs.set_derivative(vr, order as usize, x);
        }
        self.dirty = true;
        Ok(())
    }

    /// `fmi2GetRealOutputDerivatives` / `fmi3GetOutputDerivatives`.
    pub fn get_output_derivatives(&mut self, vrs: &[Vr], orders: &[i32], out: &mut [f64]) -> R<()> {
        self.require_cap(Cap::OutputDerivatives)?;
        let max = self.caps.max_output_derivative_order;
        for (&vr, &order) in vrs.iter().zip(orders) {
            let v = self.lookup_float(vr, "output derivatives", true)?;
            if v.causality != Causality::Output {
                return Err(Fail::usage(format!("variable {} is not an output", v.name)));
            }
            self.clocked_access(v, false)?;
            if order < 1 || order as u32 > max {
                return Err(Fail::usage(format!(
                    "derivative order {order} of {} is outside 1..={max} (maxOutputDerivativeOrder)",
                    v.name
                )));
            }
        }
        self.refresh()?;
        let model = self
            .model
            .as_ref()
            .ok_or_else(|| Fail::usage("the model is not initialized"))?;
        for (i, (&vr, &order)) in vrs.iter().zip(orders).enumerate() {
            let d = model
                .output_derivative(vr, order as u32, self.time, &self.values, &self.inputs)
                .ok_or_else(|| {
                    Fail::usage(format!(
                        "derivative of order {order} of vr {vr} is not available"
                    ))
                })?;
            if let Some(slot) = out.get_mut(i) {
                *slot = d;
            }
        }
        Ok(())
    }

    /// The partial derivative matrix d(unknowns)/d(knowns), row-major.
    /// Co-Simulation: d(output)/d(input). Model Exchange: unknowns are
    /// outputs or state derivatives, knowns inputs or continuous states
    /// (FMI 2.0 sec. 3.2.1, FMI 3.0 sec. 3.2.1).
    fn jacobian(&mut self, unknowns: &[Vr], knowns: &[Vr]) -> R<Vec<f64>> {
        self.require_cap(Cap::Directional)?;
        let me = match self.interface {
            Interface::ModelExchange => self.spec.model_exchange.as_ref(),
            Interface::CoSimulation => None,
        };
        let (unknown_rule, known_rule) = if me.is_some() {
            (
                "is neither an output nor a state derivative",
                "is neither an input nor a continuous state",
            )
        } else {
            (
                "is not an output (only d(output)/d(input) is provided)",
                "is not an input (only d(output)/d(input) is provided)",
            )
        };
        for &u in unknowns {
            let v = self.lookup_float(u, "directional derivatives", true)?;
            let ok = v.causality == Causality::Output
                || me.is_some_and(|me| me.derivative_of(u).is_some());
            if !ok {
                return Err(Fail::usage(format!("unknown {} {unknown_rule}", v.name)));
            }
        }
        for &k in knowns {
            let v = self.lookup_float(k, "directional derivatives", true)?;
            let ok =
                v.causality == Causality::Input || me.is_some_and(|me| me.state_of(k).is_some());
            if !ok {
                return Err(Fail::usage(format!("known {} {known_rule}", v.name)));
            }
        }
        self.refresh()?;
        let (t, spec, interface) = (self.time, self.spec, self.interface);
        match &mut self.model {
            Some(model) => Ok(jacobian_of(
                spec,
                interface,
                model.as_mut(),
                (t, &self.values, &self.inputs),
                unknowns,
                knowns,
            )),
            None => {
                // During initialization: evaluate with a model built from the
                // current parameters.
                let mut model = self.build_model().map_err(Fail::usage)?;
                let mut values = self.values.clone();
                model.init(&mut values);
                evaluate(model.as_mut(), t, &mut values, &self.inputs);
                Ok(jacobian_of(
                    spec,
                    interface,
                    model.as_mut(),
                    (t, &values, &self.inputs),
                    unknowns,
                    knowns,
                ))
            }
        }
    }

    /// Forward mode: `out[i] = sum_j d(unknown_i)/d(known_j) * seed[j]`.
    pub fn directional_derivative(
        &mut self,
        unknowns: &[Vr],
        knowns: &[Vr],
        seed: &[f64],
        out: &mut [f64],
    ) -> R<()> {
        let jac = self.jacobian(unknowns, knowns)?;
        let nk = knowns.len();
        for (i, slot) in out.iter_mut().enumerate().take(unknowns.len()) {
            *slot = (0..nk).map(|j| jac[i * nk + j] * seed[j]).sum();
        }
        Ok(())
    }

    /// Adjoint mode: `out[j] = sum_i seed[i] * d(unknown_i)/d(known_j)`.
    pub fn adjoint_derivative(
        &mut self,
        unknowns: &[Vr],
        knowns: &[Vr],
        seed: &[f64],
        out: &mut [f64],
    ) -> R<()> {
        let jac = self.jacobian(unknowns, knowns)?;
        let nk = knowns.len();
        for (j, slot) in out.iter_mut().enumerate().take(nk) {
            *slot = (0..unknowns.len()).map(|i| seed[i] * jac[i * nk + j]).sum();
        }
        Ok(())
    }

    /// `fmi2DoStep` / `fmi3DoStep` with inputs held or given as
    /// polynomials, `noSetFMUStatePriorToCurrentPoint = false`. Returns the
    /// status (Discard: the step ended early).
    pub fn do_step(&mut self, t: f64, h: f64) -> R<Status> {
        self.step(t, h, false, None)
    }

    /// `fmi3DoStep` with intermediate update: `source` gives the inputs at
    /// internal times (see [`crate::input`]). Without a source, or in a
    /// build that does not provide intermediate update (the source is then
    /// never used), the same as [`Instance::do_step`]. After a step that
    /// used the source, each updatable input holds the last value set
    /// (the kit asks for the values at the end of the step, see
    /// [`Inputs::finish_intermediate_update`]).
    pub fn do_step_with(
        &mut self,
        t: f64,
        h: f64,
        source: Option<Box<dyn InputSource>>,
    ) -> R<Status> {
        self.step(t, h, false, source)
    }

    /// The name of this version's step function.
    fn do_step_name(&self) -> &'static str {
        match self.version {
            FmiVersion::Fmi2 => "fmi2DoStep",
            FmiVersion::Fmi3 => "fmi3DoStep",
        }
    }

    /// One step, as [`Instance::do_step_with`], with the importer's
    /// `noSetFMUStatePriorToCurrentPoint`. Refused (Illegal call sequence,
    /// nothing changes) if the model asked to terminate, if `t` is not the
    /// end of the last step (relative tolerance 1e-9: importers compute
    /// communication points from integer ticks, which may differ from
    /// `t + h` by an ulp), or if `t + h` is after the stop time the
    /// importer defined (same tolerance).
    ///
    /// A [`StepError::Terminate`] of the model ends the step at `reached`
    /// (`t + h` if within 1e-9 relative) and sets
    /// [`Instance::terminate_requested`]; the status: FMI 2 `Discard`
    /// (`fmi2GetBooleanStatus(fmi2Terminated)` is then true,
    /// `fmi2LastSuccessfulTime` = `reached`); FMI 3 `OK` if the step was
    /// completed, `OK` with [`Instance::early_return`] if `reached < t + h`
    /// and the importer allowed early return, else `Discard`.
    pub fn step(
        &mut self,
        t: f64,
        h: f64,
        no_set_prior: bool,
        source: Option<Box<dyn InputSource>>,
    ) -> R<Status> {
        if self.scheduled.is_some() {
            return Err(Fail::sequence(format!(
                "{} called on a Scheduled Execution instance (no steps: fmi3ActivateModelPartition \
                 runs the model partitions, FMI 3.0 sec. 5)",
                self.do_step_name()
            )));
        }
        if self.cs_event.pending {
            return Err(self.pending_event_refusal());
        }
        let beyond_stop = self
            .stop_time
            .is_some_and(|stop| t + h > stop + tolerance(stop));
        if self.terminate_requested
            || !t.is_finite()
            || !h.is_finite()
            || h <= 0.0
            || (t - self.time).abs() > tolerance(self.time)
            || beyond_stop
        {
            return Err(self.step_refused(t, h));
        }
        if !self.caps.variable_step {
            match self.fixed_step {
                Some(h0) if (h - h0).abs() > 1e-9 * h0 => {
                    return Err(Fail::usage(format!(
                        "capability canHandleVariableCommunicationStepSize is disabled in this build: \
                         step size {h} differs from the first step size {h0}"
                    )));
                }
                Some(_) => {}
                None => self.fixed_step = Some(h),
            }
        }
        let Some(mut model) = self.model.take() else {
            return Err(Fail::usage("the model is not initialized"));
        };
        if no_set_prior {
            self.no_set_prior_from = Some(self.no_set_prior_from.map_or(t, |p| p.max(t)));
        }
        self.early_return = false;
        self.time = t;
        self.inputs.set_t0(t);
        self.values[TIME] = t;
        let live = match source {
            Some(src) if self.takes_intermediate_inputs() && !self.steps_through_events() => Some(
                self.inputs
                    .with_source(src, h, self.intermediate_update_mask()),
            ),
            _ => None,
        };
        // The reproduced exporter bug: after the first step of the run, a
        // step without the promise leaves the states as they are.
        let frozen = self.caps.quirk == Some(Quirk::FreezesWithoutNoSetPrior)
            && !no_set_prior
            && (t - self.start_time).abs() > tolerance(self.start_time);
        let end = t + h;
        let result = if frozen {
            Ok(end)
        } else if self.steps_through_events() {
            self.advance_through_events(model.as_mut(), t, end)
        } else {
            let log = model_log(&self.sink);
            let u = live.as_ref().unwrap_or(&self.inputs);
            model.do_step(t, h, &mut self.values, u, &log).map(|()| end)
        };
        let (status, reached) = match result {
            Ok(reached) if reached < end => {
                // Stopped at an event the importer handles (FMI 3, early
                // return allowed).
                self.early_return = true;
                (Status::Ok, reached)
            }
            Ok(_) => (Status::Ok, end),
            Err(StepError::Terminate { reached, message }) => {
                let reached = if !reached.is_finite() {
                    t
                } else if (reached - end).abs() <= tolerance(end) {
                    end
                } else {
                    reached.clamp(t, end)
                };
                self.terminate_requested = true;
                let status = match self.version {
                    FmiVersion::Fmi2 => Status::Discard,
                    FmiVersion::Fmi3 if reached == end => Status::Ok,
                    FmiVersion::Fmi3 if self.early_return_allowed => {
                        self.early_return = true;
                        Status::Ok
                    }
                    FmiVersion::Fmi3 => Status::Discard,
                };
                // A termination request is no failure: its message goes
                // out only with logging on (an FMI 2 Discard message would
                // otherwise reach the logger even with logging off).
                let level = if self.sink.logging_on {
                    status
                } else {
                    Status::Ok
                };
                self.log(level, &message);
                (status, reached)
            }
            Err(StepError::Discard { reached, message }) => {
                self.log(Status::Discard, &message);
                let reached = if reached.is_finite() {
                    reached.clamp(t, t + h)
                } else {
                    t
                };
                (Status::Discard, reached)
            }
            Err(StepError::Error(message)) => {
                self.model = Some(model);
                self.last_step_status = Status::Error;
                return Err(Fail::failure(message));
            }
            Err(StepError::Fatal(message)) => {
                self.model = Some(model);
                self.last_step_status = Status::Fatal;
                return Err(Fail {
                    status: Status::Fatal,
                    message,
                    poison: true,
                });
            }
        };
        self.time = reached;
        if let Some(live) = &live {
            for (vr, x) in live.finish_intermediate_update(reached) {
                self.inputs.set_value(vr, x);
            }
        }
        self.inputs.shift_to(reached);
        for v in self.spec.with_causality(Causality::Input) {
            self.values[v.vr] = self.inputs.value(v.vr);
        }
        self.values[TIME] = reached;
        evaluate(model.as_mut(), reached, &mut self.values, &self.inputs);
        self.model = Some(model);
        self.dirty = false;
        self.last_step_status = status;
        self.last_successful_time = reached;
        if status == Status::Discard {
            self.mode = Mode::StepFailed;
        }
        Ok(status)
    }

    /// Why [`Instance::step`] refuses a step from `t` by `h` (out of the
    /// calls' way: the step checks only that it must).
    #[cold]
    #[inline(never)]
    fn step_refused(&self, t: f64, h: f64) -> Fail {
        if self.terminate_requested {
            return Fail::sequence(format!(
                "the FMU requested termination at t = {} (terminateSimulation / fmi2Terminated): no further steps (only reset or an FMU state from before)",
                self.last_successful_time
            ));
        }
        if !t.is_finite() || !h.is_finite() || h <= 0.0 {
            return Fail::usage(format!(
                "communication point {t} and step size {h} must be finite, step size > 0"
            ));
        }
        if (t - self.time).abs() > tolerance(self.time) {
            return Fail::sequence(format!(
                "currentCommunicationPoint {t} differs from the FMU time {} (the end of the last step, or the start time)",
                self.time
            ));
        }
        if let Some(stop) = self.stop_time
            && t + h > stop + tolerance(stop)
        {
            return Fail::sequence(format!(
                "the step from {t} to {} ends after the stop time {stop} (stopTimeDefined = true in {})",
                t + h,
                match self.version {
                    FmiVersion::Fmi2 => "fmi2SetupExperiment",
                    FmiVersion::Fmi3 => "fmi3EnterInitializationMode",
                }
            ));
        }
        // (Not reached: these are the checks `step` made.)
        Fail::usage(format!("the step from {t} by {h} is refused"))
    }

    /// Status of the last `doStep` (FMI 2 `fmi2DoStepStatus`).
    pub fn last_step_status(&self) -> Status {
        self.last_step_status
    }

    /// End of the last successful (part of a) step.
    pub fn last_successful_time(&self) -> f64 {
        self.last_successful_time
    }

    fn snapshot(&mut self) -> R<Snapshot> {
        let model = match self.model.as_mut().and_then(|m| m.save_state()) {
            Some(saved) => Some(saved.map_err(Fail::failure)?),
            None => None,
        };
        Ok(Snapshot {
            model,
            mode: self.mode,
            time: self.time,
            start_time: self.start_time,
            values: self.values.0.clone(),
            strings: self.values.strings().to_vec(),
            arrays: self.values.arrays().to_vec(),
            inputs: self.inputs.raw().to_vec(),
            last_step_status: self.last_step_status,
            last_successful_time: self.last_successful_time,
            fixed_step: self.fixed_step,
            stop_time: self.stop_time,
            experiment_set: self.experiment_set,
            terminate_requested: self.terminate_requested,
            me: self.me,
            cs_event: self.cs_event,
            clocks: self.clocks.clone(),
        })
    }

    /// Saves the FMU state; overwrites `existing` if given.
    pub fn get_state(&mut self, existing: Option<usize>) -> R<usize> {
        self.require_cap(Cap::State)?;
        if let Some(id) = existing {
            self.state(id)?;
        }
        let snap = self.snapshot()?;
        match existing {
            Some(id) => match self.states.get_mut(&id) {
                Some(slot) => {
                    *slot = snap;
                    Ok(id)
                }
                None => Err(Fail::usage(format!(
                    "FMU state {id:#x} was not created by this instance (or was freed)"
                ))),
            },
            None => {
                let id = NEXT_STATE_ID.fetch_add(16, Ordering::Relaxed);
                self.states.insert(id, snap);
                Ok(id)
            }
        }
    }

    fn state(&self, id: usize) -> R<&Snapshot> {
        self.states.get(&id).ok_or_else(|| {
            Fail::usage(format!(
                "FMU state {id:#x} was not created by this instance (or was freed)"
            ))
        })
    }

    /// Restores a saved FMU state (values, inputs, time and state-machine
    /// state). Refused (Illegal call sequence) if a step was started with
    /// `noSetFMUStatePriorToCurrentPoint = true` at a time after the
    /// state's time in this run (FMI 2.0 sec. 4.2.2, FMI 3.0 sec. 4.2.1:
    /// the importer promised not to go back before that point).
    pub fn set_state(&mut self, id: usize) -> R<()> {
        self.require_cap(Cap::State)?;
        let snap = self.state(id)?.clone();
        if let Some(from) = self.no_set_prior_from
            && snap.time < from - tolerance(from)
        {
            return Err(Fail::sequence(format!(
                "the FMU state to restore is at t = {}, before t = {from}, where {} was called with \
                 noSetFMUStatePriorToCurrentPoint = true (noSetFMUStatePriorToCurrentPoint was true at t = {from})",
                snap.time,
                self.do_step_name()
            )));
        }
        self.restore(snap)
    }

    fn restore(&mut self, snap: Snapshot) -> R<()> {
        if snap.values.len() != self.values.len() || snap.inputs.len() != self.values.len() {
            return Err(Fail::usage("FMU state does not fit this model"));
        }
        let mut values = Values::from_numbers(snap.values);
        values.set_strings(snap.strings);
        values.set_arrays(snap.arrays);
        if !self.arrays_fit(&values) {
            return Err(Fail::usage(
                "FMU state does not fit this model (array sizes)",
            ));
        }
        self.mode = snap.mode;
        self.time = snap.time;
        self.start_time = snap.start_time;
        self.values = values;
        self.inputs = Inputs::from_raw(snap.time, snap.inputs);
        self.last_step_status = snap.last_step_status;
        self.last_successful_time = snap.last_successful_time;
        self.fixed_step = snap.fixed_step;
        self.stop_time = snap.stop_time;
        self.experiment_set = snap.experiment_set;
        self.terminate_requested = snap.terminate_requested;
        self.me = snap.me;
        self.cs_event = snap.cs_event;
        self.clocks = snap.clocks;
        self.early_return = false;
        self.dirty = true;
        // A model with a state of its own keeps its instance and restores
        // it; the others are rebuilt from the restored parameters.
        let kept = match &snap.model {
            Some(_) => self.model.take(),
            None => None,
        };
        self.model = None;
        if matches!(
            self.mode,
            Mode::StepComplete
                | Mode::StepFailed
                | Mode::Terminated
                | Mode::Error
                | Mode::EventMode
                | Mode::ContinuousTimeMode
                | Mode::ClockActivation
        ) {
            // The parameters are part of the state: rebuild the model from them.
            let built = match kept {
                Some(m) => Ok(m),
                None => self.build_model(),
            };
            let mut model = match built {
                Ok(m) => m,
                Err(e) => {
                    self.mode = Mode::Error;
                    return Err(Fail::failure(format!(
                        "restored state has invalid parameters: {e}"
                    )));
                }
            };
            if let Some(state) = &snap.model
                && let Err(e) = model.restore_state(state)
            {
                self.mode = Mode::Error;
                return Err(Fail::failure(format!("restoring the model's state: {e}")));
            }
            self.model = Some(model);
        }
        Ok(())
    }

    /// Frees a saved FMU state.
    pub fn free_state(&mut self, id: usize) -> R<()> {
        self.require_cap(Cap::State)?;
        self.states.remove(&id).map(|_| ()).ok_or_else(|| {
            Fail::usage(format!(
                "FMU state {id:#x} was not created by this instance"
            ))
        })
    }

    /// Size of the serialized state.
    pub fn serialized_size(&self, id: usize) -> R<usize> {
        self.require_cap(Cap::Serialize)?;
        Ok(self.serialize_snapshot(self.serializable(id)?).len())
    }

    /// Saved state `id`, refused when the model keeps a state of its own
    /// (it has no bytes).
    fn serializable(&self, id: usize) -> R<&Snapshot> {
        let s = self.state(id)?;
        if s.model.is_some() {
            return Err(Fail::usage(
                "this FMU state holds the model's own state, which cannot be serialized",
            ));
        }
        Ok(s)
    }

    /// Serializes a saved state into `buf` (which must have exactly the size).
    pub fn serialize(&self, id: usize, buf: &mut [u8]) -> R<()> {
        self.require_cap(Cap::Serialize)?;
        let bytes = self.serialize_snapshot(self.serializable(id)?);
        if buf.len() != bytes.len() {
            return Err(Fail::usage(format!(
                "buffer size {} differs from the serialized state size {}",
                buf.len(),
                bytes.len()
            )));
        }
        buf.copy_from_slice(&bytes);
        Ok(())
    }

    /// Deserializes a state; overwrites `existing` if given.
    pub fn deserialize(&mut self, bytes: &[u8], existing: Option<usize>) -> R<usize> {
        self.require_cap(Cap::Serialize)?;
        let snap = self.deserialize_snapshot(bytes).map_err(Fail::usage)?;
        match existing {
            Some(id) => {
                let slot = self.states.get_mut(&id).ok_or_else(|| {
                    Fail::usage(format!(
                        "FMU state {id:#x} was not created by this instance"
                    ))
                })?;
                *slot = snap;
                Ok(id)
            }
            None => {
                let id = NEXT_STATE_ID.fetch_add(16, Ordering::Relaxed);
                self.states.insert(id, snap);
                Ok(id)
            }
        }
    }

    fn serialize_snapshot(&self, s: &Snapshot) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + 40 * s.values.len());
        b.extend_from_slice(SNAPSHOT_MAGIC);
        b.extend_from_slice(&self.token_hash.to_le_bytes());
        b.push(s.mode as u8);
        b.push(s.last_step_status as u8);
        for x in [
            s.time,
            s.start_time,
            s.last_successful_time,
            s.fixed_step.unwrap_or(f64::NAN),
            s.stop_time.unwrap_or(f64::NAN),
        ] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b.push(u8::from(s.experiment_set) | (u8::from(s.terminate_requested) << 1));
        b.extend_from_slice(&(s.values.len() as u32).to_le_bytes());
        for x in &s.values {
            b.extend_from_slice(&x.to_le_bytes());
        }
        for c in &s.inputs {
            for x in c {
                b.extend_from_slice(&x.to_le_bytes());
            }
        }
        // Strings (a model with String variables only): per vr, the
        // length in bytes and the UTF-8 bytes.
        for x in &s.strings {
            b.extend_from_slice(&(x.len() as u32).to_le_bytes());
            b.extend_from_slice(x.as_bytes());
        }
        // Arrays (a model with arrays only): per vr, the number of
        // elements and the elements.
        for a in &s.arrays {
            b.extend_from_slice(&(a.len() as u32).to_le_bytes());
            for x in a {
                b.extend_from_slice(&x.to_le_bytes());
            }
        }
        // Model Exchange instances only: their event and step times.
        if self.interface == Interface::ModelExchange {
            s.me.to_bytes(&mut b);
        } else if self.spec.has_event_equations() {
            // Co-Simulation with events (and Scheduled Execution only): the
            // event iteration and events.
            s.me.to_bytes(&mut b);
            s.cs_event.to_bytes(&mut b);
            s.clocks.to_bytes(&mut b);
        }
        b
    }

    fn deserialize_snapshot(&self, bytes: &[u8]) -> Result<Snapshot, String> {
        let mut r = Reader { b: bytes, pos: 0 };
        if r.take(8)? != SNAPSHOT_MAGIC {
            return Err("not a serialized FMU state of this kit".into());
        }
        if r.u64()? != self.token_hash {
            return Err("serialized FMU state belongs to another model or build".into());
        }
        let mode = Mode::from_u8(r.u8()?).ok_or("corrupt serialized FMU state (mode)")?;
        let last_step_status = match r.u8()? {
            0 => Status::Ok,
            1 => Status::Warning,
            2 => Status::Discard,
            3 => Status::Error,
            4 => Status::Fatal,
            _ => return Err("corrupt serialized FMU state (status)".into()),
        };
        let time = r.f64()?;
        let start_time = r.f64()?;
        let last_successful_time = r.f64()?;
        let fixed = r.f64()?;
        let stop = r.f64()?;
        let flags = r.u8()?;
        if flags > 3 {
            return Err("corrupt serialized FMU state (flags)".into());
        }
        let n = r.u32()? as usize;
        if n != self.values.len() {
            return Err(format!(
                "serialized FMU state has {n} values, the model has {}",
                self.values.len()
            ));
        }
        let values = (0..n).map(|_| r.f64()).collect::<Result<Vec<_>, _>>()?;
        let mut inputs = Vec::with_capacity(n);
        for _ in 0..n {
            let mut c = [0.0; MAX_INPUT_ORDER + 1];
            for x in &mut c {
                *x = r.f64()?;
            }
            inputs.push(c);
        }
        let mut strings = Vec::new();
        if self.spec.has_strings() {
            strings.reserve(n);
            for _ in 0..n {
                let len = r.u32()? as usize;
                let text = std::str::from_utf8(r.take(len)?)
                    .map_err(|_| "corrupt serialized FMU state (a string is not UTF-8)")?;
                strings.push(text.to_string());
            }
        }
        let mut arrays = Vec::new();
        if self.has_arrays {
            arrays.reserve(n);
            for _ in 0..n {
                let len = r.u32()? as usize;
                if len > MAX_ARRAY_ELEMENTS {
                    return Err("corrupt serialized FMU state (array size)".into());
                }
                let a = (0..len).map(|_| r.f64()).collect::<Result<Vec<_>, _>>()?;
                arrays.push(a);
            }
        }
        let me = if self.interface == Interface::ModelExchange || self.spec.has_event_equations() {
            MeState::from_reader(&mut r)?
        } else {
            MeState::default()
        };
        let cs_event =
            if self.interface == Interface::CoSimulation && self.spec.has_event_equations() {
                CsEvents::from_reader(&mut r)?
            } else {
                CsEvents::default()
            };
        let clocks = if self.interface == Interface::CoSimulation && self.spec.has_event_equations()
        {
            self.clocks.read(&mut r)?
        } else {
            self.clocks.clone()
        };
        if !self.mode_fits_interface(mode) {
            return Err(format!(
                "serialized FMU state is in state {}, which an instance of this interface never is \
                 (a Co-Simulation state restored into a Model Exchange instance, or back)",
                mode.name(self.version)
            ));
        }
        if r.pos != bytes.len() {
            return Err("serialized FMU state has trailing bytes".into());
        }
        if self.has_arrays {
            let mut check = Values::from_numbers(values.clone());
            check.set_arrays(arrays.clone());
            if !self.arrays_fit(&check) {
                return Err(
                    "serialized FMU state has arrays of other sizes than its structural parameters give"
                        .into(),
                );
            }
        }
        Ok(Snapshot {
            model: None,
            mode,
            time,
            start_time,
            values,
            strings,
            arrays,
            inputs,
            last_step_status,
            last_successful_time,
            fixed_step: if fixed.is_nan() { None } else { Some(fixed) },
            stop_time: if stop.is_nan() { None } else { Some(stop) },
            experiment_set: flags & 1 != 0,
            terminate_requested: flags & 2 != 0,
            me,
            cs_event,
            clocks,
        })
    }
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len());
        match end {
            Some(e) => {
                let s = &self.b[self.pos..e];
                self.pos = e;
                Ok(s)
            }
            None => Err("serialized FMU state is truncated".into()),
        }
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }
    fn u64(&mut self) -> Result<u64, String> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn f64(&mut self) -> Result<f64, String> {
        Ok(f64::from_bits(self.u64()?))
    }
}
