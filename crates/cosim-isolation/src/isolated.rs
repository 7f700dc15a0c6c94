//! The master's side: [`IsolatedSubsystem`], a [`Subsystem`] whose FMU
//! lives in a host process.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use cosim_core::subsystem::{
    CallCounters, RollbackTo, StartValue, StateId, Subsystem, SubsystemInfo,
};
use cosim_core::{CoreError, Result};
use cosim_fmi::{FmiVersion, Fmu, InstantiateOptions, Interface, StepOutcome};

use crate::channel;

mod held_run;
use crate::group::{HostEnd, HostGroup, HostPool, MemberInfo, MemberLink};
use crate::protocol::{
    ANSWER_BELL, Call, Control, DOORBELL, HOST_SLEEPING, HOST_SPIN_NS, HOST_YIELD_EVERY, LANE_DONE,
    LANE_FULL, LANE_GO, LANE_STEPPED, LaneSlot, Layout, MASTER_CPU, MASTER_SLEEPERS, Op,
    QUEUED_SETS, RESP_AUX, RESP_AUX_F64, RESP_N, RESP_STATUS, RESPONSE_HEADER, Reply, STATUS_FRAME,
    STEP_COMPLETED, STEP_DISCARDED, STEP_EARLY_RETURN, STEP_EVENT, STEP_PREFETCHED,
    STEP_TERMINATED, lane_request,
};

/// Default of `isolation_timeout`: how long one call may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How an isolated subsystem is run.
#[derive(Debug, Clone)]
pub struct IsolationSettings {
    /// Longest time one request (one trait call) may take; the host is
    /// then killed and the call reported.
    pub timeout: Duration,
    /// The host processes this subsystem may share (those of its run);
    /// `None`: a host of its own.
    pub pool: Option<Arc<HostPool>>,
}

impl Default for IsolationSettings {
    fn default() -> Self {
        IsolationSettings {
            timeout: DEFAULT_TIMEOUT,
            pool: None,
        }
    }
}

/// Steps sent to a host in one round of its lane, at most: the host
/// starts on a round while the master writes the next (chains of CGain in
/// one host, `bench/results/issue42-isolation-lane.md`: one round per
/// macro step took 0.29 - 0.36 s for 100 FMUs and 20 000 steps, rounds of
/// 16 0.26 - 0.27 s; rounds of 6 against 16, 3 - 7 % less per FMU-step at
/// 10 FMUs and the same at 100).
const LANE_ROUND: usize = 6;

/// Hosts with fewer members step them as batches in their regions: a
/// round costs two more lines between the processors (the round sent, the
/// round answered), which packing pays for only with several members.
const LANE_MIN_MEMBERS: usize = 4;

/// How far ahead of its own answer (in words) a member asks for the lane
/// answers' lines: four lines, the next 8 - 16 members' answers.
const LANE_READ_AHEAD: usize = 32;

/// Whether steps go through the hosts' step lanes (`COSIM_ISOLATION_LANE`,
/// default on; `0` sends every step as a batch in the member's own
/// region, as before the lanes: for comparing the two).
fn lanes_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("COSIM_ISOLATION_LANE").map_or(true, |v| v.trim() != "0"))
}

/// Where the observed values read right after the last step are, while
/// nothing was sent since: the first so many of them (those the step
/// asked the host to read, `IsolatedSubsystem::step_reads`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prefetched {
    No,
    /// In the response area.
    Response(usize),
    /// In the member's lane slot.
    Lane(usize),
    /// In `held_values` (a held run stopped at its step).
    Held,
    /// Not yet: the values from `first` on asked for
    /// (`Subsystem::request_observed_from`), the answer to come to the
    /// response area as `seq`'s. Taken before anything else is sent (a
    /// member's region holds one request at a time).
    Requested {
        seq: u32,
        first: usize,
    },
}

/// A step posted by `start_step`, until `finish_step` takes its answer.
#[derive(Debug, Clone, Copy)]
struct PendingStep {
    seq: u32,
    /// Set calls before the step in its batch (for which op failed).
    queued: usize,
    h: f64,
    /// Posted in this lane slot (and sent with this round of the host's
    /// lane, or a later one), not in the member's region.
    lane: Option<(LaneSlot, u64)>,
    /// The observed values, from the first, the host reads after it.
    reads: usize,
    /// Taken by a held run that stopped at it: its answer is
    /// `held_answer`.
    held: bool,
}

/// The word an answer is awaited on.
#[derive(Debug, Clone, Copy)]
enum AnswerAt {
    /// The response area's first word (the sequence number).
    Response,
    /// A lane slot's answer word (the sequence number, shifted).
    Lane(usize),
    /// The host's last lane round answered ([`LANE_DONE`]): this round.
    Round(u64),
}

/// How a wait for an answer waits.
#[derive(Debug, Clone, Copy)]
struct Wait {
    /// Spinning this long before it sleeps.
    spin: Duration,
    /// Giving up this long after the run is interrupted (a call cut off
    /// then kills its host).
    grace: Duration,
}

impl Default for Wait {
    /// A call's: the usual spin, given up at the interrupt.
    fn default() -> Self {
        Wait {
            spin: channel::spin_budget(),
            grace: Duration::ZERO,
        }
    }
}

/// What a request returned besides the response area.
struct Answer {
    aux: u64,
    aux_f64: f64,
    frame: Option<Reply>,
}

