"""What the evaluation store holds: the workspace's registration and one entry per evaluation.

An :class:`EvaluationEntry` wraps the evaluator's :class:`~quaere.records.Evaluation` with what only the
judge knows about the run: which task it ran (by content hash), whether it was a full evaluation the
goal may count or a partial one, who started it, and the trust mode in force when it was written.
"""

from __future__ import annotations

from enum import Enum

from pydantic import Field

from quaere.hooks.state import HookBudget
from quaere.records import Evaluation, Record

STORE_SCHEMA_VERSION = 1


class TrustMode(str, Enum):
    """Who could have written the store; said at the start of every campaign and in every record."""

    SAME_USER = "same_user"  # the agent's user can read the key: edits are detected, not prevented
    SEPARATE_USER = "separate_user"  # a dedicated user's service owns store and key: the agent cannot write them


class RunKind(str, Enum):
    FULL = "full"  # the pinned task's own scenarios, a seed the evaluator drew, benchmarks on: counts for the goal
    PARTIAL = "partial"  # anything less: shown, never counted, never replaces a full evaluation


class PartialReason(str, Enum):
    """Why an evaluation is partial (a run may have several reasons)."""

    SCENARIOS_FILE = "scenarios_file"  # --scenarios replaced the task's correctness set
    FIXED_SEED = "fixed_seed"  # --seed: the caller chose the inputs
    NO_BENCHMARK = "no_benchmark"  # --no-benchmark: nothing was timed
    SUBSET_TIMED = "subset_timed"  # only some benchmark configurations were timed (a re-timing)
    NO_CORRECTNESS = "no_correctness"  # the correctness scenarios were not run
    NO_DEVICE = "no_device"  # --no-device: build and audit only
    OTHER_TASK = "other_task"  # --task named another task than the one pinned at `quaere init`
    RUNNER_LOST = "runner_lost"  # the evaluation pool lost a judge: some scenario or configuration has no result


class Starter(str, Enum):
    """Who asked for the evaluation."""

    CALLER = "caller"  # `quaere eval`, run by the agent or a person
    CONFIRMATION = "confirmation"  # the goal's confirming evaluation, started by quaere itself


class TaskIdentity(Record):
    """A task folder's identity: its name and a sha256 over every file in it (paths and bytes)."""

    name: str
    reference: str = Field(description="How it was named at `quaere init`: a shipped name or an absolute folder.")
    sha256: str
    files: int = Field(description="Number of files hashed.")


class Registration(Record):
    """Written once by `quaere init` (or `quaere run`): what the goal of this workspace judges."""

    schema_version: int = STORE_SCHEMA_VERSION
    workspace_id: str
    workspace_root: str
    task: TaskIdentity
    candidate_name: str
    budget: HookBudget = HookBudget()
    trust_mode: TrustMode
    created_at: float


class EvaluationEntry(Record):
    """One line of the store: an evaluation and how it was asked for."""

    schema_version: int = STORE_SCHEMA_VERSION
    sequence: int = Field(ge=1, description="1 for the first line of the workspace's store, then +1 per line.")
    workspace_id: str
    kind: RunKind
    partial: tuple[PartialReason, ...] = Field(default=(), description="Why it is partial; () for a full run.")
    started_by: Starter
    trust_mode: TrustMode
    task: TaskIdentity = Field(description="The task the evaluation actually ran.")
    evaluation: Evaluation

    @property
    def full(self) -> bool:
        return self.kind is RunKind.FULL
