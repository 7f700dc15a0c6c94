//! Errors found while reading a scenario, before any model description is
//! looked at: TOML syntax, keys, types, ranges, names of subsystems.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use cosim_scenario::Scenario;

#[test]
fn toml_syntax_error_has_position() {
    let text = "[simulation]\nstop = 1.0\n\n[master]\nstep = = 1e-3\n";
    let e = parse(text).unwrap_err();
    assert!(e.message.starts_with("invalid TOML: "), "{e}");
    assert_eq!(e.line, Some(5));
    assert!(e.column.is_some());
    assert_eq!(e.file.to_str(), Some(PATH));
}

#[test]
fn toml_duplicate_key_is_a_syntax_error() {
    let text = "[simulation]\nstop = 1.0\nstop = 2.0\n";
    let e = parse(text).unwrap_err();
    assert_eq!(e.message, "invalid TOML: duplicate key 'stop'");
    assert_eq!((e.line, e.column), (Some(3), Some(1)));
}

#[test]
fn display_is_rustc_like() {
    let text = BASE.replace("stop = 1.0", "stpo = 1.0");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.to_string(),
        "/scenarios/b1.toml:2:1: error: unknown key 'stpo' in [simulation]\n  |\n2 | stpo = 1.0\n  | ^^^^\n  = help: did you mean 'stop'?"
    );
}

#[test]
fn unknown_key_in_simulation() {
    let text = BASE.replace("stop = 1.0", "stpo = 1.0");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown key 'stpo' in [simulation]");
    assert_eq!((e.line, e.column), (Some(2), Some(1)));
    assert_eq!(e.help.as_deref(), Some("did you mean 'stop'?"));
}

#[test]
fn unknown_top_level_table() {
    let text = format!("{BASE}\n[output]\ndir = \"x\"\n");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown key 'output' in the scenario");
    assert_at(&e, &text, "output]");
    assert_eq!(e.help.as_deref(), Some("did you mean 'outputs'?"));
}

#[test]
fn unknown_key_without_near_match_lists_valid_keys() {
    let text = BASE.replace("stop = 1.0", "duration = 1.0");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown key 'duration' in [simulation]");
    assert_eq!(
        e.help.as_deref(),
        Some("valid keys are: start, stop, real_time")
    );
}

#[test]
fn unknown_key_in_master() {
    let text = BASE.replace("step = 1e-3", "step = 1e-3\nextrapolaton = 1");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown key 'extrapolaton' in [master]");
    assert_eq!((e.line, e.column), (Some(6), Some(1)));
    assert_eq!(e.help.as_deref(), Some("did you mean 'extrapolation'?"));
}

