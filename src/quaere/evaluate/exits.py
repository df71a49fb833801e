"""How a child process of the evaluator ended, in words and as a verdict: the judge's runners
(:mod:`.runner_client`) and the supervisor's judge (:mod:`.supervisor`) describe their exits the same way."""

from __future__ import annotations

import signal

from quaere.records import Verdict


def describe_exit(returncode: int) -> str:
    """``returncode`` (a ``subprocess`` one: negative for a signal) in words."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


def death_verdict(returncode: int, stderr_tail: str) -> Verdict:
    """SIGSYS is the seccomp filter's kill; SIGKILL not sent by us is the OOM killer; else a crash."""
    if returncode == -signal.SIGSYS:
        return Verdict.SANDBOX_VIOLATION
    if "out of memory" in stderr_tail.lower() or returncode == -signal.SIGKILL:
        return Verdict.OUT_OF_MEMORY
    return Verdict.CRASHED
