"""A scripted stand-in for the Anthropic Messages API, served on 127.0.0.1 for tests and demos.

It plays a script of assistant turns (text and ``tool_use`` blocks) to whatever client points its base
URL at it (the Claude Code CLI through ``ANTHROPIC_BASE_URL``, the Agent SDK, ``anthropic``), streaming
Server-Sent Events exactly as the real API does (``message_start``, ``content_block_start``,
``content_block_delta`` with ``text_delta`` / ``input_json_delta``, ``content_block_stop``,
``message_delta`` with the stop reason, ``message_stop``), or one JSON message when ``stream`` is false.

Every request is recorded, so a test can assert what the client sent next (e.g. that a Stop hook's block
reason arrived in the following request). A turn may be a function of the incoming request, to react to
what a hook injected.

Clients also make requests that are not turns of the agent loop (a title for the session, token
counting, a probe with HEAD). Only requests that ``is_agent_turn`` accepts (by default: a
``/v1/messages`` call that offers tools) consume the script; the others get a short, valid answer and are
recorded all the same.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from quaere.agents.local_server import LocalServer


@dataclass(frozen=True)
class TextBlock:
    text: str


@dataclass(frozen=True)
class ToolUseBlock:
    name: str
    input: dict[str, Any]
    id: str = ""  # empty: the server numbers it (toolu_fake_<n>)


Block = TextBlock | ToolUseBlock


@dataclass(frozen=True)
class Turn:
    """One assistant message. ``stop_reason`` defaults to ``tool_use`` when a tool is called, else ``end_turn``."""

    blocks: tuple[Block, ...]
    stop_reason: str = ""

    @classmethod
    def text(cls, text: str) -> Turn:
        return cls((TextBlock(text),))

    @classmethod
    def tool(cls, name: str, tool_input: dict[str, Any], text: str = "") -> Turn:
        blocks: tuple[Block, ...] = (TextBlock(text),) if text else ()
        return cls(blocks + (ToolUseBlock(name, tool_input),))

    @classmethod
    def bash(cls, command: str, text: str = "") -> Turn:
        """A call of Claude Code's ``Bash`` tool."""
        return cls.tool("Bash", {"command": command, "description": "run a command"}, text)

    @property
    def resolved_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUseBlock) for b in self.blocks) else "end_turn"


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request the server received, body parsed when it was JSON."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it was not JSON, or None
    agent_turn: bool = False  # True when it consumed a turn of the script

    def messages(self) -> list[dict[str, Any]]:
        if isinstance(self.body, dict) and isinstance(self.body.get("messages"), list):
            return self.body["messages"]
        return []

    def text(self) -> str:
        """Every text the request carries (system, messages, tool results), joined: for ``in`` assertions."""
        if not isinstance(self.body, dict):
            return "" if self.body is None else str(self.body)
        parts: list[str] = []
        _collect_text(self.body.get("system"), parts)
        _collect_text(self.body.get("messages"), parts)
        return "\n".join(parts)

    def last_user_text(self) -> str:
        """Text of the last user message (hook feedback and tool results arrive there)."""
        users = [m for m in self.messages() if m.get("role") == "user"]
        if not users:
            return ""
        parts: list[str] = []
        _collect_text(users[-1].get("content"), parts)
        return "\n".join(parts)


def _collect_text(value: Any, parts: list[str]) -> None:
    if isinstance(value, str):
        parts.append(value)
    elif isinstance(value, list):
        for item in value:
            _collect_text(item, parts)
    elif isinstance(value, dict):
        for key in ("text", "content"):
            if key in value:
                _collect_text(value[key], parts)


TurnSource = Turn | Callable[[RecordedRequest], Turn]


def default_is_agent_turn(request: RecordedRequest) -> bool:
    """A ``/v1/messages`` request that offers tools: the agent loop, not a side call such as a title."""
    body = request.body
    return (
        request.method == "POST"
        and request.path.split("?")[0].rstrip("/").endswith("/v1/messages")
        and isinstance(body, dict)
        and bool(body.get("tools"))
    )


