//! Model Exchange through the exported C functions: the calling sequence
//! of FMI 2.0 and FMI 3.0 driven by the test importer
//! (`crate::testing::model_exchange`) against the analytic solution of a
//! test model with state, time and step events; the strict state machine
//! (every call in a state the standards forbid refused with
//! `Illegal call sequence`); FMU states, directional derivatives and the
//! model description of Model Exchange.

use std::ffi::{CStr, c_int, c_void};

use super::fmi2::EventInfo;
use super::tests::{
    callbacks, fmi2CompletedIntegratorStep, fmi2DoStep, fmi2EnterContinuousTimeMode,
    fmi2EnterEventMode, fmi2EnterInitializationMode, fmi2ExitInitializationMode, fmi2FreeInstance,
    fmi2GetContinuousStates, fmi2GetDerivatives, fmi2GetDirectionalDerivative,
    fmi2GetEventIndicators, fmi2GetInteger, fmi2GetNominalsOfContinuousStates, fmi2Instantiate,
    fmi2NewDiscreteStates, fmi2SetContinuousStates, fmi2SetReal, fmi2SetTime, fmi2SetupExperiment,
    fmi2Terminate, fmi3CompletedIntegratorStep, fmi3DeserializeFMUState, fmi3DoStep,
    fmi3EnterContinuousTimeMode, fmi3EnterEventMode, fmi3EnterInitializationMode,
    fmi3ExitInitializationMode, fmi3FreeFMUState, fmi3FreeInstance,
    fmi3GetContinuousStateDerivatives, fmi3GetContinuousStates, fmi3GetDirectionalDerivative,
    fmi3GetEventIndicators, fmi3GetFMUState, fmi3GetFloat64, fmi3GetInt32,
    fmi3GetNominalsOfContinuousStates, fmi3GetNumberOfContinuousStates,
    fmi3GetNumberOfEventIndicators, fmi3InstantiateCoSimulation, fmi3InstantiateModelExchange,
    fmi3SerializeFMUState, fmi3SerializedFMUStateSize, fmi3SetContinuousStates, fmi3SetFMUState,
    fmi3SetFloat64, fmi3SetTime, fmi3UpdateDiscreteStates, logged, logged3, logger3, registry,
    token_c,
};
use crate::caps::{Capabilities, FmiVersion};
use crate::model::{DependencyKind, Initial, Model, ModelSpec, Values, Variable, Vr};
use crate::model_exchange::{
    ContinuousModel, ContinuousState, EventUpdate, ModelExchangeSpec, StepEvent,
};
use crate::testing::model_exchange::{EventKind, MeFmu, Settings, simulate};
use crate::{Inputs, LogLevel, xml};

/// Input u: x' = u - x.
pub const U: Vr = 1;
/// The state x (output), reset to x0 when it falls to `level`.
pub const X: Vr = 2;
/// der(x).
pub const DX: Vr = 3;
/// The event indicator x - level.
pub const Z: Vr = 4;
/// x(0) and the value x is reset to.
pub const X0: Vr = 5;
/// The level that triggers a reset (tunable).
pub const LEVEL: Vr = 6;
/// The number of resets (state events).
pub const RESETS: Vr = 7;
/// The period of the time events.
pub const PERIOD: Vr = 8;
/// The number of time events so far.
pub const TICKS: Vr = 9;
/// When the next time event is (a discrete state).
pub const NEXT: Vr = 10;
/// x at the last completed integrator step below which a step event is
/// asked for (0: never).
pub const STEP_BELOW: Vr = 11;
/// The number of step events handled.
pub const STEPS: Vr = 12;

struct KitMe {
    x0: f64,
    level: f64,
    period: f64,
    step_below: f64,
}

impl Model for KitMe {
    fn init(&mut self, v: &mut Values) {
        v[X] = self.x0;
        v[RESETS] = 0.0;
        v[TICKS] = 0.0;
        v[STEPS] = 0.0;
        v[NEXT] = self.period;
    }
    fn outputs(&self, _t: f64, v: &mut Values, _u: &Inputs) {
        v[Z] = v[X] - self.level;
    }
    fn model_exchange(&mut self) -> Option<&mut dyn ContinuousModel> {
        Some(self)
    }
}

impl ContinuousModel for KitMe {
    fn derivatives(&mut self, _t: f64, v: &mut Values, u: &Inputs) {
        v[DX] = u.value(U) - v[X];
    }
    fn update_discrete_states(
        &mut self,
        t: f64,
        v: &mut Values,
        _u: &Inputs,
        log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        let mut changed = false;
        if v[X] <= self.level {
            v[X] = self.x0;
            v[RESETS] += 1.0;
            changed = true;
            log(LogLevel::Info, &format!("KitMe: reset at t = {t}"));
        }
        if self.step_below > 0.0 && v[X] < self.step_below {
            v[STEPS] += 1.0;
            v[X] = self.x0;
            changed = true;
        }
        if t >= v[NEXT] - 1e-9 * v[NEXT].abs().max(1.0) {
            v[TICKS] += 1.0;
            v[NEXT] += self.period;
        }
        EventUpdate {
            values_of_continuous_states_changed: changed,
            next_event_time: Some(v[NEXT]),
            ..EventUpdate::default()
        }
    }
    fn completed_integrator_step(
        &mut self,
        _t: f64,
        v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> StepEvent {
        StepEvent {
            enter_event_mode: self.step_below > 0.0 && v[X] < self.step_below,
            terminate_simulation: false,
        }
    }
    fn partial_derivative(&self, unknown: Vr, known: Vr, _t: f64, _v: &Values, _u: &Inputs) -> f64 {
        match (unknown, known) {
            (DX, X) => -1.0,
            (DX, U) => 1.0,
            _ => 0.0,
        }
    }
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(KitMe {
        x0: v.positive("x0", X0)?,
        level: v.finite("level", LEVEL)?,
        period: v.positive("period", PERIOD)?,
        step_below: v.non_negative("step_below", STEP_BELOW)?,
    }))
}

