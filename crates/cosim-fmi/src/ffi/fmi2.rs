//! FMI 2.0, Co-Simulation and Model Exchange: what is FMI 2's own (its
//! function table, its logger shim, the calls whose C signatures are not
//! FMI 3's); the rest of an instance is [`super::common`]'s.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};
use std::path::Path;
use std::sync::Arc;

use super::call_log::{CallLog, LogNum, VrKind};
use super::common::{
    Api, ArrayCall, CompletedIntegratorStepFn, Component, Env, ExperimentFn, FmiInstance,
    FmiLibrary, HeldStepOf, Instantiation, Names, READING_PHASES, StatusFn, Vr, cstring, fn_table,
    instantiated_status, instantiation_failed, log_call, log_derivatives, log_values,
};
use super::log::{LogContext, c_str_lossy};
use super::pool::Pool;
use super::{DiscreteStatesUpdate, Interface, Phase, Status, StepCall, StepOutcome, check_len};
use crate::error::Result;

type Fmi2Status = c_int;
type Fmi2Boolean = c_int;

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

/// What an FMI 2 instance's callbacks reach: the callback table, the
/// shim's environment and the log, each boxed at a fixed address for as
/// long as the FMU may call back.
pub struct Fmi2Env {
    _callbacks: Box<CallbackFunctions>,
    _shim: Box<ShimEnv>,
    log: Box<LogContext>,
}

impl Env for Fmi2Env {
    fn log(&self) -> &LogContext {
        &self.log
    }
}

/// `fmi2EventInfo` (the header packs it to 8 bytes: `repr(C)` lays it out
/// the same).
#[repr(C)]
#[derive(Debug, Default)]
pub struct Fmi2EventInfo {
    new_discrete_states_needed: Fmi2Boolean,
    terminate_simulation: Fmi2Boolean,
    nominals_of_continuous_states_changed: Fmi2Boolean,
    values_of_continuous_states_changed: Fmi2Boolean,
    next_event_time_defined: Fmi2Boolean,
    next_event_time: f64,
}

type GetFn<T> = unsafe extern "C" fn(Component, *const Vr, usize, *mut T) -> Fmi2Status;
type SetFn<T> = unsafe extern "C" fn(Component, *const Vr, usize, *const T) -> Fmi2Status;
type DoStepFn = unsafe extern "C" fn(Component, f64, f64, Fmi2Boolean) -> Fmi2Status;
type DirectionalFn = unsafe extern "C" fn(
    Component,
    *const Vr,
    usize,
    *const Vr,
    usize,
    *const f64,
    *mut f64,
) -> Fmi2Status;
type DerivativesFn<T> =
    unsafe extern "C" fn(Component, *const Vr, usize, *const c_int, T) -> Fmi2Status;
type NewDiscreteStatesFn = unsafe extern "C" fn(Component, *mut Fmi2EventInfo) -> Fmi2Status;

fn_table! {
    /// FMI 2.0's own functions of one shared library (those of
    /// [`super::common::CommonFunctions`] aside): those of one interface
    /// optional here, required where it is instantiated.
    pub struct Fmi2Functions {
        mandatory {
            get_types_platform: "fmi2GetTypesPlatform" => unsafe extern "C" fn() -> *const c_char,
            instantiate: "fmi2Instantiate" => unsafe extern "C" fn(*const c_char, c_int, *const c_char, *const c_char, *const CallbackFunctions, Fmi2Boolean, Fmi2Boolean) -> Component,
            setup_experiment: "fmi2SetupExperiment" => ExperimentFn<Fmi2>,
            enter_initialization_mode: "fmi2EnterInitializationMode" => StatusFn,
            get_real: "fmi2GetReal" => GetFn<f64>,
            get_integer: "fmi2GetInteger" => GetFn<c_int>,
            get_boolean: "fmi2GetBoolean" => GetFn<Fmi2Boolean>,
            get_string: "fmi2GetString" => GetFn<*const c_char>,
            set_real: "fmi2SetReal" => SetFn<f64>,
            set_integer: "fmi2SetInteger" => SetFn<c_int>,
            set_boolean: "fmi2SetBoolean" => SetFn<Fmi2Boolean>,
            set_string: "fmi2SetString" => SetFn<*const c_char>,
        }
        optional {
            // Co-Simulation: mandatory for it.
            do_step: "fmi2DoStep" => DoStepFn,
            cancel_step: "fmi2CancelStep" => unsafe extern "C" fn(Component) -> Fmi2Status,
            get_real_status: "fmi2GetRealStatus" => unsafe extern "C" fn(Component, c_int, *mut f64) -> Fmi2Status,
            get_boolean_status: "fmi2GetBooleanStatus" => unsafe extern "C" fn(Component, c_int, *mut Fmi2Boolean) -> Fmi2Status,
            get_directional_derivative: "fmi2GetDirectionalDerivative" => DirectionalFn,
            set_real_input_derivatives: "fmi2SetRealInputDerivatives" => DerivativesFn<*const f64>,
            get_real_output_derivatives: "fmi2GetRealOutputDerivatives" => DerivativesFn<*mut f64>,
            // Model Exchange: mandatory for it.
            new_discrete_states: "fmi2NewDiscreteStates" => NewDiscreteStatesFn,
        }
    }
}

