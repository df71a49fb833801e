"""First contact of the judge/runner evaluator with a GPU: three scenarios and one configuration of the
shipped kernel, everything the record says printed (device run: ``python3 scripts/gpu_smoke.py``)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.task.loader import load_task

task = load_task("flash_attention_hopper")
chosen = [s.model_dump(mode="json") for s in task.module.correctness_scenarios()[::60]]
scenarios = Path(tempfile.mkdtemp()) / "few.json"
scenarios.write_text(json.dumps(chosen))
kernel = Path(sys.argv[1] if len(sys.argv) > 1 else "kernels/flash_attention_hopper.cu")
options = EvalOptions(scenarios_file=scenarios, benchmark_ids=frozenset({"d128-h16-s512-noncausal"}))
evaluation = run_evaluation(task, kernel, options)
print("isolation:", evaluation.isolation.summary, evaluation.isolation.notes)
print("note:", evaluation.note, "wall", round(evaluation.wall_s, 1))
for verdict in evaluation.correctness:
    print(verdict.scenario_id, verdict.verdict.value, verdict.detail[:1500])
for bench in evaluation.benchmarks:
    for t in bench.timings:
        print(bench.scenario_id, t.impl, t.status.value, f"{t.median_ms:.4f} ms", f"ovh {t.overhead_ms}",
              f"drain {t.drain_ms}", t.detail[:1500])
sys.exit(0 if evaluation.correct else 1)
