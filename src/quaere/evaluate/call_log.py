"""The judge's call log (``EvalOptions.call_log``) read back: each implementation's timed calls as the clock bound
saw them, and the bound replayed on them.

A change to the bound can then be checked against calls recorded on a device without one (the H200's logs are under
``docs/runs/``), and a new task's slack calibrated from its own runs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping

from quaere.evaluate.clock_bound import CallTimes, Doubt, doubt
from quaere.task.spec import TimingRule

NEEDED = ("scenario", "impl", "wall_ms", "device_ms")
MEASURED = ("wall_ms", "device_ms", "drain_ms", "span_ms", "cpu_ms", "idle_cpu_ms", "queued_ms", "close_ms", "slot_ms")
"""The judge's measurements of a call read back (ms; null, or absent in an older log, is NaN)."""


class CallLogError(ValueError):
    """A call log line that is not what the judge writes; the message names the line and the field."""


def read_call_log(lines: Iterable[str], source: str = "call log") -> dict[tuple[str, str], CallTimes]:
    """Each (scenario, implementation)'s calls, in the order logged. Measurements the judge did not take (null)
    are NaN, as in the judge; a line without one of :data:`NEEDED` raises :class:`CallLogError`."""
    calls: dict[tuple[str, str], CallTimes] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CallLogError(f"{source}: line {number}: not JSON ({exc.msg})") from None
        missing = [name for name in NEEDED if not isinstance(record, dict) or record.get(name) is None]
        if missing:
            raise CallLogError(f"{source}: line {number}: field '{missing[0]}' missing (expected the judge's record "
                               f"of one timed call: {', '.join(NEEDED)}, and its measurements)")
        key = (str(record["scenario"]), str(record["impl"]))
        ms = {name: _ms(record, name, f"{source}: line {number}") for name in MEASURED}
        calls.setdefault(key, CallTimes()).add(
            ms["wall_ms"], ms["device_ms"], ms["drain_ms"], ms["span_ms"], ms["cpu_ms"] + ms["idle_cpu_ms"],
            ms["queued_ms"], ms["close_ms"], ms["slot_ms"])
    return calls


def replay(calls: Mapping[tuple[str, str], CallTimes], rule: TimingRule, candidate: str = "candidate",
           reference: str = "initial") -> dict[str, Doubt | None]:
    """Per scenario where both were logged: the bound's doubt about ``candidate`` against ``reference`` (None: its
    claims are believed), as :func:`~quaere.evaluate.clock_bound.doubt` gives it (no stolen CPU time: a GPU log has
    none, and a CPU log does not record it)."""
    scenarios = sorted({scenario for scenario, _ in calls})
    return {scenario: doubt(calls[(scenario, candidate)], calls[(scenario, reference)], rule)
            for scenario in scenarios if (scenario, candidate) in calls and (scenario, reference) in calls}


def _ms(record: dict, name: str, where: str) -> float:
    value = record.get(name)
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CallLogError(f"{where}: field '{name}' is {value!r} (expected a number of milliseconds, or null)")
    return float(value)
