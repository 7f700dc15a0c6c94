//! The binding's Model Exchange calls, FMI 2.0 and 3.0, on a hand-written
//! bouncing ball whose state machine is checked as the Reference FMUs
//! check it (`tests/data/me_fmu`): the whole calling sequence with
//! explicit Euler steps made here, its call log, the states the binding
//! refuses a call in, the interface an instance was made for, and the
//! functions an interface needs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use cosim_fmi::ffi::call_log::CallLogTarget;
use cosim_fmi::{FmiError, Fmu, Instance, InstantiateOptions, Interface, Phase, StepOutcome};
use cosim_tests::{BallInterfaces, bouncing_ball_fmu};

/// Value references of the ball (both versions).
const H: u32 = 0;
const DER_H: u32 = 1;
const V: u32 = 2;
const BOUNCES: u32 = 6;

/// The first bounce of the ball dropped from 1 m: sqrt(2 h / g).
fn first_bounce() -> f64 {
    (2.0 / 9.81_f64).sqrt()
}

/// The ball of `interfaces` in FMI version `fmi`, built in `dir` and
/// opened.
fn ball_fmu(dir: &Path, fmi: u8, interfaces: BallInterfaces) -> Fmu {
    Fmu::open(bouncing_ball_fmu(dir, fmi, interfaces, &[])).unwrap()
}

fn options(interface: Interface, log: Option<&Path>) -> InstantiateOptions {
    InstantiateOptions {
        interface,
        call_log: log.map(|p| CallLogTarget::File(p.to_path_buf()).open().unwrap()),
        ..InstantiateOptions::default()
    }
}

/// Instantiation to Event Mode after Initialization Mode.
fn initialized(fmu: &Fmu, log: Option<&Path>) -> Instance {
    let mut ball = fmu
        .instantiate("ball", &options(Interface::ModelExchange, log))
        .unwrap();
    ball.setup_experiment(None, 0.0, Some(3.0)).unwrap();
    ball.enter_initialization_mode().unwrap();
    ball.exit_initialization_mode().unwrap();
    assert_eq!(ball.phase(), Phase::EventMode);
    ball
}

/// The event iteration of Event Mode; whether the continuous states
/// changed.
fn event_iteration(ball: &mut Instance) -> bool {
    let mut changed = false;
    loop {
        let update = ball.update_discrete_states().unwrap();
        assert!(!update.terminate_simulation);
        assert_eq!(update.next_event_time, None);
        changed |= update.values_changed;
        if !update.discrete_states_need_update {
            return changed;
        }
    }
}

/// What a run of the ball to `stop` by explicit Euler steps of `dt` gives:
/// the state at the end and the times of the state events.
struct Run {
    x: [f64; 2],
    events: Vec<f64>,
}

/// Integrates the ball from where it is (Continuous-Time Mode, at `t`)
/// to `stop`, as fmusim's fixed-step driver does: derivatives, time,
/// states, event indicators, completed step, and an event where the
/// indicator crosses zero.
fn integrate(ball: &mut Instance, t: f64, dt: f64, stop: f64) -> Run {
    let (mut x, mut dx, mut z, mut prev_z) = ([0.0; 2], [0.0; 2], [0.0; 1], [0.0; 1]);
    ball.get_continuous_states(&mut x).unwrap();
    ball.get_event_indicators(&mut prev_z).unwrap();
    let mut events = Vec::new();
    let mut step = 0u32;
    let mut t_now = t;
    while t_now < stop - dt / 2.0 {
        ball.get_derivatives(&mut dx).unwrap();
        step += 1;
        t_now = t + f64::from(step) * dt;
        ball.set_time(t_now).unwrap();
        for (x, dx) in x.iter_mut().zip(dx) {
            *x += dt * dx;
        }
        ball.set_continuous_states(&x).unwrap();
        ball.get_event_indicators(&mut z).unwrap();
        let completed = ball.completed_integrator_step(true).unwrap();
        assert!(!completed.enter_event_mode && !completed.terminate_simulation);
        if prev_z[0] > 0.0 && z[0] <= 0.0 {
            events.push(t_now);
            ball.enter_event_mode().unwrap();
            assert_eq!(ball.phase(), Phase::EventMode);
            let changed = event_iteration(ball);
            ball.enter_continuous_time_mode().unwrap();
            if changed {
                ball.get_continuous_states(&mut x).unwrap();
            }
            ball.get_event_indicators(&mut z).unwrap();
        }
        prev_z = z;
    }
    Run { x, events }
}

