//! `cosim host`: the child process of process isolation (`isolation =
//! "process"`). It is started by `cosim run` / `cosim check`, never by hand:
//! its standard input is the socket to the master, which sends the shared
//! memory region and then every request (see `cosim_isolation::protocol`).

use std::path::PathBuf;

use anyhow::Result;

/// Arguments of `cosim host`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The FMU to load (.fmu file or unpacked directory); with
    /// `--extracted`, the .fmu file, named in messages.
    #[arg(long, value_name = "PATH")]
    pub fmu: PathBuf,
    /// The directory the master extracted the .fmu into (the master's:
    /// it keeps it while the host runs and removes it), loaded instead of
    /// extracting the archive again.
    #[arg(long, value_name = "DIR")]
    pub extracted: Option<PathBuf>,
    /// The instance name (the subsystem's name).
    #[arg(long, value_name = "NAME")]
    pub name: String,
}

/// Runs `cosim host`: serves the master until it says stop or goes away.
pub fn run(args: &Args) -> Result<()> {
    cosim_isolation::host::serve(&args.fmu, args.extracted.as_deref(), &args.name)?;
    Ok(())
}
