//! Held runs in a host process (`cosim_core::hosted`): a system whose
//! FMUs all live in one host hands each quiet stretch of fixed-step
//! Jacobi steps to it, one request per stretch. It must change nothing
//! but the time: the same bits, the same calls, and every fault reported
//! as when the steps go one by one (`COSIM_ISOLATION_RUNS=0`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cosim_tests::{TERMINATION_LOG, cosim_bin, error_lines_pids_masked, fmus, root};

/// The debug line the fixed-step master writes for each stretch taken in
/// one go.
const STRETCH: &str = "in one quiet run";

/// Runs `cosim run <scenario> --out <out>` with the termination log and
/// the fixed-step master's debug lines on, held runs on or off.
fn run(scenario: &Path, out: &Path, held: bool) -> Output {
    run_with(scenario, out, held, &[])
}

/// [`run`] with more arguments.
fn run_with(scenario: &Path, out: &Path, held: bool, extra: &[&str]) -> Output {
    fmus();
    Command::new(cosim_bin())
        .args(["run", "--no-progress"])
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .args(extra)
        .env(
            "COSIM_LOG",
            format!("{TERMINATION_LOG},cosim_core::master::fixed_step=debug"),
        )
        .env("COSIM_ISOLATION_RUNS", if held { "1" } else { "0" })
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
/// (u = k1 k2 k3 x = -0.5 x), every FMU isolated in one host process, the
/// fixed-step Jacobi master with the keys `master`, stepped every 0.01 s
/// from 0 to 1 and traced every 0.1 s, no other output (the nine steps
/// between two rows are a quiet stretch). The integrator is the first subsystem, or the
/// last with `faulty_last`. With `mode` > 0 it fails in the step from
/// 0.35 to 0.36 (the sixth of its stretch). With `clean_loop`, a second
/// loop that no fault reaches comes first: an integrator `clean` fed back
/// through a Gain (x' = -x).
fn chain(
    dir: &Path,
    version: &str,
    mode: i32,
    master: &str,
    (faulty_last, clean_loop): (bool, bool),
) -> PathBuf {
    let fmu = |name: &str| fmus().join(version).join(name).display().to_string();
    let (fail_mode, fail_at) = if mode > 0 { (mode, 0.355) } else { (1, -1.0) };
    let faulty = format!(
        "\n[[subsystems]]\nname = \"faulty\"\nfmu = \"{}\"\nparameters = {{ fail_mode = {fail_mode}, fail_at = {fail_at:?}, x0 = 1.0 }}\n",
        fmu("Faulty.fmu")
    );
    let mut text = format!(
        r#"[simulation]
stop = 1.0

[master]
kind = "fixed-step"
step = 0.01
{master}
isolation = "process"
isolation_hosts = 1
isolation_timeout = 2

[outputs]
interval = 0.1
step_log = false
energy_log = false
"#
    );
    if clean_loop {
        text += &format!(
            "\n[[subsystems]]\nname = \"clean\"\nfmu = \"{}\"\nparameters = {{ x0 = 1.0 }}\n\n[[subsystems]]\nname = \"gain4\"\nfmu = \"{}\"\nparameters = {{ k = -1.0 }}\n",
            fmu("Faulty.fmu"),
            fmu("Gain.fmu")
        );
        for (from, to) in [("clean.x", "gain4.u"), ("gain4.y", "clean.u")] {
            text += &format!("\n[[connections]]\nfrom = \"{from}\"\nto = \"{to}\"\n");
        }
    }
    if !faulty_last {
        text += &faulty;
    }
    for (i, k) in [(1, -2.0), (2, 0.5), (3, 0.5)] {
        text += &format!(
            "\n[[subsystems]]\nname = \"gain{i}\"\nfmu = \"{}\"\nparameters = {{ k = {k:?} }}\n",
            fmu("Gain.fmu")
        );
    }
    if faulty_last {
        text += &faulty;
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
    let path = dir.join(format!(
        "chain_{version}_{mode}_{tag}_{faulty_last}_{clean_loop}.toml"
    ));
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `scenario` with held runs off, then on; asserts that only the
/// second took stretches in one go (that it took any, only without a
/// worker pool); returns both runs' output directories and standard
/// errors.
fn both(scenario: &Path, dir: &Path, tag: &str, code: i32) -> [(PathBuf, String); 2] {
    both_with(scenario, dir, tag, code, false)
}

/// [`both`], with each run's FMI calls logged to `calls.log` in its
/// output directory where `call_log` (the host then steps each FMU
/// through its calls one by one, not through its bound step).
fn both_with(
    scenario: &Path,
    dir: &Path,
    tag: &str,
    code: i32,
    call_log: bool,
) -> [(PathBuf, String); 2] {
    // (With a worker pool the stretches are taken while the pool is
    // measured not to pay off: on a loaded machine it may measure faster
    // for the whole run, and the run then takes none.)
    let pooled = std::fs::read_to_string(scenario)
        .unwrap()
        .contains("threads = 2");
    [false, true].map(|held| {
        let out_dir = dir.join(format!("out_{tag}_{held}"));
        std::fs::create_dir_all(&out_dir).unwrap();
        let log = format!("--log-fmi-calls={}", out_dir.join("calls.log").display());
        let extra: &[&str] = if call_log { &[&log] } else { &[] };
        let out = run_with(scenario, &out_dir, held, extra);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{tag}, held {held}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        if !(held && pooled) {
            assert_eq!(
                err.contains(STRETCH),
                held,
                "{tag}, held {held}: stretches taken in one go: {err}"
            );
        }
        (out_dir, err)
    })
}

#[test]
fn held_runs_in_a_host_give_the_bits_and_calls_of_steps_sent_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        for master in ["threads = 1", "threads = 2"] {
            for faulty_last in [false, true] {
                let scenario = chain(dir.path(), v, 0, master, (faulty_last, false));
                let tag = format!("{v}_{}_{faulty_last}", master.len());
                let [(one_by_one, _), (held, _)] = both(&scenario, dir.path(), &tag, 0);
                let trace = std::fs::read(held.join("trace.csv")).unwrap();
                assert_eq!(
                    trace,
                    std::fs::read(one_by_one.join("trace.csv")).unwrap(),
                    "{tag}: the traces differ"
                );
                let (a, b) = (summary(&one_by_one), summary(&held));
                assert_eq!(a["calls"], b["calls"], "{tag}");
                assert_eq!(a["subsystems"], b["subsystems"], "{tag}");
                assert_eq!(a["stats"], b["stats"], "{tag}");
                assert_eq!(a["t_reached"], b["t_reached"], "{tag}");
                // The system is x' = -0.5 x: the trace is that, not zeros,
                // with a row every 0.1 s.
                let text = String::from_utf8(trace).unwrap();
                assert_eq!(text.lines().count(), 12, "{tag}: {text}");
                let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
                let x = header.iter().position(|c| *c == "faulty.x").unwrap();
                let last = text.lines().last().unwrap();
                let fields: Vec<f64> = last.split(',').map(|f| f.parse().unwrap()).collect();
                assert!((fields[0] - 1.0).abs() < 1e-12, "{last}");
                assert!(
                    (fields[x] - (-0.5f64).exp()).abs() < 1e-2,
                    "{tag}: x(1) = {} (e^-0.5 = {})",
                    fields[x],
                    (-0.5f64).exp()
                );
            }
        }
    }
}

#[test]
fn every_fault_in_a_held_run_is_reported_as_in_steps_sent_one_by_one() {
    // Error, Discard, NaN, SIGSEGV, abort(), a hang, Fatal and exit(3) in
    // the sixth step of a stretch, by the run's first member (which sends
    // the run) and by its last (the others took that step before it).
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        for mode in [1, 2, 3, 4, 5, 6, 7, 9] {
            for faulty_last in [false, true] {
                let scenario = chain(dir.path(), v, mode, "threads = 1", (faulty_last, false));
                let tag = format!("{v} mode {mode} last {faulty_last}");
                let seen =
                    both(&scenario, dir.path(), &tag.replace(' ', "_"), 1).map(|(out_dir, err)| {
                        let errors = error_lines_pids_masked(&err);
                        assert!(
                            errors.iter().any(|l| l.contains("'faulty'")),
                            "{tag}: the error does not name the failed FMU: {err}"
                        );
                        let s = summary(&out_dir);
                        (
                            errors,
                            std::fs::read(out_dir.join("trace.csv")).unwrap(),
                            s["t_reached"].clone(),
                            s["stats"]["macro_steps"].clone(),
                        )
                    });
                assert_eq!(seen[0].0, seen[1].0, "{tag}: errors (one by one, held)");
                assert!(seen[0].1 == seen[1].1, "{tag}: the traces differ");
                assert_eq!(seen[0].2, seen[1].2, "{tag}");
                assert_eq!(seen[0].3, seen[1].3, "{tag}");
                // The failing step is the one from 0.35.
                assert_eq!(seen[1].2.as_f64(), Some(0.35), "{tag}");
            }
        }
    }
}

