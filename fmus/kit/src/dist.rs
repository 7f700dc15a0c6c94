//! Keeps `fmus/dist` (the packaged project FMUs) up to date for tests.
//!
//! [`ensure_built`] may be called by many test processes at once: it takes
//! an exclusive lock on `fmus/dist/.lock` (`std::fs::File::lock`), and if
//! `fmus/dist/.stamp` is missing or older than any source of the kit, the
//! models or the xtask, it runs `cargo run -p xtask --release -- fmus` (with
//! `FMU_KIT_DIST_LOCK_HELD=1` so the xtask does not wait for the lock its
//! parent holds).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// Name of the stamp file written by `cargo xtask fmus` when it has finished.
pub const STAMP: &str = ".stamp";
/// Name of the lock file.
pub const LOCK: &str = ".lock";
/// Environment variable telling the xtask that its caller holds the lock.
pub const LOCK_HELD_ENV: &str = "FMU_KIT_DIST_LOCK_HELD";

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    let kit = Path::new(env!("CARGO_MANIFEST_DIR"));
    kit.parent()
        .and_then(Path::parent)
        .map_or_else(|| kit.to_path_buf(), Path::to_path_buf)
}

/// `fmus/dist`.
pub fn dist_dir() -> PathBuf {
    workspace_root().join("fmus").join("dist")
}

/// Path of a packaged FMU with a Co-Simulation interface (and maybe Model
/// Exchange too): `fmus/dist/fmi2/<Model>.fmu`, `fmus/dist/fmi3/<Model>.fmu`.
pub fn fmu_path(version: crate::FmiVersion, model: &str) -> PathBuf {
    dist_dir().join(version.tag()).join(format!("{model}.fmu"))
}

/// Path of a packaged Model Exchange only FMU (no `<CoSimulation>`):
/// `fmus/dist/me/fmi2/<Model>.fmu`, `fmus/dist/me/fmi3/<Model>.fmu`; apart
/// from `fmi2/` and `fmi3/`, whose FMUs tools and tests load as
/// co-simulation FMUs (libcosim, FMPy's co-simulation runs in
/// `tests/python`).
pub fn model_exchange_fmu_path(version: crate::FmiVersion, model: &str) -> PathBuf {
    dist_dir()
        .join("me")
        .join(version.tag())
        .join(format!("{model}.fmu"))
}

/// Where `cargo xtask fmus` packages the full build of `spec`: [`fmu_path`],
/// or [`model_exchange_fmu_path`] for a Model Exchange only model (a
/// Scheduled Execution only model goes to [`fmu_path`]: `fmi3/`).
pub fn packaged_path(version: crate::FmiVersion, spec: &crate::ModelSpec) -> PathBuf {
    if spec.has_co_simulation() || !spec.has_model_exchange() {
        fmu_path(version, spec.name)
    } else {
        model_exchange_fmu_path(version, spec.name)
    }
}

/// Path of a capability variant, `<Model>-<suffix>.fmu`:
/// - FMI 2 variants ([`Variant::RESTRICTED`](crate::Variant::RESTRICTED)) in
///   `fmus/dist/variants/`: `variants/TwoMassS1-nostate.fmu`;
/// - FMI 3 variants ([`Variant::FMI3_RESTRICTED`](crate::Variant::FMI3_RESTRICTED)),
///   whose suffix names the version, beside the full FMI 3 builds in
///   `fmus/dist/fmi3/`: `fmi3/TwoMassS1-fmi3-no-intermediate-update.fmu`
///   (`fmus/dist/variants/` holds FMI 2 FMUs only: tools that import FMI 2
///   only, such as libcosim in `tests/python`, load every FMU there).
///
/// - quirk builds ([`Variant::QUIRKS`](crate::Variant::QUIRKS), FMI 2 and
///   FMI 3, the latter with `fmi3-` in the suffix) in `fmus/dist/quirks/`:
///   `quirks/Integrator-resets-in-setup.fmu`,
///   `quirks/Integrator-fmi3-freezes-without-no-set-prior.fmu` (apart, so
///   that tools and tests that load every FMU of a folder never load one
///   that misbehaves on purpose, e.g. crashes its process at exit).
///
/// [`Variant::version`](crate::Variant::version) tells which.
pub fn variant_path(model: &str, variant: crate::Variant) -> PathBuf {
    let dir = match (variant.quirk(), variant.version()) {
        (Some(_), _) => dist_dir().join("quirks"),
        (None, Some(crate::FmiVersion::Fmi3)) => dist_dir().join(crate::FmiVersion::Fmi3.tag()),
        (None, _) => dist_dir().join("variants"),
    };
    dir.join(format!("{model}-{}.fmu", variant.suffix()))
}

/// Directory of the reference CSVs.
pub fn references_dir() -> PathBuf {
    dist_dir().join("references")
}

fn newest_mtime(dir: &Path, newest: &mut SystemTime) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let ty = entry.file_type()?;
        if ty.is_dir() {
            newest_mtime(&path, newest)?;
        } else if path.extension().is_some_and(|e| e == "rs" || e == "toml") {
            let m = entry.metadata()?.modified()?;
            if m > *newest {
                *newest = m;
            }
        }
    }
    Ok(())
}

/// The newest modification time of the sources `fmus/dist` is made from:
/// `src/` and `Cargo.toml` of `fmus/kit`, `fmus/models` and `xtask`.
pub fn newest_source(root: &Path) -> io::Result<SystemTime> {
    let mut newest = SystemTime::UNIX_EPOCH;
    for dir in ["fmus/kit", "fmus/models", "xtask"] {
        let d = root.join(dir);
        for sub in ["src", "Cargo.toml"] {
            let p = d.join(sub);
            if p.is_dir() {
                newest_mtime(&p, &mut newest)?;
            } else if let Ok(m) = fs::metadata(&p).and_then(|m| m.modified()) {
                newest = newest.max(m);
            }
        }
    }
    Ok(newest)
}

/// True when `fmus/dist/.stamp` exists and is newer than every source.
pub fn is_up_to_date(root: &Path) -> bool {
    let stamp = root.join("fmus").join("dist").join(STAMP);
    let Ok(stamp_time) = fs::metadata(&stamp).and_then(|m| m.modified()) else {
        return false;
    };
    newest_source(root).is_ok_and(|src| stamp_time >= src)
}

/// Makes sure `fmus/dist` is complete and newer than its sources, building
/// it if needed. Safe to call from several processes at once. Returns the
/// dist directory.
pub fn ensure_built() -> io::Result<PathBuf> {
    let root = workspace_root();
    let dist = root.join("fmus").join("dist");
    fs::create_dir_all(&dist)?;
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(dist.join(LOCK))?;
    lock.lock()?;
    let result = if is_up_to_date(&root) {
        Ok(())
    } else {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .current_dir(&root)
            .args(["run", "--quiet", "-p", "xtask", "--release", "--", "fmus"])
            .env(LOCK_HELD_ENV, "1")
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "`cargo run -p xtask --release -- fmus` failed: {status}"
            )))
        }
    };
    lock.unlock()?;
    result.map(|()| dist)
}
