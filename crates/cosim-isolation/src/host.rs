//! The host process (`cosim host --fmu PATH [--extracted DIR] --name
//! NAME`): loads one FMU and serves the master's requests until told to
//! stop or until the master is gone.
//!
//! The master extracts each `.fmu` once and hands its hosts the extracted
//! directory (`--extracted`), which it keeps while they run and removes
//! when it is done with them, also after a host died. Only when the master
//! itself is gone (killed: it had no chance to clean up) does a host remove
//! that directory, and then kill its own process group (itself and any
//! process the FMU started) rather than serve nobody.
//!
//! Its standard input is a Unix socket to the master, on which the shared
//! memory region arrives first (`SCM_RIGHTS`); standard input is then
//! replaced by `/dev/null`, so an FMU that reads it does not read the
//! protocol. Standard output is the master's; standard error goes to the
//! master, which forwards it and keeps its last lines for error messages
//! (all but the FMI call log's lines, when that goes to standard error:
//! those are only forwarded).

use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cosim_core::FmuSubsystem;
use cosim_core::subsystem::{RollbackTo, Subsystem};
use cosim_fmi::{Fmu, InstantiateOptions, StateHandle, StepOutcome};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};

use crate::channel;
use crate::protocol::{
    CALL, CALL_TIME, Call, Control, HOST_SLEEPING, HOST_SPIN_NS, Layout, MAGIC, MASTER_SLEEPING,
    Op, REQ_SEQ, RESP_SEQ, RESPONSE_HEADER, Reply, STATUS_FRAME, STATUS_OK, STEP_COMPLETED,
    STEP_DISCARDED, STEP_EARLY_RETURN, STEP_PREFETCHED, STEP_TERMINATED, VERSION, WireError,
    read_frame, write_frame,
};
use crate::sys::SharedRegion;

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

