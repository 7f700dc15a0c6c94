//! Errors found when the scenario is matched against the FMUs' model
//! descriptions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

const BOND: &str = r#"
[[bonds]]
name = "suspension"
ports = [ { input = "chassis.F", output = "chassis.v_c" }, { input = "wheel.v_c", output = "wheel.F_c" } ]
"#;

fn with_chassis(extra: &str) -> String {
    BASE.replace(
        "fmu = \"fmus/chassis.fmu\"",
        &format!("fmu = \"fmus/chassis.fmu\"\n{extra}"),
    )
}

fn with_wheel(extra: &str) -> String {
    BASE.replace(
        "fmu = \"fmus/wheel.fmu\"",
        &format!("fmu = \"fmus/wheel.fmu\"\n{extra}"),
    )
}

#[test]
fn unknown_variable_in_from() {
    let text = BASE.replace("\"wheel.F_c\"", "\"wheel.F_x\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "subsystem 'wheel' (QuarterCarWheel) has no variable 'F_x'"
    );
    assert_eq!((e.line, e.column), (Some(16), Some(15)));
    assert_eq!(e.help.as_deref(), Some("did you mean 'F_c'?"));
    assert_eq!(
        e.to_string(),
        "/scenarios/b1.toml:16:15: error: subsystem 'wheel' (QuarterCarWheel) has no variable 'F_x'\n   |\n16 | from = \"wheel.F_x\"\n   |               ^^^\n   = help: did you mean 'F_c'?"
    );
}

#[test]
fn unknown_variable_in_to_prefers_inputs() {
    let text = BASE.replace("to = \"wheel.v_c\"", "to = \"wheel.v_cc\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "subsystem 'wheel' (QuarterCarWheel) has no variable 'v_cc'"
    );
    assert_eq!((e.line, e.column), (Some(22), Some(13)));
    assert_eq!(e.help.as_deref(), Some("did you mean 'v_c'?"));
}

#[test]
fn unknown_variable_with_dots_and_brackets() {
    // Split at the first dot only: the variable is "body.y[1]".
    let text = with_chassis("start = { \"body.y[1]\" = 1.0 }");
    let e = error(&text);
    assert_eq!(
        e.message,
        "subsystem 'chassis' (QuarterCarChassis) has no variable 'body.y[1]'"
    );
    assert_at(&e, &text, "\"body.y[1]\"");
    assert_eq!(e.help.as_deref(), Some("did you mean 'body.x[1]'?"));
}

#[test]
fn from_is_a_parameter() {
    let text = BASE.replace("from = \"wheel.F_c\"", "from = \"wheel.k_c\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "'wheel.k_c' is a parameter, not an output: 'from' must name an output"
    );
    assert_eq!((e.line, e.column), (Some(16), Some(15)));
}

#[test]
fn from_is_a_local() {
    let text = BASE.replace("from = \"wheel.F_c\"", "from = \"wheel.z_w\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "'wheel.z_w' is a local variable, not an output: 'from' must name an output"
    );
    assert_eq!((e.line, e.column), (Some(16), Some(15)));
}

#[test]
fn to_is_not_an_input() {
    let text = BASE.replace("to = \"chassis.F\"", "to = \"chassis.m_c\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "'chassis.m_c' is a parameter, not an input: 'to' must name an input"
    );
    assert_eq!((e.line, e.column), (Some(17), Some(15)));
}

#[test]
fn output_to_output() {
    let text = BASE.replace("to = \"chassis.F\"", "to = \"chassis.v_c\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "connection from output to output: 'wheel.F_c' and 'chassis.v_c' are both outputs"
    );
    assert_eq!((e.line, e.column), (Some(17), Some(15)));
    assert_eq!(e.help.as_deref(), Some("'to' must name an input"));
}

#[test]
fn input_to_input() {
    let text = BASE.replace("from = \"wheel.F_c\"", "from = \"wheel.x_c\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "connection from input to input: 'wheel.x_c' and 'chassis.F' are both inputs"
    );
    assert_eq!((e.line, e.column), (Some(16), Some(15)));
}

#[test]
fn reversed_connection() {
    let text = BASE
        .replace("from = \"chassis.v_c\"", "from = \"wheel.v_c\"")
        .replace("to = \"wheel.v_c\"", "to = \"chassis.v_c\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "connection in the wrong direction: 'wheel.v_c' is an input and 'chassis.v_c' an output"
    );
    assert_eq!((e.line, e.column), (Some(21), Some(15)));
    assert_eq!(e.help.as_deref(), Some("swap 'from' and 'to'"));
}

