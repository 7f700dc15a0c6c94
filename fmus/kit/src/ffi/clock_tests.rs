//! FMI 3 Clocks in Co-Simulation with event mode through the exported C
//! functions: every rule of the strict instance (`crate::instance`
//! `clocks`), on a test model with a constant, a fixed, a tunable and a
//! triggered input Clock, an output Clock, clocked inputs and outputs;
//! FMU states; the model description; the spec checks.

use std::ffi::{CStr, c_void};

use super::tests::{
    fmi3DeserializeFMUState, fmi3DoStep, fmi3EnterEventMode, fmi3EnterInitializationMode,
    fmi3EnterStepMode, fmi3ExitInitializationMode, fmi3FreeFMUState, fmi3FreeInstance,
    fmi3GetBoolean, fmi3GetClock, fmi3GetFMUState, fmi3GetFloat64, fmi3GetInt32,
    fmi3GetIntervalDecimal, fmi3GetIntervalFraction, fmi3GetShiftDecimal,
    fmi3InstantiateCoSimulation, fmi3SerializeFMUState, fmi3SerializedFMUStateSize, fmi3SetClock,
    fmi3SetFMUState, fmi3SetFloat64, fmi3SetIntervalDecimal, fmi3SetShiftDecimal,
    fmi3SetShiftFraction, fmi3UpdateDiscreteStates, logged3, logger3, registry, token_c,
};
use crate::caps::{Capabilities, FmiVersion};
use crate::event_mode::{EventModel, EventStep};
use crate::model::{
    DependencyKind, IntervalVariability, Model, ModelSpec, StepError, Values, Variable, Vr,
};
use crate::model_exchange::EventUpdate;
use crate::{Inputs, LogLevel, xml};

/// Input Clock, constant: interval 0.25, shift 0.5.
pub const TICK: Vr = 1;
/// Input Clock, fixed: interval 0.5 (settable in Initialization Mode).
pub const FIXED: Vr = 2;
/// Input Clock, tunable: interval 0.2, can be deactivated.
pub const TUNABLE: Vr = 3;
/// Input Clock, triggered, can be deactivated: its update ticks `OUT`.
pub const TRIG: Vr = 4;
/// Output Clock: ticked in steps (input `fire`) and in updates (`TRIG`).
pub const OUT: Vr = 5;
/// Clocked input (by `TICK`, `TRIG`).
pub const X: Vr = 6;
/// Clocked output (by `TICK`): 2 x while `TICK` is active.
pub const Y: Vr = 7;
/// Clocked output (by `OUT`): the number of `OUT` ticks.
pub const N: Vr = 8;
/// Input: 1 ticks `OUT` at the end of the step, 2 in its middle.
pub const FIRE: Vr = 9;
/// Output: the number of updates with `TICK` active (unclocked).
pub const UPDATES: Vr = 10;

struct KitClocks;

impl Model for KitClocks {
    fn init(&mut self, v: &mut Values) {
        v[N] = 0.0;
        v[UPDATES] = 0.0;
    }
    fn outputs(&self, _t: f64, v: &mut Values, _u: &Inputs) {
        if v.bool(TICK) {
            v[Y] = 2.0 * v[X];
        }
    }
    fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
        Some(self)
    }
}

impl EventModel for KitClocks {
    fn step_until_event(
        &mut self,
        t: f64,
        t_end: f64,
        v: &mut Values,
        u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<EventStep, StepError> {
        let fire = u.value(FIRE);
        let at = if fire >= 2.0 {
            0.5 * (t + t_end)
        } else if fire >= 1.0 {
            t_end
        } else {
            return Ok(EventStep::completed(t_end));
        };
        v[N] += 1.0;
        v.set_bool(OUT, true);
        Ok(EventStep::event_at(at))
    }
    fn update_discrete_states(
        &mut self,
        _t: f64,
        v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        if v.bool(TICK) {
            v[UPDATES] += 1.0;
        }
        if v.bool(TRIG) {
            v[N] += 1.0;
            v.set_bool(OUT, true);
        }
        EventUpdate::default()
    }
}

/// The test model with Clocks.
pub fn spec() -> ModelSpec {
    ModelSpec::new("KitClocks", "Clocks", |_| Ok(Box::new(KitClocks)))
        .var(
            Variable::input_clock(TICK, "tick", IntervalVariability::Constant, "")
                .interval(0.25)
                .shift(0.5),
        )
        .var(Variable::input_clock(FIXED, "fixed", IntervalVariability::Fixed, "").interval(0.5))
        .var(
            Variable::input_clock(TUNABLE, "tunable", IntervalVariability::Tunable, "")
                .interval(0.2)
                .can_be_deactivated(),
        )
        .var(
            Variable::input_clock(TRIG, "trig", IntervalVariability::Triggered, "")
                .can_be_deactivated(),
        )
        .var(
            Variable::output_clock(OUT, "out", "").depends_on(&[(TRIG, DependencyKind::Dependent)]),
        )
        .var(Variable::input(X, "x", 0.0, "").clocked_by(&[TICK, TRIG]))
        .var(
            Variable::output(Y, "y", "")
                .clocked_by(&[TICK])
                .depends_on(&[
                    (TICK, DependencyKind::Dependent),
                    (X, DependencyKind::Dependent),
                ]),
        )
        .var(Variable::int_output(N, "n", "").clocked_by(&[OUT]))
        .var(Variable::input(FIRE, "fire", 0.0, ""))
        .var(Variable::int_output(UPDATES, "updates", ""))
        .directional_derivatives(false)
        .interpolate_inputs(false)
        .event_mode()
}

fn kit_clocks() -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == "KitClocks")
        .unwrap_or_else(|| panic!("KitClocks is registered"))
}

