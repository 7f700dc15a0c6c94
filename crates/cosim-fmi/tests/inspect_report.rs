//! `cosim inspect` reports: text rendering and JSON serialisation.

// Test helpers outside #[test] functions may panic and use expect().
#![allow(clippy::panic, clippy::expect_used)]

use std::path::Path;

use cosim_fmi::inspect::{Feedthrough, InspectReport};
use cosim_fmi::model_description::{
    ModelDescription, parse_model_description, parse_model_description_file,
};

fn fixture(name: &str) -> ModelDescription {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    parse_model_description_file(&path).expect("fixture")
}

#[test]
fn fmi2_report_renders_and_serializes() {
    let md = fixture("fmi2_chassis.xml");
    let platforms = vec!["linux64".to_string(), "win64".to_string()];
    let report = InspectReport::new(Path::new("chassis.fmu"), &md, Some(&platforms));

    assert_eq!(report.identity.model_name, "QuarterCar.Chassis");
    assert_eq!(report.identity.fmi_version, "2.0");
    let groups: Vec<(&str, usize)> = report
        .variables
        .iter()
        .map(|g| (g.causality.as_str(), g.variables.len()))
        .collect();
    assert_eq!(
        groups,
        [
            ("input", 1),
            ("output", 3),
            ("parameter", 4),
            ("independent", 1),
            ("local", 1)
        ]
    );
    // The FMI 2 alias of v (same value reference and type) is listed
    // under v, with its own causality, not among the locals.
    let v = &report.variables[1].variables[0];
    assert_eq!(v.name, "v");
    assert_eq!(v.aliases.len(), 1);
    assert_eq!(v.aliases[0].name, "v_alias");
    assert_eq!(v.aliases[0].causality.as_deref(), Some("local"));
    let f = &report.variables[0].variables[0];
    assert_eq!(f.name, "F");
    // FMI 2's name of the type (cosim reads it as Float64).
    assert_eq!(f.var_type, "Real");
    assert_eq!(f.unit.as_deref(), Some("N"));
    assert_eq!(f.start.as_deref(), Some("0"));

    let ft: Vec<(&str, &Feedthrough, &str)> = report
        .feedthrough
        .iter()
        .map(|f| (f.output.as_str(), &f.depends_on, f.text.as_str()))
        .collect();
    assert_eq!(
        ft,
        [
            ("v", &Feedthrough::Inputs(vec!["F".into()]), "F"),
            (
                "x",
                &Feedthrough::AllNoDependenciesAttribute,
                "all inputs (no dependencies attribute)"
            ),
            ("counter", &Feedthrough::None, "none"),
        ]
    );
    assert_eq!(report.bond_candidates.len(), 1);

    let text = report.render_text();
    for needle in [
        "Model:",
        "QuarterCar.Chassis",
        "{8c4e810f-3df3-4a00-8276-176fa3c9f000}",
        "Platforms:",
        "linux64, win64",
        "Co-Simulation",
        "modelIdentifier",
        "Default experiment",
        "Inputs (1)",
        "Outputs (3)",
        "Parameters (4)",
        "all inputs (no dependencies attribute)",
        "Power-bond candidates",
        "translational",
        "units+quantity",
        "\"front left\"",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    // Columns are aligned: every row of the inputs table starts its "type"
    // column at the same character position as the header.
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.trim_start().starts_with("name") && l.contains("variability"))
        .expect("table header");
    let col = lines[header].find("type").expect("type column");
    assert!(
        lines[header + 2]
            .get(col..)
            .is_some_and(|s| s.starts_with("Real")),
        "{text}"
    );

    let json = serde_json::to_value(&report).expect("json");
    assert_eq!(json["identity"]["model_name"], "QuarterCar.Chassis");
    assert_eq!(json["platforms"][1], "win64");
    assert_eq!(
        json["feedthrough"][1]["depends_on"]["kind"],
        "all_no_dependencies_attribute"
    );
    assert_eq!(json["feedthrough"][0]["depends_on"]["inputs"][0], "F");
    assert_eq!(json["bond_candidates"][0]["input_name"], "F");
    assert_eq!(json["co_simulation"]["model_identifier"], "chassis");
}

