//! Source files (the SSD, SSV, OSP files read) and the located diagnostics
//! that point into them, rendered like rustc's.

use std::fmt;
use std::path::{Path, PathBuf};

use cosim_scenario::{Rendering, Snippet, render_diagnostic};

/// Index of a file in [`Sources`].
pub(crate) type FileId = usize;

/// A byte range in one source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Src {
    pub file: FileId,
    pub start: usize,
    pub end: usize,
}

impl Src {
    pub(crate) fn new(file: FileId, start: usize, end: usize) -> Src {
        Src {
            file,
            start,
            end: end.max(start),
        }
    }
}

/// One file that was read, with its line starts for fast positions.
#[derive(Debug)]
pub(crate) struct SourceFile {
    pub path: PathBuf,
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    fn new(path: PathBuf, text: String) -> SourceFile {
        let mut line_starts = vec![0];
        line_starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        SourceFile {
            path,
            text,
            line_starts,
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub(crate) fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(&self.text, offset.min(self.text.len()));
        let line = self.line_starts.partition_point(|&s| s <= offset).max(1);
        let start = self.line_starts.get(line - 1).copied().unwrap_or(0);
        let column = self
            .text
            .get(start..offset)
            .map_or(0, |s| s.chars().count())
            + 1;
        (line, column)
    }

    /// The text of 1-based line `line`, without its line break.
    fn line_text(&self, line: usize) -> &str {
        let start = self.line_starts.get(line.wrapping_sub(1)).copied();
        let Some(start) = start else { return "" };
        let end = self
            .line_starts
            .get(line)
            .map_or(self.text.len(), |&e| e.saturating_sub(1));
        self.text
            .get(start..end.max(start))
            .unwrap_or_default()
            .trim_end_matches('\r')
    }

    fn snippet(&self, start: usize, end: usize) -> Snippet {
        let (line, column) = self.line_col(start);
        let text = self.line_text(line).to_string();
        let line_len = text.chars().count();
        let caret_start = column - 1;
        let end = floor_char_boundary(&self.text, end.min(self.text.len()));
        let start_b = floor_char_boundary(&self.text, start.min(self.text.len()));
        let len = self
            .text
            .get(start_b..end.max(start_b))
            .map_or(0, |s| s.chars().take_while(|&c| c != '\n').count());
        let caret_len = len.clamp(1, line_len.saturating_sub(caret_start).max(1));
        Snippet {
            line,
            text,
            caret_start,
            caret_len,
        }
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Every file read during one import.
#[derive(Debug, Default)]
pub(crate) struct Sources {
    files: Vec<SourceFile>,
}

impl Sources {
    pub(crate) fn add(&mut self, path: PathBuf, text: String) -> FileId {
        self.files.push(SourceFile::new(path, text));
        self.files.len() - 1
    }

    pub(crate) fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id)
    }

    pub(crate) fn path(&self, id: FileId) -> &Path {
        self.files
            .get(id)
            .map_or(Path::new(""), |f| f.path.as_path())
    }

    /// A diagnostic at `src`.
    pub(crate) fn diag(
        &self,
        severity: Severity,
        src: Src,
        message: impl Into<String>,
    ) -> Diagnostic {
        let mut d = Diagnostic::new(severity, self.path(src.file), message);
        if let Some(f) = self.get(src.file) {
            let (line, column) = f.line_col(src.start);
            d.line = Some(line);
            d.column = Some(column);
            d.snippet = Some(f.snippet(src.start, src.end));
        }
        d
    }

    pub(crate) fn error(&self, src: Src, message: impl Into<String>) -> Diagnostic {
        self.diag(Severity::Error, src, message)
    }

    /// 1-based line of `src`.
    pub(crate) fn line(&self, src: Src) -> usize {
        self.get(src.file).map_or(0, |f| f.line_col(src.start).0)
    }

    /// `file:line` of `src`, for comments and notes.
    pub(crate) fn place(&self, src: Src) -> String {
        let name = self
            .path(src.file)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("{name}:{}", self.line(src))
    }
}

/// How serious a [`Diagnostic`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Information: something was ignored that has no effect on the
    /// simulation (an annotation, say), or a choice the import made.
    Note,
    /// Something was mapped approximately or ignored as the standard
    /// specifies, and may not be what was meant.
    Warning,
    /// The system cannot be run as described: malformed input, or an
    /// element that `cosim` cannot map (reported by name and line).
    Error,
}

