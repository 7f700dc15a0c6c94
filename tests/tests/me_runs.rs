//! Model Exchange FMUs run by `cosim`: each master drives the B1 quarter
//! car's halves through their Model Exchange interface (integrated by
//! cosim's solver) as it drives their Co-Simulation one, in process and in
//! host processes, nested; the results against the monolithic reference
//! and against the Co-Simulation runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use cosim_core::metrics::Table;
use cosim_tests::{cosim, max_abs_error, reference, run, with_master};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The masters, each as its `[master]` body.
const MASTERS: &[(&str, &str)] = &[
    (
        "fixed-step",
        "kind = \"fixed-step\"\nstep = 1e-3\nenergy_scale = 750.0",
    ),
    (
        "fixed-step, extrapolation 2",
        "kind = \"fixed-step\"\nstep = 1e-3\nextrapolation = 2\nenergy_scale = 750.0",
    ),
    (
        "gauss-seidel",
        "kind = \"fixed-step\"\nstep = 1e-3\nscheme = \"gauss-seidel\"\nenergy_scale = 750.0",
    ),
    (
        "ecco",
        "kind = \"ecco\"\ntolerance = 1e-4\nenergy_scale = 750.0",
    ),
    (
        "predictor-corrector",
        "kind = \"predictor-corrector\"\ntolerance = 1e-4\nenergy_scale = 750.0",
    ),
    ("nepce", "kind = \"nepce\"\nenergy_scale = 750.0"),
    (
        "richardson",
        "kind = \"richardson\"\nstep = 1e-4\natol = 1e-3\nrtol = 1e-3\nenergy_scale = 750.0\n[master.controller]\ndt_min = 1e-6",
    ),
    (
        "ifosmondi",
        "kind = \"ifosmondi\"\nstep = 1e-3\neps_abs = 1e-6\neps_rel = 1e-6\nenergy_scale = 750.0",
    ),
];

/// `b1_quarter_car_a.toml` with `master`, each half through `interface`
/// (and `extra` keys on each subsystem).
fn b1(dir: &Path, master: &str, interface: &str, extra: &str) -> PathBuf {
    let path = with_master("b1_quarter_car_a.toml", master, dir);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
        if line.starts_with("fmu = ") && line.contains("QuarterCar") {
            out.push_str(&format!("interface = \"{interface}\"\n{extra}"));
        }
    }
    std::fs::write(&path, out).unwrap();
    path
}

/// The largest error of `chassis.v_c` and `wheel.F_c` against the
/// monolithic reference of B1 (linear, reticulation A).
fn errors(r: &cosim_tests::Run) -> (f64, f64) {
    assert!(r.error.is_none(), "{:?}", r.error);
    let (trace, reference) = (r.trace(), reference("b1_linear"));
    (
        max_abs_error(&trace, "chassis.v_c", &reference, "v_c"),
        max_abs_error(&trace, "wheel.F_c", &reference, "F_c"),
    )
}

/// The step ends of B1 (linear, A) under the master `name` of [`MASTERS`]
/// written from the papers and the model equations
/// (`cosim_tests::b1_adaptive`, `cosim_tests::b1_richardson`), where one
/// is written.
fn independent_steps(name: &str) -> Option<Vec<f64>> {
    use cosim_tests::b1_adaptive::{Indicator, run};
    use cosim_tests::b1_jacobi::Damper;
    let adaptive = |indicator| {
        run(Damper::LINEAR, false, [10, 10], indicator, 4.0)
            .iter()
            .map(|s| s.t)
            .collect()
    };
    match name {
        "ecco" => Some(adaptive(Indicator::Ecco {
            tolerance: 1e-4,
            energy_scale: 750.0,
        })),
        "predictor-corrector" => Some(adaptive(Indicator::PredictorCorrector {
            tolerance: 1e-4,
            lag_correction: true,
        })),
        "richardson" => Some(
            cosim_tests::b1_richardson::run(
                [10, 10],
                cosim_tests::b1_richardson::Settings {
                    atol: 1e-3,
                    rtol: 1e-3,
                    initial_step: 1e-4,
                    dt: (1e-6, 1e-2),
                },
                4.0,
            )
            .iter()
            .map(|s| s.t)
            .collect(),
        ),
        _ => None,
    }
}

