#!/usr/bin/env bash
# One command that sets up quaere and its test tools on a fresh machine (Debian/Ubuntu, Python >= 3.11).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e '.[dev]'
# Headless Chromium renders the HTML report in its test; a C++ compiler builds the CPU task.
if ! command -v chromium >/dev/null 2>&1 || ! command -v c++ >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq chromium g++ >/dev/null
  fi
fi
echo "quaere is set up: $(quaere version)"

# The agents users already run, for their end-to-end tests (tests/hooks/test_e2e_*.py,
# tests/campaign/test_mini_campaign.py); each test is skipped, saying why, where its agent is missing.
# Versions are pinned to those the tests were written against (docs/agents.md).
AGENTS_CACHE="${HOME}/.cache/quaere"
mkdir -p "$AGENTS_CACHE"
if command -v npm >/dev/null 2>&1 && ! command -v codex >/dev/null 2>&1; then
  npm install -g --silent @openai/codex@0.171.0 >/dev/null || echo "setup: @openai/codex not installed" >&2
fi
# OpenHands' SDK needs Python >= 3.12: the first one found gets a venv of its own.
if [ ! -x "$AGENTS_CACHE/openhands-venv/bin/python" ]; then
  found=""
  pyenv_root="$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"
  for py in python3.12 python3.13 "$pyenv_root"/versions/3.1[2-9]*/bin/python; do
    # A pyenv shim exists for versions it will not run: ask the interpreter itself.
    if "$py" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
      found="$py"
      break
    fi
  done
  if [ -n "$found" ]; then
    { "$found" -m venv "$AGENTS_CACHE/openhands-venv" \
      && "$AGENTS_CACHE/openhands-venv/bin/pip" install -q openhands-sdk==1.58.2 openhands-tools==1.58.2; } \
      || { echo "setup: OpenHands SDK not installed" >&2; rm -rf "$AGENTS_CACHE/openhands-venv"; }
  else
    echo "setup: no Python >= 3.12 found; the OpenHands test will be skipped" >&2
  fi
fi
# mini-swe-agent in a venv that sees quaere's own packages (it would upgrade some of them in place).
if [ ! -x "$AGENTS_CACHE/mini-venv/bin/python" ]; then
  { python3 -m venv --system-site-packages "$AGENTS_CACHE/mini-venv" \
    && "$AGENTS_CACHE/mini-venv/bin/pip" install -q mini-swe-agent==2.4.6; } \
    || { echo "setup: mini-swe-agent not installed" >&2; rm -rf "$AGENTS_CACHE/mini-venv"; }
fi
