"""What a candidate's source text says it does: embed files, place bytes in sections, load libraries or device code.

Pure functions over the text. Comments are blanked first (an honest comment may say "no dlopen here");
string literals are kept where directives are searched, because ``asm(".incbin \\"lib.so\\"")`` lives in
one, and blanked where identifiers are searched. Blanking keeps every offset, so hits carry line numbers.

The text is a witness of intent, not of effect: token pasting (``dl ## open``) or a macro from a header
hides a name from it, so the audit also runs these scans over the source's own lines after the preprocessor
(:mod:`.preprocess`). A name a string spells in pieces (``"cuModule" "LoadData"``, ``"\\x63uModuleLoadData"``,
``{'c', 'u', ...}``) is read as the compiler stores it (:mod:`.spelled`), and inside a string a name counts wherever
it stands (``"_cuModuleLoadData" + 1`` hands the lookup the bare name). The binary scans and the run-time guard
judge the effect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .elf_sections import ELF_MAGIC
from .spelled import LITERAL_ARGUMENT, LITERAL_RUN, decode_run, line_of, spelled_strings

# A raw string first: its body may hold quotes and comment openers, which must not shift what reads as code.
COMMENT_OR_LITERAL = re.compile(
    r"//[^\n]*|/\*.*?\*/|(?<!\w)(?:u8|u|U|L)?R\"(?P<delim>[^()\\\s\"]{0,16})\(.*?\)(?P=delim)\""
    r"|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.DOTALL
)

# Put a file's bytes, or bytes in a section of the candidate's choosing, into the artifact.
EMBEDDING = re.compile(
    r"\.incbin\b|\bincbin\b|^\s*#\s*embed\b|__has_embed\b|\.(?:push)?section\b|\.symver\b", re.MULTILINE
)
# The assembler's data directives, followed by a value: in an asm() at file scope they place bytes in .text, the
# current section, where no data rule looks (embedded_data measures the data sections). Read in strings only: in code
# the same words are member names (s.byte); PTX, the only other assembly a kernel writes, has none of them.
ASM_DATA = (r"(?<![\w.])\.(?:[248]?byte|short|hword|word|int|long|quad|octa|ascii|asciz|string(?:8|16|32|64)?|float"
            r"|single|double|dc(?:\.[bwlsdx])?|uleb128|sleb128|base64|inst|insn)\b(?=[ \t]+\S)")
# The assembler's directives as the assembler gets them: asm(".inc" "bin ...") is joined before it reads it.
EMBEDDING_IN_STRINGS = re.compile(r"\.incbin\b|\bincbin\b|\.(?:push)?section\b|\.symver\b|" + ASM_DATA)
# Load a library or look a symbol up at run time, through the loader's public or private entry points.
# Walking the loaded objects by hand (dl_iterate_phdr, the link map, dladdr) is how a symbol is found without a lookup.
LIBRARY_LOADING = re.compile(
    r"\b(?:dlopen|dlmopen|dlsym|dlvsym|dlinfo|dladdr1?|dl_iterate_phdr|__libc_dlopen_mode|__libc_dlsym|__libc_dlvsym"
    r"|_dl_open|_dl_sym|_dl_vsym|_dl_find_object|_r_debug|r_debug|link_map)\b|<\s*(?:dlfcn|link)\.h\s*>"
    # Reading a loaded object's ELF tables yourself (from a driver function's address back to libcuda's header).
    r"|<\s*elf\.h\s*>|\bElf(?:32|64)_\w+|\bElfW\s*\(|\bDT_(?:GNU_HASH|HASH|SYMTAB|STRTAB|DYNSYM)\b|\bPT_DYNAMIC\b"
    r"|\b0[xX]464[cC]457[fF]\b"
)
# The ELF magic as a string or a character list ("\x7fELF", {0x7f, 'E', 'L', 'F'}).
ELF_MAGIC_IN_STRINGS = re.compile(re.escape(ELF_MAGIC.decode("latin-1")))
# Name the Python C-API (a runner is a Python process): the route to rewriting its timing and its replies.
PYTHON_API = re.compile(
    r"\b_?Py(?:Run|GILState|Eval|Import|Object|ThreadState|InterpreterState|Sys|Module|Capsule|Unicode|Long|Dict"
    r"|Err|Code|Frame|Function|Marshal|Bytes|List|Tuple|Float|Type|Mem|Config|Interpreter)_\w+|\bPy_[A-Z]\w*"
)
# Bring in device code that was not compiled from this source: the driver's and the runtime's module and library
# loaders, the linker, the runtime's fat-binary registration (nvcc's generated code calls it; a source has no
# need to), and the run-time compilers. Names passed as strings count (a driver entry point is looked up by one).
DEVICE_CODE_LOADING = re.compile(
    r"\b(?:cuModuleLoad\w*|cuLibraryLoad\w*|cudaLibraryLoad\w*|cuLink(?:Create|AddData|AddFile|Complete)\w*"
    r"|__cudaRegister(?:FatBinary|Function|LinkedBinary|Var)\w*|nvrtc[A-Z]\w*|nvJitLink[A-Z]\w*|nvPTXCompiler\w*)"
    r"|<\s*(?:nvrtc|nvJitLink|nvPTXCompiler)\.h\s*>"
)
# The same names anywhere inside a string: a lookup can be handed a pointer past a prefix.
DEVICE_CODE_LOADING_IN_STRINGS = re.compile(DEVICE_CODE_LOADING.pattern.replace(r"\b", ""))
# The driver's entry-point lookups, which take a function's name as a string, and the runtime's undocumented tables.
ENTRY_POINT_LOOKUP = re.compile(r"\b(?:cudaGetDriverEntryPoint\w*|cuGetProcAddress\w*)")
# The runtime's undocumented doors: its export tables and the global symbols of the static runtime that are not its
# API (``__cudaGetProcAddress`` is a lookup by any name; ``libcudart_static_<hash>`` are its internals). nvcc's
# generated code calls some (``__cudaRegisterFunction``); a source, and its own lines after -E, never does.
RUNTIME_INTERNALS = re.compile(r"\b(?:cu(?:da)?GetExportTable\w*|__cuda[A-Za-z]\w*|libcudart_static_\w+|__cudart\d\w*)")
# Inside a string: asking the lookup for itself, or for the export tables, hands back a door that takes any name.
LOOKUP_NAMES_IN_STRINGS = re.compile(r"cuGetProcAddress\w*|cu(?:da)?GetExportTable\w*")
# Bind a name of the source's own to a symbol named in a string: an asm label on a declaration, or an attribute.
_ASM_OPEN = re.compile(r"\b(?:__asm__|__asm|asm)\s*\(")
_BINDING_ATTRIBUTE = re.compile(r"\b(?:__)?(alias|weakref|ifunc|symver)(?:__)?\s*\(")
_REDEFINE_EXTNAME = re.compile(r"^\s*#\s*pragma\s+redefine_extname\b", re.MULTILINE)
_SYMBOL_NAME = re.compile(r"\s*[A-Za-z_.$][\w.$@]*\s*")
_NOT_DECLARATORS = frozenset({"else", "do", "return", "case", "goto", "if", "while", "for", "switch"})
# Change what memory may be written or run: how a literal handed to a lookup is rewritten after the audit read it,
# or decoded code made executable.
PROTECTION_CHANGE = re.compile(
    r"\b(?:mprotect|pkey_mprotect|pkey_alloc|PROT_EXEC|SYS_mprotect|__NR_mprotect|SYS_pkey_mprotect"
    r"|__NR_pkey_mprotect)\b")
# The process's own files: /proc/self/task/<tid>/mem writes past page protections (a runner may write its threads'
# folders: the driver names them), /proc/self/maps finds a library's base for a walk by hand.
# The machine-wide files a CPU kernel may read to size its work (/proc/cpuinfo, /proc/meminfo) are not a process's.
PROCESS_FILES_IN_STRINGS = re.compile(r"/proc\b(?!/(?:(?:cpuinfo|meminfo|stat|loadavg|version)\b|sys/))")
# Talk to the kernel directly: no library is involved, but it is how one would map a file unseen by the guard.
RAW_SYSTEM_CALLS = re.compile(r"\bsyscall\s*\(|\b__NR_\w+|\bSYS_\w+|\bmemfd_create\b|\bmmap(?:64)?\s*\(")
_SYSCALL_OPEN = re.compile(r"\bsyscall\s*\(")
_NAMED_NUMBER = re.compile(r"\s*(?:SYS_|__NR_)\w+\s*[,)]")
_OWN_NUMBER_NAME = re.compile(r"^\s*#\s*define\s+(?:SYS_|__NR_)\w+", re.MULTILINE)
# The same without libc: the instruction itself in an asm string.
RAW_SYSTEM_CALLS_IN_STRINGS = re.compile(r"\b(?:syscall|sysenter)\b|\bint\s+\$?(?:0x80|128)\b")


@dataclass(frozen=True)
class SourceHit:
    line: int
    text: str


def _blank(match: re.Match[str], keep_literals: bool) -> str:
    token = match.group()
    if keep_literals and not token.startswith(("//", "/*")):
        return token
    return re.sub(r"[^\n]", " ", token)


def without_comments(text: str, keep_literals: bool = True) -> str:
    """``text`` with comments (and, unless ``keep_literals``, string and character literals) blanked."""
    return COMMENT_OR_LITERAL.sub(lambda m: _blank(m, keep_literals), text)


def _hits(pattern: re.Pattern[str], text: str) -> tuple[SourceHit, ...]:
    return tuple(SourceHit(line_of(text, m.start()), m.group().strip()) for m in pattern.finditer(text))


def _string_hits(in_strings: re.Pattern[str], kept: str, reported: set[tuple[int, str]]) -> list[SourceHit]:
    """``in_strings``' hits in the strings ``kept`` spells (comments blanked, literals kept), each marked with how the
    string was spelled, leaving out a name already ``reported`` on a line the string spans."""
    hits = []
    for spelled in spelled_strings(kept):
        lines = range(spelled.line, spelled.last_line + 1)
        for match in in_strings.finditer(spelled.value):
            if not any((line, match.group()) in reported for line in lines):
                reported.add((spelled.line, match.group()))
                hits.append(SourceHit(spelled.line, f"{match.group()} (in {spelled.how})"))
    return hits


def _with_strings(pattern: re.Pattern[str], in_strings: re.Pattern[str], text: str) -> tuple[SourceHit, ...]:
    """``pattern``'s hits in ``text`` (comments blanked, literals kept), then ``in_strings``' hits in the strings
    it spells that the first pass did not report on the same line, in line order."""
    kept = without_comments(text, keep_literals=True)
    hits = list(_hits(pattern, kept))
    hits += _string_hits(in_strings, kept, {(hit.line, hit.text) for hit in hits})
    return tuple(sorted(hits, key=lambda hit: hit.line))


def embedding_directives(text: str) -> tuple[SourceHit, ...]:
    """``.incbin``, ``#embed``, ``.section``/``.pushsection`` and ``.symver`` outside comments, and the directives
    in the strings the source spells in pieces, with the assembler's data directives (``.byte``, ``.quad``...)."""
    return _with_strings(EMBEDDING, EMBEDDING_IN_STRINGS, text)


