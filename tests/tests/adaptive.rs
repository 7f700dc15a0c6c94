//! The adaptive masters (ECCO, predictor/corrector, NEPCE) against the
//! published figures of sadjina2016 (docs/benchmarks.md B1) and the PI
//! controller's limits.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use cosim_core::metrics::{BondMetrics, ColumnProduct, Table, bond_metrics};
use cosim_tests::b1_adaptive::{self, Coupling};
use cosim_tests::b1_jacobi;
use cosim_tests::{Run, reference, run, scenario, with_master};

#[derive(Clone, Copy)]
struct Row {
    file: &'static str,
    kind: &'static str,
    /// Predictor/corrector: the lag of feed-through outputs corrected
    /// (the default) or not (the estimate as published).
    lag_correction: bool,
    /// Published tolerance (ECCO r, predictor/corrector TOL).
    tolerance: f64,
    reference: &'static str,
    power: &'static str,
    t_end: f64,
    /// Published mean step (ms), mean |dP| (W), integral dP (J).
    paper: (f64, f64, f64),
    /// Published constant-step mean |dP| and integral dP of the same case.
    paper_constant: (f64, f64),
}

/// The monolithic reference `name`, read once per test process (parsing
/// the linear one takes a quarter of a second in a debug build, and the
/// tunings evaluate hundreds of runs against it).
fn reference_table(name: &str) -> &'static Table {
    static TABLES: OnceLock<Mutex<HashMap<String, &'static Table>>> = OnceLock::new();
    let mut tables = TABLES.get_or_init(Default::default).lock().unwrap();
    tables
        .entry(name.to_string())
        .or_insert_with(|| Box::leak(Box::new(reference(name))))
}

fn metrics(r: &Run, row: &Row) -> BondMetrics {
    let energy = r.energy();
    let bond = energy
        .names
        .iter()
        .find_map(|n| n.strip_suffix(".residual_power"))
        .unwrap()
        .to_string();
    let reference = reference_table(row.reference);
    let power = ColumnProduct::parse(row.power, reference).unwrap();
    bond_metrics(&energy, &bond, row.t_end, |t| power.at(reference, t)).unwrap()
}

/// Runs the row with tolerance `tol`.
fn run_row(row: &Row, tol: f64, dir: &Path) -> (Run, BondMetrics) {
    run_row_with(row, tol, "", dir)
}

/// [`run_row`] with more `[master]` keys.
fn run_row_with(row: &Row, tol: f64, extra: &str, dir: &Path) -> (Run, BondMetrics) {
    let master = format!(
        "kind = \"{}\"\ntolerance = {tol:e}\nenergy_scale = 750.0\nlag_correction = {}\n{extra}",
        row.kind, row.lag_correction
    );
    let path = with_master(row.file, &master, dir);
    let r = run(&path, &[], None, None);
    assert!(r.error.is_none(), "{}: {:?}", row.file, r.error);
    let m = metrics(&r, row);
    (r, m)
}

/// Tunes the tolerance (bisection on its logarithm, from the published
/// value) until the mean step is within `within` of the paper's.
fn tuned(row: &Row, within: f64, dir: &Path) -> (f64, BondMetrics) {
    tuned_with(row, within, "", dir)
}

/// [`tuned`] with more `[master]` keys.
fn tuned_with(row: &Row, within: f64, extra: &str, dir: &Path) -> (f64, BondMetrics) {
    let target = row.paper.0 * 1e-3;
    let (mut lo, mut hi) = (row.tolerance.ln() - 6.0, row.tolerance.ln() + 4.0);
    let mut tol = row.tolerance;
    for _ in 0..40 {
        let (_, m) = run_row_with(row, tol, extra, dir);
        let ratio = m.mean_step / target;
        if (ratio - 1.0).abs() <= within {
            return (tol, m);
        }
        if ratio > 1.0 {
            hi = tol.ln();
        } else {
            lo = tol.ln();
        }
        tol = ((lo + hi) / 2.0).exp();
    }
    panic!(
        "{}: no tolerance gives a mean step within {within} of {target}",
        row.file
    );
}

