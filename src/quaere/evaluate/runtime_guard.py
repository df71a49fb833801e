"""The run-time half of the audit: a banned library loaded or looked up while the candidate runs.

Two independent witnesses, because each misses what the other sees:

* ``dlguard.c``, an ``LD_PRELOAD`` shim, logs every ``dlopen``/``dlmopen``/``dlsym``/``dlvsym`` with the
  object that made the call and, for lookups, the object the handle names. Only calls made by the
  candidate count (PyTorch itself preloads cuBLAS and lazily dlopens cuDNN): by the candidate's own
  object, by an object the candidate opened by path, and, where the judge passes the objects mapped
  before the candidate was loaded (``trusted_objects``), by any object that was not among them. What was
  asked for is judged by content where a file is named (:func:`identify_banned`), else by name.
* The maps diff (``maps.py``): a banned library that appears in the process's maps after the candidate
  began loading, identified by its SONAME and exports, however it was loaded.

Neither is a sandbox: code running in the process can undo both. They catch a candidate that uses a
banned library, not one engineered to hide from the evaluator (the static rules make that harder).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from quaere.evaluate.families import Family, families
from quaere.evaluate.isolation import build_environment
from quaere.evaluate.library_identity import identify
from quaere.evaluate.maps import (
    RUNTIME_MAPPING_NAME,
    RUNTIME_MAPPING_RATIONALE,
    banned_objects,
    new_banned_mappings,
    parse_maps,
    read_maps,
)
from quaere.evaluate.options import process_environment
from quaere.records import AuditFinding

__all__ = [
    "RUNTIME_RULES", "GuardCall", "GuardNotActive", "GuardUnavailable", "banned_mappings", "build_shim",
    "guard_environment", "mapping_findings", "new_banned_mappings", "parse_log", "parse_maps", "read_maps",
    "runtime_findings",
]

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
    "runtime_dlopen",
    "The candidate (or an object it loaded) called dlopen/dlmopen on a banned library, by name or content.",
)
RUNTIME_DLSYM = RuntimeRule(
    "runtime_dlsym",
    "The candidate (or an object it loaded) looked up a banned symbol, or any symbol of a banned library, "
    "with dlsym/dlvsym.",
)
RUNTIME_MAPPING = RuntimeRule(RUNTIME_MAPPING_NAME, RUNTIME_MAPPING_RATIONALE)
RUNTIME_RULES: tuple[RuntimeRule, ...] = (RUNTIME_DLOPEN, RUNTIME_DLSYM, RUNTIME_MAPPING)


class GuardUnavailable(RuntimeError):
    """The run-time guard cannot be used here (no C compiler, the shim failed to build or never loaded)."""


class GuardNotActive(GuardUnavailable):
    """The guard's log shows the shim was never loaded: no findings would prove nothing."""


@dataclass(frozen=True)
class GuardCall:
    """One line of the shim's log."""

    pid: int
    kind: str  # 'loaded', 'dlopen', 'dlmopen', 'dlsym' or 'dlvsym'
    name: str  # the library or symbol requested ('symbol@version' for dlvsym)
    caller: str  # path of the object that made the call; '?' when the address lies in no object
    target: str = "-"  # for lookups: the object the handle names, 'RTLD_DEFAULT' or 'RTLD_NEXT'


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
        # In the build's environment: a caller's GCC_EXEC_PREFIX or COMPILER_PATH would pick the compiler's programs.
        env, _ = build_environment(process_environment())
        done = subprocess.run(
            [compiler, *CFLAGS, "-o", str(tmp), str(src), "-ldl"],
            capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False, env=env,
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


def guard_environment(cache_dir: Path, log_path: Path) -> dict[str, str]:
    """Environment additions that load the shim into a process and log its calls to ``log_path``.

    ``LD_PRELOAD`` is the shim alone: a library the caller preloads would be mapped before the maps are first read
    and would call the loader before the candidate is there to blame, so it is not passed on.
    Raises :class:`GuardUnavailable` when the shim cannot be built.
    """
    return {"LD_PRELOAD": str(build_shim(cache_dir)), LOG_ENV: str(log_path)}


def parse_log(text: str) -> tuple[GuardCall, ...]:
    """The calls in the shim's log; lines that are not four or five tab-separated fields are skipped."""
    calls = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) in (4, 5) and fields[0].isdigit():
            calls.append(GuardCall(int(fields[0]), *fields[1:]))
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


