//! libcosim's `OspSystemStructure.xml` (OSP-IS) as a [`Draft`], with the
//! `<model>_OspModelDescription.xml` files its variable groups need.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosim_fmi::ModelDescription;
use cosim_fmi::bonds::check_effort_flow_pair;
use cosim_fmi::model_description::Causality;

use crate::common::{Ctx, normalise, not_an_integer, parse_bool, parse_f64, resolve_uri, shown};
use crate::draft::{
    Assign, BondDraft, ConnDraft, Draft, EndDraft, FuncConnDraft, FuncDraft, PortRef, RawValue,
    SubDraft, Val, VarRef, scenario_name,
};
use crate::models::{is_parameter, is_source, variable};
use crate::source::{FileId, Severity, Src, did_you_mean};
use crate::xml::{self, Elem};

/// libcosim's base step when `<BaseStepSize>` is absent.
const LIBCOSIM_DEFAULT_STEP: f64 = 0.1;

const ROOT_CHILDREN: &[&str] = &[
    "StartTime",
    "EndTime",
    "BaseStepSize",
    "Algorithm",
    "Simulators",
    "Functions",
    "Connections",
    "EccoConfiguration",
];

/// Power-port variable groups: (port, effort group, flow group).
const PORTS: &[(&str, &str, &str)] = &[
    ("LinearMechanicalPort", "Force", "LinearVelocity"),
    ("AngularMechanicalPort", "Torque", "AngularVelocity"),
    ("ElectromagneticPort", "Voltage", "Current"),
    ("HydraulicPort", "Pressure", "VolumeFlowRate"),
];

/// `EccoConfiguration` children and the scenario key each maps to.
const ECCO_KEYS: &[(&str, &str)] = &[
    ("SafetyFactor", "alpha"),
    ("StepSize", "step"),
    ("MinimumStepSize", "dt_min"),
    ("MaximumStepSize", "dt_max"),
    ("MinimumChangeRate", "theta_min"),
    ("MaximumChangeRate", "theta_max"),
    ("ProportionalGain", "k_p"),
    ("IntegralGain", "k_i"),
    ("RelativeTolerance", "tolerance"),
    ("RelativePowerTolerance", "tolerance"),
    ("AbsoluteTolerance", "absolute"),
    ("PowerResidualTolerance", "absolute"),
];

struct Sim {
    sub: usize,
    md: Arc<ModelDescription>,
    fmu: PathBuf,
    /// The OspModelDescription's groups, once read (`None` inside: absent).
    groups: Option<Option<Vec<Group>>>,
}

/// A variable group of an OspModelDescription.
#[derive(Debug, Clone)]
struct Group {
    name: String,
    /// The element name (`Force`, `LinearMechanicalPort`) or the old
    /// format's `type` attribute.
    kind: String,
    vars: Vec<String>,
    children: Vec<Group>,
}

/// `<Variable simulator= name= causality=>`.
struct Endpoint {
    sim: String,
    var: String,
    /// The `causality` attribute: not the data direction (that comes from
    /// the FMUs, as in libcosim) but, in a power-bond connection, the
    /// variable's role in the bond (see [`Reader::bonds`]).
    causality: Option<Val<String>>,
    sim_src: Src,
    var_src: Src,
}

/// A scalar connection before bonds are formed.
struct Leaf {
    conn: ConnDraft,
    bond: Option<Val<String>>,
}

/// The `causality` attributes of the variables at the `from` and `to`
/// ends of a `<VariableConnection>`'s leaf.
type Marks = [Option<Val<String>>; 2];

/// The causality attribute values libcosim reads on the variables of a
/// power-bond connection.
const MARKS: &[&str] = &["input", "output"];

/// The `SignalConnection`s of a function: (inputs, outputs), each with
/// its connection element.
type Signals = (Vec<(Endpoint, Src)>, Vec<(Endpoint, Src)>);

struct Function {
    factor: f64,
    offset: f64,
    src: Src,
}

/// A `Sum` or `VectorSum` function: its index in `Draft::functions` and
/// its shape.
struct SumFunction {
    index: usize,
    vector: bool,
    inputs: u32,
    dimension: u32,
    src: Src,
}

impl SumFunction {
    /// The port a signal name refers to: `in[i]` and `out` of a Sum,
    /// `in[i][j]` and `out[j]` of a VectorSum (the signals of its groups
    /// `in[i]` and `out`); with whether it is the output.
    fn port(&self, signal: &str) -> Option<bool> {
        fn index(s: &str) -> Option<(u32, &str)> {
            let rest = s.strip_prefix('[')?;
            let end = rest.find(']')?;
            let digits = &rest[..end];
            if digits.is_empty()
                || !digits.bytes().all(|b| b.is_ascii_digit())
                || (digits.len() > 1 && digits.starts_with('0'))
            {
                return None;
            }
            Some((digits.parse().ok()?, &rest[end + 1..]))
        }
        if let Some(rest) = signal.strip_prefix("out") {
            if !self.vector {
                return rest.is_empty().then_some(true);
            }
            let (j, tail) = index(rest)?;
            return (tail.is_empty() && j < self.dimension).then_some(true);
        }
        let (i, tail) = index(signal.strip_prefix("in")?)?;
        if i >= self.inputs {
            return None;
        }
        if !self.vector {
            return tail.is_empty().then_some(false);
        }
        let (j, tail) = index(tail)?;
        (tail.is_empty() && j < self.dimension).then_some(false)
    }

    /// The signal names of the inputs, then of the output.
    fn signals(&self) -> Vec<String> {
        let mut out = Vec::new();
        for i in 0..self.inputs {
            if self.vector {
                out.extend((0..self.dimension).map(|j| format!("in[{i}][{j}]")));
            } else {
                out.push(format!("in[{i}]"));
            }
        }
        if self.vector {
            out.extend((0..self.dimension).map(|j| format!("out[{j}]")));
        } else {
            out.push("out".to_string());
        }
        out
    }

    fn what(&self) -> &'static str {
        if self.vector { "VectorSum" } else { "Sum" }
    }
}

struct Reader<'a> {
    ctx: &'a mut Ctx,
    path: &'a Path,
    file: FileId,
    draft: Draft,
    sims: HashMap<String, Sim>,
    sim_names: Vec<String>,
    taken: HashSet<String>,
    leaves: Vec<Leaf>,
    linear: HashMap<String, Function>,
    /// `Sum` and `VectorSum` functions by their name in the file.
    sums: HashMap<String, SumFunction>,
    /// The connection feeding each function input (function name in the
    /// file, signal), for doubles and missing ones.
    fed_signals: HashMap<(String, String), Src>,
    /// Connections from each function output (function name, signal).
    out_signals: HashMap<(String, String), Src>,
    /// Functions a connection to which was reported as an error (their
    /// inputs are then not reported as missing too).
    failed_functions: HashSet<String>,
    base_step: Option<Val<f64>>,
    algorithm: Option<Val<String>>,
    /// The causality attributes of the leaves of `<VariableConnection>`s,
    /// by index into `leaves`.
    marks: HashMap<usize, Marks>,
}

