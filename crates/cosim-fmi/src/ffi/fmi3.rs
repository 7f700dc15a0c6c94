//! FMI 3.0 Co-Simulation: the function table and a safe instance wrapper.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::{CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libloading::Library;

use super::call_log::{CallLog, LogNum, LogValue, VrKind};
use super::log::{LogContext, c_str_lossy};
use super::pool::Pool;
use super::{
    Phase, StateHandle, Status, StepCall, StepOutcome, check_len, check_values_len,
    next_instance_id,
};
use crate::error::{FmiError, Result};
use crate::instance::HeldValues;

type Instance = *mut c_void;
type Vr = u32;
type Fmi3Status = c_int;
type FmuState = *mut c_void;

/// `fmi3LogMessageCallback`.
///
/// # Safety
/// `env` is the boxed [`Environment`] of a live instance; strings are null
/// or NUL-terminated.
unsafe extern "C" fn log_message(
    env: *mut c_void,
    status: Fmi3Status,
    category: *const c_char,
    message: *const c_char,
) {
    if env.is_null() {
        return;
    }
    // SAFETY: env is the Environment owned by the instance, alive until
    // after fmi3FreeInstance.
    let log = unsafe { &(*(env as *const Environment)).log };
    // SAFETY: the FMU passes null or NUL-terminated strings (read no
    // further than the bounds).
    unsafe { log.log_c(Status::from_fmi3(status), category, message, None, false) };
}

