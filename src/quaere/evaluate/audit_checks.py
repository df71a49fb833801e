"""The static audit's checks: each a pure function over :class:`ArtifactFacts` and the banned families it covers,
returning the evidence it saw (header paths, symbols, NEEDED entries, strings, sections, source lines). Their names
and rationales are :data:`quaere.evaluate.audit.RULES`, which turns evidence into findings."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from quaere.evaluate.artifact_scan import normal_section
from quaere.evaluate.audit_facts import HOST_DATA, ArtifactFacts, HostSymbol, initialised_bytes
from quaere.evaluate.families import Family
from quaere.evaluate.include_roots import under_roots
from quaere.evaluate.source_lexing import every_reading, line_markers, readings
from quaere.evaluate.source_scan import (
    PYTHON_API,
    SourceHit,
    device_code_loading,
    embedding_directives,
    entry_point_lookups,
    library_loading,
    named_system_call_lines,
    process_files,
    protection_changes,
    python_api,
    raw_system_calls,
    symbol_bindings,
    unnamed_system_calls,
)

DL_FUNCTIONS = frozenset({"dlopen", "dlmopen", "dlsym", "dlvsym"})
# Initialised data a candidate may carry beyond its task's initial kernel built the same way, on the host, and in any
# one cubin: the shipped attention kernel carries 1.4 KiB more host data than its initial kernel and no device data,
# and a library kernel's cubin is tens of KiB or more (docs/security.md, "The audit").
DATA_ALLOWANCE_BYTES = 16 * 1024


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


def embedded_data(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    """Initialised data past :data:`DATA_ALLOWANCE_BYTES`: on the host, against the reference build (not judged
    without one; the evaluator always passes the task's initial kernel), and in each cubin."""
    found = []
    if facts.reference_data_bytes is not None:
        host = initialised_bytes(facts.sections, HOST_DATA)
        if host - facts.reference_data_bytes > DATA_ALLOWANCE_BYTES:
            found.append(f"{host - facts.reference_data_bytes} bytes of initialised host data beyond the task's "
                         f"initial kernel built the same way ({host} against {facts.reference_data_bytes}; "
                         f"{DATA_ALLOWANCE_BYTES} allowed)")
    found += [f"{size} bytes of initialised device data in {name} ({DATA_ALLOWANCE_BYTES} allowed)"
              for name, size in facts.device_data if size > DATA_ALLOWANCE_BYTES]
    return tuple(found)


def banned_fingerprints(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    names = {f.name for f in fams}
    return tuple(f"{p.text!r} in {p.place} ({p.family})" for p in facts.fingerprints if p.family in names)


def host_interpreter(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    imported = tuple(f"{s.name} (undefined)" for s in facts.dynamic_symbols
                     if not s.defined and PYTHON_API.fullmatch(s.name.split("@", 1)[0]))
    return imported + _source_lines(facts, python_api)


def _source_lines(facts: ArtifactFacts, scan: Callable[[str], Iterable[SourceHit]],
                  keep_expanded: Callable[[SourceHit], bool] = lambda hit: True) -> tuple[str, ...]:
    """``scan``'s hits in the source as written, then those only its text after the preprocessor has (a name a macro
    built: ``evaluate.preprocess``), each as ``file:line: text``; each text read as C and as C++ (``source_lexing``)."""
    name = Path(facts.source).name or "source"
    written = tuple(f"{name}:{hit.line}: {hit.text}" for hit in every_reading(scan, facts.source_text))
    expanded = tuple(f"{name}:{hit.line}: {hit.text} (after the preprocessor)"
                     for hit in every_reading(scan, facts.preprocessed_text)
                     if f"{name}:{hit.line}: {hit.text}" not in written and keep_expanded(hit))
    return written + tuple(dict.fromkeys(expanded))


def source_embedding(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _source_lines(facts, embedding_directives)


def source_library_loading(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _source_lines(facts, library_loading)


def source_device_code_loading(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _source_lines(facts, device_code_loading)


def source_system_calls(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _source_lines(facts, raw_system_calls)


def source_entry_point_lookup(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _source_lines(facts, entry_point_lookups)


def source_symbol_binding(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _source_lines(facts, symbol_bindings)


def source_protection_change(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _source_lines(facts, protection_changes)


def source_unnamed_system_call(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    # After the preprocessor SYS_gettid is a number: a hit there counts where the text as written names none.
    # A line counts as named only if it is in every reading: the other reading may be the compiler's.
    named = frozenset.intersection(*(named_system_call_lines(text) for text in readings(facts.source_text)))
    return _source_lines(facts, unnamed_system_calls, keep_expanded=lambda hit: hit.line not in named)


def source_process_files(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return _source_lines(facts, process_files)


def source_line_markers(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    # The text as written only: the translation unit's markers are the compiler's, and they are what is at stake.
    name = Path(facts.source).name or "source"
    return tuple(f"{name}:{hit.line}: {hit.text}" for hit in every_reading(line_markers, facts.source_text))


def source_text_unread(facts: ArtifactFacts, fams: tuple[Family, ...]) -> tuple[str, ...]:
    return facts.unread_text
