//! `--scenario FILE`: the user's own scenario files as extra speed
//! benchmarks, run by the same contenders as the built-in ones (the raw
//! loop, cosim on 1 thread and on all cores, libcosim), so that the floor
//! can be measured on any FMUs.
//!
//! The raw loop (and the libcosim peer) reproduce a fixed-step Jacobi run
//! of FMI 2.0 FMUs exchanging `Real` values through connections with a gain
//! and an offset, with scalar `Real` and `Integer` parameters and start
//! values. Anything else in a scenario would make the contenders do
//! different work; [`check`] refuses it with the file and the feature
//! named, before anything is timed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use cosim_fmi::model_description::{FmiVersion, VariableType};
use cosim_scenario::nest::{self, Node};
use cosim_scenario::{Isolation, MasterKind, Overrides, Scheme};

use crate::plan;

/// Macro steps of a `--scenario` benchmark with `--quick`, at most.
pub const QUICK_STEPS: u64 = 20_000;

/// A `--scenario` benchmark.
#[derive(Debug, Clone)]
pub struct Custom {
    /// Id: the file stem.
    pub id: String,
    /// The file (absolute).
    pub path: PathBuf,
    /// Macro steps of a run.
    pub steps: u64,
}

/// Checks the scenario `file` and sizes its runs: `steps` if given, else
/// the scenario's own start to stop time (with `quick`, at most
/// [`QUICK_STEPS`]).
pub fn custom(file: &Path, steps: Option<u64>, quick: bool) -> Result<Custom> {
    let path = std::fs::canonicalize(file)
        .with_context(|| format!("--scenario {}: cannot open it", file.display()))?;
    let id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let own = check(&path)
        .with_context(|| format!("--scenario {}: cannot be benchmarked", file.display()))?;
    let steps = match steps {
        Some(n) => n,
        None if quick => own.min(QUICK_STEPS),
        None => own,
    }
    .max(1);
    Ok(Custom { id, path, steps })
}

/// Refuses what the raw loop cannot reproduce, naming the feature; returns
/// the scenario's own number of macro steps.
pub fn check(path: &Path) -> Result<u64> {
    let scenario = plan::load_scenario(path, &Overrides::default())?;
    let nodes = nest::prepare_nodes(&scenario, None, None).map_err(|e| anyhow::anyhow!("{e}"))?;
    let names = plan::subsystem_names(&scenario);
    for (name, node) in names.iter().zip(&nodes) {
        if matches!(node, Node::Nest(_)) {
            bail!("subsystem {name} is a nested system (the raw loop runs FMUs only)");
        }
    }
    let r = plan::resolve(&scenario, &nodes)?;
    let mds: Vec<&cosim_fmi::ModelDescription> =
        nodes.iter().map(|n| n.model_description()).collect();
    let m = &r.master;
    if m.kind != MasterKind::FixedStep {
        bail!("[master] kind is not \"fixed-step\" (the raw loop is a fixed-step Jacobi loop)");
    }
    if m.scheme != Scheme::Jacobi {
        bail!("[master] scheme is not \"jacobi\" (the raw loop is a fixed-step Jacobi loop)");
    }
    if m.extrapolation != 0 {
        bail!("[master] extrapolation is not 0 (the raw loop holds inputs constant over a step)");
    }
    if r.real_time.is_some() {
        bail!("[simulation] real_time pacing (a timed run must run as fast as it can)");
    }
    if !r.functions.is_empty() || !r.function_connections.is_empty() {
        bail!("[[functions]] blocks (the raw loop only copies outputs to inputs)");
    }
    if !r.inputs.is_empty() {
        bail!("[[inputs]] files (the raw loop feeds inputs only from connections)");
    }
    if !r.events.is_empty() {
        bail!("[[events]] (the raw loop changes no value during the run)");
    }
    for (sub, md) in r.subsystems.iter().zip(&mds) {
        if md.fmi_version != FmiVersion::V2 {
            bail!(
                "subsystem {} is not an FMI 2.0 FMU (the raw loop and libcosim use FMI 2.0)",
                sub.name
            );
        }
        if sub.step_multiple != 1 {
            bail!(
                "subsystem {} has a step_multiple (the raw loop steps every FMU every macro step)",
                sub.name
            );
        }
        if sub.isolation != Isolation::None {
            bail!(
                "subsystem {} has isolation = \"process\" (the raw loop calls every FMU in process)",
                sub.name
            );
        }
    }
    for c in &r.connections {
        for end in [c.from, c.to] {
            let v = &mds[end.subsystem].variables[end.variable];
            if v.var_type != VariableType::Float64 {
                bail!(
                    "connection {}.{} -> {}.{}: {}.{} is not a Real (the raw loop exchanges Reals only)",
                    r.subsystems[c.from.subsystem].name,
                    mds[c.from.subsystem].variables[c.from.variable].name,
                    r.subsystems[c.to.subsystem].name,
                    mds[c.to.subsystem].variables[c.to.variable].name,
                    r.subsystems[end.subsystem].name,
                    v.name
                );
            }
        }
    }
    let steps = ((r.stop - r.start) / m.step).round();
    Ok(if steps >= 1.0 { steps as u64 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario file in a temporary directory, with CGain FMUs.
    fn scenario(dir: &Path, name: &str, extra: &str) -> PathBuf {
        let (fmi2, _) = cosim_cgain::install().unwrap();
        let text = format!(
            r#"
[simulation]
start = 0.0
stop = 0.5
[master]
kind = "fixed-step"
step = 1e-3
{extra}
[[subsystems]]
name = "g1"
fmu = "{fmu}"
parameters = {{ k = 2.0 }}
start = {{ u = 1.5 }}
[[subsystems]]
name = "g2"
fmu = "{fmu}"
[[connections]]
from = "g1.y"
to = "g2.u"
[outputs]
trace = false
energy_log = false
step_log = false
summary = false
"#,
            fmu = fmi2.display(),
        );
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, text).unwrap();
        file
    }

    #[test]
    fn a_plain_scenario_is_accepted_with_its_own_steps() {
        let dir = tempfile::tempdir().unwrap();
        let file = scenario(dir.path(), "mine", "");
        let c = custom(&file, None, false).unwrap();
        assert_eq!(c.id, "mine");
        assert_eq!(c.steps, 500);
        assert_eq!(custom(&file, Some(7), false).unwrap().steps, 7);
        // The raw loop runs it.
        let p = plan::plan(&c.path, 10).unwrap();
        let out = crate::raw::run(&p).unwrap();
        assert_eq!(out.outputs[0], vec![(2, 3.0)]);
    }

    #[test]
    fn what_the_raw_loop_cannot_do_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        for (name, extra, feature) in [
            ("gs", "scheme = \"gauss-seidel\"", "scheme"),
            ("extra", "extrapolation = 1", "extrapolation"),
        ] {
            let file = scenario(dir.path(), name, extra);
            let e = format!("{:#}", custom(&file, None, false).unwrap_err());
            assert!(e.contains(&file.display().to_string()), "{e}");
            assert!(e.contains(feature), "{e}");
        }
        let e = format!(
            "{:#}",
            custom(&dir.path().join("none.toml"), None, false).unwrap_err()
        );
        assert!(e.contains("none.toml"), "{e}");
    }
}
