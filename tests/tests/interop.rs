//! Interoperability of the project's FMUs with independent tools: every
//! packaged FMU passes FMPy's validation and simulates in FMPy matching the
//! analytic solution; the FMI 2.0 builds load and step in libcosim. The
//! checks live in `tests/python/test_fmus.py`; this test runs them so that
//! `cargo test --workspace` covers them. It needs Python 3 with the packages
//! of `tests/python/requirements.txt` (CI installs them) and fails, saying
//! so, when they are missing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

#[test]
fn project_fmus_pass_fmpy_validation_and_run_in_fmpy_and_libcosim() {
    cosim_tests::fmus();
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python)
        .args(["-c", "import fmpy, libcosimpy, numpy"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        probe.status.success(),
        "FMPy/libcosimpy are not installed for {python}: pip install -r tests/python/requirements.txt\n{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let out = Command::new(&python)
        .arg("tests/python/test_fmus.py")
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
