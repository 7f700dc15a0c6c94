//! System assembly: from a resolved scenario and its opened FMUs to a
//! ready [`System`], its master and its observers.
//!
//! Instantiates every subsystem (several instances of one FMU are fine),
//! applies parameters and start values, compiles connections into slots,
//! confirms power bonds (declared, or discovered from unit-based candidates
//! on cross-connected FMUs), runs the structural checks and builds the
//! master selected in the scenario.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use cosim_core::controller::{PiSettings, PiVariant};
use cosim_core::events::{EventSchedule, EventSlot, EventSubsystem, SlotEvent};
use cosim_core::indicators::{
    Aggregate as CoreAggregate, EnergyIndicator, ErrorIndicator, Nepce, PredictorCorrector,
    PredictorForm, Tolerances,
};
use cosim_core::input_file::{FileFeed, FileInputs, ValueFeed, ValueSchedule};
use cosim_core::master::{
    Adaptive, Estimate, FixedStep, Interpolation, Iterative, IterativeSettings, Master, Richardson,
    RichardsonSettings, Scheme as CoreScheme, StronglyCoupled,
};
use cosim_core::nested::NestedSystem;
use cosim_core::observer::{
    EnergyLog, Observer, Sampling as CoreSampling, StepLog, TextColumn, TraceWriter,
};
use cosim_core::output::OutputsHandle;
use cosim_core::structure::{
    AlgebraicLoop, algebraic_loops, feedthrough_report, gauss_seidel_order,
};
use cosim_core::subsystem::{SlotVar, StartValue};
use cosim_core::system::NonFinitePolicy;
use cosim_core::time::TimeBase;
use cosim_core::{
    BondPort, Connection, FmuSubsystem, FunctionLink, LinkEnd, PowerBond, Subsystem, System,
    SystemSpec,
};
use cosim_fmi::bonds::{BondRole, find_bond_candidates};
use cosim_fmi::model_description::{
    Causality, ModelDescription, StartValue as ModelStart, VariableIndex, VariableType,
};
use cosim_fmi::{FmiVersion, Fmu, InstantiateOptions, Value};
use cosim_isolation::{HostPool, IsolatedSubsystem, IsolationSettings};

use crate::nest::{NestNode, Node};
use crate::{
    Aggregate, FunctionEnd, Indicator, Isolation, MasterKind, NonFinite, Normalisation,
    ResolvedScenario, RichardsonEstimate, Sampling, ScenarioError, Scheme, Traced, VariableRef,
};

/// How a bond came to be.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum BondSource {
    /// Declared in `[[bonds]]`.
    Declared,
    /// Discovered from the FMUs' power-bond candidates and the connections.
    Discovered,
}

/// A bond the run uses, with a readable explanation.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BondReport {
    /// The bond name.
    pub name: String,
    /// Declared or discovered.
    pub source: BondSource,
    /// e.g. "chassis.F [N] / chassis.v_c [m/s] <-> wheel.v_c [m/s] / wheel.F_c [N] (translational; gains -1, 1)".
    pub explanation: String,
}

/// What assembly found, for `cosim check` and the start of `cosim run`.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct AssemblyReport {
    /// The bonds in use.
    pub bonds: Vec<BondReport>,
    /// Outputs with direct feed-through.
    pub feedthrough: Vec<String>,
    /// Algebraic loops (cycles through feed-through outputs).
    pub algebraic_loops: Vec<String>,
    /// The interface each FMU subsystem runs, at every level
    /// (`nest.inner: ...`), where its FMU has Model Exchange (the others
    /// run Co-Simulation, the only interface they have).
    pub interfaces: Vec<String>,
}

/// The lines of [`AssemblyReport::interfaces`] for the subsystems of
/// `resolved` (`nodes[i]` is subsystem `i`) and the levels below, each
/// name after `prefix`.
fn interface_lines(
    resolved: &ResolvedScenario,
    nodes: &[Node],
    prefix: &str,
    out: &mut Vec<String>,
) {
    use cosim_core::text::number;
    for (sub, node) in resolved.subsystems.iter().zip(nodes) {
        let name = format!("{prefix}{}", sub.name);
        match node {
            Node::Fmu(fmu) if fmu.is_strongly_coupled_member() => {
                out.push(format!(
                    "{name}: Model Exchange, integrated with every FMU of its level as one ODE by the strongly-coupled master"
                ));
            }
            Node::Fmu(fmu) => {
                if let Some(s) = fmu.runs_model_exchange() {
                    let mut line = format!(
                        "{name}: Model Exchange, integrated by cosim's solver ({}, relative tolerance {}, absolute tolerance {} times each state's nominal",
                        s.method.name(),
                        number(s.relative_tolerance),
                        number(s.absolute_tolerance)
                    );
                    if let Some(h) = s.max_step {
                        line.push_str(&format!(", max step {} s", number(h)));
                    }
                    if let Some(h) = s.initial_step {
                        line.push_str(&format!(", initial step {} s", number(h)));
                    }
                    line.push(')');
                    out.push(line);
                } else if fmu.model_description().model_exchange.is_some() {
                    out.push(format!(
                        "{name}: Co-Simulation (its FMU has Model Exchange too: interface = \"model-exchange\" or --interface me runs it)"
                    ));
                }
            }
            Node::Nest(nest) => {
                interface_lines(&nest.resolved, &nest.nodes, &format!("{name}."), out);
            }
        }
    }
}

/// A system ready to run.
pub struct Assembly {
    /// The system (instantiated, not yet initialised).
    pub system: System,
    /// The master.
    pub master: Box<dyn Master>,
    /// What assembly found.
    pub report: AssemblyReport,
    /// The traced variables as (subsystem, observed slot), in trace order;
    /// a traced function port is (number of subsystems, index in
    /// `system.functions().values()`).
    pub trace_columns: Vec<(usize, usize)>,
    /// Text columns of the trace (Strings, and the values traced as text:
    /// [`cosim_core::traced_text`]).
    pub trace_text_columns: Vec<TextColumn>,
    /// For each trace column: the name it is written under when the
    /// scenario named its variable by an alias, else `None`.
    pub trace_names: Vec<Option<String>>,
    /// Indicators computed and logged alongside the master.
    pub diagnostics: Vec<Box<dyn ErrorIndicator>>,
    /// The timed events of every level, for the run loop (steps end at
    /// them; the step log names them).
    pub events: EventSchedule,
    /// Per subsystem: the variables of its input slots and observed slots.
    slots: Vec<Layout>,
}

impl Assembly {
    /// The input slot of a variable (an array's element), if it is a
    /// coupled input.
    pub fn input_slot(&self, r: VariableRef) -> Option<usize> {
        self.slots
            .get(r.subsystem)?
            .input_slot(r.variable, r.element)
    }

    /// The observed slot of a variable (an array's element), if it is read
    /// after each step.
    pub fn observed_slot(&self, r: VariableRef) -> Option<usize> {
        self.slots
            .get(r.subsystem)?
            .observed_slot(r.variable, r.element)
    }
}

/// Refuses a fixed-step nest under a fixed-step level whose step it does
/// not divide: both must meet at every outer communication point.
fn check_nested_step(
    resolved: &ResolvedScenario,
    s: usize,
    nest: &NestNode,
) -> Result<(), AssembleError> {
    let sub = &resolved.subsystems[s];
    let (outer, inner) = (&resolved.master, &nest.resolved.master);
    if outer.kind == MasterKind::FixedStep && inner.kind == MasterKind::FixedStep {
        let ratio = outer.step / inner.step;
        if (ratio - ratio.round()).abs() > 1e-9 * ratio.max(1.0) || ratio.round() < 1.0 {
            return Err(resolved
                .error_at(
                    sub.span,
                    format!(
                        "the step {} s of nested system '{}' does not divide the step {} s of the level above",
                        inner.step, sub.name, outer.step
                    ),
                )
                .into());
        }
    }
    Ok(())
}

