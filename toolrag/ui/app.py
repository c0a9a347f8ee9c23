"""The Gradio playground: layout and thin handlers around one process-wide :class:`toolrag.ui.Backend`.

Handlers only translate between components and ``toolrag`` calls; the views come from
:mod:`toolrag.ui.format`. Every user-facing failure becomes ``gr.Error`` (a toast) and leaves the rest of the
app working. Per-session values (history, last request) are small ``gr.State`` dicts; sliders re-rank on
``.release`` (the retriever caches query vectors, so nothing is re-encoded).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

from toolrag.models import configure_environment

configure_environment()

import gradio as gr  # noqa: E402

from toolrag import projection  # noqa: E402
from toolrag.editing import RankProbe  # noqa: E402
from toolrag.errors import ImageError, QueryError, ToolragError  # noqa: E402
from toolrag.fusion import Normalization  # noqa: E402
from toolrag.settings import SIGNAL_LABELS, SIGNALS, Settings  # noqa: E402
from toolrag.ui import Backend  # noqa: E402
from toolrag.ui import format as fmt  # noqa: E402

__all__ = ["MAX_IMAGE_MB", "Backend", "Handlers", "create_app"]

log = logging.getLogger(__name__)
MAX_IMAGE_MB = 10
F = TypeVar("F", bound=Callable[..., Any])


def _guard(fn: F) -> F:
    """Turn toolrag errors into a toast with their message; unexpected ones are logged and shown briefly."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except ToolragError as exc:
            raise gr.Error(str(exc)) from None
        except Exception as exc:
            log.exception("handler %s failed", fn.__name__)
            raise gr.Error(f"{fn.__name__} failed: {type(exc).__name__}: {exc}") from None

    return wrapper  # type: ignore[return-value]


