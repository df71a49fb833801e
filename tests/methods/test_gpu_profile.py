"""The profile digest of the Hopper task's initial kernel on a GPU: SASS mix, registers, Nsight Compute."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


def _quaere(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "quaere", *args], capture_output=True, text=True, timeout=900,
                          cwd=cwd)


def test_profile_digest_of_the_hopper_initial_kernel(tmp_path: Path):
    made = _quaere("init", "--task", "flash_attention_hopper", "ws", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    done = _quaere("tool", "profile", cwd=tmp_path / "ws")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "has not been evaluated: run `quaere eval`" in text
    assert " registers, stack " in text  # cuobjdump -res-usage of the built kernel
    mix = next(line for line in text.splitlines() if "instructions; by class:" in line)
    assert int(mix.split()[0]) > 100
    ncu = text.split("## Nsight Compute", 1)[1]
    assert ("SpeedOfLight" in ncu or "Speed Of Light" in ncu) or "not measured (" in ncu, ncu
