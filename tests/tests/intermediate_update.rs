//! FMI 3 intermediate update (issue 7 item 2): polynomial inputs reach FMI 3
//! FMUs inside `fmi3DoStep` through the intermediate update callback, as
//! they reach FMI 2 FMUs through `fmi2SetRealInputDerivatives`. The kit's
//! FMI 3 builds provide it; their `-fmi3-no-intermediate-update` variants do
//! not, and get the zero-order hold with a warning.
//!
//! The same model takes the same polynomial either way, so an FMI 3 run
//! must reproduce the FMI 2 run up to rounding (the two sides evaluate the
//! polynomial in different orders), and the variant run must not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use cosim_tests::b4_reference::{self, Delivery, Kind, Params};
use cosim_tests::{Table, cosim, fmus, run, scenario};
use fmu_kit::Variant;

/// `scenario` with every `fmus/dist/fmi2/<Model>.fmu` replaced by `fmu(model)`
/// and `[master]` extended by `master_extra`.
fn with_fmus(
    dir: &Path,
    name: &str,
    scenario_file: &str,
    master_extra: &str,
    fmu: impl Fn(&str) -> PathBuf,
) -> PathBuf {
    fmus();
    let mut text = std::fs::read_to_string(scenario(scenario_file)).unwrap();
    while let Some(start) = text.find("\"../fmus/dist/fmi2/") {
        let end = start + text[start + 1..].find('"').unwrap() + 1;
        let model = text[start..end]
            .trim_start_matches("\"../fmus/dist/fmi2/")
            .trim_end_matches(".fmu")
            .to_string();
        text.replace_range(start..=end, &format!("\"{}\"", fmu(&model).display()));
    }
    if let Some(line) = master_extra.split('=').next().map(str::trim)
        && !line.is_empty()
    {
        // Drop the scenario's own setting of the key.
        text = text
            .lines()
            .filter(|l| !l.trim_start().starts_with(&format!("{line} =")))
            .collect::<Vec<_>>()
            .join("\n")
            + "\n";
    }
    text = text.replacen("[master]\n", &format!("[master]\n{master_extra}\n"), 1);
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn fmi2(model: &str) -> PathBuf {
    cosim_tests::fmi2(model)
}

fn fmi3(model: &str) -> PathBuf {
    cosim_tests::fmi3(model)
}

fn fmi3_without(model: &str) -> PathBuf {
    fmu_kit::dist::variant_path(model, Variant::NoIntermediateUpdate)
}

/// Largest difference between two traces over every column, relative to
/// the column's largest magnitude.
fn max_scaled_difference(a: &Table, b: &Table) -> f64 {
    assert_eq!(a.names, b.names);
    assert_eq!(a.time().len(), b.time().len(), "different numbers of rows");
    let mut worst: f64 = 0.0;
    for (ca, cb) in a.columns.iter().zip(&b.columns).skip(1) {
        let scale = ca.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
        for (x, y) in ca.iter().zip(cb) {
            worst = worst.max((x - y).abs() / scale);
        }
    }
    worst
}

#[test]
fn fixed_step_extrapolation_reaches_fmi3_fmus_as_it_reaches_fmi2_fmus() {
    // B1 A, Jacobi, extrapolation of order 2: the wheel takes the chassis
    // velocity as a quadratic, the chassis the force.
    let dir = tempfile::tempdir().unwrap();
    let extra = "extrapolation = 2";
    let f = "b1_quarter_car_a.toml";
    let two = run(
        &with_fmus(dir.path(), "fmi2", f, extra, fmi2),
        &[],
        Some(1.0),
        None,
    );
    let three = run(
        &with_fmus(dir.path(), "fmi3", f, extra, fmi3),
        &[],
        Some(1.0),
        None,
    );
    let held = run(
        &with_fmus(dir.path(), "fmi3_noiu", f, extra, fmi3_without),
        &[],
        Some(1.0),
        None,
    );
    for r in [&two, &three, &held] {
        assert!(r.error.is_none(), "{:?}", r.error);
    }
    let same = max_scaled_difference(&two.trace(), &three.trace());
    assert!(
        same < 1e-12,
        "FMI 3 with intermediate update vs FMI 2: {same:e}"
    );
    let differs = max_scaled_difference(&two.trace(), &held.trace());
    assert!(
        differs > 1e-4,
        "FMI 3 without intermediate update vs FMI 2: {differs:e}"
    );
}

#[test]
fn ifosmondi_gives_fmi3_fmus_its_hermite_inputs_through_intermediate_update() {
    // B4 under IFOSMONDI on the FMI 3 builds: the Hermite inputs of every
    // iteration reach the FMUs inside fmi3DoStep. Without intermediate
    // update the master can only hold values (start value, then the
    // iterated end value) and says so once per FMU; at this 2 ms base step
    // that is far off the reference, where the Hermite inputs are close.
    //
    // The FMI 3 run is not the FMI 2 run: FMI 3 has no input derivatives,
    // so the output derivative of the feed-through output f2 the FMU
    // reports cannot contain the slope of its inputs (FMI 2 builds take
    // it from the input polynomial), and the Hermite slopes differ. The
    // mean relative errors of the FMI 2 builds, the FMI 3 builds and the
    // values-only variants of both are written into docs/algorithms.md
    // (block `b4-fmi-variants`), each checked against the same run from
    // the model equations.
    let dir = tempfile::tempdir().unwrap();
    let f = "b4_two_mass_ifosmondi.toml";
    let smooth = run(&with_fmus(dir.path(), "fmi3", f, "", fmi3), &[], None, None);
    assert!(smooth.error.is_none(), "{:?}", smooth.error);
    let noiu = with_fmus(dir.path(), "fmi3_noiu", f, "", fmi3_without);
    let out_dir = dir.path().join("out_noiu");
    let out = cosim(&[
        "run",
        noiu.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for sub in ["'s1'", "'s2'"] {
        let n = err
            .lines()
            .filter(|l| l.contains(sub) && l.contains("so its inputs are not C1"))
            .count();
        assert_eq!(n, 1, "{sub}: {err}");
    }
    let held = run(&noiu, &[], None, None);
    let (e_smooth, e_held) = (
        cosim_tests::b4_mean_relative_error(&smooth),
        cosim_tests::b4_mean_relative_error(&held),
    );
    assert!(
        e_smooth < 0.15 && e_smooth < e_held / 100.0,
        "mean relative error with intermediate update {e_smooth:.3e}, without {e_held:.3e}"
    );
    // Every accepted step converged (eq. 27) without halving.
    assert_eq!(smooth.summary.stats.halvings, 0);

    // The FMI 2 builds (input derivatives) and their values-only variant.
    let two = run(&with_fmus(dir.path(), "fmi2", f, "", fmi2), &[], None, None);
    let two_held = run(
        &with_fmus(dir.path(), "fmi2_nointerp", f, "", |m| {
            fmu_kit::dist::variant_path(m, Variant::NoInterp)
        }),
        &[],
        None,
        None,
    );
    for r in [&two, &two_held] {
        assert!(r.error.is_none(), "{:?}", r.error);
    }
    let (e_two, e_two_held) = (
        cosim_tests::b4_mean_relative_error(&two),
        cosim_tests::b4_mean_relative_error(&two_held),
    );
    // FMI 2 is best (its Hermite slopes are exact), values only is worst
    // whichever FMI version.
    assert!(e_two < e_smooth && e_smooth < e_two_held.min(e_held));
    // Each figure, and the doStep calls behind it, is that of B4
    // co-simulated from the model equations and the master's description
    // (`cosim_tests::b4_reference`), to rounding.
    let reference = cosim_tests::reference("b4");
    let expected = |delivery| {
        b4_reference::iterative(
            &Params::default(),
            Kind::Ifosmondi,
            delivery,
            b4_reference::SCENARIO,
            1.0,
        )
    };
    let values = expected(Delivery::Values);
    for (what, r, e, want) in [
        ("FMI 2", &two, e_two, &expected(Delivery::Fmi2)),
        ("FMI 3", &smooth, e_smooth, &expected(Delivery::Fmi3)),
        ("FMI 2 -nointerp", &two_held, e_two_held, &values),
        ("FMI 3 without intermediate update", &held, e_held, &values),
    ] {
        let (do_steps, want) = (want.do_steps, want.mean_relative_error(&reference));
        assert!(
            (e - want).abs() <= 1e-8 * want,
            "{what}: mean relative error {e:e}, the reference's {want:e}"
        );
        assert_eq!(r.summary.calls.do_step, do_steps, "{what}: doStep calls");
    }
    let pct = |e: f64| {
        let p = e * 100.0;
        let digits = (1 - p.abs().log10().floor() as i32).max(0) as usize;
        format!("{p:.digits$} %")
    };
    cosim_tests::check_doc_block(
        "algorithms.md",
        "b4-fmi-variants",
        &format!(
            "On B4 at the 2 ms base step the mean relative error is {} on the\nFMI 2 builds, {} on the FMI 3 builds with intermediate update, and\n{} (FMI 2 `-nointerp`) and {} (FMI 3\n`-fmi3-no-intermediate-update`) with values only:",
            pct(e_two),
            pct(e_smooth),
            pct(e_two_held),
            pct(e_held)
        ),
    );
}
