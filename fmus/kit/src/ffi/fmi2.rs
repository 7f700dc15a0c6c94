//! FMI 2.0 functions (called by the exports of
//! [`export_fmi!`](crate::export_fmi)). State masks follow the FMI 2.0
//! co-simulation state machine (section 4.2.4) and, for the functions both
//! interfaces have, the Model Exchange one (section 3.2.3); the Model
//! Exchange functions are `super::model_exchange`'s.

use std::ffi::{CString, c_char, c_int, c_void};

use super::model_exchange::{self as me, NO_ME};
use super::shared::{self, FMI2, Seeded, simple, status_call};
use super::{c_string, cstr, free, guard, register, slice, slice_mut, write_out};
use crate::caps::{FmiVersion, ModelSource};
use crate::instance::{Fail, Instance, Interface, LogSink, MeCall, Mode, R, Status};
use crate::model::VarType;

/// `fmi2CallbackLogger`: C-variadic.
pub type Logger = unsafe extern "C" fn(
    env: *mut c_void,
    instance_name: *const c_char,
    status: c_int,
    category: *const c_char,
    message: *const c_char,
    ...
);

/// `fmi2CallbackFunctions`.
#[repr(C)]
#[derive(Debug)]
pub struct CallbackFunctions {
    /// `logger`.
    pub logger: Option<Logger>,
    /// `allocateMemory` (not used: the kit allocates with Rust's allocator).
    pub allocate_memory: Option<unsafe extern "C" fn(usize, usize) -> *mut c_void>,
    /// `freeMemory` (not used).
    pub free_memory: Option<unsafe extern "C" fn(*mut c_void)>,
    /// `stepFinished` (not used: no asynchronous steps).
    pub step_finished: Option<unsafe extern "C" fn(*mut c_void, c_int)>,
    /// `componentEnvironment`.
    pub component_environment: *mut c_void,
}

const INST: u32 = Mode::Instantiated.bit();
const INIT: u32 = Mode::Initialization.bit();
const STEP: u32 = Mode::StepComplete.bit();
const FAILED: u32 = Mode::StepFailed.bit();
const TERM: u32 = Mode::Terminated.bit();
const ERR: u32 = Mode::Error.bit();
/// Model Exchange's Event Mode and Continuous-Time Mode (FMI 2.0 sec. 3.2.3).
const EVENT: u32 = Mode::EventMode.bit();
const CONT: u32 = Mode::ContinuousTimeMode.bit();

const M_ANY: u32 = INST | INIT | STEP | FAILED | TERM | ERR | EVENT | CONT;
const M_SETUP: u32 = INST;
const M_EXIT: u32 = INIT;
const M_TERMINATE: u32 = STEP | FAILED | EVENT | CONT;
const M_GET: u32 = INIT | STEP | FAILED | TERM | ERR | EVENT | CONT;
/// Which variable in which state: `Instance::check_settable`.
const M_SET: u32 = INST | INIT | STEP | EVENT | CONT;
const M_STATE: u32 = M_ANY;
const M_DIRDER: u32 = INIT | STEP | FAILED | TERM | ERR | EVENT | CONT;
const M_IN_DER: u32 = INST | INIT | STEP;
const M_OUT_DER: u32 = STEP | FAILED | TERM | ERR;
const M_DOSTEP: u32 = STEP;
const M_STATUS: u32 = STEP | FAILED | TERM;

/// The importer's logger, bound to one instance.
struct Callback {
    logger: Logger,
    env: *mut c_void,
    name: CString,
}

// SAFETY: the environment pointer is only handed back to the importer's own
// logger; FMI 2.0 lets the importer call an instance from any thread as long
// as calls are not concurrent, which the instance mutex enforces.
unsafe impl Send for Callback {}

impl Callback {
    fn log(&self, status: Status, category: &str, message: &str) {
        let category = c_string(category);
        let message = c_string(message);
        // SAFETY: the logger comes from the importer's callback struct; the
        // message goes in as the argument of a "%s" format, never as a format.
        unsafe {
            (self.logger)(
                self.env,
                self.name.as_ptr(),
                status as c_int,
                category.as_ptr(),
                c"%s".as_ptr(),
                message.as_ptr(),
            );
        }
    }
}

