"""The seam between a campaign and its method: what the agent is told, which hooks ask, which tools exist.

The campaign calls four things of a :class:`Method` and nothing else: :meth:`~Method.start` once per run
(records the method and its tools in the trace), :meth:`~Method.briefing` at every session's opening,
:meth:`~Method.hooks` on the hook handlers' dependencies (a method without questions swaps the picker and
the moment detectors for silent ones), and :meth:`~Method.session` around each session's hook set (the
tooled arm's supervisor speaks there). The evaluator, the goal, the Stop hook and the budgets are the
same for every method.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from quaere.questions.sources import ChosenQuestion, NoQuestion
from quaere.records import MethodKind, Moment

if TYPE_CHECKING:
    from quaere.agents.base import HookSet
    from quaere.hooks.handlers import HookDeps
    from quaere.trace import TraceEvent, TraceWriter
    from quaere.workspace import Workspace


class MethodError(ValueError):
    """A method cannot start here (a docs folder that does not exist, a program it needs); one line says which."""


class Method(Protocol):
    """One arm of a comparison, as the campaign drives it."""

    kind: MethodKind

    def start(self, workspace: Workspace, writer: TraceWriter) -> None:
        """A run of the campaign begins in ``workspace``: write the ``method`` event (with its tools)."""
        ...

    def briefing(self, workspace: Workspace, session: int) -> str:
        """Text added to the opening message of ``session`` ("" for none)."""
        ...

    def hooks(self, deps: HookDeps) -> HookDeps:
        """The hook handlers' dependencies for this method (questions and moments on, or silenced)."""
        ...

    def session(self, hooks: HookSet, session: int) -> HookSet:
        """The hook set a backend drives in ``session`` (``hooks`` itself, or a wrapper around it)."""
        ...


class NoQuestions:
    """A question picker that never asks: not even a question a person queued with ``quaere ask``."""

    def pick(self, moment: Moment, evidence: str) -> ChosenQuestion | NoQuestion:
        return NoQuestion(moment=moment, reason="this method asks no questions")


class NoMoments:
    """Moment detectors that never fire after a tool call (no question would follow one)."""

    def detect(self, events: Sequence[TraceEvent], now: float) -> list[tuple[Moment, str]]:
        return []
