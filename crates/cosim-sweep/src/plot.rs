//! The sweep plot (SVG, `plotters`): the error metric and the run time
//! against the swept axis, one line per combination of the other axes (one
//! per master when the master is an axis); logarithmic axes for log ranges
//! and for values spanning decades. Runs that failed or diverged are red
//! crosses (at the top of the error panel). SVG needs no font files: the
//! text is laid out by the viewer.

use std::path::Path;

use plotters::prelude::*;

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

struct Series {
    label: String,
    ok: Vec<(f64, f64)>,
    failed: Vec<(f64, f64)>,
}

fn transform(v: f64, log: bool) -> f64 {
    if log { v.log10() } else { v }
}

fn tick_label(v: f64, log: bool) -> String {
    let x = if log { 10f64.powf(v) } else { v };
    let r = if x == 0.0 {
        0.0
    } else {
        format!("{x:.2e}").parse().unwrap_or(x)
    };
    let s = format_float(round_significant(r));
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
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

fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi > lo { 0.05 * (hi - lo) } else { 0.5 };
    (lo - pad, hi + pad)
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
    let mut metric_series: Vec<Series> = Vec::new();
    let mut time_series: Vec<Series> = Vec::new();
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
                    series.push(Series {
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

    let root = SVGBackend::new(path, (960, 820)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root
        .titled(title, ("sans-serif", 20))
        .map_err(|e| e.to_string())?;
    let (top, bottom) = root.split_vertically(400);
    let xs_t: Vec<f64> = xs.iter().flatten().map(|&v| transform(v, x_log)).collect();
    let (x0, x1) = range(xs_t.iter().copied());

    for (area, series, y_name, is_metric) in [
        (&top, &metric_series, metric.to_string(), true),
        (&bottom, &time_series, "wall time [s]".to_string(), false),
    ] {
        let ok_values: Vec<f64> = if is_metric {
            metric_values.clone()
        } else {
            series
                .iter()
                .flat_map(|s| s.ok.iter().chain(&s.failed).map(|p| p.1))
                .collect()
        };
        let y_log = wants_log(ok_values.iter().copied().filter(|v| *v > 0.0))
            && ok_values.iter().all(|v| *v > 0.0);
        let (y0, y1) = range(ok_values.iter().map(|&v| transform(v, y_log)));
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(80)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| e.to_string())?;
        let x_fmt = |v: &f64| tick_label(*v, x_log);
        let y_fmt = |v: &f64| tick_label(*v, y_log);
        chart
            .configure_mesh()
            .x_desc(format!("{x_name}{}", if x_log { " (log)" } else { "" }))
            .y_desc(format!("{y_name}{}", if y_log { " (log)" } else { "" }))
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .x_labels(8)
            .y_labels(8)
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, s) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let pts: Vec<(f64, f64)> =
                s.ok.iter()
                    .filter(|p| !y_log || p.1 > 0.0)
                    .map(|&(a, b)| (transform(a, x_log), transform(b, y_log)))
                    .collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(s.label.clone())
                .legend(move |(lx, ly)| {
                    PathElement::new(vec![(lx, ly), (lx + 20, ly)], color.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(|e| e.to_string())?;
            let failed: Vec<(f64, f64)> = s
                .failed
                .iter()
                .map(|&(a, b)| {
                    let y = if is_metric || !b.is_finite() || (y_log && b <= 0.0) {
                        y1
                    } else {
                        transform(b, y_log)
                    };
                    (transform(a, x_log), y.min(y1))
                })
                .collect();
            chart
                .draw_series(
                    failed
                        .iter()
                        .map(|&p| Cross::new(p, 5, RED.stroke_width(2))),
                )
                .map_err(|e| e.to_string())?;
        }
        if is_metric {
            for l in limits {
                if let Some(e) = l.estimate {
                    let xe = transform(e, x_log);
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(xe, y0), (xe, y1)],
                            BLACK.mix(0.5).stroke_width(1),
                        )))
                        .map_err(|e| e.to_string())?
                        .label(format!(
                            "stability limit {}{}",
                            format_float(round_significant(e)),
                            if l.group.is_empty() {
                                String::new()
                            } else {
                                format!(" ({})", l.group)
                            }
                        ))
                        .legend(|(lx, ly)| {
                            PathElement::new(vec![(lx, ly), (lx + 20, ly)], BLACK.mix(0.5))
                        });
                }
            }
            if series.iter().any(|s| !s.failed.is_empty()) {
                chart
                    .draw_series(std::iter::once(Cross::new(
                        (x0, y1),
                        0,
                        RED.stroke_width(2),
                    )))
                    .map_err(|e| e.to_string())?
                    .label("diverged or failed")
                    .legend(|(lx, ly)| Cross::new((lx + 10, ly), 5, RED.stroke_width(2)));
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}
