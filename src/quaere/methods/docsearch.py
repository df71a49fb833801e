"""``quaere tool search``: BM25 over a few documentation folders, split into sections at markdown headings.

The corpus is the shipped CUDA notes (``quaere/methods/docs/``), the task folder's own pages (``*.md``,
else its description) and the folders the user named with ``--docs``. The index (term frequencies per
section) is kept in ``.quaere/tooled/docs-index.json`` and rebuilt when a file's size or time changes.
Ranking is Okapi BM25 (k1 = 1.2, b = 0.75), the usual defaults.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SHIPPED_DOCS = Path(__file__).parent / "docs"
K1, B = 1.2, 0.75
SUFFIXES = (".md", ".txt", ".rst")
_TOKEN = re.compile(r"[a-z0-9_]+")
_HEADING = re.compile(r"^#{1,4}\s+(.*)$")


@dataclass(frozen=True)
class Section:
    path: str
    title: str
    text: str


@dataclass(frozen=True)
class Hit:
    section: Section
    score: float


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def split_sections(path: Path, text: str) -> list[Section]:
    """One section per markdown heading (the text before the first heading is titled by the file name)."""
    sections: list[Section] = []
    title, lines = path.stem, []
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            if "".join(lines).strip():
                sections.append(Section(str(path), title, "\n".join(lines).strip()))
            title, lines = heading.group(1).strip(), []
        else:
            lines.append(line)
    if "".join(lines).strip():
        sections.append(Section(str(path), title, "\n".join(lines).strip()))
    return sections


def doc_files(folders: Sequence[Path]) -> list[Path]:
    return sorted(p for folder in folders for p in folder.rglob("*") if p.is_file() and p.suffix in SUFFIXES)


def _signature(files: Sequence[Path], extra: Sequence[Section]) -> list[list[object]]:
    stamps: list[list[object]] = [[str(p), p.stat().st_size, p.stat().st_mtime_ns] for p in files]
    return stamps + [[s.path, len(s.text), 0] for s in extra]


def _build(files: Sequence[Path], extra: Sequence[Section]) -> dict[str, object]:
    sections = [s for p in files for s in split_sections(p, p.read_text(errors="replace"))] + list(extra)
    return {
        "sections": [[s.path, s.title, s.text] for s in sections],
        "terms": [dict(Counter(tokens(f"{s.title} {s.text}"))) for s in sections],
    }


class DocIndex:
    """A BM25 index over sections; :meth:`load` reuses the cached one while the files are unchanged."""

    def __init__(self, sections: Sequence[Section], terms: Sequence[dict[str, int]]) -> None:
        self.sections, self.terms = list(sections), list(terms)
        self.lengths = [sum(t.values()) for t in self.terms]
        self.average = sum(self.lengths) / len(self.lengths) if self.lengths else 0.0
        self.df = Counter(term for t in self.terms for term in t)

    @classmethod
    def load(cls, folders: Sequence[Path], extra: Sequence[Section], cache: Path | None) -> DocIndex:
        files = doc_files(folders)
        signature = _signature(files, extra)
        data = None
        if cache is not None and cache.is_file():
            try:
                saved = json.loads(cache.read_text())
            except ValueError:  # a damaged cache is rebuilt, never trusted
                saved = {}
            data = saved if isinstance(saved, dict) and saved.get("signature") == signature else None
        if data is None:
            data = {"signature": signature, **_build(files, extra)}
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                cache.write_text(json.dumps(data))
        return cls([Section(*s) for s in data["sections"]], data["terms"])

    def idf(self, term: str) -> float:
        n, df = len(self.sections), self.df.get(term, 0)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def search(self, query: str, limit: int = 5) -> list[Hit]:
        """The ``limit`` best sections for ``query`` (only those sharing a term with it)."""
        wanted = set(tokens(query))
        hits = []
        for section, terms, length in zip(self.sections, self.terms, self.lengths, strict=True):
            score = 0.0
            for term in wanted & terms.keys():
                tf = terms[term]
                score += self.idf(term) * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / (self.average or 1)))
            if score > 0:
                hits.append(Hit(section, score))
        return sorted(hits, key=lambda h: -h.score)[:limit]


def task_pages(task_folder: Path, description: str) -> tuple[list[Path], list[Section]]:
    """The task folder's own pages, or (when it has none) its description as one section."""
    pages = sorted(p for p in task_folder.glob("*.md") if p.is_file())
    if pages:
        return [task_folder], []
    return [], [Section(str(task_folder / "task.toml"), "task description", description.strip())]
