"""What a runner must not read though it lies beneath one of its read roots: files that hold other people's kernels.

The runner's read roots are wide (``/usr``, ``/opt``, the Python folders; :mod:`quaere.evaluate.isolation`) because
the CUDA driver reads where it likes. Beneath them lie libraries whose bytes a candidate could read with ``read``
(no mapping, so no maps diff), cut a cubin out of and load by hand (docs/security.md, "What the audit cannot see").
A runner imports the standard library and quaere only and loads one built library, so three kinds of file are of no
use to it and are carved out (:func:`quaere.evaluate.isolation.carve_all`):

* every package on the import path but quaere (:func:`foreign_packages`): torch, the NVIDIA wheels, the comparisons';
* every other Python's package folders (:func:`other_python_packages`): a system ``dist-packages`` or a conda
  environment under ``/opt`` holds the same wheels;
* every library file of a banned family where libraries are kept (:func:`banned_library_files`): the CUDA toolkits'
  cuBLAS, a system-wide cuDNN; and the toolkit's run-time compilers, whose device code is not the source's;
* every file and folder beneath the read roots that any user may write (:func:`writable_by_anyone`): ``/run/lock``
  and the like, where the agent, whoever it runs as, can leave a library's bytes for the candidate to read.

The judge computes the last three once per evaluation (:func:`runner_hidden`), not per runner. The build carves the
last kind too (:func:`writable_outside`, through :mod:`quaere.evaluate.build_reads`): a header or an ``.incbin`` blob
there would be compiled in though the candidate's hash does not cover it.
"""

from __future__ import annotations

import glob
import os
import re
import stat
import subprocess
import sysconfig
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import quaere
from quaere.evaluate.elf_sections import ELF_MAGIC
from quaere.evaluate.families import families

LIBRARY_FOLDERS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/usr/local/lib64", "/lib/*-linux-gnu",
                   "/usr/lib/*-linux-gnu", "/usr/lib/wsl/lib")
"""Where the dynamic loader looks without being told (patterns), beside what ``ldconfig -p`` lists."""
TOOLKIT_TREES = ("/usr/local/cuda*", "/opt/cuda*", "/opt/nvidia")
"""CUDA toolkits (patterns), walked whole: each holds cuBLAS, some hold cuDNN, in folders that vary by version."""
PACKAGE_FOLDERS = ("/usr/lib/python3*/*-packages", "/usr/local/lib/python3*/*-packages",
                   "/usr/lib64/python3*/site-packages", "/opt/*/lib/python3*/site-packages",
                   "/opt/*/envs/*/lib/python3*/site-packages", "/opt/*/pkgs")
"""Other Pythons' package folders under the system read roots (patterns)."""
RUNTIME_COMPILERS = re.compile(r"^lib(?:nvrtc|nvjitlink|nvptxcompiler)", re.IGNORECASE)
"""The toolkit's run-time compilers and linker: device code they build is not the source's, which is why the audit
fails a source that names them (``source_device_code_loading``) wherever a task bans a library."""


def foreign_packages(import_path: Iterable[str], keep: Iterable[Path]) -> list[str]:
    """What the import path holds that a runner never imports: each folder and each ELF file directly in an entry
    that is not the standard library itself, except the folders in ``keep`` (quaere's package, the built library's
    folder) and those on the way to them. A runner imports the standard library and quaere only, so this is every
    other package: torch, the NVIDIA libraries (cuBLAS, cuDNN) and the comparisons' wheels (FA3), whose bytes a
    candidate could otherwise read and load by hand, unseen by the maps diff."""
    stdlib = {os.path.realpath(sysconfig.get_paths()[name]) for name in ("stdlib", "platstdlib")}
    kept = [Path(os.path.realpath(path)) for path in keep]
    found: list[str] = []
    for entry in dict.fromkeys(os.path.realpath(p) for p in import_path):
        if entry in stdlib or not os.path.isdir(entry) or os.path.basename(entry) == "lib-dynload":
            continue
        try:
            children = sorted(Path(entry).iterdir())
        except OSError:
            continue
        for child in children:
            real = Path(os.path.realpath(child))
            if any(k == real or k.is_relative_to(real) for k in kept):
                continue
            if real.is_dir() or _is_elf(real):
                found.append(str(real))
    return found


