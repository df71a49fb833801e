"""How many timed repetitions an implementation gets on one configuration (pure arithmetic).

The rule's count fills the ms budget, clamped to [min_reps, max_reps]. The candidate alone is bounded: a
candidate far slower than the trusted implementations would otherwise cost ``min_reps`` of its long calls
on every configuration; it gets as many as fit in :data:`SLOW_ALLOWANCE` times what the slowest trusted
implementation spends there, and its record says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from quaere.evaluate import stats
from quaere.task.spec import TimingRule

SLOW_ALLOWANCE = 2.0
"""What the candidate may spend on one configuration, in units of what the slowest trusted implementation
(the initial kernel, a comparison) spends there on its warm-up and repetitions, before it gets fewer
repetitions than ``min_reps``. Without it a candidate far slower than the initial kernel costs two warm-up
calls and ``min_reps`` timed ones per configuration (a slow but honest FlashAttention candidate made a full
evaluation take 225 s instead of ~60 s)."""

MIN_SLOW_REPS = 2
"""The fewest timed repetitions a slow candidate gets, after a single warm-up call."""


@dataclass(frozen=True)
class RepPlan:
    """How many repetitions to time, and why fewer than the rule's minimum ('' when not)."""

    reps: int
    note: str = ""


def warm_call_ms(warm: list[float]) -> float:
    """A call's time from the warm-up: the first call (cold) left out when there are more."""
    return stats.median(warm[1:] or warm)


def budget_reps(rule: TimingRule, per_call_ms: float) -> int:
    """The rule's count: what fills ``budget_ms``, clamped to [min_reps, max_reps]."""
    return stats.reps_from_budget(rule.budget_ms, per_call_ms, rule.min_reps, rule.max_reps)


def honest_cost_ms(rule: TimingRule, warm: list[float]) -> float:
    """What a trusted implementation's calls cost on one configuration: its warm-up and its repetitions."""
    if not warm:
        return 0.0
    call_ms = warm_call_ms(warm)
    return sum(warm) + budget_reps(rule, call_ms) * call_ms


def plan_reps(rule: TimingRule, per_call_ms: float, allowance_ms: float, warm_ms: float = 0.0) -> RepPlan:
    """The budget's repetition count for calls of ``per_call_ms``, clamped to [min_reps, max_reps]; when
    those and the warm-up (``warm_ms``) would overrun ``allowance_ms``, as many as fit in it (at least
    :data:`MIN_SLOW_REPS`), said in the note. So the candidate's calls on one configuration cost at most
    the allowance, or ``1 + MIN_SLOW_REPS`` calls when one call is longer than a third of it."""
    reps = budget_reps(rule, per_call_ms)
    room_ms = allowance_ms - warm_ms
    if not reps * per_call_ms > room_ms:
        return RepPlan(reps)
    fewer = min(reps, max(MIN_SLOW_REPS, math.floor(room_ms / per_call_ms)))
    return RepPlan(fewer, f"far slower than the trusted implementations ({per_call_ms:.4g} ms a call): median of "
                          f"{fewer} repetitions instead of {reps}")