pub(super) fn instantiate(
    name: &CStr,
    spec: &ModelSpec,
    event_mode_used: bool,
    early: bool,
) -> *mut c_void {
    let tok = token_c(
        spec,
        FmiVersion::Fmi3,
        &Capabilities::full(spec, FmiVersion::Fmi3),
    );
    // SAFETY: valid strings, no required variables, a valid logger.
    unsafe {
        fmi3InstantiateCoSimulation(
            name.as_ptr(),
            tok.as_ptr(),
            std::ptr::null(),
            false,
            true,
            event_mode_used,
            early,
            std::ptr::null(),
            0,
            std::ptr::null_mut(),
            Some(logger3),
            None,
        )
    }
}

/// An instance in Initialization Mode (start 0, stop 10).
fn in_init(name: &CStr, early: bool) -> *mut c_void {
    let i = instantiate(name, kit_clocks(), true, early);
    assert!(!i.is_null());
    // SAFETY: a live instance.
    let st = unsafe { fmi3EnterInitializationMode(i, false, 0.0, 0.0, true, 10.0) };
    assert_eq!(st, 0);
    i
}

/// An instance in its initial Event Mode.
fn start(name: &CStr, early: bool) -> *mut c_void {
    let i = in_init(name, early);
    // SAFETY: a live instance.
    assert_eq!(unsafe { fmi3ExitInitializationMode(i) }, 0);
    i
}

/// `fmi3UpdateDiscreteStates`: (status, discreteStatesNeedUpdate).
pub(super) fn update(i: *mut c_void) -> (i32, bool) {
    let (mut need, mut term, mut nominals, mut values, mut defined, mut next) =
        (false, false, false, false, false, 0.0);
    // SAFETY: a live instance and valid out-pointers.
    let st = unsafe {
        fmi3UpdateDiscreteStates(
            i,
            &mut need,
            &mut term,
            &mut nominals,
            &mut values,
            &mut defined,
            &mut next,
        )
    };
    (st, need)
}

/// `fmi3DoStep`: (status, eventHandlingNeeded, earlyReturn, lastSuccessfulTime).
pub(super) fn step(i: *mut c_void, t: f64, h: f64) -> (i32, bool, bool, f64) {
    let (mut event, mut term, mut early, mut last) = (false, false, false, f64::NAN);
    // SAFETY: a live instance and valid out-pointers.
    let st = unsafe { fmi3DoStep(i, t, h, false, &mut event, &mut term, &mut early, &mut last) };
    (st, event, early, last)
}

pub(super) fn set_clock(i: *mut c_void, vr: Vr, on: bool) -> i32 {
    // SAFETY: a live instance, one value.
    unsafe { fmi3SetClock(i, &vr, 1, &on) }
}

/// `fmi3GetClock` of one Clock: (status, value).
pub(super) fn get_clock(i: *mut c_void, vr: Vr) -> (i32, bool) {
    let mut b = false;
    // SAFETY: a live instance, one value.
    let st = unsafe { fmi3GetClock(i, &vr, 1, &mut b) };
    (st, b)
}

pub(super) fn set_f64(i: *mut c_void, vr: Vr, x: f64) -> i32 {
    // SAFETY: a live instance, one value.
    unsafe { fmi3SetFloat64(i, &vr, 1, &x, 1) }
}

pub(super) fn get_f64(i: *mut c_void, vr: Vr) -> (i32, f64) {
    let mut x = f64::NAN;
    // SAFETY: a live instance, one value.
    let st = unsafe { fmi3GetFloat64(i, &vr, 1, &mut x, 1) };
    (st, x)
}

pub(super) fn get_i32(i: *mut c_void, vr: Vr) -> (i32, i32) {
    let mut x = -1;
    // SAFETY: a live instance, one value.
    let st = unsafe { fmi3GetInt32(i, &vr, 1, &mut x, 1) };
    (st, x)
}

/// Event Mode at the end of a step, from Step Mode.
pub(super) fn enter_event_mode(i: *mut c_void) {
    // SAFETY: a live instance.
    assert_eq!(unsafe { fmi3EnterEventMode(i) }, 0);
}

pub(super) fn enter_step_mode(i: *mut c_void) {
    // SAFETY: a live instance.
    assert_eq!(unsafe { fmi3EnterStepMode(i) }, 0);
}

pub(super) fn free(i: *mut c_void) {
    // SAFETY: a live instance, freed once.
    unsafe { fmi3FreeInstance(i) }
}

#[test]
fn clocks_need_event_mode_used() {
    let i = instantiate(c"clk-noem", kit_clocks(), false, false);
    assert!(
        !i.is_null(),
        "instantiation is accepted (FMPy loads FMUs so)"
    );
    // SAFETY: a live instance.
    let st = unsafe { fmi3EnterInitializationMode(i, false, 0.0, 0.0, false, 0.0) };
    assert_eq!(st, 3);
    assert!(logged3(
        "For FMUs that have clocks, eventModeUsed = fmi3True is required"
    ));
    free(i);
    // And a spec with Clocks but without event mode is refused.
    let mut s = spec();
    s.event_mode = false;
    assert!(s.check().unwrap_err().contains("Clocks need event mode"));
}

