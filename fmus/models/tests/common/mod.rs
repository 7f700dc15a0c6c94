//! What the packaged-FMU tests share: the loggers that collect the FMUs'
//! messages, the FMI 2 callback struct, a model description's attributes.
// This module serves two test crates; each uses part of it.
#![allow(dead_code, unsafe_code)]

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;

pub static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

pub fn logged(needle: &str) -> bool {
    LOG.lock()
        .is_ok_and(|l| l.iter().any(|m| m.contains(needle)))
}

/// Stand-in for the C-variadic fmi2 logger; on x86-64 System V a variadic
/// call passes its arguments like this prototyped one. The kit always calls
/// it with format "%s" and the message as the one variadic argument.
pub extern "C" fn logger2(
    _env: *mut c_void,
    _name: *const c_char,
    _status: c_int,
    _category: *const c_char,
    fmt: *const c_char,
    msg: *const c_char,
) {
    // SAFETY: the FMU passes NUL-terminated strings.
    let (fmt, msg) = unsafe { (CStr::from_ptr(fmt), CStr::from_ptr(msg)) };
    assert_eq!(fmt.to_bytes(), b"%s");
    if let Ok(mut l) = LOG.lock() {
        l.push(msg.to_string_lossy().into_owned());
    }
}

pub extern "C" fn logger3(
    _env: *mut c_void,
    _status: c_int,
    _category: *const c_char,
    msg: *const c_char,
) {
    // SAFETY: the FMU passes a NUL-terminated string.
    let msg = unsafe { CStr::from_ptr(msg) };
    if let Ok(mut l) = LOG.lock() {
        l.push(msg.to_string_lossy().into_owned());
    }
}

#[repr(C)]
pub struct Callbacks2 {
    pub logger: *const c_void,
    pub allocate: *const c_void,
    pub free: *const c_void,
    pub step_finished: *const c_void,
    pub env: *mut c_void,
}

/// The value of attribute `name` (its first occurrence) in `xml`.
pub fn attr(xml: &str, name: &str) -> String {
    let key = format!("{name}=\"");
    let start = xml.find(&key).map(|i| i + key.len()).expect("attribute");
    xml[start..]
        .split('"')
        .next()
        .unwrap_or_default()
        .to_string()
}
