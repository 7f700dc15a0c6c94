//! FMI 3.0 functions (called by the exports of
//! [`export_fmi!`](crate::export_fmi)). Co-simulation and, for models that
//! declare it, Model Exchange (the functions of `super::model_exchange`)
//! are implemented, with
//! the variable types Float64, Float32, Int8, UInt8, Int16, UInt16, Int32,
//! UInt32, Int64, UInt64, Boolean and String (Binary variables do not
//! exist: their functions answer `fmi3Error`), Clocks of Co-Simulation with
//! event mode (`crate::instance` `clocks`: `fmi3SetClock`,
//! `fmi3GetClock`, the Decimal interval and shift functions; refused by
//! FMUs without Clocks), arrays of the numeric
//! types and Boolean (`nValues` the sum of the variables' current sizes,
//! `Instance::check_value_count`), and Configuration Mode
//! for models with structural parameters, and Scheduled Execution for
//! models that declare it (`fmi3InstantiateScheduledExecution`,
//! `fmi3ActivateModelPartition`, Clock Update Mode through the importer's
//! `clockUpdate`); the functions of
//! Reconfiguration Mode are exported and answer `fmi3Error`.

use std::ffi::{c_char, c_int, c_void};

use super::intermediate::{Importer, IntermediateUpdate};
use super::model_exchange as me;
pub(crate) use super::shared::check_n;
use super::shared::{self, ERROR, FMI3, Seeded, simple};
use super::{
    cstr, free, guard, lookup, register, slice, slice_mut, with_free_instance, with_handle,
    with_instance, with_instance_cell,
};
use crate::caps::{FmiVersion, ModelSource};
use crate::instance::{Cap, Fail, Instance, Interface, LogSink, MeCall, Mode, R, Status};
use crate::model::VarType;

pub use super::intermediate::LogMessage;

const INST: u32 = Mode::Instantiated.bit();
const INIT: u32 = Mode::Initialization.bit();
const STEP: u32 = Mode::StepComplete.bit();
const DISCARDED: u32 = Mode::StepFailed.bit();
const TERM: u32 = Mode::Terminated.bit();
const ERR: u32 = Mode::Error.bit();
const CONFIG: u32 = Mode::Configuration.bit();
/// Model Exchange's Event Mode and Continuous-Time Mode (FMI 3.0 sec. 2.3.5, 3.2.1).
const EVENT: u32 = Mode::EventMode.bit();
const CONT: u32 = Mode::ContinuousTimeMode.bit();
/// Scheduled Execution's Clock Activation Mode (FMI 3.0 sec. 5.2.1).
const CLOCK_ACT: u32 = Mode::ClockActivation.bit();
/// Scheduled Execution's Clock Update Mode (FMI 3.0 sec. 5.2.2): only
/// `fmi3GetClock`, `fmi3GetInterval*` and the variable dependency
/// functions; so no other mask has it.
const CLOCK_UPD: u32 = Mode::ClockUpdate.bit();

const M_ANY: u32 = INST | INIT | STEP | DISCARDED | TERM | ERR | CONFIG | EVENT | CONT | CLOCK_ACT;
/// The FMU-state functions: any state but Configuration Mode (FMI 3.0 sec.
/// 2.3.6 lists only the structural parameters' setters and getters and
/// `fmi3ExitConfigurationMode` there, besides reset, free and logging).
const M_STATE: u32 = M_ANY & !CONFIG;
/// Getters: in Configuration Mode of structural parameters only (checked
/// by `Instance::get`).
const M_GET: u32 = INIT | STEP | DISCARDED | TERM | ERR | CONFIG | EVENT | CONT | CLOCK_ACT;
/// Setters: which variable in which state is checked by
/// `Instance::check_settable` (structural parameters in Configuration Mode
/// only, and nothing else there).
const M_SET: u32 = INST | INIT | STEP | CONFIG | EVENT | CONT | CLOCK_ACT;
const M_TERMINATE: u32 = STEP | DISCARDED | EVENT | CONT | CLOCK_ACT;
const M_DIRDER: u32 = INIT | STEP | DISCARDED | TERM | EVENT | CONT;
const M_OUT_DER: u32 = STEP | DISCARDED | TERM | ERR;

fn sink(importer: Importer, logging_on: bool) -> LogSink {
    let logger = importer.log.map(|_| {
        Box::new(move |s: Status, c: &str, m: &str| importer.log(s, c, m)) as crate::instance::LogFn
    });
    LogSink::new(logger, FmiVersion::Fmi3, logging_on)
}

fn refuse(c: *mut c_void, fname: &str, why: &str) -> c_int {
    simple(c, fname, M_ANY | Mode::Fatal.bit(), |_| {
        Err(Fail::usage(why.to_string()))
    })
}

/// `fmi3GetVersion`.
///
/// # Safety
/// None: no arguments (unsafe only for the uniform export macro).
pub unsafe fn get_version() -> *const c_char {
    c"3.0".as_ptr()
}

/// `fmi3SetDebugLogging`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_debug_logging(
    i: *mut c_void,
    on: bool,
    n: usize,
    cats: *const *const c_char,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::set_debug_logging(i, "fmi3SetDebugLogging", M_ANY, on, (cats, n)) }
}

fn refuse_instantiation(
    log: Option<LogMessage>,
    env: *mut c_void,
    logging_on: bool,
    msg: &str,
) -> *mut c_void {
    let importer = Importer {
        env,
        log,
        intermediate: None,
        clock_update: None,
    };
    sink(importer, logging_on).log(Status::Error, msg);
    std::ptr::null_mut()
}

