//! Output failures, end to end: standard output and standard error closed
//! or full (no panic; a run goes on when only its terminal is gone), output
//! files on a full device or past a file size limit (exit status 1, the
//! file and OS error named, every CSV ending on a complete row, the
//! summary written with status "error"), rows on disk while a step hangs,
//! the outputs ended from another thread (the watchdog's API), and output
//! paths that would leave the output directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use cosim_core::execution::RunStatus;
use cosim_core::output::OutputsHandle;
use cosim_scenario::{Overrides, runner};
use cosim_tests::{cosim, cosim_bin, fmi2, fmus, root};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn summary(out_dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out_dir.join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("summary.json: {e}: {text:?}"))
}

/// `cosim <args>` with standard output and standard error going to the
/// given places (a pipe whose reader is gone, /dev/full ...).
fn cosim_to(args: &[&str], stdout: Stdio, stderr: Stdio) -> std::process::ExitStatus {
    fmus();
    Command::new(cosim_bin())
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .status()
        .unwrap()
}

/// The write end of a pipe whose read end is already closed: every write
/// fails with EPIPE, as after `| head -1` has exited.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer.into()
}

/// A file collecting what a command writes to standard error.
fn capture(dir: &Path, name: &str) -> (PathBuf, Stdio) {
    let path = dir.join(name);
    let file = std::fs::File::create(&path).unwrap();
    (path, file.into())
}

/// Every line of a CSV has the header's number of fields and the file ends
/// with a newline (no partial row). Returns the rows (without the header).
fn whole_rows(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.ends_with('\n'),
        "{} ends in a partial row: {:?}",
        path.display(),
        &text[text.len().saturating_sub(80)..]
    );
    let mut lines = text.lines();
    let fields = lines.next().unwrap().split(',').count();
    let rows: Vec<String> = lines.map(str::to_string).collect();
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(
            row.split(',').count(),
            fields,
            "{} row {}: {row:?}",
            path.display(),
            i + 1
        );
        for field in row.split(',') {
            assert!(
                field == "true" || field.parse::<f64>().is_ok(),
                "{} row {}: {field:?}",
                path.display(),
                i + 1
            );
        }
    }
    rows
}

const CSVS: [&str; 3] = ["trace.csv", "energy.csv", "steps.csv"];

// ----- standard output and standard error ----------------------------------

#[test]
fn inspect_into_a_closed_pipe_ends_quietly_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let fmi2_dir = fmus().join("fmi2");
    for json in [true, false] {
        let mut args = vec!["inspect", fmi2_dir.to_str().unwrap()];
        if json {
            args.push("--json");
        }
        let (err_path, err) = capture(dir.path(), "err.txt");
        let status = cosim_to(&args, closed_pipe(), err);
        let err = std::fs::read_to_string(err_path).unwrap();
        assert!(!err.contains("panicked"), "{err}");
        // The reader took what it wanted: not a failure (as `head` expects).
        assert_eq!(status.code(), Some(0), "json {json}: {err}");
        assert!(err.is_empty(), "{err}");
    }
}

#[test]
fn inspect_to_a_full_device_fails_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let gain = fmi2("Gain");
    for json in [true, false] {
        let mut args = vec!["inspect", gain.to_str().unwrap()];
        if json {
            args.push("--json");
        }
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let (err_path, err) = capture(dir.path(), "err.txt");
        let status = cosim_to(&args, full.into(), err);
        let err = std::fs::read_to_string(err_path).unwrap();
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(status.code(), Some(1), "json {json}: {err}");
        assert!(
            err.contains("error: cannot write to standard output: No space left on device"),
            "{err}"
        );
    }
}

/// `cosim run s.toml 2>&1 | head -3` once `head` has gone: the messages,
/// the progress lines and the log lines are lost, the run is not.
#[test]
fn a_run_whose_terminal_is_gone_completes_with_its_outputs_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let status = cosim_to(
        &[
            "run",
            "-v",
            "scenarios/b1_quarter_car_a.toml",
            "--stop",
            "2",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        closed_pipe(),
        closed_pipe(),
    );
    assert_eq!(status.code(), Some(0), "{status}");
    let s = summary(&out_dir);
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["t_reached"], 2.0, "{s}");
    assert_eq!(whole_rows(&out_dir.join("trace.csv")).len(), 2001);
    for f in CSVS {
        whole_rows(&out_dir.join(f));
    }
}

