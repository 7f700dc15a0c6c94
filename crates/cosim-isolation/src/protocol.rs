//! What the master and a host process exchange.
//!
//! A host process serves a *group* of FMU instances (one or several
//! subsystems; see [`crate::HostPool`]). Two channels join it to the
//! master:
//!
//! - shared memory (`sys::SharedRegion`): a *group region*
//!   with the futex words of the handshake and what the host is doing (for
//!   the report when it dies), and one *member region* per instance with a
//!   request area and a response area in a fixed binary layout of 64-bit
//!   words (f64 as bits). Every trait call of the master is one *batch* in
//!   its member's request area: the set-input calls are queued (no round
//!   trip) and go with the next call that needs an answer, so a macro step
//!   is a single round trip (set inputs, derivatives, `doStep`, and the
//!   observed values read right after the step). The host scans its
//!   members' request words, serves every posted batch, and answers each
//!   in its member's response area, so the batches of all the FMUs of a
//!   host that a Jacobi macro step starts are served one after the other
//!   while the master is still posting the next ones. A host with four
//!   members or more gets their steps through its *step lane* instead, a
//!   part of the group region where each member's step request and answer
//!   are a few words packed beside the others', sent and answered by
//!   rounds ([`LaneSlot`], [`LANE_GO`], [`LANE_DONE`]); a step that does
//!   not complete is answered in its member's response area as a batch.
//!   A stretch of held steps of every member of a system is one request
//!   ([`Op::HeldRun`], [`HeldRunPlan`]), the members' values in their
//!   lane slots;
//! - a Unix socket (the host's standard input) for what has no fixed size:
//!   the group region's file descriptor at start-up and each member
//!   region's when it is added, then setup requests, errors, log lines and
//!   serialized FMU states, each a length-prefixed `postcard` frame tagged
//!   with its member.

use std::io::{Read, Write};
use std::path::PathBuf;

use cosim_fmi::{FmiError, FmiVersion, Interface, Status};
use serde::{Deserialize, Serialize};

/// First word of the start-up message ("CSIM").
pub const MAGIC: u32 = 0x4353_494d;
/// Protocol version; both sides are the same binary, but an old binary
/// named by `COSIM_HOST` must not be driven.
pub const VERSION: u32 = 13;

// ----- group control words (u32, one per cache line) ----------------------

/// Non-zero while the host sleeps on [`DOORBELL`].
pub const HOST_SLEEPING: usize = 0;
/// Rung by the master after posting a request while the host sleeps.
pub const DOORBELL: usize = 16;
/// Master threads asleep on [`ANSWER_BELL`].
pub const MASTER_SLEEPERS: usize = 32;
/// Rung by the host after answering while a master thread sleeps.
pub const ANSWER_BELL: usize = 48;

// ----- group data words (u64) ---------------------------------------------

/// The FMI call the host is in ([`Call`] code; 0 between calls), for the
/// report when the host dies.
pub const CALL: usize = 0;
/// The simulation time of that call (f64 bits).
pub const CALL_TIME: usize = 1;
/// How long the host may spin waiting for the next request, in ns
/// (written by the master when it changes; see `channel`). On a cache
/// line of its own, away from the words the host writes at every call.
pub const HOST_SPIN_NS: usize = 9;
/// How many spins the host makes between two yields of the processor
/// (`channel::yield_every`, written with [`HOST_SPIN_NS`]).
pub const HOST_YIELD_EVERY: usize = 10;
/// The processor the master was last seen on, plus one (0: not seen
/// yet), which the host keeps off (`cosim_core::placement`): written by
/// the master only when it changes, and only where it waits long (a
/// yield, a sleep, waking a sleeping host).
pub const MASTER_CPU: usize = 11;
/// The member whose FMU the host is calling (with [`CALL`]).
pub const CALL_MEMBER: usize = 3;
/// The steps a held run ([`Op::HeldRun`]) has completed so far, `seq <<
/// 32 | steps` (`seq`: the request's), written by the host after each
/// step: what the master reads when the host died during the run.
pub const RUN_TAKEN: usize = 2;
/// Members added so far (written by the master; each addition is a
/// message with the member region on the socket).
pub const MEMBERS_ADDED: usize = 8;
/// Rounds of lane steps sent: the master adds one once it has written
/// the steps of a round (every step it posted in the lane since the last),
/// and the host then reads every lane slot. No look of the host at a slot
/// while the master writes the round takes the line from the master's
/// processor, and the round's lines travel together.
pub const LANE_GO: usize = 13;
/// Bytes of a region message (see `group::send_region`).
pub const REGION_MESSAGE: usize = 40;
/// The last round of lane steps the host answered (the [`LANE_GO`] count
/// it served), on a line of its own: the master waits on it, not on the
/// answers the host is still writing beside the one it waits for (its
/// every look would take their line from the host's processor).
pub const LANE_DONE: usize = 16;
/// Data words of the group region before its step lane.
pub const GROUP_WORDS: usize = 24;

// ----- the step lane (group region, after the group words) ----------------

/// Words of each half of the step lane: the request half (written by the
/// master) starts at [`GROUP_WORDS`], the answer half (written by the
/// host) right after it. Memory is only used where slots are (the region
/// is a file whose untouched pages take none).
pub const LANE_HALF: usize = 1 << 18;
/// Where a held run ([`Op::HeldRun`]) records the values its plan names
/// ([`HeldRunPlan::recorded`]) after each completed step, a step's after
/// the one before (a data word of the group region, after the lane).
pub const RUN_RECORD: usize = GROUP_WORDS + 2 * LANE_HALF;
/// Words of the run record: a run records at most this many values (the
/// master sizes its requests to fit).
pub const RUN_RECORD_WORDS: usize = 1 << 16;
/// Data words of the group region with its step lane and run record.
pub const GROUP_REGION_WORDS: usize = RUN_RECORD + RUN_RECORD_WORDS;
/// Lane request flag (low word): input values follow `t` and `h`.
pub const LANE_INPUTS: u64 = 1;
/// Where a lane request's low word has how many observed values, from
/// the first, the host reads right after the step ([`lane_reads`]).
pub const LANE_READS_SHIFT: u32 = 8;

