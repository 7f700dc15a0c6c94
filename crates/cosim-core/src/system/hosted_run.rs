//! [`System::step_held_run`] for a system whose subsystems all live in one
//! host process: the stretch is taken there ([`crate::hosted`]), a request
//! per part of it.

use std::time::{Duration, Instant};

use smallvec::SmallVec;

use super::{Buffers, Route, System, read_step_outputs, step_ended_otherwise};
use crate::error::Result;
use crate::hosted::{HeldRun, HeldRunner, Hosted, RunRoute};
use crate::observer::{AfterStep, ObservedValues};

/// Subsystems a stretch hands to their host without allocating.
const MEMBERS_INLINE: usize = 16;

/// What the held runs in a host need of the system, kept from stretch to
/// stretch (with a sparse trace a stretch per row, as often as every
/// eighth step) and made again when what it was made from changed.
#[derive(Debug, Default)]
pub(super) struct HostedSetup {
    /// The values the quiet rows show ([`System::read_every_step`]).
    recorded: Vec<(usize, usize)>,
    /// Their columns, per subsystem and slot ([`recorded_columns`]).
    columns: Vec<Vec<u32>>,
    /// The connections.
    routes: Vec<RunRoute>,
    /// Per subsystem, how many of its values a step reads and checks.
    checked: Vec<usize>,
    /// The record of a request's steps (the runner's to fill).
    record: Vec<f64>,
}

impl HostedSetup {
    /// Made again unless it was made from these.
    fn update(&mut self, every_step: &[(usize, usize)], buffers: &[Buffers], routes: &[Route]) {
        let same = self.recorded == every_step
            && self.checked.len() == buffers.len()
            && self.checked.iter().zip(buffers).all(|(&c, b)| c == b.hot)
            && self.routes.len() == routes.len();
        if same {
            return;
        }
        self.recorded = every_step.to_vec();
        self.columns = recorded_columns(every_step, buffers);
        self.checked = buffers.iter().map(|b| b.hot).collect();
        self.routes = routes
            .iter()
            .map(|r| RunRoute {
                src: r.src_sub,
                src_slot: r.src_slot,
                dst: r.dst_sub,
                dst_slot: r.dst_slot,
                gain: r.gain,
                offset: r.offset,
            })
            .collect();
    }
}

/// How long a request's steps should take: an interrupt and the progress
/// shown are never much further behind, while the request's own cost (a
/// round trip, the inputs written and the outputs read once, a few
/// microseconds) is spread over thousands of fast FMU steps.
const REQUEST_TIME: Duration = Duration::from_millis(1);

/// Member-steps of the first request, before one is measured.
const FIRST_MEMBER_STEPS: u64 = 256;

impl System {
    /// The stretch of [`System::step_held_run`] taken by the one host
    /// process of every subsystem. `None`, with nothing done, where they
    /// are not all in one (or it cannot take it now).
    pub(super) fn held_run_in_host(
        &mut self,
        steps: u64,
        h_ticks: i64,
        order: Option<&[usize]>,
        after_step: impl AfterStep,
    ) -> Option<(u64, Result<()>)> {
        if self.buffers.iter().any(|b| b.step_wall_time.is_some()) {
            return None;
        }
        let (runner, capacity) = self.runner_of_one_host()?;
        // The values the quiet rows show, recorded by the host after every
        // step: a request takes at most as many steps as it has room for.
        let most_steps = match self.every_step.len() {
            0 => u64::MAX,
            n => (capacity / n) as u64,
        };
        if most_steps == 0 {
            return None;
        }
        let (pooled, steps) = self.inline_steps(order, steps);
        if steps == 0 {
            return Some((0, Ok(())));
        }
        // (Taken out for the stretch, as the system steps and exchanges
        // beside it; put back whatever the outcome.)
        let mut setup = std::mem::take(&mut self.hosted_setup);
        setup.update(&self.every_step, &self.buffers, &self.routes);
        let how = (runner, (pooled, steps), order);
        let outcome = self.held_run_in_host_with(&mut setup, how, h_ticks, most_steps, after_step);
        self.hosted_setup = setup;
        outcome
    }

