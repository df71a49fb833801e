"""Attack (red team, round 3, F1): in same-user mode the agent puts its own ``c++`` first on ``PATH`` and runs
``quaere eval``. The wrapper compiles a fast correct kernel in place of the wrong candidate (or the task's trusted
initial kernel at ``-O0``); the build cache was keyed on the command text and the source bytes alone, so quaere's own
confirmation, run later with a clean ``PATH``, reused both artifacts: a wrong kernel got the goal MET.

Defence: the programs the command runs are resolved once on the build's ``PATH`` and hashed
(:mod:`quaere.evaluate.toolchain`); their paths and sha256 are in the cache key and the build's record. A build with
other compilers is another build: the clean one rebuilds the candidate and the initial kernel with the real ones.
Real compiles of the CPU task's command.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.build import build_source
from quaere.records import BuildStatus
from quaere.task.loader import load_task

from .test_build_swap import A, B, built_returns

REAL = A.replace("// A:", "//")
SWAPPED = B.replace("// B: swapped in meanwhile", "// the wrapper's own")


@pytest.fixture
def wrapper(tmp_path: Path) -> Path:
    """The agent's folder of programs: a ``c++`` that compiles its own ``swapped.cpp`` in place of any ``.cpp``."""
    folder = tmp_path / "agent" / "bin"
    folder.mkdir(parents=True)
    (folder / "swapped.cpp").write_text(SWAPPED)
    script = folder / "c++"
    script.write_text('#!/bin/sh\nfor a in "$@"; do\n  case "$a" in *.cpp) a="$(dirname "$0")/swapped.cpp";; esac\n'
                      f'  set -- "$@" "$a"; shift\ndone\nexec {shutil.which("c++")} "$@"\n')
    script.chmod(0o755)
    return folder


def test_a_build_by_another_compiler_is_never_reused_by_a_build_with_the_real_one(wrapper: Path,
                                                                                  tmp_path: Path) -> None:
    task = load_task("cpu_softmax")
    source = tmp_path / "ws" / "kernel.cpp"
    source.parent.mkdir()
    source.write_text(REAL)
    agents = {**os.environ, "PATH": f"{wrapper}:{os.environ['PATH']}"}
    tricked = build_source(task.spec, source, tmp_path / "cache", task.folder, env=agents)
    assert tricked.status is BuildStatus.OK, tricked.log_tail
    assert built_returns(tricked.artifact, tmp_path / "tricked.so") == 2  # the wrapper did compile its own source
    assert tricked.toolchain[0].startswith(f"{wrapper / 'c++'} ")  # and the record says whose compiler it was
    clean = build_source(task.spec, source, tmp_path / "cache", task.folder, env=dict(os.environ))
    assert clean.status is BuildStatus.OK, clean.log_tail
    assert clean.artifact != tricked.artifact and built_returns(clean.artifact, tmp_path / "clean.so") == 1
    assert not any(str(wrapper) in program for program in clean.toolchain), clean.toolchain


def test_the_same_compiler_path_with_other_bytes_is_another_build(wrapper: Path, tmp_path: Path) -> None:
    """The path alone is not the identity: a compiler rewritten in place (a toolchain folder the agent can write)
    keys another build."""
    task = load_task("cpu_softmax")
    agents = {**os.environ, "PATH": f"{wrapper}:{os.environ['PATH']}"}
    first = build_source(task.spec, task.initial_kernel, tmp_path / "cache", task.folder, env=agents)
    script = wrapper / "c++"
    script.write_text(script.read_text() + "# rewritten\n")
    again = build_source(task.spec, task.initial_kernel, tmp_path / "cache", task.folder, env=agents)
    assert first.status is again.status is BuildStatus.OK
    assert again.artifact != first.artifact and again.toolchain[0] != first.toolchain[0]


def test_the_evaluators_own_evaluation_rebuilds_the_candidate_and_the_initial_kernel(
        wrapper: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through ``run_evaluation`` (build and audit only), which takes its environment from the process's, as
    ``quaere eval`` and the goal's confirmation do: the agent's evaluation with its wrapper first on PATH, then the
    evaluator's with a clean one in the same cache. Nothing of the first is reused."""
    task = load_task("cpu_softmax")
    source = tmp_path / "ws" / "kernel.cpp"
    source.parent.mkdir()
    source.write_text(REAL)
    options = EvalOptions(no_device=True, benchmark=False, cache_dir=tmp_path / "cache")
    clean_path = os.environ["PATH"]
    monkeypatch.setenv("PATH", f"{wrapper}:{clean_path}")
    agents = run_evaluation(task, source, options)
    assert agents.built and agents.build.toolchain[0].startswith(f"{wrapper / 'c++'} ")
    builds = tmp_path / "cache" / "builds"
    tricked = {path.name for path in builds.iterdir()}
    assert len(tricked) == 2  # the candidate and the initial kernel, both by the wrapper
    monkeypatch.setenv("PATH", clean_path)
    confirmation = run_evaluation(task, source, options)
    assert confirmation.built and built_returns(confirmation.build.artifact, tmp_path / "confirmed.so") == 1
    assert len({path.name for path in builds.iterdir()} - tricked) == 2  # both rebuilt by the real compiler