/// A subsystem whose FMU is loaded and called by a host process (`cosim
/// host`), driven over shared memory. Same slots and information as the
/// [`cosim_core::FmuSubsystem`] it replaces; an FMU that crashes, aborts,
/// exits or hangs ends the host, not the master, and the call is reported
/// as a [`CoreError::HostProcess`] naming that FMU's subsystem (every
/// subsystem of that host then reports the same).
pub struct IsolatedSubsystem {
    info: SubsystemInfo,
    /// Names of the traced String variables.
    string_names: Vec<String>,
    version: FmiVersion,
    /// What the host instantiated it for (the functions named in
    /// messages).
    interface: Interface,
    link: Option<MemberLink>,
    /// Why the host is gone, once it is.
    gone: Option<String>,
    /// A SIGINT / SIGTERM came while the FMU was being loaded (or before):
    /// the host was killed (or never started), and the run is to end as
    /// interrupted before its first step.
    loading_interrupted: bool,
    layout: Layout,
    timeout: Duration,
    counters: CallCounters,
    /// Words and ops of the batch being queued.
    batch_words: usize,
    batch_ops: u64,
    queued: usize,
    /// Where the observed values read after the last step are.
    prefetched: Prefetched,
    /// How many observed values, from the first, the host reads right
    /// after a step: those the system's read after it needs
    /// ([`Subsystem::reads_after_step`]; every one until it says), as an
    /// FMU in process reads only those.
    step_reads: usize,
    pending_step: Option<PendingStep>,
    /// The plan of held runs last sent to the host, when this member
    /// leads them (`held_run`).
    held_plan: Option<crate::protocol::HeldRunPlan>,
    /// The answer of the step a held run stopped at, and the observed
    /// values read after it.
    held_answer: Option<held_run::HeldAnswer>,
    held_values: Vec<f64>,
    /// Room for the values of a request that reads the observed values
    /// from a slot on (`read_observed`).
    scratch: Vec<f64>,
    /// Input values set for the next step, kept for its lane slot while
    /// nothing else is queued (`lane_inputs_set`).
    lane_inputs: Vec<f64>,
    lane_inputs_set: bool,
    /// The op of the last batch that failed (an FMU error), if any.
    failed_op: Option<usize>,
    recent_log: Vec<String>,
    /// FMI 3 event mode, as the host's instance has it (Scheduled
    /// Execution: its Clocks' ticks are events).
    events: cosim_fmi::EventHandling,
    /// The next activation of a time-based input Clock, as the host last
    /// said (after initialization and after each event iteration).
    clock_tick: Option<f64>,
}

impl std::fmt::Debug for IsolatedSubsystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IsolatedSubsystem")
            .field("name", &self.info.name)
            .field("pid", &self.host_pid())
            .finish()
    }
}

pub(crate) fn config(name: &str, what: impl std::fmt::Display) -> CoreError {
    CoreError::Config(format!("subsystem '{name}': process isolation: {what}"))
}

impl IsolatedSubsystem {
    /// Loads `fmu` into a host process (one of `settings.pool`'s, else one
    /// of its own) and instantiates it there as subsystem `name`, with the
    /// given slots (as [`cosim_core::FmuSubsystem::instantiate`]).
    pub fn spawn(
        fmu: &Fmu,
        name: &str,
        inputs: &[cosim_core::SlotVar],
        observed: &[cosim_core::SlotVar],
        n_outputs: usize,
        options: &InstantiateOptions,
        settings: &IsolationSettings,
    ) -> Result<IsolatedSubsystem> {
        let md = fmu.model_description();
        let scheduled = fmu.runs_scheduled_execution();
        let cs = if scheduled {
            None
        } else {
            Some(fmu.co_simulation()?)
        };
        let events = if scheduled {
            cosim_fmi::EventHandling {
                event_mode_used: true,
                early_return_allowed: false,
            }
        } else {
            options.events
        };
        let info = SubsystemInfo::from_model_description(
            md,
            name,
            inputs,
            observed,
            n_outputs,
            fmu.source().display().to_string(),
        );
        let layout = Layout::new(info.inputs.len(), info.observed.len());
        let interface = if scheduled {
            Interface::ScheduledExecution
        } else if fmu.runs_model_exchange().is_some() {
            Interface::ModelExchange
        } else {
            Interface::CoSimulation
        };
        let mut sub = IsolatedSubsystem {
            info,
            string_names: Vec::new(),
            version: md.fmi_version,
            interface,
            link: None,
            gone: None,
            loading_interrupted: false,
            layout,
            timeout: settings.timeout,
            counters: CallCounters::default(),
            batch_words: 0,
            batch_ops: 0,
            queued: 0,
            prefetched: Prefetched::No,
            step_reads: usize::MAX,
            pending_step: None,
            held_plan: None,
            held_answer: None,
            held_values: Vec::new(),
            scratch: Vec::new(),
            lane_inputs: Vec::new(),
            lane_inputs_set: false,
            failed_op: None,
            recent_log: Vec::new(),
            events,
            clock_tick: None,
        };
        if interrupt_requested() {
            // Interrupted while loading: start no more hosts. The run ends
            // as interrupted when it initializes this subsystem.
            tracing::debug!("subsystem '{name}': interrupted before its host process was started");
            sub.gone = Some("the run was interrupted before its host process was started".into());
            sub.loading_interrupted = true;
            return Ok(sub);
        }
        let only_once = cs
            .is_some_and(|cs| cs.can_be_instantiated_only_once_per_process)
            .then(|| md.instantiation_token.clone());
        let group = match &settings.pool {
            Some(pool) => pool.group_for(name, fmu, only_once.as_deref())?,
            None => HostGroup::spawn(name, fmu)?,
        };
        let call_log = options.call_log.as_ref().map(|s| s.target().clone());
        if call_log == Some(cosim_fmi::CallLogTarget::Stderr) {
            // The FMI call log on standard error: its last lines (the
            // instance being freed) must not be lost.
            group.drain_ms.store(5000, Ordering::Relaxed);
            group.tail.skip_call_log_of(name);
        }
        let member = MemberInfo {
            name: name.to_string(),
            version: md.fmi_version,
            interface,
            fmu: fmu.clone(),
            only_once,
        };
        let slots = (sub.info.inputs.len(), sub.info.observed.len());
        match group.add_member(member, &layout, slots) {
            Ok((index, region, lane)) => {
                sub.link = Some(MemberLink {
                    group,
                    index,
                    region,
                    lane,
                    seq: 0,
                });
            }
            Err(e) => {
                let caller = (name, md.fmi_version, interface);
                let f = group.fail(HostEnd::Io(e), Call::Load, caller, None);
                return Err(f.into_error());
            }
        }
        let instantiated = sub.control(
            Control::Instantiate {
                fmu: fmu.source().to_path_buf(),
                // One extraction for the master and all its hosts: the
                // host loads this process's directory, which outlives it.
                extracted: fmu.is_extracted().then(|| fmu.root().to_path_buf()),
                name: name.to_string(),
                inputs: inputs.to_vec(),
                observed: observed.to_vec(),
                n_outputs: n_outputs as u64,
                logging_on: options.logging_on,
                debug_categories: options.debug_categories.clone(),
                call_log,
                model_exchange: fmu.runs_model_exchange(),
                scheduled_execution: scheduled,
                event_mode_used: options.events.event_mode_used,
                early_return_allowed: options.events.early_return_allowed,
            },
            Call::Instantiate,
        );
        match instantiated {
            // The host was killed; the run ends as interrupted when it
            // initializes this subsystem (an error here would make the
            // signal look like bad input).
            Err(CoreError::Interrupted { .. }) if sub.loading_interrupted => Ok(sub),
            Err(e) => Err(e),
            Ok(_) => Ok(sub),
        }
    }

