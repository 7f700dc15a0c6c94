//! `cosim compare`: accuracy metrics of a run against a reference solution.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use cosim_core::metrics::{
    BondMetrics, ColumnError, ColumnMatching, ColumnProduct, Table, ToleranceFailure, bond_metrics,
    compare_columns, match_columns_report, tolerance_failures,
};
use serde::Serialize;

use crate::console::{count, out, say};
use crate::run::{Failed, exit};

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
    /// Relative tolerance: with `--rtol` or `--atol`, every compared value
    /// must be within `atol + rtol |reference|` of the reference, or the
    /// command fails (exit status 1) naming the column, the time and the
    /// values: a regression test.
    #[arg(long, value_name = "R")]
    pub rtol: Option<f64>,
    /// Absolute tolerance (see `--rtol`; default 0 when only `--rtol` is
    /// given).
    #[arg(long, value_name = "A")]
    pub atol: Option<f64>,
    /// Machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Report {
    /// The time span compared: `--from` and `--until` within the
    /// reference's time range.
    from: f64,
    until: f64,
    columns: Vec<ColumnError>,
    /// What could not be paired.
    matching: Unpaired,
    /// With `--rtol` / `--atol`: the columns out of tolerance.
    #[serde(skip_serializing_if = "Option::is_none")]
    out_of_tolerance: Option<Vec<ToleranceFailure>>,
    bond: Option<BondReport>,
}

#[derive(Serialize)]
struct Unpaired {
    ambiguous: Vec<(String, Vec<String>)>,
    unmatched_reference: Vec<String>,
    unmatched_trace: Vec<String>,
}

#[derive(Serialize)]
struct BondReport {
    name: String,
    #[serde(flatten)]
    metrics: BondMetrics,
}

