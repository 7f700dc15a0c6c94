//! `--log-fmi-calls`: every FMI call, with its arguments, variable names
//! and status, one line per call (docs/fmi-call-log.md), from FMUs in this
//! process and in host processes, to a file or to standard error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Output;

use cosim_tests::{cosim, fmi2, scenario};

const STATUSES: [&str; 6] = ["OK", "Warning", "Discard", "Error", "Fatal", "Pending"];

/// One parsed line: `[status] instance: function(args)[ /* comment */]`.
#[derive(Debug, Clone, PartialEq)]
struct Call {
    status: String,
    instance: String,
    function: String,
    /// Everything after the function name, from `(`.
    rest: String,
}

impl Call {
    /// The value of a scalar argument `name=value`.
    fn arg(&self, name: &str) -> Option<&str> {
        let args = &self.rest[1..];
        let at = args
            .match_indices(&format!("{name}="))
            .map(|(i, _)| i)
            .find(|&i| i == 0 || args[..i].ends_with(", "))?;
        let value = &args[at + name.len() + 1..];
        let end = value.find([',', ')']).unwrap_or(value.len());
        Some(value[..end].trim())
    }

    fn num(&self, name: &str) -> f64 {
        let v = self
            .arg(name)
            .unwrap_or_else(|| panic!("no {name} in {self:?}"));
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v} is not a number in {self:?}"))
    }
}

/// Parses a call-log line; panics on a line that is not one (every line
/// has a status, an instance and a call).
fn parse(line: &str) -> Call {
    let parts = line
        .strip_prefix('[')
        .and_then(|r| r.split_once("] "))
        .and_then(|(status, r)| Some((status, r.split_once(": ")?)))
        .and_then(|(status, (instance, r))| Some((status, instance, r.split_at(r.find('(')?))));
    let Some((status, instance, (function, rest))) = parts else {
        panic!("not a call-log line: {line:?}");
    };
    assert!(STATUSES.contains(&status), "status {status:?} in {line:?}");
    assert!(
        function.starts_with("fmi2") || function.starts_with("fmi3"),
        "{line:?}"
    );
    assert!(
        rest.ends_with(')') || rest.ends_with(" */"),
        "unterminated call in {line:?}"
    );
    Call {
        status: status.into(),
        instance: instance.into(),
        function: function.into(),
        rest: rest.into(),
    }
}

/// The calls of a whole log (every line must be one).
fn calls(log: &str) -> Vec<Call> {
    log.lines().map(parse).collect()
}

/// The call-log lines among other output (standard error).
fn call_lines(text: &str) -> Vec<Call> {
    text.lines()
        .filter(|l| {
            STATUSES
                .iter()
                .any(|s| l.starts_with(&format!("[{s}] ")) && l.contains(": fmi"))
        })
        .map(parse)
        .collect()
}

fn of<'a>(calls: &'a [Call], instance: &str) -> Vec<&'a Call> {
    calls.iter().filter(|c| c.instance == instance).collect()
}

