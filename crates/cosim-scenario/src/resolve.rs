//! Matching a scenario against its FMUs' model descriptions: every name
//! becomes a variable index, every value gets its FMI type, and every
//! connection, bond and output is checked.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosim_fmi::ModelDescription;
use cosim_fmi::bonds::check_effort_flow_pair;
use cosim_fmi::model_description::units::{POWER, variable_base_unit};
use cosim_fmi::model_description::{
    Causality, FmiVersion, Initial, StartValue, Variability, Variable, VariableIndex, VariableType,
};
use serde::Serialize;

use crate::error::{ScenarioError, Severity, Source, Span, did_you_mean, nearest};
use crate::read::Result;
use crate::scenario::{
    AssignKind, AssignSpec, End, FunctionConnectionSpec, InputSpec, Origin, RawValue, Scenario,
    VarPath, describe_function, is_glob, numeric_name, port_list, sub_span,
};
use crate::settings::{Isolation, MasterKind, MasterSettings, OutputSettings, Sampling};
use cosim_core::time::TimeBase;

/// A variable of one subsystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct VariableRef {
    /// Index into [`ResolvedScenario::subsystems`].
    pub subsystem: usize,
    /// Index into that subsystem's `ModelDescription::variables`.
    pub variable: VariableIndex,
    /// The element of an FMI 3 array, row-major from 0; 0 for a scalar.
    pub element: usize,
}

/// Where a parameter or start value was given.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ValueOrigin {
    /// In the scenario file, at this value.
    File(Span),
    /// By this command-line argument (`--set chassis.m_c=500`).
    Argument(String),
}

/// A parameter or start value, typed for its variable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Assignment {
    /// The variable.
    pub variable: VariableIndex,
    /// Its name (for messages).
    pub name: String,
    /// The value, of the variable's type: `Float` for Float32/Float64,
    /// `Int` for the integer types and enumerations, `Bool`, `String`; one
    /// element for a scalar, all elements (row-major) for an FMI 3 array.
    pub value: StartValue,
    /// Where it was given.
    pub origin: ValueOrigin,
}

/// One subsystem, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedSubsystem {
    /// The unique name.
    pub name: String,
    /// The FMU file (absolute).
    pub fmu: PathBuf,
    /// Steps every `step_multiple`-th macro step (>= 1).
    pub step_multiple: u32,
    /// Where its FMU runs (the subsystem's `isolation`, else the
    /// `[master]` default).
    pub isolation: Isolation,
    /// Longest FMU call when isolated, s (`isolation_timeout`).
    pub isolation_timeout: f64,
    /// `event_mode` as given (`None`: the default, event mode where the
    /// FMU has it and the master handles events).
    pub event_mode: Option<bool>,
    /// Values for variables of causality `parameter` (or FMI 3
    /// `structuralParameter`), in the order given.
    pub parameters: Vec<Assignment>,
    /// Start values of the other variables (inputs; outputs and locals with
    /// `initial` exact or approx), in the order given.
    pub start_values: Vec<Assignment>,
    /// The `[[subsystems]]` table.
    pub span: Span,
    /// The `fmu` value.
    pub fmu_span: Span,
}

impl ResolvedSubsystem {
    /// The shape of variable `v` of this subsystem's FMU (`md`) in this
    /// run (empty for a scalar): structural parameters at the values the
    /// scenario gives them, else their starts.
    pub fn shape(
        &self,
        md: &ModelDescription,
        v: VariableIndex,
    ) -> std::result::Result<Vec<usize>, String> {
        md.shape(v, &|k| {
            self.parameters
                .iter()
                .find(|a| a.variable == k)
                .and_then(|a| match &a.value {
                    StartValue::Int(x) if x.len() == 1 => u64::try_from(x[0]).ok(),
                    _ => None,
                })
        })
    }
}

/// A connection, resolved: `to = gain * from + offset`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedConnection {
    /// The output.
    pub from: VariableRef,
    /// The input.
    pub to: VariableRef,
    /// Gain (1 unless given).
    pub gain: f64,
    /// Offset (0 unless given).
    pub offset: f64,
    /// A signal: excluded from error estimation.
    pub signal: bool,
    /// Whether a unit mismatch was declared intended.
    pub unit_mismatch: bool,
    /// The `[[connections]]` table.
    pub span: Span,
}

/// A port of a function (`[[functions]]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct FunctionPort {
    /// Index into [`ResolvedScenario::functions`].
    pub function: usize,
    /// The port ([`cosim_core::FunctionSpec::port_name`]).
    pub port: usize,
}

/// An end of a connection to or from a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum FunctionEnd {
    /// A variable of a subsystem: an output as a source, an input as a
    /// destination.
    Variable(VariableRef),
    /// A function port: an output as a source, an input as a destination.
    Port(FunctionPort),
}

/// A function block, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedFunction {
    /// What it computes, with its name.
    pub spec: cosim_core::FunctionSpec,
    /// The `[[functions]]` table.
    pub span: Span,
}

/// A connection to or from a function port: `to = gain * from + offset`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedFunctionConnection {
    /// A subsystem output or a function output.
    pub from: FunctionEnd,
    /// A function input or a subsystem input.
    pub to: FunctionEnd,
    /// Gain (1 unless given).
    pub gain: f64,
    /// Offset (0 unless given).
    pub offset: f64,
    /// A signal: excluded from error estimation.
    pub signal: bool,
    /// The `[[connections]]` table.
    pub span: Span,
}

/// A traced value: a variable of a subsystem, or a function port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Traced {
    /// A subsystem's variable.
    Variable(VariableRef),
    /// A function's port.
    Port(FunctionPort),
}

/// One side of a power bond: an input and an output of one subsystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BondPort {
    /// The subsystem.
    pub subsystem: usize,
    /// Its input (e.g. the force it receives).
    pub input: VariableIndex,
    /// Its output (e.g. the velocity it returns).
    pub output: VariableIndex,
}

/// An explicitly declared power bond, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedBond {
    /// The name (given, or `"<subA>.<inputA>~<subB>.<inputB>"`).
    pub name: String,
    /// The two ports, on two different subsystems, cross-connected.
    pub ports: [BondPort; 2],
    /// ECCO relative tolerance r_k (default: `master.tolerance`).
    pub tolerance: f64,
    /// ECCO energy scale E0_k in J (default: `master.energy_scale`).
    pub energy_scale: f64,
    /// The pairing was declared intended although the units do not make it
    /// an effort/flow pair.
    pub intended: bool,
    /// Factor from the product input * output of port 0 to watts (1 for SI
    /// units); `None` when the units could not tell (only with `intended`).
    pub power_factor: Option<f64>,
    /// The `[[bonds]]` table.
    pub span: Span,
}

/// An input of a subsystem fed by a column of an input file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedFeed {
    /// The input.
    pub input: VariableRef,
    /// The column of the file (index among the columns after `time`).
    pub column: usize,
    /// The column's name in the file.
    pub column_name: String,
    /// Held, not interpolated: every input but a Float of continuous
    /// variability (integers, enumerations, Booleans, Floats of discrete
    /// variability), as FMPy and fmusim read input files.
    pub discrete: bool,
    /// For an input set by value (an FMU's Int64, UInt64, Binary or
    /// String input): the column's values, exactly, one per row.
    #[serde(skip)]
    pub values: Option<Arc<[cosim_fmi::Value]>>,
}

/// An input file (`[[inputs]]` or `--input-file`), read and matched.
#[derive(Debug, Clone, Serialize)]
pub struct ResolvedInputFile {
    /// The file.
    pub file: PathBuf,
    /// The inputs it feeds.
    pub feeds: Vec<ResolvedFeed>,
    /// Its rows.
    #[serde(skip)]
    pub table: Arc<cosim_core::input_file::InputTable>,
    /// The `[[inputs]]` table (`None` for `--input-file`).
    pub span: Option<Span>,
}

/// A timed event, resolved: the variable, whether it is an input (the value
/// given to the subsystem) or an output (the value read from it), and what
/// happens to it when.
#[derive(Debug, Clone, Serialize)]
pub struct ResolvedEvent {
    /// When, s.
    pub time: f64,
    /// The subsystem.
    pub subsystem: usize,
    /// The variable.
    pub variable: VariableIndex,
    /// An input (else an output).
    pub input: bool,
    /// What happens (Booleans as 0/1).
    #[serde(skip)]
    pub action: cosim_core::events::EventAction,
    /// An event on an FMU's Int64 or UInt64 input that no connection
    /// feeds: the input is set by value, exactly over the type's whole
    /// range, not through a slot (`cosim_core::input_file::ValueFeed`).
    pub by_value: bool,
    /// Its override or bias as written, for such an input.
    pub exact: Option<i128>,
    /// For the log: `override chassis.F = 100 at t = 50 s`.
    pub description: String,
}

/// A scenario matched against its FMUs: everything the system assembly and
/// the master need, with defaults filled in and names turned into indices.
#[derive(Debug, Clone, Serialize)]
pub struct ResolvedScenario {
    #[serde(skip)]
    source: Arc<Source>,
    /// The scenario file.
    pub file: PathBuf,
    /// Start time in s.
    pub start: f64,
    /// Stop time in s (> start).
    pub stop: f64,
    /// Real-time pacing: simulated time advances at this factor times the
    /// wall clock (`None`: as fast as it can).
    pub real_time: Option<f64>,
    /// The master and its settings.
    pub master: MasterSettings,
    /// Where `[master]` is in the file (for later errors about it).
    #[serde(skip)]
    pub master_span: Option<Span>,
    /// The subsystems, in declaration order.
    pub subsystems: Vec<ResolvedSubsystem>,
    /// The connections between subsystems, in declaration order.
    pub connections: Vec<ResolvedConnection>,
    /// The function blocks (`[[functions]]`), in declaration order.
    pub functions: Vec<ResolvedFunction>,
    /// The connections to and from function ports, in declaration order.
    pub function_connections: Vec<ResolvedFunctionConnection>,
    /// The explicitly declared bonds (automatic discovery, if
    /// `master.discover_bonds`, is up to the caller; these override it).
    pub bonds: Vec<ResolvedBond>,
    /// Output files and the traced variables.
    pub outputs: OutputSettings,
    /// The input files (`[[inputs]]`, `--input-file`) and the inputs they feed.
    pub inputs: Vec<ResolvedInputFile>,
    /// The timed events of this level (`[[events]]`, `--scenario`).
    pub events: Vec<ResolvedEvent>,
    /// Where `[outputs]` is in the file, if it is.
    #[serde(skip)]
    pub outputs_span: Option<Span>,
    /// Warnings from reading and resolving.
    #[serde(skip)]
    pub warnings: Vec<ScenarioError>,
}

impl ResolvedScenario {
    /// The scenario file's path.
    pub fn path(&self) -> &Path {
        &self.source.path
    }

    /// An error at `span` of the scenario file (e.g. a connection's span
    /// for a problem found while assembling the system).
    pub fn error_at(&self, span: Span, message: impl Into<String>) -> ScenarioError {
        self.source.error(Some(span), message)
    }

    /// `file:line:column` of `span` in the scenario file.
    pub fn location(&self, span: Span) -> String {
        self.source.location(span)
    }

    /// An error at `[master]` (or about the file, when the scenario has no
    /// `[master]` table).
    pub fn master_error(&self, message: impl Into<String>) -> ScenarioError {
        self.source.error(self.master_span, message)
    }

    /// A warning at `span` of the scenario file.
    pub fn warning_at(&self, span: Span, message: impl Into<String>) -> ScenarioError {
        self.source
            .diagnostic(Severity::Warning, Some(span), message)
    }

    /// A warning about the outputs: at `[outputs]`, or about the file
    /// when it has no `[outputs]` table.
    pub fn outputs_warning(&self, message: impl Into<String>) -> ScenarioError {
        self.source
            .diagnostic(Severity::Warning, self.outputs_span, message)
    }

    /// The index of the subsystem called `name`.
    pub fn subsystem_index(&self, name: &str) -> Option<usize> {
        self.subsystems.iter().position(|s| s.name == name)
    }

    /// The connection feeding `input`, if any.
    pub fn connection_to(&self, input: VariableRef) -> Option<&ResolvedConnection> {
        self.connections.iter().find(|c| c.to == input)
    }

    /// The index of the function called `name`.
    pub fn function_index(&self, name: &str) -> Option<usize> {
        self.functions.iter().position(|f| f.spec.name == name)
    }

    /// True when a connection (to a subsystem, or from a function) feeds
    /// `input`.
    pub fn is_fed(&self, input: VariableRef) -> bool {
        self.connection_to(input).is_some()
            || self
                .function_connections
                .iter()
                .any(|c| c.to == FunctionEnd::Variable(input))
    }
}

/// `"is an input"`, `"is a parameter"` ... for messages.
pub(crate) fn causality_phrase(v: &Variable) -> String {
    let initial = v.effective_initial();
    match v.causality {
        Causality::Parameter => "is a parameter".into(),
        Causality::CalculatedParameter => "is a calculated parameter".into(),
        Causality::StructuralParameter => "is a structural parameter".into(),
        Causality::Input => "is an input".into(),
        Causality::Output => "is an output".into(),
        Causality::Independent => "is the independent variable (time)".into(),
        Causality::Local if v.variability == Variability::Constant => "is a constant".into(),
        Causality::Local if initial == Some(Initial::Calculated) => {
            "is a local variable (initial=\"calculated\")".into()
        }
        Causality::Local => "is a local variable".into(),
    }
}

fn is_parameter(v: &Variable) -> bool {
    matches!(
        v.causality,
        Causality::Parameter | Causality::StructuralParameter
    )
}

/// Why a variable cannot take a start value, if it cannot.
fn start_refusal(v: &Variable) -> Option<String> {
    if v.variability == Variability::Constant {
        return Some(format!("'{}' is a constant and cannot be set", v.name));
    }
    match v.causality {
        Causality::Input => None,
        Causality::Parameter | Causality::StructuralParameter => None,
        Causality::CalculatedParameter => Some(format!(
            "'{}' is a calculated parameter: the FMU computes it, it cannot be set",
            v.name
        )),
        Causality::Independent => Some(format!(
            "'{}' is the independent variable (time): set [simulation] start instead",
            v.name
        )),
        Causality::Output | Causality::Local => match v.effective_initial() {
            Some(Initial::Exact | Initial::Approx) => None,
            _ => Some(format!(
                "'{}' {} with initial=\"calculated\": the FMU computes its initial value, it cannot be set",
                v.name,
                if v.causality == Causality::Output {
                    "is an output"
                } else {
                    "is a local variable"
                }
            )),
        },
    }
}

