//! Plots of cosim's outputs as self-contained SVG (`docs/plot.md`).
//!
//! - [`chart`]: a figure of panels over one shared horizontal axis, legends
//!   beside the panels, round ticks, clipped and thinned lines. SVG with
//!   `<text>` in the viewer's sans-serif face: no font files, at build time
//!   or at run time.
//! - [`ticks`]: round tick values with exact labels.
//! - [`trace`]: `cosim plot` and `cosim run --plot`: traces to a figure,
//!   one panel per unit, a line style per file, a reference overlay.
//!
//! The sweep plot of `cosim-sweep` is a [`chart::Figure`] too.
//!
//! ```no_run
//! # fn demo() -> Result<(), cosim_plot::trace::PlotError> {
//! use cosim_plot::trace::{Options, plot};
//! let p = plot(&["out/trace.csv".into()], &Options::default())?;
//! p.write("out/plot.svg".as_ref())?;
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

pub mod chart;
pub mod ticks;
pub mod trace;