def library_loading(text: str) -> tuple[SourceHit, ...]:
    """Calls of (or references to) the dynamic loader's lookup functions and ``<dlfcn.h>``, the ways to walk the
    loaded objects by hand (``dl_iterate_phdr``, the link map, ELF tables and the ELF magic, also as a string)."""
    hits = _hits(LIBRARY_LOADING, without_comments(text, keep_literals=False))
    magic = _string_hits(ELF_MAGIC_IN_STRINGS, without_comments(text, keep_literals=True), set())
    return tuple(sorted(hits + tuple(SourceHit(hit.line, hit.text.replace("\x7f", "\\x7f")) for hit in magic),
                        key=lambda hit: hit.line))


def python_api(text: str) -> tuple[SourceHit, ...]:
    """Python C-API names outside comments, string literals included (a name passed to a lookup), and in the strings
    the source spells in pieces."""
    return _with_strings(PYTHON_API, PYTHON_API, text)


def device_code_loading(text: str) -> tuple[SourceHit, ...]:
    """Device-code loaders, linkers, fat-binary registration and run-time compilers named outside comments,
    string literals included (``cudaGetDriverEntryPointByVersion("cuModuleLoadData", ...)``), and anywhere inside
    the strings the source spells, whole or in pieces."""
    return _with_strings(DEVICE_CODE_LOADING, DEVICE_CODE_LOADING_IN_STRINGS, text)


