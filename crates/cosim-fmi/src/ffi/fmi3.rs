//! FMI 3.0, Co-Simulation and Model Exchange: what is FMI 3's own (its
//! function table, its callbacks and intermediate update, its typed
//! variables, the calls whose C signatures are not FMI 2's); the rest of
//! an instance is [`super::common`]'s.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void};
use std::path::Path;
use std::sync::Arc;

use super::call_log::{CallLog, LogNum, VrKind};
use super::clock_update::{CallbackFailure, ClockUpdateQueries, ClockUpdates};
use super::common::{
    Api, ArrayCall, CompletedIntegratorStepFn, Component, Env, ExperimentFn, FmiInstance,
    FmiLibrary, HeldStepOf, Instantiation, Names, READING_PHASES, StatusFn, Vr, check_values,
    cstring, fn_table, instantiated_status, instantiation_failed,
};
use super::log::LogContext;
use super::pool::Pool;
use super::{
    DiscreteStatesUpdate, Interface, IntervalQualifier, Phase, Status, StepOutcome, check_len,
};
use crate::error::Result;

type Fmi3Status = c_int;

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

type IntermediateUpdate =
    unsafe extern "C" fn(*mut c_void, f64, bool, bool, bool, bool, *mut bool, *mut f64);

type LogMessage = unsafe extern "C" fn(*mut c_void, Fmi3Status, *const c_char, *const c_char);

type GetFn<T> = unsafe extern "C" fn(Component, *const Vr, usize, *mut T, usize) -> Fmi3Status;
type SetFn<T> = unsafe extern "C" fn(Component, *const Vr, usize, *const T, usize) -> Fmi3Status;
type DoStepFn = unsafe extern "C" fn(
    Component,
    f64,
    f64,
    bool,
    *mut bool,
    *mut bool,
    *mut bool,
    *mut f64,
) -> Fmi3Status;
type DirectionalFn = unsafe extern "C" fn(
    Component,
    *const Vr,
    usize,
    *const Vr,
    usize,
    *const f64,
    usize,
    *mut f64,
    usize,
) -> Fmi3Status;
type OutputDerivativesFn =
    unsafe extern "C" fn(Component, *const Vr, usize, *const i32, *mut f64, usize) -> Fmi3Status;
type UpdateDiscreteStatesFn = unsafe extern "C" fn(
    Component,
    *mut bool,
    *mut bool,
    *mut bool,
    *mut bool,
    *mut bool,
    *mut f64,
) -> Fmi3Status;
type CountFn = unsafe extern "C" fn(Component, *mut usize) -> Fmi3Status;
/// `fmi3ClockUpdateCallback` (Scheduled Execution).
type ClockUpdateFn = unsafe extern "C" fn(*mut c_void);
/// `fmi3LockPreemptionCallback` / `fmi3UnlockPreemptionCallback`.
type PreemptionFn = unsafe extern "C" fn();

/// Scheduled Execution's `fmi3ClockUpdateCallback`: inside
/// `fmi3ActivateModelPartition` the FMU says an output Clock ticked or a
/// countdown Clock has a new interval; the importer asks which, in Clock
/// Update Mode ([`super::clock_update`]).
///
/// # Safety
/// `env` is the boxed [`Environment`] of a live instance.
unsafe extern "C" fn clock_update(env: *mut c_void) {
    if env.is_null() {
        return;
    }
    // SAFETY: env is the Environment owned by the instance, alive until
    // after fmi3FreeInstance.
    let env = unsafe { &*(env as *const Environment) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // (A callback re-entered from inside the queries finds the cell
        // borrowed and does nothing.)
        if let Ok(mut queries) = env.clock_update.try_borrow_mut() {
            queries.on_callback(env.call_log.as_deref());
        }
    }));
}

/// Scheduled Execution's preemption locks: cosim activates one model
/// partition at a time, on one thread, so nothing preempts it.
unsafe extern "C" fn no_preemption() {}

/// What `instanceEnvironment` points to: the FMU's logger and the inputs
/// the importer hands over in Intermediate Update Mode. Callbacks reach it
/// through a shared reference while `fmi3DoStep` runs; the instance's own
/// methods touch `intermediate` only between FMU calls.
pub struct Environment {
    log: LogContext,
    intermediate: RefCell<IntermediateInputs>,
    /// Scheduled Execution: what the Clock Update Mode callback asks.
    clock_update: RefCell<ClockUpdateQueries>,
    /// The FMI call log, for the calls made inside the callbacks.
    call_log: Option<Arc<CallLog>>,
}

impl Env for Box<Environment> {
    fn log(&self) -> &LogContext {
        &self.log
    }
}

