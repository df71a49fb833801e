"""Frozen, typed records that every part of quaere exchanges.

One :class:`Evaluation` per run of the evaluator; build, audit, correctness and timing are kept apart so a
slow-but-correct candidate and a fast-but-wrong one can never be confused. Failures are values of an
``Enum``, never missing keys or ``None``.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

SCHEMA_VERSION = 2


class Record(BaseModel):
    """Base of all records: immutable, and strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


ParamValue = int | float | bool | str

# A measurement that may be absent. Strict JSON (``quaere eval --json``) writes NaN as null; reading it
# back turns null into NaN again so a record survives the round trip.
MaybeFloat = Annotated[float, BeforeValidator(lambda v: math.nan if v is None else v)]


class Scenario(Record):
    """One named point of a task's scenario axes."""

    id: str = Field(description="Stable identifier, e.g. 'd128-causal-mha-b2-sq1000-sk1000'.")
    params: dict[str, ParamValue] = Field(description="Axis values the task module understands.")


class BuildStatus(str, Enum):
    OK = "ok"
    BUILD_FAILED = "build_failed"


class BuildResult(Record):
    """What the one build command did."""

    status: BuildStatus
    command: str = Field(description="The exact command line that ran.")
    artifact: str = Field(description="Path of the built shared library ('' when the build failed).")
    log_tail: str = Field(description="Last lines of the compiler's output.")
    included_headers: tuple[str, ...] = Field(description="Headers the build read (from the -MD file).")
    duration_s: float
    preprocessed: str = Field(default="", description="Path of the source's translation unit after the "
                              "preprocessor (the same command with -E), for the audit's text rules; '' when it "
                              "could not be made (the build log says why).")
    snapshot: str = Field(default="", description="Path of the evaluator's own copy of the source bytes that the "
                          "command compiled (the audit reads it); '' when nothing was built.")
    toolchain: tuple[str, ...] = Field(default=(), description="The programs the command ran, as the build's PATH "
                                       "found them: 'path sha256[:12]' each ('path -> real path sha256[:12]' for a "
                                       "link); the build cache is keyed on them. Empty when nothing was built, and "
                                       "in records made before they were named.")


class AuditFinding(Record):
    """One violation found by one audit rule."""

    rule: str = Field(description="Name of the rule function that found it.")
    rationale: str = Field(description="Why the rule exists, one line.")
    evidence: str = Field(description="What was seen: a header path, a symbol, a NEEDED entry...")


class Verdict(str, Enum):
    """Outcome of one correctness scenario. Only PASSED passes."""

    PASSED = "passed"
    WRONG = "wrong"  # error against the fp32 reference above the allowed bound
    NONFINITE = "nonfinite"  # NaN, or Inf where the reference is finite
    UNWRITTEN = "unwritten"  # poison left in the output: some element was never written
    INPUT_MODIFIED = "input_modified"  # the candidate wrote its inputs
    GUARD_CORRUPTED = "guard_corrupted"  # the candidate wrote outside its output
    UNSUPPORTED = "unsupported"  # the entry point returned a nonzero code
    CRASHED = "crashed"  # the worker died (illegal address, abort, signal, exit)
    TIMED_OUT = "timed_out"  # the worker did not answer within the scenario's time limit
    OUT_OF_MEMORY = "out_of_memory"
    BANNED_AT_RUNTIME = "banned_at_runtime"  # a banned library was loaded while the candidate ran
    SANDBOX_VIOLATION = "sandbox_violation"  # the runner was killed for a forbidden system call (fork, exec, ptrace...)
    TAMPERED = "tampered"  # the runner's replies contradict what the judge itself observed
    HARNESS_WEAK = "harness_weak"  # a null candidate would pass this scenario: the check proves nothing
    HARNESS_ERROR = "harness_error"  # quaere itself failed; never counted as a pass
    RUNNER_LOST = "runner_lost"  # the pool's judge (its actor or node) was lost, and no other took the scenario
    NOT_RUN = "not_run"  # no device: nothing was executed

    @property
    def passed(self) -> bool:
        return self is Verdict.PASSED


