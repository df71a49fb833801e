"""``quaere eval`` (build, audit, correctness, timing of one candidate) and ``quaere init`` (a workspace)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

EXIT_NOT_CORRECT = 1
EXIT_BAD_INPUT = 2


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def eval_command(
    candidate: Annotated[Path | None, typer.Argument(help="Kernel source; default: the workspace's candidate, "
                                                     "or the task's initial kernel outside a workspace.")] = None,
    task: Annotated[str | None, typer.Option("--task", help="Shipped task name or task folder; default: the "
                    "workspace's, else flash_attention_hopper with a GPU, cpu_softmax without.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object: the ledger record, with "
                       "NaN written as null (strict JSON).")] = False,
    scenarios: Annotated[Path | None, typer.Option("--scenarios", help='JSON list [{"id": ..., "params": {...}}] '
                         "replacing the task's correctness scenarios.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", min=0, help="Seed of the random inputs (default: fresh).")] = None,
    no_benchmark: Annotated[bool, typer.Option("--no-benchmark", help="Correctness only, no timing.")] = False,
    no_device: Annotated[bool, typer.Option("--no-device", help="Build and audit only.")] = False,
    all_rows: Annotated[bool, typer.Option("--all", help="List passed scenarios too when there are many.")] = False,
) -> None:
    """Build, audit, check every correctness scenario and time the benchmark set; append to the ledger.

    Exit status 0 only when build and audit pass and every scenario is correct.
    """
    from rich.console import Console

    from quaere.evaluate import EvalOptions, ScenariosFileError, run_evaluation
    from quaere.evaluate.device import default_task_name, gpu_present
    from quaere.evaluate.display import RichProgress, render
    from quaere.evaluate.ledger import append_evaluation
    from quaere.evaluate.summary import to_trace_event
    from quaere.task.loader import load_task
    from quaere.task.spec import TaskError
    from quaere.trace import TraceWriter, current_session, read_trace
    from quaere.workspace import STATE_DIR, WorkspaceError, open_workspace

    try:
        workspace = open_workspace(Path.cwd())
    except WorkspaceError:
        workspace = None
    try:
        loaded = load_task(task or (workspace.task if workspace else default_task_name(gpu_present())))
    except TaskError as exc:
        _fail(str(exc))
    source = candidate or (workspace.candidate if workspace else loaded.initial_kernel)
    if not source.is_file():
        _fail(f"{source}: no such candidate file")
    options = EvalOptions(seed=seed, scenarios_file=scenarios, benchmark=not no_benchmark, no_device=no_device)
    console = Console(stderr=as_json)
    try:
        if as_json:
            evaluation = run_evaluation(loaded, source.resolve(), options)
        else:
            with RichProgress(console) as progress:
                evaluation = run_evaluation(loaded, source.resolve(), options, progress)
    except ScenariosFileError as exc:
        _fail(str(exc))
    ledger = workspace.ledger if workspace else Path.cwd() / STATE_DIR / "ledger.jsonl"
    append_evaluation(ledger, evaluation)
    if workspace is not None:
        workspace.keep_version(source)
        session = current_session(read_trace(workspace.trace).events)
        TraceWriter(workspace.trace).write(to_trace_event(evaluation, loaded.spec).model_copy(update={"session": session}))
    if as_json:
        sys.stdout.write(evaluation.model_dump_json() + "\n")
    else:
        render(evaluation, console, all_rows=all_rows)
        console.print(f"ledger: {ledger}")
    raise typer.Exit(0 if evaluation.correct else EXIT_NOT_CORRECT)


def init_command(
    task: Annotated[str, typer.Option("--task", help="Shipped task name or task folder.")],
    directory: Annotated[Path, typer.Argument(help="Folder to make a workspace (created if missing).")] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing workspace and candidate.")] = False,
) -> None:
    """Make DIR a workspace: a copy of the task's initial kernel as the candidate, and .quaere/."""
    from quaere.task.loader import SHIPPED_TASKS_DIR, load_task
    from quaere.task.spec import TaskError
    from quaere.workspace import WorkspaceError, create_workspace

    try:
        loaded = load_task(task)
        name = loaded.spec.name if loaded.folder.parent == SHIPPED_TASKS_DIR else str(loaded.folder)
        workspace = create_workspace(directory, name, loaded.initial_kernel, overwrite=force)
    except (TaskError, WorkspaceError) as exc:
        _fail(str(exc))
    typer.echo(f"workspace {workspace.root}: task {loaded.spec.name}, candidate {workspace.candidate_name}")


def register(app: typer.Typer) -> None:
    """Add ``eval`` and ``init`` to ``app``."""
    app.command("eval")(eval_command)
    app.command("init")(init_command)
