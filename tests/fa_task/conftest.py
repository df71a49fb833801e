"""Shared fixtures of the flash_attention_hopper task tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from quaere.task.loader import load_task


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The initial kernel built with the task's own build command and this machine's nvcc."""
    task = load_task("flash_attention_hopper")
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed here")
    folder = tmp_path_factory.mktemp("fa_build")
    output, depfile = folder / "kernel.so", folder / "kernel.d"
    command = task.spec.build.format(source=task.initial_kernel, output=output, depfile=depfile)
    done = subprocess.run(command, shell=True, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    assert depfile.exists() and "cuda_runtime.h" in depfile.read_text()
    return output
