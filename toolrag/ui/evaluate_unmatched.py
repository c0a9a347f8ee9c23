"""The "Unmatched requests" part of the Evaluate tab: real requests from the audit log that found no tool, were
asked about, or were called with a P(right) below the author's threshold, grouped by the tool each came closest
to (:mod:`toolrag.evaluation.unmatched`, what ``toolrag audit --unmatched`` prints). A click picks one; one
button labels it, as a row of the catalog's labelled requests (``queries.yaml``) or as an example of a tool
(through the catalog editor), and shows what the label changed: the evaluation re-run (metric cards with the
change, the new row's outcome), or for an example the edit's effect on every labelled request and on the
tool's retrievability, as after a save in Profiles. The section says when the log keeps only hashes of the
requests (``TOOLRAG_AUDIT_REQUESTS=hash``). It exists only where the Evaluate tab does (an editing instance):
real requests are the users' words, never shown on a read-only demo.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from toolrag.config import audit_hashes_requests, env
from toolrag.env_vars import AUDIT_LOG_ENV, AUDIT_REQUESTS_ENV
from toolrag.errors import QueryError, SettingsError, ToolragError
from toolrag.evaluation.changes import gold_rank, is_failing
from toolrag.evaluation.queries import load_queries
from toolrag.evaluation.unmatched import UnmatchedReport, add_example, add_labelled_query, read_unmatched
from toolrag.search.results import Decision
from toolrag.ui import evaluate_format as views
from toolrag.ui import evaluate_summary as health
from toolrag.ui.evaluate_handlers import SETTING_CONTROLS, StudioHandlers, _named_settings
from toolrag.ui.guard import guard
from toolrag.ui.studio import DEFAULT_QUERIES
from toolrag.ui.tabs import PRIVATE, SearchTab

__all__ = ["AS_EXAMPLE", "AS_QUERY", "NO_TOOL_LABEL", "UnmatchedHandlers", "UnmatchedSection", "unmatched_section",
           "unmatched_table"]

AS_QUERY = "a labelled request (queries.yaml)"
AS_EXAMPLE = "an example of the tool"
NO_TOOL_LABEL = "(no tool: answer directly)"
_COLUMNS = ["nearest tool", "request", "why", "count", "role", "labelled"]


def unmatched_table(report: UnmatchedReport | None, labelled: set[str] | None = None
                    ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """One row per distinct request, grouped by nearest tool (most requests first), and what a click needs."""
    rows, records = [], []
    for group in report.groups if report is not None else ():
        for r in group.requests:
            done = r.text is not None and labelled is not None and r.text in labelled
            rows.append([group.tool_id or "(none)", r.label, r.why, r.count, r.role or "", "yes" if done else ""])
            records.append({"text": r.text, "nearest": group.tool_id, "role": r.role, "decision": r.decision})
    return pd.DataFrame(rows, columns=_COLUMNS), records


class UnmatchedHandlers:
    """Handlers of the Unmatched requests section (tested directly and through a real browser)."""

    def __init__(self, eh: StudioHandlers) -> None:
        self.eh, self.studio, self.b = eh, eh.studio, eh.b

    def log_path(self) -> Path | None:
        """The audit log this app writes (its retriever's), else the one ``TOOLRAG_AUDIT_LOG`` names."""
        audit = self.b.require().audit if self.b.ready else None
        if audit is not None:
            return Path(audit.path)
        named = env(AUDIT_LOG_ENV)
        return Path(named).expanduser() if named else None

    def redacted(self) -> bool:
        """Whether this app's audit log keeps only hashes of the requests."""
        audit = self.b.require().audit if self.b.ready else None
        return bool(audit.hash_requests) if audit is not None else audit_hashes_requests()

    def queries_file(self) -> Path:
        """The catalog's labelled requests (created beside the catalog on the first label)."""
        found = self.studio.default_queries()
        if found is not None:
            return found
        path = self.b.catalog_path
        if path is None:
            raise ToolragError("this playground serves a published index without its catalog folder: label requests "
                               "where the folder is")
        return (path if path.is_dir() else path.parent) / DEFAULT_QUERIES

    def _labelled(self) -> set[str]:
        texts = {e.query for t in self.b.require().catalog for e in t.examples}
        file = self.studio.default_queries()
        if file is not None:
            with contextlib.suppress(QueryError):  # a broken file is reported by the evaluation itself
                texts |= {row.query for row in load_queries(file)}
        return texts

    @guard
    def show(self, below: float, state: dict[str, Any] | None, request: gr.Request | None = None,
             oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """The unmatched requests of the app's audit log (P(right) below ``below`` counts too; 0 turns it off).
        Where the app is shared, only for a signed-in editor: they are users' own words and name any tool (and
        labelling one, which needs them, writes to the catalog)."""
        view = self.eh.h.view(request, oauth)
        if not view.everything:
            raise gr.Error(f"the unmatched requests are shown to the catalog's editors only ({view.who})")
        state = dict(state or {})
        path = self.log_path()
        if path is None:
            raise SettingsError(f"no audit log: start the app with {AUDIT_LOG_ENV}=FILE so its searches (and your "
                                "agents') are logged, then look here again")
        audit = self.b.require().audit if self.b.ready else None
        if audit is not None:
            audit.flush()  # what this app searched a moment ago is in the file
        threshold = float(below) if below else None
        report = read_unmatched(path, below=threshold)
        frame, records = unmatched_table(report, self._labelled())
        state["unmatched"] = records
        state["facts"] = {"unmatched": health.unmatched_facts(report, path.name)}
        note = ""
        if self.redacted() or report.redacted:
            note = (f"\n\n**Request text is redacted** in this audit log ({AUDIT_REQUESTS_ENV}=hash keeps only each "
                    "request's SHA-256): requests are grouped and counted, but cannot be read or labelled.")
        return f"`{path.name}`: {report.summary()}.{note}", frame, state

    @guard
    def pick(self, evt: gr.SelectData, state: dict[str, Any] | None) -> tuple[Any, ...]:
        """A click on a request: it becomes the one to label, its nearest tool the proposed label."""
        records = (state or {}).get("unmatched") or []
        row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
        if not 0 <= int(row) < len(records):
            raise gr.Error("that row is gone: show the unmatched requests again")
        record = records[int(row)]
        state = {**(state or {}), "picked": record}
        if record["text"] is None:
            return "This request is redacted (only its hash is logged): it cannot be labelled.", gr.skip(), state
        text = f"**Label:** {record['text']}" + (f" (role {record['role']})" if record["role"] else "")
        return text, gr.update(value=record["nearest"] or NO_TOOL_LABEL), state

    @_named_settings
    @guard
    def label(self, progress: gr.Progress = gr.Progress(), how: str = AS_QUERY,  # noqa: B008
              tool: str | None = None, state: dict[str, Any] | None = None, *controls: Any) -> tuple[Any, ...]:
        """Label the picked request and show what it changed."""
        state = dict(state or {})
        record = state.get("picked")
        if not record:
            raise gr.Error("pick a request in the table first")
        if record["text"] is None:
            raise gr.Error("this request is redacted (only its hash is logged): it cannot be labelled")
        settings = self.eh.settings(controls)
        say = lambda f, m: progress(f, desc=m)  # noqa: E731
        if not tool or tool == NO_TOOL_LABEL:
            tool = None
        if how == AS_EXAMPLE:
            if tool is None:
                raise gr.Error("an example belongs to a tool: pick the tool, or label the request as needing none")
            self.studio.remember()  # the edit is compared with the index as it is now
            add_example(self.b.require_editor(), tool, record["text"])
            queries = self.studio.default_queries()
            rows = load_queries(queries) if queries is not None else []
            effect = self.studio.effect(rows, settings, tool, progress=say)
            text = f"✓ Added as an example of `{tool}`.\n\n" + views.effect_text(effect)
            frame = views.effect_frame(effect)
            state["moved"] = len(frame)
            return text, gr.skip(), frame, state
        file = self.queries_file()
        before = self.studio.evaluate(load_queries(file), settings, progress=lambda f, m: say(0.4 * f, m)) \
            if file.exists() else None
        add_labelled_query(file, record["text"], gold=[tool] if tool else [],
                           expect=Decision.EXECUTE if tool else Decision.NO_TOOL, role=record["role"],
                           catalog_tools=[t.id for t in self.b.require().catalog])
        after = self.studio.evaluate(load_queries(file), settings, progress=lambda f, m: say(0.4 + 0.6 * f, m))
        new = after.per_query[-1]
        rank = gold_rank(new)
        outcome = ("passes" if not is_failing(new) else "fails") + f": {new.decision.value}" + (
            f", expected tool at #{rank}" if new.row.gold else "") + (" (not returned)" if new.row.gold and not rank
                                                                     else "")
        text = (f"✓ Added to `{file.name}` ({after.n_queries} labelled requests); the new row {outcome}. "
                "The cards show the evaluation re-run, with the change since before the label.")
        cards = views.metric_cards(after.metrics, before.metrics if before is not None else None)
        state["moved"] = 0
        return text, cards, views.effect_frame(), state


@dataclass
class UnmatchedSection:
    """The section's components and handlers that the Evaluate tab's summary and "run every check" use."""

    uh: UnmatchedHandlers
    state: gr.State
    below: gr.Slider
    summary: gr.Markdown
    table: gr.Dataframe
    box: gr.Column
    shown: Any
    """The event of the *Show unmatched requests* button."""


def unmatched_section(uh: UnmatchedHandlers, search: SearchTab) -> UnmatchedSection:
    """Lay out the section (inside the Evaluate tab) and wire its events. Before the log is read, the section is
    one line saying what fills it; the table and the labelling controls appear with the first requests."""
    eh = uh.eh
    settings = [search.controls[name] for name in SETTING_CONTROLS]
    visitor = eh.b.view()  # the page lists only what a visitor may see (every tool locally)
    tools = [t.id for t in visitor.catalog(eh.b.catalog) if not t.deprecated]
    log = uh.log_path()
    gr.Markdown("### Unmatched requests: what real users asked that found no tool (from the audit log)",
                elem_id=health.SECTIONS["unmatched"])
    state = gr.State({})
    with gr.Row():
        below = gr.Slider(0.0, 1.0, value=0.5, step=0.05, label="also list calls with P(right) below (0: off)",
                          elem_id="unmatched-below")
        show = gr.Button("Show unmatched requests", variant="primary", elem_id="unmatched-run")
    summary = gr.Markdown(health.unmatched_placeholder(log.name if log else None), elem_id="unmatched-summary")
    with gr.Column(visible=False) as box:
        table = gr.Dataframe(unmatched_table(None)[0], interactive=False, wrap=True, elem_id="unmatched-table",
                             column_widths=["22%", "40%", "12%", "8%", "10%", "8%"],
                             label="By nearest tool: click a request to label it")
        picked = gr.Markdown("Click a request to label it.", elem_id="unmatched-picked")
        with gr.Row():
            how = gr.Radio([AS_QUERY, AS_EXAMPLE], value=AS_QUERY, label="Label it as", elem_id="unmatched-how")
            tool = gr.Dropdown([NO_TOOL_LABEL, *tools], value=NO_TOOL_LABEL, label="The tool it needs",
                               elem_id="unmatched-tool", allow_custom_value=not visitor.everything)
            apply = gr.Button("Label it", elem_id="unmatched-label")
        result = gr.Markdown(elem_id="unmatched-result")
        cards = gr.HTML(elem_id="unmatched-cards")
        changes = gr.Dataframe(views.effect_frame(), interactive=False, wrap=True, elem_id="unmatched-changes",
                               visible=False, label="Labelled requests the label moved (an example changes the index)")
    shown = show.click(uh.show, [below, state], [summary, table, state], api_name="unmatched")
    table.select(uh.pick, state, [picked, tool, state], **PRIVATE)
    apply.click(uh.label, [how, tool, state, *settings], [result, cards, changes, state],
                concurrency_id="studio", concurrency_limit=1, **PRIVATE).success(
        lambda st: gr.update(visible=bool(st.get("moved"))), state, changes, **PRIVATE)
    return UnmatchedSection(uh, state, below, summary, table, box, shown)