/// Builds nested system `nest`, subsystem `s` of `resolved`, with the slots
/// of `layout` (variables of its synthetic model description).
pub(crate) fn nested(
    resolved: &ResolvedScenario,
    s: usize,
    nest: &NestNode,
    layout: &Layout,
    level: &Level,
    full_name: &str,
) -> Result<Box<dyn Subsystem>, AssembleError> {
    let sub = &resolved.subsystems[s];
    if let Some(a) = sub.parameters.iter().chain(&sub.start_values).next() {
        let span = match &a.origin {
            crate::ValueOrigin::File(span) => *span,
            crate::ValueOrigin::Argument(_) => sub.span,
        };
        return Err(resolved
            .error_at(
                span,
                format!(
                    "'{}' is a nested system: set the parameters and start values of its subsystems in its own scenario",
                    sub.name
                ),
            )
            .into());
    }
    let to_inner = |v: &VariableIndex| {
        let (is, iv) = nest.map[*v];
        VariableRef {
            subsystem: is,
            variable: iv,
            element: 0,
        }
    };
    let inner_level = Level {
        prefix: format!("{full_name}."),
        extra_inputs: layout.inputs.iter().map(to_inner).collect(),
        extra_observed: layout.observed.iter().map(to_inner).collect(),
        energy_dir: level.energy_dir.clone(),
        divergence_limit: resolved.master.divergence_limit.or(level.divergence_limit),
        isolation: level.isolation,
        call_log: level.call_log.clone(),
        time_base: level.time_base,
        hosts: level.hosts.clone(),
    };
    let child = assemble_nodes(&nest.resolved, &nest.nodes, &inner_level)?;
    let input_map = layout
        .inputs
        .iter()
        .map(|v| {
            let r = to_inner(v);
            child.input_slot(r).map(|slot| (r.subsystem, slot))
        })
        .collect::<Option<Vec<_>>>();
    let observed_map = layout
        .observed
        .iter()
        .map(|v| {
            let r = to_inner(v);
            child.observed_slot(r).map(|slot| (r.subsystem, slot))
        })
        .collect::<Option<Vec<_>>>();
    let (Some(input_map), Some(observed_map)) = (input_map, observed_map) else {
        return Err(resolved
            .error_at(sub.span, "internal: a slot of the nested system is missing")
            .into());
    };
    let info = cosim_core::SubsystemInfo::from_model_description(
        &nest.md,
        full_name,
        &layout.slot_vars(&layout.inputs),
        &layout.slot_vars(&layout.observed),
        layout.n_outputs,
        format!("nested system defined in {}", sub.fmu.display()),
    );
    let mut observers: Vec<Box<dyn Observer>> = Vec::new();
    if let Some(dir) = &level.energy_dir
        && !child.system.bonds().is_empty()
    {
        let path = dir.join(format!("energy.{full_name}.csv"));
        observers.push(Box::new(EnergyLog::deferred(&path, &child.system)));
    }
    Ok(Box::new(NestedSystem::new(
        info,
        child.system,
        child.master,
        input_map,
        observed_map,
        observers,
    )?))
}

/// Why assembly failed: a scenario error (with a position) or an FMU error.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    /// A problem in the scenario, located in the file.
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// An FMU could not be opened, instantiated or configured.
    #[error("subsystem '{subsystem}': {error}")]
    Fmu {
        /// The subsystem.
        subsystem: String,
        /// The import-layer error (in the message, so not a `source`).
        error: cosim_fmi::FmiError,
    },
    /// The core refused the system or master.
    #[error(transparent)]
    Core(#[from] cosim_core::CoreError),
}

/// Opens the FMU of every subsystem of a scenario (each file once, shared by
/// the subsystems that use it). Errors point at the `fmu = ...` line.
pub fn open_fmus(scenario: &crate::Scenario) -> Result<Vec<Fmu>, AssembleError> {
    let mut cache: HashMap<PathBuf, Fmu> = HashMap::new();
    let mut fmus = Vec::new();
    for s in scenario.subsystems() {
        let path = s.fmu.value.clone();
        let fmu = match cache.get(&path) {
            Some(f) => f.clone(),
            None => {
                let f = Fmu::open(&path).map_err(|e| {
                    AssembleError::Scenario(scenario.error_at(
                        s.fmu.span,
                        format!("cannot open the FMU of subsystem '{}': {e}", s.name.value),
                    ))
                })?;
                cache.insert(path, f.clone());
                f
            }
        };
        fmus.push(fmu);
    }
    Ok(fmus)
}

/// Per-subsystem slot layout: the variables of the input and observed
/// slots (each once; an FMI 3 array fills one slot per element).
#[derive(Debug, Default)]
pub(crate) struct Layout {
    inputs: Vec<VariableIndex>,
    observed: Vec<VariableIndex>,
    /// How many of `observed` are outputs.
    n_outputs: usize,
    /// The shapes of the array variables among them.
    shapes: HashMap<VariableIndex, Vec<usize>>,
}

impl Layout {
    /// The layout of scalar `inputs` and outputs `observed` (a nest on its
    /// own: [`crate::export`]).
    pub(crate) fn scalars(inputs: Vec<VariableIndex>, observed: Vec<VariableIndex>) -> Layout {
        Layout {
            n_outputs: observed.len(),
            inputs,
            observed,
            shapes: HashMap::new(),
        }
    }

    /// Slots of variable `v`.
    fn len_of(&self, v: VariableIndex) -> usize {
        self.shapes.get(&v).map_or(1, |s| s.iter().product())
    }
    fn slot_in(&self, list: &[VariableIndex], v: VariableIndex, element: usize) -> Option<usize> {
        let mut first = 0;
        for &x in list {
            if x == v {
                return (element < self.len_of(v)).then_some(first + element);
            }
            first += self.len_of(x);
        }
        None
    }
    fn input_slot(&self, v: VariableIndex, element: usize) -> Option<usize> {
        self.slot_in(&self.inputs, v, element)
    }
    fn observed_slot(&self, v: VariableIndex, element: usize) -> Option<usize> {
        self.slot_in(&self.observed, v, element)
    }
    fn slot_vars(&self, list: &[VariableIndex]) -> Vec<SlotVar> {
        list.iter()
            .map(|&v| SlotVar {
                variable: v,
                shape: self.shapes.get(&v).cloned().unwrap_or_default(),
            })
            .collect()
    }
}

/// Records the shape of every FMI 3 array among the slots of `layouts`,
/// and refuses an array input of which only some elements are connected:
/// an array is set whole, and the others would have no value.
fn array_shapes(
    resolved: &ResolvedScenario,
    mds: &[&ModelDescription],
    layouts: &mut [Layout],
) -> Result<(), AssembleError> {
    for (s, l) in layouts.iter_mut().enumerate() {
        let sub = &resolved.subsystems[s];
        let md = mds[s];
        for &v in l.inputs.iter().chain(&l.observed) {
            if md.variables[v].is_scalar() || l.shapes.contains_key(&v) {
                continue;
            }
            let shape = sub
                .shape(md, v)
                .map_err(|m| AssembleError::Scenario(resolved.error_at(sub.span, m)))?;
            l.shapes.insert(v, shape);
        }
        for &v in &l.inputs {
            let Some(shape) = l.shapes.get(&v) else {
                continue;
            };
            let n: usize = shape.iter().product();
            let fed: HashSet<usize> = resolved
                .connections
                .iter()
                .map(|c| c.to)
                .chain(
                    resolved
                        .function_connections
                        .iter()
                        .filter_map(|c| match c.to {
                            FunctionEnd::Variable(r) => Some(r),
                            FunctionEnd::Port(_) => None,
                        }),
                )
                .filter(|r| r.subsystem == s && r.variable == v)
                .map(|r| r.element)
                .collect();
            if fed.len() < n {
                let sv = SlotVar {
                    variable: v,
                    shape: shape.clone(),
                };
                let name = &md.variables[v].name;
                let missing: Vec<String> = (0..n)
                    .filter(|k| !fed.contains(k))
                    .take(5)
                    .map(|k| sv.element_name(name, k))
                    .collect();
                let span = resolved
                    .connections
                    .iter()
                    .find(|c| c.to.subsystem == s && c.to.variable == v)
                    .map_or(sub.span, |c| c.span);
                return Err(AssembleError::Scenario(resolved.error_at(
                    span,
                    format!(
                        "array input '{}.{name}' is connected in part: {} of its {n} elements are fed, not {}{} (FMI 3 sets an array whole: connect every element, or the whole array)",
                        sub.name,
                        fed.len(),
                        missing.join(", "),
                        if n - fed.len() > missing.len() { ", ..." } else { "" }
                    ),
                )));
            }
        }
    }
    Ok(())
}

/// Builds the system, master and report of a resolved scenario whose
/// subsystems are all FMUs. `fmus[i]` is the opened FMU of subsystem `i`.
pub fn assemble(resolved: &ResolvedScenario, fmus: &[Fmu]) -> Result<Assembly, AssembleError> {
    let nodes: Vec<Node> = fmus.iter().cloned().map(Node::Fmu).collect();
    assemble_nodes(resolved, &nodes, &Level::top(resolved))
}

/// Where a level of a (possibly nested) system sits, and what the level
/// above needs from it.
#[derive(Debug, Clone, Default)]
pub struct Level {
    /// Prefix of instance names (`""` at the top, `"nest."` inside `nest`).
    pub prefix: String,
    /// Inner inputs the level above feeds (exposed inputs).
    pub extra_inputs: Vec<VariableRef>,
    /// Inner variables the level above reads (exposed outputs, traced).
    pub extra_observed: Vec<VariableRef>,
    /// Where nested levels write their energy logs (`energy.<path>.csv`).
    pub energy_dir: Option<PathBuf>,
    /// The divergence limit of the level above (a nested level's own
    /// `divergence_limit` wins).
    pub divergence_limit: Option<f64>,
    /// `--isolation`: where every FMU of this level and the levels below
    /// runs, whatever the scenarios say.
    pub isolation: Option<Isolation>,
    /// `--log-fmi-calls`: the FMI call log of every FMU of this level and
    /// the levels below.
    pub call_log: Option<cosim_fmi::CallLogSink>,
    /// The resolution of simulation time, the same at every level (chosen
    /// at the top, [`time_base`], when `None`).
    pub time_base: Option<TimeBase>,
    /// The host processes the isolated FMUs of this level and the levels
    /// below share (made at the top, when `None`).
    pub hosts: Option<Arc<HostPool>>,
}