fn the_whole_calling_sequence(fmi: u8) {
    let dir = tempfile::tempdir().unwrap();
    let fmu = ball_fmu(dir.path(), fmi, BallInterfaces::ModelExchange);
    let md = fmu.model_description();
    assert_eq!(md.default_interface(), Some(Interface::ModelExchange));
    assert_eq!(md.continuous_states(), vec![(H, DER_H), (V, 3)]);
    assert_eq!(md.number_of_event_indicators(), 1);
    let me = md.model_exchange_info().unwrap();
    assert_eq!(me.model_identifier, "BouncingBallME");
    // FMI 2 completedIntegratorStepNotNeeded absent, FMI 3
    // needsCompletedIntegratorStep="true": needed in both.
    assert!(me.needs_completed_integrator_step);
    assert!(me.can_get_and_set_fmu_state && me.provides_directional_derivatives);
    let log = dir.path().join("calls.log");
    let mut ball = initialized(&fmu, Some(&log));
    assert_eq!(ball.interface(), Interface::ModelExchange);
    assert_eq!(ball.number_of_continuous_states(), 2);
    assert_eq!(ball.number_of_event_indicators(), 1);
    assert!(!event_iteration(&mut ball));
    ball.enter_continuous_time_mode().unwrap();
    assert_eq!(ball.phase(), Phase::ContinuousTimeMode);
    let mut nominals = [0.0; 2];
    ball.get_nominals_of_continuous_states(&mut nominals)
        .unwrap();
    assert_eq!(nominals, [1.0, 10.0]);
    assert_eq!(md.continuous_state_nominals(), nominals);
    // d der(h) / d v = 1.
    let mut sensitivity = [0.0];
    ball.get_directional_derivative(&[DER_H], &[V], &[1.0], &mut sensitivity)
        .unwrap();
    assert_eq!(sensitivity, [1.0]);

    let dt = 1e-3;
    let run = integrate(&mut ball, 0.0, dt, 0.5);
    // One bounce, found within a step of the exact time (Euler's error
    // in h at the bounce is about g t dt / 2: 2 mm).
    assert_eq!(run.events.len(), 1, "{:?}", run.events);
    assert!(
        (run.events[0] - first_bounce()).abs() < 3.0 * dt,
        "{} vs {}",
        run.events[0],
        first_bounce()
    );
    let mut bounces = [0];
    ball.get_i32(&[BOUNCES], &mut bounces).unwrap();
    assert_eq!(bounces, [1]);
    // Rising after the bounce, at about e times the speed of impact.
    assert!(run.x[1] > 0.0);
    let mut v = [0.0];
    ball.get_f64(&[V], &mut v).unwrap();
    assert_eq!(v[0], run.x[1]);

    // A state saved in Continuous-Time Mode and restored: the same steps
    // again, bit for bit, in the mode it was saved in.
    let saved = ball.get_state(None).unwrap();
    let first = integrate(&mut ball, 0.5, dt, 0.6).x;
    ball.set_state(saved).unwrap();
    assert_eq!(ball.phase(), Phase::ContinuousTimeMode);
    let again = integrate(&mut ball, 0.5, dt, 0.6).x;
    assert_eq!(first, again);
    ball.free_state(saved).unwrap();

    ball.terminate().unwrap();
    assert_eq!(ball.phase(), Phase::Terminated);
    // The model may still be read.
    let mut dx = [0.0; 2];
    ball.get_derivatives(&mut dx).unwrap();
    assert_eq!(dx[1], -9.81);
    assert!(ball.take_recent_log().is_empty(), "the FMU complained");
    drop(ball);

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let has = |line: &str| {
        assert!(
            lines.contains(&line),
            "no line {line:?} in the call log:\n{}",
            lines[..lines.len().min(40)].join("\n")
        )
    };
    if fmi == 2 {
        let first = lines[0];
        assert!(
            first.starts_with(
                "[OK] ball: fmi2Instantiate(instanceName=\"ball\", fmuType=0 /* fmi2ModelExchange */, fmuGUID=\"{cosim-test-bouncing-ball-2}\""
            ),
            "{first}"
        );
        has("[OK] ball: fmi2ExitInitializationMode()");
        has(
            "[OK] ball: fmi2NewDiscreteStates(eventInfo={newDiscreteStatesNeeded=0, terminateSimulation=0, nominalsOfContinuousStatesChanged=0, valuesOfContinuousStatesChanged=0, nextEventTimeDefined=0, nextEventTime=0})",
        );
        has(
            "[OK] ball: fmi2NewDiscreteStates(eventInfo={newDiscreteStatesNeeded=0, terminateSimulation=0, nominalsOfContinuousStatesChanged=0, valuesOfContinuousStatesChanged=1, nextEventTimeDefined=0, nextEventTime=0})",
        );
        has("[OK] ball: fmi2EnterContinuousTimeMode()");
        has("[OK] ball: fmi2GetContinuousStates(x={1, 0}, nx=2)");
        has("[OK] ball: fmi2GetNominalsOfContinuousStates(x_nominal={1, 10}, nx=2)");
        has("[OK] ball: fmi2GetEventIndicators(eventIndicators={1}, ni=1)");
        has("[OK] ball: fmi2GetDerivatives(derivatives={0, -9.81}, nx=2)");
        has("[OK] ball: fmi2SetTime(time=0.001)");
        has("[OK] ball: fmi2SetContinuousStates(x={1, -0.009810000000000001}, nx=2)");
        has(
            "[OK] ball: fmi2CompletedIntegratorStep(noSetFMUStatePriorToCurrentPoint=1, enterEventMode=0, terminateSimulation=0)",
        );
        has("[OK] ball: fmi2EnterEventMode()");
        has(
            "[OK] ball: fmi2GetDirectionalDerivative(vUnknown_ref={1} /* der(h) */, nUnknown=1, vKnown_ref={2} /* v */, nKnown=1, dvKnown={1}, dvUnknown={1})",
        );
        has("[OK] ball: fmi2Terminate()");
        assert_eq!(lines.last(), Some(&"[OK] ball: fmi2FreeInstance()"));
    } else {
        let first = lines[0];
        assert!(
            first.starts_with(
                "[OK] ball: fmi3InstantiateModelExchange(instanceName=\"ball\", instantiationToken=\"{cosim-test-bouncing-ball-3}\", resourcePath="
            ) && first.ends_with(", visible=0, loggingOn=1)"),
            "{first}"
        );
        assert_eq!(
            lines[1],
            "[OK] ball: fmi3GetNumberOfContinuousStates(nContinuousStates=2)"
        );
        assert_eq!(
            lines[2],
            "[OK] ball: fmi3GetNumberOfEventIndicators(nEventIndicators=1)"
        );
        has(
            "[OK] ball: fmi3EnterInitializationMode(toleranceDefined=0, tolerance=0, startTime=0, stopTimeDefined=1, stopTime=3)",
        );
        has(
            "[OK] ball: fmi3UpdateDiscreteStates(discreteStatesNeedUpdate=0, terminateSimulation=0, nominalsOfContinuousStatesChanged=0, valuesOfContinuousStatesChanged=0, nextEventTimeDefined=0, nextEventTime=0)",
        );
        has(
            "[OK] ball: fmi3UpdateDiscreteStates(discreteStatesNeedUpdate=0, terminateSimulation=0, nominalsOfContinuousStatesChanged=0, valuesOfContinuousStatesChanged=1, nextEventTimeDefined=0, nextEventTime=0)",
        );
        has("[OK] ball: fmi3EnterContinuousTimeMode()");
        has("[OK] ball: fmi3GetContinuousStates(continuousStates={1, 0}, nContinuousStates=2)");
        has("[OK] ball: fmi3GetNominalsOfContinuousStates(nominals={1, 10}, nContinuousStates=2)");
        has("[OK] ball: fmi3GetEventIndicators(eventIndicators={1}, nEventIndicators=1)");
        has(
            "[OK] ball: fmi3GetContinuousStateDerivatives(derivatives={0, -9.81}, nContinuousStates=2)",
        );
        has("[OK] ball: fmi3SetTime(time=0.001)");
        has(
            "[OK] ball: fmi3SetContinuousStates(continuousStates={1, -0.009810000000000001}, nContinuousStates=2)",
        );
        has(
            "[OK] ball: fmi3CompletedIntegratorStep(noSetFMUStatePriorToCurrentPoint=1, enterEventMode=0, terminateSimulation=0)",
        );
        has("[OK] ball: fmi3EnterEventMode()");
        has(
            "[OK] ball: fmi3GetDirectionalDerivative(unknowns={1} /* der(h) */, nUnknowns=1, knowns={2} /* v */, nKnowns=1, seed={1}, nSeed=1, sensitivity={1}, nSensitivity=1)",
        );
        has("[OK] ball: fmi3Terminate()");
        assert_eq!(lines.last(), Some(&"[OK] ball: fmi3FreeInstance()"));
    }
    // The state saved and restored in between.
    let prefix = format!("fmi{fmi}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("{prefix}GetFMU")) && l.contains("=0x")),
        "no state saved in the log"
    );
}