fn sink(functions: &CallbackFunctions, name: &str, logging_on: bool) -> LogSink {
    let logger = functions.logger.map(|logger| {
        let cb = Callback {
            logger,
            env: functions.component_environment,
            name: c_string(name),
        };
        Box::new(move |s: Status, c: &str, m: &str| cb.log(s, c, m)) as crate::instance::LogFn
    });
    LogSink::new(logger, FmiVersion::Fmi2, logging_on)
}

/// `fmi2GetTypesPlatform`.
///
/// # Safety
/// None: no arguments (unsafe only for the uniform export macro).
pub unsafe fn get_types_platform() -> *const c_char {
    c"default".as_ptr()
}

/// `fmi2GetVersion`.
///
/// # Safety
/// None: no arguments (unsafe only for the uniform export macro).
pub unsafe fn get_version() -> *const c_char {
    c"2.0".as_ptr()
}

/// `fmi2SetDebugLogging`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_debug_logging(
    c: *mut c_void,
    on: c_int,
    n: usize,
    cats: *const *const c_char,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::set_debug_logging(c, "fmi2SetDebugLogging", M_ANY, on != 0, (cats, n)) }
}

/// `fmi2Instantiate`.
///
/// # Safety
/// FMI calling convention.
#[allow(clippy::too_many_arguments)]
pub unsafe fn instantiate(
    models: impl ModelSource,
    name: *const c_char,
    fmu_type: c_int,
    guid: *const c_char,
    resource_location: *const c_char,
    functions: *const CallbackFunctions,
    _visible: c_int,
    logging_on: c_int,
) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        if functions.is_null() || !functions.is_aligned() {
            return std::ptr::null_mut();
        }
        // SAFETY: non-NULL and aligned; the importer passes a valid struct.
        let functions = unsafe { &*functions };
        // SAFETY: FMI calling convention (NUL-terminated strings or NULL).
        let name_arg = unsafe { cstr(name, "instanceName") };
        let name = name_arg.as_ref().map_or("?", |n| *n);
        let sink = sink(functions, name, logging_on != 0);
        let refuse = |msg: String| {
            sink.log(Status::Error, &format!("fmi2Instantiate: {msg}"));
            std::ptr::null_mut()
        };
        // FMI 2.0 sec. 2.1.5: "It is not allowed to provide a null pointer
        // and this string must be non-empty".
        if let Err(e) = super::check_instance_name(name_arg) {
            return refuse(e);
        }
        let interface = match fmu_type {
            0 => Interface::ModelExchange,
            1 => Interface::CoSimulation,
            other => {
                return refuse(format!(
                    "fmuType {other} is neither fmi2ModelExchange (0) nor fmi2CoSimulation (1)"
                ));
            }
        };
        // SAFETY: as above.
        let guid = match unsafe { cstr(guid, "fmuGUID") } {
            Ok(g) => g,
            Err(e) => return refuse(e.message),
        };
        // SAFETY: as above.
        let resources = unsafe { super::resource_dir(FmiVersion::Fmi2, resource_location) };
        let (spec, caps) = match models.resolve(guid, FmiVersion::Fmi2, resources.as_deref()) {
            Ok(x) => x,
            Err(e) => return refuse(e),
        };
        let supported = match interface {
            Interface::ModelExchange => spec.has_model_exchange(),
            Interface::CoSimulation => spec.has_co_simulation(),
        };
        if !supported {
            let only = if spec.has_co_simulation() {
                "co-simulation (1)"
            } else {
                "model exchange (0)"
            };
            return refuse(format!(
                "fmuType {fmu_type} requested, but this FMU supports {only} only"
            ));
        }
        register(
            Instance::with_interface(spec, caps, FmiVersion::Fmi2, interface, name, sink),
            None,
        )
    })
}

/// `fmi2FreeInstance`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn free_instance(c: *mut c_void) {
    guard((), || {
        free(c, "fmi2FreeInstance");
    });
}

/// `fmi2SetupExperiment`: sets the start time and, with `stopTimeDefined`,
/// the stop time (steps past it are refused).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn setup_experiment(
    c: *mut c_void,
    _tol_defined: c_int,
    _tol: f64,
    start: f64,
    stop_defined: c_int,
    stop: f64,
) -> c_int {
    simple(c, "fmi2SetupExperiment", M_SETUP, |i| {
        i.setup_experiment(start, (stop_defined != 0).then_some(stop))
    })
}

/// `fmi2EnterInitializationMode`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn enter_initialization_mode(c: *mut c_void) -> c_int {
    simple(c, "fmi2EnterInitializationMode", M_SETUP, |i| {
        i.enter_initialization()
    })
}

