"""One benchmark scenario timed by the judge: the candidate and the initial kernel in their runners, the
comparisons in the judge itself, interleaved (see :mod:`.timing`); what one repetition of each is, and how its
output is verified, is :mod:`.judge_reps`'s.

The device time a runner reports is a claim. The judge bounds it with its own clock: the runner's context
cannot start before the judge's cover ends (contexts time-slice), so the judge's wall time for the request
minus the claimed device time is the same for every honest kernel (round trip, context switch, the
cover); a candidate whose difference exceeds the trusted initial kernel's by more than the task's slack,
or whose device work went on after its end event (``drain``), is ``hidden_work``, on a second timed run
when the first was flagged too (:mod:`.second_look`). On a CPU task the kernel's own accounting of the
runner's CPU time per call bounds the claim more tightly (``cpu_abs_ms``); on a machine too busy for that bound
to place the runners' waits, a claim it cannot catch for certain is ``unverified``, not ``measured``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from quaere.evaluate import stats
from quaere.evaluate.clock_bound import CallTimes, Doubt, doubt
from quaere.evaluate.correctness import Rule, judge_error
from quaere.evaluate.cpu_accounting import machine_ticks, steal_share
from quaere.evaluate.judge_reps import ComparisonImpl, Context, NativeImpl
from quaere.evaluate.judge_state import JudgeState
from quaere.evaluate.runner_client import RunnerLost
from quaere.evaluate.scenario_buffers import ScenarioBuffers
from quaere.evaluate.second_look import time_and_judge
from quaere.evaluate.timed_checks import FullCheckSchedule
from quaere.evaluate.timing import Run, to_timing
from quaere.records import Scenario, Timing, TimingStatus, Verdict
from quaere.task.contract import ComparisonUnavailable
from quaere.task.spec import TimingRule

NATIVE = ("candidate", "initial")
UNTRUSTED = ("candidate",)
"""The implementations whose code is not ours: their repetitions are bounded when slow, their outputs
checked whole on a schedule, their claims bounded by the initial kernel's (the trusted reference)."""


def _native(ctx: Context, name: str, ref32: dict, lows: dict) -> NativeImpl:
    """``name``'s runner with the buffers mapped, after one untimed call that passed the full check."""
    state, ops = ctx.state, ctx.state.ops
    runner = state.runners.get(name)
    state.share(runner, ctx.buffers.shared(), ctx.timeout_s)
    schedule = FullCheckSchedule(ctx.timing.full_check_share) if name in UNTRUSTED else None
    impl = NativeImpl(name, ctx, runner, schedule=schedule)
    outputs = ctx.buffers.output_sets[0]
    outputs.poison()
    ctx.buffers.refill_workspace()
    ops.synchronize()
    args = ctx.buffers.arguments(state.task.module.arguments(ctx.scenario), 0)
    reply = runner.call(args, timed=False, timeout_s=ctx.timeout_s).reply
    if reply.code != 0:
        raise RuntimeError(f"entry point returned {reply.code}")
    for output, view in outputs.views.items():
        if ops.count_poison(view) or not outputs.guards_intact(output):
            raise RuntimeError(f"untimed call: output {output} left unwritten or guards corrupted")
        verdict, _, detail = judge_error(output, ops.compare(view, ref32[output]), lows[output], ctx.rule)
        if verdict is not Verdict.PASSED:
            raise RuntimeError(f"untimed call failed the correctness rule: {detail}")
    impl.seen_outputs.add(impl.digest(outputs))
    return impl


def _comparison(ctx: Context, name: str) -> ComparisonImpl:
    makers = ctx.state.task.module.comparisons()
    if name not in makers:
        raise ComparisonUnavailable("not provided by the task module's comparisons()")
    ops, module = ctx.state.ops, ctx.state.task.module
    outputs = {n: ops.alloc_guarded(spec, 0)[0] for n, spec in module.output_specs(ctx.scenario).items()}
    return ComparisonImpl(name, ctx, makers[name](ctx.scenario, ctx.buffers.inputs, outputs))


def _median_clock(impl: Any) -> float:
    """The median of an implementation's covers' clocks (NaN where none was measured: no device)."""
    clocks = [mhz for mhz in getattr(impl, "covers_mhz", ()) if not math.isnan(mhz)]
    return stats.median(clocks) if clocks else math.nan


def _failed(name: str, status: TimingStatus, detail: str) -> Timing:
    return Timing(impl=name, status=status, detail=detail)


def _prepare(ctx: Context, comparisons: tuple[str, ...], natives: dict[str, NativeImpl],
             settled: dict[str, Timing]) -> list[Any]:
    """Every implementation ready to time, in order; those that cannot be timed settled with the reason."""
    module, ops, specs = ctx.state.task.module, ctx.state.ops, ctx.buffers.specs
    ref32 = module.reference(ctx.scenario, ctx.buffers.inputs, "fp32")
    low = module.reference(ctx.scenario, ctx.buffers.inputs, "low")
    lows = {name: ops.compare(low[name], ref32[name]) for name in specs}
    ctx.bounds = {name: ctx.rule.bound(lows[name].max_abs_err) for name in specs}
    impls: list[Any] = []
    for name in NATIVE:
        try:
            natives[name] = _native(ctx, name, ref32, lows)
            impls.append(natives[name])
        except RunnerLost as lost:
            ctx.state.runners.drop(name)
            settled[name] = _failed(name, TimingStatus.FAILED, f"{lost.verdict.value}: {lost.detail}")
        except Exception as exc:  # noqa: BLE001 - the implementation's failure is its timing's verdict
            settled[name] = _failed(name, TimingStatus.FAILED, f"{type(exc).__name__}: {exc}")
    for name in comparisons:
        try:
            impls.append(_comparison(ctx, name))
        except ComparisonUnavailable as exc:
            settled[name] = _failed(name, TimingStatus.UNAVAILABLE, str(exc))
        except Exception as exc:  # noqa: BLE001 - same as above
            settled[name] = _failed(name, TimingStatus.FAILED, f"{type(exc).__name__}: {exc}")
    return impls