/// Runs `cosim compare`.
pub fn run(args: &CompareArgs) -> Result<()> {
    let (trace, trace_text) = Table::read_skipping_text(&args.trace)?;
    let (reference, reference_text) = Table::read_skipping_text(&args.reference)?;
    // Text columns (String variables) are not compared, and said so.
    for (path, text) in [
        (&args.trace, &trace_text),
        (&args.reference, &reference_text),
    ] {
        if !text.is_empty() {
            say!(
                "note: {}: text columns not compared: {}",
                path.display(),
                text.join(", ")
            );
        }
    }
    let mut map = Vec::new();
    for m in &args.map {
        let (t, r) = m
            .split_once('=')
            .with_context(|| format!("--map {m}: expected TRACE_COLUMN=REFERENCE_COLUMN"))?;
        map.push((t.trim().to_string(), r.trim().to_string()));
    }
    let ColumnMatching {
        pairs,
        ambiguous,
        unmatched_reference,
        unmatched_trace,
    } = match_columns_report(&trace, &reference, &map);
    if pairs.is_empty() && args.energy.is_none() {
        bail!(
            "no trace column matches a reference column; pair them with --map (trace columns: {}; reference columns: {})",
            trace.names[1..].join(", "),
            reference.names[1..].join(", ")
        );
    }
    // Only where the reference has values: beyond its ends it would be
    // held at its first or last value.
    let (from, until) = within_reference(args, &trace, &reference)?;
    let columns =
        compare_columns(&trace, &reference, &pairs, from, until).map_err(anyhow::Error::msg)?;
    let tolerance = match (args.rtol, args.atol) {
        (None, None) => None,
        (rtol, atol) => {
            let (rtol, atol) = (rtol.unwrap_or(0.0), atol.unwrap_or(0.0));
            if !(rtol >= 0.0 && atol >= 0.0 && rtol.is_finite() && atol.is_finite()) {
                bail!("--rtol and --atol must be finite and not negative");
            }
            Some(
                tolerance_failures(&trace, &reference, &pairs, (from, until), (rtol, atol))
                    .map_err(anyhow::Error::msg)?,
            )
        }
    };
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
            let metrics = bond_metrics(&energy, &name, until, |t| power.at(&reference, t))
                .map_err(|e| anyhow::anyhow!("{}: {e}", energy_path.display()))?;
            Some(BondReport { name, metrics })
        }
        _ => None,
    };
    let report = Report {
        from,
        until,
        columns,
        matching: Unpaired {
            ambiguous,
            unmatched_reference,
            unmatched_trace,
        },
        out_of_tolerance: tolerance,
        bond,
    };
    let failed = report
        .out_of_tolerance
        .as_ref()
        .is_some_and(|f| !f.is_empty());
    if args.json {
        out!("{}\n", serde_json::to_string_pretty(&report)?)?;
        return verdict(failed);
    }
    // What was not compared, on standard error: nothing skipped silently.
    let m = &report.matching;
    for (r, candidates) in &m.ambiguous {
        say!(
            "note: reference column '{r}' not compared: ambiguous between {} (pair one with --map)",
            candidates.join(", ")
        );
    }
    if !m.unmatched_reference.is_empty() {
        say!(
            "note: reference columns without a trace column: {}",
            m.unmatched_reference.join(", ")
        );
    }
    if !m.unmatched_trace.is_empty() {
        say!(
            "note: trace columns not compared: {}",
            m.unmatched_trace.join(", ")
        );
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
        let sig = |x: f64| cosim_core::text::significant(x, 5);
        for c in &report.columns {
            let _ = writeln!(
                text,
                "{:<w$}  {:>12}  {:>12}  {:>12}  {:>7}",
                format!("{} ({})", c.column, c.reference),
                sig(c.max_abs),
                sig(c.rms),
                sig(c.mean_relative),
                c.points
            );
        }
    }
    if let Some(b) = &report.bond {
        let m = &b.metrics;
        let _ = writeln!(text, "power bond {}:", b.name);
        let _ = writeln!(
            text,
            "  mean macro step            {:.6} ms ({})",
            m.mean_step * 1e3,
            count(m.steps, "step", "steps")
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
    if let Some(failures) = &report.out_of_tolerance {
        let (rtol, atol) = (args.rtol.unwrap_or(0.0), args.atol.unwrap_or(0.0));
        if failures.is_empty() {
            let _ = writeln!(
                text,
                "every compared value within atol {atol} + rtol {rtol} |reference|"
            );
        }
        for f in failures {
            let _ = writeln!(
                text,
                "out of tolerance: {} ({}): {} beyond atol {atol} + rtol {rtol} |reference|; first at t = {}: {} vs {}; worst at t = {}: {} vs {}",
                f.column,
                f.reference,
                count(f.count, "value", "values"),
                f.first.t,
                f.first.value,
                f.first.reference,
                f.worst.t,
                f.worst.value,
                f.worst.reference
            );
        }
    }
    out!("{text}")?;
    verdict(failed)
}

/// Exit status 1 when a value was out of tolerance.
fn verdict(failed: bool) -> Result<()> {
    if failed {
        Err(anyhow::Error::new(Failed(exit::RUN_FAILED)))
    } else {
        Ok(())
    }
}

/// `--from` and `--until` within the reference's time range; a note on
/// standard error when the trace has time points outside it (they are not
/// compared).
fn within_reference(args: &CompareArgs, trace: &Table, reference: &Table) -> Result<(f64, f64)> {
    let (Some(&r0), Some(&r1)) = (reference.time().first(), reference.time().last()) else {
        bail!("{}: no rows", args.reference.display());
    };
    let (from, until) = (args.from.max(r0), args.until.min(r1));
    let outside = trace
        .time()
        .iter()
        .filter(|&&t| t >= args.from && t <= args.until && !(from..=until).contains(&t))
        .count();
    if outside > 0 {
        say!(
            "note: {} time points of the trace are outside the reference's time range [{r0}, {r1}] ({}) and not compared",
            outside,
            args.reference.display()
        );
    }
    Ok((from, until))
}
