#!/usr/bin/env python3
"""The whole run's cost (issue 42): everything around the stepping loop, in
one invocation, beside the peers that are installed, with the issue's goals.
Run by bench/whole_run/run.sh, which builds what it needs; see there.

What is measured (median of --runs runs; where two contenders are compared
their runs alternate, in a rotating order):

1. short run: one short run of one FMU, process start to exit:
   `cosim run FMU --stop T` against `fmusim --interface-type cs --stop-time T`
   (Reference FMUs VanDerPol 20 s and BouncingBall 3 s, Co-Simulation, the
   default output interval). Goal: cosim at or below fmusim.
2. sweep: 200 one-second runs of BouncingBall (Co-Simulation, 10 ms steps,
   the restitution coefficient varied): `cosim sweep --jobs 1` (one core,
   process start to exit, every run's trace, step log and summary written
   into a new output directory) against FMPy reusing one instance
   (`simulate_fmu(..., fmu_instance=...)` then `reset()`, one core, results
   kept in memory), process start to exit as the issue measured it, and
   inside Python (without the interpreter's start and FMPy's import) for
   information. Goal: cosim at least 3 times faster per core, with the
   results in memory as FMPy's loop keeps them (`--prune`: each run's
   metrics computed from its rows in memory, its row of the summary
   written, no file of its own). Also: the same sweep with every run's
   trace, step log and summary on disk, on a tmpfs (/dev/shm, where there
   is one: what the file system costs), with `--fresh-instances`, and
   `--jobs 2`.
3. initialization: a chain of 2000 CGain FMUs (C, y = k u, each output
   feeding the next input): `init_time_s` of summary.json. Goal: under
   0.1 s.
4. traced run: chains of 10 and 100 CGain FMUs, 1 ms steps: the stepping
   time (summary.json `wall_time_s`) with one column traced every step
   against outputs off, 2 * 10^5 and 5 * 10^4 steps (`--trace-steps N`:
   N and N / 4). Long enough for the writer thread to format and write
   rows while the FMUs step, several times over (it starts when its
   ring of 2^16 rows is half full, or after 0.2 s): in shorter runs it
   writes everything after the last step, and the row would not measure
   the two threads side by side. Goal: at most 1.10.
5. isolation: the same chains with every FMU isolated (`isolation =
   "process"`, in the host processes `cosim run` uses: one on a 2-core
   machine) against in-process, per FMU-step, outputs off (the quiet
   stretches a host takes by itself: `cosim_core::hosted`); and one FMU
   isolated, the extra time per macro step. Goals: ratio at most 3; at
   most 0.2 us per macro step. And the chains of 10 and 100 with one
   column traced every step, isolated against in-process traced (the host
   records the traced column after each step of its held runs; 5 * 10^4
   and 5 * 10^3 steps): the same goal. The chain of 10 with every output
   traced at an output interval of 10 steps and of one step (5 * 10^4
   steps), isolated against in-process: the same goal. For information, the chain of 10
   with a scenario's default outputs (every output traced and the step
   log, a row each every step), isolated against in-process. With
   `--round-trip`: the machine's bare
   round trip between two processors (two spinning threads, the
   `round_trip` example of cosim-isolation), which no channel between a
   master and its host can beat.

The C loop (the stepping floor) is measured by `bench/run.sh`.

    python3 bench/whole_run/bench.py --cosim target/release/cosim \
        --cgain fmus/dist/c/fmi2/CGain.fmu --ref-fmus target/me-bench/ref \
        [--fmusim target/me-bench/fmusim/fmusim] --python .venv/bin/python \
        [--runs 5] [--only short,sweep,init,trace,isolation] [--out report.md]
        [--sweep-runs 200] [--trace-steps 200000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]

FMPY_LOOP = r"""
import sys, time
import numpy as np
from fmpy import read_model_description, extract, simulate_fmu
from fmpy.fmi2 import FMU2Slave
fmu_path, runs = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
md = read_model_description(fmu_path)
unzipped = extract(fmu_path)
fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzipped,
                modelIdentifier=md.coSimulation.modelIdentifier, instanceName="ball")
fmu.instantiate()
rows = 0
for e in np.linspace(0.5, 0.9, runs):
    result = simulate_fmu(unzipped, stop_time=1.0, output_interval=0.01, fmu_instance=fmu,
                          start_values={"e": float(e)}, model_description=md)
    fmu.reset()
    rows += len(result)
