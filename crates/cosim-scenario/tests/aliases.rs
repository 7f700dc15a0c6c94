//! Aliases in scenarios (FMI 3 `<Alias>` names, FMI 2 variables sharing a
//! value reference) wherever a variable name goes, and variables named in
//! `[outputs] variables` that cannot be traced.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::*;
use cosim_fmi::ModelDescription;
use cosim_fmi::model_description::{StartValue, parse_model_description};
use cosim_scenario::{
    Overrides, ResolvedScenario, Scenario, ScenarioError, Severity, Traced, ValueOrigin,
};

fn fmi3(name: &str, variables: &str) -> ModelDescription {
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="{name}" instantiationToken="t">
  <CoSimulation modelIdentifier="{name}"/>
  <ModelVariables>
{variables}
  </ModelVariables>
</fmiModelDescription>"#
    );
    parse_model_description(&xml, Path::new("modelDescription.xml")).expect("test model")
}

/// A chassis and a wheel whose every variable has an alias.
fn body() -> ModelDescription {
    fmi3(
        "Body",
        r#"
    <Float64 name="F" valueReference="1" causality="input" start="0" unit="N"><Alias name="force"/></Float64>
    <Float64 name="v" valueReference="2" causality="output" unit="m/s"><Alias name="velocity" description="v again"/></Float64>
    <Float64 name="m" valueReference="3" causality="parameter" variability="fixed" start="400" unit="kg"><Alias name="mass"/></Float64>
    <Float64 name="z" valueReference="4" causality="output" initial="exact" start="0" unit="m"><Alias name="body.height"/></Float64>"#,
    )
}

fn tyre() -> ModelDescription {
    fmi3(
        "Tyre",
        r#"
    <Float64 name="v_c" valueReference="1" causality="input" start="0" unit="m/s"><Alias name="speed"/></Float64>
    <Float64 name="F_c" valueReference="2" causality="output" unit="N"><Alias name="force_out"/></Float64>"#,
    )
}

/// Outputs of every kind: a Float64, a Binary, an array of Binaries, a
/// Clock.
fn mixed() -> ModelDescription {
    fmi3(
        "Mixed",
        r#"
    <Float64 name="y" valueReference="1" causality="output"/>
    <Binary name="blob" valueReference="2" causality="output"/>
    <Clock name="tick" valueReference="3" causality="output" intervalVariability="triggered"/>
    <Binary name="blobs" valueReference="4" causality="output"><Dimension start="2"/></Binary>"#,
    )
}

fn resolve_with(s: &Scenario) -> Result<ResolvedScenario, ScenarioError> {
    let (b, t, m) = (body(), tyre(), mixed());
    let models: Vec<(&str, &ModelDescription)> = s
        .subsystems()
        .iter()
        .map(|sub| {
            let md = match sub.name.value.as_str() {
                "chassis" => &b,
                "wheel" => &t,
                _ => &m,
            };
            (sub.name.value.as_str(), md)
        })
        .collect();
    s.resolve(&models)
}

fn resolve_text(text: &str) -> Result<ResolvedScenario, ScenarioError> {
    resolve_with(&parse(text).unwrap())
}

fn idx(md: &ModelDescription, name: &str) -> usize {
    md.variables.iter().position(|v| v.name == name).unwrap()
}

const BY_ALIAS: &str = r#"[simulation]
stop = 1.0

[master]
kind = "ecco"
step = 1e-3

[[subsystems]]
name = "chassis"
fmu = "body.fmu"
parameters = { mass = 500 }
start = { "body.height" = 0.25 }

[[subsystems]]
name = "wheel"
fmu = "tyre.fmu"

[[connections]]
from = "wheel.force_out"
to = "chassis.force"
gain = -1.0

[[connections]]
from = "chassis.velocity"
to = "wheel.speed"

[[bonds]]
ports = [ { input = "chassis.force", output = "chassis.velocity" }, { input = "wheel.speed", output = "wheel.force_out" } ]

[outputs]
variables = ["chassis.velocity", "chassis.v", "chassis.body.height", "wheel.*", "chassis.velocity"]
"#;

