//! FMI 3 arrays in scenarios: shapes from fixed dimensions and from
//! structural parameters (at the scenario's values), values nested as the
//! array, whole arrays and single elements in connections and traces, and
//! the errors that name both shapes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use cosim_fmi::ModelDescription;
use cosim_fmi::model_description::{StartValue, parse_model_description};
use cosim_scenario::{ResolvedScenario, Scenario, ScenarioError, VariableRef};

/// A source whose output `y` has `n` elements (a structural parameter,
/// start 3) and a parameter matrix `M` of n x 2.
fn source() -> ModelDescription {
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="Source" instantiationToken="{22222222-0000-0000-0000-000000000000}">
  <CoSimulation modelIdentifier="Source"/>
  <ModelVariables>
    <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
    <UInt64 name="n" valueReference="1" causality="structuralParameter" variability="fixed" start="3" min="1"/>
    <Float64 name="y" valueReference="2" causality="output"><Dimension valueReference="1"/></Float64>
    <Float64 name="M" valueReference="3" causality="parameter" variability="fixed" start="1 2 3 4 5 6"><Dimension valueReference="1"/><Dimension start="2"/></Float64>
    <Float64 name="gain" valueReference="4" causality="parameter" variability="fixed" start="1"/>
  </ModelVariables>
  <ModelStructure>
    <Output valueReference="2"/>
  </ModelStructure>
</fmiModelDescription>"#;
    parse_model_description(xml, Path::new("modelDescription.xml")).unwrap()
}

/// A sink with a fixed 3-element input `u` and a scalar input `w`.
fn sink() -> ModelDescription {
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="Sink" instantiationToken="{33333333-0000-0000-0000-000000000000}">
  <CoSimulation modelIdentifier="Sink"/>
  <ModelVariables>
    <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
    <Float64 name="u" valueReference="1" causality="input" start="0 0 0"><Dimension start="3"/></Float64>
    <Float64 name="w" valueReference="2" causality="input" start="0"/>
    <Float64 name="z" valueReference="3" causality="output"/>
  </ModelVariables>
  <ModelStructure>
    <Output valueReference="3"/>
  </ModelStructure>
</fmiModelDescription>"#;
    parse_model_description(xml, Path::new("modelDescription.xml")).unwrap()
}

fn resolve(text: &str) -> Result<ResolvedScenario, ScenarioError> {
    let s = Scenario::from_str(text, common::PATH)?;
    let (src, snk) = (source(), sink());
    let models: Vec<(&str, &ModelDescription)> = s
        .subsystems()
        .iter()
        .map(|sub| {
            let md = if sub.name.value.starts_with("src") {
                &src
            } else {
                &snk
            };
            (sub.name.value.as_str(), md)
        })
        .collect();
    s.resolve(&models)
}

fn error(text: &str) -> ScenarioError {
    resolve(text).expect_err("the scenario was expected to be refused")
}

const HEAD: &str = r#"
[simulation]
stop = 1.0
[master]
step = 0.1
[[subsystems]]
name = "src"
fmu = "src.fmu"
[[subsystems]]
name = "snk"
fmu = "snk.fmu"
"#;

fn r(subsystem: usize, variable: usize, element: usize) -> VariableRef {
    VariableRef {
        subsystem,
        variable,
        element,
    }
}

#[test]
fn a_whole_array_is_traced_element_by_element_at_its_structural_size() {
    let res = resolve(&format!("{HEAD}[outputs]\nvariables = [\"src.y\"]\n")).unwrap();
    assert_eq!(
        res.outputs.variables,
        vec![r(0, 2, 0), r(0, 2, 1), r(0, 2, 2)]
    );
    // n = 5 from the scenario: five elements.
    let text = HEAD.replace(
        "fmu = \"src.fmu\"",
        "fmu = \"src.fmu\"\nparameters = { n = 5 }",
    );
    let res = resolve(&format!("{text}[outputs]\nvariables = [\"src.y\"]\n")).unwrap();
    assert_eq!(res.outputs.variables.len(), 5);
    assert_eq!(res.subsystems[0].shape(&source(), 2).unwrap(), vec![5]);
    assert_eq!(res.subsystems[0].shape(&source(), 3).unwrap(), vec![5, 2]);
}

