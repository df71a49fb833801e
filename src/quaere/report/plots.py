"""The progress plot: best ratio against tool calls, each question marked by its kind (PNG bytes).

matplotlib is imported inside the function, on its object API with the Agg canvas: no pyplot state, no
backend chosen at import time.
"""

from __future__ import annotations

import io

from quaere.records import QuestionKind
from quaere.report.campaign_report import CampaignReport

GEOMEAN_COLOUR = "#1f5fbf"
SCENARIO_COLOUR = "#b0b0b0"
KIND_STYLE: dict[QuestionKind, tuple[str, str]] = {
    QuestionKind.LEVEL_SHIFT: ("^", "#d62728"),
    QuestionKind.LIMIT_CHALLENGE: ("s", "#ff7f0e"),
    QuestionKind.INFORMATION: ("o", "#2ca02c"),
}
FIGURE_SIZE_IN = (10.0, 5.5)
DPI = 100


def _step_series(report: CampaignReport, scenario: str | None) -> tuple[list[int], list[float]]:
    xs, ys = [], []
    for point in report.progress:
        value = point.best_geomean if scenario is None else point.best_by_scenario.get(scenario)
        if value is not None:
            xs.append(point.tool_calls)
            ys.append(value)
    return xs, ys


def _end_x(report: CampaignReport) -> int:
    return max([report.pacing.total_tool_calls] + [p.tool_calls for p in report.progress])


def progress_png(report: CampaignReport) -> bytes:
    """Render the progress plot of ``report`` as PNG bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=FIGURE_SIZE_IN, dpi=DPI)
    FigureCanvasAgg(figure)
    ax = figure.add_subplot(1, 1, 1)
    end = _end_x(report)
    scenarios = sorted({s for p in report.progress for s in p.best_by_scenario})
    for index, scenario in enumerate(scenarios):
        xs, ys = _step_series(report, scenario)
        ax.step(xs + [end], ys + ys[-1:], where="post", color=SCENARIO_COLOUR, linewidth=0.8,
                label="best per configuration" if index == 0 else None)
    xs, ys = _step_series(report, None)
    if xs:
        ax.step(xs + [end], ys + ys[-1:], where="post", color=GEOMEAN_COLOUR, linewidth=2.5, label="best geomean")
    floor = min(ys) if ys else 1.0
    for kind, (marker, colour) in KIND_STYLE.items():
        mine = [g for g in report.attribution.gains if g.question.kind is kind]
        if mine:
            ax.scatter([g.question.tool_calls_before for g in mine],
                       [g.best_before if g.best_before is not None else floor for g in mine],
                       marker=marker, color=colour, s=70, zorder=3, edgecolors="black", linewidths=0.6,
                       label=f"question: {kind.value}")
    ax.set_xlabel("tool calls")
    ax.set_ylabel("speedup over the goal baseline")
    ax.set_title(f"{report.title}: best ratio over the campaign")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=9)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
