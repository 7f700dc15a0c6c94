//! Reading a scenario file: TOML syntax, keys, types, ranges, and every
//! check that needs no model description.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toml::de::{DeTable, DeValue};

use crate::error::{Located, ScenarioError, Severity, Source, Span, did_you_mean};
use crate::read::{Result, SValue, Table, describe, integer_value, number_value, span_of};
use crate::settings::{
    Aggregate, Controller, EnergyReference, FmuInterface, Indicator, Isolation, MasterKind,
    MasterSettings, NonFinite, Normalisation, PiVariant, RichardsonEstimate, Sampling, Scheme,
    SolverMethod, SolverSpec, defaults,
};

const ROOT_KEYS: &[&str] = &[
    "simulation",
    "master",
    "subsystems",
    "functions",
    "connections",
    "bonds",
    "inputs",
    "outputs",
    "events",
];
const SIMULATION_KEYS: &[&str] = &["start", "stop", "real_time"];
const MASTER_KEYS: &[&str] = &[
    "kind",
    "solver",
    "step",
    "scheme",
    "order",
    "extrapolation",
    "threads",
    "indicators",
    "discover_bonds",
    "nonfinite",
    "divergence_limit",
    "tolerance",
    "energy_scale",
    "energy_reference",
    "rho",
    "normalisation",
    "lag_correction",
    "atol",
    "rtol",
    "aggregate",
    "max_rejections",
    "estimate",
    "eps_abs",
    "eps_rel",
    "max_iterations",
    "controller",
    "isolation",
    "isolation_timeout",
    "isolation_hosts",
    "step_timeout",
    "init_timeout",
];
const CONTROLLER_KEYS: &[&str] = &[
    "alpha",
    "dt_min",
    "dt_max",
    "theta_min",
    "theta_max",
    "k_i",
    "k_p",
    "variant",
];
const SUBSYSTEM_KEYS: &[&str] = &[
    "name",
    "fmu",
    "system",
    "exposes",
    "parameters",
    "start",
    "step_multiple",
    "isolation",
    "isolation_timeout",
    "interface",
    "solver",
    "event_mode",
];
/// `[subsystems.solver]`.
const SOLVER_KEYS: &[&str] = &[
    "method",
    "relative_tolerance",
    "absolute_tolerance",
    "max_step",
    "max_order",
    "initial_step",
];
const CONNECTION_KEYS: &[&str] = &["from", "to", "gain", "offset", "signal", "unit_mismatch"];
const FUNCTION_KEYS: &[&str] = &["name", "kind", "inputs", "dimension", "numeric_type"];
/// `kind` of `[[functions]]`.
const FUNCTION_KINDS: &[&str] = &["sum", "vector-sum"];
/// Largest `inputs` and `dimension` of a function.
const MAX_FUNCTION_SIZE: i64 = 100_000;
const BOND_KEYS: &[&str] = &["name", "ports", "tolerance", "energy_scale", "intended"];
const PORT_KEYS: &[&str] = &["input", "output"];
const INPUT_KEYS: &[&str] = &["file", "columns"];
const OUTPUT_KEYS: &[&str] = &[
    "dir",
    "trace",
    "variables",
    "interval",
    "decimation",
    "energy_log",
    "step_log",
    "summary",
];

/// Largest `step_multiple`.
const MAX_STEP_MULTIPLE: i64 = 1_000_000;

/// `isolation_timeout`: positive, and at most a year (a `Duration`).
fn isolation_timeout_ok(x: f64) -> bool {
    x > 0.0 && x <= 3.2e7
}

/// `step_timeout`, `init_timeout`: as `isolation_timeout`, or 0 (no limit).
pub(crate) fn call_timeout_ok(x: f64) -> bool {
    x == 0.0 || isolation_timeout_ok(x)
}

/// Where a setting came from: the file or a command-line argument.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Origin {
    File(Span),
    Argument(String),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Setting<T> {
    pub value: T,
    pub origin: Origin,
}

/// A value of `parameters`, `start` or `--set`, before it is typed by the
/// variable it is assigned to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawValue {
    Float(f64),
    /// (Wide enough for every Int64 and UInt64 value.)
    Int(i128),
    Bool(bool),
    Str(String),
    Array(Vec<RawValue>),
}

impl RawValue {
    pub(crate) fn describe(&self) -> String {
        match self {
            RawValue::Float(x) => format!("the float {x}"),
            RawValue::Int(i) => format!("the integer {i}"),
            RawValue::Bool(b) => format!("the boolean {b}"),
            RawValue::Str(s) => format!("the string \"{}\"", crate::read::shorten(s)),
            RawValue::Array(_) => "an array".to_string(),
        }
    }

    /// Converts a TOML value; `Err` describes what was found instead.
    pub(crate) fn from_toml(v: &DeValue<'_>) -> std::result::Result<RawValue, String> {
        Ok(match v {
            DeValue::Float(_) => RawValue::Float(number_value(v).ok_or("an invalid float")?),
            DeValue::Integer(_) => RawValue::Int(integer_value(v).ok_or("a too large integer")?),
            DeValue::Boolean(b) => RawValue::Bool(*b),
            DeValue::String(s) => RawValue::Str(s.to_string()),
            DeValue::Array(items) => RawValue::Array(
                items
                    .iter()
                    .map(|i| RawValue::from_toml(i.get_ref()))
                    .collect::<std::result::Result<_, _>>()?,
            ),
            DeValue::Datetime(_) | DeValue::Table(_) => return Err(describe(v)),
        })
    }
}

/// Which table of a subsystem a value was given in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AssignKind {
    Parameter,
    Start,
}

impl AssignKind {
    pub(crate) fn key(self) -> &'static str {
        match self {
            AssignKind::Parameter => "parameters",
            AssignKind::Start => "start",
        }
    }
}

/// A `parameters` or `start` entry (or a `--set` override).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AssignSpec {
    pub name: String,
    pub value: RawValue,
    pub kind: AssignKind,
    /// `File(span of the key)` or the command-line argument.
    pub name_origin: Origin,
    /// `File(span of the value)` or the command-line argument.
    pub value_origin: Origin,
}

/// One `[[subsystems]]` entry as written (paths made absolute).
#[derive(Debug, Clone)]
pub struct SubsystemSpec {
    /// `name`.
    pub name: Located<String>,
    /// `fmu`, resolved against the scenario file's directory (absolute).
    /// For a nested system: the file it is defined in.
    pub fmu: Located<PathBuf>,
    /// `system`: a nested co-simulation (from its own scenario file, or
    /// inline), which is then this subsystem instead of an FMU.
    pub system: Option<Box<Scenario>>,
    /// `exposes`: for a nested system, the inner variables visible outside
    /// (`"<inner subsystem>.<variable>"`: inputs fed from outside, outputs
    /// read outside).
    pub exposes: Vec<Located<String>>,
    /// `step_multiple` (default 1; its span is the table's when absent).
    pub step_multiple: Located<u32>,
    /// `isolation`, when given (else the `[master]` default).
    pub isolation: Option<Located<Isolation>>,
    /// `isolation_timeout` in s, when given (else the `[master]` default).
    pub isolation_timeout: Option<Located<f64>>,
    /// `interface`, when given (else Co-Simulation where the FMU has it,
    /// Model Exchange where it has only that).
    pub interface: Option<Located<FmuInterface>>,
    /// `[subsystems.solver]`, when given (Model Exchange only).
    pub solver: Option<Located<SolverSpec>>,
    /// `event_mode`, when given: FMI 3 Co-Simulation event mode
    /// (`eventModeUsed`) for an FMU that declares `hasEventMode` (default
    /// true where the master handles events).
    pub event_mode: Option<Located<bool>>,
    /// The `[[subsystems]]` header (or inline table).
    pub span: Span,
    pub(crate) assignments: Vec<AssignSpec>,
}

/// `"<subsystem>.<variable>"` with the subsystem looked up.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct VarPath {
    pub subsystem: usize,
    pub variable: String,
    /// The whole string as written.
    pub text: String,
    /// The span of the whole string value.
    pub span: Span,
    /// The span of the variable part (the whole value when it cannot be
    /// located inside the string).
    pub var_span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ConnectionSpec {
    pub from: VarPath,
    pub to: VarPath,
    pub gain: f64,
    pub offset: f64,
    /// Span of `gain` or `offset` when either is given.
    pub map_span: Option<Span>,
    pub signal: bool,
    pub unit_mismatch: bool,
    pub span: Span,
}

/// A `[[functions]]` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FunctionDecl {
    /// `name` (unique among subsystems and functions).
    pub name: Located<String>,
    /// What it computes (its `name` is `name.value`).
    pub spec: cosim_core::FunctionSpec,
    /// The `[[functions]]` table.
    pub span: Span,
}

/// `"<function>.<port>"`, the port looked up.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PortPath {
    pub function: usize,
    pub port: usize,
    /// The whole string as written.
    pub text: String,
    /// The span of the whole string value.
    pub span: Span,
    /// The span of the port part.
    pub port_span: Span,
}

/// An end of a connection to or from a function: a subsystem variable or a
/// function port.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum End {
    Var(VarPath),
    Port(PortPath),
}

impl End {
    pub(crate) fn text(&self) -> &str {
        match self {
            End::Var(v) => &v.text,
            End::Port(p) => &p.text,
        }
    }

    pub(crate) fn span(&self) -> Span {
        match self {
            End::Var(v) => v.span,
            End::Port(p) => p.span,
        }
    }
}

