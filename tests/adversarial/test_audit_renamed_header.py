"""Attack: CUTLASS in a renamed folder with ``#define cutlass qlib``, and headers from beside the candidate.

Neither the header path nor any symbol names CUTLASS; only where the header came from gives it away.
Defence: ``includes_outside_roots`` (every header must lie under the compiler's include roots or the
task folder, real paths compared).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from quaere.evaluate.include_roots import allowed_roots, parse_search_list

from .audit_support import ATTACKS, audit, build_candidate, evidence, rules_of


def _workspace(tmp_path: Path, *names: str) -> Path:
    """The agent's workspace: the attack's files copied beside each other."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in names:
        src = ATTACKS / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, ws / name)
    return ws


def test_renamed_cutlass_folder_is_found_by_where_it_lies(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, "renamed_header.cpp", "qlib")
    task = tmp_path / "task"
    task.mkdir()
    report = audit(build_candidate(ws / "renamed_header.cpp", tmp_path / "out"), ws / "renamed_header.cpp", task)
    # The old rules see nothing: no header path or symbol says cutlass...
    assert not {"cutlass_cute_headers", "cutlass_cute_host_symbols"} & rules_of(report)
    # ... but the header came from the workspace, not from the toolchain or the task.
    assert evidence(report, "includes_outside_roots") == [str(ws / "qlib" / "gemm.h")]


def test_a_header_beside_the_candidate_is_refused(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, "beside_header.cpp", "helper_beside.h")
    source = ws / "beside_header.cpp"
    report = audit(build_candidate(source, tmp_path / "out"), source, tmp_path / "task")
    assert evidence(report, "includes_outside_roots") == [str(ws / "helper_beside.h")]


def test_a_symlink_in_the_task_folder_is_judged_by_its_target(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, "beside_header.cpp", "helper_beside.h")
    task = tmp_path / "task"
    task.mkdir()
    (task / "helper_beside.h").symlink_to(ws / "helper_beside.h")
    source = task / "candidate.cpp"
    shutil.copy(ws / "beside_header.cpp", source)  # the header is found in the task folder, by its link
    report = audit(build_candidate(source, tmp_path / "out"), source, task)
    assert evidence(report, "includes_outside_roots") == [f"{task / 'helper_beside.h'} -> {ws / 'helper_beside.h'}"]


def test_headers_of_the_task_and_the_toolchain_pass(tmp_path: Path) -> None:
    task = tmp_path / "task"
    task.mkdir()
    shutil.copy(ATTACKS / "beside_header.cpp", task / "candidate.cpp")
    shutil.copy(ATTACKS / "helper_beside.h", task / "helper_beside.h")  # a header the task ships
    build = build_candidate(task / "candidate.cpp", tmp_path / "out")
    report = audit(build, task / "candidate.cpp", task)
    assert any(h.endswith("helper_beside.h") for h in build.included_headers)
    assert report.findings == () and report.notes == ()
    clean = build_candidate(ATTACKS / "clean_rich.cpp", tmp_path / "out2")
    assert any("/c++/" in h for h in clean.included_headers)  # the C++ library's headers were read
    assert audit(clean, ATTACKS / "clean_rich.cpp", task).findings == ()


def test_roots_come_from_the_compiler_and_the_command(tmp_path: Path) -> None:
    roots = allowed_roots("c++ -O2 -Iinclude -isystem /opt/x -shared a.cpp -o a.so", tmp_path)
    assert "/usr/include" in roots and str(tmp_path / "include") in roots and "/opt/x" in roots
    assert roots[-1] == str(tmp_path)
    text = (
        '#include "..." search starts here:\n /q\n'
        "#include <...> search starts here:\n /a\n /b/c\nEnd of search list.\n"
    )
    assert parse_search_list(text) == ("/q", "/a", "/b/c")
