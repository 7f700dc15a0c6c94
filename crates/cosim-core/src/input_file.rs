//! Inputs fed from a table of time and values (an input file: `cosim run
//! Model.fmu --input-file in.csv`, `[[inputs]]` in a scenario).
//!
//! [`InputTable`] holds the rows (times non-decreasing; two rows at one
//! time make a jump) and evaluates a column at any time: linear
//! interpolation for continuous (float) inputs, with the segment's slope as
//! the first time derivative; the value of the last row at or before `t`
//! for discrete (integer, enumeration, Boolean) ones; the first or last
//! value held outside the table's time range.
//!
//! [`FileInputs`] puts a table in front of a subsystem's inputs: it wraps
//! the subsystem (an FMU instance, in this process or in a host process, or
//! a nested system) and, at every communication point, sets the file-fed
//! inputs to the table's values at the step's start, and, when the
//! subsystem interpolates inputs (FMI 2 `canInterpolateInputs`, FMI 3
//! intermediate update), their slopes as first input derivatives. An
//! interpolating FMU thus sees the file's piecewise-linear signal exactly
//! over every step that no row falls strictly inside, whatever the master
//! and its extrapolation order (those apply to the coupled inputs only);
//! one that cannot interpolate holds the value at the step's start (as
//! fmusim and FMPy do). The file-fed inputs are not slots of the wrapper:
//! masters, connections and extrapolation see only the coupled inputs, and
//! nothing in the macro-step loop allocates.
//!
//! The file itself is read by `cosim-scenario` (this crate parses no
//! files).

use std::sync::Arc;

use cosim_fmi::StepOutcome;

use cosim_fmi::Value;
use cosim_fmi::model_description::VariableIndex;

use crate::error::{CoreError, Result};
use crate::subsystem::{CallCounters, InputValue, RollbackTo, StateId, Subsystem, SubsystemInfo};

/// Rows of time and values, one column per signal.
#[derive(Debug, Clone, PartialEq)]
pub struct InputTable {
    name: String,
    columns: Vec<String>,
    times: Vec<f64>,
    values: Vec<Vec<f64>>,
}

impl InputTable {
    /// A table named `name` (the file, for messages) with `columns` (their
    /// names), the row `times` and, per column, its values (one per row).
    ///
    /// # Errors
    ///
    /// No row, a column whose length is not the number of rows, a time or
    /// value that is not finite, times that decrease.
    pub fn new(
        name: impl Into<String>,
        columns: Vec<String>,
        times: Vec<f64>,
        values: Vec<Vec<f64>>,
    ) -> std::result::Result<InputTable, String> {
        let name = name.into();
        if times.is_empty() {
            return Err(format!("{name}: no rows"));
        }
        if columns.len() != values.len() {
            return Err(format!(
                "{name}: {} column names for {} columns",
                columns.len(),
                values.len()
            ));
        }
        if let Some(k) = times.iter().position(|t| !t.is_finite()) {
            return Err(format!("{name}: row {} has time {}", k + 1, times[k]));
        }
        if let Some(k) = times.windows(2).position(|w| w[1] < w[0]) {
            return Err(format!(
                "{name}: the time decreases from {} to {} at row {}",
                times[k],
                times[k + 1],
                k + 2
            ));
        }
        for (c, v) in columns.iter().zip(&values) {
            if v.len() != times.len() {
                return Err(format!(
                    "{name}: column '{c}' has {} values for {} rows",
                    v.len(),
                    times.len()
                ));
            }
            if let Some(k) = v.iter().position(|x| !x.is_finite()) {
                return Err(format!("{name}: column '{c}' is {} at row {}", v[k], k + 1));
            }
        }
        Ok(InputTable {
            name,
            columns,
            times,
            values,
        })
    }

    /// The table's name (its file).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The column names (time not included).
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The row times.
    pub fn times(&self) -> &[f64] {
        &self.times
    }

