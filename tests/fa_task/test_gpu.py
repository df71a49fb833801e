"""flash_attention_hopper on a real GPU: the initial kernel against the task's references with the task's
rule, its status codes, the references against torch, and each comparison computing the same attention.

Run on the device machine: ``python3 -m pytest tests/fa_task/test_gpu.py -m gpu -q``.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from quaere.records import Scenario
from quaere.task.contract import ComparisonUnavailable
from quaere.task.loader import load_task

pytestmark = pytest.mark.gpu

# A handful of correctness scenarios by id: fully masked rows, decode, GQA/MQA, every head dim, custom scale.
CHOSEN = [
    "d64-causal-mqa-h5kv1-b6-sq65-sk7-scale0.2",
    "d256-causal-gqa4-h12kv3-b8-sq65-sk7",
    "d128-causal-gqa4-h8kv2-b2-sq130-sk2-scale0.2",
    "d256-causal-mha-h2kv2-b1-sq4097-sk65",
    "d256-causal-gqa8-h8kv1-b1-sq64-sk63",
    "d128-causal-gqa8-h8kv1-b1-sq1-sk4097-scale0.2",
    "d256-noncausal-gqa4-h4kv1-b1-sq129-sk1-scale0.2",
    "d64-noncausal-gqa4-h8kv2-b1-sq4097-sk16384-scale0.2",
    "d128-causal-mha-h2kv2-b1-sq8191-sk8191-scale0.2",
]


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch


@pytest.fixture(scope="module")
def task():
    return load_task("flash_attention_hopper")


@pytest.fixture(scope="module")
def entry(torch, built: Path):
    return ctypes.CDLL(str(built)).attention_forward


def by_id(task, ident: str) -> Scenario:
    found = [s for s in task.module.correctness_scenarios() if s.id == ident]
    assert found, f"no correctness scenario {ident}"
    return found[0]


def run_candidate(torch, task, entry, scenario: Scenario, seed: int) -> tuple[dict, dict]:
    module = task.module
    inputs = module.make_inputs(scenario, seed)
    outputs = {
        name: torch.full(spec.shape, float("nan"), dtype=getattr(torch, spec.dtype), device="cuda")
        for name, spec in module.output_specs(scenario).items()
    }
    workspace = torch.full((module.workspace_bytes(scenario),), 0xA5, dtype=torch.uint8, device="cuda")
    assert call_in_process(torch, entry, module.arguments(scenario), {**inputs, **outputs}, workspace) == 0
    torch.cuda.synchronize()
    return inputs, outputs


def call_in_process(torch, entry, args, arrays: dict, workspace) -> int:
    """The runner's call, done here: the task's argument list as ctypes values (this test's own process)."""
    kinds = {"i32": ctypes.c_int, "i64": ctypes.c_longlong, "u64": ctypes.c_size_t, "f32": ctypes.c_float,
             "f64": ctypes.c_double}
    types, values = [], []
    for arg in args:
        if arg.kind == "pointer":
            types.append(ctypes.c_void_p)
            values.append(arrays[arg.name].data_ptr())
        elif arg.kind == "workspace":
            types.append(ctypes.c_void_p)
            values.append(workspace.data_ptr())
        elif arg.kind == "workspace_bytes":
            types.append(ctypes.c_size_t)
            values.append(workspace.numel())
        elif arg.kind == "stream":
            types.append(ctypes.c_void_p)
            values.append(torch.cuda.current_stream().cuda_stream)
        else:
            types.append(kinds[arg.kind])
            values.append(arg.value)
    entry.argtypes, entry.restype = types, ctypes.c_int
    return int(entry(*values))


def max_error(torch, array, reference) -> float:
    finite = torch.isfinite(reference)
    assert torch.equal(torch.isfinite(array), finite), "non-finite pattern differs from the reference"
    return (array.float()[finite] - reference.float()[finite]).abs().max().item() if finite.any() else 0.0


@pytest.mark.parametrize("ident", CHOSEN)
def test_initial_kernel_passes_the_task_rule(torch, task, entry, ident):
    scenario = by_id(task, ident)
    inputs, outputs = run_candidate(torch, task, entry, scenario, seed=1234)
    ref = task.module.reference(scenario, inputs, "fp32")
    low = task.module.reference(scenario, inputs, "low")
    rule = task.spec.correctness
    for name in ("o", "lse"):
        assert not torch.isnan(outputs[name]).any(), f"{name}: NaN or unwritten"
        error, low_error = max_error(torch, outputs[name], ref[name]), max_error(torch, low[name], ref[name])
        assert error <= rule.factor * low_error + rule.floor, f"{name}: {error:.3e} vs low-precision {low_error:.3e}"


def test_fully_masked_rows_are_zero_and_minus_infinity(torch, task, entry):
    scenario = by_id(task, "d256-causal-mha-h2kv2-b1-sq4097-sk65")  # rows 0..4031 see no key
    _, outputs = run_candidate(torch, task, entry, scenario, seed=5)
    assert torch.all(outputs["o"][:, :4032] == 0)
    assert torch.all(torch.isneginf(outputs["lse"][:, :, :4032]))
    assert torch.isfinite(outputs["lse"][:, :, 4032:]).all()


@pytest.mark.parametrize(
    "change,status",
    [({"head_dim": 96}, 3), ({"heads_kv": 3}, 2), ({"q": None}, 1), ({"softmax_scale": float("inf")}, 4)],
)
def test_unsupported_arguments_return_nonzero(torch, entry, change, status):
    tensor = torch.zeros(64 * 4 * 256, dtype=torch.bfloat16, device="cuda")
    lse = torch.zeros(64 * 4, dtype=torch.float32, device="cuda")
    args = {"q": tensor.data_ptr(), "head_dim": 64, "heads_kv": 2, "softmax_scale": 0.125, **change}
    entry.argtypes = task_argtypes()
    entry.restype = ctypes.c_int
    code = entry(args["q"], tensor.data_ptr(), tensor.data_ptr(), tensor.data_ptr(), lse.data_ptr(),
                 1, 16, 16, 4, args["heads_kv"], args["head_dim"], args["softmax_scale"], 0, None, 0, None)
    assert code == status


def task_argtypes():
    return [ctypes.c_void_p] * 5 + [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_int] + [
        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


@pytest.mark.parametrize("causal", [False, True])
def test_references_agree_with_sdpa_math(torch, task, causal):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    params = {"batch": 2, "seqlen_q": 100, "seqlen_k": 100, "heads_q": 8, "heads_kv": 2, "head_dim": 128,
              "causal": causal}
    scenario = Scenario(id="small", params=params)
    inputs = task.module.make_inputs(scenario, 3)
    ref = task.module.reference(scenario, inputs, "fp32")
    q, k, v = (inputs[n].float().transpose(1, 2) for n in "qkv")
    with task.module._sibling("reference").exact_fp32_matmul(torch), sdpa_kernel([SDPBackend.MATH]):
        expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    torch.testing.assert_close(ref["o"], expected.transpose(1, 2), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["fa3", "cudnn", "fa2"])
@pytest.mark.parametrize("ident", ["d128-h16-s512-causal", "d128-h32kv8-b1-s8192-causal"])
def test_comparisons_compute_the_same_attention(torch, task, name, ident):
    """A comparison timed on a different problem would make the goal meaningless."""
    scenario = next(s for s in task.module.benchmark_scenarios() if s.id == ident)
    inputs = task.module.make_inputs(scenario, 9)
    try:
        call = task.module.comparisons()[name](scenario, inputs, {})
    except ComparisonUnavailable as exc:
        pytest.skip(f"{name}: {exc}")
    out = call()
    ref = task.module.reference(scenario, inputs, "fp32")
    low = task.module.reference(scenario, inputs, "low")
    error, low_error = max_error(torch, out, ref["o"]), max_error(torch, low["o"], ref["o"])
    assert error <= 2 * low_error + task.spec.correctness.floor


@pytest.mark.parametrize("precision", ["fp32", "low"])
def test_sampled_rows_equal_the_full_reference(torch, task, precision):
    """The timed-output spot check computes a few rows the way the full reference does."""
    params = {"batch": 2, "seqlen_q": 300, "seqlen_k": 77, "heads_q": 8, "heads_kv": 2, "head_dim": 64,
              "causal": True}
    scenario = Scenario(id="rows", params=params)
    inputs = task.module.make_inputs(scenario, 4)
    full = task.module.reference(scenario, inputs, precision)
    sample = task.module.sample(scenario, inputs, 11)
    taken = sample.take(full)
    expected = sample.fp32 if precision == "fp32" else sample.low
    for name in ("o", "lse"):
        torch.testing.assert_close(taken[name].float(), expected[name].float(), atol=2e-2, rtol=0, equal_nan=True)
