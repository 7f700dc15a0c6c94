//! Accuracy metrics of a run against a reference: reading the CSV outputs
//! back, interpolating a reference, and the metrics of sadjina2016 sec. IV
//! (docs/benchmarks.md B1): mean macro step, mean transmitted power, mean
//! absolute power error and integral of residual power.

use std::path::Path;

use crate::error::{CoreError, Result};

/// A CSV table whose first column is time, read back from a trace, an
/// energy log, a step log or a reference file. Headers with units
/// (`time [s]`, `step [s]`) and without (`time`, `step`, as cosim wrote
/// them before) read the same; an empty cell is NaN.
#[derive(Debug, Clone)]
pub struct Table {
    /// Column names without their ` [unit]` suffix (index 0 is time).
    pub names: Vec<String>,
    /// Column values, `columns[c][row]`.
    pub columns: Vec<Vec<f64>>,
}

fn bad(path: &Path, msg: String) -> CoreError {
    CoreError::Output {
        path: path.to_path_buf(),
        error: std::io::Error::new(std::io::ErrorKind::InvalidData, msg),
    }
}

/// The name of a header cell without its ` [unit]` suffix.
pub fn strip_unit(header: &str) -> &str {
    match header.rfind(" [") {
        Some(i) if header.ends_with(']') => &header[..i],
        _ => header,
    }
}

/// A cell's number as [`Table::read`] reads it: `true` and `false` as 1
/// and 0, an empty cell as NaN (no value: cosim writes NaN so); `None`
/// for text that is no number.
fn cell_number(cell: &str) -> Option<f64> {
    match cell.trim() {
        "true" => Some(1.0),
        "false" => Some(0.0),
        "" => Some(f64::NAN),
        other => other.parse::<f64>().ok(),
    }
}

/// A [`Table`] made row by row from the cells a CSV file is written with,
/// as [`Table::read`] reads that file back, bit for bit: a sweep's
/// metrics take a run's trace from memory instead of reading its file
/// again ([`crate::output::OutputsHandle::keep_table`]).
#[derive(Debug, Clone)]
pub struct TableBuilder {
    table: Table,
    /// A cell that is no number, or a time that is not finite or goes
    /// back: [`Table::read`] refuses such a file.
    refused: bool,
}

impl TableBuilder {
    /// An empty table with this header (units are stripped as
    /// [`Table::read`] strips them).
    pub fn new(header: &[String]) -> TableBuilder {
        TableBuilder {
            table: Table {
                names: header.iter().map(|h| strip_unit(h).to_string()).collect(),
                columns: vec![Vec::new(); header.len()],
            },
            refused: header.is_empty(),
        }
    }

    /// Appends a cell of column `c` holding the number `v` (as the file
    /// reads back: a `Float` cell's number, an `Integer` cell's integer).
    pub fn push_number(&mut self, c: usize, v: f64) {
        if c == 0 {
            let prev = self.table.columns[0].last().copied();
            if !v.is_finite() || prev.is_some_and(|p| v < p) {
                self.refused = true;
            }
        }
        if let Some(col) = self.table.columns.get_mut(c) {
            col.push(v);
        }
    }

    /// Appends a cell of column `c` holding `text` (unquoted).
    pub fn push_text(&mut self, c: usize, text: &str) {
        match cell_number(text) {
            Some(v) => self.push_number(c, v),
            None => self.refused = true,
        }
    }

    /// The table, or `None` where [`Table::read`] would refuse the file.
    pub fn finish(self) -> Option<Table> {
        (!self.refused).then_some(self.table)
    }
}

impl Table {
    /// Reads a CSV file with a header row and numeric cells.
    pub fn read(path: &Path) -> Result<Table> {
        Self::read_with_text(path, false).map(|(t, _)| t)
    }

    /// As [`Table::read`], leaving out the columns that hold text (a
    /// column without a unit with a value that is no number, in any row:
    /// a String variable's values, which cosim writes quoted, or a Binary
    /// variable's hexadecimal digits, whose first values may look like
    /// numbers, `00`); returns their names too. A column with a unit holds
    /// numbers: a cell that is none is an error.
    pub fn read_skipping_text(path: &Path) -> Result<(Table, Vec<String>)> {
        Self::read_with_text(path, true)
    }