#[test]
fn input_fed_twice() {
    let text = format!("{BASE}\n[[connections]]\nfrom = \"wheel.v_w\"\nto = \"chassis.F\"\n");
    let e = error(&text);
    assert_eq!(
        e.message,
        "input 'chassis.F' is fed by two connections (lines 15 and 24)"
    );
    assert_eq!((e.line, e.column), (Some(26), Some(6)));
    assert_eq!(
        e.help.as_deref(),
        Some("an input takes its value from exactly one output: remove one of them")
    );
}

#[test]
fn type_mismatch() {
    let text = format!("{BASE}\n[[connections]]\nfrom = \"wheel.F_c\"\nto = \"chassis.locked\"\n");
    let e = error(&text);
    assert_eq!(
        e.message,
        "type mismatch: 'wheel.F_c' is Float64 but 'chassis.locked' is Boolean"
    );
    assert_eq!((e.line, e.column), (Some(26), Some(6)));
}

#[test]
fn float32_to_float64_is_allowed() {
    let text = r#"
[simulation]
stop = 1.0
[master]
step = 0.01
[[subsystems]]
name = "m1"
fmu = "a.fmu"
[[subsystems]]
name = "m2"
fmu = "b.fmu"
[[connections]]
from = "m1.v"
to = "m2.F"
unit_mismatch = true
"#;
    let r = resolve(text).unwrap();
    assert_eq!(r.connections.len(), 1);
}

#[test]
fn gain_on_boolean_connection() {
    let text = format!(
        "{BASE}\n[[connections]]\nfrom = \"wheel.contact\"\nto = \"chassis.locked\"\ngain = 2.0\n"
    );
    let e = error(&text);
    assert_eq!(
        e.message,
        "'gain' and 'offset' apply to floating-point connections only; 'wheel.contact' is Boolean"
    );
    assert_eq!((e.line, e.column), (Some(27), Some(8)));
}

#[test]
fn unit_mismatch_by_factor() {
    let text = BASE.replace("from = \"wheel.F_c\"", "from = \"wheel.F_c_kN\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "unit mismatch: 'wheel.F_c_kN' is in kN but 'chassis.F' is in N (1 kN = 1000 N)"
    );
    assert_eq!((e.line, e.column), (Some(17), Some(6)));
    assert_eq!(
        e.help.as_deref(),
        Some(
            "if this is intended (e.g. the gain converts), add 'unit_mismatch = true' to this connection"
        )
    );
}

#[test]
fn unit_mismatch_by_dimension() {
    let text = format!("{BASE}\n[[connections]]\nfrom = \"chassis.v_c\"\nto = \"wheel.x_c\"\n");
    let e = error(&text);
    assert_eq!(
        e.message,
        "unit mismatch: 'chassis.v_c' is in m/s (m.s-1) but 'wheel.x_c' is in m (m)"
    );
    assert_eq!((e.line, e.column), (Some(26), Some(6)));
}

#[test]
fn unit_mismatch_with_unknown_unit() {
    let text = format!("{BASE}\n[[connections]]\nfrom = \"wheel.distance\"\nto = \"wheel.x_c\"\n");
    let e = error(&text);
    assert_eq!(
        e.message,
        "unit mismatch: 'wheel.distance' is in 'furlong' but 'wheel.x_c' is in 'm' (compared by name: 'furlong' is not a known unit)"
    );
    assert_eq!((e.line, e.column), (Some(26), Some(6)));
}

#[test]
fn intended_unit_mismatch_is_accepted() {
    let text = BASE.replace(
        "from = \"wheel.F_c\"\nto = \"chassis.F\"\ngain = -1.0",
        "from = \"wheel.F_c_kN\"\nto = \"chassis.F\"\ngain = -1000.0\nunit_mismatch = true",
    );
    let r = resolve(&text).unwrap();
    assert!(r.connections[0].unit_mismatch);
    assert_eq!(r.connections[0].gain, -1000.0);
}

#[test]
fn parameter_unknown_variable() {
    let text = with_chassis("parameters = { m_C = 400.0 }");
    let e = error(&text);
    assert_eq!(
        e.message,
        "subsystem 'chassis' (QuarterCarChassis) has no variable 'm_C'"
    );
    assert_at(&e, &text, "m_C");
    assert_eq!(e.help.as_deref(), Some("did you mean 'm_c'?"));
}

#[test]
fn parameter_of_wrong_causality_settable_as_start() {
    let text = with_chassis("parameters = { z_c = 0.1 }");
    let e = error(&text);
    assert_eq!(e.message, "'z_c' is an output, not a parameter");
    assert_at(&e, &text, "z_c =");
    assert_eq!(e.help.as_deref(), Some("set it under 'start' instead"));
}

