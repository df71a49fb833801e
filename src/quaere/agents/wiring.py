"""Builds a campaign from the command line's request: config, agent, question source, detectors, view.

Kept apart from :mod:`quaere.campaign` (which only sees Protocols) so the loop stays testable with fakes,
and from the CLI module (which only parses). Heavy parts are imported inside the functions.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from quaere.agents.base import Agent
from quaere.agents.bash_tool import RunAs
from quaere.agents.config import CampaignConfig, config_from_env, config_from_saved
from quaere.records import MethodKind
from quaere.validation import field_path


class WiringError(ValueError):
    """The request cannot make a campaign (bad task, workspace, script, settings); the message says why."""


@dataclass(frozen=True)
class RunRequest:
    """What ``quaere run`` was asked, as parsed (None: not given)."""

    task: str | None
    agent: str
    workspace: Path | None
    source: str
    resume: bool
    live: bool
    script: Path | None = None
    seed: int | None = None
    sessions: int | None = None
    max_tool_calls: int | None = None
    max_wall_min: float | None = None
    max_cost_usd: float | None = None
    max_blocks: int | None = None
    model: str | None = None
    base_url: str | None = None
    method: MethodKind | None = None
    docs: tuple[Path, ...] = ()

    def flags(self) -> dict[str, object]:
        return {
            "sessions": self.sessions,
            "max_tool_calls": self.max_tool_calls,
            "max_wall_min": self.max_wall_min,
            "max_cost_usd": self.max_cost_usd,
            "max_blocks": self.max_blocks,
            "model": self.model,
            "base_url": self.base_url,
            "seed": self.seed,
            "script": self.script,
            "method": self.method,
            "docs": self.docs or None,
        }


def make_config(request: RunRequest, env: Mapping[str, str]) -> CampaignConfig:
    """The campaign's config: saved settings on a resume, else the environment; flags win in both."""
    from quaere.agents.state import StateError, load_state

    try:
        if request.resume:
            folder = request.workspace or Path(".")
            state = load_state(folder / ".quaere" / "campaign.json")
            _same_method(folder, state.config, request.method)
            config = config_from_saved(state.config, env, **request.flags())
            return config.model_copy(update={"workspace": folder})
        if not request.task:
            raise WiringError("--task is required to start a campaign (or --resume one in --workspace)")
        folder = request.workspace or Path(f"quaere-{Path(request.task).name}")
        return config_from_env(env, request.task, folder, agent=request.agent, source=request.source, **request.flags())
    except StateError as exc:
        raise WiringError(str(exc)) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        raise WiringError(f"setting '{field_path(first['loc'])}': {first['msg']}") from None


def _same_method(folder: Path, saved: dict, asked: MethodKind | None) -> None:
    """A resumed campaign keeps its method: two methods in one trace would compare nothing."""
    ran = saved.get("method", MethodKind.QUESTIONS.value)
    if asked is not None and asked.value != ran:
        raise WiringError(f"{folder}: this campaign runs --method {ran}; it cannot be resumed as --method "
                          f"{asked.value} (start a new campaign in another folder)")


def make_agent(config: CampaignConfig, run_as: RunAs | None = None, user: str | None = None) -> Agent:
    """The backend named by ``config.agent``; its commands run as ``run_as`` (the CLI as ``user``) when given."""
    if config.agent == "claude":
        from quaere.agents.claude import ClaudeAgent

        return ClaudeAgent(config.claude, config.secret_values(), dict(run_as.env) if run_as else None, user,
                           max_blocks=config.budgets.max_blocks)
    if config.agent == "openai":
        from quaere.agents.openai_loop import OpenAIAgent

        return OpenAIAgent(config.openai, config.secret_values(), run_as)
    if config.agent == "mini":
        try:
            from quaere.agents.mini import MiniAgent
        except ImportError as exc:
            hint = "pip install mini-swe-agent (docs/agents.md)"
            raise WiringError(f"--agent mini needs mini-swe-agent in this Python ({exc}): {hint}") from None
        return MiniAgent(config.mini, config.secret_values())
    from quaere.agents.scripted import ScriptedAgent, ScriptError, load_script

    if config.script is None:
        raise WiringError("--agent scripted needs --script FILE (a JSON list of say/bash/stop actions)")
    try:
        return ScriptedAgent(load_script(config.script), run_as=run_as)
    except ScriptError as exc:
        raise WiringError(str(exc)) from None


def make_source(config: CampaignConfig, ask_person: Callable | None) -> object:
    """The bank's policy under ``config.seed``, or a person through ``ask_person`` (bank suggestions shown)."""
    from quaere.questions.bank import load_bank
    from quaere.questions.sources import BankSource, HumanSource

    bank = BankSource(load_bank(), config.seed)
    if config.source == "human":
        if ask_person is None:
            raise WiringError("--source human needs a terminal to ask at")
        return HumanSource(ask_person, bank)
    return bank


def run_from_cli(request: RunRequest, env: Mapping[str, str]):  # -> quaere.campaign.CampaignResult
    """Everything ``quaere run`` does after parsing. Raises :class:`WiringError` for bad input."""
    from quaere.agents.display import NullDisplay, RichDisplay
    from quaere.agents.human import terminal_ask
    from quaere.agents.state import StateError
    from quaere.campaign import run_campaign
    from quaere.methods.arms import make_method
    from quaere.methods.base import MethodError
    from quaere.serve.deploy import DeployError, strongest
    from quaere.task import TaskError
    from quaere.workspace import WorkspaceError

    config = make_config(request, env)
    display = RichDisplay() if request.live else NullDisplay()
    try:
        deployment = strongest(env)
    except DeployError as exc:
        raise WiringError(str(exc)) from None
    run_as = deployment.run_as()
    try:
        method = make_method(config, env)
        source = make_source(config, terminal_ask(display) if config.source == "human" else None)
        agent = make_agent(config, run_as, deployment.agent.name if deployment.agent else None)
        return run_campaign(config, agent, source, resume=request.resume, display=display, deployment=deployment,
                            announce=lambda line: print(line, file=sys.stderr, flush=True), method=method)
    except (TaskError, StateError, WorkspaceError, MethodError) as exc:
        raise WiringError(str(exc)) from None
    finally:
        deployment.close()
