"""The strings a source spells without writing them whole: adjacent literals, escapes, raw strings, character lists.

The compiler joins ``"cuModule" "LoadData"`` into one string (translation phase 6, after the preprocessor, so
``-E`` leaves it split), decodes ``"cuModule\\x4coadData"``, and stores ``{'c', 'u', ...}`` or ``{99, 117, ...}``
as the bytes they name. A text rule that reads the literals one by one as written sees none of these names; the
functions here give each run of adjacent literals, and each brace list of character or integer literals, as the
string the compiler makes of it, at the line where it starts. A name computed at run time (XOR, concatenation of
``std::string``) stays unseen: that is code, not spelling.

Pure functions over text whose comments are already blanked (:func:`.source_scan.without_comments`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PREFIX = r"(?<![\w])(?:u8|u|U|L)?"
_RAW = _PREFIX + r'R"(?P<delim>[^()\\\s"]{0,16})\((?P<body>.*?)\)(?P=delim)"'
_PLAIN = _PREFIX + r'"(?:\\\r\n|\\.|[^"\\\n])*"'
_CHAR = _PREFIX + r"'(?:\\.|[^'\\\n])+'"
# Raw first: R"(...)" would otherwise read as the identifier R and a plain literal; character literals are matched
# so that a quote inside one ('"') does not open a string.
_TOKEN = re.compile(f"(?P<string>{_RAW}|{_PLAIN})|{_CHAR}", re.DOTALL)
# A run of adjacent string literals, at the start of what it is matched against (after optional whitespace).
LITERAL_RUN = re.compile(
    r"\s*(?:{raw}|{plain})(?:\s*(?:{raw1}|{plain}))*".format(
        raw=_RAW.replace("delim", "d0").replace("body", "b0"), raw1=_RAW.replace("delim", "d1").replace("body", "b1"),
        plain=_PLAIN),
    re.DOTALL)
# One argument that is nothing but string literals: what the compiler can hand a function as a fixed name.
LITERAL_ARGUMENT = re.compile(r"\s*\(" + LITERAL_RUN.pattern + r"\s*[,)]", re.DOTALL)
_ESCAPE = re.compile(r"\\(?:x([0-9A-Fa-f]+)|([0-7]{1,3})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(\r?\n|.))", re.DOTALL)
# A backslash before a newline splices the lines (translation phase 2): it stands for nothing.
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\n": ""}

_INTEGER = r"(?:0[xX][0-9A-Fa-f]+|0[bB][01]+|[0-9]+)(?:[uUlL]{0,3})"
_ELEMENT = rf"(?:{_CHAR}|{_INTEGER})"
_LIST = re.compile(rf"\{{\s*{_ELEMENT}(?:\s*,\s*{_ELEMENT})+\s*,?\s*\}}")
_LIST_ELEMENT = re.compile(rf"{_CHAR}|{_INTEGER}")


@dataclass(frozen=True)
class Spelled:
    """A string as the compiler stores it, the 1-based lines its first literal starts and its last one ends on, and
    how it was spelled."""

    line: int
    value: str
    how: str
    last_line: int


def _code_point(value: int) -> str:
    return chr(value) if 0 <= value <= 0x10FFFF else "\ufffd"


def _unescape(match: re.Match[str]) -> str:
    hexa, octal, short, long, other = match.groups()
    if hexa or octal or short or long:
        base, digits = (16, hexa) if hexa else (8, octal) if octal else (16, short or long)
        return _code_point(int(digits, base))
    return _SIMPLE.get(other.lstrip("\r"), other)


def decode_literal(token: str) -> str:
    """The characters one string or character literal (prefix and quotes included) stands for."""
    raw = re.fullmatch(_RAW, token, re.DOTALL)
    if raw:
        return raw.group("body")
    body = token[token.index(token[-1]) + 1:-1]
    return _ESCAPE.sub(_unescape, body)


def decode_run(run: str) -> str:
    """The one string a run of adjacent literals (as :data:`LITERAL_RUN` matches it) stands for."""
    return "".join(decode_literal(token.group()) for token in _TOKEN.finditer(run) if token.group("string"))


def line_of(text: str, offset: int) -> int:
    """The 1-based line of ``text`` that ``offset`` falls on."""
    return text.count("\n", 0, offset) + 1


def _adjacent_runs(text: str) -> list[list[re.Match[str]]]:
    runs: list[list[re.Match[str]]] = []
    previous: re.Match[str] | None = None
    for token in _TOKEN.finditer(text):
        if token.group("string") is None:
            previous = None
            continue
        if previous is not None and not text[previous.end():token.start()].strip():
            runs[-1].append(token)
        else:
            runs.append([token])
        previous = token
    return runs


def joined_literals(text: str) -> tuple[Spelled, ...]:
    """Every run of adjacent string literals (one literal alone included) as the one string the compiler makes of
    it, escapes decoded, at the line the run starts on."""
    found = []
    for run in _adjacent_runs(text):
        how = "joined literals" if len(run) > 1 else "a literal"
        found.append(Spelled(line_of(text, run[0].start()), decode_run(text[run[0].start():run[-1].end()]), how,
                             line_of(text, run[-1].end())))
    return tuple(found)


def _element_value(token: str) -> int:
    if token.endswith("'"):
        chars = decode_literal(token)
        return ord(chars[0]) if len(chars) == 1 else -1
    digits = token.rstrip("uUlL")
    base = 16 if digits[:2] in ("0x", "0X") else 2 if digits[:2] in ("0b", "0B") else 8 if digits[:1] == "0" else 10
    try:
        return int(digits[2:] if base in (2, 16) else digits, base)
    except ValueError:  # "09": no number (text under #if 0 is read too), so the list is no string
        return -1


def character_lists(text: str) -> tuple[Spelled, ...]:
    """Every brace list of two or more character or integer literals, each element read as a character: the bytes
    ``const char name[] = {...}`` stores. Lists with an element outside Unicode are left out (not a string)."""
    found = []
    for listing in _LIST.finditer(text):
        values = [_element_value(m.group()) for m in _LIST_ELEMENT.finditer(listing.group())]
        if all(0 <= v <= 0x10FFFF for v in values):
            found.append(Spelled(line_of(text, listing.start()), "".join(map(chr, values)), "character list",
                                 line_of(text, listing.end())))
    return tuple(found)


def spelled_strings(text: str) -> tuple[Spelled, ...]:
    """:func:`joined_literals` and :func:`character_lists` of ``text``, in line order."""
    return tuple(sorted(joined_literals(text) + character_lists(text), key=lambda s: s.line))