def _is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return path.is_file() and handle.read(len(ELF_MAGIC)) == ELF_MAGIC
    except OSError:
        return False


def within(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or beneath it (both real paths, as strings)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _expand(patterns: Iterable[str]) -> list[str]:
    found: dict[str, None] = {}
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            real = os.path.realpath(path)
            if os.path.isdir(real):
                found[real] = None
    return list(found)


def other_python_packages(folders: Iterable[str], keep: Iterable[str]) -> list[str]:
    """The real paths of ``folders`` (package folders, patterns allowed) that are not in ``keep`` and hold nothing in
    it (quaere's package, the import path's entries: :func:`foreign_packages` carves those one package at a time).
    A folder beneath a kept one still goes: the standard library's folder is an import-path entry, and a venv's base
    interpreter keeps its ``site-packages`` inside it."""
    kept = [os.path.realpath(path) for path in keep]
    return [folder for folder in _expand(folders) if not any(within(k, folder) for k in kept)]


def loader_folders(ldconfig_listing: str) -> list[str]:
    """The folders of the libraries ``ldconfig -p`` lists (``\\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/...``)."""
    folders: dict[str, None] = {}
    for line in ldconfig_listing.splitlines():
        _, arrow, path = line.partition(" => ")
        if arrow and path.startswith("/"):
            folders[os.path.dirname(path.strip())] = None
    return list(folders)


def _ldconfig_listing() -> str:
    for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig"):
        if os.access(ldconfig, os.X_OK):
            try:
                return subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=20).stdout
            except (OSError, subprocess.SubprocessError):
                return ""
    return ""


def banned_library_files(names: Callable[[str], bool], folders: Iterable[str], trees: Iterable[str]) -> list[str]:
    """Real paths of the files whose name ``names`` accepts: directly in ``folders``, or anywhere beneath ``trees``
    (patterns allowed in both). A link is followed to its file, so a renamed copy reached through a library's
    name is found too."""
    found: dict[str, None] = {}

    def take(folder: str, name: str) -> None:
        if names(name):
            real = os.path.realpath(os.path.join(folder, name))
            if os.path.isfile(real):
                found[real] = None

    for folder in _expand(folders):
        try:
            entries = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in entries:
            take(folder, name)
    for tree in _expand(trees):
        for folder, _, files in os.walk(tree):
            for name in files:
                take(folder, name)
    return list(found)


PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
"""Not walked by :func:`writable_by_anyone`: the kernel's own file systems, granted to a runner entry by entry."""


def writable_by_anyone(roots: Iterable[str], skip: Iterable[str] = ()) -> list[str]:
    """Real paths of the files and folders beneath ``roots`` (or a root itself) whose mode lets every user write
    them, walked without following links, not into :data:`PSEUDO_ROOTS` nor into ``skip`` (real paths: folders
    carved out already); a folder found is not entered (it goes whole). Such a place (``/run/lock``, sticky like
    ``/tmp``) is where an agent of any user, the separate-user mode's included, can leave a blob for the candidate
    to read past the audit."""
    found: dict[str, None] = {}
    skipped = frozenset((*PSEUDO_ROOTS, *skip))  # looked up once per entry walked: a set, not a scan of hundreds
    todo = [real for real in dict.fromkeys(os.path.realpath(root) for root in roots)
            if os.path.isdir(real) and not any(within(real, folder) for folder in skipped)]
    roots_left = frozenset(todo)
    for root in todo:
        if _anyone_writes(root):
            found[root] = None
            continue
        stack = [root]
        while stack:
            try:
                entries = list(os.scandir(stack.pop()))
            except OSError:
                continue
            for entry in entries:
                if entry.is_symlink() or entry.path in skipped:
                    continue
                if _anyone_writes(entry.path):
                    found[entry.path] = None
                elif entry.is_dir(follow_symlinks=False) and entry.path not in roots_left:
                    stack.append(entry.path)
    return list(found)