def with_calls(timing: Timing, calls: CallTimes, untrusted: bool, stolen_share: float, cpu_accountable: bool) -> Timing:
    """``timing`` with what the judge saw of its calls, each statistic as the bound reads it: an untrusted
    implementation's over the calls its figure is made of, the trusted kernel's over all its calls. An untrusted
    one's spread is the wider of its claims' and its turns' (:meth:`CallTimes.turn_spread_ms`): the goal's margin
    must not rest on a spread its runner reported."""
    turns_ms = calls.turn_spread_ms()
    return timing.model_copy(update={
        "overhead_ms": calls.overhead_ms(untrusted), "drain_ms": stats.median(calls.drains_ms),
        "span_overhead_ms": calls.span_overhead_ms(untrusted), "close_overhead_ms": calls.close_overhead_ms(untrusted),
        "slot_overhead_ms": calls.slot_overhead_ms(untrusted),
        **({"spread_ms": turns_ms} if untrusted and turns_ms > timing.spread_ms else {}),
        "cpu_overhead_ms": calls.cpu_overhead_ms(stolen_share), "cpu_waits_ms": calls.waits_ms(),
        **({"steal_share": stolen_share} if cpu_accountable else {})})


def unreferenced(reference: NativeImpl | None, settled: dict[str, Timing]) -> Doubt | None:
    """Why an untrusted implementation's claims cannot be checked when the trusted initial kernel has no timed call
    beside them (it failed, or its runner could not start): ``unverified``; None when it has. Every bound but the
    drain's is read against that kernel, so without it a forged claim would be ``measured`` on its word alone; a
    candidate that starved the initial kernel's runner (of memory, say) would make it so."""
    if reference is not None and reference.calls.claims_ms:
        return None
    why = settled["initial"].detail if "initial" in settled else "no timed call"
    return Doubt(TimingStatus.UNVERIFIED, f"the trusted initial kernel was not timed beside it ({why}): nothing bounds "
                 "its claims")


def floored(timing: Timing, calls: CallTimes, reference: CallTimes | None, flops: float) -> Timing:
    """``timing`` (an untrusted implementation's) with its turn floor (:meth:`CallTimes.turn_floor_ms`) and its
    median raised to that floor where its claims fall under it; unchanged without samples, turns or a reference."""
    if reference is None or not timing.samples_ms or math.isnan(timing.median_ms):
        return timing
    floor_ms = calls.turn_floor_ms(reference, len(timing.samples_ms))
    if math.isnan(floor_ms):
        return timing
    if floor_ms <= timing.median_ms:
        return timing.model_copy(update={"turn_floor_ms": floor_ms})
    raised = (f"median raised from the claimed {timing.median_ms * 1e3:.1f} us to {floor_ms * 1e3:.1f} us: the "
              "judge's turns less the trusted kernel's fixed cost")
    return timing.model_copy(update={"turn_floor_ms": floor_ms, "median_ms": floor_ms,
                                     "tflops": stats.tflops(flops, floor_ms),
                                     "detail": "; ".join(part for part in (timing.detail, raised) if part)})


def time_scenario(state: JudgeState, scenario: Scenario, seed: int, rule: Rule, timing: TimingRule,
                  comparisons: tuple[str, ...], timeout_s: float, call_log: Path | None = None) -> list[Timing]:
    """Timings of the candidate, the initial kernel and each comparison, in that order."""
    module, ops = state.task.module, state.ops
    buffers = ScenarioBuffers(state.pool, ops, module.make_inputs(scenario, seed), module.output_specs(scenario),
                              module.workspace_bytes(scenario), output_sets=2)
    ctx = Context(state, scenario, seed, rule, timing, buffers, timeout_s, call_log=call_log)
    natives: dict[str, NativeImpl] = {}
    settled: dict[str, Timing] = {}
    try:
        impls = _prepare(ctx, comparisons, natives, settled)
        run_started, run_steal = [machine_ticks()], [0.0]

        def judge(runs: list[Run]) -> dict[str, Doubt]:
            flags = {}
            run_steal[0] = share = steal_share(run_started[0], machine_ticks())
            for run in runs:
                native = natives.get(run.name)
                if native is not None and not run.failure:
                    reference = natives.get("initial") if run.name in UNTRUSTED else None
                    found = (unreferenced(reference, settled) if run.name in UNTRUSTED else None) or doubt(
                        native.calls, reference.calls if reference else None, timing, share)
                    if found is not None:
                        flags[run.name] = found
            return flags

        def reset() -> None:
            for native in natives.values():
                native.calls = CallTimes()
            run_started[0] = machine_ticks()

        runs = time_and_judge(impls, timing, seed, UNTRUSTED, judge, reset)
        flops = float(module.flops(scenario))
        for run in runs:
            native = natives.get(run.name)
            settled[run.name] = to_timing(run, flops).model_copy(update={"cover_mhz": _median_clock(run.impl)})
            if native is not None and native.calls.claims_ms:
                untrusted = run.name in UNTRUSTED
                settled[run.name] = with_calls(settled[run.name], native.calls, untrusted, run_steal[0],
                                               native.runner.cpu_accountable)
                reference = natives.get("initial") if untrusted else None
                if reference is not None:
                    settled[run.name] = floored(settled[run.name], native.calls, reference.calls, flops)
        return [settled[name] for name in (*NATIVE, *comparisons)]
    finally:
        buffers.free()
