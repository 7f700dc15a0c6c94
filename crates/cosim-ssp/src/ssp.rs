//! SSP 1.0/2.0 system structure descriptions (`.ssd`, with `.ssv`
//! parameter sets) as a [`Draft`].

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosim_fmi::ModelDescription;
use cosim_fmi::model_description::BaseUnit;
use cosim_fmi::model_description::units::{parse_unit, unit_base_unit};
use cosim_fmi::model_description::{Causality, VariableType};
use cosim_scenario::defaults;

use crate::common::{Ctx, normalise, not_an_integer, parse_bool, parse_f64, resolve_uri, shown};
use crate::draft::{
    Assign, ConnDraft, Draft, RawValue, Skipped, SubDraft, Val, VarRef, scenario_name,
};
use crate::models::{is_parameter, is_source, variable};
use crate::source::{FileId, Severity, Src, did_you_mean};
use crate::xml::{self, Elem};

const FMU_TYPE: &str = "application/x-fmu-sharedlibrary";
const PARAMETER_SET_TYPE: &str = "application/x-ssp-parameter-set";
/// The `type` of libcosim's annotations (namespace
/// `http://opensimulationplatform.com/SSP/OSPAnnotations`, prefix `osp`).
const OSP_ANNOTATION: &str = "com.opensimulationplatform";

/// Where the SSD is, and the `.ssp` it was extracted from.
#[derive(Debug, Clone)]
pub(crate) struct SspInput {
    /// The SSD on disk.
    pub ssd: PathBuf,
    /// `(extraction directory, .ssp file)` for a packaged SSD.
    pub archive: Option<(PathBuf, PathBuf)>,
}

impl SspInput {
    /// The name shown for a file on disk: inside an `.ssp`, the archive
    /// path followed by the entry (`system.ssp/resources/p.ssv`).
    pub(crate) fn display(&self, path: &Path) -> PathBuf {
        if let Some((dir, ssp)) = &self.archive
            && let Ok(rel) = path.strip_prefix(dir)
        {
            return shown(ssp).join(rel);
        }
        shown(path)
    }

    /// Checks that a resolved source stays inside the `.ssp`.
    fn check_inside(&self, path: &Path) -> Result<(), String> {
        if let Some((dir, _)) = &self.archive
            && !normalise(path).starts_with(dir)
        {
            return Err("it resolves outside the .ssp archive".to_string());
        }
        Ok(())
    }
}

/// A connector declared in the SSD.
#[derive(Debug, Clone)]
struct Connector {
    kind: Option<String>,
    unit: Option<(String, Src)>,
}

/// A component mapped to a subsystem.
struct Comp {
    /// Index into `draft.subsystems`.
    sub: usize,
    md: Arc<ModelDescription>,
    connectors: HashMap<String, Connector>,
}

/// A value from a parameter binding.
#[derive(Debug, Clone)]
struct Bound {
    name: String,
    name_src: Src,
    value: RawValue,
    value_src: Src,
    /// Unit of a Real value and its base unit if known.
    unit: Option<(String, Option<BaseUnit>)>,
    /// The `<ssd:ParameterBinding>` it comes from.
    binding_src: Src,
}

/// What an element name of the system refers to.
enum ElemRef {
    Comp(usize),
    /// A nested system: index into [`Level::nests`].
    Nest(usize),
    /// A signal dictionary reference or an unsupported component:
    /// connections to it are reported, not mapped.
    Skipped(String),
}

/// `variable = gain * value + offset` on the way between a connector of a
/// nested system and the variable inside it, with what the scenario needs
/// to know about it.
#[derive(Debug, Clone)]
struct Link {
    gain: f64,
    offset: f64,
    unit_mismatch: bool,
    comment: Option<String>,
    /// Where the transformation or unit conversion is written.
    map_src: Option<Src>,
}

impl Link {
    fn identity() -> Link {
        Link {
            gain: 1.0,
            offset: 0.0,
            unit_mismatch: false,
            comment: None,
            map_src: None,
        }
    }

    fn is_identity(&self) -> bool {
        self.gain == 1.0 && self.offset == 0.0 && !self.unit_mismatch && self.comment.is_none()
    }

    /// `self` applied after `first` (`y = self(first(x))`).
    fn after(&self, first: &Link) -> Link {
        if first.is_identity() {
            return self.clone();
        }
        if self.is_identity() {
            return first.clone();
        }
        let comment = match (&first.comment, &self.comment) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.clone().or_else(|| b.clone()),
        };
        Link {
            gain: self.gain * first.gain,
            offset: self.gain * first.offset + self.offset,
            unit_mismatch: self.unit_mismatch || first.unit_mismatch,
            comment,
            map_src: self.map_src.or(first.map_src),
        }
    }
}

/// Which way data flows through a connector of a nested system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// From outside to inner inputs.
    In,
    /// From an inner output to outside.
    Out,
}

/// An inner variable a connector of a nested system leads to.
#[derive(Debug, Clone)]
struct Target {
    /// Subsystem of the nested system.
    sub: usize,
    /// The component, when `sub` is an FMU.
    comp: Option<usize>,
    /// Through a deeper nested system: its index in [`Level::nests`] and
    /// its connector.
    via: Option<(usize, String)>,
    /// The variable as the nested system names it (`x1`, or
    /// `inner.s2.x1` through a deeper nest).
    var: String,
    /// From the connector to the variable (input) or from the variable to
    /// the connector (output).
    link: Link,
    /// The unit at the variable's end of the inner connection.
    unit: Option<(String, Option<BaseUnit>)>,
}

/// Where a connector of a nested system leads inside it.
#[derive(Debug, Clone)]
struct Route {
    dir: Dir,
    /// Inner inputs it feeds, or the one inner output that feeds it.
    targets: Vec<Target>,
    /// The first inner connection that made the route.
    src: Src,
}

/// One end of a connection, as a variable of the level the connection is
/// in: an FMU variable, or an inner variable of a nested system (`s2.x1`)
/// reached through one of its connectors.
#[derive(Debug, Clone)]
struct Port {
    sub: usize,
    comp: Option<usize>,
    via: Option<(usize, String)>,
    var: String,
    el_src: Src,
    var_src: Src,
    /// The variable was found (FMU), or the route is known (nest).
    known: bool,
    is_input: bool,
    is_source: bool,
    /// The connector's declared `kind`.
    kind: String,
    /// The unit at the connection: the connector's when declared, else
    /// the variable's.
    unit: Option<(String, Option<BaseUnit>)>,
    /// The connector's declared unit and where it is written.
    declared: Option<(String, Src)>,
    /// Inside a nested system, between its connector and the variable.
    inner: Link,
}

/// libcosim's `<osp:FixedStepAlgorithm baseStepSize numWorkerThreads>`.
struct OspAlgorithm {
    step: Val<f64>,
    threads: Option<Val<u32>>,
}

/// A component's `<osp:StepSizeHint value>`.
struct Hint {
    /// The component's subsystem in the level's draft.
    sub: usize,
    /// The component's name in the SSD.
    component: String,
    /// The hint (s), where `value` is written.
    value: Val<f64>,
}

/// A nested system of a level.
struct Nest {
    /// Its subsystem in the level's draft.
    sub: usize,
    level: Box<Level>,
}

/// One `<ssd:System>` being read: the root system or a nested one.
#[derive(Default)]
struct Level {
    /// The `name` of the `<ssd:System>`.
    name: String,
    /// 0 for the root system.
    depth: usize,
    draft: Draft,
    comps: Vec<Comp>,
    nests: Vec<Nest>,
    elements: HashMap<String, ElemRef>,
    element_names: Vec<String>,
    sys_connectors: HashMap<String, Connector>,
    /// Values bound to the system's own connectors.
    sys_values: HashMap<String, Bound>,
    taken: HashSet<String>,
    /// A nested system: where its connectors lead inside.
    routes: HashMap<String, Route>,
    /// A nested system: the inner variables it exposes.
    exposes: Vec<Val<String>>,
    /// The step of an OMSimulator `FixedStepMaster` annotation.
    step: Option<Val<f64>>,
    /// libcosim's `osp:StepSizeHint` of its components.
    hints: Vec<Hint>,
    /// The connections are read (bindings of the level above then go
    /// through the routes).
    connections_done: bool,
}

struct Reader<'a> {
    ctx: &'a mut Ctx,
    input: &'a SspInput,
    file: FileId,
    units: HashMap<String, BaseUnit>,
    /// The system being read.
    lv: Box<Level>,
    /// `--step`: the step of the root system, inherited by nested systems.
    step_override: Option<f64>,
    /// libcosim's `osp:FixedStepAlgorithm` in `<ssd:DefaultExperiment>`.
    osp_algorithm: Option<OspAlgorithm>,
    /// An `osp:FixedStepAlgorithm` whose step is in error: the step size
    /// hints have no base to be judged against.
    osp_algorithm_failed: bool,
}

/// Reads a parsed SSD.
pub(crate) fn read_doc(
    ctx: &mut Ctx,
    input: &SspInput,
    file: FileId,
    root: &Elem,
    step_override: Option<f64>,
) -> Option<Draft> {
    if root.local() != "SystemStructureDescription" {
        ctx.error(
            root.src(file),
            format!(
                "not an SSP system structure description: the root element is <{}>, expected <ssd:SystemStructureDescription>",
                root.name
            ),
        );
        return None;
    }
    let version = root.value("version").unwrap_or("1.0").trim().to_string();
    if !matches!(version.as_str(), "1.0" | "2.0") {
        let src = root.attr_src(file, "version");
        ctx.warn(
            src,
            format!("SSP version '{version}' is neither 1.0 nor 2.0; read as SSP 1.0"),
        );
    }
    let mut r = Reader {
        ctx,
        input,
        file,
        units: HashMap::new(),
        lv: Box::new(Level {
            draft: Draft::new(format!("SSP {version}"), root.src(file)),
            ..Level::default()
        }),
        step_override,
        osp_algorithm: None,
        osp_algorithm_failed: false,
    };
    r.root(root);
    Some(r.finish())
}

