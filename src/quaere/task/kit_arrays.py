"""The array side of a task written by ``quaere task new``: its inputs drawn from a seed, the user's
reference function loaded from its own file and called (never copied) at both precisions, that reference
timed as a comparison, and a row sample of it for timed outputs.

``device`` is "cpu" (numpy arrays) or a torch device ("cuda"; "torch:cpu" runs the torch path on the CPU,
for tests). torch is imported only on the torch path.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from quaere.evaluate.shared import DTYPE_BYTES
from quaere.records import Scenario
from quaere.task.contract import Arrays, Comparison, OutputSpec, Precision, Sample
from quaere.task.kit import Buffer, Params, shape_of
from quaere.task.spec import TaskError


class ReferenceFailed(TaskError):
    """The user's reference raised, or returned outputs of the wrong number, shape or dtype; the message
    names its file, the function, the output and what was expected."""


def load_function(task_file: str, path: str, name: str) -> Callable[..., Any]:
    """Function ``name`` of the Python file at ``path`` (relative to the folder of ``task_file``), imported
    once per process under a name of its own."""
    file = (Path(task_file).parent / path).resolve()
    key = "quaere_reference_" + hashlib.sha256(str(file).encode()).hexdigest()[:16]
    if key not in sys.modules:
        if not file.is_file():
            raise TaskError(f"{file}: no such file (the reference named in {task_file}); expected a Python file")
        spec = importlib.util.spec_from_file_location(key, file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the user's file: its name and the error, not a traceback
            raise TaskError(f"{file}: importing it failed: {type(exc).__name__}: {exc}") from exc
        sys.modules[key] = module
    function = getattr(sys.modules[key], name, None)
    if not callable(function):
        raise TaskError(f"{file}: no function '{name}' (the reference named in {task_file})")
    return function


def _torch_device(device: str) -> str:
    return device.removeprefix("torch:")


def draw_inputs(buffers: Mapping[str, Buffer], scenario: Scenario, seed: int, device: str) -> Arrays:
    """Every input buffer, fresh from ``seed`` and the scenario's id: floats standard normal (an exact zero
    becomes 1, so no input is ever all zeros), integers uniform in the buffer's ``values``."""
    stream = zlib.crc32(scenario.id.encode())
    inputs = {name: b for name, b in buffers.items() if b.role == "input"}
    if device == "cpu":
        import numpy as np

        rng = np.random.default_rng([seed, stream])
        drawn = {}
        for name, b in inputs.items():
            shape = shape_of(b, scenario.params)
            if b.dtype == "bfloat16":
                raise TaskError(f"input '{name}' is bfloat16; a device = \"cpu\" task holds numpy arrays, which have "
                                "no bfloat16: expected float16, float32 or float64")
            if b.dtype.startswith("float"):
                array = rng.standard_normal(shape).astype(b.dtype)
                array[array == 0] = 1
            else:
                array = rng.integers(b.values[0], b.values[1], size=shape).astype(b.dtype)
            drawn[name] = array
        return drawn
    import torch

    generator = torch.Generator(device=_torch_device(device))
    generator.manual_seed((seed * 2**32 + stream) % 2**63)
    drawn = {}
    for name, b in inputs.items():
        shape = shape_of(b, scenario.params)
        dtype = getattr(torch, b.dtype)
        if b.dtype.startswith(("float", "bfloat")):
            tensor = torch.randn(shape, generator=generator, device=_torch_device(device)).to(dtype)
            tensor[tensor == 0] = 1
        else:
            tensor = torch.randint(b.values[0], b.values[1], shape, generator=generator, device=_torch_device(device),
                                   dtype=dtype)
        drawn[name] = tensor
    return drawn


def output_specs(buffers: Mapping[str, Buffer], params: Params) -> dict[str, OutputSpec]:
    return {name: OutputSpec(shape_of(b, params), b.dtype) for name, b in buffers.items() if b.role == "output"}


def _where(function: Callable[..., Any]) -> str:
    code = getattr(function, "__code__", None)
    return f"{code.co_filename if code else '?'}: {getattr(function, '__name__', '?')}()"


def _dtype_name(array: Any) -> str:
    return str(array.dtype).removeprefix("torch.")


def _upcast(array: Any, dtype: str) -> Any:
    if not _dtype_name(array).startswith(("float", "bfloat")):
        return array
    if hasattr(array, "astype"):
        return array.astype(dtype)
    import torch

    return array.to(getattr(torch, dtype))


def bind(function: Callable[..., Any], inputs: Arrays, params: Params) -> dict[str, Any]:
    """The function's keyword arguments, by name: inputs (arrays) and the entry point's scalars."""
    kwargs: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if name in inputs:
            kwargs[name] = inputs[name]
        elif name in params:
            kwargs[name] = params[name]
        elif parameter.default is inspect.Parameter.empty:
            raise ReferenceFailed(f"{_where(function)}: parameter '{name}' is neither an input "
                                  f"({', '.join(inputs)}) nor a parameter ({', '.join(params)}) of the entry point; "
                                  "expected one of those names")
    return kwargs


