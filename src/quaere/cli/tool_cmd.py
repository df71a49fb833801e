"""``quaere tool ...``: the tooled arm's tools, as bash commands the agent runs in its workspace (parsing only)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

TOOL_HELP = """The tooled arm's tools (quaere run --method tooled): run them in the workspace.

\b
  quaere tool profile [--config ID]       profiler digest of the current candidate
  quaere tool search WORDS...             search the documentation (CUDA notes, the task's pages, --docs)
  quaere tool lessons add TEXT [--tag T]  keep a lesson for later sessions
  quaere tool lessons list [WORDS...]     read the lessons (all, or those matching)
  quaere tool lineage                     every evaluated version, its parent and verdict
  quaere tool lineage show vN [--against vM]   a version's record and its diff
  quaere tool lineage checkout vN         branch from vN (the candidate file becomes vN)"""

tool_app = typer.Typer(help=TOOL_HELP, no_args_is_help=True, add_completion=False)
lessons_app = typer.Typer(help="Lessons the agent writes and reads.", no_args_is_help=True)
lineage_app = typer.Typer(help="The lineage of evaluated versions.", invoke_without_command=True)
tool_app.add_typer(lessons_app, name="lessons")
tool_app.add_typer(lineage_app, name="lineage")


def _say(call: Callable[[], str]) -> None:
    from quaere.methods.toolbox import ToolError

    try:
        typer.echo(call())
    except ToolError as exc:
        typer.echo(f"quaere tool: {exc}", err=True)
        raise typer.Exit(2) from None


@tool_app.command("profile")
def profile(
    config: Annotated[str | None, typer.Option("--config", help="Benchmark configuration for Nsight Compute "
                                                "(default: the one furthest from its roofline).")] = None,
) -> None:
    """Profiler digest: achieved vs roofline per configuration, registers/spills, instruction mix, ncu."""
    from quaere.evaluate.options import default_cache_dir
    from quaere.methods import toolbox

    _say(lambda: toolbox.profile(Path.cwd(), dict(os.environ), default_cache_dir(), config))


@tool_app.command("search")
def search(
    words: Annotated[list[str], typer.Argument(help="What to look for.")],
    docs: Annotated[list[Path] | None, typer.Option("--docs", help="Another documentation folder.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Sections to show.")] = 3,
) -> None:
    """Search the documentation folders (BM25 over their sections)."""
    from quaere.methods import toolbox

    _say(lambda: toolbox.search(Path.cwd(), " ".join(words), tuple(docs or ()), limit))


@lessons_app.command("add")
def lessons_add(
    text: Annotated[str, typer.Argument(help="The lesson, in a sentence or two.")],
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable).")] = None,
) -> None:
    """Keep a lesson (with the current candidate and its geomean as evidence)."""
    from quaere.methods import toolbox

    _say(lambda: toolbox.lessons_add(Path.cwd(), text, tuple(tag or ())))


@lessons_app.command("list")
def lessons_list(
    words: Annotated[list[str] | None, typer.Argument(help="Only lessons matching these.")] = None,
) -> None:
    """Every lesson, or the ones that best match WORDS."""
    from quaere.methods import toolbox

    _say(lambda: toolbox.lessons_show(Path.cwd(), " ".join(words) if words else None))


@lineage_app.callback()
def lineage(context: typer.Context) -> None:
    """Without a subcommand: list the versions."""
    if context.invoked_subcommand is None:
        from quaere.methods import toolbox

        _say(lambda: toolbox.lineage_list(Path.cwd()))


@lineage_app.command("show")
def lineage_show(
    version: Annotated[str, typer.Argument(help="v3, or a hash prefix.")],
    against: Annotated[str | None, typer.Option("--against", help="Diff against this version, not the parent.")] = None,
) -> None:
    """A version's record and its diff from its parent."""
    from quaere.methods import toolbox

    _say(lambda: toolbox.lineage_show(Path.cwd(), version, against))


@lineage_app.command("checkout")
def lineage_checkout(version: Annotated[str, typer.Argument(help="v3, or a hash prefix.")]) -> None:
    """Make VERSION the candidate file; the next evaluated version is its child."""
    from quaere.methods import toolbox

    _say(lambda: toolbox.lineage_checkout(Path.cwd(), version))


def register(app: typer.Typer) -> None:
    """Add ``quaere tool`` to ``app``."""
    app.add_typer(tool_app, name="tool")