fmu.freeInstance()
print(time.perf_counter() - t0, rows)
"""


def timed(cmd: List[str], cwd: Optional[Path] = None) -> float:
    """Runs `cmd`, checks it succeeded; its wall time, process start to exit."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {p.returncode}\n{p.stderr}")
    return t


def alternate(runs: int, contenders: Dict[str, Callable[[], float]]) -> Dict[str, List[float]]:
    """Each contender `runs` times, in a rotating order; the times."""
    names = list(contenders)
    out: Dict[str, List[float]] = {n: [] for n in names}
    for k in range(runs):
        order = names[k % len(names):] + names[: k % len(names)]
        for n in order:
            out[n].append(contenders[n]())
    return out


def med(xs: List[float]) -> float:
    return statistics.median(xs)


def ms(x: float) -> str:
    return f"{x * 1e3:.1f} ms"


def summary(out_dir: Path) -> dict:
    return json.loads((out_dir / "summary.json").read_text())


class Report:
    def __init__(self) -> None:
        self.rows: List[Tuple[str, str, str, str, str, str]] = []
        self.notes: List[str] = []

    def row(self, what: str, cosim: str, peer: str, ratio: str, goal: str, met: Optional[bool]) -> None:
        self.rows.append((what, cosim, peer, ratio, goal, "" if met is None else ("yes" if met else "**no**")))
        print(f"{what}: cosim {cosim}, peer {peer}, ratio {ratio} (goal {goal})", flush=True)


def short_runs(a: argparse.Namespace, r: Report, tmp: Path) -> None:
    if not a.fmusim:
        r.notes.append("short run: fmusim not given (bench/whole_run/run.sh builds it from the Reference FMUs v0.0.39)")
    for model, stop in (("VanDerPol", 20.0), ("BouncingBall", 3.0)):
        fmu = Path(a.ref_fmus) / "fmi2" / f"{model}.fmu"
        contenders = {
            "cosim": lambda: timed([a.cosim, "-q", "run", str(fmu), "--stop", str(stop), "-o", str(tmp / f"c-{model}")]),
        }
        if a.fmusim:
            contenders["fmusim"] = lambda: timed(
                [a.fmusim, "--interface-type", "cs", "--stop-time", str(stop),
                 "--output-file", str(tmp / f"f-{model}.csv"), str(fmu)])
        t = alternate(a.runs, contenders)
        c = med(t["cosim"])
        if "fmusim" in t:
            f = med(t["fmusim"])
            r.row(f"short run, {model} {stop:g} s, whole process", ms(c), f"fmusim {ms(f)}",
                  f"cosim/fmusim {c / f:.2f}", "<= 1", c <= f)
        else:
            r.row(f"short run, {model} {stop:g} s, whole process", ms(c), "", "", "<= fmusim", None)


