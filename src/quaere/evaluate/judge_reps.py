"""One repetition of each implementation under the judge's timing, and the scenario context they share.

Every repetition, of every implementation, gets fresh input contents written by the judge into the shared
input buffers (a result cached by input pointer or content is stale by the next call), and the two native
implementations alternate between two output sets (cached output pointers gain nothing). Every timed
output of a native implementation is verified: unwritten elements, guard bytes, and a sample of the
output against an fp32 computation on that repetition's inputs; the candidate's inputs are checked
unchanged after each call, and its whole output on a secret schedule (:mod:`.timed_checks`). An output
equal to an earlier repetition's is ``inputs_memoized``. On a GPU, a secret sample of each native output read at
the judge's close mark must equal the output verified after the reply (:mod:`.close_word`).
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quaere.evaluate.clock_bound import CallTimes
from quaere.evaluate.clocks import RUNNER_COVER_CYCLES
from quaere.evaluate.close_word import Marks, OutputSample
from quaere.evaluate.correctness import Rule
from quaere.evaluate.judge_state import JudgeState
from quaere.evaluate.protocol import CallReply, CloseSpec
from quaere.evaluate.runner_client import CloseWord, RunnerLost, RunnerProcess, Timed
from quaere.evaluate.scenario_buffers import ScenarioBuffers
from quaere.evaluate.timed_checks import FullCheckSchedule, check_inputs_kept, check_whole, inputs_print
from quaere.evaluate.timing import TimingFailure
from quaere.records import Scenario, TimingStatus
from quaere.task.contract import Sample
from quaere.task.spec import TimingRule

# The sampled rows' seeds are drawn in a domain of their own (blake2b's personalisation), apart from the inputs'.
SAMPLE_DOMAIN = b"quaere.sample"


def rep_seed(seed: int, index: int, key: bytes, domain: bytes = b"") -> int:
    """The input seed of repetition ``index``: a keyed hash of the scenario's seed and the index, so that
    without the judge's ``key`` (secret, drawn per timed scenario) neither the inputs of a later repetition nor
    its sampled rows can be told from those seen so far (an arithmetic series of seeds could be solved from
    one repetition's inputs, then every later output computed ahead, off the clock). With ``domain``
    (:data:`SAMPLE_DOMAIN`) the seed of the repetition's sample instead: had it been the inputs' seed, a kernel that
    recovered that seed from its inputs would know which rows are checked."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), key=key, digest_size=8, person=domain).digest()
    return int.from_bytes(digest, "little") % (2**31 - 1)


@dataclass
class Context:
    """What every implementation of one timed scenario shares."""

    state: JudgeState
    scenario: Scenario
    seed: int
    rule: Rule
    timing: TimingRule
    buffers: ScenarioBuffers
    timeout_s: float
    bounds: dict[str, float] = field(default_factory=dict)
    """Per output: the bound of the full untimed check on the first inputs."""
    call_log: Path | None = None
    """Where every native timed call is appended (JSON lines), to calibrate the clock bound; None: nowhere."""
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    """The repetitions' seed key (:func:`rep_seed`); never leaves the judge."""
    staged: dict[str, Any] = field(default_factory=dict)
    """The current repetition's inputs in the judge's own memory, until :meth:`publish` copies them."""

    def log_call(self, impl: str, index: int, reply: CallReply, **judge_ms: float) -> None:
        """One line: the runner's reply and the judge's own measurements of the call (NaN written as null)."""
        if self.call_log is None:
            return
        measured = {name: None if math.isnan(value) else value for name, value in judge_ms.items()}
        record = {"scenario": self.scenario.id, "impl": impl, "index": index, **measured, **reply.model_dump()}
        with self.call_log.open("a") as log:
            log.write(json.dumps(record) + "\n")

    def stage(self, index: int) -> None:
        """Draw repetition ``index``'s inputs into the judge's own memory (the shared buffers keep the last)."""
        self.staged = self.state.task.module.make_inputs(self.scenario, rep_seed(self.seed, index, self.key))

    def publish(self) -> None:
        """Copy the staged inputs into the shared input buffers (enqueued on the judge's stream on a GPU)."""
        self.buffers.refill_inputs(self.staged)

    def sample(self, index: int) -> Sample:
        """The sampled reference of repetition ``index``, from its staged inputs."""
        module = self.state.task.module
        if hasattr(module, "sample"):
            return module.sample(self.scenario, self.staged, rep_seed(self.seed, index, self.key, SAMPLE_DOMAIN))
        full = {p: module.reference(self.scenario, self.staged, p) for p in ("fp32", "low")}
        return Sample(take=lambda outputs: outputs, fp32=full["fp32"], low=full["low"])


@dataclass
class NativeImpl:
    """The candidate or the initial kernel, called in its runner on the judge's buffers."""

    name: str
    ctx: Context
    runner: RunnerProcess
    calls: CallTimes = field(default_factory=CallTimes)
    seen_outputs: set[str] = field(default_factory=set)
    schedule: FullCheckSchedule | None = None
    """When set (the candidate), the calls whose whole output is checked, and every call's inputs too."""
    covers_mhz: list[float] = field(default_factory=list)
    """The effective SM clock of the judge's cover before each timed call (:meth:`CudaClock.cover_mhz`)."""

    def rep(self, index: int) -> float:
        ctx, ops = self.ctx, self.ctx.state.ops
        ctx.stage(index)
        # The sample's references are computed before the call, from the inputs as drawn: a call that
        # changes its inputs cannot make its outputs agree with them afterwards.
        sample = ctx.sample(index)
        written = inputs_print(ops, ctx.staged) if self.schedule is not None else {}
        slot = index % len(ctx.buffers.output_sets)
        outputs = ctx.buffers.output_sets[slot]
        outputs.poison()
        ctx.buffers.refill_workspace()
        clock = ctx.state.clock(ctx.timing.flush_l2)
        args = ctx.buffers.arguments(ctx.state.task.module.arguments(ctx.scenario), slot)
        flag_address = ctx.buffers.close_address()
        closing = OutputSample(outputs.views) if flag_address is not None else None
        ops.synchronize()
        armed_ms: list[float] = []  # the judge's host time from the window's opening to the runner's word

        def call(marks: Marks) -> Timed:
            word = CloseWord(CloseSpec(buffer=ctx.buffers.close_word.id, value=marks.value),
                             lambda: marks.close(closing)) if marks.closes else None
            return self.runner.call(args, timed=True, timeout_s=ctx.timeout_s,
                                    armed=lambda: armed_ms.append(self._open(clock, marks.open)), close=word)

        try:
            timed, seen = clock.bracket(call, flag_address)
        except RunnerLost as lost:
            ctx.state.runners.drop(self.name)
            raise TimingFailure(TimingStatus.FAILED, f"{lost.verdict.value}: {lost.detail}") from None
        reply = timed.reply
        if reply.code != 0:
            raise TimingFailure(TimingStatus.FAILED, f"entry point returned {reply.code}")
        if seen.word_missing:
            raise TimingFailure(TimingStatus.HIDDEN_WORK, f"timed call {index}: the runner said its close word was "
                                "enqueued, and the word never reached the device (another value, or none)")
        accounted = timed.accounted
        self.covers_mhz.append(clock.cover_mhz())
        self.calls.add(timed.wall_ms, float(reply.device_ms or 0.0), float(reply.drain_ms or 0.0), seen.span_ms,
                       accounted.cpu_ms + accounted.idle_cpu_ms, accounted.queued_ms, seen.close_ms, seen.slot_ms)
        ctx.log_call(self.name, index, reply, wall_ms=timed.wall_ms, span_ms=seen.span_ms, close_ms=seen.close_ms,
                     cover_close_ms=seen.cover_close_ms, slot_ms=seen.slot_ms,
                     armed_ms=armed_ms[0] if armed_ms else math.nan, cpu_ms=accounted.cpu_ms,
                     queued_ms=accounted.queued_ms, idle_cpu_ms=accounted.idle_cpu_ms, cover_mhz=self.covers_mhz[-1])
        if self.schedule is not None:
            check_inputs_kept(ops, ctx.buffers.inputs, written, index)
        self._verify(outputs, sample, index)
        late = closing.changed() if closing is not None else 0
        if late:
            raise TimingFailure(TimingStatus.HIDDEN_WORK,
                                f"timed call {index}: {late} of the outputs' sampled elements were written after the "
                                "call's close word reached the device: work the close mark did not wait for")
        if self.schedule is not None and self.schedule.due():
            reference = ctx.state.task.module.reference(ctx.scenario, ctx.buffers.inputs, "fp32")
            bounds = {name: ctx.bounds[name] * ctx.timing.sample_slack for name in outputs.views}
            check_whole(ops, outputs.views, reference, bounds, index)
        return float(reply.device_ms or 0.0)

    def _open(self, clock: Any, opened: Callable[[], None]) -> float:
        """Open the judged window with the runner armed: mark, publish the inputs, flush, wait, cover; returns the
        judge's host ms for it. The inputs reach the shared buffers only now, with the runner waiting for its
        word and the judge's marks around them: work done on them ahead of the call is inside the window. The
        copy and the flush are waited for before the word: the runner's copy engines can run beside the judge's
        context (on the H200 a candidate's fingerprint read saw the previous inputs when they were not), so its
        call must not start on half-written inputs or a half-flushed cache."""
        opened_ns = time.perf_counter_ns()
        opened()
        self.ctx.publish()
        clock.flush()
        self.ctx.state.ops.synchronize()
        clock.cover(RUNNER_COVER_CYCLES)
        return (time.perf_counter_ns() - opened_ns) / 1e6

    def _verify(self, outputs: Any, sample: Sample, index: int) -> None:
        ops, ctx = self.ctx.state.ops, self.ctx
        for name, view in outputs.views.items():
            left = ops.count_poison(view)
            if left or not outputs.guards_intact(name):
                raise TimingFailure(TimingStatus.FAILED, f"timed call: {name}: {left} element(s) unwritten or "
                                                         "guard bytes corrupted")
        digest = self.digest(outputs)
        taken = sample.take(outputs.views)
        for name in outputs.views:
            error = ops.compare(taken[name], sample.fp32[name])
            bound = ctx.bounds[name] * ctx.timing.sample_slack
            if error.nan_count or error.nonfinite_mismatch or not error.max_abs_err <= bound:
                if digest in self.seen_outputs:
                    raise TimingFailure(TimingStatus.INPUTS_MEMOIZED,
                                        f"the output of timed call {index} repeats an earlier call's output "
                                        "although its inputs were new: the work was not done")
                raise TimingFailure(TimingStatus.FAILED,
                                    f"timed call {index}: {name} differs from the reference of its own inputs "
                                    f"(sampled max abs error {error.max_abs_err:.3e} > {bound:.3e}, "
                                    f"non-finite {error.nonfinite_mismatch + error.nan_count})")
        self.seen_outputs.add(digest)

    def digest(self, outputs: Any) -> str:
        """Fingerprints of every output of a set: equal digests mean a repeated output."""
        return "|".join(self.ctx.state.ops.fingerprint(view) for view in outputs.views.values())


@dataclass
class ComparisonImpl:
    """A trusted comparison (e.g. FA3) called in the judge, on the same fresh inputs."""

    name: str
    ctx: Context
    run: Callable[[], Any]
    covers_mhz: list[float] = field(default_factory=list)
    """As :attr:`NativeImpl.covers_mhz`."""

    def rep(self, index: int) -> float:
        self.ctx.stage(index)
        self.ctx.publish()
        clock = self.ctx.state.clock(self.ctx.timing.flush_l2)
        clock.flush()
        self.ctx.state.ops.synchronize()
        elapsed_ms = clock.time_call(self.run)
        self.covers_mhz.append(clock.cover_mhz())
        return elapsed_ms