/// The largest error of the chassis velocity against the monolithic
/// reference of B1 (linear, A) co-simulated by Jacobi with zero-order hold
/// at step `h` to `t_end`, both halves integrated exactly
/// (`cosim_tests::b1_jacobi::step_exact_a`).
fn exact_subsystems_v_c_error(h: f64, t_end: f64) -> f64 {
    let reference = reference("b1_linear");
    let v_c = reference.names.iter().position(|n| n == "v_c").unwrap();
    let mut x = cosim_tests::b1_jacobi::start(false);
    let mut worst = 0.0f64;
    for k in 1..=(t_end / h).round() as usize {
        x = cosim_tests::b1_jacobi::step_exact_a(h, x);
        let t = k as f64 * h;
        worst = worst.max((x[0] - reference.interpolate(v_c, t)).abs());
    }
    worst
}

/// Every master drives the halves' Model Exchange interface: each run
/// ends, and its distance from the monolithic reference is the coupling
/// error of that master, of the size the same master reaches with the
/// Co-Simulation interface. For the chassis velocity (its Co-Simulation
/// form integrates its force polynomial exactly, so only the coupling
/// differs) within 40 % of it; the suspension force of the Model
/// Exchange wheel is never further from the reference than that of the
/// Co-Simulation wheel (forward Euler, 10 micro steps). Measured: ME / CS
/// v_c 6.3e-3 / 5.6e-3 (fixed step), 1.8e-2 / 1.6e-2 (ECCO), 7.1e-4 /
/// 5.5e-4 (predictor/corrector, NEPCE), 3.3e-3 / 2.5e-3 (Richardson); F_c
/// 18 / 40 N (fixed step), 1.9 / 4.0 N (predictor/corrector).
/// The fixed-step row is also computed from the model equations: with the
/// solver at rtol 1e-10 its v_c error is that of Jacobi with exactly
/// integrated halves (`cosim_tests::b1_jacobi::step_exact_a`) to 1e-3.
/// The Co-Simulation runs of ECCO, the predictor/corrector and Richardson
/// take the steps of those masters written from the papers.
#[test]
fn every_master_drives_model_exchange_halves_as_it_drives_co_simulation_ones() {
    let mut table = String::from(
        "| master | v_c error, ME | v_c error, CS | F_c error, ME [N] | F_c error, CS [N] | ME solver steps (chassis, wheel) |\n|---|---|---|---|---|---|\n",
    );
    for (name, master) in MASTERS {
        let dir = tempfile::tempdir().unwrap();
        let me = run(
            &b1(dir.path(), master, "model-exchange", ""),
            &[],
            None,
            None,
        );
        let cs_dir = tempfile::tempdir().unwrap();
        let cs = run(
            &b1(cs_dir.path(), master, "co-simulation", ""),
            &[],
            None,
            None,
        );
        let ((me_v, me_f), (cs_v, cs_f)) = (errors(&me), errors(&cs));
        // The Co-Simulation column of the adaptive masters is the run
        // written from the papers and the model equations: the same steps.
        if let Some(expected) = independent_steps(name) {
            let steps = cs.steps();
            assert!(
                steps.time() == expected.as_slice(),
                "{name}: the Co-Simulation run's {} step ends are not the {} of the master written from the paper",
                steps.time().len(),
                expected.len()
            );
        }
        if *name == "fixed-step" {
            // Integrated to a tight tolerance, the halves leave only the
            // coupling error: that of Jacobi with exactly integrated
            // subsystems, computed from the model equations. (At the
            // default tolerance, 1e-5, the solver adds 4 % to it.)
            let tight_dir = tempfile::tempdir().unwrap();
            let tight = run(
                &b1(
                    tight_dir.path(),
                    master,
                    "model-exchange",
                    "solver = { relative_tolerance = 1e-10 }",
                ),
                &[],
                None,
                None,
            );
            let tight_v = errors(&tight).0;
            let exact = exact_subsystems_v_c_error(1e-3, 4.0);
            assert!(
                (tight_v / exact - 1.0).abs() < 1e-3 && (me_v / exact - 1.0).abs() < 0.05,
                "{name}: v_c error ME {me_v:e}, at rtol 1e-10 {tight_v:e}, with exact subsystems {exact:e}"
            );
        }
        assert!(
            me_v < 1.4 * cs_v,
            "{name}: v_c error ME {me_v:e}, CS {cs_v:e}"
        );
        assert!(
            me_f < 1.15 * cs_f,
            "{name}: F_c error ME {me_f:e}, CS {cs_f:e}"
        );
        // The halves were integrated by cosim's solver, never restarted at
        // a communication point (the wheel's step road is at t = 0).
        let mut steps = Vec::new();
        for sub in &me.summary.subsystems {
            let solver = sub
                .calls
                .solver
                .unwrap_or_else(|| panic!("{name}: {} has no solver figures", sub.name));
            assert!(solver.steps > 0, "{name}: {solver:?}");
            assert_eq!(
                solver.events.restarts, 1,
                "{name}: {}: {solver:?}",
                sub.name
            );
            steps.push(solver.steps.to_string());
        }
        table.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {} |\n",
            significant(me_v),
            significant(cs_v),
            significant(me_f),
            significant(cs_f),
            steps.join(", ")
        ));
    }
    cosim_tests::check_doc_block("model-exchange.md", "me-masters", &table);
}

