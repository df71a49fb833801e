"""The three arms behind the :class:`~quaere.methods.base.Method` seam, and :func:`make_method`.

Every arm has the same evaluator, goal, Stop hook and budgets. ``questions`` leaves the hooks as they are;
``goal-only`` silences the question picker and the moment detectors (the Stop hook still blocks with the
failing scenarios and their numbers, with no question); ``tooled`` silences them too, describes its
``quaere tool`` commands in every opening, and puts its supervisor around each session's hooks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from quaere.methods.base import Method, MethodError, NoMoments, NoQuestions
from quaere.methods.settings import TooledSettings
from quaere.records import MethodKind
from quaere.trace import MethodStarted, ToolState, TraceWriter, read_trace

if TYPE_CHECKING:
    from quaere.agents.base import HookSet
    from quaere.agents.config import CampaignConfig
    from quaere.hooks import HookDeps
    from quaere.methods.supervisor import Supervisor
    from quaere.workspace import Workspace

TOOLED_BRIEFING = """You also have tools, run as bash commands in this folder:
- `quaere tool profile [--config ID]`: a profiler digest of the current candidate (achieved vs roofline per \
configuration, registers and spills, instruction mix, Nsight Compute sections where available).
- `quaere tool search WORDS...`: search the documentation (CUDA notes, this task's pages{docs}).
- `quaere tool lessons add "TEXT"` and `quaere tool lessons list [WORDS...]`: keep what you learn and read it \
back; lessons carry over to later sessions ({lessons} so far).
- `quaere tool lineage`, `quaere tool lineage show vN`, `quaere tool lineage checkout vN`: every version the \
evaluator saw, with its verdict, parent and diff; branch from any of them.
A supervisor watches the evaluations and tells you when your edits go in circles."""


def record_start(workspace: Workspace, writer: TraceWriter, kind: MethodKind, tools: tuple[ToolState, ...]) -> None:
    """Write the ``method`` event; refuse a campaign whose trace already records another method."""
    earlier = {e.method for e in read_trace(workspace.trace).events if isinstance(e, MethodStarted)}
    if earlier - {kind}:
        ran = ", ".join(sorted(m.value for m in earlier))
        raise MethodError(f"{workspace.trace}: this campaign ran method '{ran}'; it cannot go on as '{kind.value}'")
    writer.write(MethodStarted(method=kind, tools=tools))


class QuestionsArm:
    """Today's campaign: the hooks ask the bank's (or a person's) questions at the five moments."""

    kind = MethodKind.QUESTIONS

    def start(self, workspace: Workspace, writer: TraceWriter) -> None:
        record_start(workspace, writer, self.kind, ())

    def briefing(self, workspace: Workspace, session: int) -> str:
        return ""

    def hooks(self, deps: HookDeps) -> HookDeps:
        return deps

    def session(self, hooks: HookSet, session: int) -> HookSet:
        return hooks


class GoalOnlyArm(QuestionsArm):
    """The control: the Stop hook and nothing else (no question at any moment, queued ones included)."""

    kind = MethodKind.GOAL_ONLY

    def hooks(self, deps: HookDeps) -> HookDeps:
        return dataclasses.replace(deps, questions=NoQuestions(), moments=NoMoments())


class TooledArm(GoalOnlyArm):
    """The AVO-style arm: tools the agent calls, and a supervisor; no questions."""

    kind = MethodKind.TOOLED

    def __init__(self, settings: TooledSettings, tools: tuple[ToolState, ...]) -> None:
        self.settings, self.tools = settings, tools
        self.writer: TraceWriter | None = None
        self.supervisor: Supervisor | None = None

    def start(self, workspace: Workspace, writer: TraceWriter) -> None:
        record_start(workspace, writer, self.kind, self.tools)
        self.writer = writer

    def briefing(self, workspace: Workspace, session: int) -> str:
        from quaere.methods.lessons import read_lessons

        docs = "".join(f", {d}" for d in self.settings.docs)
        return TOOLED_BRIEFING.format(docs=docs, lessons=len(read_lessons(workspace)[0]))

    def hooks(self, deps: HookDeps) -> HookDeps:
        from quaere.methods.supervisor import Supervisor

        self.supervisor = Supervisor(deps.workspace, self.settings, deps.read_evaluations)
        return super().hooks(deps)

    def session(self, hooks: HookSet, session: int) -> HookSet:
        from quaere.methods.supervisor import SupervisedHooks

        if self.supervisor is None or self.writer is None:
            raise RuntimeError("TooledArm.session before start() and hooks(): the campaign calls those first")
        return SupervisedHooks(hooks, self.supervisor, self.writer, session)


def plain_method(kind: MethodKind) -> Method:
    """The arms that need nothing from the machine; the tooled one is made by :func:`make_method`."""
    if kind is MethodKind.TOOLED:
        raise MethodError("--method tooled: build the arm with quaere.methods.arms.make_method(config, env)")
    return GoalOnlyArm() if kind is MethodKind.GOAL_ONLY else QuestionsArm()


def make_method(config: CampaignConfig, env: Mapping[str, str]) -> Method:
    """The arm ``config.method`` names, checked against this machine; MethodError (one line) when it cannot
    start: --docs or --source given to an arm that does not use them, a docs folder that does not exist,
    ``quaere`` missing from PATH for the tooled arm. A missing profiler is not an error (see machine.py)."""
    from quaere.methods.machine import check_docs, find_programs, require_quaere, tool_states
    from quaere.task import load_task

    kind = config.method
    if config.source == "human" and kind is not MethodKind.QUESTIONS:
        raise MethodError(f"--source human picks questions; --method {kind.value} asks none")
    if config.tooled.docs and kind is not MethodKind.TOOLED:
        raise MethodError(f"--docs is for --method tooled (its search tool); --method {kind.value} has no tools")
    if kind is not MethodKind.TOOLED:
        return plain_method(kind)
    docs = check_docs(config.tooled.docs)
    path = env.get("PATH", "")
    require_quaere(path)
    cuda = load_task(config.task).spec.device == "cuda"
    programs = find_programs(path, cuda)
    settings = config.tooled.model_copy(update={"docs": docs})
    return TooledArm(settings, tool_states(programs, cuda, docs))