/// A `[[connections]]` entry with a function port at one end or both.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FunctionConnectionSpec {
    pub from: End,
    pub to: End,
    pub gain: f64,
    pub offset: f64,
    pub map_span: Option<Span>,
    pub signal: bool,
    pub unit_mismatch: bool,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PortSpec {
    pub input: VarPath,
    pub output: VarPath,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BondSpec {
    pub name: Located<String>,
    pub ports: [PortSpec; 2],
    pub ports_span: Span,
    pub tolerance: Option<f64>,
    pub energy_scale: Option<f64>,
    pub intended: bool,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OutputsSpec {
    pub span: Option<Span>,
    /// Output directory, absolute.
    pub dir: PathBuf,
    pub trace: Option<String>,
    pub energy_log: Option<String>,
    pub step_log: Option<String>,
    pub summary: Option<String>,
    pub variables: Option<Vec<(String, Span)>>,
    pub sampling: Sampling,
    /// Where `interval` or `decimation` was given (for later errors).
    pub sampling_origin: Option<Origin>,
}

/// An input file: `[[inputs]]`, or `--input-file` on the command line.
#[derive(Debug, Clone)]
pub(crate) struct InputSpec {
    /// The file (absolute for `[[inputs]]`, as given for `--input-file`).
    pub file: PathBuf,
    /// The `file` value, or the `--input-file` argument.
    pub origin: Origin,
    /// The `[[inputs]]` table.
    pub span: Option<Span>,
    /// `columns`: input -> column name (with the span of the name).
    /// `None`: the header names the inputs.
    pub columns: Option<Vec<(VarPath, String, Span)>>,
    /// The file, once read.
    pub csv: Option<Arc<crate::input_csv::InputCsv>>,
}

impl InputSpec {
    /// Reads the file (once).
    pub(crate) fn read(&mut self) -> Result<Arc<crate::input_csv::InputCsv>> {
        if let Some(csv) = &self.csv {
            return Ok(csv.clone());
        }
        let csv = Arc::new(crate::input_csv::InputCsv::read(&self.file).map_err(|e| {
            let note = match &self.origin {
                Origin::File(_) => "read for [[inputs]] of the scenario".to_string(),
                Origin::Argument(arg) => format!("read for the command-line argument '{arg}'"),
            };
            e.with_note(note)
        })?);
        self.csv = Some(csv.clone());
        Ok(csv)
    }
}

/// A scenario made for one FMU (`cosim run Model.fmu`): names on the
/// command line may leave out the subsystem.
#[derive(Debug, Clone)]
pub(crate) struct SingleFmu {
    /// The subsystem's name.
    pub subsystem: String,
    /// The FMU's variable names, and its aliases.
    pub names: std::collections::HashSet<String>,
    /// The FMU, opened (extracted) once to make the scenario: the run
    /// uses it, not a second extraction.
    pub fmu: Option<cosim_fmi::Fmu>,
}

impl SingleFmu {
    /// `name` (a variable name or pattern, with or without the subsystem
    /// prefix) as the variable part of a path.
    pub(crate) fn variable<'n>(&self, name: &'n str) -> &'n str {
        if self.names.contains(name) {
            return name;
        }
        match name
            .strip_prefix(self.subsystem.as_str())
            .and_then(|r| r.strip_prefix('.'))
        {
            Some(rest) if !rest.is_empty() => rest,
            _ => name,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SimulationSpec {
    pub span: Option<Span>,
    pub start: Option<Setting<f64>>,
    pub stop: Option<Setting<f64>>,
    /// `real_time`: simulated time advances at this factor times the wall
    /// clock (`--real-time`).
    pub real_time: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MasterSpec {
    pub span: Option<Span>,
    pub kind_span: Option<Span>,
    pub step: Option<Setting<f64>>,
    /// Complete except `step` (filled in by `resolve`).
    pub settings: MasterSettings,
}

/// A parsed and checked scenario file, not yet matched against the FMUs.
///
/// Obtain it with [`Scenario::load`] (or [`Scenario::from_str`]), adjust it
/// with [`Scenario::apply_overrides`], open the FMUs named by
/// [`Scenario::subsystems`], then call [`Scenario::resolve`] with their
/// model descriptions.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub(crate) source: Arc<Source>,
    pub(crate) base_dir: PathBuf,
    pub(crate) simulation: SimulationSpec,
    pub(crate) master: MasterSpec,
    pub(crate) subsystems: Vec<SubsystemSpec>,
    /// `[[functions]]`.
    pub(crate) functions: Vec<FunctionDecl>,
    /// Connections between subsystems.
    pub(crate) connections: Vec<ConnectionSpec>,
    /// Connections to or from function ports.
    pub(crate) function_connections: Vec<FunctionConnectionSpec>,
    pub(crate) bonds: Vec<BondSpec>,
    pub(crate) outputs: OutputsSpec,
    pub(crate) warnings: Vec<ScenarioError>,
    /// `--isolation`: replaces every subsystem's isolation, at every level.
    pub(crate) isolation_override: Option<crate::settings::Isolation>,
    /// `--interface`: the interface every FMU subsystem runs, at every
    /// level (replacing each `interface`).
    pub(crate) interface_override: Option<FmuInterface>,
    /// `--solver`, `--relative-tolerance`: replace these settings of every
    /// Model Exchange subsystem, at every level.
    pub(crate) solver_override: SolverSpec,
    /// `--log-fmi-calls`: where every FMI call of every FMU is logged.
    pub(crate) call_log: Option<cosim_fmi::CallLogTarget>,
    /// `[[inputs]]` and `--input-file`.
    pub(crate) inputs: Vec<InputSpec>,
    /// `--output-variables`: replaces `[outputs] variables`.
    pub(crate) output_variables: Option<(Vec<String>, String)>,
    /// Made for one FMU (`cosim run Model.fmu`).
    pub(crate) single: Option<SingleFmu>,
    /// `[[events]]` and the events of `--scenario` files, at this level
    /// (those inside nested systems are handed down by
    /// [`Scenario::route_events`]).
    pub(crate) events: Vec<crate::events::EventSpec>,
}

impl Scenario {
    /// Reads and checks the scenario file at `path`, including that every
    /// FMU file it names exists.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] for an unreadable file, a TOML syntax error, an
    /// unknown key, a value of the wrong type or out of range, an unknown
    /// subsystem, a missing FMU file ... (everything that can be checked
    /// without the FMUs' model descriptions).
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Source::new(path.to_path_buf(), String::new())
                .error(None, format!("cannot read the scenario file: {e}"))
        })?;
        // (The text moves into the scenario's source: one copy of it.)
        let mut scenario = Scenario::parse_text(text, path, vec![absolute(path)])?;
        scenario.check_fmu_files()?;
        scenario.read_input_files()?;
        Ok(scenario)
    }

    /// Parses and checks scenario `text` as if read from `path` (relative
    /// paths in it are resolved against `path`'s directory). Unlike
    /// [`Scenario::load`], does not look at the file system.
    ///
    /// # Errors
    ///
    /// As [`Scenario::load`], except for missing FMU files.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &str, path: impl AsRef<Path>) -> Result<Scenario> {
        let path = path.as_ref();
        Scenario::parse_text(text.to_string(), path, vec![absolute(path)])
    }

    /// Like [`Scenario::from_str`] for a nested scenario file read while
    /// parsing `chain` (outermost first).
    fn from_str_nested(text: &str, path: &Path, chain: Vec<PathBuf>) -> Result<Scenario> {
        Scenario::parse_text(text.to_string(), path, chain)
    }

    /// Parses `text`, the scenario file `path`. Its long arrays of strings
    /// are read before the TOML parser (`crate::long_arrays`: a list of
    /// millions of entries costs their spans, not the parser's gigabyte);
    /// should one of them not be taken back, or the parse fail, the text
    /// is parsed again as written, whole (the parser's own message).
    fn parse_text(text: String, path: &Path, chain: Vec<PathBuf>) -> Result<Scenario> {
        let (arrays, blanked) = crate::long_arrays::lift(&text);
        let source = Source::with_arrays(path.to_path_buf(), text, arrays);
        crate::read::check_characters(&source)?;
        if let Some(blanked) = blanked {
            let parsed = Scenario::parse_root(&source, &blanked, chain.clone());
            if parsed.is_ok() && source.long_arrays.all_taken() {
                return parsed;
            }
            source.long_arrays.clear();
        }
        Scenario::parse_root(&source, &source.text, chain)
    }

    /// Parses `text` (the source's, or it with its long arrays blanked).
    fn parse_root(source: &Arc<Source>, text: &str, chain: Vec<PathBuf>) -> Result<Scenario> {
        let path = source.path.as_path();
        let base_dir = absolute(path.parent().unwrap_or(Path::new("")));
        let root = DeTable::parse(text).map_err(|e| {
            let span = e.span().map(Span::from_range);
            let mut message = e.message().trim_end().to_string();
            // Name the key of a "duplicate key" error.
            if message == "duplicate key"
                && let Some(key) = span.and_then(|s| text.get(s.start..s.end))
                && !key.contains('\n')
            {
                message = format!("duplicate key '{}'", key.trim_matches(['"', '\'']));
            }
            source.error(span, format!("invalid TOML: {message}"))
        })?;
        let root_value: SValue<'_> =
            serde_spanned::Spanned::new(0..0, DeValue::Table(root.into_inner()));
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scenario".to_string());
        Parser {
            src: source,
            base_dir: &base_dir,
            stem,
            warnings: Vec::new(),
            chain,
            shared: source.clone(),
        }
        .parse(&root_value, source.clone())
    }

    /// Checks that every subsystem's FMU file exists (done by
    /// [`Scenario::load`]).
    ///
    /// # Errors
    ///
    /// An error at the `fmu` value naming the resolved path.
    pub fn check_fmu_files(&self) -> Result<()> {
        for s in &self.subsystems {
            if let Some(nested) = &s.system {
                nested.check_fmu_files()?;
                continue;
            }
            let p = &s.fmu.value;
            if !p.is_file() {
                let what = if p.exists() {
                    "is not a file"
                } else {
                    "does not exist"
                };
                return Err(self
                    .error_at(
                        s.fmu.span,
                        format!(
                            "the FMU of subsystem '{}' {what}: {}",
                            s.name.value,
                            cosim_core::text::path(p).display()
                        ),
                    )
                    .with_note("relative paths are resolved against the scenario file's directory")
                    .with_help_opt(project_fmu_help(p)));
            }
        }
        Ok(())
    }

    /// Reads and checks every input file (`[[inputs]]`) not read yet
    /// (done by [`Scenario::load`]; [`Scenario::resolve`] reads those left).
    ///
    /// # Errors
    ///
    /// A file that cannot be read, or is not a valid input file: at its
    /// line and column.
    pub fn read_input_files(&mut self) -> Result<()> {
        for spec in &mut self.inputs {
            if spec.csv.is_none() && !spec.file.is_file() {
                let what = if spec.file.exists() {
                    "is not a file"
                } else {
                    "does not exist"
                };
                let message = format!("the input file {what}: {}", spec.file.display());
                return Err(match &spec.origin {
                    Origin::File(span) => self.source.error(Some(*span), message).with_note(
                        "relative paths are resolved against the scenario file's directory",
                    ),
                    Origin::Argument(arg) => {
                        ScenarioError::argument(&self.source.path, arg, message)
                    }
                });
            }
            spec.read()?;
        }
        Ok(())
    }

    /// Sets the start and stop times (a nested system runs on the times of
    /// the level above, whatever its own `[simulation]` says).
    pub(crate) fn set_times(&mut self, start: Option<f64>, stop: Option<f64>) {
        let setting = |value| Setting {
            value,
            origin: Origin::Argument("the times of the level above".to_string()),
        };
        if let Some(t) = start {
            self.simulation.start = Some(setting(t));
        }
        if let Some(t) = stop {
            self.simulation.stop = Some(setting(t));
        }
    }

    /// The subsystems, to change (a nested system's scenario).
    pub(crate) fn subsystems_mut(&mut self) -> &mut [SubsystemSpec] {
        &mut self.subsystems
    }

    /// The scenario file's path as given.
    pub fn path(&self) -> &Path {
        &self.source.path
    }

    /// The directory relative paths of the scenario are resolved against
    /// (the scenario file's, made absolute).
    pub fn directory(&self) -> &Path {
        &self.base_dir
    }

    /// The scenario file's text.
    pub fn text(&self) -> &str {
        &self.source.text
    }

    /// The subsystems in declaration order (their index is the subsystem
    /// index used everywhere else).
    pub fn subsystems(&self) -> &[SubsystemSpec] {
        &self.subsystems
    }

    /// The index of the subsystem called `name`.
    pub fn subsystem_index(&self, name: &str) -> Option<usize> {
        self.subsystems.iter().position(|s| s.name.value == name)
    }

    /// Things that are allowed but probably not meant (a key that has no
    /// effect with the chosen master, ...).
    pub fn warnings(&self) -> &[ScenarioError] {
        &self.warnings
    }

    /// An error at `span` of this scenario file, for problems found after
    /// resolution (e.g. an FMU that fails to open: use
    /// `subsystems()[i].fmu.span`).
    pub fn error_at(&self, span: Span, message: impl Into<String>) -> ScenarioError {
        self.source.error(Some(span), message)
    }

    /// A warning at `span` of this scenario file.
    pub fn warning_at(&self, span: Span, message: impl Into<String>) -> ScenarioError {
        self.source
            .diagnostic(Severity::Warning, Some(span), message)
    }

    pub(crate) fn origin_error(
        &self,
        origin: &Origin,
        message: impl Into<String>,
    ) -> ScenarioError {
        match origin {
            Origin::File(span) => self.error_at(*span, message),
            Origin::Argument(arg) => ScenarioError::argument(&self.source.path, arg, message),
        }
    }
}

