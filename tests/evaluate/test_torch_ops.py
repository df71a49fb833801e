"""TorchCudaOps' logic on CPU tensors (same code as on the GPU); skipped where torch is not installed."""

from __future__ import annotations

import pytest

from quaere.evaluate.arrays import HOST_HASH_MAX_BYTES, PATTERNS, TorchCudaOps, guard_elems
from quaere.task.contract import OutputSpec

torch = pytest.importorskip("torch")


@pytest.fixture
def ops() -> TorchCudaOps:
    return TorchCudaOps(device="cpu")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_poison_and_guards_bit_exact(ops: TorchCudaOps, dtype: str) -> None:
    spec = OutputSpec(shape=(2, 3, 5), dtype=dtype)
    view, whole = ops.alloc_guarded(spec, guard_elems(spec))
    assert view.is_contiguous() and tuple(view.shape) == (2, 3, 5) and view.dtype == getattr(torch, dtype)
    assert (view.data_ptr() - whole.data_ptr()) == 4096
    ops.poison(view)
    assert ops.count_poison(view) == 30 and ops.guards_intact(whole, guard_elems(spec))
    assert torch.isnan(view.float()).all()  # poison is a NaN, so an unwritten element can never pass
    view[0, 0, 0] = float("nan")  # the dtype's own NaN is not the poison pattern
    view[1, 2, 4] = 1.5
    assert ops.count_poison(view) == 28
    whole[guard_elems(spec) + 30] = 0
    assert not ops.guards_intact(whole, guard_elems(spec))
    bits = view.reshape(-1).view({4: torch.int32, 2: torch.int16}[PATTERNS[dtype].itemsize])
    assert int(bits[1]) == PATTERNS[dtype].poison


def test_compare_handles_bf16_against_fp32_with_infinities(ops: TorchCudaOps) -> None:
    ref = torch.tensor([float("-inf"), 1.0, 2.0])
    got = torch.tensor([float("-inf"), 1.0, 2.015625], dtype=torch.bfloat16)
    stats = ops.compare(got, ref)
    assert stats.max_abs_err == pytest.approx(0.015625) and stats.nonfinite_mismatch == 0 and stats.nan_count == 0
    assert ops.compare(torch.tensor([0.0, 1.0, 2.0]), ref).nonfinite_mismatch == 1
    nan = ops.compare(torch.tensor([float("-inf"), float("nan"), 2.0]), ref)
    assert nan.nan_count == 1 and nan.nonfinite_mismatch == 1