/// A shape for messages: `a scalar`, `an array of 3 elements`, `a 3x2
/// array`.
pub(crate) fn shape_text(shape: &[usize]) -> String {
    match shape {
        [] => "a scalar".to_string(),
        [n] => format!("an array of {n} element{}", if *n == 1 { "" } else { "s" }),
        _ => {
            let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
            format!("a {} array", dims.join("x"))
        }
    }
}

/// The elements of `raw` in row-major order when its nesting is `shape`
/// (an array of `shape[0]` arrays of `shape[1]` ...); `Err` gives the
/// shape it has.
fn flatten<'r>(
    raw: &'r RawValue,
    shape: &[usize],
    out: &mut Vec<&'r RawValue>,
) -> std::result::Result<(), ()> {
    match (shape.split_first(), raw) {
        (None, RawValue::Array(_)) => Err(()),
        (None, scalar) => {
            out.push(scalar);
            Ok(())
        }
        (Some((&n, rest)), RawValue::Array(items)) if items.len() == n => {
            items.iter().try_for_each(|x| flatten(x, rest, out))
        }
        _ => Err(()),
    }
}

/// The shape of a value as written: `[[1, 2], [3, 4]]` is `[2, 2]`.
fn value_shape(raw: &RawValue) -> Vec<usize> {
    match raw {
        RawValue::Array(items) => {
            let mut s = vec![items.len()];
            if let Some(first) = items.first() {
                s.extend(value_shape(first));
            }
            s
        }
        _ => Vec::new(),
    }
}

fn int_range(t: VariableType) -> (i128, i128) {
    match t {
        VariableType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        VariableType::UInt8 => (0, u8::MAX.into()),
        VariableType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        VariableType::UInt16 => (0, u16::MAX.into()),
        VariableType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        VariableType::UInt32 => (0, u32::MAX.into()),
        VariableType::UInt64 => (0, u64::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    }
}

/// Types `raw` for variable `v` of shape `shape` (empty for a scalar; an
/// array's value is nested as its shape: `[[1, 2], [3, 4]]` for 2x2); `Err`
/// says why it does not fit.
fn typed_value(
    version: FmiVersion,
    v: &Variable,
    raw: &RawValue,
    shape: &[usize],
    items: &[(String, i64)],
) -> std::result::Result<StartValue, String> {
    let elements: Vec<&RawValue> = match raw {
        RawValue::Array(_) if v.is_scalar() => {
            return Err(format!(
                "'{}' is a scalar {}, but the value is an array",
                v.name,
                cosim_fmi::inspect::type_name(version, v.var_type)
            ));
        }
        _ if !v.is_scalar() => {
            let mut out = Vec::new();
            if flatten(raw, shape, &mut out).is_err() {
                let example = if shape.len() > 1 {
                    "[[1.0, 2.0], [3.0, 4.0]]"
                } else {
                    "[1.0, 2.0]"
                };
                return Err(format!(
                    "shape mismatch: '{}' is {}, the value given is {} (write it nested as the array, e.g. {example})",
                    v.name,
                    shape_text(shape),
                    shape_text(&value_shape(raw))
                ));
            }
            out
        }
        scalar => vec![scalar],
    };
    let mismatch = |expected: &str, found: &RawValue| {
        format!(
            "'{}' is of type {}: expected {expected}, found {}",
            v.name,
            cosim_fmi::inspect::type_name(version, v.var_type),
            found.describe()
        )
    };
    let range_check = |x: f64| -> std::result::Result<(), String> {
        if let Some(min) = v.min
            && x < min
        {
            return Err(format!("{x} is below the minimum {min} of '{}'", v.name));
        }
        if let Some(max) = v.max
            && x > max
        {
            return Err(format!("{x} is above the maximum {max} of '{}'", v.name));
        }
        Ok(())
    };
    match v.var_type {
        VariableType::Float64 | VariableType::Float32 => {
            let mut out = Vec::new();
            for e in elements {
                let x = match e {
                    RawValue::Float(x) => *x,
                    RawValue::Int(i) => *i as f64,
                    other => return Err(mismatch("a number", other)),
                };
                // (A Float32 is an IEEE single: beyond its range the value
                // would reach the FMU as an infinity.)
                if v.var_type == VariableType::Float32
                    && x.is_finite()
                    && x.abs() > f64::from(f32::MAX)
                {
                    return Err(format!(
                        "{x} is out of the range of Float32 (-{m:e} to {m:e}) of '{}'",
                        v.name,
                        m = f32::MAX
                    ));
                }
                range_check(x)?;
                out.push(x);
            }
            Ok(StartValue::Float(out))
        }
        VariableType::Int8
        | VariableType::UInt8
        | VariableType::Int16
        | VariableType::UInt16
        | VariableType::Int32
        | VariableType::UInt32
        | VariableType::Int64
        | VariableType::UInt64
        | VariableType::Enumeration => {
            let (lo, hi) = int_range(v.var_type);
            let mut out = Vec::new();
            for e in elements {
                // An enumeration by the name of one of its type's items.
                let item;
                let i = match e {
                    RawValue::Int(i) => i,
                    RawValue::Str(name) if v.var_type == VariableType::Enumeration => {
                        item = i128::from(enumeration_item(v, name, items)?);
                        &item
                    }
                    _ if v.var_type == VariableType::Enumeration => {
                        return Err(mismatch("an integer or the name of an item", e));
                    }
                    _ => return Err(mismatch("an integer", e)),
                };
                if *i < lo || *i > hi {
                    return Err(format!(
                        "{i} is out of the range of {} ({lo} to {hi}) of '{}'",
                        v.var_type, v.name
                    ));
                }
                // (The message gives the integer as written, not as a float.)
                range_check(*i as f64).map_err(|m| {
                    m.replacen(&(*i as f64).to_string(), &i.to_string(), 1)
                })?;
                out.push(*i);
            }
            Ok(StartValue::Int(out))
        }
        VariableType::Boolean => elements
            .into_iter()
            .map(|e| match e {
                RawValue::Bool(b) => Ok(*b),
                other => Err(mismatch("true or false", other)),
            })
            .collect::<std::result::Result<_, _>>()
            .map(StartValue::Bool),
        VariableType::String => elements
            .into_iter()
            .map(|e| match e {
                RawValue::Str(s) => Ok(s.clone()),
                other => Err(mismatch("a string", other)),
            })
            .collect::<std::result::Result<_, _>>()
            .map(StartValue::String),
        VariableType::Binary => elements
            .into_iter()
            .map(|e| match e {
                RawValue::Str(s) => hex::decode(
                    s.strip_prefix("0x")
                        .or_else(|| s.strip_prefix("0X"))
                        .unwrap_or(s),
                )
                .map_err(|_| {
                    format!(
                        "'{}' is a Binary: \"{}\" is no byte string in hexadecimal digits (two per byte, as \"666f6f\")",
                        v.name,
                        crate::read::shorten(s)
                    )
                }),
                other => Err(mismatch("a string of hexadecimal digits (\"666f6f\")", other)),
            })
            .collect::<std::result::Result<_, _>>()
            .map(StartValue::Binary),
        VariableType::Clock => Err(format!(
            "'{}' is of type {}, which a scenario cannot set",
            v.name,
            cosim_fmi::inspect::type_name(version, v.var_type)
        )),
    }
}

/// A unit as written, for messages: `"N"` or `"no unit"`.
fn unit_label(v: &Variable) -> String {
    v.unit.as_deref().unwrap_or("no unit").to_string()
}

/// Compares the units of two variables; `Err` explains the mismatch.
fn check_units(
    md_a: &ModelDescription,
    a: &Variable,
    a_text: &str,
    md_b: &ModelDescription,
    b: &Variable,
    b_text: &str,
) -> std::result::Result<(), String> {
    let (Some(ua), Some(ub)) = (a.unit.as_deref(), b.unit.as_deref()) else {
        // A variable without a unit says nothing: accept.
        return Ok(());
    };
    if ua == ub {
        return Ok(());
    }
    match (variable_base_unit(md_a, a), variable_base_unit(md_b, b)) {
        (Some(ba), Some(bb)) => {
            if !ba.same_dimension_ignoring_rad(&bb) {
                return Err(format!(
                    "unit mismatch: '{a_text}' is in {ua} ({}) but '{b_text}' is in {ub} ({})",
                    ba.dimension_string(),
                    bb.dimension_string()
                ));
            }
            let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1e-300);
            if !close(ba.factor, bb.factor) || (ba.offset - bb.offset).abs() > 1e-9 {
                let ratio = ba.factor / bb.factor;
                let offset = if (ba.offset - bb.offset).abs() > 1e-9 {
                    " with a different offset".to_string()
                } else {
                    String::new()
                };
                return Err(format!(
                    "unit mismatch: '{a_text}' is in {ua} but '{b_text}' is in {ub} (1 {ua} = {} {ub}{offset})",
                    format_number(ratio)
                ));
            }
            Ok(())
        }
        (ka, kb) => {
            let unknown: Vec<&str> = [(ka.is_none(), ua), (kb.is_none(), ub)]
                .iter()
                .filter(|(u, _)| *u)
                .map(|(_, n)| *n)
                .collect();
            Err(format!(
                "unit mismatch: '{a_text}' is in '{ua}' but '{b_text}' is in '{ub}' (compared by name: '{}' is not a known unit)",
                unknown.join("', '")
            ))
        }
    }
}

fn format_number(x: f64) -> String {
    let r = x.round();
    if (x - r).abs() < 1e-9 * x.abs().max(1.0) && r.abs() < 1e15 {
        format!("{r}")
    } else {
        format!("{x}")
    }
}

/// True when the variable can be written to a trace by a glob.
fn traceable_by_glob(v: &Variable) -> bool {
    matches!(
        v.causality,
        Causality::Output | Causality::Input | Causality::Local
    ) && v.variability != Variability::Constant
}

/// Why variable `v` cannot be written to the trace, or `None` when it can
/// (in step with what `assemble` traces).
fn untraceable(v: &Variable) -> Option<String> {
    Some(match v.var_type {
        VariableType::String | VariableType::Binary if !v.is_scalar() => format!(
            "an array of {} values, of which only scalars are traced (as text)",
            v.var_type
        ),
        // (Numbers and Booleans in slots; Strings quoted, Binaries as
        // hexadecimal digits, read for the rows written.)
        _ => return None,
    })
}

struct Resolver<'s, 'm> {
    scenario: &'s Scenario,
    mds: Vec<&'m ModelDescription>,
    warnings: Vec<ScenarioError>,
    /// Per subsystem: the structural parameters the scenario sets.
    structural: Vec<HashMap<VariableIndex, u64>>,
}

impl Scenario {
    /// Matches the scenario against the model descriptions of its FMUs and
    /// returns the fully resolved, checked scenario.
    ///
    /// `models` gives, for every subsystem name, the model description of
    /// its FMU (e.g. `fmu.model_description()` of `cosim_fmi::Fmu::open`
    /// on [`SubsystemSpec::fmu`](crate::SubsystemSpec::fmu)); order does
    /// not matter.
    ///
    /// # Errors
    ///
    /// The first problem found, at its place in the file: unknown variable
    /// (with the nearest name), wrong causality, input fed twice, type or
    /// unit mismatch across a connection, value of the wrong type, bond not
    /// cross-connected or not an effort/flow pair, output glob matching
    /// nothing, missing stop time ...
    pub fn resolve(&self, models: &[(&str, &ModelDescription)]) -> Result<ResolvedScenario> {
        let by_name: HashMap<&str, &ModelDescription> = models.iter().copied().collect();
        let mut mds = Vec::new();
        for s in &self.subsystems {
            let md = by_name.get(s.name.value.as_str()).copied().ok_or_else(|| {
                self.error_at(
                    s.name.span,
                    format!(
                        "no model description was given for subsystem '{}'",
                        s.name.value
                    ),
                )
            })?;
            mds.push(md);
        }
        Resolver {
            scenario: self,
            mds,
            warnings: self.warnings.clone(),
            structural: Vec::new(),
        }
        .run()
    }
}

impl<'s, 'm> Resolver<'s, 'm> {
    fn src(&self) -> &Source {
        &self.scenario.source
    }

    fn path(&self) -> &Path {
        &self.scenario.source.path
    }

    fn err(&self, span: Span, message: impl Into<String>) -> ScenarioError {
        self.src().error(Some(span), message)
    }

    fn warn(&mut self, span: Span, message: impl Into<String>) {
        let w = self
            .src()
            .diagnostic(Severity::Warning, Some(span), message);
        self.warnings.push(w);
    }

    fn line_of(&self, span: Span) -> usize {
        self.src().error(Some(span), "").line.unwrap_or(0)
    }

    fn sub_name(&self, i: usize) -> &str {
        crate::scenario::subsystem_name(&self.scenario.subsystems, i)
    }

