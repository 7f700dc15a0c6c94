//! Power-bond candidates on one FMU's interface.

// Test helpers outside #[test] functions may panic and use expect().
#![allow(clippy::panic, clippy::expect_used)]

use std::path::Path;

use cosim_fmi::bonds::{
    BondCandidate, BondDomain, BondRole, Evidence, PhysicalQuantity, check_effort_flow_pair,
    classify_variable, find_bond_candidates,
};
use cosim_fmi::model_description::{
    ModelDescription, parse_model_description, parse_model_description_file,
};

/// An FMI 2 model description with the given `<ScalarVariable>`s, written
/// as (name, causality, attributes of <Real>).
fn build(vars: &[(&str, &str, &str)]) -> ModelDescription {
    let mut xml = String::from(
        "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"T\" guid=\"g\">\n<ModelVariables>\n",
    );
    for (i, (name, causality, real)) in vars.iter().enumerate() {
        let start = if *causality == "input" {
            " start=\"0\""
        } else {
            ""
        };
        xml.push_str(&format!(
            "<ScalarVariable name=\"{name}\" valueReference=\"{i}\" causality=\"{causality}\"><Real {real}{start}/></ScalarVariable>\n"
        ));
    }
    xml.push_str("</ModelVariables>\n</fmiModelDescription>\n");
    parse_model_description(&xml, Path::new("t.xml")).expect("parse")
}

fn fixture(name: &str) -> ModelDescription {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    parse_model_description_file(&path).expect("fixture")
}

fn pairs(c: &[BondCandidate]) -> Vec<(&str, &str, usize)> {
    c.iter()
        .map(|b| (b.input_name.as_str(), b.output_name.as_str(), b.rank))
        .collect()
}

fn idx(md: &ModelDescription, name: &str) -> usize {
    md.variable_by_name(name).expect(name).0
}

#[test]
fn quarter_car_chassis() {
    // Input F [N] (declared type with quantity Force), output v [m/s].
    let md = fixture("fmi2_chassis.xml");
    let c = find_bond_candidates(&md);
    assert_eq!(pairs(&c), [("F", "v", 1)]);
    let b = &c[0];
    assert_eq!(b.domain, BondDomain::Translational);
    assert_eq!(b.input_role, BondRole::Effort);
    assert_eq!(b.input_quantity, PhysicalQuantity::Force);
    assert_eq!(b.output_quantity, PhysicalQuantity::Velocity);
    assert_eq!(b.evidence, [Evidence::Units, Evidence::Quantity]);
    assert_eq!(b.alternatives, 1);
    assert!(!b.is_ambiguous());
    assert!(b.explanation.contains("input 'F' [N]"), "{}", b.explanation);
    assert!(b.explanation.contains("kg.m2.s-3"), "{}", b.explanation);
}

#[test]
fn quarter_car_wheel_side() {
    let md = build(&[
        ("v", "input", "unit=\"m/s\""),
        ("F", "output", "unit=\"N\""),
        ("x_road", "input", "unit=\"m\""),
    ]);
    let c = find_bond_candidates(&md);
    assert_eq!(pairs(&c), [("v", "F", 1)]);
    assert_eq!(c[0].input_role, BondRole::Flow);
    assert_eq!(c[0].domain, BondDomain::Translational);
    assert_eq!(c[0].evidence, [Evidence::Units]);
}

#[test]
fn rotational() {
    let drive = fixture("fmi3_drive.xml");
    let c = find_bond_candidates(&drive);
    assert_eq!(pairs(&c), [("tau", "omega", 1)]);
    assert_eq!(c[0].domain, BondDomain::Rotational);
    assert_eq!(c[0].input_role, BondRole::Effort);
    assert_eq!(c[0].evidence, [Evidence::Units, Evidence::Quantity]);

    // 1/s and rpm are angular velocities too; Hz is not.
    let md = build(&[
        ("w", "input", "unit=\"1/s\""),
        ("T", "output", "unit=\"N.m\""),
        ("n", "input", "unit=\"rpm\""),
        ("f", "input", "unit=\"Hz\""),
        ("E", "output", "unit=\"J\""),
    ]);
    let c = find_bond_candidates(&md);
    assert_eq!(pairs(&c), [("w", "T", 1), ("n", "T", 1)]);
    assert!(c.iter().all(|b| b.input_role == BondRole::Flow));
}