#[test]
fn unknown_key_in_controller() {
    let text = BASE.replace(
        "step = 1e-3",
        "kind = \"ecco\"\nstep = 1e-3\n\n[master.controller]\ndt_mn = 1e-5",
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown key 'dt_mn' in [master.controller]");
    assert_at(&e, &text, "dt_mn");
    assert_eq!(e.help.as_deref(), Some("did you mean 'dt_min'?"));
}

#[test]
fn unknown_key_in_subsystem() {
    let text = BASE.replace(
        "fmu = \"fmus/wheel.fmu\"",
        "fmu = \"fmus/wheel.fmu\"\nparameter = { k_c = 1.0 }",
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown key 'parameter' in [[subsystems]]");
    assert_eq!((e.line, e.column), (Some(14), Some(1)));
    assert_eq!(e.help.as_deref(), Some("did you mean 'parameters'?"));
}

#[test]
fn unknown_key_in_connection() {
    let text = BASE.replace("gain = -1.0", "gian = -1.0");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown key 'gian' in [[connections]]");
    assert_eq!((e.line, e.column), (Some(18), Some(1)));
    assert_eq!(e.help.as_deref(), Some("did you mean 'gain'?"));
}

#[test]
fn unknown_key_in_bond_port() {
    let text = format!(
        "{BASE}\n[[bonds]]\nports = [{{ input = \"chassis.F\", ouput = \"chassis.v_c\" }}, {{ input = \"wheel.v_c\", output = \"wheel.F_c\" }}]\n"
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown key 'ouput' in a bond port");
    assert_at(&e, &text, "ouput");
    assert_eq!(e.help.as_deref(), Some("did you mean 'output'?"));
}

#[test]
fn unknown_key_in_outputs() {
    let text = format!("{BASE}\n[outputs]\nvariable = [\"chassis.*\"]\n");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown key 'variable' in [outputs]");
    assert_at(&e, &text, "variable =");
    assert_eq!(e.help.as_deref(), Some("did you mean 'variables'?"));
}

#[test]
fn wrong_type() {
    let text = BASE.replace("step = 1e-3", "step = \"1ms\"");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "expected a number for 'step' in [master], found the string \"1ms\""
    );
    assert_eq!((e.line, e.column), (Some(5), Some(8)));
}

#[test]
fn wrong_type_bool() {
    let text = BASE.replace("gain = -1.0", "gain = -1.0\nsignal = \"yes\"");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "expected true or false for 'signal' in [[connections]], found the string \"yes\""
    );
    assert_at(&e, &text, "\"yes\"");
}

#[test]
fn wrong_type_subsystems_not_array_of_tables() {
    let text = "subsystems = \"chassis\"\n";
    let e = parse(text).unwrap_err();
    assert_eq!(
        e.message,
        "expected an array of tables for 'subsystems' (write [[subsystems]]), found the string \"chassis\""
    );
    assert_eq!((e.line, e.column), (Some(1), Some(14)));
}

#[test]
fn step_must_be_positive() {
    let text = BASE.replace("step = 1e-3", "step = 0.0");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "'step' in [master] must be a positive number of seconds, not 0"
    );
    assert_eq!((e.line, e.column), (Some(5), Some(8)));
}

#[test]
fn stop_must_be_after_start() {
    let text = BASE.replace("stop = 1.0", "start = 2.0\nstop = 1.0");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "stop time 1 s is not after the start time 2 s");
    assert_eq!((e.line, e.column), (Some(3), Some(8)));
}

#[test]
fn extrapolation_out_of_range() {
    let text = BASE.replace("step = 1e-3", "step = 1e-3\nextrapolation = 3");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "'extrapolation' in [master] must be between 0 and 2, not 3"
    );
    assert_eq!((e.line, e.column), (Some(6), Some(17)));
}

#[test]
fn extrapolation_must_be_integer() {
    let text = BASE.replace("step = 1e-3", "step = 1e-3\nextrapolation = 1.0");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "expected an integer for 'extrapolation' in [master], found the float 1.0"
    );
}

#[test]
fn threads_absurd() {
    let text = BASE.replace("step = 1e-3", "step = 1e-3\nthreads = 100000");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "'threads' in [master] must be between 0 and 1024, not 100000"
    );
    assert_eq!((e.line, e.column), (Some(6), Some(11)));
}

#[test]
fn decimation_zero() {
    let text = format!("{BASE}\n[outputs]\ndecimation = 0\n");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "'decimation' in [outputs] must be at least 1, not 0"
    );
    assert_at_offset(&e, &text, "decimation = 0", 13);
}

#[test]
fn theta_min_at_least_one() {
    let text = BASE.replace(
        "step = 1e-3",
        "kind = \"ecco\"\n\n[master.controller]\ntheta_min = 1.0",
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "'theta_min' in [master.controller] must be in (0, 1), not 1"
    );
    assert_at_offset(&e, &text, "theta_min = 1.0", 12);
}

#[test]
fn dt_min_above_dt_max() {
    let text = BASE.replace(
        "step = 1e-3",
        "kind = \"ecco\"\n\n[master.controller]\ndt_min = 0.1\ndt_max = 0.01",
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "dt_min (0.1) is larger than dt_max (0.01)");
    assert_at(&e, &text, "0.01");
}

