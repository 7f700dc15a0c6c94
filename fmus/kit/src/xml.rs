//! `modelDescription.xml` for FMI 2.0 and FMI 3.0 (Co-Simulation and Model
//! Exchange), in the element order of the standard's schema.

use std::fmt::Write as _;

use crate::caps::{Capabilities, FmiVersion, token};
use crate::instance::LOG_CATEGORIES;
use crate::model::{Causality, Dimension, ModelSpec, VarType, Variable};
use crate::units::Unit;

/// Escapes text for an XML attribute value.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
    out
}

/// Formats a float so it round-trips (shortest representation).
pub fn num(x: f64) -> String {
    // Debug formatting is the shortest representation that round-trips and
    // is a valid xs:double for finite values ("400.0", "1e-5").
    format!("{x:?}")
}

fn units_used(spec: &ModelSpec) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    for v in &spec.variables {
        if let Some(u) = v.unit
            && !units.iter().any(|x| x.name == u.name)
        {
            units.push(u);
        }
    }
    units
}

fn write_units(out: &mut String, spec: &ModelSpec) {
    let units = units_used(spec);
    if units.is_empty() {
        return;
    }
    out.push_str("  <UnitDefinitions>\n");
    for u in units {
        if !u.has_base {
            let _ = writeln!(out, "    <Unit name=\"{}\"/>", escape(u.name));
            continue;
        }
        let mut base = String::new();
        let exponents = [
            ("kg", u.kg),
            ("m", u.m),
            ("s", u.s),
            ("A", u.a),
            ("K", u.k),
            ("mol", u.mol),
            ("cd", u.cd),
            ("rad", u.rad),
        ];
        for (name, e) in exponents {
            if e != 0 {
                let _ = write!(base, " {name}=\"{e}\"");
            }
        }
        if u.factor != 1.0 {
            let _ = write!(base, " factor=\"{}\"", num(u.factor));
        }
        if u.offset != 0.0 {
            let _ = write!(base, " offset=\"{}\"", num(u.offset));
        }
        let _ = writeln!(out, "    <Unit name=\"{}\">", escape(u.name));
        let _ = writeln!(out, "      <BaseUnit{base}/>");
        out.push_str("    </Unit>\n");
    }
    out.push_str("  </UnitDefinitions>\n");
}

fn write_log_categories(out: &mut String) {
    out.push_str("  <LogCategories>\n");
    for (name, desc) in LOG_CATEGORIES {
        let _ = writeln!(
            out,
            "    <Category name=\"{name}\" description=\"{}\"/>",
            escape(desc)
        );
    }
    out.push_str("  </LogCategories>\n");
}

fn write_experiment(out: &mut String, spec: &ModelSpec) {
    let e = spec.experiment;
    let _ = writeln!(
        out,
        "  <DefaultExperiment startTime=\"{}\" stopTime=\"{}\" stepSize=\"{}\"/>",
        num(e.start_time),
        num(e.stop_time),
        num(e.step_size)
    );
}

fn common_attrs(v: &Variable) -> String {
    let mut a = format!("name=\"{}\" valueReference=\"{}\"", escape(v.name), v.vr);
    if !v.description.is_empty() {
        let _ = write!(a, " description=\"{}\"", escape(v.description));
    }
    let _ = write!(a, " causality=\"{}\"", v.causality.as_str());
    let _ = write!(a, " variability=\"{}\"", v.variability.as_str());
    if let Some(i) = v.initial {
        // FMI 2 and 3 forbid `initial` on inputs and the independent variable.
        if !matches!(v.causality, Causality::Input | Causality::Independent) {
            let _ = write!(a, " initial=\"{}\"", i.as_str());
        }
    }
    // FMI 3 clocked variables (never in an FMI 2 build).
    if !v.clocks.is_empty() {
        let list: Vec<String> = v.clocks.iter().map(u32::to_string).collect();
        let _ = write!(a, " clocks=\"{}\"", list.join(" "));
    }
    a
}

