"""The comparison page (self-contained: the plot inlined, every text escaped) and its terminal summary."""

from __future__ import annotations

import base64
from html import escape

from rich.console import Console
from rich.markup import escape as rich_escape
from rich.table import Table

from quaere.report import formatting as fmt
from quaere.report.compare import CampaignColumn, Comparison
from quaere.report.html import STYLE, table


def _figures(campaign: CampaignColumn) -> list[str]:
    """The summary rows' values for one campaign, in the order of :data:`FIGURES`."""
    absent = [t.name for t in campaign.tools if not t.available]
    tools = ", ".join(f"{name} {count}" for name, count in campaign.quaere_tools.items())
    return [
        campaign.method.value if campaign.method else "not recorded",
        fmt.ratio(campaign.best_geomean),
        fmt.ratio(campaign.final_geomean) + ("" if campaign.final_correct in (True, None) else " (NOT correct)"),
        str(campaign.evaluations),
        str(campaign.tool_calls),
        str(campaign.gains),
        fmt.number(campaign.tool_calls_per_gain),
        f"{fmt.share(campaign.churn.fraction)} ({campaign.churn.readded} of {campaign.churn.added})",
        fmt.number(campaign.wall_min),
        str(campaign.questions),
        str(campaign.supervisor_notes),
        tools or "-",
        ", ".join(absent) or "-",
    ]


FIGURES = (
    "method", "best geomean (correct)", "final candidate geomean", "evaluations", "tool calls", "gains",
    "tool calls per gain", "re-added-line churn", "active minutes", "questions asked", "supervisor notes",
    "quaere tool calls", "tools absent on the machine",
)


def _rows(comparison: Comparison) -> list[list[str]]:
    values = [_figures(c) for c in comparison.campaigns]
    return [[name] + [v[i] for v in values] for i, name in enumerate(FIGURES)]


def _final_rows(comparison: Comparison) -> list[list[str]]:
    rows = [[config] + [fmt.ratio(c.final_ratios.get(config)) for c in comparison.campaigns]
            for config in comparison.configurations]
    return rows + [["geomean"] + [fmt.ratio(c.final_geomean) for c in comparison.campaigns]]


def _tools(comparison: Comparison) -> str:
    rows = [(c.label, t.name, "yes" if t.available else "ABSENT", t.detail) for c in comparison.campaigns
            for t in c.tools]
    return table(("campaign", "tool", "available", "detail"), rows, numeric=range(0)) if rows else ""


def render_compare_html(comparison: Comparison, plot_png: bytes | None) -> str:
    """The page for ``comparison``; ``plot_png`` is inlined (no plot section when None)."""
    title = f"{comparison.task}: {len(comparison.campaigns)} campaigns compared"
    labels = [c.label for c in comparison.campaigns]
    plot = ""
    if plot_png is not None:
        data = base64.b64encode(plot_png).decode("ascii")
        plot = ('<h2>Best ratio over time and over tool calls</h2><img class="plot" alt="best geomean against '
                f'active minutes and tool calls, one line per campaign" src="data:image/png;base64,{data}">')
    problems = "".join(f"<li>{escape(p)}</li>" for p in comparison.problems)
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}</title>",
        f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>",
        table(["figure", *labels], _rows(comparison)),
        plot,
        f"<h2>Final candidate per configuration (speedup over '{escape(comparison.baseline)}')</h2>",
        table(["configuration", *labels], _final_rows(comparison)),
        "<h2>Tools as each machine had them</h2>", _tools(comparison),
        f"<h2>Problems</h2><ul class='problems'>{problems}</ul>" if problems else "",
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p)


def print_comparison(comparison: Comparison, console: Console) -> None:
    """The summary table and the final per-configuration table in the terminal."""
    summary = Table(title=f"{comparison.task}: campaigns compared")
    final = Table(title=f"final candidate per configuration (speedup over '{comparison.baseline}')")
    for target, first in ((summary, "figure"), (final, "configuration")):
        target.add_column(first)
        for campaign in comparison.campaigns:
            target.add_column(rich_escape(campaign.label), justify="right")
    for row in _rows(comparison):
        summary.add_row(*map(rich_escape, row))
    for row in _final_rows(comparison):
        final.add_row(*map(rich_escape, row))
    console.print(summary)
    console.print(final)
    for problem in comparison.problems:
        console.print(f"[yellow]note:[/yellow] {rich_escape(problem)}")