/// A lane request's first word: its sequence number, the observed values
/// to read after the step (`reads`, from the first: what the master's
/// next read after the step needs), and whether inputs follow.
pub fn lane_request(seq: u32, reads: usize, inputs: bool) -> u64 {
    let reads = (reads as u64).min(u64::from(u32::MAX >> LANE_READS_SHIFT));
    u64::from(seq) << 32 | reads << LANE_READS_SHIFT | if inputs { LANE_INPUTS } else { 0 }
}

/// How many observed values, from the first, the lane request `word`
/// asks the host to read after the step ([`lane_request`]).
pub fn lane_reads(word: u64) -> usize {
    (word as u32 >> LANE_READS_SHIFT) as usize
}
/// Lane answer code (low word): the step completed and the observed
/// values read after it follow.
pub const LANE_STEPPED: u64 = 1;
/// Lane answer code: the whole answer is in the member's response area
/// (any other outcome, a failure, a frame), answered there as a batch of
/// `SetInputs` and `DoStep` would be.
pub const LANE_FULL: u64 = 2;
/// A member-add message's lane word for a member without a lane slot.
pub const NO_LANE: u64 = u64::MAX;

/// A member's slot in its host's step lane: a macro step in a fixed,
/// compact form, packed beside the other members' slots, so that the
/// steps of a host's FMUs move a few cache lines between the processors
/// instead of two per FMU (a member region's request and response areas
/// are a line each at least), sent by round ([`LANE_GO`]). A step request is `[seq << 32 | flags, t,
/// h, inputs..]` (the inputs when [`LANE_INPUTS`]; the first word made by
/// [`lane_request`]), its answer `[seq << 32 | code, observed..]` (the
/// values asked for, when [`LANE_STEPPED`]). Everything
/// else a member asks goes through its own region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneSlot {
    /// Data word of the group region where the request starts.
    pub request: usize,
    /// Data word of the group region where the answer starts.
    pub answer: usize,
}

impl LaneSlot {
    /// Words of a request with `n_inputs` inputs.
    pub fn request_words(n_inputs: usize) -> usize {
        3 + n_inputs
    }

    /// Words of an answer with `n_observed` values.
    pub fn answer_words(n_observed: usize) -> usize {
        1 + n_observed
    }

    /// As sent in the member-add message.
    pub fn encode(slot: Option<LaneSlot>) -> u64 {
        slot.map_or(NO_LANE, |s| ((s.request as u64) << 32) | s.answer as u64)
    }

    /// The slot a member-add message names, if it lies in the lane.
    pub fn decode(word: u64) -> Option<LaneSlot> {
        if word == NO_LANE {
            return None;
        }
        let slot = LaneSlot {
            request: (word >> 32) as usize,
            answer: word as u32 as usize,
        };
        slot.fits(0, 0).then_some(slot)
    }

    /// Whether a slot for `n_inputs` and `n_observed` lies within its
    /// halves of the lane.
    pub fn fits(&self, n_inputs: usize, n_observed: usize) -> bool {
        let requests = GROUP_WORDS..GROUP_WORDS + LANE_HALF;
        let answers = requests.end..requests.end + LANE_HALF;
        self.request >= requests.start
            && self.request + LaneSlot::request_words(n_inputs) <= requests.end
            && self.answer >= answers.start
            && self.answer + LaneSlot::answer_words(n_observed) <= answers.end
    }
}

/// Hands out the lane slots of a host's members, in the order they are
/// added; a member whose slot would not fit gets none.
#[derive(Debug)]
pub struct LaneAlloc {
    request: usize,
    answer: usize,
}

impl Default for LaneAlloc {
    fn default() -> Self {
        LaneAlloc {
            request: GROUP_WORDS,
            answer: GROUP_WORDS + LANE_HALF,
        }
    }
}

impl LaneAlloc {
    /// The next slot for a member with these slots, if the lane has room.
    pub fn slot(&mut self, n_inputs: usize, n_observed: usize) -> Option<LaneSlot> {
        let slot = LaneSlot {
            request: self.request,
            answer: self.answer,
        };
        if !slot.fits(n_inputs, n_observed) {
            return None;
        }
        self.request += LaneSlot::request_words(n_inputs);
        self.answer += LaneSlot::answer_words(n_observed);
        Some(slot)
    }
}

// ----- member region ------------------------------------------------------

/// Where a member's request and response areas are in its region.
///
/// The request area is `[seq << 32 | n_ops, op, payload.., op, ..]`: the
/// master writes the ops, then the first word (non-zero `n_ops` posts the
/// batch); the host clears it when done. The response area is `[seq,
/// status, aux, aux_f64, n, values..]`: the host writes everything, then
/// `seq` (the answer to the request of that number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// First word of the request area.
    pub request: usize,
    /// Its length in words.
    pub request_words: usize,
    /// First word of the response area (on a cache line of its own).
    pub response: usize,
    /// Its length in words.
    pub response_words: usize,
}

