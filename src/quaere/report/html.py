"""A self-contained HTML page of a campaign report: summary, plot (PNG inlined as base64) and tables.

Every piece of text from the trace is escaped; the page loads nothing from anywhere.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from html import escape

from quaere.report import formatting as fmt
from quaere.report.attribution import GainGroup, QuestionGain
from quaere.report.campaign_report import CampaignReport

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1100px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
img.plot { max-width: 100%; border: 1px solid #ddd; }
.problems { color: #a33; }
"""


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: range | None = None) -> str:
    """An escaped table; columns in ``numeric`` (default: all but the first) are right-aligned."""
    numeric = numeric if numeric is not None else range(1, len(headers))
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(
            f'<td class="num">{escape(c)}</td>' if i in numeric else f"<td>{escape(c)}</td>"
            for i, c in enumerate(row)
        ) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _summary(report: CampaignReport) -> str:
    best = report.progress[-1].best_geomean if report.progress else None
    rows = [
        ("method", report.method.value if report.method else "not recorded"),
        *((f"tool: {t.name}", ("" if t.available else "ABSENT: ") + t.detail) for t in report.tools),
        ("evaluations", str(len(report.progress))),
        ("best geomean (correct candidates)", fmt.ratio(best)),
        ("tool calls", str(report.pacing.total_tool_calls)),
        ("questions", str(report.question_counts.total)),
        ("tool calls per question: mean / median",
         f"{fmt.number(report.pacing.mean)} / {fmt.number(report.pacing.median)}"),
        ("re-added-line churn",
         f"{fmt.share(report.churn.fraction)} ({report.churn.readded} of {report.churn.added} added lines)"),
        ("stop attempts / blocked / allowed",
         f"{report.stops.attempts} / {report.stops.blocked} / {report.stops.allowed}"),
    ]
    return table(("figure", "value"), rows)


def _final(report: CampaignReport) -> str:
    final = report.final
    if final is None:
        return "<p>No evaluation of the final candidate in the ledger.</p>"
    headers = ["scenario", "candidate ms"] + [f"vs {b}" for b in final.baselines]
    rows = [
        [row.scenario_id, fmt.number(row.candidate_ms, 4)]
        + [fmt.cell(row.baselines.get(b)) for b in final.baselines]
        for row in final.rows
    ]
    rows.append(["geomean", ""] + [fmt.ratio(final.geomean_by_baseline[b]) for b in final.baselines])
    status = "correct" if final.correct else f"NOT correct (failing: {', '.join(final.failing) or 'build/audit'})"
    intro = (f"<p>Candidate <code>{escape(fmt.short_hash(final.candidate_hash))}</code>: {escape(status)}, "
             f"{final.passed}/{final.total} correctness scenarios passed.</p>")
    return intro + table(headers, rows)


def _groups(groups: Sequence[GainGroup], title: str) -> str:
    rows = [(g.name, str(g.questions), str(g.with_gain), fmt.gain(g.total_gain), fmt.gain(g.mean_gain)) for g in groups]
    return table((title, "questions", "with gain", "total gain", "mean gain"), rows)


def _gains(gains: Sequence[QuestionGain]) -> str:
    rows = [
        (str(g.question.number), g.question.kind.value, g.question.group, g.question.moment.value,
         fmt.ratio(g.best_before), fmt.ratio(g.best_after),
         fmt.question_gain(g.gain, g.raw_gain, g.rejected.value if g.rejected else None), g.question.text)
        for g in gains
    ]
    return table(("#", "kind", "group", "moment", "best before", "best after", "gain", "question"), rows,
                  numeric=range(4, 7))


def _counts(report: CampaignReport) -> str:
    counts = report.question_counts
    moments = sorted(counts.by_moment)
    rows = [[group] + [str(cells.get(m, 0)) for m in moments] + [str(counts.by_group[group])]
            for group, cells in counts.by_group_and_moment.items()]
    return table(["group"] + moments + ["total"], rows)


def render_html(report: CampaignReport, plot_png: bytes | None) -> str:
    """The page for ``report``; ``plot_png`` is inlined (no plot section when None)."""
    k = report.attribution.k
    plot = ""
    if plot_png is not None:
        data = base64.b64encode(plot_png).decode("ascii")
        plot = (f'<h2>Best ratio over time</h2><img class="plot" alt="best ratio against tool calls" '
                f'src="data:image/png;base64,{data}">')
    problems = "".join(f"<li>{escape(p)}</li>" for p in report.problems)
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(report.title)}</title>",
        f"<style>{STYLE}</style></head><body><h1>{escape(report.title)}</h1>",
        _summary(report),
        plot,
        "<h2>Final candidate per scenario</h2>", _final(report),
        f"<h2>Gains after questions (next {k} evaluations)</h2>",
        _groups(report.attribution.by_kind, "kind"), _groups(report.attribution.by_group, "group"),
        "<h3>Questions before the largest gains</h3>", _gains(report.attribution.largest),
        "<h2>Questions by group and moment</h2>", _counts(report),
        "<h2>Every question</h2>", _gains(report.attribution.gains),
        f"<h2>Problems</h2><ul class='problems'>{problems}</ul>" if problems else "",
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p)
