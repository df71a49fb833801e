"""Settings of a campaign: the one place that reads the environment for ``quaere run``.

Command-line flags override what the environment gives; the result is a frozen :class:`CampaignConfig`
that is written into ``.quaere/campaign.json`` so that ``--resume`` carries on with the same settings.
API keys are kept as :class:`pydantic.SecretStr`: they are never written to the state file or the trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from quaere.methods.settings import TooledSettings
from quaere.questions.moments import MomentsConfig
from quaere.records import MethodKind

AgentKind = Literal["claude", "openai", "mini", "scripted"]
SourceKind = Literal["bank", "human"]

# Environment values whose names look like credentials are handed to the trace writer as secrets.
_SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Budgets(_Frozen):
    """Limits that end a campaign cleanly (a ``budget`` event in the trace, state kept for inspection)."""

    sessions: int = Field(default=16, ge=1)
    """Most sessions; each starts with a fresh conversation and an opening message (the study used 16)."""
    tool_calls: int | None = Field(default=None, ge=1)
    """Most tool calls over the whole campaign (None: no limit). The session in progress is ended."""
    wall_min: float | None = Field(default=None, gt=0)
    """Most minutes of wall time over the whole campaign, summed across resumes (None: no limit)."""
    cost_usd: float | None = Field(default=None, gt=0)
    """Most dollars, where the backend reports cost (the Claude SDK does; an OpenAI endpoint does not)."""
    max_blocks: int = Field(default=50, ge=1)
    """Stop attempts the Stop hook may block over the whole campaign; then a stop goes through and ends it."""


class ClaudeSettings(_Frozen):
    """The ``claude`` backend: Claude Code through the Claude Agent SDK."""

    model: str | None = None
    """Model name passed to Claude Code (None: its default)."""
    permission_mode: Literal["default", "acceptEdits", "bypassPermissions", "dontAsk"] = "bypassPermissions"
    """Claude Code permission mode; the agent works alone, so nothing may wait on a prompt."""
    allowed_tools: tuple[str, ...] = ("Bash", "Read", "Edit", "Write", "Glob", "Grep")
    """Tools allowed without asking."""
    base_url: str | None = None
    """``ANTHROPIC_BASE_URL`` for the CLI (a proxy, a gateway, or a scripted server in tests)."""
    api_key: SecretStr | None = None
    """``ANTHROPIC_API_KEY``; None lets Claude Code use its own login."""
    cli_path: str | None = None
    """A Claude Code executable to use instead of the one bundled with the SDK."""
    hook_timeout_s: float = Field(default=900.0, gt=0)
    """How long Claude Code waits for one in-process hook (a Stop hook may wait on a person)."""


class OpenAISettings(_Frozen):
    """The ``openai`` backend: any OpenAI-compatible chat endpoint (vLLM, ollama, hosted)."""

    base_url: str = "https://api.openai.com/v1"
    """Endpoint root, e.g. ``http://localhost:8000/v1`` for vLLM."""
    model: str = "gpt-5"
    """Model name as the endpoint knows it."""
    api_key: SecretStr = SecretStr("none")
    """``OPENAI_API_KEY``; local servers usually accept any value."""
    command_timeout_s: float = Field(default=900.0, gt=0)
    """One bash command is killed after this many seconds (an evaluation can take minutes)."""
    output_chars: int = Field(default=12000, ge=200)
    """A command's output is cut to this many characters (head and tail kept) before the model sees it."""
    max_steps: int = Field(default=400, ge=1)
    """Model calls in one session before it is ended, whatever the budgets say (a runaway guard)."""
    stream: bool = False
    """Ask the endpoint for a streamed answer (some servers only do one or the other well)."""
    temperature: float | None = None
    """Sampling temperature (None: the endpoint's default)."""


class MiniSettings(_Frozen):
    """The ``mini`` backend: mini-swe-agent (``pip install mini-swe-agent``) through litellm."""

    model: str = "openai/gpt-5"
    """litellm model name, provider first (``openai/NAME`` for any OpenAI-compatible endpoint)."""
    base_url: str | None = None
    """API root passed to litellm as ``api_base`` (None: the provider's own)."""
    api_key: SecretStr | None = None
    """Key passed to litellm (None: litellm reads the provider's variable, e.g. ``OPENAI_API_KEY``)."""
    command_timeout_s: float = Field(default=900.0, gt=0)
    """One bash command is killed after this many seconds (an evaluation can take minutes)."""
    max_steps: int = Field(default=400, ge=1)
    """Model calls in one session before mini-swe-agent ends it (a runaway guard)."""