/// Every FMI 2.0 library this process loaded (`super::pool`).
static POOL: Pool<Fmi2Library> = Pool::new();

/// FMI 2.0, for [`super::common`]'s code generic over the version.
#[derive(Debug, Clone, Copy)]
pub enum Fmi2 {}

/// A loaded FMI 2.0 shared library and its resolved functions.
pub type Fmi2Library = FmiLibrary<Fmi2>;

/// One FMI 2.0 instance.
pub type Fmi2Instance = FmiInstance<Fmi2>;

/// The held step of an FMI 2.0 instance ([`FmiInstance::held_step`]):
/// `fmi2SetReal` of the inputs, `fmi2DoStep`, `fmi2GetReal` of the
/// outputs, bound once.
pub type Fmi2HeldStep<'a> = HeldStepOf<'a, Fmi2>;

impl Api for Fmi2 {
    type Bool = Fmi2Boolean;
    type Functions = Fmi2Functions;
    type Env = Fmi2Env;
    type GetFn<T> = GetFn<T>;
    type SetFn<T> = SetFn<T>;
    type DoStep = DoStepFn;
    type StepFlags = ();
    type Directional = DirectionalFn;
    type OutputDerivatives = DerivativesFn<*mut f64>;
    type UpdateDiscreteStates = NewDiscreteStatesFn;

    const NAMES: Names = Names {
        get_version: "fmi2GetVersion",
        set_debug_logging: "fmi2SetDebugLogging",
        free_instance: "fmi2FreeInstance",
        exit_initialization_mode: "fmi2ExitInitializationMode",
        terminate: "fmi2Terminate",
        reset: "fmi2Reset",
        get_fmu_state: "fmi2GetFMUstate",
        set_fmu_state: "fmi2SetFMUstate",
        free_fmu_state: "fmi2FreeFMUstate",
        serialized_fmu_state_size: "fmi2SerializedFMUstateSize",
        serialize_fmu_state: "fmi2SerializeFMUstate",
        deserialize_fmu_state: "fmi2DeSerializeFMUstate",
        get_directional_derivative: "fmi2GetDirectionalDerivative",
        get_output_derivatives: "fmi2GetRealOutputDerivatives",
        do_step: "fmi2DoStep",
        get_f64: "fmi2GetReal",
        set_f64: "fmi2SetReal",
        enter_event_mode: "fmi2EnterEventMode",
        update_discrete_states: "fmi2NewDiscreteStates",
        enter_continuous_time_mode: "fmi2EnterContinuousTimeMode",
        completed_integrator_step: "fmi2CompletedIntegratorStep",
        set_time: "fmi2SetTime",
        set_continuous_states: ArrayCall {
            function: "fmi2SetContinuousStates",
            array: "x",
            count: "nx",
            phases: &[Phase::ContinuousTimeMode],
        },
        get_derivatives: ArrayCall {
            function: "fmi2GetDerivatives",
            array: "derivatives",
            count: "nx",
            // (Not in Initialization Mode: FMI 2.0 sec. 3.2.3, as the
            // Reference FMUs check it.)
            phases: &[
                Phase::EventMode,
                Phase::ContinuousTimeMode,
                Phase::Terminated,
            ],
        },
        get_event_indicators: ArrayCall {
            function: "fmi2GetEventIndicators",
            array: "eventIndicators",
            count: "ni",
            phases: READING_PHASES,
        },
        get_continuous_states: ArrayCall {
            function: "fmi2GetContinuousStates",
            array: "x",
            count: "nx",
            phases: READING_PHASES,
        },
        get_nominals: ArrayCall {
            function: "fmi2GetNominalsOfContinuousStates",
            array: "x_nominal",
            count: "nx",
            phases: &[
                Phase::Instantiated,
                Phase::EventMode,
                Phase::ContinuousTimeMode,
                Phase::Terminated,
            ],
        },
        can_get_and_set_fmu_state: "canGetAndSetFMUstate",
        can_serialize_fmu_state: "canSerializeFMUstate",
        provides_directional_derivatives: "providesDirectionalDerivative",
        state_arg: "FMUstate",
        vr_arg: "vr",
        nvr_arg: "nvr",
        values_arg: "value",
        n_values_arg: None,
        orders_arg: "order",
        directional_args: ["vUnknown_ref", "nUnknown", "vKnown_ref", "nKnown"],
        directional_values: [("dvKnown", None), ("dvUnknown", None)],
        float_kind: VrKind::Real,
    };

