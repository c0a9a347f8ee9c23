"""The Evaluate tab (the tool author's studio), the effect of an edit in the Profiles tab, and links to one
search. Built by :func:`evaluate_tab` and :func:`wire_links`, called from :func:`toolrag.ui.app.create_app`.

The tab evaluates the labelled requests (the catalog's ``queries.yaml``, or an uploaded YAML, JSON Lines or
CSV file) with the Search tab's settings, shows metric cards and the failing requests (a click opens the
expected tool in Profiles with the request as rank query; the last column explains the ranking), checks
every tool's retrievability from its own examples (no labels needed), estimates the findability of the
tools without examples from their descriptions alone (:func:`estimate_section`), exports the HTML report of
``toolrag report``, tunes the text weights with the plots of ``toolrag tune`` and lists the unmatched requests of
the audit log (:mod:`toolrag.ui.evaluate_unmatched`). The Profiles tab gains the suggested example requests of a
tool, each added to its examples in one click (:func:`suggestions_panel`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gradio as gr

from toolrag.signals import SIGNALS
from toolrag.ui import evaluate_format as views
from toolrag.ui.backend import Backend
from toolrag.ui.deeplink import LINK_CONTROLS
from toolrag.ui.evaluate_handlers import ALL_TOOLS, EVERY_TOOL, SETTING_CONTROLS, StudioHandlers
from toolrag.ui.evaluate_unmatched import unmatched_section
from toolrag.ui.tabs import PRIVATE, ProfilesTab, SearchTab

__all__ = ["EvaluateTab", "evaluate_tab", "share_link", "wire_links"]

#: Long studio jobs take one worker: two people tuning at once must not starve the searches.
STUDIO: dict[str, Any] = {"concurrency_id": "studio", "concurrency_limit": 1}


@dataclass
class EvaluateTab:
    """The components other parts of the page (and tests) refer to."""

    state: gr.State
    cards: gr.HTML
    failing: gr.Dataframe
    effect: gr.Markdown
    changes: gr.Dataframe
    link: gr.Markdown
    as_role: Any = None
    """The "evaluate as" choice (every tool, or one role): what every output of the tab may name."""


def evaluate_tab(eh: StudioHandlers, backend: Backend, *, search: SearchTab, profiles: ProfilesTab,
                 tabs: gr.Tabs) -> EvaluateTab:
    """Lay out the Evaluate tab, the edit-effect panel of the Profiles tab and the share link of the Search tab."""
    settings = [search.controls[name] for name in SETTING_CONTROLS]
    default = eh.studio.default_queries()
    visitor = backend.view()
    choices = [EVERY_TOOL] * visitor.everything + eh.h.role_choices(visitor)
    with gr.Tab("Evaluate", id="evaluate", elem_id="tab-evaluate"):
        state = gr.State({})
        as_role = gr.Dropdown(choices, value=choices[0], label="Evaluate as", elem_id="eval-as-role",
                              info="every tool (the catalog's author), or what one role may use: every section "
                                   "below then names only its tools")
        gr.Markdown("### Labelled requests: does each request find the tools it needs?")
        with gr.Row():
            file = gr.File(label="Labelled requests (YAML, JSON Lines or CSV with query,gold)", type="filepath",
                           file_types=[".yaml", ".yml", ".jsonl", ".json", ".csv"], elem_id="eval-file", height=110)
            with gr.Column():
                source = gr.Markdown(f"Using the catalog's `{default.name}`; upload a file to use yours." if default
                                     else "Upload labelled requests to evaluate.", elem_id="eval-source")
                run = gr.Button("Run evaluation", variant="primary", elem_id="eval-run")
        cards = gr.HTML(elem_id="eval-cards")
        summary = gr.Markdown(elem_id="eval-summary")
        failing = gr.Dataframe(views.failing_table(None)[0], interactive=False, wrap=True, elem_id="eval-failing",
                               column_widths=["34%", "16%", "22%", "8%", "12%", "8%"],
                               label="Failing requests: click one to edit its expected tool in Profiles "
                                     "(with the request as rank query); click “why?” for every signal's score")
        with gr.Accordion("Why? The request's ranking with every signal's score", open=True):
            why_banner = gr.HTML(elem_id="eval-why-banner")
            why = gr.Dataframe(interactive=False, wrap=True, elem_id="eval-why", visible=True)
        gr.Markdown("### Retrievability: can each tool be found by its own example requests? (no labels needed)\n"
                    "Each example is searched with that example left out of its tool's document.")
        with gr.Row():
            scope = gr.Dropdown([ALL_TOOLS, *backend.catalog.categories], value=ALL_TOOLS, label="Check",
                                elem_id="retr-scope")
            check = gr.Button("Check retrievability", variant="primary", elem_id="retr-run")
            export = gr.Button("Download the HTML report", elem_id="report-export")
            report_file = gr.File(label="HTML report (opens offline)", elem_id="report-file", interactive=False,
                                  height=110)
        retr_cards = gr.HTML(elem_id="retr-cards")
        retr_summary = gr.Markdown(elem_id="retr-summary")
        retr_plot = gr.Plot(label="Hardest tools", elem_id="retr-plot")
        tools = gr.Dataframe(views.tools_table(None)[0], interactive=False, wrap=True, elem_id="retr-tools",
                             column_widths=["22%", "8%", "8%", "14%", "26%", "10%", "12%"],
                             label="Tools, hardest first: click one to edit it (its worst example becomes the "
                                   "rank query)")
        confusions = gr.Dataframe(views.confusion_table(None), interactive=False, wrap=True, elem_id="retr-confusions",
                                  column_widths=["18%", "18%", "8%", "8%", "8%", "40%"],
                                  label="Confusion pairs: examples of the expected tool that another tool won")
        estimates = estimate_section()
        gr.Markdown("### Tuning you can see: NDCG@10 over the weights of the text signals")
        with gr.Row():
            step = gr.Dropdown(["0.1", "0.2", "0.25"], value="0.1", label="Grid step", elem_id="tune-step")
            tune = gr.Button("Tune on the labelled requests", elem_id="tune-run")
            apply = gr.Button("Apply to the Search sliders", elem_id="tune-apply")
            save = gr.Button("Save settings YAML", elem_id="tune-save")
            settings_file = gr.File(label="settings YAML (toolrag --settings)", elem_id="tune-file",
                                    interactive=False, height=110)
        tune_summary = gr.Markdown(elem_id="tune-summary")
        with gr.Row():
            tune_plot = gr.Plot(label="Weights", elem_id="tune-plot")
            threshold_plot = gr.Plot(label="No-tool threshold", elem_id="threshold-plot")
        unmatched_section(eh, search)  # real requests from the audit log (toolrag.ui.evaluate_unmatched)
    with _inside(profiles.effect_slot):
        panel = suggestions_panel()
        effect = gr.Markdown(elem_id="edit-effect")
        changes = gr.Dataframe(views.effect_frame(), interactive=False, wrap=True, elem_id="edit-changes",
                               label="Labelled requests this edit moved (regressions first)")
    link = share_link(eh, search)

    opened = [tabs, profiles.tool, profiles.code, profiles.tool_info, profiles.replace, profiles.version,
              profiles.rank_query]
    file.upload(eh.upload, [file, state], [state, source], **PRIVATE)
    file.clear(eh.upload, [file, state], [state, source], **PRIVATE)
    run.click(eh.evaluate, [state, *settings], [cards, summary, failing, state], api_name="evaluate", **STUDIO)
    failing.select(eh.pick_failing, [state, *settings], [why_banner, why, *opened], **PRIVATE)
    check.click(eh.check, [scope, state, *settings], [retr_cards, retr_summary, retr_plot, tools, confusions, state],
                api_name="retrievability", **STUDIO)
    tools.select(eh.pick_tool, [state], opened, **PRIVATE)
    as_role.input(eh.view_as, [as_role, state], [state, as_role], **PRIVATE)
    export.click(eh.export_for, [state, *settings], report_file, api_name="report", **STUDIO)
    tune.click(eh.tune, [step, state, *settings], [tune_summary, tune_plot, threshold_plot, state], api_name="tune",
               **STUDIO)
    apply.click(eh.apply, state, [*(search.controls[f"w_{s}"] for s in SIGNALS), search.controls["no_tool_threshold"],
                                  tune_summary], **PRIVATE)
    save.click(eh.save, state, settings_file, api_name="save_settings")
    added = wire_label_free(eh, estimates, panel, state=state, settings=settings, profiles=profiles, opened=opened)
    for event in [*profiles.saved, *added]:
        event.success(eh.after_edit, [state, profiles.tool, *settings],
                      [effect, changes, cards, summary, failing, state], show_progress_on=[effect], **STUDIO,
                      **PRIVATE)
    return EvaluateTab(state, cards, failing, effect, changes, link, as_role)


@dataclass
class EstimateSection:
    """The Evaluate tab's label-free estimate: its button, cards, summary and table of tools."""

    run: gr.Button
    cards: gr.HTML
    summary: gr.Markdown
    table: gr.Dataframe


