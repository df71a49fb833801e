"""The sandboxed runner: the only process that ever loads candidate code.

It imports nothing but the standard library (no torch, no pydantic, no quaere.evaluate), so that no banned
library is mapped into it before the candidate is loaded and so that its import footprint is small. It maps
buffers the judge owns (CUDA IPC handles or shared-memory file descriptors), calls the candidate's C entry
point on them and reports what it saw: a status code and, for timed calls, a device time. Everything it
reports is a claim: the judge checks outputs in its own mapping and bounds the times with its own clock.
"""