#[test]
fn a_value_a_held_run_stops_at_and_the_system_only_warns_about_goes_on_as_one_by_one() {
    // A NaN output under `nonfinite = "warn"`: the run stops at it, the
    // system warns and the steps go on (and take stretches again). The
    // loop the NaN does not reach shows that the members before the
    // stopped one took that step with the values they read after it.
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        for faulty_last in [false, true] {
            let master = "threads = 1\nnonfinite = \"warn\"";
            let scenario = chain(dir.path(), v, 3, master, (faulty_last, true));
            let tag = format!("{v}_nan_warn_{faulty_last}");
            let [(a, ea), (b, eb)] = both(&scenario, dir.path(), &tag, 0);
            assert_eq!(
                error_lines_pids_masked(&ea),
                error_lines_pids_masked(&eb),
                "{tag}"
            );
            assert!(
                error_lines_pids_masked(&eb)
                    .iter()
                    .any(|l| l.contains("NaN")),
                "{tag}: {eb}"
            );
            assert!(
                std::fs::read(a.join("trace.csv")).unwrap()
                    == std::fs::read(b.join("trace.csv")).unwrap(),
                "{tag}: the traces differ"
            );
            let (sa, sb) = (summary(&a), summary(&b));
            assert_eq!(sa["calls"], sb["calls"], "{tag}");
            assert_eq!(sa["t_reached"].as_f64(), Some(1.0), "{tag}");
            assert_eq!(sa["stats"], sb["stats"], "{tag}");
            // The loop the NaN does not reach, as in a run without it.
            let column = |out: &Path| {
                let text = std::fs::read_to_string(out.join("trace.csv")).unwrap();
                let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
                let x = header.iter().position(|c| *c == "clean.x").unwrap();
                text.lines()
                    .map(|l| l.split(',').nth(x).unwrap().to_string())
                    .collect::<Vec<_>>()
            };
            let fine = chain(dir.path(), v, 0, master, (faulty_last, true));
            let out = dir.path().join(format!("out_{tag}_fine"));
            assert_eq!(run(&fine, &out, true).status.code(), Some(0), "{tag}");
            assert_eq!(column(&b), column(&out), "{tag}: the loop without NaN");
        }
    }
}

