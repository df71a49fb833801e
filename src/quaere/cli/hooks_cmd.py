"""``quaere goal``, ``quaere hook stop|post-tool|prompt`` and ``quaere hooks install``: parse and call.

The hook commands speak the agents' hook protocol: JSON on stdin, JSON on stdout, exit 0 (OpenHands: 2 to
block a stop). They never crash silently: any failure becomes a clear stderr note and a safe answer.
This module is the one place of the hooks part that reads the environment (the project folder the agent
names).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import typer

from quaere.cli.refusal import refuse
from quaere.hooks.answers import normalize_payload
from quaere.hooks.dialect import HookDialect, Scope, WireEvent
from quaere.hooks.install import InstallError, Target, install_hooks, uninstall_hooks
from quaere.hooks.state import DEFAULT_MAX_BLOCKS, HookBudget, HookStateError
from quaere.task.spec import TaskError
from quaere.workspace import WorkspaceError, open_workspace

_EVENTS = {"stop": WireEvent.STOP, "post-tool": WireEvent.POST_TOOL_USE, "prompt": WireEvent.USER_PROMPT_SUBMIT}
_PROJECT_DIR_ENV = ("CLAUDE_PROJECT_DIR", "OPENHANDS_PROJECT_DIR")


def goal(
    confirm: bool = typer.Option(
        False, "--confirm", "--retime",
        help="When everything holds on your evaluations, run the confirming full evaluation now.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the status as one JSON object."),
    path: Path = typer.Option(Path("."), "--workspace", "-w", help="A folder inside the workspace."),
) -> None:
    """Print met / unconfirmed / unmet / stale with every failing scenario and its numbers; exit 0 only when met.

    Judged on the signed store only: full evaluations of the pinned task, pooled, with a margin over each
    target, and a confirming evaluation that quaere starts itself.
    """
    from rich.console import Console

    from quaere.evaluate.display import RichProgress
    from quaere.goal_render import render_goal
    from quaere.hooks.handlers import current_goal
    from quaere.hooks.wiring import build_deps
    from quaere.messages import fit_lines
    from quaere.serve.access import confirmer_for
    from quaere.serve.client import ServiceError
    from quaere.store import Store, StoreError, default_store_root

    store = Store(default_store_root(os.environ))
    console = Console(highlight=False)
    try:
        workspace = open_workspace(path)
        with RichProgress(console if not as_json else Console(stderr=True, force_terminal=False)) as progress:
            deps = build_deps(workspace, store, HookDialect.CLAUDE_CODE,
                              confirmer=confirmer_for(store, workspace, progress) if confirm else None)
            status, problems = current_goal(deps)
    except (WorkspaceError, TaskError, StoreError, ServiceError) as exc:
        raise refuse(str(exc)) from None
    except KeyboardInterrupt:
        raise refuse("interrupted: the confirming evaluation stopped before its end; nothing was recorded, the "
                    "goal is as it was", 130) from None
    for problem in problems:
        typer.echo(f"store: {problem}", err=True)
    if as_json:
        typer.echo(status.model_dump_json(indent=2))
    else:
        text = render_goal(status, time.time())
        typer.echo(fit_lines(text, console.width) if console.is_terminal else text)
    raise typer.Exit(0 if status.met else 1)


def _read_payload() -> tuple[dict[str, Any] | None, str]:
    if sys.stdin.isatty():  # run by hand: say what it expects instead of waiting silently
        return None, "expected the agent's hook JSON on stdin (this command is run by the agent's hooks)"
    raw = sys.stdin.read()
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"the hook input is not JSON ({exc}): {raw[:120]!r}"
    if not isinstance(payload, dict):
        return None, f"the hook input is a JSON {type(payload).__name__}, expected an object"
    return normalize_payload(payload), ""


def _project_dir(payload: dict[str, Any] | None) -> Path:
    cwd = payload.get("cwd") if payload else None
    if isinstance(cwd, str) and cwd:
        return Path(cwd)
    for name in _PROJECT_DIR_ENV:
        if os.environ.get(name):
            return Path(os.environ[name])
    return Path.cwd()


def _inside(folder: Path, root: Path) -> bool:
    return folder.resolve().is_relative_to(root.resolve())


def _emit(answer) -> None:
    if answer.stderr:
        typer.echo(answer.stderr, err=True)
    if answer.output is not None:
        typer.echo(json.dumps(answer.output))
    raise typer.Exit(answer.exit_code)


def hook(
    event: str = typer.Argument(..., help="stop, post-tool or prompt"),
    agent: HookDialect = typer.Option(HookDialect.CLAUDE_CODE, "--agent", help="Whose hook protocol to answer in."),
    retime: bool = typer.Option(False, "--retime", hidden=True, help="Kept for old settings; the Stop hook "
                                "always runs the goal's confirmation when it is due."),
    root: Path | None = typer.Option(
        None, "--root", help="Answer only inside this workspace; elsewhere stay silent (user-level settings)."
    ),
) -> None:
    """Answer one agent hook: read its JSON on stdin, print the answer JSON.

    Stop runs the goal's confirming evaluation when everything else holds (it takes a full evaluation).
    """
    from quaere.hooks import handlers
    from quaere.hooks.wiring import build_deps, hook_state_file
    from quaere.serve.access import confirmer_for
    from quaere.serve.client import ServiceError
    from quaere.store import Store, StoreError, default_store_root

    del retime  # accepted so that settings written by older versions keep working
    if event not in _EVENTS:
        raise refuse(f"quaere hook: unknown event '{event}'; expected one of {sorted(_EVENTS)}")
    name = _EVENTS[event]
    payload, problem = _read_payload()
    if root is not None and not _inside(_project_dir(payload), root):
        raise typer.Exit(0)  # installed for the user, fired in another project: not ours to judge
    state_dir = None
    try:
        if payload is None:
            try:
                state_dir = open_workspace(_project_dir(None)).state
            except WorkspaceError:
                state_dir = None
            _emit(_broken(name, problem, agent, state_dir, None))
        workspace = open_workspace(_project_dir(payload))
        state_dir = workspace.state
        store = Store(default_store_root(os.environ))
        # Counted in the store from here on: a refusal below must not be counted in a file the agent edits.
        state_dir = hook_state_file(store, workspace)
        confirmer = confirmer_for(store, workspace) if event == "stop" else None
        deps = build_deps(workspace, store, agent, confirmer=confirmer)
        handler = {
            "stop": handlers.handle_stop,
            "post-tool": handlers.handle_post_tool,
            "prompt": handlers.handle_prompt,
        }
        _emit(handler[event](payload, deps))
    except typer.Exit:
        raise
    except (WorkspaceError, TaskError, StoreError, ServiceError, HookStateError, OSError, ValueError) as exc:
        _emit(_broken(name, f"{type(exc).__name__}: {exc}", agent, state_dir, payload))
    except Exception as exc:  # never a silent crash: a traceback-free note and the safe answer
        _emit(_broken(name, f"internal error {type(exc).__name__}: {exc}", agent, state_dir, payload))


def _broken(event: WireEvent, message: str, agent: HookDialect, state_dir: Any, payload: dict[str, Any] | None):
    """The safe answer, counted in ``state_dir`` (the store's hook state once known, else the workspace's)."""
    from quaere.hooks.answers import broken_answer, trace_broken

    session = str(payload.get("session_id", "")) if payload else ""
    answer = broken_answer(event, message, agent, state_dir, session)
    trace_dir = None
    try:
        trace_dir = open_workspace(_project_dir(payload)).state
    except WorkspaceError:
        pass
    if trace_dir is not None and trace_dir.is_dir():
        trace_broken(trace_dir / "trace.jsonl", event, message, answer)
    return answer


def hooks_install(
    agent: HookDialect = typer.Option(..., "--agent", help="claude-code, codex or openhands"),
    scope: Scope = typer.Option(
        Scope.PROJECT,
        "--scope",
        help="project: settings in the workspace; user: in your home, out of the agent's reach (see docs/agents.md).",
    ),
    settings: Path | None = typer.Option(
        None,
        "--settings",
        help="Write the hooks into this settings file instead: a location the agent's user cannot edit, e.g. "
        "Claude Code's managed settings /etc/claude-code/managed-settings.json (root's; every project).",
    ),
    uninstall: bool = typer.Option(
        False, "--uninstall", help="Remove quaere's entries and restore what install changed."
    ),
    max_blocks: int = typer.Option(
        DEFAULT_MAX_BLOCKS, "--max-blocks", min=1, help="Stop attempts blocked per campaign."
    ),
    max_sessions: int | None = typer.Option(
        None, "--max-sessions", min=1, help="Agent sessions before stops go through."
    ),
    max_wall_s: float | None = typer.Option(None, "--max-wall-s", min=1, help="Seconds before stops go through."),
    root: Path | None = typer.Option(
        None,
        "--root",
        help="Project folder; default: the workspace root above the current folder, else the current folder.",
    ),
) -> None:
    """Write (or remove) the agent's hook settings, merged with what is there."""
    if root is None:
        try:
            root = open_workspace(Path.cwd()).root
        except WorkspaceError:
            root = Path.cwd()
    target = Target(root=root, dialect=agent, scope=scope, home=Path.home(), env=dict(os.environ),
                    settings_file=settings)
    try:
        if uninstall:
            result = uninstall_hooks(target)
        else:
            budget = HookBudget(max_blocks=max_blocks, max_sessions=max_sessions, max_wall_s=max_wall_s)
            result = install_hooks(target, budget)
    except (InstallError, HookStateError) as exc:
        raise refuse(str(exc)) from None
    verb = "removed from" if uninstall else "installed in"
    typer.echo(f"quaere hooks {verb} {result.settings_path}{'' if result.changed else ' (already so)'}")
    for note in result.notes:
        typer.echo(f"note: {note}")
    if not uninstall:
        typer.echo(_pin_budget(root, budget))


def _pin_budget(root: Path, budget: HookBudget) -> str:
    """Pin the Stop hook's budget in the store's registration, where the agent cannot raise it."""
    from quaere.store import Store, StoreError, default_store_root

    store = Store(default_store_root(os.environ))
    try:
        workspace = open_workspace(root)
        store.update_registration(workspace.id, lambda r: r.model_copy(update={"budget": budget}))
    except (WorkspaceError, StoreError) as exc:
        return f"note: the block budget is not pinned in the store ({exc}); run `quaere init` first"
    return f"block budget pinned in {store.registration_path(workspace.id)}"


def register(app: typer.Typer) -> None:
    """Add ``goal``, ``hook`` and ``hooks install`` to ``app``."""
    app.command("goal")(goal)
    app.command("hook")(hook)
    group = typer.Typer(help="Install the agents' hook settings.", no_args_is_help=True)
    group.command("install")(hooks_install)
    app.add_typer(group, name="hooks")
