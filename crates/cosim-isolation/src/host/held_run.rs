//! A held run in the host ([`Op::HeldRun`], [`HeldRunPlan`]): a stretch of
//! macro steps of the members, each step the batch `[SetInputs, DoStep]`
//! of each member in the plan's order, the values read after it routed
//! into the next step's inputs here, with the arithmetic the master's
//! [`cosim_core::System::exchange`] uses. The master sees one request
//! for the stretch.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use cosim_core::subsystem::Subsystem;
use cosim_core::time::TimeBase;

use super::{Header, Host, HostError, Member};
use cosim_fmi::{BoundStep, StepCall};
use smallvec::SmallVec;

use crate::protocol::{
    CALL, CALL_MEMBER, CALL_TIME, Call, HeldRunPlan, HeldRunStopped, LaneSlot, Op, RESP_AUX_F64,
    RUN_RECORD, RUN_RECORD_WORDS, RUN_TAKEN, Reply, STEP_COMPLETED, STEP_PREFETCHED, WireError,
};

/// Members whose runs bind their held steps without allocating.
const RUN_INLINE: usize = 16;

/// A member's plan of held runs ([`Control::HeldRunPlan`]) and what its
/// runs need, worked out at the first ([`Prepared`]) and kept: a run is
/// taken per stretch of quiet steps, as often as every eighth step (a
/// trace's rows), and allocates nothing after the first of its plan.
///
/// [`Control::HeldRunPlan`]: crate::protocol::Control::HeldRunPlan
pub(super) struct PreparedPlan {
    plan: HeldRunPlan,
    /// `None` until the first run; then the plan's layout, or why its
    /// members cannot take one (`Host::check_plan`).
    prepared: Option<Result<Prepared, WireError>>,
}

impl PreparedPlan {
    /// A plan just received.
    pub(super) fn new(plan: HeldRunPlan) -> PreparedPlan {
        PreparedPlan {
            plan,
            prepared: None,
        }
    }
}

/// What the runs of a plan need ([`Host::prepare`]): where each member
/// has its values, its connections as positions, and the buffers the
/// steps use (kept from run to run).
struct Prepared {
    layout: RunLayout,
    order: RunOrder,
    /// The connections by place and slot (source place and slot,
    /// destination place and slot, gain, offset).
    routes: Vec<(usize, usize, usize, usize, f64, f64)>,
    /// The connections as positions in the flat `y` and `u`.
    flat_routes: Vec<(usize, usize, f64, f64)>,
    /// Where each recorded value is in the flat `y`.
    recorded: Vec<usize>,
    /// Per place: the member's index, its ranges of `u` and `y`, how many
    /// values it checks.
    places: Vec<(usize, Range<usize>, Range<usize>, usize)>,
    /// Gauss-Seidel: the connections into each place, as positions in
    /// the flat buffers, and by place and slot.
    flat_into: Vec<Vec<RouteInto<(usize, usize)>>>,
    into: Vec<Vec<RouteInto<PlaceSlots>>>,
    /// Each member index's place in the plan.
    place_of: Vec<Option<usize>>,
    /// The inputs, flat (set from the lane slots at each run's start).
    u: Vec<f64>,
    /// The values read, flat: the steps one by one's, and the bound
    /// steps' two sides.
    y: Vec<f64>,
    y_sides: (Vec<f64>, Vec<f64>),
}

/// A connection's ends by place and slot: source place and slot,
/// destination place and slot.
type PlaceSlots = (usize, usize, usize, usize);

/// A held run's request: `[steps, ticks, t, h_ticks, time exponent]`.
struct RunRequest {
    steps: u64,
    ticks: i64,
    t: f64,
    h_ticks: i64,
    base: TimeBase,
}

/// How a member's step of a run ended, when not clean: its answer as a
/// batch's.
struct Stop {
    aux: u64,
    aux_f64: f64,
    values: Vec<f64>,
    frame: Option<Reply>,
}

