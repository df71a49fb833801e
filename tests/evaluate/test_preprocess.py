"""The build command turned into its preprocessor run, and the main file's lines read back from the translation
unit (a real compiler run on a fixture: tests/adversarial/test_audit_loader_calls.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quaere.evaluate.build import render_command
from quaere.evaluate.preprocess import NotPreprocessable, own_lines, preprocess_command
from quaere.task.loader import load_task


def test_the_attention_build_becomes_one_preprocessor_run_without_its_output_and_depfile() -> None:
    build = load_task("flash_attention_hopper").spec.build
    rendered = render_command(build, Path("/w/k.cu"), Path("/b/kernel.so"), Path("/b/kernel.d"))
    assert preprocess_command(rendered, Path("/b/source.ii")) == (
        "nvcc -O3 -std=c++17 -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a /w/k.cu -E -o /b/source.ii")
    assert "-MFdep.d" not in preprocess_command("g++ -MFdep.d -c k.cpp -ok.o", Path("o.ii"))
    with pytest.raises(NotPreprocessable, match="not one compiler invocation"):
        preprocess_command("make && g++ k.cpp -o k.so", Path("o.ii"))


def test_only_the_main_files_lines_are_kept_at_their_line_numbers() -> None:
    unit = ('# 0 "/w/k.cu"\n# 0 "<built-in>"\n# 1 "/usr/include/cuda.h" 1 3\n'
            'CUresult cuModuleLoadData(CUmodule*, const void*);\n'
            '# 3 "/w/k.cu" 2\nint a = 1;\n\nlookup("cuModuleLoadData");\n# 6 "/w/k.cu"\nx\n')
    assert own_lines(unit).splitlines() == ["", "", "int a = 1;", "", 'lookup("cuModuleLoadData");', "x"]
    assert own_lines("") == "" and own_lines("int x;\n") == ""
