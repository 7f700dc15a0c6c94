//! The step lane of a host process (`cosim_isolation::protocol::LaneSlot`):
//! the steps of four or more FMUs sharing a host go packed, a round at a
//! time, instead of one batch each in the FMU's own region. It must change
//! nothing but the time: the same bits, the same calls, and every fault
//! reported as when the steps go one by one (`COSIM_ISOLATION_LANE=0`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cosim_tests::{TERMINATION_LOG, cosim_bin, error_lines_pids_masked, fmus, root};

/// Runs `cosim run <scenario> --out <out>` with the termination log on,
/// the lane on or off.
fn run(scenario: &Path, out: &Path, lane: bool) -> Output {
    fmus();
    Command::new(cosim_bin())
        .args(["run", "--no-progress"])
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .env("COSIM_LOG", TERMINATION_LOG)
        .env("COSIM_ISOLATION_LANE", if lane { "1" } else { "0" })
        .current_dir(root())
        .output()
        .expect("running cosim")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn summary(out_dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap()).unwrap()
}

/// A Faulty integrator (x' = u) fed back through a chain of three Gains
/// (u = k1 k2 k3 x = -0.5 x), every FMU isolated in one host process (so
/// four members: their steps go through the lane), the master's keys
/// `master` (`threads = 1` alone: the fixed-step Jacobi master on one
/// thread); stepped every 0.01 s from 0 to 1. With `mode` > 0 the
/// integrator fails in the step from 0.3 to 0.31.
fn chain(dir: &Path, version: &str, mode: i32, master: &str) -> PathBuf {
    let fmu = |name: &str| fmus().join(version).join(name).display().to_string();
    let (fail_mode, fail_at) = if mode > 0 { (mode, 0.305) } else { (1, -1.0) };
    let mut text = format!(
        r#"[simulation]
stop = 1.0

[master]
step = 0.01
{master}
isolation = "process"
isolation_hosts = 1
isolation_timeout = 2

[[subsystems]]
name = "faulty"
fmu = "{faulty}"
parameters = {{ fail_mode = {fail_mode}, fail_at = {fail_at:?}, x0 = 1.0 }}
"#,
        faulty = fmu("Faulty.fmu"),
    );
    for (i, k) in [(1, -2.0), (2, 0.5), (3, 0.5)] {
        text += &format!(
            "\n[[subsystems]]\nname = \"gain{i}\"\nfmu = \"{}\"\nparameters = {{ k = {k:?} }}\n",
            fmu("Gain.fmu")
        );
    }
    for (from, to) in [
        ("faulty.x", "gain1.u"),
        ("gain1.y", "gain2.u"),
        ("gain2.y", "gain3.u"),
        ("gain3.y", "faulty.u"),
    ] {
        text += &format!("\n[[connections]]\nfrom = \"{from}\"\nto = \"{to}\"\n");
    }
    let tag: String = master.chars().filter(char::is_ascii_alphanumeric).collect();
    let path = dir.join(format!("chain_{version}_{mode}_{tag}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn steps_through_a_hosts_lane_give_the_bits_and_calls_of_steps_sent_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    // Jacobi on one master thread and on two (both post into the one
    // lane), Gauss-Seidel (a round per step), and masters that save,
    // restore and repeat steps.
    let masters = [
        "threads = 1",
        "threads = 2",
        "threads = 1\nscheme = \"gauss-seidel\"",
        "threads = 1\nkind = \"predictor-corrector\"",
        "threads = 1\nkind = \"ifosmondi\"",
        "threads = 1\nkind = \"nepce\"",
    ];
    for v in ["fmi2", "fmi3"] {
        for (m, master) in masters.iter().enumerate() {
            let scenario = chain(dir.path(), v, 0, master);
            let mut runs = Vec::new();
            for lane in [false, true] {
                let out_dir = dir.path().join(format!("out_{v}_{m}_{lane}"));
                let out = run(&scenario, &out_dir, lane);
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{v}, {master}: {}",
                    stderr(&out)
                );
                runs.push(out_dir);
            }
            let [one_by_one, lane] = &runs[..] else {
                unreachable!()
            };
            let trace = std::fs::read(lane.join("trace.csv")).unwrap();
            assert_eq!(
                trace,
                std::fs::read(one_by_one.join("trace.csv")).unwrap(),
                "{v}, {master}: the traces differ"
            );
            let (a, b) = (summary(one_by_one), summary(lane));
            assert_eq!(a["calls"], b["calls"], "{v}, {master}");
            assert_eq!(a["stats"], b["stats"], "{v}, {master}");
            // The system is x' = -0.5 x: the trace is that, not zeros.
            let text = String::from_utf8(trace).unwrap();
            let last = text.lines().last().unwrap();
            let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
            let x = header.iter().position(|c| *c == "faulty.x").unwrap();
            let fields: Vec<f64> = last.split(',').map(|f| f.parse().unwrap()).collect();
            assert!((fields[0] - 1.0).abs() < 1e-12, "{last}");
            assert!(
                (fields[x] - (-0.5f64).exp()).abs() < 1e-2,
                "{v}, {master}: x(1) = {} (e^-0.5 = {})",
                fields[x],
                (-0.5f64).exp()
            );
        }
    }
}

#[test]
fn every_fault_in_a_lane_step_is_reported_as_in_a_step_sent_alone() {
    // Error, Discard, NaN, SIGSEGV, abort(), a hang, Fatal and exit(3) in
    // the step from 0.3: the answer comes back through the FMU's own
    // region (or the host is gone) and must read the same.
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        for mode in [1, 2, 3, 4, 5, 6, 7, 9] {
            let scenario = chain(dir.path(), v, mode, "threads = 1");
            let mut seen = Vec::new();
            for lane in [false, true] {
                let out_dir = dir.path().join(format!("out_{v}_{mode}_{lane}"));
                let out = run(&scenario, &out_dir, lane);
                let err = stderr(&out);
                assert_eq!(out.status.code(), Some(1), "{v} mode {mode}: {err}");
                assert!(!err.contains("panicked"), "{err}");
                let errors = error_lines_pids_masked(&err);
                assert!(
                    errors.iter().any(|l| l.contains("'faulty'")),
                    "{v} mode {mode}: the error does not name the failed FMU: {err}"
                );
                let s = summary(&out_dir);
                seen.push((
                    errors,
                    std::fs::read(out_dir.join("trace.csv")).unwrap(),
                    s["t_reached"].clone(),
                    s["stats"]["macro_steps"].clone(),
                ));
            }
            assert_eq!(
                seen[0].0, seen[1].0,
                "{v} mode {mode}: errors (steps one by one, then through the lane)"
            );
            assert!(seen[0].1 == seen[1].1, "{v} mode {mode}: the traces differ");
            assert_eq!(seen[0].2, seen[1].2, "{v} mode {mode}");
            assert_eq!(seen[0].3, seen[1].3, "{v} mode {mode}");
        }
    }
}