/// Set calls queued before one that needs an answer forces a round trip
/// (values and three derivative orders, with room to spare).
pub const QUEUED_SETS: usize = 4;
/// Words of the largest answered op (header + 5 payload words: a held
/// run).
pub const SYNC_WORDS: usize = 6;
/// Response words before the values: the answered sequence number, the
/// status, `aux`, `aux_f64` and the number of values.
pub const RESPONSE_HEADER: usize = 5;
/// Response word: the status ([`STATUS_OK`], [`STATUS_FRAME`]).
pub const RESP_STATUS: usize = 1;
/// Response word: the op's result (step outcome, state id).
pub const RESP_AUX: usize = 2;
/// Response word: the op's f64 result (last successful time).
pub const RESP_AUX_F64: usize = 3;
/// Response word: how many values follow.
pub const RESP_N: usize = 4;

impl Layout {
    /// The layout for a subsystem with `n_inputs` input slots and
    /// `n_observed` observed slots.
    pub fn new(n_inputs: usize, n_observed: usize) -> Layout {
        Layout::from_words(
            1 + QUEUED_SETS * (1 + n_inputs) + SYNC_WORDS,
            RESPONSE_HEADER + n_observed.max(1),
        )
    }

    /// The layout with the given area lengths (as sent when the member is
    /// added): the request area first, the response area on the next
    /// cache line (the master writes one, the host the other).
    pub fn from_words(request_words: usize, response_words: usize) -> Layout {
        Layout {
            request: 0,
            request_words,
            response: request_words.next_multiple_of(8),
            response_words,
        }
    }

    /// Data words the region needs.
    pub fn data_words(&self) -> usize {
        self.response + self.response_words
    }
}

/// An operation of a request batch. Its header word is
/// `op | arg << 8 | len << 32`, followed by `len` payload words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// Input values (`len` = inputs, f64).
    SetInputs = 1,
    /// Input derivatives of order `arg` (f64).
    SetInputDerivatives = 2,
    /// `[t, h, reads]`; answered with the outcome and the first `reads`
    /// observed values, read right after the step (all of them when
    /// `reads` is left out).
    DoStep = 3,
    /// `[first, end]`, optional; answered with the observed values, those
    /// of `first..end` read (`first` 0 or `end` every value; every one
    /// without them; the others as the host last had them).
    GetObserved = 4,
    /// Order `arg`; answered with the output derivatives.
    GetOutputDerivatives = 5,
    /// `[reuse id or u64::MAX]`; answered with the id.
    SaveState = 6,
    /// `[id]`.
    RestoreState = 7,
    /// `[id]`.
    FreeState = 8,
    /// `[t0, has stop time, stop time]`.
    EnterInitialization = 9,
    /// No payload.
    ExitInitialization = 10,
    /// No payload.
    Terminate = 11,
    /// A [`Control`] frame follows on the socket.
    Control = 12,
    /// Runs the queued set calls only.
    Flush = 13,
    /// Free the instance (not answered); the host exits when every
    /// member is shut down.
    Shutdown = 14,
    /// `[steps, ticks, t, h_ticks, time exponent]`: a run of held macro
    /// steps of the members of the last [`Control::HeldRunPlan`] (see
    /// [`HeldRunPlan`]); answered with the steps taken in `aux`, or with
    /// [`Reply::HeldRunStopped`].
    HeldRun = 15,
}

impl Op {
    /// The op of a header word.
    pub fn decode(header: u64) -> Option<(Op, u8, usize)> {
        let op = match header & 0xff {
            1 => Op::SetInputs,
            2 => Op::SetInputDerivatives,
            3 => Op::DoStep,
            4 => Op::GetObserved,
            5 => Op::GetOutputDerivatives,
            6 => Op::SaveState,
            7 => Op::RestoreState,
            8 => Op::FreeState,
            9 => Op::EnterInitialization,
            10 => Op::ExitInitialization,
            11 => Op::Terminate,
            12 => Op::Control,
            13 => Op::Flush,
            14 => Op::Shutdown,
            15 => Op::HeldRun,
            _ => return None,
        };
        let arg = ((header >> 8) & 0xff) as u8;
        let len = usize::try_from(header >> 32).ok()?;
        Some((op, arg, len))
    }

    /// The header word.
    pub fn header(self, arg: u8, len: usize) -> u64 {
        self as u64 | (u64::from(arg) << 8) | ((len as u64) << 32)
    }
}

/// Response status: done, the answer is in the response area.
pub const STATUS_OK: u64 = 0;
/// Response status: a [`Reply`] frame follows on the socket.
pub const STATUS_FRAME: u64 = 1;

/// `doStep` outcomes in the response `aux` word (low byte).
pub const STEP_COMPLETED: u64 = 0;
/// FMI 3 early return.
pub const STEP_EARLY_RETURN: u64 = 1;
/// Discard.
pub const STEP_DISCARDED: u64 = 2;
/// Discard, and the FMU asks to terminate.
pub const STEP_TERMINATED: u64 = 3;
/// FMI 3 event mode: the step ended with `eventHandlingNeeded` (at
/// `aux_f64`).
pub const STEP_EVENT: u64 = 4;
/// Flag in `aux`: the values are the observed values read after the step.
pub const STEP_PREFETCHED: u64 = 1 << 8;

