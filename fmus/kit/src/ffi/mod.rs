//! The C side: pointer checks, the instance table, panic containment, and
//! the [`export_fmi!`](crate::export_fmi) macro that emits every FMI 2.0 and
//! FMI 3.0 function with its exact C name.
//!
//! Instances and FMU states are never dereferenced from the pointers the
//! importer hands back: an `fmi2Component` / `fmi3Instance` is a key into a
//! table of live instances, and an `fmi2FMUstate` / `fmi3FMUState` is a key
//! into its instance's table of saved states. A stale, foreign or NULL
//! handle is found missing and answered with `Error`, never with UB. The
//! only raw memory read or written is the importer's arrays and strings, of
//! the lengths it passes, after NULL and alignment checks.
//!
//! Each table entry is an [`Entry`]: the instance behind its mutex and,
//! beside it, the [`intermediate::Cell`] that FMI 3.0 Intermediate Update
//! Mode writes into while `fmi3DoStep` holds the instance (see
//! [`intermediate`] for why that is sound).
//!
//! A call takes its instance's lock while it holds the table's lock and
//! keeps no reference count ([`with_free_instance`]); so an entry leaves
//! the table only under that lock and is dropped only through [`retire`],
//! which keeps it while a call holds its instance.
#![allow(unsafe_code)]

#[cfg(test)]
mod aperiodic_tests;
#[cfg(test)]
mod arrays_tests;
#[cfg(test)]
mod clock_tests;
#[cfg(test)]
mod config_tests;
#[cfg(test)]
mod cs_event_tests;
pub mod fmi2;
pub mod fmi3;
pub mod intermediate;
#[cfg(test)]
mod intermediate_tests;
#[cfg(test)]
mod me_tests;
mod model_exchange;
#[cfg(test)]
mod quirk_tests;
mod shared;
#[cfg(test)]
mod strict_tests;
#[cfg(test)]
mod strings_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod types_tests;

use std::collections::BTreeMap;
use std::ffi::{CStr, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, TryLockError};

use crate::caps::Quirk;
use crate::instance::{Fail, Instance, R, Status};

/// One live instance: the instance itself, and the part that stays
/// reachable through a shared reference while a call holds the instance.
pub(crate) struct Entry {
    instance: Mutex<Instance>,
    /// The importer's callbacks and the Intermediate Update Mode window.
    pub(crate) cell: Arc<intermediate::Cell>,
    /// The quirk of the instance's build (read when it is freed).
    quirk: Option<Quirk>,
}

type Handle = Arc<Entry>;

static INSTANCES: Mutex<BTreeMap<usize, Handle>> = Mutex::new(BTreeMap::new());

fn table() -> std::sync::MutexGuard<'static, BTreeMap<usize, Handle>> {
    INSTANCES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers a new instance; the returned pointer is its key. `importer`:
/// the FMI 3 callbacks (`None` for FMI 2).
pub(crate) fn register(inst: Instance, importer: Option<intermediate::Importer>) -> *mut c_void {
    let quirk = inst.caps.quirk;
    let handle: Handle = Arc::new(Entry {
        instance: Mutex::new(inst),
        cell: Arc::new(intermediate::Cell::new(importer)),
        quirk,
    });
    let key = Arc::as_ptr(&handle) as usize;
    table().insert(key, handle);
    drop_retired();
    key as *mut c_void
}

/// Removes an instance from the table. Drop what it returns through
/// [`retire`] (a call may hold the instance without holding an `Arc`).
pub(crate) fn unregister(ptr: *mut c_void) -> Option<Handle> {
    table().remove(&(ptr as usize))
}

/// Entries unregistered while a call still held their instance (freed
/// during a call of theirs, from its callback or from another thread: an
/// importer's error), dropped once it is over.
static RETIRED: Mutex<Vec<Handle>> = Mutex::new(Vec::new());

/// Drops an unregistered entry, or keeps it in [`RETIRED`] while a call
/// holds its instance (see [`with_instance_cell`]: such a call holds no
/// `Arc`).
pub(crate) fn retire(handle: Handle) {
    RETIRED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(handle);
    drop_retired();
}

/// Whether the entry of `ptr` waits in [`RETIRED`].
#[cfg(test)]
pub(crate) fn is_retired(ptr: *mut c_void) -> bool {
    RETIRED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|h| std::ptr::eq(Arc::as_ptr(h).cast::<c_void>(), ptr))
}

/// Drops the entries of [`RETIRED`] whose instance no call holds any more.
fn drop_retired() {
    // Not held now, and no call can take it any more (it is not in the
    // table, and calls take the instance while they hold the table).
    let idle = |h: &Handle| !matches!(h.instance.try_lock(), Err(TryLockError::WouldBlock));
    let mut retired = RETIRED.lock().unwrap_or_else(|e| e.into_inner());
    if retired.is_empty() {
        return;
    }
    let done: Vec<Handle>;
    (done, *retired) = std::mem::take(&mut *retired).into_iter().partition(idle);
    drop(retired);
    // (Dropped outside the lock: an instance's destructor runs the model's.)
    drop(done);
}

