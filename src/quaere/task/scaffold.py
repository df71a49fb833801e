"""``quaere task new``: from a kernel file's entry point (and the user's reference) to a plan of the task,
everything inferred that can be, the rest left as places to fill.

Inferred: each pointer's element type from its C type; ``const`` pointers are inputs; with a reference,
a non-const pointer it takes is an input and one it does not take is an output (the reference returns the
outputs); the stream, a workspace and its size by type and name; the axes from the scalar parameters
(integers get edge values, ``bool`` 0 and 1); the minimum bytes from the buffers; the build, the banned
libraries, tolerances and timing from the file's kind. Left to fill (or answered on the command line):
which non-const pointer is an output without a reference, shapes, the type behind a ``void*``, the values
of a floating-point parameter, the FLOPs of one call, the workspace's size.
"""

from __future__ import annotations

import ast
import os
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path

from quaere.evaluate.shared import DTYPE_BYTES
from quaere.task import kit
from quaere.task.csig import CParam, CSignature, ParamRole
from quaere.task.spec import TaskError

KERNEL_KINDS = {".cu": "cuda", ".cpp": "cpu", ".cc": "cpu", ".cxx": "cpu"}


class ScaffoldError(TaskError):
    """A bad input to ``quaere task new``: the message names the file or option, the parameter and the expectation."""


@dataclass(frozen=True)
class Answers:
    """What the user said on the command line instead of filling a place in task.py."""

    outputs: tuple[str, ...] = ()
    shapes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    values: dict[str, tuple[float, ...]] = field(default_factory=dict)
    flops: str | None = None
    workspace_bytes: int | None = None
    row_sample: bool = False
    name: str | None = None


@dataclass(frozen=True)
class ReferenceSpec:
    file: Path
    function: str
    params: tuple[str, ...]
    """Its parameters without defaults, from the file's syntax tree (the file is not imported here)."""


@dataclass(frozen=True)
class Planned:
    """One buffer of the plan: a known value, or None where task.py gets a place to fill (and ``hint``)."""

    name: str
    role: str | None
    dtype: str | None
    shape: tuple[str, ...] | None
    why: str
    """Where the role came from, as the comment beside the buffer says."""


@dataclass(frozen=True)
class TaskPlan:
    name: str
    signature: CSignature
    device: str
    kernel_name: str
    buffers: tuple[Planned, ...]
    axes: dict[str, tuple[float, ...] | None]
    flops: str | None
    reference: tuple[str, str] | None
    """(file relative to the task folder, function)."""
    reference_spec: ReferenceSpec | None
    workspace_bytes: int | None
    has_workspace: bool
    row_sample: bool

    @property
    def complete(self) -> bool:
        """Whether task.py will have no place left to fill."""
        known = all(b.role and b.dtype and b.shape for b in self.buffers)
        return (known and all(v is not None for v in self.axes.values()) and self.flops is not None
                and self.reference is not None and (self.workspace_bytes is not None or not self.has_workspace))

    def high_dtype(self) -> str:
        """The precision of the high reference: one step above the widest float buffer."""
        wide = any(b.dtype in ("float32", "float64") for b in self.buffers)
        return "float64" if wide else "float32"

    def int_axes(self) -> list[str]:
        return [p.name for p in self.signature.scalars() if p.scalar in ("i32", "i64", "u64") and not p.boolean]


