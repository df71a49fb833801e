"""One scenario inside the worker: a checked candidate call, and the timing of every implementation.

The state passed in is the worker's (task module, ArrayOps, kernel entry points); nothing here talks to
the parent.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import Any

from quaere.evaluate.arrays import guard_elems
from quaere.evaluate.correctness import CallFacts, ErrorStats, OutputCheck, Rule, judge_error, judge_scenario, passes
from quaere.evaluate.timing import Impl, time_interleaved, to_timing
from quaere.records import Scenario, ScenarioVerdict, Timing, TimingStatus, Verdict
from quaere.task.contract import ComparisonUnavailable, OutputSpec
from quaere.task.spec import TimingRule

ABI_IMPLS = ("candidate", "initial")


class CandidateFault(RuntimeError):
    """The kernel's call raised (e.g. a CUDA illegal address surfaced at synchronize)."""

    def __init__(self, message: str, out_of_memory: bool = False) -> None:
        super().__init__(message)
        self.out_of_memory = out_of_memory


def _is_oom(exc: BaseException) -> bool:
    return type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower()


def call_kernel(call: Callable[[], Any], ops: Any) -> int:
    """Run ``call`` and synchronize; a raised error becomes :class:`CandidateFault`."""
    try:
        code = call()
        ops.synchronize()
    except Exception as exc:
        raise CandidateFault(f"{type(exc).__name__}: {exc}", out_of_memory=_is_oom(exc)) from exc
    return int(code or 0)


class Outputs:
    """Guarded, poisoned output buffers of one implementation, and a poisoned workspace."""

    def __init__(self, ops: Any, specs: dict[str, OutputSpec], workspace_bytes: int) -> None:
        self.ops, self.specs = ops, specs
        self.buffers = {name: ops.alloc_guarded(spec, guard_elems(spec)) for name, spec in specs.items()}
        self.views = {name: view for name, (view, _) in self.buffers.items()}
        self.workspace = ops.workspace(workspace_bytes)

    def poison(self) -> None:
        for view in self.views.values():
            self.ops.poison(view)
        self.ops.refill_workspace(self.workspace)

    def guards_intact(self, name: str) -> bool:
        return self.ops.guards_intact(self.buffers[name][1], guard_elems(self.specs[name]))


def _null_self_test(ops: Any, specs: dict[str, OutputSpec], inputs: dict, ref32: dict, lows: dict, rule: Rule) -> tuple[str, ...]:
    """Names of the null candidates that would pass (each must fail for the scenario to mean anything)."""
    per_output = {name: ops.null_candidates(spec, inputs) for name, spec in specs.items()}
    names = set.intersection(*(set(nulls) for nulls in per_output.values())) if per_output else set()
    passing = []
    for null in sorted(names):
        stats = {name: (ops.compare(per_output[name][null], ref32[name]), lows[name]) for name in specs}
        if passes(stats, rule):
            passing.append(null)
    return tuple(passing)


def check_scenario(state: Any, scenario: Scenario, seed: int, rule: Rule) -> ScenarioVerdict:
    module, ops = state.task.module, state.ops
    started = time.monotonic()
    inputs = module.make_inputs(scenario, seed)
    before = {name: ops.checksum(array) for name, array in inputs.items()}
    specs = module.output_specs(scenario)
    outputs = Outputs(ops, specs, module.workspace_bytes(scenario))
    outputs.poison()
    entry = state.entry("candidate")
    ops.synchronize()
    mapped_before = state.banned_now()
    code = call_kernel(lambda: module.launch(entry, inputs, outputs.views, scenario, outputs.workspace), ops)
    banned = tuple(sorted(state.banned_now() - mapped_before))
    modified = tuple(name for name, array in inputs.items() if ops.checksum(array) != before[name])
    facts = CallFacts(status_code=code, modified_inputs=modified, banned_loaded=banned)
    checks: list[OutputCheck] = []
    passing_nulls: tuple[str, ...] = ()
    if code == 0 and not modified and not banned:
        ref32 = module.reference(scenario, inputs, "fp32")
        low = module.reference(scenario, inputs, "low")
        lows = {name: ops.compare(low[name], ref32[name]) for name in specs}
        for name, view in outputs.views.items():
            checks.append(
                OutputCheck(
                    name=name, numel=math.prod(specs[name].shape),
                    poison_left=ops.count_poison(view), guards_intact=outputs.guards_intact(name),
                    error=ops.compare(view, ref32[name]), low=lows[name],
                )
            )
        passing_nulls = _null_self_test(ops, specs, inputs, ref32, lows, rule)
    else:
        checks = [_unjudged(name, outputs) for name in specs]
    return judge_scenario(scenario.id, seed, facts, tuple(checks), passing_nulls, rule, time.monotonic() - started)