    /// The host's process id (while it runs).
    pub fn host_pid(&self) -> Option<u32> {
        self.link.as_ref().map(|l| l.group.pid)
    }

    /// The parameters and start values the host sets during
    /// initialization, each in the state the standard names for it (as
    /// [`cosim_core::FmuSubsystem::set_start_values`], which the host
    /// calls: a variable that can be set in no state is refused now).
    pub fn set_start_values(&mut self, values: Vec<StartValue>) -> Result<()> {
        if self.loading_interrupted {
            return Ok(()); // nothing will be initialized
        }
        match self.control(Control::SetStartValues(values), Call::Idle) {
            // Still loading: the run ends as interrupted when it
            // initializes this subsystem, as after an interrupted load.
            Err(CoreError::Interrupted { .. }) => {
                self.loading_interrupted = true;
                Ok(())
            }
            other => other.map(|_| ()),
        }
    }

    /// Serializes a saved state (`fmi2SerializeFMUstate`) into bytes that
    /// [`IsolatedSubsystem::deserialize_state`] turns back into a state, in
    /// this host or another one of the same FMU.
    pub fn serialize_state(&mut self, id: StateId) -> Result<Vec<u8>> {
        match self.control(Control::SerializeState(id.0 as u64), Call::SerializeState)? {
            Some(Reply::State(bytes)) => Ok(bytes),
            _ => Err(config(
                &self.info.name,
                "unexpected answer to SerializeState",
            )),
        }
    }

    /// The direct feed-through Jacobian, computed by the host's FMU.
    fn host_jacobian(&mut self, jacobian: &mut [f64]) -> Result<bool> {
        match self.control(Control::FeedthroughJacobian, Call::Idle)? {
            Some(Reply::Jacobian(Some(j))) if j.len() == jacobian.len() => {
                jacobian.copy_from_slice(&j);
                Ok(true)
            }
            Some(Reply::Jacobian(_)) => Ok(false),
            _ => Err(config(
                &self.info.name,
                "unexpected answer to FeedthroughJacobian",
            )),
        }
    }

    /// Traces variables `vars` as text (String, Binary, Int64, UInt64:
    /// `cosim_core::traced_text`), read only for trace rows, through the
    /// host ([`Subsystem::get_strings`]).
    pub fn trace_strings(
        &mut self,
        md: &cosim_fmi::ModelDescription,
        vars: &[usize],
    ) -> Result<()> {
        self.string_names = vars.iter().map(|&v| md.variables[v].name.clone()).collect();
        if self.loading_interrupted {
            return Ok(());
        }
        let vars = vars.iter().map(|&v| v as u64).collect();
        self.control(Control::TraceStrings(vars), Call::Idle)
            .map(|_| ())
    }

    /// Recreates a state from serialized bytes; returns its id.
    pub fn deserialize_state(&mut self, bytes: &[u8]) -> Result<StateId> {
        match self.control(
            Control::DeserializeState(bytes.to_vec()),
            Call::DeserializeState,
        )? {
            Some(Reply::StateId(id)) => Ok(StateId(usize::try_from(id).unwrap_or(usize::MAX))),
            _ => Err(config(
                &self.info.name,
                "unexpected answer to DeserializeState",
            )),
        }
    }

    /// Sends a control request (as a batch of its own) and returns its
    /// answer frame.
    fn control(&mut self, request: Control, call: Call) -> Result<Option<Reply>> {
        let answer = self.sync(Op::Control, 0, &[], Some(&request), call)?;
        Ok(answer.frame)
    }

    /// Forgets the values read ahead: something else is sent. A read
    /// asked for and not taken is taken first; nothing asked for its
    /// values, so a failure of it is only said (the next request finds a
    /// host that is gone).
    fn forget_prefetched(&mut self) {
        if let Prefetched::Requested { seq, .. } =
            std::mem::replace(&mut self.prefetched, Prefetched::No)
            && let Err(e) = self.answer(seq, Call::GetReal)
        {
            tracing::warn!(
                "subsystem '{}': a read of its values asked for ahead and not used failed: {e}",
                self.info.name
            );
        }
    }

    fn gone_error(&self) -> CoreError {
        if self.loading_interrupted {
            return CoreError::Interrupted { t: f64::NAN };
        }
        config(
            &self.info.name,
            format_args!(
                "the host process is gone ({})",
                self.gone.as_deref().unwrap_or("stopped")
            ),
        )
    }

    /// Queues a set call (no round trip); flushes first when the queue is
    /// full.
    fn queue(&mut self, op: Op, arg: u8, values: &[f64]) -> Result<()> {
        self.spill_lane_inputs()?;
        self.forget_prefetched();
        if self.link.is_none() {
            return Err(self.gone_error());
        }
        if self.queued == QUEUED_SETS {
            self.sync(Op::Flush, 0, &[], None, Call::SetReal)?;
        }
        let Some(link) = &self.link else {
            return Err(self.gone_error());
        };
        let data = link.data();
        let at = self.layout.request + 1 + self.batch_words;
        data[at].store(op.header(arg, values.len()), Ordering::Relaxed);
        for (w, v) in data[at + 1..at + 1 + values.len()].iter().zip(values) {
            w.store(v.to_bits(), Ordering::Relaxed);
        }
        self.batch_words += 1 + values.len();
        self.batch_ops += 1;
        self.queued += 1;
        Ok(())
    }

    /// Sends the queued calls and `op`, waits for the answer.
    fn sync(
        &mut self,
        op: Op,
        arg: u8,
        payload: &[u64],
        control: Option<&Control>,
        call: Call,
    ) -> Result<Answer> {
        let seq = self.post(op, arg, payload, control, call)?;
        self.answer(seq, call)
    }

