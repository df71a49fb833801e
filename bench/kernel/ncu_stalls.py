"""Warp-stall samples per SASS opcode, from ncu's source page.

Usage: python ncu_stalls.py SOURCE.csv [SOURCE.csv ...] [--top N]
SOURCE.csv is what `ncu --import REPORT --page source --csv --print-source sass` prints for one kernel
(a line naming the kernel, then one row per instruction with its sampled stall reasons). For each file:
the samples of every stall reason, then the opcodes (predicate and modifiers dropped) that hold the
most samples, with their execution count and their three largest reasons. A sample is one warp seen
at one instruction, so an opcode's share of the samples is the share of warp time spent there.
"""
from __future__ import annotations

import argparse
import collections
import csv
import sys
from pathlib import Path

SAMPLES = "Warp Stall Sampling (All Samples)"


def read_rows(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    if len(lines) < 2 or SAMPLES not in lines[1]:
        raise SystemExit(f"{path}: not an ncu source page (expected the column '{SAMPLES}' on line 2)")
    return list(csv.DictReader(lines[1:]))


def opcode(source: str) -> str:
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def count(value: str) -> int:
    return int(value) if value and value.isdigit() else 0


def summarize(path: Path, top: int) -> str:
    rows = read_rows(path)
    reasons = [k for k in rows[0] if k.startswith("stall_") and "Not Issued" not in k]
    by_reason = collections.Counter({k: sum(count(r[k]) for r in rows) for k in reasons})
    total = sum(by_reason.values()) or 1
    samples, executed = collections.Counter(), collections.Counter()
    why: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in rows:
        op = opcode(r["Source"])
        samples[op] += count(r[SAMPLES])
        executed[op] += count(r["Instructions Executed"])
        for k in reasons:
            why[op][k] += count(r[k])
    out = [f"{path}: {total} samples"]
    out += [f"  {k:24s} {v:8d} {100 * v / total:5.1f}%" for k, v in by_reason.most_common() if v]
    out.append(f"  {'opcode':10s} {'samples':>8s} {'share':>6s} {'executed':>12s}  largest reasons")
    for op, v in samples.most_common(top):
        reasons_txt = ", ".join(f"{k[6:]} {n}" for k, n in why[op].most_common(3))
        out.append(f"  {op:10s} {v:8d} {100 * v / total:5.1f}% {executed[op]:12d}  {reasons_txt}")
    return "\n".join(out)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)
    for path in args.sources:
        print(summarize(path, args.top))


if __name__ == "__main__":
    main(sys.argv[1:])
