//! A summary of an FMU for `cosim inspect`: identity, the interfaces and
//! which one `cosim run` uses, capabilities (Co-Simulation; Model
//! Exchange with its continuous states and event indicators), variables by
//! causality, feed-through of each output and power-bond candidates. [`InspectReport`] serialises to JSON (`--json`) and renders
//! as aligned plain text ([`InspectReport::render_text`]).

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::bonds::{BondCandidate, find_bond_candidates};
use crate::model_description::{
    Causality, CoSimulation, DeclaredInterface, DefaultExperiment, Dependencies, Dimension,
    FmiVersion, Initial, ModelDescription, ModelExchange, StartValue, Variable, VariableType,
};

/// The summary of one FMU.
#[derive(Debug, Clone, Serialize)]
pub struct InspectReport {
    /// The `.fmu` file or directory inspected.
    pub source: String,
    /// Identity of the model.
    pub identity: Identity,
    /// `<CoSimulation>` flags; `None` for an FMU without it.
    pub co_simulation: Option<CoSimulation>,
    /// Whether the FMU also offers Model Exchange.
    pub model_exchange: bool,
    /// Every interface the FMU declares (Model Exchange, Co-Simulation,
    /// Scheduled Execution) with its `modelIdentifier`.
    pub interfaces: Vec<DeclaredInterface>,
    /// Why `cosim` cannot run the FMU (it has neither `<CoSimulation>` nor
    /// `<ModelExchange>`), and what would; `None` when it can.
    pub not_runnable: Option<String>,
    /// How `cosim run` runs the FMU when nothing chooses the interface;
    /// `None` when it cannot run it (`not_runnable`).
    pub runs_as: Option<RunsAs>,
    /// `<ModelExchange>`: its capabilities, continuous states and event
    /// indicators; `None` for an FMU without it.
    pub model_exchange_interface: Option<ModelExchangeReport>,
    /// `<DefaultExperiment>`.
    pub default_experiment: Option<DefaultExperiment>,
    /// Platform directories found under `binaries/`, when known.
    pub platforms: Option<Vec<String>>,
    /// Variables grouped by causality (inputs, outputs, parameters, ...;
    /// empty groups are left out).
    pub variables: Vec<VariableGroup>,
    /// For each output, the inputs it depends on directly.
    pub feedthrough: Vec<OutputFeedthrough>,
    /// Power-bond candidates on the interface.
    pub bond_candidates: Vec<BondCandidate>,
}

/// The interface `cosim run` uses when neither the scenario (`interface`)
/// nor the command line (`--interface`) chooses: Co-Simulation where the
/// FMU has it, else Model Exchange, integrated by cosim's solver.
#[derive(Debug, Clone, Serialize)]
pub struct RunsAs {
    /// `"co-simulation"` or `"model-exchange"` (the scenario's names).
    pub interface: &'static str,
    /// The option that runs the FMU's other interface, where it has both
    /// (`--interface me`, `--interface cs`).
    pub other: Option<&'static str>,
    /// The solver that integrates the Model Exchange interface by
    /// default, where the FMU has one.
    pub model_exchange_solver: Option<DefaultSolver>,
    /// The same as the text shows it.
    pub text: String,
}

/// The default solver of a Model Exchange interface (`[subsystems.solver]`
/// left out).
#[derive(Debug, Clone, Serialize)]
pub struct DefaultSolver {
    /// `"bdf"`.
    pub method: &'static str,
    /// The relative tolerance (the absolute one is the same, times each
    /// state's nominal).
    pub relative_tolerance: f64,
    /// Where the tolerance comes from.
    pub relative_tolerance_from: &'static str,
}

/// The Model Exchange interface of an FMU.
#[derive(Debug, Clone, Serialize)]
pub struct ModelExchangeReport {
    /// The `<ModelExchange>` attributes (`model_identifier`,
    /// `needs_completed_integrator_step`, `can_get_and_set_fmu_state`,
    /// `provides_directional_derivatives`, `number_of_event_indicators`, ...).
    #[serde(flatten)]
    pub capabilities: ModelExchange,
    /// The continuous states, in the order of the state vector.
    pub continuous_states: Vec<ContinuousStateRow>,
}

