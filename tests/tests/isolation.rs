//! Process isolation (`isolation = "process"`): every fail mode of the
//! `Faulty` FMU, isolated, has its documented outcome (an FMU crash, abort
//! or hang ends the host process, not the run); a healthy isolated run is
//! bit-identical to the in-process run; FMU states are saved, restored and
//! serialized across the process boundary; the master never waits for a
//! dead host.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cosim_core::Subsystem;
use cosim_fmi::{Fmu, InstantiateOptions, StepOutcome};
use cosim_isolation::{HostPool, IsolatedSubsystem, IsolationSettings};
use cosim_tests::{TERMINATION_LOG, cosim_bin, error_lines_pids_masked, fmus, root, run_logged};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `cosim run <scenario> --out <out>` with the termination log on.
fn run_cli(scenario: &Path, out: &Path) -> Output {
    run_logged(scenario, out, &[])
}

fn summary(out_dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap()).unwrap()
}

/// The processes whose command line mentions `path` (hosts of an FMU
/// copied there).
fn processes_mentioning(path: &Path) -> Vec<String> {
    let needle = path.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&needle) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// A Faulty integrator (x' = u) isolated, fed back through an in-process
/// Gain (u = -0.5 x), stepped every 0.01 s from 0 to 1; it fails in the
/// step from 0.3 to 0.31. The Faulty FMU is copied to `dir` so that its
/// host can be recognised by its command line.
fn faulty_scenario(dir: &Path, version: &str, mode: i32) -> (PathBuf, PathBuf) {
    let faulty = dir.join(format!("Faulty_{version}_{mode}.fmu"));
    std::fs::copy(fmus().join(version).join("Faulty.fmu"), &faulty).unwrap();
    let text = format!(
        r#"[simulation]
stop = 1.0

[master]
step = 0.01

[[subsystems]]
name = "faulty"
fmu = "{faulty}"
parameters = {{ fail_mode = {mode}, fail_at = 0.305, x0 = 1.0 }}
isolation = "process"
isolation_timeout = 2

[[subsystems]]
name = "gain"
fmu = "{gain}"
parameters = {{ k = -0.5 }}

[[connections]]
from = "faulty.x"
to = "gain.u"

[[connections]]
from = "gain.y"
to = "faulty.u"
"#,
        faulty = faulty.display(),
        gain = fmus().join(version).join("Gain.fmu").display(),
    );
    let path = dir.join(format!("faulty_{version}_{mode}.toml"));
    std::fs::write(&path, text).unwrap();
    (path, faulty)
}

/// Every line of the trace is complete and the times increase; returns them.
fn trace_times(path: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.ends_with('\n'),
        "the trace ends in the middle of a row"
    );
    let mut lines = text.lines();
    let width = lines.next().unwrap().split(',').count();
    lines
        .map(|line| {
            let fields: Vec<f64> = line.split(',').map(|f| f.parse().unwrap()).collect();
            assert_eq!(fields.len(), width, "incomplete row: {line}");
            fields[0]
        })
        .collect()
}

/// What every isolated fault has in common: exit status 1, a clean stop
/// with every completed row (t = 0 .. 0.3), the healthy FMU terminated,
/// no host left behind.
fn assert_isolated_stop(out: &Output, out_dir: &Path, fmu_copy: &Path) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let t = trace_times(&out_dir.join("trace.csv"));
    assert_eq!(t.len(), 31, "{t:?}");
    assert!((t[30] - 0.3).abs() < 1e-12);
    let s = summary(out_dir);
    assert_eq!(s["status"], "error");
    assert!((s["t_reached"].as_f64().unwrap() - 0.3).abs() < 1e-12);
    assert_eq!(s["stats"]["macro_steps"], 30);
    assert!(err.contains("subsystem 'gain' terminated"), "{err}");
    assert!(
        err.contains("the outputs hold every completed step up to t = 0.3"),
        "{err}"
    );
    let left = processes_mentioning(fmu_copy);
    assert!(left.is_empty(), "host processes left behind: {left:?}");
    err
}

