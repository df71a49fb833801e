"""A scripted campaign on the quick CPU task where every moment fires from evidence alone.

No message holds a trigger word: the agent only says neutral things and stops. The moments come from the
ledger and the trace: the first prompt (campaign start), evaluations without a new best (plateau, three
times, climbing the ladder: three different kinds), a stop while correctness fails (explained failure),
a stop with the goal unmet (claimed limit), a large jump (suspicious gain).
"""

from __future__ import annotations

from pathlib import Path

from quaere.agents.config import Budgets, CampaignConfig
from quaere.agents.scripted import Action, ScriptedAgent
from quaere.campaign import run_campaign
from quaere.questions.moments import MomentsConfig, PlateauConfig, SuspiciousGainConfig
from quaere.questions.phrases import read_words
from quaere.records import Moment
from quaere.trace import MomentDetected, QuestionAsked, StopDecision, read_trace

FIXTURES = Path(__file__).parents[1] / "campaign" / "fixtures"
TASK = FIXTURES / "quick_softmax"
EVAL = "quaere eval"
NEUTRAL = "Here is where things stand."
# correct and 4x slower than the initial kernel: timing noise can neither meet the goal nor make a new best
SLOW = f"sed 's/REPEAT = 8;/REPEAT = 32;/' {TASK / 'kernel.cpp'} > kernel.cpp"


def script() -> list[Action]:
    wrong, fast = FIXTURES / "kernels" / "wrong.cpp", FIXTURES / "kernels" / "fast.cpp"
    return [
        Action("bash", EVAL),
        Action("bash", f"cp {wrong} kernel.cpp && {EVAL}"),
        Action("bash", EVAL),  # two evaluations without a new best: plateau 1
        Action("stop", NEUTRAL),  # correctness fails: explained failure
        Action("bash", f"{SLOW} && {EVAL}"),
        Action("bash", EVAL),  # plateau 2
        Action("bash", EVAL),
        Action("bash", EVAL),  # plateau 3
        Action("stop", NEUTRAL),  # correct, goal unmet: claimed limit
        Action("bash", f"cp {fast} kernel.cpp && {EVAL}"),  # about 8x: suspicious gain
        Action("stop", NEUTRAL),  # goal met
    ]


def test_every_moment_fires_from_evidence_alone(tmp_path: Path) -> None:
    assert not any(read_words(a.text).hits for a in script() if a.kind != "bash")  # no trigger words at all
    config = CampaignConfig(
        task=str(TASK),
        workspace=tmp_path / "ws",
        agent="scripted",
        budgets=Budgets(sessions=1, tool_calls=20, wall_min=15),
        # the same kernel's ratio moves by up to 2x on a loaded machine: only 2x is a new best, 4x a jump
        moments=MomentsConfig(
            plateau=PlateauConfig(evaluations=2, min_gain_pct=100),
            suspicious_gain=SuspiciousGainConfig(gain_pct=200, scenario_gain_pct=300, cumulative_gain_pct=300),
        ),
    )
    result = run_campaign(config, ScriptedAgent(script()))
    events = read_trace(tmp_path / "ws" / ".quaere" / "trace.jsonl").events

    assert result.reason == "goal_met"
    asked = [e for e in events if isinstance(e, QuestionAsked)]
    assert {e.moment for e in asked} == set(Moment)
    assert [(e.decision, e.goal_status) for e in events if isinstance(e, StopDecision)] == [
        ("block", "unmet"),
        ("block", "unmet"),
        ("allow", "met"),
    ]
    stops = [e.moment for e in asked if e.moment in (Moment.EXPLAINED_FAILURE, Moment.CLAIMED_LIMIT)]
    assert stops == [Moment.EXPLAINED_FAILURE, Moment.CLAIMED_LIMIT]
    plateaus = [e for e in asked if e.moment is Moment.PLATEAU]
    assert len(plateaus) == 3 and len({e.kind for e in plateaus}) == 3
    ladder = [e.evidence for e in events if isinstance(e, MomentDetected) and e.moment is Moment.PLATEAU]
    for n, rung in enumerate(("level-shift", "limit-challenge", "comparison-gap"), start=1):
        assert f"plateau question {n} in a row: rung '{rung}'" in ladder[n - 1]
    gain = next(e.evidence for e in events if isinstance(e, MomentDetected) and e.moment is Moment.SUSPICIOUS_GAIN)
    assert "geomean" in gain and "configuration bench-" in gain
