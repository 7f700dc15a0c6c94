//! Cross-check against an independent master (issue #4): benchmark B1,
//! reticulation A, linear, Jacobi, zero-order hold, on the FMI 2.0 FMUs, run
//! by `cosim` (scenarios/b1_quarter_car_a.toml) and by libcosim's fixed-step
//! algorithm (tests/python/libcosim_b1.py: libcosimpy, the same FMUs, the
//! same connections from tests/python/osp/b1_quarter_car_a, the same step).
//!
//! # The same time grid
//!
//! libcosim keeps time as integer nanoseconds (include/cosim/time.hpp:
//! `duration` is `std::chrono::duration<int64_t, std::nano>`), passes
//! `to_double_time_point(t_n) = t_n / 1e9` as the communication point and
//! `to_double_duration(h, t_n) = double(t_n + h) - double(t_n)` as the step
//! size (src/cosim/fmi/v2/fmu.cpp, `slave_instance::do_step`). cosim does
//! the same (crates/cosim-core/src/time.rs), so both masters hand the FMUs
//! the same doubles at every step and the traces must be bit-identical,
//! every value of every row: at 1 ms (where `t0 + n h` in double precision,
//! cosim's grid before, differed from libcosim's by an ulp after a few
//! steps) and at 2^-9 s = 1 953 125 ns (exact in binary and in nanoseconds
//! alike).
//!
//! Needs python3 with libcosimpy (`PYTHON` names another interpreter): the
//! tests fail, saying so, when either is missing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Stop time of the runs.
const STOP: f64 = 4.0;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Fails (never skips) unless the interpreter of the tests
/// (`cosim_tests::python`) runs and imports libcosimpy.
fn require_libcosimpy() {
    let python = cosim_tests::python();
    let py = python.display();
    let out = Command::new(&python)
        .args(["-c", "import libcosimpy.CosimExecution"])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `{py}` ({e}): the libcosim cross-check needs libcosimpy \
                 (`cargo xtask test` installs it into .venv/; PYTHON names another interpreter)"
            )
        });
    assert!(
        out.status.success(),
        "`{py}` cannot import libcosimpy: the libcosim cross-check needs it \
         (`cargo xtask test` installs it into .venv/)\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CSV of numbers with a header row.
struct Csv {
    names: Vec<String>,
    rows: Vec<Vec<f64>>,
}

fn read_csv(path: &Path) -> Csv {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut lines = text.lines();
    let names: Vec<String> = lines
        .next()
        .unwrap_or_else(|| panic!("{} is empty", path.display()))
        .split(',')
        .map(str::to_string)
        .collect();
    let rows: Vec<Vec<f64>> = lines
        .enumerate()
        .map(|(i, line)| {
            let row: Vec<f64> = line
                .split(',')
                .map(|v| {
                    v.parse().unwrap_or_else(|e| {
                        panic!("{}:{}: bad number {v:?}: {e}", path.display(), i + 2)
                    })
                })
                .collect();
            assert_eq!(
                row.len(),
                names.len(),
                "{}:{}: wrong number of fields",
                path.display(),
                i + 2
            );
            row
        })
        .collect();
    Csv { names, rows }
}

/// Runs `cosim run scenarios/b1_quarter_car_a.toml --stop 4 [--step h]`.
fn run_cosim(step: Option<f64>, dir: &Path) -> Csv {
    fmu_kit::dist::ensure_built().expect("building the project FMUs (cargo xtask fmus)");
    let out = dir.join("cosim");
    let scenario = root().join("scenarios").join("b1_quarter_car_a.toml");
    let mut cmd = Command::new(cosim_tests::cosim_bin());
    cmd.arg("run")
        .arg(&scenario)
        .args(["--stop", &STOP.to_string(), "--out"])
        .arg(&out)
        .current_dir(root());
    if let Some(h) = step {
        cmd.args(["--step", &h.to_string()]);
    }
    let res = cmd.output().expect("running cosim");
    assert!(
        res.status.success(),
        "cosim run failed ({}):\n{}",
        res.status,
        String::from_utf8_lossy(&res.stderr)
    );
    read_csv(&out.join("trace.csv"))
}

/// Runs tests/python/libcosim_b1.py with `--stop 4 --step h`.
fn run_libcosim(step: f64, dir: &Path) -> Csv {
    fmu_kit::dist::ensure_built().expect("building the project FMUs (cargo xtask fmus)");
    require_libcosimpy();
    let out = dir.join("libcosim.csv");
    let script = root().join("tests").join("python").join("libcosim_b1.py");
    let res = Command::new(cosim_tests::python())
        .arg(&script)
        .arg(&out)
        .args(["--stop", &STOP.to_string(), "--step", &step.to_string()])
        .current_dir(root())
        .output()
        .expect("running tests/python/libcosim_b1.py");
    assert!(
        res.status.success(),
        "tests/python/libcosim_b1.py failed ({}):\n{}",
        res.status,
        String::from_utf8_lossy(&res.stderr)
    );
    read_csv(&out)
}

#[test]
fn b1_a_jacobi_zoh_1ms_is_bit_identical_to_libcosim() {
    let h = 1e-3;
    let dir = tempfile::tempdir().expect("temporary directory");
    let ours = run_cosim(None, dir.path());
    let theirs = run_libcosim(h, dir.path());
    assert_bit_identical(&ours, &theirs, h, "1 ms");
    // The grid prints as libcosim's nanoseconds: 0.009, not 0.009000000000000001.
    let t9 = ours.rows[9][0];
    assert_eq!(t9.to_string(), "0.009");
}

/// Every value of every row the same bits, rows every `h` from 0 to STOP.
fn assert_bit_identical(ours: &Csv, theirs: &Csv, h: f64, what: &str) {
    assert_eq!(
        ours.names, theirs.names,
        "cosim's and libcosim's columns differ"
    );
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let n = (STOP / h).round() as usize + 1;
    assert_eq!(ours.rows.len(), n, "cosim: expected {n} rows");
    assert_eq!(theirs.rows.len(), n, "libcosim: expected {n} rows");
    let mut differing = Vec::new();
    for (ra, rb) in ours.rows.iter().zip(&theirs.rows) {
        for (j, (x, y)) in ra.iter().zip(rb).enumerate() {
            if x.to_bits() != y.to_bits() {
                differing.push(format!(
                    "{} at t = {:?}: cosim {x:?}, libcosim {y:?}",
                    ours.names[j], ra[0]
                ));
            }
        }
    }
    println!(
        "B1 A, h = {what}, {n} rows x {} columns: {} values differ",
        ours.names.len(),
        differing.len()
    );
    assert!(
        differing.is_empty(),
        "with the same communication points and step sizes, cosim and libcosim should produce \
         bit-identical traces, but {} values differ (first 20):\n{}",
        differing.len(),
        differing
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn b1_a_on_a_binary_and_nanosecond_exact_grid_is_bit_identical_to_libcosim() {
    // 2^-9 s = 1 953 125 ns: n h is exact both in binary and in whole
    // nanoseconds, so the masters' communication points and step sizes are
    // the same doubles and nothing is left to differ.
    let h = 1.0 / 512.0;
    let dir = tempfile::tempdir().expect("temporary directory");
    let ours = run_cosim(Some(h), dir.path());
    let theirs = run_libcosim(h, dir.path());
    assert_bit_identical(&ours, &theirs, h, "2^-9 s");
}
