//! `cosim compare`: accuracy metrics of a run against a reference solution.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use cosim_core::metrics::{
    BondMetrics, ColumnError, ColumnProduct, Table, bond_metrics, compare_columns, match_columns,
};
use serde::Serialize;

use crate::console::out;

/// Arguments of `cosim compare`.
#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// The run's trace (or any CSV whose first column is time).
    pub trace: PathBuf,
    /// The reference CSV (first column time; interpolated linearly).
    pub reference: PathBuf,
    /// Pair a trace column with a reference column: `chassis.v_c=v_c`
    /// (repeatable). Without it, equal names are paired, and `sub.var` with
    /// `var` when only one trace column ends in `.var`.
    #[arg(long = "map", value_name = "TRACE=REFERENCE")]
    pub map: Vec<String>,
    /// Compare from this time on.
    #[arg(long, default_value_t = f64::NEG_INFINITY, allow_negative_numbers = true)]
    pub from: f64,
    /// Compare up to this time.
    #[arg(long, default_value_t = f64::INFINITY)]
    pub until: f64,
    /// The run's energy log, for the power-bond metrics of sadjina2016
    /// (mean step, mean transmitted power, mean |dP|, integral of dP).
    #[arg(long, value_name = "ENERGY_CSV", requires = "reference_power")]
    pub energy: Option<PathBuf>,
    /// The bond in the energy log (default: the first one).
    #[arg(long)]
    pub bond: Option<String>,
    /// The reference transmitted power as a signed product of reference
    /// columns, e.g. `F_c*v_c` or `-F_c*v_w`.
    #[arg(long, value_name = "EXPR")]
    pub reference_power: Option<String>,
    /// Machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Report {
    columns: Vec<ColumnError>,
    bond: Option<BondReport>,
}

#[derive(Serialize)]
struct BondReport {
    name: String,
    #[serde(flatten)]
    metrics: BondMetrics,
}

/// Runs `cosim compare`.
pub fn run(args: &CompareArgs) -> Result<()> {
    let trace = Table::read(&args.trace)?;
    let reference = Table::read(&args.reference)?;
    let mut map = Vec::new();
    for m in &args.map {
        let (t, r) = m
            .split_once('=')
            .with_context(|| format!("--map {m}: expected TRACE_COLUMN=REFERENCE_COLUMN"))?;
        map.push((t.trim().to_string(), r.trim().to_string()));
    }
    let pairs = match_columns(&trace, &reference, &map);
    if pairs.is_empty() && args.energy.is_none() {
        bail!(
            "no trace column matches a reference column; pair them with --map (trace columns: {}; reference columns: {})",
            trace.names[1..].join(", "),
            reference.names[1..].join(", ")
        );
    }
    let columns = compare_columns(&trace, &reference, &pairs, args.from, args.until)
        .map_err(anyhow::Error::msg)?;
    let bond = match (&args.energy, &args.reference_power) {
        (Some(energy_path), Some(expr)) => {
            let energy = Table::read(energy_path)?;
            let name = match &args.bond {
                Some(b) => b.clone(),
                None => energy
                    .names
                    .iter()
                    .find_map(|n| n.strip_suffix(".residual_power").map(str::to_string))
                    .with_context(|| format!("{}: no bond columns", energy_path.display()))?,
            };
            let power = ColumnProduct::parse(expr, &reference)
                .map_err(|e| anyhow::anyhow!("--reference-power {expr}: {e}"))?;
            let metrics = bond_metrics(&energy, &name, args.until, |t| power.at(&reference, t))
                .map_err(|e| anyhow::anyhow!("{}: {e}", energy_path.display()))?;
            Some(BondReport { name, metrics })
        }
        _ => None,
    };
    let report = Report { columns, bond };
    if args.json {
        return out!("{}\n", serde_json::to_string_pretty(&report)?);
    }
    let mut text = String::new();
    if !report.columns.is_empty() {
        let w = report
            .columns
            .iter()
            .map(|c| c.column.len() + c.reference.len() + 4)
            .max()
            .unwrap_or(10);
        let _ = writeln!(
            text,
            "{:<w$}  {:>12}  {:>12}  {:>12}  {:>7}",
            "column (reference)", "max |err|", "rms", "mean rel", "points"
        );
        for c in &report.columns {
            let _ = writeln!(
                text,
                "{:<w$}  {:>12.4e}  {:>12.4e}  {:>12.4e}  {:>7}",
                format!("{} ({})", c.column, c.reference),
                c.max_abs,
                c.rms,
                c.mean_relative,
                c.points
            );
        }
    }
    if let Some(b) = &report.bond {
        let m = &b.metrics;
        let _ = writeln!(text, "power bond {}:", b.name);
        let _ = writeln!(
            text,
            "  mean macro step            {:.6} ms ({} steps)",
            m.mean_step * 1e3,
            m.steps
        );
        let _ = writeln!(
            text,
            "  mean transmitted power     {:.6} W",
            m.mean_transmitted_power
        );
        let _ = writeln!(
            text,
            "  mean absolute power error  {:.6} W",
            m.mean_abs_power_error
        );
        let _ = writeln!(
            text,
            "  integral of residual power {:.6} J",
            m.integral_residual_power
        );
    }
    out!("{text}")
}
