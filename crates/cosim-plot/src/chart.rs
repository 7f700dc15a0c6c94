//! A figure of panels stacked on one shared horizontal axis, written as
//! self-contained SVG: no fonts, scripts or style sheets; text is `<text>`
//! in the viewer's `sans-serif` face. Each panel has its own vertical axis
//! (linear or logarithmic, round ticks from [`crate::ticks`]) and its
//! legend beside it, never over the data; the key of line styles (one per
//! file, say) sits under the title. Lines are clipped to their panel and
//! thinned to a few points per pixel column, so a million-row trace gives
//! a small file that looks the same.

use std::fmt::Write as _;
use std::path::Path;

use crate::ticks::{self, Tick};

/// An RGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Colour(pub u8, pub u8, pub u8);

impl Colour {
    /// Black: the reference lines.
    pub const BLACK: Colour = Colour(0, 0, 0);
    /// Dark grey: the line-style key.
    pub const DARK: Colour = Colour(0x33, 0x33, 0x33);
    /// Grey.
    pub const GREY: Colour = Colour(0x80, 0x80, 0x80);
    /// Red: failed runs.
    pub const RED: Colour = Colour(0xd6, 0x27, 0x28);

    /// `#rrggbb`.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// Distinct colours for series, in order: the ten of matplotlib's `tab10`,
/// then ten darker ones.
const PALETTE: [Colour; 20] = [
    Colour(0x1f, 0x77, 0xb4),
    Colour(0xff, 0x7f, 0x0e),
    Colour(0x2c, 0xa0, 0x2c),
    Colour(0xd6, 0x27, 0x28),
    Colour(0x94, 0x67, 0xbd),
    Colour(0x8c, 0x56, 0x4b),
    Colour(0xe3, 0x77, 0xc2),
    Colour(0x7f, 0x7f, 0x7f),
    Colour(0xbc, 0xbd, 0x22),
    Colour(0x17, 0xbe, 0xcf),
    Colour(0x0b, 0x3c, 0x5d),
    Colour(0xb3, 0x58, 0x06),
    Colour(0x1b, 0x5e, 0x20),
    Colour(0x7f, 0x00, 0x00),
    Colour(0x4a, 0x14, 0x8c),
    Colour(0x3e, 0x27, 0x23),
    Colour(0xad, 0x14, 0x57),
    Colour(0x37, 0x47, 0x4f),
    Colour(0x82, 0x77, 0x17),
    Colour(0x00, 0x60, 0x64),
];

/// The `i`-th series colour (repeating after 20).
pub fn palette(i: usize) -> Colour {
    PALETTE[i % PALETTE.len()]
}

/// A line's dash pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    /// ─────
    Solid,
    /// ─ ─ ─
    Dashed,
    /// ·····
    Dotted,
    /// ─ · ─
    DashDot,
    /// ── ──
    LongDash,
}

impl Dash {
    /// The `i`-th style of a sequence of files: solid, dashed, dotted,
    /// dash-dot, long dashes, then again.
    pub fn nth(i: usize) -> Dash {
        [
            Dash::Solid,
            Dash::Dashed,
            Dash::Dotted,
            Dash::DashDot,
            Dash::LongDash,
        ][i % 5]
    }

    /// Its name (`solid`, `dashed`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Dash::Solid => "solid",
            Dash::Dashed => "dashed",
            Dash::Dotted => "dotted",
            Dash::DashDot => "dash-dot",
            Dash::LongDash => "long-dash",
        }
    }

    /// SVG stroke attributes (dash array, line cap).
    fn attributes(self) -> &'static str {
        match self {
            Dash::Solid => r#" stroke-linecap="butt""#,
            Dash::Dashed => r#" stroke-dasharray="8 5" stroke-linecap="butt""#,
            Dash::Dotted => r#" stroke-dasharray="0.1 4.5" stroke-linecap="round""#,
            Dash::DashDot => r#" stroke-dasharray="9 4 0.1 4" stroke-linecap="round""#,
            Dash::LongDash => r#" stroke-dasharray="16 6" stroke-linecap="butt""#,
        }
    }
}

