"""A banned library's file is carved out of every runner's read roots wherever libraries are kept (a CUDA toolkit's
cuBLAS, a system cuDNN), and so is every other Python's package folder: a candidate could read their bytes and load
their kernels by hand, unseen by the maps diff (docs/security.md, "What the audit cannot see")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from quaere.evaluate import isolation
from quaere.evaluate.families import families
from quaere.evaluate.foreign_files import banned_library_files, loader_folders, other_python_packages, runner_hidden
from quaere.evaluate.runner_client import RunnerConfig, RunnerProcess
from quaere.runner.landlock import landlock_abi


def _cublas_or_cudnn(name: str) -> bool:
    return any(family.names_library(name) for family in families(("cublas", "cudnn")))


def _libraries(root: Path) -> tuple[Path, Path]:
    """A loader's folder and a toolkit, each with a banned library beside allowed ones."""
    lib = root / "lib"
    lib.mkdir(parents=True)
    for name in ("libcudnn.so.9.1.0", "libcublasLt.so.13", "libcudart.so.13", "libc.so.6"):
        (lib / name).write_bytes(b"\x7fELF" + name.encode())
    (lib / "libcudnn.so.9").symlink_to("libcudnn.so.9.1.0")
    toolkit = root / "cuda-13.0"
    deep = toolkit / "targets" / "x86_64-linux" / "lib"
    deep.mkdir(parents=True)
    for name in ("libcublas.so.13.0.0", "libcublas_static.a", "libcudart.so.13"):
        (deep / name).write_bytes(b"x")
    (toolkit / "lib64").symlink_to(deep)
    return lib, toolkit


def test_banned_files_are_found_in_loader_folders_and_anywhere_in_a_toolkit(tmp_path: Path) -> None:
    lib, toolkit = _libraries(tmp_path)
    deep = toolkit / "targets" / "x86_64-linux" / "lib"
    found = banned_library_files(_cublas_or_cudnn, [str(lib)], [str(tmp_path / "cuda-*")])
    assert sorted(found) == sorted([str(lib / "libcudnn.so.9.1.0"), str(deep / "libcublas.so.13.0.0"),
                                    str(deep / "libcublas_static.a")])
    # cuBLASLt is its own family: not named, not found
    only_cudnn = banned_library_files(families(("cudnn",))[0].names_library, [str(lib)], [str(toolkit)])
    assert only_cudnn == [str(lib / "libcudnn.so.9.1.0")]


def test_ldconfig_listing_gives_the_loader_folders() -> None:
    listing = ("560 libs found in cache `/etc/ld.so.cache'\n"
               "\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9\n"
               "\tlibcublas.so.12 (libc6,x86-64) => /opt/vendor/lib/libcublas.so.12\n"
               "\tlibz.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libz.so.1\n")
    assert loader_folders(listing) == ["/usr/lib/x86_64-linux-gnu", "/opt/vendor/lib"]
    assert loader_folders("garbage\n\n") == []


def test_other_pythons_packages_go_and_the_ones_on_the_way_to_quaere_stay(tmp_path: Path) -> None:
    for folder in ("sys/python3.11/dist-packages/torch", "conda/python3.12/site-packages/quaere", "venv/site"):
        (tmp_path / folder).mkdir(parents=True)
    pattern = str(tmp_path / "*/python3*/*-packages")
    kept_quaere = tmp_path / "conda/python3.12/site-packages/quaere"
    assert other_python_packages([pattern], [str(kept_quaere)]) == [str(tmp_path / "sys/python3.11/dist-packages")]
    assert other_python_packages([pattern], [str(tmp_path / "sys/python3.11/dist-packages")]) == [
        str(tmp_path / "conda/python3.12/site-packages")]


def test_a_venvs_base_interpreter_packages_go_though_its_standard_library_is_on_the_import_path(tmp_path: Path) -> None:
    """A venv's runner may read its base interpreter's folders (``sys.base_prefix``, a read root), where the base's
    ``site-packages`` lies inside the standard library's folder and off the venv's import path."""
    base = tmp_path / "pyenv" / "3.12.4"
    stdlib, site = base / "lib" / "python3.12", base / "lib" / "python3.12" / "site-packages"
    (site / "torch" / "lib").mkdir(parents=True)
    venv_site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    (venv_site / "quaere").mkdir(parents=True)
    hidden = runner_hidden(("cudnn",), {}, [str(stdlib), str(venv_site)], [str(tmp_path / "venv"), str(base)])
    assert str(site) in hidden
    assert str(venv_site) not in hidden  # on the import path: foreign_packages carves it package by package
    roots = isolation.read_roots([], {}, "/nonexistent", folders=[str(base)], hidden=hidden)
    assert str(stdlib) not in roots and not any(root.startswith(str(site)) for root in roots)


