#!/usr/bin/env python3
"""Benchmark B1, reticulation A, under libcosim's fixed-step algorithm.

    python3 tests/python/libcosim_b1.py OUT.csv [--stop 4] [--step 1e-3]

Runs the system of scenarios/b1_quarter_car_a.toml (QuarterCarChassis and
QuarterCarWheelSuspension, FMI 2.0, from fmus/dist/fmi2) in libcosim
(libcosimpy), from the OSP system structure
tests/python/osp/b1_quarter_car_a/OspSystemStructure.xml:

    chassis.F = -1 * wheel.F_c   (an OSP LinearTransformation function: a
                                  libcosim connection carries no gain)
    wheel.v_c = chassis.v_c

and writes OUT.csv with the columns of cosim's trace.csv for that scenario:
`time [s]`, then `<instance>.<variable> [unit]` for every Real input, output and
non-constant local of chassis, then of wheel, in modelDescription order;
one row at the start time and one after every macro step, every value
written with repr() (shortest round-trip form of the double).

The values are what libcosim's time-series observer records (libcosim 0.11,
src/cosim/observer/time_series_observer.cpp): the row of the start time is
taken in `simulation_initialized`, after `fixed_step_algorithm::initialize`
(initialization-mode iterations, fmi2ExitInitializationMode, one fmi2GetReal
of every observed variable); each later row in `simulator_step_complete`,
from the fmi2GetReal made right after fmi2DoStep, before the new inputs are
set (they are set at the start of the next step). The time column is
libcosim's integer-nanosecond time point divided by 1e9, which is also the
currentCommunicationPoint it passes to fmi2DoStep.

With --osp DIR it runs another OSP system structure the same way (all
FMUs FMI 2.0, every one at the base step), e.g. tests/python/osp/thermostat
(Boolean and Integer connections); the columns are still the Real
variables.

Exits non-zero with a message on any failure (libcosimpy missing, FMUs not
built, a libcosim call failing, a time grid other than n * step).
"""

import argparse
import ctypes
import math
import os
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OSP_DIR = os.path.join(HERE, "osp", "b1_quarter_car_a")
OSP_NS = "http://opensimulationplatform.com/MSMI/OSPSystemStructure"


def fail(message):
    print(f"libcosim_b1.py: error: {message}", file=sys.stderr)
    sys.exit(1)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="CSV file to write")
    p.add_argument("--stop", type=float, default=4.0, help="stop time in s (default 4)")
    p.add_argument("--step", type=float, default=1e-3, help="macro step in s (default 1e-3)")
    p.add_argument("--osp", default=OSP_DIR,
                   help="OSP system structure (directory or file) to run (default: %(default)s)")
    p.add_argument("--log-level", default="warning",
                   choices=["trace", "debug", "info", "warning", "error", "fatal"],
                   help="libcosim log level (default warning)")
    return p.parse_args()


def osp_file(path):
    return os.path.join(path, "OspSystemStructure.xml") if os.path.isdir(path) else path


def prepare_osp(template, step, workdir):
    """Copy of the OSP file with absolute sources and BaseStepSize = step.

    Returns (path of the copy, [(instance name, absolute FMU path)] in the
    file's order)."""
    ET.register_namespace("", OSP_NS)
    tree = ET.parse(template)
    root = tree.getroot()
    q = lambda tag: f"{{{OSP_NS}}}{tag}"  # noqa: E731
    base = root.find(q("BaseStepSize"))
    if base is None:
        fail(f"{template}: no <BaseStepSize>")
    base.text = repr(step)
    instances = []
    for sim in root.find(q("Simulators")).findall(q("Simulator")):
        src = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(template)),
                                            sim.get("source")))
        if not os.path.isfile(src):
            fail(f"FMU {src} not found: build the FMUs first (`cargo xtask fmus`)")
        sim.set("source", src)
        if sim.get("stepSize") is not None:
            fail(f"{template}: simulator {sim.get('name')} has its own stepSize; this script "
                 "compares runs where every FMU steps at the base step")
        instances.append((sim.get("name"), src))
    out = os.path.join(workdir, "OspSystemStructure.xml")
    tree.write(out, encoding="utf-8", xml_declaration=True)
    # The OSP model descriptions (variable groups) libcosim looks for beside
    # the FMU, then beside the system structure: copied beside the copy.
    here = os.path.dirname(os.path.abspath(template))
    for name in os.listdir(here):
        if name.endswith("_OspModelDescription.xml"):
            shutil.copy(os.path.join(here, name), os.path.join(workdir, name))
    return out, instances


