//! The summary table: one row per run, a fixed column order, every cell
//! formatted deterministically, so that merged shards reproduce an
//! unsharded sweep byte for byte (the wall time is the last column, the
//! only one that differs).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::error::SweepError;

/// Columns before the axis columns.
pub const LEAD: &[&str] = &["index", "run", "stage"];
/// Columns after the axis columns.
pub const MIDDLE: &[&str] = &[
    "status",
    "master",
    "t_reached",
    "macro_steps",
    "rejected_steps",
    "do_step_calls",
    "mean_step",
    "max_indicator",
    "growth",
    "max_abs_output",
];
/// The power-bond metrics against the reference (sadjina2016 / B1).
pub const BOND_METRICS: &[&str] = &[
    "mean_abs_power_error",
    "integral_residual_power",
    "mean_transmitted_power",
];
/// The last columns: the message and the wall time (which alone differs
/// from one execution to the next).
pub const TAIL: &[&str] = &["message", "wall_time_s"];
/// Prefix of the final cumulative residual energy of a bond.
pub const RESIDUAL_ENERGY: &str = "residual_energy:";
/// Prefix of the largest absolute error of a trace column.
pub const MAX_ABS: &str = "max_abs:";
/// Prefix of the RMS error of a trace column.
pub const RMS: &str = "rms:";

/// A summary table (every cell as text).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// Column names in order.
    pub columns: Vec<String>,
    /// Rows, ordered by run index; each has one cell per column.
    pub rows: Vec<Vec<String>>,
}

/// One run's cells by column name.
pub type Cells = Vec<(String, String)>;

fn rank(name: &str, axes: &[String]) -> (u8, usize, String) {
    if let Some(i) = LEAD.iter().position(|c| *c == name) {
        return (0, i, String::new());
    }
    if let Some(i) = axes.iter().position(|c| c == name) {
        return (1, i, String::new());
    }
    if let Some(i) = MIDDLE.iter().position(|c| *c == name) {
        return (2, i, String::new());
    }
    if let Some(bond) = name.strip_prefix(RESIDUAL_ENERGY) {
        return (3, 0, bond.to_string());
    }
    if let Some(col) = name.strip_prefix(MAX_ABS) {
        return (4, 0, format!("{col}\u{0}0"));
    }
    if let Some(col) = name.strip_prefix(RMS) {
        return (4, 0, format!("{col}\u{0}1"));
    }
    if let Some(i) = BOND_METRICS.iter().position(|c| *c == name) {
        return (5, i, String::new());
    }
    if let Some(i) = TAIL.iter().position(|c| *c == name) {
        return (7, i, String::new());
    }
    (6, 0, name.to_string())
}

impl Summary {
    /// Builds the table from each run's cells: the columns are the union
    /// over all rows in the fixed order (lead, axes in sweep order, run
    /// figures, residual energies by bond, errors by column, bond metrics,
    /// other columns by name, message, wall time); rows sorted by index;
    /// a cell a row does not have is empty.
    pub fn build(rows: Vec<Cells>, axes: &[String]) -> Summary {
        let mut names: BTreeSet<(u8, usize, String, String)> = BTreeSet::new();
        // The index and the axes even without a row (an empty shard: more
        // shards than runs), so that the file is a summary still.
        for name in std::iter::once("index").chain(axes.iter().map(String::as_str)) {
            let (a, b, c) = rank(name, axes);
            names.insert((a, b, c, name.to_string()));
        }
        for row in &rows {
            for (name, _) in row {
                let (a, b, c) = rank(name, axes);
                names.insert((a, b, c, name.clone()));
            }
        }
        let columns: Vec<String> = names.into_iter().map(|(.., n)| n).collect();
        let position: HashMap<&str, usize> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.as_str(), i))
            .collect();
        let mut table: Vec<(u64, Vec<String>)> = rows
            .iter()
            .map(|row| {
                let mut cells = vec![String::new(); columns.len()];
                let mut index = u64::MAX;
                for (name, value) in row {
                    if let Some(&c) = position.get(name.as_str())
                        && let Some(cell) = cells.get_mut(c)
                    {
                        cell.clone_from(value);
                    }
                    if name == "index" {
                        index = value.parse().unwrap_or(u64::MAX);
                    }
                }
                (index, cells)
            })
            .collect();
        table.sort_by_key(|(i, _)| *i);
        Summary {
            columns,
            rows: table.into_iter().map(|(_, r)| r).collect(),
        }
    }

    /// The rows as cells by name (the inverse of [`Summary::build`]).
    pub fn cells(&self) -> Vec<Cells> {
        self.rows
            .iter()
            .map(|row| {
                self.columns
                    .iter()
                    .zip(row)
                    .map(|(c, v)| (c.clone(), v.clone()))
                    .collect()
            })
            .collect()
    }

    /// The position of a column.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// A column's cells.
    pub fn column(&self, name: &str) -> Option<Vec<&str>> {
        let c = self.column_index(name)?;
        Some(
            self.rows
                .iter()
                .map(|r| r.get(c).map_or("", String::as_str))
                .collect(),
        )
    }

    /// A cell.
    pub fn cell(&self, row: usize, name: &str) -> Option<&str> {
        let c = self.column_index(name)?;
        self.rows.get(row)?.get(c).map(String::as_str)
    }

    /// The CSV text (RFC 4180 quoting, `\n` line ends).
    pub fn to_csv(&self) -> Result<String, String> {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        w.write_record(&self.columns).map_err(|e| e.to_string())?;
        for row in &self.rows {
            w.write_record(row).map_err(|e| e.to_string())?;
        }
        let bytes = w.into_inner().map_err(|e| e.to_string())?;
        String::from_utf8(bytes).map_err(|e| e.to_string())
    }

    /// Writes the CSV file.
    pub fn write(&self, path: &Path) -> Result<(), SweepError> {
        let text = self
            .to_csv()
            .map_err(|e| SweepError::io(path, std::io::Error::other(e)))?;
        write_atomic(path, text.as_bytes()).map_err(|e| SweepError::io(path, e))
    }

    /// Reads a summary CSV back.
    pub fn read(path: &Path) -> Result<Summary, SweepError> {
        let bad = |e: String| {
            SweepError::io(
                path,
                std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            )
        };
        let mut r = csv::ReaderBuilder::new()
            .from_path(path)
            .map_err(|e| bad(e.to_string()))?;
        let columns: Vec<String> = r
            .headers()
            .map_err(|e| bad(e.to_string()))?
            .iter()
            .map(str::to_string)
            .collect();
        if columns.first().map(String::as_str) != Some("index") {
            return Err(bad(
                "not a sweep summary (the first column is not 'index')".into()
            ));
        }
        let mut rows = Vec::new();
        for record in r.records() {
            let record = record.map_err(|e| bad(e.to_string()))?;
            rows.push(record.iter().map(str::to_string).collect());
        }
        Ok(Summary { columns, rows })
    }
}