    fn read_with_text(path: &Path, skip_text: bool) -> Result<(Table, Vec<String>)> {
        let mut reader = csv::Reader::from_path(path).map_err(|e| bad(path, e.to_string()))?;
        let headers = reader.headers().map_err(|e| bad(path, e.to_string()))?;
        let names: Vec<String> = headers.iter().map(|h| strip_unit(h).to_string()).collect();
        // (Text has no unit.)
        let has_unit: Vec<bool> = headers.iter().map(|h| strip_unit(h) != h).collect();
        let mut columns = vec![Vec::new(); names.len()];
        let mut text = vec![false; names.len()];
        for (row, record) in reader.records().enumerate() {
            let record = record.map_err(|e| bad(path, e.to_string()))?;
            // Time is a number that never decreases (what interpolating
            // and comparing rely on).
            if let (Some(cell), Some(&[.., prev])) =
                (record.get(0), columns.first().map(Vec::as_slice))
                && let Ok(t) = cell.trim().parse::<f64>()
                && t < prev
            {
                return Err(bad(
                    path,
                    format!(
                        "row {}: time {t} is before the time of the row above ({prev}): time never decreases",
                        row + 2
                    ),
                ));
            }
            for (c, cell) in record.iter().enumerate() {
                if skip_text && c > 0 && c < text.len() && !has_unit[c] {
                    let trimmed = cell.trim();
                    if !text[c]
                        && !matches!(trimmed, "" | "true" | "false")
                        && trimmed.parse::<f64>().is_err()
                    {
                        // (What was read of it as numbers goes too.)
                        text[c] = true;
                        columns[c].iter_mut().for_each(|v| *v = f64::NAN);
                    }
                    if text[c] {
                        columns[c].push(f64::NAN);
                        continue;
                    }
                }
                let v = cell_number(cell).ok_or_else(|| {
                    bad(
                        path,
                        format!(
                            "row {}, column '{}': '{}' is not a number",
                            row + 2,
                            names.get(c).map_or("?", |s| s.as_str()),
                            cell.trim()
                        ),
                    )
                })?;
                if c == 0 && !v.is_finite() {
                    return Err(bad(
                        path,
                        format!(
                            "row {}: the time '{}' is not a finite number",
                            row + 2,
                            cell.trim()
                        ),
                    ));
                }
                if let Some(col) = columns.get_mut(c) {
                    col.push(v);
                }
            }
        }
        if names.is_empty() {
            return Err(bad(path, "no header row".into()));
        }
        let text_names = names
            .iter()
            .zip(&text)
            .filter(|(_, t)| **t)
            .map(|(n, _)| n.clone())
            .collect();
        let (names, columns) = names
            .into_iter()
            .zip(columns)
            .zip(&text)
            .filter(|(_, t)| !**t)
            .map(|(nc, _)| nc)
            .unzip();
        Ok((Table { names, columns }, text_names))
    }

    /// The time column.
    pub fn time(&self) -> &[f64] {
        &self.columns[0]
    }

    /// A column by name (without unit).
    pub fn column(&self, name: &str) -> Option<&[f64]> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|c| self.columns[c].as_slice())
    }

    /// Column `c` linearly interpolated at `t` (clamped to the table's time
    /// range). The time column must be non-decreasing.
    pub fn interpolate(&self, c: usize, t: f64) -> f64 {
        let time = self.time();
        let col = &self.columns[c];
        if time.is_empty() {
            return f64::NAN;
        }
        let k = time.partition_point(|&x| x < t);
        if k == 0 {
            return col[0];
        }
        if k >= time.len() {
            return col[time.len() - 1];
        }
        let (t0, t1) = (time[k - 1], time[k]);
        if t1 == t || t1 == t0 {
            return col[k];
        }
        let w = (t - t0) / (t1 - t0);
        col[k - 1] + w * (col[k] - col[k - 1])
    }
}

/// The B1 metrics of one power bond (sadjina2016 Tables III-XII).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct BondMetrics {
    /// Mean macro step, s.
    pub mean_step: f64,
    /// Mean transmitted power `(1/T) sum P01(t_i) dt_i`, W.
    pub mean_transmitted_power: f64,
    /// Mean absolute power error `(1/T) sum |P01(t_i) - P01_ref(t_i)| dt_i`, W.
    pub mean_abs_power_error: f64,
    /// Integral of residual power `sum dE(t_i)`, J.
    pub integral_residual_power: f64,
    /// Macro steps counted.
    pub steps: usize,
}