def test_runner_hidden_takes_the_library_path_and_cuda_home(tmp_path: Path) -> None:
    lib, toolkit = _libraries(tmp_path)
    env = {"LD_LIBRARY_PATH": f"{lib}::/nonexistent", "CUDA_HOME": str(toolkit)}
    hidden = runner_hidden(("cutlass", "cublas", "cudnn"), env, [])
    deep = toolkit / "targets" / "x86_64-linux" / "lib"
    assert {str(lib / "libcudnn.so.9.1.0"), str(deep / "libcublas.so.13.0.0")} <= set(hidden)
    # A task that bans a library also loses the run-time compilers; one that bans nothing keeps every library.
    (deep / "libnvrtc.so.13").write_bytes(b"x")
    (lib / "libnvJitLink.so.13").write_bytes(b"x")
    only_cutlass = [path for path in runner_hidden(("cutlass",), env, []) if path.startswith(str(tmp_path))]
    assert sorted(only_cutlass) == sorted([str(deep / "libnvrtc.so.13"), str(lib / "libnvJitLink.so.13")])
    assert not any(path.startswith(str(tmp_path)) for path in runner_hidden((), env, []))


@pytest.mark.skipif(not landlock_abi(), reason="Landlock unavailable on this kernel")
def test_under_landlock_the_banned_file_is_denied_and_its_neighbours_read(tmp_path: Path) -> None:
    lib, toolkit = _libraries(tmp_path / "sys")
    hidden = runner_hidden(("cublas", "cudnn"), {"LD_LIBRARY_PATH": str(lib), "CUDA_HOME": str(toolkit)}, [])
    roots = isolation.read_roots([], {}, "/nonexistent", folders=[str(tmp_path / "sys")], hidden=hidden)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    probes = (lib / "libcudnn.so.9", lib / "libcudart.so.13", toolkit / "lib64" / "libcublas.so.13.0.0",
              toolkit / "lib64" / "libcudart.so.13")
    lines = [f"cat {path} > /dev/null 2>&1 && echo read {path.name} || echo denied {path.name}" for path in probes]
    done = subprocess.run(isolation.confined_command("; ".join(lines), roots, [str(scratch)]), capture_output=True,
                          text=True, timeout=60, cwd=scratch)
    assert done.stdout.split("\n")[:4] == ["denied libcudnn.so.9", "read libcudart.so.13", "denied libcublas.so.13.0.0",
                                           "read libcudart.so.13"], done.stdout + done.stderr


def test_a_runner_starts_with_read_roots_past_the_argument_limit(tmp_path: Path) -> None:
    """A carved library folder grants each of its files by a rule: thousands of roots, more than one argv string
    may hold (128 KiB), so the spec travels in a memory file."""
    crowded = tmp_path / "crowded-lib-folder-with-a-long-name"
    crowded.mkdir()
    for index in range(3000):
        (crowded / f"libsomething-quite-long-{index:05d}.so.1").write_bytes(b"x")
    (crowded / "libcublas.so.13").write_bytes(b"x")
    hidden = [str(crowded / "libcublas.so.13")]
    reads = isolation.read_roots([], os.environ, os.getcwd(), folders=[str(crowded)], hidden=hidden)
    assert len(",".join(reads)) > 128 * 1024
    config = RunnerConfig(
        device="cpu", library=None, entry="", policy=isolation.policy(True, False, reads, (str(tmp_path), "/dev")),
        env=isolation.runner_env(os.environ, tmp_path, {}), stderr_path=tmp_path / "runner.stderr",
        start_timeout_s=60.0,
    )
    runner = RunnerProcess(config, cwd=tmp_path)
    try:
        runner.start()
    finally:
        runner.close()
    assert runner.isolation.separate_process
    assert runner.isolation.landlock_abi == landlock_abi()  # every rule went in: none skipped, none refused
