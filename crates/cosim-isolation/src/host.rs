//! The host process (`cosim host`): loads the FMUs of its group of
//! subsystems and serves the master's requests until every instance is
//! shut down or the master is gone.
//!
//! The master extracts each `.fmu` once and hands its hosts the extracted
//! directory (in each instance's `Instantiate` request), which it keeps
//! while they run and removes when it is done with them, also after a host
//! died. Only when the master itself is gone (killed: it had no chance to
//! clean up) does a host remove those directories, and then kill its own
//! process group (itself and any process the FMUs started) rather than
//! serve nobody.
//!
//! Its standard input is a Unix socket to the master, on which the group's
//! shared memory region arrives first (`SCM_RIGHTS`), then each member's;
//! standard input is then replaced by `/dev/null`, so an FMU that reads it
//! does not read the protocol. Standard output is the master's; standard
//! error goes to the master, which forwards it and keeps its last lines for
//! error messages (all but the FMI call log's lines, when that goes to
//! standard error: those are only forwarded).

use std::collections::VecDeque;
use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cosim_core::FmuSubsystem;
use cosim_core::placement::KeepOff;
use cosim_core::subsystem::{RollbackTo, Subsystem};
use cosim_fmi::{Fmu, InstantiateOptions, StateHandle, StepOutcome};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};

use crate::channel;
use crate::protocol::{
    ANSWER_BELL, CALL, CALL_MEMBER, CALL_TIME, Call, Control, DOORBELL, EventUpdate,
    GROUP_REGION_WORDS, HOST_SLEEPING, HOST_SPIN_NS, HOST_YIELD_EVERY, LANE_DONE, LANE_FULL,
    LANE_GO, LANE_INPUTS, LANE_STEPPED, LaneSlot, Layout, MAGIC, MASTER_CPU, MASTER_SLEEPERS,
    MEMBERS_ADDED, Op, REGION_MESSAGE, RESP_AUX, RESP_AUX_F64, RESP_N, RESP_STATUS,
    RESPONSE_HEADER, Reply, STATUS_FRAME, STATUS_OK, STEP_COMPLETED, STEP_DISCARDED,
    STEP_EARLY_RETURN, STEP_EVENT, STEP_PREFETCHED, STEP_TERMINATED, VERSION, WireError,
    lane_reads, read_frame, write_frame,
};
use crate::sys::SharedRegion;

mod held_run;

/// Why a host process stopped other than by request.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// Setting up the process or reading the socket failed.
    #[error("cosim host: {0}")]
    Io(String),
    /// The master sent something this host does not understand.
    #[error("cosim host: protocol error: {0}")]
    Protocol(String),
}

fn io(what: &str) -> impl Fn(std::io::Error) -> HostError + '_ {
    move |e| HostError::Io(format!("{what}: {e}"))
}

/// The master's extraction directories this host loads FMUs from, removed
/// by [`master_gone`].
static EXTRACTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Serves the master's group of FMU instances until every one is shut
/// down or the master goes away. Called by `cosim host`.
pub fn serve() -> Result<(), HostError> {
    crate::sys::default_fault_signals().map_err(io("resetting the fault signals"))?;
    let master = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get().unsigned_abs());
    // Die with the master even when an FMU call never returns, and clean
    // up after it.
    let watch = crate::sys::watch_master(master).map_err(io("watching the master process"))?;
    let stdin = rustix::stdio::stdin();
    let (hello, region_fd, sender) = match receive_region(stdin) {
        Ok(hello) => hello,
        Err(e) if master_alive(master) => return Err(e),
        Err(_) => master_gone(),
    };
    // A master that died before this host asked for its parent: the
    // parent seen is a reaper, not the sender of the hello.
    if matches!(watch, crate::sys::MasterWatch::Gone) || (sender != 0 && sender != master) {
        master_gone();
    }
    if hello != [0, 0, 0] {
        return Err(HostError::Protocol("bad start-up message".into()));
    }
    if let crate::sys::MasterWatch::PidFd(fd) = watch {
        std::thread::Builder::new()
            .name("master-watch".into())
            .spawn(move || {
                crate::sys::wait_pidfd(&fd);
                master_gone();
            })
            .map_err(io("starting the thread watching the master"))?;
    }
    let socket = UnixStream::from(
        stdin
            .try_clone_to_owned()
            .map_err(io("duplicating the socket"))?,
    );
    let null = std::fs::File::open("/dev/null").map_err(io("/dev/null"))?;
    rustix::stdio::dup2_stdin(&null).map_err(|e| HostError::Io(format!("/dev/null: {e}")))?;
    let region = SharedRegion::open(region_fd).map_err(io("mapping the shared memory"))?;
    if region.data().len() < GROUP_REGION_WORDS {
        return Err(HostError::Protocol(
            "the shared memory region is smaller than its layout".into(),
        ));
    }
    let mut host = Host {
        control: region.control(),
        group: region.data(),
        io: Io {
            socket,
            inbox: Vec::new(),
        },
        members: Vec::new(),
        open: 0,
        placement: KeepOff::of_current_thread(),
        rounds_seen: 0,
    };
    host.run(master)
}