/// Setup and other requests of no fixed size (a frame on the socket).
// A request is built, sent and dropped once per call outside the stepping
// loop: the size of its largest variant costs nothing that matters.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Control {
    /// Open the FMU and instantiate it with these slots (variable indices of the model description).
    Instantiate {
        /// The FMU (.fmu file or unpacked directory); with `extracted`,
        /// the .fmu file, named in messages.
        fmu: PathBuf,
        /// The directory the master extracted the .fmu into (the
        /// master's: it keeps it while the host runs and removes it),
        /// loaded instead of extracting the archive again.
        extracted: Option<PathBuf>,
        /// The instance name (the subsystem's name).
        name: String,
        /// The variables of the input slots.
        inputs: Vec<cosim_core::SlotVar>,
        /// The variables of the observed slots (outputs first).
        observed: Vec<cosim_core::SlotVar>,
        /// Outputs among the observed variables.
        n_outputs: u64,
        /// `loggingOn`.
        logging_on: bool,
        /// Debug log categories, if any.
        debug_categories: Option<Vec<String>>,
        /// Where to log every FMI call (`--log-fmi-calls`), if anywhere:
        /// the host opens the file for appending, or writes to its
        /// standard error, which the master forwards.
        call_log: Option<cosim_fmi::CallLogTarget>,
        /// The FMU's Model Exchange interface, driven by the host's
        /// integrator with these settings (`None`: Co-Simulation).
        model_exchange: Option<cosim_fmi::SolverSettings>,
        /// FMI 3 Scheduled Execution instead of Co-Simulation.
        scheduled_execution: bool,
        /// FMI 3 Co-Simulation `eventModeUsed`.
        event_mode_used: bool,
        /// FMI 3 Co-Simulation `earlyReturnAllowed`.
        early_return_allowed: bool,
    },
    /// `Subsystem::enter_event_mode`.
    EnterEventMode,
    /// `Subsystem::update_discrete_states` (inputs set before, queued);
    /// answered with [`Reply::Events`].
    UpdateDiscreteStates,
    /// `Subsystem::enter_step_mode`.
    EnterStepMode,
    /// The next activation of a time-based input Clock; answered with
    /// [`Reply::ClockTick`].
    NextClockTick,
    /// The parameters and start values, set by the host during
    /// `EnterInitialization` in the states the standard names for them.
    SetStartValues(Vec<cosim_core::subsystem::StartValue>),
    /// Saved states may be restored back to before the last step's start
    /// (`true`: [`cosim_core::subsystem::RollbackTo::Earlier`]) or to its
    /// start (`false`).
    AllowRollback(bool),
    /// Serialize a saved state.
    SerializeState(u64),
    /// Recreate a state from serialized bytes.
    DeserializeState(Vec<u8>),
    /// The direct feed-through Jacobian at the current point
    /// (`Subsystem::feedthrough_jacobian`).
    FeedthroughJacobian,
    /// The figures of a Model Exchange FMU's solver so far.
    SolverStatistics,
    /// Trace these variables as text: String, Binary, Int64, UInt64
    /// (indices into the model description; `cosim_core::traced_text`).
    TraceStrings(Vec<u64>),
    /// The values traced as text (`Subsystem::get_strings`).
    GetStrings,
    /// Set these inputs by value (`Subsystem::set_values`: indices into
    /// the model description and their values).
    SetValues(Vec<(u64, cosim_fmi::Value)>),
    /// The members and connections of the next held runs ([`Op::HeldRun`]
    /// of this member).
    HeldRunPlan(HeldRunPlan),
}

/// What the host sends on the socket after a `STATUS_FRAME` response.
#[derive(Debug, Serialize, Deserialize)]
pub enum Reply {
    /// Done.
    Ok,
    /// Op `op` of the batch failed (the later ones were not run).
    Failed {
        /// Index of the op in the batch.
        op: u32,
        /// Why.
        error: WireError,
    },
    /// A step ended early or was discarded: the FMU's last log lines.
    Log(Vec<String>),
    /// A serialized state.
    State(Vec<u8>),
    /// The id of a deserialized state.
    StateId(u64),
    /// The direct feed-through Jacobian (row-major), or `None` when the
    /// FMU cannot compute it.
    Jacobian(Option<Vec<f64>>),
    /// The traced String values.
    Strings(Vec<String>),
    /// A Model Exchange FMU's solver figures (`None`: Co-Simulation).
    SolverStatistics(Option<cosim_fmi::ModelExchangeStatistics>),
    /// What an event iteration said, and the Clocks' next activation.
    Events(EventUpdate),
    /// The next activation of a time-based input Clock, s.
    ClockTick(Option<f64>),
    /// A held run stopped at a member whose step was not clean.
    HeldRunStopped(HeldRunStopped),
}

/// The members of a host that a held run ([`Op::HeldRun`]) steps, in the
/// system's order, and the connections between them. Each member's lane
/// slot holds its values during the run: the host reads the inputs of
/// each step from the request part (the master writes the first step's;
/// the host routes the later ones there) and writes the values read after
/// each completed step to the answer part (`[_, observed..]`). Every step
/// is the batch `[SetInputs, DoStep]` of each member in turn (no
/// `SetInputs` without inputs), its checked values read after it (the
/// others are not read: the master reads them when it needs them); a
/// member whose step does not complete, fails, or reads a checked value
/// beyond `limit_abs` (or NaN) stops the run there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldRunPlan {
    /// The members, by their index in the host.
    pub members: Vec<u32>,
    /// Per member: how many of its observed values, from the first, a
    /// step reads and checks (the answer part holds those; connections
    /// come from them).
    pub checked: Vec<u32>,
    /// The bound of a checked value.
    pub limit_abs: f64,
    /// `u[dst][dst_slot] = gain * y[src][src_slot] + offset`, members by
    /// their place in `members`.
    pub routes: Vec<HeldRunRoute>,
    /// The observed values (member by its place in `members`, slot among
    /// its checked ones) recorded after each completed step at
    /// [`RUN_RECORD`]: the values the master's quiet rows show.
    pub recorded: Vec<(u32, u32)>,
    /// Gauss-Seidel: the members' places in `members`, in the order they
    /// step, each one's inputs routed just before its step from what the
    /// members before it read in that step and the others in the step
    /// before (the first step: from its inputs as the master wrote them);
    /// a stop's `outputs` are those of the members before the stopped one
    /// in this order (given in `members` order). Empty: Jacobi, every
    /// member from the step before, routed after the step.
    pub order: Vec<u32>,
}

