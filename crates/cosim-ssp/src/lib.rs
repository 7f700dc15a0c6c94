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
//! OSP `Sum` and `VectorSum` functions become `[[functions]]` tables and
//! connections to their ports (`SignalConnection`, and
//! `SignalGroupConnection` through the variable groups).
//!
//! What has no equivalent in `cosim` (a system in another SSD, the
//! superseded MSMI connections, a mapping transformation ...) is reported
//! by element name and line ([`Import::unsupported`]); `cosim run` refuses such a
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
use crate::draft::{Draft, Val};
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
    /// A stop time to write into the scenario (`cosim convert --stop`),
    /// replacing the file's.
    pub stop: Option<f64>,
    /// A step to write into the scenario (`cosim convert --step`),
    /// replacing the file's; nested SSP systems that take the step of the
    /// level above take it too.
    pub step: Option<f64>,
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
    /// What the TOML was written from, to write it again (`convert`).
    draft: Draft,
    /// The source as named in the TOML's header.
    source_name: String,
    /// The directory FMU paths are written relative to.
    base: Option<PathBuf>,
    _extracted: Option<cosim_fmi::extraction::ExtractionDir>,
}

/// What `cosim convert` writes ([`Import::convert`]): the scenario, also
/// when a run would refuse it as it stands.
#[derive(Debug)]
pub struct Conversion {
    /// The scenario TOML, with [`Conversion::before_run`] and
    /// [`Conversion::warnings`] as comments in its header.
    pub toml: String,
    /// What `cosim run` and `cosim check` refuse in the scenario as it
    /// stands, with the messages they give, as warnings located in the
    /// SSP/OSP source: no stop time, no step, a unit mismatch.
    pub before_run: Vec<Diagnostic>,
    /// The scenario layer's warnings (inputs not connected ...), located
    /// in the source (the header lists them after the import's warnings,
    /// [`Import::diagnostics`]).
    pub warnings: Vec<Diagnostic>,
    /// The scenario resolved with the problems of
    /// [`Conversion::before_run`] set aside (a stand-in stop time or step,
    /// the unit mismatch accepted): for the counts of a report.
    pub resolved: ResolvedScenario,
}

