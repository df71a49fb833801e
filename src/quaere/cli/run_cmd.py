"""``quaere run``: a campaign with a generalist agent (parsing only; the loop is quaere.campaign)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from quaere.campaign import CampaignEnd
from quaere.records import MethodKind

if TYPE_CHECKING:
    from quaere.agents.wiring import RunRequest
    from quaere.campaign import CampaignResult

RUN_HELP = """Run a campaign: a coding agent optimizes the task's kernel over many sessions, asked short
questions at key moments, stopped only when the goal holds or a budget is spent.

\b
Budgets (each ends the campaign cleanly with a 'budget' event in .quaere/trace.jsonl):
  --sessions N        sessions at most (a fresh conversation each; default 16)
  --max-tool-calls N  tool calls over the whole campaign; the session in progress is ended
  --max-wall-min M    minutes of wall time, summed over every run of the campaign (resumes included)
  --max-cost-usd X    dollars, where the backend reports cost (claude does; openai endpoints do not)
  --max-blocks N      stop attempts the Stop hook may refuse over the campaign (default 50)
A campaign that ends on a budget can be resumed with a larger one: quaere run --resume --sessions 24.

\b
Backends:
  claude    Claude Code through the Claude Agent SDK (ANTHROPIC_API_KEY or its login; --base-url for a gateway)
  openai    any OpenAI-compatible chat endpoint (--base-url http://localhost:8000/v1 --model NAME; OPENAI_API_KEY)
  mini      mini-swe-agent, any model litellm reaches (--model openai/NAME --base-url URL; pip install mini-swe-agent)
  scripted  replays a JSON list of actions (--script FILE): demos and tests

\b
Methods (same backend, evaluator, goal and budgets; see docs/methods.md):
  questions  short questions at the five moments (default)
  tooled     AVO-style tools run as `quaere tool ...` (profile, search, lessons, lineage) and a loop supervisor
  goal-only  the Stop hook and nothing else: the control

Interrupted (Ctrl-C, a crash, a killed machine)? `quaere run --resume --workspace DIR` carries on;
nothing already in the trace is rewritten.

\b
Many GPUs (docs/cluster.md; pip install 'quaere[cluster]'):
  --pool local:N      evaluate on N judges of this machine, one per GPU (or a Ray cluster's address)
  --parallel N        N campaigns at once in --workspace/campaign-<i>, sharing the pool"""


def _method(value: str) -> MethodKind:
    try:
        return MethodKind(value)
    except ValueError:
        expected = ", ".join(m.value for m in MethodKind)
        typer.echo(f"quaere run: unknown method '{value}'; expected {expected}", err=True)
        raise typer.Exit(2) from None


def register(app: typer.Typer) -> None:
    """Add ``quaere run`` to ``app``."""
    app.command("run", help=RUN_HELP, no_args_is_help=False)(run)


def run(
    task: str | None = typer.Option(
        None, "--task", help="Shipped task name or task folder (not needed with --resume)."
    ),
    agent: str = typer.Option("claude", "--agent", help="claude | openai | mini | scripted."),
    workspace: Path | None = typer.Option(None, "--workspace", help="Campaign folder (default: ./quaere-<task>)."),
    sessions: int | None = typer.Option(None, "--sessions", min=1, help="Budget: most sessions (default 16)."),
    source: str = typer.Option(
        "bank", "--source", help="bank (the selection policy) | human (you pick at each moment)."
    ),
    max_tool_calls: int | None = typer.Option(None, "--max-tool-calls", min=1, help="Budget: tool calls in all."),
    max_wall_min: float | None = typer.Option(None, "--max-wall-min", min=0.01, help="Budget: minutes of wall time."),
    max_cost_usd: float | None = typer.Option(None, "--max-cost-usd", min=0.0001, help="Budget: dollars (claude)."),
    max_blocks: int | None = typer.Option(None, "--max-blocks", min=1, help="Budget: refused stop attempts."),
    model: str | None = typer.Option(None, "--model", help="Model name for the backend."),
    base_url: str | None = typer.Option(
        None, "--base-url", help="API root: ANTHROPIC_BASE_URL (claude) or the /v1 URL (openai)."
    ),
    script: Path | None = typer.Option(None, "--script", help="Actions for --agent scripted (JSON list)."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the bank's question policy."),
    resume: bool = typer.Option(False, "--resume", help="Carry on the campaign in --workspace from .quaere/."),
    live: bool = typer.Option(True, "--live/--no-live", help="Show the live view (rich)."),
    method: MethodKind | None = typer.Option(
        None, "--method", parser=_method, metavar="questions|tooled|goal-only",
        help="What the agent is given (default questions; a resume keeps the campaign's).",
    ),
    docs: list[Path] | None = typer.Option(None, "--docs", help="A documentation folder for --method tooled."),
    parallel: int = typer.Option(1, "--parallel", min=1, help="Campaigns at once, in --workspace/campaign-<i>."),
    pool: str | None = typer.Option(None, "--pool", envvar="QUAERE_POOL", help="Evaluation pool: local, local:N "
                                    "or a Ray cluster's address (docs/cluster.md)."),
) -> None:
    from quaere.agents.wiring import RunRequest, WiringError, run_from_cli

    request = RunRequest(
        task=task,
        agent=agent,
        workspace=workspace,
        source=source,
        resume=resume,
        live=live,
        script=script,
        seed=seed,
        sessions=sessions,
        max_tool_calls=max_tool_calls,
        max_wall_min=max_wall_min,
        max_cost_usd=max_cost_usd,
        max_blocks=max_blocks,
        model=model,
        base_url=base_url,
        method=method,
        docs=tuple(docs or ()),
    )
    from quaere.agents.config import with_quaere_first

    # The agent's shell (and every child of this run) finds this installation's quaere first.
    os.environ["PATH"] = with_quaere_first(os.environ.get("PATH", ""), Path(sys.executable).parent)
    if parallel > 1:
        _run_parallel(request, parallel, pool)
        return
    try:
        with _campaign_pool(request, pool):
            result = run_from_cli(request, dict(os.environ))
    except WiringError as exc:
        typer.echo(f"quaere run: {exc}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        typer.echo(
            f"quaere run: interrupted; carry on with `quaere run --resume --workspace {workspace or '.'}`", err=True
        )
        raise typer.Exit(130) from None
    if result.reason is CampaignEnd.ERROR and result.detail:
        typer.echo(f"quaere run: the agent failed: {result.detail.splitlines()[0]}", err=True)
    typer.echo(_ended(result))
    raise typer.Exit(1 if result.reason is CampaignEnd.ERROR else 0)


def _ended(result: CampaignResult) -> str:
    return (
        f"campaign ended: {result.reason.value} after {result.sessions} sessions, {result.tool_calls} tool calls, "
        f"{result.wall_s / 60:.1f} min"
        + (f", ${result.cost_usd:.2f}" if result.cost_usd else "")
        + f"; trace in {result.workspace / '.quaere' / 'trace.jsonl'}"
    )


@contextmanager
def _campaign_pool(request: RunRequest, pool: str | None) -> Iterator[None]:
    """One campaign on ``pool``: its processes (the agent's ``quaere eval``, the hooks) find it in
    ``QUAERE_POOL``, set here at the entry point for every child."""
    if not pool:
        yield
        return
    from quaere.agents.wiring import WiringError
    from quaere.campaigns import campaign_pool, task_device
    from quaere.evaluate.pool import PoolError
    from quaere.task import TaskError

    try:
        with campaign_pool(pool, task_device(request, os.environ)) as pool_env:
            os.environ.update(pool_env)
            yield
    except (PoolError, TaskError) as exc:
        raise WiringError(str(exc)) from None


def _run_parallel(request: RunRequest, count: int, pool: str | None) -> None:
    from quaere.agents.wiring import WiringError
    from quaere.campaigns import ParallelError, run_parallel, task_device
    from quaere.evaluate.pool import PoolError
    from quaere.task import TaskError

    try:
        outcomes = run_parallel(request, count, pool, dict(os.environ), task_device(request, os.environ))
    except (ParallelError, PoolError, TaskError, WiringError) as exc:
        typer.echo(f"quaere run: {exc}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        typer.echo(f"quaere run: interrupted; carry on with `quaere run --resume --parallel {count} "
                   f"--workspace {request.workspace or '.'}`", err=True)
        raise typer.Exit(130) from None
    for outcome in outcomes:
        line = _ended(outcome.result) if outcome.result else f"campaign failed: {outcome.error}"
        typer.echo(f"{outcome.workspace.name}: {line} (log {outcome.log})")
    failed = any(o.result is None or o.result.reason is CampaignEnd.ERROR for o in outcomes)
    raise typer.Exit(1 if failed else 0)
