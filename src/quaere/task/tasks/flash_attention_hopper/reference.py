"""The two references of the flash_attention_hopper task, in PyTorch (imported lazily by the caller).

``fp32``: inputs upcast to float32, matmuls in IEEE fp32 (TF32 disabled for the call), softmax in fp32.
``low``: what a plain bf16 PyTorch attention computes, modelled on FlashAttention's ``attention_ref(upcast=
False)``: S = Q K^T as a bf16 matmul (bf16 result), scaled and masked in fp32, softmax in fp32, P rounded
to bf16, O = P V as a bf16 matmul; lse is the fp32 log-sum-exp of the same bf16 scores.

Both give o of shape [B, Sq, Hq, D] (float32 for ``fp32``, bfloat16 for ``low``) and lse float32
[B, Hq, Sq]; a row that no key may attend has o = 0 and lse = -inf. The work is done per batch, per group of
heads and per block of query rows, so that no score block exceeds ``CHUNK_ELEMENTS`` (S = 16k fits easily).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CHUNK_ELEMENTS = 2**27  # fp32 scores per block: 512 MiB


@contextmanager
def exact_fp32_matmul(torch: Any) -> Iterator[None]:
    """Disable TF32 for CUDA matmuls inside the block, restoring the caller's setting after it."""
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


def causal_mask(torch: Any, rows: range, seqlen_q: int, seqlen_k: int, device: Any) -> Any:
    """True where key j is masked for query row i (bottom-right alignment: allowed iff j <= i + Sk - Sq)."""
    i = torch.arange(rows.start, rows.stop, device=device).unsqueeze(1)
    j = torch.arange(seqlen_k, device=device).unsqueeze(0)
    return j > i + (seqlen_k - seqlen_q)


def attention(q: Any, k: Any, v: Any, causal: bool, scale: float, precision: str) -> tuple[Any, Any]:
    """Attention of q [B, Sq, Hq, D] over k, v [B, Sk, Hkv, D] (bf16) at ``precision`` ('fp32' or 'low')."""
    import torch

    if precision not in ("fp32", "low"):
        raise ValueError(f"precision is {precision!r}; expected 'fp32' or 'low'")
    batch, seqlen_q, heads_q, head_dim = q.shape
    seqlen_k, heads_kv = k.shape[1], k.shape[2]
    work_dtype = torch.float32 if precision == "fp32" else torch.bfloat16
    out_dtype = torch.float32 if precision == "fp32" else torch.bfloat16
    o = torch.empty((batch, seqlen_q, heads_q, head_dim), dtype=out_dtype, device=q.device)
    lse = torch.empty((batch, heads_q, seqlen_q), dtype=torch.float32, device=q.device)
    group = heads_q // heads_kv
    head_step = max(1, min(heads_q, CHUNK_ELEMENTS // max(1, seqlen_q * seqlen_k)))
    row_step = max(1, min(seqlen_q, CHUNK_ELEMENTS // max(1, head_step * seqlen_k)))
    with exact_fp32_matmul(torch):
        for b in range(batch):
            # [H, S, D]; query head h reads kv head h // group
            qb = q[b].transpose(0, 1).to(work_dtype)
            kb = k[b].transpose(0, 1).to(work_dtype).repeat_interleave(group, dim=0)
            vb = v[b].transpose(0, 1).to(work_dtype).repeat_interleave(group, dim=0)
            for h0 in range(0, heads_q, head_step):
                heads = slice(h0, min(heads_q, h0 + head_step))
                for r0 in range(0, seqlen_q, row_step):
                    rows = range(r0, min(seqlen_q, r0 + row_step))
                    ob, lb = _block(torch, qb[heads, rows.start:rows.stop], kb[heads], vb[heads], rows,
                                    seqlen_q, causal, scale)
                    o[b, rows.start:rows.stop, heads] = ob.transpose(0, 1).to(out_dtype)
                    lse[b, heads, rows.start:rows.stop] = lb
    return o, lse


def _block(torch: Any, q: Any, k: Any, v: Any, rows: range, seqlen_q: int, causal: bool, scale: float):
    """One block of query rows for a group of heads: q [h, r, D], k and v [h, Sk, D] in the work dtype."""
    # A bf16 matmul rounds S to bf16 for 'low'; in place from here on (the block is up to 2**27 scores).
    scores = torch.matmul(q, k.transpose(-1, -2)).float().mul_(scale)
    if causal:
        scores.masked_fill_(causal_mask(torch, rows, seqlen_q, k.shape[1], q.device), float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)  # -inf for a row with no allowed key
    masked_row = torch.isinf(lse).unsqueeze(-1)
    # exp(s - lse) is the normalized softmax; a fully masked row would give exp(-inf + inf) = NaN, so it is
    # computed against 0 instead (every term is then exp(-inf) = 0) and o comes out as 0.
    probs = scores.sub_(torch.where(masked_row, torch.zeros_like(lse.unsqueeze(-1)), lse.unsqueeze(-1))).exp_()
    o = torch.matmul(probs.to(v.dtype), v)
    return o, lse


def attention_rows(q: Any, k: Any, v: Any, b: Any, i: Any, h: Any, causal: bool, scale: float,
                   precision: str) -> tuple[Any, Any]:
    """Rows (b[n], i[n], h[n]) of :func:`attention`: o [N, D] and lse [N], with the same arithmetic (so a timed
    output can be spot-checked without the whole reference); all N rows at once, one gather per input."""
    import torch

    if precision not in ("fp32", "low"):
        raise ValueError(f"precision is {precision!r}; expected 'fp32' or 'low'")
    work = torch.float32 if precision == "fp32" else torch.bfloat16
    seqlen_q, seqlen_k, group = q.shape[1], k.shape[1], q.shape[2] // k.shape[2]
    with exact_fp32_matmul(torch):
        qr = q[b, i, h].to(work).unsqueeze(1)  # [N, 1, D]
        kr = k[b, :, h // group].to(work)  # [N, Sk, D]
        vr = v[b, :, h // group].to(work)
        scores = torch.bmm(qr, kr.transpose(1, 2)).float().mul_(scale)  # [N, 1, Sk]
        if causal:
            j = torch.arange(seqlen_k, device=q.device).view(1, 1, -1)
            scores.masked_fill_(j > (i + (seqlen_k - seqlen_q)).view(-1, 1, 1), float("-inf"))
        lse = torch.logsumexp(scores, dim=-1)  # [N, 1]
        masked_row = torch.isinf(lse).unsqueeze(-1)
        probs = scores.sub_(torch.where(masked_row, torch.zeros_like(lse.unsqueeze(-1)), lse.unsqueeze(-1))).exp_()
        o = torch.bmm(probs.to(work), vr)  # [N, 1, D]
    return o[:, 0].to(work), lse[:, 0]
