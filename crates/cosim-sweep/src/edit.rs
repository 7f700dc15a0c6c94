//! Applying axis values to the scenario: the scenario's TOML text is edited
//! with `toml_edit` (keeping everything else as written) and parsed again
//! with the scenario's own path, so relative FMU paths keep working;
//! subsystem variables go through the `--set` mechanism.

use std::ops::Range;
use std::path::Path;

use cosim_scenario::{Overrides, Scenario, ScenarioError};
use toml_edit::{DocumentMut, Item, TableLike, Value};

use crate::axis::{Axis, AxisValue, Target};
use crate::error::{Located, SweepError};
use crate::spec::SweepSpec;

/// Blanks the `[sweep]` tables of a scenario that holds its own sweep
/// (every byte but line ends becomes a space), so the scenario parser does
/// not see them and every other line keeps its number and columns.
pub(crate) fn blank_sweep(text: &str, doc: &toml_edit::Document<String>) -> Result<String, String> {
    // Every table header, with whether it belongs to the sweep.
    let mut headers: Vec<(usize, bool)> = Vec::new();
    fn walk(t: &toml_edit::Table, in_sweep: bool, headers: &mut Vec<(usize, bool)>) {
        for (k, item) in t.iter() {
            match item {
                Item::Table(sub) => {
                    if let Some(s) = sub.span() {
                        headers.push((s.start, in_sweep));
                    }
                    walk(sub, in_sweep, headers);
                }
                Item::ArrayOfTables(list) => {
                    for sub in list.iter() {
                        if let Some(s) = sub.span() {
                            headers.push((s.start, in_sweep));
                        }
                        walk(sub, in_sweep, headers);
                    }
                }
                _ => {}
            }
            let _ = k;
        }
    }
    let root = doc.as_table();
    for (k, item) in root.iter() {
        let in_sweep = k == "sweep";
        match item {
            Item::Table(sub) => {
                if let Some(s) = sub.span() {
                    headers.push((s.start, in_sweep));
                }
                walk(sub, in_sweep, &mut headers);
            }
            Item::ArrayOfTables(list) => {
                for sub in list.iter() {
                    if let Some(s) = sub.span() {
                        headers.push((s.start, in_sweep));
                    }
                    walk(sub, in_sweep, &mut headers);
                }
            }
            _ => {}
        }
    }
    headers.sort_unstable();
    let mut regions: Vec<Range<usize>> = Vec::new();
    for (i, &(start, in_sweep)) in headers.iter().enumerate() {
        if in_sweep {
            let end = headers.get(i + 1).map_or(text.len(), |h| h.0);
            regions.push(start..end);
        }
    }
    // `sweep = { ... }` as an inline table at the root.
    if let Some(Item::Value(v)) = root.get("sweep")
        && let (Some(k), Some(vs)) = (root.key("sweep").and_then(|k| k.span()), v.span())
    {
        regions.push(k.start..vs.end);
    }
    if regions.is_empty() {
        return Err("the [sweep] table could not be located in the file".into());
    }
    let mut bytes = text.as_bytes().to_vec();
    for r in regions {
        for b in bytes.get_mut(r).into_iter().flatten() {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    }
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

fn set_path(root: &mut dyn TableLike, path: &[String], value: Value) -> Result<(), String> {
    let Some((last, parents)) = path.split_last() else {
        return Err("empty key".into());
    };
    let mut t: &mut dyn TableLike = root;
    let mut walked = String::new();
    for p in parents {
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(p);
        if !t.contains_key(p) {
            let mut new = toml_edit::Table::new();
            new.set_implicit(true);
            t.insert(p, Item::Table(new));
        }
        t = t
            .get_mut(p)
            .and_then(Item::as_table_like_mut)
            .ok_or_else(|| format!("'{walked}' in the scenario is not a table"))?;
    }
    let mut value = value;
    if let Some(old) = t.get(last).and_then(Item::as_value) {
        *value.decor_mut() = old.decor().clone();
    }
    t.insert(last, Item::Value(value));
    Ok(())
}

fn set_in_subsystem(
    doc: &mut DocumentMut,
    name: &str,
    key: &str,
    value: Value,
) -> Result<(), String> {
    let path: Vec<String> = key.split('.').map(str::to_string).collect();
    let named = |t: &dyn TableLike| {
        t.get("name")
            .and_then(Item::as_value)
            .and_then(Value::as_str)
            == Some(name)
    };
    match doc.get_mut("subsystems") {
        Some(Item::ArrayOfTables(list)) => {
            for t in list.iter_mut() {
                if named(t) {
                    return set_path(t, &path, value);
                }
            }
        }
        Some(Item::Value(Value::Array(list))) => {
            for v in list.iter_mut() {
                if let Some(t) = v.as_inline_table_mut()
                    && named(t)
                {
                    return set_path(t, &path, value);
                }
            }
        }
        _ => {}
    }
    Err(format!(
        "the scenario has no [[subsystems]] entry named '{name}'"
    ))
}

/// Why [`apply`] failed: the message and the axis at fault, if known.
type ApplyError<'a> = (String, Option<&'a Axis>);

/// The scenario text and the `--set` arguments for `(axis, value)` pairs.
fn apply<'a>(
    text: &str,
    assignments: impl IntoIterator<Item = (&'a Axis, &'a AxisValue)>,
) -> Result<(String, Vec<String>), ApplyError<'a>> {
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        (
            format!("the scenario is not valid TOML: {}", e.message()),
            None,
        )
    })?;
    let mut set = Vec::new();
    for (axis, value) in assignments {
        let r = match &axis.target {
            Target::Table { path } => set_path(doc.as_table_mut(), path, value.toml()),
            Target::Subsystem { name, key } => set_in_subsystem(&mut doc, name, key, value.toml()),
            Target::Variable { .. } => {
                set.extend(variable_setting(axis, value));
                Ok(())
            }
        };
        r.map_err(|e| (e, Some(axis)))?;
    }
    // The sweep computes its metrics from the trace and the energy log.
    if let Some(outputs) = doc.get_mut("outputs").and_then(Item::as_table_like_mut) {
        for key in ["trace", "energy_log"] {
            if outputs
                .get(key)
                .and_then(Item::as_value)
                .and_then(Value::as_bool)
                == Some(false)
            {
                outputs.insert(key, Item::Value(Value::from(true)));
            }
        }
    }
    Ok((doc.to_string(), set))
}