macro_rules! fn_table {
    ($(#[$m:meta])* $name:ident { mandatory { $($mf:ident : $msym:literal : $mty:ty,)* } optional { $($of:ident : $osym:literal : $oty:ty,)* } }) => {
        $(#[$m])*
        pub(crate) struct $name {
            $(pub(crate) $mf: $mty,)*
            $(pub(crate) $of: Option<$oty>,)*
        }
        impl $name {
            fn load(lib: &Library, path: &Path) -> Result<Self> {
                Ok($name {
                    $($mf: {
                        // SAFETY: the symbol is declared with the signature
                        // the FMI 3.0 standard gives it.
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

type IntermediateUpdate =
    unsafe extern "C" fn(*mut c_void, f64, bool, bool, bool, bool, *mut bool, *mut f64);

type SetFloat64 = unsafe extern "C" fn(Instance, *const Vr, usize, *const f64, usize) -> Fmi3Status;

/// What `instanceEnvironment` points to: the FMU's logger and the inputs
/// the importer hands over in Intermediate Update Mode. Callbacks reach it
/// through a shared reference while `fmi3DoStep` runs; the instance's own
/// methods touch `intermediate` only between FMU calls.
struct Environment {
    log: LogContext,
    intermediate: RefCell<IntermediateInputs>,
    /// The FMI call log, for the calls made inside the callback.
    call_log: Option<Arc<CallLog>>,
}

/// Float inputs given to the FMU inside `fmi3DoStep` as a polynomial:
/// at each intermediate update time `s` the callback sets
/// `u(s) = sum_k taylor[i][k] (s - t0)^k / k!` (FMI 3.0 sec. 4.2.4, the
/// counterpart of FMI 2 input derivatives).
struct IntermediateInputs {
    /// The instance, once instantiated (the callback calls back into it).
    instance: Instance,
    set_float64: SetFloat64,
    /// The registered inputs; empty: intermediate update unused.
    vrs: Vec<Vr>,
    /// `[u, u', u'', u''']` per input at `t0`.
    taylor: Vec<[f64; 4]>,
    /// Any derivative non-zero (else the values set at the communication
    /// point stand and the callback sets nothing).
    varying: bool,
    t0: f64,
    scratch: Vec<f64>,
    /// Callbacks that set inputs, for tests and the summary.
    updates: u64,
    /// The first failure of `fmi3SetFloat64` inside the callback:
    /// (status, time), reported after `fmi3DoStep` returns.
    failure: Option<(Fmi3Status, f64)>,
}

/// `fmi3IntermediateUpdateCallback`: sets the registered inputs to their
/// polynomial at `time`; never asks for an early return.
///
/// # Safety
/// `env` is the boxed [`Environment`] of a live instance; the out-pointers
/// are null or valid.
unsafe extern "C" fn intermediate_update(
    env: *mut c_void,
    time: f64,
    set_requested: bool,
    _get_allowed: bool,
    _step_finished: bool,
    _can_return_early: bool,
    early_return_requested: *mut bool,
    _early_return_time: *mut f64,
) {
    if !early_return_requested.is_null() {
        // SAFETY: a valid out-pointer from the FMU.
        unsafe { *early_return_requested = false };
    }
    if env.is_null() || !set_requested {
        return;
    }
    // SAFETY: env is the Environment owned by the instance, alive until
    // after fmi3FreeInstance.
    let env = unsafe { &*(env as *const Environment) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // A callback re-entered from inside fmi3SetFloat64 finds the cell
        // borrowed and does nothing.
        let Ok(mut ii) = env.intermediate.try_borrow_mut() else {
            return;
        };
        if ii.vrs.is_empty() || !ii.varying || ii.instance.is_null() {
            return;
        }
        let ii = &mut *ii;
        let s = time - ii.t0;
        for (v, c) in ii.scratch.iter_mut().zip(&ii.taylor) {
            *v = c[0] + s * (c[1] + s * (c[2] / 2.0 + s * c[3] / 6.0));
        }
        // SAFETY: the instance is live (we are inside its fmi3DoStep);
        // both arrays have vrs.len() elements.
        let code = unsafe {
            (ii.set_float64)(
                ii.instance,
                ii.vrs.as_ptr(),
                ii.vrs.len(),
                ii.scratch.as_ptr(),
                ii.scratch.len(),
            )
        };
        ii.updates += 1;
        if let Some(log) = &env.call_log {
            log.line(Status::from_fmi3(code), "fmi3SetFloat64")
                .vrs("valueReferences", VrKind::Any, &ii.vrs)
                .arg("nValueReferences", ii.vrs.len())
                .values("values", &ii.scratch)
                .arg("nValues", ii.scratch.len())
                .end_with(&format!(
                    "in intermediate update at intermediateUpdateTime={}",
                    LogNum(time)
                ));
        }
        if code != 0 && Status::from_fmi3(code) != Status::Warning && ii.failure.is_none() {
            ii.failure = Some((code, time));
        }
    }));
}

fn_table! {
    /// The FMI 3.0 Co-Simulation functions of one shared library.
    Functions {
        mandatory {
            get_version: "fmi3GetVersion": unsafe extern "C" fn() -> *const c_char,
            set_debug_logging: "fmi3SetDebugLogging": unsafe extern "C" fn(Instance, bool, usize, *const *const c_char) -> Fmi3Status,
            instantiate_co_simulation: "fmi3InstantiateCoSimulation": unsafe extern "C" fn(*const c_char, *const c_char, *const c_char, bool, bool, bool, bool, *const Vr, usize, *mut c_void, unsafe extern "C" fn(*mut c_void, Fmi3Status, *const c_char, *const c_char), Option<IntermediateUpdate>) -> Instance,
            free_instance: "fmi3FreeInstance": unsafe extern "C" fn(Instance),
            enter_initialization_mode: "fmi3EnterInitializationMode": unsafe extern "C" fn(Instance, bool, f64, f64, bool, f64) -> Fmi3Status,
            exit_initialization_mode: "fmi3ExitInitializationMode": unsafe extern "C" fn(Instance) -> Fmi3Status,
            terminate: "fmi3Terminate": unsafe extern "C" fn(Instance) -> Fmi3Status,
            reset: "fmi3Reset": unsafe extern "C" fn(Instance) -> Fmi3Status,
            get_float64: "fmi3GetFloat64": unsafe extern "C" fn(Instance, *const Vr, usize, *mut f64, usize) -> Fmi3Status,
            set_float64: "fmi3SetFloat64": unsafe extern "C" fn(Instance, *const Vr, usize, *const f64, usize) -> Fmi3Status,
            get_int32: "fmi3GetInt32": unsafe extern "C" fn(Instance, *const Vr, usize, *mut i32, usize) -> Fmi3Status,
            set_int32: "fmi3SetInt32": unsafe extern "C" fn(Instance, *const Vr, usize, *const i32, usize) -> Fmi3Status,
            get_int64: "fmi3GetInt64": unsafe extern "C" fn(Instance, *const Vr, usize, *mut i64, usize) -> Fmi3Status,
            set_int64: "fmi3SetInt64": unsafe extern "C" fn(Instance, *const Vr, usize, *const i64, usize) -> Fmi3Status,
            get_boolean: "fmi3GetBoolean": unsafe extern "C" fn(Instance, *const Vr, usize, *mut bool, usize) -> Fmi3Status,
            set_boolean: "fmi3SetBoolean": unsafe extern "C" fn(Instance, *const Vr, usize, *const bool, usize) -> Fmi3Status,
            get_string: "fmi3GetString": unsafe extern "C" fn(Instance, *const Vr, usize, *mut *const c_char, usize) -> Fmi3Status,
            set_string: "fmi3SetString": unsafe extern "C" fn(Instance, *const Vr, usize, *const *const c_char, usize) -> Fmi3Status,
            do_step: "fmi3DoStep": unsafe extern "C" fn(Instance, f64, f64, bool, *mut bool, *mut bool, *mut bool, *mut f64) -> Fmi3Status,
        }
        optional {
            // Mandatory in FMI 3.0 but called only for structural parameters.
            enter_configuration_mode: "fmi3EnterConfigurationMode": unsafe extern "C" fn(Instance) -> Fmi3Status,
            exit_configuration_mode: "fmi3ExitConfigurationMode": unsafe extern "C" fn(Instance) -> Fmi3Status,
            get_fmu_state: "fmi3GetFMUState": unsafe extern "C" fn(Instance, *mut FmuState) -> Fmi3Status,
            set_fmu_state: "fmi3SetFMUState": unsafe extern "C" fn(Instance, FmuState) -> Fmi3Status,
            free_fmu_state: "fmi3FreeFMUState": unsafe extern "C" fn(Instance, *mut FmuState) -> Fmi3Status,
            serialized_fmu_state_size: "fmi3SerializedFMUStateSize": unsafe extern "C" fn(Instance, FmuState, *mut usize) -> Fmi3Status,
            serialize_fmu_state: "fmi3SerializeFMUState": unsafe extern "C" fn(Instance, FmuState, *mut u8, usize) -> Fmi3Status,
            deserialize_fmu_state: "fmi3DeserializeFMUState": unsafe extern "C" fn(Instance, *const u8, usize, *mut FmuState) -> Fmi3Status,
            get_directional_derivative: "fmi3GetDirectionalDerivative": unsafe extern "C" fn(Instance, *const Vr, usize, *const Vr, usize, *const f64, usize, *mut f64, usize) -> Fmi3Status,
            get_output_derivatives: "fmi3GetOutputDerivatives": unsafe extern "C" fn(Instance, *const Vr, usize, *const i32, *mut f64, usize) -> Fmi3Status,
            // Mandatory in FMI 3.0, resolved lazily so that a library
            // lacking one fails only when a variable of that type is used.
            get_float32: "fmi3GetFloat32": unsafe extern "C" fn(Instance, *const Vr, usize, *mut f32, usize) -> Fmi3Status,
            set_float32: "fmi3SetFloat32": unsafe extern "C" fn(Instance, *const Vr, usize, *const f32, usize) -> Fmi3Status,
            get_int8: "fmi3GetInt8": unsafe extern "C" fn(Instance, *const Vr, usize, *mut i8, usize) -> Fmi3Status,
            set_int8: "fmi3SetInt8": unsafe extern "C" fn(Instance, *const Vr, usize, *const i8, usize) -> Fmi3Status,
            get_uint8: "fmi3GetUInt8": unsafe extern "C" fn(Instance, *const Vr, usize, *mut u8, usize) -> Fmi3Status,
            set_uint8: "fmi3SetUInt8": unsafe extern "C" fn(Instance, *const Vr, usize, *const u8, usize) -> Fmi3Status,
            get_int16: "fmi3GetInt16": unsafe extern "C" fn(Instance, *const Vr, usize, *mut i16, usize) -> Fmi3Status,
            set_int16: "fmi3SetInt16": unsafe extern "C" fn(Instance, *const Vr, usize, *const i16, usize) -> Fmi3Status,
            get_uint16: "fmi3GetUInt16": unsafe extern "C" fn(Instance, *const Vr, usize, *mut u16, usize) -> Fmi3Status,
            set_uint16: "fmi3SetUInt16": unsafe extern "C" fn(Instance, *const Vr, usize, *const u16, usize) -> Fmi3Status,
            get_uint32: "fmi3GetUInt32": unsafe extern "C" fn(Instance, *const Vr, usize, *mut u32, usize) -> Fmi3Status,
            set_uint32: "fmi3SetUInt32": unsafe extern "C" fn(Instance, *const Vr, usize, *const u32, usize) -> Fmi3Status,
            get_uint64: "fmi3GetUInt64": unsafe extern "C" fn(Instance, *const Vr, usize, *mut u64, usize) -> Fmi3Status,
            set_uint64: "fmi3SetUInt64": unsafe extern "C" fn(Instance, *const Vr, usize, *const u64, usize) -> Fmi3Status,
            get_binary: "fmi3GetBinary": unsafe extern "C" fn(Instance, *const Vr, usize, *mut usize, *mut *const u8, usize) -> Fmi3Status,
            set_binary: "fmi3SetBinary": unsafe extern "C" fn(Instance, *const Vr, usize, *const usize, *const *const u8, usize) -> Fmi3Status,
        }
    }
}

/// Every FMI 3.0 library this process loaded (`super::pool`).
static POOL: Pool<Fmi3Library> = Pool::new();

/// A loaded FMI 3.0 shared library and its resolved functions.
pub struct Fmi3Library {
    functions: Functions,
    path: PathBuf,
    _library: Library,
}

impl std::fmt::Debug for Fmi3Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fmi3Library")
            .field("path", &self.path)
            .finish()
    }
}

impl Fmi3Library {
    /// Loads the library at `path` and resolves the FMI 3.0 functions, or
    /// takes a loaded copy of the same library (the same bytes) that no
    /// FMU uses any more. A loaded library is never unloaded
    /// (`super::pool`: an FMU's threads may outlive its instances).
    pub fn load(path: &Path) -> Result<Arc<Self>> {
        POOL.get_or_load(path, || {
            let (library, functions) = super::open_library(path, Functions::load)?;
            Ok(Fmi3Library {
                functions,
                path: path.to_path_buf(),
                _library: library,
            })
        })
    }

    /// How many copies of FMI 3.0 libraries this process has loaded (all
    /// still loaded).
    pub(crate) fn loaded_copies() -> usize {
        POOL.len()
    }

    /// The file this copy was loaded from (for a reused copy, an earlier
    /// FMU's extraction, perhaps removed since).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `fmi3GetVersion()`.
    pub fn version(&self) -> String {
        // SAFETY: no arguments; returns a static string per the standard.
        unsafe { c_str_lossy((self.functions.get_version)()) }
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
        add(f.get_fmu_state.is_some(), "fmi3GetFMUState");
        add(f.set_fmu_state.is_some(), "fmi3SetFMUState");
        add(f.free_fmu_state.is_some(), "fmi3FreeFMUState");
        add(f.serialize_fmu_state.is_some(), "fmi3SerializeFMUState");
        add(f.deserialize_fmu_state.is_some(), "fmi3DeserializeFMUState");
        add(
            f.get_directional_derivative.is_some(),
            "fmi3GetDirectionalDerivative",
        );
        add(
            f.get_output_derivatives.is_some(),
            "fmi3GetOutputDerivatives",
        );
        v
    }
}

/// Capabilities the model description declares.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fmi3Capabilities {
    /// `canGetAndSetFMUState`.
    pub can_get_and_set_fmu_state: bool,
    /// `canSerializeFMUState`.
    pub can_serialize_fmu_state: bool,
    /// `providesDirectionalDerivatives`.
    pub provides_directional_derivatives: bool,
    /// `maxOutputDerivativeOrder`.
    pub max_output_derivative_order: u32,
    /// `hasEventMode`: if set, cosim still instantiates with
    /// `eventModeUsed = false`.
    pub has_event_mode: bool,
    /// `providesIntermediateUpdate`: the intermediate update callback is
    /// passed at instantiation.
    pub provides_intermediate_update: bool,
}

/// One FMI 3.0 co-simulation instance.
pub struct Fmi3Instance {
    instance: Instance,
    lib: Arc<Fmi3Library>,
    caps: Fmi3Capabilities,
    name: String,
    id: u64,
    states: Vec<FmuState>,
    int_scratch: Vec<i32>,
    /// Booleans read as bytes (reused: no allocation per call).
    byte_scratch: Vec<u8>,
    /// Where the instance is in the FMI 3 state machine.
    phase: Phase,
    time: f64,
    /// The FMI call log (`--log-fmi-calls`), if on: one branch per call
    /// when off.
    call_log: Option<Arc<CallLog>>,
    /// Logger and intermediate inputs (the instanceEnvironment).
    env: Box<Environment>,
}

// SAFETY: an FMI 3.0 instance may be used from any thread as long as calls
// on it are not concurrent; every method takes `&mut self`.
unsafe impl Send for Fmi3Instance {}

impl std::fmt::Debug for Fmi3Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fmi3Instance")
            .field("name", &self.name)
            .finish()
    }
}

fn cstring(instance: &str, function: &'static str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| FmiError::InvalidArgument {
        instance: instance.to_string(),
        function,
        reason: format!("string contains a NUL byte: {s:?}"),
    })
}

/// Logs a typed get or set call (out of line: the hot path only tests
/// whether there is a log).
#[cold]
#[inline(never)]
fn log_values<T: LogValue>(
    log: &CallLog,
    code: Fmi3Status,
    function: &str,
    vrs: &[u32],
    values: &[T],
) {
    log.line(Status::from_fmi3(code), function)
        .vrs("valueReferences", VrKind::Any, vrs)
        .arg("nValueReferences", vrs.len())
        .values("values", values)
        .arg("nValues", values.len())
        .end();
}

/// Logs `fmi3GetString`: the strings only after a status that returns
/// them (after another, the pointers may be anything).
#[cold]
#[inline(never)]
fn log_strings(log: &CallLog, code: Fmi3Status, vrs: &[u32], ptrs: &[*const c_char]) {
    let status = Status::from_fmi3(code);
    let line = log
        .line(status, "fmi3GetString")
        .vrs("valueReferences", VrKind::Any, vrs)
        .arg("nValueReferences", vrs.len());
    let line = if status.is_success() {
        // SAFETY: after OK or Warning each pointer is null or a valid C
        // string until the next call into the FMU.
        let strings: Vec<String> = ptrs.iter().map(|&p| unsafe { c_str_lossy(p) }).collect();
        line.values("values", &strings)
    } else {
        line.arg("values", "?")
    };
    line.arg("nValues", ptrs.len()).end();
}

/// Logs `fmi3GetBinary` / `fmi3SetBinary`, each value as hexadecimal
/// digits (the values only when the call returned them).
#[cold]
#[inline(never)]
fn log_binaries<B: AsRef<[u8]>>(
    log: &CallLog,
    code: Fmi3Status,
    function: &str,
    vrs: &[u32],
    values: Option<&[B]>,
) {
    let line = log
        .line(Status::from_fmi3(code), function)
        .vrs("valueReferences", VrKind::Any, vrs)
        .arg("nValueReferences", vrs.len());
    let line = match values {
        Some(values) => {
            let hex: Vec<String> = values.iter().map(|v| hex::encode(v.as_ref())).collect();
            line.values("values", &hex)
        }
        None => line.arg("values", "?"),
    };
    line.arg("nValues", vrs.len()).end();
}

/// Logs `fmi3DoStep` with its output arguments (out of line).
#[cold]
#[inline(never)]
fn log_do_step(
    log: &CallLog,
    code: Fmi3Status,
    t: f64,
    h: f64,
    no_set_prior: bool,
    [event_handling_needed, terminate, early_return]: [bool; 3],
    last_successful_time: f64,
) {
    log.line(Status::from_fmi3(code), "fmi3DoStep")
        .num("currentCommunicationPoint", t)
        .num("communicationStepSize", h)
        .flag("noSetFMUStatePriorToCurrentPoint", no_set_prior)
        .flag("eventHandlingNeeded", event_handling_needed)
        .flag("terminateSimulation", terminate)
        .flag("earlyReturn", early_return)
        .num("lastSuccessfulTime", last_successful_time)
        .end();
}

/// Logs a call without arguments (out of line).
#[cold]
#[inline(never)]
fn log_call(log: &CallLog, code: Fmi3Status, function: &str) {
    log.call(Status::from_fmi3(code), function);
}

/// Logs a call with an FMU state argument (out of line).
#[cold]
#[inline(never)]
fn log_state(log: &CallLog, code: Fmi3Status, function: &str, state: FmuState) {
    log.line(Status::from_fmi3(code), function)
        .ptr("FMUState", state)
        .end();
}

impl Fmi3Instance {
    /// `fmi3InstantiateCoSimulation` with event mode and early return off.
    /// With a `call_log`, this call and every later one on the instance is
    /// logged there.
    pub(crate) fn instantiate(
        lib: Arc<Fmi3Library>,
        name: &str,
        token: &str,
        resources_dir: &Path,
        caps: Fmi3Capabilities,
        logging_on: bool,
        call_log: Option<Arc<CallLog>>,
    ) -> Result<Self> {
        const F: &str = "fmi3InstantiateCoSimulation";
        let c_name = cstring(name, F, name)?;
        let c_token = cstring(name, F, token)?;
        // FMI 3.0: an absolute path with a trailing separator.
        let mut resource_path = resources_dir.to_string_lossy().into_owned();
        if !resource_path.ends_with('/') {
            resource_path.push('/');
        }
        let c_resources = cstring(name, F, &resource_path)?;
        let env = Box::new(Environment {
            log: LogContext::new(name),
            intermediate: RefCell::new(IntermediateInputs {
                instance: std::ptr::null_mut(),
                set_float64: lib.functions.set_float64,
                vrs: Vec::new(),
                taylor: Vec::new(),
                varying: false,
                t0: 0.0,
                scratch: Vec::new(),
                updates: 0,
                failure: None,
            }),
            call_log: call_log.clone(),
        });
        // The callback only where the FMU declares it will call it.
        let intermediate: Option<IntermediateUpdate> = if caps.provides_intermediate_update {
            Some(intermediate_update)
        } else {
            None
        };
        // SAFETY: strings are NUL-terminated and outlive the call; the
        // environment is boxed and kept until after fmi3FreeInstance.
        let instance = unsafe {
            (lib.functions.instantiate_co_simulation)(
                c_name.as_ptr(),
                c_token.as_ptr(),
                c_resources.as_ptr(),
                false,
                logging_on,
                false,
                false,
                std::ptr::null(),
                0,
                &*env as *const Environment as *mut c_void,
                log_message,
                intermediate,
            )
        };
        if let Some(log) = &call_log {
            let status = if instance.is_null() {
                Status::Error
            } else {
                Status::Ok
            };
            let callback = intermediate.map_or(std::ptr::null(), |f| f as *const c_void);
            log.line(status, F)
                .text("instanceName", name)
                .text("instantiationToken", token)
                .text("resourcePath", &resource_path)
                .flag("visible", false)
                .flag("loggingOn", logging_on)
                .flag("eventModeUsed", false)
                .flag("earlyReturnAllowed", false)
                .values::<u32>("requiredIntermediateVariables", &[])
                .arg("nRequiredIntermediateVariables", 0)
                .ptr("intermediateUpdate", callback)
                .end();
        }
        if instance.is_null() {
            return Err(FmiError::Status {
                instance: name.to_string(),
                function: F,
                status: Status::Error,
                time: None,
                log: env.log.take_recent(),
            });
        }
        env.intermediate.borrow_mut().instance = instance;
        Ok(Fmi3Instance {
            instance,
            lib,
            caps,
            name: name.to_string(),
            id: next_instance_id(),
            states: Vec::new(),
            int_scratch: Vec::new(),
            byte_scratch: Vec::new(),
            phase: Phase::Instantiated,
            time: 0.0,
            call_log,
            env,
        })
    }

    /// Hands the float inputs `vrs` to the FMU in Intermediate Update Mode
    /// from now on: [`Fmi3Instance::set_float64`] on exactly these starts a
    /// new polynomial (derivatives zero), [`Fmi3Instance::set_input_derivatives`]
    /// sets its derivatives, and inside `fmi3DoStep` the FMU receives the
    /// polynomial's value at each intermediate update time. The FMU must
    /// declare `providesIntermediateUpdate` and `intermediateUpdate="true"`
    /// on each input (the caller checks the model description).
    pub fn use_intermediate_inputs(&mut self, vrs: &[u32]) -> Result<()> {
        if !self.caps.provides_intermediate_update {
            return Err(self.unsupported(
                "fmi3IntermediateUpdateCallback",
                "the FMU declares providesIntermediateUpdate=\"false\"",
            ));
        }
        let mut ii = self.env.intermediate.borrow_mut();
        ii.vrs = vrs.to_vec();
        ii.taylor = vec![[0.0; 4]; vrs.len()];
        ii.scratch = vec![0.0; vrs.len()];
        ii.varying = false;
        Ok(())
    }

    /// Intermediate updates that set inputs so far.
    pub fn intermediate_updates(&self) -> u64 {
        self.env.intermediate.borrow().updates
    }

    /// The `order`-th time derivative (1..=3) of the inputs registered with
    /// [`Fmi3Instance::use_intermediate_inputs`] (`vrs` must be exactly
    /// those), at the current communication point.
    pub fn set_input_derivatives(&mut self, vrs: &[u32], order: i32, values: &[f64]) -> Result<()> {
        const F: &str = "fmi3IntermediateUpdateCallback";
        check_len(&self.name, F, vrs.len(), values.len())?;
        let mut ii = self.env.intermediate.borrow_mut();
        if ii.vrs.is_empty() || ii.vrs != vrs || !(1..=3).contains(&order) {
            let reason = if ii.vrs.is_empty() {
                "FMI 3.0 co-simulation has no input derivatives; polynomial inputs go through intermediate update, not enabled for this instance".to_string()
            } else if ii.vrs != vrs {
                "input derivatives for inputs other than those registered for intermediate update"
                    .to_string()
            } else {
                format!("input derivative order {order} (1 to 3 are supported)")
            };
            drop(ii);
            return Err(self.unsupported(F, &reason));
        }
        let k = order as usize;
        for (c, &v) in ii.taylor.iter_mut().zip(values) {
            c[k] = v;
        }
        ii.varying |= values.iter().any(|&v| v != 0.0);
        Ok(())
    }

    /// The instance name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The last lines the FMU logged.
    pub fn take_recent_log(&self) -> Vec<String> {
        self.env.log.take_recent()
    }

    /// OK is the hot path (every call of every macro step): inlined, the
    /// rest out of line.
    #[inline]
    fn check(&mut self, function: &'static str, code: Fmi3Status) -> Result<Status> {
        if code == 0 {
            return Ok(Status::Ok);
        }
        self.check_not_ok(function, code)
    }

    #[cold]
    #[inline(never)]
    fn check_not_ok(&mut self, function: &'static str, code: Fmi3Status) -> Result<Status> {
        let status = Status::from_fmi3(code);
        match status {
            Status::Ok => Ok(status),
            Status::Warning => {
                tracing::warn!(target: "fmu", instance = %self.name, "{function} returned Warning");
                Ok(status)
            }
            _ => {
                match status {
                    Status::Fatal | Status::Invalid(_) => self.phase = Phase::Fatal,
                    // After Error: freeing, reset or restoring a saved state.
                    Status::Error => self.phase = Phase::Error,
                    _ => {}
                }
                Err(FmiError::Status {
                    instance: self.name.clone(),
                    function,
                    status,
                    time: Some(self.time),
                    log: self.env.log.take_recent(),
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

    /// `fmi3SetDebugLogging` with the given categories (empty: all).
    pub fn set_debug_logging(&mut self, on: bool, categories: &[&str]) -> Result<()> {
        self.alive("fmi3SetDebugLogging")?;
        let owned: Vec<CString> = categories
            .iter()
            .map(|c| cstring(&self.name, "fmi3SetDebugLogging", c))
            .collect::<Result<_>>()?;
        let ptrs: Vec<*const c_char> = owned.iter().map(|c| c.as_ptr()).collect();
        // SAFETY: instance is live; ptrs holds valid C strings.
        let code = unsafe {
            (self.lib.functions.set_debug_logging)(self.instance, on, ptrs.len(), ptrs.as_ptr())
        };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), "fmi3SetDebugLogging")
                .flag("loggingOn", on)
                .arg("nCategories", categories.len())
                .values("categories", categories)
                .end();
        }
        self.check("fmi3SetDebugLogging", code).map(|_| ())
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
                "called in state {}, expected {expected} (an importer bug: please report it)",
                self.phase.name()
            ),
        }
    }

    /// `fmi3EnterConfigurationMode` (from Instantiated): structural
    /// parameters can be set until [`Fmi3Instance::exit_configuration_mode`].
    pub fn enter_configuration_mode(&mut self) -> Result<()> {
        const F: &str = "fmi3EnterConfigurationMode";
        self.alive(F)?;
        if self.phase != Phase::Instantiated {
            return Err(self.out_of_sequence(F, "Instantiated"));
        }
        let f = self
            .lib
            .functions
            .enter_configuration_mode
            .ok_or_else(|| self.unsupported(F, "the shared library does not export it"))?;
        // SAFETY: instance is live.
        let code = unsafe { f(self.instance) };
        if let Some(log) = &self.call_log {
            log_call(log, code, F);
        }
        self.check(F, code)?;
        self.phase = Phase::Configuration;
        Ok(())
    }

    /// `fmi3ExitConfigurationMode` (back to Instantiated).
    pub fn exit_configuration_mode(&mut self) -> Result<()> {
        const F: &str = "fmi3ExitConfigurationMode";
        self.alive(F)?;
        if self.phase != Phase::Configuration {
            return Err(self.out_of_sequence(F, "Configuration Mode"));
        }
        let f = self
            .lib
            .functions
            .exit_configuration_mode
            .ok_or_else(|| self.unsupported(F, "the shared library does not export it"))?;
        // SAFETY: instance is live.
        let code = unsafe { f(self.instance) };
        if let Some(log) = &self.call_log {
            log_call(log, code, F);
        }
        self.check(F, code)?;
        self.phase = Phase::Instantiated;
        Ok(())
    }

    /// `fmi3EnterInitializationMode` (from Instantiated).
    pub fn enter_initialization_mode(
        &mut self,
        tolerance: Option<f64>,
        start_time: f64,
        stop_time: Option<f64>,
    ) -> Result<()> {
        const F: &str = "fmi3EnterInitializationMode";
        self.alive(F)?;
        if self.phase != Phase::Instantiated {
            return Err(self.out_of_sequence(F, "Instantiated"));
        }
        self.time = start_time;
        // SAFETY: instance is live.
        let code = unsafe {
            (self.lib.functions.enter_initialization_mode)(
                self.instance,
                tolerance.is_some(),
                tolerance.unwrap_or(0.0),
                start_time,
                stop_time.is_some(),
                stop_time.unwrap_or(0.0),
            )
        };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), F)
                .flag("toleranceDefined", tolerance.is_some())
                .num("tolerance", tolerance.unwrap_or(0.0))
                .num("startTime", start_time)
                .flag("stopTimeDefined", stop_time.is_some())
                .num("stopTime", stop_time.unwrap_or(0.0))
                .end();
        }
        self.check(F, code)?;
        self.phase = Phase::Initialization;
        Ok(())
    }

    /// `fmi3ExitInitializationMode` (the instance is then in Step Mode,
    /// since it was instantiated with `eventModeUsed = false`).
    pub fn exit_initialization_mode(&mut self) -> Result<()> {
        const F: &str = "fmi3ExitInitializationMode";
        self.alive(F)?;
        if self.phase != Phase::Initialization {
            return Err(self.out_of_sequence(F, "Initialization Mode"));
        }
        // SAFETY: instance is live.
        let code = unsafe { (self.lib.functions.exit_initialization_mode)(self.instance) };
        if let Some(log) = &self.call_log {
            log_call(log, code, F);
        }
        self.check(F, code)?;
        self.phase = Phase::Stepping;
        Ok(())
    }

    /// `fmi3Terminate`, where the state machine allows it (Step Mode, Step
    /// Discarded). An instance that never left Instantiated, Configuration
    /// or Initialization Mode, or that returned Error, may only be freed:
    /// it is left alone (the call returns Ok). Idempotent.
    pub fn terminate(&mut self) -> Result<()> {
        const F: &str = "fmi3Terminate";
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
        // SAFETY: instance is live.
        let code = unsafe { (self.lib.functions.terminate)(self.instance) };
        if let Some(log) = &self.call_log {
            log_call(log, code, F);
        }
        self.check(F, code)?;
        self.phase = Phase::Terminated;
        Ok(())
    }

    /// `fmi3Reset`: back to Instantiated.
    pub fn reset(&mut self) -> Result<()> {
        self.alive("fmi3Reset")?;
        // SAFETY: instance is live.
        let code = unsafe { (self.lib.functions.reset)(self.instance) };
        if let Some(log) = &self.call_log {
            log_call(log, code, "fmi3Reset");
        }
        self.check("fmi3Reset", code)?;
        self.phase = Phase::Instantiated;
        Ok(())
    }

    /// `fmi3GetFloat64` for scalar variables.
    #[inline]
    pub fn get_float64(&mut self, vrs: &[u32], values: &mut [f64]) -> Result<()> {
        self.get_typed(
            self.lib.functions.get_float64,
            "fmi3GetFloat64",
            vrs,
            values,
        )
    }

    /// `fmi3SetFloat64` for scalar variables. On the inputs registered for
    /// intermediate update, the values also start a new input polynomial.
    #[inline]
    pub fn set_float64(&mut self, vrs: &[u32], values: &[f64]) -> Result<()> {
        self.set_typed(
            self.lib.functions.set_float64,
            "fmi3SetFloat64",
            vrs,
            values,
        )?;
        let mut ii = self.env.intermediate.borrow_mut();
        if !ii.vrs.is_empty() && ii.vrs == vrs {
            for (c, &v) in ii.taylor.iter_mut().zip(values) {
                *c = [v, 0.0, 0.0, 0.0];
            }
            ii.varying = false;
        }
        Ok(())
    }

    /// `fmi3GetInt32`.
    pub fn get_int32(&mut self, vrs: &[u32], values: &mut [i32]) -> Result<()> {
        self.get_typed(self.lib.functions.get_int32, "fmi3GetInt32", vrs, values)
    }

    /// `fmi3SetInt32`.
    pub fn set_int32(&mut self, vrs: &[u32], values: &[i32]) -> Result<()> {
        self.set_typed(self.lib.functions.set_int32, "fmi3SetInt32", vrs, values)
    }

    /// `fmi3GetInt64` (also enumerations).
    pub fn get_int64(&mut self, vrs: &[u32], values: &mut [i64]) -> Result<()> {
        self.get_typed(self.lib.functions.get_int64, "fmi3GetInt64", vrs, values)
    }

    /// `fmi3SetInt64` (also enumerations).
    pub fn set_int64(&mut self, vrs: &[u32], values: &[i64]) -> Result<()> {
        self.set_typed(self.lib.functions.set_int64, "fmi3SetInt64", vrs, values)
    }

    /// A typed getter `f` of the library, called as `function`.
    #[inline]
    fn get_typed<T: LogValue>(
        &mut self,
        f: unsafe extern "C" fn(Instance, *const Vr, usize, *mut T, usize) -> Fmi3Status,
        function: &'static str,
        vrs: &[u32],
        values: &mut [T],
    ) -> Result<()> {
        check_values_len(&self.name, function, vrs.len(), values.len())?;
        self.alive(function)?;
        // SAFETY: f is the library's function of this signature; `vrs`
        // has nvr elements and `values` nValues >= nvr (checked above),
        // each passed with its own length.
        let code = unsafe {
            f(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                values.as_mut_ptr(),
                values.len(),
            )
        };
        if let Some(log) = &self.call_log {
            log_values(log, code, function, vrs, values);
        }
        self.check(function, code).map(|_| ())
    }

    /// A typed setter `f` of the library, called as `function`.
    #[inline]
    fn set_typed<T: LogValue>(
        &mut self,
        f: unsafe extern "C" fn(Instance, *const Vr, usize, *const T, usize) -> Fmi3Status,
        function: &'static str,
        vrs: &[u32],
        values: &[T],
    ) -> Result<()> {
        check_values_len(&self.name, function, vrs.len(), values.len())?;
        self.alive(function)?;
        // SAFETY: f is the library's function of this signature; `vrs`
        // has nvr elements and `values` nValues >= nvr (checked above),
        // each passed with its own length.
        let code = unsafe {
            f(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                values.as_ptr(),
                values.len(),
            )
        };
        if let Some(log) = &self.call_log {
            log_values(log, code, function, vrs, values);
        }
        self.check(function, code).map(|_| ())
    }

    /// An optional function of the library, or the error naming it.
    fn exported<F>(&self, f: Option<F>, function: &'static str) -> Result<F> {
        f.ok_or_else(|| self.unsupported(function, "the shared library does not export it"))
    }

    /// `fmi3GetFloat32`.
    pub fn get_float32(&mut self, vrs: &[u32], values: &mut [f32]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_float32, "fmi3GetFloat32")?;
        self.get_typed(f, "fmi3GetFloat32", vrs, values)
    }

    /// `fmi3SetFloat32`.
    pub fn set_float32(&mut self, vrs: &[u32], values: &[f32]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_float32, "fmi3SetFloat32")?;
        self.set_typed(f, "fmi3SetFloat32", vrs, values)
    }

    /// `fmi3GetInt8`.
    pub fn get_int8(&mut self, vrs: &[u32], values: &mut [i8]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_int8, "fmi3GetInt8")?;
        self.get_typed(f, "fmi3GetInt8", vrs, values)
    }

    /// `fmi3SetInt8`.
    pub fn set_int8(&mut self, vrs: &[u32], values: &[i8]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_int8, "fmi3SetInt8")?;
        self.set_typed(f, "fmi3SetInt8", vrs, values)
    }

    /// `fmi3GetUInt8`.
    pub fn get_uint8(&mut self, vrs: &[u32], values: &mut [u8]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_uint8, "fmi3GetUInt8")?;
        self.get_typed(f, "fmi3GetUInt8", vrs, values)
    }

    /// `fmi3SetUInt8`.
    pub fn set_uint8(&mut self, vrs: &[u32], values: &[u8]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_uint8, "fmi3SetUInt8")?;
        self.set_typed(f, "fmi3SetUInt8", vrs, values)
    }

    /// `fmi3GetInt16`.
    pub fn get_int16(&mut self, vrs: &[u32], values: &mut [i16]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_int16, "fmi3GetInt16")?;
        self.get_typed(f, "fmi3GetInt16", vrs, values)
    }

    /// `fmi3SetInt16`.
    pub fn set_int16(&mut self, vrs: &[u32], values: &[i16]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_int16, "fmi3SetInt16")?;
        self.set_typed(f, "fmi3SetInt16", vrs, values)
    }

    /// `fmi3GetUInt16`.
    pub fn get_uint16(&mut self, vrs: &[u32], values: &mut [u16]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_uint16, "fmi3GetUInt16")?;
        self.get_typed(f, "fmi3GetUInt16", vrs, values)
    }

    /// `fmi3SetUInt16`.
    pub fn set_uint16(&mut self, vrs: &[u32], values: &[u16]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_uint16, "fmi3SetUInt16")?;
        self.set_typed(f, "fmi3SetUInt16", vrs, values)
    }

    /// `fmi3GetUInt32`.
    pub fn get_uint32(&mut self, vrs: &[u32], values: &mut [u32]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_uint32, "fmi3GetUInt32")?;
        self.get_typed(f, "fmi3GetUInt32", vrs, values)
    }

    /// `fmi3SetUInt32`.
    pub fn set_uint32(&mut self, vrs: &[u32], values: &[u32]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_uint32, "fmi3SetUInt32")?;
        self.set_typed(f, "fmi3SetUInt32", vrs, values)
    }

    /// `fmi3GetUInt64`.
    pub fn get_uint64(&mut self, vrs: &[u32], values: &mut [u64]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_uint64, "fmi3GetUInt64")?;
        self.get_typed(f, "fmi3GetUInt64", vrs, values)
    }

    /// `fmi3SetUInt64`.
    pub fn set_uint64(&mut self, vrs: &[u32], values: &[u64]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_uint64, "fmi3SetUInt64")?;
        self.set_typed(f, "fmi3SetUInt64", vrs, values)
    }

    /// `fmi3GetBoolean`.
    pub fn get_boolean(&mut self, vrs: &[u32], values: &mut [bool]) -> Result<()> {
        check_values_len(&self.name, "fmi3GetBoolean", vrs.len(), values.len())?;
        self.alive("fmi3GetBoolean")?;
        // fmi3Boolean is C99 `bool`; read into bytes first so that a library
        // writing a value other than 0/1 cannot produce an invalid Rust bool.
        let mut bytes = std::mem::take(&mut self.byte_scratch);
        bytes.clear();
        bytes.resize(values.len(), 0);
        // SAFETY: `vrs` has nvr elements, `bytes` nValues = values.len() >=
        // nvr, each passed with its length; u8 has bool's layout.
        let code = unsafe {
            (self.lib.functions.get_boolean)(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                bytes.as_mut_ptr() as *mut bool,
                bytes.len(),
            )
        };
        for (v, &b) in values.iter_mut().zip(&bytes) {
            *v = b != 0;
        }
        if let Some(log) = &self.call_log {
            log_values(log, code, "fmi3GetBoolean", vrs, values);
        }
        self.byte_scratch = bytes;
        self.check("fmi3GetBoolean", code).map(|_| ())
    }

    /// `fmi3SetBoolean`.
    pub fn set_boolean(&mut self, vrs: &[u32], values: &[bool]) -> Result<()> {
        check_values_len(&self.name, "fmi3SetBoolean", vrs.len(), values.len())?;
        self.alive("fmi3SetBoolean")?;
        // SAFETY: `vrs` has nvr elements and `values` nValues >= nvr, each
        // passed with its length.
        let code = unsafe {
            (self.lib.functions.set_boolean)(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                values.as_ptr(),
                values.len(),
            )
        };
        if let Some(log) = &self.call_log {
            log_values(log, code, "fmi3SetBoolean", vrs, values);
        }
        self.check("fmi3SetBoolean", code).map(|_| ())
    }

    /// `fmi3GetString` (copied out immediately).
    pub fn get_string(&mut self, vrs: &[u32]) -> Result<Vec<String>> {
        self.alive("fmi3GetString")?;
        let mut ptrs: Vec<*const c_char> = vec![std::ptr::null(); vrs.len()];
        // SAFETY: vrs and ptrs have vrs.len() elements.
        let code = unsafe {
            (self.lib.functions.get_string)(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                ptrs.as_mut_ptr(),
                ptrs.len(),
            )
        };
        if let Some(log) = &self.call_log {
            log_strings(log, code, vrs, &ptrs);
        }
        self.check("fmi3GetString", code)?;
        // SAFETY: after OK each pointer is null or a valid C string until the
        // next call into the FMU.
        Ok(ptrs.iter().map(|&p| unsafe { c_str_lossy(p) }).collect())
    }

    /// `fmi3SetString`.
    pub fn set_string(&mut self, vrs: &[u32], values: &[&str]) -> Result<()> {
        check_values_len(&self.name, "fmi3SetString", vrs.len(), values.len())?;
        self.alive("fmi3SetString")?;
        let owned: Vec<CString> = values
            .iter()
            .map(|s| cstring(&self.name, "fmi3SetString", s))
            .collect::<Result<_>>()?;
        let ptrs: Vec<*const c_char> = owned.iter().map(|c| c.as_ptr()).collect();
        // SAFETY: vrs and ptrs have vrs.len() elements; strings outlive the call.
        let code = unsafe {
            (self.lib.functions.set_string)(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                ptrs.as_ptr(),
                ptrs.len(),
            )
        };
        if let Some(log) = &self.call_log {
            log_values(log, code, "fmi3SetString", vrs, values);
        }
        self.check("fmi3SetString", code).map(|_| ())
    }

    /// `fmi3GetBinary` (copied out immediately).
    pub fn get_binary(&mut self, vrs: &[u32]) -> Result<Vec<Vec<u8>>> {
        let f = self.exported(self.lib.functions.get_binary, "fmi3GetBinary")?;
        self.alive("fmi3GetBinary")?;
        let mut sizes = vec![0usize; vrs.len()];
        let mut ptrs: Vec<*const u8> = vec![std::ptr::null(); vrs.len()];
        // SAFETY: vrs, sizes and ptrs have vrs.len() elements each.
        let code = unsafe {
            f(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                sizes.as_mut_ptr(),
                ptrs.as_mut_ptr(),
                ptrs.len(),
            )
        };
        let returned = Status::from_fmi3(code).is_success();
        let values: Vec<Vec<u8>> = if returned {
            ptrs.iter()
                .zip(&sizes)
                .map(|(&p, &n)| {
                    if p.is_null() || n == 0 {
                        Vec::new()
                    } else {
                        // SAFETY: after OK or Warning each pointer is valid
                        // for its size until the next call into the FMU.
                        unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        if let Some(log) = &self.call_log {
            log_binaries(
                log,
                code,
                "fmi3GetBinary",
                vrs,
                returned.then_some(&values[..]),
            );
        }
        self.check("fmi3GetBinary", code).map(|_| values)
    }

    /// `fmi3SetBinary`.
    pub fn set_binary(&mut self, vrs: &[u32], values: &[&[u8]]) -> Result<()> {
        check_values_len(&self.name, "fmi3SetBinary", vrs.len(), values.len())?;
        let f = self.exported(self.lib.functions.set_binary, "fmi3SetBinary")?;
        self.alive("fmi3SetBinary")?;
        let sizes: Vec<usize> = values.iter().map(|v| v.len()).collect();
        let ptrs: Vec<*const u8> = values.iter().map(|v| v.as_ptr()).collect();
        // SAFETY: vrs, sizes and ptrs have vrs.len() elements; each pointer
        // is valid for its size for the duration of the call.
        let code = unsafe {
            f(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                sizes.as_ptr(),
                ptrs.as_ptr(),
                ptrs.len(),
            )
        };
        if let Some(log) = &self.call_log {
            log_binaries(log, code, "fmi3SetBinary", vrs, Some(values));
        }
        self.check("fmi3SetBinary", code).map(|_| ())
    }

    /// `fmi3DoStep`. Early return and Discard are reported as outcomes.
    #[inline]
    pub fn do_step(&mut self, t: f64, h: f64, no_set_prior: bool) -> Result<StepOutcome> {
        self.alive("fmi3DoStep")?;
        self.time = t;
        self.env.intermediate.borrow_mut().t0 = t;
        let mut event_handling_needed = false;
        let mut terminate = false;
        let mut early_return = false;
        let mut last_successful_time = t;
        // SAFETY: instance is live; the out-pointers point to locals.
        let code = unsafe {
            (self.lib.functions.do_step)(
                self.instance,
                t,
                h,
                no_set_prior,
                &mut event_handling_needed,
                &mut terminate,
                &mut early_return,
                &mut last_successful_time,
            )
        };
        if let Some(log) = &self.call_log {
            let flags = [event_handling_needed, terminate, early_return];
            log_do_step(log, code, t, h, no_set_prior, flags, last_successful_time);
        }
        self.do_step_outcome(code, t, h, (terminate, early_return), last_successful_time)
    }

    /// What `fmi3DoStep` from `t` by `h` returning `code` with
    /// `(terminateSimulation, earlyReturn)` and `lastSuccessfulTime` makes
    /// of the step (and of the instance's time): its error, an early
    /// return, a discarded step or the end of the simulation, or a
    /// completed step; an input that intermediate update failed to set
    /// during the step is its error.
    fn do_step_outcome(
        &mut self,
        code: Fmi3Status,
        t: f64,
        h: f64,
        (terminate, early_return): (bool, bool),
        last_successful_time: f64,
    ) -> Result<StepOutcome> {
        let status = Status::from_fmi3(code);
        if status == Status::Discard {
            return Ok(if terminate {
                StepOutcome::Terminated {
                    last_successful_time,
                }
            } else {
                StepOutcome::Discarded {
                    last_successful_time,
                }
            });
        }
        self.check("fmi3DoStep", code)?;
        if terminate {
            // terminateSimulation with OK (or Warning): the FMU completed
            // the step, or returned early, and ends the simulation.
            let end = if early_return {
                last_successful_time
            } else {
                t + h
            };
            self.time = end;
            return Ok(StepOutcome::Terminated {
                last_successful_time: end,
            });
        }
        let failure = self.env.intermediate.borrow_mut().failure.take();
        if let Some((code, at)) = failure {
            self.time = at;
            self.check("fmi3SetFloat64 (in Intermediate Update Mode)", code)?;
        }
        if early_return {
            self.time = last_successful_time;
            return Ok(StepOutcome::EarlyReturn {
                last_successful_time,
            });
        }
        self.time = t + h;
        Ok(StepOutcome::Completed)
    }

    fn state_fn<T>(&self, f: Option<T>, function: &'static str) -> Result<T> {
        if !self.caps.can_get_and_set_fmu_state {
            return Err(
                self.unsupported(function, "the FMU declares canGetAndSetFMUState=\"false\"")
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

    /// `fmi3GetFMUState`, into a new slot or overwriting `reuse`.
    pub fn get_fmu_state(&mut self, reuse: Option<StateHandle>) -> Result<StateHandle> {
        self.alive("fmi3GetFMUState")?;
        let f = self.state_fn(self.lib.functions.get_fmu_state, "fmi3GetFMUState")?;
        let slot = match reuse {
            Some(h) => self.slot(h, "fmi3GetFMUState")?,
            None => {
                self.states.push(std::ptr::null_mut());
                self.states.len() - 1
            }
        };
        let mut state = self.states[slot];
        // SAFETY: instance is live; `state` is null or one of its states.
        let code = unsafe { f(self.instance, &mut state) };
        self.states[slot] = state;
        if let Some(log) = &self.call_log {
            log_state(log, code, "fmi3GetFMUState", state);
        }
        self.check("fmi3GetFMUState", code)?;
        Ok(StateHandle {
            instance_id: self.id,
            slot,
        })
    }

    /// `fmi3SetFMUState`.
    pub fn set_fmu_state(&mut self, h: StateHandle) -> Result<()> {
        self.alive("fmi3SetFMUState")?;
        let f = self.state_fn(self.lib.functions.set_fmu_state, "fmi3SetFMUState")?;
        let slot = self.slot(h, "fmi3SetFMUState")?;
        // SAFETY: instance is live and the state came from it.
        let code = unsafe { f(self.instance, self.states[slot]) };
        if let Some(log) = &self.call_log {
            log_state(log, code, "fmi3SetFMUState", self.states[slot]);
        }
        self.check("fmi3SetFMUState", code)?;
        // States are saved while stepping: a restore (also the standard's
        // way out of Error) puts the instance back there.
        self.phase = Phase::Stepping;
        Ok(())
    }

    /// `fmi3FreeFMUState`.
    pub fn free_fmu_state(&mut self, h: StateHandle) -> Result<()> {
        self.alive("fmi3FreeFMUState")?;
        let f = self.state_fn(self.lib.functions.free_fmu_state, "fmi3FreeFMUState")?;
        let slot = self.slot(h, "fmi3FreeFMUState")?;
        let mut state = self.states[slot];
        // SAFETY: instance is live and the state came from it.
        let code = unsafe { f(self.instance, &mut state) };
        if let Some(log) = &self.call_log {
            log_state(log, code, "fmi3FreeFMUState", self.states[slot]);
        }
        self.states[slot] = std::ptr::null_mut();
        self.check("fmi3FreeFMUState", code).map(|_| ())
    }

    /// `fmi3SerializedFMUStateSize` + `fmi3SerializeFMUState`.
    pub fn serialize_fmu_state(&mut self, h: StateHandle) -> Result<Vec<u8>> {
        self.alive("fmi3SerializeFMUState")?;
        if !self.caps.can_serialize_fmu_state {
            return Err(self.unsupported(
                "fmi3SerializeFMUState",
                "the FMU declares canSerializeFMUState=\"false\"",
            ));
        }
        let size_fn = self.state_fn(
            self.lib.functions.serialized_fmu_state_size,
            "fmi3SerializedFMUStateSize",
        )?;
        let ser_fn = self.state_fn(
            self.lib.functions.serialize_fmu_state,
            "fmi3SerializeFMUState",
        )?;
        let slot = self.slot(h, "fmi3SerializeFMUState")?;
        let mut size = 0usize;
        // SAFETY: instance is live and the state came from it.
        let code = unsafe { size_fn(self.instance, self.states[slot], &mut size) };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), "fmi3SerializedFMUStateSize")
                .ptr("FMUState", self.states[slot])
                .arg("size", size)
                .end();
        }
        self.check("fmi3SerializedFMUStateSize", code)?;
        let mut buf = vec![0u8; size];
        // SAFETY: buf has exactly `size` bytes.
        let code = unsafe { ser_fn(self.instance, self.states[slot], buf.as_mut_ptr(), size) };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), "fmi3SerializeFMUState")
                .ptr("FMUState", self.states[slot])
                .ptr("serializedState", buf.as_ptr().cast())
                .arg("size", size)
                .end();
        }
        self.check("fmi3SerializeFMUState", code)?;
        Ok(buf)
    }

    /// `fmi3DeserializeFMUState` into a new slot.
    pub fn deserialize_fmu_state(&mut self, bytes: &[u8]) -> Result<StateHandle> {
        self.alive("fmi3DeserializeFMUState")?;
        if !self.caps.can_serialize_fmu_state {
            return Err(self.unsupported(
                "fmi3DeserializeFMUState",
                "the FMU declares canSerializeFMUState=\"false\"",
            ));
        }
        let f = self.state_fn(
            self.lib.functions.deserialize_fmu_state,
            "fmi3DeserializeFMUState",
        )?;
        let mut state: FmuState = std::ptr::null_mut();
        // SAFETY: bytes is a valid buffer of bytes.len() bytes.
        let code = unsafe { f(self.instance, bytes.as_ptr(), bytes.len(), &mut state) };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), "fmi3DeserializeFMUState")
                .ptr("serializedState", bytes.as_ptr().cast())
                .arg("size", bytes.len())
                .ptr("FMUState", state)
                .end();
        }
        self.check("fmi3DeserializeFMUState", code)?;
        self.states.push(state);
        Ok(StateHandle {
            instance_id: self.id,
            slot: self.states.len() - 1,
        })
    }

    /// `fmi3GetOutputDerivatives` for one derivative `order` (>= 1).
    pub fn get_output_derivatives(
        &mut self,
        vrs: &[u32],
        order: i32,
        values: &mut [f64],
    ) -> Result<()> {
        const F: &str = "fmi3GetOutputDerivatives";
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
            .get_output_derivatives
            .ok_or_else(|| self.unsupported(F, "the shared library does not export it"))?;
        self.int_scratch.clear();
        self.int_scratch.resize(vrs.len(), order);
        // SAFETY: vrs, orders and values all have vrs.len() elements.
        let code = unsafe {
            f(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                self.int_scratch.as_ptr(),
                values.as_mut_ptr(),
                values.len(),
            )
        };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), F)
                .vrs("valueReferences", VrKind::Any, vrs)
                .arg("nValueReferences", vrs.len())
                .values("orders", &self.int_scratch)
                .values("values", values)
                .arg("nValues", values.len())
                .end();
        }
        self.check(F, code).map(|_| ())
    }

    /// `fmi3GetDirectionalDerivative`.
    pub fn get_directional_derivative(
        &mut self,
        unknowns: &[u32],
        knowns: &[u32],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> Result<()> {
        const F: &str = "fmi3GetDirectionalDerivative";
        check_len(&self.name, F, knowns.len(), seed.len())?;
        check_len(&self.name, F, unknowns.len(), sensitivity.len())?;
        self.alive(F)?;
        if !self.caps.provides_directional_derivatives {
            return Err(self.unsupported(
                F,
                "the FMU declares providesDirectionalDerivatives=\"false\"",
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
                self.instance,
                unknowns.as_ptr(),
                unknowns.len(),
                knowns.as_ptr(),
                knowns.len(),
                seed.as_ptr(),
                seed.len(),
                sensitivity.as_mut_ptr(),
                sensitivity.len(),
            )
        };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), F)
                .vrs("unknowns", VrKind::Any, unknowns)
                .arg("nUnknowns", unknowns.len())
                .vrs("knowns", VrKind::Any, knowns)
                .arg("nKnowns", knowns.len())
                .values("seed", seed)
                .arg("nSeed", seed.len())
                .values("sensitivity", sensitivity)
                .arg("nSensitivity", sensitivity.len())
                .end();
        }
        self.check(F, code).map(|_| ())
    }
}

