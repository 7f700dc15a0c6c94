//! Preparing each subsystem's inputs for its next step: zero-order hold or
//! Lagrange extrapolation of order m through the last coupled values,
//! delivered through input derivatives where the subsystem can interpolate
//! (docs/algorithms.md). Shared by every master.

use crate::extrapolation::{History, MAX_POINTS, taylor_at, taylor_at_with_slope};
use crate::system::System;

/// The coupled-input history of every subsystem and the rule turning it
/// into the inputs of the next step.
#[derive(Debug, Clone)]
pub struct InputExtrapolation {
    order: u32,
    /// Per subsystem and input slot: its coupled values at the
    /// communication points where they were new, newest first. Each slot
    /// has its own times: with step multiples, an input fed by a
    /// subsystem that steps every k-th macro step takes a new value only
    /// when that subsystem publishes ([`InputExtrapolation::record_fresh`]),
    /// and its polynomial goes through those values at those times.
    histories: Vec<Vec<History>>,
    /// The time of the newest point recorded (the last communication
    /// point): a slot whose newest point is there holds its current
    /// coupled value, which the polynomial then takes exactly.
    newest: f64,
    /// Per subsystem and input slot: the subsystems it depends on
    /// (several through functions), for Gauss-Seidel:
    /// `sources[s][source_ranges[s][i]..source_ranges[s][i + 1]]`.
    sources: Vec<Vec<usize>>,
    source_ranges: Vec<Vec<usize>>,
    /// Per subsystem: it has inputs and can interpolate them (fixed for
    /// the run, looked up once).
    interpolates: Vec<bool>,
    /// Per subsystem: its discrete input slots, always held (ZOH).
    discrete: Vec<Vec<usize>>,
    zoh_warned: Vec<bool>,
    /// The start-up (see [`InputExtrapolation::start`]): per subsystem and
    /// input slot, the coupled input's time derivative at `start_time`
    /// (NaN: none, that is order < 2 or no [`InputExtrapolation::start`])
    /// and whether it is known (every source provides output derivatives).
    start_time: f64,
    start_slopes: Vec<Vec<f64>>,
    slope_known: Vec<Vec<bool>>,
    /// Whether [`InputExtrapolation::record`] keeps the history (see
    /// [`InputExtrapolation::without_history`]).
    keep_history: bool,
}

impl InputExtrapolation {
    /// Extrapolation of order `order` (0 = ZOH, at most 2) for `sys`.
    pub fn new(sys: &System, order: u32) -> Self {
        let histories = sys
            .subsystems()
            .iter()
            .map(|s| vec![History::new(1); s.info().inputs.len()])
            .collect();
        let mut by_input: Vec<Vec<Vec<usize>>> = sys
            .subsystems()
            .iter()
            .map(|s| vec![Vec::new(); s.info().inputs.len()])
            .collect();
        for c in sys.couplings() {
            let list = &mut by_input[c.to_subsystem][c.to_slot];
            if !list.contains(&c.from_subsystem) {
                list.push(c.from_subsystem);
            }
        }
        let mut sources = Vec::with_capacity(by_input.len());
        let mut source_ranges = Vec::with_capacity(by_input.len());
        for lists in by_input {
            let mut ranges = vec![0];
            sources.push(lists.concat());
            for l in &lists {
                ranges.push(ranges[ranges.len() - 1] + l.len());
            }
            source_ranges.push(ranges);
        }
        let interpolates = sys
            .subsystems()
            .iter()
            .map(|s| !s.info().inputs.is_empty() && s.info().can_interpolate_inputs)
            .collect();
        let discrete = sys
            .subsystems()
            .iter()
            .map(|s| {
                let inputs = &s.info().inputs;
                (0..inputs.len()).filter(|&i| inputs[i].discrete).collect()
            })
            .collect();
        InputExtrapolation {
            order: order.min(MAX_POINTS as u32 - 2),
            histories,
            newest: f64::NAN,
            sources,
            source_ranges,
            interpolates,
            discrete,
            zoh_warned: vec![false; sys.len()],
            start_time: f64::NAN,
            start_slopes: sys.buffers().iter().map(|b| vec![0.0; b.u.len()]).collect(),
            slope_known: sys
                .buffers()
                .iter()
                .map(|b| vec![false; b.u.len()])
                .collect(),
            keep_history: true,
        }
    }