    /// The values of column `c`.
    pub fn column(&self, c: usize) -> &[f64] {
        &self.values[c]
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// True when the table has no row (never: [`InputTable::new`] refuses it).
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// The first and the last row's time.
    pub fn range(&self) -> (f64, f64) {
        (
            self.times.first().copied().unwrap_or(0.0),
            self.times.last().copied().unwrap_or(0.0),
        )
    }

    fn row_at(&self, t: f64, hint: &mut usize) -> Option<usize> {
        row_at(&self.times, t, hint)
    }

    /// Column `c` at time `t` and its slope: linearly interpolated between
    /// the rows around `t` (`hold`: the value of the last row at or before
    /// `t`, slope 0); the first or last value, slope 0, outside the rows'
    /// time range. At a time given by two rows (a jump), the later row's
    /// value and the slope after it.
    pub fn sample(&self, c: usize, t: f64, hold: bool, hint: &mut usize) -> (f64, f64) {
        let v = &self.values[c];
        let Some(k) = self.row_at(t, hint) else {
            return (v[0], 0.0);
        };
        if hold || k + 1 == v.len() {
            return (v[k], 0.0);
        }
        // times[k] <= t < times[k + 1]: a proper interval.
        let (t0, t1) = (self.times[k], self.times[k + 1]);
        let slope = (v[k + 1] - v[k]) / (t1 - t0);
        (v[k] + slope * (t - t0), slope)
    }

    /// Column `c` at time `t` (see [`InputTable::sample`]).
    pub fn value(&self, c: usize, t: f64, hold: bool) -> f64 {
        let mut hint = 0;
        self.sample(c, t, hold, &mut hint).0
    }
}

/// The last of `times` (non-decreasing) at or before `t` (`None` before
/// the first), looked up from `hint` (the index found last time: steps
/// move forward, so this is O(1) per step; a rollback searches).
fn row_at(times: &[f64], t: f64, hint: &mut usize) -> Option<usize> {
    let n = times.len();
    let k = *hint;
    let fits = |k: usize| times[k] <= t && (k + 1 == n || times[k + 1] > t);
    if k < n && fits(k) {
        return Some(k);
    }
    if k + 1 < n && fits(k + 1) {
        *hint = k + 1;
        return Some(k + 1);
    }
    let count = times.partition_point(|&x| x <= t);
    if count == 0 {
        *hint = 0;
        return None;
    }
    *hint = count - 1;
    Some(count - 1)
}

/// Values of one input over time, each held from its time to the next
/// (the first before its time): an input file's column of values that
/// an `f64` slot cannot carry, or the events on such an input.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueSchedule {
    times: Arc<[f64]>,
    values: Arc<[Value]>,
}

impl ValueSchedule {
    /// `values[k]` from `times[k]` on.
    ///
    /// # Errors
    ///
    /// No value, or not one per time, or times that are not finite or
    /// decrease.
    pub fn new(times: Arc<[f64]>, values: Arc<[Value]>) -> std::result::Result<Self, String> {
        if values.is_empty() || values.len() != times.len() {
            return Err(format!(
                "{} values for {} times (at least one value, one per time)",
                values.len(),
                times.len()
            ));
        }
        if times.iter().any(|t| !t.is_finite()) || times.windows(2).any(|w| w[1] < w[0]) {
            return Err("the times are not finite and non-decreasing".into());
        }
        Ok(ValueSchedule { times, values })
    }

    /// The index of the value in effect at `t` (see [`row_at`]).
    fn index_at(&self, t: f64, hint: &mut usize) -> usize {
        row_at(&self.times, t, hint).unwrap_or(0)
    }

    /// The value in effect at `t`.
    pub fn value_at(&self, t: f64) -> &Value {
        let mut hint = 0;
        &self.values[self.index_at(t, &mut hint)]
    }
}

/// An input set by value ([`Subsystem::set_values`]) from a schedule:
/// Int64 and UInt64 over their whole range, Binary and String, which no
/// `f64` slot carries.
#[derive(Debug, Clone)]
pub struct ValueFeed {
    /// The input, a variable of the wrapped subsystem's model description.
    pub variable: VariableIndex,
    /// Its values.
    pub schedule: ValueSchedule,
    /// Its index among the wrapped subsystem's traced texts, when it is
    /// traced ([`Subsystem::traced_strings`]): the trace then shows the
    /// value in effect at each row's time, as for a fed slot.
    pub traced: Option<usize>,
}

/// One input fed by a column of a table.
#[derive(Debug, Clone)]
pub struct FileFeed {
    /// The table.
    pub table: Arc<InputTable>,
    /// Its column.
    pub column: usize,
    /// Held, not interpolated: the value of the last row at or before
    /// `t`, never differentiated. Every input but a Float of continuous
    /// variability (integers, enumerations, Booleans, and Floats of
    /// discrete variability, sampled-data signals), as FMPy and fmusim
    /// read input files.
    pub discrete: bool,
}

