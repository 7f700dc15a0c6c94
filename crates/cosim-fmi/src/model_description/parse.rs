//! Parsing of `modelDescription.xml` (FMI 2.0 and FMI 3.0) into the
//! version-neutral types of [`crate::model_description`].
//!
//! The document is read with quick-xml's streaming reader into a small
//! element tree (vendor annotations and elements nested deeper than the
//! standard ever goes are skipped while reading, so arbitrary nesting costs
//! no recursion), then interpreted per FMI version. Every error carries the
//! file and the 1-based line and column of the offending element.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};
use quick_xml::reader::Reader;

use super::{
    Alias, BaseUnit, Causality, ClockAttributes, CoSimulation, DefaultExperiment, Dependencies,
    Dependency, DependencyKind, Dimension, FmiVersion, Initial, IntervalVariability, LogCategory,
    ModelDescription, ModelExchange, ModelStructure, NameIndex, StartValue, TypeDefinition, Unit,
    Unknown, Variability, Variable, VariableIndex, VariableType,
};
use crate::error::{FmiError, Result};

/// Largest `modelDescription.xml` accepted (256 MiB).
pub(crate) const MAX_MODEL_DESCRIPTION_SIZE: usize = 256 * 1024 * 1024;

/// Elements nested deeper than this (root = 0) are not kept: the FMI schemas
/// never go beyond depth 5, so only vendor content can be that deep.
const MAX_STORED_DEPTH: usize = 7;

/// Deeper nesting is refused (no model description comes close).
const MAX_DEPTH: usize = 4096;

/// At most this many elements are kept (a model description with a million
/// variables has about three million).
const MAX_ELEMENTS: usize = 8_000_000;

/// Parses the text of a `modelDescription.xml`.
///
/// `file` is only used in error messages (for a file inside an archive, pass
/// `<archive>/modelDescription.xml`).
///
/// # Errors
///
/// [`FmiError::ModelDescription`] with the line and column of the offending
/// element for malformed XML or any violation of the standard that `cosim`
/// relies on (missing required attribute, unknown enumeration value, bad
/// number, dangling reference, duplicate value reference in FMI 3 ...).
pub fn parse_model_description(xml: &str, file: &Path) -> Result<ModelDescription> {
    let xml = xml.strip_prefix('\u{feff}').unwrap_or(xml);
    let ctx = Ctx::new(xml, file);
    if xml.len() > MAX_MODEL_DESCRIPTION_SIZE {
        return Err(ctx.err(
            Loc::START,
            format!(
                "the file is {} bytes long, more than the limit of {} bytes",
                xml.len(),
                MAX_MODEL_DESCRIPTION_SIZE
            ),
        ));
    }
    let root = build_tree(&ctx)?;
    interpret(&ctx, &root)
}

/// Reads and parses a `modelDescription.xml` file.
///
/// # Errors
///
/// [`FmiError::Io`] when the file cannot be read, otherwise as
/// [`parse_model_description`] (invalid UTF-8 and files over
/// 256 MiB included).
pub fn parse_model_description_file(path: &Path) -> Result<ModelDescription> {
    let io = |error| FmiError::Io {
        path: path.to_path_buf(),
        error,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(MAX_MODEL_DESCRIPTION_SIZE as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    let located = |line, column, message: String| FmiError::ModelDescription {
        file: path.to_path_buf(),
        line,
        column,
        message,
    };
    if bytes.len() > MAX_MODEL_DESCRIPTION_SIZE {
        return Err(located(
            1,
            1,
            format!("the file is larger than the limit of {MAX_MODEL_DESCRIPTION_SIZE} bytes"),
        ));
    }
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return Err(located(
            1,
            1,
            "the file is UTF-16 encoded; only UTF-8 is supported".to_string(),
        ));
    }
    match std::str::from_utf8(&bytes) {
        Ok(text) => parse_model_description(text, path),
        // Latin-1, where the declaration says so: each byte is the code
        // point of its value (the standard asks for UTF-8, but exporters
        // in the wild write ISO-8859-1 and say so).
        Err(_) if is_latin1(declared_encoding(&bytes).as_deref()) => {
            let text: String = bytes.iter().map(|&b| char::from(b)).collect();
            parse_model_description(&text, path)
        }
        Err(e) => {
            let valid = e.valid_up_to();
            let prefix = bytes.get(..valid).unwrap_or_default();
            // The prefix is valid UTF-8 by construction.
            let prefix = std::str::from_utf8(prefix).unwrap_or_default();
            let Loc { line, column } = Locator::new(prefix).at(valid);
            let declared = match declared_encoding(&bytes) {
                Some(enc) => format!(
                    " (the XML declaration says encoding=\"{enc}\"; cosim reads UTF-8 and ISO-8859-1)"
                ),
                None => String::new(),
            };
            Err(located(
                line,
                column,
                format!("invalid UTF-8 at byte offset {valid}{declared}"),
            ))
        }
    }
}

/// The `encoding` of the XML declaration at the start of `bytes`, if any.
fn declared_encoding(bytes: &[u8]) -> Option<String> {
    let head = bytes.get(..bytes.len().min(256))?;
    let head = String::from_utf8_lossy(head);
    let decl = head.strip_prefix("\u{feff}").unwrap_or(&head);
    let decl = &decl[..decl.find("?>")?];
    let rest = &decl[decl.find("encoding")? + "encoding".len()..];
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = &rest[1..];
    Some(value[..value.find(quote)?].to_string())
}

/// ISO-8859-1 under any of its usual names.
fn is_latin1(encoding: Option<&str>) -> bool {
    encoding.is_some_and(|e| {
        matches!(
            e.to_ascii_lowercase().as_str(),
            "iso-8859-1" | "iso8859-1" | "latin1" | "latin-1" | "l1" | "iso_8859-1"
        )
    })
}

// ---------------------------------------------------------------------------
// Positions and errors

/// A 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Loc {
    line: usize,
    column: usize,
}

impl Loc {
    const START: Loc = Loc { line: 1, column: 1 };
}

/// Turns byte offsets into [`Loc`]s by scanning forward from the last
/// offset asked for: linear in the input for increasing offsets (the order
/// of the reader's events), with no per-line table.
struct Locator<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
    /// Characters since the start of the line.
    column: usize,
}

impl<'a> Locator<'a> {
    fn new(text: &'a str) -> Self {
        Locator {
            text,
            pos: 0,
            line: 1,
            column: 0,
        }
    }

    fn at(&mut self, pos: usize) -> Loc {
        let mut pos = pos.min(self.text.len());
        while pos > 0 && !self.text.is_char_boundary(pos) {
            pos -= 1;
        }
        if pos < self.pos {
            *self = Locator::new(self.text);
        }
        if let Some(segment) = self.text.get(self.pos..pos) {
            for c in segment.chars() {
                if c == '\n' {
                    self.line += 1;
                    self.column = 0;
                } else {
                    self.column += 1;
                }
            }
            self.pos = pos;
        }
        Loc {
            line: self.line,
            column: self.column + 1,
        }
    }
}

struct Ctx<'a> {
    xml: &'a str,
    file: &'a Path,
}

