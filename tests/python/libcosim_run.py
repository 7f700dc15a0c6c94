#!/usr/bin/env python3
"""Run an OSP or SSP system file, unchanged, in libcosim and write its trace.

    python3 tests/python/libcosim_run.py SYSTEM OUT.csv --stop T [--ssp]

SYSTEM is an OSP system structure (`OspSystemStructure.xml`, or a directory
holding one) read by libcosim's `load_osp_config`, or with --ssp an SSP
system (`.ssd`, a directory with `SystemStructure.ssd`, or a `.ssp`) read by
its `ssp_loader`. The file is passed as it is: sources resolve relative to
it, its algorithm (fixedStep or ecco, OSP annotations in SSP), step sizes,
step hints, initial values, functions and power bonds are libcosim's
reading of it.

The run is `cosim_execution_step` called once per macro step until the
execution's time reaches the stop time, as `simulate_until` does (whose
loop ends once less than 1 % of the last step remains, so an adaptive
algorithm may end past the stop time: rows after it are written too, the
comparison decides what to do with them).

OUT.csv: `time [s]` (libcosim's integer-nanosecond time divided by 1e9),
then one column `<instance>.<variable>` (no unit) for every Real, Integer
and Boolean variable of every simulator that is not a constant or the
independent variable, simulators in libcosim's order, variables in
modelDescription order; Booleans as 0/1. Row 0 is the state after
initialization (libcosim's time-series observer sample of step 0, Real and
Integer only: Boolean cells are empty there); row k >= 1 the values
libcosim's last-value observer holds after step k: for a simulator that
steps every n-th macro step (a step hint, a Simulator stepSize) the values
of its last completed step. Every value is written with repr().

A second file OUT.steps.csv gets one line per macro step: `step [ns]`.

Exits non-zero with a message on any failure (libcosimpy missing, FMUs not
built, a libcosim call failing).
"""

import argparse
import ctypes
import math
import os
import sys

TYPES = {0: "real", 1: "integer", 3: "boolean"}  # CosimVariableType; 2 = string
SKIP_CAUSALITY = {5}  # independent
SKIP_VARIABILITY = {0}  # constant


def fail(message):
    print(f"libcosim_run.py: error: {message}", file=sys.stderr)
    sys.exit(1)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("system", help="OSP or SSP system to run")
    p.add_argument("out", help="CSV file to write")
    p.add_argument("--stop", type=float, required=True, help="stop time in s")
    p.add_argument("--ssp", action="store_true", help="SYSTEM is an SSP system")
    p.add_argument("--api", action="store_true",
                   help="build the execution of an OSP file with ECCO through libcosim's C API "
                        "instead of load_osp_config (see below)")
    p.add_argument("--log-level", default="warning",
                   choices=["trace", "debug", "info", "warning", "error", "fatal"],
                   help="libcosim log level (default warning)")
    return p.parse_args()


