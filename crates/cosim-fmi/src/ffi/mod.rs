//! The dynamic-library binding: the only place in `cosim` with `unsafe`.
//!
//! [`fmi2`] and [`fmi3`] each resolve their standard's C functions from a
//! shared library with `libloading`; one FMU instance of either is a
//! [`common::FmiInstance`], a safe struct whose methods check slice
//! lengths and the state machine, translate statuses into
//! [`FmiError`](crate::FmiError) values and route the FMU's log messages
//! into `tracing`. What both versions do alike ([`common`]) is written
//! once, generic over the version ([`common::Api`]); [`fmi2`] and [`fmi3`]
//! hold only what differs. Everything above this module is safe Rust.

pub mod call_log;
mod clock_update;
pub mod common;
pub mod fmi2;
pub mod fmi3;
mod log;
mod pool;

pub use clock_update::ClockUpdates;
use serde::{Deserialize, Serialize};

/// An FMI status code (`fmi2Status` / `fmi3Status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Status {
    /// All well.
    Ok,
    /// Something is questionable; the call did its work.
    Warning,
    /// The call could not complete (e.g. a step was not fully carried out);
    /// the instance can still be used as the standard describes.
    Discard,
    /// The call failed; the instance must be terminated/reset.
    Error,
    /// The instance is unusable; no further call (not even free) is allowed.
    Fatal,
    /// FMI 2 asynchronous step still running (not supported by `cosim`).
    Pending,
    /// A code that is not a status of the FMU's FMI version (7, -1; FMI 3:
    /// also 5, FMI 2's Pending). The standards say nothing of such a
    /// return: a library returning garbage is not to be trusted, so it is
    /// treated as [`Status::Fatal`] (no further call on the instance, not
    /// even free), and named as what it is. FMPy raises "failed with
    /// status 7 (illegal return code)" and calls nothing more either.
    Invalid(i32),
}

impl Status {
    /// Maps the integer an FMI 2 function returned.
    pub(crate) fn from_fmi2(code: i32) -> Status {
        match code {
            0 => Status::Ok,
            1 => Status::Warning,
            2 => Status::Discard,
            3 => Status::Error,
            4 => Status::Fatal,
            5 => Status::Pending,
            _ => Status::Invalid(code),
        }
    }

    /// Maps an `fmi3Status` (no Pending in FMI 3).
    pub(crate) fn from_fmi3(code: i32) -> Status {
        match code {
            0 => Status::Ok,
            1 => Status::Warning,
            2 => Status::Discard,
            3 => Status::Error,
            4 => Status::Fatal,
            _ => Status::Invalid(code),
        }
    }

    /// True for OK and Warning: the call did its work.
    pub fn is_success(self) -> bool {
        matches!(self, Status::Ok | Status::Warning)
    }

    /// True for Fatal and a code outside the standard (treated as Fatal):
    /// no further call on the instance is allowed.
    pub fn is_fatal(self) -> bool {
        matches!(self, Status::Fatal | Status::Invalid(_))
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Status::Ok => "OK",
            Status::Warning => "Warning",
            Status::Discard => "Discard",
            Status::Error => "Error",
            Status::Fatal => "Fatal",
            Status::Pending => "Pending",
            Status::Invalid(code) => return write!(f, "invalid status {code}"),
        })
    }
}

/// The calls of one held-input step ([`crate::Instance::set_step_get_f64`]),
/// announced to the caller before each is made (for a watchdog), and the
/// step's completion after the last of them returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepCall {
    /// Setting the inputs.
    SetInputs,
    /// `doStep`.
    DoStep,
    /// Reading the outputs.
    GetOutputs,
    /// The step completed and its last call returned OK (not announced
    /// when it ends otherwise: the caller sees the result).
    Completed,
}

/// How a `doStep` call ended when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepOutcome {
    /// The step reached `t + h`.
    Completed,
    /// FMI 3 event mode (`eventHandlingNeeded`): the FMU met an event at
    /// `last_successful_time` (the end of the step, or earlier where the
    /// importer allowed early return) and waits in Step Mode for the
    /// importer to enter Event Mode there
    /// ([`crate::Instance::enter_event_mode`]).
    EventHandlingNeeded {
        /// Where the FMU stopped: the time of the event.
        last_successful_time: f64,
    },
    /// FMI 3 early return: the FMU stopped at `last_successful_time`.
    EarlyReturn {
        /// Where the FMU stopped.
        last_successful_time: f64,
    },
    /// The FMU returned Discard: it could not complete the step and stopped
    /// at `last_successful_time` (FMI 2 `fmi2LastSuccessfulTime`, FMI 3
    /// `lastSuccessfulTime`).
    Discarded {
        /// Where the FMU stopped.
        last_successful_time: f64,
    },
    /// The FMU ended its own simulation, at `last_successful_time` (the
    /// end of the step, or earlier): FMI 2 `fmi2Discard` with
    /// `fmi2GetBooleanStatus(fmi2Terminated) = true`, FMI 3
    /// `terminateSimulation = true` (with OK, early return or Discard).
    /// Its values at that time can still be read; it must not step again.
    Terminated {
        /// The FMU's last successful time.
        last_successful_time: f64,
    },
}

