"""Run by the runtime-guard tests in a fresh interpreter under the guard's environment.

It behaves like the evaluator's worker: the harness loads what it needs first (``--harness-lib``, as
PyTorch preloads cuBLAS), then the maps are read around the candidate's first call. Prints one JSON line.
"""

import ctypes
import json
import sys

from quaere.evaluate.runtime_guard import banned_mappings, read_maps

BANNED = ("cublas", "cublaslt", "cudnn")


def main(argv: list[str]) -> None:
    candidate, harness_libs = argv[0], argv[1:]
    ctypes.CDLL("libm.so.6")  # an ordinary load by a non-candidate object (Python's ctypes)
    for path in harness_libs:
        _ = ctypes.CDLL(path).cublasCreate_v2  # the harness maps cuBLAS and looks up a symbol itself
    before = banned_mappings(BANNED, read_maps())
    rc = ctypes.CDLL(candidate).run()
    after = banned_mappings(BANNED, read_maps())
    print(json.dumps({"rc": rc, "before": sorted(before), "after": sorted(after)}))


if __name__ == "__main__":
    main(sys.argv[1:])