/// Reads the OSP system structure at `path`; `None` when it cannot be
/// parsed at all (the diagnostics say why).
pub(crate) fn read_doc(ctx: &mut Ctx, path: &Path, file: FileId, root: &Elem) -> Option<Draft> {
    if root.local() != "OspSystemStructure" {
        ctx.error(
            root.src(file),
            format!(
                "not an OSP system structure: the root element is <{}>, expected <OspSystemStructure>",
                root.name
            ),
        );
        return None;
    }
    let mut r = Reader {
        ctx,
        path,
        file,
        draft: Draft::new("OSP system structure", root.src(file)),
        sims: HashMap::new(),
        sim_names: Vec::new(),
        taken: HashSet::new(),
        leaves: Vec::new(),
        linear: HashMap::new(),
        sums: HashMap::new(),
        fed_signals: HashMap::new(),
        out_signals: HashMap::new(),
        failed_functions: HashSet::new(),
        base_step: None,
        algorithm: None,
        marks: HashMap::new(),
    };
    r.root(root);
    Some(r.draft)
}

impl Reader<'_> {
    fn root(&mut self, root: &Elem) {
        let f = self.file;
        for c in &root.children {
            match c.local() {
                "StartTime" => {
                    if let Some(t) = self.ctx.f64_text(f, c) {
                        self.draft.start = Some(Val::new(t, c.text_src(f)));
                    }
                }
                "EndTime" | "StopTime" => {
                    if let Some(t) = self.ctx.f64_text(f, c) {
                        self.draft.stop = Some(Val::new(t, c.text_src(f)));
                    }
                }
                "BaseStepSize" => {
                    if let Some(t) = self.ctx.f64_text(f, c) {
                        if t <= 0.0 {
                            self.ctx.error(
                                c.text_src(f),
                                format!("<BaseStepSize> must be positive, not {t}"),
                            );
                        } else {
                            self.base_step = Some(Val::new(t, c.text_src(f)));
                        }
                    }
                }
                "Algorithm" => {
                    self.algorithm = Some(Val::new(c.text.trim().to_string(), c.text_src(f)));
                }
                "Simulators" | "Functions" | "Connections" | "EccoConfiguration" => {}
                "Description" => {}
                "PlugSocketConnections" | "BondConnections" | "VariableConnections" => {
                    if !c.children.is_empty() {
                        self.ctx.unsupported(
                            &mut self.draft,
                            f,
                            c,
                            "this is the superseded MSMI format; use <Connections> of OSP-IS",
                        );
                    }
                }
                _ => self.ctx.unknown(f, c, &root.name, ROOT_CHILDREN),
            }
        }
        match root.child("Simulators") {
            Some(s) => self.simulators(s),
            None => self.ctx.error(
                root.src(f),
                "the OSP system structure has no <Simulators>".to_string(),
            ),
        }
        if let Some(fs) = root.child("Functions") {
            self.functions(fs);
        }
        if let Some(cs) = root.child("Connections") {
            self.connections(cs);
        }
        self.master(root.child("EccoConfiguration"));
        self.bonds();
    }

    // -----------------------------------------------------------------
    // Simulators

    fn simulators(&mut self, e: &Elem) {
        let f = self.file;
        for s in &e.children {
            if s.local() != "Simulator" {
                self.ctx.unknown(f, s, &e.name, &["Simulator"]);
                continue;
            }
            self.simulator(s);
        }
    }

    fn simulator(&mut self, s: &Elem) {
        let f = self.file;
        let (Some(name), Some(source)) = (
            self.ctx.required(f, s, "name").map(str::to_string),
            self.ctx.required(f, s, "source").map(str::to_string),
        ) else {
            return;
        };
        if self.sims.contains_key(&name) {
            self.ctx.error(
                s.attr_src(f, "name"),
                format!("two simulators are called '{name}'"),
            );
            return;
        }
        let source_src = s.attr_src(f, "source");
        let base = self.path.parent().unwrap_or(Path::new("")).to_path_buf();
        let fmu = match resolve_uri(&base, &source) {
            Ok(p) => normalise(&p),
            Err(why) => {
                self.ctx.error(
                    source_src,
                    format!("cannot use the source '{source}' of simulator '{name}': {why}"),
                );
                return;
            }
        };
        let md = match self.ctx.models.load(&fmu) {
            Ok(md) => md,
            Err(why) => {
                self.ctx.error(
                    source_src,
                    format!(
                        "cannot read the FMU of simulator '{name}' ({}): {why}",
                        fmu.display()
                    ),
                );
                return;
            }
        };
        let scenario = scenario_name(&name, &self.taken);
        self.taken.insert(scenario.clone());
        if scenario != name {
            self.ctx.note(
                s.attr_src(f, "name"),
                format!("simulator '{name}' is called '{scenario}' in the scenario (subsystem names are letters, digits, '_' and '-')"),
            );
        }
        let step_multiple = self.step_multiple(s, &name);
        let mut parameters: Vec<Assign> = Vec::new();
        let mut start = Vec::new();
        for c in &s.children {
            match c.local() {
                "InitialValues" => {
                    for iv in &c.children {
                        if iv.local() != "InitialValue" {
                            self.ctx.unknown(f, iv, &c.name, &["InitialValue"]);
                            continue;
                        }
                        if let Some(a) = self.initial_value(iv) {
                            let v = variable(&md, &a.name);
                            if let (Some(v), RawValue::Int(i)) = (v, &a.value)
                                && v.var_type.is_float()
                            {
                                self.ctx.warn(
                                    a.value_src,
                                    format!(
                                        "<Integer> initial value for '{}', a Real variable: cosim converts it, libcosim refuses the file (a value's type must be the variable's: <Real value=\"{i}\"/>)",
                                        a.name
                                    ),
                                );
                            }
                            let list = match v {
                                Some(v) if is_parameter(v) => &mut parameters,
                                _ => &mut start,
                            };
                            // libcosim keeps the last value of a variable
                            // (`add_variable_value`: `insert_or_assign`).
                            if let Some(old) = list.iter_mut().find(|x| x.name == a.name) {
                                let first = self.ctx.sources.place(old.value_src);
                                self.ctx.warn(
                                    a.name_src,
                                    format!(
                                        "a second initial value of '{}' on simulator '{name}': it replaces the one at {first}, as libcosim uses the last",
                                        a.name
                                    ),
                                );
                                *old = a;
                            } else {
                                list.push(a);
                            }
                        }
                    }
                }
                _ => self.ctx.unknown(f, c, &s.name, &["InitialValues"]),
            }
        }
        let sub = self.draft.subsystems.len();
        self.draft.subsystems.push(SubDraft {
            name: scenario,
            name_src: s.attr_src(f, "name"),
            fmu: fmu.clone(),
            fmu_src: source_src,
            system: None,
            exposes: Vec::new(),
            step_multiple,
            interface: None,
            parameters,
            start,
            src: s.src(f),
        });
        self.sim_names.push(name.clone());
        self.sims.insert(
            name,
            Sim {
                sub,
                md,
                fmu,
                groups: None,
            },
        );
    }

    /// `stepSize` as a multiple of the base step (fixed-step only).
    fn step_multiple(&mut self, s: &Elem, name: &str) -> Option<Val<u32>> {
        let f = self.file;
        let step = self.ctx.f64_attr(f, s, "stepSize")?;
        let src = s.attr_src(f, "stepSize");
        if step <= 0.0 {
            self.ctx.error(
                src,
                format!("simulator '{name}': stepSize must be positive"),
            );
            return None;
        }
        // The algorithm is known only after the whole file: read it here.
        let base = self
            .base_step
            .as_ref()
            .map_or(LIBCOSIM_DEFAULT_STEP, |b| b.value);
        let ratio = step / base;
        let k = ratio.round();
        let k = if (ratio - k).abs() <= 1e-9 * ratio.max(1.0) {
            k
        } else {
            let k = ratio.floor().max(1.0);
            self.ctx.warn(
                src,
                format!(
                    "simulator '{name}': stepSize {step} s is not a multiple of the base step {base} s; it steps every {k} base steps ({} s), as libcosim does",
                    k * base
                ),
            );
            k
        };
        let k = k.clamp(1.0, 1_000_000.0) as u32;
        (k > 1).then(|| Val::new(k, src))
    }

    fn initial_value(&mut self, iv: &Elem) -> Option<Assign> {
        let f = self.file;
        let name = self.ctx.required(f, iv, "variable")?.to_string();
        let Some(t) = iv.children.first() else {
            self.ctx.error(
                iv.src(f),
                format!(
                    "initial value of '{name}' has no <Real>, <Integer>, <Boolean> or <String>"
                ),
            );
            return None;
        };
        let raw = self.ctx.required(f, t, "value")?.to_string();
        let value_src = t.attr_src(f, "value");
        let value = match t.local() {
            "Real" => RawValue::Float(parse_f64(&raw).or_else(|| {
                self.ctx
                    .error(value_src, format!("'{raw}' is not a finite number"));
                None
            })?),
            "Integer" | "Enumeration" => {
                RawValue::Int(raw.trim().parse::<i64>().ok().or_else(|| {
                    self.ctx.error(value_src, not_an_integer(&raw));
                    None
                })?)
            }
            "Boolean" => RawValue::Bool(parse_bool(&raw).or_else(|| {
                self.ctx.error(
                    value_src,
                    format!("'{raw}' is not a boolean (true, false, 1, 0)"),
                );
                None
            })?),
            "String" => RawValue::Str(raw),
            _ => {
                self.ctx
                    .unknown(f, t, &iv.name, &["Real", "Integer", "Boolean", "String"]);
                return None;
            }
        };
        Some(Assign {
            name,
            name_src: iv.attr_src(f, "variable"),
            value,
            value_src,
        })
    }

    // -----------------------------------------------------------------
    // Functions and connections

    fn functions(&mut self, e: &Elem) {
        let f = self.file;
        for func in &e.children {
            let name = func.value("name").unwrap_or_default().to_string();
            match func.local() {
                "LinearTransformation" => {
                    if self.ctx.required(f, func, "name").is_none() {
                        continue;
                    }
                    if self.function_taken(func, &name) {
                        continue;
                    }
                    let factor = self.ctx.f64_attr(f, func, "factor").unwrap_or(1.0);
                    let offset = self.ctx.f64_attr(f, func, "offset").unwrap_or(0.0);
                    self.linear.insert(
                        name,
                        Function {
                            factor,
                            offset,
                            src: func.src(f),
                        },
                    );
                }
                "Sum" | "VectorSum" => self.sum_function(func),
                _ => self.ctx.unknown(
                    f,
                    func,
                    &e.name,
                    &["LinearTransformation", "Sum", "VectorSum"],
                ),
            }
        }
    }

    /// True (after an error) when a function of that name exists already.
    fn function_taken(&mut self, e: &Elem, name: &str) -> bool {
        if self.linear.contains_key(name) || self.sums.contains_key(name) {
            self.ctx.error(
                e.attr_src(self.file, "name"),
                format!("two functions are called '{name}'"),
            );
            return true;
        }
        false
    }

    /// A positive integer attribute (`inputCount`, `dimension`).
    fn count_attr(&mut self, e: &Elem, attr: &str) -> Option<u32> {
        let f = self.file;
        let raw = self.ctx.required(f, e, attr)?.trim().to_string();
        match raw.parse::<u32>() {
            Ok(n) if n >= 1 => Some(n),
            _ => {
                self.ctx.error(
                    e.attr_src(f, attr),
                    format!("{attr} must be a positive integer, not '{raw}'"),
                );
                None
            }
        }
    }

    /// `<Sum name= inputCount=/>`, `<VectorSum name= inputCount=
    /// dimension= [numericType=]/>`: a `[[functions]]` table (libcosim's
    /// vector_sum_function; a Sum is one of dimension 1).
    fn sum_function(&mut self, e: &Elem) {
        let f = self.file;
        let Some(name) = self.ctx.required(f, e, "name").map(str::to_string) else {
            return;
        };
        if self.function_taken(e, &name) {
            return;
        }
        let vector = e.local() == "VectorSum";
        let Some(inputs) = self.count_attr(e, "inputCount") else {
            return;
        };
        let dimension = if vector {
            let Some(d) = self.count_attr(e, "dimension") else {
                return;
            };
            Some(Val::new(d, e.attr_src(f, "dimension")))
        } else {
            None
        };
        let mut integer = None;
        if let Some(a) = e.attr("numericType") {
            let src = Src::new(f, a.start, a.end);
            match a.value.trim().to_ascii_lowercase().as_str() {
                "real" => {}
                "integer" if vector => integer = Some(src),
                other => {
                    let message = if vector {
                        format!("numericType must be 'real' or 'integer', not '{other}'")
                    } else {
                        "a Sum adds reals: numericType is for a VectorSum".to_string()
                    };
                    self.ctx.error(src, message);
                    return;
                }
            }
            if vector {
                self.ctx.note(
                    src,
                    "libcosim's OSP reader ignores numericType (its VectorSum adds reals); cosim honours it".to_string(),
                );
            }
        }
        let scenario = scenario_name(&name, &self.taken);
        self.taken.insert(scenario.clone());
        if scenario != name {
            self.ctx.note(
                e.attr_src(f, "name"),
                format!("function '{name}' is called '{scenario}' in the scenario (names are letters, digits, '_' and '-', unique among simulators and functions)"),
            );
        }
        let index = self.draft.functions.len();
        self.draft.functions.push(FuncDraft {
            name: scenario,
            name_src: e.attr_src(f, "name"),
            kind: if vector { "vector-sum" } else { "sum" },
            inputs: Val::new(inputs, e.attr_src(f, "inputCount")),
            dimension,
            integer,
            src: e.src(f),
        });
        self.sums.insert(
            name,
            SumFunction {
                index,
                vector,
                inputs,
                dimension: dimension_value(&self.draft.functions[index]),
                src: e.src(f),
            },
        );
    }

    /// A `<SignalConnection>` (or one variable of a `<SignalGroupConnection>`)
    /// between `ep` and signal `signal` of Sum/VectorSum `func`: into an
    /// input, or from the output.
    fn sum_signal(&mut self, func: &str, signal: &str, ep: &Endpoint, srcs: [Src; 3]) {
        let [conn_src, func_src, signal_src] = srcs;
        let Some(sf) = self.sums.get(func) else {
            return;
        };
        let Some(is_output) = sf.port(signal) else {
            let names = sf.signals();
            let what = sf.what();
            self.failed_functions.insert(func.to_string());
            self.ctx.error_help(
                signal_src,
                format!(
                    "{what} '{func}' has no signal '{signal}' (its signals are {} to {})",
                    names.first().map_or("", String::as_str),
                    names.last().map_or("", String::as_str)
                ),
                did_you_mean(signal, names.iter().map(String::as_str)),
            );
            return;
        };
        let port = EndDraft::Port(PortRef {
            func: sf.index,
            port: signal.to_string(),
            func_src,
            port_src: signal_src,
        });
        let var = EndDraft::Var(self.var_ref(ep));
        let key = (func.to_string(), signal.to_string());
        let (from, to) = if is_output {
            if let Some(first) = self.out_signals.get(&key).copied() {
                let _ = first;
                self.ctx.note(
                    conn_src,
                    format!("'{func}' signal '{signal}' feeds several variables: cosim connects each, libcosim only the first"),
                );
            }
            self.out_signals.insert(key, conn_src);
            (port, var)
        } else {
            if self.fed_signals.contains_key(&key) {
                self.failed_functions.insert(func.to_string());
                self.ctx.error(
                    conn_src,
                    format!(
                        "function '{func}' has more than one connection to its signal '{signal}'"
                    ),
                );
                return;
            }
            self.fed_signals.insert(key, conn_src);
            (var, port)
        };
        self.draft.function_connections.push(FuncConnDraft {
            from,
            to,
            src: conn_src,
            comment: None,
        });
    }

    /// `<SignalGroupConnection>`: a signal group of a VectorSum (`in[i]`,
    /// `out`) and a variable group of a simulator, joined variable by
    /// variable: the group's first `dimension` variables, as libcosim.
    fn signal_group_connection(&mut self, c: &Elem) {
        let errors = |ctx: &Ctx| {
            ctx.diags
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .count()
        };
        let before = errors(self.ctx);
        let func = c
            .child("SignalGroup")
            .and_then(|g| g.value("function"))
            .map(str::to_string);
        self.signal_group(c);
        // A reported error spares the function a report of missing inputs.
        if errors(self.ctx) > before
            && let Some(func) = func
        {
            self.failed_functions.insert(func);
        }
    }

    fn signal_group(&mut self, c: &Elem) {
        let f = self.file;
        let (Some(g), Some(v)) = (c.child("SignalGroup"), c.child("VariableGroup")) else {
            self.ctx.error(
                c.src(f),
                "<SignalGroupConnection> needs a <SignalGroup> and a <VariableGroup>".to_string(),
            );
            return;
        };
        let (Some(func), Some(group)) = (
            self.ctx.required(f, g, "function").map(str::to_string),
            self.ctx.required(f, g, "name").map(str::to_string),
        ) else {
            return;
        };
        let (func_src, group_src) = (g.attr_src(f, "function"), g.attr_src(f, "name"));
        let (inputs, dimension) = match self.sums.get(&func) {
            Some(sf) if sf.vector => (sf.inputs, sf.dimension),
            Some(_) => {
                self.ctx.error(
                    func_src,
                    format!("'{func}' is a Sum, whose signals are single: connect them with <SignalConnection>"),
                );
                return;
            }
            None if self.linear.contains_key(&func) => {
                self.ctx.error(
                    func_src,
                    format!("'{func}' is a LinearTransformation, whose signals are single: connect them with <SignalConnection>"),
                );
                return;
            }
            None => {
                let names: Vec<&str> = self.sums.keys().map(String::as_str).collect();
                self.ctx.error_help(
                    func_src,
                    format!("no VectorSum is called '{func}'"),
                    did_you_mean(&func, names),
                );
                return;
            }
        };
        let groups: Vec<String> = (0..inputs)
            .map(|i| format!("in[{i}]"))
            .chain(std::iter::once("out".to_string()))
            .collect();
        if !groups.contains(&group) {
            self.ctx.error_help(
                group_src,
                format!(
                    "VectorSum '{func}' has the signal groups in[0] to in[{}] and out, not '{group}'",
                    inputs - 1
                ),
                did_you_mean(&group, groups.iter().map(String::as_str)),
            );
            return;
        }
        let Some(ep) = self.endpoint(v) else { return };
        let Some(all) = self.groups(&ep.sim, ep.sim_src) else {
            return;
        };
        fn walk<'g>(gs: &'g [Group], name: &str) -> Option<&'g Group> {
            gs.iter()
                .find(|g| g.name == name)
                .or_else(|| gs.iter().find_map(|g| walk(&g.children, name)))
        }
        let Some(vg) = walk(&all, &ep.var).cloned() else {
            let mut names = Vec::new();
            fn names_of(gs: &[Group], out: &mut Vec<String>) {
                for g in gs {
                    out.push(g.name.clone());
                    names_of(&g.children, out);
                }
            }
            names_of(&all, &mut names);
            self.ctx.error_help(
                ep.var_src,
                format!(
                    "the OSP model description of simulator '{}' has no variable group '{}'",
                    ep.sim, ep.var
                ),
                did_you_mean(&ep.var, names.iter().map(String::as_str)),
            );
            return;
        };
        let d = dimension as usize;
        if vg.vars.len() < d {
            self.ctx.error(
                ep.var_src,
                format!(
                    "variable group '{}' of simulator '{}' has {} variable(s), but VectorSum '{func}' has dimension {d}",
                    vg.name,
                    ep.sim,
                    vg.vars.len()
                ),
            );
            return;
        }
        if vg.vars.len() > d {
            self.ctx.warn(
                ep.var_src,
                format!(
                    "variable group '{}' of simulator '{}' has {} variables: its first {d} join VectorSum '{func}' of dimension {d}, as in libcosim",
                    vg.name,
                    ep.sim,
                    vg.vars.len()
                ),
            );
        }
        for (j, var) in vg.vars.iter().take(d).enumerate() {
            let one = Endpoint {
                var: var.clone(),
                causality: None,
                ..copy(&ep)
            };
            let signal = if group == "out" {
                format!("out[{j}]")
            } else {
                format!("{group}[{j}]")
            };
            self.sum_signal(&func, &signal, &one, [c.src(f), func_src, group_src]);
        }
    }

    /// After every connection: each input signal of a Sum or VectorSum
    /// must be fed (libcosim: "Missing expected connection").
    fn sums_fed(&mut self) {
        let mut list: Vec<(&String, &SumFunction)> = self.sums.iter().collect();
        list.sort_by_key(|(_, sf)| sf.index);
        let mut missing = Vec::new();
        for (name, sf) in list {
            if self.failed_functions.contains(name) {
                continue;
            }
            let n_inputs = (sf.inputs * if sf.vector { sf.dimension } else { 1 }) as usize;
            for signal in sf.signals().into_iter().take(n_inputs) {
                if !self
                    .fed_signals
                    .contains_key(&(name.clone(), signal.clone()))
                {
                    let how = if sf.vector {
                        "<SignalGroupConnection> (or <SignalConnection>)"
                    } else {
                        "<SignalConnection>"
                    };
                    missing.push((
                        sf.src,
                        format!(
                            "{} '{name}' has no {how} to its signal '{signal}'",
                            sf.what()
                        ),
                    ));
                    break;
                }
            }
        }
        for (src, m) in missing {
            self.ctx.error(src, m);
        }
    }

    fn endpoint(&mut self, v: &Elem) -> Option<Endpoint> {
        let f = self.file;
        let sim = self.ctx.required(f, v, "simulator")?.to_string();
        let var = self.ctx.required(f, v, "name")?.to_string();
        let sim_src = v.attr_src(f, "simulator");
        if !self.sims.contains_key(&sim) {
            self.ctx.error_help(
                sim_src,
                format!("no simulator is called '{sim}'"),
                did_you_mean(&sim, self.sim_names.iter().map(String::as_str)),
            );
            return None;
        }
        Some(Endpoint {
            sim,
            var,
            causality: v
                .attr("causality")
                .map(|a| Val::new(a.value.trim().to_string(), Src::new(f, a.start, a.end))),
            sim_src,
            var_src: v.attr_src(f, "name"),
        })
    }

    fn var_ref(&self, e: &Endpoint) -> VarRef {
        VarRef {
            sub: self.sims.get(&e.sim).map_or(0, |s| s.sub),
            var: e.var.clone(),
            sub_src: e.sim_src,
            var_src: e.var_src,
        }
    }

    /// True when data flows from `a` to `b`: from the FMUs' causalities,
    /// as libcosim does (`connect_variables` in osp_config_parser.cpp),
    /// whatever the `causality` attributes say.
    fn a_to_b(&self, a: &Endpoint, b: &Endpoint) -> bool {
        let var = |e: &Endpoint| {
            self.sims
                .get(&e.sim)
                .and_then(|s| variable(&s.md, &e.var).cloned())
        };
        match (var(a), var(b)) {
            (Some(va), Some(vb)) => !(va.causality == Causality::Input && is_source(&vb)),
            (None, Some(vb)) => vb.causality == Causality::Input || !is_source(&vb),
            _ => true,
        }
    }

    /// A connection between `a` and `b`; `marked` for a
    /// `<VariableConnection>`, whose `causality` attributes are kept.
    fn leaf(
        &mut self,
        a: &Endpoint,
        b: &Endpoint,
        src: Src,
        bond: Option<Val<String>>,
        marked: bool,
    ) {
        let (from, to) = if self.a_to_b(a, b) { (a, b) } else { (b, a) };
        let conn = ConnDraft {
            from: self.var_ref(from),
            to: self.var_ref(to),
            gain: 1.0,
            offset: 0.0,
            map_src: None,
            unit_mismatch: false,
            src,
            comment: None,
        };
        if marked {
            if bond.is_none() {
                self.contrary_marks(from, to);
            }
            self.marks.insert(
                self.leaves.len(),
                [from.causality.clone(), to.causality.clone()],
            );
        }
        self.leaves.push(Leaf { conn, bond });
    }

    /// A note for `causality` attributes of a connection that is not a
    /// power bond and that contradict the FMUs: libcosim ignores them.
    fn contrary_marks(&mut self, from: &Endpoint, to: &Endpoint) {
        for e in [from, to] {
            let Some(m) = &e.causality else { continue };
            let Some(actual) = self
                .sims
                .get(&e.sim)
                .and_then(|s| variable(&s.md, &e.var))
                .map(|v| v.causality)
            else {
                continue;
            };
            let contrary = match m.value.as_str() {
                "input" => actual != Causality::Input,
                "output" => actual == Causality::Input,
                _ => false,
            };
            if contrary {
                self.ctx.note(
                    m.src,
                    format!(
                        "'{}.{}' is marked causality=\"{}\" but its FMU declares it {actual}: the direction of a connection comes from the FMUs' causalities (libcosim ignores this attribute outside power bonds)",
                        e.sim, e.var, m.value
                    ),
                );
            }
        }
    }

    fn connections(&mut self, e: &Elem) {
        let f = self.file;
        let mut signals: HashMap<String, Signals> = HashMap::new();
        for c in &e.children {
            let bond = c
                .attr("powerBond")
                .map(|a| Val::new(a.value.trim().to_string(), Src::new(f, a.start, a.end)));
            match c.local() {
                "VariableConnection" => {
                    let vars: Vec<&Elem> = c.children_named("Variable").collect();
                    let [va, vb] = vars.as_slice() else {
                        self.ctx.error(
                            c.src(f),
                            format!(
                                "<VariableConnection> needs exactly two <Variable>, not {}",
                                vars.len()
                            ),
                        );
                        continue;
                    };
                    let (Some(a), Some(b)) = (self.endpoint(va), self.endpoint(vb)) else {
                        continue;
                    };
                    self.leaf(&a, &b, c.src(f), bond, true);
                }
                "SignalConnection" => {
                    let (Some(v), Some(s)) = (c.child("Variable"), c.child("Signal")) else {
                        self.ctx.error(
                            c.src(f),
                            "<SignalConnection> needs a <Variable> and a <Signal>".to_string(),
                        );
                        continue;
                    };
                    let (Some(func), Some(sig)) = (
                        self.ctx.required(f, s, "function").map(str::to_string),
                        self.ctx.required(f, s, "name").map(str::to_string),
                    ) else {
                        continue;
                    };
                    if self.sums.contains_key(&func) {
                        let Some(ep) = self.endpoint(v) else { continue };
                        let srcs = [c.src(f), s.attr_src(f, "function"), s.attr_src(f, "name")];
                        self.sum_signal(&func, &sig, &ep, srcs);
                        continue;
                    }
                    if !self.linear.contains_key(&func) {
                        let names: Vec<String> = self
                            .linear
                            .keys()
                            .chain(self.sums.keys())
                            .cloned()
                            .collect();
                        self.ctx.error_help(
                            s.attr_src(f, "function"),
                            format!("no function is called '{func}'"),
                            did_you_mean(&func, names.iter().map(String::as_str)),
                        );
                        continue;
                    }
                    let Some(ep) = self.endpoint(v) else { continue };
                    let entry = signals.entry(func).or_default();
                    match sig.as_str() {
                        "in" => entry.0.push((ep, c.src(f))),
                        "out" => entry.1.push((ep, c.src(f))),
                        other => self.ctx.error_help(
                            s.attr_src(f, "name"),
                            format!("a LinearTransformation has the signals 'in' and 'out', not '{other}'"),
                            did_you_mean(other, ["in", "out"]),
                        ),
                    }
                }
                "VariableGroupConnection" => self.group_connection(c, bond),
                "SignalGroupConnection" => self.signal_group_connection(c),
                _ => self.ctx.unknown(
                    f,
                    c,
                    &e.name,
                    &[
                        "VariableConnection",
                        "SignalConnection",
                        "VariableGroupConnection",
                        "SignalGroupConnection",
                    ],
                ),
            }
        }
        self.sums_fed();
        // Linear transformations: out = factor * in + offset.
        let mut names: Vec<&String> = self.linear.keys().collect();
        names.sort_by_key(|n| self.linear.get(*n).map(|fnc| fnc.src.start));
        let names: Vec<String> = names.into_iter().cloned().collect();
        for name in names {
            let Some(func) = self.linear.get(&name) else {
                continue;
            };
            let (factor, offset, fsrc) = (func.factor, func.offset, func.src);
            let (ins, outs) = signals.remove(&name).unwrap_or_default();
            let input = match ins.as_slice() {
                [one] => one,
                [] => {
                    if !outs.is_empty() {
                        self.ctx.error(
                            fsrc,
                            format!(
                                "function '{name}' has no <SignalConnection> to its signal 'in'"
                            ),
                        );
                    } else {
                        self.ctx
                            .warn(fsrc, format!("function '{name}' is not connected: ignored"));
                    }
                    continue;
                }
                [_, second, ..] => {
                    self.ctx.error(
                        second.1,
                        format!("function '{name}' has more than one <SignalConnection> to its signal 'in'"),
                    );
                    continue;
                }
            };
            if outs.is_empty() {
                self.ctx.warn(
                    fsrc,
                    format!("the output 'out' of function '{name}' is not connected: ignored"),
                );
            }
            for (out, osrc) in &outs {
                let conn = ConnDraft {
                    from: self.var_ref(&input.0),
                    to: self.var_ref(out),
                    gain: factor,
                    offset,
                    map_src: Some(fsrc),
                    unit_mismatch: false,
                    src: *osrc,
                    comment: Some(format!("through LinearTransformation '{name}'")),
                };
                self.leaves.push(Leaf { conn, bond: None });
            }
        }
    }

    // -----------------------------------------------------------------
    // Variable groups

    fn groups(&mut self, sim: &str, at: Src) -> Option<Vec<Group>> {
        let s = self.sims.get(sim)?;
        if let Some(g) = &s.groups {
            return g.clone();
        }
        let file_name = format!("{}_OspModelDescription.xml", s.md.model_name);
        let fmu_dir = s.fmu.parent().unwrap_or(Path::new("")).to_path_buf();
        let osp_dir = self.path.parent().unwrap_or(Path::new("")).to_path_buf();
        let candidates = [fmu_dir.join(&file_name), osp_dir.join(&file_name)];
        let found = candidates.iter().find(|p| p.is_file()).cloned();
        let groups = match found {
            None => {
                self.ctx.error(
                    at,
                    format!(
                        "simulator '{sim}' has no OSP model description: neither {} nor {} exists",
                        candidates[0].display(),
                        candidates[1].display()
                    ),
                );
                None
            }
            Some(path) => match xml::read(&mut self.ctx.sources, &path, &shown(&path)) {
                Err(e) => {
                    self.ctx.diags.extend(e.diagnostics);
                    None
                }
                Ok(doc) => {
                    let root = &doc.root;
                    if root.local() != "OspModelDescription" {
                        self.ctx.error(
                            root.src(doc.file),
                            format!(
                                "not an OSP model description: the root element is <{}>",
                                root.name
                            ),
                        );
                        None
                    } else {
                        let mut out = Vec::new();
                        for vgs in root.children_named("VariableGroups") {
                            out.extend(vgs.children.iter().map(read_group));
                        }
                        Some(out)
                    }
                }
            },
        };
        if let Some(s) = self.sims.get_mut(sim) {
            s.groups = Some(groups.clone());
        }
        groups
    }

    fn group_connection(&mut self, c: &Elem, bond: Option<Val<String>>) {
        let f = self.file;
        let gs: Vec<&Elem> = c.children_named("VariableGroup").collect();
        let [ga, gb] = gs.as_slice() else {
            self.ctx.error(
                c.src(f),
                format!(
                    "<VariableGroupConnection> needs exactly two <VariableGroup>, not {}",
                    gs.len()
                ),
            );
            return;
        };
        let (Some(a), Some(b)) = (self.endpoint(ga), self.endpoint(gb)) else {
            return;
        };
        let (Some(groups_a), Some(groups_b)) = (
            self.groups(&a.sim, a.sim_src),
            self.groups(&b.sim, b.sim_src),
        ) else {
            return;
        };
        let find = |groups: &[Group], name: &str| -> Option<Group> {
            fn walk(gs: &[Group], name: &str) -> Option<Group> {
                gs.iter()
                    .find(|g| g.name == name)
                    .cloned()
                    .or_else(|| gs.iter().find_map(|g| walk(&g.children, name)))
            }
            walk(groups, name)
        };
        let all_names = |groups: &[Group]| {
            fn walk(gs: &[Group], out: &mut Vec<String>) {
                for g in gs {
                    out.push(g.name.clone());
                    walk(&g.children, out);
                }
            }
            let mut out = Vec::new();
            walk(groups, &mut out);
            out
        };
        let (Some(group_a), Some(group_b)) = (find(&groups_a, &a.var), find(&groups_b, &b.var))
        else {
            for (e, groups) in [(&a, &groups_a), (&b, &groups_b)] {
                if find(groups, &e.var).is_none() {
                    let names = all_names(groups);
                    self.ctx.error_help(
                        e.var_src,
                        format!(
                            "the OSP model description of simulator '{}' has no variable group '{}'",
                            e.sim, e.var
                        ),
                        did_you_mean(&e.var, names.iter().map(String::as_str)),
                    );
                }
            }
            return;
        };
        if group_a.kind != group_b.kind {
            self.ctx.error(
                c.src(f),
                format!(
                    "variable groups '{}' ({}) and '{}' ({}) are of different types",
                    group_a.name, group_a.kind, group_b.name, group_b.kind
                ),
            );
            return;
        }
        let port = PORTS.iter().find(|p| p.0 == group_a.kind);
        let group_label = format!("{}.{}~{}.{}", a.sim, group_a.name, b.sim, group_b.name);
        match port {
            Some((_, effort, flow)) => {
                let child =
                    |g: &Group, kind: &str| g.children.iter().find(|c| c.kind == kind).cloned();
                let (Some(ea), Some(fa), Some(eb), Some(fb)) = (
                    child(&group_a, effort),
                    child(&group_a, flow),
                    child(&group_b, effort),
                    child(&group_b, flow),
                ) else {
                    self.ctx.error(
                        c.src(f),
                        format!("the {} groups '{}' and '{}' must each hold a <{effort}> and a <{flow}> group", group_a.kind, group_a.name, group_b.name),
                    );
                    return;
                };
                let n = ea.vars.len();
                if [fa.vars.len(), eb.vars.len(), fb.vars.len()] != [n, n, n] {
                    self.ctx.error(
                        c.src(f),
                        format!(
                            "the {} groups '{}' and '{}' have different numbers of variables",
                            group_a.kind, group_a.name, group_b.name
                        ),
                    );
                    return;
                }
                let base = bond
                    .clone()
                    .unwrap_or_else(|| Val::new(group_label.clone(), c.src(f)));
                for i in 0..n {
                    let name = if n > 1 {
                        format!("{}[{}]", base.value, i + 1)
                    } else {
                        base.value.clone()
                    };
                    let bond = Some(Val::new(name, base.src));
                    for (ga, gb) in [(&ea, &eb), (&fa, &fb)] {
                        let (Some(va), Some(vb)) = (ga.vars.get(i), gb.vars.get(i)) else {
                            continue;
                        };
                        let ea = Endpoint {
                            var: va.clone(),
                            causality: None,
                            ..copy(&a)
                        };
                        let eb = Endpoint {
                            var: vb.clone(),
                            causality: None,
                            ..copy(&b)
                        };
                        self.leaf(&ea, &eb, c.src(f), bond.clone(), false);
                    }
                }
            }
            None => {
                let mut pairs = Vec::new();
                if let Err(why) = pair_vars(&group_a, &group_b, &mut pairs) {
                    self.ctx.error(
                        c.src(f),
                        format!(
                            "cannot connect the variable groups '{}' and '{}': {why}",
                            group_a.name, group_b.name
                        ),
                    );
                    return;
                }
                for (va, vb) in pairs {
                    let ea = Endpoint {
                        var: va,
                        causality: None,
                        ..copy(&a)
                    };
                    let eb = Endpoint {
                        var: vb,
                        causality: None,
                        ..copy(&b)
                    };
                    self.leaf(&ea, &eb, c.src(f), bond.clone(), false);
                }
            }
        }
    }

    // -----------------------------------------------------------------
    // Master and bonds

    fn master(&mut self, ecco: Option<&Elem>) {
        let f = self.file;
        let algorithm = self
            .algorithm
            .clone()
            .unwrap_or_else(|| Val::new("fixedStep".to_string(), self.draft.root_src));
        // libcosim compares the name in lower case (load_osp_config).
        let kind = algorithm.value.to_ascii_lowercase();
        match kind.as_str() {
            "fixedstep" | "fixed-step" | "" => {
                self.draft.master.kind = Some(Val::new("fixed-step", algorithm.src));
                let step = match self.base_step.clone() {
                    Some(s) => s,
                    None => {
                        self.ctx.note(
                            self.draft.root_src,
                            format!("no <BaseStepSize>: libcosim's default of {LIBCOSIM_DEFAULT_STEP} s is used (--step replaces it)"),
                        );
                        Val::new(LIBCOSIM_DEFAULT_STEP, self.draft.root_src)
                    }
                };
                self.draft.master.step = Some(step);
                if let Some(e) = ecco {
                    self.ctx.warn(
                        e.src(f),
                        "<EccoConfiguration> has no effect: <Algorithm> is fixedStep".to_string(),
                    );
                }
            }
            "ecco" => {
                self.draft.master.kind = Some(Val::new("ecco", algorithm.src));
                // libcosim's indicator and step rules, so that the run is
                // libcosim's (docs/ssp.md).
                self.draft.master.libcosim_ecco = Some(algorithm.src);
                if let Some(b) = &self.base_step {
                    self.ctx.note(
                        b.src,
                        "<BaseStepSize> is not used by the ECCO algorithm (its initial step is <EccoConfiguration><StepSize>)".to_string(),
                    );
                }
                match ecco {
                    Some(e) => self.ecco(e),
                    None => self.ctx.note(
                        algorithm.src,
                        "no <EccoConfiguration>: cosim's ECCO defaults are used (docs/algorithms.md)".to_string(),
                    ),
                }
            }
            _ => {
                let other = algorithm.value.as_str();
                self.ctx.error_help(
                    algorithm.src,
                    format!("unknown <Algorithm> '{other}'"),
                    did_you_mean(other, ["fixedStep", "ecco"]),
                );
            }
        }
        for (_, s) in self.sims.iter() {
            if let Some(sub) = self.draft.subsystems.get_mut(s.sub)
                && kind == "ecco"
                && let Some(k) = sub.step_multiple.take()
            {
                self.ctx.warn(
                    k.src,
                    "the simulator's stepSize is not used with the ECCO algorithm".to_string(),
                );
            }
        }
    }

    fn ecco(&mut self, e: &Elem) {
        let f = self.file;
        let mut relative: Option<Val<f64>> = None;
        let mut absolute: Option<Val<f64>> = None;
        for c in &e.children {
            let Some((_, key)) = ECCO_KEYS.iter().find(|(n, _)| *n == c.local()) else {
                let names: Vec<&str> = ECCO_KEYS.iter().map(|k| k.0).collect();
                self.ctx.unknown(f, c, &e.name, &names);
                continue;
            };
            let Some(x) = self.ctx.f64_text(f, c) else {
                continue;
            };
            // libcosim reads the step sizes with `to_duration`: truncated
            // to whole nanoseconds.
            let x = match *key {
                "step" | "dt_min" | "dt_max" => {
                    let ns = (x * 1e9).trunc() / 1e9;
                    if ns != x && ns > 0.0 {
                        self.ctx.note(
                            c.text_src(f),
                            format!("{x} s is not a whole number of nanoseconds: {ns} s, as libcosim truncates it"),
                        );
                        ns
                    } else {
                        x
                    }
                }
                _ => x,
            };
            let v = Val::new(x, c.text_src(f));
            match *key {
                "step" => self.draft.master.step = Some(v),
                "tolerance" => relative = Some(v),
                "absolute" => absolute = Some(v),
                k => self.draft.master.controller.push((k, v)),
            }
        }
        if let Some(r) = &relative {
            if r.value <= 0.0 {
                self.ctx.error(
                    r.src,
                    format!("the relative tolerance must be positive, not {}", r.value),
                );
                return;
            }
            self.draft.master.tolerance = Some(r.clone());
        }
        if let Some(a) = absolute {
            // libcosim: eps = |dE| / (abs + rel |E|) = |dE| / (rel (abs/rel + |E|)),
            // cosim:    eps = |dE| / (r (E0 + |E|)):  r = rel, E0 = abs / rel.
            let rel = relative
                .as_ref()
                .map_or(cosim_scenario::defaults::TOLERANCE, |r| r.value);
            if a.value <= 0.0 {
                self.ctx.error(
                    a.src,
                    format!("the absolute tolerance must be positive, not {}", a.value),
                );
                return;
            }
            self.draft.master.energy_scale = Some(Val::new(energy_scale_for(a.value, rel), a.src));
        }
    }

    /// Connections, and bonds from the `powerBond` names and power ports.
    fn bonds(&mut self) {
        let leaves = std::mem::take(&mut self.leaves);
        let mut by_name: Vec<(Val<String>, Vec<usize>)> = Vec::new();
        for (i, l) in leaves.iter().enumerate() {
            if let Some(b) = &l.bond {
                match by_name.iter_mut().find(|(n, _)| n.value == b.value) {
                    Some((_, list)) => list.push(i),
                    None => by_name.push((b.clone(), vec![i])),
                }
            }
        }
        for (name, members) in by_name {
            let conns: Vec<&ConnDraft> = members
                .iter()
                .filter_map(|&i| leaves.get(i).map(|l| &l.conn))
                .collect();
            let [c1, c2] = conns.as_slice() else {
                let at = conns.get(2).map_or(name.src, |c| c.src);
                self.ctx.error(
                    at,
                    format!(
                        "power bond '{}' has {} connections; a bond is two connections in opposite directions between two simulators",
                        name.value,
                        conns.len()
                    ),
                );
                continue;
            };
            if !(c1.from.sub == c2.to.sub && c1.to.sub == c2.from.sub && c1.from.sub != c1.to.sub) {
                self.ctx.error(
                    c2.src,
                    format!(
                        "power bond '{}': its two connections must go in opposite directions between two simulators",
                        name.value
                    ),
                );
                continue;
            }
            // c1 goes from simulator X to Y, c2 from Y to X. Each port is
            // one simulator's input and output.
            let port_x = (c2.to.clone(), c1.from.clone());
            let port_y = (c1.to.clone(), c2.from.clone());
            let (i1, i2) = (members[0], members[1]);
            let Some(y_first) = self.bond_roles(&name, (c1, i1), (c2, i2)) else {
                continue;
            };
            let [port_a, port_b] = if y_first {
                [port_y, port_x]
            } else {
                [port_x, port_y]
            };
            let mut intended = false;
            for (input, output) in [&port_a, &port_b] {
                let Some(md) = self
                    .sims
                    .values()
                    .find(|s| s.sub == input.sub)
                    .map(|s| s.md.clone())
                else {
                    continue;
                };
                let (Some((i, _)), Some((o, _))) = (
                    md.variable_by_name(&input.var),
                    md.variable_by_name(&output.var),
                ) else {
                    continue;
                };
                if let Err(why) = check_effort_flow_pair(&md, i, &md, o) {
                    intended = true;
                    self.ctx.note(
                        name.src,
                        format!(
                            "power bond '{}': the units do not show that '{}' and '{}' form an effort/flow pair ({why}); the file declares the bond, which needs no units: it is kept as declared (intended = true)",
                            name.value, input.var, output.var
                        ),
                    );
                }
            }
            self.draft.bonds.push(BondDraft {
                name: name.clone(),
                ports: [port_a, port_b],
                intended,
                src: c1.src,
            });
        }
        if let Some(first) = self.draft.bonds.first() {
            // The file says which connections are bonds: only those.
            self.draft.master.discover_bonds = Some(Val::new(false, first.name.src));
        }
        self.draft
            .connections
            .extend(leaves.into_iter().map(|l| l.conn));
        // In file order (functions' connections come last otherwise).
        self.draft
            .connections
            .sort_by_key(|c| (c.src.file, c.src.start));
    }
}

