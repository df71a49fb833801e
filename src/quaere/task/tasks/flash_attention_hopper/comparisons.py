"""Comparison implementations of the flash_attention_hopper task: FA3, and cuDNN and FA2 through PyTorch SDPA.

Each factory takes (shape, inputs) and returns a zero-argument callable that only launches the attention
and returns o as [B, Sq, Hq, D];
everything else (imports, views, a probe call) happens in the factory, outside the timed region. A factory
raises :class:`ComparisonUnavailable` when the implementation cannot run the scenario here, rather than timing
something different from what the candidate computes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from quaere.task.contract import ComparisonUnavailable

FA3_INSTALL_HINT = "FA3 not installed: pip install fa3-fwd"


def fa3(shape: Any, inputs: dict) -> Callable[[], Any]:
    """FlashAttention-3 forward from the fa3-fwd wheel on a ``Shape``: [B, S, H, D] bf16, GQA native, causal
    aligned bottom-right like the task."""
    try:
        from fa3_fwd_interface import flash_attn_func
    except ImportError as exc:
        raise ComparisonUnavailable(f"{FA3_INSTALL_HINT} ({exc})") from exc
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    scale, causal = shape.softmax_scale, shape.causal

    def call() -> Any:
        result = flash_attn_func(q, k, v, softmax_scale=scale, causal=causal)
        return result[0] if isinstance(result, tuple) else result  # some versions also return lse

    return call


def sdpa(backend_name: str) -> Callable[[Any, dict], Callable[[], Any]]:
    """A factory timing PyTorch SDPA restricted to one backend ('CUDNN_ATTENTION' or 'FLASH_ATTENTION')."""

    def factory(shape: Any, inputs: dict) -> Callable[[], Any]:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.nn.functional import scaled_dot_product_attention

        if shape.causal and shape.seqlen_q != shape.seqlen_k:
            raise ComparisonUnavailable(
                "SDPA aligns causal masks top-left; this scenario's mask is bottom-right (Sq != Sk)"
            )
        backend = getattr(SDPBackend, backend_name)
        q, k, v = (inputs[name].transpose(1, 2) for name in ("q", "k", "v"))  # [B, H, S, D] views, no copy
        kwargs: dict[str, Any] = {"is_causal": shape.causal, "scale": shape.softmax_scale}
        if shape.heads_q != shape.heads_kv:
            kwargs["enable_gqa"] = True
        with warnings.catch_warnings(record=True) as caught, sdpa_kernel([backend]):
            warnings.simplefilter("always")
            try:  # probe once, so an unsupported shape is reported here and not in the middle of timing
                scaled_dot_product_attention(q, k, v, **kwargs)
                torch.cuda.synchronize()
            except (RuntimeError, TypeError) as exc:
                why = "; ".join(str(w.message) for w in caught) or str(exc)
                raise ComparisonUnavailable(f"SDPA {backend_name} cannot run this scenario: {why}"[:500]) from exc

        def call() -> Any:
            with sdpa_kernel([backend]):
                return scaled_dot_product_attention(q, k, v, **kwargs).transpose(1, 2)  # a view, [B, S, H, D]

        return call

    return factory