/// Two significant digits.
fn significant(x: f64) -> String {
    cosim_core::text::significant(x, 2)
}

/// With the iterative master (IFOSMONDI: each step's coupling iterated to
/// 1e-6, Hermite inputs from the halves' output derivatives) and the
/// halves integrated at 1e-8, the co-simulation is the monolithic system:
/// within 1e-6 m/s and 5e-3 N of its reference (measured 2.9e-7, 1.3e-3),
/// where the Co-Simulation wheel's Euler micro steps keep it 36 N away.
#[test]
fn iterated_model_exchange_halves_reach_the_monolithic_reference() {
    let dir = tempfile::tempdir().unwrap();
    let solver = "[subsystems.solver]\nrelative_tolerance = 1e-8\n";
    let master = MASTERS.iter().find(|m| m.0 == "ifosmondi").unwrap().1;
    let (v, f) = errors(&run(
        &b1(dir.path(), master, "model-exchange", solver),
        &[],
        None,
        None,
    ));
    assert!(v < 1e-6 && f < 5e-3, "v_c {v:e}, F_c {f:e}");
}

/// The fixed-step master's coupling error is first order in the step
/// (zero-order hold), with the halves' integration error far below it:
/// halving the step halves the error.
#[test]
fn the_fixed_step_coupling_error_of_model_exchange_halves_is_first_order() {
    let errors_at = |step: f64| {
        let dir = tempfile::tempdir().unwrap();
        let master = format!("kind = \"fixed-step\"\nstep = {step}");
        errors(&run(
            &b1(dir.path(), &master, "model-exchange", ""),
            &[],
            None,
            None,
        ))
        .0
    };
    let (e1, e2, e3) = (errors_at(2e-3), errors_at(1e-3), errors_at(5e-4));
    for (coarse, fine) in [(e1, e2), (e2, e3)] {
        let ratio = coarse / fine;
        assert!((1.8..2.2).contains(&ratio), "{e1:e} {e2:e} {e3:e}");
    }
}