/// An FMI 3 `<Clock>` element (fmi3Variable.xsd `fmi3ClockAttributes`).
fn fmi3_clock(v: &Variable, c: &crate::model::ClockAttrs) -> String {
    let mut a = format!("name=\"{}\" valueReference=\"{}\"", escape(v.name), v.vr);
    if !v.description.is_empty() {
        let _ = write!(a, " description=\"{}\"", escape(v.description));
    }
    let _ = write!(
        a,
        " causality=\"{}\" variability=\"discrete\" intervalVariability=\"{}\"",
        v.causality.as_str(),
        c.interval_variability.as_str()
    );
    if c.can_be_deactivated {
        a.push_str(" canBeDeactivated=\"true\"");
    }
    if let Some(p) = c.priority {
        let _ = write!(a, " priority=\"{p}\"");
    }
    if let Some(x) = c.interval_decimal {
        let _ = write!(a, " intervalDecimal=\"{}\"", num(x));
    }
    if let Some(x) = c.shift_decimal {
        let _ = write!(a, " shiftDecimal=\"{}\"", num(x));
    }
    format!("    <Clock {a}/>\n")
}

fn type_attrs(v: &Variable) -> String {
    let mut a = String::new();
    if v.ty.is_float() {
        if let Some(q) = v.effective_quantity() {
            let _ = write!(a, " quantity=\"{}\"", escape(q));
        }
        if let Some(u) = v.unit {
            let _ = write!(a, " unit=\"{}\"", escape(u.name));
        }
    }
    let fmt = |x: f64| value_text(v.ty, x);
    // The Boolean and String elements have no min / max (FMI 2
    // fmi2ScalarVariable.xsd, FMI 3 fmi3Variable.xsd); `ModelSpec::check`
    // refuses them.
    if !matches!(v.ty, VarType::Boolean | VarType::String) {
        if let Some(m) = v.min {
            let _ = write!(a, " min=\"{}\"", fmt(m));
        }
        if let Some(m) = v.max {
            let _ = write!(a, " max=\"{}\"", fmt(m));
        }
    }
    if let Some(s) = v.start {
        let _ = write!(a, " start=\"{}\"", fmt(s));
    }
    a
}

/// A value of type `ty` as written in an attribute.
fn value_text(ty: VarType, x: f64) -> String {
    match ty {
        VarType::Real => num(x),
        // The shortest f32 representation (`ModelSpec::check` makes sure the
        // value is an f32 value): start="0.1", not "0.10000000149011612".
        VarType::Float32 => format!("{:?}", x as f32),
        VarType::Boolean => (if x != 0.0 { "true" } else { "false" }).to_string(),
        // Whole numbers within the type's range (`ModelSpec::check`); i128
        // holds every Int64 and UInt64 value.
        _ => format!("{}", x as i128),
    }
}

/// FMI 3 arrays: the `start` attribute, the start values at the start
/// shape, row-major, space-separated (`start="1.0 0.0 0.0 1.0"`: FMI 3
/// declares `start` a list of values), if the array has one.
fn array_start_attr(spec: &ModelSpec, v: &Variable) -> String {
    if v.array_start.is_none() {
        return String::new();
    }
    let values: Vec<String> = spec
        .array_start_values(v)
        .into_iter()
        .map(|x| value_text(v.ty, x))
        .collect();
    format!(" start=\"{}\"", values.join(" "))
}

/// FMI 3 arrays: the `<Dimension>` children, fixed (`start`) or the value
/// reference of a structural parameter.
fn fmi3_dimensions(v: &Variable) -> String {
    let mut out = String::new();
    for d in &v.dimensions {
        let _ = match d {
            Dimension::Fixed(n) => writeln!(out, "      <Dimension start=\"{n}\"/>"),
            Dimension::Structural(vr) => {
                writeln!(out, "      <Dimension valueReference=\"{vr}\"/>")
            }
        };
    }
    out
}

