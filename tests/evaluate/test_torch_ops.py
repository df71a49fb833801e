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


def test_assign_and_guard_fill_work_in_place(ops: TorchCudaOps) -> None:
    """What the judge does to shared buffers: write fresh inputs in place, set guard words bit for bit."""
    import torch

    view = torch.zeros(8, dtype=torch.bfloat16)
    address = view.data_ptr()
    ops.assign(view, torch.arange(8, dtype=torch.bfloat16))
    assert view.data_ptr() == address and view.tolist() == list(range(8))
    ints = ops.int_view(view)
    ops.fill_ints(ints[:2], 0x7F9E)
    assert ints[:2].tolist() == [0x7F9E, 0x7F9E] and ops.nbytes(view) == 16 and ops.dtype_name(view) == "bfloat16"
