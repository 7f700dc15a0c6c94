//! Aliases (FMI 3 `<Alias>` elements, FMI 2 variables sharing a value
//! reference and type) and the interfaces an FMU declares: parsed, looked
//! up by name, and shown by `cosim inspect`.

#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;

use cosim_fmi::FmiError;
use cosim_fmi::inspect::InspectReport;
use cosim_fmi::model_description::{
    Causality, ModelDescription, VariableType, parse_model_description,
};

fn parse(xml: &str) -> ModelDescription {
    parse_model_description(xml, Path::new("md.xml")).unwrap_or_else(|e| panic!("{e}"))
}

fn parse_err(xml: &str) -> (usize, String) {
    match parse_model_description(xml, Path::new("md.xml")) {
        Err(FmiError::ModelDescription { line, message, .. }) => (line, message),
        other => panic!("expected a model description error, got {other:?}"),
    }
}

/// BouncingBall of the Modelica Reference FMUs, in short: `h` has the
/// alias `h_ft`; one integer variable has two aliases.
const FMI3: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="Ball" instantiationToken="t">
  <CoSimulation modelIdentifier="Ball"/>
  <UnitDefinitions>
    <Unit name="m"><BaseUnit m="1"/><DisplayUnit name="ft" factor="3.280839895"/></Unit>
  </UnitDefinitions>
  <ModelVariables>
    <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
    <Float64 name="h" valueReference="1" causality="output" variability="continuous" initial="exact" start="1" unit="m" description="Position of the ball">
      <Alias name="h_ft" description="Position in feet" displayUnit="ft"/>
    </Float64>
    <Int32 name="n" valueReference="2" causality="parameter" variability="fixed" start="3">
      <Alias name="count"/>
      <Alias name="number" description="n again"/>
    </Int32>
    <Float64 name="x" valueReference="3" causality="output" variability="continuous">
      <Dimension start="2"/>
      <Alias name="x_alias"/>
    </Float64>
  </ModelVariables>
  <ModelStructure>
    <Output valueReference="1"/>
    <Output valueReference="3"/>
  </ModelStructure>
</fmiModelDescription>"#;

#[test]
fn fmi3_aliases_are_parsed_and_found_by_name() {
    let md = parse(FMI3);
    let (h, hv) = md.variable_by_name("h").unwrap();
    assert_eq!(hv.aliases.len(), 1);
    let a = &hv.aliases[0];
    assert_eq!(a.name, "h_ft");
    assert_eq!(a.description.as_deref(), Some("Position in feet"));
    assert_eq!(a.display_unit.as_deref(), Some("ft"));
    assert_eq!(a.variable, None);
    assert_eq!(hv.alias_of, None);

    // The alias names the variable: its value, unit and causality.
    let (i, v) = md.variable_by_name("h_ft").expect("alias found");
    assert_eq!((i, v.name.as_str()), (h, "h"));
    assert_eq!(v.unit.as_deref(), Some("m"));
    let (i, alias) = md.alias_by_name("h_ft").expect("an alias");
    assert_eq!((i, alias.name.as_str()), (h, "h_ft"));
    assert!(md.alias_by_name("h").is_none(), "a variable's own name");
    assert!(md.alias_by_name("nothing").is_none());

    let (n, nv) = md.variable_by_name("n").unwrap();
    assert_eq!(nv.var_type, VariableType::Int32);
    for name in ["count", "number"] {
        assert_eq!(md.variable_by_name(name).map(|x| x.0), Some(n), "{name}");
    }
    assert_eq!(nv.aliases[1].description.as_deref(), Some("n again"));
    // An array's alias names the whole array.
    let (_, xv) = md.variable_by_name("x_alias").unwrap();
    assert_eq!(xv.name, "x");
    assert!(!xv.is_scalar());

    // FMI 3 has no alias sets: a variable is its own set.
    assert_eq!(md.alias_set(h), vec![h]);
    let names: Vec<&str> = md.all_names().collect();
    assert_eq!(
        names,
        ["time", "h", "n", "x", "h_ft", "count", "number", "x_alias"]
    );
}

