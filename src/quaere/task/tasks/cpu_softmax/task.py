"""The CPU task's module (see quaere.task.contract): row softmax of float32 matrices with numpy.

References: ``fp32`` is computed in float64 (the exact answer to float32 inputs, to within 1e-16) and
``low`` in float32 numpy, so the allowed error is a small multiple of what plain float32 arithmetic makes.
"""

from __future__ import annotations

import zlib

import numpy as np

from quaere.records import Scenario
from quaere.task.contract import Arg, OutputSpec, Sample, i32, pointer

# (rows, cols, scale, offset): the input is normal(offset, scale). Odd sizes, single rows and columns,
# and large values (a kernel that forgets to subtract the row maximum overflows exp and returns NaN).
_CORRECTNESS = [
    (1, 1, 1.0, 0.0), (1, 2, 1.0, 0.0), (1, 1000, 1.0, 0.0), (1000, 1, 1.0, 0.0), (2, 3, 1.0, 0.0),
    (7, 13, 1.0, 0.0), (13, 7, 3.0, -1.0), (31, 33, 1.0, 0.0), (64, 64, 1.0, 0.0), (65, 127, 2.0, 0.5),
    (100, 255, 1.0, 0.0), (128, 1024, 1.0, 0.0), (3, 4097, 1.0, 0.0), (257, 17, 0.1, 0.0),
    (16, 16, 30.0, 0.0), (9, 100, 1.0, 100.0), (5, 50, 1.0, -100.0), (33, 65, 1000.0, 0.0),
    (4, 8192, 4.0, 0.0), (1, 16384, 1.0, 0.0),
]
_BENCHMARK = [(2048, 512), (512, 2048), (8192, 128), (64, 16384)]
FLOPS_PER_ELEMENT = 5  # max, subtract, exp (counted as one), sum, scale


def _scenario(prefix: str, rows: int, cols: int, scale: float = 1.0, offset: float = 0.0) -> Scenario:
    tail = "" if (scale, offset) == (1.0, 0.0) else f"-s{scale:g}-o{offset:g}"
    return Scenario(
        id=f"{prefix}r{rows}-c{cols}{tail}",
        params={"rows": rows, "cols": cols, "scale": scale, "offset": offset},
    )


def correctness_scenarios() -> list[Scenario]:
    return [_scenario("", *values) for values in _CORRECTNESS]


def benchmark_scenarios() -> list[Scenario]:
    return [_scenario("bench-", rows, cols) for rows, cols in _BENCHMARK]


def _shape(scenario: Scenario) -> tuple[int, int]:
    return int(scenario.params["rows"]), int(scenario.params["cols"])


def make_inputs(scenario: Scenario, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng([seed, zlib.crc32(scenario.id.encode())])
    scale, offset = float(scenario.params.get("scale", 1.0)), float(scenario.params.get("offset", 0.0))
    # Drawn in float32 directly: every timed repetition gets fresh inputs, and float64 draws cast down cost
    # twice as long as the kernel on the benchmark sizes.
    x = rng.standard_normal(size=_shape(scenario), dtype=np.float32)
    x = x * np.float32(scale) + np.float32(offset)
    x[x == 0] = np.float32(scale or 1.0)  # never zeros
    return {"x": x}


def output_specs(scenario: Scenario) -> dict[str, OutputSpec]:
    return {"y": OutputSpec(shape=_shape(scenario), dtype="float32")}


def workspace_bytes(scenario: Scenario) -> int:
    return 0


def arguments(scenario: Scenario) -> list[Arg]:
    """``int softmax_rows(const float* x, float* y, int rows, int cols)``."""
    rows, cols = _shape(scenario)
    return [pointer("x"), pointer("y"), i32(rows), i32(cols)]


def _softmax(x: np.ndarray, dtype: type) -> np.ndarray:
    z = x.astype(dtype)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True, dtype=dtype)


def reference(scenario: Scenario, inputs, precision: str):
    return {"y": _softmax(inputs["x"], np.float64 if precision == "fp32" else np.float32)}


SAMPLE_ROWS = 16


def sample(scenario: Scenario, inputs, seed: int) -> Sample:
    """``SAMPLE_ROWS`` random rows of y and both references of those rows only: a timed output is checked
    without the full float64 reference, which costs several times the kernel."""
    rows = np.random.default_rng(seed).integers(0, _shape(scenario)[0], size=SAMPLE_ROWS)
    x = inputs["x"][rows]
    return Sample(take=lambda outputs: {"y": outputs["y"][rows]},
                  fp32={"y": _softmax(x, np.float64)}, low={"y": _softmax(x, np.float32)})


def flops(scenario: Scenario) -> float:
    rows, cols = _shape(scenario)
    return float(FLOPS_PER_ELEMENT * rows * cols)


def min_bytes(scenario: Scenario) -> float:
    rows, cols = _shape(scenario)
    return float(2 * 4 * rows * cols)  # read x once, write y once


def _numpy_softmax(scenario: Scenario, inputs, outputs):
    x, y = inputs["x"], outputs["y"]
    row_max = np.empty((x.shape[0], 1), dtype=np.float32)
    row_sum = np.empty((x.shape[0], 1), dtype=np.float32)

    def run() -> None:
        np.max(x, axis=1, keepdims=True, out=row_max)
        np.subtract(x, row_max, out=y)
        np.exp(y, out=y)
        np.sum(y, axis=1, keepdims=True, out=row_sum)
        np.divide(y, row_sum, out=y)

    return run


def comparisons():
    return {"numpy": _numpy_softmax}
