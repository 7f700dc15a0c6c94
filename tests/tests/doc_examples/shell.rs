//! Shell lines: checked statically (subcommands, options, files, cargo targets) and run.

use super::*;

/// Commands other than `cosim` that the test does not run, with the
/// reason; each is still checked statically ([`static_check`]).
pub(crate) const NOT_RUN: &[(&str, &str)] = &[
    ("cargo xtask", "builds, installs or runs the whole suite"),
    ("cargo run", "a benchmark or an example measured in release"),
    ("cargo test", "a test target of the suite, run by CI itself"),
    ("cargo build", "a build"),
    ("bench/", "a benchmark (minutes)"),
    ("bash bench/", "a benchmark (minutes)"),
    ("fuzz/", "fuzzing (CI runs it)"),
    ("pip", "installs into the user's Python"),
    ("maturin", "the wheel build of `cargo xtask test-python`"),
    ("apt-get", "installs system packages"),
    ("sudo", "installs system packages"),
    ("kubectl", "needs a Kubernetes cluster"),
    ("gh", "needs GitHub"),
    ("git", "needs another repository"),
    ("valgrind", "a profile (minutes)"),
    ("callgrind_annotate", "reads a profile"),
    ("python3", "a benchmark step"),
    (".venv/bin/python", "a benchmark (timings)"),
    ("for ", "a benchmark step"),
    ("sed ", "a benchmark step"),
    ("cd ", "a benchmark build"),
];

/// The logical lines of a shell block: `\`-continuations joined, comment
/// lines and blank lines dropped; with the output lines after each `$ `
/// line (when the block has `$ ` lines).
pub(crate) fn shell_lines(text: &str) -> Vec<(String, Vec<String>)> {
    let prompt = text.lines().any(|l| l.starts_with("$ "));
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut pending = String::new();
    for raw in text.lines() {
        let l = raw.trim_end();
        if prompt {
            if let Some(cmd) = l.strip_prefix("$ ") {
                out.push((cmd.to_string(), Vec::new()));
            } else if let Some(last) = out.last_mut() {
                last.1.push(l.to_string());
            }
            continue;
        }
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        if let Some(head) = l.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(l.trim_start());
        out.push((std::mem::take(&mut pending), Vec::new()));
    }
    if !pending.is_empty() {
        out.push((pending, Vec::new()));
    }
    out
}

/// Shell words of `line` up to an unquoted `#` comment (quotes removed;
/// no expansion).
pub(crate) fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let (mut cur, mut has) = (String::new(), false);
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                has = true;
            }
            (None, '\\') => cur.extend(chars.next()),
            (None, '#') if !has => break,
            (None, c) if c.is_whitespace() => {
                if has {
                    words.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            (None, c) => {
                cur.push(c);
                has = true;
            }
        }
    }
    if has {
        words.push(cur);
    }
    words
}

/// Whether `line` (a block's line) looks like a command.
pub(crate) fn is_command(line: &str) -> bool {
    let w = words(line);
    let Some(first) = w.iter().find(|w| !is_assignment(w)) else {
        return false;
    };
    first == "cosim"
        || first.starts_with("target/release/cosim")
        || NOT_RUN
            .iter()
            .any(|(p, _)| line_command(line).starts_with(p) || first == p.trim())
}

pub(crate) fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_')
    })
}

/// `line` without leading `VAR=value` assignments.
pub(crate) fn line_command(line: &str) -> String {
    let mut rest = line.trim_start();
    loop {
        let word = rest.split_whitespace().next().unwrap_or("");
        if is_assignment(word) && !word.contains(['"', '\'']) {
            rest = rest[word.len()..].trim_start();
        } else {
            return rest.to_string();
        }
    }
}

/// The help texts of `cosim` subcommands, by subcommand path.
pub(crate) fn cosim_help(sub: &[String]) -> Result<String, String> {
    type Helps = HashMap<Vec<String>, Result<String, String>>;
    static CACHE: OnceLock<Mutex<Helps>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(h) = cache.lock().unwrap().get(sub) {
        return h.clone();
    }
    let out = Command::new(cosim_bin())
        .args(sub)
        .arg("--help")
        .output()
        .unwrap();
    let h = if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`cosim {} --help` fails: {}",
            sub.join(" "),
            text_of(&out)
        ))
    };
    cache.lock().unwrap().insert(sub.to_vec(), h.clone());
    h
}

/// The static check of a `cosim` command's words (after `cosim`): the
/// subcommands exist, and every option is in their `--help`.
pub(crate) fn check_cosim_words(args: &[String]) -> Result<(), String> {
    let top = cosim_help(&[])?;
    let Some(first) = args.first() else {
        return Err("`cosim` without a subcommand".into());
    };
    if !top.contains(&format!("\n  {first} ")) {
        return Err(format!("`cosim {first}`: no such subcommand"));
    }
    let mut sub = vec![first.clone()];
    let help = cosim_help(&sub)?;
    let mut help = help;
    if let Some(second) = args.get(1)
        && help.contains("Commands:")
        && help.contains(&format!("\n  {second} "))
    {
        sub.push(second.clone());
        help = cosim_help(&sub)?;
    }
    for a in &args[sub.len()..] {
        let opt = a.split('=').next().unwrap_or(a);
        let known = if opt.starts_with("--") {
            help.contains(&format!("{opt} "))
                || help.contains(&format!("{opt}\n"))
                || help.contains(&format!("{opt}="))
                || help.contains(&format!("{opt}["))
        } else if opt.len() == 2 && opt.starts_with('-') && opt != "--" {
            help.contains(&format!("{opt},")) || help.contains(&format!("{opt} "))
        } else {
            true
        };
        if !known {
            return Err(format!(
                "`cosim {}` has no option {opt} (its --help does not list it)",
                sub.join(" ")
            ));
        }
    }
    Ok(())
}

