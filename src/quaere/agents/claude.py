"""The ``claude`` backend: Claude Code driven through the official Claude Agent SDK.

The SDK starts the Claude Code CLI (the one it bundles, or ``cli_path``) in the workspace; quaere's hooks
run in this process through the SDK's control protocol: ``UserPromptSubmit`` (the opening), ``PostToolUse``
(count the call, run the moment detectors, check budgets: a spent budget answers ``continue: false``),
and ``Stop`` (the goal: a block sends the failing scenarios and a question back to the model).
Filesystem settings are not loaded (``setting_sources=[]``): hooks a user installed with
``quaere hooks install`` would otherwise fire a second time.

Claude Code ends a turn by itself after ``CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`` consecutive Stop blocks (8
when unset, read from the CLI's environment): the backend sets it to the campaign's block budget so that
quaere's own budget decides when an unmet goal may stop. A CLI that fails (refused as root, missing, bad
key) ends the session with the CLI's own reason as the outcome's first line.

Messages stream into the trace: assistant text as ``message``, tool uses as ``tool_call``, their results as
``tool_result``. A hook may run before the stream reader has caught up with the message that precedes it,
so hooks first wait (briefly) for the reader to record that message: the trace keeps the model's order.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from quaere.agents.base import EndReason, HookSet, SessionLimits, SessionOutcome, StopAnswer
from quaere.agents.config import ClaudeSettings
from quaere.hooks.claude_code import BLOCK_CAP_ENV
from quaere.hooks.dialect import WireEvent, tool_failed
from quaere.trace import AgentMessage, ToolCall, ToolResult, cut, redact

# Claude Code's own system prompt, with the campaign's terms added (the opening message restates the task).
SYSTEM_APPEND = (
    "You are working alone, without a person to answer you, on making a GPU kernel faster in this folder. "
    "`quaere eval` builds, checks and times the candidate: it is the only judge of correctness and speed. "
    "When you believe the goal is met, stop; quaere checks the goal and tells you what is still missing."
)
CATCH_UP_S = 3.0  # how long a hook waits for the stream reader to record the message it follows
# What to do about a failure the CLI reports in one known line (the CLI's words, then ours).
_REMEDIES = (
    (
        "cannot be used with root",
        "Claude Code refuses to skip permission prompts as root: run quaere as a non-root user, or set "
        "IS_SANDBOX=1 if this machine is itself a disposable sandbox (container, VM)",
    ),
)


class _SessionTrace:
    """What one session has recorded, so the stream reader and the hooks never record a thing twice."""

    def __init__(self, hooks: HookSet) -> None:
        self.hooks = hooks
        self.calls: set[str] = set()
        self.results: set[str] = set()
        self.texts: list[str] = []
        self.tool_calls = 0
        self.last_stop: StopAnswer | None = None
        self.halt_reason = ""
        self.api_error = ""  # what the CLI said when an API call failed ("" while none has)

    def call(self, call_id: str, tool: str, tool_input: Any) -> None:
        if call_id and call_id not in self.calls:
            self.calls.add(call_id)
            self.hooks.record(ToolCall(call_id=call_id, tool=tool, input=_text(tool_input)))

    def result(self, call_id: str, output: Any, is_error: bool) -> None:
        if call_id not in self.results:
            self.results.add(call_id)
            kept, digest = cut(_text(output))
            self.hooks.record(ToolResult(call_id=call_id, output=kept, output_sha256=digest, is_error=is_error))

    def text(self, text: str) -> None:
        self.texts.append(text)
        self.hooks.record(AgentMessage(role="assistant", text=text))


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "stdout" in value:  # the Bash tool's response
        parts = [str(value.get("stdout") or ""), str(value.get("stderr") or "")]
        return "\n".join(p for p in parts if p)
    if isinstance(value, list):  # content blocks of a tool result
        parts = [b.get("text", "") if isinstance(b, dict) else str(b) for b in value]
        return "\n".join(p for p in parts if p)
    return json.dumps(value, default=str)


async def _catch_up(ready: Callable[[], bool]) -> None:
    """Yield to the stream reader until ``ready()`` or CATCH_UP_S passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CATCH_UP_S
    while not ready() and loop.time() < deadline:
        await asyncio.sleep(0.01)


