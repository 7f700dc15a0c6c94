//! The output files (docs/outputs.md): the exact output grid of
//! `[outputs] interval` for every master, a fixed-step interval that is not
//! a multiple of the step refused at its line, the size warning, the
//! headers (units, one time convention), integers as integers, no dead
//! columns, no `NaN` text, and docs/outputs.md naming every column and
//! summary field a run writes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use cosim_tests::{Run, cosim, cosim_bin, fmus, root, run, run_one_by_one, scenario, with_master};

/// A copy of `file` (of `scenarios/`) in `dir` with `master` as its
/// `[master]` table and `lines` added to `[outputs]`.
fn variant(file: &str, master: &str, lines: &str, dir: &Path) -> PathBuf {
    let path = with_master(file, master, dir);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\n[outputs]\n"), "{file} has no [outputs]");
    let text = text.replace("\n[outputs]\n", &format!("\n[outputs]\n{lines}\n"));
    std::fs::write(&path, text).unwrap();
    path
}

use cosim_tests::csv_cells as csv;

fn column(header: &[String], rows: &[Vec<String>], name: &str) -> Vec<String> {
    let c = header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"));
    rows.iter().map(|r| r[c].clone()).collect()
}

fn summary(r: &Run) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(r.dir.path().join("summary.json")).unwrap())
        .unwrap()
}

/// The masters on B1 (reticulation A), each with the output interval
/// 0.0125 s: a fixed step of 0.5 ms divides it; the others choose steps
/// that do not.
const MASTERS: [(&str, &str); 7] = [
    (
        "fixed-step",
        "kind = \"fixed-step\"\nstep = 5e-4\nenergy_scale = 750.0",
    ),
    (
        "ecco",
        "kind = \"ecco\"\ntolerance = 1e-4\nenergy_scale = 750.0",
    ),
    (
        "predictor-corrector",
        "kind = \"predictor-corrector\"\nenergy_scale = 750.0",
    ),
    ("nepce", "kind = \"nepce\"\nenergy_scale = 750.0"),
    (
        "richardson",
        "kind = \"richardson\"\nstep = 1e-4\natol = 1e-3\nrtol = 1e-3\nenergy_scale = 750.0\n[master.controller]\ndt_min = 1e-6",
    ),
    (
        "ifosmondi",
        "kind = \"ifosmondi\"\nstep = 1e-3\nenergy_scale = 750.0",
    ),
    (
        "iterative-affine",
        "kind = \"iterative-affine\"\nstep = 1e-3\nenergy_scale = 750.0",
    ),
];

#[test]
fn interval_rows_are_exactly_at_multiples_of_the_interval_for_every_master() {
    let dir = tempfile::tempdir().unwrap();
    let stop = 0.5;
    for (kind, master) in MASTERS {
        let sub = dir.path().join(kind);
        std::fs::create_dir_all(&sub).unwrap();
        let path = variant("b1_quarter_car_a.toml", master, "interval = 0.0125", &sub);
        let r = run(&path, &[], Some(stop), None);
        assert!(r.error.is_none(), "{kind}: {:?}", r.error);
        let (header, rows) = csv(&r.dir.path().join("trace.csv"));
        assert_eq!(header[0], "time [s]");
        let times = column(&header, &rows, "time [s]");
        // 0, 0.0125, 0.025, ... 0.5: k * 12 500 000 ns, printed as the
        // decimal (one division of whole ticks).
        let want: Vec<String> = (0..=40)
            .map(|k| format!("{:?}", (k * 12_500_000) as f64 / 1e9))
            .collect();
        assert_eq!(times, want, "{kind}: trace times");
        assert_eq!(times[1], "0.0125");
        // Real communication points: every row after the first is the end
        // of an accepted step.
        let (sh, srows) = csv(&r.dir.path().join("steps.csv"));
        let ends: BTreeSet<String> = column(&sh, &srows, "time [s]").into_iter().collect();
        for t in &times[1..] {
            assert!(ends.contains(t), "{kind}: trace row {t} is no step end");
        }
        let s = summary(&r);
        assert_eq!(
            s["sampling"],
            serde_json::json!({"interval": 0.0125}),
            "{kind}"
        );
        let steps = s["stats"]["macro_steps"].as_u64().unwrap();
        if kind == "fixed-step" {
            assert_eq!(steps, 1000);
        } else {
            // Ending on 40 output points costs at most 40 more steps than
            // the same master without them.
            let free = run(
                &with_master("b1_quarter_car_a.toml", master, &sub),
                &[],
                Some(stop),
                None,
            );
            assert!(free.error.is_none(), "{kind}: {:?}", free.error);
            let free_steps = free.summary.stats.macro_steps;
            eprintln!("{kind}: {steps} steps with the interval, {free_steps} without");
            assert!(
                steps <= free_steps + 40 + free_steps / 10,
                "{kind}: {steps} steps with the interval, {free_steps} without"
            );
            assert_eq!(summary(&free)["sampling"], "every_step");
        }
    }
}

