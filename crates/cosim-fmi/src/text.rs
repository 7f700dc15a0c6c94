//! FMU text (log messages, their categories, whatever an FMU says) is
//! untrusted: bounded in length when it is received, and its control bytes
//! escaped where it is printed.

use std::borrow::Cow;
use std::fmt::Write as _;

/// The most bytes of one FMU log message that are kept: a longer one (FMI
/// 2: one whose formatting would give more) is cut there and ends with
/// [`cut_note`]. The FMI 2 logger's C shim formats no further
/// (`c/fmi2_logger.c`, `COSIM_LOG_MAX`).
pub const LOG_MESSAGE_MAX: usize = 65536;

/// The most bytes of a log message's category that are kept.
pub const LOG_CATEGORY_MAX: usize = 256;

/// What ends a text cut at `max` bytes: `" ... [message cut at 65536
/// bytes]"` for `what` = "message".
pub fn cut_note(what: &str, max: usize) -> String {
    format!(" ... [{what} cut at {max} bytes]")
}

/// `bytes` as text (invalid UTF-8 replaced), at most `max` bytes of them,
/// and whether it was cut (`cut`: already cut before, by the FMI 2 shim);
/// a cut text ends with [`cut_note`] for `what`. A character that the cut
/// split is left out rather than shown as a replacement character.
pub fn bounded_text(bytes: &[u8], max: usize, cut: bool, what: &str) -> String {
    let cut = cut || bytes.len() > max;
    let mut bytes = &bytes[..bytes.len().min(max)];
    if cut && let Err(e) = std::str::from_utf8(bytes) {
        // An incomplete sequence at the end: where the cut fell.
        if e.error_len().is_none() {
            bytes = &bytes[..e.valid_up_to()];
        }
    }
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    if cut {
        text.push_str(&cut_note(what, max));
    }
    text
}

/// `text` with its control characters escaped, for a terminal: C0 controls
/// but newline and tab, DEL and the C1 controls (U+0080 to U+009F, which
/// some terminals take as escape sequences) written as `\x1b`, `\u{9b}`,
/// as the log subscriber (`tracing-subscriber`) escapes the log lines.
/// An FMU's text then cannot move the cursor, clear the screen, set the
/// window title or hide what came before on its line.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    let escaped =
        |c: char| (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c);
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !escaped(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_newlines_kept() {
        assert!(matches!(escape_controls("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            escape_controls("a\u{1b}[2Jb\u{7}c\rd\u{8}\u{7f}\u{9b}e\u{0}\nf"),
            "a\\x1b[2Jb\\x07c\\x0dd\\x08\\x7f\\u{9b}e\\x00\nf"
        );
        // Other characters, however unusual, stay.
        assert_eq!(escape_controls("é ü \u{a0} 日本"), "é ü \u{a0} 日本");
    }

    #[test]
    fn a_text_is_cut_at_its_bound_with_a_note_and_no_split_character() {
        assert_eq!(bounded_text(b"short", 8, false, "message"), "short");
        assert_eq!(
            bounded_text(b"0123456789", 8, false, "message"),
            "01234567 ... [message cut at 8 bytes]"
        );
        // Cut before by the shim, within the bound here.
        assert_eq!(
            bounded_text(b"0123", 8, true, "message"),
            "0123 ... [message cut at 8 bytes]"
        );
        // "é" is two bytes: a cut between them leaves it out.
        assert_eq!(
            bounded_text("abcdefgé".as_bytes(), 8, false, "category"),
            "abcdefg ... [category cut at 8 bytes]"
        );
        // Invalid bytes inside are replaced, not dropped.
        assert_eq!(bounded_text(b"a\xffb", 8, false, "message"), "a\u{fffd}b");
    }
}
