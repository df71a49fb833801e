"""What a call whose pointers are off 16 bytes costs over the same call aligned, on one build of the kernel file.

Usage: python bench/kernel/staged_cost.py LIB.so [--reps N]
Stage 22 sends a q, k, v or o pointer that is element-aligned but off 16 bytes (TMA's alignment) through
stream-ordered scratch: each such tensor is copied in (q, k, v) or out (o) by bf16_copy_kernel around the tiled call.
Per shape this prints the aligned call's median ms and, for each set of moved tensors, its median, the ratio to the
aligned call, and the copy rate the extra time implies (read + write bytes of the moved tensors over the extra ms).
All variants of a shape are timed interleaved, L2 flushed before each call (run_bench.time_ms).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_bench import call, load_lib, placed, time_ms  # noqa: E402

# (batch, seqlen, heads_q, heads_kv, head_dim, causal): three of the 26 benchmark configurations
SHAPES = [(4, 4096, 16, 16, 128, 1), (16, 1024, 32, 32, 64, 0), (1, 16384, 8, 8, 256, 1)]
# offsets in elements of q, k, v, o (1 element: a pointer 2 bytes off; o 2 elements off is 4-byte aligned)
VARIANTS = {"aligned": (0, 0, 0, 0), "q": (1, 0, 0, 0), "o": (0, 0, 0, 1), "o (4-byte aligned)": (0, 0, 0, 2),
            "q,k,v,o": (1, 1, 1, 1)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    import torch
    f = load_lib(a.lib)
    ws = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    torch.manual_seed(0)
    for b, s, hq, hkv, d, causal in SHAPES:
        fills = [torch.randn(b, s, h, d, device="cuda") for h in (hq, hkv, hkv)]
        runs, moved_bytes = {}, {}
        for name, offsets in VARIANTS.items():
            q, k, v = (placed(t.shape, off, t) for t, off in zip(fills, offsets))
            o = placed((b, s, hq, d), offsets[3], torch.zeros(b, s, hq, d, device="cuda"))
            lse = torch.empty(b, hq, s, device="cuda", dtype=torch.float32)
            runs[name] = (lambda q=q, k=k, v=v, o=o, lse=lse:
                          call(f, q, k, v, o, lse, d ** -0.5, causal, ws))
            moved_bytes[name] = sum(2 * t.numel() * 2 for t, off in zip((q, k, v, o), offsets) if off)
            runs[name]()  # the first call of each variant: the stream-ordered pool grows outside the timing
        torch.cuda.synchronize()
        samples = {name: [] for name in runs}
        for _ in range(a.reps):
            for name, run in runs.items():
                samples[name].append(time_ms(run, lambda: scratch.zero_()))
        base = statistics.median(samples["aligned"])
        line = [f"B={b} S={s} Hq={hq} Hkv={hkv} D={d} causal={causal}: aligned {base:.3f} ms"]
        for name in list(VARIANTS)[1:]:
            ms = statistics.median(samples[name])
            rate = moved_bytes[name] / ((ms - base) * 1e-3) / 1e12 if ms > base else float("inf")
            line.append(f"{name} off 16 B {ms:.3f} ms ({ms / base:.3f}x, copies at {rate:.2f} TB/s)")
        print("; ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