impl Host<'_> {
    /// Serves member `m`'s held run (`word`: its request's first word) and
    /// answers it in `m`'s response area: the steps taken in `aux`, or a
    /// [`Reply::HeldRunStopped`] frame.
    pub(super) fn serve_held_run(&mut self, m: usize, word: u64) -> Result<(), HostError> {
        let seq = word >> 32;
        let member = &self.members[m];
        let req = member.layout.request;
        let len = Op::decode(member.word(req + 1)).map_or(0, |(_, _, len)| len);
        if len < 5 || 2 + 5 > member.layout.request_words {
            return Err(HostError::Protocol(
                "a held run's request is too short".into(),
            ));
        }
        let w = |i: usize| member.word(req + 2 + i);
        let request = RunRequest {
            steps: w(0),
            ticks: w(1) as i64,
            t: f64::from_bits(w(2)),
            h_ticks: w(3) as i64,
            base: TimeBase::with_exponent(u32::try_from(w(4)).unwrap_or(u32::MAX)),
        };
        let mut plan = self.members[m].held_plan.take();
        let reply = match &mut plan {
            Some(PreparedPlan { plan, prepared }) => {
                if prepared.is_none() {
                    *prepared = Some(self.prepare(plan));
                }
                match prepared {
                    Some(Ok(_))
                        if request.steps.saturating_mul(plan.recorded.len() as u64)
                            > RUN_RECORD_WORDS as u64 =>
                    {
                        Some(Reply::Failed {
                            op: 0,
                            error: WireError::Other(
                                "a held run's record does not fit its area".into(),
                            ),
                        })
                    }
                    Some(Ok(prepared)) => self.run_held(plan, prepared, &request, seq),
                    Some(Err(error)) => Some(Reply::Failed {
                        op: 0,
                        error: error.clone(),
                    }),
                    None => None,
                }
            }
            None => Some(Reply::Failed {
                op: 0,
                error: WireError::Other("a held run without a plan".into()),
            }),
        };
        let member = &mut self.members[m];
        member.calling(Call::Idle, member.time);
        member.held_plan = plan;
        member.set_word(req, 0);
        member.header = Header::default();
        if reply.is_none() {
            member.header.aux = request.steps;
        }
        member.finish_answer(reply);
        let frame = member.pending.take();
        member.region.data()[member.layout.response].store(seq, Ordering::Release);
        self.answered(m, frame)
    }

    /// Whether `plan` names members that can take a run: instantiated,
    /// each once, with lane slots that hold their values, its
    /// connections from their checked values into their inputs.
    fn check_plan(&self, plan: &HeldRunPlan) -> Result<(), WireError> {
        let bad = |what: &str| Err(WireError::Other(format!("a held run's plan: {what}")));
        if plan.checked.len() != plan.members.len() {
            return bad("one check count per member");
        }
        let mut seen = vec![false; self.members.len()];
        let mut slots = Vec::with_capacity(plan.members.len());
        for (&i, &checked) in plan.members.iter().zip(&plan.checked) {
            let Some(m) = self.members.get(i as usize) else {
                return bad("an unknown member");
            };
            if std::mem::replace(&mut seen[i as usize], true) {
                return bad("a member twice");
            }
            let Some(sub) = &m.sub else {
                return bad("a member not instantiated");
            };
            let (n_in, n_obs) = (sub.info().inputs.len(), sub.info().observed.len());
            if !m.lane.is_some_and(|s| s.fits(n_in, n_obs)) || checked as usize > n_obs {
                return bad("a member's values do not fit its lane slot");
            }
            slots.push((n_in, checked as usize));
        }
        let fits = |p: u32, slot: u32, input: bool| {
            slots.get(p as usize).is_some_and(|&(n_in, checked)| {
                (slot as usize) < if input { n_in } else { checked }
            })
        };
        if plan
            .routes
            .iter()
            .any(|r| !fits(r.src, r.src_slot, false) || !fits(r.dst, r.dst_slot, true))
        {
            return bad("a connection outside its members' inputs and checked values");
        }
        let checked = |p: u32, slot: u32| plan.checked.get(p as usize).is_some_and(|&c| slot < c);
        if plan.recorded.iter().any(|&(p, slot)| !checked(p, slot)) {
            return bad("a recorded value outside its member's checked ones");
        }
        if !plan.order.is_empty() {
            let mut placed = vec![false; plan.members.len()];
            for &p in &plan.order {
                match placed.get_mut(p as usize) {
                    Some(seen) if !*seen => *seen = true,
                    _ => return bad("a Gauss-Seidel order that is not every member once"),
                }
            }
            if placed.iter().any(|seen| !seen) {
                return bad("a Gauss-Seidel order that is not every member once");
            }
        }
        Ok(())
    }

    /// What `plan`'s runs need ([`Prepared`]), where its members can take
    /// one.
    fn prepare(&self, plan: &HeldRunPlan) -> Result<Prepared, WireError> {
        self.check_plan(plan)?;
        let layout = RunLayout::of(&self.members, plan);
        let order = RunOrder::of(plan);
        let routes = plan
            .routes
            .iter()
            .map(|r| {
                let (src, src_slot) = (r.src as usize, r.src_slot as usize);
                let (dst, dst_slot) = (r.dst as usize, r.dst_slot as usize);
                (src, src_slot, dst, dst_slot, r.gain, r.offset)
            })
            .collect();
        let flat_routes = plan
            .routes
            .iter()
            .map(|r| {
                (
                    layout.y_at[r.src as usize] + r.src_slot as usize,
                    layout.u_at[r.dst as usize] + r.dst_slot as usize,
                    r.gain,
                    r.offset,
                )
            })
            .collect();
        let recorded = plan
            .recorded
            .iter()
            .map(|&(p, slot)| layout.y_at[p as usize] + slot as usize)
            .collect();
        let places = (0..plan.members.len())
            .map(|p| {
                (
                    plan.members[p] as usize,
                    layout.u_at[p]..layout.u_at[p + 1],
                    layout.y_at[p]..layout.y_at[p + 1],
                    plan.checked[p] as usize,
                )
            })
            .collect();
        let flat_into = order.routes_into(plan, |src, src_slot, dst, dst_slot| {
            (layout.y_at[src] + src_slot, layout.u_at[dst] + dst_slot)
        });
        let into = order.routes_into(plan, |src, src_slot, dst, dst_slot| {
            (src, src_slot, dst, dst_slot)
        });
        let mut place_of = vec![None; self.members.len()];
        for (p, &i) in plan.members.iter().enumerate() {
            place_of[i as usize] = Some(p);
        }
        Ok(Prepared {
            layout,
            order,
            routes,
            flat_routes,
            recorded,
            places,
            flat_into,
            into,
            place_of,
            u: Vec::new(),
            y: Vec::new(),
            y_sides: (Vec::new(), Vec::new()),
        })
    }

    /// Takes the run's steps. `None` when they all completed cleanly, else
    /// the stop's frame. The members' values live in two flat buffers
    /// while it runs (each step's inputs set from `u`, the checked values
    /// read into `y`, routed from `y` into `u`: a value nothing checks is
    /// not read); the lane slots get the values of each completed step
    /// (what the master reads should the host die in the next) and the
    /// inputs where the run ends.
    fn run_held(
        &mut self,
        plan: &HeldRunPlan,
        prepared: &mut Prepared,
        request: &RunRequest,
        seq: u64,
    ) -> Option<Reply> {
        let group = self.group;
        let n = plan.members.len();
        let layout = &prepared.layout;
        let u = &mut prepared.u;
        u.clear();
        u.resize(layout.u_at[n], 0.0);
        for (p, slot) in layout.slots.iter().enumerate() {
            let first = slot.request + 3;
            for (v, w) in u[layout.u_at[p]..layout.u_at[p + 1]]
                .iter_mut()
                .zip(&group[first..])
            {
                *v = f64::from_bits(w.load(Ordering::Relaxed));
            }
        }
        for &i in &plan.members {
            // (As a batch: what a failed read after the last step left is
            // for a `GetObserved` that comes first, not for a step.)
            self.members[i as usize].prefetch_error = None;
        }
        if let Some(reply) = self.run_held_bound(plan, prepared, request, seq) {
            return reply;
        }
        let Prepared {
            layout,
            order,
            flat_routes: routes,
            recorded,
            places,
            flat_into: into,
            u,
            y,
            ..
        } = prepared;
        y.clear();
        y.resize(layout.y_at[n], 0.0);
        let (mut ticks, mut t) = (request.ticks, request.t);
        for k in 0..request.steps {
            let next = ticks.wrapping_add(request.h_ticks);
            let t_next = request.base.seconds(next);
            let h = t_next - t;
            for &p in &order.steps {
                // (One buffer: the members before this one have this
                // step's values in it, the others the step before's.)
                for &((src, dst), gain, offset, fresh) in &into[p] {
                    if k > 0 || fresh {
                        u[dst] = gain * y[src] + offset;
                    }
                }
                let (i, u_p, y_p, checked) = &places[p];
                let member = &mut self.members[*i];
                let (u_p, y_p) = (&u[u_p.clone()], &mut y[y_p.clone()]);
                let check = (*checked, plan.limit_abs);
                if let Some(stop) = member.held_step((t, h), u_p, y_p, check) {
                    layout.write_inputs(group, u);
                    let before = order.values_before(p, |q| &y[layout.y_at[q]..layout.y_at[q + 1]]);
                    return Some(stopped((k, p), stop, &before));
                }
            }
            // Every member completed the step: its values published (and
            // recorded), and (Jacobi) the next step's inputs routed from
            // them.
            layout.write_outputs(group, y);
            let record = &group[RUN_RECORD + k as usize * recorded.len()..];
            for (w, &at) in record.iter().zip(recorded.iter()) {
                w.store(y[at].to_bits(), Ordering::Relaxed);
            }
            if k + 1 < request.steps && !order.gauss_seidel {
                for &(src, dst, gain, offset) in routes.iter() {
                    u[dst] = gain * y[src] + offset;
                }
            }
            // (Release: after the values of the step, which it vouches for.)
            group[RUN_TAKEN].store(seq << 32 | (k + 1), Ordering::Release);
            (ticks, t) = (next, t_next);
        }
        layout.write_inputs(group, u);
        None
    }
}

