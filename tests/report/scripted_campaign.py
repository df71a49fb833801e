"""A scripted campaign with known edits and known gains, written straight to a workspace.

The events (index: event) that the tests reason about, with the 23 tool calls (TC) marked:

     0 SessionStart
     1 Q1 campaign_start, bank 'levels-where'     (group levels, level-shift)
   2-4 TC x3
     5 E1 V0 correct   geomean 1.0     {s1: 1.0,  s2: 1.0}
   6-7 TC x2
     8 E2 V1 correct   geomean 1.125   {s1: 1.25, s2: 1.0}
     9 Q2 plateau, a person's own question        (group human, information)
 10-13 TC x4
    14 E3 V2 WRONG     geomean 2.0     {s1: 3.0,  s2: 1.5}
    15 TC
    16 StopAttempt
    17 StopDecision block (unmet)
    18 Q3 claimed_limit, bank 'limits-roofline'   (group limits, limit-challenge)
 19-23 TC x5
    24 E4 V3 correct   geomean 1.5     {s1: 1.5,  s2: 1.5}
    25 E5 V3 correct   geomean 1.4375  {s1: 1.375, s2: 1.5}
    26 Q4 plateau, bank 'profile-counters'        (group profiling, information)
 27-28 TC x2
    29 E6 V4 correct   geomean 1.625   {s1: 1.5,  s2: 1.75}
    30 Q5 suspicious_gain, bank 'retired-entry'   (not in the catalog)
 31-36 TC x6
    37 StopAttempt
    38 StopDecision allow (met)
    39 SessionEnd

Geomeans are dyadic fractions so that gains are exact in binary floating point.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from quaere.jsonl import append_line
from quaere.records import (
    BenchmarkResult,
    BuildResult,
    BuildStatus,
    DeviceInfo,
    Evaluation,
    Moment,
    QuestionKind,
    ScenarioVerdict,
    Timing,
    TimingStatus,
    Verdict,
)
from quaere.report.questions import EntryClass
from quaere.trace import (
    EvaluationDone,
    QuestionAsked,
    SessionEnd,
    SessionStart,
    StopAttempt,
    StopDecision,
    ToolCall,
    TraceWriter,
)
from quaere.workspace import Workspace, create_workspace

# The versions (see test_churn for the hand count).
V0 = b"A\nB\nC\n"
V1 = b"A\nX\nC\n"
V2 = b"A\nB\nC\nY\n\n"
V3 = b"A\nB\n  C\nY\nX\n"
V4 = b"B\n  C\nY\nX\nA\n"

CATALOG = {
    "levels-where": EntryClass(group="levels", kind=QuestionKind.LEVEL_SHIFT),
    "limits-roofline": EntryClass(group="limits", kind=QuestionKind.LIMIT_CHALLENGE),
    "profile-counters": EntryClass(group="profiling", kind=QuestionKind.INFORMATION),
}

TASK_TOML = """\
name = "toy"
description = "A toy CPU task for the report tests."
device = "cpu"
target = "x86-64"
initial_kernel = "kernel.cu"
entry_point = "run"
build = "c++ -shared {source} -o {output}"

[roofline]
matrix_tflops = 1.0
bandwidth_gbps = 10.0

