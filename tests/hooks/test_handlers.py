"""The hook handlers in-process: real workspace, ledger and trace on disk; fake questions and detectors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from quaere.goal_source import StoreGoal
from quaere.hooks.dialect import HookDialect, WireEvent
from quaere.hooks.handlers import (
    HookDeps,
    broken_answer,
    handle_post_tool,
    handle_prompt,
    handle_stop,
)
from quaere.hooks.state import HookBudget, StateFile, read_state, update_state
from quaere.records import Moment, Verdict
from quaere.store import Store
from quaere.store.records import EvaluationEntry, Starter
from quaere.trace import read_trace
from quaere.workspace import content_hash, create_workspace

from .factories import PINNED, bench, entry, evaluation, spec
from .fakes import FixedMoments, FixedQuestions


class Clock:
    def __init__(self, t=1_000.0):
        self.t = t

    def __call__(self):
        return self.t


@pytest.fixture
def ws(tmp_path):
    kernel = tmp_path / "src" / "k.c"
    kernel.parent.mkdir()
    kernel.write_text("int k(void) { return 0; }\n")
    return create_workspace(tmp_path / "ws", "toy", kernel)


def store_of(ws) -> Store:
    """The test's own signed store (conftest points $QUAERE_STORE_DIR at a fresh folder per test)."""
    return Store(Path(os.environ["QUAERE_STORE_DIR"]))


def append(ws, made: EvaluationEntry) -> None:
    store_of(ws).append(ws.id, lambda n: made.model_copy(update={"sequence": n, "workspace_id": ws.id}))


class CopyConfirmer:
    """Confirms by signing a copy of the latest evaluation in as quaere's own (a steady kernel's confirmation)."""

    def __init__(self, ws):
        self.ws, self.calls = ws, 0

    def confirm(self, candidate_hash):
        self.calls += 1
        latest = store_of(self.ws).read(self.ws.id).entries[-1]
        append(self.ws, latest.model_copy(update={"started_by": Starter.CONFIRMATION}))


def state_of(ws):
    return StateFile(store_of(ws).folder(ws.id), store_of(ws).signer())


def deps_for(ws, moments=(), agent=HookDialect.CLAUDE_CODE, **kw):
    def read():
        found = store_of(ws).read(ws.id)
        return found.evaluations, [p.render() for p in found.problems]

    goal = StoreGoal(spec(), lambda: store_of(ws).read(ws.id), PINNED, confirmer=kw.pop("confirmer", CopyConfirmer(ws)))
    return HookDeps(
        workspace=ws,
        spec=spec(),
        questions=FixedQuestions(),
        moments=FixedMoments(moments),
        read_evaluations=read,
        goal=goal,
        hook_state=state_of(ws),
        clock=kw.pop("clock", Clock()),
        agent=agent,
        **kw,
    )


def stop_payload(session="s1", active=False, last="I think this is optimal."):
    return {
        "session_id": session,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/x",
        "hook_event_name": "Stop",
        "stop_hook_active": active,
        "last_assistant_message": last,
    }


def add_eval(ws, ok=True, **kw):
    verdicts = [("c1", Verdict.PASSED), ("c2", Verdict.PASSED if ok else Verdict.WRONG)]
    ev = evaluation(
        content_hash(ws.candidate),
        verdicts=verdicts,
        benchmarks=[bench("b1", 1.0, 2.0), bench("b2", 1.0, 2.0 if ok else 1.1)],
        **kw,
    )
    append(ws, entry(ev))


def events(ws, kind):
    return [e for e in read_trace(ws.trace).events if e.type == kind]


def test_stop_unmet_blocks_with_numbers_and_question(ws):
    add_eval(ws, ok=False)
    deps = deps_for(ws)
    answer = handle_stop(stop_payload(), deps)
    assert answer.decision == "block" and answer.exit_code == 0
    reason = answer.output["reason"]
    assert answer.output["decision"] == "block"
    assert "c2: wrong" in reason and "b2: 1.100x" in reason and "target 1.500x" in reason
    # correctness fails: a stop now explains the failure away, whatever the final message says
    assert reason.endswith("Question: Q1 for explained_failure?")
    assert deps.questions.asked == [Moment.EXPLAINED_FAILURE]
    assert [e.last_message for e in events(ws, "stop_attempt")] == ["I think this is optimal."]
    [decision] = events(ws, "stop_decision")
    assert (decision.decision, decision.goal_status) == ("block", "unmet")
    assert events(ws, "question")[0].moment is Moment.EXPLAINED_FAILURE
    assert "1 correctness scenario(s) fail (c2)" in events(ws, "moment")[0].evidence
    assert read_state(state_of(ws)).blocks == 1
    assert not (ws.state / "hooks.json").exists()  # the counters live in the store, signed


