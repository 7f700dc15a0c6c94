//! Every code block of `README.md` and `docs/*.md` is an example that this
//! test runs or checks, so a doc example that stops working fails CI
//! (issue 43), and the docs link nowhere outside the repository.
//!
//! The blocks are found with a Markdown parser (`pulldown-cmark`: fenced
//! and indented blocks, with their line). What a block is and what it must
//! do comes from the Markdown: its language, and an optional comment on
//! the line before it (blank lines between allowed),
//! `<!-- example: PART, PART ... -->`, with the parts:
//!
//! - `exits N`: the block's command (or scenario) exits with status N
//!   (default 0);
//! - `not run: REASON`: not run (shell lines are still checked statically,
//!   below); a reason is required;
//! - `notation: WHAT`: not code and not a program's text: a formula, a
//!   diagram, a template of a format;
//! - `file NAME`: the block is written as `scenarios/NAME` of the doc's
//!   sandbox (input files, scenarios other blocks run);
//! - `fragment of PATH` / `fragment of the block above`: TOML and JSON:
//!   every key and value of the block is in PATH (parsed, recursively);
//!   other languages: every line of the block (trimmed, `...` lines left
//!   out) is in PATH (a file the block quotes, or a test asserting the
//!   lines);
//! - `appended to PATH`: a TOML block run as PATH with the block after it;
//! - `output of the command above` / ``output of `CMD` ``: the block is
//!   (part of) the output of the last command of the block above / of CMD
//!   run in the sandbox (stdout and stderr; `...` stands for any text, and
//!   the sandbox's directory in an absolute path shows as `.../`);
//! - ``after `CMD` ``: CMD runs first in the sandbox;
//! - `continues the block above`: Python: runs after the block above, in
//!   the same interpreter;
//! - `api of PATH`: Rust: every function called (`name(`, `::name(`,
//!   `.name(`) is a `fn` of the crate at PATH; `api of the Python
//!   package`: every `cosim.f(...)` signature is the package's.
//!
//! A block right after `<!-- generated:NAME -->` is written by a test
//! (`cosim_tests::check_doc_block`); this test checks that a test names it.
//!
//! Without a comment, by language: `toml`: a scenario (a `[sweep]` file:
//! a sweep), written into `scenarios/` of a sandbox (`sweeps/` for a sweep,
//! so `../fmus/dist/...` paths resolve as in the shipped scenarios) and run
//! (`cosim run`, `cosim sweep`); `json`, `yaml`: parsed (and the `cosim`
//! command lines inside a YAML file checked statically); `python`: run with
//! the project's Python (`cosim_tests::python()`) and the package built
//! from this tree (`cargo build -p cosim-py`, put beside the package's
//! Python sources on `PYTHONPATH`); `sh`, and unlabelled or indented blocks
//! whose every line is a command: each command line is checked statically
//! and run with `sh -c` in a fresh sandbox (`$ ` lines with output lines
//! after them: the output checked too). Any other block without a comment
//! (a `text` block, a `rust` block, ...) fails the test: a new block must
//! say what it is.
//!
//! Shell lines. A line's comment may state its exit status (`# exit status
//! 1 when ...`). Static check, every line: a `cosim` line names existing
//! subcommands and only options that their `--help` lists; a script or
//! file it runs exists; `cargo xtask T`: T is an xtask task; `cargo run -p
//! P [--example E]`, `cargo test -p P --test T`: P (E, T) exist. Run: the
//! `cosim` lines (with `cosim` on `PATH` the binary of this build), unless
//! their block is `not run`; a synopsis (`[--option]`) runs with every
//! option it shows, unless it has placeholders (`GLOBS`, `...`). Other
//! commands are not run, by class ([`NOT_RUN`]: builds, installs,
//! benchmarks, clusters), each with its reason. Running, `/tmp/` and
//! `/shared/` paths go into the sandbox, `sweep submit` gets `--dry-run`
//! (no Slurm here), and `--shard auto` runs as task 2 of a Slurm array of
//! 1-3.
//!
//! The sandbox: `fmus/dist` (the built FMUs, linked file by file), a copy of
//! `scenarios/`, links to the repository's `crates/`, `tests/`,
//! `examples/`, `bench/`, and the files the README's and docs' commands
//! name ([`template`]): `s.toml`, `scenario.toml` (B1 A), `Model.fmu` (the
//! kit's chassis, both interfaces), `in.csv`, `ref.csv` (B1's reference),
//! `out/` and `other/` (two runs of `s.toml`), `sweep.toml` and its shards
//! in `out/` and `out/sw/`, `system.ssp`, `SystemStructure.ssd`,
//! `OspSystemStructure.xml` and `path/to/osp-or-ssp-directory/`. Each
//! block (each shell line) runs in its own copy.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use pulldown_cmark::{CodeBlockKind, Event, LinkType, Parser, Tag, TagEnd};

use cosim_tests::{cosim_bin, fmus, python, root};

// ---------------------------------------------------------------------------
// The blocks

/// One code block of a Markdown file.
#[derive(Debug, Clone)]
struct Block {
    /// The file, relative to the repository root.
    file: String,
    /// The line of its opening fence (or first line).
    line: usize,
    /// The info string's first word (empty for unlabelled and indented).
    lang: String,
    indented: bool,
    text: String,
    /// The comment on the line before it, if any.
    note: Note,
}

impl Block {
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Note {
    None,
    /// `<!-- example: ... -->`: the parts.
    Example(Vec<String>),
    /// `<!-- generated:NAME -->`.
    Generated(String),
}

/// README.md and docs/*.md.
fn doc_files() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Splits `s` at `, ` outside backticks.
fn split_parts(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let (mut cur, mut quoted) = (String::new(), false);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '`' {
            quoted = !quoted;
        }
        if c == ',' && !quoted && chars.peek() == Some(&' ') {
            parts.push(cur.trim().to_string());
            cur.clear();
            continue;
        }
        cur.push(c);
    }
    parts.push(cur.trim().to_string());
    parts.retain(|p| !p.is_empty());
    parts
}

