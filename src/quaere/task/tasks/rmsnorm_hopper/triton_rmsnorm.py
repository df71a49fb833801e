"""A Triton RMSNorm forward for the rmsnorm_hopper task's comparison: one program per row holds the whole
row in registers (fp32), as Triton's own layer-norm tutorial does; rows wider than ``MAX_BLOCK`` are not
supported (the comparison is then unavailable rather than slow)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import triton
import triton.language as tl

from quaere.task.contract import ComparisonUnavailable

MAX_BLOCK = 32768  # 128 KiB of fp32 per row: beyond it registers spill and the comparison means little


@triton.jit
def _rmsnorm_row(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=0.0).to(tl.float32)
    inv_rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * cols + offsets, (x * inv_rms * w).to(tl.bfloat16), mask=mask)


def launcher(x: Any, weight: Any, y: Any, eps: float) -> Callable[[], None]:
    """A call writing RMSNorm(x) * weight into ``y``; compiled by a first call here, outside any timing."""
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    if block > MAX_BLOCK:
        raise ComparisonUnavailable(f"the Triton kernel holds a row in one program: cols <= {MAX_BLOCK}, not {cols}")
    warps = min(max(block // 256, 1), 16)

    def call() -> None:
        _rmsnorm_row[(rows,)](x, weight, y, cols, eps, BLOCK=block, num_warps=warps)

    call()
    return call
