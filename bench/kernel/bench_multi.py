"""Times several builds of the kernel beside FA3 and cuDNN on the 26 benchmark configurations.

For each configuration every implementation runs on the same inputs, interleaved repetition by
repetition (the starting implementation rotates), each call after an L2 flush and with the GPU kept
busy (torch.cuda._sleep) while the host enqueues, timed with CUDA events; the figure is the median.
Before timing, each build's output is compared with FA3's (max |diff| is printed; a build that
disagrees by more than 0.05 is marked BAD). With --passes 2 the whole sweep runs twice, so a
difference can be told from noise. Usage:
  python bench_multi.py --lib base=base.so --lib new=new.so [--reps 20] [--passes 2] [--json OUT]
Reuses run_bench.py (same folder) for the configurations, FLOP count and the ABI call.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_bench as rb  # noqa: E402


# (batch, seqlen, heads_q, heads_kv, head_dim, causal) off the benchmark's powers of two: scheduling
# choices (head groups, tile order) tuned on the 26 must hold here too.
ODD_SHAPES = [
    (3, 3000, 12, 12, 128, 1), (3, 3000, 12, 12, 128, 0), (5, 2500, 20, 20, 64, 1), (2, 6000, 24, 8, 128, 1),
    (3, 2048, 10, 10, 256, 1), (7, 1500, 9, 3, 128, 1), (1, 12000, 24, 24, 128, 1), (6, 1000, 14, 14, 256, 0),
    (4, 1800, 16, 16, 256, 1), (2, 5000, 16, 16, 64, 1), (8, 768, 16, 16, 128, 1), (1, 20000, 8, 8, 128, 1),
    (11, 700, 6, 6, 128, 1), (2, 3500, 40, 8, 128, 1),
    # non-causal and even-group GQA (the K/V multicast pairs, stage 13)
    (5, 2500, 20, 20, 64, 0), (7, 1500, 9, 3, 128, 0), (2, 3500, 40, 8, 128, 0), (4, 1800, 16, 16, 256, 0),
    (3, 2800, 24, 6, 128, 1), (1, 5000, 28, 14, 128, 1),
]


def cudnn_factory(q, k, v, scale, causal):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    kw = {"is_causal": bool(causal), "scale": scale}
    if q.shape[2] != k.shape[2]:
        kw["enable_gqa"] = True
    try:
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            sdpa(qt, kt, vt, **kw)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - unavailable here: leave it out of the table
        print(f"cuDNN unavailable: {e}"[:200])
        return None

    def call():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return sdpa(qt, kt, vt, **kw)
    return call


def sweep(libs, reps, configs, log):
    import torch
    from fa3_fwd_interface import flash_attn_func
    ws = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    rows = []
    for (b, s, hq, hkv, d, causal) in configs:
        q = torch.randn(b, s, hq, d, device="cuda").to(torch.bfloat16)
        k = torch.randn(b, s, hkv, d, device="cuda").to(torch.bfloat16)
        v = torch.randn(b, s, hkv, d, device="cuda").to(torch.bfloat16)
        scale = 1.0 / math.sqrt(d)
        fns, outs = {}, {}
        for name, f in libs.items():
            o = torch.empty_like(q)
            lse = torch.empty(b, hq, s, device="cuda", dtype=torch.float32)
            outs[name] = o
            fns[name] = (lambda f=f, o=o, lse=lse: rb.call(f, q, k, v, o, lse, scale, causal, ws))
        fns["fa3"] = lambda: flash_attn_func(q, k, v, softmax_scale=scale, causal=bool(causal))
        cd = cudnn_factory(q, k, v, scale, causal)
        if cd:
            fns["cudnn"] = cd
        ref = fns["fa3"]()
        ref = ref[0] if isinstance(ref, (tuple, list)) else ref
        for name in libs:
            fns[name]()
        torch.cuda.synchronize()
        agree = {name: float((outs[name].float() - ref.float()).abs().max()) for name in libs}
        names = list(fns)
        times = {n: [] for n in names}
        for r in range(reps):
            for j in range(len(names)):
                n = names[(r + j) % len(names)]
                flush.fill_(1)
                torch.cuda._sleep(1_000_000)
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record(); fns[n](); e1.record(); torch.cuda.synchronize()
                times[n].append(e0.elapsed_time(e1))
        fl = rb.flops(b, s, s, hq, d, causal)
        tf = {n: fl / statistics.median(t) / 1e9 for n, t in times.items()}
        spread = {n: (statistics.quantiles(t, n=4)[2] - statistics.quantiles(t, n=4)[0]) / statistics.median(t)
                  for n, t in times.items()}
        row = {"config": f"d{d}-h{hq}kv{hkv}-b{b}-s{s}-{'causal' if causal else 'noncausal'}", "tflops": tf,
               "spread": spread, "max_abs_diff_vs_fa3": agree}
        rows.append(row)
        bad = [n for n, a in agree.items() if not a <= 0.05]
        log(f"{row['config']:34s} " + " ".join(f"{n}={tf[n]:6.1f}" for n in names) +
            "  ratio/fa3: " + " ".join(f"{n}={tf[n] / tf['fa3']:.3f}" for n in libs) + (f"  BAD {bad}" if bad else ""))
    return rows


def summary(rows, libs, log, title):
    gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))  # noqa: E731
    log(f"== {title}: geomean ratio vs FA3 (min, config) / vs cuDNN")
    for n in list(libs) + ["cudnn"]:
        rs = [(r["tflops"][n] / r["tflops"]["fa3"], r["config"]) for r in rows if n in r["tflops"]]
        if not rs:
            continue
        cd = [r["tflops"][n] / r["tflops"]["cudnn"] for r in rows if "cudnn" in r["tflops"] and n in r["tflops"]]
        mx = [r["tflops"][n] / max(r["tflops"]["fa3"], r["tflops"].get("cudnn", 0)) for r in rows if n in r["tflops"]]
        log(f"{n:10s} geomean {gm([x for x, _ in rs]):.4f}  min {min(rs)[0]:.3f} ({min(rs)[1]})"
            f"  vs cuDNN {gm(cd) if cd else float('nan'):.4f}  >= max(FA3,cuDNN) on {sum(x >= 1 for x in mx)}/{len(mx)}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", action="append", required=True, help="NAME=PATH.so")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--dims", default="64,128,256")
    ap.add_argument("--json", default=None)
    ap.add_argument("--odd", action="store_true",
                    help="time ODD_SHAPES (head counts and lengths off the powers of two) instead of the 26")
    a = ap.parse_args()
    libs = {}
    for spec in a.lib:
        name, path = spec.split("=", 1)
        libs[name] = rb.load_lib(path)
    dims = tuple(int(x) for x in a.dims.split(","))
    configs = [c for c in (ODD_SHAPES if a.odd else rb.BENCH26) if c[4] in dims]
    import torch
    torch.manual_seed(0)
    log = lambda s: print(s, flush=True)  # noqa: E731
    passes = []
    for i in range(a.passes):
        log(f"== pass {i + 1}")
        passes.append(sweep(libs, a.reps, configs, log))
    for i, rows in enumerate(passes):
        summary(rows, libs, log, f"pass {i + 1}")
    if a.passes > 1:  # per-configuration mean of the passes' TFLOP/s
        merged = []
        for rs in zip(*passes):
            merged.append({"config": rs[0]["config"], "tflops": {n: statistics.mean(r["tflops"][n] for r in rs)
                                                                   for n in rs[0]["tflops"]}})
        summary(merged, libs, log, "mean of passes")
    if a.json:
        Path(a.json).write_text(json.dumps({"passes": passes, "device": torch.cuda.get_device_name()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
