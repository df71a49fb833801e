"""The maps diff: banned libraries that appeared in a process, identified by content, from ``/proc/<pid>/maps``.

Contract for the judge (which reads the runner's maps itself; the runner's own word is never asked):

1. ``before = parse_maps(read_maps(pid))`` once the runner is up and *before* it loads the candidate, so
   anything the candidate brings (its NEEDED entries, a helper library, a constructor's ``dlopen``) is
   new relative to ``before``;
2. ``after = parse_maps(read_maps(pid))`` after each call and at the end, while the runner is still
   alive (stopped or idle, but not yet killed: a deleted file is read back through
   ``/proc/<pid>/map_files``, which vanishes with the process);
3. ``new_banned_mappings(before, after, banned, pid=pid)`` gives one finding per banned object.

An object is *new* when its (device, inode, path) was not mapped before: a renamed copy, a file
replaced in place, a ``memfd`` and a deleted file all count. It is *banned* when its content says so
(:func:`~quaere.evaluate.library_identity.identify`: ``DT_SONAME`` or exported API symbols) or when its
file name does; a name alone is enough to flag, never needed.

What this cannot see: code copied into anonymous memory (no file behind it) and libraries that were
mapped, used and unmapped between two reads. The guard's log and the static audit cover part of that.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from quaere.evaluate.families import families
from quaere.evaluate.library_identity import LibraryIdentity, identify
from quaere.records import AuditFinding

DELETED_SUFFIX = " (deleted)"
RUNTIME_MAPPING_NAME = "runtime_mapping"
RUNTIME_MAPPING_RATIONALE = (
    "A banned library (by SONAME, exported symbols or name) was mapped into the runner after it began "
    "loading the candidate."
)


@dataclass(frozen=True)
class Mapping:
    """One line of ``/proc/<pid>/maps``."""

    start: int
    end: int
    perms: str  # 'r-xp'
    offset: int
    device: str  # 'fd:01'
    inode: int
    path: str  # '' for anonymous memory; '[heap]', '/memfd:x' and the like as the kernel writes them
    deleted: bool  # the file was unlinked after it was mapped (every memfd is)

    @property
    def is_file(self) -> bool:
        """Backed by a file (a memfd included), so its content can be read and identified."""
        return self.inode != 0 and self.path.startswith("/")

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.device, self.inode, self.path)

    @property
    def range_name(self) -> str:
        """The name of this mapping under ``/proc/<pid>/map_files``."""
        return f"{self.start:x}-{self.end:x}"


def parse_maps(text: str) -> tuple[Mapping, ...]:
    """Mappings from the text of ``/proc/<pid>/maps``; malformed lines are skipped, paths keep their spaces."""
    found = []
    for line in text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) < 5 or "-" not in fields[0]:
            continue
        try:
            start, end = (int(x, 16) for x in fields[0].split("-", 1))
            offset, inode = int(fields[2], 16), int(fields[4])
        except ValueError:
            continue
        path = fields[5] if len(fields) == 6 else ""
        deleted = path.endswith(DELETED_SUFFIX)
        path = path.removesuffix(DELETED_SUFFIX)
        found.append(Mapping(start, end, fields[1], offset, fields[3], inode, path, deleted))
    return tuple(found)


def read_maps(pid: int | str = "self") -> str:
    """The text of ``/proc/<pid>/maps`` (Linux)."""
    return Path(f"/proc/{pid}/maps").read_text()


def content_path(mapping: Mapping, pid: int | str | None) -> str:
    """Where ``mapping``'s file can be read: its path, or for a deleted file or memfd the process's
    ``map_files`` entry (only while the process lives; '' without a pid)."""
    if not mapping.deleted and not mapping.path.startswith("/memfd:"):
        return mapping.path
    return f"/proc/{pid}/map_files/{mapping.range_name}" if pid is not None else ""


Identify = Callable[[str], LibraryIdentity]


def _identity(objects: Iterable[Mapping], pid: int | str | None, identify_file: Identify) -> LibraryIdentity:
    # An object is mapped in several pieces; the first readable one is the whole file.
    last = LibraryIdentity(error="no readable mapping")
    for mapping in objects:
        where = content_path(mapping, pid)
        if where:
            last = identify_file(where)
            if not last.error:
                return last
    return last


@dataclass(frozen=True)
class BannedObject:
    """A mapped object that is a banned library, and what showed it."""

    mapping: Mapping  # its first mapping
    family: str
    why: str  # 'SONAME libcublas.so.13; exports cublasCreate_v2', or 'by its file name'

    def finding(self) -> AuditFinding:
        shown = self.mapping.path + (DELETED_SUFFIX if self.mapping.deleted else "")
        return AuditFinding(rule=RUNTIME_MAPPING_NAME, rationale=RUNTIME_MAPPING_RATIONALE,
                            evidence=f"mapped {shown} ({self.family}: {self.why})")


def banned_objects(
    mappings: Iterable[Mapping], banned: tuple[str, ...], *, exclude: Iterable[Mapping] = (),
    pid: int | str | None = None, identify_file: Identify = identify,
) -> tuple[BannedObject, ...]:
    """The file-backed objects of ``mappings`` not in ``exclude`` that are banned by content or by name,
    in the order first mapped. Raises :class:`~quaere.evaluate.families.UnknownFamily` for an unknown name."""
    fams = families(banned)
    seen = {m.key for m in exclude}
    objects: dict[tuple[str, int, str], list[Mapping]] = {}
    for mapping in mappings:
        if mapping.is_file and mapping.key not in seen:
            objects.setdefault(mapping.key, []).append(mapping)
    found = []
    for pieces in objects.values():
        by_name = next((f.name for f in fams if f.names_library(pieces[0].path)), None)
        identity = _identity(pieces, pid, identify_file)
        by_content = identity.banned(banned)
        if by_content or by_name:
            why = "; ".join(identity.evidence) if by_content else "by its file name"
            found.append(BannedObject(pieces[0], by_content or by_name or "", why))
    return tuple(found)


def new_banned_mappings(
    before: Iterable[Mapping], after: Iterable[Mapping], banned: tuple[str, ...], *,
    pid: int | str | None = None, identify_file: Identify = identify,
) -> tuple[AuditFinding, ...]:
    """One ``runtime_mapping`` finding per file-backed object in ``after`` but not in ``before`` that is
    a banned library by content or by name, in the order first mapped.

    ``pid`` lets deleted files and memfds be read through ``/proc/<pid>/map_files`` (pass the runner's
    pid while it is alive); without it they are judged by name only. ``identify_file`` is a seam for
    tests. Raises :class:`~quaere.evaluate.families.UnknownFamily` for an unknown banned name.
    """
    objects = banned_objects(after, banned, exclude=before, pid=pid, identify_file=identify_file)
    return tuple(o.finding() for o in objects)
