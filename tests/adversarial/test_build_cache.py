"""Attack: overwrite the cached kernel.so of the initial kernel (in the build cache, ~/.cache/quaere) with a
slow build, so that every later evaluation times the candidate against a crippled baseline.

Defence: a cached build is reused only while its artifact has the sha256 recorded when it was built; a
changed one is rebuilt, and the build log says so.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from quaere.evaluate.build import ARTIFACT_NAME, build_key, build_source
from quaere.task.loader import load_task

from .conftest import Bench, correct_kernel
from .test_other_task import sleepy_initial


def overwrite_with_sleepy(artifact: Path, scratch: Path) -> None:
    sleepy = scratch / "sleepy.cpp"
    sleepy.write_text(sleepy_initial(200))  # a baseline this slow would put every ratio far above 3
    subprocess.run(["c++", "-O2", "-shared", "-fPIC", str(sleepy), "-o", str(artifact)], check=True)


def test_an_overwritten_cached_initial_kernel_is_rebuilt(tmp_path):
    task = load_task("cpu_softmax")
    cache = tmp_path / "builds"
    first = build_source(task.spec, task.initial_kernel, cache, task.folder)
    artifact = Path(first.artifact)
    original = artifact.read_bytes()
    overwrite_with_sleepy(artifact, tmp_path)
    assert artifact.read_bytes() != original
    again = build_source(task.spec, task.initial_kernel, cache, task.folder)
    assert again.artifact == first.artifact and artifact.read_bytes() == original
    assert "no longer had the sha256 recorded at its build: rebuilt" in again.log_tail
    third = build_source(task.spec, task.initial_kernel, cache, task.folder)
    assert "rebuilt" not in third.log_tail  # reused again, now that it matches


def test_a_full_evaluation_after_the_overwrite_times_the_real_initial_kernel(tmp_path, store):
    """Through `quaere eval`, with a candidate of the same algorithm as the initial kernel: its ratio stays
    near 1 instead of the 5x-100x a 20 ms sleep in the baseline would give."""
    from quaere.store.pinning import init_workspace

    workspace, _ = init_workspace(store, tmp_path / "ws", "cpu_softmax", False, tmp_path)
    bench = Bench(workspace, store, tmp_path / "cache")
    workspace.candidate.write_text(correct_kernel())
    assert bench.quaere("eval").returncode == 0
    task = load_task("cpu_softmax")
    artifact = bench.cache / "builds" / build_key(task.spec.build, task.initial_kernel.read_bytes()) / ARTIFACT_NAME
    overwrite_with_sleepy(artifact, tmp_path)
    done = bench.quaere("eval", "--json")
    benchmarks = json.loads(done.stdout)["evaluation"]["benchmarks"]
    ratios = [b["timings"][1]["median_ms"] / b["timings"][0]["median_ms"] for b in benchmarks]
    assert max(ratios) < 3.0, ratios