/// `KitMe` (Model Exchange only): x' = u - x; x reset to x0 when it falls
/// to `level` (a state event), a tick every `period` (time events), a step
/// event when a completed step finds x below `step_below`.
pub fn spec() -> ModelSpec {
    ModelSpec::new("KitMe", "Model Exchange test model", build)
        .var(Variable::input(U, "u", 0.0, "input"))
        .var(Variable::output(X, "x", "state").depends_on(&[]))
        .var(
            Variable::local(DX, "der(x)", "u - x")
                .depends_on(&[(X, DependencyKind::Constant), (U, DependencyKind::Constant)]),
        )
        .var(Variable::local(Z, "z", "x - level"))
        .var(Variable::parameter(
            X0,
            "x0",
            1.0,
            "x(0), and x after a reset",
        ))
        .var(Variable::parameter(LEVEL, "level", 0.5, "reset level").tunable())
        .var(Variable::int_output(RESETS, "resets", "state events").depends_on(&[]))
        .var(Variable::parameter(
            PERIOD,
            "period",
            0.3,
            "time event period",
        ))
        .var(Variable::int_output(TICKS, "ticks", "time events").depends_on(&[]))
        .var(Variable::local(NEXT, "next", "next time event").discrete())
        .var(Variable::parameter(
            STEP_BELOW,
            "step_below",
            0.0,
            "step event threshold",
        ))
        .var(Variable::int_output(STEPS, "steps", "step events").depends_on(&[]))
        .model_exchange(
            ModelExchangeSpec::new()
                .state(ContinuousState::new(X, DX).nominal(2.0).reinit())
                .event_indicator(Z)
                .needs_completed_integrator_step()
                .partial_derivatives()
                .without_co_simulation(),
        )
        .experiment(0.0, 3.0, 1e-3)
}

/// `KitMeCs`: `KitMe` with its Co-Simulation interface kept (never
/// stepped here: it has no co-simulation step).
pub fn dual_spec() -> ModelSpec {
    let mut s = spec();
    s.name = "KitMeCs";
    if let Some(me) = &mut s.model_exchange {
        me.co_simulation = true;
    }
    s.directional_derivatives(false).output_derivatives(0)
}

fn me_spec() -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == "KitMe")
        .expect("KitMe is registered")
}

fn dual() -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == "KitMeCs")
        .expect("KitMeCs is registered")
}

fn token(spec: &ModelSpec, version: FmiVersion) -> std::ffi::CString {
    token_c(spec, version, &Capabilities::full(spec, version))
}

// ----------------------------------------------------------- bindings

/// An FMI 2 Model Exchange instance through the exports.
struct Me2 {
    c: *mut c_void,
}

/// An FMI 3 Model Exchange instance through the exports.
struct Me3 {
    i: *mut c_void,
}

fn ok(status: c_int, what: &str) -> Result<(), String> {
    if status == 0 {
        Ok(())
    } else {
        Err(format!("{what} returned {status}"))
    }
}

fn instantiate_me2(name: &CStr, spec: &ModelSpec) -> *mut c_void {
    let cb = callbacks();
    let g = token(spec, FmiVersion::Fmi2);
    // SAFETY: valid strings and callback struct.
    unsafe { fmi2Instantiate(name.as_ptr(), 0, g.as_ptr(), std::ptr::null(), &cb, 0, 1) }
}

fn instantiate_me3(name: &CStr, spec: &ModelSpec) -> *mut c_void {
    let tok = token(spec, FmiVersion::Fmi3);
    // SAFETY: valid strings; the logger ignores the NULL environment.
    unsafe {
        fmi3InstantiateModelExchange(
            name.as_ptr(),
            tok.as_ptr(),
            std::ptr::null(),
            false,
            true,
            std::ptr::null_mut(),
            Some(logger3),
        )
    }
}

/// FMI 2: instantiated, set up, initialized with `params` (in
/// Initialization Mode): in Event Mode.
fn initialized2(name: &CStr, spec: &ModelSpec, params: &[(Vr, f64)]) -> Me2 {
    let c = instantiate_me2(name, spec);
    assert!(!c.is_null());
    // SAFETY: a live instance and arrays of the given lengths.
    unsafe {
        assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 1, 3.0), 0);
        assert_eq!(fmi2EnterInitializationMode(c), 0);
        for &(vr, x) in params {
            assert_eq!(fmi2SetReal(c, [vr].as_ptr(), 1, [x].as_ptr()), 0);
        }
        assert_eq!(fmi2ExitInitializationMode(c), 0);
    }
    Me2 { c }
}

/// FMI 3: as [`initialized2`].
fn initialized3(name: &CStr, spec: &ModelSpec, params: &[(Vr, f64)]) -> Me3 {
    let i = instantiate_me3(name, spec);
    assert!(!i.is_null());
    // SAFETY: a live instance and arrays of the given lengths.
    unsafe {
        assert_eq!(
            fmi3EnterInitializationMode(i, false, 0.0, 0.0, true, 3.0),
            0
        );
        for &(vr, x) in params {
            assert_eq!(fmi3SetFloat64(i, [vr].as_ptr(), 1, [x].as_ptr(), 1), 0);
        }
        assert_eq!(fmi3ExitInitializationMode(i), 0);
    }
    Me3 { i }
}

