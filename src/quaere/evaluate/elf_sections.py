"""Minimal ELF64 reader: section names and the printable strings of chosen sections.

The audit needs only two things from an artifact's bytes that binutils would make awkward: whether it
carries device code (an ``.nv_fatbin`` section) and the strings of its data sections. Reading the section
table directly avoids depending on ``strings``/``objcopy`` and keeps the result exact per section.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

_ELF_MAGIC = b"\x7fELF"
_PRINTABLE_RUN = re.compile(rb"[\x20-\x7e]{4,}")


class NotElf(ValueError):
    """The file is not a 64-bit little-endian ELF object."""


@dataclass(frozen=True)
class Section:
    name: str
    offset: int
    size_bytes: int
    nobits: bool  # SHT_NOBITS (.bss): occupies no bytes in the file


def read_sections(path: Path) -> tuple[Section, ...]:
    """The section table of an ELF64 LE file; :class:`NotElf` for anything else."""
    data = path.read_bytes()
    if data[:4] != _ELF_MAGIC or data[4] != 2 or data[5] != 1:
        raise NotElf(f"{path}: not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shoff == 0 or shnum == 0:
        return ()
    raw = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_off = raw[shstrndx][4]

    def name_at(index: int) -> str:
        end = data.index(b"\0", names_off + index)
        return data[names_off + index : end].decode("ascii", "replace")

    sht_nobits = 8
    return tuple(
        Section(name=name_at(r[0]), offset=r[4], size_bytes=r[5], nobits=r[1] == sht_nobits) for r in raw
    )


def section_strings(path: Path, names: tuple[str, ...]) -> tuple[str, ...]:
    """Printable ASCII runs of at least 4 characters in the named sections, in file order."""
    wanted = [s for s in read_sections(path) if s.name in names and not s.nobits and s.size_bytes]
    if not wanted:
        return ()
    data = path.read_bytes()
    found: list[str] = []
    for section in wanted:
        chunk = data[section.offset : section.offset + section.size_bytes]
        found.extend(m.group().decode("ascii") for m in _PRINTABLE_RUN.finditer(chunk))
    return tuple(found)
