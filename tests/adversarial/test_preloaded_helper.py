"""Attack: a library preloaded around ``quaere eval`` (``LD_PRELOAD`` in the agent's environment) that needs cuBLAS
and exports a function the candidate calls by name.

Until session 32 the dlopen guard passed the caller's ``LD_PRELOAD`` on to the runners after its shim, so the helper
and cuBLAS were mapped when the runner started: before the judge's first read of its maps (so the maps diff saw
nothing new) and before the candidate was there to blame for a load; the candidate itself names nothing banned.
Defences: the judge's environment drops the switches of what loads code and of the libraries it runs
(``isolation.judge_environment``), the guard preloads its shim alone, and a banned library mapped in a runner before
the candidate is loaded is a finding (``JudgeState.new_banned``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.candidate_sources import self_contained

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.executor import LocalExecutor
from quaere.evaluate.judge_state import JudgeState
from quaere.task.loader import load_task

from .audit_support import ATTACKS, compiler, fake_blas

REPO = Path(__file__).resolve().parents[2]
CANDIDATES = self_contained(REPO / "tests" / "fixtures" / "candidates")


@pytest.fixture(scope="module")
def helper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The preloaded helper, linked against the cuBLAS stand-in beside it (found through its RUNPATH)."""
    folder = tmp_path_factory.mktemp("preload")
    blas = fake_blas(folder)
    out = folder / "libhelper.so"
    subprocess.run([compiler("cc"), "-shared", "-fPIC", "-O1", "-o", str(out), str(ATTACKS / "preloaded_helper.c"),
                    str(blas), f"-Wl,-rpath,{folder}"], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def banning_task(tmp_path_factory: pytest.TempPathFactory):
    """The CPU softmax task with cuBLAS banned, so that the audit and the run-time guard apply."""
    folder = tmp_path_factory.mktemp("task") / "banned"
    shutil.copytree(load_task("cpu_softmax").folder, folder)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("banned = []", 'banned = ["cublas"]'))
    return load_task(str(folder))


def test_a_preload_around_the_evaluation_reaches_no_runner(banning_task, helper: Path, tmp_path: Path) -> None:
    options = EvalOptions(seed=7, benchmark=False, scenario_timeout_s=10.0, cache_dir=tmp_path / "cache")
    executor = LocalExecutor(tmp_path / "cache", {**os.environ, "LD_PRELOAD": str(helper),
                                                  "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
    candidate = CANDIDATES / "uses_preloaded_helper.cpp"
    evaluation = run_evaluation(banning_task, candidate, options, executor=executor)
    assert evaluation.built and not evaluation.audit  # the source and the artifact name nothing banned
    assert not evaluation.correct  # without the helper the candidate's symbol is not bound: it cannot load
    [left_out] = [part for part in evaluation.note.split("; ") if part.startswith("left out of the judge's")]
    assert {"LD_PRELOAD", "PYTORCH_NO_CUDA_MEMORY_CACHING"} <= set(left_out.split(": ", 1)[1].split(", "))


@dataclass
class _Runner:
    """What JudgeState.new_banned reads of a runner: its maps before the candidate's load, now, and its pid."""

    maps_before: str
    now: str
    pid: int = 0

    def read_maps(self) -> str:
        return self.now


def _line(path: Path, start: int) -> str:
    return f"{start:x}-{start + 0x1000:x} r-xp 00000000 08:01 {path.stat().st_ino} {path}\n"


def test_a_banned_library_mapped_before_the_candidate_is_a_finding(helper: Path) -> None:
    blas = helper.with_name("libcublas.so.13")
    early = _line(blas, 0x7F0000000000)
    state = JudgeState(task=None, ops=None, pool=None, runners=None, banned=("cublas",))  # type: ignore[arg-type]
    found = state.new_banned(_Runner(maps_before=early, now=early))  # type: ignore[arg-type]
    assert len(found) == 1 and found[0].endswith("before the candidate was loaded") and "cublas" in found[0]
    assert state.new_banned(_Runner(maps_before="", now="", pid=1)) == ()  # another runner, nothing banned: none
    assert JudgeState(task=None, ops=None, pool=None, runners=None).new_banned(  # type: ignore[arg-type]
        _Runner(maps_before=early, now=early)) == ()  # nothing banned by the task
