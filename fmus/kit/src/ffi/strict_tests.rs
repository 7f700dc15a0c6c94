//! Strictness through the exported C functions: every call the FMI 2.0 /
//! FMI 3.0 co-simulation state machines or call-sequence rules forbid is
//! refused with `Error` and a log line `<function>: Illegal call sequence:
//! ...`, and the instance is unchanged; what the standards (and FMPy and
//! libcosim) do is accepted.

use std::ffi::{CStr, c_char, c_int, c_void};

use super::tests::{
    LOG3, callbacks, fmi2CancelStep, fmi2DoStep, fmi2EnterInitializationMode,
    fmi2ExitInitializationMode, fmi2FreeFMUstate, fmi2FreeInstance, fmi2GetBooleanStatus,
    fmi2GetFMUstate, fmi2GetIntegerStatus, fmi2GetReal, fmi2GetRealStatus, fmi2GetStatus,
    fmi2GetStringStatus, fmi2Instantiate, fmi2Reset, fmi2SetFMUstate, fmi2SetReal,
    fmi2SetupExperiment, fmi2Terminate, fmi3DoStep, fmi3EnterInitializationMode,
    fmi3ExitInitializationMode, fmi3FreeFMUState, fmi3FreeInstance, fmi3GetFMUState,
    fmi3GetFloat64, fmi3InstantiateCoSimulation, fmi3SetFMUState, fmi3SetFloat64, fmi3Terminate,
    instantiate2_full, instantiate3, logged, logged3, logger3, registry, token_c,
};
use crate::caps::{Capabilities, FmiVersion};
use crate::instance::{Mode, settable_in};
use crate::model::{Initial, LogLevel, Model, ModelSpec, StepError, Values, Variable, Vr};
use crate::{Inputs, xml};

/// Input u (x' = u).
pub const U: Vr = 1;
/// Output y = g x (no feed-through).
pub const Y: Vr = 2;
/// The state x (local, calculated).
pub const X: Vr = 3;
/// Fixed parameter: x(0).
pub const P: Vr = 4;
/// Tunable parameter g > 0.
pub const G: Vr = 5;
/// A constant.
pub const C: Vr = 6;
/// An output with initial exact (its start value, untouched by the model).
pub const E: Vr = 7;
/// A local with initial approx (a guess value).
pub const L: Vr = 8;

struct KitStrict {
    p: f64,
    g: f64,
}

impl Model for KitStrict {
    fn init(&mut self, v: &mut Values) {
        v[X] = self.p;
    }
    fn do_step(
        &mut self,
        t: f64,
        h: f64,
        v: &mut Values,
        u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<(), StepError> {
        v[X] += u.integral(U, t + h);
        Ok(())
    }
    fn outputs(&self, _t: f64, v: &mut Values, _u: &Inputs) {
        v[Y] = self.g * v[X];
    }
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(KitStrict {
        p: v.finite("p", P)?,
        g: v.positive("g", G)?,
    }))
}

/// The spec of `KitStrict`: one variable of every settability class.
pub fn spec() -> ModelSpec {
    ModelSpec::new("KitStrict", "strictness test model", build)
        .var(Variable::input(U, "u", 0.0, "rate of x"))
        .var(Variable::output(Y, "y", "g x").depends_on(&[]))
        .var(Variable::local(X, "x", "state"))
        .var(Variable::parameter(P, "p", 1.0, "x(0)"))
        .var(Variable::parameter(G, "g", 1.0, "output gain").tunable())
        .var(Variable::constant(C, "c", 42.0, "a constant"))
        .var(
            Variable::output(E, "e", "an exact output")
                .initial(Initial::Exact)
                .start(5.0),
        )
        .var(
            Variable::local(L, "l", "a guess")
                .initial(Initial::Approx)
                .start(0.5),
        )
        .output_derivatives(0)
}

/// `KitTerm`: y' = 1 (y = time since the start); asks to terminate at
/// `t_end` (the step that reaches or crosses it ends there).
pub mod term {
    use super::*;

    /// Output y.
    pub const Y: Vr = 1;
    /// When the model asks to terminate.
    pub const T_END: Vr = 2;

    struct KitTerm {
        t_end: f64,
    }

