//! What the FMI 2.0 and FMI 3.0 bindings share, written once.
//!
//! Most of an FMU instance is the same in both versions: its name, id and
//! instance pointer, where it is in the state machine, its call log, its
//! saved FMU states, the log the FMU's callbacks reach, scratch buffers,
//! and the many functions whose C signatures are the same in both
//! (terminate, reset, the FMU-state functions, most of Model Exchange).
//! [`FmiInstance`] holds all of it, generic over the version ([`Api`]: its
//! C names, its status codes, its Boolean and the few calls whose
//! signatures differ); [`super::fmi2`] and [`super::fmi3`] hold only what
//! differs. The version is a type parameter: what is here is compiled once
//! per version, with no dispatch at run time.
#![allow(unsafe_code)]

use std::ffi::{CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::call_log::{CallLog, LogValue, VrKind};
use super::log::{LogContext, c_str_lossy};
use super::pool::Pool;
use super::{
    CompletedStep, Interface, Phase, StateHandle, Status, StepCall, StepOutcome, check_len,
    length_mismatch, next_instance_id,
};
use crate::error::{FmiError, Result};
use crate::instance::HeldValues;

/// An instance pointer: `fmi2Component`, `fmi3Instance`.
pub(crate) type Component = *mut c_void;
/// An FMU state: `fmi2FMUstate`, `fmi3FMUState`.
pub(crate) type FmuState = *mut c_void;
/// A value reference: `fmi2ValueReference` (`unsigned int`),
/// `fmi3ValueReference` (`uint32_t`).
pub(crate) type Vr = u32;
/// A function of the instance alone (`fmi*Terminate`, `fmi*Reset`, ...).
pub(crate) type StatusFn = unsafe extern "C" fn(Component) -> c_int;
/// `fmi*CompletedIntegratorStep`, with the version's Boolean.
pub(crate) type CompletedIntegratorStepFn<A> = unsafe extern "C" fn(
    Component,
    <A as Api>::Bool,
    *mut <A as Api>::Bool,
    *mut <A as Api>::Bool,
) -> c_int;
/// A function that takes the experiment: FMI 2 `fmi2SetupExperiment`,
/// FMI 3 `fmi3EnterInitializationMode` (`toleranceDefined`, `tolerance`,
/// `startTime`, `stopTimeDefined`, `stopTime`).
pub(crate) type ExperimentFn<A> =
    unsafe extern "C" fn(Component, <A as Api>::Bool, f64, f64, <A as Api>::Bool, f64) -> c_int;
/// The Model Exchange functions that read an array of floats
/// (`fmi*GetDerivatives`, `fmi*GetEventIndicators`, ...).
type GetArrayFn = unsafe extern "C" fn(Component, *mut f64, usize) -> c_int;
/// `fmi*SetContinuousStates`.
type SetArrayFn = unsafe extern "C" fn(Component, *const f64, usize) -> c_int;

/// A table of C functions resolved from a shared library by name: a
/// missing mandatory one is [`FmiError::MissingFunction`], a missing
/// optional one `None`. The names are expressions (a version's literals,
/// or [`Api::NAMES`] for a table generic over the version).
macro_rules! fn_table {
    ($(#[$m:meta])* $vis:vis struct $name:ident $(<$g:ident: $bound:ident>)? {
        mandatory { $($mf:ident : $msym:expr => $mty:ty,)* }
        optional { $($of:ident : $osym:expr => $oty:ty,)* }
    }) => {
        $(#[$m])*
        $vis struct $name $(<$g: $bound>)? {
            $(pub(crate) $mf: $mty,)*
            $(pub(crate) $of: Option<$oty>,)*
        }
        impl $(<$g: $bound>)? $name $(<$g>)? {
            /// Resolves every function; a missing mandatory one is an error
            /// naming it.
            pub(crate) fn load(
                lib: &libloading::Library,
                path: &std::path::Path,
            ) -> $crate::error::Result<Self> {
                Ok($name {
                    $($mf: {
                        let name: &str = $msym;
                        // SAFETY: the symbol is declared with the signature
                        // the FMU's FMI standard gives it.
                        let sym = unsafe { lib.get::<$mty>(name.as_bytes()) }.map_err(|_| {
                            $crate::error::FmiError::MissingFunction {
                                library: path.to_path_buf(),
                                function: name.to_string(),
                            }
                        })?;
                        *sym
                    },)*
                    $($of: {
                        let name: &str = $osym;
                        // SAFETY: as above; absence is allowed.
                        unsafe { lib.get::<$oty>(name.as_bytes()) }.ok().map(|s| *s)
                    },)*
                })
            }
        }
    };
}
pub(crate) use fn_table;

/// One Model Exchange call on an array of floats: its C name, the names
/// of its array and count arguments (for the call log), and the states of
/// the state machine it may be made in.
#[derive(Debug, Clone, Copy)]
pub struct ArrayCall {
    pub(crate) function: &'static str,
    pub(crate) array: &'static str,
    pub(crate) count: &'static str,
    pub(crate) phases: &'static [Phase],
}

/// The names a version gives to what the bindings share: its C functions,
/// the model-description attributes messages quote, and the argument
/// names of the call log (those of the standard's headers).
#[derive(Debug)]
pub struct Names {
    pub(crate) get_version: &'static str,
    pub(crate) set_debug_logging: &'static str,
    pub(crate) free_instance: &'static str,
    pub(crate) exit_initialization_mode: &'static str,
    pub(crate) terminate: &'static str,
    pub(crate) reset: &'static str,
    pub(crate) get_fmu_state: &'static str,
    pub(crate) set_fmu_state: &'static str,
    pub(crate) free_fmu_state: &'static str,
    pub(crate) serialized_fmu_state_size: &'static str,
    pub(crate) serialize_fmu_state: &'static str,
    pub(crate) deserialize_fmu_state: &'static str,
    pub(crate) get_directional_derivative: &'static str,
    pub(crate) get_output_derivatives: &'static str,
    pub(crate) do_step: &'static str,
    pub(crate) get_f64: &'static str,
    pub(crate) set_f64: &'static str,
    pub(crate) enter_event_mode: &'static str,
    pub(crate) update_discrete_states: &'static str,
    pub(crate) enter_continuous_time_mode: &'static str,
    pub(crate) completed_integrator_step: &'static str,
    pub(crate) set_time: &'static str,
    pub(crate) set_continuous_states: ArrayCall,
    pub(crate) get_derivatives: ArrayCall,
    pub(crate) get_event_indicators: ArrayCall,
    pub(crate) get_continuous_states: ArrayCall,
    pub(crate) get_nominals: ArrayCall,
    /// `canGetAndSetFMUstate` / `canGetAndSetFMUState`.
    pub(crate) can_get_and_set_fmu_state: &'static str,
    /// `canSerializeFMUstate` / `canSerializeFMUState`.
    pub(crate) can_serialize_fmu_state: &'static str,
    /// `providesDirectionalDerivative` / `providesDirectionalDerivatives`.
    pub(crate) provides_directional_derivatives: &'static str,
    /// The FMU-state argument: `FMUstate` / `FMUState`.
    pub(crate) state_arg: &'static str,
    /// A get or set call's arguments: value references, their count, the
    /// values, their count (FMI 3 only).
    pub(crate) vr_arg: &'static str,
    pub(crate) nvr_arg: &'static str,
    pub(crate) values_arg: &'static str,
    pub(crate) n_values_arg: Option<&'static str>,
    /// The derivative orders of input and output derivatives.
    pub(crate) orders_arg: &'static str,
    /// `GetDirectionalDerivative`'s arguments: the unknowns, their count,
    /// the knowns, their count, the seed, its count (FMI 3), the
    /// sensitivity, its count (FMI 3).
    pub(crate) directional_args: [&'static str; 4],
    pub(crate) directional_values: [(&'static str, Option<&'static str>); 2],
    /// The value references of Float64 / Real variables in the call log.
    pub(crate) float_kind: VrKind,
}

/// What an FMU's callbacks reach through the environment pointer it was
/// given: at least the instance's log.
pub trait Env {
    /// The log the FMU's messages go to.
    fn log(&self) -> &LogContext;
}

/// One FMI version's part in what the bindings share ([`super::fmi2::Fmi2`],
/// [`super::fmi3::Fmi3`]): its names, its status codes, its Boolean, and
/// the calls whose C signatures differ between the versions.
pub trait Api: Sized + 'static {
    /// The C Boolean: FMI 2 `fmi2Boolean` (`int`), FMI 3 `fmi3Boolean`
    /// (C `bool`).
    type Bool: Copy + Default;
    /// The version's own functions (those not in [`CommonFunctions`]).
    type Functions: Send + Sync + 'static;
    /// What the FMU's callbacks reach.
    type Env: Env;
    /// A getter of `T` values (`fmi2GetReal`, `fmi3GetFloat64`, ...).
    type GetFn<T>: Copy;
    /// A setter of `T` values.
    type SetFn<T>: Copy;
    /// `fmi*DoStep`.
    type DoStep: Copy;
    /// What `fmi*DoStep` gives besides its status (FMI 3: its flags and
    /// `lastSuccessfulTime`; FMI 2: nothing).
    type StepFlags: Copy;
    /// `fmi*GetDirectionalDerivative`.
    type Directional: Copy;
    /// `fmi2GetRealOutputDerivatives` / `fmi3GetOutputDerivatives`.
    type OutputDerivatives: Copy;
    /// `fmi2NewDiscreteStates` / `fmi3UpdateDiscreteStates`.
    type UpdateDiscreteStates: Copy;

    /// The version's names.
    const NAMES: Names;

    /// The status a code of this version stands for.
    fn status(code: c_int) -> Status;

    /// The C Boolean of `b`.
    fn boolean(b: bool) -> Self::Bool;

    /// The Rust Boolean of the C Boolean `b`.
    fn is_true(b: Self::Bool) -> bool;

    /// Every library of this version the process loaded (`super::pool`).
    fn pool() -> &'static Pool<FmiLibrary<Self>>;

    /// Resolves the version's own functions (the interface-specific ones
    /// as optional: [`Api::missing`] says which an interface needs).
    fn load(lib: &libloading::Library, path: &Path) -> Result<Self::Functions>;

    /// The first of the version's own functions that `interface` needs
    /// and the library lacks.
    fn missing(f: &Self::Functions, interface: Interface) -> Option<&'static str>;

    /// `fmi*DoStep`, where the library has it.
    fn do_step_fn(f: &Self::Functions) -> Option<Self::DoStep>;

    /// The Model Exchange update of discrete states, where the library
    /// has it.
    fn update_discrete_states_fn(f: &Self::Functions) -> Option<Self::UpdateDiscreteStates>;

    /// `fmi2SetReal` / `fmi3SetFloat64` and `fmi2GetReal` /
    /// `fmi3GetFloat64`.
    fn f64_fns(f: &Self::Functions) -> (Self::SetFn<f64>, Self::GetFn<f64>);

    /// The directional derivative, where the library has it.
    fn directional_fn(f: &Self::Functions) -> Option<Self::Directional>;

    /// The output derivatives, where the library has it.
    fn output_derivatives_fn(f: &Self::Functions) -> Option<Self::OutputDerivatives>;

    /// Passes each optional function of the version's own to `add`
    /// (present or not, its name), after the FMU-state functions.
    fn optional_functions(f: &Self::Functions, add: &mut dyn FnMut(bool, &'static str));

    /// A get or set call has values enough for its value references
    /// (FMI 2: one each; FMI 3: at least one each, arrays having several).
    fn values_fit(n_vrs: usize, n_values: usize) -> bool;

    /// Calls the getter `f`.
    ///
    /// # Safety
    /// `c` is a live instance of the library `f` comes from, and `values`
    /// fits `vrs` ([`Api::values_fit`]).
    unsafe fn get<T>(f: Self::GetFn<T>, c: Component, vrs: &[Vr], values: &mut [T]) -> c_int;

    /// Calls the setter `f`.
    ///
    /// # Safety
    /// As [`Api::get`].
    unsafe fn set<T>(f: Self::SetFn<T>, c: Component, vrs: &[Vr], values: &[T]) -> c_int;

    /// Calls `doStep` from `t` by `h`: its status and what else it gave.
    ///
    /// # Safety
    /// `c` is a live instance of the library `f` comes from.
    unsafe fn do_step(
        f: Self::DoStep,
        c: Component,
        t: f64,
        h: f64,
        no_set_prior: Self::Bool,
    ) -> (c_int, Self::StepFlags);

    /// `doStep` returned `code` with `flags` and nothing more is to be
    /// done: the step reached its end with OK.
    fn step_ok(code: c_int, flags: &Self::StepFlags) -> bool;

    /// What a `doStep` from `t` by `h` that returned `code` with `flags`,
    /// not a plain OK, makes of the step and of the instance (its log line
    /// where it logs, the FMU asked why it stopped, the status checked).
    fn step_returned(
        instance: &mut FmiInstance<Self>,
        code: c_int,
        t: f64,
        h: f64,
        no_set_prior: bool,
        flags: Self::StepFlags,
    ) -> Result<StepOutcome>;

    /// The inputs `in_vrs` may be held over a run of bound steps (FMI 3:
    /// none of them is handed over through intermediate update).
    fn holds_inputs(instance: &FmiInstance<Self>, in_vrs: &[u32]) -> bool;

    /// Calls `GetDirectionalDerivative`.
    ///
    /// # Safety
    /// `c` is a live instance of the library `f` comes from; `seed` has
    /// one value per known, `sensitivity` one per unknown.
    unsafe fn directional(
        f: Self::Directional,
        c: Component,
        unknowns: &[Vr],
        knowns: &[Vr],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> c_int;

    /// Calls the output derivatives' getter.
    ///
    /// # Safety
    /// `c` is a live instance of the library `f` comes from; `orders` and
    /// `values` have one element per value reference.
    unsafe fn output_derivatives(
        f: Self::OutputDerivatives,
        c: Component,
        vrs: &[Vr],
        orders: &[c_int],
        values: &mut [f64],
    ) -> c_int;

    /// Calls `CompletedIntegratorStep`: its status, `enterEventMode` and
    /// `terminateSimulation`.
    ///
    /// # Safety
    /// `c` is a live instance of the library `f` comes from.
    unsafe fn completed_integrator_step(
        f: CompletedIntegratorStepFn<Self>,
        c: Component,
        no_set_prior: bool,
    ) -> (c_int, bool, bool);
}

fn_table! {
    /// The functions both versions declare with the same C signature (but
    /// for the version's Boolean), resolved under the version's names
    /// ([`Api::NAMES`]).
    pub struct CommonFunctions<A: Api> {
        mandatory {
            get_version: A::NAMES.get_version => unsafe extern "C" fn() -> *const c_char,
            set_debug_logging: A::NAMES.set_debug_logging => unsafe extern "C" fn(Component, A::Bool, usize, *const *const c_char) -> c_int,
            free_instance: A::NAMES.free_instance => unsafe extern "C" fn(Component),
            exit_initialization_mode: A::NAMES.exit_initialization_mode => StatusFn,
            terminate: A::NAMES.terminate => StatusFn,
            reset: A::NAMES.reset => StatusFn,
        }
        optional {
            get_fmu_state: A::NAMES.get_fmu_state => unsafe extern "C" fn(Component, *mut FmuState) -> c_int,
            set_fmu_state: A::NAMES.set_fmu_state => unsafe extern "C" fn(Component, FmuState) -> c_int,
            free_fmu_state: A::NAMES.free_fmu_state => unsafe extern "C" fn(Component, *mut FmuState) -> c_int,
            serialized_fmu_state_size: A::NAMES.serialized_fmu_state_size => unsafe extern "C" fn(Component, FmuState, *mut usize) -> c_int,
            serialize_fmu_state: A::NAMES.serialize_fmu_state => unsafe extern "C" fn(Component, FmuState, *mut u8, usize) -> c_int,
            deserialize_fmu_state: A::NAMES.deserialize_fmu_state => unsafe extern "C" fn(Component, *const u8, usize, *mut FmuState) -> c_int,
            // Model Exchange: mandatory for it (`MeFunctions`).
            enter_event_mode: A::NAMES.enter_event_mode => StatusFn,
            enter_continuous_time_mode: A::NAMES.enter_continuous_time_mode => StatusFn,
            completed_integrator_step: A::NAMES.completed_integrator_step => CompletedIntegratorStepFn<A>,
            set_time: A::NAMES.set_time => unsafe extern "C" fn(Component, f64) -> c_int,
            set_continuous_states: A::NAMES.set_continuous_states.function => SetArrayFn,
            get_derivatives: A::NAMES.get_derivatives.function => GetArrayFn,
            get_event_indicators: A::NAMES.get_event_indicators.function => GetArrayFn,
            get_continuous_states: A::NAMES.get_continuous_states.function => GetArrayFn,
            get_nominals: A::NAMES.get_nominals.function => GetArrayFn,
        }
    }
}

/// A loaded shared library of FMI version `A` and its resolved functions
/// ([`super::fmi2::Fmi2Library`], [`super::fmi3::Fmi3Library`]).
pub struct FmiLibrary<A: Api> {
    pub(crate) common: CommonFunctions<A>,
    pub(crate) functions: A::Functions,
    path: PathBuf,
    // Never dropped: the pool keeps every loaded copy (`super::pool`).
    _library: libloading::Library,
}

impl<A: Api> std::fmt::Debug for FmiLibrary<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FmiLibrary")
            .field("path", &self.path)
            .finish()
    }
}

impl<A: Api> FmiLibrary<A> {
    /// Loads the library at `path` and resolves its functions, or takes a
    /// loaded copy of the same library (the same bytes) that no FMU uses
    /// any more. A loaded library is never unloaded (`super::pool`: an
    /// FMU's threads may outlive its instances). The functions an
    /// interface needs are checked where it is instantiated
    /// ([`FmiLibrary::require`]).
    pub fn load(path: &Path) -> Result<Arc<Self>> {
        A::pool().get_or_load(path, || {
            let (library, (common, functions)) = super::open_library(path, |lib, path| {
                Ok((CommonFunctions::load(lib, path)?, A::load(lib, path)?))
            })?;
            Ok(FmiLibrary {
                common,
                functions,
                path: path.to_path_buf(),
                _library: library,
            })
        })
    }

    /// How many copies of libraries of this version the process has
    /// loaded (all still loaded).
    pub(crate) fn loaded_copies() -> usize {
        A::pool().len()
    }

    /// The file this copy was loaded from (for a reused copy, an earlier
    /// FMU's extraction, perhaps removed since).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `fmi*GetVersion()`.
    pub fn version(&self) -> String {
        // SAFETY: takes no arguments and returns a static string per the
        // standard.
        unsafe { c_str_lossy((self.common.get_version)()) }
    }

    /// Names of the optional functions the library exports.
    pub fn optional_functions(&self) -> Vec<&'static str> {
        let (c, n) = (&self.common, &A::NAMES);
        let mut v = Vec::new();
        let mut add = |present: bool, name: &'static str| {
            if present {
                v.push(name)
            }
        };
        add(c.get_fmu_state.is_some(), n.get_fmu_state);
        add(c.set_fmu_state.is_some(), n.set_fmu_state);
        add(c.free_fmu_state.is_some(), n.free_fmu_state);
        add(c.serialize_fmu_state.is_some(), n.serialize_fmu_state);
        add(c.deserialize_fmu_state.is_some(), n.deserialize_fmu_state);
        A::optional_functions(&self.functions, &mut add);
        v
    }

    /// The error of `function`, which the library does not export.
    pub(crate) fn missing(&self, function: &str) -> FmiError {
        FmiError::MissingFunction {
            library: self.path.clone(),
            function: function.to_string(),
        }
    }

    /// Checks that the library exports every function `interface` needs
    /// (those [`crate::binary::mandatory_functions`] lists, which a library
    /// must export to load at all but for the interface's own):
    /// [`FmiError::MissingFunction`] naming the first it lacks.
    pub fn require(&self, interface: Interface) -> Result<()> {
        self.functions_for(interface).map(drop)
    }

    /// The functions only one interface has, resolved for `interface`:
    /// `doStep` for Co-Simulation, the Model Exchange functions for it.
    pub(crate) fn functions_for(&self, interface: Interface) -> Result<InterfaceFunctions<A>> {
        let missing = |function: &str| self.missing(function);
        if let Some(function) = A::missing(&self.functions, interface) {
            return Err(missing(function));
        }
        Ok(match interface {
            Interface::CoSimulation => InterfaceFunctions {
                do_step: Some(
                    A::do_step_fn(&self.functions).ok_or_else(|| missing(A::NAMES.do_step))?,
                ),
                me: None,
            },
            // (Its own functions are checked by `A::missing`.)
            Interface::ScheduledExecution => InterfaceFunctions {
                do_step: None,
                me: None,
            },
            Interface::ModelExchange => {
                let (c, n) = (&self.common, &A::NAMES);
                InterfaceFunctions {
                    do_step: None,
                    me: Some(MeFunctions {
                        enter_event_mode: c
                            .enter_event_mode
                            .ok_or_else(|| missing(n.enter_event_mode))?,
                        update_discrete_states: A::update_discrete_states_fn(&self.functions)
                            .ok_or_else(|| missing(n.update_discrete_states))?,
                        enter_continuous_time_mode: c
                            .enter_continuous_time_mode
                            .ok_or_else(|| missing(n.enter_continuous_time_mode))?,
                        completed_integrator_step: c
                            .completed_integrator_step
                            .ok_or_else(|| missing(n.completed_integrator_step))?,
                        set_time: c.set_time.ok_or_else(|| missing(n.set_time))?,
                        set_continuous_states: c
                            .set_continuous_states
                            .ok_or_else(|| missing(n.set_continuous_states.function))?,
                        get_derivatives: c
                            .get_derivatives
                            .ok_or_else(|| missing(n.get_derivatives.function))?,
                        get_event_indicators: c
                            .get_event_indicators
                            .ok_or_else(|| missing(n.get_event_indicators.function))?,
                        get_continuous_states: c
                            .get_continuous_states
                            .ok_or_else(|| missing(n.get_continuous_states.function))?,
                        get_nominals: c
                            .get_nominals
                            .ok_or_else(|| missing(n.get_nominals.function))?,
                    }),
                }
            }
        })
    }
}

/// What an instance is created with, besides its library.
pub(crate) struct Instantiation<'a> {
    /// The instance name.
    pub(crate) name: &'a str,
    /// FMI 2 `guid`, FMI 3 `instantiationToken`.
    pub(crate) token: &'a str,
    /// The FMU's `resources` directory.
    pub(crate) resources: &'a Path,
    pub(crate) caps: Capabilities,
    pub(crate) interface: Interface,
    /// The numbers of continuous states and event indicators the model
    /// description declares.
    pub(crate) counts: (usize, usize),
    pub(crate) logging_on: bool,
    /// With a call log, the instantiation and every later call on the
    /// instance is logged there.
    pub(crate) call_log: Option<Arc<CallLog>>,
    /// FMI 3 Co-Simulation: `eventModeUsed`, `earlyReturnAllowed`.
    pub(crate) events: crate::EventHandling,
}

