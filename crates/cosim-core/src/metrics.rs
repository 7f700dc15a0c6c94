//! Accuracy metrics of a run against a reference: reading the CSV outputs
//! back, interpolating a reference, and the metrics of sadjina2016 sec. IV
//! (BENCHMARKS.md B1): mean macro step, mean transmitted power, mean
//! absolute power error and integral of residual power.

use std::path::Path;

use crate::error::{CoreError, Result};

/// A CSV table whose first column is time, read back from a trace, an
/// energy log or a reference file.
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
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, msg),
    }
}

/// The name of a header cell without its ` [unit]` suffix.
pub fn strip_unit(header: &str) -> &str {
    match header.rfind(" [") {
        Some(i) if header.ends_with(']') => &header[..i],
        _ => header,
    }
}

impl Table {
    /// Reads a CSV file with a header row and numeric cells.
    pub fn read(path: &Path) -> Result<Table> {
        let mut reader = csv::Reader::from_path(path).map_err(|e| bad(path, e.to_string()))?;
        let names: Vec<String> = reader
            .headers()
            .map_err(|e| bad(path, e.to_string()))?
            .iter()
            .map(|h| strip_unit(h).to_string())
            .collect();
        let mut columns = vec![Vec::new(); names.len()];
        for (row, record) in reader.records().enumerate() {
            let record = record.map_err(|e| bad(path, e.to_string()))?;
            for (c, cell) in record.iter().enumerate() {
                let v = match cell {
                    "true" => 1.0,
                    "false" => 0.0,
                    other => other.trim().parse::<f64>().map_err(|_| {
                        bad(
                            path,
                            format!(
                                "row {}, column '{}': '{other}' is not a number",
                                row + 2,
                                names.get(c).map_or("?", |s| s.as_str())
                            ),
                        )
                    })?,
                };
                if let Some(col) = columns.get_mut(c) {
                    col.push(v);
                }
            }
        }
        if names.is_empty() {
            return Err(bad(path, "no header row".into()));
        }
        Ok(Table { names, columns })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_unit_keeps_plain_names_and_drops_units() {
        assert_eq!(strip_unit("chassis.v_c [m/s]"), "chassis.v_c");
        assert_eq!(strip_unit("time"), "time");
        assert_eq!(strip_unit("a[1]"), "a[1]");
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
