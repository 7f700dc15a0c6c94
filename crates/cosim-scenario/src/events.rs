//! Timed events: `[[events]]` in a scenario, and libcosim's scenario files
//! (JSON or YAML) given with `--scenario` (docs/scenario.md, *Events*).
//!
//! An event names a variable by its path (`chassis.F`, or `nest.s.x` inside
//! a nested system), a time, an action (`override`, `bias`, `reset`) and,
//! but for a reset, a value. Events are read here, routed to the level of
//! the subsystem they name ([`Scenario::route_events`]), resolved against
//! the model descriptions with the rest of the scenario and carried out by
//! [`cosim_core::events::EventSubsystem`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::error::{ScenarioError, Source, Span, did_you_mean};
use crate::read::Result;
use crate::read::{Table, describe, span_of};
use crate::scenario::Scenario;

/// The keys of `[[events]]`.
pub(crate) const EVENT_KEYS: &[&str] = &["time", "variable", "action", "value"];

/// The actions, as written.
const ACTIONS: [&str; 3] = ["override", "bias", "reset"];

/// What an event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// The variable takes the value.
    Override,
    /// The value is added.
    Bias,
    /// Back to normal.
    Reset,
}

/// An event's value as written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum EventValue {
    /// A number with a fraction or exponent.
    Float(f64),
    /// A whole number (wide enough for every Int64 and UInt64 value).
    Int(i128),
    /// `true` or `false`.
    Bool(bool),
    /// A string (refused where it cannot apply, with the reason).
    Text(String),
}

/// One event, as read from the scenario or a scenario file.
#[derive(Debug, Clone)]
pub struct EventSpec {
    /// The file it is written in.
    pub(crate) source: Arc<Source>,
    /// When, s.
    pub time: f64,
    pub(crate) time_span: Span,
    /// The subsystem (the first part of the path at this level).
    pub model: String,
    pub(crate) model_span: Span,
    /// The variable in it (`s.x` for a variable inside nested system
    /// `model`).
    pub variable: String,
    pub(crate) variable_span: Span,
    /// The action.
    pub kind: EventKind,
    pub(crate) kind_span: Span,
    /// The value (`None` for a reset).
    pub value: Option<EventValue>,
    pub(crate) value_span: Span,
    /// The path as the user wrote it, for messages and the step log.
    pub text: String,
}

impl EventSpec {
    /// An error at `span` of the event's file.
    pub(crate) fn err(&self, span: Span, message: impl Into<String>) -> ScenarioError {
        self.source.error(Some(span), message)
    }
}

/// Reads `[[events]]` of a scenario (`src` its text).
pub(crate) fn read_toml_events(
    src: &Arc<Source>,
    tables: Vec<Table<'_, '_>>,
) -> Result<Vec<EventSpec>> {
    let mut out = Vec::new();
    for t in tables {
        let (time, time_span) = t
            .f64_where("time", "a finite number of seconds", |x| x.is_finite())?
            .ok_or_else(|| {
                t.missing("time", "the time of the event in seconds, e.g. time = 50.0")
            })?;
        let (path, path_span) = t.string("variable")?.ok_or_else(|| {
            t.missing(
                "variable",
                "the variable the event changes, e.g. variable = \"chassis.F\"",
            )
        })?;
        let Some((model, variable)) = path.split_once('.') else {
            return Err(t.err(
                path_span,
                format!(
                    "'{path}' names no subsystem: write '<subsystem>.<variable>' (e.g. \"chassis.F\")"
                ),
            ));
        };
        let (kind, kind_span) = match t.choice("action", &ACTIONS)? {
            Some((i, span)) => (kind_of(i), span),
            None => {
                return Err(t.missing(
                    "action",
                    "what the event does: action = \"override\", \"bias\" or \"reset\"",
                ));
            }
        };
        let (value, value_span) = match t.get("value") {
            None => (None, t.span),
            Some(v) => {
                let span = span_of(v);
                let value = match v.get_ref() {
                    toml::de::DeValue::Float(f) => {
                        let x: f64 = f.as_str().replace('_', "").parse().map_err(|_| {
                            t.err(span, format!("'value' = {} is not a number", f.as_str()))
                        })?;
                        if !x.is_finite() {
                            return Err(not_finite(src, span, f.as_str()));
                        }
                        EventValue::Float(x)
                    }
                    toml::de::DeValue::Integer(i) => {
                        let x = crate::read::integer_value(v.get_ref()).ok_or_else(|| {
                            t.err(span, format!("'value' = {} is not an integer", i.as_str()))
                        })?;
                        EventValue::Int(x)
                    }
                    toml::de::DeValue::Boolean(b) => EventValue::Bool(*b),
                    toml::de::DeValue::String(s) => EventValue::Text(s.to_string()),
                    other => {
                        return Err(t.err(
                            span,
                            format!(
                                "expected a number, an integer or a Boolean for 'value', found {}",
                                describe(other)
                            ),
                        ));
                    }
                };
                (Some(value), span)
            }
        };
        let inner = Span::new(path_span.start + 1, path_span.end.saturating_sub(1));
        let dot = inner.start + model.len();
        out.push(
            EventSpec {
                source: src.clone(),
                time,
                time_span,
                model: model.to_string(),
                model_span: Span::new(inner.start, dot),
                variable: variable.to_string(),
                variable_span: Span::new(dot + 1, inner.end),
                kind,
                kind_span,
                value,
                value_span,
                text: path.clone(),
            }
            .checked()?,
        );
    }
    Ok(out)
}

