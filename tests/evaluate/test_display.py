"""The eval command's tables: long scenario lists show only what failed unless asked."""

from __future__ import annotations

from rich.console import Console
from tests.evaluate.test_ledger import make_evaluation

from quaere.evaluate.display import render
from quaere.records import ScenarioVerdict, Verdict


def rendered(all_rows: bool, count: int) -> str:
    verdicts = tuple(
        ScenarioVerdict(scenario_id=f"s{i:03d}", verdict=Verdict.WRONG if i == 7 else Verdict.PASSED, seed=1)
        for i in range(count)
    )
    console = Console(record=True, width=160)
    render(make_evaluation().model_copy(update={"correctness": verdicts}), console, all_rows=all_rows)
    return console.export_text()


def test_many_scenarios_list_only_failures_unless_all() -> None:
    short = rendered(False, 60)
    assert "s007" in short and "s008" not in short and "59 passed scenarios not listed" in short
    assert "NOT CORRECT: 59/60" in short
    assert "s008" in rendered(True, 60)


def test_few_scenarios_are_all_listed() -> None:
    text = rendered(False, 10)
    assert "s008" in text and "not listed" not in text


def test_an_evaluation_that_ran_nothing_says_so_in_one_line() -> None:
    verdicts = tuple(ScenarioVerdict(scenario_id=f"s{i:03d}", verdict=Verdict.NOT_RUN, seed=1) for i in range(50))
    console = Console(record=True, width=160)
    evaluation = make_evaluation().model_copy(update={"correctness": verdicts, "ran": False, "note": "no GPU"})
    render(evaluation, console)
    text = console.export_text()
    assert "50 scenario(s) not run" in text and "s001" not in text
    assert "NOT RUN: built, audit clean" in text and "NOT CORRECT" not in text
