//! FMU faults and interruption, end to end: every fail mode of the `Faulty`
//! kit FMU (FMI 2 and 3) has the outcome `docs/reliability.md` documents;
//! Ctrl-C / SIGTERM stop a run cleanly; a second signal exits at once.
//!
//! `cli.rs` already checks the Error message and the rows kept for FMI 2 and
//! the NaN message; these tests add FMI 3, Discard, Fatal, the crash modes,
//! what happens to the other FMUs, and interruption.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cosim_core::execution::{Execution, RunStatus};
use cosim_core::master::{FixedStep, Scheme};
use cosim_core::subsystem::{CallCounters, StateId};
use cosim_core::{Connection, FmuSubsystem, Subsystem, SubsystemInfo, System, SystemSpec};
use cosim_fmi::{Fmu, StepOutcome};
use cosim_tests::{Table, cosim_bin, fmu_subsystem, fmus, hostile_fmu, root, run_logged};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn fmu(version: &str, model: &str) -> PathBuf {
    fmus().join(version).join(format!("{model}.fmu"))
}

/// A Faulty integrator (x' = u) fed back through a Gain (u = -0.5 x),
/// stepped every 0.01 s from 0 to `stop`.
fn faulty_scenario(dir: &Path, version: &str, mode: i32, fail_at: f64, stop: f64) -> PathBuf {
    let text = format!(
        r#"[simulation]
stop = {stop:?}

[master]
step = 0.01

[[subsystems]]
name = "faulty"
fmu = "{faulty}"
parameters = {{ fail_mode = {mode}, fail_at = {fail_at:?}, x0 = 1.0 }}

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
        faulty = fmu(version, "Faulty").display(),
        gain = fmu(version, "Gain").display(),
    );
    let path = dir.join(format!("faulty_{version}_{mode}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `cosim run <scenario> --out <dir>/out` with the termination log on.
fn run_faulty(dir: &Path, version: &str, mode: i32, fail_at: f64) -> (Output, PathBuf) {
    let scenario = faulty_scenario(dir, version, mode, fail_at, 1.0);
    let out_dir = dir.join(format!("out_{version}_{mode}"));
    (run_logged(&scenario, &out_dir, &[]), out_dir)
}

fn summary(out_dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap()).unwrap()
}

/// Every line of the trace has as many fields as the header, every field
/// parses, and the times increase. Returns the rows' times.
fn consistent_trace(path: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let width = lines.next().expect("a header").split(',').count();
    assert!(
        text.ends_with('\n'),
        "the trace ends in the middle of a row"
    );
    let mut times: Vec<f64> = Vec::new();
    for (i, line) in lines.enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), width, "row {i} is incomplete: {line}");
        for f in &fields {
            f.parse::<f64>()
                .unwrap_or_else(|_| panic!("row {i}: bad field {f:?}"));
        }
        let t: f64 = fields[0].parse().unwrap();
        if let Some(&last) = times.last() {
            assert!(t > last, "row {i}: time {t} after {last}");
        }
        times.push(t);
    }
    times
}

/// The checks common to every fault that stops the run cleanly.
fn assert_clean_stop(out: &Output, out_dir: &Path) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The trace holds every completed step, t = 0 .. 0.3, no partial row.
    let t = consistent_trace(&out_dir.join("trace.csv"));
    assert_eq!(t.len(), 31, "{t:?}");
    assert!((t[30] - 0.3).abs() < 1e-12);
    let s = summary(out_dir);
    assert_eq!(s["status"], "error");
    assert!((s["t_reached"].as_f64().unwrap() - 0.3).abs() < 1e-12);
    assert_eq!(s["stats"]["macro_steps"], 30);
    // The healthy FMU is terminated (then freed), with no complaint.
    assert!(err.contains("subsystem 'gain' terminated"), "{err}");
    assert!(!err.contains("terminating 'gain'"), "{err}");
    assert!(
        err.contains("the outputs hold every completed step up to t = 0.3"),
        "{err}"
    );
    err
}

/// The fixed-step master's common macro step (one thread: every FMU
/// stepped inline, no plan; `FixedStep::advance`) and the planned one (two
/// threads: `Stepper::step` with its worker pool) leave the same outputs
/// when an FMU fails in the middle of a macro step, after another has
/// stepped (Gain is declared first): the rows, the summary's figures and
/// call counts, the error. For every fail mode that stops the run cleanly.
#[test]
fn a_step_failing_after_another_leaves_the_same_outputs_on_both_step_paths() {
    let dir = tempfile::tempdir().unwrap();
    for version in ["fmi2", "fmi3"] {
        // (Error, Discard, NaN output, Fatal.)
        for mode in [1, 2, 3, 7] {
            let text =
                std::fs::read_to_string(faulty_scenario(dir.path(), version, mode, 0.305, 1.0))
                    .unwrap();
            // Gain first: it has stepped when Faulty fails.
            let (head, rest) = text.split_once("[[subsystems]]").unwrap();
            let (faulty, gain) = rest.split_once("[[subsystems]]").unwrap();
            let (gain, connections) = gain.split_once("[[connections]]").unwrap();
            let scenario = dir.path().join(format!("gain_first_{version}_{mode}.toml"));
            std::fs::write(
                &scenario,
                format!(
                    "{head}[[subsystems]]{gain}[[subsystems]]{faulty}[[connections]]{connections}"
                ),
            )
            .unwrap();
            let outcome = |threads: &str| {
                let out_dir = dir.path().join(format!("out_{version}_{mode}_{threads}"));
                let out = run_logged(&scenario, &out_dir, &["--threads", threads]);
                let err = assert_clean_stop(&out, &out_dir);
                let error = err
                    .lines()
                    .find(|l| l.contains("error"))
                    .unwrap_or_default()
                    .to_string();
                let mut s = summary(&out_dir);
                let map = s.as_object_mut().unwrap();
                for timing in ["wall_time_s", "init_time_s", "threads"] {
                    map.remove(timing);
                }
                (std::fs::read(out_dir.join("trace.csv")).unwrap(), s, error)
            };
            let (inline, planned) = (outcome("1"), outcome("2"));
            assert!(
                inline.0 == planned.0,
                "{version}, mode {mode}: the traces differ"
            );
            assert_eq!(
                inline.1, planned.1,
                "{version}, mode {mode}: the summaries differ"
            );
            assert_eq!(inline.2, planned.2, "{version}, mode {mode}");
        }
    }
}

