"""Figures of a campaign from its trace (pure functions), plots, an HTML page, and the publication bundle.

Each figure lives in its own module and is a function of the trace events (and, for churn and the final
table, of the candidate sources and the ledger). ``plots`` and ``html`` import matplotlib lazily.
"""

from quaere.report.attribution import Attribution, GainGroup, QuestionGain, attribution
from quaere.report.campaign_report import DEFAULT_K, CampaignReport, build_report
from quaere.report.churn import Churn, Transition, churn, churn_of_campaign, line_changes, version_order
from quaere.report.counts import QuestionCounts, StopCounts, question_counts, stop_counts
from quaere.report.final_table import FinalRow, FinalTable, NoFinalEvaluation, final_table
from quaere.report.pacing import Pacing, tool_calls_per_question
from quaere.report.progress import ProgressPoint, best_ratio_over_time
from quaere.report.questions import AskedQuestion, Catalog, EntryClass, asked_questions

__all__ = [
    "DEFAULT_K",
    "AskedQuestion",
    "Attribution",
    "CampaignReport",
    "Catalog",
    "Churn",
    "EntryClass",
    "FinalRow",
    "FinalTable",
    "GainGroup",
    "NoFinalEvaluation",
    "Pacing",
    "ProgressPoint",
    "QuestionCounts",
    "QuestionGain",
    "StopCounts",
    "Transition",
    "asked_questions",
    "attribution",
    "best_ratio_over_time",
    "build_report",
    "churn",
    "churn_of_campaign",
    "final_table",
    "line_changes",
    "question_counts",
    "stop_counts",
    "tool_calls_per_question",
    "version_order",
]
