//! `cosim`: a co-simulation master for FMI 2.0 and 3.0.
//!
//! This binary only parses arguments and wires the library crates together:
//! `cosim-scenario` (scenario files, system assembly), `cosim-core`
//! (masters, outputs) and `cosim-fmi` (FMU import).

mod compare;
mod console;
mod convert;
mod ending;
mod export;
mod host;
mod inspect;
mod interrupt;
mod plot;
mod run;
mod sweep;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::console::say;

#[derive(Parser, Debug)]
#[command(
    name = "cosim",
    version,
    about = "Co-simulation master for FMI 2.0 and 3.0 FMUs",
    long_about = "Co-simulation master for FMI 2.0 and 3.0 FMUs.\n\nExit status: 0 success (also when an FMU ends the simulation itself), 1 the run failed (FMU error, divergence, a hung FMU call past step_timeout (default 600 s) or init_timeout (3600 s), an output that could not be written), 2 bad input (scenario, FMU file, arguments), 130 / 143 interrupted by SIGINT (Ctrl-C) / SIGTERM. docs/reliability.md lists every outcome."
)]
struct Cli {
    /// More log output (-v: info, -vv: debug including FMU log messages).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Only errors: no progress, no report.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario (TOML, SSP, OSP) or a single FMU: write the trace,
    /// energy log, step log and summary.
    Run(run::RunArgs),
    /// Check a scenario (TOML, SSP, OSP) or a single FMU without stepping:
    /// parse, load the FMUs, instantiate, initialise, structural checks,
    /// power bonds.
    Check(run::RunArgs),
    /// Accuracy of a run against a reference: errors per column and the
    /// power-bond metrics of sadjina2016 (mean step, mean transmitted power,
    /// mean |dP|, integral of residual power).
    Compare(compare::CompareArgs),
    /// Plot traces to SVG: one panel per unit, time across, a line style
    /// per file, a colour per column, a reference as a thin black line.
    Plot(plot::PlotArgs),
    /// Run a batch of variations of a scenario (step sizes, tolerances,
    /// masters, parameters), in parallel or sharded, with a summary table
    /// and plots.
    Sweep(sweep::Args),
    /// Convert an SSP (.ssp, .ssd) or OSP (OspSystemStructure.xml) system
    /// description, or an FMU (the scenario `cosim run Model.fmu` runs),
    /// into a cosim TOML scenario.
    Convert(convert::Args),
    /// Pack a system (scenario, SSP, OSP) as one FMU (FMI 2.0 or 3.0) that
    /// any importer runs, its master inside (docs/export.md).
    Export(export::Args),
    /// Host one FMU for a cosim master in another process (internal: used
    /// by `isolation = "process"`).
    #[command(hide = true)]
    Host(host::Args),
    /// Make the runs of a sweep one after the other, as `cosim sweep`
    /// hands them over on standard input (internal: the sweep's workers).
    #[command(hide = true)]
    SweepWorker,
    /// Summarise an FMU (or every FMU in a directory): identity, capabilities,
    /// variables, feed-through, power-bond candidates; or a system (scenario,
    /// SSP, OSP): its levels, routes, power bonds and step plan.
    #[command(
        long_about = "Summarise an FMU (or every FMU in a directory): identity, interfaces and the one that runs, capabilities, continuous states and event indicators, variables and their aliases, feed-through, power-bond candidates.\n\nOr a system (a scenario TOML, an SSP or OSP file): checked as `cosim check` checks it (its warnings on standard error), then every level of it on standard output: the subsystems (FMU, interface it runs, or nested system), the routes (which output feeds which input, through which functions, gains and offsets; input files, events, what crosses a nested level's boundary), the power bonds, the step plan (master, step, order of the subsystems, input extrapolation, step multiples, a nested master's steps), feed-through, algebraic loops and zero-stability."
    )]
    Inspect {
        /// What to inspect: an FMU (.fmu file or unpacked FMU directory), a
        /// directory of .fmu files, a scenario (.toml), an SSP (.ssp
        /// package or .ssd file) or OSP (OspSystemStructure.xml, or a
        /// directory holding it or a SystemStructure.ssd) system.
        path: PathBuf,
        /// Machine-readable JSON instead of text (FMUs only).
        #[arg(long)]
        json: bool,
    },
}

