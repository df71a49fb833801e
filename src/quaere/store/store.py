"""The evaluation store: signed records outside the workspace, one folder per workspace.

Layout under the store's root (default ``$XDG_STATE_HOME/quaere``, else ``~/.local/state/quaere``)::

    keys/ed25519.pem, ed25519.pub      the key pair (private 0600), created on first write
    workspaces/<id>/registration.json  signed: the pinned task (name + sha256), candidate name, hook budget
    workspaces/<id>/task/              the evaluator's own copy of the pinned task
    workspaces/<id>/evaluations.jsonl  one signed EvaluationEntry per line, appended under lock, fsynced
    workspaces/<id>/hooks.json         the Stop hook's counters, signed (see quaere.hooks.state)

Readers verify every line with the public key. A line that is not JSON, not signed, badly signed, of
another workspace or out of sequence is a :class:`StoreProblem` named ``tampered``, and never counted.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from pydantic import ValidationError

from quaere.jsonl import append_line, exclusive_lock
from quaere.records import Evaluation, Record
from quaere.signing import (
    BadSignature,
    KeyFileError,
    Signer,
    Verifier,
    ensure_keys,
    load_verifier,
    read_signed,
    write_signed,
)
from quaere.store.identity import copy_task
from quaere.store.records import EvaluationEntry, Registration, TrustMode
from quaere.validation import describe_first

RECORDS_NAME = "evaluations.jsonl"
REGISTRATION_NAME = "registration.json"
TASK_COPY_NAME = "task"
# A workspace id is a hash of the workspace's path (quaere.workspace.Workspace.id). The service takes one from any local
# user: anything else (a "../..", an absolute path) would name a folder outside the store's workspaces.
WORKSPACE_ID = re.compile(r"^[0-9a-f]{24}$")
STORE_DIR_ENV = "QUAERE_STORE_DIR"


class StoreError(ValueError):
    """The store cannot answer: a missing registration, a tampered file, a key it cannot read. Names the file."""


class Tampering(str, Enum):
    """Why a store line was not counted; each reads as ``tampered`` to a person."""

    NOT_JSON = "not_json"  # torn or damaged bytes
    UNSIGNED = "unsigned"  # a plain JSON line: not written by the evaluator
    BAD_SIGNATURE = "bad_signature"  # edited after signing, or signed with another key
    BAD_PAYLOAD = "bad_payload"  # signed, but not an evaluation entry of this schema
    OTHER_WORKSPACE = "other_workspace"  # a genuine line copied from another workspace's store
    OUT_OF_SEQUENCE = "out_of_sequence"  # a genuine line repeated, moved, or lines removed before it


class StoreProblem(Record):
    file: str
    line: int
    tampering: Tampering
    detail: str = ""

    def render(self) -> str:
        return f"tampered ({self.tampering.value}): {self.file}:{self.line}: {self.detail}".rstrip(": ")


class StoreRead(Record):
    """The entries that verified, in file order, and one problem per line that did not."""

    entries: tuple[EvaluationEntry, ...] = ()
    problems: tuple[StoreProblem, ...] = ()

    @property
    def evaluations(self) -> list[Evaluation]:
        return [e.evaluation for e in self.entries]


def default_store_root(env: Mapping[str, str]) -> Path:
    """``$QUAERE_STORE_DIR``, else ``$XDG_STATE_HOME/quaere``, else ``$HOME/.local/state/quaere``."""
    if env.get(STORE_DIR_ENV):
        return Path(env[STORE_DIR_ENV])
    if env.get("XDG_STATE_HOME"):
        return Path(env["XDG_STATE_HOME"]) / "quaere"
    return Path(env.get("HOME") or Path.home()) / ".local" / "state" / "quaere"


@dataclass(frozen=True)
class Store:
    """One store root. ``trust_mode`` is the mode its writer runs in (written into every record)."""

    root: Path
    trust_mode: TrustMode = TrustMode.SAME_USER

    @property
    def keys_dir(self) -> Path:
        return self.root / "keys"

    @property
    def cache_dir(self) -> Path:
        """The build cache of the evaluator service (a same-user store uses the user's cache)."""
        return self.root / "cache"

    @property
    def _dir_mode(self) -> int:
        # A service's store is read by the agent's user (hooks, `quaere goal`); a same-user one by nobody else.
        return 0o755 if self.trust_mode is TrustMode.SEPARATE_USER else 0o700

    @property
    def _file_mode(self) -> int:
        return 0o644 if self.trust_mode is TrustMode.SEPARATE_USER else 0o600

    def folder(self, workspace_id: str) -> Path:
        """The workspace's folder in the store; :class:`StoreError` for an id that is not a workspace id."""
        if not WORKSPACE_ID.match(workspace_id):
            raise StoreError(f"workspace id {workspace_id[:80]!r}: expected 24 lowercase hex digits (a hash of the "
                             "workspace's path)")
        return self.root / "workspaces" / workspace_id

    def records_path(self, workspace_id: str) -> Path:
        return self.folder(workspace_id) / RECORDS_NAME

    def registration_path(self, workspace_id: str) -> Path:
        return self.folder(workspace_id) / REGISTRATION_NAME

    def task_copy(self, workspace_id: str) -> Path:
        return self.folder(workspace_id) / TASK_COPY_NAME

    def ensure_folder(self, workspace_id: str) -> Path:
        """The workspace's folder, created (with the store's modes) when missing; OSError when it cannot be."""
        return self._mkdirs(self.folder(workspace_id))

    def _mkdirs(self, path: Path) -> Path:
        for folder in (self.root, self.root / "workspaces", path):
            folder.mkdir(mode=self._dir_mode, exist_ok=True, parents=True)
        return path

    # -- keys -------------------------------------------------------------------------------------------
    def signer(self) -> Signer:
        """The private key, created on first use; :class:`StoreError` when this user cannot read it."""
        try:
            self._mkdirs(self.root)
            return ensure_keys(self.keys_dir)
        except KeyFileError as exc:
            raise StoreError(str(exc)) from None
        except PermissionError:
            raise StoreError(
                f"{self.keys_dir}: the signing key is not readable by this user (the store belongs to the "
                "evaluator service: only it signs records, only root or its user registers a workspace)"
            ) from None

    def verifier(self) -> Verifier:
        try:
            return load_verifier(self.keys_dir)
        except KeyFileError as exc:
            raise StoreError(str(exc)) from None

    # -- registration -----------------------------------------------------------------------------------
    def register(self, registration: Registration, task_folder: Path, replace: bool = False) -> Registration:
        """Pin the workspace's task: copy it into the store and sign the registration.

        An existing registration of another task is kept unless ``replace`` (a person's ``--force``).
        """
        signer = self.signer()  # first: a user who cannot sign must not change anything
        folder = self._mkdirs(self.folder(registration.workspace_id))
        path = self.registration_path(registration.workspace_id)
        if path.exists() and not replace:
            existing = self.registration(registration.workspace_id)
            if existing.task.sha256 != registration.task.sha256:
                raise StoreError(
                    f"{path}: this workspace is registered with task '{existing.task.reference}' "
                    f"(sha256 {existing.task.sha256[:12]}); re-registering it with '{registration.task.reference}' "
                    f"(sha256 {registration.task.sha256[:12]}) needs --force"
                )
            return existing
        copy_task(task_folder, self.task_copy(registration.workspace_id))
        for child in [self.task_copy(registration.workspace_id), *self.task_copy(registration.workspace_id).rglob("*")]:
            os.chmod(child, self._dir_mode if child.is_dir() else self._file_mode)
        write_signed(path, signer, registration.model_dump(mode="json"), self._file_mode)
        folder.chmod(self._dir_mode)
        self._give_to_owner(folder)
        return registration

    def _give_to_owner(self, folder: Path) -> None:
        """Root registering into a service's store: what it wrote belongs to the store's owner, who appends."""
        owner = self.root.stat()
        if os.geteuid() != 0 or owner.st_uid == 0:
            return
        for path in [folder, *folder.rglob("*")]:
            os.chown(path, owner.st_uid, owner.st_gid, follow_symlinks=False)

    def registration(self, workspace_id: str) -> Registration:
        """The verified registration; :class:`StoreError` naming the file when missing or tampered."""
        path = self.registration_path(workspace_id)
        try:
            registration = Registration.model_validate(read_signed(path, self.verifier()))
        except FileNotFoundError:
            raise StoreError(
                f"{path}: this workspace is not registered in the store {self.root} (run `quaere init --task ...`)"
            ) from None
        except BadSignature as exc:
            raise StoreError(str(exc)) from None
        except ValidationError as exc:
            raise StoreError(f"{path}: signed, but not a registration: {exc.errors()[0]['msg']}") from None
        if registration.workspace_id != workspace_id:  # another workspace's signed file, copied here
            raise StoreError(f"{path}: signed for workspace {registration.workspace_id}, not {workspace_id}")
        return registration

    def update_registration(self, workspace_id: str, change: Callable[[Registration], Registration]) -> Registration:
        """Re-sign the registration with ``change`` applied (the hook budget of ``hooks install``)."""
        with exclusive_lock(self.folder(workspace_id) / ".registration.lock"):
            updated = change(self.registration(workspace_id))
            write_signed(self.registration_path(workspace_id), self.signer(), updated.model_dump(mode="json"),
                         self._file_mode)
            return updated

    # -- evaluations ------------------------------------------------------------------------------------
    def append(self, workspace_id: str, make: Callable[[int], EvaluationEntry]) -> EvaluationEntry:
        """Sign and append the entry ``make(sequence)`` builds; the sequence is assigned under the lock."""
        signer = self.signer()
        folder = self._mkdirs(self.folder(workspace_id))
        path = self.records_path(workspace_id)
        with exclusive_lock(folder / ".evaluations.lock"):
            entry = make(_count_lines(path) + 1)
            if entry.workspace_id != workspace_id:
                raise StoreError(f"{path}: an entry of workspace {entry.workspace_id} cannot go here")
            append_line(path, signer.sign(entry.model_dump(mode="json")))
            os.chmod(path, self._file_mode)
        return entry

    def read(self, workspace_id: str) -> StoreRead:
        """Every entry that verifies; a missing file reads as empty, a missing key with lines as tampered."""
        path = self.records_path(workspace_id)
        if not path.exists():
            return StoreRead()
        try:
            verifier: Verifier | None = self.verifier()
        except StoreError:
            verifier = None
        entries: list[EvaluationEntry] = []
        problems: list[StoreProblem] = []
        for number, text in _lines(path):
            found = _check_line(text, number, workspace_id, verifier)
            if isinstance(found, EvaluationEntry):
                entries.append(found)
            else:
                problems.append(StoreProblem(file=str(path), line=number, tampering=found[0], detail=found[1]))
        return StoreRead(entries=tuple(entries), problems=tuple(problems))


def _lines(path: Path) -> list[tuple[int, str]]:
    """(1-based number among non-empty lines, text) of every non-empty line."""
    with open(path, "rb") as f:
        texts = [raw.decode("utf-8", errors="replace").strip() for raw in f]
    return list(enumerate((t for t in texts if t), start=1))


def _count_lines(path: Path) -> int:
    return len(_lines(path)) if path.exists() else 0


def _check_line(
    text: str, number: int, workspace_id: str, verifier: Verifier | None
) -> EvaluationEntry | tuple[Tampering, str]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return Tampering.NOT_JSON, f"{text[:60]!r}"
    if not isinstance(obj, dict) or "sig" not in obj:
        return Tampering.UNSIGNED, "a plain JSON line (the evaluator signs every line)"
    if verifier is None:
        return Tampering.BAD_SIGNATURE, "the store has no public key to verify it with"
    try:
        payload = verifier.verify(obj)
    except BadSignature as exc:
        return Tampering.BAD_SIGNATURE, str(exc)
    try:
        entry = EvaluationEntry.model_validate(payload)
    except ValidationError as exc:
        return Tampering.BAD_PAYLOAD, describe_first(exc)
    if entry.workspace_id != workspace_id:
        return Tampering.OTHER_WORKSPACE, f"an entry of workspace {entry.workspace_id}"
    if entry.sequence != number:
        return Tampering.OUT_OF_SEQUENCE, f"sequence {entry.sequence} on line {number}"
    return entry