const ROOT_CHILDREN: &[&str] = &[
    "System",
    "Enumerations",
    "Units",
    "DefaultExperiment",
    "Annotations",
    "MetaData",
    "Signature",
];
const SYSTEM_CHILDREN: &[&str] = &[
    "Connectors",
    "ElementGeometry",
    "ParameterBindings",
    "Elements",
    "Connections",
    "SignalDictionaries",
    "SystemGeometry",
    "GraphicalElements",
    "Annotations",
];
const COMPONENT_CHILDREN: &[&str] = &[
    "Connectors",
    "ElementGeometry",
    "ParameterBindings",
    "Annotations",
];

impl Reader<'_> {
    fn root(&mut self, root: &Elem) {
        let f = self.file;
        // Units first: connectors and connections refer to them.
        for c in root.children_named("Units") {
            self.units = read_units(self.ctx, f, c);
        }
        let mut system = None;
        for c in &root.children {
            match c.local() {
                "System" => {
                    if system.is_some() {
                        self.ctx
                            .error(c.src(f), "more than one root <ssd:System>".to_string());
                    } else {
                        system = Some(c);
                    }
                }
                "Units" | "Enumerations" => {}
                "DefaultExperiment" => self.default_experiment(c),
                "Annotations" => self.annotations(c, &root.name),
                "MetaData" | "Signature" => {
                    self.ctx
                        .ignored(f, c, "meta data has no effect on a simulation");
                }
                _ => self.ctx.unknown(f, c, &root.name, ROOT_CHILDREN),
            }
        }
        match system {
            Some(s) => self.system(s),
            None => self.ctx.error(
                root.src(f),
                "the system structure description has no <ssd:System>".to_string(),
            ),
        }
    }

    /// The annotations of `<parent>`: ignored (notes), and libcosim's
    /// where it does not read them (warnings).
    fn annotations(&mut self, e: &Elem, parent: &str) {
        let f = self.file;
        for a in &e.children {
            let kind = a.value("type").unwrap_or("?");
            if kind.trim() == OSP_ANNOTATION {
                self.misplaced_osp_annotation(a, &format!("<{parent}>"));
            } else {
                self.ctx.annotation(kind, a.src(f));
            }
        }
    }

    /// A `com.opensimulationplatform` annotation where libcosim does not
    /// read it: a warning when it holds what libcosim reads elsewhere
    /// (`osp:Algorithm`, `osp:StepSizeHint`), else a note like any
    /// annotation.
    fn misplaced_osp_annotation(&mut self, a: &Elem, place: &str) {
        let f = self.file;
        let mut any = false;
        for c in &a.children {
            let (what, help) = match c.local() {
                "Algorithm" => (
                    "<osp:Algorithm> only in <ssd:DefaultExperiment>",
                    "move it to <ssd:DefaultExperiment><ssd:Annotations>",
                ),
                "StepSizeHint" => (
                    "<osp:StepSizeHint> only on an <ssd:Component>",
                    "move it to the <ssd:Annotations> of the component(s)",
                ),
                _ => continue,
            };
            any = true;
            let mut d = self.ctx.sources.diag(
                Severity::Warning,
                c.src(f),
                format!("<{}> in {place} ignored: libcosim reads {what}", c.name),
            );
            d.help = Some(help.to_string());
            self.ctx.diags.push(d);
        }
        if !any {
            let kind = a.value("type").unwrap_or("?");
            self.ctx.annotation(kind, a.src(f));
        }
    }

    fn default_experiment(&mut self, e: &Elem) {
        let f = self.file;
        if let Some(t) = self.ctx.f64_attr(f, e, "startTime") {
            self.lv.draft.start = Some(Val::new(t, e.attr_src(f, "startTime")));
        }
        if let Some(t) = self.ctx.f64_attr(f, e, "stopTime") {
            self.lv.draft.stop = Some(Val::new(t, e.attr_src(f, "stopTime")));
        }
        for c in &e.children {
            match c.local() {
                "Annotations" => self.experiment_annotations(c),
                _ => self.ctx.unknown(f, c, &e.name, &["Annotations"]),
            }
        }
    }

    /// The annotations of `<ssd:DefaultExperiment>`: where libcosim reads
    /// its `<osp:Algorithm><osp:FixedStepAlgorithm baseStepSize
    /// numWorkerThreads/></osp:Algorithm>` (in an annotation of type
    /// `com.opensimulationplatform`); others are ignored (notes).
    fn experiment_annotations(&mut self, e: &Elem) {
        let f = self.file;
        for a in &e.children {
            let kind = a.value("type").unwrap_or("?");
            if kind.trim() != OSP_ANNOTATION {
                self.ctx.annotation(kind, a.src(f));
                continue;
            }
            let mut algorithm = false;
            for c in &a.children {
                if c.local() != "Algorithm" {
                    self.ctx.unknown(f, c, &a.name, &["Algorithm"]);
                    continue;
                }
                algorithm = true;
                if c.children.is_empty() {
                    self.ctx.warn(
                        c.src(f),
                        format!("<{}> names no algorithm: ignored", c.name),
                    );
                }
                for alg in &c.children {
                    if alg.local() == "FixedStepAlgorithm" {
                        self.fixed_step_algorithm(alg);
                    } else {
                        self.unsupported(
                            alg,
                            "libcosim's SSP annotations define only <osp:FixedStepAlgorithm> (libcosim refuses any other algorithm too)",
                        );
                    }
                }
            }
            if !algorithm {
                self.ctx.warn(
                    a.src(f),
                    format!(
                        "annotation of type '{OSP_ANNOTATION}' in <{}> without <osp:Algorithm>: ignored (libcosim refuses to load it)",
                        e.name
                    ),
                );
            }
        }
    }

    /// `<osp:FixedStepAlgorithm baseStepSize numWorkerThreads>`: the step
    /// of the root system's master and its worker threads.
    fn fixed_step_algorithm(&mut self, e: &Elem) {
        let f = self.file;
        self.osp_algorithm_failed = true;
        self.ctx.required(f, e, "baseStepSize");
        let Some(h) = self.ctx.f64_attr(f, e, "baseStepSize") else {
            return;
        };
        let src = e.attr_src(f, "baseStepSize");
        if libcosim_ns(h) <= 0 {
            let why = if h <= 0.0 {
                "must be positive".to_string()
            } else {
                "is below libcosim's time resolution of 1 ns (libcosim truncates it to 0)"
                    .to_string()
            };
            self.ctx.error(
                src,
                format!(
                    "baseStepSize=\"{}\" of <{}> {why}",
                    e.value("baseStepSize").unwrap_or_default(),
                    e.name
                ),
            );
            return;
        }
        let max_threads = u32::try_from(defaults::MAX_THREADS).unwrap_or(u32::MAX);
        let threads = e.attr("numWorkerThreads").and_then(|a| {
            let a_src = Src::new(f, a.start, a.end);
            match a.value.trim().parse::<u32>() {
                Ok(0) => {
                    self.ctx.note(
                        a_src,
                        "numWorkerThreads=\"0\": libcosim then steps every subsystem on the calling thread; threads = 1 (inline)",
                    );
                    Some(Val::new(1, a_src))
                }
                Ok(n) => Some(Val::new(n.min(max_threads), a_src)),
                Err(_) => {
                    self.ctx.warn(
                        a_src,
                        format!(
                            "numWorkerThreads=\"{}\" of <{}> is not a non-negative integer: ignored, as libcosim ignores it (every core is used)",
                            a.value, e.name
                        ),
                    );
                    None
                }
            }
        });
        if let Some(old) = &self.osp_algorithm {
            let line = self.ctx.sources.line(old.step.src);
            self.ctx.warn(
                src,
                format!(
                    "a second <{}> (the first on line {line}): the last one is used, as libcosim does",
                    e.name
                ),
            );
        }
        self.ctx.note(
            src,
            format!(
                "the step of the system is {h} s, from libcosim's osp:FixedStepAlgorithm annotation"
            ),
        );
        self.osp_algorithm = Some(OspAlgorithm {
            step: Val::new(h, src),
            threads,
        });
        self.osp_algorithm_failed = false;
    }

    fn system(&mut self, sys: &Elem) {
        let f = self.file;
        // Elements first (connections and bindings refer to them).
        for c in sys.children_named("Elements") {
            self.elements(c);
        }
        for c in sys.children_named("Connectors") {
            self.lv.sys_connectors = self.connectors(c);
        }
        let mut system_bindings = Vec::new();
        for c in &sys.children {
            match c.local() {
                "Elements" | "Connectors" | "Connections" => {}
                "ParameterBindings" => system_bindings.extend(self.bindings(c)),
                "ElementGeometry" | "SystemGeometry" | "GraphicalElements" => {}
                "SignalDictionaries" => {
                    for d in &c.children {
                        self.unsupported(d, "signal dictionaries are not supported");
                    }
                }
                "Annotations" => self.system_annotations(c, &sys.name),
                _ => self.ctx.unknown(f, c, &sys.name, SYSTEM_CHILDREN),
            }
        }
        // System-level bindings take precedence over the components'.
        self.apply_system_bindings(system_bindings);
        for c in sys.children_named("Connections") {
            self.connections(c);
        }
        self.lv.connections_done = true;
    }

    /// The annotations of a system: OMSimulator's `FixedStepMaster
    /// stepSize` (in `<ssc:Annotation type="org.openmodelica">`) is the
    /// step of the system's master; the rest is ignored (notes).
    fn system_annotations(&mut self, e: &Elem, sys: &str) {
        let f = self.file;
        for a in &e.children {
            let kind = a.value("type").unwrap_or("?");
            if kind.trim() == OSP_ANNOTATION {
                self.misplaced_osp_annotation(a, &format!("<{sys}>"));
                continue;
            }
            if kind.trim() != "org.openmodelica" {
                self.ctx.annotation(kind, a.src(f));
                continue;
            }
            // <oms:Annotations> (or directly) <oms:SimulationInformation>
            // <oms:FixedStepMaster stepSize=...>.
            let mut other = false;
            let mut step = None;
            let top: Vec<&Elem> = a
                .children
                .iter()
                .flat_map(|c| {
                    if c.local() == "Annotations" {
                        c.children.iter().collect::<Vec<_>>()
                    } else {
                        vec![c]
                    }
                })
                .collect();
            for c in top {
                if c.local() != "SimulationInformation" {
                    other = true;
                    continue;
                }
                for m in &c.children {
                    if m.local() == "FixedStepMaster" && m.attr("stepSize").is_some() {
                        if let Some(h) = self.ctx.f64_attr(f, m, "stepSize") {
                            step = Some(Val::new(h, m.attr_src(f, "stepSize")));
                        }
                    } else {
                        other = true;
                    }
                }
            }
            match step {
                Some(h) => {
                    let which = if self.lv.depth == 0 {
                        "the system".to_string()
                    } else {
                        format!("nested system '{}'", self.lv.name)
                    };
                    self.ctx.note(
                        h.src,
                        format!(
                            "the step of {which} is {} s, from OMSimulator's FixedStepMaster annotation",
                            h.value
                        ),
                    );
                    self.lv.step = Some(h);
                    if other {
                        self.ctx.annotation(kind, a.src(f));
                    }
                }
                None => self.ctx.annotation(kind, a.src(f)),
            }
        }
    }

    /// A nested `<ssd:System>`: read as a level of its own, which becomes
    /// a subsystem with an inline `system` table.
    fn nested_system(&mut self, e: &Elem) -> ElemRef {
        let f = self.file;
        let Some(name) = self.ctx.required(f, e, "name").map(str::to_string) else {
            return ElemRef::Skipped("a nested system that could not be mapped".into());
        };
        let scenario = scenario_name(&name, &self.lv.taken);
        self.lv.taken.insert(scenario.clone());
        if scenario != name {
            self.ctx.note(
                e.attr_src(f, "name"),
                format!("nested system '{name}' is called '{scenario}' in the scenario (subsystem names are letters, digits, '_' and '-')"),
            );
        }
        let child = Box::new(Level {
            name: name.clone(),
            depth: self.lv.depth + 1,
            draft: Draft::new(String::new(), e.src(f)),
            ..Level::default()
        });
        let parent = std::mem::replace(&mut self.lv, child);
        self.system(e);
        let mut child = std::mem::replace(&mut self.lv, parent);
        if child.draft.subsystems.is_empty() {
            // Whatever was in it is reported already.
            self.lv.draft.skipped.append(&mut child.draft.skipped);
            self.unsupported(
                e,
                "a nested system needs at least one component cosim can run",
            );
            return ElemRef::Skipped("a nested system with nothing to run".into());
        }
        let sub = self.lv.draft.subsystems.len();
        self.lv.draft.subsystems.push(SubDraft {
            name: scenario,
            name_src: e.attr_src(f, "name"),
            fmu: PathBuf::new(),
            fmu_src: e.src(f),
            system: None,
            exposes: Vec::new(),
            step_multiple: None,
            interface: None,
            parameters: Vec::new(),
            start: Vec::new(),
            src: e.src(f),
        });
        self.lv.nests.push(Nest { sub, level: child });
        ElemRef::Nest(self.lv.nests.len() - 1)
    }

    /// The draft of the whole system: each nested system's draft in its
    /// subsystem, with its `exposes` and its master's step (its own
    /// OMSimulator annotation, else the step of the level above).
    fn finish(mut self) -> Draft {
        let root_src = self.lv.draft.root_src;
        let has_nests = !self.lv.nests.is_empty();
        if let Some(alg) = self.osp_algorithm.take() {
            // libcosim's algorithm: the step of the root system.
            if let Some(om) = &self.lv.step
                && om.value != alg.step.value
            {
                let line = self.ctx.sources.line(alg.step.src);
                self.ctx.warn(
                    om.src,
                    format!(
                        "OMSimulator's FixedStepMaster stepSize {} s is not used: libcosim's osp:FixedStepAlgorithm baseStepSize {} s (line {line}) is the step of the system",
                        om.value, alg.step.value
                    ),
                );
            }
            self.lv.step = Some(alg.step);
            self.lv.draft.master.threads = alg.threads;
        }
        if let Some(h) = self.lv.step.take() {
            self.lv.draft.master.step = Some(h);
        } else if has_nests && let Some(h) = common_step(&self.lv) {
            // The level above cannot see the FMUs inside the nested
            // systems: say it here.
            self.lv.draft.master.step = Some(Val::new(h, root_src));
            self.lv.draft.master.step_origin =
                Some("the DefaultExperiment stepSize of every FMU".to_string());
        }
        if has_nests {
            // Nor their default experiments: the times as the scenario
            // would take them from the FMUs, were they all at the top.
            let (start, stop) = common_times(&self.lv);
            let draft = &mut self.lv.draft;
            if draft.start.is_none()
                && let Some(t) = start
            {
                draft.start = Some(Val::new(t, root_src));
                draft.times_origin = Some("the DefaultExperiment of every FMU".to_string());
            }
            if draft.stop.is_none()
                && let Some(t) = stop
            {
                draft.stop = Some(Val::new(t, root_src));
                draft.times_origin = Some("the DefaultExperiment of every FMU".to_string());
            }
        }
        let step = self
            .step_override
            .or(self.lv.draft.master.step.as_ref().map(|h| h.value));
        // Without a step in the file, the scenario takes the FMUs' common
        // default step: the base of the root system's step size hints.
        let base = step.or_else(|| common_step(&self.lv));
        if self.osp_algorithm_failed {
            // Reported: no base to judge the hints against.
            self.lv.hints.clear();
        }
        apply_hints(self.ctx, &mut self.lv, base);
        if has_nests {
            // The default trace holds the outputs of the top level's
            // subsystems only: name every FMU's, at every level.
            let mut outputs = Vec::new();
            trace_outputs(&self.lv, "", &mut outputs);
            self.lv.draft.outputs = outputs;
        }
        let mut skipped = Vec::new();
        let mut draft = finalize(self.ctx, *self.lv, step, &mut skipped);
        draft.skipped = skipped;
        draft
    }

    /// Runs `f` on nested system `nest` of the current level as the
    /// current level.
    fn in_nest<R>(&mut self, nest: usize, f: impl FnOnce(&mut Self) -> R) -> Option<R> {
        let child = std::mem::take(&mut self.lv.nests.get_mut(nest)?.level);
        let parent = std::mem::replace(&mut self.lv, child);
        let r = f(self);
        let child = std::mem::replace(&mut self.lv, parent);
        if let Some(n) = self.lv.nests.get_mut(nest) {
            n.level = child;
        }
        Some(r)
    }

    fn unsupported(&mut self, e: &Elem, why: &str) {
        let f = self.file;
        self.ctx.unsupported(&mut self.lv.draft, f, e, why);
    }

    fn elements(&mut self, els: &Elem) {
        let f = self.file;
        for e in &els.children {
            let name = e.value("name").unwrap_or_default().to_string();
            if !name.is_empty() {
                if self.lv.elements.contains_key(&name) {
                    self.ctx.error(
                        e.attr_src(f, "name"),
                        format!("two elements of the system are called '{name}'"),
                    );
                    continue;
                }
                self.lv.element_names.push(name.clone());
            }
            match e.local() {
                "Component" => {
                    let r = self.component(e);
                    if !name.is_empty() {
                        self.lv.elements.insert(name, r);
                    }
                }
                "System" => {
                    let r = self.nested_system(e);
                    if !name.is_empty() {
                        self.lv.elements.insert(name, r);
                    }
                }
                "SignalDictionaryReference" => {
                    self.unsupported(e, "signal dictionaries are not supported");
                    self.lv.elements.insert(
                        name,
                        ElemRef::Skipped("a signal dictionary reference".into()),
                    );
                }
                _ => self.ctx.unknown(
                    f,
                    e,
                    &els.name,
                    &["Component", "System", "SignalDictionaryReference"],
                ),
            }
        }
    }

    fn component(&mut self, e: &Elem) -> ElemRef {
        let f = self.file;
        let skipped = ElemRef::Skipped("a component that could not be mapped".into());
        let Some(name) = self.ctx.required(f, e, "name").map(str::to_string) else {
            return skipped;
        };
        if let Some(t) = e.value("type")
            && t.trim() != FMU_TYPE
        {
            let why = if t.contains("x-ssp") {
                format!(
                    "components of type '{t}' (a system in another SSD or SSP) are not supported yet; a nested <ssd:System> written in this SSD is"
                )
            } else {
                format!("components of type '{t}' are not supported (only FMUs, {FMU_TYPE})")
            };
            self.unsupported(e, &why);
            return skipped;
        }
        // The FMU kind to use where the FMU has several: the scenario's
        // `interface` (checked against the FMU below).
        let interface = match e.value("implementation").map(str::trim) {
            None | Some("any") => None,
            Some("CoSimulation") => Some("CoSimulation"),
            Some("ModelExchange") => Some("ModelExchange"),
            Some(imp) => {
                self.unsupported(
                    e,
                    &format!(
                        "implementation '{imp}' is not supported (cosim runs the CoSimulation and ModelExchange kinds of FMUs)"
                    ),
                );
                return skipped;
            }
        };
        let Some(source) = e.value("source") else {
            self.unsupported(
                e,
                "a component without a source (an architecture placeholder) has no implementation to run",
            );
            return skipped;
        };
        let source_src = e.attr_src(f, "source");
        let base = self
            .input
            .ssd
            .parent()
            .unwrap_or(Path::new(""))
            .to_path_buf();
        let path = match resolve_uri(&base, source)
            .and_then(|p| self.input.check_inside(&p).map(|()| normalise(&p)))
        {
            Ok(p) => p,
            Err(why) => {
                self.ctx.error(
                    source_src,
                    format!("cannot use the source '{source}' of component '{name}': {why}"),
                );
                return skipped;
            }
        };
        if self.input.archive.is_some() && path.is_dir() {
            self.unsupported(
                e,
                "its source is a directory inside the .ssp; only .fmu archives are supported there",
            );
            return skipped;
        }
        let md = match self.ctx.models.load(&path) {
            Ok(md) => md,
            Err(why) => {
                let shown = self.input.display(&path);
                self.ctx.error(
                    source_src,
                    format!(
                        "cannot read the FMU of component '{name}' ({}): {why}",
                        shown.display()
                    ),
                );
                return skipped;
            }
        };
        if let Some((why, _)) = md.refusal() {
            self.ctx.error(
                source_src,
                format!("the FMU of component '{name}' ({}): {why}", md.model_name),
            );
            return skipped;
        }
        let interface = match interface {
            None => None,
            Some(kind) => {
                let (declared, value) = match kind {
                    "ModelExchange" => (md.model_exchange.is_some(), "model-exchange"),
                    _ => (md.co_simulation.is_some(), "co-simulation"),
                };
                let src = e.attr_src(f, "implementation");
                if !declared {
                    self.ctx.error(
                        src,
                        format!(
                            "component '{name}' asks for implementation '{kind}', which its FMU ({}) does not declare (it declares {})",
                            md.model_name,
                            md.interfaces()
                                .iter()
                                .map(|i| format!("<{}>", i.interface))
                                .collect::<Vec<_>>()
                                .join(" and ")
                        ),
                    );
                    return skipped;
                }
                Some(Val::new(value, src))
            }
        };
        let scenario = scenario_name(&name, &self.lv.taken);
        self.lv.taken.insert(scenario.clone());
        if scenario != name {
            self.ctx.note(
                e.attr_src(f, "name"),
                format!("component '{name}' is called '{scenario}' in the scenario (subsystem names are letters, digits, '_' and '-')"),
            );
        }
        let sub = self.lv.draft.subsystems.len();
        self.lv.draft.subsystems.push(SubDraft {
            name: scenario,
            name_src: e.attr_src(f, "name"),
            fmu: path,
            fmu_src: source_src,
            system: None,
            exposes: Vec::new(),
            step_multiple: None,
            interface,
            parameters: Vec::new(),
            start: Vec::new(),
            src: e.src(f),
        });
        let mut connectors = HashMap::new();
        let mut bindings = Vec::new();
        for c in &e.children {
            match c.local() {
                "Connectors" => connectors = self.connectors(c),
                "ParameterBindings" => bindings.extend(self.bindings(c)),
                "ElementGeometry" => {}
                "Annotations" => self.component_annotations(c, sub, &name),
                _ => self.ctx.unknown(f, c, &e.name, COMPONENT_CHILDREN),
            }
        }
        let comp = self.lv.comps.len();
        self.lv.comps.push(Comp {
            sub,
            md,
            connectors,
        });
        for b in bindings {
            self.assign(comp, b);
        }
        ElemRef::Comp(comp)
    }

    /// The annotations of a component: libcosim's `<osp:StepSizeHint
    /// value>` (in an annotation of type `com.opensimulationplatform`) is
    /// the step the component would like; others are ignored (notes).
    fn component_annotations(&mut self, e: &Elem, sub: usize, name: &str) {
        let f = self.file;
        for a in &e.children {
            let kind = a.value("type").unwrap_or("?");
            if kind.trim() != OSP_ANNOTATION {
                self.ctx.annotation(kind, a.src(f));
                continue;
            }
            // libcosim reads the first <osp:StepSizeHint> of each such
            // annotation; a later annotation's replaces it.
            let mut seen: Option<Src> = None;
            for c in &a.children {
                if c.local() != "StepSizeHint" {
                    self.ctx.unknown(f, c, &a.name, &["StepSizeHint"]);
                    continue;
                }
                if let Some(first) = seen {
                    let line = self.ctx.sources.line(first);
                    self.ctx.warn(
                        c.src(f),
                        format!(
                            "a second <{}> of component '{name}' (the first on line {line}): ignored, as libcosim reads the first",
                            c.name
                        ),
                    );
                    continue;
                }
                seen = Some(c.src(f));
                self.ctx.required(f, c, "value");
                let Some(v) = self.ctx.f64_attr(f, c, "value") else {
                    continue;
                };
                let src = c.attr_src(f, "value");
                if libcosim_ns(v) < 0 {
                    self.ctx.error(
                        src,
                        format!(
                            "component '{name}': the step size hint {v} s is negative (libcosim refuses it too)"
                        ),
                    );
                    continue;
                }
                self.lv.hints.retain(|h| h.sub != sub);
                self.lv.hints.push(Hint {
                    sub,
                    component: name.to_string(),
                    value: Val::new(v, src),
                });
            }
        }
    }

    fn connectors(&mut self, e: &Elem) -> HashMap<String, Connector> {
        let f = self.file;
        let mut out = HashMap::new();
        for c in &e.children {
            if c.local() != "Connector" {
                self.ctx.unknown(f, c, &e.name, &["Connector"]);
                continue;
            }
            let Some(name) = self.ctx.required(f, c, "name").map(str::to_string) else {
                continue;
            };
            let mut unit = None;
            for t in &c.children {
                match t.local() {
                    "Real" | "Float64" | "Float32" => {
                        if let Some(u) = t.value("unit") {
                            unit = Some((u.to_string(), t.attr_src(f, "unit")));
                        }
                    }
                    "Integer" | "Int8" | "UInt8" | "Int16" | "UInt16" | "Int32" | "UInt32"
                    | "Int64" | "UInt64" | "Boolean" | "String" | "Enumeration" | "Binary"
                    | "Clock" | "Dimension" | "ConnectorGeometry" | "Annotations" => {}
                    _ => self.ctx.unknown(
                        f,
                        t,
                        &c.name,
                        &[
                            "Real",
                            "Float64",
                            "Integer",
                            "Boolean",
                            "String",
                            "Enumeration",
                        ],
                    ),
                }
            }
            out.insert(
                name,
                Connector {
                    kind: c.value("kind").map(str::to_string),
                    unit,
                },
            );
        }
        out
    }

    // -----------------------------------------------------------------
    // Parameter bindings

    fn bindings(&mut self, e: &Elem) -> Vec<Bound> {
        let f = self.file;
        let mut out = Vec::new();
        for b in &e.children {
            if b.local() != "ParameterBinding" {
                self.ctx.unknown(f, b, &e.name, &["ParameterBinding"]);
                continue;
            }
            if let Some(t) = b.value("type")
                && t.trim() != PARAMETER_SET_TYPE
            {
                self.unsupported(
                    b,
                    &format!("parameter sources of type '{t}' are not supported (only {PARAMETER_SET_TYPE})"),
                );
                continue;
            }
            if b.value("sourceBase")
                .is_some_and(|s| s.trim() == "component")
            {
                self.unsupported(
                    b,
                    "parameter sources inside the component (sourceBase=\"component\") are not supported",
                );
                continue;
            }
            let mut mapped = false;
            for c in &b.children {
                match c.local() {
                    "ParameterMapping" => {
                        self.unsupported(c, "parameter mappings are not supported yet");
                        mapped = true;
                    }
                    "ParameterValues" | "Annotations" => {}
                    _ => self.ctx.unknown(
                        f,
                        c,
                        &b.name,
                        &["ParameterValues", "ParameterMapping", "Annotations"],
                    ),
                }
            }
            if mapped {
                // Without the mapping the names would be wrong.
                continue;
            }
            let prefix = b.value("prefix").unwrap_or_default().to_string();
            let binding_src = b.src(f);
            if let Some(source) = b.value("source") {
                let base = self
                    .input
                    .ssd
                    .parent()
                    .unwrap_or(Path::new(""))
                    .to_path_buf();
                let src = b.attr_src(f, "source");
                let path = match resolve_uri(&base, source)
                    .and_then(|p| self.input.check_inside(&p).map(|()| normalise(&p)))
                {
                    Ok(p) => p,
                    Err(why) => {
                        self.ctx.error(
                            src,
                            format!("cannot use the parameter source '{source}': {why}"),
                        );
                        continue;
                    }
                };
                let shown = self.input.display(&path);
                let bytes = match std::fs::read(&path) {
                    Ok(b) => b,
                    Err(e) => {
                        self.ctx.error(
                            src,
                            format!("cannot read the parameter set {}: {e}", shown.display()),
                        );
                        continue;
                    }
                };
                let doc = match xml::read_bytes(&mut self.ctx.sources, &shown, bytes) {
                    Ok(d) => d,
                    Err(e) => {
                        self.ctx.diags.extend(e.diagnostics);
                        continue;
                    }
                };
                out.extend(self.parameter_set(doc.file, &doc.root, &prefix, binding_src));
            } else if let Some(values) = b.child("ParameterValues") {
                match values.children.first() {
                    Some(set) => out.extend(self.parameter_set(f, set, &prefix, binding_src)),
                    None => self.ctx.error(
                        values.src(f),
                        "<ssd:ParameterValues> holds no <ssv:ParameterSet>".to_string(),
                    ),
                }
            } else {
                self.ctx.error(
                    b.src(f),
                    "<ssd:ParameterBinding> has neither a 'source' nor <ssd:ParameterValues>"
                        .to_string(),
                );
            }
        }
        out
    }

    fn parameter_set(
        &mut self,
        file: FileId,
        set: &Elem,
        prefix: &str,
        binding_src: Src,
    ) -> Vec<Bound> {
        let mut out = Vec::new();
        if set.local() != "ParameterSet" {
            self.ctx.error(
                set.src(file),
                format!(
                    "not an SSP parameter set: found <{}>, expected <ssv:ParameterSet>",
                    set.name
                ),
            );
            return out;
        }
        let units = set
            .child("Units")
            .map(|u| read_units(self.ctx, file, u))
            .unwrap_or_default();
        let mut enums: HashMap<String, HashMap<String, i64>> = HashMap::new();
        if let Some(es) = set.child("Enumerations") {
            for en in es.children_named("Enumeration") {
                let items = en
                    .children_named("Item")
                    .filter_map(|i| {
                        let v = i.value("value")?.trim().parse::<i64>().ok()?;
                        Some((i.value("name")?.to_string(), v))
                    })
                    .collect();
                enums.insert(en.value("name").unwrap_or_default().to_string(), items);
            }
        }
        for c in &set.children {
            match c.local() {
                "Parameters" => {}
                "Units" | "Enumerations" | "MetaData" | "Signature" => {}
                "Annotations" => self.annotations_in(file, c, &set.name),
                _ => self.ctx.unknown(
                    file,
                    c,
                    &set.name,
                    &["Parameters", "Units", "Enumerations", "Annotations"],
                ),
            }
        }
        for ps in set.children_named("Parameters") {
            for p in &ps.children {
                if p.local() != "Parameter" {
                    self.ctx.unknown(file, p, &ps.name, &["Parameter"]);
                    continue;
                }
                let Some(name) = self.ctx.required(file, p, "name").map(str::to_string) else {
                    continue;
                };
                let Some(t) = p
                    .children
                    .iter()
                    .find(|t| !matches!(t.local(), "Annotations" | "Dimension"))
                else {
                    self.ctx.error(
                        p.src(file),
                        format!("parameter '{name}' has no value (<ssv:Real value=\"...\"/> ...)"),
                    );
                    continue;
                };
                let Some(raw) = self.ctx.required(file, t, "value").map(str::to_string) else {
                    continue;
                };
                let value_src = t.attr_src(file, "value");
                let mut unit = None;
                let value = match t.local() {
                    "Real" | "Float64" | "Float32" => match parse_f64(&raw) {
                        Some(x) => {
                            if let Some(u) = t.value("unit") {
                                let base = units.get(u).copied().or_else(|| parse_unit(u));
                                unit = Some((u.to_string(), base));
                            }
                            RawValue::Float(x)
                        }
                        None => {
                            self.ctx.error(
                                value_src,
                                format!("parameter '{name}': '{raw}' is not a finite number"),
                            );
                            continue;
                        }
                    },
                    "Integer" | "Int8" | "UInt8" | "Int16" | "UInt16" | "Int32" | "UInt32"
                    | "Int64" | "UInt64" => match raw.trim().parse::<i64>() {
                        Ok(i) => RawValue::Int(i),
                        Err(_) => {
                            self.ctx.error(
                                value_src,
                                format!("parameter '{name}': {}", not_an_integer(&raw)),
                            );
                            continue;
                        }
                    },
                    "Boolean" => match parse_bool(&raw) {
                        Some(b) => RawValue::Bool(b),
                        None => {
                            self.ctx.error(
                                value_src,
                                format!("parameter '{name}': '{raw}' is not a boolean"),
                            );
                            continue;
                        }
                    },
                    "String" => RawValue::Str(raw.clone()),
                    // The item's name: its value is the one the FMU's
                    // enumeration type gives it (the SSP schema: the
                    // parameter set's own <ssc:Enumerations> serve user
                    // interfaces and checks), looked up when the scenario
                    // is resolved. A number is taken as the value.
                    "Enumeration" => match raw.trim().parse::<i64>() {
                        Ok(i) => RawValue::Int(i),
                        Err(_) => {
                            if let Some(items) = t.value("name").and_then(|en| enums.get(en))
                                && !items.contains_key(raw.trim())
                            {
                                self.ctx.warn(
                                    value_src,
                                    format!(
                                        "parameter '{name}': the enumeration item '{raw}' is not one of the parameter set's <ssc:Enumeration name=\"{}\">; its value comes from the FMU's type",
                                        t.value("name").unwrap_or_default()
                                    ),
                                );
                            }
                            RawValue::Str(raw.trim().to_string())
                        }
                    },
                    other => {
                        let why = format!("parameters of type {other} are not supported");
                        self.ctx.unsupported(&mut self.lv.draft, file, t, &why);
                        continue;
                    }
                };
                out.push(Bound {
                    name: format!("{prefix}{name}"),
                    name_src: p.attr_src(file, "name"),
                    value,
                    value_src,
                    unit,
                    binding_src,
                });
            }
        }
        out
    }

    fn annotations_in(&mut self, file: FileId, e: &Elem, parent: &str) {
        let f = self.file;
        self.file = file;
        self.annotations(e, parent);
        self.file = f;
    }

    /// Applies bindings of the system: names are `<element>.<variable>`,
    /// or the name of a system connector.
    fn apply_system_bindings(&mut self, bindings: Vec<Bound>) {
        for b in bindings {
            // The longest element name that prefixes the parameter name.
            let target = self
                .lv
                .element_names
                .iter()
                .filter(|n| {
                    b.name.len() > n.len() + 1
                        && b.name.starts_with(n.as_str())
                        && b.name.as_bytes().get(n.len()) == Some(&b'.')
                })
                .max_by_key(|n| n.len())
                .cloned();
            match target {
                Some(el) => match self.lv.elements.get(&el) {
                    Some(ElemRef::Comp(c)) => {
                        let c = *c;
                        let mut b = b;
                        b.name = b.name.get(el.len() + 1..).unwrap_or_default().to_string();
                        self.assign(c, b);
                    }
                    Some(ElemRef::Nest(n)) => {
                        // `nest.s2.c12`: `s2.c12` inside the nested system.
                        let n = *n;
                        let mut b = b;
                        b.name = b.name.get(el.len() + 1..).unwrap_or_default().to_string();
                        self.in_nest(n, |r| r.apply_system_bindings(vec![b]));
                    }
                    Some(ElemRef::Skipped(what)) => {
                        let what = what.clone();
                        self.ctx.warn(
                            b.name_src,
                            format!(
                                "parameter '{}' is for '{el}', {what} that is not mapped: ignored",
                                b.name
                            ),
                        );
                    }
                    None => {}
                },
                None if self.lv.sys_connectors.contains_key(&b.name) => {
                    let name = b.name.clone();
                    self.bind_own_connector(&name, b);
                }
                None => {
                    let which = if self.lv.depth == 0 {
                        "the system's binding names no element or connector of the system"
                            .to_string()
                    } else {
                        format!(
                            "a binding names no element or connector of nested system '{}'",
                            self.lv.name
                        )
                    };
                    let mut d = self.ctx.sources.diag(
                        Severity::Warning,
                        b.name_src,
                        format!(
                            "parameter '{}' of {which}: ignored, as SSP specifies",
                            b.name
                        ),
                    );
                    let head = b.name.split('.').next().unwrap_or_default();
                    d.help = did_you_mean(head, self.lv.element_names.iter().map(String::as_str));
                    self.ctx.diags.push(d);
                }
            }
        }
    }

    /// Gives `b` to component `comp`: a parameter or a start value by the
    /// variable's causality; a later value replaces an earlier one.
    fn assign(&mut self, comp: usize, b: Bound) {
        let Some(c) = self.lv.comps.get(comp) else {
            return;
        };
        let md = c.md.clone();
        let sub = c.sub;
        let sub_name = self
            .lv
            .draft
            .subsystems
            .get(sub)
            .map(|s| s.name.clone())
            .unwrap_or_default();
        let Some(v) = variable(&md, &b.name) else {
            let mut d = self.ctx.sources.diag(
                Severity::Warning,
                b.name_src,
                format!(
                    "parameter '{}' names no variable of '{sub_name}' ({}): ignored, as SSP specifies",
                    b.name, md.model_name
                ),
            );
            d.help = did_you_mean(&b.name, md.variables.iter().map(|v| v.name.as_str()));
            d.notes.push(format!(
                "applied through the parameter binding at {}",
                self.ctx.sources.place(b.binding_src)
            ));
            self.ctx.diags.push(d);
            return;
        };
        // What libcosim's `add_parameter_set` (src/cosim/ssp/ssp_loader.cpp)
        // cannot apply it skips with a warning, as SSP allows: a variable
        // that is neither a parameter nor an input, a value of another type.
        let ignored = if !matches!(
            v.causality,
            Causality::Parameter | Causality::StructuralParameter | Causality::Input
        ) {
            Some(format!(
                "parameter '{}': '{sub_name}.{}' is a variable of causality {}, neither a parameter nor an input: ignored, as libcosim ignores it",
                b.name, v.name, v.causality
            ))
        } else if !value_fits(&b.value, v.var_type) {
            Some(format!(
                "parameter '{}' is {} but '{sub_name}.{}' is of type {}: ignored, as libcosim ignores it (the value's type must be the variable's)",
                b.name,
                value_kind(&b.value),
                v.name,
                cosim_fmi::inspect::type_name(md.fmi_version, v.var_type)
            ))
        } else {
            None
        };
        if let Some(message) = ignored {
            let mut d = self
                .ctx
                .sources
                .diag(Severity::Warning, b.value_src, message);
            d.notes.push(format!(
                "applied through the parameter binding at {}",
                self.ctx.sources.place(b.binding_src)
            ));
            self.ctx.diags.push(d);
            return;
        }
        let mut value = b.value.clone();
        // A Real in another unit than the variable's: convert.
        if let (RawValue::Float(x), Some((u, base)), Some(vu)) = (&value, &b.unit, &v.unit)
            && u != vu
        {
            match (base, unit_base_unit(&md, vu)) {
                (Some(from), Some(to)) if from.same_dimension(&to) => {
                    let (a, off) = conversion(*from, &to);
                    value = RawValue::Float(a * x + off);
                    self.ctx.note(
                        b.value_src,
                        format!(
                            "parameter '{}' converted from [{u}] to [{vu}], the unit of the variable",
                            b.name
                        ),
                    );
                }
                (Some(_), Some(_)) => {
                    self.ctx.error(
                        b.value_src,
                        format!(
                            "parameter '{}' is given in [{u}], which cannot be converted to [{vu}], the unit of the variable",
                            b.name
                        ),
                    );
                    return;
                }
                _ => {
                    self.ctx.error(
                        b.value_src,
                        format!(
                            "parameter '{}' is given in [{u}] and the variable is in [{vu}]: cosim does not know how to convert between them",
                            b.name
                        ),
                    );
                    return;
                }
            }
        }
        let parameter = is_parameter(v);
        let Some(s) = self.lv.draft.subsystems.get_mut(sub) else {
            return;
        };
        let list = if parameter {
            &mut s.parameters
        } else {
            &mut s.start
        };
        let a = Assign {
            name: b.name.clone(),
            name_src: b.name_src,
            value,
            value_src: b.value_src,
        };
        match list.iter_mut().find(|x| x.name == a.name) {
            Some(old) => *old = a,
            None => list.push(a),
        }
    }

    // -----------------------------------------------------------------
    // Connections

    fn connections(&mut self, e: &Elem) {
        let f = self.file;
        for c in &e.children {
            if c.local() != "Connection" {
                self.ctx.unknown(f, c, &e.name, &["Connection"]);
                continue;
            }
            self.connection(c);
        }
    }

    fn endpoint_text(c: &Elem, side: &str) -> String {
        let conn = c.value(&format!("{side}Connector")).unwrap_or("?");
        match c.value(&format!("{side}Element")) {
            Some(el) => format!("{el}.{conn}"),
            None => conn.to_string(),
        }
    }

    fn connection(&mut self, c: &Elem) {
        let f = self.file;
        let (Some(sc), Some(ec)) = (
            self.ctx
                .required(f, c, "startConnector")
                .map(str::to_string),
            self.ctx.required(f, c, "endConnector").map(str::to_string),
        ) else {
            return;
        };
        let label = format!(
            "<{}> {} -> {}",
            c.name,
            Self::endpoint_text(c, "start"),
            Self::endpoint_text(c, "end")
        );
        // The transformation.
        let mut transform: Option<(f64, f64, Src)> = None;
        let mut bad = false;
        for t in &c.children {
            match t.local() {
                "LinearTransformation" => {
                    let factor = self.ctx.f64_attr(f, t, "factor").unwrap_or(1.0);
                    let offset = self.ctx.f64_attr(f, t, "offset").unwrap_or(0.0);
                    transform = Some((factor, offset, t.src(f)));
                }
                "BooleanMappingTransformation"
                | "IntegerMappingTransformation"
                | "EnumerationMappingTransformation" => {
                    self.unsupported(
                        t,
                        &format!(
                            "mapping transformations are not supported; the connection {} is not mapped",
                            label.split_once("> ").map_or("", |x| x.1)
                        ),
                    );
                    bad = true;
                }
                "ConnectionGeometry" => {}
                "Annotations" => self.annotations(t, &c.name),
                _ => self.ctx.unknown(
                    f,
                    t,
                    &c.name,
                    &["LinearTransformation", "ConnectionGeometry", "Annotations"],
                ),
            }
        }
        if bad {
            return;
        }
        let suppress = self
            .ctx
            .bool_attr(f, c, "suppressUnitConversion")
            .unwrap_or(false);
        let start = self.endpoint(c, "start", &sc, &label);
        let end = self.endpoint(c, "end", &ec, &label);
        let (start, end) = match (start, end) {
            (Some(s), Some(e)) => (s, e),
            _ => return,
        };
        match (start, end) {
            (End::Ports(a), End::Ports(b)) => self.element_connection(c, a, b, transform, suppress),
            (End::System(sys), End::Ports(p)) | (End::Ports(p), End::System(sys)) => {
                if self.lv.depth == 0 {
                    self.system_connection(c, &sys, p, &label);
                } else {
                    self.nested_connector(c, &sys, p, transform, suppress, &label);
                }
            }
            (End::System(_), End::System(_)) => {
                if self.lv.depth == 0 {
                    self.ctx.note(
                        c.src(f),
                        format!("{label} joins two connectors of the system itself: nothing to map at the top level"),
                    );
                } else {
                    let message = format!(
                        "{label} cannot be mapped: it joins two connectors of nested system '{}' directly, and a nested system exposes variables of its components, not connectors",
                        self.lv.name
                    );
                    self.ctx
                        .unsupported_at(&mut self.lv.draft, c.src(f), &c.name, message);
                }
            }
        }
    }

    /// One end of a connection.
    fn endpoint(&mut self, c: &Elem, side: &str, connector: &str, label: &str) -> Option<End> {
        let f = self.file;
        let el_attr = format!("{side}Element");
        let conn_attr = format!("{side}Connector");
        let Some(el) = c.value(&el_attr) else {
            if !self.lv.sys_connectors.contains_key(connector) {
                let which = if self.lv.depth == 0 {
                    "the system".to_string()
                } else {
                    format!("nested system '{}'", self.lv.name)
                };
                let mut d = self.ctx.sources.error(
                    c.attr_src(f, &conn_attr),
                    format!(
                        "{label}: {which} has no connector '{connector}' (a connection without {el_attr} refers to the system's own connectors)"
                    ),
                );
                d.help = did_you_mean(connector, self.lv.sys_connectors.keys().map(String::as_str));
                self.ctx.diags.push(d);
                return None;
            }
            return Some(End::System(connector.to_string()));
        };
        let (el_src, var_src) = (c.attr_src(f, &el_attr), c.attr_src(f, &conn_attr));
        match self.lv.elements.get(el) {
            Some(ElemRef::Comp(i)) => {
                let port = self.comp_port(*i, connector, el_src, var_src)?;
                Some(End::Ports(vec![port]))
            }
            Some(ElemRef::Nest(n)) => {
                let n = *n;
                self.nest_ports(n, el, connector, el_src, var_src, label)
                    .map(End::Ports)
            }
            Some(ElemRef::Skipped(what)) => {
                let message = format!("{label} cannot be mapped: '{el}' is {what}");
                self.ctx
                    .unsupported_at(&mut self.lv.draft, c.src(f), &c.name, message);
                None
            }
            None => {
                self.ctx.error_help(
                    el_src,
                    format!("{label}: the system has no element '{el}'"),
                    did_you_mean(el, self.lv.element_names.iter().map(String::as_str)),
                );
                None
            }
        }
    }

    /// A variable of a component as a connection end.
    fn comp_port(&self, comp: usize, var: &str, el_src: Src, var_src: Src) -> Option<Port> {
        let cp = self.lv.comps.get(comp)?;
        let v = variable(&cp.md, var);
        let connector = cp.connectors.get(var);
        Some(Port {
            sub: cp.sub,
            comp: Some(comp),
            via: None,
            var: var.to_string(),
            el_src,
            var_src,
            known: v.is_some(),
            is_input: v.is_some_and(|v| v.causality == Causality::Input),
            is_source: v.is_some_and(is_source),
            kind: connector.and_then(|k| k.kind.clone()).unwrap_or_default(),
            unit: unit_of(cp, var, &self.units),
            declared: connector.and_then(|k| k.unit.clone()),
            inner: Link::identity(),
        })
    }

    /// A connector of nested system `nest` as connection ends: the inner
    /// variables it leads to (several for an input connector that feeds
    /// several inner inputs).
    fn nest_ports(
        &mut self,
        nest: usize,
        el: &str,
        connector: &str,
        el_src: Src,
        var_src: Src,
        label: &str,
    ) -> Option<Vec<Port>> {
        let n = self.lv.nests.get(nest)?;
        let lv = &n.level;
        let Some(conn) = lv.sys_connectors.get(connector) else {
            let mut d = self.ctx.sources.error(
                var_src,
                format!("{label}: nested system '{el}' has no connector '{connector}'"),
            );
            d.help = did_you_mean(connector, lv.sys_connectors.keys().map(String::as_str));
            self.ctx.diags.push(d);
            return None;
        };
        let Some(route) = lv.routes.get(connector) else {
            self.ctx.warn(
                var_src,
                format!(
                    "{label}: connector '{connector}' of nested system '{el}' is connected to nothing inside it, so the connection has no effect"
                ),
            );
            return None;
        };
        let declared = conn.unit.clone();
        let declared_unit = declared.as_ref().map(|(u, _)| {
            let base = self.units.get(u).copied().or_else(|| parse_unit(u));
            (u.clone(), base)
        });
        let ports = route
            .targets
            .iter()
            .map(|t| Port {
                sub: n.sub,
                comp: None,
                via: Some((nest, connector.to_string())),
                var: format!(
                    "{}.{}",
                    lv.draft
                        .subsystems
                        .get(t.sub)
                        .map_or("", |s| s.name.as_str()),
                    t.var
                ),
                el_src,
                var_src,
                known: true,
                is_input: route.dir == Dir::In,
                is_source: route.dir == Dir::Out,
                kind: conn.kind.clone().unwrap_or_default(),
                unit: declared_unit.clone().or_else(|| t.unit.clone()),
                declared: declared.clone(),
                inner: t.link.clone(),
            })
            .collect();
        Some(ports)
    }

    /// `[from unit] -> [to unit]` conversion and the connection's
    /// transformation, as a link; `None` after an error (units of
    /// different dimensions).
    #[allow(clippy::too_many_arguments)]
    fn outer_link(
        &mut self,
        c: &Elem,
        from_unit: &Option<(String, Option<BaseUnit>)>,
        to_unit: &Option<(String, Option<BaseUnit>)>,
        declared: Option<&(String, Src)>,
        transform: Option<(f64, f64, Src)>,
        suppress: bool,
        what: &str,
    ) -> Option<Link> {
        let f = self.file;
        let mut gain = 1.0;
        let mut offset = 0.0;
        let mut unit_mismatch = false;
        let mut comment = None;
        let mut map_src = transform.map(|t| t.2);
        if let (Some((fu, fb)), Some((tu, tb))) = (from_unit, to_unit)
            && fu != tu
        {
            if suppress {
                unit_mismatch = true;
            } else {
                match (fb, tb) {
                    (Some(fb), Some(tb)) if fb.same_dimension(tb) => {
                        let (a, b) = conversion(*fb, tb);
                        if (a - 1.0).abs() > 1e-15 || b != 0.0 {
                            gain = a;
                            offset = b;
                            comment = Some(format!("unit conversion [{fu}] -> [{tu}]"));
                            if map_src.is_none() {
                                map_src = Some(declared.map_or(c.src(f), |d| d.1));
                            }
                        }
                        unit_mismatch = true;
                    }
                    (Some(_), Some(_)) => {
                        let src = declared.map_or(c.src(f), |d| d.1);
                        self.ctx.error(
                            src,
                            format!(
                                "connection {what}: [{fu}] cannot be converted to [{tu}] (different dimensions)"
                            ),
                        );
                        return None;
                    }
                    // An unknown unit: the scenario compares the names.
                    _ => {}
                }
            }
        }
        if let Some((factor, off, _)) = transform {
            // Units are converted first, then the transformation applies.
            offset = factor * offset + off;
            gain *= factor;
        }
        Some(Link {
            gain,
            offset,
            unit_mismatch,
            comment,
            map_src,
        })
    }

    fn element_connection(
        &mut self,
        c: &Elem,
        a: Vec<Port>,
        b: Vec<Port>,
        transform: Option<(f64, f64, Src)>,
        suppress: bool,
    ) {
        let f = self.file;
        let (Some(pa), Some(pb)) = (a.first(), b.first()) else {
            return;
        };
        // Data flows from an output to an input, whichever is the start.
        let reversed = if pa.known && pb.known {
            !pb.is_input && pa.is_input && pb.is_source
        } else {
            pa.kind == "input"
                && matches!(pb.kind.as_str(), "output" | "calculatedParameter" | "local")
        };
        let (from, to) = if reversed { (b, a) } else { (a, b) };
        for src_end in &from {
            for dst_end in &to {
                let declared = src_end.declared.as_ref().or(dst_end.declared.as_ref());
                let what = format!(
                    "{}.{} -> {}.{}",
                    self.sub_name(src_end.sub),
                    src_end.var,
                    self.sub_name(dst_end.sub),
                    dst_end.var
                );
                let Some(outer) = self.outer_link(
                    c,
                    &src_end.unit,
                    &dst_end.unit,
                    declared,
                    transform,
                    suppress,
                    &what,
                ) else {
                    return;
                };
                // Through nested systems: inside the source's, the
                // connection, inside the destination's.
                let link = dst_end.inner.after(&outer.after(&src_end.inner));
                let var = |p: &Port| VarRef {
                    sub: p.sub,
                    var: p.var.clone(),
                    sub_src: p.el_src,
                    var_src: p.var_src,
                };
                let conn = ConnDraft {
                    from: var(src_end),
                    to: var(dst_end),
                    gain: link.gain,
                    offset: link.offset,
                    map_src: link.map_src,
                    unit_mismatch: link.unit_mismatch,
                    src: c.src(f),
                    comment: link.comment,
                };
                self.lv.draft.connections.push(conn);
            }
        }
    }

    fn sub_name(&self, sub: usize) -> String {
        self.lv
            .draft
            .subsystems
            .get(sub)
            .map(|s| s.name.clone())
            .unwrap_or_default()
    }

    /// Gives the value `b` to a connection end: the start value of a
    /// component's input, or, through a nested system's connector, of the
    /// inner inputs it feeds.
    fn bind_port(
        &mut self,
        comp: Option<usize>,
        via: Option<&(usize, String)>,
        var: &str,
        b: Bound,
    ) {
        if let Some(comp) = comp {
            let mut b = b;
            b.name = var.to_string();
            self.assign(comp, b);
        } else if let Some((nest, connector)) = via {
            let connector = connector.clone();
            self.in_nest(*nest, |r| r.bind_own_connector(&connector, b));
        }
    }

    /// A value bound to a connector of the current system: kept for the
    /// connections still to read, and given to the inner inputs the
    /// connector already leads to.
    fn bind_own_connector(&mut self, connector: &str, b: Bound) {
        self.lv.sys_values.insert(connector.to_string(), b.clone());
        if !self.lv.connections_done {
            return;
        }
        let Some(route) = self.lv.routes.get(connector).cloned() else {
            return;
        };
        if route.dir == Dir::In {
            for t in &route.targets {
                self.bind_port(t.comp, t.via.as_ref(), &t.var, b.clone());
            }
        }
    }

    /// A connection between a connector of the (top-level) system and an
    /// element: nothing drives a top-level system input, and a top-level
    /// output only exposes a value, so both are resolved without a
    /// connection (a value bound to the system input becomes the start
    /// value of the element's input).
    fn system_connection(&mut self, c: &Elem, sys: &str, ports: Vec<Port>, label: &str) {
        let f = self.file;
        for p in ports {
            let sub_name = self.sub_name(p.sub);
            let is_input = if p.known {
                p.is_input
            } else {
                p.kind == "input" || p.kind == "parameter"
            };
            if is_input {
                if let Some(b) = self.lv.sys_values.get(sys).cloned() {
                    self.ctx.note(
                        c.src(f),
                        format!("{label}: the value bound to system connector '{sys}' becomes the start value of '{sub_name}.{}'", p.var),
                    );
                    self.bind_port(p.comp, p.via.as_ref(), &p.var, b);
                } else {
                    self.ctx.note(
                        c.src(f),
                        format!("{label}: nothing drives the top-level system connector '{sys}', so '{sub_name}.{}' is left unconnected (it keeps its start value)", p.var),
                    );
                }
            } else {
                self.ctx.note(
                    c.src(f),
                    format!("{label}: system output '{sys}' only exposes '{sub_name}.{}', which the trace records as it is", p.var),
                );
            }
        }
    }

    /// A connection between a connector of a nested system and a variable
    /// inside it: the connector leads there from outside (an input, which
    /// the nested system exposes to be fed from outside) or from there to
    /// outside (an output, exposed to be read outside).
    fn nested_connector(
        &mut self,
        c: &Elem,
        sys: &str,
        ports: Vec<Port>,
        transform: Option<(f64, f64, Src)>,
        suppress: bool,
        label: &str,
    ) {
        let f = self.file;
        let Some(conn) = self.lv.sys_connectors.get(sys).cloned() else {
            return;
        };
        let Some(p0) = ports.first() else {
            return;
        };
        let by_variable = if !p0.known {
            None
        } else if p0.is_input {
            Some(Dir::In)
        } else if p0.is_source {
            Some(Dir::Out)
        } else {
            None
        };
        let by_kind = match conn.kind.as_deref() {
            Some("input" | "parameter") => Some(Dir::In),
            Some("output" | "calculatedParameter") => Some(Dir::Out),
            _ => None,
        };
        let Some(dir) = by_variable.or(by_kind) else {
            self.ctx.error(
                c.src(f),
                format!(
                    "{label}: cannot tell which way data flows through connector '{sys}' of nested system '{}' (give it kind=\"input\" or kind=\"output\")",
                    self.lv.name
                ),
            );
            return;
        };
        let conn_unit = conn.unit.as_ref().map(|(u, _)| {
            let base = self.units.get(u).copied().or_else(|| parse_unit(u));
            (u.clone(), base)
        });
        for p in ports {
            let sub_name = self.sub_name(p.sub);
            let declared = conn.unit.as_ref().or(p.declared.as_ref());
            let (from_unit, to_unit, what) = match dir {
                Dir::In => (
                    &conn_unit,
                    &p.unit,
                    format!("{} -> {sub_name}.{}", sys, p.var),
                ),
                Dir::Out => (
                    &p.unit,
                    &conn_unit,
                    format!("{sub_name}.{} -> {}", p.var, sys),
                ),
            };
            let Some(outer) =
                self.outer_link(c, from_unit, to_unit, declared, transform, suppress, &what)
            else {
                return;
            };
            let link = match dir {
                Dir::In => p.inner.after(&outer),
                Dir::Out => outer.after(&p.inner),
            };
            let target = Target {
                sub: p.sub,
                comp: p.comp,
                via: p.via.clone(),
                var: p.var.clone(),
                link,
                unit: p.unit.clone(),
            };
            match self.lv.routes.get_mut(sys) {
                None => {
                    self.lv.routes.insert(
                        sys.to_string(),
                        Route {
                            dir,
                            targets: vec![target],
                            src: c.src(f),
                        },
                    );
                }
                Some(r) if r.dir != dir || dir == Dir::Out => {
                    let first = self.ctx.sources.line(r.src);
                    let why = if r.dir != dir {
                        "it leads both into and out of the nested system"
                    } else {
                        "an output connector is fed by one inner output"
                    };
                    self.ctx.error(
                        c.src(f),
                        format!(
                            "{label}: connector '{sys}' of nested system '{}' is connected inside it a second time (first on line {first}): {why}",
                            self.lv.name
                        ),
                    );
                    return;
                }
                Some(r) => r.targets.push(target),
            }
            let exposed = format!("{sub_name}.{}", p.var);
            if !self.lv.exposes.iter().any(|x| x.value == exposed) {
                self.lv.exposes.push(Val::new(exposed, p.var_src));
            }
            if dir == Dir::In
                && let Some(b) = self.lv.sys_values.get(sys).cloned()
            {
                self.ctx.note(
                    c.src(f),
                    format!("{label}: the value bound to connector '{sys}' of nested system '{}' becomes the start value of '{sub_name}.{}'", self.lv.name, p.var),
                );
                self.bind_port(p.comp, p.via.as_ref(), &p.var, b);
            }
        }
    }
}

