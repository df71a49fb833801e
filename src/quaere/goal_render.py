"""The goal status as text: the verdict first, then every failing item with its numbers.

What the agent reads when the Stop hook sends it back, and what ``quaere goal`` prints.
"""

from __future__ import annotations

import math
import time

from quaere.goal import (
    MARGIN_K,
    MAX_CONFIRMATIONS,
    NOTHING_MEASURED,
    FailingBenchmark,
    GoalState,
    GoalStatus,
    Shortfall,
)
from quaere.messages import failure_lines

POOL_HINT = ("every miss reaches its target but not by the margin: one run can be off by more than its error bar, "
             "and another `quaere eval` of this version is pooled with these (never instead of them)")
"""Said when only margins are missed: the goal's answer to one unlucky run is another one pooled with it."""


def _fmt_ratio(value: float) -> str:
    return f"{value:.3f}x" if math.isfinite(value) else "n/a"


def benchmark_line(miss: FailingBenchmark) -> str:
    """One configuration's shortfall with its numbers."""
    target = f"target {miss.target_ratio:.3f}x"
    runs = f" over {miss.runs} runs" if miss.runs > 1 else ""
    spread = f" ±{100 * miss.ratio_error:.1f}%" if math.isfinite(miss.ratio_error) else ""
    if miss.shortfall is Shortfall.BELOW_TARGET:
        return f"  {miss.scenario_id}: {_fmt_ratio(miss.ratio)}{spread}{runs} vs {miss.baseline}, {target}"
    if miss.shortfall is Shortfall.WITHIN_MARGIN:
        margin = (
            f"{_fmt_ratio(miss.lower_ratio)} after the margin ({MARGIN_K:g} standard errors)"
            if math.isfinite(miss.ratio_error)
            else "its standard error is unknown, so no margin can be shown"
        )
        return f"  {miss.scenario_id}: {_fmt_ratio(miss.ratio)}{spread}{runs} vs {miss.baseline}: {margin}, {target}"
    return f"  {miss.scenario_id}: {miss.shortfall.value} vs {miss.baseline} ({target}): {miss.detail}"


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at)) if math.isfinite(at) else "?"


def _head(status: GoalStatus, now: float | None) -> str | None:
    """The whole text of the states that have no evaluation to show; None for the others."""
    short = status.candidate_hash[:12]
    if status.state is GoalState.NO_EVALUATION:
        return f"goal: NO EVALUATION — candidate {short} was never evaluated; run `quaere eval`."
    if status.state is GoalState.STALE:
        age = ""
        if now is not None and math.isfinite(status.evaluated_at):
            age = f", {max(0.0, now - status.evaluated_at) / 60:.0f} min ago"
        return (
            f"goal: STALE — the latest evaluation is of {status.evaluated_hash[:12]}{age}, but the candidate "
            f"file is now {short}; run `quaere eval` on it."
        )
    return None


def _unmeasured(status: GoalStatus) -> str | None:
    """One line when the only thing to say is that no evaluation of this version could run (no device)."""
    if status.failing_scenarios or status.failing_benchmarks or not status.problems:
        return None
    if not all(p.startswith(NOTHING_MEASURED) for p in status.problems):
        return None
    return (f"goal: {status.state.value.upper()} — {status.problems[-1]}; candidate "
            f"{status.candidate_hash[:12]} was only built and audited: evaluate it where the task's device is")


def _only_margins(status: GoalStatus) -> bool:
    """Whether every pooled miss is a known margin over a reached target, and nothing else is wrong."""
    return not (status.failing_scenarios or status.problems) and all(
        m.shortfall is Shortfall.WITHIN_MARGIN and math.isfinite(m.ratio_error) for m in status.failing_benchmarks)


def _details(status: GoalStatus) -> list[str]:
    lines: list[str] = []
    if status.failing_scenarios:
        lines.append(f"correctness: {len(status.failing_scenarios)} of {status.scenarios_checked} scenarios fail")
        lines += failure_lines(status.failing_scenarios, indent="  ")
    elif status.scenarios_checked:
        lines.append(f"correctness: all {status.scenarios_checked} scenarios pass")
    if status.failing_benchmarks:
        lines.append(f"benchmarks: {len(status.failing_benchmarks)} of {status.benchmarks_checked} target checks fail")
        lines += [benchmark_line(m) for m in status.failing_benchmarks]
        lines += [POOL_HINT] if _only_margins(status) else []
    elif status.benchmarks_checked:
        lines.append(
            f"benchmarks: all {status.benchmarks_checked} target checks reached with a margin of "
            f"{MARGIN_K:g} standard errors"
        )
    if status.confirmation_misses:
        lines.append(f"the confirming evaluation ({status.confirmations} of {MAX_CONFIRMATIONS}) fell short:")
        lines += [benchmark_line(m) for m in status.confirmation_misses]
    return lines


def render_goal(status: GoalStatus, now: float | None = None) -> str:
    """Concise text: the verdict, then every failing item with its numbers."""
    head = _head(status, now) or _unmeasured(status)
    if head is not None:
        return head
    runs = (f", {status.full_runs} full evaluation{'s' if status.full_runs != 1 else ''} pooled"
            if status.full_runs else "")
    lines = [f"goal: {status.state.value.upper()} — candidate {status.candidate_hash[:12]}{runs}, latest "
             f"{_when(status.evaluated_at)}"]
    if status.state is GoalState.UNCONFIRMED:
        lines.append(
            "it holds on your evaluations; quaere now needs a confirming evaluation of its own (fresh inputs) "
            "that holds too: try to stop again, or run `quaere goal --confirm`"
        )
    lines += [f"problem: {p}" for p in status.problems]
    lines += _details(status)
    if status.partial_runs:
        reasons = sorted({r.value for run in status.partial_runs for r in run.reasons})
        lines.append(
            f"not counted: {len(status.partial_runs)} partial run(s) of this version ({', '.join(reasons)}); "
            "only `quaere eval` with no options counts"
        )
    return "\n".join(lines)
