"""The README's set-up and test commands on a fresh copy of the repository, with an externally managed
(PEP 668) system Python, as a newcomer runs them; and a failing step stops the script with one line.

The "system Python" is made from the running interpreter: its own binary and a standard library of
links, marked ``EXTERNALLY-MANAGED`` like Debian's, with pip but no packages; its ``pip install`` is
refused, so the set-up can only work through a virtual environment. The agents' tools are left out
(``QUAERE_SETUP_AGENTS=0``): they take minutes to download and have tests of their own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def readme_commands() -> list[str]:
    """The commands of the README's first code block, without their comments."""
    block = re.search(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert block, "the README has no bash block"
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def ci_commands() -> list[str]:
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    return [line for line in lines if line and not line.startswith(("#", "set ", "cd "))]


def test_ci_runs_exactly_the_readmes_set_up_and_test_commands() -> None:
    setup, tests = readme_commands()[:2]
    assert setup == "bash scripts/setup.sh" and "pytest" in tests
    assert ci_commands() == [setup, tests]


def pep668_python(root: Path) -> Path:
    """An interpreter at ``root/bin/python3`` whose stdlib is marked externally managed (see module doc)."""
    base = Path(sys.base_prefix)
    binary = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    stdlib = Path(sysconfig.get_paths(vars={"installed_base": str(base), "base": str(base)})["stdlib"])
    if not (stdlib / "os.py").exists() or not binary.exists():
        pytest.skip(f"no CPython layout to copy at {base}")
    bindir, lib = root / "bin", root / "lib" / stdlib.name
    bindir.mkdir(parents=True)
    (lib / "site-packages").mkdir(parents=True)
    shutil.copy2(binary, bindir / binary.name)
    (bindir / "python3").symlink_to(binary.name)
    for item in stdlib.iterdir():
        if item.name != "site-packages":
            (lib / item.name).symlink_to(item)
    pip = stdlib / "site-packages" / "pip"
    if pip.exists():
        (lib / "site-packages" / "pip").symlink_to(pip)
    (lib / "EXTERNALLY-MANAGED").write_text("[externally-managed]\nError=this Python is managed by the system\n")
    python = bindir / "python3"
    assert subprocess.run([python, "-c", f"import sys; assert sys.prefix == sys.base_prefix == {str(root)!r}"],
                          check=False).returncode == 0
    return python


def fresh_copy(target: Path) -> Path:
    """The repository's tracked files, as a clone would have them."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    for name in listed.stdout.decode().split("\0"):
        if name and (REPO / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)
    return target


def index_reachable(python: Path, scratch: Path) -> bool:
    probe = subprocess.run([python, "-m", "venv", scratch / "probe"], capture_output=True, check=False)
    if probe.returncode != 0:
        return False
    fetched = subprocess.run([scratch / "probe" / "bin" / "python", "-m", "pip", "download", "--no-deps", "-q",
                              "-d", scratch / "wheels", "hatchling"], capture_output=True, timeout=120, check=False)
    return fetched.returncode == 0


def setup_env(python: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    return {**env, "PATH": f"{python.parent}{os.pathsep}{env['PATH']}", "QUAERE_SETUP_AGENTS": "0", **extra}


@pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler: the set-up would install it with apt")
@pytest.mark.skipif(shutil.which("chromium") is None and shutil.which("chromium-browser") is None,
                    reason="no Chromium: the set-up would install it with apt")
def test_the_readme_set_up_and_tests_work_with_an_externally_managed_python(tmp_path: Path) -> None:
    python = pep668_python(tmp_path / "system-python")
    refused = subprocess.run([python, "-m", "pip", "install", "--dry-run", "hatchling"], capture_output=True,
                             text=True, check=False)
    assert refused.returncode != 0  # PEP 668 refusal, or no pip at all: either way not through this Python
    if not index_reachable(python, tmp_path):
        pytest.skip("the package index cannot be reached from here: the set-up cannot install quaere's packages")
    clone = fresh_copy(tmp_path / "clone")
    setup, tests = readme_commands()[:2]
    done = subprocess.run(setup, shell=True, cwd=clone, env=setup_env(python), capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "virtual environment" in done.stdout and "PEP 668" in done.stdout
    venv_python = clone / ".venv" / "bin" / "python"
    base = subprocess.run([venv_python, "-c", "import sys; print(sys.base_prefix)"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert Path(base) == tmp_path / "system-python"  # the venv is made from the system Python on PATH
    assert sorted(p.name for p in (tmp_path / "system-python" / "lib").glob("*/site-packages/*")) in ([], ["pip"])
    one_file = tests.replace("-q", "-q -p no:cacheprovider tests/evaluate/test_stats.py")
    ran = subprocess.run(one_file, shell=True, cwd=clone, env=setup_env(python), capture_output=True, text=True,
                         timeout=300, check=False)
    assert ran.returncode == 0 and " passed" in ran.stdout, ran.stdout[-2000:] + ran.stderr[-2000:]


def tools_dir(target: Path, python: Path) -> Path:
    """A PATH folder with the script's plain tools, a failing ``apt-get`` and no compiler or Chromium."""
    target.mkdir()
    for tool in ("bash", "env", "tail", "sed", "mktemp", "rm", "id", "dirname", "cat", "mkdir", "tr"):
        found = shutil.which(tool)
        if found:
            (target / tool).symlink_to(found)
    (target / "python3").symlink_to(python)
    (target / "apt-get").write_text("#!/bin/sh\necho 'E: Failed to fetch http://deb.example/dists/InRelease'\n"
                                    "exit 100\n")
    (target / "apt-get").chmod(0o755)
    return target


def test_a_failed_apt_get_update_stops_the_script_with_one_line(tmp_path: Path) -> None:
    python = pep668_python(tmp_path / "system-python")
    tools = tools_dir(tmp_path / "tools", python)
    done = subprocess.run(["bash", str(REPO / "scripts" / "setup.sh")], cwd=tmp_path,
                          env={"PATH": str(tools), "HOME": str(tmp_path), "QUAERE_VENV": str(tmp_path / "venv")},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("setup: FAILED: apt-get update (exit status 100); run: "), done.stderr
    assert "Failed to fetch" in done.stderr  # the failing step's own words, above the line
    assert "set up" not in done.stdout and not (tmp_path / "venv").exists()


def test_a_failing_install_stops_the_script_with_one_line(tmp_path: Path) -> None:
    """Where the virtual environment cannot be made, nothing after it runs."""
    python = pep668_python(tmp_path / "system-python")
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the venv's folder would go")
    done = subprocess.run(["bash", "scripts/setup.sh"], cwd=REPO, env=setup_env(python, QUAERE_VENV=str(blocked / "v")),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"setup: FAILED: a virtual environment at {blocked / 'v'}") and "; run: " in last
    assert "pip install" not in done.stdout
