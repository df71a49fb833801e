"""``quaere report A B [C...]``: campaigns of one task side by side, every figure from their own reports.

Per campaign: the best geomean after each evaluation against active minutes and against tool calls (the
same running best as the single report: only correct evaluations count); gains (evaluations that raise the
best geomean, the first correct one excepted) and tool calls per gain; re-added-line churn; evaluations;
wall time; questions asked, supervisor notes and ``quaere tool`` calls by tool; and the final candidate's
ratio over the goal baseline per configuration. Active minutes count time inside sessions only, so a
campaign resumed the next morning is not charged for the night.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from quaere.records import MethodKind
from quaere.report.campaign_report import CampaignReport
from quaere.report.churn import Churn
from quaere.report.final_table import geomean

if TYPE_CHECKING:
    from quaere.store import Store
from quaere.report.questions import Catalog
from quaere.trace import EvaluationDone, SessionEnd, SessionStart, SupervisorNote, ToolCall, ToolState
from quaere.workspace import Workspace

_TOOL_CALL = re.compile(r"quaere\s+tool\s+([a-z]+)")


class CompareError(ValueError):
    """The campaigns cannot be compared (another task, the same folder twice); the message names them."""


class ComparePoint(BaseModel):
    model_config = ConfigDict(frozen=True)
    minutes: float  # active minutes before this evaluation
    tool_calls: int
    best_geomean: float | None


class CampaignColumn(BaseModel):
    """One campaign's figures."""

    model_config = ConfigDict(frozen=True)
    label: str
    method: MethodKind | None
    tools: tuple[ToolState, ...]
    points: tuple[ComparePoint, ...]
    best_geomean: float | None
    evaluations: int
    tool_calls: int
    gains: int
    tool_calls_per_gain: float | None  # None when the best never rose
    churn: Churn
    wall_min: float
    questions: int
    supervisor_notes: int
    quaere_tools: dict[str, int]  # `quaere tool <name>` calls by name
    final_ratios: dict[str, float]  # configuration -> final candidate's ratio over the goal baseline
    final_geomean: float | None
    final_correct: bool | None  # None: no evaluation of the final candidate


class Comparison(BaseModel):
    model_config = ConfigDict(frozen=True)
    task: str
    baseline: str
    campaigns: tuple[CampaignColumn, ...]
    configurations: tuple[str, ...]
    problems: tuple[str, ...]


def active_minutes(events: Sequence[object]) -> list[float]:
    """For each event, the minutes spent inside sessions before it (time between sessions is not counted)."""
    spent, opened, out = 0.0, None, []
    for event in events:
        ts = float(getattr(event, "ts", 0.0))
        if isinstance(event, SessionStart):
            opened = ts
        current = spent + (ts - opened if opened is not None else 0.0)
        out.append(current / 60)
        if isinstance(event, SessionEnd) and opened is not None:
            spent, opened = current, None
    return out


def _points(events: Sequence[object], report: CampaignReport) -> tuple[ComparePoint, ...]:
    minutes = [m for e, m in zip(events, active_minutes(events), strict=True) if isinstance(e, EvaluationDone)]
    return tuple(ComparePoint(minutes=m, tool_calls=p.tool_calls, best_geomean=p.best_geomean)
                 for m, p in zip(minutes, report.progress, strict=True))


def gains(points: Sequence[ComparePoint]) -> int:
    """How many evaluations raised the best geomean (setting the first one is not a gain)."""
    bests = [p.best_geomean for p in points]
    return sum(1 for before, after in zip(bests, bests[1:], strict=False)
               if before is not None and after is not None and after > before)


def quaere_tool_calls(events: Sequence[object]) -> dict[str, int]:
    counts = Counter(m.group(1) for e in events if isinstance(e, ToolCall) for m in _TOOL_CALL.finditer(e.input))
    return dict(sorted(counts.items()))


def _final(report: CampaignReport, baseline: str) -> tuple[dict[str, float], float | None, bool | None]:
    if report.final is None:
        return {}, None, None
    ratios = {row.scenario_id: row.baselines[baseline].ratio for row in report.final.rows if baseline in row.baselines}
    value = geomean(list(ratios.values()))
    return ratios, value if math.isfinite(value) else None, report.final.correct


def column(label: str, events: Sequence[object], report: CampaignReport, baseline: str) -> CampaignColumn:
    """One campaign's figures from its trace ``events`` and its single-campaign ``report``."""
    points = _points(events, report)
    count = gains(points)
    calls = report.pacing.total_tool_calls
    ratios, final_geomean, correct = _final(report, baseline)
    return CampaignColumn(
        label=label,
        method=report.method,
        tools=report.tools,
        points=points,
        best_geomean=points[-1].best_geomean if points else None,
        evaluations=len(points),
        tool_calls=calls,
        gains=count,
        tool_calls_per_gain=calls / count if count else None,
        churn=report.churn,
        wall_min=active_minutes(events)[-1] if events else 0.0,
        questions=report.question_counts.total,
        supervisor_notes=sum(1 for e in events if isinstance(e, SupervisorNote)),
        quaere_tools=quaere_tool_calls(events),
        final_ratios=ratios,
        final_geomean=final_geomean,
        final_correct=correct,
    )


def compare(task: str, baseline: str, columns: Sequence[CampaignColumn], problems: Sequence[str] = ()) -> Comparison:
    """The comparison of ``columns`` (at least two), configurations in first-seen order."""
    if len(columns) < 2:
        raise CompareError("a comparison needs at least two campaigns")
    configurations = tuple(dict.fromkeys(c for col in columns for c in col.final_ratios))
    return Comparison(task=task, baseline=baseline, campaigns=tuple(columns), configurations=configurations,
                      problems=tuple(problems))


def load_comparison(workspaces: Sequence[Workspace], catalog: Catalog, store: Store | None = None) -> Comparison:
    """Read each workspace's trace, evaluations and versions and compare them (with ``store``, the signed
    evaluations: :func:`~quaere.report.inputs.load_inputs`); CompareError names the first workspace that
    is not of the same task as the first one, or one named twice."""
    from quaere.report.inputs import load_inputs, load_report
    from quaere.task.loader import resolve_task_folder
    from quaere.task.spec import TaskError, parse_task_toml

    roots = [ws.root.resolve() for ws in workspaces]
    twice = next((r for r in roots if roots.count(r) > 1), None)
    if twice is not None:
        raise CompareError(f"{twice}: named twice; compare different campaigns")
    try:
        folders = [resolve_task_folder(ws.task) for ws in workspaces]
        spec = parse_task_toml(folders[0] / "task.toml")
    except TaskError as exc:
        raise CompareError(str(exc)) from None
    for ws, folder in zip(workspaces, folders, strict=True):
        if folder != folders[0]:
            raise CompareError(f"{ws.root}: a campaign of task '{ws.task}', not '{workspaces[0].task}'; "
                               "a comparison needs one task")
    baseline = spec.goal.targets[0].baseline
    columns, problems = [], []
    for ws in workspaces:
        inputs = load_inputs(ws, store)
        report = load_report(ws, catalog, inputs=inputs)
        method = report.method.value if report.method else ""
        label = f"{method} ({ws.root.name})" if method and method != ws.root.name else ws.root.name
        columns.append(column(label, inputs.events, report, baseline))
        problems += [f"{label}: {p}" for p in report.problems]
    return compare(spec.name, baseline, columns, problems)
