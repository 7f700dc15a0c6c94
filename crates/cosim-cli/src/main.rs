//! `cosim`: a co-simulation master for FMI 2.0 and 3.0.
//!
//! This binary only parses arguments and wires the library crates together:
//! `cosim-scenario` (scenario files, system assembly), `cosim-core`
//! (masters, outputs) and `cosim-fmi` (FMU import).

mod compare;
mod console;
mod convert;
mod ending;
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
    /// Run a scenario: write the trace, energy log, step log and summary.
    Run(run::RunArgs),
    /// Check a scenario without stepping: parse, load the FMUs, instantiate,
    /// initialise, structural checks, power bonds.
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
    /// description into a cosim TOML scenario.
    Convert(convert::Args),
    /// Host one FMU for a cosim master in another process (internal: used
    /// by `isolation = "process"`).
    #[command(hide = true)]
    Host(host::Args),
    /// Make the runs of a sweep one after the other, as `cosim sweep`
    /// hands them over on standard input (internal: the sweep's workers).
    #[command(hide = true)]
    SweepWorker,
    /// Summarise an FMU (or every FMU in a directory): identity, capabilities,
    /// variables, feed-through, power-bond candidates.
    Inspect {
        /// An .fmu file, an unpacked FMU directory, or a directory of .fmu files.
        path: PathBuf,
        /// Machine-readable JSON instead of text.
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
    let cli = Cli::parse();
    init_logging(cli.verbose, cli.quiet);
    let result = match &cli.command {
        Command::Run(args) => run::run(args, cli.quiet, cli.verbose),
        Command::Check(args) => run::check(args, cli.quiet),
        Command::Compare(args) => compare::run(args),
        Command::Plot(args) => plot::run(args, cli.quiet),
        Command::Sweep(args) => sweep::run(args, cli.quiet, cli.verbose),
        Command::SweepWorker => return cosim_sweep::worker::serve(),
        Command::Convert(args) => convert::run(args, cli.quiet),
        Command::Host(args) => host::run(args),
        Command::Inspect { path, json } => inspect::run(path, *json),
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