#[test]
fn set_clock_only_on_input_clocks_in_event_mode() {
    let i = in_init(c"clk-set", false);
    // Initialization Mode: refused.
    assert_eq!(set_clock(i, TICK, true), 3);
    assert!(logged3("fmi3SetClock called in state Initialization Mode"));
    // SAFETY: a live instance.
    assert_eq!(unsafe { fmi3ExitInitializationMode(i) }, 0);
    // Output Clock, a variable that is no Clock, an unknown vr.
    assert_eq!(set_clock(i, OUT, true), 3);
    assert!(logged3("is an output Clock: the FMU activates it"));
    assert_eq!(set_clock(i, X, true), 3);
    assert!(logged3("x (vr 6) is no Clock"));
    assert_eq!(set_clock(i, 99, true), 3);
    // Deactivation: only with canBeDeactivated.
    assert_eq!(set_clock(i, FIXED, false), 3);
    assert!(logged3("fixed (vr 2) has canBeDeactivated = false"));
    assert_eq!(set_clock(i, TRIG, true), 0);
    assert_eq!(set_clock(i, TRIG, false), 0);
    // The constant Clock's first tick is at 0.5: not at 0.
    assert_eq!(set_clock(i, TICK, true), 3);
    assert!(logged3(
        "does not tick at t = 0 (its next tick is at t = 0.5)"
    ));
    // Fixed (interval 0.5, shift 0) and tunable (0.2) tick at 0.
    assert_eq!(set_clock(i, FIXED, true), 0);
    assert_eq!(set_clock(i, TUNABLE, true), 0);
    assert_eq!(update(i), (0, false));
    // Periodic Clocks: one update per Event Mode.
    assert_eq!(set_clock(i, FIXED, true), 3);
    assert!(logged3("at most one update per Event Mode"));
    // Triggered Clocks: as often as the importer likes.
    assert_eq!(set_clock(i, TRIG, true), 0);
    assert_eq!(update(i), (0, true), "trig ticks out in the update");
    assert_eq!(get_clock(i, OUT), (0, true));
    assert_eq!(update(i), (0, false));
    enter_step_mode(i);
    // Step Mode: refused.
    assert_eq!(set_clock(i, TRIG, true), 3);
    assert!(logged3("fmi3SetClock called in state Step Mode"));
    assert_eq!(step(i, 0.0, 0.5), (0, false, false, 0.5));
    enter_event_mode(i);
    // 0.5: the first tick of the constant Clock, and of the fixed one.
    assert_eq!(set_clock(i, TICK, true), 0);
    assert_eq!(set_clock(i, FIXED, true), 0);
    // 0.5 is no tick of the tunable Clock (0, 0.2, 0.4, 0.6, ...).
    assert_eq!(set_clock(i, TUNABLE, true), 3);
    assert!(logged3("its next tick is at t = 0.6"));
    assert_eq!(update(i), (0, false));
    enter_step_mode(i);
    free(i);
}

#[test]
fn clocked_variables_only_while_a_clock_is_active() {
    let i = in_init(c"clk-vars", false);
    // Initialization Mode: clocked variables can be set and read.
    assert_eq!(set_f64(i, X, 1.5), 0);
    assert_eq!(get_f64(i, X), (0, 1.5));
    assert_eq!(get_i32(i, N), (0, 0));
    // SAFETY: a live instance.
    assert_eq!(unsafe { fmi3ExitInitializationMode(i) }, 0);
    // Event Mode, Clocks inactive: refused, naming the variable and Clocks.
    assert_eq!(set_f64(i, X, 2.0), 3);
    assert!(logged3(
        "input x (vr 6) is clocked by tick, trig: it can be set only while one of its Clocks is active"
    ));
    assert_eq!(get_f64(i, Y).0, 3);
    assert!(logged3(
        "output y (vr 7) is clocked by tick: it can be read only while"
    ));
    // Unclocked variables as before.
    assert_eq!(set_f64(i, FIRE, 0.0), 0);
    // Active trig: x settable, y (clocked by tick only) still not readable.
    assert_eq!(set_clock(i, TRIG, true), 0);
    assert_eq!(set_f64(i, X, 2.0), 0);
    assert_eq!(get_f64(i, X), (0, 2.0));
    assert_eq!(get_f64(i, Y).0, 3);
    // A Clock is read and set with the Clock functions only.
    let mut b = false;
    // SAFETY: a live instance, one value.
    assert_eq!(unsafe { fmi3GetBoolean(i, &TRIG, 1, &mut b, 1) }, 3);
    assert!(logged3(
        "trig (vr 4) is a Clock: fmi3GetClock / fmi3SetClock"
    ));
    assert_eq!(update(i), (0, true));
    // The update deactivated trig: x no longer settable; out active (the
    // model ticked it): n readable.
    assert_eq!(set_f64(i, X, 3.0), 3);
    assert_eq!(get_i32(i, N), (0, 1));
    assert_eq!(update(i), (0, false));
    assert_eq!(get_i32(i, N).0, 3);
    enter_step_mode(i);
    assert_eq!(step(i, 0.0, 0.5), (0, false, false, 0.5));
    // Step Mode: refused.
    assert_eq!(set_f64(i, X, 3.0), 3);
    assert!(logged3("not in state Step Mode"));
    assert_eq!(get_f64(i, Y).0, 3);
    enter_event_mode(i);
    assert_eq!(set_clock(i, TICK, true), 0);
    assert_eq!(set_f64(i, X, 3.0), 0);
    assert_eq!(get_f64(i, Y), (0, 6.0));
    assert_eq!(update(i), (0, false));
    assert_eq!(get_f64(i, Y).0, 3);
    assert_eq!(get_i32(i, UPDATES), (0, 1));
    free(i);
}

#[test]
fn output_clock_ticks_signal_events_and_read_once() {
    let i = start(c"clk-out", true);
    // GetClock: output Clocks only, Event Mode only.
    assert_eq!(get_clock(i, TICK).0, 3);
    assert!(logged3("tick (vr 1) is an input Clock"));
    assert_eq!(get_clock(i, OUT), (0, false));
    assert_eq!(update(i), (0, false));
    enter_step_mode(i);
    assert_eq!(get_clock(i, OUT).0, 3);
    assert!(logged3("fmi3GetClock called in state Step Mode"));
    // A tick at the step's end: eventHandlingNeeded there.
    assert_eq!(set_f64(i, FIRE, 1.0), 0);
    assert_eq!(step(i, 0.0, 0.25), (0, true, false, 0.25));
    assert_eq!(step(i, 0.25, 0.25).0, 3, "no step before Event Mode");
    enter_event_mode(i);
    assert_eq!(get_i32(i, N), (0, 1));
    assert_eq!(get_clock(i, OUT), (0, true));
    assert_eq!(get_clock(i, OUT), (0, false), "once per activation");
    assert_eq!(update(i), (0, false));
    assert_eq!(get_i32(i, N).0, 3);
    enter_step_mode(i);
    // A tick inside the step, early return allowed: the step returns there.
    assert_eq!(set_f64(i, FIRE, 2.0), 0);
    assert_eq!(step(i, 0.25, 0.5), (0, true, true, 0.5));
    enter_event_mode(i);
    assert_eq!(get_clock(i, OUT), (0, true));
    assert_eq!(update(i), (0, false));
    enter_step_mode(i);
    free(i);
    // Without early return a tick inside the step cannot be signalled.
    let i = start(c"clk-out-noearly", false);
    assert_eq!(update(i), (0, false));
    enter_step_mode(i);
    assert_eq!(set_f64(i, FIRE, 2.0), 0);
    assert_eq!(step(i, 0.0, 0.5).0, 3);
    assert!(logged3(
        "inside the step to t = 0.5, and earlyReturnAllowed = false"
    ));
    free(i);
}

