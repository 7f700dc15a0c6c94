//! The master's side: [`IsolatedSubsystem`], a [`Subsystem`] whose FMU
//! lives in a host process.

use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use cosim_core::subsystem::{
    CallCounters, RollbackTo, StartValue, StateId, Subsystem, SubsystemInfo,
};
use cosim_core::{CoreError, Result};
use cosim_fmi::{FmiVersion, Fmu, InstantiateOptions, StepOutcome};
use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

use crate::channel;
use crate::protocol::{
    CALL, CALL_TIME, Call, Control, HOST_SLEEPING, HOST_SPIN_NS, Layout, MAGIC, MASTER_SLEEPING,
    Op, QUEUED_SETS, REQ_SEQ, RESP_SEQ, RESPONSE_HEADER, Reply, STATUS_FRAME, STEP_COMPLETED,
    STEP_DISCARDED, STEP_EARLY_RETURN, STEP_PREFETCHED, STEP_TERMINATED, VERSION, read_frame,
    write_frame,
};
use crate::sys::SharedRegion;
use crate::tail::Tail;

/// Default of `isolation_timeout`: how long one call may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How an isolated subsystem is run.
#[derive(Debug, Clone)]
pub struct IsolationSettings {
    /// Longest time one request (one trait call) may take; the host is
    /// then killed and the call reported.
    pub timeout: Duration,
}

