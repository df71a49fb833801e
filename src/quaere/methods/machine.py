"""Which programs the tooled arm can use on this machine: found once, said in the trace and the report.

A missing profiler never stops a campaign: the digest runs without that part and says so. What the arm
cannot run without at all is ``quaere`` itself on the agent's PATH (every tool is a ``quaere tool``
command); its absence is a :class:`~quaere.methods.base.MethodError` before anything starts.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from quaere.methods.base import MethodError
from quaere.trace import ToolState

PROBE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Programs:
    """Paths of the programs the profile digest runs (None: not on this machine)."""

    ncu: Path | None
    ncu_note: str  # what was found, or why Nsight Compute is not used
    cuobjdump: Path | None
    objdump: Path | None


def _ncu(path: str, cuda_task: bool) -> tuple[Path | None, str]:
    if not cuda_task:
        return None, "not used: a CPU task has no CUDA kernel to profile"
    found = shutil.which("ncu", path=path)
    if found is None:
        return None, "ncu is not on PATH: the profile digest runs without Nsight Compute sections"
    try:
        done = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{found} does not run ({exc}): the profile digest runs without Nsight Compute sections"
    if done.returncode != 0:
        return None, f"{found} --version exited {done.returncode}: the digest runs without Nsight Compute sections"
    version = (done.stdout.strip().splitlines() or ["?"])[-1]
    return Path(found), f"{found}: {version}"


def find_programs(path: str, cuda_task: bool) -> Programs:
    """Look for ncu (CUDA tasks), cuobjdump (CUDA tasks) and objdump (CPU tasks) on ``path``."""
    from quaere.evaluate.audit_facts import find_cuobjdump

    ncu, note = _ncu(path, cuda_task)
    objdump = shutil.which("objdump", path=path)
    return Programs(
        ncu=ncu,
        ncu_note=note,
        cuobjdump=find_cuobjdump() if cuda_task else None,
        objdump=Path(objdump) if objdump else None,
    )


def tool_states(programs: Programs, cuda_task: bool, docs: tuple[Path, ...]) -> tuple[ToolState, ...]:
    """What the trace's ``method`` event says of each tool of the arm."""
    disassembler = ("cuobjdump", programs.cuobjdump) if cuda_task else ("objdump", programs.objdump)
    name, found = disassembler
    mix = f"{found}" if found else f"{name} not found: the digest has no instruction mix or register counts"
    return (
        ToolState(name="profile", available=True, detail="achieved vs roofline per configuration, from the ledger"),
        ToolState(name="ncu", available=programs.ncu is not None, detail=programs.ncu_note),
        ToolState(name=name, available=found is not None, detail=mix),
        ToolState(name="search", available=True,
                  detail="; ".join(["the shipped CUDA notes", "the task's pages", *(str(d) for d in docs)])),
        ToolState(name="lessons", available=True, detail=".quaere/tooled/lessons.jsonl"),
        ToolState(name="lineage", available=True, detail="every evaluated version, its parent and its diff"),
        ToolState(name="supervisor", available=True, detail="a 'change approach' note on loops of failed edits"),
    )


def require_quaere(path: str) -> Path:
    """``quaere`` on the agent's PATH, else a MethodError naming what is missing."""
    found = shutil.which("quaere", path=path)
    if found is None:
        raise MethodError("--method tooled: `quaere` is not on PATH, so the agent could not call `quaere tool ...`")
    return Path(found)


def check_docs(folders: tuple[Path, ...]) -> tuple[Path, ...]:
    """Absolute paths of ``folders``; a MethodError naming the first that is not a folder."""
    for folder in folders:
        if not folder.is_dir():
            raise MethodError(f"--docs {folder}: no such folder")
    return tuple(folder.resolve() for folder in folders)
