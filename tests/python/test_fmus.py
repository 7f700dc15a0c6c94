"""Interop tests of the project's FMUs (fmus/dist, and CGain, the benchmark's C
FMU) with FMPy and libcosim.

Runs under pytest (functions named test_*) or as a plain script
(`python3 tests/python/test_fmus.py`), which prints `N passed, N failed` and
exits non-zero on any failure. tests/tests/interop.rs runs it after building
the FMUs, naming those built outside fmus/dist in the environment (CARGO_FMUS
below); tests/python/run.sh runs that test on its own.
"""

import glob
import math
import os
import subprocess
import sys
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST = os.path.join(ROOT, "fmus", "dist")


def fmus(kind):
    files = sorted(glob.glob(os.path.join(DIST, kind, "*.fmu")))
    assert files, f"no FMUs in {DIST}/{kind}: run `cargo xtask fmus` first"
    return files


# FMUs the project builds outside fmus/dist, with cargo: CGain, the
# benchmark's C FMU, as FMI 2.0 and 3.0 (the cosim-cgain crate's build
# script, `cosim_cgain::FMI2_FMU` / `FMI3_FMU`), Hostile, the hand-written
# FMI 2.0 FMU of tests/data/hostile_fmu (tests/src/lib.rs `hostile_fmu`),
# and Feedthrough, the hand-written FMI 3.0 FMU of
# tests/data/feedthrough_fmu (`feedthrough_fmu`). tests/tests/interop.rs
# builds them and names them in these environment variables.
CGAIN_FMUS = ("COSIM_CGAIN_FMI2", "COSIM_CGAIN_FMI3")
CARGO_FMUS = CGAIN_FMUS + ("COSIM_HOSTILE_FMU", "COSIM_FEEDTHROUGH_FMU")


def cargo_fmu(var):
    path = os.environ.get(var)
    assert path, (f"{var} is not set: tests/tests/interop.rs builds this FMU and sets it; run "
                  "`cargo test -p cosim-tests --test interop` or tests/python/run.sh")
    assert os.path.isfile(path), f"{var}={path}: no such file"
    return path


def every_fmu():
    """Every FMU the project builds: fmus/dist/{fmi2,fmi3,me/fmi2,me/fmi3,
    variants,quirks} (`cargo xtask fmus`; me/: the Model Exchange only ones)
    and those of CARGO_FMUS."""
    return (fmus("fmi2") + fmus("fmi3") + fmus("me/fmi2") + fmus("me/fmi3") + fmus("variants")
            + fmus("quirks") + [cargo_fmu(var) for var in CARGO_FMUS])


def shown(path):
    """`path` relative to fmus/dist when it is there, else the variable of CARGO_FMUS naming it."""
    for var in CARGO_FMUS:
        if os.environ.get(var) == path:
            return var
    return os.path.relpath(path, DIST)


def model_name(path):
    return os.path.basename(path)[: -len(".fmu")]


def const_input(name, value, t_end):
    return np.array([(0.0, value), (t_end, value)], dtype=[("time", np.float64), (name, np.float64)])


def simulate(path, **kw):
    from fmpy import simulate_fmu

    return simulate_fmu(path, validate=False, **kw)


# --------------------------------------------------------------------- FMPy


def test_every_fmu_passes_fmpy_validation():
    from fmpy.validation import validate_fmu

    problems = {}
    for path in every_fmu():
        p = validate_fmu(path)
        if p:
            problems[shown(path)] = p
    assert not problems, problems


# Loads each FMU of argv as FMPy does before simulating it: the model
# description read and validated, the archive extracted, the FMU2Slave /
# FMU3Slave made (its constructor resolves every function of the FMI
# version's co-simulation API in the binary, FMI 3.0: every fmi3* function,
# as the standard requires of any binary), instantiated, freed, the library
# unloaded; an FMU with a Model Exchange interface likewise as FMU2Model /
# FMU3Model (the Model Exchange API), one with Scheduled Execution (FMI 3.0)
# as FMU3ScheduledExecution (fmi3InstantiateScheduledExecution). Prints `loaded<TAB>path` or
# `FAIL<TAB>path<TAB>why` per FMU. In
# a child process ended with os._exit: Integrator-crashes-at-exit (quirks/)
# registers in fmi2FreeInstance an exit handler that kills its process, by
# design (quirk builds are only loaded here, never simulated).
LOAD_CHILD = r"""
import os, shutil, sys
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Model, FMU2Slave
from fmpy.fmi3 import FMU3Model, FMU3ScheduledExecution, FMU3Slave
for path in sys.argv[1:]:
    d = None
    try:
        md = read_model_description(path, validate=True)
        d = extract(path)
        fmi3 = md.fmiVersion.startswith("3")
        interfaces = []
        if md.coSimulation is not None:
            interfaces.append((FMU3Slave if fmi3 else FMU2Slave, md.coSimulation.modelIdentifier))
        if md.modelExchange is not None:
            interfaces.append((FMU3Model if fmi3 else FMU2Model, md.modelExchange.modelIdentifier))
        if fmi3 and md.scheduledExecution is not None:
            interfaces.append((FMU3ScheduledExecution, md.scheduledExecution.modelIdentifier))
        assert interfaces, "no interface"
        for cls, identifier in interfaces:
            fmu = cls(guid=md.guid, unzipDirectory=d, modelIdentifier=identifier, instanceName="load")
            fmu.instantiate()
            fmu.freeInstance()
            fmu.freeLibrary()
        print("loaded", path, sep="\t", flush=True)
    except Exception as e:
        print("FAIL", path, f"{type(e).__name__}: {e}", sep="\t", flush=True)
    finally:
        if d is not None:
            shutil.rmtree(d, ignore_errors=True)
sys.stdout.flush()
os._exit(0)
"""


def test_every_fmu_loads_in_fmpy():
    paths = every_fmu()
    r = subprocess.run([sys.executable, "-c", LOAD_CHILD, *paths], capture_output=True, text=True,
                       timeout=600)
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    loaded = {row[1] for row in rows if row[0] == "loaded"}
    failed = {shown(row[1]): row[2] for row in rows if row[0] == "FAIL"}
    # The child died before reporting these (a crash while loading one).
    unreported = [shown(p) for p in paths if p not in loaded and shown(p) not in failed]
    assert r.returncode == 0 and not failed and not unreported, (
        f"exit status {r.returncode}; failed: {failed}; not reported: {unreported}; stderr: {r.stderr[-2000:]}")


# The FMUs FMPy cannot run, and why (their values are checked by the Rust
# tests named): FMPy 0.3's simulate_fmu has no Clocks (no fmi3SetClock /
# fmi3GetClock), runs FMI 3 Co-Simulation without event mode by default
# (refused by FMUs with Clocks, FMI 3.0 sec. 2.3.1) and, with
# use_event_mode=True, reads every output in Step Mode (refused for clocked
# variables, readable only while a Clock is active).
NOT_RUN_BY_FMPY = {
    "ClockedController": "Clocks (fmus/models/src/clock_tests.rs: clocked_controller_*)",
    "ThresholdTrigger": "Clocks (fmus/models/src/clock_tests.rs: threshold_trigger_*)",
    "ClockedCounter": "Clocks (fmus/models/src/clock_tests.rs: clocked_counter_*)",
    "AperiodicClocks": "Clocks (fmus/models/src/timed_clock_tests.rs: aperiodic_clocks_*)",
    # No <CoSimulation>, no <ModelExchange>: simulate_fmu has no Scheduled
    # Execution (test_partitions_in_fmpy_scheduled_execution drives it by hand).
    "Partitions": "Scheduled Execution only (fmus/models/src/clock_tests.rs: partitions_*)",
    "CountdownPartitions": "Scheduled Execution only, Clock Update Mode "
    "(fmus/models/src/timed_clock_tests.rs: countdown_partitions_*)",
}


# Every FMU runs and gives finite values; their values against references:
# ANALYTIC and VALUES below (test_every_co_simulation_model_has_a_value_check).
def test_every_fmu_simulates_in_fmpy():
    for path in fmus("fmi2") + fmus("fmi3") + fmus("variants"):
        name = model_name(path)
        if name in NOT_RUN_BY_FMPY:
            continue
        t_end = 0.05 if name.startswith(("TwoMass", "B2")) else 0.5
        step = 1e-3
        if name.startswith("ThreeMass"):
            step = 0.01
        r = simulate(path, stop_time=t_end, output_interval=step)
        assert len(r) >= 2, name
        for col in r.dtype.names:
            assert np.all(np.isfinite(r[col])), f"{name}: {col} not finite"


