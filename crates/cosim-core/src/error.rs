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

    /// An FMU discarded a step (or, FMI 3, returned early from it).
    #[error("{}", discard_message(.subsystem, .function, (.t, .h, .last_successful_time), .early_return, .log, true))]
    Discarded {
        /// The subsystem.
        subsystem: String,
        /// The FMI function (`fmi2DoStep`, `fmi3DoStep`).
        function: &'static str,
        /// Step start.
        t: f64,
        /// Step size.
        h: f64,
        /// Where the FMU stopped.
        last_successful_time: f64,
        /// FMI 3 early return (status OK, `earlyReturn = true`) rather than
        /// Discard.
        early_return: bool,
        /// The last lines the FMU logged before it discarded the step.
        log: Vec<String>,
    },

    /// An FMU ended its own simulation (FMI 2 Discard with
    /// `fmi2Terminated`, FMI 3 `terminateSimulation`): not a failure. The
    /// run loop ends the run normally at `t`, the FMU's last successful
    /// time; masters pass this up untouched.
    #[error(
        "subsystem '{subsystem}' ended the simulation at t = {t} ({function} asked to terminate)"
    )]
    TerminatedByFmu {
        /// The subsystem (for a nested system, the path to the FMU's).
        subsystem: String,
        /// The FMI function (`fmi2DoStep`, `fmi3DoStep`).
        function: &'static str,
        /// Where the FMU stopped: its last successful time.
        t: f64,
    },

    /// An FMU refused a parameter or start value (while it was set in the
    /// state the standard names for it, during initialization).
    #[error("subsystem '{subsystem}': setting {variable} = {value} ({origin}): {error}")]
    StartValue {
        /// The subsystem.
        subsystem: String,
        /// The variable.
        variable: String,
        /// The value, as given.
        value: String,
        /// Where the value was given ("s.toml:12:5", "--set a.b=1").
        origin: String,
        /// What the FMU (or the binding) said.
        error: Box<FmiError>,
    },

    /// An output became NaN or infinite.
    #[error(
        "subsystem '{subsystem}': variable '{variable}' is {value} at t = {t}{}: the co-simulation diverged or the FMU failed; stopping",
        read_since_note(*.read_since)
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
        /// For an output read only for the trace's rows: when it was read
        /// before (it may have gone wrong at any step since).
        read_since: Option<f64>,
    },

    /// An output exceeded the divergence limit.
    #[error(
        "subsystem '{subsystem}': variable '{variable}' = {value:e} exceeds the divergence limit {limit:e} at t = {t}{}: the co-simulation diverged; stopping",
        read_since_note(*.read_since)
    )]
    Diverged {
        /// The subsystem.
        subsystem: String,
        /// The variable.
        variable: String,
        /// Its value.
        value: f64,
        /// The limit.
        limit: f64,
        /// Simulation time.
        t: f64,
        /// As for [`CoreError::NonFinite`].
        read_since: Option<f64>,
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
    #[error("{path}: {error}")]
    Output {
        /// The file.
        path: std::path::PathBuf,
        /// The underlying error (shown in the message, so not a `source`).
        error: std::io::Error,
    },

    /// The output directory is in use by another run (it holds the
    /// directory's lock, `output_lock`): nothing was written.
    #[error(
        "{}: the output directory is in use by {holder}{}: two runs writing into one directory would mix their outputs; wait for it to end, or give this run another output directory",
        dir.display(),
        pid.map(|p| format!(" (process id {p})")).unwrap_or_default()
    )]
    OutputInUse {
        /// The directory.
        dir: std::path::PathBuf,
        /// Who holds it: "another cosim run", "shard 2/3 of a sweep".
        holder: String,
        /// The holder's process id, when its lock file says.
        pid: Option<u32>,
    },

    /// Writing rows to an output file failed (a full device, a file size
    /// limit, an I/O error) during the run: the file was cut back to its
    /// last complete row and closed, and the run stopped.
    #[error("{}", output_write_message(.path, .error, *.t))]
    OutputWrite {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        error: std::io::Error,
        /// The time (first field) of the file's last complete row; NaN
        /// when it holds none.
        t: f64,
    },

    /// The run was interrupted (Ctrl-C / SIGTERM).
    #[error("interrupted at t = {t}")]
    Interrupted {
        /// Simulation time reached.
        t: f64,
    },

    /// The process hosting a subsystem's FMU (process isolation) died, or
    /// did not answer in time and was killed.
    #[error(
        "subsystem '{subsystem}': {function}{}: {cause}{}",
        t.map(|t| format!(" at t = {t}")).unwrap_or_default(),
        if log.is_empty() { String::new() } else { format!("; the host's last messages:\n  {}", log.join("\n  ")) }
    )]
    HostProcess {
        /// The subsystem.
        subsystem: String,
        /// The FMI function in progress (`fmi2DoStep`), or what the host was
        /// doing.
        function: &'static str,
        /// Simulation time of that call, where it applies.
        t: Option<f64>,
        /// What happened: "the FMU's host process (pid 12) died of a
        /// segmentation fault (SIGSEGV)", "no answer within 60 s ...".
        cause: String,
        /// The last lines the host wrote to its standard error (the FMU's
        /// log messages among them).
        log: Vec<String>,
    },
}

