"""Reading a workspace's ``.quaere/`` into what the report's pure functions take.

This is the report's only I/O on the input side: the trace, the ledger, the candidate versions and the
question bank's classes. Everything read badly becomes a line in ``problems`` rather than an exception,
so a damaged campaign still gets a report that says what was skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from quaere.evaluate.ledger import read_ledger
from quaere.records import Evaluation
from quaere.report.campaign_report import DEFAULT_K, CampaignReport, build_report
from quaere.report.churn import version_order
from quaere.report.questions import Catalog, EntryClass
from quaere.trace import read_trace
from quaere.workspace import Workspace, content_hash


@dataclass(frozen=True)
class CampaignInputs:
    """Everything a report is computed from."""

    events: tuple[object, ...]
    evaluations: tuple[Evaluation, ...]
    sources: dict[str, bytes]
    """Candidate hash -> source bytes, for every version found in ``.quaere/candidates/``."""
    final_hash: str | None
    """The workspace's current candidate if the ledger evaluated it, else the last evaluated one."""
    problems: tuple[str, ...]


def read_sources(folder: Path, hashes: tuple[str, ...]) -> dict[str, bytes]:
    """Source bytes of each hash stored as ``<hash><suffix>`` in ``folder`` (absent ones are left out)."""
    sources: dict[str, bytes] = {}
    for digest in hashes:
        matches = sorted(folder.glob(f"{digest}*")) if folder.is_dir() else []
        if matches:
            sources[digest] = matches[0].read_bytes()
    return sources


def final_candidate_hash(workspace: Workspace, evaluations: tuple[Evaluation, ...]) -> str | None:
    """The current candidate when it was evaluated; otherwise the last candidate the ledger holds."""
    evaluated = {e.candidate_hash for e in evaluations}
    if workspace.candidate.is_file():
        current = content_hash(workspace.candidate)
        if current in evaluated:
            return current
    return evaluations[-1].candidate_hash if evaluations else None


def load_inputs(workspace: Workspace) -> CampaignInputs:
    trace = read_trace(workspace.trace)
    ledger = read_ledger(workspace.ledger)
    evaluations = ledger.evaluations
    order = version_order(trace.events)
    return CampaignInputs(
        events=trace.events,
        evaluations=evaluations,
        sources=read_sources(workspace.candidates_dir, order),
        final_hash=final_candidate_hash(workspace, evaluations),
        problems=trace.problems + ledger.problems,
    )


def load_report(
    workspace: Workspace,
    catalog: Catalog,
    k: int = DEFAULT_K,
    problems: tuple[str, ...] = (),
    inputs: CampaignInputs | None = None,
) -> CampaignReport:
    """Read ``workspace`` (unless ``inputs`` were read already) and compute its report."""
    inputs = inputs or load_inputs(workspace)
    return build_report(
        inputs.events,
        inputs.evaluations,
        inputs.sources,
        catalog,
        inputs.final_hash,
        k=k,
        title=f"{Path(workspace.task).name} campaign in {workspace.root.name}",
        problems=inputs.problems + problems,
    )


def bank_catalog() -> tuple[Catalog, tuple[str, ...]]:
    """Classes of the shipped bank's entries; an empty catalog and a problem line if the bank does not load."""
    from quaere.questions.bank import BankError, load_bank

    try:
        bank = load_bank()
    except BankError as exc:  # a broken bank file must not stop the report; it is named instead
        return {}, (f"question bank failed to load, bank questions count as 'not-in-bank': {exc}",)
    return {e.id: EntryClass(group=e.group, kind=e.kind) for e in bank.entries}, ()