/// FMI 2: the attributes of the `<String>` element (its start value).
fn fmi2_string_attrs(v: &Variable) -> String {
    v.start_string
        .map_or(String::new(), |s| format!(" start=\"{}\"", escape(s)))
}

/// The end of an FMI 3 variable element: `/>`, or its `<Alias>` children
/// ([`ModelSpec::alias`]) and the closing tag.
fn fmi3_aliases(spec: &ModelSpec, v: &Variable) -> String {
    let mut aliases = spec.aliases_of(v.vr).peekable();
    if aliases.peek().is_none() {
        return "/>".to_string();
    }
    let mut out = ">\n".to_string();
    for (name, description) in aliases {
        let _ = write!(out, "      <Alias name=\"{}\"", escape(name));
        if !description.is_empty() {
            let _ = write!(out, " description=\"{}\"", escape(description));
        }
        out.push_str("/>\n");
    }
    let _ = write!(out, "    </{}>", v.ty.fmi3_name());
    out
}

fn dependency_attrs(v: &Variable, index_of: &dyn Fn(u32) -> u32) -> String {
    let mut deps: Vec<(u32, &str)> = v
        .dependencies
        .iter()
        .map(|(d, k)| (index_of(*d), k.as_str()))
        .collect();
    deps.sort_by_key(|d| d.0);
    let list: Vec<String> = deps.iter().map(|d| d.0.to_string()).collect();
    let kinds: Vec<&str> = deps.iter().map(|d| d.1).collect();
    format!(
        " dependencies=\"{}\" dependenciesKind=\"{}\"",
        list.join(" "),
        kinds.join(" ")
    )
}

fn initial_dependency_attrs(v: &Variable, index_of: &dyn Fn(u32) -> u32) -> String {
    match &v.initial_dependencies {
        None => String::new(),
        Some(d) => {
            let mut idx: Vec<u32> = d.iter().map(|x| index_of(*x)).collect();
            idx.sort_unstable();
            let list: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
            format!(" dependencies=\"{}\"", list.join(" "))
        }
    }
}

/// `modelDescription.xml` for one build. A model with FMI 3 only types
/// ([`ModelSpec::supports`]) has no valid FMI 2 description
/// ([`crate::package()`] refuses to package one).
pub fn model_description(
    spec: &ModelSpec,
    version: FmiVersion,
    caps: &Capabilities,
    model_identifier: &str,
) -> String {
    match version {
        FmiVersion::Fmi2 => fmi2(spec, caps, model_identifier),
        FmiVersion::Fmi3 => fmi3(spec, caps, model_identifier),
    }
}

fn header(out: &mut String, spec: &ModelSpec, version: FmiVersion, caps: &Capabilities) {
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let (ver, tok_attr) = match version {
        FmiVersion::Fmi2 => ("2.0", "guid"),
        FmiVersion::Fmi3 => ("3.0", "instantiationToken"),
    };
    let _ = writeln!(
        out,
        "<fmiModelDescription fmiVersion=\"{ver}\" modelName=\"{}\" {tok_attr}=\"{}\" description=\"{}\" \
         generationTool=\"cosim fmu-kit {}\" variableNamingConvention=\"flat\"{}>",
        escape(spec.name),
        escape(&token(spec, version, caps)),
        escape(spec.description),
        env!("CARGO_PKG_VERSION"),
        if version == FmiVersion::Fmi2 {
            format!(
                " numberOfEventIndicators=\"{}\"",
                spec.model_exchange
                    .as_ref()
                    .map_or(0, |me| me.event_indicators.len())
            )
        } else {
            String::new()
        }
    );
}

