//! `cosim sweep submit --slurm`: a sweep as a Slurm job array, one task per
//! shard, and its merge as a job that depends on the array
//! (`docs/sweep.md`).
//!
//! [`Submission`] writes the two batch scripts ([`Submission::array_script`],
//! [`Submission::merge_script`]); [`submit`] hands them to `sbatch`;
//! [`wait`] polls `squeue` until the merge job ends, telling the caller
//! about each poll and each failed task. No accounting database is
//! needed: `squeue -t all` shows ended jobs for `MinJobAge` (300 s by
//! default), and a task that has left it is judged by its shard summary
//! on the shared filesystem.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::SweepError;

/// A sweep to submit as a Slurm job array.
#[derive(Debug, Clone)]
pub struct Submission {
    /// The sweep file (absolute).
    pub sweep: PathBuf,
    /// The output directory (absolute), on a filesystem every node shares.
    pub out: PathBuf,
    /// How many shards (array tasks).
    pub shards: usize,
    /// The array job's name (the merge job's is this with `-merge`).
    pub job_name: String,
    /// `--partition`.
    pub partition: Option<String>,
    /// `--time` (Slurm's formats: `30`, `1:00:00`, `1-00:00:00`).
    pub time: Option<String>,
    /// `--cpus-per-task`; each shard runs that many runs at a time.
    pub cpus_per_task: Option<usize>,
    /// At most this many tasks at once (the array's `%M`).
    pub throttle: Option<usize>,
    /// More `sbatch` options, one per `#SBATCH` line of both scripts.
    pub sbatch_args: Vec<String>,
    /// The `cosim` executable the jobs run (absolute).
    pub cosim: PathBuf,
    /// Pass `--prune` to the shards.
    pub prune: bool,
    /// Arguments added to the merge command (`--fail-if ...`, `--no-plot`).
    pub merge_args: Vec<String>,
}

/// The ids `sbatch` gave the two jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// The job array.
    pub array: String,
    /// The merge job.
    pub merge: String,
}

/// Quotes a word for the shell when it needs it.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=+-,@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A value of an `#SBATCH` line (sbatch splits them at blanks, honouring
/// double quotes).
fn directive_value(s: &str) -> String {
    if s.contains(char::is_whitespace) {
        format!("\"{s}\"")
    } else {
        s.to_string()
    }
}

impl Submission {
    /// Where the scripts and the jobs' logs go: `<out>/slurm/`.
    pub fn dir(&self) -> PathBuf {
        self.out.join("slurm")
    }

    /// The array's batch script file.
    pub fn array_script_path(&self) -> PathBuf {
        self.dir().join("shards.sbatch")
    }

    /// The merge job's batch script file.
    pub fn merge_script_path(&self) -> PathBuf {
        self.dir().join("merge.sbatch")
    }

    /// The log of shard `k` of array job `array`.
    pub fn shard_log(&self, array: &str, k: usize) -> PathBuf {
        self.dir().join(format!("shard-{array}_{k}.log"))
    }

    /// The log of merge job `job`.
    pub fn merge_log(&self, job: &str) -> PathBuf {
        self.dir().join(format!("merge-{job}.log"))
    }

    /// The summary shard `k` writes.
    pub fn shard_summary(&self, k: usize) -> PathBuf {
        self.out
            .join(format!("summary.shard-{k}-of-{}.csv", self.shards))
    }

    /// The merged summary.
    pub fn summary(&self) -> PathBuf {
        self.out.join("summary.csv")
    }

    /// Refuses what the scripts could not carry.
    ///
    /// # Errors
    ///
    /// No shards, a relative path, a line break or a double quote in a
    /// path or an `sbatch` option.
    pub fn validate(&self) -> Result<(), String> {
        if self.shards == 0 {
            return Err("--shards must be at least 1".into());
        }
        for (what, p) in [
            ("the sweep file", &self.sweep),
            ("--out", &self.out),
            ("--cosim", &self.cosim),
        ] {
            let s = p.to_string_lossy();
            if !p.is_absolute() {
                return Err(format!("{what} must be an absolute path, not {s}"));
            }
            if s.contains(['\n', '\r', '"']) {
                return Err(format!(
                    "{what} {s:?}: a line break or a double quote cannot go into a batch script"
                ));
            }
        }
        let options = self
            .sbatch_args
            .iter()
            .chain(&self.partition)
            .chain(&self.time)
            .chain(std::iter::once(&self.job_name));
        for a in options {
            if a.contains(['\n', '\r']) || a.trim().is_empty() {
                return Err(format!("sbatch option {a:?}: empty or with a line break"));
            }
        }
        if self.throttle == Some(0) || self.cpus_per_task == Some(0) {
            return Err("--throttle and --cpus-per-task must be at least 1".into());
        }
        Ok(())
    }

