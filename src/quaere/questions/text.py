"""Prose as the word detectors read it: the agent's own sentences, folded, cut into clauses.

Code blocks, inline code and quoted passages are removed first (a log line saying "done" or a quoted
question is not the agent's claim); short scare quotes keep their words. Hard-wrapped prose continues
across single newlines; a blank line, a list item, a table row or a heading starts a new block.
:func:`fold` lowercases and strips accents one character for one character, so a span found in the
folded text is the same span in the original ("matériel" is matched as "materiel").
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_APOSTROPHES = {"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'", "\u00b4": "'"}
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
_QUOTED = re.compile(r"\"([^\"\n]*)\"|\u201c([^\u201d\n]*)\u201d|\u00ab([^\u00bb\n]*)\u00bb")
_SCARE_QUOTE_WORDS = 2  # a quote of at most this many words is emphasis, not someone else's text
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][*_)])\s+")
_MARKER = re.compile(r"\s*(?:[-*+#>|]+|\d+[.)])\s")
_EMPHASIS = re.compile(r"\*\*|__|(?<!\w)\*(?=\w)|(?<=\w)\*(?!\w)")
# Clause boundaries: punctuation, and conjunctions that open a new assertion. Negation and hypotheses
# reach no further than their clause ("it's not a bug, it's rounding" asserts rounding).
_PUNCTUATION_BREAK = r"[,;:()\[\]\u2014\u2013]|\s-\s|\.\.\.|\u2026"
_PHRASE_BREAK = re.compile(_PUNCTUATION_BREAK)
_CLAUSE_BREAK = re.compile(
    _PUNCTUATION_BREAK + r"|\b(?:but|although|though|however|whereas|yet|so|thus|hence|"
    r"therefore|and|while|mais|cependant|pourtant|alors que|tandis que|bien que|donc|et|puis)\b"
)


def fold(text: str) -> str:
    """Lowercase without accents, with typographic apostrophes made plain; same length as ``text``."""
    out = []
    for ch in text:
        ch = _APOSTROPHES.get(ch, ch)
        base = unicodedata.normalize("NFD", ch)[:1] or ch
        low = base.lower()
        out.append(low if len(low) == 1 else ch)
    return "".join(out)


def _unquote(match: re.Match[str]) -> str:
    inner = next((g for g in match.groups() if g is not None), "")
    return f" {inner} " if len(inner.split()) <= _SCARE_QUOTE_WORDS else " "


def plain_prose(text: str) -> str:
    """``text`` without code, quoted passages and emphasis markers."""
    return _EMPHASIS.sub("", _QUOTED.sub(_unquote, _CODE.sub(" ", text)))


def _blocks(text: str) -> list[str]:
    blocks: list[list[str]] = [[]]
    after_heading = False
    for line in text.splitlines():
        if not line.strip() or _MARKER.match(line) or after_heading:
            blocks.append([])
        after_heading = line.lstrip().startswith("#")
        stripped = line.strip().strip("|").replace("|", " ; ")
        if stripped.strip():
            blocks[-1].append(_MARKER.sub(" ", stripped, count=1).strip() if _MARKER.match(line) else stripped)
    return [" ".join(b) for b in blocks if b]


def sentences(text: str) -> list[str]:
    """The agent's sentences, in order, with code and quoted text removed."""
    return [s.strip() for block in _blocks(plain_prose(text)) for s in _SENTENCE_SPLIT.split(block) if s.strip()]


@dataclass(frozen=True)
class Clause:
    """A span ``[start, end)`` of a folded sentence between two clause boundaries."""

    start: int
    end: int


def clauses(folded: str, conjunctions: bool = True) -> list[Clause]:
    """The clauses of a folded sentence, in order. Without ``conjunctions`` only punctuation cuts (a
    wider span, for what a clause is about: "variants A and B are within noise")."""
    cuts = [0]
    for match in (_CLAUSE_BREAK if conjunctions else _PHRASE_BREAK).finditer(folded):
        cuts.extend((match.start(), match.end()))
    cuts.append(len(folded))
    return [Clause(cuts[i], cuts[i + 1]) for i in range(0, len(cuts) - 1, 2) if cuts[i + 1] >= cuts[i]]


def clause_at(parts: list[Clause], position: int) -> Clause:
    """The clause holding ``position`` (the last one that starts at or before it)."""
    found = parts[0]
    for part in parts:
        if part.start <= position:
            found = part
    return found


def is_question(sentence: str) -> bool:
    """A sentence that asks rather than asserts (ends with '?', markup aside)."""
    return sentence.rstrip("*_ )\"'").endswith("?")