#[test]
fn atol_and_rtol_both_zero() {
    let text = BASE.replace("step = 1e-3", "step = 1e-3\natol = 0.0\nrtol = 0");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "'atol' and 'rtol' cannot both be 0");
    assert_eq!((e.line, e.column), (Some(7), Some(8)));
}

#[test]
fn interval_and_decimation_are_exclusive() {
    let text = format!("{BASE}\n[outputs]\ninterval = 1e-2\ndecimation = 10\n");
    let e = parse(&text).unwrap_err();
    let (interval_line, _) = pos(&text, "interval =");
    assert_eq!(
        e.message,
        format!(
            "'interval' and 'decimation' are mutually exclusive ('interval' is given on line {interval_line})"
        )
    );
    assert_at(&e, &text, "10\n");
    assert_eq!(e.help.as_deref(), Some("keep one of them"));
}

#[test]
fn misspelt_master_kind() {
    let text = BASE.replace("step = 1e-3", "kind = \"eco\"");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "unknown kind \"eco\": expected one of \"fixed-step\", \"ecco\", \"predictor-corrector\", \"nepce\", \"richardson\", \"ifosmondi\", \"iterative-affine\", \"strongly-coupled\""
    );
    assert_eq!((e.line, e.column), (Some(5), Some(8)));
    assert_eq!(e.help.as_deref(), Some("did you mean 'ecco'?"));
}

#[test]
fn misspelt_scheme() {
    let text = BASE.replace("step = 1e-3", "step = 1e-3\nscheme = \"gauss-siedel\"");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "unknown scheme \"gauss-siedel\": expected one of \"jacobi\", \"gauss-seidel\""
    );
    assert_eq!(e.help.as_deref(), Some("did you mean 'gauss-seidel'?"));
    assert_eq!((e.line, e.column), (Some(6), Some(10)));
}

#[test]
fn misspelt_indicator() {
    let text = BASE.replace(
        "step = 1e-3",
        "step = 1e-3\nindicators = [\"energy\", \"nepc\"]",
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "unknown indicator \"nepce\": expected one of \"energy\", \"predictor-corrector\", \"nepce\""
            .replace("\"nepce\":", "\"nepc\":")
    );
    assert_at(&e, &text, "\"nepc\"");
    assert_eq!(e.help.as_deref(), Some("did you mean 'nepce'?"));
}

#[test]
fn duplicate_subsystem_name() {
    let text = BASE.replace("name = \"wheel\"", "name = \"chassis\"");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "duplicate subsystem name 'chassis' (first defined on line 8)"
    );
    assert_eq!((e.line, e.column), (Some(12), Some(8)));
}

#[test]
fn invalid_subsystem_name() {
    let text = BASE.replace("name = \"wheel\"", "name = \"wheel.front\"");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "invalid subsystem name \"wheel.front\": use only letters, digits, '_' and '-'"
    );
    assert_eq!((e.line, e.column), (Some(12), Some(8)));
}

#[test]
fn subsystem_without_fmu() {
    let text = BASE.replace("fmu = \"fmus/wheel.fmu\"\n", "");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "[[subsystems]] has no 'fmu': the path of the subsystem's .fmu file (or 'system' for a nested co-simulation)"
    );
    assert_eq!((e.line, e.column), (Some(11), Some(1)));
}

#[test]
fn no_subsystems() {
    let e = parse("[simulation]\nstop = 1.0\n").unwrap_err();
    assert_eq!(e.message, "the scenario has no subsystems");
    assert_eq!(e.line, None);
    assert_eq!(
        e.help.as_deref(),
        Some("add a [[subsystems]] table with 'name' and 'fmu' for each FMU")
    );
}

#[test]
fn unknown_subsystem_in_connection() {
    let text = BASE.replace("from = \"wheel.F_c\"", "from = \"wheeel.F_c\"");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown subsystem 'wheeel'");
    // The caret is on the subsystem part of the string.
    assert_eq!((e.line, e.column), (Some(16), Some(9)));
    assert_eq!(e.help.as_deref(), Some("did you mean 'wheel'?"));
    assert!(
        e.to_string()
            .contains("16 | from = \"wheeel.F_c\"\n   |         ^^^^^^"),
        "{e}"
    );
}

