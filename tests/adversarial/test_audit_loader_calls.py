"""Attack: reach a library through the loader's other doors (dlmopen, dlvsym, RTLD_NEXT/RTLD_DEFAULT),
through raw system calls, or bring device code in through the driver's module loader.

Defences: ``source_library_loading`` (the loader's entry points named in the source fail the audit),
``source_system_calls`` (a warning: syscalls load no library; the maps diff judges what gets mapped),
``source_device_code_loading`` (a device-code loader, linker, registration or run-time compiler named in the
source, a string passed to an entry-point lookup included, fails the audit), ``source_entry_point_lookup`` (a
lookup handed anything but literals, or asked for the lookup itself, fails it), ``source_symbol_binding`` (a name of
the source's own bound to a symbol spelled in a string, an asm label or an alias, fails it),
``source_protection_change`` (``mprotect``: the lookup's literal rewritten), ``source_unnamed_system_call`` (a
system call by number or by instruction), ``source_process_files`` (``/proc/self/...``), and the shim interposing
every lookup door while keeping the caller's own loader semantics.
"""

from __future__ import annotations

from pathlib import Path

from quaere.evaluate.source_scan import (
    SourceHit,
    device_code_loading,
    embedding_directives,
    entry_point_lookups,
    library_loading,
    named_system_call_lines,
    process_files,
    protection_changes,
    raw_system_calls,
    symbol_bindings,
    unnamed_system_calls,
    without_comments,
)

from .audit_support import ATTACKS, audit, build_candidate, evidence, rules_of


def test_loader_calls_in_the_source_fail_the_audit(tmp_path: Path) -> None:
    source = ATTACKS / "loads_by_path.c"
    report = audit(build_candidate(source, tmp_path, "-ldl", tool="cc"), source, tmp_path)
    assert evidence(report, "source_library_loading")[:4] == [
        "loads_by_path.c:5: <dlfcn.h>", "loads_by_path.c:9: dlopen", "loads_by_path.c:11: dlvsym",
        "loads_by_path.c:12: dlsym",
    ]


def test_an_encrypted_cubin_handed_to_the_module_loader_fails_the_audit(tmp_path: Path) -> None:
    """No scan of the artifact can see this cubin (XOR-ed, no header, no names, in .rodata); the loader's name,
    which the lookup needs as a string, is what the source gives away."""
    source = ATTACKS / "loads_cubin_blob.cu"
    report = audit(build_candidate(source, tmp_path, tool="nvcc"), source, tmp_path)
    assert evidence(report, "source_device_code_loading") == ["loads_cubin_blob.cu:9: cuModuleLoadData"]
    # The lookup is handed the array, not a literal: the lookup rule fails it too.
    assert evidence(report, "source_entry_point_lookup") == [
        "loads_cubin_blob.cu:16: cudaGetDriverEntryPointByVersion (its name is not a literal)"]
    assert rules_of(report) == {"source_device_code_loading", "source_entry_point_lookup"}


def test_a_loader_name_the_preprocessor_builds_fails_the_audit_by_its_expansion(tmp_path: Path) -> None:
    """The same cubin route, its loader's name stringified from a token paste and ``dlopen`` pasted too: the text as
    written has neither, the build's translation unit (the same command with -E) has both, on their lines."""
    source = ATTACKS / "loads_cubin_pasted.cu"
    build = build_candidate(source, tmp_path, tool="nvcc")
    report = audit(build, source, tmp_path)
    assert evidence(report, "source_device_code_loading") == [
        "loads_cubin_pasted.cu:20: cuModuleLoadData (after the preprocessor)"]
    assert evidence(report, "source_library_loading") == [
        "loads_cubin_pasted.cu:13: dlopen (after the preprocessor)",
        "loads_cubin_pasted.cu:27: dlopen (after the preprocessor)"]
    unexpanded = audit(build.model_copy(update={"preprocessed": ""}), source, tmp_path)
    # Without the translation unit no name is seen (which fails by itself); the lookup handed a macro rather than a
    # literal still is.
    assert rules_of(unexpanded) == {"source_entry_point_lookup", "source_text_unread"}
    assert any("after the preprocessor was not audited" in note for note in unexpanded.notes)


def test_loader_names_spelled_in_pieces_fail_the_audit_as_the_compiler_joins_them(tmp_path: Path) -> None:
    """Adjacent literals (which the preprocessor leaves apart), an escape, a pointer past a prefix and a character
    list: no loader's name is whole in either text, and each is found in the string the compiler stores."""
    source = ATTACKS / "loads_cubin_spelled.cu"
    report = audit(build_candidate(source, tmp_path, tool="nvcc"), source, tmp_path)
    assert evidence(report, "source_device_code_loading") == [
        "loads_cubin_spelled.cu:9: cuLinkAddData (in character list)",
        "loads_cubin_spelled.cu:11: cuModuleLoadData (in joined literals)",
        "loads_cubin_spelled.cu:13: cuModuleLoadDataEx (in a literal)",
        "loads_cubin_spelled.cu:14: cuLibraryLoadData (in a literal)",
    ]
    assert rules_of(report) == {"source_device_code_loading", "source_entry_point_lookup"}


