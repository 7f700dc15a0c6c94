#!/usr/bin/env python3
"""libcosim contender of the speed benchmark (issue 10).

    python3 bench/peer/libcosim_bench.py PLAN.json --workers {0,default} \
        [--steps N] [--repeats R]

Runs the system of PLAN.json (written by `cosim-bench --write-plans DIR`,
or by the runner itself) in libcosim's fixed-step algorithm through
libcosimpy (0.0.6, libcosim 0.11), R times, and prints one JSON object:

    {"libcosim": "<version>", "workers": "0" | "default",
     "threads": <threads of this process while stepping>,
     "runs": [{"steps": <timed steps>, "seconds": <wall time>}, ...]}

What is timed: the `simulate_until` call that runs macro steps 2..N, with
`time.perf_counter()` around it. The first macro step (`execution.step(1)`),
which also initialises every FMU, is taken before the clock starts, so
loading, instantiation and initialization are excluded, as for the other
contenders. No observer is attached (no output), as `cosim` with its trace
off.

The system is given to libcosim as an OSP system structure generated from
the plan: one <Simulator> per FMU with its parameters and start values as
<InitialValues>, a <VariableConnection> per connection, or, for a connection
with a gain or offset, a <LinearTransformation> function between two
<SignalConnection>s (a libcosim connection carries no gain).

Worker threads: libcosim's fixed_step_algorithm runs the FMUs' steps on a
pool of hardware_concurrency() - 1 threads (one on a 2-core machine), the
calling thread waiting; libcosimc offers no way to change that count.
`--workers default` runs it as is. `--workers 0` re-executes this script
with the LD_PRELOAD shim bench/peer/hw_concurrency_1.c (compiled on first
use with `cc`), which makes hardware_concurrency() return 1: the pool is
empty and libcosim steps every FMU inline. The "threads" field of the
output shows which configuration ran.

Exits non-zero with a message on any failure.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM_SRC = os.path.join(HERE, "hw_concurrency_1.c")
SHIM_MARK = "COSIM_BENCH_LIBCOSIM_SHIM"
OSP_NS = "http://opensimulationplatform.com/MSMI/OSPSystemStructure"


def fail(message):
    print(f"libcosim_bench.py: error: {message}", file=sys.stderr)
    sys.exit(1)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("plan", help="plan JSON written by cosim-bench")
    p.add_argument("--workers", choices=["0", "default"], default="default",
                   help="libcosim worker threads: 0 (inline) or its default")
    p.add_argument("--steps", type=int, default=None,
                   help="macro steps per run (default: the plan's)")
    p.add_argument("--repeats", type=int, default=3, help="runs (default 3)")
    return p.parse_args()


def ensure_shim():
    """Path of the compiled shim, built when missing or older than its source."""
    build = os.path.join(tempfile.gettempdir(), f"cosim-bench-{os.getuid()}")
    os.makedirs(build, exist_ok=True)
    so = os.path.join(build, "libhw_concurrency_1.so")
    if not os.path.exists(so) or os.path.getmtime(so) < os.path.getmtime(SHIM_SRC):
        cc = os.environ.get("CC", "cc")
        tmp = so + f".{os.getpid()}.tmp"
        r = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", tmp, SHIM_SRC],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"cannot compile {SHIM_SRC} with {cc}: {r.stderr.strip()}")
        os.replace(tmp, so)
    return so


def reexec_with_shim():
    env = dict(os.environ)
    so = ensure_shim()
    env["LD_PRELOAD"] = (so + " " + env["LD_PRELOAD"]) if env.get("LD_PRELOAD") else so
    env[SHIM_MARK] = "1"
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def osp_xml(plan, path):
    """Writes the OSP system structure of `plan` to `path`."""
    ET.register_namespace("", OSP_NS)
    q = lambda tag: f"{{{OSP_NS}}}{tag}"  # noqa: E731
    root = ET.Element(q("OspSystemStructure"), {"version": "0.1"})
    ET.SubElement(root, q("StartTime")).text = repr(plan["start"])
    ET.SubElement(root, q("BaseStepSize")).text = repr(plan["step"])
    ET.SubElement(root, q("Algorithm")).text = "fixedStep"
    sims = ET.SubElement(root, q("Simulators"))
    for f in plan["fmus"]:
        sim = ET.SubElement(sims, q("Simulator"), {"name": f["name"], "source": f["path"]})
        if f["values"]:
            ivs = ET.SubElement(sim, q("InitialValues"))
            for v in f["values"]:
                iv = ET.SubElement(ivs, q("InitialValue"), {"variable": v["name"]})
                if v["kind"] == "integer":
                    ET.SubElement(iv, q("Integer"), {"value": str(int(v["value"]))})
                else:
                    ET.SubElement(iv, q("Real"), {"value": repr(v["value"])})
    functions = ET.SubElement(root, q("Functions"))
    conns = ET.SubElement(root, q("Connections"))
    names = [f["name"] for f in plan["fmus"]]
    for k, c in enumerate(plan["connections"]):
        src = {"simulator": names[c["from_fmu"]], "name": c["from_name"]}
        dst = {"simulator": names[c["to_fmu"]], "name": c["to_name"]}
        if c["gain"] == 1.0 and c["offset"] == 0.0:
            vc = ET.SubElement(conns, q("VariableConnection"))
            ET.SubElement(vc, q("Variable"), src)
            ET.SubElement(vc, q("Variable"), dst)
        else:
            fname = f"lin{k}"
            ET.SubElement(functions, q("LinearTransformation"),
                          {"name": fname, "factor": repr(c["gain"]), "offset": repr(c["offset"])})
            a = ET.SubElement(conns, q("SignalConnection"))
            ET.SubElement(a, q("Variable"), src)
            ET.SubElement(a, q("Signal"), {"function": fname, "name": "in"})
            b = ET.SubElement(conns, q("SignalConnection"))
            ET.SubElement(b, q("Variable"), dst)
            ET.SubElement(b, q("Signal"), {"function": fname, "name": "out"})
    if len(functions) == 0:
        root.remove(functions)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def main():
    args = parse_args()
    if args.workers == "0" and os.environ.get(SHIM_MARK) != "1":
        reexec_with_shim()
    with open(args.plan, encoding="utf-8") as f:
        plan = json.load(f)
    steps = args.steps or plan["steps"]
    if steps < 2:
        fail("--steps must be at least 2")
    step_ns = round(plan["step"] * 1e9)
    if step_ns <= 0 or abs(step_ns - plan["step"] * 1e9) > 1e-6 * step_ns:
        fail(f"step {plan['step']} is not a whole number of nanoseconds")
    if plan["start"] != 0.0:
        fail("the plan must start at 0")

    try:
        from libcosimpy import CosimLogging
        from libcosimpy.CosimExecution import CosimExecution
        from libcosimpy._internal import libcosimc
    except ImportError as e:
        fail(f"libcosimpy is not installed ({e}): bench/run.sh runs this with the project's .venv/ (`cargo xtask venv`)")
    CosimLogging.log_output_level(CosimLogging.CosimLogLevel.ERROR)
    try:
        import ctypes

        class Version(ctypes.Structure):
            _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int),
                        ("patch", ctypes.c_int)]

        lib = ctypes.CDLL(libcosimc()._name)
        lib.cosim_libcosim_version.restype = Version
        v = lib.cosim_libcosim_version()
        version = f"{v.major}.{v.minor}.{v.patch}"
    except (OSError, AttributeError, ValueError):
        version = "unknown"

    runs = []
    threads = 0
    with tempfile.TemporaryDirectory(prefix="cosim-bench-libcosim-") as work:
        osp = os.path.join(work, "OspSystemStructure.xml")
        osp_xml(plan, osp)
        for _ in range(args.repeats):
            ex = CosimExecution.from_osp_config_file(osp)
            if ex.num_slaves() != len(plan["fmus"]):
                fail(f"libcosim loaded {ex.num_slaves()} of {len(plan['fmus'])} FMUs")
            if not ex.step(1):
                fail("the first step (with initialization) failed")
            threads = len(os.listdir("/proc/self/task"))
            target = steps * step_ns
            t0 = time.perf_counter()
            ok = ex.simulate_until(target_time=target)
            seconds = time.perf_counter() - t0
            if not ok:
                fail("simulate_until failed")
            reached = ex.status().current_time
            if reached != target:
                fail(f"libcosim stopped at {reached} ns, not {target} ns")
            runs.append({"steps": steps - 1, "seconds": seconds})
            del ex
    print(json.dumps({"libcosim": version, "workers": args.workers,
                      "threads": threads, "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
