"""The Python package `cosim` (issue 24) on the project's FMUs: every API,
results against the `cosim` command's files bit for bit, errors against
the command's messages, Ctrl-C, the GIL, a fresh venv, the example."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List

import numpy as np
import pytest

import cosim

from conftest import ROOT, assert_bitwise, cli, read_cli_csv

B1 = "scenarios/b1_quarter_car_a.toml"


def long_b1(tmp_path: Path, stop: float = 1e5) -> Path:
    """B1 reticulation A running for a long time with a sparse trace (one
    row per simulated second) and no energy or step log (a row every step:
    gigabytes a minute), for interruption and threading tests."""
    fmus = ROOT / "fmus" / "dist" / "fmi2"
    text = f"""
[simulation]
stop = {stop}
[master]
kind = "fixed-step"
step = 1e-3
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
variables = ["chassis.v_c"]
interval = 1.0
energy_log = false
step_log = false
"""
    path = tmp_path / "long_b1.toml"
    path.write_text(text)
    return path


# ---------------------------------------------------------------- run


@pytest.mark.parametrize(
    "target",
    [
        B1,
        "scenarios/b1_quarter_car_a_ecco.toml",  # adaptive master
        "scenarios/thermostat.toml",  # integers and Booleans
        "fmus/dist/fmi2/Dahlquist.fmu",  # a single FMU
        "fmus/dist/fmi3/Greeting.fmu",  # a String output
        "tests/python/osp/b1_quarter_car_a/OspSystemStructure.xml",  # OSP
        "tests/python/ssp/parameters/SystemStructure.ssd",  # SSP
    ],
)
def test_run_equals_the_cli_bit_for_bit(cosim_bin: Path, tmp_path: Path, target: str) -> None:
    cli_out = tmp_path / "cli"
    py_out = tmp_path / "py"
    p = cli(cosim_bin, "run", target, "--out", cli_out, "--no-progress", "-q")
    assert p.returncode == 0, p.stderr
    r = cosim.run(target, out=py_out)
    assert r.status == "completed"
    assert r.out == py_out
    # The same engine writes the same files.
    assert (cli_out / "trace.csv").read_bytes() == (py_out / "trace.csv").read_bytes()
    # And Result.trace holds the CLI's values, parsed independently.
    headers, cols = read_cli_csv(cli_out / "trace.csv")
    assert r.trace is not None
    assert list(r.trace.dtype.names) == headers
    for h in headers:
        assert_bitwise(r.trace[h], cols[h], h)
    for log, table in (("energy.csv", r.energy), ("steps.csv", r.steps)):
        if (cli_out / log).exists():
            assert table is not None
            headers, cols = read_cli_csv(cli_out / log)
            for h in headers:
                assert_bitwise(table[h], cols[h], f"{log} {h}")
        else:
            assert table is None
    cli_summary = json.loads((cli_out / "summary.json").read_text())
    for key in ("status", "t_reached", "stats", "calls", "bonds", "master", "max_indicator"):
        assert r.summary[key] == cli_summary[key] or (
            key == "max_indicator" and np.isnan(r.summary[key]) and cli_summary[key] is None
        ), key


def test_run_overrides_as_the_command_line(cosim_bin: Path, tmp_path: Path) -> None:
    args = ["--stop", "0.5", "--step", "2e-3", "--set", "chassis.m_c=500", "--set", "wheel.d_c=2000.5"]
    p = cli(cosim_bin, "run", B1, "--out", tmp_path, "--no-progress", "-q", *args)
    assert p.returncode == 0, p.stderr
    r = cosim.run(B1, stop=0.5, step=2e-3, set={"chassis.m_c": 500, "wheel.d_c": 2000.5})
    assert r.out is None  # a temporary directory, removed
    assert r.summary["t_reached"] == 0.5 and r.summary["stats"]["macro_steps"] == 250
    _, cols = read_cli_csv(tmp_path / "trace.csv")
    for h, col in cols.items():
        assert_bitwise(r.trace[h], col, h)
    # The list form of set is the same.
    r2 = cosim.run(B1, stop=0.5, step=2e-3, set=["chassis.m_c=500", "wheel.d_c=2000.5"])
    assert_bitwise(r2.trace["chassis.v_c"], r.trace["chassis.v_c"])
    # And differs from the default parameters.
    r3 = cosim.run(B1, stop=0.5, step=2e-3)
    assert not np.array_equal(r3.trace["chassis.v_c"], r.trace["chassis.v_c"])


def test_run_scenario_text(tmp_path: Path) -> None:
    text = (ROOT / B1).read_text().replace("../fmus/", "fmus/")
    r = cosim.run(text, stop=1.0)
    by_path = cosim.run(B1, stop=1.0)
    assert len(r.trace) == 1001
    for h in by_path.trace.dtype.names:
        assert_bitwise(r.trace[h], by_path.trace[h], h)
    assert r.units["chassis.F"] == "N" and r.units["time"] == "s"
    # Result conveniences.
    assert_bitwise(r["chassis.v_c"], r.trace["chassis.v_c"])
    assert r.summary["bonds"][0]["name"] == "chassis.F~wheel.v_c"
    assert r.energy is not None and r.steps is not None and len(r.steps) == 1000


def test_to_pandas() -> None:
    import pandas as pd  # in tests/python/requirements.txt: never skipped
    r = cosim.run(B1, stop=0.2)
    df = r.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == list(r.trace.dtype.names)
    assert_bitwise(df["wheel.F_c"].to_numpy(), r.trace["wheel.F_c"])
    assert len(r.to_pandas("energy")) == 200
    g = cosim.run("fmus/dist/fmi3/Greeting.fmu").to_pandas()
    assert g["Greeting.message"].iloc[0] == "Hello, world"


# ---------------------------------------------------------------- errors


def test_bad_scenario_raises_the_command_message(cosim_bin: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text((ROOT / B1).read_text().replace('kind = "fixed-step"', 'kind = "fixed-stepp"').replace("../fmus/", str(ROOT / "fmus") + "/"))
    p = cli(cosim_bin, "run", bad, "--no-progress")
    assert p.returncode == 2
    with pytest.raises(cosim.ScenarioError) as e:
        cosim.run(bad)
    assert str(e.value) == p.stderr.strip()
    assert f"{bad}:" in str(e.value) and "fixed-stepp" in str(e.value)
    # An unknown variable in set: file, argument and a suggestion.
    p = cli(cosim_bin, "run", B1, "--set", "chassis.m_cc=3", "--no-progress")
    with pytest.raises(cosim.ScenarioError) as e:
        cosim.run(B1, set={"chassis.m_cc": 3})
    assert str(e.value) == p.stderr.strip()
    assert "did you mean 'm_c'" in str(e.value)
    assert isinstance(e.value, cosim.CosimError)
    with pytest.raises(cosim.ScenarioError, match="this is a sweep file"):
        cosim.run("scenarios/sweeps/b1_a_cluster.toml")
    with pytest.raises(TypeError):
        cosim.run(42)  # type: ignore[arg-type]


def test_a_fresh_clone_names_the_command_that_builds_the_fmus(cosim_bin: Path, tmp_path: Path) -> None:
    """Issue 43, item 1: on a fresh clone (nothing built), a shipped
    scenario raises the command's message, which names the one command
    that builds the project's FMUs."""
    clone = tmp_path / "cosim"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    assert not (clone / "fmus" / "dist").exists()
    p = cli(cosim_bin, "run", clone / B1, "--no-progress")
    assert p.returncode == 2
    with pytest.raises(cosim.ScenarioError) as e:
        cosim.run(clone / B1)
    assert str(e.value) == p.stderr.strip()
    assert f"run `cargo xtask fmus` in {clone.resolve()}" in str(e.value)