class OutputError(Record):
    """Error of one output tensor against the fp32 reference, and the bound it had to meet."""

    name: str
    max_abs_err: float = Field(description="max |candidate - fp32 reference| over finite positions.")
    low_precision_err: float = Field(description="max |low-precision reference - fp32 reference|.")
    bound: float = Field(description="factor * low_precision_err + floor.")


class ScenarioVerdict(Record):
    """Correctness outcome of one scenario."""

    scenario_id: str
    verdict: Verdict
    seed: int = Field(description="Seed of the random inputs of this evaluation.")
    errors: tuple[OutputError, ...] = ()
    detail: str = Field(default="", description="Human-readable reason when it did not pass.")
    duration_s: float = 0.0


class TimingStatus(str, Enum):
    MEASURED = "measured"
    UNAVAILABLE = "unavailable"  # e.g. FA3 not installed: a skip is data
    FAILED = "failed"  # crashed, hung, wrong output while timed
    HIDDEN_WORK = "hidden_work"  # work outside the timed interval (another stream, or a forged claim)
    INPUTS_MEMOIZED = "inputs_memoized"  # a timed output repeats an earlier repetition's: work was skipped
    RUNNER_LOST = "runner_lost"  # the pool's judge (its actor or node) was lost, and no other timed it
    UNVERIFIED = "unverified"  # the judge could not check the claims (a CPU task on a machine too busy): no verdict


class Timing(Record):
    """Raw samples and summary of one implementation on one benchmark scenario."""

    impl: str = Field(description="'candidate', 'initial', or a comparison's name.")
    status: TimingStatus
    samples_ms: tuple[MaybeFloat, ...] = ()
    median_ms: MaybeFloat = math.nan
    spread_ms: MaybeFloat = Field(default=math.nan, description="Interquartile range of the samples; for a candidate "
                                  "timed through a runner on a GPU, the wider of that and the IQR of the runner's "
                                  "turns the judge measured (its claims could be bunched).")
    tflops: MaybeFloat = math.nan
    overhead_ms: MaybeFloat = Field(default=math.nan, description="Native implementations: lower quartile of the "
                                    "judge's wall time per call minus the claimed device time, as the clock bound "
                                    "reads it: a candidate's over its calls at or below its median claim, the "
                                    "trusted initial kernel's over all its calls.")
    drain_ms: MaybeFloat = Field(default=math.nan, description="Native implementations: median time device work "
                                 "went on after the timed interval's end event.")
    cpu_overhead_ms: MaybeFloat = Field(default=math.nan, description="Native implementations of a CPU task: "
                                        "median of the runner's kernel-accounted CPU time (in the call and since "
                                        "its previous reply) plus waits for a core, minus the claimed time (the "
                                        "CPU-time bound's input).")
    cpu_waits_ms: MaybeFloat = Field(default=math.nan, description="Native implementations of a CPU task: median "
                                     "of the runner's waits for a core per call (past twice the CPU-time bound's "
                                     "slack the bound cannot place them, and its verdict is at most 'unverified').")
    steal_share: MaybeFloat = Field(default=math.nan, description="Native implementations of a CPU task: share "
                                    "of the machine's CPU time the hypervisor took during the timed run (the "
                                    "CPU-time bound takes each claim to hold this share of stolen time).")
    span_overhead_ms: MaybeFloat = Field(default=math.nan, description="Native implementations on a GPU: lower "
                                         "quartile of the judge's own device-timeline span per call minus the "
                                         "claimed device time, over the same calls as overhead_ms (judged where "
                                         "the task sets timing.span_abs_ms).")
    close_overhead_ms: MaybeFloat = Field(default=math.nan, description="Native implementations on a GPU: the "
                                          "same, on the span that ends at the judge's close mark, right behind the "
                                          "call's work on the device (judged where the task sets "
                                          "timing.close_abs_ms).")
    slot_overhead_ms: MaybeFloat = Field(default=math.nan, description="Native implementations on a GPU: the "
                                         "same, on the runner's turn alone: from the end of the judge's cover to "
                                         "its close word (judged where the task sets timing.slot_abs_ms).")
    turn_floor_ms: MaybeFloat = Field(default=math.nan, description="A candidate timed through a runner on a GPU: "
                                      "the median of its timed calls' turns (the judge's cover's end to the close "
                                      "word) less the trusted initial kernel's median (turn - claim). median_ms is "
                                      "at least this: a claim gains nothing below what the judge's clock saw.")
    cover_mhz: MaybeFloat = Field(default=math.nan, description="On a GPU: median effective SM clock (MHz) of the "
                                  "judge's cover before each timed call (a spin of known cycles between two judge "
                                  "events). A comparison timed at a lower clock than the candidate's is slowed by "
                                  "it (recorded, not yet judged: docs/security.md, 'clock and power settings').")
    detail: str = ""


