"""The static audit: banned libraries found in what a build read and produced, and in the source.

Each rule is a named pure function over :class:`ArtifactFacts` with a one-line rationale, gathered in
:data:`RULES`. A check returns the evidence it saw (header paths, symbols, NEEDED entries, strings,
sections, source lines); the :class:`Rule` turns evidence into :class:`~quaere.records.AuditFinding`
records. :data:`WARNING_RULES` are reported but do not fail the audit. The run-time half (a ``dlopen``
while the candidate runs, the maps diff) lives in ``runtime_guard.py`` and ``maps.py``.

Rules apply to the families a task bans; the rules that are about any foreign code (headers outside the
allowed roots, unexpected sections, embedded objects, loader calls) apply as soon as it bans one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from quaere.evaluate.artifact_scan import normal_section
from quaere.evaluate.audit_facts import ArtifactFacts, FactInputs, HostSymbol, collect_facts
from quaere.evaluate.families import FAMILIES, Family, families
from quaere.evaluate.include_roots import RootsUnknown, allowed_roots, under_roots
from quaere.evaluate.runtime_guard import RUNTIME_RULES
from quaere.evaluate.source_scan import (
    PYTHON_API,
    SourceHit,
    device_code_loading,
    embedding_directives,
    library_loading,
    python_api,
    raw_system_calls,
)
from quaere.records import AuditFinding, BuildResult, BuildStatus

__all__ = [
    "RULES", "WARNING_RULES", "ArtifactFacts", "AuditContext", "AuditReport", "Rule", "audit_build",
    "audit_facts", "audit_warnings", "collect_facts", "rules_table", "run_audit",
]

# A statically linked cuBLAS defines thousands of symbols; the ledger needs proof, not the whole list.
MAX_FINDINGS_PER_RULE = 10
DL_FUNCTIONS = frozenset({"dlopen", "dlmopen", "dlsym", "dlvsym"})

Check = Callable[[ArtifactFacts, tuple[Family, ...]], tuple[str, ...]]


@dataclass(frozen=True)
class Rule:
    """One audit rule: ``check`` returns the evidence it found for the banned ``families`` it covers."""

    name: str
    rationale: str
    families: tuple[str, ...]
    check: Check

    def findings(self, facts: ArtifactFacts, banned: tuple[str, ...]) -> tuple[AuditFinding, ...]:
        relevant = tuple(f for f in families(banned) if f.name in self.families)
        if self.families and not relevant:  # no families: a rule for every task, whatever it bans
            return ()
        evidence = tuple(dict.fromkeys(self.check(facts, relevant)))
        shown = evidence[:MAX_FINDINGS_PER_RULE]
        if len(evidence) > len(shown):
            shown += (f"... and {len(evidence) - len(shown)} more",)
        return tuple(AuditFinding(rule=self.name, rationale=self.rationale, evidence=e) for e in shown)


@dataclass(frozen=True)
class AuditReport:
    """Findings of every rule, plus notes on evidence that could not be gathered (a missing tool)."""

    findings: tuple[AuditFinding, ...]
    missing_tools: tuple[str, ...]
    notes: tuple[str, ...]
    warnings: tuple[AuditFinding, ...] = ()  # of WARNING_RULES: worth showing, not a failure

    @property
    def complete(self) -> bool:
        """Every tool ran: an empty ``findings`` is then a clean bill, not an absence of evidence."""
        return not self.missing_tools and not self.notes


def _symbols_of(symbols: Iterable[HostSymbol], fams: tuple[Family, ...], defined: bool) -> tuple[str, ...]:
    return tuple(
        f"{s.name} ({'defined' if defined else 'undefined'}, {f.name})"
        for s in symbols
        if s.defined == defined
        for f in fams
        if f.symbol is not None and f.names_symbol(s.name)
    )


def cutlass_cute_headers(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return tuple(
        f"{h} ({f.name})" for h in facts.included_headers for f in fams if f.header and f.header.search(h)
    )


def cutlass_cute_host_symbols(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return tuple(
        f"{s.name} ({f.name})"
        for s in facts.host_symbols
        for f in fams
        if f.namespace and f.namespace.search(s.name)
    )


def cutlass_cute_device_symbols(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return tuple(
        f"{s} ({f.name})" for s in facts.device_symbols for f in fams if f.namespace and f.namespace.search(s)
    )


def banned_needed(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    by_name = tuple(f"NEEDED {n} ({f.name})" for n in facts.needed for f in fams if f.names_library(n))
    names = {f.name for f in fams}
    by_content = tuple(
        f"NEEDED {lib.name} -> {lib.path} ({family}: {evidence})"
        for lib in facts.needed_libraries
        for family, evidence in zip(lib.identity.families, lib.identity.evidence, strict=False)
        if family in names
    )
    return by_name + by_content


def banned_undefined_symbols(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _symbols_of(facts.dynamic_symbols, fams, defined=False)


def banned_static_symbols(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _symbols_of(facts.host_symbols, fams, defined=True)


def banned_static_markers(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return tuple(
        f"string {s!r} ({f.name})" for s in facts.data_strings for f in fams if any(m in s for m in f.markers)
    )


def dlopen_hint(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    loaders = sorted({s.name.split("@", 1)[0] for s in facts.host_symbols} & DL_FUNCTIONS)
    if not loaders:
        return ()
    return tuple(
        f"{'/'.join(loaders)} + string {s!r} ({f.name})"
        for s in facts.data_strings
        for f in fams
        if any(f.names_library(word) or f.names_symbol(word) for word in _words(s))
    )


def _words(text: str) -> list[str]:
    # A library or symbol name inside a message: "cannot load /x/libcublas.so.13: %s" -> its path-like words.
    return [w.strip("'\"`:;,()[]{}<>") for w in text.split()]


def includes_outside_roots(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    if not facts.include_roots:
        return ()  # the roots could not be learned: collect_facts noted it, the audit is incomplete
    return tuple(
        header if real == header else f"{header} -> {real}"
        for header, real in zip(facts.included_headers, facts.header_realpaths, strict=False)
        if not under_roots(real, facts.include_roots)
    )


def unexpected_sections(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return tuple(
        f"section {s.name!r} ({s.size_bytes} bytes)"
        for s in facts.sections
        if not normal_section(s.name, facts.reference_sections)
    )


def embedded_objects(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    found = []
    for obj in facts.embedded:
        where = f"in {obj.section}" if obj.section else "outside every section"
        what = "; ".join(f"{f}: {e}" for f, e in zip(obj.identity.families, obj.identity.evidence, strict=False))
        found.append(f"{obj.machine} ELF object at offset {obj.offset:#x} {where}" + (f" ({what})" if what else ""))
    return tuple(found)


def banned_fingerprints(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    names = {f.name for f in fams}
    return tuple(f"{p.text!r} in {p.place} ({p.family})" for p in facts.fingerprints if p.family in names)


def host_interpreter(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    imported = tuple(f"{s.name} (undefined)" for s in facts.dynamic_symbols
                     if not s.defined and PYTHON_API.fullmatch(s.name.split("@", 1)[0]))
    return imported + _source_lines(facts, python_api(facts.source_text))


def _source_lines(facts: ArtifactFacts, hits: Iterable[SourceHit]) -> tuple[str, ...]:
    name = Path(facts.source).name or "source"
    return tuple(f"{name}:{hit.line}: {hit.text}" for hit in hits)


def source_embedding(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _source_lines(facts, embedding_directives(facts.source_text))


def source_library_loading(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _source_lines(facts, library_loading(facts.source_text))


def source_device_code_loading(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _source_lines(facts, device_code_loading(facts.source_text))


def source_system_calls(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _source_lines(facts, raw_system_calls(facts.source_text))


_CUTLASS_FAMILIES = ("cutlass", "cute")
_LIBRARY_FAMILIES = ("cublas", "cublaslt", "cudnn")
_ANY_FAMILY = tuple(f.name for f in FAMILIES)

RULES: tuple[Rule, ...] = (
    Rule("cutlass_cute_headers",
         "The build read a CUTLASS/CuTe header: the kernel leans on their templates.",
         _CUTLASS_FAMILIES, cutlass_cute_headers),
    Rule("cutlass_cute_host_symbols",
         "Host code carries cutlass::/cute:: symbols: CUTLASS/CuTe code was compiled in.",
         _CUTLASS_FAMILIES, cutlass_cute_host_symbols),
    Rule("cutlass_cute_device_symbols",
         "Device code carries cutlass::/cute:: symbols, even with host symbols stripped.",
         _CUTLASS_FAMILIES, cutlass_cute_device_symbols),
    Rule("banned_needed",
         "A NEEDED entry makes the loader map cuBLAS/cuBLASLt/cuDNN with the candidate (by its name, or by "
         "the SONAME and exports of the file it resolves to).",
         _LIBRARY_FAMILIES, banned_needed),
    Rule("banned_undefined_symbols",
         "The candidate calls cuBLAS/cuBLASLt/cuDNN functions that another object supplies.",
         _LIBRARY_FAMILIES, banned_undefined_symbols),
    Rule("banned_static_symbols",
         "The candidate defines cuBLAS/cuBLASLt/cuDNN API symbols: the library is linked in.",
         _LIBRARY_FAMILIES, banned_static_symbols),
    Rule("banned_static_markers",
         "Status or environment-variable strings only the library carries: linked in with symbols hidden.",
         _LIBRARY_FAMILIES, banned_static_markers),
    Rule("dlopen_hint",
         "A cheap static hint of a run-time load: dlopen/dlsym referenced next to a banned library or symbol name.",
         _LIBRARY_FAMILIES, dlopen_hint),
    Rule("includes_outside_roots",
         "The candidate is one source file: a header from outside the toolchain and the task folder is foreign "
         "code the symbol rules may not recognise (a renamed CUTLASS folder with #define cutlass qlib).",
         _ANY_FAMILY, includes_outside_roots),
    Rule("unexpected_sections",
         "A section neither the linker nor the task's own build emits: bytes placed where no rule looks "
         "(asm .section/.incbin).",
         _ANY_FAMILY, unexpected_sections),
    Rule("embedded_objects",
         "An ELF object inside the artifact's bytes (outside the fat binary's cubins): a library carried as data.",
         _ANY_FAMILY, embedded_objects),
    Rule("banned_fingerprints",
         "A banned library's API name, SONAME or namespace in the artifact's bytes or its extracted device "
         "code, whatever the symbol tables say.",
         _ANY_FAMILY, banned_fingerprints),
    Rule("source_embedding",
         "The source embeds a file or places bytes in a section of its choosing (.incbin, #embed, .section, "
         ".symver): a kernel has no need to, a hidden library does.",
         _ANY_FAMILY, source_embedding),
    Rule("host_interpreter",
         "The candidate names the Python C-API (PyRun_*, PyGILState_*...): a runner is a Python process, and "
         "from its interpreter a candidate can rewrite the runner's timing and replies; a kernel has no use "
         "for it. Every task.",
         (), host_interpreter),
    Rule("source_library_loading",
         "The source calls the dynamic loader (dlopen, dlsym, dlvsym...): a kernel needs no library the task "
         "does not link (driver entry points come from cudaGetDriverEntryPoint); a loader call is how a "
         "banned one comes in under another name.",
         _ANY_FAMILY, source_library_loading),
    Rule("source_device_code_loading",
         "The source loads, links, registers or compiles device code at run time (cuModuleLoadData, "
         "cuLibraryLoadData, __cudaRegisterFatBinary, nvrtc...): the kernel's device code is what nvcc built "
         "from this file; a loader is how a cubin lifted from a library, hidden in an encrypted array, gets in.",
         _ANY_FAMILY, source_device_code_loading),
)

WARNING_RULES: tuple[Rule, ...] = (
    Rule("source_system_calls",
         "The source makes raw system calls (syscall, mmap, memfd_create): no library is banned by them, "
         "but they can map a file the dlopen guard never sees; the maps diff judges what gets mapped.",
         _ANY_FAMILY, source_system_calls),
)


def rules_table() -> list[tuple[str, str]]:
    """(name, rationale) of every static rule, then of the warnings, then of the run-time rules, for printing."""
    return [(r.name, r.rationale) for r in (*RULES, *WARNING_RULES, *RUNTIME_RULES)]


def audit_facts(facts: ArtifactFacts, banned: tuple[str, ...]) -> tuple[AuditFinding, ...]:
    """Every rule over already collected facts (pure)."""
    return tuple(finding for rule in RULES for finding in rule.findings(facts, banned))


def audit_warnings(facts: ArtifactFacts, banned: tuple[str, ...]) -> tuple[AuditFinding, ...]:
    """Every warning rule over already collected facts (pure)."""
    return tuple(finding for rule in WARNING_RULES for finding in rule.findings(facts, banned))


@dataclass(frozen=True)
class AuditContext:
    """What the audit needs besides the build record, all given by the evaluator (never read from the
    workspace's say-so): the candidate's source file as it was built, the task folder (an allowed
    include root), and the build of the task's own initial kernel with the same command (its sections
    are the normal ones)."""

    source: Path | None = None
    task_folder: Path | None = None
    reference: BuildResult | None = None


def _inputs(build: BuildResult, banned: tuple[str, ...], context: AuditContext) -> tuple[FactInputs, list[str]]:
    notes: list[str] = []
    roots: tuple[str, ...] = ()
    if banned:  # learning the roots runs the compiler: only worth it when something is banned
        try:
            roots = allowed_roots(build.command, context.task_folder)
        except RootsUnknown as exc:
            notes.append(f"include roots unknown, headers not checked: {exc}")
        if context.source is None:
            notes.append("the candidate's source was not given: its text was not audited")
    reference = context.reference
    usable = reference is not None and reference.status is BuildStatus.OK and reference.artifact
    ref_path = Path(reference.artifact) if usable and reference is not None else None
    return FactInputs(source=context.source, include_roots=roots, reference=ref_path), notes


def run_audit(build: BuildResult, banned: tuple[str, ...], context: AuditContext = AuditContext()) -> AuditReport:
    """Collect facts about ``build``'s artifact and apply every rule; a failed build gets the header and
    source rules only. Notes say which evidence could not be gathered."""
    families(banned)  # an unknown name is refused before any tool runs
    inputs, notes = _inputs(build, banned, context)
    if build.status is BuildStatus.OK and build.artifact:
        facts = collect_facts(Path(build.artifact), build.included_headers, inputs)
    else:
        text = context.source.read_text(errors="replace") if context.source and context.source.is_file() else ""
        facts = ArtifactFacts(artifact="", included_headers=build.included_headers,
                              header_realpaths=tuple(os.path.realpath(h) for h in build.included_headers),
                              include_roots=inputs.include_roots, source=str(context.source or ""), source_text=text,
                              notes=("no artifact was built: only the included headers and the source were audited",))
    return AuditReport(audit_facts(facts, banned), facts.missing_tools, (*notes, *facts.notes),
                       audit_warnings(facts, banned))


def audit_build(
    build: BuildResult, banned: tuple[str, ...], context: AuditContext = AuditContext()
) -> tuple[AuditFinding, ...]:
    """The findings of :func:`run_audit`; an artifact without device code simply has no device symbols."""
    return run_audit(build, banned, context).findings
