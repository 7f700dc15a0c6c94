"""Two builds of cosim side by side on the rows of bench.py that move by
a few per cent, their runs interleaved run for run (on a shared virtual
machine the speed moves by +-15 % between hours, so two invocations of
bench.py apart compare the hours, not the builds).

    .venv/bin/python bench/whole_run/ab.py --a OLD/cosim --b NEW/cosim \
        --cgain fmus/dist/c/fmi2/CGain.fmu [--only isolation,trace,sampled] [--rounds 15] \
        [--stat median|q1]

Rows (the scenarios of bench.py, `summary.json` `wall_time_s`):
isolation: one FMU isolated (20 000 steps) against in-process, the extra
time per macro step; chains of 10 and 100 with every FMU isolated, per
FMU-step, and the ratio to in-process. trace: the chain of 10 with one
column traced every step against outputs off (--trace-steps). sampled:
the chain of 10 with every output traced at an output interval of 10
steps and of one step, every FMU isolated against in-process (5 * 10^4
steps; not in the default --only). Each
round runs every scenario with each build, the builds' order alternating
from round to round; medians are printed, or with --stat q1 the lower
quartiles (on a machine whose speed moves between levels during the
rounds, the runs at the faster level: they compare the builds better).
Timings only: no pass or fail.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (the scenarios are bench.py's)


def wall(cosim: str, scenario: Path) -> float:
    """`cosim run` of `scenario`; the stepping time its summary gives."""
    subprocess.run([cosim, "-q", "run", str(scenario)], check=True)
    out = scenario.parent / f"out-{scenario.stem}"
    return json.loads((out / "summary.json").read_text())["wall_time_s"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True, help="the first build's cosim")
    p.add_argument("--b", required=True, help="the second build's cosim")
    p.add_argument("--cgain", required=True)
    p.add_argument("--only", default="isolation,trace")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--trace-steps", type=int, default=200_000)
    p.add_argument("--stat", choices=("median", "q1"), default="median",
                   help="each row's runs summed up by their median or their lower quartile")
    a = p.parse_args()
    if a.stat == "q1" and a.rounds < 2:
        p.error("--stat q1 needs at least 2 rounds")
    # (The scenarios are written elsewhere: absolute paths.)
    a.cgain = str(Path(a.cgain).resolve())
    a.a, a.b = str(Path(a.a).resolve()), str(Path(a.b).resolve())
    rows = set(a.only.split(","))
    with tempfile.TemporaryDirectory(prefix="cosim-ab-") as t:
        tmp = Path(t)
        # name: (scenario, steps, FMUs)
        sc: Dict[str, Tuple[Path, int, int]] = {}
        if "isolation" in rows:
            for n, steps in ((1, 20_000), (10, 5_000), (100, 500)):
                sc[f"in{n}"] = (bench.chain(tmp, a.cgain, n, steps, f"in{n}"), steps, n)
                sc[f"iso{n}"] = (bench.chain(tmp, a.cgain, n, steps, f"iso{n}", isolation="process"), steps, n)
        if "sampled" in rows:
            # Every output traced every 10 steps and every step, by an
            # output interval (bench.py's rows of that name).
            for every in (10, 1):
                for where, iso in (("in", None), ("iso", "process")):
                    name = f"s{where}{every}"
                    sc[name] = (bench.chain(tmp, a.cgain, 10, 50_000, name, isolation=iso,
                                            interval=every * 1e-3), 50_000, 10)
        if "trace" in rows:
            steps = a.trace_steps
            sc["off10"] = (bench.chain(tmp, a.cgain, 10, steps, "off10"), steps, 10)
            sc["on10"] = (bench.chain(tmp, a.cgain, 10, steps, "on10", trace=True), steps, 10)
        builds = {"a": a.a, "b": a.b}
        times: Dict[Tuple[str, str], List[float]] = {(b, k): [] for b in builds for k in sc}
        for r in range(a.rounds):
            order = ["a", "b"] if r % 2 == 0 else ["b", "a"]
            for k, (scenario, _, _) in sc.items():
                for b in order:
                    times[(b, k)].append(wall(builds[b], scenario))
    def stat(xs: List[float]) -> float:
        return statistics.median(xs) if a.stat == "median" else statistics.quantiles(xs, n=4)[0]

    print(f"{a.rounds} rounds, builds interleaved, {'medians' if a.stat == 'median' else 'lower quartiles'};"
          f" a = {a.a}, b = {a.b}")
    for b in builds:
        m = {k: stat(times[(b, k)]) for k in sc}
        parts = []
        if "isolation" in rows:
            parts.append(f"one FMU isolated, extra {(m['iso1'] - m['in1']) / 20_000 * 1e6:.3f} us per macro step")
            for n, steps in ((10, 5_000), (100, 500)):
                per = m[f"iso{n}"] / steps / n
                parts.append(f"chain of {n} isolated {per * 1e6:.3f} us per FMU-step"
                             f" ({m[f'iso{n}'] / m[f'in{n}']:.1f} x in-process)")
        if "sampled" in rows:
            for every in (10, 1):
                iso, inp = m[f"siso{every}"], m[f"sin{every}"]
                parts.append(f"every output every {every} steps isolated {iso / 50_000 / 10 * 1e6:.3f} us per"
                             f" FMU-step, in-process {inp / 50_000 / 10 * 1e6:.3f} ({iso / inp:.1f} x)")
        if "trace" in rows:
            per = {k: m[k] / a.trace_steps / 10 * 1e9 for k in ("on10", "off10")}
            parts.append(f"chain of 10 traced {per['on10']:.1f} ns per FMU-step, off {per['off10']:.1f}:"
                         f" {m['on10'] / m['off10']:.2f}")
        print(f"{b}: " + "; ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
