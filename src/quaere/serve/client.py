"""The thin client of the evaluator service: send one request on its Unix socket, read one reply."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from quaere.serve.protocol import REPLY, Ping, Pong, Recorded, Refused, Reply
from quaere.serve.protocol import Evaluate as EvaluateRequest
from quaere.store.records import EvaluationEntry


class ServiceError(RuntimeError):
    """The service could not be reached, answered nonsense, or refused; the message says which."""


@dataclass(frozen=True)
class ServiceClient:
    socket_path: Path
    timeout_s: float = 3600.0  # a full evaluation on a GPU takes about a minute; a cold build much longer

    def call(self, request: Ping | EvaluateRequest) -> Reply:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(self.timeout_s)
                conn.connect(str(self.socket_path))
                conn.sendall(request.model_dump_json().encode() + b"\n")
                conn.shutdown(socket.SHUT_WR)
                chunks = []
                while chunk := conn.recv(1 << 16):
                    chunks.append(chunk)
        except OSError as exc:
            raise ServiceError(f"{self.socket_path}: the evaluator service cannot be reached: {exc}") from None
        try:
            return REPLY.validate_json(b"".join(chunks))
        except ValidationError as exc:
            raise ServiceError(
                f"{self.socket_path}: the service's reply is not understood: {exc.errors()[0]['msg']}"
            ) from None

    def ping(self) -> Pong:
        reply = self.call(Ping())
        if not isinstance(reply, Pong):
            raise ServiceError(f"{self.socket_path}: expected a pong, got {reply.kind}")
        return reply

    def evaluate(self, request: EvaluateRequest) -> EvaluationEntry:
        """The signed entry the service recorded; :class:`ServiceError` with its reason when refused."""
        reply = self.call(request)
        if isinstance(reply, Refused):
            raise ServiceError(f"the evaluator service refused: {reply.reason}")
        if not isinstance(reply, Recorded):
            raise ServiceError(f"{self.socket_path}: expected a record, got {reply.kind}")
        return reply.entry