@dataclass
class SuggestionsPanel:
    """The Profiles tab's example requests: suggestions of the bank (one click adds one) and the author's own."""

    suggest: gr.Button
    note: gr.Markdown
    table: gr.Dataframe
    query: gr.Textbox
    add: gr.Button
    status: gr.Markdown


def estimate_section() -> EstimateSection:
    """Lay out the estimate of the tools without example requests (inside the Evaluate tab)."""
    gr.Markdown("### Without examples: how findable is each tool from its descriptions alone? (no labels needed)\n"
                "For the tools without example requests (most imported catalogs), each tool's own text and each "
                "sentence of its description (left out of its document) are searched as requests; the estimate "
                "says how likely a real request finds the tool first, which tool it loses to and why.")
    run = gr.Button("Estimate from the descriptions", variant="primary", elem_id="lf-run")
    cards = gr.HTML(views.estimate_cards(None), elem_id="lf-cards")
    summary = gr.Markdown(elem_id="lf-summary")
    table = gr.Dataframe(views.estimate_table(None)[0], interactive=False, wrap=True, elem_id="lf-tools",
                         column_widths=["16%", "8%", "8%", "12%", "30%", "12%", "14%"],
                         label="Tools, at risk first: click one to open it with its suggested example requests")
    return EstimateSection(run, cards, summary, table)