fn kind_of(i: usize) -> EventKind {
    match i {
        0 => EventKind::Override,
        1 => EventKind::Bias,
        _ => EventKind::Reset,
    }
}

impl EventSpec {
    /// Checks what can be checked without the FMUs: a value where the
    /// action needs one, none for a reset.
    fn checked(self) -> Result<Self> {
        match (&self.value, self.kind) {
            (None, EventKind::Override | EventKind::Bias) => Err(self
                .err(
                    self.kind_span,
                    format!(
                        "an event with action \"{}\" needs a 'value'",
                        if self.kind == EventKind::Bias {
                            "bias"
                        } else {
                            "override"
                        }
                    ),
                )
                .with_help(
                    "give the value the variable takes (override) or the amount added to it (bias)",
                )),
            (Some(_), EventKind::Reset) => Err(self.err(
                self.value_span,
                "a reset takes no 'value': it puts the variable back to normal",
            )),
            _ => Ok(self),
        }
    }
}

/// A libcosim scenario file (JSON or YAML): its events and its `end`.
#[derive(Debug, Clone)]
pub struct ScenarioFile {
    /// The file.
    pub path: PathBuf,
    /// Its events, in the order written.
    pub events: Vec<EventSpec>,
    /// `end`: the scenario's end time (every variable an event changed is
    /// reset then, as libcosim does), with where it is written.
    pub end: Option<(f64, Span)>,
}

