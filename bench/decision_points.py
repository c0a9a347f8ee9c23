"""The decision's operating points, chosen on held-out predictions: the P(right) threshold of each EXECUTE precision
target (:func:`operating_points`), the P(no tool) threshold of each share of requests nothing serves kept clean
(:func:`clean_points`), and the one policy applied at a point (:func:`decide`, which is
:func:`toolrag.decision.policy.choose`). Read by :mod:`bench.decision_fit` and the benchmarks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["CLEAN_TARGETS", "DEFAULT_CLEAN", "DEFAULT_TARGET", "SIBLINGS", "TARGETS", "clean_points", "decide",
           "operating_points"]

#: The EXECUTE precision targets whose thresholds the shipped model carries.
TARGETS = (0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
#: The default operating point (docs/decisions.md says why).
DEFAULT_TARGET = 0.85
#: The shares of requests nothing serves kept clean whose P(no tool) thresholds the shipped model carries.
CLEAN_TARGETS = (0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
DEFAULT_CLEAN = 0.85
#: The kinds of episode whose own tool was taken out of the catalog while its nearest siblings stayed.
SIBLINGS = frozenset({"sibling", "cross_sibling", "img_sibling", "photo_sibling", "follow_sibling"})


def decide(p: np.ndarray, execute_at: float, inject_below: float, change_reader: np.ndarray | None = None) -> np.ndarray:
    """:func:`toolrag.decision.policy.choose` (the one policy) over rows of the distribution (columns right, ask,
    none): 0 EXECUTE, 1 CLARIFY, 2 NO_TOOL."""
    from toolrag.decision.outcome import Decision, DecisionScores
    from toolrag.decision.policy import OperatingPoint, choose

    point = OperatingPoint(execute_at, inject_below, math.nan, math.nan)
    reader = np.zeros(len(p), dtype=bool) if change_reader is None else change_reader
    codes = {Decision.EXECUTE: 0, Decision.CLARIFY: 1, Decision.NO_TOOL: 2}
    return np.array([codes[choose(DecisionScores(*map(float, row)), point, change_reader=bool(r))]
                     for row, r in zip(p, reader, strict=True)], dtype=np.int64)


def clean_points(p: np.ndarray, records: Sequence[Mapping[str, Any]], w: np.ndarray) -> list[tuple[float, float]]:
    """(target, threshold): the P(no tool) threshold at or above which the weighted share ``target`` of the
    requests nothing serves lies (they get nothing injected; below it the candidates are offered). Measured on
    the requests no listed tool is about (another source's requests, the real irrelevant ones of ACEBench and
    BFCL), not on a request whose own tool was taken out of its catalog while its siblings stayed (``sibling``):
    that one is a catalog without the tool the request names, and the candidates asked about are its nearest
    relatives, which an agent can use or decline."""
    none = np.array([r["expect"] == "NO_TOOL" and r["kind"] not in SIBLINGS for r in records])
    values, weights = p[none, 2], w[none]
    order = np.argsort(values, kind="mergesort")
    values, below = values[order], np.cumsum(weights[order]) / weights.sum()
    out = []
    for target in CLEAN_TARGETS:
        k = int(np.searchsorted(below, 1.0 - target + 1e-12))  # rows 0..k-1 hold at most 1 - target of the weight
        out.append((target, float(values[min(k, len(values) - 1)])))
    return out



def operating_points(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> list[tuple[float, float]]:
    """(target, threshold): the lowest P(right) threshold at which the weighted share of EXECUTEs that are right
    (class 0) reaches each target, scanning from the highest probability down."""
    order = np.argsort(-p[:, 0], kind="mergesort")
    right = np.cumsum(w[order] * (y[order] == 0))
    total = np.cumsum(w[order])
    precision = right / total
    out = []
    for target in TARGETS:
        ok = np.flatnonzero(precision >= target)
        threshold = float(p[order[ok[-1]], 0]) if len(ok) else 1.0
        out.append((target, threshold))
    return out
