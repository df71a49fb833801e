"""The signed evaluation store outside the workspace: what the goal reads, and nothing else.

:mod:`.records` (typed entries), :mod:`.store` (the signed files), :mod:`.identity` (task and workspace
identities), :mod:`.classify` (full or partial run), :mod:`.pinning` (the pinned task, refusals by name).
"""

from quaere.store.records import (
    EvaluationEntry,
    PartialReason,
    Registration,
    RunKind,
    Starter,
    TaskIdentity,
    TrustMode,
)
from quaere.store.store import Store, StoreError, StoreProblem, StoreRead, Tampering, default_store_root

__all__ = [
    "EvaluationEntry",
    "PartialReason",
    "Registration",
    "RunKind",
    "Starter",
    "Store",
    "StoreError",
    "StoreProblem",
    "StoreRead",
    "Tampering",
    "TaskIdentity",
    "TrustMode",
    "default_store_root",
]
