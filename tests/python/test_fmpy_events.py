"""FMI 3 event mode in Co-Simulation (docs/events.md): `cosim run` of the
kit's event-mode FMUs against FMPy's own event-mode loop
(`simulate_fmu(use_event_mode=True, early_return_allowed=True)`, the call
sequence of the Reference FMUs' cs_event_mode.c), row for row.

FMPy writes two rows at an event (before and after it); cosim writes the
one after, so FMPy's last row of each time is compared. FMPy's grid times
are sums of the step (0.30000000000000004), cosim's exact (0.3), and the
rows' times agree within 1e-9 s (cosim's 1 ns grid); an event's values
are the FMU's at the event's exact time in both.

`.venv/bin/python -m pytest tests/python/test_fmpy_events.py -q` (the
cosim binary and fmus/dist as for test_fmpy_model_exchange.py, whose
helpers this uses).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from test_fmpy_model_exchange import cosim_bin, fmu, last_per_time, run_cosim  # noqa: F401 (a fixture)


def fmpy_event_mode(path: Path, **kw) -> np.ndarray:
    from fmpy import simulate_fmu

    return simulate_fmu(str(path), validate=False, use_event_mode=True, early_return_allowed=True, **kw)


def assert_rows_equal(cosim: dict, fmpy: np.ndarray, columns, band: float) -> None:
    fmpy = last_per_time(fmpy)
    t = cosim["time"]
    assert len(t) == len(fmpy), f"rows: cosim {t}, FMPy {fmpy['time']}"
    assert np.max(np.abs(t - fmpy["time"])) <= 1e-9, (t, fmpy["time"])
    for name in columns:
        err = np.max(np.abs(cosim[name] - np.asarray(fmpy[name], dtype=np.float64)))
        assert err <= band, f"{name}: max |cosim - FMPy| = {err:.3e}"


def test_ballistic_bounces_land_on_the_rows_fmpy_has(cosim_bin: Path, tmp_path: Path) -> None:
    path = fmu("fmi3", "Ballistic.fmu")
    run = run_cosim(cosim_bin, tmp_path / "ball", path, "--stop", 1.5, "--step", 0.1)
    r = fmpy_event_mode(path, stop_time=1.5, output_interval=0.1, output=["h", "v", "bounces"])
    # (Two bounces before 1.5 s: 15 grid rows, the start and two events.)
    assert len(run.trace["time"]) == 18, run.trace["time"]
    assert_rows_equal(run.trace, r, ["h", "v", "bounces"], 1e-12)
    bounce = run.trace["time"][np.argmax(run.trace["bounces"] == 1)]
    assert abs(bounce - np.sqrt(2 * 1.0 / 9.81)) <= 5e-10, bounce
    assert "earlyReturnAllowed=1" in run.calls.read_text()


def test_ticker_time_events_land_on_the_rows_fmpy_has(cosim_bin: Path, tmp_path: Path) -> None:
    path = fmu("fmi3", "Ticker.fmu")
    run = run_cosim(cosim_bin, tmp_path / "tick", path, "--stop", 1.5, "--step", 0.1)
    r = fmpy_event_mode(path, stop_time=1.5, output_interval=0.1, output=["count", "last"])
    assert_rows_equal(run.trace, r, ["count", "last"], 0.0)
    for k in range(1, 5):
        assert np.any(np.abs(run.trace["time"] - k * 0.35) <= 1e-9), (k, run.trace["time"])