/// A scenario text and where each of its parts comes from.
#[derive(Clone, Copy)]
struct Text<'a> {
    toml: &'a str,
    map: &'a SpanMap,
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
    import_with_step(path, options, options.step)
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
                let t = cosim_fmi::extraction::create_dir("cosim-ssp-")
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

    // The command line's stop time and step (cosim convert).
    if let Some(t) = options.stop {
        draft.stop = Some(Val::new(t, draft.root_src));
        draft.stop_origin = Some("--stop".to_string());
    }
    if let Some(h) = options.step {
        draft.master.step = Some(Val::new(h, draft.root_src));
        draft.master.step_origin = Some("--step".to_string());
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
        draft,
        source_name,
        base,
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
        self.scenario_in(self.text())
            .map_err(|e| self.remap_error(&e))
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
        self.resolve_raw(scenario, self.times)
            .map_err(|e| self.remap_error(&e))
    }

    /// What `cosim convert` writes: the scenario TOML, validated as `cosim
    /// check` would, except that what only a run needs does not stop the
    /// conversion: no stop time, no step, a unit mismatch. Those are
    /// reported as warnings, with the messages `cosim run` and `cosim
    /// check` refuse the scenario with, and listed in the TOML's header
    /// with the scenario layer's warnings (inputs not connected ...); the
    /// TOML is written as the file describes it (no stand-in stop time,
    /// no `unit_mismatch = true`), so a run refuses it until they are
    /// fixed.
    ///
    /// # Errors
    ///
    /// Any other error of the scenario layer, located in the SSP/OSP
    /// source.
    pub fn convert(&self) -> Result<Conversion, ImportError> {
        let mut patched = self.draft.clone();
        let mut before_run: Vec<Diagnostic> = Vec::new();
        let mut no_stop = false;
        let mut seen: Vec<String> = Vec::new();
        loop {
            let (toml, map) = emit::emit(
                &patched,
                &self.sources,
                &self.source_name,
                self.base.as_deref(),
            );
            let t = Text {
                toml: &toml,
                map: &map,
            };
            let scenario = self
                .scenario_in(t)
                .map_err(|e| ImportError::one(self.remap_in(t, &e, true)))?;
            let times = (
                patched.start.as_ref().map(|v| v.value),
                patched.stop.as_ref().map(|v| v.value),
            );
            let e = match self.resolve_raw(&scenario, times) {
                Ok(resolved) => {
                    let warnings: Vec<Diagnostic> = resolved
                        .warnings
                        .iter()
                        .map(|w| self.remap_in(t, w, true))
                        .collect();
                    let mut out = self.draft.clone();
                    out.before_run = before_run.iter().map(header_line).collect();
                    out.warnings = self
                        .diagnostics
                        .iter()
                        .filter(|d| d.severity == Severity::Warning)
                        .chain(&warnings)
                        .map(header_line)
                        .collect();
                    out.stop_missing = no_stop.then(|| {
                        "no stop time (none in the file, none common to the FMUs): run with --stop <seconds>, or add 'stop = <seconds>' here".to_string()
                    });
                    let (toml, _) =
                        emit::emit(&out, &self.sources, &self.source_name, self.base.as_deref());
                    return Ok(Conversion {
                        toml,
                        before_run,
                        warnings,
                        resolved,
                    });
                }
                Err(e) => e,
            };
            let mut d = self.remap_in(t, &e, true);
            // Set the problem aside if only a run needs it solved, and look
            // further.
            let set_aside = !seen.contains(&e.message)
                && if e.message.starts_with("no stop time") {
                    no_stop = true;
                    let step = patched.master.step.as_ref().map_or(1e-3, |h| h.value);
                    let start = self
                        .models
                        .iter()
                        .filter_map(|(_, md)| md.default_experiment.as_ref()?.start_time)
                        .chain(patched.start.as_ref().map(|v| v.value))
                        .fold(0.0_f64, f64::max);
                    patched.stop = Some(Val::new(start + (10.0 * step).max(1.0), patched.root_src));
                    true
                } else if e.message.contains("needs a step") {
                    let step = largest_step(&patched).unwrap_or(1e-3);
                    fill_steps(&mut patched, step);
                    true
                } else if e.message.starts_with("unit mismatch") {
                    let src = e.span.and_then(|s| t.map.lookup(s.start));
                    src.is_some_and(|src| accept_unit_mismatch(&mut patched, src))
                } else {
                    false
                };
            if !set_aside {
                return Err(ImportError::one(d));
            }
            seen.push(e.message.clone());
            d.severity = Severity::Warning;
            before_run.push(d);
        }
    }

    /// A scenario error or warning, moved to the element or attribute of
    /// the SSP/OSP source that the offending TOML comes from.
    pub fn remap(&self, e: &ScenarioError) -> Diagnostic {
        self.remap_in(self.text(), e, false)
    }

    fn text(&self) -> Text<'_> {
        Text {
            toml: &self.toml,
            map: &self.map,
        }
    }

    fn scenario_in(&self, t: Text<'_>) -> Result<Scenario, ScenarioError> {
        let scenario = Scenario::from_str(t.toml, &self.scenario_path)?;
        scenario.check_fmu_files()?;
        Ok(scenario)
    }

    /// [`Import::resolve`] with the given start and stop times (for the
    /// nested systems), errors as the scenario layer gives them.
    fn resolve_raw(
        &self,
        scenario: &Scenario,
        times: (Option<f64>, Option<f64>),
    ) -> Result<ResolvedScenario, ScenarioError> {
        if scenario.subsystems().iter().any(|s| s.system.is_some()) {
            // As `runner::prepare_scenario`: nested systems run on the
            // times of the top level.
            let (start, stop) = match times {
                (Some(a), Some(b)) => (a, b),
                (a, _) => (a.unwrap_or(0.0), a.unwrap_or(0.0) + 1.0),
            };
            let nodes = nest::prepare_nodes(scenario, Some(start), Some(stop))?;
            let models: Vec<(&str, &ModelDescription)> = scenario
                .subsystems()
                .iter()
                .zip(&nodes)
                .map(|(s, n)| (s.name.value.as_str(), n.model_description()))
                .collect();
            return scenario.resolve(&models);
        }
        let models: Vec<(&str, &ModelDescription)> = self
            .models
            .iter()
            .map(|(n, md)| (n.as_str(), md.as_ref()))
            .collect();
        scenario.resolve(&models)
    }

    /// [`Import::remap`] for the scenario text `t`; `converting` for
    /// `cosim convert`, whose own output the notes then refer to.
    fn remap_in(&self, t: Text<'_>, e: &ScenarioError, converting: bool) -> Diagnostic {
        let severity = if e.is_error() {
            Severity::Error
        } else {
            Severity::Warning
        };
        let message = self.fix_line_numbers(t, &e.message);
        let mut d = match e.span.and_then(|s| t.map.lookup(s.start)) {
            Some(src) => self.sources.diag(severity, src, message),
            None => Diagnostic::new(severity, &self.source, message),
        };
        d.help = e.help.as_ref().map(|h| self.fix_line_numbers(t, h));
        d.notes = e
            .notes
            .iter()
            .map(|n| self.fix_line_numbers(t, n))
            .collect();
        d.argument = e.argument.clone();
        // Nothing in the file gave a stop time or a step: the command line can.
        if e.argument.is_none() {
            let (file_stop, file_step) = match self.format {
                Format::Ssp => (
                    "<ssd:DefaultExperiment stopTime=...>",
                    "SSP has no step size: give it",
                ),
                Format::Osp => ("<EndTime>", "give it in <BaseStepSize> or"),
            };
            if e.message.starts_with("no stop time") {
                d.help = Some(if converting {
                    format!(
                        "give it in {file_stop}, or with --stop <seconds> to cosim convert (which writes it into the scenario) or to cosim run"
                    )
                } else {
                    format!("give it in {file_stop} or with --stop <seconds>")
                });
            } else if e.message.contains("needs a step") {
                d.help = Some(if converting {
                    format!(
                        "{file_step} with --step <seconds> to cosim convert (which writes it into the scenario) or to cosim run"
                    )
                } else {
                    format!("{file_step} with --step <seconds>")
                });
            }
        }
        // A message about a scenario key: show the key the import wrote.
        if e.message.contains(" in [")
            && let Some(line) = e.line.and_then(|l| t.toml.lines().nth(l.saturating_sub(1)))
        {
            let line = line.split("  #").next().unwrap_or(line).trim();
            d.notes.push(format!("the import wrote it as `{line}`"));
        }
        if d.help
            .as_ref()
            .is_some_and(|h| h.contains(" = ") || h.contains("[["))
        {
            d.notes.push(if converting {
                "the help refers to the TOML scenario this conversion writes".to_string()
            } else {
                format!(
                    "the help refers to the equivalent TOML scenario: `cosim convert {} --to toml -o scenario.toml` writes it",
                    self.source.display()
                )
            });
        }
        d
    }

    fn remap_error(&self, e: &ScenarioError) -> ImportError {
        ImportError::one(self.remap(e))
    }

    /// Replaces TOML line numbers ("line 12", "lines 12 and 30") in a
    /// message of the scenario layer by the source lines they come from.
    fn fix_line_numbers(&self, t: Text<'_>, text: &str) -> String {
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
            let mut rest_t = tail.get(word_len..).unwrap_or_default();
            loop {
                let digits: String = rest_t.chars().take_while(char::is_ascii_digit).collect();
                if digits.is_empty() {
                    break;
                }
                let mapped = digits
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| toml_line_source(t, n))
                    .map(|src| self.sources.line(src).to_string());
                out.push_str(mapped.as_deref().unwrap_or(&digits));
                rest_t = rest_t.get(digits.len()..).unwrap_or_default();
                let sep = [" and ", ", "].into_iter().find(|s| {
                    rest_t.starts_with(s)
                        && rest_t
                            .get(s.len()..)
                            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
                });
                match sep {
                    Some(s) => {
                        out.push_str(s);
                        rest_t = rest_t.get(s.len()..).unwrap_or_default();
                    }
                    None => break,
                }
            }
            rest = rest_t;
        }
        out.push_str(rest);
        out
    }
}

