"""Which method a campaign ran, read from its trace, and the checks ``quaere verify`` makes of it.

The trace's ``method`` events (one per start or resume) name the arm; a bundle's manifest repeats it. A
bundle passes when the trace records exactly one method, the manifest names the same one, and an arm that
asks no questions (goal-only, tooled) has no question in its trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from quaere.records import MethodKind
from quaere.trace import MethodStarted, QuestionAsked, ToolState, read_trace

SILENT_ARMS = (MethodKind.GOAL_ONLY, MethodKind.TOOLED)


class MethodIssue(str, Enum):
    NOT_RECORDED = "method_not_recorded"  # the manifest names a method, the trace records none
    MIXED = "methods_mixed"  # the trace records more than one method
    MISMATCH = "method_mismatch"  # the trace and the manifest disagree
    QUESTIONS_ASKED = "questions_in_silent_arm"  # a goal-only or tooled campaign's trace holds questions


@dataclass(frozen=True)
class MethodFinding:
    issue: MethodIssue
    detail: str


def recorded_methods(events: Sequence[object]) -> tuple[MethodKind, ...]:
    """Every method the trace's ``method`` events name, in order of first appearance."""
    return tuple(dict.fromkeys(e.method for e in events if isinstance(e, MethodStarted)))


def recorded_method(events: Sequence[object]) -> MethodKind | None:
    """The campaign's method (the last one recorded); None for a trace from before methods were recorded."""
    methods = recorded_methods(events)
    return methods[-1] if methods else None


def recorded_tools(events: Sequence[object]) -> tuple[ToolState, ...]:
    """The tools the latest ``method`` event found on the machine (empty for the arms without tools)."""
    starts = [e for e in events if isinstance(e, MethodStarted)]
    return starts[-1].tools if starts else ()


def check_method(events: Sequence[object], manifest_method: str | None) -> tuple[MethodFinding, ...]:
    """What is wrong between the trace's method, the manifest's and the questions the trace holds."""
    methods = recorded_methods(events)
    findings: list[MethodFinding] = []
    if len(methods) > 1:
        findings.append(MethodFinding(MethodIssue.MIXED, ", ".join(m.value for m in methods)))
    if not methods and manifest_method is not None:
        findings.append(MethodFinding(MethodIssue.NOT_RECORDED, f"the manifest says '{manifest_method}'"))
    elif methods and methods[-1].value != manifest_method:
        findings.append(MethodFinding(MethodIssue.MISMATCH,
                                      f"the trace says '{methods[-1].value}', the manifest '{manifest_method}'"))
    questions = sum(1 for e in events if isinstance(e, QuestionAsked))
    silent = [m for m in methods if m in SILENT_ARMS]
    if silent and questions:
        findings.append(MethodFinding(MethodIssue.QUESTIONS_ASKED,
                                      f"a {silent[0].value} campaign's trace holds {questions} question(s)"))
    return tuple(findings)


def check_bundle_method(bundle: Path, manifest: dict) -> tuple[str | None, tuple[MethodFinding, ...]]:
    """(the manifest's method, findings) for a bundle; a bundle written before methods existed has no
    ``method`` key and is not checked; ``null`` means a campaign that recorded none (nor may its trace)."""
    if "method" not in manifest:
        return None, ()
    method = manifest["method"]
    return method, check_method(read_trace(bundle / "trace.jsonl").events, method)
