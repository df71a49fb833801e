"""The report in the terminal: a short rich summary of the same figures as the HTML page."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from quaere.report import formatting as fmt
from quaere.report.campaign_report import CampaignReport


def _final_table(report: CampaignReport) -> Table | None:
    final = report.final
    if final is None:
        return None
    table = Table(title=f"final candidate {fmt.short_hash(final.candidate_hash)} "
                        f"({final.passed}/{final.total} correct)")
    table.add_column("scenario")
    table.add_column("ms", justify="right")
    for name in final.baselines:
        table.add_column(f"vs {name}", justify="right")
    for row in final.rows:
        cells = [fmt.cell(row.baselines.get(b)) for b in final.baselines]
        table.add_row(escape(row.scenario_id), fmt.number(row.candidate_ms, 4), *cells)
    table.add_row("geomean", "", *[fmt.ratio(final.geomean_by_baseline[b]) for b in final.baselines])
    return table


def _kind_table(report: CampaignReport) -> Table:
    table = Table(title=f"gain in best geomean over the next {report.attribution.k} evaluations")
    for column in ("kind / group", "questions", "with gain", "total gain"):
        table.add_column(column, justify="left" if column == "kind / group" else "right")
    for group in report.attribution.by_kind + report.attribution.by_group:
        table.add_row(escape(group.name), str(group.questions), str(group.with_gain), fmt.gain(group.total_gain))
    return table


def print_summary(report: CampaignReport, console: Console) -> None:
    """Print the headline figures, the final table and the attribution table to ``console``."""
    best = report.progress[-1].best_geomean if report.progress else None
    console.print(f"[bold]{escape(report.title)}[/bold]")
    console.print(f"method: {report.method.value if report.method else 'not recorded'}")
    for tool in report.tools:
        if not tool.available:
            console.print(f"[yellow]tool {escape(tool.name)} absent:[/yellow] {escape(tool.detail)}")
    console.print(
        f"evaluations {len(report.progress)}, best geomean {fmt.ratio(best)}, tool calls "
        f"{report.pacing.total_tool_calls}, questions {report.question_counts.total}"
    )
    console.print(
        f"tool calls per question: mean {fmt.number(report.pacing.mean)}, median {fmt.number(report.pacing.median)}"
    )
    console.print(f"re-added-line churn: {fmt.share(report.churn.fraction)} "
                  f"({report.churn.readded} of {report.churn.added} added lines)")
    stops = report.stops
    console.print(f"stop attempts {stops.attempts}: blocked {stops.blocked}, allowed {stops.allowed}")
    final = _final_table(report)
    if final is not None:
        console.print(final)
    console.print(_kind_table(report))
    for gain in report.attribution.largest:
        q = gain.question
        label = escape(f"[{q.kind.value}, {q.group}, {q.moment.value}] {q.text}")
        console.print(f"  {fmt.gain(gain.gain)} after #{q.number} {label}")
    rejected = [g for g in report.attribution.gains if g.rejected is not None]
    if rejected:
        reasons = ", ".join(f"{fmt.REJECTION_WORDS[r.value]}: {sum(g.rejected is r for g in rejected)}"
                            for r in dict.fromkeys(g.rejected for g in rejected))
        console.print(f"not counted as gains: {len(rejected)} rise(s) of the best after a question ({reasons})")
    for problem in report.problems:
        console.print(f"[yellow]note:[/yellow] {escape(problem)}")
