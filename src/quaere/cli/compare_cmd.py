"""``quaere report A B [C...]``: the comparison form of ``quaere report`` (parsing only)."""

from __future__ import annotations

from pathlib import Path

import typer


def compare(folders: list[Path], html: Path | None) -> None:
    """Compare the campaigns in ``folders``; one line naming the folder when one cannot be compared."""
    import os

    from rich.console import Console

    from quaere.report.compare import CompareError, load_comparison
    from quaere.report.compare_html import print_comparison, render_compare_html
    from quaere.report.inputs import bank_catalog
    from quaere.store import Store, default_store_root
    from quaere.workspace import WorkspaceError, open_workspace

    catalog, _ = bank_catalog()
    store = Store(default_store_root(os.environ))
    try:
        comparison = load_comparison([open_workspace(folder) for folder in folders], catalog, store)
    except (WorkspaceError, CompareError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    print_comparison(comparison, Console())
    if html is not None:
        from quaere.report.compare_plot import compare_png

        html.write_text(render_compare_html(comparison, compare_png(comparison)))
        typer.echo(f"wrote {html}")
