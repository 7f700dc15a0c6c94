//! FMI 2.0 Co-Simulation: the function table and a safe instance wrapper.
#![allow(unsafe_code)]

use std::ffi::{CString, c_char, c_int, c_uint, c_void};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libloading::Library;

use super::call_log::{CallLog, LogValue, VrKind};
use super::log::{LogContext, c_str_lossy};
use super::pool::Pool;
use super::{Phase, StateHandle, Status, StepCall, StepOutcome, check_len, next_instance_id};
use crate::error::{FmiError, Result};
use crate::instance::HeldValues;

type Component = *mut c_void;
type Vr = c_uint;
type Fmi2Status = c_int;
type Fmi2Boolean = c_int;
type FmuState = *mut c_void;

/// `fmi2CallbackLogger`: C-variadic, implemented by the C shim.
type Logger =
    unsafe extern "C" fn(*mut c_void, *const c_char, c_int, *const c_char, *const c_char, ...);

unsafe extern "C" {
    /// The C shim of `c/fmi2_logger.c`.
    fn cosim_fmi2_logger(
        env: *mut c_void,
        instance_name: *const c_char,
        status: c_int,
        category: *const c_char,
        message: *const c_char,
        ...
    );
}

/// `fmi2CallbackFunctions`.
#[repr(C)]
pub(crate) struct CallbackFunctions {
    logger: Logger,
    allocate_memory: unsafe extern "C" fn(usize, usize) -> *mut c_void,
    free_memory: unsafe extern "C" fn(*mut c_void),
    step_finished: Option<unsafe extern "C" fn(*mut c_void, Fmi2Status)>,
    component_environment: *mut c_void,
}

/// What the C shim receives as the component environment
/// (`cosim_fmi2_env` in `c/fmi2_logger.c`).
#[repr(C)]
struct ShimEnv {
    sink: Sink,
    ctx: *mut c_void,
}

/// `cosim_fmi2_sink`: a formatted message of `len` bytes, `cut` when the
/// shim stopped at its bound.
type Sink = unsafe extern "C" fn(
    *mut c_void,
    *const c_char,
    c_int,
    *const c_char,
    *const c_char,
    usize,
    c_int,
);

/// Receives formatted messages from the C shim.
///
/// # Safety
/// `ctx` is the `LogContext` pointer stored in the `ShimEnv` of a live
/// instance; `category` is null or NUL-terminated, `message` points to
/// `len` bytes.
unsafe extern "C" fn log_sink(
    ctx: *mut c_void,
    _instance_name: *const c_char,
    status: c_int,
    category: *const c_char,
    message: *const c_char,
    len: usize,
    cut: c_int,
) {
    if ctx.is_null() {
        return;
    }
    // SAFETY: ctx points to the boxed LogContext owned by the instance, which
    // outlives every call the FMU can make (it is dropped after freeInstance).
    let log = unsafe { &*(ctx as *const LogContext) };
    // SAFETY: the shim passes a null or NUL-terminated category and `len`
    // bytes of message, valid during this call.
    unsafe {
        log.log_c(
            Status::from_fmi2(status),
            category,
            message,
            Some(len),
            cut != 0,
        )
    };
}

macro_rules! fn_table {
    ($(#[$m:meta])* $name:ident { mandatory { $($mf:ident : $msym:literal : $mty:ty,)* } optional { $($of:ident : $osym:literal : $oty:ty,)* } }) => {
        $(#[$m])*
        pub(crate) struct $name {
            $(pub(crate) $mf: $mty,)*
            $(pub(crate) $of: Option<$oty>,)*
        }
        impl $name {
            /// Resolves every function; a missing mandatory one is an error
            /// naming it.
            fn load(lib: &Library, path: &Path) -> Result<Self> {
                Ok($name {
                    $($mf: {
                        // SAFETY: the symbol is declared with the signature
                        // the FMI 2.0 standard gives it.
                        let sym = unsafe { lib.get::<$mty>($msym.as_bytes()) }.map_err(|_| {
                            FmiError::MissingFunction {
                                library: path.to_path_buf(),
                                function: $msym.to_string(),
                            }
                        })?;
                        *sym
                    },)*
                    $($of: {
                        // SAFETY: as above; absence is allowed.
                        unsafe { lib.get::<$oty>($osym.as_bytes()) }.ok().map(|s| *s)
                    },)*
                })
            }
        }
    };
}

fn_table! {
    /// The FMI 2.0 Co-Simulation functions of one shared library.
    Functions {
        mandatory {
            get_types_platform: "fmi2GetTypesPlatform": unsafe extern "C" fn() -> *const c_char,
            get_version: "fmi2GetVersion": unsafe extern "C" fn() -> *const c_char,
            set_debug_logging: "fmi2SetDebugLogging": unsafe extern "C" fn(Component, Fmi2Boolean, usize, *const *const c_char) -> Fmi2Status,
            instantiate: "fmi2Instantiate": unsafe extern "C" fn(*const c_char, c_int, *const c_char, *const c_char, *const CallbackFunctions, Fmi2Boolean, Fmi2Boolean) -> Component,
            free_instance: "fmi2FreeInstance": unsafe extern "C" fn(Component),
            setup_experiment: "fmi2SetupExperiment": unsafe extern "C" fn(Component, Fmi2Boolean, f64, f64, Fmi2Boolean, f64) -> Fmi2Status,
            enter_initialization_mode: "fmi2EnterInitializationMode": unsafe extern "C" fn(Component) -> Fmi2Status,
            exit_initialization_mode: "fmi2ExitInitializationMode": unsafe extern "C" fn(Component) -> Fmi2Status,
            terminate: "fmi2Terminate": unsafe extern "C" fn(Component) -> Fmi2Status,
            reset: "fmi2Reset": unsafe extern "C" fn(Component) -> Fmi2Status,
            get_real: "fmi2GetReal": unsafe extern "C" fn(Component, *const Vr, usize, *mut f64) -> Fmi2Status,
            get_integer: "fmi2GetInteger": unsafe extern "C" fn(Component, *const Vr, usize, *mut c_int) -> Fmi2Status,
            get_boolean: "fmi2GetBoolean": unsafe extern "C" fn(Component, *const Vr, usize, *mut Fmi2Boolean) -> Fmi2Status,
            get_string: "fmi2GetString": unsafe extern "C" fn(Component, *const Vr, usize, *mut *const c_char) -> Fmi2Status,
            set_real: "fmi2SetReal": unsafe extern "C" fn(Component, *const Vr, usize, *const f64) -> Fmi2Status,
            set_integer: "fmi2SetInteger": unsafe extern "C" fn(Component, *const Vr, usize, *const c_int) -> Fmi2Status,
            set_boolean: "fmi2SetBoolean": unsafe extern "C" fn(Component, *const Vr, usize, *const Fmi2Boolean) -> Fmi2Status,
            set_string: "fmi2SetString": unsafe extern "C" fn(Component, *const Vr, usize, *const *const c_char) -> Fmi2Status,
            do_step: "fmi2DoStep": unsafe extern "C" fn(Component, f64, f64, Fmi2Boolean) -> Fmi2Status,
        }
        optional {
            cancel_step: "fmi2CancelStep": unsafe extern "C" fn(Component) -> Fmi2Status,
            get_real_status: "fmi2GetRealStatus": unsafe extern "C" fn(Component, c_int, *mut f64) -> Fmi2Status,
            get_boolean_status: "fmi2GetBooleanStatus": unsafe extern "C" fn(Component, c_int, *mut Fmi2Boolean) -> Fmi2Status,
            get_fmu_state: "fmi2GetFMUstate": unsafe extern "C" fn(Component, *mut FmuState) -> Fmi2Status,
            set_fmu_state: "fmi2SetFMUstate": unsafe extern "C" fn(Component, FmuState) -> Fmi2Status,
            free_fmu_state: "fmi2FreeFMUstate": unsafe extern "C" fn(Component, *mut FmuState) -> Fmi2Status,
            serialized_fmu_state_size: "fmi2SerializedFMUstateSize": unsafe extern "C" fn(Component, FmuState, *mut usize) -> Fmi2Status,
            serialize_fmu_state: "fmi2SerializeFMUstate": unsafe extern "C" fn(Component, FmuState, *mut u8, usize) -> Fmi2Status,
            deserialize_fmu_state: "fmi2DeSerializeFMUstate": unsafe extern "C" fn(Component, *const u8, usize, *mut FmuState) -> Fmi2Status,
            get_directional_derivative: "fmi2GetDirectionalDerivative": unsafe extern "C" fn(Component, *const Vr, usize, *const Vr, usize, *const f64, *mut f64) -> Fmi2Status,
            set_real_input_derivatives: "fmi2SetRealInputDerivatives": unsafe extern "C" fn(Component, *const Vr, usize, *const c_int, *const f64) -> Fmi2Status,
            get_real_output_derivatives: "fmi2GetRealOutputDerivatives": unsafe extern "C" fn(Component, *const Vr, usize, *const c_int, *mut f64) -> Fmi2Status,
        }
    }
}

/// Every FMI 2.0 library this process loaded (`super::pool`).
static POOL: Pool<Fmi2Library> = Pool::new();

/// A loaded FMI 2.0 shared library and its resolved functions.
pub struct Fmi2Library {
    functions: Functions,
    path: PathBuf,
    // Never dropped: the pool keeps every loaded copy (`super::pool`).
    _library: Library,
}

impl std::fmt::Debug for Fmi2Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fmi2Library")
            .field("path", &self.path)
            .finish()
    }
}