/// `fmi2ExitInitializationMode`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn exit_initialization_mode(c: *mut c_void) -> c_int {
    simple(c, "fmi2ExitInitializationMode", M_EXIT, |i| {
        i.exit_initialization()
    })
}

/// `fmi2Terminate`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn terminate(c: *mut c_void) -> c_int {
    simple(c, "fmi2Terminate", M_TERMINATE, |i| i.terminate())
}

/// `fmi2Reset`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn reset(c: *mut c_void) -> c_int {
    simple(c, "fmi2Reset", M_ANY, |i| i.reset())
}

/// `fmi2GetReal`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_real(c: *mut c_void, vr: *const u32, nvr: usize, v: *mut f64) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe {
        shared::get_numbers(
            c,
            &FMI2,
            "fmi2GetReal",
            M_GET,
            (vr, nvr),
            (v, None),
            VarType::Real,
            |x| x,
        )
    }
}

/// `fmi2GetInteger`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_integer(c: *mut c_void, vr: *const u32, nvr: usize, v: *mut c_int) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe {
        shared::get_numbers(
            c,
            &FMI2,
            "fmi2GetInteger",
            M_GET,
            (vr, nvr),
            (v, None),
            VarType::Integer,
            |x| x as c_int,
        )
    }
}

/// `fmi2GetBoolean`: `fmi2True` (1) / `fmi2False` (0).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_boolean(c: *mut c_void, vr: *const u32, nvr: usize, v: *mut c_int) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe {
        shared::get_numbers(
            c,
            &FMI2,
            "fmi2GetBoolean",
            M_GET,
            (vr, nvr),
            (v, None),
            VarType::Boolean,
            |x| c_int::from(x != 0.0),
        )
    }
}

/// `fmi2GetString`: the returned strings are owned by the instance and
/// valid until its next `fmi2GetString` (the standard promises them until
/// the next call of any function of the instance).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_string(
    c: *mut c_void,
    vr: *const u32,
    nvr: usize,
    v: *mut *const c_char,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::get_strings(c, &FMI2, "fmi2GetString", M_GET, (vr, nvr), (v, None)) }
}

/// `fmi2SetReal`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_real(c: *mut c_void, vr: *const u32, nvr: usize, v: *const f64) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe {
        shared::set_numbers(
            c,
            &FMI2,
            "fmi2SetReal",
            M_SET,
            (vr, nvr),
            (v, None),
            |inst, vrs, vals| inst.set(vrs, VarType::Real, vals),
        )
    }
}

/// `fmi2SetInteger`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_integer(c: *mut c_void, vr: *const u32, nvr: usize, v: *const c_int) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe {
        shared::set_numbers(
            c,
            &FMI2,
            "fmi2SetInteger",
            M_SET,
            (vr, nvr),
            (v, None),
            |inst, vrs, vals| {
                let vals: Vec<f64> = vals.iter().map(|&x| f64::from(x)).collect();
                inst.set(vrs, VarType::Integer, &vals)
            },
        )
    }
}

/// `fmi2SetBoolean`: any non-zero `fmi2Boolean` is true.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_boolean(c: *mut c_void, vr: *const u32, nvr: usize, v: *const c_int) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe {
        shared::set_numbers(
            c,
            &FMI2,
            "fmi2SetBoolean",
            M_SET,
            (vr, nvr),
            (v, None),
            |inst, vrs, vals| {
                let vals: Vec<f64> = vals
                    .iter()
                    .map(|&x| crate::model::bool_value(x != 0))
                    .collect();
                inst.set(vrs, VarType::Boolean, &vals)
            },
        )
    }
}

/// `fmi2SetString`: the strings are copied (NULL or invalid UTF-8 is
/// refused, changing nothing).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_string(
    c: *mut c_void,
    vr: *const u32,
    nvr: usize,
    v: *const *const c_char,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::set_strings(c, &FMI2, "fmi2SetString", M_SET, (vr, nvr), (v, None)) }
}

/// `fmi2GetFMUstate`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_fmu_state(c: *mut c_void, s: *mut *mut c_void) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::get_fmu_state(c, &FMI2, "fmi2GetFMUstate", M_STATE, s) }
}

/// `fmi2SetFMUstate`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_fmu_state(c: *mut c_void, s: *mut c_void) -> c_int {
    shared::set_fmu_state(c, &FMI2, "fmi2SetFMUstate", M_STATE, s)
}

