//! Runs the libcosim contender, `bench/peer/libcosim_bench.py`, and reads
//! its JSON answer.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct PeerRun {
    steps: u64,
    seconds: f64,
}

#[derive(Debug, Deserialize)]
struct PeerOutput {
    libcosim: String,
    threads: usize,
    runs: Vec<PeerRun>,
}

/// What the peer measured.
#[derive(Debug)]
pub struct LibcosimRuns {
    /// libcosim's version.
    pub libcosim: String,
    /// Threads of the peer process while stepping.
    pub threads: usize,
    /// Timed steps per run.
    pub steps: u64,
    /// Wall time of each run.
    pub seconds: Vec<f64>,
}

/// Runs the peer on `plan` (JSON) with `workers` ("0" or "default").
pub fn run(
    python: &str,
    plan: &Path,
    workers: &str,
    steps: u64,
    repeats: usize,
) -> Result<LibcosimRuns> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("peer")
        .join("libcosim_bench.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(plan)
        .args(["--workers", workers])
        .args(["--steps", &steps.to_string()])
        .args(["--repeats", &repeats.to_string()])
        .output()
        .with_context(|| format!("running {python} {}", script.display()))?;
    if !out.status.success() {
        bail!(
            "{} --workers {workers} failed ({}): {}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    // libcosim's own log lines (FMI Library warnings) go to stdout too: the
    // answer is the last line.
    let text = String::from_utf8_lossy(&out.stdout);
    let answer = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .with_context(|| format!("no answer from the peer in {text:?}"))?;
    let parsed: PeerOutput = serde_json::from_str(answer)
        .with_context(|| format!("reading the peer's answer {answer:?}"))?;
    let steps = parsed.runs.first().map_or(0, |r| r.steps);
    if parsed.runs.is_empty() || parsed.runs.iter().any(|r| r.steps != steps) {
        bail!("the peer's runs are missing or inconsistent: {text}");
    }
    Ok(LibcosimRuns {
        libcosim: parsed.libcosim,
        threads: parsed.threads,
        steps,
        seconds: parsed.runs.iter().map(|r| r.seconds).collect(),
    })
}
