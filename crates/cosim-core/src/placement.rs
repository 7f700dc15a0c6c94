//! Keeping a helper thread (the outputs' writer) off the processor of the
//! thread it serves (the stepping thread).
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
        if let Some(allowed) = &self.allowed
            && cpu < rustix::thread::CpuSet::MAX_CPU
            && allowed.is_set(cpu)
        {
            let mut set = *allowed;
            set.unset(cpu);
            // (A failure, say a cpuset changed under the process, leaves
            // the thread where the scheduler puts it: only slower.)
            if rustix::thread::sched_setaffinity(None, &set).is_ok() {
                self.avoided = Some(cpu);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
