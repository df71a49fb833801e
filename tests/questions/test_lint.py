"""``lint`` rejects broken banks: each fixture is the shipped bank copied and broken in one way."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from quaere.cli import app
from quaere.questions.bank import BankError, lint_dir, load_bank, shipped_bank_dir

runner = CliRunner()


@pytest.fixture()
def bank_copy(tmp_path: Path) -> Path:
    target = tmp_path / "bank"
    target.mkdir()
    for item in shipped_bank_dir().iterdir():
        if item.name.endswith(".yaml"):
            (target / item.name).write_text(item.read_text())
    return target


def edit(folder: Path, name: str, change) -> None:
    path = folder / name
    data = yaml.safe_load(path.read_text())
    change(data["entries"])
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def problems(folder: Path) -> list[str]:
    return [str(p) for p in lint_dir(folder)]


def test_the_copy_is_clean(bank_copy):
    assert problems(bank_copy) == []


def test_duplicate_id(bank_copy):
    def dup(entries):
        entries[1]["id"] = entries[0]["id"]

    edit(bank_copy, "core-measure.yaml", dup)
    found = problems(bank_copy)
    assert any("measure.cycles-vs-wall" in p and "duplicate id" in p for p in found)
    result = runner.invoke(app, ["bank", "lint", "--dir", str(bank_copy)])
    assert result.exit_code == 1 and "duplicate id" in result.output


def test_wrong_count(bank_copy):
    edit(bank_copy, "core-search.yaml", lambda entries: entries.pop())
    found = problems(bank_copy)
    assert any("100 entries; expected 101" in p for p in found)


def test_core_entry_mentioning_a_reference_kernel(bank_copy):
    def lean(entries):
        entries[0]["question"] = "Does the reference kernel keep more warps resident per SM than the candidate does?"

    edit(bank_copy, "core-framing.yaml", lean)
    found = problems(bank_copy)
    assert any("framing.hot-loop" in p and "reference kernel" in p and "neutral" in p for p in found)
    assert runner.invoke(app, ["bank", "lint", "--dir", str(bank_copy)]).exit_code == 1


def test_core_entry_presupposing_attention(bank_copy):
    def lean(entries):
        entries[0]["evidence"] = "Time of the softmax part of the loop against the QK^T product."

    edit(bank_copy, "core-bound.yaml", lean)
    found = problems(bank_copy)
    assert any("bound.floor-per-scenario" in p and "softmax" in p for p in found)


def test_the_same_words_are_allowed_outside_the_core(bank_copy):
    def lean(entries):
        entries[0]["evidence"] = "Profile of the comparison implementation (e.g. a cuDNN kernel) on that scenario."

    edit(bank_copy, "comparison.yaml", lean)
    assert problems(bank_copy) == []


def test_near_duplicate_question(bank_copy):
    def copy_text(entries):
        entries[1]["question"] = entries[0]["question"].replace("candidate's", "kernel's")

    edit(bank_copy, "core-measure.yaml", copy_text)
    assert any("near duplicate of 'measure.cycles-vs-wall'" in p for p in problems(bank_copy))


@pytest.mark.parametrize(
    "question, message",
    [
        ("Does the kernel spill registers.", "ending in a single '?'"),
        ("Does the kernel spill? Where does it spill?", "ending in a single '?'"),
        ("Look at the SASS. Does the kernel spill registers to local memory?", "one sentence"),
        ("does the kernel spill registers to local memory?", "capital letter"),
        ("Does the kernel " + "really " * 40 + "spill?", "at most 200"),
    ],
)
def test_question_form(bank_copy, question, message):
    def bad(entries):
        entries[0]["question"] = question

    edit(bank_copy, "core-level.yaml", bad)
    assert any("level.read-sass" in p and message in p for p in problems(bank_copy))


def test_schema_errors_name_file_entry_and_field(bank_copy):
    def broken(entries):
        del entries[2]["evidence"]
        entries[3]["kind"] = "hunch"

    edit(bank_copy, "core-gap.yaml", broken)
    found = problems(bank_copy)
    assert any(p.startswith("core-gap.yaml: entry 'gap.tail-wave': field 'evidence'") for p in found)
    assert any(p.startswith("core-gap.yaml: entry 'gap.phase-time': field 'kind'") for p in found)
    with pytest.raises(BankError, match="gap.tail-wave"):
        load_bank(bank_copy)


def test_unverified_needs_a_source_and_confirmed_a_trace(bank_copy):
    def broken(entries):
        entries[0]["provenance"] = {"status": "confirmed"}
        entries[1]["provenance"] = {"status": "unverified", "trace": "x"}

    edit(bank_copy, "core-bench.yaml", broken)
    found = problems(bank_copy)
    assert any("bench.l2-resident" in p and "provenance.confirmed.trace" in p for p in found)
    assert any("bench.same-buffers" in p and "provenance.unverified" in p for p in found)


def test_moment_coverage(bank_copy):
    def drop_moment(entries):
        for entry in entries:
            entry["moments"] = ["plateau"]

    edit(bank_copy, "core-numerics.yaml", drop_moment)
    assert any("fit 'explained_failure'" in p for p in problems(bank_copy))


def test_group_mismatch_and_arch_spread(bank_copy):
    (bank_copy / "arch-ampere.yaml").unlink()
    found = problems(bank_copy)
    assert any("0 entries for ampere" in p for p in found)
    assert any("13 entries; expected 18" in p for p in found)


def test_not_yaml_and_missing_folder(bank_copy, tmp_path):
    (bank_copy / "broken.yaml").write_text("group: [unclosed\n")
    assert any(p.startswith("broken.yaml") and "not valid YAML" in p for p in problems(bank_copy))
    result = runner.invoke(app, ["bank", "lint", "--dir", str(tmp_path / "nowhere")])
    assert result.exit_code == 2


@pytest.mark.parametrize(
    "question, rule",
    [
        ("Would warp specialization hide the load latency in the main loop?", "technique"),
        ("Would a larger grid remove the gap on the smallest scenarios?", "would-form"),
        ("Is there a faster instruction (vector loads, matrix units, async copies) for the loop?", "answer-list"),
        ("Which scenarios, such as the small ones or the long ones, miss the goal?", "answer-list"),
        ("How will you split the remaining evaluations between new designs and tuning?", "answerable"),
        ("Do you think the kernel can reach the target on every scenario?", "answerable"),
    ],
)
def test_a_question_that_tells_or_cannot_be_answered(bank_copy, question, rule):
    def bad(entries):
        entries[0]["question"] = question

    edit(bank_copy, "core-search.yaml", bad)
    assert any("search.shared-assumption" in p and p.endswith(f"[{rule}]") for p in problems(bank_copy)), question


def test_gpu_words_need_the_gpu_condition(bank_copy):
    def undeclared(entries):
        entries[0]["question"] = "Which loop of the initial kernel issues the most SASS instructions per warp?"
        entries[0].pop("when", None)

    edit(bank_copy, "core-framing.yaml", undeclared)
    found = [p for p in problems(bank_copy) if "framing.hot-loop" in p]
    assert any("field 'when'" in p and "'device: gpu'" in p and p.endswith("[device]") for p in found)


def test_a_paraphrase_is_a_near_duplicate(bank_copy):
    def paraphrase(entries):  # measure.cycles-vs-wall in other words and another order
        entries[1]["question"] = "Counted in SM clock cycles instead of wall time, does the candidate's speedup hold?"

    edit(bank_copy, "core-measure.yaml", paraphrase)
    found = problems(bank_copy)
    assert any("measure.clock-state" in p and "near duplicate of 'measure.cycles-vs-wall'" in p for p in found)


def test_unknown_claims_and_conditions_are_schema_errors(bank_copy):
    def broken(entries):
        entries[0]["when"] = {"claims": ["vibes"], "device": "tpu"}

    edit(bank_copy, "core-limit.yaml", broken)
    found = [p for p in problems(bank_copy) if "limit.name-the-limit" in p]
    assert any("when.claims" in p and "unknown claim ['vibes']" in p for p in found)
    assert any("when.device" in p for p in found)


def test_the_shipped_bank_asks_and_never_tells():
    from quaere.questions.lint_wording import technique_names

    bank = load_bank()
    assert not [e.id for e in bank.entries if technique_names(e.question)]
    assert not [e.id for e in bank.entries if e.question.lower().startswith("would ")]
