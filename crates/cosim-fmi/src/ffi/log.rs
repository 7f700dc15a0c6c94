//! Routing of FMU log messages into `tracing`, keeping the last few lines
//! per instance so that an error can quote what the FMU said. Each message
//! and category is bounded in length as it is received (`crate::text`).
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::ffi::{CStr, c_char};
use std::sync::Mutex;

use super::Status;
use crate::text::{LOG_CATEGORY_MAX, LOG_MESSAGE_MAX, bounded_text, escape_controls};

/// How many recent log lines an instance keeps for error messages.
const RECENT_LINES: usize = 16;

/// Per-instance logging context. Boxed by the instance so that its address,
/// handed to the FMU as the environment pointer, stays fixed.
#[derive(Debug)]
pub struct LogContext {
    instance: String,
    recent: Mutex<VecDeque<String>>,
}

impl LogContext {
    pub(crate) fn new(instance: &str) -> Self {
        LogContext {
            instance: instance.to_string(),
            recent: Mutex::new(VecDeque::with_capacity(RECENT_LINES)),
        }
    }

    /// Records one message from the FMU and emits it as a tracing event.
    /// The message is kept as the FMU wrote it (in the recent lines, which
    /// errors and the summary quote); the log line shows its control
    /// characters escaped ([`escape_controls`]).
    pub(crate) fn log(&self, status: Status, category: &str, message: &str) {
        let shown = escape_controls(message);
        match status {
            Status::Ok | Status::Pending => {
                tracing::debug!(target: "fmu", instance = %self.instance, category, "{shown}")
            }
            Status::Warning | Status::Discard => {
                tracing::warn!(target: "fmu", instance = %self.instance, category, "{shown}")
            }
            Status::Error | Status::Fatal | Status::Invalid(_) => {
                tracing::error!(target: "fmu", instance = %self.instance, category, "{shown}")
            }
        }
        if let Ok(mut recent) = self.recent.lock() {
            if recent.len() == RECENT_LINES {
                recent.pop_front();
            }
            recent.push_back(format!("[{status}] {category}: {message}"));
        }
    }

    /// [`LogContext::log`] of a message the FMU passed as C strings:
    /// `message` of `len` bytes (FMI 2: formatted by the C shim, `cut` if
    /// it stopped at [`LOG_MESSAGE_MAX`]), or NUL-terminated with `len`
    /// `None` (FMI 3: read no further than the bound); the category read no
    /// further than [`LOG_CATEGORY_MAX`]. A cut text ends with a note
    /// saying so.
    ///
    /// # Safety
    /// `category` is null or NUL-terminated; `message` is null, or points
    /// to `len` readable bytes, or (without `len`) is NUL-terminated; both
    /// valid for the duration of the call.
    pub(crate) unsafe fn log_c(
        &self,
        status: Status,
        category: *const c_char,
        message: *const c_char,
        len: Option<usize>,
        cut: bool,
    ) {
        // SAFETY: as the caller guarantees.
        let category = unsafe { c_str_bounded(category, LOG_CATEGORY_MAX, "category") };
        let message = match len {
            _ if message.is_null() => String::new(),
            Some(len) => {
                // SAFETY: the caller guarantees `len` readable bytes.
                let bytes = unsafe { std::slice::from_raw_parts(message.cast::<u8>(), len) };
                bounded_text(bytes, LOG_MESSAGE_MAX, cut, "message")
            }
            // SAFETY: as the caller guarantees.
            None => unsafe { c_str_bounded(message, LOG_MESSAGE_MAX, "message") },
        };
        // A panic must not unwind into C.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.log(status, &category, &message)
        }));
    }

    /// The last lines the FMU logged, oldest first, and forgets them.
    pub(crate) fn take_recent(&self) -> Vec<String> {
        match self.recent.lock() {
            Ok(mut recent) => recent.drain(..).collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// Converts a C string the FMU passed to owned text, tolerating null and
/// invalid UTF-8.
///
/// # Safety
/// `ptr` must be null or point to a NUL-terminated string valid for the
/// duration of the call.
pub(crate) unsafe fn c_str_lossy(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: the caller guarantees a valid NUL-terminated string.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

/// The text of a C string the FMU passed, reading at most `max` bytes of
/// it (`strnlen`: a string without an end within the bound is not read
/// further), cut there with a note for `what`; null is empty.
///
/// # Safety
/// `ptr` must be null or point to a string that is NUL-terminated or has
/// at least `max + 1` readable bytes, valid for the duration of the call.
pub(crate) unsafe fn c_str_bounded(ptr: *const c_char, max: usize, what: &str) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: reads at most `max + 1` bytes, stopping at the NUL.
    let n = unsafe { libc::strnlen(ptr, max + 1) };
    // SAFETY: the `n` bytes just scanned are readable.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), n) };
    bounded_text(bytes, max, false, what)
}
