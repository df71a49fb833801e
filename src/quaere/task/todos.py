"""The places left to fill in a task module: every call of ``todo("...")``, found in its syntax tree
without running it."""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Todo:
    line: int
    what: str


def find_todos(source: str, filename: str = "task.py") -> tuple[Todo, ...]:
    """Every ``todo(...)`` or ``kit.todo(...)`` call of ``source``, in line order; the text of its first
    argument says what the place needs. Raises SyntaxError for a file that is not Python."""
    found: list[tuple[int, int, Todo]] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        if name == "todo":
            first = node.args[0] if node.args else None
            what = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else "(no text)"
            found.append((node.lineno, node.col_offset, Todo(line=node.lineno, what=what)))
    return tuple(todo for _, _, todo in sorted(found, key=lambda item: item[:2]))
