//! Strong coupling (`[master] kind = "strongly-coupled"`): the Model
//! Exchange FMUs of a level integrated as one ODE, their connections
//! resolved inside every evaluation. The B1 quarter car so run is the
//! kit's monolithic reference to the solver's tolerance; nested, the group
//! is one subsystem to the level above (also under a master that rolls
//! back); events of a member are handled by the whole group; what such a
//! level cannot run is refused, naming it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use cosim_core::metrics::Table;
use cosim_tests::{cosim, max_abs_error, reference, root, run};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `scenarios/b1_quarter_car_a_strongly_coupled.toml` in `dir` with
/// absolute FMU paths of FMI version `fmi`, edited by `edit`.
fn b1_strong(dir: &Path, fmi: u8, edit: impl Fn(String) -> String) -> PathBuf {
    let text = std::fs::read_to_string(
        root()
            .join("scenarios")
            .join("b1_quarter_car_a_strongly_coupled.toml"),
    )
    .unwrap();
    let fmus = cosim_tests::fmus();
    let text = text.replace(
        "../fmus/dist/fmi2",
        &fmus.join(format!("fmi{fmi}")).display().to_string(),
    );
    let path = dir.join(format!("b1_strong_fmi{fmi}.toml"));
    std::fs::write(&path, edit(text)).unwrap();
    path
}

/// The reference columns of B1 and the trace columns that are them.
const B1_COLUMNS: &[(&str, &str)] = &[
    ("chassis.v_c", "v_c"),
    ("chassis.z_c", "z_c"),
    ("wheel.F_c", "F_c"),
    ("wheel.z_w", "z_w"),
    ("wheel.v_w", "v_w"),
];

/// Each B1 column's largest error against the monolithic reference,
/// relative to the column's largest magnitude.
fn b1_relative_errors(trace: &Table) -> Vec<(&'static str, f64)> {
    let reference = reference("b1_linear");
    B1_COLUMNS
        .iter()
        .map(|&(column, ref_column)| {
            let scale = reference
                .column(ref_column)
                .unwrap()
                .iter()
                .fold(0.0, |m: f64, x| m.max(x.abs()));
            (
                column,
                max_abs_error(trace, column, &reference, ref_column) / scale,
            )
        })
        .collect()
}

/// B1 strongly coupled, FMI 2.0 and 3.0, is the monolithic reference
/// solution: at rtol 1e-8 every column within 100 rtol of it (relative to
/// the column's size; measured 2e-9 to 1e-8), further at rtol 1e-5 (the
/// difference is the solver's error, which the tolerance sets). Measured
/// against the strongly coupled run, the fixed-step co-simulation of the
/// same halves has the coupling error it has against the reference (the
/// strongly coupled run serves as the reference: `cosim compare`).
#[test]
fn a_strongly_coupled_b1_is_the_monolithic_reference() {
    let mut table = String::from(
        "| FMUs | rtol | largest error (relative) | solver steps | fixed-step v_c error against the reference | against the strongly coupled run |\n|---|---|---|---|---|---|\n",
    );
    for fmi in [2, 3] {
        let dir = tempfile::tempdir().unwrap();
        let fine = run(&b1_strong(dir.path(), fmi, |t| t), &[], None, None);
        assert!(fine.error.is_none(), "FMI {fmi}: {:?}", fine.error);
        let errors = b1_relative_errors(&fine.trace());
        for &(column, e) in &errors {
            assert!(
                e < 100.0 * 1e-8,
                "FMI {fmi}: {column} off by {e:e} (relative)"
            );
        }
        let solver = fine
            .summary
            .stats
            .solver
            .expect("the group's solver figures");
        assert!(
            solver.steps > 1000 && solver.events.restarts == 1,
            "{solver:?}"
        );
        let coarse = run(
            &b1_strong(dir.path(), fmi, |t| {
                t.replace("relative_tolerance = 1e-8", "relative_tolerance = 1e-5")
            }),
            &[],
            None,
            None,
        );
        assert!(coarse.error.is_none(), "{:?}", coarse.error);
        let coarse_errors = b1_relative_errors(&coarse.trace());
        let worst = |e: &[(&str, f64)]| e.iter().map(|x| x.1).fold(0.0, f64::max);
        assert!(
            worst(&coarse_errors) > 10.0 * worst(&errors),
            "FMI {fmi}: {coarse_errors:?} vs {errors:?}"
        );

        // The fixed-step co-simulation against the strongly coupled run.
        let cosim_run = run(
            &b1_strong(dir.path(), fmi, |t| {
                t.replace("kind = \"strongly-coupled\"", "kind = \"fixed-step\"")
                    .replace(
                        "[master.solver]\nmethod = \"bdf\"\nrelative_tolerance = 1e-8\n",
                        "",
                    )
            }),
            &[],
            None,
            None,
        );
        assert!(cosim_run.error.is_none(), "{:?}", cosim_run.error);
        let trace = cosim_run.trace();
        let against_reference =
            max_abs_error(&trace, "chassis.v_c", &reference("b1_linear"), "v_c");
        let against_strong = max_abs_error(&trace, "chassis.v_c", &fine.trace(), "chassis.v_c");
        assert!(against_reference > 1e-3, "{against_reference}");
        assert!(
            (against_strong / against_reference - 1.0).abs() < 1e-3,
            "FMI {fmi}: coupling error {against_strong} against the strongly coupled run, {against_reference} against the reference"
        );
        let coarse_steps = coarse.summary.stats.solver.unwrap().steps;
        table.push_str(&format!(
            "| FMI {fmi}.0 | 1e-8 | {} | {} | {} | {} |\n| FMI {fmi}.0 | 1e-5 | {} | {coarse_steps} | | |\n",
            significant(worst(&errors)),
            solver.steps,
            significant(against_reference),
            significant(against_strong),
            significant(worst(&coarse_errors)),
        ));
    }
    cosim_tests::check_doc_block("model-exchange.md", "strong-b1", &table);
}