#[test]
fn the_whole_calling_sequence_fmi2() {
    the_whole_calling_sequence(2);
}

#[test]
fn the_whole_calling_sequence_fmi3() {
    the_whole_calling_sequence(3);
}

/// `err` is the binding's refusal of `function` in the state `state`,
/// naming the state it expects.
fn assert_out_of_sequence(err: FmiError, function: &str, state: &str, expected: &str) {
    let text = err.to_string();
    assert!(
        matches!(&err, FmiError::InvalidArgument { function: f, .. } if *f == function),
        "{text}"
    );
    assert!(
        text.contains(&format!("called in state {state}, expected {expected}")),
        "{text}"
    );
}

fn the_state_machine_is_enforced(fmi: u8) {
    let dir = tempfile::tempdir().unwrap();
    let fmu = ball_fmu(dir.path(), fmi, BallInterfaces::ModelExchange);
    let f = |name2: &'static str, name3: &'static str| if fmi == 2 { name2 } else { name3 };
    let mut ball = fmu
        .instantiate("ball", &options(Interface::ModelExchange, None))
        .unwrap();
    let mut dx = [0.0; 2];
    // Derivatives before Initialization Mode (FMI 2: not in it either).
    let readable = f(
        "Event Mode, Continuous-Time Mode or Terminated",
        "Initialization Mode, Event Mode, Continuous-Time Mode or Terminated",
    );
    assert_out_of_sequence(
        ball.get_derivatives(&mut dx).unwrap_err(),
        f("fmi2GetDerivatives", "fmi3GetContinuousStateDerivatives"),
        "Instantiated",
        readable,
    );
    assert_out_of_sequence(
        ball.enter_event_mode().unwrap_err(),
        f("fmi2EnterEventMode", "fmi3EnterEventMode"),
        "Instantiated",
        "Continuous-Time Mode",
    );
    ball.setup_experiment(None, 0.0, None).unwrap();
    ball.enter_initialization_mode().unwrap();
    if fmi == 2 {
        assert_out_of_sequence(
            ball.get_derivatives(&mut dx).unwrap_err(),
            "fmi2GetDerivatives",
            "Initialization Mode",
            readable,
        );
    } else {
        ball.get_derivatives(&mut dx).unwrap();
    }
    // The states can be read in Initialization Mode.
    let mut x = [0.0; 2];
    ball.get_continuous_states(&mut x).unwrap();
    assert_eq!(x, [1.0, 0.0]);
    ball.exit_initialization_mode().unwrap();
    // Event Mode: no states set, no step completed, no second Event Mode.
    assert_out_of_sequence(
        ball.set_continuous_states(&x).unwrap_err(),
        f("fmi2SetContinuousStates", "fmi3SetContinuousStates"),
        "Event Mode",
        "Continuous-Time Mode",
    );
    assert_out_of_sequence(
        ball.completed_integrator_step(true).unwrap_err(),
        f("fmi2CompletedIntegratorStep", "fmi3CompletedIntegratorStep"),
        "Event Mode",
        "Continuous-Time Mode",
    );
    ball.set_time(0.0).unwrap();
    event_iteration(&mut ball);
    ball.enter_continuous_time_mode().unwrap();
    // Continuous-Time Mode: no second entry, no discrete update.
    assert_out_of_sequence(
        ball.enter_continuous_time_mode().unwrap_err(),
        f("fmi2EnterContinuousTimeMode", "fmi3EnterContinuousTimeMode"),
        "Continuous-Time Mode",
        "Event Mode",
    );
    assert_out_of_sequence(
        ball.update_discrete_states().unwrap_err(),
        f("fmi2NewDiscreteStates", "fmi3UpdateDiscreteStates"),
        "Continuous-Time Mode",
        "Event Mode",
    );
    // A buffer of another length than the FMU's states is refused before
    // the FMU sees it.
    let err = ball.get_derivatives(&mut [0.0; 3]).unwrap_err().to_string();
    assert!(
        err.contains("a buffer of 3 values, the FMU has 2 continuous states"),
        "{err}"
    );
    let err = ball.get_event_indicators(&mut []).unwrap_err().to_string();
    assert!(
        err.contains("a buffer of 0 values, the FMU has 1 event indicators"),
        "{err}"
    );
    // None of these reached the FMU: it logged no complaint, and goes on.
    assert!(ball.take_recent_log().is_empty());
    ball.set_continuous_states(&x).unwrap();
    ball.get_derivatives(&mut dx).unwrap();
    ball.terminate().unwrap();
    assert_out_of_sequence(
        ball.set_time(1.0).unwrap_err(),
        f("fmi2SetTime", "fmi3SetTime"),
        "Terminated",
        "Event Mode or Continuous-Time Mode",
    );
    // Reset: back to Instantiated, and through initialization again.
    ball.reset().unwrap();
    assert_eq!(ball.phase(), Phase::Instantiated);
    ball.setup_experiment(None, 0.0, None).unwrap();
    ball.enter_initialization_mode().unwrap();
    ball.exit_initialization_mode().unwrap();
    assert_eq!(ball.phase(), Phase::EventMode);
}

