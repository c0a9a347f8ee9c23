"""Build the default models from their packaged weights, once per machine: what the first search, index or test
would otherwise build on the spot (about a minute of one core on a fresh machine; a second or two once built).

``python -m scripts.build_models`` loads the models a default :class:`toolrag.settings.Settings` names, which
builds what is missing in the data folder (``toolrag.encode.built_folder``). ``bash scripts/test.sh`` runs it in
the background while lint and the type check run, so the tests that need the models find them ready; a process
that needs one meanwhile waits for this build (the folder's lock) instead of building it beside it. Exits 1 with
the reason when a model cannot be built (the tests then say the same).
"""

from __future__ import annotations

import sys
import time

from toolrag.config import data_dir  # first: telemetry off and the Hub offline before any model library loads
from toolrag.encode.models import load_models
from toolrag.errors import ToolragError
from toolrag.settings import Settings


def main() -> int:
    started = time.perf_counter()
    try:
        models = load_models(Settings())
    except ToolragError as exc:
        print(f"scripts.build_models: {exc}", file=sys.stderr)
        return 1
    absent = f" (not loaded: {', '.join(sorted(models.unavailable))})" if models.unavailable else ""
    print(f"scripts.build_models: models ready in {data_dir() / 'models'} after {time.perf_counter() - started:.1f} s"
          f"{absent}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