    impl Model for KitTerm {
        fn init(&mut self, v: &mut Values) {
            v[Y] = 0.0;
        }
        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            _u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            if t + h < self.t_end {
                v[Y] += h;
                return Ok(());
            }
            // Slightly off t + h when it hits t_end: the kit rounds to t + h.
            let reached = self.t_end.clamp(t, t + h);
            v[Y] += reached - t;
            Err(StepError::Terminate {
                reached,
                message: format!("KitTerm: t_end = {} reached", self.t_end),
            })
        }
        fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(KitTerm {
            t_end: v.finite("t_end", T_END)?,
        }))
    }

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new("KitTerm", "terminating test model", build)
            .var(Variable::output(Y, "y", "time since the start").depends_on(&[]))
            .var(Variable::parameter(T_END, "t_end", 0.5, "terminate here"))
            .might_return_early(true)
    }
}

fn model(name: &str) -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == name)
        .unwrap_or(&registry()[0])
}

fn strict() -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == "KitStrict")
        .unwrap_or(&registry()[0])
}

fn fmi2() -> *mut c_void {
    let c = instantiate2_full(c"strict", strict());
    assert!(!c.is_null());
    c
}

fn fmi3() -> *mut c_void {
    let tok = token_c(
        strict(),
        FmiVersion::Fmi3,
        &Capabilities::full(strict(), FmiVersion::Fmi3),
    );
    let i = instantiate3(c"strict3", &tok);
    assert!(!i.is_null());
    i
}

/// `fmi2SetReal` / `fmi3SetFloat64` of one value.
type Setter = fn(*mut c_void, Vr, f64) -> c_int;

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

fn set3(i: *mut c_void, vr: Vr, x: f64) -> c_int {
    // SAFETY: one-element arrays.
    unsafe { fmi3SetFloat64(i, &vr, 1, &x, 1) }
}

fn get3(i: *mut c_void, vr: Vr) -> f64 {
    let mut x = f64::NAN;
    // SAFETY: one-element arrays.
    assert_eq!(unsafe { fmi3GetFloat64(i, &vr, 1, &mut x, 1) }, 0);
    x
}

fn step2(c: *mut c_void, t: f64, h: f64, no_set_prior: bool) -> c_int {
    // SAFETY: FMI signature.
    unsafe { fmi2DoStep(c, t, h, c_int::from(no_set_prior)) }
}

/// `fmi3DoStep`: (status, terminateSimulation, earlyReturn, lastSuccessfulTime).
fn step3(i: *mut c_void, t: f64, h: f64, no_set_prior: bool) -> (c_int, bool, bool, f64) {
    let (mut e, mut term, mut early, mut last) = (true, true, true, f64::NAN);
    // SAFETY: valid out-pointers.
    let st = unsafe {
        fmi3DoStep(
            i,
            t,
            h,
            no_set_prior,
            &mut e,
            &mut term,
            &mut early,
            &mut last,
        )
    };
    if st == 0 {
        assert!(!e, "eventHandlingNeeded is never set");
    }
    (st, term, early, last)
}

fn setup2(c: *mut c_void, stop: Option<f64>) -> c_int {
    // SAFETY: FMI signature.
    unsafe {
        fmi2SetupExperiment(
            c,
            0,
            0.0,
            0.0,
            c_int::from(stop.is_some()),
            stop.unwrap_or(0.0),
        )
    }
}

fn init2(c: *mut c_void, stop: Option<f64>) {
    assert_eq!(setup2(c, stop), 0);
    // SAFETY: FMI signature.
    unsafe {
        assert_eq!(fmi2EnterInitializationMode(c), 0);
        assert_eq!(fmi2ExitInitializationMode(c), 0);
    }
}

fn init3(i: *mut c_void, stop: Option<f64>) {
    // SAFETY: FMI signature.
    unsafe {
        assert_eq!(
            fmi3EnterInitializationMode(i, false, 0.0, 0.0, stop.is_some(), stop.unwrap_or(0.0)),
            0
        );
        assert_eq!(fmi3ExitInitializationMode(i), 0);
    }
}

#[test]
fn fmi2_enter_initialization_mode_needs_setup_experiment_since_instantiate_or_reset() {
    let c = fmi2();
    // SAFETY: a live instance.
    unsafe {
        assert_eq!(fmi2EnterInitializationMode(c), 3);
        assert!(logged(
            "fmi2EnterInitializationMode: Illegal call sequence: fmi2SetupExperiment was not called since fmi2Instantiate / fmi2Reset"
        ));
        // Refused without a state change: still Instantiated, so the
        // start values can still be set and the sequence completed.
        assert_eq!(set2(c, P, 2.0), 0);
        assert_eq!(setup2(c, None), 0);
        assert_eq!(setup2(c, None), 0, "more than once is allowed");
        assert_eq!(fmi2EnterInitializationMode(c), 0);
        assert_eq!(fmi2ExitInitializationMode(c), 0);
        assert_eq!(get2(c, X), 2.0);
        // After a reset, a new run needs a new fmi2SetupExperiment.
        assert_eq!(fmi2Reset(c), 0);
        assert_eq!(fmi2EnterInitializationMode(c), 3);
        assert_eq!(setup2(c, None), 0);
        assert_eq!(fmi2EnterInitializationMode(c), 0);
        assert_eq!(get2(c, X), 1.0, "reset restored the start values");
        fmi2FreeInstance(c);
    }
}

