"""On a CPU task the judge waits for its runner's replies blocked, not polling: on a small machine a polling
judge takes a core from the kernel being timed, and the preempted round trips put an honest kernel's clock
bound milliseconds off (an unchanged initial kernel was flagged ``hidden_work``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from quaere.evaluate import isolation
from quaere.evaluate.runner_client import RunnerConfig, RunnerProcess


def test_the_judge_of_a_cpu_runner_waits_without_burning_a_core(tmp_path: Path) -> None:
    reads = isolation.read_roots([], os.environ, os.getcwd())
    config = RunnerConfig(
        device="cpu", library=None, entry="", policy=isolation.policy(True, False, reads, (str(tmp_path), "/dev")),
        env=isolation.runner_env(os.environ, tmp_path, {}), stderr_path=tmp_path / "runner.stderr",
        start_timeout_s=60.0,
    )
    cpu_s, wall_s = time.thread_time(), time.perf_counter()
    runner = RunnerProcess(config, cwd=tmp_path)
    try:
        runner.start()  # the judge waits for two replies while the runner starts Python and its sandbox
        cpu_s, wall_s = time.thread_time() - cpu_s, time.perf_counter() - wall_s
    finally:
        runner.close()
    # polling (200 ms per reply on a GPU task) would use most of the wait on this thread's clock
    assert cpu_s < 0.05, f"the judge used {cpu_s * 1e3:.0f} ms of CPU in a {wall_s * 1e3:.0f} ms wait"
