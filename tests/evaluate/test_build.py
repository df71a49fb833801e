"""The one build command: depfile parsing, failures as verdicts, a cache that notices header edits."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from quaere.evaluate.build import build_source, parse_depfile
from quaere.evaluate.preprocess import own_lines
from quaere.records import BuildStatus


def test_parse_depfile_handles_continuations_escapes_and_several_rules() -> None:
    text = "out.o: src/k.cu /usr/include/a.h \\\n  /opt/my\\ dir/b.h\nother.o: src/k.cu c.h\n"
    assert parse_depfile(text) == ("src/k.cu", "/usr/include/a.h", "/opt/my dir/b.h", "c.h")
    assert parse_depfile("") == ()


def test_cached_build_is_reused_until_a_header_changes(cpu_task, tmp_path: Path) -> None:
    """A header the build may read (one the task ships, named by its absolute path) is part of the cache's key."""
    task_folder = tmp_path / "task"
    shutil.copytree(cpu_task.folder, task_folder)
    header = task_folder / "scale.h"
    header.write_text("#define SCALE 1.0f\n")
    source = tmp_path / "ws" / "k.cpp"
    source.parent.mkdir()
    source.write_text(f'#include "{header}"\n'
                      'extern "C" int softmax_rows(const float*, float*, int, int) { return SCALE > 2; }\n')
    first = build_source(cpu_task.spec, source, tmp_path / "cache", task_folder)
    assert first.status is BuildStatus.OK and str(header) in first.included_headers, first.log_tail
    assert Path(first.artifact).exists() and (Path(first.artifact).parent / "build.log").exists()
    assert call(first.artifact, tmp_path / "copy0.so") == 0
    again = build_source(cpu_task.spec, source, tmp_path / "cache", task_folder)
    assert again == first  # same record: nothing rebuilt
    header.write_text("#define SCALE 3.0f\n")
    rebuilt = build_source(cpu_task.spec, source, tmp_path / "cache", task_folder)
    assert rebuilt.status is BuildStatus.OK
    assert call(rebuilt.artifact, tmp_path / "copy2.so") == 1 and call(first.artifact, tmp_path / "copy1.so") == 1


def test_the_command_compiles_the_evaluators_copy_of_the_bytes(cpu_task, tmp_path: Path) -> None:
    """The command names the build's own copy of the source (alone in its folder), never the source; its diagnostics
    name the source; a cached build whose copy no longer holds the bytes is built again."""
    source = tmp_path / "k.cpp"
    source.write_text('extern "C" int softmax_rows(const float*, float*, int, int) { return 0; }\n')
    built = build_source(cpu_task.spec, source, tmp_path / "cache", cpu_task.folder)
    snapshot = Path(built.snapshot)
    assert built.status is BuildStatus.OK and snapshot.read_bytes() == source.read_bytes()
    assert str(snapshot) in built.command and str(source) not in built.command
    assert snapshot.parent.parent == Path(built.artifact).parent and [p.name for p in snapshot.parent.iterdir()] == [
        "candidate.cpp"]
    snapshot.write_text("// edited in the cache\n")
    again = build_source(cpu_task.spec, source, tmp_path / "cache", cpu_task.folder)
    assert again.status is BuildStatus.OK and snapshot.read_bytes() == source.read_bytes()
    broken = tmp_path / "broken.cpp"
    broken.write_text("int f() { return undefined_name; }\n")
    failed = build_source(cpu_task.spec, broken, tmp_path / "cache", cpu_task.folder)
    assert failed.status is BuildStatus.BUILD_FAILED and f"{broken}:1:" in failed.log_tail, failed.log_tail


def call(artifact: str, copy: Path) -> int:
    """Run the built function from a private copy (dlopen would hand back a library already loaded)."""
    shutil.copyfile(artifact, copy)
    return ctypes.CDLL(str(copy)).softmax_rows(None, None, 0, 0)


