"""The text of a new task's ``task.toml`` and ``task.py``, from a :class:`~quaere.task.scaffold.TaskPlan`.

Places the plan could not fill become ``todo("...")`` calls at the top of task.py, each saying what it
needs; the functions below them never need editing (and may be).
"""

from __future__ import annotations

import json
import textwrap

from quaere.task import kit
from quaere.task.csig import ParamRole
from quaere.task.kit import TODO_MARK
from quaere.task.scaffold import Planned, TaskPlan, machine_target

BUILDS = {
    "cuda": "nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a "
            "-MD -MF {depfile} {source} -o {output}",
    "cpu": "c++ -O2 -shared -fPIC -MD -MF {depfile} {source} -o {output}",
}
TOML_CONTINUED = " \\\n"  # a TOML multi-line string goes on, without the line break, on the next line
FLOORS = {"float64": 1e-12, "float32": 1e-6, "float16": 1e-4, "bfloat16": 1e-4}
BENCHMARK_LOG2 = {"cuda": 24, "cpu": 20}
MAX_GENERATED_AXES = 3  # beyond this many integer axes, which ones size a timed run is the user's call
LINE = 110
SCENARIO_BUDGET = {"cuda": (1 << 30, "1 << 30"), "cpu": (64 << 20, "64 << 20")}
"""Bytes of one correctness scenario's buffers, and how task.py writes it."""

TOML_HEAD = """\
device = "{device}"
target = "{target}"
initial_kernel = {kernel}
module = "task.py"
entry_point = "{entry}"
build = "{build}"
banned = {banned}

[correctness]
# Allowed error of each output = factor x (error of the low-precision reference against the high one) +
# floor, as FlashAttention's own tests do; the floor only matters where the low reference is exact.
factor = 2.0
floor = {floor:g}
scenario_timeout_s = {timeout:g}
"""
BANNED = {"cuda": '["cutlass", "cute", "cublas", "cublaslt", "cudnn"]', "cpu": "[]"}
SCENARIO_TIMEOUT_S = {"cuda": 60.0, "cpu": 20.0}
TOML_TIMING = {
    "cuda": """\
[timing]
warmup_ms = 10.0
budget_ms = 120.0
min_reps = 5
max_reps = 60
rounds = 3
flush_l2 = true

[roofline]
# What no kernel can beat on an H100/H200 SXM: the dense bf16 peak and the copy bandwidth (bytes read
# plus written). A result below the floor they give is flagged suspect.
matrix_tflops = 989.0
bandwidth_gbps = 4300.0
""",
    "cpu": """\
[timing]
warmup_ms = 10.0
budget_ms = 60.0
min_reps = 5
max_reps = 40
rounds = 3
flush_l2 = true
# The clock bound's slack (hidden_work_abs_ms, hidden_work_rel, drain_abs_ms) is left to a CPU task's
# defaults: a CPU runner's round trip jitters by tens of microseconds on a busy machine.

[roofline]
# Generous ceilings (a large many-core server): an honest kernel sits far above the floor they give.
matrix_tflops = 4.0
bandwidth_gbps = 400.0
""",
}


def render_toml(plan: TaskPlan) -> str:
    sig = plan.signature
    floor = min(FLOORS.get(b.dtype or "", 1e-4) for b in plan.buffers if b.role != "input") if any(
        b.role != "input" for b in plan.buffers) else 1e-6
    described = f"The entry point {sig.text} of {sig.file.name}.".replace("\\", "\\\\").replace('"', '\\"')
    head = (f"# Written by `quaere task new` from {sig.file.name}; `quaere task check` validates it.\n"
            f"name = \"{plan.name}\"\n"
            f'description = """{TOML_CONTINUED.join(textwrap.wrap(described, 100, break_long_words=False))}"""\n')
    target = "sm_90a" if plan.device == "cuda" else machine_target()
    rules = TOML_HEAD.format(device=plan.device, target=target, kernel=json.dumps(plan.kernel_name), entry=sig.name,
                             build=BUILDS[plan.device], banned=BANNED[plan.device], floor=floor,
                             timeout=SCENARIO_TIMEOUT_S[plan.device])
    comparison = ""
    if plan.reference:
        library = "PyTorch" if plan.device == "cuda" else "NumPy"
        described = f"{plan.reference[0]}:{plan.reference[1]} at low precision ({library})"
        comparison = f'[[comparisons]]\nname = "reference"\ndescription = {json.dumps(described)}\n\n'
    goal = ('[goal]\n# Every benchmark configuration this much faster than the initial kernel, and every scenario\n'
            '# correct; e.g. { baseline = "reference", ratio = 1.0 } asks to beat the reference as well.\n'
            'targets = [{ baseline = "initial", ratio = 1.5, scenarios = "*" }]\n')
    return "\n".join((head + rules, TOML_TIMING[plan.device], comparison + goal))


