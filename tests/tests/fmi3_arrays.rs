//! FMI 3 arrays and structural parameters end to end, on the kit's
//! `StateSpace` (fmus/dist/fmi3/StateSpace.fmu: x' = A x + B u, y = C x + D
//! u, sizes m, n, r structural parameters; the input is held over a step and
//! each step is the exact discretisation, so traces equal the closed forms
//! to rounding): every element traced under its 1-based name, sizes changed
//! from a scenario (set in Configuration Mode), arrays coupled whole and by
//! element, in process and isolated, FMPy's values, and the refusals.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use cosim_tests::Table;

fn state_space() -> String {
    cosim_tests::fmi3("StateSpace").display().to_string()
}

/// `cosim run <args> -o <dir>`; panics with stderr unless it succeeds.
fn run_ok(args: &[&str], dir: &Path) -> Table {
    let out = dir.to_str().unwrap();
    let mut all: Vec<&str> = vec!["run", "--no-progress", "-q"];
    all.extend(args);
    all.extend(["-o", out]);
    let o = cosim_tests::cosim(&all);
    assert!(
        o.status.success(),
        "cosim {all:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    Table::read(&dir.join("trace.csv")).unwrap()
}

/// `cosim run <args>` that must fail with exit status 2; returns stderr.
fn run_refused(args: &[&str]) -> String {
    let mut all: Vec<&str> = vec!["run", "--no-progress", "-q"];
    all.extend(args);
    let o = cosim_tests::cosim(&all);
    assert_eq!(
        o.status.code(),
        Some(2),
        "cosim {all:?}: expected exit status 2, stderr:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn close(x: f64, y: f64, tol: f64) -> bool {
    (x - y).abs() <= tol * y.abs().max(1.0)
}

#[test]
fn default_sizes_trace_every_element_and_follow_the_closed_form() {
    let dir = tempfile::tempdir().unwrap();
    let t = run_ok(
        &[
            &state_space(),
            "--stop",
            "1",
            "--output-variables",
            "y",
            "x",
            "A[2,2]",
        ],
        dir.path(),
    );
    assert_eq!(
        t.names,
        [
            "time",
            "StateSpace.y[1]",
            "StateSpace.y[2]",
            "StateSpace.y[3]",
            "StateSpace.x[1]",
            "StateSpace.x[2]",
            "StateSpace.x[3]",
            "StateSpace.A[2,2]"
        ]
    );
    // A = B = C = D = I, x0 = 0, u = (1, 2, 3): x = (e^t - 1) u, y = e^t u.
    for (k, &time) in t.time().iter().enumerate() {
        for i in 0..3 {
            let u = (i + 1) as f64;
            let y = t.column(&format!("StateSpace.y[{}]", i + 1)).unwrap()[k];
            let x = t.column(&format!("StateSpace.x[{}]", i + 1)).unwrap()[k];
            assert!(close(y, time.exp() * u, 1e-12), "y[{i}] at {time}: {y}");
            assert!(close(x, time.exp_m1() * u, 1e-12), "x[{i}] at {time}: {x}");
        }
        assert_eq!(t.column("StateSpace.A[2,2]").unwrap()[k], 1.0);
    }
    assert_eq!(*t.time().last().unwrap(), 1.0);
}

#[test]
fn structural_parameters_from_a_scenario_change_the_sizes_and_the_columns() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("rotation.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"[simulation]
stop = 5.0
[master]
step = 0.01
[[subsystems]]
name = "ss"
fmu = "{}"
parameters = {{ m = 1, n = 2, r = 1, A = [[0, 1], [-1, 0]], B = [[0], [1]], C = [[1, 0]], D = [[0]], x0 = [1, 0] }}
start = {{ u = [0.0] }}
[outputs]
variables = ["ss.y", "ss.x", "ss.u"]
"#,
            state_space()
        ),
    )
    .unwrap();
    let t = run_ok(&[scenario.to_str().unwrap()], &dir.path().join("out"));
    assert_eq!(
        t.names,
        ["time", "ss.y[1]", "ss.x[1]", "ss.x[2]", "ss.u[1]"]
    );
    // x1' = x2, x2' = -x1, x(0) = (1, 0): x = (cos t, -sin t), y = x1.
    for (k, &time) in t.time().iter().enumerate() {
        assert!(close(t.column("ss.y[1]").unwrap()[k], time.cos(), 1e-12));
        assert!(close(t.column("ss.x[2]").unwrap()[k], -time.sin(), 1e-12));
        assert_eq!(t.column("ss.u[1]").unwrap()[k], 0.0);
    }
    assert_eq!(t.time().len(), 501);
}

/// Three StateSpace instances: `a` at its defaults (y = e^t (1, 2, 3)),
/// `b` integrating the whole of `a.y` (A = 0, B = C = I, D = 0), `c`
/// integrating one element, `a.y[3]`.
fn coupled_scenario(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("coupled.toml");
    std::fs::write(
        &path,
        format!(
            r#"[simulation]
stop = 1.0
[master]
step = 0.125
[[subsystems]]
name = "a"
fmu = "{fmu}"
[[subsystems]]
name = "b"
fmu = "{fmu}"
parameters = {{ A = [[0, 0, 0], [0, 0, 0], [0, 0, 0]], D = [[0, 0, 0], [0, 0, 0], [0, 0, 0]] }}
[[subsystems]]
name = "c"
fmu = "{fmu}"
parameters = {{ m = 1, n = 1, r = 1, A = [[0]], B = [[1]], C = [[1]], D = [[0]] }}
[[connections]]
from = "a.y"
to = "b.u"
[[connections]]
from = "a.y[3]"
to = "c.u[1]"
[outputs]
variables = ["a.y", "b.y", "c.y"]
"#,
            fmu = state_space()
        ),
    )
    .unwrap();
    path
}

