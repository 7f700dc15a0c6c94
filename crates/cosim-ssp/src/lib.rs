//! Opening the system descriptions users already have as `cosim`
//! scenarios: SSP 1.0/2.0 (`.ssp` packages, `.ssd` system structure
//! descriptions with `.ssv` parameter sets) and libcosim's
//! `OspSystemStructure.xml` (OSP-IS, with `<model>_OspModelDescription.xml`
//! variable groups).
//!
//! An import writes the equivalent scenario TOML (what `cosim convert`
//! prints) and builds the [`Scenario`] from that text with
//! [`Scenario::from_str`], so an imported system is validated exactly like
//! a TOML scenario. Every emitted key and value remembers the element or
//! attribute of the SSP/OSP source it comes from, and every error or
//! warning of the scenario layer is reported there:
//!
//! ```text
//! SystemStructure.ssd:42:20: error: subsystem 'wheel' (QuarterCarWheelSuspension) has no variable 'F_cc'
//!    |
//! 42 |       startElement="wheel" startConnector="F_cc"
//!    |                                            ^^^^
//!    = help: did you mean 'F_c'?
//! ```
//!
//! Nested SSP systems (`<ssd:System>` among the elements of a system, to
//! any depth) become nested scenarios (`system = { ... }` tables): their
//! connectors become the `exposes` of the nested system, and connections
//! to them connections to `<nested>.<subsystem>.<variable>`.
//!
//! What has no equivalent in `cosim` (a system in another SSD, an OSP
//! `Sum` function, a mapping transformation ...) is reported by element
//! name and line ([`Import::unsupported`]); `cosim run` refuses such a
//! system, and `cosim convert` writes the rest with a comment listing what
//! was left out. `docs/ssp.md` has the whole mapping.
//!
//! ```no_run
//! # fn demo() -> Result<(), cosim_ssp::ImportError> {
//! use cosim_scenario::Overrides;
//! let imported = cosim_ssp::prepare("system.ssp".as_ref(), &Overrides::default(), None)?;
//! for d in &imported.diagnostics {
//!     eprintln!("{d}");
//! }
//! let outcome = cosim_scenario::runner::run(imported.prepared, Vec::new(), None);
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

mod archive;
mod common;
mod draft;
mod emit;
mod models;
mod osp;
mod source;
mod ssp;
mod xml;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosim_fmi::ModelDescription;
use cosim_scenario::runner::{self, PrepareError, Prepared};
use cosim_scenario::{Overrides, ResolvedScenario, Scenario, ScenarioError, nest};

pub use source::{Diagnostic, ImportError, Severity};

use crate::common::Ctx;
use crate::emit::SpanMap;
use crate::source::{Sources, Src};

/// The kind of system description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// SSP: an `.ssp` package or an `.ssd` file.
    Ssp,
    /// libcosim's `OspSystemStructure.xml`.
    Osp,
}

/// The name of an OSP system structure in a directory.
pub const OSP_FILE: &str = "OspSystemStructure.xml";
/// The name of the default SSD (at the root of an `.ssp`).
pub const SSD_FILE: &str = archive::DEFAULT_SSD;

/// True when `path` is read by this crate rather than as a TOML scenario:
/// an `.ssp`, `.ssd` or `.xml` file, or a directory holding an
/// `OspSystemStructure.xml` or a `SystemStructure.ssd`.
pub fn is_system_structure(path: &Path) -> bool {
    if path.is_dir() {
        return path.join(OSP_FILE).is_file() || path.join(SSD_FILE).is_file();
    }
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "ssp" | "ssd" | "xml"))
}

/// How to import.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Where the TOML will be written (its directory should exist). FMU
    /// paths are then written relative to its directory and the scenario
    /// is read as if from that file;
    /// `None`: the scenario is read as if from the source file, with
    /// absolute FMU paths.
    pub toml_path: Option<PathBuf>,
    /// Where to extract an `.ssp` package (created if needed; files in it
    /// are overwritten). `None`: a private temporary directory, removed
    /// when the [`Import`] is dropped.
    pub extract_to: Option<PathBuf>,
}

