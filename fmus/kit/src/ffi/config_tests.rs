//! FMI 3 structural parameters and Configuration Mode through the exported
//! C functions: `modelDescription.xml`, the spec checks, FMI 3 only
//! builds, and the state machine (structural parameters are set in
//! Configuration Mode only, nothing else is set there, the mode is entered
//! from Instantiated only, reset and FMU states), with a small test model.

use std::ffi::{c_int, c_void};

use super::tests::{
    callbacks, fmi2Instantiate, fmi3DeserializeFMUState, fmi3DoStep, fmi3EnterConfigurationMode,
    fmi3EnterInitializationMode, fmi3ExitConfigurationMode, fmi3ExitInitializationMode,
    fmi3FreeFMUState, fmi3FreeInstance, fmi3GetFMUState, fmi3GetFloat64, fmi3GetInt32, fmi3Reset,
    fmi3SerializeFMUState, fmi3SerializedFMUStateSize, fmi3SetFMUState, fmi3SetFloat64,
    fmi3SetInt32, fmi3Terminate, instantiate3, logged3, registry, token_c,
};
use crate::caps::{Capabilities, FmiVersion, Variant, resolve, token};
use crate::instance::{Mode, NO_CONFIGURATION_MODE, settable_in};
use crate::model::{
    Causality, DependencyKind, Initial, LogLevel, Model, ModelSpec, StepError, Values, VarType,
    Variable, Vr,
};
use crate::package::{PackageRequest, package};
use crate::{Inputs, xml};

/// Input u.
pub const U: Vr = 1;
/// Output y = g m s u (feed-through).
pub const Y: Vr = 2;
/// Structural parameter m (Int32, >= 1).
pub const M: Vr = 3;
/// Structural parameter s (Float64, finite).
pub const S: Vr = 4;
/// Parameter g (Float64, finite).
pub const G: Vr = 5;

struct KitConfig {
    gain: f64,
}

impl Model for KitConfig {
    fn init(&mut self, _v: &mut Values) {}
    fn do_step(
        &mut self,
        _t: f64,
        _h: f64,
        _v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<(), StepError> {
        Ok(())
    }
    fn outputs(&self, _t: f64, v: &mut Values, u: &Inputs) {
        v[Y] = self.gain * u.value(U);
    }
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    let m = v.int_at_least("m_cfg", M, 1)?;
    Ok(Box::new(KitConfig {
        gain: v.finite("g_cfg", G)? * v.finite("s_cfg", S)? * m as f64,
    }))
}

/// The test model (FMI 3 only, by causality alone: its types are FMI 2 ones).
pub fn spec() -> ModelSpec {
    ModelSpec::new("KitConfig", "structural parameters test model", build)
        .var(Variable::input(U, "u_cfg", 0.0, ""))
        .var(
            Variable::output(Y, "y_cfg", "g m s u")
                .depends_on(&[(U, DependencyKind::Fixed)])
                .initial_depends_on(&[U, M, S, G]),
        )
        .var(
            Variable::structural_parameter(M, "m_cfg", 2.0, "a structural Int32")
                .typed(VarType::Integer)
                .min(1.0),
        )
        .var(Variable::structural_parameter(
            S,
            "s_cfg",
            1.0,
            "a structural Float64",
        ))
        .var(Variable::parameter(
            G,
            "g_cfg",
            1.0,
            "an ordinary parameter",
        ))
        .output_derivatives(0)
        .interpolate_inputs(false)
        .directional_derivatives(false)
}

fn config_spec() -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == "KitConfig")
        .unwrap_or(&registry()[0])
}

fn instantiate_config() -> *mut c_void {
    let s = config_spec();
    let tok = token_c(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
    );
    let i = instantiate3(c"config", &tok);
    assert!(!i.is_null());
    i
}

fn set_f64(i: *mut c_void, vr: Vr, x: f64) -> c_int {
    // SAFETY: one-element arrays.
    unsafe { fmi3SetFloat64(i, &vr, 1, &x, 1) }
}