impl Reader<'_> {
    /// The ports of a power bond in libcosim's order, from the `causality`
    /// attributes of its two connections `c1` and `c2` (in file order;
    /// `i1`, `i2` their leaves). libcosim (`add_power_bonds` in
    /// osp_config_parser.cpp) reads them as bond roles, not as data
    /// directions: in the first connection the variable marked "input" is
    /// `input_a` and the one marked "output" `output_b`; in the second,
    /// "input" is `input_b` and "output" `output_a`. ECCO then compares the
    /// powers `input_a * output_a` and `input_b * output_b`. Port a is
    /// therefore the simulator of the first connection's "input"-marked
    /// variable, whichever way the data flows.
    ///
    /// With `c1` going from simulator X to Y: `Some(true)` when port a is
    /// Y (the marks agree with the FMUs), `Some(false)` when it is X (both
    /// connections marked the other way, as in libcosim's quarter-truck
    /// example) or when nothing is marked; `None` after an error.
    fn bond_roles(
        &mut self,
        name: &Val<String>,
        (c1, i1): (&ConnDraft, usize),
        (c2, i2): (&ConnDraft, usize),
    ) -> Option<bool> {
        let r1 = self.marked_roles(name, i1)?;
        let r2 = self.marked_roles(name, i2)?;
        for (r, c, i) in [(r1, c1, i1), (r2, c2, i2)] {
            // A <VariableConnection> (a group connection has no marks).
            if r.is_none() && self.marks.contains_key(&i) {
                self.ctx.note(
                    c.src,
                    format!(
                        "this connection of power bond '{}' marks neither variable with causality=\"input\" or \"output\", which libcosim requires (it refuses the file); cosim takes the bond's ports from the FMUs' causalities",
                        name.value
                    ),
                );
            }
        }
        // "input" marks the variable fed by the connection (`to`) in a
        // connection marked as the FMUs say.
        let (r1, r2) = match (r1, r2) {
            (Some(a), Some(b)) => (a, b),
            (Some(a), None) | (None, Some(a)) => (a, a),
            (None, None) => return Some(false),
        };
        if r1 != r2 {
            let at = self
                .marks
                .get(&i2)
                .and_then(|m| m.iter().flatten().next().map(|v| v.src))
                .unwrap_or(c2.src);
            let input_a = if r1 { &c1.to } else { &c1.from };
            let output_a = if r2 { &c2.from } else { &c2.to };
            let names = self.sub_names();
            let path =
                |v: &VarRef| format!("{}.{}", names.get(v.sub).map_or("?", String::as_str), v.var);
            self.ctx.warn(
                at,
                format!(
                    "the causality attributes of the two connections of power bond '{}' disagree: libcosim would take '{}' (\"input\" in the first) and '{}' (\"output\" in the second) as one port, which are not an input and an output of one simulator; cosim pairs each simulator's own input and output, port a being the simulator of '{}'",
                    name.value,
                    path(input_a),
                    path(output_a),
                    path(input_a)
                ),
            );
        }
        Some(r1)
    }

    /// The roles the `causality` attributes of leaf `i` of power bond
    /// `name` give: `Some(true)` when the variable marked "input" is the
    /// one the connection feeds (`to`), `Some(false)` when it is the one
    /// that feeds it, `None` when neither is marked; `Err` (reported) for
    /// a value other than "input"/"output" or the same mark on both.
    fn marked_roles(&mut self, name: &Val<String>, i: usize) -> Option<Option<bool>> {
        let Some([from, to]) = self.marks.get(&i).cloned() else {
            return Some(None);
        };
        let mut bad = false;
        for m in [&from, &to].into_iter().flatten() {
            if !MARKS.contains(&m.value.as_str()) {
                bad = true;
                self.ctx.error_help(
                    m.src,
                    format!(
                        "causality=\"{}\" on a variable of power bond '{}': in a power-bond connection the attribute says whether the variable is the bond's \"input\" or \"output\" (libcosim accepts nothing else)",
                        m.value, name.value
                    ),
                    did_you_mean(&m.value, MARKS.iter().copied()),
                );
            }
        }
        if bad {
            return None;
        }
        fn value(m: &Option<Val<String>>) -> Option<&str> {
            m.as_ref().map(|v| v.value.as_str())
        }
        match (value(&from), value(&to)) {
            (Some(a), Some(b)) if a == b => {
                let src = to.as_ref().map_or(name.src, |v| v.src);
                self.ctx.error(
                    src,
                    format!(
                        "both variables of this connection of power bond '{}' are marked causality=\"{a}\": one is the bond's \"input\", the other its \"output\" (libcosim needs both)",
                        name.value
                    ),
                );
                None
            }
            (_, Some("input")) | (Some("output"), _) => Some(Some(true)),
            (Some("input"), _) | (_, Some("output")) => Some(Some(false)),
            _ => Some(None),
        }
    }

    fn sub_names(&self) -> Vec<String> {
        self.draft
            .subsystems
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }
}