/// `fmi3InstantiateModelExchange`: an instance of a model that declares
/// Model Exchange (NULL, with a log line, for the others).
///
/// # Safety
/// FMI calling convention.
#[allow(clippy::too_many_arguments)]
pub unsafe fn instantiate_model_exchange(
    models: impl ModelSource,
    name: *const c_char,
    token: *const c_char,
    res: *const c_char,
    _visible: bool,
    logging_on: bool,
    env: *mut c_void,
    log: Option<LogMessage>,
) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let fname = "fmi3InstantiateModelExchange";
        let bad = |m: String| refuse_instantiation(log, env, logging_on, &format!("{fname}: {m}"));
        // SAFETY: FMI calling convention (NUL-terminated strings or NULL).
        let (name, spec, caps) = match unsafe { resolve_model(models, name, token, res) } {
            Ok(x) => x,
            Err(e) => return bad(e),
        };
        if !spec.has_model_exchange() {
            return bad(if spec.has_co_simulation() {
                "this FMU supports co-simulation only".into()
            } else {
                "this FMU supports Scheduled Execution only (no <ModelExchange>: fmi3InstantiateScheduledExecution)"
                    .into()
            });
        }
        let importer = Importer {
            env,
            log,
            intermediate: None,
            clock_update: None,
        };
        let inst = Instance::with_interface(
            spec,
            caps,
            FmiVersion::Fmi3,
            Interface::ModelExchange,
            name,
            sink(importer, logging_on),
        );
        register(inst, Some(importer))
    })
}

/// What every `fmi3Instantiate*` checks first: the instance name (FMI
/// 3.0 sec. 2.3.1: "a non empty string"), the instantiation token and the
/// resource path; the model they name and its capabilities (`Err`: why it
/// is refused).
///
/// # Safety
/// FMI calling convention: `name`, `token` and `res` are NUL-terminated
/// strings or NULL.
unsafe fn resolve_model<'a>(
    models: impl ModelSource,
    name: *const c_char,
    token: *const c_char,
    res: *const c_char,
) -> Result<
    (
        &'a str,
        &'static crate::model::ModelSpec,
        crate::caps::Capabilities,
    ),
    String,
> {
    // SAFETY: as the caller guarantees.
    let name_arg = unsafe { cstr(name, "instanceName") };
    let name = name_arg.as_ref().map_or("?", |n| *n);
    super::check_instance_name(name_arg)?;
    // SAFETY: as above.
    let token = unsafe { cstr(token, "instantiationToken") }.map_err(|e| e.message)?;
    // SAFETY: as above.
    let resources = unsafe { super::resource_dir(FmiVersion::Fmi3, res) };
    let (spec, caps) = models.resolve(token, FmiVersion::Fmi3, resources.as_deref())?;
    Ok((name, spec, caps))
}

/// `fmi3InstantiateCoSimulation`.
///
/// # Safety
/// FMI calling convention.
#[allow(clippy::too_many_arguments)]
pub unsafe fn instantiate_co_simulation(
    models: impl ModelSource,
    name: *const c_char,
    token: *const c_char,
    res: *const c_char,
    _visible: bool,
    logging_on: bool,
    event_mode_used: bool,
    early_return_allowed: bool,
    required: *const u32,
    n_required: usize,
    env: *mut c_void,
    log: Option<LogMessage>,
    intermediate: Option<IntermediateUpdate>,
) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let fname = "fmi3InstantiateCoSimulation";
        let bad = |m: String| refuse_instantiation(log, env, logging_on, &format!("{fname}: {m}"));
        // SAFETY: FMI calling convention (NUL-terminated strings or NULL).
        let (name, spec, caps) = match unsafe { resolve_model(models, name, token, res) } {
            Ok(x) => x,
            Err(e) => return bad(e),
        };
        if !spec.has_co_simulation() {
            return bad(if spec.scheduled_execution_only {
                "this FMU supports Scheduled Execution only (no <CoSimulation>: fmi3InstantiateScheduledExecution)"
                    .into()
            } else {
                "this FMU supports model exchange only (no <CoSimulation>: fmi3InstantiateModelExchange)"
                    .into()
            });
        }
        if event_mode_used && !spec.event_mode {
            return bad("eventModeUsed=true, but this FMU has hasEventMode=false".into());
        }
        if n_required > 0 {
            if !caps.intermediate_update {
                return bad(
                    "requiredIntermediateVariables given, but this FMU has providesIntermediateUpdate=false"
                        .into(),
                );
            }
            // SAFETY: FMI calling convention: `required` holds `n_required` value references.
            let vrs = match unsafe { slice(required, n_required, "requiredIntermediateVariables") }
            {
                Ok(v) => v,
                Err(e) => return bad(e.message),
            };
            // Only inputs can be exchanged in Intermediate Update Mode here:
            // the FMU never allows getting intermediate variables.
            for &vr in vrs {
                match spec.variable(vr) {
                    Some(v) if v.is_continuous_real_input() => {}
                    Some(v) => {
                        return bad(format!(
                            "requiredIntermediateVariables: {} (vr {vr}) has no intermediateUpdate=\"true\" \
                             (only continuous Float64 inputs can be set in Intermediate Update Mode; \
                             intermediate variables are never readable)",
                            v.name
                        ));
                    }
                    None => {
                        return bad(format!(
                            "requiredIntermediateVariables: unknown value reference {vr}"
                        ));
                    }
                }
            }
        }
        let importer = Importer {
            env,
            log,
            intermediate,
            clock_update: None,
        };
        let mut inst = Instance::new(
            spec,
            caps,
            FmiVersion::Fmi3,
            name,
            sink(importer, logging_on),
        );
        inst.set_early_return_allowed(early_return_allowed);
        if let Err(e) = inst.set_event_mode_used(event_mode_used) {
            return bad(e.message);
        }
        register(inst, Some(importer))
    })
}

/// A `fmi3LockPreemptionCallback` / `fmi3UnlockPreemptionCallback` as
/// the instance calls it (`None` for NULL).
fn preemption_callback(p: *mut c_void) -> Option<std::sync::Arc<dyn Fn() + Send + Sync>> {
    if p.is_null() {
        return None;
    }
    // SAFETY: FMI calling convention: a non-NULL argument is a pointer to
    // a `void (*)(void)` function of the importer.
    let f: unsafe extern "C" fn() = unsafe { std::mem::transmute(p) };
    // SAFETY: the importer's function, called without arguments while the
    // instance lives (FMI 3.0 sec. 5.2.2).
    Some(std::sync::Arc::new(move || unsafe { f() }))
}