    fn md(&self, i: usize) -> Result<&'m ModelDescription> {
        self.mds.get(i).copied().ok_or_else(|| {
            self.src()
                .error(None, format!("no subsystem with index {i}"))
        })
    }

    fn run(mut self) -> Result<ResolvedScenario> {
        let (start, stop) = self.times()?;
        let master = self.master(start, stop)?;
        let mut subsystems = self.subsystems()?;
        self.one_value_per_variable(&mut subsystems)?;
        let connections = self.connections()?;
        let (functions, function_connections) = self.functions(&connections)?;
        let bonds = self.bonds(&master, &connections)?;
        let outputs = self.outputs()?;
        self.unused_functions(&function_connections, &outputs);
        // Every subsystem input a connection feeds, and where.
        let fed: HashMap<VariableRef, Span> = connections
            .iter()
            .map(|c| (c.to, c.span))
            .chain(function_connections.iter().filter_map(|c| match c.to {
                FunctionEnd::Variable(r) => Some((r, c.span)),
                FunctionEnd::Port(_) => None,
            }))
            .collect();
        let inputs = self.inputs(start, stop, &fed)?;
        let events = self.events(start, stop, &master, &inputs, &fed)?;
        self.start_values_overwritten(&subsystems, &fed);
        self.alias_conflicts(
            &subsystems,
            &connections,
            &function_connections,
            &inputs,
            &events,
        )?;
        self.output_interval(&master, start)?;
        self.unconnected_inputs(&fed, &inputs);
        self.clocks();
        Ok(ResolvedScenario {
            source: self.scenario.source.clone(),
            file: self.scenario.source.path.clone(),
            start,
            stop,
            real_time: self.scenario.simulation.real_time,
            master,
            master_span: self.scenario.master.span,
            subsystems,
            connections,
            functions,
            function_connections,
            bonds,
            outputs,
            outputs_span: self.scenario.outputs.span,
            inputs,
            events,
            warnings: self.warnings,
        })
    }

    /// Start and stop, with the FMUs' DefaultExperiment as fallback.
    fn times(&self) -> Result<(f64, f64)> {
        let sim = &self.scenario.simulation;
        let names: Vec<&str> = self
            .scenario
            .subsystems
            .iter()
            .map(|s| s.name.value.as_str())
            .collect();
        let start = match &sim.start {
            Some(s) => s.value,
            None => {
                let starts: Vec<f64> = self
                    .mds
                    .iter()
                    .filter_map(|md| md.default_experiment.as_ref()?.start_time)
                    .collect();
                match starts.first() {
                    Some(first) if starts.iter().all(|s| s == first) => *first,
                    _ => 0.0,
                }
            }
        };
        let stop = match &sim.stop {
            Some(s) => s.value,
            None => {
                let stops: Vec<Option<f64>> = self
                    .mds
                    .iter()
                    .map(|md| md.default_experiment.as_ref().and_then(|d| d.stop_time))
                    .collect();
                let span = sim.span;
                if let Some(i) = stops.iter().position(Option::is_none) {
                    return Err(self
                        .src()
                        .error(
                            span,
                            format!(
                                "no stop time: [simulation] has no 'stop', and the FMU of subsystem '{}' gives no DefaultExperiment stopTime",
                                names.get(i).copied().unwrap_or("?")
                            ),
                        )
                        .with_help("add 'stop = <seconds>' under [simulation]"));
                }
                let stops: Vec<f64> = stops.into_iter().flatten().collect();
                let first = stops.first().copied().unwrap_or(0.0);
                if stops.iter().any(|s| *s != first) {
                    let list: Vec<String> = names
                        .iter()
                        .zip(&stops)
                        .map(|(n, s)| format!("{n}: {s} s"))
                        .collect();
                    return Err(self
                        .src()
                        .error(
                            span,
                            format!(
                                "no stop time: [simulation] has no 'stop', and the FMUs' DefaultExperiment stopTimes differ ({})",
                                list.join(", ")
                            ),
                        )
                        .with_help("add 'stop = <seconds>' under [simulation]"));
                }
                first
            }
        };
        if stop <= start {
            let message = format!("stop time {stop} s is not after the start time {start} s");
            let origin = sim.stop.as_ref().map(|s| &s.origin);
            let start_origin = sim.start.as_ref().map(|s| &s.origin);
            return Err(match (origin, start_origin) {
                (Some(o), _) => self.scenario.origin_error(o, message),
                // --start past the DefaultExperiment's stop time.
                (None, Some(o @ Origin::Argument(_))) => self.scenario.origin_error(
                    o,
                    format!(
                        "start time {start} s is not before the stop time {stop} s (the FMUs' DefaultExperiment stopTime)"
                    ),
                ),
                (None, _) => self.src().error(
                    sim.span,
                    format!("{message} (both from the FMUs' DefaultExperiment)"),
                ),
            });
        }
        Ok((start, stop))
    }

    fn master(&mut self, start: f64, stop: f64) -> Result<MasterSettings> {
        let spec = &self.scenario.master;
        let mut settings = spec.settings.clone();
        let kind = settings.kind;
        settings.step = match &spec.step {
            Some(s) => s.value,
            None if kind.uses_controller() => settings.controller.dt_min,
            None => {
                let steps: Vec<Option<f64>> = self
                    .mds
                    .iter()
                    .map(|md| md.default_experiment.as_ref().and_then(|d| d.step_size))
                    .collect();
                match steps.first().copied().flatten() {
                    Some(first) if steps.iter().all(|s| *s == Some(first)) => first,
                    _ => {
                        return Err(self
                            .src()
                            .error(
                                spec.kind_span.or(spec.span),
                                format!(
                                    "master \"{kind}\" needs a step: [master] has no 'step', and the FMUs give no common DefaultExperiment stepSize"
                                ),
                            )
                            .with_help("add 'step = <seconds>' under [master]"));
                    }
                }
            }
        };
        // A step below the floating-point resolution of the simulated
        // times would reach the FMUs as 0 or badly rounded: refuse it here
        // rather than fail mid-run.
        let t_max = start.abs().max(stop.abs());
        let resolution = t_max.next_up() - t_max;
        let smallest = if kind.uses_controller() {
            settings.step.min(settings.controller.dt_min)
        } else {
            settings.step
        };
        // Time is kept in whole ticks of at most 1 fs (cosim_core::time).
        let smallest_tick = 1e-15;
        if smallest < 64.0 * resolution || smallest < smallest_tick {
            let message = if smallest < smallest_tick {
                format!(
                    "the step {} s is below the finest time resolution cosim keeps (1 fs)",
                    cosim_core::text::number(smallest)
                )
            } else {
                format!(
                    "the step {} s is too small to be represented at t = {t_max} s (the time resolution there is {resolution:e} s)",
                    cosim_core::text::number(smallest)
                )
            };
            let help = "use a larger step, or shift the simulated interval towards t = 0";
            return Err(match spec.step.as_ref().map(|s| &s.origin) {
                Some(origin @ Origin::Argument(_)) => self.origin_err(origin, message),
                Some(Origin::File(span)) => self.src().error(Some(*span), message),
                None => self.src().error(spec.span, message),
            }
            .with_help(help));
        }
        if settings.step > stop - start
            && let Some(s) = &spec.step
            && let Origin::File(span) = s.origin
        {
            self.warn(
                span,
                format!(
                    "the step {} s is longer than the simulated interval {} s",
                    settings.step,
                    stop - start
                ),
            );
        }
        if kind.uses_controller() {
            let c = settings.controller;
            if (settings.step < c.dt_min || settings.step > c.dt_max)
                && let Some(s) = &spec.step
                && let Origin::File(span) = s.origin
            {
                self.warn(
                    span,
                    format!(
                        "the initial step {} s is outside [dt_min, dt_max] = [{}, {}]: the controller will clamp it",
                        settings.step, c.dt_min, c.dt_max
                    ),
                );
            }
        }
        Ok(settings)
    }

    /// The shape of variable `v` of subsystem `sub` in this run (empty for
    /// a scalar): structural parameters at the scenario's values, else
    /// their starts.
    fn shape(&self, sub: usize, v: VariableIndex) -> std::result::Result<Vec<usize>, String> {
        let md = self.mds[sub];
        let set = self.structural.get(sub);
        md.shape(v, &|k| set.and_then(|m| m.get(&k).copied()))
    }

    /// Every element of variable `i` of subsystem `sub` (the variable alone
    /// for a scalar), row-major.
    fn elements_of(&self, sub: usize, i: VariableIndex, span: Span) -> Result<Vec<VariableRef>> {
        let shape = self.shape(sub, i).map_err(|m| self.err(span, m))?;
        Ok((0..shape.iter().product::<usize>())
            .map(|element| VariableRef {
                subsystem: sub,
                variable: i,
                element,
            })
            .collect())
    }

    /// Looks up `name` in subsystem `sub` as [`Resolver::variable`] does,
    /// and also an element of an FMI 3 array, `y[2]` or `A[2,3]` (1-based,
    /// row-major): the variable and the element's flat index.
    fn element_var(
        &self,
        sub: usize,
        name: &str,
        span: Span,
        preferred: impl Fn(&Variable) -> bool,
    ) -> Result<(VariableIndex, &'m Variable, Option<usize>)> {
        let md = self.md(sub)?;
        if md.variable_by_name(name).is_none()
            && let Some((base, index)) = name.strip_suffix(']').and_then(|n| n.split_once('['))
            && let Some((i, v)) = md.variable_by_name(base)
            && !v.is_scalar()
        {
            let shape = self.shape(sub, i).map_err(|m| self.err(span, m))?;
            let parsed: Option<Vec<usize>> = index
                .split(',')
                .map(|x| x.trim().parse::<usize>().ok())
                .collect();
            let bad = |why: String| {
                self.err(span, format!("'{name}': {why}"))
                    .with_help(format!(
                        "'{base}' is {}; elements are numbered from 1, as in SSP and Modelica",
                        shape_text(&shape)
                    ))
            };
            let Some(parsed) = parsed else {
                return Err(bad("the index is not a list of whole numbers".into()));
            };
            if parsed.len() != shape.len() {
                return Err(bad(format!(
                    "{} ind{} for an array of {} dimension{}",
                    parsed.len(),
                    if parsed.len() == 1 { "ex" } else { "ices" },
                    shape.len(),
                    if shape.len() == 1 { "" } else { "s" }
                )));
            }
            let mut flat = 0;
            for (&k, &n) in parsed.iter().zip(&shape) {
                if k < 1 || k > n {
                    return Err(bad(format!("index {k} is outside 1..{n}")));
                }
                flat = flat * n + (k - 1);
            }
            return Ok((i, v, Some(flat)));
        }
        let (i, v) = self.variable(sub, name, span, preferred)?;
        Ok((i, v, None))
    }

    /// Looks up `name` in subsystem `sub`, suggesting among the variables
    /// for which `preferred` holds first.
    fn variable(
        &self,
        sub: usize,
        name: &str,
        span: Span,
        preferred: impl Fn(&Variable) -> bool,
    ) -> Result<(VariableIndex, &'m Variable)> {
        let md = self.md(sub)?;
        if let Some(found) = md.variable_by_name_for(name, &preferred) {
            return Ok(found);
        }
        let preferred_names = md
            .variables
            .iter()
            .filter(|v| preferred(v))
            .map(|v| v.name.as_str());
        let help = nearest(name, preferred_names)
            .or_else(|| nearest(name, md.all_names()))
            .map(|n| format!("did you mean '{n}'?"));
        Err(self
            .err(
                span,
                format!(
                    "subsystem '{}' ({}) has no variable '{name}'",
                    self.sub_name(sub),
                    md.model_name
                ),
            )
            .with_help_opt(help))
    }

    /// Resolves the events of this level (`[[events]]`, `--scenario`):
    /// each names an input or an output of a subsystem (inside a nested
    /// system they were handed down to its level), with a value of the
    /// variable's type.
    fn events(
        &mut self,
        start: f64,
        stop: f64,
        master: &MasterSettings,
        files: &[ResolvedInputFile],
        fed: &HashMap<VariableRef, Span>,
    ) -> Result<Vec<ResolvedEvent>> {
        use crate::events::{EventKind, EventValue};
        use cosim_core::events::EventAction;
        let mut out = Vec::new();
        for e in &self.scenario.events {
            let names: Vec<&str> = self
                .scenario
                .subsystems
                .iter()
                .map(|s| s.name.value.as_str())
                .collect();
            let Some(sub) = names.iter().position(|n| *n == e.model) else {
                let help = nearest(&e.model, names.iter().copied())
                    .map(|n| format!("did you mean '{n}'?"))
                    .unwrap_or_else(|| format!("the subsystems are: {}", names.join(", ")));
                return Err(e
                    .err(e.model_span, format!("no subsystem '{}'", e.model))
                    .with_help(help));
            };
            let md = self.md(sub)?;
            let Some((k, v)) = md.variable_by_name_for(&e.variable, |v: &Variable| {
                matches!(v.causality, Causality::Input | Causality::Output)
            }) else {
                let preferred = md
                    .variables
                    .iter()
                    .filter(|v| matches!(v.causality, Causality::Input | Causality::Output))
                    .map(|v| v.name.as_str());
                let help = nearest(&e.variable, preferred)
                    .or_else(|| nearest(&e.variable, md.all_names()))
                    .map(|n| format!("did you mean '{n}'?"));
                return Err(e
                    .err(
                        e.variable_span,
                        format!(
                            "subsystem '{}' ({}) has no variable '{}'",
                            e.model, md.model_name, e.variable
                        ),
                    )
                    .with_help_opt(help));
            };
            let text = &e.text;
            let input = match v.causality {
                Causality::Input => true,
                Causality::Output => false,
                _ => {
                    return Err(e
                        .err(
                            e.variable_span,
                            format!(
                                "'{text}' {}: an event changes an input (the value the subsystem is given) or an output (the value read from it)",
                                causality_phrase(v)
                            ),
                        )
                        .with_help_opt(matches!(v.causality, Causality::Parameter).then(|| {
                            "set a parameter for the whole run with 'parameters' or --set".to_string()
                        })));
                }
            };
            if !cosim_core::subsystem::is_slot_type(v.var_type) || !v.is_scalar() {
                return Err(e.err(
                    e.variable_span,
                    format!(
                        "'{text}' is {}{}: events change scalar numeric and Boolean variables",
                        if v.is_scalar() { "a " } else { "an array of " },
                        v.var_type
                    ),
                ));
            }
            let r = VariableRef {
                subsystem: sub,
                variable: k,
                element: 0,
            };
            if input && files.iter().any(|f| f.feeds.iter().any(|x| x.input == r)) {
                return Err(e.err(
                    e.variable_span,
                    format!("input '{text}' is fed by an input file: an event cannot change it"),
                ));
            }
            let boolean = v.var_type == cosim_fmi::model_description::VariableType::Boolean;
            let float = v.var_type.is_float();
            let value = match &e.value {
                None => None,
                Some(EventValue::Float(x)) if float => Some(*x),
                Some(EventValue::Int(i)) if !boolean => Some(*i as f64),
                Some(EventValue::Bool(b)) if boolean => Some(f64::from(u8::from(*b))),
                Some(EventValue::Int(i)) if boolean && (*i == 0 || *i == 1) => Some(*i as f64),
                Some(other) => {
                    let found = match other {
                        EventValue::Float(x) => format!("the number {x}"),
                        EventValue::Int(i) => format!("the integer {i}"),
                        EventValue::Bool(b) => format!("{b}"),
                        EventValue::Text(t) => format!("the text \"{t}\""),
                    };
                    return Err(e.err(
                        e.value_span,
                        format!(
                            "'{text}' is a {} variable; the event's value is {found}",
                            v.var_type
                        ),
                    ));
                }
            };
            // An integer override fits its type; a 64-bit one is kept
            // exactly, and set by value where no connection feeds the input.
            let exact = match &e.value {
                Some(EventValue::Int(i)) if !boolean && !float => Some(*i),
                _ => None,
            };
            if let (EventKind::Override, Some(i)) = (e.kind, exact) {
                let (lo, hi) = int_range(v.var_type);
                if i < lo || i > hi {
                    return Err(e.err(
                        e.value_span,
                        format!(
                            "{i} is out of the range of {} ({lo} to {hi}) of '{text}'",
                            v.var_type
                        ),
                    ));
                }
            }
            let wide = matches!(v.var_type, VariableType::Int64 | VariableType::UInt64);
            let by_value = wide
                && input
                && v.is_scalar()
                && self.scenario.subsystems[sub].system.is_none()
                && !fed.contains_key(&r);
            if wide && !by_value && exact.is_some_and(|i| i.unsigned_abs() > 1 << 53) {
                let why = if input {
                    "a connection feeds it, in a slot"
                } else {
                    "an event on an output changes the value read, in a slot"
                };
                return Err(e.err(
                    e.value_span,
                    format!(
                        "{} is beyond +-2^53, the integers a slot carries exactly, and '{text}' is {} ({why})",
                        exact.unwrap_or_default(),
                        v.var_type,
                    ),
                ));
            }
            let action = match (e.kind, value) {
                (EventKind::Reset, _) => EventAction::Reset,
                (EventKind::Bias, _) if boolean => {
                    return Err(e
                        .err(
                            e.kind_span,
                            format!("'{text}' is a Boolean: a bias has no meaning for it"),
                        )
                        .with_help("use action \"override\" with true or false"));
                }
                (EventKind::Override, Some(x)) => EventAction::Override(x),
                (EventKind::Bias, Some(x)) => EventAction::Bias(x),
                (_, None) => EventAction::Reset,
            };
            if e.time > stop {
                let w = e.err(
                    e.time_span,
                    format!(
                        "the event at t = {} s on '{text}' is after the stop time {stop} s: it never takes effect",
                        e.time
                    ),
                );
                self.warnings.push(demote(w));
            }
            // A fixed-step master applies an event between its points at
            // the next one (libcosim does the same).
            if master.kind == crate::MasterKind::FixedStep && e.time > start {
                let n = (e.time - start) / master.step;
                if (n - n.round()).abs() > 1e-9 * n.max(1.0) {
                    let next = start + n.ceil() * master.step;
                    let w = e.err(
                        e.time_span,
                        format!(
                            "the event at t = {} s on '{text}' is between two communication points of the fixed step {} s: it takes effect at t = {} s",
                            e.time,
                            master.step,
                            cosim_core::text::significant(next, 12)
                        ),
                    );
                    self.warnings.push(demote(w));
                }
            }
            let description = match e.kind {
                EventKind::Reset => format!("reset {text}"),
                EventKind::Override => format!(
                    "override {text} = {}",
                    value_text(value.unwrap_or(f64::NAN), boolean)
                ),
                EventKind::Bias => format!(
                    "bias {text} + {}",
                    value_text(value.unwrap_or(f64::NAN), boolean)
                ),
            };
            out.push(ResolvedEvent {
                time: e.time,
                subsystem: sub,
                variable: k,
                input,
                action,
                exact: if by_value { exact } else { None },
                by_value,
                description,
            });
        }
        Ok(out)
    }

    fn subsystems(&mut self) -> Result<Vec<ResolvedSubsystem>> {
        let mut out = Vec::new();
        for (i, s) in self.scenario.subsystems.iter().enumerate() {
            let mut parameters = Vec::new();
            let mut start_values = Vec::new();
            // The structural parameters the scenario sets: the sizes of the
            // arrays whose dimensions name them.
            let md = self.md(i)?;
            let structural: HashMap<VariableIndex, u64> = s
                .assignments
                .iter()
                .filter_map(|a| {
                    let (k, v) = md.variable_by_name(&a.name)?;
                    match (&v.causality, &a.value) {
                        (Causality::StructuralParameter, RawValue::Int(n)) => {
                            Some((k, u64::try_from(*n).ok()?))
                        }
                        _ => None,
                    }
                })
                .collect();
            self.structural.push(structural.clone());
            for a in &s.assignments {
                let (assignment, is_param) = self.assignment(i, a, &structural)?;
                if is_param {
                    parameters.push(assignment);
                } else {
                    start_values.push(assignment);
                }
            }
            let master = &self.scenario.master.settings;
            out.push(ResolvedSubsystem {
                name: s.name.value.clone(),
                fmu: s.fmu.value.clone(),
                step_multiple: s.step_multiple.value,
                isolation: s.isolation.as_ref().map_or(master.isolation, |l| l.value),
                isolation_timeout: s
                    .isolation_timeout
                    .as_ref()
                    .map_or(master.isolation_timeout, |l| l.value),
                event_mode: s.event_mode.as_ref().map(|l| l.value),
                parameters,
                start_values,
                span: s.span,
                fmu_span: s.fmu.span,
            });
        }
        Ok(out)
    }

    fn origin_err(&self, origin: &Origin, message: impl Into<String>) -> ScenarioError {
        self.scenario.origin_error(origin, message)
    }

    /// Resolves one `parameters`/`start`/`--set` entry; the flag is true
    /// for a parameter.
    fn assignment(
        &self,
        sub: usize,
        a: &AssignSpec,
        structural: &HashMap<VariableIndex, u64>,
    ) -> Result<(Assignment, bool)> {
        let md = self.md(sub)?;
        let from_cli = matches!(a.name_origin, Origin::Argument(_));
        let kind_ok = |v: &Variable| match (from_cli, a.kind) {
            (true, _) => is_parameter(v) || start_refusal(v).is_none(),
            (false, AssignKind::Parameter) => is_parameter(v),
            (false, AssignKind::Start) => !is_parameter(v) && start_refusal(v).is_none(),
        };
        let Some((index, v)) = md.variable_by_name_for(&a.name, kind_ok) else {
            let names = md
                .variables
                .iter()
                .filter(|v| kind_ok(v))
                .map(|v| v.name.as_str());
            let help = nearest(&a.name, names)
                .or_else(|| nearest(&a.name, md.all_names()))
                .map(|n| format!("did you mean '{n}'?"));
            return Err(self
                .origin_err(
                    &a.name_origin,
                    format!(
                        "subsystem '{}' ({}) has no variable '{}'",
                        self.sub_name(sub),
                        md.model_name,
                        a.name
                    ),
                )
                .with_help_opt(help));
        };
        let is_param = if from_cli {
            is_parameter(v)
        } else {
            a.kind == AssignKind::Parameter
        };
        if is_param && !is_parameter(v) {
            let help = match start_refusal(v) {
                None => Some("set it under 'start' instead".to_string()),
                Some(_) => None,
            };
            let reason = match start_refusal(v) {
                Some(r) => format!(": {}", r.split_once(": ").map_or(r.as_str(), |x| x.1)),
                None => String::new(),
            };
            return Err(self
                .origin_err(
                    &a.name_origin,
                    format!(
                        "'{}' {}, not a parameter{reason}",
                        a.name,
                        causality_phrase(v)
                    ),
                )
                .with_help_opt(help));
        }
        if !is_param {
            if is_parameter(v) {
                return Err(self
                    .origin_err(
                        &a.name_origin,
                        format!("'{}' {}, not a start value", a.name, causality_phrase(v)),
                    )
                    .with_help("set it under 'parameters' instead"));
            }
            if let Some(reason) = start_refusal(v) {
                return Err(self.origin_err(&a.name_origin, reason));
            }
        }
        if is_param && v.variability == Variability::Constant {
            return Err(self.origin_err(
                &a.name_origin,
                format!("'{}' is a constant and cannot be set", a.name),
            ));
        }
        let shape = md
            .shape(index, &|k| structural.get(&k).copied())
            .map_err(|m| self.origin_err(&a.name_origin, m))?;
        let items = v
            .declared_type
            .as_deref()
            .and_then(|t| md.type_definitions.iter().find(|d| d.name == t))
            .map_or(&[][..], |d| d.items.as_slice());
        // On the command line a String's or a Binary's value is the text
        // given, whatever TOML makes of it (`--set id=007`, `--set
        // blob=0x0a0b`, a TOML integer).
        let cli_text;
        let raw = match (&a.value_origin, &a.value) {
            (Origin::Argument(arg), RawValue::Int(_) | RawValue::Float(_) | RawValue::Bool(_))
                if v.is_scalar()
                    && matches!(v.var_type, VariableType::String | VariableType::Binary) =>
            {
                let text = arg.split_once('=').map_or("", |x| x.1).trim();
                cli_text = RawValue::Str(text.to_string());
                &cli_text
            }
            _ => &a.value,
        };
        let value = typed_value(md.fmi_version, v, raw, &shape, items)
            .map_err(|m| self.origin_err(&a.value_origin, m))?;
        let origin = match &a.value_origin {
            Origin::File(span) => ValueOrigin::File(*span),
            Origin::Argument(arg) => ValueOrigin::Argument(arg.clone()),
        };
        Ok((
            Assignment {
                variable: index,
                name: a.name.clone(),
                value,
                origin,
            },
            is_param,
        ))
    }

    fn connections(&mut self) -> Result<Vec<ResolvedConnection>> {
        let mut out: Vec<ResolvedConnection> = Vec::new();
        // Input -> index in `out` of the connection feeding it.
        let mut feeding: HashMap<VariableRef, usize> = HashMap::new();
        for c in &self.scenario.connections {
            let (fi, fv, fe) =
                self.element_var(c.from.subsystem, &c.from.variable, c.from.var_span, |v| {
                    v.causality == Causality::Output
                })?;
            let (ti, tv, te) =
                self.element_var(c.to.subsystem, &c.to.variable, c.to.var_span, |v| {
                    v.causality == Causality::Input
                })?;
            let (f_in, f_out) = (
                fv.causality == Causality::Input,
                fv.causality == Causality::Output,
            );
            let (t_in, t_out) = (
                tv.causality == Causality::Input,
                tv.causality == Causality::Output,
            );
            if f_in && t_in {
                return Err(self
                    .err(
                        c.from.var_span,
                        format!(
                            "connection from input to input: '{}' and '{}' are both inputs",
                            c.from.text, c.to.text
                        ),
                    )
                    .with_help("'from' must name an output; connect both inputs to the output that should drive them"));
            }
            if f_out && t_out {
                return Err(self
                    .err(
                        c.to.var_span,
                        format!(
                            "connection from output to output: '{}' and '{}' are both outputs",
                            c.from.text, c.to.text
                        ),
                    )
                    .with_help("'to' must name an input"));
            }
            if f_in && t_out {
                return Err(self
                    .err(
                        c.from.var_span,
                        format!(
                            "connection in the wrong direction: '{}' is an input and '{}' an output",
                            c.from.text, c.to.text
                        ),
                    )
                    .with_help("swap 'from' and 'to'"));
            }
            if !f_out {
                return Err(self.err(
                    c.from.var_span,
                    format!(
                        "'{}' {}, not an output: 'from' must name an output",
                        c.from.text,
                        causality_phrase(fv)
                    ),
                ));
            }
            if !t_in {
                return Err(self.err(
                    c.to.var_span,
                    format!(
                        "'{}' {}, not an input: 'to' must name an input",
                        c.to.text,
                        causality_phrase(tv)
                    ),
                ));
            }
            // Whole arrays connect element by element; an element or a
            // scalar is one value.
            let shape_of = |sub: usize, i: VariableIndex, e: Option<usize>, span: Span| match e {
                Some(_) => Ok(Vec::new()),
                None => self.shape(sub, i).map_err(|m| self.err(span, m)),
            };
            let fshape = shape_of(c.from.subsystem, fi, fe, c.from.var_span)?;
            let tshape = shape_of(c.to.subsystem, ti, te, c.to.var_span)?;
            if fshape != tshape {
                return Err(self
                    .err(
                        c.to.span,
                        format!(
                            "shape mismatch: '{}' is {} but '{}' is {}",
                            c.from.text,
                            shape_text(&fshape),
                            c.to.text,
                            shape_text(&tshape)
                        ),
                    )
                    .with_help(
                        "connect arrays of the same shape, or single elements (\"a.y[2]\")",
                    ));
            }
            let n_elements: usize = fshape.iter().product();
            for k in 0..n_elements {
                let to = VariableRef {
                    subsystem: c.to.subsystem,
                    variable: ti,
                    element: te.unwrap_or(k),
                };
                if let Some(first) = feeding.get(&to).map(|&k| &out[k]) {
                    let first_line = self.line_of(first.span);
                    let this_line = self.line_of(c.span);
                    return Err(self
                        .err(
                            c.to.span,
                            format!(
                                "input '{}' is fed by two connections (lines {first_line} and {this_line})",
                                c.to.text
                            ),
                        )
                        .with_help("an input takes its value from exactly one output: remove one of them"));
                }
            }
            let types_ok =
                fv.var_type == tv.var_type || (fv.var_type.is_float() && tv.var_type.is_float());
            if !types_ok {
                return Err(self.err(
                    c.to.span,
                    format!(
                        "type mismatch: '{}' is {} but '{}' is {}",
                        c.from.text, fv.var_type, c.to.text, tv.var_type
                    ),
                ));
            }
            // A Clock activates a triggered input Clock (the FMU schedules
            // its time-based ones itself).
            if let Some(attrs) = tv.clock
                && attrs.interval_variability
                    != cosim_fmi::model_description::IntervalVariability::Triggered
            {
                return Err(self.err(
                    c.to.span,
                    format!(
                        "'{}' is a {} input Clock, which its FMU schedules: only a triggered input Clock can be activated by a connection",
                        c.to.text,
                        cosim_fmi::model_description::IntervalVariability::NAMES
                            [attrs.interval_variability as usize]
                    ),
                ));
            }
            if !fv.var_type.is_float()
                && (c.gain != 1.0 || c.offset != 0.0)
                && let Some(span) = c.map_span
            {
                return Err(self.err(
                    span,
                    format!(
                        "'gain' and 'offset' apply to floating-point connections only; '{}' is {}",
                        c.from.text, fv.var_type
                    ),
                ));
            }
            let (fmd, tmd) = (self.md(c.from.subsystem)?, self.md(c.to.subsystem)?);
            match check_units(fmd, fv, &c.from.text, tmd, tv, &c.to.text) {
                Err(reason) if !c.unit_mismatch => {
                    return Err(self
                        .err(c.to.span, reason)
                        .with_help("if this is intended (e.g. the gain converts), add 'unit_mismatch = true' to this connection"));
                }
                Ok(()) if c.unit_mismatch && fv.unit.is_some() && tv.unit.is_some() => {
                    self.warn(
                        c.span,
                        format!(
                            "'unit_mismatch = true', but '{}' [{}] and '{}' [{}] have the same unit",
                            c.from.text,
                            unit_label(fv),
                            c.to.text,
                            unit_label(tv)
                        ),
                    );
                }
                _ => {}
            }
            for k in 0..n_elements {
                let from = VariableRef {
                    subsystem: c.from.subsystem,
                    variable: fi,
                    element: fe.unwrap_or(k),
                };
                let to = VariableRef {
                    subsystem: c.to.subsystem,
                    variable: ti,
                    element: te.unwrap_or(k),
                };
                feeding.insert(to, out.len());
                out.push(ResolvedConnection {
                    from,
                    to,
                    gain: c.gain,
                    offset: c.offset,
                    signal: c.signal,
                    unit_mismatch: c.unit_mismatch,
                    span: c.span,
                });
            }
        }
        Ok(out)
    }

    fn port_var(
        &self,
        p: &VarPath,
        causality: Causality,
        role: &str,
    ) -> Result<(VariableIndex, &'m Variable)> {
        let (i, v) = self.variable(p.subsystem, &p.variable, p.var_span, |v| {
            v.causality == causality
        })?;
        if v.causality != causality {
            return Err(self.err(
                p.var_span,
                format!(
                    "'{}' {}, not an {causality}: a port's '{role}' must name an {causality}",
                    p.text,
                    causality_phrase(v)
                ),
            ));
        }
        Ok((i, v))
    }

    fn bonds(
        &mut self,
        master: &MasterSettings,
        connections: &[ResolvedConnection],
    ) -> Result<Vec<ResolvedBond>> {
        let mut out: Vec<ResolvedBond> = Vec::new();
        let feeding: HashMap<VariableRef, usize> = connections
            .iter()
            .enumerate()
            .map(|(k, c)| (c.to, k))
            .collect();
        for b in &self.scenario.bonds {
            let mut ports = Vec::new();
            for p in &b.ports {
                let (ii, _) = self.port_var(&p.input, Causality::Input, "input")?;
                let (oi, _) = self.port_var(&p.output, Causality::Output, "output")?;
                ports.push(BondPort {
                    subsystem: p.input.subsystem,
                    input: ii,
                    output: oi,
                });
            }
            let [pa, pb]: [BondPort; 2] = match ports.try_into() {
                Ok(p) => p,
                Err(_) => return Err(self.err(b.ports_span, "a bond has exactly two ports")),
            };
            // Cross-connection: A's output feeds B's input and vice versa.
            for (x, y, sx, sy) in [
                (pa, pb, &b.ports[0], &b.ports[1]),
                (pb, pa, &b.ports[1], &b.ports[0]),
            ] {
                let from = VariableRef {
                    subsystem: x.subsystem,
                    variable: x.output,
                    element: 0,
                };
                let to = VariableRef {
                    subsystem: y.subsystem,
                    variable: y.input,
                    element: 0,
                };
                match feeding.get(&to).map(|&k| &connections[k]) {
                    Some(c) if c.from == from => {}
                    Some(c) => {
                        let line = self.line_of(c.span);
                        return Err(self
                            .err(
                                sy.input.span,
                                format!(
                                    "bond '{}' is not cross-connected: '{}' is fed by the connection on line {line}, not by '{}'",
                                    b.name.value, sy.input.text, sx.output.text
                                ),
                            )
                            .with_help("a bond's ports are cross-connected: each port's output feeds the other port's input"));
                    }
                    None => {
                        return Err(self
                            .err(
                                sy.input.span,
                                format!(
                                    "bond '{}' is not cross-connected: no connection feeds '{}' from '{}'",
                                    b.name.value, sy.input.text, sx.output.text
                                ),
                            )
                            .with_help(format!(
                                "add [[connections]] from = \"{}\", to = \"{}\"",
                                sx.output.text, sy.input.text
                            )));
                    }
                }
            }
            for (port, spec) in [(pa, &b.ports[0]), (pb, &b.ports[1])] {
                for other in &out {
                    if other
                        .ports
                        .iter()
                        .any(|q| q.subsystem == port.subsystem && q.input == port.input)
                    {
                        let line = self.line_of(other.span);
                        return Err(self.err(
                            spec.input.span,
                            format!(
                                "input '{}' already belongs to bond '{}' (line {line})",
                                spec.input.text, other.name
                            ),
                        ));
                    }
                }
            }
            let mut power_factor = None;
            for (port, spec) in [(pa, &b.ports[0]), (pb, &b.ports[1])] {
                let md = self.md(port.subsystem)?;
                match effort_flow(md, port.input, port.output) {
                    Ok(f) => {
                        if power_factor.is_none() {
                            power_factor = Some(f);
                        }
                    }
                    Err(reason) if !b.intended => {
                        return Err(self
                            .err(
                                spec.span,
                                format!(
                                    "bond '{}': '{}' and '{}' are not an effort/flow pair: {reason}",
                                    b.name.value, spec.input.text, spec.output.text
                                ),
                            )
                            .with_help("if the pairing is intended, add 'intended = true' to this bond"));
                    }
                    Err(_) => {}
                }
            }
            out.push(ResolvedBond {
                name: b.name.value.clone(),
                ports: [pa, pb],
                tolerance: b.tolerance.unwrap_or(master.tolerance),
                energy_scale: b.energy_scale.unwrap_or(master.energy_scale),
                intended: b.intended,
                power_factor,
                span: b.span,
            });
        }
        Ok(out)
    }

    /// `[outputs] interval`: a whole number of ticks (output points are
    /// communication points, kept as integer ticks), and for a fixed-step
    /// master a whole multiple of the step, so that every output point is
    /// one of its communication points (masters that choose their step end
    /// one on each output point).
    fn output_interval(&self, master: &MasterSettings, start: f64) -> Result<()> {
        let spec = &self.scenario.outputs;
        let Sampling::Interval(x) = spec.sampling else {
            return Ok(());
        };
        let err = |message: String| match &spec.sampling_origin {
            Some(origin) => self.origin_err(origin, message),
            None => self.src().error(spec.span, message),
        };
        TimeBase::choose(&[("the output interval", x)]).map_err(&err)?;
        if master.kind != MasterKind::FixedStep {
            return Ok(());
        }
        let h = master.step;
        // A step no resolution represents is refused with the time base.
        let Ok(base) = TimeBase::choose(&[("interval", x), ("step", h)]) else {
            return Ok(());
        };
        let (Some(iv), Some(hn)) = (base.exact_ticks(x), base.exact_ticks(h)) else {
            return Ok(());
        };
        if hn <= 0 || iv % hn == 0 {
            return Ok(());
        }
        let from = match self.scenario.master.step.as_ref().map(|s| &s.origin) {
            Some(Origin::Argument(arg)) => format!(" (from {arg})"),
            _ => String::new(),
        };
        // Where the rows would fall: the first step end at or after each
        // output point (with an interval shorter than the step, every
        // step end from the first).
        let t0 = base.round(start);
        let first = iv.div_euclid(hn) + i64::from(iv.rem_euclid(hn) != 0);
        let rows: Vec<String> = (1..=3)
            .map(|k| {
                let at = if iv < hn {
                    first + k - 1
                } else {
                    let point = k * iv;
                    point.div_euclid(hn) + i64::from(point.rem_euclid(hn) != 0)
                };
                cosim_core::text::number(base.seconds(t0 + at * hn))
            })
            .collect();
        let k = iv / hn;
        let mut multiples = Vec::new();
        if k >= 1 {
            multiples.push(cosim_core::text::number(base.seconds(k * hn)));
        }
        multiples.push(cosim_core::text::number(base.seconds((k + 1) * hn)));
        let (mut a, mut b) = (iv, hn);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        Err(err(format!(
            "'interval' = {} s is not a whole multiple of the fixed step {} s{from}: the trace would have rows at {}, ... instead of every {} s",
            cosim_core::text::number(x),
            cosim_core::text::number(h),
            rows.join(", "),
            cosim_core::text::number(x),
        ))
        .with_help(format!(
            "use interval = {} (a multiple of the step), or a step that divides the interval (step = {})",
            multiples.join(" or "),
            cosim_core::text::number(base.seconds(a))
        )))
    }

    fn outputs(&mut self) -> Result<OutputSettings> {
        let spec = &self.scenario.outputs;
        let dir = spec.dir.clone();
        let file = |name: &Option<String>| name.as_ref().map(|n| dir.join(n));
        let mut traced: Vec<Traced> = Vec::new();
        // The name each is traced under when it is not its own (an alias).
        let mut trace_names: Vec<Option<String>> = Vec::new();
        let mut seen: HashSet<(Traced, Option<String>)> = HashSet::new();
        let mut push = |r: Traced, name: Option<String>| {
            if seen.insert((r, name.clone())) {
                traced.push(r);
                trace_names.push(name);
            }
        };
        let mut warnings = Vec::new();
        let index = crate::scenario::SubsystemIndex::with_functions(
            &self.scenario.subsystems,
            &self.scenario.functions,
        );
        match &spec.variables {
            None if self.scenario.output_variables.is_none() => {
                for (s, md) in self.mds.iter().enumerate() {
                    for v in self.default_traced(s, md, &mut warnings) {
                        for r in self.elements_of(s, v, Span::default())? {
                            push(Traced::Variable(r), None);
                        }
                    }
                }
            }
            Some(list) if self.scenario.output_variables.is_none() => {
                for (text, span) in list {
                    let (selected, skipped) = self.select_traced(text, *span, &index)?;
                    for (r, name) in selected {
                        push(r, name);
                    }
                    if let Some(w) = skipped {
                        warnings.push(self.src().diagnostic(Severity::Warning, Some(*span), w));
                    }
                }
            }
            _ => {}
        }
        // `--output-variables` replaces the list; its errors name the argument.
        if let Some((list, argument)) = &self.scenario.output_variables {
            for text in list {
                let (selected, skipped) = self
                    .select_traced(text, Span::default(), &index)
                    .map_err(|e| {
                        let mut a =
                            ScenarioError::argument(self.path(), argument, e.message.clone());
                        a.help = e.help.clone();
                        a.notes = e.notes.clone();
                        a
                    })?;
                for (r, name) in selected {
                    push(r, name);
                }
                if let Some(w) = skipped {
                    let mut w = ScenarioError::argument(self.path(), argument, w);
                    w.severity = Severity::Warning;
                    warnings.push(w);
                }
            }
        }
        let variables = traced
            .iter()
            .filter_map(|t| match t {
                Traced::Variable(r) => Some(*r),
                Traced::Port(_) => None,
            })
            .collect();
        self.warnings.extend(warnings);
        Ok(OutputSettings {
            trace: file(&spec.trace),
            energy_log: file(&spec.energy_log),
            step_log: file(&spec.step_log),
            summary: file(&spec.summary),
            dir: dir.clone(),
            variables,
            traced,
            trace_names,
            sampling: spec.sampling,
        })
    }

    /// The variables one `variables` entry selects, in FMU order (then the
    /// ports of functions it names, in port order).
    fn select(
        &self,
        text: &str,
        span: Span,
        index: &crate::scenario::SubsystemIndex<'_>,
    ) -> Result<Vec<Traced>> {
        let Some((sub_pat, var_pat)) = text.split_once('.') else {
            return Err(self.err(
                span,
                format!("\"{text}\" is not of the form \"<subsystem>.<variable>\""),
            ));
        };
        let var_span = sub_span(self.src(), span, text, sub_pat.len() + 1, var_pat.len());
        let glob = |pattern: &str, at: Span| {
            globset::GlobBuilder::new(pattern)
                .literal_separator(false)
                .backslash_escape(true)
                .build()
                .map(|g| g.compile_matcher())
                .map_err(|e| self.err(at, format!("invalid pattern \"{pattern}\": {}", e.kind())))
        };
        let functions = &self.scenario.functions;
        let (subs, funcs): (Vec<usize>, Vec<usize>) = if is_glob(sub_pat) {
            let m = glob(sub_pat, span)?;
            let subs: Vec<usize> = self
                .scenario
                .subsystems
                .iter()
                .enumerate()
                .filter(|(_, s)| m.is_match(&s.name.value))
                .map(|(i, _)| i)
                .collect();
            let funcs: Vec<usize> = functions
                .iter()
                .enumerate()
                .filter(|(_, f)| m.is_match(&f.name.value))
                .map(|(i, _)| i)
                .collect();
            if subs.is_empty() && funcs.is_empty() {
                return Err(self.err(span, format!("\"{sub_pat}\" matches no subsystem")));
            }
            (subs, funcs)
        } else if let Some(f) = index.function(sub_pat) {
            (Vec::new(), vec![f])
        } else {
            let i = index
                .get(sub_pat)
                .ok_or_else(|| self.err(span, format!("unknown subsystem '{sub_pat}'")))?;
            (vec![i], Vec::new())
        };
        let mut out = Vec::new();
        let mut candidates: Vec<&str> = Vec::new();
        for &s in &subs {
            let md = self.md(s)?;
            if let Some((i, v)) = md.variable_by_name(var_pat) {
                if let Some(why) = untraceable(v) {
                    return Err(self.err(var_span, format!("'{text}' cannot be traced: {why}")));
                }
                out.extend(
                    self.elements_of(s, i, var_span)?
                        .into_iter()
                        .map(Traced::Variable),
                );
                continue;
            }
            // An element of an array: `y[2]`, `A[2,3]`.
            if let Some((base, _)) = var_pat.strip_suffix(']').and_then(|n| n.split_once('['))
                && md
                    .variable_by_name(base)
                    .is_some_and(|(_, v)| !v.is_scalar())
            {
                let (i, _, e) = self.element_var(s, var_pat, var_span, |_| true)?;
                out.push(Traced::Variable(VariableRef {
                    subsystem: s,
                    variable: i,
                    element: e.unwrap_or(0),
                }));
                continue;
            }
            if is_glob(var_pat) {
                let m = glob(var_pat, var_span)?;
                for (i, v) in md.variables.iter().enumerate() {
                    if traceable_by_glob(v) && m.is_match(&v.name) {
                        out.extend(
                            self.elements_of(s, i, var_span)?
                                .into_iter()
                                .map(Traced::Variable),
                        );
                    }
                }
            } else if !is_glob(sub_pat) {
                // Not a pattern and not a name: report it like any unknown variable.
                self.variable(s, var_pat, var_span, |v| v.causality == Causality::Output)?;
            }
            candidates.extend(
                md.variables
                    .iter()
                    .filter(|v| traceable_by_glob(v))
                    .map(|v| v.name.as_str()),
            );
        }
        let mut port_names: Vec<String> = Vec::new();
        for &f in &funcs {
            let spec = &functions[f].spec;
            let names: Vec<String> = (0..spec.n_ports()).map(|p| spec.port_name(p)).collect();
            if let Some(p) = spec.port_by_name(var_pat) {
                out.push(Traced::Port(FunctionPort {
                    function: f,
                    port: p,
                }));
                continue;
            }
            if is_glob(var_pat) {
                let m = glob(var_pat, var_span)?;
                for (p, name) in names.iter().enumerate() {
                    if m.is_match(name) {
                        out.push(Traced::Port(FunctionPort {
                            function: f,
                            port: p,
                        }));
                    }
                }
            } else if !is_glob(sub_pat) {
                return Err(self
                    .err(
                        var_span,
                        format!(
                            "function '{}' ({}) has no port '{var_pat}'",
                            spec.name,
                            describe_function(spec)
                        ),
                    )
                    .with_help_opt(did_you_mean(var_pat, names.iter().map(String::as_str)))
                    .with_note(format!("its ports are {}", port_list(spec))));
            }
            port_names.extend(names);
        }
        candidates.extend(port_names.iter().map(String::as_str));
        if out.is_empty() {
            let literal: String = var_pat.chars().filter(|c| !"*?[]{}".contains(*c)).collect();
            let help = did_you_mean(&literal, candidates.iter().copied())
                .or_else(|| did_you_mean(var_pat, candidates.iter().copied()));
            return Err(self
                .err(var_span, format!("\"{text}\" matches no variable"))
                .with_help_opt(help)
                .with_note("patterns match outputs, inputs and local variables; name a parameter exactly to trace it"));
        }
        Ok(out)
    }

    /// A warning about a subsystem, at its table; when one FMU is run
    /// directly (no scenario file), about the FMU.
    fn warn_of_subsystem(&mut self, span: Span, message: String) {
        if self.scenario.single.is_some() {
            let w = self.src().diagnostic(Severity::Warning, None, message);
            self.warnings.push(w);
        } else {
            self.warn(span, message);
        }
    }

    /// Warns once per subsystem whose FMU declares triggered input clocks
    /// no connection activates: what they clock is never updated.
    /// (Time-based input clocks and output clocks tick in event mode:
    /// docs/events.md.)
    fn clocks(&mut self) {
        use cosim_fmi::model_description::{Causality, IntervalVariability};
        let mut warnings = Vec::new();
        for (s, spec) in self.scenario.subsystems.iter().enumerate() {
            let Some(md) = self.mds.get(s) else { continue };
            let names: Vec<&str> = md
                .variables
                .iter()
                .filter(|v| {
                    v.causality == Causality::Input
                        && v.clock.is_some_and(|c| {
                            c.interval_variability == IntervalVariability::Triggered
                        })
                        && !self
                            .scenario
                            .connections
                            .iter()
                            .any(|c| c.to.subsystem == s && c.to.variable == v.name)
                })
                .map(|v| v.name.as_str())
                .collect();
            if !names.is_empty() {
                warnings.push((
                    spec.span,
                    format!(
                        "subsystem '{}' declares triggered input clocks ({}) that no connection activates, so the variables they clock are not updated",
                        spec.name.value,
                        names.join(", ")
                    ),
                ));
            }
        }
        for (span, m) in warnings {
            self.warn_of_subsystem(span, m);
        }
    }

    /// Warns once per subsystem about inputs that nothing feeds and that
    /// get no start value from the scenario.
    fn unconnected_inputs(
        &mut self,
        connected: &HashMap<VariableRef, Span>,
        inputs: &[ResolvedInputFile],
    ) {
        let mut warnings = Vec::new();
        let fed: HashSet<VariableRef> = connected
            .keys()
            .copied()
            .chain(inputs.iter().flat_map(|f| f.feeds.iter().map(|x| x.input)))
            .collect();
        for (s, spec) in self.scenario.subsystems.iter().enumerate() {
            let Some(md) = self.mds.get(s) else { continue };
            let names: Vec<&str> = md
                .inputs()
                .filter(|&i| {
                    let r = VariableRef {
                        subsystem: s,
                        variable: i,
                        element: 0,
                    };
                    !fed.contains(&r)
                })
                .filter_map(|i| md.variables.get(i))
                // (A clock has no value to start with: see `clocks`.)
                .filter(|v| v.var_type != VariableType::Clock)
                .filter(|v| {
                    !spec.assignments.iter().any(|a| {
                        md.variable_by_name_for(&a.name, is_input)
                            .is_some_and(|(_, w)| w.name == v.name)
                    })
                })
                .map(|v| v.name.as_str())
                .collect();
            if !names.is_empty() {
                let (word, verb) = if names.len() == 1 {
                    ("input", "keeps its start value")
                } else {
                    ("inputs", "keep their start values")
                };
                let message = if self.scenario.single.is_some() {
                    // One FMU run directly: nothing to connect; a file feeds inputs.
                    format!(
                        "{word} {} of the FMU {verb} (no --input-file feeds {})",
                        names.join(", "),
                        if names.len() == 1 { "it" } else { "them" }
                    )
                } else {
                    format!(
                        "{word} of subsystem '{}' not connected ({verb}): {}",
                        spec.name.value,
                        names.join(", ")
                    )
                };
                warnings.push((spec.span, message));
            }
        }
        for (span, m) in warnings {
            self.warn_of_subsystem(span, m);
        }
    }
}

