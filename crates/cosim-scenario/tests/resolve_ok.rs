//! Scenarios that resolve, and what they resolve to.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use common::*;
use cosim_fmi::model_description::StartValue;
use cosim_scenario::{
    Aggregate, BondPort, Controller, EnergyReference, Indicator, MasterKind, NonFinite,
    Normalisation, PiVariant, RichardsonEstimate, Sampling, Scheme, ValueOrigin, VariableRef,
};

const B1: &str = r#"# B1 quarter car, reticulation B, ECCO (sadjina2016 sec. IV)
[simulation]
start = 0.0
stop = 2.0

[master]
kind = "ecco"
step = 1e-3
scheme = "gauss-seidel"
order = ["wheel", "chassis"]
extrapolation = 1
threads = 1
indicators = ["energy", "nepce"]
discover_bonds = false
nonfinite = "warn"
tolerance = 2.8e-6
energy_scale = 750.0
energy_reference = "largest-residual"
normalisation = "atol-rtol"
atol = 1e-5
rtol = 1e-3
aggregate = "max"

[master.controller]
alpha = 0.9
dt_min = 1e-5
dt_max = 5e-2
k_i = 0.1
variant = "libcosim"

[[subsystems]]
name = "chassis"
fmu = "../fmus/dist/fmi2/QuarterCarChassis.fmu"
parameters = { m_c = 400 }
start = { z_c = 0.0, "body.x[1]" = 0.5 }

[[subsystems]]
name = "wheel"
fmu = "../fmus/dist/fmi2/QuarterCarWheel.fmu"
parameters = { k_c = 15000, d_c = 1000.0, n_sub = 10, nonlinear = true, label = "front" }
start = { z_road = 0.1, x_c = 0.0 }
step_multiple = 2

[[connections]]
from = "wheel.F_c"
to = "chassis.F"
gain = -1.0

[[connections]]
from = "chassis.v_c"
to = "wheel.v_c"

[[connections]]
from = "chassis.z_c"
to = "wheel.x_c"
signal = true
offset = 0.25

[[bonds]]
name = "suspension"
ports = [ { input = "chassis.F", output = "chassis.v_c" }, { input = "wheel.v_c", output = "wheel.F_c" } ]
tolerance = 3.1e-5

[outputs]
dir = "out/b1"
trace = "trace.csv"
variables = ["chassis.*", "wheel.F_c", "chassis.v_c"]
decimation = 10
energy_log = "energy.csv"
step_log = false
summary = "summary.json"
"#;

