//! Determinism and bounded resources: the same scenario gives bit-identical
//! outputs across runs and Jacobi thread counts, and the memory of a run
//! does not grow with its number of steps.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use cosim_tests::{cosim, cosim_bin, fmus, root};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A copy of a scenario of `scenarios/` in `dir`, with its FMU paths made
/// absolute and `[master]` keys replaced or added.
fn variant(dir: &Path, name: &str, master: &[(&str, &str)]) -> PathBuf {
    fmus();
    let dist = root().join("fmus/dist");
    let mut text = std::fs::read_to_string(root().join("scenarios").join(name))
        .unwrap()
        .replace("../fmus/dist", dist.to_str().unwrap());
    for (key, value) in master {
        let line = format!("{key} = {value}");
        let existing = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{key} ")))
            .map(str::to_string);
        text = match existing {
            Some(old) => text.replace(&old, &line),
            None => text.replacen("[master]\n", &format!("[master]\n{line}\n"), 1),
        };
    }
    let path = dir.join(format!("{}.toml", master.len()));
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `scenario` with `--threads n`; returns the bytes of every output
/// file but the summary, and the summary without its wall-clock times.
fn run(scenario: &Path, out: &Path, threads: usize) -> (Vec<(String, Vec<u8>)>, serde_json::Value) {
    let o = cosim(&[
        "run",
        scenario.to_str().unwrap(),
        "--threads",
        &threads.to_string(),
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let files = ["trace.csv", "energy.csv", "steps.csv"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read(out.join(f)).unwrap()))
        .collect();
    let mut summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let map = summary.as_object_mut().unwrap();
    map.remove("wall_time_s");
    map.remove("init_time_s");
    (files, summary)
}

#[test]
fn jacobi_runs_are_bit_identical_across_runs_and_thread_counts() {
    let dir = tempfile::tempdir().unwrap();
    // B3 scenario 1: three subsystems, Jacobi; as shipped (zero-order hold)
    // and with second-order extrapolation and 2500 steps.
    let scenarios = [
        variant(dir.path(), "b3_three_mass_scenario1.toml", &[]),
        variant(
            dir.path(),
            "b3_three_mass_scenario1.toml",
            &[("extrapolation", "2"), ("step", "0.01")],
        ),
    ];
    for scenario in &scenarios {
        let (reference, ref_summary) = run(scenario, &dir.path().join("ref"), 1);
        assert_eq!(ref_summary["status"], "completed");
        assert_eq!(ref_summary["subsystems"].as_array().unwrap().len(), 3);
        for (i, threads) in [1, 2, 4, 3].into_iter().enumerate() {
            let out = dir.path().join(format!("run{i}"));
            let (files, summary) = run(scenario, &out, threads);
            for ((name, a), (_, b)) in reference.iter().zip(&files) {
                assert!(
                    a == b,
                    "{name} differs with {threads} threads ({})",
                    scenario.display()
                );
            }
            assert_eq!(summary, ref_summary, "{threads} threads");
        }
    }
}

// ----- memory -----------------------------------------------------------------

/// Peak resident set (VmHWM, KiB) of `cosim run` on the B1 quarter car with
/// `steps` macro steps of 1 ms, the trace decimated to 1 row in 1000 and
/// the per-step logs off (so that only the run itself is measured). Polls
/// `/proc/<pid>/status` until the child exits; VmHWM only grows, so the
/// last reading is the peak up to a few milliseconds before the exit.
fn peak_rss_kib(dir: &Path, steps: u64) -> u64 {
    fmus();
    let dist = root().join("fmus/dist/fmi2");
    let scenario = dir.join("b1_memory.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"[simulation]
stop = 1.0

[master]
step = 1e-3

[[subsystems]]
name = "chassis"
fmu = "{d}/QuarterCarChassis.fmu"

[[subsystems]]
name = "wheel"
fmu = "{d}/QuarterCarWheelSuspension.fmu"

[[connections]]
from = "wheel.F_c"
to = "chassis.F"
gain = -1.0

[[connections]]
from = "chassis.v_c"
to = "wheel.v_c"

[outputs]
decimation = 1000
energy_log = false
step_log = false
"#,
            d = dist.display()
        ),
    )
    .unwrap();
    let out = dir.join(format!("out{steps}"));
    let mut child = Command::new(cosim_bin())
        .args(["run", "--no-progress", "-q"])
        .arg(&scenario)
        .args(["--stop", &format!("{}", steps as f64 * 1e-3), "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file)
            && let Some(line) = text.lines().find(|l| l.starts_with("VmHWM:"))
        {
            let kib: u64 = line
                .split_whitespace()
                .nth(1)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(status.success(), "cosim run failed: {status}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["stats"]["macro_steps"], steps);
    assert!(peak > 0);
    peak
}

/// Memory stays flat: 10^6 steps take no more resident memory than 10^5
/// (20 % and 4 MiB of slack for allocator noise). The figures are in
/// docs/performance.md.
#[test]
fn peak_memory_does_not_grow_with_the_number_of_steps() {
    let dir = tempfile::tempdir().unwrap();
    let small = peak_rss_kib(dir.path(), 100_000);
    let large = peak_rss_kib(dir.path(), 1_000_000);
    eprintln!("peak RSS: 1e5 steps {small} KiB, 1e6 steps {large} KiB");
    assert!(
        (large as f64) < 1.2 * small as f64 + 4096.0,
        "peak RSS grew from {small} KiB (1e5 steps) to {large} KiB (1e6 steps)"
    );
}
