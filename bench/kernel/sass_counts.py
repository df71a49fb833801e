"""Per-kernel SASS counts of a kernel file, and which kernels two builds compile differently, without a GPU.

Usage: python sass_counts.py FILE.cu [--flag=-DX=1 ...] [--against OTHER.cu [--against-flag=-DY=1 ...]]
                             [--nvdisasm PATH]
(an nvcc flag goes after '=': argparse would read a separate "-DX=1" as an option of its own)

Compiles FILE.cu for sm_90a to a cubin (device code only, about 15 s), disassembles it with `nvdisasm` and prints, per
kernel, its HGMMA instructions, its `WARPGROUP.DEPBAR` waits and its local-memory instructions (LDL/STL), and ptxas's
wgmma-serialisation notes (C75xx: ptxas says that only as an info line, and a serialised kernel shows as about one
DEPBAR per HGMMA). With --against, also says which kernels' instructions differ between the two builds (addresses and
encodings ignored), which is how a cleanup is shown not to move any kernel.

nvdisasm is not in every CUDA install; the PyPI wheel has one that reads nvcc 13.0's cubins:
    pip download --no-deps nvidia-cuda-nvdisasm==13.2.86 && unzip nvidia_cuda_nvdisasm-*.whl 'nvidia/cu13/bin/*'
then pass --nvdisasm nvidia/cu13/bin/nvdisasm (or put it on PATH); scripts/setup.sh puts one in the venv's bin.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

SERIALISED = re.compile(r"\(C75\d\d\) Potential Performance Loss: wgmma")
_SECTION = re.compile(r"^\s*\.text\.(\S+):")
_INSTR = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"\.L_x_\d+")


@dataclass(frozen=True)
class KernelCounts:
    """One kernel's instruction counts in its SASS."""

    hgmma: int
    depbar: int
    local: int
    instructions: int


def split_kernels(sass: str) -> dict[str, list[str]]:
    """nvdisasm's text -> {mangled kernel name: its instructions, without addresses or encodings}. Branch labels
    (`.L_x_N`, numbered across the whole cubin) are renumbered per kernel in order of first use, so that a kernel
    compiled the same reads the same whatever the kernels before it."""
    kernels: dict[str, list[str]] = {}
    current: list[str] | None = None
    labels: dict[str, str] = {}
    for line in sass.splitlines():
        section = _SECTION.match(line)
        if section:
            current = kernels.setdefault(section.group(1), [])
            labels = {}
            continue
        instr = _INSTR.match(line)
        if instr and current is not None:
            text = _LABEL.sub(lambda m, seen=labels: seen.setdefault(m.group(0), f".L{len(seen)}"), instr.group(1))
            current.append(" ".join(text.split()))
    return kernels


def count(instructions: list[str]) -> KernelCounts:
    """HGMMA, WARPGROUP.DEPBAR and LDL/STL counts of one kernel's instructions."""
    ops = [re.sub(r"^@!?U?P\w+\s+", "", i).split(" ", 1)[0] for i in instructions]
    return KernelCounts(hgmma=sum(op.startswith("HGMMA") for op in ops),
                        depbar=sum(op.startswith("WARPGROUP.DEPBAR") for op in ops),
                        local=sum(op.split(".")[0] in ("LDL", "STL") for op in ops), instructions=len(ops))


def differing(a: dict[str, list[str]], b: dict[str, list[str]]) -> list[str]:
    """Kernels whose instructions differ between two builds, or that only one of them has."""
    return sorted(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))


def compile_cubin(source: Path, flags: list[str], work: Path) -> tuple[Path, list[str]]:
    """Compile `source`'s device code for sm_90a into a fresh cubin in `work`: (its path, ptxas's wgmma-serialisation
    notes). An nvcc failure stops with its message, naming the file."""
    cubin = work / f"{source.stem}-{len(list(work.iterdir()))}.cubin"  # a fresh name for each build in `work`
    cmd = ["nvcc", "-O3", "-std=c++17", "-gencode", "arch=compute_90a,code=sm_90a", "-cubin", *flags, "-x", "cu",
           str(source), "-o", str(cubin)]
    built = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if built.returncode != 0:
        raise SystemExit(f"{source}: nvcc failed:\n{built.stderr[-3000:]}")
    return cubin, [line for line in (built.stdout + built.stderr).splitlines() if SERIALISED.search(line)]


def build_sass(source: Path, flags: list[str], nvdisasm: str, work: Path) -> tuple[str, list[str]]:
    """Compile `source` to a cubin and disassemble it: (SASS text, ptxas's serialisation notes)."""
    cubin, notes = compile_cubin(source, flags, work)
    dis = subprocess.run([nvdisasm, "-c", str(cubin)], capture_output=True, text=True, check=False)
    if dis.returncode != 0:
        raise SystemExit(f"{nvdisasm}: could not disassemble {cubin}:\n{dis.stderr[-2000:]}")
    return dis.stdout, notes


def find_nvdisasm() -> str | None:
    """nvdisasm on PATH, else the one scripts/setup.sh unpacks beside this Python (its venv's bin)."""
    beside = Path(sys.executable).parent / "nvdisasm"
    return shutil.which("nvdisasm") or (str(beside) if beside.is_file() else None)


def _demangle(names: list[str]) -> dict[str, str]:
    if shutil.which("c++filt") is None:
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=False).stdout
    return dict(zip(names, out.splitlines(), strict=False)) if out else {n: n for n in names}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("--flag", action="append", default=[], help="an nvcc flag for SOURCE (repeat)")
    ap.add_argument("--against", type=Path, help="a second file to compare kernel by kernel")
    ap.add_argument("--against-flag", action="append", default=[], help="an nvcc flag for --against (repeat)")
    ap.add_argument("--nvdisasm", default=find_nvdisasm(), help="path to nvdisasm (default: PATH, then the venv's)")
    args = ap.parse_args(argv)
    if not args.nvdisasm:
        raise SystemExit("nvdisasm not found: pass --nvdisasm PATH (see this script's docstring for the wheel)")
    with tempfile.TemporaryDirectory() as tmp:
        sass, notes = build_sass(args.source, args.flag, args.nvdisasm, Path(tmp))
        kernels = split_kernels(sass)
        names = _demangle(sorted(kernels))
        print(f"{'HGMMA':>6} {'DEPBAR':>6} {'LDL/STL':>7} {'instr':>6}  kernel")
        for name in sorted(kernels):
            c = count(kernels[name])
            print(f"{c.hgmma:6d} {c.depbar:6d} {c.local:7d} {c.instructions:6d}  {names[name]}")
        print("\n".join(notes) if notes else "ptxas: no wgmma serialisation note")
        if args.against:
            other, _ = build_sass(args.against, args.against_flag, args.nvdisasm, Path(tmp))
            diff = differing(kernels, split_kernels(other))
            print("every kernel's SASS is the same" if not diff else
                  "differ: " + ", ".join(names.get(n, n) for n in diff))
            return 1 if diff else 0
    return 1 if notes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