#[test]
fn full_b1_scenario() {
    let r = resolve(B1).unwrap();
    let (c, w) = (chassis(), wheel());
    let idx = |md: &cosim_fmi::ModelDescription, n: &str| md.variable_by_name(n).unwrap().0;

    assert_eq!((r.start, r.stop), (0.0, 2.0));
    assert_eq!(r.file, PathBuf::from(PATH));

    let m = &r.master;
    assert_eq!(m.kind, MasterKind::Ecco);
    assert_eq!(m.step, 1e-3);
    assert_eq!(m.scheme, Scheme::GaussSeidel);
    assert_eq!(m.order, Some(vec![1, 0]));
    assert_eq!(m.extrapolation, 1);
    assert_eq!(m.threads, 1);
    assert_eq!(m.indicators, vec![Indicator::Energy, Indicator::Nepce]);
    assert!(!m.discover_bonds);
    assert_eq!(m.nonfinite, NonFinite::Warn);
    assert_eq!(m.tolerance, 2.8e-6);
    assert_eq!(m.energy_scale, 750.0);
    assert_eq!(m.energy_reference, EnergyReference::LargestResidual);
    assert_eq!(m.normalisation, Normalisation::AtolRtol);
    assert_eq!((m.atol, m.rtol), (1e-5, 1e-3));
    assert_eq!(m.aggregate, Aggregate::Max);
    assert_eq!(
        m.controller,
        Controller {
            alpha: 0.9,
            dt_min: 1e-5,
            dt_max: 5e-2,
            theta_min: 0.2,
            theta_max: 1.5,
            k_i: Some(0.1),
            k_p: None,
            variant: PiVariant::Libcosim,
        }
    );
    assert_eq!(m.controller.gains(3), (0.1, 0.4 / 3.0));

    assert_eq!(r.subsystems.len(), 2);
    let ch = &r.subsystems[0];
    assert_eq!(ch.name, "chassis");
    assert_eq!(
        ch.fmu,
        PathBuf::from("/scenarios/../fmus/dist/fmi2/QuarterCarChassis.fmu")
    );
    assert_eq!(ch.step_multiple, 1);
    assert_eq!(ch.parameters.len(), 1);
    assert_eq!(ch.parameters[0].variable, idx(&c, "m_c"));
    assert_eq!(ch.parameters[0].name, "m_c");
    // An integer given for a Float64 parameter becomes a float.
    assert_eq!(ch.parameters[0].value, StartValue::Float(vec![400.0]));
    assert!(matches!(ch.parameters[0].origin, ValueOrigin::File(_)));
    let starts: Vec<(usize, StartValue)> = ch
        .start_values
        .iter()
        .map(|a| (a.variable, a.value.clone()))
        .collect();
    assert_eq!(
        starts,
        vec![
            (idx(&c, "z_c"), StartValue::Float(vec![0.0])),
            (idx(&c, "body.x[1]"), StartValue::Float(vec![0.5])),
        ]
    );

    let wh = &r.subsystems[1];
    assert_eq!(wh.step_multiple, 2);
    let params: Vec<(&str, StartValue)> = wh
        .parameters
        .iter()
        .map(|a| (a.name.as_str(), a.value.clone()))
        .collect();
    assert_eq!(
        params,
        vec![
            ("k_c", StartValue::Float(vec![15000.0])),
            ("d_c", StartValue::Float(vec![1000.0])),
            ("n_sub", StartValue::Int(vec![10])),
            ("nonlinear", StartValue::Bool(vec![true])),
            ("label", StartValue::String(vec!["front".into()])),
        ]
    );
    assert_eq!(wh.start_values.len(), 2);

    let conns: Vec<(VariableRef, VariableRef, f64, f64, bool)> = r
        .connections
        .iter()
        .map(|c| (c.from, c.to, c.gain, c.offset, c.signal))
        .collect();
    let v = |s: usize, i: usize| VariableRef {
        subsystem: s,
        variable: i,
        element: 0,
    };
    assert_eq!(
        conns,
        vec![
            (v(1, idx(&w, "F_c")), v(0, idx(&c, "F")), -1.0, 0.0, false),
            (v(0, idx(&c, "v_c")), v(1, idx(&w, "v_c")), 1.0, 0.0, false),
            (v(0, idx(&c, "z_c")), v(1, idx(&w, "x_c")), 1.0, 0.25, true),
        ]
    );
    assert_eq!(
        r.connection_to(v(0, idx(&c, "F"))).map(|c| c.gain),
        Some(-1.0)
    );

    assert_eq!(r.bonds.len(), 1);
    let b = &r.bonds[0];
    assert_eq!(b.name, "suspension");
    assert_eq!(
        b.ports,
        [
            BondPort {
                subsystem: 0,
                input: idx(&c, "F"),
                output: idx(&c, "v_c")
            },
            BondPort {
                subsystem: 1,
                input: idx(&w, "v_c"),
                output: idx(&w, "F_c")
            },
        ]
    );
    assert_eq!(b.tolerance, 3.1e-5);
    assert_eq!(b.energy_scale, 750.0);
    assert_eq!(b.power_factor, Some(1.0));
    assert!(!b.intended);

    let o = &r.outputs;
    let dir = PathBuf::from("/scenarios/out/b1");
    assert_eq!(o.dir, dir);
    assert_eq!(o.trace, Some(dir.join("trace.csv")));
    assert_eq!(o.energy_log, Some(dir.join("energy.csv")));
    assert_eq!(o.step_log, None);
    assert_eq!(o.summary, Some(dir.join("summary.json")));
    assert_eq!(o.sampling, Sampling::Decimation(10));
    // "chassis.*" in FMU order (outputs, inputs, locals; not parameters,
    // constants or time), then wheel.F_c; chassis.v_c is already there.
    let names: Vec<String> = o
        .variables
        .iter()
        .map(|r| {
            let md = if r.subsystem == 0 { &c } else { &w };
            format!(
                "{}.{}",
                ["chassis", "wheel"][r.subsystem],
                md.variables[r.variable].name
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            "chassis.F",
            "chassis.v_c",
            "chassis.z_c",
            "chassis.a_c",
            "chassis.body.x[1]",
            "chassis.locked",
            "chassis.E_kin",
            "wheel.F_c",
        ]
    );

    // Every chassis input is connected or has a start value, but wheel.z_road
    // has a start value too: no warnings but the chassis' 'locked' input,
    // and that the start value of the connected wheel.x_c is replaced by
    // its connection.
    let warnings: Vec<&str> = r.warnings.iter().map(|w| w.message.as_str()).collect();
    assert_eq!(
        warnings,
        vec![
            "the start value of 'wheel.x_c' has no effect: the connection on line 53 sets it from the start time on",
            "input of subsystem 'chassis' not connected (keeps its start value): locked"
        ]
    );
}

#[test]
fn spans_locate_items_for_later_errors() {
    let r = resolve(B1).unwrap();
    let e = r.error_at(r.connections[1].span, "the FMU refused this input");
    let (line, _) = pos(B1, "[[connections]]\nfrom = \"chassis.v_c\"");
    assert_eq!(e.line, Some(line));
    assert_eq!(e.message, "the FMU refused this input");
    let e = r.error_at(r.subsystems[1].fmu_span, "cannot open");
    assert_at(&e, B1, "\"../fmus/dist/fmi2/QuarterCarWheel.fmu\"");
    let ValueOrigin::File(span) = r.subsystems[1].parameters[0].origin else {
        panic!("origin")
    };
    assert_at(&r.error_at(span, "x"), B1, "15000");
    let w = r.warning_at(r.bonds[0].span, "bond looks odd");
    assert!(!w.is_error());
    assert!(w.to_string().contains("warning: bond looks odd"));
}

#[test]
fn defaults() {
    let text = r#"
[[subsystems]]
name = "chassis"
fmu = "c.fmu"
"#;
    let r = resolve(text).unwrap();
    // Times and step from the FMU's DefaultExperiment.
    assert_eq!((r.start, r.stop), (0.0, 3.0));
    let m = &r.master;
    assert_eq!(m.kind, MasterKind::FixedStep);
    assert_eq!(m.step, 0.001);
    assert_eq!(m.scheme, Scheme::Jacobi);
    assert_eq!(m.order, None);
    assert_eq!(m.extrapolation, 0);
    assert_eq!(m.threads, 0); // all cores, the pool used where it pays off
    assert_eq!(m.indicators, vec![Indicator::Energy]);
    assert!(m.discover_bonds);
    assert_eq!(m.nonfinite, NonFinite::Error);
    assert_eq!(m.tolerance, 1e-4);
    assert_eq!(m.energy_scale, 1.0);
    assert_eq!(m.rho, 1e-4);
    assert_eq!(m.normalisation, Normalisation::Paper);
    assert_eq!((m.atol, m.rtol), (1e-6, 1e-4));
    assert_eq!(m.aggregate, Aggregate::Rms);
    assert_eq!(m.max_rejections, 10);
    assert_eq!(m.estimate, RichardsonEstimate::Richardson);
    assert_eq!((m.eps_abs, m.eps_rel, m.max_iterations), (1e-3, 1e-3, 10));
    assert_eq!(m.controller, Controller::default());
    assert_eq!(m.controller.gains(2), (0.15, 0.2));

    let sub = &r.subsystems[0];
    assert_eq!(sub.fmu, PathBuf::from("/scenarios/c.fmu"));
    assert_eq!(sub.step_multiple, 1);
    assert!(sub.parameters.is_empty() && sub.start_values.is_empty());
    assert!(r.connections.is_empty() && r.bonds.is_empty());

    let o = &r.outputs;
    let dir = PathBuf::from("/scenarios/out/b1");
    assert_eq!(o.dir, dir);
    assert_eq!(o.trace, Some(dir.join("trace.csv")));
    assert_eq!(o.energy_log, Some(dir.join("energy.csv")));
    assert_eq!(o.step_log, Some(dir.join("steps.csv")));
    assert_eq!(o.summary, Some(dir.join("summary.json")));
    assert_eq!(o.sampling, Sampling::EveryStep);
    // Default trace: every output of every subsystem, in FMU order.
    let c = chassis();
    let outputs: Vec<usize> = c.outputs().collect();
    assert_eq!(
        o.variables,
        outputs
            .into_iter()
            .map(|v| VariableRef {
                subsystem: 0,
                variable: v,
                element: 0,
            })
            .collect::<Vec<_>>()
    );
}

#[test]
fn adaptive_master_defaults_step_to_dt_min() {
    let text = format!(
        "{}\n[[bonds]]\nports = [ {{ input = \"chassis.F\", output = \"chassis.v_c\" }}, {{ input = \"wheel.v_c\", output = \"wheel.F_c\" }} ]\n",
        BASE.replace("step = 1e-3", "kind = \"predictor-corrector\"\nrho = 0.0")
    );
    let r = resolve(&text).unwrap();
    assert_eq!(r.master.kind, MasterKind::PredictorCorrector);
    assert_eq!(r.master.step, 1e-4);
    assert_eq!(r.master.rho, 0.0);
    // Default bond name, tolerance and energy scale.
    assert_eq!(r.bonds[0].name, "chassis.F~wheel.v_c");
    assert_eq!(r.bonds[0].tolerance, 1e-4);
    assert_eq!(r.bonds[0].energy_scale, 1.0);
}

#[test]
fn master_kinds_and_their_keys() {
    for (name, kind) in MasterKind::NAMES.iter().zip(MasterKind::ALL) {
        let text = BASE.replace("step = 1e-3", &format!("kind = \"{name}\"\nstep = 1e-3"));
        let r = resolve(&text).unwrap();
        assert_eq!(r.master.kind, kind);
        assert_eq!(kind.name(), *name);
        assert_eq!(kind.to_string(), *name);
    }
    let text = BASE.replace(
        "step = 1e-3",
        "kind = \"richardson\"\nstep = 1e-3\nmax_rejections = 3\nestimate = \"modified\"",
    );
    let r = resolve(&text).unwrap();
    assert_eq!(r.master.max_rejections, 3);
    assert_eq!(r.master.estimate, RichardsonEstimate::Modified);
    let text = BASE.replace(
        "step = 1e-3",
        "kind = \"iterative-affine\"\nstep = 1e-3\neps_abs = 0\neps_rel = 1e-6\nmax_iterations = 20",
    );
    let r = resolve(&text).unwrap();
    assert_eq!(
        (r.master.eps_abs, r.master.eps_rel, r.master.max_iterations),
        (0.0, 1e-6, 20)
    );
    assert!(r.warnings.iter().all(|w| !w.message.contains("no effect")));
}

#[test]
fn globs() {
    let text = format!(
        "{BASE}\n[outputs]\nvariables = [\"wheel.F_*\", \"chassis.?_c\", \"*.v_c\", \"chassis.body.x[1]\", \"wheel.k_c\", \"wheel.F_c\"]\ninterval = 0.01\n"
    );
    let r = resolve(&text).unwrap();
    let (c, w) = (chassis(), wheel());
    let names: Vec<String> = r
        .outputs
        .variables
        .iter()
        .map(|v| {
            let md = if v.subsystem == 0 { &c } else { &w };
            format!("{}.{}", v.subsystem, md.variables[v.variable].name)
        })
        .collect();
    assert_eq!(
        names,
        vec![
            // wheel.F_*: F_c, F_c_kN
            "1.F_c",
            "1.F_c_kN",
            // chassis.?_c: v_c, z_c, a_c (m_c is a parameter: not matched by patterns)
            "0.v_c",
            "0.z_c",
            "0.a_c",
            // *.v_c: chassis.v_c (already there), wheel.v_c
            "1.v_c",
            // exact name with dots and brackets
            "0.body.x[1]",
            // a parameter named exactly
            "1.k_c",
        ]
    );
    assert_eq!(r.outputs.sampling, Sampling::Interval(0.01));
}

#[test]
fn parameters_with_dotted_keys_and_subtables() {
    let text = BASE.replace(
        "fmu = \"fmus/chassis.fmu\"",
        "fmu = \"fmus/chassis.fmu\"\nstart = { body.\"x[1]\" = 2.0 }",
    );
    let r = resolve(&text).unwrap();
    assert_eq!(r.subsystems[0].start_values[0].name, "body.x[1]");

    let text = format!(
        "{}\n[subsystems.parameters]\nk_c = 2e4\n",
        BASE.replace("\n[[connections]]", "\n[[connectionz]]")
            .split("\n[[connectionz]]")
            .next()
            .unwrap()
    );
    let r = resolve(&text).unwrap();
    assert_eq!(r.subsystems[1].parameters[0].name, "k_c");
    assert_eq!(
        r.subsystems[1].parameters[0].value,
        StartValue::Float(vec![2e4])
    );
}

#[test]
fn fmi3_model() {
    let text = r#"[simulation]
stop = 1.0

[master]
step = 0.1

[[subsystems]]
name = "m3"
fmu = "mass3.fmu"
parameters = { m = 3, mode = -2, gains = [4, 5.5, 6] }
start = { F = 1.5 }

[[subsystems]]
name = "chassis"
fmu = "chassis.fmu"

[[connections]]
from = "m3.v"
to = "chassis.F"
unit_mismatch = true

[[connections]]
from = "chassis.v_c"
to = "m3.F"
unit_mismatch = true

[outputs]
variables = ["m3.*"]
"#;
    let r = resolve(text).unwrap();
    let m = mass3();
    let params: Vec<(&str, StartValue)> = r.subsystems[0]
        .parameters
        .iter()
        .map(|a| (a.name.as_str(), a.value.clone()))
        .collect();
    assert_eq!(
        params,
        vec![
            ("m", StartValue::Float(vec![3.0])),
            ("mode", StartValue::Int(vec![-2])),
            ("gains", StartValue::Float(vec![4.0, 5.5, 6.0])),
        ]
    );
    assert_eq!(
        r.subsystems[0].start_values[0].value,
        StartValue::Float(vec![1.5])
    );
    // Float32 output to Float64 input.
    assert_eq!(
        r.connections[0].from.variable,
        m.variable_by_name("v").unwrap().0
    );
    let traced: Vec<&str> = r
        .outputs
        .variables
        .iter()
        .map(|v| m.variables[v.variable].name.as_str())
        .collect();
    assert_eq!(traced, vec!["F", "v", "count"]);
    // The units do agree ([N] -> [N] would not need the flag; these do not).
    assert_eq!(r.stop, 1.0);
}

#[test]
fn unconnected_inputs_are_warned_about_once_per_subsystem() {
    let text = "[simulation]\nstop = 1.0\n[[subsystems]]\nname = \"wheel\"\nfmu = \"w.fmu\"\n";
    let r = resolve(text).unwrap();
    let w: Vec<&str> = r.warnings.iter().map(|w| w.message.as_str()).collect();
    assert_eq!(
        w,
        vec![
            "inputs of subsystem 'wheel' not connected (keep their start values): v_c, x_c, z_road"
        ]
    );
    assert_eq!(r.warnings[0].line, Some(3));
}

#[test]
fn intended_unit_mismatch_that_is_none_is_warned_about() {
    let text = BASE.replace("gain = -1.0", "gain = -1.0\nunit_mismatch = true");
    let r = resolve(&text).unwrap();
    assert!(r.warnings.iter().any(|w| w.message
        == "'unit_mismatch = true', but 'wheel.F_c' [N] and 'chassis.F' [N] have the same unit"));
}

#[test]
fn units_equal_by_dimension_and_factor() {
    // "N.m/s" style spellings are compared by dimension: m/s and m.s-1 agree.
    let a = fmi2(
        "A",
        r#"<ScalarVariable name="y" valueReference="0" causality="output"><Real unit="m.s-1"/></ScalarVariable>"#,
        "",
    );
    let b = fmi2(
        "B",
        r#"<ScalarVariable name="u" valueReference="0" causality="input"><Real start="0" unit="m/s"/></ScalarVariable>"#,
        "",
    );
    let text = "[simulation]\nstop = 1.0\n[master]\nstep = 0.1\n[[subsystems]]\nname = \"a\"\nfmu = \"a.fmu\"\n[[subsystems]]\nname = \"b\"\nfmu = \"b.fmu\"\n[[connections]]\nfrom = \"a.y\"\nto = \"b.u\"\n";
    let s = parse(text).unwrap();
    let r = s.resolve(&[("b", &b), ("a", &a)]).unwrap();
    assert_eq!(r.connections.len(), 1);
}

#[test]
fn resolved_scenario_serialises() {
    let r = resolve(B1).unwrap();
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["master"]["kind"], "Ecco");
    assert_eq!(json["stop"], 2.0);
}
