"""``quaere init`` and ``quaere eval`` as a user runs them: a real subprocess in a real workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.evaluate.conftest import CANDIDATES

from quaere.evaluate.ledger import read_ledger
from quaere.store import Store
from quaere.trace import EvaluationDone, SessionStart, TraceWriter, read_trace


def quaere(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "QUAERE_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "quaere", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False, timeout=300)


def reject(constant: str) -> None:
    raise AssertionError(f"not strict JSON: {constant}")


def test_eval_json_in_a_workspace(tmp_path: Path, cache_dir: Path, two_scenarios: Path) -> None:
    made = quaere("init", "ws", "--task", "cpu_softmax", cwd=tmp_path, cache=cache_dir)
    assert made.returncode == 0, made.stderr
    workspace = tmp_path / "ws"
    done = quaere("eval", "--json", "--no-benchmark", "--seed", "4", "--scenarios", str(two_scenarios),
                  cwd=workspace, cache=cache_dir)
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout, parse_constant=reject)  # exactly one strict JSON object, nothing else
    record = entry["evaluation"]
    assert record["task"] == "cpu_softmax" and [v["verdict"] for v in record["correctness"]] == ["passed", "passed"]
    assert (entry["kind"], entry["partial"]) == ("partial", ["scenarios_file", "fixed_seed", "no_benchmark"])
    assert entry["task"]["reference"] == "cpu_softmax" and entry["trust_mode"] == "same_user"
    assert Store(Path(os.environ["QUAERE_STORE_DIR"])).read(entry["workspace_id"]).entries[0].sequence == 1
    ledger = read_ledger(workspace / ".quaere" / "ledger.jsonl")  # the untrusted convenience copy
    assert ledger.problems == () and ledger.evaluations[0].candidate_hash == record["candidate_hash"]
    assert (workspace / ".quaere" / "candidates" / f"{record['candidate_hash']}.cpp").exists()
    events = [e for e in read_trace(workspace / ".quaere" / "trace.jsonl").events if isinstance(e, EvaluationDone)]
    assert len(events) == 1 and events[0].correct


def test_eval_of_a_wrong_candidate_exits_nonzero(tmp_path: Path, cache_dir: Path, two_scenarios: Path) -> None:
    done = quaere("eval", str(CANDIDATES / "slightly_wrong.cpp"), "--task", "cpu_softmax", "--json",
                  "--no-benchmark", "--scenarios", str(two_scenarios), cwd=tmp_path, cache=cache_dir)
    assert done.returncode == 1
    assert {v["verdict"] for v in json.loads(done.stdout)["correctness"]} == {"wrong"}
    # ledger beside, outside a workspace
    assert len(read_ledger(tmp_path / ".quaere" / "ledger.jsonl").evaluations) == 1


def test_bad_scenarios_file_is_an_error_not_a_traceback(tmp_path: Path, cache_dir: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": 3}]')
    done = quaere("eval", "--task", "cpu_softmax", "--scenarios", str(bad), cwd=tmp_path, cache=cache_dir)
    assert done.returncode == 2
    assert str(bad) in done.stderr and "Traceback" not in done.stderr


def test_unknown_task_is_an_error(tmp_path: Path, cache_dir: Path) -> None:
    done = quaere("eval", "--task", "no_such_task", cwd=tmp_path, cache=cache_dir)
    assert done.returncode == 2 and "shipped tasks are" in done.stderr


def test_eval_run_by_the_agent_tags_its_trace_event_with_the_open_session(
    tmp_path: Path, cache_dir: Path, two_scenarios: Path
) -> None:
    assert quaere("init", "ws", "--task", "cpu_softmax", cwd=tmp_path, cache=cache_dir).returncode == 0
    workspace = tmp_path / "ws"
    TraceWriter(workspace / ".quaere" / "trace.jsonl").write(SessionStart(session=3, agent="scripted"))
    done = quaere("eval", "--no-benchmark", "--scenarios", str(two_scenarios), cwd=workspace, cache=cache_dir)
    assert done.returncode == 0, done.stderr
    events = [e for e in read_trace(workspace / ".quaere" / "trace.jsonl").events if isinstance(e, EvaluationDone)]
    assert [e.session for e in events] == [3]