impl Host<'_> {
    /// Serves the members' requests until every member is shut down;
    /// between requests spins a while, then sleeps on the doorbell.
    fn run(&mut self, master: u32) -> Result<(), HostError> {
        let mut idle_since: Option<Instant> = None;
        let mut idle_scans: u32 = 0;
        let mut posted: Vec<Posted> = Vec::new();
        loop {
            let served = self.serve_posted(&mut posted)?;
            if !self.members.is_empty() && self.open == 0 {
                return Ok(());
            }
            if served {
                idle_since = None;
                continue;
            }
            // Nothing to do: spin a while (the master's next request is
            // often a few hundred nanoseconds away), then sleep.
            let since = *idle_since.get_or_insert_with(Instant::now);
            idle_scans = idle_scans.wrapping_add(1);
            if !idle_scans.is_multiple_of(64) {
                std::hint::spin_loop();
                continue;
            }
            let spin = Duration::from_nanos(self.group[HOST_SPIN_NS].load(Ordering::Relaxed));
            if since.elapsed() < spin {
                let every = u32::try_from(self.group[HOST_YIELD_EVERY].load(Ordering::Relaxed))
                    .unwrap_or(64)
                    .max(64);
                if idle_scans.is_multiple_of(every) {
                    self.keep_off_master();
                    std::thread::yield_now();
                }
                continue;
            }
            let control = self.control;
            let awake = channel::wait_until(
                || self.has_work(),
                &control[DOORBELL],
                &control[HOST_SLEEPING],
                Duration::ZERO,
                Duration::from_millis(100),
                || {
                    if master_alive(master) {
                        channel::Check::Continue
                    } else {
                        channel::Check::Stop
                    }
                },
                || {},
            );
            if !awake {
                master_gone();
            }
            self.keep_off_master();
            idle_since = None;
        }
    }

    /// Moves off the processor the master was last seen on, if this host
    /// is not already kept off it.
    fn keep_off_master(&mut self) {
        self.placement
            .avoid(channel::published_cpu(&self.group[MASTER_CPU]));
    }

    /// Serves every posted request; returns whether there was one. All
    /// the members' request words are read first, and every lane slot
    /// when the master sent a round (the loads overlap, where reading one
    /// and serving it before the next would wait for each in turn), then
    /// the posted ones served in member order; a round's end is told
    /// ([`LANE_DONE`]) once all its steps are answered.
    fn serve_posted(&mut self, posted: &mut Vec<Posted>) -> Result<bool, HostError> {
        posted.clear();
        let group = self.group;
        self.add_members()?;
        // Batches: every member's request word (lines the master writes
        // only for calls other than lane steps).
        posted.extend(self.members.iter().enumerate().filter_map(|(m, member)| {
            let word = member.request_word();
            (word as u32 != 0).then_some(Posted::Batch(m, word))
        }));
        // Steps: every lane slot, once the master sent a round (a member
        // has one request out at a time: in its region or its slot).
        let rounds = group[LANE_GO].load(Ordering::Acquire);
        let round = rounds != self.rounds_seen;
        if round {
            self.rounds_seen = rounds;
            posted.extend(self.members.iter().enumerate().filter_map(|(m, member)| {
                let (slot, word) = member.lane_posted(group)?;
                Some(Posted::Lane(m, slot, word))
            }));
        }
        // The answers' lines asked for at once, so that they travel back
        // from the master's processor together, not one per answer.
        for p in posted.iter() {
            match *p {
                Posted::Batch(m, _) => {
                    let member = &self.members[m];
                    crate::sys::prefetch_for_write(&member.region.data()[member.layout.response]);
                }
                Posted::Lane(_, slot, _) => crate::sys::prefetch_for_write(&group[slot.answer]),
            }
        }
        for &p in posted.iter() {
            match p {
                Posted::Batch(m, word) => self.serve(m, word)?,
                Posted::Lane(m, slot, word) => self.serve_lane(m, slot, word)?,
            }
        }
        if round {
            // After the round's answers (a round may find none: its steps
            // were served with an earlier round's).
            group[LANE_DONE].store(rounds, Ordering::Release);
        }
        if posted.is_empty() && !round {
            return Ok(false);
        }
        // Once for the answers of the scan (a fence waits for every store
        // before it to reach the other processor): a sleeping master is
        // woken after the scan's last answer, not its first.
        self.ring();
        Ok(true)
    }
}

/// True while `master` is this process's parent.
fn master_alive(master: u32) -> bool {
    rustix::process::getppid().map(|p| p.as_raw_nonzero().get().unsigned_abs()) == Some(master)
}

/// The master is gone without having cleaned up (it was killed): removes
/// the extraction directories it shared with this host (only ones named as
/// extraction directories), and the master's other extraction directories
/// and its lock file now that no process holds it
/// (`cosim_fmi::extraction::remove_orphaned`), then kills this host's
/// process group: the host, mid-call or not, and whatever the FMUs started.
fn master_gone() -> ! {
    let dirs = EXTRACTED.lock().map(|d| d.clone()).unwrap_or_default();
    for dir in &dirs {
        // Other hosts of the same master may be removing them too.
        cosim_fmi::extraction::remove_orphaned(dir);
    }
    crate::sys::kill_own_group();
    cosim_fmi::ffi::exit_process(1)
}

