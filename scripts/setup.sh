#!/usr/bin/env bash
# Sets quaere up on a fresh Debian/Ubuntu machine, as root or as a user with sudo, with the system Python
# (>= 3.11). The system Python is externally managed (PEP 668): pip never touches it. quaere and its test
# tools go into a virtual environment of their own, .venv (or $QUAERE_VENV), which sees the system's
# packages (a GPU machine's own PyTorch build) but installs nothing there.
#
# Steps: system packages (apt: a C++ compiler, python3-venv, Chromium), the virtual environment, quaere in
# it, then the agents' tools for their end-to-end tests (skip them with QUAERE_SETUP_AGENTS=0). Every step
# that fails stops the script with one line: what failed and what to run.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
VENV="${QUAERE_VENV:-$ROOT/.venv}"
AGENTS_CACHE="${HOME}/.cache/quaere"
STEP_LOG="$(mktemp)"
trap 'rm -f "$STEP_LOG"' EXIT

say() { echo "setup: $*"; }

# fail WHAT TO_RUN: the tail of the step's output, then one line, then stop.
fail() {
  if [ -s "$STEP_LOG" ]; then tail -n 15 "$STEP_LOG" | sed 's/^/  | /' >&2; fi
  echo "setup: FAILED: $1; run: $2" >&2
  exit 1
}

# step WHAT TO_RUN COMMAND...: run COMMAND with its output kept for fail(); stop when it fails.
step() {
  local what="$1" fix="$2"
  shift 2
  say "$what"
  "$@" >"$STEP_LOG" 2>&1 || fail "$what (exit status $?)" "$fix"
}

# -- the system Python and the right to install system packages ----------------------------------------
PYTHON="$(command -v python3 || true)"
[ -n "$PYTHON" ] || fail "no python3 on PATH" "sudo apt-get install -y python3 python3-venv"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || fail "$PYTHON is Python $("$PYTHON" -c 'import platform; print(platform.python_version())'), quaere needs >= 3.11" \
          "sudo apt-get install -y python3.11 python3.11-venv, then put python3.11 first on PATH as python3"
if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  SUDO=(none)
fi

