//! CGain: a feed-through FMU written in C (`y = k u`, FMI 2.0 and FMI 3.0
//! co-simulation), compiled and packed by this crate's build script
//! (`build.rs`, with the `cc` crate). Its calls cost what a minimal C FMU's
//! cost: the speed benchmark (`bench/`, issue 21) measures the floor and
//! `cosim`'s overhead on it, and the kit's `Gain` beside it.
//!
//! Value references: 0 `time`, 1 `u` (input), 2 `y` (output), 3 `k`
//! (parameter, default 1). Each binary exports every function its FMI
//! version requires (FMI 3.0: the whole C API); those CGain does not
//! implement return an error (FMI 3.0: with a log message), as
//! `fmus/README.md` says and `tests/python/test_fmus.py` checks in FMPy.

use std::path::{Path, PathBuf};

/// The FMI 2.0 FMU as built (in Cargo's `OUT_DIR`).
pub const FMI2_FMU: &str = concat!(env!("OUT_DIR"), "/fmi2/CGain.fmu");
/// The FMI 3.0 FMU as built (in Cargo's `OUT_DIR`).
pub const FMI3_FMU: &str = concat!(env!("OUT_DIR"), "/fmi3/CGain.fmu");

/// Where [`install`] puts the FMUs: `fmus/dist/c/` of the workspace.
pub fn dist_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("dist")
        .join("c")
}

/// Copies the two FMUs to `fmus/dist/c/fmi2/CGain.fmu` and
/// `fmus/dist/c/fmi3/CGain.fmu` (where scenarios name them), unless an
/// identical copy is there; returns their paths (FMI 2, FMI 3).
///
/// # Errors
///
/// Reading the built FMUs or writing the copies.
pub fn install() -> std::io::Result<(PathBuf, PathBuf)> {
    let copy = |from: &str, version: &str| -> std::io::Result<PathBuf> {
        let dir = dist_dir().join(version);
        std::fs::create_dir_all(&dir)?;
        let to = dir.join("CGain.fmu");
        let bytes = std::fs::read(from)?;
        if std::fs::read(&to).ok().as_deref() != Some(bytes.as_slice()) {
            // Written beside, then renamed: a concurrent reader never sees
            // half a file. The name is unique to this call, so concurrent
            // installs (tests on several threads, several processes) do
            // not rename each other's file away.
            static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = dir.join(format!(".CGain.fmu.{}.{call}", std::process::id()));
            std::fs::write(&tmp, &bytes)?;
            std::fs::rename(&tmp, &to)?;
        }
        Ok(to)
    };
    Ok((copy(FMI2_FMU, "fmi2")?, copy(FMI3_FMU, "fmi3")?))
}