impl<'a> Ctx<'a> {
    fn new(xml: &'a str, file: &'a Path) -> Self {
        Ctx { xml, file }
    }

    /// The location of a byte offset (a scan from the start: for one-off
    /// error positions only).
    fn loc_of(&self, pos: usize) -> Loc {
        Locator::new(self.xml).at(pos)
    }

    fn err(&self, loc: Loc, message: impl Into<String>) -> FmiError {
        FmiError::ModelDescription {
            file: self.file.to_path_buf(),
            line: loc.line,
            column: loc.column,
            message: message.into(),
        }
    }
}

// ---------------------------------------------------------------------------
// Element tree

#[derive(Debug)]
struct Elem {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Elem>,
    /// Where the element starts.
    pos: Loc,
}

/// An open element while reading: kept (`Some`) or skipped (`None`).
struct Frame {
    name: String,
    pos: Loc,
    elem: Option<Box<Elem>>,
}

fn is_annotation(name: &str) -> bool {
    matches!(name, "Annotations" | "VendorAnnotations")
}

fn make_elem(ctx: &Ctx<'_>, start: &BytesStart<'_>, pos: Loc) -> Result<Elem> {
    let name = start.name().into_inner().to_string();
    let mut attrs = Vec::new();
    for attr in start.attributes() {
        let attr =
            attr.map_err(|e| ctx.err(pos, format!("malformed attribute in <{name}>: {e}")))?;
        let key = attr.key.into_inner().to_string();
        let value = attr
            .normalized_value(XmlVersion::Implicit1_0)
            .map_err(|e| {
                ctx.err(
                    pos,
                    format!("malformed value of attribute '{key}' in <{name}>: {e}"),
                )
            })?
            .into_owned();
        attrs.push((key, value));
    }
    Ok(Elem {
        name,
        attrs,
        children: Vec::new(),
        pos,
    })
}

fn build_tree(ctx: &Ctx<'_>) -> Result<Elem> {
    let mut reader = Reader::from_str(ctx.xml);
    {
        let config = reader.config_mut();
        // End names are checked here, to report the unclosed element.
        config.check_end_names = false;
        config.expand_empty_elements = false;
        config.trim_text(false);
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut root: Option<Elem> = None;
    let mut locator = Locator::new(ctx.xml);
    let mut stored = 0usize;

    loop {
        let offset = usize::try_from(reader.buffer_position()).unwrap_or(usize::MAX);
        let event = reader.read_event().map_err(|e| {
            let at = usize::try_from(reader.error_position()).unwrap_or(usize::MAX);
            ctx.err(ctx.loc_of(at), format!("malformed XML: {e}"))
        })?;
        match event {
            Event::Start(ref start) | Event::Empty(ref start) => {
                let pos = locator.at(offset);
                let is_empty = matches!(event, Event::Empty(_));
                let depth = stack.len();
                if depth >= MAX_DEPTH {
                    return Err(ctx.err(
                        pos,
                        format!("elements are nested more than {MAX_DEPTH} levels deep"),
                    ));
                }
                if depth == 0 && root.is_some() {
                    return Err(ctx.err(pos, "more than one root element"));
                }
                let name = start.name().into_inner().to_string();
                let parent_kept = stack.last().is_none_or(|f| f.elem.is_some());
                let keep = parent_kept && depth <= MAX_STORED_DEPTH && !is_annotation(&name);
                let elem = if keep {
                    stored += 1;
                    if stored > MAX_ELEMENTS {
                        return Err(ctx.err(
                            pos,
                            format!("the file has more than {MAX_ELEMENTS} elements"),
                        ));
                    }
                    Some(Box::new(make_elem(ctx, start, pos)?))
                } else {
                    None
                };
                if is_empty {
                    if let Some(elem) = elem {
                        attach(&mut stack, &mut root, *elem);
                    } else if depth == 0 {
                        // A skipped root (e.g. a lone <Annotations/>) still counts.
                        root = Some(Elem {
                            name,
                            attrs: Vec::new(),
                            children: Vec::new(),
                            pos,
                        });
                    }
                } else {
                    stack.push(Frame { name, pos, elem });
                }
            }
            Event::End(end) => {
                let pos = locator.at(offset);
                let name = end.name().into_inner();
                let Some(frame) = stack.pop() else {
                    return Err(
                        ctx.err(pos, format!("closing tag </{name}> without an opening tag"))
                    );
                };
                if frame.name != name {
                    let Loc { line, column } = pos;
                    return Err(ctx.err(
                        frame.pos,
                        format!(
                            "element <{}> is not closed (found </{name}> at line {line}, column {column})",
                            frame.name
                        ),
                    ));
                }
                match frame.elem {
                    Some(elem) => attach(&mut stack, &mut root, *elem),
                    None if stack.is_empty() => {
                        root = Some(Elem {
                            name: frame.name,
                            attrs: Vec::new(),
                            children: Vec::new(),
                            pos: frame.pos,
                        });
                    }
                    None => {}
                }
            }
            Event::Eof => {
                if let Some(frame) = stack.last() {
                    return Err(ctx.err(
                        frame.pos,
                        format!(
                            "element <{}> is not closed before the end of the file",
                            frame.name
                        ),
                    ));
                }
                break;
            }
            Event::Text(_)
            | Event::CData(_)
            | Event::Comment(_)
            | Event::Decl(_)
            | Event::PI(_)
            | Event::DocType(_)
            | Event::GeneralRef(_) => {}
        }
    }
    root.ok_or_else(|| {
        ctx.err(
            ctx.loc_of(ctx.xml.len()),
            "no root element: the file contains no XML element",
        )
    })
}

fn attach(stack: &mut [Frame], root: &mut Option<Elem>, elem: Elem) {
    match stack.last_mut() {
        Some(Frame {
            elem: Some(parent), ..
        }) => parent.children.push(elem),
        Some(_) => {}
        None => *root = Some(elem),
    }
}

// ---------------------------------------------------------------------------
// Attribute access

impl Elem {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn attr_string(&self, key: &str) -> Option<String> {
        self.attr(key).map(str::to_string)
    }

    fn req<'e>(&'e self, ctx: &Ctx<'_>, key: &str) -> Result<&'e str> {
        self.attr(key).ok_or_else(|| {
            ctx.err(
                self.pos,
                format!("<{}> is missing the required attribute '{key}'", self.name),
            )
        })
    }

    fn bad(&self, ctx: &Ctx<'_>, key: &str, value: &str, expected: &str) -> FmiError {
        ctx.err(
            self.pos,
            format!(
                "attribute {key}=\"{}\" of <{}>: {expected}",
                shorten(value),
                self.name
            ),
        )
    }

    fn bool_attr(&self, ctx: &Ctx<'_>, key: &str) -> Result<bool> {
        match self.attr(key) {
            None => Ok(false),
            Some(v) => parse_bool(v).ok_or_else(|| self.bad(ctx, key, v, "expected true or false")),
        }
    }

    fn f64_attr(&self, ctx: &Ctx<'_>, key: &str) -> Result<Option<f64>> {
        match self.attr(key) {
            None => Ok(None),
            Some(v) => parse_f64(v)
                .map(Some)
                .ok_or_else(|| self.bad(ctx, key, v, "not a number")),
        }
    }

    fn int_attr<T: std::str::FromStr>(&self, ctx: &Ctx<'_>, key: &str) -> Result<Option<T>> {
        match self.attr(key) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse::<T>()
                .map(Some)
                .map_err(|_| self.bad(ctx, key, v, "not an integer in the allowed range")),
        }
    }

    fn children_named<'e>(&'e self, name: &'e str) -> impl Iterator<Item = &'e Elem> + 'e {
        self.children.iter().filter(move |c| c.name == name)
    }
}