/// One continuous state of a Model Exchange FMU.
#[derive(Debug, Clone, Serialize)]
pub struct ContinuousStateRow {
    /// The state variable.
    pub state: String,
    /// The variable holding its derivative.
    pub derivative: String,
    /// Type (with array dimensions, as in the variable tables).
    pub var_type: String,
    /// The state's unit.
    pub unit: Option<String>,
    /// Its nominal value (1 when the FMU declares none).
    pub nominal: f64,
    /// The FMU declares the nominal (else 1, the standard's default).
    pub nominal_declared: bool,
}

/// Identity of the model.
#[derive(Debug, Clone, Serialize)]
pub struct Identity {
    /// `modelName`.
    pub model_name: String,
    /// `fmiVersion` as written.
    pub fmi_version: String,
    /// `guid` (FMI 2) / `instantiationToken` (FMI 3).
    pub instantiation_token: String,
    /// `description`.
    pub description: Option<String>,
    /// `author`.
    pub author: Option<String>,
    /// `version` of the model.
    pub version: Option<String>,
    /// `generationTool`.
    pub generation_tool: Option<String>,
    /// `generationDateAndTime`.
    pub generation_date_and_time: Option<String>,
}

/// The variables of one causality.
#[derive(Debug, Clone, Serialize)]
pub struct VariableGroup {
    /// The causality, as written in the file (`input`, `output` ...).
    pub causality: String,
    /// The variables in declaration order.
    pub variables: Vec<VariableRow>,
}

/// One variable, flattened for display.
#[derive(Debug, Clone, Serialize)]
pub struct VariableRow {
    /// `name`.
    pub name: String,
    /// Data type as the FMU's FMI version names it (FMI 2: `Real`,
    /// `Integer`, `Boolean`, `String`, `Enumeration`; FMI 3: `Float64`,
    /// `Int32`, ...), with array dimensions (`Float64[3]`, or the
    /// structural parameter and its start, `Float64[n=3,m=3]`).
    pub var_type: String,
    /// `valueReference`.
    pub value_reference: u32,
    /// `unit`.
    pub unit: Option<String>,
    /// Start value, formatted.
    pub start: Option<String>,
    /// `variability`.
    pub variability: String,
    /// `initial` as written or implied (`exact`, `approx`, `calculated`).
    pub initial: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// Other names of the variable: FMI 3 `<Alias>` elements, FMI 2
    /// variables with the same value reference and type (listed here
    /// rather than in their own causality group).
    pub aliases: Vec<AliasRow>,
}

/// An alias of a variable.
#[derive(Debug, Clone, Serialize)]
pub struct AliasRow {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: Option<String>,
    /// `displayUnit`.
    pub display_unit: Option<String>,
    /// FMI 2: the alias's own causality (an alias is a variable there);
    /// `None` in FMI 3.
    pub causality: Option<String>,
}

/// The feed-through of one output.
#[derive(Debug, Clone, Serialize)]
pub struct OutputFeedthrough {
    /// The output's name.
    pub output: String,
    /// What it depends on.
    pub depends_on: Feedthrough,
    /// The same as readable text.
    pub text: String,
}

/// The inputs an output depends on directly.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", content = "inputs", rename_all = "snake_case")]
pub enum Feedthrough {
    /// No `dependencies` attribute: conservatively all inputs.
    AllNoDependenciesAttribute,
    /// The output is not listed in `<ModelStructure>`: all inputs.
    AllNotListed,
    /// Depends on no input.
    None,
    /// Depends on these inputs.
    Inputs(Vec<String>),
}

const CAUSALITY_ORDER: [Causality; 7] = [
    Causality::Input,
    Causality::Output,
    Causality::Parameter,
    Causality::StructuralParameter,
    Causality::CalculatedParameter,
    Causality::Independent,
    Causality::Local,
];