/// A subsystem whose last input slots are fed from input files (see the
/// module documentation); the others stay coupled inputs, driven by the
/// master as usual.
pub struct FileInputs {
    inner: Box<dyn Subsystem>,
    info: SubsystemInfo,
    n_outer: usize,
    feeds: Vec<FileFeed>,
    hints: Vec<usize>,
    /// (observed slot, feed): an observed file-fed input, traced as the
    /// file's value at the current time (the value it gets from there on).
    observed: Vec<(usize, usize)>,
    interpolates: bool,
    any_continuous: bool,
    /// Coupled input values and derivatives (orders 1..=3) as the master set them.
    outer_u: Vec<f64>,
    outer_d: Vec<f64>,
    outer_orders: u32,
    /// Every input of the inner subsystem, and one derivative order of them.
    full: Vec<f64>,
    full_d: Vec<f64>,
    slopes: Vec<f64>,
    initializing: bool,
    /// The current communication point (for the observed file inputs).
    now: f64,
    started: Option<(f64, f64)>,
    /// The inner Jacobian, every inner input (reused across calls).
    inner_jacobian: Vec<f64>,
    /// Inputs set by value, the index of the value each was last given
    /// (`usize::MAX`: none, or the FMU's state was set back since), and
    /// the values to set now (reused).
    value_feeds: Vec<ValueFeed>,
    value_set: Vec<usize>,
    value_hints: Vec<usize>,
    changed: Vec<InputValue>,
}

impl std::fmt::Debug for FileInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileInputs")
            .field("name", &self.info.name)
            .field("feeds", &self.feeds.len())
            .finish()
    }
}

impl FileInputs {
    /// Wraps `inner`, whose last `feeds.len()` input slots are fed by
    /// `feeds` (in order); `observed` lists the observed slots of `inner`
    /// that are file-fed inputs, with the index of their feed.
    /// `value_feeds` are inputs of `inner` that are no slots, set by value.
    ///
    /// # Errors
    ///
    /// More feeds than input slots, or an observed slot or feed that does
    /// not exist.
    pub fn new(
        inner: Box<dyn Subsystem>,
        feeds: Vec<FileFeed>,
        observed: Vec<(usize, usize)>,
        value_feeds: Vec<ValueFeed>,
    ) -> Result<FileInputs> {
        let inner_info = inner.info();
        let n_inner = inner_info.inputs.len();
        let Some(n_outer) = n_inner.checked_sub(feeds.len()) else {
            return Err(CoreError::Config(format!(
                "subsystem '{}': {} file-fed inputs but {n_inner} input slots",
                inner_info.name,
                feeds.len()
            )));
        };
        if let Some(&(slot, k)) = observed
            .iter()
            .find(|&&(slot, k)| slot >= inner_info.observed.len() || k >= feeds.len())
        {
            return Err(CoreError::Config(format!(
                "subsystem '{}': observed slot {slot} or feed {k} does not exist",
                inner_info.name
            )));
        }
        let mut info = inner_info.clone();
        info.inputs.truncate(n_outer);
        for deps in &mut info.feedthrough {
            deps.retain(|&i| i < n_outer);
        }
        let interpolates = inner_info.can_interpolate_inputs;
        let any_continuous = feeds.iter().any(|f| !f.discrete);
        Ok(FileInputs {
            info,
            n_outer,
            hints: vec![0; feeds.len()],
            slopes: vec![0.0; feeds.len()],
            feeds,
            observed,
            interpolates,
            any_continuous,
            outer_u: vec![0.0; n_outer],
            outer_d: vec![0.0; 3 * n_outer],
            outer_orders: 0,
            full: vec![0.0; n_inner],
            full_d: vec![0.0; n_inner],
            initializing: false,
            now: 0.0,
            started: None,
            inner_jacobian: Vec::new(),
            value_set: vec![usize::MAX; value_feeds.len()],
            value_hints: vec![0; value_feeds.len()],
            changed: Vec::with_capacity(value_feeds.len()),
            value_feeds,
            inner,
        })
    }

    /// The subsystem inside.
    pub fn inner(&self) -> &dyn Subsystem {
        self.inner.as_ref()
    }

