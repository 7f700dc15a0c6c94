//! The host processes of a run and what the master keeps of each:
//! [`HostPool`] assigns isolated FMUs to hosts, a [`HostGroup`] is one
//! host process (started, its members added, its end and failure told
//! once for all its members), a [`MemberLink`] is one FMU's place in its
//! host.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use cosim_core::{CoreError, Result};
use cosim_fmi::{FmiVersion, Fmu, Interface};
use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

use crate::channel;
use crate::isolated::{DEFAULT_TIMEOUT, config};
use crate::protocol::{
    CALL, CALL_MEMBER, CALL_TIME, Call, Control, DOORBELL, GROUP_REGION_WORDS, HOST_SLEEPING,
    LaneAlloc, LaneSlot, Layout, MAGIC, MEMBERS_ADDED, Op, REGION_MESSAGE, Reply, VERSION,
    read_frame, write_frame,
};
use crate::sys::SharedRegion;
use crate::tail::Tail;

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Names the program started as host (`<program> host --fmu ..
/// [--extracted ..] --name ..`, see [`crate::host::serve`]) for this
/// process; returns false if one was named already. Without it,
/// the `COSIM_HOST` environment variable, else the running executable if
/// it is `cosim`.
pub fn set_host_program(program: PathBuf) -> bool {
    PROGRAM.set(program).is_ok()
}

static HOST_LOG: OnceLock<String> = OnceLock::new();