def entry_point_lookups(text: str) -> tuple[SourceHit, ...]:
    """Entry-point lookups whose name argument is not string literals alone (a name built at run time, a pointer to
    the lookup, a macro's parameter), the runtime's internals named in code (its export tables, ``__cuda*``), and
    the lookup or the tables named in a string (asked of the lookup, they return a door that takes any name)."""
    kept = without_comments(text, keep_literals=True)
    code = without_comments(text, keep_literals=False)  # the same offsets, strings blanked: only code names a call
    hits = [SourceHit(line_of(code, m.start()), f"{m.group()} (its name is not a literal)")
            for m in ENTRY_POINT_LOOKUP.finditer(code) if not LITERAL_ARGUMENT.match(kept, m.end())]
    hits += _hits(RUNTIME_INTERNALS, code)
    hits += _string_hits(LOOKUP_NAMES_IN_STRINGS, kept, set())
    return tuple(sorted(hits, key=lambda hit: hit.line))


def _opening_paren(text: str, close: int) -> int:
    """The index of the ``(`` that the ``)`` at ``close`` closes, or -1."""
    depth = 0
    for at in range(close, -1, -1):
        depth += {")": 1, "(": -1}.get(text[at], 0)
        if depth == 0:
            return at
    return -1


def _after_declarator(code: str, at: int) -> bool:
    """Whether ``asm(`` at ``at`` follows a declarator (an identifier, ``)`` or ``]``), where it is a label, rather
    than starting a statement (after ``else`` or ``do``, or the condition of ``if (...)``, ``while (...)``...)."""
    before = code[max(0, at - 4096):at].rstrip()
    if not before or before[-1] not in ")]" and not (before[-1].isalnum() or before[-1] == "_"):
        return False
    if before[-1] == ")":
        opening = _opening_paren(before, len(before) - 1)
        before = before[:opening].rstrip() if opening > 0 else ""
    word = re.search(r"\w+$", before)
    return word is None or word.group() not in _NOT_DECLARATORS


