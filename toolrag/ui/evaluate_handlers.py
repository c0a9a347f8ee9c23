"""Handlers of the Evaluate tab, of an edit's effect and of links to one search.

Each translates component values into one call of :class:`toolrag.ui.studio.Studio` (the library's
evaluation, retrievability and tuning) and its result into views of :mod:`toolrag.ui.evaluate_format`.
Settings come from the Search tab's controls, so what is evaluated is what the sliders search with.
Per-session values are a small dict in ``gr.State``: the uploaded file's path, the last metrics (for the
change since the previous run) and the rows of the tables a click refers to.
"""

from __future__ import annotations

import functools
import inspect
import logging
import shutil
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import gradio as gr

from toolrag.errors import ToolragError
from toolrag.evaluation.evaluator import Evaluator
from toolrag.evaluation.figures import retrievability_figure, threshold_figure, tuning_figure
from toolrag.evaluation.html_report import render_html
from toolrag.evaluation.queries import QueryRow
from toolrag.evaluation.report import report_for
from toolrag.evaluation.tune import save_settings
from toolrag.evaluation.visibility import retrievability_for, visible_rows
from toolrag.files import write_atomic
from toolrag.settings import Settings
from toolrag.signals import SIGNALS
from toolrag.ui import evaluate_format as views
from toolrag.ui import evaluate_summary as health
from toolrag.ui import format as fmt
from toolrag.ui.backend import View
from toolrag.ui.deeplink import LINK_CONTROLS, link_query, parse_link
from toolrag.ui.guard import guard
from toolrag.ui.handlers import Handlers
from toolrag.ui.studio import Studio

__all__ = ["ALL_TOOLS", "EVERY_TOOL", "SETTING_CONTROLS", "StudioHandlers"]

log = logging.getLogger(__name__)
#: The Search controls that make the settings, in the order the handlers receive them.
SETTING_CONTROLS = ("top_k", "fusion", "rerank", "precision_target", "clean_target", "normalization",
                    *(f"w_{s}" for s in SIGNALS))
#: The retrievability scope that checks every tool.
ALL_TOOLS = "all tools"
#: The "evaluate as" choice of the catalog's author: every tool, every labelled request.
EVERY_TOOL = "every tool (author)"
F = TypeVar("F", bound=Callable[..., Any])


def _named_settings(fn: F) -> F:
    """Name the ``*controls`` of a handler after :data:`SETTING_CONTROLS` in its signature, so its API endpoint
    lists ``top_k``, ``fusion``, ... ``w_clip`` (gradio reads parameter names from the signature)."""
    sig = inspect.signature(fn)
    fixed = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_POSITIONAL]
    named = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
             for name in SETTING_CONTROLS]

    @functools.wraps(fn)
    def wrapper(*args: Any) -> Any:
        return fn(*args)

    wrapper.__signature__ = sig.replace(parameters=[*fixed, *named])  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


