//! A system on its own as one subsystem with exposed ports: what an FMU
//! made by `cosim export` runs inside (`docs/export.md`).
//!
//! The system is a scenario file. It is presented as a nested system of a
//! level of its own, which nothing else is part of: its `exposes` are the
//! exported FMU's inputs and outputs (the synthetic model description of
//! [`crate::nest`], so an exported system is exactly what the same file
//! nested in a scenario would be), and parameters of its subsystems that
//! the export names become the exported FMU's parameters, set in the
//! system's own scenario as `--set` sets them before it is assembled.

use std::path::{Path, PathBuf};

use cosim_core::Subsystem;
use cosim_fmi::model_description::{Causality, ModelDescription, StartValue, Variable};

use crate::assemble::{AssembleError, Layout, Level, nested};
use crate::nest::{NestNode, Node, prepare_nodes};
use crate::{Overrides, Scenario, ScenarioError};

/// What is exported: the system and the variables the exported FMU shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportSpec {
    /// The system's scenario file.
    pub system: PathBuf,
    /// The name of the exported model (`modelName`, the nest's name inside).
    pub name: String,
    /// `<subsystem>.<variable>`: inputs fed from outside (nothing may feed
    /// them inside) and outputs, in the exported FMU's order.
    pub exposes: Vec<String>,
    /// `<subsystem>.<parameter>`: parameters of the system's subsystems the
    /// importer may set (before initialization).
    pub parameters: Vec<String>,
}

/// A parameter of an inner subsystem, exposed.
#[derive(Debug, Clone)]
pub struct ExposedParameter {
    /// `<subsystem>.<parameter>`.
    pub name: String,
    /// The inner variable (its type, unit, range, description).
    pub variable: Variable,
    /// Its value in the system: the scenario's, else the FMU's start.
    pub start: Option<f64>,
}

/// The exported system as the importer sees it.
#[derive(Debug, Clone)]
pub struct Exported {
    /// The nest's synthetic model description: the exposed variables first
    /// (in [`ExportSpec::exposes`] order), then every inner output and local
    /// (not exported).
    pub md: ModelDescription,
    /// How many of `md`'s variables are exposed.
    pub n_exposed: usize,
    /// The exposed parameters, in [`ExportSpec::parameters`] order.
    pub parameters: Vec<ExposedParameter>,
    /// The system's start and stop time, and the step of its master.
    pub experiment: (f64, f64, f64),
    /// Whether every inner FMU can save and restore its state.
    pub can_save_state: bool,
    /// Whether a subsystem of some level runs in a host process
    /// (`isolation = "process"`): the FMU then needs the host program.
    pub uses_isolation: bool,
    /// The system's warnings (its files', its resolution's), as `cosim
    /// check` gives them; not the one about its `[outputs]`, which an
    /// exported system leaves out on purpose.
    pub warnings: Vec<ScenarioError>,
}

/// What an exported FMU's run asks of the system beyond its parameters.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Where the power bonds log their energy (`energy.<instance>.csv`).
    pub energy_dir: Option<PathBuf>,
    /// The FMI call log of every inner FMU (docs/fmi-call-log.md), appended
    /// to this file.
    pub call_log: Option<PathBuf>,
    /// The name the system runs under (the importer's instance name): its
    /// inner instances are `<instance>.<subsystem>`, its energy log
    /// `energy.<instance>.csv`; the model's name when `None`.
    pub instance: Option<String>,
}

impl Exported {
    /// The exposed variables of `md`.
    pub fn exposed(&self) -> &[Variable] {
        &self.md.variables[..self.n_exposed]
    }
}

