"""The build reads only what a build needs: a candidate that ``#include``s another file makes the compiler quote it
in its error messages (below: the second line of a PEM key, named in an "undeclared" error), and the record carries
the build log's tail back to the agent. In separate-user mode the service builds as the user who owns the signing
key. The build therefore runs under Landlock (``build._confined``). Real compiles of the CPU task's command."""

from __future__ import annotations

from pathlib import Path

import pytest

from quaere.evaluate.build import build_source
from quaere.records import BuildStatus
from quaere.runner.landlock import landlock_abi
from quaere.task.loader import load_task

SECRET = "MC4CAQAwBQYDK2VwBCIEIKexampleSECRETmaterial"
# Empty macros turn the PEM's armour lines into operators, so the compiler goes on to line 2 and names it.
QUOTING = """#define BEGIN
#define END
#define PRIVATE
#define KEY
int sink;
void leak() {{ sink
#include "{path}"
 sink; }}
"""

pytestmark = pytest.mark.skipif(landlock_abi() == 0, reason="Landlock unavailable on this kernel")


def _key(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / "ed25519.pem"
    key.write_text(f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n-----END PRIVATE KEY-----\n")
    return key


def _build(tmp_path: Path, key: Path, unreadable: tuple[Path, ...] = ()):
    task = load_task("cpu_softmax")
    source = tmp_path / "workspace" / "candidate.cpp"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(QUOTING.format(path=key))
    return build_source(task.spec, source, tmp_path / "builds", task.folder, 120.0, unreadable)


def test_an_included_file_beside_the_source_is_quoted_in_the_log(tmp_path: Path) -> None:
    """The premise: the trick works on a file the build may read (the candidate's own folder)."""
    build = _build(tmp_path, _key(tmp_path / "workspace"))
    assert build.status is BuildStatus.BUILD_FAILED
    assert SECRET in build.log_tail


def test_a_file_outside_the_builds_read_roots_cannot_be_included(tmp_path: Path) -> None:
    build = _build(tmp_path, _key(tmp_path / "vault"))
    assert build.status is BuildStatus.BUILD_FAILED
    assert SECRET not in build.log_tail and "Permission denied" in build.log_tail, build.log_tail


def test_a_folder_named_unreadable_cannot_be_included_even_beside_the_source(tmp_path: Path) -> None:
    keys = tmp_path / "workspace" / "keys"
    build = _build(tmp_path, _key(keys), unreadable=(keys,))
    assert build.status is BuildStatus.BUILD_FAILED
    assert SECRET not in build.log_tail, build.log_tail


def test_the_toolchain_folders_never_grant_the_root_folder() -> None:
    """``/bin`` on PATH grants ``/bin``, not ``/`` (whose read rule would undo every other)."""
    from quaere.evaluate.build import _toolchain_folders

    assert _toolchain_folders("/bin:/usr/local/cuda/bin::/opt/tools") == [
        "/bin", "/usr/local/cuda/bin", "/usr/local/cuda", "/opt/tools"]