/// Where an instance is in the standard's state machine, as far as the
/// importer has driven it. Used to make only the calls the state allows
/// (`fmi*Terminate` only in Step Mode, Event Mode or Continuous-Time
/// Mode, never in Instantiated or Initialization Mode, nothing after Error
/// but freeing; the Model Exchange calls in the modes the standard names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// After instantiation or reset (FMI 2: before and after
    /// `fmi2SetupExperiment`).
    Instantiated,
    /// FMI 3 Configuration Mode (structural parameters).
    Configuration,
    /// Initialization Mode.
    Initialization,
    /// Co-Simulation: FMI 2 stepComplete / stepFailed, FMI 3 Step Mode /
    /// Step Discarded.
    Stepping,
    /// Model Exchange: Event Mode (after `fmi*ExitInitializationMode` and
    /// `fmi*EnterEventMode`), where discrete states are updated.
    EventMode,
    /// Model Exchange: Continuous-Time Mode (after
    /// `fmi*EnterContinuousTimeMode`), where the importer integrates the
    /// continuous states.
    ContinuousTimeMode,
    /// Scheduled Execution: Clock Activation Mode (after
    /// `fmi3ExitInitializationMode`), where model partitions are
    /// activated.
    ClockActivation,
    /// After `fmi*Terminate`.
    Terminated,
    /// After a call returned Error: only freeing (or reset) is allowed.
    Error,
    /// After Fatal: no call at all.
    Fatal,
}

impl Phase {
    /// The state's name in the standard's terms, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Instantiated => "Instantiated",
            Phase::Configuration => "Configuration Mode",
            Phase::Initialization => "Initialization Mode",
            Phase::Stepping => "Step Mode",
            Phase::EventMode => "Event Mode",
            Phase::ContinuousTimeMode => "Continuous-Time Mode",
            Phase::ClockActivation => "Clock Activation Mode",
            Phase::Terminated => "Terminated",
            Phase::Error => "Error",
            Phase::Fatal => "Fatal",
        }
    }
}

/// The interface an FMU is instantiated for (FMI 2 `fmi2Type`, FMI 3 the
/// `fmi3Instantiate...` function called): the element of
/// `modelDescription.xml` whose `modelIdentifier` names the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Interface {
    /// Co-Simulation: the FMU advances itself (`fmi*DoStep`).
    #[default]
    CoSimulation,
    /// Model Exchange: the importer's integrator advances the FMU's
    /// continuous states.
    ModelExchange,
    /// FMI 3 Scheduled Execution: the importer activates the FMU's model
    /// partitions as their Clocks tick (`fmi3ActivateModelPartition`).
    ScheduledExecution,
}

impl Interface {
    /// The element that declares it: `CoSimulation`, `ModelExchange`,
    /// `ScheduledExecution`.
    pub fn element(self) -> &'static str {
        match self {
            Interface::CoSimulation => "CoSimulation",
            Interface::ModelExchange => "ModelExchange",
            Interface::ScheduledExecution => "ScheduledExecution",
        }
    }

    /// Its name in the standard's prose: `Co-Simulation`, `Model
    /// Exchange`, `Scheduled Execution`.
    pub fn name(self) -> &'static str {
        match self {
            Interface::CoSimulation => "Co-Simulation",
            Interface::ModelExchange => "Model Exchange",
            Interface::ScheduledExecution => "Scheduled Execution",
        }
    }

    /// The FMI functions that end a macro step of an FMU of `version`
    /// instantiated for this interface, for messages ("... asked to
    /// terminate", "... returned Discard"): `doStep` in Co-Simulation; in
    /// Model Exchange the importer's integration step, which ends (or is
    /// ended by the FMU) in `CompletedIntegratorStep` or the discrete
    /// update of an event; a partition's activation in Scheduled
    /// Execution.
    pub fn step_functions(self, version: crate::FmiVersion) -> &'static str {
        let v2 = version == crate::FmiVersion::V2;
        match self {
            Interface::CoSimulation if v2 => "fmi2DoStep",
            Interface::CoSimulation => "fmi3DoStep",
            Interface::ModelExchange if v2 => "fmi2CompletedIntegratorStep / fmi2NewDiscreteStates",
            Interface::ModelExchange => "fmi3CompletedIntegratorStep / fmi3UpdateDiscreteStates",
            Interface::ScheduledExecution => "fmi3ActivateModelPartition",
        }
    }
}