# Single-FMU cases with analytic solutions: (model, start values, input, t_end,
# output, solution(t), tolerance).
def damped(m, k, d, x0, t):
    w0 = math.sqrt(k / m)
    z = d / (2 * math.sqrt(k * m))
    wd = w0 * math.sqrt(1 - z * z)
    s = z * w0
    b = s * x0 / wd
    e = np.exp(-s * t)
    x = e * (x0 * np.cos(wd * t) + b * np.sin(wd * t))
    v = e * (-s * (x0 * np.cos(wd * t) + b * np.sin(wd * t)) + (-x0 * wd * np.sin(wd * t) + b * wd * np.cos(wd * t)))
    return x, v


ANALYTIC = [
    ("Integrator", {"x0": 2.0}, ("u", 3.0), 1.0, 0.01, "x", lambda t: 2.0 + 3.0 * t, 1e-12),
    ("Gain", {"k": 2.5}, ("u", 1.5), 1.0, 0.01, "y", lambda t: 3.75 + 0 * t, 1e-12),
    ("Dahlquist", {}, ("u", 0.0), 2.0, 0.01, "x", lambda t: np.exp(-t), 1e-12),
    ("Mass", {}, ("F", 2.0), 1.0, 0.01, "v", lambda t: 2.0 * t, 1e-12),
    ("QuarterCarChassis", {}, ("F", 400.0), 0.5, 1e-3, "v_c", lambda t: t, 1e-12),
    ("B2ChassisFD", {}, ("F_susp", 800.0), 0.2, 1e-3, "x_c", lambda t: t * t, 1e-10),
    ("Spring", {}, ("v", -0.5), 1.0, 0.01, "F", lambda t: -(1.0 - 0.5 * t), 1e-12),
    ("TwoMassS1", {}, ("f2", 0.0), 0.05, 1e-3, "x1", lambda t: damped(1.0, 1e3, 1.0, 0.1, t)[0], 1e-9),
    ("ThreeMassS1", {"h": 1e-4}, ("l12", 0.0), 5.0, 0.1, "x1", lambda t: damped(10.0, 1e-2, 0.1, 1.0, t)[0], 1e-4),
]


def test_single_fmu_cases_match_analytic_solutions():
    for kind in ("fmi2", "fmi3"):
        for name, start, (inp, value), t_end, dt, out, exact, tol in ANALYTIC:
            path = os.path.join(DIST, kind, name + ".fmu")
            r = simulate(path, stop_time=t_end, output_interval=dt, start_values=start,
                         input=const_input(inp, value, t_end), output=[out])
            err = np.max(np.abs(r[out] - exact(r["time"])))
            assert err <= tol, f"{kind}/{name}: max |{out} - exact| = {err:.3e} > {tol:.1e}"


# ------------------------------------------------ values of every model
# Every Co-Simulation model of fmus/dist/fmi2 and fmi3 (and their variants)
# run in FMPy and compared at every communication point with a reference
# written here from its equations (fmus/models/src) and documented start
# values (PARAMS): the exact solution where the FMU integrates exactly,
# otherwise the FMU's own documented scheme (solvers.rs, reimplemented
# below), so that the bands can be tight (errors relative to the largest
# |reference| of the variable). FMPy steps from t_i = i dt to t_(i+1),
# setting the inputs at t_i (held by the FMU over the step) and recording
# after the step: the outputs of row t_(i+1) see the inputs of t_i.

# The models' parameters and their start values, as the model code
# documents them (the benchmarks' published values). A case's reference uses
# these updated by the case's start values; those left alone check the
# FMU's own start values.
PARAMS = {
    # B1, sadjina2016 Table II (linear case); forward Euler micro steps.
    "QuarterCarWheelSuspension": dict(m_w=40.0, k_c=15000.0, k_w=150000.0, d_c=1000.0, n_d=0.5, z_road=0.1,
                                      micro_steps=10),
    "QuarterCarChassisSuspension": dict(m_c=400.0, k_c=15000.0, d_c=1000.0, n_d=0.5, micro_steps=10),
    "QuarterCarWheel": dict(m_w=40.0, k_w=150000.0, z_road=0.1, micro_steps=10),
    # B2, arnold2013 Example 1; RK4 micro step bound.
    "B2ChassisDD": dict(m_c=400.0, k_c=15000.0, d_c=1000.0, h_max=1e-5, x_c0=0.0, v_c0=0.0),
    "B2WheelDD": dict(m_w=40.0, k_c=15000.0, d_c=1000.0, k_w=150000.0, d_w=0.0, z_road=0.1, h_max=1e-5,
                      x_w0=0.0, v_w0=0.0),
    "B2WheelFD": dict(m_w=40.0, k_c=15000.0, d_c=1000.0, k_w=150000.0, d_w=0.0, z_road=0.1, h_max=1e-5,
                      x_w0=0.0, v_w0=0.0),
    # B4 (the parameter set of docs/benchmarks.md), B3 (hafner scenario 1), B5.
    "TwoMassS1": dict(m1=1.0, c1=1e3, d1=1.0, x1_0=0.1, v1_0=0.0, h_max=1e-5),
    "TwoMassS2": dict(m2=1.0, c2=1e5, d2=10.0, ck=1e5, dk=10.0, x2_0=0.0, v2_0=0.0, h_max=1e-5),
    "ThreeMassS1": dict(m1=10.0, c1=1e-2, d1=0.1, x1_0=1.0, v1_0=0.0, h=0.005),
    "ThreeMassS2": dict(m2=10.0, c12=0.1, d12=0.4, x2_0=2.0, v2_0=0.0, h=0.0025),
    "ThreeMassS3": dict(m3=10.0, c23=1.0, d23=1.0, c3=10.0, d3=2.0, x3_0=3.0, v3_0=0.0, h=0.00125),
    "Spring": dict(k=1.0, x0=1.0, micro_steps=10),
    "SpringDamper": dict(k=1.0, d=0.1, x0=1.0, micro_steps=10),
    "ThermostatRoom": dict(T_amb=10.0, tau=60.0, P_unit=12.0, T0=15.0),
    "ThermostatController": dict(T_low=19.0, T_high=21.0, T_boost=16.0, on_start=True),
    "Wide": dict(tau=0.1, x0=0.0),
    "Terminating": dict(t_end=0.5),
    "Faulty": dict(x0=0.0, fail_at=-1.0, fail_mode=1),
    "Greeting": dict(prefix="Hello", name="world"),
    "StructuralGain": dict(k=1.0, n=1),
    "Ticker": dict(period=0.35),
    "Ballistic": dict(g=9.81, e=0.7, h0=1.0),
    "SampleHold": dict(),
    "StateSpace": dict(A=np.eye(3).ravel().tolist(), B=np.eye(3).ravel().tolist(), C=np.eye(3).ravel().tolist(),
                       D=np.eye(3).ravel().tolist(), x0=[0.0, 0.0, 0.0], u=[1.0, 2.0, 3.0]),
    # Inputs (held at their start values) and the largest value of each type.
    "TypeMirror": dict(u_f32=0.5, u_i8=-3, u_u8=200, u_i16=-300, u_u16=60000, u_u32=4000000000,
                       u_i64=-5000000000, u_u64=9000000000000),
}
TYPE_MAX = {"i8": 127, "u8": 255, "i16": 32767, "u16": 65535, "u32": 4294967295, "i64": 2.0 ** 63 - 1024,
            "u64": 2.0 ** 64 - 2048}
FMI3_ONLY = {"StructuralGain", "StateSpace", "TypeMirror"}


# The FMUs' integration schemes (fmus/models/src/solvers.rs), on lists.
def micro_step_count(h, h_micro):
    """Micro steps of at most h_micro covering h, without a sliver step when
    h is a multiple of h_micro up to rounding (0.1 / 0.005: 20)."""
    ratio = h / h_micro
    return max(1, math.ceil(ratio - 1e-9 * max(ratio, 1.0)))


def euler_n(f, t, h, n, x):
    """Forward Euler, n equal micro steps over [t, t + h]."""
    dt = h / n
    for i in range(n):
        x = [xi + dt * di for xi, di in zip(x, f(t + i * dt, x))]
    return x


def euler_fixed(f, t, h, h_micro, x):
    """Forward Euler with micro step h_micro, the last one shortened to end at t + h."""
    n = micro_step_count(h, h_micro)
    for i in range(n):
        s = t + i * h_micro
        dt = h_micro if i + 1 < n else (t + h) - s
        x = [xi + dt * di for xi, di in zip(x, f(s, x))]
    return x


def rk4(f, t, h, h_max, x):
    """Classical Runge-Kutta 4, equal micro steps of at most h_max."""
    n = micro_step_count(h, h_max)
    dt = h / n
    for i in range(n):
        s = t + i * dt
        k1 = f(s, x)
        k2 = f(s + dt / 2, [xi + dt / 2 * k for xi, k in zip(x, k1)])
        k3 = f(s + dt / 2, [xi + dt / 2 * k for xi, k in zip(x, k2)])
        k4 = f(s + dt, [xi + dt * k for xi, k in zip(x, k3)])
        x = [xi + dt / 6 * (a + 2 * b + 2 * c + d) for xi, a, b, c, d in zip(x, k1, k2, k3, k4)]
    return x


