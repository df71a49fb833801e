"""The run-time half of the audit: a banned library loaded or looked up while the candidate runs.

Two independent witnesses, because each misses what the other sees:

* ``dlguard.c``, an ``LD_PRELOAD`` shim, logs every ``dlopen``/``dlmopen``/``dlsym`` with the object that
  made the call. Only calls made *by the candidate* count: PyTorch itself preloads cuBLAS and lazily
  dlopens cuDNN. It catches a candidate looking up cuBLAS symbols that PyTorch had already mapped.
* ``/proc/<pid>/maps`` read before and after the candidate's first call: a banned library that appears
  in between was loaded by that call, however it was loaded (a helper library, a raw ``dlvsym``...).

Neither is a sandbox: code running in the worker can undo both. They catch a candidate that uses a
banned library, not one engineered to hide from the evaluator (the static rules make that harder).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from quaere.evaluate.families import Family, families
from quaere.records import AuditFinding

SHIM_SOURCE = "dlguard.c"
LOG_ENV = "QUAERE_DLGUARD_LOG"
COMPILERS = ("cc", "gcc", "clang")
# -O2 turns the wrappers' final calls into jumps (glibc reads the caller from its return address);
# a stack protector could prevent that.
CFLAGS = ("-shared", "-fPIC", "-O2", "-fno-stack-protector", "-Wall")
COMPILE_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class RuntimeRule:
    name: str
    rationale: str


RUNTIME_DLOPEN = RuntimeRule(
    "runtime_dlopen", "The candidate called dlopen/dlmopen on a banned library while it ran."
)
RUNTIME_DLSYM = RuntimeRule(
    "runtime_dlsym", "The candidate looked up a banned library's symbol with dlsym while it ran."
)
RUNTIME_MAPPING = RuntimeRule(
    "runtime_mapping", "A banned library was mapped into the worker during the candidate's first call."
)
RUNTIME_RULES: tuple[RuntimeRule, ...] = (RUNTIME_DLOPEN, RUNTIME_DLSYM, RUNTIME_MAPPING)


class GuardUnavailable(RuntimeError):
    """The run-time guard cannot be used here (no C compiler, the shim failed to build or never loaded)."""


class GuardNotActive(GuardUnavailable):
    """The guard's log shows the shim was never loaded: no findings would prove nothing."""


@dataclass(frozen=True)
class GuardCall:
    """One line of the shim's log."""

    pid: int
    kind: str  # 'loaded', 'dlopen', 'dlmopen' or 'dlsym'
    name: str  # the library or symbol requested
    caller: str  # path of the object that made the call


def _shim_source() -> bytes:
    return resources.files("quaere.evaluate").joinpath(SHIM_SOURCE).read_bytes()


def build_shim(cache_dir: Path) -> Path:
    """Compile the shim once per source and compiler into ``cache_dir`` (atomic rename); return its path."""
    compiler = next((c for c in map(shutil.which, COMPILERS) if c), None)
    if compiler is None:
        raise GuardUnavailable(f"no C compiler ({', '.join(COMPILERS)}) on PATH: the dlopen guard cannot be built")
    source = _shim_source()
    key = hashlib.sha256(source + "\0".join((compiler, *CFLAGS)).encode()).hexdigest()[:16]
    target = cache_dir / f"dlguard-{key}.so"
    if target.is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    src = cache_dir / f".dlguard-{key}-{os.getpid()}.c"
    tmp = cache_dir / f".dlguard-{key}-{os.getpid()}.so"
    src.write_bytes(source)
    try:
        done = subprocess.run(
            [compiler, *CFLAGS, "-o", str(tmp), str(src), "-ldl"],
            capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False,
        )
        if done.returncode != 0:
            raise GuardUnavailable(f"{compiler} failed to build the dlopen guard: {done.stderr.strip()[-500:]}")
        os.replace(tmp, target)  # concurrent builders race harmlessly: same bytes, atomic rename
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GuardUnavailable(f"could not build the dlopen guard with {compiler}: {exc}") from exc
    finally:
        src.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
    return target


