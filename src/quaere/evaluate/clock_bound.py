"""The judge's bounds on a runner's claimed times, as pure functions of what the judge saw of its calls.

A runner reports a time for each timed call, but the runner runs the candidate's code, which can rewrite
it: the time is a claim. Each bound takes something the judge measured itself, subtracts the claim, and
compares a robust statistic of that difference between the candidate and the trusted initial kernel,
timed the same way in the same interleaved run. Beyond the task's slack the timing is ``hidden_work``:

* drain: device work still running after the call's end event (a stream the events did not see);
* CPU time (CPU tasks): the kernel's accounting of the runner's CPU time and of its waits for a core,
  which its code cannot lower. Where the runners waited for a core too long to tell whether a wait fell in the
  claimed interval or outside it (a busy machine), only a claim short beyond every such wait is ``hidden_work``;
  anything less is ``unverified``: the claims could not be checked, which is not a verdict on the kernel;
* wall clock: the judge's own round trip, the coarsest, for every task;
* device-timeline span (GPU tasks that set ``TimingRule.span_abs_ms``): the judge's own events around the
  call, which see a forged claim the host clock's scheduling noise can hide on short calls;
* device-ordered close (GPU tasks that set ``TimingRule.close_abs_ms``): the same span, ended on the device right
  behind the call's work (:mod:`.close_word`), without the judge's host wake-up that widens the span's spread;
* the runner's turn (GPU tasks that set ``TimingRule.slot_abs_ms``): the judge's device timeline from the end of its
  cover to the runner's close word (:attr:`.close_word.Seen.slot_ms`), without the judge's own publish, flush, cover
  and sample, whose lengths set the close span's spread. It bounds what the runner did in its turn; work before
  the cover stays the close span's to see.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from quaere.evaluate import stats
from quaere.records import TimingStatus
from quaere.task.spec import TimingRule

WAITS_RESOLVED_SHARE = 2.0
"""The CPU-time bound judges its medians directly only while both runners' median wait for a core per call is at
most this multiple of its slack (its resolution is then the slack plus about the waits). Past it a wait may fall in
the claimed interval (and in the claim) or outside it (and in neither), and the medians jump by a scheduler slice
between runs: on the 2-core development machine with two busy loops (2026-12-03) median waits of 0.3-8 ms (the
trusted kernel's 0.75-4.6), its median of (CPU time + waits - claim) at 0.7-4.2 ms, an honest kernel once
``hidden_work`` and a claim 8% short once ``measured`` in six evaluations each; on the quiet machine the median wait
was 0-0.04 ms. Half the slack was tried first: a CI run beside another test session (waits 0.21-0.27 ms) then made
an honest campaign ``unverified``, a cost the medians had not shown there."""


def waits_resolved(waits_ms: float, slack_ms: float) -> bool:
    """Whether runners whose median wait for a core per call is ``waits_ms`` leave the CPU-time bound of slack
    ``slack_ms`` to its medians (:data:`WAITS_RESOLVED_SHARE`); False past it, where it can say ``unverified``."""
    return waits_ms <= WAITS_RESOLVED_SHARE * slack_ms


@dataclass(frozen=True)
class Doubt:
    """Why a runner's claims are not believed: ``hidden_work`` (they cannot be) or ``unverified`` (the judge could
    not check them, as on a machine too busy for the CPU-time bound)."""

    status: TimingStatus
    why: str


@dataclass
class CallTimes:
    """One native implementation's timed calls as the judge saw them, one entry per call in each list."""

    walls_ms: list[float] = field(default_factory=list)
    """The judge's wall time for the request."""
    claims_ms: list[float] = field(default_factory=list)
    """The time the runner reported."""
    drains_ms: list[float] = field(default_factory=list)
    """How long device work went on after the end event (the runner's report: a claim too)."""
    spans_ms: list[float] = field(default_factory=list)
    """The judge's own device-timeline span around the call (:meth:`~quaere.evaluate.clocks.Clock.bracket`)."""
    cpus_ms: list[float] = field(default_factory=list)
    """The runner's kernel-accounted CPU time during the request and since its previous reply (NaN when not
    accounted): a runner blocks between requests, so work done ahead of a call is counted in it."""
    queued_ms: list[float] = field(default_factory=list)
    """The time the runner was runnable but waiting for a core during the request (NaN when not accounted)."""
    closes_ms: list[float] = field(default_factory=list)
    """The judge's device-timeline span from the window's opening to its close mark (:mod:`.close_word`): the
    call's work, with no host round trip in it; NaN without one."""
    slots_ms: list[float] = field(default_factory=list)
    """The judge's device timeline from the end of its cover to the runner's close word: the runner's turn on the
    device (:attr:`.close_word.Seen.slot_ms`); NaN without one."""

    def add(self, wall_ms: float, claim_ms: float, drain_ms: float, span_ms: float, cpu_ms: float,
            queued_ms: float, close_ms: float = math.nan, slot_ms: float = math.nan) -> None:
        self.walls_ms.append(wall_ms)
        self.claims_ms.append(claim_ms)
        self.drains_ms.append(drain_ms)
        self.spans_ms.append(span_ms)
        self.cpus_ms.append(cpu_ms)
        self.queued_ms.append(queued_ms)
        self.closes_ms.append(close_ms)
        self.slots_ms.append(slot_ms)

    def overhead_ms(self, figure: bool = True) -> float:
        """Lower quartile of (judge's wall time - claimed time) over the calls the figure is made of
        (:meth:`figure_calls`), or over every call (``figure`` False: see :func:`doubt`).

        The lower quartile, not the median: scheduling delays on the host only ever add to a call's wall
        time, in a tail that differs between runs (measured on the H200: medians of two honest kernels
        differ by up to 45 us, lower quartiles by 9 us), while hidden work or a forged claim shifts every
        call."""
        return self._excess_quartile(self.walls_ms, figure)

    def cpu_overhead_ms(self, steal_share: float = 0.0, waits: bool = True) -> float:
        """Median of (the runner's CPU time + its waits for a core + ``steal_share`` of the claim - the claim)
        per call; NaN when not accounted. ``steal_share``: the share of the machine's CPU time the hypervisor
        took during the timed run, which is in a claimed wall time and in neither count. A claim is a wall
        time inside the runner, so for an honest call the difference is the runner's own overhead outside
        the claimed interval, whether or not the call waited for a core; a claim shorter than the work raises
        it by the amount. The median, as the reported time is one: a claim that moves the median time moves
        the median of this difference too. Without ``waits``: the same less the waits, which for an honest
        call is that overhead less the waits inside the claimed interval (a lower bound of it)."""
        kept = 1.0 - steal_share
        pairs = [u + (q if waits else 0.0) - c * kept
                 for u, q, c in zip(self.cpus_ms, self.queued_ms, self.claims_ms, strict=True) if not math.isnan(u + q)]
        return stats.median(pairs) if pairs else math.nan

    def waits_ms(self) -> float:
        """Median of the runner's waits for a core per call; NaN when not accounted."""
        waits = [q for q in self.queued_ms if not math.isnan(q)]
        return stats.median(waits) if waits else math.nan

    def span_overhead_ms(self, figure: bool = True) -> float:
        """Lower quartile of (the judge's device-timeline span - claimed time), over the calls as
        :meth:`overhead_ms`; NaN without spans.

        On the H200 it comes out ~400 us, not the ~40 us of a context switch and a reply (inferred: the cover
        ends long before the runner's work starts; ``docs/security.md``), but it moves less between two
        honest kernels than the wall clock's overhead does on short calls (at most 29 us over three runs of
        the 26 attention configurations), so a task that measured that may judge it (``span_abs_ms``)."""
        return self._excess_quartile(self.spans_ms, figure)


    def close_overhead_ms(self, figure: bool = True) -> float:
        """Lower quartile of (the span to the judge's close mark - claimed time); NaN without close marks. The
        same statistic as :meth:`span_overhead_ms`, on a span whose end no host wake-up delays."""
        return self._excess_quartile(self.closes_ms, figure)

    def slot_overhead_ms(self, figure: bool = True) -> float:
        """Lower quartile of (the runner's turn on the device - claimed time); NaN without one. The same statistic
        as :meth:`span_overhead_ms`, on the part of the span that is the runner's alone: for an honest call, its
        context switches, its events and its word around the claimed interval."""
        return self._excess_quartile(self.slots_ms, figure)

    def turn_spread_ms(self) -> float:
        """The interquartile range of the runner's turns (NaN unless every call has one): the spread of the calls'
        times as the judge measured them, the turn's own ~1 us spread added.

        The goal's margin takes the candidate's spread as given (``goal_judging``). A rewritten runner could report
        claims bunched at their median: each within the bounds' slack of its call, the median unmoved, and the
        margin's candidate share near nothing. The turns are the judge's measure of the same calls, so their
        spread stays: the candidate's spread is the wider of the two (``judge_time``). On the H200 the shipped
        kernel's turns spread 0.25-0.96% of the median against its claims' 0.19-0.92% (session 28,
        ``docs/runs/2026-12-04/s28/call1-ship-calls.jsonl.gz``): the turn adds its own ~1 us spread, a few
        hundredths of a percent on the margin."""
        turns = [ms for ms in self.slots_ms if not math.isnan(ms)]
        return stats.iqr(turns) if turns and len(turns) == len(self.slots_ms) else math.nan

    def turn_floor_ms(self, reference: CallTimes, timed: int) -> float:
        """What the judge's own clock says one of the last ``timed`` calls took: the median of their turns less the
        trusted ``reference``'s median (turn - claim) over all its calls (its fixed cost around the claimed
        interval: context switches, events, word); NaN unless each of those calls and one of the reference's has a
        turn.

        The reported time is a median claim, and claims are the runner's word: the turn's bound (``slot_abs_ms``)
        leaves a claim 3 us short a call unseen, on top of whatever fixed cost the candidate's turn has below the
        trusted kernel's. Reported no lower than this floor (``judge_time``), a claim gains nothing below it
        however it was forged, on any share of the calls: the turns are the judge's, and forged claims move neither
        their median nor the reference's. Replayed on the H200's call logs of session 28 (every call taken as
        timed), the floor of the shipped kernel lies 0.5-2.8 us under its median claim on the 26 attention
        configurations, and the initial kernel's against itself at most 0.53 us over (a 2.3 ms call); on the H200 in
        session 30 it raised honest medians by up to 3.0 us, on calls of 1.3-9.4 ms (under 0.1%). It binds on a
        forger, and on an honest kernel by what the judge's clock saw of its calls."""
        turns = self.slots_ms[-timed:] if timed > 0 else []
        offsets = [slot - claim for slot, claim in zip(reference.slots_ms, reference.claims_ms, strict=True)
                   if not math.isnan(slot)]
        if not turns or any(math.isnan(ms) for ms in turns) or not offsets:
            return math.nan
        return stats.median(turns) - stats.median(offsets)

    def _excess_quartile(self, measured_ms: list[float], figure: bool) -> float:
        """Lower quartile of (measured - claimed) over the figure's calls (every call unless ``figure``) where the
        judge measured something; NaN if none."""
        calls = self.figure_calls() if figure else range(len(self.claims_ms))
        pairs = [measured_ms[i] - self.claims_ms[i] for i in calls if not math.isnan(measured_ms[i])]
        return stats.quantile(pairs, 0.25) if pairs else math.nan

    def figure_calls(self) -> list[int]:
        """The calls whose claim is at or below the median claim: those the reported time (the median) is made of.

        A bound over every call let a runner forge a majority: claims short on, say, 60% of the calls move the
        median claim by as much as they are short, while the lowest quarter of (measured - claim) still comes from
        the honest 40%. Made from the H200's honest calls of 2026-12-04 (``tests/evaluate/test_call_log.py``), three
        calls in five claiming 70% of their time (the median 1.43x faster) passed the close bound on 25 of 26
        configurations. Over
        the lower half of the claims every such call is counted, so the quartile moves with the median. The trusted
        kernel's claims are true, so it is read over every call (more samples: its lower half of 8 calls on a long
        configuration made a noisy reference). The shipped kernel's lower half against the initial kernel's every
        call, replayed from the H200's call logs: close span -4.4 to +2.7 us over one run of the 26 configurations
        (all calls against all calls: -4.9 to +2.4); wall clock -49 to +15 us and device span -82 to +28 us over
        three."""
        middle = stats.median(self.claims_ms)
        return [i for i, claim in enumerate(self.claims_ms) if claim <= middle]


