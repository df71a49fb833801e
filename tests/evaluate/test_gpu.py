"""The evaluator on an NVIDIA GPU with the FlashAttention task (run on the device machine: -m gpu).

Prints the figures the issue asks for: wall time of a full evaluation, per-configuration spread, and the
geomean ratio between two timings of the same kernel.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.device import gpu_present
from quaere.evaluate.judging import MAX_TIMEOUTS
from quaere.evaluate.ledger import append_evaluation, read_ledger
from quaere.evaluate.stats import geomean, relative_spread
from quaere.records import TimingStatus, Verdict
from quaere.task.loader import load_task

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_present(), reason="no NVIDIA GPU")]
GPU_FIXTURES = Path(__file__).parent.parent / "fixtures" / "gpu"


@pytest.fixture(scope="module")
def fa_task():
    return load_task("flash_attention_hopper")


@pytest.fixture
def few_scenarios(fa_task, tmp_path: Path) -> Path:
    chosen = fa_task.module.correctness_scenarios()[:: max(1, len(fa_task.module.correctness_scenarios()) // 3)][:3]
    path = tmp_path / "few.json"
    path.write_text(json.dumps([s.model_dump(mode="json") for s in chosen]))
    return path


def test_torch_ops_on_the_device() -> None:
    import torch

    from quaere.evaluate.arrays import TorchCudaOps, guard_elems
    from quaere.task.contract import OutputSpec

    ops = TorchCudaOps()
    spec = OutputSpec((4, 1000, 8, 128), "bfloat16")
    view, whole = ops.alloc_guarded(spec, guard_elems(spec))
    assert view.is_cuda and view.data_ptr() % 256 == 0
    ops.poison(view)
    assert ops.count_poison(view) == view.numel() and ops.guards_intact(whole, guard_elems(spec))
    big = torch.randn(1 << 22, device="cuda", dtype=torch.bfloat16)
    before = ops.checksum(big)
    big[12345] += 1
    assert ops.checksum(big) != before


def test_the_cover_reads_the_clock_it_ran_at() -> None:
    """A spin of N cycles and one of 4N give the same clock (so the events time the spin, not a fixed cost),
    and one inside the SM clocks a GPU has. Medians of five readings each: on the H200 one short reading in four
    once came 8% under the others (2026-12-05), which a fixed cost in the events would repeat, a clock step not."""
    import torch

    from quaere.evaluate.clocks import CudaClock

    torch.empty(1, device="cuda")  # the primary context current on this thread, whichever test ran before
    clock = CudaClock(flush=False)
    for _ in range(3):  # the spin kernel's first load, and the clocks' climb from idle (345 MHz on the H200)
        clock.cover(20_000_000)
        clock.cover_mhz()
    readings: dict[int, list[float]] = {1_000_000: [], 4_000_000: []}
    for _ in range(5):
        for cycles, seen in readings.items():
            clock.cover(cycles)
            seen.append(clock.cover_mhz())
    print(f"\ncover clocks (MHz): { {n: [round(r) for r in seen] for n, seen in readings.items()} }")
    medians = [statistics.median(seen) for seen in readings.values()]
    assert all(100 < r < 5000 for seen in readings.values() for r in seen), readings
    assert max(medians) / min(medians) < 1.03, readings


def test_the_close_mark_falls_between_the_calls_work_and_the_reply(fa_task) -> None:
    """The judge's close mark (quaere.evaluate.close_word) is reached on every timed call: its span exceeds the
    claimed device time (the call is inside it) and ends before the mark enqueued after the reply."""
    options = EvalOptions(correctness=False, benchmark_ids=frozenset({"d128-h16-s512-noncausal",
                                                                       "d256-h8-s4096-causal"}))
    evaluation = run_evaluation(fa_task, fa_task.initial_kernel, options)
    for bench in evaluation.benchmarks:
        for impl in ("candidate", "initial"):
            timing = bench.timing(impl)
            print(f"  {bench.scenario_id} {impl}: {timing.status.value} close overhead "
                  f"{timing.close_overhead_ms * 1e3:.1f} us, span overhead {timing.span_overhead_ms * 1e3:.1f} us")
            assert timing.status is TimingStatus.MEASURED, timing.detail
            assert 0 < timing.close_overhead_ms < timing.span_overhead_ms


def test_fa_initial_kernel_passes_every_scenario_and_is_timed(fa_task, tmp_path: Path) -> None:
    evaluation = run_evaluation(fa_task, fa_task.initial_kernel, EvalOptions())
    append_evaluation(tmp_path / "ledger.jsonl", evaluation)
    print(f"\nfull evaluation: {len(evaluation.correctness)} scenarios + {len(evaluation.benchmarks)} configs, "
          f"wall {evaluation.wall_s:.1f} s; device {evaluation.device.name} driver {evaluation.device.driver}")
    for bench in evaluation.benchmarks:
        cells = [f"{t.impl} {t.median_ms:.3f} ms ({relative_spread(t.samples_ms):.1%}, {t.cover_mhz:.0f} MHz)"
                 if t.status is TimingStatus.MEASURED else f"{t.impl} {t.status.value}" for t in bench.timings]
        print(f"  {bench.scenario_id}: " + ", ".join(cells))
        for t in bench.timings:
            if t.detail:  # a failure's reason, or a note such as a second timed run's
                print(f"    {t.impl}: {t.detail[:400]}")
    assert evaluation.correct, [(v.scenario_id, v.verdict.value, v.detail[:200]) for v in evaluation.failing()]
    assert all(b.timing("candidate").status is TimingStatus.MEASURED for b in evaluation.benchmarks)
    measured = [t for b in evaluation.benchmarks for t in b.timings if t.status is TimingStatus.MEASURED]
    assert all(100 < t.cover_mhz < 5000 for t in measured), [(t.impl, t.cover_mhz) for t in measured]
    assert read_ledger(tmp_path / "ledger.jsonl").problems == ()


def test_fa_timing_is_repeatable(fa_task) -> None:
    options = EvalOptions(correctness=False)
    first, second = (run_evaluation(fa_task, fa_task.initial_kernel, options) for _ in range(2))
    ratios = [a.timing("candidate").median_ms / b.timing("candidate").median_ms
              for a, b in zip(first.benchmarks, second.benchmarks, strict=True)]
    drift = geomean(ratios)
    print(f"\nsame kernel timed twice: geomean ratio {drift:.4f} over {len(ratios)} configs")
    assert math.isfinite(drift) and abs(drift - 1.0) <= 0.02


@pytest.mark.parametrize(
    ("fixture", "verdict"),
    [("crash.cu", Verdict.CRASHED), ("hang.cu", Verdict.TIMED_OUT), ("wrong.cu", Verdict.WRONG)],
)
def test_fa_adversarial_candidates(
    fa_task, few_scenarios: Path, tmp_path: Path, fixture: str, verdict: Verdict
) -> None:
    options = EvalOptions(scenarios_file=few_scenarios, benchmark=False, scenario_timeout_s=20.0)
    evaluation = run_evaluation(fa_task, GPU_FIXTURES / fixture, options)
    details = [v.detail[:300] for v in evaluation.correctness]
    verdicts = [v.verdict for v in evaluation.correctness]
    if verdict is Verdict.TIMED_OUT:
        # After MAX_TIMEOUTS timeouts the evaluation stops waiting: the first scenarios time out, the
        # rest are skipped with a reason that names them.
        assert verdicts[:MAX_TIMEOUTS] == [Verdict.TIMED_OUT] * MAX_TIMEOUTS, details
        skipped = evaluation.correctness[MAX_TIMEOUTS:]
        assert all(v.verdict is Verdict.NOT_RUN and "timed out" in v.detail for v in skipped), details
    else:
        assert set(verdicts) == {verdict}, details
    ledger = tmp_path / "ledger.jsonl"
    append_evaluation(ledger, evaluation)
    assert read_ledger(ledger).problems == () and len(read_ledger(ledger).evaluations) == 1