#[test]
fn every_fault_of_an_isolated_fmu_stops_the_run_cleanly_with_its_documented_message() {
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        for mode in 1..=7 {
            let (scenario, fmu_copy) = faulty_scenario(dir.path(), v, mode);
            let out_dir = dir.path().join(format!("out_{v}_{mode}"));
            let start = Instant::now();
            let out = run_cli(&scenario, &out_dir);
            let elapsed = start.elapsed();
            let err = assert_isolated_stop(&out, &out_dir, &fmu_copy);
            let message = summary(&out_dir)["message"].as_str().unwrap().to_string();
            let expect = |what: &str| {
                assert!(
                    err.contains(what),
                    "{v} mode {mode}: {what:?} missing in\n{err}"
                );
            };
            match mode {
                // FMU statuses cross the boundary unchanged: the messages
                // are the in-process ones.
                1 => {
                    expect(&format!(
                        "error: FMU instance 'faulty': {v}DoStep returned Error at t = 0.3; the FMU logged:"
                    ));
                    expect("(fail_mode 1): returning Error");
                    expect("subsystem 'faulty' failed: not terminated");
                }
                2 => {
                    let last = if v == "fmi2" {
                        "fmi2LastSuccessfulTime"
                    } else {
                        "lastSuccessfulTime"
                    };
                    expect(&format!(
                        "error: FMU instance 'faulty': {v}DoStep returned Discard in the step from t = 0.3 to 0.31: "
                    ));
                    expect(&format!("the FMU stopped at {last} = 0.305"));
                    expect("the FMU logged:\n  [Discard]");
                    expect("subsystem 'faulty' terminated");
                }
                3 => {
                    expect(
                        "error: subsystem 'faulty': variable 'x' is NaN at t = 0.31: the co-simulation diverged",
                    );
                    expect("subsystem 'faulty' terminated");
                }
                // Crashes end the host: reported with the call, the time,
                // the signal and the FMU's last messages.
                4 => {
                    expect(&format!(
                        "error: subsystem 'faulty': {v}DoStep at t = 0.3: the FMU's host process (pid "
                    ));
                    expect("died of a segmentation fault (SIGSEGV); the host's last messages:");
                    expect("subsystem 'faulty' failed: not terminated");
                    assert!(
                        message.contains("(fail_mode 4): raising SIGSEGV"),
                        "{message}"
                    );
                }
                5 => {
                    expect(&format!(
                        "error: subsystem 'faulty': {v}DoStep at t = 0.3: the FMU's host process (pid "
                    ));
                    expect("aborted (SIGABRT); the host's last messages:");
                    expect("subsystem 'faulty' failed: not terminated");
                    assert!(
                        message.contains("(fail_mode 5): calling abort()"),
                        "{message}"
                    );
                }
                6 => {
                    expect(&format!(
                        "error: subsystem 'faulty': {v}DoStep at t = 0.3: no answer within 2 s (isolation_timeout): the FMU's host process (pid "
                    ));
                    expect("was killed; the host's last messages:");
                    expect("subsystem 'faulty' failed: not terminated");
                    assert!(
                        message.contains("(fail_mode 6): hanging forever"),
                        "{message}"
                    );
                    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
                }
                7 => {
                    expect(&format!(
                        "error: FMU instance 'faulty': {v}DoStep returned Fatal at t = 0.3; the FMU logged:"
                    ));
                    expect("subsystem 'faulty' failed: not terminated");
                }
                _ => unreachable!(),
            }
            // No ANSI colour codes in the quoted host messages.
            assert!(!message.contains('\u{1b}'), "{message}");
        }
    }
}

/// `scenarios/<name>` with absolute FMU paths, edited by `edit`.
fn scenario_variant(dir: &Path, name: &str, tag: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let text = std::fs::read_to_string(root().join("scenarios").join(name)).unwrap();
    let fmus_dir = format!("{}/", fmus().display());
    let text = edit(text.replace("../fmus/dist/", &fmus_dir));
    let path = dir.join(format!("{tag}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn isolate_all(text: String) -> String {
    assert!(text.contains("[master]\n"));
    text.replacen("[master]\n", "[master]\nisolation = \"process\"\n", 1)
}

fn isolate(text: String, subsystem: &str) -> String {
    let line = format!("name = \"{subsystem}\"\n");
    assert!(text.contains(&line));
    text.replacen(&line, &format!("{line}isolation = \"process\"\n"), 1)
}

fn file(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(name).display()))
}

/// Runs the variants of a scenario and checks that each gives the same
/// files, byte for byte, and the same FMU call counts as the first.
fn assert_identical_runs(variants: &[PathBuf], files: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let mut first: Option<(PathBuf, serde_json::Value)> = None;
    for (i, scenario) in variants.iter().enumerate() {
        let out_dir = dir.path().join(format!("out{i}"));
        let out = run_cli(scenario, &out_dir);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            scenario.display(),
            stderr(&out)
        );
        let s = summary(&out_dir);
        match &first {
            None => first = Some((out_dir, s)),
            Some((reference, s0)) => {
                for f in files {
                    assert!(
                        file(reference, f) == file(&out_dir, f),
                        "{f} of {} differs from the in-process run",
                        scenario.display()
                    );
                }
                assert_eq!(s["calls"], s0["calls"], "{}", scenario.display());
                assert_eq!(s["stats"], s0["stats"], "{}", scenario.display());
            }
        }
    }
}

#[test]
fn a_healthy_isolated_run_is_bit_identical_to_the_in_process_run() {
    let dir = tempfile::tempdir().unwrap();
    let name = "b1_quarter_car_a.toml";
    let variants = [
        scenario_variant(dir.path(), name, "in_process", |t| t),
        scenario_variant(dir.path(), name, "chassis", |t| isolate(t, "chassis")),
        scenario_variant(dir.path(), name, "both", isolate_all),
        scenario_variant(dir.path(), name, "both_threads", |t| {
            isolate_all(t).replacen("[master]\n", "[master]\nthreads = 2\n", 1)
        }),
        // One thread: both hosts are started before either is awaited.
        scenario_variant(dir.path(), name, "both_overlapped", |t| {
            isolate_all(t).replacen("[master]\n", "[master]\nthreads = 1\n", 1)
        }),
        // Both FMUs in one host process: served one after the other, also
        // when two worker threads call them at once.
        scenario_variant(dir.path(), name, "one_host", |t| {
            isolate_all(t).replacen(
                "[master]\n",
                "[master]\nisolation_hosts = 1\nthreads = 1\n",
                1,
            )
        }),
        scenario_variant(dir.path(), name, "one_host_threads", |t| {
            isolate_all(t).replacen(
                "[master]\n",
                "[master]\nisolation_hosts = 1\nthreads = 2\n",
                1,
            )
        }),
        // A host each.
        scenario_variant(dir.path(), name, "two_hosts", |t| {
            isolate_all(t).replacen(
                "[master]\n",
                "[master]\nisolation_hosts = 2\nthreads = 1\n",
                1,
            )
        }),
    ];
    assert_identical_runs(&variants, &["trace.csv", "energy.csv", "steps.csv"]);
}

