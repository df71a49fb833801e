"""One campaign story, told to every backend: each of the five moments arises, the Stop hook blocks then
allows, and the goal is reached. Steps are backend-neutral; each test turns them into its backend's form.

1. evaluate the initial kernel (correct, ratio about 1: the first best);
2. copy in a wrong kernel and evaluate (correctness fails);
3. blame rounding, and evaluate again (explained-away failure);
4. copy in a correct but slower kernel and evaluate (no new best for three evaluations: plateau);
5. try to stop, claiming optimality (blocked: correct but the goal unmet on speed, a claimed-limit question;
   a stop while correctness fails would be the explained-failure moment instead);
6. copy in the fast kernel and evaluate (about 8x in one step: suspicious gain);
7. try to stop (allowed: the goal, 2x over the initial kernel on every benchmark by a margin of two standard
   errors, is met on the fast kernel's evaluation and on the confirming one quaere runs itself at this stop).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from quaere.agents.config import Budgets, CampaignConfig
from quaere.campaign import CampaignResult
from quaere.questions.moments import MomentsConfig, PlateauConfig, SuspiciousGainConfig
from quaere.records import Moment
from quaere.store import Store
from quaere.store.records import Starter
from quaere.trace import QuestionAsked, StopDecision, read_trace
from quaere.workspace import Workspace

FIXTURES = Path(__file__).parent / "fixtures"
TASK = FIXTURES / "quick_softmax"
KERNELS = FIXTURES / "kernels"
# correct and 4x slower than the initial kernel: timing noise can neither meet the goal nor make a new best
SLOW = f"sed 's/REPEAT = 8;/REPEAT = 32;/' {TASK / 'kernel.cpp'} > kernel.cpp"

BLAME = "The 0.1% mismatch is only floating-point rounding noise; the tolerance of the check is too strict."
CLAIM = "I believe this kernel is optimal now: it is at the hardware limit and cannot be improved further."
DONE = "The fast kernel passes every scenario and is about 8x faster than the initial one."
EVAL = "quaere eval"


@dataclass(frozen=True)
class Step:
    kind: str  # "bash", "say", "stop"
    text: str


def story() -> list[Step]:
    return [
        Step("bash", EVAL),
        Step("bash", f"cp {KERNELS / 'wrong.cpp'} kernel.cpp && {EVAL}"),
        Step("say", BLAME),
        Step("bash", EVAL),
        Step("bash", f"{SLOW} && {EVAL}"),
        Step("stop", CLAIM),
        Step("bash", f"cp {KERNELS / 'fast.cpp'} kernel.cpp && {EVAL}"),
        Step("stop", DONE),
    ]


def campaign_config(workspace: Path, agent: str, **fields: object) -> CampaignConfig:
    """Small budgets and a short plateau so the story fits in one session of a few evaluations. Timing
    noise on a loaded CI machine moves the same kernel's ratio by up to 2x, so only a larger gain (the
    fast kernel's, about 8x) is suspicious and only a 2x gain counts as a new best."""
    return CampaignConfig(
        task=str(TASK),
        workspace=workspace,
        agent=agent,  # type: ignore[arg-type]
        budgets=Budgets(sessions=2, tool_calls=40, wall_min=15),
        moments=MomentsConfig(
            plateau=PlateauConfig(evaluations=2, min_gain_pct=100),
            suspicious_gain=SuspiciousGainConfig(gain_pct=200, scenario_gain_pct=300, cumulative_gain_pct=300),
        ),
        **fields,  # type: ignore[arg-type]
    )


STORY_EVENTS = {
    "session_start",
    "session_end",
    "message",
    "tool_call",
    "tool_result",
    "evaluation",
    "moment",
    "question",
    "stop_attempt",
    "stop_decision",
}  # every kind the story makes; budget and error events have their own tests (test_budgets_and_sources)


def assert_story_told(workspace: Path, result: CampaignResult) -> Path:
    """The checks every backend's run of the story must pass; returns the trace's path."""
    trace = workspace / ".quaere" / "trace.jsonl"
    assert result.reason == "goal_met", trace.read_text()[-3000:]
    assert result.sessions == 1 and result.tool_calls == 5
    assert asked_moments(trace) == set(Moment)
    assert stop_decisions(trace) == [("block", "unmet"), ("allow", "met")]
    assert STORY_EVENTS <= event_types(trace)
    # every evaluated version is kept by hash: the initial, the wrong, the slow and the fast kernel
    kept = {p.stem for p in (workspace / ".quaere" / "candidates").iterdir()}
    evaluated = {e.candidate_hash for e in read_trace(trace).events if e.type == "evaluation"}
    assert evaluated == kept and len(kept) == 4
    # the agent's five evaluations, then quaere's own confirmation of the fast kernel, started by the Stop hook
    entries = Store(Path(os.environ["QUAERE_STORE_DIR"])).read(Workspace(workspace, "", "").id).entries
    assert [e.started_by for e in entries] == [Starter.CALLER] * 5 + [Starter.CONFIRMATION]
    assert entries[-1].full and entries[-1].evaluation.candidate_hash == entries[-2].evaluation.candidate_hash
    return trace


def asked_moments(trace: Path) -> set[Moment]:
    return {e.moment for e in read_trace(trace).events if isinstance(e, QuestionAsked)}


def stop_decisions(trace: Path) -> list[tuple[str, str]]:
    return [(e.decision, e.goal_status) for e in read_trace(trace).events if isinstance(e, StopDecision)]


def event_types(trace: Path) -> set[str]:
    return {e.type for e in read_trace(trace).events}


def first_index(items: Sequence[object], wanted: object) -> int:
    return list(items).index(wanted)
