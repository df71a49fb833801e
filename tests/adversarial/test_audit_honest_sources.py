"""The shipped kernel and every task's initial kernel pass each text rule, as written and after their task's own
build command's preprocessor: a text rule that condemned an honest kernel would fail every evaluation of it.

These are the sources whose lookups, asm strings and tables the newer rules read (``source_entry_point_lookup``,
the strings spelled in pieces); the full audit of their built artifacts runs on the GPU machine
(``test_gpu_attacks.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from quaere.evaluate.audit import ArtifactFacts, audit_facts, audit_warnings

from .audit_support import ALL_BANNED, preprocessed

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "src" / "quaere" / "task" / "tasks"
HONEST = [("flash_attention_hopper", REPO / "kernels" / "flash_attention_hopper.cu"),
          ("flash_attention_hopper", TASKS / "flash_attention_hopper" / "kernel.cu"),
          ("rmsnorm_hopper", TASKS / "rmsnorm_hopper" / "kernel.cu"),
          ("cpu_softmax", TASKS / "cpu_softmax" / "kernel.cpp")]


@pytest.mark.parametrize(("task", "source"), HONEST, ids=[f"{t}:{s.name}" for t, s in HONEST])
def test_an_honest_kernel_passes_every_text_rule(task: str, source: Path, tmp_path: Path) -> None:
    expanded = preprocessed(TASKS / task, source, tmp_path)
    assert expanded.count("\n") > 10  # the main file's own lines were found
    # Every rule, so a text rule added later is held to the honest kernels too; the binary's facts are left empty.
    facts = ArtifactFacts(artifact="", included_headers=(), source=str(source), source_text=source.read_text(),
                          preprocessed_text=expanded)
    assert audit_facts(facts, ALL_BANNED) == ()
    assert audit_warnings(facts, ALL_BANNED) == ()
