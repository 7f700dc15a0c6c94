//! libcosim-compatibility suite, multi-rate: systems whose simulators step
//! at different rates (OSP `<Simulator stepSize=>`, SSP `<osp:StepSizeHint>`
//! over `<osp:FixedStepAlgorithm baseStepSize=>`), written in libcosim's
//! formats on the project's FMI 2.0 FMUs, run unchanged by `cosim` and by
//! libcosim (`tests/python/libcosim_run.py`), and compared value by value:
//! every variable libcosim's trace has, at every macro step, bit for bit.
//!
//! libcosim's `fixed_step_algorithm` (src/cosim/algorithm/
//! fixed_step_algorithm.cpp) steps a simulator of decimation factor `k`
//! at the macro steps whose counter is a multiple of `k`, over `k` base
//! steps, and after macro step `n` copies an output to an input only when
//! `n` is a multiple of the lcm of the two simulators' factors (through a
//! function: of the source's and the function's, the lcm of the factors
//! of the simulators it feeds). The cases: factors 1, 2 and 4 (each
//! divides the next) with a Sum fed at two rates; factors 1, 2 and 3, where
//! 2 and 3 exchange only every 6th macro step, directly and through a Sum;
//! and an SSP with hints of 3e-4 s (3, from whole nanoseconds) and 2.5e-4 s
//! (2, rounded down) at 1e-4 s, coupling factors 3 and 2.
//!
//! The figures go to `docs/ssp.md` ("Compatibility with libcosim:
//! multi-rate"); `COSIM_BLESS_DOCS=1` rewrites them. Needs libcosimpy
//! (`cargo xtask test` installs it into `.venv/`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use cosim_tests::libcosim::{self, Trace};

/// One system run by both tools.
struct Case {
    /// What the case exercises, for the table.
    name: &'static str,
    /// The system file, relative to the workspace root.
    file: &'static str,
    /// An SSP file (else OSP).
    ssp: bool,
    /// Stop time, s: a multiple of every simulator's own step, so that
    /// neither tool has a step cut short at the end.
    stop: f64,
    /// The step multiple of each simulator, as libcosim reads the file.
    multiples: &'static [(&'static str, u64)],
}

const CASES: [Case; 3] = [
    Case {
        name: "multiples 1, 2, 4; a Sum fed at two rates",
        file: "tests/python/osp/multirate/OspSystemStructure.xml",
        ssp: false,
        stop: 1.2,
        multiples: &[("mass", 1), ("spring", 2), ("damper", 4)],
    },
    Case {
        name: "multiples 1, 2, 3 (2 and 3 exchange every 6th step); a Sum",
        file: "tests/python/osp/multirate_lcm/OspSystemStructure.xml",
        ssp: false,
        stop: 1.2,
        multiples: &[("spring", 1), ("mass", 2), ("damper", 3)],
    },
    Case {
        name: "step size hints 3e-4 s and 2.5e-4 s at 1e-4 s (multiples 3, 2)",
        file: "tests/python/ssp/multirate/SystemStructure.ssd",
        ssp: true,
        stop: 0.03,
        multiples: &[("chassis", 1), ("wheel", 3), ("load", 2)],
    },
];

/// What one case gave.
struct Figures {
    steps: usize,
    columns: usize,
    values: usize,
    differing: usize,
}

/// libcosim's `<simulator>.time` columns: the FMUs' independent variable,
/// which FMIL lists among the variables and cosim does not trace.
fn time_columns(case: &Case) -> Vec<String> {
    case.multiples
        .iter()
        .map(|(s, _)| format!("{s}.time"))
        .collect()
}

fn run_case(case: &Case, dir: &Path) -> Figures {
    let path = cosim_tests::root().join(case.file);
    let (theirs, steps_ns) = libcosim::run(&path, case.stop, case.ssp, dir);
    let skip = time_columns(case);
    let skip: Vec<&str> = skip.iter().map(String::as_str).collect();

    // Every variable of libcosim's trace, by name.
    let out = dir.join("cosim");
    let stop = case.stop.to_string();
    let out_s = out.display().to_string();
    let mut args = vec![
        "run",
        case.file,
        "--stop",
        &stop,
        "-o",
        &out_s,
        "--no-progress",
        "--output-variables",
    ];
    let variables: Vec<&str> = theirs
        .header
        .iter()
        .map(String::as_str)
        .filter(|h| *h != "time" && !skip.contains(h))
        .collect();
    args.extend(&variables);
    let res = cosim_tests::cosim(&args);
    assert!(
        res.status.success(),
        "cosim run {}: {}",
        case.file,
        String::from_utf8_lossy(&res.stderr)
    );
    let ours = Trace::read(&out.join("trace.csv"));

    // The same grid: libcosim's base step every macro step, as many rows.
    let base = steps_ns[0];
    assert!(steps_ns.iter().all(|&s| s == base), "{}", case.file);
    assert_eq!(
        steps_ns.len() as i64 * base,
        (case.stop * 1e9).round() as i64,
        "{}",
        case.file
    );

    // The same decimation: libcosim's `<sim>.time` (the FMU's time after
    // its last completed step) moves every k-th row, and cosim's summary
    // counts steps / k doStep calls.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for &(sim, k) in case.multiples {
        let t = theirs.values(&format!("{sim}.time"));
        let moves = t.windows(2).filter(|w| w[0] != w[1]).count();
        assert_eq!(moves, steps_ns.len() / k as usize, "{} {sim}", case.file);
        let calls = summary["subsystems"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == sim)
            .unwrap_or_else(|| panic!("{sim} not in the summary"))["calls"]["do_step"]
            .as_u64()
            .unwrap();
        assert_eq!(
            calls as usize, moves,
            "{} {sim}: cosim's doStep calls",
            case.file
        );
    }

    let cmp = libcosim::compare_exact(&ours, &theirs, &skip);
    assert!(
        cmp.n_differing == 0,
        "{}: {} of {} values differ from libcosim's:\n{}",
        case.file,
        cmp.n_differing,
        cmp.values,
        cmp.differing.join("\n")
    );
    assert_eq!(cmp.columns, variables.len());
    Figures {
        steps: steps_ns.len(),
        columns: cmp.columns,
        values: cmp.values,
        differing: cmp.n_differing,
    }
}

#[test]
fn multirate_systems_are_bit_identical_to_libcosim() {
    let mut table = String::from(
        "| case | file | macro steps | variables compared | values compared | differing values |\n\
         |---|---|---|---|---|---|\n",
    );
    for case in &CASES {
        let dir = tempfile::tempdir().unwrap();
        let f = run_case(case, dir.path());
        table.push_str(&format!(
            "| {} | `{}` | {} | {} | {} | {} |\n",
            case.name, case.file, f.steps, f.columns, f.values, f.differing
        ));
    }
    cosim_tests::check_doc_block("ssp.md", "libcosim-compat-multirate", &table);
}
