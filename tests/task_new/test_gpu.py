"""The new GPU task on an NVIDIA GPU (run on the device machine: -m gpu): `quaere task check` passes it,
its initial kernel is evaluated beside PyTorch and Triton, and `quaere task new` makes a sound task from
its kernel file and reference on the spot. Prints the figures docs/perf.md records."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.device import gpu_present
from quaere.records import TimingStatus
from quaere.task.check import CheckOptions, CheckStatus, check_task
from quaere.task.check_table import render_check
from quaere.task.loader import load_task
from quaere.task.new import create_task
from quaere.task.scaffold import Answers

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_present(), reason="no NVIDIA GPU")]
RMSNORM = load_task("rmsnorm_hopper")


def assert_sound(folder: str, options: CheckOptions) -> None:
    report = check_task(folder, options)
    render_check(report, Console(width=80))
    failing = [(row.name.value, row.detail) for row in report.rows if row.status is CheckStatus.FAILED]
    assert report.sound and not report.static_only, failing


def test_the_shipped_task_is_sound(tmp_path: Path) -> None:
    # Correctness half only: the next test times the benchmark set (and checks the roofline floor there).
    assert_sound("rmsnorm_hopper", CheckOptions(cache_dir=tmp_path / "cache", benchmark=False))


def test_the_initial_kernel_beside_pytorch_and_triton(tmp_path: Path) -> None:
    evaluation = run_evaluation(RMSNORM, RMSNORM.initial_kernel, EvalOptions(cache_dir=tmp_path / "cache"))
    assert evaluation.correct, [(v.scenario_id, v.verdict.value, v.detail[:200]) for v in evaluation.failing()]
    print(f"\nrmsnorm_hopper on {evaluation.device.name}: {len(evaluation.correctness)} scenarios passed; "
          "median ms (GB/s of min_bytes)")
    module = RMSNORM.module
    by_id = {s.id: s for s in module.benchmark_scenarios()}
    for bench in evaluation.benchmarks:
        nbytes = module.min_bytes(by_id[bench.scenario_id])
        cells = [f"{t.impl} {t.median_ms:.4f} ({nbytes / t.median_ms / 1e6:.0f})" if t.status is TimingStatus.MEASURED
                 else f"{t.impl} {t.status.value}: {t.detail[:80]}" for t in bench.timings]
        print(f"  {bench.scenario_id}: " + ", ".join(cells))
        assert not bench.suspect
        for impl in ("candidate", "initial", "pytorch", "triton"):
            timing = bench.timing(impl)
            assert timing is not None and timing.status is TimingStatus.MEASURED, (bench.scenario_id, impl, timing)


def test_task_new_makes_a_sound_task_from_the_kernel_file(tmp_path: Path) -> None:
    folder = RMSNORM.folder
    answers = Answers(shapes={"x": ("rows", "cols"), "weight": ("cols",), "y": ("rows", "cols")},
                      values={"eps": (1e-6, 0.5)}, flops="4 * rows * cols", row_sample=True)
    created = create_task(tmp_path / "rmsnorm_again", folder / "kernel.cu", None, f"{folder / 'reference.py'}:rmsnorm",
                          answers)
    assert created.todos == () and created.reference_note.startswith("reference called on")
    assert_sound(str(created.folder), CheckOptions(cache_dir=tmp_path / "cache", benchmark=False))
