//! Subsystems whose FMUs another process steps (process isolation), and
//! the runs of held macro steps such a process takes by itself.
//!
//! In a stretch of quiet steps ([`crate::System::step_held_run`]: the
//! fixed-step master's Jacobi steps at zero-order hold, nothing watching
//! in between) a system whose every subsystem lives in one host process
//! hands the whole stretch to that process: it sets, steps, reads, checks
//! and routes its FMUs itself, in the system's order and with the same
//! arithmetic, so the results are the same bits as the steps taken one by
//! one. The master then exchanges one request per stretch with the host,
//! not one per FMU and step. The values the quiet path's rows show (a
//! trace written every step) are recorded by the host after each step
//! ([`HeldRun::recorded`]), and the rows written from that record.

use std::any::Any;

use crate::error::CoreError;
use crate::system::Buffers;
use crate::time::TimeBase;

/// A connection inside a hosted run: `u[dst][dst_slot] = gain *
/// y[src][src_slot] + offset`, the members by their place in the run
/// (the system's subsystem order).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunRoute {
    /// Source member.
    pub src: usize,
    /// Its observed slot.
    pub src_slot: usize,
    /// Destination member.
    pub dst: usize,
    /// Its input slot.
    pub dst_slot: usize,
    /// Gain of the connection.
    pub gain: f64,
    /// Offset of the connection.
    pub offset: f64,
}

/// A stretch of held macro steps for a host process to take: from now
/// (`ticks`, `t`), `steps` steps of `h_ticks`, each step `[t, t + h]` with
/// `t + h` the seconds of its end's ticks in `base` and `h` their
/// difference (as [`crate::System::step_held_run`] makes them).
#[derive(Debug)]
pub struct HeldRun<'a> {
    /// At most this many steps.
    pub steps: u64,
    /// Now, in ticks.
    pub ticks: i64,
    /// Now, in seconds.
    pub t: f64,
    /// The step, in ticks.
    pub h_ticks: i64,
    /// The run's time resolution.
    pub base: TimeBase,
    /// A step is clean when every checked value read after it is within
    /// this in magnitude (NaN is not): the first member whose step is not
    /// clean stops the run, and the system's checks decide what it means.
    pub limit_abs: f64,
    /// Per member: how many of its observed slots, from the first, a step
    /// reads and checks.
    pub checked: &'a [usize],
    /// The connections between the members.
    pub routes: &'a [RunRoute],
    /// The observed values ((member, slot), each among its checked ones)
    /// to record after every completed step, for the rows the run loop
    /// writes on the quiet path ([`crate::observer::Observer::quiet_row`]).
    /// `steps` times their number is within [`Hosted::record_capacity`].
    pub recorded: &'a [(usize, usize)],
    /// Gauss-Seidel: the members in the order they step, each one's
    /// inputs routed just before its step from what the members before it
    /// read in that step and the others in the step before (as
    /// [`crate::System::step_held_run_in_order`]). Empty: Jacobi.
    pub order: &'a [usize],
}

/// How a hosted run ended. The members' buffers are left as the steps
/// one by one leave them:
///
/// - every step completed (`stopped` and `error` `None`): `y` and `y_new`
///   the values read after the last step (its checked slots), `u_end` the
///   inputs set in it; `u` untouched (the system exchanges);
/// - a member's step not clean (`stopped`): `y` the values of the last
///   completed step, `u` and `u_end` the inputs of the stopped step (in
///   Gauss-Seidel, of the members after the stopped one: of the step
///   before), the members before the stopped one (in the run's order)
///   with that step's values in `y_new`; the stopped member's step is
///   started, its outcome for [`crate::Subsystem::finish_step`]; the
///   members after it have not taken that step;
/// - the host failed (`error`): `y` and `y_new` the values of the last
///   completed step.
#[derive(Debug, Default)]
pub struct HeldRunEnd {
    /// Steps completed by every member.
    pub taken: u64,
    /// The member whose step after them was not clean (an outcome other
    /// than a completed step, a failed call, a value the check refuses).
    pub stopped: Option<usize>,
    /// The host failed (crashed, hung, could not be reached).
    pub error: Option<CoreError>,
}

/// Takes a [`HeldRun`] with `members` (every member of the run, in order,
/// all in one host: [`Hosted::host_key`]) and their `buffers` (the
/// inputs of the first step in `u`); `record` is cleared and gets the
/// values of [`HeldRun::recorded`] after each completed step, a step's
/// after the one before. `None`, with nothing done, where the members
/// cannot take one now.
pub type HeldRunner = fn(
    members: &mut [&mut dyn Hosted],
    buffers: &mut [Buffers],
    run: &HeldRun<'_>,
    record: &mut Vec<f64>,
) -> Option<HeldRunEnd>;

/// A subsystem whose steps another process takes
/// ([`crate::Subsystem::as_hosted`]).
pub trait Hosted: Send {
    /// The process: the members that share one have the same key.
    fn host_key(&self) -> usize;

    /// What takes a run of held steps of this process's members.
    fn held_runner(&self) -> HeldRunner;

    /// How many values a run can record ([`HeldRun::recorded`] times its
    /// steps).
    fn record_capacity(&self) -> usize;

    /// Itself, for the runner to find its own type.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}
