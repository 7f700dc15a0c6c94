//! What the SSP and OSP readers share: the collected diagnostics, value
//! parsing, URIs.

use std::path::{Path, PathBuf};

use crate::draft::{Draft, Skipped};
use crate::models::Models;
use crate::source::{Diagnostic, FileId, Severity, Sources, Src, did_you_mean};
use crate::xml::Elem;

/// The state of one import.
#[derive(Debug, Default)]
pub(crate) struct Ctx {
    pub sources: Sources,
    /// Errors, warnings and notes, except unmapped elements.
    pub diags: Vec<Diagnostic>,
    /// Elements that cannot be mapped (errors).
    pub unsupported: Vec<Diagnostic>,
    pub models: Models,
    /// Ignored annotations: (type, first place, count).
    annotations: Vec<(String, Src, usize)>,
}

impl Ctx {
    pub(crate) fn push(&mut self, severity: Severity, src: Src, message: impl Into<String>) {
        let d = self.sources.diag(severity, src, message);
        self.diags.push(d);
    }

    pub(crate) fn error(&mut self, src: Src, message: impl Into<String>) {
        self.push(Severity::Error, src, message);
    }

    pub(crate) fn warn(&mut self, src: Src, message: impl Into<String>) {
        self.push(Severity::Warning, src, message);
    }

    pub(crate) fn note(&mut self, src: Src, message: impl Into<String>) {
        self.push(Severity::Note, src, message);
    }

    /// An error with a help line.
    pub(crate) fn error_help(
        &mut self,
        src: Src,
        message: impl Into<String>,
        help: Option<String>,
    ) {
        let mut d = self.sources.error(src, message);
        d.help = help;
        self.diags.push(d);
    }

    /// An element that cannot be mapped: an error naming it (with its
    /// line), and a comment in the generated TOML.
    pub(crate) fn unsupported(&mut self, draft: &mut Draft, file: FileId, e: &Elem, why: &str) {
        let src = e.src(file);
        let what = describe(e);
        let message = format!("{what} cannot be mapped: {why}");
        self.unsupported_at(draft, src, &e.name, message);
    }

    /// Like [`Ctx::unsupported`] with a message of its own.
    pub(crate) fn unsupported_at(
        &mut self,
        draft: &mut Draft,
        src: Src,
        element: &str,
        message: String,
    ) {
        let d = self
            .sources
            .error(src, message.clone())
            .with_element(element.to_string());
        self.unsupported.push(d);
        draft.skipped.push(Skipped { src, text: message });
    }

    /// An `<Annotation type=...>`: ignored, counted per type for one note.
    pub(crate) fn annotation(&mut self, kind: &str, src: Src) {
        match self.annotations.iter_mut().find(|(k, _, _)| k == kind) {
            Some((_, _, n)) => *n += 1,
            None => self.annotations.push((kind.to_string(), src, 1)),
        }
    }

    /// Emits the collected notes (annotations).
    pub(crate) fn finish(&mut self) {
        for (kind, src, n) in std::mem::take(&mut self.annotations) {
            let what = if n == 1 {
                format!("annotation of type '{kind}' ignored")
            } else {
                format!("{n} annotations of type '{kind}' ignored (the first is here)")
            };
            let d = self
                .sources
                .diag(
                    Severity::Note,
                    src,
                    format!("{what}: tool-specific information, no effect on a run"),
                )
                .with_element("Annotation");
            self.diags.push(d);
        }
    }

    /// An element that is ignored because it has no effect on a run (an
    /// annotation): a note.
    pub(crate) fn ignored(&mut self, file: FileId, e: &Elem, why: &str) {
        let src = e.src(file);
        let d = self
            .sources
            .diag(
                Severity::Note,
                src,
                format!("{} ignored: {why}", describe(e)),
            )
            .with_element(e.name.clone());
        self.diags.push(d);
    }

    /// An element the reader does not know: a warning with the nearest
    /// known name.
    pub(crate) fn unknown(&mut self, file: FileId, e: &Elem, parent: &str, known: &[&str]) {
        let src = e.src(file);
        let mut d = self
            .sources
            .diag(
                Severity::Warning,
                src,
                format!("unknown element <{}> in <{parent}> ignored", e.name),
            )
            .with_element(e.name.clone());
        d.help = did_you_mean(e.local(), known.iter().copied());
        self.diags.push(d);
    }

    /// A required attribute; reports it missing.
    pub(crate) fn required<'e>(
        &mut self,
        file: FileId,
        e: &'e Elem,
        name: &str,
    ) -> Option<&'e str> {
        let v = e.value(name);
        if v.is_none() {
            let src = e.src(file);
            let d = self
                .sources
                .error(
                    src,
                    format!("<{}> is missing the required attribute '{name}'", e.name),
                )
                .with_element(e.name.clone());
            self.diags.push(d);
        }
        v
    }

    /// A finite number in attribute `name`, if present; reports a bad one.
    pub(crate) fn f64_attr(&mut self, file: FileId, e: &Elem, name: &str) -> Option<f64> {
        let a = e.attr(name)?;
        match parse_f64(&a.value) {
            Some(x) => Some(x),
            None => {
                self.error(
                    Src::new(file, a.start, a.end),
                    format!(
                        "attribute {name}=\"{}\" of <{}> is not a finite number",
                        a.value, e.name
                    ),
                );
                None
            }
        }
    }

    /// A finite number as the text of `e`; reports a bad one.
    pub(crate) fn f64_text(&mut self, file: FileId, e: &Elem) -> Option<f64> {
        match parse_f64(&e.text) {
            Some(x) => Some(x),
            None => {
                self.error(
                    e.text_src(file),
                    format!(
                        "<{}> must hold a finite number, not '{}'",
                        e.name,
                        e.text.trim()
                    ),
                );
                None
            }
        }
    }

    /// A boolean attribute (`true`/`false`/`1`/`0`), if present.
    pub(crate) fn bool_attr(&mut self, file: FileId, e: &Elem, name: &str) -> Option<bool> {
        let a = e.attr(name)?;
        match parse_bool(&a.value) {
            Some(b) => Some(b),
            None => {
                self.error(
                    Src::new(file, a.start, a.end),
                    format!(
                        "attribute {name}=\"{}\" of <{}> is not a boolean (true, false, 1, 0)",
                        a.value, e.name
                    ),
                );
                None
            }
        }
    }

    /// True when an error was reported.
    pub(crate) fn has_errors(&self) -> bool {
        self.diags.iter().any(Diagnostic::is_error)
    }
}

