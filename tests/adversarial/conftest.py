"""The attacker's workbench: a real workspace of the CPU task, registered in the test's own store, and
``quaere`` run as the agent runs it (a subprocess in the workspace, the same user: same-user mode)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from quaere.store import Store
from quaere.store.pinning import init_workspace
from quaere.workspace import Workspace


def correct_kernel() -> str:
    """Another version of the initial kernel: the same code and speed, other bytes (another content hash)."""
    from quaere.task.loader import load_task

    return load_task("cpu_softmax").initial_kernel.read_text() + "\n// the same kernel, saved again\n"


@dataclass(frozen=True)
class Bench:
    """One attack's setting: the workspace, the store the goal reads, and how to run quaere there."""

    ws: Workspace
    store: Store
    cache: Path

    def quaere(
        self, *args: str, stdin: str = "", cwd: Path | None = None, timeout: float = 600
    ) -> subprocess.CompletedProcess:
        env = {**os.environ, "QUAERE_CACHE_DIR": str(self.cache)}
        return subprocess.run([sys.executable, "-m", "quaere", *args], cwd=cwd or self.ws.root, env=env, input=stdin,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def goal(self, *args: str) -> dict:
        done = self.quaere("goal", "--json", *args)
        assert done.stdout, done.stderr
        return json.loads(done.stdout)

    def stop(self, session: str = "s") -> subprocess.CompletedProcess:
        payload = {"session_id": session, "transcript_path": "", "cwd": str(self.ws.root), "hook_event_name": "Stop",
                   "stop_hook_active": False, "last_assistant_message": "Done: the goal is met."}
        return self.quaere("hook", "stop", stdin=json.dumps(payload))


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("adversarial-cache")


@pytest.fixture
def bench(tmp_path: Path, store: Store, build_cache: Path) -> Bench:
    workspace, _ = init_workspace(store, tmp_path / "ws", "cpu_softmax", False, tmp_path)
    return Bench(workspace, store, build_cache)
