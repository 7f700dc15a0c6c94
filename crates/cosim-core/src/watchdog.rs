//! Hung FMI calls in this process: a watchdog thread that notices an FMU
//! call that does not return within `step_timeout` (`init_timeout` for
//! the calls of initialization), or one still running when the user
//! presses Ctrl-C, so that the run can end cleanly without waiting for a
//! call that may never return.
//!
//! Every tracker of the process is watched (one run per process at a
//! time, as `cosim run` and a sweep's worker process make them).
//! The stepping side costs a relaxed atomic store per FMI call and one when
//! the call, or a group of them ([`CallTracker::group`]), returns, and no
//! clock read: the watchdog samples every tracker a few times per second
//! and measures how long one has shown the same call. FMUs in host processes have their own
//! timeout (`isolation_timeout`, `cosim-isolation`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// The FMI calls the trackers name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Call {
    /// Between calls.
    Idle = 0,
    /// Setting up and entering Initialization Mode (values included).
    EnterInitialization = 1,
    /// Leaving Initialization Mode.
    ExitInitialization = 2,
    /// Setting inputs or their derivatives.
    SetInputs = 3,
    /// `doStep`.
    DoStep = 4,
    /// Reading observed values or output derivatives.
    GetOutputs = 5,
    /// Saving, restoring or freeing an FMU state.
    State = 6,
    /// `fmi*Terminate`.
    Terminate = 7,
    /// `fmi*FreeInstance`.
    FreeInstance = 8,
    /// Entering or leaving Event Mode, or its event iteration.
    EventMode = 9,
}

/// The longest calls: those of initialization, the others (`None`: no
/// limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timeouts {
    /// Every call but those of initialization (`step_timeout`).
    pub step: Option<Duration>,
    /// Entering and leaving Initialization Mode, with the values set
    /// there (`init_timeout`): a big model may take long.
    pub init: Option<Duration>,
}

impl Timeouts {
    /// The limit of `call`, and the setting that gives it: every call
    /// before the instance's first `doStep` is part of its initialization
    /// (the initial values read, too).
    fn of(self, call: Call, initializing: bool) -> (Option<Duration>, &'static str) {
        match call {
            _ if initializing => (self.init, "init_timeout"),
            Call::EnterInitialization | Call::ExitInitialization => (self.init, "init_timeout"),
            _ => (self.step, "step_timeout"),
        }
    }
}

impl Call {
    fn from_u8(b: u8) -> Call {
        [
            Call::Idle,
            Call::EnterInitialization,
            Call::ExitInitialization,
            Call::SetInputs,
            Call::DoStep,
            Call::GetOutputs,
            Call::State,
            Call::Terminate,
            Call::FreeInstance,
            Call::EventMode,
        ]
        .get(usize::from(b))
        .copied()
        .unwrap_or(Call::Idle)
    }

    /// The FMI function (FMI 2 / FMI 3), for messages.
    pub fn function(self, fmi3: bool) -> &'static str {
        let pick = |a, b| if fmi3 { b } else { a };
        match self {
            Call::Idle => "(no call)",
            Call::EnterInitialization => pick(
                "fmi2SetupExperiment / fmi2EnterInitializationMode",
                "fmi3EnterInitializationMode",
            ),
            Call::ExitInitialization => {
                pick("fmi2ExitInitializationMode", "fmi3ExitInitializationMode")
            }
            Call::SetInputs => pick("fmi2SetReal (inputs)", "fmi3Set... (inputs)"),
            Call::DoStep => pick("fmi2DoStep", "fmi3DoStep"),
            Call::GetOutputs => pick("fmi2GetReal (outputs)", "fmi3Get... (outputs)"),
            Call::State => pick("fmi2Get/SetFMUstate", "fmi3Get/SetFMUState"),
            Call::Terminate => pick("fmi2Terminate", "fmi3Terminate"),
            Call::FreeInstance => pick("fmi2FreeInstance", "fmi3FreeInstance"),
            Call::EventMode => "fmi3EnterEventMode / fmi3UpdateDiscreteStates / fmi3EnterStepMode",
        }
    }
}

/// What one FMU instance is doing, shared with the watchdog.
#[derive(Debug)]
struct Shared {
    /// The subsystem (instance) name.
    name: String,
    /// FMI 3 (for function names).
    fmi3: bool,
    /// `sequence << 8 | call`: changes with every call begun.
    word: AtomicU64,
    /// The simulation time of the last `doStep`, as bits (NaN before the
    /// first: initialization).
    t: AtomicU64,
}

