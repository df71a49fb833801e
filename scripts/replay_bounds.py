"""Replay the judge's clock bound on call logs a device recorded (``EvalOptions.call_log``, e.g. the
``calls-*.jsonl.gz`` under ``docs/runs/``), with a task's timing rule: per configuration, the candidate's excess over
the trusted kernel on each bound, where the turn floor lies against the median claim, and the verdict. Checks a change
of the bound, or a new task's slack, without a GPU.

    .venv/bin/python scripts/replay_bounds.py [--task flash_attention_hopper] LOG [LOG ...]
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

from quaere.evaluate.call_log import CallLogError, read_call_log, replay
from quaere.evaluate.clock_bound import excesses_ms
from quaere.evaluate.stats import median
from quaere.task.loader import load_task
from quaere.task.spec import TaskError, TimingRule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", type=Path)
    parser.add_argument("--task", default="flash_attention_hopper")
    args = parser.parse_args()
    try:
        rule = load_task(args.task).spec.timing
        for path in args.logs:
            show(path, rule)
    except (OSError, CallLogError, TaskError) as exc:  # a wrong argument or log: its message, no traceback
        parser.exit(2, f"replay_bounds: {exc}\n")


def show(path: Path, rule: TimingRule) -> None:
    """One log's replay: a line per configuration."""
    with (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()) as log:
        calls = read_call_log(log, str(path))
    verdicts = replay(calls, rule)
    print(f"{path}: {sum(d is None for d in verdicts.values())} of {len(verdicts)} believed")
    for scenario, doubt in verdicts.items():
        impl, ref = calls[(scenario, "candidate")], calls[(scenario, "initial")]
        cells = " ".join(f"{name}+ {ms * 1e3:7.1f}" for name, ms in excesses_ms(impl, ref).items())
        # The turn floor less the median claim, every logged call taken as timed (a log does not mark the warm-up).
        floor = impl.turn_floor_ms(ref, len(impl.claims_ms)) - median(impl.claims_ms)
        verdict = doubt.status.value if doubt else "believed"
        print(f"  {scenario:30s} {cells} floor-claim {floor * 1e3:+6.2f} us  {verdict}")

if __name__ == "__main__":
    main()