impl Level {
    /// The top level of `resolved`.
    pub fn top(resolved: &ResolvedScenario) -> Level {
        Level {
            energy_dir: resolved
                .outputs
                .energy_log
                .as_ref()
                .and_then(|p| p.parent().map(std::path::Path::to_path_buf)),
            ..Level::default()
        }
    }
}

/// The resolution of simulation time for a scenario and every nested
/// level: nanoseconds, or finer where a start, stop or fixed step needs
/// it (see [`cosim_core::time`]); a time no resolution represents is an
/// error at `[master]`.
pub fn time_base(resolved: &ResolvedScenario, nodes: &[Node]) -> Result<TimeBase, ScenarioError> {
    fn collect(resolved: &ResolvedScenario, nodes: &[Node], out: &mut Vec<(String, f64)>) {
        if matches!(
            resolved.master.kind,
            MasterKind::FixedStep | MasterKind::StronglyCoupled
        ) {
            out.push((
                format!("the step of {}", resolved.path().display()),
                resolved.master.step,
            ));
        }
        for node in nodes {
            if let Node::Nest(nest) = node {
                collect(&nest.resolved, &nest.nodes, out);
            }
        }
    }
    let mut times = vec![
        ("the start time".to_string(), resolved.start),
        ("the stop time".to_string(), resolved.stop),
    ];
    // Output points are whole ticks too (`[outputs] interval`).
    if let Sampling::Interval(dt) = resolved.outputs.sampling {
        times.push(("the output interval".to_string(), dt));
    }
    collect(resolved, nodes, &mut times);
    let named: Vec<(&str, f64)> = times.iter().map(|(n, t)| (n.as_str(), *t)).collect();
    TimeBase::choose(&named).map_err(|e| resolved.master_error(e))
}

/// Builds the system, master and report of a resolved scenario whose
/// subsystems are FMUs or nested systems (`nodes[i]` is subsystem `i`):
/// the slots of every subsystem, the subsystems, the connections and power
/// bonds in slot terms, the system with its structural checks, the master
/// and the trace's columns.
pub fn assemble_nodes(
    resolved: &ResolvedScenario,
    nodes: &[Node],
    level: &Level,
) -> Result<Assembly, AssembleError> {
    let n = resolved.subsystems.len();
    let mds: Vec<_> = nodes.iter().map(Node::model_description).collect();
    let base = match level.time_base {
        Some(base) => base,
        None => time_base(resolved, nodes)?,
    };
    if level.hosts.is_some() && resolved.master.isolation_hosts.is_some() {
        tracing::warn!(
            "{}: [master] isolation_hosts applies to the whole run and is read at its top level: the value of this nested scenario is not used",
            resolved.path().display()
        );
    }
    let level = &Level {
        time_base: Some(base),
        hosts: Some(level.hosts.clone().unwrap_or_else(|| {
            Arc::new(HostPool::new(
                resolved
                    .master
                    .isolation_hosts
                    .unwrap_or_else(HostPool::default_hosts),
            ))
        })),
        ..level.clone()
    };
    refuse_uncoupled_types(resolved, &mds)?;
    let plan = SlotPlan::new(resolved, nodes, &mds, level)?;
    let options = InstantiateOptions {
        call_log: level.call_log.clone(),
        ..InstantiateOptions::default()
    };
    let events = event_handling(resolved, nodes)?;
    let subsystems = (0..n)
        .map(|s| {
            let options = InstantiateOptions {
                events: events[s],
                ..options.clone()
            };
            instantiate(resolved, nodes, &plan, level, &options, s)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (connections, gains) = slot_connections(resolved, &plan.layouts)?;
    let mut report = AssemblyReport::default();
    let bonds = Bonds {
        resolved,
        mds: &mds,
        layouts: &plan.layouts,
        gains: &gains,
    }
    .confirm(&mut report.bonds)?;
    let links = function_links(resolved, &plan.layouts)?;

    let step_multiple = resolved
        .subsystems
        .iter()
        .map(|s| s.step_multiple)
        .collect();
    let mut system = System::new(SystemSpec {
        subsystems,
        step_multiple,
        connections,
        bonds,
        nonfinite: match resolved.master.nonfinite {
            NonFinite::Error => NonFinitePolicy::Error,
            NonFinite::Warn => NonFinitePolicy::Warn,
        },
        threads: resolved.master.threads,
    })?;
    system.set_energy_reference(resolved.master.energy_reference);
    if !resolved.functions.is_empty() {
        let specs = resolved.functions.iter().map(|f| f.spec.clone()).collect();
        system.add_functions(specs, links)?;
    }
    // Structural checks (through functions too).
    let infos: Vec<&cosim_core::SubsystemInfo> =
        system.subsystems().iter().map(|s| s.info()).collect();
    report.feedthrough = feedthrough_report(&infos);
    let loops: Vec<AlgebraicLoop> = algebraic_loops(&infos, system.couplings());
    report.algebraic_loops = loops.iter().map(|l| l.to_string()).collect();
    interface_lines(resolved, nodes, "", &mut report.interfaces);
    system.set_time_base(base);
    if let Some(limit) = resolved.master.divergence_limit.or(level.divergence_limit) {
        system.set_divergence_limit(limit);
    }
    let group_solver = (resolved.master.kind == MasterKind::StronglyCoupled)
        .then(|| crate::nest::group_solver_settings(resolved.master.solver, nodes));
    let master = build_master(resolved, &system, group_solver)?;
    let (trace_columns, trace_text_columns) = trace_columns(resolved, &mds, &plan, &system);
    // The energy indicator of a system without power bonds is always 0:
    // not computed, and no column in the step log.
    let diagnostics = resolved
        .master
        .indicators
        .iter()
        .filter(|&&i| i != Indicator::Energy || !system.bonds().is_empty())
        .map(|&i| indicator(resolved, i))
        .collect();
    let mut assembly = Assembly {
        system,
        master,
        report,
        trace_columns,
        trace_text_columns,
        trace_names: Vec::new(),
        diagnostics,
        events: EventSchedule::new(level_events(resolved, nodes)),
        slots: plan.layouts,
    };
    assembly.trace_names = trace_names(resolved, &mds, &assembly.system, &assembly.trace_columns);
    Ok(assembly)
}

/// Refuses connections of what the engine does not couple yet, at the
/// scenario position.
fn refuse_uncoupled_types(
    resolved: &ResolvedScenario,
    mds: &[&ModelDescription],
) -> Result<(), AssembleError> {
    for c in &resolved.connections {
        let v = &mds[c.from.subsystem].variables[c.from.variable];
        if !cosim_core::subsystem::is_coupled_type(v.var_type) {
            return Err(resolved
                .error_at(
                    c.span,
                    format!(
                        "connections of {} variables are not supported yet: numeric and Boolean values (scalars and arrays) are coupled, and Clocks, not strings or binaries",
                        v.var_type
                    ),
                )
                .into());
        }
    }
    Ok(())
}

/// `v` at the end of `list`, unless it is there already.
fn push_once(list: &mut Vec<VariableIndex>, v: VariableIndex) {
    if !list.contains(&v) {
        list.push(v);
    }
}

/// The observed variables each subsystem must have, as they are found:
/// outputs (the first observed slots) and others.
struct Wanted<'a> {
    mds: &'a [&'a ModelDescription],
    outputs: Vec<Vec<VariableIndex>>,
    others: Vec<Vec<VariableIndex>>,
}

impl Wanted<'_> {
    fn add(&mut self, r: &VariableRef) {
        let v = &self.mds[r.subsystem].variables[r.variable];
        let list = if v.causality == Causality::Output {
            &mut self.outputs[r.subsystem]
        } else {
            &mut self.others[r.subsystem]
        };
        push_once(list, r.variable);
    }
}

/// Where every value the run uses goes.
struct SlotPlan {
    /// Per subsystem: the variables of its input slots (those fed by
    /// connections, by the level above, by events, then by input files)
    /// and of its observed slots (outputs first: coupled, in bonds or
    /// traced; then other traced variables).
    layouts: Vec<Layout>,
    /// Per subsystem: the traced String variables (read only for trace
    /// rows).
    strings: Vec<Vec<VariableIndex>>,
    /// Per subsystem: the inputs fed by input files (its last input
    /// slots, [`FileInputs`]).
    file_feeds: Vec<Vec<(VariableIndex, FileFeed)>>,
    /// Per subsystem: the inputs set by value ([`ValueFeed`]).
    value_feeds: Vec<Vec<(VariableIndex, ValueSchedule)>>,
}