def test_missing_compiler_is_a_build_failure_naming_it_and_the_path_searched(cpu_task, tmp_path: Path) -> None:
    """Resolved before anything runs (its identity keys the cache): no silent fallback to another program."""
    spec = cpu_task.spec.model_copy(update={"build": "no-such-compiler-quaere {source} -o {output}"})
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    result = build_source(spec, cpu_task.initial_kernel, tmp_path / "cache", cpu_task.folder, env=env)
    assert result.status is BuildStatus.BUILD_FAILED and result.artifact == "" and result.toolchain == ()
    assert result.log_tail == ("[quaere] nothing was built: the build command's program 'no-such-compiler-quaere' "
                               "was not found on the build's PATH (/usr/bin:/bin)")


@pytest.mark.parametrize("roots, named", [("not json", "JSONDecodeError"), ('{"reads": []}', "'writes'")])
def test_the_confinement_wrapper_names_what_is_wrong_with_its_roots(roots: str, named: str) -> None:
    done = subprocess.run([sys.executable, "-m", "quaere.runner.confine", roots, "echo ran"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "ran" not in done.stdout
    assert "'reads' and 'writes'" in done.stderr and named in done.stderr and "Traceback" not in done.stderr


def test_the_build_runs_in_the_environment_it_is_handed(cpu_task, tmp_path: Path) -> None:
    """The caller's environment, not this process's: a variable only in ``env`` reaches the command, with its
    TMPDIR pointed at the build's scratch folder."""
    spec = cpu_task.spec.model_copy(update={"build": 'test "$QUAERE_BUILD_MARK" = handed && '
                                                     'case "$TMPDIR" in */builds/*) ;; *) exit 9;; esac && '
                                                     + cpu_task.spec.build})
    env = {**os.environ, "QUAERE_BUILD_MARK": "handed"}
    assert "QUAERE_BUILD_MARK" not in os.environ
    assert build_source(spec, cpu_task.initial_kernel, tmp_path / "builds", cpu_task.folder,
                        env=env).status is BuildStatus.OK
    refused = build_source(spec, cpu_task.initial_kernel, tmp_path / "other" / "builds", cpu_task.folder)
    assert refused.status is BuildStatus.BUILD_FAILED and "status 1" in refused.log_tail


def test_the_build_keeps_the_sources_translation_unit_for_the_audit(cpu_task, tmp_path: Path) -> None:
    """The same command with -E, confined as the build: the source's own lines with its macros expanded. A command
    that is not one compiler invocation builds, and its log says the text after the preprocessor was not made."""
    source = tmp_path / "k.cpp"
    source.write_text('#define GLUE(a, b) a##b\n'
                      'extern "C" int GLUE(softmax, _rows)(const float*, float*, int, int) { return 0; }\n')
    built = build_source(cpu_task.spec, source, tmp_path / "cache", cpu_task.folder)
    assert built.status is BuildStatus.OK and Path(built.preprocessed).parent == Path(built.artifact).parent
    assert own_lines(Path(built.preprocessed).read_text()).splitlines()[1].startswith('extern "C" int softmax_rows(')
    chained = cpu_task.spec.model_copy(update={"build": "true && " + cpu_task.spec.build})
    other = build_source(chained, source, tmp_path / "chained", cpu_task.folder)
    assert other.status is BuildStatus.OK and other.preprocessed == ""
    assert "not preprocessed for the audit: not one compiler invocation" in other.log_tail


def test_a_build_cached_before_the_translation_unit_was_kept_is_built_again(cpu_task, tmp_path: Path) -> None:
    source = tmp_path / "k.cpp"
    source.write_text('extern "C" int softmax_rows(const float*, float*, int, int) { return 0; }\n')
    first = build_source(cpu_task.spec, source, tmp_path / "cache", cpu_task.folder)
    record = Path(first.artifact).parent / "build.json"
    saved = json.loads(record.read_text())
    del saved["result"]["preprocessed"]
    record.write_text(json.dumps(saved))
    Path(first.preprocessed).unlink()
    again = build_source(cpu_task.spec, source, tmp_path / "cache", cpu_task.folder)
    assert again.status is BuildStatus.OK and Path(again.preprocessed).exists()
