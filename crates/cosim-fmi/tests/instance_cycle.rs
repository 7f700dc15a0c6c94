//! The import layer against real FMUs: the project's own, built by
//! `cargo xtask fmus` (on demand), in both FMI versions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use cosim_fmi::{FmiError, Fmu, InstantiateOptions, Status, StepCall, StepOutcome};

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

/// Instantiate, initialise, step with state save/restore and serialization,
/// terminate: the restored run continues bit-identically.
fn full_cycle(version: &str) {
    let fmu = Fmu::open(fmu(version, "QuarterCarWheelSuspension")).unwrap();
    let (v_in, f_out, z_w) = (vr(&fmu, "v_c"), vr(&fmu, "F_c"), vr(&fmu, "z_w"));
    let mut inst = fmu
        .instantiate("wheel", &InstantiateOptions::default())
        .unwrap();
    inst.setup_experiment(None, 0.0, Some(1.0)).unwrap();
    inst.enter_initialization_mode().unwrap();
    inst.set_f64(&[v_in], &[0.0]).unwrap();
    inst.exit_initialization_mode().unwrap();

    let h = 1e-3;
    let mut t = 0.0;
    let step = |inst: &mut cosim_fmi::Instance, t: &mut f64, n: usize| {
        let mut out = Vec::new();
        for k in 0..n {
            inst.set_f64(&[v_in], &[0.01 * k as f64]).unwrap();
            assert_eq!(inst.do_step(*t, h, false).unwrap(), StepOutcome::Completed);
            *t += h;
            let mut y = [0.0; 2];
            inst.get_f64(&[f_out, z_w], &mut y).unwrap();
            out.push(y);
        }
        out
    };
    step(&mut inst, &mut t, 20);
    let saved = inst.get_state(None).unwrap();
    let t_saved = t;
    let first = step(&mut inst, &mut t, 30);
    // Restore and repeat: bit-identical.
    inst.set_state(saved).unwrap();
    t = t_saved;
    let second = step(&mut inst, &mut t, 30);
    assert_eq!(first, second);
    // Overwrite the same state slot, then serialize and deserialize it.
    inst.set_state(saved).unwrap();
    t = t_saved;
    let saved = inst.get_state(Some(saved)).unwrap();
    let bytes = inst.serialize_state(saved).unwrap();
    assert!(!bytes.is_empty());
    let restored = inst.deserialize_state(&bytes).unwrap();
    let _ = step(&mut inst, &mut t, 5);
    inst.set_state(restored).unwrap();
    t = t_saved;
    let third = step(&mut inst, &mut t, 30);
    assert_eq!(first, third);
    inst.free_state(saved).unwrap();
    inst.free_state(restored).unwrap();
    // A freed handle is refused, naming the instance.
    let err = inst.set_state(saved).unwrap_err().to_string();
    assert!(err.contains("'wheel'") && err.contains("freed"), "{err}");
    // The force depends on the input directly: setting it changes F_c now.
    let mut before = [0.0];
    inst.get_f64(&[f_out], &mut before).unwrap();
    inst.set_f64(&[v_in], &[1.0]).unwrap();
    let mut after = [0.0];
    inst.get_f64(&[f_out], &mut after).unwrap();
    assert_ne!(before, after);
    inst.terminate().unwrap();
}

#[test]
fn fmi2_full_cycle_with_state_save_restore_and_serialization() {
    full_cycle("fmi2");
}

#[test]
fn fmi3_full_cycle_with_state_save_restore_and_serialization() {
    full_cycle("fmi3");
}

#[test]
fn slices_are_length_checked() {
    let fmu = Fmu::open(fmu("fmi2", "Gain")).unwrap();
    let mut inst = fmu
        .instantiate("g", &InstantiateOptions::default())
        .unwrap();
    let mut out = [0.0; 1];
    let err = inst.get_f64(&[1, 2], &mut out).unwrap_err().to_string();
    assert!(
        err.contains("'g'") && err.contains("2 value references but a buffer of 1"),
        "{err}"
    );
}

