//! The integrator on the problems of docs/ode-solvers.md, against analytic or
//! tight-tolerance references. Error bands are the errors measured when the
//! test was written plus 5 %, so that a regression of that size fails; step
//! counts likewise.

// The helpers outside `#[test]` functions fail the test the same way.
#![allow(clippy::expect_used, clippy::panic)]

use cosim_ode::{Advance, Integrator, Method, OdeProblem, Settings, SolveError, StepAction};
use std::f64::consts::PI;

/// x'' = -w^2 x.
struct Oscillator {
    w: f64,
    max_t: f64,
}

impl OdeProblem for Oscillator {
    type Error = ();
    fn dimension(&self) -> usize {
        2
    }
    fn roots(&self) -> usize {
        0
    }
    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), ()> {
        self.max_t = self.max_t.max(t);
        dx[0] = x[1];
        dx[1] = -self.w * self.w * x[0];
        Ok(())
    }
    fn root_functions(&mut self, _: f64, _: &[f64], _: &mut [f64]) -> Result<(), ()> {
        Ok(())
    }
}

struct VanDerPol {
    mu: f64,
}

impl OdeProblem for VanDerPol {
    type Error = ();
    fn dimension(&self) -> usize {
        2
    }
    fn roots(&self) -> usize {
        0
    }
    fn rhs(&mut self, _: f64, x: &[f64], dx: &mut [f64]) -> Result<(), ()> {
        dx[0] = x[1];
        dx[1] = self.mu * (1.0 - x[0] * x[0]) * x[1] - x[0];
        Ok(())
    }
    fn root_functions(&mut self, _: f64, _: &[f64], _: &mut [f64]) -> Result<(), ()> {
        Ok(())
    }
}

struct Robertson;

impl OdeProblem for Robertson {
    type Error = ();
    fn dimension(&self) -> usize {
        3
    }
    fn roots(&self) -> usize {
        0
    }
    fn rhs(&mut self, _: f64, y: &[f64], dy: &mut [f64]) -> Result<(), ()> {
        dy[0] = -0.04 * y[0] + 1e4 * y[1] * y[2];
        dy[2] = 3e7 * y[1] * y[1];
        dy[1] = -dy[0] - dy[2];
        Ok(())
    }
    fn root_functions(&mut self, _: f64, _: &[f64], _: &mut [f64]) -> Result<(), ()> {
        Ok(())
    }
    fn jacobian(&mut self, _: f64, y: &[f64], j: &mut [f64]) -> Option<Result<(), ()>> {
        // column-major
        j.copy_from_slice(&[
            -0.04,
            0.04,
            0.0,
            1e4 * y[2],
            -1e4 * y[2] - 6e7 * y[1],
            6e7 * y[1],
            1e4 * y[1],
            -1e4 * y[1],
            0.0,
        ]);
        Some(Ok(()))
    }
}

/// A ball falling from 1 m: h' = v, v' = -g; the indicator is its height.
struct Ball;

const G: f64 = 9.81;
const E: f64 = 0.7;

impl OdeProblem for Ball {
    type Error = ();
    fn dimension(&self) -> usize {
        2
    }
    fn roots(&self) -> usize {
        1
    }
    fn rhs(&mut self, _: f64, x: &[f64], dx: &mut [f64]) -> Result<(), ()> {
        dx[0] = x[1];
        dx[1] = -G;
        Ok(())
    }
    fn root_functions(&mut self, _: f64, x: &[f64], g: &mut [f64]) -> Result<(), ()> {
        g[0] = x[0];
        Ok(())
    }
}

fn settings(method: Method, rtol: f64, atol: f64) -> Settings {
    Settings {
        method,
        relative_tolerance: rtol,
        absolute_tolerance: atol,
        ..Settings::default()
    }
}