#[test]
fn a_fixed_step_interval_that_is_not_a_multiple_of_the_step_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = variant(
        "b1_quarter_car_a.toml",
        "kind = \"fixed-step\"\nstep = 1e-3",
        "interval = 0.0025",
        dir.path(),
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let line = 1 + text.lines().position(|l| l == "interval = 0.0025").unwrap();
    for command in ["check", "run"] {
        let out = cosim(&[
            command,
            path.to_str().unwrap(),
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {err}");
        assert!(
            err.contains(&format!(
                "b1_quarter_car_a.toml:{line}:12: error: 'interval' = 0.0025 s is not a whole multiple of the fixed step 0.001 s: the trace would have rows at 0.003, 0.005, 0.008, ... instead of every 0.0025 s"
            )),
            "{command}: {err}"
        );
        assert!(
            err.contains("use interval = 0.002 or 0.003 (a multiple of the step), or a step that divides the interval (step = 0.0005)"),
            "{err}"
        );
    }
    // The step from the command line: named.
    let out = cosim(&["check", path.to_str().unwrap(), "--step", "0.002"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not a whole multiple of the fixed step 0.002 s (from --step 0.002)"),
        "{err}"
    );
    // Shorter than the step: a row at every step end, each said once.
    let out = cosim(&["check", path.to_str().unwrap(), "--step", "0.01"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "the trace would have rows at 0.01, 0.02, 0.03, ... instead of every 0.0025 s"
        ),
        "{err}"
    );
    // A multiple of the step is fine.
    let out = cosim(&["check", path.to_str().unwrap(), "--step", "0.0005"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `cosim <args>` with `COSIM_OUTPUT_WARNING_BYTES` set to `threshold`.
fn cosim_with_threshold(args: &[&str], threshold: &str) -> (bool, String) {
    fmus();
    let out = Command::new(cosim_bin())
        .args(args)
        .env("COSIM_OUTPUT_WARNING_BYTES", threshold)
        .env_remove("COSIM_LOG")
        .current_dir(root())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn outputs_above_the_size_threshold_are_announced_at_the_start() {
    let b1 = scenario("b1_quarter_car_a.toml");
    let b1 = b1.to_str().unwrap();
    // The case of the issue: B1 for 3000 s at 1 ms wrote 1.3 GB without a
    // word. `cosim check` makes no step and says it.
    let out = cosim(&["check", b1, "--stop", "3000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The warning points at [outputs].
    let line = std::fs::read_to_string(b1)
        .unwrap()
        .lines()
        .position(|l| l.starts_with("[outputs]"))
        .unwrap()
        + 1;
    let at = format!("b1_quarter_car_a.toml:{line}:1: warning");
    assert!(err.contains(&at), "{err}");
    assert!(
        err.contains(
            ": warning: the outputs of this run will take about 1.5 GB, more than 1.0 GB: trace.csv 741 MB (3000001 rows x 13 columns), energy.csv 513 MB (3000000 rows x 9 columns), steps.csv 228 MB (3000000 rows x 4 columns) (3000000 macro steps at the fixed step 0.001 s over 3000 s"
        ),
        "{err}"
    );
    assert!(
        err.contains("interval = <seconds> or decimation = <n>")
            && err.contains("variables = [...]")
            && err.contains("energy_log = false"),
        "{err}"
    );
    // docs/outputs.md shows the warning as printed (block `size-warning`).
    let root = format!("{}/", cosim_tests::root().display());
    let start = err.find(&at).unwrap();
    let start = err[..start].rfind('\n').map_or(0, |i| i + 1);
    let end = start + err[start..].find("= help:").unwrap();
    let end = end + err[end..].find('\n').unwrap_or(err.len() - end);
    cosim_tests::check_doc_block(
        "outputs.md",
        "size-warning",
        &format!("```text\n{}\n```", err[start..end].replace(&root, "")),
    );
    // The default run (4 s): nothing.
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("a");
    let out_arg = out_dir.to_str().unwrap();
    let (ok, err) = cosim_with_threshold(&["run", "--no-progress", b1, "--out", out_arg], "1e9");
    assert!(ok, "{err}");
    assert!(!err.contains("outputs of this run"), "{err}");
    // With the threshold lowered (the documented variable), the same run
    // says it before the first step, and the estimate is close to what it
    // writes.
    let (ok, err) = cosim_with_threshold(&["run", "--no-progress", b1, "--out", out_arg], "1e6");
    assert!(ok, "{err}");
    assert!(
        err.contains("warning: the outputs of this run will take about 2.0 MB, more than 1.0 MB"),
        "{err}"
    );
    let written: u64 = ["trace.csv", "energy.csv", "steps.csv"]
        .iter()
        .map(|f| std::fs::metadata(out_dir.join(f)).unwrap().len())
        .sum();
    assert!(
        (1_500_000..2_500_000).contains(&written),
        "{written} bytes written"
    );
    // An adaptive master (steps unknown at the start): warned about when
    // the files pass the size.
    let ecco = scenario("b1_quarter_car_a_ecco.toml");
    let out_dir = dir.path().join("b");
    let (ok, err) = cosim_with_threshold(
        &[
            "run",
            "--no-progress",
            ecco.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ],
        "2.5e5",
    );
    assert!(ok, "{err}");
    assert!(!err.contains("outputs of this run will take"), "{err}");
    assert!(
        err.contains(&format!(
            "the outputs in {} have passed 250 kB",
            out_dir.display()
        )) && err.contains("decimation = <n>"),
        "{err}"
    );
}

/// Every cell of a CSV file is a number or empty: never `NaN`, `true`.
fn assert_numeric(path: &Path) {
    let (header, rows) = csv(path);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.len(), header.len(), "{}:{}", path.display(), i + 2);
        for cell in row {
            assert!(
                cell.is_empty() || cell.parse::<f64>().is_ok() && cell != "NaN",
                "{}:{}: {cell:?}",
                path.display(),
                i + 2
            );
        }
    }
}

#[test]
fn logs_have_units_one_time_convention_integers_and_no_dead_columns() {
    let dir = tempfile::tempdir().unwrap();
    // Fixed step with a power bond: the energy indicator is logged once.
    let r = run(&scenario("b1_quarter_car_a.toml"), &[], Some(0.2), None);
    let (th, trows) = csv(&r.dir.path().join("trace.csv"));
    let (eh, erows) = csv(&r.dir.path().join("energy.csv"));
    let (sh, srows) = csv(&r.dir.path().join("steps.csv"));
    assert_eq!(th[0], "time [s]");
    assert_eq!(
        sh,
        [
            "time [s]",
            "t_start [s]",
            "step [s]",
            "indicator.energy [1]"
        ]
    );
    assert_eq!(
        eh,
        [
            "time [s]",
            "t_start [s]",
            "step [s]",
            "chassis.F~wheel.v_c.residual_power [W]",
            "chassis.F~wheel.v_c.residual_energy [J]",
            "chassis.F~wheel.v_c.cumulative_residual_energy [J]",
            "chassis.F~wheel.v_c.transmitted_power [W]",
            "chassis.F~wheel.v_c.transmitted_energy [J]",
            "indicator [1]"
        ]
    );
    // One time convention: a step's row at its end; the trace, the energy
    // log and the step log join on the time column.
    assert_eq!(srows[0][..3], ["0.001", "0.0", "0.001"]);
    assert_eq!(erows[0][..3], ["0.001", "0.0", "0.001"]);
    let trace_times = column(&th, &trows, "time [s]");
    assert_eq!(trace_times[1..], column(&sh, &srows, "time [s]")[..]);
    assert_eq!(trace_times[1..], column(&eh, &erows, "time [s]")[..]);
    assert_eq!(
        column(&sh, &srows, "t_start [s]")[1..],
        column(&sh, &srows, "time [s]")[..srows.len() - 1]
    );
    for f in ["trace.csv", "energy.csv", "steps.csv"] {
        assert_numeric(&r.dir.path().join(f));
    }

    // An iterative master: rejections and iterations as integers, the
    // residual once (it is the indicator).
    let r = run(
        &scenario("b4_two_mass_ifosmondi.toml"),
        &[],
        Some(0.2),
        None,
    );
    assert!(r.error.is_none(), "{:?}", r.error);
    let (sh, srows) = csv(&r.dir.path().join("steps.csv"));
    assert_eq!(
        sh,
        [
            "time [s]",
            "t_start [s]",
            "step [s]",
            "rejections [1]",
            "iterations [1]",
            "residual [1]",
            "indicator.energy [1]"
        ]
    );
    for name in ["rejections [1]", "iterations [1]"] {
        for cell in column(&sh, &srows, name) {
            assert!(cell.parse::<u32>().is_ok(), "{name}: {cell:?}");
        }
    }
    let iterations: u64 = column(&sh, &srows, "iterations [1]")
        .iter()
        .map(|c| c.parse::<u64>().unwrap())
        .sum();
    assert_eq!(iterations, summary(&r)["stats"]["iterations"]);
    assert_numeric(&r.dir.path().join("steps.csv"));

    // Richardson: its indicator and rejections, no iterations or residual.
    let path = with_master(
        "b1_quarter_car_a.toml",
        "kind = \"richardson\"\nstep = 1e-4\natol = 1e-3\nrtol = 1e-3\nenergy_scale = 750.0\nindicators = []\n[master.controller]\ndt_min = 1e-6",
        dir.path(),
    );
    let r = run(&path, &[], Some(0.1), None);
    assert!(r.error.is_none(), "{:?}", r.error);
    let (sh, _) = csv(&r.dir.path().join("steps.csv"));
    assert_eq!(
        sh,
        [
            "time [s]",
            "t_start [s]",
            "step [s]",
            "indicator [1]",
            "rejections [1]"
        ]
    );

    // No power bond (the thermostat): no energy log, no indicator at all.
    let r = run(&scenario("thermostat.toml"), &[], Some(10.0), None);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(!r.dir.path().join("energy.csv").exists());
    let (sh, srows) = csv(&r.dir.path().join("steps.csv"));
    assert_eq!(sh, ["time [s]", "t_start [s]", "step [s]"]);
    assert_eq!(srows[0], ["0.5", "0.0", "0.5"]);
    assert_eq!(summary(&r)["max_indicator"], serde_json::Value::Null);
    // Discrete traced values are integers.
    let (th, trows) = csv(&r.dir.path().join("trace.csv"));
    assert_eq!(column(&th, &trows, "controller.heater_on")[0], "1");
}

/// An energy log's column `<bond name>.<quantity> [unit]` as
/// `<bond>.<quantity> [unit]` (bond names contain dots: the quantity is
/// after the last one); other columns as they are.
fn generic_energy_column(name: &str) -> String {
    match name.rsplit_once('.') {
        Some((_, quantity)) if !name.starts_with("indicator") => format!("<bond>.{quantity}"),
        _ => name.to_string(),
    }
}

/// The key paths of a JSON value: `a.b`, `list[].c`.
fn key_paths(v: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(path.clone());
                key_paths(v, &path, out);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                key_paths(item, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn docs_outputs_md_names_every_column_and_summary_field() {
    let doc = std::fs::read_to_string(root().join("docs/outputs.md")).unwrap();
    let documented = |name: &str| doc.contains(&format!("`{name}`"));
    let dir = tempfile::tempdir().unwrap();
    let ecco = with_master(
        "b1_quarter_car_a.toml",
        "kind = \"ecco\"\ntolerance = 1e-4\nenergy_scale = 750.0\nindicators = [\"energy\", \"predictor-corrector\", \"nepce\"]",
        dir.path(),
    );
    let runs = [
        run(&scenario("b1_quarter_car_a.toml"), &[], Some(0.1), None),
        run(&ecco, &[], Some(0.1), None),
        run(
            &scenario("b4_two_mass_ifosmondi.toml"),
            &[],
            Some(0.1),
            None,
        ),
        run(&scenario("b2_richardson.toml"), &[], Some(0.01), None),
        run(
            &scenario("b3_three_mass_hierarchical.toml"),
            &[],
            Some(0.2),
            None,
        ),
        run(&scenario("thermostat.toml"), &[], Some(10.0), None),
    ];
    let mut missing = Vec::new();
    let mut files = BTreeSet::new();
    for r in &runs {
        assert!(r.error.is_none(), "{:?}", r.error);
        let s = summary(r);
        let mut paths = BTreeSet::new();
        key_paths(&s, "", &mut paths);
        for p in paths {
            // A subsystem's calls have the fields of `calls`.
            let p = p.replace("subsystems[].calls.", "calls.");
            if !documented(&p) {
                missing.push(format!("summary.json: {p}"));
            }
        }
        for entry in std::fs::read_dir(r.dir.path()).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".csv") {
                continue;
            }
            let generic_file = if name.starts_with("energy.") && name != "energy.csv" {
                "energy.<nest>.csv".to_string()
            } else {
                name.clone()
            };
            if !documented(&generic_file) {
                missing.push(format!("file {name}"));
            }
            files.insert(generic_file.clone());
            let (header, _) = csv(&path);
            for h in &header {
                // Every header names its unit, except a traced variable
                // whose FMU declares none.
                let generic = if generic_file == "trace.csv" && h != "time [s]" {
                    assert!(h.contains('.'), "{name}: {h}");
                    if h.ends_with(']') {
                        "<subsystem>.<variable> [<unit>]".to_string()
                    } else {
                        "<subsystem>.<variable>".to_string()
                    }
                } else {
                    assert!(h.ends_with(']'), "{name}: {h} has no unit");
                    if generic_file.starts_with("energy") {
                        generic_energy_column(h)
                    } else {
                        h.clone()
                    }
                };
                if !documented(&generic) {
                    missing.push(format!("{name}: {h} (as `{generic}`)"));
                }
            }
        }
    }
    assert_eq!(
        files,
        ["energy.<nest>.csv", "energy.csv", "steps.csv", "trace.csv"]
            .map(String::from)
            .into_iter()
            .collect()
    );
    assert!(
        missing.is_empty(),
        "docs/outputs.md does not name:\n{}",
        missing.join("\n")
    );
    // Fields that are null in these runs, and columns only some masters
    // have, are documented too.
    for name in [
        "ended_by.subsystem",
        "ended_by.t",
        "indicator [1]",
        "rejections [1]",
        "iterations [1]",
        "residual [1]",
        "COSIM_OUTPUT_WARNING_BYTES",
    ] {
        assert!(documented(name), "{name}");
    }
}

/// Masters on the thermostat for the quiet-path tests: (name, `[master]`
/// table, stop time): a fixed-step master whose last step is shortened,
/// and masters with indicators of their own.
const THERMOSTAT_MASTERS: [(&str, &str, f64); 4] = [
    ("fixed-step", "kind = \"fixed-step\"\nstep = 0.5", 60.2),
    (
        "predictor-corrector",
        "kind = \"predictor-corrector\"",
        30.0,
    ),
    (
        "richardson",
        "kind = \"richardson\"\nstep = 0.1\natol = 1e-3\nrtol = 1e-3",
        30.0,
    ),
    ("ifosmondi", "kind = \"ifosmondi\"\nstep = 0.5", 60.0),
];

/// The step figures of two run summaries are the same: status, time
/// reached, master statistics, mean, shortest and longest step, largest
/// indicator.
fn assert_same_steps(a: &serde_json::Value, b: &serde_json::Value, what: &str) {
    for key in [
        "status",
        "t_reached",
        "stats",
        "mean_step",
        "min_step",
        "max_step",
        "max_indicator",
    ] {
        assert_eq!(a[key], b[key], "{what}: summary field {key}");
    }
}

/// A run with nothing to write between two macro steps (no observer,
/// event, diagnostic, bond or pacing) takes the run loop's quiet path; its
/// summary must say what the same run with a trace says: the steps, their
/// shortest and longest, the largest indicator, the time reached and every
/// subsystem's steps. On the thermostat (no power bond), for a fixed-step
/// master whose last step is shortened and for masters with indicators of
/// their own.
#[test]
fn a_run_without_outputs_summarises_its_steps_as_a_traced_run_does() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, master, stop) in THERMOSTAT_MASTERS {
        let sub = dir.path().join(kind);
        let traced_dir = sub.join("traced");
        let quiet_dir = sub.join("quiet");
        std::fs::create_dir_all(&traced_dir).unwrap();
        std::fs::create_dir_all(&quiet_dir).unwrap();
        let traced = run(
            &variant("thermostat.toml", master, "", &traced_dir),
            &[],
            Some(stop),
            None,
        );
        let quiet = run(
            &variant(
                "thermostat.toml",
                master,
                "trace = false\nstep_log = false\nenergy_log = false",
                &quiet_dir,
            ),
            &[],
            Some(stop),
            None,
        );
        assert!(traced.error.is_none(), "{kind}: {:?}", traced.error);
        assert!(quiet.error.is_none(), "{kind}: {:?}", quiet.error);
        assert!(traced.dir.path().join("trace.csv").exists(), "{kind}");
        for file in ["trace.csv", "steps.csv", "energy.csv"] {
            assert!(!quiet.dir.path().join(file).exists(), "{kind}: {file}");
        }
        let (a, b) = (summary(&traced), summary(&quiet));
        assert_same_steps(&a, &b, kind);
        for (sa, sb) in a["subsystems"]
            .as_array()
            .unwrap()
            .iter()
            .zip(b["subsystems"].as_array().unwrap())
        {
            for key in ["do_step", "stepped_time", "state_saves", "state_restores"] {
                assert_eq!(sa["calls"][key], sb["calls"][key], "{kind}: {key}");
            }
        }
        if kind == "fixed-step" {
            // 120 whole steps and a last one of 0.2 s.
            assert_eq!(b["stats"]["macro_steps"], 121, "{kind}");
            let (lo, hi) = (
                b["min_step"].as_f64().unwrap(),
                b["max_step"].as_f64().unwrap(),
            );
            assert!((lo - 0.2).abs() < 1e-12 && hi == 0.5, "{kind}: {lo} {hi}");
            assert_eq!(b["max_indicator"], serde_json::Value::Null, "{kind}");
        } else {
            assert!(b["max_indicator"].as_f64().unwrap() > 0.0, "{kind}");
            assert!(
                b["min_step"].as_f64().unwrap() <= b["max_step"].as_f64().unwrap(),
                "{kind}"
            );
        }
    }
}

/// A trace at an interval or decimated, with nothing else written after
/// every step, leaves the steps between two of its rows to the run loop's
/// quiet path (`Observer::due`): its rows, and the summary, are those of
/// the same run with every step taken the full way
/// (`cosim_core::observer::StepsOneByOne`). On the thermostat, for a
/// fixed-step master (the interval a multiple of its step, the last step
/// shortened) and for masters that end a step on every output point.
#[test]
fn a_sampled_trace_writes_the_rows_of_the_steps_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, master, stop) in THERMOSTAT_MASTERS {
        for sampling in ["interval = 2.5", "decimation = 7"] {
            let what = format!("{kind}, {sampling}");
            let sub = dir.path().join(kind).join(&sampling[..8]);
            let full_dir = sub.join("full");
            let quiet_dir = sub.join("quiet");
            std::fs::create_dir_all(&full_dir).unwrap();
            std::fs::create_dir_all(&quiet_dir).unwrap();
            let outputs = format!("{sampling}\nstep_log = false\nenergy_log = false");
            let full = run_one_by_one(
                &variant("thermostat.toml", master, &outputs, &full_dir),
                &[],
                Some(stop),
                None,
            );
            let quiet = run(
                &variant("thermostat.toml", master, &outputs, &quiet_dir),
                &[],
                Some(stop),
                None,
            );
            assert!(full.error.is_none(), "{what}: {:?}", full.error);
            assert!(quiet.error.is_none(), "{what}: {:?}", quiet.error);
            assert!(!quiet.dir.path().join("steps.csv").exists(), "{what}");
            let (header, rows) = csv(&quiet.dir.path().join("trace.csv"));
            assert_eq!(
                (header.clone(), rows.clone()),
                csv(&full.dir.path().join("trace.csv")),
                "{what}: the traces differ"
            );
            let times: Vec<f64> = column(&header, &rows, "time [s]")
                .iter()
                .map(|t| t.parse().unwrap())
                .collect();
            let (a, b) = (summary(&full), summary(&quiet));
            let steps = b["stats"]["macro_steps"].as_u64().unwrap() as usize;
            // The start, then a row at every point of the interval or
            // every 7th step, and one at the stop time unless it is one.
            let (regular, at_stop) = if sampling.starts_with("interval") {
                let n = (stop / 2.5).floor() as usize;
                (n + 1, n as f64 * 2.5 != stop)
            } else {
                (steps / 7 + 1, !steps.is_multiple_of(7))
            };
            assert_eq!(times.len(), regular + usize::from(at_stop), "{what}");
            assert_eq!(times[0], 0.0, "{what}");
            assert_eq!(*times.last().unwrap(), stop, "{what}");
            if sampling.starts_with("interval") {
                for (k, t) in times.iter().enumerate().take(regular) {
                    assert_eq!(*t, k as f64 * 2.5, "{what}");
                }
            }
            assert_same_steps(&a, &b, &what);
        }
    }
}
