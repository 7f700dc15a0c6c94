//! Function blocks (`[[functions]]`, OSP `Sum` / `VectorSum`) end to end:
//! a sum of FMU outputs reaches its consumer in the exchange it is
//! computed in (no step delay of its own), every master drives a system
//! whose couplings pass through functions exactly as the same couplings
//! made directly, vector sums add component by component.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use cosim_tests::{Table, fmi2, run};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn col<'t>(t: &'t Table, name: &str) -> &'t [f64] {
    t.column(name)
        .unwrap_or_else(|| panic!("no column {name} in {:?}", t.names))
}

/// d1.x + d2.x -> sum -> g.u (a Gain, y = u), and d1.x -> g1.u directly.
fn sum_scenario(master: &str) -> String {
    let d = fmi2("Dahlquist").display().to_string();
    let g = fmi2("Gain").display().to_string();
    format!(
        r#"[simulation]
stop = 0.5

[master]
step = 0.01
{master}

[[subsystems]]
name = "d1"
fmu = "{d}"

[[subsystems]]
name = "d2"
fmu = "{d}"
parameters = {{ lambda = -3.0, x0 = 0.7 }}

[[subsystems]]
name = "g"
fmu = "{g}"

[[subsystems]]
name = "g1"
fmu = "{g}"

[[functions]]
name = "sum"
kind = "sum"
inputs = 2

[[connections]]
from = "d1.x"
to = "sum.in[0]"

[[connections]]
from = "d2.x"
to = "sum.in[1]"

[[connections]]
from = "sum.out"
to = "g.u"

[[connections]]
from = "d1.x"
to = "g1.u"

[outputs]
variables = ["d1.x", "d2.x", "sum.*", "g.u", "g.y", "g1.u"]
"#
    )
}

#[test]
fn a_sum_of_two_outputs_feeds_a_third_fmu_exactly_and_without_delay() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "sum.toml", &sum_scenario(""));
    let r = run(&path, &[], None, None);
    assert!(r.error.is_none(), "{:?}", r.error);
    let t = r.trace();
    assert_eq!(t.time().len(), 51);
    let (x1, x2) = (col(&t, "d1.x"), col(&t, "d2.x"));
    let (out, gu, g1u) = (col(&t, "sum.out"), col(&t, "g.u"), col(&t, "g1.u"));
    assert_eq!(col(&t, "sum.in[0]"), x1);
    assert_eq!(col(&t, "sum.in[1]"), x2);
    for k in 0..t.time().len() {
        // The function's value at each communication point is the sum of
        // the outputs published there, exactly.
        assert_eq!(out[k].to_bits(), (x1[k] + x2[k]).to_bits(), "row {k}");
        if k > 0 {
            // Jacobi: g stepped over [t_k-1, t_k] from the sum at t_k-1,
            // as g1 from d1.x at t_k-1 through a plain connection: the
            // function adds no delay.
            assert_eq!(gu[k].to_bits(), out[k - 1].to_bits(), "row {k}");
            assert_eq!(g1u[k].to_bits(), x1[k - 1].to_bits(), "row {k}");
        }
    }
    assert_eq!(col(&t, "g.y"), gu);

    // Gauss-Seidel: g steps after d1 and d2 and sees their new outputs
    // through the sum in the same macro step.
    let path = write(
        dir.path(),
        "sum_gs.toml",
        &sum_scenario("scheme = \"gauss-seidel\""),
    );
    let r = run(&path, &[], None, None);
    assert!(r.error.is_none(), "{:?}", r.error);
    let t = r.trace();
    let (x1, x2, gu) = (col(&t, "d1.x"), col(&t, "d2.x"), col(&t, "g.u"));
    for k in 1..t.time().len() {
        assert_eq!(gu[k].to_bits(), (x1[k] + x2[k]).to_bits(), "row {k}");
    }
}

