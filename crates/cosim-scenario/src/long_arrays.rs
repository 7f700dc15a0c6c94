//! Long arrays of strings, read before the TOML parser sees them.
//!
//! The TOML parser holds every token of a document, then every event, then
//! every value, each with its span: some 150 bytes per element of an
//! array, so a generated `variables = [...]` list of millions of entries
//! (50 MB) took more than a gigabyte. An array of plain strings is read
//! here instead, from the lexer's tokens one at a time, keeping only each
//! element's span, and blanked (its inside turned to spaces, line breaks
//! too: one token) in the copy of the text the parser gets: the parser
//! sees an empty array at the same place, and every other span stays where
//! it was (lines and columns are counted in the text as written).
//! [`crate::read::Table::strings`] takes the elements back by the array's
//! place. Only arrays of more than [`LONG`] elements, each a string
//! without escapes (a basic string without `\`, or a literal string), in
//! the value of a key, are taken; every other array is the parser's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use toml_parser::lexer::TokenKind;

/// The fewest elements of an array read here.
const LONG: usize = 1024;

/// The byte range of an element, quotes included (8 bytes: a text of
/// more than 4 GiB is not read here).
pub(crate) type Element = (u32, u32);

/// An array read out of a text: its elements, and whether they were
/// taken back.
type Lifted = (Arc<[Element]>, bool);

/// The arrays read out of a text, by the byte offset of their `[`.
#[derive(Debug, Default)]
pub(crate) struct LongArrays(Mutex<HashMap<usize, Lifted>>);

impl LongArrays {
    /// The elements of the array whose `[` is at `start`.
    pub(crate) fn take(&self, start: usize) -> Option<Arc<[Element]>> {
        let mut arrays = self.0.lock().ok()?;
        let (elements, taken) = arrays.get_mut(&start)?;
        *taken = true;
        Some(Arc::clone(elements))
    }

    /// Forgets the arrays not taken back.
    pub(crate) fn clear(&self) {
        if let Ok(mut m) = self.0.lock() {
            m.clear();
        }
    }

    /// Whether every array read was taken back (else the text is parsed
    /// again, whole: an array was somewhere only the parser reads).
    pub(crate) fn all_taken(&self) -> bool {
        self.0
            .lock()
            .is_ok_and(|m| m.values().all(|(_, taken)| *taken))
    }
}

/// The long arrays of strings of `text` and the text the parser gets
/// (`None`: no such array, the text itself).
pub(crate) fn lift(text: &str) -> (LongArrays, Option<String>) {
    if u32::try_from(text.len()).is_err() {
        return (LongArrays::default(), None);
    }
    let source = toml_parser::Source::new(text);
    let mut tokens = source.lex();
    // By the offset of the `[`: the offset of the `]`, the elements.
    let mut found: HashMap<usize, (usize, Vec<Element>)> = HashMap::new();
    let mut after_equals = false;
    while let Some(token) = tokens.next() {
        match token.kind() {
            TokenKind::Whitespace | TokenKind::Comment => continue,
            TokenKind::LeftSquareBracket if after_equals => {
                if let Some((close, items)) = strings_until_close(text, &mut tokens)
                    && items.len() > LONG
                {
                    found.insert(token.span().start(), (close, items));
                }
            }
            _ => {}
        }
        after_equals = token.kind() == TokenKind::Equals;
    }
    if found.is_empty() {
        return (LongArrays::default(), None);
    }
    let mut bytes = text.as_bytes().to_vec();
    for (&open, &(close, _)) in &found {
        for b in bytes.get_mut(open + 1..close).into_iter().flatten() {
            *b = b' ';
        }
    }
    // Whole characters were blanked (between ASCII brackets): still UTF-8.
    match String::from_utf8(bytes) {
        Ok(blanked) => {
            let arrays = found
                .into_iter()
                .map(|(open, (_, items))| (open, (Arc::from(items), false)));
            (LongArrays(Mutex::new(arrays.collect())), Some(blanked))
        }
        Err(_) => (LongArrays::default(), None),
    }
}