/// A connection of a [`HeldRunPlan`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct HeldRunRoute {
    pub src: u32,
    pub src_slot: u32,
    pub dst: u32,
    pub dst_slot: u32,
    pub gain: f64,
    pub offset: f64,
}

/// Where and how a held run stopped: after `taken` steps, in the next at
/// member `stopped` (its place in the plan). The members before it took
/// that step (`outputs`: their checked values after it, one after the
/// other); the stopped member's step is answered as its batch `[SetInputs,
/// DoStep]` would be (`aux`, `aux_f64`, the checked values read after a
/// completed step, the answer's frame).
#[derive(Debug, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct HeldRunStopped {
    pub taken: u64,
    pub stopped: u32,
    pub aux: u64,
    pub aux_f64: f64,
    pub values: Vec<f64>,
    pub frame: Option<Box<Reply>>,
    pub outputs: Vec<f64>,
}

/// [`cosim_fmi::DiscreteStatesUpdate`] on the wire, with the next Clock
/// activation after the update (`Subsystem::next_clock_tick`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct EventUpdate {
    pub discrete_states_need_update: bool,
    pub terminate_simulation: bool,
    pub nominals_changed: bool,
    pub values_changed: bool,
    pub next_event_time: Option<f64>,
    pub next_clock_tick: Option<f64>,
}

impl EventUpdate {
    /// The update `u` and the next Clock activation `tick`.
    pub fn new(u: cosim_fmi::DiscreteStatesUpdate, tick: Option<f64>) -> Self {
        EventUpdate {
            discrete_states_need_update: u.discrete_states_need_update,
            terminate_simulation: u.terminate_simulation,
            nominals_changed: u.nominals_changed,
            values_changed: u.values_changed,
            next_event_time: u.next_event_time,
            next_clock_tick: tick,
        }
    }

    /// The update.
    pub fn update(&self) -> cosim_fmi::DiscreteStatesUpdate {
        cosim_fmi::DiscreteStatesUpdate {
            discrete_states_need_update: self.discrete_states_need_update,
            terminate_simulation: self.terminate_simulation,
            nominals_changed: self.nominals_changed,
            values_changed: self.values_changed,
            next_event_time: self.next_event_time,
        }
    }
}

/// A [`cosim_core::CoreError`] (an FMI error, mostly) sent across: every
/// field of the error the FMU subsystem would have returned in-process, so
/// that the master shows the same message.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum WireError {
    Io {
        path: PathBuf,
        message: String,
    },
    Archive {
        archive: PathBuf,
        entry: Option<String>,
        reason: String,
    },
    MissingBinary {
        archive: PathBuf,
        expected: String,
        library: String,
        found: Vec<String>,
    },
    ModelDescription {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    Unsupported {
        fmu: String,
        reason: String,
    },
    LoadLibrary {
        library: PathBuf,
        reason: String,
    },
    MissingFunction {
        library: PathBuf,
        function: String,
    },
    NotSupported {
        instance: String,
        function: String,
        reason: String,
    },
    Status {
        instance: String,
        function: String,
        status: Status,
        time: Option<f64>,
        log: Vec<String>,
    },
    OnlyOncePerProcess {
        fmu: String,
        existing: String,
    },
    InvalidArgument {
        instance: String,
        function: String,
        reason: String,
    },
    Integration {
        instance: String,
        reason: String,
    },
    Lent,
    /// `CoreError::Config` (e.g. an unknown state id).
    Config(String),
    /// Anything else, as its message.
    Other(String),
    /// An FMU refused a parameter or start value.
    StartValue {
        subsystem: String,
        variable: String,
        value: String,
        origin: String,
        error: Box<WireError>,
    },
}

/// A function name as the `&'static str` the FMI errors hold: the known
/// names without allocating, others interned once.
pub fn static_name(name: &str) -> &'static str {
    if let Some(known) = FUNCTION_NAMES.iter().find(|n| **n == name) {
        return known;
    }
    static INTERNED: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let Ok(mut interned) = INTERNED.lock() else {
        return "(an FMI function)";
    };
    if let Some(known) = interned.iter().find(|n| **n == name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    interned.push(leaked);
    leaked
}

const FUNCTION_NAMES: &[&str] = &[
    "fmi2Instantiate",
    "fmi2SetupExperiment",
    "fmi3EnterConfigurationMode",
    "fmi3ExitConfigurationMode",
    "fmi2EnterInitializationMode",
    "fmi2ExitInitializationMode",
    "fmi2Terminate",
    "fmi2FreeInstance",
    "fmi2Reset",
    "fmi2SetReal",
    "fmi2SetInteger",
    "fmi2SetBoolean",
    "fmi2SetString",
    "fmi2GetReal",
    "fmi2GetInteger",
    "fmi2GetBoolean",
    "fmi2GetString",
    "fmi2SetRealInputDerivatives",
    "fmi2GetRealOutputDerivatives",
    "fmi2DoStep",
    "fmi2GetFMUstate",
    "fmi2SetFMUstate",
    "fmi2FreeFMUstate",
    "fmi2SerializedFMUstateSize",
    "fmi2SerializeFMUstate",
    "fmi2DeSerializeFMUstate",
    "fmi2GetRealStatus",
    "fmi2GetBooleanStatus",
    "fmi2SetDebugLogging",
    "fmi3InstantiateCoSimulation",
    "fmi3InstantiateModelExchange",
    "fmi3InstantiateScheduledExecution",
    "fmi3EnterInitializationMode",
    "fmi3ExitInitializationMode",
    "fmi3Terminate",
    "fmi3FreeInstance",
    "fmi3Reset",
    "fmi3SetFloat64",
    "fmi3SetInt32",
    "fmi3SetInt64",
    "fmi3SetBoolean",
    "fmi3SetString",
    "fmi3GetFloat64",
    "fmi3GetOutputDerivatives",
    "fmi3DoStep",
    "fmi3GetFMUState",
    "fmi3SetFMUState",
    "fmi3FreeFMUState",
    "fmi3SerializedFMUStateSize",
    "fmi3SerializeFMUState",
    "fmi3DeserializeFMUState",
    "fmi3SetDebugLogging",
    "SetRealInputDerivatives",
];