/// A call log, the instantiations' arguments left out (each run has its
/// own extraction directory, and an FMI 3 instance its callback's
/// address).
///
/// The instances freed at the end of the run, in name order: their host
/// frees each when it sees its request, and a host woken after the
/// master asked for all of them serves them from where its scan of its
/// FMUs is, not always in the system's order (an order the standard
/// does not fix).
fn calls(out_dir: &Path) -> Vec<String> {
    let mut calls: Vec<String> = std::fs::read_to_string(out_dir.join("calls.log"))
        .unwrap()
        .lines()
        .map(|l| match l.find("Instantiate") {
            Some(i) => l[..i].to_string(),
            None => l.to_string(),
        })
        .collect();
    let freed = calls
        .iter()
        .rev()
        .take_while(|c| c.contains("FreeInstance"))
        .count();
    let at = calls.len() - freed;
    calls[at..].sort();
    calls
}

/// Two runs' error lines (the process ids masked) and traces are the
/// same.
fn assert_same_errors_and_trace(tag: &str, (a, ea): (&Path, &str), (b, eb): (&Path, &str)) {
    assert_eq!(
        error_lines_pids_masked(ea),
        error_lines_pids_masked(eb),
        "{tag}"
    );
    assert!(
        std::fs::read(a.join("trace.csv")).unwrap() == std::fs::read(b.join("trace.csv")).unwrap(),
        "{tag}: the traces differ"
    );
}

