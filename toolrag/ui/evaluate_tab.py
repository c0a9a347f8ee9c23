"""The Evaluate tab (the tool author's studio), the effect of an edit in the Profiles tab, and links to one
search. Built by :func:`evaluate_tab` and :func:`wire_links`, called from :func:`toolrag.ui.app.create_app`.

The tab opens with the catalog's health (:mod:`toolrag.ui.evaluate_health`): a row of figures, each linking to
its section, and one button that runs every check that needs no upload. The sections follow in that order:
every tool's retrievability from its own examples (no labels needed; the HTML report of ``toolrag report``
exports from there), the findability of the tools without examples estimated from their descriptions alone
(:mod:`toolrag.ui.evaluate_label_free`), the labelled requests (the catalog's ``queries.yaml``, or an uploaded
YAML, JSON Lines or CSV file) with metric cards and the failing requests (a click opens the expected tool in
Profiles with the request as rank query; the last column explains the ranking), the text weights tuned with the
plots of ``toolrag tune``, and the unmatched requests of the audit log (:mod:`toolrag.ui.evaluate_unmatched`).
Every check runs with the Search tab's settings. Before a section has content it says in one line what fills
it; its tables and plots appear with their data. The Profiles tab gains the suggested example requests of a
tool, each added to its examples in one click.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from toolrag.signals import SIGNALS
from toolrag.ui import evaluate_format as views
from toolrag.ui import evaluate_summary as health
from toolrag.ui.backend import Backend
from toolrag.ui.deeplink import LINK_CONTROLS
from toolrag.ui.evaluate_handlers import ALL_TOOLS, EVERY_TOOL, SETTING_CONTROLS, StudioHandlers
from toolrag.ui.evaluate_health import HealthHandlers
from toolrag.ui.evaluate_label_free import (
    STUDIO,
    LabelFreeHandlers,
    estimate_section,
    suggestions_panel,
    wire_label_free,
)
from toolrag.ui.evaluate_unmatched import UnmatchedHandlers, unmatched_section
from toolrag.ui.tabs import PRIVATE, ProfilesTab, SearchTab

__all__ = ["EvaluateTab", "evaluate_tab", "share_link", "wire_links"]


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
    refresh: tuple[Any, list[Any], list[Any]] = field(default_factory=lambda: (None, [], []))
    """(function, inputs, outputs) that redraws the summary and shows the parts that have content."""
    file: Any = None
    """The upload of labelled requests, opened by the page load (see :func:`toolrag.ui.app.create_app`)."""


def evaluate_tab(eh: StudioHandlers, backend: Backend, *, search: SearchTab, profiles: ProfilesTab,
                 tabs: gr.Tabs) -> EvaluateTab:
    """Lay out the Evaluate tab, the edit-effect panel of the Profiles tab and the share link of the Search tab."""
    settings = [search.controls[name] for name in SETTING_CONTROLS]
    visitor = backend.view()
    choices = [EVERY_TOOL] * visitor.everything + eh.h.role_choices(visitor)
    lf, uh = LabelFreeHandlers(eh), UnmatchedHandlers(eh)
    hh = HealthHandlers(eh, lf, uh)
    catalog = hh.catalog_facts(None)
    with gr.Tab("Evaluate", id="evaluate", elem_id="tab-evaluate"):
        state = gr.State({})
        with gr.Row(equal_height=True):
            as_role = gr.Dropdown(choices, value=choices[0], label="Evaluate as", elem_id="eval-as-role", scale=3,
                                  info="every tool (the catalog's author), or what one role may use: every section "
                                       "below then names only its tools")
            run_all = gr.Button(health.RUN_ALL, variant="primary", elem_id="eval-all", scale=1, min_width=160)
        summary_html = gr.HTML(health.health_summary(catalog, {}), elem_id="eval-health")
        gr.Markdown("### Retrievability: can each tool be found by its own example requests? (no labels needed)\n"
                    "Each example is searched with that example left out of its tool's document.",
                    elem_id=health.SECTIONS["retrievability"])
        with gr.Row():
            scope = gr.Dropdown([ALL_TOOLS, *backend.catalog.categories], value=ALL_TOOLS, label="Check",
                                elem_id="retr-scope")
            check = gr.Button("Check retrievability", variant="primary", elem_id="retr-run")
            export = gr.Button("Download the HTML report", elem_id="report-export")
            report_file = gr.File(label="HTML report (opens offline)", elem_id="report-file", interactive=False,
                                  height=110, visible=False)
        retr_summary = gr.Markdown(health.NOT_CHECKED, elem_id="retr-summary")
        with gr.Column(visible=False) as retr_box:
            retr_cards = gr.HTML(elem_id="retr-cards")
            retr_plot = gr.Plot(label="Hardest tools", elem_id="retr-plot", visible=False)
            tools = gr.Dataframe(views.tools_table(None)[0], interactive=False, wrap=True, elem_id="retr-tools",
                                 column_widths=["22%", "8%", "8%", "14%", "26%", "10%", "12%"],
                                 label="Tools, hardest first: click one to edit it (its worst example becomes the "
                                       "rank query)")
            confusions = gr.Dataframe(views.confusion_table(None), interactive=False, wrap=True, visible=False,
                                      elem_id="retr-confusions", column_widths=["18%", "18%", "8%", "8%", "8%", "40%"],
                                      label="Confusion pairs: examples of the expected tool that another tool won")
        estimates = estimate_section(health.estimate_placeholder(catalog))
        gr.Markdown("### Labelled requests: does each request find the tools it needs?",
                    elem_id=health.SECTIONS["labelled"])
        with gr.Row():
            # Opened for uploads by the page load once it has set this session's view (app.py, view_as): an
            # upload before that was lost, the load writing back the session state it had read before the upload.
            file = gr.File(label="Labelled requests (YAML, JSON Lines or CSV with query,gold)", type="filepath",
                           file_types=[".yaml", ".yml", ".jsonl", ".json", ".csv"], elem_id="eval-file", height=110,
                           interactive=False)
            with gr.Column():
                default = eh.studio.default_queries()
                source = gr.Markdown(f"Using the catalog's `{default.name}`; upload a file to use yours." if default
                                     else "Upload labelled requests to evaluate.", elem_id="eval-source")
                run = gr.Button("Run evaluation", variant="primary", elem_id="eval-run")
        summary = gr.Markdown(health.labelled_placeholder(default.name if default else None), elem_id="eval-summary")
        with gr.Column(visible=False) as eval_box:
            cards = gr.HTML(elem_id="eval-cards")
            with gr.Column(visible=False) as failing_box:
                failing = gr.Dataframe(views.failing_table(None)[0], interactive=False, wrap=True,
                                       elem_id="eval-failing", column_widths=["34%", "16%", "22%", "8%", "12%", "8%"],
                                       label="Failing requests: click one to edit its expected tool in Profiles "
                                             "(with the request as rank query); click “why?” for every signal's score")
                with gr.Accordion("Why? The request's ranking with every signal's score", open=True):
                    why_banner = gr.HTML("Click “why?” in a failing request's row: its ranking, with every signal's "
                                         "score, appears here.", elem_id="eval-why-banner")
                    why = gr.Dataframe(interactive=False, wrap=True, elem_id="eval-why", visible=False)
        gr.Markdown("### Tuning you can see: NDCG@10 over the weights of the text signals",
                    elem_id=health.SECTIONS["tuning"])
        with gr.Row():
            step = gr.Dropdown(["0.1", "0.2", "0.25"], value="0.1", label="Grid step", elem_id="tune-step")
            tune = gr.Button("Tune on the labelled requests", elem_id="tune-run")
            apply = gr.Button("Apply to the Search sliders", elem_id="tune-apply")
            save = gr.Button("Save settings YAML", elem_id="tune-save")
            settings_file = gr.File(label="settings YAML (toolrag --settings)", elem_id="tune-file",
                                    interactive=False, height=110, visible=False)
        tune_summary = gr.Markdown(health.NOT_TUNED, elem_id="tune-summary")
        with gr.Row(visible=False) as tune_row:
            tune_plot = gr.Plot(label="Weights", elem_id="tune-plot")
            threshold_plot = gr.Plot(label="Decision operating point", elem_id="threshold-plot", visible=False)
        unmatched = unmatched_section(uh, search)  # real requests from the audit log
    with _inside(profiles.effect_slot):
        panel = suggestions_panel()
        effect = gr.Markdown(elem_id="edit-effect")
        changes = gr.Dataframe(views.effect_frame(), interactive=False, wrap=True, elem_id="edit-changes",
                               visible=False, label="Labelled requests this edit moved (regressions first)")
    link = share_link(eh, search)

    shown = [retr_box, retr_plot, confusions, estimates.box, eval_box, failing_box, tune_row, threshold_plot,
             unmatched.box, changes, panel.table]
    refresh = (hh.refresh, [state, unmatched.state], [summary_html, *shown])
    opened = [tabs, profiles.tool, profiles.code, profiles.tool_info, profiles.replace, profiles.version,
              profiles.rank_query]
    events = [file.upload(eh.upload, [file, state], [state, source], **PRIVATE),
              file.clear(eh.upload, [file, state], [state, source], **PRIVATE),
              run.click(eh.evaluate, [state, *settings], [cards, summary, failing, state], api_name="evaluate",
                        **STUDIO),
              check.click(eh.check, [scope, state, *settings],
                          [retr_cards, retr_summary, retr_plot, tools, confusions, state], api_name="retrievability",
                          **STUDIO),
              as_role.input(eh.view_as, [as_role, state], [state, as_role], **PRIVATE),
              tune.click(eh.tune, [step, state, *settings], [tune_summary, tune_plot, threshold_plot, state],
                         api_name="tune", **STUDIO),
              unmatched.shown,
              run_all.click(hh.run_all, [state, unmatched.state, unmatched.below, *settings],
                            [retr_cards, retr_summary, retr_plot, tools, confusions, estimates.cards,
                             estimates.summary, estimates.table, cards, summary, failing, unmatched.summary,
                             unmatched.table, state, unmatched.state], **STUDIO, **PRIVATE)]
    failing.select(eh.pick_failing, [state, *settings], [why_banner, why, *opened], **PRIVATE)
    tools.select(eh.pick_tool, [state], opened, **PRIVATE)
    export.click(eh.export_for, [state, *settings], report_file, api_name="report", **STUDIO).success(
        lambda: gr.update(visible=True), None, report_file, **PRIVATE)
    apply.click(eh.apply, state, [*(search.controls[f"w_{s}"] for s in SIGNALS), search.controls["precision_target"],
                                  tune_summary], **PRIVATE)
    save.click(eh.save, state, settings_file, api_name="save_settings").success(
        lambda: gr.update(visible=True), None, settings_file, **PRIVATE)
    estimated, suggested, added = wire_label_free(lf, estimates, panel, state=state, settings=settings,
                                                  profiles=profiles, opened=opened)
    events += [estimated, *suggested]
    for event in [*profiles.saved, *added]:
        events.append(event.success(eh.after_edit, [state, profiles.tool, *settings],
                                    [effect, changes, cards, summary, failing, state], show_progress_on=[effect],
                                    **STUDIO, **PRIVATE))
    for event in events:
        event.then(*refresh, show_progress="hidden", **PRIVATE)
    return EvaluateTab(state, cards, failing, effect, changes, link, as_role, refresh, file)


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
    with _inside(search.share_slot):
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
