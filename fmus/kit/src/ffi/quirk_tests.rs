//! Quirk builds through the exported C functions: each reproduces its
//! exporter's misbehaviour, declares nothing of it, and otherwise behaves
//! like the full build.

use std::ffi::{c_int, c_void};
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use super::strict_tests::{P, U, X};
use super::tests::{
    fmi2DoStep, fmi2EnterInitializationMode, fmi2ExitInitializationMode, fmi2FreeInstance,
    fmi2GetReal, fmi2SetReal, fmi2SetupExperiment, fmi3DoStep, fmi3EnterInitializationMode,
    fmi3ExitInitializationMode, fmi3FreeInstance, fmi3GetFloat64, fmi3SetFloat64, instantiate2,
    instantiate3, logged3, registry, token_c,
};
use crate::caps::{Capabilities, FmiVersion, Quirk, Variant};
use crate::model::{ModelSpec, Vr};
use crate::xml;

fn strict() -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == "KitStrict")
        .unwrap_or(&registry()[0])
}

fn caps(version: FmiVersion, variant: Variant) -> Capabilities {
    Capabilities::variant(strict(), version, variant)
}

fn fmi2(variant: Variant) -> *mut c_void {
    let c = instantiate2(c"quirk", strict(), caps(FmiVersion::Fmi2, variant));
    assert!(!c.is_null(), "{variant:?}");
    c
}

fn set2(c: *mut c_void, vr: Vr, x: f64) -> c_int {
    // SAFETY: one-element arrays.
    unsafe { fmi2SetReal(c, &vr, 1, &x) }
}

fn get2(c: *mut c_void, vr: Vr) -> f64 {
    let mut x = f64::NAN;
    // SAFETY: one-element arrays.
    assert_eq!(unsafe { fmi2GetReal(c, &vr, 1, &mut x) }, 0);
    x
}

fn setup2(c: *mut c_void) -> c_int {
    // SAFETY: FMI signature.
    unsafe { fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0) }
}

fn init2(c: *mut c_void) {
    // SAFETY: FMI signature.
    unsafe {
        assert_eq!(fmi2EnterInitializationMode(c), 0);
        assert_eq!(fmi2ExitInitializationMode(c), 0);
    }
}

#[test]
fn resets_in_setup_loses_parameters_set_before_fmi2_setup_experiment() {
    for (variant, x0_when_set_before) in [(Variant::Full, 2.0), (Variant::ResetsInSetup, 1.0)] {
        let c = fmi2(variant);
        assert_eq!(set2(c, P, 2.0), 0, "legal in Instantiated");
        assert_eq!(setup2(c), 0);
        init2(c);
        assert_eq!(get2(c, X), x0_when_set_before, "{variant:?}");
        // SAFETY: a live instance.
        unsafe { fmi2FreeInstance(c) };
        // Set after fmi2SetupExperiment, the value stays.
        let c = fmi2(variant);
        assert_eq!(setup2(c), 0);
        assert_eq!(set2(c, P, 3.0), 0);
        init2(c);
        assert_eq!(get2(c, X), 3.0, "{variant:?}");
        // SAFETY: a live instance.
        unsafe { fmi2FreeInstance(c) };
    }
}

#[test]
fn quirks_are_declared_nowhere_but_in_the_token() {
    for (version, variant) in [
        (FmiVersion::Fmi2, Variant::ResetsInSetup),
        (FmiVersion::Fmi2, Variant::FreezesWithoutNoSetPrior),
        (FmiVersion::Fmi3, Variant::Fmi3FreezesWithoutNoSetPrior),
        (FmiVersion::Fmi2, Variant::CrashesAtExit),
    ] {
        let quirky = caps(version, variant);
        let full = caps(version, Variant::Full);
        assert_eq!(
            Capabilities {
                quirk: None,
                ..quirky
            },
            full
        );
        let tok = crate::caps::token(strict(), version, &quirky);
        let tag = variant.quirk().map_or("", Quirk::tag);
        assert!(tok.ends_with(&format!(":{tag}")), "{tok}");
        let x = xml::model_description(strict(), version, &quirky, "Id");
        let x_full = xml::model_description(strict(), version, &full, "Id");
        assert_eq!(
            x.replace(&tok, "TOKEN"),
            x_full.replace(&crate::caps::token(strict(), version, &full), "TOKEN")
        );
    }
    // An FMI 3 token with an FMI 2 only quirk is refused.
    let bad = Capabilities {
        quirk: Some(Quirk::ResetsInSetup),
        ..caps(FmiVersion::Fmi3, Variant::Full)
    };
    assert!(instantiate3(c"bad", &token_c(strict(), FmiVersion::Fmi3, &bad)).is_null());
    assert!(logged3("quirk resets-in-setup exists in fmi2 builds only"));
}