def test_exceptions_are_shown_as_cosim_names(tmp_path: Path) -> None:
    """Issue 43, item 8: the exceptions are ``cosim.ScenarioError`` ... in
    their repr and in tracebacks, not ``_cosim.ScenarioError`` (the native
    module is an implementation detail), and they pickle as such."""
    import pickle

    for cls in (cosim.CosimError, cosim.ScenarioError, cosim.RunError, cosim.OutputInUseError):
        assert cls.__module__ == "cosim", cls
        assert repr(cls) == f"<class 'cosim.{cls.__name__}'>"
    with pytest.raises(cosim.ScenarioError) as e:
        cosim.run(tmp_path / "missing.toml")
    back = pickle.loads(pickle.dumps(e.value))
    assert type(back) is cosim.ScenarioError and str(back) == str(e.value)
    p = subprocess.run(
        [sys.executable, "-c", f"import cosim; cosim.run({str(tmp_path / 'missing.toml')!r})"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert p.returncode == 1
    last = [l for l in p.stderr.splitlines() if "ScenarioError" in l]
    assert last and last[-1].startswith("cosim.ScenarioError: "), p.stderr
    assert "_cosim.ScenarioError" not in p.stderr, p.stderr


def test_failed_run_raises_with_the_partial_result(cosim_bin: Path, tmp_path: Path) -> None:
    faulty = "fmus/dist/fmi2/Faulty.fmu"
    args = ["--set", "fail_at=0.5", "--set", "fail_mode=1"]
    p = cli(cosim_bin, "run", faulty, *args, "--out", tmp_path, "--no-progress")
    assert p.returncode == 1
    with pytest.warns(cosim.CosimWarning, match="keeps its start value"):
        with pytest.raises(cosim.RunError) as e:
            cosim.run(faulty, set={"fail_at": 0.5, "fail_mode": 1})
    msg = str(e.value)
    assert msg.startswith("error: FMU instance 'Faulty': fmi2DoStep returned Error at t = 0.49")
    assert msg in p.stderr
    result = e.value.result
    assert result.summary["status"] == "error"
    assert result.summary["t_reached"] == 0.49
    _, cols = read_cli_csv(tmp_path / "trace.csv")
    assert_bitwise(result.trace["time"], cols["time"])


# ---------------------------------------------------------------- Simulation


def test_simulation_steps_as_the_run(tmp_path: Path) -> None:
    r = cosim.run(B1, stop=1.0)
    names = ["chassis.v_c", "wheel.F_c", "wheel.z_w"]
    with cosim.Simulation(B1, stop=1.0) as sim:
        assert sim.stop_time == 1.0 and sim.time == 0.0 and sim.master == "fixed-step"
        rows = [[sim.get(n) for n in names]]
        times = [sim.time]
        while not sim.done:
            times.append(sim.step())
            rows.append([sim.get(n) for n in names])
        assert sim.macro_steps == 1000
        with pytest.raises(cosim.CosimError, match="stop time"):
            sim.step()
        energy = sim.energy
    got = np.array(rows)
    assert_bitwise(np.array(times), r.trace["time"], "time")
    for j, n in enumerate(names):
        assert_bitwise(got[:, j], r.trace[n], n)
    bond = r.summary["bonds"][0]
    assert energy == {bond["name"]: bond["cumulative_residual_energy"]}


def test_simulation_run_until_set_get() -> None:
    sim = cosim.Simulation(B1, stop=2.0)
    assert "chassis.v_c" in sim.names()
    sim.set("chassis.m_c", 500)
    assert sim.run_until(0.25) == 250 and sim.time == 0.25
    ref = cosim.run(B1, stop=2.0, set={"chassis.m_c": 500})
    default = cosim.run(B1, stop=2.0)
    assert_bitwise(np.array([sim["chassis.v_c"]]), ref.trace["chassis.v_c"][250:251])
    assert sim["chassis.v_c"] != default.trace["chassis.v_c"][250]
    assert sim.run_until(0.2505) == 1 and sim.time == 0.2505  # a shortened step
    n = sim.run_until(1.0)
    assert sim.time == 1.0 and 740 <= n <= 750
    with pytest.raises(cosim.CosimError, match="before the first step"):
        sim.set("chassis.m_c", 400)
    with pytest.raises(KeyError, match="did you mean 'chassis.v_c'"):
        sim.get("chassis.v_cc")
    with pytest.raises(cosim.CosimError, match="beyond the stop time"):
        sim.run_until(3.0)
    with pytest.raises(cosim.CosimError, match="before the current time"):
        sim.run_until(0.5)
    # A step to a time not after now is refused, and the simulation goes on.
    for t in (0.5, 1.0, float("nan"), 1.0 + 1e-12):
        with pytest.raises(cosim.CosimError, match="not after the current time"):
            sim.step(t)
    with pytest.raises(cosim.CosimError, match="is not a time"):
        sim.run_until(float("nan"))
    assert sim.time == 1.0 and sim.step() > 1.0
    sim.close()
    with pytest.raises(cosim.CosimError, match="ended"):
        sim.step()
    with pytest.raises(cosim.ScenarioError, match="no variable 'm_cc'"):
        cosim.Simulation(B1).set("chassis.m_cc", 1)


def test_simulation_error_and_fmu_termination() -> None:
    sim = cosim.Simulation("fmus/dist/fmi2/Faulty.fmu", set={"fail_at": 0.5, "fail_mode": 1})
    with pytest.raises(cosim.RunError, match="fmi2DoStep returned Error at t = 0.49"):
        sim.run_until(1.0)
    assert sim.time == 0.49 and sim.done
    with pytest.raises(cosim.CosimError, match="has ended"):
        sim.run_until(1.0)
    # An FMU that asks to terminate ends the simulation normally, as a run.
    r = cosim.run("fmus/dist/fmi2/Terminating.fmu", set={"t_end": 0.305})
    assert r.status == "terminated" and r.summary["t_reached"] == 0.305
    sim = cosim.Simulation("fmus/dist/fmi2/Terminating.fmu", set={"t_end": 0.305})
    sim.run_until(1.0)
    assert sim.time == 0.305 and sim.done and sim.macro_steps == r.summary["stats"]["macro_steps"]
    assert sim.get("Terminating.y") == r.trace["Terminating.y"][-1]
    with pytest.raises(cosim.CosimError, match="ended the simulation at t = 0.305"):
        sim.step()
    assert sim.ended == "subsystem 'Terminating' ended the simulation at t = 0.305 (fmi2DoStep asked to terminate)"


# ---------------------------------------------------------------- Ctrl-C, GIL

# (Each script installs Python's Ctrl-C handler itself: a process started
# in the background by a non-interactive shell inherits SIGINT ignored, and
# Python then installs none.)
SWEEP_INTERRUPT_SCRIPT = """
import signal, sys, cosim
signal.signal(signal.SIGINT, signal.default_int_handler)
print("ready", flush=True)
try:
    cosim.sweep(sys.argv[1], jobs=1, plot=False)
    print("completed")
except KeyboardInterrupt:
    print("interrupted")
"""


def test_ctrl_c_stops_a_sweep(tmp_path: Path) -> None:
    scenario = long_b1(tmp_path)
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        f"""[sweep]
scenario = "{scenario}"
out = "{tmp_path / 'out'}"
[[sweep.axes]]
key = "master.step"
values = [1e-3, 2e-3, 4e-3]
"""
    )
    p = subprocess.Popen(
        [sys.executable, "-c", SWEEP_INTERRUPT_SCRIPT, str(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
        time.sleep(1.0)
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
        p.wait()
    assert time.monotonic() - sent < 5, "Ctrl-C did not stop the sweep promptly"
    assert out.strip() == "interrupted", out + err
    # The summary lists every run as interrupted (issue 43, item 8).
    lines = (tmp_path / "out" / "summary.csv").read_text().splitlines()
    status = lines[0].split(",").index("status")
    assert [l.split(",")[status] for l in lines[1:]] == ["interrupted"] * 3, lines


INTERRUPT_SCRIPT = """
import signal, sys, cosim
signal.signal(signal.SIGINT, signal.default_int_handler)
target = sys.argv[1]
print("ready", flush=True)
if sys.argv[2] == "run":
    try:
        cosim.run(target)
    except cosim.Interrupted as e:
        s = e.result.summary
        print("interrupted", s["status"], s["t_reached"], e.result.trace["time"][-1], isinstance(e, KeyboardInterrupt))
        print(e)
else:
    sim = cosim.Simulation(target)
    try:
        sim.run_until(sim.stop_time)
    except KeyboardInterrupt:
        t = sim.time
        print("interrupted", t, sim.step() > t)
"""


@pytest.mark.parametrize("api", ["run", "simulation"])
def test_ctrl_c_stops_at_a_macro_step(tmp_path: Path, api: str) -> None:
    scenario = long_b1(tmp_path)
    p = subprocess.Popen(
        [sys.executable, "-c", INTERRUPT_SCRIPT, str(scenario), api],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
        time.sleep(1.0)
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
        p.wait()
    assert time.monotonic() - sent < 5, "Ctrl-C did not stop the run promptly"
    assert p.returncode == 0, err
    words = out.split()
    assert words[0] == "interrupted", out + err
    if api == "run":
        _, status, t, last_row, is_kbi = words[:5]
        assert status == "interrupted" and is_kbi == "True"
        assert 0.5 < float(t) < 1e5
        assert float(last_row) <= float(t)
        assert "interrupted by SIGINT at t = " in out and "FMUs terminated" in out
    else:
        _, t, went_on = words[:3]
        assert 0.5 < float(t) < 1e5 and went_on == "True"


@pytest.mark.parametrize("api", ["run", "simulation"])
def test_the_gil_is_released_while_stepping(tmp_path: Path, api: str) -> None:
    scenario = long_b1(tmp_path, stop=600.0)  # 600 000 macro steps

    def work() -> None:
        if api == "run":
            cosim.run(scenario)
        else:
            cosim.Simulation(scenario).run_until(600.0)

    t = threading.Thread(target=work)
    t.start()
    started = time.monotonic()
    last = started
    longest = 0.0
    count = 0
    while t.is_alive():
        now = time.monotonic()
        longest = max(longest, now - last)
        last = now
        count += 1
    t.join()
    elapsed = time.monotonic() - started
    assert elapsed > 0.2, f"the run took {elapsed} s, too short to tell"
    # Held GIL: this loop would stand still for the whole run.
    assert longest < 0.5 * elapsed, (longest, elapsed)
    assert count > 1000


# ---------------------------------------------------------------- sweep, inspect


def test_sweep_equals_the_cli(cosim_bin: Path, tmp_path: Path) -> None:
    spec = "scenarios/sweeps/b1_a_cluster.toml"
    p = cli(cosim_bin, "sweep", spec, "--out", tmp_path / "cli", "--no-progress", "-q", "--no-plot")
    assert p.returncode == 0, p.stderr
    s = cosim.sweep(spec, out=tmp_path / "py", plot=False)
    assert s.summary_path == tmp_path / "py" / "summary.csv"
    assert s.plot_path is None
    lines = (tmp_path / "cli" / "summary.csv").read_text().splitlines()
    assert ",".join(s.columns) == lines[0]
    assert s.columns[-1] == "wall_time_s"
    assert len(s) == len(lines) - 1 == 6
    cli_rows = [l.rsplit(",", 1)[0] for l in lines[1:]]
    py_rows = [l.rsplit(",", 1)[0] for l in s.summary_path.read_text().splitlines()[1:]]
    assert py_rows == cli_rows  # every cell but the wall time
    status = lines[0].split(",").index("status")
    cli_status = [l.split(",")[status] for l in lines[1:]]
    assert s.counts == {k: cli_status.count(k) for k in ("ok", "diverged", "error", "interrupted")}
    assert s.counts["diverged"] >= 1  # the file's step of 0.07 s is past the limit
    assert list(s.table["status"]) == [r[s.columns.index("status")] for r in s.rows]
    assert s.table["master.step"].dtype == np.float64
    assert sorted(set(s.table["master.step"])) == [2e-3, 0.01, 0.07]
    df = s.to_pandas()
    assert len(df) == 6
    # New instances every run instead of the reset ones: the same cells.
    fresh = cosim.sweep(spec, out=tmp_path / "fresh", plot=False, fresh_instances=True)
    fresh_rows = [l.rsplit(",", 1)[0] for l in fresh.summary_path.read_text().splitlines()[1:]]
    assert fresh_rows == cli_rows
    # `prune=True`: no file of a run, the same cells.
    pruned = cosim.sweep(spec, out=tmp_path / "pruned", plot=False, prune=True)
    pruned_rows = [l.rsplit(",", 1)[0] for l in pruned.summary_path.read_text().splitlines()[1:]]
    assert pruned_rows == cli_rows
    assert not any(p.is_file() for p in (tmp_path / "pruned" / "runs").rglob("*"))
    # A shard.
    shard = cosim.sweep(spec, shard="2/3", out=tmp_path / "py", plot=False)
    assert len(shard) == 2 and shard.summary_path.name == "summary.shard-2-of-3.csv"
    with pytest.raises(cosim.ScenarioError, match="not a shard"):
        cosim.sweep(spec, shard="4/3")


def faulty_sweep(tmp_path: Path, modes: str, fail_at: str) -> Path:
    """A sweep of a Faulty integrator (FMI 2) fed back through a Gain, 1 s
    in steps of 0.01 s, zipping ``fail_mode`` with ``fail_at``."""
    fmus = ROOT / "fmus" / "dist" / "fmi2"
    scenario = tmp_path / "faulty.toml"
    scenario.write_text(
        f"""[simulation]
stop = 1.0
[master]
step = 0.01
[[subsystems]]
name = "faulty"
fmu = "{fmus / 'Faulty.fmu'}"
parameters = {{ fail_mode = 1, fail_at = -1.0, x0 = 1.0 }}
[[subsystems]]
name = "gain"
fmu = "{fmus / 'Gain.fmu'}"
parameters = {{ k = -0.5 }}
[[connections]]
from = "faulty.x"
to = "gain.u"
[[connections]]
from = "gain.y"
to = "faulty.u"
"""
    )
    spec = tmp_path / "faulty_sweep.toml"
    spec.write_text(
        f"""[sweep]
scenario = "{scenario}"
combine = "zip"
[[sweep.axes]]
key = "faulty.fail_mode"
values = [{modes}]
[[sweep.axes]]
key = "faulty.fail_at"
values = [{fail_at}]
"""
    )
    return spec


def test_sweep_survives_runs_that_end_their_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An FMU that calls exit(), segfaults or aborts in a run of
    ``cosim.sweep`` used to end the Python process; each run now goes to a
    worker process, and such a run is a ``crashed`` row."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    spec = faulty_sweep(tmp_path, "1, 9, 4, 5, 1", "-1.0, 0.305, 0.305, 0.305, -1.0")
    s = cosim.sweep(spec, out=tmp_path / "out", jobs=2, plot=False)
    status = list(s.table["status"])
    assert status == ["ok", "crashed", "crashed", "crashed", "ok"], s.rows
    message = list(s.table["message"])
    assert "called exit()" in message[1]
    assert "segmentation fault (SIGSEGV)" in message[2]
    assert "aborted (SIGABRT)" in message[3]
    assert s.counts == {"ok": 2, "diverged": 0, "error": 3, "interrupted": 0}
    # exit(): every completed row, t = 0 .. 0.3.
    run = tmp_path / "out" / "runs" / s.rows[1][s.columns.index("run")]
    lines = (run / "trace.csv").read_text().splitlines()
    assert len(lines) == 1 + 31
    assert json.loads((run / "summary.json").read_text())["status"] == "error"
    assert [p.name for p in tmp.iterdir() if p.name.startswith("cosim-fmu-")] == []


def test_an_output_directory_in_use_raises_output_in_use(cosim_bin: Path, tmp_path: Path) -> None:
    """A run or sweep into the output directory of a run in progress is
    refused with ``OutputInUseError`` (a ``ScenarioError``: nothing was
    written), naming the directory and the holder's process id."""
    out = tmp_path / "out"
    p = subprocess.Popen(
        [str(cosim_bin), "run", str(long_b1(tmp_path)), "--real-time", "1", "--no-progress", "--out", str(out)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (out / "trace.csv").exists():
            assert p.poll() is None, p.communicate()[1]
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(0.02)
        spec = faulty_sweep(tmp_path, "1", "-1.0")
        for call in (lambda: cosim.run(B1, stop=0.01, out=out), lambda: cosim.sweep(spec, out=out)):
            with pytest.raises(cosim.OutputInUseError) as e:
                call()
            assert isinstance(e.value, cosim.ScenarioError)
            assert e.value.pid == p.pid
            assert Path(e.value.path) == out
            assert f"{out}: the output directory is in use by another cosim run (process id {p.pid})" in str(e.value)
        assert p.poll() is None
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=60) == 130
        assert json.loads((out / "summary.json").read_text())["status"] == "interrupted"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_inspect_equals_the_cli_json(cosim_bin: Path) -> None:
    for fmu in ("fmus/dist/fmi2/QuarterCarChassis.fmu", "fmus/dist/fmi3/Greeting.fmu"):
        p = cli(cosim_bin, "inspect", fmu, "--json")
        assert p.returncode == 0, p.stderr
        assert cosim.inspect(fmu) == json.loads(p.stdout)
        assert cosim.inspect(Path(fmu))["identity"]["model_name"] in fmu
    p = cli(cosim_bin, "inspect", "fmus/dist/quirks", "--json")
    assert cosim.inspect("fmus/dist/quirks") == json.loads(p.stdout)
    with pytest.raises(cosim.ScenarioError, match="no-such.fmu"):
        cosim.inspect("no-such.fmu")


# ---------------------------------------------------------------- packaging, example


def test_fresh_venv_pip_install_of_the_wheel(tmp_path: Path) -> None:
    """The issue's "Must show": pip install of the built wheel into a fresh
    venv, then the one-liner."""
    wheel = os.environ.get("COSIM_WHEEL")
    if not wheel:
        pytest.fail("COSIM_WHEEL is not set: run `cargo xtask test-python` (it builds the wheel)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_USER"] = "0"
    subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel],
        check=True,
        env=env,
    )
    out = subprocess.run(
        [
            str(py),
            "-c",
            "import cosim; print(cosim.run('scenarios/b1_quarter_car_a.toml').summary['status'])",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "completed\n"
    # It is the wheel's package, not the tree's.
    where = subprocess.run(
        [str(py), "-c", "import cosim; print(cosim.__file__)"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert where.stdout.startswith(str(venv)), where.stdout


def test_typing_files_are_in_the_package() -> None:
    pkg = Path(cosim.__file__).parent
    assert (pkg / "py.typed").exists() and (pkg / "_cosim.pyi").exists()
    for name in cosim.__all__:
        assert getattr(cosim, name).__doc__, name


def test_the_notebook_example_runs(tmp_path: Path) -> None:
    env = dict(os.environ, MPLBACKEND="Agg", COSIM_EXAMPLE_OUT=str(tmp_path))
    p = subprocess.run(
        [sys.executable, "examples/python/quarter_car.py"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "status: completed" in p.stdout
    assert "residual energy at 1 ms: 6.349 J" in p.stdout


def test_the_overhead_script_runs(cosim_bin: Path) -> None:
    """docs/performance.md's figures come from this script: it runs."""
    p = subprocess.run(
        [sys.executable, "examples/python/step_overhead.py", "--stop", "1", "--repeats", "1", "--cosim", str(cosim_bin)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2000 FMU steps per run" in p.stdout
    rows = [l for l in p.stdout.splitlines() if l.endswith("us per FMU step")]
    assert len(rows) == 9
    per_step = float(rows[3].split(":")[1].split()[0])  # the step() loop
    assert 0 < per_step < 100


def test_a_simulation_used_from_two_threads_refuses_instead_of_deadlocking(tmp_path: Path) -> None:
    sim = cosim.Simulation(long_b1(tmp_path, stop=600.0))
    t = threading.Thread(target=lambda: sim.run_until(600.0))
    t.start()
    time.sleep(0.05)
    with pytest.raises(RuntimeError, match="in use by another thread"):
        sim.step()
    t.join()
    assert sim.time == 600.0


def _leftovers(tmp: Path) -> List[str]:
    return sorted(
        n for n in os.listdir(tmp) if n.startswith(("cosim-run-", "cosim-fmu-", "cosim-owner-"))
    )


def _python_in(tmp: Path, script: str, *args: str) -> subprocess.Popen:
    """`python -c script args` with its temporary directory in `tmp`."""
    env = dict(os.environ, TMPDIR=str(tmp))
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )


RUN_SCRIPT = """
import sys, cosim
fmu, mode = sys.argv[1], sys.argv[2]
cosim.run(fmu, stop=1.0, set={"fail_mode": int(mode), "fail_at": 0.5} if mode != "0" else None)
print("done", flush=True)
"""


def test_a_run_killed_by_its_fmu_leaves_nothing_the_next_run_does_not_remove(tmp_path: Path) -> None:
    """An FMU's segfault kills the interpreter inside `cosim.run`: its
    temporary output directory (and the FMU's extraction) stay behind. The
    next run of any process of the user removes them; a run still going
    keeps its own."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    faulty = str(ROOT / "fmus" / "dist" / "fmi2" / "Faulty.fmu")
    crashed = _python_in(tmp, RUN_SCRIPT, faulty, "4")
    out, err = crashed.communicate(timeout=120)
    assert crashed.returncode == -signal.SIGSEGV, out + err
    left = _leftovers(tmp)
    assert any(n.startswith("cosim-run-") and not n.endswith((".lock", ".locking")) for n in left), left
    # A run still going: its directory is locked.
    live = _python_in(tmp, INTERRUPT_SCRIPT, str(long_b1(tmp_path)), "run")
    try:
        _the_next_run_removes_what_the_killed_one_left(tmp, left, live)
    finally:
        live.kill()
        live.wait()


def _the_next_run_removes_what_the_killed_one_left(
    tmp: Path, left: List[str], live: subprocess.Popen
) -> None:
    assert live.stdout is not None and live.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 60
    # (Its output directory, then the extractions of its two FMUs, named
    # after its process's extraction lock.)
    def started() -> bool:
        new = [n for n in _leftovers(tmp) if n not in left]
        fmus = [n for n in new if n.startswith("cosim-fmu-")]
        return (
            len(fmus) == 2
            and any(n.startswith("cosim-owner-") for n in new)
            and any(n.startswith("cosim-run-") for n in new)
        )

    while not started():
        assert time.monotonic() < deadline, _leftovers(tmp)
        time.sleep(0.05)
    of_live = [n for n in _leftovers(tmp) if n not in left]
    gain = str(ROOT / "fmus" / "dist" / "fmi2" / "Gain.fmu")
    nxt = _python_in(tmp, RUN_SCRIPT, gain, "0")
    out, err = nxt.communicate(timeout=120)
    assert nxt.returncode == 0 and out.strip() == "done", out + err
    assert _leftovers(tmp) == of_live
    live.send_signal(signal.SIGINT)
    out, err = live.communicate(timeout=60)
    assert "interrupted" in out, out + err
    assert _leftovers(tmp) == []


def test_sweep_jobs_have_the_limit_of_threads(tmp_path: Path) -> None:
    with pytest.raises(cosim.ScenarioError, match="jobs must be between 0 and 1024, not 99999"):
        cosim.sweep("scenarios/sweeps/b1_a_cluster.toml", out=tmp_path, jobs=99999, plot=False)
