"""Attack: a renamed copy of cuBLAS, linked, opened by path with ``dlvsym``, or loaded from a memfd.

The file name says nothing; the content (SONAME libcublas.so.13, exports cublasCreate_v2) still does.
Defences: ``identify_banned`` used by ``banned_needed``, by the guard's log reading (dlopen by path,
lookups judged by the handle's object) and by the maps diff (``new_banned_mappings``, deleted files
read through ``/proc/<pid>/map_files``); ``dlvsym`` interposed by the shim.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from quaere.evaluate.families import FAMILIES
from quaere.evaluate.library_identity import identify, identify_banned
from quaere.evaluate.maps import new_banned_mappings, parse_maps
from quaere.evaluate.runtime_guard import guard_environment, parse_log, runtime_findings

from .audit_support import ATTACKS, FIXTURES, Probe, audit, build_candidate, compiler, evidence, fake_blas, run

CUBLAS = next(f for f in FAMILIES if f.name == "cublas")
BANNED = ("cublas", "cublaslt", "cudnn")
IDENTITY = "SONAME libcublas.so.13; exports cublasCreate_v2"


@pytest.fixture(scope="module")
def renamed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cuBLAS stand-in under a name that says nothing."""
    return fake_blas(tmp_path_factory.mktemp("renamed"), "libqq.so")


def test_identity_is_read_from_content_not_name(renamed: Path, tmp_path: Path) -> None:
    assert identify_banned(renamed, BANNED) is CUBLAS
    assert identify_banned(renamed.read_bytes(), BANNED) is CUBLAS
    assert identify_banned(renamed, ("cudnn",)) is None
    # Without a section table (sstrip) the dynamic segment still tells: it is read through program headers.
    data = bytearray(renamed.read_bytes())
    struct.pack_into("<Q", data, 0x28, 0)  # e_shoff
    struct.pack_into("<HH", data, 0x3C, 0, 0)  # e_shnum, e_shstrndx
    stripped = tmp_path / "stripped.so"
    stripped.write_bytes(bytes(data))
    assert identify_banned(stripped, BANNED) is CUBLAS
    # An honest library, a non-ELF file and a missing path are no family.
    assert identify_banned(Path(compiler("c++")), BANNED) is None
    assert identify_banned(FIXTURES / "fake_cublas.c", BANNED) is None and identify(FIXTURES / "fake_cublas.c").error
    assert identify_banned(tmp_path / "absent.so", BANNED) is None


def test_a_renamed_library_in_needed_is_found_by_content(renamed: Path, tmp_path: Path) -> None:
    # Linking the renamed copy records its SONAME (libcublas.so.13): the old name rule sees that one.
    source = FIXTURES / "needs_cublas.c"
    lib = renamed.parent
    build = build_candidate(source, tmp_path / "a", f"-L{lib}", "-l:libqq.so", f"-Wl,-rpath,{lib}", tool="cc")
    report = audit(build, source, tmp_path, banned=("cublas",))
    assert "NEEDED libcublas.so.13 (cublas)" in evidence(report, "banned_needed")
    # A copy whose SONAME was rewritten too (patchelf --set-soname) is still cuBLAS by what it exports,
    # found through the candidate's RUNPATH ($ORIGIN).
    out = tmp_path / "b"
    disguised = fake_blas(out, "libqq.so", soname="libqq.so")
    build = build_candidate(source, out, f"-L{out}", "-l:libqq.so", "-Wl,-rpath,$ORIGIN", tool="cc")
    report = audit(build, source, tmp_path, banned=("cublas",))
    assert evidence(report, "banned_needed") == [f"NEEDED libqq.so -> {disguised} (cublas: exports cublasCreate_v2)"]


def _loader(tmp_path: Path, name: str) -> Path:
    out = tmp_path / f"{name}.so"
    run([compiler("cc"), "-shared", "-fPIC", "-O1", "-o", str(out), str(ATTACKS / f"{name}.c"), "-ldl"])
    return out


