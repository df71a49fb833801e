"""The question queue: order, a typed empty result, and no double delivery across processes."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from quaere.questions.queue import QueueEmpty, enqueue, pending, pop_next
from quaere.questions.sources import ChosenQuestion
from quaere.records import Moment
from quaere.workspace import Workspace


def workspace(root: Path) -> Workspace:
    (root / ".quaere").mkdir(parents=True, exist_ok=True)
    return Workspace(root=root, task="t", candidate_name="k.cpp")


def question(n: int) -> ChosenQuestion:
    return ChosenQuestion(moment=Moment.PLATEAU, source="human", text=f"Question {n}?")


def test_first_in_first_out(tmp_path):
    ws = workspace(tmp_path)
    assert isinstance(pop_next(ws), QueueEmpty)
    for n in range(3):
        enqueue(ws, question(n))
    assert [q.text for q in pending(ws)] == ["Question 0?", "Question 1?", "Question 2?"]
    assert pop_next(ws).text == "Question 0?"
    assert pop_next(ws).text == "Question 1?"
    enqueue(ws, question(3))
    assert [q.text for q in pending(ws)] == ["Question 2?", "Question 3?"]
    assert pop_next(ws).text == "Question 2?"
    assert pop_next(ws).text == "Question 3?"
    assert isinstance(pop_next(ws), QueueEmpty)


def _pop_all(root: str, out) -> None:
    ws = workspace(Path(root))
    taken = []
    while not isinstance(q := pop_next(ws), QueueEmpty):
        taken.append(q.text)
    out.put(taken)


def test_two_processes_never_deliver_the_same_question(tmp_path):
    ws = workspace(tmp_path)
    for n in range(40):
        enqueue(ws, question(n))
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    workers = [context.Process(target=_pop_all, args=(str(tmp_path), out)) for _ in range(2)]
    for w in workers:
        w.start()
    taken = out.get(timeout=120) + out.get(timeout=120)
    for w in workers:
        w.join(timeout=60)
    assert sorted(taken) == sorted(f"Question {n}?" for n in range(40))