fn position(calls: &[&Call], function: &str) -> usize {
    calls
        .iter()
        .position(|c| c.function == function)
        .unwrap_or_else(|| panic!("no {function} in {calls:#?}"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `cosim run <scenario> <args>`; asserts success.
fn run_ok(scenario: &Path, args: &[&str]) -> Output {
    let mut all = vec!["run", scenario.to_str().unwrap(), "--no-progress"];
    all.extend_from_slice(args);
    let out = cosim(&all);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

/// The fixed steps of `calls` (`fmiXDoStep` lines): each at `t0 + n h`
/// (to rounding), the last one ending at `stop`, none allowed to restore
/// an earlier state.
fn check_steps(steps: &[&Call], h: f64, stop: f64) {
    let n = (stop / h).round() as usize;
    assert_eq!(steps.len(), n, "{steps:#?}");
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s.status, "OK", "{s:?}");
        let t = s.num("currentCommunicationPoint");
        assert!((t - i as f64 * h).abs() < 1e-12, "step {i} at {t}: {s:?}");
        assert!((s.num("communicationStepSize") - h).abs() < 1e-12, "{s:?}");
        assert_eq!(
            s.arg("noSetFMUStatePriorToCurrentPoint"),
            Some("1"),
            "{s:?}"
        );
    }
    let last = steps.last().unwrap();
    let end = last.num("currentCommunicationPoint") + last.num("communicationStepSize");
    assert!((end - stop).abs() < 1e-12, "last step ends at {end}");
}

/// B5 (FMI 2 Mass and Spring), `--set spring.k=2 --stop 0.3`: the calling
/// sequence of each instance, the parameter with its variable name, the
/// times of the steps.
fn check_fmi2_log(calls: &[Call]) {
    for c in calls {
        assert!(["mass", "spring"].contains(&c.instance.as_str()), "{c:?}");
        assert_eq!(c.status, "OK", "{c:?}");
    }
    for name in ["mass", "spring"] {
        let mine = of(calls, name);
        let functions: Vec<&str> = mine.iter().map(|c| c.function.as_str()).collect();
        let inst = mine[0];
        assert_eq!(inst.function, "fmi2Instantiate", "{functions:?}");
        assert_eq!(inst.arg("instanceName"), Some(&*format!("\"{name}\"")));
        assert!(inst.arg("fmuType").unwrap().starts_with('1'), "{inst:?}");
        assert!(inst.arg("fmuGUID").unwrap().starts_with('"'), "{inst:?}");
        assert!(
            inst.arg("fmuResourceLocation")
                .unwrap()
                .starts_with("\"file://"),
            "{inst:?}"
        );
        assert_eq!(inst.arg("visible"), Some("0"));
        assert_eq!(inst.arg("loggingOn"), Some("1"));
        assert_eq!(mine[1].function, "fmi2SetupExperiment", "{functions:?}");
        let setup = mine[1];
        assert_eq!(setup.arg("toleranceDefined"), Some("0"));
        assert_eq!(setup.arg("startTime"), Some("0"));
        assert_eq!(setup.arg("stopTimeDefined"), Some("1"));
        assert_eq!(setup.arg("stopTime"), Some("0.3"));
        let enter = position(&mine, "fmi2EnterInitializationMode");
        let exit = position(&mine, "fmi2ExitInitializationMode");
        let first_step = position(&mine, "fmi2DoStep");
        assert!(
            1 < enter && enter < exit && exit < first_step,
            "{functions:?}"
        );
        let n = mine.len();
        assert_eq!(
            &functions[n - 2..],
            ["fmi2Terminate", "fmi2FreeInstance"],
            "{functions:?}"
        );
        let steps: Vec<&Call> = mine
            .iter()
            .copied()
            .filter(|c| c.function == "fmi2DoStep")
            .collect();
        check_steps(&steps, 0.1, 0.3);
        // Values are read and written with the names of their variables.
        assert!(
            mine.iter()
                .any(|c| c.function == "fmi2GetReal" && c.rest.contains(" /* ")),
            "{mine:#?}"
        );
    }
    // The parameter, between setup and initialization, with its name.
    let spring = of(calls, "spring");
    let set = spring
        .iter()
        .position(|c| {
            c.function == "fmi2SetReal"
                && c.rest.contains("/* k */")
                && c.rest.contains("value={2}")
        })
        .unwrap_or_else(|| panic!("no fmi2SetReal of k: {spring:#?}"));
    assert_eq!(spring[set].arg("nvr"), Some("1"));
    assert!(
        1 < set && set < position(&spring, "fmi2EnterInitializationMode"),
        "{spring:#?}"
    );
}

/// B1 A on the FMI 3 builds, `--set chassis.m_c=500 --stop 0.003`.
fn check_fmi3_log(calls: &[Call]) {
    for c in calls {
        assert!(["chassis", "wheel"].contains(&c.instance.as_str()), "{c:?}");
        assert_eq!(c.status, "OK", "{c:?}");
    }
    for name in ["chassis", "wheel"] {
        let mine = of(calls, name);
        let functions: Vec<&str> = mine.iter().map(|c| c.function.as_str()).collect();
        let inst = mine[0];
        assert_eq!(
            inst.function, "fmi3InstantiateCoSimulation",
            "{functions:?}"
        );
        assert_eq!(inst.arg("instanceName"), Some(&*format!("\"{name}\"")));
        assert!(inst.arg("instantiationToken").unwrap().starts_with('"'));
        assert!(
            inst.arg("resourcePath").unwrap().ends_with("/\""),
            "{inst:?}"
        );
        for (flag, value) in [
            ("visible", "0"),
            ("loggingOn", "1"),
            ("eventModeUsed", "0"),
            ("earlyReturnAllowed", "0"),
        ] {
            assert_eq!(inst.arg(flag), Some(value), "{flag} in {inst:?}");
        }
        let enter = position(&mine, "fmi3EnterInitializationMode");
        let e = mine[enter];
        assert_eq!(e.arg("toleranceDefined"), Some("0"));
        assert_eq!(e.arg("startTime"), Some("0"));
        assert_eq!(e.arg("stopTimeDefined"), Some("1"));
        assert_eq!(e.arg("stopTime"), Some("0.003"));
        let exit = position(&mine, "fmi3ExitInitializationMode");
        let first_step = position(&mine, "fmi3DoStep");
        assert!(enter < exit && exit < first_step, "{functions:?}");
        let n = mine.len();
        assert_eq!(
            &functions[n - 2..],
            ["fmi3Terminate", "fmi3FreeInstance"],
            "{functions:?}"
        );
        let steps: Vec<&Call> = mine
            .iter()
            .copied()
            .filter(|c| c.function == "fmi3DoStep")
            .collect();
        check_steps(&steps, 1e-3, 0.003);
        for s in &steps {
            // The output arguments: a completed step.
            assert_eq!(s.arg("eventHandlingNeeded"), Some("0"), "{s:?}");
            assert_eq!(s.arg("terminateSimulation"), Some("0"), "{s:?}");
            assert_eq!(s.arg("earlyReturn"), Some("0"), "{s:?}");
            let end = s.num("currentCommunicationPoint") + s.num("communicationStepSize");
            assert!((s.num("lastSuccessfulTime") - end).abs() < 1e-12, "{s:?}");
        }
        // Typed calls with both counts.
        let get = mine
            .iter()
            .find(|c| c.function == "fmi3GetFloat64")
            .unwrap();
        assert_eq!(get.arg("nValueReferences"), get.arg("nValues"), "{get:?}");
    }
    // The parameter, before initialization, with its name.
    let chassis = of(calls, "chassis");
    let set = chassis
        .iter()
        .position(|c| {
            c.function == "fmi3SetFloat64"
                && c.rest.contains("/* m_c */")
                && c.rest.contains("values={500}")
        })
        .unwrap_or_else(|| panic!("no fmi3SetFloat64 of m_c: {chassis:#?}"));
    assert_eq!(chassis[set].arg("nValueReferences"), Some("1"));
    assert_eq!(chassis[set].arg("nValues"), Some("1"));
    assert!(
        0 < set && set < position(&chassis, "fmi3EnterInitializationMode"),
        "{chassis:#?}"
    );
}

fn fmi2_run(isolation: &str) -> Vec<Call> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    run_ok(
        &scenario("b5_mass_spring.toml"),
        &[
            "--set",
            "spring.k=2",
            "--stop",
            "0.3",
            "--isolation",
            isolation,
            "--out",
            dir.path().join("out").to_str().unwrap(),
            &format!("--log-fmi-calls={}", log.display()),
        ],
    );
    calls(&std::fs::read_to_string(&log).unwrap())
}

fn fmi3_run(isolation: &str) -> Vec<Call> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    run_ok(
        &scenario("b1_quarter_car_a_fmi3.toml"),
        &[
            "--set",
            "chassis.m_c=500",
            "--stop",
            "0.003",
            "--isolation",
            isolation,
            "--out",
            dir.path().join("out").to_str().unwrap(),
            &format!("--log-fmi-calls={}", log.display()),
        ],
    );
    calls(&std::fs::read_to_string(&log).unwrap())
}

