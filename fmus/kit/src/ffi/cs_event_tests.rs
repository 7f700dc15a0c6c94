//! Co-Simulation Event Mode (FMI 3.0 sec. 4.2) through the exported C
//! functions: the call sequence of the Reference FMUs' `cs_event_mode.c`
//! on a test model with time events, an input sampled at events and a
//! two-instant event iteration; early return allowed or not; without
//! Event Mode (FMI 3 `eventModeUsed = false`, FMI 2); every call the
//! strict instance refuses; FMU states across an event; the model
//! description.

use std::ffi::{CStr, c_void};

use super::tests::{
    callbacks, fmi2DoStep, fmi2EnterInitializationMode, fmi2ExitInitializationMode,
    fmi2FreeInstance, fmi2GetInteger, fmi2Instantiate, fmi2SetReal, fmi2SetupExperiment,
    fmi3DoStep, fmi3EnterEventMode, fmi3EnterInitializationMode, fmi3EnterStepMode,
    fmi3ExitInitializationMode, fmi3FreeFMUState, fmi3FreeInstance, fmi3GetFMUState,
    fmi3GetFloat64, fmi3GetInt32, fmi3InstantiateCoSimulation, fmi3SetFMUState, fmi3SetFloat64,
    fmi3Terminate, fmi3UpdateDiscreteStates, logged3, logger3, registry, token_c,
};
use crate::caps::{Capabilities, FmiVersion};
use crate::event_mode::{EventModel, EventStep};
use crate::model::{Model, ModelSpec, StepError, TIME, Values, Variable, Vr};
use crate::model_exchange::EventUpdate;
use crate::{Inputs, LogLevel, xml};

/// Input u, sampled into y at each event update.
pub const U: Vr = 1;
/// y: u at the last update (discrete output).
pub const Y: Vr = 2;
/// The number of ticks (time events) so far.
pub const TICKS: Vr = 3;
/// The period of the ticks.
pub const PERIOD: Vr = 4;
/// The super-dense instant of the event iteration: each Event Mode takes
/// two updates (the first asks for another).
pub const INSTANT: Vr = 5;

struct KitEvents {
    period: f64,
}

impl Model for KitEvents {
    fn init(&mut self, v: &mut Values) {
        v[TICKS] = (v[TIME] / self.period).floor();
        v[Y] = v[U];
        v[INSTANT] = 0.0;
    }
    fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}
    fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
        Some(self)
    }
}

impl EventModel for KitEvents {
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
        t: f64,
        v: &mut Values,
        u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        let next = (v[TICKS] + 1.0) * self.period;
        if t >= next - 1e-9 * next.max(1.0) {
            v[TICKS] += 1.0;
        }
        v[Y] = u.value(U);
        let first = v[INSTANT] == 0.0;
        v[INSTANT] = if first { 1.0 } else { 0.0 };
        EventUpdate {
            discrete_states_need_update: first,
            next_event_time: Some((v[TICKS] + 1.0) * self.period),
            ..EventUpdate::default()
        }
    }
}

/// The test model with events.
pub fn spec() -> ModelSpec {
    ModelSpec::new("KitEvents", "Co-Simulation events", |v| {
        Ok(Box::new(KitEvents {
            period: v.positive("period", PERIOD)?,
        }))
    })
    .var(Variable::input(U, "u", 0.0, "sampled input"))
    .var(Variable::output(Y, "y", "u at the last update").discrete())
    .var(Variable::int_output(TICKS, "ticks", "number of ticks"))
    .var(Variable::parameter(PERIOD, "period", 0.25, "tick period"))
    .var(Variable::local(INSTANT, "instant", "super-dense instant").discrete())
    .directional_derivatives(false)
    .interpolate_inputs(false)
    .event_mode()
}

fn kit_events() -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == "KitEvents")
        .unwrap_or_else(|| panic!("KitEvents is registered"))
}

