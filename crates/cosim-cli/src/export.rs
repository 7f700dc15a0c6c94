//! `cosim export`: a system packed as one FMU (`docs/export.md`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cosim_export::{ExportError, ExportRequest};
use cosim_ssp::ImportOptions;

use crate::console::{count, say, shown};
use crate::run::{Failed, exit};

/// Arguments of `cosim export`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The system: a scenario (.toml), an SSP (.ssp package or .ssd file)
    /// or an OSP system structure (OspSystemStructure.xml, or a directory
    /// holding it); or one FMU, wrapped (a Model Exchange FMU integrated by
    /// cosim's solver inside a Co-Simulation FMU).
    pub system: PathBuf,
    /// The FMU to write.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// The FMI version of the FMU.
    #[arg(long, value_parser = ["2", "3"], default_value = "2")]
    pub fmi: String,
    /// The model's name and identifier (default: the system file's name).
    #[arg(long)]
    pub name: Option<String>,
    /// An inner input fed from outside or an inner output read outside,
    /// `<subsystem>.<variable>` (an FMU's own: `<variable>`; repeatable;
    /// default: every input nothing feeds inside, and every output).
    #[arg(long, value_name = "SUBSYSTEM.VARIABLE")]
    pub expose: Vec<String>,
    /// A parameter of an inner subsystem the importer may set,
    /// `<subsystem>.<parameter>` (repeatable).
    #[arg(long, value_name = "SUBSYSTEM.PARAMETER")]
    pub parameter: Vec<String>,
    /// The interface of the FMU written: `cs` (Co-Simulation), the one an
    /// exported FMU has.
    #[arg(long, value_parser = ["cs"], default_value = "cs")]
    pub interface: String,
    /// SYSTEM an FMU with Model Exchange: the solver inside, `bdf` (the
    /// default) or `rk45`.
    #[arg(long, value_parser = ["bdf", "rk45"])]
    pub solver: Option<String>,
    /// SYSTEM an FMU with Model Exchange: the solver's relative tolerance
    /// (default: the FMU's DefaultExperiment tolerance, else 1e-5).
    #[arg(long, value_name = "TOL", allow_negative_numbers = true)]
    pub relative_tolerance: Option<f64>,
}

/// Runs `cosim export`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    let system = System::of(args)?;
    let request = request(args, &system)?;
    let report = match cosim_export::export(&request) {
        Ok(r) => r,
        Err(ExportError::System(e)) => {
            say!("{}", system.as_given(args, &request, e.to_string()));
            return Err(Failed(exit::BAD_INPUT).into());
        }
        Err(e) => return Err(e.into()),
    };
    for w in &report.warnings {
        say!("{w}");
    }
    if !quiet {
        say!(
            "{}: {} (FMI {}) with {}, {}, {}; {} packed",
            shown(&args.output).display(),
            report.name,
            args.fmi,
            count(report.inputs.len(), "input", "inputs"),
            count(report.outputs.len(), "output", "outputs"),
            count(report.parameters.len(), "parameter", "parameters"),
            count(report.packed.len(), "file", "files"),
        );
    }
    Ok(())
}

/// The system to export, as a scenario file: SYSTEM itself, or the
/// scenario an SSP/OSP system or one FMU makes, written into a directory
/// that lives as long as this.
struct System {
    scenario: PathBuf,
    /// One FMU wrapped: the name of its subsystem in the scenario.
    wrapped: Option<String>,
    /// Where a made scenario lives (removed when this is dropped).
    made: Option<tempfile::TempDir>,
}

impl System {
    fn of(args: &Args) -> Result<System> {
        let structure = cosim_ssp::is_system_structure(&args.system);
        let is_fmu = !structure && cosim_scenario::single::is_fmu(&args.system);
        if !is_fmu && (args.solver.is_some() || args.relative_tolerance.is_some()) {
            say!(
                "error: --solver and --relative-tolerance are for an FMU given as SYSTEM; a scenario sets the solver of each Model Exchange subsystem in [subsystems.solver]"
            );
            return Err(Failed(exit::BAD_INPUT).into());
        }
        if !structure && !is_fmu {
            return Ok(System {
                scenario: args.system.clone(),
                wrapped: None,
                made: None,
            });
        }
        let made = tempfile::Builder::new()
            .prefix("cosim-export-system-")
            .tempdir()?;
        let scenario = if is_fmu {
            from_fmu(args, made.path())?
        } else {
            from_system_structure(&args.system, made.path())?
        };
        let wrapped = match is_fmu {
            true => Some(
                cosim_scenario::Scenario::load(&scenario)?.subsystems()[0]
                    .name
                    .value
                    .clone(),
            ),
            false => None,
        };
        Ok(System {
            scenario,
            wrapped,
            made: Some(made),
        })
    }

