//! Axes of a sweep: which scenario value varies and the values it takes.

use std::ops::Range;

use serde::Serialize;

/// A value an axis takes (a TOML scalar).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AxisValue {
    /// An integer (`extrapolation = 1`, `step_multiple = 4`).
    Int(i64),
    /// A float (`step = 1e-3`).
    Float(f64),
    /// A boolean (`discover_bonds = false`).
    Bool(bool),
    /// A string (`kind = "ecco"`).
    Str(String),
}

/// A float in the summary's notation: the shortest text that reads back to
/// the same `f64` (`ryu`), `NaN`, `inf` and `-inf`.
pub fn format_float(x: f64) -> String {
    if x.is_nan() {
        "NaN".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        ryu::Buffer::new().format_finite(x).to_string()
    }
}

impl AxisValue {
    /// The value as a number, for plotting and bisection.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            AxisValue::Int(i) => Some(*i as f64),
            AxisValue::Float(x) => Some(*x),
            AxisValue::Bool(_) | AxisValue::Str(_) => None,
        }
    }

    /// The summary cell.
    pub fn cell(&self) -> String {
        match self {
            AxisValue::Int(i) => i.to_string(),
            AxisValue::Float(x) => format_float(*x),
            AxisValue::Bool(b) => b.to_string(),
            AxisValue::Str(s) => s.clone(),
        }
    }

    /// The TOML value written into the scenario.
    pub fn toml(&self) -> toml_edit::Value {
        match self {
            AxisValue::Int(i) => toml_edit::Value::from(*i),
            AxisValue::Float(x) => toml_edit::Value::from(*x),
            AxisValue::Bool(b) => toml_edit::Value::from(*b),
            AxisValue::Str(s) => toml_edit::Value::from(s.as_str()),
        }
    }

    /// The TOML text of the value (for a `--set` override).
    pub fn toml_text(&self) -> String {
        self.toml().to_string().trim().to_string()
    }

    /// A short form for run directory names: letters, digits, `.`, `-`,
    /// `+` and `_` only.
    pub fn slug(&self) -> String {
        // Floats in one notation within a sweep's names: plain from 1e-4
        // to 1e15, with an exponent outside (`1e-8`, `3.16228e-5`, never
        // `0.0000316228`).
        let text = match self {
            AxisValue::Float(x) => cosim_core::text::number(*x),
            other => other.cell(),
        };
        text.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }
}

/// How an axis' values were given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// An explicit list (`values = [...]`).
    List,
    /// `range = { ..., scale = "linear" }`.
    Linear,
    /// `range = { ..., scale = "log" }`: plotted on a logarithmic axis,
    /// bisected geometrically.
    Log,
}

/// The scenario value an axis sets.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Target {
    /// A key of `[simulation]`, `[master]` (and `[master.controller]`) or
    /// `[outputs]`, as its path of TOML keys (`["master", "step"]`).
    Table {
        /// The key path.
        path: Vec<String>,
    },
    /// A key of the `[[subsystems]]` entry called `name`
    /// (`subsystems.wheel.step_multiple`).
    Subsystem {
        /// The subsystem.
        name: String,
        /// The key in its table.
        key: String,
    },
    /// A parameter or start value of a subsystem (`wheel.k_c`), applied as
    /// `--set wheel.k_c=<value>` is: by the variable's causality.
    Variable {
        /// The subsystem.
        subsystem: String,
        /// The variable.
        variable: String,
    },
}

/// Scenario tables an axis key may start with.
pub const SCENARIO_TABLES: &[&str] = &["simulation", "master", "outputs"];

/// One axis of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Axis {
    /// The key as written (`master.step`, `wheel.k_c`): the summary column.
    pub key: String,
    /// What it sets.
    pub target: Target,
    /// The values, in order.
    pub values: Vec<AxisValue>,
    /// How the values were given.
    pub scale: Scale,
    /// Where the key is in the sweep file.
    #[serde(skip)]
    pub key_span: Option<Range<usize>>,
    /// Where each value is in the sweep file (a range's values: the range).
    #[serde(skip)]
    pub value_spans: Vec<Option<Range<usize>>>,
}

impl Axis {
    /// The last part of the key, for run names (`step` for `master.step`).
    pub fn short_name(&self) -> &str {
        self.key.rsplit('.').next().unwrap_or(&self.key)
    }

    /// True when every value is a number.
    pub fn is_numeric(&self) -> bool {
        self.values.iter().all(|v| v.as_f64().is_some())
    }
}

