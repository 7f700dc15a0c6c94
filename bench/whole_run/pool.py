"""How often the Jacobi pool's calibration finds the pool no faster than
stepping inline, for one or two cosim builds, their runs alternating
(docs/performance.md, "Where cosim's time goes": the workers kept off the
stepping thread's processor). Four kit Gain FMUs with `busy_work` loops
per step (about 60 us each at 20 000), `threads = 0`, 2000 steps of 1 ms,
outputs off; per run the calibration's pooled step over its inline step
(the `Jacobi stepping ...` debug line) and the stepping time
(`summary.json` `wall_time_s`). Timings only: no pass or fail.

    .venv/bin/python bench/whole_run/pool.py --cosim target/release/cosim \
        [--old OLD/cosim] [--gain fmus/dist/fmi2/Gain.fmu] [--runs 30]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

LINE = re.compile(r"([\d.]+)(µs|ms|ns|s) per step inline, ([\d.]+)(µs|ms|ns|s) on")
UNIT = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def scenario(tmp: Path, gain: str, busy: int) -> Path:
    lines = ["[simulation]\nstop = 2.0\n[master]\nkind = \"fixed-step\"\nstep = 1e-3\nthreads = 0"]
    for k in range(4):
        lines.append(f'[[subsystems]]\nname = "g{k}"\nfmu = "{gain}"\nparameters = {{ k = 1.0, busy_work = {busy} }}')
    lines.append(f'[outputs]\ndir = "{tmp / "out"}"\ntrace = false\nenergy_log = false\nstep_log = false')
    path = tmp / "pool.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(cosim: str, path: Path) -> Tuple[float, float]:
    """(pooled step / inline step in the calibration, stepping time)."""
    env = dict(os.environ, COSIM_LOG="cosim_core::system=debug")
    out = subprocess.run([cosim, "-q", "run", str(path)], capture_output=True, text=True, env=env, check=True)
    m = LINE.search(out.stderr)
    ratio = float("nan")
    if m:
        ratio = float(m.group(3)) * UNIT[m.group(4)] / (float(m.group(1)) * UNIT[m.group(2)])
    wall = json.loads((path.parent / "out" / "summary.json").read_text())["wall_time_s"]
    return ratio, wall


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cosim", required=True)
    p.add_argument("--old", help="a second build, run alternately")
    p.add_argument("--gain", default="fmus/dist/fmi2/Gain.fmu")
    p.add_argument("--busy", type=int, default=20_000)
    p.add_argument("--runs", type=int, default=30)
    a = p.parse_args()
    builds = {"new": a.cosim} if not a.old else {"old": a.old, "new": a.cosim}
    got: Dict[str, List[Tuple[float, float]]] = {k: [] for k in builds}
    with tempfile.TemporaryDirectory() as d:
        path = scenario(Path(d), str(Path(a.gain).resolve()), a.busy)
        for _ in range(a.runs):
            for name, cosim in builds.items():
                got[name].append(run(cosim, path))
    for name, rows in got.items():
        ratios = sorted(r for r, _ in rows)
        walls = [w for _, w in rows]
        inline = sum(r >= 0.85 for r in ratios)
        print(f"{name}: {len(rows)} runs; inline chosen (pooled/inline >= 0.85) in {inline}; "
              f"pooled/inline {ratios[0]:.2f} - {ratios[-1]:.2f}; "
              f"stepping median {statistics.median(walls):.3f} s, slowest {max(walls):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
