"""Builds every audit fixture once per session with this machine's compilers (nvcc for .cu, cc for .c).

CUDA fixtures are compiled as a task would build a candidate (``-gencode arch=compute_90a,code=sm_90a
-shared -Xcompiler -fPIC``) with ``-MD`` so the headers the build read are known, like the evaluator's
build step records them.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "audit"
ALL_BANNED = ("cutlass", "cute", "cublas", "cublaslt", "cudnn")
NVCC_FLAGS = ("-gencode", "arch=compute_90a,code=sm_90a", "-shared", "-Xcompiler", "-fPIC")


@dataclass(frozen=True)
class Built:
    """A built fixture: the shared object and the headers its build read."""

    artifact: Path
    headers: tuple[str, ...] = ()


def _run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise AssertionError(f"fixture build failed: {' '.join(cmd)}\n{done.stdout}\n{done.stderr}")


def read_depfile(path: Path) -> tuple[str, ...]:
    """Prerequisites of a make-style depfile (``nvcc -MD``), the target removed."""
    text = path.read_text().replace("\\\n", " ")
    _, _, deps = text.partition(":")
    return tuple(dict.fromkeys(d for d in deps.split() if d.endswith((".h", ".hpp", ".cuh", ".inl"))))


def build_cuda(source: str, out_dir: Path, *extra: str) -> Built:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH: the CUDA audit fixtures cannot be built")
    out = out_dir / (Path(source).stem + ".so")
    dep = out.with_suffix(".d")
    _run([nvcc, *NVCC_FLAGS, *extra, "-MD", "-MF", str(dep), "-o", str(out), str(FIXTURES / source)])
    return Built(out, read_depfile(dep))


def build_c(source: str, out: Path, *extra: str) -> Built:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler on PATH")
    _run([cc, "-shared", "-fPIC", "-O1", "-o", str(out), str(FIXTURES / source), *extra])
    return Built(out)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    """Every fixture, by name. The CUDA ones are skipped (not failed) where nvcc is absent."""
    out = tmp_path_factory.mktemp("audit-fixtures")
    lib_dir = out / "lib"
    lib_dir.mkdir()
    fake = build_c("fake_cublas.c", lib_dir / "libcublas.so.13", "-Wl,-soname,libcublas.so.13")
    # dlopen_cublas finds the stand-in through its own RUNPATH ($ORIGIN): a guard that lost track of
    # the caller of dlopen would break that search.
    shutil.copy(fake.artifact, out / "libcublas.so.13")
    return {
        "fake_cublas": fake,
        "needs_cublas": build_c("needs_cublas.c", out / "needs_cublas.so", f"-L{lib_dir}", "-l:libcublas.so.13"),
        "static_cublas": build_c("static_cublas.c", out / "static_cublas.so"),
        "marker_cublas": build_c("marker_cublas.c", out / "marker_cublas.so"),
        "dlopen_cublas": build_c(
            "dlopen_cublas.c", out / "dlopen_cublas.so", "-ldl", "-Wl,--enable-new-dtags,-rpath,$ORIGIN"
        ),
        "clean_host": build_c("clean_host.c", out / "clean_host.so", "-lm"),
        "python_api": build_c("python_api.c", out / "python_api.so"),
    }


@pytest.fixture(scope="session")
def built_cuda(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    out = tmp_path_factory.mktemp("audit-cuda-fixtures")
    include = f"-I{FIXTURES / 'include'}"
    return {
        "clean": build_cuda("clean.cu", out),
        "cutlass_kernel": build_cuda("cutlass_kernel.cu", out, include),
        "cute_device": build_cuda("cute_device.cu", out, "-Xlinker", "-s"),
    }