// ----- output files that cannot be written ---------------------------------

/// Checks a run stopped by a failed write of one output: exit status 1, the
/// file, the OS error and the time named, every CSV whole, the summary
/// written with status "error".
fn assert_write_failure(status: Option<i32>, err: &str, out_dir: &Path, os_error: &str) {
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status, Some(1), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("error: cannot write "))
        .unwrap_or_else(|| panic!("no write error: {err}"));
    assert!(line.contains(os_error), "{line}");
    let file = CSVS
        .iter()
        .find(|f| line.contains(&out_dir.join(f).display().to_string()))
        .unwrap_or_else(|| panic!("names no output file: {line}"));
    assert!(
        err.contains("the run stopped at t = "),
        "the time reached: {err}"
    );
    let s = summary(out_dir);
    assert_eq!(s["status"], "error", "{s}");
    let message = s["message"].as_str().unwrap();
    assert!(message.contains(os_error), "{message}");
    assert!(message.contains(file), "{message}");
    for f in CSVS {
        whole_rows(&out_dir.join(f));
    }
    // The message gives the time of the failed file's last row.
    let rows = whole_rows(&out_dir.join(file));
    let last = rows.last().unwrap().split(',').next().unwrap();
    assert!(
        line.contains(&format!("it ends on its last complete row, at t = {last}")),
        "{line} (last row at {last})"
    );
    assert!(
        !out_dir.join(".summary.json.tmp").exists(),
        "the summary's temporary file is left"
    );
}

/// A file size limit (`ulimit -f`): a write beyond it fails with EFBIG
/// (SIGXFSZ, which would kill the process, is handled by cosim). The
/// limit lets the FMUs' libraries (0.9 MB) be extracted and stops the
/// trace (4 MB) part way.
#[test]
fn a_file_size_limit_stops_the_run_with_status_1_and_every_output_whole() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    fmus();
    // 512-byte blocks: 1.5 MB.
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 3000 && exec \"$0\" \"$@\"")
        .arg(cosim_bin())
        .args(["run", "--no-progress", "scenarios/b1_quarter_car_a.toml"])
        .args(["--stop", "20", "--out"])
        .arg(&out_dir)
        .current_dir(root())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_write_failure(out.status.code(), &err, &out_dir, "File too large");
    // The other outputs are written up to the failure.
    let trace = whole_rows(&out_dir.join("trace.csv"));
    let steps = whole_rows(&out_dir.join("steps.csv"));
    assert!(
        trace.len() > 1000 && trace.len() < 20_000,
        "{}",
        trace.len()
    );
    assert!(steps.len() >= trace.len() - 1, "{}", steps.len());
}

