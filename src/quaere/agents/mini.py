"""The ``mini`` backend: mini-swe-agent (``pip install mini-swe-agent``; verified with 2.4.6) with quaere's
hooks in-process, so any model mini-swe-agent reaches through litellm gets the goal and the questions.

mini-swe-agent has no hooks. :class:`QuaereMiniAgent` is its ``DefaultAgent`` with three steps added,
each calling the campaign's :class:`~quaere.agents.base.HookSet`:

* the first model call carries the campaign-start question (a user message after the task);
* after each bash command, the tool call and result go to the trace and the question of a moment, if
  any, follows the command's result as a user message; the model's words go to the trace before, so the
  explained-failure detector reads them;
* mini-swe-agent ends when a command prints ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` (its environment
  raises ``Submitted``). That is the stop attempt: quaere's Stop hook decides, and while the goal is unmet
  the submission is refused and its reason (failing scenarios, a question) is the command's result.

``quaere run --agent mini`` uses :class:`MiniAgent`. A user's own mini-swe-agent script can use the class
directly, with :func:`workspace_hooks` in place of a campaign::

    agent = QuaereMiniAgent(model, LocalEnvironment(cwd=ws), hooks=workspace_hooks(ws), **agent_config)
    agent.run(task="Make the kernel meet the goal.")
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import yaml
from minisweagent.agents.default import DefaultAgent
from minisweagent.config import builtin_config_dir
from minisweagent.environments.local import LocalEnvironment
from minisweagent.exceptions import LimitsExceeded, Submitted

from quaere.agents.base import EndReason, HookSet, SessionLimits, SessionOutcome, StopAnswer
from quaere.agents.config import MiniSettings
from quaere.trace import AgentMessage, ToolCall, ToolResult, cut, redact

BUDGET_EXIT = "QuaereBudget"  # exit status of a session a campaign budget ended


class QuaereMiniAgent(DefaultAgent):
    """mini-swe-agent's default agent whose finish step is quaere's Stop hook (see the module docstring)."""

    def __init__(self, model: Any, env: Any, *, hooks: HookSet, **kwargs: Any) -> None:
        super().__init__(model, env, **kwargs)
        self.hooks = hooks
        self.opened = False
        self.tool_calls = 0
        self.last_stop: StopAnswer | None = None

    def query(self) -> dict:
        if not self.opened:
            self.opened = True
            extra = self.hooks.on_prompt(str(self.extra_template_vars.get("task", "")))
            if extra:
                self.add_messages(self.model.format_message(role="user", content=extra))
        message = super().query()
        text = message.get("content")
        if isinstance(text, str) and text.strip():
            self.hooks.record(AgentMessage(role="assistant", text=text.strip()))
        return message

    def execute_actions(self, message: dict) -> list[dict]:
        actions = message.get("extra", {}).get("actions", [])
        outputs: list[dict] = []
        questions: list[str] = []
        for action in actions:
            call_id, command = str(action.get("tool_call_id", "")), str(action.get("command", ""))
            self.hooks.record(ToolCall(call_id=call_id, tool="bash", input=command))
            try:
                output = self.env.execute(action)
            except Submitted as submitted:
                refused = self._stop(message, submitted)
                kept, digest = cut(refused["output"])
                self.hooks.record(ToolResult(call_id=call_id, output=kept, output_sha256=digest, is_error=True))
                outputs.append(refused)
                break
            text = str(output.get("output", ""))
            kept, digest = cut(text)
            failed = output.get("returncode") != 0
            self.hooks.record(ToolResult(call_id=call_id, output=kept, output_sha256=digest, is_error=failed))
            self.tool_calls += 1
            outputs.append(output)
            answer = self.hooks.after_tool("bash", {"command": command}, text)
            if answer.halt:
                exit_message = {"role": "exit", "content": answer.halt_reason, "extra": {"exit_status": BUDGET_EXIT}}
                raise LimitsExceeded(exit_message)
            if answer.context:
                questions.append(answer.context)
        results = self.model.format_observation_messages(message, outputs, self.get_template_vars())
        observed = self.add_messages(*results)
        if questions:
            observed += self.add_messages(self.model.format_message(role="user", content="\n\n".join(questions)))
        return observed

    def _stop(self, message: dict, submitted: Submitted) -> dict:
        """The stop attempt: re-raise when the Stop hook allows it, else the refusal as the command's result."""
        said = message.get("content")
        self.last_stop = self.hooks.on_stop(said if isinstance(said, str) else "")
        if self.last_stop.allow:
            raise submitted
        return {"output": self.last_stop.reason, "returncode": 1, "exception_info": "quaere: stop refused"}