impl InspectReport {
    /// Builds the report of the model description `md` read from `source`;
    /// `platforms` lists the directories under `binaries/` when known.
    pub fn new(source: &Path, md: &ModelDescription, platforms: Option<&[String]>) -> Self {
        let variables = CAUSALITY_ORDER
            .iter()
            .filter_map(|&c| {
                let rows: Vec<VariableRow> = md
                    .variables
                    .iter()
                    .filter(|v| v.causality == c && v.alias_of.is_none())
                    .map(|v| variable_row(md, v))
                    .collect();
                (!rows.is_empty()).then(|| VariableGroup {
                    causality: c.to_string(),
                    variables: rows,
                })
            })
            .collect();
        let feedthrough = md
            .outputs()
            .filter_map(|o| {
                let v = md.variables.get(o)?;
                let depends_on = feedthrough_of(md, o);
                let text = match &depends_on {
                    Feedthrough::AllNoDependenciesAttribute => {
                        "all inputs (no dependencies attribute)".to_string()
                    }
                    Feedthrough::AllNotListed => {
                        "all inputs (not listed in <ModelStructure>)".to_string()
                    }
                    Feedthrough::None => "none".to_string(),
                    Feedthrough::Inputs(names) => names.join(", "),
                };
                Some(OutputFeedthrough {
                    output: v.name.clone(),
                    depends_on,
                    text,
                })
            })
            .collect();
        InspectReport {
            source: source.display().to_string(),
            identity: Identity {
                model_name: md.model_name.clone(),
                fmi_version: md.fmi_version_string.clone(),
                instantiation_token: md.instantiation_token.clone(),
                description: md.description.clone(),
                author: md.author.clone(),
                version: md.version.clone(),
                generation_tool: md.generation_tool.clone(),
                generation_date_and_time: md.generation_date_and_time.clone(),
            },
            co_simulation: md.co_simulation.clone(),
            model_exchange: md.model_exchange.is_some(),
            interfaces: md.interfaces(),
            not_runnable: md.refusal_text(&source.display().to_string()),
            runs_as: runs_as(md),
            model_exchange_interface: md.model_exchange.as_ref().map(|me| ModelExchangeReport {
                capabilities: ModelExchange {
                    number_of_event_indicators: md.number_of_event_indicators(),
                    ..me.clone()
                },
                continuous_states: md
                    .states_and_derivatives()
                    .map(|(state, derivative)| ContinuousStateRow {
                        state: state.name.clone(),
                        derivative: derivative.name.clone(),
                        var_type: variable_row(md, state).var_type,
                        unit: state.unit.clone(),
                        nominal: state.nominal.unwrap_or(1.0),
                        nominal_declared: state.nominal.is_some(),
                    })
                    .collect(),
            }),
            default_experiment: md.default_experiment.clone(),
            platforms: platforms.map(<[String]>::to_vec),
            variables,
            feedthrough,
            bond_candidates: find_bond_candidates(md),
        }
    }

    /// A readable, aligned plain-text summary.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let id = &self.identity;
        let mut fields: Vec<(&str, String)> = vec![
            ("Source", self.source.clone()),
            ("Model", id.model_name.clone()),
            ("FMI version", id.fmi_version.clone()),
            ("Token", id.instantiation_token.clone()),
        ];
        let optional = [
            ("Description", &id.description),
            ("Author", &id.author),
            ("Version", &id.version),
            ("Generated by", &id.generation_tool),
            ("Generated on", &id.generation_date_and_time),
        ];
        for (k, v) in optional {
            if let Some(v) = v {
                fields.push((k, v.clone()));
            }
        }
        let interfaces: Vec<String> = self
            .interfaces
            .iter()
            .map(|i| format!("{} ({})", i.interface, i.model_identifier))
            .collect();
        fields.push((
            "Interfaces",
            if interfaces.is_empty() {
                "none declared".to_string()
            } else {
                interfaces.join(", ")
            },
        ));
        if let Some(reason) = &self.not_runnable {
            fields.push(("Runs in cosim", format!("no: {reason}")));
        }
        if let Some(runs) = &self.runs_as {
            fields.push(("Runs in cosim", format!("yes: {}", runs.text)));
        }
        if let Some(platforms) = &self.platforms {
            fields.push((
                "Platforms",
                if platforms.is_empty() {
                    "none".to_string()
                } else {
                    platforms.join(", ")
                },
            ));
        }
        push_fields(&mut out, &fields);