#[test]
fn parameter_that_is_an_input() {
    let text = with_chassis("parameters = { F = 1.0 }");
    let e = error(&text);
    assert_eq!(e.message, "'F' is an input, not a parameter");
    assert_eq!(e.help.as_deref(), Some("set it under 'start' instead"));
}

#[test]
fn start_for_calculated_output() {
    let text = with_chassis("start = { a_c = 1.0 }");
    let e = error(&text);
    assert_eq!(
        e.message,
        "'a_c' is an output with initial=\"calculated\": the FMU computes its initial value, it cannot be set"
    );
    assert_at(&e, &text, "a_c =");
}

#[test]
fn start_for_a_parameter() {
    let text = with_chassis("start = { m_c = 300.0 }");
    let e = error(&text);
    assert_eq!(e.message, "'m_c' is a parameter, not a start value");
    assert_at(&e, &text, "m_c =");
    assert_eq!(e.help.as_deref(), Some("set it under 'parameters' instead"));
}

#[test]
fn start_for_calculated_parameter_constant_and_time() {
    let e = error(&with_chassis("start = { k_eff = 1.0 }"));
    assert_eq!(
        e.message,
        "'k_eff' is a calculated parameter: the FMU computes it, it cannot be set"
    );
    assert_eq!(e.line, Some(10));
    let e = error(&with_chassis("start = { g = 9.8 }"));
    assert_eq!(e.message, "'g' is a constant and cannot be set");
    let e = error(&with_chassis("start = { time = 1.0 }"));
    assert_eq!(
        e.message,
        "'time' is the independent variable (time): set [simulation] start instead"
    );
}

#[test]
fn parameter_of_wrong_type() {
    let text = with_chassis("parameters = { m_c = \"heavy\" }");
    let e = error(&text);
    assert_eq!(
        e.message,
        "'m_c' is of type Real: expected a number, found the string \"heavy\""
    );
    assert_at(&e, &text, "\"heavy\"");
}

#[test]
fn parameter_wrong_type_for_integer_boolean_string() {
    let text = with_wheel("parameters = { n_sub = 2.5 }");
    let e = error(&text);
    assert_eq!(
        e.message,
        "'n_sub' is of type Integer: expected an integer, found the float 2.5"
    );
    assert_at(&e, &text, "2.5");
    let e = error(&with_wheel("parameters = { nonlinear = 1 }"));
    assert_eq!(
        e.message,
        "'nonlinear' is of type Boolean: expected true or false, found the integer 1"
    );
    let e = error(&with_wheel("parameters = { label = 3 }"));
    assert_eq!(
        e.message,
        "'label' is of type String: expected a string, found the integer 3"
    );
}

#[test]
fn parameter_below_minimum() {
    let text = with_chassis("parameters = { m_c = -1.0 }");
    let e = error(&text);
    assert_eq!(e.message, "-1 is below the minimum 0 of 'm_c'");
    assert_at(&e, &text, "-1.0");
}

#[test]
fn bond_port_input_not_an_input() {
    let bond = BOND.replace("{ input = \"chassis.F\"", "{ input = \"chassis.z_c\"");
    let text = format!("{BASE}{bond}");
    let e = error(&text);
    assert_eq!(
        e.message,
        "'chassis.z_c' is an output, not an input: a port's 'input' must name an input"
    );
    assert_at_offset(&e, &text, "chassis.z_c", 8);
}

#[test]
fn bond_unknown_variable() {
    let bond = BOND.replace("output = \"wheel.F_c\"", "output = \"wheel.Fc\"");
    let text = format!("{BASE}{bond}");
    let e = error(&text);
    assert_eq!(
        e.message,
        "subsystem 'wheel' (QuarterCarWheel) has no variable 'Fc'"
    );
    assert_at_offset(&e, &text, "wheel.Fc", 6);
    assert_eq!(e.help.as_deref(), Some("did you mean 'F_c'?"));
}

#[test]
fn bond_not_cross_connected() {
    // Nothing feeds wheel.x_c from chassis.z_c.
    let bond = "\n[[bonds]]\nports = [ { input = \"chassis.F\", output = \"chassis.z_c\" }, { input = \"wheel.x_c\", output = \"wheel.F_c\" } ]\n";
    let text = format!("{BASE}{bond}");
    let e = error(&text);
    assert_eq!(
        e.message,
        "bond 'chassis.F~wheel.x_c' is not cross-connected: no connection feeds 'wheel.x_c' from 'chassis.z_c'"
    );
    assert_at(&e, &text, "\"wheel.x_c\"");
    assert_eq!(
        e.help.as_deref(),
        Some("add [[connections]] from = \"chassis.z_c\", to = \"wheel.x_c\"")
    );
}