/// [`calls`] up to the first that did not succeed, that one included.
fn calls_up_to_failure(out_dir: &Path) -> Vec<String> {
    let all = calls(out_dir);
    let end = all.iter().position(|c| !c.starts_with("[OK]"));
    all[..end.map_or(all.len(), |e| e + 1)].to_vec()
}

#[test]
fn held_runs_of_fmus_stepped_call_by_call_give_the_calls_and_bits_of_steps_one_by_one() {
    // With the FMI call log on (and for Model Exchange FMUs) the host
    // makes each FMU's three calls through the instance, not through a
    // step bound once: the same calls in the log, the same faults.
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        for (mode, code) in [(0, 0), (1, 1), (2, 1), (4, 1)] {
            for faulty_last in [false, true] {
                let scenario = chain(dir.path(), v, mode, "threads = 1", (faulty_last, false));
                let tag = format!("{v}_logged_{mode}_{faulty_last}");
                let [(a, ea), (b, eb)] = both_with(&scenario, dir.path(), &tag, code, true);
                assert_same_errors_and_trace(&tag, (&a, &ea), (&b, &eb));
                // The calls up to the failed one (after it, the FMUs whose
                // steps the steps one by one had started complete them;
                // a stretch's stops where the error ends the run).
                let (la, lb) = (calls_up_to_failure(&a), calls_up_to_failure(&b));
                assert!(
                    la.iter().filter(|l| l.contains("DoStep")).count() > 100,
                    "{tag}"
                );
                if let Some(i) = (0..la.len().max(lb.len())).find(|&i| la.get(i) != lb.get(i)) {
                    panic!(
                        "{tag}: FMI call {i} differs: {:?} (one by one), {:?} (held)",
                        la.get(i),
                        lb.get(i)
                    );
                }
                let (sa, sb) = (summary(&a), summary(&b));
                assert_eq!(sa["t_reached"], sb["t_reached"], "{tag}");
                assert_eq!(
                    sa["stats"]["macro_steps"], sb["stats"]["macro_steps"],
                    "{tag}"
                );
            }
        }
        // Model Exchange FMUs, integrated in the host.
        let me = |name: &str| fmus().join("me").join(v).join(name).display().to_string();
        let scenario = dir.path().join(format!("me_{v}.toml"));
        std::fs::write(
            &scenario,
            format!(
                r#"[simulation]
stop = 3.0

[master]
kind = "fixed-step"
step = 0.001
threads = 1
isolation = "process"
isolation_hosts = 1

[outputs]
interval = 0.05
step_log = false
energy_log = false

[[subsystems]]
name = "ball"
fmu = "{}"

[[subsystems]]
name = "events"
fmu = "{}"
"#,
                me("BouncingBallME.fmu"),
                me("TimeEvents.fmu")
            ),
        )
        .unwrap();
        let tag = format!("{v}_me");
        let [(a, _), (b, _)] = both(&scenario, dir.path(), &tag, 0);
        assert!(
            std::fs::read(a.join("trace.csv")).unwrap()
                == std::fs::read(b.join("trace.csv")).unwrap(),
            "{tag}: the traces differ"
        );
        let (sa, sb) = (summary(&a), summary(&b));
        assert_eq!(sa["subsystems"], sb["subsystems"], "{tag}");
        assert_eq!(sa["t_reached"].as_f64(), Some(3.0), "{tag}");
    }
}

