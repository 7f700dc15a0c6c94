//! Input files: a CSV of time and values feeding inputs (`--input-file`,
//! `[[inputs]]`). Floats are interpolated linearly, with the slope as
//! input derivative to FMUs that interpolate inputs (exact piecewise-linear
//! inputs over each step); integers and Booleans are held; values outside
//! the file's time range are held with a warning; a malformed file is an
//! error at its line and column.
//!
//! The Integrator FMU (x' = u, integrated exactly for the polynomial input
//! it is given) shows what reaches an FMU: the exact integral of the file's
//! signal when it interpolates, the left Riemann sum of the values at the
//! step starts when it cannot (zero-order hold).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Output;

use cosim_tests::{Table, cosim, fmi2, fmi3, fmus};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts exit status `code`, no panic, and every key word in stderr.
#[track_caller]
fn status(out: &Output, code: i32, keys: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for k in keys {
        assert!(err.contains(k), "missing {k:?} in:\n{err}");
    }
    err
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn variant(name: &str) -> PathBuf {
    fmus().join("variants").join(format!("{name}.fmu"))
}

/// `cosim run <fmu or scenario> --no-progress -o <dir>/out <args>`: the
/// output, and the trace when the run succeeded.
fn run(target: &Path, dir: &Path, args: &[&str]) -> (Output, Option<Table>) {
    let out_dir = dir.join("out");
    let _ = std::fs::remove_dir_all(&out_dir);
    let mut all = vec!["run", s(target), "--no-progress", "-o", s(&out_dir)];
    all.extend_from_slice(args);
    let out = cosim(&all);
    let trace = Table::read(&out_dir.join("trace.csv")).ok();
    (out, trace)
}

#[track_caller]
fn assert_close(what: &str, t: f64, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-12 * (1.0 + want.abs()),
        "{what} at t = {t}: {got}, expected {want}"
    );
}

/// Integral from 0 to `t` of the piecewise-linear signal through `rows`
/// (held before the first and after the last).
fn integral(rows: &[(f64, f64)], t: f64) -> f64 {
    let mut sum = 0.0;
    let (t0, u0) = rows[0];
    sum += u0 * t0.min(t).max(0.0);
    for w in rows.windows(2) {
        let ((a, ua), (b, ub)) = (w[0], w[1]);
        if t <= a || b == a {
            continue;
        }
        let e = t.min(b);
        let ue = ua + (ub - ua) * (e - a) / (b - a);
        sum += (ua + ue) / 2.0 * (e - a);
    }
    let (tn, un) = *rows.last().unwrap();
    if t > tn {
        sum += un * (t - tn);
    }
    sum
}

/// The signal through `rows` at `t` (the later row at a jump).
fn signal(rows: &[(f64, f64)], t: f64) -> f64 {
    let k = rows.partition_point(|r| r.0 <= t);
    if k == 0 {
        return rows[0].1;
    }
    if k == rows.len() {
        return rows[k - 1].1;
    }
    let ((a, ua), (b, ub)) = (rows[k - 1], rows[k]);
    ua + (ub - ua) * (t - a) / (b - a)
}

fn csv(rows: &[(f64, f64)]) -> String {
    let mut text = String::from("time,u\n");
    for (t, u) in rows {
        text.push_str(&format!("{t},{u}\n"));
    }
    text
}

/// A ramp, a kink, a jump (two rows at t = 3) and a plateau; every row on
/// the 0.01 s grid.
const ROWS: &[(f64, f64)] = &[
    (0.0, 0.0),
    (1.0, 2.0),
    (2.5, -1.0),
    (3.0, -1.0),
    (3.0, 4.0),
    (4.0, 4.0),
];