/// Cuts long attribute values in messages.
fn shorten(s: &str) -> String {
    const MAX: usize = 60;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut}...")
    }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim() {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

/// An `xs:double`: decimal or scientific notation, `INF`, `-INF`, `NaN`.
/// Other spellings of infinity and NaN (`inf`, `Infinity`, `nan`) are
/// accepted too, since some exporters write them. Overflowing exponents
/// give an infinity.
fn parse_f64(v: &str) -> Option<f64> {
    v.trim().parse::<f64>().ok()
}

// ---------------------------------------------------------------------------
// Interpretation

fn interpret(ctx: &Ctx<'_>, root: &Elem) -> Result<ModelDescription> {
    if root.name != "fmiModelDescription" {
        return Err(ctx.err(
            root.pos,
            format!(
                "the root element is <{}>, expected <fmiModelDescription>",
                root.name
            ),
        ));
    }
    let version_string = root.req(ctx, "fmiVersion")?.trim().to_string();
    let fmi_version = match version_string.split(['.', '-']).next() {
        Some("2") => FmiVersion::V2,
        Some("3") => FmiVersion::V3,
        _ => {
            return Err(ctx.err(
                root.pos,
                format!(
                    "unsupported fmiVersion \"{}\": cosim supports FMI 2.0 and 3.0",
                    shorten(&version_string)
                ),
            ));
        }
    };
    let v3 = fmi_version == FmiVersion::V3;
    let model_name = root.req(ctx, "modelName")?.to_string();
    let instantiation_token = root
        .req(ctx, if v3 { "instantiationToken" } else { "guid" })?
        .to_string();

    let mut md = ModelDescription {
        fmi_version,
        fmi_version_string: version_string,
        model_name,
        instantiation_token,
        description: root.attr_string("description"),
        author: root.attr_string("author"),
        version: root.attr_string("version"),
        generation_tool: root.attr_string("generationTool"),
        generation_date_and_time: root.attr_string("generationDateAndTime"),
        variable_naming_convention: root.attr_string("variableNamingConvention"),
        co_simulation: None,
        model_exchange: None,
        scheduled_execution: None,
        default_experiment: None,
        units: Vec::new(),
        type_definitions: Vec::new(),
        log_categories: Vec::new(),
        variables: Vec::new(),
        model_structure: ModelStructure::default(),
        names: NameIndex::default(),
    };

    let section = |name: &'static str| -> Result<Option<&Elem>> {
        let mut found = root.children_named(name);
        let first = found.next();
        if let Some(second) = found.next() {
            return Err(ctx.err(second.pos, format!("more than one <{name}> element")));
        }
        Ok(first)
    };

    if let Some(cs) = section("CoSimulation")? {
        md.co_simulation = Some(parse_co_simulation(ctx, cs, v3)?);
    }
    let identifier = |e: &Elem| {
        e.attr("modelIdentifier")
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    if let Some(me) = section("ModelExchange")? {
        md.model_exchange = Some(parse_model_exchange(ctx, me, root, v3)?);
    }
    if v3 {
        md.scheduled_execution = section("ScheduledExecution")?.map(identifier);
    }
    if let Some(units) = section("UnitDefinitions")? {
        md.units = parse_units(ctx, units)?;
    }
    if let Some(types) = section("TypeDefinitions")? {
        md.type_definitions = parse_type_definitions(ctx, types, v3)?;
    }
    if let Some(cats) = section("LogCategories")? {
        for c in cats.children_named("Category") {
            md.log_categories.push(LogCategory {
                name: c.req(ctx, "name")?.to_string(),
                description: c.attr_string("description"),
            });
        }
    }
    if let Some(de) = section("DefaultExperiment")? {
        md.default_experiment = Some(DefaultExperiment {
            start_time: de.f64_attr(ctx, "startTime")?,
            stop_time: de.f64_attr(ctx, "stopTime")?,
            tolerance: de.f64_attr(ctx, "tolerance")?,
            step_size: de.f64_attr(ctx, "stepSize")?,
        });
    }
    let mut derivatives = Vec::new();
    if let Some(vars) = section("ModelVariables")? {
        md.variables = parse_variables(ctx, vars, &md.type_definitions, v3, &mut derivatives)?;
    }
    let resolver = Resolver::new(&md.variables, v3);
    for (index, raw, pos) in derivatives {
        let target = resolver.resolve(ctx, raw, pos, "derivative")?;
        if let Some(v) = md.variables.get_mut(index) {
            v.derivative_of = Some(target);
        }
    }
    if let Some(ms) = section("ModelStructure")? {
        md.model_structure = parse_model_structure(ctx, ms, &resolver, v3)?;
    }
    if let Some(me) = &mut md.model_exchange
        && v3
    {
        me.number_of_event_indicators = md.model_structure.event_indicators.len();
    }
    Ok(md)
}

/// The attributes of the FMU-state and directional-derivative
/// capabilities, as each version spells them.
fn capability_attributes(v3: bool) -> [&'static str; 3] {
    if v3 {
        [
            "canGetAndSetFMUState",
            "canSerializeFMUState",
            "providesDirectionalDerivatives",
        ]
    } else {
        [
            "canGetAndSetFMUstate",
            "canSerializeFMUstate",
            "providesDirectionalDerivative",
        ]
    }
}

/// FMI 2: the interface element lists files to compile under
/// `<SourceFiles>`.
fn lists_source_files(e: &Elem) -> bool {
    e.children_named("SourceFiles")
        .any(|s| s.children_named("File").next().is_some())
}

/// `<ModelExchange>` (`root` is `<fmiModelDescription>`, which holds FMI
/// 2's `numberOfEventIndicators`; FMI 3 counts its `<EventIndicator>`
/// elements once the model structure is read). Its `modelIdentifier` is
/// checked where the interface is used.
fn parse_model_exchange(ctx: &Ctx<'_>, me: &Elem, root: &Elem, v3: bool) -> Result<ModelExchange> {
    let [state, serialize, directional] = capability_attributes(v3);
    Ok(ModelExchange {
        model_identifier: me
            .attr("modelIdentifier")
            .unwrap_or_default()
            .trim()
            .to_string(),
        needs_execution_tool: me.bool_attr(ctx, "needsExecutionTool")?,
        needs_completed_integrator_step: if v3 {
            me.bool_attr(ctx, "needsCompletedIntegratorStep")?
        } else {
            !me.bool_attr(ctx, "completedIntegratorStepNotNeeded")?
        },
        can_be_instantiated_only_once_per_process: me
            .bool_attr(ctx, "canBeInstantiatedOnlyOncePerProcess")?,
        can_not_use_memory_management_functions: !v3
            && me.bool_attr(ctx, "canNotUseMemoryManagementFunctions")?,
        can_get_and_set_fmu_state: me.bool_attr(ctx, state)?,
        can_serialize_fmu_state: me.bool_attr(ctx, serialize)?,
        provides_directional_derivatives: me.bool_attr(ctx, directional)?,
        provides_adjoint_derivatives: v3 && me.bool_attr(ctx, "providesAdjointDerivatives")?,
        provides_per_element_dependencies: v3
            && me.bool_attr(ctx, "providesPerElementDependencies")?,
        provides_evaluate_discrete_states: v3
            && me.bool_attr(ctx, "providesEvaluateDiscreteStates")?,
        number_of_event_indicators: if v3 {
            0
        } else {
            root.int_attr::<usize>(ctx, "numberOfEventIndicators")?
                .unwrap_or(0)
        },
        has_source_files: !v3 && lists_source_files(me),
    })
}

fn parse_co_simulation(ctx: &Ctx<'_>, cs: &Elem, v3: bool) -> Result<CoSimulation> {
    let model_identifier = cs.req(ctx, "modelIdentifier")?.trim().to_string();
    if model_identifier.is_empty() {
        return Err(ctx.err(cs.pos, "<CoSimulation> has an empty modelIdentifier"));
    }
    let [state, serialize, directional] = capability_attributes(v3);
    let has_source_files = !v3 && lists_source_files(cs);
    Ok(CoSimulation {
        model_identifier,
        needs_execution_tool: cs.bool_attr(ctx, "needsExecutionTool")?,
        can_handle_variable_communication_step_size: cs
            .bool_attr(ctx, "canHandleVariableCommunicationStepSize")?,
        can_interpolate_inputs: !v3 && cs.bool_attr(ctx, "canInterpolateInputs")?,
        max_output_derivative_order: cs
            .int_attr::<u32>(ctx, "maxOutputDerivativeOrder")?
            .unwrap_or(0),
        can_run_asynchronuously: !v3 && cs.bool_attr(ctx, "canRunAsynchronuously")?,
        can_be_instantiated_only_once_per_process: cs
            .bool_attr(ctx, "canBeInstantiatedOnlyOncePerProcess")?,
        can_not_use_memory_management_functions: cs
            .bool_attr(ctx, "canNotUseMemoryManagementFunctions")?,
        can_get_and_set_fmu_state: cs.bool_attr(ctx, state)?,
        can_serialize_fmu_state: cs.bool_attr(ctx, serialize)?,
        provides_directional_derivatives: cs.bool_attr(ctx, directional)?,
        provides_adjoint_derivatives: v3 && cs.bool_attr(ctx, "providesAdjointDerivatives")?,
        provides_intermediate_update: v3 && cs.bool_attr(ctx, "providesIntermediateUpdate")?,
        can_return_early_after_intermediate_update: v3
            && cs.bool_attr(ctx, "canReturnEarlyAfterIntermediateUpdate")?,
        might_return_early_from_do_step: v3 && cs.bool_attr(ctx, "mightReturnEarlyFromDoStep")?,
        has_event_mode: v3 && cs.bool_attr(ctx, "hasEventMode")?,
        provides_evaluate_discrete_states: v3
            && cs.bool_attr(ctx, "providesEvaluateDiscreteStates")?,
        fixed_internal_step_size: if v3 {
            cs.f64_attr(ctx, "fixedInternalStepSize")?
        } else {
            None
        },
        recommended_intermediate_input_smoothness: if v3 {
            cs.int_attr::<i32>(ctx, "recommendedIntermediateInputSmoothness")?
        } else {
            None
        },
        has_source_files,
    })
}

fn parse_units(ctx: &Ctx<'_>, units: &Elem) -> Result<Vec<Unit>> {
    let mut out = Vec::new();
    for u in units.children_named("Unit") {
        let base_unit = match u.children_named("BaseUnit").next() {
            None => None,
            Some(b) => {
                let exp =
                    |key: &str| -> Result<i32> { Ok(b.int_attr::<i32>(ctx, key)?.unwrap_or(0)) };
                Some(BaseUnit {
                    kg: exp("kg")?,
                    m: exp("m")?,
                    s: exp("s")?,
                    a: exp("A")?,
                    k: exp("K")?,
                    mol: exp("mol")?,
                    cd: exp("cd")?,
                    rad: exp("rad")?,
                    factor: b.f64_attr(ctx, "factor")?.unwrap_or(1.0),
                    offset: b.f64_attr(ctx, "offset")?.unwrap_or(0.0),
                })
            }
        };
        let mut display_units = Vec::new();
        for d in u.children_named("DisplayUnit") {
            display_units.push(d.req(ctx, "name")?.to_string());
        }
        out.push(Unit {
            name: u.req(ctx, "name")?.to_string(),
            base_unit,
            display_units,
        });
    }
    Ok(out)
}

/// The base type of an FMI 2 type element name or an FMI 3 variable /
/// type-definition element name (`Float64` or `Float64Type`).
fn type_from_name(name: &str, v3: bool) -> Option<VariableType> {
    if v3 {
        let base = name.strip_suffix("Type").unwrap_or(name);
        Some(match base {
            "Float64" => VariableType::Float64,
            "Float32" => VariableType::Float32,
            "Int8" => VariableType::Int8,
            "UInt8" => VariableType::UInt8,
            "Int16" => VariableType::Int16,
            "UInt16" => VariableType::UInt16,
            "Int32" => VariableType::Int32,
            "UInt32" => VariableType::UInt32,
            "Int64" => VariableType::Int64,
            "UInt64" => VariableType::UInt64,
            "Boolean" => VariableType::Boolean,
            "String" => VariableType::String,
            "Binary" => VariableType::Binary,
            "Enumeration" => VariableType::Enumeration,
            "Clock" => VariableType::Clock,
            _ => return None,
        })
    } else {
        Some(match name {
            "Real" => VariableType::Float64,
            "Integer" => VariableType::Int32,
            "Boolean" => VariableType::Boolean,
            "String" => VariableType::String,
            "Enumeration" => VariableType::Enumeration,
            _ => return None,
        })
    }
}

fn parse_type_definitions(ctx: &Ctx<'_>, types: &Elem, v3: bool) -> Result<Vec<TypeDefinition>> {
    let mut out: Vec<TypeDefinition> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for t in &types.children {
        // FMI 2: <SimpleType name=...><Real unit=.../></SimpleType>;
        // FMI 3: <Float64Type name=... unit=.../>.
        let (name_elem, attr_elem, base_type) = if v3 {
            match type_from_name(&t.name, true) {
                Some(bt) => (t, t, bt),
                None => continue,
            }
        } else {
            if t.name != "SimpleType" {
                continue;
            }
            let mut typed = t
                .children
                .iter()
                .filter_map(|c| type_from_name(&c.name, false).map(|bt| (c, bt)));
            let Some((child, bt)) = typed.next() else {
                return Err(ctx.err(
                    t.pos,
                    "<SimpleType> needs one of <Real>, <Integer>, <Boolean>, <String>, <Enumeration>",
                ));
            };
            if let Some((extra, _)) = typed.next() {
                return Err(ctx.err(extra.pos, "<SimpleType> has more than one type element"));
            }
            (t, child, bt)
        };
        let name = name_elem.req(ctx, "name")?.to_string();
        if let Some(&line) = seen.get(&name) {
            return Err(ctx.err(
                name_elem.pos,
                format!("type '{name}' is already defined at line {line}"),
            ));
        }
        seen.insert(name.clone(), name_elem.pos.line);
        let mut items = Vec::new();
        if base_type == VariableType::Enumeration {
            for item in attr_elem.children.iter().filter(|c| c.name == "Item") {
                let item_name = item.req(ctx, "name")?.to_string();
                let raw = item.req(ctx, "value")?;
                let value = raw.trim().parse::<i64>().map_err(|_| {
                    ctx.err(
                        item.pos,
                        format!("the value of item '{item_name}' of type '{name}' is not an integer: '{}'", shorten(raw)),
                    )
                })?;
                items.push((item_name, value));
            }
        }
        let clock = if base_type == VariableType::Clock {
            Some(parse_clock(ctx, attr_elem, None, &name)?)
        } else {
            None
        };
        out.push(TypeDefinition {
            items,
            name,
            base_type,
            quantity: attr_elem.attr_string("quantity"),
            unit: attr_elem.attr_string("unit"),
            display_unit: attr_elem.attr_string("displayUnit"),
            min: attr_elem.f64_attr(ctx, "min")?,
            max: attr_elem.f64_attr(ctx, "max")?,
            nominal: attr_elem.f64_attr(ctx, "nominal")?,
            clock,
        });
    }
    Ok(out)
}

fn parse_causality(ctx: &Ctx<'_>, e: &Elem, v3: bool) -> Result<Causality> {
    let Some(v) = e.attr("causality") else {
        return Ok(Causality::Local);
    };
    Ok(match v.trim() {
        "parameter" => Causality::Parameter,
        "calculatedParameter" => Causality::CalculatedParameter,
        "input" => Causality::Input,
        "output" => Causality::Output,
        "local" => Causality::Local,
        "independent" => Causality::Independent,
        "structuralParameter" if v3 => Causality::StructuralParameter,
        _ => {
            let allowed = if v3 {
                "parameter, calculatedParameter, input, output, local, independent, structuralParameter"
            } else {
                "parameter, calculatedParameter, input, output, local, independent"
            };
            return Err(ctx.err(
                e.pos,
                format!(
                    "unknown causality \"{}\" (expected one of: {allowed})",
                    shorten(v)
                ),
            ));
        }
    })
}

fn parse_variability(ctx: &Ctx<'_>, e: &Elem, var_type: VariableType) -> Result<Variability> {
    let Some(v) = e.attr("variability") else {
        return Ok(if var_type.is_float() {
            Variability::Continuous
        } else {
            Variability::Discrete
        });
    };
    Ok(match v.trim() {
        "constant" => Variability::Constant,
        "fixed" => Variability::Fixed,
        "tunable" => Variability::Tunable,
        "discrete" => Variability::Discrete,
        "continuous" => Variability::Continuous,
        _ => {
            return Err(ctx.err(
                e.pos,
                format!(
                    "unknown variability \"{}\" (expected constant, fixed, tunable, discrete or continuous)",
                    shorten(v)
                ),
            ));
        }
    })
}

fn parse_initial(ctx: &Ctx<'_>, e: &Elem) -> Result<Option<Initial>> {
    let Some(v) = e.attr("initial") else {
        return Ok(None);
    };
    Ok(Some(match v.trim() {
        "exact" => Initial::Exact,
        "approx" => Initial::Approx,
        "calculated" => Initial::Calculated,
        _ => {
            return Err(ctx.err(
                e.pos,
                format!(
                    "unknown initial \"{}\" (expected exact, approx or calculated)",
                    shorten(v)
                ),
            ));
        }
    }))
}

/// Range of an integer type, for start-value checks.
fn int_range(t: VariableType) -> (i128, i128) {
    match t {
        VariableType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        VariableType::UInt8 => (0, u8::MAX.into()),
        VariableType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        VariableType::UInt16 => (0, u16::MAX.into()),
        VariableType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        VariableType::UInt32 => (0, u32::MAX.into()),
        VariableType::UInt64 => (0, u64::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    }
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let digits: Option<Vec<u8>> = s
        .chars()
        .map(|c| c.to_digit(16).and_then(|d| u8::try_from(d).ok()))
        .collect();
    let digits = digits?;
    Some(
        digits
            .chunks(2)
            .map(|pair| match pair {
                [hi, lo] => (hi << 4) | lo,
                _ => 0,
            })
            .collect(),
    )
}

/// Parses the `start` of a variable. `start_elem` is the element carrying
/// the attribute (FMI 2 type child, FMI 3 variable element).
fn parse_start(
    ctx: &Ctx<'_>,
    start_elem: &Elem,
    var_type: VariableType,
    v3: bool,
    scalar: bool,
) -> Result<Option<StartValue>> {
    // FMI 3 String and Binary: <Start value="..."/> children.
    if v3 && matches!(var_type, VariableType::String | VariableType::Binary) {
        let starts: Vec<&Elem> = start_elem.children_named("Start").collect();
        if !starts.is_empty() {
            if var_type == VariableType::String {
                let mut values = Vec::new();
                for s in starts {
                    values.push(s.attr("value").unwrap_or_default().to_string());
                }
                return Ok(Some(StartValue::String(values)));
            }
            let mut values = Vec::new();
            for s in starts {
                let raw = s.attr("value").unwrap_or_default();
                values
                    .push(decode_hex(raw.trim()).ok_or_else(|| {
                        s.bad(ctx, "value", raw, "not a hexadecimal byte string")
                    })?);
            }
            return Ok(Some(StartValue::Binary(values)));
        }
    }
    let Some(raw) = start_elem.attr("start") else {
        return Ok(None);
    };
    if var_type == VariableType::String {
        return Ok(Some(StartValue::String(vec![raw.to_string()])));
    }
    let tokens: Vec<&str> = if v3 {
        raw.split_ascii_whitespace().collect()
    } else {
        vec![raw.trim()]
    };
    if scalar && tokens.len() != 1 {
        return Err(start_elem.bad(
            ctx,
            "start",
            raw,
            &format!(
                "a scalar variable needs exactly one start value, found {}",
                tokens.len()
            ),
        ));
    }
    let bad = |expected: &str| start_elem.bad(ctx, "start", raw, expected);
    Ok(Some(match var_type {
        VariableType::Float64 | VariableType::Float32 => StartValue::Float(
            tokens
                .iter()
                .map(|t| parse_f64(t))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("not a number"))?,
        ),
        VariableType::Boolean => StartValue::Bool(
            tokens
                .iter()
                .map(|t| parse_bool(t))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("expected true or false"))?,
        ),
        VariableType::Binary => StartValue::Binary(
            tokens
                .iter()
                .map(|t| decode_hex(t))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("not a hexadecimal byte string"))?,
        ),
        VariableType::Clock => return Ok(None),
        VariableType::String => return Ok(None),
        int_type => {
            let (lo, hi) = int_range(int_type);
            let mut values = Vec::with_capacity(tokens.len());
            for t in tokens {
                let t = t.strip_prefix('+').unwrap_or(t);
                let v = t
                    .parse::<i128>()
                    .ok()
                    .filter(|v| (lo..=hi).contains(v))
                    .ok_or_else(|| {
                        bad(&format!(
                            "not an integer in the range of {int_type} ({lo} to {hi})"
                        ))
                    })?;
                values.push(v);
            }
            StartValue::Int(values)
        }
    }))
}

