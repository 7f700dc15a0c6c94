//! `cosim host`: the child process of process isolation (`isolation =
//! "process"`). It is started by `cosim run` / `cosim check`, never by hand:
//! its standard input is the socket to the master, which sends the shared
//! memory region and then every request (see `cosim_isolation::protocol`).

use anyhow::Result;

/// Arguments of `cosim host`: everything it serves comes over the socket.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The FMU of the first subsystem the host was started for (more may
    /// join it): not read, it names the host in process listings.
    #[arg(long, value_name = "PATH")]
    pub fmu: Option<std::path::PathBuf>,
}

/// Runs `cosim host`: serves the master until it says stop or goes away.
pub fn run(_args: &Args) -> Result<()> {
    cosim_isolation::host::serve()?;
    Ok(())
}
