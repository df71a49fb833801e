"""End to end with the real OpenHands SDK (``openhands-sdk`` and ``openhands-tools``, Python >= 3.12) against
a scripted chat-completions server.

``quaere hooks install --agent openhands`` writes ``.openhands/hooks.json``; the conversation is built by
:func:`quaere.agents.openhands_sdk.quaere_conversation` (run by ``openhands_driver.py`` in the OpenHands
environment), which loads those settings, relays post-tool questions and traces the model's words. The
scripted model evaluates the initial kernel, breaks it, explains the failure away (the explained-failure
question reaches its next request through the relay), claims it is done (blocked while correctness fails:
the failing scenarios and the explained failure's next question reach its next request), copies in a
kernel about 8x faster (a suspicious gain: its question too), and stops with the goal met (after the Stop
hook's own confirming evaluation).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from quaere.agents.fake_openai import Reply, ScriptedOpenAIServer, last_user_text
from quaere.records import Moment
from quaere.store import Store
from quaere.store.pinning import init_workspace
from quaere.store.records import Starter
from quaere.trace import QuestionAsked, StopDecision, read_trace

DEFAULT_VENV = Path.home() / ".cache" / "quaere" / "openhands-venv" / "bin" / "python"
OPENHANDS_PYTHON = Path(os.environ.get("QUAERE_OPENHANDS_PYTHON") or DEFAULT_VENV)
DRIVER = Path(__file__).with_name("openhands_driver.py")
FIXTURES = Path(__file__).parents[1] / "campaign" / "fixtures"  # the campaign story's task and kernels
TASK, KERNELS = FIXTURES / "quick_softmax", FIXTURES / "kernels"
SRC = Path(__import__("quaere").__file__).parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not OPENHANDS_PYTHON.exists(),
        reason=f"no OpenHands environment at {OPENHANDS_PYTHON} (Python >= 3.12 with openhands-sdk and "
        "openhands-tools; scripts/setup.sh makes one where Python 3.12 is found; or set QUAERE_OPENHANDS_PYTHON)",
    ),
]


def _terminal(command: str, text: str) -> Reply:
    return Reply.call("terminal", {"command": command, "security_risk": "LOW", "summary": "run a command"}, text)


def test_openhands_stop_blocks_then_post_tool_question_reaches_the_model_then_goal_met(tmp_path):
    store = Store(Path(os.environ["QUAERE_STORE_DIR"]))
    ws, _ = init_workspace(store, tmp_path / "ws", str(TASK), False, tmp_path)
    installed = subprocess.run(
        [sys.executable, "-m", "quaere", "hooks", "install", "--agent", "openhands", "--root", str(ws.root)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    evaluate = f"{sys.executable} -m quaere eval"
    seen: dict[str, dict] = {}

    def blame(body: dict) -> Reply:
        return _terminal("ls", "The mismatch is only floating-point rounding noise; the check is too strict.")

    def after_explanation(body: dict) -> Reply:
        seen["after_explanation"] = body
        return Reply.text("This is optimal. Done.")

    def after_block(body: dict) -> Reply:
        seen["after_block"] = body
        return _terminal(f"cp {KERNELS / 'fast.cpp'} kernel.cpp && {evaluate}", "A much faster kernel.")

    def after_gain(body: dict) -> Reply:
        seen["after_gain"] = body
        return Reply.text("The fast kernel passes and is about 8x faster. Done.")

    script = [
        _terminal(evaluate, "Let me evaluate the current kernel."),
        _terminal(f"cp {KERNELS / 'wrong.cpp'} kernel.cpp && {evaluate}", "Trying a variant."),
        blame,
        after_explanation,
        after_block,
        after_gain,
    ]
    with ScriptedOpenAIServer(script) as server:
        env = dict(
            os.environ,
            HOME=str(tmp_path / "home"),
            PYTHONPATH=str(SRC),
            OPENHANDS_SUPPRESS_BANNER="1",
            LITELLM_LOCAL_MODEL_COST_MAP="True",  # no fetch of litellm's price list from the network
        )
        command = [str(OPENHANDS_PYTHON), str(DRIVER), str(ws.root), server.base_url, "Make the kernel meet the goal."]
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=420)
        requests = server.requests
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(requests) == 6, f"expected 6 model turns, got {len(requests)}\n{run.stderr[-3000:]}"

    events = read_trace(ws.trace).events
    questions: dict[Moment, list[QuestionAsked]] = {}
    for question in (e for e in events if isinstance(e, QuestionAsked)):
        questions.setdefault(question.moment, []).append(question)
    [start] = questions[Moment.CAMPAIGN_START]
    assert start.text in json.dumps(requests[0]["messages"])

    decisions = [(e.decision, e.goal_status) for e in events if isinstance(e, StopDecision)]
    assert decisions == [("block", "unmet"), ("allow", "met")]
    feedback = last_user_text(seen["after_block"])
    assert "goal: UNMET" in feedback and "fail" in feedback.lower()
    # the stop came while correctness failed: its question is the explained failure's next one, not a repeat
    explained, at_stop = questions[Moment.EXPLAINED_FAILURE]
    assert f"Question: {at_stop.text}" in feedback and at_stop.entry_id != explained.entry_id

    [gain] = questions[Moment.SUSPICIOUS_GAIN]
    relayed = json.loads(run.stdout.strip().splitlines()[-1])
    assert relayed == [f"Question: {explained.text}", f"Question: {gain.text}"]
    assert last_user_text(seen["after_explanation"]) == f"Question: {explained.text}"
    roles = [m["role"] for m in seen["after_gain"]["messages"]]
    assert roles[-2:] == ["tool", "user"]  # the question comes right after the tool's result
    assert last_user_text(seen["after_gain"]) == f"Question: {gain.text}"
    entries = store.read(ws.id).entries  # the agent's three evaluations, then quaere's confirmation of the last
    assert [(e.evaluation.correct, e.started_by) for e in entries] == [
        (True, Starter.CALLER), (False, Starter.CALLER), (True, Starter.CALLER), (True, Starter.CONFIRMATION)
    ]
