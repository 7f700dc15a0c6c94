//! The sweep definition: a `[sweep]` table, in a file of its own that names
//! the scenario, or inside the scenario itself (see `docs/sweep.md`).

use std::ops::Range;
use std::path::{Path, PathBuf};

use cosim_core::metrics::{ColumnProduct, Table};
use cosim_scenario::Scenario;
use serde::Serialize;
use toml_edit::{Item, TableLike, Value};

use crate::axis::{self, Axis, AxisValue, SCENARIO_TABLES, Scale, Target};
use crate::edit;
use crate::error::{Located, Source, SweepError, did_you_mean};
use crate::threshold::Threshold;

type Result<T, E = SweepError> = std::result::Result<T, E>;
/// A number and where it is written.
type Number = (f64, Option<Range<usize>>);

const SWEEP_KEYS: &[&str] = &[
    "scenario",
    "out",
    "combine",
    "axes",
    "set",
    "reference",
    "divergence",
    "refine",
    "fail_if",
    "plot",
];
const AXIS_KEYS: &[&str] = &["key", "values", "range"];
const RANGE_KEYS: &[&str] = &["from", "to", "count", "scale"];
const REFERENCE_KEYS: &[&str] = &["file", "columns", "power", "bond", "from", "until"];
const DIVERGENCE_KEYS: &[&str] = &["bound", "growth", "window"];
const REFINE_KEYS: &[&str] = &["axis", "iterations"];
const PLOT_KEYS: &[&str] = &["x", "metric", "file"];
const FAIL_IF_KEYS: &[&str] = &["metric", "op", "value"];

/// How the axes combine into runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Combine {
    /// Every combination (the first axis varies slowest).
    Product,
    /// The i-th values of all axes together (equal lengths).
    Zip,
}

/// `[sweep.reference]`: the solution runs are compared with.
#[derive(Debug, Clone)]
pub struct Reference {
    /// The reference CSV (first column time).
    pub file: PathBuf,
    /// Its contents.
    pub table: Table,
    /// Explicit (trace column, reference column) pairs; the rest are paired
    /// by name as `cosim compare` does.
    pub columns: Vec<(String, String)>,
    /// The reference transmitted power of the bond (`F_c*v_c`), for the
    /// power-bond metrics.
    pub power: Option<(String, ColumnProduct)>,
    /// The bond of the power metrics (default: the first of the energy log).
    pub bond: Option<String>,
    /// Compare from this time on.
    pub from: f64,
    /// Compare up to this time (default: the run's stop time).
    pub until: f64,
}

/// `[sweep.divergence]`: when a run that completed counts as diverged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Divergence {
    /// A compared trace column above `bound` times the reference's largest
    /// absolute value (`None`: not checked).
    pub bound: Option<f64>,
    /// The RMS residual power of a bond over the last window above
    /// `growth` times that over the window before (`None`: not checked).
    pub growth: Option<f64>,
    /// The window, as a fraction of the run.
    pub window: f64,
}

impl Default for Divergence {
    fn default() -> Self {
        Divergence {
            bound: Some(100.0),
            growth: Some(1.2),
            window: 0.25,
        }
    }
}

/// `[sweep.refine]`: bisection of the stability limit along one axis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Refine {
    /// The axis (index into the axes).
    pub axis: usize,
    /// Bisection steps.
    pub iterations: u32,
}

/// `[sweep.plot]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlotSpec {
    /// The axis on the horizontal axis (default: the first numeric axis
    /// with more than one value).
    pub x: Option<usize>,
    /// The error metric plotted (default: `mean_abs_power_error`, else the
    /// first `max_abs:` column, else `max_indicator`).
    pub metric: Option<String>,
    /// File name in the output directory.
    pub file: String,
}

/// A parsed and checked sweep.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    /// The sweep file.
    pub file: PathBuf,
    /// The scenario it varies (the sweep file itself when embedded).
    pub scenario: PathBuf,
    /// The sweep is a `[sweep]` table inside the scenario.
    pub embedded: bool,
    /// The axes.
    pub axes: Vec<Axis>,
    /// Values set in every run (`[sweep.set]`), as one-value axes.
    pub set: Vec<Axis>,
    /// How the axes combine.
    pub combine: Combine,
    /// The output directory.
    pub out: PathBuf,
    /// The reference, if any.
    pub reference: Option<Reference>,
    /// The divergence criteria.
    pub divergence: Divergence,
    /// Thresholds from the file.
    pub fail_if: Vec<Threshold>,
    /// Bisection of the stability limit.
    pub refine: Option<Refine>,
    /// The plot.
    pub plot: PlotSpec,
    pub(crate) source: Source,
    /// The scenario text the axes are applied to.
    pub(crate) scenario_text: String,
    /// The scenario with no axis applied, parsed once for the sweep: the
    /// runs of a sweep whose values are all parameters and start values
    /// start from a copy of it ([`crate::edit::build`]).
    pub(crate) base: std::sync::OnceLock<Result<Scenario, String>>,
}

