"""Every test gets its own evaluation store (nothing is signed into the user's real one) and same-user
mode: a `quaere run` as root in a test never creates system users (tests/adversarial/test_modes.py asks
for separate-user mode on purpose)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quaere.store import Store


@pytest.fixture(autouse=True)
def isolated_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$QUAERE_STORE_DIR`` set to a fresh folder (subprocesses inherit it)."""
    root = tmp_path_factory.mktemp("store")
    monkeypatch.setenv("QUAERE_STORE_DIR", str(root))
    monkeypatch.setenv("QUAERE_TRUST_MODE", "same_user")
    return root


@pytest.fixture
def store(isolated_store: Path) -> Store:
    return Store(isolated_store)