#[test]
fn bond_fed_by_another_output() {
    let text = format!(
        "{}{BOND}",
        BASE.replace("from = \"chassis.v_c\"", "from = \"wheel.v_w\"")
            .replace(
                "to = \"wheel.v_c\"",
                "to = \"wheel.v_c\"\nunit_mismatch = false"
            )
    );
    let e = error(&text);
    assert_eq!(
        e.message,
        "bond 'suspension' is not cross-connected: 'wheel.v_c' is fed by the connection on line 20, not by 'chassis.v_c'"
    );
    assert_at(&e, &text, "\"wheel.v_c\", output");
}

#[test]
fn bond_not_an_effort_flow_pair() {
    let connections = "\n[[connections]]\nfrom = \"chassis.z_c\"\nto = \"wheel.x_c\"\n";
    let bond = "\n[[bonds]]\nports = [ { input = \"chassis.F\", output = \"chassis.z_c\" }, { input = \"wheel.x_c\", output = \"wheel.F_c\" } ]\n";
    let text = format!("{BASE}{connections}{bond}");
    let e = error(&text);
    assert_eq!(
        e.message,
        "bond 'chassis.F~wheel.x_c': 'chassis.F' and 'chassis.z_c' are not an effort/flow pair: F [N] and z_c [m] multiply to N.m (kg.m2.s-2), not a power (kg.m2.s-3)"
    );
    assert_at(&e, &text, "{ input = \"chassis.F\"");
    assert_eq!(
        e.help.as_deref(),
        Some("if the pairing is intended, add 'intended = true' to this bond")
    );

    // Declared intended: accepted, with no power factor.
    let text = format!("{text}intended = true\n");
    let r = resolve(&text).unwrap();
    assert!(r.bonds[0].intended);
    assert_eq!(r.bonds[0].power_factor, None);
}

#[test]
fn bond_pair_without_units() {
    // d_c has no unit, but it is a parameter: use an input without unit.
    let md_text = BASE.to_string();
    let bond = "\n[[bonds]]\nports = [ { input = \"chassis.F\", output = \"chassis.v_c\" }, { input = \"wheel.v_c\", output = \"wheel.v_w\" } ]\n";
    let text = format!(
        "{}{bond}",
        md_text.replace(
            "from = \"wheel.F_c\"",
            "from = \"wheel.v_w\"\nunit_mismatch = true"
        )
    );
    let e = error(&text);
    assert_eq!(
        e.message,
        "bond 'chassis.F~wheel.v_c': 'wheel.v_c' and 'wheel.v_w' are not an effort/flow pair: v_c [m/s] and v_w [m/s] multiply to m/s.m/s (m2.s-2), not a power (kg.m2.s-3)"
    );
}

#[test]
fn input_in_two_bonds() {
    let second = BOND.replace("suspension", "again");
    let text = format!("{BASE}{BOND}{second}");
    let e = error(&text);
    let (line, _) = pos(&text, "[[bonds]]");
    assert_eq!(
        e.message,
        format!("input 'chassis.F' already belongs to bond 'suspension' (line {line})")
    );
    // The second bond's ports line: [[bonds]], name, ports.
    assert_eq!(e.line, Some(line + 6));
}

#[test]
fn output_glob_matching_nothing() {
    let text = format!("{BASE}\n[outputs]\nvariables = [\"chassis.F_*\"]\n");
    let e = error(&text);
    assert_eq!(e.message, "\"chassis.F_*\" matches no variable");
    assert_at(&e, &text, "F_*");
    assert_eq!(e.help.as_deref(), Some("did you mean 'F'?"));
}

#[test]
fn output_unknown_variable() {
    let text = format!("{BASE}\n[outputs]\nvariables = [\"wheel.F_cc\"]\n");
    let e = error(&text);
    assert_eq!(
        e.message,
        "subsystem 'wheel' (QuarterCarWheel) has no variable 'F_cc'"
    );
    assert_at(&e, &text, "F_cc");
    assert_eq!(e.help.as_deref(), Some("did you mean 'F_c'?"));
}

#[test]
fn output_invalid_glob() {
    let text = format!("{BASE}\n[outputs]\nvariables = [\"wheel.F_{{c\"]\n");
    let e = error(&text);
    assert!(e.message.starts_with("invalid pattern \"F_{c\": "), "{e}");
    assert_at(&e, &text, "F_{c");
}