fn parse_note(line: &str) -> Note {
    let l = line.trim();
    let Some(inner) = l
        .strip_prefix("<!--")
        .and_then(|l| l.strip_suffix("-->"))
        .map(str::trim)
    else {
        return Note::None;
    };
    if let Some(rest) = inner.strip_prefix("example:") {
        Note::Example(split_parts(rest.trim()))
    } else if let Some(name) = inner.strip_prefix("generated:") {
        Note::Generated(name.trim().to_string())
    } else {
        Note::None
    }
}

/// The code blocks of `path`, in order.
fn blocks(path: &Path) -> Vec<Block> {
    let name = relative(path);
    let source = std::fs::read_to_string(path).unwrap();
    let line_of = |offset: usize| source[..offset].matches('\n').count() + 1;
    let lines: Vec<&str> = source.lines().collect();
    let mut out = Vec::new();
    let mut current: Option<Block> = None;
    for (event, range) in Parser::new(&source).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let line = line_of(range.start);
                let (lang, indented) = match kind {
                    CodeBlockKind::Fenced(info) => (
                        info.split_whitespace().next().unwrap_or("").to_string(),
                        false,
                    ),
                    CodeBlockKind::Indented => (String::new(), true),
                };
                let note = lines[..line - 1]
                    .iter()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map_or(Note::None, |l| parse_note(l));
                current = Some(Block {
                    file: name.clone(),
                    line,
                    lang,
                    indented,
                    text: String::new(),
                    note,
                });
            }
            Event::Text(t) => {
                if let Some(b) = current.as_mut() {
                    b.text.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => out.extend(current.take()),
            _ => {}
        }
    }
    out
}

// ---------------------------------------------------------------------------
// The sandbox

/// Copies `src` into `dst` (directories recursively, symbolic links as
/// links), leaving out `out/` directories of `scenarios/`.
fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let (from, to) = (e.path(), dst.join(e.file_name()));
        let ty = e.file_type().unwrap();
        if ty.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from).unwrap(), &to).unwrap();
        } else if ty.is_dir() {
            copy_tree(&from, &to);
        } else {
            std::fs::copy(&from, &to).unwrap();
        }
    }
}

/// `dst` with the directories of `src` and a link to each of its files.
fn link_files(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            link_files(&e.path(), &dst.join(e.file_name()));
        } else {
            std::os::unix::fs::symlink(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
}

/// A directory with `cosim` in it (a link to this build's binary), for
/// `PATH`.
fn bin_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(cosim_bin(), d.path().join("cosim")).unwrap();
        d
    })
    .path()
}

/// `sh -c line` in `dir`, with `cosim` on the `PATH`; killed after
/// `limit`.
fn sh(dir: &Path, line: &str, env: &[(&str, &str)], limit: Duration) -> Output {
    let path = format!(
        "{}:{}",
        bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env("PATH", path)
        .env("USER", "u")
        .env_remove("COSIM_LOG")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    // Drained while it runs (a full pipe would stop it).
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let mut killed = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            // The shell and whatever it started: its process group.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            killed = true;
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut out = Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    if killed {
        out.stderr
            .extend_from_slice(format!("\n[killed after {limit:?}]").as_bytes());
    }
    out
}

fn text_of(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `line` in `dir` and requires exit status `code`; returns the output.
fn must(dir: &Path, line: &str, code: i32) -> Result<String, String> {
    let out = sh(dir, line, &[], Duration::from_secs(60));
    let text = text_of(&out);
    if out.status.code() == Some(code) {
        Ok(text)
    } else {
        Err(format!(
            "`{line}` exited with {:?}, not {code}:\n{}",
            out.status.code(),
            tail(&text)
        ))
    }
}

/// The last 40 lines of `text`.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// The sandbox every block starts from (made once).
fn template() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        let sb = d.path();
        let root = root();
        // fmus/dist: its directories, with links to its files (a run of an
        // FMU writes out/ beside it: into the sandbox, not the build).
        link_files(&fmus(), &sb.join("fmus/dist"));
        copy_tree(&root.join("scenarios"), &sb.join("scenarios"));
        let _ = std::fs::remove_dir_all(sb.join("scenarios/out"));
        for dir in ["crates", "tests", "examples", "bench", "fuzz", "xtask"] {
            std::os::unix::fs::symlink(root.join(dir), sb.join(dir)).unwrap();
        }
        // B1 reticulation A, from the sandbox's root.
        let b1 = std::fs::read_to_string(root.join("scenarios/b1_quarter_car_a.toml"))
            .unwrap()
            .replace("../fmus/dist", "fmus/dist");
        for name in ["s.toml", "scenario.toml"] {
            std::fs::write(sb.join(name), &b1).unwrap();
        }
        std::os::unix::fs::symlink(
            "fmus/dist/fmi2/QuarterCarChassis.fmu",
            sb.join("Model.fmu"),
        )
        .unwrap();
        std::fs::write(sb.join("in.csv"), "time,F\n0,0\n1,100\n").unwrap();
        std::fs::copy(fmus().join("references/b1_linear.csv"), sb.join("ref.csv")).unwrap();
        // A sweep file: the cluster sweep (6 runs, about a second), from the
        // root.
        let sweep = std::fs::read_to_string(root.join("scenarios/sweeps/b1_a_cluster.toml"))
            .unwrap()
            .replace("\"../../", "\"")
            .replace("\"../", "\"scenarios/");
        std::fs::write(sb.join("sweep.toml"), sweep).unwrap();
        // SSP and OSP files.
        let data = root.join("crates/cosim-ssp/tests/data");
        let ssd = std::fs::read_to_string(data.join("quarter_car.ssd")).unwrap();
        std::fs::write(
            sb.join("SystemStructure.ssd"),
            ssd.replace("../../../../fmus/dist/", "fmus/dist/"),
        )
        .unwrap();
        std::fs::copy(data.join("wheel.ssv"), sb.join("wheel.ssv")).unwrap();
        write_ssp(&sb.join("system.ssp"), &ssd, &data.join("wheel.ssv"));
        let osp = std::fs::read_to_string(data.join("osp_b1_ecco/OspSystemStructure.xml"))
            .unwrap();
        let osp_here = osp.replace("../../../../../fmus/dist/", "fmus/dist/");
        assert_ne!(osp, osp_here, "osp_b1_ecco names its FMUs another way");
        std::fs::write(sb.join("OspSystemStructure.xml"), &osp_here).unwrap();
        std::fs::create_dir_all(sb.join("path/to/osp-or-ssp-directory")).unwrap();
        std::fs::write(
            sb.join("path/to/osp-or-ssp-directory/OspSystemStructure.xml"),
            osp.replace("../../../../../fmus/dist/", "../../../fmus/dist/"),
        )
        .unwrap();
        // Outputs that commands read.
        for (line, what) in [
            ("cosim run s.toml --out out --no-progress", "out/"),
            (
                "cosim run s.toml --out other --set chassis.m_c=500 --no-progress",
                "other/",
            ),
            (
                "cosim sweep sweep.toml --shard 1/2 --out out --no-progress && cosim sweep sweep.toml --shard 2/2 --out out --no-progress",
                "out/summary.shard-*",
            ),
            (
                "for k in 1 2 3; do cosim sweep sweep.toml --shard $k/3 --out out/sw --no-progress || exit 1; done",
                "out/sw/",
            ),
        ] {
            let out = sh(sb, line, &[], Duration::from_secs(120));
            assert!(
                out.status.success() || out.status.code() == Some(1),
                "making the sandbox's {what}: `{line}`: {:?}\n{}",
                out.status.code(),
                text_of(&out)
            );
        }
        d
    })
    .path()
}

