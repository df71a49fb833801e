"""bench/kernel/ncu_stalls.py: warp-stall samples per opcode from ncu's source page (no GPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.fa_task.bench_scripts import load_bench_script

HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed",'
          '"stall_wait","stall_barrier","stall_wait (Not Issued)"')


def load_module():
    return load_bench_script("ncu_stalls")


def write_page(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "source.csv"
    path.write_text("\n".join(['"Kernel Name","fa_fwd_kernel",', HEADER, *rows]) + "\n")
    return path


def test_samples_are_summed_per_opcode_without_predicates_or_modifiers(tmp_path: Path) -> None:
    page = write_page(tmp_path, [
        '"0x10","MUFU.EX2 R1, R2","30","100","30","0","9"',
        '"0x20","@!P0 MUFU.EX2 R3, R4","10","100","10","0","4"',
        '"0x30","WARPGROUP.DEPBAR.LE gsb0, 0x1","60","50","0","60","0"',
    ])
    text = load_module().summarize(page, top=5)
    lines = text.splitlines()
    assert lines[0].endswith(": 100 samples")  # wait 40 + barrier 60; the Not Issued column is not added
    mufu = next(line for line in lines if line.strip().startswith("MUFU "))
    assert mufu.split()[1:4] == ["40", "40.0%", "200"]
    depbar = next(line for line in lines if line.strip().startswith("WARPGROUP "))
    assert "barrier 60" in depbar
    # The opcode with the most samples comes first.
    assert lines.index(depbar) < lines.index(mufu)


def test_a_file_that_is_not_a_source_page_is_refused_by_name(tmp_path: Path) -> None:
    other = tmp_path / "details.csv"
    other.write_text('"ID","Metric Name"\n"0","Duration"\n')
    with pytest.raises(SystemExit, match="details.csv: not an ncu source page"):
        load_module().summarize(other, top=5)
