//! A newcomer's first command on a fresh clone: a shipped scenario run
//! before the project's FMUs are built says the one command that builds
//! them (README.md, "Quick start").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

use cosim_tests::{cosim_bin, root};

/// A clone of this checkout's committed tree (local, hard-linked: a
/// second or so), in which nothing has been built.
fn fresh_clone(into: &Path) -> std::path::PathBuf {
    let clone = into.join("cosim");
    let out = Command::new("git")
        .args(["clone", "--quiet"])
        .arg(root())
        .arg(&clone)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git clone of {}: {}",
        root().display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !clone.join("fmus/dist").exists(),
        "fmus/dist is not tracked"
    );
    clone
}

#[test]
fn a_shipped_scenario_on_a_fresh_clone_names_the_command_that_builds_its_fmus() {
    let dir = tempfile::tempdir().unwrap();
    let clone = fresh_clone(dir.path());
    let shown = std::fs::canonicalize(&clone).unwrap();
    let help = format!(
        "help: this is one of the project's own FMUs, which are built, not checked in: run `cargo xtask fmus` in {} (it builds them all into fmus/dist/; `cargo xtask demo` does too)",
        shown.display()
    );
    // A scenario, as the README's "Using it" shows it, and a single FMU.
    for args in [
        vec!["run", "scenarios/b1_quarter_car_a.toml"],
        vec!["check", "scenarios/b3_three_mass_hierarchical.toml"],
        vec!["run", "fmus/dist/fmi2/Dahlquist.fmu"],
    ] {
        let mut command = Command::new(cosim_bin());
        command.args(&args).current_dir(&clone);
        if args[0] == "run" {
            command.arg("--out").arg(dir.path().join("out"));
        }
        let out = command.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("does not exist"), "{args:?}: {err}");
        assert!(err.contains(&help), "{args:?}: {err}");
    }
    // Outside a checkout the FMUs are the user's: no such help.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("scenarios")).unwrap();
    std::fs::copy(
        clone.join("scenarios/b1_quarter_car_a.toml"),
        elsewhere.join("scenarios/b1.toml"),
    )
    .unwrap();
    let out = Command::new(cosim_bin())
        .args(["check", "scenarios/b1.toml"])
        .current_dir(&elsewhere)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("does not exist") && !err.contains("cargo xtask"),
        "{err}"
    );
}
