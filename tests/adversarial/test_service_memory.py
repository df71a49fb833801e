"""The evaluator service holds the signing key and its runners run as its user: it makes itself non-dumpable, so
that no process of that user reads its memory through ``/proc/<pid>/mem`` or ptrace (where no Yama policy or
Landlock rule stands in the way). Checked in a real ``serve`` process, from inside it once it is listening."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SERVE_AND_REPORT = r"""
import ctypes, sys
from pathlib import Path
from quaere.serve.server import serve
from quaere.store.records import TrustMode
from quaere.store.store import Store


def ready():
    print("dumpable", ctypes.CDLL(None).prctl(3, 0, 0, 0, 0), flush=True)  # PR_GET_DUMPABLE
    raise SystemExit(0)


root = Path(sys.argv[1])
serve(Store(root, TrustMode.SEPARATE_USER), root / "service.sock", evaluate=None, ready=ready)
"""


def test_the_service_cannot_be_read_by_processes_of_its_user(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", SERVE_AND_REPORT, str(tmp_path / "store")], capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.split() == ["dumpable", "0"], (done.stdout, done.stderr[-2000:])
