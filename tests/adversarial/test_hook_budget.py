"""Attack: raise the Stop hook's counters or budget in a file, so that a stop goes through early (or the
block budget never runs out).

Defence: the budget is pinned in the store's signed registration; the counters live in the store's signed
hooks.json; the workspace's .quaere/hooks.json decides nothing; a store copy edited without the key
starts over, which can only make the hook block longer.
"""

from __future__ import annotations

import json

from quaere.hooks.state import HookBudget, StateFile, read_state


def decisions(bench, count: int) -> list[str]:
    return [json.loads(bench.stop().stdout).get("decision", "allow") for _ in range(count)]


def pin_two_blocks(bench) -> None:
    bench.store.update_registration(bench.ws.id, lambda r: r.model_copy(update={"budget": HookBudget(max_blocks=2)}))


def test_the_workspace_hooks_json_decides_nothing(bench):
    pin_two_blocks(bench)
    (bench.ws.state / "hooks.json").write_text(json.dumps({"budget": {"max_blocks": 1}, "blocks": 999}))
    assert decisions(bench, 3) == ["block", "block", "allow"]  # the pinned budget, counted in the store
    (bench.ws.state / "hooks.json").write_text(json.dumps({"budget": {"max_blocks": 1000}, "blocks": 0}))
    state = read_state(StateFile(bench.store.folder(bench.ws.id), bench.store.signer()))
    assert (state.blocks, state.budget.max_blocks) == (2, 2)


def test_raised_blocks_in_the_stores_copy_without_the_key_start_over(bench):
    pin_two_blocks(bench)
    assert decisions(bench, 1) == ["block"]
    signed = bench.store.folder(bench.ws.id) / "hooks.json"
    data = json.loads(signed.read_text())
    data["payload"]["blocks"] = 999  # the stop would go through at once if this were believed
    signed.write_text(json.dumps(data))
    assert decisions(bench, 3) == ["block", "block", "allow"]  # counted again from zero
    state = read_state(StateFile(signed.parent, bench.store.signer()))
    assert state.tampered_resets == 1 and state.blocks == 2


def test_the_budget_in_the_registration_cannot_be_raised_without_the_key(bench):
    pin_two_blocks(bench)
    path = bench.store.registration_path(bench.ws.id)
    data = json.loads(path.read_text())
    data["payload"]["budget"]["max_blocks"] = 1000
    path.write_text(json.dumps(data))
    done = bench.stop()
    answer = json.loads(done.stdout)
    assert "registration.json" in done.stderr and "tampered" in done.stderr
    assert answer["decision"] == "block"  # a broken set-up blocks (counted in the store), never lets go
