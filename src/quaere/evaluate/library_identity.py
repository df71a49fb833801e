"""Which banned library a shared object *is*, decided by its content: ``DT_SONAME`` and exported symbols.

A file name is a claim anyone can change: ``cp libcublas.so.13 /tmp/libqq.so`` keeps every byte that
makes it cuBLAS. A renamed copy still carries ``DT_SONAME libcublas.so.13`` and still exports
``cublasCreate_v2``; editing those out would break every program that links or looks them up. So the
static audit (NEEDED entries, embedded objects), the maps diff and the guard's log all ask
:func:`identify_banned`, which reads the dynamic segment (through program headers, so a stripped
section table hides nothing) and never the path.

Reading is bounded: a file is memory-mapped and only its dynamic string and symbol tables are touched;
the symbol table is parsed only when its strings mention a banned name at all. Results for files are
cached by (device, inode, size, mtime), so a long-lived process identifies each library once.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from quaere.evaluate.elf_sections import Buffer, NotElf, elf_header
from quaere.evaluate.families import FAMILIES, Family, families

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NEEDED, DT_HASH, DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 1, 4, 5, 6, 10, 14, 15, 29
DT_GNU_HASH = 0x6FFFFEF5
SYMBOL_SIZE = 24
_EXPORTED_BINDINGS = frozenset({1, 2, 10})  # GLOBAL, WEAK, GNU_UNIQUE
MAX_SYMBOLS_SHOWN = 3
# Any banned family named in a string table, mangled (4cute) or not: only then are symbols parsed.
_MENTIONS = re.compile(rb"cublas|cudnn|cutlass|4cute|cute::", re.IGNORECASE)


@dataclass(frozen=True)
class DynamicInfo:
    """What a shared object's dynamic segment says about it."""

    soname: str = ""
    needed: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()  # DT_RUNPATH, else DT_RPATH, split on ':'
    exported: tuple[str, ...] = ()  # defined global/weak dynamic symbols; parsed only when asked


@dataclass(frozen=True)
class LibraryIdentity:
    """The banned families a shared object belongs to, with the evidence: its SONAME or its exports."""

    families: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    error: str = ""  # why the bytes could not be read as an ELF shared object ('' when they were)

    def banned(self, banned: tuple[str, ...]) -> str | None:
        return next((f for f in self.families if f in banned), None)


def _segments(data: Buffer) -> list[tuple[int, ...]]:
    header = elf_header(data)
    return [struct.unpack_from("<IIQQQQ", data, header.phoff + i * header.phentsize)[:6] for i in range(header.phnum)]


def _to_offset(loads: list[tuple[int, ...]], vaddr: int) -> int | None:
    # Shared objects on disk hold addresses relative to a zero base: vaddr -> file offset through PT_LOAD.
    for offset, start, size in ((s[2], s[3], s[5]) for s in loads):
        if start <= vaddr < start + size:
            return offset + vaddr - start
    return None


def _string(data: Buffer, at: int) -> str:
    end = data.find(b"\0", at, at + 4096)
    return data[at : end if end >= 0 else at + 4096].decode("utf-8", "replace")


def _symbol_count(data: Buffer, tags: dict[int, list[int]], loads: list[tuple[int, ...]]) -> int:
    if DT_HASH in tags and (at := _to_offset(loads, tags[DT_HASH][0])) is not None:
        return struct.unpack_from("<II", data, at)[1]  # nchain == number of symbols
    if DT_GNU_HASH not in tags or (at := _to_offset(loads, tags[DT_GNU_HASH][0])) is None:
        return 0
    nbuckets, symoffset, bloom_size, _ = struct.unpack_from("<IIII", data, at)
    buckets_at = at + 16 + 8 * bloom_size
    last = max(struct.unpack_from(f"<{nbuckets}I", data, buckets_at), default=0)
    if last < symoffset:
        return symoffset
    chain_at = buckets_at + 4 * nbuckets
    while not struct.unpack_from("<I", data, chain_at + 4 * (last - symoffset))[0] & 1:
        last += 1
    return last + 1


