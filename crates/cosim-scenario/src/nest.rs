//! Nested systems (hierarchical co-simulation, hafner; docs/algorithms.md):
//! a `[[subsystems]]` entry with `system = ...` instead of `fmu = ...`.
//!
//! A nested system is resolved on its own first, then presented to the
//! level above through a synthetic model description: its `exposes` become
//! inputs and outputs (named `<inner subsystem>.<variable>`, with the inner
//! units and the inner direct feed-through), and every other inner float
//! output or local becomes a local variable of the same dotted name, so the
//! level above can trace it (`nest.s3.x3`). Nesting depth is unbounded: an
//! inner subsystem can itself be a nested system, whose variables are then
//! `inner.s1.x` inside, `nest.inner.s1.x` above.

use cosim_fmi::model_description::{
    Alias, Causality, CoSimulation, Dependencies, Dependency, FmiVersion, ModelDescription,
    ModelStructure, Unknown, Variability, Variable, VariableIndex,
};
use cosim_fmi::{Fmu, SolverSettings, model_description::VariableType};

use crate::settings::{FmuInterface, Isolation, MasterKind, SolverMethod, SolverSpec};
use crate::{ResolvedScenario, Scenario, ScenarioError, SubsystemSpec};

/// What a subsystem of a level is made of.
pub enum Node {
    /// An FMU.
    Fmu(Fmu),
    /// A nested system.
    Nest(Box<NestNode>),
}

impl Node {
    /// The model description the level above resolves against (the FMU's,
    /// or the nest's synthetic one).
    pub fn model_description(&self) -> &ModelDescription {
        match self {
            Node::Fmu(f) => f.model_description(),
            Node::Nest(n) => &n.md,
        }
    }
}

/// A nested system, resolved, with its synthetic model description.
pub struct NestNode {
    /// The nested scenario, resolved.
    pub resolved: ResolvedScenario,
    /// Its subsystems.
    pub nodes: Vec<Node>,
    /// The synthetic model description seen by the level above.
    pub md: ModelDescription,
    /// For each variable of `md`: the inner (subsystem, variable) it is.
    pub map: Vec<(usize, VariableIndex)>,
}

/// Opens every FMU and resolves every nested system of `scenario`,
/// recursively; `t_start`/`t_stop` are the times of the top level.
pub fn prepare_nodes(
    scenario: &Scenario,
    t_start: Option<f64>,
    t_stop: Option<f64>,
) -> Result<Vec<Node>, ScenarioError> {
    let mut nodes = Vec::new();
    let mut opened: Vec<(std::path::PathBuf, Fmu)> = Vec::new();
    // `cosim run Model.fmu`: the FMU opened to make the scenario.
    if let (Some(fmu), Some(s)) = (
        scenario.single.as_ref().and_then(|x| x.fmu.as_ref()),
        scenario.subsystems().first(),
    ) {
        opened.push((s.fmu.value.clone(), fmu.clone()));
    }
    for s in scenario.subsystems() {
        match &s.system {
            None => {
                let path = &s.fmu.value;
                let fmu = match opened.iter().find(|(p, _)| p == path) {
                    Some((_, f)) => f.clone(),
                    None => {
                        let f = Fmu::open(path).map_err(|e| {
                            scenario.error_at(
                                s.fmu.span,
                                format!("cannot open the FMU of subsystem '{}': {e}", s.name.value),
                            )
                        })?;
                        // Refused before anything else looks at it: an
                        // FMU with neither Co-Simulation nor Model Exchange.
                        if let Some((why, what)) = f.model_description().refusal() {
                            return Err(scenario
                                .error_at(
                                    s.fmu.span,
                                    format!(
                                        "cannot run the FMU of subsystem '{}': {why}",
                                        s.name.value
                                    ),
                                )
                                .with_help(what.replace("<fmu>", &path.display().to_string())));
                        }
                        opened.push((path.clone(), f.clone()));
                        f
                    }
                };
                nodes.push(Node::Fmu(with_interface(scenario, s, fmu)?));
            }
            Some(_) if strongly_coupled(scenario) => {
                return Err(scenario.error_at(
                    s.span,
                    format!(
                        "subsystem '{}' is a nested system, and the strongly-coupled master integrates Model Exchange FMUs only",
                        s.name.value
                    ),
                ).with_help("list its FMUs in this level, or make this level's master another kind (a strongly coupled nest is one subsystem to the level above)"));
            }
            Some(inner) => {
                let mut inner = (**inner).clone();
                inner.set_times(t_start, t_stop);
                let inner_nodes = prepare_nodes(&inner, t_start, t_stop)?;
                let names: Vec<String> = inner
                    .subsystems()
                    .iter()
                    .map(|x| x.name.value.clone())
                    .collect();
                let models: Vec<(&str, &ModelDescription)> = names
                    .iter()
                    .zip(&inner_nodes)
                    .map(|(n, node)| (n.as_str(), node.model_description()))
                    .collect();
                let resolved = inner.resolve(&models)?;
                let (md, map) = synthesize(scenario, s, &resolved, &inner_nodes)?;
                nodes.push(Node::Nest(Box::new(NestNode {
                    resolved,
                    nodes: inner_nodes,
                    md,
                    map,
                })));
            }
        }
    }
    Ok(nodes)
}

