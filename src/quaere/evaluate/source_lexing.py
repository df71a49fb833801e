"""Where the compiler reads a source otherwise than a line-by-line regex would: line splices, and the directives
that rename lines.

A backslash before a newline joins two lines before anything else is read (translation phase 2), so ``#\\``,
newline, ``line 1 "x.h"`` is one ``#line`` directive, and a ``//`` comment that ends in a backslash goes on over
the next line. A directive's ``#`` may also be spelled ``%:`` (a digraph) or ``??=`` (a trigraph, where the language
mode keeps them), with spaces or comments before its name.

Pure functions over text, for :mod:`.audit_checks`.
"""

from __future__ import annotations

import re

from .source_scan import SourceHit, without_comments
from .spelled import line_of

# A backslash, optional blanks (GCC splices them too, with a warning), and the newline.
_SPLICE_AT_END = re.compile(r"\\[ \t\f\v]*\r?$")
# A directive that sets the line number or the file name the compiler reports: ``#line`` (its number may be a macro),
# or GNU's marker ``# 33 "file" 1 3``, which GCC accepts in a source as it writes it in a translation unit.
_LINE_MARKER = re.compile(r"^[ \t\f\v]*(?:#|%:|\?\?=)[ \t\f\v]*(?:line\b|\d+)", re.MULTILINE)


def spliced(text: str) -> tuple[str, tuple[int, ...]]:
    """``text`` with every backslash-newline removed, and for each of its lines the 1-based line of ``text`` it
    starts on (a hit in the spliced text is reported at the line a reader of the file sees it start)."""
    joined: list[str] = []
    starts: list[int] = []
    pending: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not pending:
            starts.append(number)
        body = _SPLICE_AT_END.sub("", line)
        pending.append(body)
        if body == line:
            joined.append("".join(pending))
            pending = []
    if pending:  # the text ends in a splice
        joined.append("".join(pending))
    return "\n".join(joined), tuple(starts)


def line_markers(text: str) -> tuple[SourceHit, ...]:
    """``#line`` directives and GNU line markers (``# 1 "/usr/include/unistd.h"``) outside comments and literals,
    after line splicing, with ``#`` spelled ``%:`` or ``??=`` too. Only the text as written has them: the compiler
    writes its own in the translation unit, and no macro can make a directive."""
    joined, starts = spliced(text)
    code = without_comments(joined, keep_literals=False)
    return tuple(SourceHit(starts[line_of(code, m.start()) - 1], " ".join(m.group().split()))
                 for m in _LINE_MARKER.finditer(code))