/// `scenario` with its trace written every step and showing `variables`,
/// and a step log (a copy beside it, `tag` in its name).
fn traced_every_step(scenario: &Path, tag: &str, variables: &str) -> PathBuf {
    let text = std::fs::read_to_string(scenario).unwrap();
    assert!(text.contains("interval = 0.1\n"), "{text}");
    assert!(text.contains("step_log = false\n"), "{text}");
    let text = text
        .replace("interval = 0.1\n", &format!("variables = [{variables}]\n"))
        .replace("step_log = false\n", "step_log = true\n");
    let path = scenario.with_file_name(format!("every_step_{tag}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_trace_of_every_step_is_recorded_by_the_host_with_the_bits_of_steps_one_by_one() {
    // A row every step keeps the run on its quiet path: the host records
    // the traced values after each step of a held run, and the rows are
    // written from that record (the step log's too, from the steps'
    // times). Traced: a value the coupling uses, one it
    // does not (the Faulty FMU's local state, read only for the trace)
    // and one in between. Clean runs, and runs stopped in a request's
    // sixth step by an error, a NaN the system refuses, and a crash (the
    // rows of the steps the host completed before it).
    let dir = tempfile::tempdir().unwrap();
    let variables = r#""faulty.x_state", "gain2.y", "faulty.x""#;
    for v in ["fmi2", "fmi3"] {
        for (mode, code) in [(0, 0), (1, 1), (3, 1), (4, 1)] {
            for faulty_last in [false, true] {
                let tag = format!("{v}_every_step_{mode}_{faulty_last}");
                let scenario = chain(dir.path(), v, mode, "threads = 1", (faulty_last, false));
                let scenario = traced_every_step(&scenario, &tag, variables);
                let [(a, ea), (b, eb)] = both(&scenario, dir.path(), &tag, code);
                assert_eq!(
                    error_lines_pids_masked(&ea),
                    error_lines_pids_masked(&eb),
                    "{tag}"
                );
                let trace = std::fs::read_to_string(b.join("trace.csv")).unwrap();
                assert!(
                    std::fs::read_to_string(a.join("trace.csv")).unwrap() == trace,
                    "{tag}: the traces differ"
                );
                let steps = std::fs::read_to_string(b.join("steps.csv")).unwrap();
                assert_eq!(steps.lines().count(), trace.lines().count() - 1, "{tag}");
                assert!(
                    std::fs::read_to_string(a.join("steps.csv")).unwrap() == steps,
                    "{tag}: the step logs differ"
                );
                let (sa, sb) = (summary(&a), summary(&b));
                assert_eq!(sa["t_reached"], sb["t_reached"], "{tag}");
                assert_eq!(sa["stats"], sb["stats"], "{tag}");
                // (The steps one by one read the value no connection uses
                // after each step, apart: one more read each. Where an
                // error ends the run, they had started the FMUs after the
                // failed one.)
                for c in ["do_step", "set_inputs", "stepped_time"] {
                    if mode == 0 {
                        assert_eq!(sa["calls"][c], sb["calls"][c], "{tag}: {c}");
                    }
                }
                // A row every step, each with its own values: x' = -0.5 x
                // from x = 1, x_state the same as x.
                let rows: Vec<Vec<f64>> = trace
                    .lines()
                    .skip(1)
                    .map(|l| l.split(',').map(|f| f.parse().unwrap()).collect())
                    .collect();
                let last_t = if mode == 0 { 1.0 } else { 0.35 };
                assert_eq!(
                    rows.len(),
                    (last_t * 100.0_f64).round() as usize + 1,
                    "{tag}"
                );
                for (i, r) in rows.iter().enumerate() {
                    let t = i as f64 * 0.01;
                    assert!((r[0] - t).abs() < 1e-9, "{tag}: row {i}: {r:?}");
                    assert!(
                        (r[1] - (-0.5 * t).exp()).abs() < 1e-2,
                        "{tag}: row {i}: {r:?}"
                    );
                    assert_eq!(r[1].to_bits(), r[3].to_bits(), "{tag}: row {i}: {r:?}");
                }
            }
        }
        // A NaN the system only warns about: the request stops at it, the
        // run goes on (new requests, new records), and the loop the NaN
        // does not reach shows every step's own values; a row every third
        // step, by a decimation or by an interval (as dense: recorded by
        // the host too).
        for (faulty_last, sampling) in [
            (false, "decimation = 3"),
            (true, "decimation = 3"),
            (false, "interval = 0.03"),
            (true, "interval = 0.03"),
        ] {
            let kind = &sampling[..8];
            let tag = format!("{v}_every_step_nan_warn_{faulty_last}_{kind}");
            let master = "threads = 1\nnonfinite = \"warn\"";
            let scenario = chain(dir.path(), v, 3, master, (faulty_last, true));
            let variables = r#""clean.x", "faulty.x", "gain4.y""#;
            let scenario = traced_every_step(&scenario, &tag, variables);
            let text = std::fs::read_to_string(&scenario).unwrap();
            std::fs::write(
                &scenario,
                text.replace("[outputs]\n", &format!("[outputs]\n{sampling}\n")),
            )
            .unwrap();
            let [(a, ea), (b, eb)] = both(&scenario, dir.path(), &tag, 0);
            assert_eq!(
                error_lines_pids_masked(&ea),
                error_lines_pids_masked(&eb),
                "{tag}"
            );
            for file in ["trace.csv", "steps.csv"] {
                assert!(
                    std::fs::read(a.join(file)).unwrap() == std::fs::read(b.join(file)).unwrap(),
                    "{tag}: {file} differs"
                );
            }
            // Rows at 0, every third step and the stop; clean.x = e^-t.
            // (A NaN is an empty cell.)
            let trace = std::fs::read_to_string(b.join("trace.csv")).unwrap();
            let rows: Vec<Vec<f64>> = trace
                .lines()
                .skip(1)
                .map(|l| {
                    l.split(',')
                        .map(|f| f.parse().unwrap_or(f64::NAN))
                        .collect()
                })
                .collect();
            assert!(rows.iter().any(|r| r[2].is_nan()), "{tag}: {trace}");
            assert_eq!(rows.len(), 1 + 33 + 1, "{tag}");
            for r in &rows {
                assert!((r[1] - (-r[0]).exp()).abs() < 1e-2, "{tag}: {r:?}");
            }
        }
        // The host stepping each FMU call by call (the FMI call log on)
        // records them alike.
        let tag = format!("{v}_every_step_logged");
        let scenario = chain(dir.path(), v, 0, "threads = 1", (true, false));
        let scenario = traced_every_step(&scenario, &tag, variables);
        let [(a, _), (b, _)] = both_with(&scenario, dir.path(), &tag, 0, true);
        let trace = std::fs::read_to_string(b.join("trace.csv")).unwrap();
        assert_eq!(trace.lines().count(), 102, "{tag}");
        assert!(
            std::fs::read_to_string(a.join("trace.csv")).unwrap() == trace,
            "{tag}: the traces differ"
        );
    }
}

#[test]
fn a_trace_wider_than_a_requests_record_is_taken_in_shorter_requests() {
    // Two Wide FMUs (200 first-order lags each) coupled both ways, every
    // output and input traced every step: 800 values a step, so a request
    // records at most 81 steps (2^16 values), fewer than the first request
    // would take (128), and the master sizes its requests to fit (the
    // host refuses a request whose record would not). The same trace as
    // the steps one by one.
    let dir = tempfile::tempdir().unwrap();
    let fmu = fmus().join("fmi2").join("Wide.fmu").display().to_string();
    let variables: Vec<String> = ["y", "u"]
        .iter()
        .flat_map(|v| ["a", "b"].map(|s| (s, v)))
        .flat_map(|(s, v)| (1..=200).map(move |i| format!("\"{s}.{v}{i}\"")))
        .collect();
    let variables = variables.join(", ");
    let mut text = format!(
        r#"[simulation]
stop = 0.3

[master]
kind = "fixed-step"
step = 0.001
threads = 1
isolation = "process"
isolation_hosts = 1

[outputs]
step_log = false
energy_log = false
variables = [{variables}]

[[subsystems]]
name = "a"
fmu = "{fmu}"
parameters = {{ x0 = 1.0 }}

[[subsystems]]
name = "b"
fmu = "{fmu}"
parameters = {{ x0 = 0.0, tau = 0.05 }}
"#
    );
    for i in 1..=200 {
        text += &format!(
            "\n[[connections]]\nfrom = \"a.y{i}\"\nto = \"b.u{i}\"\n\n[[connections]]\nfrom = \"b.y{i}\"\nto = \"a.u{}\"\n",
            201 - i
        );
    }
    let scenario = dir.path().join("wide.toml");
    std::fs::write(&scenario, text).unwrap();
    let [(a, _), (b, _)] = both(&scenario, dir.path(), "wide", 0);
    let trace = std::fs::read_to_string(b.join("trace.csv")).unwrap();
    assert!(
        std::fs::read_to_string(a.join("trace.csv")).unwrap() == trace,
        "the traces differ"
    );
    let rows: Vec<Vec<f64>> = trace
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|f| f.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 301);
    assert_eq!(rows[0].len(), 801);
    // Each row its own step's values: b's lags rise from 0 towards a's.
    for (i, pair) in rows.windows(2).enumerate() {
        assert!(pair[1][201] > pair[0][201], "row {i}: {:?}", &pair[1][..3]);
    }
}

#[test]
fn gauss_seidel_held_runs_in_a_host_give_the_bits_of_steps_sent_one_by_one() {
    // Gauss-Seidel in its order from the connections (the integrator,
    // which does not feed through, first: the system's first subsystem or
    // its last), the host routing each FMU's inputs just before its step.
    // Clean, traced at an interval and every step (recorded, with a step
    // log); Error, Discard, a NaN refused and a crash in a request's
    // sixth step; a NaN only warned about, with a second loop.
    let dir = tempfile::tempdir().unwrap();
    let master = "threads = 1\nscheme = \"gauss-seidel\"";
    for v in ["fmi2", "fmi3"] {
        for faulty_last in [false, true] {
            for (mode, code) in [(0, 0), (1, 1), (2, 1), (3, 1), (4, 1)] {
                let tag = format!("{v}_gs_{mode}_{faulty_last}");
                let scenario = chain(dir.path(), v, mode, master, (faulty_last, false));
                for every_step in [false, true] {
                    let (scenario, tag) = if every_step {
                        let tag = format!("{tag}_every_step");
                        let vars = r#""faulty.x_state", "gain2.y", "faulty.x""#;
                        (traced_every_step(&scenario, &tag, vars), tag)
                    } else {
                        (scenario.clone(), tag.clone())
                    };
                    let [(a, ea), (b, eb)] = both(&scenario, dir.path(), &tag, code);
                    assert_eq!(
                        error_lines_pids_masked(&ea),
                        error_lines_pids_masked(&eb),
                        "{tag}"
                    );
                    for file in ["trace.csv", "steps.csv"] {
                        let read = |d: &Path| std::fs::read(d.join(file)).ok();
                        assert!(read(&a) == read(&b), "{tag}: {file} differs");
                    }
                    let (sa, sb) = (summary(&a), summary(&b));
                    assert_eq!(sa["t_reached"], sb["t_reached"], "{tag}");
                    assert_eq!(sa["stats"], sb["stats"], "{tag}");
                    if mode == 0 && !every_step {
                        assert_eq!(sa["calls"], sb["calls"], "{tag}");
                        assert_eq!(sa["subsystems"], sb["subsystems"], "{tag}");
                    }
                    let reached = if mode == 0 { 1.0 } else { 0.35 };
                    assert_eq!(sb["t_reached"].as_f64(), Some(reached), "{tag}");
                }
            }
            let tag = format!("{v}_gs_nan_warn_{faulty_last}");
            let warn = format!("{master}\nnonfinite = \"warn\"");
            let scenario = chain(dir.path(), v, 3, &warn, (faulty_last, true));
            let [(a, ea), (b, eb)] = both(&scenario, dir.path(), &tag, 0);
            assert_same_errors_and_trace(&tag, (&a, &ea), (&b, &eb));
            assert_eq!(summary(&a)["calls"], summary(&b)["calls"], "{tag}");
            // The host stepping each FMU call by call (the FMI call log
            // on): the same calls up to the failed one.
            for (mode, code) in [(0, 0), (1, 1)] {
                let tag = format!("{v}_gs_logged_{mode}_{faulty_last}");
                let scenario = chain(dir.path(), v, mode, master, (faulty_last, false));
                let [(a, _), (b, _)] = both_with(&scenario, dir.path(), &tag, code, true);
                assert!(
                    std::fs::read(a.join("trace.csv")).unwrap()
                        == std::fs::read(b.join("trace.csv")).unwrap(),
                    "{tag}: the traces differ"
                );
                assert_eq!(calls_up_to_failure(&a), calls_up_to_failure(&b), "{tag}");
            }
        }
    }
}