    /// Sends the queued calls and `op` (the host starts at once); returns
    /// the sequence number [`IsolatedSubsystem::answer`] waits for.
    fn post(
        &mut self,
        op: Op,
        arg: u8,
        payload: &[u64],
        control: Option<&Control>,
        call: Call,
    ) -> Result<u32> {
        self.spill_lane_inputs()?;
        self.forget_prefetched();
        self.failed_op = None;
        let (words, ops) = (self.batch_words, self.batch_ops + 1);
        self.batch_words = 0;
        self.batch_ops = 0;
        self.queued = 0;
        let Some(link) = &mut self.link else {
            return Err(self.gone_error());
        };
        let request = self.layout.request;
        let data = link.region.data();
        let at = request + 1 + words;
        data[at].store(op.header(arg, payload.len()), Ordering::Relaxed);
        for (w, &v) in data[at + 1..at + 1 + payload.len()].iter().zip(payload) {
            w.store(v, Ordering::Relaxed);
        }
        let seq = link.seq.wrapping_add(1).max(1);
        link.seq = seq;
        let group = &link.group;
        post(group, |_| {
            data[request].store(u64::from(seq) << 32 | ops, Ordering::Release);
        });
        let control_words = group.region.control();
        if control.is_some() {
            // The host must be awake to read the frame.
            channel::ring(&control_words[DOORBELL], &control_words[HOST_SLEEPING]);
        }
        if let Some(request) = control
            && let Err(e) = group.send_control(link.index, request, self.timeout)
        {
            return Err(self.host_failed(HostEnd::Io(e), call));
        }
        Ok(seq)
    }

    /// Waits for the answer to the request posted as `seq`.
    fn answer(&mut self, seq: u32, call: Call) -> Result<Answer> {
        self.answer_waiting(seq, call, Wait::default())
    }