class Applied:
    """A case's inputs as FMPy applies them: {name: constant} or {name:
    [(t, value), ...]}; value(name, s) is the value set at s (linear between
    the points for a Real input, the right value at a jump; held for Integer
    and Boolean ones), held by the FMU over the step from s (FMPy sets no
    input derivatives here and gives FMI 3 FMUs no intermediate update)."""

    def __init__(self, inputs):
        self.inputs = inputs

    def value(self, name, s):
        u = self.inputs[name]
        if not isinstance(u, list):
            return u
        j = max(i for i, (ti, _) in enumerate(u) if ti <= s or math.isclose(ti, s))
        if j + 1 == len(u) or isinstance(u[j][1], (bool, int)):
            return u[j][1]
        (t0, v0), (t1, v1) = u[j], u[j + 1]
        w0 = (t1 - s) / (t1 - t0)
        return w0 * v0 + (1 - w0) * v1


def signals(inputs, t_end):
    """FMPy's input table of a case's inputs (the tables of one case share their times)."""
    tables = [u for u in inputs.values() if isinstance(u, list)]
    times = [ti for ti, _ in tables[0]] if tables else [0.0, t_end]
    cols = {name: [v for _, v in u] if isinstance(u, list) else [u] * len(times) for name, u in inputs.items()}
    kind = {bool: np.bool_, int: np.int32, float: np.float64}
    dtype = [("time", np.float64)] + [(name, kind[type(col[0])]) for name, col in cols.items()]
    return np.array(list(zip(times, *cols.values())), dtype=dtype)


def stepped(t, x, step, out):
    """The rows of a co-simulation run at the communication points t: out(s,
    x) the outputs of the state x with the inputs set at s, step(s, h, x) the
    state after the step from s to s + h."""
    rows = [out(t[0], x)]
    for i in range(len(t) - 1):
        x = step(t[i], t[i + 1] - t[i], x)
        rows.append(out(t[i], x))
    return {name: np.array([row[name] for row in rows]) for name in rows[0]}


# B1 (quarter_car.rs): F_c = k_c (z_c - z_w) + d_c g(v_c - v_w), g(v) =
# sign(v) |v|^(2 / (1 + 2 n_d)); F_w = k_w (z_w - z_road); m_c v_c' = -F_c,
# m_w v_w' = -F_w + F_c; forward Euler, micro_steps per step.
def damper(v, n_d):
    return math.copysign(abs(v) ** (2.0 / (1.0 + 2.0 * n_d)), v)


def suspension(p, z_c, z_w, v_c, v_w):
    return p["k_c"] * (z_c - z_w) + p["d_c"] * damper(v_c - v_w, p["n_d"])


def ref_quarter_car_wheel_suspension(p, t, u):
    # States z_c (from the input v_c), z_w, v_w.
    def step(s, h, x):
        v_c = u.value("v_c", s)

        def f(r, x):
            z_c, z_w, v_w = x
            f_w = p["k_w"] * (z_w - p["z_road"])
            return [v_c, v_w, (-f_w + suspension(p, z_c, z_w, v_c, v_w)) / p["m_w"]]
        return euler_n(f, s, h, p["micro_steps"], x)

    def out(s, x):
        z_c, z_w, v_w = x
        return {"F_c": suspension(p, z_c, z_w, u.value("v_c", s), v_w), "F_w": p["k_w"] * (z_w - p["z_road"]),
                "z_c": z_c, "z_w": z_w, "v_w": v_w}
    return stepped(t, [0.0, 0.0, 0.0], step, out)


def ref_quarter_car_chassis_suspension(p, t, u):
    # States z_c, v_c, z_w (from the input v_w).
    def step(s, h, x):
        v_w = u.value("v_w", s)

        def f(r, x):
            z_c, v_c, z_w = x
            return [v_c, -suspension(p, z_c, z_w, v_c, v_w) / p["m_c"], v_w]
        return euler_n(f, s, h, p["micro_steps"], x)

    def out(s, x):
        z_c, v_c, z_w = x
        return {"F_c": suspension(p, z_c, z_w, v_c, u.value("v_w", s)), "z_c": z_c, "v_c": v_c, "z_w": z_w}
    return stepped(t, [0.0, 0.0, 0.0], step, out)


def ref_quarter_car_wheel(p, t, u):
    # States z_w, v_w; input F = +F_c.
    def step(s, h, x):
        force = u.value("F", s)
        return euler_n(lambda r, x: [x[1], (-p["k_w"] * (x[0] - p["z_road"]) + force) / p["m_w"]],
                       s, h, p["micro_steps"], x)
    return stepped(t, [0.0, 0.0], step,
                   lambda s, x: {"v_w": x[1], "z_w": x[0], "F_w": p["k_w"] * (x[0] - p["z_road"])})


# B2 (b2.rs): m_c x_c'' = F_susp, m_w x_w'' = F_tire - F_susp, F_susp =
# k_c (x_w - x_c) + d_c (v_w - v_c), F_tire = k_w (z_road - x_w) - d_w v_w;
# RK4, micro steps of at most h_max.
def b2_susp(p, x_w, v_w, x_c, v_c):
    return p["k_c"] * (x_w - x_c) + p["d_c"] * (v_w - v_c)


def ref_b2_chassis_dd(p, t, u):
    def step(s, h, x):
        x_w, v_w = u.value("x_w", s), u.value("v_w", s)
        return rk4(lambda r, x: [x[1], b2_susp(p, x_w, v_w, x[0], x[1]) / p["m_c"]], s, h, p["h_max"], x)
    return stepped(t, [p["x_c0"], p["v_c0"]], step, lambda s, x: {"x_c": x[0], "v_c": x[1]})


def ref_b2_wheel(p, t, u):
    def step(s, h, x):
        x_c, v_c = u.value("x_c", s), u.value("v_c", s)

        def f(r, x):
            f_tire = p["k_w"] * (p["z_road"] - x[0]) - p["d_w"] * x[1]
            return [x[1], (f_tire - b2_susp(p, x[0], x[1], x_c, v_c)) / p["m_w"]]
        return rk4(f, s, h, p["h_max"], x)

    def out(s, x):
        return {"x_w": x[0], "v_w": x[1], "F_susp": b2_susp(p, x[0], x[1], u.value("x_c", s), u.value("v_c", s))}
    return stepped(t, [p["x_w0"], p["v_w0"]], step, out)


def ref_b2_wheel_dd(p, t, u):
    r = ref_b2_wheel(p, t, u)
    del r["F_susp"]  # an output of B2WheelFD only
    return r


# B4 (two_mass.rs): m1 v1' = -c1 x1 - d1 v1 + f2; m2 v2' = -c2 x2 - d2 v2 -
# f2, f2 = ck (x2 - x1) + dk (v2 - v1); RK4, micro steps of at most h_max.
def ref_two_mass_s1(p, t, u):
    def step(s, h, x):
        f2 = u.value("f2", s)
        return rk4(lambda r, x: [x[1], (-p["c1"] * x[0] - p["d1"] * x[1] + f2) / p["m1"]], s, h, p["h_max"], x)
    return stepped(t, [p["x1_0"], p["v1_0"]], step, lambda s, x: {"x1": x[0], "v1": x[1]})


def ref_two_mass_s2(p, t, u):
    def f2(x2, v2, x1, v1):
        return p["ck"] * (x2 - x1) + p["dk"] * (v2 - v1)

    def step(s, h, x):
        x1, v1 = u.value("x1", s), u.value("v1", s)
        return rk4(lambda r, x: [x[1], (-p["c2"] * x[0] - p["d2"] * x[1] - f2(x[0], x[1], x1, v1)) / p["m2"]],
                   s, h, p["h_max"], x)
    return stepped(t, [p["x2_0"], p["v2_0"]], step,
                   lambda s, x: {"f2": f2(x[0], x[1], u.value("x1", s), u.value("v1", s)), "x2": x[0], "v2": x[1]})


# B3 (three_mass.rs): m1 v1' = -c1 x1 - d1 v1 + l12; m2 v2' = -l12 + l23,
# l12 = c12 (x2 - x1) + d12 (v2 - v1); m3 v3' = -l23 - c3 x3 - d3 v3, l23 =
# c23 (x3 - x2) + d23 (v3 - v2); forward Euler, micro step h (the last one
# of a step shortened).
def ref_three_mass_s1(p, t, u):
    def step(s, h, x):
        l12 = u.value("l12", s)
        return euler_fixed(lambda r, x: [x[1], (-p["c1"] * x[0] - p["d1"] * x[1] + l12) / p["m1"]], s, h, p["h"], x)
    return stepped(t, [p["x1_0"], p["v1_0"]], step, lambda s, x: {"x1": x[0], "v1": x[1]})