class Handlers:
    """Event handlers; each takes component values and returns component values (tested directly)."""

    def __init__(self, backend: Backend) -> None:
        self.b = backend

    # ----------------------------------------------------------------------------------------------- search

    def wait_ready(self, progress: gr.Progress = gr.Progress()) -> Iterator[tuple[Any, ...]]:  # noqa: B008
        """On page load: stream the build progress (status line + bar) until the retriever is ready, then
        the notes on signals that can't run here."""
        keep = tuple(gr.skip() for _ in range(2 + len(SIGNALS)))
        while not self.b.wait(0.5):
            fraction, message = self.b.progress
            progress(fraction, desc=message)
            yield (self.b.status_html(), *keep)
        unavailable = dict(self.b.retriever.index.models.unavailable) if self.b.ready else {}
        sliders = [gr.update(info=fmt.signal_info(s, unavailable)) for s in SIGNALS]
        image_off = [f"**{s}**: {fmt.signal_info(s, unavailable)}" for s in ("ocr", "visual", "concepts", "clip")
                     if s in unavailable or (s != "clip" and "image" in unavailable)]
        note = ("Image signals: " + ("all on (OCR, visual, concepts)" if not image_off else "")
                + "<br>".join(image_off)) if self.b.ready else ""
        rerank_note = getattr(self.b.retriever, "reranker_note", "") if self.b.ready else ""
        yield (self.b.status_html(), note, gr.update(info=rerank_note or "cross-encoder on the top-N"), *sliders)

    @_guard
    def search(self, query: str, image: str | None, role: str, categories: list[str] | None, top_k: float,
               fusion: str, rerank: bool, clarify_gap: float, no_tool_threshold: float,
               w_dense: float, w_dense_en: float, w_bm25: float, w_ocr: float, w_visual: float,
               w_concepts: float, w_clip: float, history: list[dict[str, Any]] | None = None,
               normalization: str | None = None) -> tuple[Any, ...]:
        """Rank the tools for a request; returns every view of the result plus the session's state."""
        retriever = self.b.require()
        query = query or ""
        if not query.strip() and not image:
            raise gr.Error("empty query: type a request (中文 or English) or upload an image")
        if image and Path(image).stat().st_size > MAX_IMAGE_MB * 1_000_000:
            raise gr.Error(f"the image is {Path(image).stat().st_size / 1e6:.1f} MB; the limit is {MAX_IMAGE_MB} MB")
        weights = dict(zip(SIGNALS, (w_dense, w_dense_en, w_bm25, w_ocr, w_visual, w_concepts, w_clip),
                           strict=True))
        settings = fmt.build_settings(retriever.settings, fusion=fusion, top_k=top_k, rerank=rerank,
                                      clarify_gap=clarify_gap, no_tool_threshold=no_tool_threshold,
                                      weights=weights, normalization=normalization)
        role_name = None if not role or role == fmt.GUEST else role
        try:
            result = retriever.search(query, image=image or None, role=role_name, categories=categories or None,
                                      settings=settings)
        except ImageError as exc:
            raise gr.Error(f"cannot use this image: {exc}") from None
        entry = fmt.history_entry(result, image=bool(image), role=role or fmt.GUEST, settings=settings)
        history = [*(history or []), entry][-fmt.HISTORY_SIZE:]
        last = {"query": query, "image": image, "role": role_name, "settings": settings.to_dict(),
                "top": result.ids}
        return (fmt.decision_banner(result), fmt.results_table(result), fmt.prompt_text(result),
                fmt.tools_json(result), fmt.token_text(result), fmt.timings_text(result),
                fmt.notes_text(result), result.to_json(), history, fmt.history_table(history), last)

    def rerun(self, query: str, image: str | None, *rest: Any) -> tuple[Any, ...]:
        """Re-rank after a control changed; nothing happens before the first query."""
        if not (query or "").strip() and not image:
            return tuple(gr.skip() for _ in range(11))
        out: tuple[Any, ...] = self.search(query, image, *rest)
        return out

    # ------------------------------------------------------------------------------------------ tool space

    @_guard
    def tool_space(self, threshold: float, last: dict[str, Any] | None) -> tuple[Any, ...]:
        """The map with the session's last query, and the look-alike pairs at ``threshold``."""
        retriever = self.b.require()
        snap = retriever.index.snapshot
        vectors = snap.vectors["dense"]
        pairs = projection.lookalike_pairs(vectors, list(snap.ids), threshold=float(threshold))
        qvec, label, top = None, "query", []
        if last and (last.get("query") or last.get("image")):
            settings = Settings(**last["settings"]) if last.get("settings") else retriever.settings
            try:
                features = retriever.analyzer.analyze(last.get("query") or "", image=last.get("image"),
                                                      settings=settings)
                qvec = next((features.vectors[k] for k in ("dense", "ocr", "concepts") if k in features.vectors),
                            None)
            except (QueryError, ImageError) as exc:
                log.info("query not drawn on the map: %s", exc)
            label, top = last.get("query") or "(image)", list(last.get("top") or [])
        method: Literal["auto", "pca"] = "auto" if projection.umap_ready() else "pca"
        note = "" if method == "auto" else "UMAP is still compiling in the background: PCA shown"
        fig = projection.tool_space_figure(snap.catalog.tools, vectors, query_vector=qvec, query_label=label,
                                           top_ids=top, pairs=pairs, method=method, note=note)
        info = (f"{len(pairs)} look-alike pair(s) with cosine ≥ {float(threshold):.2f}. "
                "Red lines join look-alikes; ◆ marks tools with example images; ★ is your last query.")
        return fig, info, fmt.lookalike_table(pairs, snap.catalog)

    # -------------------------------------------------------------------------------------------- profiles

    def _tool_choices(self) -> list[tuple[str, str]]:
        return [(f"{t.id} — {t.name}", t.id) for t in self.b.require().index.catalog.tools]

    def _probe(self, rank_query: str | None, last: dict[str, Any] | None) -> RankProbe | None:
        last = last or {}
        text = (rank_query or "").strip() or last.get("query") or ""
        same = text == (last.get("query") or "")
        image = last.get("image") if same else None
        if not text.strip() and not image:
            return None
        settings = Settings(**last["settings"]) if same and last.get("settings") else None
        return RankProbe(query=text, image=image, settings=settings)

    def _after_change(self, message: str, tool_id: str | None) -> tuple[Any, ...]:
        catalog = self.b.require().index.catalog
        editor = self.b.require_editor()
        text = editor.profile_yaml(tool_id) if tool_id and catalog.get(tool_id) else ""
        return (message, text, gr.update(choices=self._tool_choices(), value=tool_id),
                fmt.catalog_table(catalog), gr.update(choices=catalog.categories),
                gr.update(choices=catalog.categories))

    @_guard
    def pick_tool(self, tool_id: str | None) -> tuple[Any, ...]:
        """YAML, summary and image choices of the selected tool."""
        if not tool_id:
            return "", "", gr.update(choices=[], value=None)
        editor = self.b.require_editor()
        tool = editor.catalog.get(tool_id)
        if tool is None:
            raise gr.Error(f"no tool has id {tool_id!r}")
        from toolrag.lint import lint_profile

        lint = "".join(f"\n- ⚠ {w.message}" for w in lint_profile(tool)) or "\n- ✓ no lint warnings"
        info = f"`{tool.id}` · {tool.source.name if tool.source else '?'}:{tool.line}{lint}"
        images = [i.path for i in tool.images]
        return editor.profile_yaml(tool_id), info, gr.update(choices=images, value=None)

    @_guard
    def validate_profile(self, tool_id: str | None, yaml_text: str) -> str:
        profile = self.b.require_editor().validate(tool_id or None, yaml_text)
        from toolrag.lint import lint_profile

        warnings = "".join(f"\n- ⚠ {w.message}" for w in lint_profile(profile))
        return f"✓ `{profile.id}` is valid; the catalog still loads.{warnings}"

    @_guard
    def save_profile(self, tool_id: str | None, yaml_text: str, rank_query: str | None = None,
                     last: dict[str, Any] | None = None) -> tuple[Any, ...]:
        """Save (or add, when no tool is selected) a profile; shows the rank before → after."""
        outcome = self.b.require_editor().save(tool_id or None, yaml_text, probe=self._probe(rank_query, last))
        return self._after_change("✓ " + outcome.message, outcome.tool_id)

    @_guard
    def new_tool(self, category: str | None) -> tuple[Any, ...]:
        template = self.b.require_editor().new_tool_template(category or "general")
        return template, gr.update(value=None), "New tool: edit the template, then Save (no tool selected = add)."

    @_guard
    def ask_delete(self, tool_id: str | None) -> tuple[Any, ...]:
        if not tool_id:
            raise gr.Error("pick a tool to delete first")
        return gr.update(visible=True), f"Delete `{tool_id}`? Its file keeps a backup under `.history/`."

    @_guard
    def delete_profile(self, tool_id: str | None, rank_query: str | None = None,
                       last: dict[str, Any] | None = None) -> tuple[Any, ...]:
        if not tool_id:
            raise gr.Error("pick a tool to delete first")
        outcome = self.b.require_editor().delete(tool_id, probe=self._probe(rank_query, last))
        return (*self._after_change("✓ " + outcome.message, None), gr.update(visible=False))

    @_guard
    def add_image(self, tool_id: str | None, image: str | None, caption: str, replace: str | None,
                  rank_query: str | None = None, last: dict[str, Any] | None = None) -> tuple[Any, ...]:
        if not tool_id:
            raise gr.Error("pick a tool first")
        if not image:
            raise gr.Error("upload an image first")
        if Path(image).stat().st_size > MAX_IMAGE_MB * 1_000_000:
            raise gr.Error(f"the image is above {MAX_IMAGE_MB} MB")
        outcome = self.b.require_editor().add_image(tool_id, image, caption or "", replace=replace or None,
                                                    probe=self._probe(rank_query, last))
        return self._after_change("✓ " + outcome.message, outcome.tool_id)

    def catalog_views(self) -> tuple[Any, ...]:
        """On page load: the tool list, catalog table and categories as they are now (others may have
        edited the catalog since the app started)."""
        if not self.b.ready:
            return tuple(gr.skip() for _ in range(4))
        catalog = self.b.retriever.index.catalog
        return (gr.update(choices=self._tool_choices()), fmt.catalog_table(catalog),
                gr.update(choices=catalog.categories), gr.update(choices=catalog.categories))


