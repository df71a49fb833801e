"""A full evaluation of one kernel on the GPU task, as ``quaere eval`` runs it, plus the per-call log of the
judge's clock bound (device run: ``python3 scripts/gpu_full_eval.py KERNEL OUT_DIR``).

Writes OUT_DIR/eval.json (the record) and OUT_DIR/calls.jsonl (every native timed call), and prints per
configuration the ratio to FA3 and the clock bound's inputs: quantiles of wall - claimed device time for
the candidate and the initial kernel, and the drain.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.stats import geomean, quantile
from quaere.task.loader import load_task

kernel, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
calls = out / "calls.jsonl"
calls.unlink(missing_ok=True)
evaluation = run_evaluation(load_task("flash_attention_hopper"), kernel, EvalOptions(call_log=calls))
(out / "eval.json").write_text(evaluation.model_dump_json())
gaps: dict[tuple[str, str], list[float]] = defaultdict(list)
for line in calls.read_text().splitlines() if calls.exists() else []:
    call = json.loads(line)
    gaps[(call["scenario"], call["impl"])].append((call["wall_ms"] - call["device_ms"]) * 1e3)
failing = [v for v in evaluation.correctness if not v.verdict.passed]
print(f"{kernel}: {len(evaluation.correctness) - len(failing)}/{len(evaluation.correctness)} correct, audit "
      f"{'clean' if not evaluation.audit else evaluation.audit}, wall {evaluation.wall_s:.1f} s, "
      f"isolation: {evaluation.isolation.summary}")
for verdict in failing[:10]:
    print("  FAIL", verdict.scenario_id, verdict.verdict.value, verdict.detail[:300])
ratios = []
for bench in evaluation.benchmarks:
    cand = bench.timing("candidate")
    ratio = bench.ratio("fa3")
    ratios.append(ratio)
    q = {impl: [round(quantile(gaps[(bench.scenario_id, impl)], p), 1) for p in (0.1, 0.25, 0.5, 0.75)]
         for impl in ("candidate", "initial")}
    print(f"{bench.scenario_id:32s} {cand.status.value:12s} fa3 {ratio:.3f} cudnn {bench.ratio('cudnn'):.3f} "
          f"init {bench.ratio('initial'):.3f} | gap us cand {q['candidate']} init {q['initial']} "
          f"drain {cand.drain_ms * 1e3:.1f} {cand.detail[:100]}")
print(f"geomean vs fa3 {geomean(ratios):.4f}  min {min(ratios):.3f}  note: {evaluation.note[:300]}")
