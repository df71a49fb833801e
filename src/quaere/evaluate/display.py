"""Rich rendering of an evaluation: a progress bar while it runs, then per-scenario tables."""

from __future__ import annotations

import math
from typing import Self

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from quaere.evaluate.stats import relative_spread
from quaere.messages import failure_lines, group_failures, one_line, printable
from quaere.records import Evaluation, ScenarioVerdict, TimingStatus, Verdict


class RichProgress:
    """A :class:`quaere.evaluate.run.Progress` drawing one bar per phase on a terminal, and nothing at all
    when ``console`` is not one (piped output stays as the command's result alone); a context manager."""

    def __init__(self, console: Console) -> None:
        self._shown = console.is_terminal
        self._bar = Progress(
            TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[label]}"), console=console, transient=False,
        )
        self._task: int | None = None

    def __enter__(self) -> Self:
        if self._shown:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._shown:
            self._bar.stop()

    def begin(self, phase: str, total: int) -> None:
        if self._shown:
            self._task = self._bar.add_task(phase, total=total, label="")

    def advance(self, label: str) -> None:
        if self._task is not None:
            self._bar.update(self._task, advance=1, label=label)


def _fmt(value: float, spec: str = ".3g") -> str:
    return format(value, spec) if math.isfinite(value) else "-"


MAX_ROWS_LISTED = 40


def _listed(evaluation: Evaluation, all_rows: bool) -> tuple[tuple[ScenarioVerdict, ...], int]:
    """The rows of the table and how many passed ones were left out."""
    rows = evaluation.correctness
    if all_rows or len(rows) <= MAX_ROWS_LISTED:
        return rows, 0
    failing = tuple(v for v in rows if not v.verdict.passed)
    return failing, len(rows) - len(failing)


def correctness_table(evaluation: Evaluation, all_rows: bool = False) -> Table:
    """Every scenario, or only those that did not pass when there are more than MAX_ROWS_LISTED. Why a
    scenario failed is said under the table (:func:`failure_summary`), once for all that share it."""
    rows, _ = _listed(evaluation, all_rows)
    table = Table()
    for column in ("scenario", "verdict", "max err / bound", "s"):
        table.add_column(column, overflow="fold")
    for v in rows:
        worst = max(v.errors, key=lambda e: e.max_abs_err / e.bound if e.bound > 0 else math.inf, default=None)
        error = f"{worst.max_abs_err:.2e} / {worst.bound:.2e}" if worst else "-"
        style = "green" if v.verdict.passed else "red"
        table.add_row(v.scenario_id, f"[{style}]{v.verdict.value}[/]", error, f"{v.duration_s:.2f}")
    return table


def failure_summary(evaluation: Evaluation) -> list[str]:
    """One line per distinct reason a scenario did not pass, whole, naming the scenarios that share it."""
    failing = [v for v in evaluation.correctness if not v.verdict.passed and v.detail and not _shown_in_table(v)]
    return failure_lines(failing, evaluation.build.artifact, indent="  ")


def _shown_in_table(verdict: ScenarioVerdict) -> bool:
    """A wrong result whose error and bound the table's row already gives (the record keeps the rest)."""
    return verdict.verdict is Verdict.WRONG and bool(verdict.errors)