def sweep(a: argparse.Namespace, r: Report, tmp: Path) -> None:
    fmu = Path(a.ref_fmus) / "fmi2" / "BouncingBall.fmu"
    d = tmp / "sweep"
    d.mkdir()
    (d / "ball.toml").write_text(
        f'[simulation]\nstop = 1.0\n[master]\nkind = "fixed-step"\nstep = 0.01\n'
        f'[[subsystems]]\nname = "ball"\nfmu = "{fmu}"\n')
    (d / "sweep.toml").write_text(
        '[sweep]\nscenario = "ball.toml"\nout = "out"\n[[sweep.axes]]\nkey = "ball.e"\n'
        f'range = {{ from = 0.5, to = 0.9, count = {a.sweep_runs} }}\n')
    loop = tmp / "fmpy_loop.py"
    loop.write_text(FMPY_LOOP)

    outs = iter(range(1_000_000))
    shm = Path("/dev/shm")

    def cosim(jobs: int, *extra: str, base: Path = tmp) -> Callable[[], float]:
        # A new output directory each run: a sweep's first run into it.
        return lambda: timed([a.cosim, "-q", "sweep", str(d / "sweep.toml"), "--jobs", str(jobs), "--no-plot",
                              "--out", str(base / f"sweep-out-{next(outs)}"), *extra])

    in_loop: List[float] = []

    def fmpy() -> float:
        t0 = time.perf_counter()
        p = subprocess.run([a.python, str(loop), str(fmu), str(a.sweep_runs)], capture_output=True, text=True)
        t = time.perf_counter() - t0
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        in_loop.append(float(p.stdout.split()[0]))
        return t

    contenders = {"cosim1": cosim(1), "cosim2": cosim(2), "cosim1-prune": cosim(1, "--prune")}
    # (A cosim from before instances were reused has no such option.)
    help_text = subprocess.run([a.cosim, "sweep", "--help"], capture_output=True, text=True).stdout
    if "--fresh-instances" in help_text:
        contenders["cosim1-fresh"] = cosim(1, "--fresh-instances")
    shm_dir = None
    if shm.is_dir() and os.access(shm, os.W_OK):
        shm_dir = Path(tempfile.mkdtemp(prefix="whole-run-", dir=shm))
        contenders["cosim1-tmpfs"] = cosim(1, base=shm_dir)
    have_fmpy = subprocess.run([a.python, "-c", "import fmpy"], capture_output=True).returncode == 0
    if have_fmpy:
        contenders["fmpy"] = fmpy
    else:
        r.notes.append(f"sweep: {a.python} has no FMPy")
    try:
        t = alternate(a.runs, contenders)
    finally:
        if shm_dir:
            subprocess.run(["rm", "-rf", str(shm_dir)])
    c1, c2, cp = med(t["cosim1"]), med(t["cosim2"]), med(t["cosim1-prune"])
    n = a.sweep_runs
    # The goal's row: results in memory, as FMPy's loop keeps them
    # (`--prune`: each run's metrics from its rows in memory, its row of
    # the summary written, no file of its own).
    what = f"sweep of {n} one-second runs, one core, whole process, results in memory (`--prune`)"
    if have_fmpy:
        f = med(t["fmpy"])
        r.row(what, f"{cp:.2f} s", f"FMPy reset loop {f:.2f} s", f"FMPy/cosim {f / cp:.1f}", ">= 3", f / cp >= 3)
        r.row(f"sweep of {n}, every run's files on disk, one core", f"{c1:.2f} s", "",
              f"FMPy/cosim {f / c1:.1f}", "", None)
        r.row(f"sweep of {n}, FMPy inside Python", "", f"{med(in_loop):.2f} s",
              f"FMPy/cosim {med(in_loop) / cp:.1f} (`--prune`)", "", None)
    else:
        r.row(what, f"{cp:.2f} s", "", "", "FMPy/cosim >= 3", None)
        r.row(f"sweep of {n}, every run's files on disk, one core", f"{c1:.2f} s", "", "", "", None)
    if "cosim1-tmpfs" in t:
        c_shm = med(t["cosim1-tmpfs"])
        ratio = f"FMPy/cosim {med(t['fmpy']) / c_shm:.1f}" if have_fmpy else ""
        r.row(f"sweep of {n}, every run's files on a tmpfs, one core", f"{c_shm:.2f} s", "", ratio, "", None)
    if "cosim1-fresh" in t:
        fresh = med(t["cosim1-fresh"])
        r.row(f"sweep of {n}, `--fresh-instances`, one core", f"{fresh:.2f} s", "",
              f"reuse saves {1 - c1 / fresh:.0%}", "", None)
    r.row(f"sweep of {n}, `--jobs 2`", f"{c2:.2f} s", "", f"speed-up {c1 / c2:.2f} on 2 jobs", "", None)


def chain(tmp: Path, cgain: str, n: int, steps: int, name: str, trace: bool = False,
          isolation: Optional[str] = None, defaults: bool = False,
          interval: Optional[float] = None) -> Path:
    """A chain of `n` CGain FMUs; outputs off, or one column traced, or
    (`defaults`) the outputs of a scenario that says nothing of them (every
    output traced, the step log), or every output traced at an output
    `interval` (s; the step is 1 ms) with no step log; its outputs (and
    summary.json) in `out-<name>` beside it."""
    lines = [f"[simulation]\nstop = {steps * 1e-3!r}\n[master]\nkind = \"fixed-step\"\nstep = 1e-3\nthreads = 1"]
    if isolation:
        lines.append(f'isolation = "{isolation}"')
    for k in range(1, n + 1):
        lines.append(f'[[subsystems]]\nname = "g{k}"\nfmu = "{cgain}"\nparameters = {{ k = 1.0 }}')
        if k == 1:
            lines.append("start = { u = 1.0 }")
    for k in range(1, n):
        lines.append(f'[[connections]]\nfrom = "g{k}.y"\nto = "g{k + 1}.u"')
    out = tmp / f"out-{name}"
    if defaults:
        lines.append(f'[outputs]\ndir = "{out}"')
    elif interval is not None:
        lines.append(f'[outputs]\ndir = "{out}"\nenergy_log = false\nstep_log = false\ninterval = {interval!r}')
    elif trace:
        lines.append(f'[outputs]\ndir = "{out}"\nenergy_log = false\nstep_log = false\nvariables = ["g{n}.y"]')
    else:
        lines.append(f'[outputs]\ndir = "{out}"\ntrace = false\nenergy_log = false\nstep_log = false')
    path = tmp / f"{name}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_summary(a: argparse.Namespace, scenario: Path) -> dict:
    timed([a.cosim, "-q", "run", str(scenario)])
    return summary(scenario.parent / f"out-{scenario.stem}")


