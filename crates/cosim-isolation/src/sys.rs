//! The only `unsafe` of this crate: viewing a shared memory mapping as
//! atomics, and restoring the default action of the fault signals in the
//! host process.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU32, AtomicU64};

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