fn get_f64(i: *mut c_void, vr: Vr) -> (c_int, f64) {
    let mut x = f64::NAN;
    // SAFETY: one-element arrays.
    let st = unsafe { fmi3GetFloat64(i, &vr, 1, &mut x, 1) };
    (st, x)
}

fn set_m(i: *mut c_void, m: i32) -> c_int {
    // SAFETY: one-element arrays.
    unsafe { fmi3SetInt32(i, &M, 1, &m, 1) }
}

fn get_m(i: *mut c_void) -> (c_int, i32) {
    let mut m = -1;
    // SAFETY: one-element arrays.
    let st = unsafe { fmi3GetInt32(i, &M, 1, &mut m, 1) };
    (st, m)
}

fn enter_config(i: *mut c_void) -> c_int {
    // SAFETY: an instance pointer (live, or checked by the kit).
    unsafe { fmi3EnterConfigurationMode(i) }
}

fn exit_config(i: *mut c_void) -> c_int {
    // SAFETY: as above.
    unsafe { fmi3ExitConfigurationMode(i) }
}

fn enter_init(i: *mut c_void) -> c_int {
    // SAFETY: as above.
    unsafe { fmi3EnterInitializationMode(i, false, 0.0, 0.0, false, 0.0) }
}

fn exit_init(i: *mut c_void) -> c_int {
    // SAFETY: as above.
    unsafe { fmi3ExitInitializationMode(i) }
}

fn step(i: *mut c_void, t: f64, h: f64) -> c_int {
    let (mut e, mut term, mut early, mut last) = (false, false, false, 0.0);
    // SAFETY: valid out-pointers.
    unsafe { fmi3DoStep(i, t, h, false, &mut e, &mut term, &mut early, &mut last) }
}

// ------------------------------------------------------------- the spec

#[test]
fn structural_parameters_in_the_fmi3_model_description() {
    let s = config_spec();
    let x = xml::model_description(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
        "KitConfig",
    );
    let lines: Vec<&str> = x.lines().map(str::trim).collect();
    for l in [
        r#"<Int32 name="m_cfg" valueReference="3" description="a structural Int32" causality="structuralParameter" variability="fixed" initial="exact" min="1" start="2"/>"#,
        r#"<Float64 name="s_cfg" valueReference="4" description="a structural Float64" causality="structuralParameter" variability="fixed" initial="exact" start="1.0"/>"#,
        r#"<Float64 name="g_cfg" valueReference="5" description="an ordinary parameter" causality="parameter" variability="fixed" initial="exact" start="1.0"/>"#,
        r#"<Output valueReference="2" dependencies="1" dependenciesKind="fixed"/>"#,
        r#"<InitialUnknown valueReference="2" dependencies="1 3 4 5"/>"#,
    ] {
        assert!(lines.contains(&l), "missing {l} in\n{x}");
    }
    let m = s.variable(M).map(|v| (v.causality, v.effective_initial()));
    assert_eq!(
        m,
        Some((Causality::StructuralParameter, Some(Initial::Exact)))
    );
    assert!(s.has_structural_parameters());
    assert!(!registry()[0].has_structural_parameters());
}

