//! `cosim sweep` (issue #9): the B1 stability limits found by step sweeps,
//! sharding and merging, the plot, CI thresholds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use cosim_sweep::{Options, Status, Summary, SweepSpec};
use cosim_tests::{Table, cosim, fmus, scenario};

/// Runs a sweep file through the library into a temporary directory.
fn sweep(file: &Path) -> (cosim_sweep::Outcome, tempfile::TempDir) {
    fmus();
    let out = tempfile::tempdir().unwrap();
    let spec = SweepSpec::load(file).unwrap_or_else(|e| panic!("{e}"));
    let options = Options {
        out: Some(out.path().to_path_buf()),
        ..Options::default()
    };
    let outcome = cosim_sweep::run(&spec, &options, &cosim_sweep::Silent).unwrap();
    (outcome, out)
}

fn print_table(outcome: &cosim_sweep::Outcome) {
    let s = &outcome.summary;
    for row in 0..s.rows.len() {
        let cell = |c: &str| s.cell(row, c).unwrap_or("").to_string();
        println!(
            "{:>4} {:>10} {:>9} growth {:>12} mean|dP| {}",
            cell("index"),
            cell("master.step"),
            cell("status"),
            cell("growth"),
            cell("mean_abs_power_error")
        );
    }
}

/// The stability limit found along `master.step`, checked against the
/// published value, with every run below it ok and the largest steps
/// flagged as diverged.
/// Returns the bracket, the estimate and each run's (step, growth).
fn check_limit(file: &str, published: f64) -> (f64, f64, f64, Vec<(f64, f64)>) {
    let started = Instant::now();
    let (outcome, _dir) = sweep(&scenario(file));
    print_table(&outcome);
    let s = &outcome.summary;
    let steps: Vec<f64> = s
        .column("master.step")
        .unwrap()
        .iter()
        .map(|c| c.parse().unwrap())
        .collect();
    let status: Vec<Status> = s
        .column("status")
        .unwrap()
        .iter()
        .map(|c| Status::parse(c).unwrap())
        .collect();
    assert!(!status.contains(&Status::Error), "a run failed");
    // The largest step (80 ms) diverges, the smallest (1 ms) does not.
    let at = |h: f64| status[steps.iter().position(|&x| x == h).unwrap()];
    assert_eq!(at(80e-3), Status::Diverged);
    assert_eq!(at(1e-3), Status::Ok);
    let limits = outcome.limits();
    assert_eq!(limits.len(), 1, "{limits:?}");
    let l = &limits[0];
    let (stable, unstable) = (l.stable.unwrap(), l.unstable.unwrap());
    // Monotone: every step up to the stable end of the bracket ran ok,
    // every step from the unstable end on diverged.
    for (h, st) in steps.iter().zip(&status) {
        if *h <= stable {
            assert_eq!(
                *st,
                Status::Ok,
                "step {h} (limit bracket {stable} .. {unstable})"
            );
        }
        if *h >= unstable {
            assert_eq!(
                *st,
                Status::Diverged,
                "step {h} (limit bracket {stable} .. {unstable})"
            );
        }
    }
    // Bisection narrowed the bracket to a few percent.
    assert!(unstable / stable < 1.03, "bracket {stable} .. {unstable}");
    let estimate = l.estimate.unwrap();
    let rel = (estimate - published) / published;
    println!(
        "{file}: stability limit {:.2} ms (bracket {:.2} .. {:.2} ms), published {:.1} ms ({:+.1} %), {} runs in {:.1} s",
        estimate * 1e3,
        stable * 1e3,
        unstable * 1e3,
        published * 1e3,
        rel * 100.0,
        steps.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        rel.abs() <= 0.15,
        "limit {estimate} vs published {published}"
    );
    let growth: Vec<(f64, f64)> = steps
        .iter()
        .enumerate()
        .filter_map(|(row, &h)| Some((h, s.cell(row, "growth")?.parse().ok()?)))
        .collect();
    (stable, unstable, estimate, growth)
}

