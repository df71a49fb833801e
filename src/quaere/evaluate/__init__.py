"""The evaluator: build, audit, correctness in an isolated worker, interleaved timing, the ledger.

Public entry points: :func:`run_evaluation`, :class:`EvalOptions`; the ledger in :mod:`.ledger` and the
trace summary in :mod:`.summary`.
"""

from quaere.evaluate.options import EvalOptions, ScenariosFileError
from quaere.evaluate.run import Progress, run_evaluation

__all__ = ["EvalOptions", "Progress", "ScenariosFileError", "run_evaluation"]
