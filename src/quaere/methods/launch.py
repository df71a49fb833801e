"""One call of a built candidate on one scenario, for a profiler to watch: ``python -m quaere.methods.launch``.

Usage: ``python -m quaere.methods.launch TASK ARTIFACT SCENARIO_ID``. The inputs come from the task module
(seed 0), the outputs are zeroed arrays of the task's kind (numpy, or torch on the GPU), the arguments are
built from the module's ``arguments()`` as the evaluator's runner builds them. On a CUDA task the call runs
once untimed, then once between ``cuProfilerStart`` and ``cuProfilerStop``, so ``ncu --profile-from-start
off`` sees the candidate's kernels and none of torch's. This is a profiling aid run by the agent's own
tool, as the agent's user: it is not the evaluator and no verdict comes from it.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

SCALARS = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "u64": ctypes.c_uint64, "f32": ctypes.c_float,
           "f64": ctypes.c_double}


class LaunchError(RuntimeError):
    """The scenario, the artifact or the entry point cannot be used; the message says which."""


def _zeros(spec: Any, cuda: bool) -> Any:
    if cuda:
        import torch

        return torch.zeros(spec.shape, dtype=getattr(torch, spec.dtype), device="cuda")
    import numpy as np

    return np.zeros(spec.shape, dtype=spec.dtype)


def _address(array: Any, cuda: bool) -> int:
    return int(array.data_ptr()) if cuda else int(array.ctypes.data)


def arguments(module: Any, scenario: Any, arrays: dict[str, Any], cuda: bool, stream: int) -> tuple[list, list]:
    """ctypes types and values of the entry point's arguments (the workspace a zeroed scratch array)."""
    size = int(module.workspace_bytes(scenario))
    scratch = _zeros(type("Spec", (), {"shape": (max(size, 1),), "dtype": "uint8"}), cuda)
    arrays = {**arrays, "__workspace": scratch}
    types: list[Any] = []
    values: list[Any] = []
    for arg in module.arguments(scenario):
        if arg.kind == "pointer":
            if arg.name not in arrays:
                raise LaunchError(f"argument names '{arg.name}', which is neither an input nor an output")
            types.append(ctypes.c_void_p)
            values.append(ctypes.c_void_p(_address(arrays[arg.name], cuda)))
        elif arg.kind == "workspace":
            types.append(ctypes.c_void_p)
            values.append(ctypes.c_void_p(_address(scratch, cuda) if size else None))
        elif arg.kind == "workspace_bytes":
            types.append(ctypes.c_uint64)
            values.append(ctypes.c_uint64(size))
        elif arg.kind == "stream":
            types.append(ctypes.c_void_p)
            values.append(ctypes.c_void_p(stream or None))
        else:
            types.append(SCALARS[arg.kind])
            values.append(SCALARS[arg.kind](arg.value))
    return types, values


def launch(task_ref: str, artifact: str, scenario_id: str) -> int:
    """Run the entry point once on ``scenario_id`` (twice on CUDA, the second under the profiler); its status."""
    from quaere.task.loader import load_task

    task = load_task(task_ref)
    module = task.module
    scenarios = {s.id: s for s in [*module.benchmark_scenarios(), *module.correctness_scenarios()]}
    if scenario_id not in scenarios:
        raise LaunchError(f"task '{task.spec.name}' has no scenario '{scenario_id}'")
    scenario = scenarios[scenario_id]
    cuda = task.spec.device == "cuda"
    arrays = dict(module.make_inputs(scenario, 0))
    arrays.update({name: _zeros(spec, cuda) for name, spec in module.output_specs(scenario).items()})
    stream = 0
    if cuda:
        import torch

        stream = int(torch.cuda.current_stream().cuda_stream)
    types, values = arguments(module, scenario, arrays, cuda, stream)
    try:
        entry = getattr(ctypes.CDLL(artifact), task.spec.entry_point)
    except (OSError, AttributeError) as exc:
        raise LaunchError(f"{artifact}: cannot load '{task.spec.entry_point}': {exc}") from None
    entry.argtypes, entry.restype = types, ctypes.c_int
    if not cuda:
        return int(entry(*values))
    import torch

    entry(*values)
    torch.cuda.synchronize()
    driver = ctypes.CDLL("libcuda.so.1")
    driver.cuProfilerStart()
    status = int(entry(*values))
    torch.cuda.synchronize()
    driver.cuProfilerStop()
    return status


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m quaere.methods.launch TASK ARTIFACT SCENARIO_ID", file=sys.stderr)
        return 2
    try:
        status = launch(*argv)
    except LaunchError as exc:
        print(f"launch: {exc}", file=sys.stderr)
        return 2
    print(f"launch: {argv[2]}: entry point returned {status}")
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