#[test]
fn settable_variables_follow_causality_variability_and_initial_per_state() {
    let s = strict();
    let var = |vr: Vr| s.variable(vr).unwrap_or(&s.variables[0]);
    use Mode::{Initialization as Init, Instantiated as Inst, StepComplete as Step};
    // (vr, settable in Instantiated, in Initialization Mode, in Step Mode)
    let table = [
        (U, true, true, true),    // input
        (Y, false, false, false), // output, initial calculated
        (X, false, false, false), // local, initial calculated
        (P, true, true, false),   // fixed parameter (initial exact)
        (G, true, true, true),    // tunable parameter
        (C, false, false, false), // constant
        (E, true, true, false),   // output with initial exact
        (L, true, false, false),  // local with initial approx
        (0, false, false, false), // the independent variable
    ];
    for (vr, inst, init, step) in table {
        let v = var(vr);
        assert_eq!(
            settable_in(v, Inst).is_ok(),
            inst,
            "{} in Instantiated",
            v.name
        );
        assert_eq!(
            settable_in(v, Init).is_ok(),
            init,
            "{} in Initialization",
            v.name
        );
        assert_eq!(
            settable_in(v, Step).is_ok(),
            step,
            "{} in Step Mode",
            v.name
        );
        for m in [
            Mode::StepFailed,
            Mode::Terminated,
            Mode::Error,
            Mode::Configuration,
        ] {
            assert!(settable_in(v, m).is_err(), "{} in {m:?}", v.name);
        }
    }
    // The same through the C exports of both versions, state by state.
    for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
        let (i, set): (*mut c_void, Setter) = match version {
            FmiVersion::Fmi2 => (fmi2(), set2),
            FmiVersion::Fmi3 => (fmi3(), set3),
        };
        let check = |state: &str, pick: fn(&(Vr, bool, bool, bool)) -> bool| {
            for row in &table {
                let status = set(i, row.0, 0.25);
                let expected = if pick(row) { 0 } else { 3 };
                assert_eq!(
                    status,
                    expected,
                    "{version:?}: setting {} in {state}",
                    var(row.0).name
                );
            }
        };
        check("Instantiated", |r| r.1);
        // SAFETY: a live instance.
        unsafe {
            match version {
                FmiVersion::Fmi2 => {
                    assert_eq!(setup2(i, None), 0);
                    assert_eq!(fmi2EnterInitializationMode(i), 0);
                }
                FmiVersion::Fmi3 => {
                    assert_eq!(
                        fmi3EnterInitializationMode(i, false, 0.0, 0.0, false, 0.0),
                        0
                    );
                }
            }
        }
        check("Initialization Mode", |r| r.2);
        // Back to valid values for the model: g must be > 0.
        assert_eq!(set(i, G, 1.0), 0);
        // SAFETY: a live instance.
        unsafe {
            match version {
                FmiVersion::Fmi2 => assert_eq!(fmi2ExitInitializationMode(i), 0),
                FmiVersion::Fmi3 => assert_eq!(fmi3ExitInitializationMode(i), 0),
            }
        }
        check("Step Mode", |r| r.3);
        // SAFETY: a live instance.
        unsafe {
            match version {
                FmiVersion::Fmi2 => {
                    assert_eq!(fmi2Terminate(i), 0);
                    assert_eq!(set2(i, U, 1.0), 3);
                    fmi2FreeInstance(i);
                }
                FmiVersion::Fmi3 => {
                    assert_eq!(fmi3Terminate(i), 0);
                    assert_eq!(set3(i, U, 1.0), 3);
                    fmi3FreeInstance(i);
                }
            }
        }
    }
    assert!(logged(
        "fmi2SetReal: Illegal call sequence: output y (vr 2, variability continuous, initial calculated) \
         cannot be set in state Instantiated: only inputs and variables with initial exact or approx (not constant) can be set there"
    ));
    assert!(logged(
        "fmi2SetReal: Illegal call sequence: local l (vr 8, variability continuous, initial approx) cannot be set in state Initialization Mode"
    ));
    assert!(logged(
        "fmi2SetReal: Illegal call sequence: local c (vr 6, variability constant, initial exact) cannot be set in state Instantiated"
    ));
    assert!(logged(
        "fmi2SetReal: Illegal call sequence: independent time (vr 0, variability continuous) cannot be set"
    ));
    assert!(logged(
        "fmi2SetReal: Illegal call sequence: parameter p (vr 4, variability fixed, initial exact) cannot be set in state stepComplete: only inputs and tunable parameters can be set there"
    ));
    assert!(logged(
        "fmi2SetReal: Illegal call sequence: called in state Terminated"
    ));
    assert!(logged3(
        "fmi3SetFloat64: Illegal call sequence: output e (vr 7, variability continuous, initial exact) cannot be set in state Step Mode"
    ));
}

