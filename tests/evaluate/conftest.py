"""Shared fixtures: the CPU task, a build cache for the session, a two-scenario file, fixture candidates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.candidate_sources import self_contained

from quaere.evaluate import EvalOptions
from quaere.task.loader import Task, load_task

CANDIDATES = self_contained(Path(__file__).parent.parent / "fixtures" / "candidates")

# One single-row scenario (where the process-killing fixtures misbehave) and one that every fixture but
# the always-wrong ones passes: a fresh worker must take over after the first.
TWO_SCENARIOS = [
    {"id": "single-row", "params": {"rows": 1, "cols": 5, "scale": 1.0, "offset": 0.0}},
    {"id": "three-rows", "params": {"rows": 3, "cols": 7, "scale": 1.0, "offset": 0.0}},
]


@pytest.fixture(scope="session")
def cpu_task() -> Task:
    return load_task("cpu_softmax")


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("quaere-cache")


@pytest.fixture(scope="session")
def two_scenarios(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scenarios") / "two.json"
    path.write_text(json.dumps(TWO_SCENARIOS))
    return path


@pytest.fixture
def quick(cache_dir: Path, two_scenarios: Path) -> EvalOptions:
    """Correctness only, on the two scenarios, with a short per-scenario time limit."""
    return EvalOptions(seed=7, benchmark=False, scenarios_file=two_scenarios, scenario_timeout_s=5.0,
                       cache_dir=cache_dir)
