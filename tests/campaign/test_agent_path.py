"""`quaere run` puts its own installation's `quaere` first on the agent's PATH."""

from __future__ import annotations

from pathlib import Path

from quaere.agents.config import with_quaere_first


def test_the_folder_holding_quaere_goes_first_once(tmp_path: Path) -> None:
    scripts = tmp_path / "venv" / "bin"
    scripts.mkdir(parents=True)
    (scripts / "quaere").write_text("#!/bin/sh\n")
    assert with_quaere_first("/usr/bin:/bin", scripts) == f"{scripts}:/usr/bin:/bin"
    assert with_quaere_first(f"/usr/bin:{scripts}:/bin", scripts) == f"{scripts}:/usr/bin:/bin"  # moved, not doubled
    first = f"{scripts}:/usr/bin"
    assert with_quaere_first(first, scripts) == first


def test_a_folder_without_quaere_leaves_path_alone(tmp_path: Path) -> None:
    assert with_quaere_first("/usr/bin:/bin", tmp_path) == "/usr/bin:/bin"
