"""Collect the facts the audit rules judge: binutils and cuobjdump over a built artifact, a scan of all
its bytes, the real paths of the headers its build read, and the candidate's source text.

Rules stay pure functions over :class:`ArtifactFacts`; everything that runs a tool or reads a file lives
here (and in ``artifact_scan.py``). A tool that is missing or fails never raises: it is recorded in
``missing_tools`` / ``notes`` so the caller can say which evidence was not gathered.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from quaere.evaluate.artifact_scan import (
    DEVICE_CODE_SECTIONS,
    EmbeddedObject,
    Fingerprint,
    NeededLibrary,
    embedded_objects,
    extract_device_code,
    fingerprints,
    resolve_needed,
)
from quaere.evaluate.elf_sections import NotElf, Section, section_strings, sections_of
from quaere.evaluate.families import MENTIONS_LIBRARY
from quaere.evaluate.library_identity import dynamic_info, identify
from quaere.evaluate.preprocess import own_lines

TOOL_TIMEOUT_S = 120.0
# Sections whose strings are kept: literals and initialised data (a library name handed to dlopen).
DATA_SECTIONS = (".rodata", ".data", ".data.rel.ro")
# Initialised data, whatever its content: a host section of it (an array literal, a __device__ array's host copy), and
# in a cubin the __device__ arrays' initial values and the __constant__ banks but the kernels' parameter banks
# (.nv.constant0.<kernel>), which the driver fills at each launch.
HOST_DATA = re.compile(r"\.(l?rodata|l?data|tdata)(\..*)?")
DEVICE_DATA = re.compile(r"\.nv\.(global\.init|constant[1-9]\d*)")

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
    header_realpaths: tuple[str, ...] = ()  # included_headers with symlinks followed, same order
    include_roots: tuple[str, ...] = ()  # real paths of the folders headers may come from; () = unknown
    sections: tuple[Section, ...] = ()
    reference_sections: frozenset[str] = frozenset()  # of the task's initial kernel, same build command
    reference_data_bytes: int | None = None  # its initialised host data (initialised_bytes); None without it
    device_data: tuple[tuple[str, int], ...] = ()  # (cubin, initialised device data bytes) per extracted cubin
    embedded: tuple[EmbeddedObject, ...] = ()
    fingerprints: tuple[Fingerprint, ...] = ()  # in any section, and in the extracted device code
    needed_libraries: tuple[NeededLibrary, ...] = ()  # NEEDED entries resolved here, by content
    source: str = ""  # path of the candidate's source; '' when not given
    source_text: str = ""
    preprocessed_text: str = ""  # the source's own lines after the preprocessor (evaluate.preprocess); '' when not made
    missing_tools: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    unread_text: tuple[str, ...] = ()  # why the source's text, as written or preprocessed, was not read (also a note)

    @property
    def host_symbols(self) -> tuple[HostSymbol, ...]:
        return self.dynamic_symbols + self.symtab_symbols


def initialised_bytes(sections: tuple[Section, ...], kind: re.Pattern[str]) -> int:
    """Bytes of the sections whose name ``kind`` matches whole and that occupy file bytes (not .bss)."""
    return sum(s.size_bytes for s in sections if not s.nobits and kind.fullmatch(s.name))


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
    return tuple(d if d == n else f"{d}  [{n}]" for n, d in zip(names, demangled, strict=True))


@dataclass(frozen=True)
class FactInputs:
    """What the audit knows besides the artifact: the candidate's source, where headers may come from,
    and the sections a build of the task's own initial kernel produced with the same command."""

    source: Path | None = None
    include_roots: tuple[str, ...] = ()
    reference: Path | None = None
    preprocessed: Path | None = None
    """The build's translation unit after the preprocessor (``BuildResult.preprocessed``), when it made one."""


@dataclass(frozen=True)
class _ByteFacts:
    """What reading the artifact's own bytes showed."""

    sections: tuple[Section, ...] = ()
    data_strings: tuple[str, ...] = ()
    embedded: tuple[EmbeddedObject, ...] = ()
    fingerprints: tuple[Fingerprint, ...] = ()
    runpath: tuple[str, ...] = ()

    @property
    def has_device_code(self) -> bool:
        return any(s.name in DEVICE_CODE_SECTIONS for s in self.sections)


def _bytes_facts(artifact: Path, tools: _Tools) -> _ByteFacts:
    try:
        data = artifact.read_bytes()
        sections = sections_of(data)
        runpath = dynamic_info(data, with_symbols=False).runpath
    except (NotElf, OSError, IndexError, ValueError, struct.error) as exc:  # a truncated or odd ELF
        tools.notes.append(f"could not read sections of {artifact}: {exc}")
        return _ByteFacts()
    strings = tuple(s for s in section_strings(artifact, DATA_SECTIONS) if MENTIONS_LIBRARY.search(s))
    return _ByteFacts(sections, strings, embedded_objects(data, sections), fingerprints(data, sections), runpath)