impl SlotPlan {
    fn new(
        resolved: &ResolvedScenario,
        nodes: &[Node],
        mds: &[&ModelDescription],
        level: &Level,
    ) -> Result<Self, AssembleError> {
        let n = resolved.subsystems.len();
        let mut layouts: Vec<Layout> = (0..n).map(|_| Layout::default()).collect();
        let mut wanted = Wanted {
            mds,
            outputs: vec![Vec::new(); n],
            others: vec![Vec::new(); n],
        };
        for c in &resolved.connections {
            push_once(&mut layouts[c.to.subsystem].inputs, c.to.variable);
            wanted.add(&c.from);
        }
        // Connections to and from functions, in the same way.
        for c in &resolved.function_connections {
            if let FunctionEnd::Variable(to) = &c.to {
                push_once(&mut layouts[to.subsystem].inputs, to.variable);
            }
            if let FunctionEnd::Variable(from) = &c.from {
                wanted.add(from);
            }
        }
        let strings = traced_variables(resolved, nodes, &mut wanted)?;
        // What the level above needs from a nested level.
        for r in &level.extra_inputs {
            push_once(&mut layouts[r.subsystem].inputs, r.variable);
        }
        for r in &level.extra_observed {
            wanted.add(r);
        }
        // Variables events change: inputs get a slot (before the file-fed
        // ones), outputs are read.
        for e in &resolved.events {
            if e.by_value {
                // (Set by value: no slot; see `event_schedules`.)
            } else if e.input {
                push_once(&mut layouts[e.subsystem].inputs, e.variable);
            } else {
                wanted.add(&VariableRef {
                    subsystem: e.subsystem,
                    variable: e.variable,
                    element: 0,
                });
            }
        }
        let (file_feeds, mut value_feeds) = file_feeds(resolved, n)?;
        for (s, feeds) in value_feeds.iter_mut().enumerate() {
            feeds.extend(event_schedules(resolved, mds[s], s)?);
        }
        for (l, feeds) in layouts.iter_mut().zip(&file_feeds) {
            l.inputs.extend(feeds.iter().map(|(v, _)| *v));
        }
        // (Bond outputs are connected outputs, hence observed already.)
        for (s, l) in layouts.iter_mut().enumerate() {
            l.observed = wanted.outputs[s].clone();
            l.n_outputs = l.observed.len();
            l.observed.extend(wanted.others[s].iter().copied());
        }
        array_shapes(resolved, mds, &mut layouts)?;
        Ok(SlotPlan {
            layouts,
            strings,
            file_feeds,
            value_feeds,
        })
    }
}

/// Adds the traced variables that ride in slots to `wanted`, and returns
/// the variables traced as text per subsystem (String, Binary, and the
/// Int64 and UInt64 of FMUs: [`cosim_core::traced_text`]); warns of those
/// left out (neither: a Clock matched by a pattern).
fn traced_variables(
    resolved: &ResolvedScenario,
    nodes: &[Node],
    wanted: &mut Wanted<'_>,
) -> Result<Vec<Vec<VariableIndex>>, AssembleError> {
    let mut strings: Vec<Vec<VariableIndex>> = vec![Vec::new(); resolved.subsystems.len()];
    let mut skipped = Vec::new();
    for r in &resolved.outputs.variables {
        let v = &wanted.mds[r.subsystem].variables[r.variable];
        if traced_as_text(v, &nodes[r.subsystem]) {
            if matches!(nodes[r.subsystem], Node::Nest(_)) {
                return Err(resolved
                    .error_at(
                        resolved.subsystems[r.subsystem].span,
                        format!(
                            "'{}.{}' is a String: String variables of a nested system cannot be traced from the level above yet",
                            resolved.subsystems[r.subsystem].name, v.name
                        ),
                    )
                    .into());
            }
            push_once(&mut strings[r.subsystem], r.variable);
        } else if cosim_core::subsystem::is_coupled_type(v.var_type) {
            wanted.add(r);
        } else {
            skipped.push(format!(
                "{}.{} ({})",
                resolved.subsystems[r.subsystem].name, v.name, v.var_type
            ));
        }
    }
    if !skipped.is_empty() {
        tracing::warn!(
            "only scalar numeric and Boolean variables are traced; left out: {}",
            skipped.join(", ")
        );
    }
    Ok(strings)
}

/// Whether traced variable `v` of subsystem `node` is traced as text:
/// Strings and Binaries, and the scalar Int64 and UInt64 of FMUs (exactly;
/// a nested system's, and arrays, reach the trace through slots).
fn traced_as_text(v: &cosim_fmi::model_description::Variable, node: &Node) -> bool {
    match v.var_type {
        VariableType::String | VariableType::Binary => true,
        t => {
            cosim_core::traced_text::beside_slots(t)
                && v.is_scalar()
                && matches!(node, Node::Fmu(_))
        }
    }
}

/// FMI 3 Co-Simulation event mode of each subsystem of a level
/// (`eventModeUsed`, `earlyReturnAllowed`; docs/events.md): used where the
/// FMU declares `hasEventMode`, the subsystem does not say
/// `event_mode = false`, and the master handles events (those stepping through the shared stepper: fixed-step, ECCO,
/// predictor-corrector, NEPCE). Early return where the level steps
/// Jacobi at a single rate and only one subsystem uses event mode (two
/// could return early at different times, and one would have to be
/// taken back). `event_mode = true` where that cannot be is an error.
fn event_handling(
    resolved: &ResolvedScenario,
    nodes: &[Node],
) -> Result<Vec<cosim_fmi::EventHandling>, AssembleError> {
    let m = &resolved.master;
    let master_handles = matches!(
        m.kind,
        MasterKind::FixedStep
            | MasterKind::Ecco
            | MasterKind::PredictorCorrector
            | MasterKind::Nepce
    );
    let mut out = vec![cosim_fmi::EventHandling::default(); nodes.len()];
    for (s, node) in nodes.iter().enumerate() {
        let Node::Fmu(fmu) = node else {
            continue;
        };
        let sub = &resolved.subsystems[s];
        let md = fmu.model_description();
        let has = fmu.runs_model_exchange().is_none()
            && md.fmi_version == FmiVersion::V3
            && md
                .co_simulation
                .as_ref()
                .is_some_and(|cs| cs.has_event_mode);
        if fmu.runs_scheduled_execution() {
            // (Scheduled Execution: its Clocks tick in Clock Activation
            // Mode, without event mode; but only a master that handles
            // events activates them.)
            if !master_handles {
                return Err(AssembleError::Scenario(resolved.error_at(
                    sub.span,
                    format!(
                        "subsystem '{}' runs its FMU's Scheduled Execution interface, whose model partitions are activated at its Clocks' ticks, and the {} master does not handle those events (fixed-step, ecco, predictor-corrector and nepce do)",
                        sub.name,
                        m.kind.name()
                    ),
                )));
            }
            continue;
        }
        let refuse = |why: String| {
            AssembleError::Scenario(resolved.error_at(
                sub.span,
                format!("subsystem '{}': event_mode = true, but {why}", sub.name),
            ))
        };
        match sub.event_mode {
            Some(false) => continue,
            Some(true) if !has => {
                return Err(refuse(
                    "its FMU does not declare hasEventMode (FMI 3 Co-Simulation)".into(),
                ));
            }
            Some(true) if !master_handles => {
                return Err(refuse(format!(
                    "the {} master does not handle FMU events (fixed-step, ecco, predictor-corrector and nepce do)",
                    m.kind.name()
                )));
            }
            None if !has || !master_handles => {
                let clocks: Vec<&str> = md
                    .variables
                    .iter()
                    .filter(|v| v.clock.is_some())
                    .map(|v| v.name.as_str())
                    .collect();
                if !clocks.is_empty() {
                    // (Clocks tick only in Event Mode.)
                    tracing::warn!(
                        "subsystem '{}' declares clocks ({}) but runs without event mode ({}): they do not tick, and the variables they clock are not updated",
                        sub.name,
                        clocks.join(", "),
                        if !has {
                            "its FMU does not declare hasEventMode".to_string()
                        } else {
                            format!("the {} master does not handle FMU events", m.kind.name())
                        }
                    );
                }
                continue;
            }
            _ => out[s].event_mode_used = true,
        }
    }
    let single_rate = resolved.subsystems.iter().all(|s| s.step_multiple <= 1);
    let early = master_handles && m.scheme == Scheme::Jacobi && single_rate;
    if early && out.iter().filter(|h| h.event_mode_used).count() == 1 {
        for h in out.iter_mut().filter(|h| h.event_mode_used) {
            h.early_return_allowed = true;
        }
    }
    Ok(out)
}

/// Where subsystem `sub` runs: its `isolation`, or the one the level
/// forces on all (`cosim check`, `--isolation`).
fn isolation_of(level: &Level, sub: &crate::resolve::ResolvedSubsystem) -> Isolation {
    level.isolation.unwrap_or(sub.isolation)
}

