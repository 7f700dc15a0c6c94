//! The FMI call log (`cosim run --log-fmi-calls`): one line for every call
//! the binding makes into an FMU, with its arguments and the status it
//! returned, in the style of the Reference FMUs' `fmusim`, plus the
//! instance name and the variable names of value references:
//!
//! ```text
//! [OK] chassis: fmi2SetReal(vr={0, 1} /* m_c, k_c */, nvr=2, value={500, 0.3})
//! [OK] chassis: fmi2DoStep(currentCommunicationPoint=0, communicationStepSize=0.001, noSetFMUStatePriorToCurrentPoint=1)
//! ```
//!
//! The format is described in `docs/fmi-call-log.md`.
//!
//! Cost: an instance without a call log pays one branch on a null pointer
//! per call; the formatting is out of line. With a log, each call formats
//! one line and writes it with one `write` (no buffering in the process, so
//! what was logged survives a crash of the FMU and of the process).

use std::collections::HashMap;
use std::ffi::c_void;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use super::Status;
use crate::model_description::{FmiVersion, ModelDescription, VariableType};

/// Where the call log goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CallLogTarget {
    /// The process's standard error (an isolated FMU's host writes to its
    /// own, which the master forwards line by line).
    Stderr,
    /// A file, created (emptied) once at the start of a command and then
    /// appended to by every process of the run.
    File(PathBuf),
}

impl CallLogTarget {
    /// The target of a `--log-fmi-calls` value: `-` is standard error.
    pub fn from_arg(arg: &Path) -> CallLogTarget {
        if arg.as_os_str() == "-" {
            CallLogTarget::Stderr
        } else {
            CallLogTarget::File(arg.to_path_buf())
        }
    }

    /// Creates the file, or empties it (nothing for standard error): once
    /// per command, before anything is logged. Fails if it cannot be
    /// written.
    pub fn create(&self) -> std::io::Result<()> {
        match self {
            CallLogTarget::Stderr => Ok(()),
            CallLogTarget::File(path) => std::fs::File::create(path).map(drop),
        }
    }

    /// Opens the target for appending (the file must be writable; it is
    /// created if missing).
    pub fn open(&self) -> std::io::Result<CallLogSink> {
        let file = match self {
            CallLogTarget::Stderr => None,
            CallLogTarget::File(path) => Some(
                std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(path)?,
            ),
        };
        Ok(CallLogSink {
            inner: Arc::new(SinkInner {
                target: self.clone(),
                file,
                failed: AtomicBool::new(false),
            }),
        })
    }
}

impl std::fmt::Display for CallLogTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallLogTarget::Stderr => f.write_str("standard error"),
            CallLogTarget::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// An open call log, shared (cheap to clone) by every instance of a
/// process that logs into it.
#[derive(Clone)]
pub struct CallLogSink {
    inner: Arc<SinkInner>,
}

struct SinkInner {
    target: CallLogTarget,
    /// Opened in append mode: lines of several processes do not overwrite
    /// each other, and each line is one `write`.
    file: Option<std::fs::File>,
    /// A write failed (warned once).
    failed: AtomicBool,
}

impl std::fmt::Debug for CallLogSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CallLogSink")
            .field(&self.inner.target)
            .finish()
    }
}

impl CallLogSink {
    /// Where the lines go.
    pub fn target(&self) -> &CallLogTarget {
        &self.inner.target
    }

    /// Writes one complete line (ending in `\n`) with a single write, not
    /// buffered in the process.
    fn write_line(&self, line: &str) {
        let result = match &self.inner.file {
            Some(file) => {
                let mut f: &std::fs::File = file;
                f.write_all(line.as_bytes())
            }
            None => std::io::stderr().lock().write_all(line.as_bytes()),
        };
        if let Err(e) = result
            && !self.inner.failed.swap(true, Ordering::Relaxed)
        {
            tracing::warn!("cannot write the FMI call log ({}): {e}", self.inner.target);
        }
    }
}

/// True if `line` is a call-log line of instance `instance` (so that a
/// reader of a host's standard error can tell it from the FMU's messages).
pub fn is_call_log_line(line: &str, instance: &str) -> bool {
    let Some(rest) = line.strip_prefix('[') else {
        return false;
    };
    let Some((status, rest)) = rest.split_once("] ") else {
        return false;
    };
    (matches!(
        status,
        "OK" | "Warning" | "Discard" | "Error" | "Fatal" | "Pending"
    ) || status.trim_start_matches('-').parse::<u32>().is_ok())
        && rest
            .strip_prefix(instance)
            .and_then(|r| r.strip_prefix(": fmi"))
            .is_some()
}

