//! FMU libraries are never unloaded (an FMU's thread may outlive its
//! instances), and a process that opens the same FMU again and again keeps
//! a bounded number of copies: one per FMU open at the same time. Its own
//! test binary, so that no other test loads libraries meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use cosim_fmi::ffi::loaded_library_copies;
use cosim_fmi::{Fmu, InstantiateOptions};

fn fmu(version: &str, model: &str) -> PathBuf {
    let dist = fmu_kit::dist::ensure_built().expect("building the project FMUs");
    dist.join(version).join(format!("{model}.fmu"))
}

/// Opens the FMU (extracting it anew) and instantiates it.
fn open(path: &PathBuf, name: &str) -> (Fmu, cosim_fmi::Instance) {
    let fmu = Fmu::open(path).unwrap();
    let instance = fmu
        .instantiate(name, &InstantiateOptions::default())
        .unwrap();
    (fmu, instance)
}

/// The files mapped in this process whose name ends with `suffix`, each
/// once ("(deleted)" when its directory was removed since).
fn mapped(suffix: &str) -> BTreeSet<String> {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter_map(|l| l.find('/').map(|i| l[i..].to_string()))
        .filter(|p| p.trim_end_matches(" (deleted)").ends_with(suffix))
        .collect()
}

#[test]
fn a_library_is_never_unloaded_and_reopening_an_fmu_reuses_a_free_copy() {
    for version in ["fmi2", "fmi3"] {
        let path = fmu(version, "Gain");
        let start = loaded_library_copies();
        let suffix = format!(
            "/binaries/{}/Gain.so",
            if version == "fmi2" {
                "linux64"
            } else {
                "x86_64-linux"
            }
        );
        let mapped_before = mapped(&suffix).len();

        // Two FMUs open at once: two copies (their globals apart).
        let (a, ia) = open(&path, "a");
        let (b, ib) = open(&path, "b");
        assert_eq!(loaded_library_copies(), start + 2, "{version}");
        let dirs = [a.root().to_path_buf(), b.root().to_path_buf()];
        drop((ia, ib, a, b));
        // Gone: their extraction directories; still mapped: their copies.
        assert!(dirs.iter().all(|d| !d.exists()), "{version}: {dirs:?}");
        let still = mapped(&suffix);
        assert_eq!(still.len(), mapped_before + 2, "{version}: {still:?}");
        assert!(
            still.iter().filter(|p| p.ends_with(" (deleted)")).count() >= 2,
            "{version}: {still:?}"
        );

        // Opened 20 times more, one at a time: no new copy.
        for k in 0..20 {
            let (f, mut i) = open(&path, &format!("again{k}"));
            i.setup_experiment(None, 0.0, Some(1.0)).unwrap();
            i.enter_initialization_mode().unwrap();
            i.exit_initialization_mode().unwrap();
            drop((i, f));
        }
        assert_eq!(loaded_library_copies(), start + 2, "{version}");
        assert_eq!(mapped(&suffix).len(), mapped_before + 2, "{version}");
    }
}