#[test]
fn a_structural_parameter_makes_a_model_fmi3_only() {
    let s = config_spec();
    // Its types exist in FMI 2 (Int32 / Integer, Float64 / Real): the
    // causality alone makes it FMI 3 only.
    assert!(s.variables.iter().all(|v| v.ty.in_fmi2()));
    assert!(s.supports(FmiVersion::Fmi3));
    assert!(!s.supports(FmiVersion::Fmi2));
    assert_eq!(s.first_fmi3_only().map(|v| v.name), Some("m_cfg"));
    let caps2 = Capabilities::full(s, FmiVersion::Fmi2);
    assert_eq!(
        caps2.check(s, FmiVersion::Fmi2),
        Err(
            "KitConfig has no fmi2 build: m_cfg is a structural parameter (FMI 3 only)".to_string()
        )
    );
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lib = dir.path().join("lib.so");
    std::fs::write(&lib, b"not a library").unwrap_or_else(|e| panic!("{e}"));
    let out2 = dir.path().join("fmi2.fmu");
    let e = package(
        &PackageRequest::variant(s, FmiVersion::Fmi2, Variant::Full),
        &lib,
        &out2,
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        e.contains("m_cfg is a structural parameter (FMI 3 only)"),
        "{e}"
    );
    assert!(!out2.exists());
    let out3 = dir.path().join("fmi3.fmu");
    assert!(
        package(
            &PackageRequest::variant(s, FmiVersion::Fmi3, Variant::Full),
            &lib,
            &out3
        )
        .is_ok()
    );
    let tok2 = token(s, FmiVersion::Fmi2, &caps2);
    let e = resolve(registry(), &tok2, FmiVersion::Fmi2)
        .err()
        .unwrap_or_default();
    assert!(e.contains("has no fmi2 build"), "{e}");
    let cb = callbacks();
    let tok2c = token_c(s, FmiVersion::Fmi2, &caps2);
    // SAFETY: valid strings and callbacks.
    let c = unsafe {
        fmi2Instantiate(
            c"cfg2".as_ptr(),
            1,
            tok2c.as_ptr(),
            std::ptr::null(),
            &cb,
            0,
            1,
        )
    };
    assert!(c.is_null());
}

#[test]
fn spec_check_keeps_structural_parameters_fixed_exact_and_started() {
    let base = || ModelSpec::new("SC", "check", build);
    let sp = || Variable::structural_parameter(1, "n", 1.0, "");
    assert_eq!(base().var(sp()).check(), Ok(()));
    assert_eq!(
        base().var(sp().tunable()).check(),
        Err("SC: structural parameter n must be fixed, not tunable (the kit has no Reconfiguration Mode)".into())
    );
    assert_eq!(
        base().var(sp().discrete()).check(),
        Err("SC: structural parameter n must be fixed, not discrete (the kit has no Reconfiguration Mode)".into())
    );
    assert_eq!(
        base().var(sp().initial(Initial::Approx)).check(),
        Err("SC: structuralParameter n must have initial exact".into())
    );
    let mut no_start = sp();
    no_start.start = None;
    assert_eq!(
        base().var(no_start).check(),
        Err("SC: variable n start value presence is wrong".into())
    );
    assert_eq!(
        base().var(sp().typed(VarType::UInt64).start(0.5)).check(),
        Err("SC: integer n has non-integer start 0.5".into())
    );
    // A structural parameter is a known of the initial unknowns.
    let spec = base().var(sp()).var(
        Variable::output(2, "y", "")
            .depends_on(&[])
            .initial_depends_on(&[1]),
    );
    assert_eq!(spec.check(), Ok(()));
}

#[test]
fn structural_parameters_are_settable_in_configuration_mode_only() {
    let s = config_spec();
    let var = |vr: Vr| s.variable(vr).unwrap_or(&s.variables[0]);
    for vr in [M, S] {
        assert!(settable_in(var(vr), Mode::Configuration).is_ok());
        for m in [
            Mode::Instantiated,
            Mode::Initialization,
            Mode::StepComplete,
            Mode::StepFailed,
            Mode::Terminated,
            Mode::Error,
        ] {
            let e = settable_in(var(vr), m).err().unwrap_or_default();
            assert!(
                e.contains("can only be set in Configuration Mode"),
                "{m:?}: {e}"
            );
        }
    }
    for vr in [0, U, Y, G] {
        assert_eq!(
            settable_in(var(vr), Mode::Configuration),
            Err("only structural parameters can be set there"),
            "{}",
            var(vr).name
        );
    }
}

// ------------------------------------------------------- the C functions

