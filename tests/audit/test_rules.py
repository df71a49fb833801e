"""Every static audit rule rejects its fixture, and the clean kernel passes them all.

Each rejection is asserted by the rule's *name*, so removing a rule from ``RULES`` fails its test; a
coverage test makes sure every rule in the table has a fixture here.
"""

from __future__ import annotations

import pytest

from quaere.evaluate.audit import (
    MAX_FINDINGS_PER_RULE,
    RULES,
    WARNING_RULES,
    ArtifactFacts,
    AuditContext,
    audit_build,
    audit_facts,
    collect_facts,
    rules_table,
    run_audit,
)
from quaere.evaluate.audit_facts import HostSymbol
from quaere.evaluate.families import UnknownFamily
from quaere.records import BuildResult, BuildStatus

from .conftest import ALL_BANNED

# (fixture, is CUDA, rule it must trip, a word its evidence must contain)
REJECTIONS = [
    ("cutlass_kernel", True, "cutlass_cute_headers", "cutlass/gemm.h"),
    ("cutlass_kernel", True, "cutlass_cute_host_symbols", "cutlass::scale_kernel"),
    ("cute_device", True, "cutlass_cute_device_symbols", "cute::twice"),
    ("needs_cublas", False, "banned_needed", "libcublas.so.13"),
    ("needs_cublas", False, "banned_undefined_symbols", "cublasCreate_v2"),
    ("static_cublas", False, "banned_static_symbols", "cublasGemmEx"),
    ("marker_cublas", False, "banned_static_markers", "CUBLAS_STATUS_"),
    ("dlopen_cublas", False, "dlopen_hint", "libcublas.so.13"),
    ("python_api", False, "host_interpreter", "PyRun_SimpleString"),
]


def _facts(built, built_cuda, name: str, cuda: bool) -> ArtifactFacts:
    item = (built_cuda if cuda else built)[name]
    return collect_facts(item.artifact, item.headers)


# Rules whose attacks need a source, a task folder or a run: asserted by name in tests/adversarial/.
ADVERSARIAL = {
    "includes_outside_roots": "test_audit_renamed_header.py",
    "unexpected_sections": "test_audit_incbin.py",
    "embedded_objects": "test_audit_incbin.py",
    "banned_fingerprints": "test_audit_incbin.py",
    "embedded_data": "test_audit_embedded_data.py",
    "source_embedding": "test_audit_incbin.py",
    "source_library_loading": "test_audit_loader_calls.py",
    "source_system_calls": "test_audit_loader_calls.py",
    "source_device_code_loading": "test_audit_loader_calls.py",
    "source_entry_point_lookup": "test_audit_loader_calls.py",
    "source_symbol_binding": "test_audit_loader_calls.py",
    "source_protection_change": "test_audit_loader_calls.py",
    "source_unnamed_system_call": "test_audit_loader_calls.py",
    "source_process_files": "test_audit_loader_calls.py",
    "source_line_markers": "test_audit_line_markers.py",
    "source_text_unread": "test_audit_unread_text.py",
}


def test_every_rule_has_a_rejecting_fixture() -> None:
    from pathlib import Path

    adversarial = Path(__file__).resolve().parent.parent / "adversarial"
    assert {r.name for r in (*RULES, *WARNING_RULES)} == {rule for _, _, rule, _ in REJECTIONS} | set(ADVERSARIAL)
    assert all(f'"{rule}"' in (adversarial / test).read_text() for rule, test in ADVERSARIAL.items())
    assert [name for name, _ in rules_table()][: len(RULES)] == [r.name for r in RULES]


@pytest.mark.parametrize(("fixture", "cuda", "rule", "word"), REJECTIONS, ids=[r[2] for r in REJECTIONS])
def test_rule_rejects_its_fixture(request, fixture: str, cuda: bool, rule: str, word: str) -> None:
    built = request.getfixturevalue("built")
    built_cuda = request.getfixturevalue("built_cuda") if cuda else {}
    facts = _facts(built, built_cuda, fixture, cuda)
    hits = [f for f in audit_facts(facts, ALL_BANNED) if f.rule == rule]
    assert hits, f"{rule} did not reject {fixture}"
    assert any(word in f.evidence for f in hits), [f.evidence for f in hits]
    assert all(f.rationale == dict(rules_table())[rule] for f in hits)


def test_clean_cuda_kernel_passes_every_rule(built_cuda) -> None:
    clean = built_cuda["clean"]
    facts = collect_facts(clean.artifact, clean.headers)
    # The acceptance means something only if the evidence was gathered: cubin symbols were read.
    assert facts.has_device_code and any("scale_kernel" in s for s in facts.device_symbols)
    assert any(h.endswith("cuda_runtime.h") for h in facts.included_headers)  # nvcc's own headers were seen
    assert facts.missing_tools == () and facts.notes == ()
    assert audit_facts(facts, ALL_BANNED) == ()


def test_clean_host_artifact_needs_no_cuda_tools(built) -> None:
    facts = collect_facts(built["clean_host"].artifact, ())
    assert not facts.has_device_code and facts.device_symbols == ()
    assert facts.missing_tools == () and any(s.name == "run" for s in facts.dynamic_symbols)
    assert audit_facts(facts, ALL_BANNED) == ()