class CampaignConfig(_Frozen):
    """Everything ``quaere run`` needs; saved with the campaign state so a resume runs the same campaign."""

    task: str
    """Shipped task name or task folder."""
    workspace: Path
    """Folder of the campaign (created from the task when new)."""
    agent: AgentKind = "claude"
    """Backend: claude (Agent SDK), openai (bash-tool loop), scripted (replays a script file)."""
    source: SourceKind = "bank"
    """Where questions come from: the bank's policy, or a person at the terminal."""
    method: MethodKind = MethodKind.QUESTIONS
    """What the agent is given besides the evaluator and the goal: questions, tooled, goal-only (docs/methods.md)."""
    tooled: TooledSettings = TooledSettings()
    """Settings of the tooled arm (documentation folders, the supervisor's thresholds)."""
    seed: int = 0
    """Seed of the bank's selection policy (same seed, same questions)."""
    budgets: Budgets = Budgets()
    """Limits that end the campaign."""
    claude: ClaudeSettings = ClaudeSettings()
    """Settings of the claude backend."""
    openai: OpenAISettings = OpenAISettings()
    """Settings of the openai backend."""
    mini: MiniSettings = MiniSettings()
    """Settings of the mini backend."""
    moments: MomentsConfig = MomentsConfig()
    """Settings of the five moment detectors (plateau length, gain threshold ...)."""
    script: Path | None = None
    """For the scripted agent: a JSON file of actions (see quaere.agents.scripted)."""
    secrets: tuple[SecretStr, ...] = ()
    """Values that must never appear in the trace (API keys, token-like environment values)."""

    def secret_values(self) -> tuple[str, ...]:
        keys = [self.openai.api_key, *self.secrets]
        keys += [k for k in (self.claude.api_key, self.mini.api_key) if k is not None]
        return tuple(v for v in (k.get_secret_value() for k in keys) if len(v) >= 6)

    def persistable(self) -> dict:
        """The config as JSON data without secret values (they are read from the environment on resume)."""
        data = self.model_dump(mode="json", exclude={"secrets"})
        data["claude"].pop("api_key", None)
        data["openai"].pop("api_key", None)
        data["mini"].pop("api_key", None)
        return data


def token_like_values(env: Mapping[str, str]) -> tuple[SecretStr, ...]:
    """Values of environment variables whose names look like credentials (``*_API_KEY``, ``*TOKEN*``...)."""
    return tuple(
        SecretStr(value)
        for name, value in sorted(env.items())
        if any(part in name.upper() for part in _SECRET_NAME_PARTS) and len(value) >= 6
    )


_BUDGET_FLAGS = {
    "sessions": "sessions",
    "max_tool_calls": "tool_calls",
    "max_wall_min": "wall_min",
    "max_cost_usd": "cost_usd",
    "max_blocks": "max_blocks",
}


def apply_flags(config: CampaignConfig, **flags: object) -> CampaignConfig:
    """``config`` with the command-line ``flags`` that were given (not None) applied, validated again.

    Flags: top-level fields (agent, source, method, seed, script), ``docs`` (the tooled arm's folders) and the
    shortcuts ``sessions``, ``max_tool_calls``, ``max_wall_min``, ``max_cost_usd``, ``max_blocks``, ``model``,
    ``base_url``.
    """
    given = {k: v for k, v in flags.items() if v is not None}
    data = config.model_dump()
    data["budgets"].update({_BUDGET_FLAGS[k]: given.pop(k) for k in list(given) if k in _BUDGET_FLAGS})
    if "model" in given:
        model = given.pop("model")
        data["claude"]["model"] = data["openai"]["model"] = data["mini"]["model"] = model
    if "base_url" in given:
        url = given.pop("base_url")
        data["claude"]["base_url"] = data["openai"]["base_url"] = data["mini"]["base_url"] = url
    if "docs" in given:
        data["tooled"]["docs"] = tuple(Path(d).absolute() for d in given.pop("docs"))
    data.update(given)
    return CampaignConfig.model_validate(data)


def config_from_env(env: Mapping[str, str], task: str, workspace: Path, **flags: object) -> CampaignConfig:
    """A new campaign's config: the environment first, then the command-line ``flags`` (see apply_flags).

    Environment: ``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``, ``ANTHROPIC_MODEL`` (claude);
    ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``OPENAI_MODEL`` (openai); every credential-looking variable
    is kept as a secret for the trace writer.
    """
    defaults = OpenAISettings()
    config = CampaignConfig(
        task=task,
        workspace=workspace,
        claude=ClaudeSettings(
            model=env.get("ANTHROPIC_MODEL") or None,
            base_url=env.get("ANTHROPIC_BASE_URL") or None,
            api_key=SecretStr(env["ANTHROPIC_API_KEY"]) if env.get("ANTHROPIC_API_KEY") else None,
        ),
        openai=OpenAISettings(
            base_url=env.get("OPENAI_BASE_URL") or defaults.base_url,
            model=env.get("OPENAI_MODEL") or defaults.model,
            api_key=SecretStr(env.get("OPENAI_API_KEY") or "none"),
        ),
        secrets=token_like_values(env),
    )
    return apply_flags(config, **flags)


def config_from_saved(data: dict, env: Mapping[str, str], **flags: object) -> CampaignConfig:
    """The config saved in a campaign state, keys read again from the environment, then ``flags``."""
    data = {**data, "claude": dict(data.get("claude", {})), "openai": dict(data.get("openai", {}))}
    data["mini"] = dict(data.get("mini", {}))
    if env.get("ANTHROPIC_API_KEY"):
        data["claude"]["api_key"] = env["ANTHROPIC_API_KEY"]
    data["openai"]["api_key"] = env.get("OPENAI_API_KEY") or "none"
    data["secrets"] = [s.get_secret_value() for s in token_like_values(env)]
    return apply_flags(CampaignConfig.model_validate(data), **flags)


def with_quaere_first(path: str, scripts_dir: Path) -> str:
    """``path`` (a PATH value) with ``scripts_dir`` first when it holds a ``quaere`` command (pure).

    The agent calls ``quaere eval`` in its own shell, which searches PATH: started as ``.venv/bin/quaere
    run`` without activating the virtual environment, the agent would find no ``quaere`` at all, or
    another installation's. ``scripts_dir`` is the running interpreter's folder (``.venv/bin``), where
    pip put this installation's command.
    """
    parts = [p for p in path.split(":") if p]
    if not (scripts_dir / "quaere").is_file() or parts[:1] == [str(scripts_dir)]:
        return path
    return ":".join([str(scripts_dir), *(p for p in parts if p != str(scripts_dir))])
