"""The scripted Anthropic server over real HTTP on 127.0.0.1: SSE shape, JSON mode, side routes, recording."""

from __future__ import annotations

import json

import httpx

from quaere.agents.fake_anthropic import ScriptedAnthropicServer, Turn

TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]


def _events(response: httpx.Response) -> list[tuple[str, dict]]:
    events, name = [], ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[len("data: ") :])))
    return events


def _post(client: httpx.Client, body: dict) -> httpx.Response:
    return client.post("/v1/messages", json=body, headers={"x-api-key": "test", "anthropic-version": "2023-06-01"})


def test_streams_text_and_tool_use_like_the_api():
    script = [Turn.tool("Bash", {"command": "ls -l"}, text="Looking.")]
    with ScriptedAnthropicServer(script) as server, httpx.Client(base_url=server.base_url) as client:
        with client.stream(
            "POST",
            "/v1/messages",
            json={"model": "m", "stream": True, "tools": TOOLS, "messages": [{"role": "user", "content": "hi"}]},
        ) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            events = _events(r)
    names = [n for n, _ in events]
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == name for name, data in events)
    assert events[0][1]["message"]["content"] == [] and events[0][1]["message"]["stop_reason"] is None
    text_delta, tool_start, tool_delta = events[3][1], events[5][1], events[6][1]
    assert text_delta["delta"] == {"type": "text_delta", "text": "Looking."}
    assert tool_start["content_block"]["type"] == "tool_use" and tool_start["content_block"]["input"] == {}
    assert tool_delta["delta"]["type"] == "input_json_delta"
    assert json.loads(tool_delta["delta"]["partial_json"]) == {"command": "ls -l"}
    assert events[8][1]["delta"]["stop_reason"] == "tool_use"


def test_json_mode_turn_functions_recording_and_fallback():
    def react(request):
        return Turn.text(f"you said {request.last_user_text()}")

    with (
        ScriptedAnthropicServer([react], fallback=Turn.text("bye")) as server,
        httpx.Client(base_url=server.base_url) as client,
    ):
        body = {
            "model": "m",
            "tools": TOOLS,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "ping"}]}],
        }
        first = _post(client, body).json()
        second = _post(client, body).json()
        side = _post(client, {"model": "m", "messages": [{"role": "user", "content": "title?"}]}).json()
        assert first["content"] == [{"type": "text", "text": "you said ping"}] and first["stop_reason"] == "end_turn"
        assert second["content"][0]["text"] == "bye"
        assert side["content"][0]["text"] == "ok"  # no tools: a side call, the script is not consumed
        assert server.turns_played == 2
        assert [r.agent_turn for r in server.requests] == [True, True, False]
        assert server.agent_requests[0].body["messages"][0]["content"][0]["text"] == "ping"


def test_side_routes_answer_sensibly():
    with ScriptedAnthropicServer([]) as server, httpx.Client(base_url=server.base_url) as client:
        assert client.head("/").status_code == 200
        count = client.post("/v1/messages/count_tokens", json={"model": "m", "messages": []})
        assert count.status_code == 200 and count.json()["input_tokens"] >= 1
        assert client.get("/v1/models").json()["data"][0]["type"] == "model"
        missing = client.post("/v1/nope", json={})
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
        bad = client.post("/v1/messages", content=b"not json", headers={"content-type": "application/json"})
        assert bad.status_code == 400 and bad.json()["type"] == "error"
        assert len(server.requests) == 5
