"""The playground's tabs: one builder per tab lays out its components and wires its own events.

Each builder returns its components (a small dataclass) so :func:`toolrag.ui.app.create_app` can wire what
crosses tabs (the page load, the last search feeding the Profiles tab's rank query).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from toolrag.config import on_space
from toolrag.evaluation import projection
from toolrag.settings import Normalization
from toolrag.signals import SIGNALS, signal
from toolrag.ui import format as fmt
from toolrag.ui.backend import Backend
from toolrag.ui.handlers import Handlers, checked_image

__all__ = ["ProfilesTab", "SearchTab", "profiles_tab", "search_tab", "space_tab"]

PRIVATE: dict[str, Any] = {"api_visibility": "private"}
#: Every search-like event shares one queue of 2 workers (the machine's cores), whoever triggers it.
SHARED: dict[str, Any] = {"concurrency_id": "search", "concurrency_limit": 2}
_EXAMPLES: list[tuple[str, str | None]] = [
    ("帮我报销这张餐饮发票", "receipt_dinner.png"),
    ("what will the weather be like in Tokyo this weekend", None),
    ("把这张发票的税号和金额读出来", "vat_invoice_special.png"),
    ("I can't log in, my account is locked", None),
    ("把照片背景虚化", None),
    ("tell me a joke about cats", None),
]


#: After Search: if the decision banner and the first three ranked tools are not all on screen (a small window),
#: scroll so the banner is at the top. Runs in the browser once the table shows rows (a first search makes the
#: table appear a moment after the result; a result without rows is measured after 10 s) and the layout has
#: settled: the same positions for 600 ms and at least three frames (a measure taken while the table was still
#: laying out scrolled a laptop window that holds everything: on a busy machine the table took more than the 3 s
#: this waited at first, and three equal frames in a row came before the column widths' update, which moves the
#: rows). It gives up after 20 s without a settled layout.
REVEAL_ANSWER = """() => {
  const start = performance.now();
  let last = "", same = 0, since = start;
  const reveal = () => {
    const now = performance.now(), elapsed = now - start;
    if (elapsed >= 20000) return;
    const banner = document.getElementById("decision-banner");
    const rows = document.querySelectorAll("#results [role=row].virtual-row");
    if (!banner || (!rows.length && elapsed < 10000)) { requestAnimationFrame(reveal); return; }
    const end = rows.length ? rows[Math.min(rows.length, 3) - 1] : banner;
    const top = banner.getBoundingClientRect().top, bottom = end.getBoundingClientRect().bottom;
    const layout = `${top}|${bottom}|${rows.length}|${document.documentElement.scrollHeight}`;
    if (layout === last) { same += 1; } else { same = 0; since = now; }
    last = layout;
    if (same < 2 || now - since < 600) { requestAnimationFrame(reveal); return; }
    if (top < 0 || bottom > window.innerHeight) window.scrollBy({top: top - 8, behavior: "instant"});
  };
  requestAnimationFrame(reveal);
}"""


def _examples(backend: Backend) -> list[list[Any]]:
    """Example requests; an example's image is used when the repository's ``assets/queries`` has it."""
    if backend.catalog_path is None:  # a replica of a published index: no folder beside a catalog
        return [[q, None] for q, _ in _EXAMPLES]
    folder = backend.catalog_path.resolve().parent / "assets" / "queries"
    return [[q, str(folder / img) if img and (folder / img).is_file() else None] for q, img in _EXAMPLES]


@dataclass
class SearchTab:
    """The Search tab's components that other tabs and the page load use."""

    query: gr.Textbox
    image_note: gr.Markdown
    categories: gr.Dropdown
    rerank: gr.Checkbox
    weights: list[gr.Slider]
    searched: list[Any]
    """The events of a finished search (button, Enter): the Profiles tab's rank query follows them."""
    tab: Any = None
    inputs: list[Any] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    controls: dict[str, Any] = field(default_factory=dict)
    """The controls by name (query, role, categories, top_k, fusion, ..., w_<signal>): links and tuning set them."""
    share_slot: Any = None
    """Where the link to the last search goes, under the result."""