/// `fmi3InstantiateCoSimulation` of `spec` (every capability, logging on).
fn instantiate3(name: &CStr, spec: &ModelSpec, event_mode_used: bool, early: bool) -> *mut c_void {
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

/// An initialized `KitEvents` (stop time 10): with `eventModeUsed` in the
/// initial Event Mode, else in Step Mode.
fn start(name: &CStr, event_mode_used: bool, early: bool) -> *mut c_void {
    let i = instantiate3(name, kit_events(), event_mode_used, early);
    assert!(!i.is_null());
    // SAFETY: a live instance.
    unsafe {
        assert_eq!(
            fmi3EnterInitializationMode(i, false, 0.0, 0.0, true, 10.0),
            0
        );
        assert_eq!(fmi3ExitInitializationMode(i), 0);
    }
    i
}

/// `fmi3UpdateDiscreteStates`: (status, discreteStatesNeedUpdate,
/// nextEventTime if defined).
fn update(i: *mut c_void) -> (i32, bool, Option<f64>) {
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
    (st, need, defined.then_some(next))
}

/// The event iteration: updates until `discreteStatesNeedUpdate = false`
/// (this model takes two); the next event time.
fn iterate(i: *mut c_void) -> Option<f64> {
    for _ in 0..10 {
        let (st, need, next) = update(i);
        assert_eq!(st, 0);
        if !need {
            return next;
        }
    }
    panic!("no convergence");
}

/// `fmi3DoStep`: (status, eventHandlingNeeded, earlyReturn, lastSuccessfulTime).
fn step(i: *mut c_void, t: f64, h: f64) -> (i32, bool, bool, f64) {
    let (mut event, mut term, mut early, mut last) = (false, false, false, f64::NAN);
    // SAFETY: a live instance and valid out-pointers.
    let st = unsafe { fmi3DoStep(i, t, h, false, &mut event, &mut term, &mut early, &mut last) };
    (st, event, early, last)
}

fn ticks(i: *mut c_void) -> i32 {
    let mut n = -1;
    // SAFETY: a live instance, one value.
    assert_eq!(unsafe { fmi3GetInt32(i, &TICKS, 1, &mut n, 1) }, 0);
    n
}

fn y(i: *mut c_void) -> f64 {
    let mut x = f64::NAN;
    // SAFETY: a live instance, one value.
    assert_eq!(unsafe { fmi3GetFloat64(i, &Y, 1, &mut x, 1) }, 0);
    x
}

fn set_u(i: *mut c_void, u: f64) -> i32 {
    // SAFETY: a live instance, one value.
    unsafe { fmi3SetFloat64(i, &U, 1, &u, 1) }
}

#[test]
fn cs_event_mode_sequence_with_early_return() {
    let i = start(c"csev-early", true, true);
    assert_eq!(iterate(i), Some(0.25));
    // SAFETY: a live instance throughout.
    unsafe {
        assert_eq!(fmi3EnterStepMode(i), 0);
        let mut t = 0.0;
        let mut events = Vec::new();
        while t + 0.1 <= 1.1 + 1e-12 {
            let (st, event, early, last) = step(i, t, 0.1);
            assert_eq!(st, 0);
            assert_eq!(early, last < t + 0.1);
            t = last;
            if event {
                let before = ticks(i);
                assert_eq!(fmi3EnterEventMode(i), 0);
                set_u(i, t);
                let next = iterate(i);
                events.push((t, early, before, ticks(i), next));
                assert_eq!(y(i), t);
                assert_eq!(fmi3EnterStepMode(i), 0);
            }
        }
        assert_eq!(
            events,
            [
                (0.25, true, 0, 1, Some(0.5)),
                (0.5, true, 1, 2, Some(0.75)),
                (0.75, true, 2, 3, Some(1.0)),
                (1.0, true, 3, 4, Some(1.25)),
            ]
        );
        assert_eq!(fmi3Terminate(i), 0);
        fmi3FreeInstance(i);
    }
}

#[test]
fn without_early_return_only_the_event_at_the_step_end_is_signalled() {
    let i = start(c"csev-late", true, false);
    iterate(i);
    // SAFETY: a live instance throughout.
    unsafe {
        assert_eq!(fmi3EnterStepMode(i), 0);
        // 0.25 inside the step: handled there; the step ends at 0.4.
        assert_eq!(step(i, 0.0, 0.4), (0, false, false, 0.4));
        assert_eq!(ticks(i), 1);
        // 0.5 at the end: signalled, not early.
        assert_eq!(step(i, 0.4, 0.1), (0, true, false, 0.5));
        assert_eq!(ticks(i), 1);
        assert_eq!(fmi3EnterEventMode(i), 0);
        assert_eq!(iterate(i), Some(0.75));
        assert_eq!(ticks(i), 2);
        assert_eq!(fmi3EnterStepMode(i), 0);
        fmi3FreeInstance(i);
    }
}

#[test]
fn without_event_mode_events_are_handled_in_the_step() {
    // FMI 3, eventModeUsed = false: the same counts, never a signal.
    let i = start(c"csev-plain", false, true);
    // SAFETY: a live instance throughout.
    unsafe {
        set_u(i, 3.0);
        assert_eq!(step(i, 0.0, 0.3), (0, false, false, 0.3));
        assert_eq!(ticks(i), 1);
        assert_eq!(y(i), 3.0);
        assert_eq!(step(i, 0.3, 0.2), (0, false, false, 0.5));
        assert_eq!(ticks(i), 2);
        // Event Mode functions are refused.
        assert_eq!(fmi3EnterEventMode(i), 3);
        assert!(logged3(
            "fmi3EnterEventMode: Illegal call sequence: fmi3EnterEventMode is an Event Mode function, and this instance was made with eventModeUsed = fmi3False"
        ));
        assert_eq!(update(i).0, 3);
        assert_eq!(fmi3EnterStepMode(i), 3);
        fmi3FreeInstance(i);
    }
    // FMI 2: the same.
    let cb = callbacks();
    let g = token_c(
        kit_events(),
        FmiVersion::Fmi2,
        &Capabilities::full(kit_events(), FmiVersion::Fmi2),
    );
    // SAFETY: valid strings and callbacks; a live instance throughout.
    unsafe {
        let c = fmi2Instantiate(
            c"csev2".as_ptr(),
            1,
            g.as_ptr(),
            std::ptr::null(),
            &cb,
            0,
            1,
        );
        assert!(!c.is_null());
        assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 1.0), 0);
        assert_eq!(fmi2EnterInitializationMode(c), 0);
        assert_eq!(fmi2ExitInitializationMode(c), 0);
        assert_eq!(fmi2SetReal(c, &U, 1, &3.0), 0);
        assert_eq!(fmi2DoStep(c, 0.0, 0.3, 1), 0);
        assert_eq!(fmi2DoStep(c, 0.3, 0.2, 1), 0);
        let mut n = -1;
        assert_eq!(fmi2GetInteger(c, &TICKS, 1, &mut n), 0);
        assert_eq!(n, 2);
        fmi2FreeInstance(c);
    }
}

