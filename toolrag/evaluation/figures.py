"""The Plotly figures of the tool author's studio, shared by the app's Evaluate tab and the HTML report.

Every public function here never raises: on any failure it returns a figure that shows the error (the app
and the report keep working). Figures are built from library results only:

- :func:`retrievability_figure`: for the hardest tools, how many of their example requests (each left out
  of the tool's document) found them first, in the top 5, the top 10, or not at all;
- :func:`tuning_figure`: NDCG@10 (or the tuned metric) over the weights of the text signals, a ternary map
  for dense / dense_en / bm25 (a line for two signals), the current and the chosen weights marked;
- :func:`threshold_figure`: the NO_TOOL threshold's trade-off: accuracy, requests needing a tool that are
  refused, requests needing none that are answered with a tool, the current and chosen thresholds marked.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from toolrag.evaluation.retrievability import RetrievabilityReport
from toolrag.evaluation.tune import ThresholdResult, TuneResult
from toolrag.settings import Settings

__all__ = ["error_figure", "retrievability_figure", "threshold_figure", "tuning_figure"]

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])
_STATUS_ORDER = {"at risk": 0, "weak": 1, "ok": 2}
_BANDS = (("first", "#1e7e34"), ("top 5", "#8bc34a"), ("top 10", "#ffc107"), ("beyond 10", "#d32f2f"))


def error_figure(message: str, *, title: str = "Figure unavailable") -> Any:
    """An empty figure that shows ``message``."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font={"color": "#b00020", "size": 14})
    fig.update_layout(xaxis={"visible": False}, yaxis={"visible": False}, height=360, title=title)
    return fig


