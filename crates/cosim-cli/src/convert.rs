//! `cosim convert`: an SSP or OSP system description as a TOML scenario.

use std::path::{Path, PathBuf};

use anyhow::Result;
use cosim_scenario::{FmuInterface, SolverMethod, SolverSpec};
use cosim_ssp::{Diagnostic, ImportOptions, Severity};

use crate::console::{count, out, say, shown};
use crate::run::{Failed, exit};

/// Arguments of `cosim convert`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The system: an .ssp package, an .ssd file, an OspSystemStructure.xml
    /// or a directory holding one; or an FMU, for the scenario `cosim run
    /// Model.fmu` runs (with the options below), to grow from.
    pub input: PathBuf,
    /// The format to write.
    #[arg(long = "to", value_enum, default_value_t = Target::Toml)]
    pub to: Target,
    /// Write to this file instead of standard output (FMU paths in it are
    /// relative to its directory; on standard output they are absolute).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Where to extract the FMUs and files of an .ssp package, which the
    /// scenario then refers to (default: a directory named after the
    /// package, next to the output file or in the current directory).
    #[arg(long, value_name = "DIR")]
    pub extract_to: Option<PathBuf>,
    /// The options of `cosim run Model.fmu`, written into the scenario.
    #[command(flatten)]
    pub fmu: FmuOptions,
}

/// For an FMU: the options of `cosim run Model.fmu` the scenario is to
/// have (the same meaning as there).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct FmuOptions {
    /// An FMU: start time (default: its DefaultExperiment).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub start: Option<f64>,
    /// Stop time, written into the scenario (an FMU, or a system whose
    /// file gives none or another).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub stop: Option<f64>,
    /// The macro step (ECCO: the initial step), written into the scenario.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub step: Option<f64>,
    /// An FMU: a trace row every this many seconds.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub output_interval: Option<f64>,
    /// An FMU: the traced variables (names or globs).
    #[arg(long, value_name = "GLOB", num_args = 1..)]
    pub output_variables: Vec<String>,
    /// An FMU: a parameter or start value, `--set k=2` (repeatable).
    #[arg(long = "set", value_name = "VAR=VALUE")]
    pub set: Vec<String>,
    /// An FMU: an input file (CSV of time and values), repeatable.
    #[arg(long, value_name = "FILE")]
    pub input_file: Vec<PathBuf>,
    /// An FMU with both interfaces: the one to run, `cs` (Co-Simulation,
    /// the default) or `me` (Model Exchange, integrated by cosim's
    /// solver), written as `interface`.
    #[arg(long, value_parser = ["cs", "me"])]
    pub interface: Option<String>,
    /// A Model Exchange FMU: the solver, `bdf` (the default) or `rk45`,
    /// written into `[subsystems.solver]`.
    #[arg(long, value_parser = ["bdf", "rk45"])]
    pub solver: Option<String>,
    /// A Model Exchange FMU: the solver's relative tolerance (default: the
    /// FMU's DefaultExperiment tolerance, else 1e-5), written into
    /// `[subsystems.solver]`.
    #[arg(long, value_name = "TOL", allow_negative_numbers = true)]
    pub relative_tolerance: Option<f64>,
}

impl FmuOptions {
    /// Options for an FMU only (not `--stop`, `--step`).
    fn given(&self) -> bool {
        self.start.is_some()
            || self.output_interval.is_some()
            || !self.output_variables.is_empty()
            || !self.set.is_empty()
            || !self.input_file.is_empty()
            || self.interface.is_some()
            || self.solver.is_some()
            || self.relative_tolerance.is_some()
    }
}

/// Output formats of `cosim convert`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A cosim scenario (docs/scenario.md).
    Toml,
}

fn fail(diagnostics: impl IntoIterator<Item = impl std::fmt::Display>) -> anyhow::Error {
    for d in diagnostics {
        say!("{d}");
    }
    anyhow::Error::new(Failed(exit::BAD_INPUT))
}

