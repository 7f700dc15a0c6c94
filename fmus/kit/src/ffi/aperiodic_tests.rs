//! FMI 3 Clocks whose timing the model decides, through the exported C
//! functions: `fixed` / `tunable` Clocks without `intervalDecimal`,
//! `changing` and `countdown` Clocks in Co-Simulation with event mode
//! (`KitTimed`), and Scheduled Execution's Clock Update Mode, with the
//! importer's `clockUpdate` calling back into the FMU (`KitUpdate`).

use std::ffi::{CStr, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, Ordering};

use super::clock_tests::{
    activate, enter_event_mode, enter_step_mode, free, get_clock, get_i32, instantiate, set_clock,
    set_f64, step, update,
};
use super::tests::{
    fmi3DeserializeFMUState, fmi3EnterInitializationMode, fmi3ExitInitializationMode,
    fmi3FreeFMUState, fmi3FreeInstance, fmi3GetFMUState, fmi3GetIntervalDecimal,
    fmi3GetShiftDecimal, fmi3InstantiateScheduledExecution, fmi3SerializeFMUState,
    fmi3SerializedFMUStateSize, fmi3SetFMUState, fmi3SetIntervalDecimal, fmi3SetShiftDecimal,
    logged3, logger3, registry, token_c,
};
use crate::caps::{Capabilities, FmiVersion};
use crate::event_mode::{EventModel, EventStep, PeriodicTiming};
use crate::model::{
    DependencyKind, IntervalVariability, Model, ModelSpec, StepError, Values, Variable, Vr,
};
use crate::model_exchange::EventUpdate;
use crate::{Inputs, LogLevel, xml};

/// `KitTimed` (Co-Simulation with event mode).
pub mod timed {
    use super::*;

    /// Input Clock, fixed, no intervalDecimal: interval `p`, shift `s`.
    pub const PER: Vr = 1;
    /// Input Clock, tunable, no intervalDecimal: interval `q`, shift 0.
    pub const TUN: Vr = 2;
    /// Input Clock, changing: T = 0.1 (chg_n + 1).
    pub const CHG: Vr = 3;
    /// Input Clock, countdown: armed with `d` at each activation of `chg`.
    pub const CD: Vr = 4;
    /// Fixed parameter: the interval of `per` (start 0.3).
    pub const P: Vr = 5;
    /// Fixed parameter: the shift of `per` (start 0.1).
    pub const S: Vr = 6;
    /// Tunable parameter: the interval of `tun` (start 0.5).
    pub const Q: Vr = 7;
    /// Fixed parameter: the countdown of `cd` (start 0.05).
    pub const D: Vr = 8;
    /// Output: the activations of `chg`.
    pub const CHG_N: Vr = 9;
    /// Output: the activations of `cd`.
    pub const CD_N: Vr = 10;
    /// Output: the activations of `per`.
    pub const PER_N: Vr = 11;

    struct KitTimed {
        p: f64,
        s: f64,
        q: f64,
        d: f64,
    }

