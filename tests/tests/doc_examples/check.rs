//! Checking one doc: each block as its language and note say.

use super::*;

/// How a block was checked, for the summary.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum How {
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

pub(crate) struct Doc {
    pub(crate) blocks: Vec<Block>,
    /// `file NAME` blocks.
    pub(crate) files: Vec<(String, String)>,
}

#[derive(Default)]
pub(crate) struct Report {
    pub(crate) failures: Vec<String>,
    pub(crate) counts: BTreeMap<(String, How), usize>,
    pub(crate) not_run: Vec<String>,
    pub(crate) lines_run: usize,
    pub(crate) lines_static: usize,
    /// How long the doc took (and which).
    pub(crate) slowest: Option<(Duration, Option<String>)>,
}

/// The parts of a block's `example:` comment.
pub(crate) struct Parts {
    pub(crate) exits: i32,
    pub(crate) not_run: Option<String>,
    pub(crate) notation: bool,
    pub(crate) file: Option<String>,
    pub(crate) fragment_of: Option<String>,
    pub(crate) appended_to: Option<String>,
    pub(crate) output_of: Option<String>,
    pub(crate) after: Vec<String>,
    pub(crate) continues: bool,
    pub(crate) api_of: Option<String>,
}

pub(crate) fn backticked(s: &str) -> Option<String> {
    let s = s.trim();
    s.strip_prefix('`')?.strip_suffix('`').map(str::to_string)
}

pub(crate) fn parts(b: &Block) -> Result<Parts, String> {
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
pub(crate) fn check_doc(doc: &Doc, report: &mut Report) {
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

pub(crate) fn check_block<'a>(
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
             `<!-- example: ... -->` on the line before it (see tests/tests/doc_examples/main.rs)",
            if b.lang.is_empty() { "code" } else { &b.lang }
        )),
    }
}

/// `text` with the sandbox's directory shown as `.../` (the docs write
/// `.../out` where the program prints an absolute path).
pub(crate) fn unsandboxed(text: &str, sb: &Path) -> String {
    text.replace(&format!("{}/", sb.display()), ".../")
}

pub(crate) fn is_shell(b: &Block) -> bool {
    b.lang == "sh" || shell_lines(&b.text).iter().all(|(l, _)| is_command(l))
}

pub(crate) fn generated_block(name: &str) -> Result<How, String> {
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

pub(crate) fn rust_sources_contain(dir: &Path, needle: &str) -> bool {
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

pub(crate) fn fragment(b: &Block, path: &str, above: Option<&Block>) -> Result<(), String> {
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

pub(crate) fn toml_block(
    doc: &Doc,
    b: &Block,
    p: &Parts,
    report: &mut Report,
) -> Result<How, String> {
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

pub(crate) fn yaml_block(b: &Block, report: &mut Report) -> Result<How, String> {
    let docs =
        yaml_rust2::YamlLoader::load_from_str(&b.text).map_err(|e| format!("invalid YAML: {e}"))?;
    // The cosim command lines inside (strings), checked statically.
    pub(crate) fn strings(y: &yaml_rust2::Yaml, out: &mut Vec<String>) {
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

pub(crate) fn shell_block(
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