/// Subsystem `s`: its FMU instantiated (in this process or a host
/// process) with its slots, parameters and start values, or its nested
/// system built; then its input files and events wrapped around it.
fn instantiate(
    resolved: &ResolvedScenario,
    nodes: &[Node],
    plan: &SlotPlan,
    level: &Level,
    options: &InstantiateOptions,
    s: usize,
) -> Result<Box<dyn Subsystem>, AssembleError> {
    let sub = &resolved.subsystems[s];
    let l = &plan.layouts[s];
    let md = nodes[s].model_description();
    let full_name = format!("{}{}", level.prefix, sub.name);
    let fmu = match &nodes[s] {
        Node::Fmu(fmu) => fmu,
        Node::Nest(nest) => {
            check_nested_step(resolved, s, nest)?;
            let inner = nested(resolved, s, nest, l, level, &full_name)?;
            let inner = fed_from_files(
                inner,
                &plan.file_feeds[s],
                &plan.value_feeds[s],
                l,
                &plan.strings[s],
            )?;
            return Ok(with_events(inner, resolved, s, l, md));
        }
    };
    let fmu_error = |e| match e {
        cosim_core::CoreError::Fmi(error) => AssembleError::Fmu {
            subsystem: sub.name.clone(),
            error,
        },
        other => AssembleError::Core(other),
    };
    let values = typed_start_values(resolved, s, md)?;
    let strings = &plan.strings[s];
    // In this process, or in a host process (`isolation = "process"`).
    let isolation = isolation_of(level, sub);
    let subsystem: Box<dyn Subsystem> = match isolation {
        Isolation::None => {
            let mut fs = FmuSubsystem::instantiate(
                fmu,
                &full_name,
                &l.slot_vars(&l.inputs),
                &l.slot_vars(&l.observed),
                l.n_outputs,
                options,
            )
            .map_err(fmu_error)?;
            fs.set_start_values(values).map_err(fmu_error)?;
            fs.trace_strings(strings);
            Box::new(fs)
        }
        Isolation::Process => {
            let mut fs = IsolatedSubsystem::spawn(
                fmu,
                &full_name,
                &l.slot_vars(&l.inputs),
                &l.slot_vars(&l.observed),
                l.n_outputs,
                options,
                &IsolationSettings {
                    timeout: std::time::Duration::from_secs_f64(sub.isolation_timeout),
                    pool: level.hosts.clone(),
                },
            )
            .map_err(fmu_error)?;
            fs.set_start_values(values).map_err(fmu_error)?;
            if !strings.is_empty() {
                fs.trace_strings(md, strings).map_err(fmu_error)?;
            }
            Box::new(fs)
        }
    };
    let subsystem = fed_from_files(
        subsystem,
        &plan.file_feeds[s],
        &plan.value_feeds[s],
        l,
        &plan.strings[s],
    )?;
    Ok(with_events(subsystem, resolved, s, l, md))
}

/// Subsystem `s`'s parameters and start values, converted to its
/// variables' types now (a value that does not fit is an error at its
/// line); the FMU gets them during initialization, each in the state the
/// standard names for it.
fn typed_start_values(
    resolved: &ResolvedScenario,
    s: usize,
    md: &ModelDescription,
) -> Result<Vec<StartValue>, AssembleError> {
    let sub = &resolved.subsystems[s];
    let mut values = Vec::with_capacity(sub.parameters.len() + sub.start_values.len());
    for a in sub.parameters.iter().chain(&sub.start_values) {
        let v = &md.variables[a.variable];
        let (span, origin) = match &a.origin {
            crate::ValueOrigin::File(span) => (*span, resolved.location(*span)),
            crate::ValueOrigin::Argument(arg) => (sub.span, format!("--set {arg}")),
        };
        let value =
            typed_value(md.fmi_version, v.var_type, &a.value, v.is_scalar()).map_err(|e| {
                let msg = format!(
                    "subsystem '{}': setting {} = {}: {e}",
                    sub.name,
                    a.name,
                    describe(&a.value)
                );
                let msg = match &a.origin {
                    crate::ValueOrigin::File(_) => msg,
                    crate::ValueOrigin::Argument(arg) => format!("{msg} (from --set {arg})"),
                };
                AssembleError::Scenario(resolved.error_at(span, msg))
            })?;
        values.push(StartValue {
            variable: a.variable,
            value,
            origin,
        });
    }
    Ok(values)
}

/// The gain of each connection and whether it is a signal, by (source
/// subsystem, output, destination subsystem, input).
type Gains = HashMap<(usize, VariableIndex, usize, VariableIndex), (f64, bool)>;

/// The connections in slot terms, and their gains.
fn slot_connections(
    resolved: &ResolvedScenario,
    layouts: &[Layout],
) -> Result<(Vec<Connection>, Gains), AssembleError> {
    let mut connections = Vec::with_capacity(resolved.connections.len());
    let mut gains = Gains::new();
    for c in &resolved.connections {
        let from_slot = layouts[c.from.subsystem]
            .observed_slot(c.from.variable, c.from.element)
            .ok_or_else(|| {
                AssembleError::Scenario(resolved.error_at(c.span, "internal: output slot missing"))
            })?;
        let to_slot = layouts[c.to.subsystem]
            .input_slot(c.to.variable, c.to.element)
            .ok_or_else(|| {
                AssembleError::Scenario(resolved.error_at(c.span, "internal: input slot missing"))
            })?;
        connections.push(Connection {
            from_subsystem: c.from.subsystem,
            from_slot,
            to_subsystem: c.to.subsystem,
            to_slot,
            gain: c.gain,
            offset: c.offset,
            signal: c.signal,
        });
        gains.insert(
            (
                c.from.subsystem,
                c.from.variable,
                c.to.subsystem,
                c.to.variable,
            ),
            (c.gain, c.signal),
        );
    }
    Ok((connections, gains))
}

/// A bond port: (subsystem, input, output).
type PortVars = (usize, VariableIndex, VariableIndex);

/// What confirming power bonds reads.
struct Bonds<'a> {
    resolved: &'a ResolvedScenario,
    mds: &'a [&'a ModelDescription],
    layouts: &'a [Layout],
    gains: &'a Gains,
}