impl Host<'_> {
    /// [`Host::run_held`] with every member's held step bound once
    /// ([`cosim_core::FmuSubsystem::bind_held_step`]: function pointers,
    /// instance, value references and buffers, checked once), each call
    /// recorded as the steps one by one record it. `None`, with nothing
    /// done, where a member's step cannot be bound (a call log, Model
    /// Exchange, slots that are not all Float64).
    fn run_held_bound(
        &mut self,
        plan: &HeldRunPlan,
        prepared: &mut Prepared,
        request: &RunRequest,
        seq: u64,
    ) -> Option<Option<Reply>> {
        let group = self.group;
        let Prepared {
            layout,
            order,
            routes,
            into,
            place_of,
            u,
            y_sides: (y0, y1),
            ..
        } = prepared;
        let n = plan.members.len();
        let total_y = layout.y_at[n];
        for y in [&mut *y0, &mut *y1] {
            y.clear();
            y.resize(total_y, 0.0);
        }
        // The members in the plan's order (on the stack up to
        // RUN_INLINE of them).
        let mut by_place: SmallVec<[Option<&mut Member<'_>>; RUN_INLINE]> =
            (0..n).map(|_| None).collect();
        for (i, m) in self.members.iter_mut().enumerate() {
            if let Some(&Some(p)) = place_of.get(i) {
                by_place[p] = Some(m);
            }
        }
        let mut members: SmallVec<[&mut Member<'_>; RUN_INLINE]> =
            by_place.into_iter().collect::<Option<_>>()?;
        let mut steps: SmallVec<[_; RUN_INLINE]> = SmallVec::new();
        {
            let (mut u_rest, mut y0_rest, mut y1_rest) = (&mut u[..], &mut y0[..], &mut y1[..]);
            for (p, m) in members.iter_mut().enumerate() {
                let (n_in, n_checked) = (
                    layout.u_at[p + 1] - layout.u_at[p],
                    layout.y_at[p + 1] - layout.y_at[p],
                );
                let (u_p, u_tail) = std::mem::take(&mut u_rest).split_at_mut(n_in);
                let (y0_p, y0_tail) = std::mem::take(&mut y0_rest).split_at_mut(n_checked);
                let (y1_p, y1_tail) = std::mem::take(&mut y1_rest).split_at_mut(n_checked);
                (u_rest, y0_rest, y1_rest) = (u_tail, y0_tail, y1_tail);
                steps.push(m.sub.as_mut()?.bind_held_step(u_p, [y0_p, y1_p])?);
            }
        }
        // (A slice for the steps: no test of where the vector keeps them
        // at every access.)
        let mut bound = steps;
        let steps = &mut bound[..];
        let limit = plan.limit_abs;
        let (mut ticks, mut t, mut since) = (request.ticks, request.t, f64::NAN);
        let mut stop = None;
        'steps: for k in 0..request.steps {
            let side = (k & 1) as usize;
            let next = ticks.wrapping_add(request.h_ticks);
            let t_next = request.base.seconds(next);
            let h = t_next - t;
            for &p in &order.steps {
                // (Gauss-Seidel: from this step's values of the members
                // before this one, the step before's of the others.)
                for &((sp, ss, dp, ds), gain, offset, fresh) in &into[p] {
                    if k > 0 || fresh {
                        let from = if fresh { side } else { 1 - side };
                        let v = gain * steps[sp].outputs(from)[ss] + offset;
                        steps[dp].inputs_mut()[ds] = v;
                    }
                }
                let step = &mut steps[p];
                let checked = plan.checked[p] as usize;
                // (The FMU once, then each call as it starts; the run
                // leaves no call behind it: `serve_held_run` clears it.)
                group[CALL_MEMBER].store(u64::from(plan.members[p]), Ordering::Relaxed);
                let mark = |c| record_call(group, c, (t, t, h));
                let check = |y: &[f64]| y[..checked].iter().all(|v| v.abs() <= limit);
                if !step.step(side, t, h, since, mark, check) {
                    stop = Some((k, p, side, (t, h)));
                    break 'steps;
                }
            }
            // Every member completed the step: its values published (and
            // recorded), and the next step's inputs routed from them.
            for (p, slot) in layout.slots.iter().enumerate() {
                for (w, v) in group[slot.answer + 1..].iter().zip(steps[p].outputs(side)) {
                    w.store(v.to_bits(), Ordering::Relaxed);
                }
            }
            let record = &group[RUN_RECORD + k as usize * plan.recorded.len()..];
            for (w, &(p, slot)) in record.iter().zip(&plan.recorded) {
                let v = steps[p as usize].outputs(side)[slot as usize];
                w.store(v.to_bits(), Ordering::Relaxed);
            }
            if k + 1 < request.steps && !order.gauss_seidel {
                for &(sp, ss, dp, ds, gain, offset) in routes.iter() {
                    let v = gain * steps[sp].outputs(side)[ss] + offset;
                    steps[dp].inputs_mut()[ds] = v;
                }
            }
            // (Release: after the values of the step, which it vouches for.)
            group[RUN_TAKEN].store(seq << 32 | (k + 1), Ordering::Release);
            since = t + h;
            (ticks, t) = (next, t_next);
        }
        let Some((k, s, side, (t, h))) = stop else {
            for step in steps.iter_mut() {
                if !since.is_nan() {
                    step.reached(since);
                }
            }
            drop(bound);
            for m in &mut members {
                m.time = since;
                m.header = Header::default();
            }
            drop(members);
            layout.write_inputs(group, u);
            return Some(None);
        };
        // Where it stopped: the members before `s` took the step, `s`
        // ended it as its failure or its values say.
        let before = order.values_before(s, |q| steps[q].outputs(side));
        for (p, step) in steps.iter_mut().enumerate() {
            if order.before(p, s) {
                step.reached(t + h);
            } else if p != s && !since.is_nan() {
                step.reached(since);
            }
        }
        let failed = steps[s].failed();
        let (values, failure) = if failed {
            (Vec::new(), Some(steps[s].take_failure()))
        } else {
            steps[s].reached(t + h);
            (steps[s].outputs(side).to_vec(), None)
        };
        drop(bound);
        for (p, m) in members.iter_mut().enumerate() {
            m.header = Header::default();
            m.time = if order.before(p, s) { t + h } else { t };
        }
        let n_in = layout.u_at[s + 1] - layout.u_at[s];
        let m = &mut members[s];
        let frame = match failure {
            None => {
                m.time = t + h;
                m.header.aux = STEP_COMPLETED | STEP_PREFETCHED;
                None
            }
            Some((call, result)) => {
                let result = result.map_err(cosim_core::CoreError::from);
                m.step_failed((t, h), n_in, Some(call), result)
            }
        };
        let stop = Stop {
            aux: m.header.aux,
            aux_f64: f64::from_bits(m.word(m.layout.response + RESP_AUX_F64)),
            values,
            frame,
        };
        drop(members);
        layout.write_inputs(group, u);
        Some(Some(stopped((k, s), stop, &before)))
    }
}