type GetFloat64 = unsafe extern "C" fn(Instance, *const Vr, usize, *mut f64, usize) -> Fmi3Status;
type DoStep = unsafe extern "C" fn(
    Instance,
    f64,
    f64,
    bool,
    *mut bool,
    *mut bool,
    *mut bool,
    *mut f64,
) -> Fmi3Status;

/// The FMI 3 counterpart of [`crate::ffi::fmi2::Fmi2HeldStep`]: one
/// instance's held step (`fmi3SetFloat64` of the inputs, `fmi3DoStep`,
/// `fmi3GetFloat64` of the outputs) bound once ([`Fmi3Instance::held_step`]).
/// Made only for an instance that is alive, logs no calls and takes its
/// inputs held (none through an intermediate update's polynomial), so a
/// step tests nothing but the statuses and the flags `fmi3DoStep`
/// returns: every status but OK, an
/// early return and the end of the simulation go out of line to the
/// instance's own checks, which give the same errors and outcomes as
/// [`Fmi3Instance::do_step`].
pub struct Fmi3HeldStep<'a> {
    instance: Instance,
    set_float64: SetFloat64,
    do_step: DoStep,
    get_float64: GetFloat64,
    in_vrs: &'a [u32],
    u: &'a mut [f64],
    out_vrs: &'a [u32],
    /// The two buffers the outputs are read into, by turns (as
    /// [`crate::ffi::fmi2::Fmi2HeldStep`]'s).
    y: [&'a mut [f64]; 2],
    no_set_prior: bool,
    owner: &'a mut Fmi3Instance,
    /// The call at which the last step that did not complete stopped, and
    /// what it returned (boxed: the bound steps of a run lie side by side,
    /// and a step reads all but this).
    failure: Option<Box<(StepCall, Result<StepOutcome>)>>,
}