impl Fmi2Library {
    /// Loads the library at `path` and resolves the FMI 2.0 functions, or
    /// takes a loaded copy of the same library (the same bytes) that no
    /// FMU uses any more. A loaded library is never unloaded
    /// (`super::pool`: an FMU's threads may outlive its instances).
    pub fn load(path: &Path) -> Result<Arc<Self>> {
        POOL.get_or_load(path, || {
            let (library, functions) = super::open_library(path, Functions::load)?;
            Ok(Fmi2Library {
                functions,
                path: path.to_path_buf(),
                _library: library,
            })
        })
    }

    /// How many copies of FMI 2.0 libraries this process has loaded (all
    /// still loaded).
    pub(crate) fn loaded_copies() -> usize {
        POOL.len()
    }

    /// The file this copy was loaded from (for a reused copy, an earlier
    /// FMU's extraction, perhaps removed since).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `fmi2GetVersion()`.
    pub fn version(&self) -> String {
        // SAFETY: takes no arguments and returns a static string per the standard.
        unsafe { c_str_lossy((self.functions.get_version)()) }
    }

    /// `fmi2GetTypesPlatform()`.
    pub fn types_platform(&self) -> String {
        // SAFETY: as for `version`.
        unsafe { c_str_lossy((self.functions.get_types_platform)()) }
    }

    /// Names of the optional functions the library exports.
    pub fn optional_functions(&self) -> Vec<&'static str> {
        let f = &self.functions;
        let mut v = Vec::new();
        let mut add = |present: bool, name: &'static str| {
            if present {
                v.push(name)
            }
        };
        add(f.get_fmu_state.is_some(), "fmi2GetFMUstate");
        add(f.set_fmu_state.is_some(), "fmi2SetFMUstate");
        add(f.free_fmu_state.is_some(), "fmi2FreeFMUstate");
        add(f.serialize_fmu_state.is_some(), "fmi2SerializeFMUstate");
        add(f.deserialize_fmu_state.is_some(), "fmi2DeSerializeFMUstate");
        add(
            f.get_directional_derivative.is_some(),
            "fmi2GetDirectionalDerivative",
        );
        add(
            f.set_real_input_derivatives.is_some(),
            "fmi2SetRealInputDerivatives",
        );
        add(
            f.get_real_output_derivatives.is_some(),
            "fmi2GetRealOutputDerivatives",
        );
        v
    }
}

/// Capabilities the model description declares; calls to optional functions
/// are refused when the flag is off, even if the symbol exists.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fmi2Capabilities {
    /// `canGetAndSetFMUstate`.
    pub can_get_and_set_fmu_state: bool,
    /// `canSerializeFMUstate`.
    pub can_serialize_fmu_state: bool,
    /// `providesDirectionalDerivative`.
    pub provides_directional_derivative: bool,
    /// `canInterpolateInputs`.
    pub can_interpolate_inputs: bool,
    /// `maxOutputDerivativeOrder`.
    pub max_output_derivative_order: u32,
}

/// One FMI 2.0 co-simulation instance.
pub struct Fmi2Instance {
    component: Component,
    lib: Arc<Fmi2Library>,
    caps: Fmi2Capabilities,
    name: String,
    id: u64,
    states: Vec<FmuState>,
    /// Scratch for Boolean conversion and derivative orders (no allocation
    /// after the first call of a given size).
    int_scratch: Vec<c_int>,
    /// Where the instance is in the FMI 2 state machine.
    phase: Phase,
    /// `fmi2SetupExperiment` was called since instantiation or reset.
    setup_done: bool,
    time: f64,
    /// The FMI call log (`--log-fmi-calls`), if on: one branch per call
    /// when off.
    call_log: Option<Arc<CallLog>>,
    // Keep the callback struct, the shim environment and the log context at
    // fixed addresses for as long as the FMU may call back.
    _callbacks: Box<CallbackFunctions>,
    _env: Box<ShimEnv>,
    log: Box<LogContext>,
}

// SAFETY: an FMI 2.0 component may be used from any thread as long as calls
// on it are not concurrent; every method takes `&mut self`, so they cannot be.
unsafe impl Send for Fmi2Instance {}

impl std::fmt::Debug for Fmi2Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fmi2Instance")
            .field("name", &self.name)
            .finish()
    }
}