#[test]
fn unknown_subsystem_without_near_match_lists_subsystems() {
    let text = BASE.replace("to = \"chassis.F\"", "to = \"body.F\"");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown subsystem 'body'");
    assert_eq!(
        e.help.as_deref(),
        Some("the subsystems are: chassis, wheel")
    );
    assert_eq!((e.line, e.column), (Some(17), Some(7)));
}

#[test]
fn connection_end_without_dot() {
    let text = BASE.replace("from = \"wheel.F_c\"", "from = \"wheelF_c\"");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "\"wheelF_c\" is not of the form \"<subsystem>.<variable>\""
    );
    assert_eq!((e.line, e.column), (Some(16), Some(8)));
    assert_eq!(e.help.as_deref(), Some("did you mean 'wheel.F_c'?"));
}

#[test]
fn connection_without_to() {
    let text = BASE.replace("to = \"wheel.v_c\"\n", "");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "[[connections]] has no 'to': the input fed by the connection as \"<subsystem>.<variable>\""
    );
    assert_eq!((e.line, e.column), (Some(20), Some(1)));
}

#[test]
fn unknown_subsystem_in_bond() {
    let text = format!(
        "{BASE}\n[[bonds]]\nports = [{{ input = \"chassis.F\", output = \"chassis.v_c\" }}, {{ input = \"whel.v_c\", output = \"wheel.F_c\" }}]\n"
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown subsystem 'whel'");
    assert_at(&e, &text, "whel.v_c");
    assert_eq!(e.help.as_deref(), Some("did you mean 'wheel'?"));
}

#[test]
fn bond_needs_two_ports() {
    let text = format!(
        "{BASE}\n[[bonds]]\nports = [{{ input = \"chassis.F\", output = \"chassis.v_c\" }}]\n"
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "a bond has exactly two ports, one per subsystem; found 1"
    );
    assert_at(&e, &text, "[{ input");
}

#[test]
fn bond_port_on_two_subsystems() {
    let text = format!(
        "{BASE}\n[[bonds]]\nports = [{{ input = \"chassis.F\", output = \"wheel.F_c\" }}, {{ input = \"wheel.v_c\", output = \"chassis.v_c\" }}]\n"
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "a port is an input and an output of one subsystem, but 'chassis.F' and 'wheel.F_c' are on different subsystems"
    );
    assert_at(&e, &text, "{ input = \"chassis.F\"");
}

#[test]
fn bond_ports_on_one_subsystem() {
    let text = format!(
        "{BASE}\n[[bonds]]\nports = [{{ input = \"chassis.F\", output = \"chassis.v_c\" }}, {{ input = \"chassis.locked\", output = \"chassis.z_c\" }}]\n"
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "both ports of the bond are on subsystem 'chassis': a bond joins two different subsystems"
    );
    assert_at(&e, &text, "[{ input");
}

#[test]
fn duplicate_bond_name() {
    let bond = "[[bonds]]\nname = \"susp\"\nports = [{ input = \"chassis.F\", output = \"chassis.v_c\" }, { input = \"wheel.v_c\", output = \"wheel.F_c\" }]\n";
    let text = format!("{BASE}\n{bond}\n{bond}");
    let e = parse(&text).unwrap_err();
    let (first_line, _) = pos(&text, "[[bonds]]");
    assert_eq!(
        e.message,
        format!("duplicate bond name 'susp' (first bond on line {first_line})")
    );
    assert_eq!(e.line, Some(first_line + 5));
}

#[test]
fn unknown_subsystem_in_order() {
    let text = BASE.replace(
        "step = 1e-3",
        "step = 1e-3\nscheme = \"gauss-seidel\"\norder = [\"wheels\", \"chassis\"]",
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown subsystem 'wheels'");
    assert_eq!((e.line, e.column), (Some(7), Some(10)));
    assert_eq!(e.help.as_deref(), Some("did you mean 'wheel'?"));
}

#[test]
fn order_must_be_a_permutation() {
    let text = BASE.replace(
        "step = 1e-3",
        "step = 1e-3\nscheme = \"gauss-seidel\"\norder = [\"wheel\"]",
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "'order' must list every subsystem once; missing: chassis"
    );
    assert_eq!((e.line, e.column), (Some(7), Some(9)));

    let text = BASE.replace(
        "step = 1e-3",
        "step = 1e-3\nscheme = \"gauss-seidel\"\norder = [\"wheel\", \"chassis\", \"wheel\"]",
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "subsystem 'wheel' appears twice in 'order' (first on line 7)"
    );
    assert_eq!((e.line, e.column), (Some(7), Some(30)));
}

#[test]
fn unknown_subsystem_in_output_variables() {
    let text = format!("{BASE}\n[outputs]\nvariables = [\"chassis.*\", \"chasis.z_c\"]\n");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.message, "unknown subsystem 'chasis'");
    assert_at(&e, &text, "chasis.z_c");
    assert_eq!(e.help.as_deref(), Some("did you mean 'chassis'?"));
}

#[test]
fn output_files_must_differ() {
    let text = format!("{BASE}\n[outputs]\ntrace = \"out.csv\"\nstep_log = \"out.csv\"\n");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "'step_log' and 'trace' would both write \"out.csv\""
    );
    assert_at_offset(&e, &text, "step_log = \"out.csv\"", 11);
}

