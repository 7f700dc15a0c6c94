//! `cosim sweep submit --slurm` against a real Slurm (issue #23): the test
//! starts a single-node cluster of its own (munged, slurmctld, slurmd from
//! Debian's packages, installed with apt-get when missing), submits the
//! sweep `scenarios/sweeps/b1_a_cluster.toml` as a job array and checks the
//! merged summary against an unsharded run; a failing shard is reported by
//! task id with its log; `--no-wait` leaves the merge to Slurm. The daemons
//! are stopped by their pids, also when the test fails.
//!
//! Skipped, with a note on standard error, only where the packages cannot
//! be installed (not root, no apt-get, no package source);
//! `COSIM_REQUIRE_SLURM=1` (set by `.ci/run`) makes that a failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use cosim_tests::{cosim_bin, fmus, scenario};

const PACKAGES: [&str; 4] = ["slurmctld", "slurmd", "slurm-client", "munge"];
/// The programs the test runs, and the package of each.
const PROGRAMS: [(&str, &str); 8] = [
    ("slurmctld", "slurmctld"),
    ("slurmd", "slurmd"),
    ("sbatch", "slurm-client"),
    ("squeue", "slurm-client"),
    ("sinfo", "slurm-client"),
    ("scancel", "slurm-client"),
    ("munged", "munge"),
    ("mungekey", "munge"),
];

fn required() -> bool {
    std::env::var("COSIM_REQUIRE_SLURM").as_deref() == Ok("1")
}

/// A program on the PATH or in the system directories (a user's PATH may
/// lack /usr/sbin, where the daemons are).
fn program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/bin", "/sbin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn missing() -> Vec<&'static str> {
    let mut m: Vec<&str> = PROGRAMS
        .iter()
        .filter(|(p, _)| program(p).is_none())
        .map(|(_, pkg)| *pkg)
        .collect();
    m.dedup();
    m
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(2))
            == Some("0")
    })
}

/// Removes the `policy-rc.d` it created once the installation is over.
struct PolicyGuard(Option<PathBuf>);

impl Drop for PolicyGuard {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Installs the packages with apt-get (Debian's package sources only); the
/// reason when they cannot be.
fn install() -> Result<(), String> {
    let Some(apt) = program("apt-get") else {
        return Err("no apt-get".into());
    };
    // The packages' post-install scripts would start the services (there
    // is no systemd: through their init scripts); a policy-rc.d that
    // exits 101 tells invoke-rc.d not to.
    let policy = Path::new("/usr/sbin/policy-rc.d");
    let _guard = if policy.exists() {
        PolicyGuard(None)
    } else {
        std::fs::write(policy, "#!/bin/sh\n# cosim tests/tests/slurm.rs: no service starts during apt-get install\nexit 101\n")
            .map_err(|e| format!("cannot write {}: {e}", policy.display()))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(policy, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("cannot make {} executable: {e}", policy.display()))?;
        PolicyGuard(Some(policy.to_path_buf()))
    };
    eprintln!(
        "slurm test: installing Debian's {} (apt-get)",
        PACKAGES.join(" ")
    );
    let apt_get = |args: &[&str]| -> Result<(), String> {
        let o = Command::new(&apt)
            .args(["-o", "DPkg::Lock::Timeout=300", "-qq"])
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run apt-get: {e}"))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!(
                "apt-get {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        }
    };
    apt_get(&["update"])?;
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    install.extend(PACKAGES);
    apt_get(&install)?;
    let still = missing();
    if still.is_empty() {
        Ok(())
    } else {
        Err(format!("still missing after apt-get: {}", still.join(" ")))
    }
}

/// Whether the test can run: root (the cluster's daemons run as
/// SlurmUser=root, and only root can install), and the packages there or
/// installed now; otherwise a note on standard error (a failure with
/// `COSIM_REQUIRE_SLURM=1`).
fn slurm_usable() -> bool {
    let missing = missing();
    let result = if !is_root() {
        Err(
            "not root: only root can install Slurm's packages, and the test's cluster runs its daemons as root"
                .to_string(),
        )
    } else if missing.is_empty() {
        Ok(())
    } else {
        install()
    };
    match result {
        Ok(()) => true,
        Err(why) if required() => {
            panic!("COSIM_REQUIRE_SLURM=1 but Slurm cannot be installed and run here: {why}")
        }
        Err(why) => {
            eprintln!(
                "note: SKIPPED the test against a real Slurm: {why} (packages missing: {}; \
                 as root it installs them with apt-get; COSIM_REQUIRE_SLURM=1 makes this a \
                 failure)",
                if missing.is_empty() {
                    "none".to_string()
                } else {
                    missing.join(" ")
                }
            );
            false
        }
    }
}

fn short_hostname() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| {
            Command::new("hostname")
                .output()
                .ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        })
        .expect("the host name");
    name.trim()
        .split('.')
        .next()
        .expect("a host name")
        .to_string()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}

