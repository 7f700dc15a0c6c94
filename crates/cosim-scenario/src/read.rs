//! Typed, position-keeping access to the spanned TOML tree of a scenario.
//!
//! The scenario is parsed with [`toml::de::DeTable`], which keeps the byte
//! span of every key and value. [`Table`] checks a table's keys against the
//! list of valid ones (an unknown key is an error with the nearest valid
//! key) and reads values with messages that say what was expected and what
//! was found.

use serde_spanned::Spanned;
use toml::de::{DeTable, DeValue};

use crate::error::{ScenarioError, Source, Span, did_you_mean};

pub(crate) type Result<T> = std::result::Result<T, ScenarioError>;
pub(crate) type SValue<'i> = Spanned<DeValue<'i>>;
/// Strings with their spans.
pub(crate) type Strings = Vec<(String, Span)>;

/// Refuses a scenario text holding a control character TOML does not
/// allow (every one but tab, line feed and the carriage return of a CRLF;
/// TOML 1.0 has them escaped in strings), at its line and column. The TOML
/// parser would report the token it broke instead ("invalid float,
/// expected nothing" for `stop = 1.0` and a NUL), which does not say what
/// is wrong with the file.
pub(crate) fn check_characters(src: &Source) -> Result<()> {
    let bytes = src.text.as_bytes();
    let bad = |i: usize, b: u8| match b {
        b'\t' | b'\n' => false,
        b'\r' => bytes.get(i + 1) != Some(&b'\n'),
        _ => b < 0x20 || b == 0x7f,
    };
    let Some((at, &b)) = bytes.iter().enumerate().find(|&(i, &b)| bad(i, b)) else {
        return Ok(());
    };
    let span = Some(Span::new(at, at + 1));
    if b == 0 {
        return Err(src
            .error(
                span,
                "the file holds a NUL byte (U+0000) here: a scenario is UTF-8 text",
            )
            .with_help(
                "a file saved as UTF-16 has one beside every ASCII character: save it as UTF-8",
            ));
    }
    Err(src
        .error(
            span,
            format!(
                "the file holds the control character U+{b:04X} here, which TOML does not allow"
            ),
        )
        .with_help(format!("inside a string, write it as \\u{b:04X}")))
}

/// "a string", "an integer" ... for messages.
pub(crate) fn describe(v: &DeValue<'_>) -> String {
    match v {
        DeValue::String(s) => format!("the string \"{}\"", shorten(s)),
        DeValue::Integer(i) => format!("the integer {i}"),
        DeValue::Float(x) => format!("the float {x}"),
        DeValue::Boolean(b) => format!("the boolean {b}"),
        DeValue::Datetime(d) => format!("the date-time {d}"),
        DeValue::Array(_) => "an array".to_string(),
        DeValue::Table(_) => "a table".to_string(),
    }
}

pub(crate) fn shorten(s: &str) -> String {
    if s.chars().count() > 60 {
        let head: String = s.chars().take(57).collect();
        format!("{head}...")
    } else {
        s.to_string()
    }
}

pub(crate) fn span_of<T>(v: &Spanned<T>) -> Span {
    Span::from_range(v.span())
}

/// A TOML integer as written, if it fits an i128: wider than TOML's own
/// 64-bit integers, so that every UInt64 value can be given.
pub(crate) fn integer_value(v: &DeValue<'_>) -> Option<i128> {
    match v {
        DeValue::Integer(i) => i128::from_str_radix(i.as_str(), i.radix()).ok(),
        _ => None,
    }
}

/// A TOML float or integer as f64.
pub(crate) fn number_value(v: &DeValue<'_>) -> Option<f64> {
    match v {
        DeValue::Float(x) => x.as_str().parse::<f64>().ok(),
        DeValue::Integer(_) => integer_value(v).map(|i| i as f64),
        _ => None,
    }
}

/// One TOML table being read.
pub(crate) struct Table<'a, 'i> {
    pub src: &'a Source,
    pub table: &'a DeTable<'i>,
    /// The span of the header (`[master]`) or of the inline table.
    pub span: Span,
    /// How the table is named in messages: `[master]`, `[[subsystems]]`.
    pub name: String,
}

impl<'a, 'i> Table<'a, 'i> {
    /// Reads `value` as a table named `name`, rejecting keys not in `known`.
    pub fn new(
        src: &'a Source,
        value: &'a SValue<'i>,
        name: impl Into<String>,
        known: &[&str],
    ) -> Result<Self> {
        let name = name.into();
        let DeValue::Table(table) = value.get_ref() else {
            return Err(src.error(
                Some(span_of(value)),
                format!(
                    "expected a table for {name}, found {}",
                    describe(value.get_ref())
                ),
            ));
        };
        let t = Table {
            src,
            table,
            span: span_of(value),
            name,
        };
        t.check_keys(known)?;
        Ok(t)
    }

