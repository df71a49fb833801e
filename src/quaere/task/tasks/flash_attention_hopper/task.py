"""Task module of flash_attention_hopper (see quaere.task.contract.TaskModule).

The scenario design lives in ``scenarios.py``, the references in ``reference.py`` and the comparison
implementations in ``comparisons.py``, all beside this file; they are loaded from this folder (not from the
installed package) so that a copied task folder stays self-contained. torch is imported inside the
functions that need it, so the task loads, lists its scenarios and counts its FLOPs without torch.
"""

from __future__ import annotations

import ctypes
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from quaere.records import Scenario
from quaere.task.contract import Arrays, Comparison, OutputSpec, Precision

WORKSPACE_BYTES = 1 << 20  # room for a tile-scheduler counter or small split-KV partials; contents undefined
ENTRY_ARGTYPES = (
    [ctypes.c_void_p] * 5  # q, k, v, o, lse
    + [ctypes.c_int] * 6  # batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim
    + [ctypes.c_float, ctypes.c_int]  # softmax_scale, causal
    + [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]  # workspace, workspace_bytes, stream
)


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


def _pointer(array: Any, name: str) -> int:
    if not array.is_contiguous():
        raise ValueError(f"{name} must be contiguous for the C ABI (got strides {tuple(array.stride())})")
    return array.data_ptr()


def launch(entry: Any, inputs: Arrays, outputs: Arrays, scenario: Scenario, workspace: Any) -> int:
    """Call ``attention_forward`` on the current stream; returns its status (0 = success)."""
    import torch

    shape = shape_of(scenario)
    entry.argtypes = ENTRY_ARGTYPES
    entry.restype = ctypes.c_int
    ws_pointer = workspace.data_ptr() if workspace is not None else None
    ws_bytes = workspace.numel() * workspace.element_size() if workspace is not None else 0
    status = entry(
        _pointer(inputs["q"], "q"), _pointer(inputs["k"], "k"), _pointer(inputs["v"], "v"),
        _pointer(outputs["o"], "o"), _pointer(outputs["lse"], "lse"),
        shape.batch, shape.seqlen_q, shape.seqlen_k, shape.heads_q, shape.heads_kv, shape.head_dim,
        shape.softmax_scale, int(shape.causal), ws_pointer, ws_bytes, torch.cuda.current_stream().cuda_stream,
    )
    return int(status)


def reference(scenario: Scenario, inputs: Arrays, precision: Precision) -> Arrays:
    """o and lse from ``reference.attention``: fp32 (float32 o) or low precision (bf16 o)."""
    shape = shape_of(scenario)
    o, lse = _sibling("reference").attention(
        inputs["q"], inputs["k"], inputs["v"], shape.causal, shape.softmax_scale, precision
    )
    return {"o": o, "lse": lse}


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
