//! Every FMI 3 numeric type couples and traces: Float32, Int8, UInt8, Int16,
//! UInt16, UInt32, Int64, UInt64 (Float64, Int32, Boolean and enumerations
//! are covered elsewhere), on the kit's FMI 3 only `TypeMirror` FMU
//! (`y_T = u_T + 1` at the end of each step, saturating; `sum` of the
//! inputs; `x_f32' = u_f32`).
//!
//! A chain `a -> b` over every type: `b` must receive exactly what `a`
//! sends and answer exactly `+ 1`, for values up to 9e12 (exact in the f64
//! slots), in process and with both FMUs isolated, with start values of
//! every type set from the scenario. A Float64 output feeding a Float32
//! input is rounded to f32. A 64-bit value beyond 2^53 stops the run
//! naming the variable.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use cosim_tests::{Table, cosim, fmi3, run};

/// (input, output, start of the input) for each type.
const TYPES: [(&str, &str, f64); 8] = [
    ("u_f32", "y_f32", 0.5),
    ("u_i8", "y_i8", -3.0),
    ("u_u8", "y_u8", 200.0),
    ("u_i16", "y_i16", -300.0),
    ("u_u16", "y_u16", 60000.0),
    ("u_u32", "y_u32", 4e9),
    ("u_i64", "y_i64", -5e9),
    ("u_u64", "y_u64", 9e12),
];
const STEP: f64 = 0.1;
const STEPS: usize = 10;

/// `a -> b` over every type, plus `a.sum` (Float64) into `c.u_f32`.
fn chain(dir: &Path, name: &str, extra_per_subsystem: &str, a_params: &str) -> PathBuf {
    let fmu = fmi3("TypeMirror");
    let mut text = format!(
        "[simulation]\nstop = {}\n\n[master]\nstep = {STEP}\n\n",
        STEP * STEPS as f64
    );
    for (sub, params) in [("a", a_params), ("b", ""), ("c", "")] {
        text += &format!(
            "[[subsystems]]\nname = \"{sub}\"\nfmu = \"{}\"\n{extra_per_subsystem}{params}\n",
            fmu.display()
        );
    }
    for (u, y, _) in TYPES {
        text += &format!("[[connections]]\nfrom = \"a.{y}\"\nto = \"b.{u}\"\n\n");
    }
    text += "[[connections]]\nfrom = \"a.sum\"\nto = \"c.u_f32\"\n\n";
    text += "[outputs]\nvariables = [\"a.*\", \"b.*\", \"c.u_f32\", \"c.y_f32\"]\n";
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn col<'a>(t: &'a Table, name: &str) -> &'a [f64] {
    t.column(name)
        .unwrap_or_else(|| panic!("no column {name} in {:?}", t.names))
}

/// Every row of a chain run where `a`'s inputs are `starts`.
fn assert_chain(trace: &Table, starts: &[f64; 8], what: &str) {
    assert_eq!(trace.time().len(), STEPS + 1, "{what}");
    // a's outputs are its (unconnected) inputs + 1, saturating at the
    // type's maximum.
    const MAX: [f64; 8] = [
        f64::INFINITY,
        127.0,
        255.0,
        32767.0,
        65535.0,
        4294967295.0,
        f64::INFINITY,
        f64::INFINITY,
    ];
    let plus_one = |k: usize, x: f64| (x + 1.0).min(MAX[k]);
    let mut sent_sum = 0.0;
    for (k, &(u, y, _)) in TYPES.iter().enumerate() {
        let sent = if k == 0 {
            f64::from((starts[0] + 1.0) as f32)
        } else {
            plus_one(k, starts[k])
        };
        sent_sum += starts[k];
        for (row, &v) in col(trace, &format!("a.{y}")).iter().enumerate() {
            assert_eq!(v, sent, "{what}: a.{y} row {row}");
        }
        // b receives exactly that, from the first row on (initialization
        // exchanges it) ...
        for (row, &v) in col(trace, &format!("b.{u}")).iter().enumerate() {
            assert_eq!(v, sent, "{what}: b.{u} row {row}");
        }
        // ... and answers + 1 from the first row on as well (its outputs
        // follow its inputs during initialization).
        let answer = if k == 0 {
            f64::from((sent + 1.0) as f32)
        } else {
            plus_one(k, sent)
        };
        for (row, &v) in col(trace, &format!("b.{y}")).iter().enumerate() {
            assert_eq!(v, answer, "{what}: b.{y} row {row}");
        }
    }
    // b integrates the Float32 input it holds: x' = u_f32, in f32.
    let u = f64::from((starts[0] + 1.0) as f32);
    let mut x = 0.0f32;
    for (row, &v) in col(trace, "b.x_f32").iter().enumerate() {
        assert_eq!(v, f64::from(x), "{what}: b.x_f32 row {row}");
        x = (f64::from(x) + u * STEP) as f32;
    }
    // a.sum (Float64) into c.u_f32 (Float32): rounded to the nearest f32.
    let sum = col(trace, "a.sum")[0];
    assert_eq!(sum, sent_sum, "{what}: a.sum");
    let rounded = f64::from(sum as f32);
    assert_ne!(rounded, sum, "the test needs a sum that f32 cannot hold");
    for (row, &v) in col(trace, "c.u_f32").iter().enumerate() {
        assert_eq!(v, rounded, "{what}: c.u_f32 row {row}");
    }
}

