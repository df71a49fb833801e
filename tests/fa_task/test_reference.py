"""The task's references on the CPU (wherever torch is installed; CI has none and skips): the fp32 one
against float64 attention and torch's SDPA, the low-precision one as a bf16 model, and the chunking."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quaere.records import Scenario
from quaere.task.loader import load_task

from .exact import exact_attention

torch = pytest.importorskip("torch")

SHAPES = [  # batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal
    (2, 9, 9, 4, 4, 64, True),
    (1, 5, 33, 8, 2, 64, True),  # Sq < Sk: bottom-right diagonal
    (1, 33, 5, 3, 1, 128, True),  # Sq > Sk: 28 rows with no key
    (2, 17, 40, 4, 1, 128, False),
    (1, 1, 1, 2, 1, 256, False),
]


@pytest.fixture(scope="module")
def module():
    return load_task("flash_attention_hopper").module


def scenario_and_inputs(shape, scale=None, seed=0):
    b, sq, sk, hq, hkv, d, causal = shape
    params = {"batch": b, "seqlen_q": sq, "seqlen_k": sk, "heads_q": hq, "heads_kv": hkv, "head_dim": d,
              "causal": causal}
    if scale is not None:
        params["softmax_scale"] = scale
    g = torch.Generator().manual_seed(seed)
    inputs = {
        "q": torch.randn(b, sq, hq, d, generator=g).bfloat16(),
        "k": torch.randn(b, sk, hkv, d, generator=g).bfloat16(),
        "v": torch.randn(b, sk, hkv, d, generator=g).bfloat16(),
    }
    return Scenario(id="t", params=params), inputs


@pytest.mark.parametrize("shape", SHAPES)
def test_fp32_reference_is_exact_attention(module, shape):
    scenario, inputs = scenario_and_inputs(shape, scale=0.3)
    ref = module.reference(scenario, inputs, "fp32")
    o, lse, _ = exact_attention(*(inputs[n].float().numpy() for n in "qkv"), shape[-1], 0.3)
    assert ref["o"].dtype == torch.float32 and ref["lse"].dtype == torch.float32
    np.testing.assert_allclose(ref["o"].numpy(), o, atol=2e-6, rtol=1e-5)
    np.testing.assert_array_equal(np.isneginf(ref["lse"].numpy()), np.isneginf(lse))
    finite = np.isfinite(lse)
    np.testing.assert_allclose(ref["lse"].numpy()[finite], lse[finite], atol=2e-6, rtol=1e-6)


@pytest.mark.parametrize("shape", SHAPES)
def test_low_reference_is_bf16_attention_close_to_fp32(module, shape):
    scenario, inputs = scenario_and_inputs(shape)
    low, ref = module.reference(scenario, inputs, "low"), module.reference(scenario, inputs, "fp32")
    assert low["o"].dtype == torch.bfloat16 and low["lse"].dtype == torch.float32
    assert torch.equal(torch.isinf(low["lse"]), torch.isinf(ref["lse"]))
    error = (low["o"].float() - ref["o"]).abs().max().item()
    assert error < 2**-6 * max(1.0, ref["o"].abs().max().item())  # a few bf16 roundings, no more
    if shape[2] > 1:  # with several keys per row, the bf16 roundings show
        assert error > 0


def test_fully_masked_rows_give_zero_and_minus_infinity(module):
    scenario, inputs = scenario_and_inputs((1, 33, 5, 3, 1, 128, True))
    for precision in ("fp32", "low"):
        out = module.reference(scenario, inputs, precision)
        assert torch.all(out["o"][:, :28] == 0) and torch.all(torch.isneginf(out["lse"][:, :, :28]))
        assert torch.isfinite(out["lse"][:, :, 28:]).all()


@pytest.mark.parametrize("shape", [s for s in SHAPES if s[1] == s[2] or not s[-1]])
def test_fp32_reference_agrees_with_torch_sdpa(module, shape):
    """SDPA aligns causal masks top-left, so only shapes where both alignments agree are compared."""
    scenario, inputs = scenario_and_inputs(shape, scale=0.15)
    ref = module.reference(scenario, inputs, "fp32")
    q, k, v = (inputs[n].float().transpose(1, 2) for n in "qkv")
    expected = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=shape[-1], scale=0.15, enable_gqa=shape[3] != shape[4]
    ).transpose(1, 2)
    torch.testing.assert_close(ref["o"], expected, atol=2e-6, rtol=1e-5)


def test_chunking_does_not_change_the_result(module, monkeypatch):
    scenario, inputs = scenario_and_inputs((2, 70, 90, 4, 2, 64, True))
    whole = module.reference(scenario, inputs, "fp32")
    reference_module = module._sibling("reference")
    monkeypatch.setattr(reference_module, "CHUNK_ELEMENTS", 500)  # one head, a few rows per block
    chunked = module.reference(scenario, inputs, "fp32")
    torch.testing.assert_close(chunked["o"], whole["o"], atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(chunked["lse"], whole["lse"], atol=1e-6, rtol=1e-6)


def test_default_scale_is_used_when_the_scenario_names_none(module):
    scenario, inputs = scenario_and_inputs((1, 4, 6, 2, 2, 256, False))
    ref = module.reference(scenario, inputs, "fp32")
    _, lse, _ = exact_attention(*(inputs[n].float().numpy() for n in "qkv"), False, 1 / math.sqrt(256))
    np.testing.assert_allclose(ref["lse"].numpy(), lse, atol=2e-6)
