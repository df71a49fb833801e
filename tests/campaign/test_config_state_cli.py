"""Settings, the campaign state file, the live view's figures, and ``quaere run`` as a command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from quaere.agents.base import CampaignEnd
from quaere.agents.config import CampaignConfig, config_from_env, config_from_saved
from quaere.agents.display import CampaignView, RichDisplay, best_by_group
from quaere.agents.state import CampaignState, StateError, load_state, save_state
from quaere.trace import EvaluationDone

from .story import TASK

KEY = "sk-config-test-0123456789abcdef"


def test_environment_then_flags_and_no_key_in_the_saved_config(tmp_path: Path) -> None:
    env = {
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": "http://gpu-box:8000/v1",
        "HF_TOKEN": "hf_abcdefgh123",
        "PATH": "/usr/bin",
    }
    config = config_from_env(
        env, "cpu_softmax", tmp_path, agent="openai", sessions=4, max_cost_usd=None, model="qwen-coder"
    )
    assert config.openai.base_url == "http://gpu-box:8000/v1" and config.openai.model == "qwen-coder"
    assert config.budgets.sessions == 4 and config.budgets.cost_usd is None
    assert set(config.secret_values()) == {KEY, "hf_abcdefgh123"}  # token-like names only, not PATH
    saved = config.persistable()
    assert KEY not in json.dumps(saved) and "hf_abcdefgh123" not in json.dumps(saved)
    again = config_from_saved(saved, {"OPENAI_API_KEY": "sk-other-key-000000"}, sessions=9)
    assert again.budgets.sessions == 9 and again.openai.model == "qwen-coder"
    assert again.openai.api_key.get_secret_value() == "sk-other-key-000000"


def test_state_is_written_whole_and_a_damaged_one_is_named(tmp_path: Path) -> None:
    path = tmp_path / ".quaere" / "campaign.json"
    state = CampaignState(config=CampaignConfig(task="t", workspace=tmp_path).persistable(), tool_calls=7)
    save_state(path, state)
    assert load_state(path).tool_calls == 7
    assert [p.name for p in path.parent.iterdir()] == ["campaign.json"]  # no temporary file left behind
    path.write_text('{"config": {}, "tool_calls": "many"}')
    with pytest.raises(StateError, match=r"campaign.json: field 'tool_calls'"):
        load_state(path)
    with pytest.raises(StateError, match="start one without --resume"):
        load_state(tmp_path / "missing.json")


def test_why_a_campaign_finished_is_a_named_end_and_older_files_still_load(tmp_path: Path) -> None:
    path = tmp_path / "campaign.json"
    path.write_text('{"config": {}, "status": "finished", "finished_reason": "tool_calls"}')
    assert load_state(path).finished_reason is CampaignEnd.TOOL_CALLS
    path.write_text('{"config": {}, "status": "running", "finished_reason": ""}')  # as written before 2026-12-04
    assert load_state(path).finished_reason is None
    path.write_text('{"config": {}, "status": "finished", "finished_reason": "bored"}')
    with pytest.raises(StateError, match=r"campaign.json: field 'finished_reason'"):
        load_state(path)


def test_best_ratio_per_group_counts_only_correct_evaluations() -> None:
    events = [
        EvaluationDone(candidate_hash="a", correct=True, ratios={"d64-x": 1.2, "d64-y": 1.2, "d128-x": 0.9}),
        EvaluationDone(candidate_hash="b", correct=False, ratios={"d64-x": 9.0}),
        EvaluationDone(candidate_hash="c", correct=True, ratios={"d64-x": 1.1, "d128-x": 1.5}),
    ]
    assert best_by_group(events) == pytest.approx({"d128": 1.5, "d64": 1.2})
    display = RichDisplay()
    display.update(
        CampaignView(
            task="t",
            agent="openai",
            session=2,
            sessions_limit=16,
            tool_calls=40,
            best_by_group={"d64": 1.2},
            last_question="Where does the time go?",
        )
    )
    display.close()


def _quaere(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "quaere", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**(env or os.environ), "COLUMNS": "200"},  # wide help: no option name wrapped by rich
    )


def test_run_help_explains_budgets_and_bad_input_gets_a_clear_error(tmp_path: Path) -> None:
    help_text = _quaere("run", "--help", cwd=tmp_path).stdout
    for words in ("--max-tool-calls", "--max-wall-min", "--max-cost-usd", "--sessions", "Budgets", "--resume"):
        assert words in help_text
    missing = _quaere("run", "--agent", "openai", "--no-live", cwd=tmp_path)
    assert missing.returncode == 2 and "--task is required" in missing.stderr and "Traceback" not in missing.stderr
    resume = _quaere("run", "--resume", "--workspace", str(tmp_path / "nowhere"), "--no-live", cwd=tmp_path)
    assert resume.returncode == 2 and "campaign.json" in resume.stderr and "Traceback" not in resume.stderr
    script = _quaere(
        "run",
        "--task",
        str(TASK),
        "--agent",
        "scripted",
        "--no-live",
        "--workspace",
        str(tmp_path / "ws"),
        cwd=tmp_path,
    )
    assert script.returncode == 2 and "--script" in script.stderr


def test_scripted_campaign_from_the_command_line_ends_on_its_session_budget(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"bash": "echo $QUAERE_TEST_TOKEN; quaere eval"}, {"stop": "I think this is done."}]))
    # No quaere on the PATH it is started with (as `.venv/bin/quaere run` without activating): the agent's
    # shell must still find this installation's.
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "quaere").exists())
    env = dict(os.environ, QUAERE_TEST_TOKEN="tok-should-never-appear-123", PATH=path)
    run = _quaere(
        "run",
        "--task",
        str(TASK),
        "--agent",
        "scripted",
        "--script",
        str(script),
        "--sessions",
        "1",
        "--workspace",
        str(tmp_path / "ws"),
        "--no-live",
        cwd=tmp_path,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    assert "campaign ended: sessions after 1 sessions, 1 tool calls" in run.stdout
    trace = (tmp_path / "ws" / ".quaere" / "trace.jsonl").read_text()
    assert '"budget":"sessions"' in trace and '"decision":"block"' in trace
    assert '"type":"evaluation"' in trace and "command not found" not in trace  # the agent's quaere eval ran
    assert "tok-should-never-appear-123" not in trace  # a token-like variable's value, echoed by the agent