/// The functions of the interface an instance was created for, resolved
/// before it is instantiated.
pub(crate) struct InterfaceFunctions<A: Api> {
    do_step: Option<A::DoStep>,
    me: Option<MeFunctions<A>>,
}

/// The Model Exchange functions of an instance created for it.
struct MeFunctions<A: Api> {
    enter_event_mode: StatusFn,
    update_discrete_states: A::UpdateDiscreteStates,
    enter_continuous_time_mode: StatusFn,
    completed_integrator_step: CompletedIntegratorStepFn<A>,
    set_time: unsafe extern "C" fn(Component, f64) -> c_int,
    set_continuous_states: SetArrayFn,
    get_derivatives: GetArrayFn,
    get_event_indicators: GetArrayFn,
    get_continuous_states: GetArrayFn,
    get_nominals: GetArrayFn,
}

/// Capabilities the model description declares for the interface an
/// instance is created for; calls to optional functions are refused when
/// the flag is off, even if the symbol exists.
#[derive(Debug, Clone, Copy, Default)]
pub struct Capabilities {
    /// `canGetAndSetFMUstate` (FMI 2) / `canGetAndSetFMUState` (FMI 3).
    pub can_get_and_set_fmu_state: bool,
    /// `canSerializeFMUstate` / `canSerializeFMUState`.
    pub can_serialize_fmu_state: bool,
    /// FMI 2 `providesDirectionalDerivative`, FMI 3
    /// `providesDirectionalDerivatives`.
    pub provides_directional_derivatives: bool,
    /// FMI 2 Co-Simulation `canInterpolateInputs`.
    pub can_interpolate_inputs: bool,
    /// Co-Simulation `maxOutputDerivativeOrder`.
    pub max_output_derivative_order: u32,
    /// FMI 3 Co-Simulation `hasEventMode`: the importer may instantiate
    /// with `eventModeUsed = true` ([`crate::EventHandling`]).
    pub has_event_mode: bool,
    /// FMI 3 Co-Simulation `providesIntermediateUpdate`: the intermediate
    /// update callback is passed at instantiation.
    pub provides_intermediate_update: bool,
}