/// Rounds to 6 significant digits, so generated range values are short
/// and free of floating-point noise (`0.30000000000000004` -> `0.3`).
pub fn round_significant(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    format!("{x:.5e}").parse().unwrap_or(x)
}

/// The values of a range: `count` points from `from` to `to`, equally
/// spaced (linear) or in equal ratios (log), rounded to 6 significant
/// digits. Integer end points with an integer linear spacing give integers.
pub fn range_values(
    from: AxisValue,
    to: AxisValue,
    count: usize,
    scale: Scale,
) -> Result<Vec<AxisValue>, String> {
    let (Some(a), Some(b)) = (from.as_f64(), to.as_f64()) else {
        return Err("a range needs numbers for 'from' and 'to'".into());
    };
    if !(a.is_finite() && b.is_finite()) {
        return Err("a range needs finite 'from' and 'to'".into());
    }
    if count == 0 {
        return Err("'count' must be at least 1".into());
    }
    if scale == Scale::Log && (a <= 0.0 || b <= 0.0) {
        return Err(format!(
            "a logarithmic range needs positive 'from' and 'to' (got {} and {})",
            from.cell(),
            to.cell()
        ));
    }
    if count == 1 {
        return Ok(vec![from]);
    }
    let n = (count - 1) as f64;
    if let (AxisValue::Int(i0), AxisValue::Int(i1), Scale::Linear) = (&from, &to, scale)
        && (i1 - i0) % (count as i64 - 1) == 0
    {
        let d = (i1 - i0) / (count as i64 - 1);
        return Ok((0..count as i64)
            .map(|k| AxisValue::Int(i0 + k * d))
            .collect());
    }
    Ok((0..count)
        .map(|k| {
            let x = if k == 0 {
                a
            } else if k == count - 1 {
                b
            } else {
                let f = k as f64 / n;
                match scale {
                    Scale::Log => a * (b / a).powf(f),
                    Scale::Linear | Scale::List => a + (b - a) * f,
                }
            };
            AxisValue::Float(round_significant(x))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_format_shortest_and_read_back() {
        for x in [1e-3, 0.1 + 0.2, 15000.0, 1.5e-5, 58.5e-3, 1e300] {
            assert_eq!(format_float(x).parse::<f64>().unwrap(), x);
        }
        assert_eq!(format_float(1e-3), "0.001");
        assert_eq!(format_float(f64::NAN), "NaN");
        assert_eq!(format_float(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn ranges_hit_their_end_points_and_are_rounded() {
        let v = range_values(
            AxisValue::Float(1e-3),
            AxisValue::Float(80e-3),
            5,
            Scale::Log,
        )
        .unwrap();
        assert_eq!(v.len(), 5);
        assert_eq!(v[0], AxisValue::Float(1e-3));
        assert_eq!(v[4], AxisValue::Float(80e-3));
        let x2 = v[2].as_f64().unwrap();
        assert!((x2 - (80e-6f64).sqrt()).abs() < 1e-8, "{x2}");
        assert!(format_float(x2).len() <= 12, "{x2}");
        let v = range_values(
            AxisValue::Float(0.0),
            AxisValue::Float(0.3),
            4,
            Scale::Linear,
        )
        .unwrap();
        assert_eq!(v[1], AxisValue::Float(0.1));
        assert_eq!(v[3], AxisValue::Float(0.3));
        let v = range_values(AxisValue::Int(0), AxisValue::Int(2), 3, Scale::Linear).unwrap();
        assert_eq!(
            v,
            vec![AxisValue::Int(0), AxisValue::Int(1), AxisValue::Int(2)]
        );
        assert!(range_values(AxisValue::Float(0.0), AxisValue::Float(1.0), 3, Scale::Log).is_err());
    }

    #[test]
    fn values_become_toml_and_slugs() {
        assert_eq!(AxisValue::Float(1e-3).toml_text(), "0.001");
        assert_eq!(AxisValue::Str("ecco".into()).toml_text(), "\"ecco\"");
        assert_eq!(AxisValue::Str("a b/c".into()).slug(), "a_b_c");
        assert_eq!(AxisValue::Float(1.5e-5).slug(), "1.5e-5");
        assert_eq!(AxisValue::Float(3.16228e-5).slug(), "3.16228e-5");
        assert_eq!(AxisValue::Float(0.00125).slug(), "0.00125");
        assert_eq!(AxisValue::Float(1.5e-9).slug(), "1.5e-9");
    }
}