class Placement(Record):
    """Where one benchmark configuration was timed: every implementation of it, interleaved, on this device."""

    worker: str = Field(default="local", description="'local' (this process tree) or the pool actor's name.")
    node: str = Field(default="", description="Host name, or the Ray node's address.")
    device: str = Field(default="", description="'cpu', or the GPU: its index on the node (and name).")


class BenchmarkResult(Record):
    """All implementations timed on one benchmark scenario, interleaved in the same run."""

    scenario_id: str
    flops: float
    bound_ms: float = Field(description="Roofline floor: max(flops / matrix rate, bytes / bandwidth).")
    timings: tuple[Timing, ...]
    suspect: bool = Field(default=False, description="The candidate ran faster than the roofline floor.")
    placement: Placement = Field(default_factory=Placement, description="Which worker and device timed it.")

    def timing(self, impl: str) -> Timing | None:
        return next((t for t in self.timings if t.impl == impl), None)

    def ratio(self, baseline: str, impl: str = "candidate") -> float:
        """Speedup of ``impl`` over ``baseline`` (baseline time / impl time); NaN when either is missing."""
        a, b = self.timing(impl), self.timing(baseline)
        if a is None or b is None or a.status is not TimingStatus.MEASURED or b.status is not TimingStatus.MEASURED:
            return math.nan
        return b.median_ms / a.median_ms


class Isolation(Record):
    """What separated the candidate from the judge during this evaluation (what was in force, not asked for)."""

    separate_process: bool = Field(
        default=True, description="The candidate ran in a runner process, never in the judge."
    )
    seccomp: bool = Field(default=False, description="The runner's system-call filter was installed.")
    landlock_abi: int = Field(default=0, description="Landlock ABI of the runner's file-system confinement; 0: none.")
    threads_allowed: bool = Field(default=True, description="Whether candidate code could start threads.")
    capabilities_dropped: bool = Field(
        default=False, description="The runner gave up every capability before the device was opened (a root "
        "runner kept its user id, not root's privileges)."
    )
    runner_uid: int = Field(default=-1, description="User id the runner ran as (-1 when it never started).")
    judge_uid: int = Field(default=-1, description="User id of the judge.")
    notes: tuple[str, ...] = Field(default=(), description="What could not be put in force here, and why.")

    @classmethod
    def unreported(cls) -> Isolation:
        """What a record says when no runner reported its isolation: none was started, or the judge was lost (killed,
        crashed) before one reported; it claims nothing."""
        return cls(separate_process=False, notes=("no runner reported its isolation: none was started, or the judge "
                                                  "was lost before one reported",))

    @property
    def summary(self) -> str:
        parts = ["separate runner process" if self.separate_process else "in-process"]
        parts.append("seccomp" if self.seccomp else "no seccomp")
        parts.append(f"landlock v{self.landlock_abi}" if self.landlock_abi else "no landlock")
        parts.append("threads allowed" if self.threads_allowed else "no threads")
        parts.append("capabilities dropped" if self.capabilities_dropped else "capabilities kept")
        if self.runner_uid >= 0 and self.runner_uid != self.judge_uid:
            parts.append(f"runner uid {self.runner_uid}")
        return ", ".join(parts)


class DeviceInfo(Record):
    name: str = Field(description="GPU name, or 'cpu:<model>' for CPU tasks.")
    driver: str = ""
    sm_clock_mhz: MaybeFloat = math.nan
    mem_clock_mhz: MaybeFloat = math.nan


