//! FMUs and instances kept from run to run (`cosim_fmi::reuse`, issue 42):
//! an FMU opened again is not extracted again, an instance whose run
//! ended is reset and reused, and a run on a reused instance gives the
//! same bits as one on a new instance. Its own test binary: what is kept
//! is process-wide.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};

use cosim_fmi::reuse::{self, FileIdentity};
use cosim_fmi::{Fmu, Instance, InstantiateOptions, StepOutcome};

fn fmu(version: &str, model: &str) -> PathBuf {
    let dist = fmu_kit::dist::ensure_built().expect("building the project FMUs");
    dist.join(version).join(format!("{model}.fmu"))
}

fn vr(fmu: &Fmu, name: &str) -> u32 {
    fmu.model_description()
        .variable_by_name(name)
        .unwrap_or_else(|| panic!("no variable {name}"))
        .1
        .value_reference
}

/// One run of the wheel: `k_c` set if given, 200 steps driven by a
/// chassis velocity, terminated; the outputs of every step, as bits.
fn run(fmu: &Fmu, instance: &mut Instance, k_c: Option<f64>) -> Vec<u64> {
    let (v_c, f_c, z_w) = (vr(fmu, "v_c"), vr(fmu, "F_c"), vr(fmu, "z_w"));
    instance.setup_experiment(None, 0.0, Some(1.0)).unwrap();
    if let Some(k) = k_c {
        instance.set_f64(&[vr(fmu, "k_c")], &[k]).unwrap();
    }
    instance.enter_initialization_mode().unwrap();
    instance.exit_initialization_mode().unwrap();
    let h = 1e-3;
    let mut bits = Vec::new();
    for k in 0..200 {
        let t = k as f64 * h;
        instance.set_f64(&[v_c], &[(3.0 * t).sin()]).unwrap();
        assert_eq!(
            instance.do_step(t, h, false).unwrap(),
            StepOutcome::Completed
        );
        let mut y = [0.0; 2];
        instance.get_f64(&[f_c, z_w], &mut y).unwrap();
        bits.extend(y.map(f64::to_bits));
    }
    instance.terminate().unwrap();
    bits
}

/// What is kept is process-wide: one test at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn instantiate(fmu: &Fmu, name: &str) -> Instance {
    fmu.instantiate(name, &InstantiateOptions::default())
        .unwrap()
}

/// A copy of `fmu` with sources, documentation and an icon added.
fn with_tool_files(fmu: &Path, dir: &Path) -> PathBuf {
    let copy = dir.join("WithSources.fmu");
    let mut reader = zip::ZipArchive::new(std::fs::File::open(fmu).unwrap()).unwrap();
    let mut writer = zip::ZipWriter::new(std::fs::File::create(&copy).unwrap());
    for i in 0..reader.len() {
        writer
            .raw_copy_file(reader.by_index_raw(i).unwrap())
            .unwrap();
    }
    let options = zip::write::SimpleFileOptions::default();
    for (name, text) in [
        ("sources/model.c", "int x;\n"),
        ("documentation/index.html", "<html></html>\n"),
        ("model.png", "png"),
        ("resources/table.txt", "1 2 3\n"),
    ] {
        writer.start_file(name, options).unwrap();
        writer.write_all(text.as_bytes()).unwrap();
    }
    writer.finish().unwrap();
    copy
}