/// `file:` URI of a directory (RFC 3986 percent-encoding of the path).
pub(crate) fn file_uri(dir: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in dir.to_string_lossy().bytes() {
        let c = byte as char;
        if c.is_ascii_alphanumeric() || "/-._~".contains(c) {
            uri.push(c);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

fn cstring(instance: &str, function: &'static str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| FmiError::InvalidArgument {
        instance: instance.to_string(),
        function,
        reason: format!("string contains a NUL byte: {s:?}"),
    })
}

/// Logs a get or set call of values (out of line: the hot path only tests
/// whether there is a log).
#[cold]
#[inline(never)]
fn log_values<T: LogValue>(
    log: &CallLog,
    code: Fmi2Status,
    function: &str,
    kind: VrKind,
    vrs: &[u32],
    values: &[T],
) {
    log.line(Status::from_fmi2(code), function)
        .vrs("vr", kind, vrs)
        .arg("nvr", vrs.len())
        .values("value", values)
        .end();
}

/// Logs `fmi2GetString`: the strings only after a status that returns
/// them (after another, the pointers may be anything).
#[cold]
#[inline(never)]
fn log_strings(
    log: &CallLog,
    code: Fmi2Status,
    function: &str,
    vrs: &[u32],
    ptrs: &[*const c_char],
) {
    let status = Status::from_fmi2(code);
    let line = log
        .line(status, function)
        .vrs("vr", VrKind::String, vrs)
        .arg("nvr", vrs.len());
    if status.is_success() {
        // SAFETY: after OK or Warning each pointer is null or a valid C
        // string until the next call into the FMU.
        let strings: Vec<String> = ptrs.iter().map(|&p| unsafe { c_str_lossy(p) }).collect();
        line.values("value", &strings).end();
    } else {
        line.arg("value", "?").end();
    }
}

/// Logs `fmi2DoStep` (out of line).
#[cold]
#[inline(never)]
fn log_do_step(log: &CallLog, code: Fmi2Status, t: f64, h: f64, no_set_prior: bool) {
    log.line(Status::from_fmi2(code), "fmi2DoStep")
        .num("currentCommunicationPoint", t)
        .num("communicationStepSize", h)
        .flag("noSetFMUStatePriorToCurrentPoint", no_set_prior)
        .end();
}

/// Logs `fmi2SetRealInputDerivatives` / `fmi2GetRealOutputDerivatives`
/// (out of line).
#[cold]
#[inline(never)]
fn log_derivatives(
    log: &CallLog,
    code: Fmi2Status,
    function: &str,
    vrs: &[u32],
    orders: &[c_int],
    values: &[f64],
) {
    log.line(Status::from_fmi2(code), function)
        .vrs("vr", VrKind::Real, vrs)
        .arg("nvr", vrs.len())
        .values("order", orders)
        .values("value", values)
        .end();
}

/// Logs a call without arguments (out of line).
#[cold]
#[inline(never)]
fn log_call(log: &CallLog, code: Fmi2Status, function: &str) {
    log.call(Status::from_fmi2(code), function);
}

/// Logs a call with an FMU state argument (out of line).
#[cold]
#[inline(never)]
fn log_state(log: &CallLog, code: Fmi2Status, function: &str, state: FmuState) {
    log.line(Status::from_fmi2(code), function)
        .ptr("FMUstate", state)
        .end();
}

impl Fmi2Instance {
    /// `fmi2Instantiate` for co-simulation. With a `call_log`, this call
    /// and every later one on the instance is logged there.
    pub(crate) fn instantiate(
        lib: Arc<Fmi2Library>,
        name: &str,
        guid: &str,
        resources_dir: &Path,
        caps: Fmi2Capabilities,
        logging_on: bool,
        call_log: Option<Arc<CallLog>>,
    ) -> Result<Self> {
        let uri = file_uri(resources_dir);
        let c_name = cstring(name, "fmi2Instantiate", name)?;
        let c_guid = cstring(name, "fmi2Instantiate", guid)?;
        let c_uri = cstring(name, "fmi2Instantiate", &uri)?;
        let log = Box::new(LogContext::new(name));
        let mut env = Box::new(ShimEnv {
            sink: log_sink,
            ctx: &*log as *const LogContext as *mut c_void,
        });
        let callbacks = Box::new(CallbackFunctions {
            logger: cosim_fmi2_logger,
            allocate_memory: libc::calloc,
            free_memory: libc::free,
            step_finished: None,
            component_environment: &mut *env as *mut ShimEnv as *mut c_void,
        });
        // SAFETY: all strings are NUL-terminated and outlive the call; the
        // callbacks struct and environment are boxed and kept in the instance
        // until after fmi2FreeInstance. fmi2CoSimulation = 1.
        let component = unsafe {
            (lib.functions.instantiate)(
                c_name.as_ptr(),
                1,
                c_guid.as_ptr(),
                c_uri.as_ptr(),
                &*callbacks,
                0,
                c_int::from(logging_on),
            )
        };
        if let Some(log) = &call_log {
            let status = if component.is_null() {
                Status::Error
            } else {
                Status::Ok
            };
            log.line(status, "fmi2Instantiate")
                .text("instanceName", name)
                .arg("fmuType", "1 /* fmi2CoSimulation */")
                .text("fmuGUID", guid)
                .text("fmuResourceLocation", &uri)
                .flag("visible", false)
                .flag("loggingOn", logging_on)
                .end();
        }
        if component.is_null() {
            return Err(FmiError::Status {
                instance: name.to_string(),
                function: "fmi2Instantiate",
                status: Status::Error,
                time: None,
                log: log.take_recent(),
            });
        }
        Ok(Fmi2Instance {
            component,
            lib,
            caps,
            name: name.to_string(),
            id: next_instance_id(),
            states: Vec::new(),
            int_scratch: Vec::new(),
            phase: Phase::Instantiated,
            setup_done: false,
            time: 0.0,
            call_log,
            _callbacks: callbacks,
            _env: env,
            log,
        })
    }

    /// The instance name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The last lines the FMU logged.
    pub fn take_recent_log(&self) -> Vec<String> {
        self.log.take_recent()
    }

    /// OK is the hot path (every call of every macro step): inlined, the
    /// rest out of line.
    #[inline]
    fn check(&mut self, function: &'static str, code: Fmi2Status) -> Result<Status> {
        if code == 0 {
            return Ok(Status::Ok);
        }
        self.check_not_ok(function, code)
    }

    #[cold]
    #[inline(never)]
    fn check_not_ok(&mut self, function: &'static str, code: Fmi2Status) -> Result<Status> {
        let status = Status::from_fmi2(code);
        match status {
            Status::Ok => Ok(status),
            Status::Warning => {
                tracing::warn!(target: "fmu", instance = %self.name, "{function} returned Warning");
                Ok(status)
            }
            _ => {
                match status {
                    Status::Fatal | Status::Invalid(_) => self.phase = Phase::Fatal,
                    // After Error the standard allows freeing, reset or
                    // restoring a saved state; nothing else.
                    Status::Error => self.phase = Phase::Error,
                    _ => {}
                }
                Err(FmiError::Status {
                    instance: self.name.clone(),
                    function,
                    status,
                    time: Some(self.time),
                    log: self.log.take_recent(),
                })
            }
        }
    }

    #[inline]
    fn alive(&self, function: &'static str) -> Result<()> {
        if self.phase == Phase::Fatal {
            Err(self.dead(function))
        } else {
            Ok(())
        }
    }

    #[cold]
    #[inline(never)]
    fn dead(&self, function: &'static str) -> FmiError {
        {
            FmiError::Status {
                instance: self.name.clone(),
                function,
                status: Status::Fatal,
                time: Some(self.time),
                log: vec![
                    "the instance returned Fatal (or an invalid status) earlier; no further calls are allowed".into(),
                ],
            }
        }
    }

    fn unsupported(&self, function: &'static str, reason: &str) -> FmiError {
        FmiError::NotSupported {
            instance: self.name.clone(),
            function,
            reason: reason.to_string(),
        }
    }

    /// `fmi2SetDebugLogging` with the given categories (empty: all).
    pub fn set_debug_logging(&mut self, on: bool, categories: &[&str]) -> Result<()> {
        self.alive("fmi2SetDebugLogging")?;
        let owned: Vec<CString> = categories
            .iter()
            .map(|c| cstring(&self.name, "fmi2SetDebugLogging", c))
            .collect::<Result<_>>()?;
        let ptrs: Vec<*const c_char> = owned.iter().map(|c| c.as_ptr()).collect();
        // SAFETY: component is live; ptrs holds `ptrs.len()` valid C strings.
        let code = unsafe {
            (self.lib.functions.set_debug_logging)(
                self.component,
                c_int::from(on),
                ptrs.len(),
                ptrs.as_ptr(),
            )
        };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi2(code), "fmi2SetDebugLogging")
                .flag("loggingOn", on)
                .arg("nCategories", categories.len())
                .values("categories", categories)
                .end();
        }
        self.check("fmi2SetDebugLogging", code).map(|_| ())
    }

    /// Where the instance is in the state machine.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    #[cold]
    fn out_of_sequence(&self, function: &'static str, expected: &str) -> FmiError {
        FmiError::InvalidArgument {
            instance: self.name.clone(),
            function,
            reason: format!(
                "called in state {}{}, expected {expected} (an importer bug: please report it)",
                self.phase.name(),
                if self.setup_done && self.phase == Phase::Instantiated {
                    " after fmi2SetupExperiment"
                } else {
                    ""
                }
            ),
        }
    }

    /// `fmi2SetupExperiment` (state Instantiated, once). Parameters and
    /// start values are set after it: some exporters reset them here.
    pub fn setup_experiment(
        &mut self,
        tolerance: Option<f64>,
        start_time: f64,
        stop_time: Option<f64>,
    ) -> Result<()> {
        const F: &str = "fmi2SetupExperiment";
        self.alive(F)?;
        if self.phase != Phase::Instantiated || self.setup_done {
            return Err(self.out_of_sequence(F, "Instantiated, before fmi2SetupExperiment"));
        }
        self.time = start_time;
        // SAFETY: component is live.
        let code = unsafe {
            (self.lib.functions.setup_experiment)(
                self.component,
                c_int::from(tolerance.is_some()),
                tolerance.unwrap_or(0.0),
                start_time,
                c_int::from(stop_time.is_some()),
                stop_time.unwrap_or(0.0),
            )
        };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi2(code), F)
                .flag("toleranceDefined", tolerance.is_some())
                .num("tolerance", tolerance.unwrap_or(0.0))
                .num("startTime", start_time)
                .flag("stopTimeDefined", stop_time.is_some())
                .num("stopTime", stop_time.unwrap_or(0.0))
                .end();
        }
        self.check(F, code)?;
        self.setup_done = true;
        Ok(())
    }

    /// `fmi2EnterInitializationMode` (after [`Fmi2Instance::setup_experiment`]).
    pub fn enter_initialization_mode(&mut self) -> Result<()> {
        const F: &str = "fmi2EnterInitializationMode";
        self.alive(F)?;
        if self.phase != Phase::Instantiated || !self.setup_done {
            return Err(self.out_of_sequence(F, "Instantiated, after fmi2SetupExperiment"));
        }
        // SAFETY: component is live.
        let code = unsafe { (self.lib.functions.enter_initialization_mode)(self.component) };
        if let Some(log) = &self.call_log {
            log_call(log, code, F);
        }
        self.check(F, code)?;
        self.phase = Phase::Initialization;
        Ok(())
    }

    /// `fmi2ExitInitializationMode`.
    pub fn exit_initialization_mode(&mut self) -> Result<()> {
        const F: &str = "fmi2ExitInitializationMode";
        self.alive(F)?;
        if self.phase != Phase::Initialization {
            return Err(self.out_of_sequence(F, "Initialization Mode"));
        }
        // SAFETY: component is live.
        let code = unsafe { (self.lib.functions.exit_initialization_mode)(self.component) };
        if let Some(log) = &self.call_log {
            log_call(log, code, F);
        }
        self.check(F, code)?;
        self.phase = Phase::Stepping;
        Ok(())
    }

    /// `fmi2Terminate`, where the state machine allows it (stepComplete,
    /// stepFailed). An instance that never left Instantiated or
    /// Initialization Mode, or that returned Error, may only be freed: it
    /// is left alone (the call returns Ok). Idempotent.
    pub fn terminate(&mut self) -> Result<()> {
        const F: &str = "fmi2Terminate";
        // (Fatal too: nothing may be called then, and the failure was
        // reported when it happened.)
        if self.phase != Phase::Stepping {
            tracing::debug!(
                target: "fmu",
                instance = %self.name,
                "not calling {F} in state {}: the instance is only freed",
                self.phase.name()
            );
            return Ok(());
        }
        // SAFETY: component is live.
        let code = unsafe { (self.lib.functions.terminate)(self.component) };
        if let Some(log) = &self.call_log {
            log_call(log, code, F);
        }
        self.check(F, code)?;
        self.phase = Phase::Terminated;
        Ok(())
    }

    /// `fmi2Reset`: back to Instantiated (setup and start values again).
    pub fn reset(&mut self) -> Result<()> {
        self.alive("fmi2Reset")?;
        // SAFETY: component is live.
        let code = unsafe { (self.lib.functions.reset)(self.component) };
        if let Some(log) = &self.call_log {
            log_call(log, code, "fmi2Reset");
        }
        self.check("fmi2Reset", code)?;
        self.phase = Phase::Instantiated;
        self.setup_done = false;
        Ok(())
    }

    /// `fmi2GetReal`.
    #[inline]
    pub fn get_real(&mut self, vrs: &[u32], values: &mut [f64]) -> Result<()> {
        check_len(&self.name, "fmi2GetReal", vrs.len(), values.len())?;
        self.alive("fmi2GetReal")?;
        // SAFETY: both slices have vrs.len() elements (checked above).
        let code = unsafe {
            (self.lib.functions.get_real)(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                values.as_mut_ptr(),
            )
        };
        if let Some(log) = &self.call_log {
            log_values(log, code, "fmi2GetReal", VrKind::Real, vrs, values);
        }
        self.check("fmi2GetReal", code).map(|_| ())
    }

    /// `fmi2SetReal` of `u` on `in_vrs` (none without inputs),
    /// `fmi2DoStep` from `t` by `h` and, when the step completed,
    /// `fmi2GetReal` of `out_vrs` into `y` (none without outputs): the
    /// calls of [`Fmi2Instance::set_real`], [`Fmi2Instance::do_step`] and
    /// [`Fmi2Instance::get_real`], with the same checks, logs and errors,
    /// checked once where they can be and with every status but OK and
    /// every logged call out of line. `mark` is told of each call before
    /// it is made, and of the step's completion ([`StepCall::Completed`])
    /// before `Ok(StepOutcome::Completed)` is returned.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn set_step_get_real(
        &mut self,
        in_vrs: &[u32],
        u: &[f64],
        t: f64,
        h: f64,
        no_set_prior: bool,
        out_vrs: &[u32],
        y: &mut [f64],
        mut mark: impl FnMut(StepCall),
    ) -> Result<StepOutcome> {
        check_len(&self.name, "fmi2SetReal", in_vrs.len(), u.len())?;
        check_len(&self.name, "fmi2GetReal", out_vrs.len(), y.len())?;
        let logged = self.call_log.is_some();
        // Only a status checked out of line can end the instance, and then
        // the call returns its error: alive once is alive for all three.
        self.alive(if in_vrs.is_empty() {
            "fmi2DoStep"
        } else {
            "fmi2SetReal"
        })?;
        if !in_vrs.is_empty() {
            mark(StepCall::SetInputs);
            // SAFETY: both slices have in_vrs.len() elements (checked above).
            let code = unsafe {
                (self.lib.functions.set_real)(
                    self.component,
                    in_vrs.as_ptr(),
                    in_vrs.len(),
                    u.as_ptr(),
                )
            };
            if code != 0 || logged {
                self.reals_returned("fmi2SetReal", code, in_vrs, u)?;
            }
        }
        mark(StepCall::DoStep);
        // SAFETY: component is live.
        let code = unsafe {
            (self.lib.functions.do_step)(self.component, t, h, c_int::from(no_set_prior))
        };
        if code != 0 || logged {
            // (The time of an error in the step is its start.)
            self.time = t;
            let outcome = self.do_step_returned(code, t, h, no_set_prior)?;
            if outcome != StepOutcome::Completed {
                return Ok(outcome);
            }
        } else {
            self.time = t + h;
        }
        if !out_vrs.is_empty() {
            mark(StepCall::GetOutputs);
            // SAFETY: both slices have out_vrs.len() elements (checked above).
            let code = unsafe {
                (self.lib.functions.get_real)(
                    self.component,
                    out_vrs.as_ptr(),
                    out_vrs.len(),
                    y.as_mut_ptr(),
                )
            };
            if code != 0 || logged {
                self.reals_returned("fmi2GetReal", code, out_vrs, y)?;
            }
        }
        mark(StepCall::Completed);
        Ok(StepOutcome::Completed)
    }

    /// What follows `function` (`fmi2SetReal` or `fmi2GetReal` of `vrs`,
    /// `values`) returning `code` in [`Fmi2Instance::set_step_get_real`],
    /// unless it returned OK with nothing to log: its log line, its status
    /// checked.
    #[cold]
    #[inline(never)]
    fn reals_returned(
        &mut self,
        function: &'static str,
        code: Fmi2Status,
        vrs: &[u32],
        values: &[f64],
    ) -> Result<()> {
        if let Some(log) = &self.call_log {
            log_values(log, code, function, VrKind::Real, vrs, values);
        }
        self.check(function, code).map(|_| ())
    }

    /// `fmi2SetReal`.
    #[inline]
    pub fn set_real(&mut self, vrs: &[u32], values: &[f64]) -> Result<()> {
        check_len(&self.name, "fmi2SetReal", vrs.len(), values.len())?;
        self.alive("fmi2SetReal")?;
        // SAFETY: both slices have vrs.len() elements (checked above).
        let code = unsafe {
            (self.lib.functions.set_real)(self.component, vrs.as_ptr(), vrs.len(), values.as_ptr())
        };
        if let Some(log) = &self.call_log {
            log_values(log, code, "fmi2SetReal", VrKind::Real, vrs, values);
        }
        self.check("fmi2SetReal", code).map(|_| ())
    }

    /// `fmi2GetInteger`.
    pub fn get_integer(&mut self, vrs: &[u32], values: &mut [i32]) -> Result<()> {
        check_len(&self.name, "fmi2GetInteger", vrs.len(), values.len())?;
        self.alive("fmi2GetInteger")?;
        // SAFETY: both slices have vrs.len() elements; c_int is i32 here.
        let code = unsafe {
            (self.lib.functions.get_integer)(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                values.as_mut_ptr(),
            )
        };
        if let Some(log) = &self.call_log {
            log_values(log, code, "fmi2GetInteger", VrKind::Integer, vrs, values);
        }
        self.check("fmi2GetInteger", code).map(|_| ())
    }

    /// `fmi2SetInteger`.
    pub fn set_integer(&mut self, vrs: &[u32], values: &[i32]) -> Result<()> {
        check_len(&self.name, "fmi2SetInteger", vrs.len(), values.len())?;
        self.alive("fmi2SetInteger")?;
        // SAFETY: both slices have vrs.len() elements.
        let code = unsafe {
            (self.lib.functions.set_integer)(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                values.as_ptr(),
            )
        };
        if let Some(log) = &self.call_log {
            log_values(log, code, "fmi2SetInteger", VrKind::Integer, vrs, values);
        }
        self.check("fmi2SetInteger", code).map(|_| ())
    }

    /// `fmi2GetBoolean`.
    pub fn get_boolean(&mut self, vrs: &[u32], values: &mut [bool]) -> Result<()> {
        check_len(&self.name, "fmi2GetBoolean", vrs.len(), values.len())?;
        self.alive("fmi2GetBoolean")?;
        self.int_scratch.clear();
        self.int_scratch.resize(vrs.len(), 0);
        // SAFETY: vrs and the scratch buffer have vrs.len() elements.
        let code = unsafe {
            (self.lib.functions.get_boolean)(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                self.int_scratch.as_mut_ptr(),
            )
        };
        if let Some(log) = &self.call_log {
            let f = "fmi2GetBoolean";
            log_values(log, code, f, VrKind::Boolean, vrs, &self.int_scratch);
        }
        self.check("fmi2GetBoolean", code)?;
        for (v, &i) in values.iter_mut().zip(&self.int_scratch) {
            *v = i != 0;
        }
        Ok(())
    }

    /// `fmi2SetBoolean`.
    pub fn set_boolean(&mut self, vrs: &[u32], values: &[bool]) -> Result<()> {
        check_len(&self.name, "fmi2SetBoolean", vrs.len(), values.len())?;
        self.alive("fmi2SetBoolean")?;
        self.int_scratch.clear();
        self.int_scratch
            .extend(values.iter().map(|&b| c_int::from(b)));
        // SAFETY: vrs and the scratch buffer have vrs.len() elements.
        let code = unsafe {
            (self.lib.functions.set_boolean)(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                self.int_scratch.as_ptr(),
            )
        };
        if let Some(log) = &self.call_log {
            let f = "fmi2SetBoolean";
            log_values(log, code, f, VrKind::Boolean, vrs, &self.int_scratch);
        }
        self.check("fmi2SetBoolean", code).map(|_| ())
    }

    /// `fmi2GetString` (copies the strings out immediately, as the standard
    /// requires: the FMU may reuse its buffers on the next call).
    pub fn get_string(&mut self, vrs: &[u32]) -> Result<Vec<String>> {
        self.alive("fmi2GetString")?;
        let mut ptrs: Vec<*const c_char> = vec![std::ptr::null(); vrs.len()];
        // SAFETY: vrs and ptrs have vrs.len() elements.
        let code = unsafe {
            (self.lib.functions.get_string)(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                ptrs.as_mut_ptr(),
            )
        };
        if let Some(log) = &self.call_log {
            log_strings(log, code, "fmi2GetString", vrs, &ptrs);
        }
        self.check("fmi2GetString", code)?;
        // SAFETY: after an OK status each pointer is null or a valid C string
        // until the next call into the FMU.
        Ok(ptrs.iter().map(|&p| unsafe { c_str_lossy(p) }).collect())
    }

    /// `fmi2SetString`.
    pub fn set_string(&mut self, vrs: &[u32], values: &[&str]) -> Result<()> {
        check_len(&self.name, "fmi2SetString", vrs.len(), values.len())?;
        self.alive("fmi2SetString")?;
        let owned: Vec<CString> = values
            .iter()
            .map(|s| cstring(&self.name, "fmi2SetString", s))
            .collect::<Result<_>>()?;
        let ptrs: Vec<*const c_char> = owned.iter().map(|c| c.as_ptr()).collect();
        // SAFETY: vrs and ptrs have vrs.len() elements; strings outlive the call.
        let code = unsafe {
            (self.lib.functions.set_string)(self.component, vrs.as_ptr(), vrs.len(), ptrs.as_ptr())
        };
        if let Some(log) = &self.call_log {
            log_values(log, code, "fmi2SetString", VrKind::String, vrs, values);
        }
        self.check("fmi2SetString", code).map(|_| ())
    }

    /// `fmi2DoStep`. Discard is reported as [`StepOutcome::Discarded`] with
    /// the FMU's `fmi2LastSuccessfulTime` (or `t` when it cannot say), or as
    /// [`StepOutcome::Terminated`] when `fmi2GetBooleanStatus(fmi2Terminated)`
    /// says the FMU ended the simulation. `no_set_prior` is
    /// `noSetFMUStatePriorToCurrentPoint`: true unless the caller may still
    /// restore a state saved before `t`.
    #[inline]
    pub fn do_step(&mut self, t: f64, h: f64, no_set_prior: bool) -> Result<StepOutcome> {
        self.alive("fmi2DoStep")?;
        // SAFETY: component is live.
        let code = unsafe {
            (self.lib.functions.do_step)(self.component, t, h, c_int::from(no_set_prior))
        };
        if code == 0 && self.call_log.is_none() {
            // The hot path: a completed step, nothing to log.
            self.time = t + h;
            return Ok(StepOutcome::Completed);
        }
        // (The time of an error in the step is its start.)
        self.time = t;
        self.do_step_returned(code, t, h, no_set_prior)
    }

    /// What [`Fmi2Instance::do_step`] does after `fmi2DoStep` returned
    /// `code`, unless the step completed with nothing to log: log it, ask
    /// a discarding FMU why, check the status.
    #[cold]
    #[inline(never)]
    fn do_step_returned(
        &mut self,
        code: Fmi2Status,
        t: f64,
        h: f64,
        no_set_prior: bool,
    ) -> Result<StepOutcome> {
        if let Some(log) = &self.call_log {
            log_do_step(log, code, t, h, no_set_prior);
        }
        let status = Status::from_fmi2(code);
        if status == Status::Discard {
            let mut last = t;
            let mut terminate: Fmi2Boolean = 0;
            if let Some(f) = self.lib.functions.get_real_status {
                // SAFETY: component is live; fmi2LastSuccessfulTime = 2.
                let c = unsafe { f(self.component, 2, &mut last) };
                if let Some(log) = &self.call_log {
                    log.line(Status::from_fmi2(c), "fmi2GetRealStatus")
                        .named("s", 2, "fmi2LastSuccessfulTime")
                        .num("value", last)
                        .end();
                }
                if c != 0 {
                    last = t;
                }
            }
            if let Some(f) = self.lib.functions.get_boolean_status {
                // SAFETY: component is live; fmi2Terminated = 3.
                let c = unsafe { f(self.component, 3, &mut terminate) };
                if let Some(log) = &self.call_log {
                    log.line(Status::from_fmi2(c), "fmi2GetBooleanStatus")
                        .named("s", 3, "fmi2Terminated")
                        .arg("value", terminate)
                        .end();
                }
                if c != 0 {
                    terminate = 0;
                }
            }
            return Ok(if terminate != 0 {
                StepOutcome::Terminated {
                    last_successful_time: last,
                }
            } else {
                StepOutcome::Discarded {
                    last_successful_time: last,
                }
            });
        }
        if status == Status::Pending {
            // Asynchronous stepping is not requested by cosim; cancel it.
            if let Some(cancel) = self.lib.functions.cancel_step {
                // SAFETY: component is live.
                let c = unsafe { cancel(self.component) };
                if let Some(log) = &self.call_log {
                    log_call(log, c, "fmi2CancelStep");
                }
            }
        }
        self.check("fmi2DoStep", code)?;
        self.time = t + h;
        Ok(StepOutcome::Completed)
    }

    fn state_fn<T>(&self, f: Option<T>, function: &'static str) -> Result<T> {
        if !self.caps.can_get_and_set_fmu_state {
            return Err(
                self.unsupported(function, "the FMU declares canGetAndSetFMUstate=\"false\"")
            );
        }
        f.ok_or_else(|| self.unsupported(function, "the shared library does not export it"))
    }

    fn slot(&self, h: StateHandle, function: &'static str) -> Result<usize> {
        if h.instance_id == self.id && h.slot < self.states.len() && !self.states[h.slot].is_null()
        {
            Ok(h.slot)
        } else {
            Err(FmiError::InvalidArgument {
                instance: self.name.clone(),
                function,
                reason: "the state handle does not belong to this instance or was freed".into(),
            })
        }
    }

    /// `fmi2GetFMUstate`: saves the state into a new slot, or overwrites
    /// `reuse` (no allocation in the FMU when it supports overwriting).
    pub fn get_fmu_state(&mut self, reuse: Option<StateHandle>) -> Result<StateHandle> {
        self.alive("fmi2GetFMUstate")?;
        let f = self.state_fn(self.lib.functions.get_fmu_state, "fmi2GetFMUstate")?;
        let slot = match reuse {
            Some(h) => self.slot(h, "fmi2GetFMUstate")?,
            None => {
                self.states.push(std::ptr::null_mut());
                self.states.len() - 1
            }
        };
        let mut state = self.states[slot];
        // SAFETY: component is live; `state` is null or a state this
        // instance obtained earlier, which the FMU may overwrite.
        let code = unsafe { f(self.component, &mut state) };
        self.states[slot] = state;
        if let Some(log) = &self.call_log {
            log_state(log, code, "fmi2GetFMUstate", state);
        }
        self.check("fmi2GetFMUstate", code)?;
        Ok(StateHandle {
            instance_id: self.id,
            slot,
        })
    }

    /// `fmi2SetFMUstate`.
    pub fn set_fmu_state(&mut self, h: StateHandle) -> Result<()> {
        self.alive("fmi2SetFMUstate")?;
        let f = self.state_fn(self.lib.functions.set_fmu_state, "fmi2SetFMUstate")?;
        let slot = self.slot(h, "fmi2SetFMUstate")?;
        // SAFETY: component is live and the state was obtained from it.
        let code = unsafe { f(self.component, self.states[slot]) };
        if let Some(log) = &self.call_log {
            log_state(log, code, "fmi2SetFMUstate", self.states[slot]);
        }
        self.check("fmi2SetFMUstate", code)?;
        // States are saved while stepping: a restore (also the standard's
        // way out of Error) puts the instance back there.
        self.phase = Phase::Stepping;
        Ok(())
    }

    /// `fmi2FreeFMUstate`.
    pub fn free_fmu_state(&mut self, h: StateHandle) -> Result<()> {
        self.alive("fmi2FreeFMUstate")?;
        let f = self.state_fn(self.lib.functions.free_fmu_state, "fmi2FreeFMUstate")?;
        let slot = self.slot(h, "fmi2FreeFMUstate")?;
        let mut state = self.states[slot];
        // SAFETY: component is live and the state was obtained from it.
        let code = unsafe { f(self.component, &mut state) };
        if let Some(log) = &self.call_log {
            log_state(log, code, "fmi2FreeFMUstate", self.states[slot]);
        }
        self.states[slot] = std::ptr::null_mut();
        self.check("fmi2FreeFMUstate", code).map(|_| ())
    }

    /// `fmi2SerializedFMUstateSize` + `fmi2SerializeFMUstate`.
    pub fn serialize_fmu_state(&mut self, h: StateHandle) -> Result<Vec<u8>> {
        self.alive("fmi2SerializeFMUstate")?;
        if !self.caps.can_serialize_fmu_state {
            return Err(self.unsupported(
                "fmi2SerializeFMUstate",
                "the FMU declares canSerializeFMUstate=\"false\"",
            ));
        }
        let size_fn = self.state_fn(
            self.lib.functions.serialized_fmu_state_size,
            "fmi2SerializedFMUstateSize",
        )?;
        let ser_fn = self.state_fn(
            self.lib.functions.serialize_fmu_state,
            "fmi2SerializeFMUstate",
        )?;
        let slot = self.slot(h, "fmi2SerializeFMUstate")?;
        let mut size = 0usize;
        // SAFETY: component is live and the state was obtained from it.
        let code = unsafe { size_fn(self.component, self.states[slot], &mut size) };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi2(code), "fmi2SerializedFMUstateSize")
                .ptr("FMUstate", self.states[slot])
                .arg("size", size)
                .end();
        }
        self.check("fmi2SerializedFMUstateSize", code)?;
        let mut buf = vec![0u8; size];
        // SAFETY: buf has exactly `size` bytes as the FMU asked.
        let code = unsafe { ser_fn(self.component, self.states[slot], buf.as_mut_ptr(), size) };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi2(code), "fmi2SerializeFMUstate")
                .ptr("FMUstate", self.states[slot])
                .ptr("serializedState", buf.as_ptr().cast())
                .arg("size", size)
                .end();
        }
        self.check("fmi2SerializeFMUstate", code)?;
        Ok(buf)
    }

    /// `fmi2DeSerializeFMUstate` into a new slot.
    pub fn deserialize_fmu_state(&mut self, bytes: &[u8]) -> Result<StateHandle> {
        self.alive("fmi2DeSerializeFMUstate")?;
        if !self.caps.can_serialize_fmu_state {
            return Err(self.unsupported(
                "fmi2DeSerializeFMUstate",
                "the FMU declares canSerializeFMUstate=\"false\"",
            ));
        }
        let f = self.state_fn(
            self.lib.functions.deserialize_fmu_state,
            "fmi2DeSerializeFMUstate",
        )?;
        let mut state: FmuState = std::ptr::null_mut();
        // SAFETY: bytes is a valid buffer of bytes.len() bytes.
        let code = unsafe { f(self.component, bytes.as_ptr(), bytes.len(), &mut state) };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi2(code), "fmi2DeSerializeFMUstate")
                .ptr("serializedState", bytes.as_ptr().cast())
                .arg("size", bytes.len())
                .ptr("FMUstate", state)
                .end();
        }
        self.check("fmi2DeSerializeFMUstate", code)?;
        self.states.push(state);
        Ok(StateHandle {
            instance_id: self.id,
            slot: self.states.len() - 1,
        })
    }

    /// `fmi2SetRealInputDerivatives` for one derivative `order` (>= 1) of
    /// all `vrs`.
    pub fn set_real_input_derivatives(
        &mut self,
        vrs: &[u32],
        order: i32,
        values: &[f64],
    ) -> Result<()> {
        const F: &str = "fmi2SetRealInputDerivatives";
        check_len(&self.name, F, vrs.len(), values.len())?;
        self.alive(F)?;
        if !self.caps.can_interpolate_inputs {
            return Err(self.unsupported(F, "the FMU declares canInterpolateInputs=\"false\""));
        }
        let f = self
            .lib
            .functions
            .set_real_input_derivatives
            .ok_or_else(|| self.unsupported(F, "the shared library does not export it"))?;
        self.int_scratch.clear();
        self.int_scratch.resize(vrs.len(), order);
        // SAFETY: vrs, orders and values all have vrs.len() elements.
        let code = unsafe {
            f(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                self.int_scratch.as_ptr(),
                values.as_ptr(),
            )
        };
        if let Some(log) = &self.call_log {
            log_derivatives(log, code, F, vrs, &self.int_scratch, values);
        }
        self.check(F, code).map(|_| ())
    }

    /// `fmi2GetRealOutputDerivatives` for one derivative `order` (>= 1).
    pub fn get_real_output_derivatives(
        &mut self,
        vrs: &[u32],
        order: i32,
        values: &mut [f64],
    ) -> Result<()> {
        const F: &str = "fmi2GetRealOutputDerivatives";
        check_len(&self.name, F, vrs.len(), values.len())?;
        self.alive(F)?;
        if order < 1 || order as u32 > self.caps.max_output_derivative_order {
            return Err(self.unsupported(
                F,
                &format!(
                    "order {order} requested, the FMU declares maxOutputDerivativeOrder={}",
                    self.caps.max_output_derivative_order
                ),
            ));
        }
        let f = self
            .lib
            .functions
            .get_real_output_derivatives
            .ok_or_else(|| self.unsupported(F, "the shared library does not export it"))?;
        self.int_scratch.clear();
        self.int_scratch.resize(vrs.len(), order);
        // SAFETY: vrs, orders and values all have vrs.len() elements.
        let code = unsafe {
            f(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                self.int_scratch.as_ptr(),
                values.as_mut_ptr(),
            )
        };
        if let Some(log) = &self.call_log {
            log_derivatives(log, code, F, vrs, &self.int_scratch, values);
        }
        self.check(F, code).map(|_| ())
    }

    /// `fmi2GetDirectionalDerivative`: `sensitivity = d(unknowns)/d(knowns) * seed`.
    pub fn get_directional_derivative(
        &mut self,
        unknowns: &[u32],
        knowns: &[u32],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> Result<()> {
        const F: &str = "fmi2GetDirectionalDerivative";
        check_len(&self.name, F, knowns.len(), seed.len())?;
        check_len(&self.name, F, unknowns.len(), sensitivity.len())?;
        self.alive(F)?;
        if !self.caps.provides_directional_derivative {
            return Err(self.unsupported(
                F,
                "the FMU declares providesDirectionalDerivative=\"false\"",
            ));
        }
        let f = self
            .lib
            .functions
            .get_directional_derivative
            .ok_or_else(|| self.unsupported(F, "the shared library does not export it"))?;
        // SAFETY: each pointer/length pair was checked above.
        let code = unsafe {
            f(
                self.component,
                unknowns.as_ptr(),
                unknowns.len(),
                knowns.as_ptr(),
                knowns.len(),
                seed.as_ptr(),
                sensitivity.as_mut_ptr(),
            )
        };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi2(code), F)
                .vrs("vUnknown_ref", VrKind::Real, unknowns)
                .arg("nUnknown", unknowns.len())
                .vrs("vKnown_ref", VrKind::Real, knowns)
                .arg("nKnown", knowns.len())
                .values("dvKnown", seed)
                .values("dvUnknown", sensitivity)
                .end();
        }
        self.check(F, code).map(|_| ())
    }
}

