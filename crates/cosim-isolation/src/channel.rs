//! The shared-memory handshake: one side publishes a word and rings a bell
//! if the other sleeps; the other spins briefly, then sleeps on the bell
//! (a futex word).
//!
//! Spinning is what makes a round trip cost a fraction of a microsecond
//! instead of the several microseconds of a futex wake-up; it is bounded
//! (`COSIM_ISOLATION_SPIN_US`, default 50 µs; 0 on a single-core machine),
//! yields the processor as it goes, and hosts spin only while there are
//! few of them per core ([`host_spin_ns`]).

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rustix::thread::futex;

/// How long a side spins before it sleeps.
pub fn spin_budget() -> Duration {
    static SPIN: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *SPIN.get_or_init(|| {
        let default = if cores() > 1 { 50 } else { 0 };
        let us = std::env::var("COSIM_ISOLATION_SPIN_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(default);
        Duration::from_micros(us)
    })
}

/// Hosts running for this master process.
static HOSTS: AtomicUsize = AtomicUsize::new(0);

/// Counts a host while it lives.
#[derive(Debug)]
pub struct HostCount(());

impl HostCount {
    /// One more host.
    pub fn register() -> HostCount {
        HOSTS.fetch_add(1, Ordering::Relaxed);
        HostCount(())
    }
}

impl Drop for HostCount {
    fn drop(&mut self) {
        HOSTS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How long a host may spin for its next request: the spin budget while
/// there are at most two hosts per core, else nothing (a host then sleeps
/// at once and is woken by a futex call). Spinning hosts yield the
/// processor as they spin, so a few more hosts than cores still answer
/// faster than sleeping ones (measured on 2 cores: 2 hosts 3.6 µs against
/// 13.6 µs per call, 4 hosts 7.5 against 13.5); with many more, spinning
/// only takes processor time from the master (8 hosts: 17 against 17 µs).
/// `COSIM_ISOLATION_HOST_SPIN_US` overrides the rule.
pub fn host_spin_ns() -> u64 {
    static FIXED: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let fixed = FIXED.get_or_init(|| {
        std::env::var("COSIM_ISOLATION_HOST_SPIN_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|us| us.saturating_mul(1000))
    });
    if let Some(ns) = fixed {
        return *ns;
    }
    if HOSTS.load(Ordering::Relaxed) <= 2 * cores() {
        u64::try_from(spin_budget().as_nanos()).unwrap_or(u64::MAX)
    } else {
        0
    }
}

fn cores() -> usize {
    cosim_core::parallel::processors()
}

/// Wakes the other side if it sleeps: call right after the store
/// (Release) that publishes what it waits for. `sleepers` counts the other
/// side's sleeping threads; `bell` is the word they sleep on.
pub fn ring(bell: &AtomicU32, sleepers: &AtomicU32) {
    // Publish, fence, load `sleepers` here; count a sleeper (SeqCst), check
    // `ready` in `wait_until`: at least one of the two sees the other's
    // store, so a sleeper is never missed.
    std::sync::atomic::fence(Ordering::SeqCst);
    if sleepers.load(Ordering::Relaxed) != 0 {
        bell.fetch_add(1, Ordering::SeqCst);
        let _ = futex::wake(bell, futex::Flags::empty(), u32::MAX);
    }
}

/// Writes the calling thread's processor, plus one, into `word` (the
/// group's `MASTER_CPU`) where it changed: the host keeps off it
/// (`cosim_core::placement`: on a virtual machine a woken host is often
/// put on the master's busy processor, and the two then take turns on it
/// for the whole run, 5 to 7 times slower, while another is idle).
pub fn publish_cpu(word: &AtomicU64) {
    let cpu = cosim_core::placement::current_cpu();
    if cpu == usize::MAX {
        return;
    }
    let value = cpu as u64 + 1;
    if word.load(Ordering::Relaxed) != value {
        word.store(value, Ordering::Relaxed);
    }
}

/// The processor `word` names ([`publish_cpu`]), `usize::MAX` if none.
pub fn published_cpu(word: &AtomicU64) -> usize {
    match word.load(Ordering::Relaxed) {
        0 => usize::MAX,
        v => usize::try_from(v - 1).unwrap_or(usize::MAX),
    }
}

/// Spins between two yields of the processor (a system call, during which
/// an answer may come): often (some 1 µs) while the master and its hosts
/// outnumber the processors, so that the one the others wait for gets a
/// processor soon; else rarely (some 20 µs), so that yielding does not
/// slow the round trip. The hosts get the master's choice with each
/// request (`HOST_YIELD_EVERY`).
pub fn yield_every() -> u32 {
    if HOSTS.load(Ordering::Relaxed) + 1 > cores() {
        64
    } else {
        1024
    }
}

/// What [`wait_until`] asks its caller between sleeps.
pub enum Check {
    /// Keep waiting.
    Continue,
    /// Stop waiting (the caller has found a reason).
    Stop,
}

/// Waits until `ready()`: spins for `spin` (yielding the processor as it
/// goes), then sleeps on `bell` (counted in `sleepers`) in slices of at
/// most `slice`, calling `check` after each. Returns false when `check`
/// said stop. `slow` is called at each yield and after each sleep: where
/// the wait is long enough for a system call not to matter.
pub fn wait_until(
    mut ready: impl FnMut() -> bool,
    bell: &AtomicU32,
    sleepers: &AtomicU32,
    spin: Duration,
    slice: Duration,
    mut check: impl FnMut() -> Check,
    mut slow: impl FnMut(),
) -> bool {
    if ready() {
        return true;
    }
    if !spin.is_zero() {
        let start = Instant::now();
        let mut i: u32 = 0;
        loop {
            if ready() {
                return true;
            }
            i = i.wrapping_add(1);
            if i.is_multiple_of(64) {
                if start.elapsed() >= spin {
                    break;
                }
                if i.is_multiple_of(yield_every()) {
                    slow();
                    std::thread::yield_now();
                }
            } else {
                std::hint::spin_loop();
            }
        }
    }
    let timeout = futex::Timespec::try_from(slice).unwrap_or(futex::Timespec {
        tv_sec: 1,
        tv_nsec: 0,
    });
    sleepers.fetch_add(1, Ordering::SeqCst);
    let done = loop {
        let rung = bell.load(Ordering::SeqCst);
        if ready() {
            break true;
        }
        // Returns at a wake-up, at the timeout, on a signal, or at once if
        // the bell rang meanwhile; all are handled by checking again.
        let _ = futex::wait(bell, futex::Flags::empty(), rung, Some(&timeout));
        slow();
        if ready() {
            break true;
        }
        if let Check::Stop = check() {
            break false;
        }
    };
    sleepers.fetch_sub(1, Ordering::SeqCst);
    done
}