#[test]
fn the_state_machine_is_enforced_fmi2() {
    the_state_machine_is_enforced(2);
}

#[test]
fn the_state_machine_is_enforced_fmi3() {
    the_state_machine_is_enforced(3);
}

/// A Co-Simulation-only FMU: its library lacks the Model Exchange
/// functions, and an instance for Co-Simulation refuses them.
#[test]
fn a_co_simulation_instance_refuses_model_exchange_calls() {
    for fmi in [2, 3] {
        let dir = tempfile::tempdir().unwrap();
        let fmu = ball_fmu(dir.path(), fmi, BallInterfaces::CoSimulation);
        let err = fmu
            .instantiate("ball", &options(Interface::ModelExchange, None))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("the FMU has no <ModelExchange> interface (it declares <CoSimulation>)"),
            "{err}"
        );
        let mut ball = fmu
            .instantiate("ball", &InstantiateOptions::default())
            .unwrap();
        assert_eq!(ball.interface(), Interface::CoSimulation);
        ball.setup_experiment(None, 0.0, None).unwrap();
        ball.enter_initialization_mode().unwrap();
        ball.exit_initialization_mode().unwrap();
        assert_eq!(ball.phase(), Phase::Stepping);
        let set_time = if fmi == 2 {
            "fmi2SetTime"
        } else {
            "fmi3SetTime"
        };
        match ball.set_time(0.1).unwrap_err() {
            FmiError::NotSupported {
                instance,
                function,
                reason,
            } => {
                assert_eq!((instance.as_str(), function), ("ball", set_time));
                assert!(
                    reason.contains("a Model Exchange function, and the instance was instantiated for Co-Simulation"),
                    "{reason}"
                );
            }
            other => panic!("{other}"),
        }
        assert!(ball.get_derivatives(&mut [0.0; 2]).is_err());
        assert!(ball.enter_event_mode().is_err());
        assert!(ball.update_discrete_states().is_err());
        // It steps: the ball bounces at about the same time.
        let mut t = 0.0;
        let mut bounced_at = None;
        let mut bounces = [0];
        while t < 0.5 {
            assert_eq!(ball.do_step(t, 1e-3, true).unwrap(), StepOutcome::Completed);
            t += 1e-3;
            ball.get_i32(&[BOUNCES], &mut bounces).unwrap();
            if bounces[0] == 1 && bounced_at.is_none() {
                bounced_at = Some(t);
            }
        }
        let bounced_at = bounced_at.expect("no bounce");
        assert!((bounced_at - first_bounce()).abs() < 3e-3, "{bounced_at}");
        ball.terminate().unwrap();
    }
}