    /// [`IsolatedSubsystem::answer`], waiting as `wait` says.
    fn answer_waiting(&mut self, seq: u32, call: Call, wait: Wait) -> Result<Answer> {
        let deadline = self.await_answer(AnswerAt::Response, seq, call, wait)?;
        let Some(link) = &self.link else {
            return Err(self.gone_error());
        };
        let data = link.region.data();
        let response = self.layout.response;
        let status = data[response + RESP_STATUS].load(Ordering::Relaxed);
        let aux = data[response + RESP_AUX].load(Ordering::Relaxed);
        let aux_f64 = f64::from_bits(data[response + RESP_AUX_F64].load(Ordering::Relaxed));
        if status != STATUS_FRAME {
            return Ok(Answer {
                aux,
                aux_f64,
                frame: None,
            });
        }
        let remaining = deadline.map_or(self.timeout, |d: Instant| {
            d.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1))
        });
        match link.group.frame_for(link.index, remaining) {
            Ok(reply) => self.frame_answer(aux, aux_f64, reply),
            Err(e) => {
                let end = if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) {
                    HostEnd::Timeout
                } else {
                    HostEnd::Io(e)
                };
                Err(self.host_failed(end, call))
            }
        }
    }

    /// An answer with its frame: a failed call's error (which op failed
    /// kept in `failed_op`), else the answer.
    fn frame_answer(&mut self, aux: u64, aux_f64: f64, frame: Reply) -> Result<Answer> {
        match frame {
            Reply::Failed { op: failed, error } => {
                self.failed_op = Some(failed as usize);
                Err(error.into_core())
            }
            reply => Ok(Answer {
                aux,
                aux_f64,
                frame: Some(reply),
            }),
        }
    }

    /// Waits for the answer to a step posted in the lane slot `slot` as
    /// `seq`: `None` when the step completed (its observed values in the
    /// slot), else the answer the host left in the response area.
    fn lane_answer(&mut self, slot: LaneSlot, round: u64, seq: u32) -> Result<Option<Answer>> {
        self.await_answer(AnswerAt::Round(round), seq, Call::DoStep, Wait::default())?;
        let Some(link) = &self.link else {
            return Err(self.gone_error());
        };
        let gdata = link.group.region.data();
        // The answers of the next members, read soon: asked for now, so
        // that their lines travel while this one's is read.
        if let Some(w) = gdata.get(slot.answer + LANE_READ_AHEAD) {
            crate::sys::prefetch_for_read(w);
        }
        let mut word = gdata[slot.answer].load(Ordering::Acquire);
        if word >> 32 != u64::from(seq) {
            // Not in the round counted: another thread sent that round
            // while this step was being posted, and the host may have
            // looked before it was. A round sent now (after the step, by
            // this thread) has it; its own answer word says when done.
            self.send_lane_round(true);
            self.await_answer(
                AnswerAt::Lane(slot.answer),
                seq,
                Call::DoStep,
                Wait::default(),
            )?;
            let Some(link) = &self.link else {
                return Err(self.gone_error());
            };
            word = link.group.region.data()[slot.answer].load(Ordering::Acquire);
        }
        match word & 0xffff_ffff {
            LANE_STEPPED => Ok(None),
            LANE_FULL => self.answer(seq, Call::DoStep).map(Some),
            code => Err(config(
                &self.info.name,
                format_args!("unknown lane answer {code} from the host"),
            )),
        }
    }

    /// Waits until the word at `at` says the request `seq` is answered
    /// (spinning, then sleeping; giving up when the host ends, the
    /// timeout passes or the run is interrupted, `wait.grace` after the
    /// interrupt). Returns the deadline if the wait was long enough to fix
    /// one.
    fn await_answer(
        &mut self,
        at: AnswerAt,
        seq: u32,
        call: Call,
        wait: Wait,
    ) -> Result<Option<Instant>> {
        let Some(link) = &self.link else {
            return Err(self.gone_error());
        };
        let group = &*link.group;
        let control_words = group.region.control();
        let master_cpu = &group.region.data()[MASTER_CPU];
        let done = match at {
            AnswerAt::Response => &link.data()[self.layout.response],
            AnswerAt::Lane(word) => &group.region.data()[word],
            AnswerAt::Round(_) => &group.region.data()[LANE_DONE],
        };
        let is_answered = |word: u64| match at {
            AnswerAt::Response => word == u64::from(seq),
            // (A lane answer's low word is its code.)
            AnswerAt::Lane(_) => word >> 32 == u64::from(seq),
            AnswerAt::Round(round) => word.wrapping_sub(round) < 1 << 63,
        };
        // The deadline is fixed at the first check, after the spin and the
        // first sleep (at most 5 ms late): no clock read on the fast path.
        let timeout = self.timeout;
        let mut deadline = None;
        let mut interrupted: Option<Instant> = None;
        let mut ended = None;
        if !is_answered(done.load(Ordering::Acquire)) {
            // Not answered yet: the host may have fallen asleep before it
            // saw the request (see `post`).
            channel::ring(&control_words[DOORBELL], &control_words[HOST_SLEEPING]);
        }
        let ok = channel::wait_until(
            || is_answered(done.load(Ordering::SeqCst)),
            &control_words[ANSWER_BELL],
            &control_words[MASTER_SLEEPERS],
            wait.spin,
            Duration::from_millis(5),
            || match group.ended() {
                Ok(Some(status)) => {
                    ended = Some(HostEnd::Exited(status));
                    channel::Check::Stop
                }
                Err(e) => {
                    ended = Some(HostEnd::Io(e));
                    channel::Check::Stop
                }
                Ok(None)
                    if Instant::now()
                        >= *deadline.get_or_insert_with(|| Instant::now() + timeout) =>
                {
                    ended = Some(HostEnd::Timeout);
                    channel::Check::Stop
                }
                Ok(None)
                    if interrupt_requested()
                        && interrupted.get_or_insert_with(Instant::now).elapsed() >= wait.grace =>
                {
                    ended = Some(HostEnd::Interrupted);
                    channel::Check::Stop
                }
                Ok(None) => channel::Check::Continue,
            },
            // A long wait: where the master runs now, for the host.
            || channel::publish_cpu(master_cpu),
        );
        if !ok {
            return Err(self.host_failed(ended.unwrap_or(HostEnd::Timeout), call));
        }
        Ok(deadline)
    }

    /// The lane slot steps go through, if the member has one and lanes
    /// are on.
    fn lane_slot(&self) -> Option<LaneSlot> {
        if !lanes_enabled() {
            return None;
        }
        let link = self.link.as_ref()?;
        if link.group.member_count.load(Ordering::Relaxed) < LANE_MIN_MEMBERS {
            return None;
        }
        link.lane
    }

    /// Queues the input values kept for the lane (something other than a
    /// step is sent first: they go before it, in order).
    fn spill_lane_inputs(&mut self) -> Result<()> {
        if !std::mem::take(&mut self.lane_inputs_set) {
            return Ok(());
        }
        let values = std::mem::take(&mut self.lane_inputs);
        let queued = self.queue(Op::SetInputs, 0, &values);
        self.lane_inputs = values;
        queued
    }

    /// Posts a step in the lane slot `slot`, with the input values kept
    /// for it; returns its sequence number and the round it goes with.
    fn post_lane(&mut self, slot: LaneSlot, t: f64, h: f64) -> Result<(u32, u64)> {
        self.forget_prefetched();
        self.failed_op = None;
        let with_inputs = std::mem::take(&mut self.lane_inputs_set);
        let Some(link) = &mut self.link else {
            return Err(self.gone_error());
        };
        let group = &*link.group;
        let gdata = group.region.data();
        if !group.lane_unsent.load(Ordering::Relaxed) {
            group.lane_unsent.store(true, Ordering::Relaxed);
            // The round's first step: the lines of the steps it will hold
            // (members' slots follow in the order they step, mostly)
            // asked for at once, in a state this processor may write, so
            // that they travel from the host's processor together rather
            // than one per store (a store that waits for its line holds
            // up the stores after it).
            let end = group.lane_requests_end.load(Ordering::Relaxed);
            let round_end =
                slot.request + LANE_ROUND * LaneSlot::request_words(self.lane_inputs.len());
            for w in gdata[slot.request..end.min(round_end).min(gdata.len())]
                .iter()
                .step_by(8)
            {
                crate::sys::prefetch_for_write(w);
            }
        }
        let r = slot.request;
        gdata[r + 1].store(t.to_bits(), Ordering::Relaxed);
        gdata[r + 2].store(h.to_bits(), Ordering::Relaxed);
        if with_inputs {
            let words = &gdata[r + 3..r + 3 + self.lane_inputs.len()];
            for (w, v) in words.iter().zip(&self.lane_inputs) {
                w.store(v.to_bits(), Ordering::Relaxed);
            }
        }
        let seq = link.seq.wrapping_add(1).max(1);
        link.seq = seq;
        let reads = self.step_reads.min(self.info.observed.len());
        // Posted; sent with the next round (`send_lane_round`).
        gdata[r].store(lane_request(seq, reads, with_inputs), Ordering::Release);
        let round = gdata[LANE_GO].load(Ordering::Relaxed).wrapping_add(1);
        // A round is sent every LANE_ROUND steps, so that the host steps
        // the first FMUs while the master posts the later ones.
        let n = group.lane_posted_unsent.load(Ordering::Relaxed) + 1;
        group.lane_posted_unsent.store(n, Ordering::Relaxed);
        if n >= LANE_ROUND {
            self.send_lane_round(false);
        }
        Ok((seq, round))
    }

    /// Sends the round of lane steps of this member's host, if steps were
    /// posted since the last was sent (or `always`).
    fn send_lane_round(&self, always: bool) {
        if let Some(link) = &self.link {
            let group = &*link.group;
            if always || group.lane_unsent.load(Ordering::Relaxed) {
                group.lane_unsent.store(false, Ordering::Relaxed);
                group.lane_posted_unsent.store(0, Ordering::Relaxed);
                post(group, |gdata| {
                    gdata[LANE_GO].fetch_add(1, Ordering::SeqCst);
                });
            }
        }
    }

    /// Copies the first `values.len()` observed values of the last step
    /// from the lane slot.
    fn read_lane_values(&self, values: &mut [f64]) -> Result<()> {
        let Some(link) = &self.link else {
            return Err(self.gone_error());
        };
        let (Some(slot), true) = (link.lane, values.len() <= self.info.observed.len()) else {
            return Err(config(
                &self.info.name,
                "observed values read from a lane slot it does not have",
            ));
        };
        let from = &link.group.region.data()[slot.answer + 1..slot.answer + 1 + values.len()];
        for (v, w) in values.iter_mut().zip(from) {
            *v = f64::from_bits(w.load(Ordering::Relaxed));
        }
        Ok(())
    }

    /// The host ended (or must be ended): the error every member of its
    /// group reports (see [`HostGroup::fail`]).
    fn host_failed(&mut self, end: HostEnd, fallback: Call) -> CoreError {
        let name = self.info.name.clone();
        let Some(link) = self.link.take() else {
            return self.gone_error();
        };
        let f = link.group.fail(
            end,
            fallback,
            (&name, self.version, self.interface),
            Some(self.timeout),
        );
        self.gone = Some(f.cause.clone());
        if f.interrupted && f.t.is_none() {
            // Cut off while loading: the run ends as interrupted when it
            // initializes this subsystem.
            self.loading_interrupted = true;
        }
        f.into_error()
    }

    /// Copies `values.len()` values of the response area into `values`.
    fn read_values(&self, values: &mut [f64]) -> Result<()> {
        let Some(link) = &self.link else {
            return Err(self.gone_error());
        };
        let data = link.data();
        let base = self.layout.response;
        let n = data[base + RESP_N].load(Ordering::Relaxed) as usize;
        if n != values.len() {
            return Err(config(
                &self.info.name,
                format_args!("the host answered {n} values, {} expected", values.len()),
            ));
        }
        let from = &data[base + RESPONSE_HEADER..base + RESPONSE_HEADER + n];
        for (v, w) in values.iter_mut().zip(from) {
            *v = f64::from_bits(w.load(Ordering::Relaxed));
        }
        Ok(())
    }
}