def _hook_map(state: _SessionTrace, settings: ClaudeSettings) -> dict[str, list[Any]]:
    from claude_agent_sdk import HookMatcher

    hooks = state.hooks

    async def on_prompt(payload: dict[str, Any], _tool_use_id: str | None, _context: Any) -> dict[str, Any]:
        extra = hooks.on_prompt(str(payload.get("prompt", "")))
        if not extra:
            return {}
        return {"hookSpecificOutput": {"hookEventName": WireEvent.USER_PROMPT_SUBMIT.value, "additionalContext": extra}}

    async def on_post_tool(payload: dict[str, Any], tool_use_id: str | None, _context: Any) -> dict[str, Any]:
        call_id = str(payload.get("tool_use_id") or tool_use_id or "")
        await _catch_up(lambda: call_id in state.calls)
        state.call(call_id, str(payload.get("tool_name", "")), payload.get("tool_input", {}))
        failed = tool_failed(payload)
        output = payload.get("error", "") if failed else payload.get("tool_response", "")
        state.result(call_id, output, failed)
        state.tool_calls += 1
        answer = hooks.after_tool(
            str(payload.get("tool_name", "")), dict(payload.get("tool_input") or {}), _text(output)
        )
        if answer.halt:
            state.halt_reason = answer.halt_reason or "budget spent"
            return {"continue_": False, "stopReason": state.halt_reason}
        if not answer.context:
            return {}
        event = str(payload.get("hook_event_name", WireEvent.POST_TOOL_USE.value))
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": answer.context}}

    async def on_stop(payload: dict[str, Any], _tool_use_id: str | None, _context: Any) -> dict[str, Any]:
        last = str(payload.get("last_assistant_message", ""))
        await _catch_up(lambda: not last or last in state.texts)
        answer = hooks.on_stop(last)
        state.last_stop = answer
        return {} if answer.allow else {"decision": "block", "reason": answer.reason}

    def matcher(callback: Any) -> Any:
        return [HookMatcher(hooks=[callback], timeout=settings.hook_timeout_s)]

    return {
        WireEvent.USER_PROMPT_SUBMIT.value: matcher(on_prompt),
        WireEvent.POST_TOOL_USE.value: matcher(on_post_tool),
        WireEvent.POST_TOOL_USE_FAILURE.value: matcher(on_post_tool),
        WireEvent.STOP.value: matcher(on_stop),
    }