/// The quarter car of `quarter_car.ssd` as an `.ssp` package.
fn write_ssp(path: &Path, ssd: &str, ssv: &Path) {
    let ssd = ssd
        .replace("../../../../fmus/dist/fmi2/", "resources/")
        .replace("source=\"wheel.ssv\"", "source=\"resources/wheel.ssv\"");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("SystemStructure.ssd", opts).unwrap();
    zip.write_all(ssd.as_bytes()).unwrap();
    zip.start_file("resources/wheel.ssv", opts).unwrap();
    zip.write_all(&std::fs::read(ssv).unwrap()).unwrap();
    for m in ["QuarterCarChassis", "QuarterCarWheelSuspension"] {
        zip.start_file(format!("resources/{m}.fmu"), opts).unwrap();
        zip.write_all(&std::fs::read(fmus().join(format!("fmi2/{m}.fmu"))).unwrap())
            .unwrap();
    }
    zip.finish().unwrap();
}

/// A fresh copy of the template, with the doc's `file` blocks in
/// `scenarios/`.
fn sandbox(files: &[(String, String)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    copy_tree(template(), d.path());
    for (name, text) in files {
        let p = d.path().join("scenarios").join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    d
}

// ---------------------------------------------------------------------------
// Shell lines

/// Commands other than `cosim` that the test does not run, with the
/// reason; each is still checked statically ([`static_check`]).
const NOT_RUN: &[(&str, &str)] = &[
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
fn shell_lines(text: &str) -> Vec<(String, Vec<String>)> {
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
fn words(line: &str) -> Vec<String> {
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
fn is_command(line: &str) -> bool {
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

fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_')
    })
}

/// `line` without leading `VAR=value` assignments.
fn line_command(line: &str) -> String {
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
fn cosim_help(sub: &[String]) -> Result<String, String> {
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
fn check_cosim_words(args: &[String]) -> Result<(), String> {
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
fn static_check(line: &str) -> Result<(), String> {
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
fn package_dir(name: &str) -> Option<PathBuf> {
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
fn not_run_reason(line: &str) -> Option<&'static str> {
    let cmd = line_command(line);
    NOT_RUN
        .iter()
        .find(|(p, _)| cmd.starts_with(p))
        .map(|(_, r)| *r)
}

/// The exit status a line's comment states (`# exit status N ...`).
fn line_exit_status(line: &str) -> Option<i32> {
    let comment = &line[line.find(" #")?..];
    let rest = &comment[comment.find("exit status ")? + "exit status ".len()..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// A synopsis line: options in brackets.
fn is_synopsis(line: &str) -> bool {
    line.contains(" [") && !line.contains("'[") && !line.contains("\"[")
}

/// A shell line as it runs in sandbox `sb`, with the environment it needs.
fn as_run(line: &str, sb: &Path) -> (String, Vec<(&'static str, &'static str)>) {
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

// ---------------------------------------------------------------------------
// Matching quoted output

/// Whether `pattern` (a block's text; `...` stands for any text) occurs in
/// `text`, beginning at a line start and ending at a line end.
fn quoted_in(pattern: &str, text: &str) -> bool {
    let pattern = pattern.trim_end_matches('\n');
    let pieces: Vec<&str> = pattern.split("...").collect();
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    'start: for &s in &starts {
        if !text[s..].starts_with(pieces[0]) {
            continue;
        }
        let mut at = s + pieces[0].len();
        for (k, piece) in pieces.iter().enumerate().skip(1) {
            let last = k == pieces.len() - 1;
            if last {
                // The last piece ends at a line end: any occurrence.
                let mut from = at;
                while let Some(i) = text[from..].find(piece) {
                    let end = from + i + piece.len();
                    if end == text.len() || text[end..].starts_with('\n') {
                        return true;
                    }
                    from += i + 1;
                }
                continue 'start;
            }
            match text[at..].find(piece) {
                Some(i) => at += i + piece.len(),
                None => continue 'start,
            }
        }
        if pieces.len() == 1 && (at == text.len() || text[at..].starts_with('\n')) {
            return true;
        }
    }
    false
}

// ---------------------------------------------------------------------------
// Fragments

/// Whether every key and value of `part` is in `whole`.
fn toml_within(part: &toml::Value, whole: &toml::Value) -> bool {
    use toml::Value;
    match (part, whole) {
        (Value::Table(p), Value::Table(w)) => p
            .iter()
            .all(|(k, v)| w.get(k).is_some_and(|wv| toml_within(v, wv))),
        (Value::Array(p), Value::Array(w)) => {
            // An array of tables: each of the part's in the whole's.
            if p.iter().all(Value::is_table) {
                p.iter().all(|pv| w.iter().any(|wv| toml_within(pv, wv)))
            } else {
                p == w
            }
        }
        (p, w) => p == w,
    }
}

fn json_within(part: &serde_json::Value, whole: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (part, whole) {
        (Value::Object(p), Value::Object(w)) => p
            .iter()
            .all(|(k, v)| w.get(k).is_some_and(|wv| json_within(v, wv))),
        (Value::Array(p), Value::Array(w)) => {
            p.len() == w.len() && p.iter().zip(w).all(|(a, b)| json_within(a, b))
        }
        (p, w) => p == w,
    }
}

/// Every line of `part` (trimmed; without `...` lines and `<!-- -->`
/// comments) is in `whole` (as a line of a file, or in a line of a test
/// that asserts it).
fn lines_within(part: &str, whole: &str) -> Result<(), String> {
    for l in part.lines() {
        let l = match l.find("<!--") {
            Some(i) => &l[..i],
            None => l,
        }
        .trim();
        if l.is_empty() || l == "..." {
            continue;
        }
        if !whole.contains(l) {
            return Err(format!("the line {l:?} is not there"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Checking one doc

/// How a block was checked, for the summary.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum How {
    Ran,
    Output,
    Fragment,
    File,
    Parsed,
    Api,
    Generated,
    Notation,
    NotRun,
}

struct Doc {
    blocks: Vec<Block>,
    /// `file NAME` blocks.
    files: Vec<(String, String)>,
}

#[derive(Default)]
struct Report {
    failures: Vec<String>,
    counts: BTreeMap<(String, How), usize>,
    not_run: Vec<String>,
    lines_run: usize,
    lines_static: usize,
    /// How long the doc took (and which).
    slowest: Option<(Duration, Option<String>)>,
}

/// The parts of a block's `example:` comment.
struct Parts {
    exits: i32,
    not_run: Option<String>,
    notation: bool,
    file: Option<String>,
    fragment_of: Option<String>,
    appended_to: Option<String>,
    output_of: Option<String>,
    after: Vec<String>,
    continues: bool,
    api_of: Option<String>,
}

fn backticked(s: &str) -> Option<String> {
    let s = s.trim();
    s.strip_prefix('`')?.strip_suffix('`').map(str::to_string)
}

fn parts(b: &Block) -> Result<Parts, String> {
    let mut p = Parts {
        exits: 0,
        not_run: None,
        notation: false,
        file: None,
        fragment_of: None,
        appended_to: None,
        output_of: None,
        after: Vec::new(),
        continues: false,
        api_of: None,
    };
    let Note::Example(list) = &b.note else {
        return Ok(p);
    };
    for (i, part) in list.iter().enumerate() {
        if let Some(r) = part.strip_prefix("not run:") {
            // The reason is the rest of the comment.
            let r = [&[r.trim().to_string()][..], &list[i + 1..]]
                .concat()
                .join(", ");
            if r.trim().is_empty() {
                return Err("`not run:` without a reason".into());
            }
            p.not_run = Some(r);
            break;
        }
        if part.starts_with("notation") {
            p.notation = true;
            break;
        }
        if let Some(n) = part.strip_prefix("exits ") {
            p.exits = n
                .trim()
                .parse()
                .map_err(|_| format!("`{part}`: not a status"))?;
        } else if let Some(f) = part.strip_prefix("file ") {
            p.file = Some(f.trim().to_string());
        } else if let Some(f) = part.strip_prefix("fragment of ") {
            p.fragment_of = Some(f.trim().to_string());
        } else if let Some(f) = part.strip_prefix("appended to ") {
            p.appended_to = Some(f.trim().to_string());
        } else if part == "output of the command above" {
            p.output_of = Some(String::new());
        } else if let Some(c) = part.strip_prefix("output of ") {
            p.output_of =
                Some(backticked(c).ok_or_else(|| format!("`{part}`: the command in backticks"))?);
        } else if let Some(c) = part.strip_prefix("after ") {
            p.after
                .push(backticked(c).ok_or_else(|| format!("`{part}`: the command in backticks"))?);
        } else if part == "continues the block above" {
            p.continues = true;
        } else if let Some(f) = part.strip_prefix("api of ") {
            p.api_of = Some(f.trim().to_string());
        } else {
            return Err(format!(
                "unknown part `{part}` in the block's example comment"
            ));
        }
    }
    Ok(p)
}

/// Checks every block of one file.
fn check_doc(doc: &Doc, report: &mut Report) {
    let mut last_output: Option<String> = None;
    let mut python_chain: Vec<&Block> = Vec::new();
    for (i, b) in doc.blocks.iter().enumerate() {
        let above = i.checked_sub(1).map(|k| &doc.blocks[k]);
        let result = check_block(doc, b, above, &mut last_output, &mut python_chain, report);
        let lang = if b.lang.is_empty() {
            if b.indented {
                "(indented)"
            } else {
                "(unlabelled)"
            }
            .to_string()
        } else {
            b.lang.clone()
        };
        match result {
            Ok(how) => {
                if how == How::NotRun {
                    let why = parts(b)
                        .ok()
                        .and_then(|p| p.not_run)
                        .or_else(|| {
                            shell_lines(&b.text)
                                .iter()
                                .find_map(|(l, _)| not_run_reason(l))
                                .map(str::to_string)
                        })
                        .unwrap_or_default();
                    report.not_run.push(format!("{} ({why})", b.at()));
                }
                *report.counts.entry((lang, how)).or_default() += 1;
            }
            Err(e) => report.failures.push(format!("{}: {e}", b.at())),
        }
    }
}

fn check_block<'a>(
    doc: &Doc,
    b: &'a Block,
    above: Option<&Block>,
    last_output: &mut Option<String>,
    python_chain: &mut Vec<&'a Block>,
    report: &mut Report,
) -> Result<How, String> {
    if let Note::Generated(name) = &b.note {
        return generated_block(name);
    }
    let p = parts(b)?;
    if p.notation {
        return Ok(How::Notation);
    }
    if p.file.is_some() {
        return Ok(How::File);
    }
    // Not run: shell lines are still checked statically (below).
    if p.not_run.is_some() && !(matches!(b.lang.as_str(), "sh" | "") && is_shell(b)) {
        return Ok(How::NotRun);
    }
    if let Some(path) = &p.fragment_of {
        fragment(b, path, above)?;
        return Ok(How::Fragment);
    }
    if let Some(cmd) = &p.output_of {
        let output = if cmd.is_empty() {
            last_output
                .clone()
                .ok_or("`output of the command above`: no command ran in the block above")?
        } else {
            let sb = sandbox(&doc.files);
            for a in &p.after {
                must(sb.path(), a, 0)?;
            }
            // As written (no Slurm variables: the command's own output).
            let (line, _) = as_run(cmd, sb.path());
            let out = sh(sb.path(), &line, &[], Duration::from_secs(60));
            if out.status.code() != Some(p.exits) {
                return Err(format!(
                    "`{cmd}` exited with {:?}, not {}:\n{}",
                    out.status.code(),
                    p.exits,
                    tail(&text_of(&out))
                ));
            }
            unsandboxed(&text_of(&out), sb.path())
        };
        if !quoted_in(&b.text, &output) {
            return Err(format!(
                "the block is not what the program prints; it printed:\n{}",
                tail(&output)
            ));
        }
        return Ok(How::Output);
    }
    match b.lang.as_str() {
        "toml" => toml_block(doc, b, &p, report),
        "json" => {
            serde_json::from_str::<serde_json::Value>(&b.text)
                .map_err(|e| format!("invalid JSON: {e}"))?;
            Ok(How::Parsed)
        }
        "yaml" => yaml_block(b, report),
        "python" => python_block(doc, b, &p, python_chain),
        "rust" => match &p.api_of {
            Some(dir) => {
                rust_api(b, dir)?;
                Ok(How::Api)
            }
            None => Err("a rust block needs `api of PATH` (or another classification)".into()),
        },
        "sh" | "" if is_shell(b) => shell_block(doc, b, &p, last_output, report),
        _ => Err(format!(
            "a {} block without a classification: say what it is with \
             `<!-- example: ... -->` on the line before it (see tests/tests/doc_examples.rs)",
            if b.lang.is_empty() { "code" } else { &b.lang }
        )),
    }
}

/// `text` with the sandbox's directory shown as `.../` (the docs write
/// `.../out` where the program prints an absolute path).
fn unsandboxed(text: &str, sb: &Path) -> String {
    text.replace(&format!("{}/", sb.display()), ".../")
}

fn is_shell(b: &Block) -> bool {
    b.lang == "sh" || shell_lines(&b.text).iter().all(|(l, _)| is_command(l))
}

fn generated_block(name: &str) -> Result<How, String> {
    // A test of tests/ or crates/ names the block (check_doc_block).
    let needle = format!("\"{name}\"");
    let found = ["tests", "crates"]
        .iter()
        .any(|d| rust_sources_contain(&root().join(d), &needle));
    if found {
        Ok(How::Generated)
    } else {
        Err(format!(
            "generated block '{name}': no test names it (check_doc_block(.., \"{name}\", ..))"
        ))
    }
}

fn rust_sources_contain(dir: &Path, needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            p.file_name().is_none_or(|n| n != "target") && rust_sources_contain(&p, needle)
        } else {
            p.extension().is_some_and(|x| x == "rs")
                && std::fs::read_to_string(&p).is_ok_and(|t| t.contains(needle))
        }
    })
}

fn fragment(b: &Block, path: &str, above: Option<&Block>) -> Result<(), String> {
    let whole = if path == "the block above" {
        above.ok_or("no block above")?.text.clone()
    } else {
        std::fs::read_to_string(root().join(path)).map_err(|e| format!("{path}: {e}"))?
    };
    match b.lang.as_str() {
        "toml" => {
            let part: toml::Value =
                toml::from_str(&b.text).map_err(|e| format!("invalid TOML: {e}"))?;
            let whole: toml::Value =
                toml::from_str(&whole).map_err(|e| format!("{path}: invalid TOML: {e}"))?;
            if toml_within(&part, &whole) {
                Ok(())
            } else {
                Err(format!(
                    "the block is not a fragment of {path}: a key or value differs"
                ))
            }
        }
        "json" => {
            let part: serde_json::Value =
                serde_json::from_str(&b.text).map_err(|e| format!("invalid JSON: {e}"))?;
            let whole: serde_json::Value =
                serde_json::from_str(&whole).map_err(|e| format!("{path}: invalid JSON: {e}"))?;
            if json_within(&part, &whole) {
                Ok(())
            } else {
                Err(format!(
                    "the block is not a fragment of {path}: a key or value differs"
                ))
            }
        }
        _ => lines_within(&b.text, &whole).map_err(|e| format!("not a fragment of {path}: {e}")),
    }
}

fn toml_block(doc: &Doc, b: &Block, p: &Parts, report: &mut Report) -> Result<How, String> {
    let mut text = b.text.clone();
    if let Some(base) = &p.appended_to {
        let base =
            std::fs::read_to_string(root().join(base)).map_err(|e| format!("{base}: {e}"))?;
        text = format!("{base}\n{text}");
    }
    let parsed: toml::Table = text.parse().map_err(|e| format!("invalid TOML: {e}"))?;
    if let Some(r) = &p.not_run {
        let _ = r;
        return Ok(How::NotRun);
    }
    let sb = sandbox(&doc.files);
    for a in &p.after {
        must(sb.path(), a, 0)?;
    }
    let stem = format!("doc_{}_{}", b.file.replace(['/', '.', '-'], "_"), b.line);
    let (file, cmd) = if parsed.contains_key("sweep") {
        (
            format!("scenarios/sweeps/{stem}.toml"),
            format!("cosim sweep --no-progress scenarios/sweeps/{stem}.toml"),
        )
    } else {
        (
            format!("scenarios/{stem}.toml"),
            format!("cosim run --no-progress scenarios/{stem}.toml"),
        )
    };
    std::fs::write(sb.path().join(&file), &text).unwrap();
    report.lines_run += 1;
    must(sb.path(), &cmd, p.exits).map_err(|e| format!("the scenario of the block: {e}"))?;
    Ok(How::Ran)
}

fn yaml_block(b: &Block, report: &mut Report) -> Result<How, String> {
    let docs =
        yaml_rust2::YamlLoader::load_from_str(&b.text).map_err(|e| format!("invalid YAML: {e}"))?;
    // The cosim command lines inside (strings), checked statically.
    fn strings(y: &yaml_rust2::Yaml, out: &mut Vec<String>) {
        match y {
            yaml_rust2::Yaml::String(s) => out.push(s.clone()),
            yaml_rust2::Yaml::Array(a) => a.iter().for_each(|v| strings(v, out)),
            yaml_rust2::Yaml::Hash(h) => h.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    docs.iter().for_each(|d| strings(d, &mut all));
    let mut n = 0;
    for s in all {
        for cmd in s.split("&&").flat_map(|c| c.split("||")) {
            let cmd = cmd.trim();
            let w = words(cmd);
            if w.first()
                .is_some_and(|f| f == "cosim" || f.ends_with("/cosim"))
            {
                static_check(cmd)?;
                n += 1;
            }
        }
    }
    if n == 0 {
        return Err("a YAML block without a cosim command".into());
    }
    report.lines_static += n;
    Ok(How::Parsed)
}

fn shell_block(
    doc: &Doc,
    b: &Block,
    p: &Parts,
    last_output: &mut Option<String>,
    report: &mut Report,
) -> Result<How, String> {
    let lines = shell_lines(&b.text);
    if lines.is_empty() {
        return Err("an empty shell block".into());
    }
    let mut ran = 0;
    for (line, expected) in &lines {
        static_check(line).map_err(|e| format!("`{line}`: {e}"))?;
        report.lines_static += 1;
        if p.not_run.is_some() || not_run_reason(line).is_some() {
            continue;
        }
        // A synopsis runs with every option it shows, unless it has
        // placeholders (`GLOBS`, `more.csv ...`).
        let line = &if is_synopsis(line) {
            let all = line.replace(['[', ']'], "");
            let placeholder = all.contains("...")
                || words(&all)
                    .iter()
                    .any(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase()));
            if placeholder {
                continue;
            }
            all
        } else {
            line.clone()
        };
        let sb = sandbox(&doc.files);
        for a in &p.after {
            must(sb.path(), a, 0)?;
        }
        let (run, env) = as_run(line, sb.path());
        let out = sh(sb.path(), &run, &env, Duration::from_secs(60));
        let text = unsandboxed(&text_of(&out), sb.path());
        let code = line_exit_status(line).unwrap_or(p.exits);
        if out.status.code() != Some(code) {
            return Err(format!(
                "`{line}` exited with {:?}, not {code}:\n{}",
                out.status.code(),
                tail(&text)
            ));
        }
        if !expected.is_empty() {
            let want = expected.join("\n");
            if !quoted_in(&want, &text) {
                return Err(format!(
                    "`{line}` does not print what the block shows; it printed:\n{}",
                    tail(&text)
                ));
            }
        }
        *last_output = Some(text);
        ran += 1;
        report.lines_run += 1;
    }
    Ok(if ran > 0 { How::Ran } else { How::NotRun })
}

// ---------------------------------------------------------------------------
// Python

/// A directory holding the package `cosim` of this tree: its Python
/// sources and the extension built by cargo in this profile.
fn python_package() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(other) => other.to_string(),
        };
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "cosim-py", "--profile", &profile])
            .current_dir(root())
            .status()
            .unwrap();
        assert!(status.success(), "cargo build -p cosim-py failed");
        let d = tempfile::tempdir().unwrap();
        let pkg = d.path().join("cosim");
        copy_tree(&root().join("crates/cosim-py/python/cosim"), &pkg);
        std::fs::copy(profile_dir.join("lib_cosim.so"), pkg.join("_cosim.abi3.so")).unwrap();
        d
    })
    .path()
}

fn run_python(dir: &Path, code: &str, args: &[&str]) -> Output {
    let script = dir.join("doc_example.py");
    std::fs::write(&script, code).unwrap();
    Command::new(python())
        .arg(&script)
        .args(args)
        .current_dir(dir)
        .env("PYTHONPATH", python_package())
        .env("MPLBACKEND", "Agg")
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin_dir().display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn python_block<'a>(
    doc: &Doc,
    b: &'a Block,
    p: &Parts,
    chain: &mut Vec<&'a Block>,
) -> Result<How, String> {
    if p.api_of.as_deref() == Some("the Python package") {
        python_api(b)?;
        return Ok(How::Api);
    }
    if !p.continues {
        chain.clear();
    }
    chain.push(b);
    if p.not_run.is_some() {
        return Ok(How::NotRun);
    }
    let code: String = chain
        .iter()
        .map(|b| format!("# {}\n{}\n", b.at(), b.text))
        .collect();
    let sb = sandbox(&doc.files);
    let out = run_python(sb.path(), &code, &[]);
    if out.status.code() != Some(p.exits) {
        return Err(format!(
            "the Python example exited with {:?}, not {}:\n{}",
            out.status.code(),
            p.exits,
            tail(&text_of(&out))
        ));
    }
    Ok(How::Ran)
}

/// The signatures `cosim.f(...)` listed in the block are the package's.
fn python_api(b: &Block) -> Result<(), String> {
    const CHECK: &str = r##"
import inspect, re, sys
import cosim
text = re.sub(r"#[^\n]*", "", open(sys.argv[1]).read())
calls = re.findall(r"cosim\.(\w+)\(([^()]*)\)", text)
if not calls:
    sys.exit("no cosim.f(...) in the block")
bad = []
for name, args in calls:
    ns = {}
    exec("def stub(" + " ".join(args.split()) + "): pass", ns)
    want = [(p.name, p.kind, p.default) for p in inspect.signature(ns["stub"]).parameters.values()]
    have = [(p.name, p.kind, p.default) for p in inspect.signature(getattr(cosim, name)).parameters.values()]
    if want != have:
        bad.append(f"cosim.{name}: the docs say {want}, the package has {have}")
if bad:
    sys.exit("\n".join(bad))
"##;
    let dir = tempfile::tempdir().unwrap();
    let block = dir.path().join("block.py");
    std::fs::write(&block, &b.text).unwrap();
    let out = run_python(dir.path(), CHECK, &[block.to_str().unwrap()]);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("the Python API differs:\n{}", text_of(&out)))
    }
}

// ---------------------------------------------------------------------------
// Rust API outlines

fn rust_api(b: &Block, dir: &str) -> Result<(), String> {
    let src = root().join(dir).join("src");
    let mut sources = String::new();
    fn read_all(d: &Path, into: &mut String) {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                read_all(&p, into);
            } else if p.extension().is_some_and(|x| x == "rs") {
                into.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    read_all(&src, &mut sources);
    if sources.is_empty() {
        return Err(format!("{dir}/src has no Rust sources"));
    }
    let code: String = b
        .text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = Vec::new();
    let bytes = code.as_bytes();
    for (i, _) in code.match_indices('(') {
        let start = code[..i]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |k| k + 1);
        let name = &code[start..i];
        let called = start > 0 && (bytes[start - 1] == b'.' || bytes[start - 1] == b':');
        if called && !name.is_empty() && name.chars().next().is_some_and(|c| c.is_lowercase()) {
            names.push(name.to_string());
        }
    }
    let std_names = ["unwrap", "ok", "var", "parse", "default"];
    let missing: Vec<String> = names
        .into_iter()
        .filter(|n| !std_names.contains(&n.as_str()))
        .filter(|n| {
            !sources.contains(&format!("fn {n}(")) && !sources.contains(&format!("fn {n}<"))
        })
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("{dir} has no fn {}", missing.join(", fn ")))
    }
}