def _slack_ms(relative: float, device_ms: float, absolute_ms: float) -> float:
    return max(absolute_ms, relative * device_ms)


def doubt(impl: CallTimes, reference: CallTimes | None, timing: TimingRule, steal_share: float = 0.0) -> Doubt | None:
    """Why ``impl``'s claims are not believed (None when they are); ``reference`` is the trusted kernel's, timed
    in the same run, during which the hypervisor took ``steal_share`` of the machine's CPU time. Each claim is
    taken to hold that share of stolen time; the bound does not stand down when it is high, because a
    candidate that burns CPU raises it (the hypervisor throttles a busy machine: 3-5% measured on the
    development machine, 2026-12-02), and so hides at most that share of its claims."""
    if not impl.claims_ms:
        return None
    device_ms = stats.median(impl.claims_ms)
    drain, drain_slack = stats.median(impl.drains_ms), _slack_ms(timing.hidden_work_rel, device_ms, timing.drain_abs_ms)
    if drain > drain_slack:
        return Doubt(TimingStatus.HIDDEN_WORK,
                     f"device work went on {drain * 1e3:.0f} us after the timed interval ended (median of "
                     f"{len(impl.drains_ms)} calls, slack {drain_slack * 1e3:.0f} us): work on a stream the timing did "
                     "not see")
    if reference is None or not reference.claims_ms or reference is impl:
        return None
    cpu = _cpu_doubt(impl, reference, _slack_ms(timing.cpu_rel, device_ms, timing.cpu_abs_ms), steal_share)
    if cpu is not None:
        return cpu
    # The wall clock always; each device-timeline bound where the task judges it (NaN, no device timeline, never flags).
    def slack(absolute_ms: float, relative: float = timing.hidden_work_rel) -> float:
        return _slack_ms(relative, device_ms, absolute_ms)

    excess = excesses_ms(impl, reference)
    bounds = [("the judge's clock saw", excess["wall"], slack(timing.hidden_work_abs_ms))]
    if timing.span_abs_ms is not None:
        bounds.append(("the judge's device timeline spanned", excess["span"], slack(timing.span_abs_ms)))
    if timing.close_abs_ms is not None:
        bounds.append(("the judge's device timeline, up to its close mark, spanned", excess["close"],
                       slack(timing.close_abs_ms, timing.close_rel)))
    if timing.slot_abs_ms is not None:
        bounds.append(("the runner's turn on the judge's device timeline (its cover's end to the close word) lasted",
                       excess["slot"], slack(timing.slot_abs_ms, timing.slot_rel)))
    for seen, excess_ms, slack_ms in bounds:
        why = _quartile_bound(seen, excess_ms, slack_ms, len(impl.figure_calls()), len(impl.claims_ms))
        if why:
            return Doubt(TimingStatus.HIDDEN_WORK, why)
    return None