/// A small sweep of B1 A: 8 runs (an uneven split in 3 shards), a product
/// of two axes, one run that diverges.
fn small_sweep(dir: &Path) -> PathBuf {
    let text = format!(
        r#"[sweep]
scenario = "{}"
set = {{ "simulation.stop" = 2.0 }}
[[sweep.axes]]
key = "master.extrapolation"
values = [0, 1]
[[sweep.axes]]
key = "master.step"
values = [2e-3, 8e-3, 0.03, 0.07]
[sweep.reference]
file = "{}"
columns = {{ "chassis.v_c" = "v_c" }}
power = "F_c*v_c"
"#,
        scenario("b1_quarter_car_a.toml").display(),
        fmus().join("references").join("b1_linear.csv").display()
    );
    let path = dir.join("small.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Every line of a CSV without its last field (the wall time).
fn without_wall_time(csv: &str) -> Vec<String> {
    csv.lines()
        .map(|l| l.rsplit_once(',').map_or(l, |(a, _)| a).to_string())
        .collect()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn merged_shards_equal_the_unsharded_summary() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let file = small_sweep(dir.path());
    let file = file.to_str().unwrap();
    let whole = dir.path().join("whole");
    let o = cosim(&[
        "sweep",
        file,
        "--out",
        whole.to_str().unwrap(),
        "--no-progress",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let shards = dir.path().join("shards");
    let mut summaries = Vec::new();
    for k in 1..=3 {
        let o = cosim(&[
            "sweep",
            file,
            "--shard",
            &format!("{k}/3"),
            "--out",
            shards.to_str().unwrap(),
            "--jobs",
            "1",
            "--no-progress",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        summaries.push(shards.join(format!("summary.shard-{k}-of-3.csv")));
    }
    let rows = |p: &Path| std::fs::read_to_string(p).unwrap().lines().count() - 1;
    assert_eq!(
        summaries.iter().map(|p| rows(p)).collect::<Vec<_>>(),
        [3, 3, 2]
    );
    let merged = dir.path().join("merged.csv");
    let mut args = vec!["sweep", "merge"];
    let names: Vec<String> = summaries.iter().map(|p| p.display().to_string()).collect();
    args.extend(names.iter().map(String::as_str));
    args.extend(["-o", merged.to_str().unwrap()]);
    let o = cosim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let unsharded = std::fs::read_to_string(whole.join("summary.csv")).unwrap();
    let merged_text = std::fs::read_to_string(&merged).unwrap();
    assert!(unsharded.lines().next().unwrap().ends_with(",wall_time_s"));
    assert_eq!(
        without_wall_time(&merged_text),
        without_wall_time(&unsharded)
    );
    assert_eq!(unsharded.lines().count(), 9);
    // The run that diverged is flagged the same way in both.
    assert!(unsharded.contains(",diverged,"), "{unsharded}");
    assert!(
        dir.path().join("sweep.svg").exists(),
        "merge draws the plot"
    );
    // Two shards of three are not the whole sweep.
    let o = cosim(&[
        "sweep",
        "merge",
        &names[0],
        &names[2],
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("run(s) 1, 4, 7 missing") || stderr(&o).contains("missing"),
        "{}",
        stderr(&o)
    );
    println!(
        "shards and merge in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// A minimal XML well-formedness check: one root element, every element
/// closed in order, attributes quoted, no stray `<` or `&`.
fn xml_root(text: &str) -> String {
    let mut stack: Vec<String> = Vec::new();
    let mut root = None;
    let mut rest = text.trim_start();
    if let Some(r) = rest.strip_prefix("<?xml") {
        rest = &r[r.find("?>").expect("unterminated XML declaration") + 2..];
    }
    loop {
        let Some(lt) = rest.find('<') else {
            assert!(
                rest.trim().is_empty() || !stack.is_empty(),
                "text after the root"
            );
            check_text(rest);
            break;
        };
        check_text(&rest[..lt]);
        if !rest[..lt].trim().is_empty() {
            assert!(!stack.is_empty(), "text outside the root element");
        }
        rest = &rest[lt..];
        if let Some(r) = rest.strip_prefix("<!--") {
            rest = &r[r.find("-->").expect("unterminated comment") + 3..];
            continue;
        }
        let gt = rest.find('>').expect("unterminated tag");
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched </{name}>"
            );
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let name = tag
            .split_whitespace()
            .next()
            .expect("empty tag")
            .to_string();
        check_attributes(&tag[name.len()..]);
        if stack.is_empty() {
            assert!(root.is_none(), "a second root element <{name}>");
            root = Some(tag.to_string());
        }
        if !self_closing {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
    root.expect("no root element")
}

fn check_text(text: &str) {
    assert!(!text.contains('<'), "stray '<'");
    for (i, _) in text.match_indices('&') {
        let entity = &text[i..text[i..].find(';').map_or(text.len(), |j| i + j + 1)];
        assert!(
            ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(&entity)
                || entity.starts_with("&#"),
            "bad entity {entity}"
        );
    }
}

fn check_attributes(mut s: &str) {
    loop {
        s = s.trim_start();
        if s.is_empty() {
            return;
        }
        let eq = s.find('=').expect("attribute without value");
        assert!(
            !s[..eq].trim().contains(char::is_whitespace),
            "bad attribute name in {s}"
        );
        s = s[eq + 1..].trim_start();
        let q = s.chars().next().expect("missing attribute value");
        assert!(q == '"' || q == '\'', "unquoted attribute value: {s}");
        let end = s[1..].find(q).expect("unterminated attribute value") + 1;
        check_text(&s[1..end]);
        s = &s[end + 1..];
    }
}

#[test]
fn the_plot_is_a_valid_svg() {
    let dir = tempfile::tempdir().unwrap();
    let file = small_sweep(dir.path());
    let (outcome, out) = sweep(&file);
    let plot = outcome.plot_path.clone().expect("a plot");
    assert_eq!(plot, out.path().join("sweep.svg"));
    let text = std::fs::read_to_string(&plot).unwrap();
    let root = xml_root(&text);
    assert!(root.starts_with("svg "), "root element: <{root}>");
    assert!(
        root.contains("xmlns=\"http://www.w3.org/2000/svg\""),
        "{root}"
    );
    // Both panels, the axis names, a line per extrapolation order, and the
    // diverged run marked.
    assert!(
        text.contains("mean_abs_power_error (log)"),
        "no metric axis"
    );
    assert!(text.contains("wall time [s]"), "no time axis");
    assert!(text.contains("master.step (log)"));
    assert!(text.contains("master.extrapolation=0") && text.contains("master.extrapolation=1"));
    assert!(text.contains("diverged or failed"));
    assert!(text.matches("<polyline").count() >= 4, "lines");
    // A malformed document is caught by the checker.
    assert!(std::panic::catch_unwind(|| xml_root("<svg><g></svg>")).is_err());
}

#[test]
fn a_threshold_violation_exits_non_zero_and_names_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.toml");
    std::fs::write(
        &file,
        format!(
            "[sweep]\nscenario = \"{}\"\n[[sweep.axes]]\nkey = \"master.step\"\nvalues = [1e-3, 1e-2]\n[sweep.reference]\nfile = \"{}\"\ncolumns = {{ \"chassis.v_c\" = \"v_c\" }}\npower = \"F_c*v_c\"\n",
            scenario("b1_quarter_car_a.toml").display(),
            fmus().join("references").join("b1_linear.csv").display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let run = |thresholds: &[&str]| {
        let mut args = vec![
            "sweep",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--no-plot",
        ];
        for t in thresholds {
            args.extend(["--fail-if", t]);
        }
        cosim(&args)
    };
    // 1 ms: mean |dP| 1.23 W (Table III: 1.3 W); 10 ms: larger.
    let o = run(&["mean_abs_power_error > 1.5"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("1 run fails the thresholds: 001-step=0.01"),
        "{err}"
    );
    assert!(
        err.contains("mean_abs_power_error > 1.5: run 001-step=0.01 (index 1)"),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "the header and the failing row: {stdout}");
    assert!(lines[0].starts_with("index,run,"), "{stdout}");
    assert!(lines[1].starts_with("1,001-step=0.01,"), "{stdout}");
    // A column-error threshold; and one every run meets.
    let o = run(&["max_abs:chassis.v_c > 1e-2"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("001-step=0.01"), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("run 000-step=0.001 (index 0)"),
        "{}",
        stderr(&o)
    );
    let o = run(&["mean_abs_power_error > 100", "status != ok"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("sweep: 2 runs (2 ok"), "{}", stderr(&o));
    // -q: no progress and no report; a violation is still printed.
    let mut quiet = vec!["-q", "sweep", file.to_str().unwrap(), "--out"];
    quiet.extend([out.to_str().unwrap(), "--no-plot"]);
    let o = cosim(&quiet);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    quiet.extend(["--fail-if", "mean_abs_power_error > 1.5"]);
    let o = cosim(&quiet);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("1 run fails the thresholds"),
        "{}",
        stderr(&o)
    );
    // A metric the summary does not have is bad input, with a suggestion.
    let o = run(&["mean_abs_power_eror > 1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean 'mean_abs_power_error'?"),
        "{}",
        stderr(&o)
    );
    let o = run(&["mean_abs_power_error >> 1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn sweep_file_errors_point_at_the_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        format!(
            "[sweep]\nscenario = \"{}\"\n[[sweep.axes]]\nkey = \"wheel.k_x\"\nvalues = [1e4]\n",
            scenario("b1_quarter_car_a.toml").display()
        ),
    )
    .unwrap();
    let o = cosim(&["sweep", file.to_str().unwrap(), "--check"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("bad.toml:4:7: error: wheel.k_x:"), "{err}");
    assert!(err.contains("did you mean 'k_c'?"), "{err}");
    // The embedded example lists its runs.
    let o = cosim(&[
        "sweep",
        "scenarios/sweeps/b1_a_ecco_tolerance.toml",
        "--check",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let runs = String::from_utf8_lossy(&o.stdout);
    assert_eq!(runs.lines().count(), 18, "{runs}");
    assert!(
        runs.starts_with("000-extrapolation=0_tolerance=1e-8\n"),
        "{runs}"
    );
}

/// A misspelt `--fail-if` metric is refused before any run (and by
/// `--check`); `cosim run` on a sweep file names `cosim sweep`; a re-run
/// with fewer values removes the run directories of the old ones.
#[test]
fn sweep_habits_checked_up_front_and_stale_runs_removed() {
    let dir = tempfile::tempdir().unwrap();
    let write = |values: &str| {
        let text = format!(
            "[sweep]\nscenario = \"{}\"\nout = \"out\"\nset = {{ \"simulation.stop\" = 0.05 }}\n[[sweep.axes]]\nkey = \"master.step\"\nvalues = [{values}]\n",
            scenario("b1_quarter_car_a.toml").display()
        );
        let path = dir.path().join("habits.toml");
        std::fs::write(&path, text).unwrap();
        path
    };
    let file = write("1e-3, 2e-3, 5e-3");
    let f = file.to_str().unwrap();
    for check in [true, false] {
        let mut args = vec!["sweep", f, "--fail-if", "mean_stepp > 1"];
        if check {
            args.push("--check");
        }
        let started = Instant::now();
        let o = cosim(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("no run has a metric 'mean_stepp' (did you mean 'mean_step'?)"),
            "{err}"
        );
        assert!(started.elapsed().as_secs() < 20);
    }
    assert!(
        !dir.path().join("out").join("runs").exists(),
        "no run was made"
    );
    let o = cosim(&["run", f]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("run it with `cosim sweep"), "{err}");
    // Three runs, then two: the third's directory goes.
    let runs = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir.join("out").join("runs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let o = cosim(&["sweep", f, "--no-plot"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(runs(dir.path()).len(), 3);
    let file = write("1e-3, 2e-3");
    let o = cosim(&["sweep", file.to_str().unwrap(), "--no-plot"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        runs(dir.path()),
        vec!["000-step=0.001".to_string(), "001-step=0.002".to_string()]
    );
}

/// `cosim sweep` with the environment of a Slurm job array task, a
/// Kubernetes indexed Job's pod, or of neither (issue #23).
fn sweep_in(file: &str, out: &Path, shard: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut c = std::process::Command::new(cosim_tests::cosim_bin());
    c.args(["sweep", file, "--shard", shard, "--out"])
        .arg(out)
        .args(["--jobs", "1", "--no-progress"]);
    for name in [
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_MAX",
        "SLURM_ARRAY_TASK_COUNT",
        "SLURM_ARRAY_TASK_STEP",
        "JOB_COMPLETION_INDEX",
    ] {
        c.env_remove(name);
    }
    c.envs(env.iter().copied()).output().unwrap()
}

#[test]
fn shard_auto_reads_slurm_and_kubernetes_variables_and_names_them_when_unset() {
    fmus();
    let dir = tempfile::tempdir().unwrap();
    let file = small_sweep(dir.path());
    let file = file.to_str().unwrap();
    let out = dir.path().join("out");
    // Task 2 of a 0-based array of 3 (--array=0-2): shard 3/3, runs 2, 5.
    let o = sweep_in(
        file,
        &out,
        "auto",
        &[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("shard 3/3 (from SLURM_ARRAY_TASK_ID=2, SLURM_ARRAY_TASK_MIN=0"),
        "{}",
        stderr(&o)
    );
    let shard3 = std::fs::read_to_string(out.join("summary.shard-3-of-3.csv")).unwrap();
    let indices: Vec<&str> = shard3
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(indices, ["2", "5"]);
    // A Kubernetes indexed Job's pod 0 of 3: shard 1/3.
    let o = sweep_in(file, &out, "auto/3", &[("JOB_COMPLETION_INDEX", "0")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("summary.shard-1-of-3.csv").exists());
    // The count is needed there; and a task id outside 1..N is refused.
    let o = sweep_in(file, &out, "auto", &[("JOB_COMPLETION_INDEX", "0")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--shard auto/N"), "{}", stderr(&o));
    let o = sweep_in(file, &out, "auto/3", &[("SLURM_ARRAY_TASK_ID", "0")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--array=1-3"), "{}", stderr(&o));
    // No engine: an error naming the variables, before anything runs.
    let o = sweep_in(file, &dir.path().join("none"), "auto", &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    for name in [
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_MIN",
        "JOB_COMPLETION_INDEX",
        "--shard K/N",
    ] {
        assert!(err.contains(name), "{name} in {err}");
    }
    assert!(!dir.path().join("none").exists());
    // The merge of the shards from the environment and explicit ones.
    let o = sweep_in(file, &out, "2/3", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let shards: Vec<String> = (1..=3)
        .map(|k| {
            out.join(format!("summary.shard-{k}-of-3.csv"))
                .display()
                .to_string()
        })
        .collect();
    let merged = dir.path().join("merged.csv");
    let mut args = vec!["sweep", "merge"];
    args.extend(shards.iter().map(String::as_str));
    args.extend(["-o", merged.to_str().unwrap(), "--no-plot"]);
    let o = cosim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&merged).unwrap().lines().count(), 9);
}

/// B1's linear one-step map of the Jacobi/ZOH co-simulation at macro step
/// `h`, from the model equations (`cosim_tests::b1_jacobi::step`, 10 micro
/// steps), on the states of both FMUs and the held inputs; with `fresh`,
/// `F_c` evaluated with the other FMU's velocity of the new communication
/// point instead of the held one.
///
/// Each reticulation integrates one position twice (A: the chassis and the
/// wheel's copy of it; B: the wheel and the chassis's copy), and an offset
/// between the two changes nothing: an eigenvalue 1 that says nothing of
/// stability. The map is taken on the states without it (A: the chassis
/// position is left out, nothing reads it; B: the suspension's deflection
/// `z_c - z_w` replaces the two positions it is made of).
fn one_step_map(b: bool, h: f64, fresh: bool) -> [[f64; 6]; 6] {
    use cosim_models::quarter_car::defaults::MICRO_STEPS;
    let n = MICRO_STEPS as usize;
    let step = |x: [f64; 6]| cosim_tests::b1_jacobi::step(b, h, [n, n], fresh, x);
    // Columns: the images of the unit vectors (the map is linear).
    let mut m = [[0.0; 6]; 6];
    for j in 0..6 {
        let mut e = [0.0; 6];
        e[j] = 1.0;
        for (i, y) in step(e).iter().enumerate() {
            m[i][j] = *y;
        }
    }
    m
}

/// Spectral radius by Gelfand's formula, rho = lim ||M^k||^(1/k): M^(2^j)
/// by repeated squaring, the scale factored out at each squaring (ln rho
/// = sum_j ln s_j / 2^j).
fn spectral_radius(m: [[f64; 6]; 6]) -> f64 {
    let norm = |a: &[[f64; 6]; 6]| a.iter().flatten().fold(0.0f64, |s, x| s.max(x.abs()));
    let mut a = m;
    let mut log = 0.0;
    let mut power = 1.0;
    for _ in 0..60 {
        let s = norm(&a);
        a.iter_mut().flatten().for_each(|x| *x /= s);
        log += s.ln() / power;
        let mut sq = [[0.0; 6]; 6];
        for (row, a_row) in sq.iter_mut().zip(&a) {
            for (a_ik, a_k) in a_row.iter().zip(&a) {
                for (x, a_kj) in row.iter_mut().zip(a_k) {
                    *x += a_ik * a_kj;
                }
            }
        }
        a = sq;
        power *= 2.0;
    }
    (log + norm(&a).ln() / power).exp()
}

/// The step in [1 ms, 80 ms] where the spectral radius crosses 1.
fn critical_step(b: bool, fresh: bool) -> f64 {
    let (mut lo, mut hi) = (1e-3f64, 80e-3f64);
    assert!(spectral_radius(one_step_map(b, lo, fresh)) < 1.0);
    assert!(spectral_radius(one_step_map(b, hi, fresh)) > 1.0);
    for _ in 0..50 {
        let mid = (lo * hi).sqrt();
        if spectral_radius(one_step_map(b, mid, fresh)) < 1.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo * hi).sqrt()
}

/// The B1 stability limits (sadjina2016 sec. IV C: 58.5 ms for
/// reticulation A, 11.3 ms for B): each sweep flags a limit within 15 % of
/// the published one ([`check_limit`]), a little above the step where the
/// spectral radius of this master's one-step map crosses 1 (the flag needs
/// visible growth). Written into docs/sweep.md (block `b1-stability`).
#[test]
fn b1_stability_limits_in_the_docs_are_what_the_build_gives() {
    let published = [58.5e-3, 11.3e-3];
    let mut table = String::from(
        "| | flagged limit (bracket) | spectral radius = 1 | paper (sec. IV C) |\n|---|---|---|---|\n",
    );
    let mut fresh = Vec::new();
    let mut notes = Vec::new();
    for (b, (name, file)) in [
        ("reticulation A", "sweeps/b1_a_stability.toml"),
        ("reticulation B", "sweeps/b1_b_stability.toml"),
    ]
    .into_iter()
    .enumerate()
    {
        let b = b == 1;
        let paper = published[usize::from(b)];
        let (stable, unstable, estimate, growth) = check_limit(file, paper);
        if !b {
            // The growth ratio of a stable run: at the smallest step, and at
            // the largest sweep step below the bracket.
            let below = growth
                .iter()
                .filter(|(h, _)| *h < stable * 0.9)
                .max_by(|x, y| x.0.total_cmp(&y.0))
                .copied()
                .unwrap();
            let at_1ms = growth.iter().find(|(h, _)| *h == 1e-3).unwrap().1;
            assert!(at_1ms < below.1 && below.1 < 1.2);
            notes.push(format!(
                "In B1 A the growth ratio of the residual power is {} at 1 ms and {} at {:.1} ms; just above the limit, at 55 ms, the spectral radius is {:.4}.",
                cosim_core::text::significant(at_1ms, 2),
                cosim_core::text::significant(below.1, 2),
                below.0 * 1e3,
                spectral_radius(one_step_map(false, 55e-3, false))
            ));
        }
        let crossing = critical_step(b, false);
        assert!(
            crossing < estimate && estimate / crossing < 1.05,
            "{name}: flagged {estimate}, spectral radius 1 at {crossing}"
        );
        let ms = |x: f64| {
            if x < 20e-3 {
                format!("{:.2}", x * 1e3)
            } else {
                format!("{:.1}", x * 1e3)
            }
        };
        table.push_str(&format!(
            "| {name} | {} ms ({} .. {}) | {} ms | {:.1} ms ({:+.1} %) |\n",
            ms(estimate),
            ms(stable),
            ms(unstable),
            ms(crossing),
            paper * 1e3,
            (estimate / paper - 1.0) * 100.0
        ));
        fresh.push(critical_step(b, true));
    }
    table.push_str(&format!(
        "\nWith `F_c` evaluated with the other FMU's velocity of the new communication point, the spectral radius crosses 1 at {:.2} ms for A and {:.1} ms for B.\n",
        fresh[0] * 1e3,
        fresh[1] * 1e3
    ));
    for n in notes {
        table.push_str(&format!("{n}\n"));
    }
    println!("{table}");
    cosim_tests::check_doc_block("sweep.md", "b1-stability", &table);
}

/// Merge takes shards of one sweep only: a shard of a sweep with other
/// values set in every run, or one without its sidecar, is refused; more
/// shards than runs leave an empty shard that is a summary still, and the
/// merge of all of them is the whole sweep.
#[test]
fn merge_takes_the_shards_of_one_sweep_and_empty_ones() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, stop: f64| {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!(
                "[sweep]\nscenario = \"{}\"\nset = {{ \"simulation.stop\" = {stop} }}\n[[sweep.axes]]\nkey = \"master.step\"\nvalues = [2e-3, 4e-3]\n",
                scenario("b1_quarter_car_a.toml").display()
            ),
        )
        .unwrap();
        path
    };
    let (a, b) = (write("a.toml", 0.2), write("b.toml", 0.1));
    let out = dir.path().join("out");
    let shard = |file: &Path, k: usize, n: usize| {
        let o = cosim(&[
            "sweep",
            file.to_str().unwrap(),
            "--shard",
            &format!("{k}/{n}"),
            "--out",
            out.to_str().unwrap(),
            "--jobs",
            "1",
            "--no-progress",
            "--no-plot",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        out.join(format!("summary.shard-{k}-of-{n}.csv"))
    };
    let merge = |shards: &[&Path]| {
        let mut args = vec!["sweep".to_string(), "merge".into()];
        args.extend(shards.iter().map(|p| p.display().to_string()));
        args.extend([
            "-o".into(),
            dir.path().join("merged.csv").display().to_string(),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cosim(&args)
    };
    // Three shards of two runs: the third is empty, a summary still.
    let shards: Vec<PathBuf> = (1..=3).map(|k| shard(&a, k, 3)).collect();
    let empty = std::fs::read_to_string(&shards[2]).unwrap();
    assert_eq!(empty.trim_end(), "index,master.step", "{empty:?}");
    let o = merge(&shards.iter().map(PathBuf::as_path).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let merged = std::fs::read_to_string(dir.path().join("merged.csv")).unwrap();
    assert_eq!(merged.lines().count(), 3, "{merged}");
    // Shard 2 of a sweep that sets another stop time: refused.
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let foreign = other.join("summary.shard-2-of-2.csv");
    std::fs::copy(shard(&b, 2, 2), &foreign).unwrap();
    std::fs::copy(
        out.join("summary.shard-2-of-2.json"),
        other.join("summary.shard-2-of-2.json"),
    )
    .unwrap();
    let own = shard(&a, 1, 2);
    let o = merge(&[&own, &foreign]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a shard of the same sweep as")
            && stderr(&o).contains("different values set in every run"),
        "{}",
        stderr(&o)
    );
    // A shard without its sidecar: refused, naming it.
    std::fs::remove_file(other.join("summary.shard-2-of-2.json")).unwrap();
    let o = merge(&[&own, &foreign]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no sidecar"), "{}", stderr(&o));
}

/// Every axis value is checked before anything runs, not only those of
/// the first run: a value the FMU's model description refuses is bad input
/// (exit 2) at that value, with `--check` and without.
#[test]
fn every_axis_value_is_checked_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("masses.toml");
    std::fs::write(
        &path,
        format!(
            "[sweep]\nscenario = \"{}\"\nset = {{ \"simulation.stop\" = 0.1 }}\n[[sweep.axes]]\nkey = \"chassis.m_c\"\nvalues = [400.0, -2.0]\n",
            scenario("b1_quarter_car_a.toml").display()
        ),
    )
    .unwrap();
    for check in [true, false] {
        let out = dir.path().join(format!("out_{check}"));
        let mut args = vec![
            "sweep",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--no-progress",
        ];
        if check {
            args.push("--check");
        }
        let o = cosim(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "--check {check}: {err}");
        assert!(
            err.contains(
                "masses.toml:6:18: error: chassis.m_c = -2.0: -2 is below the minimum 0 of 'm_c'"
            ),
            "--check {check}: {err}"
        );
        assert!(!out.join("runs").exists(), "nothing ran");
    }
}

// ----- runs that end their process; the output directory's lock -------------

/// A Faulty integrator (FMI 2, `fail_mode` and `fail_at` set by the sweep)
/// fed back through a Gain, 1 s in steps of 0.01 s.
fn faulty_scenario(dir: &Path) -> PathBuf {
    let fmu = |m: &str| fmus().join("fmi2").join(format!("{m}.fmu"));
    let text = format!(
        r#"[simulation]
stop = 1.0
[master]
step = 0.01
[[subsystems]]
name = "faulty"
fmu = "{}"
parameters = {{ fail_mode = 1, fail_at = -1.0, x0 = 1.0 }}
[[subsystems]]
name = "gain"
fmu = "{}"
parameters = {{ k = -0.5 }}
[[connections]]
from = "faulty.x"
to = "gain.u"
[[connections]]
from = "gain.y"
to = "faulty.u"
"#,
        fmu("Faulty").display(),
        fmu("Gain").display()
    );
    let path = dir.join("faulty.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A sweep of the Faulty scenario, zipping `modes` with `fail_at`.
fn faulty_sweep(dir: &Path, modes: &str, fail_at: &str, set: &str) -> PathBuf {
    let scenario = faulty_scenario(dir);
    let text = format!(
        "[sweep]\nscenario = \"{}\"\ncombine = \"zip\"\nset = {{ {set} }}\n[[sweep.axes]]\nkey = \"faulty.fail_mode\"\nvalues = [{modes}]\n[[sweep.axes]]\nkey = \"faulty.fail_at\"\nvalues = [{fail_at}]\n",
        scenario.display()
    );
    let path = dir.join("faulty_sweep.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `cosim <args>` with `TMPDIR` set to `tmp` (its extraction directories
/// go there).
fn cosim_in(tmp: &Path, args: &[&str]) -> std::process::Output {
    fmus();
    std::process::Command::new(cosim_tests::cosim_bin())
        .args(args)
        .env("TMPDIR", tmp)
        .current_dir(cosim_tests::root())
        .output()
        .unwrap()
}

/// `cosim -vv sweep FILE --out OUT --jobs 1` (no progress, no plot, and
/// `extra`), its extraction directories in `tmp`.
fn verbose_sweep(tmp: &Path, file: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "-vv",
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--jobs",
        "1",
        "--no-progress",
        "--no-plot",
    ];
    args.extend(extra);
    cosim_in(tmp, &args)
}

/// The entries of `tmp` that are extraction directories or their locks.
fn extractions(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cosim-fmu-"))
        .collect()
}

/// Issue 40, item 7: an FMU that calls `exit()`, segfaults or aborts in
/// one run of a sweep used to end the sweep (status 3 or 139, no summary,
/// the rows of the finished runs lost). Each run goes to a worker
/// process: such a run is a `crashed` row naming how its process ended,
/// every other run is a row, the sweep's status is the documented one
/// (0: failed runs are rows), the run that called `exit()` keeps every
/// completed row and its summary (as `cosim run` does), a call that hangs
/// past `step_timeout` is an error row, and no extraction directory is
/// left.
#[test]
fn runs_that_end_their_process_are_crashed_rows_and_the_sweep_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let file = faulty_sweep(
        dir.path(),
        "1, 9, 4, 5, 6, 1",
        "-1.0, 0.305, 0.305, 0.305, 0.305, -1.0",
        "\"master.step_timeout\" = 1.0",
    );
    let out = dir.path().join("out");
    let o = cosim_in(
        &tmp,
        &[
            "sweep",
            file.to_str().unwrap(),
            "--jobs",
            "2",
            "--no-progress",
            "--no-plot",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let summary = Summary::read(&out.join("summary.csv")).unwrap();
    let status = summary.column("status").unwrap();
    assert_eq!(
        status,
        ["ok", "crashed", "crashed", "crashed", "error", "ok"],
        "{err}"
    );
    let message = summary.column("message").unwrap();
    assert!(message[1].contains("called exit()"), "{}", message[1]);
    assert!(
        message[2].contains("died of a segmentation fault (SIGSEGV)"),
        "{}",
        message[2]
    );
    assert!(message[3].contains("aborted (SIGABRT)"), "{}", message[3]);
    assert!(
        message[4].contains("fmi2DoStep at t = 0.3 has not returned after 1"),
        "{}",
        message[4]
    );
    assert!(
        err.contains("sweep: 6 runs (2 ok, 0 diverged, 4 failed)"),
        "{err}"
    );
    let run = |i: usize| out.join("runs").join(summary.cell(i, "run").unwrap());
    // exit(): every completed row (t = 0 .. 0.3) and the run's summary.
    let trace = Table::read(&run(1).join("trace.csv")).unwrap();
    assert_eq!(trace.time().len(), 31);
    assert_eq!(summary.cell(1, "t_reached"), Some("0.3"));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run(1).join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(s["status"], "error", "{s}");
    // A segfault or an abort: the header and the rows written before (the
    // writer thread writes every 0.2 s), whole; no reserve of a summary
    // left behind.
    for i in [2, 3] {
        let text = std::fs::read_to_string(run(i).join("trace.csv")).unwrap();
        assert!(text.starts_with("time [s],"), "{text}");
        assert!(text.ends_with('\n'), "{text}");
        assert!(Table::read(&run(i).join("trace.csv")).unwrap().time().len() <= 31);
        assert!(!run(i).join(".summary.json.tmp").exists());
    }
    // The hung run: every completed row, summary error.
    assert_eq!(
        Table::read(&run(4).join("trace.csv")).unwrap().time().len(),
        31
    );
    for i in [0, 5] {
        assert_eq!(summary.cell(i, "t_reached"), Some("1.0"));
    }
    assert_eq!(extractions(&tmp), Vec::<String>::new());
}

/// Issue 42: a pruned sweep (no file of a run) keeps its rows when FMUs
/// end their worker processes: the runs handed to a worker that died are
/// made by its replacement, a run that segfaulted is a row without the
/// time it reached (it had no trace to read it from), and nothing is left.
#[test]
fn a_pruned_sweep_keeps_every_row_when_runs_end_their_process() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let file = faulty_sweep(
        dir.path(),
        "1, 9, 1, 4, 1, 1",
        "-1.0, 0.305, -1.0, 0.305, -1.0, -1.0",
        "",
    );
    let out = dir.path().join("out");
    let o = verbose_sweep(&tmp, &file, &out, &["--prune"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let summary = Summary::read(&out.join("summary.csv")).unwrap();
    assert_eq!(
        summary.column("status").unwrap(),
        ["ok", "crashed", "ok", "crashed", "ok", "ok"],
        "{err}"
    );
    assert_eq!(
        summary.column("t_reached").unwrap(),
        // (exit() is caught in the worker, which says how far the run got.)
        ["1.0", "0.3", "1.0", "", "1.0", "1.0"]
    );
    assert!(!out.join("runs").exists(), "a pruned sweep wrote runs/");
    assert_eq!(extractions(&tmp), Vec::<String>::new());
}

/// A child process killed when dropped (a failed test leaves none).
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A sweep killed outright keeps the rows of the runs that finished: each
/// row is in `summary.csv` as its run ends. Its worker, whose run hangs,
/// ends too (the end of its input interrupts it) and removes the
/// extraction directories: its own, and those the dead sweep lent it.
#[test]
fn a_killed_sweep_keeps_the_rows_of_its_finished_runs() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let file = faulty_sweep(dir.path(), "1, 1, 6", "-1.0, -1.0, 0.305", "");
    let out = dir.path().join("out");
    fmus();
    let mut sweep = Reaped(
        std::process::Command::new(cosim_tests::cosim_bin())
            .args([
                "sweep",
                file.to_str().unwrap(),
                "--jobs",
                "1",
                "--no-progress",
            ])
            .arg("--out")
            .arg(&out)
            .env("TMPDIR", &tmp)
            .current_dir(cosim_tests::root())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let summary = out.join("summary.csv");
    let hung = out.join("runs/002-fail_mode=6_fail_at=0.305/.cosim.lock");
    let started = Instant::now();
    // The third run has started (its lock holds its worker's id): the
    // first two are done.
    let worker = loop {
        if let Ok(pid) = std::fs::read_to_string(&hung).map(|t| t.trim().to_string())
            && !pid.is_empty()
        {
            break pid;
        }
        assert!(sweep.0.try_wait().unwrap().is_none(), "the sweep ended");
        assert!(
            started.elapsed().as_secs() < 60,
            "the third run did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    sweep.0.kill().unwrap();
    sweep.0.wait().unwrap();
    let s = Summary::read(&summary).unwrap();
    assert_eq!(s.column("status").unwrap(), ["ok", "ok"]);
    assert_eq!(s.column("index").unwrap(), ["0", "1"]);
    assert!(
        !out.join("summary.json").exists(),
        "a sidecar of a sweep that did not end"
    );
    // The worker ends by itself, leaving nothing.
    let proc = PathBuf::from("/proc").join(&worker);
    while proc.exists() {
        assert!(
            started.elapsed().as_secs() < 60,
            "the worker {worker} goes on"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(extractions(&tmp), Vec::<String>::new());
}

/// Sweeps lock their output directory as runs do: a sweep or a run into
/// a directory in use is refused (status 2, the directory and the
/// holder's process id named) before it writes anything; the shards of
/// one sweep share the directory, two copies of one shard do not.
#[test]
fn a_sweep_into_an_output_directory_in_use_is_refused() {
    use cosim_core::output_lock::OutputLock;
    let dir = tempfile::tempdir().unwrap();
    let file = faulty_sweep(
        dir.path(),
        "1, 1",
        "-1.0, -1.0",
        "\"simulation.stop\" = 0.05",
    );
    let f = file.to_str().unwrap();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let held = OutputLock::exclusive(&out).unwrap().unwrap();
    let pid = std::process::id();
    for args in [
        vec!["sweep", f, "--no-plot", "--out", o],
        vec!["sweep", f, "--shard", "1/2", "--out", o],
    ] {
        let r = cosim(&args);
        let err = stderr(&r);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "{o}: the output directory is in use by another cosim run (process id {pid})"
            )),
            "{args:?}: {err}"
        );
    }
    assert!(!out.join("runs").exists(), "a refused sweep wrote");
    drop(held);
    let shard = OutputLock::shard(&out, 2, 2).unwrap().unwrap();
    let r = cosim(&["sweep", f, "--shard", "1/2", "--no-progress", "--out", o]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let r = cosim(&["sweep", f, "--shard", "2/2", "--out", o]);
    let err = stderr(&r);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "in use by shard 2/2 of a sweep (process id {pid})"
        )),
        "{err}"
    );
    let r = cosim(&[
        "run",
        &cosim_tests::root()
            .join("scenarios/b1_quarter_car_a.toml")
            .display()
            .to_string(),
        "--stop",
        "0.01",
        "--out",
        o,
    ]);
    let err = stderr(&r);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("in use by shard 2/2 of a sweep"), "{err}");
    drop(shard);
}

/// A sweep clears a run's directory left by an earlier sweep before the
/// run, but not one another run is writing into (by hand, `--out` into
/// it): that run is an error row naming the directory, and the other's
/// files stay.
#[test]
fn a_sweep_leaves_a_run_directory_in_use_alone() {
    use cosim_core::output_lock::OutputLock;
    let dir = tempfile::tempdir().unwrap();
    let file = faulty_sweep(
        dir.path(),
        "1, 1",
        "-1.0, -1.0",
        "\"simulation.stop\" = 0.05",
    );
    let out = dir.path().join("out");
    let args = [
        "sweep",
        file.to_str().unwrap(),
        "--no-plot",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ];
    let r = cosim(&args);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let mut runs: Vec<PathBuf> = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    assert_eq!(runs.len(), 2, "{runs:?}");
    // An earlier sweep's leftover in the first, a run in progress in the
    // second.
    std::fs::write(runs[0].join("stale.txt"), "x").unwrap();
    std::fs::write(runs[1].join("theirs.txt"), "x").unwrap();
    let held = OutputLock::exclusive(&runs[1]).unwrap().unwrap();
    let r = cosim(&args);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let summary = Summary::read(&out.join("summary.csv")).unwrap();
    assert_eq!(summary.column("status").unwrap(), ["ok", "error"]);
    let message = summary.column("message").unwrap();
    assert!(
        message[1].contains(&format!(
            "<out>/runs/{}: the output directory is in use by another cosim run (process id {})",
            runs[1].file_name().unwrap().to_str().unwrap(),
            std::process::id()
        )),
        "{}",
        message[1]
    );
    assert!(!runs[0].join("stale.txt").exists());
    assert!(runs[1].join("theirs.txt").exists());
    drop(held);
}

/// Issue 42, item 2: a sweep extracts each FMU once (the check and every
/// worker use that extraction), and its runs reuse the instances of the
/// run before, reset (`fmi2Reset`, `fmi3Reset`), with the same bits as
/// new instances (`--fresh-instances`): the summaries but for the wall
/// time, and every run's trace, byte for byte. Fixed-step FMI 2 and
/// FMI 3, and Richardson's rollback (saved FMU states freed between runs);
/// nothing is left in the temporary directory.
#[test]
fn reused_instances_give_the_bits_of_new_ones_and_each_fmu_is_extracted_once() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for (name, fmus) in [
        ("b1_quarter_car_a.toml", 2),
        ("b1_quarter_car_a_fmi3.toml", 2),
        ("b2_richardson.toml", 2),
    ] {
        let file = dir.path().join(format!("reuse_{name}"));
        std::fs::write(
            &file,
            format!(
                "[sweep]\nscenario = \"{}\"\n[[sweep.axes]]\nkey = \"simulation.stop\"\nvalues = [0.2, 0.5, 1.0]\n[[sweep.axes]]\nkey = \"outputs.decimation\"\nvalues = [1, 3]\n",
                scenario(name).display()
            ),
        )
        .unwrap();
        let sweep = |out: &Path, extra: &[&str]| {
            let o = verbose_sweep(&tmp, &file, out, extra);
            assert!(o.status.success(), "{name}: {}", stderr(&o));
            stderr(&o)
        };
        let (reused, fresh) = (dir.path().join("reused"), dir.path().join("fresh"));
        let log = sweep(&reused, &[]);
        sweep(&fresh, &["--fresh-instances"]);
        let extracted = log.lines().filter(|l| l.contains("extracted ")).count();
        assert_eq!(extracted, fmus, "{name}: {log}");
        // One worker: every run but the first on the instances of the one before.
        let reused_instances = log
            .lines()
            .filter(|l| l.contains("reused an instance"))
            .count();
        assert_eq!(reused_instances, 5 * fmus, "{name}: {log}");
        let summary = |d: &Path| std::fs::read_to_string(d.join("summary.csv")).unwrap();
        assert_eq!(
            without_wall_time(&summary(&reused)),
            without_wall_time(&summary(&fresh)),
            "{name}"
        );
        assert_eq!(summary(&reused).lines().count(), 7, "{name}");
        let mut traces = 0;
        for run in std::fs::read_dir(reused.join("runs")).unwrap() {
            let run = run.unwrap().path();
            let run_name = run.file_name().unwrap();
            let a = std::fs::read(run.join("trace.csv")).unwrap();
            let b = std::fs::read(fresh.join("runs").join(run_name).join("trace.csv")).unwrap();
            assert!(a == b, "{name}: {} differs", run.display());
            traces += 1;
        }
        assert_eq!(traces, 6, "{name}");
        assert!(extractions(&tmp).is_empty(), "{:?}", extractions(&tmp));
    }
}

/// A sweep of B1 A along `master.step` (`steps`, 2 s runs against the
/// reference) with `[sweep.refine]` of 3 stages, into `out`.
fn refined_sweep(dir: &Path, steps: &str, out: &Path) -> PathBuf {
    let text = format!(
        r#"[sweep]
scenario = "{}"
set = {{ "simulation.stop" = 2.0 }}
out = "{}"
[[sweep.axes]]
key = "master.step"
values = [{steps}]
[sweep.reference]
file = "{}"
columns = {{ "chassis.v_c" = "v_c" }}
power = "F_c*v_c"
[sweep.refine]
axis = "master.step"
iterations = 3
"#,
        scenario("b1_quarter_car_a.toml").display(),
        out.display(),
        fmus().join("references").join("b1_linear.csv").display()
    );
    let path = dir.join(format!("refined_{}.toml", steps.len()));
    std::fs::write(&path, text).unwrap();
    path
}

/// The progress lines of a sweep (`run K/N ...`), up to the status.
fn progress_lines(err: &str) -> Vec<String> {
    err.lines()
        .filter(|l| l.starts_with("run "))
        .map(|l| {
            let words: Vec<&str> = l.split(' ').collect();
            let end = words
                .iter()
                .position(|w| ["ok", "diverged", "error", "crashed", "interrupted"].contains(w))
                .unwrap_or(words.len() - 1);
            words[..=end].join(" ")
        })
        .collect()
}

/// Issue 43, item 8: the sweep's counter counts the bisection's runs to
/// come (at their most: a run per group and stage) and names each stage,
/// instead of reading `run 3/3` and going on; a bisection that has no
/// bracket to narrow lowers the total to the runs made. The summary's
/// path is shown normalised.
#[test]
fn the_sweep_counter_counts_the_bisection_runs_to_come() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x").join("..").join("out");
    let file = refined_sweep(dir.path(), "2e-3, 0.03, 0.07", &out);
    let o = cosim(&["sweep", file.to_str().unwrap(), "--jobs", "1", "--no-plot"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        progress_lines(&err),
        [
            "run 1/6 000-step=0.002 ok",
            "run 2/6 001-step=0.03 ok",
            "run 3/6 002-step=0.07 diverged",
            "run 4/6 (bisection 1/3) 003-step=0.05 ok",
            "run 5/6 (bisection 2/3) 004-step=0.06 diverged",
            "run 6/6 (bisection 3/3) 005-step=0.055 ok",
        ],
        "{err}"
    );
    assert!(
        err.contains("sweep: 6 runs (4 ok, 2 diverged, 0 failed) in "),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "  summary: {}\n",
            dir.path().join("out").join("summary.csv").display()
        )),
        "{err}"
    );
    // No run diverges: nothing to bisect, the total comes down to the grid.
    let out = dir.path().join("stable");
    let file = refined_sweep(dir.path(), "2e-3, 0.01", &out);
    let o = cosim(&["sweep", file.to_str().unwrap(), "--jobs", "1", "--no-plot"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        progress_lines(&err),
        ["run 1/5 000-step=0.002 ok", "run 2/5 001-step=0.01 ok"],
        "{err}"
    );
    assert!(
        err.contains("sweep: 2 runs (2 ok, 0 diverged, 0 failed) in "),
        "{err}"
    );
}

/// A sweep of three long B1 runs (10 min of simulated time each).
fn long_sweep(dir: &Path) -> PathBuf {
    let sweep = dir.join("long.toml");
    std::fs::write(
        &sweep,
        format!(
            "[sweep]\nscenario = \"{}\"\nset = {{ \"simulation.stop\" = 600.0 }}\n[[sweep.axes]]\nkey = \"master.step\"\nvalues = [1e-4, 2e-4, 3e-4]\n",
            scenario("b1_quarter_car_a.toml").display()
        ),
    )
    .unwrap();
    sweep
}

/// Waits (at most a minute) until the first run of the sweep into `out`
/// has its directory.
fn wait_for_the_first_run(out: &Path) {
    let started = Instant::now();
    while !std::fs::read_dir(out.join("runs")).is_ok_and(|mut d| d.next().is_some()) {
        assert!(
            started.elapsed().as_secs() < 60,
            "the first run did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
}

/// Issue 43, item 8: the runs of an interrupted sweep are `interrupted`
/// in its summary and its report, not `error` / failed: the one running
/// (stopped at a macro step), and those not started.
#[test]
fn an_interrupted_sweep_lists_its_runs_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let file = long_sweep(dir.path());
    // In this process.
    fmus();
    let out = dir.path().join("in_process");
    let spec = SweepSpec::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let options = Options {
        out: Some(out.clone()),
        jobs: Some(1),
        plot: false,
        interrupt: Some(flag.clone()),
        ..Options::default()
    };
    let outcome = std::thread::scope(|s| {
        s.spawn(|| {
            wait_for_the_first_run(&out);
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        cosim_sweep::run(&spec, &options, &cosim_sweep::Silent).unwrap()
    });
    let s = &outcome.summary;
    assert_eq!(
        s.column("status").unwrap(),
        ["interrupted", "interrupted", "interrupted"]
    );
    let message = s.column("message").unwrap();
    assert!(message[0].starts_with("interrupted at t = "), "{message:?}");
    assert_eq!(
        message[1..],
        [
            "interrupted before it started",
            "interrupted before it started"
        ]
    );
    let c = outcome.meta.counts;
    assert_eq!((c.ok, c.diverged, c.error, c.interrupted), (0, 0, 0, 3));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["counts"]["interrupted"], 3, "{json}");
    // The command, its runs in worker processes: SIGINT.
    let out = dir.path().join("command");
    let child = std::process::Command::new(cosim_tests::cosim_bin())
        .args(["sweep", file.to_str().unwrap(), "--jobs", "1", "--no-plot"])
        .arg("--out")
        .arg(&out)
        .current_dir(cosim_tests::root())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_the_first_run(&out);
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(
        err.contains("run 1/3 000-step=0.0001 interrupted ("),
        "{err}"
    );
    assert!(
        err.contains("sweep: 3 runs (0 ok, 0 diverged, 0 failed, 3 interrupted) in "),
        "{err}"
    );
    let s = Summary::read(&out.join("summary.csv")).unwrap();
    assert_eq!(
        s.column("status").unwrap(),
        ["interrupted", "interrupted", "interrupted"]
    );
}

/// Issue 42: a sweep's metrics are computed from each run's rows kept in
/// memory, as its trace and energy log read back, not from the files read
/// again; `--prune` keeps no file of a run at all (no directory, lock,
/// trace, logs or summary), and its summary is the full sweep's, cell for
/// cell but the wall time. The runs are short, so each worker is handed
/// its next run ahead: the rows are those of every run, in index order.
#[test]
fn a_pruned_sweep_writes_no_file_of_a_run_and_gives_the_rows_of_a_full_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = small_sweep(dir.path());
    let run = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "sweep",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--jobs",
            "2",
            "--no-progress",
            "--no-plot",
        ];
        args.extend(extra);
        let o = cosim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        std::fs::read_to_string(out.join("summary.csv")).unwrap()
    };
    let (full, pruned) = (dir.path().join("full"), dir.path().join("pruned"));
    let full_csv = run(&full, &[]);
    let pruned_csv = run(&pruned, &["--prune"]);
    assert_eq!(without_wall_time(&full_csv), without_wall_time(&pruned_csv));
    let summary = Summary::read(&full.join("summary.csv")).unwrap();
    // (The 0.07 s steps diverge: the energy log's growth says so.)
    assert_eq!(
        summary.column("status").unwrap(),
        ["ok", "ok", "ok", "diverged", "ok", "ok", "ok", "diverged"]
    );
    for c in [
        "max_abs_output",
        "max_abs:chassis.v_c",
        "mean_abs_power_error",
    ] {
        assert!(
            summary.column_index(c).is_some(),
            "no column {c}: {full_csv}"
        );
    }
    // The metrics are those of the files on disk.
    for i in 0..8 {
        let trace = full
            .join("runs")
            .join(summary.cell(i, "run").unwrap())
            .join("trace.csv");
        let t = Table::read(&trace).unwrap();
        let largest = t.columns[1..]
            .iter()
            .flatten()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        let cell: f64 = summary.cell(i, "max_abs_output").unwrap().parse().unwrap();
        assert_eq!(cell.to_bits(), largest.to_bits(), "run {i}");
    }
    assert!(!pruned.join("runs").exists(), "a pruned sweep wrote runs/");
    // Pruned into the full sweep's directory: the earlier runs' files,
    // named as this sweep's runs, would read as this sweep's; none stay.
    let again = run(&full, &["--prune"]);
    assert_eq!(without_wall_time(&again), without_wall_time(&pruned_csv));
    assert!(
        !full.join("runs").exists(),
        "the full sweep's runs/ stayed under the pruned sweep's summary"
    );
}

/// Issue 42: the sweeps of one machine (the shards of a sweep, each a
/// process of its own) share one extraction of each FMU: a second sweep
/// started while a first runs extracts nothing and opens the first's
/// directories (`cosim-fmu-shared...`); the last one out removes them, and
/// a sweep's summary is the same as with an extraction of its own.
#[test]
fn the_sweeps_of_one_machine_share_one_extraction_of_each_fmu() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let long = long_sweep(dir.path());
    let out = dir.path().join("long");
    let child = std::process::Command::new(cosim_tests::cosim_bin())
        .args(["sweep", long.to_str().unwrap(), "--jobs", "1", "--no-plot"])
        .arg("--out")
        .arg(&out)
        .env("TMPDIR", &tmp)
        .current_dir(cosim_tests::root())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = Reaped(child);
    wait_for_the_first_run(&out);
    let sorted = |mut names: Vec<String>| {
        names.sort();
        names
    };
    let shared = sorted(extractions(&tmp));
    assert_eq!(
        shared.iter().filter(|n| !n.ends_with(".lock")).count(),
        2,
        "{shared:?}"
    );
    // A second sweep of the same scenario's FMUs, meanwhile.
    let file = small_sweep(dir.path());
    let second = dir.path().join("second");
    let run = |out: &Path| {
        let o = verbose_sweep(&tmp, &file, out, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        (
            stderr(&o),
            std::fs::read_to_string(out.join("summary.csv")).unwrap(),
        )
    };
    let (log, summary) = run(&second);
    let extracted = log.lines().filter(|l| l.contains("extracted ")).count();
    assert_eq!(extracted, 0, "{log}");
    let opened: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("this machine's processes share"))
        .collect();
    assert_eq!(opened.len(), 2, "{log}");
    for name in shared.iter().filter(|n| !n.ends_with(".lock")) {
        assert!(
            opened.iter().any(|l| l.contains(name.as_str())),
            "{name}: {log}"
        );
    }
    // The first sweep still holds them; interrupted, it removes them.
    assert_eq!(sorted(extractions(&tmp)), shared);
    let sent = std::process::Command::new("kill")
        .args(["-INT", &first.0.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = first.0.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(extractions(&tmp), Vec::<String>::new());
    // Alone, the second sweep extracts its own (and removes it): the same cells.
    let (log, alone) = run(&dir.path().join("alone"));
    let extracted = log.lines().filter(|l| l.contains("extracted ")).count();
    assert_eq!(extracted, 2, "{log}");
    assert_eq!(without_wall_time(&summary), without_wall_time(&alone));
    assert_eq!(extractions(&tmp), Vec::<String>::new());
}