fn copy(e: &Endpoint) -> Endpoint {
    Endpoint {
        sim: e.sim.clone(),
        var: e.var.clone(),
        causality: e.causality.clone(),
        sim_src: e.sim_src,
        var_src: e.var_src,
    }
}

/// Pairs the variables of two groups of the same type: their own variables
/// by position, nested groups by type (when unique) or position.
fn pair_vars(a: &Group, b: &Group, out: &mut Vec<(String, String)>) -> Result<(), String> {
    if a.vars.len() != b.vars.len() {
        return Err(format!(
            "'{}' has {} variables, '{}' has {}",
            a.name,
            a.vars.len(),
            b.name,
            b.vars.len()
        ));
    }
    if a.children.len() != b.children.len() {
        return Err(format!(
            "'{}' has {} groups, '{}' has {}",
            a.name,
            a.children.len(),
            b.name,
            b.children.len()
        ));
    }
    out.extend(a.vars.iter().cloned().zip(b.vars.iter().cloned()));
    let unique = |g: &Group| {
        let kinds: HashSet<&str> = g.children.iter().map(|c| c.kind.as_str()).collect();
        kinds.len() == g.children.len()
    };
    if unique(a) && unique(b) {
        for ca in &a.children {
            let Some(cb) = b.children.iter().find(|c| c.kind == ca.kind) else {
                return Err(format!("'{}' has no group of type {}", b.name, ca.kind));
            };
            pair_vars(ca, cb, out)?;
        }
    } else {
        for (ca, cb) in a.children.iter().zip(&b.children) {
            pair_vars(ca, cb, out)?;
        }
    }
    Ok(())
}

