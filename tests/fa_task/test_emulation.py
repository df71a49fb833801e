"""The initial kernel's own code, run on the CPU through a host emulation of its PTX primitives.

CI has no GPU; this still checks the kernel's indexing, masking, online softmax, double buffering and
epilogue against a float64 reference, with NaN-filled shared memory and outputs so that an unwritten
element or a missed zero fill shows. The emulation reads the fragment layouts from the same PTX tables as
the kernel, so a misreading of those tables is for the GPU tests to find (tests/fa_task/test_gpu.py).
"""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import pytest

from quaere.task.loader import load_task

from .exact import exact_attention, from_bf16, to_bf16

HERE = Path(__file__).parent
KERNEL_BEGIN = "// ===== BEGIN KERNEL ====="
KERNEL_END = "// ===== END KERNEL ====="


def kernel_section(source: str) -> str:
    start, end = source.index(KERNEL_BEGIN), source.index(KERNEL_END)
    return source[start:end]


@pytest.fixture(scope="module")
def emulated(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    kernel = load_task("flash_attention_hopper").initial_kernel.read_text()
    folder = tmp_path_factory.mktemp("emulation")
    source = folder / "emulated.cpp"
    source.write_text(
        (HERE / "emulation" / "prelude.h").read_text()
        + kernel_section(kernel)
        + (HERE / "emulation" / "driver.cpp").read_text()
    )
    library = folder / "emulated.so"
    subprocess.run(
        ["g++", "-O2", "-std=c++20", "-pthread", "-shared", "-fPIC", str(source), "-o", str(library)],
        check=True, capture_output=True, text=True,
    )
    lib = ctypes.CDLL(str(library))
    lib.emulated_attention_forward.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 6 + [
        ctypes.c_float, ctypes.c_int, ctypes.c_int, ctypes.c_int,
    ]
    lib.emulated_attention_forward.restype = ctypes.c_int
    return lib


CASES = [
    # batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal, scale, cp.async, o aligned
    pytest.param(1, 1, 1, 1, 1, 64, False, None, 1, 1, id="d64-one-query-one-key"),
    pytest.param(1, 65, 63, 2, 1, 64, True, None, 1, 1, id="d64-causal-sq-gt-sk-masked-rows"),
    pytest.param(2, 63, 129, 4, 1, 64, True, None, 1, 1, id="d64-causal-mqa-batch2-three-kv-tiles"),
    pytest.param(1, 129, 127, 1, 1, 128, True, None, 1, 1, id="d128-causal-two-query-blocks"),
    pytest.param(1, 20, 150, 8, 1, 128, False, 0.2, 1, 1, id="d128-gqa8-custom-scale"),
    pytest.param(1, 1, 130, 1, 1, 256, True, None, 1, 1, id="d256-decode-causal-bottom-right"),
    pytest.param(1, 200, 70, 4, 1, 256, True, None, 1, 1, id="d256-gqa4-causal-masked-blocks"),
    pytest.param(1, 100, 90, 2, 1, 64, True, 0.5, 0, 0, id="d64-unaligned-paths"),
    pytest.param(1, 5, 0, 1, 1, 64, False, None, 1, 1, id="d64-no-keys"),
]


@pytest.mark.slow
@pytest.mark.parametrize("b,sq,sk,hq,hkv,d,causal,scale,cp_async,o_aligned", CASES)
def test_emulated_kernel_matches_exact_attention(emulated, b, sq, sk, hq, hkv, d, causal, scale, cp_async, o_aligned):
    rng = np.random.default_rng(7)
    scale = d**-0.5 if scale is None else scale
    q = to_bf16(rng.standard_normal((b, sq, hq, d)))
    k = to_bf16(rng.standard_normal((b, sk, hkv, d)))
    v = to_bf16(rng.standard_normal((b, sk, hkv, d)))
    o = np.full((b, sq, hq, d), 0xFFFF, np.uint16)  # NaN: an element left unwritten stays NaN
    lse = np.full((b, hq, sq), np.nan, np.float32)
    status = emulated.emulated_attention_forward(
        q.ctypes.data, k.ctypes.data, v.ctypes.data, o.ctypes.data, lse.ctypes.data,
        b, sq, sk, hq, hkv, d, scale, int(causal), cp_async, o_aligned,
    )
    assert status == 0
    ref_o, ref_lse, weighted_abs_v = exact_attention(from_bf16(q), from_bf16(k), from_bf16(v), causal, scale)
    got_o = from_bf16(o)
    assert np.isfinite(got_o).all(), "o has NaN/Inf: an element was not written or a NaN leaked in"
    assert not np.isnan(lse).any()
    np.testing.assert_array_equal(np.isneginf(lse), np.isneginf(ref_lse))
    # Two roundings to bf16 (unit roundoff 2**-8: 8 significant bits): P before the P V product, which moves
    # o by at most 2**-8 sum_j p_j |v_j|, and o itself. A missing or extra key moves o by p_j |v_j|, far more.
    bound = 2**-8 * (np.abs(ref_o) + weighted_abs_v) * 1.01 + 1e-5
    worst = np.max(np.abs(got_o - ref_o) / bound)
    assert worst <= 1.0, f"o error reaches {worst:.2f} x the rounding bound"
    finite = np.isfinite(ref_lse)
    assert np.all(np.abs(lse[finite] - ref_lse[finite]) <= 1e-4)
    masked_rows = ~finite.transpose(0, 2, 1)  # [b, sq, hq]
    assert np.all(got_o[masked_rows] == 0.0)