/// `fmi2FreeFMUstate`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn free_fmu_state(c: *mut c_void, s: *mut *mut c_void) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::free_fmu_state(c, &FMI2, "fmi2FreeFMUstate", M_STATE, s) }
}

/// `fmi2SerializedFMUstateSize`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn serialized_fmu_state_size(c: *mut c_void, s: *mut c_void, size: *mut usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::serialized_fmu_state_size(c, "fmi2SerializedFMUstateSize", M_STATE, s, size) }
}

/// `fmi2SerializeFMUstate`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn serialize_fmu_state(
    c: *mut c_void,
    s: *mut c_void,
    bytes: *mut c_char,
    size: usize,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe {
        shared::serialize_fmu_state(c, "fmi2SerializeFMUstate", M_STATE, s, (bytes.cast(), size))
    }
}

/// `fmi2DeSerializeFMUstate`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn deserialize_fmu_state(
    c: *mut c_void,
    bytes: *const c_char,
    size: usize,
    s: *mut *mut c_void,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe {
        shared::deserialize_fmu_state(
            c,
            &FMI2,
            "fmi2DeSerializeFMUstate",
            M_STATE,
            (bytes.cast(), size),
            s,
        )
    }
}

/// `fmi2GetDirectionalDerivative`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_directional_derivative(
    c: *mut c_void,
    unknowns: *const u32,
    n_unknowns: usize,
    knowns: *const u32,
    n_knowns: usize,
    dv_known: *const f64,
    dv_unknown: *mut f64,
) -> c_int {
    let arrays = Seeded {
        unknowns: (unknowns, n_unknowns, "vUnknown_ref[]"),
        knowns: (knowns, n_knowns, "vKnown_ref[]"),
        seed: (dv_known, n_knowns, "dvKnown[]"),
        sensitivity: (dv_unknown, n_unknowns, "dvUnknown[]"),
        lengths: Ok(()),
    };
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::seeded_derivative(c, "fmi2GetDirectionalDerivative", M_DIRDER, arrays, false) }
}

/// `fmi2SetRealInputDerivatives`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_real_input_derivatives(
    c: *mut c_void,
    vr: *const u32,
    nvr: usize,
    order: *const c_int,
    v: *const f64,
) -> c_int {
    simple(c, "fmi2SetRealInputDerivatives", M_IN_DER, |inst| {
        inst.require_cap(crate::instance::Cap::Interpolate)?;
        // SAFETY: FMI calling convention: arrays of length nvr.
        let (vrs, orders, vals) = unsafe {
            (
                slice(vr, nvr, "vr[]")?,
                slice(order, nvr, "order[]")?,
                slice(v, nvr, "value[]")?,
            )
        };
        inst.set_input_derivatives(vrs, orders, vals)
    })
}

/// `fmi2GetRealOutputDerivatives`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_real_output_derivatives(
    c: *mut c_void,
    vr: *const u32,
    nvr: usize,
    order: *const c_int,
    v: *mut f64,
) -> c_int {
    simple(c, "fmi2GetRealOutputDerivatives", M_OUT_DER, |inst| {
        inst.require_cap(crate::instance::Cap::OutputDerivatives)?;
        // SAFETY: FMI calling convention: arrays of length nvr.
        let (vrs, orders, out) = unsafe {
            (
                slice(vr, nvr, "vr[]")?,
                slice(order, nvr, "order[]")?,
                slice_mut(v, nvr, "value[]")?,
            )
        };
        inst.get_output_derivatives(vrs, orders, out)
    })
}

/// `fmi2DoStep`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn do_step(c: *mut c_void, t: f64, h: f64, no_set_prior: c_int) -> c_int {
    status_call(c, "fmi2DoStep", M_DOSTEP, |inst| {
        inst.step(t, h, no_set_prior != 0, None)
    })
}

/// `fmi2CancelStep`: there are no asynchronous steps to cancel (the state
/// stepInProgress, the only one that allows it, is never reached).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn cancel_step(c: *mut c_void) -> c_int {
    simple(c, "fmi2CancelStep", M_ANY, |inst| {
        Err(Fail::sequence(format!(
            "called in state {}: fmi2CancelStep is allowed in state stepInProgress only, \
             which this FMU never enters (canRunAsynchronuously=false)",
            inst.mode_name()
        )))
    })
}

