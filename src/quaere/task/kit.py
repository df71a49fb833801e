"""What a task written by ``quaere task new`` is made of: its buffer declarations, the places left to fill
(:func:`todo`), shapes as expressions over the entry point's integer parameters, and the scenario design
(named axes, edge values, the largest scenario that fits).

A generated ``task.py`` stays a plain task module (see :mod:`quaere.task.contract`): it calls these helpers
and any of them can be replaced by the user's own code.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from quaere.evaluate.shared import DTYPE_BYTES
from quaere.records import Scenario
from quaere.task.spec import TaskError

Role = Literal["input", "output"]
Params = Mapping[str, Any]
TODO_MARK = "TODO(quaere)"
INT32_MAX = 2**31 - 1


class TaskIncomplete(TaskError):
    """A place of a generated task.py that the user has not filled yet (a :func:`todo` call ran)."""


def todo(what: str) -> Any:
    """A place left to fill: calling it raises :class:`TaskIncomplete` with ``what`` the place needs.

    ``quaere task check`` lists every call of it in task.py (without running the file) and refuses the task
    while one is left.
    """
    raise TaskIncomplete(f"{TODO_MARK}: {what}")


@dataclass(frozen=True)
class Buffer:
    """One pointer of the entry point: what it is (``role``), its element type and its shape."""

    role: Role
    """'input' (the kernel only reads it) or 'output' (the kernel writes every element)."""
    dtype: str
    """float32, float64, float16, bfloat16 (outputs); also int8/16/32/64 and uint8 for inputs."""
    shape: tuple[str | int, ...]
    """Extents as integers or expressions over the integer parameters, e.g. ``("rows", "cols")`` or
    ``("batch * heads", "(n + 127) // 128")``."""
    values: tuple[int, int] = (0, 100)
    """For an integer input: its elements are drawn uniformly from [low, high)."""

    def __post_init__(self) -> None:
        if self.role not in ("input", "output"):
            raise TaskError(f"Buffer role is {self.role!r}; expected 'input' or 'output'")
        if self.dtype not in DTYPE_BYTES:
            raise TaskError(f"Buffer dtype is {self.dtype!r}; expected one of {sorted(DTYPE_BYTES)}")
        if self.role == "output" and not self.dtype.startswith(("float", "bfloat")):
            raise TaskError(f"output dtype is {self.dtype!r}; expected a floating type (outputs are poisoned with NaN)")
        if not isinstance(self.shape, tuple) or not self.shape:
            raise TaskError(f"Buffer shape is {self.shape!r}; expected a non-empty tuple such as ('rows', 'cols')")


IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
OPERATORS: dict[type, Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
}


def extent(expression: str | int, params: Params) -> int:
    """The value of one shape entry for ``params``: an int, or + - * // % over integer parameters."""
    if isinstance(expression, int):
        return expression
    names: dict[str, str] = {}
    # Names become _p0, _p1...: a parameter may be called like a Python keyword ('in', 'from').
    renamed = IDENTIFIER.sub(lambda m: f"_p{_index(names, m[0])}", expression)
    try:
        tree = ast.parse(renamed.strip(), mode="eval")
    except SyntaxError:
        raise TaskError(f"shape entry {expression!r}: not an expression; expected + - * // % over "
                        f"{', '.join(params) or 'the integer parameters'}") from None
    return _evaluate(tree.body, {f"_p{i}": name for i, name in enumerate(names)}, params, expression)


def _index(names: dict[str, str], name: str) -> int:
    if name not in names:
        names[name] = name
    return list(names).index(name)


def _evaluate(node: ast.AST, names: dict[str, str], params: Params, expression: str) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        name = names[node.id]
        value = params.get(name)
        if type(value) is not int:
            raise TaskError(f"shape entry {expression!r}: '{name}' is not an integer parameter; expected one of "
                            f"{', '.join(k for k, v in params.items() if type(v) is int)}")
        return value
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        left = _evaluate(node.left, names, params, expression)
        right = _evaluate(node.right, names, params, expression)
        return OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand, names, params, expression)
    raise TaskError(f"shape entry {expression!r}: only integers, parameter names and + - * // % are allowed")


def shape_of(buffer: Buffer, params: Params) -> tuple[int, ...]:
    return tuple(extent(entry, params) for entry in buffer.shape)


def buffer_bytes(buffers: Mapping[str, Buffer], params: Params) -> int:
    """Bytes of every buffer once: the inputs read and the outputs written by one call."""
    return sum(math.prod(shape_of(b, params)) * DTYPE_BYTES[b.dtype] for b in buffers.values())