def _anyone_writes(path: str) -> bool:
    try:
        return bool(os.lstat(path).st_mode & stat.S_IWOTH)
    except OSError:
        return False


def python_needs(env: Mapping[str, str], import_path: Iterable[str], prefixes: Iterable[str] = ()) -> list[str]:
    """The real paths of what a process of this Python needs to run: quaere's package, the Python installs at
    ``prefixes``, the import path, ``LD_LIBRARY_PATH``'s folders and ``CUDA_HOME``."""
    own = str(Path(quaere.__file__).resolve().parent)
    library_paths = env.get("LD_LIBRARY_PATH", "").split(":")
    return [os.path.realpath(path) for path in (own, *prefixes, *import_path, *library_paths, env.get("CUDA_HOME"))
            if path]


def writable_outside(roots: Iterable[str], needed: Iterable[str], skip: Iterable[str] = ()) -> list[str]:
    """What any user may write beneath ``roots`` (:func:`writable_by_anyone`, not walked into ``skip``) but in what
    the process needs (``needed``, real paths: its Python, its libraries, its toolchain) and the folders on the way
    to it. Where anyone may write there, anyone may also write the code the judge or the compiler runs: that host
    has lost the boundary before any candidate runs, and carving would only stop every run."""
    needed = list(needed)
    return [path for path in writable_by_anyone(roots, [*skip, *needed])
            if not any(within(need, path) for need in needed)]


def prefix_packages(prefixes: Iterable[str]) -> list[str]:
    """The package folders (patterns) of Python installs rooted at ``prefixes``: a venv's base interpreter is one of
    the runner's read roots (``sys.base_prefix``), and its ``site-packages`` is not on the venv's import path."""
    return [os.path.join(prefix, lib, "python3*", packages) for prefix in dict.fromkeys(prefixes) if prefix
            for lib in ("lib", "lib64", "local/lib") for packages in ("site-packages", "dist-packages")]


def runner_hidden(banned: tuple[str, ...], env: Mapping[str, str], import_path: Iterable[str],
                  prefixes: Iterable[str] = (), roots: Iterable[str] = ()) -> tuple[str, ...]:
    """What every runner of one evaluation has carved out besides the import path's packages: other Pythons'
    package folders (the system's, conda's, and those of the Python installs at ``prefixes``: the interpreter's
    ``sys.prefix``, ``sys.base_prefix``...); what any user may write beneath ``roots`` (the system read roots) but
    in what the runner needs (:func:`writable_outside`); and where a task bans a
    library, the library files of its ``banned`` families and of the run-time compilers
    (:data:`RUNTIME_COMPILERS`) wherever libraries are kept (the loader's folders, ``LD_LIBRARY_PATH``, the CUDA
    toolkits and ``CUDA_HOME``)."""
    own = str(Path(quaere.__file__).resolve().parent)
    import_path = list(import_path)
    library_paths = [path for path in env.get("LD_LIBRARY_PATH", "").split(":") if path]
    packages = other_python_packages([*PACKAGE_FOLDERS, *prefix_packages(prefixes)], [own, *import_path])
    # Not walked: the package folders the runner has carved out whole anyway.
    carved = [*packages, *foreign_packages(import_path, [Path(own)])]
    packages += writable_outside(roots, python_needs(env, import_path, prefixes), carved)
    shunned = families(banned)
    if not shunned:
        return tuple(dict.fromkeys(packages))
    folders = [*LIBRARY_FOLDERS, *loader_folders(_ldconfig_listing()), *library_paths]
    trees = [*TOOLKIT_TREES, *([env["CUDA_HOME"]] if env.get("CUDA_HOME") else [])]

    def names(name: str) -> bool:
        return bool(RUNTIME_COMPILERS.match(name)) or any(family.names_library(name) for family in shunned)

    return tuple(dict.fromkeys([*packages, *banned_library_files(names, folders, trees)]))
