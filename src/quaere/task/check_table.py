"""``quaere task check``'s one table (80 columns at most) and its closing line."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from quaere.task.check import CheckReport, CheckStatus

STYLES = {CheckStatus.PASSED: "green", CheckStatus.FAILED: "bold red", CheckStatus.SKIPPED: "yellow",
          CheckStatus.NOT_APPLICABLE: "dim"}
WIDTH = 80


def render_check(report: CheckReport, console: Console) -> None:
    table = Table(title=f"task check: {report.folder}", width=min(WIDTH, console.width), show_lines=False)
    table.add_column("check", no_wrap=True, max_width=28)
    table.add_column("result", no_wrap=True, max_width=7)
    table.add_column("detail", overflow="fold")
    for row in report.rows:
        table.add_row(row.name.value, f"[{STYLES[row.status]}]{row.status.value}[/]", row.detail)
    console.print(table)
    failed = [row.name.value for row in report.rows if row.status is CheckStatus.FAILED]
    if report.sound:
        scope = " (static checks only: run it on the task's device to prove the rest)" if report.static_only else ""
        console.print(f"[green]sound[/]: the task is ready{scope}; next: quaere init WORKSPACE --task {report.folder}")
    elif failed:
        console.print(f"[bold red]not sound[/]: {len(failed)} check(s) failed: {', '.join(failed)}")
    else:
        console.print("[yellow]not proven[/]: some checks could not run here (see 'skipped'); --no-device accepts "
                      "the static checks alone")
