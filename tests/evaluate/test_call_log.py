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
from quaere.evaluate.clock_bound import excesses_ms
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


def with_turns(name: str, shave_ms: float = 0.0) -> list[str]:
    """Session 26's lines with the runner's turn, which it did not log, read as its cover's end to the close mark
    (the turn plus the judge's sample read), and the candidate's claims ``shave_ms`` short."""
    out = []
    for line in lines(name):
        call = json.loads(line)
        call["slot_ms"] = call["cover_close_ms"]
        if call["impl"] == "candidate":
            call["device_ms"] -= shave_ms
        out.append(json.dumps(call))
    return out


def test_claims_shaved_by_6_us_pass_the_close_span_and_not_the_runners_turn() -> None:
    """6 us is 4.5% of the D=128 S=512 call: inside the close span's 8 us slack on 25 of 26 configurations, and
    over the runner's turn's 3 us on all 26. Honest, every configuration is believed; the recorded attacks are not."""
    assert all(doubt is None for doubt in replay(read_call_log(with_turns("s26/calls-span.jsonl.gz")), RULE).values())
    calls = read_call_log(with_turns("s26/calls-span.jsonl.gz", shave_ms=0.006))
    verdicts = replay(calls, RULE)
    assert len(verdicts) == 26 and all(doubt is not None for doubt in verdicts.values())
    excess = {scenario: excesses_ms(calls[(scenario, "candidate")], calls[(scenario, "initial")])
              for scenario in verdicts}
    assert all(excess[scenario]["slot"] > RULE.slot_abs_ms for scenario in verdicts)
    assert sum(excess[scenario]["close"] > RULE.close_abs_ms for scenario in verdicts) == 1
    for attack in ("forge_small", "hidden_tail", "early_word"):
        attacked = read_call_log(with_turns(f"s26/calls-{attack}.jsonl.gz"))
        assert all(excesses_ms(attacked[(scenario, "candidate")], attacked[(scenario, "initial")])["slot"] > 0.01
                   for scenario in replay(attacked, RULE)), attack


def shaved(name: str, shave_ms: float) -> list[str]:
    """A log's lines with the candidate's claims ``shave_ms`` short."""
    calls = [json.loads(line) for line in lines(name)]
    for call in calls:
        call["device_ms"] -= shave_ms if call["impl"] == "candidate" else 0.0
    return [json.dumps(call) for call in calls]


@pytest.mark.parametrize(("name", "task", "configurations", "shave_ms"),
                         [("s28/call1-ship-calls.jsonl.gz", "flash_attention_hopper", 26, 0.006),
                          ("s28/call1-init-calls.jsonl.gz", "flash_attention_hopper", 26, 0.0),
                          ("s28/call1-rms-calls.jsonl.gz", "rmsnorm_hopper", 11, 0.004)])
def test_the_runners_turn_logged_on_the_h200_believes_honest_kernels_and_not_a_few_us_off_every_claim(
        name: str, task: str, configurations: int, shave_ms: float) -> None:
    """Session 28's logs, the turn measured: the shipped kernel, and each task's initial kernel against itself (the
    attention task's, whose calls of up to 9.5 ms get the relative slack, honest only)."""
    rule = load_task(task).spec.timing
    honest = replay(read_call_log(lines(name)), rule)
    assert len(honest) == configurations and all(doubt is None for doubt in honest.values())
    if not shave_ms:
        return
    forged = replay(read_call_log(shaved(name, shave_ms)), rule)
    assert all(doubt is not None and "turn" in doubt.why for doubt in forged.values())


def test_a_line_that_is_not_the_judges_record_is_named() -> None:
    good = '{"scenario": "s", "impl": "initial", "wall_ms": 1.0, "device_ms": 0.5, "close_ms": null}'
    assert read_call_log([good, ""])[("s", "initial")].claims_ms == [0.5]
    with pytest.raises(CallLogError, match=r"calls.jsonl: line 2: field 'device_ms' missing"):
        read_call_log([good, '{"scenario": "s", "impl": "initial", "wall_ms": 1.0}'], "calls.jsonl")
    with pytest.raises(CallLogError, match="line 1: not JSON"):
        read_call_log(["{"])
    with pytest.raises(CallLogError, match=r"calls.jsonl: line 2: field 'slot_ms' is 'soon' \(expected a number"):
        read_call_log([good, good.replace('"close_ms": null', '"slot_ms": "soon"')], "calls.jsonl")


def test_the_replay_script_prints_each_configurations_excess_and_verdict() -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "replay_bounds.py"
    run = subprocess.run([sys.executable, str(script), str(RUNS / "s26/calls-forge_small.jsonl.gz")],
                         capture_output=True, text=True, check=True)
    assert "0 of 6 believed" in run.stdout
    assert run.stdout.count("hidden_work") == 6 and "close+" in run.stdout


def test_the_replay_script_prints_where_the_turn_floor_lies() -> None:
    """Session 28's shipped kernel: its floor under its median claim on all 26 configurations (the floor never raised
    it); session 26's log has no turns, so no floor."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "replay_bounds.py"
    run = subprocess.run([sys.executable, str(script), str(RUNS / "s28/call1-ship-calls.jsonl.gz"),
                          str(RUNS / "s26/calls-forge_small.jsonl.gz")], capture_output=True, text=True, check=True)
    floors = [line.split("floor-claim")[1].split()[0] for line in run.stdout.splitlines() if "floor-claim" in line]
    assert len(floors) == 32
    assert all(float(value) < 0 for value in floors[:26]) and floors[26:] == ["+nan"] * 6


def test_the_replay_script_names_a_bad_log_line_without_a_traceback(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "replay_bounds.py"
    bad = tmp_path / "calls.jsonl"
    bad.write_text('{"scenario": "s", "impl": "candidate", "wall_ms": 1.0}\n')
    run = subprocess.run([sys.executable, str(script), str(bad)], capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"{bad}: line 1: field 'device_ms' missing" in run.stderr