    /// [`System::held_run_in_host`] once the host takes it, with what the
    /// runs need of the system (`setup`).
    fn held_run_in_host_with(
        &mut self,
        setup: &mut HostedSetup,
        (runner, (pooled, steps), order): (HeldRunner, (bool, u64), Option<&[usize]>),
        h_ticks: i64,
        most_steps: u64,
        mut after_step: impl AfterStep,
    ) -> Option<(u64, Result<()>)> {
        let HostedSetup {
            recorded,
            columns,
            routes,
            checked,
            record,
        } = setup;
        let base = self.time_base;
        let limit_abs = self.divergence_limit.min(f64::MAX);
        let mut per_request = (FIRST_MEMBER_STEPS / self.subsystems.len() as u64).max(1);
        let mut taken = 0;
        let mut go_on = true;
        while go_on && taken < steps {
            let run = HeldRun {
                steps: (steps - taken).min(per_request).min(most_steps),
                ticks: self.ticks,
                t: self.time,
                h_ticks,
                base,
                limit_abs,
                checked,
                routes,
                recorded,
                order: order.unwrap_or_default(),
            };
            let mut members: SmallVec<[&mut dyn Hosted; MEMBERS_INLINE]> = self
                .subsystems
                .iter_mut()
                .filter_map(|s| s.as_hosted())
                .collect();
            let started = Instant::now();
            let Some(end) = runner(&mut members, &mut self.buffers, &run, record) else {
                // (Refused: before any step, the steps go one by one.)
                if taken == 0 {
                    return None;
                }
                break;
            };
            drop(members);
            if end.taken == run.steps {
                // The next request sized to take about REQUEST_TIME.
                let ns = started.elapsed().as_nanos().max(1);
                let steps = REQUEST_TIME.as_nanos() * u128::from(run.steps) / ns;
                per_request = u64::try_from(steps).unwrap_or(u64::MAX).clamp(1, 1 << 24);
            }
            // As a step on its own marks them: the inputs held.
            for b in &mut self.buffers {
                b.held = true;
                b.deliver_orders = 0;
            }
            self.rest_stale |= self.lazy;
            for k in 0..end.taken as usize {
                let next = self.ticks + h_ticks;
                let t_next = base.seconds(next);
                (self.ticks, self.time) = (next, t_next);
                let n = recorded.len();
                let values = RecordedStep {
                    buffers: &self.buffers,
                    columns,
                    row: record.get(k * n..(k + 1) * n).unwrap_or_default(),
                };
                go_on &= after_step.after_step(t_next, next, &values);
            }
            taken += end.taken;
            let stuck = end.taken == 0 && end.stopped.is_none() && end.error.is_none();
            if pooled {
                self.pool_chooser.record_inline(end.taken);
            }
            if let Some(e) = end.error {
                return Some((taken, Err(e)));
            }
            if let Some(s) = end.stopped {
                let how = (pooled, order);
                return Some(self.finish_stopped_in_host(s, taken, h_ticks, how, after_step));
            }
            self.exchange();
            if stuck {
                // (No step and no reason: the steps go one by one.)
                break;
            }
        }
        Some((taken, Ok(())))
    }

    /// What takes held runs of the subsystems, if they all live in one
    /// host process, and how many values a run can record.
    fn runner_of_one_host(&mut self) -> Option<(HeldRunner, usize)> {
        let mut key = None;
        for sub in &mut self.subsystems {
            let k = sub.as_hosted()?.host_key();
            if *key.get_or_insert(k) != k {
                return None;
            }
        }
        let lead = self.subsystems.first_mut()?.as_hosted()?;
        Some((lead.held_runner(), lead.record_capacity()))
    }

    /// The step after `taken` of a hosted run, stopped at subsystem `s`
    /// (the ones before it took it): `s`'s outcome as its own step's,
    /// the ones after it stepped one by one, then the step published and
    /// exchanged as [`System::step_held_all_inline`] and the fixed-step
    /// master leave it.
    #[cold]
    #[inline(never)]
    fn finish_stopped_in_host(
        &mut self,
        s: usize,
        taken: u64,
        h_ticks: i64,
        (pooled, order): (bool, Option<&[usize]>),
        mut after_step: impl AfterStep,
    ) -> (u64, Result<()>) {
        let (t, next) = (self.time, self.ticks + h_ticks);
        let t_next = self.time_base.seconds(next);
        let h = t_next - t;
        let policy = (self.nonfinite, self.divergence_limit);
        let sub = self.subsystems[s].as_mut();
        let b = &mut self.buffers[s];
        let warned = &mut self.nonfinite_warned[s];
        let first = match sub.finish_step() {
            Ok(cosim_fmi::StepOutcome::Completed) => {
                read_step_outputs(sub, b, t, h, policy, warned)
            }
            other => step_ended_otherwise(sub, b, other, (t, h), policy, warned),
        };
        let step = ((t, h), (next, t_next));
        let finished = match order {
            None => self.finish_stopped_step(first, s, step, pooled, &mut after_step),
            Some(order) => {
                let p = order.iter().position(|&q| q == s).unwrap_or(s);
                self.finish_stopped_in_order(first, order, p, step, &mut after_step)
            }
        };
        match finished {
            Ok(()) => (taken + 1, Ok(())),
            Err(e) => (taken, Err(e)),
        }
    }
}

/// Per subsystem and observed slot: its column among `recorded`, or
/// `u32::MAX` (the slots after the last recorded one left out).
fn recorded_columns(recorded: &[(usize, usize)], buffers: &[Buffers]) -> Vec<Vec<u32>> {
    let mut columns: Vec<Vec<u32>> = vec![Vec::new(); buffers.len()];
    for (c, &(s, k)) in recorded.iter().enumerate() {
        if let Some(of) = columns.get_mut(s) {
            if of.len() <= k {
                of.resize(k + 1, u32::MAX);
            }
            of[k] = c as u32;
        }
    }
    columns
}

/// The values of one step of a hosted run: those the host recorded after
/// it (every value a quiet row shows), the others as published after the
/// request.
struct RecordedStep<'a> {
    buffers: &'a [Buffers],
    columns: &'a [Vec<u32>],
    row: &'a [f64],
}

impl ObservedValues for RecordedStep<'_> {
    #[inline]
    fn observed(&self, subsystem: usize, slot: usize) -> f64 {
        match self.columns.get(subsystem).and_then(|c| c.get(slot)) {
            Some(&c) if c != u32::MAX => {
                // (The runner records every step it took: see `HeldRunner`.)
                debug_assert!((c as usize) < self.row.len());
                self.row.get(c as usize).copied().unwrap_or(f64::NAN)
            }
            _ => self.buffers[subsystem].y[slot],
        }
    }
}
