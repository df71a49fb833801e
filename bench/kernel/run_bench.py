"""Quick correctness + speed loop for kernels/flash_attention_hopper.cu on one GPU.

Loads the built shared library through ctypes (the issue-3 C ABI), checks it on a sweep of odd
shapes against an fp32 PyTorch reference (TF32 off) with the tolerance "max error <= 2 x the error
of a bf16 PyTorch reference + 1e-3" for O and LSE, then times it against FA3 (fa3_fwd_interface)
on the 26 benchmark configurations, interleaved, L2 flushed before every timed call, CUDA events,
median of the repetitions. Usage: python bench/kernel/run_bench.py LIB.so [--reps N] [--only-check]
[--only-bench] [--out DIR]. The official verdict is `quaere eval`; this is the quick loop.
With --only-check the exit status is 0 only when every check passed (1: a wrong result, 2: a launch
error, 3: a hang) and the last line printed is the one-line CHECK summary.
"""
from __future__ import annotations

import argparse
import ctypes
import math
import statistics
import sys
import time
from pathlib import Path

BENCH26 = (
    [(16384 // s, s, 16, 16, 128, c) for s in (512, 1024, 2048, 4096, 8192, 16384) for c in (0, 1)]
    + [(16384 // s, s, 32, 32, 64, c) for s in (1024, 4096, 16384) for c in (0, 1)]
    + [(16384 // s, s, 8, 8, 256, c) for s in (1024, 4096, 16384) for c in (0, 1)]
    + [(1, 8192, 32, 8, 128, 1), (2, 4096, 64, 8, 128, 1)]
)

# (batch, seqlen_q, seqlen_k, heads_q, heads_kv); every one runs for D in 64/128/256, causal 0/1.
CHECK_SHAPES = [
    (1, 1, 1, 2, 2), (2, 7, 7, 4, 1), (1, 63, 65, 8, 2), (2, 65, 63, 4, 4), (1, 127, 129, 2, 2),
    (1, 129, 127, 4, 1), (1, 1, 1000, 2, 2), (1, 1000, 1, 2, 1), (1, 1000, 1000, 4, 1),
    (1, 300, 77, 2, 2), (1, 77, 300, 2, 2), (3, 200, 257, 8, 8), (1, 2047, 2047, 2, 2),
    (2, 513, 1500, 4, 2),
]
BIG_CHECKS = [(1, 16384, 16384, 1, 1, 128, 1), (1, 4096, 16384, 2, 1, 64, 0), (1, 16384, 5000, 1, 1, 256, 1),
              (1, 3000, 3000, 8, 2, 128, 1),  # causal D=128 GQA past the ping-pong length
              # MHA causal from 32 query blocks, where the schedule defers its shortest levels (FAH_DEFER): the
              # 3-warpgroup D=64 kernel (192-row blocks) and D=128 with a partial last block (added in stage 14,
              # not yet run on a GPU when written)
              (1, 6200, 6200, 2, 2, 64, 1), (1, 4500, 4600, 2, 2, 128, 1),
              # from 16 query blocks (stage 15's FAH_DEFER_M 16 variants): half the levels deferred (few heads)
              (2, 2040, 2040, 3, 3, 128, 1), (1, 3100, 3100, 4, 4, 64, 1),
              # causal D=128 past 1536 keys (3 warpgroups, 64-wide K/V tiles): two batches, a partial 192-row tile
              (2, 6200, 6200, 2, 2, 128, 1)]
# (batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal, scale or None): the evaluator's
# failures of kernel 8da1bce (two hangs, 16 rows never written), all causal Sq > Sk, where whole
# query tiles see no key; then a sweep of such shapes over head dims, batch 1-3 and GQA 4:1.
MASKED_CHECKS = [
    (6, 2047, 129, 12, 3, 128, 1, None), (7, 2047, 129, 16, 2, 256, 1, 0.2), (1, 16384, 4097, 4, 1, 128, 1, None),
    (1, 16384, 129, 4, 1, 64, 1, None), (1, 16384, 129, 4, 1, 128, 0, None),
] + [
    (1 + i % 3, sq, sk, 4 * (1 + i % 3), 1 + i % 3, d, 1, None)
    for i, (sq, sk, d) in enumerate((sq, sk, d) for sq in (129, 2047, 4097) for sk in (1, 7, 129, 1000)
                                    for d in (64, 128, 256))
]
# Sharp softmax (scale 4 and 10): scores hundreds of log2 units apart, so exponents far below -127, many
# row-max moves and, at D=128, partial sums above 2^8 that send softmax_fast back to a recomputed S;
# causal and not, every head dim.
SHARP_CHECKS = [(1, 300, 1000, 4, 2, d, c, 4.0) for d in (64, 128, 256) for c in (0, 1)] + [
    (2, 129, 2047, 4, 1, d, 1, 10.0) for d in (64, 128, 256)]
# Split tail (kernel FAH_SPLIT > 1): non-causal D=128 shapes whose last wave is cut into 2 or 3 KV ranges
# (132 CTAs), with a partial last key block, GQA, batches, a sharp softmax; each twice in a row, so that
# a second launch finds the per-tile counters zeroed by the first.
SPLIT_CHECKS = [(2, 3000, 2900, 12, 4, 128, 0, None), (1, 2000, 8000, 100, 20, 128, 0, None),
                (3, 700, 5000, 8, 2, 128, 0, None), (1, 1100, 3000, 16, 4, 128, 0, 10.0)]
# Causal diagonals that cross KV blocks differently per warpgroup: the 3-warpgroup D=64 kernel (Sq > 2048)
# aligned and offset by 64 and 100 keys, D=128 offset by 64 (the first warpgroup's first block wholly
# masked) and by 32, GQA, a sharp softmax.
DIAGONAL_CHECKS = [(1, 3000, 3000, 4, 2, 64, 1, None), (1, 2500, 2564, 4, 4, 64, 1, None), (2, 2200, 2300, 2, 1, 64, 1, 4.0),
                   (2, 1000, 1064, 4, 2, 128, 1, None), (1, 1000, 1032, 4, 4, 128, 1, 10.0), (2, 3000, 3000, 8, 2, 128, 1, None)]
# The 3-warpgroup D=128 kernels (192-row tiles, 64-wide K/V tiles; stage 31) on their edges, and where session 32's
# variants send more launches (FAH_NC3_SQ 512, FAH_C3_SK 1537): non-causal with one, a few or a partial block of keys
# and one or two rowless warpgroups in the last tile, GQA; causal with far fewer queries than keys, with
# key-less rows (Sq > Sk), and a shifted first tile with two warpgroups before row 0 (FAH_SHIFT).
WARPGROUP3_CHECKS = [
    (1, 1281, 1, 2, 1, 128, 0, None), (2, 2047, 7, 4, 2, 128, 0, None), (1, 4097, 65, 2, 2, 128, 0, None),
    (1, 1500, 63, 3, 1, 128, 0, 10.0), (1, 513, 1, 2, 2, 128, 0, None), (1, 600, 5, 2, 1, 128, 0, None),
    (1, 300, 6200, 2, 1, 128, 1, None), (1, 6150, 6150, 1, 1, 128, 1, None), (1, 7000, 6144, 2, 2, 128, 1, None),
    (2, 1600, 1700, 4, 2, 128, 1, None), (1, 200, 1600, 2, 2, 128, 1, None)]
# softmax_scale <= 0 (stage 22: the tiled kernels on a sign-flipped or zeroed copy of q): a zero and a negative scale
# for every head dim, causal and not, with GQA and a partial last key block; a sharp negative scale; causal Sq > Sk
# (key-less rows); a single row and key; long shapes, which the plain kernel took seconds over.
SIGNED_CHECKS = [(1, 300, 1000, 4, 2, d, c, s) for d in (64, 128, 256) for c in (0, 1)
                 for s in (0.0, -1.0 / math.sqrt(d))] + [
    (1, 300, 1000, 4, 2, 128, 0, -10.0), (2, 2047, 129, 8, 2, 128, 1, -0.3), (1, 1, 1, 2, 1, 64, 1, 0.0),
    (1, 8192, 8192, 4, 4, 128, 1, -0.088), (1, 4096, 16384, 2, 1, 256, 0, 0.0), (1, 16384, 16384, 2, 2, 64, 1, -0.125)]
# Stage 22, the host side's other paths: pointers off 16 bytes (offsets in elements of q, k, v, o: copied through
# aligned scratch), positive and negative scales; empty calls (batch or Sq zero: nothing written) and Sk = 0 (every
# row fully masked: o = 0, lse = -inf).
EDGE_CHECKS = [(1, 300, 1000, 4, 2, d, c, sc, off) for d in (64, 128, 256) for c in (0, 1)
               for sc, off in ((None, (1, 0, 0, 0)), (-0.2, (0, 3, 0, 0)), (None, (0, 0, 5, 7)))] + [
    (2, 129, 2047, 4, 1, 128, 1, None, (1, 1, 1, 1)), (1, 5, 0, 2, 1, 64, 0, None), (2, 7, 0, 4, 2, 128, 1, None),
    (1, 3, 0, 2, 2, 256, 0, -0.5), (0, 8, 8, 2, 2, 64, 0, None), (1, 0, 8, 2, 2, 128, 1, None)] + [
    # stage 23: o 4 or 8 bytes off; the offsets above put it 2 or 14 bytes off, which a copy out in 4-byte words (tried,
    # dropped) had to treat apart
    (1, 300, 1000, 4, 2, d, 1, None, (0, 0, 0, 2)) for d in (64, 128, 256)] + [
    (2, 129, 2047, 4, 1, 128, 0, -0.3, (2, 4, 6, 4))] + [
    # with the above, o off by every even byte count below 16 (the copy out's head of 7 to 1 elements)
    (1, 300, 1000, 4, 2, d, 0, None, (0, 0, 0, off)) for d, off in ((64, 3), (128, 5), (256, 6))]
HANG_S = 60.0  # a case that has not finished by then is reported as a hang (the evaluator's limit)


def load_lib(path: str):
    lib = ctypes.CDLL(path)
    f = lib.attention_forward
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_void_p] + [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_int,
                                                                                      ctypes.c_void_p, ctypes.c_size_t,
                                                                                      ctypes.c_void_p]
    return f


def ptr(t) -> int:
    """Where `t` starts in its allocation; torch's data_ptr() is 0 for an empty tensor, a null pointer to the kernel."""
    return t.untyped_storage().data_ptr() + t.storage_offset() * t.element_size()


def call(f, q, k, v, o, lse, scale, causal, ws):
    import torch
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    rc = f(ptr(q), ptr(k), ptr(v), ptr(o), ptr(lse), b, sq, sk, hq, hkv, d,
           float(scale), int(causal), ws.data_ptr(), ws.numel(), torch.cuda.current_stream().cuda_stream)
    if rc != 0:
        raise RuntimeError(f"attention_forward returned {rc}")


def reference(q, k, v, scale, causal, dtype):
    """O [B,Sq,Hq,D] and LSE [B,Hq,Sq] by plain math in `dtype` (per batch and head to bound memory)."""
    import torch
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    g = hq // hkv
    o = torch.empty(b, sq, hq, d, dtype=torch.float32, device=q.device)
    lse = torch.empty(b, hq, sq, dtype=torch.float32, device=q.device)
    i = torch.arange(sq, device=q.device)[:, None]
    j = torch.arange(sk, device=q.device)[None, :]
    allowed = (j <= i + (sk - sq)) if causal else torch.ones(sq, sk, dtype=torch.bool, device=q.device)
    for bi in range(b):
        for h in range(hq):
            qh = q[bi, :, h].to(dtype)
            kh = k[bi, :, h // g].to(dtype)
            vh = v[bi, :, h // g].to(dtype)
            s = (qh @ kh.T).float() * scale if dtype != torch.float32 else (qh @ kh.T) * scale
            s = s.masked_fill(~allowed, float("-inf"))
            l = torch.logsumexp(s, dim=-1)
            p = torch.exp(s - l[:, None]).nan_to_num(0.0)
            oh = (p.to(dtype) @ vh).float()
            o[bi, :, h] = oh
            lse[bi, h] = l
    return o, lse


def max_err(a, b):
    import torch
    fin = torch.isfinite(b)
    if not bool(((a == b) | fin).all()):  # where the reference is infinite, ours must equal it
        return float("inf")
    d = (a[fin] - b[fin]).abs()
    return float(d.max()) if d.numel() else 0.0


def judged(q, k, v, scale, causal, outputs):
    """Each (o, lse) in `outputs` under the check's rule, on inputs q, k, v: no NaN, and both within 2 x the bf16
    PyTorch reference's error + 1e-3 of the fp32 reference (both computed once). Returns one
    (ok, o_err, lse_err, has_nan) per output, the bounds (o, lse) and the fp32 reference (o, lse)."""
    import torch
    o32, l32 = reference(q.float(), k.float(), v.float(), scale, causal, torch.float32)
    o16, l16 = reference(q, k, v, scale, causal, torch.bfloat16)
    bound_o, bound_l = 2 * max_err(o16, o32) + 1e-3, 2 * max_err(l16, l32) + 1e-3
    verdicts = []
    for o, lse in outputs:
        of = o.float()
        nan = bool(torch.isnan(of).any() or torch.isnan(lse).any())
        e_o, e_l = max_err(of, o32), max_err(lse, l32)
        verdicts.append((not nan and e_o <= bound_o and e_l <= bound_l, e_o, e_l, nan))
    return verdicts, (bound_o, bound_l), (o32, l32)


def placed(shape, offset: int, fill):
    """A bf16 tensor of `shape` holding `fill`, starting `offset` elements into its own allocation (2-byte steps: a
    pointer off 16 bytes for TMA), never a null pointer even when empty."""
    import torch
    flat = torch.empty(math.prod(shape) + offset + 8, device="cuda", dtype=torch.bfloat16)
    t = flat[offset:offset + math.prod(shape)].view(shape)
    t.copy_(fill)
    return t


def check_case(f, ws, b, sq, sk, hq, hkv, d, causal, scale=None, offsets=(0, 0, 0, 0)):
    import torch
    scale = scale if scale is not None else 1.0 / math.sqrt(d)
    q = placed((b, sq, hq, d), offsets[0], torch.randn(b, sq, hq, d, device="cuda"))
    k = placed((b, sk, hkv, d), offsets[1], torch.randn(b, sk, hkv, d, device="cuda"))
    v = placed((b, sk, hkv, d), offsets[2], torch.randn(b, sk, hkv, d, device="cuda"))
    o = placed((b, sq, hq, d), offsets[3], torch.full((b, sq, hq, d), float("nan"), device="cuda"))
    # its own allocation with room to spare: an empty lse still gets a real pointer
    lse = torch.full((b * hq * sq + 8,), float("nan"), device="cuda", dtype=torch.float32)[: b * hq * sq].view(b, hq, sq)
    ws.fill_(255)
    call(f, q, k, v, o, lse, scale, causal, ws)
    torch.cuda.synchronize()
    [(ok, e_o, e_l, nan)], (bound_o, bound_l), (o32, l32) = judged(q, k, v, scale, causal, [(o, lse)])
    line = (f"{'PASS' if ok else 'FAIL'} B={b} Sq={sq} Sk={sk} Hq={hq} Hkv={hkv} D={d} causal={causal} offsets={offsets} "
            f"scale={scale:.4f} o_err={e_o:.2e} (bound {bound_o:.2e}) lse_err={e_l:.2e} (bound {bound_l:.2e})"
            f"{' NaN' if nan else ''}")
    if not ok:
        diff = (o.float() - o32).abs().nan_to_num(1e9)
        line += ("\n   err by row%64 (max over rest): " + " ".join(f"{x:.1e}" for x in
                 diff.permute(1, 0, 2, 3).reshape(sq, -1).amax(1)[: min(sq, 64)].tolist()))
        line += ("\n   err by col/8: " + " ".join(f"{x:.1e}" for x in diff.reshape(-1, d // 8, 8).amax(2).amax(0).tolist()))
        line += ("\n   lse err rows: " + " ".join(f"{x:.1e}" for x in (lse - l32).abs().nan_to_num(1e9).reshape(-1, sq).amax(0)[:64].tolist()))
    return ok, line


def flops(b, sq, sk, hq, d, causal):
    if causal:
        pairs = sum(min(sk, max(0, i + sk - sq + 1)) for i in range(sq)) if sq != sk else sq * (sq + 1) // 2
    else:
        pairs = sq * sk
    return 4.0 * b * hq * d * pairs


def time_ms(fn, flush) -> float:
    """One timed call of `fn`: `flush()` (the L2), a 1M-cycle spin so that the device is busy while the host enqueues
    (no launch gap timed), then one event pair around the call."""
    import torch
    flush()
    torch.cuda._sleep(1_000_000)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    fn()
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1)


def bench(f, ws, reps, log, dims=(64, 128, 256)):
    import torch
    try:
        from fa3_fwd_interface import flash_attn_func
    except ImportError:
        flash_attn_func = None
        log("FA3 not installed: timing ours only")
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    rows = []
    for (b, s, hq, hkv, d, causal) in [c for c in BENCH26 if c[4] in dims]:
        q = torch.randn(b, s, hq, d, device="cuda").to(torch.bfloat16)
        k = torch.randn(b, s, hkv, d, device="cuda").to(torch.bfloat16)
        v = torch.randn(b, s, hkv, d, device="cuda").to(torch.bfloat16)
        o = torch.empty_like(q)
        lse = torch.empty(b, hq, s, device="cuda", dtype=torch.float32)
        scale = 1.0 / math.sqrt(d)
        ours = lambda: call(f, q, k, v, o, lse, scale, causal, ws)
        fa3 = (lambda: flash_attn_func(q, k, v, softmax_scale=scale, causal=bool(causal))) if flash_attn_func else None
        ours(); torch.cuda.synchronize()
        agree = float("nan")
        if fa3:
            ref = fa3()
            ref = ref[0] if isinstance(ref, (tuple, list)) else ref
            torch.cuda.synchronize()
            agree = float((o.float() - ref.float()).abs().max())
        t_ours, t_fa3 = [], []
        for _ in range(reps):
            for fn, acc in ((ours, t_ours), (fa3, t_fa3)):
                if fn is not None:
                    acc.append(time_ms(fn, lambda: flush.fill_(1)))
        fl = flops(b, s, s, hq, d, causal)
        tf_o = fl / statistics.median(t_ours) / 1e9
        tf_f = fl / statistics.median(t_fa3) / 1e9 if t_fa3 else float("nan")
        rows.append((b, s, hq, hkv, d, causal, tf_o, tf_f, agree))
        log(f"B={b:2d} S={s:5d} Hq={hq:2d} Hkv={hkv:2d} D={d:3d} causal={causal} ours={tf_o:6.1f} "
            f"fa3={tf_f:6.1f} TFLOP/s ratio={tf_o / tf_f:5.3f} max|ours-fa3|={agree:.2e}")
    gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
    g_o, g_f = gm([r[6] for r in rows]), gm([r[7] for r in rows])
    ratios = [r[6] / r[7] for r in rows]
    log(f"GEOMEAN ours={g_o:.1f} fa3={g_f:.1f} ratio={g_o / g_f:.3f} min_ratio={min(ratios):.3f}")
    return rows


def check_cases(big: bool) -> list[tuple]:
    """Every check as (batch, Sq, Sk, Hq, Hkv, D, causal, scale or None)."""
    cases = [(*sh, d, c, None) for d in (64, 128, 256) for c in (0, 1) for sh in CHECK_SHAPES]
    cases += [(*c, None) for c in BIG_CHECKS] if big else []
    cases += MASKED_CHECKS + SHARP_CHECKS
    cases += [MASKED_CHECKS[0]]  # again right after the others: a second launch must be right too
    cases += [c for c in SPLIT_CHECKS for _ in range(2)] + DIAGONAL_CHECKS + WARPGROUP3_CHECKS
    cases += [(2, 333, 444, 4, 2, 128, 1, 0.37)]
    cases += SIGNED_CHECKS
    cases += EDGE_CHECKS
    return cases


# Launches running beside each other (stage 22), one per stream, started together CONCURRENT_ROUNDS times; each
# launch writes its own output. First a launch whose CTAs leave one by one over ~180 us (128 causal tiles of 1 to 128
# KV blocks, one each), then two whose many short tiles come from the dynamic schedule's counter: they start on the
# SMs the first one frees while its last CTAs still run (a first try with three evenly loaded launches passed on the
# shared counter: their overlap was too short).
CONCURRENT_SHAPES = [(1, 16384, 16384, 1, 1, 128, 1), (32, 512, 512, 16, 16, 128, 1), (16, 1024, 1024, 16, 16, 128, 0)]
CONCURRENT_ROUNDS = 8


def check_concurrent(f) -> tuple[bool, str]:
    """Every shape of CONCURRENT_SHAPES on a stream of its own, all started together, CONCURRENT_ROUNDS times, then
    once more each on the default stream after a synchronize; every output against the fp32 reference with
    check_case's rule. A schedule counter shared between launches leaves tiles unwritten or written twice."""
    import torch
    streams = [torch.cuda.Stream() for _ in CONCURRENT_SHAPES]
    runs, worst = [], []
    for b, sq, sk, hq, hkv, d, causal in CONCURRENT_SHAPES:
        q = torch.randn(b, sq, hq, d, device="cuda").to(torch.bfloat16)
        k = torch.randn(b, sk, hkv, d, device="cuda").to(torch.bfloat16)
        v = torch.randn(b, sk, hkv, d, device="cuda").to(torch.bfloat16)
        outs = [(torch.full((b, sq, hq, d), float("nan"), device="cuda", dtype=torch.bfloat16),
                 torch.full((b, hq, sq), float("nan"), device="cuda")) for _ in range(CONCURRENT_ROUNDS + 1)]
        runs.append((q, k, v, outs, 1.0 / math.sqrt(d), causal, torch.empty(1 << 20, dtype=torch.uint8, device="cuda")))
    torch.cuda.synchronize()
    for r in range(CONCURRENT_ROUNDS):
        for stream, (q, k, v, outs, scale, causal, ws) in zip(streams, runs):
            with torch.cuda.stream(stream):
                call(f, q, k, v, *outs[r], scale, causal, ws)
    torch.cuda.synchronize()
    for q, k, v, outs, scale, causal, ws in runs:
        call(f, q, k, v, *outs[-1], scale, causal, ws)
    torch.cuda.synchronize()
    ok = True
    for (q, k, v, outs, scale, causal, _), shape in zip(runs, CONCURRENT_SHAPES):
        verdicts, (bound_o, _), _ = judged(q, k, v, scale, causal, outs)
        bad = [i for i, (passed, *_) in enumerate(verdicts) if not passed]
        ok &= not bad
        worst.append(f"{shape}: worst o_err {max(e for _, e, *_ in verdicts):.2e} (bound {bound_o:.2e}), bad runs {bad}")
    return ok, f"{'PASS' if ok else 'FAIL'} concurrent launches: " + "; ".join(worst)


def run_checks(f, ws, log, big: bool) -> int:
    """Runs every check, logs failures and large cases, and a one-line CHECK summary last.

    Returns the number of failed cases. A launch error or a case running past HANG_S (a hang:
    the GPU cannot be used after it) ends the process with status 2 or 3 after the summary line.
    """
    import os
    import threading
    t0 = time.time()
    cases = check_cases(big)
    n_fail = 0
    current = {"i": 0, "start": time.time()}
    finished = threading.Event()

    total = len(cases) + 1  # and check_concurrent, last

    def summary(n_run: int, n_bad: int, note: str = "") -> str:
        return (f"CHECK {n_run - n_bad}/{total} passed, {n_bad} failed, {total - n_run} not run"
                f" in {time.time() - t0:.0f}s{note}")

    def watchdog() -> None:
        while not finished.wait(1.0):
            if time.time() - current["start"] > HANG_S:
                log(f"HANG after {HANG_S:.0f}s: {describe(cases[current['i']])}")
                log(summary(current["i"] + 1, n_fail + 1, " (stopped at a hang)"))
                os._exit(3)  # the stuck kernel keeps the GPU: no clean way back
    threading.Thread(target=watchdog, daemon=True).start()
    try:
        for i, (b, sq, sk, hq, hkv, d, c, scale, *offsets) in enumerate(cases):
            current["i"], current["start"] = i, time.time()
            try:
                ok, line = check_case(f, ws, b, sq, sk, hq, hkv, d, c, scale=scale, offsets=(offsets or [(0,) * 4])[0])
            except Exception as e:  # a launch failure poisons the context: report and stop
                log(f"ERROR {describe(cases[i])}: {e}")
                log(summary(i + 1, n_fail + 1, " (stopped at an error)"))
                sys.exit(2)
            n_fail += not ok
            if not ok or sq * sk > 4_000_000 or offsets or 0 in (b, sq, sk):
                log(line)
        current["start"] = time.time()  # a hang here is reported under the last case's name
        try:
            ok, line = check_concurrent(f)
        except Exception as e:
            log(f"ERROR concurrent launches: {e}")
            log(summary(total, n_fail + 1, " (stopped at an error)"))
            sys.exit(2)
        n_fail += not ok
        log(line)
    finally:
        finished.set()
    log(summary(total, n_fail))
    return n_fail


def describe(case: tuple) -> str:
    b, sq, sk, hq, hkv, d, c, scale, *offsets = case
    return (f"B={b} Sq={sq} Sk={sk} Hq={hq} Hkv={hkv} D={d} causal={c} scale={'default' if scale is None else scale}"
            f"{f' offsets={offsets[0]}' if offsets else ''}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--only-check", action="store_true")
    ap.add_argument("--only-bench", action="store_true")
    ap.add_argument("--no-big", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--dims", default="64,128,256", help="head dims of the benchmark set to time")
    a = ap.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    mode = "check" if a.only_check else "bench" if a.only_bench else "all"
    out = open(Path(a.out) / f"log_{Path(a.lib).stem}_{mode}.txt", "w") if a.out else None

    def log(s):
        print(s, flush=True)
        if out:
            out.write(s + "\n"); out.flush()
    f = load_lib(a.lib)
    ws = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
    torch.manual_seed(0)
    n_fail = 0
    if not a.only_bench:
        n_fail = run_checks(f, ws, log, big=not a.no_big)
        if n_fail and a.only_check:
            return 1
    if not a.only_check:
        bench(f, ws, a.reps, log, tuple(int(x) for x in a.dims.split(",")))
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
