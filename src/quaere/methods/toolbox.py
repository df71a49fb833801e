"""The tooled arm's commands as library calls: ``quaere tool`` parses, these open the workspace and act.

Every function takes the folder the agent is in (the workspace is found upwards from it) and returns the
text the agent reads; bad input raises :class:`ToolError` with one line naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from quaere.methods import tool_text
from quaere.methods.docsearch import SHIPPED_DOCS, DocIndex, task_pages
from quaere.methods.lessons import LessonError, add_lesson, read_lessons, search_lessons
from quaere.methods.lineage import (
    LineageError,
    Version,
    build_lineage,
    checkout,
    diff,
    find_version,
    read_checkouts,
    tooled_dir,
)
from quaere.methods.settings import TooledSettings
from quaere.records import Evaluation
from quaere.task import Task
from quaere.workspace import Workspace, content_hash


class ToolError(ValueError):
    """The command cannot run here; one line says why (no workspace, an unknown version ...)."""


@dataclass(frozen=True)
class Bench:
    """What every command works on: the workspace, its task and its evaluations (the ledger, untrusted)."""

    workspace: Workspace
    task: Task
    evaluations: tuple[Evaluation, ...]

    def ratio(self, evaluation: Evaluation) -> float | None:
        from quaere.evaluate.summary import to_trace_event

        return to_trace_event(evaluation, self.task.spec).geomean_ratio

    def versions(self) -> tuple[Version, ...]:
        return build_lineage(self.evaluations, read_checkouts(self.workspace), self.ratio)


def open_bench(start: Path) -> Bench:
    from quaere.evaluate.ledger import read_ledger
    from quaere.task import TaskError, load_task
    from quaere.workspace import WorkspaceError, open_workspace

    try:
        workspace = open_workspace(start)
        task = load_task(workspace.task)
    except (WorkspaceError, TaskError) as exc:
        raise ToolError(str(exc)) from None
    evaluations = tuple(e for e in read_ledger(workspace.ledger).evaluations if e.task == task.spec.name)
    return Bench(workspace, task, evaluations)


def campaign_settings(workspace: Workspace) -> TooledSettings:
    """The tooled settings saved by ``quaere run`` in this workspace (defaults outside a campaign)."""
    from quaere.agents.state import StateError, load_state

    if not workspace.campaign_state.is_file():
        return TooledSettings()
    try:
        saved = load_state(workspace.campaign_state).config.get("tooled", {})
        return TooledSettings.model_validate(saved)
    except (StateError, ValueError):
        return TooledSettings()


def profile(start: Path, env: Mapping[str, str], cache_dir: Path, scenario: str | None) -> str:
    from quaere.methods.machine import find_programs
    from quaere.methods.profile import profile_candidate

    bench = open_bench(start)
    programs = find_programs(env.get("PATH", ""), bench.task.spec.device == "cuda")
    settings = campaign_settings(bench.workspace)
    digest = profile_candidate(bench.workspace, bench.task, programs, bench.evaluations, cache_dir, scenario,
                               settings.ncu_timeout_s)
    return tool_text.render_digest(digest)


def search(start: Path, query: str, extra_docs: tuple[Path, ...], limit: int) -> str:
    bench = open_bench(start)
    for folder in extra_docs:
        if not folder.is_dir():
            raise ToolError(f"--docs {folder}: no such folder")
    folders, sections = task_pages(bench.task.folder, bench.task.spec.description)
    saved = tuple(d for d in campaign_settings(bench.workspace).docs if d.is_dir())
    index = DocIndex.load([SHIPPED_DOCS, *folders, *saved, *extra_docs], sections,
                          tooled_dir(bench.workspace) / "docs-index.json")
    return tool_text.render_hits(index.search(query, limit), query)


def lessons_add(start: Path, text: str, tags: tuple[str, ...]) -> str:
    from quaere.trace import current_session, read_trace

    bench = open_bench(start)
    digest = content_hash(bench.workspace.candidate) if bench.workspace.candidate.is_file() else ""
    mine = [e for e in bench.evaluations if e.candidate_hash == digest]
    session = current_session(read_trace(bench.workspace.trace).events)
    try:
        lesson = add_lesson(bench.workspace, text, tags, session, digest, bench.ratio(mine[-1]) if mine else None)
    except LessonError as exc:
        raise ToolError(str(exc)) from None
    return f"lesson {lesson.number} kept"


def lessons_show(start: Path, query: str | None) -> str:
    lessons, problems = read_lessons(open_bench(start).workspace)
    chosen = search_lessons(lessons, query) if query else list(lessons)
    if query and not chosen:
        return f"no lesson matches '{query}' ({len(lessons)} lessons in all)"
    return tool_text.render_lessons(chosen, problems)


def lineage_list(start: Path) -> str:
    bench = open_bench(start)
    current = content_hash(bench.workspace.candidate) if bench.workspace.candidate.is_file() else ""
    return tool_text.render_lineage(bench.versions(), current)


def lineage_show(start: Path, name: str, against: str | None) -> str:
    bench = open_bench(start)
    versions = bench.versions()
    try:
        version = find_version(versions, name)
        base = find_version(versions, against or version.parent) if (against or version.parent) else None
        return tool_text.render_version(version, diff(bench.workspace, base, version))
    except LineageError as exc:
        raise ToolError(str(exc)) from None


def lineage_checkout(start: Path, name: str) -> str:
    bench = open_bench(start)
    try:
        result = checkout(bench.workspace, bench.versions(), name)
    except LineageError as exc:
        raise ToolError(str(exc)) from None
    stashed = f"; your unevaluated file was kept in {result.stashed}" if result.stashed else ""
    return (f"{bench.workspace.candidate_name} is now {result.version.name}; the next version you evaluate "
            f"branches from it{stashed}")
