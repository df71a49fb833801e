"""Attack: `quaere eval --task ./mytask` where the agent's copy of the task has an initial kernel that
sleeps, so that the candidate is timed against a slow baseline and its ratio looks large.

Defence: the run is classified against the pinned task by content hash: another task makes it partial
(``other_task``) and the goal never counts it; the goal's confirmation runs the pinned task's copy.
"""

from __future__ import annotations

import json
import shutil

from quaere.task.loader import SHIPPED_TASKS_DIR


def sleepy_initial(sleep_ms: int) -> str:
    """The initial kernel, made slow: every call sleeps ``sleep_ms`` before doing its work."""
    return SLEEPY_INITIAL.replace("usleep(20000)", f"usleep({sleep_ms * 1000})")


SLEEPY_INITIAL = """// The initial kernel, made slow: every call sleeps before doing its work.
#include <cmath>
#include <unistd.h>
extern "C" int softmax_rows(const float* x, float* y, int rows, int cols) {
    usleep(20000);
    for (int r = 0; r < rows; ++r) {
        const float* in = x + static_cast<long>(r) * cols;
        float* out = y + static_cast<long>(r) * cols;
        float m = in[0];
        for (int c = 1; c < cols; ++c) m = std::fmax(m, in[c]);
        float sum = 0.0f;
        for (int c = 0; c < cols; ++c) { out[c] = std::exp(in[c] - m); sum += out[c]; }
        for (int c = 0; c < cols; ++c) out[c] /= sum;
    }
    return 0;
}
"""


def test_another_task_with_a_sleeping_initial_kernel_never_counts(bench):
    mine = bench.ws.root / "mytask"
    shutil.copytree(SHIPPED_TASKS_DIR / "cpu_softmax", mine, ignore=shutil.ignore_patterns("__pycache__"))
    (mine / "kernel.cpp").write_text(sleepy_initial(50))
    done = bench.quaere("eval", "--task", "./mytask", "--json")
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)
    ratios = [b["timings"][1]["median_ms"] / b["timings"][0]["median_ms"] for b in entry["evaluation"]["benchmarks"]]
    assert min(ratios) > 1.5  # the attack works on its own terms: the candidate looks fast against it
    assert (entry["kind"], entry["partial"]) == ("partial", ["other_task"])
    assert entry["task"]["sha256"] != bench.store.registration(bench.ws.id).task.sha256
    status = bench.goal("--confirm")
    assert status["state"] == "unmet" and status["full_runs"] == 0 and status["confirmations"] == 0
    assert "partial runs never count" in status["problems"][0]
