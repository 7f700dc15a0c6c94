//! SSP 1.0/2.0 system structure descriptions (`.ssd`, with `.ssv`
//! parameter sets) as a [`Draft`].

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosim_fmi::ModelDescription;
use cosim_fmi::model_description::BaseUnit;
use cosim_fmi::model_description::units::{parse_unit, unit_base_unit};

use crate::common::{Ctx, normalise, parse_bool, parse_f64, resolve_uri, shown};
use crate::draft::{Assign, ConnDraft, Draft, RawValue, SubDraft, Val, VarRef, scenario_name};
use crate::models::{is_parameter, is_source, variable};
use crate::source::{FileId, Severity, Src, did_you_mean};
use crate::xml::{self, Elem};

const FMU_TYPE: &str = "application/x-fmu-sharedlibrary";
const PARAMETER_SET_TYPE: &str = "application/x-ssp-parameter-set";

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
    /// A nested system, a signal dictionary reference or an unsupported
    /// component: connections to it are reported, not mapped.
    Skipped(String),
}

struct Reader<'a> {
    ctx: &'a mut Ctx,
    input: &'a SspInput,
    file: FileId,
    draft: Draft,
    units: HashMap<String, BaseUnit>,
    comps: Vec<Comp>,
    elements: HashMap<String, ElemRef>,
    element_names: Vec<String>,
    sys_connectors: HashMap<String, Connector>,
    /// Values bound to the system's own connectors.
    sys_values: HashMap<String, Bound>,
    taken: HashSet<String>,
}