/// Every live tracker of the process, for the watchdog.
static REGISTRY: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// The stepping side of one FMU instance: marks the start and end of
/// each FMI call.
#[derive(Debug)]
pub struct CallTracker {
    shared: Arc<Shared>,
    sequence: u64,
}

impl CallTracker {
    /// A tracker for instance `name`, registered with the watchdog.
    pub fn new(name: &str, fmi3: bool) -> CallTracker {
        let shared = Arc::new(Shared {
            name: name.to_string(),
            fmi3,
            word: AtomicU64::new(0),
            t: AtomicU64::new(f64::NAN.to_bits()),
        });
        if let Ok(mut registry) = REGISTRY.lock() {
            registry.retain(|w| w.strong_count() > 0);
            registry.push(Arc::downgrade(&shared));
        }
        CallTracker {
            shared,
            sequence: 0,
        }
    }

    /// A call begins.
    #[inline]
    pub fn begin(&mut self, call: Call) {
        self.sequence += 1;
        self.shared
            .word
            .store(self.sequence << 8 | call as u64, Ordering::Relaxed);
    }

    /// A `doStep` from `t` begins.
    #[inline]
    pub fn begin_step(&mut self, t: f64) {
        self.shared.t.store(t.to_bits(), Ordering::Relaxed);
        self.begin(Call::DoStep);
    }

    /// The call returned.
    #[inline]
    pub fn end(&mut self) {
        self.shared
            .word
            .store(self.sequence << 8, Ordering::Relaxed);
    }

    /// The marks of one group of calls (one step's set, `doStep` and
    /// get) under one new sequence number: each call has its own word (the
    /// call differs from the one before it in the group). The group holds the shared words
    /// and the sequence where the compiler can keep them across the FMI
    /// calls, instead of reading them back through the tracker after each
    /// call (which an FMU's code could have changed, for all it knows).
    #[inline]
    pub fn group(&mut self) -> CallGroup<'_> {
        self.sequence += 1;
        CallGroup {
            shared: &self.shared,
            word: self.sequence << 8,
        }
    }
}

impl CallTracker {
    /// The marks of a run of groups, one per macro step of a quiet run,
    /// under sequence numbers the caller gives (the same for every FMU
    /// in a macro step: counted once, not per FMU): [`RunMarks`].
    pub fn run_marks(&mut self) -> RunMarks<'_> {
        RunMarks {
            shared: &self.shared,
            sequence: &mut self.sequence,
        }
    }
}

/// The marks of a run of groups ([`CallTracker::run_marks`]). Each group's
/// sequence number must be above [`RunMarks::sequence`] and those before
/// it, so that every call begun shows a new word; [`RunMarks::finish`]
/// then has the tracker go on after the last.
#[derive(Debug)]
pub struct RunMarks<'a> {
    shared: &'a Shared,
    sequence: &'a mut u64,
}

impl RunMarks<'_> {
    /// The tracker's last sequence number.
    pub fn sequence(&self) -> u64 {
        *self.sequence
    }

    /// The marks of the group whose word is `word` (its sequence number
    /// shifted left by 8).
    #[inline(always)]
    pub fn group(&self, word: u64) -> CallGroup<'_> {
        CallGroup {
            shared: self.shared,
            word,
        }
    }

    /// The run's last group had sequence number `sequence`.
    pub fn finish(&mut self, sequence: u64) {
        *self.sequence = (*self.sequence).max(sequence);
    }
}

/// The marks of one group of calls ([`CallTracker::group`]).
#[derive(Debug, Clone, Copy)]
pub struct CallGroup<'a> {
    shared: &'a Shared,
    word: u64,
}

impl CallGroup<'_> {
    /// A call of the group begins.
    #[inline]
    pub fn call(self, call: Call) {
        self.shared
            .word
            .store(self.word | call as u64, Ordering::Relaxed);
    }

    /// A `doStep` from `t` begins.
    #[inline]
    pub fn step(self, t: f64) {
        self.shared.t.store(t.to_bits(), Ordering::Relaxed);
        self.call(Call::DoStep);
    }

    /// The group's calls returned.
    #[inline]
    pub fn end(self) {
        self.shared.word.store(self.word, Ordering::Relaxed);
    }
}