/// Serves one FMU (the file `fmu`, extracted by the master into
/// `extracted` unless `fmu` is a directory; instance `name`) until the
/// master sends Shutdown or goes away. Called by `cosim host`.
pub fn serve(fmu: &Path, extracted: Option<&Path>, name: &str) -> Result<(), HostError> {
    crate::sys::default_fault_signals().map_err(io("resetting the fault signals"))?;
    let extracted = extracted.map(Path::to_path_buf);
    let master = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get().unsigned_abs());
    // Die with the master even when an FMU call never returns, and clean
    // up after it.
    let watch = crate::sys::watch_master(master).map_err(io("watching the master process"))?;
    let stdin = rustix::stdio::stdin();
    let (layout, region_fd, sender) = match receive_hello(stdin) {
        Ok(hello) => hello,
        Err(e) if master_alive(master) => return Err(e),
        Err(_) => master_gone(extracted.as_deref()),
    };
    // A master that died before this host asked for its parent: the
    // parent seen is a reaper, not the sender of the hello.
    if matches!(watch, crate::sys::MasterWatch::Gone) || (sender != 0 && sender != master) {
        master_gone(extracted.as_deref());
    }
    if let crate::sys::MasterWatch::PidFd(fd) = watch {
        let dir = extracted.clone();
        std::thread::Builder::new()
            .name("master-watch".into())
            .spawn(move || {
                crate::sys::wait_pidfd(&fd);
                master_gone(dir.as_deref());
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
    if region.data().len() < layout.data_words() {
        return Err(HostError::Protocol(
            "the shared memory region is smaller than its layout".into(),
        ));
    }
    let mut host = Host {
        region: &region,
        layout,
        socket,
        fmu_path: fmu.to_path_buf(),
        extracted: extracted.clone(),
        name: name.to_string(),
        sub: None,
        pending: None,
        states: Vec::new(),
        prefetch_error: None,
        time: 0.0,
        values: Vec::new(),
        out: Vec::new(),
    };
    let control = region.control();
    // Sequence numbers start at 0 (a new memfd is zeroed); the master may
    // have posted its first request already.
    let mut last = 0;
    loop {
        let seq = channel::wait(
            &control[REQ_SEQ],
            &control[HOST_SLEEPING],
            last,
            Duration::from_nanos(host.word(HOST_SPIN_NS)),
            Duration::from_millis(100),
            || {
                if master_alive(master) {
                    channel::Check::Continue
                } else {
                    channel::Check::Stop
                }
            },
        );
        let Some(seq) = seq else {
            master_gone(extracted.as_deref());
        };
        last = seq;
        if host.batch()? == Flow::Exit {
            return Ok(());
        }
        // Answer (the frame, if any, goes after the sequence number: a large
        // one may exceed the socket buffer and needs the master reading).
        let frame = host.reply_frame();
        channel::post(&control[RESP_SEQ], &control[MASTER_SLEEPING], seq);
        if let Some(frame) = frame {
            write_frame(&mut host.socket, &frame).map_err(io("writing to the master"))?;
        }
    }
}

/// True while `master` is this process's parent.
fn master_alive(master: u32) -> bool {
    rustix::process::getppid().map(|p| p.as_raw_nonzero().get().unsigned_abs()) == Some(master)
}

/// The master is gone without having cleaned up (it was killed): removes
/// the extraction directory it shared with this host (only one named as
/// an extraction directory), and the master's other extraction directories
/// and its lock file now that no process holds it
/// (`cosim_fmi::extraction::remove_orphaned`), then kills this host's
/// process group: the host, mid-call or not, and whatever the FMU started.
fn master_gone(extracted: Option<&Path>) -> ! {
    if let Some(dir) = extracted {
        // Other hosts of the same master may be removing them too.
        cosim_fmi::extraction::remove_orphaned(dir);
    }
    crate::sys::kill_own_group();
    cosim_fmi::ffi::exit_process(1)
}

/// Reads the start-up message: magic, version, the layout, the master's
/// process id, and the shared memory file descriptor.
fn receive_hello(socket: impl std::os::fd::AsFd) -> Result<(Layout, OwnedFd, u32), HostError> {
    let mut payload = [0u8; 32];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut cmsg = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        &socket,
        &mut [IoSliceMut::new(&mut payload)],
        &mut cmsg,
        RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(|e| {
        HostError::Io(format!(
            "reading the start-up message from standard input (cosim host is started by cosim run, not by hand): {e}"
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
    let req = usize::try_from(word(8)).unwrap_or(usize::MAX);
    let resp = usize::try_from(word(16)).unwrap_or(usize::MAX);
    if req > 1 << 28 || resp > 1 << 28 {
        return Err(HostError::Protocol(
            "bad layout in the start-up message".into(),
        ));
    }
    let sender = u32::try_from(word(24)).unwrap_or(0);
    Ok((Layout::from_words(req, resp), fd, sender))
}

#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Exit,
}

struct Host<'r> {
    region: &'r SharedRegion,
    layout: Layout,
    socket: UnixStream,
    fmu_path: PathBuf,
    /// Where the master extracted the FMU (its directory, not ours).
    extracted: Option<PathBuf>,
    name: String,
    sub: Option<FmuSubsystem>,
    /// The answer frame of the last batch, if it has one.
    pending: Option<Reply>,
    /// Saved FMU states by id (the master holds the ids).
    states: Vec<Option<StateHandle>>,
    /// The error of the read made right after a step, for the master's
    /// next `get_observed`.
    prefetch_error: Option<WireError>,
    /// Current communication point, for the crash report.
    time: f64,
    values: Vec<f64>,
    out: Vec<f64>,
}

/// The answer of a batch beyond the response area.
type Answer = Result<Option<Reply>, WireError>;

impl Host<'_> {
    fn data(&self) -> &[AtomicU64] {
        self.region.data()
    }

    fn word(&self, i: usize) -> u64 {
        self.data()[i].load(Ordering::Relaxed)
    }

    fn set_word(&self, i: usize, v: u64) {
        self.data()[i].store(v, Ordering::Relaxed);
    }

    fn calling(&self, call: Call, t: f64) {
        self.set_word(CALL, call as u64);
        self.set_word(CALL_TIME, t.to_bits());
    }

    fn sub(&mut self) -> Result<&mut FmuSubsystem, WireError> {
        self.sub
            .as_mut()
            .ok_or_else(|| WireError::Other("the FMU is not instantiated yet".into()))
    }

    /// Runs one batch; leaves its answer in the response area and, when it
    /// has a frame, in `self.pending`.
    fn batch(&mut self) -> Result<Flow, HostError> {
        let req = self.layout.request;
        let end = req + self.layout.request_words;
        let n_ops = self.word(req);
        let stash = self.prefetch_error.take();
        let resp = self.layout.response;
        self.set_word(resp, STATUS_OK);
        self.set_word(resp + 1, 0);
        self.set_word(resp + 3, 0);
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
                return Ok(Flow::Exit);
            }
            let result = match (i == 0 && op == Op::GetObserved, &stash) {
                (true, Some(e)) => Err(e.clone()),
                _ => self.op(op, arg, p, len),
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
        if reply.is_some() {
            self.set_word(resp, STATUS_FRAME);
        }
        self.pending = reply;
        Ok(Flow::Continue)
    }

    fn reply_frame(&mut self) -> Option<Reply> {
        self.pending.take()
    }

    fn read_values(&mut self, p: usize, len: usize) {
        self.values.clear();
        for i in 0..len {
            let bits = self.word(p + i);
            self.values.push(f64::from_bits(bits));
        }
    }

    fn write_values(&self, values: &[f64]) {
        let base = self.layout.response + RESPONSE_HEADER;
        for (i, v) in values.iter().enumerate() {
            self.set_word(base + i, v.to_bits());
        }
        self.set_word(self.layout.response + 3, values.len() as u64);
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

    /// Runs one op of a batch.
    fn op(&mut self, op: Op, arg: u8, p: usize, len: usize) -> Answer {
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
                self.calling(Call::DoStep, t);
                let outcome = self.sub()?.do_step(t, h).map_err(core)?;
                let resp = self.layout.response;
                match outcome {
                    StepOutcome::Completed => {
                        self.time = t + h;
                        let mut code = STEP_COMPLETED;
                        if self.sub()?.info().observed.is_empty() {
                            self.set_word(resp + 1, code);
                            return Ok(None);
                        }
                        // The master reads the observed values right after
                        // every completed step: read them now, in the same
                        // round trip.
                        self.calling(Call::GetReal, self.time);
                        let mut out = std::mem::take(&mut self.out);
                        match self.sub()?.get_observed(&mut out) {
                            Ok(()) => {
                                self.write_values(&out);
                                code |= STEP_PREFETCHED;
                            }
                            Err(e) => self.prefetch_error = Some(core(e)),
                        }
                        self.out = out;
                        self.set_word(resp + 1, code);
                        Ok(None)
                    }
                    StepOutcome::EarlyReturn {
                        last_successful_time,
                    } => {
                        self.set_word(resp + 1, STEP_EARLY_RETURN);
                        self.set_word(resp + 2, last_successful_time.to_bits());
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
                        self.set_word(resp + 1, code);
                        self.set_word(resp + 2, last_successful_time.to_bits());
                        Ok(Some(Reply::Log(self.sub()?.take_recent_log())))
                    }
                }
            }
            Op::GetObserved => {
                self.calling(Call::GetReal, t);
                let mut out = std::mem::take(&mut self.out);
                let r = self
                    .sub()
                    .and_then(|s| s.get_observed(&mut out).map_err(core));
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
                self.set_word(self.layout.response + 1, id);
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
            Op::Control => {
                let request: Control = read_frame(&mut self.socket)
                    .map_err(|e| WireError::Other(format!("reading a request: {e}")))?;
                self.control(request)
            }
        }
    }

    fn control(&mut self, request: Control) -> Answer {
        let fmi = WireError::from_fmi;
        let t = self.time;
        match request {
            Control::Instantiate {
                inputs,
                observed,
                n_outputs,
                logging_on,
                debug_categories,
                call_log,
                model_exchange,
            } => {
                let n_outputs = usize::try_from(n_outputs).unwrap_or(usize::MAX);
                self.calling(Call::Load, t);
                let fmu = match &self.extracted {
                    // The master's extraction, validated again here.
                    Some(dir) => Fmu::open_extracted(dir, &self.fmu_path),
                    None => Fmu::open(&self.fmu_path),
                }
                .map_err(fmi)?;
                let fmu = match model_exchange {
                    Some(settings) => fmu.as_model_exchange(settings).map_err(fmi)?,
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
