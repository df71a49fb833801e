"""The five moments, detected by pure functions over a campaign's trace events: evidence first, words second.

Each detector looks at the events since a question was last asked *for its moment* (a moment that was
answered with a question does not hold again until something new happens), and returns a
:class:`MomentCheck`: whether the moment holds, and the evidence either way. The ledger's evaluations
decide most of it: a stop while correctness fails is a failure explained away whatever the words, a stop
with the goal unmet a claimed limit, a plateau is N evaluations or T minutes without a new best, a gain
is judged per configuration and cumulatively (:mod:`.gains`). The agent's words, read by
:mod:`.phrases`, add the mid-turn claims and dismissals and say what was claimed. ``detect_moments`` runs
all five and returns the hits, most urgent first: an explained-away failure, a suspicious gain, a claimed
limit, a plateau, the campaign's start.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import Field

from quaere.questions.check import Config, MomentCheck, MomentHit
from quaere.questions.gains import SuspiciousGainConfig, check_suspicious_gain
from quaere.questions.phrases import read_words
from quaere.records import Moment, StopStatus
from quaere.trace import AgentMessage, EvaluationDone, QuestionAsked, StopAttempt, StopDecision, TraceEvent

PRIORITY = (
    Moment.EXPLAINED_FAILURE,
    Moment.SUSPICIOUS_GAIN,
    Moment.CLAIMED_LIMIT,
    Moment.PLATEAU,
    Moment.CAMPAIGN_START,
)


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


def _words(event: TraceEvent) -> str:
    """What the agent said in ``event``: an assistant message, or the final message of a stop attempt."""
    if isinstance(event, AgentMessage) and event.role == "assistant":
        return event.text
    return event.last_message if isinstance(event, StopAttempt) else ""


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
            evidence=f"no question asked, but {evaluations} evaluations have run "
            f"(start ends after {config.max_evaluations})",
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
            return event.goal_status is StopStatus.MET
        if isinstance(event, StopAttempt):
            break
    return _meets_target(events, stop_index, config)


def _answered(events: Events, index: int) -> bool:
    """A question (for whichever moment) was asked after event ``index``: a stop already answered."""
    return any(isinstance(e, QuestionAsked) for e in events[index + 1 :])


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
        unanswered_stop = isinstance(event, StopAttempt) and not _answered(events, index)
        if unanswered_stop and not _stop_justified(events, index, config):
            reading = read_words(event.last_message)
            claim = reading.summary(Moment.CLAIMED_LIMIT) if reading.holds(Moment.CLAIMED_LIMIT) else ""
            said = f"; its final message: {claim}" if claim else ""
            evidence = f"the agent tried to stop while the goal is unmet{said}"
            return MomentCheck(moment=Moment.CLAIMED_LIMIT, holds=True, evidence=evidence)
        if isinstance(event, AgentMessage) and event.role == "assistant" and not _meets_target(events, index, config):
            reading = read_words(event.text)
            if reading.holds(Moment.CLAIMED_LIMIT):
                return MomentCheck(
                    moment=Moment.CLAIMED_LIMIT,
                    holds=True,
                    evidence="the agent claimed a limit or completion with the goal unmet: "
                    + reading.summary(Moment.CLAIMED_LIMIT),
                )
    return MomentCheck(
        moment=Moment.CLAIMED_LIMIT, holds=False, evidence="no stop attempt with the goal unmet and no claim of a limit"
    )


def check_explained_failure(events: Events, config: ExplainedFailureConfig = DEFAULT_EXPLAINED_FAILURE) -> MomentCheck:
    """Holds when, after a failing evaluation and before the next one, the agent tries to stop (whatever
    its final message says: stopping with a failing scenario explains the failure away) or its words
    attribute the failure to tolerance, noise, rounding, precision, chance or the reference."""
    start = _since_question(events, Moment.EXPLAINED_FAILURE)
    last_failure: EvaluationDone | None = None
    found = ""
    for index, event in enumerate(events):
        if isinstance(event, EvaluationDone):
            failed = not event.correct and (event.failing or not config.require_failing_scenarios)
            last_failure = event if failed else None
            found = found if failed else ""  # a dismissal stands while correctness still fails
            continue
        if index < start or last_failure is None:
            continue
        scenarios = ", ".join(last_failure.failing[:3]) or "the evaluation"
        failing = f"{scenarios} failed at {_short(last_failure.candidate_hash)}"
        reading = read_words(_words(event))
        said = reading.summary(Moment.EXPLAINED_FAILURE) if reading.holds(Moment.EXPLAINED_FAILURE) else ""
        if isinstance(event, StopAttempt):
            dismissed = f"; its final message dismissed it: {said}" if said else ""
            found = f"the agent tried to stop after {failing}{dismissed}"
        elif said:
            found = f"after {failing}, the agent explained it away: {said}"
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