/// The attributes of a continuous state and of a state derivative: the
/// `derivative` of a derivative variable (`reference` turns the state's
/// value reference into what the version refers by: FMI 2 the 1-based
/// index, FMI 3 the value reference), the `reinit` and `nominal` of a state.
fn state_attrs(spec: &ModelSpec, v: &Variable, reference: &dyn Fn(u32) -> u32) -> String {
    let Some(me) = &spec.model_exchange else {
        return String::new();
    };
    let mut a = String::new();
    if let Some(s) = me.derivative_of(v.vr) {
        let _ = write!(a, " derivative=\"{}\"", reference(s.state));
    }
    if let Some(s) = me.state_of(v.vr) {
        if s.reinit {
            a.push_str(" reinit=\"true\"");
        }
        if let Some(n) = s.nominal {
            let _ = write!(a, " nominal=\"{}\"", num(n));
        }
    }
    a
}

/// The `InitialUnknowns`: outputs with `initial` approx or calculated and,
/// with Model Exchange, the continuous states and state derivatives with
/// `initial` approx or calculated (FMI 2.0 sec. 2.2.8, FMI 3.0 sec.
/// 2.4.8), each once, in variable order.
fn initial_unknowns(spec: &ModelSpec) -> impl Iterator<Item = &Variable> {
    spec.variables.iter().filter(move |v| {
        v.is_initial_unknown()
            || spec.model_exchange.as_ref().is_some_and(|me| {
                (me.state_of(v.vr).is_some() || me.derivative_of(v.vr).is_some())
                    && matches!(
                        v.effective_initial(),
                        Some(crate::model::Initial::Approx | crate::model::Initial::Calculated)
                    )
            })
    })
}

/// The state derivatives in the order of the state vector.
fn state_derivatives(spec: &ModelSpec) -> impl Iterator<Item = &Variable> {
    spec.model_exchange
        .iter()
        .flat_map(|me| me.states.iter())
        .filter_map(|s| spec.variable(s.derivative))
}

fn fmi2(spec: &ModelSpec, caps: &Capabilities, id: &str) -> String {
    let mut out = String::new();
    header(&mut out, spec, FmiVersion::Fmi2, caps);
    if let Some(me) = &spec.model_exchange {
        let _ = writeln!(
            out,
            "  <ModelExchange modelIdentifier=\"{}\" needsExecutionTool=\"false\" \
             completedIntegratorStepNotNeeded=\"{}\" canBeInstantiatedOnlyOncePerProcess=\"false\" \
             canNotUseMemoryManagementFunctions=\"true\" canGetAndSetFMUstate=\"{}\" \
             canSerializeFMUstate=\"{}\" providesDirectionalDerivative=\"{}\"/>",
            escape(id),
            !me.needs_completed_integrator_step,
            caps.get_set_state,
            caps.serialize_state,
            caps.directional_derivatives && me.partial_derivatives
        );
    }
    if spec.has_co_simulation() {
        let _ = writeln!(
            out,
            "  <CoSimulation modelIdentifier=\"{}\" canHandleVariableCommunicationStepSize=\"{}\" \
             canInterpolateInputs=\"{}\" maxOutputDerivativeOrder=\"{}\" canRunAsynchronuously=\"false\" \
             canBeInstantiatedOnlyOncePerProcess=\"false\" canNotUseMemoryManagementFunctions=\"true\" \
             canGetAndSetFMUstate=\"{}\" canSerializeFMUstate=\"{}\" providesDirectionalDerivative=\"{}\"/>",
            escape(id),
            caps.variable_step,
            caps.interpolate_inputs,
            caps.max_output_derivative_order,
            caps.get_set_state,
            caps.serialize_state,
            caps.directional_derivatives
        );
    }
    write_units(&mut out, spec);
    write_log_categories(&mut out);
    write_experiment(&mut out, spec);
    // FMI 2 refers to variables by 1-based index in ModelVariables.
    let index_of = |vr: u32| {
        spec.variables
            .iter()
            .position(|v| v.vr == vr)
            .map_or(0, |p| p as u32 + 1)
    };
    out.push_str("  <ModelVariables>\n");
    for (i, v) in spec.variables.iter().enumerate() {
        let _ = writeln!(out, "    <!-- index {} -->", i + 1);
        let _ = writeln!(out, "    <ScalarVariable {}>", common_attrs(v));
        let attrs = if v.ty == VarType::String {
            fmi2_string_attrs(v)
        } else {
            type_attrs(v) + &state_attrs(spec, v, &index_of)
        };
        let _ = writeln!(out, "      <{}{attrs}/>", v.ty.fmi2_name());
        out.push_str("    </ScalarVariable>\n");
    }
    out.push_str("  </ModelVariables>\n");
    out.push_str("  <ModelStructure>\n");
    let outputs: Vec<&Variable> = spec.with_causality(Causality::Output).collect();
    if !outputs.is_empty() {
        out.push_str("    <Outputs>\n");
        for v in &outputs {
            let _ = writeln!(
                out,
                "      <Unknown index=\"{}\"{}/>",
                index_of(v.vr),
                dependency_attrs(v, &index_of)
            );
        }
        out.push_str("    </Outputs>\n");
    }
    let derivatives: Vec<&Variable> = state_derivatives(spec).collect();
    if !derivatives.is_empty() {
        out.push_str("    <Derivatives>\n");
        for v in derivatives {
            let _ = writeln!(
                out,
                "      <Unknown index=\"{}\"{}/>",
                index_of(v.vr),
                dependency_attrs(v, &index_of)
            );
        }
        out.push_str("    </Derivatives>\n");
    }
    let initial: Vec<&Variable> = initial_unknowns(spec).collect();
    if !initial.is_empty() {
        out.push_str("    <InitialUnknowns>\n");
        for v in initial {
            let _ = writeln!(
                out,
                "      <Unknown index=\"{}\"{}/>",
                index_of(v.vr),
                initial_dependency_attrs(v, &index_of)
            );
        }
        out.push_str("    </InitialUnknowns>\n");
    }
    out.push_str("  </ModelStructure>\n");
    out.push_str("</fmiModelDescription>\n");
    out
}

