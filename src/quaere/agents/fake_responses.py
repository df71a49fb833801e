"""A scripted stand-in for the OpenAI Responses API (``POST /v1/responses``), on 127.0.0.1.

Codex speaks only this API. The server plays a script of :class:`~quaere.agents.fake_openai.Reply`
(text, function calls) as the streamed Server-Sent Events the real API sends: ``response.created``,
``response.output_item.added``, ``response.output_text.delta`` for text, ``response.output_item.done``
with the finished ``message`` or ``function_call`` item, and ``response.completed`` with the usage; or
one JSON response when ``stream`` is false. Every request body is recorded, so a test can check what the
client sent next (a Stop hook's reason, a question after a tool result). A reply may be a function of the
request body.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from quaere.agents.fake_openai import Reply, ReplySource
from quaere.agents.local_server import LocalServer


@dataclass
class _State:
    script: list[ReplySource]
    fallback: ReplySource
    requests: list[dict[str, Any]] = field(default_factory=list)
    position: int = 0
    ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            self.requests.append(body)
            source = self.script[self.position] if self.position < len(self.script) else self.fallback
            self.position += 1
        return source(body) if callable(source) else source


def _items(reply: Reply, ids: Iterator[int]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.content:
        text = {"type": "output_text", "text": reply.content, "annotations": []}
        items.append({"type": "message", "id": f"msg_fake_{next(ids)}", "role": "assistant", "status": "completed",
                      "content": [text]})  # fmt: skip
    for name, arguments in reply.tool_calls:
        number = next(ids)
        items.append(
            {
                "type": "function_call",
                "id": f"fc_fake_{number}",
                "call_id": f"call_fake_{number}",
                "name": name,
                "arguments": json.dumps(arguments),
                "status": "completed",
            }
        )
    return items


def _response(response_id: str, model: str, items: list[dict[str, Any]], body: Any) -> dict[str, Any]:
    tokens = max(1, len(json.dumps(body)) // 4)
    usage = {
        "input_tokens": tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 8,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens + 8,
    }
    return {"id": response_id, "object": "response", "status": "completed", "model": model, "output": items,
            "usage": usage}  # fmt: skip


def _events(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The response as the stream's events, in the order the real API sends them."""
    started = dict(response, status="in_progress", output=[], usage=None)
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
    for index, item in enumerate(response["output"]):
        opening = dict(item, content=[]) if item["type"] == "message" else dict(item, arguments="")
        events.append({"type": "response.output_item.added", "output_index": index, "item": opening})
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append({"type": "response.output_text.delta", "item_id": item["id"], "output_index": index,
                           "content_index": 0, "delta": text})  # fmt: skip
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response})
    return [dict(event, sequence_number=n) for n, event in enumerate(events)]


class _Handler(BaseHTTPRequestHandler):
    state: _State
    model = "fake-model"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        """Silent: tests read ``requests``."""

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            model = {"id": self.model, "object": "model", "owned_by": "fake"}
            self._send_json(200, {"object": "list", "data": [model], "models": []})
        else:
            self._send_json(404, {"error": {"message": f"no route GET {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        if not self.path.split("?")[0].rstrip("/").endswith("/responses") or not isinstance(body, dict):
            self._send_json(404, {"error": {"message": f"no route POST {self.path}", "type": "not_found"}})
            return
        reply = self.state.next_reply(body)
        response_id = f"resp_fake_{next(self.state.ids)}"
        response = _response(response_id, str(body.get("model", self.model)), _items(reply, self.state.ids), body)
        if not body.get("stream"):
            self._send_json(200, response)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for event in _events(response):
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        self.wfile.flush()


class ScriptedResponsesServer(LocalServer):
    """Serves ``script`` on 127.0.0.1; ``base_url`` ends in ``/v1``.

    ``requests`` holds every ``/responses`` body received, in order; when the script runs out, ``fallback``
    is played (by default a plain answer without a tool call: an end of turn).
    """

    def __init__(self, script: Sequence[ReplySource], *, fallback: ReplySource | None = None) -> None:
        self._state = _State(script=list(script), fallback=fallback or Reply.text("(script exhausted)"))
        super().__init__(type("_BoundHandler", (_Handler,), {"state": self._state}), "fake-responses")

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._state.lock:
            return list(self._state.requests)


def input_texts(body: dict[str, Any]) -> list[str]:
    """The texts of a request's input items, in order: messages' text parts and function call outputs."""
    texts: list[str] = []
    for item in body.get("input", []):
        if item.get("type") == "function_call_output":
            output = item.get("output")
            texts.append(output if isinstance(output, str) else json.dumps(output))
        elif item.get("type") == "message":
            content = item.get("content")
            parts = content if isinstance(content, list) else [{"text": content}]
            texts.append("\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict)))
    return texts


def last_user_text(body: dict[str, Any]) -> str:
    """Text of the last user message of a request (where hook feedback arrives)."""
    users = [item for item in body.get("input", []) if item.get("type") == "message" and item.get("role") == "user"]
    return input_texts({"input": users[-1:]})[0] if users else ""