fn read_group(e: &Elem) -> Group {
    let mut g = Group {
        name: e.value("name").unwrap_or_default().to_string(),
        kind: e
            .value("type")
            .filter(|_| e.local() == "VariableGroup")
            .unwrap_or(e.local())
            .to_string(),
        vars: Vec::new(),
        children: Vec::new(),
    };
    for c in &e.children {
        if c.local() == "Variable" {
            if let Some(r) = c.value("ref").or_else(|| c.value("name")) {
                g.vars.push(r.to_string());
            }
        } else {
            g.children.push(read_group(c));
        }
    }
    g
}

/// The dimension of a function draft (1 for a Sum).
fn dimension_value(f: &FuncDraft) -> u32 {
    f.dimension.as_ref().map_or(1, |d| d.value)
}

/// The energy scale `E0` for libcosim's tolerances: `abs / rel`, moved by
/// an ulp or two when needed so that `rel * E0` is `abs` exactly (cosim's
/// indicator computes libcosim's `abs + rel E` as `r E0 + r E`).
fn energy_scale_for(abs: f64, rel: f64) -> f64 {
    let e0 = abs / rel;
    if !(e0.is_finite() && e0 > 0.0) {
        return e0;
    }
    for k in [0i64, 1, -1, 2, -2, 3, -3] {
        let x = f64::from_bits(e0.to_bits().wrapping_add_signed(k));
        if rel * x == abs {
            return x;
        }
    }
    e0
}
