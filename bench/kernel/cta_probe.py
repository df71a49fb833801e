"""Where a persistent launch's idle SM time goes: each CTA's start and exit, from the kernel itself.

Usage: python cta_probe.py LIB.so CONFIG [CONFIG ...] [--calls N] [--json PATH]
CONFIG is B,S,HQ,HKV,D,CAUSAL (self-attention, Sq = Sk = S). LIB must be built with -DFAH_PROBE=1:
every CTA then writes {start, producer done, consumers done, tiles | KV blocks << 32} (%globaltimer,
ns) to a device array that `fah_probe_read` copies out. The last of N back-to-back launches is read.

ncu reports a launch's idle share as SM-active cycles against elapsed cycles; this splits that share
into the CTAs' late starts and their early exits (the schedule's tail), and shows how much work each
CTA drew, which a CPU model of the schedule (sched_sim.cu) predicts.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import math
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


@dataclass(frozen=True)
class CtaRecord:
    """One CTA's probe record; times in ns on the GPU's global timer."""

    start_ns: int
    producer_done_ns: int
    consumers_done_ns: int
    tiles: int
    kv_blocks: int


@dataclass(frozen=True)
class LaunchProfile:
    """A launch's timeline from its CTAs' records."""

    ctas: int
    span_us: float  # first CTA start to last consumer exit
    idle_pct: float  # share of ctas x span with no CTA running: late starts plus early exits
    late_start_pct: float  # the part of idle_pct before each CTA started
    tail_p50_us: float  # median time from a CTA's exit to the launch's end
    tail_max_us: float  # the earliest exit's distance from the end
    drain_p50_us: float  # median time from the producer's last tile claim to the consumers' exit
    kv_blocks_min: int
    kv_blocks_max: int
    tiles_min: int
    tiles_max: int


def decode(raw: list[int], ctas: int) -> list[CtaRecord]:
    """Records of the first `ctas` CTAs from the flat probe array (4 words per CTA)."""
    if len(raw) < 4 * ctas:
        raise ValueError(f"probe array has {len(raw)} words, {4 * ctas} needed for {ctas} CTAs")
    out = []
    for i in range(ctas):
        start, prod, cons, work = raw[4 * i: 4 * i + 4]
        out.append(CtaRecord(start, prod, cons, work & 0xFFFFFFFF, work >> 32))
    return out


def check_tiles(recs: list[CtaRecord], tiles: int) -> None:
    """The records must account for every tile of the launch exactly once. The CTA count and the tile
    count come from this script's copy of attention_forward's dispatch (query rows per tile); a copy that
    no longer matches the kernel shows up here instead of as a profile of the wrong CTAs. (A build with the
    split tail on counts pieces, not tiles, and is refused here too.)"""
    drawn = sum(r.tiles for r in recs)
    if drawn != tiles:
        raise ValueError(f"the {len(recs)} CTA records drew {drawn} tiles, the launch has {tiles}: "
                         "the query rows per tile assumed here no longer match the kernel's dispatch")


def profile(recs: list[CtaRecord]) -> LaunchProfile:
    """The launch's idle share and tail from per-CTA records (all from one launch)."""
    if not recs:
        raise ValueError("no CTA records")
    if any(r.consumers_done_ns < r.start_ns for r in recs):
        raise ValueError("a CTA's exit precedes its start: the probe array is not from one launch")
    t0 = min(r.start_ns for r in recs)
    t1 = max(r.consumers_done_ns for r in recs)
    span = max(t1 - t0, 1)
    late = sum(r.start_ns - t0 for r in recs)
    early = sum(t1 - r.consumers_done_ns for r in recs)
    tails = [(t1 - r.consumers_done_ns) / 1e3 for r in recs]
    return LaunchProfile(
        ctas=len(recs), span_us=span / 1e3, idle_pct=100.0 * (late + early) / (len(recs) * span),
        late_start_pct=100.0 * late / (len(recs) * span), tail_p50_us=statistics.median(tails),
        tail_max_us=max(tails),
        drain_p50_us=statistics.median((r.consumers_done_ns - r.producer_done_ns) / 1e3 for r in recs),
        kv_blocks_min=min(r.kv_blocks for r in recs), kv_blocks_max=max(r.kv_blocks for r in recs),
        tiles_min=min(r.tiles for r in recs), tiles_max=max(r.tiles for r in recs))


def parse_config(text: str) -> tuple[int, ...]:
    """B,S,HQ,HKV,D,CAUSAL as six integers, or a ValueError naming what was expected."""
    parts = text.split(",")
    if len(parts) != 6 or not all(p.strip().lstrip("-").isdigit() for p in parts):
        raise ValueError(f"config {text!r}: expected six integers B,S,HQ,HKV,D,CAUSAL")
    return tuple(int(p) for p in parts)


def run_one(lib_path: str, cfg: tuple[int, ...], calls: int) -> LaunchProfile:
    import run_bench as rb
    import torch
    b, s, hq, hkv, d, causal = cfg
    lib = ctypes.CDLL(lib_path)
    if not hasattr(lib, "fah_probe_read"):
        raise SystemExit(f"{lib_path}: no fah_probe_read; build the kernel with -DFAH_PROBE=1")
    f = rb.load_lib(lib_path)
    q = torch.randn(b, s, hq, d, device="cuda").to(torch.bfloat16)
    k = torch.randn(b, s, hkv, d, device="cuda").to(torch.bfloat16)
    v = torch.randn(b, s, hkv, d, device="cuda").to(torch.bfloat16)
    o = torch.empty_like(q)
    lse = torch.empty(b, hq, s, device="cuda", dtype=torch.float32)
    ws = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(calls):
        rb.call(f, q, k, v, o, lse, 1.0 / math.sqrt(d), causal, ws)
    torch.cuda.synchronize()
    n = 4 * 1024
    buf = (ctypes.c_ulonglong * n)()
    if lib.fah_probe_read(buf, n) != 0:
        raise SystemExit("fah_probe_read failed")
    # Query rows per tile as attention_forward dispatches (FAH_NWG64, FAH_SQ64_2WG); check_tiles verifies it.
    m_rows = 192 if d == 64 and not (causal and s <= 2048) else 128
    tiles = b * hq * ((s + m_rows - 1) // m_rows)
    recs = decode(list(buf), min(tiles, torch.cuda.get_device_properties(0).multi_processor_count))
    check_tiles(recs, tiles)
    return profile(recs)


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lib")
    ap.add_argument("configs", nargs="+", type=parse_config)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    rows = []
    for cfg in a.configs:
        prof = run_one(a.lib, cfg, a.calls)
        rows.append({"config": list(cfg), **asdict(prof)})
        print(f"B={cfg[0]} S={cfg[1]} H={cfg[2]}/{cfg[3]} D={cfg[4]} causal={cfg[5]}: span {prof.span_us:.1f} us, "
              f"idle {prof.idle_pct:.2f}% (late start {prof.late_start_pct:.2f}%), tail p50 {prof.tail_p50_us:.1f} "
              f"max {prof.tail_max_us:.1f} us, drain p50 {prof.drain_p50_us:.1f} us, KV blocks "
              f"{prof.kv_blocks_min}-{prof.kv_blocks_max}, tiles {prof.tiles_min}-{prof.tiles_max}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