    /// The entries in the order they were written.
    pub fn entries(&self) -> Vec<(&'a Spanned<std::borrow::Cow<'i, str>>, &'a SValue<'i>)> {
        let mut v: Vec<_> = self.table.iter().collect();
        v.sort_by_key(|(k, _)| k.span().start);
        v
    }

    fn check_keys(&self, known: &[&str]) -> Result<()> {
        for (key, _) in self.entries() {
            let k: &str = key.get_ref();
            if !known.contains(&k) {
                let err = self.src.error(
                    Some(span_of(key)),
                    format!("unknown key '{k}' in {}", self.name),
                );
                return Err(match did_you_mean(k, known.iter().copied()) {
                    Some(help) => err.with_help(help),
                    None => err.with_help(format!("valid keys are: {}", known.join(", "))),
                });
            }
        }
        Ok(())
    }

    pub fn get(&self, key: &str) -> Option<&'a SValue<'i>> {
        self.table.get(key)
    }

    pub fn err(&self, span: Span, message: impl Into<String>) -> ScenarioError {
        self.src.error(Some(span), message)
    }

    fn wrong_type(&self, key: &str, v: &SValue<'i>, expected: &str) -> ScenarioError {
        self.err(
            span_of(v),
            format!(
                "expected {expected} for '{key}' in {}, found {}",
                self.name,
                describe(v.get_ref())
            ),
        )
    }

    pub fn missing(&self, key: &str, what: &str) -> ScenarioError {
        self.err(self.span, format!("{} has no '{key}': {what}", self.name))
    }

