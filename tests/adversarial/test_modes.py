"""The two trust modes, for real: the evaluator service on a Unix socket, then separate-user mode with the
dedicated users a root `quaere run` creates.

Attack (separate-user mode): the agent's user appends a forged line to the store, reads the signing key,
or re-registers its workspace with another task. Defence: the store, its key and the task copies belong to
the service's user; the agent's user can read the records and the public key, and write nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import quaere
from quaere.serve.client import ServiceClient
from quaere.serve.protocol import Evaluate
from quaere.store import Store, TrustMode

SOURCE_ROOT = Path(quaere.__file__).resolve().parent.parent
VENV_PACKAGES = ("pydantic>=2.7", "typer>=0.12", "rich>=13.7", "pyyaml>=6.0", "numpy>=1.26", "httpx>=0.27",
                 "cryptography>=42")


def _start_service(store: Store, socket_path: Path) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-m", "quaere", "serve", "--store", str(store.root), "--socket", str(socket_path),
         "--trust-mode", "same_user"], stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 60
    while not (store.root / "service.json").exists():
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read() if process.stderr else ""
        time.sleep(0.1)
    return process


def test_the_service_evaluates_source_bytes_and_signs_them_into_its_store(bench):
    socket_path = bench.store.root / "service.sock"
    service = _start_service(bench.store, socket_path)
    try:
        done = bench.quaere("eval", "--no-benchmark", "--json")  # the store has a service: quaere eval is its client
        assert done.returncode == 0, done.stderr
        entry = json.loads(done.stdout)
        assert entry["evaluation"]["candidate_path"].startswith(str(bench.store.root / "candidates"))
        assert entry["trust_mode"] == "same_user" and entry["partial"] == ["no_benchmark"]
        assert (bench.store.read(bench.ws.id).entries[0].evaluation.candidate_hash
                == entry["evaluation"]["candidate_hash"])
        client = ServiceClient(socket_path)
        assert client.ping().store_root == str(bench.store.root)
        refused = client.call(Evaluate.of("0" * 24, "k.cpp", b"int x;"))  # well-formed, never registered
        assert refused.kind == "refused" and "registration.json" in refused.reason
        assert client.call(Evaluate.of(bench.ws.id, "../k.cpp", b"int x;")).kind == "refused"
    finally:
        service.terminate()
        service.wait(timeout=30)
    assert not (bench.store.root / "service.json").exists() and not socket_path.exists()


# -- separate-user mode -----------------------------------------------------------------------------------


def _why_no_separate_users() -> str:
    if os.geteuid() != 0:
        return "needs root (to create the dedicated users)"
    for tool in ("useradd", "setpriv"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not Path("/usr/bin/python3").exists():
        return "no system Python (/usr/bin/python3) for an interpreter every user can run"
    return ""


@pytest.fixture(scope="session")
def shared_python() -> Path:
    """A virtual environment every user can run (the test's own interpreter may sit under a private home
    folder): quaere's dependencies from the package index, quaere itself from this checkout (PYTHONPATH)."""
    why = _why_no_separate_users()
    if why:
        pytest.skip(f"separate-user mode cannot be set up here: {why}")
    tag = hashlib.sha256(" ".join(VENV_PACKAGES).encode()).hexdigest()[:12]
    venv = Path(tempfile.gettempdir()) / f"quaere-shared-venv-{tag}"
    python = venv / "bin" / "python"
    if not (venv / "ready").exists():
        shutil.rmtree(venv, ignore_errors=True)
        made = subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"no venv from /usr/bin/python3: {made.stderr.strip()[-200:]}")
        pip = subprocess.run([str(python), "-m", "pip", "install", "-q", *VENV_PACKAGES], capture_output=True,
                             text=True, timeout=600)
        if pip.returncode != 0:
            pytest.skip(f"pip could not install quaere's dependencies: {pip.stderr.strip()[-300:]}")
        (venv / "ready").touch()
    os.chmod(venv, 0o755)
    return python


@pytest.fixture
def separate(shared_python: Path):
    """Separate-user mode set up by the same code `quaere run` uses as root, in a folder every user can reach."""
    from quaere.serve.deploy import DeployError, strongest

    base = Path(tempfile.mkdtemp(prefix="quaere-separate-"))
    base.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(SOURCE_ROOT), "QUAERE_TRUST_MODE": "separate_user",
           "QUAERE_SERVICE_DIR": str(base / "store")}
    try:
        deployment = strongest(env, python=str(shared_python))
    except DeployError as exc:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"separate-user mode cannot be set up here: {exc}")
    yield deployment, base, env
    deployment.close()
    shutil.rmtree(base, ignore_errors=True)


