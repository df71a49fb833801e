"""Calibration data for a task's clock bounds: a kernel on every benchmark configuration (every 40th correctness
scenario), every timed call logged, and per configuration the candidate's excess over the initial kernel on each
bound, as the judge reads it, with the verdict.

    OUT=/some/dir python3 scripts/span_calibration.py [KERNEL] [--task NAME]

Default: the attention task and its shipped kernel (``kernels/flash_attention_hopper.cu``); with ``--task`` and no
KERNEL, that task's initial kernel, timed against itself: the honest spread a new GPU task's ``close_abs_ms`` (and
``span_abs_ms``) is set from (docs/tasks.md, "A new GPU task's timing slack"). Writes ``$OUT/calls-span.jsonl``
(one line per timed native call: wall, claim, drain, host time, the judge's device-timeline spans and the judge's
host time from the window opening to the runner's word) and ``$OUT/eval-span.json``. Run on the device machine
(``STEPS=span bash scripts/gpu_validate.sh``). Runs kept: ``docs/runs/2026-12-01/evening/``,
``docs/runs/2026-12-04/s26/``; replay a log later with ``scripts/replay_bounds.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from quaere.evaluate import EvalOptions, run_evaluation, stats
from quaere.evaluate.call_log import read_call_log, replay
from quaere.evaluate.clock_bound import excesses_ms
from quaere.task.loader import load_task

SHIPPED = Path("kernels/flash_attention_hopper.cu")


def main(task_name: str, kernel: Path | None, out: Path) -> None:
    task = load_task(task_name)
    kernel = kernel or (SHIPPED if task_name == "flash_attention_hopper" else task.initial_kernel)
    few = Path(tempfile.mkdtemp()) / "few.json"
    few.write_text(json.dumps([s.model_dump(mode="json") for s in task.module.correctness_scenarios()[::40]]))
    log = out / "calls-span.jsonl"
    evaluation = run_evaluation(task, kernel, EvalOptions(scenarios_file=few, call_log=log))
    (out / "eval-span.json").write_text(evaluation.model_dump_json(indent=1))
    calls = read_call_log(log.read_text().splitlines(), str(log))
    verdicts = replay(calls, task.spec.timing)
    leads: dict[tuple[str, str], list[float]] = {}
    for line in log.read_text().splitlines():
        call = json.loads(line)
        leads.setdefault((call["scenario"], call["impl"]), []).append((call.get("armed_ms") or float("nan")) * 1e3)
    baseline = task.spec.comparisons[0].name if task.spec.comparisons else "initial"
    print(f"{kernel}: correct {evaluation.correct}; excess over the initial kernel as the bound reads it")
    for bench in evaluation.benchmarks:
        impl, ref = calls.get((bench.scenario_id, "candidate")), calls.get((bench.scenario_id, "initial"))
        if impl is None or ref is None:
            print(f"{bench.scenario_id:30s} not timed: {bench.timing('candidate')}")
            continue
        excess = " ".join(f"{name}+ {ms * 1e3:6.1f}" for name, ms in excesses_ms(impl, ref).items())
        lead = stats.median(leads[(bench.scenario_id, "candidate")])
        doubt = verdicts.get(bench.scenario_id)
        print(f"{bench.scenario_id:30s} {baseline} {bench.ratio(baseline):.3f} | {excess} us | armed {lead:5.1f} us "
              f"| {doubt.status.value if doubt else 'believed'} (judged: {bench.timing('candidate').status.value})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernel", nargs="?", type=Path)
    parser.add_argument("--task", default="flash_attention_hopper")
    args = parser.parse_args()
    main(args.task, args.kernel, Path(os.environ.get("OUT", ".")))
