"""Attack (red team, round 2, F2): a candidate that is object code. The workspace's ``kernel.cpp`` is a link to
``blob.o`` (the evaluator followed it and built ``blob.o``), or the service's client names its bytes ``x.o``: the
build command links the object, every text rule of the audit reads ELF bytes and finds nothing, and the run counts.

Defence: a candidate that is not source text of the task's language is refused before any build
(``source_file.read_source``, ``text_problem``): a link, a name with another suffix than the task's initial kernel,
bytes that are an ELF object, an ``ar`` archive, hold a NUL byte or are not UTF-8. The evaluation records a failed
build whose log ends with why; the service refuses the request and records nothing.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.build import build_key
from quaere.evaluate.toolchain import resolve
from quaere.recording import LocalConfirmer
from quaere.records import BuildStatus
from quaere.serve.protocol import Evaluate as EvaluateRequest
from quaere.serve.server import EvaluatorService
from quaere.store import Store
from quaere.task.loader import load_task

from .conftest import Bench


@pytest.fixture
def blob(tmp_path: Path) -> Path:
    """The initial kernel compiled to an object file, as the agent would prepare it."""
    out = tmp_path / "blob.o"
    subprocess.run(["c++", "-O2", "-fPIC", "-c", str(load_task("cpu_softmax").initial_kernel), "-o", str(out)],
                   check=True, capture_output=True, timeout=120)
    return out


def _options(tmp_path: Path) -> EvalOptions:
    return EvalOptions(no_device=True, benchmark=False, cache_dir=tmp_path / "cache")


def test_eval_refuses_a_candidate_linked_to_an_object_file(bench: Bench, blob: Path) -> None:
    bench.ws.candidate.unlink()
    bench.ws.candidate.symlink_to(blob)
    done = bench.quaere("eval", "--no-benchmark", "--json")
    assert done.returncode != 0 and "kernel.cpp: a symbolic link (to " in done.stderr, done.stdout + done.stderr
    assert "must be a regular file" in done.stderr
    assert bench.store.read(bench.ws.id).entries == ()


def test_the_goals_own_confirmation_refuses_the_link_too(bench: Bench, blob: Path) -> None:
    """Without ``quaere eval``'s check in front: the evaluation itself refuses the link, and says so."""
    bench.ws.candidate.unlink()
    bench.ws.candidate.symlink_to(blob)
    digest = hashlib.sha256(blob.read_bytes()).hexdigest()
    LocalConfirmer(bench.store, bench.ws, lambda task, path, options, progress: run_evaluation(
        task, path, options.model_copy(update={"no_device": True, "cache_dir": bench.cache}), progress)).confirm(digest)
    (entry,) = bench.store.read(bench.ws.id).entries
    build = entry.evaluation.build
    assert build.status is BuildStatus.BUILD_FAILED and not entry.evaluation.ran
    assert "kernel.cpp: a symbolic link (to " in build.log_tail.splitlines()[-1], build.log_tail
    assert entry.evaluation.candidate_hash == digest  # recorded under the hash the goal computes for the file


def test_a_candidate_named_with_another_suffix_is_not_built(blob: Path, tmp_path: Path) -> None:
    task = load_task("cpu_softmax")
    evaluation = run_evaluation(task, blob, _options(tmp_path))
    assert evaluation.build.status is BuildStatus.BUILD_FAILED and not evaluation.ran
    assert "the task's kernel source is a '.cpp' file, and this one ends in '.o'" in evaluation.build.log_tail
    assert "refused, nothing was built" in evaluation.build.log_tail
    only_initial = [build_key(task.spec.build, task.initial_kernel.read_bytes(),
                            resolve(task.spec.build, os.environ["PATH"]))]
    assert [path.name for path in (tmp_path / "cache" / "builds").iterdir()] == only_initial


@pytest.mark.parametrize("data, named", [
    (b"\x7fELF\x02\x01\x01" + b"\0" * 60, "an ELF object"),
    (b"!<arch>\nkernel.o/", "an ar archive"),
    (b"int x;\0int y;\n", "a NUL byte at offset 6"),
    (b"int x; // \xff\xfe\n", "not UTF-8 text (byte 10"),
])
def test_bytes_that_are_not_source_text_are_refused(data: bytes, named: str, tmp_path: Path) -> None:
    candidate = tmp_path / "kernel.cpp"
    candidate.write_bytes(data)
    evaluation = run_evaluation(load_task("cpu_softmax"), candidate, _options(tmp_path))
    assert evaluation.build.status is BuildStatus.BUILD_FAILED and named in evaluation.build.log_tail
    assert "refused, nothing was built" in evaluation.build.log_tail.splitlines()[-1]


def test_source_text_with_the_tasks_suffix_passes() -> None:
    from quaere.evaluate.source_file import text_problem

    source = load_task("cpu_softmax").initial_kernel
    assert text_problem(source.name, source.read_bytes(), ".cpp") == ""
    assert "ends in '(no suffix)'" in text_problem("kernel", b"int x;\n", ".cpp")


def test_the_service_refuses_a_source_name_or_bytes_that_are_not_the_tasks_source(store: Store, tmp_path: Path,
                                                                                   blob: Path) -> None:
    """The client names the bytes: 'x.o' (or ELF bytes under a good name) is refused before any evaluation, and
    nothing is recorded."""
    from quaere.store.pinning import init_workspace

    workspace, _ = init_workspace(store, tmp_path / "ws", "cpu_softmax", False, tmp_path)
    calls: list[Path] = []

    def evaluate(task, candidate, options, progress):
        calls.append(candidate)
        raise ValueError("evaluated")

    service = EvaluatorService(store, evaluate)

    def reason(name: str, data: bytes) -> str:
        reply = service.answer(EvaluateRequest.of(workspace.id, name, data).model_dump_json().encode())
        return reply.decode()

    assert "this one ends in '.o'" in reason("x.o", blob.read_bytes()) and calls == []
    assert "ends in '.s'" in reason("x.s", b".globl softmax_rows\n") and calls == []
    assert "an ELF object" in reason("kernel.cpp", blob.read_bytes()) and calls == []
    assert "ValueError: evaluated" in reason("kernel.cpp", b"int x;\n") and len(calls) == 1  # source goes through
    assert store.read(workspace.id).entries == ()