/// A `fmi3ClockUpdateCallback` (`None` for NULL).
fn clock_update_callback(p: *mut c_void) -> Option<super::intermediate::ClockUpdate> {
    if p.is_null() {
        return None;
    }
    // SAFETY: FMI calling convention: a non-NULL argument is a pointer to
    // the importer's `void (*)(fmi3InstanceEnvironment)` function.
    Some(unsafe { std::mem::transmute::<*mut c_void, super::intermediate::ClockUpdate>(p) })
}

/// `fmi3InstantiateScheduledExecution`: an instance of a model that
/// declares Scheduled Execution (`ModelSpec::scheduled_execution`), in
/// Clock Activation Mode after initialization; NULL, with a log line, for
/// the others, and when `clockUpdate` is NULL for a model with output or
/// countdown Clocks (`ModelSpec::needs_clock_update`).
/// `lockPreemption` / `unlockPreemption` are called around every model
/// partition's computation, `clockUpdate` after a partition that ticked
/// an output Clock or armed a countdown Clock (`activate_model_partition`).
///
/// # Safety
/// FMI calling convention.
#[allow(clippy::too_many_arguments)]
pub unsafe fn instantiate_scheduled_execution(
    models: impl ModelSource,
    name: *const c_char,
    token: *const c_char,
    res: *const c_char,
    _visible: bool,
    logging_on: bool,
    env: *mut c_void,
    log: Option<LogMessage>,
    clock_update: *mut c_void,
    lock: *mut c_void,
    unlock: *mut c_void,
) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let fname = "fmi3InstantiateScheduledExecution";
        let bad = |m: String| refuse_instantiation(log, env, logging_on, &format!("{fname}: {m}"));
        // SAFETY: FMI calling convention (NUL-terminated strings or NULL).
        let (name, spec, caps) = match unsafe { resolve_model(models, name, token, res) } {
            Ok(x) => x,
            Err(e) => return bad(e),
        };
        let clock_update = clock_update_callback(clock_update);
        if clock_update.is_none() && spec.needs_clock_update() {
            return bad(
                "clockUpdate is NULL, and this FMU has output or countdown Clocks: its model partitions \
                 call clockUpdate to enter Clock Update Mode (FMI 3.0 sec. 5.2.2)"
                    .into(),
            );
        }
        let importer = Importer {
            env,
            log,
            intermediate: None,
            clock_update,
        };
        let mut inst = Instance::new(
            spec,
            caps,
            FmiVersion::Fmi3,
            name,
            sink(importer, logging_on),
        );
        let preemption = crate::instance::Preemption {
            lock: preemption_callback(lock),
            unlock: preemption_callback(unlock),
        };
        if let Err(e) = inst.set_scheduled_execution(preemption) {
            return bad(e.message);
        }
        register(inst, Some(importer))
    })
}

/// `fmi3FreeInstance`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn free_instance(i: *mut c_void) {
    guard((), || free(i, "fmi3FreeInstance"));
}

/// `fmi3EnterInitializationMode`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn enter_initialization_mode(
    i: *mut c_void,
    _tol_defined: bool,
    _tol: f64,
    start: f64,
    stop_defined: bool,
    stop: f64,
) -> c_int {
    simple(i, "fmi3EnterInitializationMode", INST, |inst| {
        inst.setup_experiment(start, stop_defined.then_some(stop))?;
        inst.enter_initialization()
    })
}

/// `fmi3ExitInitializationMode`: goes to Step Mode (co-simulation: no
/// event mode) or Event Mode (Model Exchange).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn exit_initialization_mode(i: *mut c_void) -> c_int {
    simple(i, "fmi3ExitInitializationMode", INIT, |inst| {
        inst.exit_initialization()
    })
}

/// `fmi3EnterEventMode`: Model Exchange, from Continuous-Time Mode;
/// Co-Simulation with `eventModeUsed` (a model with event mode), from Step
/// Mode; refused by the other co-simulation instances.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn enter_event_mode(i: *mut c_void) -> c_int {
    let fname = "fmi3EnterEventMode";
    simple(i, fname, !0, |inst| {
        if inst.steps_through_events() {
            inst.check_cs_event_call(fname, STEP)?;
        } else {
            inst.check_me_call(
                MeCall::EnterEventMode,
                "this FMU has no event mode (hasEventMode=false)",
            )?;
        }
        inst.enter_event_mode()
    })
}

/// `fmi3Terminate`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn terminate(i: *mut c_void) -> c_int {
    simple(i, "fmi3Terminate", M_TERMINATE, |inst| inst.terminate())
}

/// `fmi3Reset`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn reset(i: *mut c_void) -> c_int {
    simple(i, "fmi3Reset", M_ANY, |inst| inst.reset())
}

fn no_variables_of_type(inst: &Instance, vrs: &[u32], type_name: &str) -> R<()> {
    match vrs.first() {
        None => Ok(()),
        Some(vr) => Err(Fail::usage(match inst.spec.variable(*vr) {
            Some(v) => format!("variable {} (vr {vr}) is not of type {type_name}", v.name),
            None => format!("unknown value reference {vr}"),
        })),
    }
}

/// `fmi3GetFloat64`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_float64(
    i: *mut c_void,
    vr: *const u32,
    nvr: usize,
    v: *mut f64,
    n: usize,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on (nValues: the
    // sum of the variables' current sizes).
    unsafe {
        shared::get_numbers(
            i,
            &FMI3,
            "fmi3GetFloat64",
            M_GET,
            (vr, nvr),
            (v, Some(n)),
            VarType::Real,
            |x| x,
        )
    }
}

/// `fmi3GetInt32`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_int32(
    i: *mut c_void,
    vr: *const u32,
    nvr: usize,
    v: *mut i32,
    n: usize,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on (nValues: the
    // sum of the variables' current sizes).
    unsafe {
        shared::get_numbers(
            i,
            &FMI3,
            "fmi3GetInt32",
            M_GET,
            (vr, nvr),
            (v, Some(n)),
            VarType::Integer,
            |x| x as i32,
        )
    }
}