#[test]
fn ecco_without_any_bond() {
    let text = BASE.replace("step = 1e-3", "kind = \"ecco\"\ndiscover_bonds = false");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "master \"ecco\" needs power bonds, but discover_bonds = false and there is no [[bonds]] entry"
    );
    assert_eq!((e.line, e.column), (Some(6), Some(18)));
}

#[test]
fn parameter_value_of_unsupported_type() {
    let text = BASE.replace(
        "fmu = \"fmus/chassis.fmu\"",
        "fmu = \"fmus/chassis.fmu\"\nparameters = { m_c = 1979-05-27 }",
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "expected a number, boolean, string or array as the value of 'm_c', found the date-time 1979-05-27"
    );
    assert_at(&e, &text, "1979");
}

#[test]
fn same_variable_in_parameters_and_start() {
    let text = BASE.replace(
        "fmu = \"fmus/chassis.fmu\"",
        "fmu = \"fmus/chassis.fmu\"\nparameters = { m_c = 400.0 }\nstart = { m_c = 300.0 }",
    );
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "variable 'm_c' of subsystem 'chassis' is given a value twice (also in 'parameters' on line 10)"
    );
    assert_eq!((e.line, e.column), (Some(11), Some(11)));
}

#[test]
fn missing_fmu_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("fmus")).unwrap();
    std::fs::write(dir.path().join("fmus/chassis.fmu"), b"not really a zip").unwrap();
    let path = dir.path().join("b1.toml");
    std::fs::write(&path, BASE).unwrap();
    let e = Scenario::load(&path).unwrap_err();
    let expected = dir.path().join("fmus/wheel.fmu");
    assert_eq!(
        e.message,
        format!(
            "the FMU of subsystem 'wheel' does not exist: {}",
            expected.display()
        )
    );
    assert_eq!((e.line, e.column), (Some(13), Some(7)));
    assert_eq!(e.file, path);
    assert_eq!(
        e.notes,
        vec!["relative paths are resolved against the scenario file's directory".to_string()]
    );
}

#[test]
fn unreadable_scenario_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.toml");
    let e = Scenario::load(&path).unwrap_err();
    assert!(
        e.message.starts_with("cannot read the scenario file: "),
        "{e}"
    );
    assert_eq!(e.line, None);
    assert_eq!(e.file, path);
}

