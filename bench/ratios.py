#!/usr/bin/env python3
"""The cosim/raw table of docs/performance.md from cosim-bench reports.

Each argument is LABEL=REPORT[,REPORT...]: the reports of one build (one
invocation each, e.g. of `bench/reference.sh DIR --rounds 3 --out FILE`).
Prints a Markdown table with, per scenario, the raw loop's figure over
every report, then for each label the range of cosim's figure (1 thread,
ns per FMU and macro step) and of cosim/raw over that label's reports.

    python3 bench/ratios.py \\
        before=bench/results/issue21-round10-before-1.md,bench/results/issue21-round10-before-2.md \\
        after=bench/results/issue21-round10-final-1.md,bench/results/issue21-round10-final-2.md
"""

import sys

# Columns of the report's main table (cosim-bench's report.rs).
SCENARIO, RAW, COSIM_1, RATIO = 0, 4, 5, 9


def read(path):
    """scenario -> (raw, cosim 1 thread, cosim/raw) from the report's first table."""
    rows = {}
    in_table = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("| scenario | FMUs |"):
                in_table = True
                continue
            if in_table and not line.startswith("|"):
                break
            if not in_table or line.startswith("|---"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) > RATIO and cells[RAW] != "-" and cells[COSIM_1] != "-":
                rows[cells[SCENARIO]] = (cells[RAW], cells[COSIM_1], cells[RATIO])
    if not rows:
        sys.exit(f"{path}: no table of ns per macro step per FMU")
    return rows


def span(values):
    """'a' or 'a-b' over numeric strings."""
    values = sorted(values, key=float)
    return values[0] if values[0] == values[-1] else f"{values[0]}-{values[-1]}"


def main(args):
    if not args or any("=" not in a for a in args):
        sys.exit(__doc__)
    builds = []
    for arg in args:
        label, paths = arg.split("=", 1)
        builds.append((label, [read(p) for p in paths.split(",")]))
    scenarios = list(builds[0][1][0])
    header = ["scenario", "raw"]
    for label, _ in builds:
        header += [f"cosim {label}", f"ratio {label}"]
    print("| " + " | ".join(header) + " |")
    print("|---|" + "--:|" * (len(header) - 1))
    for s in scenarios:
        reports = [r for _, rs in builds for r in rs]
        if not all(s in r for r in reports):
            continue
        row = [s, span([r[s][0] for r in reports])]
        for _, rs in builds:
            row += [span([r[s][1] for r in rs]), span([r[s][2] for r in rs])]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
