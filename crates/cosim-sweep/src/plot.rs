//! The sweep plot (SVG, drawn by `cosim-plot` as the trace plots are): the
//! error metric (top panel) and the run time (bottom panel) against the
//! swept axis, one line per combination of the other axes (one per master
//! when the master is an axis), logarithmic axes for log ranges and for
//! values spanning a factor 20 or more, round ticks (decades on log
//! axes), the legend beside the panels. Runs that failed or diverged are
//! red crosses (on the top edge of the error panel); a stability limit is
//! a dashed vertical line in its group's colour. SVG needs no font files:
//! the text is laid out by the viewer.

use std::path::Path;

use cosim_plot::chart::{
    Axis, Colour, Dash, Entry, Figure, Marks, Panel, Scale as AxisScale, Series, Shape, Stroke,
    Swatch, VLine, palette,
};

use crate::axis::{Scale, format_float, round_significant};
use crate::limits::{Limit, group_label};
use crate::runs::Status;
use crate::summary::{MAX_ABS, Summary};

/// The metric plotted when none is chosen: the mean absolute power error
/// when there is a reference power, else the first column error, else the
/// largest indicator.
pub fn default_metric(summary: &Summary) -> String {
    if summary.column_index("mean_abs_power_error").is_some() {
        return "mean_abs_power_error".into();
    }
    summary
        .columns
        .iter()
        .find(|c| c.starts_with(MAX_ABS))
        .cloned()
        .unwrap_or_else(|| "max_indicator".into())
}

struct Group {
    label: String,
    ok: Vec<(f64, f64)>,
    failed: Vec<(f64, f64)>,
}

/// Whether values deserve a logarithmic axis.
fn wants_log(values: impl Iterator<Item = f64>) -> bool {
    let (mut lo, mut hi, mut any) = (f64::INFINITY, 0.0f64, false);
    for v in values {
        if v.is_nan() || v <= 0.0 || !v.is_finite() {
            return false;
        }
        lo = lo.min(v);
        hi = hi.max(v);
        any = true;
    }
    any && hi / lo >= 20.0
}

