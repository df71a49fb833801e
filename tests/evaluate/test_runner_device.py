"""A runner sees one GPU, the judge's: with the host's others visible a candidate could spread a timed call over
several GPUs while every comparison runs on one, and each of the judge's clocks would believe it (the work is real
and inside the window). The GPU host lent so far has one GPU, so the runner's own process environment is what is
checked here, on a CPU runner started as the judge starts them. And the judge's own environment: which of the
caller's variables it goes without (the switches of the libraries it runs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from quaere.evaluate import isolation
from quaere.evaluate.runner_client import RunnerConfig, RunnerProcess


@pytest.mark.parametrize(("judge", "runner"), [(None, "0"), ("2,3", "2"), ("1", "1"), ("", ""),
                                               (" GPU-a1b2 ,GPU-c3d4", "GPU-a1b2"), ("MIG-x,MIG-y", "MIG-x")])
def test_the_runner_is_given_the_judges_device_alone(judge: str | None, runner: str, tmp_path: Path) -> None:
    base = {"PATH": "/usr/bin"} | ({} if judge is None else {"CUDA_VISIBLE_DEVICES": judge})
    assert isolation.runner_env(base, tmp_path, {})["CUDA_VISIBLE_DEVICES"] == runner


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_a_started_runner_process_has_one_device_in_its_environment(tmp_path: Path) -> None:
    base = {**os.environ, "CUDA_VISIBLE_DEVICES": "3,1,2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    reads = isolation.read_roots([], base, os.getcwd())
    config = RunnerConfig(
        device="cpu", library=None, entry="", policy=isolation.policy(True, False, reads, (str(tmp_path), "/dev")),
        env=isolation.runner_env(base, tmp_path, {}), stderr_path=tmp_path / "runner.stderr", start_timeout_s=60.0,
    )
    runner = RunnerProcess(config, cwd=tmp_path)
    try:
        runner.start()
        seen = _environ(runner.pid)
    finally:
        runner.close()
    assert seen["CUDA_VISIBLE_DEVICES"] == "3"
    assert seen["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"  # so that "3" names the same GPU to the judge and the runner


@pytest.mark.parametrize(("name", "dropped"), [
    ("LD_PRELOAD", True), ("CUDA_INJECTION64_PATH", True), ("CUDA_LAUNCH_BLOCKING", True),
    ("PYTORCH_NO_CUDA_MEMORY_CACHING", True), ("NVIDIA_TF32_OVERRIDE", True),
    ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", True), ("PYTHONWARNINGS", True), ("CUBLAS_WORKSPACE_CONFIG", True),
    ("CUDA_VISIBLE_DEVICES", False), ("CUDA_DEVICE_ORDER", False), ("LD_LIBRARY_PATH", False),
    ("PYTHONPATH", False), ("PATH", False), ("NVIDIA_VISIBLE_DEVICES", False), ("OMP_NUM_THREADS", False),
    ("HOME", False)])
def test_which_names_the_judge_leaves_out(name: str, dropped: bool) -> None:
    # The judge's own environment: the switches of the libraries it runs go, paths and the GPU choice stay.
    env, left_out = isolation.judge_environment({name: "1", "LANG": "C"})
    assert (name in left_out) is dropped and (name in env) is not dropped and env["LANG"] == "C"
