"""Entry point of the toolrag playground (``python app.py``; also the Hugging Face Spaces ``app_file``).

Environment:
- ``TOOLRAG_CATALOG``: the catalog folder or file (default: ``sample_tools`` next to this file);
- ``TOOLRAG_DATA_DIR``: where models, the Chroma index and caches live (default ``~/.cache/toolrag``; on a
  Space point it at a mounted storage bucket to keep the index across restarts);
- ``TOOLRAG_CHROMA_URL``: a Chroma server instead of the embedded store;
- ``GRADIO_SERVER_NAME`` / ``GRADIO_SERVER_PORT``: where to listen (Gradio reads them);
- ``TOOLRAG_EDITING`` (``on``/``off``), ``TOOLRAG_AUTH`` (``user:password,...``), ``TOOLRAG_EDITORS`` (Hugging
  Face users, on a Space): who may edit the catalog. Local (127.0.0.1) editing is on; a shared deployment
  (a Space, another bind address, a share link) is read-only unless editing is turned on with credentials
  (see :class:`toolrag.ui.backend.Access`).

The page answers at once; the models load and the catalog is indexed in a background thread while the page
shows the progress.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from toolrag.config import configure_environment

configure_environment()  # telemetry off (and HF_HUB_OFFLINE=1 offline) before gradio is imported

from toolrag.errors import ToolragError  # noqa: E402
from toolrag.ui import Backend  # noqa: E402
from toolrag.ui.app import create_app, launch  # noqa: E402
from toolrag.ui.backend import Access  # noqa: E402

HERE = Path(__file__).resolve().parent


def build() -> tuple[Backend, object]:
    """The backend (building in the background) and its Blocks app, from the environment."""
    catalog = Path(os.environ.get("TOOLRAG_CATALOG") or HERE / "sample_tools")
    backend = Backend(catalog, data_dir=os.environ.get("TOOLRAG_DATA_DIR") or None,
                      chroma_url=os.environ.get("TOOLRAG_CHROMA_URL") or None, access=Access.from_env())
    backend.start()
    return backend, create_app(backend)


def main() -> None:
    logging.basicConfig(level=os.environ.get("TOOLRAG_LOG_LEVEL", "INFO"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        _, demo = build()
        launch(demo)  # type: ignore[arg-type]
    except ToolragError as exc:  # a bad catalog or setting: one line, as the CLI says it, never a traceback
        print(f"toolrag: {str(exc).splitlines()[0]}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