/// Reads a region message (the group's at start-up, a member's when it is
/// added): magic and version, three words, the master's process id, and
/// the shared memory file descriptor.
fn receive_region(socket: impl std::os::fd::AsFd) -> Result<([u64; 3], OwnedFd, u32), HostError> {
    let mut payload = [0u8; REGION_MESSAGE];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut cmsg = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        &socket,
        &mut [IoSliceMut::new(&mut payload)],
        &mut cmsg,
        RecvFlags::CMSG_CLOEXEC | RecvFlags::WAITALL,
    )
    .map_err(|e| {
        HostError::Io(format!(
            "reading a start-up message from standard input (cosim host is started by cosim run, not by hand): {e}"
        ))
    })?;
    let mut fd = None;
    for msg in cmsg.drain() {
        if let RecvAncillaryMessage::ScmRights(mut fds) = msg {
            fd = fd.or_else(|| fds.next());
        }
    }
    let word = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&payload[i..i + 8]);
        u64::from_le_bytes(b)
    };
    let head = word(0);
    if got.bytes != payload.len() || head as u32 != MAGIC || (head >> 32) as u32 != VERSION {
        return Err(HostError::Protocol(
            "bad start-up message (a cosim of another version?)".into(),
        ));
    }
    let fd =
        fd.ok_or_else(|| HostError::Protocol("no shared memory in the start-up message".into()))?;
    let sender = u32::try_from(word(32)).unwrap_or(0);
    Ok(([word(8), word(16), word(24)], fd, sender))
}

/// A request a scan found: a batch in a member's region (its first
/// word), or a step in its lane slot (the slot and its first word).
#[derive(Debug, Clone, Copy)]
enum Posted {
    Batch(usize, u64),
    Lane(usize, LaneSlot, u64),
}

#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    /// The member was shut down.
    Closed,
}

/// The host: its group region, its socket, its members.
struct Host<'r> {
    /// The group region's control words ([`DOORBELL`], ...).
    control: &'r [AtomicU32],
    /// The group region's data words ([`CALL`], ...).
    group: &'r [AtomicU64],
    io: Io,
    members: Vec<Member<'r>>,
    /// Members not shut down yet.
    open: usize,
    /// Keeps this host off the master's processor ([`MASTER_CPU`]).
    placement: KeepOff,
    /// [`LANE_GO`] when the lane slots were last read.
    rounds_seen: u64,
}

/// The socket, and the control frames read for other members than the
/// one being served (tagged frames may arrive in another order than the
/// batches are served).
struct Io {
    socket: UnixStream,
    inbox: Vec<VecDeque<Control>>,
}

impl Io {
    /// The next control frame for `member`.
    fn control_for(&mut self, member: usize) -> std::io::Result<Control> {
        if let Some(c) = self.inbox.get_mut(member).and_then(VecDeque::pop_front) {
            return Ok(c);
        }
        loop {
            let (tag, control): (u32, Control) = read_frame(&mut self.socket)?;
            let tag = tag as usize;
            if tag == member {
                return Ok(control);
            }
            if tag >= self.inbox.len() {
                if tag > 1 << 20 {
                    return Err(std::io::Error::other(format!("a request for member {tag}")));
                }
                self.inbox.resize_with(tag + 1, VecDeque::new);
            }
            self.inbox[tag].push_back(control);
        }
    }
}

impl<'r> Host<'r> {
    /// Maps the regions of the members the master added since the last
    /// look (each a message on the socket).
    fn add_members(&mut self) -> Result<(), HostError> {
        let added = self.group[MEMBERS_ADDED].load(Ordering::Acquire);
        while (self.members.len() as u64) < added {
            let ([index, words, lane], fd, _) = receive_region(&self.io.socket)?;
            if index != self.members.len() as u64 {
                return Err(HostError::Protocol(format!(
                    "member {index} added as member {}",
                    self.members.len()
                )));
            }
            let layout = Layout::from_words((words >> 32) as usize, words as u32 as usize);
            if layout.request_words > 1 << 28 || layout.response_words > 1 << 28 {
                return Err(HostError::Protocol("bad member layout".into()));
            }
            let region = SharedRegion::open(fd).map_err(io("mapping a member's shared memory"))?;
            if region.data().len() < layout.data_words() {
                return Err(HostError::Protocol(
                    "a member's shared memory region is smaller than its layout".into(),
                ));
            }
            self.members.push(Member {
                group: self.group,
                index: self.members.len(),
                region,
                layout,
                lane: LaneSlot::decode(lane),
                lane_seen: 0,
                name: String::new(),
                sub: None,
                pending: None,
                states: Vec::new(),
                prefetch_error: None,
                held_plan: None,
                time: 0.0,
                header: Header::default(),
                values: Vec::new(),
                out: Vec::new(),
            });
            self.open += 1;
        }
        Ok(())
    }

    /// Whether a member has a request or a member was added (the host's
    /// condition to wake up).
    fn has_work(&self) -> bool {
        self.group[MEMBERS_ADDED].load(Ordering::SeqCst) != self.members.len() as u64
            || self
                .members
                .iter()
                .any(|m| m.region.data()[m.layout.request].load(Ordering::SeqCst) as u32 != 0)
            || self.group[LANE_GO].load(Ordering::SeqCst) != self.rounds_seen
    }

