//! Values as FMPy and fmusim give them, on a hand-written FMI 3.0 FMU
//! whose outputs are its inputs (tests/data/feedthrough_fmu, after the
//! Modelica Reference FMUs' Feedthrough):
//!
//! - an input file's Float inputs of discrete variability are held at the
//!   last row (sampled data), those of continuous variability
//!   interpolated;
//! - Int64 and UInt64 values over their whole range, from input files,
//!   `--set`, events, to the trace, exactly (no trip through a double);
//! - Binary values traced as hexadecimal digits, and fed from input files
//!   and `--set` the same way; `cosim compare` leaves them out with a note;
//! - messages quote a value as written.
//!
//! The FMU's outputs show the inputs it was given: a trace row at `t`
//! shows the inputs set at the start of the step that ended at `t`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The Feedthrough FMU, built once per test process.
fn feedthrough() -> &'static Path {
    static FMU: OnceLock<PathBuf> = OnceLock::new();
    FMU.get_or_init(|| cosim_tests::feedthrough_fmu(&cosim_tests::process_dir("exact-values")))
}

/// `cosim run <target> --no-progress -o <dir>/out <args>`.
fn run(target: &Path, dir: &Path, args: &[&str]) -> Output {
    let out = dir.join("out");
    let mut all = vec!["run", s(target), "--no-progress", "-o", s(&out)];
    all.extend_from_slice(args);
    cosim_tests::cosim(&all)
}

#[track_caller]
fn ok(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

#[track_caller]
fn refused(out: &Output, keys: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    for k in keys {
        assert!(err.contains(k), "missing {k:?} in:\n{err}");
    }
    err
}

/// The trace's header and rows, every cell as written.
fn cells(dir: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    cosim_tests::csv_cells(&dir.join("out/trace.csv"))
}

/// The cells of column `name` (without its unit), by row.
fn column(header: &[String], rows: &[Vec<String>], name: &str) -> Vec<String> {
    let c = header
        .iter()
        .position(|h| h.split(" [").next() == Some(name))
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"));
    rows.iter().map(|r| r[c].clone()).collect()
}

#[test]
fn discrete_float_inputs_are_held_at_the_last_row_continuous_ones_interpolated() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    // 0 until t = 1, then 1: linear in between for a continuous input.
    std::fs::write(
        &file,
        "time,Float64_continuous_input,Float64_discrete_input\n0,0,0\n1,1,1\n2,3,3\n",
    )
    .unwrap();
    for isolation in ["none", "process"] {
        let o = run(
            feedthrough(),
            dir.path(),
            &["--input-file", s(&file), "--isolation", isolation],
        );
        ok(&o);
        let (header, rows) = cells(dir.path());
        let time: Vec<f64> = column(&header, &rows, "time")
            .iter()
            .map(|x| x.parse().unwrap())
            .collect();
        let continuous = column(&header, &rows, "Feedthrough.Float64_continuous_output");
        let discrete = column(&header, &rows, "Feedthrough.Float64_discrete_output");
        assert_eq!(time.len(), 21, "{isolation}");
        let file_at = |t: f64| if t < 1.0 { t } else { 1.0 + 2.0 * (t - 1.0) };
        let held_at = |t: f64| {
            if t < 1.0 - 1e-9 {
                0.0
            } else if t < 2.0 - 1e-9 {
                1.0
            } else {
                3.0
            }
        };
        for (k, &t) in time.iter().enumerate() {
            // The inputs set at the step's start, t - 0.1 (at t = 0: the
            // file's first row, set in Initialization Mode).
            let set_at = if k == 0 { 0.0 } else { time[k - 1] };
            let c: f64 = continuous[k].parse().unwrap();
            let d: f64 = discrete[k].parse().unwrap();
            assert!(
                (c - file_at(set_at)).abs() < 1e-12,
                "{isolation}: continuous at t = {t}: {c}, expected {}",
                file_at(set_at)
            );
            assert_eq!(d, held_at(set_at), "{isolation}: discrete at t = {t}");
        }
        // What the old rule (by type only) gave: 0.1 at t = 0.2.
        assert_eq!(discrete[2], "0.0", "{isolation}");
    }
}