def test_only_device_code_witnesses_a_stripped_cute_kernel(built_cuda) -> None:
    item = built_cuda["cute_device"]
    findings = audit_facts(collect_facts(item.artifact, item.headers), ALL_BANNED)
    assert {f.rule for f in findings} == {"cutlass_cute_device_symbols", "banned_fingerprints"}
    prints = [f.evidence for f in findings if f.rule == "banned_fingerprints"]
    assert prints and all("nv_fatbin" in e or "device code" in e for e in prints)


def test_audit_build_runs_on_a_build_result(built_cuda) -> None:
    item = built_cuda["cutlass_kernel"]
    build = BuildResult(status=BuildStatus.OK, command="nvcc ...", artifact=str(item.artifact),
                        log_tail="", included_headers=item.headers, duration_s=1.0)
    assert {"cutlass_cute_headers", "cutlass_cute_host_symbols", "cutlass_cute_device_symbols"} <= {
        f.rule for f in audit_build(build, ALL_BANNED)
    }
    # Banning only the cuBLAS family leaves a CUTLASS kernel alone (its headers in the task's folder):
    # rules apply to the task's list.
    from .conftest import FIXTURES

    # No source was given, so its text rules could not run: that alone fails (source_text_unread).
    assert {f.rule for f in audit_build(build, ("cublas",), AuditContext(task_folder=FIXTURES))} == {
        "source_text_unread"}


def test_failed_build_is_audited_on_its_headers_only() -> None:
    build = BuildResult(status=BuildStatus.BUILD_FAILED, command="nvcc ...", artifact="", log_tail="error",
                        included_headers=("/opt/cutlass/include/cute/tensor.hpp",), duration_s=0.1)
    report = run_audit(build, ALL_BANNED)
    assert {f.rule for f in report.findings} == {"cutlass_cute_headers", "includes_outside_roots"}
    assert report.notes and not report.complete


def test_missing_tools_are_recorded_not_raised(built, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nm, readelf or c++filt
    facts = collect_facts(built["needs_cublas"].artifact, ())
    assert {"nm -C -D", "nm -C", "readelf -d"} <= set(facts.missing_tools)
    assert facts.dynamic_symbols == () and facts.needed == ()


def _facts_with(symbols=(), device=(), strings=(), headers=()) -> ArtifactFacts:
    return ArtifactFacts(artifact="x.so", included_headers=headers, dynamic_symbols=tuple(symbols),
                         device_symbols=device, data_strings=strings)


def test_families_are_matched_exactly() -> None:
    facts = _facts_with(
        symbols=[HostSymbol("cublasLtMatmul", "U", False), HostSymbol("std::execute::run()", "T", True),
                 HostSymbol("cudnn_like_softmax", "T", True), HostSymbol("dlopen", "U", False)],
        device=("ns::execute::step(float)",),
        strings=("faster than cublas and cuDNN",),
        headers=("/src/execute/x.h", "/src/mycutlass_like.h"),
    )
    assert audit_facts(facts, ("cutlass", "cute", "cublas", "cudnn")) == ()  # cuBLASLt is its own family
    assert [f.rule for f in audit_facts(facts, ("cublaslt",))] == ["banned_undefined_symbols"]


def test_dlopen_hint_needs_both_a_loader_and_a_name() -> None:
    name_only = _facts_with(strings=("libcudnn.so.9",))
    assert audit_facts(name_only, ("cudnn",)) == ()
    both = _facts_with(symbols=[HostSymbol("dlopen@GLIBC_2.34", "U", False)], strings=("load 'libcudnn.so.9'",))
    assert [f.rule for f in audit_facts(both, ("cudnn",))] == ["dlopen_hint"]


def test_findings_per_rule_are_capped() -> None:
    many = _facts_with(symbols=[HostSymbol(f"cudnnOp{i}", "T", True) for i in range(30)])
    findings = audit_facts(many, ("cudnn",))
    assert len(findings) == MAX_FINDINGS_PER_RULE + 1 and findings[-1].evidence == "... and 20 more"


def test_unknown_family_is_refused() -> None:
    with pytest.raises(UnknownFamily, match="cuFFT"):
        audit_facts(_facts_with(), ("cuFFT",))


def test_missing_cuobjdump_leaves_the_audit_incomplete(built_cuda, monkeypatch) -> None:
    import quaere.evaluate.audit_facts as audit_facts_module

    from .conftest import FIXTURES

    monkeypatch.setattr(audit_facts_module, "find_cuobjdump", lambda: None)
    item = built_cuda["cute_device"]
    build = BuildResult(status=BuildStatus.OK, command="nvcc ...", artifact=str(item.artifact),
                        log_tail="", included_headers=item.headers, duration_s=1.0)
    report = run_audit(build, ALL_BANNED, AuditContext(source=FIXTURES / "cute_device.cu"))
    # Without cuobjdump only the fat binary's raw bytes show the stripped CuTe kernel (a compressed one
    # would go unseen): the report must say it is incomplete.
    # (This build made no translation unit, so the source's text after the preprocessor was not read either.)
    assert {f.rule for f in report.findings} == {"banned_fingerprints", "source_text_unread"}
    assert report.missing_tools == ("cuobjdump",) and not report.complete