/// `path` made absolute against the current directory (without touching
/// the file system beyond reading the current directory).
pub(crate) fn absolute(path: &Path) -> PathBuf {
    if path.as_os_str().is_empty() {
        return std::env::current_dir().unwrap_or_default();
    }
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// True when the subsystem name is valid: letters, digits, `_` and `-`.
pub(crate) fn valid_subsystem_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

/// True when `s` contains a glob metacharacter.
pub(crate) fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// Subsystem names -> indices, built once so that resolving every
/// `"<subsystem>.<variable>"` path is O(1) (imports of thousands of
/// connections stay linear); function names too, when given.
pub(crate) struct SubsystemIndex<'s> {
    pub(crate) specs: &'s [SubsystemSpec],
    by_name: HashMap<&'s str, usize>,
    pub(crate) functions: &'s [FunctionDecl],
    function_by_name: HashMap<&'s str, usize>,
}

impl<'s> SubsystemIndex<'s> {
    pub(crate) fn new(specs: &'s [SubsystemSpec]) -> Self {
        Self::with_functions(specs, &[])
    }

    /// The subsystems and the functions (whose names a path may start with).
    pub(crate) fn with_functions(
        specs: &'s [SubsystemSpec],
        functions: &'s [FunctionDecl],
    ) -> Self {
        let mut by_name = HashMap::with_capacity(specs.len());
        for (i, s) in specs.iter().enumerate() {
            by_name.entry(s.name.value.as_str()).or_insert(i);
        }
        let mut function_by_name = HashMap::with_capacity(functions.len());
        for (i, f) in functions.iter().enumerate() {
            function_by_name.entry(f.name.value.as_str()).or_insert(i);
        }
        SubsystemIndex {
            specs,
            by_name,
            functions,
            function_by_name,
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The function called `name`.
    pub(crate) fn function(&self, name: &str) -> Option<usize> {
        self.function_by_name.get(name).copied()
    }
}

struct Parser<'a> {
    src: &'a Source,
    base_dir: &'a Path,
    stem: String,
    warnings: Vec<ScenarioError>,
    /// Scenario files being read, outermost first (to refuse a file that
    /// nests itself).
    chain: Vec<PathBuf>,
    /// The source being parsed (`src`, shared with inline nested systems).
    shared: Arc<Source>,
}

impl<'a> Parser<'a> {
    fn parse(mut self, root_value: &'a SValue<'a>, source: Arc<Source>) -> Result<Scenario> {
        let root = Table::new(self.src, root_value, "the scenario", ROOT_KEYS)?;
        let simulation = self.simulation(&root)?;
        let subsystems = self.subsystems(&root)?;
        let functions = self.functions(&root, &subsystems)?;
        let index = SubsystemIndex::with_functions(&subsystems, &functions);
        let (connections, function_connections) = self.connections(&root, &index)?;
        let bonds = self.bonds(&root, &index)?;
        let master = self.master(&root, &index, &bonds)?;
        let outputs = self.outputs(&root, &index)?;
        let inputs = self.inputs(&root, &index)?;
        let events = crate::events::read_toml_events(
            &source,
            root.tables("events", "[[events]]", crate::events::EVENT_KEYS)?,
        )?;
        Ok(Scenario {
            source,
            base_dir: self.base_dir.to_path_buf(),
            simulation,
            master,
            subsystems,
            functions,
            connections,
            function_connections,
            bonds,
            outputs,
            warnings: self.warnings,
            isolation_override: None,
            interface_override: None,
            solver_override: SolverSpec::default(),
            call_log: None,
            inputs,
            output_variables: None,
            single: None,
            events,
        })
        .map(|mut s| {
            s.route_events();
            s
        })
    }

    fn warn(&mut self, span: Span, message: impl Into<String>) {
        self.warnings
            .push(self.src.diagnostic(Severity::Warning, Some(span), message));
    }

    fn simulation(&mut self, root: &Table<'a, '_>) -> Result<SimulationSpec> {
        let Some(t) = root.table("simulation", "[simulation]", SIMULATION_KEYS)? else {
            return Ok(SimulationSpec {
                span: None,
                start: None,
                stop: None,
                real_time: None,
            });
        };
        let finite = |x: f64| x.is_finite();
        let start = t.f64_where("start", "a finite number of seconds", finite)?;
        let stop = t.f64_where("stop", "a finite number of seconds", finite)?;
        if let (Some((a, _)), Some((b, bspan))) = (start, stop)
            && b <= a
        {
            return Err(t.err(
                bspan,
                format!("stop time {b} s is not after the start time {a} s"),
            ));
        }
        let setting = |v: Option<(f64, Span)>| {
            v.map(|(value, span)| Setting {
                value,
                origin: Origin::File(span),
            })
        };
        let real_time = t
            .f64_where(
                "real_time",
                "a positive factor (1: as fast as the wall clock)",
                |x| x > 0.0 && x.is_finite(),
            )?
            .map(|(x, _)| x);
        Ok(SimulationSpec {
            span: Some(t.span),
            start: setting(start),
            stop: setting(stop),
            real_time,
        })
    }