#[test]
fn int64_and_uint64_extremes_from_an_input_file_reach_the_trace_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    // The Modelica Reference FMUs' own Feedthrough_in.csv, columns of the
    // 64-bit types.
    std::fs::write(
        &file,
        "time,Int64_input,UInt64_input\n0.0,-9223372036854775808,0\n1.0,9223372036854775807,18446744073709551615\n",
    )
    .unwrap();
    for isolation in ["none", "process"] {
        let o = run(
            feedthrough(),
            dir.path(),
            &[
                "--input-file",
                s(&file),
                "--isolation",
                isolation,
                "--output-variables",
                "Int64_output",
                "UInt64_output",
                "Int64_input",
            ],
        );
        ok(&o);
        let (header, rows) = cells(dir.path());
        let i64s = column(&header, &rows, "Feedthrough.Int64_output");
        let u64s = column(&header, &rows, "Feedthrough.UInt64_output");
        let input = column(&header, &rows, "Feedthrough.Int64_input");
        // Rows at 0.0 .. 1.0 show what was set before t = 1; from 1.1 on,
        // the second row.
        for k in 0..=10 {
            assert_eq!(i64s[k], "-9223372036854775808", "{isolation} row {k}");
            assert_eq!(u64s[k], "0", "{isolation} row {k}");
        }
        for k in 11..rows.len() {
            assert_eq!(i64s[k], "9223372036854775807", "{isolation} row {k}");
            assert_eq!(u64s[k], "18446744073709551615", "{isolation} row {k}");
        }
        // A traced file-fed input shows the file's value at the row's time.
        assert_eq!(input[9], "-9223372036854775808", "{isolation}");
        assert_eq!(input[10], "9223372036854775807", "{isolation}");
    }

    // A value out of the type's range: refused at its cell, quoted as
    // written (not as the nearest double).
    std::fs::write(&file, "time,Int64_input\n0,0\n1,9223372036854775808\n").unwrap();
    let o = run(feedthrough(), dir.path(), &["--input-file", s(&file)]);
    refused(
        &o,
        &[
            "in.csv:3:3",
            "column 'Int64_input' feeds the Int64 input 'Int64_input': '9223372036854775808' is no whole number from -9223372036854775808 to 9223372036854775807",
        ],
    );
}

#[test]
fn binary_values_are_traced_and_fed_as_hexadecimal_digits() {
    let dir = tempfile::tempdir().unwrap();
    // The start value, from the model description.
    let o = run(
        feedthrough(),
        dir.path(),
        &["--output-variables", "Binary_output", "--stop", "0.2"],
    );
    ok(&o);
    let (header, rows) = cells(dir.path());
    assert_eq!(header, ["time [s]", "Feedthrough.Binary_output"]);
    assert_eq!(
        column(&header, &rows, "Feedthrough.Binary_output"),
        ["666f6f", "666f6f", "666f6f"]
    );

    // From an input file (held: a Binary is discrete), in process and
    // isolated; an empty value is an empty byte string.
    let file = dir.path().join("in.csv");
    std::fs::write(&file, "time,Binary_input\n0,00\n0.5,DEADbeef\n1,\n").unwrap();
    for isolation in ["none", "process"] {
        let o = run(
            feedthrough(),
            dir.path(),
            &[
                "--input-file",
                s(&file),
                "--isolation",
                isolation,
                "--stop",
                "1.2",
            ],
        );
        ok(&o);
        let (header, rows) = cells(dir.path());
        let b = column(&header, &rows, "Feedthrough.Binary_output");
        assert_eq!(&b[..=5], ["00"; 6], "{isolation}");
        assert_eq!(&b[6..=10], ["deadbeef"; 5], "{isolation}");
        assert_eq!(&b[11..], ["", ""], "{isolation}");
    }

    // `cosim compare` leaves the column out, with a note, although its
    // first values look like numbers.
    let trace = dir.path().join("out/trace.csv");
    let o = cosim_tests::cosim(&["compare", s(&trace), s(&trace)]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("Feedthrough.Binary_output"), "{out}");

    // From --set; a malformed value is refused, quoted.
    let o = run(
        feedthrough(),
        dir.path(),
        &["--set", "Binary_input=0x0a0B", "--stop", "0.1"],
    );
    ok(&o);
    let (header, rows) = cells(dir.path());
    assert_eq!(
        column(&header, &rows, "Feedthrough.Binary_output"),
        ["0a0b", "0a0b"]
    );
    let o = run(feedthrough(), dir.path(), &["--set", "Binary_input=abc"]);
    refused(
        &o,
        &["'Binary_input' is a Binary: \"abc\" is no byte string"],
    );
    std::fs::write(&file, "time,Binary_input\n0,00\n0.5,xyz\n").unwrap();
    let o = run(feedthrough(), dir.path(), &["--input-file", s(&file)]);
    refused(&o, &["in.csv:3:5", "'xyz' is no byte string"]);
}

#[test]
fn start_values_of_64_bit_inputs_are_exact_over_the_whole_range() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(
        feedthrough(),
        dir.path(),
        &[
            "--set",
            "Int64_input=-9223372036854775808",
            "--set",
            "UInt64_input=18446744073709551615",
            "--stop",
            "0.1",
        ],
    );
    ok(&o);
    let (header, rows) = cells(dir.path());
    assert_eq!(
        column(&header, &rows, "Feedthrough.Int64_output"),
        ["-9223372036854775808", "-9223372036854775808"]
    );
    assert_eq!(
        column(&header, &rows, "Feedthrough.UInt64_output"),
        ["18446744073709551615", "18446744073709551615"]
    );
    for (set, message) in [
        (
            "UInt64_input=18446744073709551616",
            "18446744073709551616 is out of the range of UInt64 (0 to 18446744073709551615) of 'UInt64_input'",
        ),
        (
            "Int64_input=9223372036854775808",
            "9223372036854775808 is out of the range of Int64 (-9223372036854775808 to 9223372036854775807) of 'Int64_input'",
        ),
    ] {
        let o = run(feedthrough(), dir.path(), &["--set", set]);
        refused(&o, &[message]);
    }
}