#[test]
fn configuration_mode_sets_structural_parameters_that_act_after_initialization() {
    let i = instantiate_config();
    // Instantiated: the structural parameter is refused, the others are not.
    assert_eq!(set_m(i, 3), 3);
    assert!(logged3(
        "fmi3SetInt32: Illegal call sequence: structuralParameter m_cfg (vr 3, variability fixed, initial exact) \
         cannot be set in state Instantiated: structural parameters can only be set in Configuration Mode (fmi3EnterConfigurationMode)"
    ));
    assert_eq!(set_f64(i, S, 0.5), 3);
    assert_eq!(exit_config(i), 3);
    assert!(logged3(
        "fmi3ExitConfigurationMode: Illegal call sequence: called in state Instantiated (only in Configuration Mode, after fmi3EnterConfigurationMode)"
    ));

    assert_eq!(enter_config(i), 0);
    // Configuration Mode: structural parameters only, to set and to read.
    assert_eq!(get_m(i), (0, 2), "the start value");
    assert_eq!(set_m(i, 3), 0);
    assert_eq!(set_f64(i, S, 0.5), 0);
    assert_eq!(get_m(i), (0, 3));
    assert_eq!(get_f64(i, S), (0, 0.5));
    assert_eq!(set_f64(i, U, 1.0), 3);
    assert!(logged3(
        "fmi3SetFloat64: Illegal call sequence: input u_cfg (vr 1, variability continuous) cannot be set in state \
         Configuration Mode: only structural parameters can be set there"
    ));
    assert_eq!(set_f64(i, G, 2.0), 3);
    assert!(logged3(
        "fmi3SetFloat64: Illegal call sequence: parameter g_cfg (vr 5, variability fixed, initial exact) cannot be set in state Configuration Mode"
    ));
    // All or nothing: a structural parameter with another variable.
    // SAFETY: two-element arrays.
    let st = unsafe { fmi3SetFloat64(i, [S, G].as_ptr(), 2, [0.25, 2.0].as_ptr(), 2) };
    assert_eq!(st, 3);
    assert_eq!(get_f64(i, S), (0, 0.5), "unchanged");
    assert_eq!(get_f64(i, Y).0, 3);
    assert!(logged3(
        "fmi3GetFloat64: Illegal call sequence: output y_cfg (vr 2) cannot be read in state Configuration Mode: only structural parameters can"
    ));
    assert_eq!(get_f64(i, 0).0, 3, "time is no structural parameter");
    // Nothing else moves on from Configuration Mode.
    assert_eq!(enter_init(i), 3);
    assert!(logged3(
        "fmi3EnterInitializationMode: Illegal call sequence: called in state Configuration Mode"
    ));
    assert_eq!(enter_config(i), 3);
    assert!(logged3(
        "fmi3EnterConfigurationMode: Illegal call sequence: called in state Configuration Mode (Configuration Mode is entered from Instantiated only)"
    ));
    assert_eq!(step(i, 0.0, 0.1), 3);
    assert!(logged3(
        "fmi3DoStep: Illegal call sequence: called in state Configuration Mode"
    ));
    // SAFETY: a live instance; valid out-pointers.
    unsafe {
        assert_eq!(fmi3Terminate(i), 3);
        assert_eq!(fmi3ExitInitializationMode(i), 3);
        let mut st: *mut c_void = std::ptr::null_mut();
        assert_eq!(fmi3GetFMUState(i, &mut st), 3);
        assert!(st.is_null());
    }
    assert!(logged3(
        "fmi3GetFMUState: Illegal call sequence: called in state Configuration Mode"
    ));
    assert_eq!(exit_config(i), 0);

    // Instantiated again: ordinary parameters and inputs as usual.
    assert_eq!(set_f64(i, G, 2.0), 0);
    assert_eq!(set_f64(i, U, 1.5), 0);
    assert_eq!(enter_init(i), 0);
    assert_eq!(set_m(i, 4), 3);
    assert!(logged3(
        "fmi3SetInt32: Illegal call sequence: structuralParameter m_cfg (vr 3, variability fixed, initial exact) \
         cannot be set in state Initialization Mode: structural parameters can only be set in Configuration Mode"
    ));
    assert_eq!(enter_config(i), 3);
    assert!(logged3(
        "fmi3EnterConfigurationMode: Illegal call sequence: called in state Initialization Mode (Configuration Mode is entered from Instantiated only)"
    ));
    assert_eq!(get_m(i), (0, 3));
    assert_eq!(get_f64(i, Y), (0, 2.0 * 3.0 * 0.5 * 1.5));
    assert_eq!(exit_init(i), 0);

    // Step Mode: y = g m s u with the configured m and s.
    assert_eq!(get_f64(i, Y), (0, 4.5));
    assert_eq!(set_m(i, 5), 3);
    assert!(logged3(
        "fmi3SetInt32: Illegal call sequence: structuralParameter m_cfg (vr 3, variability fixed, initial exact) \
         cannot be set in state Step Mode: structural parameters can only be set in Configuration Mode"
    ));
    assert_eq!(enter_config(i), 3);
    assert!(logged3(
        "fmi3EnterConfigurationMode: Illegal call sequence: called in state Step Mode (Configuration Mode is entered \
         from Instantiated only; Reconfiguration Mode, from Step Mode, exists for tunable structural parameters, which this FMU has not)"
    ));
    assert_eq!(step(i, 0.0, 0.1), 0);
    assert_eq!(set_f64(i, U, 2.0), 0);
    assert_eq!(get_f64(i, Y), (0, 6.0));
    assert_eq!(get_m(i), (0, 3));
    // SAFETY: a live instance.
    unsafe { fmi3FreeInstance(i) };
}