    fn status(code: c_int) -> Status {
        Status::from_fmi2(code)
    }

    fn boolean(b: bool) -> Fmi2Boolean {
        c_int::from(b)
    }

    fn is_true(b: Fmi2Boolean) -> bool {
        b != 0
    }

    fn pool() -> &'static Pool<Fmi2Library> {
        &POOL
    }

    fn load(lib: &libloading::Library, path: &Path) -> Result<Fmi2Functions> {
        Fmi2Functions::load(lib, path)
    }

    /// (`fmi2Instantiate` serves both interfaces; `fmi2DoStep` and
    /// `fmi2NewDiscreteStates` are checked where they are resolved.)
    fn missing(_: &Fmi2Functions, interface: Interface) -> Option<&'static str> {
        // (FMI 2.0 has no Scheduled Execution.)
        (interface == Interface::ScheduledExecution).then_some("fmi3InstantiateScheduledExecution")
    }

    fn do_step_fn(f: &Fmi2Functions) -> Option<DoStepFn> {
        f.do_step
    }

    fn update_discrete_states_fn(f: &Fmi2Functions) -> Option<NewDiscreteStatesFn> {
        f.new_discrete_states
    }

    fn f64_fns(f: &Fmi2Functions) -> (SetFn<f64>, GetFn<f64>) {
        (f.set_real, f.get_real)
    }

    fn directional_fn(f: &Fmi2Functions) -> Option<DirectionalFn> {
        f.get_directional_derivative
    }

    fn output_derivatives_fn(f: &Fmi2Functions) -> Option<DerivativesFn<*mut f64>> {
        f.get_real_output_derivatives
    }

    fn optional_functions(f: &Fmi2Functions, add: &mut dyn FnMut(bool, &'static str)) {
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
    }

    #[inline(always)]
    fn values_fit(n_vrs: usize, n_values: usize) -> bool {
        n_vrs == n_values
    }

    #[inline(always)]
    unsafe fn get<T>(f: GetFn<T>, c: Component, vrs: &[Vr], values: &mut [T]) -> c_int {
        // SAFETY: as the caller guarantees: values has vrs.len() elements.
        unsafe { f(c, vrs.as_ptr(), vrs.len(), values.as_mut_ptr()) }
    }

    #[inline(always)]
    unsafe fn set<T>(f: SetFn<T>, c: Component, vrs: &[Vr], values: &[T]) -> c_int {
        // SAFETY: as the caller guarantees: values has vrs.len() elements.
        unsafe { f(c, vrs.as_ptr(), vrs.len(), values.as_ptr()) }
    }

    #[inline(always)]
    unsafe fn do_step(
        f: DoStepFn,
        c: Component,
        t: f64,
        h: f64,
        no_set_prior: Fmi2Boolean,
    ) -> (c_int, ()) {
        // SAFETY: as the caller guarantees.
        (unsafe { f(c, t, h, no_set_prior) }, ())
    }

    #[inline(always)]
    fn step_ok(code: c_int, _: &()) -> bool {
        code == 0
    }

    fn step_returned(
        instance: &mut Fmi2Instance,
        code: c_int,
        t: f64,
        h: f64,
        no_set_prior: bool,
        _: (),
    ) -> Result<StepOutcome> {
        instance.do_step_returned(code, t, h, no_set_prior)
    }

    fn holds_inputs(_: &Fmi2Instance, _: &[u32]) -> bool {
        true
    }

    unsafe fn directional(
        f: DirectionalFn,
        c: Component,
        unknowns: &[Vr],
        knowns: &[Vr],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> c_int {
        // SAFETY: as the caller guarantees: seed has knowns.len() values,
        // sensitivity unknowns.len().
        unsafe {
            f(
                c,
                unknowns.as_ptr(),
                unknowns.len(),
                knowns.as_ptr(),
                knowns.len(),
                seed.as_ptr(),
                sensitivity.as_mut_ptr(),
            )
        }
    }

    unsafe fn output_derivatives(
        f: DerivativesFn<*mut f64>,
        c: Component,
        vrs: &[Vr],
        orders: &[c_int],
        values: &mut [f64],
    ) -> c_int {
        // SAFETY: as the caller guarantees: orders and values have
        // vrs.len() elements.
        unsafe {
            f(
                c,
                vrs.as_ptr(),
                vrs.len(),
                orders.as_ptr(),
                values.as_mut_ptr(),
            )
        }
    }

    unsafe fn completed_integrator_step(
        f: CompletedIntegratorStepFn<Fmi2>,
        c: Component,
        no_set_prior: bool,
    ) -> (c_int, bool, bool) {
        let (mut enter_event_mode, mut terminate): (Fmi2Boolean, Fmi2Boolean) = (0, 0);
        // SAFETY: as the caller guarantees; the out-pointers point to
        // locals.
        let code = unsafe {
            f(
                c,
                c_int::from(no_set_prior),
                &mut enter_event_mode,
                &mut terminate,
            )
        };
        (code, enter_event_mode != 0, terminate != 0)
    }
}

impl Fmi2Library {
    /// `fmi2GetTypesPlatform()`.
    pub fn types_platform(&self) -> String {
        // SAFETY: takes no arguments and returns a static string per the
        // standard.
        unsafe { c_str_lossy((self.functions.get_types_platform)()) }
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

/// Logs `fmi2NewDiscreteStates` with the `fmi2EventInfo` the FMU filled
/// (out of line).
#[cold]
#[inline(never)]
fn log_event_info(log: &CallLog, code: Fmi2Status, info: &Fmi2EventInfo) {
    log.line(Status::from_fmi2(code), "fmi2NewDiscreteStates")
        .arg(
            "eventInfo",
            format_args!(
                "{{newDiscreteStatesNeeded={}, terminateSimulation={}, nominalsOfContinuousStatesChanged={}, valuesOfContinuousStatesChanged={}, nextEventTimeDefined={}, nextEventTime={}}}",
                info.new_discrete_states_needed,
                info.terminate_simulation,
                info.nominals_of_continuous_states_changed,
                info.values_of_continuous_states_changed,
                info.next_event_time_defined,
                LogNum(info.next_event_time),
            ),
        )
        .end();
}

impl Fmi2Instance {
    /// `fmi2Instantiate` for `how.interface` (`fmuType`).
    pub(crate) fn instantiate(lib: Arc<Fmi2Library>, how: Instantiation<'_>) -> Result<Self> {
        const F: &str = "fmi2Instantiate";
        let (name, guid, logging_on) = (how.name, how.token, how.logging_on);
        let functions = lib.functions_for(how.interface)?;
        let uri = file_uri(how.resources);
        let c_name = cstring(name, F, name)?;
        let c_guid = cstring(name, F, guid)?;
        let c_uri = cstring(name, F, &uri)?;
        let log = Box::new(LogContext::new(name));
        let mut shim = Box::new(ShimEnv {
            sink: log_sink,
            ctx: &*log as *const LogContext as *mut c_void,
        });
        let callbacks = Box::new(CallbackFunctions {
            logger: cosim_fmi2_logger,
            allocate_memory: libc::calloc,
            free_memory: libc::free,
            step_finished: None,
            component_environment: &mut *shim as *mut ShimEnv as *mut c_void,
        });
        let (fmu_type, fmu_type_text) = match how.interface {
            Interface::ModelExchange => (0, "0 /* fmi2ModelExchange */"),
            Interface::CoSimulation => (1, "1 /* fmi2CoSimulation */"),
            Interface::ScheduledExecution => {
                return Err(crate::FmiError::InvalidArgument {
                    instance: how.name.to_string(),
                    function: "fmi2Instantiate",
                    reason: "FMI 2.0 has no Scheduled Execution".into(),
                });
            }
        };
        // SAFETY: all strings are NUL-terminated and outlive the call; the
        // callbacks struct and environment are boxed and kept in the instance
        // until after fmi2FreeInstance.
        let component = unsafe {
            (lib.functions.instantiate)(
                c_name.as_ptr(),
                fmu_type,
                c_guid.as_ptr(),
                c_uri.as_ptr(),
                &*callbacks,
                0,
                c_int::from(logging_on),
            )
        };
        if let Some(log) = &how.call_log {
            log.line(instantiated_status(component), F)
                .text("instanceName", name)
                .arg("fmuType", fmu_type_text)
                .text("fmuGUID", guid)
                .text("fmuResourceLocation", &uri)
                .flag("visible", false)
                .flag("loggingOn", logging_on)
                .end();
        }
        if component.is_null() {
            return Err(instantiation_failed(name, F, &log));
        }
        let env = Fmi2Env {
            _callbacks: callbacks,
            _shim: shim,
            log,
        };
        Ok(FmiInstance::new(component, lib, how, functions, env))
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
        let f = self.lib.functions.setup_experiment;
        self.call_with_experiment(f, F, tolerance, start_time, stop_time)?;
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
        let f = self.lib.functions.enter_initialization_mode;
        self.change_mode(f, F, Phase::Initialization)
    }

    /// `fmi2GetReal`.
    #[inline]
    pub fn get_real(&mut self, vrs: &[u32], values: &mut [f64]) -> Result<()> {
        let f = self.lib.functions.get_real;
        self.get_values(f, "fmi2GetReal", VrKind::Real, vrs, values)
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
        let Some(do_step) = self.do_step_fn() else {
            return Err(self.wrong_interface("fmi2DoStep"));
        };
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
        let code = unsafe { do_step(self.component, t, h, c_int::from(no_set_prior)) };
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
            log_values::<Fmi2, f64>(log, code, function, VrKind::Real, vrs, values);
        }
        self.check(function, code).map(|_| ())
    }

    /// `fmi2SetReal`.
    #[inline]
    pub fn set_real(&mut self, vrs: &[u32], values: &[f64]) -> Result<()> {
        let f = self.lib.functions.set_real;
        self.set_values(f, "fmi2SetReal", VrKind::Real, vrs, values)
    }

    /// `fmi2GetInteger`.
    pub fn get_integer(&mut self, vrs: &[u32], values: &mut [i32]) -> Result<()> {
        let f = self.lib.functions.get_integer;
        self.get_values(f, "fmi2GetInteger", VrKind::Integer, vrs, values)
    }

    /// `fmi2SetInteger`.
    pub fn set_integer(&mut self, vrs: &[u32], values: &[i32]) -> Result<()> {
        let f = self.lib.functions.set_integer;
        self.set_values(f, "fmi2SetInteger", VrKind::Integer, vrs, values)
    }

    /// `fmi2GetBoolean`.
    pub fn get_boolean(&mut self, vrs: &[u32], values: &mut [bool]) -> Result<()> {
        const F: &str = "fmi2GetBoolean";
        check_len(&self.name, F, vrs.len(), values.len())?;
        self.alive(F)?;
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
            log_values::<Fmi2, c_int>(log, code, F, VrKind::Boolean, vrs, &self.int_scratch);
        }
        self.check(F, code)?;
        for (v, &i) in values.iter_mut().zip(&self.int_scratch) {
            *v = i != 0;
        }
        Ok(())
    }

    /// `fmi2SetBoolean`.
    pub fn set_boolean(&mut self, vrs: &[u32], values: &[bool]) -> Result<()> {
        const F: &str = "fmi2SetBoolean";
        check_len(&self.name, F, vrs.len(), values.len())?;
        self.alive(F)?;
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
            log_values::<Fmi2, c_int>(log, code, F, VrKind::Boolean, vrs, &self.int_scratch);
        }
        self.check(F, code).map(|_| ())
    }

    /// `fmi2GetString` (copies the strings out immediately, as the standard
    /// requires: the FMU may reuse its buffers on the next call).
    pub fn get_string(&mut self, vrs: &[u32]) -> Result<Vec<String>> {
        let f = self.lib.functions.get_string;
        self.get_strings(f, "fmi2GetString", VrKind::String, vrs)
    }

    /// `fmi2SetString`.
    pub fn set_string(&mut self, vrs: &[u32], values: &[&str]) -> Result<()> {
        let f = self.lib.functions.set_string;
        self.set_strings(f, "fmi2SetString", VrKind::String, vrs, values)
    }

    /// `fmi2DoStep`. Discard is reported as [`StepOutcome::Discarded`] with
    /// the FMU's `fmi2LastSuccessfulTime` (or `t` when it cannot say), or as
    /// [`StepOutcome::Terminated`] when `fmi2GetBooleanStatus(fmi2Terminated)`
    /// says the FMU ended the simulation. `no_set_prior` is
    /// `noSetFMUStatePriorToCurrentPoint`: true unless the caller may still
    /// restore a state saved before `t`. An instance for Model Exchange
    /// refuses.
    #[inline]
    pub fn do_step(&mut self, t: f64, h: f64, no_set_prior: bool) -> Result<StepOutcome> {
        self.alive("fmi2DoStep")?;
        let Some(do_step) = self.do_step_fn() else {
            return Err(self.wrong_interface("fmi2DoStep"));
        };
        // SAFETY: component is live.
        let code = unsafe { do_step(self.component, t, h, c_int::from(no_set_prior)) };
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
                    log_call::<Fmi2>(log, c, "fmi2CancelStep");
                }
            }
        }
        self.check("fmi2DoStep", code)?;
        self.time = t + h;
        Ok(StepOutcome::Completed)
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
        let f = self.exported(self.lib.functions.set_real_input_derivatives, F)?;
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
            log_derivatives::<Fmi2>(log, code, F, vrs, &self.int_scratch, values);
        }
        self.check(F, code).map(|_| ())
    }

    /// `fmi2NewDiscreteStates` (Model Exchange, Event Mode): one step of
    /// the event iteration, and what the FMU's `fmi2EventInfo` says.
    pub fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        const F: &str = "fmi2NewDiscreteStates";
        let f = self.update_discrete_states_fn()?;
        let mut info = Fmi2EventInfo::default();
        // SAFETY: the instance is live; info is an fmi2EventInfo for the
        // FMU to fill.
        let code = unsafe { f(self.component, &mut info) };
        if let Some(log) = &self.call_log {
            log_event_info(log, code, &info);
        }
        self.check(F, code)?;
        Ok(DiscreteStatesUpdate {
            discrete_states_need_update: info.new_discrete_states_needed != 0,
            terminate_simulation: info.terminate_simulation != 0,
            nominals_changed: info.nominals_of_continuous_states_changed != 0,
            values_changed: info.values_of_continuous_states_changed != 0,
            next_event_time: (info.next_event_time_defined != 0).then_some(info.next_event_time),
        })
    }
}

#[cfg(test)]
#[path = "fmi2_logger_tests.rs"]
mod logger_tests;