/// Records the call `c` of a held step from `t` by `h` as it starts (as
/// [`Member::calling`] does; the FMU is recorded once before the step):
/// the set call at `now`, the FMU's time before it.
#[inline(always)]
fn record_call(group: &[AtomicU64], c: StepCall, (now, t, h): (f64, f64, f64)) {
    let (call, at) = match c {
        StepCall::SetInputs => (Call::SetReal, now),
        StepCall::DoStep => (Call::DoStep, t),
        StepCall::GetOutputs => (Call::GetReal, t + h),
        StepCall::Completed => return,
    };
    group[CALL].store(call as u64, Ordering::Relaxed);
    group[CALL_TIME].store(at.to_bits(), Ordering::Relaxed);
}

/// Where each member of a held run has its values: its lane slot, and its
/// part of the run's flat input and output buffers (`u_at[p]..u_at[p +
/// 1]`, `y_at` alike: its checked values).
struct RunLayout {
    slots: Vec<LaneSlot>,
    u_at: Vec<usize>,
    y_at: Vec<usize>,
}

impl RunLayout {
    /// The layout of `plan`'s members (checked: `Host::check_plan`).
    fn of(members: &[Member<'_>], plan: &HeldRunPlan) -> RunLayout {
        let mut layout = RunLayout {
            slots: Vec::with_capacity(plan.members.len()),
            u_at: vec![0],
            y_at: vec![0],
        };
        for (&i, &checked) in plan.members.iter().zip(&plan.checked) {
            let m = &members[i as usize];
            let n_in = m.sub.as_ref().map_or(0, |s| s.info().inputs.len());
            layout.slots.push(m.lane.unwrap_or(LaneSlot {
                request: 0,
                answer: 0,
            }));
            layout.u_at.push(layout.u_at[layout.u_at.len() - 1] + n_in);
            layout
                .y_at
                .push(layout.y_at[layout.y_at.len() - 1] + checked as usize);
        }
        layout
    }

    /// Each member's inputs `u` into its lane slot.
    fn write_inputs(&self, group: &[AtomicU64], u: &[f64]) {
        for (p, slot) in self.slots.iter().enumerate() {
            let first = slot.request + 3;
            for (w, v) in group[first..]
                .iter()
                .zip(&u[self.u_at[p]..self.u_at[p + 1]])
            {
                w.store(v.to_bits(), Ordering::Relaxed);
            }
        }
    }

    /// Each member's values `y` into its lane slot.
    fn write_outputs(&self, group: &[AtomicU64], y: &[f64]) {
        for (p, slot) in self.slots.iter().enumerate() {
            let first = slot.answer + 1;
            for (w, v) in group[first..]
                .iter()
                .zip(&y[self.y_at[p]..self.y_at[p + 1]])
            {
                w.store(v.to_bits(), Ordering::Relaxed);
            }
        }
    }
}

/// The frame of a run stopped after `taken` steps at member `p` of the
/// plan, `before` the values the members before it read after that step.
fn stopped((taken, p): (u64, usize), stop: Stop, before: &[f64]) -> Reply {
    Reply::HeldRunStopped(HeldRunStopped {
        taken,
        stopped: p as u32,
        aux: stop.aux,
        aux_f64: stop.aux_f64,
        values: stop.values,
        frame: stop.frame.map(Box::new),
        outputs: before.to_vec(),
    })
}

impl Member<'_> {
    /// The member's step of a held run, as the batch `[SetInputs, DoStep]`
    /// with the inputs `u` (no set call without inputs), the observed
    /// values read after it into `y`: `None` when it completed and its
    /// first `checked` values are within `limit_abs`, else how it ended.
    fn held_step(
        &mut self,
        (t, h): (f64, f64),
        u: &[f64],
        y: &mut [f64],
        (checked, limit_abs): (usize, f64),
    ) -> Option<Stop> {
        self.header = Header::default();
        let direct = self
            .sub
            .as_ref()
            .is_some_and(|s| s.steps_held_directly(y.len()));
        let frame = if direct {
            self.held_step_direct((t, h), u, y)
        } else {
            // (Slots that are not all Float64: the calls one after the
            // other, as a batch makes them.)
            let frame = self.set_and_step(t, h, u, y.len());
            if self.header.aux & STEP_PREFETCHED != 0 {
                y.copy_from_slice(&self.out[..y.len()]);
            }
            frame
        };
        let aux = self.header.aux;
        let prefetched = aux & STEP_PREFETCHED != 0;
        if frame.is_none()
            && aux & 0xff == STEP_COMPLETED
            && (prefetched || y.is_empty())
            && y[..checked].iter().all(|v| v.abs() <= limit_abs)
        {
            return None;
        }
        Some(Stop {
            aux,
            aux_f64: f64::from_bits(self.word(self.layout.response + RESP_AUX_F64)),
            values: if prefetched { y.to_vec() } else { Vec::new() },
            frame,
        })
    }

