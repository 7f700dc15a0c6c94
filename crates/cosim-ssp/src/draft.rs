//! What an SSP or OSP file describes, in scenario terms, with the place in
//! the source every item comes from. Both readers produce a [`Draft`];
//! `emit` turns it into TOML.

use std::path::PathBuf;

use crate::source::Src;

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Val<T> {
    pub value: T,
    pub src: Src,
}

impl<T> Val<T> {
    pub(crate) fn new(value: T, src: Src) -> Self {
        Val { value, src }
    }
}

/// A parameter or start value before it is typed by its variable.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawValue {
    Float(f64),
    Int(i64),
    Bool(bool),
    Str(String),
}

/// One `parameters` or `start` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Assign {
    pub name: String,
    pub name_src: Src,
    pub value: RawValue,
    pub value_src: Src,
}

/// A subsystem: an FMU, or a nested system.
#[derive(Debug, Clone)]
pub(crate) struct SubDraft {
    /// The scenario name (valid: letters, digits, `_`, `-`).
    pub name: String,
    /// Where the element's name is written.
    pub name_src: Src,
    /// The FMU, absolute (empty for a nested system).
    pub fmu: PathBuf,
    pub fmu_src: Src,
    /// A nested system (`system = { ... }`) instead of an FMU.
    pub system: Option<Box<Draft>>,
    /// For a nested system: `exposes`.
    pub exposes: Vec<Val<String>>,
    pub step_multiple: Option<Val<u32>>,
    /// `interface` (`"co-simulation"`, `"model-exchange"`): an SSP
    /// component's `implementation`, where it names one.
    pub interface: Option<Val<&'static str>>,
    pub parameters: Vec<Assign>,
    pub start: Vec<Assign>,
    /// The element (`<ssd:Component>`, `<Simulator>`).
    pub src: Src,
}

/// `"<subsystem>.<variable>"`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct VarRef {
    /// Index into [`Draft::subsystems`].
    pub sub: usize,
    pub var: String,
    pub sub_src: Src,
    pub var_src: Src,
}

/// A connection `to = gain * from + offset`.
#[derive(Debug, Clone)]
pub(crate) struct ConnDraft {
    pub from: VarRef,
    pub to: VarRef,
    pub gain: f64,
    pub offset: f64,
    /// Where the transformation (or the unit conversion) is written.
    pub map_src: Option<Src>,
    pub unit_mismatch: bool,
    /// The connection element.
    pub src: Src,
    /// A comment for the TOML (e.g. the unit conversion made).
    pub comment: Option<String>,
}

/// A declared power bond: two ports (input, output).
#[derive(Debug, Clone)]
pub(crate) struct BondDraft {
    pub name: Val<String>,
    pub ports: [(VarRef, VarRef); 2],
    pub intended: bool,
    pub src: Src,
}

/// `[master]` and `[master.controller]` keys.
#[derive(Debug, Clone, Default)]
pub(crate) struct MasterDraft {
    pub kind: Option<Val<&'static str>>,
    pub step: Option<Val<f64>>,
    /// Where the step comes from, when not from the place of its source
    /// (a comment for the TOML).
    pub step_origin: Option<String>,
    /// Worker threads for Jacobi stepping.
    pub threads: Option<Val<u32>>,
    pub discover_bonds: Option<Val<bool>>,
    pub tolerance: Option<Val<f64>>,
    pub energy_scale: Option<Val<f64>>,
    /// ECCO as libcosim computes it (`energy_reference =
    /// "largest-residual"`, `[master.controller] variant = "libcosim"`),
    /// from the `<Algorithm>` at this place.
    pub libcosim_ecco: Option<Src>,
    /// `(key, value)` of `[master.controller]`.
    pub controller: Vec<(&'static str, Val<f64>)>,
}

/// An element that was not converted, for a comment in the TOML.
#[derive(Debug, Clone)]
pub(crate) struct Skipped {
    pub src: Src,
    pub text: String,
}

/// A function block: `[[functions]]`.
#[derive(Debug, Clone)]
pub(crate) struct FuncDraft {
    /// The scenario name (valid, unique among subsystems and functions).
    pub name: String,
    pub name_src: Src,
    /// `"sum"` or `"vector-sum"`.
    pub kind: &'static str,
    pub inputs: Val<u32>,
    /// `dimension` (vector-sum).
    pub dimension: Option<Val<u32>>,
    /// `numeric_type` when not real (vector-sum).
    pub integer: Option<Src>,
    /// The element.
    pub src: Src,
}

/// A port of a function, `"<function>.<port>"`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PortRef {
    /// Index into [`Draft::functions`].
    pub func: usize,
    /// `in[0]`, `out`, `in[1][2]` ...
    pub port: String,
    pub func_src: Src,
    pub port_src: Src,
}

