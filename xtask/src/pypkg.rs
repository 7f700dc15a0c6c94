//! The Python package `cosim` (`crates/cosim-py`, issue 24) in the test
//! command: [`build_wheel`] builds its wheel with the venv's maturin
//! (`maturin build --release`, abi3: one wheel for CPython >= 3.9) into
//! `target/wheels/cosim-py/`, [`install`] puts it into the project's venv
//! (`pip install --force-reinstall --no-deps`), and [`pytest`] runs
//! `tests/python/cosim_py/` with it, giving the tests the wheel
//! (`COSIM_WHEEL`, for the fresh-venv test) and the `cosim` binary
//! (`COSIM_BIN`, built here in release: the tests compare with it).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The package's crate, relative to the workspace root.
pub const CRATE: &str = "crates/cosim-py";
/// Where the wheel goes, relative to the workspace root.
pub const WHEEL_DIR: &str = "target/wheels/cosim-py";
/// The pytest directory, relative to the workspace root.
pub const TESTS: &str = "tests/python/cosim_py";
/// FMPy against `cosim` on the kit's Model Exchange FMUs and its FMI 3
/// event-mode FMUs (need the `cosim` binary only, run with the package's
/// tests).
pub const FMPY_TESTS: [&str; 2] = [
    "tests/python/test_fmpy_model_exchange.py",
    "tests/python/test_fmpy_events.py",
];

/// The one `.whl` file in `dir`, if exactly one is there.
pub fn only_wheel(dir: &Path) -> io::Result<PathBuf> {
    let wheels: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    match wheels.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(io::Error::other(format!(
            "expected one wheel in {}, found {}",
            dir.display(),
            wheels.len()
        ))),
    }
}

fn check(status: std::process::ExitStatus, what: &str) -> io::Result<()> {
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("{what} failed ({status})")))
    }
}

/// Builds the wheel with `python -m maturin` (maturin comes with the
/// venv's requirements); returns its path.
pub fn build_wheel(root: &Path, python: &Path) -> io::Result<PathBuf> {
    let dir = root.join(WHEEL_DIR);
    // Only this build's wheel in the directory.
    if dir.exists() {
        fs::remove_dir_all(&dir)?;
    }
    fs::create_dir_all(&dir)?;
    eprintln!("xtask: building the Python wheel (maturin build --release, {CRATE})");
    let started = Instant::now();
    let status = Command::new(python)
        .args(["-m", "maturin", "build", "--release", "-m"])
        .arg(root.join(CRATE).join("Cargo.toml"))
        .arg("-o")
        .arg(&dir)
        // maturin looks for an interpreter for the tags; an abi3 wheel
        // needs only one, the venv's.
        .arg("--interpreter")
        .arg(python)
        .current_dir(root)
        .status()?;
    check(status, "maturin build")?;
    let wheel = only_wheel(&dir)?;
    eprintln!(
        "xtask: built {} in {:.1} s",
        wheel.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(wheel)
}

/// Installs `wheel` into the venv of `python`, replacing any earlier build.
pub fn install(root: &Path, python: &Path, wheel: &Path) -> io::Result<()> {
    let status = Command::new(python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--force-reinstall",
            "--no-deps",
        ])
        .arg(wheel)
        .env("PIP_USER", "0")
        .current_dir(root)
        .status()?;
    check(status, "pip install of the wheel")
}

/// Builds the release `cosim` binary the tests compare with; returns it.
pub fn cosim_binary(root: &Path) -> io::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("xtask: building cosim (cargo build --release -p cosim-cli)");
    let status = Command::new(&cargo)
        .args(["build", "--release", "-p", "cosim-cli"])
        .current_dir(root)
        .status()?;
    check(status, "building cosim")?;
    Ok(root.join("target/release/cosim"))
}

/// Runs pytest on the package's tests; `Ok(false)` when a test failed.
pub fn pytest(
    root: &Path,
    python: &Path,
    wheel: &Path,
    cosim: &Path,
    tmp: &Path,
) -> io::Result<bool> {
    eprintln!(
        "xtask: {} -m pytest -o tmp_path_retention_policy=failed {TESTS} {}",
        python.display(),
        FMPY_TESTS.join(" ")
    );
    // (A passing test's `tmp_path` is removed: pytest keeps them all by
    // default, some 300 MB a run here, a fresh virtual environment and a
    // sweep among them.)
    let status = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .args(["-o", "tmp_path_retention_policy=failed", TESTS])
        .args(FMPY_TESTS)
        .env("COSIM_WHEEL", wheel)
        .env("COSIM_BIN", cosim)
        .env("TMPDIR", tmp)
        .current_dir(root)
        .status()?;
    Ok(status.success())
}

/// Wheel, install, `cosim` binary, pytest (its temporary directory in
/// `tmp`): the whole of the package's tests (`cargo xtask test` without
/// arguments, `cargo xtask test-python`).
pub fn test(root: &Path, python: &Path, tmp: &Path) -> io::Result<bool> {
    let wheel = build_wheel(root, python)?;
    install(root, python, &wheel)?;
    let cosim = cosim_binary(root)?;
    pytest(root, python, &wheel, &cosim, tmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_only_wheel_and_refuses_none_or_two() {
        let dir = std::env::temp_dir().join(format!("xtask-wheels-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        assert!(only_wheel(&dir).is_err());
        let a = dir.join("cosim-0.1.0-cp39-abi3-manylinux_2_34_x86_64.whl");
        fs::write(&a, b"").unwrap();
        fs::write(dir.join("notes.txt"), b"").unwrap();
        assert_eq!(only_wheel(&dir).unwrap(), a);
        fs::write(dir.join("cosim-0.0.9-cp39-abi3-linux_x86_64.whl"), b"").unwrap();
        assert!(only_wheel(&dir).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
