"""What a set of held-out decisions gave: EXECUTE precision and coverage, requests kept out, the agent's outcome
(:mod:`bench.agent_outcome`), the plain MiniLM threshold at the same coverage, calibration (expected calibration
error, reliability bins), ROC AUC and the trade-off of every operating point. Read by :mod:`bench.decision_fit`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bench.decision_points import DEFAULT_CLEAN, DEFAULT_TARGET, SIBLINGS, decide

__all__ = ["CURVE", "agent_result", "auc", "baseline", "ece", "metrics", "reliability", "tradeoff"]

#: Coverages at which the precision of P(right) and of the MiniLM threshold are compared.
CURVE = (0.5, 0.6, 0.7, 0.8)


def metrics(d: np.ndarray, y: np.ndarray, records: Sequence[Mapping[str, Any]], base: np.ndarray,
            p: np.ndarray | None = None) -> dict[str, Any]:
    """What the decisions ``d`` of these episodes gave (precision, coverage, kept out, the agent's outcome, the
    MiniLM threshold at the same coverage; with ``p``, the precision of P(right) at each :data:`CURVE` coverage)."""
    expect = np.array([r["expect"] for r in records])
    kinds = np.array([r["kind"] for r in records])
    serviceable = expect == "EXECUTE"
    execute = d == 0
    out = {"n": float(len(d)), "precision": float((y[execute] == 0).mean()) if execute.any() else math.nan,
           "coverage": float((execute & (y == 0))[serviceable].mean()) if serviceable.any() else math.nan,
           "kept_out": float((~execute)[expect == "NO_TOOL"].mean()) if (expect == "NO_TOOL").any() else math.nan,
           "clarify_recall": float((d == 1)[expect == "CLARIFY"].mean()) if (expect == "CLARIFY").any() else math.nan,
           "accuracy": float(np.mean([("EXECUTE", "CLARIFY", "NO_TOOL")[k] == e for k, e in zip(d, expect, strict=True)]))}
    # the plain MiniLM top-cosine threshold at the same coverage (EXECUTEd right among serviceable requests)
    if serviceable.any() and execute.any():
        order = np.argsort(-base, kind="mergesort")
        hits = np.cumsum((y[order] == 0) & serviceable[order]) / serviceable.sum()
        k = int(np.searchsorted(hits, out["coverage"] - 1e-12)) + 1
        chosen = order[:k]
        out["baseline_precision"] = float((y[chosen] == 0).mean())
    for kind in ("sibling", "foreign", "no_tool"):
        if (kinds == kind).any():
            out[f"kept_out_{kind}"] = float((~execute)[kinds == kind].mean())
    out["agent"] = agent_result(d, records, base)  # type: ignore[assignment]
    if p is not None:
        for c in CURVE:
            out[f"at_{int(100 * c)}"] = _precision_at(p[:, 0], y, serviceable, c)
            out[f"base_at_{int(100 * c)}"] = _precision_at(base, y, serviceable, c)
    return out


def _precision_at(score: np.ndarray, y: np.ndarray, serviceable: np.ndarray, coverage: float) -> float:
    """EXECUTE precision when the highest ``score`` rows are EXECUTEd until ``coverage`` of the serviceable rows
    are EXECUTEd right (NaN when it cannot be reached)."""
    if not serviceable.any():
        return math.nan
    order = np.argsort(-score, kind="mergesort")
    right = y[order] == 0
    reached = np.cumsum(right & serviceable[order]) / serviceable.sum()
    k = int(np.searchsorted(reached, coverage - 1e-12))
    return math.nan if k >= len(order) else float(right[: k + 1].mean())


def baseline(x: np.ndarray) -> np.ndarray:
    """The plain MiniLM top cosine of each episode (the multilingual one, 1 lower, where MiniLM did not read it)."""
    from toolrag.decision.view import FEATURES

    en, sem = x[:, FEATURES.index("en_top")], x[:, FEATURES.index("sem_top")]
    return np.where(np.isfinite(en), en, np.where(np.isfinite(sem), sem - 1.0, -9.0))



def _injected(d: np.ndarray, records: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """What each decision injects (EXECUTE the top tool, CLARIFY the top three, NO_TOOL nothing)."""
    return [tuple(r["top"][:1]) if k == 0 else tuple(r["top"][:3]) if k == 1 else ()
            for k, r in zip(d, records, strict=True)]


def agent_result(d: np.ndarray, records: Sequence[Mapping[str, Any]], base: np.ndarray,
           w: np.ndarray | None = None) -> dict[str, float]:
    """The agent's outcome (:mod:`bench.agent_outcome`) of the episodes but the siblings (a request whose own
    tool was taken out: :func:`clean_points` says why; the "not EXECUTEd by kind" line reports them)."""
    from bench.agent_outcome import agent_outcome

    keep = np.array([r["kind"] not in SIBLINGS for r in records], dtype=bool)  # see clean_points
    kept = [r for r, k in zip(records, keep, strict=True) if k]
    gold = [tuple(r["gold"]) if r["expect"] != "NO_TOOL" else () for r in kept]
    return agent_outcome(_injected(d[keep], kept), gold, [tuple(r["top"]) for r in kept], base[keep],
                         None if w is None else w[keep])


def ece(p: np.ndarray, right: np.ndarray, groups: np.ndarray, bins: int = 10) -> dict[str, float]:
    """Expected calibration error of P(right) per held-out group (unweighted episodes, 10 bins)."""
    out = {}
    edges = np.linspace(0, 1, bins + 1)
    for group in sorted(set(groups)):
        held = groups == group
        q, r = p[held], right[held].astype(float)
        bin_of = np.clip(np.searchsorted(edges, q, side="right") - 1, 0, bins - 1)
        out[group] = float(sum(abs(q[bin_of == b].mean() - r[bin_of == b].mean()) * (bin_of == b).sum()
                               for b in range(bins) if (bin_of == b).any()) / max(len(q), 1))
    return out


def tradeoff(p: np.ndarray, y: np.ndarray, w: np.ndarray, points: Sequence[tuple[float, float]],
             cleans: Sequence[tuple[float, float]], records: Sequence[Mapping[str, Any]],
             reader: np.ndarray) -> list[dict[str, float]]:
    """Per operating point (each precision target at the default clean share, each clean share at the default
    precision target), what it gave on the held-out predictions (weighted as fitted): the share of EXECUTEs
    right, the share of served requests EXECUTEd right, the share of requests nothing serves kept out (not
    EXECUTEd) and kept clean (nothing injected), and the agent's reach against always the top three."""
    served = np.array([r["expect"] == "EXECUTE" for r in records])
    none = np.array([r["expect"] == "NO_TOOL" for r in records])
    base = baseline(np.stack([r["x"] for r in records]))
    execute_default, clean_default = dict(points)[DEFAULT_TARGET], dict(cleans)[DEFAULT_CLEAN]
    out = []
    for kind, target, execute_at, inject_below in (
            *(("precision", t, v, clean_default) for t, v in points),
            *(("clean", t, execute_default, v) for t, v in cleans)):
        d = decide(p, execute_at, inject_below, reader)
        execute = d == 0
        agent = agent_result(d, records, base, w)
        out.append({"kind": kind, "target": target, "threshold": execute_at if kind == "precision" else inject_below,
                    "precision": float(np.sum(w * execute * (y == 0)) / max(np.sum(w * execute), 1e-9)),
                    "coverage": float(np.sum(w * execute * (y == 0) * served) / max(np.sum(w * served), 1e-9)),
                    "kept_out": float(np.sum(w * ~execute * none) / max(np.sum(w * none), 1e-9)),
                    "clean": agent["clean"], "reach_ratio": agent["reach_ratio"], "injected": agent["injected"]})
    return out


def reliability(p: np.ndarray, right: np.ndarray, w: np.ndarray, bins: int = 10) -> list[list[float]]:
    """Held-out reliability of P(right): per bin (mean predicted, observed right share, weight share)."""
    out = []
    edges = np.linspace(0, 1, bins + 1)
    for i in range(bins):
        sel = (p >= edges[i]) & ((p < edges[i + 1]) if i < bins - 1 else (p <= 1))
        if sel.any():
            out.append([float(np.average(p[sel], weights=w[sel])), float(np.average(right[sel], weights=w[sel])),
                        float(w[sel].sum() / w.sum())])
    return out


def auc(score: np.ndarray, positive: np.ndarray, w: np.ndarray) -> float:
    """Weighted ROC AUC (P(a positive scores above a negative), ties one half)."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(positive, score, sample_weight=w)) if positive.any() and (~positive).any() else math.nan
