"""The Gradio playground: the tabs of :mod:`toolrag.ui.tabs` around one process-wide :class:`Backend`.

Per-session values (history, last request) are small ``gr.State`` dicts; sliders re-rank on ``.release``
(the retriever caches query vectors, so nothing is re-encoded).
"""

from __future__ import annotations

from typing import Any

from toolrag.config import configure_environment

configure_environment()  # telemetry off (and HF_HUB_OFFLINE=1 offline) before gradio is imported

import gradio as gr  # noqa: E402

from toolrag.ui.backend import Backend  # noqa: E402
from toolrag.ui.evaluate_handlers import StudioHandlers  # noqa: E402
from toolrag.ui.evaluate_tab import evaluate_tab, wire_links  # noqa: E402
from toolrag.ui.handlers import MAX_IMAGE_MB, Handlers  # noqa: E402
from toolrag.ui.studio import Studio  # noqa: E402
from toolrag.ui.tabs import PRIVATE, profiles_tab, search_tab, space_tab  # noqa: E402

__all__ = ["CSS", "create_app", "launch"]

CSS = """
.toolrag-status { padding: 6px 10px; border-radius: 6px; background: #f1f3f4; }
.toolrag-status.ready { background: #e6f4ea; } .toolrag-status.error { background: #fdecea; }
#results table { font-size: 0.9em; }
"""


def create_app(backend: Backend) -> gr.Blocks:
    """The Blocks app around ``backend`` (start the backend before or after; the page waits for it)."""
    h = Handlers(backend)
    with gr.Blocks(title="toolrag playground") as demo:
        gr.Markdown("## toolrag playground — find the few tools a request needs, with every score explained")
        status = gr.HTML(backend.status_html(), label="status", elem_id="status")
        history, last = gr.State([]), gr.State({})
        with gr.Tabs(elem_id="tabs") as tabs:
            search = search_tab(h, backend, history, last)
            space_tab(h, last)
            profiles = profiles_tab(h, backend, last, search.categories)
            studio = StudioHandlers(h, Studio(backend))
            evaluate = evaluate_tab(studio, backend, search=search, profiles=profiles, tabs=tabs)
        for event in search.searched:
            event.success(lambda s: s.get("query", ""), last, profiles.rank_query, **PRIVATE)
        ready = demo.load(h.wait_ready, None, [status, search.image_note, search.rerank, *search.weights],
                          show_progress_on=[status], concurrency_limit=None, **PRIVATE).then(
            h.catalog_views, None, [profiles.tool, profiles.catalog_df, search.categories, profiles.new_category],
            **PRIVATE)
        wire_links(studio, ready, search, evaluate.link)
    demo.queue(default_concurrency_limit=1)
    return demo


def launch(demo: gr.Blocks, **kwargs: Any) -> Any:
    """``demo.launch`` with the app's CSS and upload limit (Gradio 6 takes theme/css here)."""
    kwargs.setdefault("max_file_size", f"{MAX_IMAGE_MB}mb")
    return demo.launch(css=CSS, theme=gr.themes.Soft(), **kwargs)