#[test]
fn fmi2_calls_are_logged_to_a_file_in_order_with_names_and_statuses() {
    check_fmi2_log(&fmi2_run("none"));
}

#[test]
fn fmi2_calls_of_fmus_in_host_processes_reach_the_same_file() {
    check_fmi2_log(&fmi2_run("process"));
}

#[test]
fn fmi3_calls_are_logged_with_typed_calls_and_step_outputs() {
    check_fmi3_log(&fmi3_run("none"));
}

#[test]
fn fmi3_calls_of_fmus_in_host_processes_reach_the_same_file() {
    check_fmi3_log(&fmi3_run("process"));
}

/// The calls of one instance without its instantiation (whose resource
/// directory is a fresh temporary one each run).
fn sequence(calls: &[Call], instance: &str) -> Vec<Call> {
    calls
        .iter()
        .filter(|c| c.instance == instance && !c.function.starts_with("fmi2Instantiate"))
        .cloned()
        .collect()
}

#[test]
fn without_a_file_the_log_goes_to_standard_error_unchanged_from_host_processes() {
    let dir = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    for isolation in ["none", "process"] {
        let out = run_ok(
            &scenario("b5_mass_spring.toml"),
            &[
                "--set",
                "spring.k=2",
                "--stop",
                "0.3",
                "--isolation",
                isolation,
                "--out",
                dir.path().join(isolation).to_str().unwrap(),
                "--log-fmi-calls",
            ],
        );
        let calls = call_lines(&stderr(&out));
        check_fmi2_log(&calls);
        runs.push(calls);
    }
    // A host's lines are forwarded as they were written: the same calls
    // with the same arguments as in this process.
    for name in ["mass", "spring"] {
        assert_eq!(sequence(&runs[0], name), sequence(&runs[1], name), "{name}");
    }
}