/// A device that fills up: every file ends on a complete row, and the
/// summary, whose space was reserved at the start, is written on the full
/// device. Two full devices: an `LD_PRELOAD` shim over `write` that fails
/// with ENOSPC once the output directory's files have grown by 3 MB
/// (`tests/data/enospc_shim.c`: no privileges needed, so this test never
/// passes by skipping), and, where the system allows a mount namespace
/// (`unshare`, as root or with user namespaces), a real 3 MB tmpfs.
#[test]
fn a_full_device_stops_the_run_with_status_1_and_the_summary_written() {
    let dir = tempfile::tempdir().unwrap();
    fmus();
    // The shim: a full device for any user.
    let shim = dir.path().join("enospc_shim.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&shim)
        .arg(root().join("tests/data/enospc_shim.c"))
        .args(["-ldl", "-lpthread"])
        .output()
        .unwrap_or_else(|e| panic!("running {cc}: {e}"));
    assert!(built.status.success(), "{}", stderr(&built));
    let out_dir = dir.path().join("shim_out");
    let out = Command::new(cosim_bin())
        .args([
            "run",
            "--no-progress",
            "scenarios/b1_quarter_car_a.toml",
            "--stop",
            "20",
            "--out",
        ])
        .arg(&out_dir)
        .env("LD_PRELOAD", &shim)
        .env("COSIM_ENOSPC_DIR", &out_dir)
        .env("COSIM_ENOSPC_BYTES", (3 << 20).to_string())
        .current_dir(root())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_write_failure(out.status.code(), &err, &out_dir, "No space left on device");

    // A real tmpfs, where a mount namespace can be had.
    let mount = dir.path().join("full");
    let copy = dir.path().join("copy");
    std::fs::create_dir_all(&mount).unwrap();
    std::fs::create_dir_all(&copy).unwrap();
    let script = r#"mount -t tmpfs -o size=3m tmpfs "$1" || exit 99
"$3" run --no-progress scenarios/b1_quarter_car_a.toml --stop 20 --out "$1/out" 2> "$2/stderr.txt"
echo $? > "$2/status.txt"
cp -r "$1/out/." "$2/""#;
    let attempt = |flags: &[&str]| {
        Command::new("unshare")
            .args(flags)
            .args(["sh", "-c", script, "sh"])
            .arg(&mount)
            .arg(&copy)
            .arg(cosim_bin())
            .current_dir(root())
            .output()
    };
    let ran = [
        &["--user", "--map-root-user", "--mount"][..],
        &["--mount"][..],
    ]
    .iter()
    .any(|flags| matches!(attempt(flags), Ok(o) if o.status.success()));
    if !ran {
        eprintln!(
            "note: no mount namespace with a tmpfs here (unshare): the full device was the write shim's only"
        );
        return;
    }
    let status = std::fs::read_to_string(copy.join("status.txt")).unwrap();
    let err = std::fs::read_to_string(copy.join("stderr.txt")).unwrap();
    // The copy is the output directory: paths in messages are the tmpfs's.
    let err = err.replace(
        &mount.join("out").display().to_string(),
        &copy.display().to_string(),
    );
    let summary_text = std::fs::read_to_string(copy.join("summary.json"))
        .unwrap()
        .replace(
            &mount.join("out").display().to_string(),
            &copy.display().to_string(),
        );
    std::fs::write(copy.join("summary.json"), summary_text).unwrap();
    assert_write_failure(
        status.trim().parse().ok(),
        &err,
        &copy,
        "No space left on device",
    );
}

/// Output creation that fails before the first step is bad input (exit 2),
/// naming the file.
#[test]
fn an_output_directory_that_cannot_be_created_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), "").unwrap();
    let out_dir = dir.path().join("file/out");
    let out = cosim(&[
        "run",
        "scenarios/b1_quarter_car_a.toml",
        "--stop",
        "0.1",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("Not a directory"), "{err}");
    assert!(
        err.contains(&dir.path().join("file").display().to_string()),
        "{err}"
    );
}

// ----- a step that hangs ----------------------------------------------------