/// Computes the B1 metrics of bond `bond` from an energy log (rows up to
/// `t_end`), with the reference transmitted power given as a function of
/// time.
pub fn bond_metrics(
    energy_log: &Table,
    bond: &str,
    t_end: f64,
    reference_power: impl Fn(f64) -> f64,
) -> std::result::Result<BondMetrics, String> {
    let col = |what: &str| {
        energy_log
            .column(&format!("{bond}.{what}"))
            .ok_or_else(|| format!("the energy log has no column '{bond}.{what}'"))
    };
    let time = energy_log.time();
    let dt = energy_log
        .column("step")
        .ok_or("the energy log has no 'step' column")?;
    let p = col("transmitted_power")?;
    let de = col("residual_energy")?;
    let (mut total_t, mut sum_p, mut sum_err, mut sum_de, mut steps) = (0.0, 0.0, 0.0, 0.0, 0);
    for i in 0..time.len() {
        if time[i] > t_end + 1e-12 * t_end.abs().max(1.0) {
            break;
        }
        total_t += dt[i];
        sum_p += p[i] * dt[i];
        sum_err += (p[i] - reference_power(time[i])).abs() * dt[i];
        sum_de += de[i];
        steps += 1;
    }
    if steps == 0 || total_t <= 0.0 {
        return Err("no macro step in the energy log".into());
    }
    Ok(BondMetrics {
        mean_step: total_t / steps as f64,
        mean_transmitted_power: sum_p / total_t,
        mean_abs_power_error: sum_err / total_t,
        integral_residual_power: sum_de,
        steps,
    })
}

/// Errors of one trace column against a reference column.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ColumnError {
    /// The trace column.
    pub column: String,
    /// The reference column it was compared with.
    pub reference: String,
    /// Largest absolute error.
    pub max_abs: f64,
    /// Root-mean-square error over the compared time points.
    pub rms: f64,
    /// Mean absolute error divided by the largest absolute reference value
    /// (a relative error that stays meaningful through zero crossings).
    pub mean_relative: f64,
    /// Time points compared.
    pub points: usize,
}

/// Compares trace columns with reference columns at the trace's time points
/// within `[from, until]`, interpolating the reference linearly. `pairs`
/// gives (trace column, reference column); see [`match_columns`].
pub fn compare_columns(
    trace: &Table,
    reference: &Table,
    pairs: &[(String, String)],
    from: f64,
    until: f64,
) -> std::result::Result<Vec<ColumnError>, String> {
    let mut out = Vec::new();
    for (tc, rc) in pairs {
        let y = trace
            .column(tc)
            .ok_or_else(|| format!("the trace has no column '{tc}'"))?;
        let c = reference
            .names
            .iter()
            .position(|n| n == rc)
            .ok_or_else(|| format!("the reference has no column '{rc}'"))?;
        let (mut max_abs, mut sum_sq, mut sum_abs, mut peak, mut n) = (0.0f64, 0.0, 0.0, 0.0f64, 0);
        for (&t, &v) in trace.time().iter().zip(y) {
            if t < from || t > until {
                continue;
            }
            let r = reference.interpolate(c, t);
            let e = (v - r).abs();
            max_abs = if e.is_nan() { f64::NAN } else { max_abs.max(e) };
            sum_sq += e * e;
            sum_abs += e;
            peak = peak.max(r.abs());
            n += 1;
        }
        if n == 0 {
            return Err(format!(
                "no time point of the trace within [{from}, {until}]"
            ));
        }
        out.push(ColumnError {
            column: tc.clone(),
            reference: rc.clone(),
            max_abs,
            rms: (sum_sq / n as f64).sqrt(),
            mean_relative: if peak > 0.0 {
                sum_abs / n as f64 / peak
            } else {
                f64::NAN
            },
            points: n,
        });
    }
    Ok(out)
}

/// A compared value out of tolerance: `|value - reference| > atol + rtol
/// |reference|`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Deviation {
    /// The time point.
    pub t: f64,
    /// The trace's value.
    pub value: f64,
    /// The reference's value there (interpolated).
    pub reference: f64,
}

