"""The static audit: banned libraries found in what a build read and produced, and in the source.

Each rule is a named pure function over :class:`ArtifactFacts` (:mod:`.audit_checks`) with a one-line rationale,
gathered in :data:`RULES`. A check returns the evidence it saw (header paths, symbols, NEEDED entries, strings,
sections, source lines); the :class:`Rule` turns evidence into :class:`~quaere.records.AuditFinding`
records. :data:`WARNING_RULES` are reported but do not fail the audit. The run-time half (a ``dlopen``
while the candidate runs, the maps diff) lives in ``runtime_guard.py`` and ``maps.py``.

Rules apply to the families a task bans; the rules that are about any foreign code (headers outside the
allowed roots, unexpected sections, embedded objects, loader calls) apply as soon as it bans one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from quaere.evaluate import audit_checks as checks
from quaere.evaluate.audit_facts import ArtifactFacts, FactInputs, collect_facts
from quaere.evaluate.families import FAMILIES, Family, families
from quaere.evaluate.include_roots import RootsUnknown, allowed_roots
from quaere.evaluate.runtime_guard import RUNTIME_RULES
from quaere.records import AuditFinding, BuildResult, BuildStatus

__all__ = [
    "RULES", "WARNING_RULES", "ArtifactFacts", "AuditContext", "AuditReport", "Rule", "audit_build",
    "audit_facts", "audit_warnings", "collect_facts", "rules_table", "run_audit",
]

# A statically linked cuBLAS defines thousands of symbols; the ledger needs proof, not the whole list.
MAX_FINDINGS_PER_RULE = 10

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


_CUTLASS_FAMILIES = ("cutlass", "cute")
_LIBRARY_FAMILIES = ("cublas", "cublaslt", "cudnn")
_ANY_FAMILY = tuple(f.name for f in FAMILIES)

RULES: tuple[Rule, ...] = (
    Rule("cutlass_cute_headers",
         "The build read a CUTLASS/CuTe header: the kernel leans on their templates.",
         _CUTLASS_FAMILIES, checks.cutlass_cute_headers),
    Rule("cutlass_cute_host_symbols",
         "Host code carries cutlass::/cute:: symbols: CUTLASS/CuTe code was compiled in.",
         _CUTLASS_FAMILIES, checks.cutlass_cute_host_symbols),
    Rule("cutlass_cute_device_symbols",
         "Device code carries cutlass::/cute:: symbols, even with host symbols stripped.",
         _CUTLASS_FAMILIES, checks.cutlass_cute_device_symbols),
    Rule("banned_needed",
         "A NEEDED entry makes the loader map cuBLAS/cuBLASLt/cuDNN with the candidate (by its name, or by "
         "the SONAME and exports of the file it resolves to).",
         _LIBRARY_FAMILIES, checks.banned_needed),
    Rule("banned_undefined_symbols",
         "The candidate calls cuBLAS/cuBLASLt/cuDNN functions that another object supplies.",
         _LIBRARY_FAMILIES, checks.banned_undefined_symbols),
    Rule("banned_static_symbols",
         "The candidate defines cuBLAS/cuBLASLt/cuDNN API symbols: the library is linked in.",
         _LIBRARY_FAMILIES, checks.banned_static_symbols),
    Rule("banned_static_markers",
         "Status or environment-variable strings only the library carries: linked in with symbols hidden.",
         _LIBRARY_FAMILIES, checks.banned_static_markers),
    Rule("dlopen_hint",
         "A cheap static hint of a run-time load: dlopen/dlsym referenced next to a banned library or symbol name.",
         _LIBRARY_FAMILIES, checks.dlopen_hint),
    Rule("includes_outside_roots",
         "The candidate is one source file: a header from outside the toolchain and the task folder is foreign "
         "code the symbol rules may not recognise (a renamed CUTLASS folder with #define cutlass qlib).",
         _ANY_FAMILY, checks.includes_outside_roots),
    Rule("unexpected_sections",
         "A section neither the linker nor the task's own build emits: bytes placed where no rule looks "
         "(asm .section/.incbin).",
         _ANY_FAMILY, checks.unexpected_sections),
    Rule("embedded_objects",
         "An ELF object inside the artifact's bytes (outside the fat binary's cubins): a library carried as data.",
         _ANY_FAMILY, checks.embedded_objects),
    Rule("embedded_data",
         "Initialised data far beyond what the task's own initial kernel carries, on the host or in a cubin: "
         "a kernel needs little; a library's code carried as an encoded array (no ELF header, no name, no "
         "directive) is decoded and loaded at run time where no other rule looks.",
         _ANY_FAMILY, checks.embedded_data),
    Rule("banned_fingerprints",
         "A banned library's API name, SONAME or namespace in the artifact's bytes or its extracted device "
         "code, whatever the symbol tables say.",
         _ANY_FAMILY, checks.banned_fingerprints),
    Rule("source_embedding",
         "The source embeds a file or places bytes in a section of its choosing (.incbin, #embed, .section, "
         ".symver): a kernel has no need to, a hidden library does.",
         _ANY_FAMILY, checks.source_embedding),
    Rule("host_interpreter",
         "The candidate names the Python C-API (PyRun_*, PyGILState_*...): a runner is a Python process, and "
         "from its interpreter a candidate can rewrite the runner's timing and replies; a kernel has no use "
         "for it. Every task.",
         (), checks.host_interpreter),
    Rule("source_library_loading",
         "The source calls the dynamic loader (dlopen, dlsym, dlvsym...): a kernel needs no library the task "
         "does not link (driver entry points come from cudaGetDriverEntryPoint); a loader call is how a "
         "banned one comes in under another name.",
         _ANY_FAMILY, checks.source_library_loading),
    Rule("source_device_code_loading",
         "The source loads, links, registers or compiles device code at run time (cuModuleLoadData, "
         "cuLibraryLoadData, __cudaRegisterFatBinary, nvrtc...): the kernel's device code is what nvcc built "
         "from this file; a loader is how a cubin lifted from a library, hidden in an encrypted array, gets in.",
         _ANY_FAMILY, checks.source_device_code_loading),
    Rule("source_entry_point_lookup",
         "The source asks the driver's entry-point lookup for a name it does not write as a literal, or for the "
         "lookup itself or the runtime's export tables: a kernel needs a fixed few (cuTensorMapEncodeTiled); a "
         "name built at run time is how a loader is reached where no text rule can read it.",
         _ANY_FAMILY, checks.source_entry_point_lookup),
    Rule("source_symbol_binding",
         "The source binds a name of its own to a symbol spelled in a string (an asm label on a declaration, "
         "alias/weakref/ifunc/symver, #pragma redefine_extname): a kernel has no need to rename symbols, and it is "
         "how dlopen or a loader is called under a name no other text rule knows.",
         _ANY_FAMILY, checks.source_symbol_binding),
    Rule("source_protection_change",
         "The source changes memory protection (mprotect, pkey_mprotect, PROT_EXEC): a kernel never does; it is "
         "how the literal an entry-point lookup is handed is rewritten after the audit read it, or how decoded code "
         "is made to run.",
         _ANY_FAMILY, checks.source_protection_change),
    Rule("source_unnamed_system_call",
         "The source makes a system call whose number it does not name (syscall(10, ...), the syscall "
         "instruction in asm): the audit cannot tell which call it is, and every text rule above can be passed "
         "that way (mprotect, mmap, open).",
         _ANY_FAMILY, checks.source_unnamed_system_call),
    Rule("source_process_files",
         "The source names /proc: a kernel never reads its own process's files; /proc/self/task/<tid>/mem writes "
         "past page protections (a literal handed to a lookup, rewritten), and /proc/self/maps finds a library "
         "to walk by hand.",
         _ANY_FAMILY, checks.source_process_files),
    Rule("source_line_markers",
         "The source writes line markers (#line, or GNU's # 1 \"file\"): they decide which lines of the text after "
         "the preprocessor are the candidate's, so its own lines could pass for a system header's, which no rule "
         "reads there (a pasted syscall or dlopen); a kernel never needs one. Every task: host_interpreter reads "
         "those lines too.",
         (), checks.source_line_markers),
    Rule("source_text_unread",
         "The source's text, as written or after the preprocessor, was not read (not given, unreadable, or the -E "
         "pass wrote nothing, as for an object file handed over as the candidate): every source rule above then "
         "passed on no evidence, and a kernel's source always preprocesses.",
         _ANY_FAMILY, checks.source_text_unread),
)

WARNING_RULES: tuple[Rule, ...] = (
    Rule("source_system_calls",
         "The source makes raw system calls (syscall, mmap, memfd_create): no library is banned by them, "
         "but they can map a file the dlopen guard never sees; the maps diff judges what gets mapped.",
         _ANY_FAMILY, checks.source_system_calls),
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


def _inputs(build: BuildResult, banned: tuple[str, ...],
            context: AuditContext) -> tuple[FactInputs, list[str], tuple[str, ...]]:
    """The facts' inputs, notes on what is missing, and of those the reasons the source's text is not read."""
    notes: list[str] = []
    roots: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()
    if banned:  # learning the roots runs the compiler: only worth it when something is banned
        try:
            roots = allowed_roots(build.command, context.task_folder)
        except RootsUnknown as exc:
            notes.append(f"include roots unknown, headers not checked: {exc}")
        if context.source is None:
            unread = ("the candidate's source was not given: its text was not audited",)
        elif build.status is BuildStatus.OK and not build.preprocessed:
            unread = ("the source's text after the preprocessor was not audited (the build log says why)",)
        notes += unread
    reference = context.reference
    usable = reference is not None and reference.status is BuildStatus.OK and reference.artifact
    ref_path = Path(reference.artifact) if usable and reference is not None else None
    preprocessed = Path(build.preprocessed) if build.preprocessed else None
    return (FactInputs(source=context.source, include_roots=roots, reference=ref_path, preprocessed=preprocessed),
            notes, unread)


def run_audit(build: BuildResult, banned: tuple[str, ...], context: AuditContext = AuditContext()) -> AuditReport:
    """Collect facts about ``build``'s artifact and apply every rule; a failed build gets the header and
    source rules only. Notes say which evidence could not be gathered; a built source whose text was not read
    fails ``source_text_unread`` on a task that bans something."""
    families(banned)  # an unknown name is refused before any tool runs
    inputs, notes, unread = _inputs(build, banned, context)
    if build.status is BuildStatus.OK and build.artifact:
        facts = collect_facts(Path(build.artifact), build.included_headers, inputs)
        facts = replace(facts, unread_text=(*unread, *facts.unread_text))
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
