"""How a CLI command refuses: one line (or a few) on stderr and a non-zero exit, nothing half-done.

``raise refuse(...)`` at the call site, so that the refusal reads (and type-checks) as the end of the
command.
"""

from __future__ import annotations

import typer

EXIT_BAD_INPUT = 2  # a file, a field or an argument the user gave is not what was expected
EXIT_NOTHING_FOUND = 1  # the input was fine; what it asked for does not exist


def refuse(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    """Print ``message`` on stderr and return the ``typer.Exit`` that ends the command with ``code``."""
    typer.echo(message, err=True)
    return typer.Exit(code)