    /// `names` of variables as the system names them: an FMU's own names
    /// prefixed with its subsystem's.
    fn inner(&self, names: &[String]) -> Vec<String> {
        match &self.wrapped {
            Some(sub) => names.iter().map(|n| format!("{sub}.{n}")).collect(),
            None => names.to_vec(),
        }
    }

    /// An error's `text` said of SYSTEM as given (an FMU's variables by
    /// their own names).
    fn as_given(&self, args: &Args, request: &ExportRequest, text: String) -> String {
        let Some(sub) = &self.wrapped else {
            return text;
        };
        text.replace(
            &request.system.display().to_string(),
            &args.system.display().to_string(),
        )
        .replace(&format!("--expose {sub}."), "--expose ")
        .replace(&format!("--parameter {sub}."), "--parameter ")
    }
}

/// What to export, from the arguments.
fn request(args: &Args, system: &System) -> Result<ExportRequest> {
    // A made scenario's file name says nothing: the model is named after
    // SYSTEM.
    let made = system.made.is_some();
    Ok(ExportRequest {
        system: system.scenario.clone(),
        output: args.output.clone(),
        version: if args.fmi == "3" {
            fmu_kit::FmiVersion::Fmi3
        } else {
            fmu_kit::FmiVersion::Fmi2
        },
        name: args.name.clone().or_else(|| {
            made.then(|| args.system.file_stem())
                .flatten()
                .map(|s| cosim_export::pack::identifier(&s.to_string_lossy()))
        }),
        exposes: system.inner(&args.expose),
        parameters: system.inner(&args.parameter),
        wrapped: system.wrapped.is_some(),
        library: library()?,
        host: std::env::current_exe().ok(),
    })
}

/// The `cosim-fmu` library the FMU carries: `COSIM_FMU_LIBRARY`, else
/// `libcosim_fmu.so` beside this executable (where cargo builds both).
fn library() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("COSIM_FMU_LIBRARY") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().context("finding the cosim executable")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    Ok(dir.join(format!(
        "{}cosim_fmu{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )))
}

/// The scenario of one FMU (`cosim convert Model.fmu`), written into
/// `dir`: its Model Exchange interface where it has one, integrated by the
/// solver the options name.
fn from_fmu(args: &Args, dir: &Path) -> Result<PathBuf> {
    let path = dir.join("system.toml");
    let fmu = cosim_fmi::Fmu::open(&args.system)
        .with_context(|| format!("cannot open {}", args.system.display()))?;
    let has_me = fmu.model_description().model_exchange.is_some();
    let overrides = cosim_scenario::Overrides {
        interface: has_me.then_some(cosim_scenario::FmuInterface::ModelExchange),
        solver: cosim_scenario::SolverSpec {
            method: args.solver.as_deref().map(|s| match s {
                "rk45" => cosim_scenario::SolverMethod::Rk45,
                _ => cosim_scenario::SolverMethod::Bdf,
            }),
            relative_tolerance: args.relative_tolerance,
            ..cosim_scenario::SolverSpec::default()
        },
        ..cosim_scenario::Overrides::default()
    };
    let text = cosim_scenario::single::convert(&args.system, &overrides, Some(&path))
        .map_err(|e| anyhow::anyhow!(e))?;
    std::fs::write(&path, text)?;
    Ok(path)
}

/// The TOML scenario of an SSP/OSP system, written into `dir` with its
/// files, as `cosim convert` writes it.
fn from_system_structure(input: &Path, dir: &Path) -> Result<PathBuf> {
    let toml_path = dir.join("system.toml");
    let options = ImportOptions {
        toml_path: Some(toml_path.clone()),
        extract_to: Some(dir.join("files")),
        stop: None,
        step: None,
    };
    let fail = |diagnostics: Vec<cosim_ssp::Diagnostic>| -> anyhow::Error {
        for d in diagnostics {
            say!("{d}");
        }
        Failed(exit::BAD_INPUT).into()
    };
    let import = cosim_ssp::import(input, &options).map_err(|e| fail(e.diagnostics))?;
    let conversion = import.convert().map_err(|e| fail(e.diagnostics))?;
    if !conversion.before_run.is_empty() {
        return Err(fail(conversion.before_run));
    }
    std::fs::write(&toml_path, &conversion.toml)?;
    Ok(toml_path)
}