def format_value(value: int | float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def scenario_id(params: Params, prefix: str = "") -> str:
    return prefix + "-".join(f"{name}{format_value(value)}" for name, value in params.items())


def named_scenarios(prefix: str, configs: Sequence[Params], defaults: Params) -> list[Scenario]:
    """One scenario per config, its missing axes taken from ``defaults``."""
    return [Scenario(id=scenario_id(full, prefix), params=full)
            for full in ({**defaults, **config} for config in configs)]


def first_values(axes: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    return {name: values[0] for name, values in axes.items()}


def _fit(params: dict[str, Any], axes: Mapping[str, Sequence[Any]], keep: str,
         size: Callable[[Params], int], budget: int) -> dict[str, Any] | None:
    """``params`` with the other integer axes stepped down, largest first, until ``size`` fits ``budget``."""
    while size(params) > budget:
        smaller = {name: [v for v in values if v < params[name]] for name, values in axes.items()
                   if name != keep and type(params[name]) is int and any(v < params[name] for v in values)}
        if not smaller:
            return None
        name = max(smaller, key=lambda n: params[n])
        params = {**params, name: max(smaller[name])}
    return params


def largest(axis: str, base: Params, size: Callable[[Params], int], budget: int, cap: int = INT32_MAX) -> int | None:
    """The largest value of integer ``axis`` (others as in ``base``) whose scenario fits ``budget`` bytes;
    None when the size does not grow with the axis (a flag, say) or not even 1 fits."""
    if size({**base, axis: 2}) <= size({**base, axis: 1}) or size({**base, axis: 1}) > budget:
        return None
    low, high = 1, 2
    while high < cap and size({**base, axis: high}) <= budget:
        low, high = high, min(cap, high * 2)
    if size({**base, axis: high}) <= budget:
        return high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if size({**base, axis: middle}) <= budget else (low, middle)
    return low


def covering_scenarios(axes: Mapping[str, Sequence[Any]], size: Callable[[Params], int], budget: int,
                       passes: int = 2) -> list[Scenario]:
    """Every value of every axis at least ``passes`` times, the other axes rotating through theirs (so each
    value meets many others), each scenario shrunk to fit ``budget`` bytes; then, per integer axis that
    sizes the buffers, the largest value that fits with the other axes at their smallest."""
    names = list(axes)
    rows: list[dict[str, Any]] = []
    for turn in range(passes):
        for position, axis in enumerate(names):
            for index, value in enumerate(axes[axis]):
                params = {name: axes[name][(index * (1 + turn) + position + turn * (other + 1)) % len(axes[name])]
                          for other, name in enumerate(names)}
                fitted = _fit({**params, axis: value}, axes, axis, size, budget)
                if fitted is not None:
                    rows.append(fitted)
    smallest = {name: min(values) if all(type(v) is int for v in values) else values[0]
                for name, values in axes.items()}
    for axis, values in axes.items():
        if all(type(v) is int for v in values):
            top = largest(axis, smallest, size, budget)
            if top is not None and top > max(values):
                rows.append({**smallest, axis: top})
    unique = {scenario_id(row): row for row in rows}
    return [Scenario(id=key, params=row) for key, row in unique.items()]


EDGE_VALUES = (1, 2, 3, 7, 13, 16, 17, 31, 63, 64, 65, 127, 128, 129, 255, 257, 1000, 1021)
"""1, primes, non-multiples of 8/16/64/128 and the multiples beside them: where tiling and tails break."""


def benchmark_shapes(count: int, total_log2: int) -> list[tuple[int, ...]]:
    """Powers of two for ``count`` integer axes whose product is 2**total_log2, from balanced to skewed
    both ways (what a memory-bound kernel sees from tall-thin to short-wide)."""
    if count == 0:
        return [()]
    even = [total_log2 // count] * count
    even[0] += total_log2 - sum(even)
    shapes = [tuple(even)]
    if count > 1:
        for skew in (2, 4, 6):
            for sign in (1, -1):
                exps = list(even)
                exps[0], exps[1] = exps[0] + sign * skew, exps[1] - sign * skew
                if min(exps) >= 0:
                    shapes.append(tuple(exps))
    else:
        shapes += [(total_log2 - 2,), (total_log2 + 2,)]
    return [tuple(2**e for e in exps) for exps in dict.fromkeys(shapes)]
