//! The master's side: [`IsolatedSubsystem`], a [`Subsystem`] whose FMU
//! lives in a host process.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use cosim_core::subsystem::{
    CallCounters, RollbackTo, StartValue, StateId, Subsystem, SubsystemInfo,
};
use cosim_core::{CoreError, Result};
use cosim_fmi::{FmiVersion, Fmu, InstantiateOptions, StepOutcome};
use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

use crate::channel;
use crate::protocol::{
    ANSWER_BELL, CALL, CALL_MEMBER, CALL_TIME, Call, Control, DOORBELL, GROUP_WORDS, HOST_SLEEPING,
    HOST_SPIN_NS, HOST_YIELD_EVERY, Layout, MAGIC, MASTER_SLEEPERS, MEMBERS_ADDED, Op, QUEUED_SETS,
    RESP_AUX, RESP_AUX_F64, RESP_N, RESP_STATUS, RESPONSE_HEADER, Reply, STATUS_FRAME,
    STEP_COMPLETED, STEP_DISCARDED, STEP_EARLY_RETURN, STEP_PREFETCHED, STEP_TERMINATED, VERSION,
    read_frame, write_frame,
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

/// The host processes of a run. Isolated FMUs share them, assigned in
/// turn, so that with more FMUs than cores the hosts do not outnumber the
/// processors (a host with a processor of its own spins between requests
/// and answers in a fraction of a microsecond; one that must be woken
/// costs several microseconds per call). An FMU that can be instantiated
/// only once per process never shares a host with another instance of
/// itself.
#[derive(Debug)]
pub struct HostPool {
    max_hosts: usize,
    state: Mutex<PoolState>,
}

#[derive(Debug, Default)]
struct PoolState {
    groups: Vec<Weak<HostGroup>>,
    next: usize,
}

impl HostPool {
    /// A pool of at most `max_hosts` host processes (more only for FMUs
    /// that can be instantiated once per process).
    pub fn new(max_hosts: usize) -> HostPool {
        HostPool {
            max_hosts: max_hosts.max(1),
            state: Mutex::new(PoolState::default()),
        }
    }

    /// One host per processor beyond the master's, at least one.
    pub fn default_hosts() -> usize {
        cosim_core::parallel::processors().saturating_sub(1).max(1)
    }

    /// The host for the next FMU (`only_once`: its instantiation token, if
    /// it can be instantiated only once per process).
    fn group_for(&self, name: &str, fmu: &Fmu, only_once: Option<&str>) -> Result<Arc<HostGroup>> {
        let mut st = self
            .state
            .lock()
            .map_err(|_| config(name, "the host pool was poisoned by a panic"))?;
        let n = self.max_hosts;
        let first = st.next % n;
        st.next = st.next.wrapping_add(1);
        let order = (0..n).map(|k| (first + k) % n).chain(n..st.groups.len());
        for i in order.collect::<Vec<_>>() {
            let live = st.groups.get(i).and_then(Weak::upgrade);
            match live {
                Some(g) if !g.holds(only_once) => return Ok(g),
                Some(_) => {}
                None => {
                    let g = HostGroup::spawn(name, fmu)?;
                    if st.groups.len() <= i {
                        st.groups.resize_with(i + 1, Weak::new);
                    }
                    st.groups[i] = Arc::downgrade(&g);
                    return Ok(g);
                }
            }
        }
        let g = HostGroup::spawn(name, fmu)?;
        st.groups.push(Arc::downgrade(&g));
        Ok(g)
    }
}

/// A host process, shared by its members (the [`IsolatedSubsystem`]s it
/// serves).
struct HostGroup {
    _count: channel::HostCount,
    /// The host, leader of its own process group. It is reaped only by
    /// [`HostGroup::end`], after its group is killed: until then its
    /// process id names its group and nothing else.
    pid: u32,
    child: Mutex<Child>,
    /// The host's exit status, once reaped.
    reaped: Mutex<Option<ExitStatus>>,
    /// Futex words and what the host is doing.
    region: SharedRegion,
    io: Mutex<GroupIo>,
    tail: Arc<Tail>,
    members: Mutex<Vec<MemberInfo>>,
    /// Why the host is gone, once a member found out.
    failure: Mutex<Option<Failure>>,
    /// How long to wait, when the host has exited, for the rest of its
    /// standard error to be forwarded (ms).
    drain_ms: AtomicU64,
}

/// The socket, and answer frames read for other members than the one
/// reading.
struct GroupIo {
    socket: UnixStream,
    inbox: Vec<VecDeque<Reply>>,
}

/// A member as its host group knows it.
struct MemberInfo {
    name: String,
    version: FmiVersion,
    /// The master's opened FMU: its extraction directory, which the host
    /// loads, lives until the host is gone.
    fmu: Fmu,
    only_once: Option<String>,
}

/// How a host ended, as every member of its group reports it.
#[derive(Clone)]
struct Failure {
    subsystem: String,
    function: &'static str,
    t: Option<f64>,
    cause: String,
    log: Vec<String>,
    interrupted: bool,
}

impl HostGroup {
    /// Starts a host process for its first member, subsystem `name` of
    /// FMU `fmu` (named on its command line, for process listings).
    fn spawn(name: &str, fmu: &Fmu) -> Result<Arc<HostGroup>> {
        let (region, region_fd) = SharedRegion::create(GROUP_WORDS)
            .map_err(|e| config(name, format_args!("creating shared memory: {e}")))?;
        let program = host_program()?;
        let (socket, theirs) =
            UnixStream::pair().map_err(|e| config(name, format_args!("socketpair: {e}")))?;
        let mut command = Command::new(&program);
        command
            .arg("host")
            .arg("--fmu")
            .arg(fmu.source())
            // Its own process group: a Ctrl-C at the terminal reaches the
            // master only, which then ends the run and its hosts cleanly.
            .process_group(0)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::inherit())
            .stderr(Stdio::piped());
        if std::env::var_os("COSIM_LOG").is_none() {
            // The host logs (the FMUs' messages) at the master's level.
            let level = tracing::level_filters::LevelFilter::current().to_string();
            command.env("COSIM_LOG", level.to_lowercase());
        }
        let mut child = command.spawn().map_err(|e| {
            config(
                name,
                format_args!("cannot start the host process {}: {e}", program.display()),
            )
        })?;
        let tail = match child.stderr.take() {
            Some(stderr) => Tail::start(stderr, name),
            None => Tail::start_closed(),
        };
        let hello = send_region(&socket, region_fd.as_fd(), 0, 0);
        drop(region_fd);
        let group = Arc::new(HostGroup {
            _count: channel::HostCount::register(),
            pid: child.id(),
            child: Mutex::new(child),
            reaped: Mutex::new(None),
            region,
            io: Mutex::new(GroupIo {
                socket,
                inbox: Vec::new(),
            }),
            tail,
            members: Mutex::new(Vec::new()),
            failure: Mutex::new(None),
            drain_ms: AtomicU64::new(200),
        });
        if let Err(e) = hello {
            let f = group.fail(HostEnd::Io(e), Call::Load, name, FmiVersion::V2, None);
            return Err(f.into_error());
        }
        Ok(group)
    }

    /// Whether a member is an instance of the FMU with this token.
    fn holds(&self, only_once: Option<&str>) -> bool {
        only_once.is_some_and(|token| {
            self.members
                .lock()
                .is_ok_and(|m| m.iter().any(|x| x.only_once.as_deref() == Some(token)))
        })
    }

    /// Adds a member with this layout: its region, sent to the host.
    fn add_member(
        &self,
        info: MemberInfo,
        layout: &Layout,
    ) -> std::io::Result<(u32, SharedRegion)> {
        let (region, fd) = SharedRegion::create(layout.data_words())?;
        let mut members = self
            .members
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        let index = members.len() as u64;
        {
            let io = self
                .io
                .lock()
                .map_err(|_| std::io::Error::other("poisoned"))?;
            let words = ((layout.request_words as u64) << 32) | layout.response_words as u64;
            send_region(&io.socket, fd.as_fd(), index, words)?;
        }
        members.push(info);
        self.region.data()[MEMBERS_ADDED].store(index + 1, Ordering::SeqCst);
        let control = self.region.control();
        channel::ring(&control[DOORBELL], &control[HOST_SLEEPING]);
        Ok((index as u32, region))
    }

    /// The host's exit status if it has ended (without reaping it).
    fn ended(&self) -> std::io::Result<Option<ExitStatus>> {
        if let Some(status) = self.reaped.lock().ok().and_then(|r| *r) {
            return Ok(Some(status));
        }
        crate::sys::peek_exit(self.pid)
    }

    /// Kills the host's process group (the host, if it still runs, and
    /// every process the FMUs started in it, which would otherwise outlive
    /// the host), then reaps the host; returns its exit status.
    fn end(&self) -> std::io::Result<ExitStatus> {
        let mut reaped = self
            .reaped
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        if let Some(status) = *reaped {
            return Ok(status);
        }
        let mut child = self
            .child
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        if let Err(e) = crate::sys::kill_group(self.pid) {
            tracing::debug!("killing the process group {}: {e}", self.pid);
            let _ = child.kill();
        }
        let status = child.wait()?;
        *reaped = Some(status);
        Ok(status)
    }

    /// Ends the host for `end` (its process group killed, the host
    /// reaped) and says what happened to it.
    fn end_for(&self, end: HostEnd, timeout: Option<Duration>) -> String {
        let pid = self.pid;
        let status = match end {
            HostEnd::Exited(status) => Ok(status),
            HostEnd::Timeout => Err(format!(
                "no answer within {} s (isolation_timeout): the FMU's host process (pid {pid}) was killed",
                timeout.unwrap_or(DEFAULT_TIMEOUT).as_secs_f64()
            )),
            HostEnd::Interrupted => Err(format!(
                "interrupted while the FMU had not answered: its host process (pid {pid}) was killed"
            )),
            HostEnd::Io(e) => {
                // The socket failed: the host is most likely dying; give it
                // a moment to be reaped with its real status.
                let start = Instant::now();
                loop {
                    match self.ended() {
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
        // The host (if it still runs) and whatever the FMUs started die
        // with its process group; the host is reaped.
        let _ = self.end();
        match status {
            Ok(status) => format!(
                "the FMU's host process (pid {pid}) {}",
                describe_exit(status)
            ),
            Err(cause) => cause,
        }
    }

    /// The host ended (or must be ended): the first member to find out
    /// reaps it and describes what happened, naming the subsystem and the
    /// FMI call in progress and its time; every member reports the same.
    fn fail(
        &self,
        end: HostEnd,
        fallback: Call,
        caller: &str,
        caller_version: FmiVersion,
        timeout: Option<Duration>,
    ) -> Failure {
        let Ok(mut failure) = self.failure.lock() else {
            return Failure {
                subsystem: caller.to_string(),
                function: fallback.name(caller_version),
                t: None,
                cause: "the host process is gone".into(),
                log: Vec::new(),
                interrupted: false,
            };
        };
        if let Some(f) = failure.as_ref() {
            return f.clone();
        }
        let interrupted = matches!(end, HostEnd::Interrupted);
        let mut cause = self.end_for(end, timeout);
        let data = self.region.data();
        let mut call = Call::decode(data[CALL].load(Ordering::Relaxed));
        let t = f64::from_bits(data[CALL_TIME].load(Ordering::Relaxed));
        let member = usize::try_from(data[CALL_MEMBER].load(Ordering::Relaxed)).unwrap_or(0);
        let members = self.members.lock().ok();
        let named = members.as_ref().and_then(|m| m.get(member));
        let (subsystem, version, fmu) = match named {
            Some(m) if call != Call::Idle => (m.name.clone(), m.version, Some(&m.fmu)),
            _ => {
                call = fallback;
                let mine = members
                    .as_ref()
                    .and_then(|m| m.iter().find(|x| x.name == caller));
                (caller.to_string(), caller_version, mine.map(|m| &m.fmu))
            }
        };
        if call == Call::LoadLibrary {
            cause = format!(
                "{}: {cause} (in the library's initialisers: no FMI function had been called)",
                library_shown(fmu)
            );
        }
        let t = (!matches!(call, Call::Load | Call::LoadLibrary | Call::Instantiate)).then_some(t);
        drop(members);
        self.tail.wait_closed(Duration::from_millis(500));
        let f = Failure {
            subsystem,
            function: call.name(version),
            t,
            cause,
            log: self.tail.take(),
            interrupted,
        };
        if interrupted {
            // The run ends as interrupted; what was cut off is said here.
            tracing::warn!(
                "subsystem '{}': {}{}: {}",
                f.subsystem,
                f.function,
                f.t.map(|t| format!(" at t = {t}")).unwrap_or_default(),
                f.cause
            );
        }
        *failure = Some(f.clone());
        f
    }

    /// Member `member`'s answer frame: from the inbox, else read from the
    /// socket (keeping the other members' frames for them).
    fn frame_for(&self, member: u32, timeout: Duration) -> std::io::Result<Reply> {
        let mut io = self
            .io
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        if let Some(r) = io
            .inbox
            .get_mut(member as usize)
            .and_then(VecDeque::pop_front)
        {
            return Ok(r);
        }
        io.socket.set_read_timeout(Some(timeout))?;
        loop {
            let (tag, reply): (u32, Reply) = read_frame(&mut io.socket)?;
            if tag == member {
                return Ok(reply);
            }
            let tag = tag as usize;
            // (The count of members, not the members' lock: `add_member`
            // takes that one before this one.)
            if tag as u64 >= self.region.data()[MEMBERS_ADDED].load(Ordering::Relaxed) {
                return Err(std::io::Error::other(format!("an answer for member {tag}")));
            }
            if io.inbox.len() <= tag {
                io.inbox.resize_with(tag + 1, VecDeque::new);
            }
            io.inbox[tag].push_back(reply);
        }
    }

    /// Sends member `member`'s control request.
    fn send_control(
        &self,
        member: u32,
        request: &Control,
        timeout: Duration,
    ) -> std::io::Result<()> {
        let mut io = self
            .io
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        io.socket.set_write_timeout(Some(timeout))?;
        write_frame(&mut io.socket, &(member, request))
    }
}

impl Drop for HostGroup {
    /// Waits (at most a second) for the host to exit after its members
    /// were shut down; kills it if it has not. Either way, kills what is
    /// left of its process group.
    fn drop(&mut self) {
        let had_members = self.members.lock().is_ok_and(|m| !m.is_empty());
        if had_members {
            let start = Instant::now();
            while let Ok(None) = self.ended() {
                if start.elapsed() > Duration::from_secs(1) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let _ = self.end();
        self.tail
            .wait_closed(Duration::from_millis(self.drain_ms.load(Ordering::Relaxed)));
    }
}

/// The shared library of `fmu` as the user knows it: `<the .fmu>/<entry>`.
fn library_shown(fmu: Option<&Fmu>) -> String {
    match fmu {
        Some(fmu) => match fmu.library_entry() {
            Ok(entry) => format!("{}/{entry}", fmu.source().display()),
            Err(_) => format!("the shared library of {}", fmu.source().display()),
        },
        None => "the FMU's shared library".to_string(),
    }
}

impl Failure {
    fn into_error(self) -> CoreError {
        if self.interrupted {
            return CoreError::Interrupted {
                t: self.t.unwrap_or(f64::NAN),
            };
        }
        CoreError::HostProcess {
            subsystem: self.subsystem,
            function: self.function,
            t: self.t,
            cause: self.cause,
            log: self.log,
        }
    }
}

/// A member's link to its host.
struct MemberLink {
    group: Arc<HostGroup>,
    index: u32,
    region: SharedRegion,
    /// Number of the last request posted.
    seq: u32,
}

impl MemberLink {
    fn data(&self) -> &[AtomicU64] {
        self.region.data()
    }
}

impl Drop for MemberLink {
    /// Asks the host to free the instance (not answered); the host exits
    /// when its last member is freed.
    fn drop(&mut self) {
        if let Ok(None) = self.group.ended() {
            let data = self.region.data();
            data[1].store(Op::Shutdown.header(0, 0), Ordering::Relaxed);
            let seq = u64::from(self.seq.wrapping_add(1));
            data[0].store(seq << 32 | 1, Ordering::SeqCst);
            let control = self.group.region.control();
            channel::ring(&control[DOORBELL], &control[HOST_SLEEPING]);
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
    /// This FMU runs its Model Exchange interface.
    model_exchange: bool,
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
        let cs = fmu.co_simulation()?;
        let info = SubsystemInfo::from_model_description(
            md,
            name,
            inputs,
            observed,
            n_outputs,
            fmu.source().display().to_string(),
        );
        let layout = Layout::new(info.inputs.len(), info.observed.len());
        let mut sub = IsolatedSubsystem {
            info,
            string_names: Vec::new(),
            version: md.fmi_version,
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
            model_exchange: fmu.runs_model_exchange().is_some(),
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
            .can_be_instantiated_only_once_per_process
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
                let f = group.fail(HostEnd::Io(e), Call::Load, name, md.fmi_version, None);
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
        let f = link
            .group
            .fail(end, fallback, &name, self.version, Some(self.timeout));
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

/// Sends a region message: magic and version, two words (0, 0 for the
/// group region at start-up; a member's index and area lengths when it is
/// added), the master's process id, and the shared memory file descriptor.
fn send_region(
    socket: &UnixStream,
    region: std::os::fd::BorrowedFd<'_>,
    first: u64,
    second: u64,
) -> std::io::Result<()> {
    let mut payload = [0u8; 32];
    let head = u64::from(MAGIC) | (u64::from(VERSION) << 32);
    for (i, w) in [
        head,
        first,
        second,
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
        if self.model_exchange {
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