/// Two Gains whose outputs nothing uses (`sink1`, `sink2`), a Wide FMU
/// (200 lags) of which only `y1` is used (by `sink2`), a loop of a Faulty
/// integrator and a Gain (`clean`, `gain4`: x' = -x), then a Gain feeding
/// a second Faulty integrator back (`loop`, `x`); `sink1` fed from `x.x`,
/// `wide.u1` from `clean.x`; stepped every 0.01 s and traced every 0.1 s:
/// between two rows a step needs only the loops' values and `wide.y1` (one thread: the steps from
/// the first are quiet, not measured for a worker pool). `master`: more
/// lines of the `[master]` table; `fault`: `x`'s fail mode, from 0.355 s (the sixth
/// step of a stretch between two rows), which the first loop does not
/// reach.
fn unread_outputs_scenario(
    dir: &Path,
    (version, tag): (&str, &str),
    master: &str,
    (fault, rows_nan): (Option<i32>, bool),
) -> PathBuf {
    let fmu = |name: &str| fmus().join(version).join(name).display().to_string();
    let mut text = format!(
        "[simulation]\nstop = 1.0\n\n[master]\nkind = \"fixed-step\"\nstep = 0.01\nthreads = 1\n{master}\n\n\
         [outputs]\ninterval = 0.1\nstep_log = false\nenergy_log = false\n"
    );
    if rows_nan {
        // First, nothing coupled to it: its x, NaN from 0.355 on, is
        // read for the rows only (at 0.4).
        text += &format!(
            "\n[[subsystems]]\nname = \"rows\"\nfmu = \"{}\"\n\
             parameters = {{ x0 = 1.0, fail_mode = 3, fail_at = 0.355 }}\n",
            fmu("Faulty.fmu")
        );
    }
    let gain = |name: &str, k: f64| {
        format!(
            "\n[[subsystems]]\nname = \"{name}\"\nfmu = \"{}\"\nparameters = {{ k = {k:?} }}\n",
            fmu("Gain.fmu")
        )
    };
    text += &(gain("sink1", 2.0) + &gain("sink2", 3.0));
    text += &format!(
        "\n[[subsystems]]\nname = \"wide\"\nfmu = \"{}\"\n",
        fmu("Wide.fmu")
    );
    text += &format!(
        "\n[[subsystems]]\nname = \"clean\"\nfmu = \"{}\"\nparameters = {{ x0 = 1.0 }}\n",
        fmu("Faulty.fmu")
    );
    text += &(gain("gain4", -1.0) + &gain("loop", -1.0));
    let (mode, at) = fault.map_or((1, -1.0), |m| (m, 0.355));
    text += &format!(
        "\n[[subsystems]]\nname = \"x\"\nfmu = \"{}\"\n\
         parameters = {{ x0 = 1.0, fail_mode = {mode}, fail_at = {at:?} }}\n",
        fmu("Faulty.fmu")
    );
    for (from, to) in [
        ("clean.x", "gain4.u"),
        ("gain4.y", "clean.u"),
        ("x.x", "loop.u"),
        ("loop.y", "x.u"),
        ("x.x", "sink1.u"),
        ("clean.x", "wide.u1"),
        ("wide.y1", "sink2.u"),
    ] {
        text += &format!("\n[[connections]]\nfrom = \"{from}\"\nto = \"{to}\"\n");
    }
    let path = dir.join(format!("unread_{version}_{tag}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Each FMU's calls in `log` (an FMI call log), in order, the
/// instantiation's arguments left out (the extraction directory differs
/// from run to run), up to the first that did not succeed.
fn calls_by_fmu(log: &Path) -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(log).unwrap();
    [
        "rows", "sink1", "sink2", "wide", "clean", "gain4", "loop", "x",
    ]
    .iter()
    .map(|name| {
        let prefix = format!("] {name}: ");
        let mut calls = Vec::new();
        for l in text.lines().filter(|l| l.contains(&prefix)) {
            calls.push(l.find("Instantiate").map_or(l, |i| &l[..i]).to_string());
            if !l.starts_with("[OK]") {
                break;
            }
        }
        (name.to_string(), calls)
    })
    .collect()
}

/// An environment variable of a run: name, value.
type Env<'a> = (&'a str, &'a str);

/// Runs [`unread_outputs_scenario`] in process, in held runs in one
/// host, one by one through its lane, as batches, and with a host each,
/// each FMU's calls logged; asserts the same exit `code`, error lines,
/// FMI calls of each FMU (up to a failed one), trace bits and counted
/// calls. Returns the in-process run's FMU calls.
fn assert_isolated_runs_read_as_in_process(
    dir: &Path,
    version: &str,
    (master, fault, code): (&str, (Option<i32>, bool), i32),
) -> Vec<(String, Vec<String>)> {
    let one_host = format!("{master}\nisolation = \"process\"\nisolation_hosts = 1");
    let host_each = format!("{master}\nisolation = \"process\"\nisolation_hosts = 7");
    let one_by_one = [("COSIM_ISOLATION_RUNS", "0")];
    let batches = [("COSIM_ISOLATION_RUNS", "0"), ("COSIM_ISOLATION_LANE", "0")];
    let variants: [(&str, &str, &[Env]); 5] = [
        ("in_process", master, &[]),
        ("held_runs", &one_host, &[]),
        ("lanes", &one_host, &one_by_one),
        ("batches", &one_host, &batches),
        ("a_host_each", &host_each, &[]),
    ];
    let mut reference = None;
    for (tag, master_lines, env) in variants {
        let tag = format!("{tag}_{:?}_{}", fault.0, fault.1);
        let scenario = unread_outputs_scenario(dir, (version, &tag), master_lines, fault);
        let out_dir = dir.join(format!("out_{version}_{tag}"));
        let log = dir.join(format!("calls_{version}_{tag}.log"));
        let out = Command::new(cosim_bin())
            .args(["run", "--no-progress"])
            .arg(format!("--log-fmi-calls={}", log.display()))
            .arg(&scenario)
            .arg("--out")
            .arg(&out_dir)
            .env("COSIM_LOG", TERMINATION_LOG)
            .envs(env.iter().copied())
            .current_dir(root())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{version} {tag}: {err}");
        // (The scenario's own warnings name its lines, which differ.)
        let scenario_lines = scenario.display().to_string();
        let errors: Vec<String> = error_lines_pids_masked(&err)
            .into_iter()
            .filter(|l| !l.starts_with(&scenario_lines))
            .collect();
        let run = (
            calls_by_fmu(&log),
            errors,
            file(&out_dir, "trace.csv"),
            summary(&out_dir)["calls"].clone(),
        );
        match &reference {
            None => reference = Some(run),
            Some((calls, errors, trace, counted)) => {
                for ((name, a), (_, b)) in calls.iter().zip(&run.0) {
                    assert_eq!(a, b, "{version} {tag}: the calls of {name}");
                }
                assert_eq!(*errors, run.1, "{version} {tag}: the errors");
                assert!(*trace == run.2, "{version} {tag}: the traces differ");
                assert_eq!(*counted, run.3, "{version} {tag}: the calls counted");
            }
        }
    }
    reference.map(|(calls, ..)| calls).unwrap_or_default()
}

/// How many of an FMU's `calls` read its outputs.
fn reads(calls: &[(String, Vec<String>)], name: &str) -> usize {
    let (_, c) = calls.iter().find(|(n, _)| n == name).unwrap();
    c.iter()
        .filter(|c| c.contains("GetReal") || c.contains("GetFloat64"))
        .count()
}

#[test]
fn an_isolated_fmu_reads_after_a_step_only_what_the_same_fmu_in_process_reads() {
    // In process a step reads only the values the coupling and the rows
    // need; the host reads right after the step what the master will ask
    // for, and must read no more: the same FMI calls, one by one (lanes,
    // batches, a host each) and in held runs, and the same bits.
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        let calls = assert_isolated_runs_read_as_in_process(dir.path(), v, ("", (None, false), 0));
        // (The sinks' values are read for the rows alone, once a row
        // after the first: every step's would be 100 more.)
        assert!(reads(&calls, "sink1") < 30, "{v}: {calls:?}");
        assert!(reads(&calls, "loop") > 100, "{v}: {calls:?}");
    }
}

#[test]
fn a_held_run_stopped_after_fmus_whose_values_nothing_reads_ends_as_in_process() {
    // The Faulty FMU `x` steps last: when it stops a held run, the
    // members before it took that step, and the host hands back the
    // values they read, fewer than their outputs (none of the sinks', one
    // of the Wide FMU's 200). A
    // NaN the system only warns about publishes that step and goes on
    // (the loop it does not reach as in a run without it); an error ends
    // the run there.
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        let warn = "nonfinite = \"warn\"";
        assert_isolated_runs_read_as_in_process(dir.path(), v, (warn, (Some(3), false), 0));
        assert_isolated_runs_read_as_in_process(dir.path(), v, ("", (Some(1), false), 1));
    }
}