def model_variables(fmu):
    """[(name, causality, variability, type, unit)] of an FMI 2.0 FMU, in order."""
    with zipfile.ZipFile(fmu) as z:
        md = ET.fromstring(z.read("modelDescription.xml"))
    out = []
    for sv in md.find("ModelVariables").findall("ScalarVariable"):
        typ = next(iter(sv))
        out.append((sv.get("name"), sv.get("causality", "local"),
                    sv.get("variability", "continuous"), typ.tag, typ.get("unit")))
    return out


def main():
    args = parse_args()
    if not (args.step > 0 and args.stop > 0):
        fail("--step and --stop must be positive")
    n_steps = round(args.stop / args.step)
    if n_steps < 1 or abs(n_steps * args.step - args.stop) > 1e-9 * args.stop:
        fail(f"--stop {args.stop} is not a whole number of steps {args.step}")
    step_ns = round(args.step * 1e9)
    if abs(step_ns - args.step * 1e9) > 1e-6 * step_ns:
        fail(f"--step {args.step} is not a whole number of nanoseconds (libcosim's time unit)")

    try:
        from libcosimpy import CosimLogging
        from libcosimpy.CosimEnums import CosimVariableType
        from libcosimpy.CosimExecution import CosimExecution
        from libcosimpy.CosimObserver import CosimObserver
        from libcosimpy._internal import libcosimc
    except ImportError as e:
        fail(f"libcosimpy is not installed ({e}): `python3 -m pip install libcosimpy`")

    CosimLogging.log_output_level(CosimLogging.CosimLogLevel[args.log_level.upper()])

    with tempfile.TemporaryDirectory(prefix="libcosim_b1_") as work:
        osp, instances = prepare_osp(osp_file(args.osp), args.step, work)
        ex = CosimExecution.from_osp_config_file(osp)
        index = {info.name.decode(): info.index for info in ex.slave_infos()}

        # Columns: as cosim's trace for `variables = ["chassis.*", "wheel.*"]`.
        columns = []  # (header, slave index, value reference)
        for name, fmu in instances:
            refs = {v.name.decode(): v.reference for v in ex.slave_variables(index[name])}
            for var, causality, variability, typ, unit in model_variables(fmu):
                if typ != "Real" or variability == "constant":
                    continue
                if causality not in ("input", "output", "local"):
                    continue
                header = f"{name}.{var} [{unit}]" if unit else f"{name}.{var}"
                columns.append((header, index[name], refs[var]))

        observer = CosimObserver.create_time_series()
        if not ex.add_observer(observer=observer):
            fail("cannot add the time-series observer")
        for _, slave, ref in columns:
            if not observer.start_time_series(slave, ref, CosimVariableType.REAL):
                fail(f"cannot observe variable {ref} of slave {slave}")

        if not ex.simulate_until(target_time=n_steps * step_ns):
            from libcosimpy._internal import get_last_error_message
            fail(f"simulation failed: {get_last_error_message()}")
        end = ex.status().current_time
        if end != n_steps * step_ns:
            fail(f"libcosim stopped at {end} ns, not {n_steps * step_ns} ns "
                 f"({n_steps} steps of {step_ns} ns)")

        # cosim_observer_slave_get_real_samples directly: libcosimpy 0.0.6's
        # time_series_real_samples counts the samples by the zeros in the step
        # numbers, which drops one sample when step 0 is among them.
        lib = ctypes.CDLL(libcosimc()._name)
        get_samples = lib.cosim_observer_slave_get_real_samples
        get_samples.restype = ctypes.c_int64
        n = n_steps + 1
        get_samples.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_int64, ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int64),
            ctypes.POINTER(ctypes.c_int64)]
        times = None
        data = []
        for header, slave, ref in columns:
            values = (ctypes.c_double * n)()
            steps = (ctypes.c_int64 * n)()
            tps = (ctypes.c_int64 * n)()
            got = get_samples(ctypes.cast(observer.ptr(), ctypes.c_void_p), slave, ref, 0, n,
                              values, steps, tps)
            if got != n or list(steps) != list(range(n)):
                fail(f"{header}: expected samples of steps 0..{n_steps}, got {got}")
            if times is None:
                times = list(tps)
                want = [k * step_ns for k in range(n)]
                if times != want:
                    bad = next(k for k in range(n) if times[k] != want[k])
                    fail(f"time point of step {bad} is {times[bad]} ns, not {want[bad]} ns")
            data.append(list(values))

    with open(args.out, "w", encoding="utf-8", newline="") as f:
        f.write(",".join(["time [s]"] + [c[0] for c in columns]) + "\n")
        for k in range(n):
            row = [repr(times[k] / 1e9)] + [repr(col[k]) for col in data]
            if any(not math.isfinite(col[k]) for col in data):
                fail(f"non-finite value at step {k}")
            f.write(",".join(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