#[test]
fn fmu_states_keep_the_configured_structure_and_reset_restores_start_values() {
    let i = instantiate_config();
    assert_eq!(enter_config(i), 0);
    assert_eq!(set_m(i, 7), 0);
    assert_eq!(exit_config(i), 0);
    assert_eq!(set_f64(i, U, 1.0), 0);
    assert_eq!(enter_init(i), 0);
    assert_eq!(exit_init(i), 0);
    assert_eq!(step(i, 0.0, 0.5), 0);
    assert_eq!(get_f64(i, Y), (0, 7.0));
    let mut s: *mut c_void = std::ptr::null_mut();
    let mut size = 0usize;
    // SAFETY: valid out-pointers; a buffer of the reported size.
    let bytes = unsafe {
        assert_eq!(fmi3GetFMUState(i, &mut s), 0);
        assert_eq!(fmi3SerializedFMUStateSize(i, s, &mut size), 0);
        let mut b = vec![0u8; size];
        assert_eq!(fmi3SerializeFMUState(i, s, b.as_mut_ptr(), size), 0);
        b
    };

    // Reset: Instantiated with the start values (m = 2 again), from Step
    // Mode and from Configuration Mode.
    // SAFETY: a live instance.
    unsafe { assert_eq!(fmi3Reset(i), 0) };
    assert_eq!(enter_config(i), 0);
    assert_eq!(get_m(i), (0, 2));
    assert_eq!(set_m(i, 9), 0);
    // SAFETY: a live instance.
    unsafe { assert_eq!(fmi3Reset(i), 0) };
    assert_eq!(enter_config(i), 0, "reset left Configuration Mode");
    assert_eq!(get_m(i), (0, 2));
    // FMU-state functions wait until Configuration Mode is left.
    // SAFETY: a state of this instance.
    unsafe { assert_eq!(fmi3SetFMUState(i, s), 3) };
    assert_eq!(exit_config(i), 0);
    assert_eq!(set_f64(i, U, 1.0), 0);
    assert_eq!(enter_init(i), 0);
    assert_eq!(exit_init(i), 0);
    assert_eq!(get_f64(i, Y), (0, 2.0), "the start value of m");

    // Restoring the saved state brings the configured m back.
    // SAFETY: a state of this instance.
    unsafe { assert_eq!(fmi3SetFMUState(i, s), 0) };
    assert_eq!(get_m(i), (0, 7));
    assert_eq!(get_f64(i, Y), (0, 7.0));
    assert_eq!(step(i, 0.5, 0.5), 0);
    assert_eq!(set_f64(i, U, 3.0), 0);
    assert_eq!(get_f64(i, Y), (0, 21.0));

    // Deserialized into an instance configured otherwise: the saved m.
    let other = instantiate_config();
    assert_eq!(enter_config(other), 0);
    assert_eq!(set_m(other, 4), 0);
    assert_eq!(exit_config(other), 0);
    let mut s2: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid pointers; the serialized bytes of this model's build.
    unsafe {
        assert_eq!(
            fmi3DeserializeFMUState(other, bytes.as_ptr(), size, &mut s2),
            0
        );
        assert_eq!(fmi3SetFMUState(other, s2), 0);
    }
    assert_eq!(get_m(other), (0, 7));
    assert_eq!(get_f64(other, Y), (0, 7.0));
    assert_eq!(step(other, 0.5, 0.5), 0);
    // SAFETY: states and instances created above.
    unsafe {
        assert_eq!(fmi3FreeFMUState(i, &mut s), 0);
        assert_eq!(fmi3FreeFMUState(other, &mut s2), 0);
        fmi3FreeInstance(other);
        fmi3FreeInstance(i);
    }
}

