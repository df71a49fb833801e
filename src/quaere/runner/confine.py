"""Run a shell command confined by Landlock: ``python -m quaere.runner.confine '<json>' '<command>'``.

The JSON names ``reads`` and ``writes`` (folders). The process sets no-new-privileges, restricts itself and
then becomes ``sh -c <command>``, so the command and everything it starts can read only under ``reads`` and
write only under ``writes``. The build runs this way: a candidate's ``#include`` of a file the build has no
business reading (the evaluator service's signing key) fails, instead of quoting the file in the compiler's
error messages, which the record carries back to the agent. A process of its own rather than a ``preexec_fn``:
the judge may have threads, and a forked child of a threaded process must not load libraries before ``exec``.

Where Landlock is unavailable, a line on stderr says the command ran unconfined, and it runs.
"""

from __future__ import annotations

import json
import os
import sys

from quaere.runner import landlock, sandbox

UNCONFINED = "[quaere] Landlock is unavailable here: this command ran unconfined"


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        sys.stderr.write("usage: python -m quaere.runner.confine '{\"reads\": [...], \"writes\": [...]}' COMMAND\n")
        sys.exit(2)
    try:
        roots = json.loads(argv[1])
        reads, writes = tuple(map(str, roots["reads"])), tuple(map(str, roots["writes"]))
    except (ValueError, KeyError, TypeError) as exc:
        sys.stderr.write(f"quaere.runner.confine: the first argument must be JSON with lists 'reads' and 'writes' "
                         f"(folders); got {argv[1][:200]!r}: {type(exc).__name__}: {exc}\n")
        sys.exit(2)
    abi = landlock.landlock_abi()
    if abi == 0:
        sys.stderr.write(UNCONFINED + "\n")
    else:
        sandbox.no_new_privileges()
        landlock.restrict_self(abi, reads, writes)
    sys.stderr.flush()
    try:
        os.execvp("sh", ["sh", "-c", argv[2]])
    except OSError as exc:  # e.g. read roots without the shell's folder
        sys.stderr.write(f"quaere.runner.confine: could not start sh inside the read roots {list(reads)}: {exc}\n")
        sys.exit(127)


if __name__ == "__main__":
    main(sys.argv)
