"""The Gradio playground of toolrag.

:class:`Backend` (``toolrag.ui.backend``) is the process-wide state every browser session shares and imports
no gradio; :func:`toolrag.ui.app.create_app` builds the Blocks app around it::

    from toolrag.ui import Backend
    from toolrag.ui.app import create_app, launch
    backend = Backend("sample_tools"); backend.start()
    launch(create_app(backend))

Importing this package configures the environment for gradio (telemetry off, the Hub offline unless toolrag
is online), as gradio must be imported after that.
"""

from toolrag.config import configure_environment

configure_environment()

from toolrag.ui.backend import Access, Backend  # noqa: E402

__all__ = ["Access", "Backend"]
