"""``task.toml``: the schema of a task folder, validated on load.

Every field has a docstring; a malformed file raises :class:`TaskError` naming the file, the field and
what was expected, never a bare traceback.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from quaere.validation import describe

BUILD_PLACEHOLDERS = ("{source}", "{output}")


class TaskError(ValueError):
    """A task folder or file is malformed; the message names the file, the field and the expectation."""


class Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CorrectnessRule(Strict):
    factor: float = Field(default=2.0, gt=0)
    """Allowed error is ``factor`` times the low-precision reference's error (FlashAttention uses 2)..."""
    floor: float = Field(default=1e-5, ge=0)
    """... plus this absolute floor, so an exact low-precision reference does not demand exactness."""
    scenario_timeout_s: float = Field(default=60.0, gt=0)
    """A scenario whose worker does not answer within this many seconds is ``timed_out``."""


class TimingRule(Strict):
    warmup_ms: float = Field(default=25.0, ge=0)
    """Time spent in untimed calls of each implementation before the first timed one."""
    budget_ms: float = Field(default=400.0, gt=0)
    """Total timed milliseconds aimed for, per implementation and scenario."""
    min_reps: int = Field(default=5, ge=1)
    """Fewest timed repetitions, whatever the budget."""
    max_reps: int = Field(default=100, ge=1)
    """Most timed repetitions, whatever the budget."""
    rounds: int = Field(default=3, ge=1)
    """Repetitions are spread over this many interleaved rounds (implementation order shuffled per round)."""
    flush_l2: bool = True
    """Overwrite a buffer larger than the last-level cache before every repetition."""
    hidden_work_abs_ms: float = Field(default=0.05, ge=0)
    """Slack of the judge's wall-clock bound: a candidate's lower quartile of (wall time - claimed device time), over
    its calls at or below its median claim (those its reported median is made of), may exceed the initial kernel's
    (over all its calls) by this much, or by ``hidden_work_rel`` of its device time if larger;
    beyond it the timing is ``hidden_work``. Measured on the H200 (52 configurations, two runs): two honest
    kernels differ by up to 25 us; 50 us is twice that. A CPU task that leaves it out gets
    :data:`CPU_TIMING_SLACK`'s instead (as ``hidden_work_rel`` and ``drain_abs_ms``)."""
    hidden_work_rel: float = Field(default=0.05, ge=0)
    """Relative part of the same slack (a fraction of the candidate's median device time)."""
    drain_abs_ms: float = Field(default=0.03, ge=0)
    """Device work may go on this long after a call's end event (or ``hidden_work_rel`` of its device time,
    if larger) before it is ``hidden_work``: the drain is measured inside the runner, to a few µs."""
    cpu_abs_ms: float = Field(default=0.2, ge=0)
    """CPU tasks: a candidate's median of (its runner's kernel-accounted CPU time and waits for a core per
    call, in the call and since the previous one - its claimed time) may exceed the initial kernel's median
    by this much, or by ``cpu_rel`` of its claimed time if larger, before it is ``hidden_work`` (work outside
    the call, or a forged time). No effect on a GPU task or with threads allowed. Honest kernels 2.5x faster
    to 2x slower than the initial one differed from it by -271 to +113 us, a claim 8% short by +432 to +711
    us (2-core machine, idle and loaded, 2026-12-02: ``docs/runs/2026-12-02/cpu-bound``); counted from a gated
    call's ``armed`` word since 2026-12-04, the initial kernel as candidate by -36 to +43 us (idle or beside one busy
    loop), one 2x slower by -36 to +58 us and the 8% short claim by +388 to +523 us (idle; ``docs/security.md``).
    Where the runners' median wait for a core passes twice it, a claim it cannot catch for certain is
    ``unverified`` (``docs/security.md``, "CPU tasks on a busy machine")."""
    cpu_rel: float = Field(default=0.02, ge=0)
    """Relative part of the same slack (a fraction of the candidate's median claimed time)."""
    span_abs_ms: float | None = Field(default=None, ge=0)
    """GPU tasks: slack of the bound on the judge's own device-timeline span around each call. A candidate's
    lower quartile of (span - claimed time), over the same calls as ``hidden_work_abs_ms``'s, may exceed the initial
    kernel's by this much, or by
    ``hidden_work_rel`` of its device time if larger, before it is ``hidden_work``. ``None`` (the default):
    recorded, not judged; set it only where it was measured for the task's kernels, since the span's honest
    spread is not known in general (flash_attention_hopper on the H200: at most 29 us over 78 configuration
    runs)."""
    close_abs_ms: float | None = Field(default=None, ge=0)
    """GPU tasks: slack of the bound on the judge's device-timeline span from the window's opening to its close
    mark, which its stream reaches on the device right behind the call's work (``quaere.evaluate.close_word``). A
    candidate's lower quartile of (that span - claimed time), over the same calls as ``hidden_work_abs_ms``'s, may
    exceed the initial kernel's by this much, or by
    ``close_rel`` of its device time if larger, before it is ``hidden_work``. ``None`` (the default): recorded,
    not judged; set it where its honest spread was measured for the task's kernels (docs/security.md)."""
    close_rel: float = Field(default=0.005, ge=0)
    """Relative part of the same slack (a fraction of the candidate's median device time). Small: the close span's
    honest spread mostly did not grow with the call's length on the H200 (at most +4.8 us over calls of 13 us to 3 ms,
    both GPU tasks, 2026-12-04, session 26). Once it did: +13.5 us on a 2.84 ms call (session 27, call 4, with the
    initial kernel read over only its lower half, about 8 calls), inside this 0.5% (14.2 us) alone."""
    slot_abs_ms: float | None = Field(default=None, ge=0)
    """GPU tasks: slack of the bound on the runner's turn on the judge's device timeline, from the end of the judge's
    cover (before which no work of the runner's context runs) to the moment the judge's stream saw its close word
    (``quaere.evaluate.close_word.Seen.slot_ms``). A candidate's lower quartile of (that turn - claimed time), over
    the same calls as ``hidden_work_abs_ms``'s, may exceed the initial kernel's by this much, or by ``slot_rel`` of its
    device time if larger, before it is ``hidden_work``. It holds none of the judge's own work, so its spread is a
    few times narrower than the close span's, and it catches claims shaved by less than ``close_abs_ms``. ``None``
    (the default): recorded, not judged; set it where its honest spread was measured (docs/security.md)."""
    slot_rel: float = Field(default=0.0005, ge=0)
    """Relative part of the same slack (a fraction of the candidate's median device time). Both ends of the turn and
    the claim are device timestamps, so nothing in it grows with the call: on the H200 the initial kernel's 9.2-9.5 ms
    calls read -0.1 to -2.0 us over itself, its 0.2-0.35 ms calls -0.4 and -0.6 us (docs/runs/2026-12-04/s28/). It is
    a margin for calls longer than any measured, 0.05% (4.7 us at 9.5 ms)."""
    sample_slack: float = Field(default=2.0, ge=1)
    """A timed output's sampled error may reach this multiple of the bound of the full untimed check
    (the sample's inputs are fresh, so its error varies a little): a memoized or skipped output is off by
    orders of magnitude more."""
    full_check_share: float = Field(default=0.1, ge=0, le=1)
    """Share of the candidate's timed calls whose whole output is checked against the fp32 reference of
    that call's inputs, each call drawn in secret after it returned (so the candidate cannot tell which);
    one of its first three calls on each configuration always is. The sample catches a wrong output in
    proportion to the rows it gets wrong; this catches a single wrong element."""


