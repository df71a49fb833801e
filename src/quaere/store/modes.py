"""The trust modes, said plainly, and which one a store is in as seen from the current user.

Same-user: the store lives outside the workspace and every line is signed, but the agent runs as the
user who owns the key, so it could read the key and sign a forgery, or delete the store. Edits made
without the key are detected; nothing is prevented. Separate-user: an evaluator service running as its
own user owns the store, the key, the task copies and the build cache; the agent's user can read the
records and the public key but write none of them.
"""

from __future__ import annotations

import os
from pathlib import Path

from quaere.signing import PRIVATE_NAME
from quaere.store.records import TrustMode

MODE_TEXT = {
    TrustMode.SAME_USER: (
        "the store is outside the workspace and signed, but the agent's user can read its key: "
        "tampering is detected, not prevented"
    ),
    TrustMode.SEPARATE_USER: (
        "an evaluator service running as its own user owns the store, its key, the task copies and the build "
        "cache; the agent's user can read the records but write none of them"
    ),
}


def mode_line(mode: TrustMode) -> str:
    """The one line printed at the start of a campaign and under every evaluation."""
    return f"trust mode: {mode.value.replace('_', '-')} — {MODE_TEXT[mode]}"


def mode_as_seen(store_root: Path) -> TrustMode:
    """The mode in force for the current user: separate-user only when this user can neither read the
    store's private key nor write its folders (whatever the records claim)."""
    key = store_root / "keys" / PRIVATE_NAME
    writable = any(os.access(p, os.W_OK) for p in (store_root, store_root / "workspaces") if p.exists())
    readable_key = key.exists() and os.access(key, os.R_OK)
    if not store_root.exists() or writable or readable_key:
        return TrustMode.SAME_USER
    return TrustMode.SEPARATE_USER