/// The value of the item `name` of enumeration `v`'s type (`items`).
fn enumeration_item(
    v: &Variable,
    name: &str,
    items: &[(String, i64)],
) -> std::result::Result<i64, String> {
    if let Some((_, value)) = items.iter().find(|(n, _)| n == name) {
        return Ok(*value);
    }
    let known: Vec<String> = items.iter().map(|(n, x)| format!("'{n}' ({x})")).collect();
    Err(match &v.declared_type {
        Some(t) if !known.is_empty() => format!(
            "'{name}' is not an item of the type '{t}' of '{}': its items are {}",
            v.name,
            known.join(", ")
        ),
        _ => format!(
            "'{name}' is not an item of the type of '{}', which names none: give the item's value",
            v.name
        ),
    })
}

/// Checks that `input` and `output` of `md` are an effort/flow pair; the
/// factor of their product to watts, or why not.
fn effort_flow(
    md: &ModelDescription,
    input: VariableIndex,
    output: VariableIndex,
) -> std::result::Result<f64, String> {
    let (Some(vi), Some(vo)) = (md.variables.get(input), md.variables.get(output)) else {
        return Err("no such variable".into());
    };
    // Say plainly when the product is not a power, before the quantity checks.
    if let (Some(ui), Some(uo), Some(bi), Some(bo)) = (
        vi.unit.as_deref(),
        vo.unit.as_deref(),
        variable_base_unit(md, vi),
        variable_base_unit(md, vo),
    ) {
        let product = bi.multiply(&bo);
        if !product.same_dimension_ignoring_rad(&POWER) {
            return Err(format!(
                "{} [{ui}] and {} [{uo}] multiply to {ui}.{uo} ({}), not a power ({})",
                vi.name,
                vo.name,
                product.dimension_string(),
                POWER.dimension_string()
            ));
        }
    }
    check_effort_flow_pair(md, input, md, output).map(|c| c.power_factor)
}

