"""The strongest trust mode this machine allows, set up for a campaign.

As root, ``quaere run`` creates two system users: ``quaere-eval``, which runs the evaluator service and
owns the store, its key, the task copies and the build cache, and ``quaere-agent``, which runs the agent
and owns the workspace. The campaign itself (the in-process hooks) stays root. Anywhere else, or where a
non-root user could not run this Python (an interpreter under a private home folder), it is same-user
mode, and the reason is said.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from quaere.agents.bash_tool import RunAs
from quaere.serve.client import ServiceClient, ServiceError
from quaere.serve.server import SERVICE_FILE
from quaere.store.modes import mode_line
from quaere.store.records import TrustMode
from quaere.store.store import Store, default_store_root
from quaere.workspace import Workspace

SERVICE_USER = "quaere-eval"
AGENT_USER = "quaere-agent"
PROBE_USER = "nobody"  # tried first, so that no user is created on a machine where none could run quaere
SERVICE_ROOT = Path("/var/lib/quaere")
SOCKET_NAME = "service.sock"
START_TIMEOUT_S = 60.0
MODE_ENV = "QUAERE_TRUST_MODE"  # auto (default), same_user, or separate_user (required: an error if impossible)
SERVICE_DIR_ENV = "QUAERE_SERVICE_DIR"  # the service's store root (default /var/lib/quaere)


class DeployError(RuntimeError):
    """Separate-user mode could not be set up; the message says which step failed."""


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int
    home: Path

    @classmethod
    def of(cls, name: str) -> Account:
        entry = pwd.getpwnam(name)
        return cls(name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))


@dataclass
class Deployment:
    """Where the campaign's store is, which mode is in force and why, and who runs the agent."""

    store: Store
    reason: str = ""  # why this mode (and why not a stronger one)
    agent: Account | None = None  # None: the agent runs as this process's user
    agent_env: dict[str, str] = field(default_factory=dict)
    service: subprocess.Popen | None = None

    @property
    def mode(self) -> TrustMode:
        return self.store.trust_mode

    def run_as(self) -> RunAs | None:
        """How the agent's commands run: as the agent's account with its environment (None: as this user)."""
        return RunAs(self.agent.uid, self.agent.gid, self.agent_env) if self.agent is not None else None

    def line(self) -> str:
        return mode_line(self.mode) + (f" ({self.reason})" if self.reason else "")

    def adopt(self, workspace: Workspace) -> None:
        """Give the workspace to the agent's user and the workspace's store folder to the service's."""
        if self.agent is None:
            return
        for name in ("trace.jsonl", "ledger.jsonl"):  # created now, so root's later appends keep the owner
            (workspace.state / name).touch()
        _chown_tree(workspace.root, self.agent.uid, self.agent.gid)
        service = Account.of(SERVICE_USER)
        _chown_tree(self.store.folder(workspace.id), service.uid, service.gid)

    def close(self) -> None:
        if self.service is not None and self.service.poll() is None:
            self.service.terminate()
            try:
                self.service.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.service.kill()


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            os.chown(Path(folder) / name, uid, gid, follow_symlinks=False)
    os.chown(root, uid, gid)


