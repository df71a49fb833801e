"""The shipped kernel's answers to arguments it must refuse, or that leave nothing to compute, checked on the CPU.

`attention_forward` settles these before any launch (the only CUDA call on these paths asks for the current device,
and an answer of no device changes none of them), so the library built from `kernels/flash_attention_hopper.cu` can
be called here through ctypes with addresses that point nowhere. The codes are the task's (its README lists the
initial kernel's): 1 a null pointer, 2 a bad shape, 3 a head dim other than 64/128/256, 4 a scale that is not finite
once multiplied by log2(e), 5 a pointer off its element's size, 6 a shape beyond the kernel's sizes; an empty call
(batch or Sq zero) returns 0.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ADDR = 0x7F0000000000  # 256-byte aligned and never dereferenced on these paths
# batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, softmax_scale
VALID = (2, 128, 128, 4, 2, 128, 0.088)


@pytest.fixture(scope="module")
def attention_forward(tmp_path_factory: pytest.TempPathFactory):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed here")
    lib = tmp_path_factory.mktemp("kernel") / "fa.so"
    build = ["nvcc", "-O1", "-std=c++17", "-gencode", "arch=compute_90a,code=sm_90a", "-shared", "-Xcompiler", "-fPIC",
             str(ROOT / "kernels" / "flash_attention_hopper.cu"), "-o", str(lib)]
    built = subprocess.run(build, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    f = ctypes.CDLL(str(lib)).attention_forward
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_int, ctypes.c_void_p,
                                                              ctypes.c_size_t, ctypes.c_void_p]
    return f


def call(f, pointers=(ADDR,) * 5, shape=VALID) -> int:
    *sizes, scale = shape
    return f(*pointers, *sizes, scale, 1, ADDR, 1 << 20, None)


def with_shape(**changes: float) -> tuple:
    names = ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim", "softmax_scale")
    return tuple(changes.get(n, v) for n, v in zip(names, VALID, strict=True))


@pytest.mark.parametrize("which", range(5))
def test_a_null_pointer_gets_1(attention_forward, which: int) -> None:
    pointers = [ADDR] * 5
    pointers[which] = None
    assert call(attention_forward, tuple(pointers)) == 1


@pytest.mark.parametrize(
    "changes",
    [{"batch": -1}, {"seqlen_q": -1}, {"seqlen_k": -3}, {"heads_q": 0}, {"heads_kv": 0}, {"heads_q": 6, "heads_kv": 4}],
)
def test_a_bad_shape_gets_2(attention_forward, changes: dict) -> None:
    assert call(attention_forward, shape=with_shape(**changes)) == 2


@pytest.mark.parametrize("head_dim", [0, 32, 96, 192, 512])
def test_an_unsupported_head_dim_gets_3(attention_forward, head_dim: int) -> None:
    assert call(attention_forward, shape=with_shape(head_dim=head_dim)) == 3


@pytest.mark.parametrize("scale", [float("inf"), float("-inf"), float("nan"), 3e38, -3e38])
def test_a_scale_not_finite_in_the_exp2_domain_gets_4(attention_forward, scale: float) -> None:
    assert call(attention_forward, shape=with_shape(softmax_scale=scale)) == 4


@pytest.mark.parametrize(("which", "offset"), [(0, 1), (1, 3), (2, 5), (3, 1), (4, 2), (4, 1)])
def test_a_pointer_off_its_element_size_gets_5(attention_forward, which: int, offset: int) -> None:
    pointers = [ADDR] * 5
    pointers[which] = ADDR + offset
    assert call(attention_forward, tuple(pointers)) == 5


@pytest.mark.parametrize("changes", [{"batch": 0}, {"seqlen_q": 0}, {"batch": 0, "softmax_scale": -1.0}])
def test_an_empty_call_computes_nothing_and_succeeds(attention_forward, changes: dict) -> None:
    assert call(attention_forward, shape=with_shape(**changes)) == 0


@pytest.mark.parametrize("changes", [{"batch": 65536, "heads_q": 65536, "heads_kv": 1, "seqlen_q": 64},
                                     {"batch": 1024, "heads_q": 1024, "heads_kv": 1024, "seqlen_q": 1 << 17}])
def test_more_query_tiles_than_the_tile_counter_holds_gets_6(attention_forward, changes: dict) -> None:
    """Over 2^31 query tiles of 64 rows: the task's code for a shape beyond the kernel's sizes (the initial kernel's 6),
    not 1, which names a null pointer."""
    assert call(attention_forward, shape=with_shape(**changes)) == 6