#[test]
fn arrays_couple_whole_and_element_by_element() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = coupled_scenario(dir.path());
    let t = run_ok(&[scenario.to_str().unwrap()], &dir.path().join("out"));
    assert_eq!(
        t.names,
        [
            "time", "a.y[1]", "a.y[2]", "a.y[3]", "b.y[1]", "b.y[2]", "b.y[3]", "c.y[1]"
        ]
    );
    // Jacobi, zero-order hold: over step j the integrators see a.y(t_j),
    // so b.y_i(t_k) = sum_{j<k} h e^(t_j) u_i and c.y = b.y_3.
    let h = 0.125;
    for (k, &time) in t.time().iter().enumerate() {
        let sum: f64 = (0..k).map(|j| h * (j as f64 * h).exp()).sum();
        for i in 0..3 {
            let u = (i + 1) as f64;
            let a = t.column(&format!("a.y[{}]", i + 1)).unwrap()[k];
            let b = t.column(&format!("b.y[{}]", i + 1)).unwrap()[k];
            assert!(close(a, time.exp() * u, 1e-12), "a.y[{i}] at {time}");
            assert!(
                close(b, sum * u, 1e-12),
                "b.y[{i}] at {time}: {b} vs {}",
                sum * u
            );
        }
        assert!(close(t.column("c.y[1]").unwrap()[k], 3.0 * sum, 1e-12));
    }
}

#[test]
fn isolated_arrays_give_the_same_trace_to_the_byte() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = coupled_scenario(dir.path());
    let s = scenario.to_str().unwrap();
    run_ok(&[s], &dir.path().join("in"));
    run_ok(&[s, "--isolation", "process"], &dir.path().join("iso"));
    let a = std::fs::read(dir.path().join("in/trace.csv")).unwrap();
    let b = std::fs::read(dir.path().join("iso/trace.csv")).unwrap();
    assert_eq!(a, b, "isolated trace differs");
}

#[test]
fn fmpy_gives_the_same_values_at_the_default_sizes_to_a_few_ulps() {
    let dir = tempfile::tempdir().unwrap();
    let t = run_ok(
        &[&state_space(), "--stop", "1", "--output-variables", "y"],
        dir.path(),
    );
    // FMPy steps the FMU at its default experiment step (as cosim does for
    // a single FMU) and records y after each step.
    let script = format!(
        r#"
import fmpy
r = fmpy.simulate_fmu({fmu:?}, stop_time=1.0, output=['y'])
for row in r:
    print(repr(float(row['time'])), *[repr(float(v)) for v in row['y']])
"#,
        fmu = state_space()
    );
    let o = std::process::Command::new(cosim_tests::python())
        .args(["-c", &script])
        .output()
        .expect("running FMPy");
    assert!(
        o.status.success(),
        "FMPy failed (installed? `cargo xtask test` installs it into .venv/):\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows: Vec<Vec<f64>> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split(' ').map(|x| x.parse().unwrap()).collect())
        .collect();
    let times = t.time();
    let mut compared = 0;
    for row in &rows {
        // (FMPy's time values are sums of steps: matched to the tick.)
        let Some(k) = times.iter().position(|&x| (x - row[0]).abs() < 1e-9) else {
            continue;
        };
        for i in 0..3 {
            let ours = t.column(&format!("StateSpace.y[{}]", i + 1)).unwrap()[k];
            // Within a few ulps: FMPy's communication points are sums of
            // floating-point steps, cosim's whole ticks (docs/
            // calling-sequence.md), and the FMU discretises each step with
            // the step size it is given.
            assert!(
                close(ours, row[1 + i], 4.0 * f64::EPSILON),
                "y[{}] at {}: cosim {ours:?}, FMPy {:?}",
                i + 1,
                row[0],
                row[1 + i]
            );
        }
        compared += 1;
    }
    assert!(
        compared >= 100,
        "only {compared} common time points with FMPy"
    );
}

#[test]
fn shapes_that_do_not_fit_are_refused_naming_both() {
    let fmu = state_space();
    let e = run_refused(&[&fmu, "--set", "A=[1, 2, 3]"]);
    assert!(
        e.contains("shape mismatch: 'A' is a 3x3 array, the value given is an array of 3 elements"),
        "{e}"
    );
    let e = run_refused(&[&fmu, "--output-variables", "y[4]"]);
    assert!(e.contains("'y[4]': index 4 is outside 1..3"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let scenario = coupled_scenario(dir.path());
    // b.u fed in part: a.y[1] to b.u[1] only.
    let text = std::fs::read_to_string(&scenario).unwrap().replace(
        "from = \"a.y\"\nto = \"b.u\"",
        "from = \"a.y[1]\"\nto = \"b.u[1]\"",
    );
    std::fs::write(&scenario, text).unwrap();
    let e = run_refused(&[scenario.to_str().unwrap()]);
    assert!(
        e.contains(
            "array input 'b.u' is connected in part: 1 of its 3 elements are fed, not u[2], u[3]"
        ),
        "{e}"
    );
    // A whole array into one of another size.
    let text = std::fs::read_to_string(&scenario).unwrap().replace(
        "from = \"a.y[1]\"\nto = \"b.u[1]\"",
        "from = \"a.y\"\nto = \"c.u\"",
    );
    std::fs::write(&scenario, text).unwrap();
    let e = run_refused(&[scenario.to_str().unwrap()]);
    assert!(
        e.contains(
            "shape mismatch: 'a.y' is an array of 3 elements but 'c.u' is an array of 1 element"
        ),
        "{e}"
    );
}