def execution_from_api(system):
    """The execution libcosim's `load_osp_config` would build from an OSP
    file with `<Algorithm>ecco</Algorithm>`, built through the C API:
    libcosim 0.11.2 refuses a file with two or more power bonds (the check
    at the end of `add_power_bonds` in src/cosim/osp_config_parser.cpp
    runs inside its loop over the bonds, after the first bond is added).
    Simulators in the file's order, Real initial values, connections in
    the direction the FMUs' causalities give (`connect_variables`), and the
    bonds with the roles `add_power_bonds` reads from the `causality`
    attributes (first connection: "input" -> input_a, "output" -> output_b;
    second: "input" -> input_b, "output" -> output_a), in the order of
    their names (a std::set there)."""
    import xml.etree.ElementTree as ET
    from libcosimpy.CosimAlgorithm import CosimAlgorithm, EccoParams
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimSlave import CosimLocalSlave

    path = os.path.join(system, "OspSystemStructure.xml") if os.path.isdir(system) else system
    ns = {"o": "http://opensimulationplatform.com/MSMI/OSPSystemStructure"}
    root = ET.parse(path).getroot()
    if (root.findtext("o:Algorithm", namespaces=ns) or "").strip().lower() != "ecco":
        fail(f"{path}: --api builds ECCO executions only")
    cfg = root.find("o:EccoConfiguration", ns)
    num = lambda tag: float(cfg.findtext(f"o:{tag}", namespaces=ns))  # noqa: E731
    params = EccoParams(
        safety_factor=num("SafetyFactor"), step_size=num("StepSize"),
        min_step_size=num("MinimumStepSize"), max_step_size=num("MaximumStepSize"),
        min_change_rate=num("MinimumChangeRate"), max_change_rate=num("MaximumChangeRate"),
        abs_tolerance=num("AbsoluteTolerance"), rel_tolerance=num("RelativeTolerance"),
        p_gain=num("ProportionalGain"), i_gain=num("IntegralGain"))
    algorithm = CosimAlgorithm.create_ecco_algorithm(params)
    ex = CosimExecution.from_algorithm(algorithm)
    here = os.path.dirname(os.path.abspath(path))
    index, refs, causality = {}, {}, {}
    for sim in root.find("o:Simulators", ns).findall("o:Simulator", ns):
        name = sim.get("name")
        slave = CosimLocalSlave(fmu_path=os.path.join(here, sim.get("source")), instance_name=name)
        index[name] = ex.add_local_slave(local_slave=slave)
        if index[name] < 0:
            fail(f"cannot add simulator {name}")
        for v in ex.slave_variables(index[name]):
            refs[(name, v.name.decode())] = v.reference
            causality[(name, v.name.decode())] = v.causality
        for iv in sim.findall("o:InitialValues/o:InitialValue", ns):
            real = iv.find("o:Real", ns)
            if real is None:
                fail(f"{path}: --api sets Real initial values only")
            if not ex.real_initial_value(index[name], refs[(name, iv.get("variable"))],
                                     float(real.get("value"))):
                fail(f"cannot set the initial value of {name}.{iv.get('variable')}")
    bonds = {}
    for vc in root.find("o:Connections", ns).findall("o:VariableConnection", ns):
        ends = [(v.get("simulator"), v.get("name"), v.get("causality"))
                for v in vc.findall("o:Variable", ns)]
        out, inp = ends if causality[ends[0][:2]] in (2, 3) else ends[::-1]  # output/calc. param
        if ex.connect_real_variables(index[out[0]], refs[out[:2]], index[inp[0]],
                                     refs[inp[:2]]) != 0:
            fail(f"cannot connect {out[:2]} to {inp[:2]}")
        if vc.get("powerBond"):
            bonds.setdefault(vc.get("powerBond"), []).append(ends)
    for name in sorted(bonds):
        first, second = bonds[name]
        roles = {}
        for (sim, var, mark) in first:
            roles["input_a" if mark == "input" else "output_b"] = (sim, var)
        for (sim, var, mark) in second:
            roles["input_b" if mark == "input" else "output_a"] = (sim, var)
        ia, oa, ib, ob = (roles[k] for k in ("input_a", "output_a", "input_b", "output_b"))
        if ia[0] != oa[0] or ib[0] != ob[0]:
            fail(f"power bond {name}: the C API takes one simulator per port")
        if algorithm.add_power_bond(index[oa[0]], refs[oa], refs[ia],
                                    index[ob[0]], refs[ob], refs[ib]) != 0:
            fail(f"cannot add power bond {name}")
    return ex


