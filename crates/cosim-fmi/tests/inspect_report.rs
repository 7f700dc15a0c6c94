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
    assert_eq!(f.var_type, "Float64");
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
            .is_some_and(|s| s.starts_with("Float64")),
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