impl WireError {
    /// The error to send for `e`.
    pub fn from_core(e: cosim_core::CoreError) -> WireError {
        match e {
            cosim_core::CoreError::Fmi(e) => WireError::from_fmi(e),
            cosim_core::CoreError::Config(m) => WireError::Config(m),
            cosim_core::CoreError::StartValue {
                subsystem,
                variable,
                value,
                origin,
                error,
            } => WireError::StartValue {
                subsystem,
                variable,
                value,
                origin,
                error: Box::new(WireError::from_fmi(*error)),
            },
            other => WireError::Other(other.to_string()),
        }
    }

    /// The error to send for `e`.
    pub fn from_fmi(e: FmiError) -> WireError {
        match e {
            FmiError::Io { path, error } => WireError::Io {
                path,
                message: error.to_string(),
            },
            FmiError::Archive {
                archive,
                entry,
                reason,
            } => WireError::Archive {
                archive,
                entry,
                reason,
            },
            FmiError::MissingBinary {
                archive,
                expected,
                library,
                found,
            } => WireError::MissingBinary {
                archive,
                expected,
                library,
                found,
            },
            FmiError::ModelDescription {
                file,
                line,
                column,
                message,
            } => WireError::ModelDescription {
                file,
                line,
                column,
                message,
            },
            FmiError::Unsupported { fmu, reason } => WireError::Unsupported { fmu, reason },
            FmiError::LoadLibrary { library, reason } => WireError::LoadLibrary { library, reason },
            FmiError::MissingFunction { library, function } => {
                WireError::MissingFunction { library, function }
            }
            FmiError::NotSupported {
                instance,
                function,
                reason,
            } => WireError::NotSupported {
                instance,
                function: function.to_string(),
                reason,
            },
            FmiError::Status {
                instance,
                function,
                status,
                time,
                log,
            } => WireError::Status {
                instance,
                function: function.to_string(),
                status,
                time,
                log,
            },
            FmiError::OnlyOncePerProcess { fmu, existing } => {
                WireError::OnlyOncePerProcess { fmu, existing }
            }
            FmiError::InvalidArgument {
                instance,
                function,
                reason,
            } => WireError::InvalidArgument {
                instance,
                function: function.to_string(),
                reason,
            },
            FmiError::Integration { instance, reason } => {
                WireError::Integration { instance, reason }
            }
            FmiError::Lent => WireError::Lent,
        }
    }

    /// The error as the master reports it.
    pub fn into_core(self) -> cosim_core::CoreError {
        use cosim_core::CoreError;
        let fmi = match self {
            WireError::Config(m) => return CoreError::Config(m),
            WireError::Other(m) => return CoreError::Config(m),
            WireError::StartValue {
                subsystem,
                variable,
                value,
                origin,
                error,
            } => {
                let error = match error.into_core() {
                    CoreError::Fmi(e) => e,
                    other => FmiError::Unsupported {
                        fmu: subsystem.clone(),
                        reason: other.to_string(),
                    },
                };
                return CoreError::StartValue {
                    subsystem,
                    variable,
                    value,
                    origin,
                    error: Box::new(error),
                };
            }
            WireError::Io { path, message } => FmiError::Io {
                path,
                error: std::io::Error::other(message),
            },
            WireError::Archive {
                archive,
                entry,
                reason,
            } => FmiError::Archive {
                archive,
                entry,
                reason,
            },
            WireError::MissingBinary {
                archive,
                expected,
                library,
                found,
            } => FmiError::MissingBinary {
                archive,
                expected,
                library,
                found,
            },
            WireError::ModelDescription {
                file,
                line,
                column,
                message,
            } => FmiError::ModelDescription {
                file,
                line,
                column,
                message,
            },
            WireError::Unsupported { fmu, reason } => FmiError::Unsupported { fmu, reason },
            WireError::LoadLibrary { library, reason } => FmiError::LoadLibrary { library, reason },
            WireError::MissingFunction { library, function } => {
                FmiError::MissingFunction { library, function }
            }
            WireError::NotSupported {
                instance,
                function,
                reason,
            } => FmiError::NotSupported {
                instance,
                function: static_name(&function),
                reason,
            },
            WireError::Status {
                instance,
                function,
                status,
                time,
                log,
            } => FmiError::Status {
                instance,
                function: static_name(&function),
                status,
                time,
                log,
            },
            WireError::OnlyOncePerProcess { fmu, existing } => {
                FmiError::OnlyOncePerProcess { fmu, existing }
            }
            WireError::InvalidArgument {
                instance,
                function,
                reason,
            } => FmiError::InvalidArgument {
                instance,
                function: static_name(&function),
                reason,
            },
            WireError::Integration { instance, reason } => {
                FmiError::Integration { instance, reason }
            }
            WireError::Lent => FmiError::Lent,
        };
        CoreError::Fmi(fmi)
    }
}

