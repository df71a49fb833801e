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


def _python_tree(root: Path) -> tuple[Path, Path]:
    """A standard library folder holding its site-packages, as pyenv and conda lay them out: torch (a folder of
    libraries), a comparison's extension module (an ELF file), a plain module, a .pth and quaere's package."""
    stdlib = root / "lib" / "python3.x"
    site = stdlib / "site-packages"
    for folder in ("json", "site-packages/torch/lib", "site-packages/quaere"):
        (stdlib / folder).mkdir(parents=True)
    (stdlib / "os.py").write_text("# stdlib\n")
    (site / "torch" / "lib" / "libcudnn.so.9").write_bytes(b"\x7fELF cudnn")
    (site / "fa3_fwd.abi3.so").write_bytes(b"\x7fELF fa3")
    (site / "six.py").write_text("# plain\n")
    (site / "editable.pth").write_text("/somewhere\n")
    return stdlib, site


def test_a_runner_reads_no_package_on_the_import_path_but_quaere(tmp_path: Path) -> None:
    """The bytes of torch's cuDNN or a comparison's wheel could be read and loaded by hand, unseen by the maps diff
    (docs/security.md); a runner imports the standard library and quaere only."""
    from quaere.evaluate.foreign_files import foreign_packages

    stdlib, site = _python_tree(tmp_path)
    quaere_package = site / "quaere"
    assert foreign_packages([str(site)], [quaere_package]) == [str(site / "fa3_fwd.abi3.so"), str(site / "torch")]
    roots = read_roots([], {}, "/nonexistent", folders=[str(stdlib)], import_path=[str(site)], packages=False)
    granted = set(roots)
    assert {str(stdlib / "os.py"), str(stdlib / "json"), str(site / "six.py"), str(site / "editable.pth")} <= granted
    assert str(stdlib) not in granted and str(site) not in granted
    for denied in (site / "torch" / "lib" / "libcudnn.so.9", site / "fa3_fwd.abi3.so"):
        assert not any(_within(str(denied), root) for root in roots), denied
    # The build keeps its packages (a pip-installed nvcc lives there).
    assert str(stdlib) in read_roots([], {}, "/nonexistent", folders=[str(stdlib)], import_path=[str(site)])


@pytest.mark.skipif(not __import__("quaere.runner.landlock", fromlist=["x"]).landlock_abi(),
                    reason="Landlock unavailable on this kernel")
def test_under_landlock_the_library_cannot_be_opened_and_the_modules_on_the_way_can(tmp_path: Path) -> None:
    import subprocess

    from quaere.evaluate.isolation import confined_command

    stdlib, site = _python_tree(tmp_path / "py")
    roots = read_roots([], {}, "/nonexistent", folders=[str(stdlib)], import_path=[str(site)], packages=False)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    lines = [f"cat {path} > /dev/null 2>&1 && echo read {path.name} || echo denied {path.name}"
             for path in (stdlib / "os.py", site / "six.py", site / "torch" / "lib" / "libcudnn.so.9",
                          site / "fa3_fwd.abi3.so")]
    done = subprocess.run(confined_command("; ".join(lines), roots, [str(scratch)]), capture_output=True, text=True,
                          timeout=60, cwd=scratch)
    assert done.stdout.split("\n")[:4] == ["read os.py", "read six.py", "denied libcudnn.so.9",
                                           "denied fa3_fwd.abi3.so"], done.stdout + done.stderr


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")
