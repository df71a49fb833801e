"""What one run of the evaluator is asked to do, and the user's scenarios file.

This module is the one place of the evaluator that reads the environment (the build cache folder).
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from quaere.jsonl import read_json_file
from quaere.records import Scenario
from quaere.validation import describe_first


class ScenariosFileError(ValueError):
    """The ``--scenarios`` file is malformed; the message names the file, the field and the expectation."""


class EvalOptions(BaseModel):
    """Switches of one evaluation; the defaults do everything the task asks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    correctness: bool = True
    """Run the correctness scenarios."""
    benchmark: bool = True
    """Time the benchmark scenarios (only when build, audit and every correctness scenario passed)."""
    benchmark_ids: frozenset[str] | None = None
    """Time only these benchmark scenario ids (the goal's re-timing); None times the whole set."""
    scenarios_file: Path | None = None
    """A JSON list ``[{"id": ..., "params": {...}}]`` that replaces the task's correctness set."""
    seed: int | None = Field(default=None, ge=0)
    """Seed of the random inputs; None draws a fresh one (it is recorded in every verdict)."""
    scenario_timeout_s: float | None = Field(default=None, gt=0)
    """Per correctness scenario; None uses the task's ``correctness.scenario_timeout_s``."""
    benchmark_timeout_s: float = Field(default=120.0, gt=0)
    """Per benchmark scenario (every implementation, warm-up and repetitions together)."""
    worker_start_timeout_s: float = Field(default=180.0, gt=0)
    """Time a fresh worker may take to import the task (and torch) and load the kernels."""
    build_timeout_s: float = Field(default=900.0, gt=0)
    """Time the build command may take before it counts as failed."""
    no_device: bool = False
    """Build and audit only, even where a device is present."""
    cache_dir: Path | None = None
    """Where builds and worker logs go; None uses :func:`default_cache_dir`."""
    sandbox: bool = True
    """Lock the candidate's runner in (seccomp, Landlock). Off only to diagnose the sandbox itself; the
    record says what was in force either way."""
    call_log: Path | None = None
    """Append every timed call of a native implementation (wall time, claimed device, host and drain times)
    to this JSON-lines file: the data the clock bound's slack is calibrated on."""
    unreadable: tuple[Path, ...] = ()
    """Folders no runner may read, even beneath one of its read roots (:func:`quaere.evaluate.isolation.read_roots`):
    the store's keys, which :func:`quaere.recording.record_evaluation` adds for the store it records in."""
    runner_threads: bool = False
    """Let candidate code start threads. Off: its code runs only inside its own call, so nothing it does
    can happen outside the timed interval or after its outputs are read."""


def default_cache_dir() -> Path:
    """``$QUAERE_CACHE_DIR``, else ``$XDG_CACHE_HOME/quaere``, else ``~/.cache/quaere``."""
    explicit = os.environ.get("QUAERE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "quaere"


def load_scenarios_file(path: Path) -> list[Scenario]:
    """Read a user's scenarios; raise :class:`ScenariosFileError` naming file, field and expectation."""
    data = read_json_file(path, ScenariosFileError, "no such file (expected a JSON list of scenarios)")
    if not isinstance(data, list) or not data:
        raise ScenariosFileError(f'{path}: expected a non-empty JSON list of {{"id": ..., "params": {{...}}}}')
    scenarios: list[Scenario] = []
    seen: set[str] = set()
    for index, item in enumerate(data):
        try:
            scenario = Scenario.model_validate(item)
        except ValidationError as exc:
            why = describe_first(exc, (index,), " (expected only 'id' and 'params')")
            raise ScenariosFileError(f"{path}: {why}") from None
        if scenario.id in seen:
            raise ScenariosFileError(f"{path}: field '{index}.id' repeats the id '{scenario.id}'; ids must be unique")
        seen.add(scenario.id)
        scenarios.append(scenario)
    return scenarios


def process_environment() -> dict[str, str]:
    """The environment the evaluator's processes start from (the judge's; runners get a short subset)."""
    return dict(os.environ)


POOL_ENV = "QUAERE_POOL"
"""The evaluation pool of a process given no ``--pool`` (see :mod:`quaere.evaluate.pool`); ``quaere run
--parallel`` sets it for its campaigns, so the agents' ``quaere eval`` and the goal's confirmations share it."""


def pool_setting() -> str | None:
    """``$QUAERE_POOL`` when set and not empty: the pool this process's evaluations use."""
    return os.environ.get(POOL_ENV) or None


def cuda_visible_devices() -> str | None:
    """``$CUDA_VISIBLE_DEVICES`` as set (None when unset): which GPU the worker's device 0 is."""
    return os.environ.get("CUDA_VISIBLE_DEVICES")