def _probe_through(candidate: Path, arg: str, env: dict[str, str]) -> tuple[Probe, str, str, dict]:
    probe = Probe.start(candidate, arg, env)
    try:
        probe.step()
        before = probe.maps()
        probe.step()
        reply = probe.step()
        return probe, before, probe.maps(), reply
    except BaseException:
        probe.close()
        raise


def test_dlvsym_of_a_renamed_copy_is_caught_by_guard_and_maps(renamed: Path, tmp_path: Path) -> None:
    candidate = _loader(tmp_path, "loads_by_path")
    log = tmp_path / "guard.log"
    env = guard_environment(tmp_path / "shim", log)
    probe, before, after, reply = _probe_through(candidate, str(renamed), env)
    try:
        assert reply["rc"] == 0  # the renamed stand-in was really loaded and its entry point called
        mapped = new_banned_mappings(parse_maps(before), parse_maps(after), BANNED, pid=probe.process.pid)
    finally:
        probe.close()
    assert [f.evidence for f in mapped] == [f"mapped {renamed} (cublas: {IDENTITY})"]
    calls = parse_log(log.read_text())
    assert any(c.kind == "dlvsym" and c.name == "cublasCreate_v2@libcublas.so.13" and c.target == str(renamed)
               for c in calls)
    found = {f.evidence for f in runtime_findings(log, candidate, BANNED)}
    assert f"dlopen({str(renamed)!r}) from {candidate} (cublas)" in found  # by content: the name says nothing
    assert f"dlvsym({renamed}, 'cublasCreate_v2@libcublas.so.13') from {candidate} (cublas)" in found
    assert f"dlsym({renamed}, 'renamed_entry') from {candidate} (cublas)" in found  # any symbol of it
    assert f"dlsym(RTLD_DEFAULT, 'cublasCreate_v2') from {candidate} (cublas)" in found
    assert f"dlsym(RTLD_NEXT, 'cublasCreate_v2') from {candidate} (cublas)" in found
    assert f"dlmopen({str(renamed)!r}) from {candidate} (cublas)" in found


def test_a_library_loaded_from_a_memfd_is_read_through_map_files(renamed: Path, tmp_path: Path) -> None:
    candidate = _loader(tmp_path, "memfd_loader")
    probe, before, after, reply = _probe_through(candidate, str(renamed), {})
    try:
        assert reply["rc"] == 0
        memfd = [m for m in parse_maps(after) if m.path.startswith("/memfd:")]
        assert memfd and all(m.deleted for m in memfd)
        found = new_banned_mappings(parse_maps(before), parse_maps(after), BANNED, pid=probe.process.pid)
        blind = new_banned_mappings(parse_maps(before), parse_maps(after), BANNED)  # no pid: no content
    finally:
        probe.close()
    assert [f.evidence for f in found] == [f"mapped /memfd:x (deleted) (cublas: {IDENTITY})"]
    assert blind == ()


def test_maps_lines_are_parsed_whole() -> None:
    [heap, lib, anon, spaced] = parse_maps(
        "55d0-55e0 rw-p 00000000 00:00 0 [heap]\n"
        "7f10-7f20 r-xp 00001000 08:01 1234 /opt/lib/libqq.so (deleted)\n"
        "7f30-7f40 rw-p 00000000 00:00 0 \n"
        "7f40-7f50 r--p 00000000 08:01 99 /a b/lib x.so\n"
        "garbage\n"
    )
    assert (lib.start, lib.end, lib.offset, lib.inode) == (0x7F10, 0x7F20, 0x1000, 1234)
    assert (lib.path, lib.deleted) == ("/opt/lib/libqq.so", True)
    assert lib.range_name == "7f10-7f20" and lib.is_file
    assert not heap.is_file and not anon.is_file and anon.path == ""
    assert spaced.path == "/a b/lib x.so"


def test_only_new_objects_count(renamed: Path) -> None:
    line = f"7f10-7f20 r-xp 00000000 08:01 {os.stat(renamed).st_ino} {renamed}\n"
    same = parse_maps(line)
    assert new_banned_mappings(same, same, BANNED) == ()
    assert len(new_banned_mappings((), same, BANNED)) == 1
    assert new_banned_mappings((), same, ("cudnn",)) == ()
