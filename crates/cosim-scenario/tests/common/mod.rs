//! Shared fixtures: small model descriptions of a quarter car and helpers
//! to load scenarios and locate text in them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::path::Path;

use cosim_fmi::ModelDescription;
use cosim_fmi::model_description::parse_model_description;
use cosim_scenario::{ResolvedScenario, Scenario, ScenarioError};

/// Wraps FMI 2.0 `<ScalarVariable>` elements into a model description.
pub fn fmi2(name: &str, variables: &str, extra: &str) -> ModelDescription {
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="{name}" guid="{{00000000-0000-0000-0000-000000000000}}">
  <CoSimulation modelIdentifier="{name}" canGetAndSetFMUstate="true"/>
  {extra}
  <ModelVariables>
{variables}
  </ModelVariables>
  <ModelStructure/>
</fmiModelDescription>"#
    );
    parse_model_description(&xml, Path::new("modelDescription.xml"))
        .expect("test model description")
}

/// The chassis of a quarter car: receives the suspension force, returns
/// its velocity.
pub fn chassis() -> ModelDescription {
    fmi2(
        "QuarterCarChassis",
        r#"
    <ScalarVariable name="time" valueReference="0" causality="independent" variability="continuous"><Real/></ScalarVariable>
    <ScalarVariable name="m_c" valueReference="1" causality="parameter" variability="fixed"><Real start="400" unit="kg" min="0"/></ScalarVariable>
    <ScalarVariable name="F" valueReference="2" causality="input"><Real start="0" unit="N"/></ScalarVariable>
    <ScalarVariable name="v_c" valueReference="3" causality="output" initial="exact"><Real start="0" unit="m/s"/></ScalarVariable>
    <ScalarVariable name="z_c" valueReference="4" causality="output" initial="exact"><Real start="0" unit="m"/></ScalarVariable>
    <ScalarVariable name="a_c" valueReference="5" causality="output"><Real unit="m/s2"/></ScalarVariable>
    <ScalarVariable name="body.x[1]" valueReference="6" causality="local" initial="exact"><Real start="0" unit="m"/></ScalarVariable>
    <ScalarVariable name="k_eff" valueReference="7" causality="calculatedParameter" variability="fixed"><Real unit="N/m"/></ScalarVariable>
    <ScalarVariable name="g" valueReference="8" causality="local" variability="constant"><Real start="9.81" unit="m/s2"/></ScalarVariable>
    <ScalarVariable name="locked" valueReference="9" causality="input" variability="discrete"><Boolean start="false"/></ScalarVariable>
    <ScalarVariable name="E_kin" valueReference="10" causality="output"><Real unit="J"/></ScalarVariable>"#,
        r#"<DefaultExperiment startTime="0" stopTime="3" stepSize="0.001"/>"#,
    )
}

/// The wheel: receives the chassis velocity, returns the suspension force.
pub fn wheel() -> ModelDescription {
    fmi2(
        "QuarterCarWheel",
        r#"
    <ScalarVariable name="v_c" valueReference="0" causality="input"><Real start="0" unit="m/s"/></ScalarVariable>
    <ScalarVariable name="x_c" valueReference="1" causality="input"><Real start="0" unit="m"/></ScalarVariable>
    <ScalarVariable name="F_c" valueReference="2" causality="output"><Real unit="N"/></ScalarVariable>
    <ScalarVariable name="F_c_kN" valueReference="3" causality="output"><Real unit="kN"/></ScalarVariable>
    <ScalarVariable name="v_w" valueReference="4" causality="output"><Real unit="m/s"/></ScalarVariable>
    <ScalarVariable name="k_c" valueReference="5" causality="parameter" variability="fixed"><Real start="15000" unit="N/m"/></ScalarVariable>
    <ScalarVariable name="d_c" valueReference="6" causality="parameter" variability="fixed"><Real start="1000"/></ScalarVariable>
    <ScalarVariable name="n_sub" valueReference="7" causality="parameter" variability="fixed"><Integer start="10" min="1"/></ScalarVariable>
    <ScalarVariable name="nonlinear" valueReference="8" causality="parameter" variability="fixed"><Boolean start="false"/></ScalarVariable>
    <ScalarVariable name="label" valueReference="9" causality="parameter" variability="fixed"><String start="wheel"/></ScalarVariable>
    <ScalarVariable name="contact" valueReference="10" causality="output" variability="discrete"><Boolean/></ScalarVariable>
    <ScalarVariable name="z_w" valueReference="11" causality="local" initial="approx"><Real start="0" unit="m"/></ScalarVariable>
    <ScalarVariable name="z_road" valueReference="12" causality="input"><Real start="0.1" unit="m"/></ScalarVariable>
    <ScalarVariable name="distance" valueReference="13" causality="output"><Real unit="furlong"/></ScalarVariable>"#,
        r#"<DefaultExperiment startTime="0" stopTime="3" stepSize="0.001"/>"#,
    )
}