impl MeFmu for Me2 {
    fn set_time(&mut self, t: f64) -> Result<(), String> {
        // SAFETY: a live instance.
        ok(unsafe { fmi2SetTime(self.c, t) }, "fmi2SetTime")
    }
    fn set_continuous_states(&mut self, x: &[f64]) -> Result<(), String> {
        // SAFETY: an array of the given length.
        let s = unsafe { fmi2SetContinuousStates(self.c, x.as_ptr(), x.len()) };
        ok(s, "fmi2SetContinuousStates")
    }
    fn continuous_states(&mut self) -> Result<Vec<f64>, String> {
        let mut x = [0.0];
        // SAFETY: an array of the given length.
        let s = unsafe { fmi2GetContinuousStates(self.c, x.as_mut_ptr(), 1) };
        ok(s, "fmi2GetContinuousStates").map(|()| x.to_vec())
    }
    fn derivatives(&mut self) -> Result<Vec<f64>, String> {
        let mut x = [0.0];
        // SAFETY: an array of the given length.
        let s = unsafe { fmi2GetDerivatives(self.c, x.as_mut_ptr(), 1) };
        ok(s, "fmi2GetDerivatives").map(|()| x.to_vec())
    }
    fn event_indicators(&mut self) -> Result<Vec<f64>, String> {
        let mut z = [0.0];
        // SAFETY: an array of the given length.
        let s = unsafe { fmi2GetEventIndicators(self.c, z.as_mut_ptr(), 1) };
        ok(s, "fmi2GetEventIndicators").map(|()| z.to_vec())
    }
    fn completed_integrator_step(&mut self) -> Result<StepEvent, String> {
        let (mut e, mut t) = (7, 7);
        // SAFETY: valid out-pointers.
        let s = unsafe { fmi2CompletedIntegratorStep(self.c, 1, &mut e, &mut t) };
        ok(s, "fmi2CompletedIntegratorStep")?;
        Ok(StepEvent {
            enter_event_mode: e != 0,
            terminate_simulation: t != 0,
        })
    }
    fn enter_event_mode(&mut self) -> Result<(), String> {
        // SAFETY: a live instance.
        ok(unsafe { fmi2EnterEventMode(self.c) }, "fmi2EnterEventMode")
    }
    fn update_discrete_states(&mut self) -> Result<EventUpdate, String> {
        let mut info = EventInfo::default();
        // SAFETY: a valid out-pointer.
        let s = unsafe { fmi2NewDiscreteStates(self.c, &mut info) };
        ok(s, "fmi2NewDiscreteStates")?;
        Ok(EventUpdate {
            discrete_states_need_update: info.new_discrete_states_needed != 0,
            terminate_simulation: info.terminate_simulation != 0,
            values_of_continuous_states_changed: info.values_of_continuous_states_changed != 0,
            next_event_time: (info.next_event_time_defined != 0).then_some(info.next_event_time),
        })
    }
    fn enter_continuous_time_mode(&mut self) -> Result<(), String> {
        // SAFETY: a live instance.
        let s = unsafe { fmi2EnterContinuousTimeMode(self.c) };
        ok(s, "fmi2EnterContinuousTimeMode")
    }
    fn observe(&mut self) -> Result<Vec<f64>, String> {
        let mut n = [0; 3];
        // SAFETY: arrays of the given length.
        let s =
            unsafe { fmi2GetInteger(self.c, [RESETS, TICKS, STEPS].as_ptr(), 3, n.as_mut_ptr()) };
        ok(s, "fmi2GetInteger").map(|()| n.iter().map(|&k| f64::from(k)).collect())
    }
}

impl MeFmu for Me3 {
    fn set_time(&mut self, t: f64) -> Result<(), String> {
        // SAFETY: a live instance.
        ok(unsafe { fmi3SetTime(self.i, t) }, "fmi3SetTime")
    }
    fn set_continuous_states(&mut self, x: &[f64]) -> Result<(), String> {
        // SAFETY: an array of the given length.
        let s = unsafe { fmi3SetContinuousStates(self.i, x.as_ptr(), x.len()) };
        ok(s, "fmi3SetContinuousStates")
    }
    fn continuous_states(&mut self) -> Result<Vec<f64>, String> {
        let mut x = [0.0];
        // SAFETY: an array of the given length.
        let s = unsafe { fmi3GetContinuousStates(self.i, x.as_mut_ptr(), 1) };
        ok(s, "fmi3GetContinuousStates").map(|()| x.to_vec())
    }
    fn derivatives(&mut self) -> Result<Vec<f64>, String> {
        let mut x = [0.0];
        // SAFETY: an array of the given length.
        let s = unsafe { fmi3GetContinuousStateDerivatives(self.i, x.as_mut_ptr(), 1) };
        ok(s, "fmi3GetContinuousStateDerivatives").map(|()| x.to_vec())
    }
    fn event_indicators(&mut self) -> Result<Vec<f64>, String> {
        let mut z = [0.0];
        // SAFETY: an array of the given length.
        let s = unsafe { fmi3GetEventIndicators(self.i, z.as_mut_ptr(), 1) };
        ok(s, "fmi3GetEventIndicators").map(|()| z.to_vec())
    }
    fn completed_integrator_step(&mut self) -> Result<StepEvent, String> {
        let (mut e, mut t) = (true, true);
        // SAFETY: valid out-pointers.
        let s = unsafe { fmi3CompletedIntegratorStep(self.i, true, &mut e, &mut t) };
        ok(s, "fmi3CompletedIntegratorStep")?;
        Ok(StepEvent {
            enter_event_mode: e,
            terminate_simulation: t,
        })
    }
    fn enter_event_mode(&mut self) -> Result<(), String> {
        // SAFETY: a live instance.
        ok(unsafe { fmi3EnterEventMode(self.i) }, "fmi3EnterEventMode")
    }
    fn update_discrete_states(&mut self) -> Result<EventUpdate, String> {
        let (mut need, mut term, mut nominals, mut values, mut defined, mut next) =
            (true, true, true, true, true, -1.0);
        // SAFETY: valid out-pointers.
        let s = unsafe {
            fmi3UpdateDiscreteStates(
                self.i,
                &mut need,
                &mut term,
                &mut nominals,
                &mut values,
                &mut defined,
                &mut next,
            )
        };
        ok(s, "fmi3UpdateDiscreteStates")?;
        assert!(!nominals, "nominals never change");
        Ok(EventUpdate {
            discrete_states_need_update: need,
            terminate_simulation: term,
            values_of_continuous_states_changed: values,
            next_event_time: defined.then_some(next),
        })
    }
    fn enter_continuous_time_mode(&mut self) -> Result<(), String> {
        // SAFETY: a live instance.
        let s = unsafe { fmi3EnterContinuousTimeMode(self.i) };
        ok(s, "fmi3EnterContinuousTimeMode")
    }
    fn observe(&mut self) -> Result<Vec<f64>, String> {
        let mut n = [0; 3];
        // SAFETY: arrays of the given length.
        let s = unsafe {
            fmi3GetInt32(
                self.i,
                [RESETS, TICKS, STEPS].as_ptr(),
                3,
                n.as_mut_ptr(),
                3,
            )
        };
        ok(s, "fmi3GetInt32").map(|()| n.iter().map(|&k| f64::from(k)).collect())
    }
}