class ClaudeAgent:
    """Runs each session as one Claude Code conversation; cost comes from the SDK's result message."""

    name = "claude"

    def __init__(
        self,
        settings: ClaudeSettings,
        secrets: tuple[str, ...] = (),
        extra_env: dict[str, str] | None = None,
        user: str | None = None,
        max_blocks: int | None = None,
    ) -> None:
        """``max_blocks``: the campaign's Stop-block budget, passed to the CLI as its block cap (None: the
        CLI's own cap of 8 consecutive blocks)."""
        self.settings = settings
        self.secrets = secrets
        self.extra_env = dict(extra_env or {})  # for the CLI only, over the inherited environment
        self.user = user  # separate-user mode: the CLI runs as this account (the SDK sets its uid)
        self.max_blocks = max_blocks

    def options(
        self, workspace: Path, state: _SessionTrace, limits: SessionLimits, stderr: Callable[[str], None]
    ) -> Any:
        from claude_agent_sdk import ClaudeAgentOptions

        env = dict(self.extra_env)
        if self.max_blocks is not None:
            # The CLI allows this many blocks in a row; quaere's hook lets the next stop through itself.
            env[BLOCK_CAP_ENV] = str(self.max_blocks)
        if self.settings.base_url:
            env["ANTHROPIC_BASE_URL"] = self.settings.base_url
        if self.settings.api_key is not None:
            env["ANTHROPIC_API_KEY"] = self.settings.api_key.get_secret_value()
        return ClaudeAgentOptions(
            model=self.settings.model,
            permission_mode=self.settings.permission_mode,
            allowed_tools=list(self.settings.allowed_tools),
            cwd=str(workspace),
            system_prompt={"type": "preset", "preset": "claude_code", "append": SYSTEM_APPEND},
            env=env,
            hooks=_hook_map(state, self.settings),  # type: ignore[arg-type]
            setting_sources=[],
            cli_path=self.settings.cli_path,
            max_budget_usd=limits.cost_usd,
            stderr=stderr,
            user=self.user,
        )

    def run_session(self, workspace: Path, opening: str, hooks: HookSet, limits: SessionLimits) -> SessionOutcome:
        state = _SessionTrace(hooks)
        stderr: list[str] = []
        # The SDK logs "Fatal error in message reader" without the cause; the outcome says it instead.
        logging.getLogger("claude_agent_sdk").addHandler(logging.NullHandler())
        try:
            return asyncio.run(self._session(self.options(workspace, state, limits, stderr.append), opening, state))
        except Exception as exc:  # noqa: BLE001 - the CLI died or the API failed: a verdict for the session
            detail = redact(failure_detail(exc, stderr), self.secrets)
            started = bool(state.texts or state.tool_calls)
            return SessionOutcome(EndReason.ERROR, state.tool_calls, detail=detail, started=started)

    async def _session(self, options: Any, opening: str, state: _SessionTrace) -> SessionOutcome:
        from claude_agent_sdk import (
            AssistantMessage,
            ClaudeSDKClient,
            ResultMessage,
            TextBlock,
            ToolResultBlock,
            ToolUseBlock,
            UserMessage,
        )

        cost: float | None = None
        subtype = ""
        async with ClaudeSDKClient(options) as client:
            await client.query(opening)
            async for message in client.receive_response():
                if isinstance(message, AssistantMessage) and message.error is not None:
                    # The CLI's words about a failed API call (bad key, no credit), not the model's.
                    said = " ".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()
                    state.api_error = f"{said or 'the API call failed'} ({message.error})"
                elif isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
                    for block in message.content:
                        if isinstance(block, TextBlock) and block.text.strip():
                            state.text(block.text)
                        elif isinstance(block, ToolUseBlock):
                            state.call(block.id, block.name, block.input)
                elif isinstance(message, UserMessage) and isinstance(message.content, list):
                    for block in message.content:
                        if isinstance(block, ToolResultBlock):
                            state.result(block.tool_use_id, block.content or "", bool(block.is_error))
                elif isinstance(message, ResultMessage):
                    cost, subtype = message.total_cost_usd, message.subtype
        return self._outcome(state, cost, subtype)

    @staticmethod
    def _outcome(state: _SessionTrace, cost: float | None, subtype: str) -> SessionOutcome:
        if state.api_error:
            started = bool(state.texts or state.tool_calls)
            return SessionOutcome(EndReason.ERROR, state.tool_calls, cost, state.api_error, started=started)
        if state.halt_reason:
            return SessionOutcome(EndReason.BUDGET, state.tool_calls, cost, state.halt_reason)
        if subtype == "error_max_budget_usd":
            return SessionOutcome(EndReason.BUDGET, state.tool_calls, cost, "cost budget reached")
        if subtype.startswith("error"):
            return SessionOutcome(EndReason.ERROR, state.tool_calls, cost, f"Claude Code ended with {subtype}")
        goal_met = state.last_stop is not None and state.last_stop.goal_met
        return SessionOutcome(EndReason.GOAL_MET if goal_met else EndReason.COMPLETED, state.tool_calls, cost)


def failure_detail(exc: BaseException, stderr: list[str]) -> str:
    """Why the CLI failed, its most telling line first (for the terminal), then the exception and stderr.

    The SDK's exception only says "Command failed with exit code 1 ... Check stderr output for details";
    the cause is the CLI's last words on stderr.
    """
    said = [line.strip() for line in stderr if line.strip()]
    cause = said[-1] if said else str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for words, remedy in _REMEDIES:
        if words in cause:
            cause = f"{cause} ({remedy})"
    tail = "\n".join(said[-20:])
    return f"{cause}\n{type(exc).__name__}: {exc}\n{tail}".strip()
