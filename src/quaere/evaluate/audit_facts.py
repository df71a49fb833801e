"""Collect the facts the audit rules judge: one pass of binutils and cuobjdump over a built artifact.

Rules stay pure functions over :class:`ArtifactFacts`; everything that runs a tool lives here. A tool
that is missing or fails never raises: it is recorded in ``missing_tools`` / ``notes`` so the caller can
say which evidence was not gathered.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from quaere.evaluate.elf_sections import NotElf, read_sections, section_strings
from quaere.evaluate.families import MENTIONS_LIBRARY

TOOL_TIMEOUT_S = 120.0
# Sections where nvcc/the host linker put device code (executable and relocatable fat binaries).
DEVICE_CODE_SECTIONS = frozenset({".nv_fatbin", "__nv_relfatbin", ".nvFatBinSegment"})
# Sections whose strings are kept: literals and initialised data (a library name handed to dlopen).
DATA_SECTIONS = (".rodata", ".data", ".data.rel.ro")

_NM_LINE = re.compile(r"^([0-9a-fA-F]+)?\s+(\S)\s(.+)$")
_NEEDED_LINE = re.compile(r"\(NEEDED\)\s+Shared library: \[(.+)\]")
_DEVICE_SYMBOL_TYPES = frozenset({"FUNC", "OBJECT", "NOTYPE"})


@dataclass(frozen=True)
class HostSymbol:
    """One host symbol as ``nm -C`` shows it."""

    name: str
    type_code: str
    defined: bool  # False for 'U' and weak undefined ('w', 'v')


@dataclass(frozen=True)
class ArtifactFacts:
    """What the build produced and read, as seen by the tools; the only input of the audit rules."""

    artifact: str
    included_headers: tuple[str, ...]
    dynamic_symbols: tuple[HostSymbol, ...] = ()  # nm -C -D
    symtab_symbols: tuple[HostSymbol, ...] = ()  # nm -C (empty when stripped)
    needed: tuple[str, ...] = ()  # readelf -d NEEDED entries
    has_device_code: bool = False
    device_symbols: tuple[str, ...] = ()  # cuobjdump -symbols of the embedded cubins, demangled
    data_strings: tuple[str, ...] = ()  # strings of the data sections that mention a library
    missing_tools: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def host_symbols(self) -> tuple[HostSymbol, ...]:
        return self.dynamic_symbols + self.symtab_symbols


def find_cuobjdump() -> Path | None:
    """cuobjdump on PATH, else in the ``nvidia`` pip packages (nvidia-cuda-cuobjdump), else a CUDA install."""
    on_path = shutil.which("cuobjdump")
    if on_path:
        return Path(on_path)
    candidates: list[Path] = []
    try:
        import nvidia  # namespace package of NVIDIA's pip wheels

        for root in nvidia.__path__:
            candidates += sorted(Path(root).glob("*/bin/cuobjdump")) + sorted(Path(root).glob("bin/cuobjdump"))
    except ImportError:
        pass
    candidates += sorted(Path("/usr/local").glob("cuda*/bin/cuobjdump"), reverse=True)
    return next((c for c in candidates if c.is_file()), None)


class _Tools:
    """Runs the tools, remembering which were missing and what failed."""

    def __init__(self) -> None:
        self.missing: list[str] = []
        self.notes: list[str] = []

    def run(self, name: str, exe: str | Path | None, args: list[str], stdin: str = "") -> str | None:
        if exe is None:
            self.missing.append(name)
            return None
        try:
            done = subprocess.run(
                [str(exe), *args], input=stdin, capture_output=True, text=True, errors="replace",
                timeout=TOOL_TIMEOUT_S, check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.notes.append(f"{name} failed: {exc}")
            return None
        if done.returncode != 0 and "no symbols" not in done.stderr:
            self.notes.append(f"{name} exited {done.returncode}: {done.stderr.strip()[-300:]}")
            return None
        return done.stdout


def parse_nm(text: str) -> tuple[HostSymbol, ...]:
    """Symbols from ``nm -C`` output; undefined ones have no address."""
    symbols = []
    for line in text.splitlines():
        m = _NM_LINE.match(line)
        if m:
            type_code = m.group(2)
            symbols.append(HostSymbol(m.group(3).strip(), type_code, defined=type_code not in "Uwv"))
    return tuple(symbols)


def parse_needed(text: str) -> tuple[str, ...]:
    return tuple(m.group(1) for m in map(_NEEDED_LINE.search, text.splitlines()) if m)


def parse_cuobjdump_symbols(text: str) -> tuple[str, ...]:
    """Raw device symbol names; nvcc's local names ``$outer$inner`` are split into their parts."""
    names: list[str] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0] in _DEVICE_SYMBOL_TYPES:
            names.extend(part for part in fields[-1].split("$") if part)
    return tuple(dict.fromkeys(names))


def _demangle(tools: _Tools, names: tuple[str, ...]) -> tuple[str, ...]:
    # Keep the mangled name next to its demangled form: the family patterns match both spellings.
    if not names:
        return ()
    out = tools.run("c++filt", shutil.which("c++filt"), [], stdin="\n".join(names) + "\n")
    if out is None:
        return names
    demangled = out.splitlines()
    if len(demangled) != len(names):
        return names
    return tuple(d if d == n else f"{d}  [{n}]" for n, d in zip(names, demangled))


def collect_facts(artifact: Path, included_headers: tuple[str, ...]) -> ArtifactFacts:
    """Run nm, readelf and (for CUDA builds) cuobjdump over ``artifact``; never raises for a tool problem."""
    tools = _Tools()
    nm, readelf = shutil.which("nm"), shutil.which("readelf")
    path = str(artifact)
    dynamic = parse_nm(tools.run("nm -C -D", nm, ["-C", "-D", path]) or "")
    symtab = parse_nm(tools.run("nm -C", nm, ["-C", path]) or "")
    needed = parse_needed(tools.run("readelf -d", readelf, ["-d", "-W", path]) or "")
    has_device_code, strings = False, ()
    try:
        has_device_code = any(s.name in DEVICE_CODE_SECTIONS for s in read_sections(artifact))
        strings = tuple(s for s in section_strings(artifact, DATA_SECTIONS) if MENTIONS_LIBRARY.search(s))
    except (NotElf, OSError, IndexError, ValueError, struct.error) as exc:  # a truncated or odd ELF
        tools.notes.append(f"could not read sections of {artifact}: {exc}")
    device: tuple[str, ...] = ()
    if has_device_code:
        raw = tools.run("cuobjdump", find_cuobjdump(), ["-symbols", path])
        device = _demangle(tools, parse_cuobjdump_symbols(raw or ""))
    return ArtifactFacts(
        artifact=path,
        included_headers=tuple(included_headers),
        dynamic_symbols=dynamic,
        symtab_symbols=symtab,
        needed=needed,
        has_device_code=has_device_code,
        device_symbols=device,
        data_strings=strings,
        missing_tools=tuple(dict.fromkeys(tools.missing)),
        notes=tuple(tools.notes),
    )