def search_tab(h: Handlers, backend: Backend, history: gr.State, last: gr.State) -> SearchTab:
    """Request, image, caller role and every retrieval control; the ranked, explained result. Where the app is
    shared, the page is built for a visitor who did not sign in (the role picker offers the roles the public
    role covers; the page load offers a signed-in user theirs)."""
    visitor = backend.view()
    catalog, base = visitor.catalog(backend.catalog), backend.settings
    roles = h.role_choices(visitor)
    default = "employee" if "employee" in roles and visitor.everything else (
        backend.access.public_role if backend.access.public_role in roles else fmt.GUEST)
    with gr.Tab("Search", id="search", elem_id="tab-search") as tab, gr.Row(equal_height=False):
        # The request and its answer on the left, the tuning on the right: moving a slider never pushes the
        # answer out of view, and the decision is on screen after Search on a laptop or a Space-sized window.
        with gr.Column(scale=3, min_width=560, elem_id="search-main"):
            with gr.Row(equal_height=False):
                with gr.Column(scale=3, min_width=300):
                    query = gr.Textbox(label=fmt.REQUEST_LABEL, lines=3, elem_id="query",
                                       placeholder="e.g. 帮我报销这张餐饮发票 / book a meeting room for 3pm")
                    search_btn = gr.Button("Search", variant="primary", elem_id="search-btn")
                with gr.Column(scale=2, min_width=220):  # the image, and beside it which image signals run here
                    image = checked_image(label="Image (optional)", elem_id="query-image", height=150,
                                          sources=["upload", "clipboard"])
                    image_note = gr.Markdown(label="image signals", elem_id="image-note")
            banner = gr.HTML(fmt.BEFORE_SEARCH, label="decision", elem_id="decision-banner")
            table = gr.Dataframe(interactive=False, wrap=True, elem_id="results", visible=False,
                                 label="Ranked tools · raw score (normalised) per signal · yellow: what carried it")
            unscored = gr.Markdown(elem_id="results-unscored")
            with gr.Row():
                tokens = gr.Markdown(label="token saving", elem_id="tokens")
                timings = gr.Markdown(label="timings", elem_id="timings")
            notes = gr.Markdown(label="notes", elem_id="notes")
            with gr.Column(elem_id="share-slot") as share_slot:
                pass  # the link to this search goes here (toolrag.ui.evaluate_tab.share_link)
            with gr.Accordion("Examples (click one to fill the request)", open=False):
                gr.Examples(_examples(backend), [query, image], label=None)
            with gr.Accordion("Prompt block and OpenAI tools JSON to inject", open=False), gr.Row():
                prompt = gr.Code(language="markdown", label="Prompt block", elem_id="prompt")
                tools = gr.Code(language="json", label="tools", elem_id="tools-json")
            with gr.Accordion("Result JSON (same as `toolrag search --json`)", open=False):
                raw = gr.JSON(label="result", elem_id="result-json")
            with gr.Accordion("Decision model: operating points and reliability", open=False):
                reliability_btn = gr.Button("Show the trade-off and the reliability curve", elem_id="reliability-btn")
                tradeoff = gr.Markdown(elem_id="tradeoff")
                reliability_plot = gr.Plot(label="Reliability of P(right)", elem_id="reliability-plot",
                                           visible=False)
            history_df = gr.Dataframe(interactive=False, label="Your last runs (compare)", elem_id="history",
                                      visible=False)
        with gr.Column(scale=1, min_width=250, elem_id="tuning"):  # who asks, then how to rank (collapsible)
            # Shared: the page load offers a signed-in user their roles, so an API caller may name one the page
            # did not list; the search handler refuses a role the caller lacks.
            role = gr.Dropdown(roles, value=default, label="Caller role (simulated)", elem_id="role",
                               allow_custom_value=not visitor.everything,
                               info="Simulates the caller your agent passes (role = permission codes); it is not a "
                                    "sign-in" if visitor.everything else "The roles you hold here; sign in for others")
            categories = gr.Dropdown(catalog.categories, multiselect=True, value=[], allow_custom_value=True,
                                     label="Categories (empty = all)", elem_id="categories")
            with gr.Accordion("Tuning: retrieval, decision thresholds, weights", open=True, elem_id="tuning-panel"):
                top_k = gr.Slider(1, 20, value=base.top_k, step=1, label="top-K", elem_id="top-k")
                fusion = gr.Radio(["late", "early", "rrf"], value=base.fusion.value, label="Fusion", elem_id="fusion")
                normalization = gr.Dropdown(
                    [n.value for n in Normalization], value=base.normalization.value,
                    label="Normalisation", elem_id="normalization",
                    info="standard: z-scores against the whole catalog (shipped)")
                target = gr.Slider(70, 95, value=round(100 * fmt.precision_target(base)), step=5,
                                   label="EXECUTE precision target (%)", elem_id="precision-target",
                                   info="call a tool only where this share of calls was right on held-out catalogs; "
                                        "higher: fewer calls, more questions and answers without a tool")
                clean = gr.Slider(60, 95, value=round(100 * fmt.clean_target(base)), step=5,
                                  label="Clean target: no tool where none fits (%)", elem_id="clean-target",
                                  info="inject no tool for this share of requests nothing serves (held-out "
                                       "catalogs); higher: fewer questions with candidates where nothing fits, "
                                       "more requests a tool serves get nothing")
                rerank = gr.Checkbox(value=base.rerank, label="Rerank (cross-encoder)", elem_id="rerank")
                weights = [gr.Slider(0, 1, value=base.weights[s], step=0.01, label=f"weight: {s}",
                                     info=signal(s).label, elem_id=f"w-{s}") for s in SIGNALS]

    inputs = [query, image, role, categories, top_k, fusion, rerank, target, clean, *weights, history,
              normalization]
    outputs = [banner, table, prompt, tools, tokens, timings, notes, raw, history, history_df, last, unscored]
    searched = [search_btn.click(h.search, inputs, outputs, api_name="search", **SHARED),
                query.submit(h.search, inputs, outputs, **SHARED, **PRIVATE)]
    for event in searched:
        event.success(None, None, None, js=REVEAL_ANSWER)
    reliability_btn.click(h.reliability, target, [reliability_plot, tradeoff], api_name="reliability").success(
        lambda: gr.update(visible=True), None, reliability_plot, **PRIVATE)  # no empty plot before the curve
    # The ranked table and the history appear with the first search; the table's columns fit what scored.
    last.change(h.result_views, last, [table, history_df], show_progress="hidden", **PRIVATE)
    for slider in (top_k, target, clean, *weights):
        slider.release(h.rerun, inputs, outputs, trigger_mode="always_last", **SHARED, **PRIVATE)
    for control in (fusion, normalization, rerank, role, categories):
        control.input(h.rerun, inputs, outputs, trigger_mode="always_last", **SHARED, **PRIVATE)
    controls = {"query": query, "role": role, "categories": categories, "top_k": top_k, "fusion": fusion,
                "normalization": normalization, "rerank": rerank, "precision_target": target,
                "clean_target": clean, **{f"w_{s}": w for s, w in zip(SIGNALS, weights, strict=True)}}
    return SearchTab(query, image_note, categories, rerank, weights, searched, tab, inputs, outputs, controls,
                     share_slot)


