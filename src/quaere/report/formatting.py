"""Number formatting shared by the terminal summary and the HTML page (one place, one convention)."""

from __future__ import annotations

import math

from quaere.records import TimingStatus
from quaere.report.final_table import BaselineCell


def ratio(value: float | None) -> str:
    """A speedup such as '1.13x'; '-' when absent or not finite."""
    return "-" if value is None or not math.isfinite(value) else f"{value:.3f}x"


def gain(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:+.3f}"


REJECTION_WORDS = {"same_candidate": "same kernel, timed again", "within_spread": "within the measured spread"}


def question_gain(value: float | None, raw: float | None, rejected: str | None) -> str:
    """A question's gain, or the rise it did not get credit for and why (see ``report.attribution``)."""
    if rejected is None:
        return gain(value)
    return f"0 ({gain(raw)}: {REJECTION_WORDS.get(rejected, rejected)})"


def number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def share(value: float | None) -> str:
    """A fraction as a percentage, e.g. '30.0%'."""
    return "-" if value is None or not math.isfinite(value) else f"{100 * value:.1f}%"


def short_hash(digest: str) -> str:
    return digest[:12]


def cell(baseline: BaselineCell | None) -> str:
    """A final-table cell: the ratio, or why there is none (e.g. 'unavailable')."""
    if baseline is None:
        return "-"
    return ratio(baseline.ratio) if baseline.status is TimingStatus.MEASURED else baseline.status.value