const DO_STEP_STATUS: c_int = 0;
const PENDING_STATUS: c_int = 1;
const LAST_SUCCESSFUL_TIME: c_int = 2;
const TERMINATED: c_int = 3;

/// The `fmi2StatusKind` names, by value.
const KIND_NAMES: [&str; 4] = [
    "fmi2DoStepStatus",
    "fmi2PendingStatus",
    "fmi2LastSuccessfulTime",
    "fmi2Terminated",
];

/// Checks that `kind` is the status kind `fname` retrieves (FMI 2.0 sec.
/// 4.2.3: each kind has one value type: fmi2DoStepStatus fmi2Status,
/// fmi2PendingStatus fmi2String, fmi2LastSuccessfulTime fmi2Real,
/// fmi2Terminated fmi2Boolean; no kind has fmi2Integer).
fn check_kind(kind: c_int, fname: &str, expected: Option<c_int>) -> R<()> {
    let name = usize::try_from(kind).ok().and_then(|k| KIND_NAMES.get(k));
    match (name, expected) {
        (None, _) => Err(Fail::usage(format!(
            "unknown fmi2StatusKind {kind} (defined: 0 fmi2DoStepStatus, 1 fmi2PendingStatus, \
             2 fmi2LastSuccessfulTime, 3 fmi2Terminated)"
        ))),
        (Some(_), Some(e)) if e == kind => Ok(()),
        (Some(name), Some(e)) => Err(Fail::usage(format!(
            "status kind {name} ({kind}) is not retrieved with {fname}, which takes {} only",
            KIND_NAMES[e as usize]
        ))),
        (Some(name), None) => Err(Fail::usage(format!(
            "status kind {name} ({kind}) is not retrieved with {fname}: no status kind has an fmi2Integer value"
        ))),
    }
}

/// `fmi2GetStatus`: `fmi2DoStepStatus` only; gives the status the last
/// `fmi2DoStep` returned (steps are synchronous, so never `fmi2Pending`).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_status(c: *mut c_void, kind: c_int, v: *mut c_int) -> c_int {
    status_call(c, "fmi2GetStatus", M_STATUS, |inst| {
        check_kind(kind, "fmi2GetStatus", Some(DO_STEP_STATUS))?;
        // SAFETY: FMI calling convention: v points to one fmi2Status.
        unsafe { write_out(v, inst.last_step_status() as c_int, "value")? };
        Ok(Status::Ok)
    })
}

/// `fmi2GetRealStatus`: `fmi2LastSuccessfulTime` only: where the last step
/// ended (where a discarded step stopped).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_real_status(c: *mut c_void, kind: c_int, v: *mut f64) -> c_int {
    status_call(c, "fmi2GetRealStatus", M_STATUS, |inst| {
        check_kind(kind, "fmi2GetRealStatus", Some(LAST_SUCCESSFUL_TIME))?;
        // SAFETY: FMI calling convention: v points to one fmi2Real.
        unsafe { write_out(v, inst.last_successful_time(), "value")? };
        Ok(Status::Ok)
    })
}

/// `fmi2GetIntegerStatus`: no status kind has an integer value, so every
/// call is refused.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_integer_status(c: *mut c_void, kind: c_int, _v: *mut c_int) -> c_int {
    status_call(c, "fmi2GetIntegerStatus", M_STATUS, |_| {
        check_kind(kind, "fmi2GetIntegerStatus", None)?;
        Ok(Status::Ok)
    })
}

/// `fmi2GetBooleanStatus`: `fmi2Terminated` only: true after the model
/// asked to end the simulation (a step that returned `fmi2Discard`).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_boolean_status(c: *mut c_void, kind: c_int, v: *mut c_int) -> c_int {
    status_call(c, "fmi2GetBooleanStatus", M_STATUS, |inst| {
        check_kind(kind, "fmi2GetBooleanStatus", Some(TERMINATED))?;
        let terminated = c_int::from(inst.terminate_requested());
        // SAFETY: FMI calling convention: v points to one fmi2Boolean.
        unsafe { write_out(v, terminated, "value")? };
        Ok(Status::Ok)
    })
}