enum End {
    Ports(Vec<Port>),
    System(String),
}

/// The unit at a component's connector: the connector's declared unit,
/// else the variable's.
/// True when a bound value has the variable's type, as libcosim requires
/// (`is_valid_variable_value`); an integer (its value) or a string (its
/// item's name, as `ssv:Enumeration` gives it) also fits an enumeration.
fn value_fits(value: &RawValue, t: VariableType) -> bool {
    use VariableType as T;
    match value {
        RawValue::Float(_) => t.is_float(),
        RawValue::Int(_) => matches!(
            t,
            T::Int8
                | T::UInt8
                | T::Int16
                | T::UInt16
                | T::Int32
                | T::UInt32
                | T::Int64
                | T::UInt64
                | T::Enumeration
        ),
        RawValue::Bool(_) => t == T::Boolean,
        // (An enumeration by an item's name, as `ssv:Enumeration` gives it.)
        RawValue::Str(_) => matches!(t, T::String | T::Enumeration),
    }
}

/// What a bound value is, for messages.
fn value_kind(value: &RawValue) -> &'static str {
    match value {
        RawValue::Float(_) => "a real number",
        RawValue::Int(_) => "an integer",
        RawValue::Bool(_) => "a boolean",
        RawValue::Str(_) => "a string",
    }
}

