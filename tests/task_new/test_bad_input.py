"""Each bad input to `quaere task new` gets one line naming the file, the parameter and what was expected,
exit status 2, and leaves nothing in (or beside) the task folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.task_new.conftest import CPU_KERNEL, REFERENCES, SOFTMAX_ANSWERS, quaere, write_kernel

TWO_ENTRIES = '''#include <cmath>
extern "C" int scale_rows(const float* x, float* y, int n) { for (int i = 0; i < n; ++i) y[i] = 2 * x[i]; return 0; }
extern "C" int negate_rows(const float* x, float* y, int n) { for (int i = 0; i < n; ++i) y[i] = -x[i]; return 0; }
'''


def assert_refused(done, tmp_path: Path, *words: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert not (tmp_path / "task").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left


def test_no_extern_c_entry(tmp_path: Path, cache_dir: Path) -> None:
    kernel = write_kernel(tmp_path, "plain.cpp", "int f(const float* x, float* y) { return 0; }\n")
    done = quaere("task", "new", "task", "--from", str(kernel), cwd=tmp_path, cache=cache_dir)
    assert_refused(done, tmp_path, str(kernel), 'extern "C"', "expected")


def test_two_entries_without_entry_option(tmp_path: Path, cache_dir: Path) -> None:
    kernel = write_kernel(tmp_path, "two.cpp", TWO_ENTRIES)
    done = quaere("task", "new", "task", "--from", str(kernel), cwd=tmp_path, cache=cache_dir)
    assert_refused(done, tmp_path, str(kernel), "scale_rows", "negate_rows", "--entry")
    chosen = quaere("task", "new", "task", "--from", str(kernel), "--entry", "negate_rows", cwd=tmp_path,
                    cache=cache_dir)
    assert chosen.returncode == 0, chosen.stderr
    assert 'entry_point = "negate_rows"' in (tmp_path / "task" / "task.toml").read_text()


def test_unmappable_c_type(tmp_path: Path, cache_dir: Path) -> None:
    kernel = write_kernel(tmp_path, "params.cu", 'struct Params { int n; };\n'
                          'extern "C" int run(const Params* params, float* y, int n) { return 0; }\n')
    done = quaere("task", "new", "task", "--from", str(kernel), cwd=tmp_path, cache=cache_dir)
    assert_refused(done, tmp_path, str(kernel), "parameter 1", "const Params* params", "expected a pointer to float")


@pytest.mark.parametrize(("function", "words"), [
    ("softmax_raises", ("softmax_raises()", "raised ValueError", "this reference is broken")),
    ("softmax_transposed", ("softmax_transposed()", "'y'", "expected float32")),
    ("softmax_half", ("softmax_half()", "'y' as float16", "expected float32")),
    ("softmax_extra", ("softmax_extra", "parameter 'temperature'", "expected one of those names")),
])
def test_bad_reference(function: str, words: tuple[str, ...], tmp_path: Path, cache_dir: Path) -> None:
    done = quaere("task", "new", "task", "--from", str(CPU_KERNEL), "--reference", f"{REFERENCES}:{function}",
                  *SOFTMAX_ANSWERS, cwd=tmp_path, cache=cache_dir)
    assert_refused(done, tmp_path, str(REFERENCES), *words)


def test_missing_reference_function_and_bad_answers(tmp_path: Path, cache_dir: Path) -> None:
    missing = quaere("task", "new", "task", "--from", str(CPU_KERNEL), "--reference", f"{REFERENCES}:nowhere",
                     cwd=tmp_path, cache=cache_dir)
    assert_refused(missing, tmp_path, str(REFERENCES), "no function 'nowhere'", "softmax")
    shape = quaere("task", "new", "task", "--from", str(CPU_KERNEL), "--shape", "x=rows,n", cwd=tmp_path,
                   cache=cache_dir)
    assert_refused(shape, tmp_path, "--shape x", "'n' is not an integer parameter", "rows, cols")
    const_output = quaere("task", "new", "task", "--from", str(CPU_KERNEL), "--output", "x", cwd=tmp_path,
                          cache=cache_dir)
    assert_refused(const_output, tmp_path, "--output x", "const float* x", "is const")


def test_an_existing_task_is_never_overwritten(tmp_path: Path, cache_dir: Path) -> None:
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "task.toml").write_text("# mine\n")
    done = quaere("task", "new", str(folder), "--from", str(CPU_KERNEL), cwd=tmp_path, cache=cache_dir)
    assert done.returncode == 2 and "task.toml: exists" in done.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["task.toml"]
    assert (folder / "task.toml").read_text() == "# mine\n"
