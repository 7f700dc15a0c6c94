//! The sandbox a block runs in: the built FMUs, a copy of the scenarios, and the files the docs' commands name.

use super::*;

/// Copies `src` into `dst` (directories recursively, symbolic links as
/// links), leaving out `out/` directories of `scenarios/`.
pub(crate) fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let (from, to) = (e.path(), dst.join(e.file_name()));
        let ty = e.file_type().unwrap();
        if ty.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from).unwrap(), &to).unwrap();
        } else if ty.is_dir() {
            copy_tree(&from, &to);
        } else {
            std::fs::copy(&from, &to).unwrap();
        }
    }
}

/// `dst` with the directories of `src` and a link to each of its files.
pub(crate) fn link_files(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            link_files(&e.path(), &dst.join(e.file_name()));
        } else {
            std::os::unix::fs::symlink(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
}

/// A directory with `cosim` in it (a link to this build's binary), for
/// `PATH`.
pub(crate) fn bin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = cosim_tests::process_dir("doc-examples-bin");
        std::os::unix::fs::symlink(cosim_bin(), d.join("cosim")).unwrap();
        d
    })
}

/// `sh -c line` in `dir`, with `cosim` on the `PATH`; killed after
/// `limit`.
pub(crate) fn sh(dir: &Path, line: &str, env: &[(&str, &str)], limit: Duration) -> Output {
    let path = format!(
        "{}:{}",
        bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env("PATH", path)
        .env("USER", "u")
        .env_remove("COSIM_LOG")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    // Drained while it runs (a full pipe would stop it).
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let mut killed = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            // The shell and whatever it started: its process group.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            killed = true;
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut out = Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    if killed {
        out.stderr
            .extend_from_slice(format!("\n[killed after {limit:?}]").as_bytes());
    }
    out
}

pub(crate) fn text_of(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `line` in `dir` and requires exit status `code`; returns the output.
pub(crate) fn must(dir: &Path, line: &str, code: i32) -> Result<String, String> {
    let out = sh(dir, line, &[], Duration::from_secs(60));
    let text = text_of(&out);
    if out.status.code() == Some(code) {
        Ok(text)
    } else {
        Err(format!(
            "`{line}` exited with {:?}, not {code}:\n{}",
            out.status.code(),
            tail(&text)
        ))
    }
}

/// The last 40 lines of `text`.
pub(crate) fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// The sandbox every block starts from (made once).
pub(crate) fn template() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = cosim_tests::process_dir("doc-examples-template");
        let sb = d.as_path();
        let root = root();
        // fmus/dist: its directories, with links to its files (a run of an
        // FMU writes out/ beside it: into the sandbox, not the build).
        link_files(&fmus(), &sb.join("fmus/dist"));
        copy_tree(&root.join("scenarios"), &sb.join("scenarios"));
        let _ = std::fs::remove_dir_all(sb.join("scenarios/out"));
        for dir in ["crates", "tests", "examples", "bench", "fuzz", "xtask"] {
            std::os::unix::fs::symlink(root.join(dir), sb.join(dir)).unwrap();
        }
        // B1 reticulation A, from the sandbox's root.
        let b1 = std::fs::read_to_string(root.join("scenarios/b1_quarter_car_a.toml"))
            .unwrap()
            .replace("../fmus/dist", "fmus/dist");
        for name in ["s.toml", "scenario.toml"] {
            std::fs::write(sb.join(name), &b1).unwrap();
        }
        std::os::unix::fs::symlink(
            "fmus/dist/fmi2/QuarterCarChassis.fmu",
            sb.join("Model.fmu"),
        )
        .unwrap();
        std::fs::write(sb.join("in.csv"), "time,F\n0,0\n1,100\n").unwrap();
        std::fs::copy(fmus().join("references/b1_linear.csv"), sb.join("ref.csv")).unwrap();
        // A sweep file: the cluster sweep (6 runs, about a second), from the
        // root.
        let sweep = std::fs::read_to_string(root.join("scenarios/sweeps/b1_a_cluster.toml"))
            .unwrap()
            .replace("\"../../", "\"")
            .replace("\"../", "\"scenarios/");
        std::fs::write(sb.join("sweep.toml"), sweep).unwrap();
        // SSP and OSP files.
        let data = root.join("crates/cosim-ssp/tests/data");
        let ssd = std::fs::read_to_string(data.join("quarter_car.ssd")).unwrap();
        std::fs::write(
            sb.join("SystemStructure.ssd"),
            ssd.replace("../../../../fmus/dist/", "fmus/dist/"),
        )
        .unwrap();
        std::fs::copy(data.join("wheel.ssv"), sb.join("wheel.ssv")).unwrap();
        write_ssp(&sb.join("system.ssp"), &ssd, &data.join("wheel.ssv"));
        let osp = std::fs::read_to_string(data.join("osp_b1_ecco/OspSystemStructure.xml"))
            .unwrap();
        let osp_here = osp.replace("../../../../../fmus/dist/", "fmus/dist/");
        assert_ne!(osp, osp_here, "osp_b1_ecco names its FMUs another way");
        std::fs::write(sb.join("OspSystemStructure.xml"), &osp_here).unwrap();
        std::fs::create_dir_all(sb.join("path/to/osp-or-ssp-directory")).unwrap();
        std::fs::write(
            sb.join("path/to/osp-or-ssp-directory/OspSystemStructure.xml"),
            osp.replace("../../../../../fmus/dist/", "../../../fmus/dist/"),
        )
        .unwrap();
        // Outputs that commands read.
        for (line, what) in [
            ("cosim run s.toml --out out --no-progress", "out/"),
            (
                "cosim run s.toml --out other --set chassis.m_c=500 --no-progress",
                "other/",
            ),
            (
                "cosim sweep sweep.toml --shard 1/2 --out out --no-progress && cosim sweep sweep.toml --shard 2/2 --out out --no-progress",
                "out/summary.shard-*",
            ),
            (
                "for k in 1 2 3; do cosim sweep sweep.toml --shard $k/3 --out out/sw --no-progress || exit 1; done",
                "out/sw/",
            ),
        ] {
            let out = sh(sb, line, &[], Duration::from_secs(120));
            assert!(
                out.status.success() || out.status.code() == Some(1),
                "making the sandbox's {what}: `{line}`: {:?}\n{}",
                out.status.code(),
                text_of(&out)
            );
        }
        d
    })
}

/// The quarter car of `quarter_car.ssd` as an `.ssp` package.
pub(crate) fn write_ssp(path: &Path, ssd: &str, ssv: &Path) {
    let ssd = ssd
        .replace("../../../../fmus/dist/fmi2/", "resources/")
        .replace("source=\"wheel.ssv\"", "source=\"resources/wheel.ssv\"");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("SystemStructure.ssd", opts).unwrap();
    zip.write_all(ssd.as_bytes()).unwrap();
    zip.start_file("resources/wheel.ssv", opts).unwrap();
    zip.write_all(&std::fs::read(ssv).unwrap()).unwrap();
    for m in ["QuarterCarChassis", "QuarterCarWheelSuspension"] {
        zip.start_file(format!("resources/{m}.fmu"), opts).unwrap();
        zip.write_all(&std::fs::read(fmus().join(format!("fmi2/{m}.fmu"))).unwrap())
            .unwrap();
    }
    zip.finish().unwrap();
}

/// A fresh copy of the template, with the doc's `file` blocks in
/// `scenarios/`.
pub(crate) fn sandbox(files: &[(String, String)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    copy_tree(template(), d.path());
    for (name, text) in files {
        let p = d.path().join("scenarios").join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    d
}
