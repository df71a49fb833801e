"""What ``quaere tool ...`` prints: plain text for the agent to read (no colours, no tables to parse)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from quaere.methods.docsearch import Hit
from quaere.methods.lessons import Lesson
from quaere.methods.lineage import Version
from quaere.methods.ncu import NcuStatus
from quaere.methods.profile import Digest

MAX_SECTION_CHARS = 1200


def _num(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if math.isfinite(value) else "-"


def _pct(value: float) -> str:
    """A share as a percentage with three significant digits (a CPU kernel reaches 0.0123% of a server roofline)."""
    return f"{100 * value:.3g}%" if math.isfinite(value) else "-"


def _roofline(digest: Digest) -> list[str]:
    lines = [f"## Achieved vs roofline ({digest.evaluation_note})"]
    if not digest.roofline:
        return lines
    lines.append("configuration | median ms | floor ms | limited by | of roofline | TFLOP/s | GB/s | speedup")
    for row in digest.roofline:
        ratios = ", ".join(f"{_num(v, 2)}x {k}" for k, v in row.ratios.items() if math.isfinite(v))
        lines.append(f"{row.scenario_id} | {_num(row.median_ms, 4)} | {_num(row.floor_ms, 4)} | {row.limiter} | "
                     f"{_pct(row.achieved)} | {_num(row.tflops, 2)} | {_num(row.gbps, 1)} | "
                     f"{ratios or row.status.value}")
    return lines


def _binary(digest: Digest) -> list[str]:
    lines = ["## Build", digest.build_note]
    facts = digest.build
    for kernel in facts.resources:
        lines.append(f"{kernel.function}: {kernel.registers} registers, stack {kernel.stack_bytes} B, shared "
                     f"{kernel.shared_bytes} B, local {kernel.local_bytes} B" +
                     (" (local memory in use: spills or local arrays)" if kernel.local_bytes else ""))
    for stores, loads in facts.spills:
        lines.append(f"ptxas: {stores} bytes spill stores, {loads} bytes spill loads")
    lines.append("## Instruction mix")
    if facts.mix is None:
        lines.append(facts.mix_note or "no instruction mix")
        return lines
    total = facts.mix.total or 1
    lines.append(f"{facts.mix.total} instructions; by class: " +
                 ", ".join(f"{name} {_pct(count / total)}" for name, count in facts.mix.by_class))
    lines.append("most frequent: " + ", ".join(f"{op} {count}" for op, count in facts.mix.top))
    return lines


def _ncu(digest: Digest) -> list[str]:
    lines = [f"## Nsight Compute ({digest.ncu_scenario or 'no configuration'})"]
    if digest.ncu.status is not NcuStatus.MEASURED:
        return lines + [f"not measured ({digest.ncu.status.value}): {digest.ncu.note}"]
    section = ""
    for metric in digest.ncu.metrics:
        if metric.section != section:
            section = metric.section
            lines.append(f"[{metric.kernel[:60]}] {section}")
        lines.append(f"  {metric.name}: {metric.value} {metric.unit}".rstrip())
    return lines


def render_digest(digest: Digest) -> str:
    head = f"# Profile of the current candidate {digest.candidate_hash[:12]}"
    if digest.build_note.startswith("the build failed"):
        return "\n".join([head, *_roofline(digest), "## Build", digest.build_note])
    return "\n".join([head, *_roofline(digest), *_binary(digest), *_ncu(digest)])


def render_lineage(versions: Sequence[Version], current_hash: str) -> str:
    if not versions:
        return "no evaluated version yet: run `quaere eval`"
    best = max((v for v in versions if v.correct and v.geomean_ratio is not None),
               key=lambda v: v.geomean_ratio or 0.0, default=None)
    lines = ["version | parent | evaluations | verdict | geomean | notes"]
    for v in versions:
        verdict = "correct" if v.correct else f"failed: {v.failure or 'not run'}"
        notes = [n for n, on in (("best", v is best), ("current file", v.candidate_hash == current_hash)) if on]
        geomean = f"{v.geomean_ratio:.3f}x" if v.geomean_ratio is not None else "-"
        lines.append(f"{v.name} | {v.parent or '-'} | {v.evaluations} | {verdict} | {geomean} | {', '.join(notes)}")
    if all(v.candidate_hash != current_hash for v in versions):
        lines.append("the current file is not evaluated yet")
    return "\n".join(lines)


def render_version(version: Version, patch: str) -> str:
    geomean = f"{version.geomean_ratio:.3f}x" if version.geomean_ratio is not None else "-"
    verdict = "correct" if version.correct else f"failed: {version.failure or 'not run'}"
    head = (f"{version.name} ({version.candidate_hash[:12]}), parent {version.parent or '-'}: {verdict}, geomean "
            f"{geomean}, evaluated {version.evaluations} time(s)")
    return f"{head}\n{patch or '(no change from its parent)'}"


def render_hits(hits: Sequence[Hit], query: str) -> str:
    if not hits:
        return f"no section matches '{query}'"
    parts = []
    for hit in hits:
        text = hit.section.text
        text = text if len(text) <= MAX_SECTION_CHARS else text[:MAX_SECTION_CHARS] + " [...]"
        parts.append(f"## {hit.section.title} ({hit.section.path}, score {hit.score:.2f})\n{text}")
    return "\n\n".join(parts)


def render_lessons(lessons: Sequence[Lesson], problems: Sequence[str] = ()) -> str:
    lines = [f"note: {p}" for p in problems]
    if not lessons:
        return "\n".join(lines + ["no lessons yet: `quaere tool lessons add 'what you learned'`"])
    for lesson in lessons:
        tags = f" [{', '.join(lesson.tags)}]" if lesson.tags else ""
        where = f" (on {lesson.candidate_hash[:12]}" + (f", {lesson.geomean_ratio:.3f}x" if lesson.geomean_ratio
                                                         else "") + ")" if lesson.candidate_hash else ""
        lines.append(f"{lesson.number}. session {lesson.session}{tags}{where}: {lesson.text}")
    return "\n".join(lines)
