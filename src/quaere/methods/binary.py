"""What the built kernel is made of: an instruction mix and, for CUDA builds, registers and spills.

CUDA: ``cuobjdump -sass`` (SASS opcodes) and ``cuobjdump -res-usage`` (registers, stack, shared and local
memory per kernel; local memory in use usually means spills), and the ptxas spill lines when the build
log holds them. CPU: ``objdump -d`` of the entry point (x86 mnemonics). Opcode classes are a table, so a
reader sees what "tensor" or "spill" counts.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

RUN_TIMEOUT_S = 120.0

# (class, opcode prefixes), first match wins; opcodes are compared without their .modifiers.
SASS_CLASSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tensor core", ("HGMMA", "HMMA", "IMMA", "QGMMA", "IGMMA", "BGMMA", "UTCHMMA", "UTCQMMA")),
    ("tma / bulk copy", ("UTMALDG", "UTMASTG", "UTMAPF", "UBLKCP", "UTMACCTL")),
    ("global memory", ("LDG", "STG", "LDGSTS", "ATOMG", "RED", "ATOM")),
    ("shared memory", ("LDS", "STS", "LDSM", "STSM", "ATOMS")),
    ("local memory (spills)", ("LDL", "STL")),
    ("fp32 math", ("FFMA", "FADD", "FMUL", "FMNMX", "FSETP", "FSEL", "FCHK")),
    ("special function", ("MUFU",)),
    ("conversion", ("F2F", "F2FP", "F2I", "I2F", "I2FP", "FRND")),
    ("sync / barrier", ("BAR", "SYNCS", "MEMBAR", "WARPSYNC", "DEPBAR", "ARRIVES", "WARPGROUP")),
    ("control", ("BRA", "EXIT", "CALL", "RET", "BSSY", "BSYNC", "JMP", "BREAK", "NOP")),
    ("integer / address", ("IMAD", "IADD", "LOP", "SHF", "ISETP", "LEA", "MOV", "SEL", "PRMT", "IABS", "S2R",
                           "S2UR", "CS2R", "UMOV", "UIADD", "ULEA", "ULOP", "USHF", "UISETP", "R2UR", "SHFL")),
)
X86_CLASSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("scalar float", ("mulss", "addss", "subss", "divss", "maxss", "minss", "mulsd", "addsd", "subsd", "divsd",
                      "vmulss", "vaddss", "vsubss", "vdivss", "vmaxss", "cvt", "vcvt", "ucomis", "comis")),
    ("vector (packed)", ("vfmadd", "vmul", "vadd", "vsub", "vdiv", "vmax", "vmin", "vexp", "mulps", "addps",
                         "subps", "divps", "maxps", "minps", "mulpd", "addpd", "vbroadcast", "vperm", "vshuf")),
    ("vector move", ("vmov", "movaps", "movups", "movdqa", "movdqu", "vextract", "vinsert")),
    ("calls", ("call", "jmp")),
    ("branches", ("j",)),
    ("memory / moves", ("mov", "lea", "push", "pop")),
    ("integer", ("add", "sub", "imul", "inc", "dec", "cmp", "test", "and", "or", "xor", "shl", "shr", "sar")),
)

_SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")
_X86_LINE = re.compile(r"^\s*[0-9a-f]+:\s+(?:[0-9a-f]{2}\s)*\s*([a-z][a-z0-9]*)", re.MULTILINE)
_RES_FUNCTION = re.compile(r"^\s*Function\s+(\S+?):?\s*$")
_RES_FIELD = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


@dataclass(frozen=True)
class Mix:
    total: int
    by_class: tuple[tuple[str, int], ...]  # largest first
    top: tuple[tuple[str, int], ...]  # the most frequent opcodes


@dataclass(frozen=True)
class KernelResources:
    function: str
    registers: int
    stack_bytes: int
    shared_bytes: int
    local_bytes: int


def classify(opcode: str, table: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    return next((name for name, prefixes in table if opcode.startswith(prefixes)), "other")


def _mix(opcodes: list[str], table: tuple[tuple[str, tuple[str, ...]], ...], top: int) -> Mix:
    classes = Counter(classify(op, table) for op in opcodes)
    return Mix(len(opcodes), tuple(classes.most_common()), tuple(Counter(opcodes).most_common(top)))


def sass_mix(text: str, top: int = 12) -> Mix:
    """Opcode mix of ``cuobjdump -sass`` output (predicates and .modifiers dropped)."""
    return _mix([m.group(1).split(".")[0] for m in _SASS_LINE.finditer(text)], SASS_CLASSES, top)


def x86_mix(text: str, top: int = 12) -> Mix:
    """Mnemonic mix of ``objdump -d`` output."""
    return _mix(_X86_LINE.findall(text), X86_CLASSES, top)


def resource_usage(text: str) -> tuple[KernelResources, ...]:
    """Per kernel: registers, stack, shared and local bytes from ``cuobjdump -res-usage``."""
    found: list[KernelResources] = []
    function = ""
    for line in text.splitlines():
        header = _RES_FUNCTION.match(line)
        if header:
            function = header.group(1)
            continue
        fields = dict((k, int(v)) for k, v in _RES_FIELD.findall(line))
        if function and "REG" in fields:
            found.append(KernelResources(function, fields["REG"], fields.get("STACK", 0), fields.get("SHARED", 0),
                                         fields.get("LOCAL", 0)))
            function = ""
    return tuple(found)


def spill_lines(build_log: str) -> tuple[tuple[int, int], ...]:
    """(spill store bytes, spill load bytes) of each ptxas report in a build log (-Xptxas -v)."""
    return tuple((int(a), int(b)) for a, b in _SPILLS.findall(build_log))


def run_tool(command: list[str]) -> tuple[str, str]:
    """(stdout, "") of a disassembler run, or ("", why it failed)."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "", f"{command[0]} failed: {exc}"
    if done.returncode != 0:
        return "", f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[:300]}"
    return done.stdout, ""


def disassemble(artifact: Path, cuda: bool, tool: Path, entry_point: str) -> tuple[Mix | None, str]:
    """The instruction mix of ``artifact`` (the whole device code, or the host entry point); None and why."""
    if cuda:
        text, why = run_tool([str(tool), "-sass", str(artifact)])
        return (sass_mix(text), "") if text else (None, why or "cuobjdump found no device code")
    text, why = run_tool([str(tool), "-d", "--no-show-raw-insn", f"--disassemble={entry_point}", str(artifact)])
    mix = x86_mix(text) if text else None
    if mix is None or mix.total == 0:
        return None, why or f"objdump found no instructions of {entry_point}"
    return mix, ""