/// Float inputs given to the FMU inside `fmi3DoStep` as a polynomial:
/// at each intermediate update time `s` the callback sets
/// `u(s) = sum_k taylor[i][k] (s - t0)^k / k!` (FMI 3.0 sec. 4.2.4, the
/// counterpart of FMI 2 input derivatives).
struct IntermediateInputs {
    /// The instance, once instantiated (the callback calls back into it).
    instance: Component,
    set_float64: SetFn<f64>,
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
    /// FMI 3.0's own functions of one shared library (those of
    /// [`super::common::CommonFunctions`] aside): those of one interface
    /// optional here, required where it is instantiated.
    pub struct Fmi3Functions {
        mandatory {
            enter_initialization_mode: "fmi3EnterInitializationMode" => ExperimentFn<Fmi3>,
            get_float64: "fmi3GetFloat64" => GetFn<f64>,
            set_float64: "fmi3SetFloat64" => SetFn<f64>,
            get_int32: "fmi3GetInt32" => GetFn<i32>,
            set_int32: "fmi3SetInt32" => SetFn<i32>,
            get_int64: "fmi3GetInt64" => GetFn<i64>,
            set_int64: "fmi3SetInt64" => SetFn<i64>,
            get_boolean: "fmi3GetBoolean" => GetFn<bool>,
            set_boolean: "fmi3SetBoolean" => SetFn<bool>,
            get_string: "fmi3GetString" => GetFn<*const c_char>,
            set_string: "fmi3SetString" => SetFn<*const c_char>,
        }
        optional {
            // Co-Simulation: mandatory for it.
            instantiate_co_simulation: "fmi3InstantiateCoSimulation" => unsafe extern "C" fn(*const c_char, *const c_char, *const c_char, bool, bool, bool, bool, *const Vr, usize, *mut c_void, LogMessage, Option<IntermediateUpdate>) -> Component,
            do_step: "fmi3DoStep" => DoStepFn,
            // Co-Simulation with event mode: mandatory for it.
            enter_step_mode: "fmi3EnterStepMode" => StatusFn,
            // Scheduled Execution: mandatory for it.
            instantiate_scheduled_execution: "fmi3InstantiateScheduledExecution" => unsafe extern "C" fn(*const c_char, *const c_char, *const c_char, bool, bool, *mut c_void, LogMessage, Option<ClockUpdateFn>, Option<PreemptionFn>, Option<PreemptionFn>) -> Component,
            activate_model_partition: "fmi3ActivateModelPartition" => unsafe extern "C" fn(Component, Vr, f64) -> Fmi3Status,
            // Clocks: mandatory in FMI 3.0, resolved lazily (called only for
            // an FMU with clocks).
            get_clock: "fmi3GetClock" => unsafe extern "C" fn(Component, *const Vr, usize, *mut bool) -> Fmi3Status,
            set_clock: "fmi3SetClock" => unsafe extern "C" fn(Component, *const Vr, usize, *const bool) -> Fmi3Status,
            get_interval_decimal: "fmi3GetIntervalDecimal" => unsafe extern "C" fn(Component, *const Vr, usize, *mut f64, *mut c_int) -> Fmi3Status,
            get_shift_decimal: "fmi3GetShiftDecimal" => unsafe extern "C" fn(Component, *const Vr, usize, *mut f64) -> Fmi3Status,
            set_interval_decimal: "fmi3SetIntervalDecimal" => unsafe extern "C" fn(Component, *const Vr, usize, *const f64) -> Fmi3Status,
            // Model Exchange: mandatory for it.
            instantiate_model_exchange: "fmi3InstantiateModelExchange" => unsafe extern "C" fn(*const c_char, *const c_char, *const c_char, bool, bool, *mut c_void, LogMessage) -> Component,
            update_discrete_states: "fmi3UpdateDiscreteStates" => UpdateDiscreteStatesFn,
            get_number_of_event_indicators: "fmi3GetNumberOfEventIndicators" => CountFn,
            get_number_of_continuous_states: "fmi3GetNumberOfContinuousStates" => CountFn,
            // Mandatory in FMI 3.0 but called only for structural parameters.
            enter_configuration_mode: "fmi3EnterConfigurationMode" => StatusFn,
            exit_configuration_mode: "fmi3ExitConfigurationMode" => StatusFn,
            get_directional_derivative: "fmi3GetDirectionalDerivative" => DirectionalFn,
            get_output_derivatives: "fmi3GetOutputDerivatives" => OutputDerivativesFn,
            // Mandatory in FMI 3.0, resolved lazily so that a library
            // lacking one fails only when a variable of that type is used.
            get_float32: "fmi3GetFloat32" => GetFn<f32>,
            set_float32: "fmi3SetFloat32" => SetFn<f32>,
            get_int8: "fmi3GetInt8" => GetFn<i8>,
            set_int8: "fmi3SetInt8" => SetFn<i8>,
            get_uint8: "fmi3GetUInt8" => GetFn<u8>,
            set_uint8: "fmi3SetUInt8" => SetFn<u8>,
            get_int16: "fmi3GetInt16" => GetFn<i16>,
            set_int16: "fmi3SetInt16" => SetFn<i16>,
            get_uint16: "fmi3GetUInt16" => GetFn<u16>,
            set_uint16: "fmi3SetUInt16" => SetFn<u16>,
            get_uint32: "fmi3GetUInt32" => GetFn<u32>,
            set_uint32: "fmi3SetUInt32" => SetFn<u32>,
            get_uint64: "fmi3GetUInt64" => GetFn<u64>,
            set_uint64: "fmi3SetUInt64" => SetFn<u64>,
            get_binary: "fmi3GetBinary" => unsafe extern "C" fn(Component, *const Vr, usize, *mut usize, *mut *const u8, usize) -> Fmi3Status,
            set_binary: "fmi3SetBinary" => unsafe extern "C" fn(Component, *const Vr, usize, *const usize, *const *const u8, usize) -> Fmi3Status,
        }
    }
}

/// Every FMI 3.0 library this process loaded (`super::pool`).
static POOL: Pool<Fmi3Library> = Pool::new();

/// FMI 3.0, for [`super::common`]'s code generic over the version.
#[derive(Debug, Clone, Copy)]
pub enum Fmi3 {}

/// A loaded FMI 3.0 shared library and its resolved functions.
pub type Fmi3Library = FmiLibrary<Fmi3>;

/// One FMI 3.0 instance.
pub type Fmi3Instance = FmiInstance<Fmi3>;

/// The FMI 3 counterpart of [`super::fmi2::Fmi2HeldStep`]: one
/// instance's held step (`fmi3SetFloat64` of the inputs, `fmi3DoStep`,
/// `fmi3GetFloat64` of the outputs) bound once
/// ([`FmiInstance::held_step`]). Made only for an instance that takes its
/// inputs held (none through an intermediate update's polynomial); an
/// early return and the end of the simulation go out of line to
/// [`Fmi3Instance::do_step`]'s checks.
pub type Fmi3HeldStep<'a> = HeldStepOf<'a, Fmi3>;

impl Api for Fmi3 {
    type Bool = bool;
    type Functions = Fmi3Functions;
    type Env = Box<Environment>;
    type GetFn<T> = GetFn<T>;
    type SetFn<T> = SetFn<T>;
    type DoStep = DoStepFn;
    /// `eventHandlingNeeded`, `terminateSimulation`, `earlyReturn`,
    /// `lastSuccessfulTime`.
    type StepFlags = (bool, bool, bool, f64);
    type Directional = DirectionalFn;
    type OutputDerivatives = OutputDerivativesFn;
    type UpdateDiscreteStates = UpdateDiscreteStatesFn;