/// The variables a system exposes when the export names none: every input
/// of its subsystems that nothing feeds inside, then every output, as
/// `<subsystem>.<variable>`, scalar numeric and Boolean only.
pub fn default_exposes(system: &Path) -> Result<Vec<String>, AssembleError> {
    let scenario = Scenario::load(system)?;
    let nodes = prepare_nodes(&scenario, None, None)?;
    let names: Vec<String> = scenario
        .subsystems()
        .iter()
        .map(|s| s.name.value.clone())
        .collect();
    let models: Vec<(&str, &ModelDescription)> = names
        .iter()
        .zip(&nodes)
        .map(|(n, node)| (n.as_str(), node.model_description()))
        .collect();
    let resolved = scenario.resolve(&models)?;
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for (s, (name, md)) in models.iter().enumerate() {
        for (v, var) in md.variables.iter().enumerate() {
            let slot = cosim_core::subsystem::is_slot_type(var.var_type) && var.is_scalar();
            match var.causality {
                Causality::Input if slot && !crate::nest::fed_inside(&resolved, s, v) => {
                    inputs.push(format!("{name}.{}", var.name));
                }
                Causality::Output if slot => outputs.push(format!("{name}.{}", var.name)),
                _ => {}
            }
        }
    }
    inputs.extend(outputs);
    Ok(inputs)
}

/// The exported system, described without instantiating anything.
pub fn describe(spec: &ExportSpec) -> Result<Exported, AssembleError> {
    let (wrapper, nodes) = wrapped(spec, &[], None)?;
    let Some(Node::Nest(nest)) = nodes.first() else {
        return Err(internal(spec));
    };
    let parameters = exposed_parameters(spec, nest)?;
    let inner = &nest.resolved;
    let all_cs = nest.nodes.iter().all(|n| {
        n.model_description()
            .co_simulation
            .as_ref()
            .is_some_and(|c| c.can_get_and_set_fmu_state)
    });
    let mut md = nest.md.clone();
    // An exposed input starts at the value the system gives it, which the
    // importer sets before initialization as the declared start.
    for (k, var) in md.variables[..spec.exposes.len()].iter_mut().enumerate() {
        let (s, v) = nest.map[k];
        if var.causality == Causality::Input
            && let Some(a) = inner.subsystems[s]
                .start_values
                .iter()
                .find(|a| a.variable == v)
        {
            var.start = Some(a.value.clone());
        }
    }
    md.description = Some(format!(
        "co-simulation '{}' exported by cosim ({}, master {})",
        spec.name,
        cosim_core::text::count(inner.subsystems.len(), "subsystem", "subsystems"),
        inner.master.kind
    ));
    Ok(Exported {
        n_exposed: spec.exposes.len(),
        md,
        parameters,
        experiment: (inner.start, inner.stop, inner.master.step),
        can_save_state: all_cs,
        uses_isolation: isolated(nest),
        warnings: system_warnings(spec, &wrapper, inner),
    })
}

/// The warnings of the system, each once: those of its files, and of its
/// resolution without the inputs it exposes (fed from outside) and the
/// one about its `[outputs]` (left out on purpose).
fn system_warnings(
    spec: &ExportSpec,
    wrapper: &Scenario,
    inner: &crate::ResolvedScenario,
) -> Vec<ScenarioError> {
    let mut out: Vec<ScenarioError> = Vec::new();
    for w in wrapper.warnings().iter().chain(&inner.warnings) {
        if w.message.starts_with("[outputs] of nested system") {
            continue;
        }
        let Some(w) = without_exposed_inputs(spec, w) else {
            continue;
        };
        if !out
            .iter()
            .any(|o| (&o.file, o.line, &o.message) == (&w.file, w.line, &w.message))
        {
            out.push(w);
        }
    }
    out
}

/// Warning `w`, or, if it lists inputs of a subsystem that nothing feeds
/// (`input(s) of subsystem 'S' not connected (...): a, b`), without those
/// the system exposes; `None` when it lists nothing else.
fn without_exposed_inputs(spec: &ExportSpec, w: &ScenarioError) -> Option<ScenarioError> {
    let rest = w
        .message
        .strip_prefix("inputs of subsystem '")
        .or_else(|| w.message.strip_prefix("input of subsystem '"));
    let Some((sub, names)) = rest.and_then(|r| r.split_once("' not connected (")) else {
        return Some(w.clone());
    };
    let Some((_, names)) = names.split_once("): ") else {
        return Some(w.clone());
    };
    let left: Vec<&str> = names
        .split(", ")
        .filter(|n| !spec.exposes.iter().any(|e| *e == format!("{sub}.{n}")))
        .collect();
    if left.is_empty() {
        return None;
    }
    let mut w = w.clone();
    let (word, verb) = match left.len() {
        1 => ("input", "keeps its start value"),
        _ => ("inputs", "keep their start values"),
    };
    w.message = format!(
        "{word} of subsystem '{sub}' not connected and not exposed ({verb}): {}",
        left.join(", ")
    );
    Some(w)
}

