"""Rich rendering of an evaluation: a progress bar while it runs, then per-scenario tables."""

from __future__ import annotations

import math
from typing import Self

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from quaere.evaluate.stats import relative_spread
from quaere.records import Evaluation, TimingStatus


class RichProgress:
    """A :class:`quaere.evaluate.run.Progress` drawing one bar per phase; use as a context manager."""

    def __init__(self, console: Console) -> None:
        self._bar = Progress(
            TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[label]}"), console=console, transient=False,
        )
        self._task: int | None = None

    def __enter__(self) -> Self:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def begin(self, phase: str, total: int) -> None:
        self._task = self._bar.add_task(phase, total=total, label="")

    def advance(self, label: str) -> None:
        if self._task is not None:
            self._bar.update(self._task, advance=1, label=label)


def _fmt(value: float, spec: str = ".3g") -> str:
    return format(value, spec) if math.isfinite(value) else "-"


MAX_ROWS_LISTED = 40


def correctness_table(evaluation: Evaluation, all_rows: bool = False) -> Table:
    """Every scenario, or only those that did not pass when there are more than MAX_ROWS_LISTED."""
    rows = evaluation.correctness
    hidden = 0
    if not all_rows and len(rows) > MAX_ROWS_LISTED:
        rows = tuple(v for v in rows if not v.verdict.passed)
        hidden = len(evaluation.correctness) - len(rows)
    title = "correctness" + (f" ({hidden} passed scenarios not listed; --all lists them)" if hidden else "")
    table = Table(title=title, title_justify="left")
    for column in ("scenario", "verdict", "max err / bound", "s", "detail"):
        table.add_column(column, overflow="fold")
    for v in rows:
        worst = max(v.errors, key=lambda e: e.max_abs_err / e.bound if e.bound > 0 else math.inf, default=None)
        error = f"{worst.max_abs_err:.2e} / {worst.bound:.2e}" if worst else "-"
        style = "green" if v.verdict.passed else "red"
        detail = v.detail.splitlines()[0][:100] if v.detail else ""
        table.add_row(v.scenario_id, f"[{style}]{v.verdict.value}[/]", error, f"{v.duration_s:.2f}", detail)
    return table


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
    """Lines for everything that did not pass: build log tail, audit findings, failed timings."""
    lines = []
    if not evaluation.built:
        lines += ["build failed; log tail:", evaluation.build.log_tail]
    lines += [f"audit: {f.rule}: {f.evidence} ({f.rationale})" for f in evaluation.audit]
    for bench in evaluation.benchmarks:
        for t in bench.timings:
            if t.status is TimingStatus.FAILED:
                lines.append(f"timing {bench.scenario_id} {t.impl}: failed: {t.detail.splitlines()[0] if t.detail else ''}")
    return lines


def render(evaluation: Evaluation, console: Console, all_rows: bool = False) -> None:
    console.print(f"task {evaluation.task}  candidate {evaluation.candidate_path}  sha256 {evaluation.candidate_hash[:12]}")
    d = evaluation.device
    console.print(f"device {d.name}  driver {d.driver or '-'}  clocks sm {_fmt(d.sm_clock_mhz)} MHz mem {_fmt(d.mem_clock_mhz)} MHz")
    console.print(f"build {evaluation.build.status.value} ({evaluation.build.duration_s:.1f} s), audit "
                  f"{'clean' if not evaluation.audit else f'{len(evaluation.audit)} finding(s)'}")
    if evaluation.correctness and not evaluation.ran:
        # One line, not a table of identical rows: nothing was executed.
        console.print(f"correctness: {len(evaluation.correctness)} scenario(s) not run")
    elif evaluation.correctness:
        console.print(correctness_table(evaluation, all_rows))
    if evaluation.benchmarks:
        console.print(benchmark_table(evaluation))
    for line in failure_details(evaluation):
        console.print(line, markup=False, highlight=False)
    if evaluation.note:
        console.print(f"note: {evaluation.note}", markup=False)
    passed = sum(v.verdict.passed for v in evaluation.correctness)
    if not evaluation.ran:
        built = "built" if evaluation.built else "[red]build failed[/]"
        audited = "audit clean" if evaluation.audit_clean else "[red]audit failed[/]"
        console.print(f"[yellow]NOT RUN[/]: {built}, {audited}; no scenario was executed; wall {evaluation.wall_s:.1f} s")
        return
    verdict = "[green]CORRECT[/]" if evaluation.correct else "[red]NOT CORRECT[/]"
    console.print(f"{verdict}: {passed}/{len(evaluation.correctness)} scenarios passed; wall {evaluation.wall_s:.1f} s")
