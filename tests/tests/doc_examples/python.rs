//! Python blocks: run with the project's Python and the package built from this tree.

use super::*;

/// A directory holding the package `cosim` of this tree: its Python
/// sources and the extension built by cargo in this profile.
pub(crate) fn python_package() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(other) => other.to_string(),
        };
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "cosim-py", "--profile", &profile])
            .current_dir(root())
            .status()
            .unwrap();
        assert!(status.success(), "cargo build -p cosim-py failed");
        let d = cosim_tests::process_dir("doc-examples-python");
        let pkg = d.join("cosim");
        copy_tree(&root().join("crates/cosim-py/python/cosim"), &pkg);
        std::fs::copy(profile_dir.join("lib_cosim.so"), pkg.join("_cosim.abi3.so")).unwrap();
        d
    })
}

pub(crate) fn run_python(dir: &Path, code: &str, args: &[&str]) -> Output {
    let script = dir.join("doc_example.py");
    std::fs::write(&script, code).unwrap();
    Command::new(python())
        .arg(&script)
        .args(args)
        .current_dir(dir)
        .env("PYTHONPATH", python_package())
        .env("MPLBACKEND", "Agg")
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin_dir().display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

pub(crate) fn python_block<'a>(
    doc: &Doc,
    b: &'a Block,
    p: &Parts,
    chain: &mut Vec<&'a Block>,
) -> Result<How, String> {
    if p.api_of.as_deref() == Some("the Python package") {
        python_api(b)?;
        return Ok(How::Api);
    }
    if !p.continues {
        chain.clear();
    }
    chain.push(b);
    if p.not_run.is_some() {
        return Ok(How::NotRun);
    }
    let code: String = chain
        .iter()
        .map(|b| format!("# {}\n{}\n", b.at(), b.text))
        .collect();
    let sb = sandbox(&doc.files);
    let out = run_python(sb.path(), &code, &[]);
    if out.status.code() != Some(p.exits) {
        return Err(format!(
            "the Python example exited with {:?}, not {}:\n{}",
            out.status.code(),
            p.exits,
            tail(&text_of(&out))
        ));
    }
    Ok(How::Ran)
}

/// The signatures `cosim.f(...)` listed in the block are the package's.
pub(crate) fn python_api(b: &Block) -> Result<(), String> {
    const CHECK: &str = r##"
import inspect, re, sys
import cosim
text = re.sub(r"#[^\n]*", "", open(sys.argv[1]).read())
calls = re.findall(r"cosim\.(\w+)\(([^()]*)\)", text)
if not calls:
    sys.exit("no cosim.f(...) in the block")
bad = []
for name, args in calls:
    ns = {}
    exec("def stub(" + " ".join(args.split()) + "): pass", ns)
    want = [(p.name, p.kind, p.default) for p in inspect.signature(ns["stub"]).parameters.values()]
    have = [(p.name, p.kind, p.default) for p in inspect.signature(getattr(cosim, name)).parameters.values()]
    if want != have:
        bad.append(f"cosim.{name}: the docs say {want}, the package has {have}")
if bad:
    sys.exit("\n".join(bad))
"##;
    let dir = tempfile::tempdir().unwrap();
    let block = dir.path().join("block.py");
    std::fs::write(&block, &b.text).unwrap();
    let out = run_python(dir.path(), CHECK, &[block.to_str().unwrap()]);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("the Python API differs:\n{}", text_of(&out)))
    }
}
