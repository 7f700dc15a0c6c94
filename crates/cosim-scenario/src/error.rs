//! Positions in a scenario file and the errors (and warnings) that point at
//! them, rendered like rustc's diagnostics.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

/// A byte range in the scenario file's text (`start..end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The span `start..end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start,
            end: end.max(start),
        }
    }

    pub(crate) fn from_range(r: std::ops::Range<usize>) -> Span {
        Span::new(r.start, r.end)
    }
}

/// A value together with where it was written in the scenario file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Located<T> {
    /// The value.
    pub value: T,
    /// Where it was written (for a default, the span of the enclosing table).
    pub span: Span,
}

impl<T> Located<T> {
    /// Wraps `value` found at `span`.
    pub fn new(value: T, span: Span) -> Self {
        Located { value, span }
    }
}

/// The text of a scenario file and its path, shared by everything that
/// needs to render a position.
#[derive(Debug)]
pub(crate) struct Source {
    pub path: PathBuf,
    pub text: String,
    /// The long arrays of strings read out of the text before the TOML
    /// parser, not yet taken back (`crate::long_arrays`).
    pub long_arrays: crate::long_arrays::LongArrays,
}

impl Source {
    pub(crate) fn new(path: PathBuf, text: String) -> Arc<Source> {
        Source::with_arrays(path, text, Default::default())
    }

    /// A source whose text's long arrays of strings were read out of it.
    pub(crate) fn with_arrays(
        path: PathBuf,
        text: String,
        long_arrays: crate::long_arrays::LongArrays,
    ) -> Arc<Source> {
        Arc::new(Source {
            path,
            text,
            long_arrays,
        })
    }

    /// 1-based line and column (in characters) of a byte offset.
    fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(&self.text, offset.min(self.text.len()));
        let before = self.text.get(..offset).unwrap_or_default();
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before.get(line_start..).unwrap_or_default().chars().count() + 1;
        (line, column)
    }

    /// `file:line:column` of `span`, for messages that are not diagnostics.
    pub(crate) fn location(&self, span: Span) -> String {
        let (line, column) = self.line_col(span.start);
        format!("{}:{line}:{column}", self.path.display())
    }

    /// The error or warning `message` at `span` (`None`: the whole file).
    pub(crate) fn diagnostic(
        &self,
        severity: Severity,
        span: Option<Span>,
        message: impl Into<String>,
    ) -> ScenarioError {
        let mut e = Diagnostic {
            severity,
            file: self.path.clone(),
            line: None,
            column: None,
            span,
            message: message.into(),
            help: None,
            notes: Vec::new(),
            argument: None,
            snippet: None,
        };
        if let Some(span) = span {
            let (line, column) = self.line_col(span.start);
            e.line = Some(line);
            e.column = Some(column);
            e.snippet = self.snippet(span);
        }
        ScenarioError(Box::new(e))
    }

    pub(crate) fn error(&self, span: Option<Span>, message: impl Into<String>) -> ScenarioError {
        self.diagnostic(Severity::Error, span, message)
    }

    /// The source line of `span` and the caret range on it (character
    /// columns, 0-based), clipped to the first line of a multi-line span.
    fn snippet(&self, span: Span) -> Option<Snippet> {
        let start = floor_char_boundary(&self.text, span.start.min(self.text.len()));
        let line_start = self.text.get(..start)?.rfind('\n').map_or(0, |i| i + 1);
        let line_end = self
            .text
            .get(start..)?
            .find('\n')
            .map_or(self.text.len(), |i| start + i);
        let line_text = self.text.get(line_start..line_end)?.trim_end_matches('\r');
        let end = floor_char_boundary(&self.text, span.end.clamp(start, line_end));
        let caret_start = self.text.get(line_start..start)?.chars().count();
        let caret_len = self.text.get(start..end)?.chars().count().max(1);
        let (line, _) = self.line_col(start);
        Some(Snippet {
            line,
            text: line_text.chars().map(visible).collect(),
            caret_start,
            caret_len,
        })
    }
}

/// A control character (but tab) as its Unicode control picture (NUL as
/// U+2400), so that a quoted line neither hides it nor sends it to the
/// terminal; one character for one, so the caret stays in place.
fn visible(c: char) -> char {
    match c {
        '\t' => c,
        '\0'..='\x1f' => char::from_u32(0x2400 + c as u32).unwrap_or(c),
        '\x7f' => '\u{2421}',
        _ => c,
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Error or warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Severity {
    /// The scenario cannot be run.
    Error,
    /// The scenario runs, but something is probably not what was meant.
    Warning,
}

/// The quoted source line of a diagnostic and the caret range under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    /// 1-based line number.
    pub line: usize,
    /// The line's text, without its line break.
    pub text: String,
    /// First column of the caret (0-based, in characters).
    pub caret_start: usize,
    /// Number of carets (at least 1).
    pub caret_len: usize,
}

/// The parts of a diagnostic, rendered like rustc by [`render`] (shared by
/// scenario errors and the SSP importer's diagnostics).
#[derive(Debug, Clone, Copy)]
pub struct Rendering<'a> {
    /// The file concerned.
    pub file: &'a Path,
    /// 1-based line and column, when the place is known.
    pub line_column: Option<(usize, usize)>,
    /// `error`, `warning`, `note`.
    pub word: &'a str,
    /// The command-line argument concerned, if any.
    pub argument: Option<&'a str>,
    /// The message.
    pub message: &'a str,
    /// The quoted source line.
    pub snippet: Option<&'a Snippet>,
    /// A `help:` line.
    pub help: Option<&'a str>,
    /// `note:` lines.
    pub notes: &'a [String],
}

