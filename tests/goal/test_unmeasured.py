"""Without a device nothing can be measured: `quaere goal` says so in one line, not one per scenario."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from tests.hooks.factories import PINNED, entry, evaluation, spec

from quaere.goal import GoalState, check_goal
from quaere.goal_render import render_goal
from quaere.records import ScenarioVerdict, Verdict

WHY = "no GPU (nvidia-smi not found): nothing was run"


def not_run(count: int, why: str) -> tuple[ScenarioVerdict, ...]:
    """The verdicts the evaluator writes when it ran nothing."""
    return tuple(ScenarioVerdict(scenario_id=f"s{i}", verdict=Verdict.NOT_RUN, seed=1, detail=why)
                 for i in range(count))


def test_an_evaluation_that_ran_nothing_reads_as_one_line() -> None:
    unrun = evaluation("h1", ran=False).model_copy(update={"correctness": not_run(189, WHY)})
    status = check_goal(spec(), [entry(unrun)], "h1", PINNED)
    assert status.state is GoalState.UNMET and status.failing_scenarios == ()
    text = render_goal(status)
    assert text.count("\n") == 0, text
    assert "nothing could be measured: no GPU (nvidia-smi not found)" in text and "189" not in text


def test_a_build_failure_is_not_called_unmeasured() -> None:
    broken = evaluation("h1", ran=False, built=False).model_copy(
        update={"correctness": not_run(20, "build failed: nothing was run")})
    text = render_goal(check_goal(spec(), [entry(broken)], "h1", PINNED))
    assert "build failed" in text and "nothing could be measured" not in text and "s19" not in text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is needed to build the GPU task's kernel")
@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU is present: the goal can be measured")
def test_the_gpu_task_on_a_machine_without_a_gpu(tmp_path) -> None:
    def quaere(*args: str, cwd=tmp_path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "quaere", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=600, check=False)

    assert quaere("init", "fa", "--task", "flash_attention_hopper").returncode == 0
    assert quaere("eval", cwd=tmp_path / "fa").returncode == 1
    done = quaere("goal", cwd=tmp_path / "fa")
    assert done.returncode == 1 and done.stdout.count("\n") == 1, done.stdout
    assert done.stdout.startswith("goal: UNMET — nothing could be measured: no GPU")