/// An imported system: the equivalent scenario TOML, where every part of
/// it comes from, and what could not be mapped.
#[derive(Debug)]
pub struct Import {
    format: Format,
    /// The SSD / OSP file (inside an `.ssp`: `system.ssp/SystemStructure.ssd`).
    source: PathBuf,
    scenario_path: PathBuf,
    toml: String,
    map: SpanMap,
    sources: Sources,
    diagnostics: Vec<Diagnostic>,
    unsupported: Vec<Diagnostic>,
    models: Vec<(String, Arc<ModelDescription>)>,
    /// `[simulation] start`, `stop` as imported.
    times: (Option<f64>, Option<f64>),
    _extracted: Option<tempfile::TempDir>,
}

/// A scenario prepared from an SSP/OSP file, and what the import and the
/// scenario layer had to say (notes and warnings, located in the source).
pub struct PreparedImport {
    /// Ready to run with [`runner::run`].
    pub prepared: Prepared,
    /// Notes and warnings, in the SSP/OSP source (the resolved scenario's
    /// warnings are moved here, re-located).
    pub diagnostics: Vec<Diagnostic>,
}

/// Imports the SSP/OSP system at `path` (an `.ssp`, `.ssd` or
/// `OspSystemStructure.xml` file, or a directory holding one), reading the
/// model description of every FMU it names.
///
/// # Errors
///
/// [`ImportError`] with every located error: unreadable or malformed XML
/// (line and column), a file that is neither SSP nor OSP, an FMU that
/// cannot be read, a reference to an unknown element or variable group...
/// Elements that cannot be mapped are not errors here: see
/// [`Import::unsupported`].
pub fn import(path: &Path, options: &ImportOptions) -> Result<Import, ImportError> {
    import_with_step(path, options, None)
}