/// `fmi2FreeInstance` / `fmi3FreeInstance`: unregisters the instance,
/// unless it is in Intermediate Update Mode or Clock Update Mode (inside an
/// importer's callback: then the call is refused with a log line and the
/// instance stays). Freeing an instance of a [`Quirk::CrashesAtExit`]
/// build arms [`crash_at_exit`].
pub(crate) fn free(ptr: *mut c_void, fname: &str) {
    if let Some(handle) = lookup(ptr)
        && (handle.cell.refuse(fname) || refused_in_clock_update(&handle, fname))
    {
        return;
    }
    if let Some(handle) = unregister(ptr) {
        if handle.quirk == Some(Quirk::CrashesAtExit) {
            arm_crash_at_exit();
        }
        retire(handle);
    }
}

/// If the instance is in Clock Update Mode (inside the importer's
/// `clockUpdate`, which `fmi3ActivateModelPartition` calls), logs that
/// `fname` is illegal there and returns true.
fn refused_in_clock_update(entry: &Entry, fname: &str) -> bool {
    let mut inst = match entry.instance.try_lock() {
        Ok(g) => g,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => return false,
    };
    if inst.mode() != crate::instance::Mode::ClockUpdate {
        return false;
    }
    inst.fail(
        fname,
        Fail::sequence(
            "called in state Clock Update Mode (inside the importer's clockUpdate callback, where only \
             fmi3GetClock and fmi3GetIntervalDecimal are allowed)",
        ),
    );
    true
}

/// [`Quirk::CrashesAtExit`]: registers (once per process) a libc `atexit`
/// handler that kills the process with SIGSEGV when it exits normally (as a
/// PythonFMU-built FMU does in Python's finalisation), and pins this
/// library in memory (`RTLD_NODELETE`), so that neither an importer's
/// `dlclose` runs the handler early nor the handler is unmapped before the
/// exit. A process that ends with `_exit` (or by a signal) never runs it.
pub(crate) fn arm_crash_at_exit() {
    static ARMED: std::sync::Once = std::sync::Once::new();
    ARMED.call_once(|| {
        pin_library();
        // SAFETY: `crash_at_exit` is a plain `extern "C" fn()` of this
        // library, which stays mapped until the process ends (pinned above);
        // atexit has no other preconditions.
        unsafe {
            libc::atexit(crash_at_exit);
        }
    });
}