/// A call found hung.
#[derive(Debug, Clone)]
pub struct Hang {
    /// The subsystem.
    pub subsystem: String,
    /// The FMI function.
    pub function: &'static str,
    /// The simulation time of its last `doStep` (NaN: none yet, the call
    /// is part of the initialization).
    pub t: f64,
    /// How long it has been running (at least), s.
    pub seconds: f64,
    /// Found because the user interrupted the run, not by the timeout.
    pub interrupted: bool,
    /// The setting whose limit it passed (`step_timeout`, `init_timeout`).
    pub setting: &'static str,
}

impl std::fmt::Display for Hang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.t.is_nan() {
            "during initialization".to_string()
        } else {
            format!("at t = {}", self.t)
        };
        write!(
            f,
            "subsystem '{}': {} {at} has not returned after {:.1} s",
            self.subsystem, self.function, self.seconds
        )?;
        if self.interrupted {
            f.write_str(" (interrupted)")
        } else {
            write!(
                f,
                " ({}): the FMU hangs; stopping without waiting for it",
                self.setting
            )
        }
    }
}

/// How often the watchdog looks.
const PERIOD: Duration = Duration::from_millis(50);
/// After Ctrl-C, how long a call may still run before the run ends
/// without it (a step boundary normally comes much sooner).
const INTERRUPT_GRACE: Duration = Duration::from_millis(500);

