"""The pieces generated tasks are made of: the C signature reader, shape expressions, the scenario design,
drawn inputs and the row sample."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from tests.task_new import references
from tests.task_new.conftest import write_kernel

from quaere.records import Scenario
from quaere.task import kit, kit_arrays
from quaere.task.csig import ParamRole, SignatureError, read_signature
from quaere.task.kit import Buffer
from quaere.task.spec import TaskError

FA_KERNEL = Path(__file__).parents[2] / "src" / "quaere" / "task" / "tasks" / "flash_attention_hopper" / "kernel.cu"
ROWS = {"x": Buffer("input", "float32", ("rows", "cols")), "y": Buffer("output", "float32", ("rows", "cols"))}


def test_the_attention_entry_point_is_read_with_its_workspace_and_stream() -> None:
    signature = read_signature(FA_KERNEL)
    roles = {p.name: p.role for p in signature.params}
    assert signature.name == "attention_forward"
    assert [p.name for p in signature.pointers()] == ["q", "k", "v", "o", "lse"]
    assert roles["workspace"] is ParamRole.WORKSPACE and roles["workspace_bytes"] is ParamRole.WORKSPACE_BYTES
    assert roles["stream"] is ParamRole.STREAM
    q, lse = signature.pointers()[0], signature.pointers()[4]
    assert (q.const, q.dtype, lse.const, lse.dtype) == (True, None, False, "float32")
    assert {p.name: p.scalar for p in signature.scalars()}["softmax_scale"] == "f32"


def test_declarations_in_blocks_comments_and_attributes(tmp_path: Path) -> None:
    source = ('// extern "C" int commented(float* a);\n#define FAKE extern "C" int fake(float* b)\n'
              'extern "C" {\nstatic int helper(int n);\n__attribute__((visibility("default"))) int run(\n'
              '    const __nv_bfloat16* __restrict__ x, __half* y, float z[], long long n, bool flag,\n'
              '    cudaStream_t s) noexcept;\n}\n')
    signature = read_signature(write_kernel(tmp_path, "k.cu", source))
    assert signature.text == ("int run(const __nv_bfloat16* x, __half* y, float* z, long long n, bool flag, "
                              "cudaStream_t s)")
    assert [(p.dtype, p.const) for p in signature.pointers()] == [("bfloat16", True), ("float16", False),
                                                                  ("float32", False)]
    assert [(p.scalar, p.boolean) for p in signature.scalars()] == [("i64", False), ("i32", True)]


@pytest.mark.parametrize(("source", "words"), [
    ('extern "C" void run(float* y) {}', "returns 'void'; expected int"),
    ('extern "C" int run(const float*, float* y);', "parameter 1 ('const float*'): has no name"),
    ('extern "C" int run(float** y);', "pointer to a pointer"),
    ('extern "C" int run(int n);', "no pointer parameter"),
    ('extern "C" __global__ void k(float* y) {}', "k is a __global__ kernel"),
])
def test_signatures_quaere_cannot_use(tmp_path: Path, source: str, words: str) -> None:
    kernel = write_kernel(tmp_path, "k.cu", source)
    with pytest.raises(SignatureError, match=re.escape(words)) as caught:
        read_signature(kernel)
    assert str(caught.value).startswith(str(kernel)) and "\n" not in str(caught.value)


def test_shape_expressions() -> None:
    params = {"in": 300, "rows": 2, "eps": 0.5}
    assert kit.extent("(in + 127) // 128 * rows", params) == 6  # a C name that is a Python keyword
    assert kit.extent(7, params) == 7
    for bad, words in (("rows * n", "'n' is not an integer parameter"), ("eps", "'eps' is not an integer"),
                       ("rows ** 2", "only integers"), ("rows +", "not an expression")):
        with pytest.raises(TaskError, match=words):
            kit.extent(bad, params)


def test_the_design_covers_every_edge_value_and_the_largest_that_fits() -> None:
    axes = {"rows": kit.EDGE_VALUES, "cols": kit.EDGE_VALUES, "eps": (1e-6, 0.5)}
    budget = 1 << 20
    scenarios = kit.covering_scenarios(axes, lambda p: kit.buffer_bytes(ROWS, p), budget)
    assert len({s.id for s in scenarios}) == len(scenarios)
    for axis in ("rows", "cols"):
        assert set(kit.EDGE_VALUES) <= {s.params[axis] for s in scenarios}
        top = max(scenarios, key=lambda s: s.params[axis])
        one_more = {**top.params, axis: top.params[axis] + 1}
        assert kit.buffer_bytes(ROWS, top.params) <= budget < kit.buffer_bytes(ROWS, one_more)
    assert all(kit.buffer_bytes(ROWS, s.params) <= budget for s in scenarios)
    assert {s.params["eps"] for s in scenarios} == {1e-6, 0.5}
    assert kit.largest("flag", {"flag": 1}, lambda p: 64, budget) is None  # a flag does not size anything


def test_benchmark_shapes_keep_the_total() -> None:
    for count in (1, 2, 3):
        shapes = kit.benchmark_shapes(count, 20)
        assert len(shapes) >= 3 and len(set(shapes)) == len(shapes)
        if count > 1:
            assert all(np.prod(shape) == 2**20 for shape in shapes)


def test_inputs_are_drawn_from_the_seed_and_never_zero() -> None:
    scenario = Scenario(id="rows3-cols5", params={"rows": 3, "cols": 5})
    first, again = (kit_arrays.draw_inputs(ROWS, scenario, 9, "cpu") for _ in range(2))
    other = kit_arrays.draw_inputs(ROWS, scenario, 10, "cpu")
    assert list(first) == ["x"] and first["x"].shape == (3, 5) and first["x"].dtype == np.float32
    assert np.array_equal(first["x"], again["x"]) and not np.array_equal(first["x"], other["x"])
    assert (first["x"] != 0).all()


def test_sample_rows_are_the_rows_of_the_full_reference() -> None:
    scenario = Scenario(id="rows40-cols6", params={"rows": 40, "cols": 6})
    inputs = kit_arrays.draw_inputs(ROWS, scenario, 1, "cpu")
    sample = kit_arrays.sample_rows(references.softmax, ROWS, scenario, inputs, seed=4, high_dtype="float64", count=5)
    full = kit_arrays.call_reference(references.softmax, ROWS, scenario, inputs, "fp32", "float64")
    assert sample.fp32["y"].shape == (5, 6) and sample.low["y"].dtype == np.float32
    np.testing.assert_allclose(sample.take(full)["y"], sample.fp32["y"], rtol=1e-12)