const ROWS: [Row; 10] = [
    // Linear, reticulation A (Tables III, IX).
    Row {
        file: "b1_quarter_car_a.toml",
        kind: "ecco",
        lag_correction: true,
        tolerance: 2.8e-6,
        reference: "b1_linear",
        power: "F_c*v_c",
        t_end: 4.0,
        paper: (1.0, 0.4, 1.6),
        paper_constant: (1.3, 6.4),
    },
    Row {
        file: "b1_quarter_car_a.toml",
        kind: "ecco",
        lag_correction: true,
        tolerance: 3.1e-5,
        reference: "b1_linear",
        power: "F_c*v_c",
        t_end: 4.0,
        paper: (2.9, 1.3, 5.0),
        paper_constant: (1.3, 6.4),
    },
    Row {
        file: "b1_quarter_car_a.toml",
        kind: "predictor-corrector",
        lag_correction: true,
        tolerance: 0.67,
        reference: "b1_linear",
        power: "F_c*v_c",
        t_end: 4.0,
        paper: (1.0, 0.7, 2.9),
        paper_constant: (1.3, 6.4),
    },
    // Nonlinear, A (Tables V, X).
    Row {
        file: "b1_quarter_car_a_nonlinear.toml",
        kind: "ecco",
        lag_correction: true,
        tolerance: 7.5e-6,
        reference: "b1_nonlinear",
        power: "F_c*v_c",
        t_end: 2.0,
        paper: (1.0, 1.1, 1.6),
        paper_constant: (4.0, 5.0),
    },
    Row {
        file: "b1_quarter_car_a_nonlinear.toml",
        kind: "ecco",
        lag_correction: true,
        tolerance: 1e-4,
        reference: "b1_nonlinear",
        power: "F_c*v_c",
        t_end: 2.0,
        paper: (3.1, 4.0, 6.0),
        paper_constant: (4.0, 5.0),
    },
    Row {
        file: "b1_quarter_car_a_nonlinear.toml",
        kind: "predictor-corrector",
        lag_correction: true,
        tolerance: 2.1,
        reference: "b1_nonlinear",
        power: "F_c*v_c",
        t_end: 2.0,
        paper: (1.0, 1.9, 3.1),
        paper_constant: (4.0, 5.0),
    },
    // Linear, B (Tables VI, XI).
    Row {
        file: "b1_quarter_car_b.toml",
        kind: "ecco",
        lag_correction: true,
        tolerance: 9.1e-7,
        reference: "b1_linear",
        power: "-F_c*v_w",
        t_end: 4.0,
        paper: (1.0, 1.3, 1.6),
        paper_constant: (12.0, 23.0),
    },
    // Nonlinear, B (Tables VII, XII).
    Row {
        file: "b1_quarter_car_b_nonlinear.toml",
        kind: "ecco",
        lag_correction: true,
        tolerance: 2.4e-5,
        reference: "b1_nonlinear",
        power: "-F_c*v_w",
        t_end: 2.0,
        paper: (1.0, 5.0, 5.0),
        paper_constant: (30.0, 50.0),
    },
    Row {
        file: "b1_quarter_car_b_nonlinear.toml",
        kind: "predictor-corrector",
        lag_correction: true,
        tolerance: 6.5,
        reference: "b1_nonlinear",
        power: "-F_c*v_w",
        t_end: 2.0,
        paper: (1.0, 18.0, 21.0),
        paper_constant: (30.0, 50.0),
    },
    // Linear, B with the wheel's micro step = macro step (Table VIII).
    Row {
        file: "b1_quarter_car_b_coarse_wheel.toml",
        kind: "ecco",
        lag_correction: true,
        tolerance: 1e-6,
        reference: "b1_linear",
        power: "-F_c*v_w",
        t_end: 4.0,
        paper: (1.0, 4.0, 2.0),
        paper_constant: (40.0, 30.0),
    },
];

/// The case label of a scenario in the B1 table.
fn case(file: &str) -> &'static str {
    match file {
        "b1_quarter_car_a.toml" => "linear A",
        "b1_quarter_car_a_nonlinear.toml" => "nonlinear A",
        "b1_quarter_car_b.toml" => "linear B",
        "b1_quarter_car_b_nonlinear.toml" => "nonlinear B",
        "b1_quarter_car_b_coarse_wheel.toml" => "linear B, coarse wheel",
        other => panic!("no case label for {other}"),
    }
}

/// The metrics of a case at the constant 1 ms step of its scenario.
fn constant_step(row: &Row) -> BondMetrics {
    let r = run(&scenario(row.file), &[], None, None);
    assert!(r.error.is_none(), "{}: {:?}", row.file, r.error);
    metrics(&r, row)
}

/// The row's master written from the paper (`cosim_tests::b1_adaptive`)
/// at tolerance `tol`.
fn independent_run(row: &Row, tol: f64) -> Option<Vec<b1_adaptive::Step>> {
    independent_run_coupled(row, tol, Coupling::PAPER)
}

/// [`independent_run`] with the subsystems coupled by `coupling`.
fn independent_run_coupled(
    row: &Row,
    tol: f64,
    coupling: Coupling,
) -> Option<Vec<b1_adaptive::Step>> {
    let (damper, b, micro) = b1_jacobi::of_scenario(row.file)?;
    let indicator = if row.kind == "ecco" {
        b1_adaptive::Indicator::Ecco {
            tolerance: tol,
            energy_scale: 750.0,
        }
    } else {
        b1_adaptive::Indicator::PredictorCorrector {
            tolerance: tol,
            lag_correction: row.lag_correction,
        }
    };
    Some(b1_adaptive::run_coupled(
        damper, b, micro, indicator, coupling, row.t_end,
    ))
}

/// The master's metrics `m` equal `e`, those of the master written from the
/// paper: the same step count, the rest to 1e-6 (rounding only; a 5 %
/// change is 50 000 times more).
fn assert_same_metrics(m: &BondMetrics, e: &BondMetrics, what: &str) {
    let same = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs();
    assert!(
        m.steps == e.steps
            && same(m.mean_step, e.mean_step)
            && same(m.mean_abs_power_error, e.mean_abs_power_error)
            && same(m.integral_residual_power, e.integral_residual_power),
        "{what}: {m:?}; written from the paper: {e:?}"
    );
}