impl Bonds<'_> {
    /// The power bonds: the declared ones, then (when the scenario asks)
    /// those discovered on other ports; their reports go to `reports`. A
    /// declared bond whose ports are not cross-connected is an error at
    /// its line.
    fn confirm(&self, reports: &mut Vec<BondReport>) -> Result<Vec<PowerBond>, AssembleError> {
        let mut bonds = Vec::new();
        // The inputs in a bond (each in one at most).
        let mut claimed: Vec<(usize, VariableIndex)> = Vec::new();
        let mds = self.mds;
        for b in &self.resolved.bonds {
            let [mut a, mut c] = b.ports;
            // Port 0 is the one whose input is the effort (see PowerBond).
            let role = |p: &crate::BondPort| {
                cosim_fmi::bonds::classify_variable(mds[p.subsystem], p.input).map(|k| k.role)
            };
            if role(&a) == Some(BondRole::Flow)
                || (role(&a).is_none() && role(&c) == Some(BondRole::Effort))
            {
                std::mem::swap(&mut a, &mut c);
            }
            let Some((bond, explanation)) = self.bond(
                b.name.clone(),
                (a.subsystem, a.input, a.output),
                (c.subsystem, c.input, c.output),
                (b.tolerance, b.energy_scale),
            ) else {
                return Err(self
                    .resolved
                    .error_at(
                        b.span,
                        "the bond's ports are not cross-connected by physical (non-signal) connections with non-zero gains",
                    )
                    .into());
            };
            claimed.push((a.subsystem, a.input));
            claimed.push((c.subsystem, c.input));
            bonds.push(bond);
            reports.push(BondReport {
                name: b.name.clone(),
                source: BondSource::Declared,
                explanation,
            });
        }
        if self.resolved.master.discover_bonds {
            self.discover(&mut claimed, &mut bonds, reports);
        }
        Ok(bonds)
    }

    /// Bonds between the power-bond candidates of two FMUs (from units
    /// and quantities) whose inputs no bond has claimed.
    fn discover(
        &self,
        claimed: &mut Vec<(usize, VariableIndex)>,
        bonds: &mut Vec<PowerBond>,
        reports: &mut Vec<BondReport>,
    ) {
        let (resolved, mds) = (self.resolved, self.mds);
        let n = resolved.subsystems.len();
        let candidates: Vec<_> = mds.iter().map(|md| find_bond_candidates(md)).collect();
        for a in 0..n {
            for b in (a + 1)..n {
                for ca in &candidates[a] {
                    for cb in &candidates[b] {
                        if ca.domain != cb.domain
                            || ca.input_role == cb.input_role
                            || claimed.contains(&(a, ca.input))
                            || claimed.contains(&(b, cb.input))
                        {
                            continue;
                        }
                        let name = format!(
                            "{}.{}~{}.{}",
                            resolved.subsystems[a].name,
                            mds[a].variables[ca.input].name,
                            resolved.subsystems[b].name,
                            mds[b].variables[cb.input].name
                        );
                        // Port 0 is the one whose input is the effort.
                        let (p0, p1) = if ca.input_role == BondRole::Effort {
                            ((a, ca.input, ca.output), (b, cb.input, cb.output))
                        } else {
                            ((b, cb.input, cb.output), (a, ca.input, ca.output))
                        };
                        let settings = (resolved.master.tolerance, resolved.master.energy_scale);
                        if let Some((bond, explanation)) = self.bond(name.clone(), p0, p1, settings)
                        {
                            claimed.push((a, ca.input));
                            claimed.push((b, cb.input));
                            bonds.push(bond);
                            reports.push(BondReport {
                                name,
                                source: BondSource::Discovered,
                                explanation: format!(
                                    "{explanation}; {} {}",
                                    format!("{:?}", ca.domain).to_lowercase(),
                                    "bond found from units/quantities of both FMUs"
                                ),
                            });
                        }
                    }
                }
            }
        }
    }

    /// The bond between ports `p0` (whose input is the effort) and `p1`,
    /// with its (tolerance, energy scale), and its explanation; `None`
    /// unless each port's output feeds the other's input through a
    /// physical (non-signal) connection, with a non-zero gain into port 1.
    fn bond(
        &self,
        name: String,
        p0: PortVars,
        p1: PortVars,
        (tolerance, energy_scale): (f64, f64),
    ) -> Option<(PowerBond, String)> {
        // L10: port 0's output feeds port 1's input; L01 the other way.
        let (l10, sig10) = *self.gains.get(&(p0.0, p0.2, p1.0, p1.1))?;
        let (l01, sig01) = *self.gains.get(&(p1.0, p1.2, p0.0, p0.1))?;
        if sig10 || sig01 || l10 == 0.0 {
            return None;
        }
        let port = |p: PortVars| -> Option<BondPort> {
            Some(BondPort {
                subsystem: p.0,
                input: self.layouts[p.0].input_slot(p.1, 0)?,
                output: self.layouts[p.0].observed_slot(p.2, 0)?,
            })
        };
        let subsystems = &self.resolved.subsystems;
        let explanation = format!(
            "{} / {} <-> {} / {} (gains {l01} into {}, {l10} into {})",
            self.describe(p0.0, p0.1),
            self.describe(p0.0, p0.2),
            self.describe(p1.0, p1.1),
            self.describe(p1.0, p1.2),
            subsystems[p0.0].name,
            subsystems[p1.0].name,
        );
        Some((
            PowerBond {
                name,
                ports: [port(p0)?, port(p1)?],
                orientation: -l01 / l10,
                sigma: -l01,
                tolerance,
                energy_scale,
            },
            explanation,
        ))
    }

    /// `sub.var [unit]`.
    fn describe(&self, s: usize, v: VariableIndex) -> String {
        let var = &self.mds[s].variables[v];
        let sub = &self.resolved.subsystems[s].name;
        match &var.unit {
            Some(u) => format!("{sub}.{} [{u}]", var.name),
            None => format!("{sub}.{}", var.name),
        }
    }
}

/// The connections to and from functions in slot terms.
fn function_links(
    resolved: &ResolvedScenario,
    layouts: &[Layout],
) -> Result<Vec<FunctionLink>, AssembleError> {
    let mut links = Vec::with_capacity(resolved.function_connections.len());
    for c in &resolved.function_connections {
        let missing = || {
            AssembleError::Scenario(resolved.error_at(c.span, "internal: function slot missing"))
        };
        let end = |e: &FunctionEnd, input: bool| -> Option<LinkEnd> {
            Some(match e {
                FunctionEnd::Port(p) => LinkEnd::Port {
                    function: p.function,
                    port: p.port,
                },
                FunctionEnd::Variable(r) => LinkEnd::Slot {
                    subsystem: r.subsystem,
                    slot: if input {
                        layouts[r.subsystem].input_slot(r.variable, r.element)?
                    } else {
                        layouts[r.subsystem].observed_slot(r.variable, r.element)?
                    },
                },
            })
        };
        links.push(FunctionLink {
            from: end(&c.from, false).ok_or_else(missing)?,
            to: end(&c.to, true).ok_or_else(missing)?,
            gain: c.gain,
            offset: c.offset,
            signal: c.signal,
        });
    }
    Ok(links)
}

/// A number column of the trace: (subsystem, observed slot), or (the
/// number of subsystems, a function value's index).
type NumberColumn = (usize, usize);

/// The trace's columns, in the order the user gave (a String column at
/// its position among the numbers).
fn trace_columns(
    resolved: &ResolvedScenario,
    mds: &[&ModelDescription],
    plan: &SlotPlan,
    system: &System,
) -> (Vec<NumberColumn>, Vec<TextColumn>) {
    let mut columns = Vec::new();
    let mut text_columns = Vec::new();
    for t in &resolved.outputs.traced {
        match t {
            Traced::Variable(r) if plan.strings[r.subsystem].contains(&r.variable) => {
                if let Some(k) = plan.strings[r.subsystem]
                    .iter()
                    .position(|&v| v == r.variable)
                {
                    let t = mds[r.subsystem].variables[r.variable].var_type;
                    text_columns.push(TextColumn {
                        position: columns.len() + text_columns.len(),
                        subsystem: r.subsystem,
                        index: k,
                        quoted: cosim_core::traced_text::is_quoted(t),
                    });
                }
            }
            Traced::Variable(r) => {
                if let Some(slot) = plan.layouts[r.subsystem].observed_slot(r.variable, r.element) {
                    columns.push((r.subsystem, slot));
                }
            }
            Traced::Port(p) => {
                if let Some(k) = system.functions().value_index(p.function, p.port) {
                    columns.push((resolved.subsystems.len(), k));
                }
            }
        }
    }
    (columns, text_columns)
}

/// The events of this level and of every nested one: (time, description).
fn level_events(resolved: &ResolvedScenario, nodes: &[Node]) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = resolved
        .events
        .iter()
        .map(|e| (e.time, e.description.clone()))
        .collect();
    for node in nodes {
        if let Node::Nest(nest) = node {
            out.extend(level_events(&nest.resolved, &nest.nodes));
        }
    }
    out
}

/// Per subsystem, the inputs fed by input files through slots and their
/// columns, and those set by value with their values over time.
#[allow(clippy::type_complexity)]
fn file_feeds(
    resolved: &ResolvedScenario,
    n: usize,
) -> Result<
    (
        Vec<Vec<(VariableIndex, FileFeed)>>,
        Vec<Vec<(VariableIndex, ValueSchedule)>>,
    ),
    AssembleError,
> {
    let mut slots: Vec<Vec<(VariableIndex, FileFeed)>> = (0..n).map(|_| Vec::new()).collect();
    let mut by_value: Vec<Vec<(VariableIndex, ValueSchedule)>> =
        (0..n).map(|_| Vec::new()).collect();
    for file in &resolved.inputs {
        let times: std::sync::Arc<[f64]> = std::sync::Arc::from(file.table.times());
        for f in &file.feeds {
            let s = f.input.subsystem;
            match &f.values {
                Some(values) => {
                    let schedule = ValueSchedule::new(times.clone(), values.clone())
                        .map_err(|m| AssembleError::Core(cosim_core::CoreError::Config(m)))?;
                    if let Some(list) = by_value.get_mut(s) {
                        list.push((f.input.variable, schedule));
                    }
                }
                None => {
                    if let Some(list) = slots.get_mut(s) {
                        list.push((
                            f.input.variable,
                            FileFeed {
                                table: file.table.clone(),
                                column: f.column,
                                discrete: f.discrete,
                            },
                        ));
                    }
                }
            }
        }
    }
    Ok((slots, by_value))
}

/// `subsystem` with its file-fed inputs (the last slots of `layout`'s
/// inputs, and the inputs set by value) set from their files at every
/// step ([`FileInputs`]). `texts`: the subsystem's variables traced as
/// text.
fn fed_from_files(
    subsystem: Box<dyn Subsystem>,
    feeds: &[(VariableIndex, FileFeed)],
    value_feeds: &[(VariableIndex, ValueSchedule)],
    layout: &Layout,
    texts: &[VariableIndex],
) -> Result<Box<dyn Subsystem>, AssembleError> {
    if feeds.is_empty() && value_feeds.is_empty() {
        return Ok(subsystem);
    }
    // A traced file-fed input shows the file's value at the row's time.
    let observed = feeds
        .iter()
        .enumerate()
        .filter_map(|(k, (v, _))| Some((layout.observed_slot(*v, 0)?, k)))
        .collect();
    let feeds = feeds.iter().map(|(_, f)| f.clone()).collect();
    let value_feeds = value_feeds
        .iter()
        .map(|(v, schedule)| ValueFeed {
            variable: *v,
            schedule: schedule.clone(),
            traced: texts.iter().position(|t| t == v),
        })
        .collect();
    Ok(Box::new(FileInputs::new(
        subsystem,
        feeds,
        observed,
        value_feeds,
    )?))
}

