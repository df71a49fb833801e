"""The pool on a host with two or more GPUs (run on an nvidia-h200-x2 with -m gpu -s): a full FlashAttention
evaluation spread over the GPUs against the same evaluation on one GPU (wall time, verdicts, ratios within
noise), and two scripted campaigns sharing the pool. Prints the figures for docs/cluster.md."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.device import gpu_present
from quaere.evaluate.pool import PoolSpec
from quaere.evaluate.stats import geomean
from quaere.records import Evaluation, TimingStatus
from quaere.task.loader import Task, load_task

if TYPE_CHECKING:
    from quaere.evaluate.pool_ray import RayPool

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_present(), reason="no NVIDIA GPU"),
              pytest.mark.timeout(3600)]
ray = pytest.importorskip("ray", reason="the evaluation pool needs Ray: pip install 'quaere[cluster]'")

SHIPPED_KERNEL = Path(__file__).parents[2] / "kernels" / "flash_attention_hopper.cu"
RATIO_NOISE = 0.10
"""How far one configuration's ratio may move between two runs on two GPUs of one host (the H200's
configurations spread 0.3-3.5 % IQR each; two medians of two devices, and the devices' own difference)."""
GEOMEAN_NOISE = 0.04


@pytest.fixture(scope="module")
def fa() -> Task:
    return load_task("flash_attention_hopper")


@pytest.fixture(scope="module")
def gpu_pool(ray_session: str, pool_cache: Path) -> Iterator[RayPool]:
    from quaere.evaluate.pool_ray import start_pool

    gpus = int(ray.cluster_resources().get("GPU", 0))
    if gpus < 2:
        pytest.skip(f"{gpus} GPU(s) here: the pool's GPU tests need two or more")
    pool = start_pool(PoolSpec(size=gpus), "cuda", pool_cache)
    try:
        yield pool
    finally:
        pool.close()


def _ratios(evaluation: Evaluation, baseline: str) -> dict[str, float]:
    return {b.scenario_id: b.ratio(baseline) for b in evaluation.benchmarks}


def test_a_full_evaluation_spread_over_the_gpus_matches_one_gpu(fa: Task, gpu_pool: RayPool, pool_cache: Path) -> None:
    options = EvalOptions(seed=20261201, cache_dir=pool_cache)
    one = run_evaluation(fa, SHIPPED_KERNEL, options)  # the sequential path: this process tree, GPU 0
    spread = run_evaluation(fa, SHIPPED_KERNEL, options, executor=gpu_pool)

    assert one.correct and spread.correct, (one.note, spread.note)
    assert ([(v.scenario_id, v.verdict) for v in spread.correctness]
            == [(v.scenario_id, v.verdict) for v in one.correctness])
    devices = {b.placement.device for b in spread.benchmarks}
    assert len(devices) == len(gpu_pool.actors), devices  # every GPU timed some configuration
    for bench in spread.benchmarks:
        assert all(t.status in (TimingStatus.MEASURED, TimingStatus.UNAVAILABLE) for t in bench.timings), bench
    print(f"\none GPU: {one.wall_s:.1f} s; {len(gpu_pool.actors)} GPUs: {spread.wall_s:.1f} s "
          f"({one.wall_s / spread.wall_s:.2f}x); {len(one.correctness)} scenarios, "
          f"{len(one.benchmarks)} configurations")
    for baseline in ("initial", "fa3"):
        mine, theirs = _ratios(spread, baseline), _ratios(one, baseline)
        measured = [k for k in mine if math.isfinite(mine[k]) and math.isfinite(theirs[k])]
        if not measured:
            continue
        moved = {k: mine[k] / theirs[k] - 1 for k in measured}
        g_spread, g_one = geomean([mine[k] for k in measured]), geomean([theirs[k] for k in measured])
        print(f"vs {baseline}: geomean {g_one:.3f} on one GPU, {g_spread:.3f} spread; largest move "
              f"{max(moved.values(), key=abs):+.1%}")
        print(json.dumps({k: [round(theirs[k], 4), round(mine[k], 4)] for k in measured}))
        assert abs(g_spread / g_one - 1) < GEOMEAN_NOISE
        assert all(abs(m) < RATIO_NOISE for m in moved.values()), moved
    assert spread.wall_s < one.wall_s


def test_two_scripted_campaigns_share_the_gpu_pool(gpu_pool: RayPool, ray_session: str, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"bash": f"cp {SHIPPED_KERNEL} kernel.cu && quaere eval"}, {"stop": "done"}]))
    command = [sys.executable, "-m", "quaere", "run", "--task", "flash_attention_hopper", "--agent", "scripted",
               "--script", str(script), "--sessions", "1", "--parallel", "2", "--pool", ray_session,
               "--workspace", "runs"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=3000,
                          env=dict(os.environ), check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    print("\n" + done.stdout)
    for name in ("campaign-1", "campaign-2"):
        lines = (tmp_path / "runs" / name / ".quaere" / "ledger.jsonl").read_text().splitlines()
        evaluations = [Evaluation.model_validate_json(line) for line in lines]
        assert evaluations and all(e.correct for e in evaluations), [e.note for e in evaluations]
        workers = {b.placement.worker for e in evaluations for b in e.benchmarks}
        assert workers <= set(gpu_pool.actors)
        print(name, f"{len(evaluations)} evaluation(s), wall {[round(e.wall_s) for e in evaluations]} s, "
              f"timed on {sorted({b.placement.device for e in evaluations for b in e.benchmarks})}")
