//! Command-line overrides: `--set`, `--stop`, `--step`, `--out`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use common::*;
use cosim_fmi::model_description::StartValue;
use cosim_scenario::{Overrides, ValueOrigin};

fn set(args: &[&str]) -> Overrides {
    Overrides {
        set: args.iter().map(|s| s.to_string()).collect(),
        ..Overrides::default()
    }
}

#[test]
fn set_parameter_and_start_by_causality() {
    let text = BASE.replace(
        "fmu = \"fmus/chassis.fmu\"",
        "fmu = \"fmus/chassis.fmu\"\nparameters = { m_c = 400.0 }",
    );
    let mut s = parse(&text).unwrap();
    s.apply_overrides(&set(&[
        "chassis.m_c=500",
        "chassis.z_c=0.05",
        "wheel.label=rear left",
        "wheel.nonlinear=true",
        "wheel.n_sub=20",
        "chassis.body.x[1]=1e-3",
    ]))
    .unwrap();
    let r = resolve_scenario(&s).unwrap();
    let ch = &r.subsystems[0];
    // The command line replaces the file's value.
    assert_eq!(ch.parameters.len(), 1);
    assert_eq!(ch.parameters[0].name, "m_c");
    assert_eq!(ch.parameters[0].value, StartValue::Float(vec![500.0]));
    assert_eq!(
        ch.parameters[0].origin,
        ValueOrigin::Argument("--set chassis.m_c=500".into())
    );
    let starts: Vec<(&str, StartValue)> = ch
        .start_values
        .iter()
        .map(|a| (a.name.as_str(), a.value.clone()))
        .collect();
    assert_eq!(
        starts,
        vec![
            ("z_c", StartValue::Float(vec![0.05])),
            ("body.x[1]", StartValue::Float(vec![1e-3])),
        ]
    );
    let wh: Vec<(&str, StartValue)> = r.subsystems[1]
        .parameters
        .iter()
        .map(|a| (a.name.as_str(), a.value.clone()))
        .collect();
    assert_eq!(
        wh,
        vec![
            ("label", StartValue::String(vec!["rear left".into()])),
            ("nonlinear", StartValue::Bool(vec![true])),
            ("n_sub", StartValue::Int(vec![20])),
        ]
    );
}

#[test]
fn set_quoted_string() {
    let mut s = parse(BASE).unwrap();
    s.apply_overrides(&set(&["wheel.label=\"a=b\""])).unwrap();
    let r = resolve_scenario(&s).unwrap();
    assert_eq!(
        r.subsystems[1].parameters[0].value,
        StartValue::String(vec!["a=b".into()])
    );
}

#[test]
fn set_unknown_subsystem() {
    let mut s = parse(BASE).unwrap();
    let e = s.apply_overrides(&set(&["chasis.m_c=1"])).unwrap_err();
    assert_eq!(e.message, "unknown subsystem 'chasis'");
    assert_eq!(e.argument.as_deref(), Some("--set chasis.m_c=1"));
    assert_eq!(e.help.as_deref(), Some("did you mean 'chassis'?"));
    assert_eq!(e.line, None);
    assert_eq!(
        e.to_string(),
        "/scenarios/b1.toml: error: in command-line argument '--set chasis.m_c=1': unknown subsystem 'chasis'\n  = help: did you mean 'chassis'?"
    );
}

#[test]
fn set_malformed() {
    let mut s = parse(BASE).unwrap();
    let e = s.apply_overrides(&set(&["chassis.m_c"])).unwrap_err();
    assert_eq!(
        e.message,
        "expected <subsystem>.<variable>=<value>, e.g. --set chassis.m_c=400"
    );
    assert_eq!(e.argument.as_deref(), Some("--set chassis.m_c"));
    let e = s.apply_overrides(&set(&["m_c=1"])).unwrap_err();
    assert_eq!(
        e.message,
        "\"m_c\" is not of the form \"<subsystem>.<variable>\""
    );
}

