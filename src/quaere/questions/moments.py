"""The five moments, detected by pure functions over a campaign's trace events.

Each detector looks at the events since a question was last asked *for its moment* (a moment that was
answered with a question does not hold again until something new happens), and returns a
:class:`MomentCheck`: whether the moment holds, and the evidence either way. ``detect_moments`` runs all
five and returns the hits, most urgent first: an explained-away failure, a suspicious gain, a claimed
limit, a plateau, the campaign's start.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from quaere.questions.phrases import find_blame, find_claims
from quaere.records import Moment
from quaere.trace import AgentMessage, EvaluationDone, QuestionAsked, StopAttempt, StopDecision, TraceEvent

PRIORITY = (
    Moment.EXPLAINED_FAILURE,
    Moment.SUSPICIOUS_GAIN,
    Moment.CLAIMED_LIMIT,
    Moment.PLATEAU,
    Moment.CAMPAIGN_START,
)


class Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MomentCheck(Config):
    """The verdict of one detector: whether its moment holds now, and the evidence for the verdict."""

    moment: Moment
    holds: bool
    evidence: str


class MomentHit(Config):
    """A moment that holds, with the evidence a person (or the agent) is shown."""

    moment: Moment
    evidence: str


class CampaignStartConfig(Config):
    max_evaluations: int = Field(default=3, ge=0)
    """The start holds until the first question is asked, or until this many evaluations have run."""


class PlateauConfig(Config):
    evaluations: int = Field(default=6, ge=1)
    """Holds after this many evaluations without a new best geometric mean ..."""
    minutes: float = Field(default=45.0, gt=0)
    """... or this many minutes since the last best (or the last plateau question)."""
    min_gain_pct: float = Field(default=0.5, ge=0)
    """A geomean counts as a new best only when it beats the previous best by more than this (percent)."""


class ClaimedLimitConfig(Config):
    target_ratio: float = Field(default=1.0, gt=0)
    """Without a recorded stop decision, a stop is justified only if the latest evaluation is correct and
    every scenario's ratio reaches this."""


class SuspiciousGainConfig(Config):
    gain_pct: float = Field(default=25.0, gt=0)
    """A correct evaluation whose geomean beats the previous best by more than this (percent) is suspicious."""
    comparison_ratio: float = Field(default=1.5, gt=1)
    """A scenario this many times faster than the best comparison implementation is suspicious."""


class ExplainedFailureConfig(Config):
    require_failing_scenarios: bool = True
    """Only failures of correctness scenarios count (a build or audit failure is not explained away)."""


class MomentsConfig(Config):
    """Settings of the five detectors."""

    campaign_start: CampaignStartConfig = CampaignStartConfig()
    """Campaign start detector."""
    plateau: PlateauConfig = PlateauConfig()
    """Plateau detector."""
    claimed_limit: ClaimedLimitConfig = ClaimedLimitConfig()
    """Claimed limit or completion detector."""
    suspicious_gain: SuspiciousGainConfig = SuspiciousGainConfig()
    """Suspiciously large gain detector."""
    explained_failure: ExplainedFailureConfig = ExplainedFailureConfig()
    """Explained-away correctness failure detector."""


# Frozen defaults, shared safely.
DEFAULT_CAMPAIGN_START = CampaignStartConfig()
DEFAULT_PLATEAU = PlateauConfig()
DEFAULT_CLAIMED_LIMIT = ClaimedLimitConfig()
DEFAULT_SUSPICIOUS_GAIN = SuspiciousGainConfig()
DEFAULT_EXPLAINED_FAILURE = ExplainedFailureConfig()
DEFAULT_CONFIG = MomentsConfig()

Events = Sequence[TraceEvent]