/// In host processes (`isolation = "process"`) and nested one level down,
/// the Model Exchange halves give the in-process values bit for bit.
#[test]
fn model_exchange_halves_in_host_processes_and_nested_give_the_same_values() {
    let master = MASTERS[0].1;
    let dir = tempfile::tempdir().unwrap();
    let flat = run(
        &b1(dir.path(), master, "model-exchange", ""),
        &[],
        None,
        None,
    );
    // (Through the command line: the hosts are `cosim host` processes.)
    let hosted_dir = tempfile::tempdir().unwrap();
    let hosted = b1(
        hosted_dir.path(),
        master,
        "model-exchange",
        "isolation = \"process\"\n",
    );
    let out = hosted_dir.path().join("out");
    let output = cosim(&["run", "--no-progress", s(&hosted), "--out", s(&out)]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (a, b) = (flat.trace(), Table::read(&out.join("trace.csv")).unwrap());
    // The hosts' solvers did the same work, reported in the summary.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for (k, sub) in flat.summary.subsystems.iter().enumerate() {
        let hosted = &summary["subsystems"][k]["calls"]["solver"];
        assert_eq!(
            *hosted,
            serde_json::to_value(sub.calls.solver.unwrap()).unwrap(),
            "{}",
            sub.name
        );
    }
    assert_eq!(a.names, b.names);
    for name in &a.names {
        assert_eq!(a.column(name), b.column(name), "{name}");
    }
    // Nested: the two halves as a system of their own, exposing nothing,
    // stepped at the same step by the same master.
    let nest_dir = tempfile::tempdir().unwrap();
    let inner = b1(nest_dir.path(), master, "model-exchange", "");
    let outer = nest_dir.path().join("outer.toml");
    std::fs::write(
        &outer,
        format!(
            "[simulation]\nstop = 4.0\n[master]\nkind = \"fixed-step\"\nstep = 1e-3\n[[subsystems]]\nname = \"car\"\nsystem = \"{}\"\n[outputs]\nvariables = [\"car.chassis.v_c\", \"car.wheel.F_c\"]\n",
            inner.display()
        ),
    )
    .unwrap();
    let nested = run(&outer, &[], None, None);
    assert!(nested.error.is_none(), "{:?}", nested.error);
    let n = nested.trace();
    for (inner_name, outer_name) in [
        ("chassis.v_c", "car.chassis.v_c"),
        ("wheel.F_c", "car.wheel.F_c"),
    ] {
        assert_eq!(a.column(inner_name), n.column(outer_name), "{outer_name}");
    }
}