/// How a line is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stroke {
    /// Its colour.
    pub colour: Colour,
    /// Its width, px.
    pub width: f64,
    /// Its dash pattern.
    pub dash: Dash,
}

impl Stroke {
    /// A solid line.
    pub fn solid(colour: Colour, width: f64) -> Stroke {
        Stroke {
            colour,
            width,
            dash: Dash::Solid,
        }
    }

    fn attributes(&self) -> String {
        format!(
            r#" fill="none" stroke="{}" stroke-width="{}" stroke-linejoin="round"{}"#,
            self.colour.hex(),
            num(self.width),
            self.dash.attributes()
        )
    }
}

/// A marker shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A filled circle.
    Circle,
    /// A diagonal cross.
    Cross,
}

/// A scale of an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    Linear,
    /// Logarithmic (positive values only).
    Log,
}

/// An axis: its label, scale and range.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The label (`time [s]`, `m/s`).
    pub label: String,
    /// The scale.
    pub scale: Scale,
    /// The range; `None`: the data's, with 5 % to spare on each side.
    pub range: Option<(f64, f64)>,
}

impl Axis {
    /// A linear axis over the data.
    pub fn linear(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            range: None,
        }
    }
}

/// A line through points (data units), with optional markers at them.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The points in order; a non-finite coordinate breaks the line.
    pub points: Vec<(f64, f64)>,
    /// The line; `None`: markers only.
    pub stroke: Option<Stroke>,
    /// Drawn as steps: each value held until the next point (integer and
    /// Boolean signals).
    pub steps: bool,
    /// Markers at the points: shape and size (radius), in the line's colour.
    pub markers: Option<(Shape, f64)>,
    /// Hover text (an SVG `<title>`).
    pub tooltip: String,
    /// The element's `class` (`series`, `reference`).
    pub class: String,
    /// Extra `data-*` attributes (name without `data-`, value).
    pub data: Vec<(String, String)>,
}

impl Series {
    /// A plain line.
    pub fn line(points: Vec<(f64, f64)>, stroke: Stroke) -> Series {
        Series {
            points,
            stroke: Some(stroke),
            steps: false,
            markers: None,
            tooltip: String::new(),
            class: "series".into(),
            data: Vec::new(),
        }
    }
}

/// Markers without a line (failed runs, say).
#[derive(Debug, Clone, PartialEq)]
pub struct Marks {
    /// Where; a `y` of +inf / -inf puts the marker on the top / bottom edge.
    pub points: Vec<(f64, f64)>,
    /// The shape.
    pub shape: Shape,
    /// Its size (radius), px.
    pub size: f64,
    /// Its colour.
    pub colour: Colour,
}

/// A vertical line across a panel.
#[derive(Debug, Clone, PartialEq)]
pub struct VLine {
    /// Where, in data units.
    pub x: f64,
    /// How.
    pub stroke: Stroke,
}

/// What a legend entry shows before its label.
#[derive(Debug, Clone, PartialEq)]
pub enum Swatch {
    /// A short line.
    Line(Stroke),
    /// A short line with a marker on it.
    LineMarker(Stroke, Shape),
    /// A marker.
    Marker(Shape, Colour),
}

/// A legend entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The label.
    pub label: String,
    /// The swatch.
    pub swatch: Swatch,
}

/// One panel: a vertical axis, what is drawn, and its legend (beside it).
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// The vertical axis.
    pub y: Axis,
    /// Lines, drawn in order.
    pub series: Vec<Series>,
    /// Markers, drawn over the lines.
    pub marks: Vec<Marks>,
    /// Vertical lines.
    pub vlines: Vec<VLine>,
    /// The legend, beside the panel.
    pub legend: Vec<Entry>,
}

impl Panel {
    /// An empty panel with vertical axis `y`.
    pub fn new(y: Axis) -> Panel {
        Panel {
            y,
            series: Vec::new(),
            marks: Vec::new(),
            vlines: Vec::new(),
            legend: Vec::new(),
        }
    }
}