/// One FMU instance of FMI version `A` ([`super::fmi2::Fmi2Instance`],
/// [`super::fmi3::Fmi3Instance`]), for Co-Simulation or Model Exchange.
pub struct FmiInstance<A: Api> {
    pub(crate) component: Component,
    pub(crate) lib: Arc<FmiLibrary<A>>,
    pub(crate) caps: Capabilities,
    interface: Interface,
    pub(crate) name: String,
    id: u64,
    /// Saved FMU states, each with the state of the state machine it was
    /// saved in (null: freed).
    states: Vec<(FmuState, Phase)>,
    /// Scratch for FMI 2 Booleans and derivative orders (no allocation
    /// after the first call of a given size).
    pub(crate) int_scratch: Vec<c_int>,
    /// FMI 3 Booleans read as bytes (reused: no allocation per call).
    pub(crate) byte_scratch: Vec<u8>,
    /// Where the instance is in the state machine.
    pub(crate) phase: Phase,
    /// FMI 2: `fmi2SetupExperiment` was called since instantiation or
    /// reset. (FMI 3 passes the experiment to `fmi3EnterInitializationMode`:
    /// always false.)
    pub(crate) setup_done: bool,
    pub(crate) time: f64,
    /// The number of continuous states and of event indicators.
    pub(crate) nx: usize,
    pub(crate) nz: usize,
    /// The FMI call log (`--log-fmi-calls`), if on: one branch per call
    /// when off.
    pub(crate) call_log: Option<Arc<CallLog>>,
    /// Co-Simulation: `doStep` (`None` for Model Exchange).
    do_step: Option<A::DoStep>,
    /// Model Exchange: its functions (`None` for Co-Simulation).
    me: Option<MeFunctions<A>>,
    /// FMI 3 Co-Simulation: `eventModeUsed` and `earlyReturnAllowed` of
    /// the instantiation.
    pub(crate) events: crate::EventHandling,
    /// What the FMU's callbacks reach, at a fixed address for as long as
    /// the FMU may call back (dropped after `fmi*FreeInstance`).
    pub(crate) env: A::Env,
}

