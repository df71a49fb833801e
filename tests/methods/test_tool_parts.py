"""The tooled arm's parts on their own: search index, lessons, lineage, binary parsers, ncu, roofline, machine."""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path

import pytest

from quaere.methods.base import MethodError
from quaere.methods.binary import resource_usage, sass_mix, spill_lines, x86_mix
from quaere.methods.docsearch import SHIPPED_DOCS, DocIndex, split_sections
from quaere.methods.lessons import LessonError, add_lesson, lessons_file, read_lessons, search_lessons
from quaere.methods.lineage import Checkout, LineageError, build_lineage, checkout, find_version, read_checkouts
from quaere.methods.machine import check_docs, find_programs, require_quaere, tool_states
from quaere.methods.ncu import NcuStatus, parse_csv, profile_kernel
from quaere.methods.roofline import roofline_rows
from quaere.records import Verdict
from quaere.task.spec import Roofline
from quaere.workspace import content_hash, create_workspace

from .factories import evaluation

SASS = """
        code for sm_90a
                Function : _Z6kernelPKfPf
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/              @!P0 BRA 0x120 ;
        /*0030*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;
        /*0040*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24 ;
        /*0050*/                   LDL.64 R2, [R1+0x8] ;
        /*0060*/                   FFMA R4, R5, R6, R4 ;
        /*0070*/                   EXIT ;
"""
RES_USAGE = """Resource usage:
 Common:
  GLOBAL:0
 Function _Z6kernelPKfPf:
  REG:168 STACK:16 SHARED:0 LOCAL:8 CONSTANT[0]:908 TEXTURE:0 SURFACE:0 SAMPLER:0
"""
NCU_CSV = (  # one CSV row per "\n"; the rows are long, so each is written in two pieces
    '==PROF== Connected to process 123\n'
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
    '"0","123","python","h","attn_fwd","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0",'
    '"GPU Speed Of Light Throughput","Compute (SM) Throughput","%","71.2"\n'
    '"0","123","python","h","attn_fwd","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0",'
    '"Occupancy","Achieved Occupancy","%","18.7"\n'
)


def test_sass_mix_classes_and_resources():
    mix = sass_mix(SASS)
    assert mix.total == 8 and dict(mix.top)["HGMMA"] == 2 and dict(mix.top)["BRA"] == 1  # predicate dropped
    classes = dict(mix.by_class)
    assert classes["tensor core"] == 2 and classes["local memory (spills)"] == 1 and classes["fp32 math"] == 1
    (kernel,) = resource_usage(RES_USAGE)
    assert (kernel.function, kernel.registers, kernel.stack_bytes, kernel.local_bytes) == ("_Z6kernelPKfPf", 168, 16, 8)
    log = "ptxas info    : Used 168 registers\n    24 bytes stack frame, 16 bytes spill stores, 12 bytes spill loads"
    assert spill_lines(log) == ((16, 12),)


def test_x86_mix_from_objdump_lines():
    text = "0000000000001139 <softmax_rows>:\n    1139:\tvmulps %ymm0,%ymm1,%ymm2\n    113d:\tmulss  %xmm0,%xmm1\n" \
           "    1141:\tjne    1139 <softmax_rows>\n    1143:\tret    \n"
    mix = x86_mix(text)
    assert mix.total == 4
    assert dict(mix.by_class) == {"vector (packed)": 1, "scalar float": 1, "branches": 1, "other": 1}


