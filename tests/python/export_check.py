#!/usr/bin/env python3
"""Check an FMU made by `cosim export` with FMPy (tests/tests/export.rs).

    python3 tests/python/export_check.py FMU TRACE.csv [INTERVAL]

FMU: an exported system; TRACE.csv: cosim's trace of the same system run
directly (`cosim run`), one row every INTERVAL s (default 0.1) over its
DefaultExperiment; a column `<subsystem>.<variable>` is the FMU's
`<variable>` where the FMU has no variable of the column's name (one FMU
wrapped).
The FMU must pass FMPy's validation (no problem reported); FMPy's
simulation of it (`simulate_fmu`, output interval INTERVAL) must give, at
every row time of the trace (to the nanosecond), the trace's values of its columns bit for
bit. Prints `N rows, K differing` and exits non-zero on any difference.
"""

import csv
import sys


def main():
    fmu, trace = sys.argv[1], sys.argv[2]
    from fmpy import simulate_fmu
    from fmpy.validation import validate_fmu

    problems = validate_fmu(fmu)
    if problems:
        print("FMPy validation:", *problems, sep="\n  ")
        return 1
    with open(trace, newline="") as f:
        rows = list(csv.reader(f))
    names = [h.rsplit(" [", 1)[0] for h in rows[0]]
    # (FMPy counts time in floats, cosim in ticks: a row is matched by its
    # time to the nanosecond.)
    expected = {round(float(r[0]), 9): [float(x) for x in r[1:]] for r in rows[1:]}
    interval = float(sys.argv[3]) if len(sys.argv) > 3 else 0.1
    # A wrapped FMU's variables keep their names: the trace's
    # `<subsystem>.<variable>` is then `<variable>` in the FMU.
    from fmpy import read_model_description
    known = {v.name for v in read_model_description(fmu).modelVariables}
    names = [n if n in known or "." not in n else n.split(".", 1)[1] for n in names]
    result = simulate_fmu(fmu, output_interval=interval, output=names[1:])
    compared, differing = 0, []
    for row in result:
        want = expected.get(round(float(row["time"]), 9))
        if want is None:
            continue
        compared += 1
        got = [float(row[n]) for n in names[1:]]
        if got != want:
            differing.append(f"t = {row['time']!r}: FMPy {got}, cosim {want}")
    print(f"{compared} rows, {len(differing)} differing")
    for d in differing[:10]:
        print(" ", d)
    return 0 if compared == len(expected) and not differing else 1


if __name__ == "__main__":
    sys.exit(main())
