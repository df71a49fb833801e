"""The plot, the HTML page (rendered by headless Chromium) and the terminal summary."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image
from rich.console import Console

from quaere.report.html import render_html
from quaere.report.plots import GEOMEAN_COLOUR, KIND_STYLE, progress_png
from quaere.report.terminal import print_summary

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


def _pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.int16)


def _count(image: Image.Image, colour: str, tolerance: int = 12) -> int:
    """Pixels within ``tolerance`` of ``colour`` on every channel."""
    return int((np.abs(_pixels(image) - np.array(_rgb(colour))) <= tolerance).all(axis=2).sum())


def test_plot_draws_the_best_line_and_each_kind(report):
    image = Image.open(io.BytesIO(progress_png(report)))
    assert image.size == (1000, 550)
    assert _count(image, GEOMEAN_COLOUR) > 500  # a 2.5 px line across most of the width
    for kind, (_, colour) in KIND_STYLE.items():
        assert _count(image, colour) > 20, f"no marker of kind {kind.value}"


def test_html_is_self_contained_and_escaped(report):
    page = render_html(report, progress_png(report))
    assert "data:image/png;base64," in page
    assert "http://" not in page and "https://" not in page and "<script" not in page
    assert "What fraction of the roofline does s1 reach?" in page
    hostile = report.model_copy(update={"title": "<script>alert(1)</script>"})
    assert "<script>alert" not in render_html(hostile, None)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup.sh installs it)")
def test_html_renders_with_the_plot_in_headless_chromium(report, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_html(report, progress_png(report)))
    shot = tmp_path / "shot.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1200,1600",
         page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    image = Image.open(shot).convert("RGB")
    assert image.size == (1200, 1600)
    non_white = int((_pixels(image) != 255).any(axis=2).sum())
    assert non_white > 0.02 * 1200 * 1600, "the page rendered blank"
    assert _count(image, GEOMEAN_COLOUR) > 500, "the best-geomean line is not on the page"
    assert _count(image, KIND_STYLE[next(iter(KIND_STYLE))][1]) > 20, "no question marker on the page"


def test_terminal_summary(report):
    console = Console(record=True, width=140)
    print_summary(report, console)
    text = console.export_text()
    assert "tool calls per question: mean 4.6, median 5.0" in text
    assert "re-added-line churn: 33.3% (2 of 6 added lines)" in text
    assert "stop attempts 2: blocked 1, allowed 1" in text
    assert "+0.375 after #2 [information, human, plateau]" in text
    assert "4.000x" in text  # geomean of the final candidate against the initial kernel


def test_cli_report_writes_the_html(campaign, tmp_path):
    page = tmp_path / "out.html"
    done = subprocess.run(
        [sys.executable, "-m", "quaere", "report", str(campaign.workspace.root), "--html", str(page), "--k", "2"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "140"},
    )
    assert done.returncode == 0, done.stderr
    assert "mean 4.6, median 5.0" in done.stdout
    assert page.read_text().startswith("<!DOCTYPE html>")


def test_cli_report_outside_a_workspace_says_so(tmp_path):
    done = subprocess.run([sys.executable, "-m", "quaere", "report", str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert "not inside a quaere workspace" in done.stderr


def test_an_empty_campaign_still_reports(tmp_path):
    from quaere.report.campaign_report import build_report

    empty = build_report((), (), {}, {}, None)
    assert (empty.pacing.mean, empty.churn.fraction, empty.final) == (None, None, None)
    assert "the ledger holds no evaluation: no final table" in empty.problems
    assert render_html(empty, progress_png(empty)).startswith("<!DOCTYPE html>")


def test_cli_export_from_inside_the_workspace(campaign, tmp_path):
    done = subprocess.run([sys.executable, "-m", "quaere", "export", str(tmp_path / "b")], capture_output=True,
                          text=True, timeout=120, cwd=campaign.workspace.root)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "b" / "manifest.json").is_file()
    too_many = subprocess.run([sys.executable, "-m", "quaere", "export", "a", "b", "c"], capture_output=True,
                              text=True, timeout=120)
    assert too_many.returncode == 2 and "expected [WORKSPACE] OUT" in too_many.stderr