        if let Some(cs) = &self.co_simulation {
            out.push_str("\nCo-Simulation\n");
            let mut flags: Vec<(&str, String)> = vec![
                ("modelIdentifier", cs.model_identifier.clone()),
                (
                    "variable step size",
                    yes_no(cs.can_handle_variable_communication_step_size),
                ),
                ("get/set state", yes_no(cs.can_get_and_set_fmu_state)),
                ("serialize state", yes_no(cs.can_serialize_fmu_state)),
                (
                    "directional derivatives",
                    yes_no(cs.provides_directional_derivatives),
                ),
                (
                    "max output derivative order",
                    cs.max_output_derivative_order.to_string(),
                ),
                (
                    "only one instance per process",
                    yes_no(cs.can_be_instantiated_only_once_per_process),
                ),
                ("needs execution tool", yes_no(cs.needs_execution_tool)),
            ];
            let extra = [
                ("interpolates inputs", cs.can_interpolate_inputs),
                ("runs asynchronously", cs.can_run_asynchronuously),
                ("event mode", cs.has_event_mode),
                ("intermediate update", cs.provides_intermediate_update),
                ("may return early", cs.might_return_early_from_do_step),
                ("adjoint derivatives", cs.provides_adjoint_derivatives),
                ("source files", cs.has_source_files),
            ];
            for (k, v) in extra {
                if v {
                    flags.push((k, "yes".to_string()));
                }
            }
            if let Some(h) = cs.fixed_internal_step_size {
                flags.push(("fixed internal step size", format_f64(h)));
            }
            push_fields(&mut out, &flags);
        }

        if let Some(me) = &self.model_exchange_interface {
            render_model_exchange(&mut out, me);
        }

        if let Some(de) = &self.default_experiment {
            out.push_str("\nDefault experiment\n");
            let mut fields: Vec<(&str, String)> = Vec::new();
            let entries = [
                ("start time", de.start_time),
                ("stop time", de.stop_time),
                ("step size", de.step_size),
                ("tolerance", de.tolerance),
            ];
            for (k, v) in entries {
                if let Some(v) = v {
                    fields.push((k, format_f64(v)));
                }
            }
            if fields.is_empty() {
                out.push_str("  (empty)\n");
            } else {
                push_fields(&mut out, &fields);
            }
        }

        for group in &self.variables {
            let _ = writeln!(
                out,
                "\n{} ({})",
                capitalise_plural(&group.causality),
                group.variables.len()
            );
            let header = [
                "name",
                "type",
                "vr",
                "unit",
                "start",
                "variability",
                "initial",
                "description",
            ];
            let rows: Vec<[String; 8]> = group
                .variables
                .iter()
                .flat_map(|v| std::iter::once(variable_cells(v)).chain(alias_cells(v)))
                .collect();
            push_table(&mut out, &header, &rows);
        }

        if !self.feedthrough.is_empty() {
            out.push_str("\nFeed-through (inputs each output depends on directly)\n");
            let header = ["output", "depends on"];
            let rows: Vec<[String; 2]> = self
                .feedthrough
                .iter()
                .map(|f| [f.output.clone(), f.text.clone()])
                .collect();
            push_table(&mut out, &header, &rows);
        }