#[test]
fn intervals_and_shifts() {
    let i = in_init(c"clk-int", false);
    let (mut x, mut q) = ([0.0; 3], [0i32; 3]);
    // SAFETY: a live instance, arrays of the lengths given, throughout.
    unsafe {
        assert_eq!(
            fmi3GetIntervalDecimal(
                i,
                [TICK, FIXED, TUNABLE].as_ptr(),
                3,
                x.as_mut_ptr(),
                q.as_mut_ptr()
            ),
            0
        );
        assert_eq!(x, [0.25, 0.5, 0.2]);
        assert_eq!(q, [1, 1, 1], "fmi3IntervalUnchanged");
        assert_eq!(
            fmi3GetShiftDecimal(i, [TICK, FIXED].as_ptr(), 2, x.as_mut_ptr()),
            0
        );
        assert_eq!(&x[..2], &[0.5, 0.0]);
        // Triggered Clocks have no interval; constant ones are never set.
        assert_eq!(
            fmi3GetIntervalDecimal(i, &TRIG, 1, x.as_mut_ptr(), q.as_mut_ptr()),
            3
        );
        assert!(logged3(
            "trig (vr 4) is triggered: only time-based Clocks (constant, fixed, tunable, changing, countdown) have an interval"
        ));
        assert_eq!(fmi3SetIntervalDecimal(i, &TICK, 1, &0.5), 3);
        assert!(logged3(
            "is the intervalDecimal of the model description, never set"
        ));
        assert_eq!(fmi3SetShiftDecimal(i, &TICK, 1, &0.0), 3);
        assert_eq!(fmi3SetIntervalDecimal(i, &FIXED, 1, &-1.0), 3);
        // Fixed: interval and shift in Initialization Mode.
        assert_eq!(fmi3SetIntervalDecimal(i, &FIXED, 1, &0.3), 0);
        assert_eq!(fmi3SetShiftDecimal(i, &FIXED, 1, &0.1), 0);
        // Fractions: supportsFraction = false.
        let (mut c, mut r) = (0u64, 0u64);
        assert_eq!(
            fmi3GetIntervalFraction(i, &FIXED, 1, &mut c, &mut r, q.as_mut_ptr()),
            3
        );
        assert!(logged3("supportsFraction = false"));
        assert_eq!(fmi3SetShiftFraction(i, &FIXED, 1, &c, &r), 3);
        assert_eq!(fmi3ExitInitializationMode(i), 0);
        // Event Mode: fixed Clocks' intervals no longer set, tunable ones are.
        assert_eq!(fmi3SetIntervalDecimal(i, &FIXED, 1, &0.4), 3);
        assert!(logged3("is set in Initialization Mode only"));
        assert_eq!(fmi3SetShiftDecimal(i, &FIXED, 1, &0.0), 3);
        assert_eq!(
            fmi3GetIntervalDecimal(i, &FIXED, 1, x.as_mut_ptr(), q.as_mut_ptr()),
            0
        );
        assert_eq!((x[0], q[0]), (0.3, 1));
        // The fixed Clock now ticks at 0.1, 0.4, 0.7, ...
        assert_eq!(set_clock(i, FIXED, true), 3);
        assert!(logged3("its next tick is at t = 0.1"));
        // The tunable Clock from 0 by 0.5: ticks at 0.5, 1.0, ...
        assert_eq!(fmi3SetIntervalDecimal(i, &TUNABLE, 1, &0.5), 0);
        assert_eq!(set_clock(i, TUNABLE, true), 3);
        assert!(logged3("its next tick is at t = 0.5"));
        assert_eq!(update(i), (0, false));
        enter_step_mode(i);
        assert_eq!(
            fmi3GetIntervalDecimal(i, &TICK, 1, x.as_mut_ptr(), q.as_mut_ptr()),
            3
        );
        assert!(logged3("fmi3GetIntervalDecimal called in state Step Mode"));
        assert_eq!(step(i, 0.0, 0.4), (0, false, false, 0.4));
        enter_event_mode(i);
        assert_eq!(set_clock(i, FIXED, true), 0);
        assert_eq!(set_clock(i, TUNABLE, true), 3);
        assert_eq!(update(i), (0, false));
        enter_step_mode(i);
        assert_eq!(step(i, 0.4, 0.1), (0, false, false, 0.5));
        enter_event_mode(i);
        assert_eq!(set_clock(i, TUNABLE, true), 0);
        assert_eq!(update(i), (0, false));
    }
    free(i);
    // An FMU without Clocks refuses every Clock function.
    let plain = &registry()[0];
    let tok = token_c(
        plain,
        FmiVersion::Fmi3,
        &Capabilities::full(plain, FmiVersion::Fmi3),
    );
    let j = super::tests::instantiate3(c"clk-none", &tok);
    assert_eq!(set_clock(j, 1, true), 3);
    assert_eq!(get_clock(j, 1).0, 3);
    // SAFETY: a live instance, one value.
    let st = unsafe { fmi3GetShiftDecimal(j, &TICK, 1, x.as_mut_ptr()) };
    assert_eq!(st, 3);
    assert!(logged3("this FMU has no clocks"));
    free(j);
}

