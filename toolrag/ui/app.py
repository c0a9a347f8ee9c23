"""The Gradio playground: the tabs of :mod:`toolrag.ui.tabs` around one process-wide :class:`Backend`.

Per-session values (history, last request) are small ``gr.State`` dicts; sliders re-rank on ``.release``
(the retriever caches query vectors, so nothing is re-encoded). Whether the catalog can be edited is the
backend's :class:`toolrag.ui.backend.Access`, decided from where the app is served; the page says which
mode it is in, a read-only app has no editing endpoint, and :func:`launch` refuses to share an app that
edits without sign-in.
"""

from __future__ import annotations

import weakref
from typing import Any

from toolrag.config import configure_environment

configure_environment()  # telemetry off (and HF_HUB_OFFLINE=1 offline) before gradio is imported

import gradio as gr  # noqa: E402

from toolrag.errors import SettingsError  # noqa: E402
from toolrag.ui.backend import Access, Backend  # noqa: E402
from toolrag.ui.evaluate_handlers import StudioHandlers  # noqa: E402
from toolrag.ui.evaluate_tab import evaluate_tab, share_link, wire_links  # noqa: E402
from toolrag.ui.handlers import MAX_IMAGE_MB, Handlers  # noqa: E402
from toolrag.ui.studio import Studio  # noqa: E402
from toolrag.ui.tabs import PRIVATE, profiles_tab, search_tab, space_tab  # noqa: E402

__all__ = ["CSS", "create_app", "launch"]

CSS = """
.toolrag-status { padding: 6px 10px; border-radius: 6px; background: #f1f3f4; }
.toolrag-status.ready { background: #e6f4ea; } .toolrag-status.error { background: #fdecea; }
#results .body-cell, #results .header-cell, #eval-why .body-cell, #eval-why .header-cell { font-size: 12px; }
#results .cell-wrap, #eval-why .cell-wrap { padding: 4px; }
#header { gap: 4px 16px; } #header p { margin: 0; } #mode { text-align: right; }
#image-note, #results-unscored { font-size: 0.85em; }
#search-main { gap: 10px; }
"""


def create_app(backend: Backend) -> gr.Blocks:
    """The Blocks app around ``backend`` (start the backend before or after; the page waits for it)."""
    h = Handlers(backend)
    with gr.Blocks(title="toolrag playground", fill_width=True) as demo:
        with gr.Row(elem_id="header", equal_height=True):  # one line: the answer must fit below it
            gr.Markdown("**toolrag playground** — find the few tools a request needs, with every score explained",
                        elem_id="title")
            gr.Markdown(f"Mode: **{backend.access.reason}**", elem_id="mode")
        status = gr.HTML(backend.status_html(), label="status", elem_id="status")
        history, last = gr.State([]), gr.State({})
        with gr.Tabs(elem_id="tabs") as tabs:
            search = search_tab(h, backend, history, last)
            space_tab(h, last)
            profiles = profiles_tab(h, backend, last, search.categories)
            studio = StudioHandlers(h, Studio(backend))
            # The Evaluate tab is the catalog editors' studio: a read-only instance (a shared demo) keeps
            # only the share link, as its reports would name tools that need permissions.
            evaluate = (evaluate_tab(studio, backend, search=search, profiles=profiles, tabs=tabs)
                        if backend.access.editing else None)
            link = evaluate.link if evaluate is not None else share_link(studio, search)
        if profiles.rank_query is not None:
            for event in search.searched:
                event.success(lambda s: s.get("query", ""), last, profiles.rank_query, **PRIVATE)
        views = [profiles.tool, profiles.catalog_df, search.categories]
        if profiles.new_category is not None:
            views.append(profiles.new_category)

        def caller_views(request: gr.Request, oauth: gr.OAuthProfile | None) -> tuple[Any, ...]:
            """The Profiles list and table and the categories of the tools this caller may see."""
            return h.catalog_views(request, oauth)[:len(views)]

        ready = demo.load(h.wait_ready, None, [status, search.image_note, search.rerank, *search.weights],
                          show_progress_on=[status], concurrency_limit=None, **PRIVATE).then(
            caller_views, None, views, **PRIVATE)
        ready.then(h.role_picker, search.controls["role"], search.controls["role"], **PRIVATE)
        if evaluate is not None:  # what this caller's sign-in may see, for every output of the Evaluate tab (and
            # the summary of the catalog as this caller sees it)
            view = ready.then(studio.view_as, [evaluate.as_role, evaluate.state], [evaluate.state, evaluate.as_role],
                              **PRIVATE)
            view.then(*evaluate.refresh, show_progress="hidden", **PRIVATE)
            view.then(lambda: gr.update(interactive=True), None, evaluate.file, **PRIVATE)  # its state is set now
        wire_links(studio, ready, search, link)
    demo.queue(default_concurrency_limit=1)
    _ACCESS[demo] = backend.access
    _BACKENDS[demo] = backend
    return demo


#: The access each app was built with, for :func:`launch` to check.
_ACCESS: weakref.WeakKeyDictionary[gr.Blocks, Access] = weakref.WeakKeyDictionary()
#: The backend of each app, for the health routes :func:`launch` adds.
_BACKENDS: weakref.WeakKeyDictionary[gr.Blocks, Backend] = weakref.WeakKeyDictionary()


def launch(demo: gr.Blocks, **kwargs: Any) -> Any:
    """``demo.launch`` with the app's CSS, upload limit and sign-in (Gradio 6 takes theme/css here).

    Refuses (SettingsError) to share, through a non-local address or a share link, an app built to edit
    without sign-in; an app built with ``TOOLRAG_AUTH`` credentials gets Gradio's ``auth`` with them."""
    kwargs.setdefault("max_file_size", f"{MAX_IMAGE_MB}mb")
    built = _ACCESS.get(demo, Access.local())
    served = Access.from_env(server_name=kwargs.get("server_name"), share=kwargs.get("share"))
    if served.shared and built.editing and not (built.auth or built.editors):
        raise SettingsError(f"this app edits the catalog without sign-in but would be shared ({served.reason}); "
                            "build it with Access.from_env() for this address, set TOOLRAG_EDITING=off, or give "
                            "TOOLRAG_AUTH=user:password")
    if built.auth:
        kwargs.setdefault("auth", list(built.auth))
    block = not kwargs.pop("prevent_thread_lock", False)
    result = demo.launch(css=CSS, theme=gr.themes.Soft(), prevent_thread_lock=True, **kwargs)
    backend = _BACKENDS.get(demo)
    if backend is not None:
        _health_routes(demo.server_app, backend)
    if block:
        demo.block_thread()
    return result


def _health_routes(app: Any, backend: Backend) -> None:
    """``/healthz`` (the app answers), ``/readyz`` (200 once the index is built, with its version; else 503 and why)
    and ``/metrics`` (Prometheus text) beside the playground, outside its sign-in: they say nothing of a request."""
    from starlette.responses import JSONResponse, Response

    from toolrag.observe import metrics

    def readyz() -> Response:
        health = backend.health()
        return JSONResponse(health, status_code=200 if health["ready"] else 503)

    def prometheus() -> Response:
        body, content_type = metrics.render(backend.health())
        return Response(body, media_type=content_type)

    app.add_api_route("/healthz", lambda: JSONResponse({"alive": True}), methods=["GET"], include_in_schema=False)
    app.add_api_route("/readyz", readyz, methods=["GET"], include_in_schema=False)
    app.add_api_route("/metrics", prometheus, methods=["GET"], include_in_schema=False)