/// Keeps the shared library that contains this code loaded until the
/// process ends.
fn pin_library() {
    // SAFETY: an all-zero Dl_info is a valid value (NULL pointers).
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let addr = crash_at_exit as *const c_void;
    // SAFETY: dladdr only reads the loader's tables for a code address of
    // this library and writes `info`.
    let found = unsafe { libc::dladdr(addr, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return;
    }
    // SAFETY: `dli_fname` is the loader's NUL-terminated path of an object
    // that is loaded (RTLD_NOLOAD: never loads anything); the handle is
    // deliberately kept (with RTLD_NODELETE the object is never unloaded).
    unsafe {
        libc::dlopen(
            info.dli_fname,
            libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
        );
    }
}

/// The exit handler of [`Quirk::CrashesAtExit`]: SIGSEGV with its default
/// action (a host's handler, e.g. Rust's stack-overflow handler, which
/// would let a raised signal pass, is set aside), so the process dies of
/// it as of a real invalid access.
extern "C" fn crash_at_exit() {
    // SAFETY: signal() and raise() have no memory-safety preconditions.
    unsafe {
        libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        libc::raise(libc::SIGSEGV);
    }
}

pub(crate) fn lookup(ptr: *mut c_void) -> Option<Handle> {
    if ptr.is_null() {
        return None;
    }
    table().get(&(ptr as usize)).cloned()
}

/// Runs `f` and turns a panic into `default`.
pub(crate) fn guard<T>(default: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(default)
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// Looks the instance up, checks the state mask, runs `f`, logs failures.
/// A panic inside `f` puts the instance into the `Error` state.
pub(crate) fn with_instance(
    ptr: *mut c_void,
    fname: &str,
    mask: u32,
    f: impl FnOnce(&mut Instance) -> R<Status>,
) -> Status {
    with_instance_cell(ptr, fname, mask, |inst, _| f(inst))
}

/// [`with_instance`], with the instance's [`intermediate::Cell`] too. A
/// call made while the instance is in Intermediate Update Mode (from inside
/// the importer's callback) is refused here, before the instance is touched.
pub(crate) fn with_instance_cell(
    ptr: *mut c_void,
    fname: &str,
    mask: u32,
    f: impl FnOnce(&mut Instance, &Arc<intermediate::Cell>) -> R<Status>,
) -> Status {
    match with_free_instance(ptr, fname, mask, f) {
        Ok(status) => status,
        // Held: by this thread (a call from inside the importer's
        // callback, which `with_handle` refuses, saying why) or by another
        // one. The slow way, with a reference.
        Err(f) => match lookup(ptr) {
            Some(handle) => with_handle(&handle, fname, mask, f),
            None => Status::Error,
        },
    }
}

/// [`with_instance_cell`] when no call holds the instance: `Err(f)` when
/// one does (then nothing was done).
pub(crate) fn with_free_instance<F>(
    ptr: *mut c_void,
    fname: &str,
    mask: u32,
    f: F,
) -> Result<Status, F>
where
    F: FnOnce(&mut Instance, &Arc<intermediate::Cell>) -> R<Status>,
{
    let table = table();
    let Some(handle) = table.get(&(ptr as usize)) else {
        // No instance, so no logger to tell: the status must do.
        return Ok(Status::Error);
    };
    // SAFETY: the entry outlives the table's lock while this call holds
    // its instance, taken below under the table's lock: an entry leaves the
    // table only under that lock and is dropped only through `retire`,
    // which keeps it while its instance is held. So no reference count is
    // taken (two atomic operations per call), and nothing of the entry is
    // used after the instance's guard is dropped.
    let entry: &Entry = unsafe { &*Arc::as_ptr(handle) };
    let lock = match entry.instance.try_lock() {
        Ok(g) => g,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => return Err(f),
    };
    drop(table);
    // (Holding the instance, the instance is not in Intermediate Update
    // Mode: only `fmi3DoStep`, which holds it, opens that window.)
    Ok(with_locked(entry, lock, fname, mask, f))
}

/// [`with_instance_cell`] for an entry already looked up.
pub(crate) fn with_handle(
    handle: &Entry,
    fname: &str,
    mask: u32,
    f: impl FnOnce(&mut Instance, &Arc<intermediate::Cell>) -> R<Status>,
) -> Status {
    if handle.cell.refuse(fname) {
        return Status::Error;
    }
    let lock = match handle.instance.try_lock() {
        Ok(g) => g,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => return Status::Error,
    };
    with_locked(handle, lock, fname, mask, f)
}

/// [`with_handle`] once the instance is taken.
fn with_locked(
    handle: &Entry,
    mut lock: std::sync::MutexGuard<'_, Instance>,
    fname: &str,
    mask: u32,
    f: impl FnOnce(&mut Instance, &Arc<intermediate::Cell>) -> R<Status>,
) -> Status {
    let inst: &mut Instance = &mut lock;
    if let Err(e) = inst.require_mode(fname, mask) {
        return inst.fail(fname, e);
    }
    let cell = &handle.cell;
    match catch_unwind(AssertUnwindSafe(|| f(inst, cell))) {
        Ok(Ok(status)) => status,
        Ok(Err(fail)) => inst.fail(fname, fail),
        Err(payload) => {
            let msg = panic_message(payload.as_ref());
            inst.fail(
                fname,
                Fail::failure(format!("internal error (panic): {msg}")),
            )
        }
    }
}

/// Borrows an importer array of `n` elements.
///
/// # Safety
/// If `p` is non-NULL it must point to `n` initialized elements that stay
/// valid and unaliased by writes for the call.
#[inline]
pub(crate) unsafe fn slice<'a, T>(p: *const T, n: usize, what: &str) -> R<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    check_ptr(p, n, what)?;
    // SAFETY: non-NULL, aligned, size fits isize (checked above); validity
    // of the n elements is the caller's contract (the FMI calling convention).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Borrows an importer output array of `n` elements.
///
/// # Safety
/// If `p` is non-NULL it must point to `n` writable elements, not aliased
/// for the duration of the call.
pub(crate) unsafe fn slice_mut<'a, T>(p: *mut T, n: usize, what: &str) -> R<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    check_ptr(p.cast_const(), n, what)?;
    // SAFETY: as in `slice`, and the importer hands the array over for writing.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

#[inline]
fn check_ptr<T>(p: *const T, n: usize, what: &str) -> R<()> {
    let fits = n
        .checked_mul(std::mem::size_of::<T>())
        .is_some_and(|b| b <= isize::MAX as usize);
    if !p.is_null() && p.is_aligned() && fits {
        return Ok(());
    }
    Err(bad_pointer(p.is_null(), p.is_aligned(), n, what))
}

/// The error of [`check_ptr`] (out of the calls' way).
#[cold]
#[inline(never)]
fn bad_pointer(null: bool, aligned: bool, n: usize, what: &str) -> Fail {
    if null {
        Fail::usage(format!("{what} is NULL (length {n})"))
    } else if !aligned {
        Fail::usage(format!("{what} is not aligned for its element type"))
    } else {
        Fail::usage(format!("{what}: length {n} is too large"))
    }
}

/// Reads an importer string.
///
/// # Safety
/// If `p` is non-NULL it must point to a NUL-terminated string valid for the call.
pub(crate) unsafe fn cstr<'a>(p: *const c_char, what: &str) -> R<&'a str> {
    if p.is_null() {
        return Err(Fail::usage(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str()
        .map_err(|_| Fail::usage(format!("{what} is not valid UTF-8")))
}

/// Reads an importer array of strings (`fmi2String` / `fmi3String`
/// values): NULL or invalid UTF-8 in any of them is refused, naming it
/// (`value[1] is NULL`).
///
/// # Safety
/// Each non-NULL pointer must point to a NUL-terminated string valid for
/// the call.
pub(crate) unsafe fn cstrs<'a>(ptrs: &[*const c_char], what: &str) -> R<Vec<&'a str>> {
    ptrs.iter()
        .enumerate()
        // SAFETY: the caller's contract, element by element.
        .map(|(i, &p)| unsafe { cstr(p, &format!("{what}[{i}]")) })
        .collect()
}

/// The FMU's `resources` directory from the location the importer passed
/// to instantiation: FMI 2 a URI (`file:///dir/resources` or
/// `file:/dir/resources`, percent-encoded, an optional `localhost`), FMI 3
/// an absolute path. `None` for NULL, an empty string or another scheme.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string (FMI calling convention).
pub(crate) unsafe fn resource_dir(
    version: crate::caps::FmiVersion,
    p: *const c_char,
) -> Option<std::path::PathBuf> {
    // SAFETY: as the caller guarantees.
    let text = unsafe { cstr(p, "resource location") }.ok()?;
    resource_path(version, text)
}

/// [`resource_dir`] of a location read.
pub fn resource_path(version: crate::caps::FmiVersion, text: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    if text.is_empty() {
        return None;
    }
    if version == crate::caps::FmiVersion::Fmi3 {
        return Some(text.into());
    }
    let rest = text
        .strip_prefix("file://localhost/")
        .map(|r| format!("/{r}"))
        .or_else(|| text.strip_prefix("file:///").map(|r| format!("/{r}")))
        .or_else(|| text.strip_prefix("file:/").map(|r| format!("/{r}")))?;
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(std::ffi::OsString::from_vec(out).into())
}

/// A C string of `s` (a NUL inside becomes a space).
pub(crate) fn c_string(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// Checks the `instanceName` argument of instantiation: not NULL, valid
/// UTF-8, and with at least one character that is not white space (FMI 2.0
/// sec. 2.1.5, FMI 3.0 sec. 2.3.1).
pub(crate) fn check_instance_name(name: R<&str>) -> Result<(), String> {
    match name {
        Err(e) => Err(e.message),
        Ok(n) if n.trim().is_empty() => Err(format!(
            "instanceName \"{n}\" must be a non-empty string (at least one character that is not white space)"
        )),
        Ok(_) => Ok(()),
    }
}

/// Writes one value through an importer out-pointer.
///
/// # Safety
/// If `p` is non-NULL it must be valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(p: *mut T, value: T, what: &str) -> R<()> {
    // SAFETY: the caller's contract covers one writable element.
    let s = unsafe { slice_mut(p, 1, what)? };
    s[0] = value;
    Ok(())
}

/// Raises SIGSEGV in the calling process (the `Faulty` model's crash mode).
/// It is a real signal, not undefined behaviour: the process dies exactly as
/// it would from an invalid memory access unless a handler is installed.
pub fn raise_segfault() {
    // SAFETY: signal() and raise() have no memory-safety preconditions.
    // The default action first: a handler the host installed for real
    // faults (Rust's, for stack overflows) would return from a raised
    // signal, and the process would go on.
    unsafe {
        libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        libc::raise(libc::SIGSEGV);
    }
}

/// Emits every FMI 2.0 and FMI 3.0 function with its standard C name, for a
/// registry of models. Invoke it exactly once, in the crate that is built as
/// the `cdylib`, inside a module marked `#![allow(unsafe_code)]`:
///
/// ```text
/// fmu_kit::export_fmi!(crate::registry::all());
/// ```
///
/// `$registry` must evaluate to a [`ModelSource`](crate::ModelSource):
/// `&'static [fmu_kit::ModelSpec]`, or a [`Resolver`](crate::Resolver).
#[macro_export]
macro_rules! export_fmi {
    ($registry:expr) => {
        $crate::__export_instantiate! {
            $registry;
            fn fmi2Instantiate(name: *const ::std::ffi::c_char, ty: i32, guid: *const ::std::ffi::c_char, res: *const ::std::ffi::c_char, functions: *const $crate::ffi::fmi2::CallbackFunctions, visible: i32, logging_on: i32) -> *mut ::std::ffi::c_void = fmi2::instantiate;
            fn fmi3InstantiateCoSimulation(name: *const ::std::ffi::c_char, token: *const ::std::ffi::c_char, res: *const ::std::ffi::c_char, visible: bool, logging_on: bool, event_mode_used: bool, early_return_allowed: bool, required: *const u32, n_required: usize, env: *mut ::std::ffi::c_void, log: ::std::option::Option<$crate::ffi::fmi3::LogMessage>, intermediate: ::std::option::Option<$crate::ffi::intermediate::IntermediateUpdate>) -> *mut ::std::ffi::c_void = fmi3::instantiate_co_simulation;
            fn fmi3InstantiateModelExchange(name: *const ::std::ffi::c_char, token: *const ::std::ffi::c_char, res: *const ::std::ffi::c_char, visible: bool, logging_on: bool, env: *mut ::std::ffi::c_void, log: ::std::option::Option<$crate::ffi::fmi3::LogMessage>) -> *mut ::std::ffi::c_void = fmi3::instantiate_model_exchange;
            fn fmi3InstantiateScheduledExecution(name: *const ::std::ffi::c_char, token: *const ::std::ffi::c_char, res: *const ::std::ffi::c_char, visible: bool, logging_on: bool, env: *mut ::std::ffi::c_void, log: ::std::option::Option<$crate::ffi::fmi3::LogMessage>, clock_update: *mut ::std::ffi::c_void, lock: *mut ::std::ffi::c_void, unlock: *mut ::std::ffi::c_void) -> *mut ::std::ffi::c_void = fmi3::instantiate_scheduled_execution;
        }
        $crate::__export_fns! {
            // ---------------------------------------------------------- FMI 2
            fn fmi2GetTypesPlatform() -> *const ::std::ffi::c_char = fmi2::get_types_platform;
            fn fmi2GetVersion() -> *const ::std::ffi::c_char = fmi2::get_version;
            fn fmi2SetDebugLogging(c: *mut ::std::ffi::c_void, on: i32, n: usize, cats: *const *const ::std::ffi::c_char) -> i32 = fmi2::set_debug_logging;
            fn fmi2FreeInstance(c: *mut ::std::ffi::c_void) -> () = fmi2::free_instance;
            fn fmi2SetupExperiment(c: *mut ::std::ffi::c_void, tol_defined: i32, tol: f64, start: f64, stop_defined: i32, stop: f64) -> i32 = fmi2::setup_experiment;
            fn fmi2EnterInitializationMode(c: *mut ::std::ffi::c_void) -> i32 = fmi2::enter_initialization_mode;
            fn fmi2ExitInitializationMode(c: *mut ::std::ffi::c_void) -> i32 = fmi2::exit_initialization_mode;
            fn fmi2Terminate(c: *mut ::std::ffi::c_void) -> i32 = fmi2::terminate;
            fn fmi2Reset(c: *mut ::std::ffi::c_void) -> i32 = fmi2::reset;
            fn fmi2GetReal(c: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut f64) -> i32 = fmi2::get_real;
            fn fmi2GetInteger(c: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut i32) -> i32 = fmi2::get_integer;
            fn fmi2GetBoolean(c: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut i32) -> i32 = fmi2::get_boolean;
            fn fmi2GetString(c: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut *const ::std::ffi::c_char) -> i32 = fmi2::get_string;
            fn fmi2SetReal(c: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const f64) -> i32 = fmi2::set_real;
            fn fmi2SetInteger(c: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const i32) -> i32 = fmi2::set_integer;
            fn fmi2SetBoolean(c: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const i32) -> i32 = fmi2::set_boolean;
            fn fmi2SetString(c: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const *const ::std::ffi::c_char) -> i32 = fmi2::set_string;
            fn fmi2GetFMUstate(c: *mut ::std::ffi::c_void, s: *mut *mut ::std::ffi::c_void) -> i32 = fmi2::get_fmu_state;
            fn fmi2SetFMUstate(c: *mut ::std::ffi::c_void, s: *mut ::std::ffi::c_void) -> i32 = fmi2::set_fmu_state;
            fn fmi2FreeFMUstate(c: *mut ::std::ffi::c_void, s: *mut *mut ::std::ffi::c_void) -> i32 = fmi2::free_fmu_state;
            fn fmi2SerializedFMUstateSize(c: *mut ::std::ffi::c_void, s: *mut ::std::ffi::c_void, size: *mut usize) -> i32 = fmi2::serialized_fmu_state_size;
            fn fmi2SerializeFMUstate(c: *mut ::std::ffi::c_void, s: *mut ::std::ffi::c_void, bytes: *mut ::std::ffi::c_char, size: usize) -> i32 = fmi2::serialize_fmu_state;
            fn fmi2DeSerializeFMUstate(c: *mut ::std::ffi::c_void, bytes: *const ::std::ffi::c_char, size: usize, s: *mut *mut ::std::ffi::c_void) -> i32 = fmi2::deserialize_fmu_state;
            fn fmi2GetDirectionalDerivative(c: *mut ::std::ffi::c_void, unknowns: *const u32, n_unknowns: usize, knowns: *const u32, n_knowns: usize, dv_known: *const f64, dv_unknown: *mut f64) -> i32 = fmi2::get_directional_derivative;
            fn fmi2SetRealInputDerivatives(c: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, order: *const i32, v: *const f64) -> i32 = fmi2::set_real_input_derivatives;
            fn fmi2GetRealOutputDerivatives(c: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, order: *const i32, v: *mut f64) -> i32 = fmi2::get_real_output_derivatives;
            fn fmi2DoStep(c: *mut ::std::ffi::c_void, t: f64, h: f64, no_set_prior: i32) -> i32 = fmi2::do_step;
            fn fmi2CancelStep(c: *mut ::std::ffi::c_void) -> i32 = fmi2::cancel_step;
            fn fmi2GetStatus(c: *mut ::std::ffi::c_void, kind: i32, v: *mut i32) -> i32 = fmi2::get_status;
            fn fmi2GetRealStatus(c: *mut ::std::ffi::c_void, kind: i32, v: *mut f64) -> i32 = fmi2::get_real_status;
            fn fmi2GetIntegerStatus(c: *mut ::std::ffi::c_void, kind: i32, v: *mut i32) -> i32 = fmi2::get_integer_status;
            fn fmi2GetBooleanStatus(c: *mut ::std::ffi::c_void, kind: i32, v: *mut i32) -> i32 = fmi2::get_boolean_status;
            fn fmi2GetStringStatus(c: *mut ::std::ffi::c_void, kind: i32, v: *mut *const ::std::ffi::c_char) -> i32 = fmi2::get_string_status;
            // Model Exchange (refused by co-simulation instances).
            fn fmi2EnterEventMode(c: *mut ::std::ffi::c_void) -> i32 = fmi2::enter_event_mode;
            fn fmi2NewDiscreteStates(c: *mut ::std::ffi::c_void, info: *mut $crate::ffi::fmi2::EventInfo) -> i32 = fmi2::new_discrete_states;
            fn fmi2EnterContinuousTimeMode(c: *mut ::std::ffi::c_void) -> i32 = fmi2::enter_continuous_time_mode;
            fn fmi2CompletedIntegratorStep(c: *mut ::std::ffi::c_void, no_set_prior: i32, enter_event: *mut i32, terminate: *mut i32) -> i32 = fmi2::completed_integrator_step;
            fn fmi2SetTime(c: *mut ::std::ffi::c_void, t: f64) -> i32 = fmi2::set_time;
            fn fmi2SetContinuousStates(c: *mut ::std::ffi::c_void, x: *const f64, n: usize) -> i32 = fmi2::set_continuous_states;
            fn fmi2GetDerivatives(c: *mut ::std::ffi::c_void, x: *mut f64, n: usize) -> i32 = fmi2::get_derivatives;
            fn fmi2GetEventIndicators(c: *mut ::std::ffi::c_void, x: *mut f64, n: usize) -> i32 = fmi2::get_event_indicators;
            fn fmi2GetContinuousStates(c: *mut ::std::ffi::c_void, x: *mut f64, n: usize) -> i32 = fmi2::get_continuous_states;
            fn fmi2GetNominalsOfContinuousStates(c: *mut ::std::ffi::c_void, x: *mut f64, n: usize) -> i32 = fmi2::get_nominals_of_continuous_states;
            // ---------------------------------------------------------- FMI 3
            fn fmi3GetVersion() -> *const ::std::ffi::c_char = fmi3::get_version;
            fn fmi3SetDebugLogging(i: *mut ::std::ffi::c_void, on: bool, n: usize, cats: *const *const ::std::ffi::c_char) -> i32 = fmi3::set_debug_logging;
            fn fmi3FreeInstance(i: *mut ::std::ffi::c_void) -> () = fmi3::free_instance;
            fn fmi3EnterInitializationMode(i: *mut ::std::ffi::c_void, tol_defined: bool, tol: f64, start: f64, stop_defined: bool, stop: f64) -> i32 = fmi3::enter_initialization_mode;
            fn fmi3ExitInitializationMode(i: *mut ::std::ffi::c_void) -> i32 = fmi3::exit_initialization_mode;
            fn fmi3EnterEventMode(i: *mut ::std::ffi::c_void) -> i32 = fmi3::enter_event_mode;
            fn fmi3Terminate(i: *mut ::std::ffi::c_void) -> i32 = fmi3::terminate;
            fn fmi3Reset(i: *mut ::std::ffi::c_void) -> i32 = fmi3::reset;
            fn fmi3GetFloat32(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut f32, n: usize) -> i32 = fmi3::get_float32;
            fn fmi3GetFloat64(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut f64, n: usize) -> i32 = fmi3::get_float64;
            fn fmi3GetInt8(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut i8, n: usize) -> i32 = fmi3::get_int8;
            fn fmi3GetUInt8(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut u8, n: usize) -> i32 = fmi3::get_uint8;
            fn fmi3GetInt16(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut i16, n: usize) -> i32 = fmi3::get_int16;
            fn fmi3GetUInt16(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut u16, n: usize) -> i32 = fmi3::get_uint16;
            fn fmi3GetInt32(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut i32, n: usize) -> i32 = fmi3::get_int32;
            fn fmi3GetUInt32(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut u32, n: usize) -> i32 = fmi3::get_uint32;
            fn fmi3GetInt64(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut i64, n: usize) -> i32 = fmi3::get_int64;
            fn fmi3GetUInt64(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut u64, n: usize) -> i32 = fmi3::get_uint64;
            fn fmi3GetBoolean(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut bool, n: usize) -> i32 = fmi3::get_boolean;
            fn fmi3GetString(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut *const ::std::ffi::c_char, n: usize) -> i32 = fmi3::get_string;
            fn fmi3GetBinary(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, sizes: *mut usize, v: *mut *const u8, n: usize) -> i32 = fmi3::get_binary;
            fn fmi3GetClock(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *mut bool) -> i32 = fmi3::get_clock;
            fn fmi3SetFloat32(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const f32, n: usize) -> i32 = fmi3::set_float32;
            fn fmi3SetFloat64(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const f64, n: usize) -> i32 = fmi3::set_float64;
            fn fmi3SetInt8(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const i8, n: usize) -> i32 = fmi3::set_int8;
            fn fmi3SetUInt8(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const u8, n: usize) -> i32 = fmi3::set_uint8;
            fn fmi3SetInt16(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const i16, n: usize) -> i32 = fmi3::set_int16;
            fn fmi3SetUInt16(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const u16, n: usize) -> i32 = fmi3::set_uint16;
            fn fmi3SetInt32(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const i32, n: usize) -> i32 = fmi3::set_int32;
            fn fmi3SetUInt32(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const u32, n: usize) -> i32 = fmi3::set_uint32;
            fn fmi3SetInt64(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const i64, n: usize) -> i32 = fmi3::set_int64;
            fn fmi3SetUInt64(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const u64, n: usize) -> i32 = fmi3::set_uint64;
            fn fmi3SetBoolean(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const bool, n: usize) -> i32 = fmi3::set_boolean;
            fn fmi3SetString(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const *const ::std::ffi::c_char, n: usize) -> i32 = fmi3::set_string;
            fn fmi3SetBinary(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, sizes: *const usize, v: *const *const u8, n: usize) -> i32 = fmi3::set_binary;
            fn fmi3SetClock(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, v: *const bool) -> i32 = fmi3::set_clock;
            fn fmi3GetNumberOfVariableDependencies(i: *mut ::std::ffi::c_void, vr: u32, n: *mut usize) -> i32 = fmi3::get_number_of_variable_dependencies;
            fn fmi3GetVariableDependencies(i: *mut ::std::ffi::c_void, dependent: u32, elem_dep: *mut usize, independents: *mut u32, elem_ind: *mut usize, kinds: *mut i32, n: usize) -> i32 = fmi3::get_variable_dependencies;
            fn fmi3GetFMUState(i: *mut ::std::ffi::c_void, s: *mut *mut ::std::ffi::c_void) -> i32 = fmi3::get_fmu_state;
            fn fmi3SetFMUState(i: *mut ::std::ffi::c_void, s: *mut ::std::ffi::c_void) -> i32 = fmi3::set_fmu_state;
            fn fmi3FreeFMUState(i: *mut ::std::ffi::c_void, s: *mut *mut ::std::ffi::c_void) -> i32 = fmi3::free_fmu_state;
            fn fmi3SerializedFMUStateSize(i: *mut ::std::ffi::c_void, s: *mut ::std::ffi::c_void, size: *mut usize) -> i32 = fmi3::serialized_fmu_state_size;
            fn fmi3SerializeFMUState(i: *mut ::std::ffi::c_void, s: *mut ::std::ffi::c_void, bytes: *mut u8, size: usize) -> i32 = fmi3::serialize_fmu_state;
            fn fmi3DeserializeFMUState(i: *mut ::std::ffi::c_void, bytes: *const u8, size: usize, s: *mut *mut ::std::ffi::c_void) -> i32 = fmi3::deserialize_fmu_state;
            fn fmi3GetDirectionalDerivative(i: *mut ::std::ffi::c_void, unknowns: *const u32, n_unknowns: usize, knowns: *const u32, n_knowns: usize, seed: *const f64, n_seed: usize, sens: *mut f64, n_sens: usize) -> i32 = fmi3::get_directional_derivative;
            fn fmi3GetAdjointDerivative(i: *mut ::std::ffi::c_void, unknowns: *const u32, n_unknowns: usize, knowns: *const u32, n_knowns: usize, seed: *const f64, n_seed: usize, sens: *mut f64, n_sens: usize) -> i32 = fmi3::get_adjoint_derivative;
            fn fmi3EnterConfigurationMode(i: *mut ::std::ffi::c_void) -> i32 = fmi3::enter_configuration_mode;
            fn fmi3ExitConfigurationMode(i: *mut ::std::ffi::c_void) -> i32 = fmi3::exit_configuration_mode;
            fn fmi3GetIntervalDecimal(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, intervals: *mut f64, qualifiers: *mut i32) -> i32 = fmi3::get_interval_decimal;
            fn fmi3GetIntervalFraction(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, counters: *mut u64, resolutions: *mut u64, qualifiers: *mut i32) -> i32 = fmi3::get_interval_fraction;
            fn fmi3GetShiftDecimal(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, shifts: *mut f64) -> i32 = fmi3::get_shift_decimal;
            fn fmi3GetShiftFraction(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, counters: *mut u64, resolutions: *mut u64) -> i32 = fmi3::get_shift_fraction;
            fn fmi3SetIntervalDecimal(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, intervals: *const f64) -> i32 = fmi3::set_interval_decimal;
            fn fmi3SetIntervalFraction(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, counters: *const u64, resolutions: *const u64) -> i32 = fmi3::set_interval_fraction;
            fn fmi3SetShiftDecimal(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, shifts: *const f64) -> i32 = fmi3::set_shift_decimal;
            fn fmi3SetShiftFraction(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, counters: *const u64, resolutions: *const u64) -> i32 = fmi3::set_shift_fraction;
            fn fmi3EvaluateDiscreteStates(i: *mut ::std::ffi::c_void) -> i32 = fmi3::evaluate_discrete_states;
            fn fmi3UpdateDiscreteStates(i: *mut ::std::ffi::c_void, need_update: *mut bool, terminate: *mut bool, nominals_changed: *mut bool, values_changed: *mut bool, next_defined: *mut bool, next_time: *mut f64) -> i32 = fmi3::update_discrete_states;
            fn fmi3EnterContinuousTimeMode(i: *mut ::std::ffi::c_void) -> i32 = fmi3::enter_continuous_time_mode;
            fn fmi3CompletedIntegratorStep(i: *mut ::std::ffi::c_void, no_set_prior: bool, enter_event: *mut bool, terminate: *mut bool) -> i32 = fmi3::completed_integrator_step;
            fn fmi3SetTime(i: *mut ::std::ffi::c_void, t: f64) -> i32 = fmi3::set_time;
            fn fmi3SetContinuousStates(i: *mut ::std::ffi::c_void, x: *const f64, n: usize) -> i32 = fmi3::set_continuous_states;
            fn fmi3GetContinuousStateDerivatives(i: *mut ::std::ffi::c_void, x: *mut f64, n: usize) -> i32 = fmi3::get_continuous_state_derivatives;
            fn fmi3GetEventIndicators(i: *mut ::std::ffi::c_void, x: *mut f64, n: usize) -> i32 = fmi3::get_event_indicators;
            fn fmi3GetContinuousStates(i: *mut ::std::ffi::c_void, x: *mut f64, n: usize) -> i32 = fmi3::get_continuous_states;
            fn fmi3GetNominalsOfContinuousStates(i: *mut ::std::ffi::c_void, x: *mut f64, n: usize) -> i32 = fmi3::get_nominals_of_continuous_states;
            fn fmi3GetNumberOfEventIndicators(i: *mut ::std::ffi::c_void, n: *mut usize) -> i32 = fmi3::get_number_of_event_indicators;
            fn fmi3GetNumberOfContinuousStates(i: *mut ::std::ffi::c_void, n: *mut usize) -> i32 = fmi3::get_number_of_continuous_states;
            fn fmi3EnterStepMode(i: *mut ::std::ffi::c_void) -> i32 = fmi3::enter_step_mode;
            fn fmi3GetOutputDerivatives(i: *mut ::std::ffi::c_void, vr: *const u32, nvr: usize, orders: *const i32, v: *mut f64, n: usize) -> i32 = fmi3::get_output_derivatives;
            fn fmi3DoStep(i: *mut ::std::ffi::c_void, t: f64, h: f64, no_set_prior: bool, event_needed: *mut bool, terminate: *mut bool, early_return: *mut bool, last_successful: *mut f64) -> i32 = fmi3::do_step;
            fn fmi3ActivateModelPartition(i: *mut ::std::ffi::c_void, clock: u32, t: f64) -> i32 = fmi3::activate_model_partition;
        }
    };
}

/// Implementation detail of [`export_fmi!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __export_fns {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty = $m:ident::$f:ident;)*) => {
        $(
            /// FMI function exported with its standard name (see the FMI standard).
            ///
            /// # Safety
            /// Pointer arguments must follow the FMI calling convention; NULL and
            /// unknown handles are detected and refused.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                // SAFETY: forwarded verbatim to the kit, which checks every pointer
                // it can (NULL, alignment, handle tables) before any access.
                unsafe { $crate::ffi::$m::$f($($arg),*) }
            }
        )*
    };
}

/// Implementation detail of [`export_fmi!`]: the two instantiate functions,
/// which also receive the registry.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_instantiate {
    ($registry:expr; $(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty = $m:ident::$f:ident;)*) => {
        $(
            /// FMI instantiation function exported with its standard name.
            ///
            /// # Safety
            /// Pointer arguments must follow the FMI calling convention; NULL is
            /// detected and refused.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                // SAFETY: as for every export; the registry is a plain Rust value.
                unsafe { $crate::ffi::$m::$f($registry, $($arg),*) }
            }
        )*
    };
}
