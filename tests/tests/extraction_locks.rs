//! Extraction directories and their lock at scale: a run of many distinct
//! FMU files holds one lock, not one open file per FMU, so it runs at a low
//! descriptor limit (`ulimit -n`); and whatever ends a run part-way (a
//! SIGKILL while its FMUs load, no descriptors left), the next run leaves
//! nothing of it in the temporary directory.
//!
//! Every `cosim` runs with `TMPDIR` set to a fresh directory, so the
//! entries counted are exactly its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cosim_tests::{cosim_bin, fmi2};

/// `count` copies of the Gain FMU under different names in `dir`, and a
/// scenario running all of them, each its own subsystem (no connections).
fn many_fmus(dir: &Path, count: usize, stop: f64) -> PathBuf {
    let gain = std::fs::read(fmi2("Gain")).unwrap();
    let mut scenario = format!("[simulation]\nstop = {stop}\n\n[master]\nstep = 0.1\n");
    for i in 0..count {
        std::fs::write(dir.join(format!("g{i}.fmu")), &gain).unwrap();
        scenario.push_str(&format!(
            "\n[[subsystems]]\nname = \"g{i}\"\nfmu = \"g{i}.fmu\"\n"
        ));
    }
    let path = dir.join("many.toml");
    std::fs::write(&path, scenario).unwrap();
    path
}

/// A `cosim` command with `TMPDIR` set to `tmp`, run under `sh` with the
/// descriptor limit `limit` if given.
fn cosim_in(tmp: &Path, limit: Option<u32>, args: &[&str]) -> Command {
    let mut command = match limit {
        Some(n) => {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                .arg(cosim_bin());
            c
        }
        None => Command::new(cosim_bin()),
    };
    command.args(args).env("TMPDIR", tmp);
    command
}

fn run(mut command: Command) -> Output {
    command.output().unwrap()
}

/// The extraction directories and lock files in `tmp`, sorted.
fn entries(tmp: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cosim-"))
        .collect();
    names.sort();
    names
}

/// A short run of one FMU in `tmp`: its first extraction sweeps.
fn next_run(dir: &Path, tmp: &Path) {
    let gain = fmi2("Gain");
    let out = dir.join("next.out");
    let done = run(cosim_in(
        tmp,
        None,
        &[
            "run",
            gain.to_str().unwrap(),
            "--stop",
            "0.1",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ],
    ));
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
}

/// 150 distinct FMU files at `ulimit -n 64`: one lock file for the run,
/// not one open per FMU (which failed with EMFILE at the 57th FMU, exit 2,
/// and left a directory behind); all removed at the end.
#[test]
fn a_run_of_many_distinct_fmus_works_at_a_low_descriptor_limit() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let scenario = many_fmus(dir.path(), 150, 0.2);
    let out = dir.path().join("out");
    let done = run(cosim_in(
        &tmp,
        Some(64),
        &[
            "run",
            scenario.to_str().unwrap(),
            "-q",
            "--out",
            out.to_str().unwrap(),
        ],
    ));
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{:?}: {err}", done.status);
    let trace = std::fs::read_to_string(out.join("trace.csv")).unwrap();
    let header = trace.lines().next().unwrap();
    assert!(header.contains("g149.y"), "{header}");
    assert_eq!(entries(&tmp), Vec::<String>::new());
}

/// A run killed with SIGKILL while its FMUs are being extracted leaves its
/// directories (and its lock file); the next run removes every one of
/// them, wherever the kill fell (before, not all of a directory's life
/// was covered by its lock).
#[test]
fn the_next_run_removes_what_a_run_killed_while_extracting_left() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let scenario = many_fmus(dir.path(), 150, 1e6);
    let out = dir.path().join("out");
    let mut child = cosim_in(
        &tmp,
        None,
        &[
            "run",
            scenario.to_str().unwrap(),
            "-q",
            "--out",
            out.to_str().unwrap(),
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let start = Instant::now();
    while entries(&tmp).len() < 20 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "cosim ended before extracting 20 FMUs"
        );
        assert!(start.elapsed() < Duration::from_secs(120));
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left = entries(&tmp);
    assert!(left.len() >= 20, "{left:?}");
    assert_eq!(left.iter().filter(|n| n.ends_with(".lock")).count(), 1);
    next_run(dir.path(), &tmp);
    assert_eq!(entries(&tmp), Vec::<String>::new());
}

/// Runs that fail part-way for want of descriptors (`ulimit -n` from 5
/// up): whatever they leave (a directory they could not remove, at 6 and
/// 8) the next run removes. Before, a directory made but not yet locked
/// when the descriptors ran out stayed for good.
#[test]
fn the_next_run_removes_what_a_run_out_of_descriptors_left() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = many_fmus(dir.path(), 20, 0.2);
    let mut left_something = false;
    for limit in 5..=9 {
        let tmp = dir.path().join(format!("tmp{limit}"));
        std::fs::create_dir(&tmp).unwrap();
        let out = dir.path().join(format!("out{limit}"));
        let done = run(cosim_in(
            &tmp,
            Some(limit),
            &[
                "run",
                scenario.to_str().unwrap(),
                "-q",
                "--out",
                out.to_str().unwrap(),
            ],
        ));
        let err = String::from_utf8_lossy(&done.stderr);
        assert!(!err.contains("panicked"), "ulimit -n {limit}: {err}");
        assert!(
            done.status.success() || err.contains("Too many open files"),
            "ulimit -n {limit}: {:?}: {err}",
            done.status
        );
        left_something |= !entries(&tmp).is_empty();
        next_run(dir.path(), &tmp);
        assert_eq!(entries(&tmp), Vec::<String>::new(), "ulimit -n {limit}");
    }
    assert!(
        left_something,
        "no run left anything for the next to remove"
    );
}
