"""scripts/summarize_evals.py on records the H200 wrote: the geomeans, and how many candidate medians the turn floor
raised (session 30's official eval: 3 of 26, the largest by 3.0 us; session 28's record predates the floor)."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "docs" / "runs"


def _summary(record: Path) -> str:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "summarize_evals.py"), str(record)],
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def test_the_summary_counts_the_medians_the_turn_floor_raised() -> None:
    out = _summary(RUNS / "2026-12-05" / "s30" / "call1-eval.json.gz")
    assert "candidate / fa3: geomean 1.039, min 0.995 over 26 configs" in out
    assert "turn floor: raised 3 of 26 candidate medians (at most +3.0 us)" in out


def test_a_record_without_the_floor_says_so() -> None:
    out = _summary(RUNS / "2026-12-04" / "s28" / "call2-eval.json.gz")
    assert "candidate / fa3: geomean 1.038" in out
    assert "turn floor: not recorded" in out


def test_a_file_that_is_not_an_eval_record_is_named_with_its_field(tmp_path: Path) -> None:
    record = tmp_path / "other.json"
    record.write_text('{"x": 1}')
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "summarize_evals.py"), str(record)],
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr
    assert f"{record}: not a quaere eval record: field '" in done.stdout


def test_a_gzipped_record_is_read_as_docs_runs_keeps_it() -> None:
    out = _summary(RUNS / "2026-12-05" / "s31" / "call2-eval.json.gz")
    assert "on NVIDIA H100 80GB HBM3" in out
    assert "candidate / fa3: geomean 1.049, min 0.974 over 26 configs" in out


@pytest.mark.parametrize("blob", [b"\xff\xfe\x00\x8b not json",  # not UTF-8
                                  b"\x1f\x8b\x08\x00" + bytes(6) + b"garbage!!",  # a gzip header, a broken stream
                                  gzip.compress(b'{"task": 1}')[:-9]])  # a gzip stream cut short
def test_a_file_that_is_not_a_readable_record_is_named_not_a_traceback(tmp_path: Path, blob: bytes) -> None:
    record = tmp_path / "blob.bin"
    record.write_bytes(blob)
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "summarize_evals.py"), str(record)],
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr
    assert done.stdout.startswith(f"{record}: no record (")