type SetRealFn = unsafe extern "C" fn(Component, *const Vr, usize, *const f64) -> Fmi2Status;
type GetRealFn = unsafe extern "C" fn(Component, *const Vr, usize, *mut f64) -> Fmi2Status;
type DoStepFn = unsafe extern "C" fn(Component, f64, f64, Fmi2Boolean) -> Fmi2Status;

/// The held step of one instance ([`Fmi2Instance::set_step_get_real`])
/// with everything it needs bound once, for a run of macro steps that make
/// nothing but these calls: the function pointers, the component, the
/// value references and the value arrays, their lengths checked when it
/// is made ([`Fmi2Instance::held_step`]). Made only for an instance that
/// is alive and logs no calls, so a step tests nothing but the statuses:
/// every status but OK goes out of line to the instance's own checks,
/// which give the same logs and errors as its other calls.
pub struct Fmi2HeldStep<'a> {
    component: Component,
    set_real: SetRealFn,
    do_step: DoStepFn,
    get_real: GetRealFn,
    in_vrs: &'a [u32],
    u: &'a mut [f64],
    out_vrs: &'a [u32],
    /// The two buffers the outputs are read into, by turns (a step's
    /// `side`): the other one keeps the values the step before read.
    y: [&'a mut [f64]; 2],
    no_set_prior: Fmi2Boolean,
    instance: &'a mut Fmi2Instance,
    /// The call at which the last step that did not complete stopped, and
    /// what it returned (boxed: the bound steps of a run lie side by side,
    /// and a step reads all but this).
    failure: Option<Box<(StepCall, Result<StepOutcome>)>>,
}