/// The log filter of the hosts this process starts (`COSIM_LOG` of the
/// host; `warn`, `debug`, ...); returns false if one was set already.
/// Without it, `COSIM_LOG` of this process, else its level. An exported
/// FMU sets it: its importer's level means nothing to the hosts.
pub fn set_host_log(filter: &str) -> bool {
    HOST_LOG.set(filter.to_string()).is_ok()
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
    pub(crate) fn group_for(
        &self,
        name: &str,
        fmu: &Fmu,
        only_once: Option<&str>,
    ) -> Result<Arc<HostGroup>> {
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
pub(crate) struct HostGroup {
    _count: channel::HostCount,
    /// The host, leader of its own process group. It is reaped only by
    /// [`HostGroup::end`], after its group is killed: until then its
    /// process id names its group and nothing else.
    pub(crate) pid: u32,
    child: Mutex<Child>,
    /// The host's exit status, once reaped.
    reaped: Mutex<Option<ExitStatus>>,
    /// Futex words, what the host is doing, and the step lane.
    pub(crate) region: SharedRegion,
    /// The lane slots handed out so far (with `members`' lock).
    lane: Mutex<LaneAlloc>,
    /// The end of the lane's request slots handed out (a data word).
    pub(crate) lane_requests_end: AtomicUsize,
    /// Steps were posted in the lane since the last round was sent
    /// ([`crate::protocol::LANE_GO`]). Only the master's (a plain load and store: a
    /// locked instruction would wait for the stores of the round).
    pub(crate) lane_unsent: AtomicBool,
    /// Steps posted in the lane since the last round was sent.
    pub(crate) lane_posted_unsent: AtomicUsize,
    /// Members added so far (read at every step: the lane is used from
    /// `isolated::LANE_MIN_MEMBERS` on).
    pub(crate) member_count: AtomicUsize,
    io: Mutex<GroupIo>,
    pub(crate) tail: Arc<Tail>,
    members: Mutex<Vec<MemberInfo>>,
    /// Why the host is gone, once a member found out.
    pub(crate) failure: Mutex<Option<Failure>>,
    /// How long to wait, when the host has exited, for the rest of its
    /// standard error to be forwarded (ms).
    pub(crate) drain_ms: AtomicU64,
}

/// The socket, and answer frames read for other members than the one
/// reading.
struct GroupIo {
    socket: UnixStream,
    inbox: Vec<VecDeque<Reply>>,
}

/// A member as its host group knows it.
pub(crate) struct MemberInfo {
    pub(crate) name: String,
    pub(crate) version: FmiVersion,
    /// What it is instantiated for (the functions named in messages).
    pub(crate) interface: Interface,
    /// The master's opened FMU: its extraction directory, which the host
    /// loads, lives until the host is gone.
    pub(crate) fmu: Fmu,
    pub(crate) only_once: Option<String>,
}

/// How a host ended, as every member of its group reports it.
#[derive(Clone)]
pub(crate) struct Failure {
    pub(crate) subsystem: String,
    pub(crate) function: &'static str,
    pub(crate) t: Option<f64>,
    pub(crate) cause: String,
    pub(crate) log: Vec<String>,
    pub(crate) interrupted: bool,
}

impl HostGroup {
    /// Starts a host process for its first member, subsystem `name` of
    /// FMU `fmu` (named on its command line, for process listings).
    pub(crate) fn spawn(name: &str, fmu: &Fmu) -> Result<Arc<HostGroup>> {
        let (region, region_fd) = SharedRegion::create(GROUP_REGION_WORDS)
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
        if let Some(filter) = HOST_LOG.get() {
            command.env("COSIM_LOG", filter);
        } else if std::env::var_os("COSIM_LOG").is_none() {
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
        let hello = send_region(&socket, region_fd.as_fd(), [0, 0, 0]);
        drop(region_fd);
        let group = Arc::new(HostGroup {
            _count: channel::HostCount::register(),
            pid: child.id(),
            child: Mutex::new(child),
            reaped: Mutex::new(None),
            region,
            lane: Mutex::new(LaneAlloc::default()),
            lane_requests_end: AtomicUsize::new(0),
            lane_unsent: AtomicBool::new(false),
            lane_posted_unsent: AtomicUsize::new(0),
            member_count: AtomicUsize::new(0),
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
            let caller = (name, FmiVersion::V2, Interface::CoSimulation);
            let f = group.fail(HostEnd::Io(e), Call::Load, caller, None);
            return Err(f.into_error());
        }
        Ok(group)
    }

    /// Whether a member is an instance of the FMU with this token.
    pub(crate) fn holds(&self, only_once: Option<&str>) -> bool {
        only_once.is_some_and(|token| {
            self.members
                .lock()
                .is_ok_and(|m| m.iter().any(|x| x.only_once.as_deref() == Some(token)))
        })
    }

    /// Adds a member with this layout and these numbers of input and
    /// observed slots: its region, sent to the host with its lane slot (if
    /// the lane has room).
    pub(crate) fn add_member(
        &self,
        info: MemberInfo,
        layout: &Layout,
        (n_inputs, n_observed): (usize, usize),
    ) -> std::io::Result<(u32, SharedRegion, Option<LaneSlot>)> {
        let (region, fd) = SharedRegion::create(layout.data_words())?;
        let mut members = self
            .members
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        let index = members.len() as u64;
        let mut lane = self
            .lane
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        let slot = lane.slot(n_inputs, n_observed);
        if let Some(slot) = slot {
            let end = slot.request + LaneSlot::request_words(n_inputs);
            self.lane_requests_end.fetch_max(end, Ordering::Relaxed);
        }
        {
            let io = self
                .io
                .lock()
                .map_err(|_| std::io::Error::other("poisoned"))?;
            let words = ((layout.request_words as u64) << 32) | layout.response_words as u64;
            send_region(
                &io.socket,
                fd.as_fd(),
                [index, words, LaneSlot::encode(slot)],
            )?;
        }
        members.push(info);
        self.member_count.store(members.len(), Ordering::Relaxed);
        self.region.data()[MEMBERS_ADDED].store(index + 1, Ordering::SeqCst);
        let control = self.region.control();
        channel::ring(&control[DOORBELL], &control[HOST_SLEEPING]);
        Ok((index as u32, region, slot))
    }

    /// The host's exit status if it has ended (without reaping it).
    pub(crate) fn ended(&self) -> std::io::Result<Option<ExitStatus>> {
        if let Some(status) = self.reaped.lock().ok().and_then(|r| *r) {
            return Ok(Some(status));
        }
        crate::sys::peek_exit(self.pid)
    }

    /// Kills the host's process group (the host, if it still runs, and
    /// every process the FMUs started in it, which would otherwise outlive
    /// the host), then reaps the host; returns its exit status.
    pub(crate) fn end(&self) -> std::io::Result<ExitStatus> {
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
    pub(crate) fn end_for(&self, end: HostEnd, timeout: Option<Duration>) -> String {
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
    pub(crate) fn fail(
        &self,
        end: HostEnd,
        fallback: Call,
        (caller, caller_version, caller_interface): (&str, FmiVersion, Interface),
        timeout: Option<Duration>,
    ) -> Failure {
        let Ok(mut failure) = self.failure.lock() else {
            return Failure {
                subsystem: caller.to_string(),
                function: fallback.name(caller_version, caller_interface),
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
        let (subsystem, version, interface, fmu) = match named {
            Some(m) if call != Call::Idle => (m.name.clone(), m.version, m.interface, Some(&m.fmu)),
            _ => {
                call = fallback;
                let mine = members
                    .as_ref()
                    .and_then(|m| m.iter().find(|x| x.name == caller));
                let fmu = mine.map(|m| &m.fmu);
                (caller.to_string(), caller_version, caller_interface, fmu)
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
            function: call.name(version, interface),
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
    pub(crate) fn frame_for(&self, member: u32, timeout: Duration) -> std::io::Result<Reply> {
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
    pub(crate) fn send_control(
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
    pub(crate) fn into_error(self) -> CoreError {
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
pub(crate) struct MemberLink {
    pub(crate) group: Arc<HostGroup>,
    pub(crate) index: u32,
    pub(crate) region: SharedRegion,
    /// Its slot in the host's step lane, if it has one.
    pub(crate) lane: Option<LaneSlot>,
    /// Number of the last request posted (in its region or its lane
    /// slot: one count for both).
    pub(crate) seq: u32,
}

impl MemberLink {
    pub(crate) fn data(&self) -> &[AtomicU64] {
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

pub(crate) enum HostEnd {
    Exited(ExitStatus),
    Timeout,
    Io(std::io::Error),
    /// The run was interrupted (SIGINT / SIGTERM) while the host was in a
    /// call: the host is killed rather than waited for.
    Interrupted,
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

/// Sends a region message: magic and version, three words (zeros for the
/// group region at start-up; a member's index, area lengths and lane slot
/// when it is added), the master's process id, and the shared memory file
/// descriptor.
fn send_region(
    socket: &UnixStream,
    region: std::os::fd::BorrowedFd<'_>,
    [first, second, third]: [u64; 3],
) -> std::io::Result<()> {
    let mut payload = [0u8; REGION_MESSAGE];
    let head = u64::from(MAGIC) | (u64::from(VERSION) << 32);
    for (i, w) in [
        head,
        first,
        second,
        third,
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