def test_a_lookup_handed_a_name_built_at_run_time_fails_the_audit(tmp_path: Path) -> None:
    """The loader's name XOR-ed in a byte array, decoded into a buffer the lookup is handed: no text holds the name,
    so the rule is on the lookup's argument, and on the static runtime's own lookup (a global symbol it does not
    declare) named at all. The honest kernels' lookups (a literal) pass, see the clean tests."""
    source = ATTACKS / "looks_up_built_name.cu"
    report = audit(build_candidate(source, tmp_path, tool="nvcc"), source, tmp_path)
    assert evidence(report, "source_entry_point_lookup") == [
        "looks_up_built_name.cu:14: __cudaGetProcAddress",
        "looks_up_built_name.cu:23: cudaGetDriverEntryPointByVersion (its name is not a literal)",
        "looks_up_built_name.cu:24: cudaGetDriverEntryPointByVersion (its name is not a literal)",
        "looks_up_built_name.cu:26: cuGetProcAddress (in a literal)",
        "looks_up_built_name.cu:28: __cudaGetProcAddress",
    ]
    assert rules_of(report) == {"source_entry_point_lookup"}


def test_entry_point_lookups_pass_with_literal_names_and_fail_with_anything_else() -> None:
    text = (
        '// cudaGetDriverEntryPoint(name) in a comment\n'
        'cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);\n'
        'cudaGetDriverEntryPointByVersion(\n    "cuTensor" "MapEncodeTiled", &p, 12000, cudaEnableDefault, &q);\n'
        'puts("cudaGetDriverEntryPoint failed");\n'
        'cudaGetDriverEntryPoint(("x", name), &p, 0);\n'
        '#define LOOK(n) cuGetProcAddress_v2(n, &p, 0, 0, 0)\n'
        'cudaGetExportTable(&table, &id);\n'
        'libcudart_static_0056bd52(name); __cudaGetProcAddress(name, &p, 0, 0, 0);\n'
    )
    assert [(h.line, h.text) for h in entry_point_lookups(text)] == [
        (6, "cudaGetDriverEntryPoint (its name is not a literal)"),
        (7, "cuGetProcAddress_v2 (its name is not a literal)"),
        (8, "cudaGetExportTable"),
        (9, "libcudart_static_0056bd52"), (9, "__cudaGetProcAddress"),
    ]


def test_walking_the_loaded_objects_by_hand_is_library_loading() -> None:
    """From a driver function's address back to libcuda's ELF header and through its symbol table: no loader call,
    but the tables' names, or the magic the walk looks for, are in the text."""
    text = ("#include <link.h>\nint n = dl_iterate_phdr(cb, 0);\nstruct link_map* m; dladdr(p, &info);\n"
            "#include <elf.h>\nauto* h = (const Elf64_Ehdr*)base; if (d->d_tag == DT_GNU_HASH) {}\n"
            "static const char magic[] = {0x7f, 'E', 'L', 'F'};\nif (*(unsigned*)p == 0x464c457f) {}\n")
    assert [(h.line, h.text) for h in library_loading(text)] == [
        (1, "<link.h>"), (2, "dl_iterate_phdr"), (3, "link_map"), (3, "dladdr"), (4, "<elf.h>"),
        (5, "Elf64_Ehdr"), (5, "DT_GNU_HASH"), (6, "\\x7fELF (in character list)"), (7, "0x464c457f")]


def test_a_loader_bound_to_a_name_of_the_sources_own_fails_the_audit(tmp_path: Path) -> None:
    """``void* my_open(const char*, int) asm("dlopen")`` links to dlopen (the artifact imports it, as the static
    runtime's own import does, so the binary cannot tell); the binding itself is what the source shows."""
    source = ATTACKS / "binds_loader_by_label.cu"
    report = audit(build_candidate(source, tmp_path, tool="nvcc"), source, tmp_path)
    assert evidence(report, "source_symbol_binding") == [
        'binds_loader_by_label.cu:3: asm label "dlopen"', 'binds_loader_by_label.cu:4: asm label "dlsym"',
        'binds_loader_by_label.cu:6: alias("real_f")', 'binds_loader_by_label.cu:7: weakref("dlopen")',
    ]
    assert rules_of(report) == {"source_symbol_binding"}


def test_asm_statements_are_not_labels_and_bindings_spelled_in_pieces_are() -> None:
    text = ('if (x) asm("trap;");\nelse asm("exit;");\nvoid f() { asm volatile("nop;"); }\n'
            'while (!ready(flag[0])) asm("pause");\n'
            'int v asm("dl" "sym");\n#pragma redefine_extname o dlopen\n'
            'int g(int) __attribute__((__weakref__("dlv\\x73ym")));\n')
    assert [(h.line, h.text) for h in symbol_bindings(text)] == [
        (5, 'asm label "dlsym"'), (6, "#pragma redefine_extname"), (7, 'weakref("dlvsym")')]