#[test]
fn single_elements_are_traced_by_their_1_based_index() {
    let text = format!("{HEAD}[outputs]\nvariables = [\"src.y[3]\", \"src.M[2,1]\"]\n");
    let res = resolve(&text).unwrap();
    // M[2,1] is element (1, 0) of a 3x2 matrix: flat index 2.
    assert_eq!(res.outputs.variables, vec![r(0, 2, 2), r(0, 3, 2)]);
    let e = error(&format!("{HEAD}[outputs]\nvariables = [\"src.y[4]\"]\n"));
    assert!(
        e.message.contains("'y[4]': index 4 is outside 1..3"),
        "{}",
        e.message
    );
    assert_eq!(
        e.help.as_deref(),
        Some("'y' is an array of 3 elements; elements are numbered from 1, as in SSP and Modelica")
    );
    let e = error(&format!("{HEAD}[outputs]\nvariables = [\"src.M[2]\"]\n"));
    assert!(
        e.message
            .contains("'M[2]': 1 index for an array of 2 dimensions"),
        "{}",
        e.message
    );
}

#[test]
fn whole_arrays_connect_element_by_element_when_the_shapes_agree() {
    let text = format!("{HEAD}[[connections]]\nfrom = \"src.y\"\nto = \"snk.u\"\n");
    let res = resolve(&text).unwrap();
    let pairs: Vec<(VariableRef, VariableRef)> =
        res.connections.iter().map(|c| (c.from, c.to)).collect();
    assert_eq!(
        pairs,
        vec![
            (r(0, 2, 0), r(1, 1, 0)),
            (r(0, 2, 1), r(1, 1, 1)),
            (r(0, 2, 2), r(1, 1, 2)),
        ]
    );
    // With n = 4 the shapes differ: the error names both.
    let text = text.replace(
        "fmu = \"src.fmu\"",
        "fmu = \"src.fmu\"\nparameters = { n = 4 }",
    );
    let e = error(&text);
    assert_eq!(
        e.message,
        "shape mismatch: 'src.y' is an array of 4 elements but 'snk.u' is an array of 3 elements"
    );
}

#[test]
fn an_element_connects_to_a_scalar_and_an_array_does_not() {
    let text = format!("{HEAD}[[connections]]\nfrom = \"src.y[2]\"\nto = \"snk.w\"\n");
    let res = resolve(&text).unwrap();
    assert_eq!(res.connections[0].from, r(0, 2, 1));
    assert_eq!(res.connections[0].to, r(1, 2, 0));
    let e = error(&format!(
        "{HEAD}[[connections]]\nfrom = \"src.y\"\nto = \"snk.w\"\n"
    ));
    assert_eq!(
        e.message,
        "shape mismatch: 'src.y' is an array of 3 elements but 'snk.w' is a scalar"
    );
    // Two connections into one element.
    let e = error(&format!(
        "{HEAD}[[connections]]\nfrom = \"src.y\"\nto = \"snk.u\"\n[[connections]]\nfrom = \"src.y[1]\"\nto = \"snk.u[2]\"\n"
    ));
    assert!(
        e.message
            .contains("input 'snk.u[2]' is fed by two connections"),
        "{}",
        e.message
    );
}

#[test]
fn array_values_are_nested_as_the_array() {
    let text = HEAD.replace(
        "fmu = \"src.fmu\"",
        "fmu = \"src.fmu\"\nparameters = { n = 2, M = [[1, 2], [3, 4.5]] }",
    );
    let res = resolve(&text).unwrap();
    let m = res.subsystems[0]
        .parameters
        .iter()
        .find(|a| a.name == "M")
        .unwrap();
    assert_eq!(m.value, StartValue::Float(vec![1.0, 2.0, 3.0, 4.5]));
    // The default n = 3 makes M 3x2: the 2x2 value does not fit.
    let text = HEAD.replace(
        "fmu = \"src.fmu\"",
        "fmu = \"src.fmu\"\nparameters = { M = [[1, 2], [3, 4]] }",
    );
    let e = error(&text);
    assert!(
        e.message
            .starts_with("shape mismatch: 'M' is a 3x2 array, the value given is a 2x2 array"),
        "{}",
        e.message
    );
    // A flat list for a matrix is refused with the nested form as example.
    let text = HEAD.replace(
        "fmu = \"src.fmu\"",
        "fmu = \"src.fmu\"\nparameters = { M = [1, 2, 3, 4, 5, 6] }",
    );
    let e = error(&text);
    assert!(
        e.message.contains(
            "the value given is an array of 6 elements (write it nested as the array, e.g. [[1.0, 2.0], [3.0, 4.0]])"
        ),
        "{}",
        e.message
    );
    let text = HEAD.replace(
        "fmu = \"src.fmu\"",
        "fmu = \"src.fmu\"\nparameters = { gain = [1, 2] }",
    );
    assert!(
        error(&text)
            .message
            .contains("'gain' is a scalar Float64, but the value is an array")
    );
}
