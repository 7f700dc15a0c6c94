//! The operating system's side of process isolation. The only `unsafe` of
//! this crate: viewing a shared memory mapping as atomics, restoring the
//! default action of the fault signals in the host process, and the
//! processor's write prefetch. The
//! process handling (looking at a host's end without reaping it, killing
//! its process group, noticing the master's death in the host) goes
//! through `rustix` and needs none.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU32, AtomicU64};

use rustix::process::{Pid, Signal, WaitIdOptions};

/// Bytes at the start of a region reserved for the 32-bit control words
/// (futex words, each on its own cache line).
pub const CONTROL_BYTES: usize = 256;

/// A shared memory region (a `memfd`, mapped shared), seen as 32-bit
/// control words followed by 64-bit data words. Every access goes through
/// atomics: the other process writes the same memory concurrently.
pub struct SharedRegion {
    map: memmap2::MmapRaw,
    control: usize,
    data: usize,
}

impl std::fmt::Debug for SharedRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedRegion")
            .field("bytes", &self.map.len())
            .finish()
    }
}

impl SharedRegion {
    /// Creates a region of at least `data_words` 64-bit data words; returns
    /// it and the file descriptor to hand to the other process.
    pub fn create(data_words: usize) -> io::Result<(SharedRegion, OwnedFd)> {
        let bytes = (CONTROL_BYTES + 8 * data_words).next_multiple_of(4096);
        let fd = rustix::fs::memfd_create("cosim-isolation", rustix::fs::MemfdFlags::CLOEXEC)?;
        let file = File::from(fd);
        file.set_len(bytes as u64)?;
        let region = SharedRegion::map(&file)?;
        Ok((region, OwnedFd::from(file)))
    }

    /// Maps a region created by [`SharedRegion::create`] in another process.
    pub fn open(fd: OwnedFd) -> io::Result<SharedRegion> {
        SharedRegion::map(&File::from(fd))
    }

    fn map(file: &File) -> io::Result<SharedRegion> {
        let map = memmap2::MmapOptions::new().map_raw(file)?;
        let len = map.len();
        if len < CONTROL_BYTES + 64 || len % 8 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("shared memory region of {len} bytes is too small"),
            ));
        }
        Ok(SharedRegion {
            map,
            control: CONTROL_BYTES / 4,
            data: (len - CONTROL_BYTES) / 8,
        })
    }

    /// The 32-bit control words.
    pub fn control(&self) -> &[AtomicU32] {
        // SAFETY: the mapping is page-aligned and at least CONTROL_BYTES
        // long (checked in `map`), so it holds `self.control` properly
        // aligned u32s; it stays mapped while `self` lives (the slice borrows
        // `self`). AtomicU32 has the layout of u32, and every access to this
        // memory, here and in the other process, is atomic, so concurrent
        // writes by the other process are not data races.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().cast::<AtomicU32>(), self.control) }
    }

    /// The 64-bit data words.
    pub fn data(&self) -> &[AtomicU64] {
        // SAFETY: as in `control`: the data words start CONTROL_BYTES (a
        // multiple of 8) after a page-aligned address and `self.data` of them
        // fit in the mapping; every access is atomic; the borrow keeps the
        // mapping alive.
        unsafe {
            std::slice::from_raw_parts(
                self.map.as_ptr().add(CONTROL_BYTES).cast::<AtomicU64>(),
                self.data,
            )
        }
    }
}