/// A figure: a title, a key, panels over one horizontal axis, notes.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// The title.
    pub title: String,
    /// The key under the title (line styles), in one or more rows.
    pub key: Vec<Entry>,
    /// The shared horizontal axis.
    pub x: Axis,
    /// The panels, top to bottom.
    pub panels: Vec<Panel>,
    /// Notes under the plot (small, grey).
    pub notes: Vec<String>,
    /// Width, px.
    pub width: f64,
    /// Height of each panel's plotting area, px (a panel grows to fit its
    /// legend).
    pub panel_height: f64,
}

impl Figure {
    /// An empty figure.
    pub fn new(title: impl Into<String>, x: Axis) -> Figure {
        Figure {
            title: title.into(),
            key: Vec::new(),
            x,
            panels: Vec::new(),
            notes: Vec::new(),
            width: 1000.0,
            panel_height: 230.0,
        }
    }

    /// Writes the SVG to `path`.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.svg())
    }
}

/// Font sizes, px.
const TITLE: f64 = 17.0;
const TEXT: f64 = 12.5;
const TICK: f64 = 12.0;
const NOTE: f64 = 11.5;
/// Legend and key rows, px.
const ROW: f64 = 18.0;
/// Swatch length, px.
const SWATCH: f64 = 26.0;
/// Vertical gap between panels, px.
const GAP: f64 = 14.0;

/// A coordinate or size for SVG: at most one decimal, no `-0`.
fn num(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == 0.0 {
        "0".into()
    } else if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// Text for SVG content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// An estimate of the width of `s` at font size `size` in a sans-serif
/// face, px: on the wide side (DejaVu Sans), so that labels fit.
pub fn text_width(s: &str, size: f64) -> f64 {
    s.chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' => 0.3,
            'f' | 't' | 'r' | 'I' | ' ' | '(' | ')' | '[' | ']' | '-' | '/' => 0.42,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 0.92,
            'A'..='Z' => 0.72,
            '0'..='9' => 0.64,
            _ => 0.62,
        })
        .sum::<f64>()
        * size
}

/// `s` cut (with `…`) to fit `width` px at `size`.
fn fit(s: &str, size: f64, width: f64) -> String {
    if text_width(s, size) <= width {
        return s.to_string();
    }
    let mut cut: String = s.to_string();
    while !cut.is_empty() && text_width(&cut, size) + text_width("…", size) > width {
        cut.pop();
    }
    format!("{cut}…")
}

/// Where data values land on one axis.
#[derive(Debug, Clone, Copy)]
struct Map {
    lo: f64,
    hi: f64,
    log: bool,
    p0: f64,
    p1: f64,
}

impl Map {
    fn new(axis: Scale, (lo, hi): (f64, f64), p0: f64, p1: f64) -> Map {
        let log = axis == Scale::Log;
        let (lo, hi) = if log {
            (lo.log10(), hi.log10())
        } else {
            (lo, hi)
        };
        Map {
            lo,
            hi,
            log,
            p0,
            p1,
        }
    }

    fn at(&self, v: f64) -> f64 {
        let v = if self.log {
            if v > 0.0 { v.log10() } else { f64::NAN }
        } else {
            v
        };
        self.p0 + (v - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)
    }
}

/// The range of `values` for an axis of `scale`, with 5 % to spare (in
/// the scale's terms); `(0, 1)` without values.
fn auto_range(values: impl Iterator<Item = f64>, scale: Scale) -> (f64, f64) {
    let log = scale == Scale::Log;
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        let v = if log { v.log10() } else { v };
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let (lo, hi) = if !lo.is_finite() {
        (0.0, 1.0)
    } else if hi > lo {
        let pad = 0.05 * (hi - lo);
        (lo - pad, hi + pad)
    } else if log {
        (lo - 0.3, hi + 0.3)
    } else if lo == 0.0 {
        (-1.0, 1.0)
    } else {
        (lo - 0.1 * lo.abs(), hi + 0.1 * hi.abs())
    };
    if log {
        (10f64.powf(lo), 10f64.powf(hi))
    } else {
        (lo, hi)
    }
}

