"""``quaere eval`` (build, audit, correctness, timing of one candidate) and ``quaere init`` (a workspace)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from quaere.cli.refusal import refuse

EXIT_NOT_CORRECT = 1
EXIT_INTERRUPTED = 130  # as a shell reports a process ended by SIGINT

INTERRUPTED = ("interrupted: the evaluation stopped before its end, and its judge and runners with it; nothing was "
               "signed into the store nor written to the ledger (only the build cache keeps the build)")


def eval_command(
    candidate: Annotated[Path | None, typer.Argument(help="Kernel source; default: the workspace's candidate, "
                                                     "or the task's initial kernel outside a workspace.")] = None,
    task: Annotated[str | None, typer.Option("--task", help="Shipped task name or task folder path (./dir); "
                    "default: the workspace's pinned task, else flash_attention_hopper with a GPU, cpu_softmax "
                    "without. Another task than the pinned one makes a partial run.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object: the signed store entry in "
                       "a workspace (the evaluation alone outside one), NaN written as null.")] = False,
    scenarios: Annotated[Path | None, typer.Option("--scenarios", help='JSON list [{"id": ..., "params": {...}}] '
                         "replacing the task's correctness scenarios (a partial run).")] = None,
    seed: Annotated[int | None, typer.Option("--seed", min=0, help="Seed of the random inputs (default: fresh; "
                    "a given seed makes a partial run).")] = None,
    no_benchmark: Annotated[bool, typer.Option("--no-benchmark", help="Correctness only, no timing "
                            "(a partial run).")] = False,
    no_device: Annotated[bool, typer.Option("--no-device", help="Build and audit only (a partial run).")] = False,
    all_rows: Annotated[bool, typer.Option("--all", help="List passed scenarios too when there are many.")] = False,
    pool: Annotated[str | None, typer.Option("--pool", envvar="QUAERE_POOL", help="Spread the judge work over an "
                    "evaluation pool on Ray: local, local:N (N judges here) or a Ray cluster's address "
                    "(docs/cluster.md; pip install 'quaere[cluster]').")] = None,
) -> None:
    """Build, audit, check every correctness scenario and time the benchmark set; sign it into the store.

    Only a full evaluation (no --scenarios, --seed, --no-benchmark, --no-device, nor another --task) counts
    for the goal. Exit status 0 only when build and audit pass and every scenario is correct.
    """
    from rich.console import Console

    from quaere.evaluate import ScenariosFileError
    from quaere.evaluate.display import RichProgress, render
    from quaere.evaluate.pool import PoolError, evaluation_pool
    from quaere.recording import EvalRequest, describe_entry
    from quaere.serve.access import EvalCommandError, run_eval_command
    from quaere.store import Store, default_store_root

    request = EvalRequest(candidate=candidate, task=task, scenarios_file=scenarios, seed=seed,
                          benchmark=not no_benchmark, no_device=no_device)
    store = Store(default_store_root(os.environ))
    console = Console(stderr=as_json)
    try:
        with evaluation_pool(pool) as evaluate:
            if as_json:
                done = run_eval_command(request, store, Path.cwd(), None, evaluate)
            else:
                with RichProgress(console) as progress:  # drawn only on a terminal
                    done = run_eval_command(request, store, Path.cwd(), progress, evaluate)
    except (ScenariosFileError, EvalCommandError, PoolError) as exc:
        raise refuse(f"error: {exc}") from None
    except KeyboardInterrupt:
        typer.echo(INTERRUPTED, err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    evaluation = done.evaluation
    if as_json:
        record = done.entry if done.entry is not None else evaluation
        sys.stdout.write(record.model_dump_json() + "\n")
    else:
        render(evaluation, console, all_rows=all_rows)
        console.print(describe_entry(done.entry, store) if done.entry is not None else
                      f"not in a workspace: nothing recorded for any goal; written to {done.ledger}")
    raise typer.Exit(0 if evaluation.correct else EXIT_NOT_CORRECT)


def init_command(
    task: Annotated[str, typer.Option("--task", help="Shipped task name, or a task folder as a path (./dir).")],
    directory: Annotated[Path, typer.Argument(help="Folder to make a workspace (created if missing).")] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing workspace and candidate, and "
                     "re-pin the task (a new goal).")] = False,
) -> None:
    """Make DIR a workspace: a copy of the task's initial kernel as the candidate, and .quaere/; pin the
    task (name and content hash) in the evaluation store, outside the workspace."""
    from quaere.store import Store, StoreError, default_store_root
    from quaere.store.modes import mode_line
    from quaere.store.pinning import init_workspace
    from quaere.task.spec import TaskError

    store = Store(default_store_root(os.environ))
    try:
        workspace, registration = init_workspace(store, directory, task, force, Path.cwd())
    except (TaskError, StoreError) as exc:
        raise refuse(f"error: {exc}") from None
    typer.echo(f"workspace {workspace.root}: task {registration.task.name} (sha256 {registration.task.sha256[:12]}), "
               f"candidate {workspace.candidate_name}")
    typer.echo(f"store: {store.folder(workspace.id)}")
    typer.echo(mode_line(registration.trust_mode))


def register(app: typer.Typer) -> None:
    """Add ``eval`` and ``init`` to ``app``."""
    app.command("eval")(eval_command)
    app.command("init")(init_command)
