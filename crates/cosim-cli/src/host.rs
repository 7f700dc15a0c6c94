//! `cosim host` (being written).

use anyhow::Result;

/// Arguments of `cosim host`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {}

/// Runs `cosim host`.
pub fn run(_args: &Args) -> Result<()> {
    anyhow::bail!("cosim host is not available yet")
}