/// Reads an array's elements after its `[`: strings without escapes,
/// separated by commas (a trailing one allowed), blanks, line breaks and
/// comments between; returns the offset of its `]` and the elements'
/// spans. `None` (the tokens up to the one that does not fit consumed)
/// for anything else.
fn strings_until_close(
    text: &str,
    tokens: &mut impl Iterator<Item = toml_parser::lexer::Token>,
) -> Option<(usize, Vec<Element>)> {
    let mut items = Vec::new();
    let mut want_string = true;
    for token in tokens.by_ref() {
        let span = token.span();
        match token.kind() {
            TokenKind::Whitespace | TokenKind::Newline | TokenKind::Comment => {}
            TokenKind::RightSquareBracket if !items.is_empty() => {
                return Some((span.start(), items));
            }
            TokenKind::Comma if !want_string => want_string = true,
            TokenKind::BasicString | TokenKind::LiteralString if want_string => {
                let raw = text.get(span.start()..span.end())?;
                let quote = if token.kind() == TokenKind::BasicString {
                    '"'
                } else {
                    '\''
                };
                let plain = raw.len() >= 2
                    && raw.starts_with(quote)
                    && raw.ends_with(quote)
                    && (quote == '\'' || !raw.contains('\\'));
                if !plain {
                    return None;
                }
                // (The text is shorter than 4 GiB.)
                items.push((span.start() as u32, span.end() as u32));
                want_string = false;
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(n: usize) -> String {
        (0..n)
            .map(|i| format!("\"g.x{i}\""))
            .collect::<Vec<_>>()
            .join(", ")
    }

    #[test]
    fn a_long_array_of_strings_is_read_and_blanked_in_place() {
        let text = format!(
            "[outputs]\nvariables = [ # the list\n  {},\n  'g.lit', # last\n]\nx = 1\n",
            list(LONG + 5)
        );
        let (arrays, blanked) = lift(&text);
        let blanked = blanked.unwrap();
        assert_eq!(blanked.len(), text.len());
        // Only the inside of the brackets changed, to spaces.
        let (open, close) = (text.find("[ #").unwrap(), text.rfind(']').unwrap());
        assert_eq!(blanked[..=open], text[..=open]);
        assert_eq!(blanked[close..], text[close..]);
        assert!(blanked[open + 1..close].bytes().all(|b| b == b' '));
        let items = arrays.take(open).unwrap();
        assert_eq!(items.len(), LONG + 6);
        let at = |(a, b): Element| &text[a as usize..b as usize];
        assert_eq!(at(items[0]), "\"g.x0\"");
        assert_eq!(at(items[LONG + 5]), "'g.lit'");
        assert!(arrays.all_taken());
        // The parser sees an empty array where the list was.
        let t = toml::de::DeTable::parse(&blanked).unwrap();
        let outputs = t.get_ref().get("outputs").unwrap();
        let toml::de::DeValue::Table(o) = outputs.get_ref() else {
            panic!()
        };
        let v = o.get("variables").unwrap();
        assert_eq!(v.span().start, open);
        let toml::de::DeValue::Array(a) = v.get_ref() else {
            panic!()
        };
        assert!(a.is_empty());
    }

    #[test]
    fn short_arrays_and_arrays_of_anything_else_are_the_parser_s() {
        for text in [
            format!("v = [{}]\n", list(10)),
            format!("v = [{}, 1]\n", list(LONG + 1)),
            format!("v = [{}, \"a\\tb\"]\n", list(LONG + 1)),
            format!("v = [{}, \"\"\"ml\"\"\"]\n", list(LONG + 1)),
            format!("v = [[{}]]\n", list(LONG + 1)),
            format!("[{}]\n", list(LONG + 1)),
        ] {
            let (arrays, blanked) = lift(&text);
            assert!(blanked.is_none(), "{}", &text[..40]);
            assert!(arrays.all_taken());
        }
    }
}
