"""``quaere serve``: the evaluator service of separate-user mode (parsing only; see quaere.serve)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import typer

from quaere.store.records import TrustMode


def serve(
    store: Path = typer.Option(
        ..., "--store", help="The store root this service owns (keys, records, task copies, cache).",
    ),
    socket_path: Path = typer.Option(..., "--socket", help="The Unix socket to listen on."),
    trust_mode: TrustMode = typer.Option(
        TrustMode.SEPARATE_USER, "--trust-mode",
        help="What the records claim: separate_user when this runs as a user of its own (the point of the service).",
    ),
    pool: str | None = typer.Option(None, "--pool", envvar="QUAERE_POOL", help="Evaluate on an evaluation pool "
                                    "on Ray: local, local:N or a Ray cluster's address (docs/cluster.md)."),
) -> None:
    """Evaluate candidates sent by `quaere eval` clients and sign the records into the store.

    Run it as a dedicated user that alone can write STORE; `quaere run` as root does this itself.
    """
    from quaere.evaluate.pool import PoolError, evaluation_pool
    from quaere.serve.server import serve as run_server
    from quaere.store import Store

    # A plain SIGTERM must still remove service.json and the socket: turn it into a normal exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    typer.echo(f"quaere serve: store {store}, socket {socket_path}, trust mode {trust_mode.value}", err=True)
    try:
        with evaluation_pool(pool) as evaluate:
            run_server(Store(store, trust_mode), socket_path, evaluate)
    except PoolError as exc:
        typer.echo(f"quaere serve: {exc}", err=True)
        raise typer.Exit(2) from None


def register(app: typer.Typer) -> None:
    """Add ``quaere serve`` to ``app``."""
    app.command("serve")(serve)