/// A single-node Slurm cluster of the test's own: its daemons (stopped by
/// their pids when dropped, after cancelling every job of the cluster)
/// and its files in a temporary directory.
struct Cluster {
    daemons: Vec<(&'static str, Child)>,
    conf: PathBuf,
    dir: tempfile::TempDir,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let d = dir.path().to_path_buf();
        for sub in ["munge", "state", "spool", "log"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        let conf = d.join("slurm.conf");
        let mut cluster = Cluster {
            daemons: Vec::new(),
            conf: conf.clone(),
            dir,
        };
        let key = d.join("munge/munge.key");
        let o = Command::new(program("mungekey").unwrap())
            .args(["--create", "-k"])
            .arg(&key)
            .output()
            .unwrap();
        assert!(o.status.success(), "mungekey: {o:?}");
        let socket = d.join("munge/munge.socket");
        let path = |p: &str| d.join(p).display().to_string();
        cluster.spawn(
            "munged",
            &[
                "-F",
                "--force",
                &format!("--key-file={}", key.display()),
                &format!("--socket={}", socket.display()),
                &format!("--log-file={}", path("log/munged.log")),
                &format!("--pid-file={}", path("munge/munged.pid")),
                &format!("--seed-file={}", path("munge/munged.seed")),
            ],
        );
        cluster.until("munged's socket", Duration::from_secs(20), || {
            socket.exists()
        });
        let host = short_hostname();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let text = format!(
            "# A single-node cluster of tests/tests/slurm.rs.
ClusterName=cosimtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld}
SlurmdPort={slurmd}
AuthType=auth/munge
AuthInfo=socket={socket}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={state}
SlurmdSpoolDir={spool}
SlurmctldPidFile={ctld_pid}
SlurmdPidFile={slurmd_pid}
SlurmctldLogFile={ctld_log}
SlurmdLogFile={slurmd_log}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
",
            ctld = free_port(),
            slurmd = free_port(),
            socket = socket.display(),
            state = path("state"),
            spool = path("spool"),
            ctld_pid = path("slurmctld.pid"),
            slurmd_pid = path("slurmd.pid"),
            ctld_log = path("log/slurmctld.log"),
            slurmd_log = path("log/slurmd.log"),
        );
        std::fs::write(&conf, text).unwrap();
        let conf_arg = conf.display().to_string();
        cluster.spawn("slurmctld", &["-D", "-f", &conf_arg]);
        cluster.spawn("slurmd", &["-D", "-f", &conf_arg]);
        cluster.until("the node to be idle", Duration::from_secs(60), || {
            let o = client(&conf, "sinfo", &["-h", "-o", "%T"]);
            String::from_utf8_lossy(&o.stdout).trim() == "idle"
        });
        cluster
    }

    /// Starts a daemon in the foreground of its own, output to log/NAME.out.
    fn spawn(&mut self, name: &'static str, args: &[&str]) {
        let out = std::fs::File::create(self.dir.path().join(format!("log/{name}.out"))).unwrap();
        let child = Command::new(program(name).unwrap())
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        self.daemons.push((name, child));
    }

