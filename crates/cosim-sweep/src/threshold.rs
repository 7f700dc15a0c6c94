//! CI thresholds: `--fail-if 'mean_abs_power_error > 1.5'`.

use std::fmt;

use serde::Serialize;

use crate::summary::Summary;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Eq => "==",
            Op::Ne => "!=",
        }
    }

    fn holds<T: PartialOrd>(self, a: &T, b: &T) -> bool {
        match self {
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

/// The right-hand side of a threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Bound {
    /// A number: the cell is compared as a number.
    Number(f64),
    /// A word (`ok`, `diverged`, `ecco`): the cell is compared as text.
    Text(String),
}

/// A row fails when `metric op bound` holds, e.g. `max_abs:chassis.v_c > 1e-2`.
/// A numeric threshold also fails a row whose cell is empty or NaN (the
/// metric could not be shown to be within bounds).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Threshold {
    /// The summary column.
    pub metric: String,
    /// The comparison.
    pub op: Op,
    /// The limit.
    pub bound: Bound,
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bound = match &self.bound {
            // (As a person writes it: `1000`, not `1000.0`.)
            Bound::Number(x) => cosim_core::text::number(*x),
            Bound::Text(s) => s.clone(),
        };
        write!(f, "{} {} {}", self.metric, self.op.text(), bound)
    }
}

impl std::str::FromStr for Threshold {
    type Err = String;

    /// Parses `metric OP value` with OP one of `>`, `>=`, `<`, `<=`, `==`, `!=`.
    fn from_str(text: &str) -> Result<Self, String> {
        let pos = text.find(['<', '>', '=', '!']).ok_or_else(|| {
            format!(
                "'{text}' is not a threshold: expected 'METRIC OP VALUE' with OP one of > >= < <= == != (e.g. 'mean_abs_power_error > 1.5')"
            )
        })?;
        let metric = text[..pos].trim();
        let rest = &text[pos..];
        let (op, len) = [
            (">=", Op::Ge),
            ("<=", Op::Le),
            ("==", Op::Eq),
            ("!=", Op::Ne),
            (">", Op::Gt),
            ("<", Op::Lt),
        ]
        .into_iter()
        .find(|(s, _)| rest.starts_with(s))
        .map(|(s, op)| (op, s.len()))
        .ok_or_else(|| format!("'{text}': unknown operator (use > >= < <= == !=)"))?;
        let value = rest[len..].trim();
        if metric.is_empty() {
            return Err(format!("'{text}' names no metric before '{}'", op.text()));
        }
        if metric.contains(char::is_whitespace) {
            return Err(format!("'{text}': the metric '{metric}' contains a space"));
        }
        if value.is_empty() {
            return Err(format!("'{text}' gives no value after '{}'", op.text()));
        }
        let bound = match value.parse::<f64>() {
            Ok(x) => Bound::Number(x),
            Err(_) => {
                if matches!(op, Op::Eq | Op::Ne) {
                    Bound::Text(value.trim_matches(['"', '\'']).to_string())
                } else {
                    return Err(format!(
                        "'{text}': '{value}' is not a number ('{}' compares numbers)",
                        op.text()
                    ));
                }
            }
        };
        Ok(Threshold {
            metric: metric.to_string(),
            op,
            bound,
        })
    }
}

/// A row that failed a threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Violation {
    /// The threshold, as text.
    pub threshold: String,
    /// The run index.
    pub index: String,
    /// The run's name (its directory under `runs/`).
    pub run: String,
    /// The value found.
    pub value: String,
    /// The row number in the summary (0-based).
    pub row: usize,
}

impl Threshold {
    /// Whether a cell fails this threshold.
    pub fn fails(&self, cell: &str) -> bool {
        match &self.bound {
            Bound::Number(limit) => match cell.trim().parse::<f64>() {
                Ok(x) if !x.is_nan() => self.op.holds(&x, limit),
                // Empty or NaN: cannot be shown to be within bounds.
                _ => true,
            },
            Bound::Text(t) => self.op.holds(&cell.trim(), &t.as_str()),
        }
    }

    /// The rows of `summary` that fail; an error when the summary has no
    /// such column (naming the columns it has).
    pub fn check(&self, summary: &Summary) -> Result<Vec<Violation>, String> {
        let c = summary.column_index(&self.metric).ok_or_else(|| {
            let help = crate::error::did_you_mean(
                &self.metric,
                summary.columns.iter().map(String::as_str),
            )
            .map(|h| format!(" ({h})"))
            .unwrap_or_default();
            format!(
                "threshold '{self}': the summary has no column '{}'{help}; it has: {}",
                self.metric,
                summary.columns.join(", ")
            )
        })?;
        let index = summary.column_index("index");
        let run = summary.column_index("run");
        let cell = |row: &Vec<String>, c: Option<usize>| {
            c.and_then(|c| row.get(c)).cloned().unwrap_or_default()
        };
        Ok(summary
            .rows
            .iter()
            .enumerate()
            .filter(|(_, row)| self.fails(row.get(c).map_or("", String::as_str)))
            .map(|(i, row)| Violation {
                threshold: self.to_string(),
                index: cell(row, index),
                run: cell(row, run),
                value: cell(row, Some(c)),
                row: i,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_shown_as_written() {
        for (text, shown) in [
            ("mean_abs_power_error > 1000", "mean_abs_power_error > 1000"),
            ("max_abs:chassis.v_c>=1e-2", "max_abs:chassis.v_c >= 0.01"),
            ("growth < 2.5", "growth < 2.5"),
            ("status != ok", "status != ok"),
        ] {
            let t: Threshold = text.parse().unwrap();
            assert_eq!(t.to_string(), shown);
        }
    }

    #[test]
    fn thresholds_parse() {
        let t: Threshold = "mean_abs_power_error > 1.5".parse().unwrap();
        assert_eq!(t.metric, "mean_abs_power_error");
        assert_eq!(t.op, Op::Gt);
        assert_eq!(t.bound, Bound::Number(1.5));
        let t: Threshold = "max_abs:chassis.v_c>=1e-2".parse().unwrap();
        assert_eq!((t.metric.as_str(), t.op), ("max_abs:chassis.v_c", Op::Ge));
        let t: Threshold = "status != ok".parse().unwrap();
        assert_eq!(t.bound, Bound::Text("ok".into()));
        assert!("status > ok".parse::<Threshold>().is_err());
        assert!("> 1".parse::<Threshold>().is_err());
        assert!("growth".parse::<Threshold>().is_err());
        assert!("growth >".parse::<Threshold>().is_err());
    }

    #[test]
    fn cells_fail_numerically_and_nan_fails() {
        let t: Threshold = "x > 1.5".parse().unwrap();
        assert!(t.fails("2"));
        assert!(!t.fails("1.5"));
        assert!(t.fails("NaN"));
        assert!(t.fails(""));
        assert!(t.fails("inf"));
        let t: Threshold = "status != ok".parse().unwrap();
        assert!(t.fails("diverged"));
        assert!(!t.fails("ok"));
    }
}
