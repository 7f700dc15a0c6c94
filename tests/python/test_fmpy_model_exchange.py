"""Model Exchange: the kit's Model Exchange FMUs run by `cosim run` (cosim's
own solver, cosim-ode) and by FMPy (`fmi_type='ModelExchange'`, CVode),
each against the model's analytic or literature reference, and against each
other by the cross-check rule; and the quarter car halves, which have both
interfaces, run by cosim as Co-Simulation and as Model Exchange FMUs.

`.venv/bin/python -m pytest tests/python/test_fmpy_model_exchange.py -q`

The cosim binary is `COSIM_BIN`, else target/release/cosim, else
target/debug/cosim (`cargo build --release -p cosim-cli`); the FMUs are
fmus/dist's (`cargo xtask fmus`). A missing binary, FMU or FMPy fails.

The bands. Each reference check is derived from the tolerance the run was
given (rtol, and atol = rtol x nominal as cosim, FMPy and fmusim set it),
or is exact where every method is (piecewise linear solutions); every band
is checked to be below 5 % of the signal it bounds (`tight`), so that a 5 %
error fails. The cross-check between the two tools is the Modelica
cross-check rule, max |a - b| <= 1e-3 (range + 1e-3 nominal) over the
common output points (the absolute floor scaled to the variable's nominal:
1e-3 for order-one signals, as the rule has it, and less for Robertson's y2
of nominal 1e-5, where 1e-3 would let any y2 pass), or tighter where both
tools are known to be within a tighter band of the same reference (then
|a - b| is at most the sum of their bands).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "fmus" / "dist"
KINDS = ("fmi2", "fmi3")


# ------------------------------------------------------------------ running


@pytest.fixture(scope="session")
def cosim_bin() -> Path:
    """The cosim binary: COSIM_BIN (as tests/python/cosim_py's conftest
    names it), else the release build, else the debug build."""
    env = os.environ.get("COSIM_BIN")
    candidates = [Path(env)] if env else [ROOT / "target" / "release" / "cosim",
                                          ROOT / "target" / "debug" / "cosim"]
    for path in candidates:
        if path.is_file():
            return path
    pytest.fail(f"no cosim binary at {' or '.join(map(str, candidates))}: "
                "run `cargo build --release -p cosim-cli` (or set COSIM_BIN)")


def fmu(*parts: str) -> Path:
    path = DIST.joinpath(*parts)
    assert path.is_file(), f"{path}: no such FMU; run `cargo xtask fmus` first"
    return path


def read_trace(path: Path) -> Dict[str, np.ndarray]:
    """cosim's trace.csv: columns by variable name (the subsystem prefix and
    the unit left out), `time` first."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    cols: Dict[str, np.ndarray] = {}
    for j, header in enumerate(rows[0]):
        name = re.sub(r" \[[^\]]*\]$", "", header)
        name = name.split(".", 1)[1] if "." in name and name != "time" else name
        cols[name] = np.array([float(r[j]) for r in rows[1:]])
    return cols


class CosimRun:
    def __init__(self, out: Path, calls: Path):
        self.trace = read_trace(out / "trace.csv")
        self.summary = json.loads((out / "summary.json").read_text())
        self.calls = calls

    def solver(self) -> dict:
        return self.summary["subsystems"][0]["calls"]["solver"]


def run_cosim(cosim_bin: Path, out: Path, path: Path, *args: object) -> CosimRun:
    """`cosim run FMU ARGS` with the FMI call log (for the event times and
    the completed integrator steps)."""
    calls = out.parent / (out.name + ".calls.log")
    cmd = [str(cosim_bin), "run", str(path), "--out", str(out), "--no-progress", "-q",
           f"--log-fmi-calls={calls}", *map(str, args)]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{' '.join(cmd)}: exit status {p.returncode}\n{p.stderr[-3000:]}"
    return CosimRun(out, calls)


