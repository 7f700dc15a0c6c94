//! Rust API outlines: every function a block calls is a `fn` of the crate.

use super::*;

pub(crate) fn rust_api(b: &Block, dir: &str) -> Result<(), String> {
    let src = root().join(dir).join("src");
    let mut sources = String::new();
    pub(crate) fn read_all(d: &Path, into: &mut String) {
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