#[test]
fn an_interpolating_fmu_integrates_the_files_signal_exactly_fmi2_and_fmi3() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "u.csv", &csv(ROWS));
    for fmu in [fmi2("Integrator"), fmi3("Integrator")] {
        let (out, trace) = run(
            &fmu,
            dir.path(),
            &[
                "--stop",
                "5",
                "--input-file",
                s(&input),
                "--output-variables",
                "x",
                "u",
            ],
        );
        let err = status(&out, 0, &["after t = 4 s the last row's values are held"]);
        assert!(!err.contains("before t ="), "{err}");
        let trace = trace.unwrap();
        let x = trace.column("Integrator.x").unwrap();
        let u = trace.column("Integrator.u").unwrap();
        assert_eq!(trace.time().len(), 501);
        for (k, &t) in trace.time().iter().enumerate() {
            assert_close("x", t, x[k], integral(ROWS, t));
            // A traced file input shows the file's value at the row's time.
            assert_close("u", t, u[k], signal(ROWS, t));
        }
    }
}

#[test]
fn a_fmu_that_cannot_interpolate_holds_the_value_at_each_step_start() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "u.csv", &csv(ROWS));
    let h = 0.01;
    for fmu in [
        variant("Integrator-nointerp"),
        fmi3("Integrator-fmi3-no-intermediate-update"),
    ] {
        let (out, trace) = run(
            &fmu,
            dir.path(),
            &["--stop", "4", "--input-file", s(&input)],
        );
        status(&out, 0, &[]);
        let trace = trace.unwrap();
        let x = trace.column(&format!("{}.x", fmu.file_stem().unwrap().to_str().unwrap()));
        let x = x.unwrap();
        // x(t_n) = sum over k < n of u(t_k) h (left Riemann sum).
        let mut sum = 0.0;
        for (k, &t) in trace.time().iter().enumerate() {
            assert_close("x", t, x[k], sum);
            sum += signal(ROWS, t) * h;
        }
    }
}

#[test]
fn a_ramp_gives_the_known_sums_for_both_kinds_of_fmu() {
    // u = t: x = t^2 / 2 when interpolated, h^2 n (n - 1) / 2 when held.
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "ramp.csv", "time,u\n0,0\n10,10\n");
    let (out, trace) = run(
        &fmi2("Integrator"),
        dir.path(),
        &["--input-file", s(&input)],
    );
    status(&out, 0, &[]);
    let trace = trace.unwrap();
    let x = trace.column("Integrator.x").unwrap();
    assert_close("x", 10.0, x[1000], 50.0);
    assert_close("x", 2.5, x[250], 3.125);
    let (out, trace) = run(
        &variant("Integrator-nointerp"),
        dir.path(),
        &["--input-file", s(&input)],
    );
    status(&out, 0, &[]);
    let x = trace
        .unwrap()
        .column("Integrator-nointerp.x")
        .unwrap()
        .to_vec();
    assert_close("x", 10.0, x[1000], 1e-4 * 1000.0 * 999.0 / 2.0);
}

#[test]
fn file_inputs_are_exact_whatever_the_master_and_its_extrapolation() {
    // The file feeds one Integrator; a Gain driven by the Integrator's x is
    // coupled with quadratic extrapolation and Gauss-Seidel: that
    // extrapolation applies to the coupled input, never to the file's.
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "u.csv", &csv(ROWS));
    let scenario = write(
        dir.path(),
        "s.toml",
        &format!(
            r#"[simulation]
stop = 4.0

[master]
step = 0.05
scheme = "gauss-seidel"
extrapolation = 2

[[subsystems]]
name = "integ"
fmu = "{}"

[[subsystems]]
name = "gain"
fmu = "{}"

[[connections]]
from = "integ.x"
to = "gain.u"

[[inputs]]
file = "u.csv"
columns = {{ "integ.u" = "u" }}
"#,
            s(&fmi2("Integrator")),
            s(&fmi2("Gain"))
        ),
    );
    let (out, trace) = run(&scenario, dir.path(), &[]);
    status(&out, 0, &[]);
    let trace = trace.unwrap();
    let x = trace.column("integ.x").unwrap();
    for (k, &t) in trace.time().iter().enumerate() {
        assert_close("x", t, x[k], integral(ROWS, t));
    }
}