/// Where an input file maps a column to an input: a `columns` key of
/// `[[inputs]]`, or a cell of the file's header.
enum FeedPlace {
    Key(Span),
    Header(usize),
}

impl<'s, 'm> Resolver<'s, 'm> {
    /// An error about input file `spec` as a whole: at its `file` value,
    /// or naming its `--input-file` argument.
    fn input_error(&self, spec: &InputSpec, message: impl Into<String>) -> ScenarioError {
        self.origin_err(&spec.origin, message)
    }

    /// "the input file of [[inputs]] at s.toml:12:8", for notes on errors
    /// in the file itself.
    fn input_note(&self, spec: &InputSpec) -> String {
        match &spec.origin {
            Origin::File(span) => format!(
                "the input file of [[inputs]] at {}",
                self.src().location(*span)
            ),
            Origin::Argument(arg) => format!("the input file of '{arg}'"),
        }
    }

    /// The input a column named `name` feeds, when the name says: a
    /// `<subsystem>.<input>` path, or (in a scenario of one subsystem) the
    /// input's name alone; a trailing ` [unit]` is allowed.
    fn column_target(&self, name: &str) -> Option<VariableRef> {
        let bare = crate::input_csv::strip_unit(name);
        let index = crate::scenario::SubsystemIndex::new(&self.scenario.subsystems);
        for candidate in [name, bare] {
            if let [md] = self.mds.as_slice()
                && let Some((v, _)) = md.variable_by_name_for(candidate, is_input)
            {
                return Some(VariableRef {
                    subsystem: 0,
                    variable: v,
                    element: 0,
                });
            }
            if let Some((sub, var)) = candidate.split_once('.')
                && let Some(s) = index.get(sub)
                && let Some((v, _)) = self
                    .mds
                    .get(s)
                    .and_then(|md| md.variable_by_name_for(var, is_input))
            {
                return Some(VariableRef {
                    subsystem: s,
                    variable: v,
                    element: 0,
                });
            }
        }
        None
    }

