//! Routing of FMU log messages into `tracing`, keeping the last few lines
//! per instance so that an error can quote what the FMU said.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::ffi::{CStr, c_char};
use std::sync::Mutex;

use super::Status;

/// How many recent log lines an instance keeps for error messages.
const RECENT_LINES: usize = 16;

/// Per-instance logging context. Boxed by the instance so that its address,
/// handed to the FMU as the environment pointer, stays fixed.
#[derive(Debug)]
pub(crate) struct LogContext {
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
    pub(crate) fn log(&self, status: Status, category: &str, message: &str) {
        match status {
            Status::Ok | Status::Pending => {
                tracing::debug!(target: "fmu", instance = %self.instance, category, "{message}")
            }
            Status::Warning | Status::Discard => {
                tracing::warn!(target: "fmu", instance = %self.instance, category, "{message}")
            }
            Status::Error | Status::Fatal | Status::Invalid(_) => {
                tracing::error!(target: "fmu", instance = %self.instance, category, "{message}")
            }
        }
        if let Ok(mut recent) = self.recent.lock() {
            if recent.len() == RECENT_LINES {
                recent.pop_front();
            }
            recent.push_back(format!("[{status}] {category}: {message}"));
        }
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