/// [`import`], with `--step` given: nested SSP systems that take the step
/// of the level above then take it from the top level's `step`.
fn import_with_step(
    path: &Path,
    options: &ImportOptions,
    step: Option<f64>,
) -> Result<Import, ImportError> {
    let mut ctx = Ctx::default();
    let mut extracted = None;
    let whole = |m: String| ImportError::one(Diagnostic::new(Severity::Error, path, m));
    let path_abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    // Find the file to read.
    let (file, archive) = if path.is_dir() {
        let osp = path_abs.join(OSP_FILE);
        let ssd = path_abs.join(SSD_FILE);
        match (osp.is_file(), ssd.is_file()) {
            (true, false) => (osp, None),
            (false, true) => (ssd, None),
            (true, true) => {
                return Err(whole(format!(
                    "the directory holds both {OSP_FILE} and {SSD_FILE}: name the file to use"
                )));
            }
            (false, false) => {
                return Err(whole(format!(
                    "the directory holds neither {OSP_FILE} nor {SSD_FILE}"
                )));
            }
        }
    } else if !path.exists() {
        return Err(whole("no such file or directory".to_string()));
    } else if path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("ssp"))
    {
        let dir = match &options.extract_to {
            Some(d) => std::path::absolute(d).unwrap_or_else(|_| d.clone()),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("cosim-ssp-")
                    .tempdir()
                    .map_err(|e| whole(format!("cannot create a temporary directory: {e}")))?;
                let p = t.path().to_path_buf();
                extracted = Some(t);
                p
            }
        };
        archive::extract_ssp(&path_abs, &dir).map_err(whole)?;
        (dir.join(SSD_FILE), Some((dir, path_abs.clone())))
    } else {
        (path_abs.clone(), None)
    };

    // Read it: SSP or OSP by the root element.
    let input = ssp::SspInput {
        ssd: file.clone(),
        archive,
    };
    let shown = input.display(&file);
    let doc = xml::read(&mut ctx.sources, &file, &shown)?;
    let (format, draft) = match doc.root.local() {
        "OspSystemStructure" => (
            Format::Osp,
            osp::read_doc(&mut ctx, &file, doc.file, &doc.root),
        ),
        "SystemStructureDescription" => (
            Format::Ssp,
            ssp::read_doc(&mut ctx, &input, doc.file, &doc.root, step),
        ),
        other => {
            let d = ctx.sources.error(
                doc.root.src(doc.file),
                format!(
                    "neither an SSP system structure description nor an OSP system structure: the root element is <{other}>"
                ),
            );
            return Err(ImportError::one(d.with_help(
                "expected <ssd:SystemStructureDescription> (SSP) or <OspSystemStructure> (OSP)",
            )));
        }
    };
    ctx.finish();
    let Some(mut draft) = draft else {
        return Err(ImportError {
            diagnostics: ctx.diags,
        });
    };
    if ctx.has_errors() {
        let mut diagnostics: Vec<Diagnostic> = ctx
            .diags
            .into_iter()
            .filter(|d| d.severity != Severity::Note)
            .collect();
        diagnostics.extend(ctx.unsupported);
        diagnostics.sort_by_key(|d| (d.file.clone(), d.line, d.column));
        return Err(ImportError { diagnostics });
    }

    draft.skipped.sort_by_key(|s| (s.src.file, s.src.start));
    ctx.unsupported
        .sort_by_key(|d| (d.file.clone(), d.line, d.column));
    // The TOML.
    let (scenario_path, base) = match &options.toml_path {
        Some(t) => {
            let t = std::path::absolute(t).unwrap_or_else(|_| t.clone());
            let base = t
                .parent()
                .map(|p| p.canonicalize().unwrap_or_else(|_| p.to_path_buf()));
            (t, base)
        }
        None => (
            input
                .archive
                .as_ref()
                .map_or(file.clone(), |(_, ssp)| ssp.clone()),
            None,
        ),
    };
    let source_name = shown
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let source_name = match &input.archive {
        Some((_, ssp)) => format!(
            "{} ({source_name})",
            ssp.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        ),
        None => source_name,
    };
    let (toml, map) = emit::emit(&draft, &ctx.sources, &source_name, base.as_deref());
    let mut models = Vec::new();
    // Nested systems are resolved from their own subsystems (`resolve`).
    for s in draft.subsystems.iter().filter(|s| s.system.is_none()) {
        let md = ctx
            .models
            .load(&s.fmu)
            .map_err(|m| ImportError::one(ctx.sources.error(s.fmu_src, m)))?;
        models.push((s.name.clone(), md));
    }
    let mut diagnostics = ctx.diags;
    diagnostics.sort_by_key(|d| (d.file.clone(), d.line, d.column));
    Ok(Import {
        format,
        source: shown,
        scenario_path,
        toml,
        map,
        sources: ctx.sources,
        diagnostics,
        unsupported: ctx.unsupported,
        models,
        times: (
            draft.start.as_ref().map(|v| v.value),
            draft.stop.as_ref().map(|v| v.value),
        ),
        _extracted: extracted,
    })
}

impl Import {
    /// SSP or OSP.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The SSD or OSP file read (inside an `.ssp`:
    /// `system.ssp/SystemStructure.ssd`).
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// The scenario TOML (what `cosim convert` writes).
    pub fn toml(&self) -> &str {
        &self.toml
    }

    /// Notes and warnings of the import (ignored annotations, renamed
    /// components, parameter values ignored as SSP specifies ...).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The elements that could not be mapped, each an error naming the
    /// element and its line. `cosim run` refuses a system with any;
    /// the TOML leaves them out and lists them in a comment.
    pub fn unsupported(&self) -> &[Diagnostic] {
        &self.unsupported
    }

