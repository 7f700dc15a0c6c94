//! Errors of a sweep, located in the sweep file like the scenario's
//! diagnostics (`file:line:column: error: message`, the source line and a
//! caret).

use std::fmt;
use std::path::{Path, PathBuf};

use cosim_scenario::ScenarioError;
use cosim_scenario::runner::PrepareError;

/// Why a sweep could not be defined, prepared or written.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A problem in the sweep definition, at a place in its file.
    #[error("{0}")]
    Located(Box<Located>),
    /// The scenario the sweep varies is wrong (before any axis applies).
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// The scenario could not be prepared (an FMU could not be opened).
    #[error("{0}")]
    Prepare(#[from] PrepareError),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The output directory is in use by another run or sweep
    /// ([`cosim_core::CoreError::OutputInUse`]), or its lock cannot be made.
    #[error("error: {0}")]
    Output(cosim_core::CoreError),
    /// Anything else (bad command-line value, inconsistent shard files).
    #[error("{0}")]
    Other(String),
}

impl SweepError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> SweepError {
        SweepError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A located error in a sweep file.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// The sweep file.
    pub file: PathBuf,
    /// 1-based line, when the problem is at one place.
    pub line: Option<usize>,
    /// 1-based column in characters.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// A suggestion (`did you mean 'step'?`).
    pub help: Option<String>,
    /// Further remarks.
    pub notes: Vec<String>,
    /// The source line and caret range (line number, text, caret start, caret length).
    snippet: Option<(usize, String, usize, usize)>,
}

impl Located {
    /// Adds a `help:` line.
    pub fn with_help(mut self, help: Option<String>) -> Self {
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
}

impl From<Located> for SweepError {
    fn from(l: Located) -> Self {
        SweepError::Located(Box::new(l))
    }
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let (Some(line), Some(column)) = (self.line, self.column) {
            write!(f, ":{line}:{column}")?;
        }
        write!(f, ": error: {}", self.message)?;
        let gutter = self
            .snippet
            .as_ref()
            .map_or(1, |(line, ..)| line.to_string().len());
        let pad = " ".repeat(gutter);
        if let Some((line, text, start, len)) = &self.snippet {
            write!(
                f,
                "\n{pad} |\n{line} | {text}\n{pad} | {}{}",
                " ".repeat(*start),
                "^".repeat(*len)
            )?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n{pad} = help: {help}")?;
        }
        for note in &self.notes {
            write!(f, "\n{pad} = note: {note}")?;
        }
        Ok(())
    }
}

/// The text of a sweep file, to locate errors in.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file as given.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

impl Source {
    /// An error at the byte range `span` (`None`: the whole file).
    pub fn error(
        &self,
        span: Option<std::ops::Range<usize>>,
        message: impl Into<String>,
    ) -> Located {
        let mut e = Located {
            file: self.path.clone(),
            line: None,
            column: None,
            message: message.into(),
            help: None,
            notes: Vec::new(),
            snippet: None,
        };
        if let Some(span) = span {
            let text = self.text.as_str();
            let start = floor_boundary(text, span.start.min(text.len()));
            let before = text.get(..start).unwrap_or_default();
            let line = before.matches('\n').count() + 1;
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            let line_end = text
                .get(start..)
                .and_then(|rest| rest.find('\n'))
                .map_or(text.len(), |i| start + i);
            let column = text
                .get(line_start..start)
                .unwrap_or_default()
                .chars()
                .count();
            let end = floor_boundary(text, span.end.clamp(start, line_end));
            let len = text.get(start..end).unwrap_or_default().chars().count();
            let line_text = text
                .get(line_start..line_end)
                .unwrap_or_default()
                .trim_end_matches('\r');
            e.line = Some(line);
            e.column = Some(column + 1);
            e.snippet = Some((line, line_text.to_string(), column, len.max(1)));
        }
        e
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

pub(crate) use cosim_scenario::did_you_mean;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_render_with_line_column_and_caret() {
        let src = Source {
            path: "s.toml".into(),
            text: "[sweep]\ncombine = \"cross\"\n".into(),
        };
        let e = src
            .error(Some(18..25), "unknown combination")
            .with_help(Some("did you mean 'product'?".into()));
        let text = e.to_string();
        assert!(
            text.starts_with("s.toml:2:11: error: unknown combination"),
            "{text}"
        );
        assert!(text.contains("2 | combine = \"cross\""), "{text}");
        assert!(text.contains("  |           ^^^^^^^"), "{text}");
        assert!(text.contains("help: did you mean 'product'?"), "{text}");
    }

    #[test]
    fn misspellings_are_suggested() {
        assert_eq!(
            did_you_mean("stpe", ["step", "stop", "kind"]).as_deref(),
            Some("did you mean 'step'?")
        );
        assert_eq!(did_you_mean("zzzzzz", ["step"]), None);
    }
}
