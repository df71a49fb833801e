"""The code follows the linter configured in pyproject.toml ([tool.ruff]): pyflakes (undefined names,
unused imports), pycodestyle, import order, bugbear, pyupgrade. Run in the test command so that CI
enforces it; `ruff check --fix .` mends what it can.

Why a test and not only a habit: an undefined name in a rarely taken branch (goal judging, since the goal
module was split) went unnoticed by the tests until the linter named it.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is a dev dependency: pip install -e '.[dev]'")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)], cwd=ROOT,
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
