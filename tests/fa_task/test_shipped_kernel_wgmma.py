"""ptxas keeps the shipped kernel's wgmma pipeline: no "wgmma.mma_async instructions are serialized" note.

ptxas serialises every wgmma of a kernel (a wait after each one) when it cannot prove the pipeline well formed,
and says so only as an info line (C7510-C7520), not as a warning or an error. It did so twice in this kernel's
history: stage 15's half-diagonal GEMM chosen by a per-thread branch (-28% on causal D=128), and stage 16's
first form of the halved P V (-4%). The kernel's defaults must compile without that note; the second test shows
that the check sees it, on a copy whose warp vote is turned back into a per-thread condition, built without the
causal tile shift (FAH_SHIFT 0): with the shift (stage 32) ptxas allocates that copy's registers otherwise and keeps
its pipeline, so the shifted copy would prove nothing about the check (seen with nvcc 13.0, 2026-12-05).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.fa_task.bench_scripts import load_bench_script

KERNEL = Path(__file__).resolve().parents[2] / "kernels" / "flash_attention_hopper.cu"
VOTE = "const bool half_pv = (HPV || HD) && __all_sync(0xffffffffu, "


def serialisation_notes(source: Path, out_dir: Path, flags: tuple[str, ...] = ()) -> list[str]:
    """Compile `source` for sm_90a with `flags` (device code only, bench/kernel/sass_counts.py's build) and return
    ptxas's wgmma-serialisation lines."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed here")
    return load_bench_script("sass_counts").compile_cubin(source, list(flags), out_dir)[1]


def test_shipped_kernel_keeps_the_wgmma_pipeline(tmp_path: Path) -> None:
    assert serialisation_notes(KERNEL, tmp_path) == []


def test_the_check_sees_a_serialised_kernel(tmp_path: Path) -> None:
    text = KERNEL.read_text()
    assert VOTE in text, "the half-diagonal vote moved: update VOTE"
    # The same condition as a per-thread value: the branches around the wgmmas become divergent.
    mutant = tmp_path / "divergent.cu"
    mutant.write_text(text.replace(VOTE, "const bool half_pv = (HPV || HD) && ("))
    notes = serialisation_notes(mutant, tmp_path, ("-DFAH_SHIFT=0",))
    assert notes, "ptxas reported no serialisation for a divergent wgmma branch"
