"""Whole-file scans of a built artifact: objects embedded in it, banned names in any of its bytes, and
the device code inside its fat binary (compressed or not), and where its NEEDED entries point.

Symbol tables show only what the linker was told to export or import; ``.incbin`` puts a whole library
into a data section where no symbol table looks. So these scans read every byte: an ELF header at any
offset but the start is an embedded object (device code inside the fat binary excepted), and each
family's fingerprint (an API name, a SONAME, a mangled namespace) is searched in every section and in
every cubin ``cuobjdump -xelf all`` extracts, which also decompresses a compressed fat binary.

What no scan of bytes can see: a blob that is encrypted or compressed by the candidate itself and
decoded at run time. The run-time witnesses (maps diff, dlopen guard) are there for those.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from quaere.evaluate.elf_sections import HOST_MACHINES, MACHINES, Buffer, Section, elf_headers_inside, section_at
from quaere.evaluate.families import FAMILIES
from quaere.evaluate.library_identity import LibraryIdentity, identify_bytes

# Sections where nvcc and the host linker put device code (fat binaries of EM_CUDA cubins).
DEVICE_CODE_SECTIONS = frozenset({".nv_fatbin", "__nv_relfatbin", ".nvFatBinSegment"})
MAX_HITS_PER_PLACE = 5
EXTRACT_TIMEOUT_S = 120.0
_LIBRARY_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib")


# Sections a C/C++ compiler and the GNU linker emit into a shared object, depending on what the code
# uses (thread-locals, exceptions, constructors, PLT flavours), and nvcc's host-side ones (the fat
# binary, its segment descriptor, the module id of relocatable device code) for an audit without a
# reference build. The sections of the task's own initial kernel built with the same command are added
# to these, so a toolchain's new sections come from the toolchain, not from this list.
LINKER_SECTIONS = frozenset({
    "", ".interp", ".hash", ".gnu.hash", ".dynsym", ".dynstr", ".gnu.version", ".gnu.version_r",
    ".gnu.version_d", ".rela.dyn", ".rela.plt", ".relr.dyn", ".init", ".plt", ".plt.got", ".plt.sec", ".text",
    ".fini", ".rodata", ".eh_frame_hdr", ".eh_frame", ".gcc_except_table", ".tdata", ".tbss", ".init_array",
    ".fini_array", ".preinit_array", ".data.rel.ro", ".dynamic", ".got", ".got.plt", ".data", ".bss",
    ".comment", ".symtab", ".strtab", ".shstrtab", ".gnu_debuglink", ".gnu_debugaltlink",
    *DEVICE_CODE_SECTIONS, "__nv_module_id",
})
LINKER_SECTION_PREFIXES = (".note.", ".debug_", ".zdebug_", ".gnu.build.attributes")


def normal_section(name: str, reference: frozenset[str]) -> bool:
    """A section the linker, nvcc or the task's own build (``reference``) emits."""
    return name in LINKER_SECTIONS or name in reference or name.startswith(LINKER_SECTION_PREFIXES)


@dataclass(frozen=True)
class EmbeddedObject:
    """An ELF header found inside the artifact's bytes."""

    section: str  # '' when the offset lies in no section
    offset: int
    machine: str  # 'x86-64', 'cuda', ...
    host: bool  # built for a CPU (a library or program), not a GPU cubin
    identity: LibraryIdentity


@dataclass(frozen=True)
class Fingerprint:
    """A family's fingerprint seen in the bytes of one place (a section, or an extracted cubin)."""

    family: str
    place: str
    text: str


@dataclass(frozen=True)
class NeededLibrary:
    """A NEEDED entry and the file it resolves to here, identified by content."""

    name: str
    path: str
    identity: LibraryIdentity


def embedded_objects(data: Buffer, sections: tuple[Section, ...]) -> tuple[EmbeddedObject, ...]:
    """Every ELF object inside ``data`` but its own header, except GPU cubins inside device-code sections."""
    found = []
    for offset, header in elf_headers_inside(data):
        section = section_at(sections, offset)
        host = header.machine in HOST_MACHINES
        if section in DEVICE_CODE_SECTIONS and not host:
            continue  # the fat binary's own cubins: read by cuobjdump and the device-symbol rule
        identity = identify_bytes(data[offset:]) if host else LibraryIdentity()
        found.append(EmbeddedObject(section, offset, MACHINES.get(header.machine, str(header.machine)), host, identity))
    return tuple(found)


def fingerprints(data: Buffer, sections: tuple[Section, ...], place: str = "") -> tuple[Fingerprint, ...]:
    """Each family's fingerprints in ``data``, placed by section (or by ``place`` when given)."""
    found: dict[tuple[str, str], list[str]] = {}
    for fam in FAMILIES:
        if fam.fingerprint is None:
            continue
        for match in fam.fingerprint.finditer(data):
            where = place or section_at(sections, match.start()) or f"offset {match.start():#x}"
            texts = found.setdefault((fam.name, where), [])
            text = match.group().decode("ascii", "replace")
            if len(texts) < MAX_HITS_PER_PLACE and text not in texts:
                texts.append(text)
    return tuple(Fingerprint(fam, where, text) for (fam, where), texts in found.items() for text in texts)


def extract_device_code(cuobjdump: Path, artifact: Path) -> tuple[tuple[tuple[str, bytes], ...], str]:
    """(name, bytes) of every cubin in ``artifact``'s fat binaries, decompressed by ``cuobjdump -xelf all``,
    and a note ('' when it worked)."""
    with tempfile.TemporaryDirectory(prefix="quaere-cubins-") as folder:
        try:
            done = subprocess.run([str(cuobjdump), "-xelf", "all", str(artifact.resolve())], cwd=folder,
                                  capture_output=True, text=True, errors="replace", timeout=EXTRACT_TIMEOUT_S,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return (), f"cuobjdump -xelf failed: {exc}"
        cubins = tuple((p.name, p.read_bytes()) for p in sorted(Path(folder).iterdir()) if p.is_file())
    if done.returncode != 0 and not cubins:
        return (), f"cuobjdump -xelf exited {done.returncode}: {done.stderr.strip()[-300:]}"
    return cubins, ""


@lru_cache(maxsize=1)
def _ld_cache() -> dict[str, tuple[str, ...]]:
    # 'libfoo.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libfoo.so.1' from the loader's cache.
    try:
        text = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    cache: dict[str, list[str]] = {}
    for line in text.splitlines():
        name, arrow, path = line.strip().partition(" => ")
        if arrow:
            cache.setdefault(name.split(" (", 1)[0], []).append(path.strip())
    return {k: tuple(v) for k, v in cache.items()}


def resolve_needed(name: str, runpath: tuple[str, ...], origin: Path) -> tuple[str, ...]:
    """Files a NEEDED ``name`` can resolve to here: through the artifact's RUNPATH/RPATH (``$ORIGIN`` is
    its folder), the loader's cache and the default folders; every existing one, not only the first."""
    if "/" in name:
        return (name,) if os.path.isfile(name) else ()
    folders = [p.replace("${ORIGIN}", str(origin)).replace("$ORIGIN", str(origin)) for p in runpath]
    candidates = [os.path.join(f, name) for f in (*folders, *_LIBRARY_DIRS)] + list(_ld_cache().get(name, ()))
    return tuple(dict.fromkeys(os.path.realpath(c) for c in candidates if os.path.isfile(c)))