    fn master(
        &mut self,
        root: &Table<'a, '_>,
        subsystems: &SubsystemIndex<'_>,
        bonds: &[BondSpec],
    ) -> Result<MasterSpec> {
        let mut s = MasterSettings {
            kind: MasterKind::FixedStep,
            step: f64::NAN,
            scheme: Scheme::Jacobi,
            order: None,
            extrapolation: 0,
            threads: 0,
            indicators: vec![Indicator::Energy],
            discover_bonds: true,
            nonfinite: NonFinite::Error,
            divergence_limit: None,
            tolerance: defaults::TOLERANCE,
            energy_scale: defaults::ENERGY_SCALE,
            energy_reference: EnergyReference::Transmitted,
            rho: defaults::RHO,
            normalisation: Normalisation::Paper,
            lag_correction: true,
            atol: defaults::ATOL,
            rtol: defaults::RTOL,
            aggregate: Aggregate::Rms,
            max_rejections: defaults::MAX_REJECTIONS,
            estimate: RichardsonEstimate::Richardson,
            eps_abs: defaults::EPS_ABS,
            eps_rel: defaults::EPS_REL,
            max_iterations: defaults::MAX_ITERATIONS,
            controller: Controller::default(),
            solver: None,
            isolation: Isolation::None,
            isolation_timeout: defaults::ISOLATION_TIMEOUT,
            isolation_hosts: None,
            step_timeout: None,
            init_timeout: None,
        };
        let Some(t) = root.table("master", "[master]", MASTER_KEYS)? else {
            self.check_ecco_bonds(&s, None, bonds)?;
            return Ok(MasterSpec {
                span: None,
                kind_span: None,
                step: None,
                settings: s,
            });
        };
        let mut kind_span = None;
        if let Some((i, span)) = t.choice("kind", &MasterKind::NAMES)? {
            s.kind = MasterKind::ALL
                .get(i)
                .copied()
                .unwrap_or(MasterKind::FixedStep);
            kind_span = Some(span);
        }
        let positive = |x: f64| x > 0.0;
        let non_negative = |x: f64| x >= 0.0;
        let step = t
            .f64_where("step", "a positive number of seconds", positive)?
            .map(|(value, span)| Setting {
                value,
                origin: Origin::File(span),
            });
        if let Some((i, _)) = t.choice("scheme", &["jacobi", "gauss-seidel"])? {
            s.scheme = if i == 0 {
                Scheme::Jacobi
            } else {
                Scheme::GaussSeidel
            };
        }
        if let Some((names, span)) = t.strings("order")? {
            s.order = Some(self.order(&t, &names, span, subsystems)?);
            if s.scheme == Scheme::Jacobi {
                self.warn(
                    span,
                    "'order' has no effect with scheme \"jacobi\" (set scheme = \"gauss-seidel\")",
                );
            }
        }
        if let Some((m, _)) = t.int_in("extrapolation", 0, 2)? {
            s.extrapolation = u8::try_from(m).unwrap_or_default();
        }
        if let Some((n, span)) = t.int_in("threads", 0, defaults::MAX_THREADS)? {
            s.threads = usize::try_from(n).unwrap_or(1);
            if s.scheme == Scheme::GaussSeidel && n != 1 {
                self.warn(
                    span,
                    "'threads' has no effect with scheme \"gauss-seidel\" (subsystems step one after the other)",
                );
            }
        }
        if let Some((names, _)) = t.strings("indicators")? {
            s.indicators.clear();
            for (name, span) in names {
                let Some(i) = Indicator::NAMES.iter().position(|n| *n == name) else {
                    return Err(crate::read::unknown_choice(
                        self.src,
                        span,
                        "indicator",
                        &name,
                        &Indicator::NAMES,
                    ));
                };
                let ind = Indicator::ALL.get(i).copied().unwrap_or(Indicator::Energy);
                if s.indicators.contains(&ind) {
                    return Err(t.err(span, format!("indicator \"{name}\" is listed twice")));
                }
                s.indicators.push(ind);
            }
        }
        if let Some((b, _)) = t.bool("discover_bonds")? {
            s.discover_bonds = b;
        }
        if let Some((i, _)) = t.choice("nonfinite", &["error", "warn"])? {
            s.nonfinite = if i == 0 {
                NonFinite::Error
            } else {
                NonFinite::Warn
            };
        }
        if let Some((x, _)) = t.f64_where("divergence_limit", "a positive number", positive)? {
            s.divergence_limit = Some(x);
        }
        if let Some((x, _)) = t.f64_where("tolerance", "a positive number", positive)? {
            s.tolerance = x;
        }
        if let Some((x, _)) =
            t.f64_where("energy_scale", "a positive number of joules", positive)?
        {
            s.energy_scale = x;
        }
        if let Some((i, _)) = t.choice("energy_reference", &["transmitted", "largest-residual"])? {
            s.energy_reference = if i == 0 {
                EnergyReference::Transmitted
            } else {
                EnergyReference::LargestResidual
            };
        }
        if let Some((x, _)) = t.f64_where("rho", "a number >= 0", non_negative)? {
            s.rho = x;
        }
        if let Some((i, _)) = t.choice("normalisation", &["paper", "atol-rtol"])? {
            s.normalisation = if i == 0 {
                Normalisation::Paper
            } else {
                Normalisation::AtolRtol
            };
        }
        if let Some((b, _)) = t.bool("lag_correction")? {
            s.lag_correction = b;
        }
        if let Some((x, _)) = t.f64_where("atol", "a number >= 0", non_negative)? {
            s.atol = x;
        }
        if let Some((x, span)) = t.f64_where("rtol", "a number >= 0", non_negative)? {
            s.rtol = x;
            if s.atol == 0.0 && s.rtol == 0.0 {
                return Err(t.err(span, "'atol' and 'rtol' cannot both be 0"));
            }
        }
        if s.atol == 0.0
            && s.rtol == 0.0
            && let Some(span) = t.get("atol").map(span_of)
        {
            return Err(t.err(span, "'atol' and 'rtol' cannot both be 0"));
        }
        if let Some((i, _)) = t.choice("aggregate", &["rms", "mean", "max"])? {
            s.aggregate = [Aggregate::Rms, Aggregate::Mean, Aggregate::Max]
                .get(i)
                .copied()
                .unwrap_or(Aggregate::Rms);
        }
        if let Some((n, span)) = t.int_in("max_rejections", 1, 1_000_000)? {
            s.max_rejections = u32::try_from(n).unwrap_or(defaults::MAX_REJECTIONS);
            self.warn_unless(s.kind, span, "max_rejections", &[MasterKind::Richardson]);
        }
        if let Some((i, span)) = t.choice("estimate", &["richardson", "modified"])? {
            s.estimate = if i == 0 {
                RichardsonEstimate::Richardson
            } else {
                RichardsonEstimate::Modified
            };
            self.warn_unless(s.kind, span, "estimate", &[MasterKind::Richardson]);
        }
        let iterative = [MasterKind::Ifosmondi, MasterKind::IterativeAffine];
        if let Some((x, span)) = t.f64_where("eps_abs", "a number >= 0", non_negative)? {
            s.eps_abs = x;
            self.warn_unless(s.kind, span, "eps_abs", &iterative);
        }
        if let Some((x, span)) = t.f64_where("eps_rel", "a number >= 0", non_negative)? {
            s.eps_rel = x;
            self.warn_unless(s.kind, span, "eps_rel", &iterative);
        }
        if s.eps_abs == 0.0 && s.eps_rel == 0.0 {
            let span = t.get("eps_rel").or(t.get("eps_abs")).map(span_of);
            return Err(t
                .src
                .error(span, "'eps_abs' and 'eps_rel' cannot both be 0"));
        }
        if let Some((n, span)) = t.int_in("max_iterations", 1, 1_000_000)? {
            s.max_iterations = u32::try_from(n).unwrap_or(defaults::MAX_ITERATIONS);
            self.warn_unless(s.kind, span, "max_iterations", &iterative);
        }
        if let Some((i, _)) = t.choice("isolation", &Isolation::NAMES)? {
            s.isolation = Isolation::ALL.get(i).copied().unwrap_or(Isolation::None);
        }
        if let Some((x, _)) = t.f64_where(
            "isolation_timeout",
            "a positive number of seconds",
            isolation_timeout_ok,
        )? {
            s.isolation_timeout = x;
        }
        if let Some((n, _)) = t.int_in("isolation_hosts", 1, 4096)? {
            s.isolation_hosts = usize::try_from(n).ok();
        }
        for (key, slot) in [
            ("step_timeout", &mut s.step_timeout),
            ("init_timeout", &mut s.init_timeout),
        ] {
            if let Some((x, _)) = t.f64_where(
                key,
                "a positive number of seconds, at most a year, or 0 (no limit)",
                call_timeout_ok,
            )? {
                *slot = Some(x);
            }
        }
        if let Some(c) = t.table("controller", "[master.controller]", CONTROLLER_KEYS)? {
            s.controller = controller(&c)?;
            // Each key the master does not use, by name (a key that has
            // an effect is never reported as having none).
            let used = s.kind.controller_keys();
            if used.is_empty() {
                self.warn(
                    c.span,
                    format!(
                        "[master.controller] has no effect with master kind \"{}\"",
                        s.kind
                    ),
                );
            } else {
                for key in CONTROLLER_KEYS {
                    if let Some(span) = c.get(key).map(span_of)
                        && !used.contains(key)
                    {
                        self.warn(
                            span,
                            format!(
                                "[master.controller] '{key}' has no effect with master kind \"{}\" (it uses {})",
                                s.kind,
                                used.join(", ")
                            ),
                        );
                    }
                }
            }
        }
        if let Some(st) = t.table("solver", "[master.solver]", SOLVER_KEYS)? {
            if s.kind != MasterKind::StronglyCoupled {
                return Err(t
                    .src
                    .error(
                        Some(st.span),
                        format!(
                            "[master.solver] sets the integrator of kind = \"strongly-coupled\"; the {} master integrates nothing itself",
                            s.kind
                        ),
                    )
                    .with_help("for a Model Exchange subsystem, set [subsystems.solver] on it"));
            }
            s.solver = Some(solver(&st)?);
        }
        self.check_ecco_bonds(&s, t.get("discover_bonds").map(span_of), bonds)?;
        Ok(MasterSpec {
            span: Some(t.span),
            kind_span,
            step,
            settings: s,
        })
    }

    fn warn_unless(&mut self, kind: MasterKind, span: Span, key: &str, kinds: &[MasterKind]) {
        if !kinds.contains(&kind) {
            self.warn(
                span,
                format!("'{key}' has no effect with master kind \"{kind}\""),
            );
        }
    }

    fn check_ecco_bonds(
        &self,
        s: &MasterSettings,
        span: Option<Span>,
        bonds: &[BondSpec],
    ) -> Result<()> {
        if s.kind == MasterKind::Ecco && !s.discover_bonds && bonds.is_empty() {
            return Err(self
                .src
                .error(
                    span,
                    "master \"ecco\" needs power bonds, but discover_bonds = false and there is no [[bonds]] entry",
                )
                .with_help("declare the bonds with [[bonds]], or remove discover_bonds = false"));
        }
        Ok(())
    }

    fn order(
        &self,
        t: &Table<'a, '_>,
        names: &[(String, Span)],
        span: Span,
        subsystems: &SubsystemIndex<'_>,
    ) -> Result<Vec<usize>> {
        let mut order: Vec<usize> = Vec::new();
        let mut seen: HashMap<usize, Span> = HashMap::new();
        for (name, nspan) in names {
            let i = find_subsystem(self.src, subsystems, name, *nspan)?;
            if let Some(first) = seen.get(&i) {
                let first_line = self.src.error(Some(*first), "").line.unwrap_or(0);
                return Err(t.err(
                    *nspan,
                    format!(
                        "subsystem '{name}' appears twice in 'order' (first on line {first_line})"
                    ),
                ));
            }
            seen.insert(i, *nspan);
            order.push(i);
        }
        let missing: Vec<&str> = subsystems
            .specs
            .iter()
            .enumerate()
            .filter(|(i, _)| !seen.contains_key(i))
            .map(|(_, s)| s.name.value.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(t.err(
                span,
                format!(
                    "'order' must list every subsystem once; missing: {}",
                    missing.join(", ")
                ),
            ));
        }
        Ok(order)
    }

