"""The contract between quaere and a task's Python module (``task.py`` beside ``task.toml``).

A task module is a plain Python file exposing the functions of :class:`TaskModule` at module level. The
evaluator's judge imports it, draws inputs with it, asks it for the two references, and asks it for the
entry point's arguments *as data* (:func:`arguments`): the candidate runs in a separate runner process
that never imports the task module, and the judge turns the list into pointers into the buffers it owns.
Arrays are the task's own kind: numpy arrays for a ``device = "cpu"`` task, torch tensors on the GPU for
a ``device = "cuda"`` task; the harness touches them only through :class:`ArrayOps` of the same kind
(poison, guard bytes, checksums, error norms).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

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


ArgKind = Literal["pointer", "workspace", "workspace_bytes", "stream", "i32", "i64", "u64", "f32", "f64"]


@dataclass(frozen=True)
class Arg:
    """One argument of the C entry point, in order: a pointer to a named input or output, the workspace
    (a pointer, or NULL when the task asks for none) and its size in bytes, the stream to launch on (NULL
    on the CPU), or a scalar of a C type (``i32`` = int, ``i64`` = long long, ``u64`` = size_t,
    ``f32`` = float, ``f64`` = double)."""

    kind: ArgKind
    name: str = ""
    value: int | float = 0


def pointer(name: str) -> Arg:
    return Arg("pointer", name=name)


def workspace() -> Arg:
    return Arg("workspace")


def workspace_size() -> Arg:
    return Arg("workspace_bytes")


def stream() -> Arg:
    return Arg("stream")


def i32(value: int) -> Arg:
    return Arg("i32", value=int(value))


def i64(value: int) -> Arg:
    return Arg("i64", value=int(value))


def u64(value: int) -> Arg:
    return Arg("u64", value=int(value))


def f32(value: float) -> Arg:
    return Arg("f32", value=float(value))


def f64(value: float) -> Arg:
    return Arg("f64", value=float(value))


@dataclass(frozen=True)
class Sample:
    """A few elements of the outputs and their two references, to verify a timed output cheaply.

    ``take(outputs)`` returns, per output name, the sampled elements of those outputs (same shape as the
    references here); the judge compares them with ``fp32`` under the bound it measured on the full
    untimed check.
    """

    take: Callable[[Arrays], Arrays]
    fp32: Arrays
    low: Arrays


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

    def arguments(self, scenario: Scenario) -> list[Arg]:
        """The entry point's arguments for ``scenario``, in order (see :class:`Arg`); it returns int status."""
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


OPTIONAL_FUNCTIONS: tuple[str, ...] = ("sample",)
"""``sample(scenario, inputs, seed) -> Sample``: a few output elements and their references, so that every
timed output can be verified without the full reference (which can cost more than the kernel). Without
it the judge computes both full references for every timed call. ``seed`` is the judge's for the sample alone,
never the one the inputs were drawn from: the elements checked must not follow from the inputs."""


REQUIRED_FUNCTIONS: tuple[str, ...] = (
    "correctness_scenarios",
    "benchmark_scenarios",
    "make_inputs",
    "output_specs",
    "workspace_bytes",
    "arguments",
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