/// `--solver` and `--relative-tolerance` set the solver of Model Exchange
/// subsystems: given where no subsystem of any level runs Model Exchange,
/// they would change nothing, and are refused naming the argument.
pub fn solver_options_used(scenario: &Scenario, nodes: &[Node]) -> Result<(), ScenarioError> {
    fn any_model_exchange(nodes: &[Node]) -> bool {
        nodes.iter().any(|n| match n {
            Node::Fmu(f) => f.runs_model_exchange().is_some() || f.is_strongly_coupled_member(),
            Node::Nest(nest) => any_model_exchange(&nest.nodes),
        })
    }
    let o = &scenario.solver_override;
    let argument = match (o.method, o.relative_tolerance) {
        (Some(m), _) => format!("--solver {}", m.name()),
        (None, Some(x)) => format!("--relative-tolerance {}", cosim_core::text::number(x)),
        (None, None) => return Ok(()),
    };
    if any_model_exchange(nodes) {
        return Ok(());
    }
    Err(ScenarioError::argument(
        &scenario.source.path,
        &argument,
        "no subsystem runs a Model Exchange interface, whose solver this sets (Co-Simulation FMUs integrate themselves)",
    )
    .with_help("add --interface me to run the FMUs' Model Exchange interface, or leave the option out"))
}

/// The interface subsystem `s` runs of its FMU: `interface` (or
/// `--interface`) where given, else Co-Simulation where the FMU has it,
/// else Model Exchange, which an integrator of `cosim` drives with the
/// subsystem's `[subsystems.solver]` settings.
fn with_interface(scenario: &Scenario, s: &SubsystemSpec, fmu: Fmu) -> Result<Fmu, ScenarioError> {
    if strongly_coupled(scenario) {
        return as_member(scenario, s, fmu);
    }
    let md = fmu.model_description();
    match interface_of(scenario, s, md)? {
        FmuInterface::CoSimulation => Ok(fmu),
        FmuInterface::ScheduledExecution => fmu
            .as_scheduled_execution()
            .map_err(|e| scenario.error_at(s.fmu.span, e.to_string())),
        FmuInterface::ModelExchange => {
            let settings = solver_settings(
                md,
                s.solver.as_ref().map(|l| &l.value),
                &scenario.solver_override,
            );
            fmu.as_model_exchange(settings).map_err(|e| {
                scenario.error_at(
                    s.fmu.span,
                    format!(
                        "cannot run the FMU of subsystem '{}' as Model Exchange: {e}",
                        s.name.value
                    ),
                )
            })
        }
    }
}

/// Whether the level's master integrates all its FMUs as one ODE.
pub(crate) fn strongly_coupled(scenario: &Scenario) -> bool {
    scenario.master.settings.kind == MasterKind::StronglyCoupled
}

