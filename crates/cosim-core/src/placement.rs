//! Keeping a helper thread (the outputs' writer, the workers of the Jacobi
//! pool) off the processor of the thread it serves (the stepping thread).
//!
//! Why: on virtual machines Linux often wakes a thread on the waker's own,
//! busy processor although another is idle (an idle virtual processor is
//! halted, the hypervisor reports it as preempted, and the scheduler then
//! does not count it as idle), and the two threads share that processor
//! until the load balancer moves one, milliseconds later. Measured on a
//! 2-core KVM machine (docs/performance.md, "Placement"): a trace of one
//! column written every step slowed a chain of 10 FMUs by 50-66 % while
//! the writer formatted its rows on the stepping thread's processor, the
//! other processor idle (`perf sched`), and by 20-27 % once the writer
//! was kept off it.
//!
//! The helper's allowed processors are those it started with, less the
//! one the served thread was last seen on; nothing is changed where that
//! would leave none (a process confined to one processor) and off Linux.

/// The processor the calling thread runs on (`usize::MAX` where unknown).
pub fn current_cpu() -> usize {
    #[cfg(target_os = "linux")]
    {
        rustix::thread::sched_getcpu()
    }
    #[cfg(not(target_os = "linux"))]
    {
        usize::MAX
    }
}

/// The processors `allowed` less `cpu`, where that is one of them (and
/// they are known: at least two).
#[cfg(target_os = "linux")]
fn without(allowed: Option<&rustix::thread::CpuSet>, cpu: usize) -> Option<rustix::thread::CpuSet> {
    let allowed = allowed?;
    if cpu >= rustix::thread::CpuSet::MAX_CPU || !allowed.is_set(cpu) {
        return None;
    }
    let mut set = *allowed;
    set.unset(cpu);
    Some(set)
}

/// The calling thread's placement: the processors it may run on, and the
/// one it currently keeps off.
#[derive(Debug)]
pub struct KeepOff {
    #[cfg(target_os = "linux")]
    allowed: Option<rustix::thread::CpuSet>,
    /// The processor excluded now (`None`: all allowed ones in use).
    avoided: Option<usize>,
}

impl KeepOff {
    /// The calling thread's placement as it is now.
    pub fn of_current_thread() -> KeepOff {
        KeepOff {
            #[cfg(target_os = "linux")]
            allowed: rustix::thread::sched_getaffinity(None)
                .ok()
                .filter(|set| set.count() >= 2),
            avoided: None,
        }
    }

    /// Keeps the calling thread (the one this placement was taken from)
    /// off processor `cpu`, where the allowed processors leave another;
    /// nothing when it already does, or when `cpu` is `usize::MAX`.
    pub fn avoid(&mut self, cpu: usize) {
        if cpu == usize::MAX || self.avoided == Some(cpu) {
            return;
        }
        #[cfg(target_os = "linux")]
        if let Some(set) = without(self.allowed.as_ref(), cpu) {
            // (A failure, say a cpuset changed under the process, leaves
            // the thread where the scheduler puts it: only slower.)
            if rustix::thread::sched_setaffinity(None, &set).is_ok() {
                self.avoided = Some(cpu);
            }
        }
    }
}

/// The workers of a Jacobi pool, kept off the stepping thread's
/// processor by the stepping thread itself before each pooled step
/// ([`PoolPlacement::keep_off`]): a worker woken on that busy processor
/// cannot run (the stepping thread does not yield to it), so it cannot
/// take its part, and the stepping thread ends up taking every FMU's
/// step itself. Measured on a 2-core KVM machine (docs/performance.md,
/// "Where cosim's time goes"): in 8 of 60 runs of four FMUs of about
/// 60 us a step, the pool's calibration found a pooled step about as long
/// as an inline one, and none once the workers were kept off. A worker
/// narrowing its own affinity when it runs a task does not help there: it
/// never runs one.
#[derive(Debug)]
pub struct PoolPlacement {
    #[cfg(target_os = "linux")]
    workers: std::sync::Mutex<Vec<rustix::thread::Pid>>,
    #[cfg(target_os = "linux")]
    allowed: Option<rustix::thread::CpuSet>,
    /// The processor the workers keep off now (`usize::MAX`: none).
    avoided: std::sync::atomic::AtomicUsize,
    /// Workers registered, and how many of them were when the workers
    /// were last narrowed: a worker starts in its own time, possibly
    /// after the first pooled step.
    registered: std::sync::atomic::AtomicUsize,
    narrowed: std::sync::atomic::AtomicUsize,
}

impl Default for PoolPlacement {
    fn default() -> Self {
        PoolPlacement::new()
    }
}

