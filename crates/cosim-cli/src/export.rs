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
    /// holding it).
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
    /// `<subsystem>.<variable>` (repeatable; default: every input nothing
    /// feeds inside, and every output).
    #[arg(long, value_name = "SUBSYSTEM.VARIABLE")]
    pub expose: Vec<String>,
    /// A parameter of an inner subsystem the importer may set,
    /// `<subsystem>.<parameter>` (repeatable).
    #[arg(long, value_name = "SUBSYSTEM.PARAMETER")]
    pub parameter: Vec<String>,
}

/// Runs `cosim export`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    let staging;
    let system = if cosim_ssp::is_system_structure(&args.system) {
        staging = tempfile::Builder::new()
            .prefix("cosim-export-ssp-")
            .tempdir()?;
        from_system_structure(&args.system, staging.path())?
    } else {
        args.system.clone()
    };
    let request = ExportRequest {
        system,
        output: args.output.clone(),
        version: if args.fmi == "3" {
            fmu_kit::FmiVersion::Fmi3
        } else {
            fmu_kit::FmiVersion::Fmi2
        },
        name: args.name.clone().or_else(|| {
            cosim_ssp::is_system_structure(&args.system)
                .then(|| args.system.file_stem())
                .flatten()
                .map(|s| {
                    s.to_string_lossy()
                        .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
                })
        }),
        exposes: args.expose.clone(),
        parameters: args.parameter.clone(),
        library: library()?,
        host: std::env::current_exe().ok(),
    };
    let report = match cosim_export::export(&request) {
        Ok(r) => r,
        Err(ExportError::System(e)) => {
            say!("{e}");
            return Err(Failed(exit::BAD_INPUT).into());
        }
        Err(e) => return Err(e.into()),
    };
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