#[test]
fn fmu_state_covers_the_clocks() {
    let i = start(c"clk-state", true);
    assert_eq!(update(i), (0, false));
    enter_step_mode(i);
    assert_eq!(step(i, 0.0, 0.5), (0, false, false, 0.5));
    enter_event_mode(i);
    assert_eq!(set_clock(i, TICK, true), 0);
    assert_eq!(set_f64(i, X, 1.0), 0);
    // SAFETY: a live instance throughout; states freed at the end.
    unsafe {
        let mut active: *mut c_void = std::ptr::null_mut();
        assert_eq!(fmi3GetFMUState(i, &mut active), 0);
        assert_eq!(update(i), (0, false));
        // Serialized too: the tick active, not yet updated in this Event Mode.
        let mut size = 0usize;
        assert_eq!(fmi3SerializedFMUStateSize(i, active, &mut size), 0);
        let mut bytes = vec![0u8; size];
        assert_eq!(
            fmi3SerializeFMUState(i, active, bytes.as_mut_ptr(), size),
            0
        );
        let mut copy: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            fmi3DeserializeFMUState(i, bytes.as_ptr(), size, &mut copy),
            0
        );
        for s in [active, copy] {
            assert_eq!(fmi3SetFMUState(i, s), 0);
            assert_eq!(get_f64(i, Y), (0, 2.0), "the tick is active again");
            assert_eq!(update(i), (0, false));
            assert_eq!(set_clock(i, TICK, true), 3, "and updated once");
            assert_eq!(get_i32(i, UPDATES), (0, 1));
        }
        // A pending output tick, unread: read after the restore.
        enter_step_mode(i);
        assert_eq!(set_f64(i, FIRE, 1.0), 0);
        assert_eq!(step(i, 0.5, 0.25), (0, true, false, 0.75));
        let mut pending: *mut c_void = std::ptr::null_mut();
        assert_eq!(fmi3GetFMUState(i, &mut pending), 0);
        enter_event_mode(i);
        assert_eq!(get_clock(i, OUT), (0, true));
        assert_eq!(fmi3SetFMUState(i, pending), 0);
        enter_event_mode(i);
        assert_eq!(get_clock(i, OUT), (0, true));
        assert_eq!(update(i), (0, false));
        for mut s in [active, copy, pending] {
            assert_eq!(fmi3FreeFMUState(i, &mut s), 0);
        }
    }
    free(i);
}

#[test]
fn model_description_declares_the_clocks() {
    let s = kit_clocks();
    let x3 = xml::model_description(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
        "KitClocks",
    );
    for needle in [
        "<Clock name=\"tick\" valueReference=\"1\" causality=\"input\" variability=\"discrete\" intervalVariability=\"constant\" intervalDecimal=\"0.25\" shiftDecimal=\"0.5\"/>",
        "<Clock name=\"tunable\" valueReference=\"3\" causality=\"input\" variability=\"discrete\" intervalVariability=\"tunable\" canBeDeactivated=\"true\" intervalDecimal=\"0.2\"/>",
        "<Clock name=\"out\" valueReference=\"5\" causality=\"output\" variability=\"discrete\" intervalVariability=\"triggered\"/>",
        "clocks=\"1 4\"",
        "<Output valueReference=\"5\" dependencies=\"4\" dependenciesKind=\"dependent\"/>",
        "<Output valueReference=\"7\" dependencies=\"1 6\"",
    ] {
        assert!(x3.contains(needle), "{needle} in {x3}");
    }
    // Output Clocks are initial unknowns, clocked outputs not.
    assert!(
        x3.contains("<InitialUnknown valueReference=\"5\"/>"),
        "{x3}"
    );
    assert!(!x3.contains("<InitialUnknown valueReference=\"7\""), "{x3}");
    assert!(!x3.contains("<InitialUnknown valueReference=\"8\""), "{x3}");
    // FMI 3 only.
    assert!(!s.supports(FmiVersion::Fmi2));
    assert_eq!(
        s.first_fmi3_only()
            .and_then(|v| v.fmi3_only_reason())
            .as_deref(),
        Some("is a Clock (FMI 3 only)")
    );
}

#[test]
fn the_spec_check_refuses_inconsistent_clocks() {
    let base = || ModelSpec::new("C", "", |_| Ok(Box::new(KitClocks))).event_mode();
    let refused = |s: ModelSpec, needle: &str| {
        let e = s.check().expect_err(needle);
        assert!(e.contains(needle), "{e}");
    };
    refused(
        base().var(Variable::input_clock(
            1,
            "c",
            IntervalVariability::Constant,
            "",
        )),
        "constant periodic Clock without intervalDecimal",
    );
    refused(
        base().var(Variable::input_clock(1, "c", IntervalVariability::Constant, "").interval(0.0)),
        "has intervalDecimal 0",
    );
    let mut out = Variable::output_clock(1, "c", "");
    out.clock = out.clock.map(|mut c| {
        c.interval_variability = IntervalVariability::Constant;
        c
    });
    refused(
        base().var(out.interval(1.0)),
        "output Clocks must be triggered",
    );
    // Aperiodic Clocks: the model gives the intervals, none in the XML.
    assert_eq!(
        base()
            .var(Variable::input_clock(
                1,
                "c",
                IntervalVariability::Countdown,
                "",
            ))
            .check(),
        Ok(())
    );
    refused(
        base().var(Variable::input_clock(1, "c", IntervalVariability::Changing, "").interval(1.0)),
        "is changing: only periodic Clocks have intervalDecimal",
    );
    // Fixed without intervalDecimal: the model gives interval and shift.
    assert_eq!(
        base()
            .var(Variable::input_clock(
                1,
                "c",
                IntervalVariability::Fixed,
                "",
            ))
            .check(),
        Ok(())
    );
    refused(
        base().var(Variable::input_clock(1, "c", IntervalVariability::Tunable, "").shift(0.5)),
        "without intervalDecimal the model gives the interval and the shift",
    );
    refused(
        base().var(Variable::input_clock(1, "c", IntervalVariability::Triggered, "").interval(1.0)),
        "only periodic Clocks have intervalDecimal",
    );
    refused(
        base()
            .var(Variable::input(1, "u", 0.0, ""))
            .var(Variable::input(2, "x", 0.0, "").clocked_by(&[1])),
        "is clocked by vr 1, which is no Clock",
    );
    refused(
        base()
            .var(Variable::input_clock(
                1,
                "c",
                IntervalVariability::Triggered,
                "",
            ))
            .var(Variable::parameter(2, "p", 0.0, "").clocked_by(&[1])),
        "must be a discrete scalar input, output or local",
    );
    refused(
        base()
            .var(Variable::output_clock(1, "c", ""))
            .var(Variable::output(2, "y", "").depends_on(&[(1, DependencyKind::Dependent)])),
        "depends on vr 1 which is no input",
    );
    let mut no_em = base().var(Variable::input_clock(
        1,
        "c",
        IntervalVariability::Triggered,
        "",
    ));
    no_em.event_mode = false;
    refused(no_em, "Clocks need event mode");
    assert_eq!(spec().check(), Ok(()));
}