/// Which value references a call names: FMI 2 numbers them per base type,
/// FMI 3 once for the whole FMU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum VrKind {
    /// FMI 3: every variable.
    Any,
    /// FMI 2 `Real`.
    Real,
    /// FMI 2 `Integer` and `Enumeration`.
    Integer,
    /// FMI 2 `Boolean`.
    Boolean,
    /// FMI 2 `String`.
    String,
}

/// The call log of one instance: the sink, the instance name, and the
/// names of its value references.
pub(crate) struct CallLog {
    sink: CallLogSink,
    instance: String,
    names: HashMap<(VrKind, u32), Box<str>>,
}

impl std::fmt::Debug for CallLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallLog")
            .field("instance", &self.instance)
            .field("sink", &self.sink)
            .finish()
    }
}

impl CallLog {
    /// The log of instance `instance` of the FMU described by `md`. An FMI 2
    /// value reference shared by several variables (aliases) is named by
    /// the first of them.
    pub(crate) fn new(sink: CallLogSink, instance: &str, md: &ModelDescription) -> CallLog {
        let mut names = HashMap::with_capacity(md.variables.len());
        for v in &md.variables {
            let kind = match md.fmi_version {
                FmiVersion::V3 => VrKind::Any,
                FmiVersion::V2 => match v.var_type {
                    VariableType::Float64 | VariableType::Float32 => VrKind::Real,
                    VariableType::Boolean => VrKind::Boolean,
                    VariableType::String => VrKind::String,
                    _ => VrKind::Integer,
                },
            };
            names
                .entry((kind, v.value_reference))
                .or_insert_with(|| v.name.clone().into_boxed_str());
        }
        CallLog {
            sink,
            instance: instance.to_string(),
            names,
        }
    }

    /// Starts the line of a call of `function` that returned `status`.
    pub(crate) fn line(&self, status: Status, function: &str) -> Line<'_> {
        let mut buf = String::with_capacity(128);
        let _ = match status {
            // A code that is no status: its number, one word as the names.
            Status::Invalid(code) => write!(buf, "[{code}] {}: {function}(", self.instance),
            _ => write!(buf, "[{status}] {}: {function}(", self.instance),
        };
        Line {
            log: self,
            buf,
            first: true,
        }
    }

    /// A call without arguments.
    #[cold]
    #[inline(never)]
    pub(crate) fn call(&self, status: Status, function: &str) {
        self.line(status, function).end();
    }
}

/// One line being written: arguments are appended in the order of the C
/// signature, `name=value`, separated by `, `.
pub(crate) struct Line<'a> {
    log: &'a CallLog,
    buf: String,
    first: bool,
}

impl Line<'_> {
    fn name(&mut self, name: &str) -> &mut String {
        if !self.first {
            self.buf.push_str(", ");
        }
        self.first = false;
        self.buf.push_str(name);
        self.buf.push('=');
        &mut self.buf
    }

    /// An argument shown with `Display` (integers, sizes).
    pub(crate) fn arg(mut self, name: &str, value: impl std::fmt::Display) -> Self {
        let b = self.name(name);
        let _ = write!(b, "{value}");
        self
    }

    /// A floating-point argument, printed so that it reads back exactly.
    pub(crate) fn num(mut self, name: &str, value: f64) -> Self {
        value.write_to(self.name(name));
        self
    }

    /// A Boolean argument, as `0` / `1` (the C value).
    pub(crate) fn flag(mut self, name: &str, value: bool) -> Self {
        self.name(name).push(if value { '1' } else { '0' });
        self
    }

    /// A string argument, quoted (escapes keep the line one line).
    pub(crate) fn text(mut self, name: &str, value: &str) -> Self {
        let b = self.name(name);
        let _ = write!(b, "{value:?}");
        self
    }

    /// A pointer argument (an FMU state, a callback): `0x...`, or `NULL`.
    pub(crate) fn ptr(mut self, name: &str, value: *const c_void) -> Self {
        let b = self.name(name);
        if value.is_null() {
            b.push_str("NULL");
        } else {
            let _ = write!(b, "{value:p}");
        }
        self
    }

    /// An enumeration argument: its C value and, in a comment, its name.
    pub(crate) fn named(mut self, name: &str, value: i32, meaning: &str) -> Self {
        let b = self.name(name);
        let _ = write!(b, "{value} /* {meaning} */");
        self
    }

    /// An array of value references of kind `kind`, followed by their
    /// variable names in a comment: `{0, 1} /* m_c, k_c */` (`?` for a
    /// value reference the model description does not declare).
    pub(crate) fn vrs(mut self, name: &str, kind: VrKind, vrs: &[u32]) -> Self {
        let names = &self.log.names;
        let b = self.name(name);
        b.push('{');
        for (i, vr) in vrs.iter().enumerate() {
            if i > 0 {
                b.push_str(", ");
            }
            let _ = write!(b, "{vr}");
        }
        b.push('}');
        if !vrs.is_empty() {
            b.push_str(" /* ");
            for (i, vr) in vrs.iter().enumerate() {
                if i > 0 {
                    b.push_str(", ");
                }
                b.push_str(names.get(&(kind, *vr)).map_or("?", |n| n));
            }
            b.push_str(" */");
        }
        self
    }

    /// An array of values: `{500, 0.3}`.
    pub(crate) fn values<T: LogValue>(mut self, name: &str, values: &[T]) -> Self {
        let b = self.name(name);
        b.push('{');
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                b.push_str(", ");
            }
            v.write_to(b);
        }
        b.push('}');
        self
    }

    /// Ends the line and writes it.
    pub(crate) fn end(self) {
        self.end_with("");
    }

    /// Ends the line with a comment after the call (` /* comment */`) and
    /// writes it.
    pub(crate) fn end_with(mut self, comment: &str) {
        self.buf.push(')');
        if !comment.is_empty() {
            self.buf.push_str(" /* ");
            self.buf.push_str(comment);
            self.buf.push_str(" */");
        }
        self.buf.push('\n');
        self.log.sink.write_line(&self.buf);
    }
}

