//! Errors of the import layer. Every variant names the file, the FMU
//! instance, the function or the line it concerns, so that a message can be
//! shown to a user as it is.

use std::path::PathBuf;

use crate::ffi::Status;

/// Result alias of this crate.
pub type Result<T, E = FmiError> = std::result::Result<T, E>;

/// An error of the FMI import layer.
#[derive(Debug, thiserror::Error)]
pub enum FmiError {
    /// An I/O error on a file.
    #[error("{path}: {error}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error (shown in the message, so not a `source`).
        error: std::io::Error,
    },

    /// The archive is not a usable zip file, or an entry is refused.
    #[error("{archive}: {}{reason}", entry.as_deref().map(|e| format!("entry '{e}': ")).unwrap_or_default())]
    Archive {
        /// The `.fmu` file.
        archive: PathBuf,
        /// The entry concerned, if any.
        entry: Option<String>,
        /// What is wrong.
        reason: String,
    },

    /// The FMU has no binary for this platform.
    #[error(
        "{archive}: no binary for this platform: expected binaries/{expected}/{library}, found platform directories: {}",
        if found.is_empty() { "none".to_string() } else { found.join(", ") }
    )]
    MissingBinary {
        /// The `.fmu` file or directory.
        archive: PathBuf,
        /// The platform directory that was expected (`linux64`, `x86_64-linux`).
        expected: String,
        /// The library file name that was expected.
        library: String,
        /// The platform directories that exist.
        found: Vec<String>,
    },

    /// `modelDescription.xml` is malformed or violates the standard.
    #[error("{file}:{line}:{column}: {message}")]
    ModelDescription {
        /// The file (inside the archive: `<archive>/modelDescription.xml`).
        file: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },

    /// The FMU offers no co-simulation interface, or not one `cosim` supports.
    #[error("{fmu}: {reason}")]
    Unsupported {
        /// The FMU (archive path or model name).
        fmu: String,
        /// What is missing.
        reason: String,
    },

    /// The shared library could not be loaded.
    #[error("{library}: cannot load shared library: {reason}")]
    LoadLibrary {
        /// The library file.
        library: PathBuf,
        /// The loader's message.
        reason: String,
    },

    /// A mandatory FMI function is not exported by the shared library.
    #[error("{library}: missing mandatory FMI function '{function}'")]
    MissingFunction {
        /// The library file.
        library: PathBuf,
        /// The function name.
        function: String,
    },

    /// An optional FMI function was needed but the FMU lacks it or does not
    /// declare the capability.
    #[error("FMU instance '{instance}': {function} is not available: {reason}")]
    NotSupported {
        /// The instance name.
        instance: String,
        /// The function name.
        function: &'static str,
        /// Which flag or export is missing.
        reason: String,
    },

    /// An FMI function returned a status other than OK or Warning (or a
    /// code that is no status: [`Status::Invalid`], treated as Fatal).
    #[error(
        "FMU instance '{instance}': {function} returned {}{}{}",
        returned(function, *status),
        time.map(|t| format!(" at t = {t}")).unwrap_or_default(),
        if log.is_empty() { String::new() } else { format!("; the FMU logged:\n  {}", log.join("\n  ")) }
    )]
    Status {
        /// The instance name.
        instance: String,
        /// The function name.
        function: &'static str,
        /// The status returned.
        status: Status,
        /// Simulation time, where it applies.
        time: Option<f64>,
        /// The last lines the FMU logged before the failure (most recent last).
        log: Vec<String>,
    },

    /// A second instance of an FMU that allows only one per process.
    #[error(
        "{fmu}: the FMU declares canBeInstantiatedOnlyOncePerProcess=\"true\" and is already instantiated in this process as '{existing}'; run it in a separate process (isolation = \"process\")"
    )]
    OnlyOncePerProcess {
        /// The FMU.
        fmu: String,
        /// The name of the existing instance.
        existing: String,
    },

    /// The integrator of a Model Exchange instance could not go on (step
    /// size too small, Newton failure, ...).
    #[error("FMU instance '{instance}': the Model Exchange solver failed: {reason}")]
    Integration {
        /// The instance name.
        instance: String,
        /// The solver's message, with the time it stopped at.
        reason: String,
    },

    /// A call reached the binding of a Model Exchange instance while its
    /// integrator held it (never happens: the driver holds the instance
    /// for the whole time it lends the binding).
    #[error("the FMU instance is held by its Model Exchange integrator")]
    Lent,

    /// A slice argument had the wrong length, or an argument was invalid.
    #[error("FMU instance '{instance}': {function}: {reason}")]
    InvalidArgument {
        /// The instance name.
        instance: String,
        /// The function name.
        function: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// What a function returned, for [`FmiError::Status`]: the status, or for
/// a code outside the standard, "an invalid status 7 (not an fmi2Status:
/// treated as Fatal)".
fn returned(function: &str, status: Status) -> String {
    match status {
        Status::Invalid(code) => {
            let kind = if function.starts_with("fmi3") {
                "fmi3Status"
            } else {
                "fmi2Status"
            };
            format!("an invalid status {code} (not an {kind}: treated as Fatal)")
        }
        other => other.to_string(),
    }
}