struct Reader<'a> {
    src: &'a Source,
}

fn key_span(t: &dyn TableLike, key: &str) -> Option<Range<usize>> {
    t.key(key).and_then(|k| k.span())
}

fn item_span(t: &dyn TableLike, key: &str) -> Option<Range<usize>> {
    t.get(key).and_then(Item::span).or_else(|| key_span(t, key))
}

impl Reader<'_> {
    fn err(&self, span: Option<Range<usize>>, message: impl Into<String>) -> Located {
        self.src.error(span, message)
    }

    fn table<'t>(
        &self,
        item: &'t Item,
        span: Option<Range<usize>>,
        what: &str,
    ) -> Result<&'t dyn TableLike> {
        item.as_table_like().ok_or_else(|| {
            self.err(
                span,
                format!("{what} must be a table, not {}", item.type_name()),
            )
            .into()
        })
    }

    fn check_keys(&self, t: &dyn TableLike, allowed: &[&str], what: &str) -> Result<()> {
        for (k, _) in t.iter() {
            if !allowed.contains(&k) {
                return Err(self
                    .err(key_span(t, k), format!("unknown key '{k}' in {what}"))
                    .with_help(did_you_mean(k, allowed.iter().copied()))
                    .with_note(format!("{what} takes: {}", allowed.join(", ")))
                    .into());
            }
        }
        Ok(())
    }

    fn value<'t>(&self, t: &'t dyn TableLike, key: &str) -> Result<Option<&'t Value>> {
        match t.get(key) {
            None => Ok(None),
            Some(Item::Value(v)) => Ok(Some(v)),
            Some(other) => Err(self
                .err(
                    item_span(t, key),
                    format!("'{key}' must be a value, not {}", other.type_name()),
                )
                .into()),
        }
    }

    fn string(
        &self,
        t: &dyn TableLike,
        key: &str,
    ) -> Result<Option<(String, Option<Range<usize>>)>> {
        match self.value(t, key)? {
            None => Ok(None),
            Some(v) => match v.as_str() {
                Some(s) => Ok(Some((s.to_string(), v.span()))),
                None => Err(self
                    .err(
                        v.span(),
                        format!("'{key}' must be a string, not {}", v.type_name()),
                    )
                    .into()),
            },
        }
    }

    fn float(&self, t: &dyn TableLike, key: &str) -> Result<Option<(f64, Option<Range<usize>>)>> {
        match self.value(t, key)? {
            None => Ok(None),
            Some(v) => match (v.as_float(), v.as_integer()) {
                (Some(x), _) => Ok(Some((x, v.span()))),
                (_, Some(i)) => Ok(Some((i as f64, v.span()))),
                _ => Err(self
                    .err(
                        v.span(),
                        format!("'{key}' must be a number, not {}", v.type_name()),
                    )
                    .into()),
            },
        }
    }

    /// A float or `false` (disabled).
    fn float_or_false(&self, t: &dyn TableLike, key: &str) -> Result<Option<Option<Number>>> {
        if let Some(v) = self.value(t, key)?
            && v.as_bool() == Some(false)
        {
            return Ok(Some(None));
        }
        Ok(self.float(t, key)?.map(Some))
    }

    fn scalar(&self, v: &Value) -> Result<AxisValue> {
        Ok(match v {
            Value::Integer(i) => AxisValue::Int(*i.value()),
            Value::Float(x) => AxisValue::Float(*x.value()),
            Value::Boolean(b) => AxisValue::Bool(*b.value()),
            Value::String(s) => AxisValue::Str(s.value().clone()),
            other => {
                return Err(self
                    .err(
                        other.span(),
                        format!(
                            "an axis value must be a number, a string or a boolean, not {}",
                            other.type_name()
                        ),
                    )
                    .into());
            }
        })
    }

    /// Classifies an axis key against the scenario's subsystems.
    fn target(&self, key: &str, span: Option<Range<usize>>, base: &Scenario) -> Result<Target> {
        let parts: Vec<&str> = key.split('.').collect();
        if parts.iter().any(|p| p.trim().is_empty()) || parts.len() < 2 {
            return Err(self
                .err(span, format!("'{key}' is not a scenario key"))
                .with_note("a key is '<table>.<key>' (master.step, simulation.stop, master.controller.dt_max), 'subsystems.<name>.<key>' (subsystems.wheel.step_multiple) or '<subsystem>.<variable>' (wheel.k_c)")
                .into());
        }
        let first = parts[0];
        if SCENARIO_TABLES.contains(&first) {
            return Ok(Target::Table {
                path: parts.iter().map(|p| p.to_string()).collect(),
            });
        }
        let names: Vec<&str> = base
            .subsystems()
            .iter()
            .map(|s| s.name.value.as_str())
            .collect();
        if first == "subsystems" {
            if parts.len() < 3 {
                return Err(self
                    .err(span, format!("'{key}': expected 'subsystems.<name>.<key>'"))
                    .into());
            }
            let name = parts[1];
            if base.subsystem_index(name).is_none() {
                return Err(self
                    .err(
                        span,
                        format!("'{key}': the scenario has no subsystem '{name}'"),
                    )
                    .with_help(did_you_mean(name, names.iter().copied()))
                    .into());
            }
            return Ok(Target::Subsystem {
                name: name.to_string(),
                key: parts[2..].join("."),
            });
        }
        let Some((sub, var)) = key.split_once('.') else {
            return Err(self
                .err(span, format!("'{key}' is not a scenario key"))
                .into());
        };
        if base.subsystem_index(sub).is_none() {
            let candidates = names.iter().copied().chain(SCENARIO_TABLES.iter().copied());
            return Err(self
                .err(span, format!("'{key}': '{sub}' is neither a scenario table (simulation, master, outputs) nor a subsystem of the scenario"))
                .with_help(did_you_mean(sub, candidates))
                .into());
        }
        Ok(Target::Variable {
            subsystem: sub.to_string(),
            variable: var.to_string(),
        })
    }

    fn axis(
        &self,
        t: &dyn TableLike,
        header: Option<Range<usize>>,
        base: &Scenario,
    ) -> Result<Axis> {
        self.check_keys(t, AXIS_KEYS, "[[sweep.axes]]")?;
        let (key, kspan) = self.string(t, "key")?.ok_or_else(|| {
            self.err(
                header.clone(),
                "an axis needs a 'key' (e.g. key = \"master.step\")",
            )
        })?;
        let target = self.target(&key, kspan.clone(), base)?;
        let (values, spans, scale) = match (t.get("values"), t.get("range")) {
            (Some(_), Some(_)) => {
                return Err(self
                    .err(
                        key_span(t, "range"),
                        "give either 'values' or 'range', not both",
                    )
                    .into());
            }
            (None, None) => {
                return Err(self
                    .err(header, format!("axis '{key}' needs 'values = [...]' or 'range = {{ from, to, count, scale }}'"))
                    .into());
            }
            (Some(item), None) => {
                let arr = item.as_array().ok_or_else(|| {
                    self.err(
                        item.span(),
                        format!("'values' must be an array, not {}", item.type_name()),
                    )
                })?;
                if arr.is_empty() {
                    return Err(self.err(item.span(), "'values' is empty").into());
                }
                let mut values = Vec::new();
                let mut spans = Vec::new();
                for v in arr.iter() {
                    values.push(self.scalar(v)?);
                    spans.push(v.span());
                }
                (values, spans, Scale::List)
            }
            (None, Some(item)) => {
                let rspan = item.span();
                let r = self.table(item, rspan.clone(), "'range'")?;
                self.check_keys(r, RANGE_KEYS, "'range'")?;
                let endpoint = |k: &str| -> Result<AxisValue> {
                    let v = self
                        .value(r, k)?
                        .ok_or_else(|| self.err(rspan.clone(), format!("'range' needs '{k}'")))?;
                    self.scalar(v)
                };
                let from = endpoint("from")?;
                let to = endpoint("to")?;
                let count = match self.value(r, "count")? {
                    None => {
                        return Err(self
                            .err(
                                rspan.clone(),
                                "'range' needs 'count' (the number of values)",
                            )
                            .into());
                    }
                    Some(v) => match v.as_integer() {
                        Some(c) if (1..=100_000).contains(&c) => c as usize,
                        _ => {
                            return Err(self
                                .err(v.span(), "'count' must be an integer from 1 to 100000")
                                .into());
                        }
                    },
                };
                let scale = match self.string(r, "scale")? {
                    None => Scale::Linear,
                    Some((s, _)) if s == "linear" => Scale::Linear,
                    Some((s, _)) if s == "log" => Scale::Log,
                    Some((s, span)) => {
                        return Err(self
                            .err(span, format!("unknown scale '{s}'"))
                            .with_help(did_you_mean(&s, ["linear", "log"]))
                            .into());
                    }
                };
                let values = axis::range_values(from, to, count, scale)
                    .map_err(|e| self.err(rspan.clone(), e))?;
                let spans = vec![rspan; values.len()];
                (values, spans, scale)
            }
        };
        Ok(Axis {
            key,
            target,
            values,
            scale,
            key_span: kspan,
            value_spans: spans,
        })
    }
}