// ------------------------------------------------------ Scheduled Execution

/// Scheduled Execution test model: the partition of `tick` computes
/// y = 2 x + s (s before the update) and s := s + x.
pub mod partition {
    use super::*;

    /// Input Clock, constant: interval 0.25, shift 0.
    pub const TICK: Vr = 1;
    /// Input Clock, triggered: an empty partition.
    pub const TRIG: Vr = 2;
    /// Clocked input (by `TICK`).
    pub const X: Vr = 3;
    /// Clocked output (by `TICK`): 2 x + s.
    pub const Y: Vr = 4;
    /// Clocked local (by `TICK`): the sum of the x.
    pub const S: Vr = 5;
    /// Unclocked input w.
    pub const W: Vr = 6;
    /// Unclocked output: 3 w.
    pub const Z: Vr = 7;

    struct KitPartition;

    impl Model for KitPartition {
        fn init(&mut self, _v: &mut Values) {}
        fn outputs(&self, _t: f64, v: &mut Values, _u: &Inputs) {
            if v.bool(TICK) {
                v[Y] = 2.0 * v[X] + v[S];
            }
            v[Z] = 3.0 * v[W];
        }
        fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
            Some(self)
        }
    }

    impl EventModel for KitPartition {
        fn step_until_event(
            &mut self,
            _t: f64,
            t_end: f64,
            _v: &mut Values,
            _u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<EventStep, StepError> {
            Ok(EventStep::completed(t_end))
        }
        fn update_discrete_states(
            &mut self,
            _t: f64,
            v: &mut Values,
            _u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> EventUpdate {
            if v.bool(TICK) {
                v[S] += v[X];
            }
            EventUpdate::default()
        }
    }

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new("KitPartition", "Scheduled Execution", |_| {
            Ok(Box::new(KitPartition))
        })
        .var(
            Variable::input_clock(TICK, "tick", IntervalVariability::Constant, "")
                .interval(0.25)
                .shift(0.0)
                .priority(1),
        )
        .var(Variable::input_clock(TRIG, "trig", IntervalVariability::Triggered, "").priority(2))
        .var(Variable::input(X, "x", 0.0, "").clocked_by(&[TICK]))
        .var(Variable::output(Y, "y", "").clocked_by(&[TICK]))
        .var(
            Variable::local(S, "s", "")
                .clocked_by(&[TICK])
                .initial(crate::model::Initial::Exact)
                .start(0.0),
        )
        .var(Variable::input(W, "w", 0.0, ""))
        .var(Variable::output(Z, "z", "").depends_on(&[(W, DependencyKind::Fixed)]))
        .directional_derivatives(false)
        .interpolate_inputs(false)
        .event_mode()
        .scheduled_execution()
    }

    /// The same model with Scheduled Execution as its only interface
    /// (`KitPartitionOnly`: no `<CoSimulation>`, no event mode).
    pub fn only_spec() -> ModelSpec {
        let mut s = spec();
        s.name = "KitPartitionOnly";
        s.event_mode = false;
        s.might_return_early = false;
        s.scheduled_execution_only()
    }
}

static LOCKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static UNLOCKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

extern "C" fn lock_preemption() {
    LOCKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

extern "C" fn unlock_preemption() {
    UNLOCKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

pub(super) fn instantiate_se(name: &CStr, spec: &ModelSpec) -> *mut c_void {
    let tok = token_c(
        spec,
        FmiVersion::Fmi3,
        &Capabilities::full(spec, FmiVersion::Fmi3),
    );
    // SAFETY: valid strings, a valid logger and callbacks.
    unsafe {
        super::tests::fmi3InstantiateScheduledExecution(
            name.as_ptr(),
            tok.as_ptr(),
            std::ptr::null(),
            false,
            true,
            std::ptr::null_mut(),
            Some(logger3),
            std::ptr::null_mut(),
            lock_preemption as *mut c_void,
            unlock_preemption as *mut c_void,
        )
    }
}

pub(super) fn activate(i: *mut c_void, clock: Vr, t: f64) -> i32 {
    // SAFETY: a live instance.
    unsafe { super::tests::fmi3ActivateModelPartition(i, clock, t) }
}

fn kit_partition() -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == "KitPartition")
        .unwrap_or_else(|| panic!("KitPartition is registered"))
}