/// The source of the first mapped byte of line `line` (1-based) of `t`.
fn toml_line_source(t: Text<'_>, line: usize) -> Option<Src> {
    let start = if line <= 1 {
        0
    } else {
        t.toml
            .match_indices('\n')
            .nth(line - 2)
            .map(|(i, _)| i + 1)?
    };
    let text = t.toml.get(start..)?;
    let indent = text.len() - text.trim_start_matches([' ', '\t']).len();
    t.map.lookup(start + indent)
}

/// A diagnostic as one line of a comment: `file:line: message (help)`.
fn header_line(d: &Diagnostic) -> String {
    let file = d
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let place = match d.line {
        Some(l) => format!("{file}:{l}"),
        None => file,
    };
    match &d.help {
        Some(h) => format!("{place}: {} ({h})", d.message),
        None => format!("{place}: {}", d.message),
    }
}

/// The largest master step of `draft` and its nested systems.
fn largest_step(draft: &Draft) -> Option<f64> {
    draft
        .subsystems
        .iter()
        .filter_map(|s| s.system.as_deref().and_then(largest_step))
        .chain(draft.master.step.as_ref().map(|h| h.value))
        .reduce(f64::max)
}

/// Gives every level of `draft` without a step the step `h`.
fn fill_steps(draft: &mut Draft, h: f64) {
    if draft.master.step.is_none() {
        draft.master.step = Some(Val::new(h, draft.root_src));
    }
    for s in &mut draft.subsystems {
        if let Some(inner) = s.system.as_deref_mut() {
            fill_steps(inner, h);
        }
    }
}

/// Marks the connection of `draft` (at any level) written at `src` with
/// `unit_mismatch`; false when there is none.
fn accept_unit_mismatch(draft: &mut Draft, src: Src) -> bool {
    for c in &mut draft.connections {
        if !c.unit_mismatch && [c.to.var_src, c.to.sub_src, c.src].contains(&src) {
            c.unit_mismatch = true;
            return true;
        }
    }
    draft
        .subsystems
        .iter_mut()
        .filter_map(|s| s.system.as_deref_mut())
        .any(|inner| accept_unit_mismatch(inner, src))
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
