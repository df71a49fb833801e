"""The runner's sandbox as the judge configures it: which folders it may read and write, its environment.

Reads are allowed under the system folders, Python's own folders (the interpreter, its libraries and quaere's
source; for the build also the installed packages), the CUDA driver and toolkit folders, and the folder of the built
library; nothing else: not the home folder in general, not the workspace, not the evaluator's store or keys, and for
a runner no other Python package and no banned library's file (:mod:`quaere.evaluate.foreign_files`). Writes only
under the runner's scratch folder (its HOME and TMPDIR), the evaluation's log folder (the dlopen guard writes there)
and ``/dev`` (the GPU's device files are opened read-write).

The environment is rebuilt from a short list rather than inherited: an agent that sets ``LD_PRELOAD`` or
``PYTHONSTARTUP`` around ``quaere eval`` does not reach the runner through it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import quaere
from quaere.evaluate.foreign_files import foreign_packages, within

SYSTEM_READ_ROOTS = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys", "/dev",
                     "/run", "/var/lib", "/snap")
INHERITED_ENV = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "LANG",
                 "LC_ALL", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")


def _existing(paths: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for path in paths:
        if path:
            real = os.path.realpath(path)
            if os.path.isdir(real):
                seen[real] = None
    return list(seen)


def read_roots(libraries: Iterable[str], env: Mapping[str, str], cwd: str,
               unreadable: Iterable[str] = (), folders: Iterable[str] = (), packages: bool = True,
               import_path: Iterable[str] | None = None, hidden: Iterable[str] = ()) -> tuple[str, ...]:
    """What the runner (or the build) may read: system, Python, quaere, CUDA, each library's own folder and
    ``folders``, less every folder of ``unreadable`` (:func:`carve`) and, unless ``packages``, less every package
    the import path holds but quaere (:func:`~quaere.evaluate.foreign_files.foreign_packages`) and less ``hidden``
    (files or folders; :func:`~quaere.evaluate.foreign_files.runner_hidden`). Plain files on the way to a package or
    to ``hidden`` stay, each as its own rule.

    ``cwd`` (where ``quaere eval`` was started, often the workspace) is left out even when it is on
    ``sys.path``: the runner starts in its scratch folder and never needs it. ``import_path`` defaults to
    ``sys.path``.
    """
    entries = [p for p in (sys.path if import_path is None else import_path)
               if p and os.path.realpath(p) != os.path.realpath(cwd)]
    python = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))]
    own_package = Path(quaere.__file__).resolve().parent
    cuda = [env.get("CUDA_HOME", ""), "/usr/local/cuda", "/usr/local/nvidia"]
    library_paths = env.get("LD_LIBRARY_PATH", "").split(":")
    own = [os.path.dirname(os.path.realpath(lib)) for lib in libraries]
    roots = _existing([*SYSTEM_READ_ROOTS, *python, *entries, str(own_package.parent), *cuda, *library_paths, *own,
                       *folders])
    for secret in unreadable:
        roots = [kept for root in roots for kept in carve(Path(root), Path(os.path.realpath(secret)))]
    secrets = [os.path.realpath(path) for path in hidden]
    if not packages:
        secrets += foreign_packages(entries, (own_package, *map(Path, own)))
    if secrets:
        roots = [kept for root in roots for kept in carve_all(root, secrets)]
    return tuple(dict.fromkeys(roots))


def carve(root: Path, secret: Path) -> list[str]:
    """``root`` (a real path) as folders that together hold everything beneath it except ``secret`` (a real path):
    ``root`` itself when ``secret`` is not beneath it, nothing when it is at or beneath ``secret``, else its other
    folders and, carved in turn, the one on the way to ``secret``. A Landlock rule grants a whole tree, so a secret
    beneath a read root (the service's keys under ``/var/lib``) is cut out by granting its siblings instead. Left
    out with the secret: plain files directly in a folder on the way (a rule on a folder is all the runner gets),
    a link that leads into the secret or to a folder above it, and a folder that cannot be listed."""
    return carve_all(root, [secret], files=False)


def carve_all(root: str | Path, secrets: Iterable[str | Path], files: bool = True) -> list[str]:
    """:func:`carve` of every one of ``secrets`` (real paths) at once (one listing per folder on the way), plain
    files on the way granted each by a rule of its own when ``files`` (the standard library's modules lie on the way
    to a pyenv or conda ``site-packages``)."""
    return _carve(os.fspath(root), [os.fspath(secret) for secret in secrets], files)


def _carve(top: str, secrets: list[str], files: bool) -> list[str]:
    if any(within(top, secret) for secret in secrets):
        return []
    beneath = [secret for secret in secrets if within(secret, top)]
    if not beneath:
        return [top]
    try:
        names = sorted(os.path.join(top, name) for name in os.listdir(top))
    except OSError:
        return []
    kept: list[str] = []
    for name in names:
        real = os.path.realpath(name)
        if any(within(secret, name) for secret in beneath):
            kept += _carve(name, beneath, files)
        elif any(within(real, secret) or within(secret, real) for secret in beneath):
            continue  # the secret itself, or a link into it or above it
        elif os.path.isdir(name) or files and os.path.isfile(real):
            kept.append(name)
    return kept


def confined_command(command: str, reads: Iterable[str], writes: Iterable[str]) -> list[str]:
    """``command`` (a shell line) as the argv that runs it under Landlock (:mod:`quaere.runner.confine`)."""
    roots = json.dumps({"reads": list(reads), "writes": list(writes)})
    return [sys.executable, "-m", "quaere.runner.confine", roots, command]


# The judge's environment is the caller's (the agent's, in same-user mode) less every switch of the libraries it runs
# and of what loads code into it: with PYTORCH_NO_CUDA_MEMORY_CACHING=1 every FA3 call would allocate and free device
# memory (a device-wide synchronisation) inside its timing, CUDA_LAUNCH_BLOCKING=1 would stall between a comparison's
# launches, NVIDIA_TF32_OVERRIDE=1 would turn the fp32 reference's matmuls into TF32 (a looser bound for everyone),
# LD_PRELOAD or CUDA_INJECTION64_PATH would load the agent's code into the judge, and the dlopen guard used to pass
# LD_PRELOAD on to the runners. Kept: where things are (PATH, PYTHONPATH, LD_LIBRARY_PATH, CUDA_HOME...), which GPU,
# and the thread counts (OMP_NUM_THREADS...), which an operator sets for the machine and no comparison depends on.
JUDGE_SWITCH_PREFIXES = ("LD_", "CUDA_", "NVIDIA_", "PYTHON", "TORCH", "PYTORCH_", "CUBLAS", "CUDNN", "NCCL_",
                         "TRITON_", "FLASH_ATTENTION")
JUDGE_KEPT = frozenset({"LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH",
                        "CUDA_ROOT", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "PYTHONPATH",
                        "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "PYTHONUTF8",
                        "PYTHONNOUSERSITE", "PYTHONHASHSEED"})


def _without(base: Mapping[str, str], prefixes: tuple[str, ...], kept: frozenset[str],
             ) -> tuple[dict[str, str], tuple[str, ...]]:
    """``base`` less the names that start with one of ``prefixes`` and are not ``kept``; and those names, sorted."""
    dropped = tuple(sorted(k for k in base if k.startswith(prefixes) and k not in kept))
    return {k: v for k, v in base.items() if k not in dropped}, dropped


def judge_environment(base: Mapping[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """The judge's environment from ``base`` (see :data:`JUDGE_SWITCH_PREFIXES`), and the names left out, sorted."""
    return _without(base, JUDGE_SWITCH_PREFIXES, JUDGE_KEPT)


# The build's environment is the caller's less the compilers' switches: flags nvcc adds to every command
# (NVCC_PREPEND_FLAGS, NVCC_APPEND_FLAGS: "-I/agent/qlib", or "-G" for a crippled initial kernel, which the build cache
# then keeps), the host compiler it picks (NVCC_CCBIN), include and library folders gcc searches (CPATH,
# CPLUS_INCLUDE_PATH...: the include-roots probe would count them as the toolchain's, and a renamed CUTLASS there would
# pass includes_outside_roots), where gcc finds its own programs (GCC_EXEC_PREFIX, COMPILER_PATH), where it writes
# dependencies (DEPENDENCIES_OUTPUT), and what the loader puts into every compiler process (LD_* but LD_LIBRARY_PATH).
BUILD_SWITCH_PREFIXES = ("NVCC_", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH",
                         "OBJCPLUS_INCLUDE_PATH", "LIBRARY_PATH", "GCC_", "COMPILER_PATH", "DEPENDENCIES_OUTPUT",
                         "SUNPRO_DEPENDENCIES", "COLLECT_", "CCACHE_", "LD_")
BUILD_KEPT = frozenset({"LD_LIBRARY_PATH"})


def build_environment(base: Mapping[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """The build's environment from ``base`` (see :data:`BUILD_SWITCH_PREFIXES`), and the names left out, sorted."""
    return _without(base, BUILD_SWITCH_PREFIXES, BUILD_KEPT)


def judge_device_only(visible: str | None) -> str:
    """The runner's ``CUDA_VISIBLE_DEVICES``: the one GPU the judge calls device 0, the first that ``visible`` (the
    judge's own value) names, or device 0 when it names none. With the host's other GPUs visible, a candidate could
    spread a timed call over several while every comparison runs on one, and every clock would believe it (the work
    is real and inside the window). ``''`` (every GPU hidden) stays ``''``; ``CUDA_DEVICE_ORDER`` is inherited, so
    an index means the same GPU to both."""
    return "0" if visible is None else visible.split(",", 1)[0].strip()


def runner_env(base: Mapping[str, str], scratch: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """The runner's environment: a few inherited variables, the judge's GPU alone (:func:`judge_device_only`), its
    scratch folder as HOME/TMPDIR/CUDA cache, and ``extra`` (the dlopen guard's LD_PRELOAD and log)."""
    env = {key: base[key] for key in INHERITED_ENV if key in base}
    env["CUDA_VISIBLE_DEVICES"] = judge_device_only(base.get("CUDA_VISIBLE_DEVICES"))
    env.update({"HOME": str(scratch), "TMPDIR": str(scratch), "CUDA_CACHE_PATH": str(scratch / "nv"),
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "" if _user_site_needed() else "1"})
    if not env["PYTHONNOUSERSITE"]:
        del env["PYTHONNOUSERSITE"]
    env.update(extra)
    return env


def _user_site_needed() -> bool:
    """quaere installed with ``pip --user`` needs the user site; otherwise the runner does without it."""
    import site

    user_site = site.getusersitepackages() if hasattr(site, "getusersitepackages") else ""
    return bool(user_site) and Path(quaere.__file__).resolve().is_relative_to(os.path.realpath(user_site))


def policy(enabled: bool, threads: bool, reads: tuple[str, ...], writes: tuple[str, ...]) -> dict:
    """The runner's :class:`quaere.runner.sandbox.Policy` as the JSON it is started with."""
    return {"seccomp": enabled, "landlock": enabled, "threads": threads, "read_roots": list(reads),
            "write_roots": list(writes)}
