//! A benchmark scenario reduced to what every contender needs: the FMU
//! files with their parameters, the connections as value references, the
//! step and the number of steps. Derived from the scenario TOML through
//! `cosim-scenario` (so every contender runs exactly what `cosim` runs),
//! and handed to the raw loop and, as JSON, to the libcosim peer.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use cosim_fmi::model_description::{Causality, FmiVersion, StartValue, VariableType};
use cosim_scenario::{Assignment, MasterKind, Overrides, ResolvedScenario, Scenario, Scheme, nest};
use serde::Serialize;

/// A value given to a variable before initialization.
#[derive(Debug, Clone, Serialize)]
pub struct Value {
    /// Variable name (the libcosim peer's OSP file uses names).
    pub name: String,
    /// Value reference.
    pub vr: u32,
    /// `"real"` or `"integer"`.
    pub kind: &'static str,
    /// The value (an integer is a whole number).
    pub value: f64,
}

/// One FMU instance.
#[derive(Debug, Clone, Serialize)]
pub struct PlanFmu {
    /// Instance name.
    pub name: String,
    /// The `.fmu` file (absolute).
    pub path: PathBuf,
    /// FMI 2 `guid`.
    pub guid: String,
    /// `modelIdentifier` (the shared library's name).
    pub model_identifier: String,
    /// Parameters and start values, in the scenario's order.
    pub values: Vec<Value>,
}

/// `to = gain * from + offset`.
#[derive(Debug, Clone, Serialize)]
pub struct PlanConnection {
    /// Source FMU index.
    pub from_fmu: usize,
    /// Source output value reference.
    pub from_vr: u32,
    /// Source output name.
    pub from_name: String,
    /// Destination FMU index.
    pub to_fmu: usize,
    /// Destination input value reference.
    pub to_vr: u32,
    /// Destination input name.
    pub to_name: String,
    /// Gain.
    pub gain: f64,
    /// Offset.
    pub offset: f64,
}

/// A fixed-step Jacobi co-simulation, ready for any contender.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Scenario id (file stem).
    pub name: String,
    /// Start time, s.
    pub start: f64,
    /// Macro step, s.
    pub step: f64,
    /// Number of macro steps.
    pub steps: u64,
    /// The FMU instances.
    pub fmus: Vec<PlanFmu>,
    /// The connections.
    pub connections: Vec<PlanConnection>,
}

/// The stop-time override that makes a scenario run `steps` macro steps.
pub fn overrides_for(start: f64, step: f64, steps: u64) -> Overrides {
    Overrides {
        stop: Some(start + steps as f64 * step),
        ..Overrides::default()
    }
}

/// Loads a scenario file and applies `overrides`.
pub fn load_scenario(path: &Path, overrides: &Overrides) -> Result<Scenario> {
    let mut scenario = Scenario::load(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    scenario
        .apply_overrides(overrides)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(scenario)
}

/// The names of `scenario`'s subsystems, in order.
pub fn subsystem_names(scenario: &Scenario) -> Vec<String> {
    scenario
        .subsystems()
        .iter()
        .map(|s| s.name.value.clone())
        .collect()
}

/// Resolves `scenario` against the model descriptions of its prepared
/// `nodes` (its connections, bonds and master, checked).
pub fn resolve(scenario: &Scenario, nodes: &[nest::Node]) -> Result<ResolvedScenario> {
    let names = subsystem_names(scenario);
    let models: Vec<(&str, &cosim_fmi::ModelDescription)> = names
        .iter()
        .zip(nodes)
        .map(|(n, node)| (n.as_str(), node.model_description()))
        .collect();
    scenario
        .resolve(&models)
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Reduces a benchmark scenario to a [`Plan`] of `steps` macro steps.
/// Refuses what the raw loop and the peer cannot reproduce: another master
/// than fixed-step Jacobi, step multiples, nested systems, FMI 3 FMUs,
/// input extrapolation.
pub fn plan(path: &Path, steps: u64) -> Result<Plan> {
    let scenario = load_scenario(path, &Overrides::default())?;
    let nodes = nest::prepare_nodes(&scenario, None, None).map_err(|e| anyhow::anyhow!("{e}"))?;
    let resolved = resolve(&scenario, &nodes)?;
    let mds: Vec<&cosim_fmi::ModelDescription> =
        nodes.iter().map(|n| n.model_description()).collect();
    let m = &resolved.master;
    if m.kind != MasterKind::FixedStep || m.scheme != Scheme::Jacobi || m.extrapolation != 0 {
        bail!(
            "{}: benchmark scenarios use the fixed-step Jacobi master with extrapolation 0",
            path.display()
        );
    }
    let mut fmus = Vec::new();
    for (sub, md) in resolved.subsystems.iter().zip(&mds) {
        if sub.step_multiple != 1 {
            bail!(
                "{}: subsystem {} has a step multiple",
                path.display(),
                sub.name
            );
        }
        if md.fmi_version != FmiVersion::V2 {
            bail!(
                "{}: subsystem {} is not an FMI 2.0 FMU (libcosim and the raw loop use FMI 2.0)",
                path.display(),
                sub.name
            );
        }
        let cs = md
            .co_simulation
            .as_ref()
            .with_context(|| format!("{}: no co-simulation interface", sub.fmu.display()))?;
        let values = sub
            .parameters
            .iter()
            .chain(&sub.start_values)
            .map(|a| value(md, a))
            .collect::<Result<Vec<_>>>()
            .with_context(|| format!("subsystem {}", sub.name))?;
        fmus.push(PlanFmu {
            name: sub.name.clone(),
            path: sub.fmu.clone(),
            guid: md.instantiation_token.clone(),
            model_identifier: cs.model_identifier.clone(),
            values,
        });
    }
    let connections = resolved
        .connections
        .iter()
        .map(|c| {
            let from = &mds[c.from.subsystem].variables[c.from.variable];
            let to = &mds[c.to.subsystem].variables[c.to.variable];
            debug_assert_eq!(from.causality, Causality::Output);
            PlanConnection {
                from_fmu: c.from.subsystem,
                from_vr: from.value_reference,
                from_name: from.name.clone(),
                to_fmu: c.to.subsystem,
                to_vr: to.value_reference,
                to_name: to.name.clone(),
                gain: c.gain,
                offset: c.offset,
            }
        })
        .collect();
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Plan {
        name,
        start: resolved.start,
        step: m.step,
        steps,
        fmus,
        connections,
    })
}

fn value(md: &cosim_fmi::ModelDescription, a: &Assignment) -> Result<Value> {
    let v = &md.variables[a.variable];
    let (kind, value) = match (&a.value, v.var_type) {
        (StartValue::Float(x), VariableType::Float64 | VariableType::Float32) if x.len() == 1 => {
            ("real", x[0])
        }
        (StartValue::Int(x), VariableType::Int32) if x.len() == 1 => ("integer", x[0] as f64),
        _ => bail!(
            "{}: only scalar Real and Integer values are supported",
            v.name
        ),
    };
    Ok(Value {
        name: v.name.clone(),
        vr: v.value_reference,
        kind,
        value,
    })
}
