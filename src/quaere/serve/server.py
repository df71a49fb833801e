"""``quaere serve``: the evaluator service of separate-user mode, on a Unix socket.

It runs as a dedicated user (``quaere-eval``) that owns the store, its key, the task copies and the build
cache. A client (``quaere eval`` as the agent's user, or the campaign's Stop hook) sends the candidate's
source bytes; the service writes them into its own folder, evaluates them on the pinned task's copy,
signs the entry into the store and sends it back. Evaluations run one at a time (one device).

On start it writes ``service.json`` (signed) into the store root, so every client that reads the store
finds the socket; on stop it removes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socketserver
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from quaere.evaluate.options import EvalOptions
from quaere.evaluate.source_file import source_suffix, text_problem
from quaere.goal import MAX_CONFIRMATIONS, GoalState
from quaere.goal_source import store_goal
from quaere.recording import Evaluate, record_evaluation
from quaere.records import Record
from quaere.runner.sandbox import make_undumpable
from quaere.serve.protocol import MAX_REQUEST_BYTES, REPLY, REQUEST, Ping, Pong, Recorded, Refused
from quaere.serve.protocol import Evaluate as EvaluateRequest
from quaere.signing import BadSignature, read_signed, write_signed
from quaere.store.pinning import pinned_task
from quaere.store.records import Registration, Starter
from quaere.store.store import Store, StoreError
from quaere.task.loader import Task
from quaere.task.spec import TaskError

SERVICE_FILE = "service.json"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,120}$")


class ServiceInfo(Record):
    """Where the store's service listens; signed with the store's key."""

    socket: str
    uid: int
    pid: int
    started_at: float


def read_service_info(store: Store) -> ServiceInfo | None:
    """The service of ``store`` (None when none was started); :class:`StoreError` when the file is forged."""
    path = store.root / SERVICE_FILE
    try:
        return ServiceInfo.model_validate(read_signed(path, store.verifier()))
    except FileNotFoundError:
        return None
    except (BadSignature, ValidationError) as exc:
        raise StoreError(f"{path}: {exc}") from None


def confirmation_refusal(
    store: Store, registration: Registration, task: Task, request: EvaluateRequest, candidate_hash: str
) -> str | None:
    """Why the service does not run ``request`` (which asks for the goal's confirmation) as one; None when it is due.

    The client's ``started_by`` is an ask, never a label: any local user may write it. A confirmation is a full
    run (no ``scenarios``, no ``seed``, ``benchmark`` on, ``no_device`` off), and is due only when the goal of
    ``candidate_hash`` (the sha256 of the source bytes: its content hash), judged on this store as ``quaere goal``
    judges it, is UNCONFIRMED: the pooled full runs hold and fewer than ``MAX_CONFIRMATIONS`` confirmations ran.
    """
    given = {"scenarios": request.scenarios is not None, "seed": request.seed is not None,
             "benchmark": not request.benchmark, "no_device": request.no_device}
    departs = [name for name, set_ in given.items() if set_]
    if departs:
        return (f"field 'started_by': a confirmation is a full run, and this request sets {', '.join(departs)}; "
                "nothing was evaluated")
    status, _ = store_goal(store, registration, task).status(candidate_hash)
    if status.state is GoalState.UNCONFIRMED:
        return None
    return (f"field 'started_by': no confirmation is due for candidate {candidate_hash[:12]}: its goal on the "
            f"service's store is {status.state.value}, and the service runs a confirmation only when the pooled "
            f"full runs hold and fewer than {MAX_CONFIRMATIONS} confirmations ran; nothing was evaluated")


class EvaluatorService:
    """Answers requests; one evaluation at a time."""

    def __init__(self, store: Store, evaluate: Evaluate) -> None:
        self.store, self.evaluate = store, evaluate
        self.lock = threading.Lock()

    def answer(self, raw: bytes) -> bytes:
        """One reply line for one request line; never raises."""
        try:
            request = REQUEST.validate_json(raw)
        except ValidationError as exc:
            error = exc.errors()[0]
            reply = Refused(reason=f"bad request: field '{'.'.join(map(str, error['loc']))}': {error['msg']}")
        else:
            reply = self._dispatch(request)
        return REPLY.dump_json(reply) + b"\n"

    def _dispatch(self, request: Ping | EvaluateRequest) -> Pong | Recorded | Refused:
        if isinstance(request, Ping):
            return Pong(trust_mode=self.store.trust_mode, store_root=str(self.store.root), uid=os.getuid())
        try:
            with self.lock:
                return self._evaluate(request)
        except (StoreError, TaskError, OSError, ValueError) as exc:
            return Refused(reason=f"{type(exc).__name__}: {exc}")

    def _evaluate(self, request: EvaluateRequest) -> Recorded | Refused:
        if not _SAFE_NAME.match(request.source_name):
            return Refused(reason=f"field 'source_name': '{request.source_name}' is not a plain file name")
        registration = self.store.registration(request.workspace_id)
        task = pinned_task(self.store, registration)
        data = request.source
        # The name is the client's: an 'x.o' would be linked by the build command, and object code passes every text
        # rule of the audit unread. run_evaluation refuses it too; refused here, nothing is recorded.
        problem = text_problem(request.source_name, data, source_suffix(task.spec))
        if problem:
            return Refused(reason=f"field 'source_name' or 'source_b64': {problem}")
        digest = hashlib.sha256(data).hexdigest()
        if request.started_by is Starter.CONFIRMATION:  # an ask: judged here, under the lock, on the store
            why = confirmation_refusal(self.store, registration, task, request, digest)
            if why is not None:
                return Refused(reason=why)
        folder = self.store.root / "candidates" / digest
        folder.mkdir(parents=True, exist_ok=True, mode=0o755)
        source = folder / request.source_name
        if not source.exists():
            source.write_bytes(data)
        scenarios_file = None
        if request.scenarios is not None:
            scenarios_file = Path(tempfile.mkstemp(prefix="scenarios.", suffix=".json", dir=folder)[1])
            scenarios_file.write_text(json.dumps([s.model_dump(mode="json") for s in request.scenarios]))
        options = EvalOptions(seed=request.seed, scenarios_file=scenarios_file, benchmark=request.benchmark,
                              no_device=request.no_device, cache_dir=self.store.cache_dir)
        try:
            entry = record_evaluation(self.store, registration, task, source, options, request.started_by,
                                      self.evaluate)  # CONFIRMATION only when due: checked above
        finally:
            if scenarios_file is not None:
                scenarios_file.unlink(missing_ok=True)
        return Recorded(entry=entry)


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        raw = self.rfile.readline(MAX_REQUEST_BYTES)
        self.wfile.write(self.server.service.answer(raw))  # type: ignore[attr-defined]


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True


def serve(store: Store, socket_path: Path, evaluate: Evaluate, ready: Callable[[], None] | None = None) -> None:
    """Listen on ``socket_path`` until interrupted; announce the socket in the store's ``service.json``. The
    process makes itself non-dumpable first: it holds the signing key, and its runners run as its user, so without
    that (and without a Yama policy) their ``/proc/<pid>/mem`` could read it."""
    make_undumpable()
    socket_path.unlink(missing_ok=True)
    socket_path.parent.mkdir(parents=True, exist_ok=True)
    server = _Server(str(socket_path), _Handler)
    server.service = EvaluatorService(store, evaluate)  # type: ignore[attr-defined]
    os.chmod(socket_path, 0o666)  # any local user may ask for an evaluation; none can write the store
    info = ServiceInfo(socket=str(socket_path), uid=os.getuid(), pid=os.getpid(), started_at=time.time())
    write_signed(store.root / SERVICE_FILE, store.signer(), info.model_dump(mode="json"), 0o644)
    try:
        if ready is not None:
            ready()
        server.serve_forever()
    finally:
        server.server_close()
        (store.root / SERVICE_FILE).unlink(missing_ok=True)
        socket_path.unlink(missing_ok=True)
