"""How a child process of the evaluator ended, in words and as a verdict: the judge's runners
(:mod:`.runner_client`) and the supervisor's judge (:mod:`.supervisor`) describe their exits the same way, and a
runner's refusal of a request (after which the judge kills it) is judged here too."""

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


def refusal_verdict(reply: dict) -> tuple[Verdict, str]:
    """A runner's reply without ``ok`` as a verdict and its detail: a library that did not load or a device fault
    is the candidate's (``crashed``, or ``out_of_memory`` where the runner says so); any other refusal is a
    request the judge should not have sent (``harness_error``)."""
    if "load_error" in reply:
        return Verdict.CRASHED, str(reply["load_error"])
    if "fault" in reply:
        verdict = Verdict.OUT_OF_MEMORY if reply.get("out_of_memory") else Verdict.CRASHED
        return verdict, f"device fault during the call: {reply['fault']}"
    return Verdict.HARNESS_ERROR, f"runner refused a request: {reply.get('error')}"
