"""Where the compiler reads a source otherwise than a line-by-line regex would: digit separators, line splices, and
the directives that rename lines.

C++14 (and C23) read ``1'2`` as one number; C before C23 reads ``1`` and a character literal that opens at the quote.
The scanner's comment blanker (:func:`.source_scan.without_comments`) reads as C does, so in C++
``int a = 1'2, c = '/*';`` opened a comment in its eyes (the compiler sees a number and the literal ``'/*'``) and
blanked every line down to the next ``*/``, a string's included: a ``syscall(10, ...)`` there passed every rule, in
the text as written and after the preprocessor. Which language a build uses is the task's command's business, so
every scan reads both ways (:func:`every_reading`) and keeps what either sees: the compiler reads one of them.

A backslash before a newline joins two lines before anything else is read (translation phase 2), so ``#\\``,
newline, ``line 1 "x.h"`` is one ``#line`` directive, and a ``//`` comment that ends in a backslash goes on over
the next line. A directive's ``#`` may also be spelled ``%:`` (a digraph) or ``??=`` (a trigraph, where the language
mode keeps them), with spaces or comments before its name.

Pure functions over text, for :mod:`.audit_checks`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from .source_scan import COMMENT_OR_LITERAL, SourceHit, without_comments
from .spelled import line_of

# A preprocessing number, matched with the comments and literals so that a quote inside one of those is left alone.
_WITH_NUMBERS = re.compile(COMMENT_OR_LITERAL.pattern + r"|(?P<number>(?<![\w.])\.?\d(?:[eEpP][+-]|'\w|[\w.])*)",
                           re.DOTALL)

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


def without_digit_separators(text: str) -> str:
    """``text`` as C++14 reads it, its numbers' digit separators taken out (``1'000`` -> ``1000``) and nothing else
    changed: the lines stay where they are, and the C reading of the rest (every quote opens a literal) is then true."""
    return _WITH_NUMBERS.sub(lambda m: m.group().replace("'", "") if m.group("number") else m.group(), text)


def readings(text: str) -> tuple[str, ...]:
    """``text``, and :func:`without_digit_separators` of it where that differs: a C and a C++ compiler's reading."""
    cpp = without_digit_separators(text)
    return (text,) if cpp == text else (text, cpp)


def every_reading(scan: Callable[[str], Iterable[SourceHit]], text: str) -> tuple[SourceHit, ...]:
    """``scan``'s hits in each of :func:`readings` of ``text``, each once, in line order."""
    hits = dict.fromkeys(hit for reading in readings(text) for hit in scan(reading))
    return tuple(sorted(hits, key=lambda hit: hit.line))