#[test]
fn input_and_output_derivatives() {
    // Integrator: x' = u. With u(t) = 1 + 2 (t - t0) delivered as a value
    // and a first derivative, x(t0 + h) = h + h^2 exactly, and x' at the
    // end equals the input there.
    let fmu = Fmu::open(fmu("fmi2", "Integrator")).unwrap();
    let (u, x) = (vr(&fmu, "u"), vr(&fmu, "x"));
    let mut inst = fmu
        .instantiate("int", &InstantiateOptions::default())
        .unwrap();
    inst.setup_experiment(None, 0.0, None).unwrap();
    inst.enter_initialization_mode().unwrap();
    inst.exit_initialization_mode().unwrap();
    inst.set_f64(&[u], &[1.0]).unwrap();
    inst.set_input_derivatives(&[u], 1, &[2.0]).unwrap();
    let h = 0.5;
    inst.do_step(0.0, h, true).unwrap();
    let mut y = [0.0];
    inst.get_f64(&[x], &mut y).unwrap();
    assert!((y[0] - (h + h * h)).abs() < 1e-14, "x = {}", y[0]);
    let mut dy = [0.0];
    inst.get_output_derivatives(&[x], 1, &mut dy).unwrap();
    assert!((dy[0] - (1.0 + 2.0 * h)).abs() < 1e-14, "x' = {}", dy[0]);
    // Orders above maxOutputDerivativeOrder are refused before the call.
    let err = inst.get_output_derivatives(&[x], 4, &mut dy).unwrap_err();
    assert!(matches!(err, FmiError::NotSupported { .. }), "{err}");
}

#[test]
fn fmi3_has_no_input_derivatives() {
    let fmu = Fmu::open(fmu("fmi3", "Integrator")).unwrap();
    let u = vr(&fmu, "u");
    let mut inst = fmu
        .instantiate("int3", &InstantiateOptions::default())
        .unwrap();
    let err = inst
        .set_input_derivatives(&[u], 1, &[1.0])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("FMI 3.0 co-simulation has no input derivatives"),
        "{err}"
    );
}

#[test]
fn a_variant_without_state_support_is_refused_by_flag() {
    let dist = fmu_kit::dist::ensure_built().unwrap();
    let fmu = Fmu::open(dist.join("variants").join("Integrator-nostate.fmu")).unwrap();
    let mut inst = fmu
        .instantiate("int", &InstantiateOptions::default())
        .unwrap();
    let err = inst.get_state(None).unwrap_err().to_string();
    assert!(
        err.contains("'int'") && err.contains("canGetAndSetFMUstate=\"false\""),
        "{err}"
    );
}

#[test]
fn two_instances_of_one_fmu_are_independent() {
    let fmu = Fmu::open(fmu("fmi2", "Integrator")).unwrap();
    let (u, x) = (vr(&fmu, "u"), vr(&fmu, "x"));
    let mut a = fmu
        .instantiate("a", &InstantiateOptions::default())
        .unwrap();
    let mut b = fmu
        .instantiate("b", &InstantiateOptions::default())
        .unwrap();
    for inst in [&mut a, &mut b] {
        inst.setup_experiment(None, 0.0, None).unwrap();
        inst.enter_initialization_mode().unwrap();
        inst.exit_initialization_mode().unwrap();
    }
    a.set_f64(&[u], &[1.0]).unwrap();
    b.set_f64(&[u], &[-3.0]).unwrap();
    a.do_step(0.0, 1.0, true).unwrap();
    b.do_step(0.0, 1.0, true).unwrap();
    let (mut ya, mut yb) = ([0.0], [0.0]);
    a.get_f64(&[x], &mut ya).unwrap();
    b.get_f64(&[x], &mut yb).unwrap();
    assert_eq!((ya[0], yb[0]), (1.0, -3.0));
    // Instances can move to another thread.
    std::thread::spawn(move || {
        a.do_step(1.0, 1.0, true).unwrap();
    })
    .join()
    .unwrap();
}

