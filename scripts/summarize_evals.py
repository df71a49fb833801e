"""Summarize `quaere eval --json` records: verdict counts, wall time, and per-config TFLOP/s beside
every comparison measured in the same run, with ratios and geomeans. Used by scripts/gpu_validate.sh.

    python3 scripts/summarize_evals.py eval-a.json [eval-b.json.gz ...]

A gzip-compressed record (as docs/runs keeps them) is read as is.
"""

from __future__ import annotations

import collections
import gzip
import json
import math
import sys
import zlib
from pathlib import Path

from pydantic import ValidationError

from quaere.evaluate.stats import geomean, median
from quaere.records import Evaluation, TimingStatus


def _load(path: Path) -> Evaluation | str:
    try:
        raw = path.read_bytes()
        data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    except (OSError, EOFError, zlib.error, json.JSONDecodeError, UnicodeDecodeError) as exc:
        return f"{path}: no record ({exc})"
    try:
        return Evaluation.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        return (f"{path}: not a quaere eval record: field '{where}': {first['msg']} "
                "(expected `quaere eval --json` output)")


def _impls(evaluation: Evaluation) -> list[str]:
    seen: list[str] = []
    for bench in evaluation.benchmarks:
        for timing in bench.timings:
            if timing.impl not in seen:
                seen.append(timing.impl)
    return seen


def summarize(path: Path) -> str:
    evaluation = _load(path)
    if isinstance(evaluation, str):
        return evaluation
    verdicts = collections.Counter(v.verdict.value for v in evaluation.correctness)
    lines = [
        f"== {path.name}: {evaluation.candidate_path} ({evaluation.candidate_hash[:12]}) on {evaluation.device.name}",
        f"build {evaluation.build.status.value}, audit findings {len(evaluation.audit)}, "
        f"correctness {dict(verdicts)}, wall {evaluation.wall_s:.1f} s",
    ]
    impls = _impls(evaluation)
    if not impls:
        return "\n".join(lines)
    lines.append("config".ljust(30) + "".join(f"{i:>11}" for i in impls) + "  cand/fa3  spread%")
    ratios: dict[str, list[float]] = collections.defaultdict(list)
    for bench in evaluation.benchmarks:
        row = bench.scenario_id.ljust(30)
        for impl in impls:
            t = bench.timing(impl)
            row += f"{t.tflops:11.1f}" if t and t.status is TimingStatus.MEASURED else f"{'-':>11}"
            ratios[impl].append(bench.ratio(impl) if impl != "candidate" else math.nan)
        cand = bench.timing("candidate")
        spread = 100 * cand.spread_ms / cand.median_ms if cand and cand.status is TimingStatus.MEASURED else math.nan
        lines.append(row + f"  {bench.ratio('fa3'):8.3f}  {spread:7.1f}" + ("  SUSPECT" if bench.suspect else ""))
    for impl in impls:
        if impl == "candidate":
            continue
        finite = [r for r in ratios[impl] if math.isfinite(r)]
        if finite:
            lines.append(
                f"candidate / {impl}: geomean {geomean(finite):.3f}, min {min(finite):.3f} over {len(finite)} configs"
            )
    lines.append(_floor_line(evaluation))
    return "\n".join(lines)


def _floor_line(evaluation: Evaluation) -> str:
    """How many candidate medians the turn floor raised above the median claim, and by how much at most."""
    floored = [t for bench in evaluation.benchmarks if (t := bench.timing("candidate")) and t.samples_ms
               and math.isfinite(t.turn_floor_ms)]
    if not floored:
        return "turn floor: not recorded"
    raised_us = [1e3 * (t.median_ms - median(list(t.samples_ms))) for t in floored]
    raised_us = [us for us in raised_us if us > 0]
    most = f" (at most +{max(raised_us):.1f} us)" if raised_us else ""
    return f"turn floor: raised {len(raised_us)} of {len(floored)} candidate medians{most}"


def main(argv: list[str]) -> int:
    for arg in argv:
        print(summarize(Path(arg)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