/// `cosim run <fmu> <args>` into a temporary directory: its trace.
fn run_fmu(fmu: &Path, args: &[&str]) -> Table {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut all = vec!["run", "--no-progress", s(fmu), "--out", s(&out)];
    all.extend(args);
    let output = cosim(&all);
    assert!(
        output.status.success(),
        "{}: {}",
        fmu.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    Table::read(&out.join("trace.csv")).unwrap()
}

/// A kit FMU that has Model Exchange only.
fn me_only(fmi: u8, model: &str) -> PathBuf {
    cosim_tests::fmus()
        .join("me")
        .join(format!("fmi{fmi}"))
        .join(format!("{model}.fmu"))
}

/// The kit's Model Exchange only FMUs run on their own (`cosim run
/// Model.fmu`, nothing saying which interface), FMI 2.0 and 3.0, against
/// their analytic or published references: the ball's height at every
/// output point within 5e-6 m of the analytic one (an error dt in a
/// contact time shows as v dt, v <= 4.5 m/s: the contact times to about
/// 1e-6 s) and its contacts counted at the right rows; Robertson's stiff
/// kinetics at t = 40 within 2e-6 (relative) of Hairer & Wanner's values
/// at rtol 1e-8 with a BDF in under 650 steps (communication every 1 s); the staircase integral of
/// `TimeEvents` exact to 1e-9 (its time events landed on); the sawtooth of
/// `StepEvents` reset by step events at the solver's completed steps.
#[test]
fn the_kits_model_exchange_fmus_run_alone_and_match_their_references() {
    use cosim_models::reference::{
        ROBERTSON_T40, bouncing_ball_contact_count, bouncing_ball_contacts, bouncing_ball_height,
        time_events,
    };
    for fmi in [2, 3] {
        // The ball.
        let trace = run_fmu(
            &me_only(fmi, "BouncingBallME"),
            &["--relative-tolerance", "1e-10"],
        );
        let (h0, e, g, v_min) = (1.0, 0.7, 9.81, 0.1);
        let n = bouncing_ball_contact_count(h0, e, g, v_min);
        let contacts = bouncing_ball_contacts(h0, e, g, n);
        let (time, h, count) = (
            trace.column("time").unwrap(),
            trace.column("BouncingBallME.h").unwrap(),
            trace.column("BouncingBallME.contacts").unwrap(),
        );
        for ((&t, &h), &c) in time.iter().zip(h).zip(count) {
            let want = bouncing_ball_height(h0, e, g, v_min, t);
            assert!(
                (h - want).abs() < 5e-6,
                "FMI {fmi}: h({t}) = {h}, analytic {want}"
            );
            let before = contacts.iter().filter(|&&tc| tc <= t).count();
            assert_eq!(c as usize, before, "FMI {fmi}: contacts at t = {t}");
        }
        assert_eq!(*count.last().unwrap() as usize, n);

        // Robertson, stiff.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let fmu = me_only(fmi, "Robertson");
        let output = cosim(&[
            "run",
            "--no-progress",
            s(&fmu),
            "--out",
            s(&out),
            "--relative-tolerance",
            "1e-8",
            "--step",
            "1",
        ]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let trace = Table::read(&out.join("trace.csv")).unwrap();
        for (k, want) in ROBERTSON_T40.iter().enumerate() {
            let got = *trace
                .column(&format!("Robertson.y{}", k + 1))
                .unwrap()
                .last()
                .unwrap();
            assert!(
                ((got - want) / want).abs() < 2e-6,
                "FMI {fmi}: y{} = {got}, want {want}",
                k + 1
            );
        }
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        let steps = summary["subsystems"][0]["calls"]["solver"]["steps"]
            .as_u64()
            .unwrap();
        // Without inputs, the solver steps over the 40 communication
        // points: the 326 steps of one advance to t = 40
        // (docs/model-exchange.md, block me-cost).
        assert!(steps < 400, "FMI {fmi}: {steps} steps");

        // Time events: the staircase integral, with the events (every
        // 0.25 s) on the communication points and between them.
        for step in ["0.01", "0.1", "0.3"] {
            let trace = run_fmu(&me_only(fmi, "TimeEvents"), &["--step", step]);
            let (time, y, x) = (
                trace.column("time").unwrap(),
                trace.column("TimeEvents.y").unwrap(),
                trace.column("TimeEvents.x").unwrap(),
            );
            for ((&t, &y), &x) in time.iter().zip(y).zip(x) {
                let (y_want, x_want) = time_events(0.25, t);
                assert_eq!(y, y_want, "FMI {fmi}, step {step}: y({t})");
                assert!(
                    (x - x_want).abs() < 1e-9,
                    "FMI {fmi}, step {step}: x({t}) = {x}, want {x_want}"
                );
            }
        }

        // Step events: x' = 1, reset to 0 by the step event of the first
        // completed solver step with x >= 0.255; the solver's steps are
        // shorter than the 10 ms between output points here (291 over 1 s).
        let trace = run_fmu(&me_only(fmi, "StepEvents"), &[]);
        let (x, resets) = (
            trace.column("StepEvents.x").unwrap(),
            trace.column("StepEvents.resets").unwrap(),
        );
        assert!(
            x.iter().all(|&x| (0.0..0.255 + 0.01).contains(&x)),
            "FMI {fmi}: {x:?}"
        );
        assert_eq!(*resets.last().unwrap(), 3.0, "FMI {fmi}");
        for k in 1..x.len() {
            if resets[k] == resets[k - 1] {
                assert!((x[k] - x[k - 1] - 0.01).abs() < 1e-9, "FMI {fmi}: row {k}");
            }
        }
    }
}

/// The solver's Jacobian comes from the FMU's directional derivatives where
/// it provides them (Robertson: `providesDirectionalDerivative`): a column
/// per call, the derivatives by the states with a unit seed, at t = 0
/// exactly the kinetics' first column (-k1, k1, 0).
#[test]
fn the_solver_jacobian_comes_from_directional_derivatives() {
    for fmi in [2u8, 3] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("calls.log");
        let log_arg = format!("--log-fmi-calls={}", log.display());
        run_fmu(&me_only(fmi, "Robertson"), &["--step", "10", &log_arg]);
        let text = std::fs::read_to_string(&log).unwrap();
        let function = format!("fmi{fmi}GetDirectionalDerivative(");
        let calls: Vec<&str> = text.lines().filter(|l| l.contains(&function)).collect();
        assert!(
            calls.len() >= 3 && calls.len().is_multiple_of(3),
            "FMI {fmi}: {} calls",
            calls.len()
        );
        let first = calls[0];
        let (seed, sensitivity) = if fmi == 2 {
            ("dvKnown={1, 0, 0}", "dvUnknown={-0.04, 0.04, 0}")
        } else {
            ("seed={1, 0, 0}", "sensitivity={-0.04, 0.04, 0}")
        };
        assert!(
            first.contains(seed) && first.contains(sensitivity),
            "FMI {fmi}: {first}"
        );
    }
}

/// A Model Exchange FMU's output derivatives (for the masters'
/// extrapolation and ECCO) come from its derivatives and directional
/// derivatives: dF_c/dt of the wheel-suspension half, whose force depends
/// on its states and on its input v_c (here a ramp, given as the input's
/// slope), equals the force's difference quotient over a short step.
#[test]
fn output_derivatives_of_model_exchange_come_from_directional_derivatives() {
    use cosim_fmi::{Fmu, InstantiateOptions, SolverMethod, SolverSettings};
    const V_C: u32 = 1;
    const F_C: u32 = 2;
    for fmu in [
        cosim_tests::fmi2("QuarterCarWheelSuspension"),
        cosim_tests::fmi3("QuarterCarWheelSuspension"),
    ] {
        let settings = SolverSettings {
            method: SolverMethod::Rk45,
            relative_tolerance: 1e-12,
            absolute_tolerance: 1e-12,
            max_step: None,
            max_order: None,
            initial_step: None,
        };
        let fmu = Fmu::open(&fmu)
            .unwrap()
            .as_model_exchange(settings)
            .unwrap();
        assert_eq!(fmu.co_simulation().unwrap().max_output_derivative_order, 1);
        let mut wheel = fmu
            .instantiate("wheel", &InstantiateOptions::default())
            .unwrap();
        wheel.setup_experiment(None, 0.0, Some(1.0)).unwrap();
        wheel.enter_initialization_mode().unwrap();
        wheel.exit_initialization_mode().unwrap();
        // v_c(t) = 0.5 + 2 t over [0, 0.1]: the input's value and slope.
        wheel.set_f64(&[V_C], &[0.5]).unwrap();
        wheel.set_input_derivatives(&[V_C], 1, &[2.0]).unwrap();
        wheel.do_step(0.0, 0.1, true).unwrap();
        let mut slope = [0.0];
        wheel.get_output_derivatives(&[F_C], 1, &mut slope).unwrap();
        let mut f = [0.0; 2];
        wheel.get_f64(&[F_C], &mut f[..1]).unwrap();
        // The same ramp on over a short step: the difference quotient.
        let dt = 1e-6;
        wheel.set_f64(&[V_C], &[0.5 + 2.0 * 0.1]).unwrap();
        wheel.set_input_derivatives(&[V_C], 1, &[2.0]).unwrap();
        wheel.do_step(0.1, dt, true).unwrap();
        wheel.get_f64(&[F_C], &mut f[1..]).unwrap();
        let quotient = (f[1] - f[0]) / dt;
        assert!(
            (slope[0] - quotient).abs() < 1e-4 * quotient.abs().max(1.0),
            "{}: dF_c/dt = {}, difference quotient {quotient}",
            fmu.source().display(),
            slope[0]
        );
        assert!(slope[0].abs() > 10.0, "{}", slope[0]);
    }
}

/// The solver options set Model Exchange subsystems' solvers: where none
/// runs Model Exchange they would change nothing, and are refused naming
/// the argument; an interface the FMU does not declare is refused too.
#[test]
fn solver_options_without_model_exchange_and_missing_interfaces_are_refused() {
    let chassis = cosim_tests::fmi2("QuarterCarChassis");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for (args, message) in [
        (
            vec!["--solver", "rk45"],
            "error: in command-line argument '--solver rk45': no subsystem runs a Model Exchange interface",
        ),
        (
            vec!["--relative-tolerance", "1e-6"],
            "error: in command-line argument '--relative-tolerance 1e-6': no subsystem runs a Model Exchange interface",
        ),
    ] {
        let mut all = vec!["run", "--no-progress", s(&chassis), "--out", s(&out)];
        all.extend(args);
        let output = cosim(&all);
        assert_eq!(output.status.code(), Some(2));
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(err.contains(message), "{err}");
        assert!(err.contains("add --interface me"), "{err}");
    }
    // Robertson has no Co-Simulation interface.
    let robertson = me_only(2, "Robertson");
    let output = cosim(&[
        "run",
        "--no-progress",
        s(&robertson),
        "--out",
        s(&out),
        "--interface",
        "cs",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("runs the FMU's Co-Simulation interface, which the FMU does not declare (it declares <ModelExchange> only)"),
        "{err}"
    );
}

/// The solver's work per communication point (docs/model-exchange.md,
/// block `me-cost`): Robertson (no inputs) at rtol 1e-8 to t = 40 with
/// fewer and more points, stepped over them: the same steps for any
/// number; the chassis (an input, which a master may set at every point)
/// under a constant force, landing on each point: more points, more steps
/// (BDF and the explicit pair).
#[test]
fn the_solver_work_per_communication_point_is_what_the_docs_say() {
    let solver = |fmu: &Path, args: &[&str]| -> serde_json::Value {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut all = vec!["run", "--no-progress", s(fmu), "--out", s(&out)];
        all.extend(args);
        let output = cosim(&all);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        summary["subsystems"][0]["calls"]["solver"].clone()
    };
    let mut table = String::from(
        "| run | communication points | solver steps | derivative evaluations |\n|---|---|---|---|\n",
    );
    let robertson = me_only(2, "Robertson");
    let mut steps = Vec::new();
    for step in ["40", "1", "0.1"] {
        let s = solver(
            &robertson,
            &[
                "--relative-tolerance",
                "1e-8",
                "--step",
                step,
                "--stop",
                "40",
            ],
        );
        let points = (40.0 / step.parse::<f64>().unwrap()).round();
        steps.push(s["steps"].as_u64().unwrap());
        table.push_str(&format!(
            "| Robertson, BDF, rtol 1e-8, to t = 40 | {points} | {} | {} |\n",
            s["steps"], s["derivative_evaluations"]
        ));
    }
    // Without inputs, stepped over the points: the same steps for any.
    assert!(steps[0] == steps[1] && steps[1] == steps[2], "{steps:?}");
    let chassis = cosim_tests::fmi2("QuarterCarChassis");
    let mut landed = Vec::new();
    for (method, step) in [("bdf", "0.1"), ("bdf", "0.001"), ("rk45", "0.001")] {
        let s = solver(
            &chassis,
            &[
                "--interface",
                "me",
                "--solver",
                method,
                "--set",
                "QuarterCarChassis.F=100",
                "--step",
                step,
                "--stop",
                "1",
            ],
        );
        let points = (1.0 / step.parse::<f64>().unwrap()).round();
        landed.push(s["steps"].as_u64().unwrap());
        table.push_str(&format!(
            "| QuarterCarChassis (an input), {method}, constant force, to t = 1 | {points} | {} | {} |\n",
            s["steps"], s["derivative_evaluations"]
        ));
    }
    // With an input, each point landed on: more points, more steps.
    assert!(landed[1] > 10 * landed[0], "{landed:?}");
    cosim_tests::check_doc_block("model-exchange.md", "me-cost", &table);
}

/// The scenario of docs/model-exchange.md runs (from `scenarios/`, where
/// its FMU paths point): both halves through Model Exchange, with the
/// solvers it names, as close to the monolithic reference as the
/// fixed-step coupling allows (the `me-masters` table: 6.3e-3 m/s).
#[test]
fn the_docs_scenario_runs() {
    let doc = std::fs::read_to_string(cosim_tests::root().join("docs/model-exchange.md")).unwrap();
    let start = doc.find("```toml\n").unwrap() + "```toml\n".len();
    let toml = &doc[start..start + doc[start..].find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.toml");
    std::fs::write(
        &path,
        toml.replace("../fmus/dist", &cosim_tests::fmus().display().to_string()),
    )
    .unwrap();
    let r = run(&path, &[], None, None);
    let (v, _) = errors(&r);
    assert!(v < 1e-2, "v_c error {v:e}");
    let integrated: Vec<_> = r
        .summary
        .subsystems
        .iter()
        .map(|s| s.calls.solver.map(|x| x.steps > 0))
        .collect();
    assert_eq!(integrated, [Some(true), Some(true)]);
}

/// A coupled discrete input of a Model Exchange FMU (the thermostat's
/// room through Model Exchange, its Boolean and Integer inputs set by the
/// controller at every communication point) makes an event, and a restart
/// of the solver, only when its value changes: as many input events as the
/// trace shows changes of the room's inputs, one restart more (the start),
/// FMI 2.0 and 3.0, in process and in a host process; an unchanged value is
/// not set again in Continuous-Time Mode (the strict kit FMU would refuse
/// it). The temperature equals the Co-Simulation room's exact one to the
/// solver's tolerance.
#[test]
fn a_coupled_discrete_input_makes_an_event_only_when_it_changes() {
    for fmi in [2, 3] {
        for isolation in ["none", "process"] {
            let dir = tempfile::tempdir().unwrap();
            let master = "kind = \"fixed-step\"\nstep = 0.5";
            let cs = with_master("thermostat.toml", master, dir.path());
            let text = std::fs::read_to_string(&cs)
                .unwrap()
                .replace("fmi2/", &format!("fmi{fmi}/"));
            std::fs::write(&cs, &text).unwrap();
            let me_path = dir.path().join("me.toml");
            let room = format!("fmi{fmi}/ThermostatRoom.fmu\"");
            std::fs::write(
                &me_path,
                text.replacen(
                    &room,
                    &format!(
                        "{room}\ninterface = \"model-exchange\"\nisolation = \"{isolation}\"\n[subsystems.solver]\nrelative_tolerance = 1e-9"
                    ),
                    1,
                ),
            )
            .unwrap();
            // (Through the command line: the hosts are `cosim host` processes.)
            let out = dir.path().join("out");
            let output = cosim(&["run", "--no-progress", s(&me_path), "--out", s(&out)]);
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            let cs = run(&cs, &[], None, None);
            assert!(cs.error.is_none(), "{:?}", cs.error);
            let trace = Table::read(&out.join("trace.csv")).unwrap();
            let (on, level) = (
                trace.column("room.heater_on").unwrap(),
                trace.column("room.level").unwrap(),
            );
            let changes = (1..on.len())
                .filter(|&i| on[i] != on[i - 1] || level[i] != level[i - 1])
                .count() as u64;
            let summary: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                    .unwrap();
            let events = &summary["subsystems"][0]["calls"]["solver"]["events"];
            assert_eq!(summary["subsystems"][0]["name"], "room");
            assert!(changes > 5, "{changes}");
            assert_eq!(
                (events["input_events"].as_u64(), events["restarts"].as_u64()),
                (Some(changes), Some(changes + 1)),
                "FMI {fmi}, isolation {isolation}: {events}"
            );
            let e = max_abs_error(&trace, "room.T", &cs.trace(), "room.T");
            assert!(
                e < 1e-6,
                "FMI {fmi}, isolation {isolation}: room.T off by {e}"
            );
        }
    }
}