impl Fmi3Instance {
    /// This instance's held step ([`Fmi3HeldStep`]): `None` when the
    /// lengths do not fit (fewer input values than value references, or
    /// other than one output value per value reference), the instance
    /// logs its calls, takes inputs as a
    /// polynomial through intermediate update, or can take no call after a
    /// Fatal status.
    pub fn held_step<'a>(&'a mut self, values: HeldValues<'a>) -> Option<Fmi3HeldStep<'a>> {
        let HeldValues {
            in_vrs,
            u,
            out_vrs,
            y,
            no_set_prior,
        } = values;
        // Inputs registered for intermediate update may be bound while
        // they are held (no polynomial: the callback sets nothing, and
        // fmi3SetFloat64 of them would only keep it so).
        let held = {
            let ii = self.env.intermediate.borrow();
            ii.vrs.is_empty() || (!ii.varying && ii.vrs == in_vrs)
        };
        // (An array input covers several values: nValues >= nvr, as
        // fmi3SetFloat64 takes them.)
        if u.len() < in_vrs.len()
            || y.iter().any(|y| y.len() != out_vrs.len())
            || self.call_log.is_some()
            || self.phase == Phase::Fatal
            || !held
        {
            return None;
        }
        let f = &self.lib.functions;
        Some(Fmi3HeldStep {
            instance: self.instance,
            set_float64: f.set_float64,
            do_step: f.do_step,
            get_float64: f.get_float64,
            in_vrs,
            u,
            out_vrs,
            y,
            no_set_prior,
            owner: self,
            failure: None,
        })
    }
}

