"""The suspicious-gain detector: a gain too large to accept without a question, judged four ways.

A geomean hides a 3x jump on one of 26 configurations, and a gain built in +20% steps never jumps, so
the detector looks at each correct evaluation since the last suspicious-gain question for: a jump of the
geomean over the previous best; a jump of any one configuration over its own previous best; the
cumulative growth of the best geomean since the last check; a configuration timed faster than its
roofline floor; and a configuration far ahead of the best comparison implementation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import Field

from quaere.questions.check import Config, MomentCheck
from quaere.records import Moment
from quaere.trace import EvaluationDone, QuestionAsked, TraceEvent


class SuspiciousGainConfig(Config):
    gain_pct: float = Field(default=25.0, gt=0)
    """A correct evaluation whose geomean beats the previous best by more than this (percent) is suspicious."""
    scenario_gain_pct: float = Field(default=100.0, gt=0)
    """... as is one whose ratio on any single configuration beats that configuration's previous best by
    more than this (percent): a 2x jump on one configuration, whatever the geomean does."""
    cumulative_gain_pct: float = Field(default=100.0, gt=0)
    """... and a best geomean that grew by more than this (percent) since the last suspicious-gain question
    (or the first correct evaluation), in steps however small."""
    comparison_ratio: float = Field(default=1.5, gt=1)
    """A scenario this many times faster than the best comparison implementation is suspicious."""


DEFAULT_SUSPICIOUS_GAIN = SuspiciousGainConfig()


def _short(h: str) -> str:
    return h[:12]


def _timed(e: EvaluationDone) -> bool:
    return e.correct and e.geomean_ratio is not None and math.isfinite(e.geomean_ratio)


def _since_gain_question(events: Sequence[TraceEvent]) -> int:
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if isinstance(event, QuestionAsked) and event.moment is Moment.SUSPICIOUS_GAIN:
            return index + 1
    return 0


class _Bests:
    """Best geomean and best ratio per configuration over the correct evaluations seen so far."""

    def __init__(self) -> None:
        self.geomean = math.nan
        self.by_scenario: dict[str, float] = {}

    def add(self, e: EvaluationDone) -> None:
        if _timed(e):
            self.geomean = e.geomean_ratio if math.isnan(self.geomean) else max(self.geomean, e.geomean_ratio)
        for scenario, ratio in e.ratios.items():
            if math.isfinite(ratio):
                self.by_scenario[scenario] = max(ratio, self.by_scenario.get(scenario, ratio))


def _jumps(e: EvaluationDone, bests: _Bests, config: SuspiciousGainConfig) -> list[str]:
    found = []
    at = _short(e.candidate_hash)
    if _timed(e) and not math.isnan(bests.geomean) and e.geomean_ratio > bests.geomean * (1 + config.gain_pct / 100):
        found.append(
            f"geomean {bests.geomean:.3f}x -> {e.geomean_ratio:.3f}x in one evaluation "
            f"(+{(e.geomean_ratio / bests.geomean - 1) * 100:.0f}%, threshold {config.gain_pct:.0f}%) at {at}"
        )
    factor = 1 + config.scenario_gain_pct / 100
    jumped = {
        s: (bests.by_scenario[s], r)
        for s, r in e.ratios.items()
        if s in bests.by_scenario and math.isfinite(r) and r > bests.by_scenario[s] * factor
    }
    if jumped:
        worst = max(jumped, key=lambda s: jumped[s][1] / jumped[s][0])
        before, after = jumped[worst]
        found.append(
            f"configuration {worst} {before:.2f}x -> {after:.2f}x in one evaluation ({after / before:.1f}x; "
            f"{len(jumped)} of {len(e.ratios)} configuration(s) above +{config.scenario_gain_pct:.0f}%) at {at}"
        )
    return found


def _extremes(e: EvaluationDone, config: SuspiciousGainConfig) -> list[str]:
    found = []
    at = _short(e.candidate_hash)
    if e.above_roofline:
        found.append(f"faster than the roofline floor on {', '.join(e.above_roofline)} at {at}")
    ahead = {s: r for s, r in e.comparison_ratios.items() if r > config.comparison_ratio}
    if ahead:
        worst = max(ahead, key=lambda s: ahead[s])
        found.append(
            f"{ahead[worst]:.2f}x the best comparison on {worst} ({len(ahead)} scenario(s) above "
            f"{config.comparison_ratio}x) at {at}"
        )
    return found


def check_suspicious_gain(
    events: Sequence[TraceEvent], config: SuspiciousGainConfig = DEFAULT_SUSPICIOUS_GAIN
) -> MomentCheck:
    """Holds when, since the last suspicious-gain question, a correct evaluation jumped (geomean or one
    configuration), the best geomean grew past the cumulative threshold, a configuration beat its floor,
    or one ran far ahead of the best comparison."""
    start = _since_gain_question(events)
    bests = _Bests()
    baseline = math.nan  # the best geomean when the window opened (or the first one inside it)
    found: list[str] = []
    for index, e in enumerate(events):
        if not isinstance(e, EvaluationDone) or not e.correct:
            continue
        if index >= start:
            found += _jumps(e, bests, config) + _extremes(e, config)
            baseline = bests.geomean if math.isnan(baseline) else baseline
        bests.add(e)
        baseline = bests.geomean if index >= start and math.isnan(baseline) else baseline
    if not math.isnan(baseline) and bests.geomean > baseline * (1 + config.cumulative_gain_pct / 100):
        found.append(
            f"best geomean {baseline:.3f}x -> {bests.geomean:.3f}x since the last check "
            f"(+{(bests.geomean / baseline - 1) * 100:.0f}% cumulative, threshold {config.cumulative_gain_pct:.0f}%)"
        )
    if found:
        return MomentCheck(moment=Moment.SUSPICIOUS_GAIN, holds=True, evidence="; ".join(found[-3:]))
    return MomentCheck(
        moment=Moment.SUSPICIOUS_GAIN,
        holds=False,
        evidence="no jump on the geomean or on any configuration, no cumulative gain past the threshold, "
        "no configuration above its floor or far ahead",
    )
