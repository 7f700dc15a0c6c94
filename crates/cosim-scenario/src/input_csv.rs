//! Reading an input file: a CSV of time and values, the format fmusim and
//! FMPy read (`docs/scenario.md`, "Input files").
//!
//! The first line that is not empty or a `#` comment is the header: the
//! column names, the first one `time` (a unit in brackets, `time [s]`, is
//! allowed, as in cosim's own traces). Each further line is a row: as many
//! fields as the header, separated by commas: numbers (or `true` /
//! `false`); for an Int64 or UInt64 input whole numbers, read exactly over
//! the type's whole range; for a Binary input hexadecimal digits (`666f6f`,
//! as fmusim writes them); for a String input any text (quoted as CSV
//! quotes it). Times never decrease; two rows at one time make a jump.
//! Every problem is an error at its line and column of the file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosim_core::input_file::InputTable;
use cosim_fmi::Value;
use cosim_fmi::model_description::{Variable, VariableType};

use crate::error::{ScenarioError, Source, Span};

/// One field of a line: its text (unquoted) and where it is in the file.
#[derive(Debug, Clone)]
struct Field {
    text: String,
    span: Span,
}

/// Splits the line `line`, which starts at byte `offset` of the file, at
/// commas; a field may be quoted (`"a,b"`, `""` for a quote inside).
/// Fields are trimmed of surrounding blanks.
fn split_line(line: &str, offset: usize) -> Vec<Field> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    loop {
        // Leading blanks.
        while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
            i += 1;
        }
        let start = i;
        let mut text = String::new();
        if i < bytes.len() && bytes[i] == b'"' {
            i += 1;
            let mut seg = i;
            loop {
                match line[i..].find('"') {
                    None => {
                        text.push_str(&line[seg..]);
                        i = bytes.len();
                        break;
                    }
                    Some(k) => {
                        text.push_str(&line[seg..i + k]);
                        i += k + 1;
                        if i < bytes.len() && bytes[i] == b'"' {
                            text.push('"');
                            i += 1;
                            seg = i;
                        } else {
                            break;
                        }
                    }
                }
            }
            // Anything up to the comma belongs to the field (an error
            // for numbers, kept for names).
            let rest_end = line[i..].find(',').map_or(bytes.len(), |k| i + k);
            text.push_str(line[i..rest_end].trim_end());
            i = rest_end;
        } else {
            let end = line[i..].find(',').map_or(bytes.len(), |k| i + k);
            text.push_str(line[start..end].trim_end());
            i = end;
        }
        let end = start + line[start..i].trim_end().len();
        out.push(Field {
            text,
            span: Span::new(offset + start, offset + end.max(start)),
        });
        if i >= bytes.len() {
            break;
        }
        i += 1; // the comma
    }
    out
}

/// `name [unit]` -> `name`, when the name is followed by a bracketed unit
/// after a blank (cosim's trace headers); else the name itself.
pub(crate) fn strip_unit(name: &str) -> &str {
    if name.ends_with(']')
        && let Some(k) = name.rfind(" [")
    {
        return name[..k].trim_end();
    }
    name
}

/// A parsed input file.
#[derive(Debug)]
pub(crate) struct InputCsv {
    /// The file as shown in messages.
    pub path: PathBuf,
    source: Arc<Source>,
    /// The data columns' names as written (time excluded) and where.
    pub names: Vec<(String, Span)>,
    /// The rows.
    pub table: Arc<InputTable>,
    /// Per row, the byte offset of its line.
    row_starts: Vec<usize>,
    /// Per column, the first row written `true` or `false`.
    first_bool: Vec<Option<usize>>,
    /// Per column, the first row whose field is no number, and why: an
    /// error if the column feeds a number ([`InputCsv::check_column`]).
    first_text: Vec<Option<(usize, String)>>,
}

