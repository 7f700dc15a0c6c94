//! Packing: the system's files copied into the FMU's resources with their
//! paths rewritten, the manifest, the model description, the library.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cosim_fmi::model_description::Causality;
use cosim_scenario::assemble::AssembleError;
use cosim_scenario::export::{ExportSpec, describe};
use fmu_kit::{FmiVersion, PackageRequest};

use crate::interface::{capabilities, model_spec};
use crate::manifest::{FORMAT, Manifest};

/// What to export.
#[derive(Debug, Clone)]
pub struct ExportRequest {
    /// The system's scenario file.
    pub system: PathBuf,
    /// The `.fmu` to write.
    pub output: PathBuf,
    /// FMI 2.0 or 3.0.
    pub version: FmiVersion,
    /// The model's name and identifier; the scenario file's stem when
    /// `None`.
    pub name: Option<String>,
    /// `<subsystem>.<variable>` exposed (inputs and outputs); when empty,
    /// every input nothing feeds inside and every output.
    pub exposes: Vec<String>,
    /// `<subsystem>.<parameter>` exposed as parameters.
    pub parameters: Vec<String>,
    /// One FMU wrapped: the exported variables keep its names.
    pub wrapped: bool,
    /// The `cosim-fmu` library.
    pub library: PathBuf,
    /// The `cosim` executable, packed as the host program when the system
    /// isolates an FMU (`isolation = "process"`).
    pub host: Option<PathBuf>,
}

