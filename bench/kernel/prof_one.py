"""Runs one attention configuration a few times, for ncu to profile one launch of it.

Usage: python prof_one.py IMPL BATCH SEQLEN HEADS_Q HEADS_KV HEAD_DIM CAUSAL [CALLS]
IMPL is the path of a built kernel library (the task's C ABI) or `fa3` (the fa3-fwd wheel). Inputs
are allocated before the first call, so that the only kernels launched afterwards are the
implementation's own; pick the launch with ncu's --kernel-name and --launch-skip.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str]) -> None:
    import torch
    impl = argv[0]
    b, s, hq, hkv, d, causal = map(int, argv[1:7])
    calls = int(argv[7]) if len(argv) > 7 else 3
    q = torch.randn(b, s, hq, d, device="cuda").to(torch.bfloat16)
    k = torch.randn(b, s, hkv, d, device="cuda").to(torch.bfloat16)
    v = torch.randn(b, s, hkv, d, device="cuda").to(torch.bfloat16)
    scale = 1.0 / math.sqrt(d)
    if impl == "fa3":
        from fa3_fwd_interface import flash_attn_func
        run = lambda: flash_attn_func(q, k, v, softmax_scale=scale, causal=bool(causal))  # noqa: E731
    else:
        import run_bench as rb
        f = rb.load_lib(impl)
        o = torch.empty_like(q)
        lse = torch.empty(b, hq, s, device="cuda", dtype=torch.float32)
        ws = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
        run = lambda: rb.call(f, q, k, v, o, lse, scale, causal, ws)  # noqa: E731
    torch.cuda.synchronize()
    for _ in range(calls):
        run()
    torch.cuda.synchronize()
    print(f"{impl}: {calls} calls done")


if __name__ == "__main__":
    main(sys.argv[1:])
