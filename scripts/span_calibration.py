"""Calibration data for the clock bound on a GPU: the shipped kernel on every benchmark configuration
(five correctness scenarios), every timed call logged, and per configuration the candidate's and the
initial kernel's overheads as the judge sees them.

    OUT=/some/dir python3 scripts/span_calibration.py [KERNEL]

Writes ``$OUT/calls-span.jsonl`` (one line per timed native call: wall, claim, drain, host time, the
judge's device-timeline span and the judge's host time from the window opening to the runner's word) and
``$OUT/eval-span.json``; prints one line per configuration. Run on the device machine
(``STEPS=span bash scripts/gpu_validate.sh``). The 2026-12-01 run of its first form is in
``docs/runs/2026-12-01/evening/``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from quaere.evaluate import EvalOptions, run_evaluation, stats
from quaere.task.loader import load_task


def main(kernel: Path, out: Path) -> None:
    task = load_task("flash_attention_hopper")
    few = Path(tempfile.mkdtemp()) / "few.json"
    few.write_text(json.dumps([s.model_dump(mode="json") for s in task.module.correctness_scenarios()[::40]]))
    log = out / "calls-span.jsonl"
    evaluation = run_evaluation(task, kernel, EvalOptions(scenarios_file=few, call_log=log))
    (out / "eval-span.json").write_text(evaluation.model_dump_json(indent=1))
    leads: dict[tuple[str, str], list[float]] = {}
    for line in log.read_text().splitlines():
        call = json.loads(line)
        leads.setdefault((call["scenario"], call["impl"]), []).append(call["armed_ms"] * 1e3)
    print(f"correct: {evaluation.correct}")
    for bench in evaluation.benchmarks:
        cells = []
        for impl in ("candidate", "initial"):
            t = bench.timing(impl)
            lead = stats.median(leads.get((bench.scenario_id, impl), [float("nan")]))
            cells.append(f"{impl} {t.status.value} wall-ov {t.overhead_ms * 1e3:6.1f} span-ov "
                         f"{t.span_overhead_ms * 1e3:6.1f} close-ov {t.close_overhead_ms * 1e3:6.1f} drain "
                         f"{t.drain_ms * 1e3:5.1f} armed {lead:5.1f} us")
        print(f"{bench.scenario_id:30s} fa3 {bench.ratio('fa3'):.3f} | " + " | ".join(cells))


if __name__ == "__main__":
    kernel = Path(sys.argv[1] if len(sys.argv) > 1 else "kernels/flash_attention_hopper.cu")
    main(kernel, Path(os.environ.get("OUT", ".")))