/// A Model-Exchange-only FMU: its library has no `doStep`, and an instance
/// for Model Exchange refuses Co-Simulation calls.
#[test]
fn a_model_exchange_instance_refuses_do_step() {
    for fmi in [2, 3] {
        let dir = tempfile::tempdir().unwrap();
        let fmu = ball_fmu(dir.path(), fmi, BallInterfaces::ModelExchange);
        // Nothing asks for Co-Simulation: the library checked when the
        // FMU was opened is Model Exchange's.
        assert_eq!(fmu.default_interface().unwrap(), Interface::ModelExchange);
        let exported = fmu.exported_fmi_functions().unwrap().unwrap();
        let do_step = if fmi == 2 { "fmi2DoStep" } else { "fmi3DoStep" };
        assert!(!exported.iter().any(|f| f == do_step));
        let err = fmu
            .instantiate("ball", &InstantiateOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("the FMU has no <CoSimulation> interface (it declares <ModelExchange>): run it as Model Exchange"),
            "{err}"
        );
        let mut ball = initialized(&fmu, None);
        match ball.do_step(0.0, 0.1, true).unwrap_err() {
            FmiError::NotSupported {
                function, reason, ..
            } => {
                assert_eq!(function, do_step);
                assert!(
                    reason.contains("a Co-Simulation function, and the instance was instantiated for Model Exchange"),
                    "{reason}"
                );
            }
            other => panic!("{other}"),
        }
        let (mut u, mut y0, mut y1) = ([], [0.0], [0.0]);
        assert!(
            ball.held_step(cosim_fmi::HeldValues {
                in_vrs: &[],
                u: &mut u,
                out_vrs: &[H],
                y: [&mut y0, &mut y1],
                no_set_prior: true,
            })
            .is_none()
        );
        // Still usable as Model Exchange.
        event_iteration(&mut ball);
        ball.enter_continuous_time_mode().unwrap();
        ball.terminate().unwrap();
    }
}