def benchmark_table(evaluation: Evaluation) -> Table:
    """One row per (scenario, implementation): median, spread, TFLOP/s, and the candidate's speedup."""
    table = Table(title="timing (candidate speedup = impl median / candidate median)", title_justify="left")
    for column, justify in (("scenario", "left"), ("impl", "left"), ("median ms", "right"), ("spread", "right"),
                            ("TFLOP/s", "right"), ("speedup", "right"), ("", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for bench in evaluation.benchmarks:
        for index, t in enumerate(bench.timings):
            name = bench.scenario_id if index == 0 else ""
            if t.status is not TimingStatus.MEASURED:
                detail = t.detail.splitlines()[0][:60] if t.detail else ""
                table.add_row(name, t.impl, "-", "-", "-", "-", f"{t.status.value} {detail}")
                continue
            ratio = "" if t.impl == "candidate" else _fmt(bench.ratio(t.impl), ".3f")
            flag = "[yellow]suspect: under the roofline floor[/]" if bench.suspect and t.impl == "candidate" else ""
            table.add_row(name, t.impl, f"{t.median_ms:.4g}", f"{relative_spread(t.samples_ms):.1%}",
                          _fmt(t.tflops), ratio, flag)
    return table


def failure_details(evaluation: Evaluation) -> list[str]:
    """Lines for everything else that did not pass: build log tail, audit findings, failed timings, and
    timings made from fewer repetitions than the rule's (a candidate far slower than the budget)."""
    lines = []
    if not evaluation.built:
        lines += ["build failed; log tail:", printable(evaluation.build.log_tail)]
    lines += [f"audit: {f.rule}: {one_line(f.evidence)} ({f.rationale})" for f in evaluation.audit]
    for bench in evaluation.benchmarks:
        for t in bench.timings:
            if t.status is TimingStatus.FAILED:
                lines.append(f"timing {bench.scenario_id} {t.impl}: failed: "
                             f"{one_line(t.detail, evaluation.build.artifact)}")
            elif t.status is TimingStatus.MEASURED and t.detail:
                lines.append(f"timing {bench.scenario_id} {t.impl}: {one_line(t.detail)}")
    return lines


def _build_line(evaluation: Evaluation) -> str:
    build = evaluation.build
    if not evaluation.built:
        return f"build [red]failed[/] ({build.duration_s:.1f} s); not audited"
    audit = "clean" if not evaluation.audit else f"[red]{len(evaluation.audit)} finding(s)[/]"
    return f"build {build.status.value} ({build.duration_s:.1f} s), audit {audit}"


def _not_run_line(evaluation: Evaluation) -> str:
    wall = f"wall {evaluation.wall_s:.1f} s"
    if not evaluation.built:
        return f"[yellow]NOT RUN[/]: [red]the build failed[/], so nothing was audited or executed; {wall}"
    audited = "audit clean" if evaluation.audit_clean else "[red]audit failed[/]"
    return f"[yellow]NOT RUN[/]: built, {audited}; no scenario was executed; {wall}"


def _say(console: Console, text: str) -> None:
    """One plain line: wrapped at the width on a terminal, whole when piped (one message, one line)."""
    console.print(text, markup=False, highlight=False, soft_wrap=not console.is_terminal)


def _print_correctness(evaluation: Evaluation, console: Console, all_rows: bool) -> None:
    rows = evaluation.correctness
    if not rows:
        return
    if not evaluation.ran:
        # One line, not a table of identical rows: nothing was executed.
        why = one_line(rows[0].detail)
        _say(console, f"correctness: {len(rows)} scenario(s) not run" + (f" ({why})" if why else ""))
        return
    groups = group_failures([v for v in rows if not v.verdict.passed], evaluation.build.artifact)
    if len(rows) > 1 and len(groups) == 1 and len(groups[0].scenario_ids) == len(rows):
        # Every scenario failed alike: one line says it all.
        why = f": {groups[0].detail}" if groups[0].detail else ""
        _say(console, f"correctness: {groups[0].verdict.value} on all {len(rows)} scenarios{why}")
        return
    hidden = _listed(evaluation, all_rows)[1]
    _say(console, "correctness" + (f" ({hidden} passed scenarios not listed; --all lists them)" if hidden else ""))
    console.print(correctness_table(evaluation, all_rows))
    for line in failure_summary(evaluation):
        _say(console, line)


def render(evaluation: Evaluation, console: Console, all_rows: bool = False) -> None:
    """The evaluation for a person: what was built, what failed and why (each reason once), timings."""
    _say(console, f"task {evaluation.task}  candidate {evaluation.candidate_path}  sha256 "
                  f"{evaluation.candidate_hash[:12]}")
    d = evaluation.device
    _say(console, f"device {d.name}  driver {d.driver or '-'}  clocks sm {_fmt(d.sm_clock_mhz)} MHz mem "
                  f"{_fmt(d.mem_clock_mhz)} MHz")
    console.print(_build_line(evaluation))
    _print_correctness(evaluation, console, all_rows)
    if evaluation.benchmarks:
        console.print(benchmark_table(evaluation))
    for line in failure_details(evaluation):
        _say(console, line)
    if evaluation.note:
        _say(console, f"note: {printable(evaluation.note)}")
    if not evaluation.ran:
        console.print(_not_run_line(evaluation))
        return
    passed = sum(v.verdict.passed for v in evaluation.correctness)
    verdict = "[green]CORRECT[/]" if evaluation.correct else "[red]NOT CORRECT[/]"
    console.print(f"{verdict}: {passed}/{len(evaluation.correctness)} scenarios passed; wall {evaluation.wall_s:.1f} s")
