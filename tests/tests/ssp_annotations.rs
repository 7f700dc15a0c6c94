//! `cosim run` and `cosim convert` on an SSP system with libcosim's OSP
//! annotations (`crates/cosim-ssp/tests/data/osp_annotations.ssd`: B1 with
//! `osp:FixedStepAlgorithm baseStepSize="1e-4"` and a wheel
//! `osp:StepSizeHint` of 2.5e-4 s), as `.ssd` and `.ssp`: the step, the
//! wheel's step multiple in summary.json, and the converted scenario
//! running byte for byte like the system.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

use cosim_tests::{cosim, fmi2, root};

const SSD: &str = "crates/cosim-ssp/tests/data/osp_annotations.ssd";

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "cosim failed ({:?}):\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn run(input: &Path, out: &Path) -> Output {
    let out = cosim(&[
        "run",
        input.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ]);
    ok(&out);
    out
}

/// The SSD packaged as an `.ssp`, its FMUs in resources/.
fn package(dir: &Path) -> PathBuf {
    let ssd = std::fs::read_to_string(root().join(SSD))
        .unwrap()
        .replace("../../../../fmus/dist/fmi2/", "resources/");
    let p = dir.join("b1_osp.ssp");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("SystemStructure.ssd", opts).unwrap();
    zip.write_all(ssd.as_bytes()).unwrap();
    for m in ["QuarterCarChassis", "QuarterCarWheelSuspension"] {
        zip.start_file(format!("resources/{m}.fmu"), opts).unwrap();
        zip.write_all(&std::fs::read(fmi2(m)).unwrap()).unwrap();
    }
    zip.finish().unwrap();
    p
}

/// Steps of 1e-4 s to 0.01 s; the chassis steps 100 times, the wheel 50.
fn check_run(dir: &Path) {
    let steps = std::fs::read_to_string(dir.join("steps.csv")).unwrap();
    let rows: Vec<&str> = steps.lines().skip(1).collect();
    assert_eq!(rows.len(), 100, "{steps}");
    for r in rows {
        let step: f64 = r.split(',').nth(2).unwrap().parse().unwrap();
        assert!((step - 1e-4).abs() < 1e-15, "{r}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let calls = |name: &str| {
        summary["subsystems"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["calls"]["do_step"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(calls("chassis"), 100);
    assert_eq!(calls("wheel"), 50);
}

#[test]
fn osp_annotations_set_the_step_and_the_step_multiples() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(&root().join(SSD), &tmp.path().join("ssd"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("osp_annotations.ssd:31:38: warning: component 'wheel': the step size hint 0.00025 s is not a multiple of the step 0.0001 s; it steps every 2 steps (0.0002 s)"),
        "{stderr}"
    );
    check_run(&tmp.path().join("ssd"));
    let ssp = package(tmp.path());
    run(&ssp, &tmp.path().join("ssp"));
    check_run(&tmp.path().join("ssp"));
    // The conversion writes the step, the threads and the multiple, and
    // runs byte for byte like the system.
    let toml = tmp.path().join("conv/b1.toml");
    ok(&cosim(&[
        "convert",
        ssp.to_str().unwrap(),
        "-o",
        toml.to_str().unwrap(),
    ]));
    let written = std::fs::read_to_string(&toml).unwrap();
    for key in ["step = 0.0001", "threads = 2", "step_multiple = 2"] {
        assert!(written.contains(key), "{key}: {written}");
    }
    run(&toml, &tmp.path().join("toml"));
    for f in ["trace.csv", "energy.csv", "steps.csv"] {
        let a = std::fs::read_to_string(tmp.path().join("ssp").join(f)).unwrap();
        let b = std::fs::read_to_string(tmp.path().join("toml").join(f)).unwrap();
        assert_eq!(a, b, "{f}");
    }
}