        out.push_str("\nPower-bond candidates\n");
        if self.bond_candidates.is_empty() {
            out.push_str("  none\n");
        } else {
            let header = ["input", "output", "domain", "input is", "evidence", "rank"];
            let rows: Vec<[String; 6]> = self
                .bond_candidates
                .iter()
                .map(|b| {
                    [
                        b.input_name.clone(),
                        b.output_name.clone(),
                        b.domain.to_string(),
                        b.input_role.to_string(),
                        b.evidence
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("+"),
                        if b.alternatives > 1 {
                            format!("{} of {} ({})", b.rank, b.alternatives, b.rank_reason)
                        } else {
                            "-".to_string()
                        },
                    ]
                })
                .collect();
            push_table(&mut out, &header, &rows);
            for b in &self.bond_candidates {
                let _ = writeln!(out, "  * {}", b.explanation);
            }
        }
        out
    }
}

/// How `cosim run` runs the FMU by default (`None`: it cannot).
fn runs_as(md: &ModelDescription) -> Option<RunsAs> {
    let (cs, me) = (md.co_simulation.is_some(), md.model_exchange.is_some());
    let solver = me.then(|| {
        let tolerance = md.default_relative_tolerance();
        DefaultSolver {
            method: "bdf",
            relative_tolerance: tolerance.value,
            relative_tolerance_from: tolerance.origin(),
        }
    });
    let integrated = |s: &DefaultSolver| {
        format!(
            "integrated by cosim's solver (BDF, relative tolerance {}: {})",
            format_tolerance(s.relative_tolerance),
            s.relative_tolerance_from
        )
    };
    let (interface, other, text) = match (cs, &solver) {
        (true, Some(s)) => (
            "co-simulation",
            Some("--interface me"),
            format!(
                "Co-Simulation; `--interface me` (a scenario's interface = \"model-exchange\") runs its Model Exchange interface instead, {}",
                integrated(s)
            ),
        ),
        (true, None) => ("co-simulation", None, "Co-Simulation".to_string()),
        (false, Some(s)) => (
            "model-exchange",
            None,
            format!("Model Exchange, {}", integrated(s)),
        ),
        (false, None) if md.scheduled_execution.is_some() => (
            "scheduled-execution",
            None,
            "Scheduled Execution, its model partitions activated as their Clocks tick".to_string(),
        ),
        (false, None) => return None,
    };
    Some(RunsAs {
        interface,
        other,
        model_exchange_solver: solver,
        text,
    })
}

/// The Model Exchange section of the text: the capabilities an
/// integrator needs, then the continuous states.
fn render_model_exchange(out: &mut String, me: &ModelExchangeReport) {
    let c = &me.capabilities;
    out.push_str("\nModel Exchange\n");
    let mut flags: Vec<(&str, String)> = vec![
        ("modelIdentifier", c.model_identifier.clone()),
        ("continuous states", me.continuous_states.len().to_string()),
        ("event indicators", c.number_of_event_indicators.to_string()),
        (
            "needs completedIntegratorStep",
            yes_no(c.needs_completed_integrator_step),
        ),
        ("get/set state", yes_no(c.can_get_and_set_fmu_state)),
        ("serialize state", yes_no(c.can_serialize_fmu_state)),
        (
            "directional derivatives",
            yes_no(c.provides_directional_derivatives),
        ),
        (
            "only one instance per process",
            yes_no(c.can_be_instantiated_only_once_per_process),
        ),
        ("needs execution tool", yes_no(c.needs_execution_tool)),
    ];
    let extra = [
        ("adjoint derivatives", c.provides_adjoint_derivatives),
        (
            "per-element dependencies",
            c.provides_per_element_dependencies,
        ),
        (
            "evaluate discrete states",
            c.provides_evaluate_discrete_states,
        ),
        ("source files", c.has_source_files),
    ];
    for (k, v) in extra {
        if v {
            flags.push((k, "yes".to_string()));
        }
    }
    push_fields(out, &flags);
    if me.continuous_states.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nContinuous states ({})", me.continuous_states.len());
    let header = ["state", "derivative", "type", "unit", "nominal"];
    let rows: Vec<[String; 5]> = me
        .continuous_states
        .iter()
        .map(|x| {
            [
                x.state.clone(),
                x.derivative.clone(),
                x.var_type.clone(),
                x.unit.clone().unwrap_or_else(|| "-".to_string()),
                if x.nominal_declared {
                    format_f64(x.nominal)
                } else {
                    format!("{} (default)", format_f64(x.nominal))
                },
            ]
        })
        .collect();
    push_table(out, &header, &rows);
}