    /// Serves member `m`'s batch (`word`: its request's first word) and
    /// answers it.
    /// Wakes the master's threads that sleep waiting for an answer.
    fn ring(&self) {
        channel::ring(&self.control[ANSWER_BELL], &self.control[MASTER_SLEEPERS]);
    }

    /// Serves member `m`'s step posted in its lane slot (`word`: the
    /// request's first word) and answers it: in the lane when the step
    /// completed, else in its response area as a batch is answered, the
    /// lane saying so.
    fn serve_lane(&mut self, m: usize, slot: LaneSlot, word: u64) -> Result<(), HostError> {
        let group = self.group;
        let member = &mut self.members[m];
        let seq = word >> 32;
        let code = if member.lane_step(group, slot, word)? {
            LANE_STEPPED
        } else {
            // (The response area's answer first: the master reads it once
            // it sees the lane's.)
            member.region.data()[member.layout.response].store(seq, Ordering::Release);
            LANE_FULL
        };
        let frame = member.pending.take();
        group[slot.answer].store(seq << 32 | code, Ordering::Release);
        self.answered(m, frame)
    }

    fn serve(&mut self, m: usize, word: u64) -> Result<(), HostError> {
        let member = &mut self.members[m];
        if word as u32 == 1
            && let Some((Op::HeldRun, _, _)) = Op::decode(member.word(member.layout.request + 1))
        {
            return self.serve_held_run(m, word);
        }
        let seq = word >> 32;
        let flow = member.batch(word as u32 as u64, &mut self.io)?;
        let req = member.layout.request;
        member.set_word(req, 0);
        if flow == Flow::Closed {
            self.open = self.open.saturating_sub(1);
            return Ok(()); // not answered
        }
        // Answer (the frame, if any, goes after the answer: a large one may
        // exceed the socket buffer and needs the master reading).
        let frame = member.pending.take();
        member.region.data()[member.layout.response].store(seq, Ordering::Release);
        self.answered(m, frame)
    }

    /// After member `m`'s answer is stored: wakes a master seen asleep
    /// (also one that reads a frame after the answer; one that may just
    /// be falling asleep is woken after the scan, by `serve_posted`), and
    /// sends the answer's frame, if any.
    fn answered(&mut self, m: usize, frame: Option<Reply>) -> Result<(), HostError> {
        if frame.is_some() || self.control[MASTER_SLEEPERS].load(Ordering::Relaxed) != 0 {
            self.ring();
        }
        if let Some(frame) = frame {
            write_frame(&mut self.io.socket, &(m as u32, frame))
                .map_err(io("writing to the master"))?;
        }
        Ok(())
    }
}

/// One FMU instance of the host's group.
struct Member<'r> {
    group: &'r [AtomicU64],
    index: usize,
    region: SharedRegion,
    layout: Layout,
    /// Its slot in the step lane, if it has one.
    lane: Option<LaneSlot>,
    /// The sequence number of the last step served from the lane.
    lane_seen: u32,
    name: String,
    sub: Option<FmuSubsystem>,
    /// The answer frame of the last batch, if it has one.
    pending: Option<Reply>,
    /// Saved FMU states by id (the master holds the ids).
    states: Vec<Option<StateHandle>>,
    /// The error of the read made right after a step, for the master's
    /// next `get_observed`.
    prefetch_error: Option<WireError>,
    /// The members and connections of its held runs
    /// ([`Control::HeldRunPlan`]), and what they need.
    held_plan: Option<held_run::PreparedPlan>,
    /// Current communication point, for the crash report.
    time: f64,
    /// The response header of the batch being served.
    header: Header,
    values: Vec<f64>,
    out: Vec<f64>,
}

/// The words of a response's header a batch's ops give ([`RESP_AUX`],
/// [`RESP_N`]), stored with the answer at the batch's end.
#[derive(Default)]
struct Header {
    aux: u64,
    n: u64,
}

/// The answer of a batch beyond the response area.
type Answer = Result<Option<Reply>, WireError>;

