"""Fixtures of the Python package's tests (`cargo xtask test` runs them
with the wheel it built installed into .venv/; `COSIM_BIN` is the cosim
binary the results are compared with, `COSIM_WHEEL` the wheel)."""

from __future__ import annotations

import csv
import os
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs in the workspace root (the scenarios' paths)."""
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="session")
def cosim_bin() -> Path:
    path = Path(os.environ.get("COSIM_BIN", ROOT / "target" / "release" / "cosim"))
    if not path.exists():
        pytest.fail(f"no cosim binary at {path}: run `cargo xtask test-python` (it builds it)")
    return path


@pytest.fixture(scope="session", autouse=True)
def _fmus() -> None:
    if not (ROOT / "fmus" / "dist" / ".stamp").exists():
        subprocess.run(["cargo", "xtask", "fmus"], cwd=ROOT, check=True)


def cli(cosim_bin: Path, *args: object) -> subprocess.CompletedProcess:
    """`cosim ARGS` in the workspace root."""
    return subprocess.run(
        [str(cosim_bin), *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def read_cli_csv(path: Path) -> Tuple[List[str], Dict[str, np.ndarray]]:
    """A CSV the command wrote, parsed here with Python's own float() (not
    the package's reader): the headers without units, and the columns
    (float64 where every cell is a number, else str)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    headers = [h[: h.rindex(" [")] if h.endswith("]") and " [" in h else h for h in rows[0]]
    cols: Dict[str, np.ndarray] = {}
    for j, h in enumerate(headers):
        cells = [r[j] for r in rows[1:]]
        try:
            cols[h] = np.array([float(c) for c in cells], dtype=np.float64)
        except ValueError:
            cols[h] = np.array(cells, dtype=str)
    return headers, cols


def assert_bitwise(a: np.ndarray, b: np.ndarray, what: str = "") -> None:
    """Equal bit for bit (so -0.0 differs from 0.0 and NaN equals NaN)."""
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    assert a.shape == b.shape, f"{what}: shapes {a.shape} != {b.shape}"
    if a.dtype.kind == "f":
        assert b.dtype.kind == "f", f"{what}: {b.dtype} is not float"
        diff = np.nonzero(a.view(np.uint64) != b.view(np.uint64))[0]
        assert diff.size == 0, f"{what}: first difference at row {diff[0]}: {a[diff[0]]!r} != {b[diff[0]]!r}"
    else:
        assert (a == b).all(), what
