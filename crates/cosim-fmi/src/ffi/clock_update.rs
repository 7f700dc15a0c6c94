//! Scheduled Execution's Clock Update Mode (FMI 3.0 sec. 5.2.2): inside
//! `fmi3ActivateModelPartition` the FMU calls `fmi3ClockUpdateCallback`
//! to say that an output Clock ticked or a countdown Clock has a new
//! interval; in that callback, on the same thread, the importer calls
//! `fmi3GetClock` on the output Clocks and `fmi3GetIntervalDecimal` on the
//! countdown Clocks (as the Reference FMUs' `scs_synchronous.c` does).
//!
//! The callback only gathers the answers; the importer takes them after
//! the activation returns ([`ClockUpdates`]) and schedules what they say.
#![allow(unsafe_code)]

use std::ffi::c_int;

use super::IntervalQualifier;
use super::Status;
use super::call_log::{CallLog, VrKind};
use super::common::{Component, Vr};

pub(super) type GetClockFn = unsafe extern "C" fn(Component, *const Vr, usize, *mut bool) -> c_int;
pub(super) type GetIntervalFn =
    unsafe extern "C" fn(Component, *const Vr, usize, *mut f64, *mut c_int) -> c_int;

/// What the Clock Update Mode callbacks of an instance found since the
/// importer last took them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClockUpdates {
    /// Calls of `fmi3ClockUpdateCallback`.
    pub callbacks: u64,
    /// The output Clocks `fmi3GetClock` reported active.
    pub output_clocks: Vec<u32>,
    /// The countdown Clocks whose interval the FMU changed or withdrew:
    /// (value reference, interval, qualifier), the last answer of each.
    pub countdowns: Vec<(u32, f64, IntervalQualifier)>,
}

impl ClockUpdates {
    /// Nothing was reported.
    pub fn is_empty(&self) -> bool {
        self.output_clocks.is_empty() && self.countdowns.is_empty()
    }

    fn clear(&mut self) {
        self.callbacks = 0;
        self.output_clocks.clear();
        self.countdowns.clear();
    }
}

/// The callback's state, in the instance's environment.
pub(super) struct ClockUpdateQueries {
    /// The instance, once instantiated (the callback calls back into it).
    pub(super) instance: Component,
    get_clock: Option<GetClockFn>,
    get_interval: Option<GetIntervalFn>,
    /// The output Clocks and the countdown Clocks to ask.
    outputs: Vec<Vr>,
    countdowns: Vec<Vr>,
    found: ClockUpdates,
    /// The first failure inside a callback.
    failure: Option<CallbackFailure>,
}

/// What went wrong inside a Clock Update Mode callback (reported when the
/// importer takes the updates, after `fmi3ActivateModelPartition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CallbackFailure {
    /// A call returned this status (Discard, Error or Fatal).
    Status(&'static str, c_int),
    /// `fmi3GetIntervalDecimal` gave a qualifier FMI 3.0 does not define.
    Qualifier(c_int),
}

impl ClockUpdateQueries {
    pub(super) fn new(get_clock: Option<GetClockFn>, get_interval: Option<GetIntervalFn>) -> Self {
        ClockUpdateQueries {
            instance: std::ptr::null_mut(),
            get_clock,
            get_interval,
            outputs: Vec::new(),
            countdowns: Vec::new(),
            found: ClockUpdates::default(),
            failure: None,
        }
    }

    /// The Clocks to ask in each callback.
    pub(super) fn watch(&mut self, outputs: &[u32], countdowns: &[u32]) {
        self.outputs = outputs.to_vec();
        self.countdowns = countdowns.to_vec();
    }

    /// Moves what the callbacks found into `into` (cleared first); the
    /// first failure inside one, if any.
    pub(super) fn take(&mut self, into: &mut ClockUpdates) -> Option<CallbackFailure> {
        into.clear();
        std::mem::swap(into, &mut self.found);
        self.failure.take()
    }

    /// One `fmi3ClockUpdateCallback`: asks the FMU (in Clock Update Mode)
    /// which output Clocks ticked and the countdown Clocks' intervals.
    pub(super) fn on_callback(&mut self, call_log: Option<&CallLog>) {
        self.found.callbacks += 1;
        if self.instance.is_null() {
            return;
        }
        self.ask_output_clocks(call_log);
        self.ask_countdowns(call_log);
    }

    fn ask_output_clocks(&mut self, call_log: Option<&CallLog>) {
        const F: &str = "fmi3GetClock";
        let (Some(f), false) = (self.get_clock, self.outputs.is_empty()) else {
            return;
        };
        // (fmi3Clock is C `bool`: read back as bytes, as fmi3GetBoolean.)
        let mut bytes = vec![0u8; self.outputs.len()];
        // SAFETY: the instance is live (we are inside its
        // fmi3ActivateModelPartition); both arrays have nvr elements and
        // u8 has bool's layout.
        let code = unsafe {
            f(
                self.instance,
                self.outputs.as_ptr(),
                self.outputs.len(),
                bytes.as_mut_ptr().cast(),
            )
        };
        let active: Vec<bool> = bytes.iter().map(|&b| b != 0).collect();
        if let Some(log) = call_log {
            log.line(Status::from_fmi3(code), F)
                .vrs("valueReferences", VrKind::Any, &self.outputs)
                .arg("nValueReferences", self.outputs.len())
                .values("values", &active)
                .end_with("in Clock Update Mode");
        }
        if !self.ok(F, code) {
            return;
        }
        for (&vr, _) in self.outputs.iter().zip(&active).filter(|(_, a)| **a) {
            if !self.found.output_clocks.contains(&vr) {
                self.found.output_clocks.push(vr);
            }
        }
    }

    fn ask_countdowns(&mut self, call_log: Option<&CallLog>) {
        const F: &str = "fmi3GetIntervalDecimal";
        let (Some(f), false) = (self.get_interval, self.countdowns.is_empty()) else {
            return;
        };
        let n = self.countdowns.len();
        let (mut intervals, mut qualifiers) = (vec![0.0; n], vec![0 as c_int; n]);
        // SAFETY: as in `ask_output_clocks`; every array has nvr elements.
        let code = unsafe {
            f(
                self.instance,
                self.countdowns.as_ptr(),
                n,
                intervals.as_mut_ptr(),
                qualifiers.as_mut_ptr(),
            )
        };
        if let Some(log) = call_log {
            log.line(Status::from_fmi3(code), F)
                .vrs("valueReferences", VrKind::Any, &self.countdowns)
                .arg("nValueReferences", n)
                .values("intervals", &intervals)
                .values("qualifiers", &qualifiers)
                .end_with("in Clock Update Mode");
        }
        if !self.ok(F, code) {
            return;
        }
        for ((&vr, &interval), &q) in self.countdowns.iter().zip(&intervals).zip(&qualifiers) {
            let q = match IntervalQualifier::from_c(q) {
                Some(IntervalQualifier::Unchanged) => continue,
                Some(q) => q,
                None => {
                    self.failure.get_or_insert(CallbackFailure::Qualifier(q));
                    return;
                }
            };
            self.found.countdowns.retain(|c| c.0 != vr);
            self.found.countdowns.push((vr, interval, q));
        }
    }

    /// Whether `code` is OK or Warning; else remembers the first failure.
    fn ok(&mut self, function: &'static str, code: c_int) -> bool {
        let status = Status::from_fmi3(code);
        if matches!(status, Status::Ok | Status::Warning) {
            return true;
        }
        self.failure
            .get_or_insert(CallbackFailure::Status(function, code));
        false
    }
}
