"""The static audit: banned libraries found in what a build read and produced.

Each rule is a named pure function over :class:`ArtifactFacts` with a one-line rationale, gathered in
:data:`RULES`. A check returns the evidence it saw (header paths, symbols, NEEDED entries, strings); the
:class:`Rule` turns evidence into :class:`~quaere.records.AuditFinding` records. The run-time half
(a ``dlopen`` while the candidate runs) lives in ``runtime_guard.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from quaere.evaluate.audit_facts import ArtifactFacts, HostSymbol, collect_facts
from quaere.evaluate.families import Family, families
from quaere.evaluate.runtime_guard import RUNTIME_RULES
from quaere.records import AuditFinding, BuildResult, BuildStatus

__all__ = [
    "RULES", "ArtifactFacts", "AuditReport", "Rule", "audit_build", "audit_facts", "collect_facts",
    "rules_table", "run_audit",
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
        if not relevant:
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
    return tuple(f"NEEDED {n} ({f.name})" for n in facts.needed for f in fams if f.names_library(n))


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


_CUTLASS_FAMILIES = ("cutlass", "cute")
_LIBRARY_FAMILIES = ("cublas", "cublaslt", "cudnn")

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
         "A NEEDED entry makes the loader map cuBLAS/cuBLASLt/cuDNN with the candidate.",
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
)


def rules_table() -> list[tuple[str, str]]:
    """(name, rationale) of every static rule, then of the run-time rules, for printing."""
    return [(r.name, r.rationale) for r in RULES] + [(r.name, r.rationale) for r in RUNTIME_RULES]


def audit_facts(facts: ArtifactFacts, banned: tuple[str, ...]) -> tuple[AuditFinding, ...]:
    """Every rule over already collected facts (pure)."""
    return tuple(finding for rule in RULES for finding in rule.findings(facts, banned))


def run_audit(build: BuildResult, banned: tuple[str, ...]) -> AuditReport:
    """Collect facts about ``build``'s artifact and apply every rule; a failed build gets the header rule only."""
    if build.status is BuildStatus.OK and build.artifact:
        facts = collect_facts(Path(build.artifact), build.included_headers)
    else:
        facts = ArtifactFacts(artifact="", included_headers=build.included_headers,
                              notes=("no artifact was built: only the included headers were audited",))
    return AuditReport(audit_facts(facts, banned), facts.missing_tools, facts.notes)


def audit_build(build: BuildResult, banned: tuple[str, ...]) -> tuple[AuditFinding, ...]:
    """The findings of :func:`run_audit`; an artifact without device code simply has no device symbols."""
    return run_audit(build, banned).findings