#[test]
fn load_accepts_existing_fmus() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("fmus")).unwrap();
    std::fs::write(dir.path().join("fmus/chassis.fmu"), b"x").unwrap();
    std::fs::write(dir.path().join("fmus/wheel.fmu"), b"x").unwrap();
    let path = dir.path().join("b1.toml");
    std::fs::write(&path, BASE).unwrap();
    let s = Scenario::load(&path).unwrap();
    assert_eq!(
        s.subsystems()[1].fmu.value,
        dir.path().join("fmus/wheel.fmu")
    );
    assert_eq!(s.directory(), dir.path());
}

#[test]
fn warnings_for_keys_without_effect() {
    let text = BASE.replace(
        "step = 1e-3",
        "step = 1e-3\norder = [\"wheel\", \"chassis\"]\nmax_iterations = 5",
    );
    let s = parse(&text).unwrap();
    let w: Vec<String> = s.warnings().iter().map(|w| w.message.clone()).collect();
    assert_eq!(
        w,
        vec![
            "'order' has no effect with scheme \"jacobi\" (set scheme = \"gauss-seidel\")"
                .to_string(),
            "'max_iterations' has no effect with master kind \"fixed-step\"".to_string(),
        ]
    );
    assert!(!s.warnings()[0].is_error());
    assert!(
        s.warnings()[0]
            .to_string()
            .starts_with("/scenarios/b1.toml:6:9: warning: ")
    );
}

#[test]
fn columns_count_characters() {
    let text = "subsystems = [{ name = \"räder\", fmu = \"x.fmu\", step_multiple = 0 }]\n";
    let e = parse(text).unwrap_err();
    assert_eq!(
        e.message,
        "'step_multiple' in [[subsystems]] must be between 1 and 1000000, not 0"
    );
    let col = text[..text.find("0 }").unwrap()].chars().count() + 1;
    assert_eq!((e.line, e.column), (Some(1), Some(col)));
    assert!(
        e.to_string()
            .ends_with(&format!("\n  | {}^", " ".repeat(col - 1))),
        "{e}"
    );
}

/// Each master's use of `[master.controller]`: a key it uses is never
/// reported as having no effect, one it does not use is, by name.
#[test]
fn controller_keys_are_reported_only_where_the_master_ignores_them() {
    let with = |kind: &str, keys: &str| -> Vec<String> {
        let text = BASE.replace("step = 1e-3", &format!("step = 1e-3\nkind = \"{kind}\""))
            + &format!("\n[master.controller]\n{keys}\n");
        let s = parse(&text).unwrap();
        s.warnings().iter().map(|w| w.message.clone()).collect()
    };
    let all = "alpha = 0.9\ndt_min = 1e-5\ndt_max = 1e-2\ntheta_min = 0.3\ntheta_max = 1.4\nk_i = 0.1\nk_p = 0.1\nvariant = \"libcosim\"";
    for kind in ["ecco", "predictor-corrector", "nepce"] {
        let w = with(kind, all);
        assert!(!w.iter().any(|m| m.contains("no effect")), "{kind}: {w:?}");
    }
    // IFOSMONDI halves its step down to dt_min, and uses nothing else.
    assert!(
        !with("ifosmondi", "dt_min = 1e-5")
            .iter()
            .any(|m| m.contains("no effect"))
    );
    assert_eq!(
        with("iterative-affine", "dt_min = 1e-5\nalpha = 0.9"),
        [
            "[master.controller] 'alpha' has no effect with master kind \"iterative-affine\" (it uses dt_min)"
        ]
    );
    let w = with("richardson", all);
    assert_eq!(
        w,
        [
            "[master.controller] 'k_i' has no effect with master kind \"richardson\" (it uses alpha, dt_min, dt_max, theta_min, theta_max)",
            "[master.controller] 'k_p' has no effect with master kind \"richardson\" (it uses alpha, dt_min, dt_max, theta_min, theta_max)",
            "[master.controller] 'variant' has no effect with master kind \"richardson\" (it uses alpha, dt_min, dt_max, theta_min, theta_max)",
        ]
    );
    assert_eq!(
        with("fixed-step", "dt_min = 1e-5"),
        ["[master.controller] has no effect with master kind \"fixed-step\""]
    );
}