def test_separate_user_mode_the_agent_can_evaluate_but_write_nothing_of_the_store(separate, shared_python):
    from quaere.serve.deploy import as_account
    from quaere.store.pinning import init_workspace

    deployment, base, env = separate
    assert deployment.mode is TrustMode.SEPARATE_USER and deployment.agent is not None
    workspace, _ = init_workspace(deployment.store, base / "ws", "cpu_softmax", False, base)
    deployment.adopt(workspace)
    agent_env = {"PATH": os.environ["PATH"], "PYTHONPATH": env["PYTHONPATH"], **deployment.agent_env}

    def as_agent(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run([*as_account(deployment.agent), *command], cwd=workspace.root, env=agent_env,
                              capture_output=True, text=True, timeout=600, check=False)

    done = as_agent(str(shared_python), "-m", "quaere", "eval", "--json")
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)
    assert (entry["kind"], entry["trust_mode"]) == ("full", "separate_user")
    store = deployment.store
    records = store.records_path(workspace.id)
    forged = as_agent("bash", "-c", f"echo '{{\"payload\": {{}}, \"sig\": \"x\"}}' >> {records}")
    assert forged.returncode != 0 and "Permission denied" in forged.stderr
    assert as_agent("cat", str(store.keys_dir / "ed25519.pem")).returncode != 0
    assert as_agent("cp", "/dev/null", str(store.task_copy(workspace.id) / "task.toml")).returncode != 0
    again = as_agent(str(shared_python), "-m", "quaere", "init", "--force", "--task", "cpu_softmax",
                     str(workspace.root))
    assert again.returncode == 2 and "signing key is not readable by this user" in again.stderr
    goal = as_agent(str(shared_python), "-m", "quaere", "goal", "--json")  # the agent can read and verify
    assert json.loads(goal.stdout)["full_runs"] == 1, goal.stderr
    assert [e.trust_mode for e in store.read(workspace.id).entries] == [TrustMode.SEPARATE_USER]


def test_quaere_run_as_root_runs_the_agent_as_its_own_user_beside_the_service(shared_python):
    """A whole campaign (scripted agent) in separate-user mode: said at the start, the agent's commands run
    as quaere-agent, its `quaere eval` goes through the service, and its attempt to forge fails."""
    from quaere.trace import ToolResult, TrustModeEvent, read_trace

    base = Path(tempfile.mkdtemp(prefix="quaere-campaign-"))
    base.chmod(0o755)
    service_dir, workspace = base / "store", base / "ws"
    evaluate = f"{shared_python} -m quaere eval"
    script = base / "script.json"
    script.write_text(json.dumps([
        {"bash": "id -un"},
        {"bash": evaluate},
        {"bash": f"echo forged >> {service_dir}/workspaces/*/evaluations.jsonl"},
        {"stop": "Done."},
    ]))
    env = {**os.environ, "PYTHONPATH": str(SOURCE_ROOT), "QUAERE_TRUST_MODE": "separate_user",
           "QUAERE_SERVICE_DIR": str(service_dir)}
    try:
        done = subprocess.run([str(shared_python), "-m", "quaere", "run", "--task", "cpu_softmax",
                               "--agent", "scripted", "--script", str(script), "--workspace", str(workspace),
                               "--sessions", "1", "--no-live"],
                              env=env, capture_output=True, text=True, timeout=900, check=False)
        assert "trust mode: separate-user" in done.stderr, done.stderr[-3000:]
        events = read_trace(workspace / ".quaere" / "trace.jsonl").events
        assert [e.mode for e in events if isinstance(e, TrustModeEvent)] == ["separate_user"]
        outputs = [e.output for e in events if isinstance(e, ToolResult)]
        assert outputs[0].strip() == "quaere-agent"
        assert "Permission denied" in outputs[2]
        store = Store(service_dir, TrustMode.SEPARATE_USER)
        [folder] = (service_dir / "workspaces").iterdir()
        read = store.read(folder.name)
        assert read.problems == () and [e.trust_mode for e in read.entries][:1] == [TrustMode.SEPARATE_USER]
        assert workspace.stat().st_uid == pwd.getpwnam("quaere-agent").pw_uid
    finally:
        shutil.rmtree(base, ignore_errors=True)