    /// The scenario, parsed from [`Import::toml`] as if read from the
    /// TOML path (or the source file), with its FMU files checked.
    ///
    /// # Errors
    ///
    /// The scenario layer's errors, located in the SSP/OSP source.
    pub fn scenario(&self) -> Result<Scenario, ImportError> {
        let scenario = Scenario::from_str(&self.toml, &self.scenario_path)
            .map_err(|e| self.remap_error(&e))?;
        scenario
            .check_fmu_files()
            .map_err(|e| self.remap_error(&e))?;
        Ok(scenario)
    }

    /// Resolves `scenario` against the model descriptions read during the
    /// import (every check short of opening the FMUs' binaries; with
    /// nested systems, their FMUs are unpacked to resolve each level as
    /// `cosim run` does).
    ///
    /// # Errors
    ///
    /// The scenario layer's errors, located in the SSP/OSP source.
    pub fn resolve(&self, scenario: &Scenario) -> Result<ResolvedScenario, ImportError> {
        if scenario.subsystems().iter().any(|s| s.system.is_some()) {
            // As `runner::prepare_scenario`: nested systems run on the
            // times of the top level.
            let (start, stop) = match (self.times.0, self.times.1) {
                (Some(a), Some(b)) => (a, b),
                (a, _) => (a.unwrap_or(0.0), a.unwrap_or(0.0) + 1.0),
            };
            let nodes = nest::prepare_nodes(scenario, Some(start), Some(stop))
                .map_err(|e| self.remap_error(&e))?;
            let models: Vec<(&str, &ModelDescription)> = scenario
                .subsystems()
                .iter()
                .zip(&nodes)
                .map(|(s, n)| (s.name.value.as_str(), n.model_description()))
                .collect();
            return scenario.resolve(&models).map_err(|e| self.remap_error(&e));
        }
        let models: Vec<(&str, &ModelDescription)> = self
            .models
            .iter()
            .map(|(n, md)| (n.as_str(), md.as_ref()))
            .collect();
        scenario.resolve(&models).map_err(|e| self.remap_error(&e))
    }

    /// A scenario error or warning, moved to the element or attribute of
    /// the SSP/OSP source that the offending TOML comes from.
    pub fn remap(&self, e: &ScenarioError) -> Diagnostic {
        let severity = if e.is_error() {
            Severity::Error
        } else {
            Severity::Warning
        };
        let message = self.fix_line_numbers(&e.message);
        let mut d = match e.span.and_then(|s| self.map.lookup(s.start)) {
            Some(src) => self.sources.diag(severity, src, message),
            None => Diagnostic::new(severity, &self.source, message),
        };
        d.help = e.help.as_ref().map(|h| self.fix_line_numbers(h));
        d.notes = e.notes.iter().map(|n| self.fix_line_numbers(n)).collect();
        d.argument = e.argument.clone();
        // Nothing in the file gave a stop time or a step: the command line can.
        if e.span.is_none() && e.argument.is_none() {
            if e.message.starts_with("no stop time") {
                d.help = Some(match self.format {
                    Format::Ssp => {
                        "give it in <ssd:DefaultExperiment stopTime=...> or with --stop <seconds>"
                            .to_string()
                    }
                    Format::Osp => "give it in <EndTime> or with --stop <seconds>".to_string(),
                });
            } else if e.message.contains("needs a step") {
                d.help = Some(match self.format {
                    Format::Ssp => {
                        "SSP has no step size: give it with --step <seconds>".to_string()
                    }
                    Format::Osp => "give it in <BaseStepSize> or with --step <seconds>".to_string(),
                });
            }
        }
        // A message about a scenario key: show the key the import wrote.
        if e.message.contains(" in [")
            && let Some(line) = e
                .line
                .and_then(|l| self.toml.lines().nth(l.saturating_sub(1)))
        {
            let line = line.split("  #").next().unwrap_or(line).trim();
            d.notes.push(format!("the import wrote it as `{line}`"));
        }
        if d.help
            .as_ref()
            .is_some_and(|h| h.contains(" = ") || h.contains("[["))
        {
            d.notes.push(format!(
                "the help refers to the equivalent TOML scenario: `cosim convert {} --to toml -o scenario.toml` writes it",
                self.source.display()
            ));
        }
        d
    }