/// Runs `cosim convert`; `quiet` leaves out notes and warnings (errors
/// are always printed).
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    macro_rules! say {
        ($($arg:tt)*) => {
            if !quiet {
                crate::console::say!($($arg)*);
            }
        };
    }
    let Target::Toml = args.to;
    let input = &args.input;
    if let Some(out) = &args.output
        && std::path::absolute(out).ok() == std::path::absolute(input).ok()
    {
        return Err(fail([format!(
            "error: the output {} is the input file",
            out.display()
        )]));
    }
    if !cosim_ssp::is_system_structure(input) && cosim_scenario::single::is_fmu(input) {
        return convert_fmu(args, quiet);
    }
    if args.fmu.given() {
        return Err(fail([
            "error: --start, --output-interval, --output-variables, --set, --input-file, --interface, --solver and --relative-tolerance are for converting an FMU (a system takes --stop and --step)".to_string(),
        ]));
    }
    let is_package = input.is_file()
        && input
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("ssp"));
    let extract_to = is_package.then(|| {
        args.extract_to.clone().unwrap_or_else(|| {
            let stem = input
                .file_stem()
                .map_or_else(|| PathBuf::from("ssp"), PathBuf::from);
            let dir = args
                .output
                .as_deref()
                .and_then(Path::parent)
                .unwrap_or(Path::new(""));
            dir.join(stem)
        })
    });
    // The scenario is checked where it will be written: relative FMU
    // paths need its directory.
    if let Some(parent) = args.output.as_deref().and_then(Path::parent)
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)
            .map_err(|e| fail([format!("error: cannot create {}: {e}", parent.display())]))?;
    }
    let options = ImportOptions {
        toml_path: args.output.clone(),
        extract_to: extract_to.clone(),
        stop: args.fmu.stop,
        step: args.fmu.step,
    };
    let import = cosim_ssp::import(input, &options).map_err(|e| fail(e.diagnostics))?;
    // The TOML must be a valid scenario: parse it and resolve it against
    // the model descriptions, as `cosim check` would; what only a run
    // needs (a stop time, a step, matching units) is a warning here.
    let conversion = import.convert().map_err(|e| fail(e.diagnostics))?;
    for d in import.diagnostics() {
        say!("{d}");
    }
    for d in conversion.before_run.iter().chain(&conversion.warnings) {
        say!("{d}");
    }
    let unsupported: Vec<Diagnostic> = import
        .unsupported()
        .iter()
        .cloned()
        .map(|mut d| {
            d.severity = Severity::Warning;
            d
        })
        .collect();
    for d in &unsupported {
        say!("{d}");
    }
    if !unsupported.is_empty() {
        say!(
            "warning: {} element(s) could not be converted (listed above and at the top of the scenario); the scenario leaves them out",
            unsupported.len()
        );
    }
    if !conversion.before_run.is_empty() {
        say!(
            "warning: cosim run and cosim check refuse the scenario as it stands: {} problem(s) to fix first (listed above and at the top of the scenario)",
            conversion.before_run.len()
        );
    }
    if let Some(dir) = &extract_to {
        say!(
            "note: the package's files are extracted into {}",
            dir.display()
        );
    }
    match &args.output {
        Some(out) => {
            std::fs::write(out, &conversion.toml)
                .map_err(|e| fail([format!("error: cannot write {}: {e}", out.display())]))?;
            let resolved = &conversion.resolved;
            say!(
                "{}: written from {} ({}, {}, {})",
                shown(out).display(),
                shown(import.source()).display(),
                count(resolved.subsystems.len(), "subsystem", "subsystems"),
                count(resolved.connections.len(), "connection", "connections"),
                count(resolved.bonds.len(), "bond", "bonds")
            );
        }
        None => out!("{}", conversion.toml)?,
    }
    Ok(())
}

/// `cosim convert Model.fmu`: the scenario `cosim run Model.fmu` runs with
/// the same options, commented, with paths relative to the output file.
fn convert_fmu(args: &Args, quiet: bool) -> Result<()> {
    let o = &args.fmu;
    let overrides = cosim_scenario::Overrides {
        set: o.set.clone(),
        start: o.start,
        stop: o.stop,
        step: o.step,
        output_interval: o.output_interval,
        output_variables: o.output_variables.clone(),
        input_files: o.input_file.clone(),
        interface: o.interface.as_deref().map(|s| match s {
            "me" => FmuInterface::ModelExchange,
            _ => FmuInterface::CoSimulation,
        }),
        solver: SolverSpec {
            method: o.solver.as_deref().map(|s| match s {
                "rk45" => SolverMethod::Rk45,
                _ => SolverMethod::Bdf,
            }),
            relative_tolerance: o.relative_tolerance,
            ..SolverSpec::default()
        },
        ..cosim_scenario::Overrides::default()
    };
    if let Some(parent) = args.output.as_deref().and_then(Path::parent)
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)
            .map_err(|e| fail([format!("error: cannot create {}: {e}", parent.display())]))?;
    }
    let text = cosim_scenario::single::convert(&args.input, &overrides, args.output.as_deref())
        .map_err(|e| fail([e]))?;
    match &args.output {
        Some(out) => {
            std::fs::write(out, &text)
                .map_err(|e| fail([format!("error: cannot write {}: {e}", out.display())]))?;
            if !quiet {
                say!(
                    "{}: written for {} (`cosim run {}` gives the same results)",
                    out.display(),
                    args.input.display(),
                    out.display()
                );
            }
        }
        None => out!("{text}")?,
    }
    Ok(())
}
