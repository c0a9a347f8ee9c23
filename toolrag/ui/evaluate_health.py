"""The Evaluate tab's summary and its *Run every check* button.

:class:`HealthHandlers` runs, in one click, every check that needs no upload (the retrievability of every tool,
the label-free estimate of the tools without examples, the labelled requests there are, the audit log's
unmatched requests), each through the handler of its own section, so every section fills as if its own button
had been pressed; a check that cannot run says why in its section and the others still run. :meth:`refresh`
redraws the summary (:func:`toolrag.ui.evaluate_summary.health_summary`) from what the session's checks left,
and shows each section's tables and plots only once they have content.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import gradio as gr

from toolrag.ui import evaluate_summary as health
from toolrag.ui.evaluate_handlers import ALL_TOOLS, StudioHandlers, _named_settings
from toolrag.ui.evaluate_label_free import LabelFreeHandlers
from toolrag.ui.evaluate_unmatched import UnmatchedHandlers

__all__ = ["SHOWN", "HealthHandlers"]

#: The components :meth:`HealthHandlers.refresh` shows or hides, after the summary, in this order.
SHOWN = ("retrievability", "hardest", "confusions", "estimate", "labelled", "failing", "tuning", "threshold",
         "unmatched", "changes", "suggestions")


class _Part:
    """A share of one progress bar: the checks run one after the other under one bar."""

    def __init__(self, progress: Any, start: float, span: float) -> None:
        self.progress, self.start, self.span = progress, start, span

    def __call__(self, fraction: float, desc: str | None = None) -> None:
        self.progress(self.start + self.span * float(fraction), desc=desc)

    @classmethod
    def of(cls, progress: Any, start: float, span: float) -> gr.Progress:
        """A part that the handlers take for their ``gr.Progress``: they only call it."""
        return cast(gr.Progress, cls(progress, start, span))


def _attempt(run: Callable[[], tuple[Any, ...]], state: dict[str, Any], message_at: int
             ) -> tuple[list[Any], dict[str, Any]]:
    """``run()``'s outputs but the last and its last (the session state it leaves); for a check that cannot run
    (a ``gr.Error``), its message where its section's summary goes, nothing else changed and ``state``."""
    try:
        *out, after = run()
        return out, after
    except gr.Error as exc:
        return [f"**Not run:** {exc.message}" if i == message_at else gr.skip() for i in range(message_at + 3)], state


class HealthHandlers:
    """The summary and *Run every check* (tested directly and through a real browser)."""

    def __init__(self, eh: StudioHandlers, lf: LabelFreeHandlers, uh: UnmatchedHandlers) -> None:
        self.eh, self.lf, self.uh = eh, lf, uh

    def catalog_facts(self, state: dict[str, Any] | None) -> health.CatalogFacts:
        """The tools this session may see, the labelled requests and the audit log there are."""
        catalog = self.eh.b.catalog if not self.eh.b.ready else self.eh.b.require().catalog
        seen = list(self.eh.view_for(state).catalog(catalog))
        tools = [t for t in seen if not t.deprecated]
        file = (state or {}).get("file")
        default = self.eh.studio.default_queries()
        labelled = Path(file).name if file else default.name if default else None
        log = self.uh.log_path()
        return health.CatalogFacts(len(tools), sum(1 for t in tools if t.examples), labelled,
                                   log.name if log else None, len(seen) - len(tools))

    @_named_settings
    def run_all(self, progress: gr.Progress = gr.Progress(), state: dict[str, Any] | None = None,  # noqa: B008
                unmatched: dict[str, Any] | None = None, below: float = 0.5, request: gr.Request | None = None,
                oauth: gr.OAuthProfile | None = None, *controls: Any) -> tuple[Any, ...]:
        """Every check that needs no upload, each into its section; returns the outputs of the retrievability,
        estimate, labelled and unmatched sections, then the two session states."""
        state, unmatched = dict(state or {}), dict(unmatched or {})
        facts = self.catalog_facts(state)
        skip: list[Any] = [gr.skip()] * 5
        retr, state = _attempt(lambda: self.eh.check(_Part.of(progress, 0.0, 0.5), ALL_TOOLS, state, *controls),
                               state, 1)
        estimate = skip
        if facts.with_examples < facts.tools:  # the estimate is for the tools without examples
            estimate, state = _attempt(lambda: self.lf.estimate(_Part.of(progress, 0.5, 0.25), state, *controls),
                                       state, 1)
        labelled = skip
        if facts.labelled:
            labelled, state = _attempt(lambda: self.eh.evaluate(_Part.of(progress, 0.75, 0.2), state, *controls),
                                       state, 1)
        logged = skip
        if facts.log:
            logged, unmatched = _attempt(lambda: self.uh.show(below, unmatched, request, oauth), unmatched, 0)
        progress(1.0, desc="done")
        return (*retr[:5], *estimate[:3], *labelled[:3], *logged[:2], state, unmatched)

    def refresh(self, state: dict[str, Any] | None, unmatched: dict[str, Any] | None) -> tuple[Any, ...]:
        """The summary from what the session's checks left, and each part of the tab shown once it has
        content (see :data:`SHOWN`): no empty table or plot before its data exists."""
        state, unmatched = state or {}, unmatched or {}
        facts = {**state.get("facts", {}), **unmatched.get("facts", {})}
        examples = (facts.get("retrievability") or {}).get("n_examples", 0)
        shown = {"retrievability": "retrievability" in facts, "hardest": examples > 0,
                 "confusions": bool(state.get("confusions")),
                 "estimate": "estimate" in facts, "labelled": "labelled" in facts,
                 "failing": bool(state.get("failing")), "tuning": "tuned" in state,
                 "threshold": bool(state.get("threshold_plotted")), "unmatched": bool(unmatched.get("unmatched")),
                 "changes": bool(state.get("edit_moved")),
                 "suggestions": bool((state.get("suggested") or {}).get("queries"))}
        return (health.health_summary(self.catalog_facts(state), facts),
                *(gr.update(visible=shown[name]) for name in SHOWN))