def test_bm25_ranks_the_section_that_matches_and_the_index_is_cached(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "notes.md"
    page.write_text("# Intro\nGeneral words.\n## Bank conflicts\nPad shared memory rows to avoid bank conflicts.\n")
    cache = tmp_path / "index.json"
    index = DocIndex.load([SHIPPED_DOCS, docs], [], cache)
    assert index.search("bank conflicts padding")[0].section.title == "Bank conflicts"
    assert index.search("zzzz-unknown") == []
    assert "notes.md" in cache.read_text()
    page.write_text("# Intro\nNothing about memory now, only swizzle xyzzy.\n")
    assert DocIndex.load([docs], [], cache).search("xyzzy")[0].section.title == "Intro"  # rebuilt on change
    cache.write_text("{ torn")
    assert DocIndex.load([docs], [], cache).search("xyzzy")  # a damaged cache is rebuilt
    assert [s.title for s in split_sections(page, "preamble\n# A\ntext\n")] == ["notes", "A"]


def test_shipped_notes_answer_the_obvious_questions():
    index = DocIndex.load([SHIPPED_DOCS], [], None)
    assert "Registers and local memory" in [h.section.title for h in index.search("register spills local memory", 2)]
    assert index.search("wgmma descriptor swizzle")[0].section.path.endswith("tensor-cores.md")


@pytest.fixture
def ws(tmp_path: Path):
    kernel = tmp_path / "kernel.cpp"
    kernel.write_text("int v1;\n")
    return create_workspace(tmp_path / "ws", "toy", kernel)


def test_lessons_are_kept_numbered_and_searchable(ws):
    add_lesson(ws, "Vectorizing the exp loop gave 3x", ("cpu",), 1, "abc", 3.0)
    add_lesson(ws, "  Spills appear above 200 registers  ", (), 2, "", None)
    lessons, problems = read_lessons(ws)
    assert [(lesson.number, lesson.session, lesson.text) for lesson in lessons] == [
        (1, 1, "Vectorizing the exp loop gave 3x"), (2, 2, "Spills appear above 200 registers")]
    assert [lesson.number for lesson in search_lessons(lessons, "registers spills")] == [2]
    with pytest.raises(LessonError, match="needs some text"):
        add_lesson(ws, "   ", (), 1, "", None)
    with lessons_file(ws).open("a") as f:
        f.write('{"number": "x"}\n')
    assert len(read_lessons(ws)[0]) == 2 and "lesson 3" in read_lessons(ws)[1][0]


def _ratio(e) -> float | None:
    return 1.0 if e.correct else None


def test_lineage_parents_follow_evaluations_and_checkouts(ws):
    runs = [evaluation("a", 1), evaluation("b", 2, verdicts=(Verdict.WRONG,)),
            evaluation("b", 3, verdicts=(Verdict.WRONG,)), evaluation("c", 5)]
    versions = build_lineage(runs, [Checkout(ts=4, candidate_hash="a")], _ratio)
    assert [(v.name, v.parent, v.evaluations, v.failure) for v in versions] == [
        ("v1", None, 1, None), ("v2", "v1", 2, "wrong"), ("v3", "v1", 1, None)]  # c branched from a
    assert find_version(versions, "v2").candidate_hash == "b"
    with pytest.raises(LineageError, match=r"no version 'v9' in the lineage \(versions: v1..v3\)"):
        find_version(versions, "v9")


def test_checkout_restores_a_version_and_stashes_unevaluated_work(ws):
    first = ws.keep_version(ws.candidate)
    versions = build_lineage([evaluation(first, 1)], [], _ratio)
    ws.candidate.write_text("int unsaved_work;\n")
    unsaved = content_hash(ws.candidate)
    result = checkout(ws, versions, "v1", now=7.0)
    assert ws.candidate.read_text() == "int v1;\n"
    assert result.stashed is not None and result.stashed.read_text() == "int unsaved_work;\n"
    assert result.stashed.name.startswith(unsaved)
    assert read_checkouts(ws) == (Checkout(ts=7.0, candidate_hash=first, stashed=str(result.stashed)),)
    assert checkout(ws, versions, "v1").stashed is None  # the current file is v1: nothing to keep


def test_roofline_rows_say_which_floor_limits_and_how_close():
    run = evaluation("a", 1, medians={"s1": (8.0, 16.0)})
    (row,) = roofline_rows(run, Roofline(matrix_tflops=4.0, bandwidth_gbps=400.0), {"s1": 8e8})
    assert row.compute_floor_ms == pytest.approx(1.0) and row.memory_floor_ms == pytest.approx(2.0)
    assert row.limiter == "memory" and row.achieved == pytest.approx(0.25) and row.ratios == {"initial": 2.0}
    assert row.tflops == pytest.approx(0.5) and row.gbps == pytest.approx(100.0)
    (unknown,) = roofline_rows(run, Roofline(matrix_tflops=4.0, bandwidth_gbps=400.0), {})
    assert math.isnan(unknown.memory_floor_ms) and unknown.limiter == "memory"  # bound_ms says so anyway


def _program(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_a_missing_profiler_is_said_not_fatal(tmp_path: Path):
    programs = find_programs(str(tmp_path), cuda_task=True)
    assert programs.ncu is None and "ncu is not on PATH" in programs.ncu_note
    states = {t.name: t for t in tool_states(programs, True, ())}
    assert not states["ncu"].available and "without Nsight Compute" in states["ncu"].detail
    _program(tmp_path / "bin", "ncu", 'echo "NVIDIA (R) Nsight Compute Command Line Profiler"; echo "Version 2025.1"')
    found = find_programs(str(tmp_path / "bin"), cuda_task=True)
    assert found.ncu == tmp_path / "bin" / "ncu" and "Version 2025.1" in found.ncu_note
    assert find_programs(str(tmp_path / "bin"), cuda_task=False).ncu is None  # a CPU task never uses it


def test_what_stops_the_tooled_arm_before_it_starts(tmp_path: Path):
    with pytest.raises(MethodError, match="`quaere` is not on PATH"):
        require_quaere(str(tmp_path))
    with pytest.raises(MethodError, match=r"--docs .*nowhere: no such folder"):
        check_docs((tmp_path, tmp_path / "nowhere"))


def test_ncu_output_parsed_and_its_failures_named(tmp_path: Path):
    metrics = parse_csv(NCU_CSV)
    assert [(m.kernel, m.section, m.name, m.value) for m in metrics] == [
        ("attn_fwd", "GPU Speed Of Light Throughput", "Compute (SM) Throughput", "71.2"),
        ("attn_fwd", "Occupancy", "Achieved Occupancy", "18.7")]
    csv_file = tmp_path / "out.csv"
    csv_file.write_text(NCU_CSV)
    ok = _program(tmp_path / "a", "ncu", f"cat {csv_file}")
    assert profile_kernel(ok, "t", tmp_path / "k.so", "s", 30).status is NcuStatus.MEASURED
    denied = _program(tmp_path / "b", "ncu", "echo '==ERROR== ERR_NVGPUCTRPERM - no permission'; exit 1")
    assert profile_kernel(denied, "t", tmp_path / "k.so", "s", 30).status is NcuStatus.NO_PERMISSION
    broken = _program(tmp_path / "c", "ncu", "echo 'launch: no scenario' >&2; exit 2")
    result = profile_kernel(broken, "t", tmp_path / "k.so", "s", 30)
    assert result.status is NcuStatus.FAILED and "no scenario" in result.note
    assert os.access(broken, os.X_OK)


def test_the_launch_driver_calls_a_built_cpu_kernel_once(tmp_path: Path):
    import subprocess
    import sys

    from quaere.evaluate.build import build_source
    from quaere.task import load_task

    task = load_task("cpu_softmax")
    build = build_source(task.spec, task.initial_kernel, tmp_path / "cache", task.folder)
    scenario = task.module.benchmark_scenarios()[0].id

    def launch(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "quaere.methods.launch", *args], capture_output=True,
                              text=True, timeout=120)

    done = launch("cpu_softmax", build.artifact, scenario)
    assert done.returncode == 0 and f"{scenario}: entry point returned 0" in done.stdout, done.stderr
    missing = launch("cpu_softmax", build.artifact, "no-such-scenario")
    assert missing.returncode == 2 and "has no scenario 'no-such-scenario'" in missing.stderr


def test_build_facts_of_a_cuda_artifact_read_sass_resources_and_spills(tmp_path: Path):
    from quaere.methods.machine import Programs
    from quaere.methods.profile import Digest, build_facts
    from quaere.methods.tool_text import render_digest
    from quaere.records import BuildResult, BuildStatus

    (tmp_path / "sass.txt").write_text(SASS)
    (tmp_path / "res.txt").write_text(RES_USAGE)
    tool = _program(tmp_path / "bin", "cuobjdump",
                    f'if [ "$1" = "-sass" ]; then cat {tmp_path}/sass.txt; else cat {tmp_path}/res.txt; fi')
    artifact = tmp_path / "build" / "kernel.so"
    artifact.parent.mkdir()
    artifact.write_bytes(b"\x7fELF")
    (artifact.parent / "build.log").write_text("ptxas info: 40 bytes spill stores, 40 bytes spill loads\n")
    build = BuildResult(status=BuildStatus.OK, command="nvcc", artifact=str(artifact), log_tail="",
                        included_headers=(), duration_s=1.0)
    facts = build_facts(build, True, Programs(None, "ncu is not on PATH", tool, None), "attn")
    assert facts.mix is not None and dict(facts.mix.by_class)["tensor core"] == 2
    assert facts.resources[0].registers == 168 and facts.spills == ((40, 40),)
    text = render_digest(Digest("ab" * 32, "not evaluated", (), "built", facts))
    assert "168 registers, stack 16 B, shared 0 B, local 8 B (local memory in use" in text
    assert "ptxas: 40 bytes spill stores, 40 bytes spill loads" in text and "tensor core 25%" in text
    assert "not measured (absent)" in text
    none = build_facts(build, True, Programs(None, "", None, None), "attn")
    assert none.mix is None and "cuobjdump not found" in none.mix_note