/// The values of one column out of tolerance.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToleranceFailure {
    /// The trace column.
    pub column: String,
    /// The reference column.
    pub reference: String,
    /// How many of its compared values are out of tolerance.
    pub count: usize,
    /// The first one.
    pub first: Deviation,
    /// The one furthest out, relative to its allowed deviation.
    pub worst: Deviation,
}

/// The values of each paired column that deviate from the reference by
/// more than `atol + rtol |reference|` within `[from, until]` (a NaN
/// deviates); an empty list when every value is within tolerance.
pub fn tolerance_failures(
    trace: &Table,
    reference: &Table,
    pairs: &[(String, String)],
    (from, until): (f64, f64),
    (rtol, atol): (f64, f64),
) -> std::result::Result<Vec<ToleranceFailure>, String> {
    let mut out = Vec::new();
    for (tc, rc) in pairs {
        let y = trace
            .column(tc)
            .ok_or_else(|| format!("the trace has no column '{tc}'"))?;
        let c = reference
            .names
            .iter()
            .position(|n| n == rc)
            .ok_or_else(|| format!("the reference has no column '{rc}'"))?;
        let mut failure: Option<(ToleranceFailure, f64)> = None;
        for (&t, &v) in trace.time().iter().zip(y) {
            if t < from || t > until {
                continue;
            }
            let r = reference.interpolate(c, t);
            let allowed = atol + rtol * r.abs();
            let deviation = (v - r).abs();
            if deviation <= allowed {
                continue;
            }
            let here = Deviation {
                t,
                value: v,
                reference: r,
            };
            // How far out, for the worst: a NaN (or any deviation with
            // nothing allowed) is the worst of all.
            let excess = if allowed > 0.0 && !deviation.is_nan() {
                deviation / allowed
            } else {
                f64::INFINITY
            };
            match &mut failure {
                None => {
                    failure = Some((
                        ToleranceFailure {
                            column: tc.clone(),
                            reference: rc.clone(),
                            count: 1,
                            first: here,
                            worst: here,
                        },
                        excess,
                    ))
                }
                Some((f, worst)) => {
                    f.count += 1;
                    if excess > *worst {
                        *worst = excess;
                        f.worst = here;
                    }
                }
            }
        }
        out.extend(failure.map(|(f, _)| f));
    }
    Ok(out)
}

/// How trace and reference columns were paired ([`match_columns`]), and
/// what was left: for messages, so that nothing is skipped silently.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ColumnMatching {
    /// (trace column, reference column).
    pub pairs: Vec<(String, String)>,
    /// Reference columns that several trace columns could be (`var` and
    /// both `a.var` and `b.var`), with those candidates: pair them with a
    /// map.
    pub ambiguous: Vec<(String, Vec<String>)>,
    /// Reference columns matched by no trace column.
    pub unmatched_reference: Vec<String>,
    /// Trace columns compared with nothing.
    pub unmatched_trace: Vec<String>,
}

/// [`match_columns`], with what it could not pair.
pub fn match_columns_report(
    trace: &Table,
    reference: &Table,
    map: &[(String, String)],
) -> ColumnMatching {
    let pairs = match_columns(trace, reference, map);
    let mut m = ColumnMatching::default();
    for name in reference.names.iter().skip(1) {
        if pairs.iter().any(|(_, r)| r == name) {
            continue;
        }
        let suffix = format!(".{name}");
        let candidates: Vec<String> = trace
            .names
            .iter()
            .skip(1)
            .filter(|t| t.ends_with(&suffix))
            .cloned()
            .collect();
        if candidates.len() > 1 {
            m.ambiguous.push((name.clone(), candidates));
        } else {
            m.unmatched_reference.push(name.clone());
        }
    }
    m.unmatched_trace = trace
        .names
        .iter()
        .skip(1)
        .filter(|t| !pairs.iter().any(|(a, _)| a == *t))
        .cloned()
        .collect();
    m.pairs = pairs;
    m
}

