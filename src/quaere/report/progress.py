"""Best ratio over time: the running best of the campaign against the number of tool calls made.

Definition. Walk the trace in file order, counting ToolCall events. At each EvaluationDone, emit a point
whose ``tool_calls`` is the number of ToolCall events before it. Only *correct* evaluations (build, audit
and every correctness scenario passed) can set a best: a fast but wrong candidate never counts. The
best geomean is the largest ``geomean_ratio`` of the correct evaluations so far (this one included); the
best per benchmark configuration is, for each scenario id, the largest ratio that scenario reached in
any correct evaluation so far (each scenario's maximum is taken on its own, so they may come from
different candidates). Non-finite ratios are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from quaere.trace import EvaluationDone, ToolCall


class ProgressPoint(BaseModel):
    """The campaign's state right after one evaluation."""

    model_config = ConfigDict(frozen=True)
    evaluation: int
    """1-based rank of the evaluation in the trace."""
    tool_calls: int
    """ToolCall events before this evaluation."""
    candidate_hash: str
    correct: bool
    geomean_ratio: float | None
    """This evaluation's own geomean (None when nothing was timed)."""
    best_geomean: float | None
    """Best geomean of the correct evaluations so far; None until one was timed."""
    best_by_scenario: dict[str, float]
    """Per benchmark scenario id: best ratio reached in a correct evaluation so far."""


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def best_ratio_over_time(events: Sequence[object]) -> tuple[ProgressPoint, ...]:
    """One :class:`ProgressPoint` per EvaluationDone of ``events``, in trace order."""
    points: list[ProgressPoint] = []
    tool_calls = 0
    best: float | None = None
    best_by_scenario: dict[str, float] = {}
    for event in events:
        if isinstance(event, ToolCall):
            tool_calls += 1
            continue
        if not isinstance(event, EvaluationDone):
            continue
        if event.correct:
            if _finite(event.geomean_ratio) and (best is None or event.geomean_ratio > best):
                best = event.geomean_ratio
            for scenario, ratio in event.ratios.items():
                if _finite(ratio) and ratio > best_by_scenario.get(scenario, -math.inf):
                    best_by_scenario[scenario] = ratio
        points.append(
            ProgressPoint(
                evaluation=len(points) + 1,
                tool_calls=tool_calls,
                candidate_hash=event.candidate_hash,
                correct=event.correct,
                geomean_ratio=event.geomean_ratio,
                best_geomean=best,
                best_by_scenario=dict(best_by_scenario),
            )
        )
    return tuple(points)


def best_before(events: Sequence[object], end: int) -> float | None:
    """Best geomean of the correct evaluations among ``events[:end]``; None when there is none."""
    values = [
        e.geomean_ratio
        for e in events[:end]
        if isinstance(e, EvaluationDone) and e.correct and _finite(e.geomean_ratio)
    ]
    return max(values) if values else None