impl Member<'_> {
    fn data(&self) -> &[AtomicU64] {
        self.region.data()
    }

    fn word(&self, i: usize) -> u64 {
        self.data()[i].load(Ordering::Relaxed)
    }

    fn set_word(&self, i: usize, v: u64) {
        self.data()[i].store(v, Ordering::Relaxed);
    }

    /// The first word of the request area (non-zero: a batch is posted).
    fn request_word(&self) -> u64 {
        self.data()[self.layout.request].load(Ordering::Acquire)
    }

    /// The first word of a step posted in its lane slot and not served
    /// yet, with the slot.
    fn lane_posted(&self, group: &[AtomicU64]) -> Option<(LaneSlot, u64)> {
        // (None for a member shut down: a step it posted and never sent.)
        self.sub.as_ref()?;
        let slot = self.lane?;
        let word = group[slot.request].load(Ordering::SeqCst);
        let seq = (word >> 32) as u32;
        (seq != 0 && seq != self.lane_seen).then_some((slot, word))
    }

    /// Serves a step posted in the lane as the batch `[SetInputs,
    /// DoStep]` is served (the same calls, the same answer). Returns true
    /// when it answered in the lane (a completed step and its observed
    /// values); else the answer is in the response area and
    /// `self.pending`, as `batch` leaves it, for the master to read there.
    fn lane_step(
        &mut self,
        group: &[AtomicU64],
        slot: LaneSlot,
        word: u64,
    ) -> Result<bool, HostError> {
        self.lane_seen = (word >> 32) as u32;
        // (As a batch: what a failed read after the last step left is
        // for a `GetObserved` that comes first, not for a step.)
        self.prefetch_error = None;
        self.header = Header::default();
        let (n_in, n_obs) = self
            .sub
            .as_ref()
            .map_or((0, 0), |s| (s.info().inputs.len(), s.info().observed.len()));
        if !slot.fits(n_in, n_obs) {
            return Err(HostError::Protocol(format!(
                "member {}: its lane slot is smaller than its slots",
                self.index
            )));
        }
        let word_at = |i: usize| group[i].load(Ordering::Relaxed);
        let (t, h) = (
            f64::from_bits(word_at(slot.request + 1)),
            f64::from_bits(word_at(slot.request + 2)),
        );
        self.values.clear();
        if word & LANE_INPUTS != 0 {
            let first = slot.request + 3;
            self.values
                .extend((first..first + n_in).map(|i| f64::from_bits(word_at(i))));
        }
        let reads = lane_reads(word).min(n_obs);
        let values = std::mem::take(&mut self.values);
        let reply = self.set_and_step(t, h, &values, reads);
        self.values = values;
        let prefetched = self.header.aux & STEP_PREFETCHED != 0;
        if reply.is_none() && self.header.aux & 0xff == STEP_COMPLETED && (prefetched || reads == 0)
        {
            if prefetched {
                for (i, v) in self.out[..reads].iter().enumerate() {
                    group[slot.answer + 1 + i].store(v.to_bits(), Ordering::Relaxed);
                }
            }
            return Ok(true);
        }
        if prefetched {
            let out = std::mem::take(&mut self.out);
            self.write_values(&out[..reads]);
            self.out = out;
        }
        self.finish_answer(reply);
        Ok(false)
    }

    /// The batch `[SetInputs, DoStep]` of a step with the inputs `u` (no
    /// set call without inputs): its frame, if any, its code in `header`,
    /// the first `reads` observed values read after it in `out`, as
    /// `batch` leaves them.
    fn set_and_step(&mut self, t: f64, h: f64, u: &[f64], reads: usize) -> Option<Reply> {
        if !u.is_empty() {
            self.calling(Call::SetReal, self.time);
            let r = self
                .sub()
                .and_then(|s| s.set_inputs(u).map_err(WireError::from_core));
            if let Err(error) = r {
                self.calling(Call::Idle, self.time);
                return Some(Reply::Failed { op: 0, error });
            }
        }
        let reply = match self.step(t, h, reads) {
            Ok(r) => r,
            Err(error) => {
                let op = u32::from(!u.is_empty());
                Some(Reply::Failed { op, error })
            }
        };
        self.calling(Call::Idle, self.time);
        reply
    }

    fn calling(&self, call: Call, t: f64) {
        self.group[CALL_MEMBER].store(self.index as u64, Ordering::Relaxed);
        self.group[CALL].store(call as u64, Ordering::Relaxed);
        self.group[CALL_TIME].store(t.to_bits(), Ordering::Relaxed);
    }

    fn sub(&mut self) -> Result<&mut FmuSubsystem, WireError> {
        self.sub
            .as_mut()
            .ok_or_else(|| WireError::Other("the FMU is not instantiated yet".into()))
    }

    /// Runs one batch of `n_ops` ops; leaves its answer in the response
    /// area and, when it has a frame, in `self.pending`.
    fn batch(&mut self, n_ops: u64, io: &mut Io) -> Result<Flow, HostError> {
        let req = self.layout.request;
        let end = req + self.layout.request_words;
        let stash = self.prefetch_error.take();
        self.header = Header::default();
        let mut pos = req + 1;
        let mut reply = None;
        for i in 0..n_ops {
            let (op, arg, len) = (pos < end)
                .then(|| Op::decode(self.word(pos)))
                .flatten()
                .filter(|&(_, _, len)| pos + 1 + len <= end)
                .ok_or_else(|| HostError::Protocol(format!("bad op {i} in the request")))?;
            let p = pos + 1;
            pos = p + len;
            if op == Op::Shutdown {
                self.calling(Call::FreeInstance, self.time);
                drop(self.sub.take());
                self.calling(Call::Idle, self.time);
                return Ok(Flow::Closed);
            }
            let result = match (i == 0 && op == Op::GetObserved, &stash) {
                (true, Some(e)) => Err(e.clone()),
                _ => self.op(op, arg, p, len, io),
            };
            match result {
                Ok(None) => {}
                Ok(Some(r)) => reply = Some(r),
                Err(error) => {
                    // Which op failed; the later ones are not run.
                    reply = Some(Reply::Failed {
                        op: u32::try_from(i).unwrap_or(u32::MAX),
                        error,
                    });
                    break;
                }
            }
        }
        self.calling(Call::Idle, self.time);
        self.finish_answer(reply);
        Ok(Flow::Continue)
    }

    /// Writes the response header of the batch served (its values are
    /// written), and keeps its frame for after the answer. The header
    /// last: the master spins on this line, and a store to it before the
    /// FMU's calls would fetch it from the master's processor once for
    /// those stores and again for the answer.
    fn finish_answer(&mut self, reply: Option<Reply>) {
        let status = if reply.is_some() {
            STATUS_FRAME
        } else {
            STATUS_OK
        };
        let resp = self.layout.response;
        self.set_word(resp + RESP_STATUS, status);
        self.set_word(resp + RESP_AUX, self.header.aux);
        self.set_word(resp + RESP_N, self.header.n);
        self.pending = reply;
    }

    fn read_values(&mut self, p: usize, len: usize) {
        self.values.clear();
        for i in 0..len {
            let bits = self.word(p + i);
            self.values.push(f64::from_bits(bits));
        }
    }

    fn write_values(&mut self, values: &[f64]) {
        let base = self.layout.response + RESPONSE_HEADER;
        for (i, v) in values.iter().enumerate() {
            self.set_word(base + i, v.to_bits());
        }
        self.header.n = values.len() as u64;
    }

    fn state(&self, id: u64) -> Result<StateHandle, WireError> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.states.get(i).copied().flatten())
            .ok_or_else(|| {
                WireError::Config(format!(
                    "subsystem '{}': unknown or freed state id {id}",
                    self.name
                ))
            })
    }

    /// `doStep`; after a completed step, the first `reads` observed
    /// values (at most all of them) read into `self.out` (in the same
    /// round trip: the master reads what it needs right after every
    /// step), which `header.aux` then says ([`STEP_PREFETCHED`]); after
    /// another outcome, the last successful time in the response area.
    fn step(&mut self, t: f64, h: f64, reads: usize) -> Answer {
        let core = WireError::from_core;
        self.calling(Call::DoStep, t);
        let outcome = self.sub()?.do_step(t, h).map_err(core)?;
        match outcome {
            StepOutcome::Completed => {
                self.time = t + h;
                let mut code = STEP_COMPLETED;
                let reads = reads.min(self.sub()?.info().observed.len());
                if reads == 0 {
                    self.header.aux = code;
                    return Ok(None);
                }
                self.calling(Call::GetReal, self.time);
                let mut out = std::mem::take(&mut self.out);
                match self.sub()?.get_observed_first(reads, &mut out) {
                    Ok(()) => code |= STEP_PREFETCHED,
                    Err(e) => self.prefetch_error = Some(core(e)),
                }
                self.out = out;
                self.header.aux = code;
                Ok(None)
            }
            other => self.step_ended_otherwise(other),
        }
    }

    /// The answer of a step that ended with `outcome`, not completed: its
    /// code, the last successful time in the response area, and the
    /// FMU's last log lines where the step failed.
    fn step_ended_otherwise(&mut self, outcome: StepOutcome) -> Answer {
        let resp = self.layout.response;
        match outcome {
            StepOutcome::Completed => Ok(None),
            StepOutcome::EarlyReturn {
                last_successful_time,
            }
            | StepOutcome::EventHandlingNeeded {
                last_successful_time,
            } => {
                let event = matches!(outcome, StepOutcome::EventHandlingNeeded { .. });
                self.time = last_successful_time;
                let code = if event { STEP_EVENT } else { STEP_EARLY_RETURN };
                self.header.aux = code;
                self.set_word(resp + RESP_AUX_F64, last_successful_time.to_bits());
                // (An event is no failure: no log lines to show.)
                if event {
                    return Ok(None);
                }
                Ok(Some(Reply::Log(self.sub()?.take_recent_log())))
            }
            StepOutcome::Discarded {
                last_successful_time,
            }
            | StepOutcome::Terminated {
                last_successful_time,
            } => {
                let code = if matches!(outcome, StepOutcome::Terminated { .. }) {
                    STEP_TERMINATED
                } else {
                    STEP_DISCARDED
                };
                self.time = last_successful_time;
                self.header.aux = code;
                self.set_word(resp + RESP_AUX_F64, last_successful_time.to_bits());
                Ok(Some(Reply::Log(self.sub()?.take_recent_log())))
            }
        }
    }

    /// Runs one op of a batch.
    fn op(&mut self, op: Op, arg: u8, p: usize, len: usize, io: &mut Io) -> Answer {
        let core = WireError::from_core;
        let fmi = WireError::from_fmi;
        let t = self.time;
        match op {
            Op::SetInputs | Op::SetInputDerivatives => {
                self.read_values(p, len);
                let values = std::mem::take(&mut self.values);
                let r = if op == Op::SetInputs {
                    self.calling(Call::SetReal, t);
                    self.sub().and_then(|s| s.set_inputs(&values).map_err(core))
                } else {
                    self.calling(Call::SetInputDerivatives, t);
                    self.sub().and_then(|s| {
                        s.set_input_derivatives(u32::from(arg), &values)
                            .map_err(core)
                    })
                };
                self.values = values;
                r.map(|()| None)
            }
            Op::DoStep => {
                let (t, h) = (
                    f64::from_bits(self.word(p)),
                    f64::from_bits(self.word(p + 1)),
                );
                let reads = if len > 2 {
                    usize::try_from(self.word(p + 2)).unwrap_or(usize::MAX)
                } else {
                    usize::MAX
                };
                let answer = self.step(t, h, reads);
                if self.header.aux & STEP_PREFETCHED != 0 {
                    let reads = reads.min(self.out.len());
                    let out = std::mem::take(&mut self.out);
                    self.write_values(&out[..reads]);
                    self.out = out;
                }
                answer
            }
            Op::GetObserved => {
                // (Those the master asks for: the first so many, or those
                // from a slot on; it has the others.)
                let word = |i: usize| usize::try_from(self.word(p + i)).unwrap_or(usize::MAX);
                let (first, end) = if len >= 2 {
                    (word(0), word(1))
                } else {
                    (0, usize::MAX)
                };
                self.calling(Call::GetReal, t);
                let mut out = std::mem::take(&mut self.out);
                let n = out.len();
                let r = self.sub().and_then(|s| {
                    match (first, end) {
                        (0, end) if end >= n => s.get_observed(&mut out),
                        (0, end) => s.get_observed_first(end, &mut out),
                        (first, _) => s.get_observed_from(first.min(n), &mut out),
                    }
                    .map_err(core)
                });
                if r.is_ok() {
                    self.write_values(&out);
                }
                self.out = out;
                r.map(|()| None)
            }
            Op::GetOutputDerivatives => {
                self.calling(Call::GetOutputDerivatives, t);
                let mut out = std::mem::take(&mut self.out);
                let n = self.sub()?.info().n_outputs;
                let r = self.sub().and_then(|s| {
                    s.get_output_derivatives(u32::from(arg), &mut out[..n])
                        .map_err(core)
                });
                if r.is_ok() {
                    self.write_values(&out[..n]);
                }
                self.out = out;
                r.map(|()| None)
            }
            Op::SaveState => {
                let reuse = self.word(p);
                self.calling(Call::GetState, t);
                let id = if reuse == u64::MAX {
                    let h = self.sub()?.instance_mut().get_state(None).map_err(fmi)?;
                    self.states.push(Some(h));
                    (self.states.len() - 1) as u64
                } else {
                    let h = self.state(reuse)?;
                    self.sub()?.instance_mut().get_state(Some(h)).map_err(fmi)?;
                    reuse
                };
                self.header.aux = id;
                Ok(None)
            }
            Op::RestoreState => {
                let h = self.state(self.word(p))?;
                self.calling(Call::SetState, t);
                self.sub()?.instance_mut().set_state(h).map_err(fmi)?;
                Ok(None)
            }
            Op::FreeState => {
                let id = self.word(p);
                let h = self.state(id)?;
                self.calling(Call::FreeState, t);
                self.sub()?.instance_mut().free_state(h).map_err(fmi)?;
                if let Some(slot) = usize::try_from(id)
                    .ok()
                    .and_then(|i| self.states.get_mut(i))
                {
                    *slot = None;
                }
                Ok(None)
            }
            Op::EnterInitialization => {
                let t0 = f64::from_bits(self.word(p));
                let stop = (self.word(p + 1) != 0).then(|| f64::from_bits(self.word(p + 2)));
                self.time = t0;
                self.calling(Call::EnterInitialization, t0);
                self.sub()?.enter_initialization(t0, stop).map_err(core)?;
                Ok(None)
            }
            Op::ExitInitialization => {
                self.calling(Call::ExitInitialization, t);
                self.sub()?.exit_initialization().map_err(core)?;
                Ok(None)
            }
            Op::Terminate => {
                self.calling(Call::Terminate, t);
                self.sub()?.terminate().map_err(core)?;
                Ok(None)
            }
            Op::Flush | Op::Shutdown => Ok(None),
            // (Served on its own: `Host::serve_held_run`.)
            Op::HeldRun => Err(WireError::Other(
                "a held run in a batch of other calls".into(),
            )),
            Op::Control => {
                let request = io
                    .control_for(self.index)
                    .map_err(|e| WireError::Other(format!("reading a request: {e}")))?;
                self.control(request)
            }
        }
    }

    fn control(&mut self, request: Control) -> Answer {
        let fmi = WireError::from_fmi;
        let core = WireError::from_core;
        let t = self.time;
        match request {
            Control::Instantiate {
                fmu,
                extracted,
                name,
                inputs,
                observed,
                n_outputs,
                logging_on,
                debug_categories,
                call_log,
                model_exchange,
                scheduled_execution,
                event_mode_used,
                early_return_allowed,
            } => {
                let n_outputs = usize::try_from(n_outputs).unwrap_or(usize::MAX);
                self.calling(Call::Load, t);
                self.name = name;
                let fmu = match &extracted {
                    // The master's extraction, validated again here.
                    Some(dir) => {
                        if let Ok(mut dirs) = EXTRACTED.lock()
                            && !dirs.contains(dir)
                        {
                            dirs.push(dir.clone());
                        }
                        Fmu::open_extracted(dir, &fmu)
                    }
                    None => Fmu::open(&fmu),
                }
                .map_err(fmi)?;
                let fmu = match model_exchange {
                    Some(settings) => fmu.as_model_exchange(settings).map_err(fmi)?,
                    None if scheduled_execution => fmu.as_scheduled_execution().map_err(fmi)?,
                    None => fmu,
                };
                let md = fmu.model_description();
                if inputs
                    .iter()
                    .chain(&observed)
                    .any(|sv| sv.variable >= md.variables.len() || sv.shape.len() > 64)
                    || n_outputs > observed.len()
                {
                    return Err(WireError::Other(
                        "the slots do not match the model description".into(),
                    ));
                }
                let call_log = match call_log {
                    Some(target) => Some(target.open().map_err(|e| {
                        WireError::Other(format!("cannot open the FMI call log {target}: {e}"))
                    })?),
                    None => None,
                };
                // Loaded on its own, so that a crash in the library's
                // initialisers is not taken for one in fmi2Instantiate.
                self.calling(Call::LoadLibrary, t);
                fmu.load().map_err(fmi)?;
                self.calling(Call::Instantiate, t);
                let options = InstantiateOptions {
                    logging_on,
                    debug_categories,
                    call_log,
                    events: cosim_fmi::EventHandling {
                        event_mode_used,
                        early_return_allowed,
                    },
                    ..InstantiateOptions::default()
                };
                let sub = FmuSubsystem::instantiate(
                    &fmu, &self.name, &inputs, &observed, n_outputs, &options,
                )
                .map_err(WireError::from_core)?;
                self.out = vec![0.0; sub.info().observed.len()];
                self.sub = Some(sub);
                Ok(None)
            }
            Control::SetStartValues(values) => {
                self.sub()?
                    .set_start_values(values)
                    .map_err(WireError::from_core)?;
                Ok(None)
            }
            Control::AllowRollback(earlier) => {
                let to = if earlier {
                    RollbackTo::Earlier
                } else {
                    RollbackTo::StepStart
                };
                self.sub()?
                    .allow_rollback(to)
                    .map_err(WireError::from_core)?;
                Ok(None)
            }
            Control::SerializeState(id) => {
                let h = self.state(id)?;
                self.calling(Call::SerializeState, t);
                let bytes = self.sub()?.instance_mut().serialize_state(h).map_err(fmi)?;
                Ok(Some(Reply::State(bytes)))
            }
            Control::DeserializeState(bytes) => {
                self.calling(Call::DeserializeState, t);
                let h = self
                    .sub()?
                    .instance_mut()
                    .deserialize_state(&bytes)
                    .map_err(fmi)?;
                self.states.push(Some(h));
                Ok(Some(Reply::StateId((self.states.len() - 1) as u64)))
            }
            Control::FeedthroughJacobian => {
                let sub = self.sub()?;
                let info = sub.info();
                let mut jacobian = vec![0.0; info.n_outputs * info.inputs.len()];
                let known = sub
                    .feedthrough_jacobian(&mut jacobian)
                    .map_err(WireError::from_core)?;
                Ok(Some(Reply::Jacobian(known.then_some(jacobian))))
            }
            Control::SolverStatistics => {
                let stats = self.sub()?.instance_mut().model_exchange_statistics();
                Ok(Some(Reply::SolverStatistics(stats)))
            }
            Control::TraceStrings(vars) => {
                let sub = self.sub()?;
                let n = sub.instance_mut().model_description().variables.len();
                let vars: Vec<usize> = vars
                    .iter()
                    .map(|&v| usize::try_from(v).unwrap_or(usize::MAX))
                    .collect();
                if vars.iter().any(|&v| v >= n) {
                    return Err(WireError::Other(
                        "the traced strings do not match the model description".into(),
                    ));
                }
                sub.trace_strings(&vars);
                Ok(None)
            }
            Control::GetStrings => {
                self.calling(Call::GetString, t);
                let sub = self.sub()?;
                let mut values = vec![String::new(); sub.traced_strings().len()];
                sub.get_strings(&mut values).map_err(WireError::from_core)?;
                Ok(Some(Reply::Strings(values)))
            }
            Control::EnterEventMode => {
                self.calling(Call::EventMode, t);
                self.sub()?.enter_event_mode().map_err(core)?;
                Ok(None)
            }
            Control::UpdateDiscreteStates => {
                self.calling(Call::EventMode, t);
                let sub = self.sub()?;
                let update = sub.update_discrete_states().map_err(core)?;
                let tick = sub.next_clock_tick();
                Ok(Some(Reply::Events(EventUpdate::new(update, tick))))
            }
            Control::EnterStepMode => {
                self.calling(Call::EventMode, t);
                self.sub()?.enter_step_mode().map_err(core)?;
                Ok(None)
            }
            Control::NextClockTick => Ok(Some(Reply::ClockTick(self.sub()?.next_clock_tick()))),
            Control::HeldRunPlan(plan) => {
                self.held_plan = Some(held_run::PreparedPlan::new(plan));
                Ok(None)
            }
            Control::SetValues(values) => {
                self.calling(Call::SetValues, t);
                let sub = self.sub()?;
                let values: Vec<(usize, cosim_fmi::Value)> = values
                    .into_iter()
                    .map(|(v, x)| (usize::try_from(v).unwrap_or(usize::MAX), x))
                    .collect();
                sub.set_values(&values).map_err(WireError::from_core)?;
                Ok(None)
            }
        }
    }
}