    const NAMES: Names = Names {
        get_version: "fmi3GetVersion",
        set_debug_logging: "fmi3SetDebugLogging",
        free_instance: "fmi3FreeInstance",
        exit_initialization_mode: "fmi3ExitInitializationMode",
        terminate: "fmi3Terminate",
        reset: "fmi3Reset",
        get_fmu_state: "fmi3GetFMUState",
        set_fmu_state: "fmi3SetFMUState",
        free_fmu_state: "fmi3FreeFMUState",
        serialized_fmu_state_size: "fmi3SerializedFMUStateSize",
        serialize_fmu_state: "fmi3SerializeFMUState",
        deserialize_fmu_state: "fmi3DeserializeFMUState",
        get_directional_derivative: "fmi3GetDirectionalDerivative",
        get_output_derivatives: "fmi3GetOutputDerivatives",
        do_step: "fmi3DoStep",
        get_f64: "fmi3GetFloat64",
        set_f64: "fmi3SetFloat64",
        enter_event_mode: "fmi3EnterEventMode",
        update_discrete_states: "fmi3UpdateDiscreteStates",
        enter_continuous_time_mode: "fmi3EnterContinuousTimeMode",
        completed_integrator_step: "fmi3CompletedIntegratorStep",
        set_time: "fmi3SetTime",
        set_continuous_states: ArrayCall {
            function: "fmi3SetContinuousStates",
            array: "continuousStates",
            count: "nContinuousStates",
            phases: &[Phase::ContinuousTimeMode],
        },
        get_derivatives: ArrayCall {
            function: "fmi3GetContinuousStateDerivatives",
            array: "derivatives",
            count: "nContinuousStates",
            phases: READING_PHASES,
        },
        get_event_indicators: ArrayCall {
            function: "fmi3GetEventIndicators",
            array: "eventIndicators",
            count: "nEventIndicators",
            phases: READING_PHASES,
        },
        get_continuous_states: ArrayCall {
            function: "fmi3GetContinuousStates",
            array: "continuousStates",
            count: "nContinuousStates",
            phases: READING_PHASES,
        },
        get_nominals: ArrayCall {
            function: "fmi3GetNominalsOfContinuousStates",
            array: "nominals",
            count: "nContinuousStates",
            phases: READING_PHASES,
        },
        can_get_and_set_fmu_state: "canGetAndSetFMUState",
        can_serialize_fmu_state: "canSerializeFMUState",
        provides_directional_derivatives: "providesDirectionalDerivatives",
        state_arg: "FMUState",
        vr_arg: "valueReferences",
        nvr_arg: "nValueReferences",
        values_arg: "values",
        n_values_arg: Some("nValues"),
        orders_arg: "orders",
        directional_args: ["unknowns", "nUnknowns", "knowns", "nKnowns"],
        directional_values: [
            ("seed", Some("nSeed")),
            ("sensitivity", Some("nSensitivity")),
        ],
        float_kind: VrKind::Any,
    };

    fn status(code: c_int) -> Status {
        Status::from_fmi3(code)
    }

    fn boolean(b: bool) -> bool {
        b
    }

    fn is_true(b: bool) -> bool {
        b
    }