/// Writes `d` like rustc: `file:line:column: error: message`, the quoted
/// line with carets, then help and notes.
pub fn render(f: &mut fmt::Formatter<'_>, d: &Rendering<'_>) -> fmt::Result {
    write!(f, "{}", d.file.display())?;
    if let Some((line, column)) = d.line_column {
        write!(f, ":{line}:{column}")?;
    }
    write!(f, ": {}: ", d.word)?;
    if let Some(arg) = d.argument {
        write!(f, "in command-line argument '{arg}': ")?;
    }
    write!(f, "{}", d.message)?;
    let gutter = d.snippet.map_or(1, |s| s.line.to_string().len());
    let pad = " ".repeat(gutter);
    if let Some(s) = d.snippet {
        write!(
            f,
            "\n{pad} |\n{} | {}\n{pad} | {}{}",
            s.line,
            s.text,
            " ".repeat(s.caret_start),
            "^".repeat(s.caret_len)
        )?;
    }
    if let Some(help) = d.help {
        write!(f, "\n{pad} = help: {help}")?;
    }
    for note in d.notes {
        write!(f, "\n{pad} = note: {note}")?;
    }
    Ok(())
}

/// Something wrong with a scenario, with the place it was written.
///
/// `Display` renders it like rustc:
///
/// ```text
/// b1.toml:17:15: error: subsystem 'wheel' (QuarterCarWheel) has no variable 'F_x'
///    |
/// 17 | from = "wheel.F_x"
///    |               ^^^
///    = help: did you mean 'F_c'?
/// ```
///
/// Errors caused by a command-line override carry the argument in
/// [`Diagnostic::argument`] and no line. The fields are those of
/// [`Diagnostic`] (reached through `Deref`); the error itself is one
/// pointer wide, so `Result<T, ScenarioError>` stays small.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError(Box<Diagnostic>);

/// The content of a [`ScenarioError`] (or of a warning).
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// Error or warning (warnings come from [`crate::Scenario::warnings`]
    /// and [`crate::ResolvedScenario::warnings`]).
    pub severity: Severity,
    /// The scenario file.
    pub file: PathBuf,
    /// 1-based line of the offending key or value; `None` when the problem
    /// is not at one place (or comes from the command line).
    pub line: Option<usize>,
    /// 1-based column (in characters) of the offending key or value.
    pub column: Option<usize>,
    /// The byte range in the file.
    pub span: Option<Span>,
    /// What is wrong, as a sentence without the position.
    pub message: String,
    /// A suggestion such as `did you mean 'F_c'?`.
    pub help: Option<String>,
    /// Further remarks (e.g. where a conflicting item is).
    pub notes: Vec<String>,
    /// The command-line argument (`--set wheel.k=1`) that caused the error.
    pub argument: Option<String>,
    snippet: Option<Snippet>,
}

impl std::ops::Deref for ScenarioError {
    type Target = Diagnostic;
    fn deref(&self) -> &Diagnostic {
        &self.0
    }
}

impl std::ops::DerefMut for ScenarioError {
    fn deref_mut(&mut self) -> &mut Diagnostic {
        &mut self.0
    }
}

impl ScenarioError {
    /// An error about the command-line argument `argument` of a scenario in `file`.
    pub(crate) fn argument(file: &Path, argument: &str, message: impl Into<String>) -> Self {
        ScenarioError(Box::new(Diagnostic {
            severity: Severity::Error,
            file: file.to_path_buf(),
            line: None,
            column: None,
            span: None,
            message: message.into(),
            help: None,
            notes: Vec::new(),
            argument: Some(argument.to_string()),
            snippet: None,
        }))
    }

    /// Adds a `help:` line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds a `help:` line when there is one.
    pub fn with_help_opt(mut self, help: Option<String>) -> Self {
        if help.is_some() {
            self.help = help;
        }
        self
    }

    /// Adds a `note:` line.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// The same diagnostic without a place in the file (for a scenario
    /// that has no file of its own).
    pub(crate) fn unplaced(mut self) -> Self {
        self.0.line = None;
        self.0.column = None;
        self.0.span = None;
        self.0.snippet = None;
        self
    }

    /// True for errors, false for warnings.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        render(
            f,
            &Rendering {
                file: &self.file,
                line_column: self.line.zip(self.column),
                word: match self.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
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

impl std::error::Error for ScenarioError {}

/// The candidate closest to `wrong` by Damerau-Levenshtein distance, if it
/// is close enough to be a plausible misspelling (or differs only in case).
/// Every "did you mean" of the project (scenarios, SSP/OSP, sweeps) uses it.
pub fn nearest<'a>(wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    let lower = wrong.to_lowercase();
    for c in candidates {
        if c.to_lowercase() == lower {
            return Some(c);
        }
        let d = strsim::damerau_levenshtein(wrong, c);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    let (d, c) = best?;
    let limit = (wrong.chars().count().max(c.chars().count()) / 3).max(1);
    (d <= limit).then_some(c)
}

/// `did you mean 'x'?` for the nearest candidate.
pub fn did_you_mean<'a>(
    wrong: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    nearest(wrong, candidates).map(|c| format!("did you mean '{c}'?"))
}