/// Posts requests whose words are written (`publish` makes them the
/// host's to serve: the first word of a batch stored, or a round of lane
/// steps sent). Tells the host how to wait first, where that changed (the
/// line is the host's to read at every spin). A host seen asleep, or one
/// that sleeps as soon as it is idle, is woken now; a spinning one that
/// may just be falling asleep is woken (if it did) when the answer is
/// awaited (`await_answer`): the fence that needs waits for the stores
/// before it to reach the other processor, so it is made once for all the
/// steps a Jacobi macro step starts rather than once each.
fn post(group: &HostGroup, publish: impl FnOnce(&[std::sync::atomic::AtomicU64])) {
    let gdata = group.region.data();
    let host_spin = channel::host_spin_ns();
    for (at, v) in [
        (HOST_SPIN_NS, host_spin),
        (HOST_YIELD_EVERY, u64::from(channel::yield_every())),
    ] {
        if gdata[at].load(Ordering::Relaxed) != v {
            gdata[at].store(v, Ordering::Relaxed);
        }
    }
    publish(gdata);
    let control_words = group.region.control();
    if host_spin == 0 || control_words[HOST_SLEEPING].load(Ordering::Relaxed) != 0 {
        // (A host woken now is told where not to run.)
        channel::publish_cpu(&gdata[MASTER_CPU]);
        channel::ring(&control_words[DOORBELL], &control_words[HOST_SLEEPING]);
    }
}

/// The run's interrupt flag (set by the CLI's signal handler), polled while
/// waiting for a host that does not answer, so that Ctrl-C does not wait
/// for `isolation_timeout` when an FMU hangs.
static INTERRUPT: std::sync::OnceLock<Arc<std::sync::atomic::AtomicBool>> =
    std::sync::OnceLock::new();

/// Makes waits for isolated FMUs give up when `flag` is set: the host is
/// killed and the call fails with [`CoreError::Interrupted`]. Set once per
/// process (later calls are ignored).
pub fn watch_interrupt(flag: Arc<std::sync::atomic::AtomicBool>) {
    let _ = INTERRUPT.set(flag);
}

fn interrupt_requested() -> bool {
    INTERRUPT
        .get()
        .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
}

impl Subsystem for IsolatedSubsystem {
    fn info(&self) -> &SubsystemInfo {
        &self.info
    }

    fn traced_strings(&self) -> &[String] {
        &self.string_names
    }

    fn get_strings(&mut self, values: &mut [String]) -> Result<()> {
        if self.string_names.is_empty() {
            return Ok(());
        }
        match self.control(Control::GetStrings, Call::GetString)? {
            Some(Reply::Strings(got)) if got.len() == values.len() => {
                for (v, s) in values.iter_mut().zip(got) {
                    *v = s;
                }
                Ok(())
            }
            _ => Err(config(&self.info.name, "unexpected answer to GetStrings")),
        }
    }

    fn set_values(&mut self, values: &[cosim_core::subsystem::InputValue]) -> Result<()> {
        let values = values.iter().map(|(v, x)| (*v as u64, x.clone())).collect();
        self.control(Control::SetValues(values), Call::SetValues)
            .map(|_| ())
    }

    fn feedthrough_jacobian(&mut self, jacobian: &mut [f64]) -> Result<bool> {
        if !self.info.provides_directional_derivatives {
            return Ok(false);
        }
        self.host_jacobian(jacobian)
    }

    fn enter_initialization(&mut self, t0: f64, t_stop: Option<f64>) -> Result<()> {
        if self.loading_interrupted {
            return Err(CoreError::Interrupted { t: t0 });
        }
        let payload = [
            t0.to_bits(),
            u64::from(t_stop.is_some()),
            t_stop.unwrap_or(0.0).to_bits(),
        ];
        self.sync(
            Op::EnterInitialization,
            0,
            &payload,
            None,
            Call::EnterInitialization,
        )?;
        Ok(())
    }

    fn allow_rollback(&mut self, to: RollbackTo) -> Result<()> {
        self.control(
            Control::AllowRollback(to == RollbackTo::Earlier),
            Call::Idle,
        )?;
        Ok(())
    }

    fn exit_initialization(&mut self) -> Result<()> {
        self.sync(
            Op::ExitInitialization,
            0,
            &[],
            None,
            Call::ExitInitialization,
        )?;
        if self.events.event_mode_used {
            // (The Clocks' first activations, read in Initialization Mode.)
            self.clock_tick = match self.control(Control::NextClockTick, Call::Idle)? {
                Some(Reply::ClockTick(t)) => t,
                _ => return Err(config(&self.info.name, "no Clock schedule from the host")),
            };
        }
        Ok(())
    }

    fn event_handling(&self) -> cosim_fmi::EventHandling {
        self.events
    }

    fn enter_event_mode(&mut self) -> Result<()> {
        self.control(Control::EnterEventMode, Call::EventMode)?;
        Ok(())
    }