def _py(value: object) -> str:
    """``value`` as Python source, strings in double quotes (the house style)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        return "(" + ", ".join(_py(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py(k)}: {_py(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _buffer_line(b: Planned, ints: list[str], device: str) -> str:
    example = _py(tuple(ints[:2])).replace('"', "'")
    role = _py(b.role) if b.role else f'todo("{b.name}: \'input\' or \'output\'? ({b.why})")'
    hint = "bfloat16" if device == "cuda" else "float32"
    dtype = _py(b.dtype) if b.dtype else f'todo("{b.name}: element type ({b.why}), e.g. \'{hint}\'")'
    shape = _py(tuple(b.shape)) if b.shape else f'todo("{b.name}: shape over the integer parameters, e.g. {example}")'
    line = f"    {_py(b.name)}: Buffer({role}, {dtype}, {shape}),  # {b.why}\n"
    if len(line) <= LINE:
        return line
    parts = "".join(f"        {part},\n" for part in (role, dtype, shape))
    return f"    {_py(b.name)}: Buffer(  # {b.why}\n{parts}    ),\n"


def _axes_lines(plan: TaskPlan) -> str:
    lines = []
    for name, values in plan.axes.items():
        if values is None:
            text = f'todo("values of {name} to test, e.g. (1.0, 0.5)")'
        elif values == kit.EDGE_VALUES:
            text = "kit.EDGE_VALUES"
        else:
            text = _py(tuple(values))
        lines.append(f"    {_py(name)}: {text},\n")
    return "".join(lines)


def _benchmark_lines(plan: TaskPlan) -> str:
    ints = plan.int_axes()
    if len(ints) > MAX_GENERATED_AXES:
        example = _py({name: 1 for name in ints[:2]}).replace('"', "'").replace("}", ", ...}")
        return f'BENCHMARK = todo("8-12 timed configurations, e.g. [{example}, ...]")\n'
    shapes = kit.benchmark_shapes(len(ints), BENCHMARK_LOG2[plan.device])
    return "BENCHMARK = [\n" + "".join(f"    {_py(dict(zip(ints, shape, strict=True)))},\n" for shape in shapes) + "]\n"


ARG_CALLS = {ParamRole.STREAM: "stream()", ParamRole.WORKSPACE: "workspace()",
             ParamRole.WORKSPACE_BYTES: "workspace_size()"}


def _arguments(plan: TaskPlan) -> tuple[str, list[str]]:
    calls, used = [], ["Arg"]
    for param in plan.signature.params:
        if param.role is ParamRole.POINTER:
            calls.append(f"pointer({_py(param.name)})")
            used.append("pointer")
        elif param.role is ParamRole.SCALAR:
            calls.append(f"{param.scalar}(p[{_py(param.name)}])")
            used.append(str(param.scalar))
        else:
            calls.append(ARG_CALLS[param.role])
            used.append(ARG_CALLS[param.role][:-2])
    return ", ".join(calls), sorted(set(used))


TASK_PY = '''"""Task module of {name} (see quaere.task.contract), written by `quaere task new` from {kernel_file}.

Entry point: {signature}
Reference: {reference_line}.

