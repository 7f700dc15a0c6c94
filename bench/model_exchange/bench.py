#!/usr/bin/env python3
"""Model Exchange benchmark (issue 41): cosim against fmusim and FMPy on the
same Model Exchange FMUs at the same tolerance. Run by
bench/model_exchange/run.sh, which builds fmusim and the Reference FMUs and
names them here; see there.

For every FMU, FMI version and relative tolerance, each contender runs the
FMU as a Model Exchange FMU from the start to the stop time with the same
output interval, its result written to a CSV file:

- cosim:      `cosim run FMU --interface me --relative-tolerance R --step DT
              --output-interval DT --stop T` (BDF, cosim-ode on diffsol; the
              solver never steps past a communication point, every DT)
- cosim rk45: the same with `--solver rk45` (for information: not CVode's method)
- fmusim:     `fmusim --interface-type me --solver cvode --tolerance R
              --output-interval DT --stop-time T --output-file F FMU` (CVODE
              BDF, integrating past output points and interpolating)
- FMPy:       `simulate_fmu(FMU, fmi_type='ModelExchange', relative_tolerance=R,
              output_interval=DT, stop_time=T, validate=False)` then
              `write_csv`, in a fresh `python -c` (CVode BDF, max step
              (stop - start) / 50, interpolating past output points)

All three set CVode's / the solver's absolute tolerance to rtol x nominal.

Time: process start to exit, the median of --runs runs, the contenders
alternating run by run (in a rotating order); and the CPU time of each run
(user + system of the process and its children), which the load of a
shared machine disturbs less. cosim's own figure for
initialization and stepping (summary.json) and FMPy's time in
`simulate_fmu` (without the interpreter and its imports) are given beside.

Accuracy: the error against an analytic or literature reference, from the
CSV a timed run wrote (see ERRORS in the report). Statistics: from one more
run per contender and case with every FMI call counted (cosim's and
fmusim's call logs, FMPy's `fmi_call_logger`), not timed; cosim's solver
statistics from summary.json, FMPy's CVode counters read from its CVode
instance (accumulated over CVodeReInit).

    python3 bench/model_exchange/bench.py --cosim target/release/cosim \
        --fmusim target/me-bench/fmusim/fmusim --ref-fmus target/me-bench/ref \
        --python .venv/bin/python --out report.md [--runs 7] [--rtol 1e-4,1e-6,1e-8]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------- references

H0, E, G, V_MIN = 1.0, 0.7, 9.81, 0.1


def bouncing_ball_contacts() -> List[float]:
    v1 = math.sqrt(2 * G * H0)
    t = math.sqrt(2 * H0 / G)
    out = [t]
    k = 1
    while E ** k * v1 >= V_MIN:
        t += 2 * E ** k * v1 / G
        out.append(t)
        k += 1
    return out


CONTACTS = bouncing_ball_contacts()


def bouncing_ball_height(t: float) -> float:
    """Both balls (the kit's BouncingBallME and the Reference FMUs'
    BouncingBall): h0 = 1, g = 9.81, e = 0.7, at rest once a rebound is
    slower than 0.1 m/s (after the 11th contact)."""
    v1 = math.sqrt(2 * G * H0)
    k = sum(1 for c in CONTACTS if c <= t) - 1
    if k < 0:
        return H0 - 0.5 * G * t * t
    if k == len(CONTACTS) - 1:
        return 0.0
    s = t - CONTACTS[k]
    return E ** (k + 1) * v1 * s - 0.5 * G * s * s


def van_der_pol_reference(t_end: float = 20.0, mu: float = 1.0) -> List[float]:
    """x0, x1 of the Reference FMUs' VanDerPol (x0(0) = 2, x1(0) = 0) at
    t_end by classical RK4 at 2e-5 (the result moves by under 1e-12 when
    the step is halved)."""
    n = int(round(t_end / 2e-5))
    h = t_end / n
    x0, x1 = 2.0, 0.0
    for _ in range(n):
        a0, a1 = x1, mu * (1 - x0 * x0) * x1 - x0
        b0x, b1x = x0 + 0.5 * h * a0, x1 + 0.5 * h * a1
        b0, b1 = b1x, mu * (1 - b0x * b0x) * b1x - b0x
        c0x, c1x = x0 + 0.5 * h * b0, x1 + 0.5 * h * b1
        c0, c1 = c1x, mu * (1 - c0x * c0x) * c1x - c0x
        d0x, d1x = x0 + h * c0, x1 + h * c1
        d0, d1 = d1x, mu * (1 - d0x * d0x) * d1x - d0x
        x0 += h / 6 * (a0 + 2 * b0 + 2 * c0 + d0)
        x1 += h / 6 * (a1 + 2 * b1 + 2 * c1 + d1)
    return [x0, x1]


ROBERTSON_T40 = {"y1": 0.7158270687, "y2": 9.185534764e-6, "y3": 0.2841637457}


def on_grid_rows(cols: Dict[str, List[float]], dt: float) -> List[int]:
    """Rows at the output points k dt, the last of each time (FMPy and
    fmusim record an event's time twice)."""
    t = cols["time"]
    rows = []
    for i, ti in enumerate(t):
        if i + 1 < len(t) and t[i + 1] == ti:
            continue
        if abs(ti - round(ti / dt) * dt) <= 1e-9 * max(1.0, abs(ti)):
            rows.append(i)
    return rows


def end_value(cols, name):
    return cols[name][-1]


class Case:
    def __init__(self, name: str, source: str, stop: float, dt: float, what: str,
                 error: Callable[[Dict[str, List[float]], float], float]):
        self.name, self.source, self.stop, self.dt, self.what, self.error = name, source, stop, dt, what, error


def err_robertson(cols, dt):
    return max(abs(end_value(cols, n) - y) / y for n, y in ROBERTSON_T40.items())


def err_ball(cols, dt):
    return max(abs(cols["h"][i] - bouncing_ball_height(cols["time"][i])) for i in on_grid_rows(cols, dt))


def err_time_events(cols, dt):
    def x(t):
        n = math.floor(t / 0.25 + 1e-12)
        return 0.25 * n * (n - 1) / 2 + n * (t - n * 0.25)
    return max(abs(cols["x"][i] - x(cols["time"][i])) for i in on_grid_rows(cols, dt))


VDP = None


def err_vdp(cols, dt):
    global VDP
    if VDP is None:
        VDP = van_der_pol_reference()
    return max(abs(end_value(cols, "x0") - VDP[0]), abs(end_value(cols, "x1") - VDP[1]))


def err_dahlquist(cols, dt):
    return abs(end_value(cols, "x") - math.exp(-10.0))


CASES = [
    Case("Robertson", "kit", 40.0, 0.1, "max_i |y_i(40) - y_i| / y_i against Hairer & Wanner's y(40) (relative)",
         err_robertson),
    Case("BouncingBallME", "kit", 3.0, 0.01, "max |h - h_exact| over the output points, m (analytic contacts)",
         err_ball),
    Case("TimeEvents", "kit", 2.0, 0.01, "max |x - x_exact| over the output points (x piecewise linear)",
         err_time_events),
    Case("VanDerPol", "Reference FMUs", 20.0, 0.01, "max |x_i(20) - x_i| (reference: RK4 at 2e-5)", err_vdp),
    Case("BouncingBall", "Reference FMUs", 3.0, 0.01, "max |h - h_exact| over the output points, m (analytic contacts)",
         err_ball),
    Case("Dahlquist", "Reference FMUs", 10.0, 0.1, "|x(10) - exp(-10)|", err_dahlquist),
]

# ------------------------------------------------------------------ running

FMPY_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from fmpy import simulate_fmu
from fmpy.util import write_csv
path, rtol, dt, stop, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
t1 = time.perf_counter()
r = simulate_fmu(path, fmi_type="ModelExchange", relative_tolerance=rtol, output_interval=dt, stop_time=stop,
                 validate=False)
t2 = time.perf_counter()
write_csv(out, r)
print(json.dumps({"import": t1 - t0, "simulate": t2 - t1}))
"""

# The statistics run of FMPy: every FMI call counted, and CVode's counters
# read from the CVodeSolver instance, added up over its CVodeReInit calls.
FMPY_STATS_CHILD = r"""
import ctypes, json, re, sys
from collections import Counter
import fmpy.sundials as S
from fmpy.sundials.libraries import sundials_cvode as cv
from fmpy import simulate_fmu
path, rtol, dt, stop = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
NAMES = {"steps": "CVodeGetNumSteps", "f_evals": "CVodeGetNumRhsEvals", "f_evals_jac": "CVodeGetNumLinRhsEvals",
         "jacobians": "CVodeGetNumJacEvals", "error_test_fails": "CVodeGetNumErrTestFails",
         "newton_fails": "CVodeGetNumNonlinSolvConvFails", "g_evals": "CVodeGetNumGEvals"}
total = Counter()
solvers = []
def read(s):
    out = {}
    for k, f in NAMES.items():
        v = ctypes.c_long(0)
        getattr(cv, f)(ctypes.c_void_p(s.cvode_mem), ctypes.byref(v))
        out[k] = v.value
    return out
init, reset = S.CVodeSolver.__init__, S.CVodeSolver.reset
def init_(self, *a, **k):
    init(self, *a, **k)
    solvers.append(self)
def reset_(self, time):
    total.update(read(self))
    total["reinits"] += 1
    return reset(self, time)
S.CVodeSolver.__init__, S.CVodeSolver.reset = init_, reset_
calls = Counter()
def log(message):
    m = re.match(r"\s*(?:\w+: )?(fmi[23]\w+)", message)
    if m:
        calls[m.group(1)] += 1
simulate_fmu(path, fmi_type="ModelExchange", relative_tolerance=rtol, output_interval=dt, stop_time=stop,
             validate=False, fmi_call_logger=log)
for s in solvers:
    total.update(read(s))
print(json.dumps({"calls": calls, "cvode": total}))
"""


def run_timed(cmd: List[str], capture: bool = False, env=None):
    """Runs cmd: (wall s, CPU s of the process and its children (user +
    system, from wait4), its standard output)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env)
    stdout, stderr = p.communicate()
    elapsed = time.perf_counter() - t0
    # communicate() has reaped the child: its CPU time is in RUSAGE_CHILDREN's increase.
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit status {p.returncode}\n{stderr[-2000:]}")
    return elapsed, stdout or ""


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def read_csv(path: Path) -> Dict[str, List[float]]:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    cols = {}
    for j, header in enumerate(rows[0]):
        name = re.sub(r" \[[^\]]*\]$", "", header.strip())
        if name != "time" and "." in name and not name.startswith("der("):
            name = name.split(".", 1)[1]
        cols[name] = [float(r[j]) for r in rows[1:]]
    return cols


