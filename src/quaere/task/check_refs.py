"""What ``quaere task check`` learns by running a task's own Python on every correctness scenario: both
references (shapes, dtypes, NaN), the null candidates the judge also tries (all zeros, a copy of an
input), a one-ulp-off output, and the buffers' bytes; and whether ``sample()`` agrees with the full
references. Everything here runs in the checking process (the task's own code, no candidate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from quaere.evaluate.correctness import Rule, passes
from quaere.evaluate.shared import DTYPE_BYTES
from quaere.records import Scenario
from quaere.task.contract import OutputSpec
from quaere.task.loader import Task

ULP_NULL = "one-ulp-off"


@dataclass(frozen=True)
class ScenarioFacts:
    scenario_id: str
    problem: str = ""
    """Why the references are unusable here ('' when they are fine)."""
    low_error: float = 0.0
    """Largest error of the low-precision reference against the high one, over the outputs."""
    passing_nulls: tuple[str, ...] = ()
    """Null candidates that would pass (each must fail)."""
    ulp_passes: bool = False
    """Whether an output one ulp off the correctly rounded high reference would pass."""
    input_bytes: int = 0
    output_bytes: int = 0


def _dtype(array: Any) -> str:
    return str(array.dtype).removeprefix("torch.")


def _nbytes(array: Any) -> int:
    return math.prod(tuple(array.shape)) * DTYPE_BYTES.get(_dtype(array), 0)


def _cast(array: Any, dtype: str) -> Any:
    if hasattr(array, "astype"):
        return array.astype(dtype)
    import torch

    return array.to(getattr(torch, dtype))


def reference_problem(name: str, value: Any, spec: OutputSpec, precision: str) -> str:
    """What is wrong with one reference output ('' when nothing)."""
    shape = tuple(getattr(value, "shape", ()))
    dtype = _dtype(value) if hasattr(value, "dtype") else type(value).__name__
    if shape != tuple(spec.shape):
        return f"{precision} reference '{name}' has shape {shape}; expected {tuple(spec.shape)}"
    if precision == "low" and dtype != spec.dtype:
        return f"low reference '{name}' is {dtype}; expected {spec.dtype}, the output's type"
    if precision == "fp32" and (not dtype.startswith("float") or DTYPE_BYTES.get(dtype, 0) < DTYPE_BYTES[spec.dtype]):
        return f"high reference '{name}' is {dtype}; expected a floating type at least as wide as {spec.dtype}"
    return ""


def one_ulp_off(ops: Any, ref32: Any, dtype: str) -> Any:
    """The high reference rounded to ``dtype``, every element then moved one ulp away from zero (its bits
    plus one): what a kernel that rounds the last bit the wrong way everywhere writes."""
    rounded = ops.copy(_cast(ref32, dtype))
    ints = ops.int_view(rounded)
    ints += 1
    return rounded


def scenario_facts(task: Task, ops: Any, scenario: Scenario, seed: int, rule: Rule) -> ScenarioFacts:
    """Both references, the null candidates and the one-ulp-off output on ``scenario``."""
    module = task.module
    specs = module.output_specs(scenario)
    inputs = module.make_inputs(scenario, seed)
    sizes = {"input_bytes": sum(_nbytes(a) for a in inputs.values()),
             "output_bytes": sum(math.prod(s.shape) * DTYPE_BYTES[s.dtype] for s in specs.values())}
    try:
        refs = {p: module.reference(scenario, inputs, p) for p in ("fp32", "low")}
    except Exception as exc:  # the task's code: its message (a ReferenceFailed names the file) in the table
        return ScenarioFacts(scenario.id, problem=f"{type(exc).__name__}: {exc}", **sizes)
    for precision, outputs in refs.items():
        missing = sorted(set(specs) - set(outputs))
        if missing:
            return ScenarioFacts(scenario.id, problem=f"{precision} reference lacks output(s) {missing}", **sizes)
        for name, spec in specs.items():
            problem = reference_problem(name, outputs[name], spec, precision)
            if problem:
                return ScenarioFacts(scenario.id, problem=problem, **sizes)
    lows = {name: ops.compare(refs["low"][name], refs["fp32"][name]) for name in specs}
    for name in specs:
        nan = ops.compare(refs["fp32"][name], refs["fp32"][name])
        if nan.nan_count:
            return ScenarioFacts(scenario.id, problem=f"high reference '{name}' holds {nan.nan_count} NaN", **sizes)
        if lows[name].nonfinite_mismatch:
            return ScenarioFacts(scenario.id, problem=f"low reference '{name}' is non-finite where the high one is not "
                                 f"({lows[name].nonfinite_mismatch} elements)", **sizes)
    nulls = {name: ops.null_candidates(spec, inputs) for name, spec in specs.items()}
    kinds = set.intersection(*(set(n) for n in nulls.values()))
    passing = tuple(sorted(k for k in kinds if passes(
        {name: (ops.compare(nulls[name][k], refs["fp32"][name]), lows[name]) for name in specs}, rule)))
    ulp = {name: (ops.compare(one_ulp_off(ops, refs["fp32"][name], spec.dtype), refs["fp32"][name]), lows[name])
           for name, spec in specs.items()}
    low_error = max((s.max_abs_err for s in lows.values()), default=0.0)
    return ScenarioFacts(scenario.id, low_error=low_error, passing_nulls=passing, ulp_passes=passes(ulp, rule), **sizes)


def sample_problem(task: Task, ops: Any, scenario: Scenario, seed: int, rule: Rule) -> str:
    """Whether ``sample()`` agrees with the full references on ``scenario`` ('' when it does): each
    sampled high reference within the scenario's bound of the same elements of the full one."""
    module = task.module
    inputs = module.make_inputs(scenario, seed)
    try:
        full = {p: module.reference(scenario, inputs, p) for p in ("fp32", "low")}
        sample = module.sample(scenario, inputs, seed)
        taken = {p: sample.take(full[p]) for p in ("fp32", "low")}
    except Exception as exc:  # the task's code
        return f"{scenario.id}: {type(exc).__name__}: {exc}"
    for name in module.output_specs(scenario):
        bound = rule.bound(ops.compare(full["low"][name], full["fp32"][name]).max_abs_err)
        for precision, picked in (("fp32", sample.fp32), ("low", sample.low)):
            error = ops.compare(picked[name], taken[precision][name])
            if error.nan_count or error.nonfinite_mismatch or not error.max_abs_err <= bound:
                return (f"{scenario.id}: the sampled {precision} reference of '{name}' is {error.max_abs_err:.3g} "
                        f"off the full one's same elements; expected within {bound:.3g}")
    return ""