/// Reads a libcosim scenario file: `description`, `defaults` (`model`,
/// `variable`, `action`), `events` (`time`, `model`, `variable`, `action`,
/// `value`) and `end`. JSON is read as the YAML it is a subset of.
pub fn read_scenario_file(path: &Path) -> Result<ScenarioFile> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Source::new(path.to_path_buf(), String::new())
            .error(None, format!("cannot read the scenario file: {e}"))
    })?;
    let src = Source::new(path.to_path_buf(), text);
    let text = src.text.as_str();
    // Byte offset of a marker (its character index).
    let offset = |m: Option<&marked_yaml::Marker>| -> usize {
        m.map_or(0, |m| {
            text.char_indices()
                .nth(m.character())
                .map_or(text.len(), |(i, _)| i)
        })
    };
    let span_of_marked = |s: &marked_yaml::Span| -> Span {
        let start = offset(s.start());
        let end = s.end().map_or(start, |e| offset(Some(e)));
        // A scalar's span ends where it starts in some cases: take the
        // token up to the next delimiter.
        let end = if end > start {
            end
        } else {
            start
                + text[start..]
                    .find([',', '}', '\n', ']'])
                    .unwrap_or(text.len() - start)
        };
        Span::new(start, end)
    };
    let span_of_node = |n: &marked_yaml::Node| span_of_marked(n.span());
    let root = marked_yaml::parse_yaml(0, text).map_err(|e| {
        let at = match &e {
            marked_yaml::LoadError::TopLevelMustBeMapping(m)
            | marked_yaml::LoadError::TopLevelMustBeSequence(m)
            | marked_yaml::LoadError::UnexpectedAnchor(m)
            | marked_yaml::LoadError::MappingKeyMustBeScalar(m)
            | marked_yaml::LoadError::UnexpectedTag(m)
            | marked_yaml::LoadError::ScanError(m, _) => Some(offset(Some(m))),
            _ => None,
        };
        src.error(
            at.map(|o| Span::new(o, o + 1)),
            format!("not a valid JSON or YAML scenario file: {e}"),
        )
    })?;
    let map = root
        .as_mapping()
        .ok_or_else(|| src.error(None, "a scenario file is a mapping (a JSON object)"))?;
    const KEYS: [&str; 4] = ["description", "defaults", "events", "end"];
    for (k, _) in map.iter() {
        if !KEYS.contains(&k.as_str()) {
            return Err(src
                .error(
                    Some(span_of_marked(k.span())),
                    format!("unknown key '{}' in the scenario file", k.as_str()),
                )
                .with_help(
                    did_you_mean(k.as_str(), KEYS.iter().copied())
                        .unwrap_or_else(|| format!("valid keys are: {}", KEYS.join(", "))),
                ));
        }
    }
    // Defaults: (value, span).
    let mut defaults: [(Option<(String, Span)>, &str); 3] =
        [(None, "model"), (None, "variable"), (None, "action")];
    if let Some(d) = map.get_node("defaults") {
        let d = d.as_mapping().ok_or_else(|| {
            src.error(
                Some(span_of_node(d)),
                "'defaults' is a mapping of model, variable and action",
            )
        })?;
        for (k, v) in d.iter() {
            let Some(slot) = defaults.iter_mut().find(|(_, name)| *name == k.as_str()) else {
                return Err(src
                    .error(
                        Some(span_of_marked(k.span())),
                        format!("unknown key '{}' in 'defaults'", k.as_str()),
                    )
                    .with_help("'defaults' gives model, variable and action"));
            };
            let s = v.as_scalar().ok_or_else(|| {
                src.error(
                    Some(span_of_node(v)),
                    format!("'{}' must be a string", k.as_str()),
                )
            })?;
            slot.0 = Some((s.as_str().to_string(), span_of_node(v)));
        }
    }
    let end = match map.get_node("end") {
        None => None,
        Some(n) => {
            let span = span_of_node(n);
            let x = n
                .as_scalar()
                .and_then(|s| s.as_str().trim().parse::<f64>().ok())
                .filter(|x| x.is_finite())
                .ok_or_else(|| src.error(Some(span), "'end' must be a number of seconds"))?;
            Some((x, span))
        }
    };
    let mut events = Vec::new();
    let Some(list) = map.get_node("events") else {
        return Err(src.error(None, "the scenario file has no 'events'"));
    };
    let list = list
        .as_sequence()
        .ok_or_else(|| src.error(Some(span_of_node(list)), "'events' must be a list"))?;
    for e in list.iter() {
        let espan = span_of_node(e);
        let m = e.as_mapping().ok_or_else(|| {
            src.error(
                Some(espan),
                "an event is a mapping with time, model, variable, action and value",
            )
        })?;
        const EVENT: [&str; 5] = ["time", "model", "variable", "action", "value"];
        for (k, _) in m.iter() {
            if !EVENT.contains(&k.as_str()) {
                return Err(src
                    .error(
                        Some(span_of_marked(k.span())),
                        format!("unknown key '{}' in an event", k.as_str()),
                    )
                    .with_help(
                        did_you_mean(k.as_str(), EVENT.iter().copied())
                            .unwrap_or_else(|| format!("an event has: {}", EVENT.join(", "))),
                    ));
            }
        }
        let get = |key: &str, default: usize| -> Result<(String, Span)> {
            match m.get_node(key) {
                Some(n) => {
                    let s = n.as_scalar().ok_or_else(|| {
                        src.error(Some(span_of_node(n)), format!("'{key}' must be a string"))
                    })?;
                    Ok((s.as_str().to_string(), span_of_node(n)))
                }
                None => defaults[default].0.clone().ok_or_else(|| {
                    src.error(
                        Some(espan),
                        format!("the event gives no '{key}', and 'defaults' has none"),
                    )
                }),
            }
        };
        let time_node = m
            .get_node("time")
            .ok_or_else(|| src.error(Some(espan), "the event has no 'time'"))?;
        let time_span = span_of_node(time_node);
        let time = time_node
            .as_scalar()
            .and_then(|s| s.as_str().trim().parse::<f64>().ok())
            .filter(|x| x.is_finite())
            .ok_or_else(|| src.error(Some(time_span), "'time' must be a number of seconds"))?;
        let (model, model_span) = get("model", 0)?;
        let (variable, variable_span) = get("variable", 1)?;
        let (action, kind_span) = get("action", 2)?;
        let kind = match ACTIONS.iter().position(|a| *a == action) {
            Some(i) => kind_of(i),
            None => {
                return Err(src
                    .error(Some(kind_span), format!("unknown action '{action}'"))
                    .with_help("the actions are override, bias and reset"));
            }
        };
        let (value, value_span) = match m.get_node("value") {
            None => (None, espan),
            Some(n) => {
                let span = span_of_node(n);
                let s = n.as_scalar().ok_or_else(|| {
                    src.error(Some(span), "'value' must be a number, true or false")
                })?;
                if non_finite(s.as_str()) {
                    return Err(not_finite(&src, span, s.as_str()));
                }
                (Some(scalar_value(s.as_str())), span)
            }
        };
        events.push(
            EventSpec {
                source: src.clone(),
                time,
                time_span,
                text: format!("{model}.{variable}"),
                model,
                model_span,
                variable,
                variable_span,
                kind,
                kind_span,
                value,
                value_span,
            }
            .checked()?,
        );
    }
    Ok(ScenarioFile {
        path: path.to_path_buf(),
        events,
        end,
    })
}

