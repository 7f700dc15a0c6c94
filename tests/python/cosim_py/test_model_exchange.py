"""Model Exchange FMUs from Python: `cosim.run` and `cosim.Simulation`
take `interface`, `solver` and `relative_tolerance` as `cosim run` takes
`--interface`, `--solver` and `--relative-tolerance`; the solver's figures
(`Result.solver`, `Simulation.solver`); the kit's Model Exchange FMUs
against their references and against the command, bit for bit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import cosim

from conftest import ROOT, assert_bitwise, cli, read_cli_csv

ME = "fmus/dist/me/{version}/{model}.fmu"
CHASSIS = "fmus/dist/{version}/QuarterCarChassis.fmu"


def time_events_x(t: np.ndarray, period: float = 0.25) -> np.ndarray:
    """TimeEvents' x: with n = floor(t / period), period n (n - 1) / 2 +
    n (t - period n) (the integral of the staircase y = n)."""
    n = np.floor(t / period + 1e-12)
    return period * n * (n - 1) / 2 + n * (t - period * n)


@pytest.mark.parametrize("version", ["fmi2", "fmi3"])
def test_a_model_exchange_only_fmu_runs_to_its_reference(version: str) -> None:
    fmu = ME.format(version=version, model="TimeEvents")
    r = cosim.run(fmu)
    assert r.status == "completed"
    t = r.trace["time"]
    assert t[-1] == 2.0 and len(t) == 201
    np.testing.assert_allclose(r.trace["TimeEvents.x"], time_events_x(t), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(r.trace["TimeEvents.y"], np.floor(t / 0.25 + 1e-12))
    # The solver's figures, by subsystem: a time event at each step of
    # the staircase (0.25 ... 2 s).
    assert list(r.solver) == ["TimeEvents"]
    figures = r.solver["TimeEvents"]
    assert figures["events"]["time_events"] == 8
    assert figures["events"]["state_events"] == 0
    assert figures["steps"] > 0 and figures["derivative_evaluations"] >= figures["steps"]
    assert figures == r.summary["subsystems"][0]["calls"]["solver"]


@pytest.mark.parametrize("version", ["fmi2", "fmi3"])
def test_solver_and_tolerance_as_the_command_line(cosim_bin: Path, tmp_path: Path, version: str) -> None:
    fmu = ME.format(version=version, model="BouncingBallME")
    options = ["--solver", "rk45", "--relative-tolerance", "1e-8"]
    p = cli(cosim_bin, "run", fmu, "--out", tmp_path, "--no-progress", "-q", *options)
    assert p.returncode == 0, p.stderr
    r = cosim.run(fmu, solver="rk45", relative_tolerance=1e-8)
    headers, cols = read_cli_csv(tmp_path / "trace.csv")
    assert list(r.trace.dtype.names) == headers
    for h in headers:
        assert_bitwise(r.trace[h], cols[h], h)
    cli_summary = json.loads((tmp_path / "summary.json").read_text())
    assert r.solver == {"BouncingBallME": cli_summary["subsystems"][0]["calls"]["solver"]}
    # The ball's contacts are state events, found by the solver.
    contacts = int(r.trace["BouncingBallME.contacts"][-1])
    assert contacts >= 3
    assert r.solver["BouncingBallME"]["events"]["state_events"] >= contacts
    # The first contact: h0 = 1 m, g = 9.81 m/s2, at t = sqrt(2 / 9.81).
    t, h = r.trace["time"], r.trace["BouncingBallME.h"]
    before = t < np.sqrt(2 / 9.81)
    np.testing.assert_allclose(h[before], 1 - 9.81 * t[before] ** 2 / 2, rtol=0, atol=1e-6)
    # The default (BDF, 1e-5) is another run: another step count.
    default = cosim.run(fmu)
    assert default.solver["BouncingBallME"]["steps"] != r.solver["BouncingBallME"]["steps"]


@pytest.mark.parametrize("version", ["fmi2", "fmi3"])
def test_interface_me_of_an_fmu_with_both(cosim_bin: Path, tmp_path: Path, version: str) -> None:
    fmu = CHASSIS.format(version=version)
    options = dict(stop=1.0, set={"F": 100.0})
    cs = cosim.run(fmu, **options)
    me = cosim.run(fmu, interface="me", **options)
    named = cosim.run(fmu, interface="model-exchange", **options)
    # Co-Simulation by default: no solver of cosim's.
    assert cs.solver == {}
    assert list(me.solver) == ["QuarterCarChassis"]
    assert_bitwise(named.trace["QuarterCarChassis.v_c"], me.trace["QuarterCarChassis.v_c"])
    # A constant force: v_c = F / m_c t through either interface.
    for r in (cs, me):
        t = r.trace["time"]
        np.testing.assert_allclose(r.trace["QuarterCarChassis.v_c"], 0.25 * t, rtol=0, atol=1e-9)
    assert cosim.run(fmu, interface="cs", **options).solver == {}
    # As the command does it.
    args = ["--interface", "me", "--stop", "1", "--set", "F=100"]
    p = cli(cosim_bin, "run", fmu, "--out", tmp_path, "--no-progress", "-q", *args)
    assert p.returncode == 0, p.stderr
    _, cols = read_cli_csv(tmp_path / "trace.csv")
    assert_bitwise(me.trace["QuarterCarChassis.v_c"], cols["QuarterCarChassis.v_c"])


def test_simulation_takes_the_interface_and_solver(tmp_path: Path) -> None:
    fmu = ME.format(version="fmi3", model="TimeEvents")
    options = dict(solver="rk45", relative_tolerance=1e-7)
    r = cosim.run(fmu, **options)
    with cosim.Simulation(fmu, **options) as sim:
        assert sim.solver["TimeEvents"]["steps"] == 0
        values = []
        while not sim.done:
            sim.step()
            values.append(sim.get("TimeEvents.x"))
        # Step by step, the run's values and solver figures.
        assert_bitwise(np.array(values), r.trace["TimeEvents.x"][1:], "x")
        assert sim.solver == r.solver
    # set() keeps the options (the FMUs are made again).
    with cosim.Simulation(CHASSIS.format(version="fmi2"), interface="me", stop=0.5) as sim:
        sim.set("F", 400.0)
        sim.run_until(0.5)
        assert sim.get("QuarterCarChassis.v_c") == pytest.approx(0.5, abs=1e-9)
        assert list(sim.solver) == ["QuarterCarChassis"]
    with cosim.Simulation(CHASSIS.format(version="fmi2"), stop=0.5) as sim:
        sim.run_until(0.5)
        assert sim.solver == {}


def test_bad_interface_and_solver_options_are_refused() -> None:
    fmu = ME.format(version="fmi2", model="TimeEvents")
    with pytest.raises(cosim.ScenarioError, match='interface must be "cs" .* or "me" .*not "model exchange"'):
        cosim.run(fmu, interface="model exchange")
    with pytest.raises(cosim.ScenarioError, match='solver must be "bdf" or "rk45", not "euler"'):
        cosim.Simulation(fmu, solver="euler")
    with pytest.raises(cosim.ScenarioError, match=r"--relative-tolerance 0.*must be in \(0, 1\), not 0"):
        cosim.run(fmu, relative_tolerance=0)
    with pytest.raises(TypeError, match="relative_tolerance must be a number"):
        cosim.run(fmu, relative_tolerance="1e-5")  # type: ignore[arg-type]
    # The interface an FMU does not have: the command's message.
    with pytest.raises(cosim.ScenarioError, match="which the FMU does not declare \\(it declares <ModelExchange> only\\)"):
        cosim.run(fmu, interface="cs")
    with pytest.raises(cosim.ScenarioError, match="which the FMU does not declare \\(it declares <CoSimulation> only\\)"):
        cosim.Simulation("fmus/dist/fmi2/Gain.fmu", interface="me")


def test_inspect_shows_the_model_exchange_interface() -> None:
    info = cosim.inspect(ME.format(version="fmi3", model="Robertson"))
    assert info["runs_as"]["interface"] == "model-exchange"
    assert info["runs_as"]["model_exchange_solver"] == {
        "method": "bdf",
        "relative_tolerance": 1e-5,
        "relative_tolerance_from": "cosim's default; the FMU's DefaultExperiment gives no tolerance",
    }
    states = info["model_exchange_interface"]["continuous_states"]
    assert [(s["state"], s["derivative"], s["nominal"]) for s in states] == [
        ("y1", "der(y1)", 1.0),
        ("y2", "der(y2)", 1e-5),
        ("y3", "der(y3)", 1.0),
    ]
    both = cosim.inspect(CHASSIS.format(version="fmi3"))
    assert both["runs_as"]["interface"] == "co-simulation"
    assert both["runs_as"]["other"] == "--interface me"


def test_the_model_exchange_example_of_the_docs_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/python.md's Model Exchange example, as it is written there."""
    doc = (ROOT / "docs" / "python.md").read_text()
    start = doc.index("A Model Exchange FMU (the kit's time events")
    block = doc[doc.index("```python\n", start) + len("```python\n") :]
    block = block[: block.index("```")]
    scope: dict = {"cosim": cosim}
    exec(compile(block, "docs/python.md", "exec"), scope)
    assert list(scope["me"].solver) == ["QuarterCarChassis"]
    steps, time_events = capsys.readouterr().out.split()
    assert int(steps) > 0 and int(time_events) == 8
