"""Commands of this family are registered here (placeholder until its issue lands)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this family's commands to ``app``."""