/// Whether a value as written is a number that is not finite: `nan`,
/// `NaN`, `inf`, `-Infinity`, `1e999`, YAML's `.nan` and `.inf`. Such a
/// value would reach the FMU, which would then be blamed for it.
fn non_finite(s: &str) -> bool {
    let t = s.trim();
    let yaml = t.trim_start_matches(['+', '-']).to_ascii_lowercase();
    matches!(yaml.as_str(), ".nan" | ".inf") || t.parse::<f64>().is_ok_and(|x| !x.is_finite())
}

/// The error for a value `written` at `span` that is no finite number.
fn not_finite(src: &Source, span: Span, written: &str) -> ScenarioError {
    src.error(
        Some(span),
        format!("'value' {} is not a finite number", written.trim()),
    )
    .with_help("an event's value is a finite number, true or false")
}

/// A scalar of a scenario file as a value: Boolean, integer, number, else
/// text.
fn scalar_value(s: &str) -> EventValue {
    let t = s.trim();
    match t {
        "true" | "True" | "TRUE" => return EventValue::Bool(true),
        "false" | "False" | "FALSE" => return EventValue::Bool(false),
        _ => {}
    }
    if let Ok(i) = t.parse::<i128>() {
        return EventValue::Int(i);
    }
    match t.parse::<f64>() {
        Ok(x) => EventValue::Float(x),
        Err(_) => EventValue::Text(s.to_string()),
    }
}

impl ScenarioFile {
    /// The events, with a reset at `end` of every variable an event
    /// changed (libcosim ends a scenario that way).
    pub(crate) fn into_events(self) -> Vec<EventSpec> {
        let mut events = self.events;
        if let Some((end, span)) = self.end {
            let mut touched: Vec<EventSpec> = Vec::new();
            for e in &events {
                if !touched
                    .iter()
                    .any(|t| t.model == e.model && t.variable == e.variable)
                {
                    touched.push(EventSpec {
                        time: end,
                        time_span: span,
                        kind: EventKind::Reset,
                        kind_span: span,
                        value: None,
                        value_span: span,
                        ..e.clone()
                    });
                }
            }
            events.extend(touched);
        }
        events
    }
}

impl Scenario {
    /// Hands every event that names a variable inside a nested system
    /// (`nest.s.x`) down to that system, recursively, with the path
    /// shortened to its level.
    pub(crate) fn route_events(&mut self) {
        let events = std::mem::take(&mut self.events);
        for mut e in events {
            let nested = self
                .subsystems
                .iter_mut()
                .find(|s| s.name.value == e.model)
                .and_then(|s| s.system.as_mut());
            match (nested, e.variable.split_once('.')) {
                (Some(inner), Some((model, variable)))
                    if inner.subsystems.iter().any(|s| s.name.value == model) =>
                {
                    let model_start = e.variable_span.start;
                    let dot = model_start + model.len();
                    e.model_span = Span::new(model_start, dot);
                    e.variable_span = Span::new(dot + 1, e.variable_span.end);
                    e.model = model.to_string();
                    e.variable = variable.to_string();
                    inner.events.push(e);
                }
                _ => self.events.push(e),
            }
        }
        for s in &mut self.subsystems {
            if let Some(inner) = s.system.as_mut() {
                inner.route_events();
            }
        }
    }
}