#[test]
fn a_value_refused_at_a_row_ends_the_run_with_every_fmus_values_read_as_in_process() {
    // The values the steps leave unread are read for a row from every
    // FMU, those of FMUs in hosts asked for together (not one round trip
    // after the other); the first FMU whose value is refused (in order)
    // names the error. Here the first FMU's x, read only for the rows,
    // is NaN at the row of 0.4: the FMUs after it are still read, in
    // process as isolated (the same calls), and the last row shows their
    // values with the NaN.
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        let calls = assert_isolated_runs_read_as_in_process(dir.path(), v, ("", (None, true), 1));
        // (sink1's output is read for the rows alone: its last read
        // before it is terminated is the row's at 0.4, after the step to
        // it.)
        let (_, sink1) = calls.iter().find(|(n, _)| n == "sink1").unwrap();
        let end = sink1.iter().position(|c| c.contains("Terminate")).unwrap();
        assert!(
            sink1[end - 1].contains("GetReal") || sink1[end - 1].contains("GetFloat64"),
            "{v}: {:?}",
            &sink1[end - 3..]
        );
        assert!(
            sink1[end - 2].contains("DoStep(currentCommunicationPoint=0.39"),
            "{v}: {:?}",
            &sink1[end - 3..]
        );
        let out_dir = dir.path().join(format!("out_{v}_a_host_each_None_true"));
        let trace = String::from_utf8(file(&out_dir, "trace.csv")).unwrap();
        let header: Vec<&str> = trace.lines().next().unwrap().split(',').collect();
        let last: Vec<&str> = trace.lines().last().unwrap().split(',').collect();
        let cell = |name: &str| last[header.iter().position(|h| *h == name).unwrap()];
        assert_eq!(cell("time [s]"), "0.4", "{v}: {trace}");
        assert_eq!(cell("rows.x"), "", "{v}: the NaN");
        assert!(
            cell("sink1.y").parse::<f64>().unwrap().is_finite(),
            "{v}: {trace}"
        );
        assert!(
            cell("wide.y200").parse::<f64>().unwrap().is_finite(),
            "{v}: {trace}"
        );
    }
}