CPU_TIMING_SLACK: dict[str, float] = {"hidden_work_abs_ms": 0.3, "hidden_work_rel": 0.1, "drain_abs_ms": 0.3}
"""The clock bound's slack of a ``device = "cpu"`` task, for the fields its ``[timing]`` does not give.
:class:`TimingRule`'s own defaults are the GPU's (measured on the H200); a CPU runner's round trip jitters by
tens of microseconds more on a loaded machine (a fast honest kernel on two busy cores exceeded the initial
kernel's by 339 us per call), while the CPU kernels timed take milliseconds, so a forged or hidden 10% still
stands far out of this slack."""


class Roofline(Strict):
    matrix_tflops: float = Field(gt=0)
    """Measured peak rate of the unit doing the work (TFLOP/s), e.g. 790 for bf16 GEMM on an H200."""
    bandwidth_gbps: float = Field(gt=0)
    """Measured memory bandwidth (GB/s), counting bytes read plus written."""


class GoalTarget(Strict):
    baseline: str
    """'initial' (the task's initial kernel) or the name of a comparison."""
    ratio: float = Field(gt=0)
    """Required speedup of the candidate over the baseline on each matching scenario."""
    scenarios: str = "*"
    """Glob over benchmark scenario ids that this target applies to."""


class Goal(Strict):
    targets: tuple[GoalTarget, ...] = Field(min_length=1)
    """Every benchmark scenario matched by a target must reach its ratio; all correctness must pass."""