/// The FMI call a host is making, written to [`CALL`] before each one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
#[allow(missing_docs)]
pub enum Call {
    Idle = 0,
    Load = 1,
    Instantiate = 2,
    SetReal = 3,
    SetInteger = 4,
    SetInteger64 = 5,
    SetBoolean = 6,
    SetString = 7,
    SetInputDerivatives = 8,
    DoStep = 9,
    GetReal = 10,
    GetOutputDerivatives = 11,
    GetState = 12,
    SetState = 13,
    FreeState = 14,
    SerializeState = 15,
    DeserializeState = 16,
    EnterInitialization = 17,
    ExitInitialization = 18,
    Terminate = 19,
    FreeInstance = 20,
    SetFloat32 = 21,
    SetNarrowInteger = 22,
    GetString = 23,
    /// Loading the FMU's shared library (its initialisers run), before
    /// any FMI call.
    LoadLibrary = 24,
    /// Setting inputs by value (`Control::SetValues`).
    SetValues = 25,
    /// Event Mode: `fmi3EnterEventMode`, `fmi3UpdateDiscreteStates`,
    /// `fmi3EnterStepMode`, or Scheduled Execution's activations.
    EventMode = 26,
}

impl Call {
    /// The call of a [`CALL`] word.
    pub fn decode(code: u64) -> Call {
        const ALL: [Call; 27] = [
            Call::Idle,
            Call::Load,
            Call::Instantiate,
            Call::SetReal,
            Call::SetInteger,
            Call::SetInteger64,
            Call::SetBoolean,
            Call::SetString,
            Call::SetInputDerivatives,
            Call::DoStep,
            Call::GetReal,
            Call::GetOutputDerivatives,
            Call::GetState,
            Call::SetState,
            Call::FreeState,
            Call::SerializeState,
            Call::DeserializeState,
            Call::EnterInitialization,
            Call::ExitInitialization,
            Call::Terminate,
            Call::FreeInstance,
            Call::SetFloat32,
            Call::SetNarrowInteger,
            Call::GetString,
            Call::LoadLibrary,
            Call::SetValues,
            Call::EventMode,
        ];
        usize::try_from(code)
            .ok()
            .and_then(|i| ALL.get(i).copied())
            .unwrap_or(Call::Idle)
    }

    /// The FMI function (or what the host was doing), for messages: of an
    /// FMU of `version` instantiated for `interface`.
    pub fn name(self, version: FmiVersion, interface: Interface) -> &'static str {
        let v2 = version == FmiVersion::V2;
        let pick = |a: &'static str, b: &'static str| if v2 { a } else { b };
        match self {
            Call::Idle => "(between FMI calls)",
            Call::Load => "loading the FMU",
            Call::Instantiate => match interface {
                _ if v2 => "fmi2Instantiate",
                Interface::CoSimulation => "fmi3InstantiateCoSimulation",
                Interface::ModelExchange => "fmi3InstantiateModelExchange",
                Interface::ScheduledExecution => "fmi3InstantiateScheduledExecution",
            },
            Call::SetReal => pick("fmi2SetReal", "fmi3SetFloat64"),
            Call::SetInteger => pick("fmi2SetInteger", "fmi3SetInt32"),
            Call::SetInteger64 => pick("fmi2SetInteger", "fmi3SetInt64"),
            Call::SetBoolean => pick("fmi2SetBoolean", "fmi3SetBoolean"),
            Call::SetString => pick("fmi2SetString", "fmi3SetString"),
            Call::SetInputDerivatives => {
                pick("fmi2SetRealInputDerivatives", "SetRealInputDerivatives")
            }
            Call::DoStep => interface.step_functions(version),
            Call::GetReal => pick("fmi2GetReal", "fmi3GetFloat64"),
            Call::GetOutputDerivatives => {
                pick("fmi2GetRealOutputDerivatives", "fmi3GetOutputDerivatives")
            }
            Call::GetState => pick("fmi2GetFMUstate", "fmi3GetFMUState"),
            Call::SetState => pick("fmi2SetFMUstate", "fmi3SetFMUState"),
            Call::FreeState => pick("fmi2FreeFMUstate", "fmi3FreeFMUState"),
            Call::SerializeState => pick("fmi2SerializeFMUstate", "fmi3SerializeFMUState"),
            Call::DeserializeState => pick("fmi2DeSerializeFMUstate", "fmi3DeserializeFMUState"),
            Call::EnterInitialization => {
                pick("fmi2EnterInitializationMode", "fmi3EnterInitializationMode")
            }
            Call::ExitInitialization => {
                pick("fmi2ExitInitializationMode", "fmi3ExitInitializationMode")
            }
            Call::Terminate => pick("fmi2Terminate", "fmi3Terminate"),
            Call::FreeInstance => pick("fmi2FreeInstance", "fmi3FreeInstance"),
            Call::SetFloat32 => "fmi3SetFloat32",
            Call::SetNarrowInteger => "fmi3SetInt8/UInt8/Int16/UInt16/UInt32/UInt64",
            Call::GetString => pick("fmi2GetString", "fmi3GetString/Binary/Int64/UInt64"),
            Call::LoadLibrary => "loading the shared library",
            Call::SetValues => "fmi3SetInt64/UInt64/Binary/String (inputs set by value)",
            Call::EventMode => {
                "fmi3EnterEventMode / fmi3UpdateDiscreteStates / fmi3EnterStepMode / fmi3ActivateModelPartition"
            }
        }
    }
}

/// Largest frame accepted (a serialized state of a large model fits).
const MAX_FRAME: usize = 1 << 30;

