"""``quaere bank lint|stats|list|show`` and ``quaere ask``: parse, call :mod:`quaere.questions`, print."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from quaere.cli.refusal import EXIT_NOTHING_FOUND, refuse
from quaere.questions.ask import NoMomentHolds, ask_view, load_task_spec, record_question
from quaere.questions.bank import Bank, BankError, lint_dir, load_bank, shipped_bank_dir, stats
from quaere.questions.queue import QueueError, store_queue
from quaere.questions.schema import BankEntry, provenance_note
from quaere.questions.situation import context_of
from quaere.questions.sources import OwnText, Pick, resolve_reply
from quaere.records import Moment, QuestionKind
from quaere.store import Store, StoreError, default_store_root
from quaere.task.spec import TaskError
from quaere.workspace import WorkspaceError, open_workspace

bank_app = typer.Typer(help="The question bank: lint, counts, listing and single entries.", no_args_is_help=True)

BankDir = Annotated[Path | None, typer.Option("--dir", help="A folder of bank YAML files (default: the shipped bank).")]


def _console() -> Console:
    return Console(highlight=False)


def _load(directory: Path | None) -> Bank:
    try:
        return load_bank(directory)
    except BankError as exc:
        raise refuse(f"{exc}\n(run 'quaere bank lint' for the full list)") from None


@bank_app.command("lint")
def lint_command(directory: BankDir = None) -> None:
    """Check schema, ids, near duplicates, counts, question form, neutrality and moment coverage; exit 1 on problems."""
    target = directory if directory is not None else shipped_bank_dir()
    if directory is not None and not directory.is_dir():
        raise refuse(f"{directory}: not a folder")
    problems = lint_dir(target)
    for problem in problems:
        typer.echo(str(problem))
    if problems:
        typer.echo(f"{len(problems)} problem(s) in {target}", err=True)
        raise typer.Exit(1)
    typer.echo(f"bank OK: {target}")


def _count_table(title: str, counts: dict[str, int], key_name: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(key_name)
    table.add_column("entries", justify="right")
    for key, count in sorted(counts.items()):
        table.add_row(key, str(count))
    table.add_row("total", str(sum(counts.values())), style="bold")
    return table


@bank_app.command("stats")
def stats_command(directory: BankDir = None) -> None:
    """Counts by set, core group, kind, moment and provenance."""
    bank = _load(directory)
    s = stats(bank.entries)
    console = _console()
    core, comparison, arch = (s.by_set.get(k, 0) for k in ("core", "comparison", "arch"))
    console.print(f"core {core} / comparison {comparison} / arch {arch}; {len(s.core_by_group)} core groups")
    groups = Table(title="core groups", title_justify="left")
    for column in ("group", "entries", "title"):
        groups.add_column(column, justify="right" if column == "entries" else "left")
    for group, count in sorted(s.core_by_group.items()):
        groups.add_row(group, str(count), bank.titles.get(group, ""))
    console.print(groups)
    console.print(_count_table("core provenance", s.core_by_provenance, "provenance"))
    console.print(_count_table("all provenance", s.by_provenance, "provenance"))
    console.print(_count_table("kind (all sets)", s.by_kind, "kind"))
    console.print(_count_table("moment (an entry counts once per moment it fits)", s.by_moment, "moment"))
    console.print(_count_table("architecture entries", s.arch_by_arch, "arch"))


@bank_app.command("list")
def list_command(
    group: Annotated[str | None, typer.Option("--group", "-g", help="Only this group.")] = None,
    moment: Annotated[Moment | None, typer.Option("--moment", "-m", help="Only entries fitting this moment.")] = None,
    directory: BankDir = None,
) -> None:
    """One row per entry: id, kind, moments, question."""
    bank = _load(directory)
    entries = [
        e for e in bank.entries if (group is None or e.group == group) and (moment is None or moment in e.moments)
    ]
    if not entries:
        groups = sorted({e.group for e in bank.entries})
        raise refuse(f"no entries match; groups are {groups}", EXIT_NOTHING_FOUND)
    table = Table(show_lines=False)
    for column in ("id", "kind", "moments", "question"):
        _add_column(table, column)
    for e in entries:
        table.add_row(e.id, e.kind.value, ", ".join(m.value for m in e.moments), e.question)
    _console().print(table)


@bank_app.command("show")
def show_command(
    entry_id: Annotated[str, typer.Argument(help="The entry's id, e.g. measure.cycles-vs-wall.")],
    directory: BankDir = None,
) -> None:
    """Every field of one entry."""
    bank = _load(directory)
    try:
        e = bank.by_id(entry_id)
    except KeyError as exc:
        raise refuse(str(exc.args[0])) from None
    width = _console().width
    for label, value in (
        ("id", e.id),
        ("group", f"{e.group} ({e.set.value})"),
        ("question", e.question),
        ("evidence", e.evidence),
        ("kind", e.kind.value),
        ("moments", ", ".join(m.value for m in e.moments)),
        ("asked when", _conditions(e)),
        ("provenance", provenance_note(e.provenance)),
    ):
        typer.echo(textwrap.fill(value, width=width, initial_indent=f"{label:>10}: ", subsequent_indent=" " * 12))


def _conditions(e: BankEntry) -> str:
    w = e.when
    parts = [
        *(["the task has a comparison implementation"] if w.comparison else []),
        *([f"the architecture is {' or '.join(w.arch)}"] if w.arch else []),
        *(["the task runs on a GPU"] if w.device == "gpu" else []),
        *([f"correctness is {w.correctness}"] if w.correctness != "any" else []),
        *([f"the agent claimed {' or '.join(w.claims)}"] if w.claims else []),
        *([f"the roofline floor is {w.floor}"] if w.floor != "any" else []),
        *([f"at least {w.min_evaluations} evaluations ran"] if w.min_evaluations else []),
    ]
    return "; ".join(parts) or "always (at its moments)"


def ask(
    pick: Annotated[int | None, typer.Option("--pick", help="Ask suggestion N (1-based) of those shown.")] = None,
    text: Annotated[str | None, typer.Option("--text", help="Ask your own question.")] = None,
    kind: Annotated[
        QuestionKind | None, typer.Option("--kind", help="Kind of your own question (with --text).")
    ] = None,
    moment: Annotated[
        Moment | None, typer.Option("--moment", "-m", help="Suggest for this moment instead of the detected one.")
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed of the tie-breaks (default: the workspace's, as the hooks use).")
    ] = None,
    path: Annotated[Path, typer.Option("--workspace", "-w", help="A folder inside the workspace.")] = Path("."),
) -> None:
    """Say which moment holds now and why, suggest three questions; with --pick/--text, record and queue one."""
    if pick is not None and text is not None:
        raise refuse("use either --pick or --text, not both")
    try:
        ws = open_workspace(path)
        context = context_of(load_task_spec(ws))
        view = ask_view(ws, load_bank(), context, moment, seed)
    except (WorkspaceError, TaskError, BankError, NoMomentHolds) as exc:
        raise refuse(str(exc)) from None
    for problem in view.trace_problems:  # a torn or unknown line is reported, never fatal
        typer.echo(f"trace: {problem}", err=True)
    console = _console()
    for check in view.checks:
        mark = "[bold green]holds[/]" if check.holds else "[dim]no[/]"
        console.print(f"{check.moment.value:>18}  {mark}  [dim]{check.evidence}[/]", markup=True)
    console.print(f"\nmoment: [bold]{view.moment.value}[/] — {view.evidence}", markup=True)
    console.print(f"task: {context.task} (arch {context.arch}, comparison {'yes' if context.has_comparison else 'no'})")
    table = Table(title="suggestions", title_justify="left")
    for column in ("#", "id", "kind", "question", "why"):
        _add_column(table, column)
    for s in view.suggestions:
        table.add_row(str(s.rank), s.entry.id, s.entry.kind.value, s.entry.question, s.reason)
    console.print(table)
    if pick is None and text is None:
        return
    try:
        reply = Pick(index=pick) if pick is not None else OwnText(text=(text or "").strip(), kind=kind)
        chosen = resolve_reply(view.moment, view.suggestions, reply)
    except ValueError as exc:
        raise refuse(str(exc)) from None
    try:
        store = Store(default_store_root(os.environ))
        record_question(ws, store_queue(store, ws.id), chosen, view.session)
    except (StoreError, QueueError) as exc:
        raise refuse(f"the question was not queued: {exc}") from None
    typer.echo(f"asked ({chosen.entry_id or 'own text'}), queued for the next stop: {chosen.text}")


def _add_column(table: Table, column: str) -> None:
    """Ids stay on one line (they are copied into ``bank show`` and ``ask --pick``); the prose folds to fit
    the terminal's width."""
    table.add_column(column, no_wrap=column == "id", overflow="fold")


def register(app: typer.Typer) -> None:
    """Add ``bank`` and ``ask`` to ``app``."""
    app.add_typer(bank_app, name="bank")
    app.command("ask")(ask)