def _fail_safe(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            log.exception("figure %s failed", fn.__name__)
            return error_figure(f"Could not draw this figure: {type(exc).__name__}: {exc}")

    return wrapper  # type: ignore[return-value]


@_fail_safe
def retrievability_figure(report: RetrievabilityReport, *, limit: int = 30) -> Any:
    """Stacked bars of the ``limit`` hardest tools: their examples found first / top 5 / top 10 / beyond."""
    import plotly.graph_objects as go

    tools = [t for t in report.tools if t.ranks]
    tools.sort(key=lambda t: (_STATUS_ORDER.get(t.status, 3), t.first / len(t.ranks), t.top5 / len(t.ranks),
                              t.tool_id))
    shown = list(reversed(tools[:limit]))  # the hardest at the top of a horizontal bar chart
    if not shown:
        return error_figure("No tool has example requests: add examples to the profiles.",
                            title="Retrievability")
    labels = [t.tool_id for t in shown]
    counts = {
        "first": [t.first for t in shown],
        "top 5": [t.top5 - t.first for t in shown],
        "top 10": [sum(1 for r in t.ranks if r is not None and 5 < r <= 10) for t in shown],
        "beyond 10": [sum(1 for r in t.ranks if r is None or r > 10) for t in shown],
    }
    fig = go.Figure()
    for band, colour in _BANDS:
        fig.add_trace(go.Bar(y=labels, x=counts[band], name=band, orientation="h", marker_color=colour,
                             hovertemplate="%{y}: %{x} example(s) " + band + "<extra></extra>"))
    h = report.health
    fig.update_layout(
        barmode="stack", height=max(320, 22 * len(shown) + 140),
        legend={"orientation": "h", "y": 1.06, "traceorder": "normal"},
        title={"text": f"Can each tool be found by its own examples (each left out)? {len(shown)} hardest of "
                       f"{len(tools)} tools<br><sup>{_pct(h.found_first)} of {h.n_examples} examples found "
                       f"first, {_pct(h.found_top5)} in the top 5; {len(h.at_risk)} tool(s) never first</sup>"},
        xaxis={"title": "examples", "dtick": 1}, yaxis={"automargin": True}, margin={"l": 10, "r": 10, "t": 90})
    return fig


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _normalised(weights: dict[str, float], signals: Sequence[str]) -> dict[str, float]:
    total = sum(weights.get(s, 0.0) for s in signals) or 1.0
    return {s: weights.get(s, 0.0) / total for s in signals}


@_fail_safe
def tuning_figure(result: TuneResult, *, base: Settings) -> Any:
    """The tuned metric over the grid of text-signal weights (ternary for three signals, a line for two)."""
    import plotly.graph_objects as go

    if not result.candidates:
        return error_figure("Nothing was tuned.", title="Tuning")
    signals = list(result.candidates[0].weights)
    current = _normalised(dict(base.weights), signals)
    chosen = _normalised(dict(result.settings.weights), signals)
    scores = [100 * c.score for c in result.candidates]
    title = (f"{result.metric} over the text-signal weights ({result.n_queries} labelled requests)<br><sup>"
             f"{result.summary()}</sup>")
    hover = [", ".join(f"{s}={c.weights[s]:g}" for s in signals) + f"<br>{result.metric} {100 * c.score:.2f}"
             for c in result.candidates]
    fig = go.Figure()
    if len(signals) == 3:
        a, b, c = signals
        fig.add_trace(go.Scatterternary(
            a=[x.weights[a] for x in result.candidates], b=[x.weights[b] for x in result.candidates],
            c=[x.weights[c] for x in result.candidates], mode="markers", name="weighting tried",
            marker={"size": 14, "color": scores, "colorscale": "Viridis", "showscale": True,
                    "colorbar": {"title": result.metric}, "symbol": "hexagon"},
            text=hover, hovertemplate="%{text}<extra></extra>"))
        for label, point, symbol, colour in (("current", current, "diamond-open", "#000000"),
                                              ("chosen", chosen, "star", "#d32f2f")):
            fig.add_trace(go.Scatterternary(a=[point[a]], b=[point[b]], c=[point[c]], mode="markers", name=label,
                                            marker={"size": 20, "symbol": symbol, "color": colour,
                                                    "line": {"width": 2, "color": colour}},
                                            hovertemplate=label + "<extra></extra>"))
        fig.update_layout(ternary={"aaxis": {"title": a}, "baxis": {"title": b}, "caxis": {"title": c}})
    elif len(signals) == 2:
        first = signals[0]
        ordered = sorted(result.candidates, key=lambda x: x.weights[first])
        fig.add_trace(go.Scatter(x=[x.weights[first] for x in ordered], y=[100 * x.score for x in ordered],
                                 mode="lines+markers", name=result.metric))
        best = max(result.candidates, key=lambda x: x.score)
        for label, value, colour in (("current", current[first], "#000000"), ("chosen", chosen[first], "#d32f2f")):
            fig.add_vline(x=value, line_dash="dot", line_color=colour, annotation_text=label)
        fig.update_layout(xaxis={"title": f"weight of {first} (the rest: {signals[1]})"},
                          yaxis={"title": f"{result.metric} (%)"})
        fig.add_annotation(x=best.weights[first], y=100 * best.score, text="best", showarrow=True)
    else:
        return error_figure(f"A map needs two or three text signals; tuned: {', '.join(signals)}", title="Tuning")
    fig.update_layout(title={"text": title}, height=560, legend={"orientation": "h", "y": -0.18},
                      margin={"b": 110})
    return fig


@_fail_safe
def threshold_figure(result: ThresholdResult) -> Any:
    """Accuracy, missed tools and false calls over the decision's EXECUTE precision target, current and chosen
    marked."""
    import plotly.graph_objects as go

    if not result.curve:
        return error_figure("No operating-point curve: the labelled requests need rows with expect: no_tool and "
                            "rows with gold tools.", title="Decision operating point")
    xs = [100 * p.target for p in result.curve]
    fig = go.Figure()
    for name, values, colour in (("accuracy", [p.accuracy for p in result.curve], "#1e7e34"),
                                 ("requests needing a tool not called", [p.missed for p in result.curve], "#d32f2f"),
                                 ("requests needing none answered with a tool", [p.false_calls for p in result.curve],
                                  "#b26a00")):
        fig.add_trace(go.Scatter(x=xs, y=[100 * v for v in values], mode="lines", name=name, line={"color": colour},
                                 line_shape="hv"))
    fig.add_vline(x=100 * result.base_target, line_dash="dot", line_color="#000000", annotation_text="current")
    if result.changed:
        fig.add_vline(x=100 * result.target, line_dash="dash", line_color="#d32f2f", annotation_text="chosen")
    fig.update_layout(title={"text": f"Decision operating point ({result.n_tool} rows need a tool, "
                                     f"{result.n_no_tool} need none)<br><sup>{result.summary()}</sup>"},
                      xaxis={"title": "precision_target (% of EXECUTEs right on held-out sources)"},
                      yaxis={"title": "% of rows", "range": [0, 100]}, height=420,
                      legend={"orientation": "h", "y": -0.25})
    return fig
