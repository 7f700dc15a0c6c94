"""cosim: co-simulation of FMI 2.0 / 3.0 FMUs from Python.

The engine of the ``cosim`` command runs in this process (a native
extension, not a subprocess): the same scenario files, SSP/OSP files and
single FMUs, the same masters, the same output files, the same error
messages.

>>> import cosim
>>> r = cosim.run("scenarios/b1_quarter_car_a.toml")       # doctest: +SKIP
>>> r.summary["status"], r.trace["chassis.v_c"][-1]         # doctest: +SKIP

- :func:`run`: a whole run; a :class:`Result` with the trace, energy log
  and step log as NumPy structured arrays and the summary as a dict.
- :class:`Simulation`: step-wise control (``step``, ``run_until``, ``get``,
  ``set``, ``time``).
- :func:`sweep`: a sweep file; a :class:`Sweep` with the summary table.
- :func:`inspect`: what ``cosim inspect --json`` prints, as a dict.

Errors are exceptions carrying the messages the command prints:
:class:`ScenarioError` for bad input (the command's exit status 2;
:class:`OutputInUseError`, one of them, for an output directory another
run or sweep is writing into),
:class:`RunError` for a run that failed (exit status 1, with the partial
result), :class:`Interrupted` (a ``KeyboardInterrupt``) for Ctrl-C, which
stops a run at the next macro step as on the command line. The GIL is
released while the engine steps.

See ``docs/python.md``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _cosim
from ._cosim import CosimError, OutputInUseError, RunError, ScenarioError

__version__: str = _cosim.__version__

__all__ = [
    "CosimError",
    "CosimWarning",
    "Interrupted",
    "OutputInUseError",
    "Result",
    "RunError",
    "ScenarioError",
    "Simulation",
    "Sweep",
    "inspect",
    "run",
    "sweep",
]

#: A path: ``str`` or ``os.PathLike``.
PathLike = Union[str, "os.PathLike[str]"]
#: A value for ``set``: a number, a Boolean or a string.
Value = Union[float, int, bool, str]
#: The ``set`` argument: ``{"chassis.m_c": 500}`` or ``["chassis.m_c=500"]``.
Assignments = Union[Mapping[str, Value], Sequence[str], None]
#: The ``interface`` argument: ``"cs"`` (Co-Simulation) or ``"me"`` (Model
#: Exchange, integrated by cosim's solver); the scenario's names
#: ``"co-simulation"`` and ``"model-exchange"`` too.
Interface = Optional[str]


class CosimWarning(UserWarning):
    """A warning of the scenario (what ``cosim run`` prints as ``warning:``)."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped a run at a macro step: the FMUs were
    terminated and the outputs hold every completed step, as with ``cosim
    run``. ``result`` holds them (``result.summary["status"]`` is
    ``"interrupted"``)."""

    def __init__(self, message: str, result: Optional["Result"] = None) -> None:
        super().__init__(message)
        self.result = result


def _target(path_or_toml: Union[PathLike, str]) -> Tuple[str, bool]:
    """(target, is_text): a ``str`` is scenario text when it has a newline,
    or an ``=`` or ``[`` and names no existing file; otherwise a path."""
    if isinstance(path_or_toml, os.PathLike):
        return os.fspath(path_or_toml), False
    if not isinstance(path_or_toml, str):
        raise TypeError(
            f"expected a path or scenario text (str), not {type(path_or_toml).__name__}"
        )
    s = path_or_toml
    if "\n" in s or (("=" in s or "[" in s) and not os.path.exists(s)):
        return s, True
    return s, False


def _format_value(v: Value) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _assignments(set: Assignments) -> List[str]:
    if set is None:
        return []
    if isinstance(set, str):
        return [set]
    if isinstance(set, Mapping):
        return [f"{k}={_format_value(v)}" for k, v in set.items()]
    return [str(a) for a in set]


def _split_header(h: str) -> Tuple[str, str]:
    """``"chassis.F [N]"`` -> (``"chassis.F"``, ``"N"``)."""
    if h.endswith("]") and " [" in h:
        name, unit = h[:-1].rsplit(" [", 1)
        return name, unit
    return h, ""


def _read_table(path: PathLike) -> Tuple[np.ndarray, Dict[str, str]]:
    """A CSV cosim wrote as a structured array (float64 fields for numeric
    columns, str for the others) and the units by field."""
    columns = _cosim.read_csv(os.fspath(path))
    names: List[str] = []
    units: Dict[str, str] = {}
    data: List[np.ndarray] = []
    for header, values in columns:
        name, unit = _split_header(header)
        names.append(name)
        units[name] = unit
        if isinstance(values, bytes):
            data.append(np.frombuffer(values, dtype=np.float64))
        else:
            data.append(np.array(values, dtype=str))
    n = len(data[0]) if data else 0
    dtype = np.dtype([(name, col.dtype) for name, col in zip(names, data)])
    table = np.empty(n, dtype=dtype)
    for name, col in zip(names, data):
        table[name] = col
    return table, units


def _frame(table: Optional[np.ndarray]) -> Any:
    try:
        import pandas as pd
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("to_pandas() needs pandas: pip install pandas") from e
    if table is None:
        return None
    return pd.DataFrame({name: table[name] for name in table.dtype.names or ()})


class Result:
    """What a run produced.

    Attributes:
        trace: the trace (``trace.csv``) as a NumPy structured array, one
            field per column (``"time"``, ``"chassis.v_c"``, ...); float64
            for numbers (integers and Booleans too, as in the CSV), str for
            String variables. ``None`` when the scenario writes no trace.
        energy: the per-bond energy log (``energy.csv``), or ``None``.
        steps: the per-step log (``steps.csv``: step sizes, indicators), or
            ``None``.
        summary: the run summary (``summary.json``) as a dict: ``status``
            (``"completed"``, ``"terminated"``, ``"error"``,
            ``"interrupted"``), ``t_reached``, ``stats``, ``bonds``, ...
        units: the unit of each field of ``trace``, ``energy`` and
            ``steps`` (``""`` when none).
        out: the output directory, when the files were kept (``out=``).
        warnings: the scenario's warnings.
    """

    def __init__(
        self,
        summary: Dict[str, Any],
        trace: Optional[np.ndarray] = None,
        energy: Optional[np.ndarray] = None,
        steps: Optional[np.ndarray] = None,
        units: Optional[Dict[str, str]] = None,
        out: Optional[Path] = None,
        warnings: Optional[List[str]] = None,
    ) -> None:
        self.summary = summary
        self.trace = trace
        self.energy = energy
        self.steps = steps
        self.units = units or {}
        self.out = out
        self.warnings = warnings or []

    @property
    def status(self) -> str:
        """``summary["status"]``."""
        return str(self.summary.get("status"))

    @property
    def solver(self) -> Dict[str, Dict[str, Any]]:
        """The figures of the solver of each Model Exchange subsystem, by
        subsystem name (``summary["subsystems"][i]["calls"]["solver"]``:
        ``steps``, ``rejected_steps``, ``derivative_evaluations``,
        ``jacobian_evaluations``, ``event_indicator_evaluations``,
        ``root_finding_iterations``, and ``events``: ``time_events``,
        ``state_events``, ``step_events``, ``input_events``,
        ``event_iterations``, ``restarts``). Co-Simulation subsystems are
        not in it."""
        out: Dict[str, Dict[str, Any]] = {}
        for sub in self.summary.get("subsystems") or []:
            figures = (sub.get("calls") or {}).get("solver")
            if figures is not None:
                out[str(sub.get("name"))] = figures
        return out

    def __getitem__(self, name: str) -> np.ndarray:
        """A column of the trace: ``result["chassis.v_c"]``."""
        if self.trace is None:
            raise KeyError(f"{name}: this run wrote no trace")
        return self.trace[name]

    def to_pandas(self, table: str = "trace") -> Any:
        """The trace (or ``"energy"``, ``"steps"``) as a pandas DataFrame
        (pandas is optional: ImportError without it)."""
        if table not in ("trace", "energy", "steps"):
            raise ValueError(f"table must be 'trace', 'energy' or 'steps', not {table!r}")
        return _frame(getattr(self, table))

    def __repr__(self) -> str:
        rows = 0 if self.trace is None else len(self.trace)
        return (
            f"<cosim.Result status={self.status!r} t_reached={self.summary.get('t_reached')} "
            f"trace rows={rows}>"
        )


def _result_of(d: Dict[str, Any], keep: bool) -> Result:
    units: Dict[str, str] = {}
    tables: Dict[str, Optional[np.ndarray]] = {}
    for key in ("trace", "energy", "steps"):
        path = d.get(key)
        if path is not None and os.path.exists(path):
            table, u = _read_table(path)
            tables[key] = table
            units.update(u)
        else:
            tables[key] = None
    return Result(
        summary=json.loads(d["summary"]),
        trace=tables["trace"],
        energy=tables["energy"],
        steps=tables["steps"],
        units=units,
        out=Path(d["out_dir"]) if keep else None,
        warnings=list(d["warnings"]),
    )


#: The temporary output directories of :func:`run` (``out=None``).
_RUN_PREFIX = "cosim-run-"

#: How long a ``.locking`` file may be on its way to its name before a
#: sweep takes it for a leftover (as the extraction directories').
_LOCKING_GRACE_S = 60.0

_swept = False


class _RunDir:
    """A temporary output directory of :func:`run`, locked while in use.

    An interpreter killed by an FMU (a segfault, ``abort()``) removes
    nothing. As with the extraction directories of the FMUs
    (``crates/cosim-fmi/src/extraction.rs``), the directory has a lock file
    beside it, ``cosim-run-XXXX.lock``, locked (``flock``, exclusive) for as
    long as it is in use: the kernel releases the lock when the process
    ends, however it ends. The first run of a process removes every such
    directory of the same user whose lock it can take: their owner is
    gone. The lock file appears under its name only once locked (created
    as ``.locking``, locked, then renamed), so a directory being made is
    never taken for a stale one.
    """

    def __init__(self) -> None:
        global _swept
        self.path = tempfile.mkdtemp(prefix=_RUN_PREFIX)
        self._fd: Optional[int] = None
        self._lock_path = self.path + ".lock"
        try:
            self._fd = _locked(self.path)
        except OSError:
            # A file system without locks: no lock, and no sweep takes it.
            self._fd = None
        if not _swept:
            _swept = True
            _sweep_stale_runs(os.path.dirname(self.path))

    def remove(self) -> None:
        """Removes the directory, then its lock file, then releases it."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd is not None:
            try:
                os.remove(self._lock_path)
            except OSError:
                pass
            os.close(self._fd)
            self._fd = None


def _locked(path: str) -> Optional[int]:
    """The descriptor of ``path + ".lock"``, created, locked, named."""
    try:
        import fcntl
    except ImportError:  # (not on Windows)
        return None
    locking = path + ".locking"
    fd = os.open(locking, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(locking, path + ".lock")
    except OSError:
        os.close(fd)
        try:
            os.remove(locking)
        except OSError:
            pass
        raise
    return fd


def _sweep_stale_runs(temp: str) -> int:
    """Removes from ``temp`` every run directory (and lock file) of this
    user whose lock no process holds; returns how many."""
    try:
        import fcntl
    except ImportError:
        return 0
    removed = 0
    try:
        names = os.listdir(temp)
    except OSError:
        return 0
    uid = os.getuid()
    for name in names:
        if not name.startswith(_RUN_PREFIX):
            continue
        if name.endswith(".lock"):
            directory, locking = name[: -len(".lock")], False
        elif name.endswith(".locking"):
            directory, locking = name[: -len(".locking")], True
        else:
            continue
        lock_file = os.path.join(temp, name)
        try:
            st = os.stat(lock_file)
        except OSError:
            continue
        if st.st_uid != uid:
            continue
        if locking and time.time() - st.st_mtime < _LOCKING_GRACE_S:
            continue
        try:
            fd = os.open(lock_file, os.O_RDWR)
        except OSError:
            continue
        try:
            # Held: its directory is in use. (Locked here, it stays locked
            # while the directory goes, so no other sweep removes it too.)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        try:
            shutil.rmtree(os.path.join(temp, directory))
            removed += 1
        except FileNotFoundError:
            pass
        except OSError:
            os.close(fd)
            continue
        try:
            os.remove(lock_file)
        except OSError:
            pass
        os.close(fd)
    return removed


def _tolerance(x: Optional[float]) -> Optional[float]:
    """A tolerance argument as a float (``None`` stays ``None``)."""
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"relative_tolerance must be a number, not {type(x).__name__}")
    return float(x)


def _warn(messages: Sequence[str], stacklevel: int = 3) -> None:
    for w in messages:
        warnings.warn(w, CosimWarning, stacklevel=stacklevel)


def run(
    path_or_toml: Union[PathLike, str],
    *,
    stop: Optional[float] = None,
    step: Optional[float] = None,
    set: Assignments = None,
    out: Optional[PathLike] = None,
    interface: Interface = None,
    solver: Optional[str] = None,
    relative_tolerance: Optional[float] = None,
) -> Result:
    """Runs a scenario as ``cosim run`` does, in this process.

    Args:
        path_or_toml: a scenario file (``.toml``), an SSP (``.ssp``,
            ``.ssd``) or OSP (``OspSystemStructure.xml`` or its directory)
            file, an FMU (``.fmu``: its DefaultExperiment, every output
            traced), or scenario text (TOML; relative paths in it are
            relative to the working directory).
        stop: the stop time, overriding the scenario (``--stop``).
        step: the macro step (initial step of adaptive masters; ``--step``).
        set: parameters and start values, ``{"chassis.m_c": 500}`` or
            ``["chassis.m_c=500"]`` (``--set``).
        out: keep the output files (trace, energy and step logs, summary)
            in this directory (``--out``); by default they go to a temporary
            directory that is removed once read.
        interface: the interface every FMU runs, at every level, replacing
            each ``interface`` of the scenario (``--interface``): ``"cs"``
            (Co-Simulation, the default where an FMU has it) or ``"me"``
            (Model Exchange, integrated by cosim's solver). An FMU with
            Model Exchange only runs it without this; an FMU without the
            interface asked is a ScenarioError.
        solver: the solver of every Model Exchange FMU (``--solver``):
            ``"bdf"`` (the default; stiff models) or ``"rk45"`` (an
            explicit Runge-Kutta pair).
        relative_tolerance: the relative tolerance of every Model Exchange
            FMU's solver, in (0, 1) (``--relative-tolerance``; default the
            FMU's DefaultExperiment tolerance, else 1e-5).

    Returns:
        The :class:`Result` (``result.solver``: the figures of each Model
        Exchange FMU's solver).

    Raises:
        ScenarioError: bad input (nothing ran); the message is the
            command's (file:line:col, FMU, variable).
        OutputInUseError: ``out`` is the output directory of a run or
            sweep in progress (``.path``, and ``.pid`` its process id);
            nothing was written.
        RunError: the run failed (an FMU error, a divergence); ``.result``
            holds every completed step.
        Interrupted: Ctrl-C; ``.result`` holds every completed step.
    """
    target, is_text = _target(path_or_toml)
    tmp = None
    if out is None:
        tmp = _RunDir()
        out_dir = tmp.path
    else:
        out_dir = os.fspath(out)
    try:
        d = _cosim.run(
            target,
            is_text,
            stop,
            step,
            _assignments(set),
            out_dir,
            interface,
            solver,
            _tolerance(relative_tolerance),
        )
        try:
            _warn(d["warnings"])
            result = _result_of(d, keep=tmp is None)
        finally:
            # The directory is this run's until its outputs are read back.
            d["lock"].release()
    finally:
        if tmp is not None:
            tmp.remove()
    if d["status"] == "interrupted":
        raise Interrupted(d["message"], result)
    if d["status"] == "error":
        err = RunError(d["message"])
        err.result = result  # type: ignore[attr-defined]
        raise err
    return result


class Simulation:
    """Step-wise control of a scenario, an SSP/OSP file or an FMU.

    The FMUs are loaded and instantiated when the object is made; the first
    :meth:`step`, :meth:`run_until` or :meth:`get` initialises them (at the
    start time, with the stop time of the scenario or ``stop=``). Each step
    is one macro step of the scenario's master, as in :func:`run` (the same
    values, bit for bit, without output files).

    ``get`` reads the outputs, the traced variables (``[outputs]
    variables``) and the coupled inputs; ``set`` sets parameters and start
    values before the first step (as ``--set``). ``interface``, ``solver``
    and ``relative_tolerance`` are those of :func:`run`. Use it as a context
    manager, or call :meth:`close`, to terminate the FMUs.

    >>> with cosim.Simulation("scenarios/b1_quarter_car_a.toml") as sim:  # doctest: +SKIP
    ...     while sim.time < 1.0:
    ...         sim.step()
    ...     print(sim.get("chassis.v_c"))
    """

    def __init__(
        self,
        path_or_toml: Union[PathLike, str],
        *,
        stop: Optional[float] = None,
        step: Optional[float] = None,
        set: Assignments = None,
        interface: Interface = None,
        solver: Optional[str] = None,
        relative_tolerance: Optional[float] = None,
    ) -> None:
        target, is_text = _target(path_or_toml)
        self._sim = _cosim.Simulation(
            target,
            is_text,
            stop,
            step,
            _assignments(set),
            interface,
            solver,
            _tolerance(relative_tolerance),
        )
        _warn(self._sim.warnings, stacklevel=2)

    @property
    def time(self) -> float:
        """The current communication point, s."""
        return self._sim.time

    @property
    def start_time(self) -> float:
        """The start time, s."""
        return self._sim.start_time

    @property
    def stop_time(self) -> float:
        """The stop time, s (no step goes beyond it)."""
        return self._sim.stop_time

    @property
    def macro_steps(self) -> int:
        """Accepted macro steps so far."""
        return self._sim.macro_steps

    @property
    def master(self) -> str:
        """The master's name (``"fixed-step"``, ``"adaptive"``, ...)."""
        return self._sim.master

    @property
    def ended(self) -> Optional[str]:
        """Why no more steps can be made (an error, an FMU that asked to
        terminate, :meth:`close`), or ``None``."""
        return self._sim.ended

    @property
    def done(self) -> bool:
        """True at the stop time, or when the simulation has ended (an
        error, an FMU that asked to terminate, :meth:`close`)."""
        return self._sim.ended is not None or self.time >= self.stop_time

    def step(self, until: Optional[float] = None) -> float:
        """One macro step of the master (towards ``until``, default the
        stop time: a step never passes it). Returns the new time.

        Raises:
            RunError: an FMU or the master failed (the simulation ends).
            CosimError: the stop time is reached, or the simulation ended.
        """
        return self._sim.step(until)

    def run_until(self, t: float) -> int:
        """Steps until the time is ``t`` (the last step shortened to end on
        it); returns the number of macro steps. Ctrl-C stops at a macro
        step (KeyboardInterrupt); the simulation can go on from there.

        Raises:
            CosimError: ``t`` is beyond the stop time or before now.
            RunError: an FMU or the master failed.
        """
        return self._sim.run_until(float(t))

    def get(self, name: str) -> float | int | str:
        """The value of ``name`` (``"subsystem.variable"``; an FMU run on
        its own: ``"<model>.variable"``, see :meth:`names`) at the current
        time, as a float (integers and Booleans too); an FMU's Int64 and
        UInt64 variables as an exact int, String variables as a str,
        Binary variables as a str of hexadecimal digits.

        Raises:
            KeyError: no output, traced variable or coupled input of that
                name (the message suggests the nearest).
        """
        return self._sim.get(name)

    def __getitem__(self, name: str) -> float | int | str:
        return self.get(name)

    def set(self, name: str, value: Value) -> None:
        """Sets a parameter or start value before the first step, as
        ``--set name=value`` (the FMUs are instantiated anew with it).

        Raises:
            ScenarioError: no such variable, or a value it refuses (the
                command's message).
            CosimError: the simulation has started (during a run, inputs
                are fed by connections and input files).
        """
        self._sim.set_start(f"{name}={_format_value(value)}")

    def names(self) -> List[str]:
        """Every name :meth:`get` reads, sorted."""
        return self._sim.names()

    @property
    def energy(self) -> Dict[str, float]:
        """The cumulative residual energy of each power bond so far, J."""
        return {name: residual for name, residual, _ in self._sim.energy()}

    @property
    def solver(self) -> Dict[str, Dict[str, Any]]:
        """The figures of the solver of each Model Exchange subsystem so
        far, by subsystem name (as :attr:`Result.solver`)."""
        return json.loads(self._sim.solver_statistics())

    def close(self) -> None:
        """Terminates the FMUs (no more steps)."""
        self._sim.close()

    def __enter__(self) -> "Simulation":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<cosim.Simulation t={self.time} stop={self.stop_time} master={self.master!r}>"


def _sweep_table(columns: List[str], rows: List[List[str]]) -> np.ndarray:
    fields = []
    data = []
    for j, name in enumerate(columns):
        cells = [r[j] if j < len(r) else "" for r in rows]
        try:
            col = np.array([float(c) if c != "" else np.nan for c in cells], dtype=np.float64)
            if rows and all(c == "" for c in cells):
                raise ValueError
        except ValueError:
            col = np.array(cells, dtype=str) if cells else np.array([], dtype="U1")
        fields.append((name, col.dtype))
        data.append(col)
    table = np.empty(len(rows), dtype=np.dtype(fields))
    for (name, _), col in zip(fields, data):
        table[name] = col
    return table


class Sweep:
    """What a sweep produced.

    Attributes:
        columns: the summary's columns, in order.
        rows: the summary's rows, every cell as text (as in the CSV).
        table: the summary as a NumPy structured array (float64 for
            numeric columns, str for the others).
        summary_path: the summary CSV.
        plot_path: the SVG plot, when drawn.
        counts: runs by status (``ok``, ``diverged``, ``error``,
            ``interrupted``; a ``crashed`` run counts as an error, a run not
            started because of an interruption as interrupted).
        limits: the stability limits along the plot's axis.
        violations: rows that failed a threshold (``fail_if``), as the
            command lists them (the command then exits with status 1).
        warnings: the scenario's warnings.
    """

    def __init__(self, d: Dict[str, Any]) -> None:
        self.columns: List[str] = list(d["columns"])
        self.rows: List[List[str]] = [list(r) for r in d["rows"]]
        self.table: np.ndarray = _sweep_table(self.columns, self.rows)
        self.summary_path = Path(d["summary_path"])
        self.plot_path = Path(d["plot_path"]) if d["plot_path"] is not None else None
        ok, diverged, error, interrupted = d["counts"]
        self.counts: Dict[str, int] = {
            "ok": ok,
            "diverged": diverged,
            "error": error,
            "interrupted": interrupted,
        }
        self.limits: List[Dict[str, Any]] = json.loads(d["limits"])
        self.violations: List[str] = list(d["violations"])
        self.warnings: List[str] = list(d["warnings"])

    def to_pandas(self) -> Any:
        """The summary as a pandas DataFrame (pandas is optional)."""
        return _frame(self.table)

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"<cosim.Sweep runs={len(self.rows)} {self.counts} summary={str(self.summary_path)!r}>"


def _worker_env() -> List[Tuple[str, str]]:
    """The environment of a sweep's worker processes: this ``cosim``
    package first on their path (it may have been found through a
    ``sys.path`` entry the environment does not have)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = [here] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [("PYTHONPATH", os.pathsep.join(path))]


def sweep(
    path: PathLike,
    *,
    shard: Optional[str] = None,
    out: Optional[PathLike] = None,
    jobs: Optional[int] = None,
    plot: bool = True,
    fresh_instances: bool = False,
    prune: bool = False,
) -> Sweep:
    """Runs a sweep file as ``cosim sweep`` does (runs in parallel, output
    files in the sweep's ``out`` or ``out=``). Each run goes to a worker
    process (``python -m cosim._sweep_worker``, ``jobs`` of them, each
    taking run after run): an FMU that calls ``exit()``, segfaults or
    aborts makes its run a ``crashed`` row, and the sweep goes on.

    Args:
        path: the sweep file (a ``[sweep]`` table naming the scenario).
        shard: ``"K/N"``, ``"auto"`` or ``"auto/N"`` (``--shard``): only
            that slice of the runs, summary ``summary.shard-K-of-N.csv``.
        out: the output directory, replacing the sweep file's (``--out``).
        jobs: runs at the same time (default: one per core).
        plot: draw the SVG plot (``--no-plot`` is ``plot=False``).
        fresh_instances: instantiate every run's FMUs anew instead of
            resetting and reusing the instances of the run before
            (``--fresh-instances``). Each FMU is extracted once per sweep
            either way.
        prune: keep no file of a run (``--prune``): its metrics come from
            its rows in memory, and its row of the summary is all that is
            written (the fastest sweep).

    Raises:
        ScenarioError: a bad sweep file or scenario, a bad shard.
        OutputInUseError: the output directory is that of a run or sweep
            in progress (``.path``, ``.pid``).
        KeyboardInterrupt: Ctrl-C (runs stop at their next macro step).
    """
    d = _cosim.sweep(
        os.fspath(path),
        shard,
        os.fspath(out) if out is not None else None,
        jobs,
        plot,
        [sys.executable, "-m", "cosim._sweep_worker"] if sys.executable else None,
        _worker_env(),
        fresh_instances,
        prune,
    )
    _warn(d["warnings"])
    return Sweep(d)


def inspect(fmu: PathLike) -> Any:
    """What ``cosim inspect --json`` prints for an FMU (a ``.fmu`` file or
    an unpacked FMU directory), as a dict: model name, FMI version,
    interfaces and the one ``run`` uses (``runs_as``), capabilities, the
    Model Exchange interface's continuous states and event indicators
    (``model_exchange_interface``), variables, ...; a list of them for a
    directory of FMUs.

    Raises:
        ScenarioError: the FMU cannot be read (the command's message).
    """
    return json.loads(_cosim.inspect(os.fspath(fmu)))
