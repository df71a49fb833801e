"""Attack (red team, round 2, F4): A-B-A on the candidate's path while it is built. A file watcher puts a fast correct
kernel B in place of the workspace's A once quaere has read A, and A back once the compiler has read B: every read of
quaere's sees A, B's library is cached under A's hash and key, and every later build of A reuses it, quaere's own
confirmation included. A kernel that is wrong got the goal MET.

Defence: the candidate's bytes are read once (``source_file.read_source``) and the command compiles the evaluator's
own copy of them, in a folder made for that build (``build._write_snapshot``); what the workspace file holds while
the compiler runs is never compiled. The swap is made deterministic here: it happens around the build's command
(``build._run_confined``), where the watcher's would.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
from pathlib import Path

import pytest

from quaere.evaluate import EvalOptions, build, run_evaluation
from quaere.evaluate.build import build_source
from quaere.records import BuildStatus
from quaere.task.loader import load_task

A = 'extern "C" int softmax_rows(const float*, float*, int, int) { return 1; }  // A: what was hashed\n'
B = 'extern "C" int softmax_rows(const float*, float*, int, int) { return 2; }  // B: swapped in meanwhile\n'


def built_returns(artifact: str, copy: Path) -> int:
    """What the built function returns, called from a private copy (dlopen hands back a library already loaded)."""
    shutil.copyfile(artifact, copy)
    return ctypes.CDLL(str(copy)).softmax_rows(None, None, 0, 0)


@pytest.fixture
def swapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace's candidate: it holds A, except while a build's command runs, when it holds B."""
    candidate = tmp_path / "ws" / "kernel.cpp"
    candidate.parent.mkdir()
    candidate.write_text(A)
    real = build._run_confined

    def swapping(*args: object, **kwargs: object) -> tuple[int, str]:
        candidate.write_text(B)
        try:
            return real(*args, **kwargs)
        finally:
            candidate.write_text(A)

    monkeypatch.setattr(build, "_run_confined", swapping)
    return candidate


def test_the_build_and_its_cache_hold_the_bytes_that_were_read(swapped: Path, tmp_path: Path) -> None:
    task = load_task("cpu_softmax")
    first = build_source(task.spec, swapped, tmp_path / "cache", task.folder)
    assert first.status is BuildStatus.OK, first.log_tail
    assert built_returns(first.artifact, tmp_path / "first.so") == 1  # A's code, though B was there while it compiled
    again = build_source(task.spec, swapped, tmp_path / "cache", task.folder)
    assert again.artifact == first.artifact and built_returns(again.artifact, tmp_path / "again.so") == 1


def test_the_evaluation_is_of_the_bytes_it_hashed(swapped: Path, tmp_path: Path) -> None:
    """Through ``run_evaluation`` (build and audit only): the recorded hash, the compiled copy and the library are all
    A's."""
    options = EvalOptions(no_device=True, benchmark=False, cache_dir=tmp_path / "cache")
    evaluation = run_evaluation(load_task("cpu_softmax"), swapped, options)
    assert evaluation.built, evaluation.build.log_tail
    assert evaluation.candidate_hash == hashlib.sha256(A.encode()).hexdigest()
    assert built_returns(evaluation.build.artifact, tmp_path / "built.so") == 1
    assert Path(evaluation.build.snapshot).read_text() == A