def ref_three_mass_s2(p, t, u):
    def l12(x2, v2, x1, v1):
        return p["c12"] * (x2 - x1) + p["d12"] * (v2 - v1)

    def step(s, h, x):
        x1, v1, l23 = u.value("x1", s), u.value("v1", s), u.value("l23", s)
        return euler_fixed(lambda r, x: [x[1], (-l12(x[0], x[1], x1, v1) + l23) / p["m2"]], s, h, p["h"], x)
    return stepped(t, [p["x2_0"], p["v2_0"]], step,
                   lambda s, x: {"x2": x[0], "v2": x[1], "l12": l12(x[0], x[1], u.value("x1", s), u.value("v1", s))})


def ref_three_mass_s3(p, t, u):
    def l23(x3, v3, x2, v2):
        return p["c23"] * (x3 - x2) + p["d23"] * (v3 - v2)

    def step(s, h, x):
        x2, v2 = u.value("x2", s), u.value("v2", s)
        return euler_fixed(lambda r, x: [x[1], (-l23(x[0], x[1], x2, v2) - p["c3"] * x[0] - p["d3"] * x[1])
                                         / p["m3"]], s, h, p["h"], x)
    return stepped(t, [p["x3_0"], p["v3_0"]], step,
                   lambda s, x: {"x3": x[0], "v3": x[1], "l23": l23(x[0], x[1], u.value("x2", s), u.value("v2", s))})


# B5 (oscillator.rs): x' = v by forward Euler with micro_steps per step, F =
# -k x (Spring), F = -k x - d v (SpringDamper, feed-through of the value
# set). Exact for a held v whatever micro_steps: the micro steps would
# show only under an input that changes within a step, which FMPy 0.3.32
# cannot give (set_input_derivatives copies the slopes into a buffer of 9
# and fails for any other number of inputs; it passes FMI 3 FMUs no
# intermediate update callback).
def ref_spring(p, t, u):
    def step(s, h, x):
        v = u.value("v", s)
        return euler_n(lambda r, x: [v], s, h, p["micro_steps"], x)

    def out(s, x):
        return {"F": -p["k"] * x[0] - p.get("d", 0.0) * u.value("v", s), "x": x[0]}
    return stepped(t, [p["x0"]], step, out)


# ThermostatRoom: T' = (T_amb + q - T) / tau, q = heater_on ? level P_unit :
# 0, exact over each step with the inputs held.
def ref_thermostat_room(p, t, u):
    def step(s, h, x):
        te = p["T_amb"] + (u.value("level", s) * p["P_unit"] if u.value("heater_on", s) else 0.0)
        return [te + (x[0] - te) * math.exp(-h / p["tau"])]
    return stepped(t, [p["T0"]], step, lambda s, x: {"T": x[0]})


# ThermostatController: at the end of each step, with the input T of its
# start: off above T_high, on below T_low (switches counts the changes),
# level = 2 below T_boost, else 1; before the first step on = on_start,
# level from T at initialization.
def ref_thermostat_controller(p, t, u):
    def level(temp):
        return 2 if temp < p["T_boost"] else 1

    def step(s, h, x):
        on, switches, _ = x
        temp = u.value("T", s)
        if on and temp > p["T_high"]:
            on, switches = False, switches + 1
        if not on and temp < p["T_low"]:
            on, switches = True, switches + 1
        return [on, switches, level(temp)]
    return stepped(t, [p["on_start"], 0, level(u.value("T", t[0]))], step,
                   lambda s, x: {"heater_on": x[0], "switches": x[1], "level": x[2]})


# Wide: y_i' = (u_i - y_i) / tau, y_i(0) = x0, exact: for a constant u_i,
# y_i = u_i + (x0 - u_i) exp(-t / tau).
WIDE_U = {f"u{i}": 0.01 * (i - 100.5) for i in range(1, 201)}


def ref_wide(p, t, u):
    return {f"y{i}": u.value(f"u{i}", 0.0) + (p["x0"] - u.value(f"u{i}", 0.0)) * np.exp(-t / p["tau"])
            for i in range(1, 201)}


# Terminating: y' = u, y(0) = 0, exact; the run ends at t_end (the step
# across it cut short there).
def ref_terminating(p, t, u):
    time = np.append(t[t < p["t_end"] - 1e-9], p["t_end"])
    return {"time": time, "y": u.value("u", 0.0) * time}


# Faulty: x' = u, exact, x(0) = x0; fail_mode 3: x is NaN from fail_at on.
def ref_faulty(p, t, u):
    x = p["x0"] + u.value("u", 0.0) * t
    if p["fail_mode"] == 3 and p["fail_at"] >= 0:
        x = np.where(t >= p["fail_at"], np.nan, x)
    return {"x": x}


# Greeting: message = prefix + ", " + name; length its characters (Unicode
# scalar values), checksum the sum of (position from 1) * (code point).
def ref_greeting(p, t, u):
    message = f"{p['prefix']}, {p['name']}"
    checksum = sum(i * ord(c) for i, c in enumerate(message, 1))
    return {"length": np.full(len(t), len(message)), "checksum": np.full(len(t), float(checksum))}


# StructuralGain: y = k n u (n a structural parameter, settable in
# Configuration Mode only, which FMPy does not enter: its start value 1).
def ref_structural_gain(p, t, u):
    return {"y": np.full(len(t), p["k"] * p["n"] * u.value("u", 0.0))}


def linear_exact(a, b, x0, t):
    """Rows x(t) of x' = A x + b, x(0) = x0, for A invertible and
    diagonalisable: V exp(L t) V^-1 (x0 - xs) + xs, xs = -A^-1 b the
    equilibrium (by eigendecomposition, not the FMUs' Taylor series)."""
    a = np.asarray(a, dtype=np.float64)
    xs = -np.linalg.solve(a, np.asarray(b, dtype=np.float64))
    lam, v = np.linalg.eig(a)
    w = np.linalg.solve(v, np.asarray(x0, dtype=np.float64) - xs)
    return np.real((v[None, :, :] * np.exp(np.outer(t, lam))[:, None, :]) @ w) + xs


# StateSpace: x' = A x + B u, x(0) = x0, y = C x + D u (3 x 3 arrays, u held
# at its start value), exact.
# The FMI 3 event-mode models (docs/events.md), run as FMPy runs them by
# default (no event mode): each handles its events inside its steps.
# Ticker (ticker.rs): count = floor(t / period) (a tick within 1e-9 of t
# counts), last = count period.
def ref_ticker(p, t, u):
    count = np.floor(t / p["period"] + 1e-9)
    return {"count": count, "last": count * p["period"]}


# Ballistic (ballistic.rs): dropped from h0, h'' = -g, the rebound speed e
# times the impact speed, at rest once below 1e-6 m/s; in closed form
# between the bounces t_1 = sqrt(2 h0 / g), t_(k+1) = t_k + 2 v_k / g.
def ref_ballistic(p, t, u):
    g, e, h0 = p["g"], p["e"], p["h0"]
    bounces, tb, speed = [], math.sqrt(2 * h0 / g), math.sqrt(2 * g * h0)
    while len(bounces) < 1000:
        speed *= e
        if speed < 1e-6:
            bounces.append((tb, 0.0))
            break
        bounces.append((tb, speed))
        tb += 2 * speed / g
    h, v, n = [], [], []
    for s in t:
        k = sum(1 for b, _ in bounces if b <= s + 1e-9 * max(abs(s), 1.0))
        if k == 0:
            h.append(h0 - 0.5 * g * s * s)
            v.append(-g * s)
        else:
            b, up = bounces[k - 1]
            d = s - b
            h.append(up * d - 0.5 * g * d * d if up else 0.0)
            v.append(up - g * d if up else 0.0)
        n.append(k)
    return {"h": np.array(h), "v": np.array(v), "bounces": np.array(n, dtype=np.float64)}


# SampleHold (sample_hold.rs): without event mode y after the step from
# t_i is the u set at t_i (y(0) = u(0)).
def ref_sample_hold(p, t, u):
    return {"y": np.array([u.value("u", t[max(i - 1, 0)]) for i in range(len(t))])}


def ref_state_space(p, t, u):
    a, b, c, d = (np.reshape(p[k], (3, 3)) for k in "ABCD")
    uu = np.array(p["u"])
    x = linear_exact(a, b @ uu, p["x0"], t)
    return {"x": x, "y": x @ c.T + d @ uu}