/// Flattens `[sweep.set]` (dotted keys and sub-tables joined with dots).
fn flatten<'t>(
    prefix: &str,
    t: &'t dyn TableLike,
    out: &mut Vec<(String, &'t Item, Option<Range<usize>>)>,
) {
    for (k, item) in t.iter() {
        let key = if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        };
        match item.as_table_like() {
            Some(sub) => flatten(&key, sub, out),
            None => out.push((key, item, key_span(t, k))),
        }
    }
}

fn absolute(dir: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        dir.join(p)
    }
}

impl SweepSpec {
    /// Reads a sweep file (or a scenario with a `[sweep]` table), reads
    /// the scenario and the reference, and checks every axis value against
    /// the scenario: everything but opening the FMUs.
    ///
    /// # Errors
    ///
    /// A located error for a problem in the sweep definition, a scenario
    /// error for a problem in the scenario itself.
    pub fn load(path: &Path) -> Result<SweepSpec> {
        let text = std::fs::read_to_string(path).map_err(|e| SweepError::io(path, e))?;
        SweepSpec::from_str(&text, path)
    }

    /// Like [`SweepSpec::load`] with the text given (relative paths are
    /// resolved against `path`'s directory).
    ///
    /// # Errors
    ///
    /// As [`SweepSpec::load`].
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &str, path: &Path) -> Result<SweepSpec> {
        let spec = SweepSpec::from_checked_str(text, path)?;
        edit::check_values(&spec)?;
        Ok(spec)
    }

    /// Like [`SweepSpec::from_str`] without checking every axis value
    /// against the scenario: for the text of a sweep that was checked
    /// (a worker's, handed to it by the sweep).
    ///
    /// # Errors
    ///
    /// As [`SweepSpec::load`], but for a bad axis value.
    pub(crate) fn from_checked_str(text: &str, path: &Path) -> Result<SweepSpec> {
        let src = Source {
            path: path.to_path_buf(),
            text: text.to_string(),
        };
        let r = Reader { src: &src };
        let doc = toml_edit::Document::parse(text.to_string()).map_err(|e| {
            r.err(
                e.span(),
                format!("invalid TOML: {}", e.message().trim_end()),
            )
        })?;
        let root = doc.as_table();
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let sweep_item = root.get("sweep").ok_or_else(|| {
            r.err(None, "no [sweep] table: a sweep file has a [sweep] table naming the scenario and the axes")
        })?;
        let sweep = r.table(sweep_item, key_span(root, "sweep"), "'sweep'")?;
        if sweep_item.as_table().is_some_and(|t| t.is_dotted()) {
            return Err(r
                .err(
                    key_span(root, "sweep"),
                    "write the sweep as a [sweep] table, not as dotted keys",
                )
                .into());
        }
        r.check_keys(sweep, SWEEP_KEYS, "[sweep]")?;

        // The scenario: named, or this file itself.
        let (scenario, scenario_text, embedded) = match r.string(sweep, "scenario")? {
            Some((name, span)) => {
                for (k, _) in root.iter() {
                    if k != "sweep" {
                        return Err(r
                            .err(key_span(root, k), format!("unknown key '{k}' in a sweep file"))
                            .with_note("a sweep file holds only a [sweep] table; to sweep inside a scenario, put [sweep] into the scenario without 'scenario ='")
                            .into());
                    }
                }
                let file = absolute(&dir, &name);
                let stext = std::fs::read_to_string(&file).map_err(|e| {
                    r.err(
                        span,
                        format!(
                            "cannot read the scenario {}: {e}",
                            crate::shown(&file).display()
                        ),
                    )
                })?;
                (file, stext, false)
            }
            None => (
                path.to_path_buf(),
                edit::blank_sweep(text, &doc).map_err(|e| r.err(None, e))?,
                true,
            ),
        };
        let base = Scenario::from_str(&scenario_text, &scenario)?;
        base.check_fmu_files()?;

        let combine = match r.string(sweep, "combine")? {
            None => Combine::Product,
            Some((s, _)) if s == "product" => Combine::Product,
            Some((s, _)) if s == "zip" => Combine::Zip,
            Some((s, span)) => {
                return Err(r
                    .err(span, format!("unknown combination '{s}'"))
                    .with_help(did_you_mean(&s, ["product", "zip"]))
                    .into());
            }
        };

        let mut axes = Vec::new();
        match sweep.get("axes") {
            None => {}
            Some(Item::ArrayOfTables(list)) => {
                for t in list.iter() {
                    axes.push(r.axis(t, t.span(), &base)?);
                }
            }
            Some(Item::Value(Value::Array(list))) => {
                for v in list.iter() {
                    let t = v.as_inline_table().ok_or_else(|| {
                        r.err(
                            v.span(),
                            "each axis is a table { key = ..., values = [...] }",
                        )
                    })?;
                    axes.push(r.axis(t, v.span(), &base)?);
                }
            }
            Some(other) => {
                return Err(r
                    .err(
                        other.span().or_else(|| key_span(sweep, "axes")),
                        "'axes' must be [[sweep.axes]] tables",
                    )
                    .into());
            }
        }
        if axes.is_empty() {
            return Err(r
                .err(
                    key_span(root, "sweep"),
                    "the sweep has no axis: add [[sweep.axes]] with a key and values or a range",
                )
                .into());
        }
        for (i, a) in axes.iter().enumerate() {
            if let Some(first) = axes[..i].iter().find(|b| b.key == a.key) {
                return Err(r
                    .err(
                        a.key_span.clone(),
                        format!("axis '{}' is given twice", a.key),
                    )
                    .with_note(format!(
                        "first given at line {}",
                        r.err(first.key_span.clone(), "").line.unwrap_or(0)
                    ))
                    .into());
            }
        }
        if combine == Combine::Zip
            && let Some(a) = axes.iter().find(|a| a.values.len() != axes[0].values.len())
        {
            return Err(r
                .err(
                    a.key_span.clone(),
                    format!(
                        "combine = \"zip\" needs axes of equal length: '{}' has {} {}, '{}' has {}",
                        a.key,
                        a.values.len(),
                        if a.values.len() == 1 {
                            "value"
                        } else {
                            "values"
                        },
                        axes[0].key,
                        axes[0].values.len()
                    ),
                )
                .into());
        }

        let mut set = Vec::new();
        if let Some(item) = sweep.get("set") {
            let t = r.table(item, item_span(sweep, "set"), "'set'")?;
            let mut flat = Vec::new();
            flatten("", t, &mut flat);
            for (key, item, span) in flat {
                let v = item
                    .as_value()
                    .ok_or_else(|| r.err(span.clone(), format!("'{key}' must be a value")))?;
                let target = r.target(&key, span.clone(), &base)?;
                if axes.iter().any(|a| a.key == key) {
                    return Err(r
                        .err(
                            span,
                            format!("'{key}' is both an axis and set in [sweep.set]"),
                        )
                        .into());
                }
                set.push(Axis {
                    key,
                    target,
                    values: vec![r.scalar(v)?],
                    scale: Scale::List,
                    key_span: span,
                    value_spans: vec![v.span()],
                });
            }
        }

        let out = match r.string(sweep, "out")? {
            Some((o, _)) => absolute(&dir, &o),
            None => {
                let stem = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "sweep".into());
                dir.join("out").join(stem)
            }
        };

        let reference = match sweep.get("reference") {
            None => None,
            Some(item) => {
                let t = r.table(item, item_span(sweep, "reference"), "'reference'")?;
                r.check_keys(t, REFERENCE_KEYS, "[sweep.reference]")?;
                let (file, fspan) = r.string(t, "file")?.ok_or_else(|| {
                    r.err(
                        item.span(),
                        "[sweep.reference] needs 'file' (the reference CSV)",
                    )
                })?;
                let file = absolute(&dir, &file);
                let table = Table::read(&file)
                    .map_err(|e| r.err(fspan, format!("cannot read the reference: {e}")))?;
                let mut columns = Vec::new();
                if let Some(citem) = t.get("columns") {
                    let c = r.table(citem, item_span(t, "columns"), "'columns'")?;
                    for (trace_col, v) in c.iter() {
                        let vspan = v.span();
                        let rc = v.as_str().ok_or_else(|| {
                            r.err(
                                vspan.clone(),
                                "a column map entry is \"<trace column>\" = \"<reference column>\"",
                            )
                        })?;
                        if table.column(rc).is_none() {
                            return Err(r
                                .err(vspan, format!("the reference has no column '{rc}'"))
                                .with_help(did_you_mean(
                                    rc,
                                    table.names.iter().skip(1).map(String::as_str),
                                ))
                                .with_note(format!(
                                    "it has: {}",
                                    table
                                        .names
                                        .iter()
                                        .skip(1)
                                        .cloned()
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ))
                                .into());
                        }
                        columns.push((trace_col.to_string(), rc.to_string()));
                    }
                }
                let power = match r.string(t, "power")? {
                    None => None,
                    Some((expr, span)) => {
                        let p = ColumnProduct::parse(&expr, &table).map_err(|e| r.err(span, e))?;
                        Some((expr, p))
                    }
                };
                let bond = r.string(t, "bond")?.map(|(b, _)| b);
                let from = r.float(t, "from")?.map_or(f64::NEG_INFINITY, |(x, _)| x);
                let until = r.float(t, "until")?.map_or(f64::INFINITY, |(x, _)| x);
                Some(Reference {
                    file,
                    table,
                    columns,
                    power,
                    bond,
                    from,
                    until,
                })
            }
        };

        let mut divergence = Divergence::default();
        if let Some(item) = sweep.get("divergence") {
            let t = r.table(item, item_span(sweep, "divergence"), "'divergence'")?;
            r.check_keys(t, DIVERGENCE_KEYS, "[sweep.divergence]")?;
            if let Some(b) = r.float_or_false(t, "bound")? {
                divergence.bound = match b {
                    None => None,
                    Some((x, _)) if x > 1.0 && x.is_finite() => Some(x),
                    Some((_, span)) => {
                        return Err(r
                            .err(span, "'bound' must be a number above 1, or false")
                            .into());
                    }
                };
            }
            if let Some(g) = r.float_or_false(t, "growth")? {
                divergence.growth = match g {
                    None => None,
                    Some((x, _)) if x >= 1.0 && x.is_finite() => Some(x),
                    Some((_, span)) => {
                        return Err(r
                            .err(span, "'growth' must be a number of at least 1, or false")
                            .into());
                    }
                };
            }
            if let Some((w, span)) = r.float(t, "window")? {
                if !(w > 0.0 && w <= 0.5) {
                    return Err(r
                        .err(span, "'window' must be a fraction of the run in (0, 0.5]")
                        .into());
                }
                divergence.window = w;
            }
        }

        let find_axis = |name: &str, span: Option<Range<usize>>| -> Result<usize> {
            axes.iter().position(|a| a.key == name).ok_or_else(|| {
                r.err(span, format!("'{name}' is not an axis of the sweep"))
                    .with_help(did_you_mean(name, axes.iter().map(|a| a.key.as_str())))
                    .into()
            })
        };

        let mut plot = PlotSpec {
            x: None,
            metric: None,
            file: "sweep.svg".into(),
        };
        if let Some(item) = sweep.get("plot") {
            let t = r.table(item, item_span(sweep, "plot"), "'plot'")?;
            r.check_keys(t, PLOT_KEYS, "[sweep.plot]")?;
            if let Some((x, span)) = r.string(t, "x")? {
                let i = find_axis(&x, span.clone())?;
                if !axes[i].is_numeric() {
                    return Err(r
                        .err(
                            span,
                            format!("axis '{x}' is not numeric: it cannot be the horizontal axis"),
                        )
                        .into());
                }
                plot.x = Some(i);
            }
            plot.metric = r.string(t, "metric")?.map(|(m, _)| m);
            if let Some((f, span)) = r.string(t, "file")? {
                if !f.ends_with(".svg") || f.contains(['/', '\\']) {
                    return Err(r.err(span, "'file' is a file name ending in .svg").into());
                }
                plot.file = f;
            }
        }
        if plot.x.is_none() {
            // The numeric axis with the most values, ranges before lists.
            plot.x = axes
                .iter()
                .enumerate()
                .filter(|(_, a)| a.is_numeric() && a.values.len() > 1)
                .max_by_key(|(i, a)| {
                    (
                        a.scale != Scale::List,
                        a.values.len(),
                        std::cmp::Reverse(*i),
                    )
                })
                .map(|(i, _)| i);
        }

        let refine = match sweep.get("refine") {
            None => None,
            Some(item) => {
                let t = r.table(item, item_span(sweep, "refine"), "'refine'")?;
                r.check_keys(t, REFINE_KEYS, "[sweep.refine]")?;
                let axis = match r.string(t, "axis")? {
                    Some((a, span)) => {
                        let i = find_axis(&a, span.clone())?;
                        if !axes[i].is_numeric() {
                            return Err(r
                                .err(
                                    span,
                                    format!("axis '{a}' is not numeric: it cannot be bisected"),
                                )
                                .into());
                        }
                        i
                    }
                    None => plot.x.ok_or_else(|| {
                        r.err(
                            item.span(),
                            "[sweep.refine] needs a numeric axis with several values",
                        )
                    })?,
                };
                let iterations = match r.value(t, "iterations")? {
                    None => 4,
                    Some(v) => match v.as_integer() {
                        Some(n) if (0..=30).contains(&n) => n as u32,
                        _ => {
                            return Err(r
                                .err(v.span(), "'iterations' must be an integer from 0 to 30")
                                .into());
                        }
                    },
                };
                Some(Refine { axis, iterations })
            }
        };

        let mut fail_if = Vec::new();
        match sweep.get("fail_if") {
            None => {}
            Some(Item::ArrayOfTables(list)) => {
                for t in list.iter() {
                    fail_if.push(r.threshold_table(t, t.span())?);
                }
            }
            Some(Item::Value(Value::Array(list))) => {
                for v in list.iter() {
                    match v {
                        Value::String(s) => {
                            fail_if
                                .push(s.value().parse().map_err(|e: String| r.err(v.span(), e))?);
                        }
                        Value::InlineTable(t) => fail_if.push(r.threshold_table(t, v.span())?),
                        other => {
                            return Err(r
                                .err(other.span(), "a threshold is a string 'METRIC OP VALUE' or a table { metric, op, value }")
                                .into());
                        }
                    }
                }
            }
            Some(other) => {
                return Err(r
                    .err(
                        other.span().or_else(|| key_span(sweep, "fail_if")),
                        "'fail_if' is a list of thresholds",
                    )
                    .into());
            }
        }

        let spec = SweepSpec {
            file: path.to_path_buf(),
            scenario,
            embedded,
            axes,
            set,
            combine,
            out,
            reference,
            divergence,
            fail_if,
            refine,
            plot,
            source: src.clone(),
            scenario_text,
            base: std::sync::OnceLock::new(),
        };
        Ok(spec)
    }

    /// The number of runs of the grid (before any refinement).
    pub fn grid_len(&self) -> usize {
        match self.combine {
            Combine::Product => self.axes.iter().map(|a| a.values.len()).product(),
            Combine::Zip => self.axes.first().map_or(0, |a| a.values.len()),
        }
    }

    /// The axis values of grid run `index` (first axis slowest).
    pub fn grid_values(&self, index: usize) -> Vec<AxisValue> {
        match self.combine {
            Combine::Zip => self
                .axes
                .iter()
                .filter_map(|a| a.values.get(index).cloned())
                .collect(),
            Combine::Product => {
                let mut rest = index;
                let mut out = vec![AxisValue::Int(0); self.axes.len()];
                for (slot, a) in out.iter_mut().zip(&self.axes).rev() {
                    let n = a.values.len().max(1);
                    if let Some(v) = a.values.get(rest % n) {
                        *slot = v.clone();
                    }
                    rest /= n;
                }
                out
            }
        }
    }

    /// An error at a place of the sweep file.
    pub(crate) fn error_at(
        &self,
        span: Option<Range<usize>>,
        message: impl Into<String>,
    ) -> Located {
        self.source.error(span, message)
    }

    /// The axis keys (the summary's axis columns).
    pub fn axis_keys(&self) -> Vec<String> {
        self.axes.iter().map(|a| a.key.clone()).collect()
    }
}