fn unit_of(
    comp: &Comp,
    name: &str,
    units: &HashMap<String, BaseUnit>,
) -> Option<(String, Option<BaseUnit>)> {
    match comp.connectors.get(name).and_then(|k| k.unit.clone()) {
        Some((u, _)) => {
            let base = units.get(&u).copied().or_else(|| parse_unit(&u));
            Some((u, base))
        }
        None => variable(&comp.md, name)
            .and_then(|v| v.unit.clone())
            .map(|u| {
                let base = unit_base_unit(&comp.md, &u);
                (u, base)
            }),
    }
}

/// Moves every nested system's draft into its subsystem (recursively),
/// with its `exposes` and master step; collects what was not converted.
fn finalize(ctx: &mut Ctx, mut lv: Level, step: Option<f64>, skipped: &mut Vec<Skipped>) -> Draft {
    skipped.append(&mut lv.draft.skipped);
    for nest in std::mem::take(&mut lv.nests) {
        let mut child = *nest.level;
        match child.step.take() {
            Some(h) => child.draft.master.step = Some(h),
            None => {
                if let Some(h) = step {
                    child.draft.master.step = Some(Val::new(h, child.draft.root_src));
                    child.draft.master.step_origin =
                        Some("the step of the level above".to_string());
                }
            }
        }
        let inner_step = child.draft.master.step.as_ref().map(|h| h.value);
        apply_hints(ctx, &mut child, inner_step);
        let exposes = std::mem::take(&mut child.exposes);
        let draft = finalize(ctx, child, inner_step, skipped);
        if let Some(s) = lv.draft.subsystems.get_mut(nest.sub) {
            s.system = Some(Box::new(draft));
            s.exposes = exposes;
        }
    }
    lv.draft
}