def parse_reference(argument: str) -> ReferenceSpec:
    """``FILE:FUNCTION`` read from the file's syntax tree: the function exists and names its parameters."""
    path_text, _, function = argument.rpartition(":")
    if not path_text or not function.isidentifier():
        raise ScaffoldError(f"--reference {argument}: expected FILE:FUNCTION, e.g. ref.py:softmax")
    file = Path(path_text)
    try:
        tree = ast.parse(file.read_text(), filename=str(file))
    except OSError as exc:
        raise ScaffoldError(f"{file}: cannot be read ({exc.strerror}); expected the reference's Python file") from None
    except SyntaxError as exc:
        raise ScaffoldError(f"{file}: line {exc.lineno}: not valid Python ({exc.msg})") from None
    found = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function]
    if not found:
        defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        raise ScaffoldError(f"{file}: no function '{function}' at module level; found: {', '.join(defined) or 'none'}")
    args = found[0].args
    positional = args.posonlyargs + args.args
    required = positional[: len(positional) - len(args.defaults)]
    required += [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    return ReferenceSpec(file=file.resolve(), function=function, params=tuple(a.arg for a in required))


def _check_reference(spec: ReferenceSpec, signature: CSignature, outputs: tuple[str, ...]) -> None:
    names = [p.name for p in signature.params if p.role in (ParamRole.POINTER, ParamRole.SCALAR)]
    for param in spec.params:
        if param not in names:
            raise ScaffoldError(f"{spec.file}: parameter '{param}' of {spec.function}() names nothing of the entry "
                                f"point {signature.name} ({', '.join(names)}); expected one of those names")
        if param in outputs:
            raise ScaffoldError(f"{spec.file}: parameter '{param}' of {spec.function}() is an output (--output); "
                                "expected the reference to take inputs and scalars and return the outputs")
    for pointer in signature.pointers():
        if pointer.const and pointer.name not in spec.params:
            raise ScaffoldError(f"{spec.file}: {spec.function}() does not take '{pointer.name}', a const (input) "
                                f"pointer of {signature.name}; expected every input as a parameter of that name")


def _role(pointer: CParam, answers: Answers, reference: ReferenceSpec | None) -> tuple[str | None, str]:
    if pointer.const:
        if pointer.name in answers.outputs:
            raise ScaffoldError(f"--output {pointer.name}: '{pointer.ctype} {pointer.name}' is const; expected a "
                                "pointer the kernel writes (not const)")
        return "input", f"{pointer.ctype}: an input"
    if answers.outputs:
        if pointer.name in answers.outputs:
            return "output", f"{pointer.ctype}: an output (--output)"
        return "input", f"{pointer.ctype}: an input (not named by --output)"
    if reference is not None:
        if pointer.name in reference.params:
            return "input", f"{pointer.ctype}: an input ({reference.function}() takes it)"
        return "output", f"{pointer.ctype}: an output ({reference.function}() does not take it)"
    return None, f"{pointer.ctype}: not const"


def _check_answers(signature: CSignature, answers: Answers) -> None:
    pointers = [p.name for p in signature.pointers()]
    ints = [p.name for p in signature.scalars() if p.scalar in ("i32", "i64", "u64")]
    for option, names in (("--output", answers.outputs), ("--shape", answers.shapes), ("--dtype", answers.dtypes)):
        for name in names:
            if name not in pointers:
                raise ScaffoldError(f"{option} {name}: '{name}' is not a pointer of {signature.name}; expected one "
                                    f"of {', '.join(pointers)}")
    for name, dtype in answers.dtypes.items():
        if dtype not in DTYPE_BYTES:
            raise ScaffoldError(f"--dtype {name}={dtype}: expected one of {', '.join(sorted(DTYPE_BYTES))}")
    for name in answers.values:
        if name not in [p.name for p in signature.scalars()]:
            raise ScaffoldError(f"--values {name}: '{name}' is not a scalar parameter of {signature.name}; expected "
                                f"one of {', '.join(p.name for p in signature.scalars())}")
    expressions = [(f"--shape {n}", e) for n, shape in answers.shapes.items() for e in shape]
    expressions += [("--flops", answers.flops)] if answers.flops else []
    for option, expression in expressions:
        try:
            kit.extent(expression, dict.fromkeys(ints, 1))
        except TaskError as exc:
            raise ScaffoldError(f"{option}: {exc}") from None


def task_name(folder: Path, answers: Answers) -> str:
    name = answers.name or re.sub(r"[^a-z0-9_\-]+", "_", folder.resolve().name.lower()).strip("_-")
    if not re.fullmatch(r"[a-z0-9_\-]+", name or ""):
        raise ScaffoldError(f"--name {name!r}: expected lower-case letters, digits, '_' and '-'")
    return name


def kernel_device(kernel: Path) -> str:
    try:
        return KERNEL_KINDS[kernel.suffix]
    except KeyError:
        raise ScaffoldError(f"{kernel}: a '{kernel.suffix}' file; expected a kernel source ending in "
                            f"{', '.join(KERNEL_KINDS)}") from None


def plan_task(folder: Path, kernel: Path, signature: CSignature, reference: ReferenceSpec | None,
              answers: Answers) -> TaskPlan:
    """Everything task.toml and task.py will say; raises :class:`ScaffoldError` for a contradiction."""
    _check_answers(signature, answers)
    if reference is not None:
        _check_reference(reference, signature, answers.outputs)
    buffers = []
    for pointer in signature.pointers():
        role, why = _role(pointer, answers, reference)
        buffers.append(Planned(pointer.name, role, answers.dtypes.get(pointer.name, pointer.dtype),
                               answers.shapes.get(pointer.name), why))
    axes: dict[str, tuple[float, ...] | None] = {}
    for scalar in signature.scalars():
        default = (0, 1) if scalar.boolean else kit.EDGE_VALUES if scalar.scalar in ("i32", "i64", "u64") else None
        axes[scalar.name] = answers.values.get(scalar.name, default)
    inside = kernel.resolve().is_relative_to(folder.resolve())
    kernel_name = str(kernel.resolve().relative_to(folder.resolve())) if inside else f"kernel{kernel.suffix}"
    relative = (os.path.relpath(reference.file, folder.resolve()), reference.function) if reference else None
    return TaskPlan(
        name=task_name(folder, answers), signature=signature, device=kernel_device(kernel), kernel_name=kernel_name,
        buffers=tuple(buffers), axes=axes, flops=answers.flops, reference=relative, reference_spec=reference,
        workspace_bytes=answers.workspace_bytes,
        has_workspace=any(p.role is ParamRole.WORKSPACE for p in signature.params), row_sample=answers.row_sample,
    )


def machine_target() -> str:
    return platform.machine() or "host"