    impl Model for KitTimed {
        fn init(&mut self, v: &mut Values) {
            for vr in [CHG_N, CD_N, PER_N] {
                v[vr] = 0.0;
            }
        }
        fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}
        fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
            Some(self)
        }
    }

    impl EventModel for KitTimed {
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
            for (clock, n) in [(CHG, CHG_N), (CD, CD_N), (PER, PER_N)] {
                if v.bool(clock) {
                    v[n] += 1.0;
                }
            }
            EventUpdate::default()
        }
        fn periodic_clock(&self, clock: Vr, _v: &Values) -> Option<PeriodicTiming> {
            match clock {
                PER => Some(PeriodicTiming {
                    interval: self.p,
                    shift: self.s,
                }),
                TUN => Some(PeriodicTiming {
                    interval: self.q,
                    shift: 0.0,
                }),
                _ => None,
            }
        }
        fn changing_interval(&self, clock: Vr, _t: f64, v: &Values) -> Option<f64> {
            (clock == CHG).then(|| 0.1 * (v[CHG_N] + 1.0))
        }
        fn countdown_interval(&self, clock: Vr, _t: f64, v: &Values) -> Option<f64> {
            (clock == CD && v.bool(CHG)).then_some(self.d)
        }
    }

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new("KitTimed", "Clocks timed by the model", |v| {
            Ok(Box::new(KitTimed {
                p: v.positive("p", P)?,
                s: v.non_negative("s", S)?,
                q: v.positive("q", Q)?,
                d: v.non_negative("d", D)?,
            }))
        })
        .var(Variable::input_clock(
            PER,
            "per",
            IntervalVariability::Fixed,
            "",
        ))
        .var(Variable::input_clock(
            TUN,
            "tun",
            IntervalVariability::Tunable,
            "",
        ))
        .var(Variable::input_clock(
            CHG,
            "chg",
            IntervalVariability::Changing,
            "",
        ))
        .var(Variable::input_clock(
            CD,
            "cd",
            IntervalVariability::Countdown,
            "",
        ))
        .var(Variable::parameter(P, "p", 0.3, ""))
        .var(Variable::parameter(S, "s", 0.1, ""))
        .var(Variable::parameter(Q, "q", 0.5, "").tunable())
        .var(Variable::parameter(D, "d", 0.05, ""))
        .var(Variable::int_output(CHG_N, "chg_n", ""))
        .var(Variable::int_output(CD_N, "cd_n", ""))
        .var(Variable::int_output(PER_N, "per_n", ""))
        .directional_derivatives(false)
        .interpolate_inputs(false)
        .event_mode()
    }
}

/// `KitUpdate` (Scheduled Execution only): Clock Update Mode.
pub mod clock_update {
    use super::*;

    /// Input Clock, constant: interval 1, priority 0. Its partition
    /// counts `n`, ticks `out` at even n, arms `cd` with 0.5 at n = 3 and
    /// with 0 at n = 5.
    pub const TICK: Vr = 1;
    /// Input Clock, countdown, priority 1. Its partition counts `cd_n` and
    /// arms itself with 0 at cd_n = 2.
    pub const CD: Vr = 2;
    /// Output Clock.
    pub const OUT: Vr = 3;
    /// Clocked output (by `tick`): its activations.
    pub const N: Vr = 4;
    /// Clocked output (by `cd`): its activations.
    pub const CD_N: Vr = 5;
    /// Clocked output (by `out`): its ticks.
    pub const M: Vr = 6;

    struct KitUpdate;

    impl Model for KitUpdate {
        fn init(&mut self, _v: &mut Values) {}
        fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}
        fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
            Some(self)
        }
    }

    impl EventModel for KitUpdate {
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
                v[N] += 1.0;
                if v.int(N) % 2 == 0 {
                    v.set_bool(OUT, true);
                    v[M] += 1.0;
                }
            }
            if v.bool(CD) {
                v[CD_N] += 1.0;
            }
            EventUpdate::default()
        }
        fn countdown_interval(&self, _clock: Vr, _t: f64, v: &Values) -> Option<f64> {
            match (v.bool(TICK), v.bool(CD), v.int(N), v.int(CD_N)) {
                (true, _, 3, _) => Some(0.5),
                (true, _, 5, _) | (_, true, _, 2) => Some(0.0),
                _ => None,
            }
        }
    }

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new("KitUpdate", "Clock Update Mode", |_| {
            Ok(Box::new(KitUpdate))
        })
        .var(
            Variable::input_clock(TICK, "tick", IntervalVariability::Constant, "")
                .interval(1.0)
                .priority(0),
        )
        .var(Variable::input_clock(CD, "cd", IntervalVariability::Countdown, "").priority(1))
        .var(
            Variable::output_clock(OUT, "out", "").depends_on(&[(TICK, DependencyKind::Dependent)]),
        )
        .var(
            Variable::int_output(N, "n", "")
                .clocked_by(&[TICK])
                .depends_on(&[]),
        )
        .var(
            Variable::int_output(CD_N, "cd_n", "")
                .clocked_by(&[CD])
                .depends_on(&[]),
        )
        .var(
            Variable::int_output(M, "m", "")
                .clocked_by(&[OUT])
                .depends_on(&[]),
        )
        .directional_derivatives(false)
        .interpolate_inputs(false)
        .scheduled_execution_only()
    }
}

