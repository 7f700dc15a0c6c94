//! Process isolation leaves nothing behind: whatever ends a host process
//! (a segfault, an abort, a hang past `isolation_timeout`, a SIGKILL from
//! outside, a signal while the FMUs load or while a held run hangs, the
//! master itself killed), no
//! extraction directory (`cosim-fmu-*`) is left in the temporary directory
//! and no process is left running: no host, and no process the FMU
//! started (`Faulty` fail_mode 8 starts a `sleep`). The master extracts
//! each `.fmu` once and hands its hosts the directory.
//!
//! Every `cosim` runs with `TMPDIR` set to a fresh directory, so the
//! directories counted are exactly its own, and with a marker in its
//! environment, which its hosts and their children inherit: the processes
//! counted are exactly the ones it started.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cosim_tests::{TERMINATION_LOG, cosim_bin, fmus, root};

/// The environment variable marking the processes of one test run.
const MARKER: &str = "COSIM_LEAK_TEST_MARKER";

/// A process started, directly or not, by one `cosim` of a test.
#[derive(Debug)]
struct Proc {
    pid: u32,
    cmdline: String,
}

/// The live (not zombie) processes whose environment holds `marker`.
fn marked_processes(marker: &str) -> Vec<Proc> {
    let needle = format!("{MARKER}={marker}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if !environ
            .split(|&b| b == 0)
            .any(|var| var == needle.as_bytes())
        {
            continue;
        }
        // Dead but not reaped yet (its parent may be a reaper that is
        // slow, or none at all in a container): not running.
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.trim().chars().next());
        if matches!(state, Some('Z' | 'X') | None) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        found.push(Proc {
            pid,
            cmdline: String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .trim()
                .to_string(),
        });
    }
    found
}