/// A Faulty integrator that hangs in its step from 0.1 (in process), fed
/// back through a Gain, stepped every 0.01 s.
fn hanging_scenario(dir: &Path) -> PathBuf {
    let text = format!(
        r#"[simulation]
stop = 1.0

[master]
step = 0.01

[[subsystems]]
name = "faulty"
fmu = "{faulty}"
parameters = {{ fail_mode = 6, fail_at = 0.105, x0 = 1.0 }}

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
    let path = dir.join("hang.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Kills the child when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Rows are written by the writer thread at least every 0.2 s, not only
/// when steps complete: while the FMU hangs (the stepping thread stuck in
/// its doStep), every completed row is on disk, whole.
#[test]
fn completed_rows_reach_the_disk_while_an_in_process_step_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = hanging_scenario(dir.path());
    let out_dir = dir.path().join("out");
    fmus();
    let mut child = Killed(
        Command::new(cosim_bin())
            .args(["run", "--no-progress"])
            .arg(&scenario)
            .arg("--out")
            .arg(&out_dir)
            .current_dir(root())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Wait for the hang (the FMU says so), reading stderr on the side.
    let mut err = child.0.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut text = String::new();
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            text.push_str(&String::from_utf8_lossy(&buf[..n]));
            if text.contains("hanging forever") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the FMU to hang");
    let hung = Instant::now();
    // t = 0, 0.01, ..., 0.1: 11 rows, then nothing more.
    let trace = out_dir.join("trace.csv");
    loop {
        let rows = std::fs::read_to_string(&trace)
            .map(|t| t.lines().count().saturating_sub(1))
            .unwrap_or(0);
        if rows == 11 {
            break;
        }
        assert!(
            hung.elapsed() < Duration::from_secs(3),
            "{rows} rows on disk {:?} after the hang",
            hung.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(child.0.try_wait().unwrap().is_none(), "the run ended");
    assert_eq!(whole_rows(&trace).len(), 11);
    assert_eq!(whole_rows(&out_dir.join("steps.csv")).len(), 10);
}

/// The watchdog's API: from another thread, while the stepping thread is
/// stuck inside an FMU call, the outputs are ended (every queued row
/// written, every file closed) and the summary is written, with the time
/// and steps the run reached.
#[test]
fn another_thread_can_end_the_outputs_and_write_the_summary_while_a_step_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = hanging_scenario(dir.path());
    let out_dir = dir.path().join("out");
    fmus();
    let overrides = Overrides {
        out: Some(out_dir.clone()),
        ..Overrides::default()
    };
    let prepared = runner::prepare(&scenario, &overrides, Some(1)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<OutputsHandle>();
    // The stepping thread: it never comes back from the hung doStep.
    std::thread::spawn(move || {
        let _ = runner::run_watched(prepared, Vec::new(), None, move |h| {
            tx.send(h).unwrap();
        });
    });
    let handle = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    // Stuck: the progress stays at t = 0.1 after 10 steps.
    let start = Instant::now();
    while handle.progress() != (0.1, 10) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{:?}",
            handle.progress()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(handle.progress(), (0.1, 10));
    let s = handle
        .summary_now(
            RunStatus::Error,
            Some("subsystem 'faulty': fmi2DoStep hangs".into()),
        )
        .unwrap();
    assert_eq!((s.t_reached, s.stats.macro_steps), (0.1, 10));
    handle.finish_now(&s).unwrap();
    let json = summary(&out_dir);
    assert_eq!(json["status"], "error", "{json}");
    assert_eq!(json["message"], "subsystem 'faulty': fmi2DoStep hangs");
    assert_eq!(json["t_reached"], 0.1);
    assert_eq!(json["master"], "fixed-step");
    assert_eq!(json["subsystems"][0]["name"], "faulty");
    assert_eq!(whole_rows(&out_dir.join("trace.csv")).len(), 11);
    assert_eq!(whole_rows(&out_dir.join("steps.csv")).len(), 10);
    // Later rows are refused; a second summary is not written over it.
    assert!(handle.push_row(0, &[1.0, 2.0, 3.0]).is_err());
    assert!(!handle.write_summary(&s).unwrap());
}

// ----- output paths ---------------------------------------------------------

/// A scenario with one Gain whose `[outputs]` has `line` (on line 9).
fn outputs_scenario(dir: &Path, line: &str) -> PathBuf {
    let text = format!(
        r#"[simulation]
stop = 0.1

[[subsystems]]
name = "gain"
fmu = "{gain}"

[outputs]
{line}
"#,
        gain = fmi2("Gain").display(),
    );
    let path = dir.join("s.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn output_files_outside_the_output_directory_are_refused_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("a/b");
    std::fs::create_dir_all(&work).unwrap();
    let outside = dir.path().join("escaped.csv");
    for (line, why) in [
        (
            "trace = \"../../../escaped.csv\"",
            "climbs out of the output directory",
        ),
        (
            "energy_log = \"sub/../../x.csv\"",
            "climbs out of the output directory",
        ),
        (
            &*format!("step_log = \"{}\"", outside.display()),
            "is an absolute path",
        ),
        ("summary = \".\"", "names the output directory itself"),
    ] {
        let scenario = outputs_scenario(&work, line);
        for command in ["check", "run"] {
            let out = cosim(&[command, scenario.to_str().unwrap()]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{line}: {err}");
            let key = line.split(' ').next().unwrap();
            assert!(
                err.contains(&format!("s.toml:9:{}: error: '{key}'", key.len() + 4)),
                "{line}: {err}"
            );
            assert!(err.contains(why), "{line}: {err}");
            assert!(!outside.exists(), "{line}: written outside");
        }
    }
    // A relative path below the output directory is fine.
    let scenario = outputs_scenario(&work, "trace = \"sub/trace.csv\"");
    let out_dir = dir.path().join("out");
    let out = cosim(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(whole_rows(&out_dir.join("sub/trace.csv")).len(), 11);
}

#[test]
fn out_naming_a_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x");
    std::fs::write(&file, "keep").unwrap();
    for command in ["check", "run"] {
        let out = cosim(&[
            command,
            "scenarios/b1_quarter_car_a.toml",
            "--out",
            file.to_str().unwrap(),
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "--out {}': is a file, not a directory",
                file.display()
            )),
            "{err}"
        );
        assert!(!err.contains("os error"), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
}

// ----- one output directory, one run ----------------------------------------

/// `cosim run` of B1 (1 ms steps) with `args`, paced to the wall clock
/// so that it goes on (writing its rows) until it is signalled; returns
/// once its trace has rows.
fn paced_run(out_dir: &Path, log: &Path) -> Killed {
    fmus();
    let child = Command::new(cosim_bin())
        .args([
            "run",
            "scenarios/b1_quarter_car_a.toml",
            "--stop",
            "1e6",
            "--real-time",
            "1",
            "--no-progress",
            "--out",
        ])
        .arg(out_dir)
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut run = Killed(child);
    let trace = out_dir.join("trace.csv");
    let started = Instant::now();
    while std::fs::read_to_string(&trace).map_or(0, |t| t.lines().count()) < 10 {
        if let Some(status) = run.0.try_wait().unwrap() {
            panic!(
                "the run ended ({status}): {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no trace rows");
        std::thread::sleep(Duration::from_millis(20));
    }
    run
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name}");
}

/// Two runs into one output directory (in process and isolated) used to
/// overwrite each other's files. The second is refused before it writes
/// anything (status 2, naming the directory and the first's process id);
/// the first goes on, and its outputs hold every step it made.
#[test]
fn a_second_run_into_an_output_directory_in_use_is_refused_and_the_first_kept_whole() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let log = dir.path().join("first.log");
    let mut first = paced_run(&out_dir, &log);
    for isolation in ["none", "process"] {
        let out = cosim(&[
            "run",
            "scenarios/b1_quarter_car_a.toml",
            "--stop",
            "0.05",
            "--isolation",
            isolation,
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{isolation}: {err}");
        assert!(
            err.contains(&format!(
                "{}: the output directory is in use by another cosim run (process id {})",
                out_dir.display(),
                first.0.id()
            )),
            "{isolation}: {err}"
        );
    }
    assert!(first.0.try_wait().unwrap().is_none(), "the first run ended");
    signal(&first.0, "INT");
    let status = first.0.wait().unwrap();
    let log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(130), "{log}");
    let s = summary(&out_dir);
    assert_eq!(s["status"], "interrupted", "{s}");
    let steps = s["stats"]["macro_steps"].as_u64().unwrap() as usize;
    let trace = whole_rows(&out_dir.join("trace.csv"));
    assert_eq!(trace.len(), steps + 1, "{s}");
    let last: f64 = trace[steps].split(',').next().unwrap().parse().unwrap();
    assert_eq!(last, s["t_reached"].as_f64().unwrap());
    assert_eq!(whole_rows(&out_dir.join("steps.csv")).len(), steps);
    assert_eq!(whole_rows(&out_dir.join("energy.csv")).len(), steps);
}

/// The kernel releases a killed run's lock: the lock file it leaves is no
/// obstacle to the next run into the directory.
#[test]
fn the_lock_of_a_killed_run_does_not_hold_up_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let mut killed = paced_run(&out_dir, &dir.path().join("killed.log"));
    let pid = killed.0.id();
    signal(&killed.0, "KILL");
    let _ = killed.0.wait();
    let lock = std::fs::read_to_string(out_dir.join(".cosim.lock")).unwrap();
    assert_eq!(lock.trim(), pid.to_string());
    let out = cosim(&[
        "run",
        "scenarios/b1_quarter_car_a.toml",
        "--stop",
        "0.05",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = summary(&out_dir);
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["t_reached"], 0.05);
    assert_eq!(whole_rows(&out_dir.join("trace.csv")).len(), 51);
}
