"""The dlopen guard of one judge's runners: the environment it adds, and the banned calls in its log.

The judge's session (:mod:`.judging`) reads the log after every correctness scenario, so a banned call is
pinned to the scenario that made it, and once more at the end for anything logged outside a scenario.
"""

from __future__ import annotations

from pathlib import Path

from quaere.records import AuditFinding


class GuardLog:
    """The dlopen guard of the runners: what their environment gains, and the findings in its log so far."""

    def __init__(self, banned: tuple[str, ...], cache: Path, log_dir: Path, artifact: str) -> None:
        self.banned, self.artifact = banned, Path(artifact)
        self.log_path = log_dir / "runtime-guard.log"
        self.env: dict[str, str] = {}
        self.note = ""
        self.inactive = ""
        """Why the log showed no guard at the last look ('' once it did); reported if it stays so."""
        self.mapped: list[AuditFinding] = []
        """Banned libraries the judge saw mapped in the candidate's runner (from /proc, by content)."""
        self.active = False
        if not banned:
            return
        from quaere.evaluate.runtime_guard import GuardUnavailable, guard_environment

        try:
            self.env.update(guard_environment(cache / "runtime-guard", self.log_path))
            self.active = True
        except GuardUnavailable as exc:
            self.note = f"dlopen guard unavailable ({exc}); only the maps diff watched run-time loads"

    trusted: frozenset[str] | None = None
    """Files mapped in the candidate's runner before it loaded the candidate (from the judge)."""

    def findings(self) -> tuple[AuditFinding, ...]:
        """Banned calls the candidate made so far; () before any worker started or without the guard."""
        if not self.active:
            return ()
        from quaere.evaluate.runtime_guard import GuardNotActive, runtime_findings

        try:
            found = tuple(runtime_findings(self.log_path, self.artifact, self.banned, trusted_objects=self.trusted))
        except GuardNotActive as exc:  # before the first worker started, or the shim did not load
            self.inactive = f"dlopen guard: {exc}"
            return ()
        self.inactive = ""
        return found

    def mark(self) -> int:
        """Where the log ends now: pass it to :meth:`findings_since` after the next scenario."""
        return self.log_path.stat().st_size if self.active and self.log_path.exists() else 0

    def findings_since(self, mark: int) -> tuple[AuditFinding, ...]:
        """Findings of the calls logged after ``mark`` (one scenario's), judged by the same rules."""
        if not self.active or not self.log_path.exists():
            return ()
        from quaere.evaluate.runtime_guard import GuardNotActive, runtime_findings

        text = self.log_path.read_bytes()
        announce = next((line for line in text[:mark].splitlines(keepends=True) if b"\tloaded\t" in line), b"")
        segment = self.log_path.with_suffix(".segment")
        segment.write_bytes(announce + text[mark:])  # the shim's announcement, then this scenario's calls
        try:
            return tuple(runtime_findings(segment, self.artifact, self.banned, trusted_objects=self.trusted))
        except GuardNotActive:
            return ()


LOADED_PREFIX = "loaded while the candidate ran: "


def mapping_findings(detail: str) -> list[AuditFinding]:
    """The judge's maps evidence in a ``banned_at_runtime`` verdict, as audit findings (else none)."""
    from quaere.evaluate.maps import RUNTIME_MAPPING_NAME, RUNTIME_MAPPING_RATIONALE

    if not detail.startswith(LOADED_PREFIX):
        return []
    return [AuditFinding(rule=RUNTIME_MAPPING_NAME, rationale=RUNTIME_MAPPING_RATIONALE,
                         evidence=detail[len(LOADED_PREFIX):])]