def space_tab(h: Handlers, last: gr.State) -> None:
    """The map of the tool space with the last request on it, and the look-alike pairs."""
    with gr.Tab("Tool space", id="space", elem_id="tab-space") as tab:
        with gr.Row():
            threshold = gr.Slider(0.8, 1.0, value=projection.LOOKALIKE_THRESHOLD, step=0.005,
                                  label="Look-alike threshold (cosine)", elem_id="lookalike-threshold")
            draw = gr.Button("Draw the map", elem_id="draw-map")
        plot = gr.Plot(label="Tool map", elem_id="tool-map")
        info = gr.Markdown(label="map info", elem_id="map-info")
        pairs = gr.Dataframe(interactive=False, label="Look-alike pairs", elem_id="lookalikes")
    outputs = [plot, info, pairs]
    draw.click(h.tool_space, [threshold, last], outputs, api_name="tool_space")
    tab.select(h.tool_space, [threshold, last], outputs, **PRIVATE)
    threshold.release(h.tool_space, [threshold, last], outputs, **PRIVATE)


@dataclass
class ProfilesTab:
    """The Profiles tab's components that the page load and the Search tab update (``None`` where the
    instance is read-only and the component does not exist)."""

    tool: gr.Dropdown
    rank_query: gr.Textbox | None
    catalog_df: gr.Dataframe
    new_category: gr.Dropdown | None
    tab: Any = None
    code: Any = None
    tool_info: Any = None
    replace: Any = None
    version: Any = None
    saved: list[Any] = field(default_factory=list)
    """The events of a finished save, delete or image addition: the effect of the edit follows them."""
    effect_slot: Any = None