def init(a: argparse.Namespace, r: Report, tmp: Path) -> None:
    s = chain(tmp, a.cgain, 2000, 1, "init2000")
    inits, wholes = [], []
    for _ in range(a.runs):
        t = timed([a.cosim, "-q", "run", str(s)])
        wholes.append(t)
        inits.append(summary(tmp / "out-init2000")["init_time_s"])
    i = med(inits)
    r.row("initialization, chain of 2000 CGain", ms(i), "", f"whole process {med(wholes):.2f} s", "< 100 ms", i < 0.1)


def stepping(a: argparse.Namespace, scenario: Path) -> float:
    return run_summary(a, scenario)["wall_time_s"]


def traced(a: argparse.Namespace, r: Report, tmp: Path) -> None:
    for n, steps in ((10, a.trace_steps), (100, a.trace_steps // 4)):
        off = chain(tmp, a.cgain, n, steps, f"off{n}")
        on = chain(tmp, a.cgain, n, steps, f"on{n}", trace=True)
        t = alternate(a.runs, {"off": lambda: stepping(a, off), "on": lambda: stepping(a, on)})
        ratio = med(t["on"]) / med(t["off"])
        r.row(f"one column traced every step / outputs off, chain of {n}, {steps} steps",
              f"{med(t['on']) / steps / n * 1e9:.1f} ns per FMU-step", f"off {med(t['off']) / steps / n * 1e9:.1f}",
              f"{ratio:.2f}", "<= 1.10", ratio <= 1.10)


def isolation(a: argparse.Namespace, r: Report, tmp: Path) -> None:
    for n, steps in ((10, 5_000), (100, 500)):
        none = chain(tmp, a.cgain, n, steps, f"in{n}")
        proc = chain(tmp, a.cgain, n, steps, f"iso{n}", isolation="process")
        t = alternate(a.runs, {"in": lambda: stepping(a, none), "iso": lambda: stepping(a, proc)})
        per_in = med(t["in"]) / steps / n
        per_iso = med(t["iso"]) / steps / n
        r.row(f"every FMU isolated / in-process, chain of {n}", f"{per_iso * 1e6:.3f} us per FMU-step",
              f"in-process {per_in * 1e6:.3f} us", f"{per_iso / per_in:.1f}", "<= 3", per_iso / per_in <= 3)
    # Every step watched: the host records the traced column after each
    # step of its held runs.
    for n, steps in ((10, 50_000), (100, 5_000)):
        traced_in = chain(tmp, a.cgain, n, steps, f"tin{n}", trace=True)
        traced_iso = chain(tmp, a.cgain, n, steps, f"tiso{n}", trace=True, isolation="process")
        t = alternate(a.runs, {"in": lambda: stepping(a, traced_in), "iso": lambda: stepping(a, traced_iso)})
        r.row(f"one column traced every step, every FMU isolated / in-process, chain of {n}",
              f"{med(t['iso']) / steps / n * 1e6:.3f} us per FMU-step",
              f"in-process {med(t['in']) / steps / n * 1e6:.3f} us", f"{med(t['iso']) / med(t['in']):.1f}",
              "<= 3", med(t['iso']) / med(t['in']) <= 3)
    # Every output traced at an output interval: of ten steps (a row
    # after each stretch of quiet steps, the step to it taken with them,
    # the values the steps leave unread read for the row) and of one step
    # (as dense as every step: recorded by the host).
    steps = 50_000
    for every in (10, 1):
        sampled_in = chain(tmp, a.cgain, 10, steps, f"sin{every}", interval=every * 1e-3)
        sampled_iso = chain(tmp, a.cgain, 10, steps, f"siso{every}", isolation="process", interval=every * 1e-3)
        t = alternate(a.runs, {"in": lambda: stepping(a, sampled_in), "iso": lambda: stepping(a, sampled_iso)})
        ratio = med(t["iso"]) / med(t["in"])
        r.row(f"every output traced every {every} steps (output interval), every FMU isolated / in-process, chain of 10",
              f"{med(t['iso']) / steps / 10 * 1e6:.3f} us per FMU-step",
              f"in-process {med(t['in']) / steps / 10 * 1e6:.3f} us", f"{ratio:.1f}", "<= 3", ratio <= 3)
    # A scenario's default outputs: every output traced and the step log,
    # a row each every step (both written on the quiet path).
    steps = 50_000
    default_in = chain(tmp, a.cgain, 10, steps, "din10", defaults=True)
    default_iso = chain(tmp, a.cgain, 10, steps, "diso10", isolation="process", defaults=True)
    t = alternate(a.runs, {"in": lambda: stepping(a, default_in), "iso": lambda: stepping(a, default_iso)})
    r.row("default outputs (every output traced, step log), every FMU isolated / in-process, chain of 10",
          f"{med(t['iso']) / steps / 10 * 1e6:.3f} us per FMU-step",
          f"in-process {med(t['in']) / steps / 10 * 1e6:.3f} us", f"{med(t['iso']) / med(t['in']):.1f}",
          "", None)
    steps = 20_000
    one_in = chain(tmp, a.cgain, 1, steps, "in1")
    one_iso = chain(tmp, a.cgain, 1, steps, "iso1", isolation="process")
    t = alternate(a.runs, {"in": lambda: stepping(a, one_in), "iso": lambda: stepping(a, one_iso)})
    extra = (med(t["iso"]) - med(t["in"])) / steps
    r.row("one FMU isolated, extra per macro step", f"{extra * 1e6:.3f} us", "", "", "<= 0.2 us", extra <= 0.2e-6)
    if a.round_trip:
        # The floor of the row above on this machine, measured now: two
        # threads on two processors passing a word back and forth.
        out = subprocess.run([a.round_trip, "--repeat", str(a.runs)], capture_output=True, text=True)
        if out.returncode == 0:
            ns = float(out.stdout.split()[-1])
            r.row("bare round trip between two processors (the floor of a step sent to a host on its own)",
                  f"{ns / 1000:.2f} us", "", f"isolated FMU / floor {extra * 1e9 / ns:.2f}", "", None)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cosim", required=True)
    p.add_argument("--cgain", required=True)
    p.add_argument("--ref-fmus", required=True)
    p.add_argument("--fmusim")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--round-trip", help="the round_trip example of cosim-isolation (the isolation rows' floor)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--sweep-runs", type=int, default=200)
    p.add_argument("--trace-steps", type=int, default=200_000)
    p.add_argument("--only", default="short,sweep,init,trace,isolation")
    p.add_argument("--out")
    a = p.parse_args()
    a.cosim = str(Path(a.cosim).resolve())
    a.cgain = str(Path(a.cgain).resolve())
    a.ref_fmus = str(Path(a.ref_fmus).resolve())
    only = a.only.split(",")
    r = Report()
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="whole-run-") as t:
        tmp = Path(t)
        for key, f in (("short", short_runs), ("sweep", sweep), ("init", init), ("trace", traced),
                       ("isolation", isolation)):
            if key in only:
                f(a, r, tmp)
    load1 = os.getloadavg()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    text = [
        "# The whole run's cost (bench/whole_run)",
        "",
        f"`{a.cosim}` (checkout at {commit}), {platform.machine()}, {os.cpu_count()} cores, median of {a.runs} runs "
        f"(contenders alternating); load average {load0[0]:.2f} at the start, {load1[0]:.2f} at the end.",
        "",
        "| what | cosim | peer | ratio | goal | met |",
        "|---|--:|--:|--:|--:|:-:|",
    ]
    text += [f"| {' | '.join(row)} |" for row in r.rows]
    if r.notes:
        text += [""] + [f"- {n}" for n in r.notes]
    report = "\n".join(text) + "\n"
    print(report)
    if a.out:
        Path(a.out).write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