/// An end of a connection to or from a function.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EndDraft {
    Var(VarRef),
    Port(PortRef),
}

/// A connection to or from a function port (no gain: OSP signal
/// connections carry none).
#[derive(Debug, Clone)]
pub(crate) struct FuncConnDraft {
    pub from: EndDraft,
    pub to: EndDraft,
    /// The connection element.
    pub src: Src,
    /// A comment for the TOML.
    pub comment: Option<String>,
}

/// A whole system (or a nested one: then without times or outputs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Draft {
    /// "SSP 1.0", "OSP" ... for the TOML header.
    pub format: String,
    /// The root element.
    pub root_src: Src,
    pub start: Option<Val<f64>>,
    pub stop: Option<Val<f64>>,
    /// Where `start` and `stop` come from when not from the place of their
    /// source (a comment for the TOML).
    pub times_origin: Option<String>,
    /// Where `stop` comes from when given on the command line (a comment
    /// for the TOML; takes precedence over `times_origin`).
    pub stop_origin: Option<String>,
    /// No stop time anywhere (file, FMUs, command line): a comment on
    /// `[simulation]` saying how to give one, where a run's error points.
    pub stop_missing: Option<String>,
    /// Header comments: what a run refuses as the scenario stands
    /// (`cosim convert` writes it anyway), then the warnings.
    pub before_run: Vec<String>,
    pub warnings: Vec<String>,
    pub master: MasterDraft,
    pub subsystems: Vec<SubDraft>,
    pub connections: Vec<ConnDraft>,
    /// `[[functions]]` (OSP `Sum`, `VectorSum`).
    pub functions: Vec<FuncDraft>,
    /// `[[connections]]` to and from function ports.
    pub function_connections: Vec<FuncConnDraft>,
    pub bonds: Vec<BondDraft>,
    /// `[outputs] variables`, when the default would not do.
    pub outputs: Vec<Val<String>>,
    pub skipped: Vec<Skipped>,
}

impl Draft {
    pub(crate) fn new(format: impl Into<String>, root_src: Src) -> Draft {
        Draft {
            format: format.into(),
            root_src,
            start: None,
            stop: None,
            times_origin: None,
            stop_origin: None,
            stop_missing: None,
            before_run: Vec::new(),
            warnings: Vec::new(),
            master: MasterDraft::default(),
            subsystems: Vec::new(),
            connections: Vec::new(),
            functions: Vec::new(),
            function_connections: Vec::new(),
            bonds: Vec::new(),
            outputs: Vec::new(),
            skipped: Vec::new(),
        }
    }
}

/// A valid, unique scenario name for `name` (letters, digits, `_` and `-`;
/// anything else becomes `_`), not in `taken`.
pub(crate) fn scenario_name(name: &str, taken: &std::collections::HashSet<String>) -> String {
    let mut base: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if base.is_empty() {
        base = "component".to_string();
    }
    if !taken.contains(&base) {
        return base;
    }
    (2..)
        .map(|i| format!("{base}_{i}"))
        .find(|n| !taken.contains(n))
        .unwrap_or(base)
}
