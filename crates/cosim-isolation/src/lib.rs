//! Process isolation for `cosim`: a subsystem whose FMU is loaded and
//! called by a child process, so that a crash, an abort, an `exit` or a
//! hang in the FMU ends the child and becomes an ordinary error of the run.
//!
//! - [`IsolatedSubsystem`] (master side) implements
//!   [`cosim_core::Subsystem`] with the same slots and information as the
//!   in-process [`cosim_core::FmuSubsystem`];
//! - [`host::serve`] (child side) is what `cosim host` runs: it loads the
//!   FMUs of its group with `cosim-fmi` and serves the master's requests;
//! - [`HostPool`]: the host processes of a run, which its isolated FMUs
//!   share (one per processor beyond the master's by default); each host
//!   is a group of FMUs on the master's side (`group`).
//!
//! The channel is a shared memory region with a futex handshake (spinning
//! briefly first) for the per-step calls, in a fixed binary layout, and a
//! Unix socket with `postcard` frames for everything of no fixed size; see
//! [`protocol`]. The macro steps of a host's FMUs (four or more) go
//! through its step lane, packed and sent by rounds
//! ([`protocol::LaneSlot`]); every other call of an FMU through its own
//! region. A system whose FMUs all live in one host hands it each quiet
//! stretch of fixed-step Jacobi steps ([`cosim_core::hosted`]): the host
//! steps and routes them itself ([`protocol::Op::HeldRun`]), one request
//! per stretch.

mod channel;
mod group;
pub mod host;
mod isolated;
pub mod protocol;
mod sys;
mod tail;

pub use group::{HostPool, describe_exit, set_host_log, set_host_program};
pub use isolated::{DEFAULT_TIMEOUT, IsolatedSubsystem, IsolationSettings, watch_interrupt};