    fn common_directives(&self, lines: &mut Vec<String>) {
        if let Some(p) = &self.partition {
            lines.push(format!("#SBATCH --partition={}", directive_value(p)));
        }
        if let Some(t) = &self.time {
            lines.push(format!("#SBATCH --time={}", directive_value(t)));
        }
    }

    fn extra_directives(&self, lines: &mut Vec<String>) {
        for a in &self.sbatch_args {
            lines.push(format!("#SBATCH {a}"));
        }
    }

    /// The command of shard `K/N` (for a rerun by hand).
    pub fn shard_command(&self, k: usize) -> String {
        let mut words = vec![
            shell_quote(&self.cosim.to_string_lossy()),
            "sweep".into(),
            shell_quote(&self.sweep.to_string_lossy()),
            "--shard".into(),
            format!("{k}/{}", self.shards),
            "--out".into(),
            shell_quote(&self.out.to_string_lossy()),
        ];
        if self.prune {
            words.push("--prune".into());
        }
        words.join(" ")
    }

    /// The merge command: every shard's summary into `<out>/summary.csv`.
    pub fn merge_command(&self) -> String {
        let mut words = vec![
            shell_quote(&self.cosim.to_string_lossy()),
            "sweep".into(),
            "merge".into(),
            format!(
                "{}/summary.shard-*-of-{}.csv",
                shell_quote(&self.out.to_string_lossy()),
                self.shards
            ),
            "-o".into(),
            shell_quote(&self.summary().to_string_lossy()),
        ];
        words.extend(self.merge_args.iter().map(|a| shell_quote(a)));
        words.join(" ")
    }

    /// The job array's batch script: task `K` runs shard `K/N`.
    pub fn array_script(&self) -> String {
        let n = self.shards;
        let mut l = vec![
            "#!/bin/bash".to_string(),
            format!(
                "# The {n} shards of the cosim sweep {}",
                self.sweep.display()
            ),
            format!("# as a Slurm job array: task K runs shard K/{n} (--shard auto/{n} reads K"),
            "# from SLURM_ARRAY_TASK_ID). Written by `cosim sweep submit --slurm`.".into(),
            "# Resubmitted tasks keep their shards: sbatch --array=K,... <this script>".into(),
            format!("#SBATCH --job-name={}", directive_value(&self.job_name)),
            format!(
                "#SBATCH --array=1-{n}{}",
                self.throttle.map_or(String::new(), |m| format!("%{m}"))
            ),
            format!(
                "#SBATCH --output={}",
                directive_value(&self.dir().join("shard-%A_%a.log").to_string_lossy())
            ),
        ];
        if let Some(c) = self.cpus_per_task {
            l.push(format!("#SBATCH --cpus-per-task={c}"));
        }
        self.common_directives(&mut l);
        self.extra_directives(&mut l);
        l.push(String::new());
        let mut run = format!(
            "{} sweep {} --shard auto/{n} --out {} --jobs \"${{SLURM_CPUS_PER_TASK:-1}}\" --no-progress",
            shell_quote(&self.cosim.to_string_lossy()),
            shell_quote(&self.sweep.to_string_lossy()),
            shell_quote(&self.out.to_string_lossy()),
        );
        if self.prune {
            run.push_str(" --prune");
        }
        l.push(run);
        l.extend(
            [
                "status=$?",
                "# 1: a run of this shard fails a threshold. That is the merge's verdict,",
                "# over every run, not a failure of this shard.",
                "if [ \"$status\" -eq 1 ]; then exit 0; fi",
                "exit \"$status\"",
            ]
            .map(String::from),
        );
        l.join("\n") + "\n"
    }