    /// [`Member::held_step`]'s calls made directly
    /// ([`cosim_core::FmuSubsystem::step_held_marked`]), each recorded
    /// as [`Member::calling`] records it: the answer's frame, if any; the
    /// code in `header`.
    fn held_step_direct(&mut self, (t, h): (f64, f64), u: &[f64], y: &mut [f64]) -> Option<Reply> {
        let (group, index, now) = (self.group, self.index as u64, self.time);
        let (n_in, n_obs) = (u.len(), y.len());
        let mut last = None;
        let mut completed = false;
        // (The FMU once, then each call as it starts. The run leaves no
        // call behind it: `Host::serve_held_run` clears it at the end.)
        group[CALL_MEMBER].store(index, Ordering::Relaxed);
        let result = match self.sub.as_mut() {
            Some(sub) => sub.step_held_marked(u, (t, h), y, &mut completed, |c| {
                last = Some(c);
                record_call(group, c, (now, t, h));
            }),
            None => Err(cosim_core::CoreError::Config(
                "the FMU is not instantiated yet".into(),
            )),
        };
        if completed {
            // (`Ok(Completed)`, which owns nothing: forgotten, not dropped
            // through a call.)
            std::mem::forget(result);
            self.time = t + h;
            self.header.aux = if n_obs > 0 {
                STEP_COMPLETED | STEP_PREFETCHED
            } else {
                STEP_COMPLETED
            };
            return None;
        }
        self.calling(Call::Idle, self.time);
        self.step_failed((t, h), n_in, last, result)
    }

