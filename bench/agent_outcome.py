"""What an agent gets: the tools injected for each request, scored beside two baselines on the same rows.

One metric list for ``bench.decisions`` (through the real retriever) and ``bench.decision_train`` (its held-out
groups): for every set,

- ``reach``: the share of requests a listed tool serves whose injected tools hold a right one, whatever the
  decision (EXECUTE injects the call, CLARIFY the candidates it asks about);
- ``clean``: the share of requests nothing listed serves that get no tool injected;
- ``injected``: tools injected per request (every row);
- ``top3_reach``: the same rows when the top three ranked tools are always injected (its ``clean`` is 0, its
  ``injected`` up to 3), and ``reach_ratio`` = reach / top3_reach (the target: >= 90%);
- the MiniLM top-cosine threshold (inject the top three when the best MiniLM cosine reaches a threshold) at the
  threshold that reaches the same ``reach``: its ``clean`` and ``injected`` there (``base_clean``,
  ``base_injected``; NaN when it cannot reach it). The policy beats it where its ``clean`` is higher at equal
  reach.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["AGENT_COLUMNS", "agent_outcome", "agent_row"]

#: (key, column title) of the agent-outcome table, in order.
AGENT_COLUMNS = (("reach", "right tool injected (served)"), ("top3_reach", "top three (served)"),
                 ("reach_ratio", "of top three's reach"), ("clean", "nothing injected (no tool serves)"),
                 ("base_clean", "MiniLM threshold: nothing injected at equal reach"),
                 ("injected", "tools injected per request"), ("base_injected", "MiniLM threshold: tools injected"))


def agent_outcome(injected: Sequence[Sequence[str]], gold: Sequence[Sequence[str]], top: Sequence[Sequence[str]],
                  cosine: Sequence[float], weights: Sequence[float] | None = None) -> dict[str, float]:
    """The agent-outcome figures (fractions) of rows with their ``injected`` tools, ``gold`` tools (empty: nothing
    listed serves the request), ranked ``top`` tools and best MiniLM cosine; ``weights`` per row (default 1)."""
    n = len(gold)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    served = np.array([bool(g) for g in gold])
    hit = np.array([bool(set(i) & set(g)) for i, g in zip(injected, gold, strict=True)])
    hit3 = np.array([bool(set(t[:3]) & set(g)) for t, g in zip(top, gold, strict=True)])
    empty = np.array([not i for i in injected])
    count = np.array([len(i) for i in injected], dtype=np.float64)
    count3 = np.array([min(3, len(t)) for t in top], dtype=np.float64)

    def share(values: np.ndarray, rows: np.ndarray) -> float:
        return float(np.sum(w * values * rows) / np.sum(w * rows)) if rows.any() else math.nan

    out = {"n": float(n), "reach": share(hit, served), "top3_reach": share(hit3, served),
           "clean": share(empty, ~served), "injected": share(count, np.ones(n, dtype=bool))}
    out["reach_ratio"] = out["reach"] / out["top3_reach"] if out["top3_reach"] else math.nan
    out["base_clean"], out["base_injected"] = _threshold_baseline(np.asarray(cosine, dtype=np.float64), served, hit3,
                                                                  count3, w, out["reach"])
    return out


def _threshold_baseline(cosine: np.ndarray, served: np.ndarray, hit3: np.ndarray, count3: np.ndarray, w: np.ndarray,
                        reach: float) -> tuple[float, float]:
    """(clean, injected per request) of "inject the top three when the MiniLM top cosine reaches t" at the highest
    t whose reach is at least ``reach``."""
    if not served.any() or not math.isfinite(reach):
        return math.nan, math.nan
    c = np.where(np.isfinite(cosine), cosine, -np.inf)
    order = np.argsort(-c, kind="mergesort")
    gained = np.cumsum((w * served * hit3)[order]) / np.sum(w * served)
    k = int(np.searchsorted(gained, reach - 1e-9))
    if k >= len(order):
        return math.nan, math.nan
    while k + 1 < len(order) and c[order[k + 1]] == c[order[k]]:  # a threshold takes every tie
        k += 1
    on = np.zeros(len(c), dtype=bool)
    on[order[: k + 1]] = True
    none = ~served
    clean = float(np.sum(w * (~on) * none) / np.sum(w * none)) if none.any() else math.nan
    return clean, float(np.sum(w * on * count3) / np.sum(w))


def agent_row(name: str, m: dict[str, float]) -> str:
    """One markdown row of the agent-outcome table (percent; tools per request with two decimals)."""
    def cell(key: str) -> str:
        v = m.get(key, math.nan)
        if not isinstance(v, float) or not math.isfinite(v):
            return "n/a"
        return f"{v:.2f}" if "injected" in key else f"{100 * v:.1f}"

    return f"| {name} | {int(m['n'])} | " + " | ".join(cell(k) for k, _ in AGENT_COLUMNS) + " |"
