//! FMI 3.0 Intermediate Update Mode on the C side.
//!
//! # Re-entrancy
//!
//! Inside `fmi3DoStep` the kit holds the instance's mutex (`&mut Instance`
//! from its guard) while the model integrates. When the model evaluates an
//! input at an internal time, the kit calls the importer's
//! `fmi3IntermediateUpdateCallback`, and the importer calls
//! `fmi3SetFloat64` on the *same* instance, on the same thread, before the
//! callback returns. That call must not produce a second `&mut Instance`.
//! It does not:
//!
//! - every instance lives in an [`Entry`](super::Entry): the
//!   `Mutex<Instance>` and, beside it, an `Arc<`[`Cell`]`>` holding the
//!   callback and the *window*, a `Mutex<Option<Window>>` that is `Some`
//!   exactly while the kit is inside the callback (Intermediate Update Mode);
//! - every export first looks the entry up (a shared `Arc<Entry>`, never a
//!   reference into the instance) and checks the window *before* touching
//!   the instance mutex: `fmi3SetFloat64` with the window open writes its
//!   values into the window and returns; any other function is refused
//!   with `fmi3Error` and a log line naming the function and the mode;
//! - even without that check the instance mutex is held by `fmi3DoStep`, so
//!   `try_lock` would fail (`WouldBlock` -> `fmi3Error`): no path creates a
//!   second reference to the instance;
//! - the kit never holds the window lock while it calls the importer (its
//!   intermediate update callback or its logger): it locks to open the
//!   window, unlocks, calls the importer, then locks to take the values set
//!   and close the window. So the re-entrant `fmi3SetFloat64` can take the
//!   lock, and nothing deadlocks. An atomic flag mirrors "window open" so
//!   that calls outside Intermediate Update Mode do not take the lock.
//!
//! The values taken from the window go to the step's
//! [`Inputs`](crate::Inputs) (through [`InputSource`]), which the model
//! reads; the instance itself is updated by `fmi3DoStep` after the model's
//! step returns.
//!
//! The only `unsafe` here is the call of the importer's function pointers
//! and the reads of the importer's arrays, each with its SAFETY note.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::c_string;
use super::shared::check_n;
use super::slice;
use crate::input::InputSource;
use crate::instance::{Fail, Instance, R, Status};
use crate::model::{ModelSpec, Vr};

/// `fmi3IntermediateUpdateCallback` (FMI 3.0 final signature).
pub type IntermediateUpdate = unsafe extern "C" fn(
    env: *mut c_void,
    intermediate_update_time: f64,
    intermediate_variable_set_requested: bool,
    intermediate_variable_get_allowed: bool,
    intermediate_step_finished: bool,
    can_return_early: bool,
    early_return_requested: *mut bool,
    early_return_time: *mut f64,
);

/// `fmi3LogMessageCallback`.
pub type LogMessage = unsafe extern "C" fn(
    env: *mut c_void,
    status: c_int,
    category: *const c_char,
    message: *const c_char,
);

/// `fmi3ClockUpdateCallback`.
pub type ClockUpdate = unsafe extern "C" fn(env: *mut c_void);

/// What the importer gave `fmi3InstantiateCoSimulation` (or
/// `fmi3InstantiateScheduledExecution`) to be called back with: the
/// instance environment and the callbacks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Importer {
    /// `instanceEnvironment`, handed back unchanged.
    pub(crate) env: *mut c_void,
    /// `logMessage` (may be NULL).
    pub(crate) log: Option<LogMessage>,
    /// `intermediateUpdate` (may be NULL: then steps hold the inputs).
    pub(crate) intermediate: Option<IntermediateUpdate>,
    /// Scheduled Execution's `clockUpdate` (NULL for the other
    /// interfaces, and for models without output and countdown Clocks).
    pub(crate) clock_update: Option<ClockUpdate>,
}

