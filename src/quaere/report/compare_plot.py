"""The comparison plot: best geomean against active minutes (left) and tool calls (right), one line per
campaign, one colour per method (PNG bytes; matplotlib's object API on the Agg canvas, as plots.py)."""

from __future__ import annotations

import io

from quaere.records import MethodKind
from quaere.report.compare import CampaignColumn, Comparison

METHOD_COLOUR: dict[MethodKind, str] = {
    MethodKind.QUESTIONS: "#1f5fbf",
    MethodKind.TOOLED: "#d62728",
    MethodKind.GOAL_ONLY: "#2ca02c",
}
OTHER_COLOURS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
FIGURE_SIZE_IN = (12.0, 5.0)
DPI = 100


def colours(comparison: Comparison) -> list[str]:
    """A colour per campaign: its method's, or (a second campaign of one method, or none) the next spare."""
    taken: set[str] = set()
    spare = iter(OTHER_COLOURS * 4)
    chosen = []
    for campaign in comparison.campaigns:
        colour = METHOD_COLOUR.get(campaign.method) if campaign.method else None
        if colour is None or colour in taken:
            colour = next(spare)
        taken.add(colour)
        chosen.append(colour)
    return chosen


def _series(campaign: CampaignColumn, axis: str) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for point in campaign.points:
        if point.best_geomean is not None:
            xs.append(point.minutes if axis == "minutes" else float(point.tool_calls))
            ys.append(point.best_geomean)
    end = campaign.wall_min if axis == "minutes" else float(campaign.tool_calls)
    if xs:  # carry the last best to the end of the campaign
        xs.append(max(end, xs[-1]))
        ys.append(ys[-1])
    return xs, ys


def compare_png(comparison: Comparison) -> bytes:
    """Render the comparison plot as PNG bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=FIGURE_SIZE_IN, dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, 2, sharey=True)
    for ax, axis, label in ((axes[0], "minutes", "active minutes"), (axes[1], "tool_calls", "tool calls")):
        for campaign, colour in zip(comparison.campaigns, colours(comparison), strict=True):
            xs, ys = _series(campaign, axis)
            if xs:
                ax.step(xs, ys, where="post", color=colour, linewidth=2.5, label=campaign.label)
        ax.set_xlabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(f"best geomean speedup over '{comparison.baseline}'")
    figure.suptitle(f"{comparison.task}: best ratio over the campaign")
    if axes[1].get_legend_handles_labels()[0]:
        axes[1].legend(loc="lower right", fontsize=9)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
