"""The GPU timing attacks reach the runner's interpreter by a route no text rule names, so on the H200 they meet
the timing bounds and the output checks they were written for, not the audit.

Session 29's rules named the old route (``dl_iterate_phdr``, ``ElfW``, ``DT_*``) on a task that bans a library, and
on the H200 (2026-12-05) three of the suite's attacks failed the audit before any timing: a gap in what the suite
tested that only a GPU run showed. This holds the fixtures to every text rule on this machine, as written and after
the attention task's preprocessor."""

from __future__ import annotations

from pathlib import Path

import pytest

from quaere.evaluate.audit import ArtifactFacts, audit_facts

from .audit_support import ALL_BANNED, REPO, preprocessed
from .gpu_candidates import write_gpu_candidate

TASK = REPO / "src" / "quaere" / "task" / "tasks" / "flash_attention_hopper"
# Every attack whose constructor runs Python in the runner (candidates.PYTHON_IN_RUNNER).
THROUGH_THE_INTERPRETER = ("forge_time", "forge_small", "forge_majority", "forge_shave", "precompute", "early_word",
                           "no_word", "left_work")


@pytest.mark.parametrize("attack", THROUGH_THE_INTERPRETER)
def test_the_attack_passes_every_text_rule(attack: str, tmp_path: Path) -> None:
    source = write_gpu_candidate(tmp_path, attack)
    expanded = preprocessed(TASK, source, tmp_path)
    facts = ArtifactFacts(artifact="", included_headers=(), source=str(source), source_text=source.read_text(),
                          preprocessed_text=expanded)
    assert audit_facts(facts, ALL_BANNED) == ()
