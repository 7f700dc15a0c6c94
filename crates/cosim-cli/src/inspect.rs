//! `cosim inspect`: a readable (or JSON) summary of an FMU, or of every FMU
//! in a directory; the structure of a scenario (TOML, SSP, OSP): its
//! levels, routes, power bonds and step plan.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cosim_fmi::Fmu;
use cosim_fmi::archive::platform_directories;
use cosim_fmi::inspect::InspectReport;
use cosim_scenario::nest::{Node, prepare_nodes};
use cosim_scenario::{ResolvedScenario, Scenario};

use crate::console::{count, out, say, shown};
use crate::run::Say;

/// Inspects `path`: an `.fmu` file, an unpacked FMU directory, a
/// directory holding `.fmu` files, or a system: a scenario (TOML), an SSP
/// (`.ssp`, `.ssd`) or OSP (`OspSystemStructure.xml`, or a directory
/// holding it) system description, whose structure is printed
/// ([`system`]).
pub fn run(path: &Path, json: bool, quiet: bool) -> Result<()> {
    if is_system(path) {
        if json {
            anyhow::bail!(
                "--json is for FMUs; for a scenario, `cosim inspect` prints its structure as text"
            );
        }
        return system(path, quiet);
    }
    let targets = targets(path)?;
    let mut reports = Vec::new();
    let mut failures = 0;
    for target in &targets {
        match report(target) {
            Ok(r) => reports.push(r),
            Err(e) => {
                failures += 1;
                say!("error: {e:#}");
            }
        }
    }
    if json {
        let text = if reports.len() == 1 && targets.len() == 1 {
            serde_json::to_string_pretty(&reports[0])?
        } else {
            serde_json::to_string_pretty(&reports)?
        };
        out!("{text}\n")?;
    } else {
        for (i, r) in reports.iter().enumerate() {
            let gap = if i > 0 { "\n" } else { "" };
            out!("{gap}{}", r.render_text())?;
        }
    }
    if failures > 0 {
        anyhow::bail!(
            "{failures} of {} could not be inspected",
            count(targets.len(), "FMU", "FMUs")
        );
    }
    Ok(())
}

