//! One FMU instance: the state machine, variable access, stepping, FMU
//! states. Safe Rust, shared by the FMI 2 and FMI 3 C layers (which only
//! convert pointers and pick masks).
//!
//! Error policy: a call made in the wrong state or with bad arguments
//! returns `Error` with a log line and changes nothing; a failing model
//! computation (invalid parameters at the end of initialization, a failing
//! step) returns `Error` and puts the instance into the `Error` state, from
//! which only getters, reset, free and FMU-state restore are accepted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::caps::{Capabilities, FmiVersion, token};
use crate::input::{InputSource, Inputs, MAX_INPUT_ORDER};
use crate::model::{Causality, LogLevel, Model, ModelSpec, StepError, TIME, Values, VarType, Vr};

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
        }
    }
}

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
    inputs: Vec<[f64; MAX_INPUT_ORDER + 1]>,
    last_step_status: Status,
    last_successful_time: f64,
    fixed_step: Option<f64>,
}

const SNAPSHOT_MAGIC: &[u8; 8] = b"COSIMFS1";

static NEXT_STATE_ID: AtomicUsize = AtomicUsize::new(0x1000);

/// One FMU instance.
pub struct Instance {
    /// The model.
    pub spec: &'static ModelSpec,
    /// The capabilities of this build.
    pub caps: Capabilities,
    /// FMI version of the interface used.
    pub version: FmiVersion,
    /// Instance name given by the importer.
    pub name: String,
    token_hash: u64,
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
    states: HashMap<usize, Snapshot>,
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

fn tolerance(t: f64) -> f64 {
    1e-9 * t.abs().max(1.0)
}

impl Instance {
    /// A new instance in state `Instantiated`, with start values.
    pub fn new(
        spec: &'static ModelSpec,
        caps: Capabilities,
        version: FmiVersion,
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
            name: name.to_string(),
            token_hash: h.finish(),
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
            states: HashMap::new(),
        };
        inst.reset_values();
        inst
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