/// An FMI 3.0 mass with a few of the newer types.
pub fn mass3() -> ModelDescription {
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="Mass3" instantiationToken="{11111111-0000-0000-0000-000000000000}">
  <CoSimulation modelIdentifier="Mass3" canGetAndSetFMUState="true"/>
  <DefaultExperiment startTime="0" stopTime="5"/>
  <ModelVariables>
    <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
    <Float64 name="F" valueReference="1" causality="input" start="0" unit="N"/>
    <Float32 name="v" valueReference="2" causality="output" unit="m/s"/>
    <Float64 name="m" valueReference="3" causality="parameter" variability="fixed" start="2" unit="kg"/>
    <Int8 name="mode" valueReference="4" causality="parameter" variability="fixed" start="0"/>
    <Float64 name="gains" valueReference="5" causality="parameter" variability="fixed" start="1 2 3"><Dimension start="3"/></Float64>
    <UInt16 name="count" valueReference="6" causality="output"/>
  </ModelVariables>
  <ModelStructure>
    <Output valueReference="2"/>
    <Output valueReference="6"/>
  </ModelStructure>
</fmiModelDescription>"#;
    parse_model_description(xml, Path::new("modelDescription.xml")).expect("FMI 3 test model")
}

/// The path the test scenarios pretend to be read from.
pub const PATH: &str = "/scenarios/b1.toml";

pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::from_str(text, PATH)
}

/// Parses and resolves `text` against chassis, wheel and mass3 (each used
/// only if the scenario names it).
pub fn resolve(text: &str) -> Result<ResolvedScenario, ScenarioError> {
    let s = parse(text)?;
    resolve_scenario(&s)
}

pub fn resolve_scenario(s: &Scenario) -> Result<ResolvedScenario, ScenarioError> {
    let (c, w, m) = (chassis(), wheel(), mass3());
    let models: Vec<(&str, &ModelDescription)> = s
        .subsystems()
        .iter()
        .map(|sub| {
            let md = match sub.name.value.as_str() {
                n if n.starts_with("chassis") => &c,
                n if n.starts_with("wheel") => &w,
                _ => &m,
            };
            (sub.name.value.as_str(), md)
        })
        .collect();
    s.resolve(&models)
}

/// The error of parsing (or, if parsing succeeds, resolving) `text`.
pub fn error(text: &str) -> ScenarioError {
    match parse(text) {
        Err(e) => e,
        Ok(s) => match resolve_scenario(&s) {
            Err(e) => e,
            Ok(_) => panic!("expected an error for:\n{text}"),
        },
    }
}

/// 1-based line and column of the first occurrence of `needle` in `text`.
pub fn pos(text: &str, needle: &str) -> (usize, usize) {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("'{needle}' not in the text"));
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

/// Asserts that `e` is at `needle`'s position in `text`.
pub fn assert_at(e: &ScenarioError, text: &str, needle: &str) {
    let (line, col) = pos(text, needle);
    assert_eq!(
        (e.line, e.column),
        (Some(line), Some(col)),
        "position of: {e}"
    );
}

/// Asserts that `e` is `offset` characters after the start of `needle` in `text`.
pub fn assert_at_offset(e: &ScenarioError, text: &str, needle: &str, offset: usize) {
    let (line, col) = pos(text, needle);
    assert_eq!(
        (e.line, e.column),
        (Some(line), Some(col + offset)),
        "position of: {e}"
    );
}

/// Subsystems and connections of a quarter car, reused by many tests.
pub const BASE: &str = r#"[simulation]
stop = 1.0

[master]
step = 1e-3

[[subsystems]]
name = "chassis"
fmu = "fmus/chassis.fmu"

[[subsystems]]
name = "wheel"
fmu = "fmus/wheel.fmu"

[[connections]]
from = "wheel.F_c"
to = "chassis.F"
gain = -1.0

[[connections]]
from = "chassis.v_c"
to = "wheel.v_c"
"#;
