"""Every command as a newcomer sees it on an 80-column terminal, and as a script sees it through a pipe.

Commands run for real in a workspace of a small CPU task (the campaign tests' quick task, its target made
reachable by the initial kernel so that `goal --confirm` runs its confirming evaluation). A terminal is
what rich takes for one (``TTY_COMPATIBLE=1``, 80 ``COLUMNS``); a pipe is the plain subprocess.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

QUICK_TASK = Path(__file__).parents[1] / "campaign" / "fixtures" / "quick_softmax"
ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]|\x1b\][^\x07]*\x07|\r")
STORE = Path()  # set by the workspace fixture: one store for the module's workspace
PROGRESS = re.compile(r"━")  # the bars' track (the goal, export and verify texts draw no line of their own)
pytestmark = pytest.mark.slow


def quaere(*args: str, cwd: Path, terminal: bool) -> subprocess.CompletedProcess:
    """``quaere ARGS`` in ``cwd``, with this module's own store (beside the workspace, see ``workspace``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TTY_COMPATIBLE", "FORCE_COLOR", "COLUMNS")}
    env["QUAERE_STORE_DIR"] = str(STORE)
    if terminal:
        env.update(TTY_COMPATIBLE="1", TTY_INTERACTIVE="1", COLUMNS="80", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "quaere", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, check=False)


def screen(done: subprocess.CompletedProcess) -> list[str]:
    """The lines a terminal would show (escape sequences and carriage returns of redraws removed), the
    test's long temporary folder written as a user's short one: a path is as wide as it is anywhere."""
    text = ANSI.sub("\n", done.stdout + done.stderr).replace(str(STORE.parent), "~/work")
    return text.splitlines()


def too_wide(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in screen(done) if cell_len(line) > 80]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    global STORE
    root = tmp_path_factory.mktemp("terminal")
    STORE = root / "store"
    task = root / "reachable"
    shutil.copytree(QUICK_TASK, task, ignore=shutil.ignore_patterns("__pycache__"))
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("ratio = 2.0", "ratio = 0.01"))
    assert quaere("init", "ws", "--task", str(task), cwd=root, terminal=False).returncode == 0
    return root / "ws"


def test_long_work_shows_progress_on_a_terminal_and_nothing_through_a_pipe(workspace: Path) -> None:
    assert quaere("eval", cwd=workspace, terminal=False).returncode == 0
    confirmed = quaere("goal", "--confirm", cwd=workspace, terminal=True)
    assert confirmed.returncode == 0 and "goal: MET" in confirmed.stdout, confirmed.stdout + confirmed.stderr
    assert PROGRESS.search(confirmed.stdout) and "timing" in confirmed.stdout  # the confirming evaluation's bars
    again = quaere("goal", "--confirm", cwd=workspace, terminal=False)
    assert again.stdout.startswith("goal: MET") and not PROGRESS.search(again.stdout + again.stderr)
    bundle = workspace.parent / "bundle"
    exported = quaere("export", str(bundle), cwd=workspace, terminal=True)
    assert exported.returncode == 0 and PROGRESS.search(exported.stdout) and "export" in exported.stdout
    verified = quaere("verify", str(bundle), cwd=workspace, terminal=True)
    assert verified.returncode == 0 and PROGRESS.search(verified.stdout) and "correctness" in verified.stdout
    piped = quaere("verify", str(bundle), cwd=workspace, terminal=False)
    assert piped.returncode == 0 and not PROGRESS.search(piped.stdout + piped.stderr)
    assert piped.stdout.splitlines()[0] == "manifest: every file matches its sha256"
    plain = quaere("export", str(workspace.parent / "bundle2"), cwd=workspace, terminal=False)
    assert plain.stdout.startswith("wrote ") and not PROGRESS.search(plain.stdout)
    for done in (confirmed, exported, verified):
        assert not too_wide(done), too_wide(done)


COMMANDS = [
    ("--help",), ("eval", "--help"), ("run", "--help"), ("bank", "stats"), ("bank", "list"),
    ("bank", "show", "bench.same-buffers"), ("ask",), ("goal",), ("report",), ("eval",),
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_every_command_fits_80_columns(workspace: Path, args: tuple[str, ...]) -> None:
    done = quaere(*args, cwd=workspace, terminal=True)
    assert done.returncode in (0, 1), done.stderr
    assert not too_wide(done), "\n".join(too_wide(done))


def test_a_long_failure_wraps_on_a_terminal_and_stays_one_line_through_a_pipe(workspace: Path) -> None:
    source = workspace / "renamed.cpp"
    source.write_text('extern "C" int softmax_rowz(const float*, float*, int, int) { return 0; }\n')
    on_terminal = quaere("eval", str(source), cwd=workspace, terminal=True)
    assert not too_wide(on_terminal), too_wide(on_terminal)
    piped = quaere("eval", str(source), cwd=workspace, terminal=False)
    (line,) = [line for line in piped.stdout.splitlines() if "undefined symbol" in line]
    assert line.startswith("correctness: crashed on all") and line.endswith("undefined symbol: softmax_rows")