impl std::fmt::Display for Interface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `fmi3IntervalQualifier`: what `fmi3GetIntervalDecimal` says of a
/// Clock's interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalQualifier {
    /// `fmi3IntervalNotYetKnown`: no interval now (the Clock is not
    /// scheduled yet).
    NotYetKnown,
    /// `fmi3IntervalUnchanged`: the interval given before still holds.
    Unchanged,
    /// `fmi3IntervalChanged`: a new interval, from the current time.
    Changed,
}

impl IntervalQualifier {
    /// The C enumeration's value (0, 1, 2), or `None` outside it.
    pub(crate) fn from_c(q: i32) -> Option<IntervalQualifier> {
        Some(match q {
            0 => IntervalQualifier::NotYetKnown,
            1 => IntervalQualifier::Unchanged,
            2 => IntervalQualifier::Changed,
            _ => return None,
        })
    }
}

/// How an FMI 3 Co-Simulation instance's importer handles events
/// (`fmi3InstantiateCoSimulation`'s `eventModeUsed` and
/// `earlyReturnAllowed`). Both off by default, as FMPy and fmusim
/// instantiate; ignored by FMI 2 and Model Exchange instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EventHandling {
    /// `eventModeUsed`: the importer enters Event Mode where the FMU says
    /// `eventHandlingNeeded`, and after initialization (only for an FMU
    /// that declares `hasEventMode`).
    pub event_mode_used: bool,
    /// `earlyReturnAllowed`: the FMU may end a step before its end, at an
    /// event.
    pub early_return_allowed: bool,
}

/// What `fmi2NewDiscreteStates` (its `fmi2EventInfo`) or
/// `fmi3UpdateDiscreteStates` returned, in Event Mode.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DiscreteStatesUpdate {
    /// FMI 2 `newDiscreteStatesNeeded`, FMI 3 `discreteStatesNeedUpdate`:
    /// the event iteration goes on (another update in Event Mode).
    pub discrete_states_need_update: bool,
    /// `terminateSimulation`: the FMU ends the simulation.
    pub terminate_simulation: bool,
    /// `nominalsOfContinuousStatesChanged`.
    pub nominals_changed: bool,
    /// `valuesOfContinuousStatesChanged`: the continuous states are to be
    /// read again.
    pub values_changed: bool,
    /// `nextEventTime` where `nextEventTimeDefined`: the next time event.
    pub next_event_time: Option<f64>,
}

/// What `fmi*CompletedIntegratorStep` returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompletedStep {
    /// `enterEventMode`: a step event; the importer enters Event Mode.
    pub enter_event_mode: bool,
    /// `terminateSimulation`: the FMU ends the simulation.
    pub terminate_simulation: bool,
}

/// Where a state handle came from: the instance id and the slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StateHandle {
    pub(crate) instance_id: u64,
    pub(crate) slot: usize,
}

/// A process-unique id per instance, so a state handle cannot be used on
/// another instance.
/// Loads the shared library at `path` (its initialisers run) and resolves
/// its functions with `resolve`. A library whose functions do not resolve
/// is not unloaded either: its initialisers ran, and what they started may
/// run on (`pool`).
#[allow(unsafe_code)]
pub(crate) fn open_library<F>(
    path: &std::path::Path,
    resolve: impl FnOnce(&libloading::Library, &std::path::Path) -> crate::Result<F>,
) -> crate::Result<(libloading::Library, F)> {
    // SAFETY: loading a library runs its initialisers; an FMU binary is
    // trusted to that extent by the user who asks to simulate it (the
    // `isolation = "process"` mode exists for FMUs that are not).
    let library =
        unsafe { libloading::Library::new(path) }.map_err(|e| crate::FmiError::LoadLibrary {
            library: path.to_path_buf(),
            reason: load_error_reason(&e),
        })?;
    match resolve(&library, path) {
        Ok(functions) => Ok((library, functions)),
        Err(e) => {
            std::mem::forget(library);
            Err(e)
        }
    }
}