def _since_question(events: Events, moment: Moment) -> int:
    """Index of the first event after the last question asked for ``moment`` (0 when none was asked)."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if isinstance(event, QuestionAsked) and event.moment is moment:
            return index + 1
    return 0


def _evaluations(events: Events, start: int = 0) -> list[tuple[int, EvaluationDone]]:
    return [(i, e) for i, e in enumerate(events) if i >= start and isinstance(e, EvaluationDone)]


def _timed(e: EvaluationDone) -> bool:
    return e.correct and e.geomean_ratio is not None and math.isfinite(e.geomean_ratio)


def _short(h: str) -> str:
    return h[:12]


def check_campaign_start(events: Events, config: CampaignStartConfig = DEFAULT_CAMPAIGN_START) -> MomentCheck:
    """Holds while no question has been asked in the campaign and few evaluations have run."""
    asked = sum(isinstance(e, QuestionAsked) for e in events)
    evaluations = len(_evaluations(events))
    if asked:
        return MomentCheck(moment=Moment.CAMPAIGN_START, holds=False, evidence=f"{asked} question(s) already asked")
    if evaluations > config.max_evaluations:
        return MomentCheck(
            moment=Moment.CAMPAIGN_START,
            holds=False,
            evidence=f"no question asked, but {evaluations} evaluations have run (start ends after {config.max_evaluations})",
        )
    return MomentCheck(
        moment=Moment.CAMPAIGN_START,
        holds=True,
        evidence=f"no question asked yet in this campaign ({evaluations} evaluation(s), {len(events)} events)",
    )


def _last_best(events: Events, min_gain_pct: float) -> tuple[int, float]:
    """Index and value of the last new best geomean among correct evaluations; (-1, nan) when none."""
    best_index, best = -1, math.nan
    for index, e in _evaluations(events):
        if _timed(e) and (math.isnan(best) or e.geomean_ratio > best * (1 + min_gain_pct / 100)):
            best_index, best = index, e.geomean_ratio
    return best_index, best


def check_plateau(events: Events, config: PlateauConfig = DEFAULT_PLATEAU, now: float = math.nan) -> MomentCheck:
    """Holds after N evaluations or T minutes without a new best geomean (counted from the later of the
    last best and the last plateau question). ``now`` defaults to the last event's time."""
    evaluations = _evaluations(events)
    if not evaluations:
        return MomentCheck(moment=Moment.PLATEAU, holds=False, evidence="no evaluation yet")
    now = events[-1].ts if math.isnan(now) else now
    best_index, best = _last_best(events, config.min_gain_pct)
    start = max(best_index, _since_question(events, Moment.PLATEAU) - 1, evaluations[0][0])
    since = sum(1 for i, _ in evaluations if i > start)
    minutes = (now - events[start].ts) / 60
    what = f"best geomean {best:.3f}x" if best_index >= 0 else "no correct timed evaluation yet"
    evidence = f"{since} evaluation(s) and {minutes:.0f} min without a new best ({what})"
    holds = since >= config.evaluations or minutes >= config.minutes
    return MomentCheck(moment=Moment.PLATEAU, holds=holds, evidence=evidence)


def _meets_target(events: Events, index: int, config: ClaimedLimitConfig) -> bool:
    """Whether the latest evaluation up to ``index`` is correct with every ratio at the target."""
    latest = [e for _, e in _evaluations(events[: index + 1])]
    if not latest:
        return False
    last = latest[-1]
    return last.correct and bool(last.ratios) and all(r >= config.target_ratio for r in last.ratios.values())


def _stop_justified(events: Events, stop_index: int, config: ClaimedLimitConfig) -> bool:
    """A stop decision recorded after the attempt says the goal was met, or (without one) the latest
    evaluation meets the target."""
    for event in events[stop_index + 1 :]:
        if isinstance(event, StopDecision):
            return event.goal_status == "met"
        if isinstance(event, StopAttempt):
            break
    return _meets_target(events, stop_index, config)


def check_claimed_limit(events: Events, config: ClaimedLimitConfig = DEFAULT_CLAIMED_LIMIT) -> MomentCheck:
    """Holds on a stop attempt while the goal is unmet, or on the agent's own words claiming a limit or
    completion while the goal is unmet (negated or hypothetical phrases do not count), either one after
    the latest evaluation."""
    # A claim followed by a new evaluation has passed: the agent went back to work.
    start = _since_question(events, Moment.CLAIMED_LIMIT)
    evaluations = _evaluations(events, start)
    start = max(start, evaluations[-1][0] + 1 if evaluations else start)
    for index in range(len(events) - 1, start - 1, -1):
        event = events[index]
        if isinstance(event, StopAttempt) and not _stop_justified(events, index, config):
            said = find_claims(event.last_message)
            detail = f"; it said: '{said[0].sentence}'" if said else ""
            return MomentCheck(
                moment=Moment.CLAIMED_LIMIT,
                holds=True,
                evidence=f"the agent tried to stop while the goal is unmet{detail}",
            )
        if isinstance(event, AgentMessage) and event.role == "assistant" and not _meets_target(events, index, config):
            claims = find_claims(event.text)
            if claims:
                return MomentCheck(
                    moment=Moment.CLAIMED_LIMIT,
                    holds=True,
                    evidence=f"the agent claimed '{claims[0].phrase}': '{claims[0].sentence}'",
                )
    return MomentCheck(
        moment=Moment.CLAIMED_LIMIT, holds=False, evidence="no stop attempt with the goal unmet and no claim of a limit"
    )


