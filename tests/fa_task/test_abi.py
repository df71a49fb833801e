"""The C ABI of flash_attention_hopper: the declaration in kernel.cu, the ctypes signature in task.py, and
the build of the initial kernel with the task's own command and this machine's nvcc."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from quaere.task.loader import load_task

HERE = Path(__file__).parent

# Issue 3, "The C ABI (fixed; the evaluator calls exactly this)".
ISSUE_ABI = """extern "C" int attention_forward(const void* q, const void* k, const void* v, void* o, float* lse,
    int batch, int seqlen_q, int seqlen_k, int heads_q, int heads_kv,
    int head_dim, float softmax_scale, int causal,
    void* workspace, size_t workspace_bytes, void* stream)"""
# C parameter type -> the argument kinds of quaere.task.contract that the runner passes as that type.
C_TO_ARG_KINDS = {"void*": {"pointer", "workspace", "stream"}, "float*": {"pointer"}, "int": {"i32"},
                  "float": {"f32"}, "size_t": {"u64", "workspace_bytes"}}


def normalized(declaration: str) -> str:
    return re.sub(r"\s*([(),*])\s*", r"\1", " ".join(declaration.split()))


def parameter_types(declaration: str) -> list[str]:
    inside = declaration[declaration.index("(") + 1 : declaration.rindex(")")]
    types = []
    for parameter in inside.split(","):
        words = parameter.replace("*", " * ").split()[:-1]  # drop the name
        types.append("".join(w for w in words if w != "const"))
    return types


@pytest.fixture(scope="module")
def task():
    return load_task("flash_attention_hopper")


@pytest.fixture(scope="module")
def declaration(task) -> str:
    source = task.initial_kernel.read_text()
    match = re.search(r'extern "C" int attention_forward\([^)]*\)', source)
    assert match, "kernel.cu declares no extern \"C\" int attention_forward(...)"
    return match.group(0)


def test_kernel_declares_exactly_the_issue_abi(declaration):
    assert normalized(declaration) == normalized(ISSUE_ABI)


def test_argument_list_matches_the_declaration(task, declaration):
    """Every scenario's argument list has the declaration's 16 parameters, each of a kind the runner passes
    as that C type, and names only the scenario's inputs and outputs."""
    types = parameter_types(declaration)
    assert len(types) == 16
    for scenario in task.module.correctness_scenarios()[::20]:
        args = task.module.arguments(scenario)
        assert [a.kind in C_TO_ARG_KINDS[t] for a, t in zip(args, types, strict=True)] == [True] * 16
        names = {a.name for a in args if a.kind == "pointer"}
        assert names == {"q", "k", "v", "o", "lse"}


def test_task_names_the_entry_point_and_bans_every_family(task):
    assert task.spec.entry_point == "attention_forward"
    assert set(task.spec.banned) == {"cutlass", "cute", "cublas", "cublaslt", "cudnn"}
    assert task.spec.target == "sm_90a" and "arch=compute_90a,code=sm_90a" in task.spec.build
    assert "fast_math" not in task.spec.build and "fast-math" not in task.spec.build


def test_emulation_driver_uses_the_kernel_dispatch(task):
    """test_emulation runs the tile shapes the host code launches; keep the two lists the same."""
    launched = re.findall(r"launch<(\d+), (\d+)>", task.initial_kernel.read_text())
    emulated = re.findall(r"run_grid<(\d+), (\d+)>\(p, batch\)", (HERE / "emulation" / "driver.cpp").read_text())
    assert sorted(launched) == sorted(emulated) and len(launched) == 3


def find_cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        import nvidia

        paths = [p for root in nvidia.__path__ for p in sorted(Path(root).glob("*/bin/cuobjdump"))]
    except ImportError:
        paths = []
    return str(paths[0]) if paths else None


@pytest.mark.slow
def test_the_task_build_command_exports_the_entry_point(built):
    nm = subprocess.run(["nm", "-D", "--defined-only", str(built)], capture_output=True, text=True, check=True)
    assert re.search(r"\bT attention_forward$", nm.stdout, re.MULTILINE)
    needed = subprocess.run(["readelf", "-d", str(built)], capture_output=True, text=True, check=True).stdout
    assert not re.search(r"cublas|cudnn", needed, re.IGNORECASE)


@pytest.mark.slow
def test_kernels_are_sm90a_code_without_spills(built):
    cuobjdump = find_cuobjdump()
    if cuobjdump is None:
        pytest.skip("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    usage = subprocess.run([cuobjdump, "-res-usage", str(built)], capture_output=True, text=True, check=True).stdout
    assert "arch = sm_90a" in usage
    kernels = re.findall(r"Function (\S*attention_forward_kernel\S*):\s*\n\s*"
                         r"REG:(\d+) STACK:(\d+) .*LOCAL:(\d+)", usage)
    assert len(kernels) == 3, usage
    for name, _registers, stack, local in kernels:
        assert (stack, local) == ("0", "0"), f"{name} uses local memory (register spills): STACK:{stack} LOCAL:{local}"
