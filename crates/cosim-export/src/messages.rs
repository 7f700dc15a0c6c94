//! What the inner FMUs and the engine say during a call of the importer,
//! collected from `tracing` for the importer's logger: the exported FMU has
//! no terminal of its own, and its importer's logger is the place for its
//! messages (an inner FMU's with its instance and category).

use std::cell::RefCell;

use fmu_kit::LogLevel;
use tracing_subscriber::layer::SubscriberExt;

thread_local! {
    /// Where [`Collect`] puts the events of this thread's call.
    static COLLECTED: RefCell<Vec<(LogLevel, String)>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's `tracing` events collected: the inner
/// FMUs' messages (target `fmu`, with their instance and category) and
/// the engine's warnings and errors, for the importer's logger.
pub(crate) fn captured<T>(f: impl FnOnce() -> T) -> (T, Vec<(LogLevel, String)>) {
    // One subscriber for the process: a step allocates nothing for it.
    static DISPATCH: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
    let dispatch = DISPATCH
        .get_or_init(|| tracing::Dispatch::new(tracing_subscriber::registry().with(Collect)));
    let before = COLLECTED.with(|c| c.borrow_mut().len());
    let result = tracing::dispatcher::with_default(dispatch, f);
    let messages = COLLECTED.with(|c| {
        let mut c = c.borrow_mut();
        // (`split_off` at the end would still allocate: a quiet call takes
        // nothing.)
        if c.len() == before {
            Vec::new()
        } else {
            c.split_off(before)
        }
    });
    (result, messages)
}

/// A `tracing` layer that keeps events as the importer's log lines.
struct Collect;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Collect {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let meta = event.metadata();
        let from_fmu = meta.target() == "fmu";
        let level = match *meta.level() {
            tracing::Level::ERROR => LogLevel::Error,
            tracing::Level::WARN => LogLevel::Warning,
            _ if from_fmu => LogLevel::Info,
            _ => return,
        };
        let mut fields = Fields::default();
        event.record(&mut fields);
        let line = match (fields.instance, fields.category) {
            (Some(i), Some(c)) => format!("[{i}] {c}: {}", fields.message),
            (Some(i), None) => format!("[{i}] {}", fields.message),
            _ => fields.message,
        };
        COLLECTED.with(|c| c.borrow_mut().push((level, line)));
    }
}

#[derive(Default)]
struct Fields {
    message: String,
    instance: Option<String>,
    category: Option<String>,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "instance" => self.instance = Some(value.to_string()),
            "category" => self.category = Some(value.to_string()),
            "message" => self.message = value.to_string(),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        match field.name() {
            "instance" => self.instance = Some(text),
            "category" => self.category = Some(text),
            "message" => self.message = text,
            _ => {}
        }
    }
}