fn faulty(mode: i32, fail_at: f64) -> (Fmu, cosim_fmi::Instance) {
    faulty_in("fmi2", mode, fail_at)
}

fn faulty_in(version: &str, mode: i32, fail_at: f64) -> (Fmu, cosim_fmi::Instance) {
    let fmu = Fmu::open(fmu(version, "Faulty")).unwrap();
    let mut inst = fmu
        .instantiate("faulty", &InstantiateOptions::default())
        .unwrap();
    inst.set_f64(&[vr(&fmu, "fail_at")], &[fail_at]).unwrap();
    inst.set_i32(&[vr(&fmu, "fail_mode")], &[mode]).unwrap();
    inst.setup_experiment(None, 0.0, None).unwrap();
    inst.enter_initialization_mode().unwrap();
    inst.exit_initialization_mode().unwrap();
    (fmu, inst)
}

#[test]
fn an_error_status_names_instance_function_time_and_quotes_the_fmu_log() {
    let (_fmu, mut inst) = faulty(1, 0.3);
    inst.do_step(0.0, 0.1, true).unwrap();
    inst.do_step(0.1, 0.1, true).unwrap();
    let err = inst.do_step(0.2, 0.1, true).unwrap_err();
    match &err {
        FmiError::Status {
            instance,
            function,
            status,
            time,
            log,
        } => {
            assert_eq!(instance, "faulty");
            assert_eq!(*function, "fmi2DoStep");
            assert_eq!(*status, Status::Error);
            assert_eq!(*time, Some(0.2));
            assert!(
                log.iter().any(|l| l.contains("fail_at = 0.3")),
                "the FMU's own log line (formatted by the C shim) is quoted: {log:?}"
            );
        }
        other => panic!("unexpected error {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("fmi2DoStep returned Error at t = 0.2"),
        "{text}"
    );
}

#[test]
fn discard_reports_the_last_successful_time() {
    let (_fmu, mut inst) = faulty(2, 0.25);
    inst.do_step(0.0, 0.1, true).unwrap();
    inst.do_step(0.1, 0.1, true).unwrap();
    match inst.do_step(0.2, 0.1, true).unwrap() {
        StepOutcome::Discarded {
            last_successful_time,
            ..
        } => assert!((last_successful_time - 0.25).abs() < 1e-12),
        other => panic!("expected Discarded, got {other:?}"),
    }
}

/// Three held steps of 0.1 s of `Faulty` (fail_mode `mode`, fail_at
/// 0.25) through `Instance::set_step_get_f64`: per step, the calls it
/// announced and its result.
fn held_steps(version: &str, mode: i32) -> Vec<(Vec<StepCall>, String)> {
    let (fmu, mut inst) = faulty_in(version, mode, 0.25);
    let (u, x) = (vr(&fmu, "u"), vr(&fmu, "x"));
    (0..3)
        .map(|k| {
            let mut calls = Vec::new();
            let mut y = [0.0];
            let t = 0.1 * f64::from(k);
            let result =
                inst.set_step_get_f64(&[u], &[1.0], t, 0.1, true, &[x], &mut y, |c| calls.push(c));
            (calls, format!("{result:?}"))
        })
        .collect()
}

#[test]
fn a_held_step_announces_its_completion_only_when_it_completed() {
    use StepCall::{Completed, DoStep, GetOutputs, SetInputs};
    // (`FmuSubsystem::step_held_direct` returns `Ok(Completed)` when it is
    // told `Completed`, without looking at the result: an announcement
    // after a failed or discarded step would hide the failure.)
    for version in ["fmi2", "fmi3"] {
        for (mode, last) in [(1, "Err("), (2, "Ok(Discarded")] {
            let steps = held_steps(version, mode);
            for (calls, result) in &steps[..2] {
                assert_eq!(
                    calls,
                    &[SetInputs, DoStep, GetOutputs, Completed],
                    "{version}"
                );
                assert_eq!(result, "Ok(Completed)", "{version}");
            }
            let (calls, result) = &steps[2];
            assert_eq!(
                calls,
                &[SetInputs, DoStep],
                "{version} mode {mode}: {result}"
            );
            assert!(result.starts_with(last), "{version} mode {mode}: {result}");
        }
    }
}

#[test]
fn fatal_forbids_every_further_call() {
    let (_fmu, mut inst) = faulty(7, 0.05);
    let err = inst.do_step(0.0, 0.1, true).unwrap_err();
    assert!(
        matches!(
            err,
            FmiError::Status {
                status: Status::Fatal,
                ..
            }
        ),
        "{err}"
    );
    let err = inst.do_step(0.1, 0.1, true).unwrap_err().to_string();
    assert!(err.contains("no further calls are allowed"), "{err}");
    // Dropping does not call fmi2FreeInstance after Fatal (would be UB for a
    // real FMU); reaching the end of the test without a crash is the check.
}

/// Copies an extracted FMU to a directory we can edit.
fn unpacked_copy(fmu_file: &Path) -> tempfile::TempDir {
    let root = cosim_fmi::archive::FmuRoot::open(fmu_file).unwrap();
    let dir = tempfile::tempdir().unwrap();
    copy_dir(root.path(), dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn only_once_per_process_is_enforced() {
    let dir = unpacked_copy(&fmu("fmi2", "Gain"));
    let md_path = dir.path().join("modelDescription.xml");
    let md = std::fs::read_to_string(&md_path).unwrap();
    let md = md.replacen(
        "canBeInstantiatedOnlyOncePerProcess=\"false\"",
        "canBeInstantiatedOnlyOncePerProcess=\"true\"",
        1,
    );
    assert!(md.contains("canBeInstantiatedOnlyOncePerProcess=\"true\""));
    std::fs::write(&md_path, md).unwrap();
    let fmu = Fmu::open(dir.path()).unwrap();
    let first = fmu
        .instantiate("first", &InstantiateOptions::default())
        .unwrap();
    let err = fmu
        .instantiate("second", &InstantiateOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("canBeInstantiatedOnlyOncePerProcess") && err.contains("'first'"),
        "{err}"
    );
    drop(first);
    // Once the first instance is gone, a new one is fine.
    fmu.instantiate("third", &InstantiateOptions::default())
        .unwrap();
}

#[test]
fn a_missing_mandatory_function_is_named_when_the_fmu_is_opened() {
    let dir = unpacked_copy(&fmu("fmi2", "Gain"));
    // A shared library exporting only part of the FMI 2.0 API.
    let src = dir.path().join("partial.c");
    std::fs::write(
        &src,
        "const char* fmi2GetTypesPlatform(void) { return \"default\"; }\n\
         const char* fmi2GetVersion(void) { return \"2.0\"; }\n",
    )
    .unwrap();
    let lib = dir.path().join("binaries/linux64/Gain.so");
    let status = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .expect("a C compiler (cc) is needed for this test");
    assert!(status.success());
    // Found in the library's dynamic symbol table when the FMU is opened,
    // before anything loads it.
    let err = Fmu::open(dir.path()).unwrap_err();
    match &err {
        FmiError::MissingFunction { library, function } => {
            assert_eq!(function, "fmi2SetDebugLogging");
            assert!(library.ends_with("binaries/linux64/Gain.so"));
        }
        other => panic!("unexpected error {other}"),
    }
    assert!(
        err.to_string()
            .contains("missing mandatory FMI function 'fmi2SetDebugLogging'")
    );
}

#[test]
fn a_missing_binary_lists_the_platforms_found() {
    let dir = unpacked_copy(&fmu("fmi2", "Gain"));
    std::fs::rename(
        dir.path().join("binaries/linux64"),
        dir.path().join("binaries/win64"),
    )
    .unwrap();
    let fmu = Fmu::open(dir.path()).unwrap();
    let err = fmu
        .instantiate("g", &InstantiateOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("expected binaries/linux64/Gain.so") && err.contains("win64"),
        "{err}"
    );
}