#[test]
fn cosim_check_logs_the_calls_it_makes() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let out = cosim(&[
        "check",
        scenario("b5_mass_spring.toml").to_str().unwrap(),
        &format!("--log-fmi-calls={}", log.display()),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let calls = calls(&std::fs::read_to_string(&log).unwrap());
    for name in ["mass", "spring"] {
        let functions: Vec<&str> = of(&calls, name)
            .iter()
            .map(|c| c.function.as_str())
            .collect();
        assert_eq!(functions[0], "fmi2Instantiate", "{functions:?}");
        assert!(functions.contains(&"fmi2ExitInitializationMode"));
        assert!(!functions.contains(&"fmi2DoStep"), "{functions:?}");
        assert_eq!(functions.last(), Some(&"fmi2FreeInstance"));
    }
}

/// A Faulty integrator (fail at t = 0.025, `fail_mode`) fed back through a
/// gain, steps of 0.01.
fn faulty_scenario(dir: &Path, mode: i32) -> std::path::PathBuf {
    let text = format!(
        r#"[simulation]
stop = 0.05

[master]
step = 0.01

[[subsystems]]
name = "faulty"
fmu = "{faulty}"
parameters = {{ fail_mode = {mode}, fail_at = 0.025, x0 = 1.0 }}

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
        faulty = fmi2("Faulty").display(),
        gain = fmi2("Gain").display(),
    );
    let path = dir.join(format!("faulty{mode}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_failing_call_is_logged_with_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let scenario = faulty_scenario(dir.path(), 1);
    let out = cosim(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        dir.path().join("out").to_str().unwrap(),
        &format!("--log-fmi-calls={}", log.display()),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let calls = calls(&std::fs::read_to_string(&log).unwrap());
    let faulty = of(&calls, "faulty");
    let failed = faulty
        .iter()
        .find(|c| c.status == "Error")
        .unwrap_or_else(|| panic!("no Error: {faulty:#?}"));
    assert_eq!(failed.function, "fmi2DoStep");
    assert!((failed.num("currentCommunicationPoint") - 0.02).abs() < 1e-12);
    // After Error the instance is only freed.
    let functions: Vec<&str> = faulty.iter().map(|c| c.function.as_str()).collect();
    assert_eq!(
        &functions[functions.len() - 2..],
        ["fmi2DoStep", "fmi2FreeInstance"]
    );
}

#[test]
fn the_log_keeps_every_call_up_to_a_crash_of_the_process() {
    // The FMU calls abort() in its third step, in this process: cosim dies
    // with it, and the log still holds every call that returned.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let scenario = faulty_scenario(dir.path(), 5);
    let out = cosim(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        dir.path().join("out").to_str().unwrap(),
        &format!("--log-fmi-calls={}", log.display()),
    ]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    let calls = calls(&std::fs::read_to_string(&log).unwrap());
    let faulty = of(&calls, "faulty");
    let steps: Vec<f64> = faulty
        .iter()
        .filter(|c| c.function == "fmi2DoStep")
        .map(|c| c.num("currentCommunicationPoint"))
        .collect();
    assert_eq!(steps.len(), 2, "{faulty:#?}");
    assert!((steps[1] - 0.01).abs() < 1e-12);
    // The input set for the step that crashed is the last line.
    let last = faulty.last().unwrap();
    assert_eq!(last.function, "fmi2SetReal", "{last:?}");
}

#[test]
fn a_host_crash_quotes_the_fmu_messages_not_the_call_log() {
    // Isolated, call log on standard error: the lines are forwarded, and
    // the error's quote of the host's last messages is the FMU's own.
    let dir = tempfile::tempdir().unwrap();
    let scenario = faulty_scenario(dir.path(), 4);
    let out = cosim(&[
        "run",
        scenario.to_str().unwrap(),
        "--isolation",
        "process",
        "--out",
        dir.path().join("out").to_str().unwrap(),
        "--log-fmi-calls",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let calls = call_lines(&err);
    assert!(
        calls.iter().any(|c| c.instance == "faulty"
            && c.function == "fmi2DoStep"
            && c.arg("currentCommunicationPoint") == Some("0.01")),
        "{err}"
    );
    let quoted: Vec<&str> = err
        .lines()
        .skip_while(|l| !l.contains("the host's last messages:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert!(
        quoted.iter().any(|l| l.contains("raising SIGSEGV")),
        "{err}"
    );
    assert!(
        quoted.iter().all(|l| !l.contains(": fmi2")),
        "call-log lines quoted as FMU messages: {quoted:#?}"
    );
}

#[test]
fn an_unwritable_log_file_is_bad_input_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("no-such-dir").join("calls.log");
    let out_dir = dir.path().join("out");
    let out = cosim(&[
        "run",
        scenario("b5_mass_spring.toml").to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        &format!("--log-fmi-calls={}", log.display()),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(log.to_str().unwrap()), "{err}");
    assert!(err.contains("--log-fmi-calls"), "{err}");
    assert!(!out_dir.exists(), "the run started: {err}");
}

/// Replaces what differs between runs in a log (extraction directories,
/// callback pointers) by placeholders.
fn normalised(log: &str) -> String {
    // (Written as /tmp whatever TMPDIR says.)
    let tmp = std::env::temp_dir();
    let log = log.replace(tmp.to_str().unwrap().trim_end_matches('/'), "/tmp");
    let mut out = String::with_capacity(log.len());
    let mut rest = log.as_str();
    while let Some(i) = rest.find("cosim-fmu-") {
        out.push_str(&rest[..i + "cosim-fmu-".len()]);
        rest = &rest[i + "cosim-fmu-".len()..];
        let n = rest.find('/').unwrap_or(rest.len());
        out.push_str("XXXXXX");
        rest = &rest[n..];
    }
    out.push_str(rest);
    out.lines()
        .map(|l| match l.find("intermediateUpdate=0x") {
            Some(i) => {
                let tail = &l[i + "intermediateUpdate=0x".len()..];
                let n = tail
                    .find(|c: char| !c.is_ascii_hexdigit())
                    .unwrap_or(tail.len());
                format!("{}intermediateUpdate=0x...{}", &l[..i], &tail[n..])
            }
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The examples of docs/fmi-call-log.md are the logs of the commands they
/// name (blocks `log-b5`, `log-fmi3`, `log-richardson`, `log-discard`).
#[test]
fn the_documented_examples_are_what_the_commands_log() {
    let dir = tempfile::tempdir().unwrap();
    let text_block = |lines: &str| format!("```text\n{lines}\n```");
    // B5, the whole file.
    let log = dir.path().join("b5.log");
    let out = cosim(&[
        "run",
        scenario("b5_mass_spring.toml").to_str().unwrap(),
        "--set",
        "spring.k=2",
        "--stop",
        "0.2",
        "--out",
        dir.path().join("b5").to_str().unwrap(),
        &format!("--log-fmi-calls={}", log.display()),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let b5 = normalised(std::fs::read_to_string(&log).unwrap().trim_end());
    cosim_tests::check_doc_block("fmi-call-log.md", "log-b5", &text_block(&b5));

    // FMI 3 in a host process, to standard error: the chassis's lines.
    let out = cosim(&[
        "run",
        scenario("b1_quarter_car_a_fmi3.toml").to_str().unwrap(),
        "--set",
        "chassis.m_c=500",
        "--stop",
        "0.002",
        "--isolation",
        "process",
        "--log-fmi-calls",
        "--out",
        dir.path().join("fmi3").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let chassis: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("[OK] chassis: fmi3"))
        .collect();
    assert!(chassis.len() > 10, "{err}");
    cosim_tests::check_doc_block(
        "fmi-call-log.md",
        "log-fmi3",
        &text_block(&normalised(&chassis.join("\n"))),
    );

    // Richardson: the chassis's lines after initialization, up to its
    // third doStep (save, a step of 2h, restore, the first step of h).
    let log = dir.path().join("rich.log");
    let out = cosim(&[
        "run",
        scenario("b2_richardson.toml").to_str().unwrap(),
        "--stop",
        "0.0003",
        "--out",
        dir.path().join("rich").to_str().unwrap(),
        &format!("--log-fmi-calls={}", log.display()),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("] chassis: "))
        .skip_while(|l| !l.contains("fmi2ExitInitializationMode"))
        .skip(1)
        .skip_while(|l| !l.contains("fmi2GetFMUstate"))
        .collect();
    let third_step = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("fmi2DoStep"))
        .nth(2)
        .map(|(i, _)| i)
        .unwrap();
    cosim_tests::check_doc_block(
        "fmi-call-log.md",
        "log-richardson",
        &text_block(&lines[..=third_step].join("\n")),
    );

    // A discarded step and the status queries after it.
    let log = dir.path().join("discard.log");
    let faulty = faulty_scenario(dir.path(), 2);
    let _ = cosim(&[
        "run",
        faulty.to_str().unwrap(),
        "--out",
        dir.path().join("discard").to_str().unwrap(),
        &format!("--log-fmi-calls={}", log.display()),
    ]);
    let log = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("[Discard] faulty: fmi2DoStep"))
        .unwrap_or_else(|| panic!("no discarded step: {log}"));
    cosim_tests::check_doc_block(
        "fmi-call-log.md",
        "log-discard",
        &text_block(&lines[at..at + 3].join("\n")),
    );

    // What a log of B1 A (4 s at 1 ms) holds.
    let log = dir.path().join("b1.log");
    let out = cosim(&[
        "run",
        scenario("b1_quarter_car_a.toml").to_str().unwrap(),
        "--out",
        dir.path().join("b1").to_str().unwrap(),
        &format!("--log-fmi-calls={}", log.display()),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&log).unwrap();
    let mb = text.len() as f64 / 1e6;
    cosim_tests::check_doc_block(
        "fmi-call-log.md",
        "log-size",
        &format!(
            "B1 A over 4 s at 1 ms (4 000 macro steps, two FMUs) writes {} lines, {mb:.1} MB.",
            text.lines().count()
        ),
    );
}

/// `cosim run scenario args --output-interval interval`, writing its
/// outputs into `dir/name` and its FMI call log beside them: the calls and
/// the trace.
fn run_logged(
    scenario: &Path,
    args: &[&str],
    dir: &Path,
    name: &str,
    interval: &str,
) -> (Vec<Call>, String) {
    let log = dir.join(format!("{name}.log"));
    let out = dir.join(name);
    let log_arg = format!("--log-fmi-calls={}", log.display());
    let mut all = args.to_vec();
    all.extend_from_slice(&[
        "--output-interval",
        interval,
        "--out",
        out.to_str().unwrap(),
        &log_arg,
    ]);
    run_ok(scenario, &all);
    let trace = std::fs::read_to_string(out.join("trace.csv")).unwrap();
    (calls(&std::fs::read_to_string(&log).unwrap()), trace)
}

/// A trace of `rows` rows after its header, each that of every `every`-th
/// row of `dense` (the same run writing a row at every step).
fn assert_rows_of(sparse: &str, dense: &str, every: usize, rows: usize, what: &str) {
    let dense: Vec<&str> = dense.lines().collect();
    let sparse_rows: Vec<&str> = sparse.lines().collect();
    assert_eq!(sparse_rows.len(), rows + 1, "{what}: {sparse}");
    assert_eq!(sparse_rows[0], dense[0], "{what}: header");
    for (k, row) in sparse_rows[1..].iter().enumerate() {
        assert_eq!(*row, dense[1 + every * k], "{what}: row {k}");
    }
}

/// Read only what is used (issue 21), with typed outputs: the thermostat
/// controller's coupled `heater_on` (Boolean) and `level` (Integer) are
/// read after every step, its traced-only `switches` (Integer) only for
/// the rows that show it (one every 10 steps here), and the rows are
/// those of a run that writes a row every step.
#[test]
fn typed_outputs_only_traced_are_read_for_the_rows_that_show_them() {
    let dir = tempfile::tempdir().unwrap();
    let thermostat = scenario("thermostat.toml");
    let run = |name: &str, interval: &str| {
        run_logged(&thermostat, &["--stop", "60"], dir.path(), name, interval)
    };
    let (sparse, sparse_trace) = run("sparse", "5");
    let controller = of(&sparse, "controller");
    let steps = controller
        .iter()
        .filter(|c| c.function == "fmi2DoStep")
        .count();
    assert_eq!(steps, 120);
    let reads = |var: &str| {
        controller
            .iter()
            .filter(|c| c.function.starts_with("fmi2Get") && c.rest.contains(var))
            .count()
    };
    // Every step, and during initialization.
    assert!(reads("heater_on") > steps, "{}", reads("heater_on"));
    assert!(reads("level") > steps, "{}", reads("level"));
    // The 13 rows (t = 0, 5, .., 60), and during initialization.
    let switches = reads("switches");
    assert!(
        (13..=16).contains(&switches),
        "switches read {switches} times"
    );
    // Once stepping, `switches` is never read with the coupled values.
    let first_step = position(&controller, "fmi2DoStep");
    assert!(
        controller[first_step..]
            .iter()
            .filter(|c| c.rest.contains("switches"))
            .all(|c| !c.rest.contains("level")),
        "{controller:#?}"
    );

    let (_, dense_trace) = run("dense", "0.5");
    assert_rows_of(&sparse_trace, &dense_trace, 10, 13, "thermostat");
}

/// The outputs a step needs are one scalar Float64 ahead of typed ones
/// that are only traced (`FmuSubsystem::float_prefix`, the shape of the
/// Reference FMUs' Feedthrough): each step reads that value alone, in the
/// one Float64 call of the fused set/step/get, and the typed values only for
/// the rows that show them, current there (rows equal to a dense trace's).
#[test]
fn a_float64_head_of_typed_outputs_is_read_alone_at_every_step() {
    let dir = tempfile::tempdir().unwrap();
    // (model FMU, coupled Float64 output, traced typed outputs, get of
    // the Float64, file name)
    let cases = [
        (
            cosim_tests::fmi3("TypeMirror"),
            "sum",
            ["x_f32", "y_i8"],
            "fmi3GetFloat64",
            "fmi3",
        ),
        (
            fmi2("Greeting"),
            "checksum",
            ["length", "length"],
            "fmi2GetReal",
            "fmi2",
        ),
    ];
    for (fmu, head, typed, get_f64, tag) in cases {
        let gain = if tag == "fmi3" {
            cosim_tests::fmi3("Gain")
        } else {
            fmi2("Gain")
        };
        let toml = dir.path().join(format!("{tag}.toml"));
        std::fs::write(
            &toml,
            format!(
                r#"[simulation]
start = 0.0
stop = 3.0

[master]
kind = "fixed-step"
step = 0.1
scheme = "jacobi"

[[subsystems]]
name = "m"
fmu = "{}"

[[subsystems]]
name = "g"
fmu = "{}"

[[connections]]
from = "m.{head}"
to = "g.u"

[outputs]
variables = ["m.{}", "m.{}", "g.y"]
"#,
                fmu.display(),
                gain.display(),
                typed[0],
                typed[1],
            ),
        )
        .unwrap();
        let run = |name: &str, interval: &str| {
            run_logged(&toml, &[], dir.path(), &format!("{tag}-{name}"), interval)
        };
        let (sparse, sparse_trace) = run("sparse", "1");
        let m = of(&sparse, "m");
        let first_step = position(&m, &format!("{tag}DoStep"));
        let stepping = &m[first_step..];
        let steps = stepping
            .iter()
            .filter(|c| c.function.ends_with("DoStep"))
            .count();
        assert_eq!(steps, 30, "{tag}");
        // After every step: the Float64 head alone, in one call.
        for (k, pair) in stepping.windows(2).enumerate() {
            if pair[0].function.ends_with("DoStep") {
                assert_eq!(pair[1].function, get_f64, "{tag}, call {k}: {pair:#?}");
                assert!(pair[1].rest.contains(head), "{tag}: {:?}", pair[1]);
                assert!(!pair[1].rest.contains(typed[0]), "{tag}: {:?}", pair[1]);
            }
        }
        // The typed values: for the rows at t = 1, 2, 3 only.
        for var in typed {
            let reads = stepping.iter().filter(|c| c.rest.contains(var)).count();
            assert_eq!(reads, 3, "{tag}, {var}: {stepping:#?}");
        }

        let (_, dense_trace) = run("dense", "0.1");
        assert_rows_of(&sparse_trace, &dense_trace, 10, 4, tag);
    }
}