/// The cells of a variable's row in the text table.
fn variable_cells(v: &VariableRow) -> [String; 8] {
    [
        v.name.clone(),
        v.var_type.clone(),
        v.value_reference.to_string(),
        v.unit.clone().unwrap_or_else(|| "-".to_string()),
        v.start.clone().unwrap_or_else(|| "-".to_string()),
        v.variability.clone(),
        v.initial.clone().unwrap_or_else(|| "-".to_string()),
        v.description.clone().unwrap_or_default(),
    ]
}

/// The rows of a variable's aliases, under its own: the name indented,
/// `alias of <variable>` (with the alias's causality in FMI 2) for the
/// type, the variable's value reference and unit (with the alias's
/// display unit).
fn alias_cells(v: &VariableRow) -> impl Iterator<Item = [String; 8]> + '_ {
    v.aliases.iter().map(move |a| {
        let unit = match (&v.unit, &a.display_unit) {
            (Some(u), Some(d)) if d != u => format!("{u} (display {d})"),
            (Some(u), _) => u.clone(),
            (None, _) => "-".to_string(),
        };
        [
            format!("  {}", a.name),
            match &a.causality {
                Some(c) => format!("alias of {} ({c})", v.name),
                None => format!("alias of {}", v.name),
            },
            v.value_reference.to_string(),
            unit,
            "-".to_string(),
            "-".to_string(),
            "-".to_string(),
            a.description.clone().unwrap_or_default(),
        ]
    })
}

/// The name of type `t` in FMI `version`: FMI 2 calls its types `Real`,
/// `Integer`, `Boolean`, `String` and `Enumeration` (cosim reads them as
/// Float64, Int32, ...); FMI 3 names them as cosim does. What messages
/// about a variable call its type.
pub fn type_name(version: FmiVersion, t: VariableType) -> String {
    match (version, t) {
        (FmiVersion::V2, VariableType::Float64) => "Real".to_string(),
        (FmiVersion::V2, VariableType::Int32) => "Integer".to_string(),
        _ => t.to_string(),
    }
}

fn variable_row(md: &ModelDescription, v: &Variable) -> VariableRow {
    let dims = if v.dimensions.is_empty() {
        String::new()
    } else {
        let parts: Vec<String> = v
            .dimensions
            .iter()
            .map(|d| match d {
                Dimension::Fixed(n) => n.to_string(),
                // The structural parameter by name, with its start value:
                // `n=3`.
                Dimension::Variable(vr) => {
                    match md.variables.iter().find(|p| p.value_reference == *vr) {
                        Some(p) => match &p.start {
                            Some(StartValue::Int(x)) if x.len() == 1 => {
                                format!("{}={}", p.name, x[0])
                            }
                            _ => p.name.clone(),
                        },
                        None => format!("vr{vr}"),
                    }
                }
            })
            .collect();
        format!("[{}]", parts.join(","))
    };
    VariableRow {
        name: v.name.clone(),
        var_type: format!("{}{dims}", type_name(md.fmi_version, v.var_type)),
        value_reference: v.value_reference,
        unit: v.unit.clone(),
        start: v.start.as_ref().map(format_start),
        variability: v.variability.to_string(),
        initial: v.effective_initial().map(|i| {
            match i {
                Initial::Exact => "exact",
                Initial::Approx => "approx",
                Initial::Calculated => "calculated",
            }
            .to_string()
        }),
        description: v.description.clone(),
        aliases: v
            .aliases
            .iter()
            .map(|a| AliasRow {
                name: a.name.clone(),
                description: a.description.clone(),
                display_unit: a.display_unit.clone(),
                causality: a
                    .variable
                    .and_then(|i| md.variables.get(i))
                    .map(|w| w.causality.to_string()),
            })
            .collect(),
    }
}

