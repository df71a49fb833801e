"""Fakes for the hooks' seams (unit tests only): questions and moment detectors."""

from __future__ import annotations

from quaere.questions.sources import ChosenQuestion
from quaere.records import Moment


class FixedQuestions:
    """Answers every moment with a numbered question naming the moment; records what was asked."""

    def __init__(self) -> None:
        self.asked: list[Moment] = []

    def pick(self, moment, evidence):
        self.asked.append(moment)
        n = len(self.asked)
        return ChosenQuestion(moment=moment, text=f"Q{n} for {moment.value}?", source="bank", entry_id=f"t.q{n}")


class FixedMoments:
    def __init__(self, found=()):
        self.found = list(found)

    def detect(self, events, now):
        return list(self.found)


MOMENT = Moment