/// FMI 3 `clocks="vr vr ..."`: the Clocks a variable is clocked by.
fn parse_clocks_attr(ctx: &Ctx<'_>, e: &Elem) -> Result<Vec<u32>> {
    let Some(raw) = e.attr("clocks") else {
        return Ok(Vec::new());
    };
    raw.split_whitespace()
        .map(|t| {
            t.parse::<u32>()
                .map_err(|_| e.bad(ctx, "clocks", raw, "a list of value references"))
        })
        .collect()
}

/// The attributes of the `<Clock>` or `<ClockType>` element `e` (named
/// `name`), each where `e` does not give it from its declared type's
/// (`declared`).
fn parse_clock(
    ctx: &Ctx<'_>,
    e: &Elem,
    declared: Option<&ClockAttributes>,
    name: &str,
) -> Result<ClockAttributes> {
    const VARIANTS: [IntervalVariability; 6] = [
        IntervalVariability::Constant,
        IntervalVariability::Fixed,
        IntervalVariability::Tunable,
        IntervalVariability::Changing,
        IntervalVariability::Countdown,
        IntervalVariability::Triggered,
    ];
    let interval_variability = match e.attr("intervalVariability") {
        Some(raw) => IntervalVariability::NAMES
            .iter()
            .position(|n| *n == raw.trim())
            .map(|i| VARIANTS[i])
            .ok_or_else(|| {
                e.bad(
                    ctx,
                    "intervalVariability",
                    raw,
                    "one of constant, fixed, tunable, changing, countdown, triggered",
                )
            })?,
        None => match declared {
            Some(d) => d.interval_variability,
            None => {
                return Err(ctx.err(
                    e.pos,
                    format!(
                        "<{} name=\"{}\"> needs 'intervalVariability'",
                        e.name,
                        shorten(name)
                    ),
                ));
            }
        },
    };
    let flag = |key: &str, from: fn(&ClockAttributes) -> bool| -> Result<bool> {
        Ok(match e.attr(key) {
            Some(_) => e.bool_attr(ctx, key)?,
            None => declared.is_some_and(from),
        })
    };
    Ok(ClockAttributes {
        interval_variability,
        interval_decimal: e
            .f64_attr(ctx, "intervalDecimal")?
            .or(declared.and_then(|d| d.interval_decimal)),
        shift_decimal: e
            .f64_attr(ctx, "shiftDecimal")?
            .or(declared.map(|d| d.shift_decimal))
            .unwrap_or(0.0),
        supports_fraction: flag("supportsFraction", |d| d.supports_fraction)?,
        can_be_deactivated: flag("canBeDeactivated", |d| d.can_be_deactivated)?,
        priority: e
            .int_attr::<u32>(ctx, "priority")?
            .or(declared.and_then(|d| d.priority)),
    })
}

