//! The libcosim-compatibility suite, ECCO part: OSP files with
//! `<Algorithm>ecco</Algorithm>` on the project's FMUs, run unchanged by
//! `cosim` and by libcosim (`tests/python/libcosim_run.py`, libcosimpy
//! 0.0.6 = libcosim 0.11.2), compared value by value, on step count, and on
//! accuracy against the exact (monolithic) solution of each benchmark.
//!
//! The OSP import runs ECCO as libcosim computes it (`energy_reference =
//! "largest-residual"`, `[master.controller] variant = "libcosim"`), so the
//! runs are the same to the bit at every macro step. The one difference is
//! the end: cosim's last step ends at the stop time, libcosim's
//! `simulate_until` takes its last step whole and ends past it; that row is
//! left out of the comparison.
//!
//! libcosim 0.11.2 refuses an OSP file with two power bonds (the check in
//! `add_power_bonds`, src/cosim/osp_config_parser.cpp, runs inside the loop
//! over the bonds): the two-bond case is given to libcosim through its C
//! API (`libcosim_run.py --api`), as `load_osp_config` would build it.
//!
//! The figures go to docs/ssp.md (`check_doc_block`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::path::Path;

use cosim_tests::libcosim::{self, Trace, compare_exact};

/// One ECCO system of the suite.
struct Case {
    /// Directory under tests/python/osp.
    dir: &'static str,
    /// What it exercises, for the table.
    what: &'static str,
    stop: f64,
    /// `--stop` for cosim (the file has no EndTime).
    give_stop: bool,
    /// libcosim through its C API (it refuses the file).
    api: bool,
    /// Monolithic reference CSV and (trace column, reference column) pairs.
    reference: &'static str,
    positions: &'static [(&'static str, &'static str)],
}

const CASES: &[Case] = &[
    Case {
        dir: "b1_ecco",
        what: "B1 reticulation B, one bond marked as libcosim's quarter-truck example, no EndTime",
        stop: 4.0,
        give_stop: true,
        api: false,
        reference: "b1_linear",
        positions: &[("chassis.z_c", "z_c"), ("wheel.z_w", "z_w")],
    },
    Case {
        dir: "b3_ecco",
        what: "B3 scenario 1, two bonds marked as the FMUs, InitialValues",
        stop: 25.0,
        give_stop: false,
        api: true,
        reference: "b3_scenario1",
        positions: &[("s1.x1", "x1"), ("s2.x2", "x2"), ("s3.x3", "x3")],
    },
];