/// A duration in libcosim's time unit, whole nanoseconds: `x * 1e9`
/// rounded toward zero (`std::chrono::duration_cast` of a `double`
/// number of seconds, as `cosim::to_duration` does).
fn libcosim_ns(seconds: f64) -> i64 {
    // `as` rounds toward zero and saturates, like the C++ conversion for
    // every value libcosim accepts.
    (seconds * 1e9) as i64
}

/// The step multiple libcosim gives a component with step size hint
/// `hint` under base step `base` (`calculate_decimation_factor` of its
/// fixed-step algorithm): both in whole nanoseconds, the hint divided by
/// the base step rounded down, at least 1; a hint of 0 is 1. Also says
/// whether libcosim warns ("Effective step size ... instead of configured
/// value"): the hint is not a multiple of the base step, or smaller.
fn libcosim_decimation(base: f64, hint: f64) -> (u64, bool) {
    let (base, hint) = (libcosim_ns(base), libcosim_ns(hint));
    if hint == 0 || base <= 0 {
        return (1, false);
    }
    let (quot, rem) = (hint / base, hint % base);
    let factor = u64::try_from(quot.max(1)).unwrap_or(1);
    (factor, rem > 0 || quot < 1)
}

/// The step multiples of the components of `lv` from their step size
/// hints, with `base` the step of the level's master.
fn apply_hints(ctx: &mut Ctx, lv: &mut Level, base: Option<f64>) {
    for h in std::mem::take(&mut lv.hints) {
        let hint = h.value.value;
        let name = &h.component;
        let Some(base) = base else {
            ctx.warn(
                h.value.src,
                format!(
                    "component '{name}': the step size hint {hint} s is ignored: the system has no step here to be a multiple of (give <osp:FixedStepAlgorithm baseStepSize> in <ssd:DefaultExperiment>, or --step)"
                ),
            );
            continue;
        };
        let (k, inexact) = libcosim_decimation(base, hint);
        // As libcosim prints it: the nanoseconds of the effective step.
        let stepped = (libcosim_ns(base) as f64 * k as f64) / 1e9;
        if inexact {
            let every = if k == 1 {
                "at every step".to_string()
            } else {
                format!("every {k} steps")
            };
            ctx.warn(
                h.value.src,
                format!(
                    "component '{name}': the step size hint {hint} s is not a multiple of the step {base} s; it steps {every} ({stepped} s), as libcosim does (the hint divided by the step, rounded down, at least 1)"
                ),
            );
        } else if k > 1 {
            ctx.note(
                h.value.src,
                format!(
                    "component '{name}' steps every {k} steps of {base} s, from its osp:StepSizeHint"
                ),
            );
        }
        if k > 1
            && let Some(s) = lv.draft.subsystems.get_mut(h.sub)
        {
            let k = u32::try_from(k).unwrap_or(u32::MAX);
            s.step_multiple = Some(Val::new(k, h.value.src));
        }
    }
}