/// The extraction directories in `tmp` (with `dirs_only` false, the lock
/// files too: everything named `cosim-fmu-*` or `cosim-owner-*`).
fn extraction_dirs(tmp: &Path, dirs_only: bool) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("cosim-fmu-") || name.starts_with("cosim-owner-")
        })
        .map(|e| e.path())
        .filter(|p| !dirs_only || p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// A `cosim run` with its own `TMPDIR` and marker; stderr collected by a
/// thread; killed on drop if still running.
struct Running {
    child: Child,
    stderr: Arc<Mutex<String>>,
    marker: String,
    tmp: tempfile::TempDir,
}

impl Running {
    fn start(scenario: &Path, out: &Path, extra: &[&str]) -> Running {
        Running::start_logged(scenario, out, extra, TERMINATION_LOG)
    }

    /// [`Running::start`] with `COSIM_LOG` set to `log`.
    fn start_logged(scenario: &Path, out: &Path, extra: &[&str], log: &str) -> Running {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        fmus();
        let marker = format!(
            "{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        );
        let tmp = tempfile::tempdir().unwrap();
        let mut child = Command::new(cosim_bin())
            .args(["run", "--no-progress"])
            .args(extra)
            .arg(scenario)
            .arg("--out")
            .arg(out)
            .env("COSIM_LOG", log)
            .env("TMPDIR", tmp.path())
            .env(MARKER, &marker)
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
        Running {
            child,
            stderr,
            marker,
            tmp,
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The processes of this run other than `cosim run` itself.
    fn others(&self) -> Vec<Proc> {
        marked_processes(&self.marker)
            .into_iter()
            .filter(|p| p.pid != self.child.id())
            .collect()
    }

    /// Its `cosim host` processes.
    fn hosts(&self) -> Vec<Proc> {
        self.others()
            .into_iter()
            .filter(|p| p.cmdline.contains(" host --fmu "))
            .collect()
    }

    /// The `sleep` processes Faulty's fail_mode 8 started.
    fn sleepers(&self) -> Vec<Proc> {
        self.others()
            .into_iter()
            .filter(|p| p.cmdline.starts_with("sleep "))
            .collect()
    }

    /// The extraction directories.
    fn dirs(&self) -> Vec<PathBuf> {
        extraction_dirs(self.tmp.path(), true)
    }

    /// The extraction directories and the lock file.
    fn leftovers(&self) -> Vec<PathBuf> {
        extraction_dirs(self.tmp.path(), false)
    }

    fn signal(&self, pid: u32, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} {pid} failed");
    }

    /// Waits until `cond` holds, at most `limit`, while cosim runs.
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
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits for the exit, at most `limit`; returns the exit code (None:
    /// killed by a signal).
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
                "cosim still running after {limit:?}: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Once cosim has exited: no process of it is left and no extraction
    /// directory or lock file. (A process killed at the end may take a
    /// moment to go.)
    fn assert_nothing_left(&self, case: &str) {
        let start = Instant::now();
        loop {
            let (procs, dirs) = (self.others(), self.leftovers());
            if procs.is_empty() && dirs.is_empty() {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "{case}: left behind: processes {procs:?}, directories {dirs:?}; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // Never leave a sleeper of a failed test behind.
        for p in marked_processes(&self.marker) {
            let _ = Command::new("kill")
                .args(["-KILL", &p.pid.to_string()])
                .status();
        }
    }
}

fn fmu(version: &str, model: &str) -> PathBuf {
    fmus().join(version).join(format!("{model}.fmu"))
}

/// A Faulty integrator (x' = u, isolated, `isolation_timeout = 1`) fed
/// back through a Gain (u = -0.5 x; isolated too with `gain_isolated`),
/// stepped every 0.01 s up to `stop`.
fn faulty_scenario(
    dir: &Path,
    version: &str,
    mode: i32,
    fail_at: f64,
    stop: f64,
    gain_isolated: bool,
) -> PathBuf {
    let gain_isolation = if gain_isolated {
        "isolation = \"process\"\n"
    } else {
        ""
    };
    let text = format!(
        r#"[simulation]
stop = {stop}

[master]
step = 0.01
isolation_hosts = 2

[[subsystems]]
name = "faulty"
fmu = "{faulty}"
parameters = {{ fail_mode = {mode}, fail_at = {fail_at}, x0 = 1.0 }}
isolation = "process"
isolation_timeout = 1

[[subsystems]]
name = "gain"
fmu = "{gain}"
parameters = {{ k = -0.5 }}
{gain_isolation}
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
    let path = dir.join(format!("faulty_{version}_{mode}_{gain_isolated}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// `n` isolated Faulty integrators that never fail (one `.fmu` file) and
/// one isolated Gain, unconnected, stepped every 0.01 s up to `stop`.
fn many_isolated(dir: &Path, n: usize, stop: f64) -> PathBuf {
    let mut text = format!("[simulation]\nstop = {stop}\n\n[master]\nstep = 0.01\n");
    for i in 0..n {
        text.push_str(&format!(
            "\n[[subsystems]]\nname = \"f{i}\"\nfmu = \"{}\"\nisolation = \"process\"\n",
            fmu("fmi2", "Faulty").display()
        ));
    }
    text.push_str(&format!(
        "\n[[subsystems]]\nname = \"gain\"\nfmu = \"{}\"\nisolation = \"process\"\n",
        fmu("fmi2", "Gain").display()
    ));
    let path = dir.join(format!("many_{n}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn summary(out_dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap()).unwrap()
}

/// A host that crashes, aborts or hangs past `isolation_timeout` (and is
/// killed): the run stops cleanly (exit 1) and leaves neither a process
/// nor a directory; also with both FMUs isolated (no FMU in the master).
#[test]
fn a_host_that_dies_or_is_killed_for_a_timeout_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (4, "died of a segmentation fault (SIGSEGV)"),
        (5, "aborted (SIGABRT)"),
        (6, "no answer within 1 s (isolation_timeout)"),
    ];
    for version in ["fmi2", "fmi3"] {
        for (mode, cause) in cases {
            for gain_isolated in [false, true] {
                let case = format!("{version} fail_mode {mode}, gain isolated {gain_isolated}");
                let scenario =
                    faulty_scenario(dir.path(), version, mode, 0.305, 1.0, gain_isolated);
                let out = dir
                    .path()
                    .join(format!("out_{version}_{mode}_{gain_isolated}"));
                let mut run = Running::start(&scenario, &out, &[]);
                let code = run.wait_exit(Duration::from_secs(60));
                let err = run.stderr();
                assert_eq!(code, Some(1), "{case}: {err}");
                assert!(err.contains(cause), "{case}: {err}");
                assert!(!err.contains("panicked"), "{case}: {err}");
                run.assert_nothing_left(&case);
            }
        }
    }
}

/// The FMU starts a child process (fail_mode 8) that would outlive its
/// host; a test then kills the host with SIGKILL. The master reports the
/// dead host (exit 1) and kills its process group: the child goes too,
/// and the directory.
#[test]
fn a_host_killed_from_outside_takes_the_process_its_fmu_started_along() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = faulty_scenario(dir.path(), "fmi2", 8, 0.05, 1e5, false);
    let out = dir.path().join("out");
    let mut run = Running::start(&scenario, &out, &[]);
    run.wait_for(Duration::from_secs(30), "the FMU's child process", |r| {
        r.sleepers().len() == 1
    });
    let hosts = run.hosts();
    assert_eq!(hosts.len(), 1, "{hosts:?}");
    let host = hosts[0].pid;
    run.signal(host, "KILL");
    let code = run.wait_exit(Duration::from_secs(30));
    let err = run.stderr();
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "the FMU's host process (pid {host}) was killed (SIGKILL)"
        )),
        "{err}"
    );
    run.assert_nothing_left("host killed with SIGKILL");
}

/// A run that completes normally while the isolated FMU's child process
/// still sleeps: exit 0, and the child does not outlive the run.
#[test]
fn a_process_an_isolated_fmu_started_does_not_outlive_a_completed_run() {
    let dir = tempfile::tempdir().unwrap();
    for version in ["fmi2", "fmi3"] {
        let scenario = faulty_scenario(dir.path(), version, 8, 0.05, 0.5, false);
        let out = dir.path().join(format!("out_{version}"));
        let mut run = Running::start(&scenario, &out, &[]);
        let code = run.wait_exit(Duration::from_secs(60));
        let err = run.stderr();
        assert_eq!(code, Some(0), "{version}: {err}");
        if version == "fmi2" {
            // FMI 3 FMUs log only with logging on.
            assert!(
                err.contains("(fail_mode 8): started child process "),
                "{err}"
            );
        }
        assert_eq!(summary(&out)["status"], "completed");
        run.assert_nothing_left(version);
    }
}

/// `cosim` itself killed with SIGKILL mid-run (it cannot clean up): its
/// hosts notice, remove the extraction directories they shared with it
/// and kill their process groups, with the FMU's child process.
#[test]
fn killing_the_master_leaves_no_host_no_child_and_no_directory() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = faulty_scenario(dir.path(), "fmi2", 8, 0.05, 1e5, true);
    let out = dir.path().join("out");
    let mut run = Running::start(&scenario, &out, &[]);
    run.wait_for(Duration::from_secs(30), "the FMU's child process", |r| {
        r.sleepers().len() == 1
    });
    assert_eq!(run.hosts().len(), 2, "{:?}", run.others());
    assert_eq!(run.dirs().len(), 2, "{:?}", run.dirs());
    run.signal(run.child.id(), "KILL");
    assert_eq!(run.wait_exit(Duration::from_secs(10)), None);
    run.assert_nothing_left("master killed with SIGKILL");
}

/// SIGINT while 30 isolated FMUs load (sent as soon as the first host
/// runs): the loading stops, the run ends as interrupted (exit 130, a
/// summary with status "interrupted", no "t = NaN"), and every host and
/// directory is gone.
#[test]
fn a_signal_while_isolated_fmus_load_ends_the_run_as_interrupted_leaving_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = many_isolated(dir.path(), 30, 1.0);
    let out = dir.path().join("out");
    let mut run = Running::start(&scenario, &out, &[]);
    run.wait_for(Duration::from_secs(30), "the first host", |r| {
        !r.hosts().is_empty()
    });
    run.signal(run.child.id(), "INT");
    let code = run.wait_exit(Duration::from_secs(30));
    let err = run.stderr();
    assert_eq!(code, Some(130), "{err}");
    assert!(!err.contains("NaN"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("interrupted by SIGINT at t = 0 after 0 macro steps"),
        "{err}"
    );
    let s = summary(&out);
    assert_eq!(s["status"], "interrupted", "{s}");
    assert_eq!(s["initialized"], false, "{s}");
    assert_eq!(s["stats"]["macro_steps"], 0, "{s}");
    assert!(!s["message"].as_str().unwrap_or("").contains("NaN"), "{s}");
    run.assert_nothing_left("SIGINT while loading");
}

/// SIGINT while a held run in the host (every FMU isolated in one host,
/// the quiet stretch taken there) is stuck in an FMU's step (`Faulty`
/// fail_mode 6 hangs in the step that reaches t = 100 s;
/// `isolation_timeout` far away): the master gives the run its grace,
/// then kills the host; the run ends as interrupted (exit 130), the rows
/// of every step the host completed in that request written (up to
/// t = 99.99 s), nothing left.
#[test]
fn a_signal_while_a_held_run_hangs_in_an_fmu_ends_the_run_keeping_its_steps() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(faulty_scenario(dir.path(), "fmi2", 6, 100.0, 1000.0, true))
        .unwrap()
        .replace("isolation_hosts = 2", "isolation_hosts = 1")
        .replace("isolation_timeout = 1\n", "isolation_timeout = 600\n");
    let scenario = dir.path().join("held_hang.toml");
    std::fs::write(&scenario, text).unwrap();
    let out = dir.path().join("out");
    let log = format!("{TERMINATION_LOG},cosim_core::master::fixed_step=debug");
    let mut run = Running::start_logged(&scenario, &out, &[], &log);
    // The run past t = 50 s (rows of answered requests), then the host
    // stuck in the step to t = 100 s: its processor time stands still
    // (the Faulty FMU sleeps), where between requests it spins.
    let trace = out.join("trace.csv");
    run.wait_for(Duration::from_secs(60), "the hang", |r| {
        let past_50 = std::fs::read_to_string(&trace).is_ok_and(|t| {
            t.lines()
                .filter_map(|l| l.split(',').next()?.parse::<f64>().ok())
                .any(|t| t >= 50.0)
        });
        past_50
            && r.hosts().first().is_some_and(|h| {
                let before = cpu_ticks(h.pid);
                std::thread::sleep(Duration::from_millis(500));
                before.is_some() && cpu_ticks(h.pid) == before
            })
    });
    run.signal(run.child.id(), "INT");
    let code = run.wait_exit(Duration::from_secs(30));
    let err = run.stderr();
    assert_eq!(code, Some(130), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The stretch was a held run in the host, ended by the signal.
    assert!(err.contains("in one quiet run"), "{err}");
    assert_eq!(summary(&out)["status"], "interrupted", "{err}");
    // Every step before the hang has its row, though the host never
    // answered the request that took them.
    let trace = std::fs::read_to_string(&trace).unwrap();
    let last: f64 = trace
        .lines()
        .last()
        .and_then(|l| l.split(',').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or(f64::NAN);
    assert_eq!(
        last,
        99.99,
        "the last row: {}",
        trace.lines().last().unwrap_or("")
    );
    assert_eq!(
        trace.lines().count(),
        2 + 9_999,
        "the header, t = 0 and a row per step"
    );
    run.assert_nothing_left("SIGINT in a held run");
}

/// The processor time process `pid` has used (user and system, in clock
/// ticks: /proc/PID/stat fields 14 and 15).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // (After the command's closing parenthesis, field 3 is the first.)
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(field(14)? + field(15)?)
}

/// The master extracts each `.fmu` once, however many subsystems use it,
/// and its hosts load that directory (named in each instantiation
/// request) instead of extracting their own copy; SIGTERM then ends the
/// run (143) and the directories go.
#[test]
fn each_fmu_is_extracted_once_for_the_master_and_all_its_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = many_isolated(dir.path(), 3, 1e5);
    let text = std::fs::read_to_string(&scenario).unwrap();
    std::fs::write(
        &scenario,
        text.replacen("[master]\n", "[master]\nisolation_hosts = 2\n", 1),
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut run = Running::start(&scenario, &out, &[]);
    run.wait_for(Duration::from_secs(30), "the first steps", |r| {
        std::fs::read_to_string(out.join("steps.csv")).is_ok_and(|t| t.lines().count() > 2)
            || r.stderr().contains("error")
    });
    let dirs = run.dirs();
    assert_eq!(dirs.len(), 2, "one per .fmu file: {dirs:?}");
    // Four FMUs in two hosts (`isolation_hosts = 2`), each loading its
    // FMUs' libraries from the master's directories.
    let hosts = run.hosts();
    assert_eq!(hosts.len(), 2, "{hosts:?}");
    for h in &hosts {
        assert!(h.cmdline.contains(".fmu"), "{}", h.cmdline);
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", h.pid)).unwrap();
        let mapped: Vec<&str> = maps
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .filter(|p| p.contains("cosim-fmu-"))
            .collect();
        assert!(!mapped.is_empty(), "no FMU library mapped: {maps}");
        for p in &mapped {
            assert!(
                dirs.iter().any(|d| Path::new(p).starts_with(d)),
                "{p} is not in one of the master's {dirs:?}"
            );
        }
    }
    run.signal(run.child.id(), "TERM");
    let code = run.wait_exit(Duration::from_secs(30));
    let err = run.stderr();
    assert_eq!(code, Some(143), "{err}");
    assert_eq!(summary(&out)["status"], "interrupted");
    run.assert_nothing_left("SIGTERM");
}