    /// Keeps no history when nothing reads it: with order 0 (ZOH) the
    /// inputs of a step are the current coupled values, and
    /// [`InputExtrapolation::prepare`] and
    /// [`InputExtrapolation::prepare_gauss_seidel`] read no history (the
    /// fixed-step master's case; [`InputExtrapolation::prepare_continuing`]
    /// and [`InputExtrapolation::history`] do read it, so masters that use
    /// them keep it). With a higher order the history is kept regardless.
    pub fn without_history(mut self) -> Self {
        self.keep_history = self.order > 0;
        self
    }

    /// The extrapolation order m.
    pub fn order(&self) -> u32 {
        self.order
    }

    /// The coupled-input history of input slot `i` of subsystem `s`.
    pub fn history(&self, s: usize, i: usize) -> &History {
        &self.histories[s][i]
    }

    /// Records every subsystem's current coupled inputs at `t` (call after
    /// each exchange at a communication point).
    pub fn record(&mut self, sys: &System, t: f64) {
        self.record_fresh(sys, t, |_, _| true);
    }

    /// Records the current coupled inputs at `t` that are new there: those
    /// of the input slots of subsystem `d` with a source `src` for which
    /// `fresh(d, src)` (it published at `t`, and `d` takes its outputs
    /// now), and those without a source. The others hold a value recorded
    /// earlier, at the time it was published; recording it again at `t`
    /// would make its polynomial flat and then too steep. (An input fed
    /// through a function by several sources is new when any of them is.)
    pub fn record_fresh(&mut self, sys: &System, t: f64, fresh: impl Fn(usize, usize) -> bool) {
        if !self.keep_history {
            return;
        }
        self.newest = t;
        for (d, (slots, b)) in self.histories.iter_mut().zip(sys.buffers()).enumerate() {
            let (sources, ranges) = (&self.sources[d], &self.source_ranges[d]);
            for (i, (h, u)) in slots.iter_mut().zip(&b.u).enumerate() {
                let from = &sources[ranges[i]..ranges[i + 1]];
                if from.is_empty() || from.iter().any(|&src| fresh(d, src)) {
                    h.push(t, std::slice::from_ref(u));
                }
            }
        }
    }

    /// Records the coupled inputs at the start `t` of the run, and for
    /// order m = 2 also their time derivatives there, from the sources'
    /// output derivatives (`fmi2GetRealOutputDerivatives` /
    /// `fmi3GetOutputDerivatives`, where `maxOutputDerivativeOrder >= 1`;
    /// through the couplings' gains and functions). While the history has
    /// fewer than m points, that is on the first macro step, the input
    /// polynomial is the one through the recorded points with that slope at
    /// the start (the tangent on the first step): its error is O(h^m)
    /// instead of O(h), so the first step's local error O(h^(m+1)) no
    /// longer lowers the global order below m + 1. Inputs whose sources
    /// provide no derivatives start as before (held on the first step).
    /// An FMU that fails to give its derivatives stops the run (after an
    /// error status the standard allows it few calls).
    pub fn start(&mut self, sys: &mut System, t: f64) -> crate::error::Result<()> {
        self.record(sys, t);
        self.start_time = f64::NAN;
        if self.order < 2 {
            return Ok(());
        }
        let mut has = vec![false; sys.len()];
        for (s, has) in has.iter_mut().enumerate() {
            let info = sys.subsystems()[s].info();
            if info.max_output_derivative_order < 1 || sys.buffers()[s].dy.is_empty() {
                continue;
            }
            sys.read_output_derivatives(s)?;
            *has = true;
        }
        sys.exchange_derivatives_all();
        for s in 0..sys.len() {
            let (sources, ranges) = (&self.sources[s], &self.source_ranges[s]);
            let du = &sys.buffers()[s].du;
            for (i, (known, slope)) in self.slope_known[s]
                .iter_mut()
                .zip(self.start_slopes[s].iter_mut())
                .enumerate()
            {
                let from = &sources[ranges[i]..ranges[i + 1]];
                *known = !from.is_empty() && from.iter().all(|&src| has[src]) && du[i].is_finite();
                *slope = if *known { du[i] } else { 0.0 };
            }
            for &i in &self.discrete[s] {
                self.slope_known[s][i] = false;
            }
        }
        self.start_time = t;
        Ok(())
    }

    /// Whether the start-up slope applies to the points of a slot's
    /// history `h` from `skip` on: fewer than m of them, the oldest at the
    /// start.
    #[inline]
    fn starting(&self, h: &History, skip: usize) -> bool {
        let n = h.len().saturating_sub(skip);
        n > 0 && n < self.order as usize && h.time(h.len() - 1) == self.start_time
    }

