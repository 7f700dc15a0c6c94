//! `cosim plot` and `cosim run --plot`: traces to an SVG plot
//! (`cosim-plot`, `docs/plot.md`).

use std::path::{Path, PathBuf};

use anyhow::Result;
use cosim_plot::trace::{self, Options, PlotError};

use crate::console::say;
use crate::run::{Failed, exit};

/// Arguments of `cosim plot`.
#[derive(clap::Args, Debug, Clone)]
pub struct PlotArgs {
    /// Trace files (CSV, first column time, headers `name [unit]`): a
    /// run's trace.csv, another run's, any CSV of that form. Each file
    /// gets a line style.
    #[arg(required = true, value_name = "CSV")]
    pub files: Vec<PathBuf>,
    /// Columns to plot, as globs on the names without units
    /// (`chassis.*`, `*.v_c`), comma-separated or repeated. Default: all
    /// (up to --max-columns).
    #[arg(long, value_name = "GLOBS")]
    pub columns: Vec<String>,
    /// A reference CSV drawn as a thin black line over the columns it
    /// matches (as `cosim compare` matches: equal names, `sub.var` with
    /// `var`, or --map).
    #[arg(long, value_name = "CSV")]
    pub reference: Option<PathBuf>,
    /// Pair a plotted column with a reference column: `chassis.v_c=v_c`
    /// (repeatable).
    #[arg(long = "map", value_name = "TRACE=REFERENCE", requires = "reference")]
    pub map: Vec<String>,
    /// The SVG to write (default: plot.svg beside the first file).
    #[arg(short, long, value_name = "SVG")]
    pub output: Option<PathBuf>,
    /// The title (default: the files' names).
    #[arg(long)]
    pub title: Option<String>,
    /// Plot at most this many columns (0: no limit); a note names what
    /// was left out.
    #[arg(long, value_name = "N", default_value_t = trace::DEFAULT_MAX_COLUMNS)]
    pub max_columns: usize,
}

/// The exit status of a plot error: 1 when the plot could not be
/// written, 2 for bad input.
fn failed(e: &PlotError) -> anyhow::Error {
    say!("error: {e}");
    let code = match e {
        PlotError::Write { .. } => exit::RUN_FAILED,
        _ => exit::BAD_INPUT,
    };
    anyhow::Error::new(Failed(code))
}

/// Runs `cosim plot`.
pub fn run(args: &PlotArgs, quiet: bool) -> Result<()> {
    let options = Options {
        columns: args.columns.clone(),
        reference: args.reference.clone(),
        map: args.map.clone(),
        title: args.title.clone(),
        max_columns: args.max_columns,
    };
    let output = args.output.clone().unwrap_or_else(|| {
        args.files
            .first()
            .and_then(|f| f.parent())
            .unwrap_or(Path::new(""))
            .join("plot.svg")
    });
    let plot = trace::plot(&args.files, &options).map_err(|e| failed(&e))?;
    plot.write(&output).map_err(|e| failed(&e))?;
    report(&plot, &output, quiet);
    Ok(())
}

fn report(plot: &trace::Plot, output: &Path, quiet: bool) {
    for note in &plot.notes {
        say!("note: {note}");
    }
    if !quiet {
        say!(
            "plot: {} ({} panel{}, {} column{})",
            crate::console::shown(output).display(),
            plot.units.len(),
            if plot.units.len() == 1 { "" } else { "s" },
            plot.columns.len(),
            if plot.columns.len() == 1 { "" } else { "s" }
        );
    }
}

/// `cosim run --plot`, before the run: the trace to plot and the title
/// (the scenario's name); bad input when the scenario writes no trace.
pub fn requested(
    wanted: bool,
    scenario: &Path,
    prepared: &cosim_scenario::runner::Prepared,
) -> Result<Option<Requested>> {
    if !wanted {
        return Ok(None);
    }
    let Some(trace) = prepared.resolved.outputs.trace.clone() else {
        say!("error: --plot plots the trace, and this scenario writes none ([outputs] trace)");
        return Err(anyhow::Error::new(Failed(exit::BAD_INPUT)));
    };
    let title = scenario
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Some(Requested {
        svg: trace.with_file_name("plot.svg"),
        trace,
        title,
    }))
}

/// What `cosim run --plot` plots: the trace, the SVG and the title.
pub struct Requested {
    /// The trace.
    pub trace: PathBuf,
    /// The SVG: `plot.svg` beside the trace (a single FMU's `-o
    /// result.csv`: `result.svg`).
    pub svg: PathBuf,
    /// The title.
    pub title: String,
}

/// `cosim run --plot`, after the run: the trace to its SVG, unless the
/// run was interrupted. A run that failed is plotted as far as
/// it went, and keeps its exit status; a plot that fails after a
/// successful run fails the command (1: not written, 2: bad trace).
pub fn after_run(
    plot: Option<Requested>,
    interrupted: bool,
    quiet: bool,
    result: Result<()>,
) -> Result<()> {
    let Some(Requested {
        trace: trace_csv,
        svg: output,
        title,
    }) = plot
    else {
        return result;
    };
    if interrupted {
        return result;
    }

    let options = Options {
        title: Some(title),
        ..Options::default()
    };
    let made = trace::plot(&[trace_csv], &options).and_then(|plot| {
        plot.write(&output)?;
        Ok(plot)
    });
    match (made, result) {
        (Ok(plot), result) => {
            report(&plot, &output, quiet);
            result
        }
        (Err(e), Ok(())) => Err(failed(&e)),
        (Err(e), Err(run_failed)) => {
            say!("no plot: {e}");
            Err(run_failed)
        }
    }
}