    /// The names a column could give to feed an input, for "did you mean".
    fn input_names(&self) -> Vec<String> {
        let single = self.mds.len() == 1;
        let mut out = Vec::new();
        for (s, md) in self.mds.iter().enumerate() {
            for i in md.inputs() {
                let v = &md.variables[i].name;
                out.push(if single {
                    v.clone()
                } else {
                    format!("{}.{v}", self.sub_name(s))
                });
            }
        }
        out
    }

    /// Reads and matches every input file: each column to an input (by
    /// `columns`, or by the header), checks that the inputs are inputs of a
    /// type a file can feed, that the values fit them, that nothing else
    /// feeds them; warns when the file does not cover the run.
    fn inputs(
        &mut self,
        start: f64,
        stop: f64,
        connected: &HashMap<VariableRef, Span>,
    ) -> Result<Vec<ResolvedInputFile>> {
        let mut out: Vec<ResolvedInputFile> = Vec::new();
        // Input -> (file, column name) feeding it.
        let mut fed_by: HashMap<VariableRef, (usize, String)> = HashMap::new();
        for (k, spec) in self.scenario.inputs.iter().enumerate() {
            let csv = match &spec.csv {
                Some(csv) => csv.clone(),
                None => spec.clone().read()?,
            };
            let note = self.input_note(spec);
            // (input, column, where the mapping is written)
            let mut pairs: Vec<(VariableRef, usize, FeedPlace)> = Vec::new();
            match &spec.columns {
                Some(columns) => {
                    for (path, column, value_span) in columns {
                        let (v, _) =
                            self.variable(path.subsystem, &path.variable, path.var_span, |v| {
                                v.causality == Causality::Input
                            })?;
                        let Some(c) = csv.column(column) else {
                            let names: Vec<&str> = csv.names.iter().map(|n| n.0.as_str()).collect();
                            return Err(self
                                .err(
                                    *value_span,
                                    format!(
                                        "the input file {} has no column '{column}'",
                                        csv.path.display()
                                    ),
                                )
                                .with_help(
                                    did_you_mean(column, names.iter().copied()).unwrap_or_else(
                                        || format!("its columns are: {}", names.join(", ")),
                                    ),
                                ));
                        };
                        pairs.push((
                            VariableRef {
                                subsystem: path.subsystem,
                                variable: v,
                                element: 0,
                            },
                            c,
                            FeedPlace::Key(path.var_span),
                        ));
                    }
                }
                None => {
                    for (c, (name, _)) in csv.names.iter().enumerate() {
                        let Some(r) = self.column_target(name) else {
                            let candidates = self.input_names();
                            let what = if self.mds.len() == 1 {
                                "an input of the FMU"
                            } else {
                                "'<subsystem>.<input>'"
                            };
                            let help = did_you_mean(
                                crate::input_csv::strip_unit(name),
                                candidates.iter().map(String::as_str),
                            )
                            .unwrap_or_else(|| {
                                if candidates.is_empty() {
                                    "no subsystem has inputs".to_string()
                                } else {
                                    format!("the inputs are: {}", candidates.join(", "))
                                }
                            });
                            return Err(csv
                                .header_error(
                                    c,
                                    format!(
                                        "column '{name}' names no input: a column's name is {what}"
                                    ),
                                )
                                .with_help(help)
                                .with_note(note));
                        };
                        pairs.push((r, c, FeedPlace::Header(c)));
                    }
                }
            }
            let mut feeds = Vec::new();
            for (r, c, place) in pairs {
                let md = self.md(r.subsystem)?;
                let v = &md.variables[r.variable];
                let text = format!("{}.{}", self.sub_name(r.subsystem), v.name);
                let at = |message: String| match place {
                    FeedPlace::Key(span) => self.err(span, message),
                    FeedPlace::Header(c) => csv.header_error(c, message).with_note(note.clone()),
                };
                if v.causality != Causality::Input {
                    return Err(at(format!(
                        "'{text}' {}, not an input: an input file feeds inputs",
                        causality_phrase(v)
                    ))
                    .with_help_opt(
                        matches!(v.causality, Causality::Parameter)
                            .then(|| "set a parameter with 'parameters' or --set".to_string()),
                    ));
                }
                // Int64, UInt64, Binary and String inputs of an FMU are set
                // by value, exactly; the others ride in slots.
                let by_value = v.is_scalar()
                    && cosim_core::traced_text::beside_slots(v.var_type)
                    && self.scenario.subsystems[r.subsystem].system.is_none();
                if !by_value && (!cosim_core::subsystem::is_slot_type(v.var_type) || !v.is_scalar())
                {
                    return Err(at(format!(
                        "'{text}' is {}{}: an input file feeds scalar numeric, Boolean, Binary and String inputs",
                        if v.is_scalar() { "a " } else { "an array of " },
                        v.var_type
                    )));
                }
                if let Some(&conn) = connected.get(&r) {
                    return Err(at(format!(
                        "input '{text}' is fed both by the connection on line {} and by column '{}' of the input file {}",
                        self.line_of(conn),
                        csv.names[c].0,
                        csv.path.display()
                    ))
                    .with_help("an input takes its value from one source: remove the connection or the column"));
                }
                if let Some((other, column)) = fed_by.get(&r) {
                    let other_file = if *other == k {
                        "this file".to_string()
                    } else {
                        format!(
                            "the input file {}",
                            self.scenario.inputs[*other].file.display()
                        )
                    };
                    return Err(at(format!(
                        "input '{text}' is fed twice: by column '{column}' of {other_file} and by column '{}'",
                        csv.names[c].0
                    )));
                }
                let values = if by_value {
                    let values = csv
                        .value_column(c, v)
                        .map_err(|e| e.with_note(note.clone()))?;
                    Some(Arc::from(values))
                } else {
                    csv.check_column(c, v)
                        .map_err(|e| e.with_note(note.clone()))?;
                    None
                };
                fed_by.insert(r, (k, csv.names[c].0.clone()));
                feeds.push(ResolvedFeed {
                    input: r,
                    column: c,
                    column_name: csv.names[c].0.clone(),
                    // Interpolated: Floats of continuous variability only.
                    discrete: !(v.var_type.is_float() && v.variability == Variability::Continuous),
                    values,
                });
            }
            // A start value the file replaces from the start time.
            for f in &feeds {
                let name = &self.md(f.input.subsystem)?.variables[f.input.variable].name;
                let given = self.scenario.subsystems[f.input.subsystem]
                    .assignments
                    .iter()
                    .find(|a| a.name == *name);
                if let Some(a) = given {
                    let message = format!(
                        "the start value of '{}.{name}' has no effect: the input file {} sets it from the start time on",
                        self.sub_name(f.input.subsystem),
                        csv.path.display()
                    );
                    let w = self.origin_err(&a.value_origin, message);
                    self.warnings.push(demote(w));
                }
            }
            // Rows that do not cover the run: held values.
            let (first, last) = csv.table.range();
            let mut held = Vec::new();
            if first > start {
                held.push(format!("before t = {first} s the first row's values"));
            }
            if last < stop {
                held.push(format!("after t = {last} s the last row's values"));
            }
            if !held.is_empty() && !feeds.is_empty() {
                let columns: Vec<&str> = feeds.iter().map(|f| f.column_name.as_str()).collect();
                let message = format!(
                    "the input file {} covers t = {first} to {last} s, the run t = {start} to {stop} s: {} are held (column{} {})",
                    csv.path.display(),
                    held.join(", and "),
                    if columns.len() == 1 { "" } else { "s" },
                    columns.join(", ")
                );
                let w = self.input_error(spec, message);
                self.warnings.push(demote(w));
            }
            out.push(ResolvedInputFile {
                file: spec.file.clone(),
                feeds,
                table: csv.table.clone(),
                span: spec.span,
            });
        }
        Ok(out)
    }
}

