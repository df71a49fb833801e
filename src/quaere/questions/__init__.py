"""Questions: the bank (data), the five moment detectors, and the sources that pick what to ask.

Data flows ledger/trace -> :mod:`moments` (which moment holds, and why) -> :mod:`sources` (which question)
-> :mod:`queue` (held for the next stop) -> the agent. :mod:`bank` loads, lints and counts the entries.
"""