#[test]
fn every_fmi3_numeric_type_crosses_a_connection_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let starts = TYPES.map(|(_, _, s)| s);
    let r = run(&chain(dir.path(), "defaults", "", ""), &[], None, None);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_chain(&r.trace(), &starts, "in process");
}

#[test]
fn start_values_of_every_type_reach_the_fmu_in_process_and_isolated() {
    // Starts given in the scenario for every type; u8 and i16 at their
    // maxima, so a's answers saturate there.
    let starts = [0.25, -128.0, 255.0, 32767.0, 1.0, 4294967294.0, -9e15, 8e15];
    let params = format!(
        "start = {{ u_f32 = {}, u_i8 = {}, u_u8 = {}, u_i16 = {}, u_u16 = {}, u_u32 = {}, u_i64 = {}, u_u64 = {} }}\n",
        starts[0],
        starts[1] as i64,
        starts[2] as i64,
        starts[3] as i64,
        starts[4] as i64,
        starts[5] as i64,
        starts[6] as i64,
        starts[7] as i64
    );
    let dir = tempfile::tempdir().unwrap();
    let inproc = chain(dir.path(), "inproc", "", &params);
    let r = run(&inproc, &[], None, None);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_chain(&r.trace(), &starts, "in process");

    let isolated = chain(dir.path(), "isolated", "isolation = \"process\"\n", &params);
    let out_dir = dir.path().join("out_isolated");
    let out = cosim(&[
        "run",
        isolated.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = Table::read(&out_dir.join("trace.csv")).unwrap();
    assert_chain(&trace, &starts, "isolated");
    assert_eq!(trace.columns, r.trace().columns, "isolated = in process");
}

#[test]
fn a_start_value_out_of_its_type_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = chain(dir.path(), "range", "", "start = { u_i8 = 300 }\n");
    let out = cosim(&["check", s.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("u_i8") && err.contains("300"), "{err}");
    // A Float32 beyond the range of an IEEE single would reach the FMU as
    // an infinity: refused, from the scenario and from --set alike.
    let s = chain(dir.path(), "f32", "", "start = { u_f32 = 1e39 }\n");
    for extra in [&[][..], &["--set", "a.u_f32=-1e39"][..]] {
        let mut args = vec!["check", s.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = cosim(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(
                "is out of the range of Float32 (-3.4028235e38 to 3.4028235e38) of 'u_f32'"
            ),
            "{extra:?}: {err}"
        );
    }
}

#[test]
fn a_64_bit_value_beyond_2_pow_53_stops_the_run_naming_the_variable() {
    // 2^60 is exact in f64, but the engine carries integers exactly only up
    // to 2^53: reading a.y_u64 = 2^60 must fail, not round silently.
    let dir = tempfile::tempdir().unwrap();
    let s = chain(
        dir.path(),
        "big",
        "",
        "start = { u_u64 = 1152921504606846976 }\n",
    );
    let out_dir = dir.path().join("out");
    let out = cosim(&[
        "run",
        s.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("subsystem 'a': 'y_u64' = 1152921504606846976 is beyond +-2^53"),
        "{err}"
    );
}