fn init_logging(verbose: u8, quiet: bool) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let mut directives = std::env::var("COSIM_LOG").unwrap_or_else(|_| default.to_string());
    if !directives.contains("diffsol") && !matches!(directives.as_str(), "debug" | "trace") {
        // The Model Exchange solver's own statistics at each restart (its
        // `info` lines) are for `-vv`; `-v` gives the run's totals.
        directives.push_str(",diffsol=warn");
    }
    let filter = tracing_subscriber::EnvFilter::try_new(&directives)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // A log line that cannot be written (standard error closed or full) is
    // dropped; the subscriber would otherwise report it with `eprintln!`,
    // which panics there.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colours(
            std::io::IsTerminal::is_terminal(&std::io::stderr()),
            |name| std::env::var_os(name),
        ))
        .log_internal_errors(false)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .try_init();
}

/// Whether messages on standard error get ANSI colours: on a terminal
/// only, unless `NO_COLOR` is set (to anything non-empty, no-color.org),
/// or anywhere when `CLICOLOR_FORCE` is set to something other than `0`
/// (bixense.com/clicolors). Redirected output (CI logs, files) stays plain.
fn colours(terminal: bool, var: impl Fn(&str) -> Option<std::ffi::OsString>) -> bool {
    let set = |name: &str| var(name).is_some_and(|v| !v.is_empty());
    if var("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    terminal && !set("NO_COLOR")
}

fn main() {
    let code = run_command();
    // Every output is written and flushed and every FMU freed by now. End
    // the process without the C exit handlers and library destructors:
    // some FMUs crash there (PythonFMU's runtime finalisation), which
    // would turn a complete run into exit status 139 (docs/reliability.md).
    cosim_fmi::ffi::exit_process(code)
}

/// A file size limit (`ulimit -f`) turns a write beyond it into SIGXFSZ,
/// whose default action kills the process with a core dump. With a
/// handler installed the write fails with EFBIG instead, and the output
/// that hit the limit is reported like a full device (the run stops
/// cleanly, exit status 1). Rust already ignores SIGPIPE the same way.
fn ignore_file_size_signal() {
    let noticed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGXFSZ, noticed);
}

/// Runs the command line's command; its exit status.
fn run_command() -> u8 {
    ignore_file_size_signal();
    let args = match log_file_after_a_space(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(message) => {
            say!("{message}");
            return run::exit::BAD_INPUT;
        }
    };
    let cli = Cli::parse_from(args);
    init_logging(cli.verbose, cli.quiet);
    let result = match &cli.command {
        Command::Run(args) => run::run(args, cli.quiet, cli.verbose),
        Command::Check(args) => run::check(args, cli.quiet),
        Command::Compare(args) => compare::run(args),
        Command::Plot(args) => plot::run(args, cli.quiet),
        Command::Sweep(args) => sweep::run(args, cli.quiet, cli.verbose),
        Command::SweepWorker => return cosim_sweep::worker::serve(),
        Command::Convert(args) => convert::run(args, cli.quiet),
        Command::Export(args) => export::run(args, cli.quiet),
        Command::Host(args) => host::run(args),
        Command::Inspect { path, json } => inspect::run(path, *json, cli.quiet),
    };
    match result {
        Ok(()) => 0,
        Err(e) => match e.downcast_ref::<run::Failed>() {
            Some(run::Failed(code)) => *code,
            None => {
                say!("error: {e:#}");
                run::exit::BAD_INPUT
            }
        },
    }
}

/// What a word after `--log-fmi-calls` is, by its name.
#[derive(Debug, PartialEq, Eq)]
enum After {
    /// A scenario, SSP/OSP file or FMU (`.toml`, `.ssp`, `.ssd`, `.xml`,
    /// `.fmu`, or a directory): the command's input; the option has no
    /// value (standard error).
    Input,
    /// A log file (`.log`, `.txt`), or `-` (standard error): the option's
    /// value.
    Log,
    /// Something else: ambiguous.
    Unknown,
}

fn after_log_option(word: &std::ffi::OsStr) -> After {
    if word == "-" {
        return After::Log;
    }
    let path = std::path::Path::new(word);
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("toml" | "fmu" | "ssp" | "ssd" | "xml") => After::Input,
        _ if path.is_dir() => After::Input,
        Some("log" | "txt") => After::Log,
        _ => After::Unknown,
    }
}

