"""``quaere task new`` (a task from a kernel file) and ``quaere task check`` (is a task sound?)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from quaere.cli.refusal import refuse

EXIT_NOT_SOUND = 1

task_app = typer.Typer(name="task", help="Make a task from your own kernel file, and check that a task is sound.",
                       no_args_is_help=True)


def _pairs(option: str, items: list[str]) -> dict[str, list[str]]:
    """``NAME=A,B`` items as {NAME: [A, B]}; a malformed one is a bad input naming the option."""
    pairs: dict[str, list[str]] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise refuse(f"error: {option} {item}: expected NAME=VALUE[,VALUE...], e.g. {option} x=rows,cols")
        pairs[name.strip()] = [v.strip() for v in value.split(",")]
    return pairs


def _numbers(option: str, name: str, texts: list[str]) -> tuple[float, ...]:
    try:
        return tuple(int(t) if t.lstrip("-").isdigit() else float(t) for t in texts)
    except ValueError:
        raise refuse(
            f"error: {option} {name}={','.join(texts)}: expected numbers, e.g. {option} {name}=1e-6,0.5"
        ) from None


def new_command(
    directory: Annotated[Path, typer.Argument(help="Task folder to write (new, or one without task.toml/task.py).")],
    kernel: Annotated[Path, typer.Option("--from", help="Kernel source (.cu, .cpp) with an extern \"C\" int "
                      "entry point.")],
    entry: Annotated[str | None, typer.Option("--entry", help="The entry point, where the file has several.")] = None,
    reference: Annotated[str | None, typer.Option("--reference", help="FILE:FUNCTION, a NumPy/PyTorch function taking "
                         "the inputs and scalars by name and returning the outputs; called, never copied.")] = None,
    output: Annotated[list[str] | None, typer.Option("--output", help="A pointer the kernel writes (repeat); the "
                      "other pointers are inputs.")] = None,
    shape: Annotated[list[str] | None, typer.Option("--shape", help="NAME=E1,E2: a buffer's shape over the integer "
                     "parameters, e.g. x=rows,cols.")] = None,
    dtype: Annotated[list[str] | None, typer.Option("--dtype", help="NAME=TYPE for a void* buffer, e.g. "
                     "q=bfloat16.")] = None,
    values: Annotated[list[str] | None, typer.Option("--values", help="NAME=V1,V2: the values a scalar parameter "
                      "takes, e.g. eps=1e-6,0.5.")] = None,
    flops: Annotated[str | None, typer.Option("--flops", help="FLOPs of one call over the integer parameters, "
                     "e.g. '5*rows*cols'.")] = None,
    workspace_bytes: Annotated[int | None, typer.Option("--workspace-bytes", min=0, help="Scratch bytes the kernel "
                               "needs (when it takes a workspace).")] = None,
    row_sample: Annotated[bool, typer.Option("--row-sample", help="Each output row depends only on the same row of the "
                          "inputs: verify timed outputs on a few rows (sample()).")] = False,
    name: Annotated[str | None, typer.Option("--name", help="Task name (default: the folder's).")] = None,
) -> None:
    """Write task.toml and task.py for KERNEL into DIR: everything inferred from the entry point's C signature
    and the reference; what cannot be is left as todo() places that `quaere task check` lists."""
    from quaere.task.new import create_task
    from quaere.task.scaffold import Answers
    from quaere.task.spec import TaskError

    answers = Answers(
        outputs=tuple(output or ()), shapes={k: tuple(v) for k, v in _pairs("--shape", shape or []).items()},
        dtypes={k: v[0] for k, v in _pairs("--dtype", dtype or []).items()},
        values={k: _numbers("--values", k, v) for k, v in _pairs("--values", values or []).items()},
        flops=flops, workspace_bytes=workspace_bytes, row_sample=row_sample, name=name,
    )
    try:
        created = create_task(directory, kernel, entry, reference, answers)
    except TaskError as exc:
        raise refuse(f"error: {exc}") from None
    typer.echo(f"wrote {created.folder}: {', '.join(p.name for p in created.written)}")
    typer.echo(created.reference_note)
    if created.todos:
        typer.echo(f"{len(created.todos)} place(s) to fill in {created.folder / 'task.py'}:")
        for todo in created.todos:
            typer.echo(f"  line {todo.line}: {todo.what}")
    typer.echo(f"next: quaere task check {created.folder}")


def check_command(
    task: Annotated[str, typer.Argument(help="Task folder (or a shipped task's name).")],
    no_device: Annotated[bool, typer.Option("--no-device", help="Static checks only (build included).")] = False,
    no_benchmark: Annotated[bool, typer.Option("--no-benchmark", help="Do not time the benchmark set.")] = False,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of every input drawn.")] = 1,
) -> None:
    """Build the initial kernel, run both references on every scenario, check that null candidates fail,
    evaluate the initial kernel with the real evaluator, check benchmark sizes and roofline figures.

    Exit status 0 only when the task is sound.
    """
    from rich.console import Console

    from quaere.task.check import CheckOptions, check_task
    from quaere.task.check_table import render_check
    from quaere.task.spec import TaskError

    try:
        report = check_task(task, CheckOptions(seed=seed, no_device=no_device, benchmark=not no_benchmark))
    except TaskError as exc:
        raise refuse(f"error: {exc}") from None
    render_check(report, Console())
    raise typer.Exit(0 if report.sound else EXIT_NOT_SOUND)


def register(app: typer.Typer) -> None:
    """Add ``task new`` and ``task check`` to ``app``."""
    task_app.command("new")(new_command)
    task_app.command("check")(check_command)
    app.add_typer(task_app)