/// Whether a subsystem of `nest` or of a level below runs isolated.
fn isolated(nest: &NestNode) -> bool {
    nest.resolved
        .subsystems
        .iter()
        .zip(&nest.nodes)
        .any(|(s, node)| match node {
            Node::Fmu(_) => s.isolation == crate::Isolation::Process,
            Node::Nest(inner) => isolated(inner),
        })
}

/// The exported system as one subsystem, instantiated (not initialized):
/// `parameters` gives the value of each [`ExportSpec::parameters`] entry
/// (as a TOML value: `0.5`, `3`, `true`), `t_start` the importer's start
/// time; `options` the energy log and the FMI call log.
pub fn build(
    spec: &ExportSpec,
    parameters: &[String],
    t_start: f64,
    options: &BuildOptions,
) -> Result<Box<dyn Subsystem>, AssembleError> {
    let sets: Vec<String> = spec
        .parameters
        .iter()
        .zip(parameters)
        .map(|(p, v)| format!("{p}={v}"))
        .collect();
    let (wrapper, nodes) = wrapped(spec, &sets, Some(t_start))?;
    let Some(Node::Nest(nest)) = nodes.first() else {
        return Err(internal(spec));
    };
    let models = [(spec.name.as_str(), &nest.md)];
    let resolved = wrapper.resolve(&models)?;
    let exposed = &nest.md.variables[..spec.exposes.len()];
    let of = |c: Causality| -> Vec<usize> {
        (0..exposed.len())
            .filter(|&k| exposed[k].causality == c)
            .collect()
    };
    let (inputs, observed) = (of(Causality::Input), of(Causality::Output));
    let layout = Layout::scalars(inputs, observed);
    let call_log = match &options.call_log {
        Some(path) => Some(
            cosim_fmi::CallLogTarget::File(path.clone())
                .open()
                .map_err(|e| {
                    ScenarioError::argument(
                        &spec.system,
                        "cosim.fmi_call_log",
                        format!("cannot open the FMI call log {}: {e}", path.display()),
                    )
                })?,
        ),
        None => None,
    };
    let level = Level {
        energy_dir: options.energy_dir.clone(),
        call_log,
        ..Level::default()
    };
    let name = options.instance.as_deref().unwrap_or(&spec.name);
    nested(&resolved, 0, nest, &layout, &level, name)
}

/// The exposed parameters of `spec`, checked against the inner level.
fn exposed_parameters(
    spec: &ExportSpec,
    nest: &NestNode,
) -> Result<Vec<ExposedParameter>, AssembleError> {
    let inner = &nest.resolved;
    spec.parameters
        .iter()
        .map(|p| {
            let refuse = |why: String| -> AssembleError {
                ScenarioError::argument(
                    &spec.system,
                    &format!("--parameter {p}"),
                    format!("cannot export parameter '{p}': {why}"),
                )
                .into()
            };
            let (sub, var) = p
                .split_once('.')
                .ok_or_else(|| refuse("it is not '<subsystem>.<parameter>'".into()))?;
            let s = inner
                .subsystems
                .iter()
                .position(|x| x.name == sub)
                .ok_or_else(|| refuse(format!("the system has no subsystem '{sub}'")))?;
            let Node::Fmu(fmu) = &nest.nodes[s] else {
                return Err(refuse(format!(
                    "'{sub}' is a nested system: expose the parameter from its own scenario"
                )));
            };
            let md = fmu.model_description();
            let (v, variable) = md
                .variable_by_name(var)
                .ok_or_else(|| refuse(format!("subsystem '{sub}' has no variable '{var}'")))?;
            if variable.causality != Causality::Parameter
                || !cosim_core::subsystem::is_slot_type(variable.var_type)
                || !variable.is_scalar()
            {
                return Err(refuse(format!(
                    "it is not a scalar numeric or Boolean parameter (causality {}, type {})",
                    variable.causality, variable.var_type
                )));
            }
            let given = inner.subsystems[s]
                .parameters
                .iter()
                .find(|a| a.variable == v)
                .and_then(|a| scalar(&a.value));
            Ok(ExposedParameter {
                name: p.clone(),
                variable: variable.clone(),
                start: given.or_else(|| variable.start.as_ref().and_then(scalar)),
            })
        })
        .collect()
}

