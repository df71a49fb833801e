"""The flash_attention_hopper scenario lists: count, stable ids, coverage of every axis, the 26 benchmark
configurations of issue 3, and the FLOP and byte counts. No GPU and no torch needed."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from quaere.records import Scenario
from quaere.task.loader import load_task

HERE = Path(__file__).parent
ANCHORS = HERE.parents[2] / "shared" / "anchors" / "h200-bench26.json"  # shared/ beside the checkout

# Issue 3, "Benchmark set", written out independently of the task's code:
# (batch, seqlen, heads_q, heads_kv, head_dim, causal); B x S = 16k tokens unless stated.
ISSUE_BENCHMARK = sorted(
    [(16384 // s, s, 16, 16, 128, c) for s in (512, 1024, 2048, 4096, 8192, 16384) for c in (False, True)]
    + [(16384 // s, s, 32, 32, 64, c) for s in (1024, 4096, 16384) for c in (False, True)]
    + [(16384 // s, s, 8, 8, 256, c) for s in (1024, 4096, 16384) for c in (False, True)]
    + [(1, 8192, 32, 8, 128, True), (2, 4096, 64, 8, 128, True)]
)


@pytest.fixture(scope="module")
def module():
    return load_task("flash_attention_hopper").module


@pytest.fixture(scope="module")
def correctness(module) -> list[Scenario]:
    return module.correctness_scenarios()


def as_tuple(s: Scenario) -> tuple:
    p = s.params
    return (p["batch"], p["seqlen_q"], p["heads_q"], p["heads_kv"], p["head_dim"], p["causal"])


def test_at_least_182_correctness_scenarios_with_unique_ids(correctness):
    ids = [s.id for s in correctness]
    assert len(ids) >= 182
    assert len(set(ids)) == len(ids)


def test_ids_are_frozen(module, correctness):
    """Ids are how ledgers, goals and reports name scenarios: changing one is a deliberate act (regenerate
    scenario_ids.json and say why in the commit)."""
    frozen = json.loads((HERE / "scenario_ids.json").read_text())
    assert [s.id for s in correctness] == frozen["correctness"]
    assert [s.id for s in module.benchmark_scenarios()] == frozen["benchmark"]


def test_every_axis_value_is_covered(correctness):
    params = [s.params for s in correctness]
    assert {p["head_dim"] for p in params} == {64, 128, 256}
    assert {p["causal"] for p in params} == {False, True}
    assert {p["layout"] for p in params} == {"mha", "gqa4", "gqa8", "mqa"}
    assert {p["batch"] for p in params} == set(range(1, 9))
    assert {p["scale"] for p in params} == {"default", "custom", "zero", "negative"}
    seqlens = {p["seqlen_q"] for p in params} | {p["seqlen_k"] for p in params}
    assert {1, 7, 63, 65, 127, 129, 1000, 2047, 4097, 16384} <= seqlens
    for tile in (16, 32, 64, 80, 96, 112, 128, 176, 192, 256):  # a tile size a kernel may pick
        assert any(s % tile for s in seqlens if s > tile), f"no sequence length above {tile} that it does not divide"


def test_axes_meet_each_other(correctness):
    params = [s.params for s in correctness]
    triples = {(p["head_dim"], p["causal"], p["layout"]) for p in params}
    assert triples == set(itertools.product((64, 128, 256), (False, True), ("mha", "gqa4", "gqa8", "mqa")))
    assert {(p["head_dim"], p["batch"]) for p in params} == set(itertools.product((64, 128, 256), range(1, 9)))
    assert {(p["head_dim"], p["causal"], p["scale"]) for p in params if p["scale"] in ("default", "custom")} == set(
        itertools.product((64, 128, 256), (False, True), ("default", "custom"))
    )
    # Any finite scale is in the contract: zero and a negative one for every head_dim, causal and not.
    signed = {(p["head_dim"], p["scale"]) for p in params if p["scale"] in ("zero", "negative")}
    assert signed == set(itertools.product((64, 128, 256), ("zero", "negative")))
    assert {p["causal"] for p in params if p["scale"] in ("zero", "negative")} == {False, True}
    for d in (64, 128, 256):
        mine = [p for p in params if p["head_dim"] == d]
        assert any(p["seqlen_q"] < p["seqlen_k"] for p in mine)
        assert any(p["causal"] and p["seqlen_q"] > p["seqlen_k"] for p in mine), "no fully masked rows"
        assert any(p["seqlen_q"] == 1 for p in mine)


def test_layout_labels_match_head_counts(correctness):
    for s in correctness:
        p = s.params
        group = p["heads_q"] // p["heads_kv"]
        assert p["heads_q"] % p["heads_kv"] == 0
        expected = {"mha": group == 1, "gqa4": group == 4, "gqa8": group == 8, "mqa": p["heads_kv"] == 1 and group > 1}
        assert expected[p["layout"]], s.id
        default = p["head_dim"] ** -0.5
        assert (p["softmax_scale"] == default) == (p["scale"] == "default"), s.id


def test_most_scenarios_are_small(module, correctness):
    work = sorted(module.flops(s) for s in correctness)
    assert work[len(work) // 2] < 1e9  # the median scenario is under a GFLOP
    assert sum(work) < 5e12  # the whole pass is a few seconds of fp32 reference on an H200


def test_benchmark_set_is_exactly_the_issue_list(module):
    bench = module.benchmark_scenarios()
    assert len(bench) == 26
    assert sorted(as_tuple(s) for s in bench) == ISSUE_BENCHMARK
    assert all(s.params["seqlen_q"] == s.params["seqlen_k"] for s in bench)
    assert all(s.params["softmax_scale"] == s.params["head_dim"] ** -0.5 for s in bench)
    assert "d128-h16-s512-causal" in {s.id for s in bench}


@pytest.mark.skipif(not ANCHORS.exists(), reason=f"no anchors file at {ANCHORS}")
def test_benchmark_set_matches_the_anchor_measurements(module):
    anchors = json.loads(ANCHORS.read_text())
    shapes = sorted((a["b"], a["s"], a["hq"], a["hkv"], a["d"], bool(a["causal"])) for a in anchors)
    assert shapes == sorted(as_tuple(s) for s in module.benchmark_scenarios())


def brute_force_pairs(seqlen_q: int, seqlen_k: int, causal: bool) -> int:
    return sum(
        1 for i in range(seqlen_q) for j in range(seqlen_k) if not causal or j <= i + seqlen_k - seqlen_q
    )


@pytest.mark.parametrize("sq,sk", [(1, 1), (1, 9), (9, 1), (5, 5), (7, 13), (13, 7), (64, 65), (65, 64), (3, 100)])
@pytest.mark.parametrize("causal", [False, True])
def test_flops_count_exactly_the_allowed_pairs(module, sq, sk, causal):
    params = {"batch": 3, "seqlen_q": sq, "seqlen_k": sk, "heads_q": 4, "heads_kv": 2, "head_dim": 64,
              "causal": causal}
    scenario = Scenario(id="x", params=params)
    assert module.flops(scenario) == 4 * 3 * 4 * 64 * brute_force_pairs(sq, sk, causal)


def test_min_bytes_counts_inputs_and_outputs_once(module):
    params = {"batch": 2, "seqlen_q": 10, "seqlen_k": 30, "heads_q": 8, "heads_kv": 2, "head_dim": 128, "causal": True}
    scenario = Scenario(id="x", params=params)
    q = o = 2 * 10 * 8 * 128 * 2
    k = v = 2 * 30 * 2 * 128 * 2
    lse = 2 * 8 * 10 * 4
    assert module.min_bytes(scenario) == q + k + v + o + lse


def test_output_specs_follow_the_abi(module):
    params = {"batch": 2, "seqlen_q": 10, "seqlen_k": 30, "heads_q": 8, "heads_kv": 2, "head_dim": 64, "causal": False}
    specs = module.output_specs(Scenario(id="x", params=params))
    assert (specs["o"].shape, specs["o"].dtype) == ((2, 10, 8, 64), "bfloat16")
    assert (specs["lse"].shape, specs["lse"].dtype) == ((2, 8, 10), "float32")


@pytest.mark.parametrize(
    "change,field",
    [({"head_dim": 0}, "head_dim"), ({"causal": 1}, "causal"), ({"heads_kv": 3}, "heads_kv"),
     ({"softmax_scale": float("nan")}, "softmax_scale"), ({"batch": None}, "batch")],
)
def test_bad_params_are_named(module, change, field):
    params = {"batch": 1, "seqlen_q": 4, "seqlen_k": 4, "heads_q": 8, "heads_kv": 2, "head_dim": 64, "causal": False}
    params = {**params, **change}
    params = {k: v for k, v in params.items() if v is not None}
    with pytest.raises(ValueError, match=f"'user-1'.*{field}"):
        module.flops(Scenario(id="user-1", params=params))


def test_default_scale_is_one_over_sqrt_head_dim(module):
    params = {"batch": 1, "seqlen_q": 4, "seqlen_k": 4, "heads_q": 2, "heads_kv": 2, "head_dim": 256, "causal": False}
    assert module.shape_of(Scenario(id="x", params=params)).softmax_scale == 1 / 16


def test_the_task_loads_and_lists_without_torch():
    """quaere's CPU paths must not import torch: load the task, list and count, in a fresh interpreter."""
    code = (
        "import sys; from quaere.task.loader import load_task; m = load_task('flash_attention_hopper').module; "
        "[m.flops(s) + m.min_bytes(s) for s in m.correctness_scenarios() + m.benchmark_scenarios()]; "
        "m.output_specs(m.benchmark_scenarios()[0]); m.comparisons(); "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