// ------------------------------------------------------------ the reference

/// x(t) with u = 0, x0 = 1, level 0.5: e^-(t - t_k) after the last reset
/// t_k = k ln 2 (no step events).
fn x_exact(t: f64) -> f64 {
    let ln2 = std::f64::consts::LN_2;
    let k = (t / ln2 + 1e-9).floor();
    (-(t - k * ln2)).exp()
}

/// Checks a run of `KitMe` against the analytic solution: resets (state
/// events) at k ln 2 to 1e-9, ticks (time events) at the multiples of 0.3
/// exactly, x to RK4's accuracy.
fn check_run(run: &crate::testing::model_exchange::Run) {
    let ln2 = std::f64::consts::LN_2;
    let state = run.event_times(EventKind::State);
    assert_eq!(state.len(), 4, "{state:?}");
    for (k, t) in state.iter().enumerate() {
        assert!(
            (t - (k + 1) as f64 * ln2).abs() < 1e-9,
            "reset {k} at {t}, expected {}",
            (k + 1) as f64 * ln2
        );
    }
    let time = run.event_times(EventKind::Time);
    assert_eq!(time.len(), 10, "{time:?}");
    for (k, t) in time.iter().enumerate() {
        assert!((t - 0.3 * (k + 1) as f64).abs() < 1e-12, "tick {k} at {t}");
    }
    for (t, x) in run.times.iter().zip(&run.states) {
        assert!(
            (x[0] - x_exact(*t)).abs() < 1e-9,
            "x({t}) = {}, expected {}",
            x[0],
            x_exact(*t)
        );
    }
    let last = run.observed.last().cloned().unwrap_or_default();
    assert_eq!(
        last,
        [4.0, 10.0, 0.0],
        "resets, ticks, step events at the end"
    );
    let end = run.times.last().copied().unwrap_or_default();
    assert!((end - 3.0).abs() < 1e-12, "ends at {end}");
}

#[test]
fn fmi2_model_exchange_follows_the_calling_sequence_to_the_analytic_solution() {
    let mut fmu = initialized2(c"me2", me_spec(), &[]);
    let run = simulate(&mut fmu, 0.0, &Settings::rk4(1e-3, 3.0)).expect("simulated");
    check_run(&run);
    // SAFETY: a live instance.
    unsafe {
        assert_eq!(fmi2Terminate(fmu.c), 0);
        fmi2FreeInstance(fmu.c);
    }
}

#[test]
fn fmi3_model_exchange_follows_the_calling_sequence_to_the_analytic_solution() {
    let mut fmu = initialized3(c"me3", me_spec(), &[]);
    let mut n = 0usize;
    // SAFETY: a live instance and a valid out-pointer.
    unsafe {
        assert_eq!(fmi3GetNumberOfContinuousStates(fmu.i, &mut n), 0);
        assert_eq!(n, 1);
        assert_eq!(fmi3GetNumberOfEventIndicators(fmu.i, &mut n), 0);
        assert_eq!(n, 1);
    }
    let run = simulate(&mut fmu, 0.0, &Settings::rk4(1e-3, 3.0)).expect("simulated");
    check_run(&run);
    // SAFETY: a live instance.
    unsafe { fmi3FreeInstance(fmu.i) };
}

#[test]
fn the_instance_api_runs_the_same_sequence() {
    use crate::instance::Interface;
    use crate::testing::{initialized_as, model_exchange::InstanceFmu};
    let (mut inst, _log) =
        initialized_as(me_spec(), FmiVersion::Fmi3, Interface::ModelExchange, &[])
            .expect("initialized");
    let mut fmu = InstanceFmu {
        instance: &mut inst,
        observed: vec![],
    };
    let run = simulate(&mut fmu, 0.0, &Settings::rk4(1e-3, 3.0)).expect("simulated");
    assert_eq!(run.event_times(EventKind::State).len(), 4);
    assert!((run.final_states()[0] - x_exact(3.0)).abs() < 1e-9);
}

