"""Two builds of the kernel file on long shapes with softmax_scale <= 0, timed in one run, as ratios.

Usage: python bench/kernel/signed_bench.py BASE.so NEW.so [--reps N]
Stage 22 moved a zero or negative scale from the plain kernel (one block per query row) onto the tiled kernels (a
sign-flipped or zeroed copy of q); this prints, per shape, each build's median ms over N calls (CUDA events, L2
flushed before each), NEW's speed-up over BASE, and the largest |O| and |LSE| difference between the two outputs
(both builds pass run_bench.py's checks; the difference only says they compute the same thing).
"""
from __future__ import annotations

import argparse
import functools
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_bench import call, load_lib, time_ms  # noqa: E402

# (batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal, scale)
SHAPES = [(1, 8192, 8192, 16, 16, 128, 1, -0.088), (2, 4096, 4096, 8, 8, 256, 0, 0.0),
          (1, 8192, 8192, 32, 8, 64, 1, -0.125), (4, 1024, 1024, 16, 16, 128, 0, 0.0)]


def median_ms(fn, reps: int, flush) -> float:
    return statistics.median(time_ms(fn, flush) for _ in range(reps))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    import torch
    libs = {"base": load_lib(a.base), "new": load_lib(a.new)}
    ws = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    torch.manual_seed(0)
    for b, sq, sk, hq, hkv, d, causal, scale in SHAPES:
        q = torch.randn(b, sq, hq, d, device="cuda").to(torch.bfloat16)
        k = torch.randn(b, sk, hkv, d, device="cuda").to(torch.bfloat16)
        v = torch.randn(b, sk, hkv, d, device="cuda").to(torch.bfloat16)
        outs, ms = {}, {}
        for name, f in libs.items():
            o = torch.empty(b, sq, hq, d, device="cuda", dtype=torch.bfloat16)
            lse = torch.empty(b, hq, sq, device="cuda", dtype=torch.float32)
            run = functools.partial(call, f, q, k, v, o, lse, scale, causal, ws)
            run()
            torch.cuda.synchronize()
            ms[name] = median_ms(run, a.reps, lambda: scratch.zero_())
            outs[name] = (o.float(), lse)
        d_o = float((outs["new"][0] - outs["base"][0]).abs().max())
        fin = torch.isfinite(outs["base"][1])
        d_l = float((outs["new"][1][fin] - outs["base"][1][fin]).abs().max()) if fin.any() else 0.0
        same_inf = bool((outs["new"][1][~fin] == outs["base"][1][~fin]).all())
        print(f"B={b} Sq={sq} Sk={sk} Hq={hq} Hkv={hkv} D={d} causal={causal} scale={scale}: "
              f"base {ms['base']:.3f} ms, new {ms['new']:.3f} ms, speed-up {ms['base'] / ms['new']:.1f}x; "
              f"max |dO| {d_o:.2e}, max |dLSE| {d_l:.2e}, infinite LSE equal {same_inf}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
