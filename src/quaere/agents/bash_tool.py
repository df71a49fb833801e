"""The one tool of the built-in loops: run a bash command in the workspace, with a time limit.

The command runs in its own process group so a timeout kills everything it started (a hung evaluation,
a background job), stdout and stderr are merged in the order they were written, and the text handed back
to the model is cut in the middle (head and tail kept) so one noisy command cannot fill the context.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class RunAs:
    """Another account for the agent's commands (separate-user mode, set up by a root ``quaere run``): its
    uid and gid (no supplementary group), and variables laid over the inherited environment."""

    uid: int
    gid: int
    env: Mapping[str, str] = field(default_factory=dict)

    def popen_args(self, env: Mapping[str, str] | None) -> dict:
        return {"user": self.uid, "group": self.gid, "extra_groups": [], "env": {**(env or os.environ), **self.env}}


@dataclass(frozen=True)
class BashResult:
    output: str  # stdout and stderr merged, whole
    exit_code: int  # -9 style negative values are signals; 124 after a timeout
    timed_out: bool = False

    def for_model(self, max_chars: int) -> str:
        """What the model reads: the output cut to ``max_chars`` and the exit status."""
        text = self.output
        if len(text) > max_chars:
            head = max_chars * 2 // 3
            tail = max_chars - head
            text = f"{text[:head]}\n[... {len(text) - max_chars} characters cut ...]\n{text[-tail:]}"
        status = f"timed out (exit {self.exit_code})" if self.timed_out else f"exit {self.exit_code}"
        text = text.rstrip("\n")
        return f"{text}\n[{status}]" if text else f"[{status}]"


def run_bash(
    command: str, cwd: Path, timeout_s: float, env: Mapping[str, str] | None = None, run_as: RunAs | None = None
) -> BashResult:
    """Run ``command`` with ``bash -c`` in ``cwd`` (as ``run_as`` when given); kill its whole process group
    after ``timeout_s``."""
    account = run_as.popen_args(env) if run_as is not None else {"env": dict(env) if env is not None else None}
    process = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        **account,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        raw, _ = process.communicate(timeout=timeout_s)
        return BashResult(raw.decode("utf-8", errors="replace"), process.returncode)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        raw, _ = process.communicate()
        return BashResult(raw.decode("utf-8", errors="replace"), 124, timed_out=True)
    except BaseException:
        _kill_group(process.pid)  # Ctrl-C or a crash of ours: leave nothing running behind
        raise


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
