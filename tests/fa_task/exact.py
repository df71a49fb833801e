"""float64 attention and bf16 bit helpers in numpy: the yardstick of the CPU-side tests."""

from __future__ import annotations

import numpy as np


def to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bits (uint16), round to nearest even."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def exact_attention(q, k, v, causal: bool, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """float64 attention: o, lse and sum_j p_ij |v_j| (the scale of P's rounding error in o).

    A row with no allowed key gives o = 0 and lse = -inf."""
    _, seqlen_q, heads_q, _ = q.shape
    seqlen_k, heads_kv = k.shape[1], k.shape[2]
    group = heads_q // heads_kv
    kk = np.repeat(k, group, axis=2).astype(np.float64)
    vv = np.repeat(v, group, axis=2).astype(np.float64)
    s = np.einsum("bihd,bjhd->bhij", q.astype(np.float64), kk) * scale
    if causal:
        i, j = np.arange(seqlen_q)[:, None], np.arange(seqlen_k)[None, :]
        s = np.where(j <= i + seqlen_k - seqlen_q, s, -np.inf)
    m = s.max(-1, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m)
    total = p.sum(-1, keepdims=True)
    probs = p / np.where(total > 0, total, 1.0)
    o = np.einsum("bhij,bjhd->bihd", probs, vv)
    weighted_abs_v = np.einsum("bhij,bjhd->bihd", probs, np.abs(vv))
    lse = np.where(total[..., 0] > 0, np.log(np.maximum(total[..., 0], 1e-300)) + m[..., 0], -np.inf)
    return o, lse, weighted_abs_v