def excesses_ms(impl: CallTimes, reference: CallTimes) -> dict[str, float]:
    """What each quartile bound judges, by name (``wall``, ``span``, ``close``, ``slot``): ``impl``'s lower quartile of
    (what the judge measured - claim) over the calls its figure is made of, less the trusted ``reference``'s over all
    its calls (its claims are true: :meth:`CallTimes.figure_calls`); NaN where the judge measured nothing."""
    return {"wall": impl.overhead_ms() - reference.overhead_ms(figure=False),
            "span": impl.span_overhead_ms() - reference.span_overhead_ms(figure=False),
            "close": impl.close_overhead_ms() - reference.close_overhead_ms(figure=False),
            "slot": impl.slot_overhead_ms() - reference.slot_overhead_ms(figure=False)}


def hidden_work(impl: CallTimes, reference: CallTimes | None, timing: TimingRule, steal_share: float = 0.0) -> str:
    """Why ``impl``'s claims cannot be believed ('' when they can, or when they could not be checked): the
    ``hidden_work`` part of :func:`doubt`."""
    found = doubt(impl, reference, timing, steal_share)
    return found.why if found is not None and found.status is TimingStatus.HIDDEN_WORK else ""


def _cpu_doubt(impl: CallTimes, reference: CallTimes, slack_ms: float, steal_share: float) -> Doubt | None:
    """The CPU-time bound (CPU tasks; None where not accounted). The trusted kernel's median of (CPU time + waits
    - claim) is the runner's own overhead; negative, it sleeps or blocks in its calls and calibrates nothing.
    Where both runners' median wait is within :data:`WAITS_RESOLVED_SHARE` times the slack, the candidate's median
    may exceed it by the slack. Past that, a wait may be in a claim or outside it, so the candidate's median
    without its waits is set against the trusted kernel's with them: beyond the slack the claims are short
    wherever the waits fell (``hidden_work``); otherwise they are ``unverified``."""
    reference_ms, impl_ms = reference.cpu_overhead_ms(steal_share), impl.cpu_overhead_ms(steal_share)
    if not reference_ms >= 0 or math.isnan(impl_ms):
        return None
    waits_ms = max(impl.waits_ms(), reference.waits_ms())
    if waits_resolved(waits_ms, slack_ms):
        excess_ms = impl_ms - reference_ms
        if excess_ms > slack_ms:
            return Doubt(TimingStatus.HIDDEN_WORK,
                         f"the runner's CPU time (in its calls and between them) plus its waits for a core "
                         f"exceeded its claimed time by {excess_ms * 1e3:.0f} us more per call than the trusted "
                         f"initial kernel's (medians of {len(impl.cpus_ms)} and {len(reference.cpus_ms)} calls, slack "
                         f"{slack_ms * 1e3:.0f} us): work outside the timed call, or a forged time")
        return None
    floor_ms = impl.cpu_overhead_ms(steal_share, waits=False) - reference_ms
    if floor_ms > slack_ms:
        return Doubt(TimingStatus.HIDDEN_WORK,
                     f"the runner's CPU time (in its calls and between them) alone exceeded its claimed time by "
                     f"{floor_ms * 1e3:.0f} us more per call than the trusted initial kernel's CPU time and waits did "
                     f"(medians of {len(impl.cpus_ms)} and {len(reference.cpus_ms)} calls, slack {slack_ms * 1e3:.0f} "
                     "us): work outside the timed call, or a forged time, wherever the waits for a core fell")
    return Doubt(TimingStatus.UNVERIFIED,
                 f"the machine was too busy to check the claims against the runner's CPU time: the runners waited a "
                 f"median {waits_ms * 1e3:.0f} us per call for a core, more than {WAITS_RESOLVED_SHARE:g} times the "
                 f"slack ({slack_ms * 1e3:.0f} us), and a wait in a claim cannot be told from one outside it "
                 f"(this runner's CPU time less its claim: {floor_ms * 1e3:+.0f} us over the trusted kernel's CPU time "
                 "and waits less its claim); time it again on a quieter machine")


def _quartile_bound(seen: str, excess_ms: float, slack_ms: float, figure: int, calls: int) -> str:
    """The form the wall-clock and device-timeline bounds share: the candidate's lower quartile of (what the
    judge measured - claim), over the calls at or below its median claim, above the trusted kernel's (over all its
    calls) by more than the slack."""
    if excess_ms > slack_ms:
        return (f"{seen} {excess_ms * 1e3:.0f} us more per call than the claimed device time accounts for, beyond "
                f"the trusted initial kernel's (lower quartile of the {figure} calls of {calls} at or below the median "
                f"claim; slack {slack_ms * 1e3:.0f} us): work outside the timed interval, or a forged time")
    return ""
