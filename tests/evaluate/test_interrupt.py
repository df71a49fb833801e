"""Ctrl-C during `quaere eval`: it stops at once, says what was kept, and leaves no judge or runner behind."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from quaere.store import Store
from quaere.store.pinning import init_workspace

HANGS = 'extern "C" int softmax_rows(const float*, float*, int, int) { volatile int s = 1; while (s) {} return 0; }\n'


def children(pid: int) -> set[int]:
    """Every live descendant of ``pid``, from /proc."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def role(pid: int) -> str:
    """The module a quaere process runs (``python -m MODULE``), '' for anything else."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    return argv[argv.index(b"-m") + 1].decode() if b"-m" in argv[:-1] else ""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_ctrl_c_stops_the_evaluation_at_once_and_says_nothing_was_recorded(tmp_path: Path, store: Store,
                                                                            cache_dir: Path) -> None:
    workspace, _ = init_workspace(store, tmp_path / "ws", "cpu_softmax", False, tmp_path)
    workspace.candidate.write_text(HANGS)
    env = {**os.environ, "QUAERE_CACHE_DIR": str(cache_dir)}
    # Its own process group, as a shell's foreground job: Ctrl-C is SIGINT to the whole group.
    # SIGINT at its default in the child, whatever this test run inherited (see tests/campaign/test_resume.py).
    proc = subprocess.Popen([sys.executable, "-m", "quaere", "eval"], cwd=workspace.root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=functools.partial(signal.signal, signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    helpers: set[int] = set()
    while len(helpers) < 2 and time.monotonic() < deadline:  # the judge and the candidate's runner, hanging
        time.sleep(0.2)
        helpers = {pid for pid in children(proc.pid) if role(pid) in ("quaere.evaluate.judge", "quaere.runner")}
    assert len(helpers) >= 2, "the judge and a runner never started"
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)
    interrupted = time.monotonic()
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - interrupted < 5, "Ctrl-C took more than 5 s"
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("interrupted: the evaluation stopped before its end")
    assert "nothing was signed into the store" in err and "Traceback" not in err
    gone = time.monotonic() + 5
    while any(alive(pid) for pid in helpers) and time.monotonic() < gone:
        time.sleep(0.1)
    assert not [pid for pid in helpers if alive(pid)], "a judge or runner outlived the evaluation"
    assert store.read(workspace.id).entries == ()
    assert not workspace.ledger.exists() or workspace.ledger.read_text() == ""