/// Pairs trace columns with reference columns: explicit `map` entries
/// first, then equal names, then a trace column `sub.var` with a reference
/// column `var` when only one trace column ends in `.var`.
pub fn match_columns(
    trace: &Table,
    reference: &Table,
    map: &[(String, String)],
) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = map.to_vec();
    let taken = |pairs: &Vec<(String, String)>, t: &str| pairs.iter().any(|(a, _)| a == t);
    for name in reference.names.iter().skip(1) {
        if trace.names.iter().skip(1).any(|t| t == name) && !taken(&pairs, name) {
            pairs.push((name.clone(), name.clone()));
            continue;
        }
        let suffix = format!(".{name}");
        let candidates: Vec<&String> = trace
            .names
            .iter()
            .skip(1)
            .filter(|t| t.ends_with(&suffix))
            .collect();
        if let [only] = candidates.as_slice()
            && !taken(&pairs, only)
        {
            pairs.push(((*only).clone(), name.clone()));
        }
    }
    pairs
}

/// A product of reference columns with a sign, e.g. `-F_c*v_w`: the
/// reference transmitted power of a bond.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnProduct {
    sign: f64,
    columns: Vec<usize>,
}

impl ColumnProduct {
    /// Parses `[-]a*b*...` against the reference's column names.
    pub fn parse(expr: &str, reference: &Table) -> std::result::Result<Self, String> {
        let expr = expr.trim();
        let (sign, body) = match expr.strip_prefix('-') {
            Some(rest) => (-1.0, rest),
            None => (1.0, expr.strip_prefix('+').unwrap_or(expr)),
        };
        let mut columns = Vec::new();
        for factor in body.split('*') {
            let factor = factor.trim();
            let c = reference
                .names
                .iter()
                .position(|n| n == factor)
                .ok_or_else(|| {
                    format!(
                        "the reference has no column '{factor}' (it has: {})",
                        reference.names[1..].join(", ")
                    )
                })?;
            columns.push(c);
        }
        if columns.is_empty() {
            return Err(format!("'{expr}' names no column"));
        }
        Ok(ColumnProduct { sign, columns })
    }