impl Fmi2Instance {
    /// This instance's held step: `fmi2SetReal` of `u` on `in_vrs` (none
    /// without inputs), `fmi2DoStep` and `fmi2GetReal` of `out_vrs` into
    /// one of `y` (none without outputs), bound for many steps
    /// ([`BoundStep::step`](crate::BoundStep::step)). `None` when the lengths differ, the
    /// instance logs its calls (the log goes through its other calls) or
    /// can take no call after a Fatal status.
    pub fn held_step<'a>(&'a mut self, values: HeldValues<'a>) -> Option<Fmi2HeldStep<'a>> {
        let HeldValues {
            in_vrs,
            u,
            out_vrs,
            y,
            no_set_prior,
        } = values;
        if in_vrs.len() != u.len()
            || y.iter().any(|y| y.len() != out_vrs.len())
            || self.call_log.is_some()
            || self.phase == Phase::Fatal
        {
            return None;
        }
        let f = &self.lib.functions;
        Some(Fmi2HeldStep {
            component: self.component,
            set_real: f.set_real,
            do_step: f.do_step,
            get_real: f.get_real,
            in_vrs,
            u,
            out_vrs,
            y,
            no_set_prior: c_int::from(no_set_prior),
            instance: self,
            failure: None,
        })
    }
}