def ensure_user(name: str, home: Path | None) -> Account:
    """The system account ``name``, created with ``useradd`` when missing (a home only when asked)."""
    try:
        return Account.of(name)
    except KeyError:
        pass
    command = ["useradd", "--system", "--user-group", "--shell", "/usr/sbin/nologin"]
    command += (["--create-home", "--home-dir", str(home)] if home
                else ["--no-create-home", "--home-dir", "/nonexistent"])
    done = subprocess.run([*command, name], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise DeployError(f"useradd {name} failed ({done.returncode}): {done.stderr.strip()}")
    return Account.of(name)


def as_account(account: Account) -> list[str]:
    """The command prefix that runs a program as ``account`` (its uid, its group, no other group)."""
    return ["setpriv", f"--reuid={account.uid}", f"--regid={account.gid}", "--clear-groups"]


def cannot_run_quaere(account: Account, python: str, env: Mapping[str, str]) -> str:
    """Why ``account`` cannot run ``python -m quaere`` with ``env`` ('' when it can): a real try, not a guess
    from permission bits."""
    done = subprocess.run(
        [*as_account(account), python, "-m", "quaere", "version"], cwd="/", env=dict(env),
        capture_output=True, text=True, check=False, timeout=120,
    )
    if done.returncode == 0:
        return ""
    last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return f"user {account.name} cannot run {python} -m quaere: {last}"


def start_service(
    store: Store, socket_path: Path, account: Account, python: str, env: Mapping[str, str]
) -> subprocess.Popen:
    """``quaere serve`` as ``account``; returns once it answers on its socket."""
    (store.root / SERVICE_FILE).unlink(missing_ok=True)
    process = subprocess.Popen(
        [*as_account(account), python, "-m", "quaere", "serve", "--store", str(store.root),
         "--socket", str(socket_path)],
        env={**env, "HOME": str(store.root)}, cwd=str(store.root), stdin=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise DeployError(f"quaere serve exited at start with status {process.returncode}")
        if (store.root / SERVICE_FILE).exists():
            try:
                ServiceClient(socket_path, timeout_s=5).ping()
                return process
            except ServiceError:
                pass
        time.sleep(0.2)
    process.kill()
    raise DeployError(f"quaere serve did not answer on {socket_path} within {START_TIMEOUT_S:.0f} s")


def separate_users(env: Mapping[str, str], python: str, root: Path = SERVICE_ROOT) -> Deployment:
    """Create the two users, give the store to the service's user, start the service."""
    child_env = {k: v for k, v in env.items() if k not in ("HOME", "QUAERE_STORE_DIR")}
    try:
        probe = [Account.of(PROBE_USER)]
    except KeyError:
        probe = []
    for account in probe + [ensure_user(SERVICE_USER, None), ensure_user(AGENT_USER, Path("/home") / AGENT_USER)]:
        why = cannot_run_quaere(account, python, child_env)
        if why:
            raise DeployError(f"{why} (install quaere where every user can read it)")
    service, agent = Account.of(SERVICE_USER), Account.of(AGENT_USER)
    socket_path = root / SOCKET_NAME
    for folder in (root, root / "workspaces"):
        folder.mkdir(parents=True, exist_ok=True)
        os.chown(folder, service.uid, service.gid)
        folder.chmod(0o755)
    store = Store(root, TrustMode.SEPARATE_USER)
    process = start_service(store, socket_path, service, python, child_env)
    agent_env = {"QUAERE_STORE_DIR": str(root), "HOME": str(agent.home), "USER": agent.name, "LOGNAME": agent.name}
    return Deployment(store=store, agent=agent, agent_env=agent_env, service=process)


def strongest(env: Mapping[str, str], python: str = sys.executable) -> Deployment:
    """Separate-user mode when this process is root and it can be set up; same-user mode otherwise.

    ``$QUAERE_TRUST_MODE`` may ask for ``same_user`` (tests, a machine one trusts) or require
    ``separate_user`` (then :class:`DeployError` when it cannot be had).
    """
    wanted = env.get(MODE_ENV, "auto")
    if wanted not in ("auto", TrustMode.SAME_USER.value, TrustMode.SEPARATE_USER.value):
        raise DeployError(f"${MODE_ENV}={wanted!r}: expected auto, same_user or separate_user")
    same = Store(default_store_root(env))
    if wanted == TrustMode.SAME_USER.value:
        return Deployment(same, f"asked for by ${MODE_ENV}")
    why = ""
    if os.geteuid() != 0:
        why = "not root: no dedicated user can be created; see docs/security.md, Modes"
    elif shutil.which("useradd") is None or shutil.which("setpriv") is None:
        why = "useradd or setpriv is missing: no dedicated user can be created"
    else:
        try:
            return separate_users(env, python, Path(env.get(SERVICE_DIR_ENV) or SERVICE_ROOT))
        except DeployError as exc:
            why = f"separate-user mode unavailable: {exc}"
    if wanted == TrustMode.SEPARATE_USER.value:
        raise DeployError(why)
    return Deployment(same, why)