// SAFETY: an FMI instance may be used from any thread as long as calls on
// it are not concurrent; every method that calls into it takes `&mut
// self`, so they cannot be. Its environment is touched by the FMU only
// inside those calls.
unsafe impl<A: Api> Send for FmiInstance<A> {}

impl<A: Api> std::fmt::Debug for FmiInstance<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FmiInstance")
            .field("name", &self.name)
            .field("interface", &self.interface)
            .finish()
    }
}

/// Copies `s` into a C string for `function` of `instance`; a NUL byte
/// in it is an error.
pub(crate) fn cstring(instance: &str, function: &'static str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| FmiError::InvalidArgument {
        instance: instance.to_string(),
        function,
        reason: format!("string contains a NUL byte: {s:?}"),
    })
}

/// The status an instantiation is logged with: OK when it returned an
/// instance, Error for `NULL`.
pub(crate) fn instantiated_status(component: Component) -> Status {
    if component.is_null() {
        Status::Error
    } else {
        Status::Ok
    }
}

/// The error of an instantiation that returned `NULL`, with what the FMU
/// logged.
#[cold]
pub(crate) fn instantiation_failed(
    name: &str,
    function: &'static str,
    log: &LogContext,
) -> FmiError {
    FmiError::Status {
        instance: name.to_string(),
        function,
        status: Status::Error,
        time: None,
        log: log.take_recent(),
    }
}

/// Logs a get or set call of values (out of line: the hot path only tests
/// whether there is a log).
#[cold]
#[inline(never)]
pub(crate) fn log_values<A: Api, T: LogValue>(
    log: &CallLog,
    code: c_int,
    function: &str,
    kind: VrKind,
    vrs: &[u32],
    values: &[T],
) {
    let n = &A::NAMES;
    let line = log
        .line(A::status(code), function)
        .vrs(n.vr_arg, kind, vrs)
        .arg(n.nvr_arg, vrs.len())
        .values(n.values_arg, values);
    match n.n_values_arg {
        Some(name) => line.arg(name, values.len()).end(),
        None => line.end(),
    }
}

/// Logs a get-string call: the strings only after a status that returns
/// them (after another, the pointers may be anything).
#[cold]
#[inline(never)]
fn log_strings<A: Api>(
    log: &CallLog,
    code: c_int,
    function: &str,
    kind: VrKind,
    vrs: &[u32],
    ptrs: &[*const c_char],
) {
    let (n, status) = (&A::NAMES, A::status(code));
    let line = log
        .line(status, function)
        .vrs(n.vr_arg, kind, vrs)
        .arg(n.nvr_arg, vrs.len());
    let line = if status.is_success() {
        // SAFETY: after OK or Warning each pointer is null or a valid C
        // string until the next call into the FMU.
        let strings: Vec<String> = ptrs.iter().map(|&p| unsafe { c_str_lossy(p) }).collect();
        line.values(n.values_arg, &strings)
    } else {
        line.arg(n.values_arg, "?")
    };
    match n.n_values_arg {
        Some(name) => line.arg(name, ptrs.len()).end(),
        None => line.end(),
    }
}

/// Logs a call without arguments (out of line).
#[cold]
#[inline(never)]
pub(crate) fn log_call<A: Api>(log: &CallLog, code: c_int, function: &str) {
    log.call(A::status(code), function);
}

/// Logs a call with an FMU state argument (out of line).
#[cold]
#[inline(never)]
fn log_state<A: Api>(log: &CallLog, code: c_int, function: &str, state: FmuState) {
    log.line(A::status(code), function)
        .ptr(A::NAMES.state_arg, state)
        .end();
}

/// Logs a call of input or output derivatives (out of line).
#[cold]
#[inline(never)]
pub(crate) fn log_derivatives<A: Api>(
    log: &CallLog,
    code: c_int,
    function: &str,
    vrs: &[u32],
    orders: &[c_int],
    values: &[f64],
) {
    let n = &A::NAMES;
    let line = log
        .line(A::status(code), function)
        .vrs(n.vr_arg, n.float_kind, vrs)
        .arg(n.nvr_arg, vrs.len())
        .values(n.orders_arg, orders)
        .values(n.values_arg, values);
    match n.n_values_arg {
        Some(name) => line.arg(name, values.len()).end(),
        None => line.end(),
    }
}

/// Logs a Model Exchange call on an array of floats (out of line).
#[cold]
#[inline(never)]
fn log_array<A: Api>(log: &CallLog, code: c_int, call: &ArrayCall, values: &[f64]) {
    log.line(A::status(code), call.function)
        .values(call.array, values)
        .arg(call.count, values.len())
        .end();
}

/// Checks that `n_values` values fit `n_vrs` value references
/// ([`Api::values_fit`]).
#[inline]
pub(crate) fn check_values<A: Api>(
    instance: &str,
    function: &'static str,
    n_vrs: usize,
    n_values: usize,
) -> Result<()> {
    if A::values_fit(n_vrs, n_values) {
        Ok(())
    } else {
        Err(length_mismatch(instance, function, n_vrs, n_values))
    }
}

/// The phases in which the Model Exchange calls that read the model
/// (derivatives, event indicators, states) may be made in FMI 3, and in
/// FMI 2 for event indicators and states.
pub(crate) const READING_PHASES: &[Phase] = &[
    Phase::Initialization,
    Phase::EventMode,
    Phase::ContinuousTimeMode,
    Phase::Terminated,
];

