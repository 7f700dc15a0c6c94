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
# FMU3Model (the Model Exchange API). Prints `loaded<TAB>path` or
# `FAIL<TAB>path<TAB>why` per FMU. In
# a child process ended with os._exit: Integrator-crashes-at-exit (quirks/)
# registers in fmi2FreeInstance an exit handler that kills its process, by
# design (quirk builds are only loaded here, never simulated).
LOAD_CHILD = r"""
import os, shutil, sys
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Model, FMU2Slave
from fmpy.fmi3 import FMU3Model, FMU3Slave
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


def test_every_fmu_simulates_in_fmpy():
    for path in fmus("fmi2") + fmus("fmi3") + fmus("variants"):
        name = model_name(path)
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
