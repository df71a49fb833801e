"""Attack: after a full evaluation that fails, run `quaere eval --scenarios easy.json --seed N
--no-benchmark` with easy shapes under the real scenario ids, so that the easy run replaces the full one
(the goal once said "correctness: 20 of 1 scenarios fail" and judged on the easy run).

Defence: every run is classified on the store's side (an Enum, with its reasons); only full runs count,
all of them pooled; partial ones are shown as such and never replace a full one.
"""

from __future__ import annotations

import json

from quaere.store.records import PartialReason, RunKind

WRONG_ON_WIDE_ROWS = """// Correct on rows of up to 100 columns; wide rows lose their last column.
#include <cmath>
extern "C" int softmax_rows(const float* x, float* y, int rows, int cols) {
    int used = cols > 100 ? cols - 1 : cols;
    for (int r = 0; r < rows; ++r) {
        const float* in = x + static_cast<long>(r) * cols;
        float* out = y + static_cast<long>(r) * cols;
        float m = in[0];
        for (int c = 1; c < used; ++c) m = std::fmax(m, in[c]);
        float sum = 0.0f;
        for (int c = 0; c < used; ++c) { out[c] = std::exp(in[c] - m); sum += out[c]; }
        for (int c = 0; c < cols; ++c) out[c] = c < used ? out[c] / sum : 0.0f;
    }
    return 0;
}
"""


def test_partial_runs_are_recorded_as_such_and_never_replace_the_full_one(bench, tmp_path):
    bench.ws.candidate.write_text(WRONG_ON_WIDE_ROWS)
    full = bench.quaere("eval", "--json")
    assert full.returncode == 1, full.stderr
    failing = [v["scenario_id"] for v in json.loads(full.stdout)["evaluation"]["correctness"]
               if v["verdict"] != "passed"]
    assert failing
    easy = tmp_path / "easy.json"
    easy.write_text(json.dumps([{"id": i, "params": {"rows": 2, "cols": 8, "scale": 1.0, "offset": 0.0}}
                                for i in failing]))
    done = bench.quaere("eval", "--json", "--scenarios", str(easy), "--seed", "3", "--no-benchmark")
    assert done.returncode == 0, done.stderr  # every easy shape passes, under the real ids
    partial = json.loads(done.stdout)
    assert partial["kind"] == RunKind.PARTIAL.value
    assert partial["partial"] == [r.value for r in
                                  (PartialReason.SCENARIOS_FILE, PartialReason.FIXED_SEED, PartialReason.NO_BENCHMARK)]
    status = bench.goal()
    assert status["state"] == "unmet" and status["full_runs"] == 1
    assert status["scenarios_checked"] == 20  # the full run's 20, not the easy run's handful
    assert sorted(f["scenario_id"] for f in status["failing_scenarios"]) == sorted(failing)
    assert [r["reasons"] for r in status["partial_runs"]] == [partial["partial"]]
    assert "partial run(s) of this version" in bench.quaere("goal").stdout


def test_a_version_with_only_partial_runs_has_no_goal_to_show(bench):
    done = bench.quaere("eval", "--seed", "5")  # everything else full: the fixed seed alone makes it partial
    assert done.returncode == 0 and "PARTIAL evaluation (fixed_seed)" in done.stdout.replace("\n", " ")
    status = bench.goal()
    assert status["state"] == "unmet" and status["full_runs"] == 0
    assert "partial runs never count" in status["problems"][0]