/// The message of [`CoreError::Discarded`]: names the instance, the
/// function, the status, the times and quotes the FMU's log lines.
#[allow(clippy::too_many_arguments)]
fn discard_message(
    subsystem: &str,
    function: &str,
    (t, h, last_successful_time): (&f64, &f64, &f64),
    early_return: &bool,
    log: &[String],
    stops: bool,
) -> String {
    let last_name = if function.starts_with("fmi2") {
        "fmi2LastSuccessfulTime"
    } else {
        "lastSuccessfulTime"
    };
    let what = if *early_return {
        "returned early (earlyReturn)"
    } else {
        "returned Discard"
    };
    // The step's end, not its size: `t + h` is the next communication
    // point exactly, where `h` itself may carry an ulp of the subtraction
    // that made it (0.010000000000000009).
    let mut msg = format!(
        "FMU instance '{subsystem}': {function} {what} in the step from t = {t} to {}: the FMU stopped at {last_name} = {last_successful_time}",
        t + h
    );
    if stops {
        msg.push_str("; the master cannot redo the step, so the run stops");
    }
    if !log.is_empty() {
        msg.push_str("; the FMU logged:\n  ");
        msg.push_str(&log.join("\n  "));
    }
    msg
}

impl CoreError {
    /// What went wrong in an attempt a master retries with a smaller step
    /// (the message without what a master that cannot retry does next),
    /// for the error of a master that gives up.
    pub fn attempt_failure(&self) -> String {
        match self {
            CoreError::Discarded {
                subsystem,
                function,
                t,
                h,
                last_successful_time,
                early_return,
                log,
            } => discard_message(
                subsystem,
                function,
                (t, h, last_successful_time),
                early_return,
                log,
                false,
            ),
            other => other.to_string(),
        }
    }
}

/// The message of [`CoreError::OutputWrite`]: the file, the OS error and
/// where the file ends.
fn output_write_message(path: &std::path::Path, error: &std::io::Error, t: f64) -> String {
    let ends = if t.is_nan() {
        "it holds no complete row".to_string()
    } else {
        format!("it ends on its last complete row, at t = {t}")
    };
    format!("cannot write {}: {error}; {ends}", path.display())
}

/// The note of an error about an output read only for the trace's rows:
/// when it was read before.
fn read_since_note(read_since: Option<f64>) -> String {
    match read_since {
        Some(t) => {
            format!(" (an output read only for the trace's rows; it was last read at t = {t})")
        }
        None => String::new(),
    }
}