fn significant(x: f64) -> String {
    format!("{x:.1e}")
}

/// A nested system with the strongly coupled master, first alone: the same
/// values bit for bit as the same level at the top; then the wheel alone
/// in a strongly coupled nest, its exposed input fed by the Co-Simulation
/// chassis of the level above (held over each outer step, as the wheel's
/// own Model Exchange driver holds it at extrapolation 0: the same values
/// to the solvers' tolerance); then that nest under the Richardson master,
/// which takes its steps back (the group restarts its integrator from the
/// restored FMU states): the run ends, restores made, the result near the
/// reference as the Model Exchange halves under Richardson are.
#[test]
fn a_strongly_coupled_nest_is_one_subsystem_to_the_level_above() {
    let dir = tempfile::tempdir().unwrap();
    let fmus = cosim_tests::fmus().join("fmi2");
    let (chassis, wheel) = (
        fmus.join("QuarterCarChassis.fmu"),
        fmus.join("QuarterCarWheelSuspension.fmu"),
    );
    let top = run(&b1_strong(dir.path(), 2, |t| t), &[], None, None);
    let nest = dir.path().join("nest.toml");
    std::fs::write(
        &nest,
        format!(
            r#"[simulation]
stop = 4.0
[master]
kind = "fixed-step"
step = 1e-3
[[subsystems]]
name = "car"
[subsystems.system.master]
kind = "strongly-coupled"
step = 1e-3
[subsystems.system.master.solver]
relative_tolerance = 1e-8
[[subsystems.system.subsystems]]
name = "chassis"
fmu = "{}"
[[subsystems.system.subsystems]]
name = "wheel"
fmu = "{}"
[[subsystems.system.connections]]
from = "wheel.F_c"
to = "chassis.F"
gain = -1.0
[[subsystems.system.connections]]
from = "chassis.v_c"
to = "wheel.v_c"
[outputs]
variables = ["car.*"]
"#,
            s(&chassis),
            s(&wheel)
        ),
    )
    .unwrap();
    let nested = run(&nest, &[], None, None);
    assert!(nested.error.is_none(), "{:?}", nested.error);
    let (a, b) = (top.trace(), nested.trace());
    for (column, _) in B1_COLUMNS {
        assert_eq!(
            a.column(column).unwrap(),
            b.column(&format!("car.{column}")).unwrap(),
            "{column}"
        );
    }
    let car = nested
        .summary
        .subsystems
        .iter()
        .find(|x| x.name == "car")
        .unwrap();
    assert!(
        car.calls.solver.is_some_and(|m| m.steps > 1000),
        "{:?}",
        car.calls
    );

    // The wheel alone in a strongly coupled nest, fed from outside.
    let outer = |master: &str, wheel_part: &str| {
        format!(
            r#"[simulation]
stop = 4.0
[master]
{master}
[[subsystems]]
name = "chassis"
fmu = "{}"
{wheel_part}
[outputs]
variables = ["chassis.v_c"]
"#,
            s(&chassis)
        )
    };
    let grouped = r#"[[subsystems]]
name = "car"
exposes = ["wheel.v_c", "wheel.F_c"]
[subsystems.system.master]
kind = "strongly-coupled"
step = 1e-3
[subsystems.system.master.solver]
relative_tolerance = 1e-9
[[subsystems.system.subsystems]]
name = "wheel"
fmu = "WHEEL"
[[connections]]
from = "car.wheel.F_c"
to = "chassis.F"
gain = -1.0
[[connections]]
from = "chassis.v_c"
to = "car.wheel.v_c"
"#
    .replace("WHEEL", s(&wheel));
    let driven = r#"[[subsystems]]
name = "wheel"
fmu = "WHEEL"
interface = "model-exchange"
[subsystems.solver]
relative_tolerance = 1e-9
[[connections]]
from = "wheel.F_c"
to = "chassis.F"
gain = -1.0
[[connections]]
from = "chassis.v_c"
to = "wheel.v_c"
"#
    .replace("WHEEL", s(&wheel));
    let fixed = "kind = \"fixed-step\"\nstep = 1e-3";
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let g = run(&write("g.toml", outer(fixed, &grouped)), &[], None, None);
    let d = run(&write("d.toml", outer(fixed, &driven)), &[], None, None);
    assert!(
        g.error.is_none() && d.error.is_none(),
        "{:?} {:?}",
        g.error,
        d.error
    );
    let difference = max_abs_error(&g.trace(), "chassis.v_c", &d.trace(), "chassis.v_c");
    let coupling = max_abs_error(&g.trace(), "chassis.v_c", &reference("b1_linear"), "v_c");
    assert!(difference < 1e-6, "{difference}");
    assert!(coupling > 1e-3, "{coupling}");

    let richardson = "kind = \"richardson\"\nstep = 1e-4\natol = 1e-3\nrtol = 1e-3\nenergy_scale = 750.0\n[master.controller]\ndt_min = 1e-6";
    let r = run(
        &write("r.toml", outer(richardson, &grouped)),
        &[],
        None,
        None,
    );
    assert!(r.error.is_none(), "{:?}", r.error);
    let car = r
        .summary
        .subsystems
        .iter()
        .find(|x| x.name == "car")
        .unwrap();
    assert!(car.calls.state_restores > 100, "{:?}", car.calls);
    let error = max_abs_error(&r.trace(), "chassis.v_c", &reference("b1_linear"), "v_c");
    assert!(error < 1e-2, "{error}");
}