impl InputCsv {
    /// Reads and parses the file at `path`.
    pub fn read(path: &Path) -> Result<InputCsv, ScenarioError> {
        let fail =
            |message: String| Source::new(path.to_path_buf(), String::new()).error(None, message);
        let bytes =
            std::fs::read(path).map_err(|e| fail(format!("cannot read the input file: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            fail(format!(
                "the input file is not UTF-8 text (byte {} is not): expected a CSV of time and values",
                e.utf8_error().valid_up_to()
            ))
        })?;
        InputCsv::parse(path, text)
    }

    /// Parses `text`, read from `path`.
    pub fn parse(path: &Path, text: String) -> Result<InputCsv, ScenarioError> {
        let source = Source::new(path.to_path_buf(), text);
        let text = source.text.as_str();
        let err = |span: Span, message: String| source.error(Some(span), message);
        // Lines with their offsets, blank and comment lines left out.
        let mut lines = Vec::new();
        let mut offset = 0;
        for raw in text.split_inclusive('\n') {
            let start = offset;
            offset += raw.len();
            let mut line = raw.trim_end_matches(['\n', '\r']);
            let mut start = start;
            if start == 0 && line.starts_with('\u{feff}') {
                line = &line[3..];
                start = 3;
            }
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            lines.push((start, line));
        }
        let Some(&(header_start, header_line)) = lines.first() else {
            return Err(source
                .error(None, "the input file is empty: expected a header line (time, then the inputs' names) and rows of values")
                .with_help("e.g.\n      time,u\n      0,0\n      1,2"));
        };
        let header = split_line(header_line, header_start);
        let first = &header[0];
        if !strip_unit(&first.text).eq_ignore_ascii_case("time") {
            return Err(err(
                first.span,
                format!(
                    "the first column of an input file is the time, named 'time', not '{}'",
                    first.text
                ),
            )
            .with_help("the header names the columns: time, then one column per input (as fmusim and FMPy read them)"));
        }
        if header.len() < 2 {
            return Err(err(
                first.span,
                "the input file has no column after 'time'".into(),
            ));
        }
        let mut names: Vec<(String, Span)> = Vec::new();
        for f in &header[1..] {
            if f.text.is_empty() {
                return Err(err(f.span, "a column of the header has no name".into()));
            }
            if let Some((_, first)) = names.iter().find(|(n, _)| *n == f.text) {
                let (line, col) = source_line_col(&source, *first);
                return Err(err(
                    f.span,
                    format!("column '{}' is named twice (first at {line}:{col})", f.text),
                ));
            }
            names.push((f.text.clone(), f.span));
        }
        let n = names.len();
        let mut times = Vec::new();
        let mut values: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut row_starts = Vec::new();
        let mut first_bool: Vec<Option<usize>> = vec![None; n];
        let mut first_text: Vec<Option<(usize, String)>> = vec![None; n];
        let mut last_time: Option<(f64, Span)> = None;
        for &(start, line) in &lines[1..] {
            let fields = split_line(line, start);
            if fields.len() != n + 1 {
                let (span, what) = if fields.len() > n + 1 {
                    (fields[n + 1].span, "more")
                } else {
                    let end = start + line.trim_end().len();
                    (Span::new(end, end), "fewer")
                };
                return Err(err(
                    span,
                    format!(
                        "this row has {} fields, {what} than the header's {} (time and {n} columns)",
                        fields.len(),
                        n + 1
                    ),
                ));
            }
            let row = times.len();
            let t = number(&fields[0], false).map_err(|m| err(fields[0].span, m))?;
            if let Some((previous, span)) = last_time
                && t < previous
            {
                let (line, _) = source_line_col(&source, span);
                return Err(err(
                    fields[0].span,
                    format!(
                        "the time {} is before the time {} of line {line}: times must not decrease",
                        fields[0].text, previous
                    ),
                )
                .with_help("rows come in time order; two rows with the same time make a jump"));
            }
            last_time = Some((t, fields[0].span));
            times.push(t);
            for (c, f) in fields[1..].iter().enumerate() {
                // (A field that is no number is an error once known to
                // feed a number; Binary and String inputs read text.)
                let x = number(f, true).unwrap_or_else(|m| {
                    if first_text[c].is_none() {
                        first_text[c] = Some((row, format!("{m} in column '{}'", names[c].0)));
                    }
                    0.0
                });
                if is_bool_literal(&f.text) && first_bool[c].is_none() {
                    first_bool[c] = Some(row);
                }
                values[c].push(x);
            }
            row_starts.push(start);
        }
        if times.is_empty() {
            return Err(err(
                Span::new(header_start, header_start + header_line.len()),
                "the input file has a header but no rows of values".into(),
            ));
        }
        let table = InputTable::new(
            path.display().to_string(),
            names.iter().map(|(n, _)| n.clone()).collect(),
            times,
            values,
        )
        .map_err(|m| source.error(None, m))?;
        Ok(InputCsv {
            path: path.to_path_buf(),
            source,
            names,
            table: Arc::new(table),
            row_starts,
            first_bool,
            first_text,
        })
    }

    /// The fields of column `c`, one per row, as written (unquoted).
    fn fields(&self, c: usize) -> impl Iterator<Item = (usize, String)> + '_ {
        self.row_starts
            .iter()
            .enumerate()
            .map(move |(row, &start)| {
                let line = self.source.text[start..]
                    .split('\n')
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches('\r');
                let text = split_line(line, start)
                    .into_iter()
                    .nth(c + 1)
                    .map(|f| f.text)
                    .unwrap_or_default();
                (row, text)
            })
    }

    /// The values of column `c` for an input `v` set by value (Int64 and
    /// UInt64 exactly over their whole range, Binary from hexadecimal
    /// digits, String as written); the first field that is none is an
    /// error at its cell, quoting it as written.
    pub fn value_column(&self, c: usize, v: &Variable) -> Result<Vec<Value>, ScenarioError> {
        let name = &self.names[c].0;
        self.fields(c)
            .map(|(row, text)| {
                cell_value(&text, v.var_type).map_err(|why| {
                    self.cell_error(
                        row,
                        c,
                        format!(
                            "column '{name}' feeds the {} input '{}': {why}",
                            v.var_type, v.name
                        ),
                    )
                })
            })
            .collect()
    }

    /// The index of the column named `name` (as written, or without its
    /// `[unit]`).
    pub fn column(&self, name: &str) -> Option<usize> {
        self.names
            .iter()
            .position(|(n, _)| n == name)
            .or_else(|| self.names.iter().position(|(n, _)| strip_unit(n) == name))
    }

    /// An error at the header cell of column `c`.
    pub fn header_error(&self, c: usize, message: impl Into<String>) -> ScenarioError {
        self.source.error(self.names.get(c).map(|n| n.1), message)
    }

    /// An error at the cell of row `row`, column `c`.
    fn cell_error(&self, row: usize, c: usize, message: impl Into<String>) -> ScenarioError {
        let start = self.row_starts[row];
        let line = self.source.text[start..]
            .split(['\n'])
            .next()
            .unwrap_or_default()
            .trim_end_matches('\r');
        let span = split_line(line, start).get(c + 1).map(|f| f.span);
        self.source.error(span, message)
    }

    /// Checks that every field of column `c` is a number: the first that
    /// is none is an error at its cell.
    fn numbers(&self, c: usize) -> Result<(), ScenarioError> {
        match &self.first_text[c] {
            Some((row, why)) => Err(self.cell_error(*row, c, why.clone())),
            None => Ok(()),
        }
    }

    /// Checks that the values of column `c` fit the input `v`: numbers
    /// for a float, whole numbers within the type's range for an integer
    /// or enumeration, 0 / 1 / true / false for a Boolean. The first value
    /// that does not is an error at its cell.
    pub fn check_column(&self, c: usize, v: &Variable) -> Result<(), ScenarioError> {
        let values = self.table.column(c);
        let name = &self.names[c].0;
        self.numbers(c)?;
        match v.var_type {
            VariableType::Float64 | VariableType::Float32 => {
                if let Some(row) = self.first_bool[c] {
                    return Err(self.cell_error(
                        row,
                        c,
                        format!(
                            "column '{name}' feeds the {} input '{}': expected a number, found a Boolean",
                            v.var_type, v.name
                        ),
                    ));
                }
            }
            VariableType::Boolean => {
                if let Some(row) = values.iter().position(|&x| x != 0.0 && x != 1.0) {
                    return Err(self.cell_error(
                        row,
                        c,
                        format!(
                            "column '{name}' feeds the Boolean input '{}': expected 0, 1, true or false, found {}",
                            v.name, values[row]
                        ),
                    ));
                }
            }
            t => {
                let (lo, hi) = integer_range(t);
                // (Messages quote the field as written, not as a float.)
                let written = |row: usize| self.fields(c).nth(row).map(|f| f.1).unwrap_or_default();
                if let Some(row) = values.iter().position(|&x| x.fract() != 0.0) {
                    return Err(self.cell_error(
                        row,
                        c,
                        format!(
                            "column '{name}' feeds the {t} input '{}': expected a whole number, found {}",
                            v.name,
                            written(row)
                        ),
                    ));
                }
                if let Some(row) = values.iter().position(|&x| x < lo || x > hi) {
                    return Err(self.cell_error(
                        row,
                        c,
                        format!(
                            "column '{name}' feeds the {t} input '{}': {} is out of its range ({lo} to {hi})",
                            v.name,
                            written(row)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn source_line_col(source: &Source, span: Span) -> (usize, usize) {
    let d = source.error(Some(span), "");
    (d.line.unwrap_or(0), d.column.unwrap_or(0))
}

fn is_bool_literal(text: &str) -> bool {
    text.eq_ignore_ascii_case("true") || text.eq_ignore_ascii_case("false")
}

/// A field as a finite number (`bools`: also `true` / `false`, as 1 / 0);
/// `Err` says what is wrong.
fn number(f: &Field, bools: bool) -> Result<f64, String> {
    let text = f.text.as_str();
    if text.is_empty() {
        return Err("an empty field, expected a number".into());
    }
    if bools && is_bool_literal(text) {
        return Ok(if text.eq_ignore_ascii_case("true") {
            1.0
        } else {
            0.0
        });
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(_) => Err(format!("'{text}' is not a finite number")),
        Err(_) => Err(format!("'{text}' is not a number")),
    }
}

/// A field as the value of an input of type `t` set by value; `Err` says
/// why not, quoting the field as written.
fn cell_value(text: &str, t: VariableType) -> Result<Value, String> {
    let whole = |text: &str| -> Option<i128> {
        let t = text.strip_prefix('+').unwrap_or(text);
        t.parse::<i128>().ok().or_else(|| {
            // (A whole number written as a float, `3.0`, within the
            // integers a float holds exactly.)
            let x: f64 = t.parse().ok()?;
            (x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_992.0).then_some(x as i128)
        })
    };
    match t {
        VariableType::Int64 => whole(text)
            .and_then(|i| i64::try_from(i).ok())
            .map(Value::I64)
            .ok_or_else(|| {
                format!(
                    "'{text}' is no whole number from {} to {}",
                    i64::MIN,
                    i64::MAX
                )
            }),
        VariableType::UInt64 => whole(text)
            .and_then(|i| u64::try_from(i).ok())
            .map(Value::U64)
            .ok_or_else(|| format!("'{text}' is no whole number from 0 to {}", u64::MAX)),
        VariableType::Binary => {
            let digits = text
                .strip_prefix("0x")
                .or_else(|| text.strip_prefix("0X"))
                .unwrap_or(text);
            hex::decode(digits).map(Value::Binary).map_err(|_| {
                format!(
                    "'{text}' is no byte string in hexadecimal digits (two per byte, as 666f6f)"
                )
            })
        }
        VariableType::String => Ok(Value::Str(text.to_string())),
        other => Err(format!("{other} inputs are not set by value")),
    }
}

/// The values an integer type or enumeration holds (as `f64`; 64-bit
/// integers as far as the engine carries them exactly, 2^53).
fn integer_range(t: VariableType) -> (f64, f64) {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match t {
        VariableType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        VariableType::UInt8 => (0.0, u8::MAX.into()),
        VariableType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        VariableType::UInt16 => (0.0, u16::MAX.into()),
        VariableType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        VariableType::UInt32 => (0.0, u32::MAX.into()),
        VariableType::UInt64 => (0.0, EXACT),
        _ => (-EXACT, EXACT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<InputCsv, ScenarioError> {
        InputCsv::parse(Path::new("in.csv"), text.to_string())
    }

    fn place(e: &ScenarioError) -> (usize, usize) {
        (e.line.unwrap_or(0), e.column.unwrap_or(0))
    }

    #[test]
    fn a_plain_file_with_comments_quotes_units_and_a_jump() {
        let f = parse(
            "# a comment\n\"time [s]\", u ,\"sub.v [m/s]\",b\n0,0,1.5,false\n\n1,2,-1e-3,true\r\n1,3,0,1\n",
        )
        .unwrap();
        let names: Vec<&str> = f.names.iter().map(|n| n.0.as_str()).collect();
        assert_eq!(names, ["u", "sub.v [m/s]", "b"]);
        assert_eq!(f.column("sub.v"), Some(1));
        assert_eq!(f.table.times(), [0.0, 1.0, 1.0]);
        assert_eq!(f.table.column(2), [0.0, 1.0, 1.0]);
        assert_eq!(f.first_bool, [None, None, Some(0)]);
    }

    #[test]
    fn errors_name_the_line_and_column() {
        // (A field that is no number is an error once its column is
        // known to feed a number: Binary and String inputs read text.)
        let e = parse("time,u\n0,1\n1,x1\n")
            .unwrap()
            .numbers(0)
            .unwrap_err();
        assert_eq!(place(&e), (3, 3), "{e}");
        assert!(
            e.message.contains("'x1' is not a number in column 'u'"),
            "{e}"
        );
        let e = parse("time,u\n0,1\n1,2,3\n").unwrap_err();
        assert_eq!(place(&e), (3, 5), "{e}");
        assert!(
            e.message.contains("3 fields, more than the header's 2"),
            "{e}"
        );
        let e = parse("time,u,v\n0,1\n").unwrap_err();
        assert_eq!(place(&e), (2, 4), "{e}");
        let e = parse("time,u\n0,1\n2,1\n 1,1\n").unwrap_err();
        assert_eq!(place(&e), (4, 2), "{e}");
        assert!(e.message.contains("before the time 2 of line 3"), "{e}");
        let e = parse("t,u\n0,1\n").unwrap_err();
        assert_eq!(place(&e), (1, 1), "{e}");
        let e = parse("time,u,u\n0,1,2\n").unwrap_err();
        assert_eq!(place(&e), (1, 8), "{e}");
        let e = parse("time,u\n0,inf\n").unwrap().numbers(0).unwrap_err();
        assert!(e.message.contains("not a finite number"), "{e}");
        let e = parse("time,u\n").unwrap_err();
        assert!(e.message.contains("no rows"), "{e}");
        let e = parse("# nothing\n\n").unwrap_err();
        assert!(e.message.contains("empty"), "{e}");
        let e = parse("time,u\n0,\n").unwrap().numbers(0).unwrap_err();
        assert!(e.message.contains("empty field"), "{e}");
    }
}
