"""Stubs of the native module ``cosim._cosim`` (the engine; the API is the
package ``cosim``)."""

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

__version__: str

class CosimError(Exception):
    """Base class of the errors of cosim."""

class ScenarioError(CosimError):
    """Bad input: nothing ran (the command's exit status 2)."""

class RunError(CosimError):
    """A run that started and failed (the command's exit status 1)."""

class OutputInUseError(ScenarioError):
    """The output directory is in use by another run or sweep."""

    path: str
    pid: Optional[int]

class OutputLock:
    def release(self) -> None: ...

def run(
    target: str,
    is_text: bool,
    stop: Optional[float] = None,
    step: Optional[float] = None,
    set: Sequence[str] = ...,
    out: Optional[str] = None,
    interface: Optional[str] = None,
    solver: Optional[str] = None,
    relative_tolerance: Optional[float] = None,
) -> Dict[str, Any]: ...
def read_csv(path: str) -> List[Tuple[str, Union[bytes, List[str]]]]: ...
def inspect(path: str) -> str: ...
def sweep(
    path: str,
    shard: Optional[str] = None,
    out: Optional[str] = None,
    jobs: Optional[int] = None,
    plot: bool = True,
    worker: Optional[Sequence[str]] = None,
    worker_env: Sequence[Tuple[str, str]] = ...,
    fresh_instances: bool = False,
    prune: bool = False,
) -> Dict[str, Any]: ...
def sweep_worker() -> None: ...

class Simulation:
    def __init__(
        self,
        target: str,
        is_text: bool,
        stop: Optional[float] = None,
        step: Optional[float] = None,
        set: Sequence[str] = ...,
        interface: Optional[str] = None,
        solver: Optional[str] = None,
        relative_tolerance: Optional[float] = None,
    ) -> None: ...
    @property
    def warnings(self) -> List[str]: ...
    def set_start(self, assignment: str) -> None: ...
    def step(self, t: Optional[float] = None) -> float: ...
    def run_until(self, t: float) -> int: ...
    def get(self, name: str) -> float: ...
    def start(self) -> None: ...
    def close(self) -> None: ...
    def names(self) -> List[str]: ...
    def has(self, name: str) -> bool: ...
    @property
    def time(self) -> float: ...
    @property
    def start_time(self) -> float: ...
    @property
    def stop_time(self) -> float: ...
    @property
    def macro_steps(self) -> int: ...
    @property
    def started(self) -> bool: ...
    @property
    def ended(self) -> Optional[str]: ...
    @property
    def master(self) -> str: ...
    def energy(self) -> List[Tuple[str, float, float]]: ...
    def solver_statistics(self) -> str: ...