#[test]
fn a_crash_among_overlapped_isolated_steps_is_reported_and_the_others_end_cleanly() {
    // One thread, both FMUs isolated: the master starts both hosts' steps
    // before waiting; the Faulty host dies in its step, the Gain host's
    // step completes and is collected, then the run stops as usual.
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        let (scenario, fmu_copy) = faulty_scenario(dir.path(), v, 4);
        let text = std::fs::read_to_string(&scenario).unwrap().replacen(
            "[master]\n",
            "[master]\nthreads = 1\n",
            1,
        );
        std::fs::write(&scenario, isolate(text, "gain")).unwrap();
        let out_dir = dir.path().join(format!("out_overlapped_{v}"));
        let out = run_cli(&scenario, &out_dir);
        let err = assert_isolated_stop(&out, &out_dir, &fmu_copy);
        assert!(
            err.contains(&format!(
                "error: subsystem 'faulty': {v}DoStep at t = 0.3: the FMU's host process (pid "
            )) && err.contains("died of a segmentation fault (SIGSEGV)"),
            "{v}: {err}"
        );
    }
}

#[test]
fn a_crash_in_a_shared_host_names_the_fmu_that_crashed() {
    // Both FMUs in one host: the Faulty one crashes it in its step; the
    // Gain's instance dies with it, and the error names the Faulty FMU's
    // subsystem and call, whichever subsystem's wait found the host gone.
    let dir = tempfile::tempdir().unwrap();
    for (v, order) in [("fmi2", "faulty first"), ("fmi3", "gain first")] {
        let (scenario, fmu_copy) = faulty_scenario(dir.path(), v, 4);
        let mut text = std::fs::read_to_string(&scenario).unwrap().replacen(
            "[master]\n",
            "[master]\nthreads = 1\nisolation_hosts = 1\n",
            1,
        );
        if order == "gain first" {
            // The Gain is declared (and added to the host) first.
            let i = text.find("[[subsystems]]\nname = \"faulty\"").unwrap();
            let j = text.find("[[subsystems]]\nname = \"gain\"").unwrap();
            let k = text.find("[[connections]]").unwrap();
            text = format!("{}{}{}{}", &text[..i], &text[j..k], &text[i..j], &text[k..]);
        }
        std::fs::write(&scenario, isolate(text, "gain")).unwrap();
        let out_dir = dir.path().join(format!("out_shared_{v}"));
        let out = run_cli(&scenario, &out_dir);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{v}: {err}");
        assert_eq!(trace_times(&out_dir.join("trace.csv")).len(), 31, "{v}");
        assert!(
            err.contains(&format!(
                "error: subsystem 'faulty': {v}DoStep at t = 0.3: the FMU's host process (pid "
            )) && err.contains("died of a segmentation fault (SIGSEGV)"),
            "{v} ({order}): {err}"
        );
        assert!(!err.contains("subsystem 'gain': "), "{v} ({order}): {err}");
        let left = processes_mentioning(&fmu_copy);
        assert!(left.is_empty(), "host processes left behind: {left:?}");
    }
}

#[test]
fn the_isolation_option_isolates_every_fmu_of_a_scenario_that_does_not() {
    // The scenario loads the segfaulting FMU in process; `--isolation
    // process` moves it (and the Gain) into hosts, so the run survives the
    // crash and reports it like any isolated fault.
    let dir = tempfile::tempdir().unwrap();
    let (scenario, fmu_copy) = faulty_scenario(dir.path(), "fmi2", 4);
    let text = std::fs::read_to_string(&scenario)
        .unwrap()
        .replace("isolation = \"process\"\n", "")
        .replace("isolation_timeout = 2\n", "");
    assert!(!text.contains("isolation"), "{text}");
    std::fs::write(&scenario, text).unwrap();
    let out_dir = dir.path().join("out");
    let out = run_logged(&scenario, &out_dir, &["--isolation", "process"]);
    let err = assert_isolated_stop(&out, &out_dir, &fmu_copy);
    assert!(
        err.contains(
            "error: subsystem 'faulty': fmi2DoStep at t = 0.3: the FMU's host process (pid "
        ) && err.contains("died of a segmentation fault (SIGSEGV)"),
        "{err}"
    );
}