/// The `--set` argument of a parameter or start value axis
/// (`subsystem.variable=value`); `None` for the other targets.
fn variable_setting(axis: &Axis, value: &AxisValue) -> Option<String> {
    match &axis.target {
        Target::Variable {
            subsystem,
            variable,
        } => Some(format!("{subsystem}.{variable}={}", value.toml_text())),
        Target::Table { .. } | Target::Subsystem { .. } => None,
    }
}

fn scenario_message(e: &ScenarioError) -> String {
    match &e.help {
        Some(h) => format!("{} ({h})", e.message),
        None => e.message.clone(),
    }
}

/// The scenario of one run: the set values and the axis values applied,
/// the output directory replaced by `out`. Every value was checked on its
/// own by [`check_values`]; what fails here is a combination of values.
pub(crate) fn build(
    spec: &SweepSpec,
    values: &[AxisValue],
    out: &Path,
) -> Result<(Scenario, Overrides), String> {
    let pairs = spec
        .set
        .iter()
        .filter_map(|a| a.values.first().map(|v| (a, v)))
        .chain(spec.axes.iter().zip(values));
    // Values that are all parameters and start values leave the scenario's
    // text as it is: the run starts from the scenario parsed once for the
    // sweep, not from its text edited and parsed again.
    let settings: Option<Vec<String>> =
        pairs.clone().map(|(a, v)| variable_setting(a, v)).collect();
    let (mut scenario, set) = match settings {
        Some(set) => (base_scenario(spec)?, set),
        None => {
            let (text, set) = apply(&spec.scenario_text, pairs).map_err(|(message, _)| message)?;
            let scenario =
                Scenario::from_str(&text, &spec.scenario).map_err(|e| scenario_message(&e))?;
            (scenario, set)
        }
    };
    let overrides = Overrides {
        set,
        out: Some(out.to_path_buf()),
        ..Overrides::default()
    };
    scenario
        .apply_overrides(&overrides)
        .map_err(|e| scenario_message(&e))?;
    Ok((scenario, overrides))
}