/// A scenario of two Feedthrough FMUs, `a` and `b`, with `extra` after it.
fn scenario(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("s.toml");
    std::fs::write(
        &path,
        format!(
            r#"[simulation]
stop = 1.0

[master]
kind = "fixed-step"
step = 0.1

[[subsystems]]
name = "a"
fmu = "{}"

[subsystems.start]
UInt64_input = 18446744073709551615

[[subsystems]]
name = "b"
fmu = "{}"

[[connections]]
from = "a.Int64_output"
to = "b.Int64_input"
{extra}"#,
            s(feedthrough()),
            s(feedthrough()),
        ),
    )
    .unwrap();
    path
}

#[test]
fn events_on_64_bit_inputs_are_exact_where_no_connection_feeds_them() {
    let dir = tempfile::tempdir().unwrap();
    let events = r#"
[[events]]
time = 0.3
variable = "a.Int64_input"
action = "override"
value = 9223372036854775807

[[events]]
time = 0.5
variable = "a.UInt64_input"
action = "bias"
value = -18446744073709551614

[[events]]
time = 0.7
variable = "a.Int64_input"
action = "reset"

[outputs]
variables = ["a.Int64_output", "a.UInt64_output", "a.Int64_input"]
"#;
    let path = scenario(dir.path(), events);
    // (a.Int64_output also feeds b through a slot: exact to 2^53 only, so
    // the override beyond stops the run, saying so. Without b's
    // connection the values go through.)
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "[[connections]]\nfrom = \"a.Int64_output\"\nto = \"b.Int64_input\"\n",
        "",
    );
    std::fs::write(&path, text).unwrap();
    for isolation in ["none", "process"] {
        let o = run(&path, dir.path(), &["--isolation", isolation]);
        ok(&o);
        let (header, rows) = cells(dir.path());
        let i = column(&header, &rows, "a.Int64_output");
        let u = column(&header, &rows, "a.UInt64_output");
        let input = column(&header, &rows, "a.Int64_input");
        let max = "9223372036854775807";
        assert_eq!(i, ["0", "0", "0", "0", max, max, max, max, "0", "0", "0"]);
        let umax = "18446744073709551615";
        assert_eq!(
            u,
            [umax, umax, umax, umax, umax, umax, "1", "1", "1", "1", "1"]
        );
        assert_eq!(
            input[3], max,
            "{isolation}: the value in effect from t = 0.3"
        );
        assert_eq!(input[7], "0", "{isolation}: reset at t = 0.7");
    }

    // On a connected input, the value rides in a slot: beyond 2^53 it is
    // refused at the event, naming the input.
    let path = scenario(
        dir.path(),
        r#"
[[events]]
time = 0.3
variable = "b.Int64_input"
action = "override"
value = 1152921504606846977
"#,
    );
    let o = run(&path, dir.path(), &[]);
    refused(
        &o,
        &[
            "s.toml:",
            "1152921504606846977 is beyond +-2^53, the integers a slot carries exactly, and 'b.Int64_input' is Int64 (a connection feeds it, in a slot)",
        ],
    );
    // An override out of the type's range.
    let path = scenario(
        dir.path(),
        r#"
[[events]]
time = 0.3
variable = "a.UInt64_input"
action = "override"
value = -1
"#,
    );
    let o = run(&path, dir.path(), &[]);
    refused(
        &o,
        &["-1 is out of the range of UInt64 (0 to 18446744073709551615) of 'a.UInt64_input'"],
    );
}

/// Stepped from outside (the Python package's `Simulation`), a value
/// traced as text reads exactly, and as a number where it is one.
#[test]
fn a_session_reads_64_bit_and_binary_values_as_their_trace_shows_them() {
    let overrides = cosim_scenario::Overrides {
        set: vec![
            "Int64_input=-9223372036854775807".into(),
            "Binary_input=0a0b".into(),
        ],
        stop: Some(0.2),
        ..Default::default()
    };
    let prepared = cosim_scenario::runner::prepare(feedthrough(), &overrides, None).unwrap();
    let mut session = cosim_scenario::session::Session::new(prepared);
    session.run_until(0.1, || true).unwrap();
    assert_eq!(
        session.get_text("Feedthrough.Int64_output").unwrap(),
        "-9223372036854775807"
    );
    assert_eq!(
        session.get("Feedthrough.Int64_output").unwrap(),
        -9223372036854775807.0
    );
    assert_eq!(
        session.get_text("Feedthrough.Binary_output").unwrap(),
        "0a0b"
    );
    let e = session.get("Feedthrough.Binary_output").unwrap_err();
    assert!(e.to_string().contains("is text (\"0a0b\")"), "{e}");
    assert_eq!(
        session
            .get_text("Feedthrough.Float64_discrete_output")
            .unwrap(),
        "0"
    );
}
