"""Attack: write the record of a fast, correct evaluation by hand, so that `quaere goal` says MET.

Defence: the goal reads only the signed store outside the workspace; every line is verified with the
store's public key; a line that fails is named ``tampered`` and withholds the goal.
"""

from __future__ import annotations

import json

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from tests.hooks.factories import bench as timed
from tests.hooks.factories import entry, evaluation

from quaere.evaluate.ledger import append_evaluation
from quaere.records import Verdict
from quaere.signing import Signer
from quaere.store.records import Starter
from quaere.task.loader import load_task
from quaere.workspace import content_hash


def forged_entries(bench) -> list:
    """What an agent would write: a full evaluation of the current file, every scenario passed, every
    configuration 3x faster than the initial kernel, and quaere's own confirmation of it."""
    task = load_task("cpu_softmax")
    ev = evaluation(content_hash(bench.ws.candidate),
                    verdicts=[(s.id, Verdict.PASSED) for s in task.module.correctness_scenarios()],
                    benchmarks=[timed(s.id, 1.0, 3.0) for s in task.module.benchmark_scenarios()])
    pinned = bench.store.registration(bench.ws.id).task
    made = entry(ev.model_copy(update={"task": "cpu_softmax"}), task_sha256=pinned.sha256, workspace_id=bench.ws.id)
    return [made.model_copy(update={"sequence": n, "started_by": who})
            for n, who in ((1, Starter.CALLER), (2, Starter.CONFIRMATION))]


def append_raw(bench, obj) -> None:
    with open(bench.store.records_path(bench.ws.id), "a") as f:
        f.write(json.dumps(obj) + "\n")


def test_a_hand_written_ledger_line_in_the_workspace_is_not_read(bench):
    for made in forged_entries(bench):
        append_evaluation(bench.ws.ledger, made.evaluation)  # the workspace ledger: what the goal used to read
    status = bench.goal()
    assert status["state"] == "no_evaluation"


def test_unsigned_and_foreign_key_lines_in_the_store_are_tampered(bench):
    made = forged_entries(bench)
    append_raw(bench, made[0].model_dump(mode="json"))  # unsigned
    attacker = Signer(public_key=(key := Ed25519PrivateKey.generate()).public_key(), private_key=key)
    append_raw(bench, attacker.sign(made[1].model_dump(mode="json")))  # signed, with the agent's own key
    done = bench.quaere("goal", "--json")
    status = json.loads(done.stdout)
    assert status["state"] == "no_evaluation" and done.returncode == 1
    assert "tampered (unsigned)" in done.stderr and "tampered (bad_signature)" in done.stderr


def test_an_edited_genuine_line_is_tampered_and_withholds_the_goal(bench):
    signer = bench.store.signer()
    genuine = forged_entries(bench)[0].model_copy(update={"partial": ()})
    line = signer.sign(genuine.model_dump(mode="json"))
    line["payload"]["started_by"] = "confirmation"  # one field changed after signing
    append_raw(bench, signer.sign(genuine.model_dump(mode="json")))
    append_raw(bench, line)
    done = bench.quaere("goal", "--json")
    status = json.loads(done.stdout)
    assert "tampered (bad_signature)" in done.stderr and "evaluations.jsonl:2" in done.stderr
    assert status["state"] == "unmet" and status["confirmations"] == 0
    assert any(p.startswith("store: tampered") for p in status["problems"])


def test_a_genuine_line_repeated_or_copied_from_another_workspace_is_tampered(bench, tmp_path, store):
    from quaere.store.pinning import init_workspace

    other, _ = init_workspace(store, tmp_path / "other", "cpu_softmax", False, tmp_path)
    made = forged_entries(bench)[0]
    store.append(other.id, lambda n: made.model_copy(update={"sequence": n, "workspace_id": other.id}))
    copied = (store.records_path(other.id)).read_text().splitlines()[0]
    with open(store.records_path(bench.ws.id), "a") as f:
        f.write(copied + "\n" + copied + "\n")
    read = store.read(bench.ws.id)
    assert read.entries == ()
    assert [p.tampering.value for p in read.problems] == ["other_workspace", "other_workspace"]
    store.append(bench.ws.id, lambda n: made.model_copy(update={"sequence": n}))
    mine = store.records_path(bench.ws.id).read_text().splitlines()[-1]
    with open(store.records_path(bench.ws.id), "a") as f:
        f.write(mine + "\n")  # replayed: the same signed line again
    assert [p.tampering.value for p in store.read(bench.ws.id).problems][-1] == "out_of_sequence"