/// Watches every tracked call of the process from a thread of its own.
/// Dropping it stops the thread at once: the thread waits for its next
/// look on a channel that the drop closes, so the end of a run never waits
/// out a period.
#[derive(Debug)]
pub struct Watchdog {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// Starts watching: `on_hang` is called (once, on the watchdog's
    /// thread) when a call has run longer than its limit in `timeouts`, or
    /// longer than half a second after `interrupt` was set. It is expected
    /// to end the process (the hung call holds the stepping thread).
    pub fn start(
        timeout: Timeouts,
        interrupt: Option<Arc<AtomicBool>>,
        on_hang: Box<dyn FnOnce(Hang) + Send>,
    ) -> std::io::Result<Watchdog> {
        let (stop, stopped) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("cosim-watchdog".into())
            .spawn(move || watch(timeout, interrupt, &stopped, on_hang))?;
        Ok(Watchdog {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // (The channel closed wakes the thread, which ends.)
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The watchdog's loop: per tracker, the word last seen and since when.
fn watch(
    timeout: Timeouts,
    interrupt: Option<Arc<AtomicBool>>,
    stop: &std::sync::mpsc::Receiver<()>,
    on_hang: Box<dyn FnOnce(Hang) + Send>,
) {
    let mut seen: Vec<(Weak<Shared>, u64, Instant)> = Vec::new();
    let mut interrupted_at: Option<Instant> = None;
    // Each look a period after the last, until the watchdog is dropped.
    while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(PERIOD) {
        let now = Instant::now();
        if interrupted_at.is_none()
            && interrupt
                .as_ref()
                .is_some_and(|f| f.load(Ordering::Relaxed))
        {
            interrupted_at = Some(now);
        }
        let live: Vec<Arc<Shared>> = match REGISTRY.lock() {
            Ok(r) => r.iter().filter_map(Weak::upgrade).collect(),
            Err(_) => continue,
        };
        for s in &live {
            let word = s.word.load(Ordering::Relaxed);
            let entry = seen.iter_mut().find(|(w, ..)| w.as_ptr() == Arc::as_ptr(s));
            let since = match entry {
                Some((_, last, since)) if *last == word => *since,
                Some(e) => {
                    e.1 = word;
                    e.2 = now;
                    now
                }
                None => {
                    seen.push((Arc::downgrade(s), word, now));
                    now
                }
            };
            let call = Call::from_u8((word & 0xff) as u8);
            if call == Call::Idle {
                continue;
            }
            let running = now.duration_since(since);
            let t = f64::from_bits(s.t.load(Ordering::Relaxed));
            let (limit, setting) = timeout.of(call, t.is_nan());
            let timed_out = limit.is_some_and(|t| running >= t);
            let interrupted = interrupted_at
                .is_some_and(|at| now.duration_since(at) >= INTERRUPT_GRACE && since <= at);
            if timed_out || interrupted {
                on_hang(Hang {
                    subsystem: s.name.clone(),
                    function: call.function(s.fmi3),
                    t,
                    seconds: running.as_secs_f64(),
                    interrupted: interrupted && !timed_out,
                    setting,
                });
                return;
            }
        }
        seen.retain(|(w, ..)| w.strong_count() > 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// The trackers of a process are all watched: one test at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn a_call_that_does_not_return_is_reported_with_its_function_and_time() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let mut tracker = CallTracker::new("slow", false);
        let (tx, rx) = mpsc::channel();
        let _dog = Watchdog::start(
            Timeouts {
                step: Some(Duration::from_millis(200)),
                init: None,
            },
            None,
            Box::new(move |h| tx.send(h).unwrap_or(())),
        )
        .unwrap();
        // Calls that return are not reported.
        for _ in 0..20 {
            tracker.begin_step(0.25);
            std::thread::sleep(Duration::from_millis(10));
            tracker.end();
        }
        assert!(rx.try_recv().is_err());
        tracker.begin_step(0.5);
        let hang = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(hang.subsystem, "slow");
        assert_eq!(hang.function, "fmi2DoStep");
        assert_eq!(hang.t, 0.5);
        assert!(hang.seconds >= 0.2 && !hang.interrupted, "{hang:?}");
        tracker.end();
    }

    #[test]
    fn a_hung_call_of_a_group_is_reported_as_that_call() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let mut tracker = CallTracker::new("grouped", false);
        let (tx, rx) = mpsc::channel();
        let _dog = Watchdog::start(
            Timeouts {
                step: Some(Duration::from_millis(200)),
                init: None,
            },
            None,
            Box::new(move |h| tx.send(h).unwrap_or(())),
        )
        .unwrap();
        // Groups whose calls return are not reported, however long the
        // run: each call shows a new word.
        for k in 0..20 {
            let group = tracker.group();
            group.call(Call::SetInputs);
            group.step(f64::from(k));
            std::thread::sleep(Duration::from_millis(10));
            group.call(Call::GetOutputs);
            group.end();
        }
        assert!(rx.try_recv().is_err());
        let group = tracker.group();
        group.call(Call::SetInputs);
        group.step(0.75);
        group.call(Call::GetOutputs);
        let hang = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(hang.subsystem, "grouped");
        assert_eq!(hang.function, "fmi2GetReal (outputs)");
        assert_eq!(hang.t, 0.75);
        tracker.end();
    }

    #[test]
    fn initialization_calls_have_their_own_limit() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let mut tracker = CallTracker::new("big", false);
        let (tx, rx) = mpsc::channel();
        let _dog = Watchdog::start(
            Timeouts {
                step: Some(Duration::from_millis(100)),
                init: Some(Duration::from_secs(3600)),
            },
            None,
            Box::new(move |h| tx.send(h).unwrap_or(())),
        )
        .unwrap();
        // An initialization longer than step_timeout is not a hang, nor
        // are the initial values read before the first step.
        tracker.begin(Call::ExitInitialization);
        assert!(rx.recv_timeout(Duration::from_millis(400)).is_err());
        tracker.begin(Call::GetOutputs);
        assert!(rx.recv_timeout(Duration::from_millis(400)).is_err());
        tracker.end();
        tracker.begin_step(0.0);
        let hang = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(
            (hang.function, hang.setting),
            ("fmi2DoStep", "step_timeout")
        );
        tracker.end();
        drop(_dog);
        let (tx, rx) = mpsc::channel();
        let _dog = Watchdog::start(
            Timeouts {
                step: None,
                init: Some(Duration::from_millis(100)),
            },
            None,
            Box::new(move |h| tx.send(h).unwrap_or(())),
        )
        .unwrap();
        let mut fresh = CallTracker::new("bigger", false);
        fresh.begin(Call::GetOutputs);
        let hang = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(hang.setting, "init_timeout");
        let text = hang.to_string();
        assert!(
            text.contains("fmi2GetReal (outputs) during initialization has not returned after")
                && text.contains("(init_timeout)"),
            "{text}"
        );
        fresh.end();
        tracker.end();
    }

    #[test]
    fn an_interrupt_ends_a_hung_call_without_a_timeout() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let mut tracker = CallTracker::new("hung", true);
        let flag = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let _dog = Watchdog::start(
            Timeouts::default(),
            Some(Arc::clone(&flag)),
            Box::new(move |h| tx.send(h).unwrap_or(())),
        )
        .unwrap();
        tracker.begin_step(1.0);
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            rx.try_recv().is_err(),
            "no timeout, no interrupt: no report"
        );
        flag.store(true, Ordering::Relaxed);
        let hang = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(hang.function, "fmi3DoStep");
        assert!(hang.interrupted, "{hang:?}");
        tracker.end();
    }
}
