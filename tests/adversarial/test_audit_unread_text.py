"""Attack: hand over a candidate whose text the audit cannot read, so that every source rule passes for want of
evidence: an object file compiled from a source that fails them (red-team round 2, F2: the build links it, the
``-E`` pass writes nothing, and the audit only noted "audit incomplete"), or a source that cannot be read.

Defence: ``source_text_unread`` fails the audit of a built candidate whose text, as written or after the preprocessor,
was not read, on a task that bans something (where the source rules apply).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from quaere.evaluate.preprocess import preprocess_command
from quaere.records import BuildResult, BuildStatus

from .audit_support import ATTACKS, audit, build_candidate, compiler, evidence, rules_of, run

UNREAD = "the source's text after the preprocessor was not audited (the build log says why)"


def test_an_object_file_handed_over_as_the_candidate_fails_the_audit(tmp_path: Path) -> None:
    """``syscall_by_number.cpp`` fails ``source_unnamed_system_call`` as source; compiled first, nothing reads it."""
    blob = tmp_path / "blob.o"
    run([compiler("c++"), "-c", "-fPIC", "-O1", str(ATTACKS / "syscall_by_number.cpp"), "-o", str(blob)])
    command = [compiler("c++"), "-shared", "-fPIC", str(blob), "-o", str(tmp_path / "kernel.so")]
    run(command)
    run(shlex.split(preprocess_command(shlex.join(command), tmp_path / "source.ii")))
    assert not (tmp_path / "source.ii").exists()  # the -E pass ran and wrote nothing, as build_source sees it
    build = BuildResult(status=BuildStatus.OK, command=shlex.join(command), artifact=str(tmp_path / "kernel.so"),
                        log_tail="", included_headers=(), duration_s=0.0, preprocessed="")
    report = audit(build, blob, tmp_path)
    assert evidence(report, "source_text_unread") == [UNREAD]
    assert rules_of(report) == {"source_text_unread"}
    assert rules_of(audit(build, blob, tmp_path, banned=())) == set()  # no source rule applies: nothing to miss


def test_a_source_or_translation_unit_that_cannot_be_read_fails_the_audit(tmp_path: Path) -> None:
    source = ATTACKS / "clean_rich.cpp"
    build = build_candidate(source, tmp_path)
    assert audit(build, source, tmp_path).findings == ()
    gone = tmp_path / "gone.cpp"
    assert evidence(audit(build, gone, tmp_path), "source_text_unread") == [
        f"could not read the source {gone}: [Errno 2] No such file or directory: '{gone}'"]
    missing = build.model_copy(update={"preprocessed": str(tmp_path / "gone.ii")})
    assert [f.rule for f in audit(missing, source, tmp_path).findings] == ["source_text_unread"]
    unexpanded = audit(build.model_copy(update={"preprocessed": ""}), source, tmp_path)
    assert evidence(unexpanded, "source_text_unread") == [UNREAD] and not unexpanded.complete
