"""The whole report of one campaign: every figure, computed by the pure functions of this package."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from quaere.records import Evaluation, MethodKind
from quaere.report.attribution import Attribution, attribution
from quaere.report.churn import Churn, churn_of_campaign
from quaere.report.counts import QuestionCounts, StopCounts, question_counts, stop_counts
from quaere.report.final_table import FinalTable, NoFinalEvaluation, final_table
from quaere.report.method_check import recorded_method, recorded_tools
from quaere.report.pacing import Pacing, tool_calls_per_question
from quaere.report.progress import ProgressPoint, best_ratio_over_time
from quaere.report.questions import AskedQuestion, Catalog, asked_questions, unknown_entries
from quaere.trace import ToolState

DEFAULT_K = 3


class CampaignReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    title: str
    progress: tuple[ProgressPoint, ...]
    questions: tuple[AskedQuestion, ...]
    pacing: Pacing
    churn: Churn
    attribution: Attribution
    question_counts: QuestionCounts
    stops: StopCounts
    final: FinalTable | None
    """None when the ledger holds no evaluation of the final candidate (said in ``problems``)."""
    problems: tuple[str, ...]
    method: MethodKind | None = None
    """The method the trace records (None: a trace from before methods were recorded)."""
    tools: tuple[ToolState, ...] = ()
    """The tooled arm's tools as the machine had them (a missing profiler is said here)."""


def build_report(
    events: Sequence[object],
    evaluations: Sequence[Evaluation],
    sources: Mapping[str, bytes],
    catalog: Catalog,
    final_hash: str | None,
    k: int = DEFAULT_K,
    title: str = "quaere campaign",
    problems: Sequence[str] = (),
) -> CampaignReport:
    """Compute every figure from the trace ``events``, the ledger and the candidate sources."""
    notes = list(problems)
    questions = asked_questions(events, catalog)
    for entry_id in unknown_entries(questions):
        notes.append(f"bank entry '{entry_id}' is not in the bank: counted as group 'not-in-bank', kind information")
    final: FinalTable | None = None
    if final_hash is None:
        notes.append("the ledger holds no evaluation: no final table")
    else:
        try:
            final = final_table(evaluations, final_hash)
        except NoFinalEvaluation as exc:
            notes.append(str(exc))
    churn = churn_of_campaign(events, dict(sources))
    if churn.missing_versions:
        notes.append(f"{len(churn.missing_versions)} evaluated version(s) have no stored source: left out of churn")
    return CampaignReport(
        title=title,
        progress=best_ratio_over_time(events),
        questions=questions,
        pacing=tool_calls_per_question(events),
        churn=churn,
        attribution=attribution(events, questions, k),
        question_counts=question_counts(questions),
        stops=stop_counts(events),
        final=final,
        problems=tuple(notes),
        method=recorded_method(events),
        tools=recorded_tools(events),
    )