/// The metrics of [`metrics`] from the row's master written from the
/// paper (coupled by `coupling`) instead of the master's logs.
fn independent_metrics(row: &Row, tol: f64, coupling: Coupling) -> Option<BondMetrics> {
    let steps = independent_run_coupled(row, tol, coupling)?;
    let reference = reference_table(row.reference);
    let power = ColumnProduct::parse(row.power, reference).unwrap();
    let total: f64 = steps.iter().map(|s| s.dt).sum();
    Some(BondMetrics {
        mean_step: total / steps.len() as f64,
        mean_transmitted_power: steps.iter().map(|s| s.transmitted * s.dt).sum::<f64>() / total,
        mean_abs_power_error: steps
            .iter()
            .map(|s| (s.transmitted - power.at(reference, s.t)).abs() * s.dt)
            .sum::<f64>()
            / total,
        integral_residual_power: steps.iter().map(|s| s.residual_energy).sum(),
        steps: steps.len(),
    })
}

/// Each adaptive row of the B1 table (ECCO; the predictor/corrector as
/// published and lag-corrected), step by step, equals its master written
/// from the paper and the model equations (`cosim_tests::b1_adaptive`):
/// every step's end time, size, transmitted power, residual energy and
/// indicator. The
/// controller's choice feeds the next step, so any change to the coupling,
/// the indicator or the controller moves every row after it.
#[test]
fn adaptive_steps_equal_the_masters_written_from_the_paper() {
    let dir = tempfile::tempdir().unwrap();
    let rows = ROWS.iter().flat_map(|r| {
        let variants: &[bool] = if r.kind == "predictor-corrector" {
            &[false, true]
        } else {
            &[true]
        };
        variants.iter().map(|&lag_correction| Row {
            lag_correction,
            ..*r
        })
    });
    let mut compared = 0;
    for row in rows {
        let row = &row;
        let Some((_, _, micro)) = b1_jacobi::of_scenario(row.file) else {
            continue;
        };
        compared += 1;
        let (r, _) = run_row(row, row.tolerance, dir.path());
        let expected = independent_run(row, row.tolerance).unwrap();
        let energy = r.energy();
        let log = r.steps();
        let column = |t: &Table, suffix: &str| {
            let name = t.names.iter().find(|n| n.ends_with(suffix)).unwrap();
            t.column(name).unwrap().to_vec()
        };
        let (p, de) = (
            column(&energy, ".transmitted_power"),
            column(&energy, ".residual_energy"),
        );
        let (dt, eps) = (column(&log, "step"), column(&log, "indicator"));
        let time = energy.time();
        let what = format!(
            "{} {} (lag correction {}) at {:e}",
            row.file, row.kind, row.lag_correction, row.tolerance
        );
        // The two computations round differently (in the last bits from
        // the first step on). The coarse wheel's forward Euler at the
        // largest steps (omega h = 0.6, a growth of 1.17 a step) amplifies
        // that tenfold every ten steps in its last second, until a step
        // moves by a nanosecond: its rows are compared up to t = 3 s.
        let until = if micro[1] == 1 { 3.0 } else { row.t_end };
        if until == row.t_end {
            assert_eq!(time.len(), expected.len(), "{what}: steps");
        }
        // 1e-6 is still 50 000 times below a 5 % change.
        let close = |a: f64, b: f64, scale: f64| (a - b).abs() <= 1e-6 * (scale + b.abs());
        for (i, e) in expected.iter().enumerate() {
            if e.t > until {
                break;
            }
            let ok = time[i] == e.t
                && dt[i] == e.dt
                && close(p[i], e.transmitted, 1e-3)
                && close(de[i], e.residual_energy, 1e-9)
                && close(eps[i], e.indicator, 1e-6);
            assert!(
                ok,
                "{what}, step {i}: t {} dt {:e} P {} dE {:e} eps {:e}; written from the paper: {e:?}",
                time[i], dt[i], p[i], de[i], eps[i]
            );
        }
    }
    // Every row of the B1 table, the predictor/corrector both ways.
    assert_eq!(compared, ROWS.len() + 3);
}

