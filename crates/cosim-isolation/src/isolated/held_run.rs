//! The master's side of a held run ([`cosim_core::hosted`]): every member
//! of a system in one host, a stretch of held steps sent as one request
//! ([`Op::HeldRun`]) through the lead member's region, the members' values
//! through their lane slots ([`HeldRunPlan`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cosim_core::hosted::{HeldRun, HeldRunEnd, Hosted};
use cosim_core::system::Buffers;

use smallvec::SmallVec;

use super::{IsolatedSubsystem, PendingStep, config};
use crate::protocol::{
    Call, Control, HeldRunPlan, HeldRunRoute, HeldRunStopped, LaneSlot, Op, RUN_RECORD,
    RUN_RECORD_WORDS, RUN_TAKEN, Reply,
};

/// Whether systems in one host take their quiet stretches there
/// (`COSIM_ISOLATION_RUNS`, default on; `0` steps them one by one, as
/// before: for comparing the two).
fn runs_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("COSIM_ISOLATION_RUNS").map_or(true, |v| v.trim() != "0"))
}

/// Members a run gathers without allocating.
const MEMBERS_INLINE: usize = 16;

/// How many times its usual spin the master spins waiting for a run.
const RUN_SPIN: u32 = 100;

/// How long a run may go on after the user's interrupt before the master
/// gives up on it (and kills the host, as for a call that does not
/// answer): a run takes about a millisecond.
const RUN_GRACE: Duration = Duration::from_secs(1);

/// The answer of a member's step that stopped a held run, for its
/// `finish_step` (as its batch's answer would be).
#[derive(Debug)]
pub(super) struct HeldAnswer {
    pub(super) aux: u64,
    pub(super) aux_f64: f64,
    pub(super) frame: Option<Reply>,
}

impl Hosted for IsolatedSubsystem {
    fn host_key(&self) -> usize {
        self.link
            .as_ref()
            .map_or(usize::MAX, |l| Arc::as_ptr(&l.group) as usize)
    }

    fn held_runner(&self) -> cosim_core::hosted::HeldRunner {
        run_held
    }

    fn record_capacity(&self) -> usize {
        RUN_RECORD_WORDS
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

impl IsolatedSubsystem {
    /// Itself as a member of held runs, where they are on and it can.
    pub(super) fn hosted(&mut self) -> Option<&mut dyn Hosted> {
        (runs_enabled() && self.link.as_ref().is_some_and(|l| l.lane.is_some()))
            .then_some(self as &mut dyn Hosted)
    }

    /// Nothing queued, kept or started: a run can go.
    fn ready_for_run(&self) -> bool {
        self.batch_ops == 0
            && !self.lane_inputs_set
            && self.pending_step.is_none()
            && !matches!(self.prefetched, super::Prefetched::Requested { .. })
    }

    /// `steps` completed steps of the run, each reading the first `reads`
    /// observed values after it, counted as the steps one by one count
    /// them (`stepped`: the time stepped after them).
    fn count_held(&mut self, (steps, reads): (u64, usize), stepped: f64) {
        let c = &mut self.counters;
        c.do_step += steps;
        if !self.info.inputs.is_empty() {
            c.set_inputs += steps;
        }
        if reads > 0 {
            c.get_outputs += steps;
        }
        c.stepped_time = stepped;
        self.prefetched = super::Prefetched::No;
    }
}

/// The time each member has stepped after `steps` steps of `run` more:
/// added step by step, as `start_step` adds them (computed once for the
/// members that start from the same sum).
struct Stepped<'r> {
    run: &'r HeldRun<'r>,
    last: Option<(u64, u64, f64)>,
}

impl Stepped<'_> {
    fn after(&mut self, from: f64, steps: u64) -> f64 {
        if let Some((bits, n, sum)) = self.last
            && bits == from.to_bits()
            && n == steps
        {
            return sum;
        }
        let (mut ticks, mut t, mut sum) = (self.run.ticks, self.run.t, from);
        for _ in 0..steps {
            let next = ticks + self.run.h_ticks;
            let t_next = self.run.base.seconds(next);
            sum += t_next - t;
            (ticks, t) = (next, t_next);
        }
        self.last = Some((from.to_bits(), steps, sum));
        sum
    }
}