def call_log_events(calls: Path) -> Tuple[List[float], List[Tuple[float, float]]]:
    """From cosim's FMI call log: the times at which it entered Event Mode
    after initialization, and the (time, first state) of each completed
    integrator step (the last fmi*SetTime and fmi*SetContinuousStates
    before the call)."""
    t = math.nan
    x = math.nan
    events: List[float] = []
    steps: List[Tuple[float, float]] = []
    initialized = False
    for line in calls.read_text().splitlines():
        m = re.search(r"fmi[23]SetTime\(time=([^)]*)\)", line)
        if m:
            t = float(m.group(1))
        m = re.search(r"fmi[23]SetContinuousStates\([a-zA-Z]+=\{([^,}]*)", line)
        if m:
            x = float(m.group(1))
        if "ExitInitializationMode" in line:
            initialized = True
        elif "CompletedIntegratorStep" in line:
            steps.append((t, x))
        elif "EnterEventMode" in line and initialized:
            events.append(t)
    return events, steps


def run_fmpy(path: Path, **kw) -> np.ndarray:
    from fmpy import simulate_fmu

    return simulate_fmu(str(path), fmi_type="ModelExchange", validate=False, **kw)


def last_per_time(r: np.ndarray) -> np.ndarray:
    """FMPy's rows, the last of each time (it records an event's time twice,
    before and after the event)."""
    t = r["time"]
    return r[np.append(t[1:] != t[:-1], True)]


def on_grid(t: np.ndarray, dt: float) -> Tuple[np.ndarray, np.ndarray]:
    """The rows of times t on the grid k dt, and their k."""
    k = np.round(t / dt)
    keep = np.abs(t - k * dt) <= 1e-9 * np.maximum(1.0, np.abs(t))
    return keep, k[keep].astype(np.int64)


def common(a_t: np.ndarray, b_t: np.ndarray, dt: float):
    """Indices into a and b of the output points (multiples of dt) both have."""
    a_keep, a_k = on_grid(a_t, dt)
    b_keep, b_k = on_grid(b_t, dt)
    shared, ia, ib = np.intersect1d(a_k, b_k, return_indices=True)
    assert len(shared) >= 2, "no common output points"
    return np.nonzero(a_keep)[0][ia], np.nonzero(b_keep)[0][ib]


def tight(band: float, signal: np.ndarray, what: str) -> float:
    """A band below 5 % of the signal's size: a 5 % error fails it."""
    size = float(np.max(np.abs(signal)))
    assert band < 0.05 * size, f"{what}: band {band:.2e} is not below 5 % of {size:.3e}"
    return band


def cross_check(a: np.ndarray, b: np.ndarray, what: str, nominal: float = 1.0,
                tighter: float | None = None) -> float:
    """The cross-check rule: max |a - b| <= 1e-3 (range + 1e-3 nominal),
    or the tighter band given; returns the difference."""
    rng = float(np.max(b) - np.min(b))
    band = 1e-3 * (rng + 1e-3 * nominal)
    if tighter is not None:
        band = min(band, tighter)
    tight(band, b, what)
    diff = float(np.max(np.abs(a - b)))
    assert diff <= band, f"{what}: cosim and FMPy differ by {diff:.3e} > {band:.3e} (range {rng:.3e})"
    return diff


def input_csv(tmp_path: Path, name: str, value: float, stop: float) -> Path:
    path = tmp_path / f"{name}.csv"
    path.write_text(f"time,{name}\n0,{value!r}\n{stop!r},{value!r}\n")
    return path


# --------------------------------------------------------------- references
# The kit's references (fmus/models/src/reference.rs, bouncing_ball.rs),
# written here again from the equations.

H0, E, G, V_MIN = 1.0, 0.7, 9.81, 0.1


def bouncing_ball_contacts() -> List[float]:
    """Contact times: t1 = sqrt(2 h0 / g), then 2 e^k v1 / g apart, up to
    the first rebound slower than v_min (then at rest): 11 of them."""
    v1 = math.sqrt(2 * G * H0)
    t = math.sqrt(2 * H0 / G)
    out = [t]
    k = 1
    while E ** k * v1 >= V_MIN:
        t += 2 * E ** k * v1 / G
        out.append(t)
        k += 1
    return out


