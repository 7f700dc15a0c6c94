//! The integrator driving a Model Exchange FMU as co-simulation
//! (`Fmu::as_model_exchange`): a hand-written bouncing ball
//! (`tests/data/me_fmu`) stepped in communication steps that do not land on
//! its bounces, against the analytic trajectory; rollback; statistics.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cosim_fmi::{Fmu, Instance, InstantiateOptions, SolverMethod, SolverSettings, StepOutcome};
use cosim_tests::{BallInterfaces, bouncing_ball_fmu};

const H: u32 = 0;
const V: u32 = 2;
const BOUNCES: u32 = 6;
const G: f64 = 9.81;
const E: f64 = 0.7;

/// The ball dropped from 1 m at rest: height and velocity at `t`, and the
/// bounces before `t` (analytic: free fall between bounces, v -> -e v).
fn analytic(t: f64) -> (f64, f64, i32) {
    let mut t0 = 0.0;
    let (mut h0, mut v0) = (1.0, 0.0);
    let mut bounces = 0;
    loop {
        // Time to reach the floor from (h0, v0): h0 + v0 s - g s^2 / 2 = 0.
        let s = (v0 + (v0 * v0 + 2.0 * G * h0).sqrt()) / G;
        if t0 + s > t {
            let dt = t - t0;
            return (h0 + v0 * dt - G * dt * dt / 2.0, v0 - G * dt, bounces);
        }
        t0 += s;
        v0 = -E * (v0 - G * s);
        h0 = 0.0;
        bounces += 1;
    }
}

fn settings(method: SolverMethod, rtol: f64) -> SolverSettings {
    SolverSettings {
        method,
        relative_tolerance: rtol,
        absolute_tolerance: rtol,
        max_step: None,
        max_order: None,
        initial_step: None,
    }
}

fn ball(dir: &std::path::Path, fmi: u8, s: SolverSettings) -> Instance {
    let fmu = Fmu::open(bouncing_ball_fmu(
        dir,
        fmi,
        BallInterfaces::ModelExchange,
        &[],
    ))
    .unwrap()
    .as_model_exchange(s)
    .unwrap();
    let cs = fmu.co_simulation().unwrap();
    assert!(cs.can_handle_variable_communication_step_size && cs.can_get_and_set_fmu_state);
    let mut ball = fmu
        .instantiate("ball", &InstantiateOptions::default())
        .unwrap();
    ball.setup_experiment(None, 0.0, Some(3.0)).unwrap();
    ball.enter_initialization_mode().unwrap();
    ball.exit_initialization_mode().unwrap();
    ball
}

fn read(ball: &mut Instance) -> (f64, f64, i32) {
    let mut x = [0.0; 2];
    ball.get_f64(&[H, V], &mut x).unwrap();
    let mut b = [0];
    ball.get_i32(&[BOUNCES], &mut b).unwrap();
    (x[0], x[1], b[0])
}

#[test]
fn the_ball_integrated_between_communication_points_follows_the_analytic_trajectory() {
    for fmi in [2, 3] {
        for method in [SolverMethod::Bdf, SolverMethod::Rk45] {
            let dir = tempfile::tempdir().unwrap();
            let mut ball = ball(dir.path(), fmi, settings(method, 1e-8));
            let h = 0.01;
            let mut worst = 0.0f64;
            for k in 0..200 {
                let t = f64::from(k) * h;
                assert_eq!(ball.do_step(t, h, true).unwrap(), StepOutcome::Completed);
                let (hh, v, bounces) = read(&mut ball);
                let (ha, va, ba) = analytic(t + h);
                assert_eq!(bounces, ba, "FMI {fmi} {method:?} at t = {}", t + h);
                worst = worst.max((hh - ha).abs()).max((v - va).abs() / 10.0);
            }
            assert!(worst < 1e-6, "FMI {fmi} {method:?}: worst error {worst}");
            let stats = ball.model_exchange_statistics().unwrap();
            let bounces = u64::try_from(analytic(2.0).2).unwrap();
            assert_eq!(bounces, 4);
            assert_eq!(stats.events.state_events, bounces, "{stats:?}");
            // No restart at the 200 communication points: the start and
            // the bounces only.
            assert_eq!(stats.events.restarts, 1 + bounces, "{stats:?}");
        }
    }
}

/// A restored state repeats the run: the driver's snapshot holds the
/// solver's history and the FMU's own state (the ball can save it), also
/// across a bounce.
#[test]
fn a_restored_state_repeats_the_steps_bit_for_bit() {
    for fmi in [2, 3] {
        let dir = tempfile::tempdir().unwrap();
        let mut ball = ball(dir.path(), fmi, settings(SolverMethod::Bdf, 1e-6));
        let h = 0.05;
        for k in 0..6 {
            ball.do_step(f64::from(k) * h, h, true).unwrap();
        }
        let t0 = 6.0 * h;
        let saved = ball.get_state(None).unwrap();
        let run = |ball: &mut Instance| {
            (0..6)
                .map(|k| {
                    ball.do_step(t0 + f64::from(k) * h, h, true).unwrap();
                    read(ball)
                })
                .collect::<Vec<_>>()
        };
        let first = run(&mut ball);
        // The bounce at 0.4515 s is inside.
        assert_eq!(first.last().unwrap().2, 1);
        ball.set_state(saved).unwrap();
        assert_eq!(read(&mut ball).2, 0);
        let again = run(&mut ball);
        assert_eq!(first, again, "FMI {fmi}");
        ball.free_state(saved).unwrap();
    }
}
