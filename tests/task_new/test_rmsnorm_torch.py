"""The rmsnorm_hopper task's PyTorch side on CPU tensors, where torch is installed (skipped elsewhere): its
reference at both precisions, the null candidates, the row sample, and both comparisons (Triton under its
interpreter) against the high reference; and the initial kernel's arithmetic within the task's bound."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from quaere.evaluate.correctness import Rule
from quaere.records import Scenario
from quaere.task.check_refs import sample_problem, scenario_facts
from quaere.task.loader import load_task

torch = pytest.importorskip("torch")
TASK = load_task("rmsnorm_hopper")
RULE = Rule(TASK.spec.correctness.factor, TASK.spec.correctness.floor)


@pytest.fixture
def on_cpu(monkeypatch: pytest.MonkeyPatch):
    from quaere.evaluate.arrays import TorchCudaOps

    monkeypatch.setattr(TASK.module, "DEVICE", "torch:cpu")  # the task's inputs drawn as CPU tensors
    return TorchCudaOps(device="cpu")


def test_references_nulls_and_sample_on_cpu_tensors(on_cpu) -> None:
    scenarios = [s for s in TASK.module.correctness_scenarios() if s.params["rows"] * s.params["cols"] <= 1 << 16]
    for scenario in scenarios[::4]:
        facts = scenario_facts(TASK, on_cpu, scenario, 1, RULE)
        assert facts.problem == "" and facts.passing_nulls == () and facts.low_error > 0, facts
    for scenario in TASK.module.benchmark_scenarios()[:2]:
        assert sample_problem(TASK, on_cpu, scenario, 1, RULE) == ""


def test_fp32_arithmetic_rounded_once_is_within_the_bound(on_cpu) -> None:
    """What the initial kernel computes (fp32, one rounding) passes where the bf16 reference sets the bound."""
    scenario = Scenario(id="rows300-cols5000", params={"rows": 300, "cols": 5000, "eps": 1e-6})
    inputs = TASK.module.make_inputs(scenario, 3)
    high, low = (TASK.module.reference(scenario, inputs, p)["y"] for p in ("fp32", "low"))
    x, w = inputs["x"].float(), inputs["weight"].float()
    kernel = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w).to(torch.bfloat16)
    bound = RULE.bound(on_cpu.compare(low, high).max_abs_err)
    assert on_cpu.compare(kernel, high).max_abs_err <= bound / 2


def test_the_pytorch_comparison_computes_rmsnorm(on_cpu) -> None:
    scenario = Scenario(id="rows64-cols1024", params={"rows": 64, "cols": 1024, "eps": 0.5})
    inputs = TASK.module.make_inputs(scenario, 2)
    got = TASK.module.comparisons()["pytorch"](scenario, inputs, {})()
    high = TASK.module.reference(scenario, inputs, "fp32")["y"]
    assert on_cpu.compare(got, high).max_abs_err <= 0.05


TRITON_SCRIPT = """
import torch
from quaere.records import Scenario
from quaere.task.loader import load_task
task = load_task("rmsnorm_hopper")
task.module.DEVICE = "torch:cpu"
for rows, cols in ((3, 7), (5, 1000), (2, 4097)):
    scenario = Scenario(id=f"r{rows}c{cols}", params={"rows": rows, "cols": cols, "eps": 0.5})
    inputs = task.module.make_inputs(scenario, 1)
    y = torch.full((rows, cols), float("nan"), dtype=torch.bfloat16)
    task.module.comparisons()["triton"](scenario, inputs, {"y": y})
    high = task.module.reference(scenario, inputs, "fp32")["y"]
    assert (y.float() - high).abs().max().item() <= 0.05, (rows, cols)
print("triton ok")
"""


def test_the_triton_comparison_under_the_interpreter() -> None:
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", TRITON_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=600, check=False, cwd=Path(__file__).parent)
    assert done.returncode == 0 and "triton ok" in done.stdout, done.stderr[-3000:]
