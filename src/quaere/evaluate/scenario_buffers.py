"""One scenario's inputs, outputs and workspace in judge-owned shared buffers (from the judge's pool), and
the entry point's arguments resolved against them.

Outputs sit between two guard regions at the start of their buffer (bit patterns checked after every call)
and are poisoned before every call. Several output *sets* can be kept, so that consecutive timed calls
write to different addresses (a cache keyed by output pointer gains nothing).
"""

from __future__ import annotations

import math
from typing import Any

from quaere.evaluate.arrays import GUARD_BYTES, guard_elems, pattern_for
from quaere.evaluate.protocol import ArgSpec
from quaere.evaluate.shared import DTYPE_BYTES, BufferPool, SharedBuffer
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
    """Views of everything one scenario needs over the pool's buffers; :meth:`free` drops the views."""

    def __init__(self, pool: BufferPool, ops: Any, inputs: dict[str, Any], specs: dict[str, OutputSpec],
                 workspace_bytes: int, output_sets: int = 1) -> None:
        self.ops, self.specs = ops, specs
        self.buffers: dict[str, SharedBuffer] = {}
        self.inputs: dict[str, Any] = {}
        for name, array in inputs.items():
            buffer = self._take(pool, f"in-{name}", ops.nbytes(array))
            view = buffer.typed(ops.dtype_name(array), tuple(array.shape))
            ops.assign(view, array)
            self.inputs[name] = view
        self.output_sets: list[Outputs] = []
        for index in range(output_sets):
            buffers = {name: self._take(pool, f"out{index}-{name}", _guarded_bytes(spec))
                       for name, spec in specs.items()}
            self.output_sets.append(Outputs(ops, buffers, specs))
        # The word a timed GPU call writes behind its work (quaere.evaluate.close_word); unused on a CPU.
        self.close_word = self._take(pool, "close-word", 4)
        self.workspace_bytes = max(0, int(workspace_bytes))
        self.workspace = self._take(pool, "workspace", self.workspace_bytes) if self.workspace_bytes else None
        self._workspace_view = self.workspace.typed("uint8", (self.workspace_bytes,)) if self.workspace else None

    def _take(self, pool: BufferPool, role: str, nbytes: int) -> SharedBuffer:
        self.buffers[role] = pool.get(role, nbytes)
        return self.buffers[role]

    def shared(self) -> list[SharedBuffer]:
        """The buffers a runner must have mapped for this scenario's calls."""
        return list(self.buffers.values())

    def refill_workspace(self) -> None:
        if self._workspace_view is not None:
            self.ops.fill_bytes(self._workspace_view, 0xA5)

    def refill_inputs(self, fresh: dict[str, Any]) -> None:
        """New input contents (same shapes), written in place: the addresses the runner mapped stay valid."""
        for name, array in fresh.items():
            self.ops.assign(self.inputs[name], array)

    def close_address(self) -> int | None:
        """The judge's device address of the close word; None where the buffers are not device memory."""
        pointer = getattr(self.close_word, "pointer", None)
        return int(pointer) if pointer else None

    def arguments(self, args: list[Arg], output_set: int = 0) -> list[ArgSpec]:
        """The task's argument list as the runner's typed arguments for output set ``output_set``."""
        resolved: list[ArgSpec] = []
        for arg in args:
            resolved.append(self._resolve(arg, output_set))
        return resolved

    def _resolve(self, arg: Arg, output_set: int) -> ArgSpec:
        if arg.kind == "pointer":
            if arg.name in self.inputs:
                return ArgSpec(kind="ptr", buffer=self.buffers[f"in-{arg.name}"].id, offset=0)
            if arg.name in self.specs:
                return ArgSpec(kind="ptr", buffer=self.buffers[f"out{output_set}-{arg.name}"].id, offset=GUARD_BYTES)
            raise ArgumentError(f"argument names '{arg.name}', which is neither an input "
                                f"({', '.join(self.inputs)}) nor an output ({', '.join(self.specs)})")
        if arg.kind == "workspace":
            if self.workspace is None:
                return ArgSpec(kind="null")
            return ArgSpec(kind="ptr", buffer=self.workspace.id, offset=0)
        if arg.kind == "workspace_bytes":
            return ArgSpec(kind="u64", value=self.workspace_bytes)
        if arg.kind == "stream":
            return ArgSpec(kind="stream")
        return ArgSpec(kind=arg.kind, value=arg.value)

    def free(self) -> None:
        """Drop the views (the pool keeps the buffers for the next scenario)."""
        self.inputs.clear()
        self.output_sets.clear()
        self._workspace_view = None
        self.buffers.clear()


def _guarded_bytes(spec: OutputSpec) -> int:
    return math.prod(spec.shape) * DTYPE_BYTES[spec.dtype] + 2 * GUARD_BYTES