/// The DefaultExperiment stepSize of every FMU of the system (nested
/// ones included), when they all give the same one.
fn common_step(lv: &Level) -> Option<f64> {
    fn collect(lv: &Level, out: &mut Vec<Option<f64>>) {
        for c in &lv.comps {
            out.push(c.md.default_experiment.as_ref().and_then(|d| d.step_size));
        }
        for n in &lv.nests {
            collect(&n.level, out);
        }
    }
    let mut steps = Vec::new();
    collect(lv, &mut steps);
    let first = steps.first().copied().flatten()?;
    steps.iter().all(|s| *s == Some(first)).then_some(first)
}

/// The start and stop times the scenario would take from the FMUs' default
/// experiments were they all at one level: the common start time of those
/// that give one (else none: 0), the stop time when every FMU gives the
/// same.
fn common_times(lv: &Level) -> (Option<f64>, Option<f64>) {
    fn collect(lv: &Level, out: &mut Vec<(Option<f64>, Option<f64>)>) {
        for c in &lv.comps {
            let d = c.md.default_experiment.as_ref();
            out.push((d.and_then(|d| d.start_time), d.and_then(|d| d.stop_time)));
        }
        for n in &lv.nests {
            collect(&n.level, out);
        }
    }
    let mut times = Vec::new();
    collect(lv, &mut times);
    let starts: Vec<f64> = times.iter().filter_map(|t| t.0).collect();
    let start = starts
        .first()
        .copied()
        .filter(|first| starts.iter().all(|s| s == first));
    let stop = times
        .first()
        .and_then(|t| t.1)
        .filter(|first| times.iter().all(|t| t.1 == Some(*first)));
    (start, stop)
}