#[test]
fn discrete_inputs_are_held_fmi2_boolean_and_integer() {
    // ThermostatRoom: T' = (T_amb + q - T) / tau, q = heater_on ? level *
    // P_unit : 0, exact for inputs held over the step. It refuses input
    // derivatives of its discrete inputs (the kit returns Error).
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "heater.csv",
        "time,heater_on,level\n0,false,1\n10.5,true,2\n20,1,1\n30,0,1\n",
    );
    let (out, trace) = run(
        &fmi2("ThermostatRoom"),
        dir.path(),
        &[
            "--stop",
            "40",
            "--input-file",
            s(&input),
            "--output-variables",
            "*",
        ],
    );
    status(&out, 0, &[]);
    let trace = trace.unwrap();
    let on = trace.column("ThermostatRoom.heater_on").unwrap();
    let level = trace.column("ThermostatRoom.level").unwrap();
    let temperature = trace.column("ThermostatRoom.T").unwrap();
    let held = |t: f64| -> (f64, f64) {
        match t {
            t if t < 10.5 => (0.0, 1.0),
            t if t < 20.0 => (1.0, 2.0),
            t if t < 30.0 => (1.0, 1.0),
            _ => (0.0, 1.0),
        }
    };
    let (t_amb, tau, p_unit) = (10.0, 60.0, 12.0);
    let mut expected = 15.0;
    for (k, &t) in trace.time().iter().enumerate() {
        assert_eq!((on[k], level[k]), held(t), "t = {t}");
        assert_close("T", t, temperature[k], expected);
        let (q_on, q_level) = held(t);
        let te = t_amb + q_on * q_level * p_unit;
        expected = te + (expected - te) * (-1.0_f64 / tau).exp();
    }
}

#[test]
fn discrete_inputs_of_every_fmi3_integer_type_are_held() {
    // TypeMirror: y = u + 1 from the inputs held over the step (no
    // feed-through: the row at t + h shows the input set at t).
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "types.csv",
        "time,u_i8,u_u16,u_i64,u_f32\n0,-3,60000,-5000000000,0.5\n2.5,7,1,42,1.5\n",
    );
    let (out, trace) = run(
        &fmi3("TypeMirror"),
        dir.path(),
        &[
            "--stop",
            "5",
            "--input-file",
            s(&input),
            "--output-variables",
            "y_i8",
            "y_u16",
            "y_i64",
            "y_f32",
        ],
    );
    status(&out, 0, &[]);
    let trace = trace.unwrap();
    assert_eq!(trace.time(), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let col = |n: &str| trace.column(&format!("TypeMirror.{n}")).unwrap().to_vec();
    // Inputs at t = 0, 1, 2 are the first row's; at 3 and 4 the second's
    // (2.5 lies inside the step from 2 to 3: held until 3).
    assert_eq!(col("y_i8")[1..], [-2.0, -2.0, -2.0, 8.0, 8.0]);
    assert_eq!(col("y_u16")[1..], [60001.0, 60001.0, 60001.0, 2.0, 2.0]);
    assert_eq!(
        col("y_i64")[1..],
        [-4999999999.0, -4999999999.0, -4999999999.0, 43.0, 43.0]
    );
    // A float input of an FMU that cannot interpolate: the value at the
    // step start, the file interpolated (0.5 + 0.4 t until t = 2.5).
    let y_f32 = col("y_f32");
    for (k, want) in [(1, 1.5), (2, 1.9), (3, 2.3), (4, 2.5), (5, 2.5)] {
        assert!((y_f32[k] - want).abs() < 1e-6, "{k}: {}", y_f32[k]);
    }
}