/// Steps `(t, h, noSetFMUStatePriorToCurrentPoint)` of 0.25 s with u = 1
/// from x = 1 and the x after each, through FMI 2 or FMI 3.
fn freeze_run(version: FmiVersion, variant: Variant, flags: &[bool]) -> Vec<f64> {
    let mut xs = Vec::new();
    // SAFETY: live instances and one-element arrays / out-pointers.
    unsafe {
        match version {
            FmiVersion::Fmi2 => {
                let c = fmi2(variant);
                assert_eq!(setup2(c), 0);
                init2(c);
                assert_eq!(set2(c, U, 1.0), 0);
                for (k, &flag) in flags.iter().enumerate() {
                    let t = 0.25 * k as f64;
                    assert_eq!(fmi2DoStep(c, t, 0.25, c_int::from(flag)), 0);
                    xs.push(get2(c, X));
                }
                // Time advanced even where the states did not.
                let t = 0.25 * flags.len() as f64;
                assert_eq!(fmi2DoStep(c, t - 0.25, 0.25, 1), 3);
                assert_eq!(fmi2DoStep(c, t, 0.25, 1), 0);
                fmi2FreeInstance(c);
            }
            FmiVersion::Fmi3 => {
                let tok = token_c(strict(), version, &caps(version, variant));
                let i = instantiate3(c"quirk3", &tok);
                assert!(!i.is_null());
                assert_eq!(
                    fmi3EnterInitializationMode(i, false, 0.0, 0.0, false, 0.0),
                    0
                );
                assert_eq!(fmi3ExitInitializationMode(i), 0);
                assert_eq!(fmi3SetFloat64(i, &U, 1, &1.0, 1), 0);
                for (k, &flag) in flags.iter().enumerate() {
                    let t = 0.25 * k as f64;
                    let (mut e, mut term, mut early, mut last) = (false, false, false, 0.0);
                    let st = fmi3DoStep(i, t, 0.25, flag, &mut e, &mut term, &mut early, &mut last);
                    assert_eq!((st, last), (0, t + 0.25));
                    let mut x = f64::NAN;
                    assert_eq!(fmi3GetFloat64(i, &X, 1, &mut x, 1), 0);
                    xs.push(x);
                }
                fmi3FreeInstance(i);
            }
        }
    }
    xs
}

#[test]
fn freezes_without_no_set_prior_keeps_the_states_after_the_first_step() {
    let flags = [false, false, false, true, false];
    for (version, quirk) in [
        (FmiVersion::Fmi2, Variant::FreezesWithoutNoSetPrior),
        (FmiVersion::Fmi3, Variant::Fmi3FreezesWithoutNoSetPrior),
    ] {
        assert_eq!(
            freeze_run(version, Variant::Full, &flags),
            [1.25, 1.5, 1.75, 2.0, 2.25],
            "{version:?} full build"
        );
        // The first step is computed; later steps without the promise are
        // not (x stays), a step with it is.
        assert_eq!(
            freeze_run(version, quirk, &flags),
            [1.25, 1.25, 1.25, 1.5, 1.5],
            "{version:?} {quirk:?}"
        );
        // With the promise throughout, the quirk build is the full build.
        assert_eq!(
            freeze_run(version, quirk, &[true; 5]),
            freeze_run(version, Variant::Full, &[true; 5])
        );
    }
}

/// The environment variable that makes [`crash_at_exit_child`] run.
const CHILD_ENV: &str = "FMU_KIT_CRASH_AT_EXIT_CHILD";

/// Runs [`crash_at_exit_child`] in a child process (this test binary) in
/// `mode`: its exit status and standard output.
fn child(mode: &str) -> (std::process::ExitStatus, String) {
    let exe = std::env::current_exe().unwrap_or_default();
    let out = Command::new(exe)
        .args([
            "--exact",
            "ffi::quirk_tests::crash_at_exit_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, mode)
        .output();
    match out {
        Ok(o) => (o.status, String::from_utf8_lossy(&o.stdout).into_owned()),
        Err(e) => (
            std::process::ExitStatus::from_raw(-1),
            format!("cannot run the child: {e}"),
        ),
    }
}

/// Helper of [`crashes_at_exit_kills_the_process_after_a_normal_run`]:
/// does nothing unless run as its child (with [`CHILD_ENV`]).
#[test]
#[ignore = "a child process of crashes_at_exit_kills_the_process_after_a_normal_run"]
fn crash_at_exit_child() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return;
    };
    let variant = if mode.starts_with("quirk") {
        Variant::CrashesAtExit
    } else {
        Variant::Full
    };
    let c = fmi2(variant);
    assert_eq!(setup2(c), 0);
    init2(c);
    assert_eq!(set2(c, U, 2.0), 0);
    // SAFETY: a live instance.
    assert_eq!(unsafe { fmi2DoStep(c, 0.0, 0.5, 1) }, 0);
    assert_eq!(get2(c, X), 2.0);
    if mode != "quirk-not-freed" {
        // SAFETY: a live instance, freed once.
        unsafe { fmi2FreeInstance(c) };
    }
    println!("child: the run finished normally");
}

#[test]
fn crashes_at_exit_kills_the_process_after_a_normal_run() {
    let (status, out) = child("quirk");
    assert!(out.contains("child: the run finished normally"), "{out}");
    assert!(out.contains("test result: ok. 1 passed"), "{out}");
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{status:?}\n{out}");
    // The handler is registered by fmi2FreeInstance; the full build has none.
    for mode in ["quirk-not-freed", "full"] {
        let (status, out) = child(mode);
        assert!(out.contains("child: the run finished normally"), "{out}");
        assert_eq!(status.code(), Some(0), "{mode}: {status:?}\n{out}");
    }
}
