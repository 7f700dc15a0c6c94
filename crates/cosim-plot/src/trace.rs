//! Plots of traces (`cosim plot`, `cosim run --plot`): CSV files whose
//! first column is time and whose other headers are `name [unit]`.
//!
//! One panel per unit (columns without a unit, or of unit `1`, share the
//! last panel), time across, each column a colour (the same in every
//! file), each file a line style (solid, dashed, dotted, dash-dot, long
//! dashes), integer and Boolean columns (every cell an integer, `true` or
//! `false`) as steps, a reference drawn as a thin black line over the
//! columns it matches (as `cosim compare` matches them, among the plotted
//! columns: equal names, `sub.var` with `var`, or `--map`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use cosim_core::metrics::{Table, match_columns};
use globset::{Glob, GlobMatcher};

use crate::chart::{Axis, Colour, Dash, Entry, Figure, Panel, Series, Stroke, Swatch, palette};

/// Columns plotted at most unless told otherwise ([`Options::max_columns`]).
pub const DEFAULT_MAX_COLUMNS: usize = 20;

/// Why a plot could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// A file could not be read.
    #[error("cannot read {}: {error}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A file is not a trace.
    #[error("{}: line {line}: {message}", path.display())]
    NotATrace {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: u64,
        /// What is wrong there.
        message: String,
    },
    /// A `--columns` pattern is not a glob.
    #[error("--columns '{glob}': {message}")]
    BadGlob {
        /// The pattern.
        glob: String,
        /// Why.
        message: String,
    },
    /// A `--columns` pattern matches no column of any file.
    #[error("--columns '{glob}' matches no column (the columns are: {available})")]
    NoMatch {
        /// The pattern.
        glob: String,
        /// The columns of the files.
        available: String,
    },
    /// A `--map` argument is not `TRACE=REFERENCE`.
    #[error("--map {0}: expected TRACE_COLUMN=REFERENCE_COLUMN")]
    BadMap(String),
    /// The reference has no column matching a plotted one.
    #[error(
        "the reference {} matches none of the plotted columns; pair them with --map TRACE=REFERENCE (plotted: {plotted}; reference columns: {columns})",
        reference.display()
    )]
    NoReferenceMatch {
        /// The reference file.
        reference: PathBuf,
        /// The plotted columns.
        plotted: String,
        /// The reference's columns.
        columns: String,
    },
    /// The plot could not be written.
    #[error("cannot write the plot {}: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}

/// A column of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The name, without the unit.
    pub name: String,
    /// The unit (`m/s` of `chassis.v_c [m/s]`).
    pub unit: Option<String>,
    /// One value per row; `NaN` for an empty cell.
    pub values: Vec<f64>,
    /// Every cell an integer, `true` or `false`: drawn as steps.
    pub discrete: bool,
}

/// A trace read back: time and columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The file.
    pub path: PathBuf,
    /// The header of the time column, without its unit.
    pub time_name: String,
    /// The unit of the time column, if the header gives one.
    pub time_unit: Option<String>,
    /// The time of each row.
    pub time: Vec<f64>,
    /// The other columns.
    pub columns: Vec<Column>,
    /// Columns that hold text (a String variable's values), left out.
    pub text_columns: Vec<String>,
}

/// A header cell split into name and unit: `v [m/s]` -> (`v`, `m/s`).
/// The dimensionless units `1` and `-` count as none.
pub fn split_unit(header: &str) -> (&str, Option<&str>) {
    match header.rfind(" [") {
        Some(i) if header.ends_with(']') => {
            let unit = header[i + 2..header.len() - 1].trim();
            (
                header[..i].trim_end(),
                (!matches!(unit, "" | "1" | "-")).then_some(unit),
            )
        }
        _ => (header, None),
    }
}