impl crate::instance::BoundStep for Fmi2HeldStep<'_> {
    /// The values set as inputs by [`BoundStep::step`](crate::BoundStep::step).
    #[inline(always)]
    fn inputs_mut(&mut self) -> &mut [f64] {
        self.u
    }

    /// The outputs a step on `side` read.
    #[inline(always)]
    fn outputs(&self, side: usize) -> &[f64] {
        self.y[side & 1]
    }

    /// Both output buffers, `side` 0 first.
    fn output_buffers(&mut self) -> (&mut [f64], &mut [f64]) {
        let [a, b] = &mut self.y;
        (a, b)
    }

    /// A step sets inputs (`fmi2SetReal`), and reads outputs
    /// (`fmi2GetReal`).
    fn calls_set_get(&self) -> (bool, bool) {
        (!self.in_vrs.is_empty(), !self.out_vrs.is_empty())
    }

    /// One step from `t` by `h`: the calls, checks and errors of
    /// [`Fmi2Instance::set_step_get_real`] (`mark` is told of each call
    /// before it is made, and of [`StepCall::Completed`]), the outputs
    /// read into the buffer of `side` (0 or 1). `true` when the
    /// step completed; else [`BoundStep::take_failure`](crate::BoundStep::take_failure) says how it
    /// ended. The instance's time (that of its errors) is set where a
    /// step does not complete, and by [`BoundStep::reached`](crate::BoundStep::reached) after
    /// steps that do: `since` is the end of the instance's last step as it
    /// has it (`t + h` of that step, which is not always this step's `t`
    /// to the last bit), the time of an error of `fmi2SetReal`; NaN: the
    /// time the instance has. `check` is given the values read, once the
    /// step completed (no call where it reads none): its `false` makes
    /// the step's `false`, with no failure recorded
    /// ([`BoundStep::failed`](crate::BoundStep::failed)).
    #[inline(always)]
    fn step(
        &mut self,
        side: usize,
        t: f64,
        h: f64,
        since: f64,
        mut mark: impl FnMut(StepCall),
        check: impl FnOnce(&[f64]) -> bool,
    ) -> bool {
        if !self.in_vrs.is_empty() {
            mark(StepCall::SetInputs);
            // SAFETY: the component is live (the instance is borrowed for as
            // long as self lives, and was alive when self was made: only a
            // status taken out of line ends it, and that ends the step);
            // in_vrs and u have the same length (checked in held_step).
            let code = unsafe {
                (self.set_real)(
                    self.component,
                    self.in_vrs.as_ptr(),
                    self.in_vrs.len(),
                    self.u.as_ptr(),
                )
            };
            if code != 0 && !self.reals_returned(StepCall::SetInputs, code, since, side) {
                return false;
            }
        }
        mark(StepCall::DoStep);
        // SAFETY: the component is live (as above).
        let code = unsafe { (self.do_step)(self.component, t, h, self.no_set_prior) };
        if code != 0 && !self.do_step_returned(code, t, h) {
            return false;
        }
        if !self.out_vrs.is_empty() {
            mark(StepCall::GetOutputs);
            // SAFETY: the component is live (as above); out_vrs and both
            // buffers of y have the same length (checked in held_step).
            let code = unsafe {
                (self.get_real)(
                    self.component,
                    self.out_vrs.as_ptr(),
                    self.out_vrs.len(),
                    self.y[side & 1].as_mut_ptr(),
                )
            };
            if code != 0 && !self.get_returned(code, t, h, side) {
                return false;
            }
            mark(StepCall::Completed);
            return check(self.y[side & 1]);
        }
        mark(StepCall::Completed);
        true
    }

    /// After steps that completed, the last one at `t`: the instance's
    /// time.
    fn reached(&mut self, t: f64) {
        self.instance.time = t;
    }

    fn failed(&self) -> bool {
        self.failure.is_some()
    }

    /// How the last step that did not complete ended: the call it stopped
    /// at ([`StepCall::SetInputs`], [`StepCall::DoStep`] or
    /// [`StepCall::GetOutputs`]) and its error, or the outcome of a
    /// `doStep` that did not reach its end.
    fn take_failure(&mut self) -> (StepCall, Result<StepOutcome>) {
        self.failure
            .take()
            .map_or((StepCall::Completed, Ok(StepOutcome::Completed)), |f| *f)
    }
}