/// The kit's Model Exchange FMUs, each alone in a strongly coupled level,
/// give what their own driver gives (the same integrator and events):
/// the ball's state events, the time events, the stiff Robertson, FMI 2.0
/// and 3.0; the same events counted (step events too, whose times follow
/// the solver's steps: the driver of an FMU without inputs steps past the
/// communication points, the group lands on them).
#[test]
fn events_of_a_member_are_handled_by_the_group() {
    let dir = tempfile::tempdir().unwrap();
    for fmi in [2, 3] {
        for (model, stop, step) in [
            ("BouncingBallME", 3.0, 0.01),
            ("TimeEvents", 2.0, 0.1),
            ("StepEvents", 2.0, 0.1),
            ("Robertson", 40.0, 1.0),
        ] {
            let fmu = cosim_tests::fmus()
                .join("me")
                .join(format!("fmi{fmi}"))
                .join(format!("{model}.fmu"));
            let scenario = |master: &str, solver: &str| {
                format!(
                    "[simulation]\nstop = {stop}\n[master]\n{master}\nstep = {step}\n{solver}[[subsystems]]\nname = \"m\"\nfmu = \"{}\"\n",
                    s(&fmu)
                )
            };
            let solver = "relative_tolerance = 1e-8\n";
            let group_path = dir.path().join(format!("{model}{fmi}_g.toml"));
            std::fs::write(
                &group_path,
                scenario(
                    "kind = \"strongly-coupled\"",
                    &format!("[master.solver]\n{solver}"),
                ),
            )
            .unwrap();
            let own_path = dir.path().join(format!("{model}{fmi}_d.toml"));
            std::fs::write(
                &own_path,
                scenario("kind = \"fixed-step\"", "") + &format!("[subsystems.solver]\n{solver}"),
            )
            .unwrap();
            let (g, d) = (
                run(&group_path, &[], None, None),
                run(&own_path, &[], None, None),
            );
            assert!(
                g.error.is_none() && d.error.is_none(),
                "{model}: {:?} {:?}",
                g.error,
                d.error
            );
            let (tg, td) = (g.trace(), d.trace());
            assert_eq!(tg.names, td.names);
            // (Step events come at the end of a solver step, which the
            // driver of an FMU without inputs takes past the points and
            // the group lands on them: the same count, not the same times.)
            let names = if model == "StepEvents" {
                &tg.names[..0]
            } else {
                &tg.names[1..]
            };
            for name in names {
                let e = max_abs_error(&tg, name, &td, name);
                let scale = td
                    .column(name)
                    .unwrap()
                    .iter()
                    .fold(1e-300, |m: f64, x| m.max(x.abs()));
                assert!(
                    e <= 1e-6 * scale,
                    "FMI {fmi} {model}: {name} differs by {e:e}"
                );
            }
            let own = d.summary.subsystems[0].calls.solver.unwrap().events;
            let group = g.summary.stats.solver.unwrap().events;
            assert_eq!(
                (own.state_events, own.time_events, own.step_events),
                (group.state_events, group.time_events, group.step_events),
                "FMI {fmi} {model}"
            );
        }
    }
}

