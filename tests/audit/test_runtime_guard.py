"""The run-time guard in a real subprocess: the LD_PRELOAD shim, its log, and the maps diff."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from quaere.evaluate.runtime_guard import (
    RUNTIME_RULES,
    GuardNotActive,
    GuardUnavailable,
    banned_mappings,
    guard_environment,
    mapping_findings,
    parse_log,
    runtime_findings,
)

PROBE = Path(__file__).with_name("guard_probe.py")
BANNED = ("cublas", "cublaslt", "cudnn")


def _probe(env_add: dict[str, str], candidate: Path, *harness_libs: Path, lib_dir: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env.update(env_add)
    if lib_dir is not None:
        env["LD_LIBRARY_PATH"] = str(lib_dir)
    done = subprocess.run([sys.executable, str(PROBE), str(candidate), *map(str, harness_libs)],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def guard(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> tuple[dict[str, str], Path]:
    cache = tmp_path_factory.getbasetemp() / "dlguard-cache"
    log = tmp_path / "dlguard.log"
    return guard_environment(cache, log), log


def test_candidate_dlopen_and_dlsym_are_reported(built, guard) -> None:
    env, log = guard
    candidate = built["dlopen_cublas"].artifact
    out = _probe(env, candidate, lib_dir=built["fake_cublas"].artifact.parent)
    assert out["rc"] == 0  # the stand-in cuBLAS was really loaded and called
    findings = runtime_findings(log, candidate, BANNED)
    assert {f.rule for f in findings} == {"runtime_dlopen", "runtime_dlsym"}
    assert any("libcublas.so.13" in f.evidence for f in findings if f.rule == "runtime_dlopen")
    assert any("cublasCreate_v2" in f.evidence for f in findings if f.rule == "runtime_dlsym")
    # The maps diff sees the same load without any help from the shim.
    mapped = mapping_findings(frozenset(out["before"]), frozenset(out["after"]))
    assert [f.rule for f in mapped] == ["runtime_mapping"] and "libcublas.so.13" in mapped[0].evidence


def test_loads_by_other_objects_are_not_reported(built, guard) -> None:
    env, log = guard
    candidate = built["clean_host"].artifact
    out = _probe(env, candidate, built["fake_cublas"].artifact)
    calls = parse_log(log.read_text())
    # The shim did see the harness load cuBLAS, look up its symbol, and load libm...
    assert any(c.kind == "dlopen" and c.name.endswith("libcublas.so.13") for c in calls)
    assert any(c.kind == "dlsym" and c.name == "cublasCreate_v2" for c in calls)
    assert any(c.kind == "dlopen" and c.name == "libm.so.6" for c in calls)
    # ... but none of it was the candidate's doing, and nothing new was mapped during its call.
    assert runtime_findings(log, candidate, BANNED) == ()
    assert out["before"] and mapping_findings(frozenset(out["before"]), frozenset(out["after"])) == ()


def test_guard_keeps_the_callers_runpath(built, guard) -> None:
    # dlopen_cublas finds libcublas.so.13 only through its own RUNPATH ($ORIGIN). glibc picks that
    # RUNPATH from dlopen's return address: a shim that did not tail-call the real dlopen would lose it.
    env, log = guard
    out = _probe(env, built["dlopen_cublas"].artifact)
    assert out["rc"] == 0
    assert any(c.kind == "loaded" for c in parse_log(log.read_text()))


def test_environment_preloads_the_shim_alone_and_builds_it_once(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # A library the caller preloads would be mapped before the judge first reads the runner's maps: not passed on.
    monkeypatch.setenv("LD_PRELOAD", "/x/other.so")
    first = guard_environment(tmp_path / "cache", tmp_path / "a.log")
    shim = first["LD_PRELOAD"]
    assert ":" not in shim and "/x/other.so" not in shim and Path(shim).is_file()
    assert first["QUAERE_DLGUARD_LOG"] == str(tmp_path / "a.log")
    mtime = Path(shim).stat().st_mtime_ns
    second = guard_environment(tmp_path / "cache", tmp_path / "b.log")
    assert second["LD_PRELOAD"] == shim and Path(shim).stat().st_mtime_ns == mtime
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [Path(shim).name]  # no temp left


def test_no_compiler_is_a_typed_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GuardUnavailable, match="no C compiler"):
        guard_environment(tmp_path / "cache", tmp_path / "log")


def test_a_log_without_the_shim_proves_nothing(tmp_path: Path) -> None:
    with pytest.raises(GuardNotActive):
        runtime_findings(tmp_path / "absent.log", tmp_path / "c.so", BANNED)
    log = tmp_path / "empty.log"
    log.write_text("")
    with pytest.raises(GuardNotActive):
        runtime_findings(log, tmp_path / "c.so", BANNED)
    log.write_text("1\tloaded\tdlguard\t?\t-\n1\terror\tthe real dlsym was not found\t?\t-\n")
    with pytest.raises(GuardNotActive, match="real dlsym"):
        runtime_findings(log, tmp_path / "c.so", BANNED)


def test_log_parsing_filters_by_caller_and_family(tmp_path: Path) -> None:
    candidate = tmp_path / "cand.so"
    candidate.write_bytes(b"")
    log = tmp_path / "g.log"
    log.write_text(
        "1\tloaded\tdlguard\t?\n"
        f"1\tdlopen\t/opt/libcublasLt.so.13\t{candidate}\n"
        f"1\tdlsym\tcudnnCreate\t{candidate}\n"
        "1\tdlopen\tlibcudnn.so.9\t/usr/lib/libtorch_cuda.so\n"
        "torn line without tabs\n"
    )
    assert {f.rule for f in runtime_findings(log, candidate, ("cublaslt", "cudnn"))} == {
        "runtime_dlopen", "runtime_dlsym"
    }
    assert runtime_findings(log, candidate, ("cublas",)) == ()  # cuBLASLt is not cuBLAS


def test_banned_mappings_reads_proc_maps_text() -> None:
    maps = (
        "7f00-7f10 r-xp 00000000 08:01 12 /usr/lib/x86_64-linux-gnu/libm.so.6\n"
        "7f10-7f20 r-xp 00000000 08:01 13 /site/nvidia/cublas/lib/libcublas.so.13\n"
        "7f20-7f30 r--p 00000000 08:01 14 /site/nvidia/cudnn/lib/libcudnn_graph.so.9 (deleted)\n"
        "7f30-7f40 rw-p 00000000 00:00 0 \n"
        "7f40-7f50 rw-p 00000000 00:00 0 [heap]\n"
    )
    assert banned_mappings(BANNED, maps) == {
        "/site/nvidia/cublas/lib/libcublas.so.13", "/site/nvidia/cudnn/lib/libcudnn_graph.so.9"
    }
    assert banned_mappings(("cudnn",), maps) == {"/site/nvidia/cudnn/lib/libcudnn_graph.so.9"}


def test_runtime_rules_are_named_and_explained() -> None:
    assert [r.name for r in RUNTIME_RULES] == ["runtime_dlopen", "runtime_dlsym", "runtime_mapping"]
    assert all(r.rationale for r in RUNTIME_RULES)