#[test]
fn step_events_come_from_completed_integrator_step() {
    // x falls from 1; the first completed step with x < 0.8 (x(t) = e^-t:
    // t > ln 1.25 = 0.2231) asks for Event Mode, where x is reset to 1.
    let mut fmu = initialized2(c"me2step", me_spec(), &[(STEP_BELOW, 0.8)]);
    let run = simulate(&mut fmu, 0.0, &Settings::rk4(0.01, 1.0)).expect("simulated");
    let steps = run.event_times(EventKind::Step);
    assert_eq!(steps.len(), 4, "{steps:?}");
    // On the 0.01 grid: the first step after ln 1.25 is 0.23, then every 0.23.
    for (k, t) in steps.iter().enumerate() {
        assert!(
            (t - 0.23 * (k + 1) as f64).abs() < 1e-9,
            "step event {k} at {t}"
        );
    }
    assert!(run.event_times(EventKind::State).is_empty());
    // SAFETY: a live instance.
    unsafe { fmi2FreeInstance(fmu.c) };
}

#[test]
fn fmi2_model_exchange_state_machine_is_strict() {
    let me = initialized2(c"strict2me", me_spec(), &[]);
    let c = me.c;
    let mut x = [0.0];
    let mut info = EventInfo::default();
    let (mut e, mut t) = (0, 0);
    // SAFETY: a live instance, valid or deliberately wrong arguments.
    unsafe {
        // Event Mode: no integration calls, no Continuous-Time Mode before
        // the event iteration.
        assert_eq!(fmi2SetContinuousStates(c, [1.0].as_ptr(), 1), 3);
        assert!(logged(
            "fmi2SetContinuousStates: Illegal call sequence: called in state Event Mode"
        ));
        assert_eq!(fmi2CompletedIntegratorStep(c, 1, &mut e, &mut t), 3);
        assert!(logged(
            "fmi2CompletedIntegratorStep: Illegal call sequence: called in state Event Mode"
        ));
        assert_eq!(fmi2SetTime(c, 0.1), 3);
        assert!(logged(
            "fmi2SetTime: Illegal call sequence: called in state Event Mode: only a pure discrete-time FMU"
        ));
        assert_eq!(fmi2EnterContinuousTimeMode(c), 3);
        assert!(logged(
            "fmi2EnterContinuousTimeMode: Illegal call sequence: fmi2NewDiscreteStates was not called in this Event Mode"
        ));
        assert_eq!(fmi2DoStep(c, 0.0, 0.1, 1), 3);
        assert!(logged(
            "fmi2DoStep: Illegal call sequence: called in state Event Mode"
        ));
        assert_eq!(fmi2NewDiscreteStates(c, std::ptr::null_mut()), 3);
        assert_eq!(fmi2NewDiscreteStates(c, &mut info), 0);
        assert_eq!(info.next_event_time_defined, 1);
        assert_eq!(info.next_event_time, 0.3);
        // Derivatives and states are readable in Event Mode.
        assert_eq!(fmi2GetDerivatives(c, x.as_mut_ptr(), 1), 0);
        assert_eq!(x[0], -1.0);
        assert_eq!(fmi2GetDerivatives(c, x.as_mut_ptr(), 2), 3);
        assert!(logged(
            "fmi2GetDerivatives: nx (2) differs from the number of continuous states (1)"
        ));
        assert_eq!(fmi2EnterContinuousTimeMode(c), 0);
        // Continuous-Time Mode.
        assert_eq!(fmi2NewDiscreteStates(c, &mut info), 3);
        assert!(logged(
            "fmi2NewDiscreteStates: Illegal call sequence: called in state Continuous-Time Mode"
        ));
        assert_eq!(fmi2EnterContinuousTimeMode(c), 3);
        // Time goes forward: not before the last Event Mode (t = 0).
        assert_eq!(fmi2SetTime(c, -0.1), 3);
        assert!(logged(
            "fmi2SetTime: Illegal call sequence: time -0.1 is before 0"
        ));
        assert_eq!(fmi2SetTime(c, 0.1), 0);
        assert_eq!(fmi2CompletedIntegratorStep(c, 0, &mut e, &mut t), 0);
        assert_eq!(fmi2SetTime(c, 0.2), 0);
        assert_eq!(fmi2CompletedIntegratorStep(c, 0, &mut e, &mut t), 0);
        // Back into the last step is allowed, before the second-last not.
        assert_eq!(fmi2SetTime(c, 0.15), 0);
        assert_eq!(fmi2SetTime(c, 0.05), 3);
        assert!(logged(
            "fmi2SetTime: Illegal call sequence: time 0.05 is before 0.1"
        ));
        // A completed step before the previous one.
        assert_eq!(fmi2CompletedIntegratorStep(c, 0, &mut e, &mut t), 3);
        assert!(logged(
            "fmi2CompletedIntegratorStep: Illegal call sequence: the integrator step completed at t = 0.15 is before the previous one, at t = 0.2"
        ));
        // Only continuous inputs and states are settable now: a state
        // through fmi2SetReal, not a parameter.
        assert_eq!(fmi2SetReal(c, [X].as_ptr(), 1, [0.9].as_ptr()), 0);
        assert_eq!(fmi2GetContinuousStates(c, x.as_mut_ptr(), 1), 0);
        assert_eq!(x[0], 0.9);
        assert_eq!(fmi2SetReal(c, [LEVEL].as_ptr(), 1, [0.2].as_ptr()), 3);
        assert!(logged(
            "fmi2SetReal: Illegal call sequence: parameter level (vr 6, variability tunable, initial exact) cannot be set in state Continuous-Time Mode: only continuous inputs and continuous states can be set there"
        ));
        // ... and in Event Mode the tunable parameter is.
        assert_eq!(fmi2SetTime(c, 0.2), 0);
        assert_eq!(fmi2EnterEventMode(c), 0);
        assert_eq!(fmi2SetReal(c, [LEVEL].as_ptr(), 1, [0.2].as_ptr()), 0);
        assert_eq!(fmi2SetReal(c, [X].as_ptr(), 1, [0.9].as_ptr()), 3);
        assert!(logged(
            "only inputs and tunable parameters can be set there"
        ));
        // Nominals, declared 2.
        assert_eq!(fmi2GetNominalsOfContinuousStates(c, x.as_mut_ptr(), 1), 0);
        assert_eq!(x[0], 2.0);
        assert_eq!(fmi2Terminate(c), 0);
        assert_eq!(fmi2EnterEventMode(c), 3);
        assert!(logged(
            "fmi2EnterEventMode: Illegal call sequence: called in state Terminated"
        ));
        fmi2FreeInstance(c);
    }
}