#[test]
fn a_tunable_parameter_set_in_step_mode_acts_from_then_on_and_is_validated() {
    let c = fmi2();
    init2(c, None);
    assert_eq!(get2(c, Y), 1.0, "y = g x = 1 * 1");
    assert_eq!(set2(c, G, 3.0), 0);
    assert_eq!(get2(c, Y), 3.0, "the new gain acts at once");
    assert_eq!(set2(c, U, 1.0), 0);
    assert_eq!(step2(c, 0.0, 0.5, true), 0);
    assert_eq!(get2(c, Y), 4.5, "y = 3 (1 + 0.5)");
    // An invalid value is refused and changes nothing.
    assert_eq!(set2(c, G, -1.0), 3);
    assert!(logged("fmi2SetReal: g must be > 0, got -1"));
    assert_eq!(get2(c, G), 3.0);
    assert_eq!(step2(c, 0.5, 0.5, true), 0);
    assert_eq!(get2(c, Y), 6.0);
    // The XML declares it.
    let x = xml::model_description(
        strict(),
        FmiVersion::Fmi2,
        &Capabilities::full(strict(), FmiVersion::Fmi2),
        "KitStrict",
    );
    assert!(
        x.contains(r#"<ScalarVariable name="g" valueReference="5" description="output gain" causality="parameter" variability="tunable" initial="exact">"#),
        "{x}"
    );
    assert!(x.contains(r#"<ScalarVariable name="c" valueReference="6" description="a constant" causality="local" variability="constant" initial="exact">"#));
    // SAFETY: a live instance.
    unsafe { fmi2FreeInstance(c) };
}

#[test]
fn spec_check_keeps_tunable_constant_and_initial_consistent() {
    let base = || ModelSpec::new("C", "check", build);
    let err = |s: ModelSpec| s.check().err().unwrap_or_default();
    assert_eq!(err(strict().clone()), "");
    assert!(
        err(base().var(Variable::local(1, "x", "").tunable()))
            .contains("x is tunable but no parameter")
    );
    let mut const_param = Variable::parameter(1, "k", 1.0, "");
    const_param.variability = crate::model::Variability::Constant;
    assert!(err(base().var(const_param)).contains("k is constant but has causality parameter"));
    assert!(
        err(base().var(Variable::parameter(1, "k", 1.0, "").initial(Initial::Approx)))
            .contains("parameter k must have initial exact")
    );
    // An exact or approx output needs a start value.
    assert!(
        err(base().var(Variable::output(1, "y", "").initial(Initial::Exact)))
            .contains("y start value presence is wrong")
    );
}

#[test]
fn no_set_fmu_state_prior_to_current_point_is_honoured() {
    let c = fmi2();
    init2(c, None);
    let mut s0: *mut c_void = std::ptr::null_mut();
    let mut s1: *mut c_void = std::ptr::null_mut();
    let mut s2: *mut c_void = std::ptr::null_mut();
    // SAFETY: a live instance and FMU-state slots.
    unsafe {
        assert_eq!(set2(c, U, 1.0), 0);
        assert_eq!(fmi2GetFMUstate(c, &mut s0), 0);
        // Without the promise, going back is fine.
        assert_eq!(step2(c, 0.0, 0.125, false), 0);
        assert_eq!(fmi2SetFMUstate(c, s0), 0);
        assert_eq!(step2(c, 0.0, 0.125, false), 0);
        assert_eq!(fmi2GetFMUstate(c, &mut s1), 0);
        // The promise at t = 0.125: states from t = 0 are refused.
        assert_eq!(step2(c, 0.125, 0.125, true), 0);
        assert_eq!(fmi2GetFMUstate(c, &mut s2), 0);
        assert_eq!(fmi2SetFMUstate(c, s0), 3);
        assert!(logged(
            "fmi2SetFMUstate: Illegal call sequence: the FMU state to restore is at t = 0, before t = 0.125, \
             where fmi2DoStep was called with noSetFMUStatePriorToCurrentPoint = true \
             (noSetFMUStatePriorToCurrentPoint was true at t = 0.125)"
        ));
        assert_eq!(get2(c, X), 1.25, "a refused restore changes nothing");
        // A state at that point (or later) may be restored.
        assert_eq!(fmi2SetFMUstate(c, s1), 0);
        assert_eq!(get2(c, X), 1.125);
        assert_eq!(fmi2SetFMUstate(c, s2), 0);
        // A later promise moves the point; an earlier one does not.
        assert_eq!(step2(c, 0.25, 0.125, true), 0);
        assert_eq!(fmi2SetFMUstate(c, s1), 3);
        assert!(logged(
            "noSetFMUStatePriorToCurrentPoint was true at t = 0.25"
        ));
        assert_eq!(fmi2SetFMUstate(c, s2), 0);
        assert_eq!(step2(c, 0.25, 0.125, false), 0);
        assert_eq!(fmi2SetFMUstate(c, s1), 3, "the promise holds for the run");
        // A reset starts a new run without promises.
        assert_eq!(fmi2Reset(c), 0);
        assert_eq!(fmi2SetFMUstate(c, s0), 0);
        assert_eq!(get2(c, X), 1.0);
        for s in [&mut s0, &mut s1, &mut s2] {
            assert_eq!(fmi2FreeFMUstate(c, s), 0);
        }
        fmi2FreeInstance(c);
    }
    // FMI 3, the same rule.
    let i = fmi3();
    init3(i, None);
    // SAFETY: a live instance and FMU-state slots.
    unsafe {
        assert_eq!(fmi3GetFMUState(i, &mut s0), 0);
        assert_eq!(
            step3(i, 0.0, 0.5, true).0,
            0,
            "the promise at t = 0 forbids nothing"
        );
        assert_eq!(fmi3SetFMUState(i, s0), 0);
        assert_eq!(step3(i, 0.0, 0.5, true).0, 0);
        assert_eq!(step3(i, 0.5, 0.5, true).0, 0);
        assert_eq!(fmi3SetFMUState(i, s0), 3);
        assert!(logged3(
            "fmi3SetFMUState: Illegal call sequence: the FMU state to restore is at t = 0, before t = 0.5, \
             where fmi3DoStep was called with noSetFMUStatePriorToCurrentPoint = true"
        ));
        assert_eq!(fmi3FreeFMUState(i, &mut s0), 0);
        fmi3FreeInstance(i);
    }
}

#[test]
fn steps_past_a_defined_stop_time_are_refused() {
    let c = fmi2();
    init2(c, Some(0.3));
    // 0.1 + 0.1 + 0.1 = 0.30000000000000004: within the tolerance.
    let mut t = 0.0;
    for _ in 0..3 {
        assert_eq!(step2(c, t, 0.1, true), 0);
        t += 0.1;
    }
    assert_eq!(step2(c, t, 1e-6, true), 3);
    assert!(logged(
        "fmi2DoStep: Illegal call sequence: the step from 0.30000000000000004 to "
    ));
    assert!(logged(
        "ends after the stop time 0.3 (stopTimeDefined = true in fmi2SetupExperiment)"
    ));
    assert_eq!(get2(c, Y), 1.0, "refused, nothing changed");
    // SAFETY: a live instance.
    unsafe {
        assert_eq!(fmi2Terminate(c), 0);
        assert_eq!(fmi2Reset(c), 0);
    }
    // A stop time before the start time is refused; without one there is no limit.
    assert_eq!(setup2(c, Some(-1.0)), 3);
    assert!(logged(
        "fmi2SetupExperiment: stopTime must be finite and >= startTime 0, got -1"
    ));
    init2(c, None);
    assert_eq!(step2(c, 0.0, 100.0, true), 0);
    // SAFETY: a live instance.
    unsafe { fmi2FreeInstance(c) };
    let i = fmi3();
    init3(i, Some(1.0));
    assert_eq!(step3(i, 0.0, 1.0, true).0, 0);
    let (st, term, early, last) = step3(i, 1.0, 0.5, true);
    assert_eq!((st, term, early), (3, false, false));
    assert_eq!(last, 1.0);
    assert!(logged3(
        "fmi3DoStep: Illegal call sequence: the step from 1 to 1.5 ends after the stop time 1 \
         (stopTimeDefined = true in fmi3EnterInitializationMode)"
    ));
    // SAFETY: a live instance.
    unsafe { fmi3FreeInstance(i) };
}

#[test]
fn a_step_must_start_where_the_last_one_ended_up_to_rounding() {
    let c = fmi2();
    init2(c, None);
    assert_eq!(step2(c, 0.0, 0.1, true), 0);
    assert_eq!(step2(c, 0.2, 0.1, true), 3);
    assert!(logged(
        "fmi2DoStep: Illegal call sequence: currentCommunicationPoint 0.2 differs from the FMU time 0.1"
    ));
    // Importers compute points from integer ticks: an ulp off is accepted.
    assert_eq!(step2(c, 0.1f64.next_up(), 0.1, true), 0);
    assert_eq!(step2(c, 0.2 + 1e-10, 0.1, true), 0);
    // SAFETY: a live instance.
    unsafe { fmi2FreeInstance(c) };
}

#[test]
fn fmi2_status_functions_take_their_own_kind_only() {
    let c = fmi2();
    init2(c, None);
    assert_eq!(step2(c, 0.0, 0.5, true), 0);
    let (mut st, mut b, mut n, mut r) = (-1 as c_int, -1 as c_int, -1 as c_int, f64::NAN);
    let mut s: *const c_char = std::ptr::null();
    // SAFETY: a live instance and out-pointers.
    unsafe {
        assert_eq!(fmi2GetStatus(c, 0, &mut st), 0);
        assert_eq!(st, 0, "fmi2DoStepStatus: the last step returned fmi2OK");
        assert_eq!(fmi2GetRealStatus(c, 2, &mut r), 0);
        assert_eq!(r, 0.5);
        assert_eq!(fmi2GetBooleanStatus(c, 3, &mut b), 0);
        assert_eq!(b, 0, "fmi2Terminated: no termination requested");
        // fmi2PendingStatus cannot be retrieved: steps never return fmi2Pending.
        assert_eq!(fmi2GetStringStatus(c, 1, &mut s), 2);
        // A kind of another value type, an Integer status, an unknown kind: refused.
        assert_eq!(fmi2GetBooleanStatus(c, 0, &mut b), 3);
        assert!(logged(
            "fmi2GetBooleanStatus: status kind fmi2DoStepStatus (0) is not retrieved with fmi2GetBooleanStatus, which takes fmi2Terminated only"
        ));
        assert_eq!(fmi2GetRealStatus(c, 3, &mut r), 3);
        assert_eq!(fmi2GetStatus(c, 1, &mut st), 3);
        assert_eq!(fmi2GetIntegerStatus(c, 2, &mut n), 3);
        assert!(logged("no status kind has an fmi2Integer value"));
        assert_eq!(fmi2GetBooleanStatus(c, 7, &mut b), 3);
        assert!(logged("fmi2GetBooleanStatus: unknown fmi2StatusKind 7"));
        assert_eq!((b, n, r), (0, -1, 0.5), "refused calls write nothing");
        // No asynchronous steps, so nothing to cancel in any state.
        assert_eq!(fmi2CancelStep(c), 3);
        assert!(logged(
            "fmi2CancelStep: Illegal call sequence: called in state stepComplete: fmi2CancelStep is allowed in state stepInProgress only"
        ));
        fmi2FreeInstance(c);
    }
}

#[test]
fn after_terminate_only_getters_states_reset_and_free_are_allowed() {
    let c = fmi2();
    init2(c, None);
    assert_eq!(set2(c, U, 2.0), 0);
    assert_eq!(step2(c, 0.0, 0.5, true), 0);
    let mut s: *mut c_void = std::ptr::null_mut();
    // SAFETY: a live instance.
    unsafe {
        assert_eq!(fmi2Terminate(c), 0);
        assert_eq!(step2(c, 0.5, 0.5, true), 3);
        assert!(logged(
            "fmi2DoStep: Illegal call sequence: called in state Terminated"
        ));
        assert_eq!(fmi2Terminate(c), 3);
        assert_eq!(fmi2ExitInitializationMode(c), 3);
        assert_eq!(fmi2EnterInitializationMode(c), 3);
        assert_eq!(setup2(c, None), 3);
        assert_eq!(set2(c, U, 1.0), 3);
        assert_eq!(get2(c, X), 2.0);
        assert_eq!(fmi2GetFMUstate(c, &mut s), 0);
        assert_eq!(fmi2SetFMUstate(c, s), 0);
        assert_eq!(fmi2FreeFMUstate(c, &mut s), 0);
        assert_eq!(fmi2Reset(c), 0);
        init2(c, None);
        fmi2FreeInstance(c);
    }
    // FMI 3: Terminate is refused in Initialization Mode (and twice).
    let i = fmi3();
    // SAFETY: a live instance.
    unsafe {
        assert_eq!(
            fmi3EnterInitializationMode(i, false, 0.0, 0.0, false, 0.0),
            0
        );
        assert_eq!(fmi3Terminate(i), 3);
        assert!(logged3(
            "fmi3Terminate: Illegal call sequence: called in state Initialization Mode"
        ));
        assert_eq!(fmi3ExitInitializationMode(i), 0);
        assert_eq!(fmi3Terminate(i), 0);
        assert_eq!(fmi3Terminate(i), 3);
        assert_eq!(step3(i, 0.0, 0.1, true).0, 3);
        assert!(logged3(
            "fmi3DoStep: Illegal call sequence: called in state Terminated"
        ));
        assert_eq!(get3(i, X), 1.0);
        fmi3FreeInstance(i);
    }
}

#[test]
fn instantiation_needs_a_non_empty_instance_name() {
    let cb = callbacks();
    let g = token_c(
        strict(),
        FmiVersion::Fmi2,
        &Capabilities::full(strict(), FmiVersion::Fmi2),
    );
    for name in [c"", c" \t"] {
        // SAFETY: valid strings and callbacks.
        let c =
            unsafe { fmi2Instantiate(name.as_ptr(), 1, g.as_ptr(), std::ptr::null(), &cb, 0, 1) };
        assert!(c.is_null(), "{name:?}");
    }
    // SAFETY: NULL instanceName is refused before use.
    let c =
        unsafe { fmi2Instantiate(std::ptr::null(), 1, g.as_ptr(), std::ptr::null(), &cb, 0, 1) };
    assert!(c.is_null());
    assert!(logged(
        "fmi2Instantiate: instanceName \" \t\" must be a non-empty string"
    ));
    assert!(logged("fmi2Instantiate: instanceName is NULL"));
    let t = token_c(
        strict(),
        FmiVersion::Fmi3,
        &Capabilities::full(strict(), FmiVersion::Fmi3),
    );
    let empty: &CStr = c"";
    assert!(instantiate3(empty, &t).is_null());
    assert!(logged3(
        "fmi3InstantiateCoSimulation: instanceName \"\" must be a non-empty string"
    ));
}

/// An FMI 3 `KitTerm` with `earlyReturnAllowed` as given, initialized.
fn term3(early_return_allowed: bool) -> *mut c_void {
    let spec = model("KitTerm");
    let tok = token_c(
        spec,
        FmiVersion::Fmi3,
        &Capabilities::full(spec, FmiVersion::Fmi3),
    );
    // SAFETY: valid strings; no intermediate update callback, so the NULL
    // environment is never used.
    let i = unsafe {
        fmi3InstantiateCoSimulation(
            c"term3".as_ptr(),
            tok.as_ptr(),
            std::ptr::null(),
            false,
            true,
            false,
            early_return_allowed,
            std::ptr::null(),
            0,
            std::ptr::null_mut(),
            Some(logger3),
            None,
        )
    };
    assert!(!i.is_null());
    init3(i, None);
    i
}

#[test]
fn fmi2_a_termination_request_is_a_discarded_step_with_fmi2_terminated() {
    let spec = model("KitTerm");
    let c = instantiate2_full(c"term2", spec);
    assert!(!c.is_null());
    init2(c, None);
    let (mut st, mut b, mut r) = (-1 as c_int, -1 as c_int, f64::NAN);
    let mut before: *mut c_void = std::ptr::null_mut();
    // SAFETY: a live instance and out-pointers.
    unsafe {
        assert_eq!(step2(c, 0.0, 0.25, false), 0);
        assert_eq!(fmi2GetBooleanStatus(c, 3, &mut b), 0);
        assert_eq!(b, 0);
        assert_eq!(fmi2GetFMUstate(c, &mut before), 0);
        // The step over t_end = 0.5 ends there and asks to terminate.
        assert_eq!(step2(c, 0.25, 0.5, false), 2);
        assert!(logged("KitTerm: t_end = 0.5 reached"));
        assert_eq!(fmi2GetBooleanStatus(c, 3, &mut b), 0);
        assert_eq!(b, 1, "fmi2Terminated");
        assert_eq!(fmi2GetRealStatus(c, 2, &mut r), 0);
        assert_eq!(r, 0.5, "fmi2LastSuccessfulTime = t_end");
        assert_eq!(fmi2GetStatus(c, 0, &mut st), 0);
        assert_eq!(st, 2, "fmi2DoStepStatus: the step returned fmi2Discard");
        assert_eq!(get2(c, term::Y), 0.5, "the values at t_end");
        // No further step; the state before may be restored (no promise).
        assert_eq!(step2(c, 0.5, 0.1, false), 3);
        assert!(logged(
            "fmi2DoStep: Illegal call sequence: called in state stepFailed (the FMU requested termination at t = 0.5)"
        ));
        assert_eq!(fmi2SetFMUstate(c, before), 0);
        assert_eq!(fmi2GetBooleanStatus(c, 3, &mut b), 0);
        assert_eq!(b, 0, "the restored state had not asked to terminate");
        // A step ending on t_end (up to rounding) also terminates, at t + h.
        assert_eq!(step2(c, 0.25, 0.25 + 1e-12, false), 2);
        assert_eq!(fmi2GetRealStatus(c, 2, &mut r), 0);
        assert_eq!(r, 0.25 + (0.25 + 1e-12));
        assert_eq!(fmi2GetBooleanStatus(c, 3, &mut b), 0);
        assert_eq!(b, 1);
        assert_eq!(fmi2FreeFMUstate(c, &mut before), 0);
        assert_eq!(fmi2Terminate(c), 0);
        assert_eq!(get2(c, term::Y), 0.5);
        // A reset forgets the request.
        assert_eq!(fmi2Reset(c), 0);
        init2(c, None);
        assert_eq!(step2(c, 0.0, 0.25, false), 0);
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi3_a_termination_request_returns_early_or_discards_as_allowed() {
    // Early return allowed: fmi3OK, earlyReturn, stopped at t_end.
    let i = term3(true);
    assert_eq!(step3(i, 0.0, 0.25, false), (0, false, false, 0.25));
    assert_eq!(step3(i, 0.25, 0.5, false), (0, true, true, 0.5));
    assert_eq!(get3(i, term::Y), 0.5);
    let (st, term, early, last) = step3(i, 0.5, 0.25, false);
    assert_eq!((st, term, early), (3, false, false));
    assert_eq!(last, 0.5);
    assert!(logged3(
        "fmi3DoStep: Illegal call sequence: the FMU requested termination at t = 0.5"
    ));
    // SAFETY: a live instance.
    unsafe {
        assert_eq!(fmi3Terminate(i), 0);
        fmi3FreeInstance(i);
    }
    // Not allowed: fmi3Discard, with terminateSimulation and lastSuccessfulTime.
    let i = term3(false);
    assert_eq!(step3(i, 0.0, 0.75, false), (2, true, false, 0.5));
    assert_eq!(get3(i, term::Y), 0.5);
    assert_eq!(step3(i, 0.5, 0.25, false).0, 3);
    // SAFETY: a live instance.
    unsafe {
        assert_eq!(fmi3Terminate(i), 0);
        fmi3FreeInstance(i);
    }
    // A step that ends on t_end: fmi3OK without early return, either way.
    for allowed in [true, false] {
        let i = term3(allowed);
        assert_eq!(
            step3(i, 0.0, 0.5, false),
            (0, true, false, 0.5),
            "{allowed}"
        );
        assert_eq!(step3(i, 0.5, 0.5, false).0, 3);
        // SAFETY: a live instance.
        unsafe { fmi3FreeInstance(i) };
    }
    assert!(
        LOG3.lock()
            .is_ok_and(|l| l.iter().any(|m| m == "KitTerm: t_end = 0.5 reached"))
    );
    // The XML says steps may end early.
    let spec = model("KitTerm");
    let x = xml::model_description(
        spec,
        FmiVersion::Fmi3,
        &Capabilities::full(spec, FmiVersion::Fmi3),
        "KitTerm",
    );
    assert!(x.contains(r#"mightReturnEarlyFromDoStep="true""#), "{x}");
    let x = xml::model_description(
        strict(),
        FmiVersion::Fmi3,
        &Capabilities::full(strict(), FmiVersion::Fmi3),
        "KitStrict",
    );
    assert!(x.contains(r#"mightReturnEarlyFromDoStep="false""#));
}