def _needed_libraries(needed: tuple[str, ...], runpath: tuple[str, ...], artifact: Path) -> tuple[NeededLibrary, ...]:
    return tuple(
        NeededLibrary(name, path, identify(path))
        for name in needed
        for path in resolve_needed(name, runpath, artifact.resolve().parent)
    )


@dataclass(frozen=True)
class _DeviceFacts:
    """What cuobjdump showed of the fat binary's cubins."""

    symbols: tuple[str, ...] = ()
    fingerprints: tuple[Fingerprint, ...] = ()
    data: tuple[tuple[str, int], ...] = ()  # (cubin, initialised device data bytes)


def _cubin_data(name: str, data: bytes, tools: _Tools) -> tuple[str, int]:
    try:
        return name, initialised_bytes(sections_of(data), DEVICE_DATA)
    except (NotElf, IndexError, ValueError, struct.error) as exc:
        tools.notes.append(f"could not read the sections of device code {name}: {exc}")
        return name, 0


def _device_facts(artifact: Path, tools: _Tools) -> _DeviceFacts:
    cuobjdump = find_cuobjdump()
    raw = tools.run("cuobjdump", cuobjdump, ["-symbols", str(artifact)])
    symbols = _demangle(tools, parse_cuobjdump_symbols(raw or ""))
    if cuobjdump is None:
        return _DeviceFacts(symbols)
    cubins, note = extract_device_code(cuobjdump, artifact)
    tools.notes += [note] if note else []
    prints = tuple(f for name, data in cubins for f in fingerprints(data, (), place=f"device code {name}"))
    return _DeviceFacts(symbols, prints, tuple(_cubin_data(name, data, tools) for name, data in cubins))


def _reference_sections(reference: Path | None, tools: _Tools) -> tuple[frozenset[str], int | None]:
    """The reference build's section names and initialised host data bytes (None without a readable one)."""
    if reference is None:
        return frozenset(), None
    try:
        sections = sections_of(reference.read_bytes())
    except (NotElf, OSError, IndexError, ValueError, struct.error) as exc:
        tools.notes.append(f"could not read the sections of the reference build {reference}: {exc}")
        return frozenset(), None
    return frozenset(s.name for s in sections), initialised_bytes(sections, HOST_DATA)


def collect_facts(
    artifact: Path, included_headers: tuple[str, ...], inputs: FactInputs = FactInputs()
) -> ArtifactFacts:
    """Run nm, readelf and (for CUDA builds) cuobjdump over ``artifact``, scan its bytes, resolve its
    NEEDED entries and headers and read the source; never raises for a tool or file problem."""
    tools = _Tools()
    nm, readelf = shutil.which("nm"), shutil.which("readelf")
    path = str(artifact)
    dynamic = parse_nm(tools.run("nm -C -D", nm, ["-C", "-D", path]) or "")
    symtab = parse_nm(tools.run("nm -C", nm, ["-C", path]) or "")
    needed = parse_needed(tools.run("readelf -d", readelf, ["-d", "-W", path]) or "")
    scanned = _bytes_facts(artifact, tools)
    device = _device_facts(artifact, tools) if scanned.has_device_code else _DeviceFacts()
    reference_names, reference_data = _reference_sections(inputs.reference, tools)
    source_text, preprocessed_text, unread = "", "", []
    if inputs.source is not None:
        try:
            source_text = inputs.source.read_text(errors="replace")
        except OSError as exc:
            unread.append(f"could not read the source {inputs.source}: {exc}")
    if inputs.preprocessed is not None:
        try:
            preprocessed_text = own_lines(inputs.preprocessed.read_text(errors="replace"))
        except OSError as exc:
            unread.append(f"could not read the preprocessed source {inputs.preprocessed}: {exc}")
    return ArtifactFacts(
        artifact=path,
        included_headers=tuple(included_headers),
        dynamic_symbols=dynamic,
        symtab_symbols=symtab,
        needed=needed,
        has_device_code=scanned.has_device_code,
        device_symbols=device.symbols,
        data_strings=scanned.data_strings,
        sections=scanned.sections,
        embedded=scanned.embedded,
        fingerprints=scanned.fingerprints + device.fingerprints,
        header_realpaths=tuple(os.path.realpath(h) for h in included_headers),
        include_roots=inputs.include_roots,
        reference_sections=reference_names,
        reference_data_bytes=reference_data,
        device_data=device.data,
        needed_libraries=_needed_libraries(needed, scanned.runpath, artifact),
        source=str(inputs.source or ""),
        source_text=source_text,
        preprocessed_text=preprocessed_text,
        missing_tools=tuple(dict.fromkeys(tools.missing)),
        notes=(*tools.notes, *unread),
        unread_text=tuple(unread),
    )