/// `--log-fmi-calls FILE` with a space, as fmusim's users write it, for
/// `run` and `check`: the option's value is optional (alone it logs to
/// standard error), so the word after it is taken as its file when that
/// ends in `.log` or `.txt` (or is `-`), left as the scenario when it
/// names one (`.toml`, `.ssp`, `.ssd`, `.xml`, `.fmu`, a directory), and
/// anything else is refused as ambiguous, saying to write `=FILE`.
fn log_file_after_a_space(
    args: Vec<std::ffi::OsString>,
) -> Result<Vec<std::ffi::OsString>, String> {
    let command = args
        .iter()
        .skip(1)
        .position(|a| !a.to_string_lossy().starts_with('-'))
        .map(|i| i + 1);
    let Some(first) = command.filter(|&i| args[i] == "run" || args[i] == "check") else {
        return Ok(args);
    };
    let mut out: Vec<std::ffi::OsString> = args[..=first].to_vec();
    let mut rest = args[first + 1..].iter().peekable();
    while let Some(a) = rest.next() {
        if a == "--" {
            out.push(a.clone());
            out.extend(rest.cloned());
            break;
        }
        let next = rest
            .peek()
            .filter(|n| **n == "-" || !n.to_string_lossy().starts_with('-'));
        match (a == "--log-fmi-calls", next) {
            (true, Some(word)) => match after_log_option(word) {
                After::Input => out.push(a.clone()),
                After::Log => {
                    let mut joined = std::ffi::OsString::from("--log-fmi-calls=");
                    joined.push(word);
                    out.push(joined);
                    rest.next();
                }
                After::Unknown => {
                    let w = word.to_string_lossy();
                    return Err(format!(
                        "error: --log-fmi-calls {w}: is '{w}' the file of the FMI call log or the scenario? For the log, write --log-fmi-calls={w} (with a space, the file's name must end in .log or .txt); --log-fmi-calls alone logs to standard error"
                    ));
                }
            },
            _ => out.push(a.clone()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::colours;
    use std::ffi::OsString;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    fn words(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn a_log_file_after_a_space_is_the_option_s_value() {
        let f = |line: &str| super::log_file_after_a_space(words(line));
        assert_eq!(
            f("cosim run s.toml --log-fmi-calls calls.log").unwrap(),
            words("cosim run s.toml --log-fmi-calls=calls.log")
        );
        assert_eq!(
            f("cosim -v check --log-fmi-calls CALLS.TXT s.toml").unwrap(),
            words("cosim -v check --log-fmi-calls=CALLS.TXT s.toml")
        );
        assert_eq!(
            f("cosim run --log-fmi-calls - s.toml").unwrap(),
            words("cosim run --log-fmi-calls=- s.toml")
        );
        // The scenario after it, another option, nothing: standard error.
        for line in [
            "cosim run --log-fmi-calls s.toml",
            "cosim run --log-fmi-calls Model.fmu",
            "cosim run s.toml --log-fmi-calls --out o",
            "cosim run s.toml --log-fmi-calls",
            "cosim run s.toml --log-fmi-calls=x.csv",
            "cosim run s.toml -- --log-fmi-calls calls",
            "cosim plot --log-fmi-calls calls",
        ] {
            assert_eq!(f(line).unwrap(), words(line), "{line}");
        }
        assert_eq!(
            f("cosim run s.toml --log-fmi-calls calls").unwrap_err(),
            "error: --log-fmi-calls calls: is 'calls' the file of the FMI call log or the scenario? For the log, write --log-fmi-calls=calls (with a space, the file's name must end in .log or .txt); --log-fmi-calls alone logs to standard error"
        );
    }

    #[test]
    fn colours_only_on_a_terminal_honouring_no_color_and_clicolor_force() {
        assert!(colours(true, env(&[])));
        assert!(!colours(false, env(&[])));
        assert!(!colours(true, env(&[("NO_COLOR", "1")])));
        assert!(colours(true, env(&[("NO_COLOR", "")])));
        assert!(colours(false, env(&[("CLICOLOR_FORCE", "1")])));
        assert!(!colours(false, env(&[("CLICOLOR_FORCE", "0")])));
        assert!(colours(
            true,
            env(&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")])
        ));
    }
}