fn is_integer_text(s: &str) -> bool {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

impl Trace {
    /// Reads a trace: a header row (`#` comment lines before it are
    /// skipped), then rows of numbers (`true` / `false` as 1 / 0; an empty
    /// cell is a gap), time non-decreasing. An error names the file and
    /// the line.
    pub fn read(path: &Path) -> Result<Trace, PlotError> {
        let file = std::fs::File::open(path).map_err(|error| PlotError::Open {
            path: path.to_path_buf(),
            error,
        })?;
        // `#` comment lines before the header are skipped here, so that
        // the CSV reader's line numbers need only this offset.
        let mut input = std::io::BufReader::new(file);
        let mut skipped = 0u64;
        loop {
            use std::io::BufRead;
            let starts_comment = input
                .fill_buf()
                .map_err(|error| PlotError::Open {
                    path: path.to_path_buf(),
                    error,
                })?
                .first()
                == Some(&b'#');
            if !starts_comment {
                break;
            }
            let mut line = Vec::new();
            input
                .read_until(b'\n', &mut line)
                .map_err(|error| PlotError::Open {
                    path: path.to_path_buf(),
                    error,
                })?;
            skipped += 1;
        }
        let not_a_trace = |line: u64, message: String| PlotError::NotATrace {
            path: path.to_path_buf(),
            line: line + skipped,
            message,
        };
        let csv_error = |e: csv::Error| {
            let line = e.position().map_or(1, |p| p.line());
            let message = match e.kind() {
                csv::ErrorKind::Utf8 { .. } => {
                    "not text (invalid UTF-8): a trace is a CSV file".to_string()
                }
                csv::ErrorKind::Io(io) => format!("cannot read: {io}"),
                _ => e.to_string(),
            };
            not_a_trace(line, message)
        };
        let mut reader = csv::ReaderBuilder::new()
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(input);
        let header = reader.headers().map_err(csv_error)?.clone();
        let header_line = header.position().map_or(1, |p| p.line());
        if header.iter().all(str::is_empty) {
            return Err(not_a_trace(
                header_line,
                "no header row: a trace starts with one (time, then a name per column)".into(),
            ));
        }
        if header.len() < 2 {
            return Err(not_a_trace(
                header_line,
                format!(
                    "the header '{}' has one column; a trace has time and at least one more",
                    &header[0]
                ),
            ));
        }
        if header.iter().all(|h| h.parse::<f64>().is_ok()) {
            return Err(not_a_trace(
                header_line,
                "the first row holds numbers, not names: a trace starts with a header row".into(),
            ));
        }
        if let Some(c) = header.iter().position(str::is_empty) {
            return Err(not_a_trace(
                header_line,
                format!("column {} of the header has no name", c + 1),
            ));
        }
        let (time_name, time_unit) = split_unit(&header[0]);
        let mut columns: Vec<Column> = header
            .iter()
            .skip(1)
            .map(|h| {
                let (name, unit) = split_unit(h);
                Column {
                    name: name.to_string(),
                    unit: unit.map(str::to_string),
                    values: Vec::new(),
                    discrete: true,
                }
            })
            .collect();
        // A column without a unit with a value that is no number holds
        // text (cosim writes String variables quoted, Binary ones as
        // hexadecimal digits, which may look like numbers at first, `00`):
        // it is left out of the figure. A column with a unit holds
        // numbers: a cell that is none is an error.
        let mut text = vec![false; columns.len()];
        let mut time = Vec::new();
        let mut last_line = header_line;
        for record in reader.records() {
            let record = record.map_err(csv_error)?;
            let line = record.position().map_or(last_line + 1, |p| p.line());
            if record.len() != header.len() {
                return Err(not_a_trace(
                    line,
                    format!(
                        "{} cells where the header has {} columns",
                        record.len(),
                        header.len()
                    ),
                ));
            }
            let mut cells = record.iter();
            let t_cell = cells.next().unwrap_or_default();
            let t: f64 = t_cell
                .parse()
                .map_err(|_| not_a_trace(line, format!("time '{t_cell}' is not a number")))?;
            if !t.is_finite() {
                return Err(not_a_trace(line, format!("time '{t_cell}' is not finite")));
            }
            if let Some(&prev) = time.last()
                && t < prev
            {
                return Err(not_a_trace(
                    line,
                    format!(
                        "time {t_cell} is before the time of the row above ({prev}): a trace's time never decreases"
                    ),
                ));
            }
            time.push(t);
            for ((cell, column), text) in cells.zip(columns.iter_mut()).zip(&mut text) {
                if !*text
                    && column.unit.is_none()
                    && !matches!(cell, "" | "true" | "false")
                    && cell.parse::<f64>().is_err()
                {
                    *text = true;
                    column.values.iter_mut().for_each(|v| *v = f64::NAN);
                }
                if *text {
                    column.values.push(f64::NAN);
                    continue;
                }
                let v = match cell {
                    "true" => 1.0,
                    "false" => 0.0,
                    // No value (cosim writes NaN as an empty cell).
                    "" => f64::NAN,
                    _ => {
                        if column.discrete && !is_integer_text(cell) {
                            column.discrete = false;
                        }
                        cell.parse::<f64>().map_err(|_| {
                            not_a_trace(
                                line,
                                format!("column '{}': '{cell}' is not a number", column.name),
                            )
                        })?
                    }
                };
                column.values.push(v);
            }
            last_line = line;
        }
        if time.is_empty() {
            return Err(not_a_trace(
                header_line + 1,
                "no rows after the header: nothing to plot".into(),
            ));
        }
        let text_columns = columns
            .iter()
            .zip(&text)
            .filter(|(_, t)| **t)
            .map(|(c, _)| c.name.clone())
            .collect();
        let columns = columns
            .into_iter()
            .zip(&text)
            .filter(|(_, t)| !**t)
            .map(|(c, _)| c)
            .collect();
        Ok(Trace {
            text_columns,
            path: path.to_path_buf(),
            time_name: time_name.to_string(),
            time_unit: time_unit.map(str::to_string),
            time,
            columns,
        })
    }

    /// A column by name.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The trace as a `cosim compare` table (names without units).
    fn table(&self) -> Table {
        let all: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
        self.table_of(&all)
    }

    /// The time and the columns named `names` (those it has) as a
    /// `cosim compare` table.
    fn table_of(&self, names: &[&str]) -> Table {
        let columns: Vec<&Column> = names.iter().filter_map(|n| self.column(n)).collect();
        Table {
            names: std::iter::once(self.time_name.clone())
                .chain(columns.iter().map(|c| c.name.clone()))
                .collect(),
            columns: std::iter::once(self.time.clone())
                .chain(columns.iter().map(|c| c.values.clone()))
                .collect(),
        }
    }
}

/// Names for files in titles and keys: the file stem; with the parent
/// directory's name when the stem is `trace` (every run's trace is
/// `trace.csv`) or when two files would share a name.
pub fn labels(paths: &[PathBuf]) -> Vec<String> {
    let stem = |p: &Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.display().to_string())
    };
    let with_parent = |p: &Path| {
        let parent = p
            .canonicalize()
            .ok()
            .as_deref()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .map(|s| s.to_string_lossy().into_owned());
        match parent {
            Some(d) => format!("{d}/{}", stem(p)),
            None => stem(p),
        }
    };
    let stems: Vec<String> = paths.iter().map(|p| stem(p)).collect();
    let mut out: Vec<String> = paths
        .iter()
        .zip(&stems)
        .map(|(p, s)| {
            if s == "trace" || stems.iter().filter(|t| *t == s).count() > 1 {
                with_parent(p)
            } else {
                s.clone()
            }
        })
        .collect();
    // Still equal (the same file twice, or equal directory names): number them.
    for i in 0..out.len() {
        if out.iter().filter(|o| **o == out[i]).count() > 1 {
            let base = out[i].clone();
            let mut n = 0;
            for o in out.iter_mut().filter(|o| **o == base) {
                n += 1;
                *o = format!("{base} ({n})");
            }
        }
    }
    out
}