/// Every adaptive row of docs/benchmarks.md B1, at the paper's mean step: the
/// reduction of mean |dP| and of the integral of dP against the published
/// constant-step figure reaches at least 80 % of the published reduction
/// (the example: linear A at 1 ms, mean |dP| at most about 0.6 W
/// and integral dP at most about 2.6 J); where the paper shows no reduction
/// (nonlinear A, r = 1e-4: 6 J against 5 J), the published value itself is
/// the bound. Where the published tolerance does not give the paper's mean
/// step within 2 %, the tolerance is tuned until it does, and the value used
/// is printed. The table of docs/algorithms.md (block `b1-table`) is
/// written from these runs.
///
/// The predictor/corrector runs twice: as published (`lag_correction =
/// false`, whose steps oscillate; held to the levels it reaches: 60 % of
/// the published |dP| reduction on linear A) and with the lag of
/// feed-through outputs corrected (the default). Corrected, nonlinear A
/// falls short of 80 % (it reaches about 70 %): its square-root damper has
/// an unbounded slope at zero relative velocity, so the feed-through error
/// `D (u - u_used)` is largest there and the controller spends its
/// smallest steps on the zero crossings (docs/algorithms.md).
#[test]
fn b1_adaptive_rows_reproduce_the_published_reductions() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = String::new();
    let mut table = String::from(
        "| case | master | tolerance (published) | mean dt ms | mean \\|dP\\| W | integral dP J | paper |\n|---|---|---|---|---|---|---|\n",
    );
    let mut failures = Vec::new();
    let mut last_case = "";
    let mut transmitted = f64::NAN;
    for row in &ROWS {
        let variants: &[bool] = if row.kind == "predictor-corrector" {
            &[false, true]
        } else {
            &[true]
        };
        if case(row.file) != last_case {
            last_case = case(row.file);
            let c = constant_step(row);
            if last_case == "linear A" {
                transmitted = c.mean_transmitted_power;
            }
            table.push_str(&format!(
                "| {last_case} | constant | | {:.1} | {} | {} | 1.0 / {} / {} |\n",
                c.mean_step * 1e3,
                sig3(c.mean_abs_power_error),
                sig3(c.integral_residual_power),
                row.paper_constant.0,
                row.paper_constant.1,
            ));
        }
        for &lag_correction in variants {
            let row = &Row {
                lag_correction,
                ..*row
            };
            let (tol, m) = tuned(row, 0.02, dir.path());
            let pc = row.kind == "predictor-corrector";
            // Each row equals its master written from the paper
            // (`cosim_tests::b1_adaptive`); see
            // `adaptive_steps_equal_the_masters_written_from_the_paper`.
            if let Some(e) = independent_metrics(row, tol, Coupling::PAPER) {
                assert_same_metrics(&m, &e, &format!("{} at r = {tol:e}", row.file));
            }
            let (dp_share, e_share) = match (pc, lag_correction, row.file) {
                // The levels reached (see above), so that a regression
                // still fails.
                (true, false, "b1_quarter_car_a.toml") => (0.6, 0.8),
                (true, true, "b1_quarter_car_a_nonlinear.toml") => (0.65, 0.8),
                _ => (0.8, 0.8),
            };
            // A share `f` of the published reduction; the published value
            // itself where the paper shows none.
            let bound = |constant: f64, paper: f64, f: f64| {
                if paper >= constant {
                    paper
                } else {
                    constant - f * (constant - paper)
                }
            };
            let (dp_bound, e_bound) = (
                bound(row.paper_constant.0, row.paper.1, dp_share),
                bound(row.paper_constant.1, row.paper.2, e_share),
            );
            let ok = m.mean_abs_power_error <= dp_bound && m.integral_residual_power <= e_bound;
            let master = match (pc, lag_correction) {
                (false, _) => "ECCO",
                (true, false) => "pred./corr., as published",
                (true, true) => "pred./corr., lag corrected",
            };
            report.push_str(&format!(
                "{:<36} {:<27} tolerance {:<9.3e} (published {:.3e}): mean step {:.3} ms, mean |dP| {:.3} W (paper {}, bound {:.2}), integral dP {:.3} J (paper {}, bound {:.2}){}\n",
                row.file,
                master,
                tol,
                row.tolerance,
                m.mean_step * 1e3,
                m.mean_abs_power_error,
                row.paper.1,
                dp_bound,
                m.integral_residual_power,
                row.paper.2,
                e_bound,
                if ok { "" } else { "  <-- short of the bound" }
            ));
            table.push_str(&format!(
                "| {} | {master} | {} ({}) | {:.2} | {} | {} | {:.1} / {} / {} |\n",
                case(row.file),
                tolerance(tol),
                tolerance(row.tolerance),
                m.mean_step * 1e3,
                sig3(m.mean_abs_power_error),
                sig3(m.integral_residual_power),
                row.paper.0,
                row.paper.1,
                row.paper.2,
            ));
            if !ok {
                failures.push(row.file);
            }
        }
    }
    table.push_str(&format!(
        "\nLinear A at the constant step transmits a mean power of {} W (Table III: 0.4 W).\n",
        sig3(transmitted)
    ));
    println!("{report}");
    assert!(failures.is_empty(), "{report}");
    cosim_tests::check_doc_block("algorithms.md", "b1-table", &table);
}