/// `fmi3UpdateDiscreteStates` with every out-argument: (status,
/// discreteStatesNeedUpdate, nextEventTime if defined).
fn update3(i: *mut c_void) -> (c_int, bool, Option<f64>) {
    let (mut need, mut term, mut nom, mut val, mut def, mut next) =
        (false, false, false, false, false, 0.0);
    // SAFETY: valid out-pointers.
    let s = unsafe {
        fmi3UpdateDiscreteStates(
            i, &mut need, &mut term, &mut nom, &mut val, &mut def, &mut next,
        )
    };
    (s, need, def.then_some(next))
}

#[test]
fn fmi3_model_exchange_state_machine_is_strict() {
    let me = initialized3(c"strict3me", me_spec(), &[]);
    let i = me.i;
    let (mut a, mut b, mut c, mut d) = (false, false, false, 0.0);
    // SAFETY: a live instance, valid or deliberately wrong arguments.
    unsafe {
        // FMI 3: no fmi3SetTime in Event Mode.
        assert_eq!(fmi3SetTime(i, 0.0), 3);
        assert!(logged3(
            "fmi3SetTime: Illegal call sequence: called in state Event Mode"
        ));
        assert_eq!(fmi3EnterEventMode(i), 3);
        assert!(logged3(
            "fmi3EnterEventMode: Illegal call sequence: called in state Event Mode"
        ));
        assert_eq!(
            fmi3UpdateDiscreteStates(
                i,
                &mut a,
                std::ptr::null_mut(),
                &mut b,
                &mut c,
                &mut a,
                &mut d
            ),
            3
        );
        assert!(logged3(
            "fmi3UpdateDiscreteStates: terminateSimulation is NULL"
        ));
        assert_eq!(update3(i), (0, false, Some(0.3)));
        assert_eq!(fmi3EnterContinuousTimeMode(i), 0);
        assert_eq!(
            fmi3DoStep(i, 0.0, 0.1, true, &mut a, &mut b, &mut c, &mut d),
            3
        );
        assert!(logged3(
            "fmi3DoStep: Illegal call sequence: called in state Continuous-Time Mode"
        ));
        // Past the stop time (3): setting the time is fine (integrators
        // evaluate past their output points), completing a step there not.
        assert_eq!(fmi3SetTime(i, 3.5), 0);
        assert_eq!(fmi3CompletedIntegratorStep(i, false, &mut a, &mut b), 3);
        assert!(logged3(
            "fmi3CompletedIntegratorStep: Illegal call sequence: the integrator step completed at t = 3.5 is after the stop time 3"
        ));
        assert_eq!(fmi3SetTime(i, 0.5), 0);
        assert_eq!(fmi3CompletedIntegratorStep(i, false, &mut a, &mut b), 0);
        assert_eq!(fmi3EnterEventMode(i), 0);
        // In FMI 3 a state without reinit could be set in Event Mode; x
        // declares reinit, so it cannot.
        assert_eq!(fmi3SetFloat64(i, [X].as_ptr(), 1, [0.9].as_ptr(), 1), 3);
        assert!(logged3(
            "only inputs, tunable parameters and continuous states without reinit can be set there"
        ));
        assert_eq!(fmi3EnterContinuousTimeMode(i), 3);
        assert!(logged3(
            "fmi3EnterContinuousTimeMode: Illegal call sequence: fmi3UpdateDiscreteStates was not called in this Event Mode"
        ));
        assert_eq!(update3(i).0, 0);
        assert_eq!(fmi3EnterContinuousTimeMode(i), 0);
        let mut x = [0.0; 2];
        assert_eq!(fmi3GetContinuousStates(i, x.as_mut_ptr(), 2), 3);
        assert!(logged3(
            "fmi3GetContinuousStates: nContinuousStates (2) differs from the number of continuous states (1)"
        ));
        assert_eq!(fmi3GetNominalsOfContinuousStates(i, x.as_mut_ptr(), 1), 0);
        assert_eq!(x[0], 2.0);
        fmi3FreeInstance(i);
    }
}

