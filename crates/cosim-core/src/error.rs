//! Errors of a co-simulation run.

use cosim_fmi::FmiError;

/// Result alias of this crate.
pub type Result<T, E = CoreError> = std::result::Result<T, E>;

/// Why a run could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// An FMU call failed (the FMI error names instance, function, status,
    /// time and the FMU's last log lines).
    #[error(transparent)]
    Fmi(#[from] FmiError),

    /// An FMU discarded a step.
    #[error(
        "subsystem '{subsystem}': the FMU discarded the step from t = {t} (step {h}); it stopped at t = {last_successful_time}{}",
        if *terminate { " and asked to terminate the simulation" } else { "" }
    )]
    Discarded {
        /// The subsystem.
        subsystem: String,
        /// Step start.
        t: f64,
        /// Step size.
        h: f64,
        /// Where the FMU stopped.
        last_successful_time: f64,
        /// The FMU asked to end the simulation.
        terminate: bool,
    },

    /// An output became NaN or infinite.
    #[error(
        "subsystem '{subsystem}': variable '{variable}' is {value} at t = {t}: the co-simulation diverged or the FMU failed; stopping"
    )]
    NonFinite {
        /// The subsystem.
        subsystem: String,
        /// The variable.
        variable: String,
        /// The value (NaN or ±inf).
        value: f64,
        /// Simulation time.
        t: f64,
    },

    /// A master cannot drive this system (e.g. a capability is missing).
    #[error("{master} master: {reason}")]
    Capability {
        /// The master.
        master: &'static str,
        /// What is missing, naming each FMU and flag.
        reason: String,
    },

    /// An adaptive master hit a limit (minimum step, too many rejections).
    #[error("{master} master at t = {t}: {reason}")]
    StepControl {
        /// The master.
        master: &'static str,
        /// Simulation time.
        t: f64,
        /// What happened.
        reason: String,
    },

    /// The system is not consistent (bad configuration passed by the caller).
    #[error("{0}")]
    Config(String),

    /// Writing an output file failed.
    #[error("{path}: {source}")]
    Output {
        /// The file.
        path: std::path::PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },

    /// The run was interrupted (Ctrl-C / SIGTERM).
    #[error("interrupted at t = {t}")]
    Interrupted {
        /// Simulation time reached.
        t: f64,
    },
}
