"""Shared pieces of the audit's adversarial tests: a cuBLAS stand-in, builds like the evaluator's, probes.

The stand-in is a real shared object built here with SONAME ``libcublas.so.13`` exporting
``cublasCreate_v2``: everything that makes a file cuBLAS to the audit, without the real library. Each
attack then renames it, embeds it, loads it from a constructor... The candidates are built as a task
builds them (``-MD`` depfile, headers recorded as ``build.py`` records them) and audited through
``run_audit`` with the context the evaluator passes.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from quaere.evaluate.audit import AuditContext, AuditReport, run_audit
from quaere.evaluate.build import parse_depfile
from quaere.evaluate.preprocess import own_lines, preprocess_command
from quaere.records import BuildResult, BuildStatus

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "audit"
ATTACKS = FIXTURES / "adversarial"
ALL_BANNED = ("cutlass", "cute", "cublas", "cublaslt", "cudnn")
PROBE = Path(__file__).with_name("maps_probe.py")


def compiler(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not on PATH")
    return found


def run(cmd: list[str], cwd: Path | None = None) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=cwd, check=False)
    if done.returncode != 0:
        raise AssertionError(f"fixture build failed: {' '.join(cmd)}\n{done.stdout}\n{done.stderr}")


def fake_blas(folder: Path, name: str = "libcublas.so.13", soname: str = "libcublas.so.13") -> Path:
    """The cuBLAS stand-in, SONAME ``soname``, written under ``folder`` as ``name``."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / name
    run([compiler("cc"), "-shared", "-fPIC", "-O1", f"-Wl,-soname,{soname}", "-o", str(out),
         str(FIXTURES / "fake_cublas.c")])
    return out


def build_candidate(source: Path, out_dir: Path, *extra: str, tool: str = "c++") -> BuildResult:
    """``source`` built like a task's candidate (a shared object with a depfile), as a BuildResult."""
    out_dir.mkdir(parents=True, exist_ok=True)
    artifact, depfile = out_dir / (source.stem + ".so"), out_dir / (source.stem + ".d")
    flags = ["-shared", "-Xcompiler", "-fPIC"] if tool == "nvcc" else ["-shared", "-fPIC", "-O1"]
    command = [compiler(tool), *flags, "-MD", "-MF", str(depfile), str(source), "-o", str(artifact), *extra]
    run(command, cwd=out_dir)
    headers = tuple(os.path.normpath(os.path.join(out_dir, h)) for h in parse_depfile(depfile.read_text()))
    preprocessed = out_dir / (source.stem + ".ii")  # as build_source makes it, for the text rules
    run(shlex.split(preprocess_command(shlex.join(command), preprocessed)), cwd=out_dir)
    return BuildResult(status=BuildStatus.OK, command=" ".join(command), artifact=str(artifact), log_tail="",
                       included_headers=tuple(h for h in headers if h != str(source)), duration_s=0.0,
                       preprocessed=str(preprocessed))


def audit(build: BuildResult, source: Path, task_folder: Path, reference: BuildResult | None = None,
          banned: tuple[str, ...] = ALL_BANNED) -> AuditReport:
    return run_audit(build, banned, AuditContext(source=source, task_folder=task_folder, reference=reference))


def rules_of(report: AuditReport) -> set[str]:
    return {f.rule for f in report.findings}


def evidence(report: AuditReport, rule: str) -> list[str]:
    return [f.evidence for f in report.findings if f.rule == rule]


@dataclass
class Probe:
    """A process that loads a candidate the way the judge's runner will, paused at each step so the
    test (the judge) reads its maps from outside: ``before`` the load, ``loaded``, ``called``."""

    process: subprocess.Popen[str]

    @classmethod
    def start(cls, candidate: Path, arg: str | None, env: dict[str, str]) -> Probe:
        command = [sys.executable, str(PROBE), str(candidate)] + ([arg] if arg is not None else [])
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                   env={**os.environ, **env})
        return cls(process)

    def step(self) -> dict:
        """Let the probe do its next step; returns its report once it has paused again."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the probe exited early"
        return json.loads(line)

    def maps(self) -> str:
        return Path(f"/proc/{self.process.pid}/maps").read_text()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


def preprocessed(task_folder: Path, source: Path, out: Path) -> str:
    """``source``'s own lines after the preprocessor of ``task_folder``'s build command (skips without its compiler)."""
    build = tomllib.loads((task_folder / "task.toml").read_text())["build"]
    command = build.format(source=shlex.quote(str(source)), output=out / "k.so", depfile=out / "k.d")
    tool = shlex.split(command)[0]
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not on PATH")
    subprocess.run(shlex.split(preprocess_command(command, out / "k.ii")), check=True, cwd=out, capture_output=True)
    return own_lines((out / "k.ii").read_text())
