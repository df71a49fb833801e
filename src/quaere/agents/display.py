"""The live view of a campaign: session, tool calls, best ratio per scenario group, last question.

The campaign talks to a :class:`Display`; tests pass :class:`NullDisplay`, the command line a
:class:`RichDisplay`. The view is computed from trace events only (:func:`best_by_group`), so what the
screen shows is what the trace says.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from quaere.trace import EvaluationDone, QuestionAsked, TraceEvent


@dataclass(frozen=True)
class CampaignView:
    """One frame of the live view."""

    task: str
    agent: str
    session: int = 0
    sessions_limit: int = 0
    tool_calls: int = 0
    tool_calls_limit: int | None = None
    wall_s: float = 0.0
    cost_usd: float = 0.0
    evaluations: int = 0
    best_by_group: dict[str, float] = field(default_factory=dict)  # group -> best geomean ratio (correct only)
    last_question: str = ""
    last_activity: str = ""
    status: str = "running"


class Display(Protocol):
    def update(self, view: CampaignView) -> None:
        """Show ``view`` (called after every event that changes it)."""
        ...

    def pause(self) -> None:
        """Release the terminal (a person is about to be asked a question)."""
        ...

    def close(self) -> None:
        """Leave the last frame on screen and release the terminal."""
        ...


class NullDisplay:
    """Shows nothing; keeps the last view for tests."""

    def __init__(self) -> None:
        self.views: list[CampaignView] = []

    def update(self, view: CampaignView) -> None:
        self.views.append(view)

    def pause(self) -> None:
        pass

    def close(self) -> None:
        pass


def scenario_group(scenario_id: str) -> str:
    """The group of a benchmark scenario: the first part of its id (``d128-causal-...`` -> ``d128``)."""
    return scenario_id.replace("_", "-").split("-", 1)[0] or scenario_id


def _geomean(values: Iterable[float]) -> float:
    finite = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in finite) / len(finite)) if finite else math.nan


def best_by_group(evaluations: Iterable[EvaluationDone]) -> dict[str, float]:
    """Per scenario group, the best geomean ratio reached by a correct evaluation."""
    best: dict[str, float] = {}
    for event in evaluations:
        if not event.correct:
            continue
        groups: dict[str, list[float]] = {}
        for scenario, ratio in event.ratios.items():
            groups.setdefault(scenario_group(scenario), []).append(ratio)
        for group, ratios in groups.items():
            value = _geomean(ratios)
            if math.isfinite(value) and value > best.get(group, -math.inf):
                best[group] = value
    return dict(sorted(best.items()))


class TraceFollower:
    """Reads a growing trace incrementally (only the bytes appended since the last call).

    The live view refreshes after every event; reading the whole trace each time would make a long
    campaign quadratic. A line still being written (no newline yet) is left for the next call.
    """

    def __init__(self, path: Path) -> None:
        from pydantic import TypeAdapter

        self.path = path
        self.offset = 0
        self.evaluations: list[EvaluationDone] = []
        self.last_question = ""
        self.last_event: TraceEvent | None = None
        self._adapter = TypeAdapter(TraceEvent)

    def poll(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        for line in complete.splitlines():
            try:
                event = self._adapter.validate_json(line)
            except ValueError:  # a torn or foreign line: the trace reader reports those, the view skips them
                continue
            self.last_event = event
            if isinstance(event, EvaluationDone):
                self.evaluations.append(event)
            elif isinstance(event, QuestionAsked):
                self.last_question = event.text


class RichDisplay:
    """A rich ``Live`` panel, refreshed on every update."""

    def __init__(self) -> None:
        from rich.live import Live

        self._live = Live(auto_refresh=False, transient=False)
        self._started = False

    def update(self, view: CampaignView) -> None:
        if not self._started:
            self._live.start()
            self._started = True
        self._live.update(_render(view), refresh=True)

    def pause(self) -> None:
        if self._started:
            self._live.stop()
            self._started = False

    def close(self) -> None:
        if self._started:
            self.pause()
            self._live.console.line()  # whatever is printed next starts below the last frame


def _render(view: CampaignView):  # -> rich renderable
    from rich.panel import Panel
    from rich.table import Table

    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    calls = f"{view.tool_calls}" + (f" / {view.tool_calls_limit}" if view.tool_calls_limit else "")
    table.add_row("session", f"{view.session} / {view.sessions_limit}")
    table.add_row("tool calls", calls)
    table.add_row("wall", f"{view.wall_s / 60:.1f} min" + (f"   cost ${view.cost_usd:.2f}" if view.cost_usd else ""))
    table.add_row("evaluations", str(view.evaluations))
    groups = "  ".join(f"{g} {r:.3f}x" for g, r in view.best_by_group.items()) or "none correct yet"
    table.add_row("best ratio", groups)
    table.add_row("last question", view.last_question[:160] or "-")
    table.add_row("last", view.last_activity[:160] or "-")
    title = f"quaere run: {view.task} with {view.agent} ({view.status})"
    return Panel(table, title=title, expand=True)