/// What to plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Column globs (`chassis.*`, `*.v_?`, `{a,b}.x`), matched against
    /// the names without units; several per string separated by commas
    /// (not inside `{a,b}`). Empty: every column.
    pub columns: Vec<String>,
    /// A reference to draw over the columns it matches.
    pub reference: Option<PathBuf>,
    /// Explicit pairs `TRACE=REFERENCE` (as `cosim compare --map`).
    pub map: Vec<String>,
    /// The title (default: the files' names).
    pub title: Option<String>,
    /// Columns plotted at most (0: no limit); a note says what was left out.
    pub max_columns: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            columns: Vec::new(),
            reference: None,
            map: Vec::new(),
            title: None,
            max_columns: DEFAULT_MAX_COLUMNS,
        }
    }
}

/// A plot made: the figure and what it shows.
#[derive(Debug, Clone)]
pub struct Plot {
    /// The figure.
    pub figure: Figure,
    /// The plotted columns, in order.
    pub columns: Vec<String>,
    /// The panels' units (`None`: columns without a unit).
    pub units: Vec<Option<String>>,
    /// Notes for the user (columns left out, files without plotted columns).
    pub notes: Vec<String>,
}

impl Plot {
    /// Writes the SVG.
    pub fn write(&self, path: &Path) -> Result<(), PlotError> {
        self.figure.write(path).map_err(|error| PlotError::Write {
            path: path.to_path_buf(),
            error,
        })
    }
}

/// Splits `a,b{c,d},e` at the commas outside braces.
fn split_globs(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut current) = (0i32, String::new());
    for c in s.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current);
    out.into_iter()
        .map(|g| g.trim().to_string())
        .filter(|g| !g.is_empty())
        .collect()
}

