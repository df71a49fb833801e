"""The rmsnorm_hopper task, as far as a machine without a GPU can see it: it loads without torch, its sets
have the sizes asked for, `quaere task check --no-device` passes (the kernel built by nvcc, when here), and
the initial kernel's own code, run on the CPU through a host emulation, matches a float64 RMSNorm."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from tests.task_new.conftest import quaere

from quaere.task.loader import load_task

HERE = Path(__file__).parent
TASK = load_task("rmsnorm_hopper")


def test_the_task_loads_without_torch_and_has_its_sets() -> None:
    module = TASK.module
    correctness, bench = module.correctness_scenarios(), module.benchmark_scenarios()
    assert len(correctness) >= 60 and 8 <= len(bench) <= 12
    values = {axis: {s.params[axis] for s in correctness} for axis in ("rows", "cols", "eps")}
    assert {1, 7, 17, 127, 129, 257, 1021} <= values["rows"] & values["cols"] and values["eps"] == {1e-6, 1e-5, 0.5}
    assert max(values["rows"]) > 10**8 and max(values["cols"]) > 10**8  # the largest that fits 1 GiB
    assert [c.name for c in TASK.spec.comparisons] == ["pytorch", "triton"] and callable(module.sample)
    assert "def rmsnorm" not in (TASK.folder / "task.py").read_text()  # the reference is called, never copied
    args = module.arguments(bench[0])
    assert [a.kind for a in args] == ["pointer", "pointer", "pointer", "i32", "i32", "f32", "stream"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed here")
def test_check_without_a_device_builds_and_passes(tmp_path: Path) -> None:
    done = quaere("task", "check", "rmsnorm_hopper", "--no-device", cwd=tmp_path, cache=tmp_path / "cache")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"initial kernel builds\s+│ ok", done.stdout) and "benchmark sizes" in done.stdout


@pytest.fixture(scope="module")
def emulated(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    kernel = TASK.initial_kernel.read_text()
    section = kernel[kernel.index("// ===== BEGIN KERNEL ====="):kernel.index("// ===== END KERNEL =====")]
    threads = re.search(r"constexpr int kThreads = \d+;", kernel)
    assert threads is not None
    folder = tmp_path_factory.mktemp("rmsnorm-emulation")
    source = folder / "emulated.cpp"
    source.write_text((HERE / "rmsnorm_emulation.h").read_text() + threads[0] + "\n" + section
                      + (HERE / "rmsnorm_driver.cpp").read_text())
    library = folder / "emulated.so"
    command = ["g++", "-O2", "-std=c++20", "-pthread", "-shared", "-fPIC", str(source), "-o", str(library)]
    built = subprocess.run(command, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    lib = ctypes.CDLL(str(library))
    lib.emulated_rmsnorm.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int, ctypes.c_int, ctypes.c_float, ctypes.c_int]
    return lib


def to_bf16(values: np.ndarray) -> np.ndarray:
    bits = values.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize(("rows", "cols", "eps", "blocks"), [
    (1, 1, 1e-6, 1), (3, 7, 0.5, 3), (10, 257, 1e-5, 3), (2, 1000, 1e-6, 2), (5, 4097, 1e-6, 1),
])
def test_the_kernel_code_matches_a_float64_rmsnorm(emulated: ctypes.CDLL, rows: int, cols: int, eps: float,
                                                    blocks: int) -> None:
    rng = np.random.default_rng(rows * 1000 + cols)
    x, weight = to_bf16(rng.standard_normal((rows, cols))), to_bf16(rng.standard_normal(cols))
    y = np.full((rows, cols), 0x7FA5, dtype=np.uint16)  # NaN poison: an unwritten element shows
    status = emulated.emulated_rmsnorm(x.ctypes.data, weight.ctypes.data, y.ctypes.data, rows, cols, eps, blocks)
    xf, wf = from_bf16(x).astype(np.float64), from_bf16(weight).astype(np.float64)
    exact = xf / np.sqrt((xf**2).mean(axis=1, keepdims=True) + eps) * wf
    got = from_bf16(y)
    assert status == 0 and np.isfinite(got).all()
    # One rounding to bf16 from fp32 arithmetic: within one bf16 step (2**-7 relative) of the exact value.
    assert (np.abs(got - exact) <= np.abs(exact) * 2**-7 + 1e-30).all()