#[test]
fn electrical_and_hydraulic() {
    let md = build(&[
        ("u", "input", "unit=\"V\""),
        ("i", "output", "unit=\"A\""),
        ("p", "input", "unit=\"bar\""),
        ("q", "output", "unit=\"l/min\""),
    ]);
    let c = find_bond_candidates(&md);
    assert_eq!(pairs(&c), [("u", "i", 1), ("p", "q", 1)]);
    assert_eq!(c[0].domain, BondDomain::Electrical);
    assert_eq!(c[1].domain, BondDomain::Hydraulic);
    assert_eq!(c[1].input_quantity, PhysicalQuantity::Pressure);
    assert_eq!(c[1].output_quantity, PhysicalQuantity::VolumeFlowRate);
}

#[test]
fn ambiguous_inputs_are_ranked_not_picked() {
    let md = build(&[
        ("F_rear", "input", "unit=\"N\""),
        ("F_in", "input", "unit=\"N\""),
        ("v_front", "output", "unit=\"m/s\""),
        ("v_rear", "output", "unit=\"m/s\""),
        ("v_out", "output", "unit=\"m/s\""),
    ]);
    let c = find_bond_candidates(&md);
    assert_eq!(
        pairs(&c),
        [
            ("F_rear", "v_rear", 1),
            ("F_rear", "v_front", 2),
            ("F_rear", "v_out", 3),
            ("F_in", "v_out", 1),
            ("F_in", "v_front", 2),
            ("F_in", "v_rear", 3),
        ]
    );
    assert!(c.iter().all(|b| b.alternatives == 3 && b.is_ambiguous()));
    assert!(
        c[0].rank_reason.contains("same name stem 'rear'"),
        "{}",
        c[0].rank_reason
    );
    assert!(
        c[3].rank_reason.contains("same name stem"),
        "{}",
        c[3].rank_reason
    );
    assert!(
        c[0].explanation.contains("Rank 1 of 3"),
        "{}",
        c[0].explanation
    );

    // f1/v1, f2/v2: numbered stems pair up; declaration order breaks ties.
    let md2 = build(&[
        ("f1", "input", "unit=\"N\""),
        ("f2", "input", "unit=\"N\""),
        ("v2", "output", "unit=\"m/s\""),
        ("v1", "output", "unit=\"m/s\""),
    ]);
    let c = find_bond_candidates(&md2);
    assert_eq!(
        pairs(&c),
        [
            ("f1", "v1", 1),
            ("f1", "v2", 2),
            ("f2", "v2", 1),
            ("f2", "v1", 2)
        ]
    );

    // A common prefix ranks before plain declaration order.
    let md3 = build(&[
        ("wheel.F", "input", "unit=\"N\""),
        ("body.vel", "output", "unit=\"m/s\""),
        ("wheel.speed", "output", "unit=\"m/s\""),
    ]);
    let c = find_bond_candidates(&md3);
    assert_eq!(
        pairs(&c),
        [("wheel.F", "wheel.speed", 1), ("wheel.F", "body.vel", 2)]
    );
    assert!(c[0].rank_reason.contains("wheel"), "{}", c[0].rank_reason);
}

#[test]
fn names_are_a_fallback_without_units() {
    let md = build(&[
        ("F_in", "input", ""),
        ("v_out", "output", ""),
        ("position", "output", ""),
        // A unit that is not a bond quantity: the name is not looked at.
        ("v_temp", "output", "unit=\"K\""),
        // An unknown unit: no guess either.
        ("v_odd", "output", "unit=\"furlong/fortnight\""),
    ]);
    let c = find_bond_candidates(&md);
    assert_eq!(pairs(&c), [("F_in", "v_out", 1)]);
    assert_eq!(c[0].evidence, [Evidence::Names]);
    assert!(
        c[0].explanation.contains("name part 'F'"),
        "{}",
        c[0].explanation
    );

    let omega = build(&[("omega_shaft", "output", ""), ("tau_load", "input", "")]);
    let c = find_bond_candidates(&omega);
    assert_eq!(pairs(&c), [("tau_load", "omega_shaft", 1)]);
    assert_eq!(c[0].domain, BondDomain::Rotational);
}