#[test]
fn set_unknown_variable() {
    let mut s = parse(BASE).unwrap();
    s.apply_overrides(&set(&["chassis.mc=1"])).unwrap();
    let e = resolve_scenario(&s).unwrap_err();
    assert_eq!(
        e.message,
        "subsystem 'chassis' (QuarterCarChassis) has no variable 'mc'"
    );
    assert_eq!(e.argument.as_deref(), Some("--set chassis.mc=1"));
    assert_eq!(e.help.as_deref(), Some("did you mean 'm_c'?"));
    assert_eq!(e.line, None);
}

#[test]
fn set_wrong_type() {
    let mut s = parse(BASE).unwrap();
    s.apply_overrides(&set(&["chassis.m_c=heavy"])).unwrap();
    let e = resolve_scenario(&s).unwrap_err();
    assert_eq!(
        e.message,
        "'m_c' is of type Real: expected a number, found the string \"heavy\""
    );
    assert_eq!(e.argument.as_deref(), Some("--set chassis.m_c=heavy"));
}

#[test]
fn set_calculated_output() {
    let mut s = parse(BASE).unwrap();
    s.apply_overrides(&set(&["chassis.a_c=1"])).unwrap();
    let e = resolve_scenario(&s).unwrap_err();
    assert_eq!(
        e.message,
        "'a_c' is an output with initial=\"calculated\": the FMU computes its initial value, it cannot be set"
    );
    assert_eq!(e.argument.as_deref(), Some("--set chassis.a_c=1"));
}

#[test]
fn stop_step_and_out() {
    let mut s = parse(BASE).unwrap();
    s.apply_overrides(&Overrides {
        stop: Some(5.0),
        step: Some(2e-3),
        out: Some(PathBuf::from("/tmp/run1")),
        ..Overrides::default()
    })
    .unwrap();
    let r = resolve_scenario(&s).unwrap();
    assert_eq!(r.stop, 5.0);
    assert_eq!(r.master.step, 2e-3);
    assert_eq!(r.outputs.dir, PathBuf::from("/tmp/run1"));
    assert_eq!(r.outputs.trace, Some(PathBuf::from("/tmp/run1/trace.csv")));
}

#[test]
fn relative_out_is_relative_to_the_current_directory() {
    let mut s = parse(BASE).unwrap();
    s.apply_overrides(&Overrides {
        out: Some(PathBuf::from("results")),
        ..Overrides::default()
    })
    .unwrap();
    let r = resolve_scenario(&s).unwrap();
    assert_eq!(
        r.outputs.dir,
        std::env::current_dir().unwrap().join("results")
    );
}

#[test]
fn stop_not_after_start() {
    let text = BASE.replace("stop = 1.0", "start = 1.0\nstop = 2.0");
    let mut s = parse(&text).unwrap();
    let e = s
        .apply_overrides(&Overrides {
            stop: Some(0.5),
            ..Overrides::default()
        })
        .unwrap_err();
    assert_eq!(e.message, "stop time 0.5 s is not after the start time 1 s");
    assert_eq!(e.argument.as_deref(), Some("--stop 0.5"));
}

#[test]
fn stop_not_after_default_experiment_start() {
    // No start in the file: the check happens at resolution.
    let text = BASE.replace("stop = 1.0", "");
    let mut s = parse(&text).unwrap();
    s.apply_overrides(&Overrides {
        stop: Some(-1.0),
        ..Overrides::default()
    })
    .unwrap();
    let e = resolve_scenario(&s).unwrap_err();
    assert_eq!(e.message, "stop time -1 s is not after the start time 0 s");
    assert_eq!(e.argument.as_deref(), Some("--stop -1"));
}

#[test]
fn step_must_be_positive() {
    let mut s = parse(BASE).unwrap();
    let e = s
        .apply_overrides(&Overrides {
            step: Some(0.0),
            ..Overrides::default()
        })
        .unwrap_err();
    assert_eq!(
        e.message,
        "the step must be a positive number of seconds, not 0"
    );
    assert_eq!(e.argument.as_deref(), Some("--step 0"));
}