    /// Waits until `ready`, failing with the daemons' logs when a daemon
    /// exits or the time is up.
    fn until(&mut self, what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
        let started = Instant::now();
        while !ready() {
            let exited = self
                .daemons
                .iter_mut()
                .find_map(|(name, child)| Some((*name, child.try_wait().ok()??)));
            if let Some((name, status)) = exited {
                panic!(
                    "{name} exited ({status}) while waiting for {what}:\n{}",
                    self.logs()
                );
            }
            assert!(
                started.elapsed() < limit,
                "no {what} after {limit:?}:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        println!("{what}: {:.1} s", started.elapsed().as_secs_f64());
    }

    fn logs(&self) -> String {
        let mut text = String::new();
        for e in std::fs::read_dir(self.dir.path().join("log"))
            .unwrap()
            .flatten()
        {
            let body = std::fs::read_to_string(e.path()).unwrap_or_default();
            let lines: Vec<&str> = body.lines().collect();
            let tail = lines[lines.len().saturating_sub(30)..].join("\n");
            text.push_str(&format!("--- {}\n{tail}\n", e.path().display()));
        }
        text
    }

    /// `cosim` with this cluster's configuration.
    fn cosim(&self, args: &[&str]) -> Output {
        Command::new(cosim_bin())
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .current_dir(cosim_tests::root())
            .output()
            .expect("running cosim")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Every job of this cluster is the test's.
        let _ = Command::new(program("scancel").unwrap_or_else(|| "scancel".into()))
            .args(["--quiet", "--user=root"])
            .env("SLURM_CONF", &self.conf)
            .output();
        // slurmd, slurmctld, munged: SIGTERM by pid, SIGKILL if still there
        // after 10 s.
        for (name, child) in self.daemons.iter_mut().rev() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .output();
            let started = Instant::now();
            loop {
                match child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if started.elapsed() > Duration::from_secs(10) => {
                        eprintln!("{name} (pid {}) ignored SIGTERM: killed", child.id());
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(100)),
                }
            }
        }
    }
}