/// [`cosim_core::hosted::HeldRunner`] of isolated members.
fn run_held(
    members: &mut [&mut dyn Hosted],
    buffers: &mut [Buffers],
    run: &HeldRun<'_>,
    record: &mut Vec<f64>,
) -> Option<HeldRunEnd> {
    record.clear();
    if run.steps.saturating_mul(run.recorded.len() as u64) > RUN_RECORD_WORDS as u64 {
        return None;
    }
    let mut subs: SmallVec<[&mut IsolatedSubsystem; MEMBERS_INLINE]> = members
        .iter_mut()
        .map(|m| m.as_any_mut().downcast_mut::<IsolatedSubsystem>())
        .collect::<Option<_>>()?;
    let group = subs.first()?.link.as_ref()?.group.clone();
    let mut slots: SmallVec<[LaneSlot; MEMBERS_INLINE]> = SmallVec::new();
    for s in &subs {
        let link = s.link.as_ref()?;
        if !Arc::ptr_eq(&link.group, &group) || !s.ready_for_run() {
            return None;
        }
        slots.push(link.lane?);
    }
    let failed = |error| {
        Some(HeldRunEnd {
            taken: 0,
            stopped: None,
            error: Some(error),
        })
    };
    // (The host keeps the plan: sent when it changed.)
    let index = |s: &IsolatedSubsystem| s.link.as_ref().map_or(u32::MAX, |l| l.index);
    let sent = subs[0]
        .held_plan
        .as_ref()
        .is_some_and(|plan| plan_is(plan, subs.iter().map(|s| index(s)), run));
    if !sent {
        let plan = plan_of(subs.iter().map(|s| index(s)), run);
        let lead = &mut subs[0];
        lead.held_plan = None;
        if let Err(e) = lead.control(Control::HeldRunPlan(plan.clone()), Call::DoStep) {
            return failed(e);
        }
        lead.held_plan = Some(plan);
    }
    let lead = &mut subs[0];
    // The first step's inputs (the host routes the later ones).
    let gdata = group.region.data();
    for (slot, b) in slots.iter().zip(buffers.iter()) {
        for (w, v) in gdata[slot.request + 3..].iter().zip(&b.u) {
            w.store(v.to_bits(), Ordering::Relaxed);
        }
    }
    let payload = [
        run.steps,
        run.ticks as u64,
        run.t.to_bits(),
        run.h_ticks as u64,
        u64::from(run.base.exponent()),
    ];
    let seq = match lead.post(Op::HeldRun, 0, &payload, None, Call::DoStep) {
        Ok(seq) => seq,
        Err(e) => return failed(e),
    };
    // (A run takes about a millisecond, far more than a step: the master
    // spins through it, where it spins at all, not to sleep and be woken
    // at every run. An interrupt lets it end, the steps it took kept, the
    // host not killed for it, unless it takes more than RUN_GRACE.)
    let wait = super::Wait {
        spin: crate::channel::spin_budget() * RUN_SPIN,
        grace: RUN_GRACE,
    };
    let answer = lead.answer_waiting(seq, Call::DoStep, wait);
    let mut stepped = Stepped { run, last: None };
    let read = |slot: &LaneSlot, b: &mut Buffers, inputs: bool| {
        let hot = b.read_slots();
        for (y, w) in b.y[..hot].iter_mut().zip(&gdata[slot.answer + 1..]) {
            *y = f64::from_bits(w.load(Ordering::Relaxed));
        }
        let (y, y_new) = (&b.y[..hot], &mut b.y_new[..hot]);
        y_new.copy_from_slice(y);
        if inputs {
            for (u, w) in b.u_end.iter_mut().zip(&gdata[slot.request + 3..]) {
                *u = f64::from_bits(w.load(Ordering::Relaxed));
            }
        }
    };
    // The recorded values of the first `taken` steps.
    let mut read_record = |taken: u64| {
        let n = (taken as usize).saturating_mul(run.recorded.len());
        let words = &gdata[RUN_RECORD..RUN_RECORD + n.min(RUN_RECORD_WORDS)];
        record.extend(
            words
                .iter()
                .map(|w| f64::from_bits(w.load(Ordering::Relaxed))),
        );
    };
    let answer = match answer {
        Ok(a) => a,
        Err(e) => {
            // The host failed: the steps it completed before, as far as
            // they are known.
            let word = gdata[RUN_TAKEN].load(Ordering::Acquire);
            let taken = if word >> 32 == u64::from(seq) {
                (word & 0xffff_ffff).min(run.steps)
            } else {
                0
            };
            read_record(taken);
            let done = (&slots[..], &mut *buffers, taken);
            count_completed(&mut subs, done, &mut stepped, |slot, b| {
                if taken > 0 {
                    read(slot, b, false);
                }
            });
            return Some(HeldRunEnd {
                taken,
                stopped: None,
                error: Some(e),
            });
        }
    };
    let stop = match answer.frame {
        None => {
            let taken = answer.aux.min(run.steps);
            read_record(taken);
            let done = (&slots[..], &mut *buffers, taken);
            count_completed(&mut subs, done, &mut stepped, |slot, b| read(slot, b, true));
            return Some(HeldRunEnd {
                taken,
                stopped: None,
                error: None,
            });
        }
        Some(Reply::HeldRunStopped(stop)) => stop,
        Some(_) => {
            let e = config(&subs[0].info.name, "an unexpected answer to a held run");
            return failed(e);
        }
    };
    if stop.stopped as usize >= subs.len() {
        let e = config(
            &subs[0].info.name,
            "a held run stopped at an unknown member",
        );
        return failed(e);
    }
    read_record(stop.taken.min(run.steps.saturating_sub(1)));
    Some(settle_stop(
        &mut subs,
        (&slots, gdata),
        buffers,
        run,
        stop,
        &read,
    ))
}

