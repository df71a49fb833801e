"""Attack: a library's code carried as a plain array (encoded, so no ELF header, name, section or directive shows).

The bytes tell nothing, their amount does: an attention kernel carries almost no initialised data beyond its task's
initial kernel, and a cubin worth lifting is tens of KiB. Defence: ``embedded_data`` (host data against the task's
initial kernel built the same way, and each cubin's initialised device data, against ``DATA_ALLOWANCE_BYTES``). Each
place nvcc puts such an array is built here: a host array, a ``__device__`` array (initial values in the cubin and a
copy on the host) and a ``__constant__`` bank (in the cubin only); the shipped kernel passes the whole audit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from quaere.evaluate.audit_checks import DATA_ALLOWANCE_BYTES

from .audit_support import ATTACKS, FIXTURES, audit, build_candidate, evidence, rules_of

REPO = Path(__file__).resolve().parents[2]
ARCH = ("-O3", "-std=c++17", "-gencode", "arch=compute_90a,code=sm_90a")
BLOB = ATTACKS / "carries_code_as_data.cu"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    """A plain CUDA kernel built with the same command, standing in for the task's initial kernel."""
    return build_candidate(FIXTURES / "clean.cu", tmp_path_factory.mktemp("reference"), *ARCH, tool="nvcc")


def _blob(tmp_path: Path, place: int, kib: int, reference):
    build = build_candidate(BLOB, tmp_path, *ARCH, f"-DPLACE={place}", f"-DKIB=KIB_{kib}", tool="nvcc")
    return audit(build, BLOB, tmp_path, reference)


def _device_bytes(evidence_text: str) -> int:
    """The byte count of a device-data finding (0 for a host one)."""
    return int(evidence_text.split()[0]) if "initialised device data in " in evidence_text else 0


def test_a_host_array_is_refused_by_its_size(tmp_path: Path, reference) -> None:
    report = _blob(tmp_path, 1, 40, reference)
    [host] = evidence(report, "embedded_data")
    assert "bytes of initialised host data beyond the task's initial kernel" in host
    assert int(host.split()[0]) >= 40 * 1024 - DATA_ALLOWANCE_BYTES // 4  # the array, give or take the runtime's data
    assert rules_of(report) == {"embedded_data"}  # nothing else in the artifact or the text gives it away


def test_a_device_array_is_seen_on_both_sides(tmp_path: Path, reference) -> None:
    found = evidence(_blob(tmp_path, 2, 40, reference), "embedded_data")
    assert any("initialised host data" in e for e in found)
    assert any(_device_bytes(e) >= 40 * 1024 for e in found), found


def test_a_constant_bank_is_seen_in_the_cubin(tmp_path: Path, reference) -> None:
    found = evidence(_blob(tmp_path, 3, 40, reference), "embedded_data")
    assert len(found) == 1 and _device_bytes(found[0]) >= 40 * 1024, found


def test_a_small_table_is_allowed(tmp_path: Path, reference) -> None:
    for place in (1, 2, 3):
        assert "embedded_data" not in rules_of(_blob(tmp_path / str(place), place, 8, reference))


def test_without_a_reference_only_the_cubins_are_judged(tmp_path: Path) -> None:
    host = build_candidate(BLOB, tmp_path / "h", *ARCH, "-DPLACE=1", "-DKIB=KIB_40", tool="nvcc")
    assert "embedded_data" not in rules_of(audit(host, BLOB, tmp_path))
    device = build_candidate(BLOB, tmp_path / "d", *ARCH, "-DPLACE=3", "-DKIB=KIB_40", tool="nvcc")
    assert "embedded_data" in rules_of(audit(device, BLOB, tmp_path))


def test_the_shipped_kernel_passes_the_whole_audit(tmp_path: Path) -> None:
    # Built as the task builds it, against its initial kernel built the same way, as the evaluator audits it.
    task = REPO / "src" / "quaere" / "task" / "tasks" / "flash_attention_hopper"
    initial = build_candidate(task / "kernel.cu", tmp_path / "initial", *ARCH, tool="nvcc")
    shipped = REPO / "kernels" / "flash_attention_hopper.cu"
    report = audit(build_candidate(shipped, tmp_path / "shipped", *ARCH, tool="nvcc"), shipped, task, initial)
    assert report.findings == ()
    assert report.complete, report.notes + report.missing_tools