/// `fmi2GetStringStatus`: `fmi2PendingStatus` only, which is never
/// available (`fmi2Discard`: steps never return `fmi2Pending`).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_string_status(c: *mut c_void, kind: c_int, _v: *mut *const c_char) -> c_int {
    status_call(c, "fmi2GetStringStatus", M_STATUS, |inst| {
        check_kind(kind, "fmi2GetStringStatus", Some(PENDING_STATUS))?;
        inst.log(
            Status::Discard,
            "fmi2GetStringStatus: fmi2PendingStatus is not available: steps never return fmi2Pending",
        );
        Ok(Status::Discard)
    })
}

/// `fmi2EventInfo`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct EventInfo {
    /// `newDiscreteStatesNeeded`.
    pub new_discrete_states_needed: c_int,
    /// `terminateSimulation`.
    pub terminate_simulation: c_int,
    /// `nominalsOfContinuousStatesChanged` (always false: nominals are
    /// fixed).
    pub nominals_of_continuous_states_changed: c_int,
    /// `valuesOfContinuousStatesChanged`.
    pub values_of_continuous_states_changed: c_int,
    /// `nextEventTimeDefined`.
    pub next_event_time_defined: c_int,
    /// `nextEventTime`.
    pub next_event_time: f64,
}

/// `fmi2EnterEventMode` (Continuous-Time Mode, or Event Mode for a new
/// event instant).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn enter_event_mode(c: *mut c_void) -> c_int {
    me::enter_event_mode(c, FmiVersion::Fmi2, NO_ME)
}

/// `fmi2NewDiscreteStates` (Event Mode): the model's event update; the
/// event info is written only when the update succeeded.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn new_discrete_states(c: *mut c_void, info: *mut EventInfo) -> c_int {
    me::call(
        c,
        FmiVersion::Fmi2,
        MeCall::UpdateDiscreteStates,
        NO_ME,
        |inst| {
            // SAFETY: FMI calling convention: `info` points to one fmi2EventInfo.
            let out = unsafe { slice_mut(info, 1, "fmi2eventInfo")? };
            let u = inst.update_discrete_states()?;
            out[0] = EventInfo {
                new_discrete_states_needed: c_int::from(u.discrete_states_need_update),
                terminate_simulation: c_int::from(u.terminate_simulation),
                nominals_of_continuous_states_changed: 0,
                values_of_continuous_states_changed: c_int::from(
                    u.values_of_continuous_states_changed,
                ),
                next_event_time_defined: c_int::from(u.next_event_time.is_some()),
                next_event_time: u.next_event_time.unwrap_or(0.0),
            };
            Ok(())
        },
    )
}

/// `fmi2EnterContinuousTimeMode` (Event Mode, after the event iteration).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn enter_continuous_time_mode(c: *mut c_void) -> c_int {
    me::enter_continuous_time_mode(c, FmiVersion::Fmi2)
}

/// `fmi2CompletedIntegratorStep` (Continuous-Time Mode).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn completed_integrator_step(
    c: *mut c_void,
    no_set_prior: c_int,
    enter_event_mode: *mut c_int,
    terminate: *mut c_int,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe {
        me::completed_integrator_step(
            c,
            FmiVersion::Fmi2,
            no_set_prior != 0,
            enter_event_mode,
            terminate,
        )
    }
}

/// `fmi2SetTime` (Continuous-Time Mode).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_time(c: *mut c_void, t: f64) -> c_int {
    me::set_time(c, FmiVersion::Fmi2, t)
}

/// `fmi2SetContinuousStates` (Continuous-Time Mode).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_continuous_states(c: *mut c_void, x: *const f64, n: usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { me::set_continuous_states(c, FmiVersion::Fmi2, x, n) }
}

/// `fmi2GetDerivatives`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_derivatives(c: *mut c_void, x: *mut f64, n: usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { me::get_vector(c, FmiVersion::Fmi2, MeCall::GetDerivatives, x, n) }
}

/// `fmi2GetEventIndicators`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_event_indicators(c: *mut c_void, x: *mut f64, n: usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { me::get_vector(c, FmiVersion::Fmi2, MeCall::GetEventIndicators, x, n) }
}

/// `fmi2GetContinuousStates`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_continuous_states(c: *mut c_void, x: *mut f64, n: usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { me::get_vector(c, FmiVersion::Fmi2, MeCall::GetContinuousStates, x, n) }
}

/// `fmi2GetNominalsOfContinuousStates`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_nominals_of_continuous_states(c: *mut c_void, x: *mut f64, n: usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { me::get_vector(c, FmiVersion::Fmi2, MeCall::GetNominals, x, n) }
}
