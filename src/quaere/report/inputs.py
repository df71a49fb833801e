"""Reading a workspace's ``.quaere/`` into what the report's pure functions take.

This is the report's only I/O on the input side: the trace, the evaluations, the candidate versions and
the question bank's classes. Given the store, a registered workspace's evaluations come from its signed
records and the trace's evaluation summaries are checked against them (:mod:`quaere.report.signed`);
without it, or for an unregistered workspace, from the workspace's own ledger copy, and the report says
so. Everything read badly becomes a line in ``problems`` rather than an exception, so a damaged campaign
still gets a report that says what was skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from quaere.evaluate.ledger import read_ledger
from quaere.evaluate.summary import to_trace_event
from quaere.records import Evaluation
from quaere.report.campaign_report import DEFAULT_K, CampaignReport, build_report
from quaere.report.churn import version_order
from quaere.report.questions import Catalog, EntryClass
from quaere.report.signed import corroborate, unsigned_ledger_lines
from quaere.store import Store, StoreError
from quaere.store.pinning import pinned_task
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


def load_inputs(workspace: Workspace, store: Store | None = None) -> CampaignInputs:
    """What the report of ``workspace`` is computed from; with ``store``, the signed evaluations."""
    trace = read_trace(workspace.trace)
    ledger = read_ledger(workspace.ledger)
    events, evaluations = trace.events, ledger.evaluations
    problems = [*trace.problems, *ledger.problems]
    if store is not None:
        try:
            registration = store.registration(workspace.id)
            task = pinned_task(store, registration)
        except StoreError as exc:
            problems.append(f"{exc}; the figures come from the workspace's own ledger and trace, which are not "
                            "signed")
        else:
            read = store.read(workspace.id)
            signed = tuple(read.evaluations)
            problems += [p.render() for p in read.problems]
            if extra := unsigned_ledger_lines(evaluations, signed):
                problems.append(extra)
            checked = corroborate(events, signed, lambda evaluation: to_trace_event(evaluation, task.spec))
            events, evaluations = checked.events, signed
            problems += checked.problems
    order = version_order(events)
    return CampaignInputs(
        events=events,
        evaluations=evaluations,
        sources=read_sources(workspace.candidates_dir, order),
        final_hash=final_candidate_hash(workspace, evaluations),
        problems=tuple(problems),
    )


def load_report(
    workspace: Workspace,
    catalog: Catalog,
    k: int = DEFAULT_K,
    problems: tuple[str, ...] = (),
    inputs: CampaignInputs | None = None,
    store: Store | None = None,
) -> CampaignReport:
    """Read ``workspace`` (unless ``inputs`` were read already; see :func:`load_inputs` for ``store``) and
    compute its report."""
    inputs = inputs or load_inputs(workspace, store)
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