    /// Refuses the call unless the instance is in one of the states of `mask`.
    pub fn require_mode(&self, fname: &str, mask: u32) -> R<()> {
        if self.mode.bit() & mask != 0 {
            Ok(())
        } else {
            Err(Fail::usage(format!(
                "{fname}: illegal call in state {}",
                self.mode.name(self.version)
            )))
        }
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
            (Cap::Directional, FmiVersion::Fmi2) => (
                self.caps.directional_derivatives,
                "providesDirectionalDerivative",
            ),
            (Cap::Directional, FmiVersion::Fmi3) => (
                self.caps.directional_derivatives,
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

    /// Sets the start time (`fmi2SetupExperiment`).
    pub fn setup_experiment(&mut self, start_time: f64) -> R<()> {
        if !start_time.is_finite() {
            return Err(Fail::usage(format!(
                "startTime must be finite, got {start_time}"
            )));
        }
        self.start_time = start_time;
        self.time = start_time;
        self.values[TIME] = start_time;
        self.inputs.set_t0(start_time);
        self.last_successful_time = start_time;
        Ok(())
    }

    /// Instantiated -> Initialization.
    pub fn enter_initialization(&mut self) -> R<()> {
        self.mode = Mode::Initialization;
        self.time = self.start_time;
        self.values[TIME] = self.time;
        self.inputs.set_t0(self.time);
        self.dirty = true;
        Ok(())
    }

    fn build_model(&self) -> Result<Box<dyn Model>, String> {
        (self.spec.factory)(&self.values)
    }

    /// Initialization -> StepComplete: validates the parameters, initializes states.
    pub fn exit_initialization(&mut self) -> R<()> {
        let mut model = self.build_model().map_err(Fail::failure)?;
        self.values[TIME] = self.time;
        model.init(&mut self.values);
        model.outputs(self.time, &mut self.values, &self.inputs);
        self.model = Some(model);
        self.dirty = false;
        self.mode = Mode::StepComplete;
        self.last_successful_time = self.time;
        Ok(())
    }

    /// -> Terminated.
    pub fn terminate(&mut self) -> R<()> {
        self.mode = Mode::Terminated;
        Ok(())
    }

    /// -> Instantiated with start values (FMU states stay valid).
    pub fn reset(&mut self) -> R<()> {
        self.mode = Mode::Instantiated;
        self.start_time = self.spec.experiment.start_time;
        self.time = self.start_time;
        self.model = None;
        self.fixed_step = None;
        self.last_step_status = Status::Ok;
        self.last_successful_time = self.time;
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
            Mode::Instantiated => {}
            Mode::Initialization => {
                let mut model = self.build_model().map_err(Fail::usage)?;
                model.init(&mut self.values);
                model.outputs(self.time, &mut self.values, &self.inputs);
            }
            _ => {
                if let Some(model) = &self.model {
                    model.outputs(self.time, &mut self.values, &self.inputs);
                }
            }
        }
        self.dirty = false;
        Ok(())
    }

    fn lookup(&self, vr: Vr, ty: VarType) -> R<&'static crate::model::Variable> {
        let spec: &'static ModelSpec = self.spec;
        let v = spec
            .variable(vr)
            .ok_or_else(|| Fail::usage(format!("unknown value reference {vr}")))?;
        if v.ty != ty {
            return Err(Fail::usage(format!(
                "variable {} (vr {vr}) is of type {}, not {}",
                v.name,
                self.type_name(v.ty),
                self.type_name(ty)
            )));
        }
        Ok(v)
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
    pub fn get(&mut self, vrs: &[Vr], ty: VarType, out: &mut dyn FnMut(usize, f64)) -> R<()> {
        for &vr in vrs {
            self.lookup(vr, ty)?;
        }
        self.refresh()?;
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

    /// Checks that every `vr` is a variable of type `ty` that can be set
    /// now (an input, or a parameter before initialization ends).
    pub fn check_settable(&self, vrs: &[Vr], ty: VarType) -> R<()> {
        for &vr in vrs {
            let v = self.lookup(vr, ty)?;
            match v.causality {
                Causality::Input => {}
                Causality::Parameter => {
                    if !matches!(self.mode, Mode::Instantiated | Mode::Initialization) {
                        return Err(Fail::usage(format!(
                            "parameter {} has variability fixed and cannot be set after initialization",
                            v.name
                        )));
                    }
                }
                c => {
                    return Err(Fail::usage(format!(
                        "variable {} has causality {} and cannot be set",
                        v.name,
                        c.as_str()
                    )));
                }
            }
        }
        Ok(())
    }

    /// Writes values of one type (all-or-nothing). Booleans are stored as
    /// 0.0 / 1.0 (any non-zero value is true); `Float32` values are rounded
    /// to `f32` (a finite value beyond the `f32` range is refused); integer
    /// values must be whole and within the type's range
    /// ([`VarType::holds`]), else the call is refused naming the variable.
    pub fn set(&mut self, vrs: &[Vr], ty: VarType, vals: &[f64]) -> R<()> {
        self.check_settable(vrs, ty)?;
        let mut stored = Vec::with_capacity(vals.len());
        for (&vr, &x) in vrs.iter().zip(vals) {
            let name = || self.spec.variable(vr).map_or("?", |v| v.name);
            let x = match ty {
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
            };
            stored.push(x);
        }
        for (&vr, &x) in vrs.iter().zip(&stored) {
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
    fn jacobian(&mut self, unknowns: &[Vr], knowns: &[Vr]) -> R<Vec<f64>> {
        self.require_cap(Cap::Directional)?;
        for &u in unknowns {
            let v = self.lookup_float(u, "directional derivatives", true)?;
            if v.causality != Causality::Output {
                return Err(Fail::usage(format!(
                    "unknown {} is not an output (only d(output)/d(input) is provided)",
                    v.name
                )));
            }
        }
        for &k in knowns {
            let v = self.lookup_float(k, "directional derivatives", true)?;
            if v.causality != Causality::Input {
                return Err(Fail::usage(format!(
                    "known {} is not an input (only d(output)/d(input) is provided)",
                    v.name
                )));
            }
        }
        self.refresh()?;
        let model = match &self.model {
            Some(m) => m,
            None => {
                // During initialization: evaluate with a model built from the
                // current parameters.
                return self.jacobian_uninitialized(unknowns, knowns);
            }
        };
        let mut jac = Vec::with_capacity(unknowns.len() * knowns.len());
        for &u in unknowns {
            let deps = self.spec.variable(u).map(|v| &v.dependencies);
            for &k in knowns {
                let declared = deps.is_some_and(|d| d.iter().any(|(i, _)| *i == k));
                jac.push(if declared {
                    model.partial_derivative(u, k, &self.values)
                } else {
                    0.0
                });
            }
        }
        Ok(jac)
    }

    fn jacobian_uninitialized(&mut self, unknowns: &[Vr], knowns: &[Vr]) -> R<Vec<f64>> {
        let mut model = self.build_model().map_err(Fail::usage)?;
        let mut values = self.values.clone();
        model.init(&mut values);
        model.outputs(self.time, &mut values, &self.inputs);
        let mut jac = Vec::with_capacity(unknowns.len() * knowns.len());
        for &u in unknowns {
            let deps = self.spec.variable(u).map(|v| &v.dependencies);
            for &k in knowns {
                let declared = deps.is_some_and(|d| d.iter().any(|(i, _)| *i == k));
                jac.push(if declared {
                    model.partial_derivative(u, k, &values)
                } else {
                    0.0
                });
            }
        }
        Ok(jac)
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
    /// polynomials. Returns the status (Discard: the step ended early).
    pub fn do_step(&mut self, t: f64, h: f64) -> R<Status> {
        self.do_step_with(t, h, None)
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
        if !t.is_finite() || !h.is_finite() || h <= 0.0 {
            return Err(Fail::usage(format!(
                "communication point {t} and step size {h} must be finite, step size > 0"
            )));
        }
        if (t - self.time).abs() > tolerance(self.time) {
            return Err(Fail::usage(format!(
                "currentCommunicationPoint {t} differs from the FMU time {}",
                self.time
            )));
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
        self.time = t;
        self.inputs.set_t0(t);
        self.values[TIME] = t;
        let Some(mut model) = self.model.take() else {
            return Err(Fail::usage("the model is not initialized"));
        };
        let sink = &self.sink;
        let log = |level: LogLevel, msg: &str| {
            let status = match level {
                LogLevel::Info => Status::Ok,
                LogLevel::Warning => Status::Warning,
                LogLevel::Error => Status::Error,
            };
            sink.log(status, msg);
        };
        let live = match source {
            Some(src) if self.takes_intermediate_inputs() => Some(self.inputs.with_source(
                src,
                h,
                self.intermediate_update_mask(),
            )),
            _ => None,
        };
        let u = live.as_ref().unwrap_or(&self.inputs);
        let result = model.do_step(t, h, &mut self.values, u, &log);
        let (status, reached) = match result {
            Ok(()) => (Status::Ok, t + h),
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
        model.outputs(reached, &mut self.values, &self.inputs);
        self.model = Some(model);
        self.dirty = false;
        self.last_step_status = status;
        self.last_successful_time = reached;
        if status == Status::Discard {
            self.mode = Mode::StepFailed;
        }
        Ok(status)
    }

    /// Status of the last `doStep` (FMI 2 `fmi2DoStepStatus`).
    pub fn last_step_status(&self) -> Status {
        self.last_step_status
    }

    /// End of the last successful (part of a) step.
    pub fn last_successful_time(&self) -> f64 {
        self.last_successful_time
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            mode: self.mode,
            time: self.time,
            start_time: self.start_time,
            values: self.values.0.clone(),
            inputs: self.inputs.raw().to_vec(),
            last_step_status: self.last_step_status,
            last_successful_time: self.last_successful_time,
            fixed_step: self.fixed_step,
        }
    }

    /// Saves the FMU state; overwrites `existing` if given.
    pub fn get_state(&mut self, existing: Option<usize>) -> R<usize> {
        self.require_cap(Cap::State)?;
        let snap = self.snapshot();
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

    /// Restores a saved FMU state (values, inputs, time and state-machine state).
    pub fn set_state(&mut self, id: usize) -> R<()> {
        self.require_cap(Cap::State)?;
        let snap = self.state(id)?.clone();
        self.restore(snap)
    }

    fn restore(&mut self, snap: Snapshot) -> R<()> {
        if snap.values.len() != self.values.len() || snap.inputs.len() != self.values.len() {
            return Err(Fail::usage("FMU state does not fit this model"));
        }
        self.mode = snap.mode;
        self.time = snap.time;
        self.start_time = snap.start_time;
        self.values = Values(snap.values);
        self.inputs = Inputs::from_raw(snap.time, snap.inputs);
        self.last_step_status = snap.last_step_status;
        self.last_successful_time = snap.last_successful_time;
        self.fixed_step = snap.fixed_step;
        self.dirty = true;
        self.model = None;
        if matches!(
            self.mode,
            Mode::StepComplete | Mode::StepFailed | Mode::Terminated | Mode::Error
        ) {
            // The parameters are part of the state: rebuild the model from them.
            match self.build_model() {
                Ok(m) => self.model = Some(m),
                Err(e) => {
                    self.mode = Mode::Error;
                    return Err(Fail::failure(format!(
                        "restored state has invalid parameters: {e}"
                    )));
                }
            }
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
        Ok(self.serialize_snapshot(self.state(id)?).len())
    }

    /// Serializes a saved state into `buf` (which must have exactly the size).
    pub fn serialize(&self, id: usize, buf: &mut [u8]) -> R<()> {
        self.require_cap(Cap::Serialize)?;
        let bytes = self.serialize_snapshot(self.state(id)?);
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
        ] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b.extend_from_slice(&(s.values.len() as u32).to_le_bytes());
        for x in &s.values {
            b.extend_from_slice(&x.to_le_bytes());
        }
        for c in &s.inputs {
            for x in c {
                b.extend_from_slice(&x.to_le_bytes());
            }
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
        if r.pos != bytes.len() {
            return Err("serialized FMU state has trailing bytes".into());
        }
        Ok(Snapshot {
            mode,
            time,
            start_time,
            values,
            inputs,
            last_step_status,
            last_successful_time,
            fixed_step: if fixed.is_nan() { None } else { Some(fixed) },
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