@pytest.mark.parametrize("numel", [1000, HOST_HASH_MAX_BYTES // 2 + 3])
def test_checksum_sees_one_changed_element_and_a_swap(ops: TorchCudaOps, numel: int) -> None:
    data = torch.randn(numel, dtype=torch.bfloat16)
    before = ops.checksum(data)
    assert ops.checksum(data.clone()) == before
    changed = data.clone()
    changed[numel // 2] = changed[numel // 2] * 2 + 1
    assert ops.checksum(changed) != before
    swapped = data.clone()
    swapped[[3, 7]] = data[[7, 3]]
    if not torch.equal(swapped, data):
        assert ops.checksum(swapped) != before


def test_null_candidates_tile_the_first_floating_input(ops: TorchCudaOps) -> None:
    spec = OutputSpec(shape=(2, 7), dtype="bfloat16")
    inputs = {"lengths": torch.tensor([1, 2]), "q": torch.arange(5, dtype=torch.float32) + 1}
    nulls = ops.null_candidates(spec, inputs)
    assert set(nulls) == {"zeros", "input copy"}
    assert nulls["input copy"].reshape(-1).tolist() == [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4]
    assert not nulls["zeros"].any()


def test_workspace_is_filled_with_the_pattern(ops: TorchCudaOps) -> None:
    workspace = ops.workspace(64)
    workspace.zero_()
    ops.refill_workspace(workspace)
    assert bool((workspace == 0xA5).all()) and ops.workspace(0) is None


class _Task:
    """A bf16 attention-like task on CPU tensors: o = softmax rows (bf16), lse fp32 with -inf on masked rows."""

    class spec:  # stands in for TaskSpec
        device = "cpu"

    class module:  # stands in for the task module
        @staticmethod
        def make_inputs(scenario, seed):
            generator = torch.Generator().manual_seed(seed)
            return {"s": torch.randn((4, 6), generator=generator).to(torch.bfloat16)}

        @staticmethod
        def output_specs(scenario):
            return {"o": OutputSpec((4, 6), "bfloat16"), "lse": OutputSpec((4,), "float32")}

        @staticmethod
        def workspace_bytes(scenario):
            return 16

        @staticmethod
        def launch(entry, inputs, outputs, scenario, workspace):
            return entry(inputs, outputs)

        @staticmethod
        def reference(scenario, inputs, precision):
            s = inputs["s"].float()
            s[3] = float("-inf")  # a fully masked row
            lse = torch.logsumexp(s, dim=1)
            o = torch.nan_to_num(torch.softmax(s, dim=1), nan=0.0)
            return {"o": o if precision == "fp32" else o.to(torch.bfloat16), "lse": lse}

        @staticmethod
        def flops(scenario):
            return 24.0

        @staticmethod
        def comparisons():
            return {"eager": lambda scenario, inputs, outputs: (lambda: torch.softmax(inputs["s"].float(), 1))}


def _good(inputs, outputs):
    ref = _Task.module.reference(None, inputs, "fp32")
    outputs["o"].copy_(ref["o"])
    outputs["lse"].copy_(ref["lse"])
    return 0


class _State:
    def __init__(self, entry):
        from quaere.evaluate.timing import CpuClock

        self.task, self.ops, self._entry, self._clock = _Task, TorchCudaOps(device="cpu"), entry, CpuClock(False)

    def entry(self, impl):
        return self._entry

    def banned_now(self):
        return frozenset()

    def clock(self, flush):
        return self._clock


def _finite_lse(inputs, outputs):
    _good(inputs, outputs)
    outputs["lse"][3] = 0.0  # finite where the reference has -inf
    return 0


def _off(inputs, outputs):
    _good(inputs, outputs)
    outputs["o"].add_(0.05)
    return 0


def _lse_unwritten(inputs, outputs):
    outputs["o"].zero_()
    return 0


@pytest.mark.parametrize(
    ("entry", "verdict"),
    [(_good, "passed"), (_finite_lse, "nonfinite"), (_off, "wrong"), (_lse_unwritten, "unwritten")],
)
def test_check_scenario_on_torch_tensors(entry, verdict: str) -> None:
    from quaere.evaluate.correctness import Rule
    from quaere.evaluate.scenario_run import check_scenario
    from quaere.records import Scenario

    result = check_scenario(_State(entry), Scenario(id="t", params={}), 3, Rule(2.0, 1e-4))
    assert result.verdict.value == verdict, result.detail


def test_time_scenario_on_torch_tensors() -> None:
    from quaere.evaluate.correctness import Rule
    from quaere.evaluate.scenario_run import time_scenario
    from quaere.records import Scenario, TimingStatus
    from quaere.task.spec import TimingRule

    rule = TimingRule(warmup_ms=1.0, budget_ms=2.0, min_reps=3, max_reps=5, rounds=2, flush_l2=False)
    timings = time_scenario(_State(_good), Scenario(id="t", params={}), 3, Rule(2.0, 1e-4), rule, ("eager", "absent"))
    assert [t.impl for t in timings] == ["candidate", "initial", "eager", "absent"]
    assert [t.status for t in timings] == [TimingStatus.MEASURED] * 3 + [TimingStatus.UNAVAILABLE]
    assert all(3 <= len(t.samples_ms) <= 5 for t in timings[:3])