/// `"<path><subsystem>.<output>"` for every output of every FMU of `lv`
/// and of its nested systems, in order (inside a nested system, the float
/// scalars: what the level above can trace).
fn trace_outputs(lv: &Level, path: &str, out: &mut Vec<Val<String>>) {
    let comps: HashMap<usize, &Comp> = lv.comps.iter().map(|c| (c.sub, c)).collect();
    for (i, s) in lv.draft.subsystems.iter().enumerate() {
        if let Some(c) = comps.get(&i) {
            for v in c.md.outputs() {
                let Some(var) = c.md.variables.get(v) else {
                    continue;
                };
                if lv.depth > 0 && !(var.var_type.is_float() && var.is_scalar()) {
                    continue;
                }
                out.push(Val::new(format!("{path}{}.{}", s.name, var.name), s.src));
            }
        } else if let Some(n) = lv.nests.iter().find(|n| n.sub == i) {
            trace_outputs(&n.level, &format!("{path}{}.", s.name), out);
        }
    }
}

/// `y = a x + b` converting a value in unit `from` to unit `to`
/// (`value_SI = factor * value + offset`).
fn conversion(from: BaseUnit, to: &BaseUnit) -> (f64, f64) {
    let a = from.factor / to.factor;
    let b = (from.offset - to.offset) / to.factor;
    (a, b)
}