/// `allowed` in words: "Event Mode or Continuous-Time Mode".
pub(crate) fn phases_text(allowed: &[Phase]) -> String {
    let names: Vec<&str> = allowed.iter().map(|p| p.name()).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

impl<A: Api> FmiInstance<A> {
    /// A new instance: `component`, which the library's instantiation
    /// returned for `how`, with `functions` (resolved before it).
    pub(crate) fn new(
        component: Component,
        lib: Arc<FmiLibrary<A>>,
        how: Instantiation<'_>,
        functions: InterfaceFunctions<A>,
        env: A::Env,
    ) -> Self {
        let Instantiation {
            name,
            caps,
            interface,
            counts: (nx, nz),
            call_log,
            events,
            ..
        } = how;
        FmiInstance {
            component,
            lib,
            caps,
            interface,
            name: name.to_string(),
            id: next_instance_id(),
            states: Vec::new(),
            int_scratch: Vec::new(),
            byte_scratch: Vec::new(),
            phase: Phase::Instantiated,
            setup_done: false,
            time: 0.0,
            nx,
            nz,
            call_log,
            do_step: functions.do_step,
            me: functions.me,
            events: match interface {
                Interface::CoSimulation => events,
                _ => crate::EventHandling::default(),
            },
            env,
        }
    }

    /// The instance name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The interface the instance was created for.
    pub fn interface(&self) -> Interface {
        self.interface
    }

    /// The last lines the FMU logged.
    pub fn take_recent_log(&self) -> Vec<String> {
        self.env.log().take_recent()
    }

    /// Where the instance is in the state machine.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The number of continuous states: FMI 2 the model description's
    /// `<Derivatives>`, FMI 3 (Model Exchange)
    /// `fmi3GetNumberOfContinuousStates`.
    pub fn number_of_continuous_states(&self) -> usize {
        self.nx
    }

    /// The number of event indicators: FMI 2 `numberOfEventIndicators`,
    /// FMI 3 (Model Exchange) `fmi3GetNumberOfEventIndicators`.
    pub fn number_of_event_indicators(&self) -> usize {
        self.nz
    }

    /// OK is the hot path (every call of every macro step): inlined, the
    /// rest out of line.
    #[inline]
    pub(crate) fn check(&mut self, function: &'static str, code: c_int) -> Result<Status> {
        if code == 0 {
            return Ok(Status::Ok);
        }
        self.check_not_ok(function, code)
    }

    #[cold]
    #[inline(never)]
    fn check_not_ok(&mut self, function: &'static str, code: c_int) -> Result<Status> {
        let status = A::status(code);
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
                    log: self.env.log().take_recent(),
                })
            }
        }
    }

    #[inline]
    pub(crate) fn alive(&self, function: &'static str) -> Result<()> {
        if self.phase == Phase::Fatal {
            Err(self.dead(function))
        } else {
            Ok(())
        }
    }

    #[cold]
    #[inline(never)]
    fn dead(&self, function: &'static str) -> FmiError {
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

    pub(crate) fn unsupported(&self, function: &'static str, reason: &str) -> FmiError {
        FmiError::NotSupported {
            instance: self.name.clone(),
            function,
            reason: reason.to_string(),
        }
    }

    /// An optional function of the library, or the error naming it.
    pub(crate) fn exported<F>(&self, f: Option<F>, function: &'static str) -> Result<F> {
        f.ok_or_else(|| self.unsupported(function, "the shared library does not export it"))
    }

    #[cold]
    pub(crate) fn out_of_sequence(&self, function: &'static str, expected: &str) -> FmiError {
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

    /// `function`, of `interface` only, called on an instance created for
    /// the other one.
    #[cold]
    #[inline(never)]
    pub(crate) fn wrong_interface(&self, function: &'static str) -> FmiError {
        let what = match self.interface {
            Interface::CoSimulation => {
                "it is a Model Exchange function, and the instance was instantiated for Co-Simulation (the FMU advances itself with doStep)"
            }
            Interface::ModelExchange => {
                "it is a Co-Simulation function, and the instance was instantiated for Model Exchange (the importer integrates it: its continuous states, derivatives and events)"
            }
            Interface::ScheduledExecution => {
                "the instance was instantiated for Scheduled Execution (the importer activates its model partitions: fmi3ActivateModelPartition)"
            }
        };
        self.unsupported(function, what)
    }

    /// `doStep`: `None` for an instance for Model Exchange (the caller
    /// returns [`FmiInstance::wrong_interface`], out of line).
    #[inline(always)]
    pub(crate) fn do_step_fn(&self) -> Option<A::DoStep> {
        self.do_step
    }

    /// The Model Exchange function `pick` takes for `function`, called in
    /// one of the states `allowed`: the error of an instance for
    /// Co-Simulation, of a dead one, or of the wrong state.
    #[inline]
    fn me_call<F>(
        &self,
        function: &'static str,
        allowed: &[Phase],
        pick: impl FnOnce(&MeFunctions<A>) -> F,
    ) -> Result<F> {
        let Some(me) = &self.me else {
            return Err(self.wrong_interface(function));
        };
        self.alive(function)?;
        if !allowed.contains(&self.phase) {
            return Err(self.out_of_sequence(function, &phases_text(allowed)));
        }
        Ok(pick(me))
    }

    /// `fmi*SetDebugLogging` with the given categories (empty: all).
    pub fn set_debug_logging(&mut self, on: bool, categories: &[&str]) -> Result<()> {
        const ON: &str = "loggingOn";
        let function = A::NAMES.set_debug_logging;
        self.alive(function)?;
        let owned: Vec<CString> = categories
            .iter()
            .map(|c| cstring(&self.name, function, c))
            .collect::<Result<_>>()?;
        let ptrs: Vec<*const c_char> = owned.iter().map(|c| c.as_ptr()).collect();
        // SAFETY: the instance is live; ptrs holds `ptrs.len()` valid C
        // strings, alive during the call.
        let code = unsafe {
            (self.lib.common.set_debug_logging)(
                self.component,
                A::boolean(on),
                ptrs.len(),
                ptrs.as_ptr(),
            )
        };
        if let Some(log) = &self.call_log {
            log.line(A::status(code), function)
                .flag(ON, on)
                .arg("nCategories", categories.len())
                .values("categories", categories)
                .end();
        }
        self.check(function, code).map(|_| ())
    }

    /// Calls `f`, `function`, with the experiment (the instance's time is
    /// then `start_time`).
    pub(crate) fn call_with_experiment(
        &mut self,
        f: ExperimentFn<A>,
        function: &'static str,
        tolerance: Option<f64>,
        start_time: f64,
        stop_time: Option<f64>,
    ) -> Result<()> {
        self.time = start_time;
        // SAFETY: the instance is live.
        let code = unsafe {
            f(
                self.component,
                A::boolean(tolerance.is_some()),
                tolerance.unwrap_or(0.0),
                start_time,
                A::boolean(stop_time.is_some()),
                stop_time.unwrap_or(0.0),
            )
        };
        if let Some(log) = &self.call_log {
            log.line(A::status(code), function)
                .flag("toleranceDefined", tolerance.is_some())
                .num("tolerance", tolerance.unwrap_or(0.0))
                .num("startTime", start_time)
                .flag("stopTimeDefined", stop_time.is_some())
                .num("stopTime", stop_time.unwrap_or(0.0))
                .end();
        }
        self.check(function, code).map(|_| ())
    }

    /// `fmi*ExitInitializationMode`: a Co-Simulation instance is then in
    /// Step Mode (FMI 3: instantiated with `eventModeUsed = false`), one
    /// for Model Exchange in Event Mode.
    pub fn exit_initialization_mode(&mut self) -> Result<()> {
        let function = A::NAMES.exit_initialization_mode;
        self.alive(function)?;
        if self.phase != Phase::Initialization {
            return Err(self.out_of_sequence(function, "Initialization Mode"));
        }
        // (FMI 3.0 sec. 4.2: with eventModeUsed, Co-Simulation leaves
        // initialization into Event Mode.)
        let to = match self.interface {
            Interface::CoSimulation if !self.events.event_mode_used => Phase::Stepping,
            Interface::ScheduledExecution => Phase::ClockActivation,
            _ => Phase::EventMode,
        };
        self.change_mode(self.lib.common.exit_initialization_mode, function, to)
    }

    /// Calls `f`, `function`, which takes the instance alone and moves it
    /// to the state `to` where it succeeds.
    pub(crate) fn change_mode(
        &mut self,
        f: StatusFn,
        function: &'static str,
        to: Phase,
    ) -> Result<()> {
        // SAFETY: the instance is live, and `f` its library's function of
        // this signature.
        let code = unsafe { f(self.component) };
        if let Some(log) = &self.call_log {
            log_call::<A>(log, code, function);
        }
        self.check(function, code)?;
        self.phase = to;
        Ok(())
    }

    /// `fmi*Terminate`, where the state machine allows it (Step Mode and
    /// Step Discarded; Event Mode and Continuous-Time Mode). An instance
    /// that never left Instantiated, Configuration or Initialization Mode,
    /// or that returned Error, may only be freed: it is left alone (the
    /// call returns Ok). Idempotent.
    pub fn terminate(&mut self) -> Result<()> {
        let function = A::NAMES.terminate;
        // (Fatal too: nothing may be called then, and the failure was
        // reported when it happened.)
        if !matches!(
            self.phase,
            Phase::Stepping | Phase::EventMode | Phase::ContinuousTimeMode | Phase::ClockActivation
        ) {
            tracing::debug!(
                target: "fmu",
                instance = %self.name,
                "not calling {function} in state {}: the instance is only freed",
                self.phase.name()
            );
            return Ok(());
        }
        self.change_mode(self.lib.common.terminate, function, Phase::Terminated)
    }

    /// Readies a Co-Simulation instance whose run is over for another run,
    /// as a new instance would start it: its saved FMU states freed, reset
    /// (`fmi*Reset`) if it was set up, its recent log lines dropped. False
    /// (the instance is then only to be freed) for a Model Exchange
    /// instance, one with an FMI call log (a new instance's log starts at
    /// its instantiation), one whose run did not end with `fmi*Terminate`
    /// (an error, an interrupted run), and one that refuses the reset.
    pub(crate) fn ready_for_reuse(&mut self) -> bool {
        if self.interface != Interface::CoSimulation || self.call_log.is_some() {
            return false;
        }
        let reset = match self.phase {
            Phase::Terminated => true,
            Phase::Instantiated => self.setup_done,
            _ => return false,
        };
        self.free_saved_states();
        if reset && self.reset().is_err() {
            return false;
        }
        drop(self.env.log().take_recent());
        true
    }

    /// Frees every FMU state saved and not freed yet.
    fn free_saved_states(&mut self) {
        let Some(free) = self.lib.common.free_fmu_state else {
            return;
        };
        for (state, _) in &mut self.states {
            if !state.is_null() {
                let handle = *state;
                // SAFETY: the state was obtained from this live instance
                // and is freed once (the call nulls it).
                let code = unsafe { free(self.component, state) };
                if let Some(log) = &self.call_log {
                    log_state::<A>(log, code, A::NAMES.free_fmu_state, handle);
                }
            }
        }
        self.states.clear();
    }

    /// `fmi*Reset`: back to Instantiated (setup, parameters and start
    /// values again).
    pub fn reset(&mut self) -> Result<()> {
        let function = A::NAMES.reset;
        self.alive(function)?;
        self.change_mode(self.lib.common.reset, function, Phase::Instantiated)?;
        self.setup_done = false;
        Ok(())
    }

    /// The getter `f` of the library, called as `function` on `vrs`,
    /// logged with value references of `kind`.
    #[inline]
    pub(crate) fn get_values<T: LogValue>(
        &mut self,
        f: A::GetFn<T>,
        function: &'static str,
        kind: VrKind,
        vrs: &[u32],
        values: &mut [T],
    ) -> Result<()> {
        check_values::<A>(&self.name, function, vrs.len(), values.len())?;
        self.alive(function)?;
        // SAFETY: f is the library's getter of this signature, the
        // instance is live and `values` fits `vrs` (checked above).
        let code = unsafe { A::get(f, self.component, vrs, values) };
        if let Some(log) = &self.call_log {
            log_values::<A, T>(log, code, function, kind, vrs, values);
        }
        self.check(function, code).map(|_| ())
    }

    /// The setter `f` of the library, called as `function` on `vrs`.
    #[inline]
    pub(crate) fn set_values<T: LogValue>(
        &mut self,
        f: A::SetFn<T>,
        function: &'static str,
        kind: VrKind,
        vrs: &[u32],
        values: &[T],
    ) -> Result<()> {
        check_values::<A>(&self.name, function, vrs.len(), values.len())?;
        self.alive(function)?;
        // SAFETY: as in get_values.
        let code = unsafe { A::set(f, self.component, vrs, values) };
        if let Some(log) = &self.call_log {
            log_values::<A, T>(log, code, function, kind, vrs, values);
        }
        self.check(function, code).map(|_| ())
    }

    /// The string getter `f`, called as `function` (copies the strings
    /// out immediately, as the standard requires: the FMU may reuse its
    /// buffers on the next call).
    pub(crate) fn get_strings(
        &mut self,
        f: A::GetFn<*const c_char>,
        function: &'static str,
        kind: VrKind,
        vrs: &[u32],
    ) -> Result<Vec<String>> {
        self.alive(function)?;
        let mut ptrs: Vec<*const c_char> = vec![std::ptr::null(); vrs.len()];
        // SAFETY: f is the library's string getter, the instance is live,
        // and vrs and ptrs have vrs.len() elements.
        let code = unsafe { A::get(f, self.component, vrs, &mut ptrs) };
        if let Some(log) = &self.call_log {
            log_strings::<A>(log, code, function, kind, vrs, &ptrs);
        }
        self.check(function, code)?;
        // SAFETY: after OK or Warning each pointer is null or a valid C
        // string until the next call into the FMU.
        Ok(ptrs.iter().map(|&p| unsafe { c_str_lossy(p) }).collect())
    }

    /// The string setter `f`, called as `function`.
    pub(crate) fn set_strings(
        &mut self,
        f: A::SetFn<*const c_char>,
        function: &'static str,
        kind: VrKind,
        vrs: &[u32],
        values: &[&str],
    ) -> Result<()> {
        check_values::<A>(&self.name, function, vrs.len(), values.len())?;
        self.alive(function)?;
        let owned: Vec<CString> = values
            .iter()
            .map(|s| cstring(&self.name, function, s))
            .collect::<Result<_>>()?;
        let ptrs: Vec<*const c_char> = owned.iter().map(|c| c.as_ptr()).collect();
        // SAFETY: f is the library's string setter, the instance is live,
        // ptrs fits vrs and its strings outlive the call.
        let code = unsafe { A::set(f, self.component, vrs, &ptrs) };
        if let Some(log) = &self.call_log {
            log_values::<A, &str>(log, code, function, kind, vrs, values);
        }
        self.check(function, code).map(|_| ())
    }

    /// A function of the FMU-state family, where the FMU declares it can
    /// get and set its state and the library exports it.
    fn state_fn<T>(&self, f: Option<T>, function: &'static str) -> Result<T> {
        if !self.caps.can_get_and_set_fmu_state {
            return Err(self.unsupported(
                function,
                &format!(
                    "the FMU declares {}=\"false\"",
                    A::NAMES.can_get_and_set_fmu_state
                ),
            ));
        }
        self.exported(f, function)
    }

    /// `function` serializes states: the FMU declares it can.
    fn serializes(&self, function: &'static str) -> Result<()> {
        if self.caps.can_serialize_fmu_state {
            return Ok(());
        }
        Err(self.unsupported(
            function,
            &format!(
                "the FMU declares {}=\"false\"",
                A::NAMES.can_serialize_fmu_state
            ),
        ))
    }

    fn slot(&self, h: StateHandle, function: &'static str) -> Result<usize> {
        if h.instance_id == self.id
            && self
                .states
                .get(h.slot)
                .is_some_and(|(state, _)| !state.is_null())
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

    /// `fmi*GetFMUState`: saves the state into a new slot, or overwrites
    /// `reuse` (no allocation in the FMU when it supports overwriting).
    pub fn get_fmu_state(&mut self, reuse: Option<StateHandle>) -> Result<StateHandle> {
        let function = A::NAMES.get_fmu_state;
        self.alive(function)?;
        let f = self.state_fn(self.lib.common.get_fmu_state, function)?;
        let slot = match reuse {
            Some(h) => self.slot(h, function)?,
            None => {
                self.states.push((std::ptr::null_mut(), self.phase));
                self.states.len() - 1
            }
        };
        let mut state = self.states[slot].0;
        // SAFETY: the instance is live; `state` is null or a state this
        // instance obtained earlier, which the FMU may overwrite.
        let code = unsafe { f(self.component, &mut state) };
        self.states[slot] = (state, self.phase);
        if let Some(log) = &self.call_log {
            log_state::<A>(log, code, function, state);
        }
        self.check(function, code)?;
        Ok(StateHandle {
            instance_id: self.id,
            slot,
        })
    }

    /// `fmi*SetFMUState`. The instance is then where the state was saved:
    /// in Step Mode for Co-Simulation (states are saved while stepping; a
    /// restore is also the standard's way out of Error), in the mode the
    /// state was saved in for Model Exchange (Continuous-Time Mode for a
    /// deserialized one).
    pub fn set_fmu_state(&mut self, h: StateHandle) -> Result<()> {
        let function = A::NAMES.set_fmu_state;
        self.alive(function)?;
        let f = self.state_fn(self.lib.common.set_fmu_state, function)?;
        let slot = self.slot(h, function)?;
        let (state, saved_in) = self.states[slot];
        // SAFETY: the instance is live and the state was obtained from it.
        let code = unsafe { f(self.component, state) };
        if let Some(log) = &self.call_log {
            log_state::<A>(log, code, function, state);
        }
        self.check(function, code)?;
        self.phase = match self.interface {
            Interface::CoSimulation => Phase::Stepping,
            Interface::ModelExchange => saved_in,
            Interface::ScheduledExecution => Phase::ClockActivation,
        };
        Ok(())
    }

    /// `fmi*FreeFMUState`.
    pub fn free_fmu_state(&mut self, h: StateHandle) -> Result<()> {
        let function = A::NAMES.free_fmu_state;
        self.alive(function)?;
        let f = self.state_fn(self.lib.common.free_fmu_state, function)?;
        let slot = self.slot(h, function)?;
        let saved = self.states[slot].0;
        let mut state = saved;
        // SAFETY: the instance is live and the state was obtained from it.
        let code = unsafe { f(self.component, &mut state) };
        if let Some(log) = &self.call_log {
            log_state::<A>(log, code, function, saved);
        }
        self.states[slot].0 = std::ptr::null_mut();
        self.check(function, code).map(|_| ())
    }

    /// `fmi*SerializedFMUStateSize` + `fmi*SerializeFMUState`.
    pub fn serialize_fmu_state(&mut self, h: StateHandle) -> Result<Vec<u8>> {
        let n = &A::NAMES;
        self.alive(n.serialize_fmu_state)?;
        self.serializes(n.serialize_fmu_state)?;
        let size_fn = self.state_fn(
            self.lib.common.serialized_fmu_state_size,
            n.serialized_fmu_state_size,
        )?;
        let ser_fn = self.state_fn(self.lib.common.serialize_fmu_state, n.serialize_fmu_state)?;
        let slot = self.slot(h, n.serialize_fmu_state)?;
        let state = self.states[slot].0;
        let mut size = 0usize;
        // SAFETY: the instance is live and the state was obtained from it.
        let code = unsafe { size_fn(self.component, state, &mut size) };
        if let Some(log) = &self.call_log {
            log.line(A::status(code), n.serialized_fmu_state_size)
                .ptr(n.state_arg, state)
                .arg("size", size)
                .end();
        }
        self.check(n.serialized_fmu_state_size, code)?;
        let mut buf = vec![0u8; size];
        // SAFETY: buf has exactly `size` bytes, as the FMU asked.
        let code = unsafe { ser_fn(self.component, state, buf.as_mut_ptr(), size) };
        if let Some(log) = &self.call_log {
            log.line(A::status(code), n.serialize_fmu_state)
                .ptr(n.state_arg, state)
                .ptr("serializedState", buf.as_ptr().cast())
                .arg("size", size)
                .end();
        }
        self.check(n.serialize_fmu_state, code)?;
        Ok(buf)
    }

    /// `fmi*DeserializeFMUState` into a new slot.
    pub fn deserialize_fmu_state(&mut self, bytes: &[u8]) -> Result<StateHandle> {
        let function = A::NAMES.deserialize_fmu_state;
        self.alive(function)?;
        self.serializes(function)?;
        let f = self.state_fn(self.lib.common.deserialize_fmu_state, function)?;
        let mut state: FmuState = std::ptr::null_mut();
        // SAFETY: the instance is live; bytes is a valid buffer of
        // bytes.len() bytes.
        let code = unsafe { f(self.component, bytes.as_ptr(), bytes.len(), &mut state) };
        if let Some(log) = &self.call_log {
            log.line(A::status(code), function)
                .ptr("serializedState", bytes.as_ptr().cast())
                .arg("size", bytes.len())
                .ptr(A::NAMES.state_arg, state)
                .end();
        }
        self.check(function, code)?;
        // Where it was saved is not known: a Model Exchange state is taken
        // for one saved between steps of the integrator.
        let phase = match self.interface {
            Interface::CoSimulation => Phase::Stepping,
            Interface::ModelExchange => Phase::ContinuousTimeMode,
            Interface::ScheduledExecution => Phase::ClockActivation,
        };
        self.states.push((state, phase));
        Ok(StateHandle {
            instance_id: self.id,
            slot: self.states.len() - 1,
        })
    }

    /// `fmi*GetDirectionalDerivative`:
    /// `sensitivity = d(unknowns)/d(knowns) * seed`.
    pub fn get_directional_derivative(
        &mut self,
        unknowns: &[u32],
        knowns: &[u32],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> Result<()> {
        let n = &A::NAMES;
        let function = n.get_directional_derivative;
        check_len(&self.name, function, knowns.len(), seed.len())?;
        check_len(&self.name, function, unknowns.len(), sensitivity.len())?;
        self.alive(function)?;
        if !self.caps.provides_directional_derivatives {
            return Err(self.unsupported(
                function,
                &format!(
                    "the FMU declares {}=\"false\"",
                    n.provides_directional_derivatives
                ),
            ));
        }
        let f = self.exported(A::directional_fn(&self.lib.functions), function)?;
        // SAFETY: the instance is live; each slice has the length its
        // count says (checked above).
        let code =
            unsafe { A::directional(f, self.component, unknowns, knowns, seed, sensitivity) };
        if let Some(log) = &self.call_log {
            let [vu, nu, vk, nk] = n.directional_args;
            let mut line = log
                .line(A::status(code), function)
                .vrs(vu, n.float_kind, unknowns)
                .arg(nu, unknowns.len())
                .vrs(vk, n.float_kind, knowns)
                .arg(nk, knowns.len());
            for ((name, count), values) in n.directional_values.iter().zip([seed, &*sensitivity]) {
                line = line.values(name, values);
                if let Some(count) = count {
                    line = line.arg(count, values.len());
                }
            }
            line.end();
        }
        self.check(function, code).map(|_| ())
    }

    /// The `order`-th time derivative (>= 1) of float outputs
    /// (`fmi2GetRealOutputDerivatives`, `fmi3GetOutputDerivatives`).
    pub fn get_output_derivatives(
        &mut self,
        vrs: &[u32],
        order: i32,
        values: &mut [f64],
    ) -> Result<()> {
        let function = A::NAMES.get_output_derivatives;
        check_len(&self.name, function, vrs.len(), values.len())?;
        self.alive(function)?;
        if order < 1 || order as u32 > self.caps.max_output_derivative_order {
            return Err(self.unsupported(
                function,
                &format!(
                    "order {order} requested, the FMU declares maxOutputDerivativeOrder={}",
                    self.caps.max_output_derivative_order
                ),
            ));
        }
        let f = self.exported(A::output_derivatives_fn(&self.lib.functions), function)?;
        self.int_scratch.clear();
        self.int_scratch.resize(vrs.len(), order);
        // SAFETY: the instance is live; vrs, orders and values all have
        // vrs.len() elements.
        let code =
            unsafe { A::output_derivatives(f, self.component, vrs, &self.int_scratch, values) };
        if let Some(log) = &self.call_log {
            log_derivatives::<A>(log, code, function, vrs, &self.int_scratch, values);
        }
        self.check(function, code).map(|_| ())
    }

    /// `fmi*EnterEventMode`: Model Exchange, from Continuous-Time Mode;
    /// FMI 3 Co-Simulation with `eventModeUsed`, from Step Mode.
    pub fn enter_event_mode(&mut self) -> Result<()> {
        let function = A::NAMES.enter_event_mode;
        if self.me.is_none() && self.events.event_mode_used {
            let f =
                self.cs_event_call(function, Phase::Stepping, |lib| lib.common.enter_event_mode)?;
            return self.change_mode(f, function, Phase::EventMode);
        }
        let f = self.me_call(function, &[Phase::ContinuousTimeMode], |m| {
            m.enter_event_mode
        })?;
        self.change_mode(f, function, Phase::EventMode)
    }

    /// The function `pick` takes from the library for `function` of a
    /// Co-Simulation instance with `eventModeUsed`, called in state
    /// `allowed`: the error of a dead instance, of the wrong state, or of
    /// a library without it.
    pub(crate) fn cs_event_call<F>(
        &self,
        function: &'static str,
        allowed: Phase,
        pick: impl FnOnce(&FmiLibrary<A>) -> Option<F>,
    ) -> Result<F> {
        self.alive(function)?;
        if self.phase != allowed {
            return Err(self.out_of_sequence(function, &phases_text(&[allowed])));
        }
        pick(&self.lib).ok_or_else(|| self.lib.missing(function))
    }

    /// The update of discrete states in Event Mode
    /// (`fmi2NewDiscreteStates`, `fmi3UpdateDiscreteStates`), checked: the
    /// function to call, or the error.
    pub(crate) fn update_discrete_states_fn(&self) -> Result<A::UpdateDiscreteStates> {
        if self.me.is_none() && self.events.event_mode_used {
            return self.cs_event_call(A::NAMES.update_discrete_states, Phase::EventMode, |lib| {
                A::update_discrete_states_fn(&lib.functions)
            });
        }
        self.me_call(A::NAMES.update_discrete_states, &[Phase::EventMode], |m| {
            m.update_discrete_states
        })
    }

    /// `fmi*EnterContinuousTimeMode` (Model Exchange, from Event Mode).
    pub fn enter_continuous_time_mode(&mut self) -> Result<()> {
        let function = A::NAMES.enter_continuous_time_mode;
        let f = self.me_call(function, &[Phase::EventMode], |m| {
            m.enter_continuous_time_mode
        })?;
        self.change_mode(f, function, Phase::ContinuousTimeMode)
    }

    /// `fmi*CompletedIntegratorStep` (Model Exchange, Continuous-Time
    /// Mode), after an accepted step of the integrator. `no_set_prior` is
    /// `noSetFMUStatePriorToCurrentPoint`.
    pub fn completed_integrator_step(&mut self, no_set_prior: bool) -> Result<CompletedStep> {
        let function = A::NAMES.completed_integrator_step;
        let f = self.me_call(function, &[Phase::ContinuousTimeMode], |m| {
            m.completed_integrator_step
        })?;
        // SAFETY: the instance is live.
        let (code, enter_event_mode, terminate_simulation) =
            unsafe { A::completed_integrator_step(f, self.component, no_set_prior) };
        if let Some(log) = &self.call_log {
            log.line(A::status(code), function)
                .flag("noSetFMUStatePriorToCurrentPoint", no_set_prior)
                .flag("enterEventMode", enter_event_mode)
                .flag("terminateSimulation", terminate_simulation)
                .end();
        }
        self.check(function, code)?;
        Ok(CompletedStep {
            enter_event_mode,
            terminate_simulation,
        })
    }

    /// `fmi*SetTime` (Model Exchange, Event Mode or Continuous-Time Mode).
    pub fn set_time(&mut self, t: f64) -> Result<()> {
        let function = A::NAMES.set_time;
        let f = self.me_call(
            function,
            &[Phase::EventMode, Phase::ContinuousTimeMode],
            |m| m.set_time,
        )?;
        self.time = t;
        // SAFETY: the instance is live.
        let code = unsafe { f(self.component, t) };
        if let Some(log) = &self.call_log {
            log.line(A::status(code), function).num("time", t).end();
        }
        self.check(function, code).map(|_| ())
    }

    /// `fmi*SetContinuousStates` (Model Exchange, Continuous-Time Mode):
    /// `x` has one value per continuous state.
    pub fn set_continuous_states(&mut self, x: &[f64]) -> Result<()> {
        let call = &A::NAMES.set_continuous_states;
        let f = self.me_call(call.function, call.phases, |m| m.set_continuous_states)?;
        self.check_count(call.function, x.len(), self.nx, "continuous states")?;
        // SAFETY: the instance is live; x has x.len() values, passed as
        // the count.
        let code = unsafe { f(self.component, x.as_ptr(), x.len()) };
        if let Some(log) = &self.call_log {
            log_array::<A>(log, code, call, x);
        }
        self.check(call.function, code).map(|_| ())
    }

    /// `fmi2GetDerivatives`, `fmi3GetContinuousStateDerivatives`: one
    /// value per continuous state.
    pub fn get_derivatives(&mut self, dx: &mut [f64]) -> Result<()> {
        let call = &A::NAMES.get_derivatives;
        let f = self.me_call(call.function, call.phases, |m| m.get_derivatives)?;
        self.get_array(call, f, dx, self.nx, "continuous states")
    }

    /// `fmi*GetEventIndicators`: one value per event indicator.
    pub fn get_event_indicators(&mut self, z: &mut [f64]) -> Result<()> {
        let call = &A::NAMES.get_event_indicators;
        let f = self.me_call(call.function, call.phases, |m| m.get_event_indicators)?;
        self.get_array(call, f, z, self.nz, "event indicators")
    }

    /// `fmi*GetContinuousStates`.
    pub fn get_continuous_states(&mut self, x: &mut [f64]) -> Result<()> {
        let call = &A::NAMES.get_continuous_states;
        let f = self.me_call(call.function, call.phases, |m| m.get_continuous_states)?;
        self.get_array(call, f, x, self.nx, "continuous states")
    }

    /// `fmi*GetNominalsOfContinuousStates`.
    pub fn get_nominals_of_continuous_states(&mut self, nominals: &mut [f64]) -> Result<()> {
        let call = &A::NAMES.get_nominals;
        let f = self.me_call(call.function, call.phases, |m| m.get_nominals)?;
        self.get_array(call, f, nominals, self.nx, "continuous states")
    }

    /// Calls `f`, the Model Exchange getter `call`, into `values`, one per
    /// `what` of the FMU's `n`.
    #[inline]
    fn get_array(
        &mut self,
        call: &ArrayCall,
        f: GetArrayFn,
        values: &mut [f64],
        n: usize,
        what: &str,
    ) -> Result<()> {
        self.check_count(call.function, values.len(), n, what)?;
        // SAFETY: the instance is live; values has values.len() elements,
        // passed as the count.
        let code = unsafe { f(self.component, values.as_mut_ptr(), values.len()) };
        if let Some(log) = &self.call_log {
            log_array::<A>(log, code, call, values);
        }
        self.check(call.function, code).map(|_| ())
    }

    /// `len` values given for the FMU's `n` `what`: the FMU reads or
    /// writes `n` whatever it is told, so another length is refused.
    #[inline]
    fn check_count(&self, function: &'static str, len: usize, n: usize, what: &str) -> Result<()> {
        if len == n {
            Ok(())
        } else {
            Err(self.count_mismatch(function, len, n, what))
        }
    }

    #[cold]
    #[inline(never)]
    fn count_mismatch(&self, function: &'static str, len: usize, n: usize, what: &str) -> FmiError {
        FmiError::InvalidArgument {
            instance: self.name.clone(),
            function,
            reason: format!("a buffer of {len} values, the FMU has {n} {what}"),
        }
    }

    /// This instance's held step ([`HeldStepOf`]): `set` of `u` on
    /// `in_vrs` (none without inputs), `doStep` and `get` of `out_vrs`
    /// into one of `y` (none without outputs), bound for many steps
    /// ([`BoundStep::step`](crate::BoundStep::step)). `None` when the
    /// lengths do not fit (FMI 2: one input value per value reference;
    /// FMI 3: at least one; one output value per value reference), the
    /// instance logs its calls (the log goes through its other calls), is
    /// for Model Exchange, holds none of its inputs (FMI 3: one handed
    /// over as a polynomial through intermediate update), or can take no
    /// call after a Fatal status.
    pub fn held_step<'a>(&'a mut self, values: HeldValues<'a>) -> Option<HeldStepOf<'a, A>> {
        let HeldValues {
            in_vrs,
            u,
            out_vrs,
            y,
            no_set_prior,
        } = values;
        if !A::values_fit(in_vrs.len(), u.len())
            || y.iter().any(|y| y.len() != out_vrs.len())
            || self.call_log.is_some()
            || self.phase == Phase::Fatal
            || !A::holds_inputs(self, in_vrs)
        {
            return None;
        }
        let do_step = self.do_step?;
        let (set, get) = A::f64_fns(&self.lib.functions);
        Some(HeldStepOf {
            component: self.component,
            set,
            do_step,
            get,
            in_vrs,
            u,
            out_vrs,
            y,
            no_set_prior: A::boolean(no_set_prior),
            owner: self,
            failure: None,
        })
    }
}

/// The held step of one instance of version `A`
/// ([`super::fmi2::Fmi2HeldStep`], [`super::fmi3::Fmi3HeldStep`]) with
/// everything it needs bound once, for a run of macro steps that make
/// nothing but these calls: the function pointers, the instance, the
/// value references and the value arrays, their lengths checked when it
/// is made ([`FmiInstance::held_step`]). Made only for an instance that is
/// alive and logs no calls, so a step tests nothing but the statuses (and
/// FMI 3 the flags `fmi3DoStep` returns): every status but OK (an early
/// return, the end of the simulation) goes out of line to the instance's
/// own checks, which give the same errors and outcomes as its other
/// calls.
pub struct HeldStepOf<'a, A: Api> {
    component: Component,
    set: A::SetFn<f64>,
    do_step: A::DoStep,
    get: A::GetFn<f64>,
    in_vrs: &'a [u32],
    u: &'a mut [f64],
    out_vrs: &'a [u32],
    /// The two buffers the outputs are read into, by turns (a step's
    /// `side`): the other one keeps the values the step before read.
    y: [&'a mut [f64]; 2],
    /// `noSetFMUStatePriorToCurrentPoint`, as the C Boolean passed.
    no_set_prior: A::Bool,
    owner: &'a mut FmiInstance<A>,
    /// The call at which the last step that did not complete stopped, and
    /// what it returned (boxed: the bound steps of a run lie side by side,
    /// and a step reads all but this).
    failure: Option<Box<(StepCall, Result<StepOutcome>)>>,
}

impl<A: Api> crate::instance::BoundStep for HeldStepOf<'_, A> {
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

    /// One step from `t` by `h`: the calls, checks and errors of
    /// `set_f64`, `do_step` and `get_f64` in turn (`mark` is told of each
    /// call before it is made, and of [`StepCall::Completed`]), the
    /// outputs read into the buffer of `side` (0 or 1). `true` when the
    /// step completed; else [`BoundStep::take_failure`](crate::BoundStep::take_failure)
    /// says how it ended. The instance's time (that of its errors) is set
    /// where a step does not complete, and by
    /// [`BoundStep::reached`](crate::BoundStep::reached) after steps that
    /// do: `since` is the end of the instance's last step as it has it
    /// (`t + h` of that step, which is not always this step's `t` to the
    /// last bit), the time of an error of setting the inputs; NaN: the
    /// time the instance has. `check` is given the values read, once the
    /// step completed (no call where it reads none): its `false` makes the
    /// step's `false`, with no failure recorded
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
            // SAFETY: the instance is live (borrowed for as long as self
            // lives, and alive when self was made: only a status taken out
            // of line ends it, and that ends the step); u fits in_vrs
            // (checked in held_step).
            let code = unsafe { A::set(self.set, self.component, self.in_vrs, self.u) };
            if code != 0 && !self.values_returned(StepCall::SetInputs, code, since) {
                return false;
            }
        }
        mark(StepCall::DoStep);
        // SAFETY: the instance is live (as above).
        let (code, flags) =
            unsafe { A::do_step(self.do_step, self.component, t, h, self.no_set_prior) };
        if !A::step_ok(code, &flags) && !self.do_step_returned(code, t, h, flags) {
            return false;
        }
        if !self.out_vrs.is_empty() {
            mark(StepCall::GetOutputs);
            // SAFETY: the instance is live (as above); out_vrs and both
            // buffers of y have the same length (checked in held_step).
            let code = unsafe {
                A::get(
                    self.get,
                    self.component,
                    self.out_vrs,
                    &mut *self.y[side & 1],
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

impl<A: Api> HeldStepOf<'_, A> {
    /// Setting the inputs (`call` [`StepCall::SetInputs`]) or reading the
    /// outputs returned `code`, not OK, at time `t` (NaN: the
    /// instance's): `true` when the step goes on (a Warning).
    #[cold]
    #[inline(never)]
    fn values_returned(&mut self, call: StepCall, code: c_int, t: f64) -> bool {
        let function = if call == StepCall::SetInputs {
            A::NAMES.set_f64
        } else {
            A::NAMES.get_f64
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

    /// Reading the outputs after the step from `t` by `h` returned `code`,
    /// not OK (its time, `t + h`, is reckoned here, out of the loop that
    /// steps).
    #[cold]
    #[inline(never)]
    fn get_returned(&mut self, code: c_int, t: f64, h: f64) -> bool {
        self.values_returned(StepCall::GetOutputs, code, t + h)
    }

    /// `doStep` returned `code` with `flags`, not a plain OK: what the
    /// instance's `do_step` makes of it. `true` when the step completed
    /// all the same (a Warning). (A plain OK needs none of it: the
    /// instance's time is set by [`BoundStep::reached`](crate::BoundStep::reached).)
    #[cold]
    #[inline(never)]
    fn do_step_returned(&mut self, code: c_int, t: f64, h: f64, flags: A::StepFlags) -> bool {
        // (The time of an error in the step is its start.)
        self.owner.time = t;
        let no_set_prior = A::is_true(self.no_set_prior);
        let outcome = A::step_returned(&mut *self.owner, code, t, h, no_set_prior, flags);
        if matches!(outcome, Ok(StepOutcome::Completed)) {
            return true;
        }
        self.failure = Some(Box::new((StepCall::DoStep, outcome)));
        false
    }
}

impl<A: Api> Drop for FmiInstance<A> {
    fn drop(&mut self) {
        if self.phase == Phase::Fatal {
            // The standard forbids every call after Fatal, even freeing.
            return;
        }
        self.free_saved_states();
        // SAFETY: the instance is live and is not used after this call;
        // its environment outlives it (fields drop after this function).
        unsafe { (self.lib.common.free_instance)(self.component) };
        if let Some(log) = &self.call_log {
            // A void function: logged as OK once it returned, as fmusim does.
            log.call(Status::Ok, A::NAMES.free_instance);
        }
    }
}
