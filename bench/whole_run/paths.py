"""The run-for-run comparisons of the quiet path's reports: one cosim build
(or two, for `gauss-seidel`) on bench.py's CGain chains, each round
running every configuration once, one after the other; the median
stepping time (`summary.json` `wall_time_s`) per FMU-step is printed as a
markdown row per chain. Timings only: no pass or fail.

    .venv/bin/python bench/whole_run/paths.py --cosim target/release/cosim \
        --cgain fmus/dist/c/fmi2/CGain.fmu --table traced [--rounds 7]

Tables:
- traced (bench/results/issue42-isolation-traced.md): chains of 10 and
  100, one column traced every step (5 * 10^4 / 5 * 10^3 steps): in
  process; every FMU isolated; the same with `COSIM_ISOLATION_RUNS=0`.
- defaults (bench/results/issue42-step-log-quiet.md): the chain of 10
  with a scenario's default outputs (every output traced, the step log;
  5 * 10^4 steps), in process and isolated, each with `COSIM_QUIET_PATH=0`
  and without.
- gauss-seidel (bench/results/gauss-seidel-quiet-runs.md; `--old` the
  build before): chains of 10 and 100, outputs off, Jacobi in process
  (`--cosim`), then Gauss-Seidel (order from the connections) in process
  and every FMU isolated, with `--old` and with `--cosim`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (the scenarios are bench.py's)

GAUSS_SEIDEL = 'kind = "fixed-step"\nscheme = "gauss-seidel"'


def gauss_seidel(path: Path) -> Path:
    path.write_text(path.read_text().replace('kind = "fixed-step"', GAUSS_SEIDEL))
    return path


def configurations(a: argparse.Namespace, tmp: Path, n: int, steps: int) -> List[Tuple[str, str, Path, Dict[str, str]]]:
    """(label, cosim binary, scenario, environment) of one chain."""
    cg, new = a.cgain, a.cosim
    if a.table == "traced":
        inp = bench.chain(tmp, cg, n, steps, f"tin{n}", trace=True)
        iso = bench.chain(tmp, cg, n, steps, f"tiso{n}", trace=True, isolation="process")
        return [("in process", new, inp, {}), ("isolated, held runs", new, iso, {}),
                ("isolated, one by one", new, iso, {"COSIM_ISOLATION_RUNS": "0"})]
    if a.table == "defaults":
        inp = bench.chain(tmp, cg, n, steps, f"din{n}", defaults=True)
        iso = bench.chain(tmp, cg, n, steps, f"diso{n}", isolation="process", defaults=True)
        return [("in process, full way", new, inp, {"COSIM_QUIET_PATH": "0"}), ("in process, quiet path", new, inp, {}),
                ("isolated, full way", new, iso, {"COSIM_QUIET_PATH": "0"}), ("isolated, quiet path", new, iso, {})]
    if not a.old:
        sys.exit("--table gauss-seidel needs --old")
    jac = bench.chain(tmp, cg, n, steps, f"jac{n}")
    gs = gauss_seidel(bench.chain(tmp, cg, n, steps, f"gs{n}"))
    gsi = gauss_seidel(bench.chain(tmp, cg, n, steps, f"gsi{n}", isolation="process"))
    return [("Jacobi in process", new, jac, {}), ("Gauss-Seidel in process, before", a.old, gs, {}),
            ("after", new, gs, {}), ("Gauss-Seidel isolated, before", a.old, gsi, {}), ("after", new, gsi, {})]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cosim", required=True)
    p.add_argument("--old", help="the build before (gauss-seidel)")
    p.add_argument("--cgain", required=True)
    p.add_argument("--table", required=True, choices=["traced", "defaults", "gauss-seidel"])
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args()
    a.cgain = str(Path(a.cgain).resolve())
    chains = [(10, 50_000)] if a.table == "defaults" else [(10, 50_000), (100, 5_000)]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for n, steps in chains:
            runs = configurations(a, tmp, n, steps)
            times: Dict[int, List[float]] = {i: [] for i in range(len(runs))}
            for _ in range(a.rounds):
                for i, (_, cosim, scenario, env) in enumerate(runs):
                    subprocess.run([cosim, "-q", "run", str(scenario)], check=True, env={**os.environ, **env})
                    out = scenario.parent / f"out-{scenario.stem}" / "summary.json"
                    times[i].append(json.loads(out.read_text())["wall_time_s"])
            per = [statistics.median(times[i]) / steps / n * 1e9 for i in range(len(runs))]
            print("| chain | " + " | ".join(label for label, *_ in runs) + " |")
            print("| N = %d | " % n + " | ".join(f"{v:.1f} ns ({v / per[0]:.2f})" for v in per) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