/// `subsystem` with the events of `resolved` on subsystem `s` carried out
/// ([`EventSubsystem`]); itself when it has none. An input no connection
/// feeds keeps its start value but while an event changes it.
fn with_events(
    subsystem: Box<dyn Subsystem>,
    resolved: &ResolvedScenario,
    s: usize,
    layout: &Layout,
    md: &ModelDescription,
) -> Box<dyn Subsystem> {
    let mine: Vec<_> = resolved
        .events
        .iter()
        .filter(|e| e.subsystem == s)
        .collect();
    if mine.is_empty() {
        return subsystem;
    }
    let mut events = Vec::with_capacity(mine.len());
    let mut unfed = Vec::new();
    // (Those on inputs set by value are in the subsystem's value feeds.)
    for e in mine.into_iter().filter(|e| !e.by_value) {
        let r = VariableRef {
            subsystem: s,
            variable: e.variable,
            element: 0,
        };
        let slot = if e.input {
            let Some(i) = layout.input_slot(e.variable, 0) else {
                continue;
            };
            if !resolved.is_fed(r) && !unfed.iter().any(|&(k, _)| k == i) {
                unfed.push((i, start_value(resolved, s, e.variable, md)));
            }
            EventSlot::Input(i)
        } else {
            let Some(k) = layout.observed_slot(e.variable, 0) else {
                continue;
            };
            EventSlot::Observed(k)
        };
        events.push(SlotEvent {
            time: e.time,
            slot,
            action: e.action,
        });
    }
    Box::new(EventSubsystem::new(subsystem, events, unfed))
}

/// The events on subsystem `s`'s inputs set by value (`by_value`), as the
/// values each such input takes over time: its start value, then at each
/// event's time the override, the start value plus the bias, or the start
/// value again (a reset), exactly, in the input's type.
fn event_schedules(
    resolved: &ResolvedScenario,
    md: &ModelDescription,
    s: usize,
) -> Result<Vec<(VariableIndex, ValueSchedule)>, AssembleError> {
    use cosim_core::events::EventAction;
    let mut out: Vec<(VariableIndex, ValueSchedule)> = Vec::new();
    let mut mine: Vec<&crate::resolve::ResolvedEvent> = resolved
        .events
        .iter()
        .filter(|e| e.subsystem == s && e.by_value)
        .collect();
    // (Stable: events at one time keep their order, the last one counts.)
    mine.sort_by(|a, b| a.time.total_cmp(&b.time));
    let mut variables: Vec<VariableIndex> = mine.iter().map(|e| e.variable).collect();
    variables.sort_unstable();
    variables.dedup();
    for v in variables {
        let var = &md.variables[v];
        let start = exact_start_value(resolved, s, v, md);
        let typed = |i: i128, why: &str| -> Result<cosim_fmi::Value, AssembleError> {
            let value = match var.var_type {
                VariableType::UInt64 => u64::try_from(i).ok().map(cosim_fmi::Value::U64),
                _ => i64::try_from(i).ok().map(cosim_fmi::Value::I64),
            };
            value.ok_or_else(|| {
                AssembleError::Core(cosim_core::CoreError::Config(format!(
                    "{why}: {i} is out of the range of {} of '{}.{}'",
                    var.var_type, resolved.subsystems[s].name, var.name
                )))
            })
        };
        let mut times = vec![resolved.start];
        let mut values = vec![typed(start, "the start value")?];
        for e in mine.iter().filter(|e| e.variable == v) {
            let value = match (e.action, e.exact) {
                (EventAction::Override(_), Some(i)) => typed(i, &e.description)?,
                (EventAction::Bias(_), Some(b)) => typed(start + b, &e.description)?,
                _ => typed(start, &e.description)?,
            };
            times.push(e.time.max(resolved.start));
            values.push(value);
        }
        let schedule = ValueSchedule::new(times.into(), values.into())
            .map_err(|m| AssembleError::Core(cosim_core::CoreError::Config(m)))?;
        out.push((v, schedule));
    }
    Ok(out)
}

/// A scalar variable's start value: the scenario's, else the model
/// description's.
fn given_start<'a>(
    resolved: &'a ResolvedScenario,
    s: usize,
    v: VariableIndex,
    md: &'a ModelDescription,
) -> Option<&'a cosim_fmi::model_description::StartValue> {
    let sub = &resolved.subsystems[s];
    sub.parameters
        .iter()
        .chain(&sub.start_values)
        .find(|a| a.variable == v)
        .map(|a| &a.value)
        .or(md.variables[v].start.as_ref())
}

/// The integer a scalar variable starts with, exactly ([`given_start`]),
/// else 0.
fn exact_start_value(
    resolved: &ResolvedScenario,
    s: usize,
    v: VariableIndex,
    md: &ModelDescription,
) -> i128 {
    use cosim_fmi::model_description::StartValue as SV;
    match given_start(resolved, s, v, md) {
        Some(SV::Int(x)) => x.first().copied().unwrap_or(0),
        _ => 0,
    }
}

/// The value a scalar variable starts with ([`given_start`]), else 0.
fn start_value(
    resolved: &ResolvedScenario,
    s: usize,
    v: VariableIndex,
    md: &ModelDescription,
) -> f64 {
    use cosim_fmi::model_description::StartValue as SV;
    match given_start(resolved, s, v, md) {
        Some(SV::Float(x)) => x.first().copied(),
        Some(SV::Int(x)) => x.first().map(|&i| i as f64),
        Some(SV::Bool(x)) => x.first().map(|&b| f64::from(u8::from(b))),
        _ => None,
    }
    .unwrap_or(0.0)
}

/// The error indicator `which` with the scenario's settings.
fn tolerances(m: &crate::MasterSettings) -> Tolerances {
    Tolerances {
        atol: m.atol,
        rtol: m.rtol,
        aggregate: match m.aggregate {
            Aggregate::Rms => CoreAggregate::Rms,
            Aggregate::Mean => CoreAggregate::Mean,
            Aggregate::Max => CoreAggregate::Max,
        },
    }
}

fn indicator(resolved: &ResolvedScenario, which: Indicator) -> Box<dyn ErrorIndicator> {
    let m = &resolved.master;
    let m_order = u32::from(m.extrapolation);
    let tolerances = tolerances(m);
    match which {
        Indicator::Energy => Box::new(EnergyIndicator::new(m_order)),
        Indicator::PredictorCorrector => Box::new(
            PredictorCorrector::new(
                m_order,
                match m.normalisation {
                    Normalisation::Paper => PredictorForm::Paper {
                        tol: m.tolerance,
                        rho: m.rho,
                    },
                    Normalisation::AtolRtol => PredictorForm::Normalised(tolerances),
                },
            )
            .with_lag_correction(m.lag_correction),
        ),
        Indicator::Nepce => Box::new(Nepce::new(m_order, tolerances)),
    }
}

fn build_master(
    resolved: &ResolvedScenario,
    system: &System,
    group_solver: Option<cosim_fmi::SolverSettings>,
) -> Result<Box<dyn Master>, AssembleError> {
    let m = &resolved.master;
    let scheme = match m.scheme {
        Scheme::Jacobi => CoreScheme::Jacobi,
        Scheme::GaussSeidel => CoreScheme::GaussSeidel(match &m.order {
            Some(order) => order.clone(),
            None => {
                let infos: Vec<_> = system.subsystems().iter().map(|s| s.info()).collect();
                gauss_seidel_order(&infos, system.couplings())
            }
        }),
    };
    let adaptive = |name: &'static str, which: Indicator| -> Box<dyn Master> {
        let ind = indicator(resolved, which);
        let c = &m.controller;
        let (k_i, k_p) = c.gains(ind.order(system));
        Box::new(Adaptive::new(
            name,
            ind,
            PiSettings {
                alpha: c.alpha,
                k_i,
                k_p,
                dt_min: c.dt_min,
                dt_max: c.dt_max,
                theta_min: c.theta_min,
                theta_max: c.theta_max,
                variant: c.variant,
            },
            m.step,
            scheme.clone(),
            u32::from(m.extrapolation),
        ))
    };
    match m.kind {
        MasterKind::FixedStep => Ok(Box::new(FixedStep::new(
            m.step,
            scheme.clone(),
            u32::from(m.extrapolation),
        ))),
        MasterKind::Ecco => Ok(adaptive("ecco", Indicator::Energy)),
        MasterKind::PredictorCorrector => Ok(adaptive(
            "predictor-corrector",
            Indicator::PredictorCorrector,
        )),
        MasterKind::Nepce => Ok(adaptive("nepce", Indicator::Nepce)),
        MasterKind::Richardson => {
            if m.scheme != Scheme::Jacobi {
                return Err(AssembleError::Scenario(resolved.master_error(
                    "the richardson master steps every subsystem in parallel (Jacobi, as in arnold2013's analysis); remove scheme = \"gauss-seidel\"",
                )));
            }
            let c = &m.controller;
            Ok(Box::new(Richardson::new(RichardsonSettings {
                extrapolation_order: u32::from(m.extrapolation),
                estimate: match m.estimate {
                    RichardsonEstimate::Richardson => Estimate::Richardson,
                    RichardsonEstimate::Modified => Estimate::Modified,
                },
                tolerances: tolerances(m),
                controller: PiSettings {
                    alpha: c.alpha,
                    k_i: 0.0,
                    k_p: 0.0,
                    dt_min: c.dt_min,
                    dt_max: c.dt_max,
                    theta_min: c.theta_min,
                    theta_max: c.theta_max,
                    variant: PiVariant::Sadjina2016,
                },
                initial_step: m.step,
                max_rejections: m.max_rejections,
            })))
        }
        MasterKind::StronglyCoupled => Ok(Box::new(StronglyCoupled::new(
            m.step,
            group_solver.unwrap_or_else(|| {
                cosim_fmi::SolverSettings::with_tolerance(cosim_fmi::DEFAULT_RELATIVE_TOLERANCE)
            }),
        ))),
        MasterKind::Ifosmondi | MasterKind::IterativeAffine => {
            if m.scheme != Scheme::Jacobi {
                return Err(AssembleError::Scenario(resolved.master_error(format!(
                    "the {} master iterates all subsystems in parallel (Jacobi); remove scheme = \"gauss-seidel\"",
                    m.kind
                ))));
            }
            Ok(Box::new(Iterative::new(IterativeSettings {
                interpolation: if m.kind == MasterKind::Ifosmondi {
                    Interpolation::Hermite
                } else {
                    Interpolation::Affine
                },
                dt_base: m.step,
                dt_min: m.controller.dt_min,
                eps_abs: m.eps_abs,
                eps_rel: m.eps_rel,
                max_iterations: m.max_iterations,
            })))
        }
    }
}