/// Runs `system` with cosim tracing `columns` (exact names select any
/// causality) and returns the trace and the macro steps.
fn cosim_run(system: &Path, stop: Option<f64>, columns: &[String], out: &Path) -> (Trace, usize) {
    let stop_text = stop.map(|s| s.to_string());
    let mut args = vec![
        "run",
        "--no-progress",
        "-q",
        system.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    if let Some(s) = &stop_text {
        args.extend(["--stop", s]);
    }
    args.push("--output-variables");
    args.extend(columns.iter().map(String::as_str));
    let o = cosim_tests::cosim(&args);
    assert!(
        o.status.success(),
        "cosim run {} failed:\n{}",
        system.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let steps = summary["stats"]["macro_steps"].as_u64().unwrap() as usize;
    (Trace::read(&out.join("trace.csv")), steps)
}

/// Largest |x - x_ref(t)| over the rows up to `stop` and the given columns.
fn max_error(trace: &Trace, case: &Case) -> f64 {
    let reference = cosim_tests::reference(case.reference);
    let times = trace.times();
    let mut worst = 0.0f64;
    for (column, ref_column) in case.positions {
        let c = reference
            .names
            .iter()
            .position(|n| n == ref_column)
            .unwrap_or_else(|| panic!("{} has no column {ref_column}", case.reference));
        for (t, x) in times.iter().zip(trace.values(column)) {
            if *t <= case.stop * (1.0 + 1e-12) {
                worst = worst.max((x - reference.interpolate(c, *t)).abs());
            }
        }
    }
    worst
}

/// Everything but the last row (the end differs, see the module doc).
fn without_last_row(t: &Trace) -> Trace {
    let mut t = t.clone();
    t.rows.pop();
    t
}

#[test]
fn osp_ecco_runs_step_for_step_as_libcosim() {
    let mut table = String::from(
        "| OSP file (tests/python/osp/) | system | libcosim steps | cosim steps | values compared | differing | max position error, libcosim | cosim |\n|---|---|---|---|---|---|---|---|\n",
    );
    for case in CASES {
        let dir = tempfile::tempdir().unwrap();
        let system = cosim_tests::root().join("tests/python/osp").join(case.dir);
        let (theirs, their_steps) = if case.api {
            libcosim::run_api(&system, case.stop, dir.path())
        } else {
            libcosim::run(&system, case.stop, false, dir.path())
        };
        let columns: Vec<String> = theirs
            .header
            .iter()
            .filter(|h| *h != "time" && !h.ends_with(".time"))
            .cloned()
            .collect();
        let (ours, our_steps) = cosim_run(
            &system,
            case.give_stop.then_some(case.stop),
            &columns,
            &dir.path().join("cosim"),
        );

        // The same macro steps, to the nanosecond, but the last: cosim ends
        // at the stop time, libcosim past it.
        assert_eq!(our_steps, their_steps.len(), "{}: step counts", case.dir);
        let our_times = ours.times();
        let their_times = theirs.times();
        assert_eq!(*our_times.last().unwrap(), case.stop, "{}", case.dir);
        assert!(
            *their_times.last().unwrap() > case.stop,
            "{}: libcosim's last step was expected to end past the stop time",
            case.dir
        );
        let skip: Vec<&str> = theirs
            .header
            .iter()
            .filter(|h| h.ends_with(".time"))
            .map(String::as_str)
            .collect();
        let cmp = compare_exact(&without_last_row(&ours), &without_last_row(&theirs), &skip);
        assert!(
            cmp.n_differing == 0,
            "{}: {} of {} values differ from libcosim's, first: {:#?}",
            case.dir,
            cmp.n_differing,
            cmp.values,
            cmp.differing
        );
        assert!(cmp.columns >= 9 && cmp.rows > 1000, "{}: {cmp:?}", case.dir);

        // Accuracy against the exact solution: the same (the runs are).
        let (e_theirs, e_ours) = (max_error(&theirs, case), max_error(&ours, case));
        assert!(
            e_ours <= e_theirs,
            "{}: cosim's error {e_ours:e} is larger than libcosim's {e_theirs:e}",
            case.dir
        );
        assert!(
            e_ours > 0.0 && e_ours < 1e-2,
            "{}: error {e_ours:e}",
            case.dir
        );
        writeln!(
            table,
            "| `{}` | {} | {} | {} | {} | {} | {:.3e} m | {:.3e} m |",
            case.dir,
            case.what,
            their_steps.len(),
            our_steps,
            cmp.values,
            cmp.n_differing,
            e_theirs,
            e_ours
        )
        .unwrap();
    }
    cosim_tests::check_doc_block("ssp.md", "libcosim-compat-ecco", &table);
}

/// The ECCO of sadjina2016 (cosim's default, `energy_reference =
/// "transmitted"`, `variant = "sadjina2016"`) on the same file is a
/// different controller: it must differ from libcosim's run, or the
/// options above would prove nothing.
#[test]
fn the_paper_ecco_differs_from_libcosims_on_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let system = cosim_tests::root().join("tests/python/osp/b1_ecco");
    let toml = dir.path().join("b1_ecco.toml");
    let o = cosim_tests::cosim(&[
        "convert",
        system.to_str().unwrap(),
        "--stop",
        "4",
        "-o",
        toml.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&toml).unwrap();
    assert!(
        text.contains("energy_reference = \"largest-residual\""),
        "{text}"
    );
    assert!(text.contains("variant = \"libcosim\""), "{text}");
    // (convert writes the FMU paths relative to the file it writes.)
    let paper = dir.path().join("paper_variant.toml");
    std::fs::write(
        &paper,
        text.replace("energy_reference = \"largest-residual\"", "")
            .replace("variant = \"libcosim\"", ""),
    )
    .unwrap();
    let columns = vec!["chassis.z_c".to_string(), "wheel.z_w".to_string()];
    let (libcosim_like, n_libcosim) =
        cosim_run(&system, Some(4.0), &columns, &dir.path().join("a"));
    let (paper_run, n_paper) = cosim_run(&paper, None, &columns, &dir.path().join("b"));
    assert_ne!(
        libcosim_like.values("chassis.z_c"),
        paper_run.values("chassis.z_c")
    );
    assert_ne!(n_libcosim, n_paper);
}

/// The fixed-step OSP files of the suite (other tests look at each in
/// depth; here every variable libcosim sees, every row, in one table).
#[test]
fn osp_fixed_step_systems_are_bit_identical_to_libcosim() {
    let cases: &[(&str, &str, f64)] = &[
        (
            "b1_quarter_car_a",
            "B1 reticulation A, LinearTransformation, 1 ms",
            4.0,
        ),
        (
            "thermostat",
            "thermostat: Boolean and Integer connections, 0.5 s",
            600.0,
        ),
        (
            "functions",
            "Sum and VectorSum functions between 3 FMUs, 10 ms",
            0.2,
        ),
    ];
    let mut table = String::from(
        "| OSP file (tests/python/osp/) | system | macro steps | variables | values compared | differing |\n|---|---|---|---|---|---|\n",
    );
    for &(dir_name, what, stop) in cases {
        let dir = tempfile::tempdir().unwrap();
        let system = cosim_tests::root().join("tests/python/osp").join(dir_name);
        let (theirs, their_steps) = libcosim::run(&system, stop, false, dir.path());
        let columns: Vec<String> = theirs
            .header
            .iter()
            .filter(|h| *h != "time" && !h.ends_with(".time"))
            .cloned()
            .collect();
        let (ours, our_steps) = cosim_run(&system, Some(stop), &columns, &dir.path().join("c"));
        assert_eq!(our_steps, their_steps.len(), "{dir_name}: step counts");
        let skip: Vec<&str> = theirs
            .header
            .iter()
            .filter(|h| h.ends_with(".time"))
            .map(String::as_str)
            .collect();
        let cmp = compare_exact(&ours, &theirs, &skip);
        assert!(
            cmp.n_differing == 0,
            "{dir_name}: {} of {} values differ from libcosim's, first: {:#?}",
            cmp.n_differing,
            cmp.values,
            cmp.differing
        );
        assert!(cmp.rows > 10 && cmp.columns > 3, "{dir_name}: {cmp:?}");
        writeln!(
            table,
            "| `{dir_name}` | {what} | {our_steps} | {} | {} | {} |",
            cmp.columns, cmp.values, cmp.n_differing
        )
        .unwrap();
    }
    cosim_tests::check_doc_block("ssp.md", "libcosim-compat-fixed-step", &table);
}

/// The check that keeps figures in the docs current fails on a figure
/// changed by hand, and rewrites nothing unless asked.
#[test]
fn a_generated_figure_changed_by_hand_fails_the_check() {
    if std::env::var_os("COSIM_BLESS_DOCS").is_some_and(|v| v == "1") {
        return; // (blessing rewrites instead of checking: nothing to test)
    }
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("figures.md");
    let table = "| a | b |\n|---|---|\n| 1 | 2 |\n";
    std::fs::write(
        &doc,
        format!("text\n<!-- generated:t -->\n{table}<!-- end:t -->\nmore\n"),
    )
    .unwrap();
    cosim_tests::check_block_in(&doc, "t", table);
    // One figure typed over.
    let edited = std::fs::read_to_string(&doc)
        .unwrap()
        .replace("| 2 |", "| 3 |");
    std::fs::write(&doc, &edited).unwrap();
    let failed = std::panic::catch_unwind(|| cosim_tests::check_block_in(&doc, "t", table));
    let message = failed.expect_err("a changed figure must fail the check");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("figures.md block 't' differs from what this build gives"),
        "{message}"
    );
    assert_eq!(std::fs::read_to_string(&doc).unwrap(), edited);
}