# -- system packages (apt) -----------------------------------------------------------------------------
packages=()
command -v c++ >/dev/null 2>&1 || packages+=(g++)  # builds the CPU task's kernels
"$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1 || packages+=(python3-venv)
chromium_wanted=0  # renders the HTML report in its test
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || chromium_wanted=1
if [ ${#packages[@]} -gt 0 ] || [ "$chromium_wanted" -eq 1 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    [ ${#packages[@]} -eq 0 ] || fail "${packages[*]} missing and no apt-get here" "install ${packages[*]} with this system's package manager"
    say "Chromium is missing and there is no apt-get: the HTML report's rendering test will be skipped"
  else
    [ "${SUDO[*]}" != none ] || fail "installing ${packages[*]:-chromium} needs root, and sudo is not installed" \
                                     "su -c 'apt-get install -y ${packages[*]:-chromium}' (as root), then this script again"
    step "apt-get update" "sudo apt-get update, and fix the sources it names" \
      ${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update
    if [ "$chromium_wanted" -eq 1 ]; then
      if apt-cache show chromium >/dev/null 2>&1; then
        packages+=(chromium)
      else
        say "no 'chromium' package in apt's sources (Ubuntu ships it as a snap): the HTML report's rendering test will be skipped"
      fi
    fi
    if [ ${#packages[@]} -gt 0 ]; then
      step "apt-get install ${packages[*]}" "sudo apt-get install -y ${packages[*]}" \
        ${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}"
    fi
  fi
fi

# -- quaere in its own virtual environment (PEP 668) -----------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  step "a virtual environment at $VENV (PEP 668: the system Python is left as it is)" \
       "$PYTHON -m venv --system-site-packages $VENV (needs python3-venv: sudo apt-get install -y python3-venv)" \
       "$PYTHON" -m venv --system-site-packages "$VENV"
else
  say "using the virtual environment at $VENV"
fi
step "pip install -e '.[dev]' into $VENV" "$VENV/bin/python -m pip install -e '.[dev]'" \
  "$VENV/bin/python" -m pip install -e "$ROOT[dev]"
step "checking the installed command" "$VENV/bin/quaere version" "$VENV/bin/quaere" version
say "quaere $("$VENV/bin/quaere" version) is set up in $VENV"

# -- nvdisasm, for the kernel's SASS checks without a GPU (bench/kernel/sass_counts.py, tests/fa_task) ------
# Not every CUDA install has it; the one in this PyPI wheel reads nvcc 13.0's cubins. Only where nvcc is, and
# not fatal: without it those checks are skipped, saying why.
NVDISASM_WHEEL=nvidia-cuda-nvdisasm==13.2.86
if command -v nvcc >/dev/null 2>&1 && ! command -v nvdisasm >/dev/null 2>&1; then
  if [ -x "$VENV/bin/nvdisasm" ]; then
    say "nvdisasm: $VENV/bin/nvdisasm is there"
  else
    nvd_tmp=$(mktemp -d)
    if "$VENV/bin/python" -m pip download -q --no-deps -d "$nvd_tmp" "$NVDISASM_WHEEL" >"$nvd_tmp/log" 2>&1 &&
       "$VENV/bin/python" - "$nvd_tmp" "$VENV/bin/nvdisasm" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z, open(sys.argv[2], "wb") as out:
    out.write(z.read("nvidia/cu13/bin/nvdisasm"))
PY
    then
      chmod +x "$VENV/bin/nvdisasm"
      say "nvdisasm: unpacked from $NVDISASM_WHEEL into $VENV/bin"
    else
      rm -f "$VENV/bin/nvdisasm"
      say "nvdisasm: $NVDISASM_WHEEL could not be fetched ($(tail -1 "$nvd_tmp/log")): the SASS checks will be skipped"
    fi
    rm -rf "$nvd_tmp"
  fi
fi

# -- the agents' tools, for their end-to-end tests (tests/hooks/test_e2e_*.py, tests/campaign/...) --------
# Each test is skipped, saying why, where its agent is missing. Versions are those the tests were written
# against (docs/agents.md).
if [ "${QUAERE_SETUP_AGENTS:-1}" = "0" ]; then
  say "QUAERE_SETUP_AGENTS=0: the agents' tools are not installed (their tests will be skipped)"
else
  mkdir -p "$AGENTS_CACHE"
  if command -v codex >/dev/null 2>&1; then
    say "Codex: $(command -v codex) is there"
  elif command -v npm >/dev/null 2>&1; then
    npm_sudo=()
    [ -w "$(npm prefix -g 2>/dev/null || echo /usr/local)" ] || npm_sudo=(${SUDO[@]+"${SUDO[@]}"})
    [ "${npm_sudo[*]}" != none ] || fail "npm's global folder is not writable and sudo is not installed" \
                                         "npm install -g @openai/codex@0.171.0 as root"
    step "npm install -g @openai/codex@0.171.0" "sudo npm install -g @openai/codex@0.171.0" \
      ${npm_sudo[@]+"${npm_sudo[@]}"} npm install -g @openai/codex@0.171.0
  else
    say "no npm (Node.js >= 20): Codex is not installed, its test will be skipped"
  fi
  # OpenHands' SDK needs Python >= 3.12: the first one found gets a venv of its own.
  OPENHANDS="$AGENTS_CACHE/openhands-venv"
  if [ -x "$OPENHANDS/bin/python" ]; then
    say "OpenHands: $OPENHANDS is there"
  else
    found=""
    pyenv_root="$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"
    for py in python3.12 python3.13 python3.14 "$pyenv_root"/versions/3.1[2-9]*/bin/python; do
      # A pyenv shim exists for versions it will not run: ask the interpreter itself.
      if "$py" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
        found="$py"
        break
      fi
    done
    if [ -z "$found" ]; then
      say "no Python >= 3.12 found: OpenHands is not installed, its test will be skipped"
    else
      step "a venv for OpenHands at $OPENHANDS ($found)" "rm -rf $OPENHANDS; $found -m venv $OPENHANDS" \
        "$found" -m venv "$OPENHANDS"
      step "pip install openhands-sdk==1.58.2 openhands-tools==1.58.2" \
        "$OPENHANDS/bin/pip install openhands-sdk==1.58.2 openhands-tools==1.58.2 (or rm -rf $OPENHANDS)" \
        "$OPENHANDS/bin/pip" install openhands-sdk==1.58.2 openhands-tools==1.58.2
    fi
  fi
  # mini-swe-agent in a venv of its own that also sees quaere's packages (it would upgrade some in place).
  MINI="$AGENTS_CACHE/mini-venv"
  if [ -x "$MINI/bin/python" ]; then
    say "mini-swe-agent: $MINI is there"
  else
    step "a venv for mini-swe-agent at $MINI" "rm -rf $MINI; $VENV/bin/python -m venv --system-site-packages $MINI" \
      "$VENV/bin/python" -m venv --system-site-packages "$MINI"
    "$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' \
      >"$("$MINI/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/quaere-venv.pth" \
      || fail "linking $MINI to quaere's packages" "rm -rf $MINI, then this script again"
    step "pip install mini-swe-agent==2.4.6" "$MINI/bin/pip install mini-swe-agent==2.4.6 (or rm -rf $MINI)" \
      "$MINI/bin/pip" install mini-swe-agent==2.4.6
  fi
fi

say "done. Activate the environment with: . $VENV/bin/activate   (then quaere and python3 are its own)"
say "the tests: $VENV/bin/python -m pytest -m \"not gpu\" -q"