def suggestions_panel() -> SuggestionsPanel:
    """Lay out the example-request panel (inside the Profiles tab, under the editor)."""
    with gr.Accordion("Example requests: suggestions from real requests, or your own", open=True):
        suggest = gr.Button("Suggest example requests for this tool", elem_id="suggest-run")
        note = gr.Markdown(elem_id="suggest-note")
        table = gr.Dataframe(views.suggestion_table(())[0], interactive=False, wrap=True, elem_id="suggest-table",
                             column_widths=["70%", "18%", "12%"],
                             label="Suggested example requests: click one to add it to the tool's examples")
        with gr.Row():
            query = gr.Textbox(label="Or add your own example request", elem_id="example-query", scale=4)
            add = gr.Button("Add example", elem_id="example-add", scale=1)
        status = gr.Markdown(elem_id="suggest-status")
    return SuggestionsPanel(suggest, note, table, query, add, status)


def wire_label_free(eh: StudioHandlers, section: EstimateSection, panel: SuggestionsPanel, *, state: gr.State,
                    settings: list[Any], profiles: ProfilesTab, opened: list[Any]) -> list[Any]:
    """The events of the estimate and of the example panel; returns the events that change the catalog (the
    effect of an edit follows them)."""
    section.run.click(eh.estimate, [state, *settings], [section.cards, section.summary, section.table, state],
                      api_name="label_free", **STUDIO)
    section.table.select(eh.pick_estimate, [state], [*opened, panel.table, panel.note, state], **PRIVATE)
    panel.suggest.click(eh.suggest, [profiles.tool, state, *settings], [panel.table, panel.note, state],
                        api_name="suggest_examples", **STUDIO)
    changed = [panel.status, profiles.code, profiles.tool, profiles.catalog_df, profiles.version]
    rank = [profiles.rank_query] if profiles.rank_query is not None else []
    return [panel.table.select(eh.accept, [state, *rank], changed, **PRIVATE),
            panel.add.click(eh.h.accept_example, [profiles.tool, panel.query, *rank], changed, api_name="add_example")]


@contextlib.contextmanager
def _inside(block: Any) -> Iterator[None]:
    """Add components to a block built earlier (another tab's); its place in the page does not change."""
    parent = block.parent
    with block:
        yield
    block.parent = parent


def share_link(eh: StudioHandlers, search: SearchTab) -> gr.Markdown:
    """The Search tab's link to the last search (its request and settings as URL parameters)."""
    settings = [search.controls[name] for name in SETTING_CONTROLS]
    with _inside(search.tab):
        link = gr.Markdown(elem_id="share-link")
    for event in search.searched:
        event.success(eh.share_link, [search.controls["query"], search.controls["role"],
                                      search.controls["categories"], *settings], link, **PRIVATE)
    return link


def wire_links(eh: StudioHandlers, ready: Any, search: SearchTab, link: gr.Markdown) -> None:
    """Once the page is ready: apply the URL's query parameters to the Search tab, then search (when the link
    gave a request)."""
    settings = [search.controls[name] for name in SETTING_CONTROLS]
    ready.then(eh.apply_link, None, [search.controls[name] for name in LINK_CONTROLS], **PRIVATE).then(
        eh.h.rerun, search.inputs, search.outputs, **PRIVATE).success(
        eh.share_link, [search.controls["query"], search.controls["role"], search.controls["categories"], *settings],
        link, **PRIVATE)