#[test]
fn quantity_evidence_and_conflicts() {
    let md = build(&[
        ("pin", "input", "quantity=\"Pressure\""),
        ("flow", "output", "quantity=\"VolumeFlowRate\""),
        // Unit and quantity disagree: not classified.
        ("bad", "output", "unit=\"N\" quantity=\"Velocity\""),
        // Unit unknown but quantity known.
        ("qq", "output", "unit=\"gpm\" quantity=\"VolumeFlowRate\""),
        // Energy is not a torque.
        ("e", "output", "unit=\"N.m\" quantity=\"Energy\""),
    ]);
    let c = find_bond_candidates(&md);
    assert_eq!(pairs(&c), [("pin", "flow", 1), ("pin", "qq", 2)]);
    assert_eq!(c[0].evidence, [Evidence::Quantity]);
    assert!(classify_variable(&md, idx(&md, "bad")).is_none());
    assert!(classify_variable(&md, idx(&md, "e")).is_none());
}

#[test]
fn classify_single_variables() {
    let md = fixture("fmi2_chassis.xml");
    let f = classify_variable(&md, idx(&md, "F")).expect("F");
    assert_eq!(f.quantity, PhysicalQuantity::Force);
    assert_eq!(
        (f.role, f.domain),
        (BondRole::Effort, BondDomain::Translational)
    );
    assert_eq!(f.evidence, [Evidence::Units, Evidence::Quantity]);
    assert!(f.explanation.contains("unit 'N'"), "{}", f.explanation);
    assert!(classify_variable(&md, idx(&md, "x")).is_none());
    assert!(
        classify_variable(&md, idx(&md, "counter")).is_none(),
        "integers are never bonds"
    );
    assert!(classify_variable(&md, 999).is_none());
    // Locals are classified too (the helper does not look at causality).
    assert!(classify_variable(&md, idx(&md, "v_alias")).is_some());
}

#[test]
fn checking_a_declared_pair() {
    let chassis = fixture("fmi2_chassis.xml");
    let wheel = build(&[
        ("v", "input", "unit=\"km/h\""),
        ("F", "output", "unit=\"kN\""),
        ("x", "output", "unit=\"m\""),
        ("n", "output", ""),
        ("w", "output", "unit=\"furlong\""),
    ]);
    // chassis.F [N] with wheel.v [km/h]: a translational bond.
    let ok = check_effort_flow_pair(&chassis, idx(&chassis, "F"), &wheel, idx(&wheel, "v"))
        .expect("F and v form a bond");
    assert_eq!(ok.domain, BondDomain::Translational);
    assert_eq!(ok.a_role, BondRole::Effort);
    assert!((ok.power_factor - 1.0 / 3.6).abs() < 1e-12);
    // The other way round.
    let ok = check_effort_flow_pair(&wheel, idx(&wheel, "F"), &chassis, idx(&chassis, "v"))
        .expect("bond");
    assert_eq!(ok.a_quantity, PhysicalQuantity::Force);
    assert!((ok.power_factor - 1000.0).abs() < 1e-9);

    let err = check_effort_flow_pair(&chassis, idx(&chassis, "F"), &wheel, idx(&wheel, "F"))
        .expect_err("two forces");
    assert!(err.contains("not a power"), "{err}");
    let err = check_effort_flow_pair(&chassis, idx(&chassis, "F"), &wheel, idx(&wheel, "x"))
        .expect_err("force and length");
    assert!(err.contains("is not a force, velocity"), "{err}");
    let err = check_effort_flow_pair(&chassis, idx(&chassis, "F"), &wheel, idx(&wheel, "n"))
        .expect_err("no unit");
    assert!(err.contains("'n' has no unit"), "{err}");
    let err = check_effort_flow_pair(&chassis, idx(&chassis, "F"), &wheel, idx(&wheel, "w"))
        .expect_err("unknown unit");
    assert!(err.contains("'furlong'"), "{err}");
    let err =
        check_effort_flow_pair(&chassis, idx(&chassis, "counter"), &wheel, 0).expect_err("integer");
    assert!(err.contains("Int32"), "{err}");
    let err = check_effort_flow_pair(&chassis, 999, &wheel, 0).expect_err("index");
    assert!(err.contains("999"), "{err}");

    // Effort and flow of different domains multiply to a power only by
    // accident; voltage x velocity does not.
    let e = build(&[
        ("u", "input", "unit=\"V\""),
        ("v", "output", "unit=\"m/s\""),
    ]);
    assert!(check_effort_flow_pair(&e, 0, &e, 1).is_err());
}

#[test]
fn candidates_serialize() {
    let md = fixture("fmi3_drive.xml");
    let json = serde_json::to_value(find_bond_candidates(&md)).expect("json");
    assert_eq!(json[0]["domain"], "Rotational");
    assert_eq!(json[0]["evidence"][0], "Units");
}