/// The static check of one shell line: see the module's comment.
pub(crate) fn static_check(line: &str) -> Result<(), String> {
    let root = root();
    for segment in line.split("&&").flat_map(|s| s.split(';')) {
        let cmd = line_command(segment.trim());
        let w = words(&cmd);
        let Some(first) = w.first() else { continue };
        let exists = |p: &str| -> Result<(), String> {
            if root.join(p).exists() {
                Ok(())
            } else {
                Err(format!(
                    "`{line}` names {p}, which the repository does not have"
                ))
            }
        };
        match first.as_str() {
            "cosim" => check_cosim_words(&w[1..])?,
            f if f.ends_with("/cosim") => check_cosim_words(&w[1..])?,
            "cargo" => match w.get(1).map(String::as_str) {
                Some("xtask") => {
                    let task = w.get(2).cloned().unwrap_or_default();
                    let main = std::fs::read_to_string(root.join("xtask/src/main.rs")).unwrap();
                    if !main.contains(&format!("Some(\"{task}\")")) {
                        return Err(format!("`{line}`: xtask has no task '{task}'"));
                    }
                }
                Some("run" | "test" | "build") => {
                    let pkgs: Vec<&String> = w
                        .windows(2)
                        .filter(|p| p[0] == "-p")
                        .map(|p| &p[1])
                        .collect();
                    for p in pkgs {
                        let dir = package_dir(p)
                            .ok_or_else(|| format!("`{line}`: no package {p} in the workspace"))?;
                        for (flag, sub) in [("--example", "examples"), ("--test", "tests")] {
                            if let Some(i) = w.iter().position(|x| x == flag) {
                                let name = &w[i + 1];
                                if !dir.join(sub).join(format!("{name}.rs")).exists() {
                                    return Err(format!(
                                        "`{line}`: package {p} has no {sub}/{name}.rs"
                                    ));
                                }
                            }
                        }
                    }
                }
                _ => {}
            },
            "bash" | "python3" | "sh" => {
                if let Some(f) = w.get(1).filter(|f| !f.starts_with('-')) {
                    exists(f)?;
                }
            }
            ".venv/bin/python" => exists(&w[1])?,
            "maturin" => {
                if let Some(i) = w.iter().position(|x| x == "-m") {
                    exists(&w[i + 1])?;
                }
            }
            f if f.starts_with("bench/") || f.starts_with("fuzz/") => exists(f)?,
            _ => {}
        }
    }
    Ok(())
}

/// The directory of workspace package `name`.
pub(crate) fn package_dir(name: &str) -> Option<PathBuf> {
    let root = root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).ok()?;
    let doc: toml::Table = manifest.parse().ok()?;
    let members = doc.get("workspace")?.get("members")?.as_array()?;
    let mut dirs: Vec<PathBuf> = Vec::new();
    for m in members {
        let m = m.as_str()?;
        if let Some(prefix) = m.strip_suffix("/*") {
            for e in std::fs::read_dir(root.join(prefix)).ok()? {
                dirs.push(e.ok()?.path());
            }
        } else {
            dirs.push(root.join(m));
        }
    }
    dirs.into_iter().find(|d| {
        std::fs::read_to_string(d.join("Cargo.toml"))
            .ok()
            .and_then(|t| t.parse::<toml::Table>().ok())
            .and_then(|t| t.get("package")?.get("name")?.as_str().map(|n| n == name))
            .unwrap_or(false)
    })
}

/// Why `line` is not run, if it is one of [`NOT_RUN`].
pub(crate) fn not_run_reason(line: &str) -> Option<&'static str> {
    let cmd = line_command(line);
    NOT_RUN
        .iter()
        .find(|(p, _)| cmd.starts_with(p))
        .map(|(_, r)| *r)
}

/// The exit status a line's comment states (`# exit status N ...`).
pub(crate) fn line_exit_status(line: &str) -> Option<i32> {
    let comment = &line[line.find(" #")?..];
    let rest = &comment[comment.find("exit status ")? + "exit status ".len()..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// A synopsis line: options in brackets.
pub(crate) fn is_synopsis(line: &str) -> bool {
    line.contains(" [") && !line.contains("'[") && !line.contains("\"[")
}

/// A shell line as it runs in sandbox `sb`, with the environment it needs.
pub(crate) fn as_run(line: &str, sb: &Path) -> (String, Vec<(&'static str, &'static str)>) {
    let here = sb.display().to_string();
    let mut l = line
        .replace(" /tmp/", &format!(" {here}/tmp/"))
        .replace(" /shared/", &format!(" {here}/shared/"));
    for d in ["tmp", "shared"] {
        let _ = std::fs::create_dir_all(sb.join(d));
    }
    if l.contains("cosim sweep submit") {
        // No Slurm here: the scripts are written and printed, not submitted.
        l = match l.find(" #") {
            Some(i) => format!("{} --dry-run{}", &l[..i], &l[i..]),
            None => format!("{l} --dry-run"),
        };
    }
    let env = if l.contains("--shard auto") {
        vec![
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_MAX", "3"),
            ("JOB_COMPLETION_INDEX", "1"),
        ]
    } else {
        Vec::new()
    };
    (l, env)
}
