"""The contract between quaere and a task's Python module (``task.py`` beside ``task.toml``).

A task module is a plain Python file exposing the functions of :class:`TaskModule` at module level. The
evaluator's worker imports it, draws inputs with it, lets it launch the candidate's C ABI entry point, and
asks it for the two references. Arrays are the task's own kind: numpy arrays for a ``device = "cpu"``
task, torch tensors on the GPU for a ``device = "cuda"`` task; the harness touches them only through
:class:`ArrayOps` of the same kind (poison, guard bytes, checksums, error norms).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Callable, Literal, Protocol, runtime_checkable

from quaere.records import Scenario

Precision = Literal["low", "fp32"]
Array = Any  # numpy.ndarray or torch.Tensor, by the task's device
Arrays = dict[str, Array]


class ComparisonUnavailable(RuntimeError):
    """A comparison implementation cannot run here (e.g. "FA3 not installed"); the message says why."""


@dataclass(frozen=True)
class OutputSpec:
    """Shape and element type of one output the candidate must write entirely."""

    shape: tuple[int, ...]
    dtype: str  # "float32", "bfloat16", "float16"


# A comparison: given the scenario and the inputs, return a zero-argument callable that computes the
# outputs (written into the given output arrays or returned, the harness only times it).
Comparison = Callable[[Scenario, Arrays, Arrays], Callable[[], Any]]


@runtime_checkable
class TaskModule(Protocol):
    def correctness_scenarios(self) -> list[Scenario]:
        """Every correctness scenario, ids stable across versions."""
        ...

    def benchmark_scenarios(self) -> list[Scenario]:
        """The benchmark set, ids stable across versions."""
        ...

    def make_inputs(self, scenario: Scenario, seed: int) -> Arrays:
        """Fresh random inputs for ``scenario`` drawn from ``seed`` (never zeros), on the task's device."""
        ...

    def output_specs(self, scenario: Scenario) -> dict[str, OutputSpec]:
        """The outputs the entry point writes, by name."""
        ...

    def workspace_bytes(self, scenario: Scenario) -> int:
        """Scratch bytes handed to the entry point (0 for none)."""
        ...

    def launch(
        self, entry: ctypes._CFuncPtr, inputs: Arrays, outputs: Arrays, scenario: Scenario, workspace: Array | None
    ) -> int:
        """Call the C ABI entry point on these arrays; return its status code (0 = success)."""
        ...

    def reference(self, scenario: Scenario, inputs: Arrays, precision: Precision) -> Arrays:
        """Outputs computed by a trusted implementation: ``fp32`` on upcast inputs, or ``low`` precision."""
        ...

    def flops(self, scenario: Scenario) -> float:
        """Useful floating-point operations of one call (masked work not counted)."""
        ...

    def min_bytes(self, scenario: Scenario) -> float:
        """Fewest bytes one call must move through memory (inputs read once, outputs written once)."""
        ...

    def comparisons(self) -> dict[str, Comparison]:
        """Comparison implementations by name; each may raise ComparisonUnavailable when set up."""
        ...


REQUIRED_FUNCTIONS: tuple[str, ...] = (
    "correctness_scenarios",
    "benchmark_scenarios",
    "make_inputs",
    "output_specs",
    "workspace_bytes",
    "launch",
    "reference",
    "flops",
    "min_bytes",
    "comparisons",
)


class ArrayOps(Protocol):
    """What the harness needs from an array library; one implementation per device kind."""

    def alloc_guarded(self, spec: OutputSpec, guard_elems: int) -> tuple[Array, Array]:
        """Return (output view, whole buffer) where the view sits between two guard regions."""
        ...

    def poison(self, buffer: Array) -> None:
        """Fill ``buffer`` with the poison pattern (a NaN with a distinctive payload)."""
        ...

    def count_poison(self, array: Array) -> int:
        """How many elements still hold the poison pattern bit for bit."""
        ...

    def checksum(self, array: Array) -> str:
        """A digest of the bytes of ``array``."""
        ...

    def synchronize(self) -> None:
        ...
