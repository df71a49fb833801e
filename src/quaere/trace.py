"""Typed events of a campaign, appended to ``.quaere/trace.jsonl``.

Every event carries ``type`` (the discriminator) and ``ts`` (Unix seconds). Moment detectors, the Stop
hook, ``quaere ask`` and ``quaere report`` all read this one stream. Long tool outputs are cut and keep a
hash of the full text; secrets are never written (``redact`` runs on every text field).
"""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from quaere.jsonl import append_line, read_lines
from quaere.records import EndReason, MethodKind, Moment, QuestionKind, StopStatus

MAX_TEXT_CHARS = 4000


class Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    ts: float = Field(default_factory=time.time, description="Unix time of the event, seconds.")
    session: int = Field(default=0, description="Campaign session number (0 outside a campaign).")


class SessionStart(Event):
    type: Literal["session_start"] = "session_start"
    agent: str = Field(description="Backend name: claude, openai, scripted, external.")


class SessionEnd(Event):
    type: Literal["session_end"] = "session_end"
    reason: EndReason = Field(description="Why the session ended.")


class AgentMessage(Event):
    type: Literal["message"] = "message"
    role: Literal["assistant", "user", "system"]
    text: str


class ToolCall(Event):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    tool: str = Field(description="Tool name as the agent named it (Bash, Edit, bash ...).")
    input: str = Field(description="The tool input, serialized and cut.")


class ToolResult(Event):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    output: str = Field(description="Output, cut to MAX_TEXT_CHARS.")
    output_sha256: str = Field(description="sha256 of the full, uncut output.")
    is_error: bool = False


class EvaluationDone(Event):
    """Summary of one evaluator run; the full record is in the ledger under ``candidate_hash``."""

    type: Literal["evaluation"] = "evaluation"
    candidate_hash: str
    correct: bool = Field(description="Build, audit and every correctness scenario passed.")
    failing: tuple[str, ...] = Field(default=(), description="Ids of scenarios that did not pass.")
    ratios: dict[str, float] = Field(
        default_factory=dict, description="Per benchmark scenario: candidate speedup over the goal baseline."
    )
    geomean_ratio: float | None = Field(default=None, description="Geomean of ratios; None when nothing was timed.")
    geomean_error: float | None = Field(
        default=None, description="Relative standard error of geomean_ratio (0.02 = 2 %), from each configuration's "
        "measured spread; None when unknown."
    )
    above_roofline: tuple[str, ...] = Field(default=(), description="Scenarios timed faster than their floor.")
    comparison_ratios: dict[str, float] = Field(
        default_factory=dict, description="Per scenario: candidate speedup over the best comparison."
    )


class MomentDetected(Event):
    type: Literal["moment"] = "moment"
    moment: Moment
    evidence: str


class QuestionAsked(Event):
    type: Literal["question"] = "question"
    moment: Moment
    source: Literal["bank", "human", "queue"] = Field(
        description="queue: delivered by a hook from the store's signed queue (`quaere ask` chose it before)."
    )
    entry_id: str | None = Field(default=None, description="Bank id; None for a person's own text.")
    text: str
    kind: QuestionKind | None = Field(
        default=None, description="A person's own tag for their question; bank questions take their entry's kind."
    )


class StopAttempt(Event):
    type: Literal["stop_attempt"] = "stop_attempt"
    last_message: str = ""


class StopDecision(Event):
    type: Literal["stop_decision"] = "stop_decision"
    decision: Literal["block", "allow"]
    reason: str
    goal_status: StopStatus = Field(description="The goal's state at the stop, or what ended the campaign.")


class BudgetSpent(Event):
    type: Literal["budget"] = "budget"
    budget: str = Field(description="sessions, tool_calls, wall_s, blocks, cost_usd.")
    limit: float
    used: float


class TrustModeEvent(Event):
    """The trust mode in force for a campaign run (said at its start; see docs/security.md, Modes)."""

    type: Literal["trust_mode"] = "trust_mode"
    mode: str = Field(description="same_user or separate_user.")
    detail: str = Field(default="", description="What it means, and why a stronger mode was not used.")


class SessionUnchecked(Event):
    """A session ended without a stop the Stop hook allowed (the agent crashed, quit, or was cut off)."""

    type: Literal["session_unchecked"] = "session_unchecked"
    reason: str = Field(description="How the session ended instead: its end reason and detail.")