/// Draws the plot of `summary` into `path`. `x`: the axis on the
/// horizontal axis (`None`: the run index).
pub fn draw(
    path: &Path,
    title: &str,
    summary: &Summary,
    axes: &[(String, Scale)],
    x: Option<usize>,
    metric: &str,
    limits: &[Limit],
) -> Result<(), String> {
    let keys: Vec<String> = axes.iter().map(|(k, _)| k.clone()).collect();
    let x_name = x
        .and_then(|i| keys.get(i))
        .cloned()
        .unwrap_or_else(|| "index".into());
    let num = |row: usize, col: &str| summary.cell(row, col).and_then(|c| c.parse::<f64>().ok());
    let xs: Vec<Option<f64>> = (0..summary.rows.len()).map(|r| num(r, &x_name)).collect();
    let x_log = match x.and_then(|i| axes.get(i)) {
        Some((_, Scale::Log)) => true,
        Some((_, Scale::List)) => wants_log(xs.iter().flatten().copied()),
        _ => false,
    };

    // Series per group of the other axes, in order of first appearance.
    let mut metric_series: Vec<Group> = Vec::new();
    let mut time_series: Vec<Group> = Vec::new();
    let mut metric_values = Vec::new();
    for (row, xv) in xs.iter().enumerate() {
        let Some(xv) = xv else { continue };
        let cells: Vec<String> = keys
            .iter()
            .map(|k| summary.cell(row, k).unwrap_or_default().to_string())
            .collect();
        let mut label = group_label(&keys, &cells, x.unwrap_or(usize::MAX));
        if label.is_empty() || !keys.iter().any(|k| k == "master.kind") {
            let master = summary.cell(row, "master").unwrap_or_default();
            if !master.is_empty() && !label.contains(master) {
                label = if label.is_empty() {
                    master.to_string()
                } else {
                    format!("{master}, {label}")
                };
            }
        }
        if label.is_empty() {
            label = "runs".into();
        }
        let ok = summary.cell(row, "status").and_then(Status::parse) == Some(Status::Ok);
        for (series, value) in [
            (&mut metric_series, num(row, metric)),
            (&mut time_series, num(row, "wall_time_s")),
        ] {
            let i = match series.iter().position(|s| s.label == label) {
                Some(i) => i,
                None => {
                    series.push(Group {
                        label: label.clone(),
                        ok: Vec::new(),
                        failed: Vec::new(),
                    });
                    series.len() - 1
                }
            };
            let Some(s) = series.get_mut(i) else { continue };
            match value {
                Some(v) if ok && v.is_finite() => s.ok.push((*xv, v)),
                _ => s.failed.push((*xv, value.unwrap_or(f64::NAN))),
            }
        }
        if ok && let Some(v) = num(row, metric) {
            metric_values.push(v);
        }
    }
    for s in metric_series.iter_mut().chain(time_series.iter_mut()) {
        s.ok.sort_by(|a, b| a.0.total_cmp(&b.0));
    }

    let scale = |log: bool| {
        if log {
            AxisScale::Log
        } else {
            AxisScale::Linear
        }
    };
    let mut figure = Figure::new(
        title,
        Axis {
            label: format!("{x_name}{}", if x_log { " (log)" } else { "" }),
            scale: scale(x_log),
            range: None,
        },
    );
    figure.width = 1100.0;
    figure.panel_height = 300.0;
    let any_failed = metric_series.iter().any(|s| !s.failed.is_empty());
    for (groups, y_name, is_metric) in [
        (&metric_series, metric.to_string(), true),
        (&time_series, "wall time [s]".to_string(), false),
    ] {
        let ok_values: Vec<f64> = if is_metric {
            metric_values.clone()
        } else {
            groups
                .iter()
                .flat_map(|s| s.ok.iter().chain(&s.failed).map(|p| p.1))
                .collect()
        };
        let y_log = wants_log(ok_values.iter().copied().filter(|v| *v > 0.0))
            && ok_values.iter().all(|v| *v > 0.0);
        let mut panel = Panel::new(Axis {
            label: format!("{y_name}{}", if y_log { " (log)" } else { "" }),
            scale: scale(y_log),
            range: None,
        });
        let mut failed = Vec::new();
        for (i, g) in groups.iter().enumerate() {
            let stroke = Stroke::solid(palette(i), 2.0);
            let points: Vec<(f64, f64)> =
                g.ok.iter()
                    .filter(|p| (!y_log || p.1 > 0.0) && (!x_log || p.0 > 0.0))
                    .copied()
                    .collect();
            let mut series = Series::line(points, stroke);
            series.markers = Some((Shape::Circle, 3.0));
            series.tooltip = g.label.clone();
            series.data = vec![("group".into(), g.label.clone())];
            panel.series.push(series);
            panel.legend.push(Entry {
                label: g.label.clone(),
                swatch: Swatch::LineMarker(stroke, Shape::Circle),
            });
            // Failed runs: on the top edge of the error panel, at their
            // time in the time panel.
            failed.extend(g.failed.iter().map(|&(x, y)| {
                let shown = !is_metric && y.is_finite() && (!y_log || y > 0.0);
                (x, if shown { y } else { f64::INFINITY })
            }));
        }
        if is_metric {
            for l in limits {
                let Some(e) = l.estimate else { continue };
                // The group's colour when one line is that group.
                let colour = match groups
                    .iter()
                    .position(|g| !l.group.is_empty() && g.label.contains(&l.group))
                {
                    Some(i) => palette(i),
                    None => Colour::GREY,
                };
                let stroke = Stroke {
                    colour,
                    width: 1.5,
                    dash: Dash::Dashed,
                };
                panel.vlines.push(VLine { x: e, stroke });
                panel.legend.push(Entry {
                    label: format!(
                        "stability limit {}{}",
                        format_float(round_significant(e)),
                        if l.group.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", l.group)
                        }
                    ),
                    swatch: Swatch::Line(stroke),
                });
            }
            if any_failed {
                panel.legend.push(Entry {
                    label: "diverged or failed".into(),
                    swatch: Swatch::Marker(Shape::Cross, Colour::RED),
                });
            }
        }
        if !failed.is_empty() {
            panel.marks.push(Marks {
                points: failed,
                shape: Shape::Cross,
                size: 5.0,
                colour: Colour::RED,
            });
        }
        figure.panels.push(panel);
    }
    figure.write(path).map_err(|e| e.to_string())
}