#[test]
fn scheduled_execution_only_for_models_that_declare_it() {
    assert!(instantiate_se(c"se-clocks", kit_clocks()).is_null());
    assert!(logged3("this FMU has no Scheduled Execution interface"));
    assert!(instantiate_se(c"se-plain", &registry()[0]).is_null());
    // An FMU without it: fmi3ActivateModelPartition refused.
    let i = start(c"se-cs", false);
    assert_eq!(activate(i, TICK, 0.5), 3);
    assert!(logged3(
        "fmi3ActivateModelPartition is a Scheduled Execution function"
    ));
    free(i);
    let s = kit_partition();
    let x3 = xml::model_description(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
        "KitPartition",
    );
    assert!(
        x3.contains("<ScheduledExecution modelIdentifier=\"KitPartition\""),
        "{x3}"
    );
    assert!(
        x3.contains("<CoSimulation modelIdentifier=\"KitPartition\""),
        "{x3}"
    );
    // Output Clocks (Clock Update Mode) are allowed.
    let with_out = partition::spec().var(Variable::output_clock(8, "o", ""));
    assert_eq!(with_out.check(), Ok(()));
    assert!(with_out.needs_clock_update() && !partition::spec().needs_clock_update());
    let no_clock = ModelSpec::new("N", "", |_| Ok(Box::new(KitClocks)))
        .event_mode()
        .scheduled_execution();
    assert!(
        no_clock
            .check()
            .unwrap_err()
            .contains("needs event mode and input Clocks")
    );
}

#[test]
fn scheduled_execution_activates_partitions_in_clock_activation_mode() {
    use partition::*;
    let i = instantiate_se(c"se", kit_partition());
    assert!(!i.is_null());
    let (locks, unlocks) = (
        LOCKS.load(std::sync::atomic::Ordering::SeqCst),
        UNLOCKS.load(std::sync::atomic::Ordering::SeqCst),
    );
    // SAFETY: a live instance throughout.
    unsafe {
        assert_eq!(
            fmi3EnterInitializationMode(i, false, 0.0, 0.0, true, 10.0),
            0
        );
        // Not yet: Initialization Mode.
        assert_eq!(activate(i, TICK, 0.0), 3);
        assert!(logged3(
            "fmi3ActivateModelPartition called in state Initialization Mode"
        ));
        assert_eq!(fmi3ExitInitializationMode(i), 0);
        // Clock Activation Mode: no step, no Event Mode, no fmi3SetClock.
        assert_eq!(step(i, 0.0, 0.1).0, 3);
        assert_eq!(fmi3EnterEventMode(i), 3);
        assert_eq!(update(i).0, 3);
        assert_eq!(set_clock(i, TICK, true), 3);
        assert!(logged3(
            "fmi3SetClock must not be called in Scheduled Execution"
        ));
        // Clocked values before their partition ran: refused.
        assert_eq!(get_f64(i, Y).0, 3);
        assert!(logged3(
            "it can be read only after fmi3ActivateModelPartition computed it"
        ));
        assert_eq!(set_f64(i, X, 1.0), 0);
        assert_eq!(set_f64(i, W, 2.0), 0);
        // No get after a set without an activation in between.
        assert_eq!(get_f64(i, Z).0, 3);
        assert!(logged3(
            "read after an fmi3Set* without an fmi3ActivateModelPartition in between"
        ));
        // Not a Clock, an off-grid time, before the start.
        assert_eq!(activate(i, X, 0.0), 3);
        assert_eq!(activate(i, TICK, 0.1), 3);
        assert!(logged3("does not tick at t = 0.1"));
        assert_eq!(activate(i, TRIG, -1.0), 3);
        assert_eq!(activate(i, TICK, 0.0), 0);
        assert_eq!(get_f64(i, Y), (0, 2.0));
        assert_eq!(get_f64(i, S), (0, 1.0));
        assert_eq!(get_f64(i, Z), (0, 6.0));
        // Strictly increasing per Clock.
        assert_eq!(activate(i, TICK, 0.0), 3);
        assert!(logged3("is not after its last activation at 0"));
        assert_eq!(set_f64(i, X, 3.0), 0);
        assert_eq!(activate(i, TICK, 0.25), 0);
        assert_eq!(get_f64(i, Y), (0, 7.0));
        // A triggered partition, at an earlier time than tick's last: its
        // own times only increase.
        assert_eq!(activate(i, TRIG, 0.1), 0);
        assert_eq!(activate(i, TRIG, 0.1), 3);
        // FMU state in Clock Activation Mode, serialized too.
        let mut s: *mut c_void = std::ptr::null_mut();
        assert_eq!(fmi3GetFMUState(i, &mut s), 0);
        let mut size = 0usize;
        assert_eq!(fmi3SerializedFMUStateSize(i, s, &mut size), 0);
        let mut bytes = vec![0u8; size];
        assert_eq!(fmi3SerializeFMUState(i, s, bytes.as_mut_ptr(), size), 0);
        assert_eq!(set_f64(i, X, 1.0), 0);
        assert_eq!(activate(i, TICK, 0.5), 0);
        assert_eq!(get_f64(i, Y), (0, 6.0));
        let mut copy: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            fmi3DeserializeFMUState(i, bytes.as_ptr(), size, &mut copy),
            0
        );
        for st in [s, copy] {
            assert_eq!(fmi3SetFMUState(i, st), 0);
            assert_eq!(get_f64(i, Y), (0, 7.0));
            assert_eq!(activate(i, TICK, 0.25), 3, "0.25 was the last activation");
            assert_eq!(set_f64(i, X, 1.0), 0);
            assert_eq!(activate(i, TICK, 0.5), 0);
            assert_eq!(get_f64(i, Y), (0, 6.0));
        }
        for mut st in [s, copy] {
            assert_eq!(fmi3FreeFMUState(i, &mut st), 0);
        }
        assert_eq!(super::tests::fmi3Terminate(i), 0);
    }
    // lockPreemption / unlockPreemption around each of the 6 activations
    // (other tests may run theirs concurrently: at least these).
    assert!(LOCKS.load(std::sync::atomic::Ordering::SeqCst) >= locks + 6);
    assert!(UNLOCKS.load(std::sync::atomic::Ordering::SeqCst) >= unlocks + 6);
    free(i);
}

fn kit_partition_only() -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == "KitPartitionOnly")
        .unwrap_or_else(|| panic!("KitPartitionOnly is registered"))
}