/// The plan of `run` with the members of host indices `members`.
fn plan_of(members: impl Iterator<Item = u32>, run: &HeldRun<'_>) -> HeldRunPlan {
    HeldRunPlan {
        members: members.collect(),
        checked: run.checked.iter().map(|&c| c as u32).collect(),
        limit_abs: run.limit_abs,
        routes: run.routes.iter().map(route_of).collect(),
        recorded: run
            .recorded
            .iter()
            .map(|&(p, k)| (p as u32, k as u32))
            .collect(),
        order: run.order.iter().map(|&p| p as u32).collect(),
    }
}

/// A connection of a run as a plan has it.
fn route_of(r: &cosim_core::hosted::RunRoute) -> HeldRunRoute {
    HeldRunRoute {
        src: r.src as u32,
        src_slot: r.src_slot as u32,
        dst: r.dst as u32,
        dst_slot: r.dst_slot as u32,
        gain: r.gain,
        offset: r.offset,
    }
}

/// Whether `plan` is [`plan_of`] `members` and `run` (made without
/// building that plan: a run is taken per stretch of quiet steps).
fn plan_is(plan: &HeldRunPlan, members: impl Iterator<Item = u32>, run: &HeldRun<'_>) -> bool {
    let u32s = |a: &[u32], b: &mut dyn Iterator<Item = u32>| {
        let mut a = a.iter();
        loop {
            match (a.next(), b.next()) {
                (None, None) => return true,
                (Some(&x), Some(y)) if x == y => {}
                _ => return false,
            }
        }
    };
    let mut members = members;
    u32s(&plan.members, &mut members)
        && u32s(&plan.checked, &mut run.checked.iter().map(|&c| c as u32))
        && plan.limit_abs.to_bits() == run.limit_abs.to_bits()
        && plan.routes.len() == run.routes.len()
        && plan
            .routes
            .iter()
            .zip(run.routes)
            .all(|(a, b)| *a == route_of(b))
        && plan.recorded.len() == run.recorded.len()
        && (plan.recorded.iter().zip(run.recorded)).all(|(&a, &(p, k))| a == (p as u32, k as u32))
        && u32s(&plan.order, &mut run.order.iter().map(|&p| p as u32))
}

/// After `taken` steps every member completed: each member's buffers read
/// (`read`), its calls counted.
fn count_completed(
    subs: &mut [&mut IsolatedSubsystem],
    (slots, buffers, taken): (&[LaneSlot], &mut [Buffers], u64),
    stepped: &mut Stepped<'_>,
    mut read: impl FnMut(&LaneSlot, &mut Buffers),
) {
    for ((s, slot), b) in subs.iter_mut().zip(slots).zip(buffers.iter_mut()) {
        read(slot, b);
        let after = stepped.after(s.counters.stepped_time, taken);
        s.count_held((taken, b.read_slots()), after);
    }
}

