"""The evaluation pool on a local Ray instance with the CPU task: several candidates at once give the
sequential path's verdicts, configurations are timed whole on one judge and say where, and a judge killed
mid-evaluation is recovered (or, with no other judge, its scenarios are runner_lost and the record partial)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.pool import PoolError, PoolSpec
from quaere.records import Evaluation, TimingStatus, Verdict
from quaere.store.classify import classify, partial_reasons
from quaere.store.records import PartialReason, RunKind
from quaere.task.loader import Task

from .conftest import CANDIDATES, FIXTURES

if TYPE_CHECKING:
    from quaere.evaluate.pool_ray import RayPool

ray = pytest.importorskip("ray", reason="the evaluation pool needs Ray: pip install 'quaere[cluster]'")

SEED = 11


def _verdicts(evaluation: Evaluation) -> list[tuple]:
    """What must not depend on where a scenario ran (the detail may name a process id or a path)."""
    return [(v.scenario_id, v.verdict, v.seed, v.errors) for v in evaluation.correctness]


class KillOnFirstVerdict:
    """A progress listener that kills ``victim`` when the first correctness verdict comes back: the other
    judges still have units in hand then."""

    def __init__(self, pool: RayPool, victim: str) -> None:
        self.pool, self.victim, self.phase, self.killed = pool, victim, "", False

    def begin(self, phase: str, total: int) -> None:
        self.phase = phase

    def advance(self, label: str) -> None:
        if self.phase == "correctness" and not self.killed:
            self.killed = True
            ray.kill(self.pool.actors[self.victim], no_restart=False)


def test_four_candidates_at_once_get_the_sequential_verdicts(cpu_pool: RayPool, softmax: Task, pool_cache: Path,
                                                            tmp_path: Path) -> None:
    candidates = [softmax.initial_kernel, CANDIDATES / "slightly_wrong.cpp", CANDIDATES / "returns_nan.cpp",
                  CANDIDATES / "unwritten.cpp"]
    scenarios = tmp_path / "scenarios.json"  # half the task's set: the sequential side runs four times too
    scenarios.write_text(json.dumps([s.model_dump() for s in softmax.module.correctness_scenarios()[:10]]))
    options = EvalOptions(seed=SEED, benchmark=False, scenarios_file=scenarios, cache_dir=pool_cache)
    sequential = [run_evaluation(softmax, c, options) for c in candidates]
    with ThreadPoolExecutor(len(candidates)) as threads:
        pooled = list(threads.map(lambda c: run_evaluation(softmax, c, options, executor=cpu_pool), candidates))

    assert [_verdicts(e) for e in pooled] == [_verdicts(e) for e in sequential]
    assert pooled[0].correct
    assert [expected in {v.verdict for v in e.correctness}
            for e, expected in zip(pooled[1:], (Verdict.WRONG, Verdict.NONFINITE, Verdict.UNWRITTEN),
                                   strict=True)] == [True] * 3
    assert all(e.isolation.seccomp and e.isolation.separate_process for e in pooled)


def test_each_configuration_is_timed_whole_on_one_judge_and_says_which(cpu_pool: RayPool, softmax: Task,
                                                                       pool_cache: Path) -> None:
    ids = frozenset(s.id for s in softmax.module.benchmark_scenarios()[:2])
    options = EvalOptions(seed=SEED, benchmark_ids=ids, cache_dir=pool_cache)
    evaluation = run_evaluation(softmax, softmax.initial_kernel, options, executor=cpu_pool)

    assert evaluation.correct and {b.scenario_id for b in evaluation.benchmarks} == ids
    for bench in evaluation.benchmarks:
        assert bench.placement.worker in cpu_pool.actors and bench.placement.device == "cpu"
        assert bench.placement.node == cpu_pool.infos[bench.placement.worker].placement.node
        assert [t.impl for t in bench.timings] == ["candidate", "initial", "numpy"]
        # timed there, all of it (on a busy 2-core machine the clock bound may still call a time hidden_work)
        assert all(t.samples_ms and t.status not in (TimingStatus.FAILED, TimingStatus.RUNNER_LOST)
                   for t in bench.timings), bench.timings


def test_a_judge_killed_mid_evaluation_gives_its_scenarios_to_another(cpu_pool: RayPool, softmax: Task,
                                                                      pool_cache: Path) -> None:
    options = EvalOptions(seed=SEED, benchmark=False, cache_dir=pool_cache)
    victim = sorted(cpu_pool.actors)[-1]
    listener = KillOnFirstVerdict(cpu_pool, victim)
    evaluation = run_evaluation(softmax, FIXTURES / "slow.cpp", options, listener, executor=cpu_pool)

    failing = [(v.scenario_id, v.verdict.value, v.detail[:300]) for v in evaluation.correctness
               if v.verdict is not Verdict.PASSED]
    assert listener.killed and evaluation.correct and not evaluation.lost, (failing, evaluation.note)
    assert f"judge {victim} was lost" in evaluation.note and "given to another judge" in evaluation.note
    assert PartialReason.RUNNER_LOST not in partial_reasons(options, True, evaluation)
    assert ray.get(cpu_pool.actors[victim].describe.remote()).name == victim  # Ray restarted it


def test_with_no_judge_left_the_scenarios_are_runner_lost_and_the_record_partial(ray_session: str, softmax: Task,
                                                                                pool_cache: Path) -> None:
    from quaere.evaluate.pool_ray import start_pool

    pool = start_pool(PoolSpec(size=1), "cpu", pool_cache, restarts=0)
    try:
        (victim,) = pool.actors
        options = EvalOptions(cache_dir=pool_cache)  # a full evaluation: only the loss makes it partial
        evaluation = run_evaluation(softmax, FIXTURES / "slow.cpp", options, KillOnFirstVerdict(pool, victim),
                                    executor=pool)
    finally:
        pool.close()

    lost = [v for v in evaluation.correctness if v.verdict is Verdict.RUNNER_LOST]
    assert lost and evaluation.lost and not evaluation.correct
    assert {v.verdict for v in evaluation.correctness} <= {Verdict.PASSED, Verdict.RUNNER_LOST}
    assert all(victim in v.detail for v in lost if "lost on: none" not in v.detail)
    kind, reasons = classify(options, True, evaluation)
    assert kind is RunKind.PARTIAL and reasons == (PartialReason.RUNNER_LOST,)


def test_a_pool_for_another_device_runs_nothing_and_says_why(cpu_pool: RayPool, softmax: Task) -> None:
    probe = cpu_pool.probe("cuda")
    assert not probe.available and "cpu actors" in probe.reason
    assert cpu_pool.probe("cpu").available


def test_more_gpu_judges_than_gpus_is_refused_by_name(ray_session: str) -> None:
    from quaere.evaluate.pool_ray import start_pool

    gpus = int(ray.cluster_resources().get("GPU", 0))
    with pytest.raises(PoolError, match=f"local:{gpus + 1}: this machine has {gpus} GPU"):
        start_pool(PoolSpec(size=gpus + 1), "cuda")


def test_the_dlopen_guard_is_read_where_the_judge_ran(cpu_pool: RayPool, softmax: Task, pool_cache: Path,
                                                      tmp_path: Path) -> None:
    """With cuBLAS banned, each actor's runners run under the guard and its findings come back in the record."""
    import shutil

    from quaere.task.loader import load_task

    folder = tmp_path / "banned"
    shutil.copytree(softmax.folder, folder)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("banned = []", 'banned = ["cublas"]'))
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps([s.model_dump() for s in softmax.module.correctness_scenarios()[:4]]))
    options = EvalOptions(seed=SEED, benchmark=False, scenarios_file=scenarios, cache_dir=pool_cache)
    loader = run_evaluation(load_task(str(folder)), CANDIDATES / "dlopens_cublas.cpp", options, executor=cpu_pool)

    assert {v.verdict for v in loader.correctness} == {Verdict.BANNED_AT_RUNTIME}
    assert "runtime_dlopen" in {f.rule for f in loader.audit}