#[test]
fn malformed_files_are_errors_at_their_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = fmi2("Integrator");
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "time,u\n0,0\n1,abc\n",
            "bad.csv:3:3",
            &["'abc' is not a number in column 'u'"],
        ),
        (
            "time,u\n0,0\n1,1,1\n",
            "bad.csv:3:5",
            &["3 fields, more than the header's 2"],
        ),
        (
            "time,u\n0,0\n1\n",
            "bad.csv:3:2",
            &["1 fields, fewer than the header's 2"],
        ),
        (
            "time,u\n0,0\n2,1\n1,1\n",
            "bad.csv:4:1",
            &["before the time 2 of line 3", "must not decrease"],
        ),
        (
            "time,v\n0,0\n",
            "bad.csv:1:6",
            &["column 'v' names no input", "did you mean 'u'?"],
        ),
        (
            "time,x\n0,0\n",
            "bad.csv:1:6",
            &["'Integrator.x' is an output, not an input"],
        ),
        (
            "t,u\n0,0\n",
            "bad.csv:1:1",
            &["the first column of an input file is the time"],
        ),
        ("time,u\n", "bad.csv:1:1", &["no rows"]),
        (
            "time,u\n0,nan\n",
            "bad.csv:2:3",
            &["'nan' is not a finite number"],
        ),
        (
            "time,u\n0,true\n",
            "bad.csv:2:3",
            &["feeds the Float64 input 'u'", "found a Boolean"],
        ),
    ];
    for (text, at, keys) in cases {
        let input = write(dir.path(), "bad.csv", text);
        let (out, _) = run(&fmu, dir.path(), &["--input-file", s(&input)]);
        let mut all = keys.to_vec();
        all.push(at);
        status(&out, 2, &all);
    }
    // Discrete inputs: whole numbers, Booleans 0 / 1.
    let input = write(
        dir.path(),
        "bad.csv",
        "time,level,heater_on\n0,1,0\n1,1.5,1\n",
    );
    let (out, _) = run(
        &fmi2("ThermostatRoom"),
        dir.path(),
        &["--input-file", s(&input)],
    );
    status(
        &out,
        2,
        &[
            "bad.csv:3:3",
            "Int32 input 'level': expected a whole number, found 1.5",
        ],
    );
    let input = write(dir.path(), "bad.csv", "time,heater_on\n0,2\n");
    let (out, _) = run(
        &fmi2("ThermostatRoom"),
        dir.path(),
        &["--input-file", s(&input)],
    );
    status(
        &out,
        2,
        &[
            "bad.csv:2:3",
            "Boolean input 'heater_on': expected 0, 1, true or false",
        ],
    );
    let missing = dir.path().join("missing.csv");
    let (out, _) = run(&fmu, dir.path(), &["--input-file", s(&missing)]);
    status(&out, 2, &["'--input-file", "the input file does not exist"]);
}

/// A scenario of an Integrator fed by a Gain, with `inputs` appended.
fn coupled_scenario(dir: &Path, inputs: &str) -> PathBuf {
    write(
        dir,
        "s.toml",
        &format!(
            r#"[simulation]
stop = 1.0

[master]
step = 0.1

[[subsystems]]
name = "gain"
fmu = "{}"

[[subsystems]]
name = "integ"
fmu = "{}"

[[connections]]
from = "gain.y"
to = "integ.u"
{inputs}"#,
            s(&fmi2("Gain")),
            s(&fmi2("Integrator"))
        ),
    )
}

#[test]
fn a_file_and_a_connection_feeding_one_input_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "u.csv", "time,u\n0,1\n");
    let scenario = coupled_scenario(
        dir.path(),
        "\n[[inputs]]\nfile = \"u.csv\"\ncolumns = { \"integ.u\" = \"u\" }\n",
    );
    let (out, _) = run(&scenario, dir.path(), &[]);
    status(
        &out,
        2,
        &[
            "s.toml:21:20",
            "input 'integ.u' is fed both by the connection on line 15 and by column 'u'",
        ],
    );
    // The same from the command line, the header naming the inputs.
    let scenario = coupled_scenario(dir.path(), "");
    let input = write(dir.path(), "both.csv", "time,gain.u,integ.u\n0,1,1\n");
    let (out, _) = run(&scenario, dir.path(), &["--input-file", s(&input)]);
    status(
        &out,
        2,
        &["both.csv:1:13", "is fed both by the connection on line 15"],
    );
}

