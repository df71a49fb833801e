"""The strings a source spells in pieces, read as the compiler stores them."""

from __future__ import annotations

import pytest

from quaere.evaluate.source_scan import (
    embedding_directives,
    library_loading,
    python_api,
    unnamed_system_calls,
    without_comments,
)
from quaere.evaluate.spelled import character_lists, decode_literal, joined_literals, spelled_strings


@pytest.mark.parametrize(("token", "chars"), [
    (r'"plain"', "plain"),
    (r'"\x63u\115odule"', "cuModule"),       # hex and octal escapes
    (r'"\u0063\U00000075"', "cu"),
    (r'"tab\there\"q\\"', 'tab\there"q\\'),
    (r'u8"x"', "x"),
    (r'LR"delim(a "b" \x41)delim"', r'a "b" \x41'),  # a raw string keeps its backslashes
    (r"'\x41'", "A"),
    ('"cuModule\\\nLoadData"', "cuModuleLoadData"),  # a line splice inside the literal
])
def test_a_literal_decodes_to_what_the_compiler_stores(token: str, chars: str) -> None:
    assert decode_literal(token) == chars


def test_adjacent_literals_join_across_lines_and_a_character_literal_breaks_the_run() -> None:
    text = 'f("cu" \n  "Module" R"(Load)" "Data");\ng("a", "b");\nh("x" \'"\' "y");\n'
    assert [(s.line, s.value, s.how) for s in joined_literals(text)] == [
        (1, "cuModuleLoadData", "joined literals"), (3, "a", "a literal"), (3, "b", "a literal"),
        (4, "x", "a literal"), (4, "y", "a literal"),
    ]


def test_brace_lists_of_characters_or_small_integers_read_as_strings() -> None:
    text = ("char a[] = {'c', 'u', 0x4c, 0151, 110, 107, 0};\n"
            "float b[] = {1.5, 2.5};\nint c[] = {-1, 2};\nint d[] = {0x110000, 1};\nint e[] = {x, y};\n"
            "#if 0\nint f[] = {09, 1};\n#endif\n")
    assert [(s.line, s.value) for s in character_lists(text)] == [(1, "cuLink\0")]


def test_python_names_joined_from_literals_are_found() -> None:
    assert [(h.line, h.text) for h in python_api('lookup("PyRun_" "Simple" "String");\n')] == [
        (1, "PyRun_SimpleString (in joined literals)")]


def test_a_raw_string_holding_quotes_does_not_hide_the_code_after_it() -> None:
    """A quote inside a raw string once opened a plain literal in the comment blanker's eyes, which blanked the call
    after it as string text."""
    text = 'auto s = R"x(")x"; void* h = dlopen("lib", 1); auto t = "";\nauto u = u8R"(/* )"; dlsym(h, "f"); // */\n'
    assert [(h.line, h.text) for h in library_loading(text)] == [(1, "dlopen"), (2, "dlsym")]
    assert len(without_comments(text, keep_literals=False)) == len(text)


def test_every_string_of_a_clean_source_is_listed_once_at_its_line() -> None:
    text = '// "in a comment"\nputs("one");\nputs("two" "three");\n'
    kept = without_comments(text, keep_literals=True)
    assert [(s.line, s.value) for s in spelled_strings(kept)] == [(2, "one"), (3, "twothree")]


def test_assembler_directives_and_the_syscall_instruction_spelled_in_pieces_are_found() -> None:
    """The assembler reads the joined string: ``.inc`` ``bin`` is ``.incbin`` to it."""
    text = 'asm(".inc" "bin \\"/x/libcudnn.so\\"");\nasm(".pu\\x73hsection .q");\nasm("sys" "call");\n'
    assert [(h.line, h.text) for h in embedding_directives(text)] == [
        (1, ".incbin (in joined literals)"), (2, ".pushsection (in a literal)")]
    assert [(h.line, h.text) for h in unnamed_system_calls(text)] == [(3, "syscall (in joined literals)")]


def test_a_name_the_text_as_written_shows_is_not_reported_again_for_the_string_around_it() -> None:
    text = 'asm(".section .q\\n"\n    ".incbin \\"f\\"\\n"\n    ".previous");\n'
    assert [(h.line, h.text) for h in embedding_directives(text)] == [(1, ".section"), (2, ".incbin")]