/// A value as the call log prints it.
pub(crate) trait LogValue {
    /// Appends the value to `out`.
    fn write_to(&self, out: &mut String);
}

/// Floats: the shortest text that reads back to the same value; plain
/// decimals between 1e-5 and 1e16, exponent notation outside (`1e-9`,
/// `6.02e23`); `NaN`, `inf`, `-inf`.
macro_rules! log_float {
    ($($t:ty),*) => {$(
        impl LogValue for $t {
            fn write_to(&self, out: &mut String) {
                let a = self.abs();
                if *self == 0.0 || !self.is_finite() || (1e-5..1e16).contains(&a) {
                    let _ = write!(out, "{self}");
                } else {
                    let _ = write!(out, "{self:e}");
                }
            }
        }
    )*};
}
log_float!(f64, f32);

/// A float shown as the call log shows numbers (for comments).
pub(crate) struct LogNum(pub(crate) f64);

impl std::fmt::Display for LogNum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = String::new();
        self.0.write_to(&mut s);
        f.write_str(&s)
    }
}

macro_rules! log_int {
    ($($t:ty),*) => {$(
        impl LogValue for $t {
            fn write_to(&self, out: &mut String) {
                let _ = write!(out, "{self}");
            }
        }
    )*};
}
log_int!(i8, u8, i16, u16, i32, u32, i64, u64, usize);

impl LogValue for bool {
    fn write_to(&self, out: &mut String) {
        out.push(if *self { '1' } else { '0' });
    }
}

impl LogValue for &str {
    fn write_to(&self, out: &mut String) {
        let _ = write!(out, "{self:?}");
    }
}

impl LogValue for String {
    fn write_to(&self, out: &mut String) {
        let _ = write!(out, "{self:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text<T: LogValue>(v: T) -> String {
        let mut s = String::new();
        v.write_to(&mut s);
        s
    }

    #[test]
    fn floats_round_trip() {
        for x in [
            0.0,
            -0.0,
            0.1,
            0.3,
            500.0,
            1e-3,
            1e-5,
            9.99e-6,
            1.0 / 3.0,
            1e15,
            1e16,
            6.02e23,
            -2.5e-300,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
        ] {
            let s = text(x);
            assert_eq!(s.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{x}: {s}");
        }
        assert_eq!(text(500.0), "500");
        assert_eq!(text(0.3), "0.3");
        assert_eq!(text(1e-9), "1e-9");
        assert_eq!(text(f64::NAN), "NaN");
        assert_eq!(text(0.1f32), "0.1");
        assert_eq!(text(true), "1");
        assert_eq!(text("a \"b\"\n"), r#""a \"b\"\n""#);
    }

    #[test]
    fn call_log_lines_are_recognised() {
        assert!(is_call_log_line(
            "[OK] chassis: fmi2DoStep(currentCommunicationPoint=0)",
            "chassis"
        ));
        assert!(is_call_log_line(
            "[Error] a.b: fmi3DoStep(currentCommunicationPoint=0)",
            "a.b"
        ));
        assert!(is_call_log_line("[7] chassis: fmi2DoStep()", "chassis"));
        assert!(is_call_log_line("[-1] chassis: fmi2DoStep()", "chassis"));
        assert!(!is_call_log_line("[OK] wheel: fmi2DoStep()", "chassis"));
        assert!(!is_call_log_line("WARN chassis: fmi2DoStep()", "chassis"));
        assert!(!is_call_log_line("[Info] chassis: fmi2DoStep()", "chassis"));
    }
}
