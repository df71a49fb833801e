"""Attack: a helper library whose constructor loads cuBLAS as the candidate is loaded, before any call.

A maps diff around the first call sees nothing new (cuBLAS is already there), and the guard's log names
the helper, not the candidate, as the caller. Defences: the maps are read before the candidate is
loaded (``new_banned_mappings(before_load, ...)``), and the guard attributes to the candidate every
object that was not mapped before it (``trusted_objects``) or that it opened by path.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from quaere.evaluate.maps import new_banned_mappings, parse_maps
from quaere.evaluate.runtime_guard import guard_environment, runtime_findings

from .audit_support import ATTACKS, Probe, compiler, fake_blas, run

BANNED = ("cublas",)
IDENTITY = "SONAME libcublas.so.13; exports cublasCreate_v2"


@pytest.fixture(scope="module")
def attack(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The cuBLAS stand-in, the helper whose constructor dlopens it, and a candidate that NEEDs the helper."""
    out = tmp_path_factory.mktemp("constructor")
    blas = fake_blas(out / "blas")
    helper = out / "libhelper.so"
    run([compiler("cc"), "-shared", "-fPIC", "-O1", "-o", str(helper), str(ATTACKS / "helper_constructor.c"), "-ldl"])
    candidate = out / "candidate.so"
    run([compiler("cc"), "-shared", "-fPIC", "-O1", "-o", str(candidate), str(ATTACKS / "needs_helper.c"),
         f"-L{out}", "-lhelper", "-Wl,-rpath,$ORIGIN"])
    return {"blas": blas, "helper": helper, "candidate": candidate}


def _run_probe(attack: dict[str, Path], env: dict[str, str]) -> tuple[str, str, str, int]:
    """Maps before the load, after the load and after the first call, read from outside like the judge."""
    probe = Probe.start(attack["candidate"], None, {"FAKE_BLAS": str(attack["blas"]), **env})
    try:
        probe.step()
        before_load = probe.maps()
        probe.step()
        loaded = probe.maps()
        reply = probe.step()
        return before_load, loaded, probe.maps(), reply["rc"]
    finally:
        probe.close()


def test_maps_read_before_the_load_see_the_constructors_library(attack: dict[str, Path]) -> None:
    before_load, loaded, called, rc = _run_probe(attack, {})
    assert rc == 0
    before, first_call, end = parse_maps(before_load), parse_maps(loaded), parse_maps(called)
    # The old diff (around the first call) is blind: cuBLAS was mapped by the constructor before it.
    assert new_banned_mappings(first_call, end, BANNED) == ()
    found = new_banned_mappings(before, end, BANNED)
    assert [f.evidence for f in found] == [f"mapped {attack['blas']} (cublas: {IDENTITY})"]


def test_the_guard_blames_the_candidate_for_its_helpers_calls(attack: dict[str, Path], tmp_path: Path) -> None:
    log = tmp_path / "guard.log"
    before_load, _, _, rc = _run_probe(attack, guard_environment(tmp_path / "shim", log))
    assert rc == 0
    # The helper, not the candidate, called dlopen: judged by the candidate's object alone, it is clean...
    assert runtime_findings(log, attack["candidate"], BANNED) == ()
    # ... but the helper was not mapped before the candidate was loaded: it acts for the candidate.
    trusted = frozenset(os.path.realpath(m.path) for m in parse_maps(before_load) if m.is_file)
    found = runtime_findings(log, attack["candidate"], BANNED, trusted_objects=trusted)
    assert [f.evidence for f in found] == [f"dlopen({str(attack['blas'])!r}) from {attack['helper']} (cublas)"]


def test_a_helper_the_candidate_opened_by_path_acts_for_it(tmp_path: Path) -> None:
    # Without the judge's list of earlier objects, a helper opened by path is still the candidate's.
    candidate = tmp_path / "cand.so"
    log = tmp_path / "g.log"
    log.write_text(
        "1\tloaded\tdlguard\t?\t-\n"
        f"1\tdlopen\t/tmp/x/libhelper.so\t{candidate}\t-\n"
        "1\tdlopen\tlibcublas.so.13\t/tmp/x/libhelper.so\t-\n"
        "1\tdlopen\tlibcudnn.so.9\t/usr/lib/libtorch_cuda.so\t-\n"
    )
    candidate.write_bytes(b"")
    found = runtime_findings(log, candidate, ("cublas", "cudnn"))
    assert [f.evidence for f in found] == ["dlopen('libcublas.so.13') from /tmp/x/libhelper.so (cublas)"]
