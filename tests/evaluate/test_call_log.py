"""The clock bound replayed on calls the H200 recorded (docs/runs/): honest kernels believed, every recorded attack
not, and a forged majority of calls caught. No device needed: the bound is a pure function of what the judge saw."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from quaere.evaluate.call_log import CallLogError, read_call_log, replay
from quaere.records import TimingStatus
from quaere.task.loader import load_task

RUNS = Path(__file__).resolve().parents[2] / "docs" / "runs" / "2026-12-04"
RULE = load_task("flash_attention_hopper").spec.timing


def lines(name: str) -> list[str]:
    with gzip.open(RUNS / name, "rt") as log:
        return log.read().splitlines()


def test_the_shipped_kernel_is_believed_on_every_configuration_it_was_logged_on() -> None:
    for name in ("s26/calls-span.jsonl.gz", "stage21/call1-cal1-calls.jsonl.gz", "stage21/call1-cal2-calls.jsonl.gz"):
        verdicts = replay(read_call_log(lines(name), name), RULE)
        assert len(verdicts) == 26 and all(doubt is None for doubt in verdicts.values()), name


@pytest.mark.parametrize("attack", ["forge_small", "hidden_tail", "early_word"])
def test_every_logged_attack_is_hidden_work_on_every_configuration(attack: str) -> None:
    verdicts = replay(read_call_log(lines(f"s26/calls-{attack}.jsonl.gz")), RULE)
    assert len(verdicts) == 6
    assert {doubt.status for doubt in verdicts.values() if doubt is not None} == {TimingStatus.HIDDEN_WORK}
    assert all(doubt is not None for doubt in verdicts.values())


def test_the_honest_log_with_three_claims_in_five_cut_by_30_percent_is_hidden_work_everywhere() -> None:
    """The majority forgery (forge_majority), made from the honest calls: the median claim is 30% short."""
    forged = []
    for line in lines("s26/calls-span.jsonl.gz"):
        call = json.loads(line)
        if call["impl"] == "candidate" and call["index"] % 5 < 3:
            call["device_ms"] *= 0.7
        forged.append(json.dumps(call))
    calls = read_call_log(forged)
    verdicts = replay(calls, RULE)
    assert len(verdicts) == 26
    assert all(doubt is not None and doubt.status is TimingStatus.HIDDEN_WORK for doubt in verdicts.values())
    # Over all of the candidate's calls (the bound before 2026-12-04's change) the close span misses it nearly always.
    unseen = [scenario for scenario in verdicts
              if calls[(scenario, "candidate")].close_overhead_ms(figure=False)
              - calls[(scenario, "initial")].close_overhead_ms(figure=False) <= RULE.close_abs_ms]
    assert len(unseen) == 25


def test_a_line_that_is_not_the_judges_record_is_named() -> None:
    good = '{"scenario": "s", "impl": "initial", "wall_ms": 1.0, "device_ms": 0.5, "close_ms": null}'
    assert read_call_log([good, ""])[("s", "initial")].claims_ms == [0.5]
    with pytest.raises(CallLogError, match=r"calls.jsonl: line 2: field 'device_ms' missing"):
        read_call_log([good, '{"scenario": "s", "impl": "initial", "wall_ms": 1.0}'], "calls.jsonl")
    with pytest.raises(CallLogError, match="line 1: not JSON"):
        read_call_log(["{"])


def test_the_replay_script_prints_each_configurations_excess_and_verdict() -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "replay_bounds.py"
    run = subprocess.run([sys.executable, str(script), str(RUNS / "s26/calls-forge_small.jsonl.gz")],
                         capture_output=True, text=True, check=True)
    assert "0 of 6 believed" in run.stdout
    assert run.stdout.count("hidden_work") == 6 and "close+" in run.stdout


def test_the_replay_script_names_a_bad_log_line_without_a_traceback(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "replay_bounds.py"
    bad = tmp_path / "calls.jsonl"
    bad.write_text('{"scenario": "s", "impl": "candidate", "wall_ms": 1.0}\n')
    run = subprocess.run([sys.executable, str(script), str(bad)], capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"{bad}: line 1: field 'device_ms' missing" in run.stderr
