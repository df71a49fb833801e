"""quaere: question-guided optimization of GPU kernels.

A strict evaluator (``quaere eval``), a goal the agent cannot talk its way past (a Stop hook), and short,
checkable questions asked at five key moments of a campaign.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