/// Two Dahlquist systems in feedback: d1.u = d2.x, d2.u = -d1.x, coupled
/// directly (`through = false`) or through two one-input sums (the gain on
/// the connection into the function): the same values reach the inputs,
/// so every master must give the same bits.
fn feedback(master: &str, through: bool) -> String {
    let d = fmi2("Dahlquist").display().to_string();
    let couplings = if through {
        r#"[[functions]]
name = "s1"
kind = "sum"
inputs = 1

[[functions]]
name = "s2"
kind = "vector-sum"
inputs = 1

[[connections]]
from = "d2.x"
to = "s1.in[0]"

[[connections]]
from = "s1.out"
to = "d1.u"

[[connections]]
from = "d1.x"
to = "s2.in[0][0]"
gain = -1.0

[[connections]]
from = "s2.out[0]"
to = "d2.u"
"#
    } else {
        r#"[[connections]]
from = "d2.x"
to = "d1.u"

[[connections]]
from = "d1.x"
to = "d2.u"
gain = -1.0
"#
    };
    format!(
        r#"[simulation]
stop = 2.0

[master]
{master}

[[subsystems]]
name = "d1"
fmu = "{d}"
parameters = {{ lambda = -0.1 }}

[[subsystems]]
name = "d2"
fmu = "{d}"
parameters = {{ lambda = -0.2, x0 = 0.0 }}
{couplings}
[outputs]
variables = ["d1.*", "d2.*"]
"#
    )
}

#[test]
fn every_master_drives_couplings_through_functions_as_direct_ones() {
    let masters = [
        "step = 0.05",
        "step = 0.05\nextrapolation = 1",
        "step = 0.05\nextrapolation = 2",
        "step = 0.05\nextrapolation = 1\nscheme = \"gauss-seidel\"",
        "step = 0.05\nextrapolation = 2\nthreads = 2",
        "kind = \"predictor-corrector\"\nstep = 0.01\nextrapolation = 1\ntolerance = 1e-6",
        "kind = \"nepce\"\nstep = 0.01\nextrapolation = 1\nrtol = 1e-6",
        "kind = \"richardson\"\nstep = 0.01\nextrapolation = 1\nrtol = 1e-6",
        "kind = \"ifosmondi\"\nstep = 0.1",
        "kind = \"iterative-affine\"\nstep = 0.1",
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, m) in masters.iter().enumerate() {
        let direct = write(dir.path(), &format!("direct{i}.toml"), &feedback(m, false));
        let through = write(dir.path(), &format!("through{i}.toml"), &feedback(m, true));
        let (a, b) = (
            run(&direct, &[], None, None),
            run(&through, &[], None, None),
        );
        assert!(
            a.error.is_none() && b.error.is_none(),
            "{m}: {:?} {:?}",
            a.error,
            b.error
        );
        let (ta, tb) = (a.trace(), b.trace());
        assert_eq!(ta.names, tb.names, "{m}");
        assert!(ta.time().len() > 10, "{m}");
        for (c, name) in ta.names.iter().enumerate() {
            let same = ta.columns[c]
                .iter()
                .zip(&tb.columns[c])
                .all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(
                same && ta.columns[c].len() == tb.columns[c].len(),
                "{m}: column {name} differs through functions"
            );
        }
        // The step logs (step sizes, indicators, iterations) too.
        let (sa, sb) = (a.steps(), b.steps());
        assert_eq!(sa.names, sb.names, "{m}");
        for (c, name) in sa.names.iter().enumerate() {
            let same = sa.columns[c]
                .iter()
                .zip(&sb.columns[c])
                .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()));
            assert!(
                same,
                "{m}: step log column {name} differs through functions"
            );
        }
    }
}