/// The summary while the sweep runs: every run's row is in the file as
/// soon as the run has ended (in the order runs end), so a sweep that is
/// killed leaves the rows of its finished runs. A row is appended; one
/// with a column the file does not have yet rewrites the file with it.
/// The sweep writes the final, sorted table over it at the end.
pub(crate) struct LiveSummary {
    path: PathBuf,
    axes: Vec<String>,
    rows: Vec<Cells>,
    columns: Vec<String>,
    file: Option<std::fs::File>,
}

impl LiveSummary {
    /// The summary at `path`, empty for now: a summary an earlier sweep
    /// left there is removed (it would pass for this one's).
    pub(crate) fn new(path: &Path, axes: &[String]) -> Result<LiveSummary, SweepError> {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(SweepError::io(path, e));
            }
            _ => {}
        }
        Ok(LiveSummary {
            path: path.to_path_buf(),
            axes: axes.to_vec(),
            rows: Vec::new(),
            columns: Vec::new(),
            file: None,
        })
    }

    /// Adds a run's row to the file. A failed write is left to the final
    /// summary to report (it writes every row again).
    pub(crate) fn add(&mut self, cells: &Cells) {
        self.rows.push(cells.clone());
        let fits = cells.iter().all(|(c, _)| self.columns.contains(c));
        let written = match (&mut self.file, fits) {
            (Some(file), true) => append_row(file, &self.columns, cells),
            _ => self.rewrite(),
        };
        if let Err(e) = written {
            tracing::warn!("{}: {e}", self.path.display());
            self.file = None;
        }
    }

    fn rewrite(&mut self) -> std::io::Result<()> {
        let summary = Summary::build(self.rows.clone(), &self.axes);
        let text = summary.to_csv().map_err(std::io::Error::other)?;
        write_atomic(&self.path, text.as_bytes())?;
        self.columns = summary.columns;
        self.file = Some(std::fs::OpenOptions::new().append(true).open(&self.path)?);
        Ok(())
    }
}

/// Appends one row, its cells in `columns`' order, with one write.
fn append_row(file: &mut std::fs::File, columns: &[String], cells: &Cells) -> std::io::Result<()> {
    use std::io::Write;
    let row: Vec<&str> = columns
        .iter()
        .map(|c| {
            cells
                .iter()
                .find(|(name, _)| name == c)
                .map_or("", |(_, v)| v.as_str())
        })
        .collect();
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record(&row).map_err(std::io::Error::other)?;
    let bytes = w
        .into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    file.write_all(&bytes)
}

/// Writes `path` whole or not at all: a temporary file in the same
/// directory, renamed over it (a full device leaves the old file, or none,
/// never half of the new one).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let result = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(pairs: &[(&str, &str)]) -> Cells {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn columns_follow_the_fixed_order_and_rows_the_index() {
        let axes = vec!["master.step".to_string(), "master.kind".to_string()];
        let rows = vec![
            cells(&[
                ("wall_time_s", "0.5"),
                ("index", "1"),
                ("rms:b.x", "2"),
                ("max_abs:b.x", "3"),
                ("max_abs:a.y", "3"),
                ("master.kind", "ecco"),
                ("status", "ok"),
                ("master.step", "0.001"),
                ("residual_energy:bond", "1"),
                ("mean_abs_power_error", "1"),
            ]),
            cells(&[
                ("index", "0"),
                ("status", "error"),
                ("message", "boom, \"x\""),
            ]),
        ];
        let s = Summary::build(rows, &axes);
        assert_eq!(
            s.columns,
            [
                "index",
                "master.step",
                "master.kind",
                "status",
                "residual_energy:bond",
                "max_abs:a.y",
                "max_abs:b.x",
                "rms:b.x",
                "mean_abs_power_error",
                "message",
                "wall_time_s"
            ]
        );
        assert_eq!(s.rows[0][0], "0");
        assert_eq!(s.rows[0][1], "");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.csv");
        s.write(&path).unwrap();
        let back = Summary::read(&path).unwrap();
        assert_eq!(back, s);
        assert_eq!(Summary::build(back.cells(), &axes), s);
    }
}