fn registered(name: &str) -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("{name} is registered"))
}

/// `fmi3GetIntervalDecimal` of one Clock: (status, interval, qualifier).
fn interval(i: *mut c_void, vr: Vr) -> (i32, f64, i32) {
    let (mut x, mut q) = (f64::NAN, -1);
    // SAFETY: a live instance, one value each.
    let st = unsafe { fmi3GetIntervalDecimal(i, &vr, 1, &mut x, &mut q) };
    (st, x, q)
}

/// `fmi3GetShiftDecimal` of one Clock: (status, shift).
fn shift(i: *mut c_void, vr: Vr) -> (i32, f64) {
    let mut x = f64::NAN;
    // SAFETY: a live instance, one value.
    let st = unsafe { fmi3GetShiftDecimal(i, &vr, 1, &mut x) };
    (st, x)
}

const NOT_YET_KNOWN: i32 = 0;
const UNCHANGED: i32 = 1;
const CHANGED: i32 = 2;

/// A `KitTimed` instance in Initialization Mode (start 0, stop 10).
fn timed_in_init(name: &CStr) -> *mut c_void {
    let i = instantiate(name, registered("KitTimed"), true, false);
    assert!(!i.is_null());
    // SAFETY: a live instance.
    let st = unsafe { fmi3EnterInitializationMode(i, false, 0.0, 0.0, true, 10.0) };
    assert_eq!(st, 0);
    i
}

/// `KitTimed` in Step Mode at 0, the changing Clock's T_0 read in
/// Initialization Mode (and `d` set if given).
fn timed_started(name: &CStr, d: Option<f64>) -> *mut c_void {
    use timed::*;
    let i = timed_in_init(name);
    if let Some(d) = d {
        assert_eq!(set_f64(i, D, d), 0);
    }
    assert_eq!(interval(i, CHG), (0, 0.1, CHANGED));
    // SAFETY: a live instance.
    assert_eq!(unsafe { fmi3ExitInitializationMode(i) }, 0);
    assert_eq!(update(i), (0, false));
    enter_step_mode(i);
    i
}

#[test]
fn model_timed_clocks_in_initialization_mode() {
    use timed::*;
    let i = timed_in_init(c"timed-init");
    // Fixed without intervalDecimal: the model's interval and shift.
    assert_eq!(interval(i, PER), (0, 0.3, CHANGED));
    assert_eq!(interval(i, PER), (0, 0.3, UNCHANGED));
    assert_eq!(shift(i, PER), (0, 0.1));
    // SAFETY: a live instance, one value each.
    unsafe {
        assert_eq!(fmi3SetIntervalDecimal(i, &PER, 1, &0.5), 3);
        assert!(logged3(
            "per (vr 1) is fixed without intervalDecimal: the FMU gives its interval and shift"
        ));
        assert_eq!(fmi3SetShiftDecimal(i, &TUN, 1, &0.0), 3);
    }
    // A parameter set in Initialization Mode changes it.
    assert_eq!(set_f64(i, P, 0.4), 0);
    assert_eq!(interval(i, PER), (0, 0.4, CHANGED));
    assert_eq!(interval(i, TUN), (0, 0.5, CHANGED));
    // Changing: T_0; countdown: not armed; no shifts.
    assert_eq!(interval(i, CHG), (0, 0.1, CHANGED));
    assert_eq!(interval(i, CHG), (0, 0.1, UNCHANGED));
    assert_eq!(interval(i, CD), (0, 0.0, NOT_YET_KNOWN));
    assert_eq!(shift(i, CHG).0, 3);
    assert!(logged3(
        "chg (vr 3) is changing: only periodic Clocks (constant, fixed, tunable) have a shift"
    ));
    // SAFETY: a live instance.
    assert_eq!(unsafe { fmi3ExitInitializationMode(i) }, 0);
    // Fixed: unchanged once initialized. per ticks at 0.1, 0.5, ...
    assert_eq!(interval(i, PER), (0, 0.4, UNCHANGED));
    assert_eq!(set_clock(i, PER, true), 3);
    assert!(logged3(
        "per (vr 1, interval 0.4, first tick at 0.1) does not tick at t = 0 (its next tick is at t = 0.1)"
    ));
    assert_eq!(set_clock(i, CHG, true), 3);
    assert!(logged3(
        "the changing Clock chg (vr 3) ticks next at t = 0.1 (as fmi3GetIntervalDecimal announced), not at t = 0"
    ));
    assert_eq!(set_clock(i, CD, true), 3);
    assert!(logged3(
        "the countdown Clock cd (vr 4) is not armed (fmi3GetIntervalDecimal answers fmi3IntervalNotYetKnown)"
    ));
    assert_eq!(set_clock(i, TUN, true), 0);
    assert_eq!(update(i), (0, false));
    free(i);
    // Not read in Initialization Mode: no activation.
    let j = timed_in_init(c"timed-unread");
    // SAFETY: a live instance.
    assert_eq!(unsafe { fmi3ExitInitializationMode(j) }, 0);
    assert_eq!(set_clock(j, TUN, true), 3);
    assert!(logged3(
        "the tunable Clock tun (vr 2) has no intervalDecimal: the FMU gives its interval, which the importer did not read"
    ));
    assert_eq!(interval(j, TUN), (0, 0.5, CHANGED));
    assert_eq!(set_clock(j, TUN, true), 0);
    free(j);
}