#[test]
fn a_vector_sum_adds_component_by_component() {
    // Three Wide FMUs (200 lags each): w3.u_i = w1.y_i + 2 w2.y_i for
    // i = 1..3 through one vector-sum of dimension 3.
    let w = fmi2("Wide").display().to_string();
    let mut text = format!(
        r#"[simulation]
stop = 0.2

[master]
step = 0.01

[[subsystems]]
name = "w1"
fmu = "{w}"
parameters = {{ x0 = 1.0 }}

[[subsystems]]
name = "w2"
fmu = "{w}"
parameters = {{ x0 = 0.25, tau = 0.05 }}

[[subsystems]]
name = "w3"
fmu = "{w}"

[[functions]]
name = "v"
kind = "vector-sum"
inputs = 2
dimension = 3

[outputs]
variables = ["w1.y[1-3]", "w2.y[1-3]", "v.out*", "w3.u[1-3]"]
"#
    );
    for j in 0..3 {
        text.push_str(&format!(
            "\n[[connections]]\nfrom = \"w1.y{}\"\nto = \"v.in[0][{j}]\"\n\n[[connections]]\nfrom = \"w2.y{}\"\nto = \"v.in[1][{j}]\"\ngain = 2.0\n\n[[connections]]\nfrom = \"v.out[{j}]\"\nto = \"w3.u{}\"\n",
            j + 1,
            j + 1,
            j + 1
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "vsum.toml", &text);
    let r = run(&path, &[], None, None);
    assert!(r.error.is_none(), "{:?}", r.error);
    let t = r.trace();
    for j in 0..3 {
        let (a, b) = (
            col(&t, &format!("w1.y{}", j + 1)),
            col(&t, &format!("w2.y{}", j + 1)),
        );
        let out = col(&t, &format!("v.out[{j}]"));
        let u = col(&t, &format!("w3.u{}", j + 1));
        for k in 0..t.time().len() {
            assert_eq!(out[k].to_bits(), (a[k] + 2.0 * b[k]).to_bits(), "{j} {k}");
            if k > 0 {
                assert_eq!(u[k].to_bits(), out[k - 1].to_bits(), "{j} {k}");
            }
        }
    }
}

/// tests/python/osp/functions: a Sum of two Dahlquist outputs feeding a
/// Gain (whose output feeds one of them back) and a VectorSum of three
/// outputs of two Wide FMUs (variable groups) feeding a third.
fn osp_functions() -> PathBuf {
    cosim_tests::fmus();
    cosim_tests::root().join("tests/python/osp/functions")
}

/// The variables libcosim_b1.py writes: every Real input, output and
/// non-constant local of every simulator.
const EVERY_VARIABLE: [&str; 6] = ["d1.*", "d2.*", "g.*", "w1.*", "w2.*", "w3.*"];

#[test]
fn osp_functions_run_and_convert_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = |d: &str| dir.path().join(d).display().to_string();
    let osp = osp_functions().display().to_string();
    let res = cosim_tests::cosim(&["run", &osp, "--stop", "0.2", "-o", &out("osp")]);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let toml = dir.path().join("converted.toml").display().to_string();
    let res = cosim_tests::cosim(&["convert", &osp, "--to", "toml", "-o", &toml]);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let text = std::fs::read_to_string(&toml).unwrap();
    assert!(text.contains("[[functions]]"), "{text}");
    let res = cosim_tests::cosim(&["run", &toml, "--stop", "0.2", "-o", &out("toml")]);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let a = std::fs::read_to_string(dir.path().join("osp/trace.csv")).unwrap();
    let b = std::fs::read_to_string(dir.path().join("toml/trace.csv")).unwrap();
    assert_eq!(a, b, "the converted scenario runs differently");
}

#[test]
fn osp_functions_are_bit_identical_to_libcosim() {
    let (stop, step) = ("0.2", "0.01");
    let dir = tempfile::tempdir().unwrap();
    let osp = osp_functions();
    let ours_dir = dir.path().join("cosim");
    let mut args = vec!["run", osp.to_str().unwrap(), "--stop", stop, "--step", step];
    let ours_out = ours_dir.display().to_string();
    args.extend(["-o", &ours_out, "--output-variables"]);
    args.extend(EVERY_VARIABLE);
    let res = cosim_tests::cosim(&args);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let theirs_path = dir.path().join("libcosim.csv");
    let res = std::process::Command::new(cosim_tests::python())
        .arg(cosim_tests::root().join("tests/python/libcosim_b1.py"))
        .arg(&theirs_path)
        .args(["--stop", stop, "--step", step, "--osp"])
        .arg(&osp)
        .output()
        .expect("running tests/python/libcosim_b1.py");
    assert!(
        res.status.success(),
        "libcosim_b1.py failed (libcosimpy installed? `cargo xtask test` installs it into .venv/):\n{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let ours = Table::read(&ours_dir.join("trace.csv")).unwrap();
    let theirs = Table::read(&theirs_path).unwrap();
    assert_eq!(ours.names, theirs.names);
    assert_eq!(ours.time().len(), 21);
    let mut differing = Vec::new();
    for (c, name) in ours.names.iter().enumerate() {
        for (k, (x, y)) in ours.columns[c].iter().zip(&theirs.columns[c]).enumerate() {
            if x.to_bits() != y.to_bits() {
                differing.push(format!("{name} row {k}: cosim {x:?}, libcosim {y:?}"));
            }
        }
    }
    assert!(
        differing.is_empty(),
        "{} values differ:\n{}",
        differing.len(),
        differing[..differing.len().min(20)].join("\n")
    );
    // The function-fed inputs are among the columns compared.
    for name in ["g.u", "w3.u1", "w3.u3", "d2.u"] {
        assert!(ours.column(name).is_some(), "{name}");
    }
}