fn targets(path: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    if meta.is_dir() && !path.join("modelDescription.xml").is_file() {
        let mut fmus: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("{}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("fmu")))
            .collect();
        fmus.sort();
        if fmus.is_empty() {
            anyhow::bail!("{}: no .fmu files in this directory", path.display());
        }
        Ok(fmus)
    } else {
        Ok(vec![path.to_path_buf()])
    }
}

fn report(path: &Path) -> Result<InspectReport> {
    let fmu = Fmu::open(path)?;
    let platforms = platform_directories(fmu.root());
    Ok(InspectReport::new(
        path,
        fmu.model_description(),
        Some(&platforms),
    ))
}

/// True when `path` is a system rather than FMUs: a scenario (`.toml`), an
/// SSP or OSP file, or a directory holding an `OspSystemStructure.xml` or
/// a `SystemStructure.ssd` (and no `modelDescription.xml`: an unpacked FMU).
fn is_system(path: &Path) -> bool {
    let toml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    toml || (!path.join("modelDescription.xml").is_file() && cosim_ssp::is_system_structure(path))
}

/// `cosim inspect` of a system: checked as `cosim check` checks it (its
/// warnings on standard error), then its structure on standard output:
/// every level with its subsystems, routes, power bonds, step plan,
/// feed-through and zero-stability.
fn system(path: &Path, quiet: bool) -> Result<()> {
    let args = crate::run::RunArgs {
        scenario: path.to_path_buf(),
        set: Vec::new(),
        stop: None,
        step: None,
        out: None,
        start: None,
        output_interval: None,
        output_variables: Vec::new(),
        input_file: Vec::new(),
        scenario_file: Vec::new(),
        real_time: None,
        threads: None,
        isolation: None,
        interface: None,
        solver: None,
        relative_tolerance: None,
        log_fmi_calls: None,
        step_timeout: None,
        init_timeout: None,
        no_progress: true,
        check: false,
        plot: false,
    };
    crate::run::checking(&args, |args| {
        let say = if quiet { Say::Nothing } else { Say::Warnings };
        let mut checked = crate::run::check_structure(args, say)?;
        let nodes = nodes_of(path, &checked.resolved);
        let text = structure::render(path, &mut checked, nodes.as_deref());
        out!("{text}")
    })
}

/// The subsystems of `path`'s top level, FMUs opened and nested systems
/// resolved (their masters, what they expose); `None` when they cannot
/// be had again (the check that preceded reported the scenario's errors).
fn nodes_of(path: &Path, resolved: &ResolvedScenario) -> Option<Vec<Node>> {
    let (start, stop) = (Some(resolved.start), Some(resolved.stop));
    if cosim_ssp::is_system_structure(path) {
        // (The import keeps an `.ssp`'s extraction while the FMUs open.)
        let import = cosim_ssp::import(path, &cosim_ssp::ImportOptions::default()).ok()?;
        let scenario = import.scenario().ok()?;
        prepare_nodes(&scenario, start, stop).ok()
    } else {
        let scenario = Scenario::load(path).ok()?;
        prepare_nodes(&scenario, start, stop).ok()
    }
}

/// The text of `cosim inspect` for a system.
mod structure {
    use std::fmt::Write as _;
    use std::path::Path;

    use cosim_core::function::LinkEnd;
    use cosim_core::structure::{algebraic_loops, gauss_seidel_order};
    use cosim_core::text::number;
    use cosim_core::{FunctionKind, System};
    use cosim_fmi::model_description::Causality;
    use cosim_scenario::nest::Node;
    use cosim_scenario::{MasterKind, MasterSettings, ResolvedScenario, Scheme};

    use super::{count, shown};
    use crate::run::Checked;

    /// What every level's text draws on.
    struct Context<'a> {
        checked_report: &'a cosim_scenario::assemble::AssemblyReport,
        stability: &'a [cosim_core::structure::LevelStability],
    }

    /// One level of the system.
    struct Level<'a> {
        /// `top`, or the dotted path of a nested system (`nest`,
        /// `nest.inner`).
        path: String,
        /// This level's scenario, resolved.
        resolved: &'a ResolvedScenario,
        /// Its subsystems, opened (`None`: not known).
        nodes: Option<&'a [Node]>,
        /// For a nested level: the nest as the level above sees it.
        nest: Option<&'a cosim_scenario::nest::NestNode>,
    }

    /// The whole text.
    pub fn render(path: &Path, checked: &mut Checked, nodes: Option<&[Node]>) -> String {
        let Checked {
            resolved,
            system,
            report,
            stability,
        } = checked;
        let context = Context {
            checked_report: report,
            stability,
        };
        let mut levels = Vec::new();
        count_levels(system, &mut levels, "top");
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{}: {}, t = {} .. {} s",
            shown(path).display(),
            count(levels.len(), "level", "levels"),
            number(resolved.start),
            number(resolved.stop)
        );
        let top = Level {
            path: "top".to_string(),
            resolved,
            nodes,
            nest: None,
        };
        level(&mut out, &top, system, &context);
        out
    }

    /// The paths of the levels of `sys`, this one first.
    fn count_levels(sys: &mut System, out: &mut Vec<String>, path: &str) {
        out.push(path.to_string());
        for s in 0..sys.len() {
            let name = sys.subsystems()[s].info().name.clone();
            if let Some(inner) = sys.subsystem_mut(s).as_system() {
                count_levels(inner, out, &name);
            }
        }
    }

    /// A level's text, then its nested levels'.
    fn level(out: &mut String, l: &Level<'_>, sys: &mut System, c: &Context<'_>) {
        let r = l.resolved;
        let names: Vec<String> = r.subsystems.iter().map(|s| s.name.clone()).collect();
        let nested: Vec<usize> = (0..sys.len())
            .filter(|&s| sys.subsystem_mut(s).as_system().is_some())
            .collect();
        let functions = sys.functions().specs().len();
        let links = sys.connections().len() + sys.functions().links().len();
        let mut heading = match l.path.as_str() {
            "top" => "level top".to_string(),
            p => format!("level {p} (nested system '{p}')"),
        };
        let _ = write!(heading, ": {}", count(sys.len(), "subsystem", "subsystems"));
        if !nested.is_empty() {
            let _ = write!(
                heading,
                " ({})",
                count(nested.len(), "nested system", "nested systems")
            );
        }
        if functions > 0 {
            let _ = write!(heading, ", {}", count(functions, "function", "functions"));
        }
        let _ = write!(
            heading,
            ", {}, {}",
            count(links, "connection", "connections"),
            count(sys.bonds().len(), "power bond", "power bonds")
        );
        let _ = writeln!(out, "\n{heading}");

        // Subsystems.
        let _ = writeln!(out, "  subsystems:");
        for (s, name) in names.iter().enumerate() {
            let full = full_name(&l.path, name);
            let what = match l.nodes.and_then(|n| n.get(s)) {
                Some(Node::Nest(_)) => format!("nested system, level {full} below"),
                Some(Node::Fmu(f)) => {
                    let md = f.model_description();
                    format!(
                        "FMU {} ({}, FMI {}), {}",
                        shown(&r.subsystems[s].fmu).display(),
                        md.model_name,
                        md.fmi_version_string,
                        interface(c, &full)
                    )
                }
                None if nested.contains(&s) => format!("nested system, level {full} below"),
                None => format!(
                    "FMU {}, {}",
                    shown(&r.subsystems[s].fmu).display(),
                    interface(c, &full)
                ),
            };
            let _ = writeln!(out, "    {name}: {what}");
        }
        for f in sys.functions().specs() {
            let components = match f.kind {
                FunctionKind::Sum => String::new(),
                FunctionKind::VectorSum => format!(
                    " of {} each",
                    count(f.dimension.max(1), "component", "components")
                ),
            };
            let _ = writeln!(
                out,
                "    {}: function {} of {}{components}",
                f.name,
                kind_name(f.kind),
                count(f.inputs, "input", "inputs"),
            );
        }

        // Routes.
        let routes = routes(sys, &names, l);
        if routes.is_empty() {
            let _ = writeln!(out, "  routes: none");
        } else {
            let _ = writeln!(
                out,
                "  routes (output -> input; a gain or offset as in `input = gain * output + offset`):"
            );
            for route in routes {
                let _ = writeln!(out, "    {route}");
            }
        }

        // Power bonds.
        let bonds = bonds(sys, &names, l, c);
        if bonds.is_empty() {
            let _ = writeln!(out, "  power bonds: none");
        } else {
            let _ = writeln!(out, "  power bonds:");
            for b in bonds {
                let _ = writeln!(out, "    {b}");
            }
        }

        // The step plan.
        let _ = writeln!(out, "  step plan:");
        let inner: Vec<(usize, &MasterSettings, String)> = l
            .nodes
            .map(|nodes| {
                nodes
                    .iter()
                    .enumerate()
                    .filter_map(|(s, n)| match n {
                        Node::Nest(nest) => Some((
                            s,
                            &nest.resolved.master,
                            full_name(&l.path, names.get(s).map_or("?", String::as_str)),
                        )),
                        Node::Fmu(_) => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        for line in plan(&r.master, sys, &names, &nested, &inner) {
            let _ = writeln!(out, "    {line}");
        }

        // Structure.
        let infos: Vec<_> = sys.subsystems().iter().map(|s| s.info()).collect();
        let feedthrough = feedthrough(&infos, &names);
        if feedthrough.is_empty() {
            let _ = writeln!(out, "  feed-through: none");
        } else {
            let _ = writeln!(out, "  feed-through:");
            for f in feedthrough {
                let _ = writeln!(out, "    {f}");
            }
        }
        let loops = algebraic_loops(&infos, sys.couplings());
        if loops.is_empty() {
            let _ = writeln!(out, "  algebraic loops: none");
        } else {
            let _ = writeln!(out, "  algebraic loops:");
            for lp in loops {
                let _ = writeln!(out, "    {lp}");
            }
        }
        for z in c.stability.iter().filter(|z| z.level == l.path) {
            let _ = writeln!(out, "  zero-stability: {}", z.explanation);
        }

        // The levels below.
        for s in nested {
            let name = sys.subsystems()[s].info().name.clone();
            let node = l.nodes.and_then(|n| n.get(s));
            let Some(Node::Nest(nest)) = node else {
                // (Without the nodes, a nested level's settings are not
                // known: its structure alone.)
                if let Some(inner) = sys.subsystem_mut(s).as_system() {
                    let _ = writeln!(
                        out,
                        "\nlevel {name} (nested system '{name}'): {}, {}",
                        count(inner.len(), "subsystem", "subsystems"),
                        count(inner.connections().len(), "connection", "connections")
                    );
                }
                continue;
            };
            if let Some(inner) = sys.subsystem_mut(s).as_system() {
                let below = Level {
                    path: name,
                    resolved: &nest.resolved,
                    nodes: Some(&nest.nodes),
                    nest: Some(nest),
                };
                level(out, &below, inner, c);
            }
        }
    }

    /// A function's kind as the scenario names it.
    fn kind_name(kind: FunctionKind) -> &'static str {
        match kind {
            FunctionKind::Sum => "sum",
            FunctionKind::VectorSum => "vector-sum",
        }
    }

    /// `name` of a subsystem of level `path`, as the levels above name it.
    fn full_name(path: &str, name: &str) -> String {
        if path == "top" {
            name.to_string()
        } else {
            format!("{path}.{name}")
        }
    }

    /// The interface an FMU subsystem runs (`cosim check`'s `interfaces:`
    /// lines name those whose FMU has Model Exchange; the others have
    /// Co-Simulation only).
    fn interface(c: &Context<'_>, full: &str) -> String {
        let prefix = format!("{full}: ");
        c.checked_report
            .interfaces
            .iter()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or("Co-Simulation")
            .to_string()
    }

    /// ` (gain 2, offset 1, signal)`, or nothing for a plain copy.
    fn mapping(gain: f64, offset: f64, signal: bool) -> String {
        let mut parts = Vec::new();
        if gain != 1.0 {
            parts.push(format!("gain {}", number(gain)));
        }
        if offset != 0.0 {
            parts.push(format!("offset {}", number(offset)));
        }
        if signal {
            parts.push("signal".to_string());
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        }
    }

    /// Every route of a level: each subsystem input fed by a subsystem
    /// output, directly or through functions, with the gains on the way;
    /// inputs fed from an input file; for a nested level, what crosses
    /// its boundary.
    fn routes(sys: &System, names: &[String], l: &Level<'_>) -> Vec<String> {
        let infos: Vec<_> = sys.subsystems().iter().map(|s| s.info()).collect();
        let output = |s: usize, slot: usize| {
            format!(
                "{}.{}",
                names.get(s).map_or("?", String::as_str),
                infos[s].observed.get(slot).map_or("?", |p| p.name.as_str())
            )
        };
        let input = |s: usize, slot: usize| {
            format!(
                "{}.{}",
                names.get(s).map_or("?", String::as_str),
                infos[s].inputs.get(slot).map_or("?", |p| p.name.as_str())
            )
        };
        let mut out = Vec::new();
        if let Some(nest) = l.nest {
            for v in nest
                .md
                .variables
                .iter()
                .filter(|v| v.causality == Causality::Input)
            {
                out.push(format!("(from the level above) -> {}", v.name));
            }
        }
        for c in sys.connections() {
            out.push(format!(
                "{} -> {}{}",
                output(c.from_subsystem, c.from_slot),
                input(c.to_subsystem, c.to_slot),
                mapping(c.gain, c.offset, c.signal)
            ));
        }
        let functions = sys.functions();
        let specs = functions.specs();
        // A function output as a source: its inputs, the function.
        fn source(
            end: &LinkEnd,
            specs: &[cosim_core::FunctionSpec],
            links: &[cosim_core::FunctionLink],
            output: &dyn Fn(usize, usize) -> String,
            depth: usize,
        ) -> String {
            match *end {
                LinkEnd::Slot { subsystem, slot } => output(subsystem, slot),
                LinkEnd::Port { function, port } => {
                    let Some(spec) = specs.get(function) else {
                        return "?".to_string();
                    };
                    let d = spec.dimension.max(1);
                    let j = port % d;
                    let terms: Vec<String> = links
                        .iter()
                        .filter(|k| {
                            matches!(k.to, LinkEnd::Port { function: f, port: q }
                                if f == function && q % d == j && !spec.is_output(q))
                        })
                        .map(|k| {
                            let inner = if depth < 8 {
                                source(&k.from, specs, links, output, depth + 1)
                            } else {
                                "...".to_string()
                            };
                            format!("{inner}{}", mapping(k.gain, k.offset, k.signal))
                        })
                        .collect();
                    let text = format!(
                        "{} -> {}.{} ({})",
                        if terms.is_empty() {
                            "(nothing)".to_string()
                        } else {
                            terms.join(", ")
                        },
                        spec.name,
                        spec.port_name(port),
                        kind_name(spec.kind)
                    );
                    if depth > 0 { format!("[{text}]") } else { text }
                }
            }
        }
        let links = functions.links();
        for k in links {
            if let LinkEnd::Slot { subsystem, slot } = k.to {
                out.push(format!(
                    "{} -> {}{}",
                    source(&k.from, specs, links, &output, 0),
                    input(subsystem, slot),
                    mapping(k.gain, k.offset, k.signal)
                ));
            }
        }
        // Function outputs that feed no subsystem (traced only).
        for (f, spec) in specs.iter().enumerate() {
            for port in (0..spec.n_ports()).filter(|&p| spec.is_output(p)) {
                let used = links.iter().any(|k| {
                    matches!(k.from, LinkEnd::Port { function, port: q } if function == f && q == port)
                });
                if !used {
                    out.push(source(
                        &LinkEnd::Port { function: f, port },
                        specs,
                        links,
                        &output,
                        0,
                    ));
                }
            }
        }
        for file in &l.resolved.inputs {
            for feed in &file.feeds {
                let name = l
                    .nodes
                    .and_then(|n| n.get(feed.input.subsystem))
                    .and_then(|n| n.model_description().variables.get(feed.input.variable))
                    .map_or("?", |v| v.name.as_str());
                out.push(format!(
                    "{} column '{}' -> {}.{name}{}",
                    shown(&file.file).display(),
                    feed.column_name,
                    names.get(feed.input.subsystem).map_or("?", String::as_str),
                    if feed.discrete { " (held)" } else { "" }
                ));
            }
        }
        for e in &l.resolved.events {
            out.push(format!("event: {}", e.description));
        }
        if let Some(nest) = l.nest {
            for v in nest
                .md
                .variables
                .iter()
                .filter(|v| v.causality == Causality::Output)
            {
                out.push(format!("{} -> (the level above)", v.name));
            }
        }
        out
    }

    /// The outputs of a level's subsystems that depend directly on their
    /// inputs (within a step), and on which.
    fn feedthrough(infos: &[&cosim_core::SubsystemInfo], names: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for (info, name) in infos.iter().zip(names) {
            for (o, deps) in info.feedthrough.iter().enumerate() {
                if deps.is_empty() {
                    continue;
                }
                let inputs: Vec<String> = deps
                    .iter()
                    .filter_map(|&i| info.inputs.get(i).map(|p| format!("{name}.{}", p.name)))
                    .collect();
                out.push(format!(
                    "{name}.{} depends directly on {}",
                    info.observed.get(o).map_or("?", |p| p.name.as_str()),
                    inputs.join(", ")
                ));
            }
        }
        out
    }

    /// The power bonds of a level: the top level's as assembly explained
    /// them, a nested level's from its ports.
    fn bonds(sys: &System, names: &[String], l: &Level<'_>, c: &Context<'_>) -> Vec<String> {
        if l.path == "top" {
            return c
                .checked_report
                .bonds
                .iter()
                .map(|b| {
                    let how = match b.source {
                        cosim_scenario::assemble::BondSource::Declared => "declared",
                        cosim_scenario::assemble::BondSource::Discovered => "discovered",
                    };
                    format!("{} ({how}): {}", b.name, b.explanation)
                })
                .collect();
        }
        let infos: Vec<_> = sys.subsystems().iter().map(|s| s.info()).collect();
        let named = |name: &str, p: Option<&cosim_core::subsystem::Port>| match p {
            Some(p) => match &p.unit {
                Some(u) => format!("{name}.{} [{u}]", p.name),
                None => format!("{name}.{}", p.name),
            },
            None => format!("{name}.?"),
        };
        let port = |p: &cosim_core::BondPort| {
            let name = names.get(p.subsystem).map_or("?", String::as_str);
            let info = infos[p.subsystem];
            format!(
                "{} / {}",
                named(name, info.inputs.get(p.input)),
                named(name, info.observed.get(p.output))
            )
        };
        sys.bonds()
            .iter()
            .map(|b| {
                let how = if l.resolved.bonds.iter().any(|d| d.name == b.name) {
                    "declared"
                } else {
                    "discovered"
                };
                format!(
                    "{} ({how}): {} <-> {}",
                    b.name,
                    port(&b.ports[0]),
                    port(&b.ports[1])
                )
            })
            .collect()
    }

    /// `2nd`, `3rd`, `4th`, `11th`, `21st`.
    fn ordinal(k: u32) -> String {
        let suffix = match (k % 10, k % 100) {
            (_, 11..=13) => "th",
            (1, _) => "st",
            (2, _) => "nd",
            (3, _) => "rd",
            _ => "th",
        };
        format!("{k}{suffix}")
    }

    /// The step plan of a level: its master and step, the order in which
    /// its subsystems step and what their inputs are over a step, and how
    /// often each steps.
    fn plan(
        m: &MasterSettings,
        sys: &System,
        names: &[String],
        nested: &[usize],
        inner: &[(usize, &MasterSettings, String)],
    ) -> Vec<String> {
        let h = number(m.step);
        let c = &m.controller;
        let mut out = vec![match m.kind {
            MasterKind::FixedStep => format!("master fixed-step: macro step {h} s"),
            MasterKind::Ecco | MasterKind::PredictorCorrector | MasterKind::Nepce => format!(
                "master {}: adaptive macro step from {h} s, between {} and {} s",
                m.kind,
                number(c.dt_min),
                number(c.dt_max)
            ),
            MasterKind::Richardson => format!(
                "master richardson: adaptive macro step from {h} s, between {} and {} s, each step checked by Richardson extrapolation and taken again when rejected (at most {})",
                number(c.dt_min),
                number(c.dt_max),
                count(m.max_rejections as usize, "rejection", "rejections")
            ),
            MasterKind::Ifosmondi | MasterKind::IterativeAffine => format!(
                "master {}: macro step {h} s, each iterated to a fixed point of the inputs (at most {}, then halved, down to {} s)",
                m.kind,
                count(m.max_iterations as usize, "iteration", "iterations"),
                number(c.dt_min)
            ),
            MasterKind::StronglyCoupled => format!(
                "master strongly-coupled: the Model Exchange interfaces of every FMU integrated as one ODE, communication step {h} s"
            ),
        }];
        let n = sys.len();
        match (m.kind, m.scheme) {
            (MasterKind::StronglyCoupled, _) => {}
            (_, Scheme::Jacobi) => out.push(
                "order: Jacobi: every subsystem steps at once, from the outputs of the step before"
                    .to_string(),
            ),
            (_, Scheme::GaussSeidel) => {
                let (order, how) = match &m.order {
                    Some(o) => (o.clone(), "as `order` gives it"),
                    None => {
                        let infos: Vec<_> = sys.subsystems().iter().map(|s| s.info()).collect();
                        (
                            gauss_seidel_order(&infos, sys.couplings()),
                            "derived from the connections: producers first",
                        )
                    }
                };
                let order: Vec<&str> = order
                    .iter()
                    .map(|&s| names.get(s).map_or("?", String::as_str))
                    .collect();
                out.push(format!(
                    "order: Gauss-Seidel: {}, one after the other, each from the newest outputs ({how})",
                    order.join(", ")
                ));
            }
        }
        match m.kind {
            MasterKind::StronglyCoupled => {}
            MasterKind::Ifosmondi => out.push(
                "inputs: C1 Hermite interpolation over the step, from the iteration before"
                    .to_string(),
            ),
            MasterKind::IterativeAffine => out.push(
                "inputs: affine interpolation over the step, from the iteration before".to_string(),
            ),
            _ => out.push(format!(
                "inputs: extrapolated with order {}{}",
                m.extrapolation,
                match m.extrapolation {
                    0 => " (held over the step)",
                    1 => " (linear)",
                    _ => " (quadratic)",
                }
            )),
        }
        let multiples = sys.step_multiples();
        for (s, name) in names.iter().enumerate().take(n) {
            let k = multiples.get(s).copied().unwrap_or(1).max(1);
            let mut line = if k == 1 {
                format!("{name}: every macro step")
            } else {
                format!(
                    "{name}: every {} macro step (step {} s)",
                    ordinal(k),
                    number(f64::from(k) * m.step)
                )
            };
            if let Some((_, i, level)) = inner.iter().find(|(n, _, _)| *n == s) {
                let outer = f64::from(k) * m.step;
                let steps = outer / i.step;
                if m.kind == MasterKind::FixedStep
                    && i.kind == MasterKind::FixedStep
                    && (steps - steps.round()).abs() <= 1e-9 * steps.max(1.0)
                {
                    let _ = write!(
                        line,
                        ", in {} of {} s of its own master (level {level})",
                        count(steps.round() as usize, "step", "steps"),
                        number(i.step),
                    );
                } else {
                    let _ = write!(line, ", by its own master {} (level {level})", i.kind,);
                }
            } else if nested.contains(&s) {
                line.push_str(", by its own master");
            }
            out.push(line);
        }
        out
    }
}