/// The members' buffers and counters as the steps one by one leave them
/// where the run stopped (see [`HeldRunEnd`]), the stopped member's step
/// started with its answer.
fn settle_stop(
    subs: &mut [&mut IsolatedSubsystem],
    (slots, gdata): (&[LaneSlot], &[AtomicU64]),
    buffers: &mut [Buffers],
    run: &HeldRun<'_>,
    stop: HeldRunStopped,
    read: &impl Fn(&LaneSlot, &mut Buffers, bool),
) -> HeldRunEnd {
    let taken = stop.taken.min(run.steps.saturating_sub(1));
    let s = stop.stopped as usize;
    // Whether the member at place `p` steps before the stopped one.
    let place = |p: usize| run.order.iter().position(|&q| q == p).unwrap_or(p);
    let before = |p: usize| place(p) < place(s);
    let next = run.ticks + (taken as i64 + 1) * run.h_ticks;
    let h = run.base.seconds(next) - run.base.seconds(next - run.h_ticks);
    let mut stepped = Stepped { run, last: None };
    let mut outputs = stop.outputs.iter();
    let mut answer = Some(HeldAnswer {
        aux: stop.aux,
        aux_f64: stop.aux_f64,
        frame: stop.frame.map(|f| *f),
    });
    for (p, ((m, slot), b)) in subs
        .iter_mut()
        .zip(slots)
        .zip(buffers.iter_mut())
        .enumerate()
    {
        if taken > 0 {
            read(slot, b, false);
        }
        // The inputs of the stopped step.
        for ((u, end), w) in
            b.u.iter_mut()
                .zip(b.u_end.iter_mut())
                .zip(&gdata[slot.request + 3..])
        {
            *u = f64::from_bits(w.load(Ordering::Relaxed));
            *end = *u;
        }
        let hot = b.read_slots();
        let steps = taken + u64::from(before(p));
        let after = stepped.after(m.counters.stepped_time, steps);
        m.count_held((steps, hot), after);
        if before(p) {
            // (Its checked values: the first `hot`.)
            for (y, v) in b.y_new[..hot].iter_mut().zip(outputs.by_ref().take(hot)) {
                *y = *v;
            }
        } else if p == s {
            // Started as `start_step` starts it.
            if !m.info.inputs.is_empty() {
                m.counters.set_inputs += 1;
            }
            m.counters.do_step += 1;
            m.counters.stepped_time += h;
            m.held_values = stop.values.clone();
            m.held_answer = answer.take();
            m.pending_step = Some(PendingStep {
                seq: 0,
                queued: usize::from(!m.info.inputs.is_empty()),
                h,
                lane: None,
                reads: hot,
                held: true,
            });
        }
    }
    HeldRunEnd {
        taken,
        stopped: Some(s),
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosim_core::hosted::RunRoute;
    use cosim_core::time::TimeBase;

    #[test]
    fn a_plan_is_the_run_it_was_made_of_and_no_other() {
        let route = |gain| RunRoute {
            src: 0,
            src_slot: 0,
            dst: 1,
            dst_slot: 0,
            gain,
            offset: 0.25,
        };
        let routes = [route(1.0)];
        let run = |checked: &'static [usize], routes, recorded, order| HeldRun {
            steps: 10,
            ticks: 0,
            t: 0.0,
            h_ticks: 1,
            base: TimeBase::with_exponent(3),
            limit_abs: f64::MAX,
            checked,
            routes,
            recorded,
            order,
        };
        let members = [4_u32, 7];
        let a = run(&[1, 0], &routes, &[(0, 0)], &[]);
        let plan = plan_of(members.iter().copied(), &a);
        assert!(plan_is(&plan, members.iter().copied(), &a));
        // (Its steps and time are the request's, not the plan's.)
        let later = HeldRun {
            steps: 3,
            ticks: 9,
            ..run(&[1, 0], &routes, &[(0, 0)], &[])
        };
        assert!(plan_is(&plan, members.iter().copied(), &later));
        let other_routes = [route(2.0)];
        for (what, other) in [
            ("checked", run(&[1, 1], &routes, &[(0, 0)], &[])),
            (
                "a route's gain",
                run(&[1, 0], &other_routes, &[(0, 0)], &[]),
            ),
            ("no route", run(&[1, 0], &[], &[(0, 0)], &[])),
            ("recorded", run(&[1, 0], &routes, &[], &[])),
            ("order", run(&[1, 0], &routes, &[(0, 0)], &[1, 0])),
        ] {
            assert!(!plan_is(&plan, members.iter().copied(), &other), "{what}");
        }
        assert!(!plan_is(&plan, [4_u32, 8].into_iter(), &a), "members");
        assert!(!plan_is(&plan, [4_u32].into_iter(), &a), "fewer members");
        let limit = HeldRun {
            limit_abs: 1e6,
            ..run(&[1, 0], &routes, &[(0, 0)], &[])
        };
        assert!(!plan_is(&plan, members.iter().copied(), &limit), "limit");
    }
}