#[test]
fn strict_event_mode_refusals() {
    // eventModeUsed = true without hasEventMode.
    let plain = &registry()[0];
    assert!(instantiate3(c"csev-noevents", plain, true, true).is_null());
    assert!(logged3(
        "fmi3InstantiateCoSimulation: eventModeUsed=true, but this FMU has hasEventMode=false"
    ));
    let i = start(c"csev-strict", true, true);
    // SAFETY: a live instance throughout.
    unsafe {
        // Initial Event Mode: no step, no Step Mode before the update, nor
        // while the iteration goes on.
        assert_eq!(step(i, 0.0, 0.1).0, 3);
        assert!(logged3(
            "fmi3DoStep: Illegal call sequence: called in state Event Mode"
        ));
        assert_eq!(fmi3EnterStepMode(i), 3);
        assert!(logged3(
            "fmi3EnterStepMode: Illegal call sequence: fmi3UpdateDiscreteStates was not called in this Event Mode"
        ));
        assert_eq!(update(i), (0, true, Some(0.25)));
        assert_eq!(fmi3EnterStepMode(i), 3);
        assert!(logged3(
            "fmi3EnterStepMode: Illegal call sequence: fmi3UpdateDiscreteStates returned discreteStatesNeedUpdate = fmi3True"
        ));
        assert_eq!(fmi3EnterEventMode(i), 3);
        assert_eq!(update(i), (0, false, Some(0.25)));
        assert_eq!(fmi3EnterStepMode(i), 0);
        // Step Mode: no update, no second Step Mode.
        assert_eq!(update(i).0, 3);
        assert_eq!(fmi3EnterStepMode(i), 3);
        // An early return at the time event...
        assert_eq!(step(i, 0.0, 0.4), (0, true, true, 0.25));
        // ... then no step before Event Mode.
        assert_eq!(step(i, 0.25, 0.1).0, 3);
        assert!(logged3(
            "fmi3DoStep: Illegal call sequence: the last fmi3DoStep returned eventHandlingNeeded = fmi3True at t = 0.25: the importer has to enter Event Mode"
        ));
        assert_eq!(fmi3EnterEventMode(i), 0);
        iterate(i);
        assert_eq!(fmi3EnterStepMode(i), 0);
        // The next step starts at lastSuccessfulTime.
        assert_eq!(step(i, 0.4, 0.1).0, 3);
        assert!(logged3(
            "fmi3DoStep: Illegal call sequence: currentCommunicationPoint 0.4 differs from the FMU time 0.25"
        ));
        let t = 0.25 + 1e-12;
        assert_eq!(step(i, t, 0.1), (0, false, false, t + 0.1));
        // Event Mode at any communication point, with nothing to do.
        assert_eq!(fmi3EnterEventMode(i), 0);
        assert_eq!(fmi3EnterEventMode(i), 3);
        assert_eq!(iterate(i), Some(0.5));
        assert_eq!(ticks(i), 1);
        // Terminate from Event Mode.
        assert_eq!(fmi3Terminate(i), 0);
        assert_eq!(fmi3EnterEventMode(i), 3);
        fmi3FreeInstance(i);
    }
}