fn fmi3(spec: &ModelSpec, caps: &Capabilities, id: &str) -> String {
    let mut out = String::new();
    header(&mut out, spec, FmiVersion::Fmi3, caps);
    if let Some(me) = &spec.model_exchange {
        let dd = caps.directional_derivatives && me.partial_derivatives;
        let _ = writeln!(
            out,
            "  <ModelExchange modelIdentifier=\"{}\" needsExecutionTool=\"false\" \
             canBeInstantiatedOnlyOncePerProcess=\"false\" canGetAndSetFMUState=\"{}\" \
             canSerializeFMUState=\"{}\" providesDirectionalDerivatives=\"{dd}\" \
             providesAdjointDerivatives=\"{dd}\" providesPerElementDependencies=\"false\" \
             needsCompletedIntegratorStep=\"{}\" providesEvaluateDiscreteStates=\"false\"/>",
            escape(id),
            caps.get_set_state,
            caps.serialize_state,
            me.needs_completed_integrator_step
        );
    }
    if spec.has_co_simulation() {
        let _ = writeln!(
            out,
            "  <CoSimulation modelIdentifier=\"{}\" canHandleVariableCommunicationStepSize=\"{}\" \
         maxOutputDerivativeOrder=\"{}\" canBeInstantiatedOnlyOncePerProcess=\"false\" \
         canGetAndSetFMUState=\"{}\" canSerializeFMUState=\"{}\" providesDirectionalDerivatives=\"{}\" \
         providesAdjointDerivatives=\"{}\" providesPerElementDependencies=\"false\" \
         providesIntermediateUpdate=\"{}\" mightReturnEarlyFromDoStep=\"{}\" \
         canReturnEarlyAfterIntermediateUpdate=\"false\" hasEventMode=\"{}\" \
         providesEvaluateDiscreteStates=\"false\"/>",
            escape(id),
            caps.variable_step,
            caps.max_output_derivative_order,
            caps.get_set_state,
            caps.serialize_state,
            caps.directional_derivatives,
            caps.directional_derivatives,
            caps.intermediate_update,
            spec.might_return_early,
            spec.event_mode
        );
    }
    if spec.scheduled_execution {
        let _ = writeln!(
            out,
            "  <ScheduledExecution modelIdentifier=\"{}\" needsExecutionTool=\"false\" \
             canBeInstantiatedOnlyOncePerProcess=\"false\" canGetAndSetFMUState=\"{}\" \
             canSerializeFMUState=\"{}\" providesDirectionalDerivatives=\"false\" \
             providesAdjointDerivatives=\"false\" providesPerElementDependencies=\"false\"/>",
            escape(id),
            caps.get_set_state,
            caps.serialize_state
        );
    }
    write_units(&mut out, spec);
    write_log_categories(&mut out);
    write_experiment(&mut out, spec);
    out.push_str("  <ModelVariables>\n");
    for v in &spec.variables {
        if let Some(c) = &v.clock {
            out.push_str(&fmi3_clock(v, c));
            continue;
        }
        // FMI 3.0 fmi3ArrayableVariable: `intermediateUpdate` on the
        // continuous inputs the importer may set in Intermediate Update Mode.
        let intermediate = if caps.intermediate_update && v.is_continuous_real_input() {
            " intermediateUpdate=\"true\""
        } else {
            ""
        };
        if v.is_array() {
            // FMI 3.0 fmi3ArrayableVariable: the <Dimension> children;
            // start values space-separated (no intermediate update for
            // arrays, `Variable::is_continuous_real_input`).
            let _ = writeln!(
                out,
                "    <{} {}{}{}>",
                v.ty.fmi3_name(),
                common_attrs(v),
                type_attrs(v),
                array_start_attr(spec, v)
            );
            out.push_str(&fmi3_dimensions(v));
            let _ = writeln!(out, "    </{}>", v.ty.fmi3_name());
            continue;
        }
        if v.ty == VarType::String {
            // FMI 3.0 fmi3Variable.xsd: a String's start value is a
            // <Start value="..."/> child (one per element of an array).
            match v.start_string {
                Some(s) => {
                    let _ = writeln!(out, "    <String {}>", common_attrs(v));
                    let _ = writeln!(out, "      <Start value=\"{}\"/>", escape(s));
                    out.push_str("    </String>\n");
                }
                None => {
                    let _ = writeln!(out, "    <String {}/>", common_attrs(v));
                }
            }
            continue;
        }
        let _ = writeln!(
            out,
            "    <{} {}{intermediate}{}{}{}",
            v.ty.fmi3_name(),
            common_attrs(v),
            type_attrs(v),
            state_attrs(spec, v, &|vr| vr),
            fmi3_aliases(spec, v)
        );
    }
    out.push_str("  </ModelVariables>\n");
    let by_vr = |vr: u32| vr;
    out.push_str("  <ModelStructure>\n");
    for v in spec.with_causality(Causality::Output) {
        let _ = writeln!(
            out,
            "    <Output valueReference=\"{}\"{}/>",
            v.vr,
            dependency_attrs(v, &by_vr)
        );
    }
    for v in state_derivatives(spec) {
        let _ = writeln!(
            out,
            "    <ContinuousStateDerivative valueReference=\"{}\"{}/>",
            v.vr,
            dependency_attrs(v, &by_vr)
        );
    }
    for v in initial_unknowns(spec) {
        let _ = writeln!(
            out,
            "    <InitialUnknown valueReference=\"{}\"{}/>",
            v.vr,
            initial_dependency_attrs(v, &by_vr)
        );
    }
    for z in spec
        .model_exchange
        .iter()
        .flat_map(|me| &me.event_indicators)
    {
        let _ = writeln!(out, "    <EventIndicator valueReference=\"{z}\"/>");
    }
    out.push_str("  </ModelStructure>\n");
    out.push_str("</fmiModelDescription>\n");
    out
}