def test_a_literal_rewritten_after_its_page_is_made_writable_fails_the_audit(tmp_path: Path) -> None:
    """The lookup is handed a literal, which passes its rule; the literal's page is then made writable and the name
    replaced. The protection change is what the source shows."""
    source = ATTACKS / "rewrites_lookup_literal.cu"
    report = audit(build_candidate(source, tmp_path, tool="nvcc"), source, tmp_path)
    assert evidence(report, "source_protection_change") == ["rewrites_lookup_literal.cu:21: mprotect"]
    assert rules_of(report) == {"source_protection_change"}
    assert protection_changes("void* p = mmap(0, n, PROT_READ | PROT_EXEC, f, -1, 0); // mprotect\n") == (
        SourceHit(1, "PROT_EXEC"),)


def test_device_code_loaders_are_found_by_name_literals_included_comments_not() -> None:
    text = (
        '// no cuModuleLoadData, no nvrtcCompileProgram here\n'
        '#include <nvrtc.h>\n'
        'lookup("cuLibraryLoadData");\n'
        '__cudaRegisterFatBinary(wrapper);\n'
        'cuLinkAddData_v2(state, type, data, size, name, 0, 0, 0);\n'
        'cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);\n'
        'nvrtcversion(); cuModuleGetFunction(&f, m, "k");\n'
    )
    assert [(h.line, h.text) for h in device_code_loading(text)] == [
        (2, "<nvrtc.h>"), (3, "cuLibraryLoadData"), (4, "__cudaRegisterFatBinary"), (5, "cuLinkAddData_v2"),
    ]
    # Token pasting hides a name from the text as written (the module docstring's limit); the audit also reads the
    # text after the preprocessor (the test above).
    assert device_code_loading('#define L(a) cu##a\nL(ModuleLoadData)(&m, image);\n') == ()


def test_syscalls_are_a_warning_not_a_failure(tmp_path: Path) -> None:
    source = ATTACKS / "syscalls.cpp"
    report = audit(build_candidate(source, tmp_path), source, tmp_path)
    assert report.findings == ()
    assert [w.evidence for w in report.warnings] == ["syscalls.cpp:6: syscall(", "syscalls.cpp:6: SYS_gettid"]
    assert {w.rule for w in report.warnings} == {"source_system_calls"}


def test_a_system_call_by_number_or_by_instruction_fails_the_audit(tmp_path: Path) -> None:
    """``syscall(10, ...)`` is mprotect, which the protection rule looks for by name; a named number
    (``SYS_gettid``, above) stays a warning."""
    source = ATTACKS / "syscall_by_number.cpp"
    report = audit(build_candidate(source, tmp_path), source, tmp_path)
    assert evidence(report, "source_unnamed_system_call") == [
        "syscall_by_number.cpp:5: syscall( (its number is not named)",
        "syscall_by_number.cpp:7: syscall (in joined literals)"]
    assert rules_of(report) == {"source_unnamed_system_call"}


def test_a_system_call_name_the_source_defines_is_not_a_name() -> None:
    text = "#define SYS_mine 10\nlong r = syscall(SYS_mine, p, 4096, 3);\nlong t = syscall(SYS_gettid);\n"
    assert [(h.line, h.text) for h in unnamed_system_calls(text)] == [(1, "#define SYS_mine")]
    assert named_system_call_lines(text) == {2, 3}


def test_writing_the_processs_own_memory_file_fails_the_audit(tmp_path: Path) -> None:
    """/proc/self/task/<tid>/mem writes past page protections without mprotect; a runner may write beneath its
    threads' folders (the CUDA driver names its threads there), so the path is what the source shows."""
    source = ATTACKS / "writes_own_memory.cpp"
    report = audit(build_candidate(source, tmp_path), source, tmp_path)
    assert evidence(report, "source_process_files") == ["writes_own_memory.cpp:10: /proc (in joined literals)"]
    assert rules_of(report) == {"source_process_files"}
    text = ('f = fopen("/proc/cpuinfo", "r"); g = fopen("/proc/sys/vm/overcommit_memory", "r");\n'
            'h = fopen("/proc/self/maps", "r");\nsprintf(p, "/proc/%d/mem", pid);\nq = "/proc";\n')
    assert [(h.line, h.text) for h in process_files(text)] == [(line, "/proc (in a literal)") for line in (2, 3, 4)]


def test_comments_and_strings_do_not_count_but_asm_strings_do() -> None:
    text = (
        '// we never call dlopen here\n'
        '/* nor .incbin\n   nor syscall( */\n'
        'const char* s = "dlsym is a word";\n'
        'asm(".incbin \\"x\\"");\n'
        'void* p = dlopen(0, 0);\n'
    )
    assert len(without_comments(text)) == len(text)
    assert [(h.line, h.text) for h in embedding_directives(text)] == [(5, ".incbin")]
    assert [(h.line, h.text) for h in library_loading(text)] == [(6, "dlopen")]
    assert raw_system_calls(text) == ()


def test_an_honest_candidate_mentioning_loaders_in_comments_passes(tmp_path: Path) -> None:
    source = ATTACKS / "clean_rich.cpp"
    report = audit(build_candidate(source, tmp_path), source, tmp_path)
    assert report.findings == () and report.warnings == ()
    assert "source_library_loading" not in rules_of(report)