#[test]
fn fmi3_alias_names_are_unique_among_all_names() {
    let clash_variable = FMI3.replace(r#"<Alias name="count"/>"#, r#"<Alias name="h"/>"#);
    let (line, message) = parse_err(&clash_variable);
    assert_eq!(line, 13, "{message}");
    assert!(
        message
            .contains("alias name 'h' of variable 'n' is already the name of a variable (line 9)"),
        "{message}"
    );
    let clash_alias = FMI3.replace(r#"<Alias name="count"/>"#, r#"<Alias name="h_ft"/>"#);
    let (line, message) = parse_err(&clash_alias);
    assert_eq!(line, 13, "{message}");
    assert!(
        message.contains("alias name 'h_ft' of variable 'n' is already an alias of variable 'h'"),
        "{message}"
    );
    let unnamed = FMI3.replace(r#"<Alias name="count"/>"#, "<Alias/>");
    let (line, message) = parse_err(&unnamed);
    assert_eq!(line, 13, "{message}");
    assert!(
        message.contains("<Alias> is missing the required attribute 'name'"),
        "{message}"
    );
}

/// FMI 2 aliases: variables of the same base type sharing a value
/// reference, each with its own causality.
const FMI2: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="M" guid="g">
  <CoSimulation modelIdentifier="m"/>
  <TypeDefinitions>
    <SimpleType name="Mode"><Enumeration><Item name="a" value="1"/><Item name="b" value="2"/></Enumeration></SimpleType>
  </TypeDefinitions>
  <ModelVariables>
    <ScalarVariable name="body.y" valueReference="1" causality="local"><Real/></ScalarVariable>
    <ScalarVariable name="y" valueReference="1" causality="output" description="the output"><Real/></ScalarVariable>
    <ScalarVariable name="p_copy" valueReference="2" causality="calculatedParameter" variability="fixed" initial="calculated"><Real/></ScalarVariable>
    <ScalarVariable name="p" valueReference="2" causality="parameter" variability="fixed"><Real start="2"/></ScalarVariable>
    <ScalarVariable name="count" valueReference="1" causality="output"><Integer/></ScalarVariable>
    <ScalarVariable name="mode" valueReference="1" causality="local"><Enumeration declaredType="Mode"/></ScalarVariable>
    <ScalarVariable name="u" valueReference="5" causality="input"><Real start="0"/></ScalarVariable>
    <ScalarVariable name="y_u" valueReference="5" causality="output"><Real/></ScalarVariable>
    <ScalarVariable name="lonely" valueReference="9" causality="output"><Real/></ScalarVariable>
  </ModelVariables>
  <ModelStructure>
    <Outputs><Unknown index="2"/><Unknown index="5"/><Unknown index="8" dependencies="7"/><Unknown index="9"/></Outputs>
  </ModelStructure>
</fmiModelDescription>"#;

#[test]
fn fmi2_alias_sets_stand_under_one_variable() {
    let md = parse(FMI2);
    let idx = |n: &str| md.variable_by_name(n).unwrap().0;
    let (body_y, y, p_copy, p, count, mode, u, y_u, lonely) = (
        idx("body.y"),
        idx("y"),
        idx("p_copy"),
        idx("p"),
        idx("count"),
        idx("mode"),
        idx("u"),
        idx("y_u"),
        idx("lonely"),
    );
    // Every name is its own variable in FMI 2.
    assert_eq!(md.variables[body_y].name, "body.y");
    assert!(md.alias_by_name("body.y").is_none());
    // The output stands for the set of a local, the parameter for its
    // calculated copy, the input for an output it feeds through.
    assert_eq!(md.variables[body_y].alias_of, Some(y));
    assert_eq!(md.variables[y].alias_of, None);
    let aliases: Vec<(&str, Option<usize>)> = md.variables[y]
        .aliases
        .iter()
        .map(|a| (a.name.as_str(), a.variable))
        .collect();
    assert_eq!(aliases, [("body.y", Some(body_y))]);
    assert_eq!(md.variables[p_copy].alias_of, Some(p));
    assert_eq!(md.variables[y_u].alias_of, Some(u));
    // Integer and Enumeration share fmi2Integer; Real vr 1 is another set.
    assert_eq!(md.variables[mode].alias_of, Some(count));
    assert_eq!(md.variables[lonely].alias_of, None);
    assert!(md.variables[lonely].aliases.is_empty());
    assert_eq!(md.alias_set(body_y), vec![y, body_y]);
    assert_eq!(md.alias_set(lonely), vec![lonely]);

    // A use the named variable does not fit goes to the set's variable
    // that does; a fitting name stays itself.
    let output = |v: &cosim_fmi::model_description::Variable| v.causality == Causality::Output;
    let parameter =
        |v: &cosim_fmi::model_description::Variable| v.causality == Causality::Parameter;
    assert_eq!(md.variable_by_name_for("body.y", output).unwrap().0, y);
    assert_eq!(md.variable_by_name_for("y", output).unwrap().0, y);
    assert_eq!(md.variable_by_name_for("p_copy", parameter).unwrap().0, p);
    assert_eq!(md.variable_by_name_for("y_u", output).unwrap().0, y_u);
    // Nothing fits: the named variable, for the caller to refuse.
    assert_eq!(
        md.variable_by_name_for("lonely", parameter).unwrap().0,
        lonely
    );
    assert!(md.variable_by_name_for("nothing", output).is_none());
}

#[test]
fn inspect_lists_aliases_under_their_variable() {
    let md = parse(FMI3);
    let report = InspectReport::new(Path::new("ball.fmu"), &md, None);
    let text = report.render_text();
    let h_row = text
        .lines()
        .position(|l| l.starts_with("  h "))
        .expect(&text);
    let alias_row = text.lines().nth(h_row + 1).expect(&text);
    for needle in ["  h_ft", "alias of h", "m (display ft)", "Position in feet"] {
        assert!(
            alias_row.contains(needle),
            "{needle:?} in {alias_row:?}\n{text}"
        );
    }
    assert!(text.contains("    count"), "{text}");
    let json = serde_json::to_value(&report).expect("json");
    let outputs = &json["variables"][0];
    assert_eq!(outputs["causality"], "output");
    assert_eq!(outputs["variables"][0]["name"], "h");
    assert_eq!(outputs["variables"][0]["aliases"][0]["name"], "h_ft");
    assert_eq!(outputs["variables"][0]["aliases"][0]["display_unit"], "ft");
    assert!(outputs["variables"][0]["aliases"][0]["causality"].is_null());

    // FMI 2: a member of an alias set is listed under the variable that
    // stands for the set, with its own causality, not in its group.
    let md = parse(FMI2);
    let report = InspectReport::new(Path::new("m.fmu"), &md, None);
    let text = report.render_text();
    assert!(!text.contains("Locals"), "{text}");
    assert!(text.contains("alias of y (local)"), "{text}");
    assert!(text.contains("alias of p (calculatedParameter)"), "{text}");
    let json = serde_json::to_value(&report).expect("json");
    let outputs = json["variables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["causality"] == "output")
        .unwrap();
    let y = outputs["variables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "y")
        .unwrap();
    assert_eq!(y["aliases"][0]["name"], "body.y");
    assert_eq!(y["aliases"][0]["causality"], "local");
}

fn with_interfaces(interfaces: &str) -> ModelDescription {
    parse(&format!(
        r#"<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="t">{interfaces}<ModelVariables/></fmiModelDescription>"#
    ))
}

#[test]
fn interfaces_and_why_an_fmu_cannot_run() {
    let md = with_interfaces(
        r#"<ModelExchange modelIdentifier="me"/><CoSimulation modelIdentifier="cs"/><ScheduledExecution modelIdentifier="se"/>"#,
    );
    let interfaces = md.interfaces();
    let listed: Vec<(&str, &str)> = interfaces
        .iter()
        .map(|i| (i.interface, i.model_identifier.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            ("ModelExchange", "me"),
            ("CoSimulation", "cs"),
            ("ScheduledExecution", "se")
        ]
    );
    assert!(md.refusal().is_none());

    // Model Exchange runs (an integrator of cosim drives it).
    let me = with_interfaces(r#"<ModelExchange modelIdentifier="me"/>"#);
    assert!(me.refusal().is_none());
    let both = with_interfaces(
        r#"<ModelExchange modelIdentifier="me"/><ScheduledExecution modelIdentifier="se"/>"#,
    );
    assert!(both.refusal().is_none());

    // Scheduled Execution runs (cosim activates its partitions).
    let se = with_interfaces(r#"<ScheduledExecution modelIdentifier="se"/>"#);
    assert_eq!(se.scheduled_execution.as_deref(), Some("se"));
    assert!(se.refusal().is_none());

    let none = with_interfaces("");
    let (why, what) = none.refusal().expect("refused");
    assert!(why.starts_with("the FMU declares no interface"), "{why}");
    assert_eq!(what, "export the model again with one of them");

    // inspect lists what is declared and how cosim runs it, or why not.
    let report = InspectReport::new(Path::new("se.fmu"), &se, None);
    let text = report.render_text();
    assert!(
        text.contains("Interfaces:     ScheduledExecution (se)"),
        "{text}"
    );
    assert!(
        text.contains("Runs in cosim:  yes: Scheduled Execution"),
        "{text}"
    );
    let json = serde_json::to_value(&report).expect("json");
    assert_eq!(json["interfaces"][0]["interface"], "ScheduledExecution");
    assert_eq!(json["interfaces"][0]["model_identifier"], "se");
    assert!(json["not_runnable"].is_null());
    let text = InspectReport::new(Path::new("none.fmu"), &none, None).render_text();
    assert!(text.contains("Interfaces:     none declared"), "{text}");
    assert!(
        text.contains("Runs in cosim:  no: the FMU declares no interface"),
        "{text}"
    );

    // FMI 2 has no Scheduled Execution: the element is not read there.
    let v2 = parse(
        r#"<fmiModelDescription fmiVersion="2.0" modelName="M" guid="g"><ScheduledExecution modelIdentifier="se"/><ModelVariables/></fmiModelDescription>"#,
    );
    assert!(v2.scheduled_execution.is_none());
}
