//! The outputs' writer thread keeps off the processor of the thread whose
//! rows it writes (`cosim_core::placement`): on a virtual machine the
//! scheduler would otherwise often wake it on that busy processor, and the
//! two would share it. Its own test binary: the only writer thread in
//! the process is the one under test.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use cosim_core::output::{Column, Outputs};
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

/// The processors a thread of this process may run on, from
/// `/proc/self/task/<tid>/status`, for the thread named `name`.
fn allowed_of_thread(name: &str) -> Vec<usize> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = task.unwrap().path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        let status = std::fs::read_to_string(dir.join("status")).unwrap();
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim();
        found.push(parse_cpu_list(list));
    }
    assert_eq!(found.len(), 1, "threads named {name}: {found:?}");
    found.pop().unwrap()
}

/// "0-2,4" -> [0, 1, 2, 4].
fn parse_cpu_list(list: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().unwrap()..=b.parse().unwrap()),
            None => cpus.push(part.parse().unwrap()),
        }
    }
    cpus
}

fn pin_current_thread(cpu: usize) {
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set).unwrap();
}

fn push_and_flush(outputs: &Outputs, ring: &mut cosim_core::output::RowRing, t: f64) {
    ring.push(&[t, 2.0 * t]).unwrap();
    outputs.flush().unwrap();
}

#[test]
fn the_writer_keeps_off_the_processor_of_the_thread_that_woke_it() {
    let start = sched_getaffinity(None).unwrap();
    let mine: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&c| start.is_set(c)).collect();
    if mine.len() < 2 {
        // (Nothing to keep off on one processor: the placement is left
        // alone there, as `placement::KeepOff` says.)
        eprintln!("skipped: this process may run on one processor only ({mine:?})");
        return;
    }
    let (a, b) = (mine[0], mine[1]);
    let dir = tempfile::tempdir().unwrap();
    let outputs = Outputs::new(dir.path(), None).unwrap();
    let header = ["time [s]".to_string(), "x".to_string()];
    let mut ring = outputs
        .add_csv_ring(
            &dir.path().join("trace.csv"),
            &header,
            vec![Column::Float, Column::Float],
        )
        .unwrap();
    pin_current_thread(a);
    push_and_flush(&outputs, &mut ring, 0.0);
    let allowed = allowed_of_thread("cosim-outputs");
    // (Every other processor stays allowed.)
    let others: Vec<usize> = mine.iter().copied().filter(|&c| c != a).collect();
    assert_eq!(allowed, others, "woken from {a}");

    // The stepping thread moved: the writer follows it away.
    pin_current_thread(b);
    push_and_flush(&outputs, &mut ring, 1.0);
    let allowed = allowed_of_thread("cosim-outputs");
    let others: Vec<usize> = mine.iter().copied().filter(|&c| c != b).collect();
    assert_eq!(allowed, others, "woken from {b}");

    // The rows are written all the same.
    outputs.close_files().unwrap();
    drop(ring);
    let text = std::fs::read_to_string(Path::new(dir.path()).join("trace.csv")).unwrap();
    assert_eq!(text, "time [s],x\n0.0,0.0\n1.0,2.0\n");
    sched_setaffinity(None, &start).unwrap();
}