    /// Sets every input of the inner subsystem for a step from `t`: the
    /// coupled values, the file's values at `t`, and (`derivatives`, an
    /// interpolating subsystem) the derivatives the master gave plus the
    /// file's slopes as first derivatives.
    fn apply(&mut self, t: f64, derivatives: bool) -> Result<()> {
        let n = self.n_outer;
        self.full[..n].copy_from_slice(&self.outer_u);
        for (k, feed) in self.feeds.iter().enumerate() {
            let (v, s) = feed
                .table
                .sample(feed.column, t, feed.discrete, &mut self.hints[k]);
            self.full[n + k] = v;
            self.slopes[k] = s;
        }
        self.inner.set_inputs(&self.full)?;
        self.set_values_at(t)?;
        if !(derivatives && self.interpolates) {
            return Ok(());
        }
        let orders = self.outer_orders.max(u32::from(self.any_continuous));
        for order in 1..=orders.min(3) {
            if order <= self.outer_orders {
                let o = (order as usize - 1) * n;
                self.full_d[..n].copy_from_slice(&self.outer_d[o..o + n]);
            } else {
                self.full_d[..n].iter_mut().for_each(|d| *d = 0.0);
            }
            for (k, s) in self.slopes.iter().enumerate() {
                self.full_d[n + k] = if order == 1 { *s } else { 0.0 };
            }
            self.inner.set_input_derivatives(order, &self.full_d)?;
        }
        Ok(())
    }
}

impl FileInputs {
    /// Sets the inputs fed by value whose value in effect at `t` is not
    /// the one they were given last (the FMU keeps a value until set
    /// again, so each is set once per change, not every step).
    fn set_values_at(&mut self, t: f64) -> Result<()> {
        self.changed.clear();
        for (k, feed) in self.value_feeds.iter().enumerate() {
            let i = feed.schedule.index_at(t, &mut self.value_hints[k]);
            if self.value_set[k] != i {
                self.value_set[k] = i;
                self.changed
                    .push((feed.variable, feed.schedule.values[i].clone()));
            }
        }
        if self.changed.is_empty() {
            return Ok(());
        }
        let result = self.inner.set_values(&self.changed);
        if result.is_err() {
            // Not known to be set: set again next time.
            self.value_set.fill(usize::MAX);
        }
        result
    }
}

impl Subsystem for FileInputs {
    fn info(&self) -> &SubsystemInfo {
        &self.info
    }

    fn enter_initialization(&mut self, t0: f64, t_stop: Option<f64>) -> Result<()> {
        self.initializing = true;
        self.now = t0;
        self.inner.enter_initialization(t0, t_stop)
    }

    fn allow_rollback(&mut self, to: RollbackTo) -> Result<()> {
        self.inner.allow_rollback(to)
    }

    fn exit_initialization(&mut self) -> Result<()> {
        self.initializing = false;
        self.inner.exit_initialization()
    }

    fn set_inputs(&mut self, values: &[f64]) -> Result<()> {
        self.outer_u.copy_from_slice(&values[..self.n_outer]);
        self.outer_orders = 0;
        if self.initializing {
            // In Initialization Mode the values count at once (the
            // initial exchange reads the outputs right after).
            return self.apply(self.now, false);
        }
        // Else they are set with the file's values when the step starts.
        Ok(())
    }

    fn set_input_derivatives(&mut self, order: u32, values: &[f64]) -> Result<()> {
        if (1..=3).contains(&order) {
            let n = self.n_outer;
            let o = (order as usize - 1) * n;
            self.outer_d[o..o + n].copy_from_slice(&values[..n]);
            self.outer_orders = self.outer_orders.max(order);
        }
        Ok(())
    }

    fn do_step(&mut self, t: f64, h: f64) -> Result<StepOutcome> {
        self.apply(t, true)?;
        let outcome = self.inner.do_step(t, h);
        self.now = crate::subsystem::time_after_step(&outcome, t, h, self.now);
        outcome
    }

    fn can_start_step(&self) -> bool {
        self.inner.can_start_step()
    }

    fn start_step(&mut self, t: f64, h: f64) -> Result<bool> {
        self.apply(t, true)?;
        let started = self.inner.start_step(t, h)?;
        self.started = started.then_some((t, h));
        Ok(started)
    }

    fn send_started_steps(&mut self) {
        self.inner.send_started_steps();
    }

    fn finish_step(&mut self) -> Result<StepOutcome> {
        let outcome = self.inner.finish_step();
        if let Some((t, h)) = self.started.take() {
            self.now = crate::subsystem::time_after_step(&outcome, t, h, self.now);
        }
        outcome
    }

    fn traced_strings(&self) -> &[String] {
        self.inner.traced_strings()
    }

    fn get_strings(&mut self, values: &mut [String]) -> Result<()> {
        self.inner.get_strings(values)?;
        for feed in &self.value_feeds {
            if let Some(text) = feed.traced.and_then(|i| values.get_mut(i)) {
                *text = crate::traced_text::cell_text(feed.schedule.value_at(self.now));
            }
        }
        Ok(())
    }