    fn update_discrete_states(&mut self) -> Result<cosim_fmi::DiscreteStatesUpdate> {
        match self.control(Control::UpdateDiscreteStates, Call::EventMode)? {
            Some(Reply::Events(e)) => {
                self.clock_tick = e.next_clock_tick;
                Ok(e.update())
            }
            _ => Err(config(&self.info.name, "no event update from the host")),
        }
    }

    fn enter_step_mode(&mut self) -> Result<()> {
        self.control(Control::EnterStepMode, Call::EventMode)?;
        Ok(())
    }

    fn next_clock_tick(&self) -> Option<f64> {
        self.clock_tick
    }

    fn set_inputs(&mut self, values: &[f64]) -> Result<()> {
        if self.info.inputs.is_empty() {
            return Ok(());
        }
        self.counters.set_inputs += 1;
        self.check_len("set_inputs", values.len(), self.info.inputs.len())?;
        if self.batch_ops == 0 && !self.lane_inputs_set && self.lane_slot().is_some() {
            // Kept for the step's lane slot; queued if anything else is
            // sent first.
            self.forget_prefetched();
            self.lane_inputs.clear();
            self.lane_inputs.extend_from_slice(values);
            self.lane_inputs_set = true;
            return Ok(());
        }
        self.queue(Op::SetInputs, 0, values)
    }

    fn set_input_derivatives(&mut self, order: u32, values: &[f64]) -> Result<()> {
        if self.info.inputs.is_empty() {
            return Ok(());
        }
        self.counters.set_inputs += 1;
        self.check_len(
            "set_input_derivatives",
            values.len(),
            self.info.inputs.len(),
        )?;
        let order = u8::try_from(order)
            .map_err(|_| config(&self.info.name, format_args!("derivative order {order}")))?;
        self.queue(Op::SetInputDerivatives, order, values)
    }

    fn do_step(&mut self, t: f64, h: f64) -> Result<StepOutcome> {
        self.start_step(t, h)?;
        self.finish_step()
    }

    fn can_start_step(&self) -> bool {
        true
    }

    fn start_step(&mut self, t: f64, h: f64) -> Result<bool> {
        self.counters.do_step += 1;
        self.counters.stepped_time += h;
        let reads = self.step_reads.min(self.info.observed.len());
        if self.batch_ops == 0
            && let Some(slot) = self.lane_slot()
        {
            let queued = usize::from(self.lane_inputs_set);
            let (seq, round) = self.post_lane(slot, t, h)?;
            self.pending_step = Some(PendingStep {
                seq,
                queued,
                h,
                lane: Some((slot, round)),
                reads,
                held: false,
            });
            return Ok(true);
        }
        let queued = self.batch_ops as usize;
        let seq = self.post(
            Op::DoStep,
            0,
            &[t.to_bits(), h.to_bits(), reads as u64],
            None,
            Call::DoStep,
        )?;
        self.pending_step = Some(PendingStep {
            seq,
            queued,
            h,
            lane: None,
            reads,
            held: false,
        });
        Ok(true)
    }

    fn send_started_steps(&mut self) {
        self.send_lane_round(false);
    }

    fn finish_step(&mut self) -> Result<StepOutcome> {
        let Some(PendingStep {
            seq,
            queued,
            h,
            lane,
            reads,
            held,
        }) = self.pending_step.take()
        else {
            return Err(config(
                &self.info.name,
                "finish_step without a started step",
            ));
        };
        if let Some((_, round)) = lane {
            // The step's round, unless sent (by `send_started_steps`, or
            // with a later round: the flag of unsent steps is shared by
            // the host's members, and threads may clear it for each
            // other).
            let sent = self.link.as_ref().is_some_and(|l| {
                let rounds = l.group.region.data()[LANE_GO].load(Ordering::Relaxed);
                rounds.wrapping_sub(round) < 1 << 63
            });
            self.send_lane_round(!sent);
        }
        let answer = match lane {
            _ if held => match self.held_answer.take() {
                Some(a) => match a.frame {
                    Some(frame) => self.frame_answer(a.aux, a.aux_f64, frame),
                    None => Ok(Answer {
                        aux: a.aux,
                        aux_f64: a.aux_f64,
                        frame: None,
                    }),
                },
                None => Err(config(&self.info.name, "a held step without its answer")),
            },
            Some((slot, round)) => match self.lane_answer(slot, round, seq) {
                Ok(None) => {
                    self.prefetched = Prefetched::Lane(reads);
                    return Ok(StepOutcome::Completed);
                }
                Ok(Some(answer)) => Ok(answer),
                Err(e) => Err(e),
            },
            None => self.answer(seq, Call::DoStep),
        };
        let answer = match answer {
            Ok(a) => a,
            Err(e) => {
                if self.failed_op.is_some_and(|op| op < queued) {
                    // A queued set call failed: the step was not made.
                    self.counters.do_step -= 1;
                    self.counters.stepped_time -= h;
                }
                return Err(e);
            }
        };
        let log = match answer.frame {
            Some(Reply::Log(lines)) => lines,
            _ => Vec::new(),
        };
        match answer.aux & 0xff {
            STEP_COMPLETED => {
                self.prefetched = if answer.aux & STEP_PREFETCHED == 0 {
                    Prefetched::No
                } else if held {
                    Prefetched::Held
                } else {
                    Prefetched::Response(reads)
                };
                Ok(StepOutcome::Completed)
            }
            STEP_EARLY_RETURN => {
                self.recent_log = log;
                Ok(StepOutcome::EarlyReturn {
                    last_successful_time: answer.aux_f64,
                })
            }
            STEP_EVENT => Ok(StepOutcome::EventHandlingNeeded {
                last_successful_time: answer.aux_f64,
            }),
            STEP_DISCARDED => {
                self.recent_log = log;
                Ok(StepOutcome::Discarded {
                    last_successful_time: answer.aux_f64,
                })
            }
            STEP_TERMINATED => {
                self.recent_log = log;
                Ok(StepOutcome::Terminated {
                    last_successful_time: answer.aux_f64,
                })
            }
            other => Err(config(
                &self.info.name,
                format_args!("unknown step outcome {other} from the host"),
            )),
        }
    }

    fn get_observed(&mut self, values: &mut [f64]) -> Result<()> {
        self.read_observed((0, values.len()), values)
    }

    fn get_observed_first(&mut self, n: usize, values: &mut [f64]) -> Result<()> {
        self.read_observed((0, n), values)
    }