#[test]
fn changing_and_countdown_clocks_tick_where_their_intervals_say() {
    use timed::*;
    let i = timed_started(c"timed-aperiodic", None);
    assert_eq!(step(i, 0.0, 0.1), (0, false, false, 0.1));
    enter_event_mode(i);
    assert_eq!(set_clock(i, CD, true), 3);
    assert_eq!(set_clock(i, CHG, true), 0);
    assert_eq!(update(i), (0, false));
    assert_eq!(get_i32(i, CHG_N), (0, 1));
    // After the activation: T_1 = 0.2 and the countdown armed with 0.05.
    assert_eq!(interval(i, CHG), (0, 0.2, CHANGED));
    assert_eq!(interval(i, CHG), (0, 0.2, UNCHANGED));
    assert_eq!(interval(i, CD), (0, 0.05, CHANGED));
    assert_eq!(interval(i, CD), (0, 0.05, UNCHANGED));
    enter_step_mode(i);
    assert_eq!(step(i, 0.1, 0.05).0, 0);
    enter_event_mode(i);
    assert_eq!(set_clock(i, CD, true), 0);
    assert_eq!(update(i), (0, false));
    assert_eq!(get_i32(i, CD_N), (0, 1));
    // The activation used the arming up.
    assert_eq!(interval(i, CD), (0, 0.0, NOT_YET_KNOWN));
    assert_eq!(set_clock(i, CD, true), 3);
    enter_step_mode(i);
    assert_eq!(step(i, 0.15, 0.15).0, 0);
    enter_event_mode(i);
    // 0.3: chg again; the importer does not read the intervals here.
    assert_eq!(set_clock(i, CHG, true), 0);
    assert_eq!(update(i), (0, false));
    enter_step_mode(i);
    assert_eq!(step(i, 0.3, 0.05).0, 0);
    enter_event_mode(i);
    assert_eq!(set_clock(i, CD, true), 3);
    assert!(logged3(
        "the countdown Clock cd (vr 4) was armed, and the importer did not read its interval"
    ));
    // Read at 0.35: the countdown runs from here (FMI 3.0: t_event + T).
    assert_eq!(interval(i, CD), (0, 0.05, CHANGED));
    assert_eq!(set_clock(i, CD, true), 3);
    assert!(logged3("the countdown Clock cd (vr 4) ticks next at t = "));
    assert_eq!(update(i), (0, false));
    enter_step_mode(i);
    assert_eq!(step(i, 0.35, 0.05).0, 0);
    enter_event_mode(i);
    assert_eq!(set_clock(i, CD, true), 0);
    assert_eq!(update(i), (0, false));
    enter_step_mode(i);
    // chg's next activation (0.3 + 0.3) was never read.
    assert_eq!(step(i, 0.4, 0.2).0, 0);
    enter_event_mode(i);
    assert_eq!(set_clock(i, CHG, true), 3);
    assert!(logged3(
        "the changing Clock chg (vr 3) has an interval the importer did not read"
    ));
    assert_eq!(interval(i, CHG), (0, 0.30000000000000004, CHANGED));
    assert_eq!(set_clock(i, CHG, true), 0);
    assert_eq!(update(i), (0, false));
    assert_eq!(get_i32(i, CHG_N), (0, 3));
    assert_eq!(get_i32(i, CD_N), (0, 2));
    free(i);
}

