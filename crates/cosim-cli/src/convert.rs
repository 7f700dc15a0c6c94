//! `cosim convert` (being written).

use anyhow::Result;

/// Arguments of `cosim convert`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {}

/// Runs `cosim convert`.
pub fn run(_args: &Args) -> Result<()> {
    anyhow::bail!("cosim convert is not available yet")
}
