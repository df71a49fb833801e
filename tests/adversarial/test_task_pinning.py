"""Attack: swap the task for an easier one, by editing workspace.toml to point at an agent-made copy with a
0.01x target, by a folder named like the shipped task that shadows it, or by editing the task itself.

Defence: the task is pinned by content hash in the store's registration at `quaere init`, the evaluator
runs the store's own copy, a bare name means the shipped task only, and every disagreement is refused
with the file that disagrees.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from quaere.store import StoreError
from quaere.task.loader import SHIPPED_TASKS_DIR


def easy_copy(folder):
    shutil.copytree(SHIPPED_TASKS_DIR / "cpu_softmax", folder, ignore=shutil.ignore_patterns("__pycache__"))
    lower_target(folder / "task.toml")
    return folder


def lower_target(toml):
    """The goal's ratio set to 0.01 (asserted: an edit that changed nothing would prove nothing)."""
    text, count = re.subn(r"ratio = [0-9.]+", "ratio = 0.01", toml.read_text())
    assert count == 1
    toml.write_text(text)


def test_workspace_toml_pointing_at_an_agent_made_task_is_refused_by_name(bench):
    easy = easy_copy(bench.ws.root / "easy_task")
    config = bench.ws.config
    config.write_text(config.read_text().replace('task = "cpu_softmax"', f'task = "{easy}"'))
    for done in (bench.quaere("eval", "--no-benchmark"), bench.quaere("goal")):
        assert done.returncode == 2 and str(config) in done.stderr and "field 'task'" in done.stderr, done.stderr
    answer = json.loads(bench.stop().stdout)
    assert answer["decision"] == "block" and "workspace.toml: field 'task'" in answer["reason"]
    assert bench.store.read(bench.ws.id).entries == ()  # nothing was evaluated against the easy task


def test_a_folder_shadowing_the_shipped_task_is_refused_by_name(bench):
    shadow = easy_copy(bench.ws.root / "cpu_softmax")
    done = bench.quaere("eval", "--no-benchmark")
    assert done.returncode == 2 and f"{shadow}: this folder shadows the shipped task" in done.stderr
    answer = json.loads(bench.stop().stdout)
    assert answer["decision"] == "block" and "shadows the shipped task" in answer["reason"]
    assert bench.quaere("eval", "--task", "cpu_softmax", "--no-benchmark", cwd=bench.ws.root.parent).returncode == 0


def test_an_edited_copy_of_the_pinned_task_in_the_store_is_refused_by_name(bench):
    toml = bench.store.task_copy(bench.ws.id) / "task.toml"
    lower_target(toml)
    done = bench.quaere("goal")
    assert done.returncode == 2 and f"{toml}: the store's copy of task 'cpu_softmax' was changed" in done.stderr


def test_a_task_folder_changed_after_it_was_pinned_is_refused_by_name(tmp_path, store, build_cache):
    from quaere.store.pinning import init_workspace

    from .conftest import Bench

    mine = easy_copy(tmp_path / "mytask")
    workspace, _ = init_workspace(store, tmp_path / "ws2", "./mytask", False, tmp_path)
    bench = Bench(workspace, store, build_cache)
    (mine / "task.py").write_text((mine / "task.py").read_text() + "\n# loosened later\n")
    done = bench.quaere("eval", "--no-benchmark")
    assert done.returncode == 2 and f"{mine / 'task.py'}: task 'cpu_softmax' changed since it was pinned" in done.stderr


def test_a_workspace_made_before_the_store_is_registered_as_it_is(tmp_path, store):
    from quaere.store.pinning import init_workspace
    from quaere.task.loader import load_task
    from quaere.workspace import create_workspace

    old = create_workspace(tmp_path / "old", "cpu_softmax", load_task("cpu_softmax").initial_kernel)
    old.candidate.write_text("// the agent's work so far\n")
    workspace, registration = init_workspace(store, tmp_path / "old", "cpu_softmax", False, tmp_path)
    assert registration.task.name == "cpu_softmax" and workspace.candidate.read_text() == "// the agent's work so far\n"
    with pytest.raises(StoreError, match="a workspace already exists here"):
        init_workspace(store, tmp_path / "old", "cpu_softmax", False, tmp_path)
