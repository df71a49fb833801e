"""Attack: a banned library's bytes carried as data with ``.incbin`` (in a section of its own, or in .rodata).

No symbol table shows it; the candidate could write it out and load it at run time. Defences:
``unexpected_sections`` (a section neither the linker nor the task's own build emits),
``embedded_objects`` (an ELF header inside the artifact), ``banned_fingerprints`` (cuBLAS's names in any
byte) and ``source_embedding`` (the directive in the source text).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from quaere.evaluate.audit_facts import collect_facts

from .audit_support import ATTACKS, FIXTURES, audit, build_candidate, evidence, fake_blas, rules_of


@pytest.fixture(scope="module")
def blob(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake_blas(tmp_path_factory.mktemp("blob"), "innocent.bin")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    """The task's own initial kernel built with the same command: its sections are the normal ones."""
    return build_candidate(FIXTURES / "clean_host.c", tmp_path_factory.mktemp("reference"))


def test_a_library_in_a_section_of_its_own(tmp_path: Path, blob: Path, reference) -> None:
    source = ATTACKS / "incbin_section.cpp"
    report = audit(build_candidate(source, tmp_path, f"-DBLOB_PATH={blob}"), source, tmp_path, reference)
    assert evidence(report, "unexpected_sections") == [f"section '.qblob' ({blob.stat().st_size} bytes)"]
    [embedded] = evidence(report, "embedded_objects")
    assert "x86-64 ELF object" in embedded and "in .qblob" in embedded
    assert "cublas: SONAME libcublas.so.13; exports cublasCreate_v2" in embedded
    assert "'cublasCreate_v2' in .qblob (cublas)" in evidence(report, "banned_fingerprints")
    assert evidence(report, "source_embedding") == ["incbin_section.cpp:5: .section", "incbin_section.cpp:8: .incbin"]


def test_a_library_hidden_in_rodata(tmp_path: Path, blob: Path, reference) -> None:
    source = ATTACKS / "incbin_rodata.cpp"
    report = audit(build_candidate(source, tmp_path, f"-DBLOB_PATH={blob}"), source, tmp_path, reference)
    assert "unexpected_sections" not in rules_of(report)  # the section list looks normal...
    [embedded] = evidence(report, "embedded_objects")  # ... its bytes do not
    assert "in .rodata" in embedded and "cublas" in embedded
    assert any(e.endswith("in .rodata (cublas)") for e in evidence(report, "banned_fingerprints"))


def test_the_directive_alone_is_refused_even_when_the_bytes_are_disguised(tmp_path: Path, reference) -> None:
    # Bytes that are no ELF and carry no name (a library the candidate decrypts at run time looks so):
    # only the source text shows the embedding.
    noise = tmp_path / "noise.bin"
    noise.write_bytes(bytes((i * 7 + 3) % 251 for i in range(4096)))
    source = ATTACKS / "incbin_rodata.cpp"
    report = audit(build_candidate(source, tmp_path / "out", f"-DBLOB_PATH={noise}"), source, tmp_path, reference)
    assert rules_of(report) == {"source_embedding"}


def test_bytes_placed_in_text_by_data_directives_are_refused(tmp_path: Path, reference) -> None:
    # No section of its own, nothing in the data sections: only the directives in the asm string show the bytes.
    source = ATTACKS / "asm_data_in_text.cpp"
    report = audit(build_candidate(source, tmp_path), source, tmp_path, reference)
    # the four pieces reach the assembler as one string, which starts on line 4
    assert evidence(report, "source_embedding") == ["asm_data_in_text.cpp:4: .byte (in joined literals)",
                                                    "asm_data_in_text.cpp:4: .quad (in joined literals)"]
    assert rules_of(report) == {"source_embedding"}


def test_an_honest_candidate_passes_with_and_without_a_reference(tmp_path: Path, reference) -> None:
    source = ATTACKS / "clean_rich.cpp"
    build = build_candidate(source, tmp_path)
    sections = {s.name for s in collect_facts(Path(build.artifact), ()).sections}
    assert {".tbss", ".init_array", ".gcc_except_table"} <= sections  # it does use the optional sections
    assert audit(build, source, tmp_path, reference).findings == ()
    assert audit(build, source, tmp_path).findings == ()


def test_sections_the_reference_build_has_are_normal(tmp_path: Path, blob: Path) -> None:
    # A toolchain section unknown to the built-in list is accepted once the task's own build has it.
    source = ATTACKS / "incbin_section.cpp"
    attack = build_candidate(source, tmp_path / "a", f"-DBLOB_PATH={blob}")
    assert "unexpected_sections" in rules_of(audit(attack, source, tmp_path))
    assert "unexpected_sections" not in rules_of(audit(attack, source, tmp_path, reference=attack))


def test_device_code_is_scanned_even_compressed_and_stripped(tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    source = FIXTURES / "cute_device.cu"
    build = build_candidate(source, tmp_path, "-gencode", "arch=compute_90a,code=sm_90a", "-Xfatbin",
                            "-compress-all", "-Xlinker", "-s", tool="nvcc")
    raw = Path(build.artifact).read_bytes()
    assert b"4cute" not in raw  # compressed: no scan of the file's own bytes could see it
    report = audit(build, source, tmp_path, banned=("cute",))
    assert any("device code" in e and "(cute)" in e for e in evidence(report, "banned_fingerprints"))