/// FMU subsystem `s` of a strongly coupled level: its Model Exchange
/// interface, integrated by the level's master; an error where it asks for
/// anything else.
fn as_member(scenario: &Scenario, s: &SubsystemSpec, fmu: Fmu) -> Result<Fmu, ScenarioError> {
    let name = &s.name.value;
    let help = "the strongly-coupled master integrates the Model Exchange interface of every FMU of its level in this process, with the solver of [master.solver]";
    if let Some(i) = s
        .interface
        .as_ref()
        .filter(|i| i.value == FmuInterface::CoSimulation)
    {
        return Err(scenario
            .error_at(i.span, format!("subsystem '{name}' asks for the Co-Simulation interface in a strongly coupled level"))
            .with_help(help));
    }
    if let Some(solver) = &s.solver {
        return Err(scenario
            .error_at(solver.span, format!("subsystem '{name}' has a solver of its own in a strongly coupled level"))
            .with_help("move the settings to [master.solver]: one integrator advances every FMU of the level"));
    }
    let written = s
        .isolation
        .as_ref()
        .map(|l| l.value)
        .unwrap_or(scenario.master.settings.isolation);
    if written == Isolation::Process {
        let span = s.isolation.as_ref().map_or(s.span, |l| l.span);
        return Err(scenario
            .error_at(span, format!("subsystem '{name}' is to run in a host process (isolation = \"process\") in a strongly coupled level"))
            .with_help(help));
    }
    if scenario.isolation_override == Some(Isolation::Process) {
        // `--isolation process` (and `cosim check`, which initializes every
        // FMU in a host): the Model Exchange interface on its own in a
        // host; the master refuses to run such a level, naming it.
        let settings = solver_settings(
            fmu.model_description(),
            scenario.master.settings.solver.as_ref(),
            &SolverSpec::default(),
        );
        return fmu.as_model_exchange(settings).map_err(|e| {
            scenario.error_at(
                s.fmu.span,
                format!(
                    "subsystem '{name}' cannot be integrated by the strongly-coupled master: {e}"
                ),
            )
        });
    }
    fmu.as_strongly_coupled_member().map_err(|e| {
        scenario
            .error_at(
                s.fmu.span,
                format!(
                    "subsystem '{name}' cannot be integrated by the strongly-coupled master: {e}"
                ),
            )
            .with_help(help)
    })
}

/// The integrator of a strongly coupled level: `[master.solver]` (with
/// `--solver` and `--relative-tolerance` merged in), then the defaults of
/// [`solver_settings`], the relative tolerance the smallest its FMUs'
/// DefaultExperiments give.
pub fn group_solver_settings(spec: Option<SolverSpec>, nodes: &[Node]) -> SolverSettings {
    let spec = spec.unwrap_or_default();
    let mut settings: Option<SolverSettings> = None;
    for node in nodes {
        let s = solver_settings(
            node.model_description(),
            Some(&spec),
            &SolverSpec::default(),
        );
        settings = Some(match settings {
            Some(t) if t.relative_tolerance <= s.relative_tolerance => t,
            _ => s,
        });
    }
    settings
        .unwrap_or_else(|| SolverSettings::with_tolerance(cosim_fmi::DEFAULT_RELATIVE_TOLERANCE))
}

/// The interface FMU subsystem `s` runs of the FMU described by `md`
/// ([`with_interface`]); an error where the interface asked is not the
/// FMU's, or a `[subsystems.solver]` is given for Co-Simulation.
pub(crate) fn interface_of(
    scenario: &Scenario,
    s: &SubsystemSpec,
    md: &ModelDescription,
) -> Result<FmuInterface, ScenarioError> {
    let (has_cs, has_me) = (md.co_simulation.is_some(), md.model_exchange.is_some());
    let written = s.interface.as_ref();
    let asked = scenario.interface_override.or(written.map(|l| l.value));
    if !has_cs && !has_me && md.scheduled_execution.is_some() && asked.is_none() {
        // Scheduled Execution only: its partitions are activated at their
        // Clocks' ticks (docs/events.md).
        return Ok(FmuInterface::ScheduledExecution);
    }
    let interface = asked.unwrap_or(if has_cs {
        FmuInterface::CoSimulation
    } else {
        FmuInterface::ModelExchange
    });
    let declared = || {
        let mut d = Vec::new();
        for (has, element) in [
            (has_cs, "<CoSimulation>"),
            (has_me, "<ModelExchange>"),
            (md.scheduled_execution.is_some(), "<ScheduledExecution>"),
        ] {
            if has {
                d.push(element);
            }
        }
        match d.as_slice() {
            [one] => format!("{one} only"),
            _ => d.join(" and "),
        }
    };
    let name = &s.name.value;
    let default = if has_cs {
        "Co-Simulation"
    } else if has_me {
        "Model Exchange"
    } else {
        "Scheduled Execution"
    };
    let missing = |element: &str| {
        let message = format!(
            "subsystem '{name}' runs the FMU's {element} interface, which the FMU does not declare (it declares {})",
            declared()
        );
        let err = match (written, scenario.interface_override) {
            (_, Some(i)) => ScenarioError::argument(
                &scenario.source.path,
                &format!(
                    "--interface {}",
                    if i == FmuInterface::ModelExchange {
                        "me"
                    } else {
                        "cs"
                    }
                ),
                message,
            ),
            (Some(l), None) => scenario.error_at(l.span, message),
            (None, None) => scenario.error_at(s.fmu.span, message),
        };
        err.with_help(format!(
            "remove the interface choice: the FMU runs its {default} interface"
        ))
    };
    match interface {
        FmuInterface::CoSimulation if !has_cs => Err(missing("Co-Simulation")),
        FmuInterface::ModelExchange if !has_me => Err(missing("Model Exchange")),
        FmuInterface::ScheduledExecution if md.scheduled_execution.is_none() => {
            let message = format!(
                "subsystem '{name}' runs the FMU's Scheduled Execution interface, which the FMU does not declare (it declares {})",
                declared()
            );
            let span = written.map_or(s.fmu.span, |l| l.span);
            Err(scenario
                .error_at(span, message)
                .with_help("remove the interface choice, or use an FMU that declares <ScheduledExecution>"))
        }
        FmuInterface::ScheduledExecution if s.solver.is_some() => Err(scenario
            .error_at(
                s.solver.as_ref().map_or(s.fmu.span, |l| l.span),
                format!("subsystem '{name}' runs the FMU's Scheduled Execution interface: [subsystems.solver] is for Model Exchange"),
            )),
        FmuInterface::CoSimulation => {
            if let Some(solver) = &s.solver {
                return Err(scenario
                    .error_at(
                        solver.span,
                        format!("subsystem '{name}' runs the FMU's Co-Simulation interface (the default where the FMU has one), which integrates itself: [subsystems.solver] is for Model Exchange"),
                    )
                    .with_help("set interface = \"model-exchange\" to integrate the FMU's Model Exchange interface with this solver"));
            }
            Ok(FmuInterface::CoSimulation)
        }
        FmuInterface::ModelExchange => Ok(FmuInterface::ModelExchange),
        FmuInterface::ScheduledExecution => Ok(FmuInterface::ScheduledExecution),
    }
}