/// Three significant digits, as the tables print them.
fn sig3(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (2 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

/// A tolerance in the table's short form (`2.8e-6`, `0.514`).
fn tolerance(x: f64) -> String {
    if (0.01..100.0).contains(&x) {
        let s = sig3(x);
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    } else {
        let e = x.abs().log10().floor() as i32;
        let m = x / 10f64.powi(e);
        let m = format!("{m:.1}");
        let m = m.trim_end_matches(".0");
        format!("{m}e{e}")
    }
}

/// The share of step ratios `dt_{i+1} / dt_i` in each bin, after the
/// first 20 steps (the start-up from `dt_min`) and without the last (cut
/// to the stop time): at `theta_min`, below 0.67, below 0.95, within 5 %
/// of 1, below `theta_max`, at `theta_max`; and the share of reversals
/// (a ratio above 1.05 followed by one below 0.95, or the other way round):
/// the signature of a chattering controller.
fn ratio_histogram(dt: &[f64]) -> ([f64; 6], f64) {
    let (th_min, th_max) = (0.2, 1.5);
    let mut bins = [0usize; 6];
    let body = &dt[20.min(dt.len())..dt.len().saturating_sub(1)];
    for w in body.windows(2) {
        let r = w[1] / w[0];
        // Steps are whole nanoseconds: a ratio at a clamp holds to a tick.
        let tick = 2e-9 / w[0];
        let bin = if r <= th_min + tick {
            0
        } else if r < 0.67 {
            1
        } else if r < 0.95 {
            2
        } else if r <= 1.05 {
            3
        } else if r < th_max - tick {
            4
        } else {
            5
        };
        bins[bin] += 1;
    }
    let n = bins.iter().sum::<usize>().max(1) as f64;
    let ratios: Vec<f64> = body.windows(2).map(|w| w[1] / w[0]).collect();
    let reversals = ratios
        .windows(2)
        .filter(|r| (r[0] > 1.05 && r[1] < 0.95) || (r[0] < 0.95 && r[1] > 1.05))
        .count();
    (bins.map(|b| b as f64 / n), reversals as f64 / n)
}

/// The predictor/corrector's steps, as published (lag of feed-through
/// outputs uncorrected) and lag-corrected, at the paper's 1 ms mean step
/// on the three B1 cases of its Tables IX, X and XII: the histogram of step
/// ratios, and mean |dP| at TOL 2 % lower and higher. As published, the
/// step sequence chatters (on linear A about a sixth of the ratios sit at
/// `theta_max`) and mean |dP| jumps with TOL; lag-corrected, the ratios
/// rarely reach a clamp and mean |dP| moves by a few per cent. Written
/// into docs/algorithms.md (block `pc-step-ratios`).
#[test]
fn predictor_corrector_steps_are_smooth_once_the_feedthrough_lag_is_corrected() {
    let dir = tempfile::tempdir().unwrap();
    let mut table = String::from(
        "| case | estimate | TOL | at 0.2 | (0.2, 0.67) | [0.67, 0.95) | [0.95, 1.05] | (1.05, 1.5) | at 1.5 | reversals | mean \\|dP\\| W at TOL -2 % / TOL / +2 % |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut failures = Vec::new();
    for row in ROWS.iter().filter(|r| r.kind == "predictor-corrector") {
        for lag_correction in [false, true] {
            let row = &Row {
                lag_correction,
                ..*row
            };
            let (tol, m) = tuned(row, 0.02, dir.path());
            let (r, _) = run_row(row, tol, dir.path());
            let steps = r.steps();
            let dt = steps.column("step").unwrap();
            // The steps are those of the predictor/corrector written from
            // the paper (`cosim_tests::b1_adaptive`).
            let expected: Vec<f64> = independent_run(row, tol)
                .unwrap()
                .iter()
                .map(|s| s.dt)
                .collect();
            assert!(
                dt == expected.as_slice(),
                "{} (lag correction {lag_correction}) at TOL {tol:e}: {} steps, {} written from the paper",
                row.file,
                dt.len(),
                expected.len()
            );
            let (h, reversals) = ratio_histogram(dt);
            let lower = run_row(row, tol * 0.98, dir.path()).1.mean_abs_power_error;
            let higher = run_row(row, tol * 1.02, dir.path()).1.mean_abs_power_error;
            let dp = m.mean_abs_power_error;
            let moved = ((lower - dp).abs()).max((higher - dp).abs()) / dp;
            let clamped = h[0] + h[5];
            table.push_str(&format!(
                "| {} | {} | {} | {} | {:.1} % | {} / {} / {} |\n",
                case(row.file),
                if lag_correction {
                    "lag corrected"
                } else {
                    "as published"
                },
                tolerance(tol),
                h.map(|x| format!("{:.1} %", x * 100.0)).join(" | "),
                reversals * 100.0,
                sig3(lower),
                sig3(dp),
                sig3(higher),
            ));
            // (Nonlinear B, whose square-root damper feeds through with an
            // unbounded slope at zero relative velocity, reverses about 6 %
            // of its ratios, at the zero crossings; linear A under 1 %.)
            if lag_correction && (clamped > 0.05 || reversals > 0.08 || moved > 0.1) {
                failures.push(format!(
                    "{}: {:.1} % of the ratios at a clamp, {:.1} % reversals, mean |dP| moves {:.1} % with TOL +-2 %",
                    row.file,
                    clamped * 100.0,
                    reversals * 100.0,
                    moved * 100.0
                ));
            }
            // The measures see the chattering they are meant to see.
            if !lag_correction && (clamped < 0.15 || reversals < 0.2) {
                failures.push(format!(
                    "{} as published: only {:.1} % of the ratios at a clamp, {:.1} % reversals",
                    row.file,
                    clamped * 100.0,
                    reversals * 100.0
                ));
            }
        }
    }
    println!("{table}");
    assert!(failures.is_empty(), "{failures:?}\n{table}");
    cosim_tests::check_doc_block("algorithms.md", "pc-step-ratios", &table);
}

/// Beyond the paper: ECCO with first-order input extrapolation and with
/// Gauss-Seidel, on every ECCO case of B1 at the paper's mean step (the
/// tolerance tuned to within 2 % of it for each variant). Written into
/// docs/algorithms.md (block `b1-beyond`), with the factor by which the
/// best variant beats the paper's method (Jacobi, ZOH). Required: each
/// variant's figures (step count, mean step, mean |dP|, integral dP) equal
/// those of the same co-simulation written from the model equations and
/// the docs (`cosim_tests::b1_adaptive::run_coupled`) to 1e-6, so that
/// re-blessing the table cannot hide a change of the extrapolation, the
/// Gauss-Seidel inputs or the indicator; and first-order extrapolation
/// (Jacobi) beats ZOH Jacobi on every case but the coarse wheel, whose own
/// forward-Euler error dominates.
#[test]
fn ecco_with_extrapolation_and_gauss_seidel_beats_the_paper_at_equal_steps() {
    let dir = tempfile::tempdir().unwrap();
    let coupling = |gauss_seidel, order| Coupling {
        gauss_seidel,
        order,
    };
    let variants = [
        ("Jacobi, ZOH", "", coupling(false, 0)),
        ("Jacobi, m = 1", "extrapolation = 1", coupling(false, 1)),
        (
            "Gauss-Seidel, ZOH",
            "scheme = \"gauss-seidel\"",
            coupling(true, 0),
        ),
        (
            "Gauss-Seidel, m = 1",
            "scheme = \"gauss-seidel\"\nextrapolation = 1",
            coupling(true, 1),
        ),
    ];
    let mut table = String::from(
        "| case (mean dt) | variant | r | mean \\|dP\\| W | integral dP J |\n|---|---|---|---|---|\n",
    );
    let mut factors = Vec::new();
    let mut failures = Vec::new();
    for row in ROWS.iter().filter(|r| r.kind == "ecco") {
        let results: Vec<(f64, BondMetrics)> = variants
            .iter()
            .map(|(_, extra, _)| tuned_with(row, 0.02, extra, dir.path()))
            .collect();
        // Each variant equals the same co-simulation written from the model
        // equations and docs/algorithms.md (`b1_adaptive::run_coupled`) at
        // its tuned tolerance. (They agree to about 1e-8, the coarse
        // wheel included: 1e-6 is still 50 000 times below a 5 % change.)
        for ((name, _, coupling), (tol, m)) in variants.iter().zip(&results) {
            let e = independent_metrics(row, *tol, *coupling).unwrap();
            assert_same_metrics(m, &e, &format!("{} {name} at r = {tol:e}", row.file));
        }
        let best = (0..results.len())
            .min_by(|&a, &b| {
                results[a]
                    .1
                    .mean_abs_power_error
                    .total_cmp(&results[b].1.mean_abs_power_error)
            })
            .unwrap();
        for (i, ((name, _, _), (tol, m))) in variants.iter().zip(&results).enumerate() {
            let dp = format!("{:.3}", m.mean_abs_power_error);
            table.push_str(&format!(
                "| {} | {name} | {} | {} | {:.3} |\n",
                if i == 0 {
                    format!("{} ({:.1} ms)", case(row.file), row.paper.0)
                } else {
                    String::new()
                },
                tolerance(*tol),
                if i == best { format!("**{dp}**") } else { dp },
                m.integral_residual_power,
            ));
        }
        let zoh = results[0].1.mean_abs_power_error;
        factors.push(format!(
            "{} at {:.1} ms: {:.1} ({})",
            case(row.file),
            row.paper.0,
            zoh / results[best].1.mean_abs_power_error,
            variants[best].0
        ));
        let coarse = row.file == "b1_quarter_car_b_coarse_wheel.toml";
        if !coarse && results[1].1.mean_abs_power_error >= zoh {
            failures.push(format!("{}: m = 1 does not beat ZOH", row.file));
        }
    }
    table.push_str(&format!(
        "\nMean \\|dP\\| of the paper's method (Jacobi, ZOH) over that of the best variant, at the same mean step: {}.\n",
        factors.join("; ")
    ));
    println!("{table}");
    assert!(failures.is_empty(), "{failures:?}\n{table}");
    cosim_tests::check_doc_block("algorithms.md", "b1-beyond", &table);
}

/// Table III: at the mean |dP| of constant stepping, ECCO needs about a
/// third of the macro steps. Required: at most 40 %.
#[test]
fn ecco_needs_at_most_40_percent_of_the_steps_for_equal_power_error() {
    let dir = tempfile::tempdir().unwrap();
    let constant = run(&scenario("b1_quarter_car_a.toml"), &[], None, None);
    let row = &ROWS[1];
    let target = metrics(&constant, row).mean_abs_power_error;
    let steps_constant = constant.summary.stats.macro_steps;
    // Largest r whose mean |dP| does not exceed constant stepping's.
    let (mut lo, mut hi) = ((1e-6f64).ln(), (1e-3f64).ln());
    let mut best = None;
    for _ in 0..25 {
        let tol = ((lo + hi) / 2.0).exp();
        let (r, m) = run_row(row, tol, dir.path());
        if m.mean_abs_power_error <= target {
            best = Some((tol, r.summary.stats.macro_steps, m));
            lo = tol.ln();
        } else {
            hi = tol.ln();
        }
    }
    let (tol, steps, m) = best.expect("some r reaches the constant-step error");
    // As many steps as ECCO written from the paper takes at that r.
    assert_eq!(steps as usize, independent_run(row, tol).unwrap().len());
    let share = steps as f64 / steps_constant as f64;
    println!(
        "constant 1 ms: {steps_constant} steps, mean |dP| {target:.3} W; ECCO r = {tol:.3e}: {steps} steps ({:.1} %), mean |dP| {:.3} W, mean step {:.3} ms",
        share * 100.0,
        m.mean_abs_power_error,
        m.mean_step * 1e3
    );
    assert!(
        share <= 0.40,
        "ECCO needs {:.1} % of the steps",
        share * 100.0
    );
    cosim_tests::check_doc_block(
        "algorithms.md",
        "b1-ecco-share",
        &format!(
            "At the mean |dP| of constant stepping ({:.2} W), ECCO needs {steps} of {steps_constant} steps ({:.1} %; Table III: about a third).",
            target,
            share * 100.0
        ),
    );
}

/// Every logged step of every adaptive master respects the controller's
/// limits: dt within [dt_min, dt_max] (the last step may be shorter to hit
/// the stop time) and the ratio of consecutive steps within
/// [theta_min, theta_max].
#[test]
fn the_controller_limits_hold_in_every_logged_step() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "b1_quarter_car_a.toml",
            "kind = \"ecco\"\ntolerance = 1e-5\nenergy_scale = 750.0",
        ),
        (
            "b1_quarter_car_b_nonlinear.toml",
            "kind = \"predictor-corrector\"\ntolerance = 3.0",
        ),
        (
            "b1_quarter_car_a.toml",
            "kind = \"nepce\"\natol = 1e-3\nrtol = 1e-3\nextrapolation = 1",
        ),
        (
            "b1_quarter_car_a.toml",
            "kind = \"ecco\"\ntolerance = 1e-4\nenergy_scale = 750.0\nscheme = \"gauss-seidel\"\n[master.controller]\ndt_min = 5e-4\ndt_max = 4e-3\ntheta_min = 0.5\ntheta_max = 1.2",
        ),
    ];
    for (file, master) in cases {
        let path = with_master(file, master, dir.path());
        let r = run(&path, &[], None, None);
        assert!(r.error.is_none(), "{file}: {:?}", r.error);
        let (dt_min, dt_max, th_min, th_max) = if master.contains("dt_min = 5e-4") {
            (5e-4, 4e-3, 0.5, 1.2)
        } else {
            (1e-4, 1e-2, 0.2, 1.5)
        };
        let steps = r.steps();
        let dt = steps.column("step").unwrap();
        let t_stop = r.summary.t_stop;
        // Rows at the step's end.
        let time = steps.time();
        assert!(dt.len() > 100, "{file}: only {} steps", dt.len());
        for i in 0..dt.len() {
            let last = time[i] == t_stop;
            assert!(
                dt[i] <= dt_max * (1.0 + 1e-12),
                "{file} {master}: step {i} = {}",
                dt[i]
            );
            if !last {
                assert!(
                    dt[i] >= dt_min * (1.0 - 1e-12),
                    "{file} {master}: step {i} = {}",
                    dt[i]
                );
            }
            if i > 0 && !last {
                // Steps are whole nanoseconds (the controller's choice
                // rounded to the tick): the ratio holds to one tick.
                let ratio = dt[i] / dt[i - 1];
                let tick = 1e-9 / dt[i - 1];
                assert!(
                    ratio >= th_min * (1.0 - 1e-9) - tick || dt[i] == dt_min,
                    "{file} {master}: ratio {ratio} at step {i}"
                );
                assert!(
                    ratio <= th_max * (1.0 + 1e-9) + tick || dt[i] == dt_max,
                    "{file} {master}: ratio {ratio} at step {i}"
                );
            }
        }
        // The step log's indicator column is the master's indicator.
        let eps = steps.column("indicator").unwrap();
        assert!(eps.iter().all(|e| e.is_finite() && *e >= 0.0));
    }
}