#[test]
fn an_error_status_stops_the_run_and_the_failed_fmu_is_freed_not_terminated() {
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        let (out, out_dir) = run_faulty(dir.path(), v, 1, 0.305);
        let err = assert_clean_stop(&out, &out_dir);
        assert!(
            err.contains(&format!(
                "error: FMU instance 'faulty': {v}DoStep returned Error at t = 0.3; the FMU logged:"
            )),
            "{err}"
        );
        assert!(
            err.contains(
                "Faulty: fail_at = 0.305 reached in the step from 0.3 to 0.31 (fail_mode 1): returning Error"
            ),
            "{err}"
        );
        // After Error the standard allows only freeing the instance: no
        // Terminate call, so no "Illegal call sequence: called in state Error" from the FMU.
        assert!(
            err.contains("subsystem 'faulty' failed: not terminated"),
            "{err}"
        );
        assert!(!err.contains("Illegal call sequence"), "{err}");
        assert!(!err.contains("terminating 'faulty'"), "{err}");
        let s = summary(&out_dir);
        let msg = s["message"].as_str().unwrap();
        assert!(
            msg.contains(&format!("{v}DoStep returned Error")) && msg.contains("fail_mode 1"),
            "{msg}"
        );
    }
}

#[test]
fn a_discarded_step_stops_a_master_without_rollback_naming_the_last_successful_time() {
    let dir = tempfile::tempdir().unwrap();
    for (v, last_time) in [
        ("fmi2", "fmi2LastSuccessfulTime"),
        ("fmi3", "lastSuccessfulTime"),
    ] {
        let (out, out_dir) = run_faulty(dir.path(), v, 2, 0.305);
        let err = assert_clean_stop(&out, &out_dir);
        assert!(
            err.contains(&format!(
                "error: FMU instance 'faulty': {v}DoStep returned Discard in the step from t = 0.3 to 0.31: "
            )),
            "{err}"
        );
        assert!(
            err.contains(&format!("the FMU stopped at {last_time} = 0.305")),
            "{err}"
        );
        assert!(err.contains("the master cannot redo the step"), "{err}");
        // The FMU's own log line is quoted in the message.
        assert!(
            err.contains("the FMU logged:\n  [Discard]") && err.contains("returning Discard"),
            "{err}"
        );
        // After Discard the instance may be terminated, and is.
        assert!(err.contains("subsystem 'faulty' terminated"), "{err}");
        assert!(!err.contains("terminating '"), "{err}");
        let msg = summary(&out_dir)["message"].as_str().unwrap().to_string();
        assert!(
            msg.contains("returned Discard") && msg.contains("returning Discard"),
            "{msg}"
        );
    }
}

/// A Fatal status inside a nested system stops the run as at the top
/// level, and nothing is called on the failed instance afterwards either:
/// the nest terminates its other subsystems only, with no warning about
/// the failed one.
#[test]
fn a_fatal_status_inside_a_nested_system_leaves_the_failed_fmu_alone() {
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        let text = format!(
            r#"[simulation]
stop = 1.0

[master]
step = 0.01

[[subsystems]]
name = "nest"
exposes = ["faulty.x"]

[subsystems.system.master]
step = 0.01

[[subsystems.system.subsystems]]
name = "faulty"
fmu = "{faulty}"
parameters = {{ fail_mode = 7, fail_at = 0.305, x0 = 1.0 }}

[[subsystems.system.subsystems]]
name = "gain"
fmu = "{gain}"
parameters = {{ k = -0.5 }}

[[subsystems.system.connections]]
from = "faulty.x"
to = "gain.u"

[[subsystems.system.connections]]
from = "gain.y"
to = "faulty.u"
"#,
            faulty = fmu(v, "Faulty").display(),
            gain = fmu(v, "Gain").display(),
        );
        let path = dir.path().join(format!("nested_fatal_{v}.toml"));
        std::fs::write(&path, text).unwrap();
        let out = run_logged(&path, &dir.path().join(format!("out_{v}")), &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("{v}DoStep returned Fatal at t = 0.3")),
            "{err}"
        );
        assert!(!err.contains("WARN"), "{err}");
        assert!(!err.contains("no further calls are allowed"), "{err}");
    }
}

#[test]
fn a_fatal_status_stops_the_run_and_the_failed_fmu_is_never_called_again() {
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        let (out, out_dir) = run_faulty(dir.path(), v, 7, 0.305);
        let err = assert_clean_stop(&out, &out_dir);
        assert!(
            err.contains(&format!(
                "error: FMU instance 'faulty': {v}DoStep returned Fatal at t = 0.3; the FMU logged:"
            )),
            "{err}"
        );
        assert!(err.contains("(fail_mode 7): returning Fatal"), "{err}");
        // No call after Fatal: not Terminate (nor FreeInstance, which the
        // binding refuses on its own); so no refusal message either.
        assert!(
            err.contains("subsystem 'faulty' failed: not terminated"),
            "{err}"
        );
        assert!(!err.contains("terminating 'faulty'"), "{err}");
        assert!(!err.contains("no further calls are allowed"), "{err}");
    }
}

#[test]
fn a_nan_output_stops_the_run_and_every_fmu_is_terminated() {
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        let (out, out_dir) = run_faulty(dir.path(), v, 3, 0.105);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(
                "error: subsystem 'faulty': variable 'x' is NaN at t = 0.11: the co-simulation diverged or the FMU failed; stopping"
            ),
            "{err}"
        );
        // The FMU's own warning line is shown.
        assert!(
            err.contains("Faulty: output x becomes NaN at fail_at = 0.105"),
            "{err}"
        );
        assert!(err.contains("subsystem 'gain' terminated"), "{err}");
        assert!(err.contains("subsystem 'faulty' terminated"), "{err}");
        let t = consistent_trace(&out_dir.join("trace.csv"));
        assert_eq!(t.len(), 11);
        assert_eq!(summary(&out_dir)["status"], "error");
    }
}

