"""Shared fixtures of the `quaere task new` / `quaere task check` tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
REFERENCES = HERE / "references.py"
CPU_KERNEL = Path(__file__).parents[2] / "src" / "quaere" / "task" / "tasks" / "cpu_softmax" / "kernel.cpp"
SOFTMAX_ANSWERS = ("--shape", "x=rows,cols", "--shape", "y=rows,cols", "--flops", "5*rows*cols")


def quaere(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    """``quaere ARGS`` as a user runs it: a real process, the build cache in ``cache``."""
    env = {**os.environ, "QUAERE_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "quaere", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False, timeout=600)


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("quaere-cache")


def write_kernel(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path