#[test]
fn fmus_are_extracted_once_and_instances_reset_and_reused_with_the_same_bits() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for version in ["fmi2", "fmi3"] {
        let path = fmu(version, "QuarterCarWheelSuspension");

        // Without a guard: every open extracts, every instance is new.
        let fresh_fmu = Fmu::open(&path).unwrap();
        let mut fresh = instantiate(&fresh_fmu, "wheel");
        let reference = run(&fresh_fmu, &mut fresh, None);
        let mut fresh = instantiate(&fresh_fmu, "wheel");
        let stiff_reference = run(&fresh_fmu, &mut fresh, Some(4.0e4));
        drop((fresh, fresh_fmu));
        let before = reuse::instances_reused();

        let keep = reuse::keep_open();
        let first = Fmu::open(&path).unwrap();
        let root = first.root().to_path_buf();
        // Open at the same time: its own extraction (and library copy).
        let second = Fmu::open(&path).unwrap();
        assert_ne!(second.root(), root, "{version}");
        drop(second);

        // A parameter changed in one run is a start value again in the next.
        let mut a = instantiate(&first, "wheel");
        assert_eq!(
            run(&first, &mut a, Some(4.0e4)),
            stiff_reference,
            "{version}"
        );
        drop(a);
        let mut b = instantiate(&first, "wheel");
        assert_eq!(reuse::instances_reused(), before + 1, "{version}");
        assert_eq!(run(&first, &mut b, None), reference, "{version}");
        drop(b);

        // Opened again once unused: the same extraction, the instance parked.
        drop(first);
        let again = Fmu::open(&path).unwrap();
        assert_eq!(again.root(), root, "{version}");
        let mut c = instantiate(&again, "wheel");
        assert_eq!(reuse::instances_reused(), before + 2, "{version}");
        assert_eq!(
            run(&again, &mut c, Some(4.0e4)),
            stiff_reference,
            "{version}"
        );
        drop(c);
        // Another name: a new instance.
        let mut d = instantiate(&again, "other");
        assert_eq!(reuse::instances_reused(), before + 2, "{version}");
        assert_eq!(run(&again, &mut d, None), reference, "{version}");
        // Still running (not terminated) when dropped: freed, not parked.
        let mut e = instantiate(&again, "wheel");
        assert_eq!(reuse::instances_reused(), before + 3, "{version}");
        e.setup_experiment(None, 0.0, Some(1.0)).unwrap();
        e.enter_initialization_mode().unwrap();
        e.exit_initialization_mode().unwrap();
        drop(e);
        let mut f = instantiate(&again, "wheel");
        assert_eq!(reuse::instances_reused(), before + 3, "{version}");
        assert_eq!(run(&again, &mut f, None), reference, "{version}");
        drop((d, f, again));

        // Fresh instances asked for: none reused.
        reuse::fresh_instances(true);
        let fmu = Fmu::open(&path).unwrap();
        let mut g = instantiate(&fmu, "wheel");
        run(&fmu, &mut g, None);
        drop(g);
        let mut h = instantiate(&fmu, "wheel");
        assert_eq!(reuse::instances_reused(), before + 3, "{version}");
        assert_eq!(run(&fmu, &mut h, None), reference, "{version}");
        drop((h, fmu));

        // The last guard dropped: the extractions are removed.
        drop(keep);
        assert!(!root.exists(), "{version}: {}", root.display());
        let plain = Fmu::open(&path).unwrap();
        assert_ne!(plain.root(), root, "{version}");
    }
}

#[test]
fn only_what_an_instance_needs_is_extracted_and_another_process_extraction_is_used() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let path = with_tool_files(&fmu("fmi3", "QuarterCarWheelSuspension"), dir.path());
    let keep = reuse::keep_open();
    let fmu = Fmu::open(&path).unwrap();
    let root = fmu.root().to_path_buf();
    assert!(root.join("modelDescription.xml").is_file());
    assert!(root.join("binaries").is_dir());
    assert!(root.join("resources/table.txt").is_file());
    for left_out in ["sources", "documentation", "model.png"] {
        assert!(!root.join(left_out).exists(), "{left_out} extracted");
    }
    // The sources are known to be there all the same.
    let cs = fmu.model_description().co_simulation.as_ref().unwrap();
    assert!(cs.has_source_files);

    // What this process hands on, and another opening it from there.
    let extracted = reuse::extracted();
    let this = extracted
        .iter()
        .find(|e| e.file.path == path)
        .expect("the FMU is listed");
    assert_eq!(this.root, root);
    assert_eq!(this.file, FileIdentity::of(&path).unwrap());
    let elsewhere = Fmu::open_extracted(&this.root, &path).unwrap();
    assert!(
        elsewhere
            .model_description()
            .co_simulation
            .as_ref()
            .unwrap()
            .has_source_files
    );
    drop((elsewhere, fmu));
    drop(keep);
    assert!(!root.exists());
}