def _unjudged(name: str, outputs: Outputs) -> OutputCheck:
    """Guards only: the call already failed on facts that make its values meaningless."""
    nothing = ErrorStats(max_abs_err=0.0, nonfinite_mismatch=0, nan_count=0)
    return OutputCheck(name=name, numel=0, poison_left=0, guards_intact=outputs.guards_intact(name), error=nothing, low=nothing)


def _abi_impl(state: Any, impl: str, scenario: Scenario, inputs: dict, ref32: dict, lows: dict, rule: Rule) -> Impl:
    """An untimed, verified first call, then an Impl whose every timed output is compared with it."""
    module, ops = state.task.module, state.ops
    entry = state.entry(impl)
    specs = module.output_specs(scenario)
    outputs = Outputs(ops, specs, module.workspace_bytes(scenario))

    def call() -> Any:
        return module.launch(entry, inputs, outputs.views, scenario, outputs.workspace)

    outputs.poison()
    code = call_kernel(call, ops)
    if code != 0:
        raise RuntimeError(f"entry point returned {code}")
    verified, bounds = {}, {}
    for name, view in outputs.views.items():
        if not outputs.guards_intact(name) or ops.count_poison(view):
            raise RuntimeError(f"untimed call: output {name} left unwritten or guards corrupted")
        verdict, record, detail = judge_error(name, ops.compare(view, ref32[name]), lows[name], rule)
        if verdict is not Verdict.PASSED:
            raise RuntimeError(f"untimed call failed the correctness rule: {detail}")
        verified[name], bounds[name] = ops.copy(view), record.bound

    def check() -> str:
        if code_box[0] != 0:
            return f"entry point returned {code_box[0]}"
        for name, view in outputs.views.items():
            left = ops.count_poison(view)
            if left or not outputs.guards_intact(name):
                return f"{name}: {left} element(s) unwritten or guard bytes corrupted"
            stats = ops.compare(view, verified[name])
            if stats.nan_count or stats.nonfinite_mismatch or not stats.max_abs_err <= bounds[name]:
                return f"{name}: differs from the verified untimed output (max abs {stats.max_abs_err:.3e} > {bounds[name]:.3e}, non-finite {stats.nonfinite_mismatch + stats.nan_count})"
        return ""

    code_box = [0]

    def timed() -> None:
        code_box[0] = int(call() or 0)

    return Impl(name=impl, call=timed, prepare=outputs.poison, check=check)


def _comparison_impl(state: Any, name: str, scenario: Scenario, inputs: dict) -> Impl:
    makers = state.task.module.comparisons()
    if name not in makers:
        raise ComparisonUnavailable("not provided by the task module's comparisons()")
    ops = state.ops
    outputs = {n: ops.alloc_guarded(spec, 0)[0] for n, spec in state.task.module.output_specs(scenario).items()}
    run = makers[name](scenario, inputs, outputs)

    def call() -> None:
        run()  # its result (often a tensor) is dropped: only the time counts

    return Impl(name=name, call=call)


def time_scenario(
    state: Any, scenario: Scenario, seed: int, rule: Rule, timing_rule: TimingRule, comparisons: tuple[str, ...]
) -> list[Timing]:
    """Timings of the candidate, the initial kernel and each comparison, in that order."""
    module, ops = state.task.module, state.ops
    inputs = module.make_inputs(scenario, seed)
    before = {name: ops.checksum(array) for name, array in inputs.items()}
    ref32 = module.reference(scenario, inputs, "fp32")
    low = module.reference(scenario, inputs, "low")
    lows = {name: ops.compare(low[name], ref32[name]) for name in ref32}
    impls: list[Impl] = []
    settled: dict[str, Timing] = {}
    for name in (*ABI_IMPLS, *comparisons):
        try:
            impls.append(
                _abi_impl(state, name, scenario, inputs, ref32, lows, rule)
                if name in ABI_IMPLS
                else _comparison_impl(state, name, scenario, inputs)
            )
        except ComparisonUnavailable as exc:
            settled[name] = Timing(impl=name, status=TimingStatus.UNAVAILABLE, detail=str(exc))
        except CandidateFault:
            raise
        except Exception as exc:  # noqa: BLE001 - any error here is a verdict, not a crash of quaere
            settled[name] = Timing(impl=name, status=TimingStatus.FAILED, detail=f"{type(exc).__name__}: {exc}")
    time_interleaved(impls, timing_rule, state.clock(timing_rule.flush_l2), random.Random(seed))
    flops = float(module.flops(scenario))
    modified = [name for name, array in inputs.items() if ops.checksum(array) != before[name]]
    for impl in impls:
        if modified and impl.name in ABI_IMPLS and not impl.failure:
            impl.failure = f"input(s) {', '.join(modified)} changed while the implementations were timed"
        settled[impl.name] = to_timing(impl, flops)
    return [settled[name] for name in (*ABI_IMPLS, *comparisons)]
