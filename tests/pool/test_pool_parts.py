"""The pool's parts that need no Ray: the setting, the units, the merged report, the bundle written on
another machine, the campaigns' layout, and quaere importing without Ray."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from quaere.agents.wiring import RunRequest
from quaere.campaigns import campaign_folders, campaign_requests
from quaere.evaluate import EvalOptions
from quaere.evaluate.judging import JudgeJob, SessionReport, job_for, merge_reports
from quaere.evaluate.pool import PoolError, PoolSpec, pooled_evaluate
from quaere.evaluate.pool_actor import JUDGE_DEATH_GRACE_S, JobBundle, JudgeActor, make_bundle, materialize
from quaere.evaluate.run import run_evaluation
from quaere.records import AuditFinding, Isolation, Placement, Scenario
from quaere.task.loader import Task
from quaere.workspace import create_workspace


def test_pool_settings_parse_and_bad_ones_say_what_was_expected() -> None:
    assert PoolSpec.parse("local") == PoolSpec() and PoolSpec.parse("local").local
    assert PoolSpec.parse("local:4") == PoolSpec(size=4)
    assert PoolSpec.parse("10.0.0.5:6379") == PoolSpec(address="10.0.0.5:6379")
    assert not PoolSpec.parse("auto").local
    assert [str(PoolSpec.parse(text)) for text in ("local", "local:4", "auto")] == ["local", "local:4", "auto"]
    for bad in ("local:0", "local:two", "  "):
        with pytest.raises(PoolError, match="expected"):
            PoolSpec.parse(bad)
    assert pooled_evaluate(None) is run_evaluation


def test_correctness_units_are_dealt_round_robin() -> None:
    pytest.importorskip("ray", reason="pool_run imports Ray at its top (it is only loaded with a pool)")
    from quaere.evaluate.pool_run import stripes

    scenarios = [Scenario(id=f"s{i}", params={}) for i in range(7)]
    units = stripes(scenarios, 3)
    assert [[s.id for s in u.scenarios] for u in units] == [["s0", "s3", "s6"], ["s1", "s4"], ["s2", "s5"]]
    assert len(stripes(scenarios[:2], 12)) == 2


def _isolation(**fields: object) -> Isolation:
    return Isolation(separate_process=True, seccomp=True, landlock_abi=6, threads_allowed=False,
                     capabilities_dropped=True, runner_uid=0, judge_uid=0).model_copy(update=fields)


def test_merged_reports_keep_every_finding_and_the_weakest_isolation() -> None:
    finding = AuditFinding(rule="banned_mapped", rationale="why", evidence="libcublas")
    strong = SessionReport(isolation=_isolation(), notes=("clock: ok",))
    weak = SessionReport(isolation=_isolation(seccomp=False, landlock_abi=0, capabilities_dropped=False,
                                              notes=("no landlock here",)),
                         findings=(finding,))
    never_ran = SessionReport()  # a judge that never started a runner says nothing about isolation
    merged = merge_reports([strong, weak, never_ran, strong])
    assert merged.findings == (finding,) and merged.notes == ("clock: ok",)
    assert not merged.isolation.seccomp and merged.isolation.landlock_abi == 0
    assert not merged.isolation.capabilities_dropped
    assert "the weakest is recorded" in merged.isolation.notes[-1]
    assert merge_reports([strong, never_ran]).isolation == strong.isolation
    # No session's runner reported (none started, or every judge was lost first): the record claims nothing.
    unreported = merge_reports([never_ran, never_ran]).isolation
    assert not (unreported.separate_process or unreported.seccomp or unreported.capabilities_dropped)
    assert unreported.landlock_abi == 0 and "judge was lost" in unreported.notes[0]


def _job(softmax: Task, tmp_path: Path) -> JudgeJob:
    library = tmp_path / "build" / "kernel.so"
    library.parent.mkdir()
    library.write_bytes(b"\x7fELF built bytes")
    return job_for(softmax, {"candidate": str(library)}, 3, EvalOptions())


def test_a_bundle_is_written_under_the_cache_and_a_rewritten_copy_is_replaced(softmax: Task, tmp_path: Path) -> None:
    bundle = make_bundle("k1", _job(softmax, tmp_path))
    assert isinstance(bundle, JobBundle) and "task.toml" in bundle.task_files
    cache = tmp_path / "node-cache"
    job = materialize(bundle, cache)
    library = Path(job.kernels["candidate"])
    assert library.read_bytes() == b"\x7fELF built bytes" and library.is_relative_to(cache)
    assert (job.task_folder / "task.toml").read_bytes() == (softmax.folder / "task.toml").read_bytes()
    assert job.seed == 3 and job.task_folder != softmax.folder

    library.write_bytes(b"swapped by someone")  # the cache is not trusted: bytes are compared on every use
    (job.task_folder / "task.py").write_text("raise SystemExit")
    again = materialize(bundle, cache)
    assert Path(again.kernels["candidate"]).read_bytes() == b"\x7fELF built bytes"
    assert (again.task_folder / "task.py").read_bytes() == (softmax.folder / "task.py").read_bytes()


def test_parallel_campaigns_get_their_own_folders_and_seeds(tmp_path: Path) -> None:
    request = RunRequest(task="cpu_softmax", agent="scripted", workspace=tmp_path / "runs", source="bank",
                         resume=False, live=True, seed=5)
    requests = campaign_requests(request, 3)
    assert [r.workspace for r in requests] == [tmp_path / "runs" / f"campaign-{i}" for i in (1, 2, 3)]
    assert [r.seed for r in requests] == [5, 6, 7] and not any(r.live for r in requests)


def test_a_folder_of_campaigns_expands_to_its_workspaces(softmax: Task, tmp_path: Path) -> None:
    for name in ("campaign-10", "campaign-2", "campaign-1"):
        create_workspace(tmp_path / name, "cpu_softmax", softmax.initial_kernel)
    (tmp_path / "campaign-1.log").write_text("log")
    (tmp_path / "notes").mkdir()
    assert [p.name for p in campaign_folders(tmp_path)] == ["campaign-1", "campaign-2", "campaign-10"]
    assert campaign_folders(tmp_path / "campaign-2") == [tmp_path / "campaign-2"]


def test_importing_quaere_does_not_import_ray() -> None:
    code = ("import sys, quaere, quaere.evaluate, quaere.cli, quaere.evaluate.pool, quaere.campaigns; "
            "sys.exit('ray' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


class _Session:
    """Stands in for a JudgeSession: only the death count matters here."""

    def __init__(self, deaths: int) -> None:
        self.judge_deaths = deaths


def test_an_actor_waits_before_reporting_a_unit_its_judge_died_in(tmp_path: Path) -> None:
    # Ray kills an actor's children first: a judge death may be the actor's own end, which must reach the
    # caller as a lost actor (scenarios reassigned), not as an out-of-memory verdict sent in the meantime.
    actor = JudgeActor("a", "cpu", cache_dir=str(tmp_path), placement=Placement(worker="a", node="n", device="cpu"))
    slept: list[float] = []
    actor.sleep = slept.append
    actor._grace_after_death(_Session(deaths=3), deaths_before=3)
    assert slept == []  # no death during the unit: the answer goes at once
    actor._grace_after_death(_Session(deaths=4), deaths_before=3)
    assert slept == [JUDGE_DEATH_GRACE_S] and JUDGE_DEATH_GRACE_S >= 1.0
