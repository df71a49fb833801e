"""The shipped kernel's host-side arithmetic, checked on the CPU.

`bench/kernel/tile_math_test.cu`, `bench/kernel/epilogue_map_test.cu` and `bench/kernel/desc_test.cu` include
`kernels/flash_attention_hopper.cu` and check, with no GPU, the functions the kernel's correctness and
schedule rest on: every query tile handed out exactly once, the KV blocks each tile visits, the causal
head groups' last group large enough to keep the SMs busy to the end, the epilogue's shared-memory maps,
the wgmma descriptors issued as a base plus constant offsets (equal to the whole descriptor everywhere);
`bench/kernel/sched_sim.cu` models the causal schedule's idle tail from the real tile order, and checks that
its model runs every tile once.
A change to the kernel file that breaks one of them fails here, in CI, before any device run.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# (program, extra nvcc flags): the kernel's defaults, and its split tail switched on (FAH_SPLIT, off in
# the shipped file) so that split_pieces' choices are checked too.
PROGRAMS = [("tile_math_test", ()), ("tile_math_test", ("-DFAH_SPLIT=3",)), ("epilogue_map_test", ()),
            ("desc_test", ()), ("sched_sim", ())]


@pytest.mark.parametrize(("name", "flags"), PROGRAMS)
def test_host_program_finds_no_failure(name: str, flags: tuple[str, ...], tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed here")
    exe = tmp_path / name
    build = ["nvcc", "-std=c++17", "-gencode", "arch=compute_90a,code=sm_90a", *flags, "-x", "cu",
             str(ROOT / "bench" / "kernel" / f"{name}.cu"), "-o", str(exe)]
    built = subprocess.run(build, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    ran = subprocess.run([str(exe)], capture_output=True, text=True, check=False, timeout=300)
    assert ran.returncode == 0, (ran.stdout + ran.stderr)[-3000:]
    assert " 0 failure(s)" in ran.stdout, ran.stdout[-3000:]
