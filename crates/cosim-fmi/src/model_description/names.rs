//! Names of variables: each variable's own name and its aliases, looked
//! up through one index.
//!
//! FMI 3 declares aliases as `<Alias name= description= displayUnit=>`
//! children of a variable (FMI 3.0 sec. 2.4.7.3, "Alias variables"): other
//! names of the same value, unique among all names. FMI 2 has no such
//! element: variables of the same base type that share a `valueReference`
//! are aliases (FMI 2.0 sec. 2.2.7), each a `<ScalarVariable>` with its own
//! name, causality and attributes. Neither version has negated aliases
//! (FMI 1.0's `alias="negatedAlias"` was dropped in FMI 2.0).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Serialize;

use super::{ModelDescription, Variable, VariableIndex};

/// Another name of a variable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alias {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: Option<String>,
    /// `displayUnit` (FMI 3, float variables): how a tool shows the value;
    /// the value itself is in the variable's unit.
    pub display_unit: Option<String>,
    /// FMI 2: the `<ScalarVariable>` of this name (an alias is a variable
    /// of its own there). FMI 3: `None`.
    pub variable: Option<VariableIndex>,
}

/// Every name of a model description (variables, then FMI 3 aliases) to
/// its variable, built from the variables on the first lookup.
#[derive(Debug, Clone, Default)]
pub struct NameIndex(OnceLock<HashMap<String, VariableIndex>>);

impl NameIndex {
    fn map<'a>(&'a self, md: &ModelDescription) -> &'a HashMap<String, VariableIndex> {
        self.0.get_or_init(|| {
            let mut map = HashMap::with_capacity(md.variables.len());
            for (i, v) in md.variables.iter().enumerate() {
                map.entry(v.name.clone()).or_insert(i);
            }
            for (i, v) in md.variables.iter().enumerate() {
                for a in v.aliases.iter().filter(|a| a.variable.is_none()) {
                    map.entry(a.name.clone()).or_insert(i);
                }
            }
            map
        })
    }
}

impl ModelDescription {
    /// The variable a name stands for: a variable's own name, or an FMI 3
    /// alias of it.
    pub(super) fn lookup(&self, name: &str) -> Option<(VariableIndex, &Variable)> {
        let i = *self.names.map(self).get(name)?;
        Some((i, self.variables.get(i)?))
    }

    /// The FMI 3 alias of this name and the variable it stands for; `None`
    /// for a variable's own name (FMI 2 aliases are variables).
    pub fn alias_by_name(&self, name: &str) -> Option<(VariableIndex, &Alias)> {
        let (i, v) = self.lookup(name)?;
        if v.name == name {
            return None;
        }
        v.aliases
            .iter()
            .find(|a| a.variable.is_none() && a.name == name)
            .map(|a| (i, a))
    }

    /// As [`ModelDescription::variable_by_name`], for a use that `fits`
    /// says a variable suits (an output to connect from, a parameter to
    /// set ...): when the variable of that name does not suit it and is an
    /// FMI 2 alias, the first variable of its alias set that does (an
    /// alias set shares one value: a local alias of an output can be
    /// connected as that output). Otherwise the variable of that name, to
    /// be refused by the caller with its own causality.
    pub fn variable_by_name_for(
        &self,
        name: &str,
        fits: impl Fn(&Variable) -> bool,
    ) -> Option<(VariableIndex, &Variable)> {
        let (i, v) = self.lookup(name)?;
        if fits(v) {
            return Some((i, v));
        }
        let other = self
            .alias_set(i)
            .into_iter()
            .filter(|&k| k != i)
            .find_map(|k| self.variables.get(k).filter(|w| fits(w)).map(|w| (k, w)));
        Some(other.unwrap_or((i, v)))
    }

    /// The alias set of variable `i` in FMI 2 (the variable standing for
    /// it first, then the others in document order); `[i]` for a variable
    /// without FMI 2 aliases and in FMI 3.
    pub fn alias_set(&self, i: VariableIndex) -> Vec<VariableIndex> {
        let Some(v) = self.variables.get(i) else {
            return Vec::new();
        };
        let base = v.alias_of.unwrap_or(i);
        let mut out = vec![base];
        if let Some(b) = self.variables.get(base) {
            out.extend(b.aliases.iter().filter_map(|a| a.variable));
        }
        out
    }

    /// Every name a variable can be given by: the variables' own names,
    /// then the FMI 3 aliases.
    pub fn all_names(&self) -> impl Iterator<Item = &str> + '_ {
        let own = self.variables.iter().map(|v| v.name.as_str());
        let aliases = self.variables.iter().flat_map(|v| {
            v.aliases
                .iter()
                .filter(|a| a.variable.is_none())
                .map(|a| a.name.as_str())
        });
        own.chain(aliases)
    }
}