/// A parsed variable with its unresolved `derivative` reference (raw value
/// and element position).
type ParsedVariable = (Variable, Option<(u64, Loc)>);

/// Parses one FMI 2 `<ScalarVariable>` or FMI 3 variable element.
fn parse_variable(
    ctx: &Ctx<'_>,
    e: &Elem,
    types: &HashMap<&str, &TypeDefinition>,
    v3: bool,
) -> Result<Option<ParsedVariable>> {
    let (typed, var_type) = if v3 {
        match type_from_name(&e.name, true) {
            Some(t) if !e.name.ends_with("Type") => (e, t),
            _ => return Ok(None),
        }
    } else {
        if e.name != "ScalarVariable" {
            return Ok(None);
        }
        let mut found = e
            .children
            .iter()
            .filter_map(|c| type_from_name(&c.name, false).map(|t| (c, t)));
        let Some((child, t)) = found.next() else {
            return Err(ctx.err(
                e.pos,
                format!(
                    "<ScalarVariable name=\"{}\"> needs one of <Real>, <Integer>, <Boolean>, <String>, <Enumeration>",
                    shorten(e.attr("name").unwrap_or_default())
                ),
            ));
        };
        if let Some((extra, _)) = found.next() {
            return Err(ctx.err(extra.pos, "<ScalarVariable> has more than one type element"));
        }
        (child, t)
    };

    let name = e.req(ctx, "name")?.to_string();
    let value_reference = match e.int_attr::<u32>(ctx, "valueReference")? {
        Some(vr) => vr,
        None => {
            return Err(ctx.err(
                e.pos,
                format!(
                    "<{}> '{name}' is missing the required attribute 'valueReference'",
                    e.name
                ),
            ));
        }
    };
    let causality = parse_causality(ctx, e, v3)?;
    let variability = parse_variability(ctx, e, var_type)?;
    let initial = parse_initial(ctx, e)?;

    let declared_type = typed.attr_string("declaredType");
    if var_type == VariableType::Enumeration && declared_type.is_none() {
        return Err(ctx.err(
            typed.pos,
            format!(
                "enumeration variable '{name}' is missing the required attribute 'declaredType'"
            ),
        ));
    }
    let decl = match &declared_type {
        None => None,
        Some(dt) => match types.get(dt.as_str()) {
            Some(t) if t.base_type == var_type => Some(*t),
            Some(t) => {
                return Err(ctx.err(
                    typed.pos,
                    format!(
                        "variable '{name}' is of type {var_type} but its declaredType '{dt}' is of type {}",
                        t.base_type
                    ),
                ));
            }
            None => {
                return Err(ctx.err(
                    typed.pos,
                    format!("declaredType '{dt}' of variable '{name}' is not defined in <TypeDefinitions>"),
                ));
            }
        },
    };

    let mut dimensions = Vec::new();
    if v3 {
        for d in e.children_named("Dimension") {
            let start = d.int_attr::<u64>(ctx, "start")?;
            let vr = d.int_attr::<u32>(ctx, "valueReference")?;
            dimensions.push(match (start, vr) {
                (Some(n), None) => Dimension::Fixed(n),
                (None, Some(vr)) => Dimension::Variable(vr),
                _ => {
                    return Err(ctx.err(
                        d.pos,
                        "<Dimension> needs exactly one of 'start' and 'valueReference'",
                    ));
                }
            });
        }
    }

    let start = parse_start(ctx, typed, var_type, v3, dimensions.is_empty())?;
    let from_type = |key: &str, pick: fn(&TypeDefinition) -> Option<String>| {
        typed.attr_string(key).or_else(|| decl.and_then(pick))
    };
    let from_type_f64 =
        |key: &str, pick: fn(&TypeDefinition) -> Option<f64>| -> Result<Option<f64>> {
            Ok(typed.f64_attr(ctx, key)?.or_else(|| decl.and_then(pick)))
        };
    let derivative = match typed.attr("derivative") {
        None => None,
        Some(raw) => Some((
            raw.trim()
                .parse::<u64>()
                .map_err(|_| typed.bad(ctx, "derivative", raw, "not an unsigned integer"))?,
            typed.pos,
        )),
    };

    let name_for_clock = name.clone();
    let variable = Variable {
        name,
        value_reference,
        var_type,
        description: e.attr_string("description"),
        causality,
        variability,
        initial,
        declared_type,
        start,
        unit: from_type("unit", |t| t.unit.clone()),
        display_unit: from_type("displayUnit", |t| t.display_unit.clone()),
        quantity: from_type("quantity", |t| t.quantity.clone()),
        min: from_type_f64("min", |t| t.min)?,
        max: from_type_f64("max", |t| t.max)?,
        nominal: from_type_f64("nominal", |t| t.nominal)?,
        derivative_of: None,
        dimensions,
        intermediate_update: v3 && e.bool_attr(ctx, "intermediateUpdate")?,
        aliases: if v3 {
            parse_aliases(ctx, e)?
        } else {
            Vec::new()
        },
        alias_of: None,
        clocks: if v3 {
            parse_clocks_attr(ctx, e)?
        } else {
            Vec::new()
        },
        clock: if var_type == VariableType::Clock {
            Some(parse_clock(
                ctx,
                e,
                decl.and_then(|t| t.clock.as_ref()),
                &name_for_clock,
            )?)
        } else {
            None
        },
        line: e.pos.line,
    };
    Ok(Some((variable, derivative)))
}

