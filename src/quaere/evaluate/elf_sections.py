"""Minimal ELF64 reader: section table, printable strings of chosen sections, ELF headers inside bytes.

The audit reads an artifact's bytes directly, section by section, rather than through binutils: the
result is exact per section, needs no ``strings``/``objcopy``, and works on a buffer (``bytes`` or an
``mmap``) as well as on a file, so an object embedded inside another one is read the same way.
"""

from __future__ import annotations

import mmap
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ELF_MAGIC = b"\x7fELF"
_PRINTABLE_RUN = re.compile(rb"[\x20-\x7e]{4,}")
SHT_NOBITS = 8
# e_machine values the audit names; anything else is shown as its number.
MACHINES = {3: "x86", 40: "arm", 62: "x86-64", 183: "aarch64", 190: "cuda", 243: "riscv"}
HOST_MACHINES = frozenset({3, 40, 62, 183, 243})

Buffer = bytes | mmap.mmap  # only slicing, find and unpack_from are used


class NotElf(ValueError):
    """The bytes are not a 64-bit little-endian ELF object."""


@dataclass(frozen=True)
class Section:
    name: str
    offset: int
    size_bytes: int
    nobits: bool  # SHT_NOBITS (.bss): occupies no bytes in the file


@dataclass(frozen=True)
class ElfHeader:
    """The fields of an ELF64 header the audit uses."""

    machine: int
    type: int  # 1 relocatable, 2 executable, 3 shared object
    phoff: int
    shoff: int
    phentsize: int
    phnum: int
    shentsize: int
    shnum: int
    shstrndx: int

    @property
    def machine_name(self) -> str:
        return MACHINES.get(self.machine, f"machine {self.machine}")


def elf_header(data: Buffer, at: int = 0) -> ElfHeader:
    """The ELF64 LE header at ``at``; :class:`NotElf` for anything else (a 32-bit object included)."""
    if data[at : at + 4] != ELF_MAGIC or len(data) < at + 64 or data[at + 4] != 2 or data[at + 5] != 1:
        raise NotElf(f"no 64-bit little-endian ELF header at offset {at}")
    e_type, machine = struct.unpack_from("<HH", data, at + 0x10)
    phoff, shoff = struct.unpack_from("<QQ", data, at + 0x20)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, at + 0x36)
    return ElfHeader(machine, e_type, phoff, shoff, phentsize, phnum, shentsize, shnum, shstrndx)


def sections_of(data: Buffer) -> tuple[Section, ...]:
    """The section table of ELF64 LE bytes; :class:`NotElf` for anything else."""
    header = elf_header(data)
    if header.shoff == 0 or header.shnum == 0:
        return ()
    raw = [struct.unpack_from("<IIQQQQ", data, header.shoff + i * header.shentsize) for i in range(header.shnum)]
    names_off = raw[header.shstrndx][4] if header.shstrndx < len(raw) else 0

    def name_at(index: int) -> str:
        start = names_off + index
        end = data.find(b"\0", start, start + 256)
        return data[start : end if end >= 0 else start + 256].decode("ascii", "replace")

    return tuple(
        Section(name=name_at(r[0]), offset=r[4], size_bytes=r[5], nobits=r[1] == SHT_NOBITS) for r in raw
    )


def read_sections(path: Path) -> tuple[Section, ...]:
    """The section table of an ELF64 LE file; :class:`NotElf` for anything else."""
    return sections_of(path.read_bytes())


def section_strings(path: Path, names: tuple[str, ...]) -> tuple[str, ...]:
    """Printable ASCII runs of at least 4 characters in the named sections, in file order."""
    data = path.read_bytes()
    found: list[str] = []
    for section in sections_of(data):
        if section.name in names and not section.nobits and section.size_bytes:
            chunk = data[section.offset : section.offset + section.size_bytes]
            found.extend(m.group().decode("ascii") for m in _PRINTABLE_RUN.finditer(chunk))
    return tuple(found)


def section_at(sections: tuple[Section, ...], offset: int) -> str:
    """Name of the section whose file bytes hold ``offset``; '' for bytes outside every section."""
    for section in sections:
        if not section.nobits and section.offset <= offset < section.offset + section.size_bytes and section.name:
            return section.name
    return ""


def elf_headers_inside(data: Buffer, start: int = 1) -> Iterator[tuple[int, ElfHeader]]:
    """Every plausible ELF64 header in ``data`` at or after ``start`` (an object embedded in another)."""
    at = data.find(ELF_MAGIC, start)
    while at >= 0:
        try:
            header = elf_header(data, at)
        except (NotElf, struct.error):
            header = None
        if header is not None and header.type in (1, 2, 3):
            yield at, header
        at = data.find(ELF_MAGIC, at + 1)