    /// Forgets the newest recorded point (rollback): in every slot whose
    /// newest point is at the newest time recorded.
    pub fn forget_newest(&mut self) {
        let newest = self.newest;
        for h in self.histories.iter_mut().flatten() {
            if !h.is_empty() && h.time(0) == newest {
                h.pop();
            }
        }
        self.newest = self.newest_recorded();
    }

    /// Forgets every point recorded after `t` (rollback to `t`).
    pub fn forget_after(&mut self, t: f64) {
        for h in self.histories.iter_mut().flatten() {
            while !h.is_empty() && h.time(0) > t {
                h.pop();
            }
        }
        self.newest = self.newest_recorded();
    }

    /// The time of the newest point of any slot (NaN: none).
    fn newest_recorded(&self) -> f64 {
        self.histories
            .iter()
            .flatten()
            .filter(|h| !h.is_empty())
            .map(|h| h.time(0))
            .fold(f64::NAN, f64::max)
    }

    /// Whether subsystem `s` receives derivatives (order > 0 and the FMU
    /// can interpolate); warns once per subsystem when it cannot.
    #[inline]
    fn delivers_derivatives(&mut self, sys: &System, s: usize) -> bool {
        if self.order == 0 || self.interpolates[s] {
            return self.order > 0;
        }
        self.warn_zoh(sys, s);
        false
    }

    #[cold]
    fn warn_zoh(&mut self, sys: &System, s: usize) {
        let info = sys.subsystems()[s].info();
        if !info.inputs.is_empty() && !self.zoh_warned[s] {
            self.zoh_warned[s] = true;
            tracing::warn!(
                "subsystem '{}' ({}) cannot interpolate inputs (FMI 2 canInterpolateInputs=\"false\"; FMI 3 without providesIntermediateUpdate, or a coupled input not declared intermediateUpdate=\"true\"): its inputs are held constant (ZOH) instead of extrapolated with order {}",
                info.name,
                info.origin,
                self.order
            );
        }
    }

    /// [`InputExtrapolation::prepare`] for every subsystem marked in `due`
    /// (ZOH in one pass).
    pub fn prepare_due(&mut self, sys: &mut System, due: &[bool], t: f64) {
        if self.order == 0 {
            sys.hold_inputs(due);
            return;
        }
        let due = due.iter().take(sys.len()).enumerate().filter(|&(_, &d)| d);
        for (s, _) in due {
            self.prepare(sys, s, t);
        }
    }

    /// Prepares subsystem `s`'s inputs for a step starting at `t` from its
    /// history (Jacobi: every input extrapolated from the past).
    pub fn prepare(&mut self, sys: &mut System, s: usize, t: f64) {
        if self.order == 0 {
            // ZOH: the current coupled values, held (no history needed).
            sys.buffers_mut(s).hold_inputs();
            return;
        }
        let deliver = self.delivers_derivatives(sys, s);
        let order = self.order;
        let slots = &self.histories[s];
        let b = sys.buffers_mut(s);
        if !deliver || slots.iter().any(History::is_empty) {
            b.hold_inputs();
            return;
        }
        for (i, (tay, hist)) in b.taylor.iter_mut().zip(slots).enumerate() {
            *tay = if self.slope_known[s][i] && self.starting(hist, 0) {
                start_taylor(hist, 0, self.start_slopes[s][i], t)
            } else {
                hist.taylor(0, order as usize + 1, t)
            };
            if hist.time(0) == self.newest {
                // The newest point is the current coupled value: keep it
                // exact.
                tay[0] = b.u[i];
            }
        }
        for &i in &self.discrete[s] {
            b.taylor[i] = [b.u[i], 0.0, 0.0, 0.0];
        }
        b.deliver_orders = order;
        b.held = false;
    }