class ComparisonSpec(Strict):
    name: str
    """Key of the implementation in the module's ``comparisons()``."""
    description: str = ""
    """What it is, e.g. 'FlashAttention-3 (fa3-fwd wheel)'."""


class TaskSpec(Strict):
    name: str = Field(pattern=r"^[a-z0-9_\-]+$")
    """Task identifier, lower case."""
    description: str
    """One paragraph on the problem."""
    device: Literal["cpu", "cuda"]
    """Where the candidate runs."""
    target: str
    """Target architecture, e.g. 'sm_90a' or 'x86-64'."""
    initial_kernel: str
    """File name of the initial kernel, relative to the task folder."""
    module: str = "task.py"
    """File name of the task's Python module (see quaere.task.contract)."""
    entry_point: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """C ABI symbol the harness calls."""
    build: str
    """One build command, a template over {source}, {output} and optionally {depfile}."""
    banned: tuple[str, ...] = ()
    """Library families the audit rejects: cutlass, cute, cublas, cublaslt, cudnn."""
    correctness: CorrectnessRule = CorrectnessRule()
    timing: TimingRule = TimingRule()
    roofline: Roofline
    comparisons: tuple[ComparisonSpec, ...] = ()
    goal: Goal

    @model_validator(mode="before")
    @classmethod
    def _device_timing_slack(cls, data: Any) -> Any:
        """A CPU task's clock-bound slack defaults to :data:`CPU_TIMING_SLACK` (fields it sets are kept)."""
        if isinstance(data, dict) and data.get("device") == "cpu":
            timing = data.get("timing", {})
            if isinstance(timing, dict):  # anything else is left for the field's own error
                return {**data, "timing": {**CPU_TIMING_SLACK, **timing}}
        return data

    @field_validator("build")
    @classmethod
    def _build_has_placeholders(cls, value: str) -> str:
        missing = [p for p in BUILD_PLACEHOLDERS if p not in value]
        if missing:
            raise ValueError(f"must contain the placeholders {', '.join(missing)}")
        return value

    @field_validator("banned")
    @classmethod
    def _known_banned(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        known = {"cutlass", "cute", "cublas", "cublaslt", "cudnn"}
        unknown = [v for v in value if v not in known]
        if unknown:
            raise ValueError(f"unknown library {unknown}; expected some of {sorted(known)}")
        return value


def parse_task_toml(path: Path) -> TaskSpec:
    """Read and validate ``path``; raise :class:`TaskError` naming file, field and expectation."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise TaskError(f"{path}: no such file (a task folder needs a task.toml)") from None
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{path}: not valid TOML: {exc}") from None
    try:
        spec = TaskSpec.model_validate(data)
    except ValidationError as exc:
        lines = [f"{path}: {describe(e)}" for e in exc.errors()]
        raise TaskError("\n".join(lines)) from None
    names = {c.name for c in spec.comparisons}
    for index, target in enumerate(spec.goal.targets):
        if target.baseline != "initial" and target.baseline not in names:
            raise TaskError(
                f"{path}: field 'goal.targets.{index}.baseline' is '{target.baseline}'; expected 'initial' "
                f"or one of the comparisons {sorted(names)}"
            )
    return spec