#[test]
fn interfaces_are_refused_where_the_fmu_or_instance_has_none() {
    let cb = callbacks();
    let g = token(me_spec(), FmiVersion::Fmi2);
    let cs = token(&registry()[0], FmiVersion::Fmi2);
    // SAFETY: valid strings and callbacks.
    unsafe {
        // A Model Exchange only FMU has no co-simulation instance ...
        let c = fmi2Instantiate(c"nocs".as_ptr(), 1, g.as_ptr(), std::ptr::null(), &cb, 0, 1);
        assert!(c.is_null());
        assert!(logged(
            "fmi2Instantiate: fmuType 1 requested, but this FMU supports model exchange (0) only"
        ));
        let tok3 = token(me_spec(), FmiVersion::Fmi3);
        let i = fmi3InstantiateCoSimulation(
            c"nocs3".as_ptr(),
            tok3.as_ptr(),
            std::ptr::null(),
            false,
            true,
            false,
            false,
            std::ptr::null(),
            0,
            std::ptr::null_mut(),
            Some(logger3),
            None,
        );
        assert!(i.is_null());
        assert!(logged3(
            "fmi3InstantiateCoSimulation: this FMU supports model exchange only"
        ));
        // ... and a co-simulation only FMU no Model Exchange instance.
        let c = fmi2Instantiate(
            c"nome".as_ptr(),
            0,
            cs.as_ptr(),
            std::ptr::null(),
            &cb,
            0,
            1,
        );
        assert!(c.is_null());
        assert!(logged(
            "fmi2Instantiate: fmuType 0 requested, but this FMU supports co-simulation (1) only"
        ));
        assert!(
            fmi2Instantiate(c"bad".as_ptr(), 2, cs.as_ptr(), std::ptr::null(), &cb, 0, 1).is_null()
        );
        assert!(logged(
            "fmuType 2 is neither fmi2ModelExchange (0) nor fmi2CoSimulation (1)"
        ));
        // A co-simulation instance of an FMU with both refuses the Model
        // Exchange functions, naming why.
        let both = token(dual(), FmiVersion::Fmi2);
        let c = fmi2Instantiate(
            c"both".as_ptr(),
            1,
            both.as_ptr(),
            std::ptr::null(),
            &cb,
            0,
            1,
        );
        assert!(!c.is_null());
        assert_eq!(fmi2SetTime(c, 0.0), 3);
        assert!(logged(
            "fmi2SetTime: model exchange is not supported by this instance: fmi2SetTime is a Model Exchange function, and the instance was made for Co-Simulation"
        ));
        fmi2FreeInstance(c);
        let c = fmi2Instantiate(
            c"both".as_ptr(),
            0,
            both.as_ptr(),
            std::ptr::null(),
            &cb,
            0,
            1,
        );
        assert!(!c.is_null());
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmu_states_restore_the_model_exchange_state_machine() {
    let me = initialized3(c"state3me", dual(), &[]);
    let i = me.i;
    let mut fmu = Me3 { i };
    let at = |fmu: &Me3| -> f64 {
        let mut x = [0.0];
        // SAFETY: a live instance and an array of the given length.
        let status = unsafe { fmi3GetFloat64(fmu.i, [X].as_ptr(), 1, x.as_mut_ptr(), 1) };
        assert_eq!(status, 0);
        x[0]
    };
    fmu.update_discrete_states().expect("update");
    fmu.enter_continuous_time_mode().expect("ct");
    // Steps completed without noSetFMUStatePriorToCurrentPoint: earlier
    // states stay restorable.
    let complete = |i: *mut c_void, no_set_prior: bool| {
        let (mut e, mut t) = (false, false);
        // SAFETY: valid out-pointers.
        unsafe { fmi3CompletedIntegratorStep(i, no_set_prior, &mut e, &mut t) }
    };
    fmu.set_time(0.4).expect("time");
    fmu.set_continuous_states(&[0.7]).expect("states");
    assert_eq!(complete(i, false), 0);
    let mut s: *mut c_void = std::ptr::null_mut();
    // SAFETY: live instances and valid out-pointers.
    unsafe {
        assert_eq!(fmi3GetFMUState(i, &mut s), 0);
        let mut size = 0usize;
        assert_eq!(fmi3SerializedFMUStateSize(i, s, &mut size), 0);
        let mut bytes = vec![0u8; size];
        assert_eq!(fmi3SerializeFMUState(i, s, bytes.as_mut_ptr(), size), 0);
        // On: an event at t = 0.6 resets nothing (x above the level).
        fmu.set_time(0.6).expect("time");
        fmu.set_continuous_states(&[0.55]).expect("states");
        assert_eq!(complete(i, false), 0);
        fmu.enter_event_mode().expect("event");
        assert_eq!(at(&fmu), 0.55);
        // Back to t = 0.4 in Continuous-Time Mode, from the serialized state.
        let mut s2: *mut c_void = std::ptr::null_mut();
        assert_eq!(fmi3DeserializeFMUState(i, bytes.as_ptr(), size, &mut s2), 0);
        assert_eq!(fmi3SetFMUState(i, s2), 0);
        assert_eq!(at(&fmu), 0.7);
        // Continuous-Time Mode again: time may go on from 0.4 ...
        fmu.set_time(0.45).expect("time");
        // ... but not before the restored Event Mode's time (0).
        assert_eq!(fmi3SetTime(i, -1.0), 3);
        // With the promise at t = 0.45, the state at 0.4 is out of reach.
        assert_eq!(complete(i, true), 0);
        assert_eq!(fmi3SetFMUState(i, s), 3);
        assert!(logged3(
            "noSetFMUStatePriorToCurrentPoint was true at t = 0.45"
        ));
        assert_eq!(fmi3FreeFMUState(i, &mut s), 0);
        assert_eq!(fmi3FreeFMUState(i, &mut s2), 0);
        fmi3FreeInstance(i);
        // A Model Exchange state does not fit a co-simulation instance of
        // the same FMU (the same token).
        let tok = token(dual(), FmiVersion::Fmi3);
        let cs = fmi3InstantiateCoSimulation(
            c"state3cs".as_ptr(),
            tok.as_ptr(),
            std::ptr::null(),
            false,
            true,
            false,
            false,
            std::ptr::null(),
            0,
            std::ptr::null_mut(),
            Some(logger3),
            None,
        );
        assert!(!cs.is_null());
        let mut s3: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            fmi3DeserializeFMUState(cs, bytes.as_ptr(), size, &mut s3),
            3
        );
        assert!(logged3(
            "serialized FMU state is in state Continuous-Time Mode, which an instance of this interface never is"
        ));
        fmi3FreeInstance(cs);
    }
}

#[test]
fn directional_derivatives_cover_states_and_derivatives() {
    let me = initialized2(c"dd2me", me_spec(), &[]);
    let c = me.c;
    let mut out = [0.0; 2];
    // SAFETY: a live instance and arrays of the given lengths.
    unsafe {
        // d der(x) / d(x, u) = (-1, 1); d x / d x = 1 (a state output).
        assert_eq!(
            fmi2GetDirectionalDerivative(
                c,
                [DX, X].as_ptr(),
                2,
                [X].as_ptr(),
                1,
                [1.0].as_ptr(),
                out.as_mut_ptr()
            ),
            0
        );
        assert_eq!(out, [-1.0, 1.0]);
        assert_eq!(
            fmi2GetDirectionalDerivative(
                c,
                [DX].as_ptr(),
                1,
                [U].as_ptr(),
                1,
                [2.0].as_ptr(),
                out.as_mut_ptr()
            ),
            0
        );
        assert_eq!(out[0], 2.0);
        assert_eq!(
            fmi2GetDirectionalDerivative(
                c,
                [Z].as_ptr(),
                1,
                [X].as_ptr(),
                1,
                [1.0].as_ptr(),
                out.as_mut_ptr()
            ),
            3
        );
        assert!(logged(
            "unknown z is neither an output nor a state derivative"
        ));
        fmi2FreeInstance(c);
    }
    let me = initialized3(c"dd3me", me_spec(), &[]);
    // SAFETY: a live instance and arrays of the given lengths.
    unsafe {
        assert_eq!(
            fmi3GetDirectionalDerivative(
                me.i,
                [DX].as_ptr(),
                1,
                [X, U].as_ptr(),
                2,
                [1.0, 1.0].as_ptr(),
                2,
                out.as_mut_ptr(),
                1
            ),
            0
        );
        assert_eq!(out[0], 0.0);
        fmi3FreeInstance(me.i);
    }
}

#[test]
fn the_model_description_declares_model_exchange() {
    let spec = me_spec();
    let caps2 = Capabilities::full(spec, FmiVersion::Fmi2);
    let x2 = xml::model_description(spec, FmiVersion::Fmi2, &caps2, "KitMe");
    assert!(x2.contains("numberOfEventIndicators=\"1\""), "{x2}");
    assert!(x2.contains("<ModelExchange modelIdentifier=\"KitMe\""));
    assert!(x2.contains("completedIntegratorStepNotNeeded=\"false\""));
    assert!(x2.contains("providesDirectionalDerivative=\"true\"/>"));
    assert!(!x2.contains("<CoSimulation"), "Model Exchange only");
    assert!(
        x2.contains("<Real derivative=\"3\"/>"),
        "der(x) (index 4) of x (index 3)"
    );
    assert!(
        x2.contains("<Real reinit=\"true\" nominal=\"2.0\"/>"),
        "{x2}"
    );
    assert!(x2.contains("<Derivatives>\n      <Unknown index=\"4\" dependencies=\"2 3\" dependenciesKind=\"constant constant\"/>"), "{x2}");
    assert!(
        x2.contains(
            "<InitialUnknowns>\n      <Unknown index=\"3\"/>\n      <Unknown index=\"4\"/>"
        ),
        "{x2}"
    );
    let caps3 = Capabilities::full(spec, FmiVersion::Fmi3);
    let x3 = xml::model_description(spec, FmiVersion::Fmi3, &caps3, "KitMe");
    assert!(x3.contains("needsCompletedIntegratorStep=\"true\""), "{x3}");
    assert!(x3.contains("derivative=\"2\""));
    assert!(
        x3.contains("<ContinuousStateDerivative valueReference=\"3\" dependencies=\"1 2\""),
        "{x3}"
    );
    assert!(x3.contains("<EventIndicator valueReference=\"4\"/>"));
    assert!(!x3.contains("<CoSimulation"));
    let both = dual();
    let x = xml::model_description(
        both,
        FmiVersion::Fmi2,
        &Capabilities::full(both, FmiVersion::Fmi2),
        "KitMeCs",
    );
    let me_at = x.find("<ModelExchange").expect("ModelExchange");
    let cs_at = x.find("<CoSimulation").expect("CoSimulation");
    assert!(me_at < cs_at, "the schema's order");
    assert!(spec.check().is_ok() && both.check().is_ok());
    // A state must be a continuous Real local or output, its nominal > 0,
    // its derivative calculated.
    let with = |f: &dyn Fn(&mut ModelExchangeSpec)| {
        let mut bad = spec.clone().var(
            Variable::local(13, "w", "")
                .initial(Initial::Exact)
                .start(1.0),
        );
        if let Some(me) = &mut bad.model_exchange {
            f(me);
        }
        bad.check()
    };
    assert!(with(&|_| ()).is_ok());
    let e = with(&|me| me.states.push(ContinuousState::new(X0, Z)));
    assert!(
        e.as_ref().is_err_and(|e| e.contains("state x0 must be a continuous scalar Real local or output")),
        "{e:?}"
    );
    let e = with(&|me| me.states[0].nominal = Some(0.0));
    assert!(
        e.as_ref().is_err_and(|e| e.contains("has nominal 0")),
        "{e:?}"
    );
    let e = with(&|me| me.states.push(ContinuousState::new(Z, 13)));
    assert!(
        e.as_ref()
            .is_err_and(|e| e.contains("state derivative w must have initial calculated")),
        "{e:?}"
    );
}