#[test]
fn scenario_inputs_by_header_by_columns_and_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "named.csv", "time,gain.u [m]\n0,0\n1,1\n");
    write(dir.path(), "any.csv", "time,drive\n0,0\n1,1\n");
    // Header names '<subsystem>.<input>' (a unit allowed); with columns,
    // any name; the gain (k = 1) passes u on to the integrator.
    for inputs in [
        "\n[[inputs]]\nfile = \"named.csv\"\n",
        "\n[[inputs]]\nfile = \"any.csv\"\ncolumns = { gain.u = \"drive\" }\n",
    ] {
        let scenario = coupled_scenario(dir.path(), inputs);
        let (out, trace) = run(&scenario, dir.path(), &["--output-variables", "gain.y"]);
        status(&out, 0, &[]);
        let trace = trace.unwrap();
        for (t, y) in trace.time().iter().zip(trace.column("gain.y").unwrap()) {
            assert_close("y", *t, *y, *t);
        }
    }
    let scenario = coupled_scenario(dir.path(), "");
    let (out, trace) = run(
        &scenario,
        dir.path(),
        &["--input-file", s(&dir.path().join("named.csv"))],
    );
    let err = status(&out, 0, &[]);
    assert!(!err.contains("not connected"), "{err}");
    assert_eq!(
        *trace.unwrap().column("gain.y").unwrap().last().unwrap(),
        1.0
    );
    // Errors in [[inputs]] are at their place in the scenario.
    let scenario = coupled_scenario(
        dir.path(),
        "\n[[inputs]]\nfile = \"any.csv\"\ncolumns = { \"gain.u\" = \"drve\" }\n",
    );
    let (out, _) = run(&scenario, dir.path(), &[]);
    status(
        &out,
        2,
        &[
            "s.toml:21:24",
            "has no column 'drve'",
            "did you mean 'drive'?",
        ],
    );
    let scenario = coupled_scenario(dir.path(), "\n[[inputs]]\nfile = \"nowhere.csv\"\n");
    let (out, _) = run(&scenario, dir.path(), &[]);
    status(&out, 2, &["s.toml:20:8", "the input file does not exist"]);
    let scenario = coupled_scenario(
        dir.path(),
        "\n[[inputs]]\nfile = \"any.csv\"\ncolumns = { \"gain.k\" = \"drive\" }\n",
    );
    let (out, _) = run(&scenario, dir.path(), &[]);
    status(
        &out,
        2,
        &["s.toml:21:19", "'gain.k' is a parameter, not an input"],
    );
}

#[test]
fn values_outside_the_files_range_are_held_with_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "late.csv", "time,u\n1,3\n2,1\n");
    let (out, trace) = run(
        &fmi2("Integrator"),
        dir.path(),
        &["--stop", "3", "--input-file", s(&input)],
    );
    let err = status(
        &out,
        0,
        &[
            "late.csv covers t = 1 to 2 s, the run t = 0 to 3 s",
            "before t = 1 s the first row's values",
            "after t = 2 s the last row's values are held (column u)",
        ],
    );
    assert_eq!(err.matches("covers t =").count(), 1, "{err}");
    let rows = [(1.0, 3.0), (2.0, 1.0)];
    let trace = trace.unwrap();
    let x = trace.column("Integrator.x").unwrap();
    for (k, &t) in trace.time().iter().enumerate() {
        assert_close("x", t, x[k], integral(&rows, t));
    }
    // A start value the file replaces is said to have no effect.
    let (out, _) = run(
        &fmi2("Integrator"),
        dir.path(),
        &["--stop", "1", "--set", "u=5", "--input-file", s(&input)],
    );
    status(
        &out,
        0,
        &["the start value of 'Integrator.u' has no effect"],
    );
}

