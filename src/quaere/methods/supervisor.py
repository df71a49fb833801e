"""The tooled arm's supervisor: it watches the evaluations for loops of failed edits and says so, generically.

Two loops are recognized on the latest evaluation, the way AVO-style agents' supervisors do:

- **same failure**: the last ``same_failure_repeats`` evaluations failed the same way (a failed build, the
  same audit rules, or the same set of correctness verdicts), and the streak just reached a multiple of it;
- **re-added lines**: the newest version puts back at least ``readded_min_lines`` non-blank lines that an
  earlier version had deleted (the re-added-line churn of :mod:`quaere.report.churn`, one transition).

Either way the agent gets the same generic note (never a hint about the kernel: that would be a question),
and the trace a ``supervisor`` event. Re-timing runs and build-only runs are neither failures nor successes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from quaere.agents.base import HookSet, StopAnswer, ToolAnswer
from quaere.methods.settings import TooledSettings
from quaere.records import Evaluation
from quaere.report.churn import churn
from quaere.report.inputs import read_sources
from quaere.trace import Event, SupervisorNote, TraceWriter
from quaere.workspace import Workspace

NOTE = (
    "quaere supervisor: {evidence}. This line of edits is going in circles. Change approach: re-read the last "
    "failing output, question the assumption behind these edits, and try a different idea, or branch from a "
    "version that worked (`quaere tool lineage`, then `quaere tool lineage checkout vN`)."
)
EvaluationReader = Callable[[], tuple[Sequence[Evaluation], Sequence[str]]]


@dataclass(frozen=True)
class Loop:
    kind: Literal["same_failure", "readded_lines"]
    evidence: str


def failure_of(evaluation: Evaluation) -> str | None:
    """How an evaluation failed, as a comparable signature; None when it passed (or checked nothing)."""
    if not evaluation.built:
        return "build_failed"
    if evaluation.audit:
        return "audit: " + ", ".join(sorted({f.rule for f in evaluation.audit}))
    verdicts = sorted({v.verdict.value for v in evaluation.failing()})
    return ", ".join(verdicts) if verdicts else None


def judged(evaluations: Sequence[Evaluation]) -> list[Evaluation]:
    """The evaluations that judged an edit: a failed build or audit, or a run of the correctness scenarios."""
    return [e for e in evaluations if not e.audit_clean or e.correctness]


def same_failure(evaluations: Sequence[Evaluation], repeats: int) -> Loop | None:
    """A loop when the latest streak of identical failures has just reached a multiple of ``repeats``."""
    if not evaluations:
        return None
    signature = failure_of(evaluations[-1])
    if signature is None:
        return None
    streak = 0
    for evaluation in reversed(evaluations):
        if failure_of(evaluation) != signature:
            break
        streak += 1
    if streak % repeats:
        return None
    return Loop("same_failure", f"the last {streak} evaluations all failed the same way ({signature})")


def readded_lines(evaluations: Sequence[Evaluation], sources: dict[str, bytes], min_lines: int) -> Loop | None:
    """A loop when the newest version re-adds at least ``min_lines`` lines deleted by an earlier version."""
    order: list[str] = []
    for evaluation in evaluations:
        if not order or order[-1] != evaluation.candidate_hash:
            order.append(evaluation.candidate_hash)
    versions = [(h, sources[h]) for h in order if h in sources]
    if len(versions) < 3 or versions[-1][0] != evaluations[-1].candidate_hash:
        return None
    last = churn(versions).transitions[-1]
    if last.to_hash != evaluations[-1].candidate_hash or last.readded < min_lines:
        return None
    return Loop("readded_lines", f"the newest version puts back {last.readded} of its {last.added} added lines "
                                 "that an earlier version had deleted")


class Supervisor:
    """Checks each new evaluation once; evaluations made before it started are history, not loops."""

    def __init__(self, workspace: Workspace, settings: TooledSettings, read: EvaluationReader) -> None:
        self.workspace, self.settings, self.read = workspace, settings, read
        self.seen = len(read()[0])

    def check(self) -> Loop | None:
        evaluations = list(self.read()[0])
        if len(evaluations) <= self.seen:
            return None
        self.seen = len(evaluations)
        edits = judged(evaluations)
        if not edits or edits[-1] is not evaluations[-1]:
            return None
        loop = same_failure(edits, self.settings.same_failure_repeats)
        if loop is not None:
            return loop
        hashes = tuple(dict.fromkeys(e.candidate_hash for e in edits))
        sources = read_sources(self.workspace.candidates_dir, hashes)
        return readded_lines(edits, sources, self.settings.readded_min_lines)


@dataclass
class SupervisedHooks:
    """A session's hook set with the supervisor's note added after the tool call that shows a loop."""

    inner: HookSet  # the campaign's own hook set for the session
    supervisor: Supervisor
    writer: TraceWriter
    session: int

    def record(self, event: Event) -> None:
        self.inner.record(event)

    def on_prompt(self, prompt: str) -> str:
        return self.inner.on_prompt(prompt)

    def after_tool(self, tool: str, tool_input: dict[str, Any], output: str) -> ToolAnswer:
        answer = self.inner.after_tool(tool, tool_input, output)
        loop = self.supervisor.check()
        if loop is None:
            return answer
        note = NOTE.format(evidence=loop.evidence)
        self.writer.write(SupervisorNote(session=self.session, loop=loop.kind, evidence=loop.evidence, text=note))
        context = f"{answer.context}\n\n{note}" if answer.context else note
        return ToolAnswer(context=context, halt=answer.halt, halt_reason=answer.halt_reason)

    def on_stop(self, last_message: str) -> StopAnswer:
        return self.inner.on_stop(last_message)