/// The solver of a Model Exchange subsystem: `--solver`,
/// `--relative-tolerance`, then `[subsystems.solver]`, then the defaults
/// (BDF; the relative tolerance of the FMU's DefaultExperiment, else
/// 1e-5; the absolute tolerance equal to the relative one, scaled by the
/// states' nominals, as FMPy sets CVODE).
pub fn solver_settings(
    md: &ModelDescription,
    spec: Option<&SolverSpec>,
    overrides: &SolverSpec,
) -> SolverSettings {
    let spec = spec.copied().unwrap_or_default();
    let pick = |o: Option<f64>, s: Option<f64>| o.or(s);
    let rtol = pick(overrides.relative_tolerance, spec.relative_tolerance)
        .filter(|x| *x > 0.0 && *x < 1.0)
        .unwrap_or_else(|| md.default_relative_tolerance().value);
    SolverSettings {
        method: match overrides.method.or(spec.method) {
            Some(SolverMethod::Rk45) => cosim_fmi::SolverMethod::Rk45,
            _ => cosim_fmi::SolverMethod::Bdf,
        },
        relative_tolerance: rtol,
        absolute_tolerance: pick(overrides.absolute_tolerance, spec.absolute_tolerance)
            .unwrap_or(rtol),
        max_step: pick(overrides.max_step, spec.max_step),
        max_order: overrides.max_order.or(spec.max_order),
        initial_step: pick(overrides.initial_step, spec.initial_step),
    }
}

/// An inner variable the nested system exposes: (subsystem, variable,
/// causality: input or output).
type Exposed = (usize, VariableIndex, Causality);