[goal]
targets = [{ baseline = "initial", ratio = 1.5 }]
"""

# Final table of E6 (V4): candidate / initial / fa3 medians in ms; cudnn unavailable.
FINAL_MS = {"s1": (0.5, 1.0, 0.25), "s2": (0.25, 2.0, 0.5)}


@dataclass(frozen=True)
class Campaign:
    workspace: Workspace
    task_folder: Path
    hashes: dict[str, str]  # version name -> sha256


def _evaluation(ws: Workspace, digest: str, correct: bool, created_at: float, final: bool) -> Evaluation:
    benchmarks = ()
    if final:
        benchmarks = tuple(
            BenchmarkResult(
                scenario_id=sid,
                flops=1e9,
                bound_ms=0.01,
                timings=(
                    Timing(impl="candidate", status=TimingStatus.MEASURED, median_ms=cand, tflops=2.0),
                    Timing(impl="initial", status=TimingStatus.MEASURED, median_ms=init),
                    Timing(impl="fa3", status=TimingStatus.MEASURED, median_ms=fa3),
                    Timing(impl="cudnn", status=TimingStatus.UNAVAILABLE, detail="not installed"),
                ),
            )
            for sid, (cand, init, fa3) in FINAL_MS.items()
        )
    verdict = Verdict.PASSED if correct else Verdict.WRONG
    return Evaluation(
        task="toy",
        candidate_path=str(ws.candidate),
        candidate_hash=digest,
        created_at=created_at,
        device=DeviceInfo(name="cpu:test"),
        ran=True,
        build=BuildResult(status=BuildStatus.OK, command="c++", artifact="k.so", log_tail="", included_headers=(),
                          duration_s=0.1),
        correctness=(
            ScenarioVerdict(scenario_id="c1", verdict=Verdict.PASSED, seed=1),
            ScenarioVerdict(scenario_id="c2", verdict=verdict, seed=1),
        ),
        benchmarks=benchmarks,
    )


def _keep(ws: Workspace, source: bytes) -> str:
    ws.candidate.write_bytes(source)
    return ws.keep_version(ws.candidate)


def build_campaign(root: Path, extra_events: tuple = ()) -> Campaign:
    """Write the task folder, the workspace, the versions, the ledger and the trace above under ``root``."""
    task = root / "task"
    task.mkdir(parents=True)
    (task / "task.toml").write_text(TASK_TOML)
    (task / "task.py").write_text("# the toy task's module (not imported by these tests)\n")
    (task / "kernel.cu").write_bytes(V0)
    ws = create_workspace(root / "ws", task=str(task), initial_kernel=task / "kernel.cu")
    hashes = {name: _keep(ws, src) for name, src in (("V0", V0), ("V1", V1), ("V2", V2), ("V3", V3), ("V4", V4))}
    evaluations = [  # (version, correct, geomean, ratios)
        ("V0", True, 1.0, {"s1": 1.0, "s2": 1.0}),
        ("V1", True, 1.125, {"s1": 1.25, "s2": 1.0}),
        ("V2", False, 2.0, {"s1": 3.0, "s2": 1.5}),
        ("V3", True, 1.5, {"s1": 1.5, "s2": 1.5}),
        ("V3", True, 1.4375, {"s1": 1.375, "s2": 1.5}),
        ("V4", True, 1.625, {"s1": 1.5, "s2": 1.75}),
    ]
    done = []
    for n, (version, correct, geomean, ratios) in enumerate(evaluations):
        digest = hashes[version]
        append_line(ws.ledger, _evaluation(ws, digest, correct, 1000.0 + n, final=(n == 5)).model_dump(mode="json"))
        done.append(EvaluationDone(candidate_hash=digest, correct=correct, failing=() if correct else ("c2",),
                                   ratios=ratios, geomean_ratio=geomean))

    calls = iter(range(100))

    def tc(count: int) -> list:
        return [ToolCall(call_id=f"c{next(calls)}", tool="Bash", input="make") for _ in range(count)]

    def q(moment: Moment, entry: str | None, text: str) -> QuestionAsked:
        return QuestionAsked(moment=moment, source="bank" if entry else "human", entry_id=entry, text=text)

    events = [
        SessionStart(agent="scripted", session=1),
        q(Moment.CAMPAIGN_START, "levels-where", "At which level of the system is the time spent?"),
        *tc(3), done[0], *tc(2), done[1],
        q(Moment.PLATEAU, None, "What does the profiler say about s1?"),
        *tc(4), done[2], *tc(1),
        StopAttempt(last_message="This is the hardware limit."),
        StopDecision(decision="block", reason="s1 below target", goal_status="unmet"),
        q(Moment.CLAIMED_LIMIT, "limits-roofline", "What fraction of the roofline does s1 reach?"),
        *tc(5), done[3], done[4],
        q(Moment.PLATEAU, "profile-counters", "Which counter moved between the last two versions?"),
        *tc(2), done[5],
        q(Moment.SUSPICIOUS_GAIN, "retired-entry", "Is the s2 speedup above its roofline?"),
        *tc(6),
        StopAttempt(last_message="done"),
        StopDecision(decision="allow", reason="goal met", goal_status="met"),
        SessionEnd(reason="goal_met", session=1),
        *extra_events,
    ]
    writer = TraceWriter(ws.trace)
    for event in events:
        writer.write(event)
    return Campaign(workspace=ws, task_folder=task, hashes=hashes)