fn parse_variables(
    ctx: &Ctx<'_>,
    vars: &Elem,
    type_definitions: &[TypeDefinition],
    v3: bool,
    derivatives: &mut Vec<(VariableIndex, u64, Loc)>,
) -> Result<Vec<Variable>> {
    let types: HashMap<&str, &TypeDefinition> = type_definitions
        .iter()
        .map(|t| (t.name.as_str(), t))
        .collect();
    let mut out: Vec<Variable> = Vec::new();
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut vrs: HashMap<u32, usize> = HashMap::new();
    for e in &vars.children {
        let Some((var, derivative)) = parse_variable(ctx, e, &types, v3)? else {
            continue;
        };
        if let Some(&other) = names.get(&var.name) {
            let line = out.get(other).map_or(0, |v| v.line);
            return Err(ctx.err(
                e.pos,
                format!(
                    "variable name '{}' is already used by the variable at line {line}",
                    var.name
                ),
            ));
        }
        // FMI 3 value references are unique across all variables (aliases
        // are <Alias> children); FMI 2 allows aliases (same vr and type).
        if v3 {
            if let Some(&other) = vrs.get(&var.value_reference) {
                let (other_name, line) = out
                    .get(other)
                    .map_or((String::new(), 0), |v| (v.name.clone(), v.line));
                return Err(ctx.err(
                    e.pos,
                    format!(
                        "valueReference {} of variable '{}' is already used by variable '{other_name}' (line {line})",
                        var.value_reference, var.name
                    ),
                ));
            }
            vrs.insert(var.value_reference, out.len());
        }
        if let Some((raw, pos)) = derivative {
            derivatives.push((out.len(), raw, pos));
        }
        names.insert(var.name.clone(), out.len());
        out.push(var);
    }
    if v3 {
        check_alias_names(ctx, vars, &out)?;
    } else {
        group_fmi2_aliases(&mut out);
    }
    Ok(out)
}