class ToolState(BaseModel):
    """Whether one tool of a method works on this machine, and what that means for the agent."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(description="The tool or program: ncu, cuobjdump, objdump, docs ...")
    available: bool
    detail: str = Field(default="", description="What was found, or why it is absent and what runs without it.")


class MethodStarted(Event):
    """The method a campaign run gives the agent (written at every start and resume; one method per campaign)."""

    type: Literal["method"] = "method"
    method: MethodKind
    tools: tuple[ToolState, ...] = Field(default=(), description="The tooled arm's tools as found on this machine.")


class SupervisorNote(Event):
    """The tooled arm's supervisor saw a loop of failed edits and told the agent to change approach."""

    type: Literal["supervisor"] = "supervisor"
    loop: Literal["same_failure", "readded_lines"]
    evidence: str
    text: str = Field(description="The note the agent was given.")


class ErrorEvent(Event):
    type: Literal["error"] = "error"
    where: str
    message: str


TraceEvent = Annotated[
    SessionStart | SessionEnd | AgentMessage | ToolCall | ToolResult | EvaluationDone | MomentDetected
    | QuestionAsked | StopAttempt | StopDecision | BudgetSpent | TrustModeEvent | SessionUnchecked | MethodStarted
    | SupervisorNote | ErrorEvent,
    Field(discriminator="type"),
]
_ADAPTER: TypeAdapter[TraceEvent] = TypeAdapter(TraceEvent)

# Keys that look like credentials: API keys, bearer tokens, AWS keys. Replaced before anything is written.
_SECRET_PATTERNS = (
    re.compile(r"sk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?i)bearer\s+[A-Za-z0-9_\-\.=]{16,}"),
    re.compile(r"AKIA[0-9A-Z]{16}"),
    re.compile(r"(?i)((?:api[_-]?key|token|secret|password)\s*[=:]\s*)['\"]?[^\s'\"]{8,}"),
)


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Remove credential-looking strings and every exact value in ``secrets``."""
    for value in secrets:
        if value and len(value) >= 6:
            text = text.replace(value, "[REDACTED]")
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.lastindex else "") + "[REDACTED]", text)
    return text


def cut(text: str, limit: int = MAX_TEXT_CHARS) -> tuple[str, str]:
    """Return (text cut to ``limit`` characters with a marker, sha256 of the full text)."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    if len(text) <= limit:
        return text, digest
    head = limit * 3 // 4
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}", digest


class TraceWriter:
    """Appends events to one trace file, redacting the given secret values from every string field."""

    def __init__(self, path: Path, secrets: tuple[str, ...] = ()) -> None:
        self.path = path
        self.secrets = secrets

    def write(self, event: Event) -> None:
        data = event.model_dump(mode="json")
        for key, value in data.items():
            if isinstance(value, str) and key not in ("type",):
                data[key] = redact(value, self.secrets)
        append_line(self.path, data)


class TraceRead(BaseModel):
    """Events that parsed, in file order, and a note for each line that did not."""

    model_config = ConfigDict(frozen=True)
    events: tuple[TraceEvent, ...]
    problems: tuple[str, ...]


def read_trace(path: Path) -> TraceRead:
    """Read a trace, tolerant of a torn last line and of lines of unknown shape (reported, not fatal)."""
    raw = read_lines(path)
    events: list[TraceEvent] = []
    problems = [f"{path}:{n}: not JSON: {text[:80]!r}" for n, text in raw.bad_lines]
    for index, obj in enumerate(raw.objects):
        try:
            events.append(_ADAPTER.validate_python(obj))
        except ValidationError as exc:
            problems.append(f"{path}: event {index + 1}: {exc.errors()[0]['msg']} ({obj.get('type', '?')})")
    return TraceRead(events=tuple(events), problems=tuple(problems))


def current_session(events: tuple[TraceEvent, ...] | list[TraceEvent]) -> int:
    """The campaign session in progress: the last ``session_start`` not followed by its ``session_end``;
    0 outside a campaign. Lets a command the agent runs (``quaere eval``) tag its events without any
    setting passed down to it."""
    session = 0
    for event in events:
        if isinstance(event, SessionStart):
            session = event.session
        elif isinstance(event, SessionEnd) and event.session == session:
            session = 0
    return session
