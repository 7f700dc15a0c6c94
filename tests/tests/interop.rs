//! Interoperability of the project's FMUs with independent tools: every
//! FMU the project builds (`fmus/dist`, CGain, the benchmark's C FMU, as
//! FMI 2.0 and 3.0, and the hand-written `tests/data/hostile_fmu` and
//! `tests/data/feedthrough_fmu`) passes
//! FMPy's validation and loads in FMPy; the packaged FMUs and CGain
//! simulate in FMPy matching the analytic solution; the FMI 2.0 builds load
//! and step in libcosim. The checks live in `tests/python/test_fmus.py`;
//! this test runs them (naming the FMUs built outside `fmus/dist` in
//! `COSIM_CGAIN_FMI2`, `COSIM_CGAIN_FMI3`, `COSIM_HOSTILE_FMU`,
//! `COSIM_FEEDTHROUGH_FMU`) so that
//! `cargo test --workspace` covers them. It needs the project's Python
//! environment with the packages of `tests/python/requirements.txt`
//! (`cosim_tests::python`: `cargo xtask test` makes it) and fails, saying
//! so, when they are missing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

#[test]
fn project_fmus_pass_fmpy_validation_and_run_in_fmpy_and_libcosim() {
    cosim_tests::fmus();
    let python = cosim_tests::python();
    let probe = Command::new(&python)
        .args(["-c", "import fmpy, libcosimpy, numpy"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        probe.status.success(),
        "FMPy/libcosimpy are not installed for {}: run `cargo xtask test` (it installs \
         tests/python/requirements.txt into .venv/)\n{}",
        python.display(),
        String::from_utf8_lossy(&probe.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let hostile = cosim_tests::hostile_fmu(dir.path());
    let feedthrough = cosim_tests::feedthrough_fmu(dir.path());
    let out = Command::new(&python)
        .arg("tests/python/test_fmus.py")
        .env("COSIM_CGAIN_FMI2", cosim_cgain::FMI2_FMU)
        .env("COSIM_CGAIN_FMI3", cosim_cgain::FMI3_FMU)
        .env("COSIM_HOSTILE_FMU", &hostile)
        .env("COSIM_FEEDTHROUGH_FMU", &feedthrough)
        .current_dir(cosim_tests::root())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "interop tests failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

/// A third-party FMU (PythonFMU, tests/python/pythonfmu/Damper.py) coupled
/// to the project's thermostat through Real, Boolean and Integer
/// connections: its output must follow its equation from the inputs the
/// trace says it received, row by row.
#[test]
fn pythonfmu_fmu_couples_through_real_boolean_and_integer_inputs() {
    cosim_tests::fmus();
    let python = cosim_tests::python();
    let dir = tempfile::tempdir().unwrap();
    let build = Command::new(&python)
        .args(["-m", "pythonfmu", "build", "-f"])
        .arg(cosim_tests::root().join("tests/python/pythonfmu/Damper.py"))
        .arg("-d")
        .arg(dir.path())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        build.status.success(),
        "building the PythonFMU FMU failed (`cargo xtask test` installs PythonFMU into .venv/):\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    // PythonFMU binaries refer to libpython's data symbols without linking
    // it: outside a Python process the library must be preloaded. A venv's
    // interpreter reports its base interpreter's LIBDIR, so this is the
    // base's libpython; the FMU carries its own copy of the pythonfmu
    // package and needs nothing of the venv's site-packages.
    let libpython = Command::new(&python)
        .args([
            "-c",
            "import os, sysconfig; print(os.path.join(sysconfig.get_config_var('LIBDIR'), sysconfig.get_config_var('LDLIBRARY')))",
        ])
        .output()
        .unwrap();
    let libpython = String::from_utf8_lossy(&libpython.stdout)
        .trim()
        .to_string();
    assert!(
        std::path::Path::new(&libpython).is_file(),
        "{} has no shared libpython ({libpython}): PythonFMU FMUs need one",
        python.display()
    );

    let dist = cosim_tests::fmus().join("fmi2");
    let scenario = dir.path().join("thermostat_damper.toml");
    let text = std::fs::read_to_string(cosim_tests::scenario("thermostat.toml"))
        .unwrap()
        .replace("\"../fmus/dist/fmi2/", &format!("\"{}/", dist.display()))
        .replace(
            "[outputs]\nvariables = [\"room.heater_on\", \"room.level\", \"room.T\", \"controller.*\"]\n",
            "",
        );
    let text = format!(
        "{text}
[[subsystems]]
name = \"damper\"
fmu = \"Damper.fmu\"

[[connections]]
from = \"room.T\"
to = \"damper.v\"

[[connections]]
from = \"controller.heater_on\"
to = \"damper.enable\"

[[connections]]
from = \"controller.level\"
to = \"damper.gear\"

[outputs]
variables = [\"room.T\", \"controller.*\", \"damper.*\"]
"
    );
    std::fs::write(&scenario, text).unwrap();
    let out_dir = dir.path().join("out");
    let out = Command::new(cosim_tests::cosim_bin())
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(&out_dir)
        .env("LD_PRELOAD", &libpython)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cosim run failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = cosim_tests::Table::read(&out_dir.join("trace.csv")).unwrap();
    let col = |n: &str| trace.column(n).unwrap_or_else(|| panic!("no column {n}"));
    let (f, v, enable, gear) = (
        col("damper.F"),
        col("damper.v"),
        col("damper.enable"),
        col("damper.gear"),
    );
    let (room_t, on, level) = (
        col("room.T"),
        col("controller.heater_on"),
        col("controller.level"),
    );
    assert_eq!(f.len(), 1201);
    let mut saw_off = false;
    for k in 1..f.len() {
        // Jacobi: the inputs of the step ending at row k are the coupled
        // outputs of row k - 1.
        assert_eq!(v[k], room_t[k - 1], "row {k}: damper.v");
        assert_eq!(enable[k], on[k - 1], "row {k}: damper.enable");
        assert_eq!(gear[k], level[k - 1], "row {k}: damper.gear");
        let want = if enable[k] != 0.0 {
            -2.0 * gear[k] * v[k]
        } else {
            0.0
        };
        assert_eq!(f[k], want, "row {k}: damper.F");
        saw_off |= enable[k] == 0.0;
    }
    assert!(
        saw_off,
        "the heater never switched off: the Boolean path is untested"
    );
    assert!(gear.contains(&2.0) && gear.contains(&1.0));
}