def bouncing_ball_height(t: np.ndarray) -> np.ndarray:
    contacts = bouncing_ball_contacts()
    v1 = math.sqrt(2 * G * H0)
    h = np.empty_like(t)
    for i, ti in enumerate(t):
        k = int(np.searchsorted(contacts, ti, side="right")) - 1
        if k < 0:
            h[i] = H0 - 0.5 * G * ti * ti
        elif k == len(contacts) - 1:
            h[i] = 0.0
        else:
            s = ti - contacts[k]
            h[i] = E ** (k + 1) * v1 * s - 0.5 * G * s * s
    return h


ROBERTSON_T40 = {"y1": 0.7158270687, "y2": 9.185534764e-6, "y3": 0.2841637457}
ROBERTSON_NOMINAL = {"y1": 1.0, "y2": 1e-5, "y3": 1.0}


def time_events(period: float, t: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    n = np.floor(t / period + 1e-12)
    return n, period * n * (n - 1) / 2 + n * (t - n * period)


def step_events(rate: float, x_max: float, h: float, t: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """`reference::step_events`: StepEvents for an importer that completes
    its steps at the multiples of h."""
    n = np.floor(t / h + 1e-9).astype(np.int64)
    m = max(1, math.ceil(x_max / (rate * h) - 1e-9))
    return rate * h * (n % m), (n // m).astype(float)


def step_event_resets(rate: float, x_max: float, steps: List[Tuple[float, float]]) -> List[float]:
    """StepEvents for an importer that completes its steps at the given
    times (any): the times of the resets, each at the first completed step
    where x = rate (t - last reset) >= x_max."""
    resets: List[float] = []
    last = 0.0
    for t, _ in steps:
        if rate * (t - last) >= x_max * (1 - 1e-12):
            resets.append(t)
            last = t
    return resets


# -------------------------------------------------------- Model Exchange only


@pytest.mark.parametrize("kind", KINDS)
def test_time_events_are_exact_in_cosim_and_fmpy(cosim_bin: Path, tmp_path: Path, kind: str) -> None:
    # y = floor(t / 0.25), changed at the time events the FMU announces;
    # x' = y is piecewise constant, so every solver integrates it exactly
    # (to rounding) once it stops on the events: any missed or late event
    # shows as an error of its delay in x.
    path = fmu("me", kind, "TimeEvents.fmu")
    dt = 0.01
    c = run_cosim(cosim_bin, tmp_path / "cosim", path, "--relative-tolerance", 1e-5,
                  "--output-interval", dt)
    f = last_per_time(run_fmpy(path, stop_time=2.0, output_interval=dt, relative_tolerance=1e-5,
                               output=["y", "x"]))
    for who, t, y, x in (("cosim", c.trace["time"], c.trace["y"], c.trace["x"]),
                         ("FMPy", f["time"], f["y"], f["x"])):
        assert t[0] == 0.0 and abs(t[-1] - 2.0) < 1e-12, (who, t[0], t[-1])
        n, x_ref = time_events(0.25, t)
        assert np.array_equal(y, n), f"{kind} {who}: y is not floor(t / 0.25)"
        err = float(np.max(np.abs(x - x_ref)))
        assert err <= tight(1e-9, x_ref, "x"), f"{kind} {who}: max |x - exact| = {err:.2e}"
    ic, jf = common(c.trace["time"], f["time"], dt)
    assert len(ic) == 201
    assert np.array_equal(c.trace["y"][ic], f["y"][jf]), kind
    # Both are exact to 1e-9: they agree to 2e-9.
    cross_check(c.trace["x"][ic], f["x"][jf], f"{kind} TimeEvents x", tighter=2e-9)
    s = c.solver()
    assert s["events"]["time_events"] == 8, s  # 0.25, 0.5, ..., 2.0 (the stop time included)
    assert s["events"]["state_events"] == 0 and s["events"]["step_events"] == 0, s


@pytest.mark.parametrize("kind", KINDS)
def test_bouncing_ball_contacts_and_trajectory_in_cosim_and_fmpy(cosim_bin: Path, tmp_path: Path,
                                                                 kind: str) -> None:
    path = fmu("me", kind, "BouncingBallME.fmu")
    rtol, dt = 1e-8, 0.01
    exact = bouncing_ball_contacts()
    assert len(exact) == 11
    c = run_cosim(cosim_bin, tmp_path / "cosim", path, "--relative-tolerance", rtol,
                  "--output-interval", dt)
    events, _ = call_log_events(c.calls)
    f = run_fmpy(path, stop_time=3.0, output_interval=dt, relative_tolerance=rtol,
                 record_events=True, output=["h", "v", "contacts"])
    fmpy_contacts = [f["time"][i] for i in range(1, len(f)) if f["contacts"][i] != f["contacts"][i - 1]]
    # Contact times. cosim locates the zero crossing of h to 100 eps of
    # the time, so what is left is the solution's error at the crossing
    # over the speed; it grows from contact to contact, each started from
    # the last (after a restart of the solver). At rtol 1e-8 both tools put
    # the first three within 1e-6 s (the figure; cosim 1e-7, FMPy
    # 2e-8) and all eleven within 1e-5 s (cosim's BDF 2.9e-6 at the 11th,
    # CVode 1.0e-6: cosim's error is about three times CVode's at the same
    # tolerance, both proportional to it).
    for who, found in (("cosim", events), ("FMPy", fmpy_contacts)):
        assert len(found) == 11, f"{kind} {who}: {len(found)} contacts: {found}"
        errors = [abs(a - b) for a, b in zip(found, exact)]
        assert max(errors[:3]) < 1e-6 and max(errors) < 1e-5, \
            f"{kind} {who}: contact times off by {', '.join(f'{e:.1e}' for e in errors)} s"
    # At rtol 1e-9 cosim puts all eleven within 1e-6 s.
    fine = run_cosim(cosim_bin, tmp_path / "fine", path, "--relative-tolerance", 1e-9)
    errors = [abs(a - b) for a, b in zip(call_log_events(fine.calls)[0], exact)]
    assert len(errors) == 11 and max(errors) < 1e-6, f"{kind} rtol 1e-9: contact times off by {errors}"
    assert c.trace["contacts"][-1] == 11 and f["contacts"][-1] == 11, kind
    s = c.solver()
    assert s["events"]["state_events"] == 11 and s["events"]["restarts"] >= 11, s
    # The trajectory: h at the output points against the free fall between
    # the exact contacts, within 100 x rtol x h0 = 1e-6 m (cosim 3.3e-7,
    # FMPy 9.7e-8: an error dt_k in the k-th contact time moves h by the
    # rebound speed v_k dt_k, and v_k falls as dt_k grows).
    grid = last_per_time(f)
    keep, _ = on_grid(grid["time"], dt)
    grid = grid[keep]
    for who, t, h in (("cosim", c.trace["time"], c.trace["h"]), ("FMPy", grid["time"], grid["h"])):
        assert len(t) == 301, (who, len(t))
        h_ref = bouncing_ball_height(t)
        err = float(np.max(np.abs(h - h_ref)))
        assert err <= tight(1e-6, h_ref, "h"), f"{kind} {who}: max |h - exact| = {err:.2e} m"
    ic, jf = common(c.trace["time"], grid["time"], dt)
    assert len(ic) == 301
    cross_check(c.trace["h"][ic], grid["h"][jf], f"{kind} BouncingBallME h", tighter=2e-6)
    # v jumps at the contacts: compared away from them (one output interval),
    # where its error is the rebound speed's plus g times the contact time's
    # (9.81 x 1e-5 s): 1e-4 m/s (the two differ by 1.2e-5).
    t = c.trace["time"][ic]
    away = np.array([min(abs(ti - tc) for tc in exact) > dt for ti in t])
    cross_check(c.trace["v"][ic][away], grid["v"][jf][away], f"{kind} BouncingBallME v", tighter=1e-4)
    # At rest after the last contact.
    assert c.trace["v"][-1] == 0.0 and 0.0 <= c.trace["h"][-1] < 1e-300, (c.trace["h"][-1], c.trace["v"][-1])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rtol", [1e-5, 1e-8])
def test_robertson_at_40_in_cosim_and_fmpy(cosim_bin: Path, tmp_path: Path, kind: str, rtol: float) -> None:
    # Stiff (BDF in both). At t = 40, against Hairer & Wanner's values, each
    # component within 10 x (rtol |y| + atol) with atol = rtol x nominal
    # (nominals 1, 1e-5, 1): the global error of a tolerance-controlled
    # integration is a small multiple of its local tolerance (here both
    # tools' errors are below 1 x, at rtol 1e-5 and 1e-8).
    path = fmu("me", kind, "Robertson.fmu")
    dt = 0.1
    c = run_cosim(cosim_bin, tmp_path / "cosim", path, "--relative-tolerance", rtol,
                  "--output-interval", dt)
    f = run_fmpy(path, stop_time=40.0, output_interval=dt, relative_tolerance=rtol, output=list(ROBERTSON_T40))
    assert abs(c.trace["time"][-1] - 40.0) < 1e-12 and abs(f["time"][-1] - 40.0) < 1e-12
    for name, y in ROBERTSON_T40.items():
        band = 10 * (rtol * abs(y) + rtol * ROBERTSON_NOMINAL[name])
        tight(band, np.array([y]), f"{name}(40)")
        for who, value in (("cosim", c.trace[name][-1]), ("FMPy", f[name][-1])):
            err = abs(value - y)
            assert err <= band, (f"{kind} {who} rtol {rtol:g}: {name}(40) = {value!r}, "
                                 f"error {err:.2e} > {band:.2e} ({err / y:.1e} relative)")
    ic, jf = common(c.trace["time"], f["time"], dt)
    assert len(ic) == 401
    for name in ROBERTSON_T40:
        a, b = c.trace[name][ic], f[name][jf]
        # Over the whole run both are within 10 x (rtol |y| + atol) of the
        # solution (checked at t = 40 above): they agree to twice that.
        tighter = 20 * rtol * (float(np.max(np.abs(b))) + ROBERTSON_NOMINAL[name])
        cross_check(a, b, f"{kind} Robertson {name} rtol {rtol:g}", nominal=ROBERTSON_NOMINAL[name],
                    tighter=tighter)
    s = c.solver()
    # A sane number of steps for a stiff problem (an explicit method would
    # need about 1e5 on [0, 40]): BDF takes some hundreds, a few thousand
    # with the 400 communication points it may not step over.
    assert 0 < s["steps"] < 5000 and s["jacobian_evaluations"] > 0, s


@pytest.mark.parametrize("kind", KINDS)
def test_step_events_where_each_importer_completes_its_steps(cosim_bin: Path, tmp_path: Path, kind: str) -> None:
    # x' = 1; a completed integrator step with x >= 0.255 asks for Event
    # Mode, where x is reset to 0. Where the resets fall depends on where
    # the importer completes its steps: FMPy completes one at each output
    # point (0.01) only, so its resets are at multiples of 0.01 (every 26
    # points: reference::step_events); cosim completes one after every
    # accepted solver step (of an FMU without inputs, taken over the
    # communication points as the tolerance allows), so its resets come at
    # its first completed step with x >= 0.255: at most one solver step
    # late, not on the grid. What is comparable:
    # each against the reference for its own completed steps, the number
    # of resets, and the sawtooth between resets.
    path = fmu("me", kind, "StepEvents.fmu")
    rate, x_max, dt = 1.0, 0.255, 0.01
    c = run_cosim(cosim_bin, tmp_path / "cosim", path, "--relative-tolerance", 1e-5,
                  "--output-interval", dt)
    f = last_per_time(run_fmpy(path, stop_time=1.0, output_interval=dt, relative_tolerance=1e-5,
                               output=["x", "resets"]))
    # FMPy: exactly the reference for steps completed at the multiples of dt.
    x_ref, resets_ref = step_events(rate, x_max, dt, f["time"])
    assert np.max(np.abs(f["x"] - x_ref)) <= 1e-9 and np.array_equal(f["resets"], resets_ref), kind
    fmpy_resets = [0.26, 0.52, 0.78]
    # cosim: the reference for its own completed steps (from the FMI call
    # log: each fmi*CompletedIntegratorStep and the time and state set
    # before it), which must also be where it entered Event Mode.
    events, steps = call_log_events(c.calls)
    assert len(steps) == c.solver()["steps"], (len(steps), c.solver())
    assert all(abs(x - rate * (t - max([0.0] + [e for e in events if e < t]))) < 1e-9 for t, x in steps), \
        f"{kind}: x at a completed step is not t - last reset"
    resets = step_event_resets(rate, x_max, steps)
    assert len(resets) == 3 and np.allclose(events, resets, rtol=0, atol=1e-12), (kind, events, resets)
    last = 0.0
    times = [t for t, _ in steps]
    for r in resets:
        # at x >= x_max, and the completed step before it still below
        before = max(t for t in times if t < r)
        assert x_max <= rate * (r - last) and rate * (before - last) < x_max, (kind, resets, before)
        last = r
    # (The longest step cosim completed: how late a reset can come.)
    h_max = max(np.diff([0.0] + times))
    t = c.trace["time"]
    n = np.searchsorted(resets, t + 1e-12)  # resets up to and including t
    since = np.array([t[i] - ([0.0] + resets)[n[i]] for i in range(len(t))])
    assert np.max(np.abs(c.trace["x"] - rate * since)) <= 1e-9, kind
    assert np.array_equal(c.trace["resets"], n.astype(float)), kind
    assert c.solver()["events"]["step_events"] == 3, c.solver()
    # Against each other: the same number of resets, the times between two
    # resets at most one output interval or one of cosim's steps apart
    # (cosim's in [0.255, 0.255 + h_max], FMPy's 0.26: the differences add
    # up from reset to reset), and where
    # both have made the same number of resets x differs by exactly the
    # difference of their last reset times.
    assert c.trace["resets"][-1] == f["resets"][-1] == 3
    gaps = np.diff([0.0] + resets) - np.diff([0.0] + fmpy_resets)
    assert np.max(np.abs(gaps)) <= max(dt, h_max) + 1e-12, resets
    ic, jf = common(c.trace["time"], f["time"], dt)
    same = c.trace["resets"][ic] == f["resets"][jf]
    assert same.sum() >= 90, same.sum()
    k = f["resets"][jf][same].astype(int)
    shift = np.array([([0.0] + fmpy_resets)[i] - ([0.0] + resets)[i] for i in k])
    assert np.max(np.abs(c.trace["x"][ic][same] - f["x"][jf][same] - shift)) <= 1e-9, kind


# ---------------------------------------------- both interfaces: quarter car


@pytest.mark.parametrize("kind", KINDS)
def test_quarter_car_chassis_me_equals_its_exact_co_simulation(cosim_bin: Path, tmp_path: Path, kind: str) -> None:
    # m_c v_c' = F, z_c' = v_c. As a Co-Simulation FMU the chassis integrates
    # its (polynomial) input exactly: F = 400 N gives v_c = t, z_c = t^2 / 2
    # to rounding. As a Model Exchange FMU cosim's solver integrates it:
    # the two agree within the solver's tolerance, here to 1e-9 (rtol
    # 1e-9, atol 1e-9: a polynomial of degree 2 is within BDF's orders).
    path = fmu(kind, "QuarterCarChassis.fmu")
    stop = 0.5
    force = input_csv(tmp_path, "F", 400.0, stop)
    runs = {}
    for interface in ("cs", "me"):
        # (The tolerance is the Model Exchange solver's: refused for a
        # Co-Simulation run, whose FMU integrates itself.)
        tolerance = ("--relative-tolerance", 1e-9) if interface == "me" else ()
        runs[interface] = run_cosim(cosim_bin, tmp_path / interface, path, "--interface", interface,
                                    "--stop", stop, "--input-file", force, *tolerance,
                                    "--output-variables", "v_c", "z_c").trace
    cs, me = runs["cs"], runs["me"]
    assert np.array_equal(cs["time"], me["time"]) and len(cs["time"]) == 501
    t = cs["time"]
    assert np.max(np.abs(cs["v_c"] - t)) <= 1e-12 and np.max(np.abs(cs["z_c"] - t * t / 2)) <= 1e-12, kind
    for name in ("v_c", "z_c"):
        band = tight(1e-9 * (1 + float(np.max(np.abs(cs[name])))), cs[name], name)
        diff = float(np.max(np.abs(me[name] - cs[name])))
        assert diff <= band, f"{kind} chassis {name}: ME and CS differ by {diff:.2e} > {band:.1e}"


# The halves that integrate by forward Euler as Co-Simulation FMUs (fixed
# micro steps): (FMU, input, its constant value, outputs compared).
EULER_HALVES = [
    ("QuarterCarWheelSuspension", "v_c", 0.0, ["z_w", "v_w", "F_c"]),
    ("QuarterCarChassisSuspension", "v_w", 0.1, ["z_c", "v_c", "F_c"]),
    ("QuarterCarWheel", "F", 0.0, ["z_w", "v_w"]),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("half", EULER_HALVES, ids=[h[0] for h in EULER_HALVES])
def test_quarter_car_euler_halves_me_equals_their_co_simulation(cosim_bin: Path, tmp_path: Path, kind: str,
                                                                half) -> None:
    # As Co-Simulation FMUs these halves integrate by forward Euler with
    # `micro_steps` per 1 ms step (fmus/README.md): first order, so their
    # error is far above any ME tolerance (1e-3 relative at 10 micro steps).
    # Richardson's extrapolation of two CS runs, 2 CS(2m) - CS(m), removes
    # the first-order term (what is left is O(h^2): 1e-6 relative at m =
    # 400); the ME run (rtol 1e-8) must agree with it within that and its
    # own tolerance, and CS(2m) must be closer to ME than CS(m) by half
    # (first order), which tells that ME and CS compute the same model.
    name, inp, value, outputs = half
    path = fmu(kind, name + ".fmu")
    stop = 0.5
    feed = input_csv(tmp_path, inp, value, stop)
    common_args = ["--stop", stop, "--input-file", feed, "--output-variables", *outputs]
    me = run_cosim(cosim_bin, tmp_path / "me", path, "--interface", "me", "--relative-tolerance", 1e-8,
                   *common_args).trace
    cs = {m: run_cosim(cosim_bin, tmp_path / f"cs{m}", path, "--interface", "cs", "--set", f"micro_steps={m}",
                       *common_args).trace for m in (400, 800)}
    assert np.array_equal(me["time"], cs[400]["time"]) and len(me["time"]) == 501
    for out in outputs:
        coarse, fine = cs[400][out], cs[800][out]
        extrapolated = 2 * fine - coarse
        size = float(np.max(np.abs(extrapolated)))
        band = tight(1e-5 * size, extrapolated, out)
        diff = float(np.max(np.abs(me[out] - extrapolated)))
        assert diff <= band, f"{kind} {name}.{out}: ME and extrapolated CS differ by {diff:.2e} > {band:.2e}"
        e_coarse = float(np.max(np.abs(coarse - me[out])))
        e_fine = float(np.max(np.abs(fine - me[out])))
        assert 0.4 < e_fine / e_coarse < 0.6, f"{kind} {name}.{out}: CS errors {e_coarse:.2e}, {e_fine:.2e}"