impl PoolPlacement {
    /// For the workers of a pool built now, by the calling thread: they
    /// may run where it may.
    pub fn new() -> PoolPlacement {
        PoolPlacement {
            #[cfg(target_os = "linux")]
            workers: std::sync::Mutex::new(Vec::new()),
            #[cfg(target_os = "linux")]
            allowed: rustix::thread::sched_getaffinity(None)
                .ok()
                .filter(|set| set.count() >= 2),
            avoided: std::sync::atomic::AtomicUsize::new(usize::MAX),
            registered: std::sync::atomic::AtomicUsize::new(0),
            narrowed: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Registers the calling thread as a worker (the pool's start
    /// handler).
    pub fn register_current(&self) {
        #[cfg(target_os = "linux")]
        {
            let mut workers = self
                .workers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            workers.push(rustix::thread::gettid());
            // (Release: the worker is in the list once counted.)
            self.registered
                .store(workers.len(), std::sync::atomic::Ordering::Release);
        }
    }

    /// Keeps every worker but the calling thread off processor `cpu`,
    /// where the allowed processors leave another; nothing when they
    /// already are (every worker registered so far), or when `cpu` is
    /// `usize::MAX`.
    #[inline]
    pub fn keep_off(&self, cpu: usize) {
        use std::sync::atomic::Ordering;
        if cpu == usize::MAX
            || (self.avoided.load(Ordering::Relaxed) == cpu
                && self.narrowed.load(Ordering::Relaxed) == self.registered.load(Ordering::Acquire))
        {
            return;
        }
        self.avoided.store(cpu, Ordering::Relaxed);
        #[cfg(target_os = "linux")]
        {
            let workers = self
                .workers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            self.narrowed.store(workers.len(), Ordering::Relaxed);
            let Some(set) = without(self.allowed.as_ref(), cpu) else {
                return;
            };
            let me = rustix::thread::gettid();
            for &w in workers.iter().filter(|&&w| w != me) {
                // (A failure, say a cpuset changed under the process,
                // leaves the worker where the scheduler puts it.)
                let _ = rustix::thread::sched_setaffinity(Some(w), &set);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workers are kept off each processor the stepping thread is
    /// seen on in turn, every other one allowed; the calling thread, a
    /// worker itself, is left alone; a worker that starts late is
    /// narrowed too.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_workers_follow_the_stepping_thread_and_it_is_left_alone() {
        use rustix::thread::{CpuSet, sched_getaffinity};
        let all = sched_getaffinity(None).unwrap();
        let cpus: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&c| all.is_set(c)).collect();
        if cpus.len() < 2 {
            eprintln!("skipped: one processor only");
            return;
        }
        let placement = std::sync::Arc::new(PoolPlacement::new());
        let (tid, stop, worker) = start_worker(&placement);
        placement.register_current();
        for &cpu in &[cpus[0], cpus[1], cpus[0]] {
            placement.keep_off(cpu);
            let set = sched_getaffinity(Some(tid)).unwrap();
            let kept: Vec<usize> = cpus.iter().copied().filter(|&c| set.is_set(c)).collect();
            let others: Vec<usize> = cpus.iter().copied().filter(|&c| c != cpu).collect();
            assert_eq!(kept, others, "kept off {cpu}");
            let mine = sched_getaffinity(None).unwrap();
            assert!(cpus.iter().all(|&c| mine.is_set(c)), "the caller narrowed");
        }
        // A worker that starts after the workers were narrowed is
        // narrowed at the next pooled step, the processor unchanged.
        let (late_tid, stop_late, late) = start_worker(&placement);
        placement.keep_off(cpus[0]);
        let set = sched_getaffinity(Some(late_tid)).unwrap();
        assert!(!set.is_set(cpus[0]), "the late worker kept off {}", cpus[0]);
        stop.send(()).unwrap();
        stop_late.send(()).unwrap();
        worker.join().unwrap();
        late.join().unwrap();
    }

    /// A thread registered as a worker of `placement`, waiting: its id,
    /// what ends it, and its handle.
    #[cfg(target_os = "linux")]
    fn start_worker(
        placement: &std::sync::Arc<PoolPlacement>,
    ) -> (
        rustix::thread::Pid,
        std::sync::mpsc::Sender<()>,
        std::thread::JoinHandle<()>,
    ) {
        let (ready, registered) = std::sync::mpsc::channel();
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let p = std::sync::Arc::clone(placement);
        let worker = std::thread::spawn(move || {
            p.register_current();
            ready.send(rustix::thread::gettid()).unwrap();
            let _ = stopped.recv();
        });
        (registered.recv().unwrap(), stop, worker)
    }

    #[test]
    fn current_cpu_is_one_the_thread_may_run_on() {
        let cpu = current_cpu();
        #[cfg(target_os = "linux")]
        assert!(
            rustix::thread::sched_getaffinity(None).unwrap().is_set(cpu),
            "cpu {cpu}"
        );
    }
}
