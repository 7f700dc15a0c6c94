"""What a Python loop of `Simulation.step()` costs per FMU step, against
the `cosim` command running the same scenario (docs/performance.md,
section "Python").

    python examples/python/step_overhead.py [--stop 20] [--repeats 5] [--cosim target/release/cosim]

B1 reticulation A (two FMUs, fixed step 1 ms, Jacobi), without a trace
file: every variant makes the same FMU calls, so the differences are the
loop's. Prints, per FMU step (the best of the repeats, as `timeit` does:
the least disturbed by other work on the machine; the median beside it):

- the command's stepping loop (`wall_time_s` of its summary / doStep calls);
- `cosim.run` (the same loop, in this process);
- `Simulation.run_until(stop)`: the same steps as the Python loop, in one
  call (the session's loop in Rust);
- `Simulation.step()` in a Python loop, and with one `get()` per step;
- the overhead of the Python loop: its time minus the command's loop, and
  minus `run_until` (the cost of crossing into Python and back per step).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import cosim

ROOT = Path(__file__).resolve().parents[2]


def scenario(stop: float) -> str:
    fmus = ROOT / "fmus" / "dist" / "fmi2"
    return f"""
[simulation]
stop = {stop}
[master]
kind = "fixed-step"
step = 1e-3
scheme = "jacobi"
[[subsystems]]
name = "chassis"
fmu = "{fmus / 'QuarterCarChassis.fmu'}"
[[subsystems]]
name = "wheel"
fmu = "{fmus / 'QuarterCarWheelSuspension.fmu'}"
[[connections]]
from = "wheel.F_c"
to = "chassis.F"
gain = -1.0
[[connections]]
from = "chassis.v_c"
to = "wheel.v_c"
[outputs]
trace = false
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stop", type=float, default=50.0, help="simulated seconds (1000 macro steps each)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cosim", default=str(ROOT / "target" / "release" / "cosim"))
    a = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "b1_no_trace.toml"
        path.write_text(scenario(a.stop))
        cli, lib, until, loop, loop_get = [], [], [], [], []
        fmu_steps = 0
        for _ in range(a.repeats):
            out = Path(tmp) / "cli"
            subprocess.run(
                [a.cosim, "run", str(path), "--out", str(out), "-q", "--no-progress"], check=True
            )
            s = json.loads((out / "summary.json").read_text())
            fmu_steps = s["calls"]["do_step"]
            cli.append(s["wall_time_s"] / fmu_steps)

            r = cosim.run(path)
            assert r.summary["calls"]["do_step"] == fmu_steps
            lib.append(r.summary["wall_time_s"] / fmu_steps)

            for get, times in ((None, until), (False, loop), (True, loop_get)):
                sim = cosim.Simulation(path)
                sim.step()  # initialisation and the first step, not timed
                n = 1
                step = sim.step
                t0 = time.perf_counter()
                if get is None:
                    n += sim.run_until(sim.stop_time)
                elif get:
                    while not sim.done:
                        step()
                        sim.get("chassis.v_c")
                        n += 1
                else:
                    while not sim.done:
                        step()
                        n += 1
                dt = time.perf_counter() - t0
                sim.close()
                per_macro = 2  # two FMUs, one doStep each per macro step
                times.append(dt / ((n - 1) * per_macro))

    def us(v: list) -> float:
        return min(v) * 1e6

    def med(v: list) -> float:
        return statistics.median(v) * 1e6

    print(f"B1 reticulation A without a trace: {fmu_steps} FMU steps per run, best (median) of {a.repeats}")
    rows = [
        ("cosim run (command), stepping loop", cli),
        ("cosim.run (Python, same loop)", lib),
        ("Simulation.run_until(stop), one call", until),
        ("Simulation.step() loop", loop),
        ("Simulation.step() + get() loop", loop_get),
    ]
    for label, v in rows:
        print(f"{label + ':':46s} {us(v):6.3f} ({med(v):6.3f}) us per FMU step")
    for label, v in rows[3:]:
        print(f"{label + ' - command:':46s} {us(v) - us(cli):6.3f} ({med(v) - med(cli):6.3f}) us per FMU step")
        print(f"{label + ' - run_until:':46s} {us(v) - us(until):6.3f} ({med(v) - med(until):6.3f}) us per FMU step")


if __name__ == "__main__":
    main()