# TypeMirror: at the end of each step, from the inputs: y_T = u_T + 1
# saturated at the type's largest value (y_f32 rounded to Float32), sum =
# the sum of the inputs, x_f32(t + h) = f32(x_f32(t) + u_f32 h), x_f32(0) = 0.
def ref_type_mirror(p, t, u):
    u_f32 = float(np.float32(p["u_f32"]))
    ins = {k[2:]: (u_f32 if k == "u_f32" else p[k]) for k in p}
    out = {f"y_{k}": min(v + 1, TYPE_MAX[k]) for k, v in ins.items() if k != "f32"}
    out["y_f32"] = float(np.float32(u_f32 + 1))
    out["sum"] = float(sum(float(v) for v in ins.values()))
    x = [0.0]
    for i in range(len(t) - 1):
        x.append(float(np.float32(x[-1] + u_f32 * (t[i + 1] - t[i]))))
    rows = {k: np.full(len(t), float(v)) for k, v in out.items()}
    rows["x_f32"] = np.array(x)
    return rows


# Cases: model, start values (beside PARAMS), inputs ({name: constant} or
# {name: [(t, value), ...]}; float for a Real input, bool or int for a
# Boolean or Integer one), t_end, dt, reference(p, t, u) -> {variable:
# values at t} ("time": the rows' times when not t), band (relative to the
# largest |reference| of each variable), FMPy options by FMI version.
# Inputs and start values are chosen so that every term acts (spring,
# damper, coupling, road, initial values); where the FMU integrates with a
# scheme the steps are coarse enough that the scheme's error (against the
# exact solution) is far above the band: a wrong scheme, micro step count or
# 5 % in any parameter fails.
def case(model, start, inputs, t_end, dt, reference, band, options=None):
    return (model, start, inputs, t_end, dt, reference, band, options or {})


SCHEME = 1e-10  # the FMU's scheme reimplemented: rounding only
EXACT = 1e-12   # exact solutions

