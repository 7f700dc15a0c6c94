//! The code blocks of the docs: found with a Markdown parser, with the note before each.

use super::*;

/// One code block of a Markdown file.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    /// The file, relative to the repository root.
    pub(crate) file: String,
    /// The line of its opening fence (or first line).
    pub(crate) line: usize,
    /// The info string's first word (empty for unlabelled and indented).
    pub(crate) lang: String,
    pub(crate) indented: bool,
    pub(crate) text: String,
    /// The comment on the line before it, if any.
    pub(crate) note: Note,
}

impl Block {
    pub(crate) fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Note {
    None,
    /// `<!-- example: ... -->`: the parts.
    Example(Vec<String>),
    /// `<!-- generated:NAME -->`.
    Generated(String),
}

/// README.md and docs/*.md.
pub(crate) fn doc_files() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

pub(crate) fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Splits `s` at `, ` outside backticks.
pub(crate) fn split_parts(s: &str) -> Vec<String> {
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

pub(crate) fn parse_note(line: &str) -> Note {
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
pub(crate) fn blocks(path: &Path) -> Vec<Block> {
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
