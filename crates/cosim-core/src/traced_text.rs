//! Values an `f64` slot does not carry, traced as text: String variables
//! (as they are), Binary variables (lowercase hexadecimal digits, two per
//! byte, as fmusim writes them) and Int64 / UInt64 variables (in decimal,
//! every one of their values exactly; a slot holds integers exactly only
//! up to 2^53).
//!
//! They are read from the FMU only for the trace rows that show them
//! ([`crate::Subsystem::get_strings`]), never on the stepping path, and
//! reach the trace as the text of their cells: quoted for a String
//! ([`crate::output::Column::Str`]), as it is for the others
//! ([`crate::output::Column::Raw`]).

use cosim_fmi::Instance;
use cosim_fmi::model_description::{ModelDescription, VariableIndex, VariableType};

use crate::error::Result;

/// Whether values of type `t` travel beside the `f64` slots: traced as
/// text, set by value as inputs fed from files
/// ([`crate::input_file::ValueFeed`]). For an FMU's scalar variables; a
/// nested system's Int64 and UInt64 variables, and arrays, use slots
/// (exact up to 2^53).
pub fn beside_slots(t: VariableType) -> bool {
    matches!(
        t,
        VariableType::String | VariableType::Binary | VariableType::Int64 | VariableType::UInt64
    )
}

/// Whether a text cell of type `t` is written quoted (a String's text may
/// hold commas and quotes; hexadecimal digits and integers do not).
pub fn is_quoted(t: VariableType) -> bool {
    t == VariableType::String
}

/// The traced variables of one FMI type: their value references and their
/// positions among all the traced texts.
#[derive(Debug, Default)]
struct Group {
    vrs: Vec<u32>,
    at: Vec<usize>,
}

impl Group {
    fn push(&mut self, vr: u32, at: usize) {
        self.vrs.push(vr);
        self.at.push(at);
    }

    /// Writes `texts[k]` of each of the group's values into its position.
    fn scatter(&self, values: &mut [String], texts: impl Iterator<Item = String>) {
        for (&at, text) in self.at.iter().zip(texts) {
            if let Some(v) = values.get_mut(at) {
                *v = text;
            }
        }
    }
}

/// The variables of one FMU traced as text, by type, and their names in
/// the order traced.
#[derive(Debug, Default)]
pub struct TracedTexts {
    names: Vec<String>,
    strings: Group,
    binaries: Group,
    int64: Group,
    uint64: Group,
}

impl TracedTexts {
    /// Variables `vars` of `md`, in this order; those of a type that does
    /// not travel beside the slots ([`beside_slots`]) are read as nothing
    /// (the scenario layer traces them in slots).
    pub fn new(md: &ModelDescription, vars: &[VariableIndex]) -> TracedTexts {
        let mut t = TracedTexts::default();
        for (at, &v) in vars.iter().enumerate() {
            let Some(var) = md.variables.get(v) else {
                continue;
            };
            t.names.push(var.name.clone());
            let vr = var.value_reference;
            match var.var_type {
                VariableType::String => t.strings.push(vr, at),
                VariableType::Binary => t.binaries.push(vr, at),
                VariableType::Int64 => t.int64.push(vr, at),
                VariableType::UInt64 => t.uint64.push(vr, at),
                _ => {}
            }
        }
        t
    }

    /// The traced variables' names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// True when nothing is traced as text.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Reads every traced value into `values` (one per name), one batched
    /// call per type.
    pub fn read(&self, instance: &mut Instance, values: &mut [String]) -> Result<()> {
        if !self.strings.vrs.is_empty() {
            let got = instance.get_string(&self.strings.vrs)?;
            self.strings.scatter(values, got.into_iter());
        }
        if !self.binaries.vrs.is_empty() {
            let got = instance.get_binary(&self.binaries.vrs)?;
            self.binaries.scatter(values, got.iter().map(hex::encode));
        }
        if !self.int64.vrs.is_empty() {
            let mut got = vec![0i64; self.int64.vrs.len()];
            instance.get_i64(&self.int64.vrs, &mut got)?;
            self.int64
                .scatter(values, got.iter().map(ToString::to_string));
        }
        if !self.uint64.vrs.is_empty() {
            let mut got = vec![0u64; self.uint64.vrs.len()];
            instance.get_u64(&self.uint64.vrs, &mut got)?;
            self.uint64
                .scatter(values, got.iter().map(ToString::to_string));
        }
        Ok(())
    }
}

/// The text of a value set by value ([`crate::Subsystem::set_values`]) as
/// its traced cell shows it.
pub fn cell_text(value: &cosim_fmi::Value) -> String {
    match value {
        cosim_fmi::Value::Binary(b) => hex::encode(b),
        cosim_fmi::Value::Str(s) => s.clone(),
        other => other.to_string(),
    }
}