#[test]
fn richardson_saves_and_restores_isolated_fmu_states_with_identical_results() {
    let dir = tempfile::tempdir().unwrap();
    let name = "b2_richardson.toml";
    let variants = [
        scenario_variant(dir.path(), name, "in_process", |t| t),
        scenario_variant(dir.path(), name, "isolated", isolate_all),
    ];
    // Richardson saves and restores every FMU's state every step.
    let out_dir = dir.path().join("check");
    let out = run_cli(&variants[1], &out_dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let calls = &summary(&out_dir)["calls"];
    assert!(calls["state_saves"].as_u64().unwrap() > 100, "{calls}");
    assert!(calls["state_restores"].as_u64().unwrap() > 100, "{calls}");
    assert_identical_runs(&variants, &["trace.csv", "steps.csv"]);
}

/// An isolated Integrator (x' = u), initialised at t = 0 with x0 = 1.
fn integrator() -> IsolatedSubsystem {
    let fmu = Fmu::open(fmus().join("fmi2").join("Integrator.fmu")).unwrap();
    integrator_of(&fmu, "integrator", &IsolationSettings::default())
}

/// An Integrator of `fmu` in a host process as `settings` say, initialised
/// at t = 0 with x0 = 1.
fn integrator_of(fmu: &Fmu, name: &str, settings: &IsolationSettings) -> IsolatedSubsystem {
    cosim_isolation::set_host_program(cosim_bin());
    let md = fmu.model_description();
    let find = |n: &str| md.variables.iter().position(|v| v.name == n).unwrap();
    let mut s = IsolatedSubsystem::spawn(
        fmu,
        name,
        &[cosim_core::SlotVar::scalar(find("u"))],
        &[cosim_core::SlotVar::scalar(find("x"))],
        1,
        &InstantiateOptions::default(),
        settings,
    )
    .unwrap();
    s.set_start_values(vec![cosim_core::subsystem::StartValue {
        variable: find("x0"),
        value: cosim_fmi::Value::F64(1.0),
        origin: "the test".into(),
    }])
    .unwrap();
    s.enter_initialization(0.0, Some(1.0)).unwrap();
    s.exit_initialization().unwrap();
    s
}

fn step(s: &mut IsolatedSubsystem, u: f64, t: f64, h: f64) -> f64 {
    s.set_inputs(&[u]).unwrap();
    assert_eq!(s.do_step(t, h).unwrap(), StepOutcome::Completed);
    let mut x = [0.0];
    s.get_observed(&mut x).unwrap();
    x[0]
}

#[test]
fn fmu_states_are_saved_restored_and_serialized_across_the_boundary() {
    let mut a = integrator();
    assert_eq!(step(&mut a, 2.0, 0.0, 0.1), 1.2);
    let id = a.save_state(None).unwrap();
    let bytes = a.serialize_state(id).unwrap();
    assert!(!bytes.is_empty());
    let x1 = step(&mut a, 5.0, 0.1, 0.1);
    assert!((x1 - 1.7).abs() < 1e-12, "{x1}");
    // Back to t = 0.1 and the same step again: the same bits.
    a.restore_state(id).unwrap();
    let mut x = [0.0];
    a.get_observed(&mut x).unwrap();
    assert_eq!(x[0], 1.2);
    assert_eq!(step(&mut a, 5.0, 0.1, 0.1).to_bits(), x1.to_bits());
    // Saving over an existing id reuses it.
    assert_eq!(a.save_state(Some(id)).unwrap(), id);
    a.free_state(id).unwrap();
    let err = a.restore_state(id).unwrap_err().to_string();
    assert!(err.contains("unknown or freed state id"), "{err}");

    // The serialized state continues in another host process.
    let mut b = integrator();
    let id_b = b.deserialize_state(&bytes).unwrap();
    b.restore_state(id_b).unwrap();
    assert_eq!(step(&mut b, 5.0, 0.1, 0.1).to_bits(), x1.to_bits());
    assert_ne!(a.host_pid(), b.host_pid());
    let counters = b.counters();
    assert_eq!((counters.do_step, counters.state_restores), (1, 1));
    a.terminate().unwrap();
    b.terminate().unwrap();
}

#[test]
fn a_pool_shares_its_hosts_in_turn_and_keeps_apart_what_runs_once_per_process() {
    let fmu = Fmu::open(fmus().join("fmi2").join("Integrator.fmu")).unwrap();
    let pool = |n| IsolationSettings {
        pool: Some(Arc::new(HostPool::new(n))),
        ..IsolationSettings::default()
    };
    // Two hosts, four FMUs: the first and the third in one, the others in
    // the other; each instance its own values.
    let two = pool(2);
    let mut subs: Vec<_> = (0..4)
        .map(|i| integrator_of(&fmu, &format!("i{i}"), &two))
        .collect();
    let pids: Vec<u32> = subs.iter().map(|s| s.host_pid().unwrap()).collect();
    assert_eq!((pids[0], pids[1]), (pids[2], pids[3]), "{pids:?}");
    assert_ne!(pids[0], pids[1]);
    for (i, s) in subs.iter_mut().enumerate() {
        let u = i as f64;
        // x = 1 + u h, each instance its own.
        assert_eq!(step(s, u, 0.0, 0.5), 1.0 + 0.5 * u, "i{i}");
    }
    // Started together, answered each to its own.
    for s in subs.iter_mut() {
        s.set_inputs(&[1.0]).unwrap();
        assert!(s.start_step(0.5, 0.5).unwrap());
    }
    for (i, s) in subs.iter_mut().enumerate() {
        assert_eq!(s.finish_step().unwrap(), StepOutcome::Completed);
        let mut x = [0.0];
        s.get_observed(&mut x).unwrap();
        assert_eq!(x[0], 1.5 + 0.5 * i as f64, "i{i}");
    }
    for s in &mut subs {
        s.terminate().unwrap();
    }

    // An FMU that can be instantiated only once per process: every
    // instance in a host of its own, even in a pool of one.
    let unpacked = tempfile::tempdir().unwrap();
    let mut archive = zip::ZipArchive::new(
        std::fs::File::open(fmus().join("fmi2").join("Integrator.fmu")).unwrap(),
    )
    .unwrap();
    archive.extract(unpacked.path()).unwrap();
    let md_path = unpacked.path().join("modelDescription.xml");
    let md = std::fs::read_to_string(&md_path).unwrap();
    let flag = "canBeInstantiatedOnlyOncePerProcess=\"false\"";
    assert!(md.contains(flag), "{md}");
    std::fs::write(
        &md_path,
        md.replace(flag, "canBeInstantiatedOnlyOncePerProcess=\"true\""),
    )
    .unwrap();
    let once = Fmu::open(unpacked.path()).unwrap();
    let one = pool(1);
    let a = integrator_of(&once, "a", &one);
    let b = integrator_of(&once, "b", &one);
    let c = integrator_of(&fmu, "c", &one);
    assert_ne!(a.host_pid(), b.host_pid());
    // Other FMUs still share.
    assert_eq!(c.host_pid(), a.host_pid());
}

/// A Faulty integrator (fail mode 4: a segmentation fault in the step
/// over t = 0.05) and an Integrator sharing one host: the Faulty one's
/// step is served first and crashes the host while the master waits for
/// the Integrator's answer; that wait reports the crash as the Faulty
/// FMU's, and so does every later call of either.
#[test]
fn a_crash_found_by_another_fmus_wait_names_the_fmu_that_crashed() {
    cosim_isolation::set_host_program(cosim_bin());
    let one = IsolationSettings {
        pool: Some(Arc::new(HostPool::new(1))),
        ..IsolationSettings::default()
    };
    let fmu = Fmu::open(fmus().join("fmi2").join("Faulty.fmu")).unwrap();
    let md = fmu.model_description();
    let find = |n: &str| md.variables.iter().position(|v| v.name == n).unwrap();
    let mut faulty = IsolatedSubsystem::spawn(
        &fmu,
        "faulty",
        &[cosim_core::SlotVar::scalar(find("u"))],
        &[cosim_core::SlotVar::scalar(find("x"))],
        1,
        &InstantiateOptions::default(),
        &one,
    )
    .unwrap();
    let value = |n: &str, value| cosim_core::subsystem::StartValue {
        variable: find(n),
        value,
        origin: "the test".into(),
    };
    faulty
        .set_start_values(vec![
            value("fail_mode", cosim_fmi::Value::I32(4)),
            value("fail_at", cosim_fmi::Value::F64(0.05)),
        ])
        .unwrap();
    faulty.enter_initialization(0.0, Some(1.0)).unwrap();
    faulty.exit_initialization().unwrap();
    let integrator = Fmu::open(fmus().join("fmi2").join("Integrator.fmu")).unwrap();
    let mut other = integrator_of(&integrator, "other", &one);
    assert_eq!(faulty.host_pid(), other.host_pid());
    let pid = faulty.host_pid().unwrap();
    faulty.set_inputs(&[1.0]).unwrap();
    assert!(faulty.start_step(0.0, 0.1).unwrap());
    other.set_inputs(&[1.0]).unwrap();
    assert!(other.start_step(0.0, 0.1).unwrap());
    let expected = format!(
        "subsystem 'faulty': fmi2DoStep at t = 0: the FMU's host process (pid {pid}) died of a segmentation fault (SIGSEGV)"
    );
    // (The host reads its FMUs' request words one after the other: it may
    // read the Faulty one's before it was posted and the Integrator's
    // after, and serve the Integrator first. Its next step then waits on
    // the dead host.)
    let err = match other.finish_step() {
        Err(e) => e,
        Ok(_) => {
            other.set_inputs(&[1.0]).unwrap();
            match other.start_step(0.1, 0.1) {
                Ok(_) => other.finish_step().unwrap_err(),
                Err(e) => e,
            }
        }
    };
    assert!(
        matches!(err, cosim_core::CoreError::HostProcess { .. })
            && err.to_string().starts_with(&expected),
        "{err}"
    );
    let err = faulty.finish_step().unwrap_err().to_string();
    assert!(err.starts_with(&expected), "{err}");
    // Gone with the host: not terminated, no error.
    other.terminate().unwrap();
}

#[test]
fn a_host_killed_between_calls_is_reported_at_the_next_call_without_waiting() {
    let mut s = integrator();
    step(&mut s, 1.0, 0.0, 0.1);
    let pid = s.host_pid().unwrap();
    let status = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let start = Instant::now();
    s.set_inputs(&[1.0]).unwrap(); // queued: no round trip yet
    let err = s.do_step(0.1, 0.1).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let msg = err.to_string();
    assert!(
        matches!(err, cosim_core::CoreError::HostProcess { .. }),
        "{msg}"
    );
    assert!(
        msg.starts_with("subsystem 'integrator': ")
            && msg.contains(&format!(
                "the FMU's host process (pid {pid}) was killed (SIGKILL)"
            )),
        "{msg}"
    );
    // Later calls fail at once; terminating a dead host is not an error.
    let again = s.do_step(0.1, 0.1).unwrap_err().to_string();
    assert!(again.contains("the host process is gone"), "{again}");
    s.terminate().unwrap();
}

#[test]
fn isolation_keys_are_checked_like_every_other_key() {
    let dir = tempfile::tempdir().unwrap();
    let bad_value = scenario_variant(dir.path(), "b1_quarter_car_a.toml", "bad", |t| {
        t.replacen("[master]\n", "[master]\nisolation = \"thread\"\n", 1)
    });
    let out = cosim_tests::cosim(&["check", bad_value.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("isolation") && err.contains("process"),
        "{err}"
    );
    let bad_timeout = scenario_variant(dir.path(), "b1_quarter_car_a.toml", "bad_timeout", |t| {
        isolate(t, "wheel").replacen(
            "isolation = \"process\"\n",
            "isolation = \"process\"\nisolation_timeout = 0\n",
            1,
        )
    });
    let out = cosim_tests::cosim(&["check", bad_timeout.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("isolation_timeout"), "{err}");
    for bad in ["0", "1.5", "\"many\""] {
        let hosts = scenario_variant(dir.path(), "b1_quarter_car_a.toml", "bad_hosts", |t| {
            t.replacen(
                "[master]\n",
                &format!("[master]\nisolation_hosts = {bad}\n"),
                1,
            )
        });
        let out = cosim_tests::cosim(&["check", hosts.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.contains("isolation_hosts") && err.contains("bad_hosts.toml"),
            "{bad}: {err}"
        );
    }
    // `cosim check` instantiates and initialises isolated FMUs too.
    let good = scenario_variant(dir.path(), "b1_quarter_car_a.toml", "good", isolate_all);
    let out = cosim_tests::cosim(&["check", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// `cosim check` runs no FMU code in its own process: every FMU is
/// initialised in a host process. The dynamic loader's trace
/// (`LD_DEBUG=files`, lines prefixed with the loading process's pid) shows
/// each FMU library loaded by another pid than the check's.
#[test]
fn check_loads_no_fmu_library_in_its_own_process() {
    cosim_tests::fmus();
    let child = Command::new(cosim_bin())
        .args(["check"])
        .arg(cosim_tests::scenario("b5_mass_spring.toml"))
        .env("LD_DEBUG", "files")
        .current_dir(root())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let loads: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("calling init: ") && l.contains("/binaries/linux64/"))
        .collect();
    assert_eq!(loads.len(), 2, "Mass.so and Spring.so: {loads:?}");
    for l in loads {
        let loader = l.trim_start().split(':').next().unwrap();
        assert_ne!(loader, pid, "loaded by cosim check itself: {l}");
    }
}

/// `[master] isolation_hosts` is read at the top level only: a nested
/// scenario file that sets it gets a warning naming that file, and the
/// run goes on with the top level's value; without it, no warning.
#[test]
fn a_nested_isolation_hosts_is_named_in_a_warning_and_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let top = scenario_variant(dir.path(), "b3_three_mass_hierarchical.toml", "top", |t| {
        let t = t.replacen(
            "[master]\n",
            "[master]\nisolation = \"process\"\nisolation_hosts = 2\n",
            1,
        );
        // The nest from a file of its own.
        let start = t.find("[subsystems.system.master]").unwrap();
        let end = t.find("[[connections]]").unwrap();
        let inner = t[start..end]
            .replace("[subsystems.system.master]", "[master]")
            .replace("[[subsystems.system.subsystems]]", "[[subsystems]]")
            .replace("[[subsystems.system.connections]]", "[[connections]]");
        std::fs::write(dir.path().join("nest.toml"), inner).unwrap();
        format!("{}system = \"nest.toml\"\n\n{}", &t[..start], &t[end..])
    });
    let nest = dir.path().join("nest.toml");
    let warning = "isolation_hosts applies to the whole run and is read at its top level";
    let out = cosim_tests::cosim(&["check", top.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains(warning), "{err}");

    let text = std::fs::read_to_string(&nest).unwrap();
    std::fs::write(
        &nest,
        text.replacen("[master]\n", "[master]\nisolation_hosts = 1\n", 1),
    )
    .unwrap();
    let out = cosim_tests::cosim(&["check", top.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let line = err
        .lines()
        .find(|l| l.contains(warning))
        .unwrap_or_else(|| panic!("no warning about the nested isolation_hosts: {err}"));
    assert!(line.contains(&nest.display().to_string()), "{line}");
}

/// On a virtual machine a host woken by the master was often put on the
/// master's own processor, and the two took turns on it for the whole
/// run (5 to 7 times slower) while another processor was idle: a host
/// keeps off the processor the master was last seen on
/// (`cosim_core::placement`), told when it is woken.
#[test]
fn a_host_keeps_off_the_processor_of_the_master() {
    use cosim_tests::cpus_allowed;
    use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
    let mine = cpus_allowed("thread-self");
    if mine.len() < 2 {
        eprintln!("skipped: this process may run on one processor only ({mine:?})");
        return;
    }
    let start = sched_getaffinity(None).unwrap();
    let pin = |cpu: usize| {
        let mut set = CpuSet::new();
        set.set(cpu);
        sched_setaffinity(None, &set).unwrap();
    };
    let without =
        |cpu: usize| -> Vec<usize> { mine.iter().copied().filter(|&c| c != cpu).collect() };
    let mut s = integrator();
    let host = s.host_pid().unwrap();
    let mut t = 0.0;
    for &cpu in &[mine[0], mine[1], mine[0]] {
        pin(cpu);
        // Long enough for the host to stop spinning and sleep: the next
        // request wakes it.
        std::thread::sleep(Duration::from_millis(20));
        step(&mut s, 1.0, t, 0.1);
        t += 0.1;
        assert_eq!(
            cpus_allowed(&host.to_string()),
            without(cpu),
            "master on {cpu}"
        );
    }
    s.terminate().unwrap();
    sched_setaffinity(None, &start).unwrap();
}
