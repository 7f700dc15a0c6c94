//! The libcosim side of the compatibility suite: running a system file,
//! unchanged, in libcosim (`tests/python/libcosim_run.py`, libcosimpy) and
//! comparing its trace with `cosim`'s, column by column and value by value.

use std::path::Path;
use std::process::Command;

/// A trace read back: header and rows of cells as written.
#[derive(Debug, Clone)]
pub struct Trace {
    /// Column names, units stripped (`chassis.z_c [m]` -> `chassis.z_c`).
    pub header: Vec<String>,
    /// Cells, row by row (an empty cell: no value).
    pub rows: Vec<Vec<String>>,
}

impl Trace {
    /// Reads a CSV trace (cosim's `trace.csv` or `libcosim_run.py`'s).
    pub fn read(path: &Path) -> Trace {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let mut lines = text.lines();
        let header = lines
            .next()
            .unwrap_or_else(|| panic!("{} is empty", path.display()))
            .split(',')
            .map(|h| strip_unit(h).to_string())
            .collect();
        let rows = lines
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect();
        Trace { header, rows }
    }

    /// Index of column `name` (unit stripped).
    pub fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// Column `name` as numbers (panics when absent or not numeric; empty
    /// cells are NaN).
    pub fn values(&self, name: &str) -> Vec<f64> {
        let c = self
            .column(name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", self.header));
        self.rows.iter().map(|r| cell(&r[c], name)).collect()
    }

    /// The time column.
    pub fn times(&self) -> Vec<f64> {
        self.values("time")
    }
}

fn cell(s: &str, name: &str) -> f64 {
    if s.is_empty() {
        return f64::NAN;
    }
    match s {
        "true" => 1.0,
        "false" => 0.0,
        _ => s
            .parse()
            .unwrap_or_else(|e| panic!("{name}: cell {s:?} is not a number: {e}")),
    }
}

/// `name [unit]` -> `name`.
pub fn strip_unit(h: &str) -> &str {
    match h.rfind(" [") {
        Some(i) if h.ends_with(']') => &h[..i],
        _ => h,
    }
}

/// Runs `system` (an OSP file or directory, or with `ssp` an SSP system)
/// in libcosim until `stop` and returns its trace (see the script's doc for
/// what the rows hold) and the macro steps it took, in nanoseconds.
pub fn run(system: &Path, stop: f64, ssp: bool, dir: &Path) -> (Trace, Vec<i64>) {
    run_with(system, stop, if ssp { &["--ssp"] } else { &[] }, dir)
}

/// As [`run`] for an OSP file with ECCO, the execution built through
/// libcosim's C API as its OSP loader would build it (`--api`: libcosim
/// 0.11.2 refuses files with two or more power bonds).
pub fn run_api(system: &Path, stop: f64, dir: &Path) -> (Trace, Vec<i64>) {
    run_with(system, stop, &["--api"], dir)
}

fn run_with(system: &Path, stop: f64, extra: &[&str], dir: &Path) -> (Trace, Vec<i64>) {
    crate::fmus();
    let out = dir.join("libcosim.csv");
    let mut cmd = Command::new(crate::python());
    cmd.arg(crate::root().join("tests/python/libcosim_run.py"))
        .arg(system)
        .arg(&out)
        .args(["--stop", &stop.to_string()])
        .args(extra);
    let o = cmd.output().expect("running tests/python/libcosim_run.py");
    assert!(
        o.status.success(),
        "libcosim_run.py {} failed (libcosimpy installed? `cargo xtask test` installs it into .venv/):\n{}",
        system.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let steps_path = dir.join("libcosim.csv.steps.csv");
    let steps = std::fs::read_to_string(&steps_path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", steps_path.display()))
        .lines()
        .skip(1)
        .map(|l| l.parse().expect("a step in ns"))
        .collect();
    (Trace::read(&out), steps)
}

/// What a value-by-value comparison found.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Columns present in both traces and compared (time excluded).
    pub columns: usize,
    /// Rows compared.
    pub rows: usize,
    /// Cells compared (non-empty in libcosim's trace).
    pub values: usize,
    /// The first differences, as `column row k: cosim x, libcosim y`.
    pub differing: Vec<String>,
    /// How many cells differ in all.
    pub n_differing: usize,
}

/// Compares `cosim` with `libcosim` row by row (same times, bit for bit)
/// on every column of `libcosim` except those in `skip`; every such column
/// must be in `cosim`'s trace. Cells are compared as f64, bit for bit
/// (`true`/`false` as 1/0); an empty libcosim cell is not compared.
pub fn compare_exact(cosim: &Trace, libcosim: &Trace, skip: &[&str]) -> Comparison {
    assert_eq!(
        cosim.rows.len(),
        libcosim.rows.len(),
        "cosim wrote {} rows, libcosim {}",
        cosim.rows.len(),
        libcosim.rows.len()
    );
    let mut cmp = Comparison {
        rows: libcosim.rows.len(),
        ..Comparison::default()
    };
    let missing: Vec<&String> = libcosim
        .header
        .iter()
        .filter(|h| !skip.contains(&h.as_str()) && cosim.column(h).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "columns of libcosim's trace missing from cosim's: {missing:?}\ncosim has {:?}",
        cosim.header
    );
    for (j, name) in libcosim.header.iter().enumerate() {
        if skip.contains(&name.as_str()) {
            continue;
        }
        let c = cosim.column(name).expect("checked above");
        if name != "time" {
            cmp.columns += 1;
        }
        for (k, (ours, theirs)) in cosim.rows.iter().zip(&libcosim.rows).enumerate() {
            if theirs[j].is_empty() {
                continue;
            }
            let x = cell(&ours[c], name);
            let y = cell(&theirs[j], name);
            if name != "time" {
                cmp.values += 1;
            }
            if x.to_bits() != y.to_bits() {
                cmp.n_differing += 1;
                if cmp.differing.len() < 10 {
                    cmp.differing
                        .push(format!("{name} row {k}: cosim {x:?}, libcosim {y:?}"));
                }
            }
        }
    }
    cmp
}