#[test]
fn fmu_state_keeps_the_pending_event_and_the_next_time_event() {
    let i = start(c"csev-state", true, true);
    iterate(i);
    // SAFETY: a live instance throughout; states freed at the end.
    unsafe {
        assert_eq!(fmi3EnterStepMode(i), 0);
        let mut before: *mut c_void = std::ptr::null_mut();
        assert_eq!(fmi3GetFMUState(i, &mut before), 0);
        assert_eq!(step(i, 0.0, 0.4), (0, true, true, 0.25));
        let mut pending: *mut c_void = std::ptr::null_mut();
        assert_eq!(fmi3GetFMUState(i, &mut pending), 0);
        assert_eq!(fmi3EnterEventMode(i), 0);
        iterate(i);
        assert_eq!(fmi3EnterStepMode(i), 0);
        assert_eq!(step(i, 0.25, 0.4), (0, true, true, 0.5));
        // Back to the pending event: refused until Event Mode.
        assert_eq!(fmi3SetFMUState(i, pending), 0);
        assert_eq!(step(i, 0.25, 0.4).0, 3);
        assert_eq!(fmi3EnterEventMode(i), 0);
        assert_eq!(iterate(i), Some(0.5));
        assert_eq!(fmi3EnterStepMode(i), 0);
        assert_eq!(step(i, 0.25, 0.4), (0, true, true, 0.5));
        // Back before the event: the time event is still announced.
        assert_eq!(fmi3SetFMUState(i, before), 0);
        assert_eq!(ticks(i), 0);
        assert_eq!(step(i, 0.0, 0.4), (0, true, true, 0.25));
        assert_eq!(fmi3FreeFMUState(i, &mut before), 0);
        assert_eq!(fmi3FreeFMUState(i, &mut pending), 0);
        fmi3FreeInstance(i);
    }
}

#[test]
fn model_description_declares_event_mode() {
    let s = kit_events();
    let x3 = xml::model_description(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
        "KitEvents",
    );
    assert!(x3.contains("hasEventMode=\"true\""), "{x3}");
    assert!(x3.contains("mightReturnEarlyFromDoStep=\"true\""), "{x3}");
    let plain = &registry()[0];
    let x3 = xml::model_description(
        plain,
        FmiVersion::Fmi3,
        &Capabilities::full(plain, FmiVersion::Fmi3),
        "plain",
    );
    assert!(x3.contains("hasEventMode=\"false\""));
    // Event mode needs the Co-Simulation interface.
    let me_only = spec().model_exchange(crate::ModelExchangeSpec::new().without_co_simulation());
    assert!(me_only.check().is_err());
}
