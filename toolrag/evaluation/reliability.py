"""Reliability (calibration) of the decision's P(the top tool is right): bins, the calibration error, a figure.

A calibrated probability means what it says: of the requests given P(right) = 0.8, about 80% have the right
tool on top. The bins compare the mean predicted probability with the observed rate; the figure draws them
against the diagonal. Used by ``bench/decisions.py`` (labelled sets) and by the app (the catalog's own
simulated requests, held out by cross-fitting when the model was fitted).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ReliabilityBin", "expected_calibration_error", "reliability_bins", "reliability_figure"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReliabilityBin:
    """Requests whose predicted probability fell in [low, high): their mean prediction and observed rate."""

    low: float
    high: float
    predicted: float
    observed: float
    count: int


def reliability_bins(predicted: Sequence[float], observed: Sequence[bool], *, bins: int = 10) -> list[ReliabilityBin]:
    """Equal-width bins of ``predicted`` in [0, 1] (the last one closed); empty bins are left out.

    Example: predicted [0.1, 0.15, 0.9], observed [False, True, True], 2 bins -> [0, 0.5): mean 0.125,
    observed 0.5, 2 requests; [0.5, 1]: 0.9, 1.0, 1 request.
    """
    p = np.asarray(predicted, dtype=np.float64)
    y = np.asarray(observed, dtype=np.float64)
    if p.shape != y.shape or p.ndim != 1:
        raise ValueError(f"predicted and observed must be 1-D of one length, got {p.shape} and {y.shape}")
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    if p.size and (np.nanmin(p) < 0 or np.nanmax(p) > 1):
        raise ValueError("predicted probabilities must lie in [0, 1]")
    edges = np.linspace(0.0, 1.0, bins + 1)
    index = np.minimum(np.searchsorted(edges, p, side="right") - 1, bins - 1)
    out = []
    for i in range(bins):
        sel = index == i
        if sel.any():
            out.append(ReliabilityBin(float(edges[i]), float(edges[i + 1]), float(p[sel].mean()),
                                      float(y[sel].mean()), int(sel.sum())))
    return out


def expected_calibration_error(bins: Sequence[ReliabilityBin]) -> float:
    """Count-weighted mean of |predicted - observed| over the bins (0 = perfectly calibrated)."""
    total = sum(b.count for b in bins)
    return float(sum(b.count * abs(b.predicted - b.observed) for b in bins) / total) if total else float("nan")


def reliability_figure(bins: Sequence[ReliabilityBin], *, title: str = "Reliability of P(right)") -> Any:
    """A Plotly figure: observed rate against mean predicted probability per bin (marker size = requests),
    with the diagonal of perfect calibration. Never raises: a figure with the message when it cannot draw."""
    try:
        import plotly.graph_objects as go

        fig = go.Figure()
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="calibrated",
                                 line={"dash": "dash", "color": "#888"}))
        if bins:
            counts = np.array([b.count for b in bins], dtype=float)
            sizes = 8 + 22 * np.sqrt(counts / counts.max())
            fig.add_trace(go.Scatter(
                x=[b.predicted for b in bins], y=[b.observed for b in bins], mode="lines+markers",
                name="P(right)", marker={"size": sizes.tolist(), "color": "#2E91E5"},
                text=[f"{b.count} requests, P in [{b.low:.1f}, {b.high:.1f})" for b in bins],
                hovertemplate="predicted %{x:.2f}<br>observed %{y:.2f}<br>%{text}<extra></extra>"))
        ece = expected_calibration_error(bins)
        note = f" (expected calibration error {ece:.3f})" if bins else " (no data)"
        fig.update_layout(title=title + note, xaxis_title="mean predicted P(right)",
                          yaxis_title="observed share with the right tool on top", height=420,
                          xaxis={"range": [0, 1]}, yaxis={"range": [0, 1.02]}, margin={"l": 60, "r": 20})
        return fig
    except Exception as exc:  # a figure must never break the page
        log.exception("reliability figure failed")
        from toolrag.evaluation.projection import error_figure

        return error_figure(f"cannot draw the reliability curve: {type(exc).__name__}: {exc}")
