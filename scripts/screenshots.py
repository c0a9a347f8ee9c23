"""Refresh the playground's screenshots (docs/screenshots/*.png) by running the browser tests that take them.

``python -m scripts.screenshots`` runs the browser tests that take them (:data:`TESTS`) with
``--update-screenshots``; any other run of the suite writes the same pictures under the ignored
``tests/_artifacts/screenshots/``, so ``bash scripts/test.sh`` leaves a clone unchanged. Extra arguments go to
pytest. Exit status: pytest's, with "no test ran" (5) as a failure.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ("tests/test_ui_browser.py", "tests/test_ui_studio_browser.py", "tests/test_label_free_ui.py")


def command(extra: Sequence[str] = ()) -> list[str]:
    """The pytest command line that rewrites docs/screenshots/."""
    return [sys.executable, "-m", "pytest", *TESTS, "--update-screenshots", "-q", *extra]


def main(argv: Sequence[str] | None = None) -> int:
    status = subprocess.call(command(sys.argv[1:] if argv is None else argv), cwd=ROOT)
    if status == 5:
        print("no browser test ran: docs/screenshots/ unchanged", file=sys.stderr)
        return 1
    if status == 0:
        print("docs/screenshots/ refreshed; review with git diff --stat docs/screenshots", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