#[test]
fn aliases_are_accepted_wherever_a_variable_name_is() {
    let r = resolve_text(BY_ALIAS).unwrap_or_else(|e| panic!("{e}"));
    let (b, t) = (body(), tyre());
    // Parameters and start values: the variable, under the name given.
    let p = &r.subsystems[0].parameters[0];
    assert_eq!((p.variable, p.name.as_str()), (idx(&b, "m"), "mass"));
    assert_eq!(p.value, StartValue::Float(vec![500.0]));
    let s = &r.subsystems[0].start_values[0];
    assert_eq!((s.variable, s.name.as_str()), (idx(&b, "z"), "body.height"));
    // Connections and bonds: the variables.
    let ends: Vec<(usize, usize, usize, usize)> = r
        .connections
        .iter()
        .map(|c| {
            (
                c.from.subsystem,
                c.from.variable,
                c.to.subsystem,
                c.to.variable,
            )
        })
        .collect();
    assert_eq!(
        ends,
        [
            (1, idx(&t, "F_c"), 0, idx(&b, "F")),
            (0, idx(&b, "v"), 1, idx(&t, "v_c"))
        ]
    );
    let ports = r.bonds[0].ports;
    assert_eq!(
        (
            ports[0].input,
            ports[0].output,
            ports[1].input,
            ports[1].output
        ),
        (idx(&b, "F"), idx(&b, "v"), idx(&t, "v_c"), idx(&t, "F_c"))
    );
    // The trace: under the name given, once per name (the same variable
    // may be traced by its own name and by an alias); a glob matches
    // variables' own names.
    let traced: Vec<(usize, usize, Option<&str>)> = r
        .outputs
        .traced
        .iter()
        .zip(&r.outputs.trace_names)
        .map(|(t, n)| match t {
            Traced::Variable(v) => (v.subsystem, v.variable, n.as_deref()),
            Traced::Port(_) => panic!("no functions here"),
        })
        .collect();
    assert_eq!(
        traced,
        [
            (0, idx(&b, "v"), Some("velocity")),
            (0, idx(&b, "v"), None),
            (0, idx(&b, "z"), Some("body.height")),
            (1, idx(&t, "v_c"), None),
            (1, idx(&t, "F_c"), None),
        ]
    );
    assert!(r.warnings.iter().all(|w| !w.is_error()), "{:?}", r.warnings);
}

#[test]
fn a_variable_takes_one_value_whatever_its_names() {
    let text = BY_ALIAS.replace("{ mass = 500 }", "{ mass = 500, m = 450 }");
    let e = resolve_text(&text).unwrap_err();
    assert_eq!(
        e.message,
        "'mass' and 'm' are one variable, 'm' (by its name and an alias): give it one value"
    );
    assert_at(&e, &text, "450");

    // --set by either name replaces the scenario's value.
    let mut s = parse(BY_ALIAS).unwrap();
    s.apply_overrides(&Overrides {
        set: vec!["chassis.m=450".into()],
        ..Overrides::default()
    })
    .unwrap();
    let r = resolve_with(&s).unwrap_or_else(|e| panic!("{e}"));
    let p = &r.subsystems[0].parameters;
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].value, StartValue::Float(vec![450.0]));
    assert!(matches!(p[0].origin, ValueOrigin::Argument(_)));
}

#[test]
fn a_misspelt_alias_is_suggested() {
    let text = BY_ALIAS.replace("from = \"chassis.velocity\"", "from = \"chassis.velocty\"");
    let e = resolve_text(&text).unwrap_err();
    assert_eq!(
        e.message,
        "subsystem 'chassis' (Body) has no variable 'velocty'"
    );
    assert_eq!(e.help.as_deref(), Some("did you mean 'velocity'?"));
}

const MIXED: &str = r#"[simulation]
stop = 1.0

[master]
step = 0.1

[[subsystems]]
name = "m"
fmu = "mixed.fmu"
"#;

#[test]
fn a_variable_named_for_the_trace_that_cannot_be_traced_is_an_error() {
    {
        let (name, why) = (
            "blobs",
            "an array of Binary values, of which only scalars are traced (as text)",
        );
        let text = format!("{MIXED}\n[outputs]\nvariables = [\"m.y\", \"m.{name}\"]\n");
        let e = resolve_text(&text).unwrap_err();
        assert_eq!(e.message, format!("'m.{name}' cannot be traced: {why}"));
        assert_at(&e, &text, name);

        // The same by --output-variables, naming the argument.
        let mut s = parse(MIXED).unwrap();
        s.apply_overrides(&Overrides {
            output_variables: vec![format!("m.{name}")],
            ..Overrides::default()
        })
        .unwrap();
        let e = resolve_with(&s).unwrap_err();
        assert_eq!(e.message, format!("'m.{name}' cannot be traced: {why}"));
        assert!(
            e.argument
                .as_deref()
                .is_some_and(|a| a.contains("--output-variables"))
        );
    }
    // A pattern matching nothing that can be traced.
    let text = format!("{MIXED}\n[outputs]\nvariables = [\"m.blob?\"]\n");
    let e = resolve_text(&text).unwrap_err();
    assert!(
        e.message.starts_with(
            "\"m.blob?\" matches only variables that cannot be traced: 'm.blobs' (an array of Binary"
        ),
        "{}",
        e.message
    );
    // A Clock is traced (1 at its ticks).
    let text = format!("{MIXED}\n[outputs]\nvariables = [\"m.y\", \"m.tick\"]\n");
    let r = resolve_text(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.outputs.traced.len(), 2);
    // A scalar Binary is traced (as hexadecimal digits).
    let text = format!("{MIXED}\n[outputs]\nvariables = [\"m.y\", \"m.blob\"]\n");
    let r = resolve_text(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.outputs.traced.len(), 2);
}