    /// The merge job's batch script (submitted with
    /// `--dependency=afterok:<array>`; cancelled by Slurm when a shard
    /// fails).
    pub fn merge_script(&self) -> String {
        let mut l = vec![
            "#!/bin/bash".to_string(),
            format!(
                "# Merges the {} shard summaries of the cosim sweep {}",
                self.shards,
                self.sweep.display()
            ),
            "# once every task of the array has succeeded. Written by `cosim sweep submit --slurm`."
                .into(),
            format!(
                "#SBATCH --job-name={}",
                directive_value(&format!("{}-merge", self.job_name))
            ),
            format!(
                "#SBATCH --output={}",
                directive_value(&self.dir().join("merge-%j.log").to_string_lossy())
            ),
            "#SBATCH --kill-on-invalid-dep=yes".into(),
        ];
        self.common_directives(&mut l);
        self.extra_directives(&mut l);
        l.push(String::new());
        l.push(format!("exec {}", self.merge_command()));
        l.join("\n") + "\n"
    }
}

/// The job id of `sbatch --parsable` output (`123` or `123;cluster`).
pub fn parse_job_id(stdout: &str) -> Option<String> {
    let line = stdout.lines().map(str::trim).rfind(|l| !l.is_empty())?;
    let id = line.split(';').next()?.trim();
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_digit())).then(|| id.to_string())
}

fn sbatch(args: &[&str], script: &Path) -> Result<String, SweepError> {
    let out = Command::new("sbatch")
        .arg("--parsable")
        .args(args)
        .arg(script)
        .output()
        .map_err(|e| {
            SweepError::Other(format!(
                "cannot run sbatch ({e}): is this a Slurm login node (sbatch on the PATH)?"
            ))
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match parse_job_id(&stdout) {
        Some(id) if out.status.success() => Ok(id),
        _ => Err(SweepError::Other(format!(
            "sbatch {} refused {}: {}",
            args.join(" "),
            script.display(),
            stderr.trim()
        ))),
    }
}

/// Cancels jobs (`scancel`); failures ignored.
pub fn cancel(ids: &[&str]) {
    let _ = Command::new("scancel").args(ids).output();
}

/// Writes the scripts into `<out>/slurm/` (removing the shard summaries of
/// an earlier sweep in `<out>`), submits the array and then the merge
/// with `--dependency=afterok:<array>`.
///
/// # Errors
///
/// A file cannot be written, `sbatch` cannot be run or refuses a script
/// (its message; the array is cancelled when the merge is refused).
pub fn submit(s: &Submission) -> Result<Submitted, SweepError> {
    s.validate().map_err(SweepError::Other)?;
    // A sweep or run in progress there keeps its directory: refused now,
    // not by every shard. (Released before the shards can start.)
    let lock =
        cosim_core::output_lock::OutputLock::exclusive(&s.out).map_err(SweepError::Output)?;
    let dir = s.dir();
    std::fs::create_dir_all(&dir).map_err(|e| SweepError::io(&dir, e))?;
    remove_shard_summaries(&s.out);
    let array_path = s.array_script_path();
    std::fs::write(&array_path, s.array_script()).map_err(|e| SweepError::io(&array_path, e))?;
    let merge_path = s.merge_script_path();
    std::fs::write(&merge_path, s.merge_script()).map_err(|e| SweepError::io(&merge_path, e))?;
    drop(lock);
    let array = sbatch(&[], &array_path)?;
    let dependency = format!("--dependency=afterok:{array}");
    match sbatch(&[&dependency], &merge_path) {
        Ok(merge) => Ok(Submitted { array, merge }),
        Err(e) => {
            cancel(&[&array]);
            Err(SweepError::Other(format!(
                "{e} (the array job {array} is cancelled)"
            )))
        }
    }
}

/// Removes `summary.shard-*` files in `out`: the shards of an earlier
/// sweep must not pass for this one's.
fn remove_shard_summaries(out: &Path) {
    let Ok(entries) = std::fs::read_dir(out) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("summary.shard-") && (name.ends_with(".csv") || name.ends_with(".json"))
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// One line of `squeue`: a job, or a task of an array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The job id (of the array, for a task).
    pub job: String,
    /// The task index, for a task of an array.
    pub task: Option<usize>,
    /// Slurm's state (`PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, ...).
    pub state: String,
    /// The wait status (`exit_code`: exit status x 256 + signal).
    pub wait_status: Option<i32>,
    /// Why it is pending or ended (`Dependency`, `NonZeroExitCode`, ...).
    pub reason: String,
}

/// The `squeue -O` fields [`parse_squeue`] reads.
pub const SQUEUE_FORMAT: &str = "ArrayJobID:0|,ArrayTaskID:0|,State:0|,exit_code:0|,Reason:0";

/// Parses `squeue -h -r -O` [`SQUEUE_FORMAT`] output.
pub fn parse_squeue(text: &str) -> Vec<Row> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.splitn(5, '|').map(str::trim);
            let job = f.next()?.to_string();
            let task = f.next()?.parse().ok();
            let state = f.next()?.to_string();
            let wait_status = f.next()?.parse().ok();
            let reason = f.next().unwrap_or("").to_string();
            (!job.is_empty() && !state.is_empty()).then_some(Row {
                job,
                task,
                state,
                wait_status,
                reason,
            })
        })
        .collect()
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not started (pending, held, requeued).
    Waiting,
    /// Started, not ended (running, completing, suspended).
    Running,
    /// Ended with exit status 0.
    Done,
    /// Ended otherwise (failed, cancelled, timed out, out of memory, ...).
    Failed,
}