    /// The answer of a held step whose `last` call (the one it stopped at)
    /// ended with `result`, as the batch `[SetInputs, DoStep]` answers it:
    /// the frame, if any; the code in `header`.
    fn step_failed(
        &mut self,
        (t, h): (f64, f64),
        n_in: usize,
        last: Option<StepCall>,
        result: cosim_core::Result<cosim_fmi::StepOutcome>,
    ) -> Option<Reply> {
        let step_op = u32::from(n_in > 0);
        let failed = |op, e| {
            Some(Reply::Failed {
                op,
                error: WireError::from_core(e),
            })
        };
        match (last, result) {
            (Some(StepCall::SetInputs), Err(e)) => failed(0, e),
            (Some(StepCall::GetOutputs), Err(e)) => {
                // The step completed; the read's error is for the
                // master's next read, as after a batch's step.
                self.time = t + h;
                self.header.aux = STEP_COMPLETED;
                self.prefetch_error = Some(WireError::from_core(e));
                None
            }
            (_, Err(e)) => failed(step_op, e),
            (_, Ok(outcome)) => match self.step_ended_otherwise(outcome) {
                Ok(reply) => reply,
                Err(error) => Some(Reply::Failed { op: step_op, error }),
            },
        }
    }
}

/// The order a held run steps its members in: the plan's (Jacobi) or its
/// Gauss-Seidel order ([`HeldRunPlan::order`]).
struct RunOrder {
    /// Places in the plan, in the order they step.
    steps: Vec<usize>,
    /// Each place's position in `steps`.
    position: Vec<usize>,
    gauss_seidel: bool,
}