/// What a strongly coupled level cannot run is refused, naming it: an
/// algebraic loop through direct feed-through (its connections named), a
/// Co-Simulation only FMU, a member asking for Co-Simulation or a solver
/// of its own, a nested system inside, `[master.solver]` for another
/// master.
#[test]
fn what_a_strongly_coupled_level_cannot_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    type Edit = Box<dyn Fn(String) -> String>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "loop",
            Box::new(|t: String| {
                t.replace(
                    "from = \"chassis.v_c\"\nto = \"wheel.v_c\"",
                    "from = \"wheel.F_c\"\nto = \"wheel.v_c\"\ngain = 1e-6\nunit_mismatch = true",
                )
            }),
            "an algebraic loop through direct feed-through: wheel.F_c -> wheel.v_c",
        ),
        (
            "co-simulation only",
            Box::new(|t: String| t.replace("QuarterCarChassis.fmu", "Gain.fmu")),
            "cannot be integrated by the strongly-coupled master",
        ),
        (
            "interface",
            Box::new(|t: String| {
                t.replace(
                    "name = \"wheel\"\n",
                    "name = \"wheel\"\ninterface = \"co-simulation\"\n",
                )
            }),
            "subsystem 'wheel' asks for the Co-Simulation interface in a strongly coupled level",
        ),
        (
            "own solver",
            Box::new(|t: String| t + "\n[subsystems.solver]\nrelative_tolerance = 1e-6\n"),
            "has a solver of its own in a strongly coupled level",
        ),
        (
            "other master",
            Box::new(|t: String| t.replace("kind = \"strongly-coupled\"", "kind = \"fixed-step\"")),
            "[master.solver] sets the integrator of kind = \"strongly-coupled\"",
        ),
    ];
    for (name, edit, message) in cases {
        let path = b1_strong(dir.path(), 2, edit);
        let out = dir.path().join("out");
        let output = cosim(&["run", "--no-progress", s(&path), "--out", s(&out)]);
        assert_ne!(output.status.code(), Some(0), "{name}");
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(err.contains(message), "{name}: {err}");
    }
}