/// `fmi3SetFloat64`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_float64(
    i: *mut c_void,
    vr: *const u32,
    nvr: usize,
    v: *const f64,
    n: usize,
) -> c_int {
    guard(ERROR, || {
        let set = |inst: &mut Instance, _: &std::sync::Arc<super::intermediate::Cell>| {
            // SAFETY: the caller's FMI calling convention, passed on
            // (nValues: the sum of the variables' current sizes).
            let (vrs, vals) = unsafe { shared::numbers_in(inst, &FMI3, (vr, nvr), (v, Some(n)))? };
            inst.set(vrs, VarType::Real, vals)?;
            Ok(Status::Ok)
        };
        // The instance free: not in Intermediate Update Mode.
        let set = match with_free_instance(i, "fmi3SetFloat64", M_SET, set) {
            Ok(status) => return status as c_int,
            Err(set) => set,
        };
        let Some(entry) = lookup(i) else {
            return ERROR;
        };
        // In Intermediate Update Mode (inside the importer's callback during
        // fmi3DoStep) the values go to the instance's window, never to the
        // instance, which fmi3DoStep holds (see `super::intermediate`).
        // SAFETY: the caller's FMI calling convention, passed on.
        if let Some(status) = unsafe { entry.cell.set_float64(vr, nvr, v, n) } {
            return status as c_int;
        }
        with_handle(&entry, "fmi3SetFloat64", M_SET, set) as c_int
    })
}

/// `fmi3SetInt32`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_int32(
    i: *mut c_void,
    vr: *const u32,
    nvr: usize,
    v: *const i32,
    n: usize,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on (nValues: the
    // sum of the variables' current sizes).
    unsafe {
        shared::set_numbers(
            i,
            &FMI3,
            "fmi3SetInt32",
            M_SET,
            (vr, nvr),
            (v, Some(n)),
            |inst, vrs, vals: &[i32]| {
                let vals: Vec<f64> = vals.iter().map(|&x| f64::from(x)).collect();
                inst.set(vrs, VarType::Integer, &vals)
            },
        )
    }
}

/// `fmi3GetBoolean`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_boolean(
    i: *mut c_void,
    vr: *const u32,
    nvr: usize,
    v: *mut bool,
    n: usize,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on (nValues: the
    // sum of the variables' current sizes).
    unsafe {
        shared::get_numbers(
            i,
            &FMI3,
            "fmi3GetBoolean",
            M_GET,
            (vr, nvr),
            (v, Some(n)),
            VarType::Boolean,
            |x| x != 0.0,
        )
    }
}

/// `fmi3SetBoolean`. The values are read as bytes (a C `bool` other than
/// 0 / 1 would be undefined behaviour as a Rust `bool`); non-zero is true.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_boolean(
    i: *mut c_void,
    vr: *const u32,
    nvr: usize,
    v: *const bool,
    n: usize,
) -> c_int {
    // (A `bool` has the size and alignment of a `u8`.)
    // SAFETY: the caller's FMI calling convention, passed on (nValues: the
    // sum of the variables' current sizes).
    unsafe {
        shared::set_numbers(
            i,
            &FMI3,
            "fmi3SetBoolean",
            M_SET,
            (vr, nvr),
            (v.cast::<u8>(), Some(n)),
            |inst, vrs, vals: &[u8]| {
                let vals: Vec<f64> = vals
                    .iter()
                    .map(|&b| crate::model::bool_value(b != 0))
                    .collect();
                inst.set(vrs, VarType::Boolean, &vals)
            },
        )
    }
}

/// `fmi3GetString`: the returned strings are owned by the instance and
/// valid until its next `fmi3GetString` (the standard promises them until
/// the next call of any function of the instance).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_string(
    i: *mut c_void,
    vr: *const u32,
    nvr: usize,
    v: *mut *const c_char,
    n: usize,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::get_strings(i, &FMI3, "fmi3GetString", M_GET, (vr, nvr), (v, Some(n))) }
}

/// `fmi3SetString`: the strings are copied (NULL or invalid UTF-8 is
/// refused, changing nothing).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_string(
    i: *mut c_void,
    vr: *const u32,
    nvr: usize,
    v: *const *const c_char,
    n: usize,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::set_strings(i, &FMI3, "fmi3SetString", M_SET, (vr, nvr), (v, Some(n))) }
}

/// `fmi3GetFloat32`: the stored values are `f32` values (rounded when set).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_float32(
    i: *mut c_void,
    vr: *const u32,
    nvr: usize,
    v: *mut f32,
    n: usize,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on (nValues: the
    // sum of the variables' current sizes).
    unsafe {
        shared::get_numbers(
            i,
            &FMI3,
            "fmi3GetFloat32",
            M_GET,
            (vr, nvr),
            (v, Some(n)),
            VarType::Float32,
            |x| x as f32,
        )
    }
}

/// `fmi3SetFloat32`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_float32(
    i: *mut c_void,
    vr: *const u32,
    nvr: usize,
    v: *const f32,
    n: usize,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on (nValues: the
    // sum of the variables' current sizes).
    unsafe {
        shared::set_numbers(
            i,
            &FMI3,
            "fmi3SetFloat32",
            M_SET,
            (vr, nvr),
            (v, Some(n)),
            |inst, vrs, vals: &[f32]| {
                let vals: Vec<f64> = vals.iter().map(|&x| f64::from(x)).collect();
                inst.set(vrs, VarType::Float32, &vals)
            },
        )
    }
}

/// The getters and setters of the FMI 3 integer types other than `Int32`.
macro_rules! integer_access {
    ($($get:ident $set:ident $t:ty, $ty:expr, $tname:literal;)*) => {
        $(
            #[doc = concat!("`fmi3Get", $tname, "`.")]
            ///
            /// # Safety
            /// FMI calling convention.
            pub unsafe fn $get(i: *mut c_void, vr: *const u32, nvr: usize, v: *mut $t, n: usize) -> c_int {
                // `Instance::get` hands out whole values within the type's
                // range only, so the conversion is exact.
                // SAFETY: the caller's FMI calling convention, passed on.
                unsafe {
                    shared::get_numbers(i, &FMI3, concat!("fmi3Get", $tname), M_GET, (vr, nvr), (v, Some(n)), $ty, |x| x as $t)
                }
            }

            #[doc = concat!("`fmi3Set", $tname, "`: values an `f64` cannot hold exactly are refused (see `Instance::set_integers`).")]
            ///
            /// # Safety
            /// FMI calling convention.
            pub unsafe fn $set(i: *mut c_void, vr: *const u32, nvr: usize, v: *const $t, n: usize) -> c_int {
                // SAFETY: the caller's FMI calling convention, passed on.
                unsafe {
                    shared::set_numbers(i, &FMI3, concat!("fmi3Set", $tname), M_SET, (vr, nvr), (v, Some(n)), |inst, vrs, vals| {
                        let vals: Vec<i128> = vals.iter().map(|&x| i128::from(x)).collect();
                        inst.set_integers(vrs, $ty, &vals)
                    })
                }
            }
        )*
    };
}

