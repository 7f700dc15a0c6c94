//! The cost of process isolation on the trivial-FMU chain benchmark.
//!
//! A chain of `n` Gain FMUs (`fmus/dist/fmi2/Gain.fmu`, y = k u, k = 1),
//! `gain0.u` fixed, `gain{i}.y -> gain{i+1}.u`, run by the fixed-step
//! master (Jacobi, one thread, no outputs written) at 1 ms for 10^5
//! macro steps: once in-process, once with every FMU isolated in the
//! hosts `cosim run` would use (one per processor beyond the master's),
//! once with a host each (and, for n > 1, with only the first one
//! isolated). Prints the wall time of the
//! run per FMU per macro step, best of `--repeat` runs, and the ratio.
//!
//!     cargo xtask fmus            # once: builds fmus/dist/
//!     cargo run --release -p cosim-isolation --example isolation_overhead
//!     cargo run --release -p cosim-isolation --example isolation_overhead -- \
//!         --chain 1,2,4,8 --steps 100000 --repeat 3
//!
//! The program is its own host: started as `<it> host`, it serves the
//! FMUs like `cosim host`. Each subsystem has a host of its own here
//! (`IsolationSettings::default()`); a scenario's isolated FMUs share the
//! run's hosts (`[master] isolation_hosts`).
//! `COSIM_ISOLATION_SPIN_US` sets the spin budget of both sides (default
//! 50 µs; 0 = sleep at once).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cosim_core::execution::{Execution, RunStatus};
use cosim_core::master::{FixedStep, Scheme};
use cosim_core::subsystem::StartValue;
use cosim_core::{Connection, FmuSubsystem, SlotVar, Subsystem, System, SystemSpec};
use cosim_fmi::{Fmu, InstantiateOptions, Value};
use cosim_isolation::{HostPool, IsolatedSubsystem, IsolationSettings};

const H: f64 = 1e-3;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Builds the chain; `isolated(i)` says whether FMU `i` runs in a host;
/// the isolated ones share at most `hosts` host processes.
fn chain(fmu: &Fmu, n: usize, hosts: usize, isolated: impl Fn(usize) -> bool) -> System {
    let settings = IsolationSettings {
        pool: Some(Arc::new(HostPool::new(hosts))),
        ..IsolationSettings::default()
    };
    let md = fmu.model_description();
    let find = |name: &str| md.variables.iter().position(|v| v.name == name).unwrap();
    let (u, y, k) = (find("u"), find("y"), find("k"));
    let options = InstantiateOptions::default();
    let subsystems: Vec<Box<dyn Subsystem>> = (0..n)
        .map(|i| {
            let name = format!("gain{i}");
            // gain0's input is not coupled (a start value); the others are.
            let inputs = if i == 0 {
                Vec::new()
            } else {
                vec![SlotVar::scalar(u)]
            };
            let outputs = [SlotVar::scalar(y)];
            let value = |variable| StartValue {
                variable,
                value: Value::F64(1.0),
                origin: "isolation_overhead".into(),
            };
            let values = if i == 0 {
                vec![value(k), value(u)]
            } else {
                vec![value(k)]
            };
            if isolated(i) {
                let mut s =
                    IsolatedSubsystem::spawn(fmu, &name, &inputs, &outputs, 1, &options, &settings)
                        .unwrap();
                s.set_start_values(values).unwrap();
                Box::new(s) as Box<dyn Subsystem>
            } else {
                let mut s =
                    FmuSubsystem::instantiate(fmu, &name, &inputs, &outputs, 1, &options).unwrap();
                s.set_start_values(values).unwrap();
                Box::new(s)
            }
        })
        .collect();
    let connections = (1..n)
        .map(|i| Connection {
            from_subsystem: i - 1,
            from_slot: 0,
            to_subsystem: i,
            to_slot: 0,
            gain: 1.0,
            offset: 0.0,
            signal: false,
        })
        .collect();
    System::new(SystemSpec {
        subsystems,
        step_multiple: vec![1; n],
        connections,
        bonds: Vec::new(),
        nonfinite: Default::default(),
        threads: 1,
    })
    .unwrap()
}

/// Runs `steps` macro steps; returns the wall time of the run.
fn run(system: System, steps: usize) -> Duration {
    let execution = Execution {
        system,
        master: Box::new(FixedStep::new(H, Scheme::Jacobi, 0)),
        observers: Vec::new(),
        t_start: 0.0,
        t_stop: steps as f64 * H,
        interrupt: None,
        diagnostics: Vec::new(),
        events: Default::default(),
        real_time: None,
    };
    let start = Instant::now();
    let (summary, error) = execution.run();
    let wall = start.elapsed();
    assert_eq!(summary.status, RunStatus::Completed, "{error:?}");
    assert_eq!(summary.stats.macro_steps as usize, steps);
    wall
}

fn best(repeat: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..repeat).map(|_| f()).min().unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("host") {
        if let Err(e) = cosim_isolation::host::serve() {
            eprintln!("{e}");
            std::process::exit(2);
        }
        return;
    }
    cosim_isolation::set_host_program(std::env::current_exe().unwrap());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let fmu_path = arg(&args, "--fmu")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("fmus/dist/fmi2/Gain.fmu"));
    assert!(
        fmu_path.exists(),
        "{} is missing: run `cargo xtask fmus` first",
        fmu_path.display()
    );
    let steps: usize = arg(&args, "--steps").map_or(100_000, |s| s.parse().unwrap());
    let repeat: usize = arg(&args, "--repeat").map_or(3, |s| s.parse().unwrap());
    let lengths: Vec<usize> = arg(&args, "--chain")
        .unwrap_or_else(|| "1,2,4,8".into())
        .split(',')
        .map(|s| s.trim().parse().unwrap())
        .collect();
    let fmu = Fmu::open(&fmu_path).unwrap();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!(
        "Gain chain, fixed step {H} s, {steps} macro steps, best of {repeat}, {cores} cores, spin budget {:?}",
        std::env::var("COSIM_ISOLATION_SPIN_US")
            .map(|v| format!("{v} us"))
            .unwrap_or_else(|_| "default".into())
    );
    let shared = HostPool::default_hosts();
    println!("ns per FMU per macro step (isolated FMUs sharing {shared} host(s), or a host each):");
    println!(
        "{:>3}  {:>11}  {:>13}  {:>6}  {:>10}  {:>6}  {:>15}  {:>6}",
        "n", "in-process", "shared hosts", "ratio", "host each", "ratio", "first isolated", "ratio"
    );
    let per = |d: Duration, n: usize| d.as_nanos() as f64 / (steps * n) as f64;
    for &n in &lengths {
        let t_in = best(repeat, || run(chain(&fmu, n, 1, |_| false), steps));
        let t_shared = best(repeat, || run(chain(&fmu, n, shared, |_| true), steps));
        let t_each = best(repeat, || run(chain(&fmu, n, n, |_| true), steps));
        let (a, b, c) = (per(t_in, n), per(t_shared, n), per(t_each, n));
        let first = if n > 1 {
            let t = best(repeat, || run(chain(&fmu, n, 1, |i| i == 0), steps));
            let d = per(t, n);
            format!("{d:>15.0}  {:>6.1}", d / a)
        } else {
            String::new()
        };
        println!(
            "{n:>3}  {a:>11.0}  {b:>13.0}  {:>6.1}  {c:>10.0}  {:>6.1}  {first}",
            b / a,
            c / a
        );
    }
}