#[test]
fn fmi3_report() {
    let md = fixture("fmi3_drive.xml");
    let report = InspectReport::new(Path::new("drive.fmu"), &md, None);
    assert!(report.platforms.is_none());
    let text = report.render_text();
    for needle in [
        "FMI version:",
        "3.0",
        "ModelExchange (drive), CoSimulation (drive)",
        "Float64[3]",
        "Float64[2,n=2]",
        "[1.5, -2, 300, inf]",
        "[true, false, true]",
        "0x0aff10",
        "18446744073709551615",
        "Structural parameters (1)",
        "rotational",
        "fixed internal step size",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    // Non-finite start values serialise (as null).
    serde_json::to_string(&report).expect("json");
}

#[test]
fn minimal_and_odd_descriptions_never_panic() {
    let cases = [
        r#"<fmiModelDescription fmiVersion="2.0" modelName="" guid=""/>"#,
        r#"<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="t"><ModelExchange modelIdentifier="m"/><ModelVariables><Float64 name="y" valueReference="0" causality="output"/></ModelVariables></fmiModelDescription>"#,
        "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"line\nbreak\ttab\" guid=\"g\" description=\"\u{1b}[31mred\"><DefaultExperiment/><ModelVariables><ScalarVariable name=\"a&#10;b\" valueReference=\"0\" causality=\"input\"><String start=\"\"/></ScalarVariable></ModelVariables></fmiModelDescription>",
    ];
    for xml in cases {
        let md = parse_model_description(xml, Path::new("x.xml")).expect("parse");
        let report = InspectReport::new(Path::new("x.fmu"), &md, Some(&[]));
        let text = report.render_text();
        assert!(text.contains("Power-bond candidates"));
        assert!(!text.contains('\u{1b}'), "control characters are replaced");
        serde_json::to_string(&report).expect("json");
    }
}

/// A Model Exchange only FMI 2 model: two states (one with a declared
/// nominal, through its type), two event indicators, the DefaultExperiment
/// tolerance, completedIntegratorStep needed (FMI 2's default).
const FMI2_ME_ONLY: &str = r#"<fmiModelDescription fmiVersion="2.0" modelName="Ball" guid="g" numberOfEventIndicators="2">
  <ModelExchange modelIdentifier="ball" canGetAndSetFMUstate="true"/>
  <TypeDefinitions><SimpleType name="Height"><Real unit="m" nominal="0.5"/></SimpleType></TypeDefinitions>
  <DefaultExperiment stopTime="3" tolerance="1e-7"/>
  <ModelVariables>
    <ScalarVariable name="h" valueReference="1" causality="output" variability="continuous" initial="exact"><Real declaredType="Height" start="1"/></ScalarVariable>
    <ScalarVariable name="der(h)" valueReference="2" causality="local" variability="continuous"><Real derivative="1"/></ScalarVariable>
    <ScalarVariable name="v" valueReference="3" causality="output" variability="continuous" initial="exact"><Real unit="m/s" start="0"/></ScalarVariable>
    <ScalarVariable name="der(v)" valueReference="4" causality="local" variability="continuous"><Real derivative="3"/></ScalarVariable>
  </ModelVariables>
  <ModelStructure>
    <Outputs><Unknown index="1" dependencies=""/><Unknown index="3" dependencies=""/></Outputs>
    <Derivatives><Unknown index="2" dependencies="3"/><Unknown index="4" dependencies=""/></Derivatives>
  </ModelStructure>
</fmiModelDescription>"#;

#[test]
fn model_exchange_only_fmi2_runs_as_model_exchange_with_its_states() {
    let md = parse_model_description(FMI2_ME_ONLY, Path::new("ball.xml")).expect("parse");
    let report = InspectReport::new(Path::new("ball.fmu"), &md, None);
    assert!(report.not_runnable.is_none());
    let runs = report.runs_as.as_ref().expect("runs");
    assert_eq!(runs.interface, "model-exchange");
    assert_eq!(runs.other, None);
    let solver = runs.model_exchange_solver.as_ref().expect("solver");
    assert_eq!(solver.method, "bdf");
    assert_eq!(solver.relative_tolerance, 1e-7);
    assert_eq!(
        solver.relative_tolerance_from,
        "the FMU's DefaultExperiment tolerance"
    );
    let me = report.model_exchange_interface.as_ref().expect("ME");
    assert_eq!(me.capabilities.number_of_event_indicators, 2);
    // FMI 2: completedIntegratorStepNotNeeded defaults to false.
    assert!(me.capabilities.needs_completed_integrator_step);
    assert!(me.capabilities.can_get_and_set_fmu_state);
    assert!(!me.capabilities.provides_directional_derivatives);
    let states: Vec<(&str, &str, f64, bool, Option<&str>)> = me
        .continuous_states
        .iter()
        .map(|x| {
            (
                x.state.as_str(),
                x.derivative.as_str(),
                x.nominal,
                x.nominal_declared,
                x.unit.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("h", "der(h)", 0.5, true, Some("m")),
            ("v", "der(v)", 1.0, false, Some("m/s"))
        ]
    );

    let text = report.render_text();
    for needle in [
        "Runs in cosim:  yes: Model Exchange, integrated by cosim's solver (BDF, relative tolerance 1e-7: the FMU's DefaultExperiment tolerance)",
        "\nModel Exchange\n",
        "continuous states:              2",
        "event indicators:               2",
        "needs completedIntegratorStep:  yes",
        "get/set state:                  yes",
        "directional derivatives:        no",
        "Continuous states (2)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    // The states' table: state, derivative, type, unit, nominal.
    let row = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_else(|| panic!("no row {name}:\n{text}"))
    };
    assert_eq!(row("h"), ["h", "der(h)", "Real", "m", "0.5"]);
    assert_eq!(row("v"), ["v", "der(v)", "Real", "m/s", "1", "(default)"]);
    assert!(!text.contains("\nCo-Simulation\n"), "{text}");

    let json = serde_json::to_value(&report).expect("json");
    assert_eq!(json["runs_as"]["interface"], "model-exchange");
    assert_eq!(
        json["runs_as"]["model_exchange_solver"]["relative_tolerance"],
        1e-7
    );
    let me = &json["model_exchange_interface"];
    assert_eq!(me["model_identifier"], "ball");
    assert_eq!(me["number_of_event_indicators"], 2);
    assert_eq!(me["needs_completed_integrator_step"], true);
    assert_eq!(me["continuous_states"][0]["derivative"], "der(h)");
    assert_eq!(me["continuous_states"][0]["nominal"], 0.5);
    assert!(json["co_simulation"].is_null());
    assert_eq!(json["model_exchange"], true);
}

#[test]
fn both_interfaces_run_co_simulation_and_name_the_option_for_the_other() {
    // fmi3_drive.xml declares both, no DefaultExperiment tolerance.
    let md = fixture("fmi3_drive.xml");
    let report = InspectReport::new(Path::new("drive.fmu"), &md, None);
    let runs = report.runs_as.as_ref().expect("runs");
    assert_eq!(runs.interface, "co-simulation");
    assert_eq!(runs.other, Some("--interface me"));
    let solver = runs.model_exchange_solver.as_ref().expect("solver");
    assert_eq!(solver.relative_tolerance, 1e-5);
    let text = report.render_text();
    assert!(
        text.contains("Runs in cosim:  yes: Co-Simulation; `--interface me` (a scenario's interface = \"model-exchange\") runs its Model Exchange interface instead, integrated by cosim's solver (BDF, relative tolerance 1e-5: cosim's default; the FMU's DefaultExperiment gives no tolerance)"),
        "{text}"
    );
    // FMI 3: needsCompletedIntegratorStep defaults to false.
    assert!(
        text.contains("needs completedIntegratorStep:  no"),
        "{text}"
    );
    // A Co-Simulation only FMU: no Model Exchange section, no option.
    let md = fixture("fmi2_chassis.xml");
    let report = InspectReport::new(Path::new("chassis.fmu"), &md, None);
    let runs = report.runs_as.as_ref().expect("runs");
    assert_eq!((runs.interface, runs.other), ("co-simulation", None));
    assert!(runs.model_exchange_solver.is_none());
    assert!(report.model_exchange_interface.is_none());
    let text = report.render_text();
    assert!(
        text.contains("Runs in cosim:  yes: Co-Simulation\n"),
        "{text}"
    );
    assert!(!text.contains("Model Exchange"), "{text}");
}

#[test]
fn an_fmu_without_an_interface_cosim_runs_says_no() {
    let xml = r#"<fmiModelDescription fmiVersion="3.0" modelName="S" instantiationToken="t"><ModelVariables/></fmiModelDescription>"#;
    let md = parse_model_description(xml, Path::new("s.xml")).expect("parse");
    let report = InspectReport::new(Path::new("s.fmu"), &md, None);
    assert!(report.runs_as.is_none());
    assert!(report.model_exchange_interface.is_none());
    let text = report.render_text();
    assert!(
        text.contains("Runs in cosim:  no: the FMU declares no interface"),
        "{text}"
    );
    assert!(!text.contains("yes:"), "{text}");
}

#[test]
fn a_scheduled_execution_only_fmu_runs_as_one() {
    let xml = r#"<fmiModelDescription fmiVersion="3.0" modelName="S" instantiationToken="t"><ScheduledExecution modelIdentifier="s"/><ModelVariables/></fmiModelDescription>"#;
    let md = parse_model_description(xml, Path::new("s.xml")).expect("parse");
    let report = InspectReport::new(Path::new("s.fmu"), &md, None);
    let runs = report.runs_as.as_ref().expect("runs");
    assert_eq!((runs.interface, runs.other), ("scheduled-execution", None));
    let text = report.render_text();
    assert!(
        text.contains("Runs in cosim:  yes: Scheduled Execution, its model partitions activated as their Clocks tick"),
        "{text}"
    );
}
