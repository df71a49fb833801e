"""Where a candidate's build may read headers from: the compiler's own include directories, and the task.

A candidate is one self-contained source file. Every header its build reads must therefore come from
the toolchain (the C/C++ library, the CUDA toolkit, the system) or from the task folder; a header
anywhere else (a renamed CUTLASS folder, a file beside the candidate, /tmp) is code the audit's symbol
rules could be blind to, because ``#define cutlass qlib`` renames every symbol it produces.

The roots are asked of the compiler the task's build command names (``-E -v`` prints its search list;
nvcc forwards ``-v`` to its host compiler with ``-Xcompiler``), together with the include options of the
command itself, so they follow the toolchain rather than a list that rots.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from quaere.evaluate.isolation import build_environment
from quaere.evaluate.options import process_environment

PROBE_TIMEOUT_S = 60.0
# Options that add include directories: the task's own command may use them (resolved in its folder).
_DIR_OPTIONS = ("-I", "-isystem", "-idirafter", "-iquote", "--include-path", "--system-include")
# Options of the command that change which directories the compiler itself searches.
_SPLIT_OPTIONS = frozenset({"-ccbin", "--compiler-bindir", "-target", "--sysroot"})
_FLAG_OPTIONS = frozenset({"-nostdinc", "-nostdinc++", "-nostdlibinc"})
_JOINED_OPTIONS = ("-std=", "--std=", "--sysroot=", "-ccbin=", "--compiler-bindir=", "--target=")


class RootsUnknown(RuntimeError):
    """The compiler's include directories could not be learned (no compiler, or an odd output)."""


def _words(command: str) -> list[str]:
    words = shlex.split(command)
    while words and "=" in words[0] and not words[0].startswith("-"):  # leading VAR=value assignments
        words.pop(0)
    return words


def _option_values(words: list[str], names: tuple[str, ...]) -> list[tuple[str, str]]:
    found = []
    for index, word in enumerate(words):
        for name in names:
            if word == name and index + 1 < len(words):
                found.append((name, words[index + 1]))
            elif word.startswith(name) and word != name:
                found.append((name, word[len(name) :].removeprefix("=")))
    return found


def command_include_dirs(command: str, workdir: Path) -> tuple[str, ...]:
    """Directories the build command adds itself (``-I``, ``-isystem``...), relative ones resolved in ``workdir``."""
    return tuple(str((workdir / value).resolve()) for _, value in _option_values(_words(command), _DIR_OPTIONS))


def parse_search_list(text: str) -> tuple[str, ...]:
    """The directories between '#include <...> search starts here:' and 'End of search list.'
    (and those of the '#include "..."' list) in a compiler's ``-v`` output."""
    dirs: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("#include ") and "search starts here" in line:
            inside = True
        elif line.startswith("End of search list"):
            inside = False
        elif inside and line.startswith(" "):
            dirs.append(line.strip().removesuffix(" (framework directory)"))
    return tuple(dict.fromkeys(dirs))


def _probe_args(compiler: str, kept: tuple[str, ...]) -> list[str]:
    if Path(compiler).name.startswith("nvcc"):
        return [compiler, *kept, "-E", "-Xcompiler", "-v", "-x", "cu", os.devnull, "-o", os.devnull]
    return [compiler, *kept, "-E", "-v", "-x", "c++", os.devnull, "-o", os.devnull]


@lru_cache(maxsize=32)
def compiler_include_dirs(compiler: str, kept: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The include search list of ``compiler`` run with the options ``kept``; :class:`RootsUnknown` if none."""
    exe = shutil.which(compiler)
    if exe is None:
        raise RootsUnknown(f"compiler {compiler!r} of the build command is not on PATH")
    try:
        # In the build's environment: include folders named by the caller's (CPLUS_INCLUDE_PATH, NVCC_PREPEND_FLAGS)
        # would otherwise join the search list and pass as the toolchain's.
        env, _ = build_environment(process_environment())
        done = subprocess.run(_probe_args(exe, kept), capture_output=True, text=True, errors="replace",
                              timeout=PROBE_TIMEOUT_S, check=False, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RootsUnknown(f"could not ask {compiler} for its include directories: {exc}") from exc
    dirs = parse_search_list(done.stdout + "\n" + done.stderr)
    if not dirs:
        raise RootsUnknown(f"{compiler} -E -v printed no include search list (exit {done.returncode})")
    return dirs


def allowed_roots(command: str, task_folder: Path | None) -> tuple[str, ...]:
    """Real paths of every directory a build by ``command`` may read headers from: the compiler's search
    list, the command's own include options and ``task_folder``. Raises :class:`RootsUnknown`."""
    words = _words(command)
    if not words:
        raise RootsUnknown("empty build command")
    kept = _kept_words(words)
    workdir = task_folder or Path.cwd()
    roots = [*compiler_include_dirs(words[0], kept), *command_include_dirs(command, workdir)]
    roots += [str(task_folder)] if task_folder is not None else []
    return tuple(dict.fromkeys(os.path.realpath(r) for r in roots))


def _kept_words(words: list[str]) -> tuple[str, ...]:
    # '-ccbin gcc-12' and '-target x' take the next word; '-std=c++17', '--sysroot=/x', '-nostdinc' stand alone.
    kept: list[str] = []
    for index, word in enumerate(words):
        if word in _SPLIT_OPTIONS and index + 1 < len(words):
            kept += [word, words[index + 1]]
        elif word in _FLAG_OPTIONS or word.startswith(_JOINED_OPTIONS):
            kept.append(word)
    return tuple(kept)


def under_roots(real_path: str, roots: tuple[str, ...]) -> bool:
    """``real_path`` (symlinks already followed) lies in one of ``roots`` (real paths too)."""
    return any(real_path == root or real_path.startswith(root.rstrip("/") + "/") for root in roots)