impl Reader<'_> {
    fn threshold_table(&self, t: &dyn TableLike, span: Option<Range<usize>>) -> Result<Threshold> {
        self.check_keys(t, FAIL_IF_KEYS, "a fail_if threshold")?;
        let (metric, _) = self
            .string(t, "metric")?
            .ok_or_else(|| self.err(span.clone(), "a threshold needs 'metric'"))?;
        let (op, _) = self
            .string(t, "op")?
            .ok_or_else(|| self.err(span.clone(), "a threshold needs 'op' (> >= < <= == !=)"))?;
        let value = self
            .value(t, "value")?
            .ok_or_else(|| self.err(span.clone(), "a threshold needs 'value'"))?;
        let value_text = match value {
            Value::String(s) => s.value().clone(),
            other => other.to_string().trim().to_string(),
        };
        format!("{metric} {op} {value_text}")
            .parse()
            .map_err(|e: String| self.err(span, e).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = "[simulation]\nstop = 1.0\n\n[master]\nstep = 1e-3\n\n[[subsystems]]\nname = \"a\"\nfmu = \"a.fmu\"\n\n[[subsystems]]\nname = \"b\"\nfmu = \"b.fmu\"\n";

    fn dir() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("s.toml"), SCENARIO).unwrap();
        std::fs::write(d.path().join("a.fmu"), "").unwrap();
        std::fs::write(d.path().join("b.fmu"), "").unwrap();
        d
    }

    fn load(d: &tempfile::TempDir, sweep: &str) -> Result<SweepSpec> {
        let path = d.path().join("sweep.toml");
        std::fs::write(&path, sweep).unwrap();
        SweepSpec::load(&path)
    }

    fn located(e: SweepError) -> Located {
        match e {
            SweepError::Located(l) => *l,
            other => panic!("not located: {other}"),
        }
    }

    #[test]
    fn axes_combine_as_a_product_with_the_first_axis_slowest() {
        let d = dir();
        let s = load(
            &d,
            "[sweep]\nscenario = \"s.toml\"\nset = { simulation.stop = 2.0 }\n[[sweep.axes]]\nkey = \"master.kind\"\nvalues = [\"fixed-step\", \"ecco\"]\n[[sweep.axes]]\nkey = \"master.step\"\nrange = { from = 1e-3, to = 1e-1, count = 3, scale = \"log\" }\n[[sweep.axes]]\nkey = \"a.k\"\nvalues = [1, 2]\n",
        )
        .unwrap();
        assert_eq!(s.grid_len(), 12);
        assert_eq!(s.axes[1].scale, Scale::Log);
        assert_eq!(
            s.grid_values(5),
            vec![
                AxisValue::Str("fixed-step".into()),
                AxisValue::Float(1e-1),
                AxisValue::Int(2)
            ]
        );
        assert_eq!(s.grid_values(6)[0], AxisValue::Str("ecco".into()));
        assert_eq!(
            s.axes[2].target,
            Target::Variable {
                subsystem: "a".into(),
                variable: "k".into()
            }
        );
        assert_eq!(s.set[0].key, "simulation.stop");
        assert_eq!(s.plot.x, Some(1));
        assert_eq!(s.out, d.path().join("out").join("sweep"));
    }

    #[test]
    fn zip_needs_equal_lengths() {
        let d = dir();
        let e = load(
            &d,
            "[sweep]\nscenario = \"s.toml\"\ncombine = \"zip\"\n[[sweep.axes]]\nkey = \"master.step\"\nvalues = [1e-3, 2e-3]\n[[sweep.axes]]\nkey = \"simulation.stop\"\nvalues = [1.0]\n",
        )
        .unwrap_err();
        let l = located(e);
        assert_eq!((l.line, l.column), (Some(8), Some(7)), "{l}");
        assert!(l.message.contains("equal length"), "{l}");
        let s = load(
            &d,
            "[sweep]\nscenario = \"s.toml\"\ncombine = \"zip\"\n[[sweep.axes]]\nkey = \"master.step\"\nvalues = [1e-3, 2e-3]\n[[sweep.axes]]\nkey = \"simulation.stop\"\nvalues = [1.0, 3]\n",
        )
        .unwrap();
        assert_eq!(s.grid_len(), 2);
        assert_eq!(
            s.grid_values(1),
            vec![AxisValue::Float(2e-3), AxisValue::Int(3)]
        );
    }

    #[test]
    fn errors_point_at_the_sweep_file() {
        let d = dir();
        let l = located(
            load(&d, "[sweep]\nscenario = \"s.toml\"\n[[sweep.axes]]\nkey = \"master.step\"\nvalues = [1e-3, -1]\n").unwrap_err(),
        );
        assert_eq!((l.line, l.column), (Some(5), Some(17)), "{l}");
        assert!(l.message.contains("master.step = -1"), "{l}");
        let l = located(
            load(
                &d,
                "[sweep]\nscenario = \"s.toml\"\n[[sweep.axes]]\nkey = \"c.k\"\nvalues = [1]\n",
            )
            .unwrap_err(),
        );
        assert_eq!(l.line, Some(4), "{l}");
        let l = located(
            load(&d, "[sweep]\nscenario = \"s.toml\"\n[[sweep.axes]]\nkey = \"master.step\"\nvalue = [1]\n").unwrap_err(),
        );
        assert_eq!(l.help.as_deref(), Some("did you mean 'values'?"), "{l}");
        let l = located(
            load(&d, "[sweep]\nscenario = \"s.toml\"\nfail_if = [\"growth >> 2\"]\n[[sweep.axes]]\nkey = \"master.step\"\nvalues = [1]\n").unwrap_err(),
        );
        assert_eq!(l.line, Some(3), "{l}");
        let l = located(load(&d, "[sweep]\nscenario = \"t.toml\"\n").unwrap_err());
        assert!(l.message.contains("cannot read the scenario"), "{l}");
    }

    #[test]
    fn a_scenario_can_hold_its_own_sweep() {
        let d = dir();
        let text = format!(
            "{SCENARIO}\n[sweep]\n[[sweep.axes]]\nkey = \"master.step\"\nvalues = [1e-3, 2e-3]\n[[sweep.fail_if]]\nmetric = \"growth\"\nop = \">\"\nvalue = 2\n"
        );
        let s = load(&d, &text).unwrap();
        assert!(s.embedded);
        assert_eq!(s.scenario, d.path().join("sweep.toml"));
        assert_eq!(s.fail_if[0].to_string(), "growth > 2");
        assert_eq!(s.scenario_text.lines().count(), text.lines().count());
    }
}