/// The phase of a Slurm job state.
pub fn phase(state: &str) -> Phase {
    let s = state.split_whitespace().next().unwrap_or("");
    match s {
        "COMPLETED" => Phase::Done,
        "PENDING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" | "RESV_DEL_HOLD" => Phase::Waiting,
        "FAILED" | "CANCELLED" | "TIMEOUT" | "OUT_OF_MEMORY" | "NODE_FAIL" | "BOOT_FAIL"
        | "DEADLINE" | "PREEMPTED" | "REVOKED" | "SPECIAL_EXIT" => Phase::Failed,
        _ => Phase::Running,
    }
}

/// A wait status in words: `exit status 2`, `signal 9`.
pub fn describe_wait_status(raw: i32) -> String {
    let signal = raw & 0x7f;
    if signal != 0 {
        format!("signal {signal}")
    } else {
        format!("exit status {}", (raw >> 8) & 0xff)
    }
}

/// A task of the array as last seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// The shard (task index).
    pub k: usize,
    /// Slurm's state, or `unknown` before the first sighting.
    pub state: String,
    /// Its phase.
    pub phase: Phase,
    /// The wait status once ended.
    pub wait_status: Option<i32>,
    /// Seen in `squeue` at least once.
    pub seen: bool,
}

/// What [`wait`] tells its caller.
#[derive(Debug)]
pub enum Event<'a> {
    /// After each poll.
    Poll {
        /// Every task.
        tasks: &'a [Task],
        /// The merge job's state.
        merge: &'a str,
        /// Since the wait began.
        elapsed: Duration,
    },
    /// A task failed (once per task).
    TaskFailed {
        /// The task.
        task: &'a Task,
        /// Its log file.
        log: PathBuf,
    },
    /// `squeue` failed (the wait goes on).
    SqueueFailed(String),
}

/// How the sweep ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The shards that failed, in order.
    pub failed: Vec<usize>,
    /// The merge job's final state (`COMPLETED`, `FAILED`, `CANCELLED`).
    pub merge_state: String,
    /// The merge job's wait status, when it ran.
    pub merge_wait_status: Option<i32>,
    /// The merge job's log.
    pub merge_log: PathBuf,
}

impl Finished {
    /// Whether the merge job ran and succeeded.
    pub fn merged(&self) -> bool {
        self.failed.is_empty() && phase(&self.merge_state) == Phase::Done
    }
}