/// What was exported.
#[derive(Debug, Clone)]
pub struct ExportReport {
    /// The model identifier.
    pub name: String,
    /// The exposed inputs, outputs and parameters, by name.
    pub inputs: Vec<String>,
    /// See `inputs`.
    pub outputs: Vec<String>,
    /// See `inputs`.
    pub parameters: Vec<String>,
    /// The files packed into `resources/system/` (scenarios, FMUs, input
    /// files), as their sources.
    pub packed: Vec<PathBuf>,
    /// The system's warnings, located in its files.
    pub warnings: Vec<cosim_scenario::ScenarioError>,
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The system does not assemble (located in its files).
    #[error("{0}")]
    System(#[from] AssembleError),
    /// Anything else, said in full.
    #[error("{0}")]
    Other(String),
}

fn other(e: impl std::fmt::Display) -> ExportError {
    ExportError::Other(e.to_string())
}

/// Exports `req.system` as one FMU at `req.output`.
pub fn export(req: &ExportRequest) -> Result<ExportReport, ExportError> {
    let name = model_name(req)?;
    if !req.library.is_file() {
        return Err(other(format!(
            "the exported FMU's library {} is missing: build it with `cargo build --release -p cosim-fmu` (or set COSIM_FMU_LIBRARY)",
            req.library.display()
        )));
    }
    let exposes = if req.exposes.is_empty() {
        cosim_scenario::export::default_exposes(&req.system)?
    } else {
        req.exposes.clone()
    };
    // Checked on the system as given first: errors name its own files.
    let checked = describe(&ExportSpec {
        system: req.system.clone(),
        name: name.clone(),
        exposes: exposes.clone(),
        parameters: req.parameters.clone(),
    })?;
    let staging = tempfile::Builder::new()
        .prefix("cosim-export-")
        .tempdir()
        .map_err(other)?;
    let resources = staging.path().join("resources");
    let (manifest, packed) = stage(req, &resources, &name, exposes, checked.uses_isolation)?;
    // Described from the packed copy: what the FMU will find is what was
    // checked.
    let exported = describe(&ExportSpec {
        system: resources.join(&manifest.system),
        name: name.clone(),
        exposes: manifest.exposes.clone(),
        parameters: manifest.parameters.clone(),
    })?;
    let model = model_spec(
        &exported,
        &name,
        std::sync::Arc::new(|_: &fmu_kit::Values, _: &str| {
            Err("not run by the exporter".to_string())
        }),
        req.wrapped,
    )
    .map_err(other)?;
    let request = PackageRequest {
        spec: &model,
        version: req.version,
        caps: capabilities(&exported),
        model_identifier: name.clone(),
    };
    fmu_kit::package_with_resources(&request, &req.library, Some(&resources), &req.output)
        .map_err(|e| other(format!("writing {}: {e}", req.output.display())))?;
    let named = |c: Causality| {
        exported
            .exposed()
            .iter()
            .filter(|v| v.causality == c)
            .map(|v| v.name.clone())
            .collect()
    };
    Ok(ExportReport {
        name,
        inputs: named(Causality::Input),
        outputs: named(Causality::Output),
        parameters: req.parameters.clone(),
        packed,
        warnings: checked.warnings,
    })
}

/// The model identifier: `--name`, else the system file's stem made a C
/// identifier.
fn model_name(req: &ExportRequest) -> Result<String, ExportError> {
    let name = match &req.name {
        Some(n) => n.clone(),
        None => identifier(
            &req.system
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
    };
    if !is_identifier(&name) {
        return Err(other(format!(
            "--name {name}: the model identifier must be a C identifier (letters, digits, '_'; not starting with a digit)"
        )));
    }
    Ok(name)
}

/// Writes the FMU's resources into `resources`: the system and what it
/// names, the manifest, the host program where an FMU is isolated. Returns
/// the manifest and the sources of the packed files.
fn stage(
    req: &ExportRequest,
    resources: &Path,
    name: &str,
    exposes: Vec<String>,
    isolated: bool,
) -> Result<(Manifest, Vec<PathBuf>), ExportError> {
    let mut stager = Stager {
        root: resources.join("system"),
        copies: BTreeMap::new(),
        names: Vec::new(),
    };
    let system = stager.scenario(&req.system)?;
    let manifest = Manifest {
        format: FORMAT,
        name: name.to_string(),
        system: format!("system/{system}"),
        exposes,
        parameters: req.parameters.clone(),
        wrapped: req.wrapped,
    };
    std::fs::write(resources.join(crate::manifest::FILE), manifest.to_text()).map_err(other)?;
    if isolated {
        let host = req.host.as_ref().ok_or_else(|| {
            other("the system runs an FMU in a host process (isolation = \"process\"), and no host program was given")
        })?;
        let packed = resources.join(crate::manifest::HOST);
        std::fs::create_dir_all(packed.parent().unwrap_or(resources)).map_err(other)?;
        std::fs::copy(host, &packed)
            .map_err(|e| other(format!("copying the host program {}: {e}", host.display())))?;
    }
    Ok((manifest, stager.copies.into_keys().collect()))
}

/// Copies scenario files and what they use under `root`, rewriting paths.
struct Stager {
    root: PathBuf,
    /// Source -> name under `root`.
    copies: BTreeMap<PathBuf, String>,
    /// Names given so far.
    names: Vec<String>,
}

impl Stager {
    /// Stages scenario `path`; returns its name under `root`.
    fn scenario(&mut self, path: &Path) -> Result<String, ExportError> {
        let source = path
            .canonicalize()
            .map_err(|e| other(format!("{}: {e}", path.display())))?;
        if let Some(name) = self.copies.get(&source) {
            return Ok(name.clone());
        }
        let text = std::fs::read_to_string(&source)
            .map_err(|e| other(format!("cannot read {}: {e}", source.display())))?;
        let mut table: toml::Table =
            toml::from_str(&text).map_err(|e| other(format!("{}: {e}", source.display())))?;
        let name = self.name_for(&source, "");
        self.copies.insert(source.clone(), name.clone());
        let dir = source.parent().unwrap_or(Path::new("/")).to_path_buf();
        // (Its outputs are the importer's: a nested system writes none.)
        table.remove("outputs");
        self.rewrite(&mut table, &dir, &source)?;
        let out = self.root.join(&name);
        std::fs::create_dir_all(&self.root).map_err(other)?;
        std::fs::write(&out, toml::to_string(&table).map_err(other)?).map_err(other)?;
        Ok(name)
    }

    /// Rewrites the paths of scenario table `table` (of file `file`, whose
    /// relative paths start at `dir`).
    fn rewrite(
        &mut self,
        table: &mut toml::Table,
        dir: &Path,
        file: &Path,
    ) -> Result<(), ExportError> {
        if let Some(toml::Value::Array(subsystems)) = table.get_mut("subsystems") {
            for s in subsystems.iter_mut().filter_map(toml::Value::as_table_mut) {
                if let Some(toml::Value::String(fmu)) = s.get_mut("fmu") {
                    *fmu = self.file(&dir.join(&*fmu), "fmus/", file)?;
                }
                match s.get_mut("system") {
                    Some(toml::Value::String(system)) => {
                        *system = self.scenario(&dir.join(&*system))?;
                    }
                    Some(toml::Value::Table(inline)) => {
                        inline.remove("outputs");
                        self.rewrite(inline, dir, file)?;
                    }
                    _ => {}
                }
            }
        }
        if let Some(toml::Value::Array(inputs)) = table.get_mut("inputs") {
            for i in inputs.iter_mut().filter_map(toml::Value::as_table_mut) {
                if let Some(toml::Value::String(csv)) = i.get_mut("file") {
                    *csv = self.file(&dir.join(&*csv), "inputs/", file)?;
                }
            }
        }
        Ok(())
    }

    /// Copies file `path` (named in scenario `by`) under `root/<folder>`;
    /// returns its path relative to `root`.
    fn file(&mut self, path: &Path, folder: &str, by: &Path) -> Result<String, ExportError> {
        let source = path.canonicalize().map_err(|e| {
            other(format!(
                "{} (named in {}): {e}",
                path.display(),
                by.display()
            ))
        })?;
        if let Some(name) = self.copies.get(&source) {
            return Ok(name.clone());
        }
        let name = self.name_for(&source, folder);
        let out = self.root.join(&name);
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(other)?;
        }
        std::fs::copy(&source, &out)
            .map_err(|e| other(format!("copying {}: {e}", source.display())))?;
        self.copies.insert(source, name.clone());
        Ok(name)
    }

    /// A name under `folder` for `source` not given before: its file name,
    /// or `<n>-<file name>` when two sources share one.
    fn name_for(&mut self, source: &Path, folder: &str) -> String {
        let file = source
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| "file".into());
        let mut name = format!("{folder}{file}");
        let mut n = 1;
        while self.names.contains(&name) {
            n += 1;
            name = format!("{folder}{n}-{file}");
        }
        self.names.push(name.clone());
        name
    }
}

/// `stem` made a C identifier: other characters become `_`, a leading digit
/// gets a `_` before it.
pub fn identifier(stem: &str) -> String {
    let mut id: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if id.is_empty() || id.starts_with(|c: char| c.is_ascii_digit()) {
        id.insert(0, '_');
    }
    id
}

fn is_identifier(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_become_identifiers() {
        assert_eq!(identifier("b3-three mass"), "b3_three_mass");
        assert_eq!(identifier("3mass"), "_3mass");
        assert!(is_identifier("_3mass"));
        assert!(!is_identifier("3mass"));
        assert!(!is_identifier(""));
    }
}
