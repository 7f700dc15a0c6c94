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

mod api;
mod blocks;
mod check;
mod matching;
mod python;
mod sandbox;
mod shell;

use api::*;
use blocks::*;
use check::*;
use matching::*;
use python::*;
use sandbox::*;
use shell::*;

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