    pub fn f64(&self, key: &str) -> Result<Option<(f64, Span)>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match number_value(v.get_ref()) {
            Some(x) => Ok(Some((x, span_of(v)))),
            None => Err(self.wrong_type(key, v, "a number")),
        }
    }

    /// A finite number satisfying `ok`, described by `requirement` ("> 0").
    pub fn f64_where(
        &self,
        key: &str,
        requirement: &str,
        ok: impl Fn(f64) -> bool,
    ) -> Result<Option<(f64, Span)>> {
        let Some((x, span)) = self.f64(key)? else {
            return Ok(None);
        };
        if !x.is_finite() || !ok(x) {
            return Err(self.err(
                span,
                format!("'{key}' in {} must be {requirement}, not {x}", self.name),
            ));
        }
        Ok(Some((x, span)))
    }

    pub fn int(&self, key: &str) -> Result<Option<(i64, Span)>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.get_ref() {
            DeValue::Integer(_) => {
                match integer_value(v.get_ref()).and_then(|i| i64::try_from(i).ok()) {
                    Some(i) => Ok(Some((i, span_of(v)))),
                    None => Err(self.err(span_of(v), format!("'{key}' is too large"))),
                }
            }
            _ => Err(self.wrong_type(key, v, "an integer")),
        }
    }

    /// An integer in `min..=max`.
    pub fn int_in(&self, key: &str, min: i64, max: i64) -> Result<Option<(i64, Span)>> {
        let Some((i, span)) = self.int(key)? else {
            return Ok(None);
        };
        if i < min || i > max {
            let range = if max == i64::MAX {
                format!("at least {min}")
            } else {
                format!("between {min} and {max}")
            };
            return Err(self.err(
                span,
                format!("'{key}' in {} must be {range}, not {i}", self.name),
            ));
        }
        Ok(Some((i, span)))
    }

    pub fn bool(&self, key: &str) -> Result<Option<(bool, Span)>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.get_ref() {
            DeValue::Boolean(b) => Ok(Some((*b, span_of(v)))),
            _ => Err(self.wrong_type(key, v, "true or false")),
        }
    }

    pub fn string(&self, key: &str) -> Result<Option<(String, Span)>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.get_ref() {
            DeValue::String(s) => Ok(Some((s.to_string(), span_of(v)))),
            _ => Err(self.wrong_type(key, v, "a string")),
        }
    }

    /// One of `choices` (a string), returned as its index.
    pub fn choice(&self, key: &str, choices: &[&str]) -> Result<Option<(usize, Span)>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let DeValue::String(s) = v.get_ref() else {
            return Err(self.wrong_type(key, v, &one_of(choices)));
        };
        match choices.iter().position(|c| *c == s.as_ref()) {
            Some(i) => Ok(Some((i, span_of(v)))),
            None => Err(unknown_choice(self.src, span_of(v), key, s, choices)),
        }
    }

    /// A string naming a file, or `false` for none (`true`: the default).
    pub fn file_or_false(&self, key: &str) -> Result<Option<(Option<String>, Span)>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.get_ref() {
            DeValue::String(s) if s.trim().is_empty() => Err(self.err(
                span_of(v),
                format!("'{key}' must be a file name or false, not an empty string"),
            )),
            DeValue::String(s) => Ok(Some((Some(s.to_string()), span_of(v)))),
            DeValue::Boolean(false) => Ok(Some((None, span_of(v)))),
            DeValue::Boolean(true) => Ok(None),
            _ => Err(self.wrong_type(key, v, "a file name or false")),
        }
    }

    /// An array of strings, each with its span.
    pub fn strings(&self, key: &str) -> Result<Option<(Strings, Span)>> {
        self.string_array(key, false)
    }

    /// Like [`Table::strings`], each text once: a text given again is
    /// left out (the first, with its span, stays). A list of millions of
    /// repeated entries then costs memory and work for its distinct ones
    /// (each entry's selection is the same wherever it is written).
    pub fn unique_strings(&self, key: &str) -> Result<Option<(Strings, Span)>> {
        self.string_array(key, true)
    }

    /// [`Table::strings`], or (`unique`) [`Table::unique_strings`].
    fn string_array(&self, key: &str, unique: bool) -> Result<Option<(Strings, Span)>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let DeValue::Array(items) = v.get_ref() else {
            return Err(self.wrong_type(key, v, "an array of strings"));
        };
        if let Some(lifted) = self.lifted(v, items, unique) {
            return Ok(Some((lifted, span_of(v))));
        }
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut out = Vec::new();
        for item in items.iter() {
            match item.get_ref() {
                DeValue::String(s) => {
                    if !unique || seen.insert(s.as_ref()) {
                        out.push((s.to_string(), span_of(item)));
                    }
                }
                _ => {
                    return Err(self.err(
                        span_of(item),
                        format!(
                            "expected a string in '{key}', found {}",
                            describe(item.get_ref())
                        ),
                    ));
                }
            }
        }
        Ok(Some((out, span_of(v))))
    }

    /// The strings of array `v` when they were read before the parser (it
    /// saw the array empty, `crate::long_arrays`), each text once if
    /// `unique`.
    fn lifted(
        &self,
        v: &SValue<'_>,
        items: &toml::de::DeArray<'_>,
        unique: bool,
    ) -> Option<Strings> {
        if !items.is_empty() {
            return None;
        }
        let elements = self.src.long_arrays.take(span_of(v).start)?;
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut out = Vec::new();
        for &(start, end) in elements.iter() {
            let span = Span::new(start as usize, end as usize);
            // (Quotes included; no escapes inside.)
            let text = self
                .src
                .text
                .get(span.start + 1..span.end - 1)
                .unwrap_or_default();
            if !unique || seen.insert(text) {
                out.push((text.to_string(), span));
            }
        }
        Some(out)
    }

    /// A sub-table (a `[a.b]` section or an inline table).
    pub fn table(&self, key: &str, name: &str, known: &[&str]) -> Result<Option<Table<'a, 'i>>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => Table::new(self.src, v, name, known).map(Some),
        }
    }

    /// An array of tables (`[[subsystems]]` or `subsystems = [{...}]`).
    pub fn tables(&self, key: &str, name: &str, known: &[&str]) -> Result<Vec<Table<'a, 'i>>> {
        let Some(v) = self.get(key) else {
            return Ok(Vec::new());
        };
        let DeValue::Array(items) = v.get_ref() else {
            return Err(self.err(
                span_of(v),
                format!(
                    "expected an array of tables for '{key}' (write [[{key}]]), found {}",
                    describe(v.get_ref())
                ),
            ));
        };
        items
            .iter()
            .map(|item| Table::new(self.src, item, name, known))
            .collect()
    }
}

pub(crate) fn one_of(choices: &[&str]) -> String {
    let quoted: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
    format!("one of {}", quoted.join(", "))
}

pub(crate) fn unknown_choice(
    src: &Source,
    span: Span,
    key: &str,
    value: &str,
    choices: &[&str],
) -> ScenarioError {
    let err = src.error(
        Some(span),
        format!(
            "unknown {key} \"{}\": expected {}",
            shorten(value),
            one_of(choices)
        ),
    );
    err.with_help_opt(did_you_mean(value, choices.iter().copied()))
}