    fn remap_error(&self, e: &ScenarioError) -> ImportError {
        ImportError::one(self.remap(e))
    }

    /// Replaces TOML line numbers ("line 12", "lines 12 and 30") in a
    /// message of the scenario layer by the source lines they come from.
    fn fix_line_numbers(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = rest.find("line") {
            let (head, tail) = rest.split_at(i);
            out.push_str(head);
            let word_start = !head.ends_with(|c: char| c.is_alphanumeric() || c == '_');
            let word_len = if !word_start {
                0
            } else if tail.starts_with("lines ") {
                6
            } else if tail.starts_with("line ") {
                5
            } else {
                0
            };
            if word_len == 0 {
                out.push_str("line");
                rest = tail.get(4..).unwrap_or_default();
                continue;
            }
            out.push_str(tail.get(..word_len).unwrap_or_default());
            let mut t = tail.get(word_len..).unwrap_or_default();
            loop {
                let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
                if digits.is_empty() {
                    break;
                }
                let mapped = digits
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| self.toml_line_source(n))
                    .map(|src| self.sources.line(src).to_string());
                out.push_str(mapped.as_deref().unwrap_or(&digits));
                t = t.get(digits.len()..).unwrap_or_default();
                let sep = [" and ", ", "].into_iter().find(|s| {
                    t.starts_with(s)
                        && t.get(s.len()..)
                            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
                });
                match sep {
                    Some(s) => {
                        out.push_str(s);
                        t = t.get(s.len()..).unwrap_or_default();
                    }
                    None => break,
                }
            }
            rest = t;
        }
        out.push_str(rest);
        out
    }

    /// The source of the first mapped byte of TOML line `line` (1-based).
    fn toml_line_source(&self, line: usize) -> Option<Src> {
        let start = if line <= 1 {
            0
        } else {
            self.toml
                .match_indices('\n')
                .nth(line - 2)
                .map(|(i, _)| i + 1)?
        };
        let text = self.toml.get(start..)?;
        let indent = text.len() - text.trim_start_matches([' ', '\t']).len();
        self.map.lookup(start + indent)
    }
}

/// Imports the SSP/OSP system at `path`, applies the command-line
/// overrides and prepares it like [`runner::prepare`] does a TOML scenario
/// (FMUs opened, resolved, assembled).
///
/// # Errors
///
/// Every element that cannot be mapped (the system would run differently
/// from what it describes), and every import or scenario error, located in
/// the SSP/OSP source.
pub fn prepare(
    path: &Path,
    overrides: &Overrides,
    threads: Option<usize>,
) -> Result<PreparedImport, ImportError> {
    let import = import_with_step(path, &ImportOptions::default(), overrides.step)?;
    if !import.unsupported.is_empty() {
        let mut diagnostics = import.unsupported.clone();
        if let Some(last) = diagnostics.last_mut() {
            last.help = Some(format!(
                "`cosim convert {} --to toml -o scenario.toml` writes the rest as a scenario to edit and run",
                path.display()
            ));
        }
        return Err(ImportError { diagnostics });
    }
    let mut scenario = import.scenario()?;
    scenario
        .apply_overrides(overrides)
        .map_err(|e| import.remap_error(&e))?;
    let mut prepared = runner::prepare_scenario(&scenario, threads).map_err(|e| match e {
        PrepareError::Scenario(s) => import.remap_error(&s),
        PrepareError::Assemble(a) => ImportError::one(Diagnostic::new(
            Severity::Error,
            &import.source,
            a.to_string(),
        )),
    })?;
    let mut diagnostics = import.diagnostics.clone();
    diagnostics.extend(
        std::mem::take(&mut prepared.resolved.warnings)
            .iter()
            .map(|w| import.remap(w)),
    );
    Ok(PreparedImport {
        prepared,
        diagnostics,
    })
}
