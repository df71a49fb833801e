"""A scripted stand-in for an OpenAI-compatible endpoint, on 127.0.0.1.

It plays a script of assistant replies (text, ``bash``-style tool calls) to any client whose base URL
points at it, as one JSON ``chat.completion`` or, when the request asks ``stream: true``, as
``chat.completion.chunk`` Server-Sent Events ending in ``data: [DONE]`` — the two shapes vLLM, ollama and
hosted endpoints serve. ``POST /v1/responses`` plays the same script in the Responses API's shape
(:mod:`quaere.agents.fake_responses`), the only one Codex speaks. Every request is recorded so a test can
check what the client sent next (a Stop hook's reason, a question after a tool result). A reply may be a
function of the request.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from quaere.agents.fake_responses import response_payload, sse_lines
from quaere.agents.local_server import LocalServer


@dataclass(frozen=True)
class Reply:
    """One assistant message: optional text and tool calls ``(name, arguments)``."""

    content: str | None = None
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()

    @classmethod
    def text(cls, content: str) -> Reply:
        return cls(content=content)

    @classmethod
    def bash(cls, command: str, content: str | None = None) -> Reply:
        return cls(content=content, tool_calls=(("bash", {"command": command}),))

    @classmethod
    def call(cls, name: str, arguments: dict[str, Any], content: str | None = None) -> Reply:
        """A call of any function tool (Codex's shell is ``exec_command`` with ``{"cmd": ...}``)."""
        return cls(content=content, tool_calls=((name, arguments),))


ReplySource = Reply | Callable[[dict[str, Any]], Reply]


@dataclass
class _State:
    script: list[ReplySource]
    fallback: ReplySource
    requests: list[dict[str, Any]] = field(default_factory=list)
    position: int = 0
    ids: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_reply(self, body: dict[str, Any]) -> tuple[Reply, int]:
        with self.lock:
            source = self.script[self.position] if self.position < len(self.script) else self.fallback
            self.position += 1
            self.ids += 1
            number = self.ids
        return (source(body) if callable(source) else source), number


def _completion(reply: Reply, number: int, model: str) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_fake_{number}_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for i, (name, arguments) in enumerate(reply.tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """The same answer cut into stream chunks: role, text, each tool call (name then arguments), finish."""
    choice = completion["choices"][0]
    message = choice["message"]
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    text = message.get("content") or ""
    deltas += [{"content": text[i : i + 16]} for i in range(0, len(text), 16)]
    for index, call in enumerate(message.get("tool_calls", [])):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        arguments = call["function"]["arguments"]
        deltas.append({"tool_calls": [head]})
        deltas += [
            {"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + 24]}}]}
            for i in range(0, len(arguments), 24)
        ]
    base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    chunks = [base | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    return chunks


def _sse_chunks(completion: dict[str, Any]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in _chunks(completion)) + b"data: [DONE]\n\n"


class _Handler(BaseHTTPRequestHandler):
    state: _State
    model = "fake-model"

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read ``requests``."""

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(
                200, {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "fake"}]}
            )
        else:
            self._send_json(404, {"error": {"message": f"no route GET {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        route = self.path.split("?")[0].rstrip("/")
        if not route.endswith(("/chat/completions", "/responses")) or not isinstance(body, dict):
            self._send_json(404, {"error": {"message": f"no route POST {self.path}", "type": "not_found"}})
            return
        with self.state.lock:
            self.state.requests.append(body)
        reply, number = self.state.next_reply(body)
        model = str(body.get("model", self.model))
        if route.endswith("/responses"):
            response = response_payload(reply, number, model, body)
            self._respond(body, response, lambda: sse_lines(response))
        else:
            completion = _completion(reply, number, model)
            self._respond(body, completion, lambda: _sse_chunks(completion))

    def _respond(self, body: dict[str, Any], payload: dict[str, Any], stream: Callable[[], bytes]) -> None:
        """One JSON answer, or its Server-Sent Events when the request asked ``stream: true``."""
        if not body.get("stream"):
            self._send_json(200, payload)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(stream())
        self.wfile.flush()


class ScriptedOpenAIServer(LocalServer):
    """Serves ``script`` on 127.0.0.1; ``base_url`` ends in ``/v1`` as the ``openai`` client expects.

    ``requests`` holds every chat-completions and responses body received, in order; when the script runs out,
    ``fallback`` is played (by default a plain answer without a tool call: a stop attempt).
    """

    def __init__(self, script: Sequence[ReplySource], *, fallback: ReplySource | None = None) -> None:
        self._state = _State(script=list(script), fallback=fallback or Reply.text("(script exhausted)"))
        super().__init__(type("_BoundHandler", (_Handler,), {"state": self._state}), "fake-openai")

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._state.lock:
            return list(self._state.requests)

    @property
    def replies_played(self) -> int:
        with self._state.lock:
            return self._state.position


def last_user_text(body: dict[str, Any]) -> str:
    """Text of the last user or tool message of a request (where hook feedback and questions arrive)."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") in ("user", "tool"):
            content = message.get("content")
            if isinstance(content, list):  # content parts, as some clients (litellm) send them
                return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return content if isinstance(content, str) else json.dumps(content)
    return ""