VALUES = [
    case("QuarterCarWheelSuspension", {}, {"v_c": 0.4}, 0.2, 1e-3, ref_quarter_car_wheel_suspension, SCHEME),
    case("QuarterCarWheelSuspension", {"n_d": 1.0, "micro_steps": 4}, {"v_c": -0.3}, 0.2, 1e-3,
         ref_quarter_car_wheel_suspension, SCHEME),
    case("QuarterCarChassisSuspension", {}, {"v_w": -0.3}, 0.5, 1e-3, ref_quarter_car_chassis_suspension, SCHEME),
    case("QuarterCarChassisSuspension", {"n_d": 1.5, "micro_steps": 3}, {"v_w": 0.2}, 0.5, 1e-3,
         ref_quarter_car_chassis_suspension, SCHEME),
    case("QuarterCarWheel", {}, {"F": 2000.0}, 0.2, 1e-3, ref_quarter_car_wheel, SCHEME),
    case("B2ChassisDD", {"x_c0": 0.02, "v_c0": -0.1, "h_max": 0.007}, {"x_w": 0.12, "v_w": 0.3}, 1.0, 0.01,
         ref_b2_chassis_dd, SCHEME),
    case("B2WheelDD", {"d_w": 50.0, "x_w0": 0.03, "v_w0": 0.1, "h_max": 6e-4}, {"x_c": 0.05, "v_c": 0.2}, 0.1, 1e-3,
         ref_b2_wheel_dd, SCHEME),
    case("B2WheelFD", {"d_w": 50.0, "x_w0": 0.03, "v_w0": 0.1, "h_max": 6e-4}, {"x_c": 0.05, "v_c": 0.2}, 0.1, 1e-3,
         ref_b2_wheel, SCHEME),
    case("TwoMassS1", {"v1_0": 0.5, "h_max": 1e-3}, {"f2": 30.0}, 0.2, 2e-3, ref_two_mass_s1, SCHEME),
    case("TwoMassS2", {"x2_0": 0.02, "v2_0": 1.0, "h_max": 4e-4}, {"x1": 0.1, "v1": -0.5}, 0.05, 1e-3,
         ref_two_mass_s2, SCHEME),
    # h = 0.003 does not divide 0.1: 34 micro steps, the last one 0.001.
    case("ThreeMassS1", {"v1_0": 0.2, "h": 0.003}, {"l12": 0.05}, 5.0, 0.1, ref_three_mass_s1, SCHEME),
    case("ThreeMassS2", {"v2_0": -0.1}, {"x1": 0.5, "v1": 0.1, "l23": -0.2}, 5.0, 0.1, ref_three_mass_s2, SCHEME),
    case("ThreeMassS3", {"v3_0": 0.3}, {"x2": 1.5, "v2": -0.2}, 5.0, 0.1, ref_three_mass_s3, SCHEME),
    case("Spring", {"x0": 0.8}, {"v": -0.5}, 1.0, 0.01, ref_spring, EXACT),
    case("SpringDamper", {"k": 2.0}, {"v": 0.3}, 1.0, 0.01, ref_spring, EXACT),
    case("ThermostatRoom", {},
         {"heater_on": [(0.0, True), (100.0, True), (100.0, True), (200.0, True), (200.0, False), (300.0, False)],
          "level": [(0.0, 2), (100.0, 2), (100.0, 1), (200.0, 1), (200.0, 1), (300.0, 1)]},
         300.0, 1.0, ref_thermostat_room, EXACT),
    # T never at a threshold at a communication point (no tie to break).
    case("ThermostatController", {}, {"T": [(0.0, 14.95), (100.0, 24.95), (200.0, 14.95)]}, 200.0, 1.0,
         ref_thermostat_controller, 0.0),
    case("Wide", {"x0": 0.5}, WIDE_U, 0.5, 0.01, ref_wide, EXACT),
    case("Terminating", {"t_end": 0.305}, {"u": 2.0}, 1.0, 0.01, ref_terminating, EXACT,
         {"fmi3": {"early_return_allowed": True}}),
    case("Faulty", {"x0": 1.5}, {"u": -2.0}, 0.5, 0.01, ref_faulty, EXACT),
    case("Faulty", {"x0": 1.5, "fail_at": 0.305, "fail_mode": 3}, {"u": -2.0}, 0.5, 0.01, ref_faulty, EXACT),
    case("Greeting", {}, {}, 0.1, 0.01, ref_greeting, 0.0),  # "Hello, world": 12, 7552
    case("Greeting", {"prefix": "Grüß dich", "name": "Zoë"}, {}, 0.1, 0.01, ref_greeting, 0.0),
    case("StructuralGain", {"k": 2.5}, {"u": 1.5}, 0.1, 0.01, ref_structural_gain, EXACT),
    case("StateSpace", {"A": [0.0, 1.0, 0.0, -4.0, -0.4, 0.0, 0.5, 0.0, -1.0],
                        "B": [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.5, 2.0],
                        "C": [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
                        "D": [0.5, 0.0, 0.0, 0.0, 0.25, 0.0, 0.0, 0.0, -0.5],
                        "x0": [1.0, 0.0, 2.0], "u": [0.5, -1.0, 2.0]}, {}, 2.0, 0.01, ref_state_space, EXACT),
    case("Ticker", {}, {}, 1.5, 0.1, ref_ticker, 0.0),
    case("Ticker", {"period": 0.25}, {}, 1.0, 0.1, ref_ticker, 0.0),
    case("Ballistic", {}, {}, 1.5, 0.1, ref_ballistic, EXACT),
    case("Ballistic", {"e": 0.5, "h0": 0.5}, {}, 2.0, 0.05, ref_ballistic, EXACT),
    case("SampleHold", {}, {"u": [(0.0, 0.0), (1.0, 1.0)]}, 1.0, 0.1, ref_sample_hold, 0.0),
    case("TypeMirror", {"u_f32": 0.3, "u_i8": 127, "u_u16": 65535, "u_i64": -(2 ** 40)}, {}, 0.1, 0.01,
         ref_type_mirror, 0.0),
]

_REFERENCES = {}


def reference_of(c):
    """A case's communication points and reference rows (computed once)."""
    if id(c) not in _REFERENCES:
        model, start, inputs, t_end, dt, reference, band, options = c
        t = np.arange(int(round(t_end / dt)) + 1) * dt  # FMPy's communication points
        _REFERENCES[id(c)] = (t, reference(dict(PARAMS[model], **start), t, Applied(inputs)))
    return _REFERENCES[id(c)]


def run_case(c, path, kind):
    """FMPy's run of case `c` with the FMU `path` (FMI version `kind`), its
    reference rows and their times."""
    model, start, inputs, t_end, dt, reference, band, options = c
    t, ref = reference_of(c)
    r = simulate(path, stop_time=t_end, output_interval=dt, start_values=start,
                 input=signals(inputs, t_end) if inputs else None, output=[k for k in ref if k != "time"],
                 **options.get(kind, {}))
    if options.get(kind, {}).get("fmi_type") == "ModelExchange":
        r = last_per_time(r)  # without the rows before input events
    return r, ref, ref.get("time", t)


def value_errors(r, ref, time, band, against="reference"):
    """{"variable - reference": (error, allowed)} of a run against its
    reference: the largest |difference| and band * the largest |reference|
    (NaN where the reference is NaN and nowhere else; the rows' times to
    1e-12)."""
    if len(r) != len(time):
        return {f"number of rows - {against}'s": (abs(len(r) - len(time)), 0)}
    errors = {f"time - {against}": (np.max(np.abs(r["time"] - time)), 1e-12 * max(1.0, abs(time[-1])))}
    for name, y in ref.items():
        if name == "time":
            continue
        got = np.asarray(r[name], dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        nan = np.isnan(y)
        if np.any(np.isnan(got) != nan):
            errors[f"{name} - {against} (where NaN)"] = (math.inf, 0.0)
            continue
        err = np.max(np.abs(got - y)[~nan], initial=0.0)
        errors[f"{name} - {against}"] = (err, band * np.max(np.abs(y[~nan]), initial=0.0))
    return errors


def over_band(where, errors):
    return [f"{where}: max |{label}| = {err:.3e} > {allowed:.1e}" for label, (err, allowed) in errors.items()
            if not err <= allowed]


def test_every_model_matches_its_reference_in_fmpy():
    failures = []
    for c in VALUES:
        model, band = c[0], c[6]
        for kind in ("fmi3",) if model in FMI3_ONLY else ("fmi2", "fmi3"):
            r, ref, time = run_case(c, os.path.join(DIST, kind, model + ".fmu"), kind)
            failures += over_band(f"{kind}/{model}", value_errors(r, ref, time, band))
    assert not failures, "\n".join(failures)


def test_variants_give_their_base_models_values_in_fmpy():
    # fmus/dist/variants (FMI 2) and fmi3/*-fmi3-* switch capabilities off;
    # under the same case each gives its base model's values: its reference
    # (VALUES, else ANALYTIC) and the base FMU's run to 1e-12.
    variants = fmus("variants") + [p for p in fmus("fmi3") if "-fmi3-" in model_name(p)]
    failures = []
    for path in variants:
        name = model_name(path)
        base = name.split("-")[0]
        kind = "fmi3" if "-fmi3-" in name else "fmi2"
        base_path = os.path.join(DIST, kind, base + ".fmu")
        c = next((c for c in VALUES if c[0] == base), None)
        if c is not None:
            (r, ref, time), (rb, _, _) = run_case(c, path, kind), run_case(c, base_path, kind)
            errors = value_errors(r, ref, time, c[6])
        else:
            a = next((a for a in ANALYTIC if a[0] == base), None)
            assert a is not None, f"{kind}/{name}: no case for {base} in VALUES or ANALYTIC"
            _, start, (inp, value), t_end, dt, out, exact, tol = a
            r, rb = (simulate(p, stop_time=t_end, output_interval=dt, start_values=start,
                              input=const_input(inp, value, t_end), output=[out]) for p in (path, base_path))
            errors = {f"{out} - exact": (np.max(np.abs(r[out] - exact(r["time"]))), tol)}
        base_rows = {col: rb[col] for col in rb.dtype.names if col != "time"}
        errors.update(value_errors(r, base_rows, rb["time"], 1e-12, against=base))
        failures += over_band(f"{kind}/{name}", errors)
    assert not failures, "\n".join(failures)


def test_every_co_simulation_model_has_a_value_check():
    checked = {c[0] for c in VALUES} | {a[0] for a in ANALYTIC} | set(NOT_RUN_BY_FMPY)
    models = {model_name(p) for p in fmus("fmi2") + fmus("fmi3") if "-fmi3-" not in model_name(p)}
    assert models == checked, (f"without a value check: {sorted(models - checked)}; "
                               f"checked but not built: {sorted(checked - models)}")


def test_fmpy_cannot_run_the_models_it_does_not_run():
    # NOT_RUN_BY_FMPY stays honest: FMPy fails on each, with and without
    # event mode (an FMPy that runs one should get a value check instead).
    for name in NOT_RUN_BY_FMPY:
        path = os.path.join(DIST, "fmi3", name + ".fmu")
        for options in ({}, {"use_event_mode": True}):
            try:
                simulate(path, stop_time=0.5, output_interval=0.1, **options)
            except Exception:
                continue
            raise AssertionError(f"FMPy ran {name} with {options}: give it a value check in VALUES")


def test_partitions_in_fmpy_scheduled_execution():
    # Partitions through FMPy's FMU3ScheduledExecution (fmi3InstantiateScheduledExecution,
    # fmi3ActivateModelPartition), as an importer that follows the priorities
    # (fast: 1, slow: 2) and then one that does not: pair = 10 * previous id + id
    # (fast 1, slow 2), fast_n / slow_n count, y = gain * slow_n with gain set
    # before each slow activation (fmus/models/src/partitions.rs).
    from fmpy import extract, read_model_description
    import shutil

    from fmpy.fmi3 import FMU3ScheduledExecution

    path = os.path.join(DIST, "fmi3", "Partitions.fmu")
    md = read_model_description(path)
    assert md.coSimulation is None and md.modelExchange is None
    assert md.scheduledExecution.modelIdentifier == "Partitions"
    vr = {v.name: v.valueReference for v in md.modelVariables}
    # The Clocks' priorities (FMPy 0.3 does not read the attribute).
    import xml.etree.ElementTree as ET
    import zipfile

    with zipfile.ZipFile(path) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
    priorities = {c.get("name"): c.get("priority") for c in root.iter("Clock")}
    assert priorities == {"fast": "1", "slow": "2"}, priorities
    d = extract(path)
    try:
        for order in ("priority", "reversed"):
            fmu = FMU3ScheduledExecution(guid=md.guid, unzipDirectory=d,
                                         modelIdentifier="Partitions", instanceName=order)
            fmu.instantiate()
            fmu.enterInitializationMode(startTime=0.0)
            fmu.exitInitializationMode()
            pairs, gains = [], []
            for k in range(6):
                t = k / 10
                ticks = ["fast", "slow"] if k % 2 == 0 else ["fast"]
                if order == "reversed":
                    ticks.reverse()
                for clock in ticks:
                    if clock == "slow":
                        gains.append(0.5 + k)
                        fmu.setFloat64([vr["gain"]], [gains[-1]])
                    fmu.activateModelPartition(vr[clock], t)
                    pairs.append(fmu.getInt32([vr["pair"]])[0])
            fast_n, slow_n = fmu.getInt32([vr["fast_n"], vr["slow_n"]])
            y = fmu.getFloat64([vr["y"]])[0]
            assert (fast_n, slow_n) == (6, 3), order
            assert y == gains[-1] * 3, (order, y)
            if order == "priority":
                assert pairs == [1, 12, 21, 11, 12, 21, 11, 12, 21], pairs
            else:
                assert pairs == [2, 21, 11, 12, 21, 11, 12, 21, 11], pairs
            fmu.terminate()
            fmu.freeInstance()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_cgain_output_is_k_times_u_in_fmpy():
    # u a ramp from -1 to 2, k = 2.5: y = k u at every communication point
    # (direct feed-through). FMPy sets the input at the start of each step
    # and records after it, so the row of t_i holds u(t_(i-1)) (u(0) at 0).
    t_end = 1.0
    ramp = np.array([(0.0, -1.0), (t_end, 2.0)], dtype=[("time", np.float64), ("u", np.float64)])
    for var in CGAIN_FMUS:
        r = simulate(cargo_fmu(var), stop_time=t_end, output_interval=0.01, start_values={"k": 2.5},
                     input=ramp, output=["u", "y"])
        assert len(r) == 101 and r["time"][-1] == t_end, (var, r["time"])
        u = -1.0 + 3.0 * np.concatenate(([0.0], r["time"][:-1]))
        err_u = np.max(np.abs(r["u"] - u))
        err_y = np.max(np.abs(r["y"] - 2.5 * u))
        assert err_u <= 1e-12 and err_y <= 1e-12, f"{var}: max |u - exact| = {err_u:.3e}, |y - k u| = {err_y:.3e}"


# What CGain's FMI 3.0 binary implements; every other function of the API is
# exported too and returns fmi3Error with a log message naming it (NULL for
# the other interfaces' instantiation functions, logged through the callback
# they are given).
CGAIN3_IMPLEMENTS = {
    "fmi3GetVersion", "fmi3SetDebugLogging", "fmi3InstantiateCoSimulation", "fmi3FreeInstance",
    "fmi3EnterInitializationMode", "fmi3ExitInitializationMode", "fmi3Terminate", "fmi3Reset",
    "fmi3GetFloat64", "fmi3SetFloat64", "fmi3DoStep",
}


def test_cgain_fmi3_refuses_what_it_does_not_implement_with_a_message():
    import ctypes
    import shutil
    from fmpy import extract, read_model_description
    from fmpy.fmi3 import FMU3Slave, fmi3LogMessageCallback

    path = cargo_fmu("COSIM_CGAIN_FMI3")
    md = read_model_description(path)
    d = extract(path)
    try:
        fmu = FMU3Slave(guid=md.guid, unzipDirectory=d, modelIdentifier="CGain", instanceName="cgain")
        log = []

        def on_log(env, status, category, message):
            log.append((status, message.decode()))

        logger = fmi3LogMessageCallback(on_log)
        fmu.instantiate(logMessage=on_log)
        # FMPy's table of every FMI 3.0 function, with its C signature.
        refused = sorted(set(fmu._functions) - CGAIN3_IMPLEMENTS)
        assert len(fmu._functions) == 75 and len(refused) == 64, sorted(fmu._functions)
        problems = []
        for name in refused:
            f = fmu._functions[name]
            args = []
            for arg, t in zip(f.argnames, f.argtypes):
                if arg == "instance":
                    args.append(fmu.component)
                elif t is fmi3LogMessageCallback:
                    args.append(logger)
                elif t in (ctypes.c_double, ctypes.c_float):
                    args.append(0.0)
                elif t is ctypes.c_bool:
                    args.append(False)
                elif issubclass(t, ctypes._CFuncPtr):
                    args.append(t())  # NULL
                elif t in (ctypes.c_void_p, ctypes.c_char_p) or issubclass(t, ctypes._Pointer):
                    args.append(None)  # CGain refuses before it would read any array
                else:
                    args.append(1)  # counts: one value reference, one value
            before = len(log)
            res = f(*args)
            new = log[before:]
            if name.startswith("fmi3Instantiate"):
                ok = not res
            else:
                ok = res == 3  # fmi3Error
            if not ok or not any(status == 3 and name in message for status, message in new):
                problems.append((name, res, new))
        assert not problems, problems
        # Nothing refused changed the instance: it still computes y = k u.
        fmu.enterInitializationMode()
        fmu.setFloat64([3], [2.0])
        fmu.exitInitializationMode()
        fmu.setFloat64([1], [1.5])
        fmu.doStep(0.0, 0.1)
        assert fmu.getFloat64([2]) == [3.0]
        fmu.terminate()
        fmu.freeInstance()
        fmu.freeLibrary()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_b1_reference_csv_is_consistent():
    data = np.genfromtxt(os.path.join(DIST, "references", "b1_linear.csv"), delimiter=",", names=True)
    assert len(data) == 100001
    assert abs(data["z_c"][-1] - 0.1) < 1e-3 and abs(data["z_w"][-1] - 0.1) < 1e-3
    # The reference conserves energy: the energy dissipated in the damper up
    # to t = 10 s plus what is still stored equals E0 = 750 J.
    t = data["time"]
    v = data["v_c"] - data["v_w"]
    dissipated = np.trapezoid(1000.0 * v * v, t)
    stored = (0.5 * 400 * data["v_c"][-1] ** 2 + 0.5 * 40 * data["v_w"][-1] ** 2
              + 0.5 * 15000 * (data["z_c"][-1] - data["z_w"][-1]) ** 2
              + 0.5 * 150000 * (data["z_w"][-1] - 0.1) ** 2)
    assert abs(dissipated + stored - 750.0) < 1e-2, dissipated + stored


def test_bad_parameter_is_an_error_with_a_named_message():
    from fmpy.fmi1 import FMICallException

    for kind in ("fmi2", "fmi3"):
        messages = []
        try:
            simulate(os.path.join(DIST, kind, "QuarterCarChassis.fmu"), stop_time=0.01,
                     start_values={"m_c": -1.0}, debug_logging=True,
                     logger=lambda *args: messages.append(args[-1].decode() if isinstance(args[-1], bytes) else str(args[-1])))
        except FMICallException as e:
            assert "ExitInitializationMode" in str(e), e
        else:
            raise AssertionError(f"{kind}: negative mass accepted")
        assert any("m_c must be > 0, got -1" in m for m in messages), messages


CHILD = r"""
import sys
from fmpy import simulate_fmu
def log(*a):
    print(a[-1].decode() if isinstance(a[-1], bytes) else a[-1], flush=True)
simulate_fmu(sys.argv[1], validate=False, stop_time=1.0, output_interval=0.01,
             start_values={'fail_at': 0.05, 'fail_mode': int(sys.argv[2])}, logger=log)
print('survived', flush=True)
"""


def faulty_child(mode, timeout):
    path = os.path.join(DIST, "fmi2", "Faulty.fmu")
    return subprocess.run([sys.executable, "-c", CHILD, path, str(mode)], capture_output=True, text=True,
                          timeout=timeout)


def test_faulty_crash_modes_really_crash_after_logging():
    seg = faulty_child(4, 60)
    assert seg.returncode == -11, (seg.returncode, seg.stdout, seg.stderr)
    assert "raising SIGSEGV" in seg.stdout, seg.stdout
    ab = faulty_child(5, 60)
    assert ab.returncode == -6, (ab.returncode, ab.stdout, ab.stderr)
    assert "calling abort()" in ab.stdout, ab.stdout
    try:
        faulty_child(6, 5)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        assert "hanging forever" in out, out
    else:
        raise AssertionError("fail_mode 6 did not hang")


def test_faulty_discard_reports_last_successful_time():
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    path = os.path.join(DIST, "fmi2", "Faulty.fmu")
    md = read_model_description(path)
    vrs = {v.name: v.valueReference for v in md.modelVariables}
    d = extract(path)
    try:
        s = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier,
                      instanceName="faulty")
        # Own callbacks: FMPy's logger proxy is process-global and may still
        # point at the (freed) logger of an earlier simulate_fmu(logger=...).
        from ctypes import byref
        from fmpy.fmi2 import (calloc, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                               fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, free)
        from fmpy.logging import addLoggerProxy
        messages = []
        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(lambda env, name, status, cat, msg: messages.append(msg.decode()))
        cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        addLoggerProxy(byref(cb))
        s.instantiate(callbacks=cb)
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
        s.setReal([vrs["fail_at"]], [0.25])
        s.setInteger([vrs["fail_mode"]], [2])
        s.exitInitializationMode()
        s.setReal([vrs["u"]], [1.0])
        s.doStep(0.0, 0.2)  # raises on anything but OK
        from fmpy.fmi1 import FMICallException
        try:
            s.doStep(0.2, 0.1)
        except FMICallException as e:
            assert e.status == 2, e  # fmi2Discard
        else:
            raise AssertionError("the step over fail_at was not discarded")
        assert abs(s.getRealStatus(2) - 0.25) < 1e-15  # fmi2LastSuccessfulTime
        assert abs(s.getReal([vrs["x"]])[0] - 0.25) < 1e-15
        assert any("returning Discard" in m for m in messages), messages
        s.terminate()
        s.freeInstance()
    finally:
        import shutil
        shutil.rmtree(d, ignore_errors=True)


# ----------------------------------------------------------- Model Exchange
# The kit's Model Exchange FMUs (fmus/dist/me/: Model Exchange only; the
# quarter car halves of fmus/dist/fmi2, fmi3 have both interfaces) run by
# FMPy's Model Exchange importer (CVode, its root finding for state events,
# time events, completedIntegratorStep after each output point) against
# their references (cosim_models::reference, written here again from the
# equations).


def simulate_me(path, **kw):
    return simulate(path, fmi_type="ModelExchange", **kw)


def last_per_time(r):
    """The rows of a result, the last of each time (FMPy records an event's
    time twice: before and after the event)."""
    t = r["time"]
    keep = np.append(t[1:] != t[:-1], True)
    return r[keep]


def bouncing_ball_contacts(h0=1.0, e=0.7, g=9.81, v_min=0.1):
    t = math.sqrt(2 * h0 / g)
    v1 = math.sqrt(2 * g * h0)
    out = [t]
    k = 1
    while e ** k * v1 >= v_min:
        t += 2 * e ** k * v1 / g
        out.append(t)
        k += 1
    return out


def test_model_exchange_fmus_match_their_references_in_fmpy():
    for kind in ("fmi2", "fmi3"):
        me = os.path.join(DIST, "me", kind)
        # BouncingBallME: the contact times (state events) to 1e-5 at
        # rtol 1e-8 (CVode's state error moves the later ones), 11 contacts,
        # then at rest.
        r = simulate_me(os.path.join(me, "BouncingBallME.fmu"), stop_time=3.0, output_interval=0.01,
                        relative_tolerance=1e-8, record_events=True, output=["h", "v", "contacts"])
        c = r["contacts"]
        found = [r["time"][i] for i in range(1, len(c)) if c[i] != c[i - 1]]
        exact = bouncing_ball_contacts()
        assert len(found) == len(exact) == 11, (kind, found)
        err = max(abs(a - b) for a, b in zip(found, exact))
        assert err < 1e-5, f"{kind}/BouncingBallME: contact times off by {err:.2e}"
        assert r["v"][-1] == 0.0 and 0.0 < r["h"][-1] < 1e-300, (kind, r["h"][-1], r["v"][-1])
        # Robertson (stiff): y(40) of Hairer & Wanner to rtol.
        lit = {"y1": 0.7158270687, "y2": 9.185534764e-6, "y3": 0.2841637457}
        r = simulate_me(os.path.join(me, "Robertson.fmu"), stop_time=40.0, output_interval=0.1,
                        relative_tolerance=1e-8, output=list(lit))
        for name, y in lit.items():
            rel = abs(r[name][-1] - y) / y
            assert rel < 1e-7, f"{kind}/Robertson: {name}(40) = {r[name][-1]!r}, relative error {rel:.1e}"
        # TimeEvents: y = floor(t / 0.25) changed at the announced time
        # events, x = its integral (piecewise linear: exact).
        r = last_per_time(simulate_me(os.path.join(me, "TimeEvents.fmu"), stop_time=2.0,
                                      output_interval=0.01, output=["y", "x"]))
        t = r["time"]
        n = np.floor(t / 0.25 + 1e-9)
        x = 0.25 * n * (n - 1) / 2 + n * (t - n * 0.25)
        assert np.max(np.abs(r["y"] - n)) == 0.0, kind
        assert np.max(np.abs(r["x"] - x)) < 1e-9, (kind, np.max(np.abs(r["x"] - x)))
        # StepEvents: FMPy completes a step at each output point (0.01), so
        # x (slope 1) is reset at the first one with x >= 0.255: every 26
        # points.
        r = last_per_time(simulate_me(os.path.join(me, "StepEvents.fmu"), stop_time=1.0,
                                      output_interval=0.01, output=["x", "resets"]))
        k = np.floor(r["time"] / 0.01 + 1e-9)
        assert np.max(np.abs(r["x"] - 0.01 * (k % 26))) < 1e-9, kind
        assert r["resets"][-1] == 3, kind
        # The quarter car halves, as Model Exchange FMUs on their own:
        # the chassis under F = 400 N (v_c = t), the wheel and suspension
        # with v_c = 0 (a damped oscillator towards k_w z_road / (k_w + k_c)).
        qc = os.path.join(DIST, kind)
        r = simulate_me(os.path.join(qc, "QuarterCarChassis.fmu"), stop_time=0.5, output_interval=1e-3,
                        relative_tolerance=1e-9, input=const_input("F", 400.0, 0.5), output=["v_c", "z_c"])
        assert np.max(np.abs(r["v_c"] - r["time"])) < 1e-9, kind
        assert np.max(np.abs(r["z_c"] - r["time"] ** 2 / 2)) < 1e-7, kind
        r = simulate_me(os.path.join(qc, "QuarterCarWheelSuspension.fmu"), stop_time=0.5,
                        output_interval=1e-3, relative_tolerance=1e-9,
                        input=const_input("v_c", 0.0, 0.5), output=["z_w"])
        m, d, k_ = 40.0, 1000.0, 165000.0
        w0 = math.sqrt(k_ / m)
        zeta = d / (2 * math.sqrt(k_ * m))
        wd = w0 * math.sqrt(1 - zeta * zeta)
        t = r["time"]
        x = 150000 * 0.1 / k_ * (1 - np.exp(-zeta * w0 * t) * (np.cos(wd * t) + zeta * w0 / wd * np.sin(wd * t)))
        assert np.max(np.abs(r["z_w"] - x)) < 1e-6, (kind, np.max(np.abs(r["z_w"] - x)))


# The Model Exchange interfaces of the other dual-interface FMUs of
# fmus/dist/fmi2, fmi3 (QuarterCarChassis and QuarterCarWheelSuspension:
# above), against the exact solutions of their equations under a constant
# (ThermostatRoom: piecewise constant) input: CVode at rtol 1e-9 stays
# within 1e-5 of each variable's peak; 5 % in any parameter moves them by
# about 1e-2 of it.
def ref_quarter_car_wheel_exact(p, t, u):
    # m_w z_w'' = -k_w (z_w - z_road) + F, undamped.
    a = [[0.0, 1.0], [-p["k_w"] / p["m_w"], 0.0]]
    x = linear_exact(a, [0.0, (p["k_w"] * p["z_road"] + u.value("F", 0.0)) / p["m_w"]], [0.0, 0.0], t)
    return {"z_w": x[:, 0], "v_w": x[:, 1]}


def ref_quarter_car_chassis_suspension_exact(p, t, u):
    # Linear damper (n_d = 0.5); z_w = v_w t, and y = z_c - z_w, r = v_c -
    # v_w: m_c r' = -k_c y - d_c r, y(0) = 0, r(0) = -v_w.
    assert p["n_d"] == 0.5, "the exact solution is the linear damper's"
    v_w = u.value("v_w", 0.0)
    a = [[0.0, 1.0], [-p["k_c"] / p["m_c"], -p["d_c"] / p["m_c"]]]
    y, r = linear_exact(a, [0.0, 0.0], [0.0, -v_w], t).T
    return {"z_c": y + v_w * t, "v_c": r + v_w, "z_w": v_w * t, "F_c": p["k_c"] * y + p["d_c"] * r}


ME = {kind: {"fmi_type": "ModelExchange", "relative_tolerance": 1e-9} for kind in ("fmi2", "fmi3")}
ME_VALUES = [
    case("QuarterCarWheel", {}, {"F": 2000.0}, 0.2, 1e-3, ref_quarter_car_wheel_exact, 1e-5, ME),
    case("QuarterCarChassisSuspension", {}, {"v_w": -0.3}, 0.5, 1e-3, ref_quarter_car_chassis_suspension_exact,
         1e-5, ME),
    case("ThermostatRoom", *[c for c in VALUES if c[0] == "ThermostatRoom"][0][1:5], ref_thermostat_room, 1e-5, ME),
]


def test_model_exchange_interfaces_match_exact_solutions_in_fmpy():
    failures = []
    for c in ME_VALUES:
        model, band = c[0], c[6]
        for kind in ("fmi2", "fmi3"):
            r, ref, time = run_case(c, os.path.join(DIST, kind, model + ".fmu"), kind)
            failures += over_band(f"{kind}/{model} (Model Exchange)", value_errors(r, ref, time, band, "exact"))
    assert not failures, "\n".join(failures)


# ------------------------------------------------------------------ libcosim


def test_fmi2_fmus_load_and_step_in_libcosim():
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimObserver import CosimObserver
    from libcosimpy.CosimSlave import CosimLocalSlave

    for path in fmus("fmi2") + fmus("variants"):
        name = model_name(path)
        ex = CosimExecution.from_step_size(step_size=int(1e6))  # 1 ms, in ns
        idx = ex.add_local_slave(local_slave=CosimLocalSlave(fmu_path=path, instance_name="s"))
        assert idx >= 0, name
        obs = CosimObserver.create_last_value()
        ex.add_observer(observer=obs)
        variables = {v.name.decode(): v.reference for v in ex.slave_variables(idx)}
        assert ex.step(step_count=5), name
        out = {"Integrator": "x", "Gain": "y", "QuarterCarChassis": "v_c"}.get(name.split("-")[0], None)
        if out is not None:
            value = obs.last_real_values(slave_index=idx, variable_references=[variables[out]])[0]
            assert value == 0.0, (name, value)
    # One case with a value to check: Integrator with u = 3 and x0 = 2.
    ex = CosimExecution.from_step_size(step_size=int(1e7))
    idx = ex.add_local_slave(local_slave=CosimLocalSlave(fmu_path=os.path.join(DIST, "fmi2", "Integrator.fmu"),
                                                         instance_name="integrator"))
    obs = CosimObserver.create_last_value()
    ex.add_observer(observer=obs)
    variables = {v.name.decode(): v.reference for v in ex.slave_variables(idx)}
    ex.real_initial_value(idx, variables["u"], 3.0)
    ex.real_initial_value(idx, variables["x0"], 2.0)
    assert ex.step(step_count=10)
    x = obs.last_real_values(slave_index=idx, variable_references=[variables["x"]])[0]
    assert abs(x - 2.3) < 1e-12, x


def main():
    tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_") and callable(f)]
    passed = failed = 0
    for name, f in tests:
        try:
            f()
        except Exception:
            failed += 1
            print(f"FAIL {name}")
            traceback.print_exc()
        else:
            passed += 1
            print(f"ok   {name}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