// SAFETY: `Importer` only carries the importer's function pointers and its
// opaque environment pointer, which the kit never dereferences; it hands
// them back to the importer's own functions. FMI 3.0 lets the importer
// call an instance from any thread as long as calls on one instance are not
// concurrent; the kit calls back only from inside a call the importer made
// (fmi3DoStep, or a refused call while it is in its callback).
unsafe impl Send for Importer {}
// SAFETY: as for `Send`: shared access only reads the two pointers and the
// environment, all plain values; nothing in Rust is reached through them.
unsafe impl Sync for Importer {}

impl Importer {
    /// Logs through the importer's `logMessage`, if it gave one.
    pub(crate) fn log(&self, status: Status, category: &str, message: &str) {
        let Some(log) = self.log else { return };
        let category = c_string(category);
        let message = c_string(message);
        // SAFETY: `log` is the importer's fmi3LogMessageCallback (non-NULL,
        // checked by the Option); the strings are NUL-terminated and live
        // for the call; `env` is its own instanceEnvironment.
        unsafe {
            log(
                self.env,
                status as c_int,
                category.as_ptr(),
                message.as_ptr(),
            )
        }
    }
}

/// The open window: the instance is in Intermediate Update Mode.
#[derive(Debug)]
struct Window {
    /// `intermediateUpdateTime` of the callback in progress.
    time: f64,
    spec: &'static ModelSpec,
    /// Whether the instance's logging settings let errors through.
    log_errors: bool,
    /// Values set by `fmi3SetFloat64` in this callback, in order.
    set: Vec<(Vr, f64)>,
}

/// The part of an instance reachable while `fmi3DoStep` holds the
/// instance: the importer's callbacks and the Intermediate Update Mode
/// window (see the module docs).
#[derive(Debug)]
pub(crate) struct Cell {
    importer: Option<Importer>,
    /// True while `window` is `Some` (set after opening, cleared before
    /// closing): the fast path of every call outside Intermediate Update Mode.
    open: AtomicBool,
    window: Mutex<Option<Window>>,
}

/// The message of a call refused in Intermediate Update Mode.
pub const REFUSED: &str = "Illegal call sequence: called in Intermediate Update Mode (only fmi3SetFloat64 on inputs with intermediateUpdate=\"true\" is allowed there)";