/// Builds the synthetic model description of nested system `spec`: its
/// exposed variables first (with their causality), then every other inner
/// scalar numeric or Boolean output or local, as a local (traceable from
/// above); and the map from its variables to the inner ones.
fn synthesize(
    outer: &Scenario,
    spec: &crate::SubsystemSpec,
    inner: &ResolvedScenario,
    nodes: &[Node],
) -> Result<(ModelDescription, Vec<(usize, VariableIndex)>), ScenarioError> {
    let nest = &spec.name.value;
    let mds: Vec<&ModelDescription> = nodes.iter().map(Node::model_description).collect();
    let mut exposed: Vec<Exposed> = Vec::new();
    for e in &spec.exposes {
        let x = exposed_variable(outer, nest, inner, &mds, e)?;
        if exposed.iter().any(|&(s, v, _)| (s, v) == (x.0, x.1)) {
            return Err(outer.error_at(e.span, format!("'{}' is exposed twice", e.value)));
        }
        exposed.push(x);
    }
    let mut map: Vec<(usize, VariableIndex)> = exposed.iter().map(|&(s, v, _)| (s, v)).collect();
    for (s, md) in mds.iter().enumerate() {
        for (v, iv) in md.variables.iter().enumerate() {
            let traceable = matches!(iv.causality, Causality::Output | Causality::Local)
                && cosim_core::subsystem::is_slot_type(iv.var_type)
                && iv.is_scalar();
            if traceable && !map[..exposed.len()].contains(&(s, v)) {
                map.push((s, v));
            }
        }
    }
    let variables = map
        .iter()
        .enumerate()
        .map(|(k, &(s, v))| {
            let causality = exposed.get(k).map_or(Causality::Local, |e| e.2);
            nest_variable(inner, mds[s], s, v, causality, k as u32)
        })
        .collect();
    let all_cs = |f: &dyn Fn(&CoSimulation) -> bool| {
        nodes
            .iter()
            .all(|n| n.model_description().co_simulation.as_ref().is_some_and(f))
    };
    let md = ModelDescription {
        fmi_version: FmiVersion::V2,
        fmi_version_string: "nested".to_string(),
        model_name: nest.clone(),
        instantiation_token: format!("nested:{nest}"),
        description: Some(format!(
            "nested co-simulation '{nest}' ({}, master {})",
            cosim_core::text::count(inner.subsystems.len(), "subsystem", "subsystems"),
            inner.master.kind
        )),
        author: None,
        version: None,
        generation_tool: Some("cosim".to_string()),
        generation_date_and_time: None,
        variable_naming_convention: Some("structured".to_string()),
        co_simulation: Some(CoSimulation {
            model_identifier: nest.clone(),
            can_handle_variable_communication_step_size: true,
            can_get_and_set_fmu_state: all_cs(&|c| c.can_get_and_set_fmu_state),
            provides_directional_derivatives: all_cs(&|c| c.provides_directional_derivatives),
            ..CoSimulation::default()
        }),
        model_exchange: None,
        scheduled_execution: None,
        default_experiment: None,
        units: mds
            .iter()
            .flat_map(|m| m.units.iter().cloned())
            .fold(Vec::new(), |mut acc, u| {
                if !acc
                    .iter()
                    .any(|x: &cosim_fmi::model_description::Unit| x.name == u.name)
                {
                    acc.push(u);
                }
                acc
            }),
        type_definitions: Vec::new(),
        log_categories: Vec::new(),
        variables,
        model_structure: ModelStructure {
            outputs: exposed_feedthrough(&exposed, &mds),
            ..ModelStructure::default()
        },
        names: Default::default(),
    };
    Ok((md, map))
}

/// The inner variable an `exposes` entry `e` of nested system `nest`
/// names, checked: `<subsystem>.<variable>` of the inner level, a scalar
/// numeric or Boolean output, or an input nothing feeds inside.
fn exposed_variable(
    outer: &Scenario,
    nest: &str,
    inner: &ResolvedScenario,
    mds: &[&ModelDescription],
    e: &crate::Located<String>,
) -> Result<Exposed, ScenarioError> {
    let Some((sub, var)) = e.value.split_once('.') else {
        return Err(outer.error_at(
            e.span,
            format!(
                "'{}' is not '<subsystem>.<variable>' of nested system '{nest}'",
                e.value
            ),
        ));
    };
    let Some(s) = inner.subsystems.iter().position(|x| x.name == sub) else {
        let names: Vec<&str> = inner.subsystems.iter().map(|x| x.name.as_str()).collect();
        let err = outer.error_at(
            e.span,
            format!("nested system '{nest}' has no subsystem '{sub}'"),
        );
        return Err(match crate::error::nearest(sub, names.iter().copied()) {
            Some(n) => err.with_help(format!("did you mean '{n}'?")),
            None => err.with_help(format!("its subsystems are: {}", names.join(", "))),
        });
    };
    let md = mds[s];
    let Some((v, variable)) = md.variable_by_name(var) else {
        let names: Vec<&str> = md
            .variables
            .iter()
            .filter(|v| matches!(v.causality, Causality::Input | Causality::Output))
            .map(|v| v.name.as_str())
            .collect();
        let err = outer.error_at(
            e.span,
            format!("subsystem '{sub}' of nested system '{nest}' has no variable '{var}'"),
        );
        return Err(match crate::error::nearest(var, names.iter().copied()) {
            Some(n) => err.with_help(format!("did you mean '{n}'?")),
            None => err,
        });
    };
    if !cosim_core::subsystem::is_slot_type(variable.var_type) || !variable.is_scalar() {
        return Err(outer.error_at(
            e.span,
            format!(
                "'{}' is a {}{} variable; only scalar numeric and Boolean variables can be exposed",
                e.value,
                if variable.is_scalar() { "" } else { "array " },
                variable.var_type
            ),
        ));
    }
    match variable.causality {
        Causality::Input if fed_inside(inner, s, v) => Err(outer.error_at(
            e.span,
            format!(
                "'{}' is fed by a connection or an input file inside nested system '{nest}'; only inputs fed from outside can be exposed",
                e.value
            ),
        )),
        Causality::Input | Causality::Output => Ok((s, v, variable.causality)),
        other => Err(outer.error_at(
            e.span,
            format!(
                "'{}' is a {other} variable; a nested system exposes inputs (fed from outside) and outputs",
                e.value
            ),
        )),
    }
}

