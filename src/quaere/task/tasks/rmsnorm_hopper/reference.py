"""The reference of the rmsnorm_hopper task, in PyTorch: what a plain implementation computes in the type
of its inputs (bf16 inputs: every step rounded to bf16, as eager PyTorch does; the task's high reference
calls it on the inputs upcast to fp32). ``quaere task new`` called it, and the task calls it; it is never
copied into task.py.
"""

from __future__ import annotations

from typing import Any


def rmsnorm(x: Any, weight: Any, eps: float) -> Any:
    """y = x / sqrt(mean(x^2 over the last dimension) + eps) * weight, in the type of x."""
    import torch

    variance = x.pow(2).mean(dim=-1, keepdim=True)
    return x * torch.rsqrt(variance + eps) * weight