    /// Prepares subsystem `s`'s inputs for a step starting at `x` by
    /// continuing the polynomial of its recorded history, leaving out the
    /// newest `skip` points: the inputs a subsystem would have seen had the
    /// step that recorded them never been exchanged (the Richardson
    /// master's modified estimate continues the first step's input
    /// polynomial over the second step).
    pub fn prepare_continuing(&mut self, sys: &mut System, s: usize, x: f64, skip: usize) {
        let deliver = self.delivers_derivatives(sys, s);
        let order = self.order as usize;
        let slots = &self.histories[s];
        let b = sys.buffers_mut(s);
        if slots.iter().any(|h| h.len() <= skip) {
            b.hold_inputs();
            return;
        }
        for (i, (tay, hist)) in b.taylor.iter_mut().zip(slots).enumerate() {
            let available = hist.len() - skip;
            let k = if deliver {
                (order + 1).min(available)
            } else {
                1
            };
            let mut ts = [0.0; MAX_POINTS];
            let mut vs = [0.0; MAX_POINTS];
            for p in 0..k {
                ts[p] = hist.time(p + skip);
                vs[p] = hist.point(p + skip)[0];
            }
            *tay = if deliver && self.slope_known[s][i] && self.starting(hist, skip) {
                start_taylor(hist, skip, self.start_slopes[s][i], x)
            } else {
                taylor_at(&ts[..k], &vs[..k], x)
            };
            if !deliver {
                tay[1..].iter_mut().for_each(|d| *d = 0.0);
            }
        }
        for &i in &self.discrete[s] {
            b.taylor[i] = [slots[i].point(skip)[0], 0.0, 0.0, 0.0];
        }
        b.deliver_orders = if deliver { order as u32 } else { 0 };
        b.held = false;
    }

    /// Prepares subsystem `s`'s inputs for a Gauss-Seidel step from `t`
    /// after an exchange in which the subsystems marked in `fresh` have
    /// already stepped and published: their outputs are values at the end
    /// of the macro step, `t_next`, which are interpolated (held, for ZOH)
    /// rather than extrapolated. An input fed through functions by several
    /// subsystems is fresh when all of them are. (With step multiples the
    /// step of `s` may end after `t_next`.)
    pub fn prepare_gauss_seidel(
        &mut self,
        sys: &mut System,
        s: usize,
        t: f64,
        t_next: f64,
        fresh: &[bool],
    ) {
        let deliver = self.delivers_derivatives(sys, s);
        let order = self.order as usize;
        let slots = &self.histories[s];
        let (sources, ranges) = (&self.sources[s], &self.source_ranges[s]);
        let b = sys.buffers_mut(s);
        b.deliver_orders = if deliver { order as u32 } else { 0 };
        b.held = false;
        for (i, (tay, hist)) in b.taylor.iter_mut().zip(slots).enumerate() {
            let from = &sources[ranges[i]..ranges[i + 1]];
            let is_fresh = !from.is_empty()
                && from
                    .iter()
                    .all(|&src| fresh.get(src).copied().unwrap_or(false));
            if !deliver || hist.is_empty() {
                // ZOH: the newest coupled value, fresh or not.
                *tay = [b.u[i], 0.0, 0.0, 0.0];
            } else if is_fresh {
                // Interpolate through (t_next, fresh value) and the last
                // `order` coupled points.
                let mut ts = [0.0; MAX_POINTS];
                let mut vs = [0.0; MAX_POINTS];
                ts[0] = t_next;
                vs[0] = b.u[i];
                let k = order.min(hist.len());
                for p in 0..k {
                    ts[p + 1] = hist.time(p);
                    vs[p + 1] = hist.point(p)[0];
                }
                *tay = taylor_at(&ts[..k + 1], &vs[..k + 1], t);
            } else {
                *tay = if self.slope_known[s][i] && self.starting(hist, 0) {
                    start_taylor(hist, 0, self.start_slopes[s][i], t)
                } else {
                    hist.taylor(0, order + 1, t)
                };
                if hist.time(0) == self.newest {
                    // The newest point is the current coupled value.
                    tay[0] = b.u[i];
                }
            }
        }
        for &i in &self.discrete[s] {
            b.taylor[i] = [b.u[i], 0.0, 0.0, 0.0];
        }
    }
}

/// The start-up polynomial of one slot: through every point of its
/// history `hist` from `skip` on (at most `MAX_POINTS - 1`), with `slope`
/// at the oldest (the start), as a Taylor expansion at `x`.
fn start_taylor(hist: &History, skip: usize, slope: f64, x: f64) -> [f64; MAX_POINTS] {
    let k = hist.len().saturating_sub(skip).min(MAX_POINTS - 1);
    let (mut ts, mut vs) = ([0.0; MAX_POINTS], [0.0; MAX_POINTS]);
    for p in 0..k {
        ts[p] = hist.time(p + skip);
        vs[p] = hist.point(p + skip)[0];
    }
    taylor_at_with_slope(&ts[..k], &vs[..k], slope, x)
}