/// The same diagnostic as a warning.
fn demote(mut e: ScenarioError) -> ScenarioError {
    e.severity = Severity::Warning;
    e
}

/// One end of a function connection, for the unit check: the variable at
/// the end, its text, and the connection.
struct UnitEnd<'m> {
    sub: usize,
    var: &'m Variable,
    text: String,
    connection: usize,
}

impl<'s, 'm> Resolver<'s, 'm> {
    /// `[[functions]]` and the connections to and from their ports: the
    /// variables at the subsystem ends (causality, type, shape), every
    /// function input fed exactly once, no subsystem input fed twice, no
    /// cycle through functions only, the units of each function's
    /// variables alike.
    fn functions(
        &mut self,
        connections: &[ResolvedConnection],
    ) -> Result<(Vec<ResolvedFunction>, Vec<ResolvedFunctionConnection>)> {
        let decls = &self.scenario.functions;
        let mut out: Vec<ResolvedFunctionConnection> = Vec::new();
        let mut feeding: HashMap<FunctionEnd, usize> = HashMap::new();
        for c in &self.scenario.function_connections {
            let from = self.function_end(&c.from, c, true)?;
            let to = self.function_end(&c.to, c, false)?;
            let first = feeding.get(&to).map(|&k| out[k].span).or(match to {
                FunctionEnd::Variable(r) => connections.iter().find(|x| x.to == r).map(|x| x.span),
                FunctionEnd::Port(_) => None,
            });
            if let Some(first) = first {
                let (a, b) = (self.line_of(first), self.line_of(c.span));
                let (lo, hi) = (a.min(b), a.max(b));
                return Err(self
                    .err(
                        c.to.span(),
                        format!(
                            "input '{}' is fed by two connections (lines {lo} and {hi})",
                            c.to.text()
                        ),
                    )
                    .with_help(
                        "an input takes its value from exactly one output: remove one of them",
                    ));
            }
            feeding.insert(to, out.len());
            out.push(ResolvedFunctionConnection {
                from,
                to,
                gain: c.gain,
                offset: c.offset,
                signal: c.signal,
                span: c.span,
            });
        }
        for (f, d) in decls.iter().enumerate() {
            let spec = &d.spec;
            for port in 0..spec.inputs * spec.dimension {
                if !feeding.contains_key(&FunctionEnd::Port(FunctionPort { function: f, port })) {
                    let name = spec.port_name(port);
                    return Err(self
                        .err(
                            d.name.span,
                            format!(
                                "input '{name}' of function '{}' has no connection",
                                spec.name
                            ),
                        )
                        .with_help(format!(
                            "feed it: [[connections]] from = \"<subsystem>.<output>\", to = \"{}.{name}\"",
                            spec.name
                        ))
                        .with_note(format!(
                            "{} is {}, with the ports {}",
                            spec.name,
                            describe_function(spec),
                            port_list(spec)
                        )));
                }
            }
        }
        self.function_cycle(&out)?;
        self.function_units(&out)?;
        let functions = decls
            .iter()
            .map(|d| ResolvedFunction {
                spec: d.spec.clone(),
                span: d.span,
            })
            .collect();
        Ok((functions, out))
    }

    /// An end of connection `c` to or from a function: a function port as
    /// parsed, or a subsystem variable checked for its causality (an
    /// output for `from`, an input for `to`), its shape and its type
    /// against the function's.
    fn function_end(
        &self,
        end: &End,
        c: &FunctionConnectionSpec,
        is_from: bool,
    ) -> Result<FunctionEnd> {
        let p = match end {
            End::Port(p) => {
                return Ok(FunctionEnd::Port(FunctionPort {
                    function: p.function,
                    port: p.port,
                }));
            }
            End::Var(p) => p,
        };
        let (want, key) = if is_from {
            (Causality::Output, "from")
        } else {
            (Causality::Input, "to")
        };
        let (index, v, element) = self.element_var(p.subsystem, &p.variable, p.var_span, |v| {
            v.causality == want
        })?;
        if v.causality != want {
            return Err(self.err(
                p.var_span,
                format!(
                    "'{}' {}, not an {want}: '{key}' must name an {want}",
                    p.text,
                    causality_phrase(v)
                ),
            ));
        }
        // The function at the other end.
        let other = if is_from { &c.to } else { &c.from };
        let End::Port(port) = other else {
            return Err(self.err(c.span, "internal: a function connection without a function"));
        };
        let spec = &self.scenario.functions[port.function].spec;
        if !v.is_scalar() && element.is_none() {
            return Err(self.err(
                p.var_span,
                format!(
                    "'{}' is an array: functions add scalars (connect its elements one by one, \"{}[1]\", ...)",
                    p.text, p.text
                ),
            ));
        }
        let fits = match spec.numeric {
            cosim_core::NumericType::Real => v.var_type.is_float(),
            cosim_core::NumericType::Integer => matches!(
                v.var_type,
                VariableType::Int8
                    | VariableType::UInt8
                    | VariableType::Int16
                    | VariableType::UInt16
                    | VariableType::Int32
                    | VariableType::UInt32
                    | VariableType::Int64
                    | VariableType::UInt64
            ),
        };
        if !fits {
            let help = match spec.numeric {
                cosim_core::NumericType::Real if !v.var_type.is_float() => {
                    "to add integers, use kind = \"vector-sum\" with numeric_type = \"integer\""
                }
                _ => "an integer vector-sum adds integer variables (not Booleans or enumerations)",
            };
            return Err(self
                .err(
                    p.var_span,
                    format!(
                        "type mismatch: '{}' is {} but '{}' is {} ({})",
                        p.text,
                        v.var_type,
                        port.text,
                        numeric_name(spec.numeric),
                        describe_function(spec)
                    ),
                )
                .with_help(help));
        }
        Ok(FunctionEnd::Variable(VariableRef {
            subsystem: p.subsystem,
            variable: index,
            element: element.unwrap_or(0),
        }))
    }

    /// A cycle through functions only (a function's output feeding its own
    /// input through functions alone) is an error at the connection that
    /// closes it: within one exchange its value would depend on itself.
    fn function_cycle(&self, connections: &[ResolvedFunctionConnection]) -> Result<()> {
        let m = self.scenario.functions.len();
        // Edges f -> g with the connection.
        let mut succ: Vec<Vec<(usize, usize)>> = vec![Vec::new(); m];
        for (k, c) in connections.iter().enumerate() {
            if let (FunctionEnd::Port(a), FunctionEnd::Port(b)) = (c.from, c.to) {
                succ[a.function].push((b.function, k));
            }
        }
        // Depth-first search; `path` holds the connections from the root.
        let mut state = vec![0u8; m]; // 0 new, 1 on the path, 2 done
        for root in 0..m {
            if state[root] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            let mut path: Vec<usize> = Vec::new();
            state[root] = 1;
            while let Some(&mut (f, ref mut next)) = stack.last_mut() {
                if let Some(&(g, k)) = succ[f].get(*next) {
                    *next += 1;
                    match state[g] {
                        0 => {
                            state[g] = 1;
                            path.push(k);
                            stack.push((g, 0));
                        }
                        1 => {
                            // The cycle: from where g was entered to k.
                            path.push(k);
                            let start = path
                                .iter()
                                .position(|&x| match connections[x].from {
                                    FunctionEnd::Port(p) => p.function == g,
                                    FunctionEnd::Variable(_) => false,
                                })
                                .unwrap_or(0);
                            let links: Vec<String> = path[start..]
                                .iter()
                                .map(|&x| {
                                    let c = &self.scenario.function_connections[x];
                                    format!(
                                        "{} -> {} (line {})",
                                        c.from.text(),
                                        c.to.text(),
                                        self.line_of(c.span)
                                    )
                                })
                                .collect();
                            return Err(self
                                .err(
                                    self.scenario.function_connections[k].span,
                                    format!(
                                        "a cycle through functions only: {}",
                                        links.join(", ")
                                    ),
                                )
                                .with_note("functions are evaluated in dependency order within each exchange: a value that goes round a loop of functions alone would depend on itself")
                                .with_help("close the loop through a subsystem (its output is a value of the last step), or remove a connection"));
                        }
                        _ => {}
                    }
                } else {
                    state[f] = 2;
                    stack.pop();
                    path.pop();
                }
            }
        }
        Ok(())
    }

    /// The variables joined by one function (the inputs it sums and the
    /// inputs its output feeds, component by component) must have units
    /// that agree, as the two ends of a connection must, unless the
    /// connection of a later one says `unit_mismatch = true`.
    fn function_units(&self, connections: &[ResolvedFunctionConnection]) -> Result<()> {
        let decls = &self.scenario.functions;
        let mut ends: HashMap<(usize, usize), Vec<UnitEnd<'m>>> = HashMap::new();
        for (k, c) in connections.iter().enumerate() {
            let spec = &self.scenario.function_connections[k];
            let (var, port, text) = match (c.from, c.to) {
                (FunctionEnd::Variable(r), FunctionEnd::Port(p)) => (r, p, spec.from.text()),
                (FunctionEnd::Port(p), FunctionEnd::Variable(r)) => (r, p, spec.to.text()),
                _ => continue,
            };
            let f = &decls[port.function].spec;
            let component = port.port % f.dimension.max(1);
            let v = &self.md(var.subsystem)?.variables[var.variable];
            ends.entry((port.function, component))
                .or_default()
                .push(UnitEnd {
                    sub: var.subsystem,
                    var: v,
                    text: text.to_string(),
                    connection: k,
                });
        }
        let mut keys: Vec<&(usize, usize)> = ends.keys().collect();
        keys.sort_unstable();
        for key in keys {
            let list = &ends[key];
            let Some(first) = list.iter().find(|e| e.var.unit.is_some()) else {
                continue;
            };
            for e in list {
                if std::ptr::eq(e, first) || e.var.unit.is_none() {
                    continue;
                }
                let spec = &self.scenario.function_connections[e.connection];
                let first_spec = &self.scenario.function_connections[first.connection];
                if spec.unit_mismatch || first_spec.unit_mismatch {
                    continue;
                }
                let (fmd, emd) = (self.md(first.sub)?, self.md(e.sub)?);
                if let Err(reason) = check_units(fmd, first.var, &first.text, emd, e.var, &e.text) {
                    let name = &decls[key.0].spec.name;
                    return Err(self
                        .err(spec.span, format!("{reason}, both joined by function '{name}'"))
                        .with_help("if this is intended (e.g. the gain converts), add 'unit_mismatch = true' to this connection"));
                }
            }
        }
        Ok(())
    }

    /// Warns about functions whose output feeds nothing and is not traced.
    fn unused_functions(
        &mut self,
        connections: &[ResolvedFunctionConnection],
        outputs: &OutputSettings,
    ) {
        let mut warnings = Vec::new();
        for (f, d) in self.scenario.functions.iter().enumerate() {
            let of_f = |e: &FunctionEnd| matches!(e, FunctionEnd::Port(p) if p.function == f);
            let feeds = connections.iter().any(|c| of_f(&c.from));
            let traced = outputs
                .traced
                .iter()
                .any(|t| matches!(t, Traced::Port(p) if p.function == f));
            if !feeds && !traced {
                warnings.push((
                    d.name.span,
                    format!(
                        "the output of function '{}' feeds nothing and is not traced",
                        d.spec.name
                    ),
                ));
            }
        }
        for (span, m) in warnings {
            self.warn(span, m);
        }
    }
}

/// What one `[outputs] variables` entry traces, each with the name it is
/// traced under when not its own; and a warning about what it leaves out.
type Selected = (Vec<(Traced, Option<String>)>, Option<String>);