/// The scenario with no axis applied (its outputs on, as [`apply`] makes
/// them): parsed at the first call, a copy of it after.
fn base_scenario(spec: &SweepSpec) -> Result<Scenario, String> {
    spec.base
        .get_or_init(|| {
            let (text, _) =
                apply(&spec.scenario_text, std::iter::empty()).map_err(|(message, _)| message)?;
            Scenario::from_str(&text, &spec.scenario).map_err(|e| scenario_message(&e))
        })
        .clone()
}

/// Checks every `[sweep.set]` value and every axis value on its own against
/// the scenario (parsing only), reporting a bad one at its place in the
/// sweep file.
pub(crate) fn check_values(spec: &SweepSpec) -> Result<(), SweepError> {
    let out = spec.out.join("check");
    let located = |axis: &Axis,
                   span: Option<Range<usize>>,
                   value: &AxisValue,
                   message: String,
                   help: Option<String>|
     -> SweepError {
        // A key the scenario does not know is the key's fault, not the value's.
        let at = if message.starts_with("unknown key") {
            axis.key_span.clone()
        } else {
            span.or_else(|| axis.key_span.clone())
        };
        let e: Located = spec
            .error_at(
                at,
                format!("{} = {}: {message}", axis.key, value.toml_text()),
            )
            .with_help(help)
            .with_note(format!(
                "in the scenario {}",
                crate::shown(&spec.scenario).display()
            ));
        e.into()
    };
    for a in &spec.set {
        let Some(v) = a.values.first() else { continue };
        let (text, set) = apply(&spec.scenario_text, [(a, v)])
            .map_err(|(m, _)| located(a, a.value_spans.first().cloned().flatten(), v, m, None))?;
        let mut s = Scenario::from_str(&text, &spec.scenario).map_err(|e| {
            located(
                a,
                a.value_spans.first().cloned().flatten(),
                v,
                e.message.clone(),
                e.help.clone(),
            )
        })?;
        s.apply_overrides(&Overrides {
            set,
            out: Some(out.clone()),
            ..Overrides::default()
        })
        .map_err(|e| {
            located(
                a,
                a.value_spans.first().cloned().flatten(),
                v,
                e.message.clone(),
                e.help.clone(),
            )
        })?;
    }
    let fixed: Vec<(&Axis, &AxisValue)> = spec
        .set
        .iter()
        .filter_map(|a| a.values.first().map(|v| (a, v)))
        .collect();
    // The text parsed last: the values of a parameter or a start value
    // leave the text as it is (they are set as overrides), so an axis of
    // them parses it once, not once per value.
    let mut parsed: Option<(String, Scenario)> = None;
    for a in &spec.axes {
        for (k, v) in a.values.iter().enumerate() {
            let span = a.value_spans.get(k).cloned().flatten();
            let pairs = fixed.iter().copied().chain([(a, v)]);
            let (text, set) = apply(&spec.scenario_text, pairs)
                .map_err(|(m, _)| located(a, span.clone(), v, m, None))?;
            let mut s = match &parsed {
                Some((t, s)) if *t == text => s.clone(),
                _ => {
                    let s = Scenario::from_str(&text, &spec.scenario).map_err(|e| {
                        located(a, span.clone(), v, e.message.clone(), e.help.clone())
                    })?;
                    parsed = Some((text, s.clone()));
                    s
                }
            };
            s.apply_overrides(&Overrides {
                set,
                out: Some(out.clone()),
                ..Overrides::default()
            })
            .map_err(|e| located(a, span.clone(), v, e.message.clone(), e.help.clone()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of a sweep whose values are all parameters and start values
    /// starts from the scenario parsed once; its scenario is the one the
    /// text edited and parsed again gives, run by run (and a sweep of a
    /// `[master]` key still edits the text).
    #[test]
    fn runs_of_parameters_start_from_the_scenario_parsed_once() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("s.toml"),
            "[simulation]\nstop = 1.0\n\n[master]\nstep = 1e-3\n\n[outputs]\ntrace = false\n\n[[subsystems]]\nname = \"a\"\nfmu = \"a.fmu\"\n",
        )
        .unwrap();
        std::fs::write(d.path().join("a.fmu"), "").unwrap();
        let sweep = d.path().join("sweep.toml");
        for (axes, cached) in [
            ("key = \"a.k\"\nvalues = [1.5, 2, -3e-7]", true),
            ("key = \"master.step\"\nvalues = [1e-3, 2e-3]", false),
        ] {
            std::fs::write(
                &sweep,
                format!("[sweep]\nscenario = \"s.toml\"\n[sweep.set]\n\"a.x0\" = 0.25\n[[sweep.axes]]\n{axes}\n"),
            )
            .unwrap();
            let spec = SweepSpec::load(&sweep).unwrap();
            for i in 0..spec.grid_len() {
                let values = spec.grid_values(i);
                let out = d.path().join(format!("run{i}"));
                let (scenario, overrides) = build(&spec, &values, &out).unwrap();
                let pairs = spec
                    .set
                    .iter()
                    .filter_map(|a| a.values.first().map(|v| (a, v)))
                    .chain(spec.axes.iter().zip(&values));
                let (text, set) = apply(&spec.scenario_text, pairs).unwrap();
                assert_eq!(overrides.set, set);
                let mut edited = Scenario::from_str(&text, &spec.scenario).unwrap();
                edited.apply_overrides(&overrides).unwrap();
                assert_eq!(format!("{scenario:?}"), format!("{edited:?}"), "{axes}");
            }
            assert_eq!(spec.base.get().is_some(), cached, "{axes}");
        }
    }

    #[test]
    fn paths_are_set_keeping_comments_and_creating_tables() {
        let text = "# top\n[master]\nkind = \"fixed-step\"\nstep = 1e-3   # the step\n\n[[subsystems]]\nname = \"a\"\nfmu = \"a.fmu\"\n";
        let axis = |key: &str, target: Target| Axis {
            key: key.into(),
            target,
            values: vec![],
            scale: crate::axis::Scale::List,
            key_span: None,
            value_spans: vec![],
        };
        let step = axis(
            "master.step",
            Target::Table {
                path: vec!["master".into(), "step".into()],
            },
        );
        let dt = axis(
            "master.controller.dt_max",
            Target::Table {
                path: vec!["master".into(), "controller".into(), "dt_max".into()],
            },
        );
        let stop = axis(
            "simulation.stop",
            Target::Table {
                path: vec!["simulation".into(), "stop".into()],
            },
        );
        let mult = axis(
            "subsystems.a.step_multiple",
            Target::Subsystem {
                name: "a".into(),
                key: "step_multiple".into(),
            },
        );
        let k = axis(
            "a.k",
            Target::Variable {
                subsystem: "a".into(),
                variable: "k".into(),
            },
        );
        let v = [
            AxisValue::Float(0.02),
            AxisValue::Float(0.5),
            AxisValue::Int(10),
            AxisValue::Int(3),
            AxisValue::Float(1500.0),
        ];
        let (out, set) = apply(
            text,
            [
                (&step, &v[0]),
                (&dt, &v[1]),
                (&stop, &v[2]),
                (&mult, &v[3]),
                (&k, &v[4]),
            ],
        )
        .unwrap();
        assert!(out.contains("step = 0.02   # the step"), "{out}");
        assert!(out.contains("# top"), "{out}");
        let parsed: toml::Table = out.parse().unwrap();
        assert_eq!(
            parsed["master"]["controller"]["dt_max"].as_float(),
            Some(0.5)
        );
        assert_eq!(parsed["simulation"]["stop"].as_integer(), Some(10));
        assert_eq!(
            parsed["subsystems"][0]["step_multiple"].as_integer(),
            Some(3)
        );
        assert_eq!(set, ["a.k=1500.0"]);
    }

    #[test]
    fn an_embedded_sweep_is_blanked_line_for_line() {
        let text = "[simulation]\nstop = 1\n\n[sweep]\nout = \"x\"\n[[sweep.axes]]\nkey = \"master.step\"\nvalues = [1]\n\n[master]\nstep = 1e-3\n";
        let doc = toml_edit::Document::parse(text.to_string()).unwrap();
        let blanked = blank_sweep(text, &doc).unwrap();
        assert_eq!(blanked.len(), text.len());
        assert_eq!(blanked.lines().count(), text.lines().count());
        let parsed: toml::Table = blanked.parse().unwrap();
        assert!(parsed.get("sweep").is_none());
        assert_eq!(parsed["master"]["step"].as_float(), Some(1e-3));
        assert_eq!(blanked.lines().nth(10), Some("step = 1e-3"));
    }
}