fn axis_range(axis: &Axis, values: impl Iterator<Item = f64>) -> (f64, f64) {
    match axis.range {
        Some((lo, hi)) if hi > lo && (axis.scale == Scale::Linear || lo > 0.0) => (lo, hi),
        Some((lo, _)) if axis.scale == Scale::Linear || lo > 0.0 => {
            auto_range([lo].into_iter(), axis.scale)
        }
        _ => auto_range(values, axis.scale),
    }
}

fn axis_ticks(axis: &Axis, (lo, hi): (f64, f64), target: usize) -> Vec<Tick> {
    match axis.scale {
        Scale::Linear => ticks::linear(lo, hi, target),
        Scale::Log => ticks::log(lo, hi, target),
    }
}

/// Keeps at most a first, lowest, highest and last point per pixel column
/// (pixel coordinates in, order kept), and drops repeats at 0.1 px.
fn thin(points: &[(f64, f64)], columns: f64) -> Vec<(f64, f64)> {
    let round = |p: (f64, f64)| ((p.0 * 10.0).round() / 10.0, (p.1 * 10.0).round() / 10.0);
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(points.len().min(8 * columns as usize));
    let mut push = |p: (f64, f64)| {
        let p = round(p);
        if out.last() != Some(&p) {
            out.push(p);
        }
    };
    if (points.len() as f64) <= 4.0 * columns {
        for &p in points {
            push(p);
        }
        return out;
    }
    let mut i = 0;
    while i < points.len() {
        let column = points[i].0.floor();
        let start = i;
        let (mut lo, mut hi) = (i, i);
        while i < points.len() && points[i].0.floor() == column {
            if points[i].1 < points[lo].1 {
                lo = i;
            }
            if points[i].1 > points[hi].1 {
                hi = i;
            }
            i += 1;
        }
        let mut keep = [start, lo, hi, i - 1];
        keep.sort_unstable();
        for k in keep {
            push(points[k]);
        }
    }
    out
}