#[test]
fn missing_stop_time() {
    // mass3 gives stopTime 5, chassis 3: they differ.
    let text = r#"[master]
step = 0.01

[[subsystems]]
name = "chassis"
fmu = "a.fmu"

[[subsystems]]
name = "m3"
fmu = "b.fmu"
"#;
    let e = error(text);
    assert_eq!(
        e.message,
        "no stop time: [simulation] has no 'stop', and the FMUs' DefaultExperiment stopTimes differ (chassis: 3 s, m3: 5 s)"
    );
    assert_eq!(e.line, None);
    assert_eq!(
        e.help.as_deref(),
        Some("add 'stop = <seconds>' under [simulation]")
    );
}

#[test]
fn missing_stop_time_without_default_experiment() {
    use cosim_scenario::Scenario;
    let text = "[simulation]\nstart = 0.0\n\n[[subsystems]]\nname = \"x\"\nfmu = \"x.fmu\"\n";
    let s = Scenario::from_str(text, PATH).unwrap();
    let md = fmi2(
        "Bare",
        r#"<ScalarVariable name="y" valueReference="0" causality="output"><Real/></ScalarVariable>"#,
        "",
    );
    let e = s.resolve(&[("x", &md)]).unwrap_err();
    assert_eq!(
        e.message,
        "no stop time: [simulation] has no 'stop', and the FMU of subsystem 'x' gives no DefaultExperiment stopTime"
    );
    assert_eq!((e.line, e.column), (Some(1), Some(1)));
}

#[test]
fn iterative_master_needs_a_step() {
    let text = r#"[simulation]
stop = 1.0

[master]
kind = "ifosmondi"

[[subsystems]]
name = "m3"
fmu = "b.fmu"
"#;
    let e = error(text);
    assert_eq!(
        e.message,
        "master \"ifosmondi\" needs a step: [master] has no 'step', and the FMUs give no common DefaultExperiment stepSize"
    );
    assert_eq!((e.line, e.column), (Some(5), Some(8)));
}

#[test]
fn missing_model_description() {
    let s = parse(BASE).unwrap();
    let c = chassis();
    let e = s.resolve(&[("chassis", &c)]).unwrap_err();
    assert_eq!(
        e.message,
        "no model description was given for subsystem 'wheel'"
    );
    assert_eq!((e.line, e.column), (Some(12), Some(8)));
}

#[test]
fn stop_from_default_experiment_not_after_start() {
    let text = "[simulation]\nstart = 4.0\n\n[[subsystems]]\nname = \"chassis\"\nfmu = \"c.fmu\"\n";
    let e = error(text);
    assert_eq!(
        e.message,
        "stop time 3 s is not after the start time 4 s (both from the FMUs' DefaultExperiment)"
    );
}

#[test]
fn fmi3_array_parameter_of_wrong_length() {
    let text = "[simulation]\nstop = 1.0\n[master]\nstep = 0.1\n[[subsystems]]\nname = \"m3\"\nfmu = \"m.fmu\"\nparameters = { gains = [1.0, 2.0] }\n";
    let e = error(text);
    assert_eq!(
        e.message,
        "shape mismatch: 'gains' is an array of 3 elements, the value given is an array of 2 elements (write it nested as the array, e.g. [1.0, 2.0])"
    );
    assert_eq!((e.line, e.column), (Some(8), Some(24)));
}

#[test]
fn fmi3_int8_out_of_range() {
    let text = "[simulation]\nstop = 1.0\n[master]\nstep = 0.1\n[[subsystems]]\nname = \"m3\"\nfmu = \"m.fmu\"\nparameters = { mode = 300 }\n";
    let e = error(text);
    assert_eq!(
        e.message,
        "300 is out of the range of Int8 (-128 to 127) of 'mode'"
    );
    assert_eq!((e.line, e.column), (Some(8), Some(23)));
}

#[test]
fn step_below_the_time_resolution() {
    // At t = 1e20 s a 1 ms step is below the resolution of an f64: the
    // FMUs would be asked for steps of 0 s.
    let text = BASE.replace("stop = 1.0", "start = 1e20\nstop = 2e20");
    let e = error(&text);
    assert!(
        e.message.starts_with(
            "the step 0.001 s is too small to be represented at t = 200000000000000000000 s"
        ),
        "{}",
        e.message
    );
    assert_eq!(e.line, Some(6)); // step = 1e-3
    // The same step is fine near t = 0.
    let ok = BASE.replace("stop = 1.0", "start = 1e6\nstop = 2e6");
    assert!(
        cosim_scenario::Scenario::from_str(&ok, "/scenarios/b1.toml")
            .unwrap()
            .resolve(&[("chassis", &chassis()), ("wheel", &wheel())])
            .is_ok()
    );
}
