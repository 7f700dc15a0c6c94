//! The machine's floor for an isolated FMU's macro step: one round trip
//! between two processors, both sides spinning on one shared word each
//! way (what the host channel does at best, with no FMU, no request and
//! no process boundary: the cache lines are what cost). Two threads,
//! each pinned to a processor of its own.
//!
//!     cargo run --release -p cosim-isolation --example round_trip -- \
//!         [--trips 200000] [--repeat 5]
//!
//! Prints the median round trip in ns per pair of processors tried (the
//! first two the process may use), and on its last line the figure alone
//! (`bench/whole_run` reads it beside "one FMU isolated").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().unwrap())
}

fn pin(cpu: usize) {
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set).unwrap();
}

/// Two words on lines of their own: the ping and the pong.
#[repr(align(128))]
struct Line(AtomicU64);

/// Nanoseconds per round trip of `trips` round trips between `a` and `b`.
fn measure(a: usize, b: usize, trips: u64) -> f64 {
    let words = Arc::new([Line(AtomicU64::new(0)), Line(AtomicU64::new(0))]);
    let other = Arc::clone(&words);
    let echo = std::thread::spawn(move || {
        pin(b);
        for i in 1..=trips {
            while other[0].0.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
            other[1].0.store(i, Ordering::Release);
        }
    });
    pin(a);
    // (The echo thread's start is not timed: the first trip waits for it.)
    words[0].0.store(1, Ordering::Release);
    while words[1].0.load(Ordering::Acquire) != 1 {
        std::hint::spin_loop();
    }
    let start = Instant::now();
    for i in 2..=trips {
        words[0].0.store(i, Ordering::Release);
        while words[1].0.load(Ordering::Acquire) != i {
            std::hint::spin_loop();
        }
    }
    let elapsed = start.elapsed();
    echo.join().unwrap();
    elapsed.as_nanos() as f64 / (trips - 1) as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let trips = arg(&args, "--trips", 200_000) as u64;
    let repeat = arg(&args, "--repeat", 5);
    let allowed = sched_getaffinity(None).unwrap();
    let cpus: Vec<usize> = (0..CpuSet::MAX_CPU)
        .filter(|&c| allowed.is_set(c))
        .collect();
    let [a, b, ..] = cpus[..] else {
        eprintln!("round_trip: needs two processors, this process may use {cpus:?}");
        std::process::exit(2);
    };
    let mut ns: Vec<f64> = (0..repeat).map(|_| measure(a, b, trips)).collect();
    ns.sort_by(f64::total_cmp);
    let median = ns[ns.len() / 2];
    println!(
        "round trip between processors {a} and {b}: median {median:.0} ns of {repeat} x {trips} (min {:.0}, max {:.0})",
        ns[0],
        ns[ns.len() - 1]
    );
    println!("{median:.1}");
}
