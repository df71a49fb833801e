"""The rows a timed output is checked on are drawn apart from its inputs: equal inputs, and rows that the inputs'
seed does not give (red-team round 2, "Sample rows predictable from the inputs")."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from quaere.evaluate.judge_reps import Context
from quaere.task.loader import load_task


def _context(module: SimpleNamespace, scenario, key: bytes) -> Context:
    state = SimpleNamespace(task=SimpleNamespace(module=module))
    return Context(state, scenario, 7, rule=None, timing=None, buffers=None, timeout_s=1.0, key=key)  # type: ignore[arg-type]


def test_the_rows_checked_are_not_the_ones_the_inputs_seed_gives() -> None:
    task = load_task("cpu_softmax").module
    scenario = next(s for s in task.benchmark_scenarios() if s.params["rows"] == 8192)
    seeds: dict[str, list[int]] = {"inputs": [], "sample": []}

    def make_inputs(scenario, seed):
        seeds["inputs"].append(seed)
        return task.make_inputs(scenario, seed)

    def sample(scenario, inputs, seed):
        seeds["sample"].append(seed)
        return task.sample(scenario, inputs, seed)

    module = SimpleNamespace(make_inputs=make_inputs, sample=sample)
    row_numbers = {"y": np.arange(8192)[:, None]}
    first, second = (_context(module, scenario, b"k" * 32) for _ in range(2))
    for ctx in (first, second):
        ctx.stage(3)
    assert np.array_equal(first.staged["x"], second.staged["x"])  # one key and seed: the same inputs
    checked = first.sample(3).take(row_numbers)["y"].ravel()
    assert np.array_equal(second.sample(3).take(row_numbers)["y"].ravel(), checked)  # the judge can draw them again
    inputs_seed = seeds["inputs"][0]
    assert seeds["sample"][0] != inputs_seed
    by_inputs_seed = task.sample(scenario, first.staged, inputs_seed).take(row_numbers)["y"].ravel()
    assert len(checked) == 16 and not np.array_equal(checked, by_inputs_seed)
