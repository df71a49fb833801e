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