// ---------------------------------------------------------------------------
// The tests

/// Every code block of README.md and docs/*.md runs (or is checked) as its
/// text says.
#[test]
fn every_example_of_the_docs_runs_as_the_text_says() {
    let started = Instant::now();
    let docs: Vec<Doc> = doc_files()
        .iter()
        .map(|f| {
            let blocks = blocks(f);
            let files = blocks
                .iter()
                .filter_map(|b| {
                    let p = parts(b).ok()?;
                    Some((p.file?, b.text.clone()))
                })
                .collect();
            Doc { blocks, files }
        })
        .collect();
    assert!(
        docs.iter().map(|d| d.blocks.len()).sum::<usize>() > 100,
        "the docs' code blocks were not found"
    );
    template();
    python_package();
    let prepared = started.elapsed();
    let reports: Vec<Report> = std::thread::scope(|s| {
        let handles: Vec<_> = docs
            .iter()
            .map(|d| {
                s.spawn(move || {
                    let mut r = Report::default();
                    let t = Instant::now();
                    check_doc(d, &mut r);
                    r.slowest = Some((t.elapsed(), d.blocks.first().map(|b| b.file.clone())));
                    r
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = Report::default();
    let mut times: Vec<(Duration, String)> = reports
        .iter()
        .filter_map(|r| r.slowest.clone())
        .filter_map(|(t, f)| Some((t, f?)))
        .collect();
    times.sort();
    for r in reports {
        all.failures.extend(r.failures);
        for (k, v) in r.counts {
            *all.counts.entry(k).or_default() += v;
        }
        all.not_run.extend(r.not_run);
        all.lines_run += r.lines_run;
        all.lines_static += r.lines_static;
    }
    eprintln!(
        "doc examples ({:.1} s; sandbox and package {:.1} s; slowest: {}):",
        started.elapsed().as_secs_f64(),
        prepared.as_secs_f64(),
        times
            .iter()
            .rev()
            .take(3)
            .map(|(t, f)| format!("{f} {:.1} s", t.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for ((lang, how), n) in &all.counts {
        eprintln!("  {n:3} {lang} {how:?}");
    }
    eprintln!(
        "  {} commands run, {} shell lines checked statically; {} blocks not run:\n    {}",
        all.lines_run,
        all.lines_static,
        all.not_run.len(),
        all.not_run.join("\n    ")
    );
    assert!(
        all.failures.is_empty(),
        "{} doc example(s) fail:\n\n{}",
        all.failures.len(),
        all.failures.join("\n\n")
    );
}

// ---------------------------------------------------------------------------
// Links

/// A link target that leaves the repository, if `target` (a link of
/// `file`) does: a relative path resolving outside the root, or one naming
/// the steering folder `shared/` beside the checkout.
fn outside(file: &Path, target: &str) -> Option<String> {
    let t = target.trim();
    if t.contains("://") || t.starts_with("mailto:") || t.starts_with('#') {
        return None;
    }
    let path = t.split('#').next().unwrap_or(t);
    if path.contains("../shared") || path.starts_with('/') {
        return Some(format!("{t} (outside the repository)"));
    }
    let mut depth: Vec<String> = file
        .parent()
        .unwrap()
        .strip_prefix(root())
        .unwrap()
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    for c in Path::new(path).components() {
        match c {
            Component::ParentDir if depth.pop().is_none() => {
                return Some(format!("{t} (climbs out of the repository)"));
            }
            Component::Normal(n) => depth.push(n.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    let resolved = root().join(depth.join("/"));
    if !resolved.exists() {
        return Some(format!("{t} (no such file in the repository)"));
    }
    None
}

/// README.md and docs/*.md point at nothing outside the repository: no
/// Markdown link or image whose relative path leaves the root (or does not
/// exist), and no mention of `../shared/` (the steering folder beside a
/// checkout, which a clone does not have), in links or in text.
#[test]
fn the_docs_link_nowhere_outside_the_repository() {
    let mut bad = Vec::new();
    for f in doc_files() {
        let source = std::fs::read_to_string(&f).unwrap();
        let line_of = |offset: usize| source[..offset].matches('\n').count() + 1;
        for (event, range) in Parser::new(&source).into_offset_iter() {
            let target = match event {
                Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    ..
                }) if link_type != LinkType::Email => dest_url.to_string(),
                Event::Start(Tag::Image { dest_url, .. }) => dest_url.to_string(),
                _ => continue,
            };
            if let Some(why) = outside(&f, &target) {
                bad.push(format!(
                    "{}:{}: link {why}",
                    relative(&f),
                    line_of(range.start)
                ));
            }
        }
        for (n, line) in source.lines().enumerate() {
            for word in ["../shared/", "shared/ALGORITHMS.md", "shared/BENCHMARKS.md"] {
                if line.contains(word) {
                    bad.push(format!(
                        "{}:{}: names {word}, outside the repository: {line}",
                        relative(&f),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "the docs point outside the repository:\n{}",
        bad.join("\n")
    );
}

/// The link check fails on what it must refuse.
#[test]
fn the_link_check_refuses_paths_out_of_the_repository() {
    let doc = root().join("docs/scenario.md");
    let readme = root().join("README.md");
    assert!(outside(&doc, "../shared/ALGORITHMS.md").is_some());
    assert!(outside(&readme, "../shared/BENCHMARKS.md").is_some());
    assert!(outside(&doc, "../../x.md").is_some());
    assert!(outside(&doc, "/etc/passwd").is_some());
    assert!(outside(&doc, "no-such-file.md").is_some());
    assert!(outside(&doc, "../fmus/README.md").is_none());
    assert!(outside(&doc, "algorithms.md#masters").is_none());
    assert!(outside(&doc, "https://fmi-standard.org/").is_none());
    assert!(outside(&readme, "docs/scenario.md").is_none());
}

/// The quoted-output matcher: `...` for any text, whole lines.
#[test]
fn quotes_match_whole_lines_with_ellipses() {
    let out = "progress\nerror: x is 3 at t = 0.5\n  help: y\ndone\n";
    assert!(quoted_in("error: x is 3 at t = 0.5\n  help: y", out));
    assert!(quoted_in("error: x is ... at t = ...\n  help: y\n", out));
    assert!(quoted_in("error: ...\n...\ndone", out));
    assert!(!quoted_in("error: x is 4 at t = 0.5", out));
    assert!(!quoted_in("rror: x is 3 at t = 0.5", out));
    assert!(!quoted_in("error: x is 3", out));
    assert!(!quoted_in("help: y", out));
}

/// Shell blocks: continuations, comments, prompts.
#[test]
fn shell_lines_are_commands_with_their_output() {
    let l = shell_lines(
        "cosim run a.toml \\\n    --stop 2   # two seconds\n# note\n\ncosim check b.toml\n",
    );
    assert_eq!(l.len(), 2);
    assert_eq!(words(&l[0].0), ["cosim", "run", "a.toml", "--stop", "2"]);
    let l = shell_lines("$ cosim run x.toml\n...\n  done\n");
    assert_eq!(
        l,
        [(
            "cosim run x.toml".to_string(),
            vec!["...".to_string(), "  done".to_string()]
        )]
    );
    assert!(is_command("COSIM_X=1 cargo test -p cosim-tests"));
    assert!(!is_command("dt = alpha * eps"));
    assert!(check_cosim_words(&["run".into(), "--no-such-option".into()]).is_err());
    assert!(check_cosim_words(&["run".into(), "--stop".into(), "2".into()]).is_ok());
    assert!(check_cosim_words(&["sweep".into(), "submit".into(), "--dry-run".into()]).is_ok());
    assert!(check_cosim_words(&["frobnicate".into()]).is_err());
}
