"""Every test gets its own evaluation store (nothing is signed into the user's real one) and same-user
mode: a `quaere run` as root in a test never creates system users (tests/adversarial/test_modes.py asks
for separate-user mode on purpose)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from quaere.agents.config import with_quaere_first
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


@pytest.fixture(autouse=True, scope="session")
def quaere_on_path() -> Iterator[None]:
    """This interpreter's ``quaere`` first on PATH, as ``quaere run`` sets it for its agent: the campaign
    tests call the library (``run_campaign``) directly, and their agents run ``quaere eval`` in a shell
    (under ``.venv/bin/python -m pytest`` nothing else would put the venv's ``quaere`` there). Session-wide,
    so module-scoped campaign fixtures see it too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", with_quaere_first(os.environ.get("PATH", ""), Path(sys.executable).parent))
        yield