    fn get_observed(&mut self, values: &mut [f64]) -> Result<()> {
        self.inner.get_observed(values)?;
        for &(slot, k) in &self.observed {
            let feed = &self.feeds[k];
            values[slot] = feed
                .table
                .sample(feed.column, self.now, feed.discrete, &mut self.hints[k])
                .0;
        }
        Ok(())
    }

    fn get_output_derivatives(&mut self, order: u32, values: &mut [f64]) -> Result<()> {
        self.inner.get_output_derivatives(order, values)
    }

    fn save_state(&mut self, reuse: Option<StateId>) -> Result<StateId> {
        self.inner.save_state(reuse)
    }

    fn restore_state(&mut self, id: StateId) -> Result<()> {
        // The restored state holds the inputs it was saved with: give
        // every value input its value again at the next step.
        self.value_set.fill(usize::MAX);
        self.inner.restore_state(id)
    }

    fn free_state(&mut self, id: StateId) -> Result<()> {
        self.inner.free_state(id)
    }

    fn terminate(&mut self) -> Result<()> {
        self.inner.terminate()
    }

    fn counters(&self) -> CallCounters {
        self.inner.counters()
    }

    fn step_function(&self) -> &'static str {
        self.inner.step_function()
    }

    fn take_recent_log(&mut self) -> Vec<String> {
        self.inner.take_recent_log()
    }

    fn feedthrough_jacobian(&mut self, jacobian: &mut [f64]) -> Result<bool> {
        // The inner Jacobian has a column per inner input; keep the
        // coupled ones.
        let n_in = self.full.len();
        let n_out = self.info.n_outputs;
        if jacobian.len() != n_out * self.n_outer {
            return Ok(false);
        }
        self.inner_jacobian.resize(n_out * n_in, 0.0);
        let all = &mut self.inner_jacobian;
        if !self.inner.feedthrough_jacobian(all)? {
            return Ok(false);
        }
        for o in 0..n_out {
            jacobian[o * self.n_outer..(o + 1) * self.n_outer]
                .copy_from_slice(&all[o * n_in..o * n_in + self.n_outer]);
        }
        Ok(true)
    }

    fn as_system(&mut self) -> Option<&mut crate::system::System> {
        self.inner.as_system()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> InputTable {
        InputTable::new(
            "in.csv",
            vec!["u".into()],
            vec![0.0, 1.0, 1.0, 3.0],
            vec![vec![0.0, 2.0, 5.0, 1.0]],
        )
        .unwrap()
    }

    #[test]
    fn linear_between_rows_with_the_segment_slope() {
        let t = table();
        let mut hint = 0;
        assert_eq!(t.sample(0, 0.0, false, &mut hint), (0.0, 2.0));
        assert_eq!(t.sample(0, 0.5, false, &mut hint), (1.0, 2.0));
        // A jump at t = 1: the later row from t = 1 on.
        assert_eq!(t.sample(0, 1.0, false, &mut hint), (5.0, -2.0));
        assert_eq!(t.sample(0, 2.0, false, &mut hint), (3.0, -2.0));
        // Held outside the range.
        assert_eq!(t.sample(0, -1.0, false, &mut hint), (0.0, 0.0));
        assert_eq!(t.sample(0, 3.0, false, &mut hint), (1.0, 0.0));
        assert_eq!(t.sample(0, 9.0, false, &mut hint), (1.0, 0.0));
        // Backwards (a rollback) from a stale hint.
        assert_eq!(t.sample(0, 0.25, false, &mut hint), (0.5, 2.0));
    }

    #[test]
    fn discrete_holds_the_last_row_at_or_before_t() {
        let t = table();
        assert_eq!(t.value(0, 0.999, true), 0.0);
        assert_eq!(t.value(0, 1.0, true), 5.0);
        assert_eq!(t.value(0, 2.9, true), 5.0);
        assert_eq!(t.value(0, 3.0, true), 1.0);
        assert_eq!(t.value(0, -5.0, true), 0.0);
    }

    #[test]
    fn malformed_tables_are_refused() {
        let bad = |times: Vec<f64>, v: Vec<f64>| {
            InputTable::new("f", vec!["u".into()], times, vec![v]).unwrap_err()
        };
        assert!(bad(vec![], vec![]).contains("no rows"));
        assert!(bad(vec![0.0, 2.0, 1.0], vec![0.0; 3]).contains("decreases"));
        assert!(bad(vec![0.0, 1.0], vec![0.0]).contains("1 values for 2 rows"));
        assert!(bad(vec![0.0, f64::NAN], vec![0.0; 2]).contains("time NaN"));
        assert!(bad(vec![0.0, 1.0], vec![0.0, f64::INFINITY]).contains("inf"));
    }
}