def main():
    args = parse_args()
    try:
        from libcosimpy import CosimLogging
        from libcosimpy.CosimExecution import CosimExecution
        from libcosimpy.CosimObserver import CosimObserver
        from libcosimpy._internal import get_last_error_message, libcosimc
    except ImportError as e:
        fail(f"libcosimpy is not installed ({e}): `cargo xtask test` installs it into .venv/")

    CosimLogging.log_output_level(CosimLogging.CosimLogLevel[args.log_level.upper()])
    try:
        if args.api:
            ex = execution_from_api(args.system)
        elif args.ssp:
            ex = CosimExecution.from_ssp_file(args.system)
        else:
            ex = CosimExecution.from_osp_config_file(args.system)
    except AssertionError as e:
        fail(f"libcosim cannot load {args.system}: {e} ({get_last_error_message()})")

    # (header, slave, reference, type) in libcosim's slave order.
    columns = []
    slaves = sorted(ex.slave_infos(), key=lambda s: s.index)
    for info in slaves:
        for v in ex.slave_variables(info.index):
            if v.type not in TYPES or v.causality in SKIP_CAUSALITY \
                    or v.variability in SKIP_VARIABILITY:
                continue
            columns.append((f"{info.name.decode()}.{v.name.decode()}", info.index,
                            v.reference, TYPES[v.type]))

    last = CosimObserver.create_last_value()
    series = CosimObserver.create_time_series()
    for obs in (last, series):
        if not ex.add_observer(observer=obs):
            fail("cannot add an observer")
    from libcosimpy.CosimEnums import CosimVariableType
    for _, slave, ref, typ in columns:
        if typ in ("real", "integer"):
            kind = CosimVariableType.REAL if typ == "real" else CosimVariableType.INTEGER
            if not series.start_time_series(slave, ref, kind):
                fail(f"cannot observe variable {ref} of slave {slave}")

    lib = ctypes.CDLL(libcosimc()._name)
    getters = {
        "real": (lib.cosim_observer_slave_get_real, ctypes.c_double),
        "integer": (lib.cosim_observer_slave_get_integer, ctypes.c_int),
        "boolean": (lib.cosim_observer_slave_get_boolean, ctypes.c_bool),
    }
    # Per (slave, type): the references and the columns they fill.
    groups = {}
    for k, (_, slave, ref, typ) in enumerate(columns):
        groups.setdefault((slave, typ), ([], []))
        groups[(slave, typ)][0].append(ref)
        groups[(slave, typ)][1].append(k)
    for (slave, typ), (refs, _) in groups.items():
        fn, ctype = getters[typ]
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_uint32),
                       ctypes.c_size_t, ctypes.POINTER(ctype)]
    obs_ptr = ctypes.cast(last.ptr(), ctypes.c_void_p)

    def read_row():
        row = [None] * len(columns)
        for (slave, typ), (refs, cols) in groups.items():
            fn, ctype = getters[typ]
            vrs = (ctypes.c_uint32 * len(refs))(*refs)
            values = (ctype * len(refs))()
            if fn(obs_ptr, slave, vrs, len(refs), values) != 0:
                fail(f"reading {typ} values of slave {slave}: {get_last_error_message()}")
            for c, v in zip(cols, values):
                row[c] = int(v) if typ == "boolean" else v
        return row

    def read_row0():
        """Row 0 from the time series (step 0: after initialization), read
        after the first step, while the observer's buffer still holds it."""
        get_real = lib.cosim_observer_slave_get_real_samples
        get_int = lib.cosim_observer_slave_get_integer_samples
        row0 = [None] * len(columns)
        for k, (header, slave, ref, typ) in enumerate(columns):
            if typ == "boolean":
                continue
            fn, ctype = (get_real, ctypes.c_double) if typ == "real" else (get_int, ctypes.c_int)
            fn.restype = ctypes.c_int64
            fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_int64,
                           ctypes.c_size_t, ctypes.POINTER(ctype), ctypes.POINTER(ctypes.c_int64),
                           ctypes.POINTER(ctypes.c_int64)]
            value = (ctype * 1)()
            step = (ctypes.c_int64 * 1)()
            tp = (ctypes.c_int64 * 1)()
            got = fn(ctypes.cast(series.ptr(), ctypes.c_void_p), slave, ref, 0, 1, value, step, tp)
            if got != 1 or step[0] != 0 or tp[0] != start:
                fail(f"{header}: no sample of step 0 at {start} ns")
            row0[k] = value[0]
        return row0

    stop_ns = round(args.stop * 1e9)
    times = []
    steps = []
    rows = []
    t = ex.status().current_time
    start = t
    while True:
        if not ex.step(1):
            fail(f"libcosim step failed at {t} ns: {get_last_error_message()}")
        now = ex.status().current_time
        steps.append(now - t)
        t = now
        times.append(t)
        rows.append(read_row())
        if len(rows) == 1:
            row0 = read_row0()
        # execution::simulate_until's end test (src/cosim/execution.cpp).
        if stop_ns - t < steps[-1] * 0.01:
            break

    with open(args.out, "w", encoding="utf-8", newline="") as f:
        f.write(",".join(["time [s]"] + [c[0] for c in columns]) + "\n")
        for time, row in [(start, row0)] + list(zip(times, rows)):
            cells = [repr(time / 1e9)]
            for v in row:
                if v is None:
                    cells.append("")
                elif isinstance(v, float):
                    if not math.isfinite(v):
                        fail(f"non-finite value at {time} ns")
                    cells.append(repr(v))
                else:
                    cells.append(str(v))
            f.write(",".join(cells) + "\n")
    with open(args.out + ".steps.csv", "w", encoding="utf-8") as f:
        f.write("step [ns]\n")
        for s in steps:
            f.write(f"{s}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