def test_stop_correct_but_slow_is_a_claimed_limit(ws):
    verdicts = [("c1", Verdict.PASSED)]
    append(ws, entry(evaluation(content_hash(ws.candidate), verdicts, [bench("b1", 1.0, 1.2)])))
    deps = deps_for(ws)
    answer = handle_stop(stop_payload(), deps)
    assert answer.output["reason"].endswith("Question: Q1 for claimed_limit?")
    evidence = events(ws, "moment")[0].evidence  # the goal's state, and what the final message claimed
    assert evidence.startswith("stop attempt with the goal unmet; its final message: word score")
    assert "(optimal;" in evidence


def test_stop_uses_the_detectors_evidence_for_its_moment(ws):
    add_eval(ws, ok=False)
    deps = deps_for(ws, moments=[(Moment.EXPLAINED_FAILURE, "it said: just rounding"), (Moment.PLATEAU, "x")])
    handle_stop(stop_payload(), deps)
    [moment] = events(ws, "moment")
    assert moment.moment is Moment.EXPLAINED_FAILURE and moment.evidence == "it said: just rounding"


def test_stop_met_allows_after_its_confirmation(ws):
    add_eval(ws, ok=True)
    deps = deps_for(ws)
    answer = handle_stop(stop_payload(), deps)
    assert answer.decision == "allow" and "decision" not in answer.output
    assert deps.goal.confirmer.calls == 1  # the evaluations held: quaere ran its own before allowing
    assert events(ws, "stop_decision")[0].goal_status == "met"
    assert read_state(state_of(ws)).blocks == 0


def test_stop_unconfirmed_blocks_without_a_confirmer(ws):
    add_eval(ws, ok=True)
    answer = handle_stop(stop_payload(), deps_for(ws, confirmer=None))
    assert answer.decision == "block" and "UNCONFIRMED" in answer.output["reason"]


def test_stop_stale_blocks(ws):
    add_eval(ws, ok=True)
    ws.candidate.write_text("int k(void) { return 1; }\n")
    answer = handle_stop(stop_payload(), deps_for(ws))
    assert answer.decision == "block" and "STALE" in answer.output["reason"]
    assert events(ws, "stop_decision")[0].goal_status == "stale"


def test_stop_no_evaluation_blocks(ws):
    answer = handle_stop(stop_payload(), deps_for(ws))
    assert answer.decision == "block" and "quaere eval" in answer.output["reason"]


def test_block_budget_spent_allows_with_budget_event(ws):
    add_eval(ws, ok=False)
    deps = deps_for(ws, budget=HookBudget(max_blocks=2))
    assert [handle_stop(stop_payload(active=i > 0), deps).decision for i in range(3)] == ["block", "block", "allow"]
    [spent] = events(ws, "budget")
    assert (spent.budget, spent.limit, spent.used) == ("blocks", 2, 2)
    assert events(ws, "stop_decision")[-1].goal_status == "budget_spent"


def test_wall_time_and_session_budgets(ws):
    add_eval(ws, ok=False)
    clock = Clock()
    deps = deps_for(ws, budget=HookBudget(max_wall_s=60, max_sessions=2), clock=clock)
    assert handle_stop(stop_payload("a"), deps).decision == "block"
    clock.t += 61
    answer = handle_stop(stop_payload("a"), deps)
    assert answer.decision == "allow" and "wall_s budget spent" in answer.output["systemMessage"]
    update_state(state_of(ws), lambda s: setattr(s, "started_at", clock.t))
    assert handle_stop(stop_payload("b"), deps).decision == "block"
    assert handle_stop(stop_payload("c"), deps).decision == "allow"  # third session > 2


def test_openhands_block_uses_exit_2_and_deny(ws):
    answer = handle_stop(stop_payload(), deps_for(ws, agent=HookDialect.OPENHANDS))
    assert answer.exit_code == 2 and answer.output["decision"] == "deny"


def test_a_torn_store_line_is_reported_and_withholds_the_goal(ws):
    add_eval(ws, ok=True)
    with open(store_of(ws).records_path(ws.id), "a") as f:
        f.write('{"torn": tr')
    answer = handle_stop(stop_payload(), deps_for(ws))
    assert answer.decision == "block"
    assert "tampered (not_json)" in answer.stderr and "store: tampered" in answer.output["reason"]


