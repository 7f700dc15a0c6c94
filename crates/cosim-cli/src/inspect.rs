//! `cosim inspect`: a readable (or JSON) summary of an FMU, or of every FMU
//! in a directory.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cosim_fmi::Fmu;
use cosim_fmi::archive::platform_directories;
use cosim_fmi::inspect::InspectReport;

use crate::console::{out, say};

/// Inspects `path`: an `.fmu` file, an unpacked FMU directory, a
/// directory holding `.fmu` files, or a scenario (its structure: bonds,
/// feed-through, algebraic loops and the zero-stability of every level).
pub fn run(path: &Path, json: bool) -> Result<()> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
    {
        if json {
            anyhow::bail!(
                "--json is for FMUs; for a scenario, `cosim inspect` prints its structure"
            );
        }
        let args = crate::run::RunArgs {
            scenario: path.to_path_buf(),
            set: Vec::new(),
            stop: None,
            step: None,
            out: None,
            start: None,
            output_interval: None,
            output_variables: Vec::new(),
            input_file: Vec::new(),
            scenario_file: Vec::new(),
            real_time: None,
            threads: None,
            isolation: None,
            interface: None,
            solver: None,
            relative_tolerance: None,
            log_fmi_calls: None,
            step_timeout: None,
            init_timeout: None,
            no_progress: true,
            check: false,
            plot: false,
        };
        return crate::run::check(&args, false);
    }
    let targets = targets(path)?;
    let mut reports = Vec::new();
    let mut failures = 0;
    for target in &targets {
        match report(target) {
            Ok(r) => reports.push(r),
            Err(e) => {
                failures += 1;
                say!("error: {e:#}");
            }
        }
    }
    if json {
        let text = if reports.len() == 1 && targets.len() == 1 {
            serde_json::to_string_pretty(&reports[0])?
        } else {
            serde_json::to_string_pretty(&reports)?
        };
        out!("{text}\n")?;
    } else {
        for (i, r) in reports.iter().enumerate() {
            let gap = if i > 0 { "\n" } else { "" };
            out!("{gap}{}", r.render_text())?;
        }
    }
    if failures > 0 {
        anyhow::bail!(
            "{failures} of {} FMUs could not be inspected",
            targets.len()
        );
    }
    Ok(())
}

fn targets(path: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    if meta.is_dir() && !path.join("modelDescription.xml").is_file() {
        let mut fmus: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("{}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("fmu")))
            .collect();
        fmus.sort();
        if fmus.is_empty() {
            anyhow::bail!("{}: no .fmu files in this directory", path.display());
        }
        Ok(fmus)
    } else {
        Ok(vec![path.to_path_buf()])
    }
}

fn report(path: &Path) -> Result<InspectReport> {
    let fmu = Fmu::open(path)?;
    let platforms = platform_directories(fmu.root());
    Ok(InspectReport::new(
        path,
        fmu.model_description(),
        Some(&platforms),
    ))
}
