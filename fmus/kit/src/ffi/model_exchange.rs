//! The Model Exchange functions on the C side, one implementation for FMI
//! 2.0 and FMI 3.0: `fmi2.rs` and `fmi3.rs` convert their arguments and
//! call these with their version. Which states allow which call, and the
//! call-sequence rules, are the instance's ([`MeCall`],
//! `Instance::check_me_call`).

use std::ffi::{c_int, c_void};

use super::shared::simple;
use super::{slice, slice_mut, write_out};
use crate::caps::FmiVersion;
use crate::instance::{Instance, MeCall, R};

/// Why a Model Exchange function is refused by an FMU without Model
/// Exchange (co-simulation only).
pub(crate) const NO_ME: &str = "model exchange is not supported by this FMU (co-simulation only)";

/// Runs a Model Exchange call: on a Model Exchange instance, in a state
/// that allows it (else refused: `refusal` for an FMU without Model
/// Exchange), then `f`.
pub(crate) fn call(
    c: *mut c_void,
    version: FmiVersion,
    me_call: MeCall,
    refusal: &str,
    f: impl FnOnce(&mut Instance) -> R<()>,
) -> c_int {
    // Every state passes the outer check: the call's states are checked
    // after the interface, so that a co-simulation instance hears why.
    simple(c, me_call.name(version), !0, |inst| {
        inst.check_me_call(me_call, refusal)?;
        f(inst)
    })
}

/// `fmi2EnterEventMode` / `fmi3EnterEventMode`.
pub(crate) fn enter_event_mode(c: *mut c_void, version: FmiVersion, refusal: &str) -> c_int {
    call(c, version, MeCall::EnterEventMode, refusal, |inst| {
        inst.enter_event_mode()
    })
}

/// `fmi2EnterContinuousTimeMode` / `fmi3EnterContinuousTimeMode`.
pub(crate) fn enter_continuous_time_mode(c: *mut c_void, version: FmiVersion) -> c_int {
    call(c, version, MeCall::EnterContinuousTimeMode, NO_ME, |inst| {
        inst.enter_continuous_time_mode()
    })
}

/// `fmi2CompletedIntegratorStep` / `fmi3CompletedIntegratorStep`: both
/// out-arguments are checked before the model is called.
///
/// # Safety
/// FMI calling convention: each pointer points to one writable value.
pub(crate) unsafe fn completed_integrator_step<T: From<bool>>(
    c: *mut c_void,
    version: FmiVersion,
    no_set_prior: bool,
    enter_event_mode: *mut T,
    terminate: *mut T,
) -> c_int {
    call(c, version, MeCall::CompletedIntegratorStep, NO_ME, |inst| {
        // SAFETY: FMI calling convention: each points to one value.
        let (enter, term) = unsafe {
            (
                slice_mut(enter_event_mode, 1, "enterEventMode")?,
                slice_mut(terminate, 1, "terminateSimulation")?,
            )
        };
        let event = inst.completed_integrator_step(no_set_prior)?;
        enter[0] = T::from(event.enter_event_mode);
        term[0] = T::from(event.terminate_simulation);
        Ok(())
    })
}

/// `fmi2SetTime` / `fmi3SetTime`.
pub(crate) fn set_time(c: *mut c_void, version: FmiVersion, t: f64) -> c_int {
    call(c, version, MeCall::SetTime, NO_ME, |inst| inst.set_time(t))
}

/// `fmi2SetContinuousStates` / `fmi3SetContinuousStates`.
///
/// # Safety
/// FMI calling convention: `x` holds `n` values.
pub(crate) unsafe fn set_continuous_states(
    c: *mut c_void,
    version: FmiVersion,
    x: *const f64,
    n: usize,
) -> c_int {
    call(c, version, MeCall::SetContinuousStates, NO_ME, |inst| {
        let names = state_vector_name(version);
        // SAFETY: FMI calling convention: `x` holds `n` values.
        let x = unsafe { slice(x, n, names.0)? };
        inst.set_continuous_states(x)
    })
}

/// The names of the state vector argument (`x[]` / `continuousStates`).
fn state_vector_name(version: FmiVersion) -> (&'static str, &'static str) {
    match version {
        FmiVersion::Fmi2 => ("x[]", "derivatives[]"),
        FmiVersion::Fmi3 => ("continuousStates", "derivatives"),
    }
}

/// The getters of a vector: continuous states, their derivatives, event
/// indicators, nominals (`me_call` says which).
///
/// # Safety
/// FMI calling convention: `out` has room for `n` values.
pub(crate) unsafe fn get_vector(
    c: *mut c_void,
    version: FmiVersion,
    me_call: MeCall,
    out: *mut f64,
    n: usize,
) -> c_int {
    call(c, version, me_call, NO_ME, |inst| {
        let what = match (me_call, version) {
            (MeCall::GetDerivatives, _) => state_vector_name(version).1,
            (MeCall::GetEventIndicators, FmiVersion::Fmi2) => "eventIndicators[]",
            (MeCall::GetEventIndicators, FmiVersion::Fmi3) => "eventIndicators",
            (MeCall::GetNominals, FmiVersion::Fmi2) => "x_nominal[]",
            (MeCall::GetNominals, FmiVersion::Fmi3) => "nominals",
            _ => state_vector_name(version).0,
        };
        // SAFETY: FMI calling convention: `out` has room for `n` values.
        let out = unsafe { slice_mut(out, n, what)? };
        match me_call {
            MeCall::GetDerivatives => inst.get_derivatives(out),
            MeCall::GetEventIndicators => inst.get_event_indicators(out),
            MeCall::GetNominals => inst.get_nominals(out),
            _ => inst.get_continuous_states(out),
        }
    })
}

/// `fmi3GetNumberOfContinuousStates` / `fmi3GetNumberOfEventIndicators`.
///
/// # Safety
/// FMI calling convention: `n` points to one `size_t`.
pub(crate) unsafe fn get_number(c: *mut c_void, me_call: MeCall, n: *mut usize) -> c_int {
    call(c, FmiVersion::Fmi3, me_call, NO_ME, |inst| {
        let count = match me_call {
            MeCall::GetNumberOfEventIndicators => inst.number_of_event_indicators()?,
            _ => inst.number_of_continuous_states()?,
        };
        let what = match me_call {
            MeCall::GetNumberOfEventIndicators => "nEventIndicators",
            _ => "nContinuousStates",
        };
        // SAFETY: FMI calling convention: `n` points to one size_t.
        unsafe { write_out(n, count, what) }
    })
}
