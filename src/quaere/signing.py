"""Ed25519 signatures over JSON objects: the key pair of a store, signed lines and signed files.

A signed line is ``{"payload": {...}, "sig": "<base64>"}`` where the signature covers the payload's
canonical bytes (sorted keys, no spaces, NaN allowed), so a reader re-serializes the parsed payload and
checks it without trusting the line's own spacing. The private key is created on first use with mode
0600 in the store's ``keys/`` folder; readers need only the public key beside it.

What a signature proves depends on who can read the private key: see ``docs/security.md`` (Modes).
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from quaere.jsonl import exclusive_lock

PRIVATE_NAME = "ed25519.pem"
PUBLIC_NAME = "ed25519.pub"


class KeyFileError(ValueError):
    """The store's key pair is missing, unreadable or malformed; the message names the file."""


class BadSignature(ValueError):
    """A signed object whose signature does not verify (edited, forged or torn)."""


def canonical_bytes(payload: Any) -> bytes:
    """The bytes a signature covers: one JSON text with sorted keys and no spaces (NaN kept as NaN)."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()


@dataclass(frozen=True)
class Verifier:
    """Checks signatures with a store's public key."""

    public_key: Ed25519PublicKey

    def verify(self, signed: Any) -> Any:
        """The payload of ``signed`` (a parsed ``{"payload", "sig"}`` object); :class:`BadSignature` if it
        is not of that shape or its signature does not match the payload."""
        if not isinstance(signed, dict) or set(signed) != {"payload", "sig"} or not isinstance(signed["sig"], str):
            raise BadSignature("not a signed record (expected exactly the keys 'payload' and 'sig')")
        try:
            signature = base64.b64decode(signed["sig"], validate=True)
            self.public_key.verify(signature, canonical_bytes(signed["payload"]))
        except (InvalidSignature, ValueError):
            raise BadSignature("the signature does not match the payload") from None
        return signed["payload"]


@dataclass(frozen=True)
class Signer(Verifier):
    """Signs payloads with a store's private key (and verifies, like any reader)."""

    private_key: Ed25519PrivateKey | None = None

    def sign(self, payload: Any) -> dict[str, Any]:
        """``{"payload": payload, "sig": ...}``; ``payload`` must be JSON-serializable."""
        assert self.private_key is not None
        signature = self.private_key.sign(canonical_bytes(payload))
        return {"payload": payload, "sig": base64.b64encode(signature).decode()}


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to a new file with ``mode`` from the start (never world-readable for a moment)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, mode)  # the umask may have narrowed it; the public key must stay readable
    os.replace(tmp, path)


def ensure_keys(keys_dir: Path) -> Signer:
    """The key pair in ``keys_dir``, created on first use (private key 0600, public key 0644)."""
    keys_dir.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(keys_dir / ".lock"):
        private_path = keys_dir / PRIVATE_NAME
        if not private_path.exists():
            key = Ed25519PrivateKey.generate()
            pem = key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
            raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            _write_new(private_path, pem, 0o600)
            _write_new(keys_dir / PUBLIC_NAME, base64.b64encode(raw) + b"\n", 0o644)
    return load_signer(keys_dir)


def load_signer(keys_dir: Path) -> Signer:
    """The private key of ``keys_dir``; :class:`KeyFileError` naming the file when it cannot be read."""
    path = keys_dir / PRIVATE_NAME
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except FileNotFoundError:
        raise KeyFileError(f"{path}: no signing key (the store has not been written to yet)") from None
    except PermissionError:
        raise KeyFileError(f"{path}: not readable by this user (the store belongs to the evaluator service)") from None
    except ValueError as exc:
        raise KeyFileError(f"{path}: not a PEM private key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path}: expected an Ed25519 private key, found {type(key).__name__}")
    return Signer(public_key=key.public_key(), private_key=key)


def load_verifier(keys_dir: Path) -> Verifier:
    """The public key of ``keys_dir``; :class:`KeyFileError` naming the file when missing or malformed."""
    path = keys_dir / PUBLIC_NAME
    try:
        raw = base64.b64decode(path.read_bytes().strip(), validate=True)
        return Verifier(Ed25519PublicKey.from_public_bytes(raw))
    except FileNotFoundError:
        raise KeyFileError(f"{path}: no public key (the store has not been written to yet)") from None
    except (ValueError, OSError) as exc:
        raise KeyFileError(f"{path}: not a base64 Ed25519 public key: {exc}") from None


def write_signed(path: Path, signer: Signer, payload: Any, mode: int = 0o600) -> None:
    """Replace ``path`` atomically with the signed ``payload`` (one JSON object, fsynced)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_new(path, json.dumps(signer.sign(payload), indent=1, allow_nan=True).encode() + b"\n", mode)


def read_signed(path: Path, verifier: Verifier) -> Any:
    """The verified payload of a file written by :func:`write_signed`.

    Raises FileNotFoundError when missing and :class:`BadSignature` (naming the file) when it is not JSON,
    not signed, or its signature does not match.
    """
    text = path.read_text()
    try:
        return verifier.verify(json.loads(text))
    except json.JSONDecodeError as exc:
        raise BadSignature(f"{path}: not JSON ({exc}): tampered or torn") from None
    except BadSignature as exc:
        raise BadSignature(f"{path}: {exc}: tampered") from None
