"""A small bash-tool loop over any OpenAI-compatible chat endpoint (vLLM, ollama, hosted).

In the spirit of mini-swe-agent: one tool, ``bash``, run in the workspace with a time limit and its
output cut; the conversation is a plain list of messages. An answer without a tool call is the model's
attempt to stop: the campaign's Stop hook decides, and a block sends its reason back as a user message.
A question raised after a tool call (a moment) is added as a user message after the tool results.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quaere.agents.base import EndReason, HookSet, SessionLimits, SessionOutcome
from quaere.agents.bash_tool import RunAs, run_bash
from quaere.agents.config import OpenAISettings
from quaere.trace import AgentMessage, ToolCall, ToolResult, cut, redact

SYSTEM_PROMPT = """You are an expert GPU kernel engineer working alone in a Linux shell, in the folder of a \
kernel optimization task. You have one tool, `bash`, which runs a command in that folder and returns its \
output. Read and edit files with ordinary commands (cat, sed, python, heredocs). `quaere eval` builds, \
checks and times the current candidate: it is the only judge of correctness and speed. Work step by step, \
one command at a time. When you believe the work is finished, answer without calling a tool."""

BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command in the task folder; returns its output (cut when long) and exit code.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command line to run."}},
            "required": ["command"],
        },
    },
}


@dataclass(frozen=True)
class _Call:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class _Reply:
    content: str
    calls: tuple[_Call, ...]


class OpenAIAgent:
    """Drives one chat endpoint through the official ``openai`` client."""

    name = "openai"

    def __init__(self, settings: OpenAISettings, secrets: tuple[str, ...] = (), run_as: RunAs | None = None) -> None:
        self.settings = settings
        self.secrets = secrets
        self.run_as = run_as

    def run_session(self, workspace: Path, opening: str, hooks: HookSet, limits: SessionLimits) -> SessionOutcome:
        from openai import OpenAI, OpenAIError

        client = OpenAI(
            base_url=self.settings.base_url, api_key=self.settings.api_key.get_secret_value(), max_retries=3
        )
        extra = hooks.on_prompt(opening)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"{opening}\n\n{extra}" if extra else opening},
        ]
        calls = 0
        replies = 0
        try:
            for _ in range(self.settings.max_steps):
                reply = self._complete(client, messages)
                replies += 1
                messages.append(_assistant_message(reply))
                if reply.content:
                    hooks.record(AgentMessage(role="assistant", text=reply.content))
                if not reply.calls:
                    stop = hooks.on_stop(reply.content)
                    if stop.allow:
                        return SessionOutcome(EndReason.GOAL_MET if stop.goal_met else EndReason.COMPLETED, calls)
                    messages.append({"role": "user", "content": stop.reason})
                    continue
                questions: list[str] = []
                for call in reply.calls:
                    calls += 1
                    output = self._run_call(call, workspace, hooks)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
                    answer = hooks.after_tool(call.name, _arguments(call.arguments), output)
                    if answer.halt:
                        return SessionOutcome(EndReason.BUDGET, calls, detail=answer.halt_reason)
                    if answer.context:
                        questions.append(answer.context)
                if questions:
                    messages.append({"role": "user", "content": "\n\n".join(questions)})
        except OpenAIError as exc:
            where = f" at {self.settings.base_url}" if not replies else ""
            detail = redact(f"{type(exc).__name__}{where}: {exc}", self.secrets)
            return SessionOutcome(EndReason.ERROR, calls, detail=detail, started=replies > 0)
        return SessionOutcome(EndReason.BUDGET, calls, detail=f"max_steps ({self.settings.max_steps}) model calls")

    def _complete(self, client: Any, messages: list[dict[str, Any]]) -> _Reply:
        kwargs: dict[str, Any] = {"model": self.settings.model, "messages": messages, "tools": [BASH_TOOL]}
        if self.settings.temperature is not None:
            kwargs["temperature"] = self.settings.temperature
        if not self.settings.stream:
            message = client.chat.completions.create(**kwargs).choices[0].message
            calls = tuple(_Call(c.id, c.function.name, c.function.arguments or "") for c in message.tool_calls or ())
            return _Reply(message.content or "", calls)
        return _collect_stream(client.chat.completions.create(stream=True, **kwargs))

    def _run_call(self, call: _Call, workspace: Path, hooks: HookSet) -> str:
        """Record the call, run it (only ``bash`` exists), record and return what the model reads."""
        hooks.record(ToolCall(call_id=call.id, tool=call.name, input=call.arguments))
        command = _arguments(call.arguments).get("command")
        if call.name != "bash" or not isinstance(command, str):
            full = f"error: the only tool is bash with a string argument 'command'; got {call.name}({call.arguments})"
            text, is_error = full, True
        else:
            result = run_bash(command, workspace, self.settings.command_timeout_s, run_as=self.run_as)
            full, is_error = result.output, result.exit_code != 0
            text = result.for_model(self.settings.output_chars)
        kept, digest = cut(full)
        hooks.record(ToolResult(call_id=call.id, output=kept, output_sha256=digest, is_error=is_error))
        return text


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _assistant_message(reply: _Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.calls
        ]
    return message


def _collect_stream(stream: Any) -> _Reply:
    """Join streamed deltas: text pieces, and tool calls assembled by their index."""
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        if delta.content:
            text.append(delta.content)
        for piece in delta.tool_calls or ():
            slot = calls.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
            slot["id"] = piece.id or slot["id"]
            if piece.function is not None:
                slot["name"] = piece.function.name or slot["name"]
                slot["arguments"] += piece.function.arguments or ""
    ordered = tuple(_Call(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items()))
    return _Reply("".join(text), ordered)
