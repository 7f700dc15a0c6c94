//! The outputs' writer thread keeps off the processor of the thread whose
//! rows it writes (`cosim_core::placement`): on a virtual machine the
//! scheduler would otherwise often wake it on that busy processor, and the
//! two would share it. Its own test binary: the only writer thread in
//! the process is the one under test.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cosim_core::output::{Column, Outputs, RowRing};
use cosim_tests::cpus_allowed;
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

/// The processors the thread named `name` (the only one) may run on.
fn allowed_of_thread(name: &str) -> Vec<usize> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let tid = task.unwrap().file_name().to_string_lossy().into_owned();
        let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"));
        if comm.unwrap_or_default().trim_end() == name {
            found.push(cpus_allowed(&format!("self/task/{tid}")));
        }
    }
    assert_eq!(found.len(), 1, "threads named {name}: {found:?}");
    found.pop().unwrap()
}

fn pin_current_thread(cpu: usize) {
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set).unwrap();
}

fn push_and_flush(outputs: &Outputs, ring: &mut RowRing, t: f64) {
    ring.push(&[t, 2.0 * t]).unwrap();
    outputs.flush().unwrap();
}

#[test]
fn the_writer_keeps_off_the_processor_of_the_thread_that_woke_it() {
    let mine = cpus_allowed("thread-self");
    if mine.len() < 2 {
        // (Nothing to keep off on one processor: the placement is left
        // alone there, as `placement::KeepOff` says.)
        eprintln!("skipped: this process may run on one processor only ({mine:?})");
        return;
    }
    let start = sched_getaffinity(None).unwrap();
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
    // The stepping thread on one processor, then on another: the writer
    // keeps off each in turn, every other one still allowed.
    for (t, &cpu) in [mine[0], mine[1]].iter().enumerate() {
        pin_current_thread(cpu);
        push_and_flush(&outputs, &mut ring, t as f64);
        let others: Vec<usize> = mine.iter().copied().filter(|&c| c != cpu).collect();
        assert_eq!(
            allowed_of_thread("cosim-outputs"),
            others,
            "woken from {cpu}"
        );
    }
    // The rows are written all the same.
    outputs.close_files().unwrap();
    drop(ring);
    let text = std::fs::read_to_string(dir.path().join("trace.csv")).unwrap();
    assert_eq!(text, "time [s],x\n0.0,0.0\n1.0,2.0\n");
    sched_setaffinity(None, &start).unwrap();
}