fn feedthrough_of(md: &ModelDescription, output: usize) -> Feedthrough {
    let entry = md
        .model_structure
        .outputs
        .iter()
        .find(|u| u.variable == output);
    match entry.map(|u| &u.dependencies) {
        None => Feedthrough::AllNotListed,
        Some(Dependencies::All) => Feedthrough::AllNoDependenciesAttribute,
        Some(Dependencies::Listed(_)) => {
            let inputs: Vec<String> = md
                .output_input_dependencies(output)
                .into_iter()
                .filter_map(|i| md.variables.get(i).map(|v| v.name.clone()))
                .collect();
            if inputs.is_empty() {
                Feedthrough::None
            } else {
                Feedthrough::Inputs(inputs)
            }
        }
    }
}

fn format_f64(x: f64) -> String {
    format!("{x}")
}

/// A tolerance as it is usually written: `1e-5`, not `0.00001`.
fn format_tolerance(x: f64) -> String {
    if x != 0.0 && x.abs() < 1e-3 {
        format!("{x:e}")
    } else {
        format_f64(x)
    }
}

fn format_start(s: &StartValue) -> String {
    fn list<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
        const MAX: usize = 8;
        let mut parts: Vec<String> = items.iter().take(MAX).map(f).collect();
        if items.len() > MAX {
            parts.push(format!("... ({} values)", items.len()));
        }
        if items.len() == 1 {
            parts.join("")
        } else {
            format!("[{}]", parts.join(", "))
        }
    }
    match s {
        StartValue::Float(v) => list(v, |x| format_f64(*x)),
        StartValue::Int(v) => list(v, ToString::to_string),
        StartValue::Bool(v) => list(v, ToString::to_string),
        StartValue::String(v) => list(v, |s| format!("{s:?}")),
        StartValue::Binary(v) => list(v, |b| {
            let hex: String = b.iter().take(16).map(|x| format!("{x:02x}")).collect();
            if b.len() > 16 {
                format!("0x{hex}... ({} bytes)", b.len())
            } else {
                format!("0x{hex}")
            }
        }),
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

fn capitalise_plural(causality: &str) -> String {
    match causality {
        "input" => "Inputs",
        "output" => "Outputs",
        "parameter" => "Parameters",
        "structuralParameter" => "Structural parameters",
        "calculatedParameter" => "Calculated parameters",
        "independent" => "Independent variable",
        "local" => "Locals",
        other => other,
    }
    .to_string()
}

/// Width of a string in characters, with control characters replaced.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn push_fields(out: &mut String, fields: &[(&str, String)]) {
    let width = fields
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    for (k, v) in fields {
        let _ = writeln!(
            out,
            "  {:<width$}  {}",
            format!("{k}:"),
            clean(v),
            width = width + 1
        );
    }
}

fn push_table<const N: usize>(out: &mut String, header: &[&str; N], rows: &[[String; N]]) {
    let rows: Vec<[String; N]> = rows
        .iter()
        .map(|r| std::array::from_fn(|i| r.get(i).map(|s| clean(s)).unwrap_or_default()))
        .collect();
    let mut widths = [0usize; N];
    for (i, w) in widths.iter_mut().enumerate() {
        let h = header.get(i).map_or(0, |h| h.chars().count());
        let cells = rows
            .iter()
            .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
            .max()
            .unwrap_or(0);
        *w = h.max(cells);
    }
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::from(" ");
        for (i, c) in cells.iter().enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            if i + 1 == cells.len() {
                let _ = write!(s, " {c}");
            } else {
                let _ = write!(s, " {c:<w$}");
            }
        }
        s.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(header.to_vec()));
    let _ = writeln!(
        out,
        "{}",
        line(
            widths
                .iter()
                .map(|w| "-".repeat(*w))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str)
                .collect()
        )
    );
    for r in &rows {
        let _ = writeln!(out, "{}", line(r.iter().map(String::as_str).collect()));
    }
}