/// `<ssc:Unit name><ssc:BaseUnit kg= m= ... factor= offset=/></ssc:Unit>`.
fn read_units(ctx: &mut Ctx, file: FileId, e: &Elem) -> HashMap<String, BaseUnit> {
    let mut out = HashMap::new();
    for u in e.children_named("Unit") {
        let Some(name) = ctx.required(file, u, "name").map(str::to_string) else {
            continue;
        };
        let Some(b) = u.child("BaseUnit") else {
            ctx.error(u.src(file), format!("unit '{name}' has no <ssc:BaseUnit>"));
            continue;
        };
        let mut base = BaseUnit::default();
        let mut exp = |key: &str, slot: &mut i32| {
            if let Some(a) = b.attr(key) {
                match a.value.trim().parse::<i32>() {
                    Ok(v) => *slot = v,
                    Err(_) => ctx.error(
                        Src::new(file, a.start, a.end),
                        format!(
                            "unit '{name}': exponent {key}=\"{}\" is not an integer",
                            a.value
                        ),
                    ),
                }
            }
        };
        exp("kg", &mut base.kg);
        exp("m", &mut base.m);
        exp("s", &mut base.s);
        exp("A", &mut base.a);
        exp("K", &mut base.k);
        exp("mol", &mut base.mol);
        exp("cd", &mut base.cd);
        exp("rad", &mut base.rad);
        if let Some(x) = ctx.f64_attr(file, b, "factor") {
            base.factor = x;
        }
        if let Some(x) = ctx.f64_attr(file, b, "offset") {
            base.offset = x;
        }
        if base.factor == 0.0 {
            ctx.error(
                b.attr_src(file, "factor"),
                format!("unit '{name}': the factor must not be 0"),
            );
            continue;
        }
        out.insert(name, base);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{libcosim_decimation, libcosim_ns};

    #[test]
    fn decimation_as_libcosim_computes_it() {
        assert_eq!(libcosim_ns(1e-4), 100_000);
        // 1.3e-4 * 1e9 = 129999.99999999999: truncated, as duration_cast does.
        assert_eq!(libcosim_ns(1.3e-4), 129_999);
        assert_eq!(libcosim_decimation(1e-4, 0.0), (1, false));
        assert_eq!(libcosim_decimation(1e-4, 1e-4), (1, false));
        assert_eq!(libcosim_decimation(1e-4, 3e-4), (3, false));
        assert_eq!(libcosim_decimation(1e-4, 2.5e-4), (2, true));
        assert_eq!(libcosim_decimation(1e-4, 5e-5), (1, true));
        assert_eq!(libcosim_decimation(1e-5, 1.3e-4), (12, true));
        assert_eq!(libcosim_decimation(1e-9, 10.0), (10_000_000_000, false));
    }
}
