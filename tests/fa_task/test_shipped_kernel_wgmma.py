"""ptxas keeps the shipped kernel's wgmma pipeline: no "wgmma.mma_async instructions are serialized" note.

ptxas serialises every wgmma of a kernel (a wait after each one) when it cannot prove the pipeline well formed,
and says so only as an info line (C7510-C7520), not as a warning or an error. It did so twice in this kernel's
history: stage 15's half-diagonal GEMM chosen by a per-thread branch (-28% on causal D=128), and stage 16's
first form of the halved P V (-4%). The kernel's defaults must compile without that note; the second test shows
that the check sees it, on a copy whose warp vote is turned back into a per-thread condition.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "kernels" / "flash_attention_hopper.cu"
SERIALISED = re.compile(r"\(C75\d\d\) Potential Performance Loss: wgmma\.mma_async instructions are serialized")
VOTE = "const bool half_pv = (HPV || HD) && __all_sync(0xffffffffu, "


def serialisation_notes(source: Path, out_dir: Path) -> list[str]:
    """Compile `source` for sm_90a (device code only) and return ptxas's wgmma-serialisation lines."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed here")
    build = ["nvcc", "-O3", "-std=c++17", "-gencode", "arch=compute_90a,code=sm_90a", "-cubin", "-x", "cu",
             str(source), "-o", str(out_dir / (source.stem + ".cubin"))]
    built = subprocess.run(build, capture_output=True, text=True, check=False, timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    return [line for line in (built.stdout + built.stderr).splitlines() if SERIALISED.search(line)]


def test_shipped_kernel_keeps_the_wgmma_pipeline(tmp_path: Path) -> None:
    assert serialisation_notes(KERNEL, tmp_path) == []


def test_the_check_sees_a_serialised_kernel(tmp_path: Path) -> None:
    text = KERNEL.read_text()
    assert VOTE in text, "the half-diagonal vote moved: update VOTE"
    # The same condition as a per-thread value: the branches around the wgmmas become divergent.
    mutant = tmp_path / "divergent.cu"
    mutant.write_text(text.replace(VOTE, "const bool half_pv = (HPV || HD) && ("))
    assert serialisation_notes(mutant, tmp_path), "ptxas reported no serialisation for a divergent wgmma branch"