fn squeue(ids: &Submitted) -> Result<Vec<Row>, String> {
    let out = Command::new("squeue")
        .args(["-h", "-r", "-t", "all", "-j"])
        .arg(format!("{},{}", ids.array, ids.merge))
        .args(["-O", SQUEUE_FORMAT])
        .output()
        .map_err(|e| format!("cannot run squeue: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        // Both jobs have left slurmctld's memory (MinJobAge).
        if stderr.contains("Invalid job id") {
            return Ok(Vec::new());
        }
        return Err(format!("squeue failed: {}", stderr.trim()));
    }
    Ok(parse_squeue(&String::from_utf8_lossy(&out.stdout)))
}

/// Polls `squeue` every `poll` until the merge job has ended (or, when a
/// shard failed, until every task has ended: the merge job is then
/// cancelled if Slurm has not done so).
///
/// # Errors
///
/// `squeue` failed 30 times in a row.
pub fn wait(
    s: &Submission,
    ids: &Submitted,
    poll: Duration,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<Finished, SweepError> {
    let started = Instant::now();
    let since = std::time::SystemTime::now();
    let mut tasks: Vec<Task> = (1..=s.shards)
        .map(|k| Task {
            k,
            state: "unknown".into(),
            phase: Phase::Waiting,
            wait_status: None,
            seen: false,
        })
        .collect();
    let mut reported = vec![false; s.shards];
    let mut merge = Task {
        k: 0,
        state: "unknown".into(),
        phase: Phase::Waiting,
        wait_status: None,
        seen: false,
    };
    let mut failures = 0;
    loop {
        let rows = match squeue(ids) {
            Ok(rows) => {
                failures = 0;
                Some(rows)
            }
            Err(e) => {
                failures += 1;
                on(Event::SqueueFailed(e.clone()));
                if failures >= 30 {
                    return Err(SweepError::Other(format!(
                        "{e} ({failures} times in a row); the jobs {} and {} go on",
                        ids.array, ids.merge
                    )));
                }
                None
            }
        };
        if let Some(rows) = rows {
            update(&mut tasks, &mut merge, &rows, ids, s, since);
        }
        for (t, done) in tasks.iter().zip(reported.iter_mut()) {
            if t.phase == Phase::Failed && !*done {
                *done = true;
                on(Event::TaskFailed {
                    task: t,
                    log: s.shard_log(&ids.array, t.k),
                });
            }
        }
        on(Event::Poll {
            tasks: &tasks,
            merge: &merge.state,
            elapsed: started.elapsed(),
        });
        let failed: Vec<usize> = tasks
            .iter()
            .filter(|t| t.phase == Phase::Failed)
            .map(|t| t.k)
            .collect();
        let all_ended = tasks
            .iter()
            .all(|t| matches!(t.phase, Phase::Done | Phase::Failed));
        let merge_ended = matches!(merge.phase, Phase::Done | Phase::Failed);
        if merge_ended || (all_ended && !failed.is_empty()) {
            if !merge_ended {
                cancel(&[&ids.merge]);
                merge.state = "CANCELLED".into();
            }
            return Ok(Finished {
                failed,
                merge_state: merge.state,
                merge_wait_status: merge.wait_status,
                merge_log: s.merge_log(&ids.merge),
            });
        }
        std::thread::sleep(poll);
    }
}

fn modified_since(path: &Path, since: std::time::SystemTime) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= since)
}

/// Applies one `squeue` answer. A job that has left `squeue` (ended more
/// than `MinJobAge` ago) is judged by its output: the shard's summary, the
/// merged summary, written since the submission.
fn update(
    tasks: &mut [Task],
    merge: &mut Task,
    rows: &[Row],
    ids: &Submitted,
    s: &Submission,
    since: std::time::SystemTime,
) {
    let mut listed = vec![false; tasks.len()];
    let mut merge_listed = false;
    for r in rows {
        let target = if r.job == ids.merge && r.task.is_none() {
            merge_listed = true;
            &mut *merge
        } else if r.job == ids.array
            && let Some(k) = r.task.filter(|k| (1..=tasks.len()).contains(k))
        {
            listed[k - 1] = true;
            &mut tasks[k - 1]
        } else {
            continue;
        };
        target.state.clone_from(&r.state);
        target.phase = phase(&r.state);
        target.wait_status = r.wait_status;
        target.seen = true;
    }
    let ended = |p: Phase| matches!(p, Phase::Done | Phase::Failed);
    for (t, listed) in tasks.iter_mut().zip(listed) {
        if !listed && !ended(t.phase) && (t.seen || rows.is_empty()) {
            if modified_since(&s.shard_summary(t.k), since) {
                t.state = "COMPLETED".into();
                t.phase = Phase::Done;
            } else {
                t.state = "GONE (left squeue without its shard summary)".into();
                t.phase = Phase::Failed;
            }
        }
    }
    if !merge_listed && (merge.seen || rows.is_empty()) && !ended(merge.phase) {
        if modified_since(&s.summary(), since) {
            merge.state = "COMPLETED".into();
            merge.phase = Phase::Done;
        } else {
            merge.state = "GONE (left squeue without the merged summary)".into();
            merge.phase = Phase::Failed;
        }
    }
}