def symbol_bindings(text: str) -> tuple[SourceHit, ...]:
    """Names the source binds to a symbol spelled in a string: asm labels on declarations
    (``void* o(const char*, int) asm("dlopen");``), ``alias``/``weakref``/``ifunc``/``symver`` attributes, and
    ``#pragma redefine_extname``. The symbol is then called under a name no other text rule knows."""
    kept = without_comments(text, keep_literals=True)
    code = without_comments(text, keep_literals=False)
    hits = []
    for opening in _ASM_OPEN.finditer(code):
        run = LITERAL_RUN.match(kept, opening.end())
        name = decode_run(run.group()) if run else ""
        if run and _SYMBOL_NAME.fullmatch(name) and _after_declarator(code, opening.start()):
            hits.append(SourceHit(line_of(code, opening.start()), f'asm label "{name.strip()}"'))
    for attribute in _BINDING_ATTRIBUTE.finditer(code):
        run = LITERAL_RUN.match(kept, attribute.end())
        if run:
            name = decode_run(run.group())
            hits.append(SourceHit(line_of(code, attribute.start()), f'{attribute.group(1)}("{name}")'))
    hits += _hits(_REDEFINE_EXTNAME, code)
    return tuple(sorted(hits, key=lambda hit: hit.line))


def protection_changes(text: str) -> tuple[SourceHit, ...]:
    """``mprotect``, ``pkey_mprotect``/``pkey_alloc``, ``PROT_EXEC`` and their system-call numbers in code."""
    return _hits(PROTECTION_CHANGE, without_comments(text, keep_literals=False))


def unnamed_system_calls(text: str) -> tuple[SourceHit, ...]:
    """``syscall(`` whose number is not a ``SYS_*``/``__NR_*`` name (``syscall(10, ...)``, a variable), a
    ``SYS_*``/``__NR_*`` name the source defines itself, and the system-call instruction in an asm string: calls the
    audit cannot tell apart, ``mprotect`` included. After the preprocessor every name is a number, so a hit there
    counts only where the text as written does not name it (:func:`named_system_call_lines`)."""
    code = without_comments(text, keep_literals=False)
    hits = [SourceHit(line, "syscall( (its number is not named)") for line, named in _syscalls(code) if not named]
    hits += _hits(_OWN_NUMBER_NAME, code)
    hits += _string_hits(RAW_SYSTEM_CALLS_IN_STRINGS, without_comments(text, keep_literals=True), set())
    return tuple(sorted(hits, key=lambda hit: hit.line))


def named_system_call_lines(text: str) -> frozenset[int]:
    """The lines where ``syscall(`` is handed a ``SYS_*``/``__NR_*`` name as written."""
    return frozenset(line for line, named in _syscalls(without_comments(text, keep_literals=False)) if named)


def _syscalls(code: str) -> list[tuple[int, bool]]:
    """Each ``syscall(`` in ``code`` (comments and literals blanked): its line, and whether its number is named."""
    return [(line_of(code, m.start()), bool(_NAMED_NUMBER.match(code, m.end()))) for m in _SYSCALL_OPEN.finditer(code)]


def process_files(text: str) -> tuple[SourceHit, ...]:
    """``/proc`` in the strings the source spells, whole or in pieces, but for the machine-wide information files
    (``/proc/cpuinfo``, ``/proc/meminfo``, ``/proc/sys/...``)."""
    return tuple(_string_hits(PROCESS_FILES_IN_STRINGS, without_comments(text, keep_literals=True), set()))


def raw_system_calls(text: str) -> tuple[SourceHit, ...]:
    """``syscall(``, ``SYS_*``/``__NR_*`` numbers, ``memfd_create`` and ``mmap(`` outside comments and literals."""
    return _hits(RAW_SYSTEM_CALLS, without_comments(text, keep_literals=False))
