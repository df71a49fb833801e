"""The agent's own words, read from the transcript an external agent names in its hook payload.

Hook payloads carry tool calls but not what the model said between them; the "explained-away failure"
detector needs those words. Claude Code and Codex append one JSON object per line to ``transcript_path``,
each in its own shape (read by its dialect's ``transcript_text``; a line is recognised by its shape, so
the same reader serves every dialect). Lines of any other shape are skipped: this is best effort, never
an error.
"""

from __future__ import annotations

import json
from pathlib import Path

from quaere.hooks.dialect import all_specs


def _texts(line: str) -> str:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return ""
    if not isinstance(obj, dict):
        return ""
    return next((text for spec in all_specs() if (text := spec.transcript_text(obj))), "")


def new_assistant_texts(transcript: Path, lines_seen: int) -> tuple[list[str], int]:
    """Assistant texts on the lines after the first ``lines_seen`` whole lines, and the new count.

    A last line without its newline (still being written) is left for the next call.
    """
    try:
        data = transcript.read_bytes()
    except OSError:
        return [], lines_seen
    complete = data[: data.rfind(b"\n") + 1].decode("utf-8", errors="replace").splitlines()
    if len(complete) < lines_seen:  # a new or rewritten transcript: start over
        lines_seen = 0
    texts = [t for t in (_texts(line) for line in complete[lines_seen:]) if t]
    return texts, len(complete)