def count_calls(lines) -> Dict[str, int]:
    calls: Dict[str, int] = {}
    for line in lines:
        m = re.search(r"\b(fmi[23][A-Za-z]+)\(", line)
        if m:
            calls[m.group(1)] = calls.get(m.group(1), 0) + 1
    return calls


def calls_summary(calls: Dict[str, int]) -> Dict[str, int]:
    def n(*names):
        return sum(calls.get(x, 0) for x in names)
    return {
        "derivatives": n("fmi2GetDerivatives", "fmi3GetContinuousStateDerivatives"),
        "indicators": n("fmi2GetEventIndicators", "fmi3GetEventIndicators"),
        "completed": n("fmi2CompletedIntegratorStep", "fmi3CompletedIntegratorStep"),
        "events": n("fmi2EnterEventMode", "fmi3EnterEventMode"),
        "total": sum(calls.values()),
    }


class Contender:
    def __init__(self, name, args, work: Path):
        self.name, self.args, self.work = name, args, work

    def command(self, fmu: Path, case: Case, rtol: float, out: Path) -> List[str]:
        a = self.args
        if self.name.startswith("cosim"):
            cmd = [str(a.cosim), "run", str(fmu), "--interface", "me", "--relative-tolerance", repr(rtol),
                   "--step", repr(case.dt), "--output-interval", repr(case.dt), "--stop", repr(case.stop),
                   "--out", str(out), "--no-progress", "-q"]
            if self.name == "cosim rk45":
                cmd += ["--solver", "rk45"]
            return cmd
        if self.name == "fmusim":
            return [str(a.fmusim), "--interface-type", "me", "--solver", "cvode", "--tolerance", repr(rtol),
                    "--output-interval", repr(case.dt), "--stop-time", repr(case.stop),
                    "--output-file", str(out), str(fmu)]
        return [str(a.python), "-c", FMPY_CHILD, str(fmu), repr(rtol), repr(case.dt), repr(case.stop), str(out)]

    def output(self, out: Path) -> Path:
        return out / "trace.csv" if self.name.startswith("cosim") else out

    def run(self, fmu, case, rtol, slot: str):
        """One timed run: (wall s, CPU s, own figure s or None, result CSV)."""
        out = self.work / slot
        if out.is_dir():
            shutil.rmtree(out)
        elif out.exists():
            out.unlink()
        cmd = self.command(fmu, case, rtol, out)
        cpu0 = cpu_children()
        wall, stdout = run_timed(cmd, capture=self.name == "FMPy")
        cpu = cpu_children() - cpu0
        own = None
        if self.name.startswith("cosim"):
            s = json.loads((out / "summary.json").read_text())
            own = s["init_time_s"] + s["wall_time_s"]
        elif self.name == "FMPy":
            own = json.loads(stdout.strip().splitlines()[-1])["simulate"]
        return wall, cpu, own, self.output(out)

    def stats(self, fmu, case, rtol) -> dict:
        """One untimed run with every FMI call counted."""
        out = self.work / "stats"
        if out.is_dir():
            shutil.rmtree(out)
        elif out.exists():
            out.unlink()
        log = self.work / "stats-calls.log"
        a = self.args
        if self.name.startswith("cosim"):
            cmd = self.command(fmu, case, rtol, out) + [f"--log-fmi-calls={log}"]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            s = json.loads((out / "summary.json").read_text())["subsystems"][0]["calls"]["solver"]
            with open(log) as f:
                calls = calls_summary(count_calls(f))
            return {"calls": calls, "solver": {
                "steps": s["steps"], "rejected": s["rejected_steps"], "f_evals": s["derivative_evaluations"],
                "jacobians": s["jacobian_evaluations"], "g_evals": s["event_indicator_evaluations"],
                "restarts": s["events"]["restarts"]}}
        if self.name == "fmusim":
            cmd = self.command(fmu, case, rtol, out)
            cmd[1:1] = ["--log-fmi-calls", "--fmi-log-file", str(log)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            with open(log) as f:
                calls = calls_summary(count_calls(f))
            return {"calls": calls, "solver": None}
        p = subprocess.run([str(a.python), "-c", FMPY_STATS_CHILD, str(fmu), repr(rtol), repr(case.dt),
                            repr(case.stop)], check=True, capture_output=True, text=True)
        r = json.loads(p.stdout.strip().splitlines()[-1])
        c = r["cvode"]
        return {"calls": calls_summary(r["calls"]), "solver": {
            "steps": c.get("steps", 0), "rejected": c.get("error_test_fails", 0) + c.get("newton_fails", 0),
            "f_evals": c.get("f_evals", 0) + c.get("f_evals_jac", 0), "jacobians": c.get("jacobians", 0),
            "g_evals": c.get("g_evals", 0), "restarts": c.get("reinits", 0)}}


# ------------------------------------------------------------------ report


def fmt_ms(s: Optional[float]) -> str:
    if s is None:
        return "-"
    ms = 1e3 * s
    return f"{ms:.1f}" if ms < 100 else f"{ms:.0f}"


def fmt_e(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.1e}"


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def loadavg() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def machine() -> str:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores available, Linux {platform.release()}"


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except Exception:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cosim", type=Path, required=True)
    ap.add_argument("--fmusim", type=Path, help="fmusim; without it, cosim against FMPy only")
    ap.add_argument("--no-fmusim-why", default="", help="why there is no fmusim (for the report)")
    ap.add_argument("--ref-fmus", type=Path, required=True,
                    help="directory with fmi2/ and fmi3/ holding the Reference FMUs' VanDerPol, BouncingBall, Dahlquist")
    ap.add_argument("--ref-version", default="?", help="the Reference FMUs' version (for the report)")
    ap.add_argument("--python", type=Path, default=ROOT / ".venv" / "bin" / "python")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--rtol", default="1e-4,1e-6,1e-8")
    ap.add_argument("--fmi", default="2,3")
    ap.add_argument("--only", default="", help="comma-separated FMU names")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--json", type=Path, help="also every run's figures, as JSON")
    args = ap.parse_args()

    rtols = [float(x) for x in args.rtol.split(",")]
    versions = [int(x) for x in args.fmi.split(",")]
    cases = [c for c in CASES if not args.only or c.name in args.only.split(",")]
    work = Path(tempfile.mkdtemp(prefix="me-bench-"))
    names = ["cosim"] + (["fmusim"] if args.fmusim else []) + ["FMPy", "cosim rk45"]
    contenders = [Contender(n, args, work) for n in names]

    def fmu_path(case: Case, v: int) -> Path:
        if case.source == "kit":
            return ROOT / "fmus" / "dist" / "me" / f"fmi{v}" / f"{case.name}.fmu"
        return args.ref_fmus / f"fmi{v}" / f"{case.name}.fmu"

    for c in cases:
        for v in versions:
            assert fmu_path(c, v).is_file(), fmu_path(c, v)

    fmpy_version = subprocess.run([str(args.python), "-c", "import fmpy, ctypes; "
                                   "from fmpy.sundials.libraries import sundials_core as s; "
                                   "b = ctypes.create_string_buffer(64); s.SUNDIALSGetVersion(b, 64); "
                                   "print(fmpy.__version__, b.value.decode())"],
                                  capture_output=True, text=True, check=True).stdout.split()
    fmusim_version = (subprocess.run([str(args.fmusim), "--version"], capture_output=True, text=True).stdout.strip()
                      if args.fmusim else None)
    load_start = loadavg()
    started = time.time()
    results = []  # (case, v, rtol, {contender: {...}})
    for case in cases:
        for v in versions:
            fmu = fmu_path(case, v)
            for rtol in rtols:
                row = {c.name: {"wall": [], "cpu": [], "own": []} for c in contenders}
                for r in range(args.runs):
                    k = r % len(contenders)
                    for c in contenders[k:] + contenders[:k]:
                        wall, cpu, own, out = c.run(fmu, case, rtol, f"{c.name.replace(' ', '_').replace(',', '')}.out")
                        row[c.name]["wall"].append(wall)
                        row[c.name]["cpu"].append(cpu)
                        if own is not None:
                            row[c.name]["own"].append(own)
                        if r == args.runs - 1 or "error" not in row[c.name]:
                            row[c.name]["error"] = case.error(read_csv(out), case.dt)
                for c in contenders:
                    row[c.name]["stats"] = c.stats(fmu, case, rtol)
                results.append((case, v, rtol, row))
                print(f"{case.name} FMI {v} rtol {rtol:g}: " + ", ".join(
                    f"{n} {fmt_ms(statistics.median(row[n]['wall']))} ms err {fmt_e(row[n]['error'])}"
                    for n in row), file=sys.stderr, flush=True)
    elapsed = time.time() - started
    load_end = loadavg()
    shutil.rmtree(work, ignore_errors=True)

    has_fmusim = args.fmusim is not None
    names_ = [c.name for c in contenders]
    solvers_ = names_
    others = (["fmusim"] if has_fmusim else []) + ["FMPy"]

    def med(row, n, key="wall"):
        return statistics.median(row[n][key])

    out = []
    w = out.append
    w("# Model Exchange: cosim against fmusim and FMPy\n")
    w(f"Machine: {machine()}.  ")
    w(f"Load average (1/5/15 min) at the start: {load_start}, at the end: {load_end} "
      "(the machine is shared: other work inflates and scatters every figure).  ")
    w(f"cosim: commit {git_commit()} ({args.cosim}), BDF (cosim-ode on diffsol) unless `rk45`.  ")
    if has_fmusim:
        w(f"fmusim: {fmusim_version}, from the Reference FMUs' sources ({args.ref_version}), built against "
          "Debian's CVODE 6.4.1 (libsundials-dev), BDF.  ")
    else:
        w(f"fmusim: not run ({args.no_fmusim_why or 'not given'}).  ")
    w(f"FMPy: {fmpy_version[0]} with its own SUNDIALS {fmpy_version[1]} (CVode BDF), `validate=False`.  ")
    w(f"Reference FMUs: {args.ref_version}, CMake Release build (-O3).  ")
    w(f"Figures: medians of {args.runs} runs per contender, the contenders alternating run by run in a "
      f"rotating order; whole invocation {elapsed:.0f} s.\n")
    w("Every contender runs the FMU as a Model Exchange FMU from 0 to the stop time with outputs every DT "
      "(written to a CSV file) at the same relative tolerance (absolute tolerance rtol x nominal in all "
      "three). cosim's solver stops at every output point (its communication points); CVode in fmusim and "
      "FMPy integrates past them and interpolates.\n")
    w("## Time per run\n")
    w("Milliseconds, process start to exit (median). *cosim own*: initialization and stepping from "
      "summary.json (no process start, FMU extraction and loading, output files, exit); *FMPy own*: "
      "`simulate_fmu` alone (no interpreter start and imports, no CSV).\n")
    head = ["FMU", "FMI", "rtol", "DT"] + names_ + ["cosim own", "FMPy own"] + [f"{o} / cosim" for o in others] + \
        ["FMPy own / cosim own"]
    w("| " + " | ".join(head) + " |")
    w("|" + "---|" * 4 + "--:|" * (len(head) - 4))
    for case, v, rtol, row in results:
        cells = [case.name, str(v), f"{rtol:g}", f"{case.dt:g}"] + [fmt_ms(med(row, n)) for n in names_]
        cells += [fmt_ms(med(row, "cosim", "own")), fmt_ms(med(row, "FMPy", "own"))]
        cells += [f"{med(row, o) / med(row, 'cosim'):.2f}" for o in others]
        cells.append(f"{med(row, 'FMPy', 'own') / med(row, 'cosim', 'own'):.0f}")
        w("| " + " | ".join(cells) + " |")
    w("\n## Spread\n")
    w("Minimum and maximum over the runs, ms.\n")
    w("| FMU | FMI | rtol | " + " | ".join(names_) + " |")
    w("|---|---|---|" + "--:|" * len(names_))
    for case, v, rtol, row in results:
        w(f"| {case.name} | {v} | {rtol:g} | " + " | ".join(
            f"{fmt_ms(min(row[n]['wall']))}-{fmt_ms(max(row[n]['wall']))}" for n in names_) + " |")
    w("\n## CPU time per run\n")
    w("Milliseconds of CPU (user + system) of the process and its children, median (from `wait4`): "
      "what the run costs whatever the load, without the time it waits (for a CPU, for a thread).\n")
    w("| FMU | FMI | rtol | " + " | ".join(solvers_) + " | " + " | ".join(f"{o} / cosim" for o in others) + " |")
    w("|---|---|---|" + "--:|" * (len(solvers_) + len(others)))
    for case, v, rtol, row in results:
        w(f"| {case.name} | {v} | {rtol:g} | " + " | ".join(fmt_ms(med(row, n, "cpu")) for n in solvers_) +
          " | " + " | ".join(f"{med(row, o, 'cpu') / med(row, 'cosim', 'cpu'):.2f}" for o in others) + " |")
    w("\n## Accuracy\n")
    w("Error against the reference, from a timed run's CSV:\n")
    for case in cases:
        w(f"- {case.name}: {case.what}")
    w("")
    w("| FMU | FMI | rtol | " + " | ".join(solvers_) + " | cosim / FMPy |")
    w("|---|---|---|" + "--:|" * (len(solvers_) + 1))
    for case, v, rtol, row in results:
        e_c, e_f = row["cosim"]["error"], row["FMPy"]["error"]
        ratio = f"{e_c / e_f:.2g}" if e_f > 0 and e_c > 0 else "-"
        w(f"| {case.name} | {v} | {rtol:g} | " + " | ".join(fmt_e(row[n]["error"]) for n in solvers_) +
          f" | {ratio} |")
    w("\n## Solver statistics\n")
    w("FMI calls counted in an extra run (not timed): *f* the derivative calls (`fmi2GetDerivatives`, "
      "`fmi3GetContinuousStateDerivatives`; difference-quotient Jacobians included), *g* the event indicator "
      "calls, *cis* `CompletedIntegratorStep` (made only where the FMU needs it), *ev* `EnterEventMode`, "
      "*calls* every FMI call. Solver: steps, rejected (error test and Newton failures), Jacobians, "
      "restarts (cosim's; FMPy: CVodeReInit calls); cosim's from summary.json, FMPy's from CVode's counters; "
      "fmusim's CVode is not reachable from outside (its calls tell as much).\n")
    w("| FMU | FMI | rtol | contender | f | g | cis | ev | calls | steps | rejected | Jacobians | restarts |")
    w("|---|---|---|---|" + "--:|" * 9)
    for case, v, rtol, row in results:
        for n in solvers_:
            st = row[n]["stats"]
            c, s_ = st["calls"], st["solver"]
            sv = [str(s_[k]) for k in ("steps", "rejected", "jacobians", "restarts")] if s_ else ["-"] * 4
            w(f"| {case.name} | {v} | {rtol:g} | {n} | {c['derivatives']} | {c['indicators']} | {c['completed']} "
              f"| {c['events']} | {c['total']} | " + " | ".join(sv) + " |")
    w("\n## Summary\n")
    w("Geometric means over the FMUs and FMI versions, per tolerance: the ratio of median times (above 1: "
      "cosim faster), and of errors (cosim's over the other's: above 1, cosim less accurate; TimeEvents, "
      "exact to rounding in all, and fmusim's TimeEvents, wrong, left out of the error ratios).\n")
    head = ["rtol"]
    for o in others:
        head += [f"{o} / cosim time", f"cosim / {o} error"]
    head += ["FMPy own / cosim own"] + [f"{o} / cosim CPU" for o in others]
    head += ["cosim / cosim rk45 time"]
    w("| " + " | ".join(head) + " |")
    w("|---|" + "--:|" * (len(head) - 1))
    for rtol in rtols:
        rows = [(case, row) for case, _, r, row in results if r == rtol]
        cells = [f"{rtol:g}"]
        for o in others:
            cells.append(f"{geomean([med(r, o) / med(r, 'cosim') for _, r in rows]):.2f}")
            cells.append(f"{geomean([r['cosim']['error'] / r[o]['error'] for case, r in rows if case.name != 'TimeEvents' and r[o]['error'] > 0 and r['cosim']['error'] > 0]):.2g}")
        cells.append(f"{geomean([med(r, 'FMPy', 'own') / med(r, 'cosim', 'own') for _, r in rows]):.1f}")
        cells += [f"{geomean([med(r, o, 'cpu') / med(r, 'cosim', 'cpu') for _, r in rows]):.2f}" for o in others]
        cells.append(f"{geomean([med(r, 'cosim') / med(r, 'cosim rk45') for _, r in rows]):.2f}")
        w("| " + " | ".join(cells) + " |")
    w("\n## At equal accuracy\n")
    w("For each run of fmusim and FMPy (at each rtol), cosim's cheapest run (of those at the tolerances "
      "above) that is at least as accurate: the other's median time over that cosim run's (above 1: cosim "
      "faster at equal or better accuracy; `-`: no cosim run is as accurate). Whole process; for FMPy "
      "also the in-process times (*own*). "
      "TimeEvents left out (all exact to rounding but fmusim).\n")
    groups = [(o, "wall", "cosim") for o in others] + [("FMPy", "own", "cosim")]

    def label(o, key, base):
        if key == "own":
            return f"{o} own / {base} own"
        return f"{o} / {base}"

    w("| FMU | FMI | " + " | ".join(f"{label(*g)} @ {r:g}" for g in groups for r in rtols) + " |")
    w("|---|---|" + "--:|" * (len(groups) * len(rtols)))
    eq_ratios = {g: [] for g in groups}
    for case in cases:
        if case.name == "TimeEvents":
            continue
        for v in versions:
            by_tol = {r: row for c_, v_, r, row in results if c_ is case and v_ == v}
            cells = [case.name, str(v)]
            for g in groups:
                o, key, base = g
                for r in rtols:
                    e_o = by_tol[r][o]["error"]
                    ok = [med(by_tol[rc], base, key) for rc in rtols if by_tol[rc][base]["error"] <= e_o]
                    if ok:
                        ratio = med(by_tol[r], o, key) / min(ok)
                        eq_ratios[g].append(ratio)
                        cells.append(f"{ratio:.2f}")
                    else:
                        cells.append("-")
            w("| " + " | ".join(cells) + " |")
    w("")
    w("Geometric means of these ratios: " + "; ".join(
        f"{label(*g)} {geomean(x):.2f} ({len(x)} pairs)" for g, x in eq_ratios.items()) + ".")
    raw = [{"fmu": case.name, "fmi": v, "rtol": rtol, "dt": case.dt,
            "contenders": {n: {"wall_s": row[n]["wall"], "cpu_s": row[n]["cpu"], "own_s": row[n]["own"], "error": row[n]["error"],
                               "stats": row[n]["stats"]} for n in names_}}
           for case, v, rtol, row in results]
    if args.json:
        args.json.write_text(json.dumps({"load_start": load_start, "load_end": load_end, "runs": raw}))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(out) + "\n")
    print(f"report: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