/// A list for a message, cut after 40 entries.
fn listing(names: &[String]) -> String {
    if names.len() <= 40 {
        names.join(", ")
    } else {
        format!("{}, and {} more", names[..40].join(", "), names.len() - 40)
    }
}

/// Reads `files` (and the reference) and makes their figure.
pub fn plot(files: &[PathBuf], options: &Options) -> Result<Plot, PlotError> {
    let traces: Vec<Trace> = files
        .iter()
        .map(|f| Trace::read(f))
        .collect::<Result<_, _>>()?;
    plot_traces(&traces, options)
}

/// Makes the figure of traces already read.
pub fn plot_traces(traces: &[Trace], options: &Options) -> Result<Plot, PlotError> {
    let paths: Vec<PathBuf> = traces.iter().map(|t| t.path.clone()).collect();
    let labels = labels(&paths);
    // Every column, in order of first appearance, with its unit there.
    let mut all: Vec<(String, Option<String>)> = Vec::new();
    for t in traces {
        for c in &t.columns {
            if !all.iter().any(|(n, _)| *n == c.name) {
                all.push((c.name.clone(), c.unit.clone()));
            }
        }
    }
    let names: Vec<String> = all.iter().map(|(n, _)| n.clone()).collect();
    let mut selected: Vec<(String, Option<String>)> = if options.columns.is_empty() {
        all.clone()
    } else {
        let mut matchers: Vec<GlobMatcher> = Vec::new();
        for glob in options.columns.iter().flat_map(|g| split_globs(g)) {
            let m = Glob::new(&glob)
                .map_err(|e| PlotError::BadGlob {
                    glob: glob.clone(),
                    message: e.kind().to_string(),
                })?
                .compile_matcher();
            if !all.iter().any(|(n, _)| m.is_match(n)) {
                return Err(PlotError::NoMatch {
                    glob,
                    available: listing(&names),
                });
            }
            matchers.push(m);
        }
        all.iter()
            .filter(|(n, _)| matchers.iter().any(|m| m.is_match(n)))
            .cloned()
            .collect()
    };
    let mut notes = Vec::new();
    for (t, label) in traces.iter().zip(&labels) {
        if !t.text_columns.is_empty() {
            notes.push(format!(
                "{label}: {} hold{} text, not plotted",
                t.text_columns.join(", "),
                if t.text_columns.len() == 1 { "s" } else { "" }
            ));
        }
    }
    if options.max_columns > 0 && selected.len() > options.max_columns {
        notes.push(format!(
            "{} columns selected; the first {} are plotted (choose with --columns, or raise --max-columns)",
            selected.len(),
            options.max_columns
        ));
        selected.truncate(options.max_columns);
    }
    for (t, label) in traces.iter().zip(&labels) {
        if !selected.iter().any(|(n, _)| t.column(n).is_some()) {
            notes.push(format!("{label} has none of the plotted columns"));
        }
    }

    // The reference and its pairs.
    let reference = match &options.reference {
        Some(path) => Some(Trace::read(path)?),
        None => None,
    };
    let mut map = Vec::new();
    for m in &options.map {
        let (t, r) = m
            .split_once('=')
            .ok_or_else(|| PlotError::BadMap(m.clone()))?;
        map.push((t.trim().to_string(), r.trim().to_string()));
    }
    // Matched among the plotted columns only: `chassis.*` alone pairs
    // `chassis.v_c` with a reference's `v_c`, which `wheel.v_c` would
    // otherwise make ambiguous.
    let mut pairs: HashMap<String, String> = HashMap::new();
    if let Some(r) = &reference {
        let rt = r.table();
        let plotted: Vec<&str> = selected.iter().map(|(n, _)| n.as_str()).collect();
        for t in traces {
            for (tc, rc) in match_columns(&t.table_of(&plotted), &rt, &map) {
                if r.column(&rc).is_some() {
                    pairs.entry(tc).or_insert(rc);
                }
            }
        }
        if !selected.iter().any(|(n, _)| pairs.contains_key(n)) {
            return Err(PlotError::NoReferenceMatch {
                reference: r.path.clone(),
                plotted: listing(&selected.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>()),
                columns: listing(&r.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>()),
            });
        }
    }

    // Panels: one per unit in order of appearance, columns without a unit last.
    let mut groups: Vec<(Option<String>, Vec<String>)> = Vec::new();
    for (name, unit) in &selected {
        match groups.iter_mut().find(|(u, _)| u == unit) {
            Some((_, cols)) => cols.push(name.clone()),
            None => groups.push((unit.clone(), vec![name.clone()])),
        }
    }
    groups.sort_by_key(|(u, _)| u.is_none());

    let t0 = traces
        .iter()
        .filter_map(|t| t.time.first())
        .fold(f64::INFINITY, |a, &b| a.min(b));
    let t1 = traces
        .iter()
        .filter_map(|t| t.time.last())
        .fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let first = traces.first();
    let time_label = match first {
        Some(t) => format!(
            "{} [{}]",
            t.time_name,
            t.time_unit.as_deref().unwrap_or("s")
        ),
        None => "time [s]".into(),
    };
    let title = options.title.clone().unwrap_or_else(|| labels.join(" vs "));
    let mut figure = Figure::new(
        title,
        Axis {
            range: (t1 > t0).then_some((t0, t1)),
            ..Axis::linear(time_label)
        },
    );
    if traces.len() > 1 || reference.is_some() {
        for (f, label) in labels.iter().enumerate() {
            figure.key.push(Entry {
                label: label.clone(),
                swatch: Swatch::Line(Stroke {
                    colour: Colour::DARK,
                    width: 1.8,
                    dash: Dash::nth(f),
                }),
            });
        }
        if let Some(r) = &reference {
            figure.key.push(Entry {
                label: format!("reference: {}", labels_one(&r.path)),
                swatch: Swatch::Line(Stroke::solid(Colour::BLACK, 1.0)),
            });
        }
    }
    for (unit, cols) in &groups {
        let mut panel = Panel::new(Axis::linear(
            unit.clone().unwrap_or_else(|| "no unit".into()),
        ));
        for (k, name) in cols.iter().enumerate() {
            let colour = palette(k);
            for (f, (t, label)) in traces.iter().zip(&labels).enumerate() {
                let Some(c) = t.column(name) else { continue };
                let dash = Dash::nth(f);
                let mut s = Series::line(
                    t.time
                        .iter()
                        .copied()
                        .zip(c.values.iter().copied())
                        .collect(),
                    Stroke {
                        colour,
                        width: 1.8,
                        dash,
                    },
                );
                s.steps = c.discrete;
                s.tooltip = format!("{name} ({label})");
                s.data = vec![
                    ("column".into(), name.clone()),
                    ("file".into(), label.clone()),
                    ("dash".into(), dash.name().into()),
                ];
                panel.series.push(s);
            }
            let mut text = name.clone();
            if let (Some(r), Some(rc)) = (&reference, pairs.get(name))
                && let Some(c) = r.column(rc)
            {
                let points = clip_to(&r.time, &c.values, t0, t1);
                let mut s = Series::line(points, Stroke::solid(Colour::BLACK, 1.0));
                s.steps = c.discrete;
                s.class = "reference".into();
                s.tooltip = format!("reference {rc} ({})", labels_one(&r.path));
                s.data = vec![
                    ("column".into(), name.clone()),
                    ("reference-column".into(), rc.clone()),
                ];
                panel.series.push(s);
                if rc != name {
                    text = format!("{name} (ref. {rc})");
                }
            }
            panel.legend.push(Entry {
                label: text,
                swatch: Swatch::Line(Stroke::solid(colour, 2.5)),
            });
        }
        figure.panels.push(panel);
    }
    if figure.panels.len() > 3 {
        figure.panel_height = 190.0;
    }
    figure.notes = notes.clone();
    Ok(Plot {
        figure,
        columns: selected.into_iter().map(|(n, _)| n).collect(),
        units: groups.into_iter().map(|(u, _)| u).collect(),
        notes,
    })
}