#[test]
fn a_countdown_armed_with_zero_ticks_in_the_same_event_mode() {
    use timed::*;
    let i = timed_started(c"timed-zero", Some(0.0));
    assert_eq!(step(i, 0.0, 0.1).0, 0);
    enter_event_mode(i);
    assert_eq!(set_clock(i, CHG, true), 0);
    assert_eq!(update(i), (0, false));
    assert_eq!(interval(i, CD), (0, 0.0, CHANGED));
    // Another super-dense instant: countdown Clocks may tick again.
    assert_eq!(set_clock(i, CD, true), 0);
    assert_eq!(update(i), (0, false));
    assert_eq!(get_i32(i, CD_N), (0, 1));
    assert_eq!(set_clock(i, CD, true), 3, "used up");
    enter_step_mode(i);
    free(i);
}

#[test]
fn a_tunable_clock_without_interval_decimal_follows_its_parameter() {
    use timed::*;
    let i = timed_in_init(c"timed-tunable");
    assert_eq!(interval(i, TUN), (0, 0.5, CHANGED));
    // SAFETY: a live instance.
    assert_eq!(unsafe { fmi3ExitInitializationMode(i) }, 0);
    assert_eq!(set_clock(i, TUN, true), 0);
    assert_eq!(update(i), (0, false));
    // The tunable parameter in Event Mode: a new interval.
    assert_eq!(set_f64(i, Q, 0.2), 0);
    enter_step_mode(i);
    assert_eq!(step(i, 0.0, 0.3).0, 0);
    enter_event_mode(i);
    assert_eq!(set_clock(i, TUN, true), 3);
    assert!(logged3(
        "tun (vr 2) has no intervalDecimal: the FMU gives its interval, which the importer did not read since the FMU set it"
    ));
    // Read at 0.3: the ticks restart from here, one interval on.
    assert_eq!(interval(i, TUN), (0, 0.2, CHANGED));
    assert_eq!(interval(i, TUN), (0, 0.2, UNCHANGED));
    assert_eq!(set_clock(i, TUN, true), 3);
    assert!(logged3("its next tick is at t = 0.5"));
    assert_eq!(update(i), (0, false));
    enter_step_mode(i);
    assert_eq!(step(i, 0.3, 0.2).0, 0);
    enter_event_mode(i);
    assert_eq!(set_clock(i, TUN, true), 0);
    assert_eq!(update(i), (0, false));
    free(i);
}

#[test]
fn the_fmu_state_holds_the_announced_timing() {
    use timed::*;
    let i = timed_started(c"timed-state", None);
    assert_eq!(step(i, 0.0, 0.1).0, 0);
    enter_event_mode(i);
    assert_eq!(set_clock(i, CHG, true), 0);
    assert_eq!(update(i), (0, false));
    // SAFETY: a live instance throughout; the states freed at the end.
    unsafe {
        let mut s: *mut c_void = std::ptr::null_mut();
        assert_eq!(fmi3GetFMUState(i, &mut s), 0);
        let mut size = 0usize;
        assert_eq!(fmi3SerializedFMUStateSize(i, s, &mut size), 0);
        let mut bytes = vec![0u8; size];
        assert_eq!(fmi3SerializeFMUState(i, s, bytes.as_mut_ptr(), size), 0);
        let mut copy: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            fmi3DeserializeFMUState(i, bytes.as_ptr(), size, &mut copy),
            0
        );
        for st in [s, copy] {
            // Not read yet in the saved state: announced again.
            assert_eq!(fmi3SetFMUState(i, st), 0);
            assert_eq!(interval(i, CHG), (0, 0.2, CHANGED));
            assert_eq!(interval(i, CD), (0, 0.05, CHANGED));
            assert_eq!(set_clock(i, CD, true), 3);
        }
        for mut st in [s, copy] {
            assert_eq!(fmi3FreeFMUState(i, &mut st), 0);
        }
    }
    free(i);
}