integer_access! {
    get_int8 set_int8 i8, VarType::Int8, "Int8";
    get_uint8 set_uint8 u8, VarType::UInt8, "UInt8";
    get_int16 set_int16 i16, VarType::Int16, "Int16";
    get_uint16 set_uint16 u16, VarType::UInt16, "UInt16";
    get_uint32 set_uint32 u32, VarType::UInt32, "UInt32";
    get_int64 set_int64 i64, VarType::Int64, "Int64";
    get_uint64 set_uint64 u64, VarType::UInt64, "UInt64";
}

/// `fmi3GetBinary`: no Binary variables.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_binary(
    i: *mut c_void,
    vr: *const u32,
    nvr: usize,
    _sizes: *mut usize,
    _v: *mut *const u8,
    n: usize,
) -> c_int {
    simple(i, "fmi3GetBinary", M_GET, |inst| {
        check_n(nvr, n)?;
        // SAFETY: FMI calling convention.
        let vrs = unsafe { slice(vr, nvr, "valueReferences")? };
        no_variables_of_type(inst, vrs, "Binary")
    })
}

/// `fmi3SetBinary`: no Binary variables.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_binary(
    i: *mut c_void,
    vr: *const u32,
    nvr: usize,
    _sizes: *const usize,
    _v: *const *const u8,
    n: usize,
) -> c_int {
    simple(i, "fmi3SetBinary", M_SET, |inst| {
        check_n(nvr, n)?;
        // SAFETY: FMI calling convention.
        let vrs = unsafe { slice(vr, nvr, "valueReferences")? };
        no_variables_of_type(inst, vrs, "Binary")
    })
}

/// `fmi3GetClock`: output Clocks, in Event Mode (Scheduled Execution:
/// Clock Update Mode; `Instance::get_clocks`); refused by FMUs without
/// Clocks.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_clock(i: *mut c_void, vr: *const u32, nvr: usize, v: *mut bool) -> c_int {
    simple(i, "fmi3GetClock", M_ANY | CLOCK_UPD, |inst| {
        inst.has_clocks()
            .then_some(())
            .ok_or_else(|| Fail::usage("this FMU has no clocks"))?;
        // SAFETY: FMI calling convention: arrays of length nvr.
        let (vrs, out) = unsafe {
            (
                slice(vr, nvr, "valueReferences")?,
                slice_mut(v, nvr, "values")?,
            )
        };
        inst.get_clocks(vrs, out)
    })
}

/// `fmi3SetClock`: input Clocks, in Event Mode (`Instance::set_clocks`);
/// refused by FMUs without Clocks.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_clock(i: *mut c_void, vr: *const u32, nvr: usize, v: *const bool) -> c_int {
    simple(i, "fmi3SetClock", M_ANY, |inst| {
        inst.has_clocks()
            .then_some(())
            .ok_or_else(|| Fail::usage("this FMU has no clocks"))?;
        if inst.is_scheduled() {
            return Err(Fail::sequence(
                "fmi3SetClock must not be called in Scheduled Execution (FMI 3.0 sec. 2.2.9.6): \
                 fmi3ActivateModelPartition activates a Clock's partition",
            ));
        }
        // SAFETY: FMI calling convention: arrays of length nvr.
        let (vrs, vals) = unsafe { (slice(vr, nvr, "valueReferences")?, slice(v, nvr, "values")?) };
        inst.set_clocks(vrs, vals)
    })
}

const NO_PER_ELEMENT: &str =
    "providesPerElementDependencies=false: read the dependencies from modelDescription.xml";

/// `fmi3GetNumberOfVariableDependencies`: not provided.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_number_of_variable_dependencies(
    i: *mut c_void,
    _vr: u32,
    _n: *mut usize,
) -> c_int {
    refuse(i, "fmi3GetNumberOfVariableDependencies", NO_PER_ELEMENT)
}

/// `fmi3GetVariableDependencies`: not provided.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_variable_dependencies(
    i: *mut c_void,
    _dependent: u32,
    _elem_dep: *mut usize,
    _independents: *mut u32,
    _elem_ind: *mut usize,
    _kinds: *mut c_int,
    _n: usize,
) -> c_int {
    refuse(i, "fmi3GetVariableDependencies", NO_PER_ELEMENT)
}

/// `fmi3GetFMUState`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_fmu_state(i: *mut c_void, s: *mut *mut c_void) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::get_fmu_state(i, &FMI3, "fmi3GetFMUState", M_STATE, s) }
}

/// `fmi3SetFMUState`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_fmu_state(i: *mut c_void, s: *mut c_void) -> c_int {
    shared::set_fmu_state(i, &FMI3, "fmi3SetFMUState", M_STATE, s)
}

/// `fmi3FreeFMUState`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn free_fmu_state(i: *mut c_void, s: *mut *mut c_void) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::free_fmu_state(i, &FMI3, "fmi3FreeFMUState", M_STATE, s) }
}

/// `fmi3SerializedFMUStateSize`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn serialized_fmu_state_size(i: *mut c_void, s: *mut c_void, size: *mut usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::serialized_fmu_state_size(i, "fmi3SerializedFMUStateSize", M_STATE, s, size) }
}

/// `fmi3SerializeFMUState`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn serialize_fmu_state(
    i: *mut c_void,
    s: *mut c_void,
    bytes: *mut u8,
    size: usize,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::serialize_fmu_state(i, "fmi3SerializeFMUState", M_STATE, s, (bytes, size)) }
}