/// Reads a parsed SSD.
pub(crate) fn read_doc(
    ctx: &mut Ctx,
    input: &SspInput,
    file: FileId,
    root: &Elem,
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
        draft: Draft::new(format!("SSP {version}"), root.src(file)),
        units: HashMap::new(),
        comps: Vec::new(),
        elements: HashMap::new(),
        element_names: Vec::new(),
        sys_connectors: HashMap::new(),
        sys_values: HashMap::new(),
        taken: HashSet::new(),
    };
    r.root(root);
    Some(r.draft)
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
                "Annotations" => self.annotations(c),
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

    fn annotations(&mut self, e: &Elem) {
        let f = self.file;
        for a in &e.children {
            let kind = a.value("type").unwrap_or("?");
            self.ctx.annotation(kind, a.src(f));
        }
    }

    fn default_experiment(&mut self, e: &Elem) {
        let f = self.file;
        if let Some(t) = self.ctx.f64_attr(f, e, "startTime") {
            self.draft.start = Some(Val::new(t, e.attr_src(f, "startTime")));
        }
        if let Some(t) = self.ctx.f64_attr(f, e, "stopTime") {
            self.draft.stop = Some(Val::new(t, e.attr_src(f, "stopTime")));
        }
        for c in &e.children {
            match c.local() {
                "Annotations" => self.annotations(c),
                _ => self.ctx.unknown(f, c, &e.name, &["Annotations"]),
            }
        }
    }

    fn system(&mut self, sys: &Elem) {
        let f = self.file;
        // Elements first (connections and bindings refer to them).
        for c in sys.children_named("Elements") {
            self.elements(c);
        }
        for c in sys.children_named("Connectors") {
            self.sys_connectors = self.connectors(c);
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
                "Annotations" => self.annotations(c),
                _ => self.ctx.unknown(f, c, &sys.name, SYSTEM_CHILDREN),
            }
        }
        // System-level bindings take precedence over the components'.
        self.apply_system_bindings(system_bindings);
        for c in sys.children_named("Connections") {
            self.connections(c);
        }
    }

    fn unsupported(&mut self, e: &Elem, why: &str) {
        let f = self.file;
        self.ctx.unsupported(&mut self.draft, f, e, why);
    }

    fn elements(&mut self, els: &Elem) {
        let f = self.file;
        for e in &els.children {
            let name = e.value("name").unwrap_or_default().to_string();
            if !name.is_empty() {
                if self.elements.contains_key(&name) {
                    self.ctx.error(
                        e.attr_src(f, "name"),
                        format!("two elements of the system are called '{name}'"),
                    );
                    continue;
                }
                self.element_names.push(name.clone());
            }
            match e.local() {
                "Component" => {
                    let r = self.component(e);
                    if !name.is_empty() {
                        self.elements.insert(name, r);
                    }
                }
                "System" => {
                    self.unsupported(
                        e,
                        "nested systems are not supported yet (they will map onto hierarchical systems)",
                    );
                    self.elements
                        .insert(name, ElemRef::Skipped("a nested system".into()));
                }
                "SignalDictionaryReference" => {
                    self.unsupported(e, "signal dictionaries are not supported");
                    self.elements.insert(
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
                    "components of type '{t}' (a referenced SSP/SSD) are nested systems, which are not supported yet"
                )
            } else {
                format!("components of type '{t}' are not supported (only FMUs, {FMU_TYPE})")
            };
            self.unsupported(e, &why);
            return skipped;
        }
        if let Some(imp) = e.value("implementation")
            && !matches!(imp.trim(), "any" | "CoSimulation")
        {
            self.unsupported(
                e,
                &format!("implementation '{imp}' is not supported (cosim runs co-simulation FMUs)"),
            );
            return skipped;
        }
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
        if md.co_simulation.is_none() {
            self.ctx.error(
                source_src,
                format!(
                    "the FMU of component '{name}' ({}) has no co-simulation interface",
                    md.model_name
                ),
            );
            return skipped;
        }
        let scenario = scenario_name(&name, &self.taken);
        self.taken.insert(scenario.clone());
        if scenario != name {
            self.ctx.note(
                e.attr_src(f, "name"),
                format!("component '{name}' is called '{scenario}' in the scenario (subsystem names are letters, digits, '_' and '-')"),
            );
        }
        let sub = self.draft.subsystems.len();
        self.draft.subsystems.push(SubDraft {
            name: scenario,
            name_src: e.attr_src(f, "name"),
            fmu: path,
            fmu_src: source_src,
            step_multiple: None,
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
                "Annotations" => self.annotations(c),
                _ => self.ctx.unknown(f, c, &e.name, COMPONENT_CHILDREN),
            }
        }
        let comp = self.comps.len();
        self.comps.push(Comp {
            sub,
            md,
            connectors,
        });
        for b in bindings {
            self.assign(comp, b);
        }
        ElemRef::Comp(comp)
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
                "Annotations" => self.annotations_in(file, c),
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
                                format!("parameter '{name}': '{raw}' is not an integer"),
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
                    "Enumeration" => {
                        let item = t
                            .value("name")
                            .and_then(|en| enums.get(en))
                            .and_then(|items| items.get(raw.trim()).copied())
                            .or_else(|| raw.trim().parse::<i64>().ok());
                        match item {
                            Some(i) => RawValue::Int(i),
                            None => {
                                self.ctx.error(
                                    value_src,
                                    format!(
                                        "parameter '{name}': the enumeration item '{raw}' is not defined in the parameter set's <ssc:Enumerations>"
                                    ),
                                );
                                continue;
                            }
                        }
                    }
                    other => {
                        let why = format!("parameters of type {other} are not supported");
                        self.ctx.unsupported(&mut self.draft, file, t, &why);
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

    fn annotations_in(&mut self, file: FileId, e: &Elem) {
        let f = self.file;
        self.file = file;
        self.annotations(e);
        self.file = f;
    }

    /// Applies bindings of the system: names are `<element>.<variable>`,
    /// or the name of a system connector.
    fn apply_system_bindings(&mut self, bindings: Vec<Bound>) {
        for b in bindings {
            // The longest element name that prefixes the parameter name.
            let target = self
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
                Some(el) => match self.elements.get(&el) {
                    Some(ElemRef::Comp(c)) => {
                        let c = *c;
                        let mut b = b;
                        b.name = b.name.get(el.len() + 1..).unwrap_or_default().to_string();
                        self.assign(c, b);
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
                None if self.sys_connectors.contains_key(&b.name) => {
                    self.sys_values.insert(b.name.clone(), b);
                }
                None => {
                    let mut d = self.ctx.sources.diag(
                        Severity::Warning,
                        b.name_src,
                        format!(
                            "parameter '{}' of the system's binding names no element or connector of the system: ignored, as SSP specifies",
                            b.name
                        ),
                    );
                    let head = b.name.split('.').next().unwrap_or_default();
                    d.help = did_you_mean(head, self.element_names.iter().map(String::as_str));
                    self.ctx.diags.push(d);
                }
            }
        }
    }

    /// Gives `b` to component `comp`: a parameter or a start value by the
    /// variable's causality; a later value replaces an earlier one.
    fn assign(&mut self, comp: usize, b: Bound) {
        let Some(c) = self.comps.get(comp) else {
            return;
        };
        let md = c.md.clone();
        let sub = c.sub;
        let sub_name = self
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
        let Some(s) = self.draft.subsystems.get_mut(sub) else {
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
                "Annotations" => self.annotations(c),
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
            (End::Comp(a), End::Comp(b)) => self.element_connection(c, a, b, transform, suppress),
            (End::System(sys), End::Comp(el)) | (End::Comp(el), End::System(sys)) => {
                self.system_connection(c, &sys, el, &label);
            }
            (End::System(_), End::System(_)) => {
                self.ctx.note(
                    c.src(f),
                    format!("{label} joins two connectors of the system itself: nothing to map at the top level"),
                );
            }
        }
    }

    /// One end of a connection.
    fn endpoint(&mut self, c: &Elem, side: &str, connector: &str, label: &str) -> Option<End> {
        let f = self.file;
        let el_attr = format!("{side}Element");
        let conn_attr = format!("{side}Connector");
        let Some(el) = c.value(&el_attr) else {
            if !self.sys_connectors.contains_key(connector) {
                let mut d = self.ctx.sources.error(
                    c.attr_src(f, &conn_attr),
                    format!(
                        "{label}: the system has no connector '{connector}' (a connection without {el_attr} refers to the system's own connectors)"
                    ),
                );
                d.help = did_you_mean(connector, self.sys_connectors.keys().map(String::as_str));
                self.ctx.diags.push(d);
                return None;
            }
            return Some(End::System(connector.to_string()));
        };
        match self.elements.get(el) {
            Some(ElemRef::Comp(i)) => Some(End::Comp(EndComp {
                comp: *i,
                var: connector.to_string(),
                el_src: c.attr_src(f, &el_attr),
                var_src: c.attr_src(f, &conn_attr),
            })),
            Some(ElemRef::Skipped(what)) => {
                let message = format!("{label} cannot be mapped: '{el}' is {what}");
                self.ctx
                    .unsupported_at(&mut self.draft, c.src(f), &c.name, message);
                None
            }
            None => {
                self.ctx.error_help(
                    c.attr_src(f, &el_attr),
                    format!("{label}: the system has no element '{el}'"),
                    did_you_mean(el, self.element_names.iter().map(String::as_str)),
                );
                None
            }
        }
    }

    fn element_connection(
        &mut self,
        c: &Elem,
        a: EndComp,
        b: EndComp,
        transform: Option<(f64, f64, Src)>,
        suppress: bool,
    ) {
        let f = self.file;
        let (Some(ca), Some(cb)) = (self.comps.get(a.comp), self.comps.get(b.comp)) else {
            return;
        };
        let (va, vb) = (variable(&ca.md, &a.var), variable(&cb.md, &b.var));
        let kind = |comp: &Comp, name: &str| {
            comp.connectors
                .get(name)
                .and_then(|k| k.kind.clone())
                .unwrap_or_default()
        };
        let (ka, kb) = (kind(ca, &a.var), kind(cb, &b.var));
        // Data flows from an output to an input, whichever is the start.
        let reversed = match (va, vb) {
            (Some(x), Some(y)) => {
                y.causality != cosim_fmi::model_description::Causality::Input
                    && x.causality == cosim_fmi::model_description::Causality::Input
                    && is_source(y)
            }
            _ => ka == "input" && matches!(kb.as_str(), "output" | "calculatedParameter" | "local"),
        };
        let (src_end, dst_end) = if reversed { (&b, &a) } else { (&a, &b) };
        let (Some(src_comp), Some(dst_comp)) =
            (self.comps.get(src_end.comp), self.comps.get(dst_end.comp))
        else {
            return;
        };
        // Units: the connector's when declared, else the variable's.
        let unit_of = |comp: &Comp, name: &str, units: &HashMap<String, BaseUnit>| match comp
            .connectors
            .get(name)
            .and_then(|k| k.unit.clone())
        {
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
        };
        let from_unit = unit_of(src_comp, &src_end.var, &self.units);
        let to_unit = unit_of(dst_comp, &dst_end.var, &self.units);
        let declared = src_comp
            .connectors
            .get(&src_end.var)
            .and_then(|k| k.unit.clone())
            .or_else(|| {
                dst_comp
                    .connectors
                    .get(&dst_end.var)
                    .and_then(|k| k.unit.clone())
            });
        let mut gain = 1.0;
        let mut offset = 0.0;
        let mut unit_mismatch = false;
        let mut comment = None;
        let mut map_src = transform.map(|t| t.2);
        if let (Some((fu, fb)), Some((tu, tb))) = (&from_unit, &to_unit)
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
                                map_src = Some(declared.as_ref().map_or(c.src(f), |d| d.1));
                            }
                        }
                        unit_mismatch = true;
                    }
                    (Some(_), Some(_)) => {
                        let src = declared.as_ref().map_or(c.src(f), |d| d.1);
                        self.ctx.error(
                            src,
                            format!(
                                "connection {}.{} -> {}.{}: [{fu}] cannot be converted to [{tu}] (different dimensions)",
                                self.sub_name(src_comp.sub),
                                src_end.var,
                                self.sub_name(dst_comp.sub),
                                dst_end.var
                            ),
                        );
                        return;
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
        let var = |e: &EndComp, comps: &[Comp]| VarRef {
            sub: comps.get(e.comp).map_or(0, |c| c.sub),
            var: e.var.clone(),
            sub_src: e.el_src,
            var_src: e.var_src,
        };
        let conn = ConnDraft {
            from: var(src_end, &self.comps),
            to: var(dst_end, &self.comps),
            gain,
            offset,
            map_src,
            unit_mismatch,
            src: c.src(f),
            comment,
        };
        self.draft.connections.push(conn);
    }

    fn sub_name(&self, sub: usize) -> String {
        self.draft
            .subsystems
            .get(sub)
            .map(|s| s.name.clone())
            .unwrap_or_default()
    }

    /// A connection between a connector of the (top-level) system and an
    /// element: nothing drives a top-level system input, and a top-level
    /// output only exposes a value, so both are resolved without a
    /// connection (a value bound to the system input becomes the start
    /// value of the element's input).
    fn system_connection(&mut self, c: &Elem, sys: &str, el: EndComp, label: &str) {
        let f = self.file;
        let Some(comp) = self.comps.get(el.comp) else {
            return;
        };
        let sub_name = self.sub_name(comp.sub);
        let is_input = variable(&comp.md, &el.var)
            .map(|v| v.causality == cosim_fmi::model_description::Causality::Input)
            .unwrap_or_else(|| {
                comp.connectors
                    .get(&el.var)
                    .and_then(|k| k.kind.as_deref())
                    .is_some_and(|k| k == "input" || k == "parameter")
            });
        if is_input {
            if let Some(b) = self.sys_values.get(sys).cloned() {
                let comp = el.comp;
                let mut b = b;
                b.name = el.var.clone();
                self.ctx.note(
                    c.src(f),
                    format!("{label}: the value bound to system connector '{sys}' becomes the start value of '{sub_name}.{}'", el.var),
                );
                self.assign(comp, b);
            } else {
                self.ctx.note(
                    c.src(f),
                    format!("{label}: nothing drives the top-level system connector '{sys}', so '{sub_name}.{}' is left unconnected (it keeps its start value)", el.var),
                );
            }
        } else {
            self.ctx.note(
                c.src(f),
                format!("{label}: system output '{sys}' only exposes '{sub_name}.{}', which the trace records as it is", el.var),
            );
        }
    }
}

struct EndComp {
    comp: usize,
    var: String,
    el_src: Src,
    var_src: Src,
}

enum End {
    Comp(EndComp),
    System(String),
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
