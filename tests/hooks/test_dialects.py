"""What differs between hook dialects: transcripts, answers, payload keys, Codex's feature switch, user scope."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from pydantic import ValidationError

from quaere.goal_records import GoalState
from quaere.hooks.answers import block_answer, broken_answer, context_answer, normalize_payload, stop_decision
from quaere.hooks.codex import with_hooks_feature
from quaere.hooks.dialect import HookDialect, Scope, WireEvent
from quaere.hooks.install import InstallError, Target, install_hooks, uninstall_hooks
from quaere.hooks.state import HookBudget, read_state
from quaere.hooks.transcript import new_assistant_texts
from quaere.records import StopStatus
from quaere.trace import StopDecision

CODEX_ROLLOUT = [
    {"type": "session_meta", "payload": {"id": "s"}},
    {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "Make it fast."}]}},
    {"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [
        {"type": "output_text", "text": "The mismatch is rounding noise."}]}},
    {"type": "event_msg", "payload": {"type": "agent_message", "message": "The mismatch is rounding noise."}},
    {"type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "arguments": "{}"}},
]  # fmt: skip
CLAUDE_LINE = {"type": "assistant", "message": {"content": [{"type": "text", "text": "Claude's words."}]}}


def test_transcripts_of_either_dialect_give_the_model_words_once(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [*CODEX_ROLLOUT, CLAUDE_LINE]) + '{"type": "assi')
    texts, seen = new_assistant_texts(path, 0)
    assert texts == ["The mismatch is rounding noise.", "Claude's words."]  # not the event_msg copy
    assert seen == len(CODEX_ROLLOUT) + 1  # the torn last line is left for the next call


def test_answers_follow_the_dialect():
    assert block_answer(HookDialect.CODEX, "no").output == {"decision": "block", "reason": "no"}
    openhands = block_answer(HookDialect.OPENHANDS, "no")
    assert (openhands.output["decision"], openhands.exit_code, openhands.stderr) == ("deny", 2, "no")
    assert "additionalContext" not in context_answer(HookDialect.CODEX, WireEvent.POST_TOOL_USE, "Q?").output
    assert context_answer(HookDialect.OPENHANDS, WireEvent.POST_TOOL_USE, "Q?").output["additionalContext"] == "Q?"


@pytest.mark.parametrize("dialect", list(HookDialect))
def test_every_dialect_answer_carries_its_text_and_status_outside_the_wire_json(dialect, tmp_path):
    """In-process callers read ``text`` and ``goal_status``; what each dialect prints differs, they do not."""
    blocked = block_answer(dialect, "why not yet", goal_status=StopStatus.UNMET)
    assert (blocked.decision, blocked.text, blocked.goal_status) == ("block", "why not yet", "unmet")
    added = context_answer(dialect, WireEvent.POST_TOOL_USE, "Question: what bounds it?")
    assert (added.decision, added.text, added.goal_status) == ("none", "Question: what bounds it?", None)
    broken = broken_answer(WireEvent.STOP, "no workspace", dialect, tmp_path / "none", uuid.uuid4().hex)
    assert broken.decision == "block" and broken.goal_status is StopStatus.ERROR and "no workspace" in broken.text


def test_a_stop_record_needs_a_stop_answer_and_a_known_status():
    """An answer without a stop status (a tool's context) is not recorded as a stop, and a trace line with a
    status no stop can have is refused, naming the field."""
    with pytest.raises(ValueError, match="not a stop answer"):
        stop_decision(context_answer(HookDialect.CLAUDE_CODE, WireEvent.POST_TOOL_USE, "Q?"))
    with pytest.raises(ValueError, match="not a stop answer"):
        stop_decision(block_answer(HookDialect.CLAUDE_CODE, "no"))
    stale = block_answer(HookDialect.CLAUDE_CODE, "no", goal_status=StopStatus.STALE)
    assert stop_decision(stale).goal_status is StopStatus.STALE
    with pytest.raises(ValidationError, match="goal_status"):
        StopDecision(decision="allow", reason="", goal_status="done")
    # The Stop hook records the goal's state as a stop status (handlers.handle_stop): each must have one.
    assert {state.value for state in GoalState} <= {status.value for status in StopStatus}


def test_openhands_payload_keys_are_mapped_and_tool_response_kept():
    payload = {"event_type": "PostToolUse", "working_dir": "/w", "tool_response": {"content": "ok"}}
    assert normalize_payload(payload) == payload | {"hook_event_name": "PostToolUse", "cwd": "/w"}
    stop = normalize_payload({"event_type": "Stop", "message": "done"})
    assert stop["last_assistant_message"] == "done"


@pytest.mark.parametrize(
    "before,after",
    [
        (None, "[features]\nhooks = true\n"),
        ('model = "o3"\n', 'model = "o3"\n\n[features]\nhooks = true\n'),
        ("# mine\n[features]\nweb_search = true\n", "# mine\n[features]\nhooks = true\nweb_search = true\n"),
        ("[features]\nhooks = false\n", None),  # the user's choice stands
        ("features = { other = true }\n", None),  # an inline table is not rewritten
    ],
)
def test_codex_feature_switch_is_added_as_text(before, after):
    assert with_hooks_feature(before) == after


def test_codex_install_refuses_a_broken_config_toml_and_undoes_its_edit(tmp_path):
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("model = [\n")
    with pytest.raises(InstallError, match=r"config.toml: not valid TOML"):
        install_hooks(Target(tmp_path, HookDialect.CODEX), HookBudget(), launcher="quaere")
    config.write_text('model = "o3"\n')
    install_hooks(Target(tmp_path, HookDialect.CODEX), HookBudget(), launcher="quaere")
    assert "hooks = true" in config.read_text()
    uninstall_hooks(Target(tmp_path, HookDialect.CODEX))
    assert config.read_text() == 'model = "o3"\n' and not (tmp_path / ".codex" / "hooks.json").exists()


@pytest.mark.parametrize("dialect", list(HookDialect))
def test_user_scope_writes_in_home_limited_to_the_workspace(tmp_path, dialect):
    root, home = tmp_path / "ws", tmp_path / "home"
    (root / ".quaere").mkdir(parents=True)
    result = install_hooks(Target(root, dialect, Scope.USER, home), HookBudget(max_blocks=7), launcher="quaere")
    assert result.settings_path.is_relative_to(home) and not any(root.glob(".[!q]*"))
    data = json.loads(result.settings_path.read_text())
    stop = data["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert stop == f"quaere hook stop --agent {dialect.value} --retime --root {root.resolve()}"
    assert f"{dialect.value}:user" in read_state(root / ".quaere").installs
    uninstall_hooks(Target(root, dialect, Scope.USER, home))
    assert not result.settings_path.exists()


@pytest.mark.parametrize(
    "dialect,variable", [(HookDialect.CODEX, "CODEX_HOME"), (HookDialect.OPENHANDS, "OH_PERSISTENCE_DIR")]
)
def test_user_scope_follows_the_agents_folder_variable(tmp_path, dialect, variable):
    (tmp_path / "ws" / ".quaere").mkdir(parents=True)
    target = Target(tmp_path / "ws", dialect, Scope.USER, tmp_path / "home", {variable: str(tmp_path / "elsewhere")})
    assert target.settings == tmp_path / "elsewhere" / "hooks.json"


def test_a_user_level_hook_stays_silent_outside_its_workspace(tmp_path):
    payload = json.dumps({"hook_event_name": "Stop", "cwd": str(tmp_path / "elsewhere"), "session_id": "s"})
    (tmp_path / "elsewhere").mkdir()
    command = [sys.executable, "-m", "quaere", "hook", "stop", "--agent", "codex", "--root", str(tmp_path / "ws")]
    done = subprocess.run(command, input=payload, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_prefilled_temp_counter_never_lets_the_agent_stop(tmp_path):
    """Red team round 3: the error-block count once fell back to a per-session file in the shared temp
    folder, which any process could pre-fill (or make a directory) to spend the error budget. Without a
    hook state the stop is refused and the block is not counted; with a broken state file the same."""
    session = uuid.uuid4().hex
    prefilled = Path(tempfile.gettempdir()) / f"quaere-hook-errors-{session}.json"
    prefilled.write_text(json.dumps({"blocks": 999}))
    try:
        answer = broken_answer(WireEvent.STOP, "no workspace", HookDialect.CLAUDE_CODE, tmp_path / "none", session)
    finally:
        prefilled.unlink()
    assert answer.decision == "block" and "not counted" in answer.text
    (tmp_path / "hooks.json").mkdir()  # the state file cannot be read or replaced
    broken = broken_answer(WireEvent.STOP, "bad input", HookDialect.CLAUDE_CODE, tmp_path, session)
    assert broken.decision == "block" and f"{tmp_path}" in broken.text
