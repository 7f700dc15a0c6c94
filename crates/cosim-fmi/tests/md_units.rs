//! SI dimensions of unit strings and of `<BaseUnit>` definitions.

// Test helpers outside #[test] functions may panic and use expect().
#![allow(clippy::panic, clippy::expect_used)]

use std::path::Path;

use cosim_fmi::model_description::units::{POWER, parse_unit, unit_base_unit, variable_base_unit};
use cosim_fmi::model_description::{BaseUnit, parse_model_description};

/// (kg, m, s, A, K, rad) and factor of a parsed unit.
fn dims(unit: &str) -> ([i32; 6], f64) {
    let u = parse_unit(unit).unwrap_or_else(|| panic!("'{unit}' should parse"));
    assert_eq!((u.mol, u.cd), (0, 0), "{unit}");
    ([u.kg, u.m, u.s, u.a, u.k, u.rad], u.factor)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

#[track_caller]
fn check(unit: &str, expected: [i32; 6], factor: f64) {
    let (d, f) = dims(unit);
    assert_eq!(d, expected, "exponents of '{unit}'");
    assert!(close(f, factor), "factor of '{unit}': {f} != {factor}");
}

#[test]
fn common_unit_strings() {
    //                  kg  m   s   A  K rad
    check("N", [1, 1, -2, 0, 0, 0], 1.0);
    check("kN", [1, 1, -2, 0, 0, 0], 1e3);
    check("m", [0, 1, 0, 0, 0, 0], 1.0);
    check("mm", [0, 1, 0, 0, 0, 0], 1e-3);
    check("m/s", [0, 1, -1, 0, 0, 0], 1.0);
    check("km/h", [0, 1, -1, 0, 0, 0], 1.0 / 3.6);
    check("m/s2", [0, 1, -2, 0, 0, 0], 1.0);
    check("m/s^2", [0, 1, -2, 0, 0, 0], 1.0);
    check("kg", [1, 0, 0, 0, 0, 0], 1.0);
    check("g", [1, 0, 0, 0, 0, 0], 1e-3);
    check("s", [0, 0, 1, 0, 0, 0], 1.0);
    check("ms", [0, 0, 1, 0, 0, 0], 1e-3);
    check("min", [0, 0, 1, 0, 0, 0], 60.0);
    check("h", [0, 0, 1, 0, 0, 0], 3600.0);
    check("N.m", [1, 2, -2, 0, 0, 0], 1.0);
    check("Nm", [1, 2, -2, 0, 0, 0], 1.0);
    check("N*m", [1, 2, -2, 0, 0, 0], 1.0);
    check("kN.m", [1, 2, -2, 0, 0, 0], 1e3);
    check("rad/s", [0, 0, -1, 0, 0, 1], 1.0);
    check("rpm", [0, 0, -1, 0, 0, 1], std::f64::consts::PI / 30.0);
    check("1/s", [0, 0, -1, 0, 0, 0], 1.0);
    check("s-1", [0, 0, -1, 0, 0, 0], 1.0);
    check("1/min", [0, 0, -1, 0, 0, 0], 1.0 / 60.0);
    check("Pa", [1, -1, -2, 0, 0, 0], 1.0);
    check("kPa", [1, -1, -2, 0, 0, 0], 1e3);
    check("MPa", [1, -1, -2, 0, 0, 0], 1e6);
    check("bar", [1, -1, -2, 0, 0, 0], 1e5);
    check("mbar", [1, -1, -2, 0, 0, 0], 1e2);
    check("m3/s", [0, 3, -1, 0, 0, 0], 1.0);
    check("l/min", [0, 3, -1, 0, 0, 0], 1e-3 / 60.0);
    check("V", [1, 2, -3, -1, 0, 0], 1.0);
    check("mV", [1, 2, -3, -1, 0, 0], 1e-3);
    check("A", [0, 0, 0, 1, 0, 0], 1.0);
    check("mA", [0, 0, 0, 1, 0, 0], 1e-3);
    check("W", [1, 2, -3, 0, 0, 0], 1.0);
    check("kW", [1, 2, -3, 0, 0, 0], 1e3);
    check("J", [1, 2, -2, 0, 0, 0], 1.0);
    check("K", [0, 0, 0, 0, 1, 0], 1.0);
    check("rad", [0, 0, 0, 0, 0, 1], 1.0);
    check("deg", [0, 0, 0, 0, 0, 1], std::f64::consts::PI / 180.0);
    check("Ohm", [1, 2, -3, -2, 0, 0], 1.0);
    check("Hz", [0, 0, -1, 0, 0, 0], 1.0);
    check("1", [0, 0, 0, 0, 0, 0], 1.0);
    check("%", [0, 0, 0, 0, 0, 0], 0.01);
}

#[test]
fn modelica_unit_syntax() {
    check("kg.m/s2", [1, 1, -2, 0, 0, 0], 1.0);
    check("N.s/m", [1, 0, -1, 0, 0, 0], 1.0);
    check("kg.m2", [1, 2, 0, 0, 0, 0], 1.0);
    check("kg.m2/s3", [1, 2, -3, 0, 0, 0], 1.0);
    check("kg.m2.s-3", [1, 2, -3, 0, 0, 0], 1.0);
    check("m.s-1", [0, 1, -1, 0, 0, 0], 1.0);
    check("N/(m.s)", [1, 0, -3, 0, 0, 0], 1.0);
    check("(kg.m)/s2", [1, 1, -2, 0, 0, 0], 1.0);
    check("N.m/rad", [1, 2, -2, 0, 0, -1], 1.0);
    check("N.m.s/rad", [1, 2, -1, 0, 0, -1], 1.0);
    check("mm2", [0, 2, 0, 0, 0, 0], 1e-6);
    check("cm3", [0, 3, 0, 0, 0, 0], 1e-6);
    check("m/s/s", [0, 1, -2, 0, 0, 0], 1.0);
    check("N m", [1, 2, -2, 0, 0, 0], 1.0);
    check("N . m", [1, 2, -2, 0, 0, 0], 1.0);
    check("W/(m2.K)", [1, 0, -3, 0, -1, 0], 1.0);
}

#[test]
fn affine_units() {
    let c = parse_unit("degC").expect("degC");
    assert_eq!((c.k, c.factor, c.offset), (1, 1.0, 273.15));
    // Inside a product the offset is meaningless and dropped.
    let per = parse_unit("degC/s").expect("degC/s");
    assert_eq!((per.k, per.s, per.offset), (1, -1, 0.0));
}

#[test]
fn unknown_units_are_none() {
    for u in [
        "", " ", "furlong", "m/", "/s", "m..s", "kgg", "N-m", "2", "m^", "m^x", "((m)", "m)",
        "kmin", "degCC", "m s/", ".m", "m. .s", "m.",
    ] {
        assert_eq!(parse_unit(u), None, "'{u}' should not parse");
    }
}

#[test]
fn power_helpers() {
    let force = parse_unit("N").expect("N");
    let velocity = parse_unit("m/s").expect("m/s");
    assert!(force.multiply(&velocity).same_dimension(&POWER));
    assert_eq!(force.multiply(&velocity).dimension_string(), "kg.m2.s-3");
    let torque = parse_unit("N.m").expect("N.m");
    let omega = parse_unit("rad/s").expect("rad/s");
    assert!(
        !torque.multiply(&omega).same_dimension(&POWER),
        "rad is an exponent"
    );
    assert!(torque.multiply(&omega).same_dimension_ignoring_rad(&POWER));
    assert!(BaseUnit::default().is_dimensionless());
    assert_eq!(BaseUnit::default().dimension_string(), "1");
}

#[test]
fn base_unit_definitions_win() {
    let xml = r#"<fmiModelDescription fmiVersion="2.0" modelName="M" guid="g">
  <UnitDefinitions>
    <Unit name="lbf"><BaseUnit kg="1" m="1" s="-2" factor="4.4482216152605"/></Unit>
    <Unit name="N"><BaseUnit kg="1" m="1" s="-2"/></Unit>
    <Unit name="m/s"/>
    <Unit name="weird"><BaseUnit m="1"/></Unit>
  </UnitDefinitions>
  <ModelVariables>
    <ScalarVariable name="a" valueReference="0"><Real unit="lbf"/></ScalarVariable>
    <ScalarVariable name="b" valueReference="1"><Real unit="m/s"/></ScalarVariable>
    <ScalarVariable name="c" valueReference="2"><Real unit="furlong"/></ScalarVariable>
    <ScalarVariable name="d" valueReference="3"><Real/></ScalarVariable>
    <ScalarVariable name="e" valueReference="4"><Real unit="weird"/></ScalarVariable>
  </ModelVariables>
</fmiModelDescription>"#;
    let md = parse_model_description(xml, Path::new("u.xml")).expect("parse");
    let base = |name: &str| variable_base_unit(&md, md.variable_by_name(name).expect(name).1);
    // From <BaseUnit> (a unit string the parser would not know).
    let lbf = base("a").expect("lbf");
    assert_eq!((lbf.kg, lbf.m, lbf.s), (1, 1, -2));
    assert!((lbf.factor - 4.448_221_615_260_5).abs() < 1e-12);
    // A unit definition without <BaseUnit>: parsed from the name.
    let ms = base("b").expect("m/s");
    assert_eq!((ms.m, ms.s), (1, -1));
    // Unknown and missing units: None, never a guess.
    assert_eq!(base("c"), None);
    assert_eq!(base("d"), None);
    // The definition is authoritative even when the name says otherwise.
    let weird = base("e").expect("weird");
    assert_eq!((weird.m, weird.s), (1, 0));
    assert_eq!(unit_base_unit(&md, "kN").map(|u| u.factor), Some(1e3));
}