/// `fmi3DeserializeFMUState`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn deserialize_fmu_state(
    i: *mut c_void,
    bytes: *const u8,
    size: usize,
    s: *mut *mut c_void,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe {
        shared::deserialize_fmu_state(
            i,
            &FMI3,
            "fmi3DeserializeFMUState",
            M_STATE,
            (bytes, size),
            s,
        )
    }
}

/// `fmi3GetDirectionalDerivative`.
///
/// # Safety
/// FMI calling convention.
#[allow(clippy::too_many_arguments)]
pub unsafe fn get_directional_derivative(
    i: *mut c_void,
    unknowns: *const u32,
    n_unknowns: usize,
    knowns: *const u32,
    n_knowns: usize,
    seed: *const f64,
    n_seed: usize,
    sens: *mut f64,
    n_sens: usize,
) -> c_int {
    let arrays = seeded(
        (unknowns, n_unknowns),
        (knowns, n_knowns),
        (seed, n_seed),
        (sens, n_sens),
        false,
    );
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::seeded_derivative(i, "fmi3GetDirectionalDerivative", M_DIRDER, arrays, false) }
}

/// The arrays of `fmi3GetDirectionalDerivative` (`adjoint`:
/// `fmi3GetAdjointDerivative`), with the check of `nSeed` and
/// `nSensitivity`: the seed has an element per known (per unknown for the
/// adjoint), the sensitivity one per unknown (per known).
fn seeded(
    unknowns: (*const u32, usize),
    knowns: (*const u32, usize),
    seed: (*const f64, usize),
    sens: (*mut f64, usize),
    adjoint: bool,
) -> Seeded {
    let (n_unknowns, n_knowns, n_seed, n_sens) = (unknowns.1, knowns.1, seed.1, sens.1);
    let (seed_of, sens_of) = if adjoint {
        (("nUnknowns", n_unknowns), ("nKnowns", n_knowns))
    } else {
        (("nKnowns", n_knowns), ("nUnknowns", n_unknowns))
    };
    let lengths = if n_seed != seed_of.1 || n_sens != sens_of.1 {
        Err(Fail::usage(format!(
            "nSeed ({n_seed}) must equal {} ({}) and nSensitivity ({n_sens}) {} ({})",
            seed_of.0, seed_of.1, sens_of.0, sens_of.1
        )))
    } else {
        Ok(())
    };
    Seeded {
        unknowns: (unknowns.0, n_unknowns, "unknowns"),
        knowns: (knowns.0, n_knowns, "knowns"),
        seed: (seed.0, n_seed, "seed"),
        sensitivity: (sens.0, n_sens, "sensitivity"),
        lengths,
    }
}

/// `fmi3GetAdjointDerivative`.
///
/// # Safety
/// FMI calling convention.
#[allow(clippy::too_many_arguments)]
pub unsafe fn get_adjoint_derivative(
    i: *mut c_void,
    unknowns: *const u32,
    n_unknowns: usize,
    knowns: *const u32,
    n_knowns: usize,
    seed: *const f64,
    n_seed: usize,
    sens: *mut f64,
    n_sens: usize,
) -> c_int {
    let arrays = seeded(
        (unknowns, n_unknowns),
        (knowns, n_knowns),
        (seed, n_seed),
        (sens, n_sens),
        true,
    );
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { shared::seeded_derivative(i, "fmi3GetAdjointDerivative", M_DIRDER, arrays, true) }
}

/// `fmi3EnterConfigurationMode`: Instantiated -> Configuration Mode, for a
/// model with structural parameters (see `Instance::enter_configuration`;
/// refused otherwise, and in any other state).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn enter_configuration_mode(i: *mut c_void) -> c_int {
    simple(
        i,
        "fmi3EnterConfigurationMode",
        M_ANY | Mode::Fatal.bit(),
        |inst| inst.enter_configuration(),
    )
}

/// `fmi3ExitConfigurationMode`: Configuration Mode -> Instantiated (see
/// `Instance::exit_configuration`).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn exit_configuration_mode(i: *mut c_void) -> c_int {
    simple(
        i,
        "fmi3ExitConfigurationMode",
        M_ANY | Mode::Fatal.bit(),
        |inst| inst.exit_configuration(),
    )
}

/// `fmi3GetIntervalDecimal`: time-based Clocks, in Initialization, Event,
/// Clock Activation and Clock Update Mode (`Instance::get_intervals`).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_interval_decimal(
    i: *mut c_void,
    vr: *const u32,
    n: usize,
    x: *mut f64,
    q: *mut c_int,
) -> c_int {
    simple(i, "fmi3GetIntervalDecimal", M_ANY | CLOCK_UPD, |inst| {
        // SAFETY: FMI calling convention: arrays of length n.
        let (vrs, out, qual) = unsafe {
            (
                slice(vr, n, "valueReferences")?,
                slice_mut(x, n, "intervals")?,
                slice_mut(q, n, "qualifiers")?,
            )
        };
        let mut qs = vec![0i32; n];
        inst.get_intervals(vrs, out, &mut qs)?;
        for (slot, q) in qual.iter_mut().zip(qs) {
            *slot = q as c_int;
        }
        Ok(())
    })
}

/// `fmi3GetIntervalFraction`: refused (`supportsFraction = false`).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_interval_fraction(
    i: *mut c_void,
    _vr: *const u32,
    _n: usize,
    _c: *mut u64,
    _r: *mut u64,
    _q: *mut c_int,
) -> c_int {
    let fname = "fmi3GetIntervalFraction";
    simple(i, fname, M_ANY | CLOCK_UPD, |inst| {
        inst.refuse_fraction(fname)
    })
}

/// `fmi3GetShiftDecimal`: periodic Clocks, in Initialization and Event
/// Mode (`Instance::get_shifts`).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_shift_decimal(i: *mut c_void, vr: *const u32, n: usize, x: *mut f64) -> c_int {
    simple(i, "fmi3GetShiftDecimal", M_ANY, |inst| {
        // SAFETY: FMI calling convention: arrays of length n.
        let (vrs, out) = unsafe { (slice(vr, n, "valueReferences")?, slice_mut(x, n, "shifts")?) };
        inst.get_shifts(vrs, out)
    })
}