/// `<ssd:Component name="x">`, or `<Name>` without a name.
pub(crate) fn describe(e: &Elem) -> String {
    match e.value("name") {
        Some(n) => format!("<{} name=\"{n}\">", e.name),
        None => format!("<{}>", e.name),
    }
}

/// An `xs:double` that is finite.
pub(crate) fn parse_f64(s: &str) -> Option<f64> {
    let t = s.trim();
    // Rust accepts "inf", "NaN", "infinity": refuse them (and a leading '+'
    // is fine in XML Schema and in Rust).
    t.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// Why `raw` is not an integer a scenario can hold: not an integer at all,
/// or one beyond the range of TOML integers (64-bit signed), as a UInt64
/// above 2^63 - 1 is.
pub(crate) fn not_an_integer(raw: &str) -> String {
    if raw.trim().parse::<i128>().is_ok() {
        format!(
            "'{raw}' is beyond the integers a scenario holds ({} to {}, those of TOML)",
            i64::MIN,
            i64::MAX
        )
    } else {
        format!("'{raw}' is not an integer")
    }
}

/// An `xs:boolean`.
pub(crate) fn parse_bool(s: &str) -> Option<bool> {
    match s.trim() {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

/// Decodes `%XX` escapes of a URI path.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Resolves a component or parameter source URI against `base_dir`:
/// relative references and `file:` URIs are supported. `Err` says why not.
pub(crate) fn resolve_uri(base_dir: &Path, uri: &str) -> Result<PathBuf, String> {
    let uri = uri.trim();
    if uri.is_empty() {
        return Err("the URI is empty".to_string());
    }
    if uri.contains('#') {
        return Err(format!(
            "'{uri}' has a fragment identifier (a variant or an embedded system), which is not supported"
        ));
    }
    let (scheme, rest) = match uri.split_once(':') {
        // A single letter before ':' is a Windows drive, not a scheme.
        Some((s, r))
            if s.len() > 1
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            (Some(s.to_ascii_lowercase()), r)
        }
        _ => (None, uri),
    };
    match scheme.as_deref() {
        None => {
            let path = percent_decode(rest).ok_or_else(|| format!("'{uri}' is not a valid URI"))?;
            let p = Path::new(&path);
            Ok(if p.is_absolute() {
                p.to_path_buf()
            } else {
                base_dir.join(p)
            })
        }
        Some("file") => {
            let path = rest
                .strip_prefix("//localhost")
                .or_else(|| rest.strip_prefix("//"))
                .unwrap_or(rest);
            let path = percent_decode(path).ok_or_else(|| format!("'{uri}' is not a valid URI"))?;
            let p = Path::new(&path);
            Ok(if p.is_absolute() {
                p.to_path_buf()
            } else {
                base_dir.join(p)
            })
        }
        Some(s) => Err(format!(
            "the URI scheme '{s}:' of '{uri}' is not supported (only relative paths and file: URIs)"
        )),
    }
}

/// `path` as shown in messages: relative to the current directory when
/// it is inside it.
pub(crate) fn shown(path: &Path) -> PathBuf {
    match std::env::current_dir() {
        Ok(cwd) => path
            .strip_prefix(&cwd)
            .map_or_else(|_| path.to_path_buf(), Path::to_path_buf),
        Err(_) => path.to_path_buf(),
    }
}

/// `path` with `.` and `..` components resolved lexically.
pub(crate) fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UInt64 above 2^63 - 1 is an integer, beyond what a scenario
    /// (TOML) holds: said so, not called "not an integer".
    #[test]
    fn an_integer_too_large_for_a_scenario_is_told_from_no_integer() {
        assert_eq!(
            not_an_integer("18446744073709551615"),
            "'18446744073709551615' is beyond the integers a scenario holds (-9223372036854775808 to 9223372036854775807, those of TOML)"
        );
        assert_eq!(not_an_integer("1.5"), "'1.5' is not an integer");
    }

    #[test]
    fn uris() {
        let base = Path::new("/x/y");
        assert_eq!(
            resolve_uri(base, "resources/a.fmu"),
            Ok(PathBuf::from("/x/y/resources/a.fmu"))
        );
        assert_eq!(
            resolve_uri(base, "resources/my%20model.fmu"),
            Ok(PathBuf::from("/x/y/resources/my model.fmu"))
        );
        assert_eq!(
            resolve_uri(base, "file:///opt/a.fmu"),
            Ok(PathBuf::from("/opt/a.fmu"))
        );
        assert!(resolve_uri(base, "http://example.com/a.fmu").is_err());
        assert!(resolve_uri(base, "sub.ssp#Variant.ssd").is_err());
        assert_eq!(
            normalise(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_f64(" 1e-3 "), Some(1e-3));
        assert_eq!(parse_f64("inf"), None);
        assert_eq!(parse_f64("NaN"), None);
        assert_eq!(parse_bool("1"), Some(true));
        assert_eq!(parse_bool("yes"), None);
    }
}