/// True for inputs (what an input file's column feeds).
fn is_input(v: &Variable) -> bool {
    v.causality == Causality::Input
}

impl<'s, 'm> Resolver<'s, 'm> {
    /// The outputs of subsystem `s` (FMU `md`) traced when `[outputs]
    /// variables` is not given: every one that can be traced; a warning
    /// names the others.
    fn default_traced(
        &self,
        s: usize,
        md: &ModelDescription,
        warnings: &mut Vec<ScenarioError>,
    ) -> Vec<VariableIndex> {
        let mut left_out = Vec::new();
        let traced = md
            .outputs()
            .filter(|&v| match md.variables.get(v).and_then(untraceable) {
                Some(why) => {
                    left_out.push(format!("'{}' ({why})", md.variables[v].name));
                    false
                }
                None => true,
            })
            .collect();
        if !left_out.is_empty() {
            let span = self.scenario.subsystems.get(s).map(|x| x.span);
            warnings.push(self.src().diagnostic(
                Severity::Warning,
                span,
                format!(
                    "outputs of subsystem '{}' left out of the trace: {}",
                    self.sub_name(s),
                    left_out.join(", ")
                ),
            ));
        }
        traced
    }

    /// What one `[outputs] variables` entry traces ([`Resolver::select`]),
    /// each with the name it is traced under when that is not the
    /// variable's own: the alias the entry names (FMI 3 `<Alias>`; an FMI 2
    /// alias is a variable of its own). A variable the entry names that
    /// cannot be traced is an error saying why; a pattern leaves such
    /// variables out, named in the warning returned (an error when it
    /// matches nothing else).
    fn select_traced(
        &self,
        text: &str,
        span: Span,
        index: &crate::scenario::SubsystemIndex<'_>,
    ) -> Result<Selected> {
        let selected = self.select(text, span, index)?;
        let var_pat = text.split_once('.').map_or("", |(_, v)| v);
        let var_span = sub_span(
            self.src(),
            span,
            text,
            text.len() - var_pat.len(),
            var_pat.len(),
        );
        // The variable an entry names, with the alias it names it by: by
        // its name, or an array's element (`y_alias[2]`) by the array's.
        let named = |md: &ModelDescription| -> Option<(VariableIndex, Option<String>)> {
            let by = |name: &str| {
                let (i, _) = md.variable_by_name(name)?;
                Some((i, md.alias_by_name(name).map(|(_, a)| a.name.clone())))
            };
            by(var_pat).or_else(|| {
                let (base, _) = var_pat.strip_suffix(']')?.split_once('[')?;
                by(base)
            })
        };
        let mut out = Vec::new();
        let mut left_out: Vec<String> = Vec::new();
        for t in selected {
            let Traced::Variable(r) = t else {
                out.push((t, None));
                continue;
            };
            let Some(md) = self.mds.get(r.subsystem).copied() else {
                continue;
            };
            let Some(v) = md.variables.get(r.variable) else {
                continue;
            };
            let named = named(md).filter(|(i, _)| *i == r.variable);
            if let Some(why) = untraceable(v) {
                if named.is_some() {
                    return Err(self.err(var_span, format!("'{text}' cannot be traced: {why}")));
                }
                let entry = format!("'{}.{}' ({why})", self.sub_name(r.subsystem), v.name);
                if !left_out.contains(&entry) {
                    left_out.push(entry);
                }
                continue;
            }
            out.push((t, named.and_then(|(_, alias)| alias)));
        }
        if left_out.is_empty() {
            return Ok((out, None));
        }
        if out.is_empty() {
            return Err(self.err(
                var_span,
                format!(
                    "\"{text}\" matches only variables that cannot be traced: {}",
                    left_out.join(", ")
                ),
            ));
        }
        Ok((
            out,
            Some(format!(
                "\"{text}\" matches variables that cannot be traced, left out of the trace: {}",
                left_out.join(", ")
            )),
        ))
    }

    /// A variable takes one value: two `parameters`/`start` entries naming
    /// it (by its name and an alias) are an error; a `--set` replaces the
    /// scenario's value of the variable whatever name either gives.
    fn one_value_per_variable(&self, subsystems: &mut [ResolvedSubsystem]) -> Result<()> {
        for (s, sub) in subsystems.iter_mut().enumerate() {
            let md = self.md(s)?;
            for list in [&mut sub.parameters, &mut sub.start_values] {
                let from_cli = |a: &Assignment| matches!(a.origin, ValueOrigin::Argument(_));
                let overridden: Vec<VariableIndex> = list
                    .iter()
                    .filter(|a| from_cli(a))
                    .map(|a| a.variable)
                    .collect();
                list.retain(|a| from_cli(a) || !overridden.contains(&a.variable));
                for (k, a) in list.iter().enumerate() {
                    let Some(first) = list[..k].iter().find(|b| b.variable == a.variable) else {
                        continue;
                    };
                    let variable = md.variables.get(a.variable).map_or("", |v| v.name.as_str());
                    let by = if first.name == variable || a.name == variable {
                        "by its name and an alias"
                    } else {
                        "by two aliases"
                    };
                    let message = format!(
                        "'{}' and '{}' are one variable, '{variable}' ({by}): give it one value",
                        first.name, a.name
                    );
                    return Err(match &a.origin {
                        ValueOrigin::File(span) => self.err(*span, message),
                        ValueOrigin::Argument(arg) => {
                            ScenarioError::argument(self.path(), arg, message)
                        }
                    });
                }
            }
        }
        Ok(())
    }
}

/// What writes an input during the run, for [`Resolver::alias_conflicts`].
enum Writer {
    /// A connection (a function's too): the `[[connections]]` table and
    /// its `to`.
    Connection { table: Span, to: Span },
    /// A column of an input file (index into the scenario's `inputs`).
    File { file: usize, column: String },
    /// An event (index into the scenario's `events`).
    Event(usize),
}

impl<'s, 'm> Resolver<'s, 'm> {
    /// The inputs the run writes (connections, functions, input files,
    /// events), each with its writer.
    fn writers(
        &self,
        connections: &[ResolvedConnection],
        function_connections: &[ResolvedFunctionConnection],
        inputs: &[ResolvedInputFile],
        events: &[ResolvedEvent],
    ) -> Vec<(VariableRef, Writer)> {
        // The `to` of the connection written in this table, to point at.
        let to_span = |table: Span| {
            let plain = self.scenario.connections.iter().find(|c| c.span == table);
            let function = self
                .scenario
                .function_connections
                .iter()
                .find(|c| c.span == table);
            plain
                .map(|c| c.to.var_span)
                .or_else(|| function.map(|c| c.to.span()))
                .unwrap_or(table)
        };
        let mut out: Vec<(VariableRef, Writer)> = Vec::new();
        let coupled = connections.iter().map(|c| (c.to, c.span)).chain(
            function_connections.iter().filter_map(|c| match c.to {
                FunctionEnd::Variable(r) => Some((r, c.span)),
                FunctionEnd::Port(_) => None,
            }),
        );
        for (r, table) in coupled {
            let to = to_span(table);
            out.push((r, Writer::Connection { table, to }));
        }
        for (file, f) in inputs.iter().enumerate() {
            for feed in &f.feeds {
                let column = feed.column_name.clone();
                out.push((feed.input, Writer::File { file, column }));
            }
        }
        for (k, e) in events.iter().enumerate().filter(|(_, e)| e.input) {
            let r = VariableRef {
                subsystem: e.subsystem,
                variable: e.variable,
                element: 0,
            };
            out.push((r, Writer::Event(k)));
        }
        out
    }

    /// "the connection on line 12", "column 'u' of the input file in.csv",
    /// "the event at t = 0.5 s".
    fn writer_text(&self, w: &Writer) -> String {
        match w {
            Writer::Connection { table, .. } => {
                format!("the connection on line {}", self.line_of(*table))
            }
            Writer::File { file, column } => format!(
                "column '{column}' of the input file {}",
                self.scenario.inputs[*file].file.display()
            ),
            Writer::Event(k) => format!("the event at t = {} s", self.scenario.events[*k].time),
        }
    }

    /// An error at writer `w`.
    fn writer_error(&self, w: &Writer, message: String) -> ScenarioError {
        match w {
            Writer::Connection { to, .. } => self.err(*to, message),
            Writer::File { file, .. } => self.input_error(&self.scenario.inputs[*file], message),
            Writer::Event(k) => {
                let e = &self.scenario.events[*k];
                e.err(e.variable_span, message)
            }
        }
    }

    /// A start value of an input a connection (or a function) feeds has
    /// no effect: the coupling sets the input from the start time on, as
    /// an input file does (a warning there too). Said, not dropped.
    fn start_values_overwritten(
        &mut self,
        subsystems: &[ResolvedSubsystem],
        fed: &HashMap<VariableRef, Span>,
    ) {
        let mut warnings = Vec::new();
        for (s, sub) in subsystems.iter().enumerate() {
            for a in &sub.start_values {
                let connection = fed
                    .iter()
                    .filter(|(r, _)| r.subsystem == s && r.variable == a.variable)
                    .map(|(_, span)| *span)
                    .min_by_key(|span| span.start);
                let Some(connection) = connection else {
                    continue;
                };
                let message = format!(
                    "the start value of '{}.{}' has no effect: the connection on line {} sets it from the start time on",
                    sub.name,
                    a.name,
                    self.line_of(connection)
                );
                let w = match &a.origin {
                    ValueOrigin::File(span) => {
                        self.src()
                            .diagnostic(Severity::Warning, Some(*span), message)
                    }
                    ValueOrigin::Argument(arg) => {
                        let mut w = ScenarioError::argument(self.path(), arg, message);
                        w.severity = Severity::Warning;
                        w
                    }
                };
                warnings.push(w);
            }
        }
        self.warnings.extend(warnings);
    }

    /// An FMI 2 alias set is one value under several names (variables of
    /// one type sharing a value reference, FMI 2.0 sec. 2.2.7): what the
    /// run writes into an input is written into every variable of its set.
    /// A parameter of the set (set by the scenario or keeping its start),
    /// a value the scenario gives another variable of it, or a second
    /// writer of the set would be silently overwritten: each is an error
    /// at the writer naming both variables and the subsystem. (FMI 3
    /// aliases are names of one variable: nothing to overwrite.)
    fn alias_conflicts(
        &self,
        subsystems: &[ResolvedSubsystem],
        connections: &[ResolvedConnection],
        function_connections: &[ResolvedFunctionConnection],
        inputs: &[ResolvedInputFile],
        events: &[ResolvedEvent],
    ) -> Result<()> {
        let aliased = |md: &ModelDescription| md.variables.iter().any(|v| v.alias_of.is_some());
        if !self.mds.iter().any(|md| aliased(md)) {
            return Ok(());
        }
        self.values_of_one_alias_set(subsystems)?;
        let writers = self.writers(connections, function_connections, inputs, events);
        let mut written: HashMap<(usize, VariableIndex), usize> = HashMap::new();
        for (k, (r, _)) in writers.iter().enumerate() {
            written.entry((r.subsystem, r.variable)).or_insert(k);
        }
        for (r, w) in &writers {
            let md = self.md(r.subsystem)?;
            let sub = self.sub_name(r.subsystem);
            for k in md.alias_set(r.variable) {
                let Some(other) = md.variables.get(k).filter(|_| k != r.variable) else {
                    continue;
                };
                let name = format!("{sub}.{}", other.name);
                let given = subsystems.get(r.subsystem).and_then(|s| {
                    s.parameters
                        .iter()
                        .chain(&s.start_values)
                        .find(|a| a.variable == k)
                });
                let (what, lost) = if is_parameter(other) {
                    (format!("parameter '{name}'"), "the parameter's value")
                } else if let Some(a) = given {
                    let at = match &a.origin {
                        ValueOrigin::File(span) => self.src().location(*span),
                        ValueOrigin::Argument(arg) => format!("'{arg}'"),
                    };
                    (format!("'{name}', given a value at {at}"), "that value")
                } else if let Some(&j) = written.get(&(r.subsystem, k)) {
                    let by = self.writer_text(&writers[j].1);
                    (format!("'{name}', written by {by}"), "one with the other")
                } else {
                    continue;
                };
                let input = &md.variables[r.variable];
                let message = format!(
                    "{} writes input '{sub}.{}', but in subsystem '{sub}' ({}) its value reference {} is also {what} (FMI 2 aliases are one value): the run would overwrite {lost}",
                    self.writer_text(w),
                    input.name,
                    md.model_name,
                    input.value_reference
                );
                let help = format!(
                    "the FMU declares '{}' and '{}' as one value; correct its modelDescription.xml, or leave '{sub}.{}' uncoupled",
                    input.name, other.name, input.name
                );
                return Err(self.writer_error(w, message).with_help(help));
            }
        }
        Ok(())
    }
}

impl<'s, 'm> Resolver<'s, 'm> {
    /// Two values given to two variables of one FMI 2 alias set (a
    /// parameter and an input sharing a value reference, say): the FMU
    /// keeps whichever is set last. An error at the second, as for one
    /// variable given two values by its name and an alias.
    fn values_of_one_alias_set(&self, subsystems: &[ResolvedSubsystem]) -> Result<()> {
        for (s, sub) in subsystems.iter().enumerate() {
            let md = self.md(s)?;
            let mut first: HashMap<VariableIndex, &Assignment> = HashMap::new();
            for a in sub.parameters.iter().chain(&sub.start_values) {
                let base = md
                    .alias_set(a.variable)
                    .first()
                    .copied()
                    .unwrap_or(a.variable);
                let Some(b) = first.get(&base).copied() else {
                    first.insert(base, a);
                    continue;
                };
                if b.variable == a.variable {
                    continue;
                }
                let vr = md
                    .variables
                    .get(a.variable)
                    .map_or(0, |v| v.value_reference);
                let message = format!(
                    "'{}' and '{}' of subsystem '{}' ({}) share value reference {vr} (FMI 2 aliases are one value): give it one value",
                    b.name, a.name, sub.name, md.model_name
                );
                return Err(match &a.origin {
                    ValueOrigin::File(span) => self.err(*span, message),
                    ValueOrigin::Argument(arg) => {
                        ScenarioError::argument(self.path(), arg, message)
                    }
                });
            }
        }
        Ok(())
    }
}

/// A value for the event log.
fn value_text(x: f64, boolean: bool) -> String {
    if boolean {
        (x != 0.0).to_string()
    } else {
        format!("{x}")
    }
}
