"""Several campaigns at once (``quaere run --parallel N``), and the campaigns of a folder (``quaere report``).

Each campaign is the ordinary one (:func:`quaere.agents.wiring.run_from_cli`) in a process of its own, with
its own workspace (``FOLDER/campaign-<i>``), agent, question seed and log (``FOLDER/campaign-<i>.log``).
They share one evaluation pool: a local pool is started here and its address given to every campaign as
``QUAERE_POOL``, so the agents' ``quaere eval`` and the goal's confirmations all queue on the same judges
(one judge per GPU: two campaigns never time on one GPU at once).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, cast

from quaere.evaluate.judging import Device
from quaere.evaluate.options import POOL_ENV
from quaere.evaluate.pool import PoolSpec, open_pool
from quaere.workspace import STATE_DIR

if TYPE_CHECKING:
    from quaere.agents.wiring import RunRequest
    from quaere.campaign import CampaignResult
    from quaere.evaluate.pool_ray import RayPool

CAMPAIGN_PREFIX = "campaign-"
MODE_ENV = "QUAERE_TRUST_MODE"


class ParallelError(ValueError):
    """``--parallel`` cannot run as asked; the message says why and what to do."""


@dataclass(frozen=True)
class CampaignOutcome:
    """How one of the parallel campaigns ended: its result, or the error that stopped it."""

    workspace: Path
    log: Path
    result: CampaignResult | None = None
    error: str = ""


def campaign_requests(request: RunRequest, count: int) -> list[RunRequest]:
    """``count`` campaigns of ``request``: ``FOLDER/campaign-<i>`` (FOLDER: ``--workspace``, default
    ``./quaere-<task>-campaigns``), no live view, question seed ``S + i - 1`` (S: ``--seed``, default 0)."""
    folder = request.workspace or Path(f"quaere-{Path(request.task or 'task').name}-campaigns")
    base = request.seed or 0
    return [replace(request, workspace=folder / f"{CAMPAIGN_PREFIX}{i}", live=False, seed=base + i - 1)
            for i in range(1, count + 1)]


def _refuse_separate_users(env: Mapping[str, str]) -> None:
    """Separate-user mode deploys one evaluator service per campaign on one socket: not yet for several."""
    if os.geteuid() == 0 and env.get(MODE_ENV, "auto") != "same_user":
        raise ParallelError(
            "--parallel runs its campaigns in same-user mode only (as root each campaign would deploy its own "
            f"evaluator service on the same socket): set {MODE_ENV}=same_user, or run the campaigns one by one"
        )


def _campaign_process(request: RunRequest, env: dict[str, str], log: Path) -> CampaignResult:
    """One campaign, in a spawned process: its output to ``log``, its environment (with the pool) for the
    agent's commands and hooks."""
    from quaere.agents.wiring import run_from_cli

    os.environ.clear()
    os.environ.update(env)
    handle = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(handle, 1)
    os.dup2(handle, 2)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    return run_from_cli(request, env)


def _pool_setting(pool: str | None, device: Device) -> tuple[str | None, RayPool | None]:
    """What the campaigns get as ``QUAERE_POOL``, and the pool started here (closed by the caller)."""
    if not pool:
        if device == "cuda":
            raise ParallelError("--parallel on a GPU task needs --pool (local, local:N or a Ray address): "
                                "campaigns evaluating on one GPU at once would time over each other")
        return None, None
    spec = PoolSpec.parse(pool)
    if not spec.local:
        return spec.address, None
    started = open_pool(spec, device)
    return started.address, started


def task_device(request: RunRequest, env: Mapping[str, str]) -> str:
    """The device ('cpu', 'cuda') of the task the campaign(s) of ``request`` run (a resume's saved task)."""
    from quaere.agents.wiring import make_config
    from quaere.task import load_task

    first = campaign_requests(request, 1)[0] if request.resume else request
    return load_task(make_config(first, env).task).spec.device


@contextmanager
def campaign_pool(pool: str | None, device: Device) -> Iterator[dict[str, str]]:
    """What a campaign's processes need in their environment to share the pool while the context lasts:
    ``QUAERE_POOL`` (and Ray's authentication mode for a local pool, started here and stopped at the end);
    nothing without a pool."""
    setting, started = _pool_setting(pool, device)
    env = {POOL_ENV: setting} if setting else {}
    try:
        yield {**env, **(started.client_env() if started is not None else {})}
    finally:
        if started is not None:
            started.close()


def run_parallel(request: RunRequest, count: int, pool: str | None, env: Mapping[str, str],
                 device: Device) -> list[CampaignOutcome]:
    """Run ``count`` campaigns of ``request`` at once, sharing ``pool``; each outcome in campaign order.

    ``device`` is the task's ('cpu' or 'cuda'). Raises :class:`ParallelError` (or ``PoolError``) before
    any campaign starts when they cannot run as asked. Ctrl-C reaches every campaign (each closes its
    session as interrupted, resumable with ``--resume --parallel N``) and is re-raised."""
    _refuse_separate_users(env)
    requests = campaign_requests(request, count)
    folders = [cast(Path, r.workspace) for r in requests]
    logs = [folder.parent / f"{folder.name}.log" for folder in folders]
    outcomes: list[CampaignOutcome] = []
    with campaign_pool(pool, device) as pool_env:
        child_env = {**env, **pool_env}
        for folder in folders:
            folder.parent.mkdir(parents=True, exist_ok=True)
        with ProcessPoolExecutor(max_workers=count, mp_context=get_context("spawn")) as executor:
            futures = [executor.submit(_campaign_process, r, child_env, log)
                       for r, log in zip(requests, logs, strict=True)]
            for folder, log, future in zip(folders, logs, futures, strict=True):
                try:
                    outcomes.append(CampaignOutcome(folder, log, result=future.result()))
                except (ValueError, RuntimeError, OSError) as exc:
                    outcomes.append(CampaignOutcome(folder, log, error=str(exc)))
    return outcomes


def campaign_folders(folder: Path) -> list[Path]:
    """The campaign workspaces directly inside ``folder`` (``quaere run --parallel``'s layout, or any folder
    of workspaces), in name order; ``[folder]`` itself when it is a workspace."""
    def is_workspace(path: Path) -> bool:
        return (path / STATE_DIR / "workspace.toml").is_file()

    if is_workspace(folder):
        return [folder]
    found = [p for p in folder.iterdir() if is_workspace(p)] if folder.is_dir() else []
    return sorted(found, key=lambda p: (len(p.name), p.name))

