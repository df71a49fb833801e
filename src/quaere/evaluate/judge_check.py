"""One correctness scenario, judged: the candidate runs in its runner on the judge's buffers, and every
fact of the verdict (status, guards, inputs, poison, errors, banned mappings) is read by the judge from its
own mapping after the runner has answered and synchronized.
"""

from __future__ import annotations

import math
import time
from typing import Any

from quaere.evaluate.correctness import CallFacts, ErrorStats, OutputCheck, Rule, judge_scenario, passes
from quaere.evaluate.judge_state import JudgeState
from quaere.evaluate.runner_client import RunnerLost
from quaere.evaluate.scenario_buffers import ScenarioBuffers
from quaere.records import Scenario, ScenarioVerdict
from quaere.task.contract import OutputSpec


def null_self_test(ops: Any, specs: dict[str, OutputSpec], inputs: dict, ref32: dict, lows: dict,
                   rule: Rule) -> tuple[str, ...]:
    """Names of the null candidates that would pass (each must fail for the scenario to mean anything)."""
    per_output = {name: ops.null_candidates(spec, inputs) for name, spec in specs.items()}
    names = set.intersection(*(set(nulls) for nulls in per_output.values())) if per_output else set()
    passing = []
    for null in sorted(names):
        stats = {name: (ops.compare(per_output[name][null], ref32[name]), lows[name]) for name in specs}
        if passes(stats, rule):
            passing.append(null)
    return tuple(passing)


def _unjudged(name: str, guards_intact: bool) -> OutputCheck:
    """Guards only: the call already failed on facts that make its values meaningless."""
    nothing = ErrorStats(max_abs_err=0.0, nonfinite_mismatch=0, nan_count=0)
    return OutputCheck(name=name, numel=0, poison_left=0, guards_intact=guards_intact, error=nothing, low=nothing)


def check_scenario(state: JudgeState, scenario: Scenario, seed: int, rule: Rule, timeout_s: float) -> ScenarioVerdict:
    """The verdict of the candidate on ``scenario`` with inputs drawn from ``seed``."""
    module, ops = state.task.module, state.ops
    started = time.monotonic()

    def lost(exc: RunnerLost) -> ScenarioVerdict:
        state.runners.drop("candidate")
        return ScenarioVerdict(scenario_id=scenario.id, verdict=exc.verdict, seed=seed, detail=exc.detail,
                               duration_s=time.monotonic() - started)

    try:
        runner = state.runners.get("candidate")
    except RunnerLost as exc:
        return lost(exc)
    specs = module.output_specs(scenario)
    buffers = ScenarioBuffers(state.pool, ops, module.make_inputs(scenario, seed), specs,
                              module.workspace_bytes(scenario))
    try:
        inputs, outputs = buffers.inputs, buffers.output_sets[0]
        before = {name: ops.checksum(array) for name, array in inputs.items()}
        outputs.poison()
        buffers.refill_workspace()
        args = buffers.arguments(module.arguments(scenario))
        ops.synchronize()
        try:
            state.share(runner, buffers.shared(), timeout_s)
            reply = runner.call(args, timed=False, timeout_s=timeout_s).reply
            banned = state.new_banned(runner)
        except RunnerLost as exc:
            return lost(exc)
        modified = tuple(name for name, array in inputs.items() if ops.checksum(array) != before[name])
        facts = CallFacts(status_code=reply.code, modified_inputs=modified, banned_loaded=banned)
        passing_nulls: tuple[str, ...] = ()
        if reply.code == 0 and not modified and not banned:
            ref32 = module.reference(scenario, inputs, "fp32")
            low = module.reference(scenario, inputs, "low")
            lows = {name: ops.compare(low[name], ref32[name]) for name in specs}
            checks = tuple(
                OutputCheck(name=name, numel=math.prod(specs[name].shape), poison_left=ops.count_poison(view),
                            guards_intact=outputs.guards_intact(name), error=ops.compare(view, ref32[name]),
                            low=lows[name])
                for name, view in outputs.views.items()
            )
            passing_nulls = null_self_test(ops, specs, inputs, ref32, lows, rule)
        else:
            checks = tuple(_unjudged(name, outputs.guards_intact(name)) for name in specs)
        return judge_scenario(scenario.id, seed, facts, checks, passing_nulls, rule, time.monotonic() - started)
    finally:
        buffers.free()