fn run_to<P: OdeProblem<Error = ()>>(s: Settings, p: P, x0: &[f64], t_end: f64) -> Integrator<P> {
    let mut i = Integrator::new(s, p).expect("settings");
    i.reset(0.0, x0).expect("reset");
    assert_eq!(i.advance(t_end), Ok(Advance::Reached));
    assert_eq!(i.time(), t_end);
    i
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

#[test]
fn oscillator_matches_the_analytic_solution() {
    for (method, band, steps_band) in [(Method::Bdf, 5.3e-5, 850), (Method::Rk45, 1.65e-5, 333)] {
        let w = 2.0 * PI;
        let i = run_to(
            settings(method, 1e-6, 1e-9),
            Oscillator { w, max_t: 0.0 },
            &[1.0, 0.0],
            10.0,
        );
        let exact = [(w * 10.0).cos(), -w * (w * 10.0).sin()];
        let err = max_abs_diff(i.state(), &exact);
        let st = i.statistics();
        println!("{method:?}: error {err:e}, {st:?}");
        assert!(err < band, "{method:?}: error {err}");
        assert!(st.steps < steps_band, "{method:?}: {} steps", st.steps);
        assert_eq!(st.resets, 1);
        // never evaluated past the end time
        assert!(i.problem().max_t <= 10.0);
    }
}

#[test]
fn van_der_pol_non_stiff_matches_a_tight_reference() {
    let reference = run_to(
        settings(Method::Rk45, 1e-12, 1e-14),
        VanDerPol { mu: 1.0 },
        &[2.0, 0.0],
        20.0,
    );
    for (method, band) in [(Method::Bdf, 2.8e-5), (Method::Rk45, 3.5e-6)] {
        let i = run_to(
            settings(method, 1e-6, 1e-8),
            VanDerPol { mu: 1.0 },
            &[2.0, 0.0],
            20.0,
        );
        let err = max_abs_diff(i.state(), reference.state());
        println!("{method:?}: error {err:e}, {:?}", i.statistics());
        assert!(err < band, "{method:?}: error {err}");
    }
}

#[test]
fn van_der_pol_stiff_with_bdf_at_a_sane_number_of_steps() {
    let reference = run_to(
        settings(Method::Bdf, 1e-10, 1e-12),
        VanDerPol { mu: 1000.0 },
        &[2.0, 0.0],
        3000.0,
    );
    let i = run_to(
        settings(Method::Bdf, 1e-6, 1e-8),
        VanDerPol { mu: 1000.0 },
        &[2.0, 0.0],
        3000.0,
    );
    let err = (i.state()[0] - reference.state()[0]).abs();
    let st = i.statistics();
    println!("error {err:e}, {st:?}");
    assert!(err < 3.5e-5, "error {err}");
    assert!(st.steps < 1725, "{} steps", st.steps);
    assert!(st.jacobian_evaluations > 0);
}

#[test]
fn robertson_to_four_times_ten_to_the_ten() {
    let reference = run_to(
        settings(Method::Bdf, 1e-10, 1e-16),
        Robertson,
        &[1.0, 0.0, 0.0],
        4e10,
    );
    let i = run_to(
        settings(Method::Bdf, 1e-4, 1e-8),
        Robertson,
        &[1.0, 0.0, 0.0],
        4e10,
    );
    let st = i.statistics();
    let rel = (i.state()[0] - reference.state()[0]).abs() / reference.state()[0];
    println!(
        "{:?} vs {:?}: y1 relative error {rel:e}, {st:?}",
        i.state(),
        reference.state()
    );
    // y1 ~ 5e-8 is below the absolute tolerance 1e-8 / rtol: a few % is
    // what that tolerance gives (CVODE's cvRoberts_dns prints 6.93e-8 there)
    assert!(rel < 0.083, "relative error {rel}");
    assert!(st.steps < 355, "{} steps", st.steps);
    let sum: f64 = i.state().iter().sum();
    assert!((sum - 1.0).abs() < 1e-6, "mass {sum}");
}

/// Contact times: t1 = sqrt(2 h0 / g), then each flight 2 e^k v1 / g.
fn contacts(n: usize) -> Vec<f64> {
    let t1 = (2.0 / G).sqrt();
    let v1 = G * t1;
    let mut t = vec![t1];
    for k in 1..n {
        t.push(t[k - 1] + 2.0 * E.powi(k as i32) * v1 / G);
    }
    t
}

fn bounce(method: Method, rtol: f64) -> (Vec<f64>, Integrator<Ball>) {
    let mut i = Integrator::new(settings(method, rtol, rtol * 1e-2), Ball).expect("settings");
    i.reset(0.0, &[1.0, 0.0]).expect("reset");
    let mut found = Vec::new();
    while found.len() < 10 {
        match i.advance(10.0).expect("advance") {
            Advance::Root { t, which } => {
                assert_eq!(which, vec![-1]);
                // located: the height there is zero to 1e-10 s of fall
                assert!(
                    i.state()[0].abs() < 1e-10 * i.state()[1].abs(),
                    "{:?}",
                    i.state()
                );
                found.push(t);
                let v = i.state()[1];
                i.reset(t, &[0.0, -E * v]).expect("reset");
            }
            other => panic!("{other:?}"),
        }
    }
    (found, i)
}

#[test]
fn bouncing_ball_contact_times() {
    let exact = contacts(10);
    // Tsit45 integrates the parabola exactly: what remains is root location.
    let (found, i) = bounce(Method::Rk45, 1e-8);
    let err = max_abs_diff(&found, &exact);
    println!("Rk45: contact error {err:e}, {:?}", i.statistics());
    assert!(err < 1e-10, "contact error {err}");
    // BDF restarts at order 1 after each bounce: its integration error shows
    let (found, i) = bounce(Method::Bdf, 1e-8);
    let err = max_abs_diff(&found, &exact);
    let st = i.statistics();
    println!("Bdf: contact error {err:e}, {st:?}");
    assert!(err < 2.2e-8, "contact error {err}");
    assert_eq!(st.roots_found, 10);
    assert_eq!(st.resets, 11);
    assert!(st.root_finding_iterations > 0);
    assert!(st.root_function_evaluations > st.root_finding_iterations);
    assert!(st.rhs_evaluations > 0 && st.jacobian_evaluations > 0 && st.steps > 0);
}

#[test]
fn short_advances_equal_one_long_advance_without_resets() {
    for (method, band, steps_band) in [(Method::Bdf, 1.02e-5, 8982), (Method::Rk45, 1.5e-6, 1062)] {
        let s = settings(method, 1e-6, 1e-9);
        let long = run_to(s.clone(), VanDerPol { mu: 1.0 }, &[2.0, 0.0], 10.0);
        let mut i = Integrator::new(s, VanDerPol { mu: 1.0 }).expect("settings");
        i.reset(0.0, &[2.0, 0.0]).expect("reset");
        for k in 1..=1000 {
            assert_eq!(i.advance(k as f64 * 0.01), Ok(Advance::Reached));
        }
        let st = i.statistics();
        let diff = max_abs_diff(i.state(), long.state());
        println!(
            "{method:?}: difference {diff:e}, {st:?} vs {:?}",
            long.statistics()
        );
        assert_eq!(st.resets, 1);
        assert!(
            st.steps >= 1000 && st.steps < steps_band,
            "{method:?}: {} steps",
            st.steps
        );
        assert!(diff < band, "{method:?}: difference {diff}");
    }
}

#[test]
fn snapshot_restore_repeats_the_trajectory_bit_for_bit() {
    for method in [Method::Bdf, Method::Rk45] {
        let mut i = Integrator::new(settings(method, 1e-6, 1e-8), VanDerPol { mu: 10.0 })
            .expect("settings");
        i.reset(0.0, &[2.0, 0.0]).expect("reset");
        i.advance(3.0).expect("advance");
        let snap = i.snapshot();
        let run = |i: &mut Integrator<VanDerPol>| {
            (1..=50)
                .map(|k| {
                    i.advance(3.0 + 0.1 * k as f64).expect("advance");
                    i.state().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        };
        let first = run(&mut i);
        let before = i.statistics();
        i.restore(&snap).expect("restore");
        assert_eq!(i.time(), 3.0);
        let second = run(&mut i);
        assert_eq!(first, second, "{method:?}");
        let after = i.statistics();
        // the work after the restore adds to the work before it
        assert!(after.steps > before.steps);
        assert!(after.rhs_evaluations > before.rhs_evaluations);
        // a second restore from the same snapshot works too
        i.restore(&snap).expect("restore");
        assert_eq!(run(&mut i), first);
    }
}

/// Counts accepted steps; asks to stop at the `stop_at`th.
struct Stopper {
    inner: Oscillator,
    steps: Vec<f64>,
    stop_at: usize,
}

impl OdeProblem for Stopper {
    type Error = ();
    fn dimension(&self) -> usize {
        2
    }
    fn roots(&self) -> usize {
        0
    }
    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), ()> {
        self.inner.rhs(t, x, dx)
    }
    fn root_functions(&mut self, _: f64, _: &[f64], _: &mut [f64]) -> Result<(), ()> {
        Ok(())
    }
    fn step_completed(&mut self, t: f64, _: &[f64]) -> Result<StepAction, ()> {
        self.steps.push(t);
        Ok(if self.steps.len() == self.stop_at {
            StepAction::Stop
        } else {
            StepAction::Continue
        })
    }
}

#[test]
fn step_completed_is_called_for_every_step_and_its_stop_honoured() {
    let p = Stopper {
        inner: Oscillator { w: 1.0, max_t: 0.0 },
        steps: Vec::new(),
        stop_at: 5,
    };
    let mut s = settings(Method::Bdf, 1e-6, 1e-9);
    s.max_step = Some(0.05);
    let mut i = Integrator::new(s, p).expect("settings");
    i.reset(0.0, &[1.0, 0.0]).expect("reset");
    let Ok(Advance::Stopped { t }) = i.advance(10.0) else {
        panic!("not stopped")
    };
    assert_eq!(t, i.time());
    assert_eq!(i.problem().steps.last(), Some(&t));
    assert_eq!(i.problem().steps.len(), 5);
    // and carries on from there, one call per accepted step, none longer
    // than the maximum step
    assert_eq!(i.advance(10.0), Ok(Advance::Reached));
    let steps = i.problem().steps.clone();
    assert_eq!(steps.len() as u64, i.statistics().steps);
    let mut last = 0.0;
    for t in steps {
        assert!(t - last <= 0.05 * (1.0 + 1e-12), "step {} at {t}", t - last);
        last = t;
    }
    assert_eq!(last, 10.0);
}

/// Fails once past `t_fail`.
struct Failing {
    t_fail: f64,
}

impl OdeProblem for Failing {
    type Error = String;
    fn dimension(&self) -> usize {
        1
    }
    fn roots(&self) -> usize {
        0
    }
    fn rhs(&mut self, t: f64, _: &[f64], dx: &mut [f64]) -> Result<(), String> {
        if t > self.t_fail {
            return Err(format!("discard at {t}"));
        }
        dx[0] = 1.0;
        Ok(())
    }
    fn root_functions(&mut self, _: f64, _: &[f64], _: &mut [f64]) -> Result<(), String> {
        Ok(())
    }
}

#[test]
fn a_model_error_is_surfaced_and_stops_the_integrator() {
    for method in [Method::Bdf, Method::Rk45] {
        let mut i = Integrator::new(settings(method, 1e-6, 1e-9), Failing { t_fail: 0.5 })
            .expect("settings");
        i.reset(0.0, &[0.0]).expect("reset");
        match i.advance(1.0) {
            Err(SolveError::Model { error, .. }) => assert!(error.starts_with("discard")),
            other => panic!("{method:?}: {other:?}"),
        }
        assert_eq!(i.advance(1.0), Err(SolveError::Failed));
        i.problem_mut().t_fail = 2.0;
        i.reset(0.0, &[0.0]).expect("reset");
        assert_eq!(i.advance(1.0), Ok(Advance::Reached));
        assert!((i.state()[0] - 1.0).abs() < 1e-9);
    }
}

#[test]
fn interpolation_inside_the_last_step() {
    let mut i = Integrator::new(
        settings(Method::Rk45, 1e-8, 1e-10),
        Oscillator { w: 1.0, max_t: 0.0 },
    )
    .expect("settings");
    i.reset(0.0, &[1.0, 0.0]).expect("reset");
    i.advance(1.0).expect("advance");
    let mut x = [0.0; 2];
    i.interpolate(0.999, &mut x).expect("inside");
    assert!((x[0] - 0.999_f64.cos()).abs() < 1e-7);
    assert!(i.interpolate(1.5, &mut x).is_err());
}

#[test]
fn settings_that_cannot_be_honoured_are_refused() {
    let mut s = settings(Method::Bdf, 1e-6, 1e-9);
    s.max_order = Some(2);
    assert!(Integrator::new(s, VanDerPol { mu: 1.0 }).is_err());
    assert!(Integrator::new(settings(Method::Bdf, 0.0, 1e-9), VanDerPol { mu: 1.0 }).is_err());
    let i = Integrator::new(settings(Method::Bdf, 1e-6, 1e-9), VanDerPol { mu: 1.0 });
    let mut i = i.expect("settings");
    assert_eq!(i.advance(1.0), Err(SolveError::NotStarted));
}

#[test]
fn the_integrator_is_send() {
    fn send<T: Send>() {}
    send::<Integrator<VanDerPol>>();
}
