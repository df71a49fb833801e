"""Attack: make the audit's comment blanker read a comment where the compiler reads code. C++14 reads ``1'2`` as one
number; read as C, its quote opens a character literal, and ``'/*'`` after it opens a comment that runs to a ``"*/"``
in a string, in the text as written and after the preprocessor alike.

Defence: every text rule reads the source both ways (``source_lexing.every_reading``), as C and as C++, and keeps
what either sees: the compiler reads one of them.
"""

from __future__ import annotations

from pathlib import Path

from quaere.evaluate.source_lexing import every_reading, without_digit_separators
from quaere.evaluate.source_scan import unnamed_system_calls

from .audit_support import ATTACKS, audit, build_candidate, evidence, rules_of


def test_code_behind_a_digit_separator_and_a_comment_opener_in_a_literal_fails_the_audit(tmp_path: Path) -> None:
    source = ATTACKS / "digit_separators.cpp"
    report = audit(build_candidate(source, tmp_path), source, tmp_path)
    assert evidence(report, "source_unnamed_system_call") == [
        "digit_separators.cpp:8: syscall( (its number is not named)"]
    assert evidence(report, "source_process_files") == ["digit_separators.cpp:9: /proc (in a literal)"]
    assert rules_of(report) == {"source_unnamed_system_call", "source_process_files"}


def test_each_language_hides_code_from_the_others_reading_and_every_reading_sees_it() -> None:
    cpp = "int a = 1'2, c = '/*';\nlong r = syscall(10, p, 4096, 3);\nconst char* e = \"*/\";\n"
    c = "int a = IGNORE(1'a/*');\nlong r = syscall(10, p, 4096, 3);\nconst char* e = \"*/\";\n"
    found = ((2, "syscall( (its number is not named)"),)
    assert unnamed_system_calls(cpp) == () and unnamed_system_calls(without_digit_separators(c)) == ()
    for text in (cpp, c):
        assert tuple((h.line, h.text) for h in every_reading(unnamed_system_calls, text)) == found


def test_only_numbers_lose_their_separators() -> None:
    text = "x = '1'; s = \"1'2\"; // 3'4\ny = 0x1'F'f + 1.5e+1'0; z = a1'b'; w = u8'1';\n"
    assert without_digit_separators(text) == (
        "x = '1'; s = \"1'2\"; // 3'4\ny = 0x1Ff + 1.5e+10; z = a1'b'; w = u8'1';\n")
