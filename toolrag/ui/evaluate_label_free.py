"""The label-free part of the studio: the Evaluate tab's estimate of the tools without example requests
(:func:`toolrag.evaluation.label_free`, what ``toolrag report`` estimates) and the Profiles tab's panel of
example requests (suggestions from the bundled bank of real requests, one click adds one; or the author's own).
Handlers translate component values into one :class:`toolrag.ui.studio.Studio` call each; the views come from
:mod:`toolrag.ui.evaluate_format`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from toolrag.evaluation.visibility import estimate_for
from toolrag.ui import evaluate_format as views
from toolrag.ui import evaluate_summary as health
from toolrag.ui.evaluate_handlers import StudioHandlers, _named_settings
from toolrag.ui.guard import guard
from toolrag.ui.tabs import PRIVATE, ProfilesTab

__all__ = ["EstimateSection", "LabelFreeHandlers", "SuggestionsPanel", "estimate_section", "suggestions_panel",
           "wire_label_free"]

#: Long studio jobs take one worker: two people tuning at once must not starve the searches.
STUDIO: dict[str, Any] = {"concurrency_id": "studio", "concurrency_limit": 1}


class LabelFreeHandlers:
    """Handlers of the estimate and of the example-request panel (tested through gradio_client and a browser)."""

    def __init__(self, eh: StudioHandlers) -> None:
        self.eh = eh

    @_named_settings
    @guard
    def estimate(self, progress: gr.Progress = gr.Progress(), state: dict[str, Any] | None = None,  # noqa: B008
                 *controls: Any) -> tuple[Any, ...]:
        """The label-free estimate of the tools without example requests (every tool when all have some)."""
        state = dict(state or {})
        report = self.eh.studio.label_free(self.eh.settings(controls), progress=lambda f, m: progress(f, desc=m))
        seen = self.eh.seen(state)
        if seen is not None:  # a visitor or an "evaluate as" role: only the tools it may see, no hidden rival
            report = estimate_for(report, self.eh.b.require().catalog, seen["codes"])
        frame, records = views.estimate_table(report)
        state["estimates"] = records
        state["facts"] = {**state.get("facts", {}), "estimate": health.estimate_facts(report)}
        return views.estimate_cards(report), views.estimate_summary(report), frame, state

    @guard
    def pick_estimate(self, evt: gr.SelectData, state: dict[str, Any] | None) -> tuple[Any, ...]:
        """A click on an estimated tool opens it in Profiles (the request it lost as rank query) with its
        suggested example requests."""
        records = (state or {}).get("estimates") or []
        row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
        if not 0 <= int(row) < len(records):
            raise gr.Error("that row is gone: estimate again")
        record = records[int(row)]
        frame, queries = views.suggestion_table(record["suggestions"])
        note = (f"{len(queries)} suggested request(s) for `{record['open']}`: click one to add it to the tool's "
                "examples." if queries else f"No suggestion for `{record['open']}` yet: press *Suggest examples*.")
        return (*self.eh.open_tool(record["open"], record["query"], state), frame, note,
                {**(state or {}), "suggested": {"tool": record["open"], "queries": queries}})

    @_named_settings
    @guard
    def suggest(self, tool_id: str | None = None, state: dict[str, Any] | None = None,
                *controls: Any) -> tuple[Any, ...]:
        """Example requests of the bank of real requests that the search would send to the selected tool."""
        if not tool_id:
            raise gr.Error("pick a tool first")
        found = self.eh.studio.suggestions(tool_id, self.eh.settings(controls))
        frame, queries = views.suggestion_table(found)
        note = (f"{len(queries)} suggested request(s) for `{tool_id}` (real requests written for other catalogs "
                "that the search would call this tool for): click one to add it to the tool's examples."
                if queries else f"No request of the bank is close enough to `{tool_id}` for the search to call it.")
        return frame, note, {**(state or {}), "suggested": {"tool": tool_id, "queries": queries}}

    def accept(self, evt: gr.SelectData, state: dict[str, Any] | None, rank_query: str | None = None,
               oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """One click on a suggested request adds it to the tool's examples (``extra_examples.yaml``; who may
        edit is checked as for a save)."""
        suggested = (state or {}).get("suggested") or {}
        queries = suggested.get("queries") or []
        row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
        if not 0 <= int(row) < len(queries):
            raise gr.Error("that suggestion is gone: suggest again")
        return self.eh.h.accept_example(suggested["tool"], queries[int(row)], rank_query, None, oauth)


@dataclass
class EstimateSection:
    """The Evaluate tab's label-free estimate: its button, summary (one line before it has content), and the cards
    and table of tools in ``box`` (hidden until then)."""

    run: gr.Button
    cards: gr.HTML
    summary: gr.Markdown
    table: gr.Dataframe
    box: gr.Column


@dataclass
class SuggestionsPanel:
    """The Profiles tab's example requests: suggestions of the bank (one click adds one) and the author's own."""

    suggest: gr.Button
    note: gr.Markdown
    table: gr.Dataframe
    query: gr.Textbox
    add: gr.Button
    status: gr.Markdown


def estimate_section(placeholder: str) -> EstimateSection:
    """Lay out the estimate of the tools without example requests (inside the Evaluate tab); ``placeholder``:
    the line it shows before the first estimate (:func:`toolrag.ui.evaluate_summary.estimate_placeholder`)."""
    gr.Markdown("### Without examples: how findable is each tool from its descriptions alone? (no labels needed)\n"
                "For the tools without example requests (most imported catalogs), each tool's own text and each "
                "sentence of its description (left out of its document) are searched as requests; the estimate "
                "says how likely a real request finds the tool first, which tool it loses to and why.",
                elem_id=health.SECTIONS["estimate"])
    run = gr.Button("Estimate from the descriptions", variant="primary", elem_id="lf-run")
    summary = gr.Markdown(placeholder, elem_id="lf-summary")
    with gr.Column(visible=False) as box:
        cards = gr.HTML(views.estimate_cards(None), elem_id="lf-cards")
        table = gr.Dataframe(views.estimate_table(None)[0], interactive=False, wrap=True, elem_id="lf-tools",
                             column_widths=["16%", "8%", "8%", "12%", "30%", "12%", "14%"],
                             label="Tools, at risk first: click one to open it with its suggested example requests")
    return EstimateSection(run, cards, summary, table, box)


def suggestions_panel() -> SuggestionsPanel:
    """Lay out the example-request panel (inside the Profiles tab, under the editor)."""
    with gr.Accordion("Example requests: suggestions from real requests, or your own", open=True):
        suggest = gr.Button("Suggest example requests for this tool", elem_id="suggest-run")
        note = gr.Markdown("Pick a tool, then press the button: real requests (written for other catalogs) that the "
                           "search would call it for appear here, one click adds one.", elem_id="suggest-note")
        table = gr.Dataframe(views.suggestion_table(())[0], interactive=False, wrap=True, elem_id="suggest-table",
                             column_widths=["70%", "18%", "12%"], visible=False,
                             label="Suggested example requests: click one to add it to the tool's examples")
        with gr.Row():
            query = gr.Textbox(label="Or add your own example request", elem_id="example-query", scale=4)
            add = gr.Button("Add example", elem_id="example-add", scale=1)
        status = gr.Markdown(elem_id="suggest-status")
    return SuggestionsPanel(suggest, note, table, query, add, status)


def wire_label_free(lf: LabelFreeHandlers, section: EstimateSection, panel: SuggestionsPanel, *, state: gr.State,
                    settings: list[Any], profiles: ProfilesTab, opened: list[Any]
                    ) -> tuple[Any, list[Any], list[Any]]:
    """The events of the estimate and of the example panel; returns the estimate's event, the events that show
    suggestions, and the events that change the catalog (the effect of an edit follows them)."""
    estimated = section.run.click(lf.estimate, [state, *settings],
                                  [section.cards, section.summary, section.table, state], api_name="label_free",
                                  **STUDIO)
    suggested = [section.table.select(lf.pick_estimate, [state], [*opened, panel.table, panel.note, state],
                                      **PRIVATE),
                 panel.suggest.click(lf.suggest, [profiles.tool, state, *settings], [panel.table, panel.note, state],
                                     api_name="suggest_examples", **STUDIO)]
    changed = [panel.status, profiles.code, profiles.tool, profiles.catalog_df, profiles.version]
    rank = [profiles.rank_query] if profiles.rank_query is not None else []
    return estimated, suggested, [panel.table.select(lf.accept, [state, *rank], changed, **PRIVATE),
                       panel.add.click(lf.eh.h.accept_example, [profiles.tool, panel.query, *rank], changed,
                                       api_name="add_example")]