def check_suspicious_gain(events: Events, config: SuspiciousGainConfig = DEFAULT_SUSPICIOUS_GAIN) -> MomentCheck:
    """Holds when a correct evaluation jumps past the previous best by more than X%, runs a scenario
    faster than its roofline floor, or beats the best comparison by more than the set ratio."""
    start = _since_question(events, Moment.SUSPICIOUS_GAIN)
    best = math.nan
    found: list[str] = []
    for index, e in _evaluations(events):
        if not e.correct:
            continue
        if index >= start:
            if _timed(e) and not math.isnan(best) and e.geomean_ratio > best * (1 + config.gain_pct / 100):
                found.append(
                    f"geomean {best:.3f}x -> {e.geomean_ratio:.3f}x in one evaluation "
                    f"(+{(e.geomean_ratio / best - 1) * 100:.0f}%, threshold {config.gain_pct:.0f}%) at {_short(e.candidate_hash)}"
                )
            if e.above_roofline:
                found.append(
                    f"faster than the roofline floor on {', '.join(e.above_roofline)} at {_short(e.candidate_hash)}"
                )
            ahead = {s: r for s, r in e.comparison_ratios.items() if r > config.comparison_ratio}
            if ahead:
                worst = max(ahead, key=ahead.get)
                found.append(
                    f"{ahead[worst]:.2f}x the best comparison on {worst} ({len(ahead)} scenario(s) above "
                    f"{config.comparison_ratio}x) at {_short(e.candidate_hash)}"
                )
        if _timed(e):
            best = e.geomean_ratio if math.isnan(best) else max(best, e.geomean_ratio)
    if found:
        return MomentCheck(moment=Moment.SUSPICIOUS_GAIN, holds=True, evidence="; ".join(found[-3:]))
    return MomentCheck(
        moment=Moment.SUSPICIOUS_GAIN, holds=False, evidence="no jump, no scenario above its floor or far ahead"
    )


def check_explained_failure(events: Events, config: ExplainedFailureConfig = DEFAULT_EXPLAINED_FAILURE) -> MomentCheck:
    """Holds when, after a failing evaluation and before the next evaluation, the agent attributes the
    failure to tolerance, noise, rounding, flakiness, precision or the reference."""
    start = _since_question(events, Moment.EXPLAINED_FAILURE)
    last_failure: EvaluationDone | None = None
    found = ""
    for index, event in enumerate(events):
        if isinstance(event, EvaluationDone):
            failed = not event.correct and (event.failing or not config.require_failing_scenarios)
            last_failure = event if failed else None
        elif (
            index >= start
            and last_failure is not None
            and isinstance(event, AgentMessage)
            and event.role == "assistant"
        ):
            blame = find_blame(event.text)
            if blame:
                failing = ", ".join(last_failure.failing[:3]) or "the evaluation"
                found = f"after {failing} failed at {_short(last_failure.candidate_hash)}, the agent said '{blame[0].sentence}'"
    if found:
        return MomentCheck(moment=Moment.EXPLAINED_FAILURE, holds=True, evidence=found)
    return MomentCheck(moment=Moment.EXPLAINED_FAILURE, holds=False, evidence="no failure explained away")


def check_moments(events: Events, config: MomentsConfig = DEFAULT_CONFIG, now: float = math.nan) -> list[MomentCheck]:
    """All five checks, in priority order (most urgent first), whether they hold or not."""
    checks = {
        Moment.EXPLAINED_FAILURE: check_explained_failure(events, config.explained_failure),
        Moment.SUSPICIOUS_GAIN: check_suspicious_gain(events, config.suspicious_gain),
        Moment.CLAIMED_LIMIT: check_claimed_limit(events, config.claimed_limit),
        Moment.PLATEAU: check_plateau(events, config.plateau, now),
        Moment.CAMPAIGN_START: check_campaign_start(events, config.campaign_start),
    }
    return [checks[m] for m in PRIORITY]


def detect_moments(events: Events, config: MomentsConfig = DEFAULT_CONFIG, now: float = math.nan) -> list[MomentHit]:
    """The moments that hold now, most urgent first; ``now`` defaults to the last event's time."""
    return [MomentHit(moment=c.moment, evidence=c.evidence) for c in check_moments(events, config, now) if c.holds]