#[test]
fn an_invalid_structural_parameter_is_named_when_initialization_ends() {
    let i = instantiate_config();
    assert_eq!(enter_config(i), 0);
    assert_eq!(set_m(i, 0), 0, "validated with the parameters, later");
    assert_eq!(exit_config(i), 0);
    assert_eq!(enter_init(i), 0);
    assert_eq!(exit_init(i), 3);
    assert!(logged3(
        "fmi3ExitInitializationMode: m_cfg must be >= 1, got 0"
    ));
    // The Error state: reset, then a valid configuration runs.
    // SAFETY: a live instance.
    unsafe { assert_eq!(fmi3Reset(i), 0) };
    assert_eq!(enter_config(i), 0);
    assert_eq!(set_m(i, 1), 0);
    assert_eq!(exit_config(i), 0);
    assert_eq!(enter_init(i), 0);
    assert_eq!(exit_init(i), 0);
    // SAFETY: a live instance.
    unsafe { fmi3FreeInstance(i) };
}

#[test]
fn a_model_without_structural_parameters_has_no_configuration_mode() {
    let s = &registry()[0];
    assert!(!s.has_structural_parameters());
    let tok = token_c(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
    );
    let i = instantiate3(c"noconfig", &tok);
    assert!(!i.is_null());
    assert_eq!(enter_config(i), 3);
    assert!(logged3(&format!(
        "fmi3EnterConfigurationMode: {NO_CONFIGURATION_MODE}"
    )));
    assert_eq!(
        NO_CONFIGURATION_MODE,
        "this FMU has no structural parameters (causality=\"structuralParameter\"), so it has no Configuration Mode"
    );
    assert_eq!(exit_config(i), 3);
    assert!(logged3(&format!(
        "fmi3ExitConfigurationMode: {NO_CONFIGURATION_MODE}"
    )));
    // Refused without a state change: the run goes on as usual.
    assert_eq!(enter_init(i), 0);
    assert_eq!(enter_config(i), 3);
    assert_eq!(exit_init(i), 0);
    assert_eq!(step(i, 0.0, 0.1), 0);
    // SAFETY: a live instance.
    unsafe { fmi3FreeInstance(i) };
    // A stale handle: Error, nothing to log to.
    assert_eq!(enter_config(i), 3);
    assert_eq!(exit_config(i), 3);
}

/// The resources directory from what importers pass: FMPy and fmusim give
/// FMI 2 `file:///...` URIs (percent-encoded), some tools `file:/...`.
#[test]
fn resource_locations_become_directories() {
    use crate::FmiVersion::{Fmi2, Fmi3};
    use std::path::PathBuf;
    let p = |v, s| super::resource_path(v, s);
    assert_eq!(
        p(Fmi2, "file:///tmp/a%20b/resources/"),
        Some(PathBuf::from("/tmp/a b/resources/"))
    );
    assert_eq!(
        p(Fmi2, "file:/tmp/x/resources"),
        Some(PathBuf::from("/tmp/x/resources"))
    );
    assert_eq!(
        p(Fmi2, "file://localhost/tmp/x"),
        Some(PathBuf::from("/tmp/x"))
    );
    assert_eq!(p(Fmi2, "http://example.invalid/r"), None);
    assert_eq!(p(Fmi2, ""), None);
    assert_eq!(
        p(Fmi3, "/tmp/x/resources/"),
        Some(PathBuf::from("/tmp/x/resources/"))
    );
}