impl crate::instance::BoundStep for Fmi3HeldStep<'_> {
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

    /// A step sets inputs, and reads outputs.
    fn calls_set_get(&self) -> (bool, bool) {
        (!self.in_vrs.is_empty(), !self.out_vrs.is_empty())
    }

    /// One step from `t` by `h`, as [`BoundStep::step`](crate::BoundStep::step)
    /// makes it (`mark` told of each call and of the completion; the
    /// outputs read into the buffer of `side` and given to `check`;
    /// `since` the time of an error of `fmi3SetFloat64`, NaN: the
    /// instance's): `true` when it completed; else
    /// [`BoundStep::take_failure`](crate::BoundStep::take_failure) says how it ended (nothing where
    /// `check` said no: [`BoundStep::failed`](crate::BoundStep::failed)).
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
            // SAFETY: the instance is live (borrowed for as long as self
            // lives, and alive when self was made: only a status taken out
            // of line ends it, and that ends the step); u has at least
            // in_vrs.len() values (checked in held_step), passed as nValues.
            let code = unsafe {
                (self.set_float64)(
                    self.instance,
                    self.in_vrs.as_ptr(),
                    self.in_vrs.len(),
                    self.u.as_ptr(),
                    self.u.len(),
                )
            };
            if code != 0 && !self.values_returned(StepCall::SetInputs, code, since) {
                return false;
            }
        }
        mark(StepCall::DoStep);
        let (mut event_handling_needed, mut terminate, mut early_return) = (false, false, false);
        let mut last_successful_time = t;
        // SAFETY: the instance is live (as above); the out-pointers point
        // to locals.
        let code = unsafe {
            (self.do_step)(
                self.instance,
                t,
                h,
                self.no_set_prior,
                &mut event_handling_needed,
                &mut terminate,
                &mut early_return,
                &mut last_successful_time,
            )
        };
        if (code != 0 || terminate || early_return)
            && !self.do_step_returned(code, t, h, (terminate, early_return), last_successful_time)
        {
            return false;
        }
        if !self.out_vrs.is_empty() {
            mark(StepCall::GetOutputs);
            let y = &mut self.y[side & 1];
            // SAFETY: the instance is live (as above); out_vrs and both
            // buffers of y have the same length (checked in held_step),
            // passed as nValues.
            let code = unsafe {
                (self.get_float64)(
                    self.instance,
                    self.out_vrs.as_ptr(),
                    self.out_vrs.len(),
                    y.as_mut_ptr(),
                    y.len(),
                )
            };
            if code != 0 && !self.get_returned(code, t, h) {
                return false;
            }
            mark(StepCall::Completed);
            return check(self.y[side & 1]);
        }
        mark(StepCall::Completed);
        true
    }

    /// After steps that completed, the last one ending at `t`: the
    /// instance's time.
    fn reached(&mut self, t: f64) {
        self.owner.time = t;
    }

    fn failed(&self) -> bool {
        self.failure.is_some()
    }

    /// How the last step that did not complete ended (as
    /// [`BoundStep::take_failure`](crate::BoundStep::take_failure)).
    fn take_failure(&mut self) -> (StepCall, Result<StepOutcome>) {
        self.failure
            .take()
            .map_or((StepCall::Completed, Ok(StepOutcome::Completed)), |f| *f)
    }
}