def guard_environment(
    cache_dir: Path, log_path: Path, base_env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Environment additions that load the shim into a process and log its calls to ``log_path``.

    ``LD_PRELOAD`` is the shim followed by any value already in ``base_env`` (``os.environ`` by default).
    Raises :class:`GuardUnavailable` when the shim cannot be built.
    """
    shim = build_shim(cache_dir)
    existing = (os.environ if base_env is None else base_env).get("LD_PRELOAD", "")
    return {
        "LD_PRELOAD": f"{shim}:{existing}" if existing else str(shim),
        LOG_ENV: str(log_path),
    }


def parse_log(text: str) -> tuple[GuardCall, ...]:
    """The calls in the shim's log; lines that are not four tab-separated fields are skipped."""
    calls = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 4 and fields[0].isdigit():
            calls.append(GuardCall(int(fields[0]), fields[1], fields[2], fields[3]))
    return tuple(calls)


def _same_object(caller: str, candidate: Path) -> bool:
    try:
        return os.path.samefile(caller, candidate)
    except OSError:
        return os.path.realpath(caller) == os.path.realpath(candidate)


def _finding(rule: RuntimeRule, evidence: str) -> AuditFinding:
    return AuditFinding(rule=rule.name, rationale=rule.rationale, evidence=evidence)


def _library_families(banned: tuple[str, ...]) -> tuple[Family, ...]:
    return tuple(f for f in families(banned) if f.library is not None)


def runtime_findings(log_path: Path, candidate_artifact: Path, banned: tuple[str, ...]) -> tuple[AuditFinding, ...]:
    """Banned ``dlopen``/``dlmopen``/``dlsym`` calls made by the candidate object, from the shim's log.

    Raises :class:`GuardNotActive` when the log is missing or shows the shim never loaded.
    """
    try:
        calls = parse_log(log_path.read_text(errors="replace"))
    except FileNotFoundError as exc:
        raise GuardNotActive(f"{log_path}: no guard log; was the worker started with guard_environment()?") from exc
    if not any(c.kind == "loaded" for c in calls):
        raise GuardNotActive(f"{log_path}: the dlopen guard never loaded in the worker")
    fams = _library_families(banned)
    findings: list[AuditFinding] = []
    is_candidate: dict[str, bool] = {}  # a worker's log repeats a few callers thousands of times
    for call in calls:
        if call.caller not in is_candidate:
            is_candidate[call.caller] = _same_object(call.caller, candidate_artifact)
        if call.kind == "loaded" or not is_candidate[call.caller]:
            continue
        for fam in fams:
            if call.kind in ("dlopen", "dlmopen") and fam.names_library(call.name):
                findings.append(_finding(RUNTIME_DLOPEN, f"{call.kind}({call.name!r}) from {call.caller} ({fam.name})"))
            elif call.kind == "dlsym" and fam.names_symbol(call.name):
                findings.append(_finding(RUNTIME_DLSYM, f"dlsym({call.name!r}) from {call.caller} ({fam.name})"))
    return tuple(dict.fromkeys(findings))


def banned_mappings(banned: tuple[str, ...], maps_text: str) -> frozenset[str]:
    """Paths of banned libraries mapped in a process, from the text of ``/proc/<pid>/maps``."""
    fams = _library_families(banned)
    paths = set()
    for line in maps_text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/"):
            path = fields[5].removesuffix(" (deleted)")
            if any(f.names_library(path) for f in fams):
                paths.add(path)
    return frozenset(paths)


def read_maps(pid: int | str = "self") -> str:
    """The text of ``/proc/<pid>/maps`` (Linux)."""
    return Path(f"/proc/{pid}/maps").read_text()


def mapping_findings(before: frozenset[str], after: frozenset[str]) -> tuple[AuditFinding, ...]:
    """A finding for every banned mapping present after the candidate's first call and not before it."""
    return tuple(_finding(RUNTIME_MAPPING, f"mapped {path}") for path in sorted(after - before))