/// Writes `value` as a length-prefixed postcard frame.
pub fn write_frame<T: Serialize>(w: &mut impl Write, value: &T) -> std::io::Result<()> {
    let bytes = postcard::to_stdvec(value).map_err(std::io::Error::other)?;
    let len = u32::try_from(bytes.len())
        .ok()
        .filter(|&n| n as usize <= MAX_FRAME)
        .ok_or_else(|| std::io::Error::other("frame too large"))?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(&bytes)?;
    w.flush()
}

/// Reads a frame written by [`write_frame`].
pub fn read_frame<T: for<'de> Deserialize<'de>>(r: &mut impl Read) -> std::io::Result<T> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame of {len} bytes refused"),
        ));
    }
    let mut bytes = vec![0u8; len];
    r.read_exact(&mut bytes)?;
    postcard::from_bytes(&bytes)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lane request's first word keeps its sequence number, the values
    /// to read after the step and the inputs flag apart; a count beyond
    /// its bits reads as the most it holds, not as another count.
    #[test]
    fn a_lane_request_carries_its_reads_apart_from_its_sequence_and_flags() {
        for (seq, reads, inputs) in [(1, 0, false), (7, 1, true), (u32::MAX, 200_000, true)] {
            let word = lane_request(seq, reads, inputs);
            assert_eq!((word >> 32) as u32, seq);
            assert_eq!(lane_reads(word), reads);
            assert_eq!(word & LANE_INPUTS != 0, inputs);
        }
        let most = (u32::MAX >> LANE_READS_SHIFT) as usize;
        let word = lane_request(3, usize::MAX, false);
        assert_eq!(
            (lane_reads(word), word >> 32, word & LANE_INPUTS),
            (most, 3, 0)
        );
        // Every slot of the lane fits the count.
        assert!(LaneSlot::answer_words(0) + most > LANE_HALF);
    }

    /// A host that dies in the instantiation names the function of the
    /// interface its FMU is instantiated for (it said
    /// `fmi3InstantiateCoSimulation` for every FMI 3 FMU).
    #[test]
    fn the_instantiate_call_is_named_for_the_interface() {
        use FmiVersion::{V2, V3};
        use Interface::{CoSimulation, ModelExchange, ScheduledExecution};
        let name = |v, i| Call::Instantiate.name(v, i);
        assert_eq!(name(V2, CoSimulation), "fmi2Instantiate");
        assert_eq!(name(V2, ModelExchange), "fmi2Instantiate");
        assert_eq!(name(V3, CoSimulation), "fmi3InstantiateCoSimulation");
        assert_eq!(name(V3, ModelExchange), "fmi3InstantiateModelExchange");
        assert_eq!(
            name(V3, ScheduledExecution),
            "fmi3InstantiateScheduledExecution"
        );
    }

    /// Slots are packed one after the other in their halves; one that
    /// would cross a half's end is not given, nor is a slot read from a
    /// message that lies outside the lane.
    #[test]
    fn lane_slots_are_packed_and_bounded() {
        let mut lane = LaneAlloc::default();
        let a = lane.slot(1, 1).unwrap();
        let b = lane.slot(2, 3).unwrap();
        assert_eq!(
            (a.request, a.answer),
            (GROUP_WORDS, GROUP_WORDS + LANE_HALF)
        );
        assert_eq!((b.request, b.answer), (a.request + 4, a.answer + 2));
        assert_eq!(LaneSlot::decode(LaneSlot::encode(Some(b))), Some(b));
        assert_eq!(LaneSlot::decode(LaneSlot::encode(None)), None);
        // Too large for what is left of the request half.
        assert_eq!(lane.slot(LANE_HALF, 1), None);
        // Still room for small ones after a refusal.
        let c = lane.slot(1, 1).unwrap();
        assert!(c.fits(1, 1) && !c.fits(LANE_HALF, 1));
        assert_eq!(c.request, b.request + 5);
        for outside in [
            0,
            (GROUP_REGION_WORDS as u64) << 32 | (GROUP_WORDS + LANE_HALF) as u64,
        ] {
            assert_eq!(LaneSlot::decode(outside), None, "{outside:#x}");
        }
    }

    #[test]
    fn headers_round_trip() {
        for op in [Op::SetInputs, Op::DoStep, Op::Shutdown] {
            let h = op.header(3, 1234);
            assert_eq!(Op::decode(h), Some((op, 3, 1234)));
        }
        assert_eq!(Op::decode(99), None);
    }

    #[test]
    fn errors_keep_their_message_across() {
        let e = FmiError::Status {
            instance: "faulty".into(),
            function: "fmi2DoStep",
            status: Status::Error,
            time: Some(0.3),
            log: vec!["[Error] logStatusError: boom".into()],
        };
        let msg = e.to_string();
        let mut buf = Vec::new();
        write_frame(&mut buf, &WireError::from_fmi(e)).unwrap();
        let back: WireError = read_frame(&mut buf.as_slice()).unwrap();
        assert_eq!(back.into_core().to_string(), msg);
        assert_eq!(static_name("fmi2DoStep"), "fmi2DoStep");
        assert_eq!(static_name("somethingElse"), "somethingElse");
    }

    #[test]
    fn layout_fits_queued_sets() {
        let l = Layout::new(3, 5);
        assert!(l.request_words >= 1 + QUEUED_SETS * 4 + SYNC_WORDS);
        assert!(l.response >= l.request + l.request_words);
        assert_eq!(l.response % 8, 0, "the response starts a cache line");
        assert_eq!(l.data_words(), l.response + RESPONSE_HEADER + 5);
    }
}
