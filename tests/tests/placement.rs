//! The outputs' writer thread keeps off the processor of the thread whose
//! rows it writes, and the Jacobi pool's workers off that of the stepping
//! thread they help (`cosim_core::placement`): on a virtual machine the
//! scheduler would otherwise often wake them on that busy processor, and
//! the two would share it. Its own test binary: the only writer thread
//! and the only worker pool in the process are the ones under test.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cosim_core::output::{Column, Outputs, RowRing};
use cosim_core::{Subsystem, System, SystemSpec};
use cosim_fmi::Fmu;
use cosim_tests::{cpus_allowed, fmu_subsystem, fmus};
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

/// The processors each thread whose name starts with `name` may run on.
fn allowed_of_threads(name: &str) -> Vec<Vec<usize>> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let tid = task.unwrap().file_name().to_string_lossy().into_owned();
        let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"));
        if comm.unwrap_or_default().starts_with(name) {
            found.push(cpus_allowed(&format!("self/task/{tid}")));
        }
    }
    found
}

/// The processors the thread named `name` (the only one) may run on.
fn allowed_of_thread(name: &str) -> Vec<usize> {
    let mut found = allowed_of_threads(name);
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

/// A Gain FMU (`y = k u`) with `busy_work` loops per step, as a subsystem.
fn busy_gain(fmu: &Fmu, name: &str) -> Box<dyn Subsystem> {
    Box::new(fmu_subsystem(
        fmu,
        name,
        ("u", "y"),
        &[],
        &[("busy_work", 2_000)],
    ))
}

#[test]
fn the_pool_workers_keep_off_the_processor_of_the_stepping_thread() {
    let mine = cpus_allowed("thread-self");
    if mine.len() < 2 {
        eprintln!("skipped: this process may run on one processor only ({mine:?})");
        return;
    }
    let start = sched_getaffinity(None).unwrap();
    let gain = Fmu::open(fmus().join("fmi2").join("Gain.fmu")).unwrap();
    let subsystems = (0..4).map(|i| busy_gain(&gain, &format!("g{i}"))).collect();
    let mut system = System::new(SystemSpec {
        subsystems,
        step_multiple: vec![1; 4],
        connections: Vec::new(),
        bonds: Vec::new(),
        nonfinite: Default::default(),
        threads: 2,
    })
    .unwrap();
    system.initialize(0.0, Some(1.0)).unwrap();
    // Every worker started (the pool's start handler registers it; one
    // that starts late is narrowed at the next pooled step, which the
    // calibration may not give: `cosim_core::placement`'s own test).
    system.worker_pool().unwrap().broadcast(|_| ());
    // The stepping thread (this one, not a worker) on one processor. The
    // pool's choice is measured over the first 32 steps, half of them
    // pooled whatever it finds. (That the workers follow the stepping
    // thread to another processor: `cosim_core::placement`'s own test.)
    let cpu = mine[1];
    pin_current_thread(cpu);
    let (h, due) = ([1e-3; 4], [true; 4]);
    for k in 0..32 {
        system.step_jacobi(f64::from(k) * 1e-3, &h, &due).unwrap();
    }
    let others: Vec<usize> = mine.iter().copied().filter(|&c| c != cpu).collect();
    assert_eq!(
        allowed_of_threads("cosim-worker-"),
        [others.clone(), others],
        "stepping on {cpu}"
    );
    sched_setaffinity(None, &start).unwrap();
}