    fn subsystems(&mut self, root: &Table<'a, '_>) -> Result<Vec<SubsystemSpec>> {
        let tables = root.tables("subsystems", "[[subsystems]]", SUBSYSTEM_KEYS)?;
        if tables.is_empty() {
            return Err(self
                .src
                .error(None, "the scenario has no subsystems")
                .with_help("add a [[subsystems]] table with 'name' and 'fmu' for each FMU"));
        }
        let mut out: Vec<SubsystemSpec> = Vec::new();
        let mut first_of: HashMap<String, Span> = HashMap::new();
        for t in &tables {
            let (name, name_span) = t
                .string("name")?
                .ok_or_else(|| t.missing("name", "every subsystem needs a unique name"))?;
            if !valid_subsystem_name(&name) {
                return Err(t.err(
                    name_span,
                    format!(
                        "invalid subsystem name \"{name}\": use only letters, digits, '_' and '-'"
                    ),
                ));
            }
            if let Some(first) = first_of.insert(name.clone(), name_span) {
                let line = self.src.error(Some(first), "").line.unwrap_or(0);
                return Err(t.err(
                    name_span,
                    format!("duplicate subsystem name '{name}' (first defined on line {line})"),
                ));
            }
            let (fmu_path, fmu_span, system) = match (t.get("fmu"), t.get("system")) {
                (Some(_), Some(v)) => {
                    return Err(t.err(
                        span_of(v),
                        format!("subsystem '{name}' has both 'fmu' and 'system': a subsystem is either an FMU or a nested system"),
                    ));
                }
                (None, Some(v)) => {
                    let nested = self.nested_system(&name, v)?;
                    (
                        nested.source.path.clone(),
                        span_of(v),
                        Some(Box::new(nested)),
                    )
                }
                _ => {
                    let (fmu, fmu_span) = t.string("fmu")?.ok_or_else(|| {
                        t.missing(
                            "fmu",
                            "the path of the subsystem's .fmu file (or 'system' for a nested co-simulation)",
                        )
                    })?;
                    if fmu.trim().is_empty() {
                        return Err(t.err(fmu_span, "'fmu' is empty: give the path of a .fmu file"));
                    }
                    (absolute(&self.base_dir.join(&fmu)), fmu_span, None)
                }
            };
            let exposes = match t.strings("exposes")? {
                Some((list, span)) => {
                    if system.is_none() {
                        return Err(t.err(
                            span,
                            "'exposes' is for nested systems ('system = ...'); an FMU exposes its own inputs and outputs",
                        ));
                    }
                    list.into_iter()
                        .map(|(v, sp)| Located::new(v, sp))
                        .collect()
                }
                None => Vec::new(),
            };
            let step_multiple = match t.int_in("step_multiple", 1, MAX_STEP_MULTIPLE)? {
                Some((k, span)) => Located::new(u32::try_from(k).unwrap_or(1), span),
                None => Located::new(1, t.span),
            };
            let isolation = t.choice("isolation", &Isolation::NAMES)?.map(|(i, span)| {
                let value = Isolation::ALL.get(i).copied().unwrap_or(Isolation::None);
                Located::new(value, span)
            });
            let isolation_timeout = t
                .f64_where(
                    "isolation_timeout",
                    "a positive number of seconds",
                    isolation_timeout_ok,
                )?
                .map(|(x, span)| Located::new(x, span));
            if system.is_some()
                && let Some(span) = isolation
                    .as_ref()
                    .map(|l| l.span)
                    .or(isolation_timeout.as_ref().map(|l| l.span))
            {
                return Err(t.err(
                    span,
                    "'isolation' and 'isolation_timeout' are for FMU subsystems; set them on the subsystems of the nested system (or in its [master])",
                ));
            }
            let interface = t
                .choice("interface", &FmuInterface::NAMES)?
                .map(|(i, span)| {
                    let value = FmuInterface::ALL
                        .get(i)
                        .copied()
                        .unwrap_or(FmuInterface::CoSimulation);
                    Located::new(value, span)
                });
            let solver = match t.table("solver", "[subsystems.solver]", SOLVER_KEYS)? {
                Some(st) => Some(Located::new(solver(&st)?, st.span)),
                None => None,
            };
            if system.is_some()
                && let Some(span) = interface
                    .as_ref()
                    .map(|l| l.span)
                    .or(solver.as_ref().map(|l| l.span))
            {
                return Err(t.err(
                    span,
                    "'interface' and 'solver' are for FMU subsystems; set them on the subsystems of the nested system",
                ));
            }
            if let (Some(i), Some(s)) = (&interface, &solver)
                && i.value == FmuInterface::CoSimulation
            {
                return Err(t
                    .err(
                        s.span,
                        format!("subsystem '{name}' runs the FMU's Co-Simulation interface, which integrates itself: [subsystems.solver] is for interface = \"model-exchange\""),
                    )
                    .with_help("remove the solver table, or set interface = \"model-exchange\""));
            }
            let event_mode = t.bool("event_mode")?.map(|(b, span)| Located::new(b, span));
            if system.is_some()
                && let Some(l) = &event_mode
            {
                return Err(t.err(
                    l.span,
                    "'event_mode' is for FMU subsystems; set it on the subsystems of the nested system",
                ));
            }
            let mut assignments = Vec::new();
            for kind in [AssignKind::Parameter, AssignKind::Start] {
                if let Some(v) = t.get(kind.key()) {
                    let DeValue::Table(table) = v.get_ref() else {
                        return Err(t.err(
                            span_of(v),
                            format!(
                                "expected a table for '{}' (e.g. {} = {{ m = 1.0 }}), found {}",
                                kind.key(),
                                kind.key(),
                                describe(v.get_ref())
                            ),
                        ));
                    };
                    self.assignments(table, "", kind, &mut assignments)?;
                }
            }
            for (i, a) in assignments.iter().enumerate() {
                if let Some(first) = assignments.iter().take(i).find(|b| b.name == a.name) {
                    let line = match &first.name_origin {
                        Origin::File(s) => self.src.error(Some(*s), "").line.unwrap_or(0),
                        Origin::Argument(_) => 0,
                    };
                    let Origin::File(span) = a.name_origin else {
                        continue;
                    };
                    return Err(t.err(
                        span,
                        format!(
                            "variable '{}' of subsystem '{name}' is given a value twice (also in '{}' on line {line})",
                            a.name,
                            first.kind.key()
                        ),
                    ));
                }
            }
            out.push(SubsystemSpec {
                name: Located::new(name, name_span),
                fmu: Located::new(fmu_path, fmu_span),
                system,
                exposes,
                step_multiple,
                isolation,
                isolation_timeout,
                interface,
                solver,
                event_mode,
                span: t.span,
                assignments,
            });
        }
        Ok(out)
    }