class StudioHandlers:
    """Event handlers of the tool author's studio (tested directly and through a real browser)."""

    def __init__(self, handlers: Handlers, studio: Studio) -> None:
        self.h, self.studio, self.b = handlers, studio, handlers.b
        self._out: Path | None = None

    def _download(self, name: str) -> Path:
        """A fresh path named ``name`` for one download, so two sessions never hand out the same file. The
        handlers' folder is made on the first download and removed with them (or at exit): an app started and
        stopped leaves nothing in the temporary folder."""
        if self._out is None:
            self._out = Path(tempfile.mkdtemp(prefix="toolrag-studio-"))
            weakref.finalize(self, shutil.rmtree, self._out, ignore_errors=True)
        return Path(tempfile.mkdtemp(dir=self._out)) / name

    # ------------------------------------------------------------------------------------------ helpers

    def settings(self, values: tuple[Any, ...]) -> Settings:
        """Settings from the Search controls (in :data:`SETTING_CONTROLS` order)."""
        named = dict(zip(SETTING_CONTROLS, values, strict=True))
        return fmt.build_settings(self.b.require().settings, fusion=named["fusion"], top_k=named["top_k"],
                                  rerank=named["rerank"], precision_target=named["precision_target"],
                                  clean_target=named["clean_target"],
                                  normalization=named["normalization"],
                                  weights={s: named[f"w_{s}"] for s in SIGNALS})

    def _rows(self, state: dict[str, Any] | None) -> tuple[list[QueryRow], str]:
        """The session's labelled rows, only those its "evaluate as" choice may see (see :meth:`view_as`)."""
        rows, name = self.studio.rows((state or {}).get("file"))
        seen = self.seen(state)
        if seen is None:
            return rows, name
        return visible_rows(rows, self.b.require().catalog, seen["codes"], role=seen["role"],
                            permissions=seen["permissions"]), name

    def seen(self, state: dict[str, Any] | None) -> dict[str, Any] | None:
        """What this session's outputs may name: ``None`` for every tool, else ``codes`` (and the ``role`` and
        ``permissions`` rows naming neither are searched with). Set by :meth:`view_as` from the caller's
        sign-in; a session that never set it (an API call) gets what a visitor who did not sign in sees."""
        stored = (state or {}).get("view")
        if stored is None:
            visitor = self.b.view()
            return None if visitor.codes is None else {"codes": visitor.codes, "role": None,
                                                       "permissions": sorted(visitor.codes), "who": visitor.who}
        return None if stored["codes"] is None else {**stored, "codes": frozenset(stored["codes"])}

    def view_for(self, state: dict[str, Any] | None) -> View:
        """The tools this session's outputs may name, as a :class:`View` (see :meth:`seen`)."""
        seen = self.seen(state)
        return View(None, "the catalog's author") if seen is None else View(seen["codes"], seen["who"])

    def view_as(self, as_role: str | None, state: dict[str, Any] | None, request: gr.Request | None = None,
                oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """The "evaluate as" choice: every tool (for whoever may see every tool: the local playground, an
        editor) or one role; the choices are what the caller's sign-in holds."""
        view = self.h.view(request, oauth)
        choices = [EVERY_TOOL] * view.everything + self.h.role_choices(view)
        public = self.b.access.public_role
        chosen = as_role if as_role in choices else choices[0] if view.everything else (
            public if public in choices else fmt.GUEST)
        catalog = self.b.catalog if not self.b.ready else self.b.require().catalog
        if chosen == EVERY_TOOL:
            seen: dict[str, Any] = {"codes": None, "role": None, "permissions": None, "who": view.who}
        elif chosen == fmt.GUEST:
            seen = {"codes": [], "role": None, "permissions": None, "who": "a caller without permissions"}
        else:
            seen = {"codes": sorted(catalog.role_codes(chosen)), "role": chosen, "permissions": None,
                    "who": f"role {chosen!r}"}
        state = dict(state or {})
        if (state.get("view") or {}).get("codes") != seen["codes"]:
            state.pop("facts", None)  # the summary's figures were for other tools: check again for these
        return {**state, "view": seen}, gr.update(choices=choices, value=chosen)

    def open_tool(self, tool_id: str | None, query: str, state: dict[str, Any] | None) -> tuple[Any, ...]:
        """Open ``tool_id`` in the Profiles tab with ``query`` as the rank query."""
        if not tool_id or self.b.require().catalog.get(tool_id) is None:
            raise gr.Error(f"no tool {tool_id!r} to open in this catalog")
        code, info, replace, version = self.h.profile(tool_id, self.view_for(state))
        return (gr.Tabs(selected="profiles"), gr.update(value=tool_id), code, info, replace, version, query)

    # ----------------------------------------------------------------------------------------- evaluate

    @guard
    def upload(self, file: str | None, state: dict[str, Any] | None) -> tuple[Any, ...]:
        """Check an uploaded file of labelled requests at once (a bad row is named) and remember it."""
        state = {**(state or {}), "file": file or None}
        rows, name = self._rows(state)
        return state, f"**{len(rows)}** labelled requests from `{name}`. Press *Run evaluation*."

    @_named_settings
    @guard
    def evaluate(self, progress: gr.Progress = gr.Progress(), state: dict[str, Any] | None = None,  # noqa: B008
                 *controls: Any) -> tuple[Any, ...]:
        """Every labelled request through the search; metric cards with the change since the last run, and
        the failing requests."""
        state = dict(state or {})
        rows, name = self._rows(state)
        report = self.studio.evaluate(rows, self.settings(controls), progress=lambda f, m: progress(f, desc=m))
        frame, records = views.failing_table(report)
        previous = state.get("metrics")
        state.update(metrics=dict(report.metrics), failing=records,
                     facts={**state.get("facts", {}), "labelled": health.labelled_facts(report, name, len(records))})
        summary = (f"{report.n_queries} labelled requests from `{name}` · **{len(records)} failing** (a gold tool "
                   f"not first, or the wrong decision)" + (" · change since your previous run in small figures"
                                                           if previous else ""))
        return views.metric_cards(report.metrics, previous), summary, frame, state

    @_named_settings
    @guard
    def pick_failing(self, evt: gr.SelectData, state: dict[str, Any] | None, *controls: Any) -> tuple[Any, ...]:
        """A click on a failing request: its explanation (the last column) or its expected tool in Profiles."""
        records = (state or {}).get("failing") or []
        row, col = (evt.index if isinstance(evt.index, list | tuple) else (evt.index, 0))
        if not 0 <= int(row) < len(records):
            raise gr.Error("that row is gone: run the evaluation again")
        record = records[int(row)]
        skip = tuple(gr.skip() for _ in range(7))  # what _open fills
        if int(col) == 5:
            return (*self._explain(record, controls), *skip)
        return (gr.skip(), gr.skip(), *self.open_tool(record["open"], record["query"], state))

    def _explain(self, record: dict[str, Any], controls: tuple[Any, ...]) -> tuple[Any, ...]:
        row = QueryRow(query=record["query"], gold=tuple(record["gold"]),
                       image=Path(record["image"]) if record.get("image") else None,
                       permissions=tuple(record["permissions"]) if record.get("permissions") is not None else None,
                       role=record.get("role"), history=tuple(record.get("history") or ()))
        result = Evaluator([row]).run_row(self.b.require(), row, settings=self.settings(controls))
        widths = fmt.result_widths(len(fmt.scored_signals(result)))
        return fmt.decision_banner(result), gr.update(value=fmt.results_table(result), column_widths=widths,
                                                      visible=True)

    # ---------------------------------------------------------------------------------- retrievability

    @_named_settings
    @guard
    def check(self, progress: gr.Progress = gr.Progress(), scope: str | None = None,  # noqa: B008
              state: dict[str, Any] | None = None, *controls: Any) -> tuple[Any, ...]:
        """Leave-one-out retrievability of every tool (or of one category's tools)."""
        state = dict(state or {})
        catalog = self.b.require().catalog
        tools = None if not scope or scope == ALL_TOOLS else [t.id for t in catalog.tools if t.category == scope]
        report = self.studio.retrievability(self.settings(controls), tools=tools,
                                            progress=lambda f, m: progress(f, desc=m))
        seen = self.seen(state)
        if seen is not None:  # only the tools this session may see, ranked among themselves
            report = retrievability_for(report, catalog, seen["codes"], vectors=self.b.require().tool_vectors(),
                                        threshold=self.studio.checker.threshold)
        frame, records = views.tools_table(report)
        previous = state.get("health")
        facts = health.retrievability_facts(report, None if tools is None else scope)
        state.update(health=report.health.figures(), tools=records, confusions=len(report.confusions),
                     facts={**state.get("facts", {}), "retrievability": facts})
        h = report.health
        summary = (f"{h.n_tools} tools, {h.n_examples} example requests, each searched with that example left "
                   f"out of its tool's document ({report.searched} searched now, {report.encoded} encoded, "
                   f"{report.seconds:.1f} s). **At risk** (never found first): "
                   + (", ".join(f"`{t}`" for t in h.at_risk) or "none") + ". Click a tool to edit it.")
        return (views.health_cards(report, previous), summary, retrievability_figure(report), frame,
                views.confusion_table(report), state)

    @guard
    def pick_tool(self, evt: gr.SelectData, state: dict[str, Any] | None) -> tuple[Any, ...]:
        """A click on a tool of the retrievability table opens it, with its worst example as rank query."""
        records = (state or {}).get("tools") or []
        row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
        if not 0 <= int(row) < len(records):
            raise gr.Error("that row is gone: check retrievability again")
        return self.open_tool(records[int(row)]["open"], records[int(row)]["query"], state)

    @_named_settings
    @guard
    def export(self, *controls: Any) -> str:
        """The last retrievability check (with the last evaluation and tuning) as a self-contained HTML page."""
        return self._export(None, controls)

    @_named_settings
    @guard
    def export_for(self, state: dict[str, Any] | None = None, *controls: Any) -> str:
        """:meth:`export`, naming only the tools this session may see (its "evaluate as" choice)."""
        return self._export(state, controls)

    def _export(self, state: dict[str, Any] | None, controls: tuple[Any, ...]) -> str:
        report = self.studio.catalog_report(self.settings(controls))
        seen = self.seen(state)
        if seen is not None:
            retriever = self.b.require()
            report = report_for(report, retriever.catalog, seen["codes"], vectors=retriever.tool_vectors(),
                                threshold=self.studio.checker.threshold)
        file = self._download("toolrag-report.html")
        write_atomic(file, render_html(report), error=ToolragError)
        return str(file)

    # ------------------------------------------------------------------------------------------- tuning

    @_named_settings
    @guard
    def tune(self, progress: gr.Progress = gr.Progress(), step: str = "0.1",  # noqa: B008
             state: dict[str, Any] | None = None, *controls: Any) -> tuple[Any, ...]:
        """Tune the text weights (and the decision's precision target) on the labelled requests, as ``toolrag
        tune``."""
        state = dict(state or {})
        rows, _ = self._rows(state)
        base = self.settings(controls)
        result, threshold = self.studio.tune(rows, base, step=float(step), progress=lambda f, m: progress(f, desc=m))
        tuned: dict[str, Any] = {"weights": {s: round(float(w), 4) for s, w in result.settings.weights.items()}}
        if threshold is not None and threshold.changed:
            tuned["precision_target"] = round(threshold.target, 4)
        state["tuned"] = tuned
        state["tuned_summary"] = result.summary() + ("; " + threshold.summary() if threshold else "")
        state["threshold_plotted"] = threshold is not None
        text = f"{result.summary()}" + (f"\n\n{threshold.summary()}" if threshold else
                                        "\n\nprecision target: not calibrated (needs rows with expect: no_tool)")
        thr = threshold_figure(threshold) if threshold else None
        return text, tuning_figure(result, base=base), thr, state

    @guard
    def apply(self, state: dict[str, Any] | None) -> tuple[Any, ...]:
        """Move the Search sliders to the tuned weights (and precision target)."""
        tuned = (state or {}).get("tuned")
        if not tuned:
            raise gr.Error("tune first: the sliders move to the weights tuning chose")
        # Fusion is a weighted mean (RRF a weighted sum): scaling every weight alike changes no ranking and no
        # decision, so weights above the sliders' maximum of 1 are all divided by the largest one.
        top = max(tuned["weights"].values(), default=1.0)
        scale = 1.0 / top if top > 1.0 else 1.0
        weights = [gr.update(value=round(tuned["weights"][s] * scale, 4)) if s in tuned["weights"] else gr.skip()
                   for s in SIGNALS]
        threshold = gr.update(value=round(100 * tuned["precision_target"])) if "precision_target" in tuned \
            else gr.skip()
        note = f" (all divided by {top:.4g} to fit the sliders: the same ranking)" if scale < 1.0 else ""
        return (*weights, threshold, f"✓ The Search sliders now hold the tuned weights{note}: search or run the "
                                     "evaluation again to see them at work.")

    @guard
    def save(self, state: dict[str, Any] | None) -> str:
        """The tuned settings as a settings YAML (read with ``--settings``), written as ``toolrag tune`` does."""
        tuned = (state or {}).get("tuned")
        if not tuned:
            raise gr.Error("tune first: the file holds the weights tuning chose")
        file = self._download("toolrag-settings.yaml")  # a fresh file: save_settings merges into an existing one
        return str(save_settings(file, tuned, comment=str((state or {}).get("tuned_summary", ""))))

    # -------------------------------------------------------------------------------------- edit effect

    @_named_settings
    @guard
    def after_edit(self, progress: gr.Progress = gr.Progress(), state: dict[str, Any] | None = None,  # noqa: B008
                   tool_id: str | None = None, *controls: Any) -> tuple[Any, ...]:
        """After a save: the labelled requests (once this session has evaluated them) and the tool's
        retrievability again, compared with before the edit."""
        state = dict(state or {})
        settings = self.settings(controls)
        rows: list[QueryRow] = []
        name = ""
        if "metrics" in state:  # the session evaluated: its rows and their "before" are known and cheap to rerun
            try:
                rows, name = self._rows(state)
            except ToolragError:
                rows = []
        effect = self.studio.effect(rows, settings, tool_id or None, progress=lambda f, m: progress(f, desc=m))
        state["edit_moved"] = len(effect.changes.improved) + len(effect.changes.regressed)
        if not rows:
            return views.effect_text(effect), views.effect_frame(effect), *(gr.skip() for _ in range(3)), state
        frame, records = views.failing_table(effect.after_report)
        previous = state.get("metrics")
        labelled = health.labelled_facts(effect.after_report, name, len(records))
        state.update(metrics=dict(effect.after_report.metrics), failing=records,
                     facts={**state.get("facts", {}), "labelled": labelled})
        summary = (f"{effect.after_report.n_queries} labelled requests after your edit · **{len(records)} failing**")
        return (views.effect_text(effect), views.effect_frame(effect),
                views.metric_cards(effect.after_report.metrics, previous), summary, frame, state)

    # -------------------------------------------------------------------------------------------- links

    def apply_link(self, request: gr.Request) -> tuple[Any, ...]:
        """On page load: the Search controls a link's query parameters set (the rest unchanged)."""
        if self.b.ready:
            self.studio.remember()  # what the first edit of this page will be compared with
        query = getattr(request, "query_params", None) if request is not None else None
        params = {k: query.getlist(k) for k in query} if query is not None else {}
        catalog = self.b.catalog if not self.b.ready else self.b.require().catalog
        view = self.h.view(request)
        link = parse_link(params, roles=self.h.role_choices(view), categories=view.catalog(catalog).categories)
        for warning in link.warnings:
            gr.Warning(f"link: {warning}")
        return tuple(gr.update(value=link.values[name]) if name in link.values else gr.skip()
                     for name in LINK_CONTROLS)

    @_named_settings
    def share_link(self, request: gr.Request, query: str, role: str | None, categories: list[str] | None,
                   *controls: Any) -> str:
        """The link that reproduces the search just made."""
        if not (query or "").strip() or not self.b.ready:
            return ""
        settings = self.settings(controls)
        suffix = link_query(query=query, role=role, categories=categories, settings=settings,
                            base=self.b.require().settings)
        # The page's own address (the browser sends it as the Referer of the event), else the server's.
        headers = getattr(request, "headers", None) or {}
        root = str(headers.get("referer") or getattr(request, "url", "") or "").split("?", 1)[0]
        if "/gradio_api/" in root:
            root = root.split("/gradio_api/", 1)[0] + "/"
        return f"**[Link to this search]({root}{suffix})** — opens the page with this request and these settings."
