#!/usr/bin/env bash
# The README's test command: installs the test tools (and Debian's Chromium and a CJK font when missing),
# then runs lint, type checks and the full test suite: real models, a real Chroma server, a real browser.
# `bash scripts/test.sh quick` is the quick tier: lint, the type check and the pure-logic tests only (pytest
# --quick: no model load, no server, no browser, no child process; tests/quick_tier.py guards it). mypy keeps its
# cache in .mypy_cache, so after the first run it checks only what changed. CI runs the full suite, in one
# pytest-xdist worker per core (at most 4; `--dist loadfile`: a file's tests share one worker and its module
# fixtures; the longest files go first, tests/conftest.py LONGEST_FIRST). Other arguments go to pytest (`-n 0`:
# one process). The suite sets its own environment (offline, telemetry off: tests/conftest.py,
# through toolrag.config).
set -euo pipefail
cd "$(dirname "$0")/.."
tier=full
if [ "${1:-}" = quick ]; then
  tier=quick
  shift
fi
python -m pip install -q -r requirements-dev.txt
# the fonts the rendered sample documents use (tests/test_render_assets.py); Chromium for the browser tests
packages="fonts-wqy-zenhei fonts-dejavu-core"
if [ "$tier" = full ]; then
  packages="chromium $packages"
fi
if { [ "$tier" = full ] && ! command -v chromium >/dev/null 2>&1; } || [ ! -f /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc ] \
    || [ ! -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    sudo=sudo
  fi
  # shellcheck disable=SC2086
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages >/dev/null
fi
python -m ruff check .
set +e
if [ "$tier" = quick ]; then
  python -m mypy && python -m pytest --quick -q "$@"
else
  workers=$(python -c 'import os; print(max(1, min(4, len(os.sched_getaffinity(0)))))')
  python -m mypy && python -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
fi
rc=$?
set -e
if [ "$rc" = 5 ]; then
  echo "pytest collected no tests: failing on purpose" >&2
  exit 1
fi
exit "$rc"