/// An abort in an FMU cannot be survived in-process: the `cosim` process
/// dies of SIGABRT, after the FMU's log line went out. (Process isolation
/// turns it into an ordinary FMU error.)
#[test]
fn an_abort_in_an_fmu_kills_an_in_process_run_after_its_log_line() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        let (out, _) = run_faulty(dir.path(), v, 5, 0.305);
        let err = stderr(&out);
        assert_eq!(out.status.signal(), Some(6), "{:?}: {err}", out.status);
        assert!(err.contains("(fail_mode 5): calling abort()"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `fail_mode = 4` raises SIGSEGV (with its default action: Rust's own
/// handler, for stack overflows, would return from a raised signal): an
/// in-process run dies of it after the FMU's log line; process isolation
/// is the way to survive it.
#[test]
fn a_segfault_in_an_fmu_kills_an_in_process_run_after_its_log_line() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        let (out, _) = run_faulty(dir.path(), v, 4, 0.305);
        let err = stderr(&out);
        assert!(err.contains("(fail_mode 4): raising SIGSEGV"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(out.status.signal(), Some(11), "{:?}: {err}", out.status);
    }
}

/// `fail_mode = 9` calls `exit(3)` in the middle of a step: the process
/// ends with cosim's status for it (1), after writing every completed row
/// and a summary that says what happened.
#[test]
fn an_fmu_that_calls_exit_ends_the_run_with_outputs_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    for v in ["fmi2", "fmi3"] {
        let (out, out_dir) = run_faulty(dir.path(), v, 9, 0.305);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{:?}: {err}", out.status);
        assert!(err.contains("(fail_mode 9): calling exit(3)"), "{err}");
        assert!(
            err.contains("error: an FMU ended the process: it called exit() during the run"),
            "{err}"
        );
        let s = summary(&out_dir);
        assert_eq!(s["status"], "error", "{s}");
        assert!(
            s["message"].as_str().unwrap().contains("called exit()"),
            "{s}"
        );
        let times = consistent_trace(&out_dir.join("trace.csv"));
        assert_eq!(times.len(), 31, "{times:?}");
    }
}

// ----- what happens to every FMU, seen from the library ---------------------

/// A subsystem that records `terminate` and `drop` (the FMU's
/// FreeInstance) of the FMU subsystem it wraps.
struct Recorder {
    inner: Option<FmuSubsystem>,
    name: String,
    events: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn inner(&mut self) -> &mut FmuSubsystem {
        self.inner.as_mut().unwrap()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        drop(self.inner.take());
        self.events
            .lock()
            .unwrap()
            .push(format!("free {}", self.name));
    }
}

impl Subsystem for Recorder {
    fn info(&self) -> &SubsystemInfo {
        self.inner.as_ref().unwrap().info()
    }
    fn enter_initialization(&mut self, t0: f64, t_stop: Option<f64>) -> cosim_core::Result<()> {
        self.inner().enter_initialization(t0, t_stop)
    }
    fn allow_rollback(&mut self, to: cosim_core::subsystem::RollbackTo) -> cosim_core::Result<()> {
        self.inner().allow_rollback(to)
    }
    fn exit_initialization(&mut self) -> cosim_core::Result<()> {
        self.inner().exit_initialization()
    }
    fn set_inputs(&mut self, values: &[f64]) -> cosim_core::Result<()> {
        self.inner().set_inputs(values)
    }
    fn set_input_derivatives(&mut self, order: u32, values: &[f64]) -> cosim_core::Result<()> {
        self.inner().set_input_derivatives(order, values)
    }
    fn do_step(&mut self, t: f64, h: f64) -> cosim_core::Result<StepOutcome> {
        self.inner().do_step(t, h)
    }
    fn get_observed(&mut self, values: &mut [f64]) -> cosim_core::Result<()> {
        self.inner().get_observed(values)
    }
    fn get_output_derivatives(&mut self, order: u32, values: &mut [f64]) -> cosim_core::Result<()> {
        self.inner().get_output_derivatives(order, values)
    }
    fn save_state(&mut self, reuse: Option<StateId>) -> cosim_core::Result<StateId> {
        self.inner().save_state(reuse)
    }
    fn restore_state(&mut self, id: StateId) -> cosim_core::Result<()> {
        self.inner().restore_state(id)
    }
    fn free_state(&mut self, id: StateId) -> cosim_core::Result<()> {
        self.inner().free_state(id)
    }
    fn terminate(&mut self) -> cosim_core::Result<()> {
        let r = self.inner().terminate();
        self.events
            .lock()
            .unwrap()
            .push(format!("terminate {}", self.name));
        r
    }
    fn counters(&self) -> CallCounters {
        self.inner.as_ref().unwrap().counters()
    }
    fn step_function(&self) -> &'static str {
        self.inner.as_ref().unwrap().step_function()
    }
    fn take_recent_log(&mut self) -> Vec<String> {
        self.inner().take_recent_log()
    }
}

/// Instantiates `model` as subsystem `name` with its first input and first
/// output as slots, and the given real / integer parameters.
fn subsystem(
    fmu: &Fmu,
    name: &str,
    reals: &[(&str, f64)],
    ints: &[(&str, i32)],
    events: &Arc<Mutex<Vec<String>>>,
) -> Box<dyn Subsystem> {
    let output = match fmu.model_description().model_name.as_str() {
        "Gain" => "y",
        _ => "x",
    };
    let sub = fmu_subsystem(fmu, name, ("u", output), reals, ints);
    Box::new(Recorder {
        inner: Some(sub),
        name: name.to_string(),
        events: Arc::clone(events),
    })
}

/// A ring gain1 -> faulty -> gain2 -> gain1 run by the library; returns the
/// run's status and the recorded terminate / free events.
fn ring_run(version: &str, mode: i32) -> (RunStatus, String, Vec<String>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let gain = Fmu::open(fmu(version, "Gain")).unwrap();
    let faulty = Fmu::open(fmu(version, "Faulty")).unwrap();
    let subsystems = vec![
        subsystem(&gain, "gain1", &[("k", -0.5)], &[], &events),
        subsystem(
            &faulty,
            "faulty",
            &[("x0", 1.0), ("fail_at", 0.305)],
            &[("fail_mode", mode)],
            &events,
        ),
        subsystem(&gain, "gain2", &[("k", 1.0)], &[], &events),
    ];
    let link = |from, to| Connection {
        from_subsystem: from,
        from_slot: 0,
        to_subsystem: to,
        to_slot: 0,
        gain: 1.0,
        offset: 0.0,
        signal: false,
    };
    let system = System::new(SystemSpec {
        subsystems,
        step_multiple: vec![1, 1, 1],
        connections: vec![link(1, 2), link(2, 0), link(0, 1)],
        bonds: Vec::new(),
        nonfinite: Default::default(),
        threads: 1,
    })
    .unwrap();
    let execution = Execution {
        system,
        master: Box::new(FixedStep::new(0.01, Scheme::Jacobi, 0)),
        observers: Vec::new(),
        t_start: 0.0,
        t_stop: 1.0,
        interrupt: None,
        diagnostics: Vec::new(),
        events: Default::default(),
        real_time: None,
    };
    let (summary, error) = execution.run();
    let message = error.map(|e| e.to_string()).unwrap_or_default();
    let events = events.lock().unwrap().clone();
    (summary.status, message, events)
}

#[test]
fn after_a_failure_every_other_fmu_is_terminated_then_every_fmu_freed() {
    for v in ["fmi2", "fmi3"] {
        // Error and Fatal: the failed instance is not terminated; the others
        // are, in reverse order of declaration, before anything is freed.
        for (mode, status) in [(1, "Error"), (7, "Fatal")] {
            let (run_status, message, events) = ring_run(v, mode);
            assert_eq!(run_status, RunStatus::Error);
            assert!(message.contains(&format!("returned {status}")), "{message}");
            assert_eq!(
                events,
                [
                    "terminate gain2",
                    "terminate gain1",
                    "free gain1",
                    "free faulty",
                    "free gain2"
                ],
                "{v} mode {mode}"
            );
        }
        // Discard and NaN: every instance is terminated, then freed.
        for mode in [2, 3] {
            let (run_status, message, events) = ring_run(v, mode);
            assert_eq!(run_status, RunStatus::Error, "{message}");
            assert_eq!(
                events,
                [
                    "terminate gain2",
                    "terminate faulty",
                    "terminate gain1",
                    "free gain1",
                    "free faulty",
                    "free gain2"
                ],
                "{v} mode {mode}"
            );
        }
    }
}

// ----- interruption ---------------------------------------------------------

/// A spawned `cosim run` whose stderr is collected by a thread; killed on
/// drop if still running.
struct Running {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Running {
    fn spawn(args: &[&str]) -> Running {
        Running::spawn_in(args, &std::env::temp_dir())
    }

    /// Like [`Running::spawn`], with `TMPDIR` set to `tmp`.
    fn spawn_in(args: &[&str], tmp: &Path) -> Running {
        let mut child = Command::new(cosim_bin())
            .args(args)
            .env("TMPDIR", tmp)
            .current_dir(root())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Running { child, stderr }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits until `cond` holds, at most `limit`.
    fn wait_for(&mut self, limit: Duration, what: &str, cond: impl Fn(&Running) -> bool) {
        let start = Instant::now();
        while !cond(self) {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("cosim exited ({status}) before {what}: {}", self.stderr());
            }
            assert!(
                start.elapsed() < limit,
                "timed out waiting for {what}: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the exit, at most `limit`; returns the exit code.
    fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Let the reader thread drain the pipe.
                std::thread::sleep(Duration::from_millis(100));
                return status.code();
            }
            assert!(
                start.elapsed() < limit,
                "cosim still running {limit:?} after the signal: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn trace_rows(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0)
}

#[test]
fn sigterm_and_ctrl_c_stop_a_long_run_at_the_next_step_with_outputs_and_summary() {
    for (signal, code) in [("TERM", 143), ("INT", 130)] {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("out");
        let mut run = Running::spawn(&[
            "run",
            "scenarios/b1_quarter_car_a.toml",
            "--stop",
            "1e6",
            "--no-progress",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        // Started writing: rows were flushed.
        let trace = out_dir.join("trace.csv");
        run.wait_for(Duration::from_secs(60), "trace rows", |_| {
            trace_rows(&trace) > 10
        });
        run.signal(signal);
        let sent = Instant::now();
        let exit = run.wait_exit(Duration::from_secs(20));
        let elapsed = sent.elapsed();
        let err = run.stderr();
        assert_eq!(exit, Some(code), "SIG{signal}: {err}");
        assert!(
            elapsed < Duration::from_secs(5),
            "took {elapsed:?} to stop: {err}"
        );
        assert!(
            err.contains(&format!("SIG{signal}: stopping at the next macro step")),
            "{err}"
        );
        assert!(
            err.contains(&format!("interrupted by SIG{signal} at t = ")),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        let s = summary(&out_dir);
        assert_eq!(s["status"], "interrupted", "{s}");
        assert!(
            s["message"]
                .as_str()
                .unwrap()
                .starts_with("interrupted at t = "),
            "{s}"
        );
        // Every completed step is in the trace, every row complete, the
        // last one at the time the summary reports.
        let times = consistent_trace(&trace);
        let reached = s["t_reached"].as_f64().unwrap();
        assert!(reached > 0.0 && reached < 1e6);
        // (serde_json may parse the last digit 1 ulp off: compare closely.)
        let last = *times.last().unwrap();
        assert!(
            (last - reached).abs() <= 1e-12 * reached,
            "{last} != {reached}"
        );
        assert_eq!(
            times.len() as u64,
            s["stats"]["macro_steps"].as_u64().unwrap() + 1
        );
        // The energy and step logs are complete too.
        let energy = Table::read(&out_dir.join("energy.csv")).unwrap();
        assert_eq!(*energy.time().last().unwrap(), last);
        // (A step log row is at the step's end, with its start and size.)
        let steps = Table::read(&out_dir.join("steps.csv")).unwrap();
        assert_eq!(*steps.time().last().unwrap(), last);
        let (t, dt) = (
            *steps.column("t_start").unwrap().last().unwrap(),
            *steps.column("step").unwrap().last().unwrap(),
        );
        assert!((t + dt - last).abs() < 1e-9, "{t} + {dt} != {last}");
    }
}

/// Starts `cosim run` on the Faulty FMU that hangs in its step from 0.1
/// (isolated with a 600 s timeout, or in process) and waits until it hangs;
/// returns the run and its output directory.
fn run_until_the_fmu_hangs(dir: &Path, isolated: bool, extra: &[&str]) -> (Running, PathBuf) {
    let scenario = faulty_scenario(dir, "fmi2", 6, 0.105, 1.0);
    if isolated {
        let text = std::fs::read_to_string(&scenario).unwrap().replacen(
            "name = \"faulty\"\n",
            "name = \"faulty\"\nisolation = \"process\"\nisolation_timeout = 600\n",
            1,
        );
        std::fs::write(&scenario, text).unwrap();
    }
    let out_dir = dir.join("out");
    // Extraction directories go to a temporary directory of the test's own.
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut args = vec![
        "run",
        scenario.to_str().unwrap(),
        "--no-progress",
        "--out",
        out_dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut run = Running::spawn_in(&args, &tmp);
    run.wait_for(Duration::from_secs(60), "the FMU to hang", |r| {
        r.stderr().contains("(fail_mode 6): hanging forever")
    });
    (run, out_dir)
}

/// While an FMU call hangs in this process, the run cannot reach the
/// next macro step: half a second after Ctrl-C the watchdog ends it
/// without waiting for the call, as an interruption: status 130, every
/// completed step in the trace, the summary "interrupted", no extraction
/// directory left behind.
#[test]
fn ctrl_c_ends_a_run_whose_fmu_hangs_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let (mut run, out_dir) = run_until_the_fmu_hangs(dir.path(), false, &[]);
    run.signal("INT");
    let sent = Instant::now();
    let exit = run.wait_exit(Duration::from_secs(10));
    let err = run.stderr();
    assert_eq!(exit, Some(130), "{err}");
    assert!(sent.elapsed() < Duration::from_secs(3), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("subsystem 'faulty': fmi2DoStep at t = 0.1 has not returned after"),
        "{err}"
    );
    let s = summary(&out_dir);
    assert_eq!(s["status"], "interrupted", "{s}");
    let times = consistent_trace(&out_dir.join("trace.csv"));
    assert_eq!(times.len(), 11, "{times:?}");
    assert_eq!(extraction_dirs(&dir.path().join("tmp")), 0);
}

/// `--step-timeout` (or `[master] step_timeout`): an FMU call in this
/// process that has not returned by then ends the run: exit status 1, the
/// hung FMU, function and time named, outputs whole, summary "error".
#[test]
fn a_step_timeout_ends_a_run_whose_fmu_hangs_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (mut run, out_dir) = run_until_the_fmu_hangs(dir.path(), false, &["--step-timeout", "1"]);
    let exit = run.wait_exit(Duration::from_secs(20));
    let err = run.stderr();
    assert_eq!(exit, Some(1), "{err}");
    assert!(started.elapsed() < Duration::from_secs(15), "{err}");
    assert!(
        err.contains("error: subsystem 'faulty': fmi2DoStep at t = 0.1 has not returned after 1."),
        "{err}"
    );
    assert!(err.contains("(step_timeout)"), "{err}");
    let s = summary(&out_dir);
    assert_eq!(s["status"], "error", "{s}");
    assert!(
        s["message"].as_str().unwrap().contains("step_timeout"),
        "{s}"
    );
    let times = consistent_trace(&out_dir.join("trace.csv"));
    assert_eq!(times.len(), 11, "{times:?}");
    assert_eq!(extraction_dirs(&dir.path().join("tmp")), 0);
}

/// A hang once the run has ended (Faulty fail_mode 10: its
/// `fmi*FreeInstance` never returns): every row and the summary
/// ("completed") are written before the FMUs are freed, so the watchdog
/// ends the process as the run ended, exit status 0 with a warning naming
/// the call, instead of 1 beside a summary that says "completed".
#[test]
fn a_hang_freeing_the_fmus_after_a_completed_run_ends_it_as_completed() {
    for version in ["fmi2", "fmi3"] {
        let dir = tempfile::tempdir().unwrap();
        let scenario = faulty_scenario(dir.path(), version, 10, 0.05, 0.2);
        let out_dir = dir.path().join("out");
        let tmp = dir.path().join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let mut run = Running::spawn_in(
            &[
                "run",
                scenario.to_str().unwrap(),
                "--no-progress",
                "--step-timeout",
                "1",
                "--out",
                out_dir.to_str().unwrap(),
            ],
            &tmp,
        );
        let exit = run.wait_exit(Duration::from_secs(30));
        let err = run.stderr();
        assert_eq!(exit, Some(0), "{version}: {err}");
        let free = if version == "fmi2" {
            "fmi2FreeInstance"
        } else {
            "fmi3FreeInstance"
        };
        assert!(
            err.contains(&format!(
                "warning: subsystem 'faulty': {free} at t = 0.19 has not returned after 1."
            )),
            "{err}"
        );
        assert!(err.contains("the run had completed"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        let s = summary(&out_dir);
        assert_eq!(s["status"], "completed", "{s}");
        let times = consistent_trace(&out_dir.join("trace.csv"));
        assert_eq!(times.len(), 21, "{times:?}");
        assert_eq!(extraction_dirs(&tmp), 0);
    }
}

/// The process ids of `pid`'s children (of every thread of it).
fn children(pid: u32) -> Vec<String> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .flatten()
        .flat_map(|t| {
            let text = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            text.split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Ctrl-C while `cosim check` waits for an FMU that initialises in its
/// host process (Faulty fail_mode 11 never returns from initialization):
/// the host's call is cut short, and the check ends as interrupted,
/// status 130, not as bad input (2) for the call that failed.
#[test]
fn ctrl_c_during_a_check_ends_it_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = faulty_scenario(dir.path(), "fmi2", 11, -1.0, 1.0);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut run = Running::spawn_in(&["check", scenario.to_str().unwrap()], &tmp);
    let pid = run.child.id();
    run.wait_for(Duration::from_secs(60), "a host process", |_| {
        !children(pid).is_empty()
    });
    // (The host has loaded and is initialising, or about to: either way
    // the check waits for it.)
    std::thread::sleep(Duration::from_millis(300));
    run.signal("INT");
    let exit = run.wait_exit(Duration::from_secs(20));
    let err = run.stderr();
    assert_eq!(exit, Some(130), "{err}");
    assert!(err.contains("error: interrupted"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(extraction_dirs(&tmp), 0);
}

/// `--init-timeout` (or `[master] init_timeout`): a call of the
/// initialization (here the initial outputs read, Faulty fail_mode 11)
/// that has not returned by then ends the run as `--step-timeout` does a
/// step: exit status 1, the FMU and the call named, summary "error".
#[test]
fn an_init_timeout_ends_a_run_whose_fmu_hangs_in_initialization() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = faulty_scenario(dir.path(), "fmi2", 11, -1.0, 1.0);
    let out_dir = dir.path().join("out");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut run = Running::spawn_in(
        &[
            "run",
            scenario.to_str().unwrap(),
            "--no-progress",
            "--init-timeout",
            "1",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &tmp,
    );
    let exit = run.wait_exit(Duration::from_secs(30));
    let err = run.stderr();
    assert_eq!(exit, Some(1), "{err}");
    assert!(
        err.contains("error: subsystem 'faulty': fmi2")
            && err.contains("during initialization has not returned after 1.")
            && err.contains("(init_timeout)"),
        "{err}"
    );
    assert!(err.contains("no step was made"), "{err}");
    let s = summary(&out_dir);
    assert_eq!(s["status"], "error", "{s}");
    assert!(
        s["message"].as_str().unwrap().contains("(init_timeout)"),
        "{s}"
    );
    assert_eq!(extraction_dirs(&tmp), 0);
}

/// In-process FMU calls have a limit without `step_timeout`: 600 s for a
/// step, 3600 s in initialization (`-v` says which apply); 0 turns either
/// off, a negative value is refused.
#[test]
fn in_process_calls_have_default_timeouts_that_0_turns_off() {
    let watchdog_line = |extra: &[&str]| {
        let mut args = vec!["run", "-v", "--no-progress", "--stop", "0.01", "-o"];
        let dir = tempfile::tempdir().unwrap();
        let gain = fmu("fmi2", "Gain");
        args.push(dir.path().to_str().unwrap());
        args.push(gain.to_str().unwrap());
        args.extend_from_slice(extra);
        let out = Command::new(cosim_bin())
            .args(&args)
            .current_dir(root())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{err}");
        err.lines()
            .find(|l| l.contains("watchdog of hung FMU calls"))
            .unwrap_or_else(|| panic!("no watchdog line in {err}"))
            .to_string()
    };
    let line = watchdog_line(&[]);
    assert!(
        line.ends_with("step_timeout 600 s, init_timeout 3600 s"),
        "{line}"
    );
    let line = watchdog_line(&["--step-timeout", "0", "--init-timeout", "7200"]);
    assert!(
        line.ends_with("step_timeout none, init_timeout 7200 s"),
        "{line}"
    );
    let out = Command::new(cosim_bin())
        .args([
            "check",
            fmu("fmi2", "Gain").to_str().unwrap(),
            "--init-timeout",
            "-1",
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("'--init-timeout -1'") && err.contains("or 0 (no limit)"),
        "{err}"
    );
}

/// A run killed outright (`kill -9`, the OOM killer, a batch system's
/// time limit) removes nothing: its extraction directories stay. The next
/// `cosim` of the same user in the same temporary directory removes them
/// (no process holds their locks any more) and leaves those of a run still
/// going; that one removes its own when it ends.
#[test]
fn the_next_run_removes_the_extraction_directories_a_killed_run_left() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let start = |name: &str| {
        let out = dir.path().join(name);
        let mut run = Running::spawn_in(
            &[
                "run",
                "scenarios/b1_quarter_car_a.toml",
                "--stop",
                "1e6",
                "--no-progress",
                "--out",
                out.to_str().unwrap(),
            ],
            &tmp,
        );
        let trace = out.join("trace.csv");
        run.wait_for(Duration::from_secs(60), "trace rows", |_| {
            trace_rows(&trace) > 10
        });
        run
    };
    let mut killed = start("killed");
    // Two FMUs: two directories, and the process's one lock file.
    let of_killed = extraction_entries(&tmp);
    assert_eq!(of_killed.len(), 3, "{of_killed:?}");
    assert_eq!(of_killed.iter().filter(|n| n.ends_with(".lock")).count(), 1);
    let mut live = start("live");
    let of_live: Vec<String> = extraction_entries(&tmp)
        .into_iter()
        .filter(|n| !of_killed.contains(n))
        .collect();
    assert_eq!(of_live.len(), 3, "{of_live:?}");

    killed.signal("KILL");
    assert_eq!(killed.wait_exit(Duration::from_secs(10)), None);
    assert_eq!(extraction_entries(&tmp).len(), 6);

    let out = Command::new(cosim_bin())
        .args([
            "run",
            "scenarios/b1_quarter_car_a.toml",
            "--stop",
            "0.01",
            "-q",
        ])
        .arg("--out")
        .arg(dir.path().join("next"))
        .env("TMPDIR", &tmp)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(extraction_entries(&tmp), of_live);

    live.signal("TERM");
    assert_eq!(live.wait_exit(Duration::from_secs(10)), Some(143));
    assert_eq!(extraction_entries(&tmp), Vec::<String>::new());
}

/// The names of the extraction directories (`cosim-fmu-*`) and lock files
/// (`cosim-owner-*`) in `tmp`, sorted.
fn extraction_entries(tmp: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cosim-fmu-") || n.starts_with("cosim-owner-"))
        .collect();
    names.sort();
    names
}

/// Extraction directories and lock files in `tmp`.
fn extraction_dirs(tmp: &Path) -> usize {
    if !tmp.exists() {
        return 0;
    }
    extraction_entries(tmp).len()
}

/// The same hang with the FMU isolated: the first Ctrl-C ends the run at
/// once (the master stops waiting and kills the host) instead of after
/// `isolation_timeout`, as an ordinary interruption: status 130, summary
/// "interrupted", every completed step in the trace.
#[test]
fn a_hanging_isolated_fmu_does_not_hold_up_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let (mut run, out_dir) = run_until_the_fmu_hangs(dir.path(), true, &[]);
    run.signal("INT");
    let sent = Instant::now();
    let exit = run.wait_exit(Duration::from_secs(20));
    let err = run.stderr();
    assert_eq!(exit, Some(130), "{err}");
    assert!(sent.elapsed() < Duration::from_secs(5), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("subsystem 'faulty': fmi2DoStep at t = 0.1: interrupted while the FMU had not answered: its host process (pid "),
        "{err}"
    );
    assert!(err.contains("interrupted by SIGINT at t = 0.1"), "{err}");
    let s = summary(&out_dir);
    assert_eq!(s["status"], "interrupted", "{s}");
    let times = consistent_trace(&out_dir.join("trace.csv"));
    assert_eq!(times.len(), 11, "{times:?}");
}

// ----- status codes the kit never returns: a hand-written C FMU -------------

/// A scenario `<name>.toml` in `dir`: the Hostile FMU with `parameters`
/// (a TOML inline table's body) beside a Gain fed by it, 0 to 1 s by 0.01.
fn hostile_scenario(dir: &Path, name: &str, parameters: &str) -> PathBuf {
    let hostile = hostile_fmu(dir);
    let scenario = dir.join(format!("{name}.toml"));
    std::fs::write(
        &scenario,
        format!(
            r#"[simulation]
stop = 1.0

[master]
step = 0.01

[[subsystems]]
name = "hostile"
fmu = "{}"
parameters = {{ {parameters} }}

[[subsystems]]
name = "gain"
fmu = "{}"

[[connections]]
from = "hostile.y"
to = "gain.u"
"#,
            hostile.display(),
            fmu("fmi2", "Gain").display()
        ),
    )
    .unwrap();
    scenario
}

/// Runs the Hostile FMU (beside a Gain fed by it) with doStep returning
/// `status` once at t = 0.5 (`extra`: more arguments of `cosim run`).
fn run_hostile(dir: &Path, status: i32, extra: &[&str]) -> (Output, PathBuf) {
    let scenario = hostile_scenario(
        dir,
        &format!("hostile{status}"),
        &format!("status = {status}"),
    );
    let out_dir = dir.join(format!("out{status}{}", extra.join("")));
    (run_logged(&scenario, &out_dir, extra), out_dir)
}

#[test]
fn a_warning_status_is_logged_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (out, out_dir) = run_hostile(dir.path(), 1, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("fmi2DoStep returned Warning"), "{err}");
    assert!(
        err.contains("Hostile: returning status 1 in the step from 0.49 to 0.5"),
        "{err}"
    );
    let t = consistent_trace(&out_dir.join("trace.csv"));
    assert_eq!(t.len(), 101);
    let s = summary(&out_dir);
    assert_eq!(s["status"], "completed");
    assert_eq!(s["t_reached"], 1.0);
}

/// A status code outside the standard is not trusted: treated as Fatal, the
/// instance is not called again (not even freed), the others are
/// terminated; the message names the code (it said "returned Fatal"), in
/// process and isolated alike.
#[test]
fn an_invalid_status_code_is_named_and_treated_as_fatal() {
    let dir = tempfile::tempdir().unwrap();
    for extra in [&[][..], &["--isolation", "process"]] {
        let (out, out_dir) = run_hostile(dir.path(), 7, extra);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(
            err.contains(
                "error: FMU instance 'hostile': fmi2DoStep returned an invalid status 7 \
                 (not an fmi2Status: treated as Fatal) at t = 0.49; the FMU logged:\n  \
                 [invalid status 7] logStatusWarning: Hostile: returning status 7 in the step from 0.49 to 0.5"
            ),
            "{extra:?}: {err}"
        );
        assert!(err.contains("subsystem 'gain' terminated"), "{err}");
        assert!(
            err.contains("subsystem 'hostile' failed: not terminated"),
            "{err}"
        );
        assert_eq!(consistent_trace(&out_dir.join("trace.csv")).len(), 50);
        let s = summary(&out_dir);
        assert_eq!(s["status"], "error");
        assert!(
            s["message"]
                .as_str()
                .unwrap()
                .contains("returned an invalid status 7 (not an fmi2Status: treated as Fatal)"),
            "{s}"
        );
    }
    // The FMI call log writes the code as its number.
    let calls = dir.path().join("calls.log");
    let arg = format!("--log-fmi-calls={}", calls.display());
    let (out, _) = run_hostile(dir.path(), 7, &[&arg]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let calls = std::fs::read_to_string(&calls).unwrap();
    assert!(
        calls.contains("\n[7] hostile: fmi2DoStep(currentCommunicationPoint=0.49,"),
        "{calls}"
    );
}

/// How a `cosim` process ended, and what it cost.
struct Measured {
    code: Option<i32>,
    signal: Option<i32>,
    /// The first 4 MB of its standard error.
    stderr: String,
    /// All the bytes it wrote there.
    stderr_len: usize,
    /// Its peak resident memory (VmHWM), read from `/proc` every 10 ms
    /// while it runs (VmHWM only grows: the last reading is the peak up to
    /// a few milliseconds before the end).
    max_rss_kib: u64,
}

/// Runs `cosim args` with `env`, reading its standard error and its peak
/// memory. Killed, failing the test, if it has not ended after `limit`
/// (only a pathological regression takes that long).
fn run_measured(args: &[&std::ffi::OsStr], env: &[(&str, &str)], limit: Duration) -> Measured {
    use std::os::unix::process::ExitStatusExt;
    fmus();
    let mut child = Command::new(cosim_bin())
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut kept, mut total, mut buf) = (Vec::new(), 0usize, vec![0u8; 1 << 16]);
        while let Ok(n @ 1..) = pipe.read(&mut buf) {
            total += n;
            let room = (4usize << 20).saturating_sub(kept.len());
            kept.extend_from_slice(&buf[..n.min(room)]);
        }
        (String::from_utf8_lossy(&kept).into_owned(), total)
    });
    let status_file = format!("/proc/{}/status", child.id());
    let start = Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let Ok(text) = std::fs::read_to_string(&status_file)
            && let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kib);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("cosim {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let (stderr, stderr_len) = reader.join().unwrap();
    assert!(peak > 0, "no VmHWM read from {status_file}");
    Measured {
        code: status.code(),
        signal: status.signal(),
        stderr,
        stderr_len,
        max_rss_kib: peak,
    }
}

/// The start and the end of a long text, for assertion messages.
fn ends(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= 2000 {
        return text.to_string();
    }
    let head: String = chars[..1000].iter().collect();
    let tail: String = chars[chars.len() - 1000..].iter().collect();
    format!("{head}\n[...]\n{tail}")
}

/// Log messages whose formats would take seconds and gigabytes to expand
/// in full (`%900000000d`, `%.900000000f`, the same through `*`
/// arguments) and a 1 MB message: each is cut at 64 KiB with a note, the
/// run completes, and its memory and standard error stay small, in
/// process and isolated (the host formats with the same bounds, the
/// master forwards; the master's memory is measured). Before:
/// 4 min 10 s, 8.8 GB and 3.6 GB of standard error in process; isolated
/// 3.5 GB in the master, and the host killed after isolation_timeout.
#[test]
fn a_logger_bomb_costs_a_bounded_message_in_process_and_isolated() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = hostile_scenario(dir.path(), "bombs", "status = 0, misbehave = 1");
    for isolation in ["none", "process"] {
        let out_dir = dir.path().join(format!("out_{isolation}"));
        let m = run_measured(
            &[
                "run".as_ref(),
                "--no-progress".as_ref(),
                "--isolation".as_ref(),
                isolation.as_ref(),
                scenario.as_os_str(),
                "--out".as_ref(),
                out_dir.as_os_str(),
            ],
            &[],
            Duration::from_secs(60),
        );
        let err = ends(&m.stderr);
        assert_eq!((m.code, m.signal), (Some(0), None), "{isolation}: {err}");
        assert_eq!(
            m.stderr
                .matches(" ... [message cut at 65536 bytes]")
                .count(),
            5,
            "{isolation}: {err}"
        );
        assert!(
            m.stderr.contains(" WARN width:      "),
            "{isolation}: {err}"
        );
        assert!(
            m.stderr.contains(" WARN precision: 3.2500000"),
            "{isolation}: {err}"
        );
        assert!(
            m.stderr.contains(" WARN long: xxxxxxxx"),
            "{isolation}: {err}"
        );
        assert!(
            m.stderr.contains("after the bombs: 5 ok 1.500"),
            "{isolation}: {err}"
        );
        assert!(
            m.stderr_len < 1 << 20,
            "{isolation}: {} bytes",
            m.stderr_len
        );
        assert!(
            m.max_rss_kib < 256 * 1024,
            "{isolation}: peak memory {} KiB",
            m.max_rss_kib
        );
        assert_eq!(summary(&out_dir)["status"], "completed", "{isolation}");
    }
}

/// An FMU's log line quoted in the final `error:` line cannot drive the
/// terminal: ESC, BEL, CR and C1 controls are escaped there as in the log
/// line (`\x1b`), while `summary.json` keeps the FMU's text as it was
/// (JSON-escaped), in process and isolated.
#[test]
fn control_bytes_an_fmu_logs_are_escaped_in_the_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = hostile_scenario(dir.path(), "controls", "status = 3, misbehave = 2");
    for extra in [&[][..], &["--isolation", "process"]] {
        let out_dir = dir.path().join(format!("out{}", extra.join("")));
        let out = run_logged(&scenario, &out_dir, extra);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        let raw: Vec<u8> = out
            .stderr
            .iter()
            .copied()
            .filter(|&b| b < 0x20 && b != b'\n' && b != b'\t')
            .collect();
        assert_eq!(raw, b"", "{extra:?}: control bytes on stderr: {err}");
        assert!(!err.contains('\u{9b}'), "{extra:?}: {err}");
        assert!(
            err.contains(
                "error: FMU instance 'hostile': fmi2DoStep returned Error at t = 0.49; the FMU logged:\n  \
                 [Error] log\\x1b[1mCategory: Hostile: \\x1b[2J\\x1b[31mred\\x1b[0m \\x1b]0;title\\x07 bell\\x0d back \\u{9b} csi; \
                 returning status 3 in the step from 0.49 to 0.5\n"
            ),
            "{extra:?}: {err}"
        );
        let s = summary(&out_dir);
        assert!(
            s["message"].as_str().unwrap().contains(
                "[Error] log\u{1b}[1mCategory: Hostile: \u{1b}[2J\u{1b}[31mred\u{1b}[0m \u{1b}]0;title\u{7} bell\r back \u{9b} csi;"
            ),
            "{extra:?}: {s}"
        );
    }
}

/// A thread the FMU started and leaves running after fmi2FreeInstance
/// (calling into its library every 0.2 ms) does not turn a completed run
/// into a crash: the library is never unloaded under it. Exit status 0,
/// summary `completed`, no extraction directory left; in process (it was
/// killed by SIGSEGV, 139) and isolated.
#[test]
fn a_thread_the_fmu_leaves_running_does_not_crash_the_completed_run() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = hostile_scenario(dir.path(), "lingering", "status = 0, misbehave = 3");
    for isolation in ["none", "process"] {
        let tmp = dir.path().join(format!("tmp_{isolation}"));
        std::fs::create_dir(&tmp).unwrap();
        let out_dir = dir.path().join(format!("out_{isolation}"));
        let m = run_measured(
            &[
                "run".as_ref(),
                "--no-progress".as_ref(),
                "--isolation".as_ref(),
                isolation.as_ref(),
                scenario.as_os_str(),
                "--out".as_ref(),
                out_dir.as_os_str(),
            ],
            &[("TMPDIR", tmp.to_str().unwrap())],
            Duration::from_secs(60),
        );
        assert_eq!(
            (m.code, m.signal),
            (Some(0), None),
            "{isolation}: {}",
            m.stderr
        );
        assert_eq!(summary(&out_dir)["status"], "completed", "{isolation}");
        assert_eq!(
            extraction_entries(&tmp),
            Vec::<String>::new(),
            "{isolation}"
        );
    }
}

/// An output that only a sparse trace shows is read for the trace's rows
/// (`System::read_rest`), so a NaN in it is found at the next row: the
/// message says when it was last read, and the last row shows the NaN
/// that stopped the run under its time, not the value of the row before.
/// A trace written every step (or nearly: a row at least every seven steps,
/// by a decimation or an interval) reads its
/// values with every step (the quiet path, `System::read_every_step`):
/// the NaN is then found by the step that read it, as in a coupled
/// output, and the trace ends at the step before.
#[test]
fn a_nan_in_an_output_only_the_trace_shows_is_found_at_the_next_row() {
    let dir = tempfile::tempdir().unwrap();
    for (outputs, found, last_read) in [
        ("decimation = 9\n", 0.36, Some(0.27)),
        ("interval = 0.09\n", 0.36, Some(0.27)),
        ("", 0.31, None),
        ("decimation = 7\n", 0.31, None),
        ("interval = 0.07\n", 0.31, None),
    ] {
        let path = dir.path().join("traced_only.toml");
        std::fs::write(
            &path,
            format!(
                "[simulation]\nstop = 1.0\n[master]\nstep = 0.01\n[outputs]\n{outputs}\
                 [[subsystems]]\nname = \"src\"\nfmu = \"{}\"\nstart = {{ u = 1.0 }}\n\
                 [[subsystems]]\nname = \"faulty\"\nfmu = \"{}\"\n\
                 parameters = {{ fail_at = 0.305, fail_mode = 3 }}\n\
                 [[connections]]\nfrom = \"src.x\"\nto = \"faulty.u\"\n",
                fmu("fmi2", "Integrator").display(),
                fmu("fmi2", "Faulty").display()
            ),
        )
        .unwrap();
        let out_dir = dir.path().join("out");
        let out = run_logged(&path, &out_dir, &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        let trace = Table::read(&out_dir.join("trace.csv")).unwrap();
        let x = trace.column("faulty.x").unwrap();
        let t_last = *trace.time().last().unwrap();
        match last_read {
            Some(last_read) => {
                assert!(
                    err.contains(&format!(
                        "subsystem 'faulty': variable 'x' is NaN at t = {found} (an output read only for the trace's rows; it was last read at t = {last_read})"
                    )),
                    "{outputs:?}: {err}"
                );
                assert_eq!(t_last, found, "{outputs:?}");
                assert!(x.last().unwrap().is_nan(), "{outputs:?}: {x:?}");
                assert!(x[..x.len() - 1].iter().all(|v| v.is_finite()), "{x:?}");
                // The coupled values of that point are those of the step to it.
                let src = trace.column("src.x").unwrap();
                assert!((src.last().unwrap() - found).abs() < 1e-12, "{src:?}");
            }
            None => {
                assert!(
                    err.contains(&format!(
                        "subsystem 'faulty': variable 'x' is NaN at t = {found}: the co-simulation diverged or the FMU failed"
                    )),
                    "{outputs:?}: {err}"
                );
                assert!(
                    (t_last - (found - 0.01)).abs() < 1e-12,
                    "{outputs:?}: {t_last}"
                );
                assert!(x.iter().all(|v| v.is_finite()), "{outputs:?}: {x:?}");
            }
        }
    }
}

/// A master that retries smaller steps after an FMU discards one, and
/// gives up at its minimum step, names the FMU and what it did, not the
/// error estimate of the outputs of a failed attempt.
#[test]
fn a_master_that_gives_up_after_discarded_steps_names_the_fmu() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, said) in [
        ("richardson", "the last attempt failed: "),
        ("ifosmondi", "the step failed down to the minimum step"),
    ] {
        let path = dir.path().join(format!("{kind}.toml"));
        std::fs::write(
            &path,
            format!(
                "[simulation]\nstop = 1.0\n[master]\nkind = \"{kind}\"\nstep = 0.01\n\
                 [[subsystems]]\nname = \"src\"\nfmu = \"{}\"\nstart = {{ u = 1.0 }}\n\
                 [[subsystems]]\nname = \"faulty\"\nfmu = \"{}\"\n\
                 parameters = {{ fail_at = 0.305, fail_mode = 2 }}\n\
                 [[connections]]\nfrom = \"src.x\"\nto = \"faulty.u\"\n",
                fmu("fmi2", "Integrator").display(),
                fmu("fmi2", "Faulty").display()
            ),
        )
        .unwrap();
        let out_dir = dir.path().join(format!("out_{kind}"));
        let out = run_logged(&path, &out_dir, &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{kind}: {err}");
        let line = err
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_else(|| panic!("{kind}: {err}"));
        assert!(line.contains(said), "{kind}: {line}");
        assert!(
            line.contains("FMU instance 'faulty': fmi2DoStep returned Discard"),
            "{kind}: {line}"
        );
        assert!(!line.contains("largest normalised"), "{kind}: {line}");
        assert!(!line.contains("cannot redo"), "{kind}: {line}");
    }
}

/// SIGINT or SIGTERM stops a sweep as it stops a run: the running run at
/// its next macro step (the sweep passes the signal on to its worker
/// processes), the others not started, and the summary lists them all;
/// the exit status is 130 or 143.
#[test]
fn a_signal_stops_a_sweep_with_its_summary_written() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = root().join("scenarios/b1_quarter_car_a.toml");
    let sweep = dir.path().join("long.toml");
    std::fs::write(
        &sweep,
        format!(
            "[sweep]\nscenario = \"{}\"\nset = {{ \"simulation.stop\" = 600.0, \"master.step_timeout\" = 5.0 }}\n[[sweep.axes]]\nkey = \"master.step\"\nvalues = [1e-4, 2e-4, 3e-4]\n",
            scenario.display()
        ),
    )
    .unwrap();
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let out = dir.path().join(format!("out_{signal}"));
        let mut running = Running::spawn(&[
            "sweep",
            sweep.to_str().unwrap(),
            "--jobs",
            "1",
            "--no-progress",
            "--no-plot",
            "--out",
            out.to_str().unwrap(),
        ]);
        let runs = out.join("runs");
        running.wait_for(Duration::from_secs(60), "the first run", |_| {
            std::fs::read_dir(&runs).is_ok_and(|mut d| d.next().is_some())
        });
        std::thread::sleep(Duration::from_millis(300));
        running.signal(signal);
        assert_eq!(
            running.wait_exit(Duration::from_secs(30)),
            Some(code),
            "{}",
            running.stderr()
        );
        let err = running.stderr();
        assert!(
            err.contains(&format!("interrupted by SIG{signal}")),
            "{err}"
        );
        let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
        let rows: Vec<&str> = summary.lines().skip(1).collect();
        assert_eq!(rows.len(), 3, "{summary}");
        assert!(rows.iter().all(|r| r.contains("interrupted")), "{summary}");
    }
}