Every `todo(...)` call below is a place to fill ({mark}): `quaere task check` lists them and refuses the
task while one is left. The data at the top says what the task is; the functions under it follow from it
and may be edited too.
"""

from __future__ import annotations

from quaere.records import Scenario
from quaere.task import kit, kit_arrays
from quaere.task.contract import {contract_names}
from quaere.task.kit import Buffer{todo_import}

DEVICE = "{device}"  # {device_note}
HIGH = "{high}"  # the high-precision reference runs on the inputs upcast to this type

# The entry point's pointers: role ('input' is only read, 'output' is written whole), element type, and
# shape as expressions over the integer parameters ({ints}).
BUFFERS = {{
{buffers}}}

# The scenarios' named axes: the entry point's scalar parameters and the values each takes. kit.EDGE_VALUES
# are 1, primes and non-multiples of 8/16/64/128 beside the multiples; for each integer axis that sizes the
# buffers, the largest value that fits MAX_SCENARIO_BYTES (the other axes at their smallest) is added.
AXES = {{
{axes}}}
MAX_SCENARIO_BYTES = {budget}  # every buffer of one correctness scenario together

# Timed configurations: big enough that the call, not its launch, is timed (`quaere task check` says);
# an axis not named takes its first value.
{benchmark}
# The reference: a NumPy/PyTorch function taking the inputs and scalars by name and returning the outputs.
REFERENCE = {reference}
# Useful floating-point operations of one call, as an expression over the integer parameters.
FLOPS = {flops}
{workspace_line}

def correctness_scenarios() -> list[Scenario]:
    return kit.covering_scenarios(AXES, lambda params: kit.buffer_bytes(BUFFERS, params), MAX_SCENARIO_BYTES)


def benchmark_scenarios() -> list[Scenario]:
    return kit.named_scenarios("bench-", BENCHMARK, kit.first_values(AXES))


def make_inputs(scenario: Scenario, seed: int) -> Arrays:
    return kit_arrays.draw_inputs(BUFFERS, scenario, seed, DEVICE)


def output_specs(scenario: Scenario) -> dict[str, OutputSpec]:
    return kit_arrays.output_specs(BUFFERS, scenario.params)


def workspace_bytes(scenario: Scenario) -> int:
    return {workspace_value}


def arguments(scenario: Scenario) -> list[Arg]:
    """``{signature}``."""
    p = scenario.params
    return [{arguments}]


def _reference():
    return kit_arrays.load_function(__file__, *REFERENCE)


def reference(scenario: Scenario, inputs: Arrays, precision: Precision) -> Arrays:
    return kit_arrays.call_reference(_reference(), BUFFERS, scenario, inputs, precision, HIGH)
{sample}

def flops(scenario: Scenario) -> float:
    return float(kit.extent(FLOPS, scenario.params))


def min_bytes(scenario: Scenario) -> float:
    """Every input read once and every output written once."""
    return float(kit.buffer_bytes(BUFFERS, scenario.params))


def comparisons() -> dict[str, Comparison]:
    """The reference at low precision, timed beside the kernels."""
    return {{"reference": kit_arrays.reference_comparison(_reference)}}
'''

SAMPLE = '''

def sample(scenario: Scenario, inputs: Arrays, seed: int) -> Sample:
    """A few rows of each timed output and both references of those rows alone (each output row depends only
    on the same row of the inputs; `quaere task check` compares the sample with the full references)."""
    return kit_arrays.sample_rows(_reference(), BUFFERS, scenario, inputs, seed, HIGH)
'''


def _wrapped(calls: str, indent: int = 12) -> str:
    return ("\n" + " " * indent).join(textwrap.wrap(calls, 100 - indent, break_long_words=False))


def render_py(plan: TaskPlan) -> str:
    ints = plan.int_axes()
    over = ", ".join(ints)
    arguments, used = _arguments(plan)
    contract = {*used, "Arrays", "Comparison", "OutputSpec", "Precision"} | ({"Sample"} if plan.row_sample else set())
    reference = (_py(plan.reference) + "  # (file relative to this folder, function): called, never copied"
                 if plan.reference else 'todo("the reference: (\'file.py\', \'function\'), the file relative to this '
                 'folder")')
    example = " * ".join(["2", *ints[:2]])
    flops = _py(plan.flops) if plan.flops else f'todo("FLOPs of one call, e.g. \'{example}\'")'
    workspace_line = ""
    if plan.has_workspace:
        value = (str(plan.workspace_bytes) if plan.workspace_bytes is not None
                 else 'todo("bytes of scratch memory the kernel needs, e.g. 1 << 20")')
        workspace_line = ("# Scratch memory handed to the kernel, contents undefined on entry.\n"
                          f"WORKSPACE_BYTES = {value}\n")
    text = TASK_PY.format(
        name=plan.name, kernel_file=plan.signature.file.name, signature=plan.signature.text,
        reference_line=(f"{plan.reference[0]}:{plan.reference[1]}, called (never copied) at low precision on the\n"
                        "inputs as drawn and at high precision on the inputs upcast to HIGH" if plan.reference
                        else "none yet"),
        mark=TODO_MARK, contract_names=", ".join(sorted(contract)), todo_import="" if plan.complete else ", todo",
        device=plan.device, device_note="torch tensors on the GPU" if plan.device == "cuda" else "numpy arrays",
        high=plan.high_dtype(), ints=over, buffers="".join(_buffer_line(b, ints, plan.device) for b in plan.buffers),
        axes=_axes_lines(plan), budget=SCENARIO_BUDGET[plan.device][1], benchmark=_benchmark_lines(plan),
        reference=reference, flops=flops, workspace_line=workspace_line,
        workspace_value="WORKSPACE_BYTES" if plan.has_workspace else "0",
        arguments=_wrapped(arguments), sample=SAMPLE if plan.row_sample else "",
    )
    return text
