"""hooks install: merges with a user's hooks, is idempotent, and uninstall restores the file exactly."""

from __future__ import annotations

import json

import pytest

from quaere.hooks.claude_code import BLOCK_CAP_ENV
from quaere.hooks.dialect import HookDialect
from quaere.hooks.install import InstallError, Target, install_hooks, is_ours, uninstall_hooks
from quaere.hooks.state import HookBudget, read_state

USER_SETTINGS = """{
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "./my-stop-check.sh"}]}],
        "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier --write"}]}]
    },
    "env": {"FOO": "bar"}
}
"""


def _commands(data, event):
    return [h["command"] for g in data["hooks"].get(event, []) for h in g["hooks"]]


def test_install_merges_keeps_user_hooks_and_sets_block_cap(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(USER_SETTINGS)
    install_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE), HookBudget(max_blocks=12), launcher="quaere")
    data = json.loads(settings.read_text())
    assert _commands(data, "Stop") == ["./my-stop-check.sh", "quaere hook stop --agent claude-code --retime"]
    assert _commands(data, "PostToolUse") == ["prettier --write", "quaere hook post-tool --agent claude-code"]
    assert _commands(data, "UserPromptSubmit") == ["quaere hook prompt --agent claude-code"]
    assert _commands(data, "PostToolUseFailure") == ["quaere hook post-tool --agent claude-code"]
    assert data["env"] == {"FOO": "bar", BLOCK_CAP_ENV: "12"}
    assert data["permissions"] == {"allow": ["Bash(ls:*)"]}
    assert read_state(tmp_path / ".quaere").budget.max_blocks == 12


def test_install_is_idempotent(tmp_path):
    install_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE), HookBudget(), launcher="quaere")
    first = (tmp_path / ".claude/settings.json").read_text()
    result = install_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE), HookBudget(), launcher="quaere")
    assert not result.changed
    assert (tmp_path / ".claude/settings.json").read_text() == first
    assert len(_commands(json.loads(first), "Stop")) == 1


def test_reinstall_with_new_budget_replaces_ours_only(tmp_path):
    install_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE), HookBudget(max_blocks=5), launcher="quaere")
    install_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE), HookBudget(max_blocks=9), launcher="/opt/py -m quaere")
    data = json.loads((tmp_path / ".claude/settings.json").read_text())
    assert _commands(data, "Stop") == ["/opt/py -m quaere hook stop --agent claude-code --retime"]
    assert data["env"][BLOCK_CAP_ENV] == "9"


def test_uninstall_restores_original_bytes(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(USER_SETTINGS)
    install_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE), HookBudget(), launcher="quaere")
    install_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE), HookBudget(), launcher="quaere")
    uninstall_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE))
    assert settings.read_text() == USER_SETTINGS


def test_uninstall_keeps_user_changes_made_after_install(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(USER_SETTINGS)
    install_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE), HookBudget(), launcher="quaere")
    data = json.loads(settings.read_text())
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "./later.sh"}]})
    settings.write_text(json.dumps(data))
    uninstall_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE))
    after = json.loads(settings.read_text())
    assert _commands(after, "Stop") == ["./my-stop-check.sh", "./later.sh"]
    assert "UserPromptSubmit" not in after["hooks"]
    assert after["env"] == {"FOO": "bar"}


def test_uninstall_of_created_file_removes_it(tmp_path):
    install_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE), HookBudget(), launcher="quaere")
    uninstall_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE))
    assert not (tmp_path / ".claude").exists()


def test_user_block_cap_restored_on_uninstall(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"env": {BLOCK_CAP_ENV: "3"}}))
    install_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE), HookBudget(max_blocks=40), launcher="quaere")
    assert json.loads(settings.read_text())["env"][BLOCK_CAP_ENV] == "40"
    uninstall_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE))
    assert json.loads(settings.read_text()) == {"env": {BLOCK_CAP_ENV: "3"}}


@pytest.mark.parametrize(
    "agent,path", [(HookDialect.CODEX, ".codex/hooks.json"), (HookDialect.OPENHANDS, ".openhands/hooks.json")]
)
def test_other_agents_files(tmp_path, agent, path):
    target = tmp_path / path
    target.parent.mkdir()
    original = json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "lint.sh"}]}]}})
    target.write_text(original)
    result = install_hooks(Target(tmp_path, agent), HookBudget(), launcher="quaere")
    data = json.loads(target.read_text())
    assert set(data) == {"hooks"}  # Codex admits nothing else at the top level
    assert _commands(data, "Stop") == ["lint.sh", f"quaere hook stop --agent {agent.value} --retime"]
    assert set(data["hooks"]) == {"Stop", "PostToolUse", "UserPromptSubmit"}  # no Claude-only events
    if agent is HookDialect.CODEX:
        assert all("matcher" not in g for groups in data["hooks"].values() for g in groups)
        assert result.notes
    uninstall_hooks(Target(tmp_path, agent))
    assert target.read_text() == original


def test_malformed_settings_is_refused_not_clobbered(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{not json")
    with pytest.raises(InstallError, match="settings.json: not valid JSON"):
        install_hooks(Target(tmp_path, HookDialect.CLAUDE_CODE), HookBudget(), launcher="quaere")
    assert settings.read_text() == "{not json"


def test_is_ours_matches_only_quaere_hook_commands():
    assert is_ours({"command": "quaere hook stop --agent claude-code"})
    assert is_ours({"command": "'/usr/bin/python3' -m quaere hook post-tool --agent codex"})
    assert not is_ours({"command": "./quaere-notes.sh"})
    assert not is_ours({"command": "echo quaere hooks stop"})
