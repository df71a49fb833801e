"""What a newcomer sees when a candidate is wrong in the usual ways: one whole line per reason, said once.

Each case runs ``quaere eval`` for real (a subprocess, the system compiler, sandboxed runners) outside a
workspace, on the CPU task's two-scenario file, and reads what the terminal would show.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.evaluate.conftest import CANDIDATES
from tests.evaluate.test_cli import quaere

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.build import build_source
from quaere.evaluate.judging import MAX_TIMEOUTS
from quaere.messages import group_failures, one_line, printable
from quaere.records import BuildStatus, ScenarioVerdict, Verdict

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def shown(candidate: Path, tmp_path: Path, cache: Path, scenarios: Path) -> str:
    done = quaere("eval", str(candidate), "--task", "cpu_softmax", "--no-benchmark", "--scenarios", str(scenarios),
                  cwd=tmp_path, cache=cache)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    return done.stdout + done.stderr


def test_a_missing_entry_point_is_said_whole_and_once(tmp_path: Path, cache_dir: Path, two_scenarios: Path) -> None:
    source = tmp_path / "renamed.cpp"
    source.write_text('extern "C" int softmax_rowz(const float*, float*, int, int) { return 0; }\n')
    text = shown(source, tmp_path, cache_dir, two_scenarios)
    lines = [line for line in text.splitlines() if "undefined symbol" in line]
    assert len(lines) == 1, text
    assert lines[0].rstrip().endswith("undefined symbol: softmax_rows")
    assert "on all 2 scenarios" in lines[0] and "crashed" in lines[0]
    assert ".cache" not in lines[0] and str(cache_dir) not in lines[0]  # the cache path shortened to kernel.so


def test_a_binary_file_puts_no_control_byte_on_the_terminal(
    tmp_path: Path, cache_dir: Path, two_scenarios: Path
) -> None:
    source = tmp_path / "binary.cpp"
    source.write_bytes(bytes(range(256)) * 4 + b"\x1b[2J\x1b]0;title\x07")
    text = shown(source, tmp_path, cache_dir, two_scenarios)
    assert "build failed" in text and not CONTROL.search(text), repr(text[:400])
    record = json.loads(quaere("eval", str(source), "--task", "cpu_softmax", "--json", cwd=tmp_path,
                               cache=cache_dir).stdout)
    assert not CONTROL.search(record["build"]["log_tail"].replace("\n", "").replace("\t", ""))


def test_a_compile_error_never_reads_as_audit_clean(tmp_path: Path, cache_dir: Path, two_scenarios: Path) -> None:
    text = shown(CANDIDATES / "compile_error.cpp", tmp_path, cache_dir, two_scenarios)
    assert "audit clean" not in text and "audit failed" not in text
    assert "build failed" in text and "not audited" in text and "undefined_name" in text
    assert "NOT RUN: the build failed" in text


def test_a_directory_is_named_as_a_directory(tmp_path: Path, cache_dir: Path) -> None:
    folder = tmp_path / "kernels"
    folder.mkdir()
    done = quaere("eval", str(folder), "--task", "cpu_softmax", cwd=tmp_path, cache=cache_dir)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {folder}: is a directory, not a kernel source file; name the file inside it"
    missing = quaere("eval", str(tmp_path / "nope.cpp"), "--task", "cpu_softmax", cwd=tmp_path, cache=cache_dir)
    assert missing.returncode == 2 and "no such candidate file" in missing.stderr


def test_after_two_timeouts_the_rest_is_not_run_with_the_reason(cpu_task, cache_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "spin.cpp"
    source.write_text('extern "C" int softmax_rows(const float*, float*, int, int) { volatile int s = 1; '
                      "while (s) {} return 0; }\n")
    scenarios = tmp_path / "four.json"
    scenarios.write_text(json.dumps([{"id": f"s{i}", "params": {"rows": 2, "cols": 3}} for i in range(4)]))
    options = EvalOptions(seed=1, benchmark=False, scenarios_file=scenarios, scenario_timeout_s=1.0,
                          cache_dir=cache_dir)
    evaluation = run_evaluation(cpu_task, source, options)
    verdicts = [v.verdict for v in evaluation.correctness]
    assert MAX_TIMEOUTS == 2
    assert verdicts == [Verdict.TIMED_OUT, Verdict.TIMED_OUT, Verdict.NOT_RUN, Verdict.NOT_RUN]
    skipped = evaluation.correctness[2].detail
    assert "s0, s1" in skipped and "timed out" in skipped and "1 s" in skipped
    assert group_failures(evaluation.correctness[2:])[0].scenario_ids == ("s2", "s3")  # one line for both


def test_a_cached_build_names_the_file_that_was_evaluated(cpu_task, tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "first.cpp", tmp_path / "b" / "second.cpp"
    for path in (first, second):
        path.parent.mkdir()
        path.write_bytes(cpu_task.initial_kernel.read_bytes() + b"\n#warning same bytes\n")
    built = build_source(cpu_task.spec, first, tmp_path / "cache", cpu_task.folder)
    cached = build_source(cpu_task.spec, second, tmp_path / "cache", cpu_task.folder)
    assert built.status is cached.status is BuildStatus.OK and built.artifact == cached.artifact  # one build
    assert cached.command == built.command and str(first) not in built.command  # it compiled the build's own copy
    assert str(first) in built.log_tail and str(second) in cached.log_tail and str(first) not in cached.log_tail


def test_one_line_keeps_the_whole_message_and_the_end_of_a_tail() -> None:
    assert one_line("a\n\n  b\nc\nlast words\n") == "a ... last words (2 more lines in the record)"
    assert one_line("x: /c/builds/k1/kernel.so: undefined symbol: f", "/c/builds/k1/kernel.so") == (
        "x: kernel.so: undefined symbol: f")
    assert printable("a\x1b[31mred\x00\r\nb\x9b") == "a[31mred\nb"


def test_failures_are_grouped_by_verdict_and_message_in_order() -> None:
    def v(i: int, verdict: Verdict, detail: str) -> ScenarioVerdict:
        return ScenarioVerdict(scenario_id=f"s{i}", verdict=verdict, seed=1, detail=detail)

    groups = group_failures([v(0, Verdict.CRASHED, "boom"), v(1, Verdict.TIMED_OUT, "boom"),
                             v(2, Verdict.CRASHED, "boom\n"), v(3, Verdict.CRASHED, "other"),
                             v(4, Verdict.CRASHED, "boom"), v(5, Verdict.CRASHED, "boom")])
    assert [(g.verdict, g.scenario_ids) for g in groups] == [
        (Verdict.CRASHED, ("s0", "s2", "s4", "s5")), (Verdict.TIMED_OUT, ("s1",)), (Verdict.CRASHED, ("s3",))]
    assert groups[0].line() == "crashed on 4 scenarios (s0, s2, s4 and 1 more): boom"
    assert groups[1].line() == "s1: timed_out: boom"
