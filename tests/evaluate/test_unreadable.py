"""A folder named unreadable is cut out of the runner's read roots (``isolation.carve``), and the store's keys are
always named: the evaluator service's store lies under ``/var/lib``, one of those roots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from quaere.evaluate import EvalOptions
from quaere.evaluate.isolation import carve, read_roots
from quaere.recording import record_evaluation
from quaere.records import Evaluation
from quaere.store.pinning import init_workspace
from quaere.store.records import Starter
from quaere.store.store import Store
from quaere.task.loader import load_task


def tree(root: Path) -> Path:
    for folder in ("etc", "lib/apt", "lib/quaere/keys", "lib/quaere/cache/abc", "lib/quaere/workspaces"):
        (root / folder).mkdir(parents=True)
    (root / "lib" / "quaere" / "keys" / "private").write_text("secret")
    (root / "lib" / "loose-file").write_text("x")
    return root


def test_the_secret_goes_and_everything_beside_it_stays(tmp_path: Path) -> None:
    root = tree(tmp_path)
    kept = carve(root / "lib", root / "lib" / "quaere" / "keys")
    assert kept == [str(root / "lib" / "apt"), str(root / "lib" / "quaere" / "cache"),
                    str(root / "lib" / "quaere" / "workspaces")]
    assert carve(root / "etc", root / "lib" / "quaere" / "keys") == [str(root / "etc")]  # not above the secret
    assert carve(root / "lib" / "quaere" / "keys", root / "lib" / "quaere" / "keys") == []
    assert carve(root / "lib" / "quaere" / "keys", root / "lib" / "quaere") == []  # beneath the secret


def test_a_link_into_the_secret_or_above_it_is_left_out(tmp_path: Path) -> None:
    root = tree(tmp_path)
    (root / "lib" / "shortcut").symlink_to(root / "lib" / "quaere" / "keys")
    (root / "lib" / "loop").symlink_to(root / "lib")
    (root / "lib" / "elsewhere").symlink_to(root / "etc")
    kept = carve(root / "lib", root / "lib" / "quaere" / "keys")
    assert str(root / "lib" / "elsewhere") in kept
    assert not {str(root / "lib" / "shortcut"), str(root / "lib" / "loop")} & set(kept)


def test_read_roots_cut_the_secret_out_of_whichever_root_holds_it(tmp_path: Path) -> None:
    root = tree(tmp_path)
    env = {"LD_LIBRARY_PATH": str(root / "lib")}
    plain = read_roots([], env, "/nonexistent")
    assert str(root / "lib") in plain
    guarded = read_roots([], env, "/nonexistent", [str(root / "lib" / "quaere" / "keys")])
    assert str(root / "lib") not in guarded and str(root / "lib" / "quaere" / "cache") in guarded
    secret = os.path.realpath(root / "lib" / "quaere" / "keys" / "private")
    assert not any(Path(secret).is_relative_to(folder) for folder in guarded)


def test_recording_an_evaluation_names_the_stores_keys_unreadable(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    _, registration = init_workspace(store, tmp_path / "ws", "cpu_softmax", False, tmp_path)
    task = load_task("cpu_softmax")
    seen: list[EvalOptions] = []

    def evaluate(task, candidate, options, progress) -> Evaluation:
        seen.append(options)
        raise RuntimeError("stop here: only the options are looked at")

    with pytest.raises(RuntimeError, match="stop here"):
        record_evaluation(store, registration, task, task.initial_kernel, EvalOptions(), Starter.CALLER, evaluate)
    assert [options.unreadable for options in seen] == [(store.keys_dir,)]