class Evaluation(Record):
    """One run of the evaluator on one candidate. Appended to ``.quaere/ledger.jsonl``."""

    schema_version: int = SCHEMA_VERSION
    task: str
    candidate_path: str
    candidate_hash: str = Field(description="sha256 of the candidate source bytes.")
    created_at: float = Field(description="Unix time the evaluation started.")
    device: DeviceInfo
    ran: bool = Field(description="False when no device was present: build and audit only.")
    build: BuildResult
    audit: tuple[AuditFinding, ...] = ()
    correctness: tuple[ScenarioVerdict, ...] = ()
    benchmarks: tuple[BenchmarkResult, ...] = ()
    isolation: Isolation = Field(default_factory=lambda: Isolation(separate_process=False),
                                 description="What separated the candidate from the judge.")
    wall_s: float = 0.0
    note: str = ""

    @property
    def built(self) -> bool:
        return self.build.status is BuildStatus.OK

    @property
    def audit_clean(self) -> bool:
        return self.built and not self.audit

    @property
    def correct(self) -> bool:
        """Build and audit pass and every correctness scenario passed on a real run."""
        return (
            self.audit_clean
            and self.ran
            and bool(self.correctness)
            and all(v.verdict.passed for v in self.correctness)
        )

    def failing(self) -> list[ScenarioVerdict]:
        return [v for v in self.correctness if not v.verdict.passed]

    @property
    def lost(self) -> bool:
        """Some scenario or configuration has no result: its pool judge was lost (the record is incomplete)."""
        return any(v.verdict is Verdict.RUNNER_LOST for v in self.correctness) or any(
            t.status is TimingStatus.RUNNER_LOST for b in self.benchmarks for t in b.timings
        )


class Moment(str, Enum):
    """The five key moments at which a question is asked."""

    CAMPAIGN_START = "campaign_start"
    PLATEAU = "plateau"
    CLAIMED_LIMIT = "claimed_limit"
    SUSPICIOUS_GAIN = "suspicious_gain"
    EXPLAINED_FAILURE = "explained_failure"


class QuestionKind(str, Enum):
    LEVEL_SHIFT = "level-shift"
    LIMIT_CHALLENGE = "limit-challenge"
    INFORMATION = "information"


class MethodKind(str, Enum):
    """What a campaign gives the agent besides the evaluator and the goal (docs/methods.md)."""

    QUESTIONS = "questions"  # short questions at the five moments: quaere's own method
    TOOLED = "tooled"  # AVO-style tools (profiler digest, doc search, lessons, lineage, loop supervisor), no questions
    GOAL_ONLY = "goal-only"  # the Stop hook and nothing else: the control


class StopStatus(str, Enum):
    """Why a stop was blocked or allowed, as the Stop hook records it: the goal's state (the values of
    :class:`quaere.goal_records.GoalState`) or what ended the campaign without the goal."""

    MET = "met"
    UNMET = "unmet"
    UNCONFIRMED = "unconfirmed"
    STALE = "stale"
    NO_EVALUATION = "no_evaluation"
    BUDGET_SPENT = "budget_spent"  # a campaign budget ran out: the stop is allowed with the goal unmet
    ERROR = "error"  # the goal could not be checked (the hook failed): blocked, then allowed past a small budget


class EndReason(str, Enum):
    """Why a session ended."""

    COMPLETED = "completed"  # the agent stopped and the Stop hook let it through
    GOAL_MET = "goal_met"  # the stop went through because the goal holds
    BUDGET = "budget"  # a campaign budget (tool calls, wall time, cost, blocks) ended it
    ERROR = "error"  # the backend failed (API error, crashed CLI); detail says what
    INTERRUPTED = "interrupted"  # Ctrl-C or a killed process (recorded on resume)


class CampaignEnd(str, Enum):
    """Why a run of the campaign ended: the goal, one of the budgets by name, or an error."""

    GOAL_MET = "goal_met"
    SESSIONS = "sessions"
    TOOL_CALLS = "tool_calls"
    WALL_S = "wall_s"
    COST_USD = "cost_usd"
    BLOCKS = "blocks"
    ERROR = "error"  # the agent's backend failed several sessions in a row (or before starting)