/// Builds the observers the scenario asks for (trace, energy log, step
/// log), creating the output directory and the files, written by the
/// writer thread of `outputs`.
pub fn observers(
    resolved: &ResolvedScenario,
    assembly: &Assembly,
    outputs: &OutputsHandle,
) -> Result<Vec<Box<dyn Observer>>, cosim_core::CoreError> {
    let mut out: Vec<Box<dyn Observer>> = Vec::new();
    let o = &resolved.outputs;
    let system = &assembly.system;
    if let Some(path) = &o.trace {
        let sampling = match o.sampling {
            Sampling::EveryStep => CoreSampling::EveryStep,
            Sampling::Decimation(n) => CoreSampling::Decimation(n),
            Sampling::Interval(dt) => CoreSampling::Interval(dt),
        };
        out.push(Box::new(TraceWriter::create_with_text(
            outputs,
            path,
            system,
            assembly.trace_columns.clone(),
            &assembly.trace_names,
            assembly.trace_text_columns.clone(),
            sampling,
        )?));
    }
    if let Some(path) = &o.energy_log
        && !system.bonds().is_empty()
    {
        out.push(Box::new(EnergyLog::create(outputs, path, system)?));
    }
    if let Some(path) = &o.step_log {
        let names: Vec<&str> = assembly.diagnostics.iter().map(|d| d.name()).collect();
        let fields = assembly.master.step_fields(system);
        out.push(Box::new(StepLog::create(
            outputs,
            path,
            system,
            fields,
            &names,
            !assembly.events.is_empty(),
        )?));
    }
    Ok(out)
}

fn describe(v: &ModelStart) -> String {
    match v {
        ModelStart::Float(x) if x.len() == 1 => x[0].to_string(),
        ModelStart::Int(x) if x.len() == 1 => x[0].to_string(),
        ModelStart::Bool(x) if x.len() == 1 => x[0].to_string(),
        ModelStart::String(x) if x.len() == 1 => format!("{:?}", x[0]),
        other => format!("{other:?}"),
    }
}

/// A parameter or start value as the value of the variable's FMI type; a
/// value that does not fit the type is an error saying so.
fn typed_value(
    version: FmiVersion,
    ty: VariableType,
    value: &ModelStart,
    scalar: bool,
) -> Result<Value, String> {
    let elements: Vec<Value> = match value {
        ModelStart::Float(v) => v
            .iter()
            .map(|&x| match ty {
                VariableType::Float64 => Ok(Value::F64(x)),
                VariableType::Float32 => Ok(Value::F32(x as f32)),
                _ => Err(format!(
                    "setting {ty} variables from numbers is not supported"
                )),
            })
            .collect::<Result<_, _>>()?,
        ModelStart::Bool(v) if ty == VariableType::Boolean => {
            v.iter().map(|&x| Value::Bool(x)).collect()
        }
        ModelStart::String(v) if ty == VariableType::String => {
            v.iter().map(|x| Value::Str(x.clone())).collect()
        }
        ModelStart::Binary(v) if ty == VariableType::Binary => {
            v.iter().map(|x| Value::Binary(x.clone())).collect()
        }
        ModelStart::Int(v) => v
            .iter()
            .map(|&x| typed_integer(version, ty, x))
            .collect::<Result<_, _>>()?,
        _ => return Err(format!("setting {ty} variables is not supported yet")),
    };
    match (scalar, elements.as_slice()) {
        (true, [x]) => Ok(x.clone()),
        (true, _) => Err(format!("{} values given for a scalar", elements.len())),
        (false, _) => Ok(Value::Array(elements)),
    }
}

/// An integer as the value of integer type `ty`.
fn typed_integer(version: FmiVersion, ty: VariableType, x: i128) -> Result<Value, String> {
    let range = |x: i128| format!("{x} does not fit {ty}");
    Ok(match ty {
        VariableType::Int8 => Value::I8(i8::try_from(x).map_err(|_| range(x))?),
        VariableType::UInt8 => Value::U8(u8::try_from(x).map_err(|_| range(x))?),
        VariableType::Int16 => Value::I16(i16::try_from(x).map_err(|_| range(x))?),
        VariableType::UInt16 => Value::U16(u16::try_from(x).map_err(|_| range(x))?),
        VariableType::UInt32 => Value::U32(u32::try_from(x).map_err(|_| range(x))?),
        VariableType::UInt64 => Value::U64(u64::try_from(x).map_err(|_| range(x))?),
        VariableType::Int64 => Value::I64(i64::try_from(x).map_err(|_| range(x))?),
        // FMI 2 Integer and Enumeration, FMI 3 Int32: 32 bits.
        VariableType::Int32 => {
            Value::I32(i32::try_from(x).map_err(|_| format!("{x} does not fit a 32-bit integer"))?)
        }
        VariableType::Enumeration if version == FmiVersion::V2 => {
            Value::I32(i32::try_from(x).map_err(|_| format!("{x} does not fit a 32-bit integer"))?)
        }
        // FMI 3 enumerations are Int64.
        VariableType::Enumeration => Value::I64(i64::try_from(x).map_err(|_| range(x))?),
        // (A float variable given an integer: the resolution made it a float.)
        VariableType::Float64 => Value::F64(x as f64),
        VariableType::Float32 => Value::F32(x as f32),
        other => {
            return Err(format!(
                "setting {other} variables from integers is not supported"
            ));
        }
    })
}

/// The name of each trace column when the scenario traces its variable
/// under an alias ([`crate::OutputSettings::trace_names`]): the alias, with
/// the element's index of an array (`y_alias[2]`); `None` for the
/// variable's own name. `columns` has a column per traced value (resolving
/// leaves out what cannot be traced).
fn trace_names(
    resolved: &ResolvedScenario,
    mds: &[&cosim_fmi::ModelDescription],
    system: &System,
    columns: &[(usize, usize)],
) -> Vec<Option<String>> {
    let o = &resolved.outputs;
    // (String columns are named apart.)
    let is_text = |t: &Traced| match t {
        Traced::Variable(r) => mds
            .get(r.subsystem)
            .and_then(|md| md.variables.get(r.variable))
            .is_some_and(|v| v.var_type == VariableType::String),
        Traced::Port(_) => false,
    };
    let numeric: Vec<(&Traced, &Option<String>)> = o
        .traced
        .iter()
        .zip(&o.trace_names)
        .filter(|(t, _)| !is_text(t))
        .collect();
    if numeric.len() != columns.len() || o.trace_names.len() != o.traced.len() {
        return vec![None; columns.len()];
    }
    numeric
        .into_iter()
        .zip(columns)
        .map(|((t, name), &(s, slot))| {
            let (Traced::Variable(r), Some(alias)) = (t, name) else {
                return None;
            };
            let own = &mds.get(r.subsystem)?.variables.get(r.variable)?.name;
            let port = &system.subsystems().get(s)?.info().observed.get(slot)?.name;
            Some(format!(
                "{alias}{}",
                port.strip_prefix(own.as_str()).unwrap_or_default()
            ))
        })
        .collect()
}
