"""The ``quaere`` command line: each module here parses one family of commands and calls the library.

Modules register their commands on the one Typer app; none holds logic of its own.
"""

from __future__ import annotations

import typer

from quaere.cli import bank_cmd, eval_cmd, hooks_cmd, report_cmd, run_cmd, serve_cmd, task_cmd, tool_cmd

app = typer.Typer(
    name="quaere",
    help="Question-guided optimization of GPU kernels: evaluator, goal hook, questions, campaigns, reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def main() -> None:
    """quaere: evaluator, goal hook, questions, campaigns and reports for GPU kernel optimization."""


@app.command("version")
def version() -> None:
    """Print quaere's version."""
    from quaere import __version__

    typer.echo(__version__)


for _module in (eval_cmd, bank_cmd, hooks_cmd, run_cmd, report_cmd, serve_cmd, task_cmd, tool_cmd):
    _module.register(app)
