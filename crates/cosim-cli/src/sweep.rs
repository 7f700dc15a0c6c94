//! `cosim sweep` (being written).

use anyhow::Result;

/// Arguments of `cosim sweep`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {}

/// Runs `cosim sweep`.
pub fn run(_args: &Args) -> Result<()> {
    anyhow::bail!("cosim sweep is not available yet")
}
