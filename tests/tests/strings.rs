//! String variables in the trace, on the kit's `Greeting` (FMI 2.0 and 3.0:
//! String parameter `prefix`, input `name`, output `message`, the prefix,
//! a comma and the name, Integer output `length`): quoted as CSV quotes text, in the
//! order the user named the columns, read from the FMU only for the rows
//! written, the same isolated, and skipped with a note by `cosim plot` and
//! `cosim compare`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

fn greeting(version: &str) -> String {
    match version {
        "fmi2" => cosim_tests::fmi2("Greeting"),
        _ => cosim_tests::fmi3("Greeting"),
    }
    .display()
    .to_string()
}

fn run(args: &[&str], out: &Path) -> std::process::Output {
    let mut all: Vec<&str> = vec!["run", "--no-progress", "-q"];
    all.extend(args);
    all.extend(["-o", out.to_str().unwrap()]);
    let o = cosim_tests::cosim(&all);
    assert!(
        o.status.success(),
        "cosim {all:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

#[test]
fn string_outputs_are_traced_quoted_in_the_order_named() {
    for version in ["fmi2", "fmi3"] {
        let dir = tempfile::tempdir().unwrap();
        let fmu = greeting(version);
        run(
            &[
                &fmu,
                "--stop",
                "0.02",
                "--set",
                "prefix=Say \"hi\", Zoë",
                "--output-variables",
                "length",
                "message",
                "name",
            ],
            dir.path(),
        );
        let text = std::fs::read_to_string(dir.path().join("trace.csv")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0], "time [s],Greeting.length,Greeting.message,Greeting.name",
            "{version}"
        );
        // "Say "hi", Zoë, world": 20 characters.
        for (line, t) in lines[1..].iter().zip(["0.0", "0.01", "0.02"]) {
            assert_eq!(
                *line,
                format!("{t},20,\"Say \"\"hi\"\", Zoë, world\",\"world\""),
                "{version}"
            );
        }
        assert_eq!(lines.len(), 4);
        // The csv crate reads the cells back as written.
        let mut reader = csv_rows(&dir.path().join("trace.csv"));
        assert_eq!(reader.remove(1)[2], "Say \"hi\", Zoë, world");
    }
}

/// The rows of a CSV file, cells unquoted (a minimal reader: quotes,
/// doubled quotes, commas inside quotes).
fn csv_rows(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|line| {
            let mut cells = Vec::new();
            let mut cell = String::new();
            let mut quoted = false;
            let mut chars = line.chars().peekable();
            while let Some(c) = chars.next() {
                match (c, quoted) {
                    ('"', true) if chars.peek() == Some(&'"') => {
                        cell.push('"');
                        chars.next();
                    }
                    ('"', _) => quoted = !quoted,
                    (',', false) => cells.push(std::mem::take(&mut cell)),
                    (c, _) => cell.push(c),
                }
            }
            cells.push(cell);
            cells
        })
        .collect()
}

#[test]
fn strings_are_read_only_for_the_rows_written() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let log_arg = format!("--log-fmi-calls={}", log.display());
    run(
        &[
            &greeting("fmi3"),
            "--stop",
            "0.1",
            "--output-interval",
            "0.02",
            "--output-variables",
            "message",
            &log_arg,
        ],
        &dir.path().join("out"),
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    let gets = calls
        .lines()
        .filter(|l| l.contains("fmi3GetString"))
        .count();
    let steps = calls.lines().filter(|l| l.contains("fmi3DoStep")).count();
    // 10 steps of 0.01 s, rows at 0, 0.02, ..., 0.1.
    assert_eq!((steps, gets), (10, 6), "doStep and GetString calls");
    let rows = csv_rows(&dir.path().join("out/trace.csv"));
    assert_eq!(rows.len(), 7);
    assert!(rows[1..].iter().all(|r| r[1] == "Hello, world"));
}

#[test]
fn isolated_strings_give_the_same_trace_to_the_byte() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = greeting("fmi2");
    let args = [
        fmu.as_str(),
        "--stop",
        "0.05",
        "--set",
        "name=Zoë",
        "--output-variables",
        "message",
        "length",
    ];
    run(&args, &dir.path().join("in"));
    let mut iso = args.to_vec();
    iso.extend(["--isolation", "process"]);
    run(&iso, &dir.path().join("iso"));
    let a = std::fs::read(dir.path().join("in/trace.csv")).unwrap();
    let b = std::fs::read(dir.path().join("iso/trace.csv")).unwrap();
    assert_eq!(a, b);
    assert!(String::from_utf8(a).unwrap().contains("\"Hello, Zoë\",10"));
}

#[test]
fn plot_and_compare_leave_text_columns_out_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    run(
        &[
            &greeting("fmi3"),
            "--stop",
            "0.05",
            "--output-variables",
            "message",
            "length",
        ],
        dir.path(),
    );
    let trace = dir.path().join("trace.csv");
    let svg = dir.path().join("plot.svg");
    let o = cosim_tests::cosim(&["plot", trace.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Greeting.message holds text, not plotted"),
        "{err}"
    );
    let o = cosim_tests::cosim(&["compare", trace.to_str().unwrap(), trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("text columns not compared: Greeting.message"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("Greeting.length"));
}