impl Fmi2HeldStep<'_> {
    /// `fmi2SetReal` (`call` [`StepCall::SetInputs`]) or `fmi2GetReal`
    /// (into the buffer of `side`) returned `code`, not OK, at time `t`
    /// (NaN: the instance's): `true` when the step goes on (a Warning).
    #[cold]
    #[inline(never)]
    fn reals_returned(&mut self, call: StepCall, code: Fmi2Status, t: f64, side: usize) -> bool {
        let (function, vrs, values) = if call == StepCall::SetInputs {
            ("fmi2SetReal", self.in_vrs, &*self.u)
        } else {
            ("fmi2GetReal", self.out_vrs, &*self.y[side & 1])
        };
        if !t.is_nan() {
            self.instance.time = t;
        }
        match self.instance.reals_returned(function, code, vrs, values) {
            Ok(()) => true,
            Err(e) => {
                self.failure = Some(Box::new((call, Err(e))));
                false
            }
        }
    }

    /// `fmi2GetReal` of the outputs into the buffer of `side`, after the
    /// step from `t` by `h`, returned `code`, not OK (its time, `t + h`,
    /// is reckoned here, out of the loop that steps).
    #[cold]
    #[inline(never)]
    fn get_returned(&mut self, code: Fmi2Status, t: f64, h: f64, side: usize) -> bool {
        self.reals_returned(StepCall::GetOutputs, code, t + h, side)
    }

    /// `fmi2DoStep` returned `code`, not OK: `true` when the step
    /// completed all the same (a Warning).
    #[cold]
    #[inline(never)]
    fn do_step_returned(&mut self, code: Fmi2Status, t: f64, h: f64) -> bool {
        // (The time of an error in the step is its start.)
        self.instance.time = t;
        let outcome = self
            .instance
            .do_step_returned(code, t, h, self.no_set_prior != 0);
        if matches!(outcome, Ok(StepOutcome::Completed)) {
            return true;
        }
        self.failure = Some(Box::new((StepCall::DoStep, outcome)));
        false
    }
}

impl Drop for Fmi2Instance {
    fn drop(&mut self) {
        if self.phase == Phase::Fatal {
            // The standard forbids every call after Fatal, even freeing.
            return;
        }
        if let Some(free) = self.lib.functions.free_fmu_state {
            for state in &mut self.states {
                if !state.is_null() {
                    let handle = *state;
                    // SAFETY: the state was obtained from this live component.
                    let code = unsafe { free(self.component, state) };
                    if let Some(log) = &self.call_log {
                        log_state(log, code, "fmi2FreeFMUstate", handle);
                    }
                }
            }
        }
        // SAFETY: the component is live and is not used after this call; the
        // boxed callbacks outlive it (fields drop after this function).
        unsafe { (self.lib.functions.free_instance)(self.component) };
        if let Some(log) = &self.call_log {
            // A void function: logged as OK once it returned, as fmusim does.
            log.call(Status::Ok, "fmi2FreeInstance");
        }
    }
}

#[cfg(test)]
#[path = "fmi2_logger_tests.rs"]
mod logger_tests;