#[test]
fn model_timed_clocks_in_the_model_description() {
    let s = registered("KitTimed");
    assert_eq!(s.check(), Ok(()));
    assert!(!s.needs_clock_update(), "no Scheduled Execution");
    let x3 = xml::model_description(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
        "KitTimed",
    );
    for needle in [
        "<Clock name=\"per\" valueReference=\"1\" causality=\"input\" variability=\"discrete\" intervalVariability=\"fixed\"/>",
        "<Clock name=\"tun\" valueReference=\"2\" causality=\"input\" variability=\"discrete\" intervalVariability=\"tunable\"/>",
        "<Clock name=\"chg\" valueReference=\"3\" causality=\"input\" variability=\"discrete\" intervalVariability=\"changing\"/>",
        "<Clock name=\"cd\" valueReference=\"4\" causality=\"input\" variability=\"discrete\" intervalVariability=\"countdown\"/>",
    ] {
        assert!(x3.contains(needle), "{needle} in {x3}");
    }
}

// ------------------------------------------------------ Clock Update Mode

/// What the importer's `clockUpdate` saw, per call.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Seen {
    /// `fmi3GetClock(out)` twice: (status, value).
    out: [(i32, bool); 2],
    /// `fmi3GetIntervalDecimal(cd)`.
    cd: (i32, f64, i32),
    /// The statuses of calls Clock Update Mode does not allow:
    /// `fmi3GetInt32`, `fmi3ActivateModelPartition`, `fmi3GetFMUState`.
    refused: [i32; 3],
    /// `fmi3GetClock` after a refused `fmi3FreeInstance`: the instance
    /// lives on.
    alive: i32,
}

/// The importer's environment: the instance and what its callbacks saw.
struct Importer {
    instance: AtomicPtr<c_void>,
    seen: Mutex<Vec<Seen>>,
}

impl Importer {
    fn take(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default()
    }
}

/// The importer's `fmi3ClockUpdateCallback`: reads the output Clock and
/// the countdown Clock, and tries calls that are not allowed.
extern "C" fn on_clock_update(env: *mut c_void) {
    use clock_update::*;
    // SAFETY: `env` is the `Importer` the test passed as
    // instanceEnvironment; it outlives the instance.
    let importer = unsafe { &*(env as *const Importer) };
    let i = importer.instance.load(Ordering::SeqCst);
    let out = [get_clock(i, OUT), get_clock(i, OUT)];
    let cd = interval(i, CD);
    let mut state: *mut c_void = std::ptr::null_mut();
    // SAFETY: a live instance, a valid out-pointer; the refused free
    // leaves it alive.
    let refused = unsafe {
        [
            get_i32(i, N).0,
            activate(i, TICK, 100.0),
            fmi3GetFMUState(i, &mut state),
        ]
    };
    // SAFETY: a live instance (refused: it stays).
    unsafe { fmi3FreeInstance(i) };
    let alive = get_clock(i, OUT).0;
    if let Ok(mut s) = importer.seen.lock() {
        s.push(Seen {
            out,
            cd,
            refused,
            alive,
        });
    }
}

