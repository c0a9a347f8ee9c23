"""Entry point of the toolrag playground (``python app.py``; also the Hugging Face Spaces ``app_file``).

Environment (every variable, its default and meaning: :data:`toolrag.env_vars.ENV_VARS`, rendered in
docs/configuration.md): ``TOOLRAG_CATALOG`` (the catalog, default ``sample_tools`` next to this file),
``TOOLRAG_DATA_DIR`` (on a Space point it at a mounted storage bucket to keep the index across restarts),
``TOOLRAG_CHROMA_URL`` and ``TOOLRAG_INDEX`` (a published index: without ``TOOLRAG_CATALOG`` no catalog file is
needed and the app is read-only; docs/deploy.md), ``TOOLRAG_LOG_LEVEL``, ``GRADIO_SERVER_NAME`` /
``GRADIO_SERVER_PORT`` (where to listen) and who may edit: ``TOOLRAG_EDITING``, ``TOOLRAG_AUTH``,
``TOOLRAG_EDITORS``. Local (127.0.0.1) editing is on; a shared deployment (a Space, another bind address, a share
link) is read-only unless editing is turned on with credentials (see :class:`toolrag.ui.backend.Access`).
``/healthz``, ``/readyz`` and ``/metrics`` answer beside the page.

The page answers at once; the models load and the catalog is indexed in a background thread while the page
shows the progress.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from toolrag.config import configure_environment, env, index_name
from toolrag.env_vars import CATALOG_ENV, LOG_LEVEL_ENV

configure_environment()  # telemetry off (and HF_HUB_OFFLINE=1 offline) before gradio is imported

from toolrag.errors import ToolragError  # noqa: E402
from toolrag.index.client import chroma_url  # noqa: E402
from toolrag.observe import tracing  # noqa: E402
from toolrag.ui import Backend  # noqa: E402  (no gradio: toolrag.ui.app imports it once the settings are read)
from toolrag.ui.backend import Access  # noqa: E402

HERE = Path(__file__).resolve().parent


def build() -> tuple[Backend, object]:
    """The backend (building in the background) and its Blocks app, from the environment."""
    index = index_name()  # a published index (TOOLRAG_INDEX): served without catalog files unless one is named
    given = env(CATALOG_ENV)
    catalog = Path(given) if given else (None if index else HERE / "sample_tools")
    # data_dir None: the retriever and the app's caches use toolrag.config.data_dir() ($TOOLRAG_DATA_DIR)
    backend = Backend(catalog, data_dir=None, chroma_url=chroma_url(), access=Access.from_env(), index=index)
    from toolrag.ui.app import create_app  # gradio (5 s) only once every setting was accepted

    backend.start()
    return backend, create_app(backend)


def main() -> None:
    logging.basicConfig(level=env(LOG_LEVEL_ENV) or "INFO",
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        tracing.configure()  # OpenTelemetry traces when the OTEL_* variables name an exporter
        _, demo = build()
        from toolrag.ui.app import launch

        launch(demo)  # type: ignore[arg-type]
    except ToolragError as exc:  # a bad catalog or setting: one line, as the CLI says it, never a traceback
        print(f"toolrag: {str(exc).splitlines()[0]}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
