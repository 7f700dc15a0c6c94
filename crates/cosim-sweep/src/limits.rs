//! Stability limits along a numeric axis: for each combination of the
//! other axes, the largest value that stayed ok below the smallest value
//! that diverged; and the bisection that narrows that bracket.

use serde::{Deserialize, Serialize};

use crate::axis::{AxisValue, Scale, round_significant};
use crate::runs::{Planned, Record, Status};
use crate::summary::Summary;

/// The stability limit of one group of runs along an axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    /// The values of the other axes (`master.kind=ecco`), empty with one axis.
    pub group: String,
    /// The axis.
    pub axis: String,
    /// The largest value that ran ok below `unstable` (`None`: none did).
    pub stable: Option<f64>,
    /// The smallest value that diverged (`None`: none did).
    pub unstable: Option<f64>,
    /// The midpoint of the bracket (geometric on a log axis).
    pub estimate: Option<f64>,
}

/// What the limit search needs of a run.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    pub group: String,
    pub x: f64,
    pub status: Status,
}

pub(crate) fn midpoint(a: f64, b: f64, log: bool) -> f64 {
    if log && a > 0.0 && b > 0.0 {
        (a * b).sqrt()
    } else {
        0.5 * (a + b)
    }
}

/// Limits per group, groups in order of first appearance.
pub(crate) fn find(points: &[Point], axis: &str, log: bool) -> Vec<Limit> {
    let mut groups: Vec<&str> = Vec::new();
    for p in points {
        if !groups.contains(&p.group.as_str()) {
            groups.push(&p.group);
        }
    }
    groups
        .into_iter()
        .map(|g| {
            let mut pts: Vec<&Point> = points
                .iter()
                .filter(|p| p.group == g && p.x.is_finite())
                .collect();
            pts.sort_by(|a, b| a.x.total_cmp(&b.x));
            let unstable = pts
                .iter()
                .find(|p| p.status == Status::Diverged)
                .map(|p| p.x);
            let stable = pts
                .iter()
                .filter(|p| p.status == Status::Ok && unstable.is_none_or(|u| p.x < u))
                .map(|p| p.x)
                .next_back();
            let estimate = match (stable, unstable) {
                (Some(a), Some(b)) => Some(midpoint(a, b, log)),
                _ => None,
            };
            Limit {
                group: g.to_string(),
                axis: axis.to_string(),
                stable,
                unstable,
                estimate,
            }
        })
        .collect()
}

/// The group label of a run: the other axes' `key=value`.
pub(crate) fn group_label(keys: &[String], cells: &[String], skip: usize) -> String {
    keys.iter()
        .zip(cells)
        .enumerate()
        .filter(|(i, _)| *i != skip)
        .map(|(_, (k, v))| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Limits along axis `x` from a summary table.
pub fn from_summary(summary: &Summary, axes: &[(String, Scale)], x: usize) -> Vec<Limit> {
    let keys: Vec<String> = axes.iter().map(|(k, _)| k.clone()).collect();
    let Some((axis, scale)) = axes.get(x) else {
        return Vec::new();
    };
    let points: Vec<Point> = (0..summary.rows.len())
        .filter_map(|row| {
            let cells: Vec<String> = keys
                .iter()
                .map(|k| summary.cell(row, k).unwrap_or_default().to_string())
                .collect();
            let value = cells.get(x)?.parse::<f64>().ok()?;
            let status = Status::parse(summary.cell(row, "status")?)?;
            Some(Point {
                group: group_label(&keys, &cells, x),
                x: value,
                status,
            })
        })
        .collect();
    find(&points, axis, *scale == Scale::Log)
}

/// The bisection runs of one refinement step: for each group with a
/// bracket, its midpoint (unless it is already as narrow as the values'
/// precision allows). Indices start at `next_index`.
pub(crate) fn bisect(
    records: &[Record],
    keys: &[String],
    x: usize,
    scale: Scale,
    stage: u32,
    next_index: usize,
) -> Vec<Planned> {
    let cells =
        |r: &Record| -> Vec<String> { r.planned.values.iter().map(AxisValue::cell).collect() };
    let mut sorted: Vec<&Record> = records.iter().collect();
    sorted.sort_by_key(|r| r.planned.index);
    let points: Vec<Point> = sorted
        .iter()
        .filter_map(|r| {
            Some(Point {
                group: group_label(keys, &cells(r), x),
                x: r.planned.values.get(x)?.as_f64()?,
                status: r.status,
            })
        })
        .collect();
    let is_int = sorted
        .iter()
        .all(|r| matches!(r.planned.values.get(x), Some(AxisValue::Int(_))));
    let mut out = Vec::new();
    for limit in find(
        &points,
        keys.get(x).map_or("", String::as_str),
        scale == Scale::Log,
    ) {
        let (Some(a), Some(b)) = (limit.stable, limit.unstable) else {
            continue;
        };
        let mid = if is_int {
            ((a + b) / 2.0).floor()
        } else {
            round_significant(midpoint(a, b, scale == Scale::Log))
        };
        if !(mid > a && mid < b) {
            continue;
        }
        let Some(template) = sorted
            .iter()
            .find(|r| group_label(keys, &cells(r), x) == limit.group)
        else {
            continue;
        };
        let mut values = template.planned.values.clone();
        if let Some(slot) = values.get_mut(x) {
            *slot = if is_int {
                AxisValue::Int(mid as i64)
            } else {
                AxisValue::Float(mid)
            };
        }
        out.push(Planned {
            index: next_index + out.len(),
            stage,
            values,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(group: &str, x: f64, status: Status) -> Point {
        Point {
            group: group.into(),
            x,
            status,
        }
    }

    #[test]
    fn the_bracket_is_the_last_ok_below_the_first_diverged() {
        let pts = vec![
            p("a", 1.0, Status::Ok),
            p("a", 4.0, Status::Diverged),
            p("a", 2.0, Status::Ok),
            p("a", 3.0, Status::Error),
            p("a", 8.0, Status::Diverged),
            p("b", 1.0, Status::Ok),
            p("b", 2.0, Status::Ok),
        ];
        let l = find(&pts, "x", true);
        assert_eq!(l.len(), 2);
        assert_eq!((l[0].stable, l[0].unstable), (Some(2.0), Some(4.0)));
        assert!((l[0].estimate.unwrap() - 8f64.sqrt()).abs() < 1e-12);
        assert_eq!(
            (l[1].stable, l[1].unstable, l[1].estimate),
            (Some(2.0), None, None)
        );
    }
}