/// The FMI 3 `<Alias>` children of a variable element.
fn parse_aliases(ctx: &Ctx<'_>, e: &Elem) -> Result<Vec<Alias>> {
    let mut out = Vec::new();
    for a in e.children_named("Alias") {
        out.push(Alias {
            name: a.req(ctx, "name")?.to_string(),
            description: a.attr_string("description"),
            display_unit: a.attr_string("displayUnit"),
            variable: None,
        });
    }
    Ok(out)
}

/// FMI 3.0 sec. 2.4.7.3: an alias name is unique among all variables and
/// aliases.
fn check_alias_names(ctx: &Ctx<'_>, vars: &Elem, variables: &[Variable]) -> Result<()> {
    if variables.iter().all(|v| v.aliases.is_empty()) {
        return Ok(());
    }
    let mut names: HashMap<&str, &str> = variables
        .iter()
        .map(|v| (v.name.as_str(), v.name.as_str()))
        .collect();
    for v in variables {
        for a in &v.aliases {
            if let Some(other) = names.insert(a.name.as_str(), v.name.as_str()) {
                let what = if other == a.name {
                    format!(
                        "the name of a variable (line {})",
                        line_of(variables, other)
                    )
                } else {
                    format!("an alias of variable '{other}'")
                };
                // The <Alias> element, for its position.
                let pos = vars
                    .children
                    .iter()
                    .find(|e| e.attr("name") == Some(v.name.as_str()))
                    .and_then(|e| {
                        e.children_named("Alias")
                            .find(|x| x.attr("name") == Some(a.name.as_str()))
                    })
                    .map_or(vars.pos, |x| x.pos);
                return Err(ctx.err(
                    pos,
                    format!(
                        "alias name '{}' of variable '{}' is already {what}: names must be unique among variables and aliases",
                        a.name, v.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn line_of(variables: &[Variable], name: &str) -> usize {
    variables
        .iter()
        .find(|v| v.name == name)
        .map_or(0, |v| v.line)
}

/// FMI 2.0 sec. 2.2.7: variables of the same base type with the same
/// `valueReference` are aliases. Each alias set is listed under one of
/// its variables ([`Variable::aliases`]), the others point to it
/// ([`Variable::alias_of`]): the one the importer sets (an input, a
/// parameter, else the one with a start value, the standard allowing at
/// most one), else an output, else the first.
fn group_fmi2_aliases(variables: &mut [Variable]) {
    // Enumerations are fmi2Integer values.
    let base_type = |t: VariableType| match t {
        VariableType::Enumeration => VariableType::Int32,
        t => t,
    };
    let mut sets: HashMap<(u32, VariableType), Vec<VariableIndex>> = HashMap::new();
    for (i, v) in variables.iter().enumerate() {
        sets.entry((v.value_reference, base_type(v.var_type)))
            .or_default()
            .push(i);
    }
    let rank = |v: &Variable| -> usize {
        match v.causality {
            Causality::Input => 0,
            Causality::Parameter | Causality::StructuralParameter => 1,
            _ if v.start.is_some() && v.variability != Variability::Constant => 2,
            Causality::Output => 3,
            Causality::CalculatedParameter => 4,
            Causality::Local => 5,
            Causality::Independent => 6,
        }
    };
    let mut sets: Vec<Vec<VariableIndex>> = sets.into_values().filter(|s| s.len() > 1).collect();
    sets.sort_unstable();
    for set in sets {
        let Some(&base) = set
            .iter()
            .min_by_key(|&&i| (variables.get(i).map_or(usize::MAX, rank), i))
        else {
            continue;
        };
        let mut aliases = Vec::new();
        for &i in set.iter().filter(|&&i| i != base) {
            if let Some(v) = variables.get_mut(i) {
                v.alias_of = Some(base);
                aliases.push(Alias {
                    name: v.name.clone(),
                    description: v.description.clone(),
                    display_unit: v.display_unit.clone(),
                    variable: Some(i),
                });
            }
        }
        if let Some(b) = variables.get_mut(base) {
            b.aliases = aliases;
        }
    }
}

/// Resolves model-structure references: FMI 2 by 1-based index, FMI 3 by
/// value reference.
struct Resolver {
    v3: bool,
    count: usize,
    by_vr: HashMap<u32, VariableIndex>,
}

impl Resolver {
    fn new(variables: &[Variable], v3: bool) -> Self {
        let by_vr = if v3 {
            variables
                .iter()
                .enumerate()
                .map(|(i, v)| (v.value_reference, i))
                .collect()
        } else {
            HashMap::new()
        };
        Resolver {
            v3,
            count: variables.len(),
            by_vr,
        }
    }

    fn resolve(&self, ctx: &Ctx<'_>, raw: u64, pos: Loc, what: &str) -> Result<VariableIndex> {
        if self.v3 {
            u32::try_from(raw)
                .ok()
                .and_then(|vr| self.by_vr.get(&vr).copied())
                .ok_or_else(|| {
                    ctx.err(pos, format!("{what}: no variable has valueReference {raw}"))
                })
        } else {
            usize::try_from(raw)
                .ok()
                .filter(|&i| i >= 1 && i <= self.count)
                .map(|i| i - 1)
                .ok_or_else(|| {
                    ctx.err(
                        pos,
                        format!(
                            "{what}: variable index {raw} is out of range (1 to {}; FMI 2 indices are 1-based positions in <ModelVariables>)",
                            self.count
                        ),
                    )
                })
        }
    }

    fn parse_ref(&self, ctx: &Ctx<'_>, e: &Elem, token: &str, what: &str) -> Result<VariableIndex> {
        let raw = token
            .parse::<u64>()
            .map_err(|_| e.bad(ctx, what, token, "not an unsigned integer"))?;
        self.resolve(ctx, raw, e.pos, what)
    }
}

fn parse_unknown(ctx: &Ctx<'_>, u: &Elem, resolver: &Resolver, v3: bool) -> Result<Unknown> {
    let key = if v3 { "valueReference" } else { "index" };
    let token = u.req(ctx, key)?.trim();
    let variable = resolver.parse_ref(ctx, u, token, key)?;
    let dependencies = match u.attr("dependencies") {
        None => {
            if u.attr("dependenciesKind").is_some() {
                return Err(ctx.err(
                    u.pos,
                    format!("<{}> has 'dependenciesKind' without 'dependencies'", u.name),
                ));
            }
            Dependencies::All
        }
        Some(list) => {
            let kinds: Option<Vec<DependencyKind>> = match u.attr("dependenciesKind") {
                None => None,
                Some(kinds) => Some(
                    kinds
                        .split_ascii_whitespace()
                        .map(|k| {
                            Ok(match k {
                                "dependent" => DependencyKind::Dependent,
                                "constant" => DependencyKind::Constant,
                                "fixed" => DependencyKind::Fixed,
                                "tunable" => DependencyKind::Tunable,
                                "discrete" => DependencyKind::Discrete,
                                _ => {
                                    return Err(u.bad(
                                        ctx,
                                        "dependenciesKind",
                                        k,
                                        "expected dependent, constant, fixed, tunable or discrete",
                                    ));
                                }
                            })
                        })
                        .collect::<Result<Vec<_>>>()?,
                ),
            };
            let tokens: Vec<&str> = list.split_ascii_whitespace().collect();
            if let Some(kinds) = &kinds
                && kinds.len() != tokens.len()
            {
                return Err(ctx.err(
                    u.pos,
                    format!(
                        "<{}>: 'dependencies' has {} entries but 'dependenciesKind' has {}",
                        u.name,
                        tokens.len(),
                        kinds.len()
                    ),
                ));
            }
            let mut deps = Vec::with_capacity(tokens.len());
            for (i, t) in tokens.iter().enumerate() {
                deps.push(Dependency {
                    variable: resolver.parse_ref(ctx, u, t, "dependencies")?,
                    kind: kinds.as_ref().and_then(|k| k.get(i).copied()),
                });
            }
            Dependencies::Listed(deps)
        }
    };
    Ok(Unknown {
        variable,
        dependencies,
    })
}

fn parse_model_structure(
    ctx: &Ctx<'_>,
    ms: &Elem,
    resolver: &Resolver,
    v3: bool,
) -> Result<ModelStructure> {
    let mut out = ModelStructure::default();
    if v3 {
        for u in &ms.children {
            let list = match u.name.as_str() {
                "Output" => &mut out.outputs,
                "ContinuousStateDerivative" => &mut out.derivatives,
                "InitialUnknown" => &mut out.initial_unknowns,
                "ClockedState" => &mut out.clocked_states,
                "EventIndicator" => &mut out.event_indicators,
                _ => continue,
            };
            list.push(parse_unknown(ctx, u, resolver, true)?);
        }
    } else {
        for group in &ms.children {
            let list = match group.name.as_str() {
                "Outputs" => &mut out.outputs,
                "Derivatives" => &mut out.derivatives,
                "InitialUnknowns" => &mut out.initial_unknowns,
                _ => continue,
            };
            for u in group.children_named("Unknown") {
                list.push(parse_unknown(ctx, u, resolver, false)?);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_count_characters() {
        let xml = "ab\ncdé\nf";
        let mut l = Locator::new(xml);
        assert_eq!(l.at(0), Loc { line: 1, column: 1 });
        assert_eq!(l.at(3), Loc { line: 2, column: 1 });
        assert_eq!(l.at(7), Loc { line: 2, column: 4 });
        // Inside a multi-byte character: the character's start.
        assert_eq!(l.at(6), Loc { line: 2, column: 3 });
        assert_eq!(l.at(8), Loc { line: 3, column: 1 });
        assert_eq!(l.at(1000), Loc { line: 3, column: 2 });
        assert_eq!(l.at(1), Loc { line: 1, column: 2 });
    }

    #[test]
    fn hex_decoding() {
        assert_eq!(decode_hex("0aFF"), Some(vec![0x0a, 0xff]));
        assert_eq!(decode_hex(""), Some(vec![]));
        assert_eq!(decode_hex("abc"), None);
        assert_eq!(decode_hex("zz"), None);
    }

    #[test]
    fn floats() {
        assert_eq!(parse_f64(" 1.5 "), Some(1.5));
        assert_eq!(parse_f64("INF"), Some(f64::INFINITY));
        assert_eq!(parse_f64("1e999"), Some(f64::INFINITY));
        assert_eq!(parse_f64("-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64("+1.5"), Some(1.5));
        assert_eq!(parse_f64("++1"), None);
        assert!(parse_f64("NaN").is_some_and(f64::is_nan));
        assert_eq!(parse_f64("abc"), None);
        assert_eq!(parse_f64(""), None);
    }
}