/// `fmi3GetShiftFraction`: refused (`supportsFraction = false`).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_shift_fraction(
    i: *mut c_void,
    _vr: *const u32,
    _n: usize,
    _c: *mut u64,
    _r: *mut u64,
) -> c_int {
    let fname = "fmi3GetShiftFraction";
    simple(i, fname, M_ANY, |inst| inst.refuse_fraction(fname))
}

/// `fmi3SetIntervalDecimal`: fixed Clocks in Initialization Mode, tunable
/// ones in Initialization and Event Mode (`Instance::set_intervals`).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_interval_decimal(
    i: *mut c_void,
    vr: *const u32,
    n: usize,
    x: *const f64,
) -> c_int {
    simple(i, "fmi3SetIntervalDecimal", M_ANY, |inst| {
        // SAFETY: FMI calling convention: arrays of length n.
        let (vrs, vals) = unsafe { (slice(vr, n, "valueReferences")?, slice(x, n, "intervals")?) };
        inst.set_intervals(vrs, vals)
    })
}

/// `fmi3SetIntervalFraction`: refused (`supportsFraction = false`).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_interval_fraction(
    i: *mut c_void,
    _vr: *const u32,
    _n: usize,
    _c: *const u64,
    _r: *const u64,
) -> c_int {
    let fname = "fmi3SetIntervalFraction";
    simple(i, fname, M_ANY, |inst| inst.refuse_fraction(fname))
}

/// `fmi3SetShiftDecimal`: fixed and tunable Clocks, in Initialization Mode
/// (`Instance::set_shifts`).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_shift_decimal(i: *mut c_void, vr: *const u32, n: usize, x: *const f64) -> c_int {
    simple(i, "fmi3SetShiftDecimal", M_ANY, |inst| {
        // SAFETY: FMI calling convention: arrays of length n.
        let (vrs, vals) = unsafe { (slice(vr, n, "valueReferences")?, slice(x, n, "shifts")?) };
        inst.set_shifts(vrs, vals)
    })
}

/// `fmi3SetShiftFraction`: refused (`supportsFraction = false`).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_shift_fraction(
    i: *mut c_void,
    _vr: *const u32,
    _n: usize,
    _c: *const u64,
    _r: *const u64,
) -> c_int {
    let fname = "fmi3SetShiftFraction";
    simple(i, fname, M_ANY, |inst| inst.refuse_fraction(fname))
}

/// `fmi3EvaluateDiscreteStates`: refused.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn evaluate_discrete_states(i: *mut c_void) -> c_int {
    refuse(
        i,
        "fmi3EvaluateDiscreteStates",
        "providesEvaluateDiscreteStates=false",
    )
}

/// `fmi3UpdateDiscreteStates` (Event Mode of Model Exchange, and of
/// Co-Simulation with `eventModeUsed`): the model's event update; the
/// out-arguments are checked before the model is called and written only
/// when it succeeded. Refused by the other co-simulation instances (no
/// event mode).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn update_discrete_states(
    i: *mut c_void,
    need_update: *mut bool,
    terminate: *mut bool,
    nominals_changed: *mut bool,
    values_changed: *mut bool,
    next_defined: *mut bool,
    next_time: *mut f64,
) -> c_int {
    let fname = "fmi3UpdateDiscreteStates";
    simple(i, fname, !0, |inst| {
        if inst.steps_through_events() {
            inst.check_cs_event_call(fname, EVENT)?;
        } else {
            inst.check_me_call(MeCall::UpdateDiscreteStates, "this FMU has no event mode")?;
        }
        {
            // SAFETY: FMI calling convention: each points to one value.
            let (need, term, nominals, values, defined, next) = unsafe {
                (
                    slice_mut(need_update, 1, "discreteStatesNeedUpdate")?,
                    slice_mut(terminate, 1, "terminateSimulation")?,
                    slice_mut(nominals_changed, 1, "nominalsOfContinuousStatesChanged")?,
                    slice_mut(values_changed, 1, "valuesOfContinuousStatesChanged")?,
                    slice_mut(next_defined, 1, "nextEventTimeDefined")?,
                    slice_mut(next_time, 1, "nextEventTime")?,
                )
            };
            let u = inst.update_discrete_states()?;
            need[0] = u.discrete_states_need_update;
            term[0] = u.terminate_simulation;
            // Nominals are fixed.
            nominals[0] = false;
            values[0] = u.values_of_continuous_states_changed;
            defined[0] = u.next_event_time.is_some();
            next[0] = u.next_event_time.unwrap_or(0.0);
            Ok(())
        }
    })
}

/// `fmi3EnterContinuousTimeMode` (Model Exchange, Event Mode, after the
/// event iteration).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn enter_continuous_time_mode(i: *mut c_void) -> c_int {
    me::enter_continuous_time_mode(i, FmiVersion::Fmi3)
}

/// `fmi3CompletedIntegratorStep` (Model Exchange, Continuous-Time Mode).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn completed_integrator_step(
    i: *mut c_void,
    no_set_prior: bool,
    enter_event_mode: *mut bool,
    terminate: *mut bool,
) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe {
        me::completed_integrator_step(
            i,
            FmiVersion::Fmi3,
            no_set_prior,
            enter_event_mode,
            terminate,
        )
    }
}

/// `fmi3SetTime` (Model Exchange, Continuous-Time Mode).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_time(i: *mut c_void, t: f64) -> c_int {
    me::set_time(i, FmiVersion::Fmi3, t)
}

/// `fmi3SetContinuousStates` (Model Exchange, Continuous-Time Mode).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn set_continuous_states(i: *mut c_void, x: *const f64, n: usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { me::set_continuous_states(i, FmiVersion::Fmi3, x, n) }
}

/// `fmi3GetContinuousStateDerivatives`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_continuous_state_derivatives(i: *mut c_void, x: *mut f64, n: usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { me::get_vector(i, FmiVersion::Fmi3, MeCall::GetDerivatives, x, n) }
}

/// `fmi3GetEventIndicators`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_event_indicators(i: *mut c_void, x: *mut f64, n: usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { me::get_vector(i, FmiVersion::Fmi3, MeCall::GetEventIndicators, x, n) }
}

/// `fmi3GetContinuousStates`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_continuous_states(i: *mut c_void, x: *mut f64, n: usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { me::get_vector(i, FmiVersion::Fmi3, MeCall::GetContinuousStates, x, n) }
}