fn instantiate_update(name: &CStr, importer: &Importer, callback: *mut c_void) -> *mut c_void {
    let spec = registered("KitUpdate");
    let tok = token_c(
        spec,
        FmiVersion::Fmi3,
        &Capabilities::full(spec, FmiVersion::Fmi3),
    );
    // SAFETY: valid strings, a valid logger and callback; the environment
    // outlives the instance.
    unsafe {
        fmi3InstantiateScheduledExecution(
            name.as_ptr(),
            tok.as_ptr(),
            std::ptr::null(),
            false,
            true,
            std::ptr::from_ref(importer).cast_mut().cast(),
            Some(logger3),
            callback,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
}

/// A callback call that saw `out` tick (or not) and `cd`'s interval.
fn seen(out: bool, cd: (f64, i32)) -> Seen {
    Seen {
        out: [(0, out), (0, false)],
        cd: (0, cd.0, cd.1),
        refused: [3, 3, 3],
        alive: 0,
    }
}

#[test]
fn clock_update_mode_calls_the_importer_back() {
    use clock_update::*;
    let importer = Importer {
        instance: AtomicPtr::new(std::ptr::null_mut()),
        seen: Mutex::new(Vec::new()),
    };
    // Without clockUpdate: refused (the FMU has output and countdown Clocks).
    assert!(instantiate_update(c"cu-null", &importer, std::ptr::null_mut()).is_null());
    assert!(logged3(
        "fmi3InstantiateScheduledExecution: clockUpdate is NULL, and this FMU has output or countdown Clocks"
    ));
    let i = instantiate_update(c"cu", &importer, on_clock_update as *mut c_void);
    assert!(!i.is_null());
    importer.instance.store(i, Ordering::SeqCst);
    // SAFETY: a live instance.
    unsafe {
        assert_eq!(
            fmi3EnterInitializationMode(i, false, 0.0, 0.0, true, 10.0),
            0
        );
        assert_eq!(fmi3ExitInitializationMode(i), 0);
    }
    // Output Clocks: read in Clock Update Mode only.
    assert_eq!(get_clock(i, OUT).0, 3);
    assert!(logged3("(Scheduled Execution: in Clock Update Mode only"));
    // n = 1: nothing for the importer.
    assert_eq!(activate(i, TICK, 0.0), 0);
    assert_eq!(importer.take(), []);
    // n = 2: out ticks, reported once; its clocked m readable after.
    assert_eq!(activate(i, TICK, 1.0), 0);
    assert_eq!(importer.take(), [seen(true, (0.0, NOT_YET_KNOWN))]);
    assert!(logged3(
        "fmi3FreeInstance: Illegal call sequence: called in state Clock Update Mode"
    ));
    assert_eq!(get_i32(i, M), (0, 1));
    assert_eq!(get_i32(i, N), (0, 2));
    // n = 3: cd armed with 0.5, due at 2.5.
    assert_eq!(activate(i, TICK, 2.0), 0);
    assert_eq!(importer.take(), [seen(false, (0.5, CHANGED))]);
    assert_eq!(interval(i, CD), (0, 0.5, UNCHANGED));
    assert_eq!(activate(i, CD, 2.4), 3);
    assert!(logged3(
        "the countdown Clock cd (vr 2) ticks next at t = 2.5"
    ));
    assert_eq!(activate(i, CD, 2.5), 0);
    assert_eq!(get_i32(i, CD_N), (0, 1));
    assert_eq!(interval(i, CD), (0, 0.0, NOT_YET_KNOWN));
    assert_eq!(activate(i, CD, 2.5), 3);
    assert!(logged3("the countdown Clock cd (vr 2) is not armed"));
    // n = 4: out; n = 5: cd armed with 0, its partition re-arms it with 0
    // once (cd_n = 2): three activations at t = 4.
    assert_eq!(activate(i, TICK, 3.0), 0);
    assert_eq!(activate(i, TICK, 4.0), 0);
    assert_eq!(
        importer.take(),
        [
            seen(true, (0.0, NOT_YET_KNOWN)),
            seen(false, (0.0, CHANGED))
        ]
    );
    assert_eq!(activate(i, CD, 4.0), 0);
    assert_eq!(importer.take(), [seen(false, (0.0, CHANGED))]);
    assert_eq!(activate(i, CD, 4.0), 0);
    assert_eq!(importer.take(), []);
    assert_eq!(get_i32(i, CD_N), (0, 3));
    assert_eq!(activate(i, CD, 4.0), 3);
    assert_eq!(get_i32(i, M), (0, 2));
    free(i);
}
