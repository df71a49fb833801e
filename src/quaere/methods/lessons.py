"""``quaere tool lessons``: what the agent learned, written by itself, read back in later sessions.

Each lesson is one line of ``.quaere/tooled/lessons.jsonl``: the text, optional tags, the session it was
written in, and the candidate it was written about (hash and, when evaluated, its geomean), so a lesson
keeps the evidence it stood on. Lessons are ranked for a query with the documentation search's BM25.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from quaere.jsonl import append_line, read_lines
from quaere.methods.docsearch import DocIndex, Section, tokens
from quaere.methods.lineage import tooled_dir
from quaere.workspace import Workspace

MAX_LESSON_CHARS = 2000


class LessonError(ValueError):
    """An empty or oversized lesson; the message says what was expected."""


class Lesson(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    number: int
    ts: float = Field(default_factory=time.time)
    session: int = 0
    text: str
    tags: tuple[str, ...] = ()
    candidate_hash: str = ""
    geomean_ratio: float | None = None


def lessons_file(workspace: Workspace) -> Path:
    return tooled_dir(workspace) / "lessons.jsonl"


def read_lessons(workspace: Workspace) -> tuple[tuple[Lesson, ...], tuple[str, ...]]:
    """The lessons in order, and a note for each line that is not one (the agent may have edited the file)."""
    path = lessons_file(workspace)
    raw = read_lines(path)
    lessons: list[Lesson] = []
    problems = [f"{path}:{n}: not JSON" for n, _ in raw.bad_lines]
    for index, obj in enumerate(raw.objects, start=1):
        try:
            lessons.append(Lesson.model_validate(obj))
        except ValidationError as exc:
            problems.append(f"{path}: lesson {index}: {exc.errors()[0]['msg']}")
    return tuple(lessons), tuple(problems)


def add_lesson(
    workspace: Workspace, text: str, tags: tuple[str, ...], session: int, candidate_hash: str,
    geomean_ratio: float | None,
) -> Lesson:
    """Append a lesson; numbers follow the lessons already there."""
    text = text.strip()
    if not text:
        raise LessonError("a lesson needs some text: quaere tool lessons add 'what you learned'")
    if len(text) > MAX_LESSON_CHARS:
        raise LessonError(f"a lesson is at most {MAX_LESSON_CHARS} characters (got {len(text)}): keep it short")
    existing, _ = read_lessons(workspace)
    lesson = Lesson(number=len(existing) + 1, session=session, text=text, tags=tags,
                    candidate_hash=candidate_hash, geomean_ratio=geomean_ratio)
    append_line(lessons_file(workspace), lesson.model_dump(mode="json"))
    return lesson


def search_lessons(lessons: tuple[Lesson, ...], query: str, limit: int = 5) -> list[Lesson]:
    """The lessons that best match ``query`` (BM25 over their text and tags)."""
    sections = [Section(str(lesson.number), " ".join(lesson.tags), lesson.text) for lesson in lessons]
    index = DocIndex(sections, [dict(Counter(tokens(f"{s.title} {s.text}"))) for s in sections])
    by_number = {str(lesson.number): lesson for lesson in lessons}
    return [by_number[hit.section.path] for hit in index.search(query, limit)]