    /// Reads a nested system: `system = "file.toml"` (another scenario file,
    /// relative to this one) or an inline table with the same keys as a
    /// scenario (`[subsystems.system]`, `[[subsystems.system.subsystems]]`,
    /// ...). Its `[simulation]` and `[outputs]` do not apply: the level
    /// above sets the times and writes the outputs.
    fn nested_system(&mut self, name: &str, value: &'a SValue<'a>) -> Result<Scenario> {
        let nested = match value.get_ref() {
            DeValue::String(file) => {
                let path = absolute(&self.base_dir.join(file.as_ref()));
                if self.chain.contains(&path) {
                    let cycle: Vec<String> = self
                        .chain
                        .iter()
                        .chain(std::iter::once(&path))
                        .map(|p| p.display().to_string())
                        .collect();
                    return Err(self.src.error(
                        Some(span_of(value)),
                        format!(
                            "nested system '{name}' includes itself: {}",
                            cycle.join(" -> ")
                        ),
                    ));
                }
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    self.src.error(
                        Some(span_of(value)),
                        format!(
                            "cannot read the scenario of nested system '{name}': {}: {e}",
                            path.display()
                        ),
                    )
                })?;
                let mut chain = self.chain.clone();
                chain.push(path.clone());
                Scenario::from_str_nested(&text, &path, chain)?
            }
            DeValue::Table(_) => Parser {
                src: self.src,
                base_dir: self.base_dir,
                stem: format!("{}.{name}", self.stem),
                warnings: Vec::new(),
                chain: self.chain.clone(),
                shared: self.shared.clone(),
            }
            .parse(value, self.shared.clone())?,
            other => {
                return Err(self.src.error(
                    Some(span_of(value)),
                    format!(
                        "expected the path of a scenario file or a table for 'system', found {}",
                        describe(other)
                    ),
                ));
            }
        };
        for w in nested.warnings() {
            self.warnings.push(w.clone());
        }
        if let Some(span) = nested.outputs.span {
            self.warn(
                span,
                format!("[outputs] of nested system '{name}' has no effect: the outputs are those of the top level (trace inner variables as \"{name}.<subsystem>.<variable>\")"),
            );
        }
        // (Nor its output interval: no check of it against the inner step.)
        let mut nested = nested;
        nested.outputs.sampling = Sampling::EveryStep;
        nested.outputs.sampling_origin = None;
        Ok(nested)
    }

    /// Reads `parameters`/`start`, joining nested tables (dotted keys such
    /// as `body.m = 1`) into dotted variable names.
    fn assignments(
        &self,
        table: &DeTable<'_>,
        prefix: &str,
        kind: AssignKind,
        out: &mut Vec<AssignSpec>,
    ) -> Result<()> {
        let mut entries: Vec<_> = table.iter().collect();
        entries.sort_by_key(|(k, _)| k.span().start);
        for (key, value) in entries {
            let k: &str = key.get_ref();
            let name = if prefix.is_empty() {
                k.to_string()
            } else {
                format!("{prefix}.{k}")
            };
            if let DeValue::Table(inner) = value.get_ref() {
                self.assignments(inner, &name, kind, out)?;
                continue;
            }
            let raw = RawValue::from_toml(value.get_ref()).map_err(|found| {
                self.src.error(
                    Some(span_of(value)),
                    format!(
                        "expected a number, boolean, string or array as the value of '{name}', found {found}"
                    ),
                )
            })?;
            out.push(AssignSpec {
                name,
                value: raw,
                kind,
                name_origin: Origin::File(span_of(key)),
                value_origin: Origin::File(span_of(value)),
            });
        }
        Ok(())
    }

    fn var_path(
        &self,
        t: &Table<'a, '_>,
        key: &str,
        subsystems: &SubsystemIndex<'_>,
        what: &str,
    ) -> Result<VarPath> {
        let (text, span) = t
            .string(key)?
            .ok_or_else(|| t.missing(key, &format!("the {what} as \"<subsystem>.<variable>\"")))?;
        parse_var_path(self.src, &text, span, subsystems)
    }

    /// `[[connections]]`: those between subsystems, and those with a
    /// function port at one end or both.
    fn connections(
        &mut self,
        root: &Table<'a, '_>,
        subsystems: &SubsystemIndex<'_>,
    ) -> Result<(Vec<ConnectionSpec>, Vec<FunctionConnectionSpec>)> {
        let mut out = Vec::new();
        let mut through_functions = Vec::new();
        for t in root.tables("connections", "[[connections]]", CONNECTION_KEYS)? {
            let from = self.end(&t, "from", subsystems, "output feeding the connection")?;
            let to = self.end(&t, "to", subsystems, "input fed by the connection")?;
            let finite = |x: f64| x.is_finite();
            let gain = t.f64_where("gain", "a finite number", finite)?;
            let offset = t.f64_where("offset", "a finite number", finite)?;
            let map_span = gain.or(offset).map(|g| g.1);
            let (gain, offset) = (gain.map_or(1.0, |g| g.0), offset.map_or(0.0, |o| o.0));
            let signal = t.bool("signal")?.is_some_and(|b| b.0);
            let unit_mismatch = t.bool("unit_mismatch")?.is_some_and(|b| b.0);
            match (from, to) {
                (End::Var(from), End::Var(to)) => out.push(ConnectionSpec {
                    from,
                    to,
                    gain,
                    offset,
                    map_span,
                    signal,
                    unit_mismatch,
                    span: t.span,
                }),
                (from, to) => {
                    self.check_function_connection(&from, &to, map_span, subsystems)?;
                    through_functions.push(FunctionConnectionSpec {
                        from,
                        to,
                        gain,
                        offset,
                        map_span,
                        signal,
                        unit_mismatch,
                        span: t.span,
                    });
                }
            }
        }
        Ok((out, through_functions))
    }

    /// `from` or `to` of a connection: a subsystem variable, or a port of
    /// a function.
    fn end(
        &self,
        t: &Table<'a, '_>,
        key: &str,
        subsystems: &SubsystemIndex<'_>,
        what: &str,
    ) -> Result<End> {
        let (text, span) = t
            .string(key)?
            .ok_or_else(|| t.missing(key, &format!("the {what} as \"<subsystem>.<variable>\"")))?;
        if let Some((name, port)) = text.split_once('.')
            && let Some(f) = subsystems.function(name)
        {
            let decl = &subsystems.functions[f];
            let port_span = sub_span(self.src, span, &text, name.len() + 1, port.len());
            let Some(p) = decl.spec.port_by_name(port) else {
                let names: Vec<String> = (0..decl.spec.n_ports())
                    .map(|p| decl.spec.port_name(p))
                    .collect();
                return Err(self
                    .src
                    .error(
                        Some(port_span),
                        format!(
                            "function '{name}' ({}) has no port '{port}'",
                            describe_function(&decl.spec)
                        ),
                    )
                    .with_help_opt(did_you_mean(port, names.iter().map(String::as_str)))
                    .with_note(format!("its ports are {}", port_list(&decl.spec))));
            };
            return Ok(End::Port(PortPath {
                function: f,
                port: p,
                text,
                span,
                port_span,
            }));
        }
        parse_var_path(self.src, &text, span, subsystems).map(End::Var)
    }

    /// What can be checked of a connection to or from a function without
    /// the FMUs: direction, and numeric types between two functions.
    fn check_function_connection(
        &self,
        from: &End,
        to: &End,
        map_span: Option<Span>,
        subsystems: &SubsystemIndex<'_>,
    ) -> Result<()> {
        let spec = |p: &PortPath| &subsystems.functions[p.function].spec;
        if let End::Port(p) = from
            && !spec(p).is_output(p.port)
        {
            let f = spec(p);
            return Err(self
                .src
                .error(
                    Some(p.port_span),
                    format!(
                        "'{}' is an input of function '{}': 'from' must name an output",
                        p.text, f.name
                    ),
                )
                .with_help(format!(
                    "the output of '{}' is {}; an input of a function is fed by a connection 'to' it",
                    f.name,
                    output_names(f)
                )));
        }
        if let End::Port(p) = to
            && spec(p).is_output(p.port)
        {
            let f = spec(p);
            return Err(self
                .src
                .error(
                    Some(p.port_span),
                    format!(
                        "'{}' is the output of function '{}': 'to' must name an input",
                        p.text, f.name
                    ),
                )
                .with_help(format!(
                    "the inputs of '{}' are {}; swap 'from' and 'to' to feed an input from it",
                    f.name,
                    input_names(f)
                )));
        }
        if let (End::Port(a), End::Port(b)) = (from, to)
            && spec(a).numeric != spec(b).numeric
        {
            return Err(self.src.error(
                Some(b.span),
                format!(
                    "type mismatch: '{}' is {} but '{}' is {}",
                    a.text,
                    numeric_name(spec(a).numeric),
                    b.text,
                    numeric_name(spec(b).numeric)
                ),
            ));
        }
        let integer = [from, to].into_iter().find_map(|e| match e {
            End::Port(p) if spec(p).numeric == cosim_core::NumericType::Integer => Some(p),
            _ => None,
        });
        if let (Some(p), Some(span)) = (integer, map_span) {
            return Err(self.src.error(
                Some(span),
                format!(
                    "'gain' and 'offset' apply to floating-point connections only; '{}' is an integer port (numeric_type = \"integer\")",
                    p.text
                ),
            ));
        }
        Ok(())
    }

    /// `[[functions]]`: function blocks evaluated in every exchange.
    fn functions(
        &mut self,
        root: &Table<'a, '_>,
        subsystems: &[SubsystemSpec],
    ) -> Result<Vec<FunctionDecl>> {
        let mut out: Vec<FunctionDecl> = Vec::new();
        for t in root.tables("functions", "[[functions]]", FUNCTION_KEYS)? {
            let (name, name_span) = t
                .string("name")?
                .ok_or_else(|| t.missing("name", "every function needs a unique name"))?;
            if !valid_subsystem_name(&name) {
                return Err(t.err(
                    name_span,
                    format!(
                        "invalid function name \"{name}\": use only letters, digits, '_' and '-'"
                    ),
                ));
            }
            let taken = subsystems
                .iter()
                .map(|s| ("subsystem", &s.name))
                .chain(out.iter().map(|f| ("function", &f.name)))
                .find(|(_, n)| n.value == name);
            if let Some((what, first)) = taken {
                let line = self.src.error(Some(first.span), "").line.unwrap_or(0);
                return Err(t
                    .err(
                        name_span,
                        format!("duplicate name '{name}': a {what} is called so too (line {line})"),
                    )
                    .with_help(
                        "subsystems and functions share one namespace: \"<name>.<variable or port>\"",
                    ));
            }
            let (kind, _) = t.choice("kind", FUNCTION_KINDS)?.ok_or_else(|| {
                t.missing("kind", "the kind of function: \"sum\" or \"vector-sum\"")
            })?;
            let (inputs, _) = t.int_in("inputs", 1, MAX_FUNCTION_SIZE)?.ok_or_else(|| {
                t.missing(
                    "inputs",
                    "the number of inputs added (libcosim's inputCount)",
                )
            })?;
            let inputs = usize::try_from(inputs).unwrap_or(1);
            let dimension = t.int_in("dimension", 1, MAX_FUNCTION_SIZE)?;
            let numeric = t.choice("numeric_type", &["real", "integer"])?;
            let spec = if kind == 0 {
                if let Some((_, span)) = dimension {
                    return Err(t
                        .err(
                            span,
                            "'dimension' is for kind \"vector-sum\": a \"sum\" is scalar",
                        )
                        .with_help("use kind = \"vector-sum\" to add vectors"));
                }
                if let Some((_, span)) = numeric {
                    return Err(t
                        .err(
                            span,
                            "'numeric_type' is for kind \"vector-sum\": a \"sum\" adds reals (as libcosim's Sum)",
                        )
                        .with_help("to add integers, use kind = \"vector-sum\" with numeric_type = \"integer\" (and dimension = 1)"));
                }
                cosim_core::FunctionSpec::sum(name.clone(), inputs)
            } else {
                let dimension = dimension.map_or(1, |(d, _)| usize::try_from(d).unwrap_or(1));
                let numeric = match numeric {
                    Some((1, _)) => cosim_core::NumericType::Integer,
                    _ => cosim_core::NumericType::Real,
                };
                cosim_core::FunctionSpec::vector_sum(name.clone(), inputs, dimension, numeric)
            };
            out.push(FunctionDecl {
                name: Located::new(name, name_span),
                spec,
                span: t.span,
            });
        }
        Ok(out)
    }

    fn bonds(
        &mut self,
        root: &Table<'a, '_>,
        subsystems: &SubsystemIndex<'_>,
    ) -> Result<Vec<BondSpec>> {
        let mut out: Vec<BondSpec> = Vec::new();
        let mut first_of: HashMap<String, Span> = HashMap::new();
        for t in root.tables("bonds", "[[bonds]]", BOND_KEYS)? {
            let ports_value = t.get("ports").ok_or_else(|| {
                t.missing(
                    "ports",
                    "a bond has two ports, e.g. ports = [{ input = \"a.F\", output = \"a.v\" }, { input = \"b.v\", output = \"b.F\" }]",
                )
            })?;
            let ports_span = span_of(ports_value);
            let DeValue::Array(items) = ports_value.get_ref() else {
                return Err(t.err(
                    ports_span,
                    format!(
                        "expected an array of two ports for 'ports', found {}",
                        describe(ports_value.get_ref())
                    ),
                ));
            };
            if items.len() != 2 {
                return Err(t.err(
                    ports_span,
                    format!(
                        "a bond has exactly two ports, one per subsystem; found {}",
                        items.len()
                    ),
                ));
            }
            let mut ports = Vec::new();
            for item in items.iter() {
                let p = Table::new(self.src, item, "a bond port", PORT_KEYS)?;
                let input = self.var_path(&p, "input", subsystems, "port's input")?;
                let output = self.var_path(&p, "output", subsystems, "port's output")?;
                if input.subsystem != output.subsystem {
                    return Err(p.err(
                        p.span,
                        format!(
                            "a port is an input and an output of one subsystem, but '{}' and '{}' are on different subsystems",
                            input.text, output.text
                        ),
                    ));
                }
                ports.push(PortSpec {
                    input,
                    output,
                    span: p.span,
                });
            }
            let [a, b]: [PortSpec; 2] = match ports.try_into() {
                Ok(p) => p,
                Err(_) => return Err(t.err(ports_span, "a bond has exactly two ports")),
            };
            if a.input.subsystem == b.input.subsystem {
                return Err(t.err(
                    ports_span,
                    format!(
                        "both ports of the bond are on subsystem '{}': a bond joins two different subsystems",
                        subsystem_name(subsystems.specs, a.input.subsystem)
                    ),
                ));
            }
            let name = match t.string("name")? {
                Some((n, span)) if n.trim().is_empty() => {
                    return Err(t.err(span, "the bond name is empty"));
                }
                Some((n, span)) => Located::new(n, span),
                None => Located::new(format!("{}~{}", a.input.text, b.input.text), t.span),
            };
            if let Some(first) = first_of.insert(name.value.clone(), t.span) {
                let line = self.src.error(Some(first), "").line.unwrap_or(0);
                return Err(t.err(
                    name.span,
                    format!(
                        "duplicate bond name '{}' (first bond on line {line})",
                        name.value
                    ),
                ));
            }
            let positive = |x: f64| x > 0.0;
            let tolerance = t.f64_where("tolerance", "a positive number", positive)?;
            let energy_scale =
                t.f64_where("energy_scale", "a positive number of joules", positive)?;
            out.push(BondSpec {
                name,
                ports: [a, b],
                ports_span,
                tolerance: tolerance.map(|x| x.0),
                energy_scale: energy_scale.map(|x| x.0),
                intended: t.bool("intended")?.is_some_and(|b| b.0),
                span: t.span,
            });
        }
        Ok(out)
    }

    /// `[[inputs]]`: `file` (relative to the scenario file) and optional
    /// `columns = { "<subsystem>.<input>" = "<column>" }`.
    fn inputs(
        &mut self,
        root: &Table<'a, '_>,
        subsystems: &SubsystemIndex<'_>,
    ) -> Result<Vec<InputSpec>> {
        let mut out = Vec::new();
        for t in root.tables("inputs", "[[inputs]]", INPUT_KEYS)? {
            let (file, file_span) = t.string("file")?.ok_or_else(|| {
                t.missing(
                    "file",
                    "the CSV file of time and values, e.g. file = \"inputs.csv\"",
                )
            })?;
            if file.trim().is_empty() {
                return Err(t.err(file_span, "'file' is empty: give the path of a CSV file"));
            }
            let columns = match t.get("columns") {
                None => None,
                Some(v) => {
                    let DeValue::Table(table) = v.get_ref() else {
                        return Err(t.err(
                            span_of(v),
                            format!(
                                "expected a table for 'columns' (e.g. columns = {{ \"chassis.F\" = \"force\" }}), found {}",
                                describe(v.get_ref())
                            ),
                        ));
                    };
                    let mut entries = Vec::new();
                    self.columns(table, "", subsystems, &mut entries)?;
                    if entries.is_empty() {
                        return Err(t.err(
                            span_of(v),
                            "'columns' is empty: map inputs to columns, or leave it out when the header names the inputs",
                        ));
                    }
                    Some(entries)
                }
            };
            out.push(InputSpec {
                file: absolute(&self.base_dir.join(&file)),
                origin: Origin::File(file_span),
                span: Some(t.span),
                columns,
                csv: None,
            });
        }
        Ok(out)
    }

    /// The entries of `columns`, joining dotted keys (`chassis.F = "f"`).
    fn columns(
        &self,
        table: &DeTable<'_>,
        prefix: &str,
        subsystems: &SubsystemIndex<'_>,
        out: &mut Vec<(VarPath, String, Span)>,
    ) -> Result<()> {
        let mut entries: Vec<_> = table.iter().collect();
        entries.sort_by_key(|(k, _)| k.span().start);
        for (key, value) in entries {
            let k: &str = key.get_ref();
            let name = if prefix.is_empty() {
                k.to_string()
            } else {
                format!("{prefix}.{k}")
            };
            match value.get_ref() {
                DeValue::Table(inner) => self.columns(inner, &name, subsystems, out)?,
                DeValue::String(column) => {
                    let path = parse_var_path(self.src, &name, span_of(key), subsystems)?;
                    if let Some((first, _, _)) = out.iter().find(|(p, _, _)| p.text == path.text) {
                        let line = self.src.error(Some(first.span), "").line.unwrap_or(0);
                        return Err(self.src.error(
                            Some(span_of(key)),
                            format!("input '{name}' is given a column twice (also on line {line})"),
                        ));
                    }
                    out.push((path, column.to_string(), span_of(value)));
                }
                other => {
                    return Err(self.src.error(
                        Some(span_of(value)),
                        format!(
                            "expected the name of a column of the file for '{name}', found {}",
                            describe(other)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn outputs(
        &mut self,
        root: &Table<'a, '_>,
        subsystems: &SubsystemIndex<'_>,
    ) -> Result<OutputsSpec> {
        let default_dir = self.base_dir.join(defaults::OUTPUT_DIR).join(&self.stem);
        let mut spec = OutputsSpec {
            span: None,
            dir: default_dir,
            trace: Some(defaults::TRACE.to_string()),
            energy_log: Some(defaults::ENERGY_LOG.to_string()),
            step_log: Some(defaults::STEP_LOG.to_string()),
            summary: Some(defaults::SUMMARY.to_string()),
            variables: None,
            sampling: Sampling::EveryStep,
            sampling_origin: None,
        };
        let Some(t) = root.table("outputs", "[outputs]", OUTPUT_KEYS)? else {
            return Ok(spec);
        };
        spec.span = Some(t.span);
        if let Some((dir, span)) = t.string("dir")? {
            if dir.trim().is_empty() {
                return Err(t.err(
                    span,
                    "'dir' is empty: give a directory (\".\" for the scenario's own)",
                ));
            }
            spec.dir = absolute(&self.base_dir.join(&dir));
            if spec.dir.exists() && !spec.dir.is_dir() {
                return Err(t.err(
                    span,
                    format!(
                        "'dir' = \"{dir}\" is a file, not a directory ({})",
                        spec.dir.display()
                    ),
                ));
            }
        }
        let mut files: Vec<(String, &str, Span)> = Vec::new();
        for (key, slot) in [
            ("trace", &mut spec.trace),
            ("energy_log", &mut spec.energy_log),
            ("step_log", &mut spec.step_log),
            ("summary", &mut spec.summary),
        ] {
            if let Some((value, span)) = t.file_or_false(key)? {
                *slot = value;
                if let Some(name) = slot {
                    if let Some(why) = leaves_output_dir(name) {
                        return Err(t
                            .err(
                                span,
                                format!(
                                    "'{key}' = \"{name}\" {why}: output files stay inside the output directory"
                                ),
                            )
                            .with_help(
                                "give a file name (or a relative path without '..'); choose the directory with 'dir' or --out",
                            ));
                    }
                    files.push((name.clone(), key, span));
                }
            }
        }
        let same = |a: &str, b: &str| {
            Path::new(a).components().collect::<Vec<_>>()
                == Path::new(b).components().collect::<Vec<_>>()
        };
        for (i, (name, key, span)) in files.iter().enumerate() {
            if let Some((_, other, _)) = files.iter().take(i).find(|f| same(&f.0, name)) {
                return Err(t.err(
                    *span,
                    format!("'{key}' and '{other}' would both write \"{name}\""),
                ));
            }
        }
        if let Some((vars, _)) = t.unique_strings("variables")? {
            for (text, span) in &vars {
                let Some((sub, pattern)) = text.split_once('.') else {
                    return Err(t.err(
                        *span,
                        format!(
                            "\"{text}\" is not of the form \"<subsystem>.<variable or pattern>\""
                        ),
                    ));
                };
                if pattern.is_empty() {
                    return Err(t.err(*span, format!("\"{text}\" names no variable after the '.'")));
                }
                if !is_glob(sub) && subsystems.function(sub).is_none() {
                    let sub_span = sub_span(self.src, *span, text, 0, sub.len());
                    find_subsystem(self.src, subsystems, sub, sub_span)?;
                }
            }
            spec.variables = Some(vars);
        }
        let interval = t.f64_where("interval", "a positive number of seconds", |x| x > 0.0)?;
        let decimation = t.int_in("decimation", 1, i64::MAX)?;
        match (interval, decimation) {
            (Some((_, si)), Some((_, sd))) => {
                let (later, other, other_span) = if si.start > sd.start {
                    (si, "decimation", sd)
                } else {
                    (sd, "interval", si)
                };
                let line = self.src.error(Some(other_span), "").line.unwrap_or(0);
                return Err(t
                    .err(
                        later,
                        format!(
                            "'interval' and 'decimation' are mutually exclusive ('{other}' is given on line {line})"
                        ),
                    )
                    .with_help("keep one of them"));
            }
            (Some((x, span)), None) => {
                spec.sampling = Sampling::Interval(x);
                spec.sampling_origin = Some(Origin::File(span));
            }
            (None, Some((n, span))) => {
                spec.sampling = Sampling::Decimation(u64::try_from(n).unwrap_or(1));
                spec.sampling_origin = Some(Origin::File(span));
            }
            (None, None) => {}
        }
        Ok(spec)
    }
}

/// Why an output file name would put the file outside the output
/// directory, if it would: an absolute path, or one that climbs (`..`).
fn leaves_output_dir(name: &str) -> Option<&'static str> {
    use std::path::Component;
    let path = Path::new(name);
    if path.is_absolute() || path.has_root() {
        return Some("is an absolute path");
    }
    if path
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
    {
        return Some("climbs out of the output directory ('..')");
    }
    if path.components().all(|c| c == Component::CurDir) {
        return Some("names the output directory itself, not a file");
    }
    None
}

/// `[subsystems.solver]`: each setting checked where it is written.
fn solver(t: &Table<'_, '_>) -> Result<SolverSpec> {
    let positive = |x: f64| x > 0.0;
    let tolerance = |x: f64| x > 0.0 && x < 1.0;
    let mut s = SolverSpec::default();
    if let Some((i, _)) = t.choice("method", &SolverMethod::NAMES)? {
        s.method = SolverMethod::ALL.get(i).copied();
    }
    s.relative_tolerance = t
        .f64_where("relative_tolerance", "in (0, 1)", tolerance)?
        .map(|(x, _)| x);
    s.absolute_tolerance = t
        .f64_where("absolute_tolerance", "a positive number", positive)?
        .map(|(x, _)| x);
    s.max_step = t
        .f64_where("max_step", "a positive number of seconds", positive)?
        .map(|(x, _)| x);
    s.initial_step = t
        .f64_where("initial_step", "a positive number of seconds", positive)?
        .map(|(x, _)| x);
    if let Some((k, span)) = t.int_in("max_order", 1, 5)? {
        if s.method == Some(SolverMethod::Rk45) {
            return Err(t.err(
                span,
                "'max_order' is for method \"bdf\"; \"rk45\" has a fixed order",
            ));
        }
        if k < 5 {
            return Err(t
                .err(
                    span,
                    format!("'max_order' {k}: the BDF of cosim's solver (diffsol) always uses orders 1 to 5 and cannot be capped lower"),
                )
                .with_help("leave 'max_order' out (or 5), or use method = \"rk45\" for a non-stiff model"));
        }
        s.max_order = u32::try_from(k).ok();
    }
    if let (Some(h0), Some(hmax)) = (s.initial_step, s.max_step)
        && h0 > hmax
    {
        let span = t.get("initial_step").map(span_of);
        return Err(t.src.error(
            span,
            format!("initial_step ({h0}) is larger than max_step ({hmax})"),
        ));
    }
    Ok(s)
}

fn controller(c: &Table<'_, '_>) -> Result<Controller> {
    let mut k = Controller::default();
    let positive = |x: f64| x > 0.0;
    if let Some((x, _)) = c.f64_where("alpha", "in (0, 1]", |x| x > 0.0 && x <= 1.0)? {
        k.alpha = x;
    }
    if let Some((x, _)) = c.f64_where("dt_min", "a positive number of seconds", positive)? {
        k.dt_min = x;
    }
    if let Some((x, _)) = c.f64_where("dt_max", "a positive number of seconds", positive)? {
        k.dt_max = x;
    }
    if k.dt_min > k.dt_max {
        let span = c.get("dt_max").or(c.get("dt_min")).map(span_of);
        return Err(c.src.error(
            span,
            format!("dt_min ({}) is larger than dt_max ({})", k.dt_min, k.dt_max),
        ));
    }
    if let Some((x, _)) = c.f64_where("theta_min", "in (0, 1)", |x| x > 0.0 && x < 1.0)? {
        k.theta_min = x;
    }
    if let Some((x, _)) = c.f64_where("theta_max", "greater than 1", |x| x > 1.0)? {
        k.theta_max = x;
    }
    if let Some((x, _)) = c.f64_where("k_i", "a positive number", positive)? {
        k.k_i = Some(x);
    }
    if let Some((x, _)) = c.f64_where("k_p", "a number >= 0", |x| x >= 0.0)? {
        k.k_p = Some(x);
    }
    if let Some((i, _)) = c.choice("variant", &["sadjina2016", "libcosim"])? {
        k.variant = if i == 0 {
            PiVariant::Sadjina2016
        } else {
            PiVariant::Libcosim
        };
    }
    Ok(k)
}

pub(crate) fn subsystem_name(subsystems: &[SubsystemSpec], i: usize) -> &str {
    subsystems.get(i).map_or("?", |s| s.name.value.as_str())
}

/// The index of subsystem `name`, or an error at `span` with the nearest name.
pub(crate) fn find_subsystem(
    src: &Source,
    subsystems: &SubsystemIndex<'_>,
    name: &str,
    span: Span,
) -> Result<usize> {
    subsystems.by_name.get(name).copied().ok_or_else(|| {
        if subsystems.function(name).is_some() {
            return src
                .error(
                    Some(span),
                    format!("'{name}' is a function, not a subsystem"),
                )
                .with_help(
                    "function ports are reached by [[connections]] and traced by [outputs] variables; bonds, input files, 'order' and parameters name subsystems",
                );
        }
        let names: Vec<&str> = subsystems
            .specs
            .iter()
            .map(|s| s.name.value.as_str())
            .collect();
        src.error(Some(span), format!("unknown subsystem '{name}'"))
            .with_help(
                did_you_mean(name, names.iter().copied())
                    .unwrap_or_else(|| format!("the subsystems are: {}", names.join(", "))),
            )
    })
}

/// The span of `text[offset..offset + len]` inside the string value written
/// at `span`, when the value is a plain (escape-free) string literal; else
/// the whole value.
pub(crate) fn sub_span(src: &Source, span: Span, text: &str, offset: usize, len: usize) -> Span {
    let raw = src.text.get(span.start..span.end).unwrap_or_default();
    for quote in ["\"", "'"] {
        if raw.len() == text.len() + 2
            && raw.starts_with(quote)
            && raw.ends_with(quote)
            && raw.get(1..raw.len() - 1) == Some(text)
        {
            let start = span.start + 1 + offset;
            return Span::new(start, start + len);
        }
    }
    span
}

/// Parses `"<subsystem>.<variable>"` (split at the first dot).
pub(crate) fn parse_var_path(
    src: &Source,
    text: &str,
    span: Span,
    subsystems: &SubsystemIndex<'_>,
) -> Result<VarPath> {
    let Some((sub, var)) = text.split_once('.') else {
        return Err(src
            .error(
                Some(span),
                format!("\"{text}\" is not of the form \"<subsystem>.<variable>\""),
            )
            .with_help_opt(suggest_dotted(text, subsystems.specs)));
    };
    if var.is_empty() {
        return Err(src.error(
            Some(span),
            format!("\"{text}\" names no variable after the '.'"),
        ));
    }
    let sub_span = sub_span(src, span, text, 0, sub.len());
    let subsystem = find_subsystem(src, subsystems, sub, sub_span)?;
    Ok(VarPath {
        subsystem,
        variable: var.to_string(),
        text: text.to_string(),
        span,
        var_span: sub_span_after(src, span, text, sub.len() + 1),
    })
}

fn sub_span_after(src: &Source, span: Span, text: &str, offset: usize) -> Span {
    sub_span(src, span, text, offset, text.len().saturating_sub(offset))
}

/// For "wheelF_c": "did you mean 'wheel.F_c'?" when it starts with a subsystem name.
fn suggest_dotted(text: &str, subsystems: &[SubsystemSpec]) -> Option<String> {
    subsystems.iter().find_map(|s| {
        let rest = text.strip_prefix(s.name.value.as_str())?;
        let rest = rest.trim_start_matches(['_', ':', '/', '-']);
        (!rest.is_empty()).then(|| format!("did you mean '{}.{rest}'?", s.name.value))
    })
}

/// "a sum of 2 inputs", "a vector-sum of 2 integer vectors of 3" ...
pub(crate) fn describe_function(f: &cosim_core::FunctionSpec) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    match f.kind {
        cosim_core::FunctionKind::Sum => {
            format!("a sum of {} input{}", f.inputs, plural(f.inputs))
        }
        cosim_core::FunctionKind::VectorSum => format!(
            "a vector-sum of {} {} vector{} of {} component{}",
            f.inputs,
            numeric_name(f.numeric),
            plural(f.inputs),
            f.dimension,
            plural(f.dimension)
        ),
    }
}

/// "real" or "integer".
pub(crate) fn numeric_name(n: cosim_core::NumericType) -> &'static str {
    match n {
        cosim_core::NumericType::Real => "real",
        cosim_core::NumericType::Integer => "integer",
    }
}

/// The inputs of a function for messages: "'in[0]', 'in[1]'" or
/// "'in[0][0]' to 'in[1][2]'".
pub(crate) fn input_names(f: &cosim_core::FunctionSpec) -> String {
    let last = f.inputs * f.dimension - 1;
    match last {
        0 => format!("'{}'", f.port_name(0)),
        1 => format!("'{}' and '{}'", f.port_name(0), f.port_name(1)),
        _ => format!("'{}' to '{}'", f.port_name(0), f.port_name(last)),
    }
}

/// The outputs of a function for messages.
pub(crate) fn output_names(f: &cosim_core::FunctionSpec) -> String {
    let first = f.output_port(0);
    match f.dimension {
        1 => format!("'{}'", f.port_name(first)),
        2 => format!("'{}' and '{}'", f.port_name(first), f.port_name(first + 1)),
        d => format!(
            "'{}' to '{}'",
            f.port_name(first),
            f.port_name(first + d - 1)
        ),
    }
}

/// Every port of a function, for notes.
pub(crate) fn port_list(f: &cosim_core::FunctionSpec) -> String {
    format!(
        "{} (inputs) and {} (output)",
        input_names(f),
        output_names(f)
    )
}

/// The help for a missing FMU that is one of the project's own (a path
/// `<checkout>/fmus/dist/...` of a cosim checkout, which a fresh clone does
/// not have until they are built): the one command that builds them.
pub(crate) fn project_fmu_help(path: &Path) -> Option<String> {
    let parts: Vec<_> = path.components().collect();
    let at = parts
        .windows(2)
        .position(|w| w[0].as_os_str() == "fmus" && w[1].as_os_str() == "dist")?;
    let root: PathBuf = parts[..at].iter().collect();
    let root = if root.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        root
    };
    // A cosim checkout: the kit's models and the xtask that builds them.
    if !(root.join("xtask").is_dir() && root.join("fmus").join("models").is_dir()) {
        return None;
    }
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    Some(format!(
        "this is one of the project's own FMUs, which are built, not checked in: run `cargo xtask fmus` in {} (it builds them all into fmus/dist/; `cargo xtask demo` does too)",
        root.display()
    ))
}