/// A missing Model Exchange function is named: when the FMU is opened for
/// a Model-Exchange-only FMU (before its library is loaded), and when an
/// instance for Model Exchange is made of an FMU whose one library serves
/// both interfaces (Co-Simulation still works).
#[test]
fn a_missing_model_exchange_function_is_named() {
    for (fmi, function) in [
        (2, "fmi2GetDerivatives"),
        (3, "fmi3GetContinuousStateDerivatives"),
        (3, "fmi3GetNumberOfContinuousStates"),
        (3, "fmi3InstantiateModelExchange"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let only = bouncing_ball_fmu(dir.path(), fmi, BallInterfaces::ModelExchange, &[function]);
        match Fmu::open(&only).unwrap_err() {
            FmiError::MissingFunction {
                library,
                function: f,
            } => {
                assert_eq!(f, function);
                assert!(library.ends_with("BouncingBallME.so"), "{library:?}");
                assert!(library.starts_with(&only), "{library:?}");
            }
            other => panic!("{other}"),
        }
        let both = bouncing_ball_fmu(dir.path(), fmi, BallInterfaces::BothOneLibrary, &[function]);
        let fmu = Fmu::open(&both).unwrap();
        let mut cs = fmu
            .instantiate("cs", &InstantiateOptions::default())
            .unwrap();
        cs.setup_experiment(None, 0.0, None).unwrap();
        cs.enter_initialization_mode().unwrap();
        cs.exit_initialization_mode().unwrap();
        cs.do_step(0.0, 0.1, true).unwrap();
        let err = fmu
            .instantiate("me", &options(Interface::ModelExchange, None))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: missing mandatory FMI function '{function}'",
                both.join(format!(
                    "binaries/{}/BouncingBall.so",
                    if fmi == 2 { "linux64" } else { "x86_64-linux" }
                ))
                .display()
            )
        );
    }
}

/// An FMU with both interfaces, in two libraries or one: an instance of
/// each at the same time, each its own interface's.
#[test]
fn both_interfaces_of_one_fmu() {
    for fmi in [2, 3] {
        for interfaces in [BallInterfaces::Both, BallInterfaces::BothOneLibrary] {
            let dir = tempfile::tempdir().unwrap();
            let fmu = ball_fmu(dir.path(), fmi, interfaces);
            assert_eq!(fmu.default_interface().unwrap(), Interface::CoSimulation);
            let mut cs = fmu
                .instantiate("cs", &InstantiateOptions::default())
                .unwrap();
            let mut me = initialized(&fmu, None);
            cs.setup_experiment(None, 0.0, None).unwrap();
            cs.enter_initialization_mode().unwrap();
            cs.exit_initialization_mode().unwrap();
            event_iteration(&mut me);
            me.enter_continuous_time_mode().unwrap();
            let run = integrate(&mut me, 0.0, 1e-3, 0.2);
            let mut t = 0.0;
            while t < 0.2 - 5e-4 {
                cs.do_step(t, 1e-3, true).unwrap();
                t += 1e-3;
            }
            let mut x = [0.0; 2];
            cs.get_f64(&[H, V], &mut x).unwrap();
            // The same explicit Euler steps: the same state, to rounding.
            for (a, b) in x.iter().zip(run.x) {
                assert!((a - b).abs() < 1e-9, "{x:?} vs {:?}", run.x);
            }
            assert!(me.do_step(0.2, 1e-3, true).is_err());
            assert!(cs.set_time(0.2).is_err());
            me.terminate().unwrap();
            cs.terminate().unwrap();
        }
    }
}