    fn reads_after_step(&mut self, n: usize) {
        // (A value nothing reads after the step then costs no call in the
        // host, as in process.)
        self.step_reads = n;
    }

    fn request_observed_from(&mut self, first: usize) {
        let n = self.info.observed.len();
        let read_ahead = match self.prefetched {
            Prefetched::No => 0,
            Prefetched::Lane(read) | Prefetched::Response(read) => read,
            Prefetched::Held => self.held_values.len(),
            Prefetched::Requested { .. } => return,
        };
        if first >= n || read_ahead >= n || self.link.is_none() {
            return;
        }
        // (A failure to post is the read's to report: it asks again.)
        let payload = [first as u64, n as u64];
        if let Ok(seq) = self.post(Op::GetObserved, 0, &payload, None, Call::GetReal) {
            self.prefetched = Prefetched::Requested { seq, first };
        }
    }

    fn get_observed_from(&mut self, first: usize, values: &mut [f64]) -> Result<()> {
        self.read_observed((first, values.len()), values)
    }

    fn get_output_derivatives(&mut self, order: u32, values: &mut [f64]) -> Result<()> {
        if self.info.n_outputs == 0 {
            return Ok(());
        }
        self.counters.get_outputs += 1;
        let order = u8::try_from(order)
            .map_err(|_| config(&self.info.name, format_args!("derivative order {order}")))?;
        self.sync(
            Op::GetOutputDerivatives,
            order,
            &[],
            None,
            Call::GetOutputDerivatives,
        )?;
        self.read_values(values)
    }

    fn save_state(&mut self, reuse: Option<StateId>) -> Result<StateId> {
        self.counters.state_saves += 1;
        let reuse = reuse.map_or(u64::MAX, |id| id.0 as u64);
        let answer = self.sync(Op::SaveState, 0, &[reuse], None, Call::GetState)?;
        Ok(StateId(usize::try_from(answer.aux).unwrap_or(usize::MAX)))
    }

    fn restore_state(&mut self, id: StateId) -> Result<()> {
        self.counters.state_restores += 1;
        self.sync(Op::RestoreState, 0, &[id.0 as u64], None, Call::SetState)?;
        Ok(())
    }

    fn free_state(&mut self, id: StateId) -> Result<()> {
        self.sync(Op::FreeState, 0, &[id.0 as u64], None, Call::FreeState)?;
        Ok(())
    }

    fn terminate(&mut self) -> Result<()> {
        if self.link.is_none() {
            // The host died: there is nothing left to terminate.
            return Ok(());
        }
        let failed = self.link.as_ref().and_then(|l| {
            l.group
                .failure
                .lock()
                .ok()?
                .as_ref()
                .map(|f| f.cause.clone())
        });
        if let Some(cause) = failed {
            // The host this FMU shared died (another FMU's fault, reported
            // as that FMU's): this instance went with it.
            tracing::debug!(
                "subsystem '{}': not terminated: its host process is gone ({cause})",
                self.info.name
            );
            self.link = None;
            self.gone = Some(cause);
            return Ok(());
        }
        if self.interface == Interface::ModelExchange {
            // The solver's figures of the run, kept for the summary.
            if let Some(Reply::SolverStatistics(stats)) =
                self.control(Control::SolverStatistics, Call::Idle)?
            {
                self.counters.solver = stats;
            }
        }
        self.sync(Op::Terminate, 0, &[], None, Call::Terminate)?;
        Ok(())
    }

    fn counters(&self) -> CallCounters {
        self.counters
    }

    fn as_hosted(&mut self) -> Option<&mut dyn cosim_core::hosted::Hosted> {
        self.hosted()
    }

    fn step_function(&self) -> &'static str {
        Call::DoStep.name(self.version, self.interface)
    }

    fn take_recent_log(&mut self) -> Vec<String> {
        std::mem::take(&mut self.recent_log)
    }
}

impl IsolatedSubsystem {
    /// Reads at least the observed values `first..n` into `values` (which
    /// has every slot; `first` is 0 or `n` every slot): from what the host
    /// read after the step, where that holds them, else with a request
    /// for those (the host then reads those, as an FMU in process does).
    /// One call counted, none for no value (as in process).
    fn read_observed(&mut self, (first, n): (usize, usize), values: &mut [f64]) -> Result<()> {
        self.check_len("get_observed", values.len(), self.info.observed.len())?;
        let n = n.min(values.len());
        if first >= n {
            return Ok(());
        }
        self.counters.get_outputs += 1;
        let at = std::mem::replace(&mut self.prefetched, Prefetched::No);
        match at {
            Prefetched::Lane(read) if read >= n => self.read_lane_values(&mut values[..read]),
            Prefetched::Held if self.held_values.len() >= n => {
                let read = self.held_values.len().min(values.len());
                values[..read].copy_from_slice(&self.held_values[..read]);
                Ok(())
            }
            Prefetched::Response(read) if read >= n => self.read_values(&mut values[..read]),
            Prefetched::Requested { seq, first: asked } if asked <= first && n == values.len() => {
                self.answer(seq, Call::GetReal)?;
                self.read_answered((first, n), values)
            }
            other => {
                self.prefetched = other;
                self.forget_prefetched();
                if (first, n) == (0, values.len()) {
                    self.sync(Op::GetObserved, 0, &[], None, Call::GetReal)?;
                    return self.read_values(values);
                }
                let payload = [first as u64, n as u64];
                self.sync(Op::GetObserved, 0, &payload, None, Call::GetReal)?;
                self.read_answered((first, n), values)
            }
        }
    }

    /// The values `first..n` of the answer to a read of every observed
    /// value (in the response area) into `values`. (The others are the
    /// host's as it last had them: those here are current.)
    fn read_answered(&mut self, (first, n): (usize, usize), values: &mut [f64]) -> Result<()> {
        let mut all = std::mem::take(&mut self.scratch);
        all.resize(values.len(), 0.0);
        let read = self.read_values(&mut all);
        if read.is_ok() {
            values[first..n].copy_from_slice(&all[first..n]);
        }
        self.scratch = all;
        read
    }

    fn check_len(&self, what: &str, got: usize, want: usize) -> Result<()> {
        if got == want {
            Ok(())
        } else {
            Err(config(
                &self.info.name,
                format_args!("{what}: {got} values for {want} slots"),
            ))
        }
    }
}