/// The loader's message for a library that failed to load: libloading's
/// own text ("dlopen failed") followed by the system's reason (its error
/// source: the missing dependency, the wrong architecture).
pub(crate) fn load_error_reason(e: &libloading::Error) -> String {
    use std::error::Error as _;
    let mut reason = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        reason.push_str(": ");
        reason.push_str(&s.to_string());
        source = s.source();
    }
    if reason.contains("cannot open shared object file") {
        reason.push_str(
            " (a library the FMU binary depends on is not on the loader's path: `ldd` on the binary lists it; set LD_LIBRARY_PATH or install it)",
        );
    }
    reason
}

/// Ends the process with exit status `code` the way `_exit` does: after
/// flushing the standard streams, but without running C `atexit` handlers
/// or the destructors of loaded libraries. For the end of a command whose
/// outputs are complete and whose FMUs are freed: foreign code that
/// crashes in its own finalisation (an FMU's embedded runtime) cannot then
/// turn a finished run into a crash. Rust's own cleanup at exit is only
/// the flush of stdout, done here.
#[allow(unsafe_code)]
pub fn exit_process(code: u8) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` takes no pointers and never returns; nothing of
    // ours is left unwritten (files are closed when their writers drop,
    // before this call; the standard streams are flushed above).
    unsafe { libc::_exit(i32::from(code)) }
}

/// What to do if foreign code ends the process with `exit()` (an FMU
/// calling `exit(3)` in the middle of a run): set once, by the command
/// that runs FMUs in this process.
static ON_FOREIGN_EXIT: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>> =
    std::sync::OnceLock::new();

/// The C exit handler: `cosim` itself ends with [`exit_process`], which
/// runs no exit handlers, so this runs only when something else (an FMU)
/// calls `exit`.
extern "C" fn run_on_foreign_exit() {
    if let Some(f) = ON_FOREIGN_EXIT.get() {
        // A panic must not unwind into C.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    }
}

/// Registers `handler` to run if foreign code calls `exit()` while this
/// process runs FMUs: it should write what the run has (outputs, a
/// summary saying an FMU exited the process) and end the process with
/// [`exit_process`] and a status of its own. Only the first registration
/// counts; returns whether this one did.
#[allow(unsafe_code)]
pub fn on_foreign_exit(handler: impl Fn() + Send + Sync + 'static) -> bool {
    if ON_FOREIGN_EXIT.set(Box::new(handler)).is_err() {
        return false;
    }
    // SAFETY: registers a function without arguments that never unwinds
    // (it catches panics); atexit stores only the pointer.
    unsafe { libc::atexit(run_on_foreign_exit) == 0 }
}

/// How many copies of FMU libraries this process has loaded: all are still
/// loaded (none is ever unloaded; a copy no FMU uses serves the next load
/// of the same library). For tests of that bound.
pub fn loaded_library_copies() -> usize {
    fmi2::Fmi2Library::loaded_copies() + fmi3::Fmi3Library::loaded_copies()
}

pub(crate) fn next_instance_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Checks that `values` has as many elements as `vrs`.
#[inline]
pub(crate) fn check_len(
    instance: &str,
    function: &'static str,
    n_vrs: usize,
    n_values: usize,
) -> crate::Result<()> {
    if n_vrs == n_values {
        Ok(())
    } else {
        Err(length_mismatch(instance, function, n_vrs, n_values))
    }
}

/// The error of `n_values` values given for `n_vrs` value references.
#[cold]
#[inline(never)]
pub(crate) fn length_mismatch(
    instance: &str,
    function: &'static str,
    n_vrs: usize,
    n_values: usize,
) -> crate::FmiError {
    crate::FmiError::InvalidArgument {
        instance: instance.to_string(),
        function,
        reason: format!("{n_vrs} value references but a buffer of {n_values} values"),
    }
}

#[cfg(test)]
mod tests {
    use super::Interface;
    use crate::FmiVersion::{V2, V3};

    /// What a message names as the function that ended (or was in) a
    /// step: `doStep` only where the FMU has one (an FMU run as Model
    /// Exchange that asked to terminate was said to have done so in
    /// `fmi2DoStep`).
    #[test]
    fn the_step_functions_are_those_of_the_interface() {
        assert_eq!(Interface::CoSimulation.step_functions(V2), "fmi2DoStep");
        assert_eq!(Interface::CoSimulation.step_functions(V3), "fmi3DoStep");
        assert_eq!(
            Interface::ModelExchange.step_functions(V2),
            "fmi2CompletedIntegratorStep / fmi2NewDiscreteStates"
        );
        assert_eq!(
            Interface::ModelExchange.step_functions(V3),
            "fmi3CompletedIntegratorStep / fmi3UpdateDiscreteStates"
        );
        assert_eq!(
            Interface::ScheduledExecution.step_functions(V3),
            "fmi3ActivateModelPartition"
        );
    }
}