/// Gives SIGSEGV and SIGBUS their default action (terminate the process),
/// replacing the handler the Rust runtime installs to report stack
/// overflows. That handler returns from faults outside a guard page, so a
/// fault an FMU *raises* would otherwise be ignored; in a host process any
/// fault in the FMU should end the process, which the master then reports.
pub fn default_fault_signals() -> io::Result<()> {
    for signal in [libc::SIGSEGV, libc::SIGBUS] {
        // SAFETY: `signal` with SIG_DFL installs no handler code: it only
        // resets the disposition of a valid signal number; no Rust
        // invariant depends on the previous (runtime) handler.
        let previous = unsafe { libc::signal(signal, libc::SIG_DFL) };
        if previous == libc::SIG_ERR {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn pid(id: u32) -> io::Result<Pid> {
    i32::try_from(id)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("process id {id}")))
}

/// The exit status of the child process `id` if it has ended, without
/// reaping it (`waitid` with `WNOWAIT`): until it is reaped, its process id
/// and so its process group id stay reserved, and [`kill_group`] cannot
/// reach a stranger that reused them.
pub fn peek_exit(id: u32) -> io::Result<Option<ExitStatus>> {
    let status = rustix::process::waitid(
        rustix::process::WaitId::Pid(pid(id)?),
        WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
    )?;
    Ok(status.map(|s| {
        // The raw wait status std decodes: code << 8, or the signal (0x80
        // when it dumped core).
        let raw = match (s.exit_status(), s.terminating_signal()) {
            (Some(code), _) => (code & 0xff) << 8,
            (None, Some(sig)) if s.dumped() => sig | 0x80,
            (None, Some(sig)) => sig,
            (None, None) => 0,
        };
        ExitStatus::from_raw(raw)
    }))
}

/// Sends SIGKILL to every process of the process group `id` (a host runs
/// as the leader of its own group: this reaches it and every process the
/// FMU started that did not leave the group). A group that is already
/// empty is no error.
pub fn kill_group(id: u32) -> io::Result<()> {
    match rustix::process::kill_process_group(pid(id)?, Signal::KILL) {
        Err(rustix::io::Errno::SRCH) => Ok(()),
        other => other.map_err(io::Error::from),
    }
}

/// How a host learns that its master is gone.
#[derive(Debug)]
pub enum MasterWatch {
    /// The master is already gone.
    Gone,
    /// A pidfd of the master, readable once it has ended.
    PidFd(OwnedFd),
    /// No pidfd (an old kernel): the kernel kills the host when the master
    /// dies (`PR_SET_PDEATHSIG`), without cleaning up.
    DeathSignal,
}

/// Starts watching `master`, which must be the parent of this process.
pub fn watch_master(master: u32) -> io::Result<MasterWatch> {
    let parent = || rustix::process::getppid().map(Pid::as_raw_nonzero);
    let master_pid = pid(master)?;
    match rustix::process::pidfd_open(master_pid, rustix::process::PidfdFlags::empty()) {
        // While the master is our parent it has not exited (children are
        // handed to a reaper when their parent exits, before it can be
        // reaped and its id reused), so the pidfd is the master's.
        Ok(fd) if parent() == Some(master_pid.as_raw_nonzero()) => Ok(MasterWatch::PidFd(fd)),
        Ok(_) | Err(rustix::io::Errno::SRCH) => Ok(MasterWatch::Gone),
        Err(_) => {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            if parent() == Some(master_pid.as_raw_nonzero()) {
                Ok(MasterWatch::DeathSignal)
            } else {
                Ok(MasterWatch::Gone)
            }
        }
    }
}

/// Blocks until the process of the pidfd has ended.
pub fn wait_pidfd(fd: &OwnedFd) {
    use rustix::event::{PollFd, PollFlags};
    loop {
        let mut fds = [PollFd::new(fd, PollFlags::IN)];
        match rustix::event::poll(&mut fds, None) {
            Err(rustix::io::Errno::INTR) => continue,
            Ok(0) => continue,
            _ => return,
        }
    }
}

/// Kills this process's group (this process and everything it started
/// that stayed in the group) if this process leads it, else only this
/// process: never a group the process was merely started in.
pub fn kill_own_group() {
    let me = rustix::process::getpid();
    if rustix::process::getpgid(None).ok() == Some(me) {
        let _ = rustix::process::kill_current_process_group(Signal::KILL);
    }
    let _ = rustix::process::kill_process(me, Signal::KILL);
}

/// Asks for the cache line of `word` in a state this processor may write
/// (x86's `prefetchw`, where the processor has it; nothing elsewhere): the
/// line then travels from the other processor while this one works,
/// instead of when it stores.
#[inline]
pub fn prefetch_for_write(word: &AtomicU64) {
    #[cfg(target_arch = "x86_64")]
    if has_prefetchw() {
        // SAFETY: a prefetch is a hint: it reads nothing into a register,
        // changes no memory and cannot fault; the processor has the
        // instruction (`has_prefetchw`); `word` is a valid reference.
        unsafe {
            std::arch::asm!(
                "prefetchw byte ptr [{p}]",
                p = in(reg) word.as_ptr(),
                options(nostack, preserves_flags, readonly),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = word;
}

/// Asks for the cache line of `word` to be read (x86's `prefetcht0`;
/// nothing elsewhere): a line another processor wrote then travels while
/// this one works, instead of when it loads.
#[inline]
pub fn prefetch_for_read(word: &AtomicU64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing into a register,
    // changes no memory and cannot fault; every x86-64 processor has it
    // (SSE); `word` is a valid reference.
    unsafe {
        std::arch::asm!(
            "prefetcht0 byte ptr [{p}]",
            p = in(reg) word.as_ptr(),
            options(nostack, preserves_flags, readonly),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = word;
}

/// Whether the processor has `prefetchw` (CPUID 0x8000_0001, ECX bit 8).
#[cfg(target_arch = "x86_64")]
fn has_prefetchw() -> bool {
    use std::arch::x86_64::__cpuid;
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use super::*;

    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !matches!(
                stat.rsplit(')')
                    .next()
                    .and_then(|s| s.trim().chars().next()),
                Some('Z' | 'X')
            )
        })
    }

    #[test]
    fn an_ended_child_is_seen_without_being_reaped_and_its_group_killed_with_it() {
        // A leader of its own group that started a grandchild and waits.
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .process_group(0)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        let id = child.id();
        assert!(peek_exit(id).unwrap().is_none());
        kill_group(id).unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(status) = peek_exit(id).unwrap() {
                break status;
            }
            assert!(start.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(2));
        };
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        // Not reaped: seen again, and reaped by `wait` with the same status.
        assert_eq!(peek_exit(id).unwrap().and_then(|s| s.signal()), Some(9));
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
        let start = Instant::now();
        while alive(grandchild) {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the grandchild {grandchild} survived its group's kill"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        // The group is empty now: killing it again is no error.
        kill_group(id).unwrap();
    }

    #[test]
    fn exit_codes_are_decoded_like_std_does() {
        let mut child = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(status) = peek_exit(child.id()).unwrap() {
                break status;
            }
            assert!(start.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(2));
        };
        assert_eq!(status.code(), Some(3));
        assert_eq!(child.wait().unwrap(), status);
    }
}