#[test]
fn a_pattern_leaves_out_what_cannot_be_traced_with_a_warning() {
    // (An output clock: no warning of its own at resolution.)
    let clocks = "subsystem 'm' declares";
    let warned = |r: &ResolvedScenario| -> Vec<String> {
        r.warnings
            .iter()
            .filter(|w| w.severity == Severity::Warning && !w.message.starts_with(clocks))
            .map(|w| w.message.clone())
            .collect()
    };
    let text = format!("{MIXED}\n[outputs]\nvariables = [\"m.*\"]\n");
    let r = resolve_text(&text).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !r.warnings.iter().any(|w| w.message.starts_with(clocks)),
        "{:?}",
        r.warnings
    );
    // (y, blob and tick.)
    assert_eq!(r.outputs.traced.len(), 3);
    let w = warned(&r);
    assert_eq!(
        w,
        [
            "\"m.*\" matches variables that cannot be traced, left out of the trace: 'm.blobs' (an array of Binary values, of which only scalars are traced (as text))"
        ]
    );
    // Every output, by default: the same, said of the subsystem.
    let r = resolve_text(MIXED).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.outputs.traced.len(), 3);
    let w = warned(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("outputs of subsystem 'm' left out of the trace: 'blobs' (an array"),
        "{w:?}"
    );
    // --output-variables: a warning naming the argument.
    let mut s = parse(MIXED).unwrap();
    s.apply_overrides(&Overrides {
        output_variables: vec!["m.*".into()],
        ..Overrides::default()
    })
    .unwrap();
    let r = resolve_with(&s).unwrap_or_else(|e| panic!("{e}"));
    let w: Vec<&ScenarioError> = r
        .warnings
        .iter()
        .filter(|w| w.severity == Severity::Warning && !w.message.starts_with(clocks))
        .collect();
    assert_eq!(w.len(), 1);
    assert!(
        w[0].argument
            .as_deref()
            .is_some_and(|a| a.contains("--output-variables"))
    );
}

/// FMI 2: an alias is a variable of its own; one that does not suit its
/// use stands for the variable of its set that does.
#[test]
fn fmi2_aliases_stand_for_the_variable_of_their_set_that_fits() {
    let md = fmi2(
        "Aliased",
        r#"
    <ScalarVariable name="u" valueReference="1" causality="input"><Real start="0"/></ScalarVariable>
    <ScalarVariable name="u_local" valueReference="1" causality="local"><Real/></ScalarVariable>
    <ScalarVariable name="y" valueReference="2" causality="output"><Real/></ScalarVariable>
    <ScalarVariable name="y_local" valueReference="2" causality="local"><Real/></ScalarVariable>
    <ScalarVariable name="k" valueReference="3" causality="parameter" variability="fixed"><Real start="1"/></ScalarVariable>
    <ScalarVariable name="k_copy" valueReference="3" causality="calculatedParameter" variability="fixed"><Real/></ScalarVariable>"#,
        "",
    );
    let text = r#"[simulation]
stop = 1.0

[master]
step = 0.1

[[subsystems]]
name = "a"
fmu = "a.fmu"
parameters = { k_copy = 2 }

[[subsystems]]
name = "b"
fmu = "b.fmu"
start = { u_local = 3 }

[[connections]]
from = "a.y_local"
to = "b.u_local"

[outputs]
variables = ["a.y_local", "a.y"]
"#;
    let s = parse(text).unwrap();
    let r = s
        .resolve(&[("a", &md), ("b", &md)])
        .unwrap_or_else(|e| panic!("{e}"));
    let i = |n: &str| idx(&md, n);
    assert_eq!(r.subsystems[0].parameters[0].variable, i("k"));
    assert_eq!(r.subsystems[1].start_values[0].variable, i("u"));
    let c = &r.connections[0];
    assert_eq!((c.from.variable, c.to.variable), (i("y"), i("u")));
    // Traced as named: an FMI 2 alias is a variable with a name of its own.
    let traced: Vec<(usize, Option<&str>)> = r
        .outputs
        .traced
        .iter()
        .zip(&r.outputs.trace_names)
        .map(|(t, n)| match t {
            Traced::Variable(v) => (v.variable, n.as_deref()),
            Traced::Port(_) => panic!(),
        })
        .collect();
    assert_eq!(traced, [(i("y_local"), None), (i("y"), None)]);
    // b's input, given a start value through its alias, is not warned
    // about (a's is: nothing feeds it).
    let unconnected: Vec<&str> = r
        .warnings
        .iter()
        .map(|w| w.message.as_str())
        .filter(|m| m.contains("not connected"))
        .collect();
    assert_eq!(
        unconnected,
        ["input of subsystem 'a' not connected (keeps its start value): u"]
    );
}