/// Whether input `v` of inner subsystem `s` is fed inside the nested
/// system: by a connection, a function or an input file.
pub(crate) fn fed_inside(inner: &ResolvedScenario, s: usize, v: VariableIndex) -> bool {
    let fed = |r: &crate::VariableRef| r.subsystem == s && r.variable == v;
    inner.connections.iter().any(|c| fed(&c.to))
        || inner
            .function_connections
            .iter()
            .any(|c| matches!(&c.to, crate::FunctionEnd::Variable(r) if fed(r)))
        || inner
            .inputs
            .iter()
            .any(|f| f.feeds.iter().any(|x| fed(&x.input)))
}

/// The nested system's variable for inner variable `v` of subsystem `s`
/// (model description `md`), with value reference `vr`: named
/// `<subsystem>.<variable>`, its unit, range and description kept.
fn nest_variable(
    inner: &ResolvedScenario,
    md: &ModelDescription,
    s: usize,
    v: VariableIndex,
    causality: Causality,
    vr: u32,
) -> Variable {
    let iv = &md.variables[v];
    Variable {
        name: format!("{}.{}", inner.subsystems[s].name, iv.name),
        value_reference: vr,
        // Discrete values pass through the nest unchanged (as f64
        // slots); the type keeps connections above type-checked.
        var_type: if cosim_core::subsystem::is_slot_type(iv.var_type) {
            iv.var_type
        } else {
            VariableType::Float64
        },
        description: iv.description.clone(),
        causality,
        variability: if iv.var_type.is_float() {
            Variability::Continuous
        } else {
            Variability::Discrete
        },
        initial: None,
        declared_type: None,
        start: if causality == Causality::Input {
            iv.start.clone()
        } else {
            None
        },
        unit: iv.unit.clone(),
        display_unit: iv.display_unit.clone(),
        quantity: iv.quantity.clone(),
        min: iv.min,
        max: iv.max,
        nominal: iv.nominal,
        derivative_of: None,
        dimensions: Vec::new(),
        intermediate_update: false,
        clocks: Vec::new(),
        clock: None,
        aliases: nested_aliases(&inner.subsystems[s].name, iv),
        alias_of: None,
        line: iv.line,
    }
}

/// Direct feed-through of the exposed outputs (indices into `exposed`,
/// which are the nested system's first variables): an exposed output
/// depends on the exposed inputs of its own inner subsystem it depends on.
fn exposed_feedthrough(exposed: &[Exposed], mds: &[&ModelDescription]) -> Vec<Unknown> {
    exposed
        .iter()
        .enumerate()
        .filter(|(_, e)| e.2 == Causality::Output)
        .map(|(i, &(s, v, _))| {
            let deps = mds[s].output_input_dependencies(v);
            Unknown {
                variable: i,
                dependencies: Dependencies::Listed(
                    exposed
                        .iter()
                        .enumerate()
                        .filter(|(_, e)| e.0 == s && e.2 == Causality::Input && deps.contains(&e.1))
                        .map(|(j, _)| Dependency {
                            variable: j,
                            kind: None,
                        })
                        .collect(),
                ),
            }
        })
        .collect()
}

/// The FMI 3 aliases of inner variable `iv` of subsystem `sub`, as the
/// level above names them (`sub.alias`).
fn nested_aliases(sub: &str, iv: &Variable) -> Vec<Alias> {
    iv.aliases
        .iter()
        .filter(|a| a.variable.is_none())
        .map(|a| Alias {
            name: format!("{sub}.{}", a.name),
            ..a.clone()
        })
        .collect()
}
