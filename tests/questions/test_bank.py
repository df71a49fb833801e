"""The shipped bank: counts, provenance split, neutrality, and the ``quaere bank`` commands."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from quaere.cli import app
from quaere.questions.bank import load_bank, stats
from quaere.questions.lint import neutrality_violations
from quaere.questions.schema import BankSet
from quaere.questions.situation import TaskContext
from quaere.records import Moment

runner = CliRunner()


def test_shipped_bank_counts():
    bank = load_bank()
    s = stats(bank.entries)
    assert s.by_set == {"core": 101, "comparison": 5, "arch": 18}
    assert len(s.core_by_group) == 10 and min(s.core_by_group.values()) >= 6
    assert set(s.arch_by_arch) >= {"hopper", "blackwell", "ampere"}


def test_core_provenance_mirrors_the_study():
    s = stats(load_bank().entries)
    assert s.core_by_provenance == {"confirmed": 29, "unverified": 72}


def test_core_entries_are_neutral_and_require_nothing():
    for entry in load_bank().in_set(BankSet.CORE):
        assert not neutrality_violations(entry.question + " " + entry.evidence), entry.id
        assert not entry.when.comparison and not entry.when.arch, entry.id


def test_every_moment_has_core_entries():
    core = load_bank().in_set(BankSet.CORE)
    for moment in Moment:
        assert sum(moment in e.moments for e in core) >= 8, moment


def test_entries_fit_their_context():
    bank = load_bank()
    hopper = bank.by_id("hopper.wgmma-async")
    assert hopper.fits(TaskContext(arch="hopper", device="gpu"))
    assert hopper.when_failures(TaskContext(arch="ampere", has_comparison=True)) == ("needs hopper",)
    comparison = bank.by_id("comparison.axis-scaling")
    assert comparison.fits(TaskContext(has_comparison=True)) and not comparison.fits(TaskContext(arch="hopper"))
    gpu_only = bank.by_id("level.read-sass")
    assert gpu_only.fits(TaskContext(device="gpu")) and gpu_only.when_failures(TaskContext(device="cpu")) == (
        "needs a GPU",
    )


def test_stats_command_prints_the_counts():
    result = subprocess.run(
        [sys.executable, "-m", "quaere", "bank", "stats"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "core 101 / comparison 5 / arch 18; 10 core groups" in result.stdout
    for group in ("framing", "measure", "bound", "bench", "gap", "level", "limit", "numerics", "gain", "search"):
        assert group in result.stdout
    assert "29" in result.stdout and "72" in result.stdout


def test_lint_command_passes_on_the_shipped_bank():
    result = runner.invoke(app, ["bank", "lint"])
    assert result.exit_code == 0, result.output
    assert "bank OK" in result.output


def test_list_and_show():
    listed = runner.invoke(app, ["bank", "list", "--group", "measure"])
    assert listed.exit_code == 0
    assert "measure.cycles-vs-wall" in listed.output and "bound.floor-per-scenario" not in listed.output
    shown = runner.invoke(app, ["bank", "show", "measure.cycles-vs-wall"])
    assert shown.exit_code == 0
    text = " ".join(shown.output.split())  # the fields wrap at the terminal's width
    assert "clock cycles" in text and "confirmed at family level only" in text
    assert "this wording itself was not seen asked" in text and "asked when" in text
    conditional = runner.invoke(app, ["bank", "show", "limit.memory-bound-claim"])
    text = " ".join(conditional.output.split())
    assert "the agent claimed memory_bound" in text and "unverified" in text
    missing = runner.invoke(app, ["bank", "show", "measure.nope"])
    assert missing.exit_code == 2 and "measure.nope" in missing.output
