"""Attack: compiler switches in the environment around ``quaere eval``, which every build and the include-roots probe
used to inherit. ``CPLUS_INCLUDE_PATH`` (or ``NVCC_PREPEND_FLAGS=-I...``) names a folder of the agent's: the compiler
searches it, and the roots probe counts it as the toolchain's, so a renamed CUTLASS there passes
``includes_outside_roots``; ``NVCC_APPEND_FLAGS=-G`` would build the initial kernel crippled, and the build cache keep
it. Defence: the build and the probe run in ``isolation.build_environment`` (the caller's, less the compilers'
switches), and the build log names what was left out. Real compiles of the CPU task's command (``c++``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from quaere.evaluate import include_roots
from quaere.evaluate.build import build_source
from quaere.evaluate.include_roots import allowed_roots, parse_search_list
from quaere.records import BuildStatus
from quaere.task.loader import load_task

HEADER = "qlib_gemm.h"
CANDIDATE = f'#include <{HEADER}>\nextern "C" int softmax_rows(const float*, float*, int, int) {{ return QLIB; }}\n'


@pytest.fixture
def agent_folder(tmp_path: Path) -> Path:
    """A folder of the agent's with a header in it (a renamed library's, say)."""
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / HEADER).write_text("#define QLIB 0\n")
    return folder


def test_the_compiler_alone_takes_the_folder_from_the_environment(agent_folder: Path) -> None:
    # The premise: with the variable set, c++ searches the agent's folder.
    if shutil.which("c++") is None:
        pytest.skip("no c++ on PATH")
    probe = subprocess.run(["c++", "-E", "-v", "-x", "c++", os.devnull, "-o", os.devnull], capture_output=True,
                           text=True, env={**os.environ, "CPLUS_INCLUDE_PATH": str(agent_folder)}, check=False)
    assert str(agent_folder) in parse_search_list(probe.stdout + probe.stderr)


def test_the_include_roots_leave_out_a_folder_named_by_the_environment(agent_folder: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("c++") is None:
        pytest.skip("no c++ on PATH")
    monkeypatch.setenv("CPLUS_INCLUDE_PATH", str(agent_folder))
    monkeypatch.setenv("CPATH", str(agent_folder))
    include_roots.compiler_include_dirs.cache_clear()  # probed once per process: probe again under this environment
    try:
        roots = allowed_roots("c++ -shared -fPIC {source} -o {output}", None)
    finally:
        include_roots.compiler_include_dirs.cache_clear()
    assert roots and not any(Path(r) == agent_folder.resolve() for r in roots)


def test_a_build_does_not_search_a_folder_named_by_the_environment(agent_folder: Path, tmp_path: Path) -> None:
    task = load_task("cpu_softmax")
    source = tmp_path / "candidate.cpp"
    source.write_text(CANDIDATE)
    env = {**os.environ, "CPLUS_INCLUDE_PATH": str(agent_folder), "GCC_EXEC_PREFIX": str(agent_folder) + "/",
           "LD_PRELOAD": ""}
    result = build_source(task.spec, source, tmp_path / "cache", task.folder, env=env)
    assert result.status is BuildStatus.BUILD_FAILED and HEADER in result.log_tail, result.log_tail
    [left_out] = [line for line in result.log_tail.splitlines() if "left out of the build's environment" in line]
    assert {"CPLUS_INCLUDE_PATH", "GCC_EXEC_PREFIX", "LD_PRELOAD"} <= set(left_out.split(": ", 1)[1].split(", "))


@pytest.mark.parametrize(("name", "dropped"), [
    ("NVCC_APPEND_FLAGS", True), ("NVCC_CCBIN", True), ("CPATH", True), ("COMPILER_PATH", True), ("LD_AUDIT", True),
    ("LD_LIBRARY_PATH", False), ("PATH", False), ("HOME", False), ("CUDA_HOME", False), ("TMPDIR", False)])
def test_which_names_the_build_leaves_out(name: str, dropped: bool) -> None:
    from quaere.evaluate.isolation import build_environment

    env, left_out = build_environment({name: "x", "LANG": "C"})
    assert (name in left_out) is dropped and (name in env) is not dropped and env["LANG"] == "C"
