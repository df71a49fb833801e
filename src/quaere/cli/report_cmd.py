"""``quaere report``, ``quaere export`` and ``quaere verify``: parse, call quaere.report, print."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from quaere.cli.refusal import refuse
from quaere.report.campaign_report import DEFAULT_K


def report(
    workspaces: Annotated[list[Path] | None, typer.Argument(
        metavar="[WORKSPACE]... ", help="Workspace folder (default: here); two or more, or one folder of "
        "campaigns (quaere run --parallel's): compare those campaigns.")
    ] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a self-contained HTML page here.")] = None,
    k: Annotated[int, typer.Option("--k", min=1, help="Evaluations after a question that count as its gain.")] = (
        DEFAULT_K
    ),
) -> None:
    """Figures of a campaign: best ratio over time, tool calls per question, churn, gains after questions.

    With two or more workspaces (quaere report A B C), or one folder of them (quaere report runs/): the campaigns
    side by side (best ratio over time and over tool calls, tool calls per gain, churn, evaluations, wall time,
    the final per-configuration table).
    """
    from rich.console import Console

    from quaere.campaigns import campaign_folders
    from quaere.report.inputs import bank_catalog, load_report
    from quaere.report.terminal import print_summary
    from quaere.store import Store, default_store_root
    from quaere.workspace import WorkspaceError, open_workspace

    folders = workspaces or [Path(".")]
    if len(folders) == 1:  # one folder: a workspace, or a folder of campaigns (quaere run --parallel's)
        folders = campaign_folders(folders[0]) or folders
    if len(folders) > 1:
        from quaere.cli.compare_cmd import compare

        return compare(folders, html)
    try:
        ws = open_workspace(folders[0])
    except WorkspaceError as exc:
        raise refuse(f"error: {exc}") from None
    catalog, notes = bank_catalog()
    result = load_report(ws, catalog, k=k, problems=notes, store=Store(default_store_root(os.environ)))
    print_summary(result, Console())
    if html is not None:
        from quaere.report.html import render_html
        from quaere.report.plots import progress_png

        html.write_text(render_html(result, progress_png(result)))
        typer.echo(f"wrote {html}")


def export(
    paths: Annotated[
        list[Path],
        typer.Argument(metavar="[WORKSPACE] OUT", help="The workspace (default: here), then a new folder."),
    ],
    k: Annotated[int, typer.Option("--k", min=1, help="As for quaere report.")] = DEFAULT_K,
) -> None:
    """Write the publication bundle: final kernel, ledger, questions, scrubbed trace, task, manifest."""
    from rich.console import Console

    from quaere.evaluate.display import RichProgress
    from quaere.report.export import ExportError, export_bundle
    from quaere.report.inputs import bank_catalog
    from quaere.report.secrets import secret_values
    from quaere.store import Store, default_store_root
    from quaere.workspace import WorkspaceError, open_workspace

    if len(paths) not in (1, 2):
        raise refuse("error: expected [WORKSPACE] OUT")
    workspace, out = (Path("."), paths[0]) if len(paths) == 1 else (paths[0], paths[1])
    try:
        ws = open_workspace(workspace)
        catalog, _ = bank_catalog()
        with RichProgress(Console()) as progress:
            manifest = export_bundle(ws, out, catalog, secret_values(os.environ), k=k, progress=progress,
                                     store=Store(default_store_root(os.environ)))
    except (WorkspaceError, ExportError) as exc:
        raise refuse(f"error: {exc}") from None
    typer.echo(f"wrote {out}: {len(manifest['files'])} files, manifest {out / 'manifest.json'}")


def verify(
    bundle: Annotated[Path, typer.Argument(help="A folder written by quaere export.")],
    rerun: Annotated[bool, typer.Option("--rerun/--no-rerun", help="Re-run the evaluator on the final kernel.")] = True,
) -> None:
    """Re-check every hash of the bundle's manifest; re-run the evaluator on the final kernel where it can run."""
    from quaere.report.method_check import check_bundle_method
    from quaere.report.rerun import QuaereEvaluator
    from quaere.report.verify import BundleError, RerunStatus, check_manifest, read_manifest, rerun_final_kernel

    try:
        findings = check_manifest(bundle)
    except BundleError as exc:
        raise refuse(f"error: {exc}") from None
    for finding in findings:
        typer.echo(f"{finding.issue.value}: {finding.path}", err=True)
    if findings:
        raise typer.Exit(1)
    typer.echo("manifest: every file matches its sha256")
    method, method_findings = check_bundle_method(bundle, read_manifest(bundle))
    for item in method_findings:
        typer.echo(f"{item.issue.value}: {item.detail}", err=True)
    if method_findings:
        raise typer.Exit(1)
    typer.echo(f"method: {method or 'not recorded (a campaign from before methods)'}, as the trace records it")
    if not rerun:
        return
    from rich.console import Console

    from quaere.evaluate.display import RichProgress

    with RichProgress(Console()) as progress:
        outcome = rerun_final_kernel(bundle, QuaereEvaluator(progress))
    typer.echo(f"re-run: {outcome.status.value}: {outcome.detail}")
    if outcome.status is RerunStatus.FAILED:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add report, export and verify to ``app``."""
    app.command("report")(report)
    app.command("export")(export)
    app.command("verify")(verify)