fn labels_one(path: &Path) -> String {
    labels(&[path.to_path_buf()]).pop().unwrap_or_default()
}

/// The points of a column within `[t0, t1]`, with one point beyond each
/// end so that the line reaches the edges.
fn clip_to(time: &[f64], values: &[f64], t0: f64, t1: f64) -> Vec<(f64, f64)> {
    let start = time.partition_point(|&t| t < t0).saturating_sub(1);
    let end = (time.partition_point(|&t| t <= t1) + 1).min(time.len());
    time[start..end]
        .iter()
        .copied()
        .zip(values[start..end].iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn units_split_like_compare_strips_them() {
        assert_eq!(
            split_unit("chassis.v_c [m/s]"),
            ("chassis.v_c", Some("m/s"))
        );
        assert_eq!(split_unit("time"), ("time", None));
        assert_eq!(split_unit("a[1]"), ("a[1]", None));
        assert_eq!(split_unit("x []"), ("x", None));
        assert_eq!(split_unit("n [1]"), ("n", None));
    }

    #[test]
    fn traces_read_with_units_and_discrete_columns() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "t.csv",
            "# made by hand\ntime,on,x [m],n\n0.0,true,1.5,1\n0.5,false,2.0,-2\n",
        );
        let t = Trace::read(&p).unwrap();
        assert_eq!(t.time, [0.0, 0.5]);
        assert!(t.columns[0].discrete && !t.columns[1].discrete && t.columns[2].discrete);
        assert_eq!(t.columns[1].unit.as_deref(), Some("m"));
        assert_eq!(t.columns[0].values, [1.0, 0.0]);
    }

    #[test]
    fn a_file_that_is_not_a_trace_is_named_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                "a.csv",
                "time,x [m]\n0,1\n1,zz\n",
                "line 3",
                "'zz' is not a number",
            ),
            ("b.csv", "time,x\n0,1\n1,2,3\n", "line 3", "3 cells"),
            ("c.csv", "time,x\n1,1\n0,2\n", "line 3", "never decreases"),
            (
                "d.toml",
                "# c\n[simulation]\nstop = 1\n",
                "line 2",
                "one column",
            ),
            ("e.csv", "", "line 1", "no header"),
            ("f.csv", "time,x\n", "line 2", "no rows"),
            ("g.csv", "0,1\n1,2\n", "line 1", "numbers, not names"),
        ];
        for (name, text, line, what) in cases {
            let p = write(dir.path(), name, text);
            let e = Trace::read(&p).unwrap_err().to_string();
            assert!(
                e.contains(name) && e.contains(line) && e.contains(what),
                "{name}: {e}"
            );
        }
        std::fs::write(dir.path().join("h.csv"), b"time,x\n0,\xff\xfe\n").unwrap();
        let e = Trace::read(&dir.path().join("h.csv"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("UTF-8"), "{e}");
    }

    /// A column without a unit with a cell that is no number is text,
    /// however its first cells read (a Binary's hexadecimal digits).
    #[test]
    fn a_unitless_column_with_text_in_any_row_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "t.csv", "time,x,b\n0,1,00\n1,2,deadbeef\n");
        let t = Trace::read(&p).unwrap();
        assert_eq!(t.text_columns, ["b"]);
        assert_eq!(t.columns.len(), 1);
        assert_eq!(t.columns[0].values, [1.0, 2.0]);
    }

    #[test]
    fn globs_split_outside_braces() {
        assert_eq!(split_globs("a.*, b{1,2} ,c"), ["a.*", "b{1,2}", "c"]);
    }

    #[test]
    fn labels_use_the_directory_for_run_traces() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["r1", "r2"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
            write(&dir.path().join(d), "trace.csv", "time,x\n0,1\n");
        }
        let l = labels(&[
            dir.path().join("r1/trace.csv"),
            dir.path().join("r2/trace.csv"),
            dir.path().join("r1/ref.csv"),
        ]);
        assert_eq!(l, ["r1/trace", "r2/trace", "ref"]);
    }

    #[test]
    fn selection_grouping_and_reference() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(
            dir.path(),
            "a.csv",
            "time,s.x [m],s.v [m/s],s.on\n0,0,1,0\n1,1,1,1\n2,2,1,1\n",
        );
        let r = write(dir.path(), "ref.csv", "time,x,v\n0,0,1\n2,2,1\n");
        let p = plot(
            std::slice::from_ref(&a),
            &Options {
                reference: Some(r.clone()),
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(p.units, [Some("m".into()), Some("m/s".into()), None]);
        let svg = p.figure.svg();
        assert_eq!(svg.matches(r#"<g class="reference""#).count(), 2);
        let p = plot(
            std::slice::from_ref(&a),
            &Options {
                columns: vec!["*.x,s.{v,w}".into()],
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(p.columns, ["s.x", "s.v"]);
        let e = plot(
            std::slice::from_ref(&a),
            &Options {
                columns: vec!["s.x".into(), "wheel.*".into()],
                ..Options::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("'wheel.*'") && e.contains("s.x, s.v, s.on"),
            "{e}"
        );
        let p = plot(
            std::slice::from_ref(&a),
            &Options {
                max_columns: 2,
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(p.columns.len(), 2);
        assert!(p.notes[0].contains("3 columns selected"), "{:?}", p.notes);
    }
}