/// The drawn vertices of a series in data units, split at non-finite
/// values; steps expanded.
fn segments(series: &Series) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    let pts = &series.points;
    for (i, &(x, y)) in pts.iter().enumerate() {
        if !(x.is_finite() && y.is_finite()) {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            continue;
        }
        current.push((x, y));
        if series.steps
            && let Some(&(xn, yn)) = pts.get(i + 1)
            && xn.is_finite()
            && yn.is_finite()
        {
            current.push((xn, y));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn attr_name(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect::<String>()
        .to_ascii_lowercase()
}

fn marker(out: &mut String, shape: Shape, x: f64, y: f64, size: f64, colour: Colour) {
    match shape {
        Shape::Circle => {
            let _ = write!(
                out,
                r#"<circle cx="{}" cy="{}" r="{}" fill="{}"/>"#,
                num(x),
                num(y),
                num(size),
                colour.hex()
            );
        }
        Shape::Cross => {
            let _ = write!(
                out,
                r#"<path d="M{} {}L{} {}M{} {}L{} {}" stroke="{}" stroke-width="2" fill="none"/>"#,
                num(x - size),
                num(y - size),
                num(x + size),
                num(y + size),
                num(x - size),
                num(y + size),
                num(x + size),
                num(y - size),
                colour.hex()
            );
        }
    }
}

fn swatch(out: &mut String, s: &Swatch, x: f64, y: f64) {
    match s {
        Swatch::Line(stroke) | Swatch::LineMarker(stroke, _) => {
            // A thin line on a pixel's middle, not across two.
            let y = if stroke.width <= 1.2 { y + 0.5 } else { y };
            let _ = write!(
                out,
                r#"<line x1="{}" y1="{}" x2="{}" y2="{}"{}/>"#,
                num(x),
                num(y),
                num(x + SWATCH),
                num(y),
                stroke.attributes()
            );
            if let Swatch::LineMarker(stroke, shape) = s {
                marker(out, *shape, x + SWATCH / 2.0, y, 3.0, stroke.colour);
            }
        }
        Swatch::Marker(shape, colour) => marker(out, *shape, x + SWATCH / 2.0, y, 4.0, *colour),
    }
}

/// The label of an entry, cut to `width` with the whole label as hover
/// text when cut.
fn entry_text(out: &mut String, label: &str, x: f64, y: f64, width: f64, class: &str) {
    let shown = fit(label, TEXT, width);
    let _ = write!(
        out,
        r##"<text class="{class}" x="{}" y="{}" font-size="{}" fill="#222">{}"##,
        num(x),
        num(y + TEXT * 0.35),
        TEXT,
        escape(&shown)
    );
    if shown != label {
        let _ = write!(out, "<title>{}</title>", escape(label));
    }
    out.push_str("</text>");
}

impl Figure {
    /// The SVG document.
    pub fn svg(&self) -> String {
        let w = self.width.max(320.0);
        // Vertical ranges and ticks first: the left margin fits their labels.
        let ys: Vec<((f64, f64), Vec<Tick>)> = self
            .panels
            .iter()
            .map(|p| {
                let values = p
                    .series
                    .iter()
                    .flat_map(|s| s.points.iter().map(|q| q.1))
                    .chain(p.marks.iter().flat_map(|m| m.points.iter().map(|q| q.1)));
                let range = axis_range(&p.y, values);
                let heights = self.panel_height.max(ROW * p.legend.len() as f64 + 12.0);
                let target = ((heights / 42.0).round() as usize).clamp(3, 10);
                (range, axis_ticks(&p.y, range, target))
            })
            .collect();
        let tick_width = ys
            .iter()
            .flat_map(|(_, t)| t.iter().map(|t| text_width(&t.label, TICK)))
            .fold(0.0f64, f64::max);
        let left = (14.0 + TEXT + 10.0 + tick_width + 8.0).max(64.0);
        let legend_labels = self.panels.iter().flat_map(|p| p.legend.iter());
        let legend_max = legend_labels
            .map(|e| text_width(&e.label, TEXT))
            .fold(0.0f64, f64::max);
        let label_room = legend_max.min(0.3 * w);
        let right = if self.panels.iter().any(|p| !p.legend.is_empty()) {
            18.0 + SWATCH + 8.0 + label_room + 14.0
        } else {
            24.0
        };
        let plot_x0 = left;
        let plot_x1 = w - right;
        let plot_w = plot_x1 - plot_x0;

        // The key, wrapped into rows of the plot's width.
        let mut key_rows: Vec<Vec<(f64, &Entry)>> = Vec::new();
        let mut x = plot_x0;
        for e in &self.key {
            let width = SWATCH + 6.0 + text_width(&e.label, TEXT).min(plot_w - SWATCH - 6.0);
            if key_rows.is_empty() || (x + width > plot_x1 && x > plot_x0) {
                key_rows.push(Vec::new());
                x = plot_x0;
            }
            if let Some(row) = key_rows.last_mut() {
                row.push((x, e));
            }
            x += width + 24.0;
        }
        let title_h = if self.title.is_empty() { 10.0 } else { 34.0 };
        let top =
            title_h + key_rows.len() as f64 * ROW + if key_rows.is_empty() { 8.0 } else { 12.0 };
        let heights: Vec<f64> = self
            .panels
            .iter()
            .map(|p| {
                self.panel_height
                    .max(ROW * p.legend.len() as f64 + 12.0)
                    .max(60.0)
            })
            .collect();
        let panels_h: f64 =
            heights.iter().sum::<f64>() + GAP * heights.len().saturating_sub(1) as f64;
        let bottom_axis = 22.0 + TEXT + 12.0;
        let notes_h = self.notes.len() as f64 * (NOTE + 5.0);
        let h = (top + panels_h + bottom_axis + notes_h + 8.0).ceil();

        // The shared horizontal axis.
        let xs = self
            .panels
            .iter()
            .flat_map(|p| {
                p.series
                    .iter()
                    .flat_map(|s| s.points.iter().map(|q| q.0))
                    .chain(p.marks.iter().flat_map(|m| m.points.iter().map(|q| q.0)))
                    .chain(p.vlines.iter().map(|v| v.x))
            })
            .collect::<Vec<f64>>();
        let x_range = axis_range(&self.x, xs.into_iter());
        let x_target = ((plot_w / 85.0).round() as usize).clamp(3, 12);
        let x_ticks = axis_ticks(&self.x, x_range, x_target);
        let xmap = Map::new(self.x.scale, x_range, plot_x0, plot_x1);

        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" font-family="sans-serif">"#,
            num(w),
            num(h),
            num(w),
            num(h)
        );
        out.push('\n');
        let _ = writeln!(
            out,
            r#"<rect x="0" y="0" width="{}" height="{}" fill="white"/>"#,
            num(w),
            num(h)
        );
        if !self.title.is_empty() {
            let _ = writeln!(
                out,
                r##"<text class="title" x="{}" y="23" font-size="{TITLE}" font-weight="bold" text-anchor="middle" fill="#111">{}</text>"##,
                num((plot_x0 + plot_x1) / 2.0),
                escape(&fit(&self.title, TITLE, w - 20.0))
            );
        }
        if !key_rows.is_empty() {
            out.push_str(r#"<g class="key">"#);
            for (r, row) in key_rows.iter().enumerate() {
                let y = title_h + 4.0 + r as f64 * ROW;
                for (x, e) in row {
                    swatch(&mut out, &e.swatch, *x, y);
                    entry_text(
                        &mut out,
                        &e.label,
                        x + SWATCH + 6.0,
                        y,
                        plot_w - SWATCH - 6.0,
                        "key-label",
                    );
                }
            }
            out.push_str("</g>\n");
        }

        let mut y0 = top;
        let last = self.panels.len().saturating_sub(1);
        for (i, ((panel, (y_range, y_ticks)), ph)) in
            self.panels.iter().zip(&ys).zip(&heights).enumerate()
        {
            let (py0, py1) = (y0, y0 + ph);
            let ymap = Map::new(panel.y.scale, *y_range, py1, py0);
            let _ = write!(
                out,
                r#"<g class="panel" data-index="{i}" data-label="{}">"#,
                escape(&panel.y.label)
            );
            let _ = write!(
                out,
                r#"<clipPath id="clip{i}"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath>"#,
                num(plot_x0),
                num(py0),
                num(plot_w),
                num(*ph)
            );
            // Grid, the zero line, the frame.
            out.push_str(r##"<g stroke="#e8e8e8" stroke-width="1">"##);
            for t in &x_ticks {
                let px = xmap.at(t.value);
                let _ = write!(
                    out,
                    r#"<line x1="{}" y1="{}" x2="{}" y2="{}"/>"#,
                    num(px),
                    num(py0),
                    num(px),
                    num(py1)
                );
            }
            for t in y_ticks {
                let py = ymap.at(t.value);
                let _ = write!(
                    out,
                    r#"<line x1="{}" y1="{}" x2="{}" y2="{}"/>"#,
                    num(plot_x0),
                    num(py),
                    num(plot_x1),
                    num(py)
                );
            }
            out.push_str("</g>");
            if panel.y.scale == Scale::Linear && y_range.0 < 0.0 && y_range.1 > 0.0 {
                let py = ymap.at(0.0);
                let _ = write!(
                    out,
                    r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#c4c4c4" stroke-width="1"/>"##,
                    num(plot_x0),
                    num(py),
                    num(plot_x1),
                    num(py)
                );
            }
            let _ = write!(
                out,
                r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#a8a8a8" stroke-width="1"/>"##,
                num(plot_x0),
                num(py0),
                num(plot_w),
                num(*ph)
            );
            // Tick marks and labels.
            out.push_str(r##"<g font-size="12" fill="#333">"##);
            for t in y_ticks {
                let py = ymap.at(t.value);
                let _ = write!(
                    out,
                    r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#a8a8a8"/><text class="tick y" x="{}" y="{}" text-anchor="end">{}</text>"##,
                    num(plot_x0 - 4.0),
                    num(py),
                    num(plot_x0),
                    num(py),
                    num(plot_x0 - 7.0),
                    num(py + TICK * 0.35),
                    escape(&t.label)
                );
            }
            for t in &x_ticks {
                let px = xmap.at(t.value);
                let _ = write!(
                    out,
                    r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#a8a8a8"/>"##,
                    num(px),
                    num(py1),
                    num(px),
                    num(py1 + 4.0),
                );
                if i == last {
                    let _ = write!(
                        out,
                        r#"<text class="tick x" x="{}" y="{}" text-anchor="middle">{}</text>"#,
                        num(px),
                        num(py1 + 6.0 + TICK),
                        escape(&t.label)
                    );
                }
            }
            out.push_str("</g>");
            let _ = write!(
                out,
                r##"<text class="axis-label y" transform="translate({} {}) rotate(-90)" font-size="{TEXT}" text-anchor="middle" fill="#222">{}</text>"##,
                num(14.0 + TEXT * 0.8),
                num((py0 + py1) / 2.0),
                escape(&fit(&panel.y.label, TEXT, ph - 4.0))
            );
            // The data, clipped to the panel.
            let _ = write!(out, r#"<g clip-path="url(#clip{i})">"#);
            for v in &panel.vlines {
                let px = xmap.at(v.x);
                if px.is_finite() {
                    let _ = write!(
                        out,
                        r#"<line class="vline" x1="{}" y1="{}" x2="{}" y2="{}"{}/>"#,
                        num(px),
                        num(py0),
                        num(px),
                        num(py1),
                        v.stroke.attributes()
                    );
                }
            }
            for s in &panel.series {
                let _ = write!(out, r#"<g class="{}""#, escape(&s.class));
                for (k, v) in &s.data {
                    let _ = write!(out, r#" data-{}="{}""#, attr_name(k), escape(v));
                }
                out.push('>');
                if !s.tooltip.is_empty() {
                    let _ = write!(out, "<title>{}</title>", escape(&s.tooltip));
                }
                let segs = segments(s);
                if let Some(stroke) = &s.stroke {
                    for seg in &segs {
                        let px: Vec<(f64, f64)> =
                            seg.iter().map(|&(x, y)| (xmap.at(x), ymap.at(y))).collect();
                        let px: Vec<(f64, f64)> = px
                            .into_iter()
                            .filter(|p| p.0.is_finite() && p.1.is_finite())
                            .collect();
                        let pts = thin(&px, plot_w);
                        if pts.is_empty() {
                            continue;
                        }
                        out.push_str("<polyline points=\"");
                        for (k, (x, y)) in pts.iter().enumerate() {
                            if k > 0 {
                                out.push(' ');
                            }
                            let _ = write!(out, "{},{}", num(*x), num(*y));
                        }
                        let _ = write!(out, "\"{}/>", stroke.attributes());
                    }
                }
                if let Some((shape, size)) = s.markers {
                    let colour = s.stroke.map_or(Colour::DARK, |st| st.colour);
                    for &(x, y) in s.points.iter() {
                        let (px, py) = (xmap.at(x), ymap.at(y));
                        if px.is_finite() && py.is_finite() {
                            marker(&mut out, shape, px, py, size, colour);
                        }
                    }
                }
                out.push_str("</g>");
            }
            out.push_str("</g>");
            // Markers, not clipped (those on an edge stay whole).
            for m in &panel.marks {
                out.push_str(r#"<g class="marks">"#);
                for &(x, y) in &m.points {
                    let px = xmap.at(x);
                    let py = if y == f64::INFINITY {
                        py0
                    } else if y == f64::NEG_INFINITY {
                        py1
                    } else {
                        ymap.at(y)
                    };
                    if px.is_finite() && py.is_finite() {
                        marker(&mut out, m.shape, px, py.clamp(py0, py1), m.size, m.colour);
                    }
                }
                out.push_str("</g>");
            }
            // The legend, beside the panel.
            if !panel.legend.is_empty() {
                out.push_str(r#"<g class="legend">"#);
                let lx = plot_x1 + 18.0;
                for (k, e) in panel.legend.iter().enumerate() {
                    let ly = py0 + 10.0 + k as f64 * ROW;
                    out.push_str(r#"<g class="legend-entry">"#);
                    swatch(&mut out, &e.swatch, lx, ly);
                    entry_text(
                        &mut out,
                        &e.label,
                        lx + SWATCH + 8.0,
                        ly,
                        label_room,
                        "legend-label",
                    );
                    out.push_str("</g>");
                }
                out.push_str("</g>");
            }
            out.push_str("</g>\n");
            y0 = py1 + GAP;
        }
        let axis_y = y0 - GAP + 22.0 + TEXT;
        let _ = writeln!(
            out,
            r##"<text class="axis-label x" x="{}" y="{}" font-size="{TEXT}" text-anchor="middle" fill="#222">{}</text>"##,
            num((plot_x0 + plot_x1) / 2.0),
            num(axis_y + 4.0),
            escape(&self.x.label)
        );
        for (k, note) in self.notes.iter().enumerate() {
            let _ = writeln!(
                out,
                r##"<text class="note" x="{}" y="{}" font-size="{NOTE}" fill="#666">{}</text>"##,
                num(plot_x0),
                num(axis_y + 12.0 + (k + 1) as f64 * (NOTE + 5.0)),
                escape(&fit(note, NOTE, w - plot_x0 - 10.0))
            );
        }
        out.push_str("</svg>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_extremes_per_pixel_column() {
        let pts: Vec<(f64, f64)> = (0..10_000)
            .map(|i| {
                (
                    i as f64 / 100.0,
                    if i == 5_555 { 99.0 } else { (i % 7) as f64 },
                )
            })
            .collect();
        let thin = thin(&pts, 100.0);
        assert!(thin.len() <= 4 * 100 + 4, "{}", thin.len());
        assert!(thin.iter().any(|p| p.1 == 99.0), "the spike is kept");
        assert!(thin.windows(2).all(|w| w[0].0 <= w[1].0), "in order");
    }

    #[test]
    fn steps_hold_each_value_until_the_next_point() {
        let mut s = Series::line(
            vec![
                (0.0, 1.0),
                (1.0, 0.0),
                (2.0, f64::NAN),
                (3.0, 1.0),
                (4.0, 2.0),
            ],
            Stroke::solid(Colour::BLACK, 1.0),
        );
        s.steps = true;
        assert_eq!(
            segments(&s),
            vec![
                vec![(0.0, 1.0), (1.0, 1.0), (1.0, 0.0)],
                vec![(3.0, 1.0), (4.0, 1.0), (4.0, 2.0)]
            ]
        );
    }

    #[test]
    fn a_figure_is_svg_with_panels_legends_and_escaped_text() {
        let mut f = Figure::new("a <title> & more", Axis::linear("time [s]"));
        for unit in ["m", "N"] {
            let mut p = Panel::new(Axis::linear(unit));
            p.series.push(Series::line(
                vec![(0.0, 0.0), (1.0, 0.3), (2.0, 0.1)],
                Stroke::solid(palette(0), 1.8),
            ));
            p.legend.push(Entry {
                label: format!("x [{unit}]"),
                swatch: Swatch::Line(Stroke::solid(palette(0), 1.8)),
            });
            f.panels.push(p);
        }
        let svg = f.svg();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert_eq!(svg.matches(r#"<g class="panel""#).count(), 2);
        assert!(svg.contains("a &lt;title&gt; &amp; more"));
        assert!(svg.contains(">x [N]</text>"));
        // Tick labels along x only under the last panel.
        let second = svg.find(r#"data-index="1""#).unwrap();
        assert!(!svg[..second].contains(r#"class="tick x""#));
        assert!(svg[second..].matches(r#"class="tick x""#).count() >= 3);
    }
}