def mini_config() -> dict[str, Any]:
    """mini-swe-agent's own ``mini.yaml`` (its prompts and observation template), without its confirm mode."""
    config = yaml.safe_load((builtin_config_dir / "mini.yaml").read_text())
    config["agent"].pop("mode", None)
    return config


class MiniAgent:
    """Runs each session as one mini-swe-agent run of :class:`QuaereMiniAgent` in the workspace."""

    name = "mini"

    def __init__(self, settings: MiniSettings, secrets: tuple[str, ...] = ()) -> None:
        self.settings = settings
        self.secrets = secrets

    def make_agent(self, workspace: Path, hooks: HookSet) -> QuaereMiniAgent:
        from minisweagent.models.litellm_model import LitellmModel

        config = mini_config()
        kwargs: dict[str, Any] = dict(config["model"].pop("model_kwargs", {}))
        if self.settings.base_url:
            kwargs["api_base"] = self.settings.base_url
        if self.settings.api_key is not None:
            kwargs["api_key"] = self.settings.api_key.get_secret_value()
        model = LitellmModel(
            model_name=self.settings.model, model_kwargs=kwargs, cost_tracking="ignore_errors", **config["model"]
        )
        timeout = int(self.settings.command_timeout_s)
        env = LocalEnvironment(cwd=str(workspace), timeout=timeout, **config["environment"])
        agent_config = config["agent"] | {"step_limit": self.settings.max_steps, "cost_limit": 0.0}
        return QuaereMiniAgent(model, env, hooks=hooks, **agent_config)

    def run_session(self, workspace: Path, opening: str, hooks: HookSet, limits: SessionLimits) -> SessionOutcome:
        agent = self.make_agent(workspace, hooks)
        try:
            result = agent.run(task=opening)
        except Exception as exc:  # noqa: BLE001 - the model's API failed: a verdict for the session
            detail = redact(f"{type(exc).__name__}: {exc}", self.secrets)
            return SessionOutcome(EndReason.ERROR, agent.tool_calls, detail=detail, started=agent.n_calls > 1)
        cost = agent.cost or None
        status = str(result.get("exit_status", ""))
        if status == "Submitted":
            met = agent.last_stop is not None and agent.last_stop.goal_met
            return SessionOutcome(EndReason.GOAL_MET if met else EndReason.COMPLETED, agent.tool_calls, cost)
        if status in (BUDGET_EXIT, "LimitsExceeded", "TimeExceeded"):
            return SessionOutcome(EndReason.BUDGET, agent.tool_calls, cost, str(result.get("content", status)))
        return SessionOutcome(EndReason.ERROR, agent.tool_calls, cost, f"mini-swe-agent ended with {status}")


def workspace_hooks(root: Path, store_root: Path | None = None) -> HookSet:
    """quaere's hooks for a mini-swe-agent run of your own in the workspace at ``root`` (no campaign):
    the goal on the signed store at ``store_root`` (default: :func:`quaere.store.default_store_root` of
    this process's environment) with its confirmation, the pinned block budget, questions from the bank
    and ``quaere ask``."""
    import os

    from quaere.agents.session import Counters, Limits, SessionHooks
    from quaere.hooks.dialect import HookDialect
    from quaere.hooks.state import update_state
    from quaere.hooks.wiring import build_deps
    from quaere.serve.access import confirmer_for
    from quaere.store import Store, default_store_root
    from quaere.trace import TraceWriter
    from quaere.workspace import open_workspace

    workspace = open_workspace(root)
    store = Store(store_root or default_store_root(os.environ))
    session_id = f"mini-{uuid.uuid4().hex[:12]}"
    state = update_state(workspace.state, lambda s: s.sessions.append(session_id))
    return SessionHooks(
        session=state.sessions.index(session_id) + 1,
        session_id=session_id,
        deps=build_deps(workspace, store, HookDialect.CLAUDE_CODE, confirmer=confirmer_for(store, workspace),
                        record_tool_events=False),
        writer=TraceWriter(workspace.trace),
        counters=Counters(),
        limits=Limits(tool_calls=None, wall_s=None),
        wall_s=lambda: 0.0,
    )