/// A scenario of one subsystem, the system nested with the exposes of
/// `spec`, and its nodes; `sets`: `--set` arguments applied to the system.
fn wrapped(
    spec: &ExportSpec,
    sets: &[String],
    t_start: Option<f64>,
) -> Result<(Scenario, Vec<Node>), AssembleError> {
    let system = std::path::absolute(&spec.system).map_err(|e| {
        ScenarioError::argument(&spec.system, "SYSTEM", format!("cannot find it: {e}"))
    })?;
    let dir = system.parent().unwrap_or(Path::new("/"));
    let exposes: Vec<String> = spec.exposes.iter().map(|e| toml_string(e)).collect();
    let text = format!(
        "[simulation]\nstop = 1.0\n\n[master]\nkind = \"fixed-step\"\nstep = 1.0\n\n\
         [[subsystems]]\nname = {}\nsystem = {}\nexposes = [{}]\n",
        toml_string(&spec.name),
        toml_string(&system.to_string_lossy()),
        exposes.join(", ")
    );
    let path = dir.join(format!("(export of {})", spec.name));
    let located = |e: ScenarioError| as_argument(spec, &path, e);
    let mut wrapper = Scenario::from_str(&text, &path).map_err(located)?;
    if let Some(inner) = wrapper.subsystems_mut()[0].system.as_mut() {
        inner.apply_overrides(&Overrides {
            set: sets.to_vec(),
            ..Overrides::default()
        })?;
    }
    let nodes = prepare_nodes(&wrapper, t_start, None).map_err(located)?;
    Ok((wrapper, nodes))
}

/// An error located in the generated scenario of [`wrapped`] (at
/// `wrapper`): about an `exposes` entry, as an error of its `--expose`
/// argument; others as they are.
fn as_argument(spec: &ExportSpec, wrapper: &Path, e: ScenarioError) -> AssembleError {
    if e.file != wrapper {
        return e.into();
    }
    let named = spec
        .exposes
        .iter()
        .find(|x| e.message.contains(&format!("'{x}'")))
        .or_else(|| {
            spec.exposes.iter().find(|x| {
                x.split_once('.').is_some_and(|(s, v)| {
                    e.message.contains(&format!("'{s}'")) || e.message.contains(&format!("'{v}'"))
                })
            })
        });
    let argument = named.map_or_else(|| "--expose".to_string(), |x| format!("--expose {x}"));
    ScenarioError::argument(&spec.system, &argument, e.message.clone())
        .with_help_opt(e.help.clone())
        .into()
}

fn internal(spec: &ExportSpec) -> AssembleError {
    ScenarioError::argument(
        &spec.system,
        "SYSTEM",
        "internal: the system did not become a nested system",
    )
    .into()
}

/// The value of a scalar start value as the slots carry it.
fn scalar(v: &StartValue) -> Option<f64> {
    match v {
        StartValue::Float(x) => x.first().copied(),
        StartValue::Int(x) => x.first().map(|&i| i as f64),
        StartValue::Bool(x) => x.first().map(|&b| f64::from(u8::from(b))),
        StartValue::String(_) | StartValue::Binary(_) => None,
    }
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}