#[test]
fn scheduled_execution_only_has_no_co_simulation() {
    use partition::*;
    let s = kit_partition_only();
    assert_eq!(s.check(), Ok(()));
    assert!(!s.has_co_simulation() && !s.has_model_exchange() && s.scheduled_execution);
    let x3 = xml::model_description(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
        "KitPartitionOnly",
    );
    assert!(
        x3.contains(
            "<ScheduledExecution modelIdentifier=\"KitPartitionOnly\" needsExecutionTool=\"false\""
        ),
        "{x3}"
    );
    assert!(!x3.contains("<CoSimulation"), "{x3}");
    assert!(!x3.contains("<ModelExchange"), "{x3}");
    assert!(
        x3.contains(
            "<Clock name=\"tick\" valueReference=\"1\" causality=\"input\" variability=\"discrete\" \
             intervalVariability=\"constant\" priority=\"1\" intervalDecimal=\"0.25\" shiftDecimal=\"0.0\"/>"
        ),
        "{x3}"
    );
    assert!(
        x3.contains("intervalVariability=\"triggered\" priority=\"2\"/>"),
        "{x3}"
    );
    // Another interface than the Co-Simulation one: another token.
    assert_ne!(s.variables_hash(), kit_partition().variables_hash());

    // fmi3InstantiateCoSimulation and fmi3InstantiateModelExchange: NULL.
    assert!(instantiate(c"se-only-cs", s, true, false).is_null());
    assert!(logged3(
        "fmi3InstantiateCoSimulation: this FMU supports Scheduled Execution only (no <CoSimulation>: fmi3InstantiateScheduledExecution)"
    ));
    assert!(instantiate(c"se-only-cs2", s, false, false).is_null());
    let tok = token_c(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
    );
    // SAFETY: valid strings, a valid logger.
    let me = unsafe {
        super::tests::fmi3InstantiateModelExchange(
            c"se-only-me".as_ptr(),
            tok.as_ptr(),
            std::ptr::null(),
            false,
            true,
            std::ptr::null_mut(),
            Some(logger3),
        )
    };
    assert!(me.is_null());
    assert!(logged3(
        "fmi3InstantiateModelExchange: this FMU supports Scheduled Execution only"
    ));

    // fmi3InstantiateScheduledExecution: the partitions run.
    let i = instantiate_se(c"se-only", s);
    assert!(!i.is_null());
    // SAFETY: a live instance throughout.
    unsafe {
        assert_eq!(
            fmi3EnterInitializationMode(i, false, 0.0, 0.0, true, 10.0),
            0
        );
        assert_eq!(fmi3ExitInitializationMode(i), 0);
        assert_eq!(step(i, 0.0, 0.1).0, 3);
        assert_eq!(fmi3EnterEventMode(i), 3);
        assert_eq!(set_f64(i, X, 1.0), 0);
        assert_eq!(activate(i, TICK, 0.0), 0);
        assert_eq!(get_f64(i, Y), (0, 2.0));
        assert_eq!(activate(i, TICK, 0.1), 3);
        assert!(logged3("does not tick at t = 0.1"));
        assert_eq!(set_f64(i, X, 3.0), 0);
        assert_eq!(activate(i, TICK, 0.25), 0);
        assert_eq!(get_f64(i, Y), (0, 7.0));
        // The FMU state holds the partitions' last activations.
        let mut st: *mut c_void = std::ptr::null_mut();
        assert_eq!(fmi3GetFMUState(i, &mut st), 0);
        let mut size = 0usize;
        assert_eq!(fmi3SerializedFMUStateSize(i, st, &mut size), 0);
        let mut bytes = vec![0u8; size];
        assert_eq!(fmi3SerializeFMUState(i, st, bytes.as_mut_ptr(), size), 0);
        assert_eq!(activate(i, TICK, 0.5), 0);
        let mut copy: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            fmi3DeserializeFMUState(i, bytes.as_ptr(), size, &mut copy),
            0
        );
        assert_eq!(fmi3SetFMUState(i, copy), 0);
        assert_eq!(activate(i, TICK, 0.25), 3, "0.25 was the last activation");
        assert_eq!(get_f64(i, S), (0, 4.0));
        for mut x in [st, copy] {
            assert_eq!(fmi3FreeFMUState(i, &mut x), 0);
        }
        assert_eq!(super::tests::fmi3Terminate(i), 0);
    }
    free(i);
}

#[test]
fn the_spec_check_wants_priorities_in_scheduled_execution() {
    let refused = |s: ModelSpec, needle: &str| {
        let e = s.check().expect_err(needle);
        assert!(e.contains(needle), "{e}");
    };
    let clock = || Variable::input_clock(1, "c", IntervalVariability::Constant, "").interval(0.1);
    let base = || ModelSpec::new("P", "", |_| Ok(Box::new(KitClocks)));
    // Scheduled Execution: every input Clock has a priority.
    refused(
        base().var(clock()).scheduled_execution_only(),
        "input Clock c has no priority",
    );
    refused(
        base().var(clock()).event_mode().scheduled_execution(),
        "input Clock c has no priority",
    );
    assert_eq!(
        base()
            .var(clock().priority(0))
            .scheduled_execution_only()
            .check(),
        Ok(())
    );
    // Scheduled Execution only: no event mode (a Co-Simulation feature).
    refused(
        base()
            .var(clock().priority(0))
            .scheduled_execution_only()
            .event_mode(),
        "event mode (ModelSpec::event_mode) is a Co-Simulation feature",
    );
    // Output Clocks have none.
    refused(
        base()
            .var(Variable::output_clock(1, "o", "").priority(1))
            .event_mode(),
        "is an output Clock with a priority",
    );
    // Without Scheduled Execution a priority is allowed (and ignored by
    // Co-Simulation importers), written all the same.
    let cs = base().var(clock().priority(3)).event_mode();
    assert_eq!(cs.check(), Ok(()));
    let x3 = xml::model_description(
        &cs,
        FmiVersion::Fmi3,
        &Capabilities::full(&cs, FmiVersion::Fmi3),
        "P",
    );
    assert!(x3.contains(" priority=\"3\""), "{x3}");
    // A priority changes the token; none keeps the old one.
    assert_ne!(
        cs.variables_hash(),
        base().var(clock()).event_mode().variables_hash()
    );
}