@dataclass
class _State:
    script: list[TurnSource]
    fallback: TurnSource
    is_agent_turn: Callable[[RecordedRequest], bool]
    model: str
    reject: tuple[int, str, str] | None = None  # (status, error type, message) for every /v1/messages call
    requests: list[RecordedRequest] = field(default_factory=list)
    position: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: itertools.count = field(default_factory=itertools.count)

    def next_turn(self, request: RecordedRequest) -> Turn:
        with self.lock:
            source = self.script[self.position] if self.position < len(self.script) else self.fallback
            self.position += 1
        return source(request) if callable(source) else source


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _input_tokens(body: Any) -> int:
    return max(1, len(json.dumps(body)) // 4) if body is not None else 1


class _Handler(BaseHTTPRequestHandler):
    server_version = "fake-anthropic/1"
    state: _State  # set on the subclass made per server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        """Silent: tests read ``requests`` instead of a log on stderr."""

    # -- reading -------------------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _record(self, agent_turn_check: bool) -> RecordedRequest:
        raw = self._read_body() if self.command in ("POST", "PUT", "PATCH") else b""
        text = raw.decode("utf-8", errors="replace")
        try:
            body: Any = json.loads(text) if text else None
        except json.JSONDecodeError:
            body = text
        request = RecordedRequest(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        if agent_turn_check and self.state.is_agent_turn(request):
            request = RecordedRequest(request.method, request.path, request.headers, body, agent_turn=True)
        with self.state.lock:
            self.state.requests.append(request)
        return request

    # -- writing -------------------------------------------------------------------------------------
    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_fake_{next(self.state.ids)}")
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, kind: str, message: str) -> None:
        self._json(status, {"type": "error", "error": {"type": kind, "message": message}})

    def _message(self, turn: Turn, body: Any) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        for block in turn.blocks:
            if isinstance(block, TextBlock):
                content.append({"type": "text", "text": block.text})
            else:
                tool_id = block.id or f"toolu_fake_{next(self.state.ids)}"
                content.append({"type": "tool_use", "id": tool_id, "name": block.name, "input": block.input})
        model = body.get("model", self.state.model) if isinstance(body, dict) else self.state.model
        return {
            "id": f"msg_fake_{next(self.state.ids)}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": turn.resolved_stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": _input_tokens(body), "output_tokens": 8},
        }

    def _stream(self, message: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("request-id", f"req_fake_{next(self.state.ids)}")
        self.end_headers()
        start = dict(message, content=[], stop_reason=None, usage=dict(message["usage"], output_tokens=1))
        self.wfile.write(_sse("message_start", {"type": "message_start", "message": start}))
        self.wfile.write(_sse("ping", {"type": "ping"}))
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                opening, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
            else:
                opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            self.wfile.write(
                _sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
            )
            self.wfile.write(
                _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            )
            self.wfile.write(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        end = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        usage = {"output_tokens": message["usage"]["output_tokens"]}
        self.wfile.write(_sse("message_delta", {"type": "message_delta", "delta": end, "usage": usage}))
        self.wfile.write(_sse("message_stop", {"type": "message_stop"}))
        self.wfile.flush()

    # -- routes --------------------------------------------------------------------------------------
    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        request = self._record(agent_turn_check=True)
        route = self.path.split("?")[0].rstrip("/")
        if route.endswith("/v1/messages/count_tokens"):
            self._json(200, {"input_tokens": _input_tokens(request.body)})
            return
        if not route.endswith("/v1/messages"):
            self._error(404, "not_found_error", f"fake server: no route POST {route}")
            return
        if not isinstance(request.body, dict):
            self._error(400, "invalid_request_error", "fake server: the body is not a JSON object")
            return
        if self.state.reject is not None:
            self._error(*self.state.reject)
            return
        turn = self.state.next_turn(request) if request.agent_turn else Turn.text("ok")
        message = self._message(turn, request.body)
        if request.body.get("stream"):
            self._stream(message)
        else:
            self._json(200, message)

    def do_GET(self) -> None:  # noqa: N802
        self._record(agent_turn_check=False)
        route = self.path.split("?")[0].rstrip("/")
        if route.endswith("/v1/models"):
            model = {
                "type": "model",
                "id": self.state.model,
                "display_name": "Fake",
                "created_at": "2026-01-01T00:00:00Z",
            }
            self._json(200, {"data": [model], "has_more": False, "first_id": model["id"], "last_id": model["id"]})
            return
        self._json(200, {"ok": True}) if route in ("", "/") else self._error(
            404, "not_found_error", f"no route GET {route}"
        )

    def do_HEAD(self) -> None:  # noqa: N802
        self._record(agent_turn_check=False)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


class ScriptedAnthropicServer(LocalServer):
    """Serves ``script`` (turns, or functions of the request returning a turn) on 127.0.0.1.

    Use as a context manager; ``base_url`` is what ``ANTHROPIC_BASE_URL`` should be, ``requests`` every
    request received so far (in order), ``agent_requests`` those that consumed a turn. When the script runs
    out, ``fallback`` (a turn or a function of the request) is played; by default a plain end of turn.
    ``reject=(status, error type, message)`` answers every messages call with that API error instead.
    """

    def __init__(
        self,
        script: Sequence[TurnSource],
        *,
        fallback: TurnSource | None = None,
        is_agent_turn: Callable[[RecordedRequest], bool] = default_is_agent_turn,
        model: str = "claude-fake-1",
        reject: tuple[int, str, str] | None = None,
    ) -> None:
        self._state = _State(
            script=list(script),
            fallback=fallback or Turn.text("(script exhausted)"),
            is_agent_turn=is_agent_turn,
            model=model,
            reject=reject,
        )
        super().__init__(type("_BoundHandler", (_Handler,), {"state": self._state}), "fake-anthropic")

    @property
    def base_url(self) -> str:
        return self.root_url

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._state.lock:
            return list(self._state.requests)

    @property
    def agent_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.agent_turn]

    @property
    def turns_played(self) -> int:
        with self._state.lock:
            return self._state.position
