"""bench/kernel/sass_counts.py: per-kernel SASS counts and kernel-by-kernel comparison (no GPU)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fa_task.bench_scripts import load_bench_script

ROOT = Path(__file__).resolve().parents[2]

# Lines as nvdisasm -c prints them (taken from the shipped kernel's disassembly, cut short).
SASS = """\t.headerflags\t@"EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
.text._ZN3fah13fa_fwd_kernelILi128ELi128ELi2ELi2ELb0ELi1ELi0EEEv14CUtensorMap_stS1_S1_S1_NS_6ParamsE:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0bc0*/                   WARPGROUP.ARRIVE ;
        /*0c70*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR16], RZ, !UPT ;
        /*0cc0*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR16], R24, gsb0 ;
        /*0f10*/              @!P0 WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*03c0*/                   STL [R1+0x1c], RZ ;
        /*03e0*/                   STL.S16 [R1+0x8], R4 ;
        /*0050*/               @P1 BRA `(.L_x_1) ;
.text._ZN3fah13fa_fwd_kernelILi64ELi128ELi3ELi2ELb0ELi2ELi0EEEv14CUtensorMap_stS1_S1_S1_NS_6ParamsE:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   LDL R2, [R1] ;
"""


def load_module():
    return load_bench_script("sass_counts")


def test_counts_per_kernel_ignore_predicates_and_addresses():
    m = load_module()
    kernels = m.split_kernels(SASS)
    assert len(kernels) == 2
    first, second = (kernels[k] for k in sorted(kernels, key=lambda k: "128ELi128" not in k))
    assert m.count(first) == m.KernelCounts(hgmma=2, depbar=1, local=2, instructions=8)
    assert m.count(second) == m.KernelCounts(hgmma=0, depbar=0, local=1, instructions=2)
    assert first[4] == "@!P0 WARPGROUP.DEPBAR.LE gsb0, 0x0"


def test_differing_names_kernels_whose_code_moved_not_those_that_only_shifted_address():
    m = load_module()
    a = m.split_kernels(SASS)
    shifted = m.split_kernels(SASS.replace("/*0010*/", "/*0020*/"))
    assert m.differing(a, shifted) == []
    # Branch labels are numbered across the cubin: a kernel before this one with more labels renumbers them.
    relabelled = m.split_kernels(SASS.replace(".L_x_1)", ".L_x_7)"))
    assert m.differing(a, relabelled) == []
    changed = m.split_kernels(SASS.replace("LDL R2, [R1]", "LDL R3, [R1]"))
    assert m.differing(a, changed) == [k for k in a if "ILi64E" in k]
    assert m.differing(a, {}) == sorted(a)


def test_serialisation_note_pattern_matches_ptxas_wording():
    note = ("ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
            "program dependence on compiler-inserted WG.AR in divergent path in the function '_Z1kv'")
    assert load_module().SERIALISED.search(note)
    assert not load_module().SERIALISED.search("ptxas info    : (C7519) warpgroup.arrive is injected in around line 4")


def test_main_refuses_without_nvdisasm(tmp_path: Path):
    m = load_module()
    with pytest.raises(SystemExit, match="nvdisasm not found"):
        m.main([str(tmp_path / "k.cu"), "--nvdisasm", ""])


def test_the_shipped_kernel_against_itself_is_the_same(tmp_path: Path):
    nvdisasm = load_module().find_nvdisasm()
    if shutil.which("nvcc") is None or nvdisasm is None:
        pytest.skip("nvcc and nvdisasm are both needed (scripts/setup.sh unpacks nvdisasm where nvcc is)")
    kernel = ROOT / "kernels" / "flash_attention_hopper.cu"
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "kernel" / "sass_counts.py"), str(kernel),
                          "--against", str(kernel), "--nvdisasm", nvdisasm], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "every kernel's SASS is the same" in out.stdout
