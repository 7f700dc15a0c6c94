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
use crate::group::{HostEnd, HostGroup, HostPool, MemberInfo, MemberLink};
use crate::protocol::{
    ANSWER_BELL, Call, Control, DOORBELL, HOST_SLEEPING, HOST_SPIN_NS, HOST_YIELD_EVERY, Layout,
    MASTER_CPU, MASTER_SLEEPERS, Op, QUEUED_SETS, RESP_AUX, RESP_AUX_F64, RESP_N, RESP_STATUS,
    RESPONSE_HEADER, Reply, STATUS_FRAME, STEP_COMPLETED, STEP_DISCARDED, STEP_EARLY_RETURN,
    STEP_EVENT, STEP_PREFETCHED, STEP_TERMINATED,
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
    /// The response area holds the observed values read after the last
    /// step, and nothing was sent since.
    prefetched: bool,
    /// A step posted by `start_step`: (sequence number, set calls queued
    /// before it, step size), until `finish_step` takes its answer.
    pending_step: Option<(u32, usize, f64)>,
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
            prefetched: false,
            pending_step: None,
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
        match group.add_member(member, &layout) {
            Ok((index, region)) => {
                sub.link = Some(MemberLink {
                    group,
                    index,
                    region,
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
        self.prefetched = false;
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
        self.prefetched = false;
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
        // How the host waits, written only when it changes: the line is
        // the host's to read at every spin.
        let gdata = group.region.data();
        let host_spin = channel::host_spin_ns();
        for (word, value) in [
            (HOST_SPIN_NS, host_spin),
            (HOST_YIELD_EVERY, u64::from(channel::yield_every())),
        ] {
            if gdata[word].load(Ordering::Relaxed) != value {
                gdata[word].store(value, Ordering::Relaxed);
            }
        }
        // Posted: the host may serve it from here on. A host seen asleep,
        // or one that sleeps as soon as it is idle, is woken now; a
        // spinning one that may just be falling asleep is woken (if it
        // did) when the answer is awaited (`answer`): the fence that
        // needs waits for the stores before it to reach the other
        // processor, so it is made once for all the steps a Jacobi macro
        // step starts rather than once each.
        data[request].store(u64::from(seq) << 32 | ops, Ordering::Release);
        let control_words = group.region.control();
        if host_spin == 0 || control_words[HOST_SLEEPING].load(Ordering::Relaxed) != 0 {
            // (A host woken now is told where not to run.)
            channel::publish_cpu(&gdata[MASTER_CPU]);
            channel::ring(&control_words[DOORBELL], &control_words[HOST_SLEEPING]);
        }
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
        let Some(link) = &self.link else {
            return Err(self.gone_error());
        };
        let data = link.region.data();
        let response = self.layout.response;
        let group = &*link.group;
        let control_words = group.region.control();
        let master_cpu = &group.region.data()[MASTER_CPU];
        // The deadline is fixed at the first check, after the spin and the
        // first sleep (at most 5 ms late): no clock read on the fast path.
        let timeout = self.timeout;
        let mut deadline = None;
        let mut ended = None;
        let done = &data[response];
        if done.load(Ordering::Acquire) != u64::from(seq) {
            // Not answered yet: the host may have fallen asleep before it
            // saw the request (see `post`).
            channel::ring(&control_words[DOORBELL], &control_words[HOST_SLEEPING]);
        }
        let answered = channel::wait_until(
            || done.load(Ordering::SeqCst) == u64::from(seq),
            &control_words[ANSWER_BELL],
            &control_words[MASTER_SLEEPERS],
            channel::spin_budget(),
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
                Ok(None) if interrupt_requested() => {
                    ended = Some(HostEnd::Interrupted);
                    channel::Check::Stop
                }
                Ok(None) => channel::Check::Continue,
            },
            // A long wait: where the master runs now, for the host.
            || channel::publish_cpu(master_cpu),
        );
        if !answered {
            return Err(self.host_failed(ended.unwrap_or(HostEnd::Timeout), call));
        }
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
        let remaining = deadline.map_or(timeout, |d: Instant| {
            d.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1))
        });
        match group.frame_for(link.index, remaining) {
            Ok(Reply::Failed { op: failed, error }) => {
                self.failed_op = Some(failed as usize);
                Err(error.into_core())
            }
            Ok(reply) => Ok(Answer {
                aux,
                aux_f64,
                frame: Some(reply),
            }),
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
        let queued = self.batch_ops as usize;
        let seq = self.post(
            Op::DoStep,
            0,
            &[t.to_bits(), h.to_bits()],
            None,
            Call::DoStep,
        )?;
        self.pending_step = Some((seq, queued, h));
        Ok(true)
    }

    fn finish_step(&mut self) -> Result<StepOutcome> {
        let Some((seq, queued, h)) = self.pending_step.take() else {
            return Err(config(
                &self.info.name,
                "finish_step without a started step",
            ));
        };
        let answer = match self.answer(seq, Call::DoStep) {
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
                self.prefetched = answer.aux & STEP_PREFETCHED != 0;
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
        if self.info.observed.is_empty() {
            return Ok(());
        }
        self.counters.get_outputs += 1;
        if !self.prefetched {
            self.sync(Op::GetObserved, 0, &[], None, Call::GetReal)?;
        }
        self.prefetched = false;
        self.read_values(values)
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

    fn step_function(&self) -> &'static str {
        Call::DoStep.name(self.version, self.interface)
    }

    fn take_recent_log(&mut self) -> Vec<String> {
        std::mem::take(&mut self.recent_log)
    }
}

impl IsolatedSubsystem {
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
