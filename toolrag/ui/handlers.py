"""Event handlers of the playground: each takes component values and returns component values.

Handlers only translate between components and library calls; the views come from :mod:`toolrag.ui.format`.
Every user-facing failure becomes ``gr.Error`` (a toast) and leaves the rest of the app working
(:mod:`toolrag.ui.guard`). This module holds the Search and Tool space tabs' handlers; :class:`Handlers` extends
:class:`toolrag.ui.profile_handlers.ProfileHandlers` (the Profiles tab). They are tested directly
(``tests/test_ui_handlers.py``) and through a real browser.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

import gradio as gr

from toolrag.errors import ImageError, QueryError
from toolrag.evaluation import projection
from toolrag.evaluation.reliability import ReliabilityBin, reliability_figure
from toolrag.settings import Settings
from toolrag.signals import SIGNALS
from toolrag.ui import format as fmt
from toolrag.ui.guard import MAX_IMAGE_MB, checked_image, guard
from toolrag.ui.profile_handlers import ProfileHandlers

__all__ = ["MAX_IMAGE_MB", "Handlers", "checked_image"]

log = logging.getLogger(__name__)
#: How many values :meth:`Handlers.search` returns (the Search tab's outputs).
SEARCH_OUTPUTS = 12
F = TypeVar("F", bound=Callable[..., Any])


def _skip_before_first_query(fn: F) -> F:
    """``fn`` (a search) only once there is a request: a control moved before the first query changes nothing.
    The wrapper keeps ``fn``'s signature, so Gradio passes it the caller's request as it does to ``fn``."""

    @functools.wraps(fn)
    def wrapper(self: Any, query: str, image: str | None, *rest: Any, **kwargs: Any) -> Any:
        if not (query or "").strip() and not image:
            return tuple(gr.skip() for _ in range(SEARCH_OUTPUTS))
        return fn(self, query, image, *rest, **kwargs)

    return wrapper  # type: ignore[return-value]


class Handlers(ProfileHandlers):
    """Event handlers; each takes component values and returns component values (tested directly)."""

    # ----------------------------------------------------------------------------------------------- search

    def wait_ready(self, progress: gr.Progress = gr.Progress()) -> Iterator[tuple[Any, ...]]:  # noqa: B008
        """On page load: stream the build progress (status line + bar) until the retriever is ready, then
        the notes on signals that can't run here."""
        keep = tuple(gr.skip() for _ in range(2 + len(SIGNALS)))
        while not self.b.wait(0.5):
            fraction, message = self.b.progress
            progress(fraction, desc=message)
            yield (self.b.status_html(), *keep)
        notes = self.b.require().signal_notes() if self.b.ready else {}
        sliders = [gr.update(info=fmt.signal_info(s, notes)) for s in SIGNALS]
        note = fmt.image_note(notes) if self.b.ready else ""
        rerank_note = getattr(self.b.retriever, "reranker_note", "") if self.b.ready else ""
        yield (self.b.status_html(), note, gr.update(info=rerank_note or "cross-encoder on the top-N"), *sliders)

    @guard
    def search(self, query: str, image: str | None, role: str, categories: list[str] | None, top_k: float,
               fusion: str, rerank: bool, precision_target: float, clean_target: float,
               w_dense: float, w_dense_en: float, w_bm25: float, w_ocr: float, w_visual: float,
               w_concepts: float, w_clip: float, history: list[dict[str, Any]] | None = None,
               normalization: str | None = None, request: gr.Request | None = None,
               oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """Rank the tools for a request; returns every view of the result plus the session's state. Where the
        app is shared, the role must be one the caller holds (:meth:`view`)."""
        retriever = self.b.require()
        query = query or ""
        if not query.strip() and not image:
            raise gr.Error("empty query: type a request (any language the multilingual model reads) or upload an "
                           "image")
        if image and Path(image).stat().st_size > MAX_IMAGE_MB * 1_000_000:
            raise gr.Error(f"the image is {Path(image).stat().st_size / 1e6:.1f} MB; the limit is {MAX_IMAGE_MB} MB")
        weights = dict(zip(SIGNALS, (w_dense, w_dense_en, w_bm25, w_ocr, w_visual, w_concepts, w_clip),
                           strict=True))
        settings = fmt.build_settings(retriever.settings, fusion=fusion, top_k=top_k, rerank=rerank,
                                      precision_target=precision_target, clean_target=clean_target,
                                      weights=weights, normalization=normalization)
        role_name = None if not role or role == fmt.GUEST else role
        self.view(request, oauth).check_role(retriever.catalog, role_name)
        try:
            result = retriever.search(query, image=image or None, role=role_name, categories=categories or None,
                                      settings=settings)
        except ImageError as exc:
            raise gr.Error(f"cannot use this image: {exc}") from None
        entry = fmt.history_entry(result, image=bool(image), role=role or fmt.GUEST, settings=settings)
        history = [*(history or []), entry][-fmt.HISTORY_SIZE:]
        last = {"query": query, "image": image, "role": role_name, "settings": settings.to_dict(),
                "top": result.ids, "scored": fmt.scored_signals(result)}
        return (fmt.decision_banner(result), fmt.results_table(result), fmt.prompt_text(result),
                fmt.tools_json(result), fmt.token_text(result), fmt.timings_text(result),
                fmt.notes_text(result), result.to_json(), history, fmt.history_table(history), last,
                fmt.unscored_text(result))

    rerun = _skip_before_first_query(search)
    """Re-rank after a control changed; nothing happens before the first query."""

    @staticmethod
    def result_views(last: dict[str, Any] | None) -> tuple[Any, ...]:
        """After a search: the ranked table (its columns sized for the signals that scored) and the history
        appear; nothing is drawn before the first search."""
        if not last or "scored" not in last:
            return gr.skip(), gr.skip()
        return (gr.update(visible=True, column_widths=fmt.result_widths(len(last["scored"]))),
                gr.update(visible=True))

    @guard
    def reliability(self, target: float | None = None) -> tuple[Any, str]:
        """The decision model's operating points (the trade-off behind the precision-target slider, ``target`` in
        percent) and the reliability of its P(right), both measured on held-out training sources."""
        model = self.b.require().decider.model
        if model is None:
            raise gr.Error(f"no decision model: {self.b.require().decider.note}")
        held = model.trained.get("reliability", [])
        bins = [ReliabilityBin(0.0, 1.0, float(p), float(o), max(1, round(1000 * w))) for p, o, w in held]
        figure = reliability_figure(bins, title="P(right) on held-out training sources")
        return figure, fmt.tradeoff_table(model, None if target is None else float(target) / 100)

    # ------------------------------------------------------------------------------------------ tool space

    @guard
    def tool_space(self, threshold: float, last: dict[str, Any] | None, request: gr.Request | None = None,
                   oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """The map with the session's last query, and the look-alike pairs at ``threshold``: of the tools the
        caller may see (every tool locally)."""
        retriever = self.b.require()
        view = self.view(request, oauth)
        catalog = view.catalog(retriever.catalog)
        all_ids, all_vectors = retriever.tool_vectors()
        shown = [(i, tool) for i, tool in enumerate(catalog.get(tool_id) for tool_id in all_ids) if tool is not None]
        tools, vectors = [tool for _, tool in shown], all_vectors[[i for i, _ in shown]]
        ids = [tool.id for tool in tools]
        pairs = projection.lookalike_pairs(vectors, ids, threshold=float(threshold))
        qvec, label, top = None, "query", []
        if last and (last.get("query") or last.get("image")):
            settings = Settings(**last["settings"]) if last.get("settings") else retriever.settings
            try:
                qvec = retriever.request_vector(last.get("query") or "", image=last.get("image"), settings=settings)
            except (QueryError, ImageError) as exc:
                log.info("query not drawn on the map: %s", exc)
            label, top = last.get("query") or "(image)", [t for t in last.get("top") or [] if t in ids]
        method: Literal["auto", "pca"] = "auto" if projection.umap_ready() else "pca"
        note = "" if method == "auto" else "UMAP is still compiling in the background: PCA shown"
        fig = projection.tool_space_figure(tools, vectors, query_vector=qvec, query_label=label, top_ids=top,
                                           pairs=pairs, method=method, note=note)
        info = (f"{len(pairs)} look-alike pair(s) with cosine ≥ {float(threshold):.2f}. "
                "Red lines join look-alikes; ◆ marks tools with example images; ★ is your last query.")
        return fig, info, fmt.lookalike_table(pairs, catalog)