def _exported(data: Buffer, tags: dict[int, list[int]], loads: list[tuple[int, ...]], strtab: int) -> tuple[str, ...]:
    symtab = _to_offset(loads, tags.get(DT_SYMTAB, [0])[0])
    if symtab is None:
        return ()
    names = []
    for index in range(1, _symbol_count(data, tags, loads)):
        name_off, info, other, shndx, _, _ = struct.unpack_from("<IBBHQQ", data, symtab + index * SYMBOL_SIZE)
        if shndx != 0 and (info >> 4) in _EXPORTED_BINDINGS and (other & 3) in (0, 3):  # default/protected
            names.append(_string(data, strtab + name_off))
    return tuple(names)


def dynamic_info(data: Buffer, with_symbols: bool = True) -> DynamicInfo:
    """SONAME, NEEDED, RUNPATH and (``with_symbols``) exported symbols of ELF64 LE bytes.

    Raises :class:`NotElf` for non-ELF bytes; an object without a dynamic segment gives an empty record.
    """
    segments = _segments(data)
    loads = [s for s in segments if s[0] == PT_LOAD]
    dynamic = next((s for s in segments if s[0] == PT_DYNAMIC), None)
    if dynamic is None:
        return DynamicInfo()
    tags: dict[int, list[int]] = {}
    for at in range(dynamic[2], dynamic[2] + dynamic[5], 16):
        tag, value = struct.unpack_from("<qQ", data, at)
        if tag == 0:
            break
        tags.setdefault(tag, []).append(value)
    strtab = _to_offset(loads, tags.get(DT_STRTAB, [0])[0])
    if strtab is None:
        return DynamicInfo()

    def text(tag: int) -> list[str]:
        return [_string(data, strtab + v) for v in tags.get(tag, [])]

    search = text(DT_RUNPATH) or text(DT_RPATH)
    strsz = tags.get(DT_STRSZ, [0])[0]
    # The symbol table is only worth parsing when its strings name a banned library at all.
    mentions = bool(_MENTIONS.search(data, strtab, strtab + strsz)) if strsz else True
    return DynamicInfo(
        soname=next(iter(text(DT_SONAME)), ""),
        needed=tuple(text(DT_NEEDED)),
        runpath=tuple(p for entry in search for p in entry.split(":") if p),
        exported=_exported(data, tags, loads, strtab) if with_symbols and mentions else (),
    )


def identify_bytes(data: Buffer) -> LibraryIdentity:
    """The families whose SONAME or exported API symbols these ELF bytes carry (file names play no part)."""
    try:
        info = dynamic_info(data)
    except (NotElf, struct.error, IndexError, ValueError) as exc:
        return LibraryIdentity(error=str(exc) or type(exc).__name__)
    found: dict[str, list[str]] = {}
    for fam in FAMILIES:
        if info.soname and fam.names_library(info.soname):
            found.setdefault(fam.name, []).append(f"SONAME {info.soname}")
        symbols = [s for s in info.exported if fam.names_symbol(s)]
        if symbols:
            more = len(symbols) - MAX_SYMBOLS_SHOWN
            shown = ", ".join(symbols[:MAX_SYMBOLS_SHOWN]) + (f" (+{more} more)" if more > 0 else "")
            found.setdefault(fam.name, []).append(f"exports {shown}")
    return LibraryIdentity(tuple(found), tuple("; ".join(v) for v in found.values()))


@lru_cache(maxsize=4096)
def _identify_file(path: str, _stat_key: tuple[int, int, int, int]) -> LibraryIdentity:
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return LibraryIdentity(error="empty file")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return identify_bytes(data)


def identify(source: str | Path | bytes) -> LibraryIdentity:
    """:func:`identify_bytes` of a file (cached by its identity on disk) or of bytes; never raises."""
    if isinstance(source, bytes):
        return identify_bytes(source)
    try:
        st = os.stat(source)
        return _identify_file(os.fspath(source), (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    except (OSError, ValueError) as exc:
        return LibraryIdentity(error=f"cannot read {source}: {exc}")


def identify_banned(source: str | Path | bytes, banned: tuple[str, ...]) -> Family | None:
    """The first banned family that ``source`` (a path or ELF bytes) *is*, by SONAME or exported symbols.

    ``None`` for an object of no banned family, for non-ELF bytes and for an unreadable path.
    Raises :class:`~quaere.evaluate.families.UnknownFamily` for a name no family describes.
    """
    name = identify(source).banned(tuple(f.name for f in families(banned)))
    return next((f for f in FAMILIES if f.name == name), None)