#[test]
fn the_ecco_master_refuses_a_system_without_power_bonds() {
    let dir = tempfile::tempdir().unwrap();
    let path = with_master(
        "b2_displacement_coupling.toml",
        "kind = \"ecco\"",
        dir.path(),
    );
    let out = cosim_tests::cosim(&["run", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("ecco master")
            && err.contains("power bonds")
            && err.contains("predictor-corrector"),
        "{err}"
    );
}

#[test]
fn nepce_warns_once_about_feedthrough() {
    let dir = tempfile::tempdir().unwrap();
    let path = with_master("b1_quarter_car_a.toml", "kind = \"nepce\"", dir.path());
    let out = cosim_tests::cosim(&[
        "run",
        path.to_str().unwrap(),
        "--stop",
        "0.1",
        "--out",
        dir.path().join("o").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let warnings = err
        .lines()
        .filter(|l| l.contains("NEPCE: direct feed-through"))
        .count();
    assert_eq!(warnings, 1, "{err}");
    assert!(err.contains("wheel.F_c"), "{err}");
}

#[test]
fn indicators_are_logged_alongside_a_fixed_step_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = with_master(
        "b1_quarter_car_a.toml",
        "step = 1e-3\nenergy_scale = 750.0\nindicators = [\"energy\", \"predictor-corrector\", \"nepce\"]",
        dir.path(),
    );
    let r = run(&path, &[], Some(0.5), None);
    assert!(r.error.is_none());
    let steps = r.steps();
    for name in [
        "indicator.energy",
        "indicator.predictor-corrector",
        "indicator.nepce",
    ] {
        let col = steps
            .column(name)
            .unwrap_or_else(|| panic!("no column {name}"));
        assert!(
            col.iter().skip(1).all(|v| v.is_finite() && *v >= 0.0),
            "{name}"
        );
        assert!(col.iter().any(|v| *v > 0.0), "{name} is always zero");
    }
    // The energy diagnostic equals the energy log's indicator.
    let energy = r.energy();
    assert_eq!(
        steps.column("indicator.energy").unwrap(),
        energy.column("indicator").unwrap()
    );
}

/// Where the feed-through FMU provides no directional derivatives, the
/// predictor/corrector warns once, naming the output, and predicts it as
/// published: the run equals `lag_correction = false` with the FMU that
/// has them. Where it provides them, the correction is the same in a host
/// process (`isolation = "process"`) and in FMI 3.
#[test]
fn the_lag_correction_needs_directional_derivatives_and_is_the_same_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let master = |lag: bool| {
        format!("kind = \"predictor-corrector\"\ntolerance = 1.0\nlag_correction = {lag}")
    };
    let corrected = with_master("b1_quarter_car_a.toml", &master(true), dir.path());
    let text = std::fs::read_to_string(&corrected).unwrap();
    let noderiv = dir.path().join("noderiv.toml");
    std::fs::write(
        &noderiv,
        text.replace(
            "fmi2/QuarterCarWheelSuspension.fmu",
            "variants/QuarterCarWheelSuspension-noderiv.fmu",
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("o");
    let out = cosim_tests::cosim(&[
        "run",
        noderiv.to_str().unwrap(),
        "--stop",
        "0.5",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("provides no directional derivatives"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("wheel.F_c"), "{err}");
    let published_dir = tempfile::tempdir().unwrap();
    let published = run(
        &with_master(
            "b1_quarter_car_a.toml",
            &master(false),
            published_dir.path(),
        ),
        &[],
        Some(0.5),
        None,
    );
    let without = std::fs::read(out_dir.join("steps.csv")).unwrap();
    let as_published = std::fs::read(published.dir.path().join("steps.csv")).unwrap();
    assert!(
        without == as_published,
        "the steps without directional derivatives differ from the published estimate's"
    );

    // Corrected: other steps than as published, the same in a host process.
    let in_process = run(&corrected, &[], Some(0.5), None);
    let steps = std::fs::read(in_process.dir.path().join("steps.csv")).unwrap();
    assert!(steps != as_published, "the lag correction changed nothing");
    let isolated = dir.path().join("isolated");
    let out = cosim_tests::cosim(&[
        "run",
        corrected.to_str().unwrap(),
        "--stop",
        "0.5",
        "--isolation",
        "process",
        "--out",
        isolated.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for file in ["steps.csv", "trace.csv"] {
        assert!(
            std::fs::read(isolated.join(file)).unwrap()
                == std::fs::read(in_process.dir.path().join(file)).unwrap(),
            "{file} differs in a host process"
        );
    }

    // FMI 3 (fmi3GetDirectionalDerivative in Step Mode): the same steps.
    let fmi3 = with_master("b1_quarter_car_a_fmi3.toml", &master(true), dir.path());
    let r3 = run(&fmi3, &[], Some(0.5), None);
    assert!(r3.error.is_none(), "{:?}", r3.error);
    let dt2 = in_process.steps().column("step").unwrap().to_vec();
    let dt3 = r3.steps().column("step").unwrap().to_vec();
    assert_eq!(dt2.len(), dt3.len());
    for (a, b) in dt2.iter().zip(&dt3) {
        assert!((a - b).abs() <= 1e-9, "{a} vs {b}");
    }
}