def profiles_tab(h: Handlers, backend: Backend, last: gr.State, categories: gr.Dropdown) -> ProfilesTab:
    """Edit, validate, add and delete profiles and their example images; the rank of a probe request moves.

    A read-only instance (:class:`toolrag.ui.backend.Access`) shows profiles of the tools every caller may
    see and registers no editing event at all."""
    editing = backend.access.editing
    visitor = backend.view()
    catalog = h.visible_catalog(backend.catalog, visitor)
    with gr.Tab("Profiles", id="profiles", elem_id="tab-profiles") as tab:
        if not editing:
            gr.Markdown(f"**Read-only** — {backend.access.reason}. Only the tools you may see are listed "
                        f"({visitor.who}).", elem_id="profiles-readonly")
        elif backend.access.editors and not backend.access.auth and on_space():
            gr.LoginButton(elem_id="login")  # Hugging Face sign-in exists on a Space only
        with gr.Row():
            with gr.Column(scale=3):
                tool = gr.Dropdown([(f"{t.id} — {t.name}", t.id) for t in catalog.tools], value=None,
                                   allow_custom_value=True, label="Tool", elem_id="profile-tool")
                code = gr.Code(language="yaml", label="Profile (YAML)", lines=22, wrap_lines=True,
                               elem_id="profile-yaml", interactive=editing)
                version = gr.Textbox(visible=False, elem_id="profile-version")
                if editing:
                    with gr.Row():
                        validate_btn = gr.Button("Validate", elem_id="validate-btn")
                        save_btn = gr.Button("Save", variant="primary", elem_id="save-btn")
                        delete_btn = gr.Button("Delete…", variant="stop", elem_id="delete-btn")
                    with gr.Row(visible=False) as confirm_row:
                        confirm_text = gr.Markdown(label="confirm", elem_id="confirm-text")
                        confirm_btn = gr.Button("Yes, delete", variant="stop", elem_id="confirm-delete")
                        cancel_btn = gr.Button("Cancel", elem_id="cancel-delete")
                    status = gr.Markdown(label="status", elem_id="profile-status")
                    with gr.Column(elem_id="profile-effect") as effect_slot:
                        pass  # the effect of an edit on every labelled request goes here (toolrag.ui.evaluate_tab)
            with gr.Column(scale=2):
                if editing:
                    rank_query = gr.Textbox(label="Query whose rank to show (defaults to your last search)",
                                            elem_id="rank-query")
                tool_info = gr.Markdown(label="tool info", elem_id="tool-info")
                replace = gr.Dropdown([], value=None, allow_custom_value=True, label="Replace (optional)",
                                      elem_id="image-replace", render=False, visible=editing)
                if editing:
                    new_category = gr.Dropdown(catalog.categories, value=None, allow_custom_value=True,
                                               label="Category of a new tool", elem_id="new-category")
                    new_btn = gr.Button("New tool from template", elem_id="new-tool")
                    with gr.Accordion("Add or replace an example image", open=False):
                        new_image = checked_image(label="Image", elem_id="profile-image", height=160)
                        caption = gr.Textbox(label="Caption", elem_id="image-caption")
                        replace.render()
                        add_image_btn = gr.Button("Add image", elem_id="add-image")
                else:
                    replace.render()
        catalog_df = gr.Dataframe(fmt.catalog_table(catalog), interactive=False, wrap=True,
                                  column_widths=["21%", "20%", "11%", "7%", "6%", "17%", "11%", "7%"],
                                  label="Catalog", elem_id="catalog-table")

    tool.input(h.pick_tool, tool, [code, tool_info, replace, version], api_name="profile")
    if not editing:
        return ProfilesTab(tool, None, catalog_df, None, tab, code, tool_info, replace, version)
    changed = [status, code, tool, catalog_df, categories, new_category, version]
    validate_btn.click(h.validate_profile, [tool, code], status, api_name="validate_profile")
    saved = [save_btn.click(h.save_profile, [tool, code, rank_query, last, version], changed,
                            api_name="save_profile")]
    new_btn.click(h.new_tool, new_category, [code, tool, status, version], api_name="new_tool")
    delete_btn.click(h.ask_delete, tool, [confirm_row, confirm_text], **PRIVATE)
    cancel_btn.click(lambda: gr.update(visible=False), None, confirm_row, **PRIVATE)
    saved.append(confirm_btn.click(h.delete_profile, [tool, rank_query, last, version], [*changed, confirm_row],
                                   api_name="delete_profile"))
    saved.append(add_image_btn.click(h.add_image, [tool, new_image, caption, replace, rank_query, last, version],
                                     changed, api_name="add_image"))
    return ProfilesTab(tool, rank_query, catalog_df, new_category, tab, code, tool_info, replace, version, saved,
                       effect_slot)