/// A connection into a member of a Gauss-Seidel run: where (`at`), its
/// gain and offset, and whether its source steps before the member.
type RouteInto<A> = (A, f64, f64, bool);

impl RunOrder {
    /// The order of `plan` (checked: `Host::check_plan`).
    fn of(plan: &HeldRunPlan) -> RunOrder {
        let n = plan.members.len();
        let gauss_seidel = !plan.order.is_empty();
        let steps: Vec<usize> = if gauss_seidel {
            plan.order.iter().map(|&p| p as usize).collect()
        } else {
            (0..n).collect()
        };
        let mut position = vec![0; n];
        for (i, &p) in steps.iter().enumerate() {
            position[p] = i;
        }
        RunOrder {
            steps,
            position,
            gauss_seidel,
        }
    }

    /// Whether the member at place `a` steps before the one at `b`.
    fn before(&self, a: usize, b: usize) -> bool {
        self.position[a] < self.position[b]
    }

    /// Gauss-Seidel: per place, the connections into it (`at` of source
    /// place and slot, destination place and slot); none for Jacobi,
    /// whose routes go after the step.
    fn routes_into<A>(
        &self,
        plan: &HeldRunPlan,
        at: impl Fn(usize, usize, usize, usize) -> A,
    ) -> Vec<Vec<RouteInto<A>>> {
        let mut into: Vec<Vec<RouteInto<A>>> =
            (0..plan.members.len()).map(|_| Vec::new()).collect();
        if self.gauss_seidel {
            for r in &plan.routes {
                let (src, dst) = (r.src as usize, r.dst as usize);
                let fresh = self.before(src, dst);
                let a = at(src, r.src_slot as usize, dst, r.dst_slot as usize);
                into[dst].push((a, r.gain, r.offset, fresh));
            }
        }
        into
    }

    /// The values of the members that step before the one at place `s`,
    /// in plan order, one after the other (`values(q)`: those of place
    /// `q`).
    fn values_before<'v>(&self, s: usize, values: impl Fn(usize) -> &'v [f64]) -> Vec<f64> {
        let mut before = Vec::new();
        for q in 0..self.position.len() {
            if self.before(q, s) {
                before.extend_from_slice(values(q));
            }
        }
        before
    }
}