/// `fmi3GetNominalsOfContinuousStates`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_nominals_of_continuous_states(i: *mut c_void, x: *mut f64, n: usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { me::get_vector(i, FmiVersion::Fmi3, MeCall::GetNominals, x, n) }
}

/// `fmi3GetNumberOfEventIndicators` (fixed: no arrays of indicators).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_number_of_event_indicators(i: *mut c_void, n: *mut usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { me::get_number(i, MeCall::GetNumberOfEventIndicators, n) }
}

/// `fmi3GetNumberOfContinuousStates` (fixed: no arrays of states).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_number_of_continuous_states(i: *mut c_void, n: *mut usize) -> c_int {
    // SAFETY: the caller's FMI calling convention, passed on.
    unsafe { me::get_number(i, MeCall::GetNumberOfContinuousStates, n) }
}

/// `fmi3EnterStepMode`: Co-Simulation with `eventModeUsed`, from Event
/// Mode once the event iteration converged; refused by the other
/// instances (no event mode: `fmi3ExitInitializationMode` enters Step Mode).
///
/// # Safety
/// FMI calling convention.
pub unsafe fn enter_step_mode(i: *mut c_void) -> c_int {
    let fname = "fmi3EnterStepMode";
    simple(i, fname, M_ANY | Mode::Fatal.bit(), |inst| {
        if !inst.steps_through_events() {
            return Err(Fail::usage(
                "no event mode: fmi3ExitInitializationMode already enters Step Mode",
            ));
        }
        inst.check_cs_event_call(fname, EVENT)?;
        inst.enter_step_mode()
    })
}

/// `fmi3GetOutputDerivatives`.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn get_output_derivatives(
    i: *mut c_void,
    vr: *const u32,
    nvr: usize,
    orders: *const i32,
    v: *mut f64,
    n: usize,
) -> c_int {
    simple(i, "fmi3GetOutputDerivatives", M_OUT_DER, |inst| {
        inst.require_cap(Cap::OutputDerivatives)?;
        check_n(nvr, n)?;
        // SAFETY: FMI calling convention: arrays of length nvr (= n).
        let (vrs, ords, out) = unsafe {
            (
                slice(vr, nvr, "valueReferences")?,
                slice(orders, nvr, "orders")?,
                slice_mut(v, n, "values")?,
            )
        };
        inst.get_output_derivatives(vrs, ords, out)
    })
}

/// `fmi3DoStep`. `terminateSimulation` and `earlyReturn` report a model's
/// request to end the simulation (see [`Instance::step`]);
/// `lastSuccessfulTime` is where the step ended.
///
/// # Safety
/// FMI calling convention.
#[allow(clippy::too_many_arguments)]
pub unsafe fn do_step(
    i: *mut c_void,
    t: f64,
    h: f64,
    no_set_prior: bool,
    event_needed: *mut bool,
    terminate: *mut bool,
    early_return: *mut bool,
    last_successful: *mut f64,
) -> c_int {
    guard(ERROR, || {
        with_instance_cell(i, "fmi3DoStep", STEP, |inst, cell| {
            // SAFETY: FMI calling convention: each points to one value.
            let (e, term, early, last) = unsafe {
                (
                    slice_mut(event_needed, 1, "eventHandlingNeeded")?,
                    slice_mut(terminate, 1, "terminateSimulation")?,
                    slice_mut(early_return, 1, "earlyReturn")?,
                    slice_mut(last_successful, 1, "lastSuccessfulTime")?,
                )
            };
            e[0] = false;
            term[0] = false;
            early[0] = false;
            // With the importer's intermediate update callback (and a build
            // and model that use it), the step asks for its inputs at
            // internal times; else they are held.
            let source = cell.source(inst);
            let result = inst.step(t, h, no_set_prior, source);
            last[0] = inst.last_successful_time();
            if result.is_ok() {
                e[0] = inst.event_handling_needed();
                term[0] = inst.terminate_requested();
                early[0] = inst.early_return();
            }
            result
        }) as c_int
    })
}

/// `fmi3ActivateModelPartition`: Scheduled Execution, Clock Activation
/// Mode (`Instance::activate_partition`); refused by the other instances.
/// A partition that ticked an output Clock or armed a countdown Clock
/// leaves the instance in Clock Update Mode: the importer's `clockUpdate`
/// is called then, with the instance's lock released (the importer calls
/// `fmi3GetClock` and `fmi3GetIntervalDecimal` from inside it, on this
/// thread, as any call), and Clock Update Mode ends when it returns.
///
/// # Safety
/// FMI calling convention.
pub unsafe fn activate_model_partition(i: *mut c_void, clock: u32, t: f64) -> c_int {
    let fname = "fmi3ActivateModelPartition";
    guard(ERROR, || {
        let mut clock_update = false;
        let status = with_instance(i, fname, M_ANY, |inst| {
            clock_update = inst.activate_partition(clock, t)?;
            Ok(Status::Ok)
        });
        if !clock_update {
            return status as c_int;
        }
        call_clock_update(i);
        with_instance(i, fname, CLOCK_UPD | ERR, |inst| {
            inst.exit_clock_update()?;
            Ok(Status::Ok)
        }) as c_int
    })
}

/// Calls the importer's `clockUpdate` of instance `i` (in Clock Update
/// Mode), holding nothing of the instance.
fn call_clock_update(i: *mut c_void) {
    // (The entry's reference is dropped before the call: the callback's
    // calls look the instance up as any call does.)
    let Some((callback, env)) = lookup(i).and_then(|h| h.cell.clock_update()) else {
        return;
    };
    // SAFETY: `callback` is the importer's non-NULL fmi3ClockUpdateCallback
    // from fmi3InstantiateScheduledExecution, called with its own
    // instanceEnvironment from inside its fmi3ActivateModelPartition (FMI
    // 3.0 sec. 5.2.2). No lock of the instance is held: its re-entrant
    // calls (fmi3GetClock, fmi3GetIntervalDecimal) take the instance as any
    // call does, and the instance's Clock Update Mode refuses the others.
    unsafe { callback(env) }
}