class _Attribution:
    """Which callers in a log act for the candidate: its object, objects it opened by path (their
    constructors run inside its dlopen), and with ``trusted`` every object not mapped before it."""

    def __init__(self, candidate: Path, trusted: frozenset[str] | None) -> None:
        self.candidate, self.trusted = candidate, trusted
        self.opened: set[str] = set()
        self.known: dict[str, bool] = {}  # a worker's log repeats a few callers thousands of times

    def is_candidate(self, caller: str) -> bool:
        if caller not in self.known:
            self.known[caller] = (
                _same_object(caller, self.candidate) or os.path.realpath(caller) in self.opened
                or (self.trusted is not None and (caller == "?" or os.path.realpath(caller) not in self.trusted))
            )
        return self.known[caller]

    def opens(self, path: str) -> None:
        if "/" in path:
            self.opened.add(os.path.realpath(path))
            self.known = {k: v for k, v in self.known.items() if v}


def _library_family(name: str, fams: tuple[Family, ...]) -> str | None:
    by_name = next((f.name for f in fams if f.names_library(name)), None)
    if by_name or "/" not in name:
        return by_name
    return identify(name).banned(tuple(f.name for f in fams))


def _judge(call: GuardCall, fams: tuple[Family, ...]) -> AuditFinding | None:
    if call.kind in ("dlopen", "dlmopen"):
        family = _library_family(call.name, fams)
        rule = RUNTIME_DLOPEN
        evidence = f"{call.kind}({call.name!r}) from {call.caller}"
    elif call.kind in ("dlsym", "dlvsym"):
        family = next((f.name for f in fams if f.names_symbol(call.name)), None)
        if family is None and call.target.startswith("/"):
            family = _library_family(call.target, fams)
        rule = RUNTIME_DLSYM
        evidence = f"{call.kind}({call.target}, {call.name!r}) from {call.caller}"
    else:
        return None
    return _finding(rule, f"{evidence} ({family})") if family else None


def runtime_findings(
    log_path: Path, candidate_artifact: Path, banned: tuple[str, ...], *,
    trusted_objects: frozenset[str] | None = None,
) -> tuple[AuditFinding, ...]:
    """Banned ``dlopen``/``dlmopen``/``dlsym``/``dlvsym`` calls made for the candidate, from the shim's log.

    A call counts when its caller is the candidate's object, an object the candidate (transitively)
    opened by path, or, when ``trusted_objects`` is given (the real paths of every object mapped before
    the candidate was loaded, e.g. ``{os.path.realpath(m.path) for m in before if m.is_file}``), any
    caller outside that set, an address in no object ('?') included. A library is judged by its name
    and, where the call names a file, by that file's content; a lookup by the symbol's name or by the
    content of the object its handle names. Raises :class:`GuardNotActive` when the log is missing,
    shows the shim never loaded, or shows it could not find the real ``dlsym``.
    """
    try:
        calls = parse_log(log_path.read_text(errors="replace"))
    except FileNotFoundError as exc:
        raise GuardNotActive(f"{log_path}: no guard log; was the worker started with guard_environment()?") from exc
    if not any(c.kind == "loaded" for c in calls):
        raise GuardNotActive(f"{log_path}: the dlopen guard never loaded in the worker")
    if any(c.kind == "error" for c in calls):
        raise GuardNotActive(f"{log_path}: the dlopen guard loaded but could not find the real dlsym")
    fams = _library_families(banned)
    who = _Attribution(candidate_artifact, trusted_objects)
    findings: list[AuditFinding] = []
    for call in calls:
        if call.kind == "loaded" or not who.is_candidate(call.caller):
            continue
        if call.kind in ("dlopen", "dlmopen"):
            who.opens(call.name)
        finding = _judge(call, fams)
        if finding is not None:
            findings.append(finding)
    return tuple(dict.fromkeys(findings))


def banned_mappings(banned: tuple[str, ...], maps_text: str, pid: int | str = "self") -> frozenset[str]:
    """Paths of banned libraries mapped in a process (by content or name), from the text of its maps.

    ``pid`` is the process the text came from (deleted files are read through its ``map_files``).
    Kept for the in-process worker; the judge's runner uses :func:`new_banned_mappings`.
    """
    fams = tuple(f.name for f in _library_families(banned))
    if not fams:
        return frozenset()
    return frozenset(o.mapping.path for o in banned_objects(parse_maps(maps_text), fams, pid=pid))


def mapping_findings(before: frozenset[str], after: frozenset[str]) -> tuple[AuditFinding, ...]:
    """A finding for every banned mapping present after the candidate's first call and not before it."""
    return tuple(_finding(RUNTIME_MAPPING, f"mapped {path}") for path in sorted(after - before))
