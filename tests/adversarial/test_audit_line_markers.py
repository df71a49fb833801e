"""Attack: hide the candidate's own lines from the audit's reading of the translation unit by marking them as a system
header's (``#line 1 "/usr/include/unistd.h"``, or GNU's ``# 1 "..." 1 3 4``), and build the banned name there by
token pasting, so that neither text shows it (red-team round 2, F3: a raw ``syscall(10, ...)`` passed clean).

Defence: ``source_line_markers`` fails any line marker the source writes, in every spelling the compiler obeys
(``#line``, ``# N "file"``, ``%:`` for ``#``, spaces, comments and line splices before the name); in a comment or a
string it is no directive and passes.
"""

from __future__ import annotations

from pathlib import Path

from quaere.evaluate.source_lexing import line_markers, spliced

from .audit_support import ATTACKS, audit, build_candidate, evidence, rules_of


def test_a_pasted_system_call_behind_line_markers_fails_the_audit(tmp_path: Path) -> None:
    source = ATTACKS / "line_markers.cpp"
    report = audit(build_candidate(source, tmp_path), source, tmp_path)
    assert evidence(report, "source_line_markers") == [
        "line_markers.cpp:5: #line", "line_markers.cpp:7: #line", "line_markers.cpp:9: # 1",
        "line_markers.cpp:10: %: line", "line_markers.cpp:11: #line", "line_markers.cpp:13: # line"]
    # The markers did hide the call: no other rule sees it.
    assert rules_of(report) == {"source_line_markers"}


def test_gnus_marker_form_fails_and_without_it_the_pasted_call_is_seen(tmp_path: Path) -> None:
    source = ATTACKS / "line_markers_gnu.cpp"
    report = audit(build_candidate(source, tmp_path / "marked"), source, tmp_path)
    assert evidence(report, "source_line_markers") == ["line_markers_gnu.cpp:4: # 1"]
    assert rules_of(report) == {"source_line_markers"}
    unmarked = tmp_path / "line_markers_gnu.cpp"
    unmarked.write_text(source.read_text().replace('# 1 "/usr/include/unistd.h" 1 3 4', ""))
    report = audit(build_candidate(unmarked, tmp_path / "unmarked"), unmarked, tmp_path)
    assert evidence(report, "source_unnamed_system_call") == [
        "line_markers_gnu.cpp:5: syscall( (its number is not named) (after the preprocessor)"]
    assert rules_of(report) == {"source_unnamed_system_call"}


def test_markers_in_comments_and_literals_are_no_directives() -> None:
    text = ('// #line 1 "/usr/include/x.h"\n'
            '/*\n#line 2 "x.h"\n# 3 "x.h"\n*/\n'
            'const char* a = "#line 4 \\"x.h\\"";\n'
            'const char* b = R"(\n#line 5 "x.h"\n)";\n'
            '#define S(x) \\\n  #x\n'
            '// a comment that goes on \\\n#line 6 "x.h"\n'
            '#lines 7\n#include "line 8.h"\nint line = 9; # 10\n')
    assert line_markers(text) == ()


def test_spliced_lines_keep_the_line_a_reader_sees_them_start() -> None:
    assert spliced("a\\\nb\nc\\  \n\\\nd\ne") == ("ab\ncd\ne", (1, 3, 6))
    assert [(h.line, h.text) for h in line_markers('x\n  ??=line 3\n#\\\n \\\nline\\\n 4\n')] == [
        (2, "??=line"), (3, "# line")]