/// The last `lines` lines of a file (empty when it cannot be read).
pub fn tail(path: &Path, lines: usize) -> String {
    let Ok(text) = std::fs::read_to_string(path) else {
        return String::new();
    };
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submission() -> Submission {
        Submission {
            sweep: "/home/u/sweeps/b1.toml".into(),
            out: "/shared/u/b1".into(),
            shards: 4,
            job_name: "cosim-b1".into(),
            partition: Some("short".into()),
            time: Some("0:30:00".into()),
            cpus_per_task: Some(2),
            throttle: Some(2),
            sbatch_args: vec!["--account=proj".into(), "--mem-per-cpu=1G".into()],
            cosim: "/opt/cosim/bin/cosim".into(),
            prune: true,
            merge_args: vec!["--fail-if".into(), "mean_abs_power_error > 1.5".into()],
        }
    }

    #[test]
    fn the_array_script_runs_shard_auto_per_task() {
        let s = submission().array_script();
        assert!(s.starts_with("#!/bin/bash\n"), "{s}");
        for line in [
            "#SBATCH --job-name=cosim-b1",
            "#SBATCH --array=1-4%2",
            "#SBATCH --output=/shared/u/b1/slurm/shard-%A_%a.log",
            "#SBATCH --cpus-per-task=2",
            "#SBATCH --partition=short",
            "#SBATCH --time=0:30:00",
            "#SBATCH --account=proj",
            "#SBATCH --mem-per-cpu=1G",
            "/opt/cosim/bin/cosim sweep /home/u/sweeps/b1.toml --shard auto/4 --out /shared/u/b1 \
             --jobs \"${SLURM_CPUS_PER_TASK:-1}\" --no-progress --prune",
            "if [ \"$status\" -eq 1 ]; then exit 0; fi",
        ] {
            assert!(s.lines().any(|l| l == line), "{line} in\n{s}");
        }
        // sbatch reads #SBATCH lines only before the first command.
        let first_command = s
            .lines()
            .position(|l| !l.is_empty() && !l.starts_with('#'))
            .unwrap();
        let last_directive = s
            .lines()
            .collect::<Vec<_>>()
            .iter()
            .rposition(|l| l.starts_with("#SBATCH"))
            .unwrap();
        assert!(last_directive < first_command, "{s}");
    }

    #[test]
    fn the_merge_script_merges_every_shard_and_dies_with_a_failed_one() {
        let s = submission().merge_script();
        for line in [
            "#SBATCH --job-name=cosim-b1-merge",
            "#SBATCH --output=/shared/u/b1/slurm/merge-%j.log",
            "#SBATCH --kill-on-invalid-dep=yes",
            "#SBATCH --partition=short",
            "exec /opt/cosim/bin/cosim sweep merge /shared/u/b1/summary.shard-*-of-4.csv \
             -o /shared/u/b1/summary.csv --fail-if 'mean_abs_power_error > 1.5'",
        ] {
            assert!(s.lines().any(|l| l == line), "{line} in\n{s}");
        }
        assert!(!s.contains("--array"), "{s}");
        assert!(!s.contains("cpus-per-task"), "{s}");
    }

    #[test]
    fn paths_with_blanks_are_quoted() {
        let mut sub = submission();
        sub.out = "/shared/my runs/b1".into();
        sub.throttle = None;
        let s = sub.array_script();
        assert!(s.contains("#SBATCH --array=1-4\n"), "{s}");
        assert!(
            s.contains("#SBATCH --output=\"/shared/my runs/b1/slurm/shard-%A_%a.log\""),
            "{s}"
        );
        assert!(s.contains("--out '/shared/my runs/b1' "), "{s}");
        assert!(
            sub.merge_command()
                .contains("'/shared/my runs/b1'/summary.shard-*-of-4.csv"),
            "{}",
            sub.merge_command()
        );
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        sub.out = "/shared/a\"b".into();
        assert!(sub.validate().is_err());
        sub.out = "relative".into();
        assert!(sub.validate().unwrap_err().contains("absolute"));
        let mut sub = submission();
        sub.sbatch_args.push("--x\n--y".into());
        assert!(sub.validate().is_err());
        assert!(submission().validate().is_ok());
    }

    #[test]
    fn sbatch_parsable_and_squeue_output() {
        assert_eq!(parse_job_id("123\n"), Some("123".into()));
        assert_eq!(parse_job_id("77;cluster2\n"), Some("77".into()));
        assert_eq!(parse_job_id("Submitted batch job 5\n"), None);
        assert_eq!(parse_job_id(""), None);
        let rows = parse_squeue(
            "7|N/A|PENDING|0|Dependency\n6|3|PENDING|0|JobArrayTaskLimit\n\
             6|1|COMPLETED|0|None\n6|2|FAILED|768|NonZeroExitCode\n",
        );
        assert_eq!(rows.len(), 4);
        assert_eq!(
            rows[3],
            Row {
                job: "6".into(),
                task: Some(2),
                state: "FAILED".into(),
                wait_status: Some(768),
                reason: "NonZeroExitCode".into()
            }
        );
        assert_eq!(rows[0].task, None);
        assert_eq!(describe_wait_status(768), "exit status 3");
        assert_eq!(describe_wait_status(9), "signal 9");
        assert_eq!(phase("PENDING"), Phase::Waiting);
        assert_eq!(phase("COMPLETING"), Phase::Running);
        assert_eq!(phase("TIMEOUT"), Phase::Failed);
        assert_eq!(phase("CANCELLED by 0"), Phase::Failed);
        assert_eq!(phase("COMPLETED"), Phase::Done);
    }

    #[test]
    fn tasks_follow_squeue_and_are_judged_by_their_summary_once_gone() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = submission();
        s.out = dir.path().to_path_buf();
        s.shards = 3;
        let ids = Submitted {
            array: "6".into(),
            merge: "7".into(),
        };
        let since = std::time::SystemTime::now() - Duration::from_secs(1);
        let fresh = |k| Task {
            k,
            state: "unknown".into(),
            phase: Phase::Waiting,
            wait_status: None,
            seen: false,
        };
        let mut tasks: Vec<Task> = (1..=3).map(fresh).collect();
        let mut merge = fresh(0);
        let rows =
            parse_squeue("6|1|RUNNING|0|None\n6|2|RUNNING|0|None\n7|N/A|PENDING|0|Dependency\n");
        update(&mut tasks, &mut merge, &rows, &ids, &s, since);
        assert_eq!(tasks[0].phase, Phase::Running);
        assert_eq!(tasks[2].phase, Phase::Waiting, "not listed yet, not seen");
        assert_eq!(merge.state, "PENDING");
        // Task 1 leaves squeue having written its summary, task 2 without.
        std::fs::write(s.shard_summary(1), "index\n").unwrap();
        let rows = parse_squeue("6|3|RUNNING|0|None\n7|N/A|PENDING|0|Dependency\n");
        update(&mut tasks, &mut merge, &rows, &ids, &s, since);
        assert_eq!(tasks[0].phase, Phase::Done);
        assert_eq!(tasks[1].phase, Phase::Failed);
        assert_eq!(tasks[2].phase, Phase::Running);
        let rows = parse_squeue(
            "6|3|FAILED|256|NonZeroExitCode\n7|N/A|CANCELLED|0|DependencyNeverSatisfied\n",
        );
        update(&mut tasks, &mut merge, &rows, &ids, &s, since);
        assert_eq!(tasks[2].wait_status, Some(256));
        assert_eq!(merge.phase, Phase::Failed);
    }

    #[test]
    fn stale_shard_summaries_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "summary.shard-1-of-2.csv",
            "summary.shard-1-of-2.json",
            "summary.csv",
        ] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        remove_shard_summaries(dir.path());
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["summary.csv"]);
    }
}
