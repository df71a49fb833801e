"""The OpenAI Responses API (``POST /v1/responses``) shape of a scripted reply, served by
:class:`~quaere.agents.fake_openai.ScriptedOpenAIServer` beside chat completions.

Codex speaks only this API. A :class:`~quaere.agents.fake_openai.Reply` (text, function calls) becomes
the streamed Server-Sent Events the real API sends: ``response.created``, ``response.output_item.added``,
``response.output_text.delta`` for text, ``response.output_item.done`` with the finished ``message`` or
``function_call`` item, and ``response.completed`` with the usage; or one JSON response when ``stream``
is false. Also helpers to read what a client sent in a Responses request.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from quaere.agents.fake_openai import Reply


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


def response_payload(reply: Reply, number: int, model: str, body: Any) -> dict[str, Any]:
    """The Responses-API response of one scripted reply (its items numbered from ``number``)."""
    ids = itertools.count(number * 100)
    return _response(f"resp_fake_{number}", model, _items(reply, ids), body)


def sse_lines(response: dict[str, Any]) -> bytes:
    """The response streamed as the API streams it: one ``event:``/``data:`` pair per event."""
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in _events(response))


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