    fn pool() -> &'static Pool<Fmi3Library> {
        &POOL
    }

    fn load(lib: &libloading::Library, path: &Path) -> Result<Fmi3Functions> {
        Fmi3Functions::load(lib, path)
    }

    fn missing(f: &Fmi3Functions, interface: Interface) -> Option<&'static str> {
        match interface {
            Interface::CoSimulation => f
                .instantiate_co_simulation
                .is_none()
                .then_some("fmi3InstantiateCoSimulation"),
            Interface::ModelExchange => [
                (
                    f.instantiate_model_exchange.is_some(),
                    "fmi3InstantiateModelExchange",
                ),
                (
                    f.get_number_of_event_indicators.is_some(),
                    "fmi3GetNumberOfEventIndicators",
                ),
                (
                    f.get_number_of_continuous_states.is_some(),
                    "fmi3GetNumberOfContinuousStates",
                ),
            ]
            .into_iter()
            .find_map(|(present, name)| (!present).then_some(name)),
            Interface::ScheduledExecution => [
                (
                    f.instantiate_scheduled_execution.is_some(),
                    "fmi3InstantiateScheduledExecution",
                ),
                (
                    f.activate_model_partition.is_some(),
                    "fmi3ActivateModelPartition",
                ),
            ]
            .into_iter()
            .find_map(|(present, name)| (!present).then_some(name)),
        }
    }

    fn do_step_fn(f: &Fmi3Functions) -> Option<DoStepFn> {
        f.do_step
    }

    fn update_discrete_states_fn(f: &Fmi3Functions) -> Option<UpdateDiscreteStatesFn> {
        f.update_discrete_states
    }

    fn f64_fns(f: &Fmi3Functions) -> (SetFn<f64>, GetFn<f64>) {
        (f.set_float64, f.get_float64)
    }

    fn directional_fn(f: &Fmi3Functions) -> Option<DirectionalFn> {
        f.get_directional_derivative
    }

    fn output_derivatives_fn(f: &Fmi3Functions) -> Option<OutputDerivativesFn> {
        f.get_output_derivatives
    }

    fn optional_functions(f: &Fmi3Functions, add: &mut dyn FnMut(bool, &'static str)) {
        add(
            f.get_directional_derivative.is_some(),
            "fmi3GetDirectionalDerivative",
        );
        add(
            f.get_output_derivatives.is_some(),
            "fmi3GetOutputDerivatives",
        );
    }

    /// (An array variable has several values: `nValues >= nvr`; the FMU
    /// checks that it is the sum of the variables' sizes.)
    #[inline(always)]
    fn values_fit(n_vrs: usize, n_values: usize) -> bool {
        n_values >= n_vrs
    }

    #[inline(always)]
    unsafe fn get<T>(f: GetFn<T>, c: Component, vrs: &[Vr], values: &mut [T]) -> c_int {
        // SAFETY: as the caller guarantees; each array is passed with its
        // own length.
        unsafe {
            f(
                c,
                vrs.as_ptr(),
                vrs.len(),
                values.as_mut_ptr(),
                values.len(),
            )
        }
    }

    #[inline(always)]
    unsafe fn set<T>(f: SetFn<T>, c: Component, vrs: &[Vr], values: &[T]) -> c_int {
        // SAFETY: as the caller guarantees; each array is passed with its
        // own length.
        unsafe { f(c, vrs.as_ptr(), vrs.len(), values.as_ptr(), values.len()) }
    }

    #[inline(always)]
    unsafe fn do_step(
        f: DoStepFn,
        c: Component,
        t: f64,
        h: f64,
        no_set_prior: bool,
    ) -> (c_int, (bool, bool, bool, f64)) {
        let (mut event_handling_needed, mut terminate, mut early_return) = (false, false, false);
        let mut last_successful_time = t;
        // SAFETY: as the caller guarantees; the out-pointers point to
        // locals.
        let code = unsafe {
            f(
                c,
                t,
                h,
                no_set_prior,
                &mut event_handling_needed,
                &mut terminate,
                &mut early_return,
                &mut last_successful_time,
            )
        };
        (
            code,
            (
                event_handling_needed,
                terminate,
                early_return,
                last_successful_time,
            ),
        )
    }

    #[inline(always)]
    fn step_ok(
        code: c_int,
        &(event, terminate, early_return, _): &(bool, bool, bool, f64),
    ) -> bool {
        code == 0 && !event && !terminate && !early_return
    }

    fn step_returned(
        instance: &mut Fmi3Instance,
        code: c_int,
        t: f64,
        h: f64,
        _: bool,
        (event, terminate, early_return, last_successful_time): (bool, bool, bool, f64),
    ) -> Result<StepOutcome> {
        instance.do_step_outcome(
            code,
            t,
            h,
            (event, terminate, early_return),
            last_successful_time,
        )
    }

    /// Inputs registered for intermediate update may be bound while they
    /// are held (no polynomial: the callback sets nothing, and
    /// `fmi3SetFloat64` of them would only keep it so).
    fn holds_inputs(instance: &Fmi3Instance, in_vrs: &[u32]) -> bool {
        let ii = instance.env.intermediate.borrow();
        ii.vrs.is_empty() || (!ii.varying && ii.vrs == in_vrs)
    }

    unsafe fn directional(
        f: DirectionalFn,
        c: Component,
        unknowns: &[Vr],
        knowns: &[Vr],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> c_int {
        // SAFETY: as the caller guarantees; each array is passed with its
        // own length.
        unsafe {
            f(
                c,
                unknowns.as_ptr(),
                unknowns.len(),
                knowns.as_ptr(),
                knowns.len(),
                seed.as_ptr(),
                seed.len(),
                sensitivity.as_mut_ptr(),
                sensitivity.len(),
            )
        }
    }

    unsafe fn output_derivatives(
        f: OutputDerivativesFn,
        c: Component,
        vrs: &[Vr],
        orders: &[c_int],
        values: &mut [f64],
    ) -> c_int {
        // SAFETY: as the caller guarantees; values is passed with its
        // length.
        unsafe {
            f(
                c,
                vrs.as_ptr(),
                vrs.len(),
                orders.as_ptr(),
                values.as_mut_ptr(),
                values.len(),
            )
        }
    }

    unsafe fn completed_integrator_step(
        f: CompletedIntegratorStepFn<Fmi3>,
        c: Component,
        no_set_prior: bool,
    ) -> (c_int, bool, bool) {
        // fmi3Boolean is C `bool`: read back as bytes, so that a value
        // other than 0 or 1 cannot make an invalid Rust `bool`.
        let mut flags = [0u8; 2];
        let [enter_event_mode, terminate] = flags.each_mut().map(|b| (b as *mut u8).cast::<bool>());
        // SAFETY: as the caller guarantees; the out-pointers point to
        // bytes of `flags`, which have `bool`'s size and alignment.
        let code = unsafe { f(c, no_set_prior, enter_event_mode, terminate) };
        (code, flags[0] != 0, flags[1] != 0)
    }
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

/// Logs `fmi3UpdateDiscreteStates` with its output arguments (out of
/// line).
#[cold]
#[inline(never)]
fn log_update_discrete_states(
    log: &CallLog,
    code: Fmi3Status,
    flags: &[u8; 5],
    next_event_time: f64,
) {
    const FLAGS: [&str; 5] = [
        "discreteStatesNeedUpdate",
        "terminateSimulation",
        "nominalsOfContinuousStatesChanged",
        "valuesOfContinuousStatesChanged",
        "nextEventTimeDefined",
    ];
    let mut line = log.line(Status::from_fmi3(code), "fmi3UpdateDiscreteStates");
    for (name, &flag) in FLAGS.iter().zip(flags) {
        line = line.flag(name, flag != 0);
    }
    line.num("nextEventTime", next_event_time).end();
}

impl Fmi3Instance {
    /// `fmi3InstantiateCoSimulation` (with event mode and early return
    /// off) or `fmi3InstantiateModelExchange`, for `how.interface`. An
    /// instance for Model Exchange then asks the FMU its numbers of
    /// continuous states and event indicators
    /// (`fmi3GetNumberOfContinuousStates`, `fmi3GetNumberOfEventIndicators`).
    pub(crate) fn instantiate(lib: Arc<Fmi3Library>, mut how: Instantiation<'_>) -> Result<Self> {
        let (name, token, interface) = (how.name, how.token, how.interface);
        // Event mode only where the FMU has it (it must refuse it else).
        how.events.event_mode_used &= how.caps.has_event_mode;
        let events = how.events;
        if events.event_mode_used {
            for (present, f) in [
                (lib.common.enter_event_mode.is_some(), "fmi3EnterEventMode"),
                (
                    lib.functions.update_discrete_states.is_some(),
                    "fmi3UpdateDiscreteStates",
                ),
                (lib.functions.enter_step_mode.is_some(), "fmi3EnterStepMode"),
            ] {
                if !present {
                    return Err(lib.missing(f));
                }
            }
        }
        let logging_on = how.logging_on;
        let functions = lib.functions_for(interface)?;
        let function = match interface {
            Interface::CoSimulation => "fmi3InstantiateCoSimulation",
            Interface::ModelExchange => "fmi3InstantiateModelExchange",
            Interface::ScheduledExecution => "fmi3InstantiateScheduledExecution",
        };
        let c_name = cstring(name, function, name)?;
        let c_token = cstring(name, function, token)?;
        // FMI 3.0: an absolute path with a trailing separator.
        let mut resource_path = how.resources.to_string_lossy().into_owned();
        if !resource_path.ends_with('/') {
            resource_path.push('/');
        }
        let c_resources = cstring(name, function, &resource_path)?;
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
            clock_update: RefCell::new(ClockUpdateQueries::new(
                lib.functions.get_clock,
                lib.functions.get_interval_decimal,
            )),
            call_log: how.call_log.clone(),
        });
        let env_ptr = &*env as *const Environment as *mut c_void;
        // (With the intermediate update callback passed for Co-Simulation,
        // for its log line.)
        let (instance, co_simulation_callback) = match interface {
            Interface::CoSimulation => {
                let f = (lib.functions.instantiate_co_simulation)
                    .ok_or_else(|| lib.missing(function))?;
                // The callback only where the FMU declares it will call it.
                let intermediate: Option<IntermediateUpdate> =
                    if how.caps.provides_intermediate_update {
                        Some(intermediate_update)
                    } else {
                        None
                    };
                // SAFETY: strings are NUL-terminated and outlive the call;
                // the environment is boxed and kept until after
                // fmi3FreeInstance.
                let instance = unsafe {
                    f(
                        c_name.as_ptr(),
                        c_token.as_ptr(),
                        c_resources.as_ptr(),
                        false,
                        logging_on,
                        events.event_mode_used,
                        events.early_return_allowed,
                        std::ptr::null(),
                        0,
                        env_ptr,
                        log_message,
                        intermediate,
                    )
                };
                let callback = intermediate.map_or(std::ptr::null(), |f| f as *const c_void);
                (instance, Some(callback))
            }
            Interface::ModelExchange => {
                let f = (lib.functions.instantiate_model_exchange)
                    .ok_or_else(|| lib.missing(function))?;
                // SAFETY: as above.
                let instance = unsafe {
                    f(
                        c_name.as_ptr(),
                        c_token.as_ptr(),
                        c_resources.as_ptr(),
                        false,
                        logging_on,
                        env_ptr,
                        log_message,
                    )
                };
                (instance, None)
            }
            Interface::ScheduledExecution => {
                let f = (lib.functions.instantiate_scheduled_execution)
                    .ok_or_else(|| lib.missing(function))?;
                // SAFETY: as above; the callbacks are cosim's own
                // functions (`clock_update`, `no_preemption`), which live
                // as long as the process.
                let instance = unsafe {
                    f(
                        c_name.as_ptr(),
                        c_token.as_ptr(),
                        c_resources.as_ptr(),
                        false,
                        logging_on,
                        env_ptr,
                        log_message,
                        Some(clock_update),
                        Some(no_preemption),
                        Some(no_preemption),
                    )
                };
                (instance, None)
            }
        };
        if let Some(log) = &how.call_log {
            let line = log
                .line(instantiated_status(instance), function)
                .text("instanceName", name)
                .text("instantiationToken", token)
                .text("resourcePath", &resource_path)
                .flag("visible", false)
                .flag("loggingOn", logging_on);
            match co_simulation_callback {
                Some(callback) => line
                    .flag("eventModeUsed", events.event_mode_used)
                    .flag("earlyReturnAllowed", events.early_return_allowed)
                    .values::<u32>("requiredIntermediateVariables", &[])
                    .arg("nRequiredIntermediateVariables", 0)
                    .ptr("intermediateUpdate", callback)
                    .end(),
                None => line.end(),
            }
        }
        if instance.is_null() {
            return Err(instantiation_failed(name, function, &env.log));
        }
        env.intermediate.borrow_mut().instance = instance;
        env.clock_update.borrow_mut().instance = instance;
        let mut instance = FmiInstance::new(instance, lib, how, functions, env);
        if interface == Interface::ModelExchange {
            instance.count_states_and_indicators()?;
        }
        Ok(instance)
    }

    /// Asks the FMU for its numbers of continuous states and of event
    /// indicators (Model Exchange; they may depend on structural
    /// parameters).
    fn count_states_and_indicators(&mut self) -> Result<()> {
        let f = &self.lib.functions;
        let (states, indicators) = (
            f.get_number_of_continuous_states,
            f.get_number_of_event_indicators,
        );
        self.nx = self.count(
            states,
            "fmi3GetNumberOfContinuousStates",
            "nContinuousStates",
        )?;
        self.nz = self.count(
            indicators,
            "fmi3GetNumberOfEventIndicators",
            "nEventIndicators",
        )?;
        Ok(())
    }

    /// Calls the counting function `f`, `function`, whose output argument
    /// is `arg`.
    fn count(&mut self, f: Option<CountFn>, function: &'static str, arg: &str) -> Result<usize> {
        self.alive(function)?;
        let f = self.exported(f, function)?;
        let mut n = 0usize;
        // SAFETY: the instance is live; n is a local for the FMU to write.
        let code = unsafe { f(self.component, &mut n) };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), function)
                .arg(arg, n)
                .end();
        }
        self.check(function, code)?;
        Ok(n)
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

    /// `fmi3EnterConfigurationMode` (from Instantiated): structural
    /// parameters can be set until [`Fmi3Instance::exit_configuration_mode`].
    pub fn enter_configuration_mode(&mut self) -> Result<()> {
        const F: &str = "fmi3EnterConfigurationMode";
        self.alive(F)?;
        if self.phase != Phase::Instantiated {
            return Err(self.out_of_sequence(F, "Instantiated"));
        }
        let f = self.exported(self.lib.functions.enter_configuration_mode, F)?;
        self.change_mode(f, F, Phase::Configuration)
    }

    /// `fmi3ExitConfigurationMode` (back to Instantiated). An instance for
    /// Model Exchange then asks the FMU again for its numbers of
    /// continuous states and event indicators.
    pub fn exit_configuration_mode(&mut self) -> Result<()> {
        const F: &str = "fmi3ExitConfigurationMode";
        self.alive(F)?;
        if self.phase != Phase::Configuration {
            return Err(self.out_of_sequence(F, "Configuration Mode"));
        }
        let f = self.exported(self.lib.functions.exit_configuration_mode, F)?;
        self.change_mode(f, F, Phase::Instantiated)?;
        if self.interface() == Interface::ModelExchange {
            self.count_states_and_indicators()?;
        }
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
        let f = self.lib.functions.enter_initialization_mode;
        self.call_with_experiment(f, F, tolerance, start_time, stop_time)?;
        self.phase = Phase::Initialization;
        Ok(())
    }

    /// `fmi3GetFloat64` for scalar variables.
    #[inline]
    pub fn get_float64(&mut self, vrs: &[u32], values: &mut [f64]) -> Result<()> {
        let f = self.lib.functions.get_float64;
        self.get_values(f, "fmi3GetFloat64", VrKind::Any, vrs, values)
    }

    /// `fmi3SetFloat64` for scalar variables. On the inputs registered for
    /// intermediate update, the values also start a new input polynomial.
    #[inline]
    pub fn set_float64(&mut self, vrs: &[u32], values: &[f64]) -> Result<()> {
        let f = self.lib.functions.set_float64;
        self.set_values(f, "fmi3SetFloat64", VrKind::Any, vrs, values)?;
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
        let f = self.lib.functions.get_int32;
        self.get_values(f, "fmi3GetInt32", VrKind::Any, vrs, values)
    }

    /// `fmi3SetInt32`.
    pub fn set_int32(&mut self, vrs: &[u32], values: &[i32]) -> Result<()> {
        let f = self.lib.functions.set_int32;
        self.set_values(f, "fmi3SetInt32", VrKind::Any, vrs, values)
    }

    /// `fmi3GetInt64` (also enumerations).
    pub fn get_int64(&mut self, vrs: &[u32], values: &mut [i64]) -> Result<()> {
        let f = self.lib.functions.get_int64;
        self.get_values(f, "fmi3GetInt64", VrKind::Any, vrs, values)
    }

    /// `fmi3SetInt64` (also enumerations).
    pub fn set_int64(&mut self, vrs: &[u32], values: &[i64]) -> Result<()> {
        let f = self.lib.functions.set_int64;
        self.set_values(f, "fmi3SetInt64", VrKind::Any, vrs, values)
    }

    /// `fmi3GetFloat32`.
    pub fn get_float32(&mut self, vrs: &[u32], values: &mut [f32]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_float32, "fmi3GetFloat32")?;
        self.get_values(f, "fmi3GetFloat32", VrKind::Any, vrs, values)
    }

    /// `fmi3SetFloat32`.
    pub fn set_float32(&mut self, vrs: &[u32], values: &[f32]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_float32, "fmi3SetFloat32")?;
        self.set_values(f, "fmi3SetFloat32", VrKind::Any, vrs, values)
    }

    /// `fmi3GetInt8`.
    pub fn get_int8(&mut self, vrs: &[u32], values: &mut [i8]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_int8, "fmi3GetInt8")?;
        self.get_values(f, "fmi3GetInt8", VrKind::Any, vrs, values)
    }

    /// `fmi3SetInt8`.
    pub fn set_int8(&mut self, vrs: &[u32], values: &[i8]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_int8, "fmi3SetInt8")?;
        self.set_values(f, "fmi3SetInt8", VrKind::Any, vrs, values)
    }

    /// `fmi3GetUInt8`.
    pub fn get_uint8(&mut self, vrs: &[u32], values: &mut [u8]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_uint8, "fmi3GetUInt8")?;
        self.get_values(f, "fmi3GetUInt8", VrKind::Any, vrs, values)
    }

    /// `fmi3SetUInt8`.
    pub fn set_uint8(&mut self, vrs: &[u32], values: &[u8]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_uint8, "fmi3SetUInt8")?;
        self.set_values(f, "fmi3SetUInt8", VrKind::Any, vrs, values)
    }

    /// `fmi3GetInt16`.
    pub fn get_int16(&mut self, vrs: &[u32], values: &mut [i16]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_int16, "fmi3GetInt16")?;
        self.get_values(f, "fmi3GetInt16", VrKind::Any, vrs, values)
    }

    /// `fmi3SetInt16`.
    pub fn set_int16(&mut self, vrs: &[u32], values: &[i16]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_int16, "fmi3SetInt16")?;
        self.set_values(f, "fmi3SetInt16", VrKind::Any, vrs, values)
    }

    /// `fmi3GetUInt16`.
    pub fn get_uint16(&mut self, vrs: &[u32], values: &mut [u16]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_uint16, "fmi3GetUInt16")?;
        self.get_values(f, "fmi3GetUInt16", VrKind::Any, vrs, values)
    }

    /// `fmi3SetUInt16`.
    pub fn set_uint16(&mut self, vrs: &[u32], values: &[u16]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_uint16, "fmi3SetUInt16")?;
        self.set_values(f, "fmi3SetUInt16", VrKind::Any, vrs, values)
    }

    /// `fmi3GetUInt32`.
    pub fn get_uint32(&mut self, vrs: &[u32], values: &mut [u32]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_uint32, "fmi3GetUInt32")?;
        self.get_values(f, "fmi3GetUInt32", VrKind::Any, vrs, values)
    }

    /// `fmi3SetUInt32`.
    pub fn set_uint32(&mut self, vrs: &[u32], values: &[u32]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_uint32, "fmi3SetUInt32")?;
        self.set_values(f, "fmi3SetUInt32", VrKind::Any, vrs, values)
    }

    /// `fmi3GetUInt64`.
    pub fn get_uint64(&mut self, vrs: &[u32], values: &mut [u64]) -> Result<()> {
        let f = self.exported(self.lib.functions.get_uint64, "fmi3GetUInt64")?;
        self.get_values(f, "fmi3GetUInt64", VrKind::Any, vrs, values)
    }

    /// `fmi3SetUInt64`.
    pub fn set_uint64(&mut self, vrs: &[u32], values: &[u64]) -> Result<()> {
        let f = self.exported(self.lib.functions.set_uint64, "fmi3SetUInt64")?;
        self.set_values(f, "fmi3SetUInt64", VrKind::Any, vrs, values)
    }

    /// `fmi3GetBoolean`.
    pub fn get_boolean(&mut self, vrs: &[u32], values: &mut [bool]) -> Result<()> {
        const F: &str = "fmi3GetBoolean";
        check_values::<Fmi3>(&self.name, F, vrs.len(), values.len())?;
        self.alive(F)?;
        // fmi3Boolean is C99 `bool`; read into bytes first so that a library
        // writing a value other than 0/1 cannot produce an invalid Rust bool.
        let mut bytes = std::mem::take(&mut self.byte_scratch);
        bytes.clear();
        bytes.resize(values.len(), 0);
        // SAFETY: `vrs` has nvr elements, `bytes` nValues = values.len() >=
        // nvr, each passed with its length; u8 has bool's layout.
        let code = unsafe {
            (self.lib.functions.get_boolean)(
                self.component,
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
            super::common::log_values::<Fmi3, bool>(log, code, F, VrKind::Any, vrs, values);
        }
        self.byte_scratch = bytes;
        self.check(F, code).map(|_| ())
    }

    /// `fmi3SetBoolean`.
    pub fn set_boolean(&mut self, vrs: &[u32], values: &[bool]) -> Result<()> {
        let f = self.lib.functions.set_boolean;
        self.set_values(f, "fmi3SetBoolean", VrKind::Any, vrs, values)
    }

    /// `fmi3GetString` (copied out immediately).
    pub fn get_string(&mut self, vrs: &[u32]) -> Result<Vec<String>> {
        let f = self.lib.functions.get_string;
        self.get_strings(f, "fmi3GetString", VrKind::Any, vrs)
    }

    /// `fmi3SetString`.
    pub fn set_string(&mut self, vrs: &[u32], values: &[&str]) -> Result<()> {
        let f = self.lib.functions.set_string;
        self.set_strings(f, "fmi3SetString", VrKind::Any, vrs, values)
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
                self.component,
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
        check_values::<Fmi3>(&self.name, "fmi3SetBinary", vrs.len(), values.len())?;
        let f = self.exported(self.lib.functions.set_binary, "fmi3SetBinary")?;
        self.alive("fmi3SetBinary")?;
        let sizes: Vec<usize> = values.iter().map(|v| v.len()).collect();
        let ptrs: Vec<*const u8> = values.iter().map(|v| v.as_ptr()).collect();
        // SAFETY: vrs, sizes and ptrs have vrs.len() elements; each pointer
        // is valid for its size for the duration of the call.
        let code = unsafe {
            f(
                self.component,
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

    /// `fmi3DoStep`. Early return and Discard are reported as outcomes. An
    /// instance for Model Exchange refuses.
    #[inline]
    pub fn do_step(&mut self, t: f64, h: f64, no_set_prior: bool) -> Result<StepOutcome> {
        self.alive("fmi3DoStep")?;
        let Some(do_step) = self.do_step_fn() else {
            return Err(self.wrong_interface("fmi3DoStep"));
        };
        self.time = t;
        self.env.intermediate.borrow_mut().t0 = t;
        let mut event_handling_needed = false;
        let mut terminate = false;
        let mut early_return = false;
        let mut last_successful_time = t;
        // SAFETY: instance is live; the out-pointers point to locals.
        let code = unsafe {
            do_step(
                self.component,
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
        self.do_step_outcome(
            code,
            t,
            h,
            (event_handling_needed, terminate, early_return),
            last_successful_time,
        )
    }

    /// What `fmi3DoStep` from `t` by `h` returning `code` with
    /// `(eventHandlingNeeded, terminateSimulation, earlyReturn)` and
    /// `lastSuccessfulTime` makes of the step (and of the instance's
    /// time): its error, an event to handle, an early return, a discarded
    /// step or the end of the simulation, or a completed step; an input
    /// that intermediate update failed to set during the step is its
    /// error.
    fn do_step_outcome(
        &mut self,
        code: Fmi3Status,
        t: f64,
        h: f64,
        (event, terminate, early_return): (bool, bool, bool),
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
        if event && self.events.event_mode_used {
            // (Where the step ended: its end, unless it returned early.)
            let at = if early_return {
                last_successful_time
            } else {
                t + h
            };
            self.time = at;
            return Ok(StepOutcome::EventHandlingNeeded {
                last_successful_time: at,
            });
        }
        if event {
            // (FMI 3.0 sec. 4.2.2: not to be signalled without event mode;
            // the FMU handled it inside the step.)
            tracing::debug!(target: "fmu", instance = %self.name, "fmi3DoStep said eventHandlingNeeded, but the instance was instantiated with eventModeUsed = false: ignored");
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

    /// `fmi3SetClock`: activates the input Clocks `vrs` (`active[i]`
    /// true), or deactivates them (FMI 3.0: in Event Mode).
    pub fn set_clock(&mut self, vrs: &[u32], active: &[bool]) -> Result<()> {
        const F: &str = "fmi3SetClock";
        check_values::<Fmi3>(&self.name, F, vrs.len(), active.len())?;
        let f = self.clock_call(self.lib.functions.set_clock, F, &[Phase::EventMode])?;
        // SAFETY: the instance is live; `vrs` and `active` have nvr
        // elements each (checked above).
        let code = unsafe { f(self.component, vrs.as_ptr(), vrs.len(), active.as_ptr()) };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), F)
                .vrs("valueReferences", VrKind::Any, vrs)
                .arg("nValueReferences", vrs.len())
                .values("values", active)
                .end();
        }
        self.check(F, code).map(|_| ())
    }

    /// `fmi3GetClock`: whether each Clock of `vrs` is active (an output
    /// Clock reports an activation once; in Event Mode).
    pub fn get_clock(&mut self, vrs: &[u32], active: &mut [bool]) -> Result<()> {
        const F: &str = "fmi3GetClock";
        check_values::<Fmi3>(&self.name, F, vrs.len(), active.len())?;
        let f = self.clock_call(self.lib.functions.get_clock, F, &[Phase::EventMode])?;
        // fmi3Clock is C `bool`: read back as bytes (as fmi3GetBoolean).
        let mut bytes = vec![0u8; vrs.len()];
        // SAFETY: the instance is live; `vrs` and `bytes` have nvr
        // elements; u8 has bool's layout.
        let code = unsafe {
            f(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                bytes.as_mut_ptr().cast(),
            )
        };
        for (a, &b) in active.iter_mut().zip(&bytes) {
            *a = b != 0;
        }
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), F)
                .vrs("valueReferences", VrKind::Any, vrs)
                .arg("nValueReferences", vrs.len())
                .values("values", active)
                .end();
        }
        self.check(F, code).map(|_| ())
    }

    /// `fmi3GetIntervalDecimal`: each time-based Clock's interval, and
    /// whether it is known, unchanged or changed (Initialization Mode,
    /// Event Mode).
    pub fn get_interval_decimal(&mut self, vrs: &[u32]) -> Result<Vec<(f64, IntervalQualifier)>> {
        const F: &str = "fmi3GetIntervalDecimal";
        let f = self.clock_call(
            self.lib.functions.get_interval_decimal,
            F,
            &[
                Phase::Initialization,
                Phase::EventMode,
                Phase::ClockActivation,
            ],
        )?;
        let mut intervals = vec![0.0; vrs.len()];
        let mut qualifiers: Vec<c_int> = vec![0; vrs.len()];
        // SAFETY: the instance is live; every array has nvr elements.
        let code = unsafe {
            f(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                intervals.as_mut_ptr(),
                qualifiers.as_mut_ptr(),
            )
        };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), F)
                .vrs("valueReferences", VrKind::Any, vrs)
                .arg("nValueReferences", vrs.len())
                .values("intervals", &intervals)
                .values("qualifiers", &qualifiers)
                .end();
        }
        self.check(F, code)?;
        intervals
            .into_iter()
            .zip(qualifiers)
            .map(|(i, q)| match IntervalQualifier::from_c(q) {
                Some(q) => Ok((i, q)),
                None => Err(self.unsupported(
                    F,
                    &format!(
                        "the FMU returned the interval qualifier {q}, which FMI 3.0 does not define"
                    ),
                )),
            })
            .collect()
    }

    /// `fmi3GetShiftDecimal`: each time-based Clock's first activation
    /// after the start time (Initialization Mode, Event Mode).
    pub fn get_shift_decimal(&mut self, vrs: &[u32]) -> Result<Vec<f64>> {
        const F: &str = "fmi3GetShiftDecimal";
        let f = self.clock_call(
            self.lib.functions.get_shift_decimal,
            F,
            &[
                Phase::Initialization,
                Phase::EventMode,
                Phase::ClockActivation,
            ],
        )?;
        let mut shifts = vec![0.0; vrs.len()];
        // SAFETY: the instance is live; both arrays have nvr elements.
        let code = unsafe { f(self.component, vrs.as_ptr(), vrs.len(), shifts.as_mut_ptr()) };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), F)
                .vrs("valueReferences", VrKind::Any, vrs)
                .arg("nValueReferences", vrs.len())
                .values("shifts", &shifts)
                .end();
        }
        self.check(F, code)?;
        Ok(shifts)
    }

    /// `fmi3SetIntervalDecimal`: the intervals of `fixed` or `tunable`
    /// Clocks set by the importer (Initialization Mode, Event Mode).
    pub fn set_interval_decimal(&mut self, vrs: &[u32], intervals: &[f64]) -> Result<()> {
        const F: &str = "fmi3SetIntervalDecimal";
        check_values::<Fmi3>(&self.name, F, vrs.len(), intervals.len())?;
        let f = self.clock_call(
            self.lib.functions.set_interval_decimal,
            F,
            &[Phase::Initialization, Phase::EventMode],
        )?;
        // SAFETY: the instance is live; both arrays have nvr elements.
        let code = unsafe { f(self.component, vrs.as_ptr(), vrs.len(), intervals.as_ptr()) };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), F)
                .vrs("valueReferences", VrKind::Any, vrs)
                .arg("nValueReferences", vrs.len())
                .values("intervals", intervals)
                .end();
        }
        self.check(F, code).map(|_| ())
    }

    /// A Clock function `f` (`function`) of the library, called in one of
    /// the states `allowed`: the error of a dead instance, of the wrong
    /// state, or of a library without it.
    fn clock_call<F>(&self, f: Option<F>, function: &'static str, allowed: &[Phase]) -> Result<F> {
        self.alive(function)?;
        if !allowed.contains(&self.phase) {
            return Err(self.out_of_sequence(function, &super::common::phases_text(allowed)));
        }
        f.ok_or_else(|| self.lib.missing(function))
    }

    /// `fmi3ActivateModelPartition` (Scheduled Execution, Clock Activation
    /// Mode): runs the model partition of input Clock `clock` at
    /// `activation_time`.
    pub fn activate_model_partition(&mut self, clock: u32, activation_time: f64) -> Result<()> {
        const F: &str = "fmi3ActivateModelPartition";
        let f = self.clock_call(
            self.lib.functions.activate_model_partition,
            F,
            &[Phase::ClockActivation],
        )?;
        self.time = activation_time;
        // SAFETY: the instance is live.
        let code = unsafe { f(self.component, clock, activation_time) };
        if let Some(log) = &self.call_log {
            log.line(Status::from_fmi3(code), F)
                .vrs("clockReference", VrKind::Any, &[clock])
                .num("activationTime", activation_time)
                .end();
        }
        self.check(F, code).map(|_| ())
    }

    /// Scheduled Execution: the output Clocks and countdown Clocks the
    /// Clock Update Mode callback asks about (`fmi3GetClock`,
    /// `fmi3GetIntervalDecimal`).
    pub fn watch_clock_updates(&mut self, outputs: &[u32], countdowns: &[u32]) {
        self.env
            .clock_update
            .borrow_mut()
            .watch(outputs, countdowns);
    }

    /// Scheduled Execution, after `fmi3ActivateModelPartition`: what its
    /// Clock Update Mode callbacks found (into `into`); an error where a
    /// call inside one failed.
    pub fn take_clock_updates(&mut self, into: &mut ClockUpdates) -> Result<()> {
        let failure = self.env.clock_update.borrow_mut().take(into);
        match failure {
            None => Ok(()),
            Some(CallbackFailure::Status(function, code)) => self
                .check(
                    if function == "fmi3GetClock" {
                        "fmi3GetClock (in Clock Update Mode)"
                    } else {
                        "fmi3GetIntervalDecimal (in Clock Update Mode)"
                    },
                    code,
                )
                .map(|_| ()),
            Some(CallbackFailure::Qualifier(q)) => Err(self.unsupported(
                "fmi3GetIntervalDecimal (in Clock Update Mode)",
                &format!(
                    "the FMU returned the interval qualifier {q}, which FMI 3.0 does not define"
                ),
            )),
        }
    }

    /// `fmi3EnterStepMode`: a Co-Simulation instance with `eventModeUsed`
    /// leaves Event Mode for Step Mode.
    pub fn enter_step_mode(&mut self) -> Result<()> {
        const F: &str = "fmi3EnterStepMode";
        if self.interface() != Interface::CoSimulation || !self.events.event_mode_used {
            return Err(self.unsupported(
                F,
                "the instance was not instantiated for Co-Simulation with eventModeUsed = true",
            ));
        }
        let f = self.cs_event_call(F, Phase::EventMode, |lib| lib.functions.enter_step_mode)?;
        self.change_mode(f, F, Phase::Stepping)
    }

    /// `fmi3UpdateDiscreteStates` (Event Mode: Model Exchange, or
    /// Co-Simulation with `eventModeUsed`): one step of the event
    /// iteration, and what the FMU says of it.
    pub fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        const F: &str = "fmi3UpdateDiscreteStates";
        let f = self.update_discrete_states_fn()?;
        // fmi3Boolean is C `bool`: read back as bytes (as in
        // completed_integrator_step).
        let mut flags = [0u8; 5];
        let [a, b, c, d, e] = flags.each_mut().map(|b| (b as *mut u8).cast::<bool>());
        let mut next_event_time = 0.0;
        // SAFETY: the instance is live; the out-pointers point to bytes of
        // `flags`, which have `bool`'s size and alignment, and to a local.
        let code = unsafe { f(self.component, a, b, c, d, e, &mut next_event_time) };
        if let Some(log) = &self.call_log {
            log_update_discrete_states(log, code, &flags, next_event_time);
        }
        self.check(F, code)?;
        let [need_update, terminate, nominals, values, time_defined] = flags.map(|b| b != 0);
        Ok(DiscreteStatesUpdate {
            discrete_states_need_update: need_update,
            terminate_simulation: terminate,
            nominals_changed: nominals,
            values_changed: values,
            next_event_time: time_defined.then_some(next_event_time),
        })
    }
}
