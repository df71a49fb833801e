"""Task module of rmsnorm_hopper (see quaere.task.contract), written by `quaere task new` from kernel.cu.

Edited by hand after that (README.md beside this file says how it was made): the benchmark set, and PyTorch
and Triton as the comparisons.

Entry point: int rmsnorm_forward(const __nv_bfloat16* x, const __nv_bfloat16* weight, __nv_bfloat16* y,
int rows, int cols, float eps, cudaStream_t stream)
Reference: reference.py:rmsnorm, called (never copied) at low precision on the
inputs as drawn and at high precision on the inputs upcast to HIGH.

Every `todo(...)` call below is a place to fill (TODO(quaere)): `quaere task check` lists them and refuses the
task while one is left. The data at the top says what the task is; the functions under it follow from it
and may be edited too.
"""

from __future__ import annotations

from quaere.records import Scenario
from quaere.task import kit, kit_arrays
from quaere.task.contract import Arg, Arrays, Comparison, OutputSpec, Precision, Sample, f32, i32, pointer, stream
from quaere.task.kit import Buffer

DEVICE = "cuda"  # torch tensors on the GPU
HIGH = "float32"  # the high-precision reference runs on the inputs upcast to this type

# The entry point's pointers: role ('input' is only read, 'output' is written whole), element type, and
# shape as expressions over the integer parameters (rows, cols).
BUFFERS = {
    "x": Buffer("input", "bfloat16", ("rows", "cols")),  # const __nv_bfloat16*: an input
    "weight": Buffer("input", "bfloat16", ("cols",)),  # const __nv_bfloat16*: an input
    "y": Buffer(  # __nv_bfloat16*: an output (rmsnorm() does not take it)
        "output",
        "bfloat16",
        ("rows", "cols"),
    ),
}

# The scenarios' named axes: the entry point's scalar parameters and the values each takes. kit.EDGE_VALUES
# are 1, primes and non-multiples of 8/16/64/128 beside the multiples; for each integer axis that sizes the
# buffers, the largest value that fits MAX_SCENARIO_BYTES (the other axes at their smallest) is added.
AXES = {
    "rows": kit.EDGE_VALUES,
    "cols": kit.EDGE_VALUES,
    "eps": (1e-06, 1e-05, 0.5),
}
MAX_SCENARIO_BYTES = 1 << 30  # every buffer of one correctness scenario together

# Timed configurations: what an LLM's RMSNorm sees, tokens x hidden size (rows x cols), 16-256 MiB read and
# written, with one odd shape; eps takes its first value. (Edited: the generated set spanned skewed shapes.)
BENCHMARK = [
    {"rows": 4096, "cols": 1024},
    {"rows": 16384, "cols": 1024},
    {"rows": 8192, "cols": 2048},
    {"rows": 32768, "cols": 2048},
    {"rows": 4096, "cols": 4096},
    {"rows": 16384, "cols": 4096},
    {"rows": 8192, "cols": 5120},
    {"rows": 4096, "cols": 8192},
    {"rows": 8192, "cols": 8192},
    {"rows": 2048, "cols": 16384},
    {"rows": 16383, "cols": 3000},
]

# The reference: a NumPy/PyTorch function taking the inputs and scalars by name and returning the outputs.
REFERENCE = ("reference.py", "rmsnorm")  # (file relative to this folder, function): called, never copied
# Useful floating-point operations of one call, as an expression over the integer parameters.
FLOPS = "4 * rows * cols"


def correctness_scenarios() -> list[Scenario]:
    return kit.covering_scenarios(AXES, lambda params: kit.buffer_bytes(BUFFERS, params), MAX_SCENARIO_BYTES)


def benchmark_scenarios() -> list[Scenario]:
    return kit.named_scenarios("bench-", BENCHMARK, kit.first_values(AXES))


def make_inputs(scenario: Scenario, seed: int) -> Arrays:
    return kit_arrays.draw_inputs(BUFFERS, scenario, seed, DEVICE)


def output_specs(scenario: Scenario) -> dict[str, OutputSpec]:
    return kit_arrays.output_specs(BUFFERS, scenario.params)


def workspace_bytes(scenario: Scenario) -> int:
    return 0


def arguments(scenario: Scenario) -> list[Arg]:
    """``int rmsnorm_forward(const __nv_bfloat16* x, const __nv_bfloat16* weight, __nv_bfloat16* y, int rows,
    int cols, float eps, cudaStream_t stream)``."""
    p = scenario.params
    return [pointer("x"), pointer("weight"), pointer("y"), i32(p["rows"]), i32(p["cols"]),
            f32(p["eps"]), stream()]


def _reference():
    return kit_arrays.load_function(__file__, *REFERENCE)


def reference(scenario: Scenario, inputs: Arrays, precision: Precision) -> Arrays:
    return kit_arrays.call_reference(_reference(), BUFFERS, scenario, inputs, precision, HIGH)


def sample(scenario: Scenario, inputs: Arrays, seed: int) -> Sample:
    """A few rows of each timed output and both references of those rows alone (each output row depends only
    on the same row of the inputs; `quaere task check` compares the sample with the full references)."""
    return kit_arrays.sample_rows(_reference(), BUFFERS, scenario, inputs, seed, HIGH)


def flops(scenario: Scenario) -> float:
    return float(kit.extent(FLOPS, scenario.params))


def min_bytes(scenario: Scenario) -> float:
    """Every input read once and every output written once."""
    return float(kit.buffer_bytes(BUFFERS, scenario.params))


def comparisons() -> dict[str, Comparison]:
    """PyTorch's fused rms_norm and a Triton kernel (comparisons.py beside this file; edited: the generated
    task timed the reference); each may raise ComparisonUnavailable when it cannot run here."""
    return {name: kit_arrays.load_function(__file__, "comparisons.py", name) for name in ("pytorch", "triton")}