impl Cell {
    /// A cell; `importer` is `None` for FMI 2 instances.
    pub(crate) fn new(importer: Option<Importer>) -> Self {
        Cell {
            importer,
            open: AtomicBool::new(false),
            window: Mutex::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Window>> {
        self.window.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Logs an error through the importer. Never called with the window
    /// lock held (the importer's logger may call back into the FMU).
    fn log_error(&self, log_errors: bool, message: &str) {
        if log_errors && let Some(importer) = &self.importer {
            importer.log(Status::Error, Status::Error.category(), message);
        }
    }

    /// If the instance is in Intermediate Update Mode, logs that `fname` is
    /// illegal there and returns true (the caller returns `Error`).
    #[inline]
    pub(crate) fn refuse(&self, fname: &str) -> bool {
        if !self.open.load(Ordering::Acquire) {
            return false;
        }
        self.refuse_in_window(fname)
    }

    /// [`Cell::refuse`] while the window may be open.
    #[cold]
    #[inline(never)]
    fn refuse_in_window(&self, fname: &str) -> bool {
        let Some((time, log_errors)) = self.lock().as_ref().map(|w| (w.time, w.log_errors)) else {
            return false;
        };
        self.log_error(
            log_errors,
            &format!("{fname}: {REFUSED} (intermediateUpdateTime {time})"),
        );
        true
    }

    /// `fmi3SetFloat64` while the window is open: records the values
    /// (all-or-nothing) and returns `Some(status)`; `None` when the instance
    /// is not in Intermediate Update Mode (the normal path applies).
    ///
    /// # Safety
    /// FMI calling convention: `vr` and `v` are NULL or point to `nvr`
    /// (= `n`) elements valid for the call.
    pub(crate) unsafe fn set_float64(
        &self,
        vr: *const u32,
        nvr: usize,
        v: *const f64,
        n: usize,
    ) -> Option<Status> {
        if !self.open.load(Ordering::Acquire) {
            return None;
        }
        let mut guard = self.lock();
        let window = guard.as_mut()?;
        let (time, log_errors) = (window.time, window.log_errors);
        let result = (|| -> R<()> {
            // SAFETY: the caller's contract (FMI calling convention); the
            // helper checks NULL and alignment first.
            let vrs = unsafe { slice(vr, nvr, "valueReferences")? };
            // Every variable first: an array (never updatable) is refused
            // as such, not for its number of values.
            for &r in vrs {
                let var = window
                    .spec
                    .variable(r)
                    .ok_or_else(|| Fail::usage(format!("unknown value reference {r}")))?;
                if !var.is_continuous_real_input() {
                    return Err(Fail::sequence(format!(
                        "variable {} (vr {r}) has no intermediateUpdate=\"true\" and cannot be set in Intermediate Update Mode",
                        var.name
                    )));
                }
            }
            check_n(nvr, n)?;
            // SAFETY: as above.
            let vals = unsafe { slice(v, n, "values")? };
            window
                .set
                .extend(vrs.iter().copied().zip(vals.iter().copied()));
            Ok(())
        })();
        drop(guard);
        Some(match result {
            Ok(()) => Status::Ok,
            Err(f) => {
                self.log_error(
                    log_errors,
                    &format!(
                        "fmi3SetFloat64: {} (Intermediate Update Mode, intermediateUpdateTime {time})",
                        f.message
                    ),
                );
                f.status
            }
        })
    }

    /// The importer's `clockUpdate` and its `instanceEnvironment`, if it
    /// gave one (Scheduled Execution).
    pub(crate) fn clock_update(&self) -> Option<(ClockUpdate, *mut c_void)> {
        let importer = self.importer?;
        Some((importer.clock_update?, importer.env))
    }

    fn open(&self, time: f64, spec: &'static ModelSpec, log_errors: bool) {
        *self.lock() = Some(Window {
            time,
            spec,
            log_errors,
            set: Vec::new(),
        });
        self.open.store(true, Ordering::Release);
    }

    fn close(&self) -> Vec<(Vr, f64)> {
        self.open.store(false, Ordering::Release);
        self.lock().take().map(|w| w.set).unwrap_or_default()
    }

    /// The source of a step's inputs at internal times, if the importer
    /// gave a callback and the build and model use it.
    pub(crate) fn source(self: &Arc<Self>, inst: &Instance) -> Option<Box<dyn InputSource>> {
        let callback = self.importer?.intermediate?;
        if !inst.takes_intermediate_inputs() {
            return None;
        }
        Some(Box::new(Sampler {
            cell: Arc::clone(self),
            callback,
            spec: inst.spec,
            log_errors: inst.log_enabled(Status::Error),
        }))
    }
}

/// Calls the importer's intermediate update callback for one step.
struct Sampler {
    cell: Arc<Cell>,
    callback: IntermediateUpdate,
    spec: &'static ModelSpec,
    log_errors: bool,
}

impl InputSource for Sampler {
    fn request(&self, s: f64, set: &mut dyn FnMut(Vr, f64)) {
        let env = self.cell.importer.map_or(std::ptr::null_mut(), |i| i.env);
        self.cell.open(s, self.spec, self.log_errors);
        let mut early_return_requested = false;
        let mut early_return_time = s;
        // SAFETY: `callback` is the importer's non-NULL
        // fmi3IntermediateUpdateCallback from fmi3InstantiateCoSimulation,
        // called with its own instanceEnvironment and two out-pointers to
        // locals that are valid for the call (canReturnEarly = false, so it
        // should not write them; if it does, the writes land in the locals).
        // The importer may call back into this instance before returning:
        // those calls reach only `self.cell` (the window mutex, not held
        // here), never the instance, which `fmi3DoStep` holds (module docs).
        unsafe {
            (self.callback)(
                env,
                s,
                true,
                false,
                false,
                false,
                &mut early_return_requested,
                &mut early_return_time,
            );
        }
        for (vr, x) in self.cell.close() {
            set(vr, x);
        }
    }
}
