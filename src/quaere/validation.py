"""One wording for a pydantic validation error in a user's file: the field's dotted path and what was
expected, so every reader of a bad file (task, scenarios, ledger, store, states) names it the same way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError


def field_path(loc: Sequence[Any], top: str = "(top level)") -> str:
    """``('params', 'rows')`` as ``params.rows``; ``top`` when the error is about the whole object."""
    return ".".join(str(part) for part in loc) or top


def describe(error: Any, prefix: Sequence[Any] = (), extra_hint: str = "") -> str:
    """``field 'a.b' <expectation>`` for one error of :meth:`ValidationError.errors` (``prefix`` goes
    before its location, e.g. a list index); a missing field reads 'is required', an unknown one 'is not a
    known field' followed by ``extra_hint``."""
    message = error["msg"]
    if error["type"] == "missing":
        message = "is required"
    elif error["type"] == "extra_forbidden":
        message = f"is not a known field{extra_hint}"
    return f"field '{field_path((*prefix, *error['loc']))}' {message}"


def describe_first(exc: ValidationError, prefix: Sequence[Any] = (), extra_hint: str = "") -> str:
    """:func:`describe` of the first error of ``exc`` (one line: the first problem is the one to fix)."""
    return describe(exc.errors()[0], prefix, extra_hint)
