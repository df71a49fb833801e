"""Attack: re-roll an unchanged kernel: `quaere eval` then `quaere goal --confirm` again and again until
noise puts every configuration above its target (the byte-identical initial kernel of the CPU task, target
1.0x against itself, once reached MET on the 7th try).

Defence: every full evaluation of a version is pooled (a lucky run does not replace the others), each
configuration must clear its target by two standard errors, and a confirming evaluation that quaere
starts itself must hold too.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

TRIES = 8


def test_rerolling_an_unchanged_kernel_never_meets_the_goal(bench):
    states = []
    for _ in range(TRIES):
        assert bench.quaere("eval").returncode == 0
        status = bench.goal("--confirm")
        states.append(status["state"])
        assert status["state"] != "met", f"met on try {len(states)}: {status}"
    assert status["full_runs"] >= TRIES  # every try was pooled, none replaced another
    entries = bench.store.read(bench.ws.id).entries
    assert all(e.full for e in entries) and len({e.evaluation.correctness[0].seed for e in entries}) == len(entries)