#[test]
fn in_a_host_process_and_with_a_master_that_rolls_back_the_file_is_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "u.csv", &csv(ROWS));
    let (out, trace) = run(
        &fmi2("Integrator"),
        dir.path(),
        &[
            "--stop",
            "4",
            "--input-file",
            s(&input),
            "--isolation",
            "process",
        ],
    );
    status(&out, 0, &[]);
    let trace = trace.unwrap();
    let x = trace.column("Integrator.x").unwrap();
    for (k, &t) in trace.time().iter().enumerate() {
        assert_close("x", t, x[k], integral(ROWS, t));
    }
    // Richardson: double steps, states restored, steps repeated.
    let scenario = write(
        dir.path(),
        "r.toml",
        &format!(
            r#"[simulation]
stop = 4.0

[master]
kind = "richardson"
step = 0.01

[[subsystems]]
name = "integ"
fmu = "{}"

[[subsystems]]
name = "gain"
fmu = "{}"

[[connections]]
from = "integ.x"
to = "gain.u"

[[inputs]]
file = "u.csv"
"#,
            s(&fmi2("Integrator")),
            s(&fmi2("Gain"))
        ),
    );
    // The header says 'u': not an input name here (two subsystems).
    let (out, _) = run(&scenario, dir.path(), &[]);
    status(
        &out,
        2,
        &["u.csv:1:6", "a column's name is '<subsystem>.<input>'"],
    );
    write(
        dir.path(),
        "u.csv",
        &csv(ROWS).replace("time,u", "time,integ.u"),
    );
    let (out, trace) = run(&scenario, dir.path(), &[]);
    status(&out, 0, &[]);
    let trace = trace.unwrap();
    assert!(trace.time().len() > 10);
    let x = trace.column("integ.x").unwrap();
    for (k, &t) in trace.time().iter().enumerate() {
        // Exact: its steps (0.02 s) end on the file's rows.
        assert_close("x", t, x[k], integral(ROWS, t));
    }
}

#[test]
fn nested_systems_take_file_inputs_inside_and_from_above() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "u.csv", &csv(ROWS));
    let nest = |inner_inputs: &str, outer_inputs: &str| {
        write(
            dir.path(),
            "n.toml",
            &format!(
                r#"[simulation]
stop = 4.0

[master]
step = 0.1

[[subsystems]]
name = "nest"
exposes = ["integ.u", "integ.x"]

[subsystems.system.master]
step = 0.05

[[subsystems.system.subsystems]]
name = "integ"
fmu = "{}"
{inner_inputs}
{outer_inputs}"#,
                s(&fmi2("Integrator"))
            ),
        )
    };
    // From above: the nest's exposed input, held over each outer step by
    // the nest (whose inner master sees it as a coupled input).
    let scenario = nest(
        "",
        "[[inputs]]\nfile = \"u.csv\"\ncolumns = { \"nest.integ.u\" = \"u\" }\n",
    );
    let (out, trace) = run(
        &scenario,
        dir.path(),
        &["--output-variables", "nest.integ.x"],
    );
    status(&out, 0, &[]);
    let trace = trace.unwrap();
    let x = trace.column("nest.integ.x").unwrap();
    let mut sum = 0.0;
    for (k, &t) in trace.time().iter().enumerate() {
        assert_close("x", t, x[k], sum);
        sum += signal(ROWS, t) * 0.1;
    }
    // Inside: an exposed input cannot be fed there too.
    let scenario = nest(
        "\n[[subsystems.system.inputs]]\nfile = \"u.csv\"\ncolumns = { \"integ.u\" = \"u\" }\n",
        "",
    );
    let (out, _) = run(&scenario, dir.path(), &[]);
    status(
        &out,
        2,
        &["'integ.u' is fed by a connection or an input file inside nested system 'nest'"],
    );
}
