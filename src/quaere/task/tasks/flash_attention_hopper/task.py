"""Task module of flash_attention_hopper (see quaere.task.contract.TaskModule).

The scenario design lives in ``scenarios.py``, the references in ``reference.py`` and the comparison
implementations in ``comparisons.py``, all beside this file; they are loaded from this folder (not from the
installed package) so that a copied task folder stays self-contained. torch is imported inside the
functions that need it, so the task loads, lists its scenarios and counts its FLOPs without torch.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from quaere.records import Scenario
from quaere.task.contract import (
    Arg,
    Arrays,
    Comparison,
    OutputSpec,
    Precision,
    Sample,
    f32,
    i32,
    pointer,
    stream,
    workspace,
    workspace_size,
)

WORKSPACE_BYTES = 1 << 20  # room for a tile-scheduler counter or small split-KV partials; contents undefined

def _sibling(name: str) -> ModuleType:
    """Import ``name``.py from this task folder, once per process."""
    qualified = f"{__name__}__{name}"
    if qualified not in sys.modules:
        spec = importlib.util.spec_from_file_location(qualified, Path(__file__).with_name(f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = module
        spec.loader.exec_module(module)
    return sys.modules[qualified]


_design = _sibling("scenarios")


def shape_of(scenario: Scenario) -> Any:
    """The scenario's ``Shape``; a missing or inconsistent param raises ScenarioError naming it."""
    return _design.Shape.from_params(scenario.params, scenario.id)


def correctness_scenarios() -> list[Scenario]:
    return [Scenario(**row) for row in _design.correctness_scenarios()]


def benchmark_scenarios() -> list[Scenario]:
    return [Scenario(**row) for row in _design.benchmark_scenarios()]


def make_inputs(scenario: Scenario, seed: int) -> Arrays:
    """q [B, Sq, Hq, D], k and v [B, Sk, Hkv, D]: bf16 standard normal on the current CUDA device."""
    import torch

    shape = shape_of(scenario)
    generator = torch.Generator(device="cuda")
    generator.manual_seed(seed)
    q_shape = (shape.batch, shape.seqlen_q, shape.heads_q, shape.head_dim)
    kv_shape = (shape.batch, shape.seqlen_k, shape.heads_kv, shape.head_dim)

    def draw(size: tuple[int, ...]) -> Any:
        return torch.randn(size, generator=generator, device="cuda", dtype=torch.bfloat16)

    return {"q": draw(q_shape), "k": draw(kv_shape), "v": draw(kv_shape)}


def output_specs(scenario: Scenario) -> dict[str, OutputSpec]:
    shape = shape_of(scenario)
    return {
        "o": OutputSpec((shape.batch, shape.seqlen_q, shape.heads_q, shape.head_dim), "bfloat16"),
        "lse": OutputSpec((shape.batch, shape.heads_q, shape.seqlen_q), "float32"),
    }


def workspace_bytes(scenario: Scenario) -> int:
    return WORKSPACE_BYTES


def arguments(scenario: Scenario) -> list[Arg]:
    """``int attention_forward(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim,
    softmax_scale, causal, workspace, workspace_bytes, stream)``; see README.md beside this file."""
    shape = shape_of(scenario)
    return [
        pointer("q"), pointer("k"), pointer("v"), pointer("o"), pointer("lse"),
        i32(shape.batch), i32(shape.seqlen_q), i32(shape.seqlen_k), i32(shape.heads_q), i32(shape.heads_kv),
        i32(shape.head_dim), f32(shape.softmax_scale), i32(int(shape.causal)), workspace(), workspace_size(),
        stream(),
    ]


def reference(scenario: Scenario, inputs: Arrays, precision: Precision) -> Arrays:
    """o and lse from ``reference.attention``: fp32 (float32 o) or low precision (bf16 o)."""
    shape = shape_of(scenario)
    o, lse = _sibling("reference").attention(
        inputs["q"], inputs["k"], inputs["v"], shape.causal, shape.softmax_scale, precision
    )
    return {"o": o, "lse": lse}


SAMPLE_ROWS = 16  # query rows verified per timed call (every head dim: <= 16 x Sk x D fp32 values at once)


def sample(scenario: Scenario, inputs: Arrays, seed: int) -> Sample:
    """``SAMPLE_ROWS`` random (batch, query, head) rows of o and lse with both references of those rows."""
    import torch

    shape = shape_of(scenario)
    generator = torch.Generator(device="cpu")
    generator.manual_seed(seed)
    count = SAMPLE_ROWS

    def draw(high: int) -> Any:
        return torch.randint(0, high, (count,), generator=generator).to("cuda")

    b, i, h = draw(shape.batch), draw(shape.seqlen_q), draw(shape.heads_q)
    rows = _sibling("reference").attention_rows
    o32, lse32 = rows(inputs["q"], inputs["k"], inputs["v"], b, i, h, shape.causal, shape.softmax_scale, "fp32")
    o16, lse16 = rows(inputs["q"], inputs["k"], inputs["v"], b, i, h, shape.causal, shape.softmax_scale, "low")

    def take(outputs: Arrays) -> Arrays:
        return {"o": outputs["o"][b, i, h], "lse": outputs["lse"][b, h, i]}

    return Sample(take=take, fp32={"o": o32, "lse": lse32}, low={"o": o16, "lse": lse16})


def flops(scenario: Scenario) -> float:
    """4 * B * Hq * D per (query, key) pair the mask allows; causal pairs counted exactly (bottom-right)."""
    return _design.flops(shape_of(scenario))


def min_bytes(scenario: Scenario) -> float:
    return _design.min_bytes(shape_of(scenario))


def _comparison(factory: Any) -> Comparison:
    def build(scenario: Scenario, inputs: Arrays, outputs: Arrays) -> Any:
        return factory(shape_of(scenario), inputs)

    return build


def comparisons() -> dict[str, Comparison]:
    """fa3 (fa3-fwd wheel), cudnn and fa2 (PyTorch SDPA backends); each may raise ComparisonUnavailable."""
    compare = _sibling("comparisons")
    return {
        "fa3": _comparison(compare.fa3),
        "cudnn": _comparison(compare.sdpa("CUDNN_ATTENTION")),
        "fa2": _comparison(compare.sdpa("FLASH_ATTENTION")),
    }