/// A problem or remark about an SSP/OSP file, with the file, line and
/// column of the element or attribute concerned.
///
/// `Display` renders it like rustc:
///
/// ```text
/// SystemStructure.ssd:42:7: error: subsystem 'wheel' (QuarterCarWheelSuspension) has no variable 'F_cc'
///    |
/// 42 |       endConnector="F_cc"/>
///    |                     ^^^^
///    = help: did you mean 'F_c'?
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// Error, warning or note.
    pub severity: Severity,
    /// The file concerned.
    pub file: PathBuf,
    /// 1-based line, when the problem is at one place.
    pub line: Option<usize>,
    /// 1-based column in characters.
    pub column: Option<usize>,
    /// What is wrong, as a sentence without the position.
    pub message: String,
    /// A suggestion such as `did you mean 'F_c'?`.
    pub help: Option<String>,
    /// Further remarks.
    pub notes: Vec<String>,
    /// The command-line argument (`--set wheel.k=1`) that caused the problem.
    pub argument: Option<String>,
    /// The XML element the diagnostic is about (`ssd:System`,
    /// `SignalConnection` ...), for elements reported as not mapped.
    pub element: Option<String>,
    snippet: Option<Snippet>,
}

impl Diagnostic {
    /// A diagnostic about `file` as a whole.
    pub fn new(severity: Severity, file: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity,
            file: file.into(),
            line: None,
            column: None,
            message: message.into(),
            help: None,
            notes: Vec::new(),
            argument: None,
            element: None,
            snippet: None,
        }
    }

    /// Adds a `help:` line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds a `note:` line.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Names the XML element concerned.
    pub(crate) fn with_element(mut self, element: impl Into<String>) -> Self {
        self.element = Some(element.into());
        self
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        render_diagnostic(
            f,
            &Rendering {
                file: &self.file,
                line_column: self.line.zip(self.column),
                word: match self.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                    Severity::Note => "note",
                },
                argument: self.argument.as_deref(),
                message: &self.message,
                snippet: self.snippet.as_ref(),
                help: self.help.as_deref(),
                notes: &self.notes,
            },
        )
    }
}

/// Why an SSP/OSP system could not be imported or prepared: one or more
/// located errors (every element that could not be mapped is listed, not
/// just the first), possibly preceded by warnings.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportError {
    /// The diagnostics, in file order; at least one is an error.
    pub diagnostics: Vec<Diagnostic>,
}

impl ImportError {
    pub(crate) fn one(d: Diagnostic) -> ImportError {
        ImportError {
            diagnostics: vec![d],
        }
    }

    /// The errors only.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.is_error())
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ImportError {}

impl From<Diagnostic> for ImportError {
    fn from(d: Diagnostic) -> Self {
        ImportError::one(d)
    }
}

pub(crate) use cosim_scenario::did_you_mean;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions() {
        let mut s = Sources::default();
        let id = s.add("a.xml".into(), "ab\ncdé\r\nf".into());
        let f = s.get(id).map(|f| f.line_col(0));
        assert_eq!(f, Some((1, 1)));
        assert_eq!(s.get(id).map(|f| f.line_col(3)), Some((2, 1)));
        assert_eq!(s.get(id).map(|f| f.line_col(6)), Some((2, 3)));
        assert_eq!(s.get(id).map(|f| f.line_col(7)), Some((2, 4)));
        assert_eq!(s.get(id).map(|f| f.line_col(9)), Some((3, 1)));
        let d = s.error(Src::new(id, 4, 5), "bad");
        assert_eq!(d.to_string(), "a.xml:2:2: error: bad\n  |\n2 | cdé\n  |  ^");
    }
}
