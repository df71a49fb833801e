"""An evaluation pool: the judge work of evaluations spread over judges pinned one per GPU (or over CPU
judges), on one host or a Ray cluster. Ray is an optional extra (``pip install quaere[cluster]``); this
module never imports it, so ``import quaere`` never does either.

A pool is named by a setting (``--pool``, or ``QUAERE_POOL`` for the processes a campaign starts):

* ``local`` or ``local:N``: a Ray instance started by this process, with N judges (default: one per GPU of
  this machine, or half its cores for a CPU task); it ends with the process;
* anything else is the address of a running Ray cluster (``auto``, ``HOST:6379``, ``ray://HOST:10001``):
  the judges already started there are used, or started (one per GPU of the cluster) and left running.

:func:`pooled_evaluate` turns a setting into a ``run_evaluation``-shaped callable; the pool itself is in
:mod:`.pool_ray`, its actor in :mod:`.pool_actor`.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from quaere.evaluate.judging import Device
from quaere.evaluate.options import EvalOptions
from quaere.records import Evaluation
from quaere.task.loader import Task

if TYPE_CHECKING:
    from quaere.evaluate.pool_ray import RayPool
    from quaere.evaluate.run import Progress
    from quaere.recording import Evaluate

class PoolError(RuntimeError):
    """The pool cannot be used: Ray missing, a malformed setting, no judge reachable. Says which and why."""


@dataclass(frozen=True)
class PoolSpec:
    """A parsed pool setting."""

    address: str = ""
    """A running Ray cluster's address; '' for a local pool started by this process."""
    size: int | None = None
    """Judges of a local pool (None: one per GPU, or half the cores for a CPU task)."""

    @property
    def local(self) -> bool:
        return not self.address

    def __str__(self) -> str:
        """The setting as it is written (``local``, ``local:N`` or the address)."""
        return self.address or ("local" if self.size is None else f"local:{self.size}")

    @staticmethod
    def parse(text: str) -> PoolSpec:
        """``local``, ``local:N`` (N >= 1) or a Ray address; :class:`PoolError` names what was expected."""
        text = text.strip()
        if not text:
            raise PoolError("--pool: empty; expected 'local', 'local:N' or a Ray cluster's address")
        if text == "local":
            return PoolSpec()
        if text.startswith("local:"):
            count = text.removeprefix("local:")
            if not count.isdigit() or int(count) < 1:
                raise PoolError(f"--pool {text}: expected 'local:N' with N a whole number >= 1, got '{count}'")
            return PoolSpec(size=int(count))
        return PoolSpec(address=text)


def ray_installed() -> bool:
    return importlib.util.find_spec("ray") is not None


def open_pool(spec: PoolSpec, device: Device, cache_dir: Path | None = None) -> RayPool:
    """Start or join the pool ``spec`` names, with judges for the task ``device`` ('cpu' or 'cuda').

    Raises :class:`PoolError` when Ray is not installed or no judge of the pool answers."""
    if not ray_installed():
        raise PoolError("an evaluation pool needs Ray: pip install 'quaere[cluster]'")
    from quaere.evaluate.pool_ray import start_pool

    return start_pool(spec, device, cache_dir)


class PoolEvaluate:
    """``run_evaluation`` on a pool that is opened on the first evaluation and kept for the process's life
    (one pool per task device). Safe to call from several threads (the evaluator service's)."""

    def __init__(self, spec: PoolSpec, cache_dir: Path | None = None) -> None:
        self.spec, self.cache_dir = spec, cache_dir
        self._pools: dict[str, RayPool] = {}
        self._lock = threading.Lock()

    def pool(self, device: Device) -> RayPool:
        with self._lock:
            if device not in self._pools:
                self._pools[device] = open_pool(self.spec, device, self.cache_dir)
            return self._pools[device]

    def __call__(self, task: Task, candidate: Path, options: EvalOptions,
                 progress: Progress | None = None) -> Evaluation:
        from quaere.evaluate.run import run_evaluation

        return run_evaluation(task, candidate, options, progress, executor=self.pool(task.spec.device))

    def close(self) -> None:
        with self._lock:
            for pool in self._pools.values():
                pool.close()
            self._pools.clear()


def pooled_evaluate(setting: str | None) -> Evaluate:
    """``run_evaluation`` itself without a setting (the sequential path), else on the pool it names."""
    from quaere.evaluate.run import run_evaluation

    if not setting:
        return run_evaluation
    return PoolEvaluate(PoolSpec.parse(setting))


@contextmanager
def evaluation_pool(setting: str | None) -> Iterator[Evaluate]:
    """:func:`pooled_evaluate` for one command: a pool it started is closed (its actors killed) at the end."""
    evaluate = pooled_evaluate(setting)
    try:
        yield evaluate
    finally:
        if isinstance(evaluate, PoolEvaluate):
            evaluate.close()