CSS = """
.toolrag-status { padding: 6px 10px; border-radius: 6px; background: #f1f3f4; }
.toolrag-status.ready { background: #e6f4ea; } .toolrag-status.error { background: #fdecea; }
#results table { font-size: 0.9em; }
"""
_EXAMPLES: list[tuple[str, str | None]] = [
    ("帮我报销这张餐饮发票", "receipt_dinner.png"),
    ("what will the weather be like in Tokyo this weekend", None),
    ("把这张发票的税号和金额读出来", "vat_invoice_special.png"),
    ("I can't log in, my account is locked", None),
    ("把照片背景虚化", None),
    ("tell me a joke about cats", None),
]


def _examples(backend: Backend) -> list[list[Any]]:
    """Example requests; an example's image is used when the repository's ``assets/queries`` has it."""
    folder = backend.catalog_path.resolve().parent / "assets" / "queries"
    return [[q, str(folder / img) if img and (folder / img).is_file() else None] for q, img in _EXAMPLES]


def create_app(backend: Backend) -> gr.Blocks:
    """The Blocks app around ``backend`` (start the backend before or after; the page waits for it)."""
    h = Handlers(backend)
    catalog, base = backend.catalog, backend.settings
    from toolrag.retriever import NO_TOOL_THRESHOLDS

    roles = fmt.role_choices(catalog)
    with gr.Blocks(title="toolrag playground") as demo:
        gr.Markdown("## toolrag playground — find the few tools a request needs, with every score explained")
        status = gr.HTML(backend.status_html(), label="status", elem_id="status")
        history, last = gr.State([]), gr.State({})
        with gr.Tabs(elem_id="tabs"):
            with gr.Tab("Search", id="search", elem_id="tab-search"):
                with gr.Row():
                    with gr.Column(scale=3):
                        query = gr.Textbox(label="Request (中文 or English)", lines=2, elem_id="query",
                                           placeholder="e.g. 帮我报销这张餐饮发票 / book a meeting room for 3pm")
                        with gr.Row():
                            image = gr.Image(type="filepath", label="Image (optional)", elem_id="query-image",
                                             height=210, sources=["upload", "clipboard"])
                            with gr.Column():
                                image_note = gr.Markdown(label="image signals", elem_id="image-note")
                                role = gr.Dropdown(roles, value="employee" if "employee" in roles else fmt.GUEST,
                                                   label="Caller role (permission filter)", elem_id="role")
                                categories = gr.Dropdown(catalog.categories, multiselect=True, value=[],
                                                         allow_custom_value=True, label="Categories (empty = all)",
                                                         elem_id="categories")
                                search_btn = gr.Button("Search", variant="primary", elem_id="search-btn")
                        with gr.Accordion("Examples (click one to fill the request)", open=False):
                            gr.Examples(_examples(backend), [query, image], label=None)
                    with gr.Column(scale=2):
                        with gr.Row():
                            top_k = gr.Slider(1, 20, value=base.top_k, step=1, label="top-K", elem_id="top-k")
                            fusion = gr.Radio(["late", "early", "rrf"], value=base.fusion.value, label="Fusion",
                                              elem_id="fusion")
                            normalization = gr.Dropdown(
                                [n.value for n in Normalization], value=base.normalization.value,
                                label="Normalisation", elem_id="normalization",
                                info="standard: z-scores against the whole catalog (shipped)")
                        with gr.Row():
                            clarify = gr.Slider(0, 0.5, value=base.clarify_gap, step=0.01, label="Clarify gap",
                                                elem_id="clarify-gap")
                            no_tool = gr.Slider(-1, 1, value=base.no_tool_threshold
                                                if base.no_tool_threshold is not None
                                                else NO_TOOL_THRESHOLDS.get(base.text_model, 0.0),
                                                step=0.01, label="No-tool threshold", elem_id="no-tool")
                        rerank = gr.Checkbox(value=base.rerank, label="Rerank (cross-encoder)", elem_id="rerank")
                        weights = [gr.Slider(0, 1, value=base.weights[s], step=0.01, label=f"weight: {s}",
                                             info=SIGNAL_LABELS[s], elem_id=f"w-{s}") for s in SIGNALS]
                banner = gr.HTML(label="decision", elem_id="decision-banner")
                table = gr.Dataframe(interactive=False, wrap=True, elem_id="results",
                                     column_widths=["3%", "14%", "17%", "6%", *["7.5%"] * len(SIGNALS), "7.5%"],
                                     label="Ranked tools (yellow = the signal that carried the tool)")
                with gr.Row():
                    tokens = gr.Markdown(label="token saving", elem_id="tokens")
                    timings = gr.Markdown(label="timings", elem_id="timings")
                notes = gr.Markdown(label="notes", elem_id="notes")
                with gr.Accordion("Prompt block and OpenAI tools JSON to inject", open=False), gr.Row():
                    prompt = gr.Code(language="markdown", label="Prompt block", elem_id="prompt")
                    tools = gr.Code(language="json", label="tools", elem_id="tools-json")
                with gr.Accordion("Result JSON (same as `toolrag search --json`)", open=False):
                    raw = gr.JSON(label="result", elem_id="result-json")
                history_df = gr.Dataframe(interactive=False, label="Your last runs (compare)", elem_id="history")
            with gr.Tab("Tool space", id="space", elem_id="tab-space") as space_tab:
                with gr.Row():
                    threshold = gr.Slider(0.8, 1.0, value=projection.LOOKALIKE_THRESHOLD, step=0.005,
                                          label="Look-alike threshold (cosine)", elem_id="lookalike-threshold")
                    draw = gr.Button("Draw the map", elem_id="draw-map")
                plot = gr.Plot(label="Tool map", elem_id="tool-map")
                space_info = gr.Markdown(label="map info", elem_id="map-info")
                pairs = gr.Dataframe(interactive=False, label="Look-alike pairs", elem_id="lookalikes")
            with gr.Tab("Profiles", id="profiles", elem_id="tab-profiles"):
                with gr.Row():
                    with gr.Column(scale=3):
                        tool = gr.Dropdown([(f"{t.id} — {t.name}", t.id) for t in catalog.tools], value=None,
                                           allow_custom_value=True, label="Tool", elem_id="profile-tool")
                        code = gr.Code(language="yaml", label="Profile (YAML)", lines=22, wrap_lines=True,
                                       elem_id="profile-yaml")
                        with gr.Row():
                            validate_btn = gr.Button("Validate", elem_id="validate-btn")
                            save_btn = gr.Button("Save", variant="primary", elem_id="save-btn")
                            delete_btn = gr.Button("Delete…", variant="stop", elem_id="delete-btn")
                        with gr.Row(visible=False) as confirm_row:
                            confirm_text = gr.Markdown(label="confirm", elem_id="confirm-text")
                            confirm_btn = gr.Button("Yes, delete", variant="stop", elem_id="confirm-delete")
                            cancel_btn = gr.Button("Cancel", elem_id="cancel-delete")
                        profile_status = gr.Markdown(label="status", elem_id="profile-status")
                    with gr.Column(scale=2):
                        rank_query = gr.Textbox(label="Query whose rank to show (defaults to your last search)",
                                                elem_id="rank-query")
                        tool_info = gr.Markdown(label="tool info", elem_id="tool-info")
                        new_category = gr.Dropdown(catalog.categories, value=None, allow_custom_value=True,
                                                   label="Category of a new tool", elem_id="new-category")
                        new_btn = gr.Button("New tool from template", elem_id="new-tool")
                        with gr.Accordion("Add or replace an example image", open=False):
                            new_image = gr.Image(type="filepath", label="Image", elem_id="profile-image", height=160)
                            caption = gr.Textbox(label="Caption", elem_id="image-caption")
                            replace = gr.Dropdown([], value=None, allow_custom_value=True, label="Replace (optional)",
                                                  elem_id="image-replace")
                            add_image_btn = gr.Button("Add image", elem_id="add-image")
                catalog_df = gr.Dataframe(fmt.catalog_table(catalog), interactive=False, wrap=True,
                                          column_widths=["21%", "20%", "11%", "7%", "6%", "17%", "11%", "7%"],
                                          label="Catalog", elem_id="catalog-table")

        private: dict[str, Any] = {"api_visibility": "private"}
        inputs = [query, image, role, categories, top_k, fusion, rerank, clarify, no_tool, *weights, history,
                  normalization]
        outputs = [banner, table, prompt, tools, tokens, timings, notes, raw, history, history_df, last]
        demo.load(h.wait_ready, None, [status, image_note, rerank, *weights], show_progress_on=[status],
                  concurrency_limit=None, **private).then(
            h.catalog_views, None, [tool, catalog_df, categories, new_category], **private)
        # Every search-like event shares one queue of 2 workers (the machine's cores), whoever triggers it.
        shared: dict[str, Any] = {"concurrency_id": "search", "concurrency_limit": 2}
        for event in (search_btn.click(h.search, inputs, outputs, api_name="search", **shared),
                      query.submit(h.search, inputs, outputs, **shared, **private)):
            event.success(lambda s: s.get("query", ""), last, rank_query, **private)
        for slider in (top_k, clarify, no_tool, *weights):
            slider.release(h.rerun, inputs, outputs, trigger_mode="always_last", **shared, **private)
        for control in (fusion, normalization, rerank, role, categories):
            control.input(h.rerun, inputs, outputs, trigger_mode="always_last", **shared, **private)
        space_outputs = [plot, space_info, pairs]
        draw.click(h.tool_space, [threshold, last], space_outputs, api_name="tool_space")
        space_tab.select(h.tool_space, [threshold, last], space_outputs, **private)
        threshold.release(h.tool_space, [threshold, last], space_outputs, **private)
        change_outputs = [profile_status, code, tool, catalog_df, categories, new_category]
        tool.input(h.pick_tool, tool, [code, tool_info, replace], api_name="profile")
        validate_btn.click(h.validate_profile, [tool, code], profile_status, api_name="validate_profile")
        save_btn.click(h.save_profile, [tool, code, rank_query, last], change_outputs, api_name="save_profile")
        new_btn.click(h.new_tool, new_category, [code, tool, profile_status], api_name="new_tool")
        delete_btn.click(h.ask_delete, tool, [confirm_row, confirm_text], **private)
        cancel_btn.click(lambda: gr.update(visible=False), None, confirm_row, **private)
        confirm_btn.click(h.delete_profile, [tool, rank_query, last], [*change_outputs, confirm_row],
                          api_name="delete_profile")
        add_image_btn.click(h.add_image, [tool, new_image, caption, replace, rank_query, last], change_outputs,
                            api_name="add_image")
    demo.queue(default_concurrency_limit=1)
    return demo


def launch(demo: gr.Blocks, **kwargs: Any) -> Any:
    """``demo.launch`` with the app's CSS and upload limit (Gradio 6 takes theme/css here)."""
    kwargs.setdefault("max_file_size", f"{MAX_IMAGE_MB}mb")
    return demo.launch(css=CSS, theme=gr.themes.Soft(), **kwargs)