/// A Slurm client command on the cluster of `conf`.
fn client(conf: &Path, name: &str, args: &[&str]) -> Output {
    Command::new(program(name).unwrap())
        .args(args)
        .env("SLURM_CONF", conf)
        .output()
        .unwrap_or_else(|e| panic!("running {name}: {e}"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every line of a CSV without its last field (the wall time).
fn without_wall_time(csv: &str) -> Vec<String> {
    csv.lines()
        .map(|l| l.rsplit_once(',').map_or(l, |(a, _)| a).to_string())
        .collect()
}

fn submit_args<'a>(file: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "sweep",
        "submit",
        "--slurm",
        file,
        "--shards",
        "3",
        "--throttle",
        "2",
        "--out",
        out,
        "--time",
        "10",
        "--poll",
        "0.5",
    ];
    args.extend(extra);
    args
}

#[test]
fn sweep_submitted_to_a_real_slurm_merges_to_the_unsharded_summary_skipped_only_where_slurm_cannot_be_installed()
 {
    let started = Instant::now();
    if !slurm_usable() {
        return;
    }
    let installed = started.elapsed().as_secs_f64();
    let t = Instant::now();
    fmus();
    cosim_bin();
    let file = scenario("sweeps/b1_a_cluster.toml");
    let file = file.to_str().unwrap();
    let work = tempfile::tempdir().unwrap();
    let built = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let cluster = Cluster::start();
    let up = t.elapsed().as_secs_f64();

    // The unsharded sweep, here.
    let whole = work.path().join("whole");
    let o = cluster.cosim(&[
        "sweep",
        file,
        "--out",
        whole.to_str().unwrap(),
        "--no-progress",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let unsharded = std::fs::read_to_string(whole.join("summary.csv")).unwrap();

    // The same through Slurm: 3 shards of a job array, at most 2 at once,
    // then the merge job.
    let t = Instant::now();
    let shared = work.path().join("shared");
    let o = cluster.cosim(&submit_args(file, shared.to_str().unwrap(), &[]));
    let err = stderr(&o);
    println!("{err}");
    assert!(o.status.success(), "{err}\n{}", cluster.logs());
    let submitted = t.elapsed().as_secs_f64();
    assert!(err.contains("slurm: 3/3 shards done"), "{err}");
    assert!(
        err.contains("sweep: 6 runs (4 ok, 2 diverged, 0 failed)"),
        "{err}"
    );
    let merged = std::fs::read_to_string(shared.join("summary.csv")).unwrap();
    assert!(merged.lines().next().unwrap().ends_with(",wall_time_s"));
    assert_eq!(merged.lines().count(), 7, "{merged}");
    assert_eq!(without_wall_time(&merged), without_wall_time(&unsharded));
    assert!(
        shared.join("sweep.svg").exists(),
        "the merge draws the plot"
    );
    // Each task found its shard in Slurm's variables.
    let logs: Vec<PathBuf> = std::fs::read_dir(shared.join("slurm"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("/shard-"))
        .collect();
    assert_eq!(logs.len(), 3, "{logs:?}");
    let all: String = logs
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    for k in 1..=3 {
        assert!(
            all.contains(&format!("shard {k}/3 (from SLURM_ARRAY_TASK_ID={k})")),
            "{all}"
        );
    }

    // A shard that fails: reported by task id with its log; the merge job
    // is cancelled, and the command exits 1.
    let flaky = work.path().join("flaky-cosim");
    std::fs::write(
        &flaky,
        format!(
            "#!/bin/sh\nif [ \"$SLURM_ARRAY_TASK_ID\" = 2 ]; then echo 'shard 2 fails on purpose' >&2; exit 3; fi\nexec '{}' \"$@\"\n",
            cosim_bin().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&flaky, std::fs::Permissions::from_mode(0o755)).unwrap();
    let t = Instant::now();
    let failing = work.path().join("failing");
    let o = cluster.cosim(&submit_args(
        file,
        failing.to_str().unwrap(),
        &["--cosim", flaky.to_str().unwrap()],
    ));
    let err = stderr(&o);
    println!("{err}");
    assert_eq!(o.status.code(), Some(1), "{err}");
    let array = err
        .split("submitted: job array ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no array job id in {err}"));
    let log = failing.join(format!("slurm/shard-{array}_2.log"));
    assert!(
        err.contains(&format!(
            "error: shard 2/3 (task {array}_2) FAILED, exit status 3; log: {}",
            log.display()
        )),
        "{err}"
    );
    assert!(err.contains("| shard 2 fails on purpose"), "{err}");
    assert!(err.contains("1 of 3 shards failed (2)"), "{err}");
    assert!(err.contains("rerun them: sbatch --array=2 "), "{err}");
    assert!(!failing.join("summary.csv").exists());
    assert!(failing.join("summary.shard-1-of-3.csv").exists());
    let failed = t.elapsed().as_secs_f64();

    // Thresholds are the merge's verdict: a shard whose runs fail the
    // sweep file's fail_if succeeds as a task; the merge fails (exit
    // status 1) with its report and the failing rows.
    let t = Instant::now();
    let text = std::fs::read_to_string(scenario("sweeps/b1_a_cluster.toml"))
        .unwrap()
        .replace(
            "\"../b1_quarter_car_a.toml\"",
            &format!("\"{}\"", scenario("b1_quarter_car_a.toml").display()),
        )
        .replace(
            "\"../../fmus/dist/references/b1_linear.csv\"",
            &format!("\"{}\"", fmus().join("references/b1_linear.csv").display()),
        )
        .replace("[sweep]\n", "[sweep]\nfail_if = [\"status == diverged\"]\n");
    let strict = work.path().join("strict.toml");
    std::fs::write(&strict, text).unwrap();
    let judged = work.path().join("judged");
    let o = cluster.cosim(&submit_args(
        strict.to_str().unwrap(),
        judged.to_str().unwrap(),
        &[],
    ));
    let err = stderr(&o);
    println!("{err}");
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("slurm: 3/3 shards done"), "{err}");
    assert!(
        err.contains(
            "2 runs fail the thresholds: 002-extrapolation=0_step=0.07, 005-extrapolation=1_step=0.07"
        ),
        "{err}"
    );
    assert!(err.contains("ended FAILED (exit status 1)"), "{err}");
    let merged = std::fs::read_to_string(judged.join("summary.csv")).unwrap();
    assert_eq!(without_wall_time(&merged), without_wall_time(&unsharded));
    let judged_s = t.elapsed().as_secs_f64();

    // --no-wait: the job ids on standard output, and the merge runs
    // without this process.
    let t = Instant::now();
    let later = work.path().join("later");
    let o = cluster.cosim(&submit_args(file, later.to_str().unwrap(), &["--no-wait"]));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let ids = String::from_utf8_lossy(&o.stdout);
    let ids: Vec<&str> = ids.split_whitespace().collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(
        err.contains(&format!("scancel {} {}", ids[0], ids[1])),
        "{err}"
    );
    assert!(err.contains(" sweep merge "), "{err}");
    let limit = Instant::now() + Duration::from_secs(120);
    while !later.join("summary.json").exists() {
        assert!(
            Instant::now() < limit,
            "no merge after 120 s:\n{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let merged = std::fs::read_to_string(later.join("summary.csv")).unwrap();
    assert_eq!(without_wall_time(&merged), without_wall_time(&unsharded));
    let no_wait = t.elapsed().as_secs_f64();

    drop(cluster);
    println!(
        "slurm test: packages there or installed {installed:.1} s, FMUs and cosim built {built:.1} s, cluster up {up:.1} s, sweep through Slurm {submitted:.1} s, failing shard \
         {failed:.1} s, failing threshold {judged_s:.1} s, --no-wait {no_wait:.1} s, in all {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn dry_run_prints_the_scripts_and_submits_nothing() {
    fmus();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shared");
    let o = Command::new(cosim_bin())
        .args([
            "sweep",
            "submit",
            "--slurm",
            scenario("sweeps/b1_a_cluster.toml").to_str().unwrap(),
            "--shards",
            "2",
            "--out",
            out.to_str().unwrap(),
            "--partition",
            "short",
            "--time",
            "0:10:00",
            "--cpus-per-task",
            "2",
            "--throttle",
            "1",
            "--sbatch-arg=--account=proj",
            "--fail-if",
            "status == error",
            "--dry-run",
        ])
        // No sbatch may run: an empty PATH.
        .env("PATH", "")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let exe = cosim_bin().display().to_string();
    for line in [
        "#SBATCH --array=1-2%1",
        "#SBATCH --partition=short",
        "#SBATCH --time=0:10:00",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --account=proj",
        "#SBATCH --kill-on-invalid-dep=yes",
        &format!(
            "{exe} sweep {} --shard auto/2 --out {} --jobs \"${{SLURM_CPUS_PER_TASK:-1}}\" --no-progress",
            scenario("sweeps/b1_a_cluster.toml").display(),
            out.display()
        ),
        &format!(
            "exec {exe} sweep merge {0}/summary.shard-*-of-2.csv -o {0}/summary.csv --fail-if 'status == error'",
            out.display()
        ),
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
    assert!(!out.exists(), "a dry run writes nothing");
    // Bad input: more shards than runs, no engine.
    let o = Command::new(cosim_bin())
        .args([
            "sweep",
            "submit",
            "--slurm",
            scenario("sweeps/b1_a_cluster.toml").to_str().unwrap(),
            "--shards",
            "7",
            "--out",
            out.to_str().unwrap(),
            "--dry-run",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the sweep has 6 runs, so 1 to 6 shards"),
        "{}",
        stderr(&o)
    );
    let o = Command::new(cosim_bin())
        .args(["sweep", "submit", "x.toml", "--shards", "2", "--out", "o"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--slurm"), "{}", stderr(&o));
}
