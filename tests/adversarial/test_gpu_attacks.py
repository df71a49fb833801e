"""Attacks on the timing with the shipped kernel inside (run on the device: ``pytest -m gpu``).

Each gets a named verdict or no inflated ratio; the shipped kernel itself is honest and must not be flagged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.device import gpu_present
from quaere.records import TimingStatus
from quaere.task.loader import load_task

from .gpu_candidates import HOST_CALLBACKS, KERNEL, write_gpu_candidate

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_present(), reason="no NVIDIA GPU")]
# Batch >= 2 everywhere (the private-stream attack splits the batch), short and long, causal and not.
CONFIGS = frozenset({"d128-h16-s512-noncausal", "d128-h16-s2048-causal", "d64-h32-s4096-noncausal",
                     "d256-h8-s4096-causal"})


# forge_small (a claim 10% short) and hidden_tail (15 us of work left on a private stream) stay inside the host
# clock's 50 us, the host-closed span's 50 us and the drain's 30 us slack on the short configurations; the close
# mark's span (quaere.evaluate.close_word, 8 us slack) caught both on every configuration measured (H200,
# 2026-12-04: +11 to +94 us). Below about 8 us a call, a claim still goes unseen (docs/security.md). forge_majority
# forges three calls in five, so that the lowest quarter of (span - claim) over every call is the honest calls': the
# bounds read the calls at or below the median claim (H200, 2026-12-04: close span +40 to +281 us). forge_shave
# claims 6 us less on every call, inside the close span's slack: the runner's turn (TimingRule.slot_abs_ms, 3 us)
# holds none of the judge's own work and sees it.


@pytest.fixture(scope="module")
def fa_task():
    return load_task("flash_attention_hopper")


@pytest.fixture(scope="module")
def options(fa_task, tmp_path_factory: pytest.TempPathFactory) -> EvalOptions:
    chosen = [s.model_dump(mode="json") for s in fa_task.module.correctness_scenarios()[::40]]
    path = tmp_path_factory.mktemp("scenarios") / "few.json"
    path.write_text(json.dumps(chosen))
    return EvalOptions(scenarios_file=path, benchmark_ids=CONFIGS)


def _report(evaluation) -> dict[str, tuple[str, float]]:
    rows = {}
    for bench in evaluation.benchmarks:
        cand = bench.timing("candidate")
        rows[bench.scenario_id] = (cand.status.value, bench.ratio("fa3"))
        print(f"  {bench.scenario_id}: {cand.status.value} ratio vs fa3 {bench.ratio('fa3'):.3f} "
              f"overhead {cand.overhead_ms * 1e3:.1f} us span overhead {cand.span_overhead_ms * 1e3:.1f} us "
              f"close overhead {cand.close_overhead_ms * 1e3:.1f} us "
              f"turn overhead {cand.slot_overhead_ms * 1e3:.1f} us "
              f"drain {cand.drain_ms * 1e3:.1f} us (initial: "
              f"overhead {bench.timing('initial').overhead_ms * 1e3:.1f} us, span overhead "
              f"{bench.timing('initial').span_overhead_ms * 1e3:.1f} us, close overhead "
              f"{bench.timing('initial').close_overhead_ms * 1e3:.1f} us, turn overhead "
              f"{bench.timing('initial').slot_overhead_ms * 1e3:.1f} us) {cand.detail[:200]}")
    return rows


@pytest.fixture(scope="module")
def shipped(fa_task, options: EvalOptions):
    """The shipped kernel's evaluation and its rows: the honest figures the attacks are read against."""
    evaluation = run_evaluation(fa_task, KERNEL, options)
    print(f"\nshipped kernel ({evaluation.isolation.summary}):")
    return evaluation, _report(evaluation)


def test_the_shipped_kernel_is_not_flagged(shipped) -> None:
    evaluation, rows = shipped
    assert evaluation.correct
    assert {status for status, _ in rows.values()} == {TimingStatus.MEASURED.value}


@pytest.mark.parametrize(("attack", "verdict"), [("private_stream", TimingStatus.HIDDEN_WORK),
                                                 ("memo_pointer", TimingStatus.INPUTS_MEMOIZED),
                                                 ("forge_time", TimingStatus.HIDDEN_WORK),
                                                 ("precompute", TimingStatus.HIDDEN_WORK),
                                                 ("left_work", TimingStatus.HIDDEN_WORK),
                                                 ("no_word", TimingStatus.HIDDEN_WORK),
                                                 ("early_word", TimingStatus.HIDDEN_WORK),
                                                 ("forge_small", TimingStatus.HIDDEN_WORK),
                                                 ("forge_majority", TimingStatus.HIDDEN_WORK),
                                                 ("forge_shave", TimingStatus.HIDDEN_WORK),
                                                 ("hidden_tail", TimingStatus.HIDDEN_WORK)])
def test_attack_gets_its_verdict(fa_task, options: EvalOptions, tmp_path: Path, attack: str,
                                 verdict: TimingStatus) -> None:
    evaluation = run_evaluation(fa_task, write_gpu_candidate(tmp_path, attack), options)
    print(f"\n{attack}:")
    rows = _report(evaluation)
    assert evaluation.correct
    assert {status for status, _ in rows.values()} == {verdict.value}


def test_content_memoization_gains_nothing(fa_task, options: EvalOptions, tmp_path: Path, shipped) -> None:
    """Fresh inputs every call: the fingerprint never repeats, the kernel does the work, no ratio inflates: each
    configuration's ratio stays within 5% of the shipped kernel's in the same session (its run-to-run spread is
    1-2%; a replayed output would be several times faster). A fixed bound (1.1x FA3) failed once the honest
    kernel itself passed it (D=64 S=4k non-causal, 1.115x, stage 13)."""
    evaluation = run_evaluation(fa_task, write_gpu_candidate(tmp_path, "memo_content"), options)
    print("\nmemo_content:")
    rows = _report(evaluation)
    assert evaluation.correct
    honest = shipped[1]
    for config, (status, ratio) in rows.items():
        assert status == TimingStatus.MEASURED.value, (config, status)
        assert ratio < 1.05 * honest[config][1], (config, ratio, honest[config])


@pytest.mark.parametrize("attack", HOST_CALLBACKS)
def test_host_code_the_driver_calls_back_runs_inside_the_sandbox(fa_task, options: EvalOptions, tmp_path: Path,
                                                                   attack: str) -> None:
    """The CUDA driver calls host code back (a host function, a stream callback, a graph's host node, a user
    object's destructor) on a thread of its own; if that thread was started before the runner locked itself in,
    seccomp and Landlock (which bind the installing thread and those it starts) do not hold there. The code
    writes outside the scratch folder: the file must not appear, whatever the verdict."""
    target = tmp_path / "escaped.txt"
    quick = options.model_copy(update={"benchmark": False})
    evaluation = run_evaluation(fa_task, write_gpu_candidate(tmp_path, attack, target), quick)
    print(f"\n{attack} ({evaluation.isolation.summary}): "
          f"{sorted({v.verdict.value for v in evaluation.correctness})}")
    # The runner got as far as its sandbox (a runner that died opening the device writes nothing either).
    assert evaluation.isolation.seccomp and evaluation.isolation.landlock_abi > 0, evaluation.isolation
    assert not any("outside it" in note for note in evaluation.isolation.notes), evaluation.isolation.notes
    assert not target.exists(), target.read_text()
