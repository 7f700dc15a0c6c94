//! The project's Python environment for the tests: `.venv/` at the
//! workspace root, with the packages of `tests/python/requirements.txt`
//! (FMPy, libcosimpy, PythonFMU, NumPy; maturin, pytest and pandas for the
//! Python package, `pypkg`). Never the user's own Python: the
//! packages go into the venv only.
//!
//! [`ensure`] creates the venv when it is missing or its interpreter no
//! longer runs (`python3 -m venv .venv`), and runs
//! `.venv/bin/python -m pip install -r tests/python/requirements.txt` only
//! when the requirements changed since the last install: `.venv/` keeps a
//! stamp file with a hash of the requirements it installed.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The venv's directory, relative to the workspace root.
pub const DIR: &str = ".venv";
/// The requirements file, relative to the workspace root.
pub const REQUIREMENTS: &str = "tests/python/requirements.txt";
/// The stamp file inside the venv: the hash of the installed requirements.
const STAMP: &str = ".requirements-stamp";
/// Held while creating or installing (concurrent `cargo xtask test` runs).
const LOCK: &str = ".xtask-lock";

/// The venv's interpreter (not resolved: a venv's `python` is a symlink to
/// the base interpreter, and only the venv path sees the venv's packages).
pub fn python(root: &Path) -> PathBuf {
    let venv = root.join(DIR);
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

/// 64-bit FNV-1a: a hash that stays the same across Rust versions
/// (`DefaultHasher` does not promise to).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The stamp's text for these requirements.
pub fn stamp_text(requirements: &[u8]) -> String {
    format!("requirements fnv1a64 {:016x}\n", fnv1a64(requirements))
}

/// Whether the requirements must be installed: no stamp, or one written for
/// other requirements.
pub fn needs_install(stamp: Option<&str>, requirements: &[u8]) -> bool {
    stamp != Some(stamp_text(requirements).as_str())
}

/// Whether `python` starts and has pip (a venv whose creation stopped
/// before `ensurepip` has an interpreter but no pip).
fn runs(python: &Path) -> bool {
    python.exists()
        && Command::new(python)
            .args(["-c", "import pip"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// Stdio that goes to this process's stderr (so that `cargo xtask venv`
/// prints only the interpreter's path on stdout).
fn to_stderr() -> Stdio {
    Stdio::from(io::stderr())
}

/// Holds `.venv/.xtask-lock`.
struct Lock(fs::File);

impl Lock {
    fn acquire(venv: &Path) -> io::Result<Self> {
        fs::create_dir_all(venv)?;
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(venv.join(LOCK))?;
        f.lock()?;
        Ok(Lock(f))
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// `python3 -m venv [--clear] .venv`, with a message naming the Debian
/// package when the `venv` module (or its `ensurepip`) is missing.
fn create(root: &Path, clear: bool) -> io::Result<()> {
    let venv = root.join(DIR);
    eprintln!("xtask: creating {} (python3 -m venv)", venv.display());
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "venv"]);
    if clear {
        cmd.arg("--clear");
    }
    let status = cmd
        .arg(&venv)
        .current_dir(root)
        .stdout(to_stderr())
        .status()
        .map_err(|e| {
            io::Error::other(format!(
                "cannot run python3 ({e}): the tests need Python 3 with pip and venv \
                 on the PATH (Debian/Ubuntu: apt-get install python3 python3-venv)"
            ))
        })?;
    if status.success() && python(root).exists() {
        return Ok(());
    }
    let has_venv = Command::new("python3")
        .args(["-c", "import venv, ensurepip"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if has_venv {
        Err(io::Error::other(format!(
            "python3 -m venv {} failed ({status})",
            venv.display()
        )))
    } else {
        Err(io::Error::other(format!(
            "python3 -m venv {} failed ({status}): this python3 has no venv module \
             (or no ensurepip); on Debian/Ubuntu it comes with the package python3-venv \
             (apt-get install python3-venv), then run the command again",
            venv.display()
        )))
    }
}

/// Makes sure `.venv/` exists, runs, and has the current requirements
/// installed; returns its interpreter (an absolute path when `root` is).
pub fn ensure(root: &Path) -> io::Result<PathBuf> {
    let venv = root.join(DIR);
    let py = python(root);
    let _lock = Lock::acquire(&venv)?;
    if !runs(&py) {
        // Missing, half made, or its base interpreter is gone: (re)create it.
        create(root, fs::symlink_metadata(&py).is_ok())?;
        if !runs(&py) {
            return Err(io::Error::other(format!(
                "{} does not run after creating the venv",
                py.display()
            )));
        }
    }
    let req_path = root.join(REQUIREMENTS);
    let requirements = fs::read(&req_path)
        .map_err(|e| io::Error::other(format!("reading {}: {e}", req_path.display())))?;
    let stamp_path = venv.join(STAMP);
    let stamp = fs::read_to_string(&stamp_path).ok();
    if !needs_install(stamp.as_deref(), &requirements) {
        return Ok(py);
    }
    eprintln!(
        "xtask: installing {REQUIREMENTS} into {} (pip, from PyPI)",
        venv.display()
    );
    let started = Instant::now();
    let status = Command::new(&py)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&req_path)
        // A user configuration asking for `--user` installs would fail in a venv.
        .env("PIP_USER", "0")
        .current_dir(root)
        .stdout(to_stderr())
        .status()?;
    if !status.success() {
        return Err(io::Error::other(format!(
            "{} -m pip install -r {REQUIREMENTS} failed ({status})",
            py.display()
        )));
    }
    let tmp = stamp_path.with_extension("tmp");
    fs::write(&tmp, stamp_text(&requirements))?;
    fs::rename(&tmp, &stamp_path)?;
    eprintln!(
        "xtask: installed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(py)
}

/// The arguments of `cargo test` for `cargo xtask test <args>`: `args`
/// after `--workspace`, unless they choose the packages themselves
/// (`-p`, `--package`, `--manifest-path`, `--workspace`, `--all`) before
/// a `--`.
pub fn cargo_test_args(args: &[String]) -> Vec<String> {
    let selects = args.iter().take_while(|a| a.as_str() != "--").any(|a| {
        a == "--workspace"
            || a == "--all"
            || a.starts_with("-p")
            || a.starts_with("--package")
            || a.starts_with("--manifest-path")
    });
    let mut out = vec!["test".to_string()];
    if !selects {
        out.push("--workspace".to_string());
    }
    out.extend(args.iter().cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_the_published_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn installs_without_a_stamp_or_when_the_requirements_changed() {
        let req = b"fmpy==0.3.32\nnumpy\n";
        assert!(needs_install(None, req));
        let stamp = stamp_text(req);
        assert!(!needs_install(Some(&stamp), req));
        assert!(needs_install(Some(&stamp), b"fmpy==0.3.33\nnumpy\n"));
        assert!(needs_install(Some(&stamp), b"fmpy==0.3.32\n"));
        assert!(needs_install(Some(""), req));
        assert!(needs_install(Some("garbage\n"), req));
    }

    #[test]
    fn stamp_survives_a_write_and_read() {
        let dir = std::env::temp_dir().join(format!("xtask-stamp-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(STAMP);
        let req = b"pythonfmu==0.7.0\n";
        fs::write(&path, stamp_text(req)).unwrap();
        let read = fs::read_to_string(&path).ok();
        fs::remove_dir_all(&dir).unwrap();
        assert!(!needs_install(read.as_deref(), req));
    }

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn cargo_test_runs_the_workspace_unless_told_which_packages() {
        assert_eq!(cargo_test_args(&[]), strings(&["test", "--workspace"]));
        assert_eq!(
            cargo_test_args(&strings(&["--", "--nocapture"])),
            strings(&["test", "--workspace", "--", "--nocapture"])
        );
        assert_eq!(
            cargo_test_args(&strings(&["--test", "interop"])),
            strings(&["test", "--workspace", "--test", "interop"])
        );
        assert_eq!(
            cargo_test_args(&strings(&["-p", "cosim-tests", "--test", "interop"])),
            strings(&["test", "-p", "cosim-tests", "--test", "interop"])
        );
        assert_eq!(
            cargo_test_args(&strings(&["--package=xtask"])),
            strings(&["test", "--package=xtask"])
        );
        // After `--` the arguments are the test binaries', not cargo's.
        assert_eq!(
            cargo_test_args(&strings(&["--", "-p"])),
            strings(&["test", "--workspace", "--", "-p"])
        );
    }
}