impl Fmi3HeldStep<'_> {
    /// `fmi3SetFloat64` (`call` [`StepCall::SetInputs`]) or
    /// `fmi3GetFloat64` returned `code`, not OK, at time `t` (NaN: the
    /// instance's): `true` when the step goes on (a Warning).
    #[cold]
    #[inline(never)]
    fn values_returned(&mut self, call: StepCall, code: Fmi3Status, t: f64) -> bool {
        let function = if call == StepCall::SetInputs {
            "fmi3SetFloat64"
        } else {
            "fmi3GetFloat64"
        };
        if !t.is_nan() {
            self.owner.time = t;
        }
        match self.owner.check(function, code) {
            Ok(_) => true,
            Err(e) => {
                self.failure = Some(Box::new((call, Err(e))));
                false
            }
        }
    }

    /// `fmi3GetFloat64` of the outputs, after the step from `t` by `h`,
    /// returned `code`, not OK (its time, `t + h`, is reckoned here, out
    /// of the loop that steps).
    #[cold]
    #[inline(never)]
    fn get_returned(&mut self, code: Fmi3Status, t: f64, h: f64) -> bool {
        self.values_returned(StepCall::GetOutputs, code, t + h)
    }

    /// `fmi3DoStep` returned `code` with `(terminateSimulation,
    /// earlyReturn)`, not a plain OK: what [`Fmi3Instance::do_step`] makes
    /// of it. `true` when the step completed all the same (a Warning).
    /// (A plain OK needs none of it: the instance's time is set by
    /// [`BoundStep::reached`](crate::BoundStep::reached), and no input is set by intermediate
    /// update while the inputs are held.)
    #[cold]
    #[inline(never)]
    fn do_step_returned(
        &mut self,
        code: Fmi3Status,
        t: f64,
        h: f64,
        (terminate, early_return): (bool, bool),
        last_successful_time: f64,
    ) -> bool {
        // (As Fmi3Instance::do_step sets it before the call.)
        self.owner.time = t;
        let outcome =
            self.owner
                .do_step_outcome(code, t, h, (terminate, early_return), last_successful_time);
        if matches!(outcome, Ok(StepOutcome::Completed)) {
            return true;
        }
        self.failure = Some(Box::new((StepCall::DoStep, outcome)));
        false
    }
}

impl Drop for Fmi3Instance {
    fn drop(&mut self) {
        if self.phase == Phase::Fatal {
            return;
        }
        if let Some(free) = self.lib.functions.free_fmu_state {
            for state in &mut self.states {
                if !state.is_null() {
                    let handle = *state;
                    // SAFETY: the state came from this live instance.
                    let code = unsafe { free(self.instance, state) };
                    if let Some(log) = &self.call_log {
                        log_state(log, code, "fmi3FreeFMUState", handle);
                    }
                }
            }
        }
        // SAFETY: the instance is live and not used after this call; the log
        // context is dropped after this function returns.
        unsafe { (self.lib.functions.free_instance)(self.instance) };
        if let Some(log) = &self.call_log {
            // A void function: logged as OK once it returned, as fmusim does.
            log.call(Status::Ok, "fmi3FreeInstance");
        }
    }
}
