"""A stand-in for the judge's runner: loads a candidate with ctypes, one step per line read on stdin.

Steps: 'ready' (nothing loaded yet), 'loaded' (the candidate is mapped, its constructors ran),
'called' (``run`` was called, with the optional argument as a C string). After each step it prints one
JSON line and waits, so the test reads ``/proc/<pid>/maps`` from outside, as the judge will.
"""

import ctypes
import json
import os
import sys


def main(argv: list[str]) -> None:
    candidate, arg = argv[0], (argv[1] if len(argv) > 1 else None)
    steps = ["ready", "loaded", "called"]
    library = None
    for step in steps:
        sys.stdin.readline()
        report: dict = {"step": step}
        if step == "loaded":
            library = ctypes.CDLL(candidate, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        elif step == "called" and library is not None:
            library.run.argtypes = [ctypes.c_char_p] if arg is not None else []
            report["rc"] = library.run(arg.encode()) if arg is not None else library.run()
        print(json.dumps(report), flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    main(sys.argv[1:])