    /// The product at time `t` (reference interpolated).
    pub fn at(&self, reference: &Table, t: f64) -> f64 {
        self.columns
            .iter()
            .fold(self.sign, |acc, &c| acc * reference.interpolate(c, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cosim compare` leaves out a column without a unit with a cell that
    /// is no number, in any row (a Binary's digits may read as a number at
    /// first); a column with a unit holds numbers.
    #[test]
    fn text_columns_are_left_out_and_numbers_with_units_checked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        std::fs::write(&p, "time,x [m],b,s\n0,1,00,\"a\"\n1,2,deadbeef,\"b\"\n").unwrap();
        let (t, text) = Table::read_skipping_text(&p).unwrap();
        assert_eq!(text, ["b", "s"]);
        assert_eq!(t.names, ["time", "x"]);
        assert_eq!(t.columns[1], [1.0, 2.0]);
        std::fs::write(&p, "time,x [m]\n0,1\n1,zz\n").unwrap();
        let e = Table::read_skipping_text(&p).unwrap_err().to_string();
        assert!(e.contains("'zz' is not a number"), "{e}");
    }

    #[test]
    fn strip_unit_keeps_plain_names_and_drops_units() {
        assert_eq!(strip_unit("chassis.v_c [m/s]"), "chassis.v_c");
        assert_eq!(strip_unit("time"), "time");
        assert_eq!(strip_unit("a[1]"), "a[1]");
    }

    #[test]
    fn headers_with_and_without_units_and_empty_cells_read_alike() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.csv");
        let old = dir.path().join("old.csv");
        std::fs::write(
            &new,
            "time [s],t_start [s],step [s],indicator [1],rejections [1]\n0.001,0.0,0.001,,0\n0.002,0.001,0.001,0.5,2\n",
        )
        .unwrap();
        std::fs::write(
            &old,
            "time,step,indicator,accepted,rejections\n0.0,0.001,NaN,true,0.0\n0.001,0.001,0.5,true,2.0\n",
        )
        .unwrap();
        let (new, old) = (Table::read(&new).unwrap(), Table::read(&old).unwrap());
        assert_eq!(new.names[0], "time");
        assert_eq!(old.names[0], "time");
        for t in [&new, &old] {
            assert_eq!(t.column("step").unwrap(), &[0.001, 0.001]);
            assert_eq!(t.column("rejections").unwrap(), &[0.0, 2.0]);
            let eps = t.column("indicator").unwrap();
            assert!(eps[0].is_nan() && eps[1] == 0.5);
        }
        assert_eq!(new.time(), &[0.001, 0.002]);
        assert_eq!(new.column("t_start").unwrap(), &[0.0, 0.001]);
    }

    #[test]
    fn interpolation_is_linear_and_clamped() {
        let t = Table {
            names: vec!["time".into(), "x".into()],
            columns: vec![vec![0.0, 1.0, 3.0], vec![0.0, 10.0, 30.0]],
        };
        assert_eq!(t.interpolate(1, 0.5), 5.0);
        assert_eq!(t.interpolate(1, 2.0), 20.0);
        assert_eq!(t.interpolate(1, -1.0), 0.0);
        assert_eq!(t.interpolate(1, 9.0), 30.0);
    }

    #[test]
    fn bond_metrics_follow_the_paper_definitions() {
        let t = Table {
            names: vec![
                "time".into(),
                "step".into(),
                "b.transmitted_power".into(),
                "b.residual_energy".into(),
            ],
            columns: vec![
                vec![1.0, 2.0, 4.0],
                vec![1.0, 1.0, 2.0],
                vec![2.0, -1.0, 3.0],
                vec![0.5, 0.25, -0.125],
            ],
        };
        let m = bond_metrics(&t, "b", 4.0, |_| 1.0).unwrap();
        assert_eq!(m.steps, 3);
        assert!((m.mean_step - 4.0 / 3.0).abs() < 1e-15);
        assert!((m.mean_transmitted_power - (2.0 - 1.0 + 6.0) / 4.0).abs() < 1e-15);
        assert!((m.mean_abs_power_error - (1.0 + 2.0 + 4.0) / 4.0).abs() < 1e-15);
        assert!((m.integral_residual_power - 0.625).abs() < 1e-15);
        let m = bond_metrics(&t, "b", 2.0, |_| 0.0).unwrap();
        assert_eq!(m.steps, 2);
    }
}

#[cfg(test)]
mod compare_tests {
    use super::*;

    fn table(names: &[&str], columns: Vec<Vec<f64>>) -> Table {
        Table {
            names: names.iter().map(|s| s.to_string()).collect(),
            columns,
        }
    }

    #[test]
    fn columns_match_by_name_and_by_suffix_and_errors_are_right() {
        let trace = table(
            &["time", "chassis.v_c", "wheel.F_c", "wheel.v_c"],
            vec![
                vec![0.0, 1.0, 2.0],
                vec![0.0, 1.0, 2.5],
                vec![1.0; 3],
                vec![0.0; 3],
            ],
        );
        let reference = table(
            &["time", "v_c", "F_c", "z_c"],
            vec![
                vec![0.0, 2.0],
                vec![0.0, 2.0],
                vec![1.0, 1.0],
                vec![0.0, 0.0],
            ],
        );
        let pairs = match_columns(&trace, &reference, &[]);
        // v_c is ambiguous (chassis.v_c and wheel.v_c): not matched by suffix.
        assert_eq!(pairs, vec![("wheel.F_c".to_string(), "F_c".to_string())]);
        let pairs = match_columns(
            &trace,
            &reference,
            &[("chassis.v_c".to_string(), "v_c".to_string())],
        );
        let errors = compare_columns(&trace, &reference, &pairs, 0.0, 2.0).unwrap();
        let v = &errors[0];
        assert_eq!(v.max_abs, 0.5);
        assert!((v.rms - (0.25f64 / 3.0).sqrt()).abs() < 1e-15);
        assert!((v.mean_relative - 0.5 / 3.0 / 2.0).abs() < 1e-15);
        assert_eq!(errors[1].max_abs, 0.0);
    }

    #[test]
    fn column_products_parse_and_evaluate() {
        let r = table(
            &["time", "F_c", "v_w"],
            vec![vec![0.0, 1.0], vec![2.0, 4.0], vec![3.0, 5.0]],
        );
        let p = ColumnProduct::parse("-F_c*v_w", &r).unwrap();
        assert_eq!(p.at(&r, 0.5), -(3.0 * 4.0));
        let err = ColumnProduct::parse("F_c*v_c", &r).unwrap_err();
        assert!(
            err.contains("no column 'v_c'") && err.contains("F_c, v_w"),
            "{err}"
        );
    }
}
