"""One scenario's inputs, outputs and workspace in judge-owned shared buffers, and the entry point's
arguments resolved against them.

Outputs sit between two guard regions of their own allocation (bit patterns checked after every call) and
are poisoned before every call. Several output *sets* can be kept, so that consecutive timed calls write
to different addresses (a cache keyed by output pointer gains nothing).
"""

from __future__ import annotations

import math
from typing import Any

from quaere.evaluate.arrays import GUARD_BYTES, guard_elems, pattern_for
from quaere.evaluate.protocol import ArgSpec, BufferSpec
from quaere.evaluate.shared import DTYPE_BYTES, Allocator, SharedBuffer
from quaere.task.contract import Arg, OutputSpec


class ArgumentError(ValueError):
    """The task's argument list names something the scenario does not have (a task bug, named)."""


class Outputs:
    """One set of guarded outputs: ``views[name]`` is the output, ``wholes[name]`` includes the guards."""

    def __init__(self, ops: Any, buffers: dict[str, SharedBuffer], specs: dict[str, OutputSpec]) -> None:
        self.ops, self.specs, self.buffers = ops, specs, buffers
        self.wholes: dict[str, Any] = {}
        self.views: dict[str, Any] = {}
        for name, spec in specs.items():
            guard = guard_elems(spec)
            numel = math.prod(spec.shape)
            whole = buffers[name].typed(spec.dtype, (numel + 2 * guard,))
            ints = ops.int_view(whole)
            ops.fill_ints(ints[:guard], pattern_for(spec.dtype).guard)
            ops.fill_ints(ints[guard + numel:], pattern_for(spec.dtype).guard)
            self.wholes[name] = whole
            self.views[name] = whole[guard:guard + numel].reshape(spec.shape)

    def poison(self) -> None:
        for view in self.views.values():
            self.ops.poison(view)

    def guards_intact(self, name: str) -> bool:
        return self.ops.guards_intact(self.wholes[name], guard_elems(self.specs[name]))


class ScenarioBuffers:
    """Allocates everything one scenario needs; :meth:`free` releases it (after the runners unmapped it)."""

    def __init__(self, allocator: Allocator, ops: Any, inputs: dict[str, Any], specs: dict[str, OutputSpec],
                 workspace_bytes: int, output_sets: int = 1) -> None:
        self.ops, self.specs = ops, specs
        self.buffers: list[SharedBuffer] = []
        self.inputs: dict[str, Any] = {}
        for name, array in inputs.items():
            buffer = self._allocate(allocator, f"in-{name}", ops.nbytes(array))
            view = buffer.typed(ops.dtype_name(array), tuple(array.shape))
            ops.assign(view, array)
            self.inputs[name] = view
        self.output_sets: list[Outputs] = []
        for index in range(output_sets):
            buffers = {name: self._allocate(allocator, f"out{index}-{name}", _guarded_bytes(spec))
                       for name, spec in specs.items()}
            self.output_sets.append(Outputs(ops, buffers, specs))
        self.workspace_bytes = max(0, int(workspace_bytes))
        self.workspace = self._allocate(allocator, "workspace", self.workspace_bytes) if self.workspace_bytes else None
        self._workspace_view = self.workspace.typed("uint8", (self.workspace_bytes,)) if self.workspace else None

    def _allocate(self, allocator: Allocator, name: str, nbytes: int) -> SharedBuffer:
        buffer = allocator.allocate(name, nbytes)
        self.buffers.append(buffer)
        return buffer

    def exports(self) -> tuple[list[BufferSpec], list[int]]:
        specs, fds = [], []
        for buffer in self.buffers:
            spec, fd = buffer.export()
            specs.append(spec)
            if fd is not None:
                fds.append(fd)
        return specs, fds

    @property
    def ids(self) -> list[str]:
        return [b.id for b in self.buffers]

    def refill_workspace(self) -> None:
        if self._workspace_view is not None:
            self.ops.fill_bytes(self._workspace_view, 0xA5)

    def refill_inputs(self, fresh: dict[str, Any]) -> None:
        """New input contents (same shapes), written in place: the addresses the runner mapped stay valid."""
        for name, array in fresh.items():
            self.ops.assign(self.inputs[name], array)

    def arguments(self, args: list[Arg], output_set: int = 0) -> list[ArgSpec]:
        """The task's argument list as the runner's typed arguments for output set ``output_set``."""
        resolved: list[ArgSpec] = []
        for arg in args:
            resolved.append(self._resolve(arg, output_set))
        return resolved

    def _resolve(self, arg: Arg, output_set: int) -> ArgSpec:
        if arg.kind == "pointer":
            if arg.name in self.inputs:
                return ArgSpec(kind="ptr", buffer=f"in-{arg.name}", offset=0)
            if arg.name in self.specs:
                offset = GUARD_BYTES
                return ArgSpec(kind="ptr", buffer=f"out{output_set}-{arg.name}", offset=offset)
            raise ArgumentError(f"argument names '{arg.name}', which is neither an input "
                                f"({', '.join(self.inputs)}) nor an output ({', '.join(self.specs)})")
        if arg.kind == "workspace":
            return ArgSpec(kind="ptr", buffer="workspace", offset=0) if self.workspace else ArgSpec(kind="null")
        if arg.kind == "workspace_bytes":
            return ArgSpec(kind="u64", value=self.workspace_bytes)
        if arg.kind == "stream":
            return ArgSpec(kind="stream")
        return ArgSpec(kind=arg.kind, value=arg.value)

    def free(self) -> None:
        self.inputs.clear()
        self.output_sets.clear()
        self._workspace_view = None
        for buffer in self.buffers:
            buffer.free()
        self.buffers.clear()


def _guarded_bytes(spec: OutputSpec) -> int:
    return math.prod(spec.shape) * DTYPE_BYTES[spec.dtype] + 2 * GUARD_BYTES