def test_broken_answer_blocks_then_lets_go(ws):
    update_state(ws.state, lambda s: setattr(s, "budget", HookBudget(max_blocks=2)))
    first = broken_answer(WireEvent.STOP, "input not JSON", HookDialect.CLAUDE_CODE, ws.state)
    second = broken_answer(WireEvent.STOP, "input not JSON", HookDialect.CLAUDE_CODE, ws.state)
    third = broken_answer(WireEvent.STOP, "input not JSON", HookDialect.CLAUDE_CODE, ws.state)
    assert [first.decision, second.decision, third.decision] == ["block", "block", "allow"]
    assert "input not JSON" in first.output["reason"] and "input not JSON" in first.stderr


def test_prompt_asks_campaign_start_once(ws):
    deps = deps_for(ws)
    payload = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "optimize", "cwd": "/x"}
    first = handle_prompt(payload, deps)
    assert first.output["hookSpecificOutput"] == {
        "hookEventName": "UserPromptSubmit",
        "additionalContext": "Question: Q1 for campaign_start?",
    }
    assert handle_prompt(payload, deps).output is None
    assert [e.moment for e in events(ws, "question")] == [Moment.CAMPAIGN_START]


def post_payload(command="quaere eval"):
    return {
        "session_id": "s1",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "cwd": "/x",
        "tool_input": {"command": command},
        "tool_response": {"stdout": "table", "stderr": ""},
        "tool_use_id": "toolu_1",
    }


def test_post_tool_asks_after_an_evaluation_when_a_moment_holds(ws):
    deps = deps_for(ws, moments=[(Moment.SUSPICIOUS_GAIN, "b1 jumped 3.0x")])
    add_eval(ws, ok=True)
    answer = handle_post_tool(post_payload("make && ./run"), deps)  # the ledger grew: an evaluation ran
    assert answer.output["hookSpecificOutput"]["additionalContext"] == "Question: Q1 for suspicious_gain?"
    assert [e.moment for e in events(ws, "moment")] == [Moment.SUSPICIOUS_GAIN]
    assert events(ws, "tool_call")[0].tool == "Bash"
    # the same moment on the same evaluation is not asked twice; no new evaluation: nothing
    assert handle_post_tool(post_payload("ls"), deps).output is None


def test_post_tool_asks_a_limit_claimed_mid_turn_after_any_tool(ws):
    deps = deps_for(ws, moments=[(Moment.CLAIMED_LIMIT, "said optimal"), (Moment.PLATEAU, "6 evaluations")])
    answer = handle_post_tool(post_payload("ls"), deps)
    assert answer.output["hookSpecificOutput"]["additionalContext"] == "Question: Q1 for claimed_limit?"
    assert deps.questions.asked == [Moment.CLAIMED_LIMIT]  # the plateau waits for an evaluation
    assert handle_post_tool(post_payload("ls"), deps).output is None  # asked once per evaluation count


def test_post_tool_asks_nothing_when_no_moment_holds(ws):
    deps = deps_for(ws)
    assert handle_post_tool(post_payload("ls"), deps).output is None
    add_eval(ws)
    assert handle_post_tool(post_payload(), deps).output is None
    assert deps.questions.asked == []


def test_post_tool_writes_evaluation_summaries_when_asked(ws):
    from quaere.trace import EvaluationDone

    def summarize(ev):
        return EvaluationDone(candidate_hash=ev.candidate_hash, correct=ev.correct)

    deps = deps_for(ws, summarize=summarize)
    add_eval(ws)
    add_eval(ws)
    handle_post_tool(post_payload(), deps)
    handle_post_tool(post_payload(), deps)
    assert len(events(ws, "evaluation")) == 2


def test_post_tool_records_the_models_words_from_the_transcript(ws, tmp_path):
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "go"}},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": "The c2 failure is only rounding."},
                    {"type": "tool_use", "name": "Bash", "input": {}},
                ]
            },
        },
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"type": "assist')  # torn tail
    payload = dict(post_payload("ls"), transcript_path=str(transcript))
    deps = deps_for(ws)
    handle_post_tool(payload, deps)
    handle_post_tool(payload, deps)  # nothing new: not recorded twice
    said = [e.text for e in events(ws, "message") if e.role == "assistant"]
    assert said == ["The c2 failure is only rounding."]


def test_post_tool_asks_an_explained_failure_after_any_tool(ws):
    deps = deps_for(
        ws,
        moments=[
            (Moment.EXPLAINED_FAILURE, "c2 failed; the agent said 'rounding'"),
            (Moment.PLATEAU, "6 evaluations without a new best"),
        ],
    )
    failure = dict(post_payload("ls"), hook_event_name="PostToolUseFailure", error="Exit code 1")
    failure.pop("tool_response")
    answer = handle_post_tool(failure, deps)
    assert answer.output["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    assert deps.questions.asked == [Moment.EXPLAINED_FAILURE]  # a plateau waits for an evaluation
    assert events(ws, "tool_result")[0].is_error