impl Default for IsolationSettings {
    fn default() -> Self {
        IsolationSettings {
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Names the program started as host (`<program> host --fmu ..
/// [--extracted ..] --name ..`, see [`crate::host::serve`]) for this
/// process; returns false if one was named already. Without it,
/// the `COSIM_HOST` environment variable, else the running executable if
/// it is `cosim`.
pub fn set_host_program(program: PathBuf) -> bool {
    PROGRAM.set(program).is_ok()
}

fn host_program() -> Result<PathBuf> {
    if let Some(p) = PROGRAM.get() {
        return Ok(p.clone());
    }
    if let Some(p) = std::env::var_os("COSIM_HOST") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| {
        CoreError::Config(format!(
            "process isolation: cannot find the running executable: {e}"
        ))
    })?;
    if exe.file_stem().is_some_and(|s| s == "cosim") {
        Ok(exe)
    } else {
        Err(CoreError::Config(format!(
            "process isolation starts `cosim host` in a child process, and this program ({}) is not `cosim`: set COSIM_HOST to the path of the cosim binary",
            exe.display()
        )))
    }
}

/// The host process and the channels to it.
struct Link {
    _count: channel::HostCount,
    /// The host, leader of its own process group. It is reaped only by
    /// [`Link::end`], after its group is killed: until then its process id
    /// names its group and nothing else.
    child: Child,
    /// The host's exit status, once reaped.
    reaped: Option<ExitStatus>,
    socket: UnixStream,
    region: SharedRegion,
    seq: u32,
    tail: Arc<Tail>,
    /// How long to wait, when the host has exited, for the rest of its
    /// standard error to be forwarded.
    drain: Duration,
}

impl Link {
    fn data(&self) -> &[AtomicU64] {
        self.region.data()
    }

    /// The host's exit status if it has ended (without reaping it).
    fn ended(&self) -> std::io::Result<Option<ExitStatus>> {
        match self.reaped {
            Some(status) => Ok(Some(status)),
            None => crate::sys::peek_exit(self.child.id()),
        }
    }

    /// Kills the host's process group (the host, if it still runs, and
    /// every process the FMU started in it, which would otherwise outlive
    /// the host), then reaps the host; returns its exit status.
    fn end(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.reaped {
            return Ok(status);
        }
        let killed = crate::sys::kill_group(self.child.id());
        if let Err(e) = killed {
            tracing::debug!("killing the process group {}: {e}", self.child.id());
            let _ = self.child.kill();
        }
        let status = self.child.wait()?;
        self.reaped = Some(status);
        Ok(status)
    }
}

impl Drop for Link {
    /// Asks the host to free the instance and exit; kills it if it has not
    /// within a second. Either way, kills what is left of its process
    /// group.
    fn drop(&mut self) {
        if let Ok(None) = self.ended() {
            let layout_request = crate::protocol::Layout::from_words(0, 0).request;
            let data = self.region.data();
            data[layout_request].store(1, Ordering::Relaxed);
            data[layout_request + 1].store(Op::Shutdown.header(0, 0), Ordering::Relaxed);
            self.seq = self.seq.wrapping_add(1);
            let control = self.region.control();
            channel::post(&control[REQ_SEQ], &control[HOST_SLEEPING], self.seq);
            let start = Instant::now();
            while let Ok(None) = self.ended() {
                if start.elapsed() > Duration::from_secs(1) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let _ = self.end();
        self.tail.wait_closed(self.drain);
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
/// as a [`CoreError::HostProcess`].
pub struct IsolatedSubsystem {
    info: SubsystemInfo,
    /// Names of the traced String variables.
    string_names: Vec<String>,
    version: FmiVersion,
    link: Option<Link>,
    /// The master's opened FMU: its extraction directory, which the host
    /// loads, lives (at least) as long as this subsystem and is removed
    /// after the host is gone, whatever ended it.
    fmu: Option<Fmu>,
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
}

impl Drop for IsolatedSubsystem {
    /// Ends the host (and its process group) first; the extraction
    /// directory goes with the last clone of the FMU, after it.
    fn drop(&mut self) {
        drop(self.link.take());
        drop(self.fmu.take());
    }
}

impl std::fmt::Debug for IsolatedSubsystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IsolatedSubsystem")
            .field("name", &self.info.name)
            .field("pid", &self.host_pid())
            .finish()
    }
}

fn config(name: &str, what: impl std::fmt::Display) -> CoreError {
    CoreError::Config(format!("subsystem '{name}': process isolation: {what}"))
}

impl IsolatedSubsystem {
    /// Starts a host process for `fmu` and instantiates it there as
    /// subsystem `name`, with the given slots (as
    /// [`cosim_core::FmuSubsystem::instantiate`]).
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
        fmu.co_simulation()?;
        let info = SubsystemInfo::from_model_description(
            md,
            name,
            inputs,
            observed,
            n_outputs,
            fmu.source().display().to_string(),
        );
        let layout = Layout::new(info.inputs.len(), info.observed.len());
        if interrupt_requested() {
            // Interrupted while loading: start no more hosts. The run ends
            // as interrupted when it initializes this subsystem.
            tracing::debug!("subsystem '{name}': interrupted before its host process was started");
            return Ok(IsolatedSubsystem::unloaded(
                info,
                md.fmi_version,
                layout,
                settings,
                "the run was interrupted before its host process was started",
            ));
        }
        let (region, region_fd) = SharedRegion::create(layout.data_words())
            .map_err(|e| config(name, format_args!("creating shared memory: {e}")))?;
        let program = host_program()?;
        let (socket, theirs) =
            UnixStream::pair().map_err(|e| config(name, format_args!("socketpair: {e}")))?;
        let mut command = Command::new(&program);
        command.arg("host").arg("--fmu").arg(fmu.source());
        if fmu.is_extracted() {
            // One extraction for the master and all its hosts: the host
            // loads this process's directory, which outlives it.
            command.arg("--extracted").arg(fmu.root());
        }
        command
            .arg("--name")
            .arg(name)
            // Its own process group: a Ctrl-C at the terminal reaches the
            // master only, which then ends the run and its hosts cleanly.
            .process_group(0)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::inherit())
            .stderr(Stdio::piped());
        if std::env::var_os("COSIM_LOG").is_none() {
            // The host logs (the FMU's messages) at the master's level.
            let level = tracing::level_filters::LevelFilter::current().to_string();
            command.env("COSIM_LOG", level.to_lowercase());
        }
        let mut child = command.spawn().map_err(|e| {
            config(
                name,
                format_args!("cannot start the host process {}: {e}", program.display()),
            )
        })?;
        let call_log = options.call_log.as_ref().map(|s| s.target().clone());
        let call_log_on_stderr = call_log == Some(cosim_fmi::CallLogTarget::Stderr);
        let tail = match child.stderr.take() {
            Some(stderr) => Tail::start(stderr, name, call_log_on_stderr),
            None => Tail::start_closed(),
        };
        let hello = send_hello(&socket, region_fd.as_fd(), &layout);
        drop(region_fd);
        let mut sub = IsolatedSubsystem {
            info,
            string_names: Vec::new(),
            version: md.fmi_version,
            link: Some(Link {
                _count: channel::HostCount::register(),
                child,
                reaped: None,
                socket,
                region,
                seq: 0,
                tail,
                // The FMI call log on standard error: its last lines (the
                // instance being freed) must not be lost.
                drain: Duration::from_millis(if call_log_on_stderr { 5000 } else { 200 }),
            }),
            fmu: Some(fmu.clone()),
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
        };
        if let Err(e) = hello {
            return Err(sub.host_failed(HostEnd::Io(e), Call::Load));
        }
        let instantiated = sub.control(
            Control::Instantiate {
                inputs: inputs.to_vec(),
                observed: observed.to_vec(),
                n_outputs: n_outputs as u64,
                logging_on: options.logging_on,
                debug_categories: options.debug_categories.clone(),
                call_log,
                model_exchange: fmu.runs_model_exchange(),
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

    /// A subsystem without a host: the run was interrupted before it was
    /// loaded.
    fn unloaded(
        info: SubsystemInfo,
        version: FmiVersion,
        layout: Layout,
        settings: &IsolationSettings,
        why: &str,
    ) -> IsolatedSubsystem {
        IsolatedSubsystem {
            info,
            string_names: Vec::new(),
            version,
            link: None,
            fmu: None,
            gone: Some(why.to_string()),
            loading_interrupted: true,
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
        }
    }

    /// The host's process id (while it runs).
    pub fn host_pid(&self) -> Option<u32> {
        self.link.as_ref().map(|l| l.child.id())
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
        data[request].store(ops, Ordering::Relaxed);
        data[HOST_SPIN_NS].store(channel::host_spin_ns(), Ordering::Relaxed);
        let seq = link.seq.wrapping_add(1);
        link.seq = seq;
        let control_words = link.region.control();
        channel::post(&control_words[REQ_SEQ], &control_words[HOST_SLEEPING], seq);
        if let Some(request) = control
            && let Err(e) = link
                .socket
                .set_write_timeout(Some(self.timeout))
                .and_then(|()| write_frame(&mut link.socket, request))
        {
            return Err(self.fail(HostEnd::Io(e), call));
        }
        Ok(seq)
    }

    /// Waits for the answer to the request posted as `seq`.
    fn answer(&mut self, seq: u32, call: Call) -> Result<Answer> {
        let Some(link) = &mut self.link else {
            return Err(self.gone_error());
        };
        let data = link.region.data();
        let control_words = link.region.control();
        // The deadline is fixed at the first check, after the spin and the
        // first sleep (at most 5 ms late): no clock read on the fast path.
        let timeout = self.timeout;
        let mut deadline = None;
        let mut ended = None;
        let host = &*link;
        let answered = channel::wait(
            &control_words[RESP_SEQ],
            &control_words[MASTER_SLEEPING],
            seq.wrapping_sub(1),
            channel::spin_budget(),
            Duration::from_millis(5),
            || match host.ended() {
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
        );
        if answered.is_none() {
            return Err(self.fail(ended.unwrap_or(HostEnd::Timeout), call));
        }
        let response = self.layout.response;
        let status = data[response].load(Ordering::Relaxed);
        let aux = data[response + 1].load(Ordering::Relaxed);
        let aux_f64 = f64::from_bits(data[response + 2].load(Ordering::Relaxed));
        if status != STATUS_FRAME {
            return Ok(Answer {
                aux,
                aux_f64,
                frame: None,
            });
        }
        let remaining = deadline.map_or(timeout, |d| {
            d.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1))
        });
        let frame = link
            .socket
            .set_read_timeout(Some(remaining))
            .and_then(|()| read_frame::<Reply>(&mut link.socket));
        match frame {
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
                Err(self.fail(end, call))
            }
        }
    }

    fn fail(&mut self, end: HostEnd, call: Call) -> CoreError {
        self.host_failed(end, call)
    }

    /// The host ended (or must be ended): reaps it and describes what
    /// happened, naming the FMI call in progress and its time.
    fn host_failed(&mut self, end: HostEnd, fallback: Call) -> CoreError {
        let name = self.info.name.clone();
        let Some(mut link) = self.link.take() else {
            return self.gone_error();
        };
        let pid = link.child.id();
        let interrupted = matches!(end, HostEnd::Interrupted);
        let status = match end {
            HostEnd::Exited(status) => Ok(status),
            HostEnd::Timeout => {
                // Killed (with its process group) by `end` below.
                Err(format!(
                    "no answer within {} s (isolation_timeout): the FMU's host process (pid {pid}) was killed",
                    self.timeout.as_secs_f64()
                ))
            }
            HostEnd::Interrupted => {
                // Killed (with its process group) by `end` below.
                Err(format!(
                    "interrupted while the FMU had not answered: its host process (pid {pid}) was killed"
                ))
            }
            HostEnd::Io(e) => {
                // The socket failed: the host is most likely dying; give it
                // a moment to be reaped with its real status.
                let start = Instant::now();
                loop {
                    match link.ended() {
                        Ok(Some(status)) => break Ok(status),
                        Ok(None) if start.elapsed() < Duration::from_secs(2) => {
                            std::thread::sleep(Duration::from_millis(2));
                        }
                        _ => {
                            break Err(format!(
                                "the channel to the FMU's host process (pid {pid}) failed ({e}); the host was killed"
                            ));
                        }
                    }
                }
            }
        };
        // The host (if it still runs) and whatever the FMU started die with
        // its process group; the host is reaped.
        let _ = link.end();
        let mut cause = match status {
            Ok(status) => format!(
                "the FMU's host process (pid {pid}) {}",
                describe_exit(status)
            ),
            Err(cause) => cause,
        };
        let data = link.region.data();
        let mut call = Call::decode(data[CALL].load(Ordering::Relaxed));
        let t = f64::from_bits(data[CALL_TIME].load(Ordering::Relaxed));
        if call == Call::Idle {
            call = fallback;
        }
        if call == Call::LoadLibrary {
            cause = format!(
                "{}: {cause} (in the library's initialisers: no FMI function had been called)",
                self.library_shown()
            );
        }
        let t = (!matches!(call, Call::Load | Call::LoadLibrary | Call::Instantiate)).then_some(t);
        link.tail.wait_closed(Duration::from_millis(500));
        let log = link.tail.take();
        self.gone = Some(cause.clone());
        drop(link);
        if interrupted {
            if t.is_none() {
                // Cut off while loading: the run ends as interrupted when
                // it initializes this subsystem.
                self.loading_interrupted = true;
            }
            // The run ends as interrupted; what was cut off is said here.
            tracing::warn!(
                "subsystem '{name}': {}{}: {cause}",
                call.name(self.version),
                t.map(|t| format!(" at t = {t}")).unwrap_or_default()
            );
            return CoreError::Interrupted {
                t: t.unwrap_or(f64::NAN),
            };
        }
        CoreError::HostProcess {
            subsystem: name,
            function: call.name(self.version),
            t,
            cause,
            log,
        }
    }

    /// The FMU's shared library as the user knows it: `<the .fmu>/<entry>`.
    fn library_shown(&self) -> String {
        match &self.fmu {
            Some(fmu) => match fmu.library_entry() {
                Ok(entry) => format!("{}/{entry}", fmu.source().display()),
                Err(_) => format!("the shared library of {}", fmu.source().display()),
            },
            None => "the FMU's shared library".to_string(),
        }
    }

    /// Copies `values.len()` values of the response area into `values`.
    fn read_values(&self, values: &mut [f64]) -> Result<()> {
        let Some(link) = &self.link else {
            return Err(self.gone_error());
        };
        let data = link.data();
        let base = self.layout.response;
        let n = data[base + 3].load(Ordering::Relaxed) as usize;
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

enum HostEnd {
    Exited(ExitStatus),
    Timeout,
    Io(std::io::Error),
    /// The run was interrupted (SIGINT / SIGTERM) while the host was in a
    /// call: the host is killed rather than waited for.
    Interrupted,
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

/// "died of a segmentation fault (SIGSEGV)", "exited with status 3".
pub fn describe_exit(status: ExitStatus) -> String {
    if let Some(sig) = status.signal() {
        let what = match sig {
            libc::SIGSEGV => "died of a segmentation fault (SIGSEGV)".to_string(),
            libc::SIGABRT => "aborted (SIGABRT)".to_string(),
            libc::SIGBUS => "died of a bus error (SIGBUS)".to_string(),
            libc::SIGFPE => "died of a floating-point exception (SIGFPE)".to_string(),
            libc::SIGILL => "died of an illegal instruction (SIGILL)".to_string(),
            libc::SIGKILL => "was killed (SIGKILL)".to_string(),
            libc::SIGTERM => "was terminated (SIGTERM)".to_string(),
            libc::SIGINT => "was interrupted (SIGINT)".to_string(),
            other => format!("was killed by signal {other}"),
        };
        if status.core_dumped() {
            format!("{what}, core dumped")
        } else {
            what
        }
    } else {
        match status.code() {
            Some(0) => "exited (status 0) in the middle of the call".to_string(),
            Some(code) => format!("exited with status {code}"),
            None => format!("ended ({status})"),
        }
    }
}

/// Sends the start-up message: magic and version, the layout, and the
/// shared memory file descriptor.
fn send_hello(
    socket: &UnixStream,
    region: std::os::fd::BorrowedFd<'_>,
    layout: &Layout,
) -> std::io::Result<()> {
    let mut payload = [0u8; 32];
    let head = u64::from(MAGIC) | (u64::from(VERSION) << 32);
    for (i, w) in [
        head,
        layout.request_words as u64,
        layout.response_words as u64,
        // The master: a host whose parent is another process (a reaper,
        // the master having died before the host looked) cleans up.
        u64::from(std::process::id()),
    ]
    .iter()
    .enumerate()
    {
        payload[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
    }
    let fds = [region];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut cmsg = SendAncillaryBuffer::new(&mut space);
    if !cmsg.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(std::io::Error::other("cannot attach the shared memory"));
    }
    let sent = rustix::net::sendmsg(
        socket,
        &[IoSlice::new(&payload)],
        &mut cmsg,
        SendFlags::empty(),
    )?;
    if sent != payload.len() {
        return Err(std::io::Error::other("short start-up message"));
    }
    Ok(())
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
        Ok(())
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
        if self
            .fmu
            .as_ref()
            .is_some_and(|f| f.runs_model_exchange().is_some())
        {
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
        Call::DoStep.name(self.version)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_are_described() {
        assert_eq!(
            describe_exit(ExitStatus::from_raw(libc::SIGSEGV)),
            "died of a segmentation fault (SIGSEGV)"
        );
        assert_eq!(
            describe_exit(ExitStatus::from_raw(3 << 8)),
            "exited with status 3"
        );
    }
}
