#!/usr/bin/env bash
# The README's test command: installs the test tools (and Debian's Chromium and a CJK font when missing),
# then runs lint, type checks and the full test suite: real models, a real Chroma server, a real browser.
# The suite sets its own environment (offline, telemetry off: tests/conftest.py, through toolrag.config).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -r requirements-dev.txt
if ! command -v chromium >/dev/null 2>&1 || [ ! -f /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null
  fi
fi
python -m ruff check .
python -m mypy
set +e
python -m pytest "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then
  echo "pytest collected no tests: failing on purpose" >&2
  exit 1
fi
exit "$rc"