def _as_outputs(result: Any, names: list[str], function: Callable[..., Any]) -> dict[str, Any]:
    if isinstance(result, Mapping):
        if sorted(result) != sorted(names):
            raise ReferenceFailed(f"{_where(function)}: returned outputs {sorted(result)}; expected {names}")
        return dict(result)
    values = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(values) != len(names):
        raise ReferenceFailed(f"{_where(function)}: returned {len(values)} array(s); expected {len(names)} "
                              f"({', '.join(names)}, in the entry point's order)")
    return dict(zip(names, values, strict=True))


def _check_output(function: Callable[..., Any], name: str, value: Any, expected: OutputSpec, precision: str,
                  high_dtype: str) -> None:
    shape = tuple(getattr(value, "shape", ()))
    dtype = _dtype_name(value) if hasattr(value, "dtype") else type(value).__name__
    if precision == "low":
        wanted, ok = expected.dtype, dtype == expected.dtype
    else:
        wanted = f"a floating type of at least {DTYPE_BYTES[expected.dtype]} bytes (e.g. {high_dtype})"
        ok = dtype.startswith("float") and DTYPE_BYTES.get(dtype, 0) >= DTYPE_BYTES[expected.dtype]
    if shape != tuple(expected.shape) or not ok:
        raise ReferenceFailed(f"{_where(function)}: at {precision} precision returned '{name}' as {dtype} "
                              f"{shape}; expected {wanted} {tuple(expected.shape)}")


def call_reference(function: Callable[..., Any], buffers: Mapping[str, Buffer], scenario: Scenario, inputs: Arrays,
                   precision: Precision, high_dtype: str) -> Arrays:
    """The user's ``function`` on the inputs as they are (``low``) or upcast to ``high_dtype`` (``fp32``),
    with the scenario's scalars; its outputs checked against the declared shapes and dtypes."""
    specs = output_specs(buffers, scenario.params)
    given = inputs if precision == "low" else {name: _upcast(a, high_dtype) for name, a in inputs.items()}
    kwargs = bind(function, given, scenario.params)
    try:
        result = function(**kwargs)
    except Exception as exc:  # the user's code: one line naming it, the scenario and the error
        raise ReferenceFailed(f"{_where(function)}: raised {type(exc).__name__}: {exc} (scenario {scenario.id}, "
                              f"{precision} precision); expected outputs {', '.join(specs)}") from exc
    outputs = _as_outputs(result, list(specs), function)
    for name, value in outputs.items():
        _check_output(function, name, value, specs[name], precision, high_dtype)
    return outputs


def reference_comparison(function: Callable[[], Callable[..., Any]]) -> Comparison:
    """The user's reference at low precision as a comparison: arguments bound before the timed call."""

    def build(scenario: Scenario, inputs: Arrays, outputs: Arrays) -> Callable[[], Any]:
        reference = function()
        kwargs = bind(reference, inputs, scenario.params)
        return lambda: reference(**kwargs)

    return build


def sample_rows(function: Callable[..., Any], buffers: Mapping[str, Buffer], scenario: Scenario, inputs: Arrays,
                seed: int, high_dtype: str, count: int = 16) -> Sample:
    """``count`` random rows (first dimension) of every output and both references of those rows alone.

    Valid where each output row depends only on the same row of the inputs that share the outputs' first
    extent (row-wise operations): those inputs are sliced, the others passed whole, the row parameter set
    to ``count``. ``quaere task check`` compares the sample with the full references.
    """
    outputs = {name: b for name, b in buffers.items() if b.role == "output"}
    rows_axis = {b.shape[0] for b in outputs.values()}
    axis = next(iter(rows_axis))
    if len(rows_axis) != 1 or not isinstance(axis, str) or axis not in scenario.params:
        raise TaskError(f"sample_rows: the outputs' first extents are {sorted(map(str, rows_axis))}; expected one "
                        "integer parameter shared by every output")
    import numpy as np

    rows = int(scenario.params[axis])
    picked = np.sort(np.random.default_rng(seed).choice(rows, size=min(count, rows), replace=False))

    def index(array: Any) -> Any:
        return array[picked if hasattr(array, "astype") else _torch_index(array, picked)]

    sliced = {name: index(a) if buffers[name].shape[0] == axis else a for name, a in inputs.items()}
    small = Scenario(id=f"{scenario.id}-rows{len(picked)}", params={**scenario.params, axis: len(picked)})
    references = {p: call_reference(function, buffers, small, sliced, p, high_dtype) for p in ("fp32", "low")}
    return Sample(take=lambda arrays: {name: index(arrays[name]) for name in outputs},
                  fp32=references["fp32"], low=references["low"])


def _torch_index(tensor: Any, picked: Any) -> Any:
    import torch

    return torch.as_tensor(picked, device=tensor.device)
