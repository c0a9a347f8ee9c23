"""Fitting the decision model on searched episodes, leave-one-source-out, and writing it as package data.

Read by ``python -m bench.decision_train`` (see there). Each episode has a class: ``right`` (a tool serves the
request and it ranks first), ``ask`` (the request needs a question: ACEBench's incomplete requests, or the tool
that serves it ranks second), ``none`` (no listed tool serves it), ``missed`` (a tool serves it but ranks below
second). Two binary heads (:data:`toolrag.decision.model.HEADS`): ``none`` (class none against the rest) and
``call`` (class right among the episodes a listed tool serves), composed by the model into one distribution over
call / ask / no tool that sums to one; they read the features of :func:`used` with the monotone constraints of
:data:`MONOTONE`: the features whose meaning depends on
how a catalog is written (raw BM25 scores, the share of request words no tool has, how many parameters a schema
lists, request length) are left out, because the catalogs an agent sends are written otherwise than the training
sets (docs/decisions.md shows what they cost). The selection model gives each lower candidate's P(also needed). Every group of sources (``bench.decision_episodes.GROUPS``) is predicted
by a model fitted on the others; the operating points (the P(right) threshold of each EXECUTE precision target,
the P(no tool) threshold of each share of requests nothing serves kept clean) are chosen on those held-out
predictions, and the policy applied to them is :func:`toolrag.decision.policy.choose`, the one serving uses; the shipped model is then fitted on every source.
Each group weighs the same in every fit and every pooled figure, so the largest source does not set the policy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bench.decision_episodes import GROUPS

__all__ = ["CLEAN_TARGETS", "DEFAULT_CLEAN", "DEFAULT_TARGET", "TARGETS", "clean_points", "decide", "fit_and_report",
           "labels", "operating_points"]

#: The EXECUTE precision targets whose thresholds the shipped model carries.
TARGETS = (0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
#: The default operating point (docs/decisions.md says why).
DEFAULT_TARGET = 0.85
#: The shares of requests nothing serves kept clean whose P(no tool) thresholds the shipped model carries.
CLEAN_TARGETS = (0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
DEFAULT_CLEAN = 0.85
SMALL = 10
#: Coverages at which the precision of P(right) and of the MiniLM threshold are compared.
CURVE = (0.5, 0.6, 0.7, 0.8)


def labels(records: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Each episode's class: 0 right, 1 ask, 2 none, 3 missed."""
    out = np.empty(len(records), dtype=np.int64)
    for i, r in enumerate(records):
        gold, top = set(r["gold"]), r["top"]
        if r["expect"] == "NO_TOOL":
            out[i] = 2
        elif r["expect"] == "CLARIFY" or (top and top[0] not in gold and len(top) > 1 and top[1] in gold):
            out[i] = 1
        else:
            out[i] = 0 if top and top[0] in gold else 3
    return out


#: The weight of a kind of episode: a request whose own tool was removed and its nearest siblings kept is the
#: hardest case, and half of the episodes built, but rarely what an agent sends (a request its tools serve, or
#: one nothing listed serves); at full weight the model learned a prior of "no tool" that real small catalogs
#: do not have (docs/decisions.md: P(right) 0.04 where 56% were right on the bundled catalog).
KIND_WEIGHT = {"sibling": 0.25, "cross_sibling": 0.25}


def _weights(groups: np.ndarray, kinds: np.ndarray | None = None) -> np.ndarray:
    """Each group the same total weight, each kind of episode its :data:`KIND_WEIGHT` within it."""
    base = np.ones(len(groups)) if kinds is None else np.array([KIND_WEIGHT.get(k, 1.0) for k in kinds])
    out = np.empty(len(groups))
    names = np.unique(groups)
    for name in names:
        held = groups == name
        out[held] = base[held] * len(groups) / (len(names) * base[held].sum())
    return out


#: Features the heads do not read: the raw cosines depend on how a catalog is written (the view keeps them for the
#: reason and for the MiniLM baseline of the benchmarks).
LEFT_OUT = ("sem_top", "en_top")
#: Per head, features whose effect has a known direction (+1: more of it never lowers the probability).
MONOTONE: Mapping[str, Mapping[str, int]] = {
    "call": {"sem_null": 1, "en_null": 1, "sem_gap": 1, "en_gap": 1, "name_hit": 1, "action": 1, "sem_chat": -1, "en_chat": -1, "change_reader": -1,
              "vague": -1, "open": -1},
    "none": {"sem_null": -1, "en_null": -1, "name_hit": -1,
             "sem_chat": 1, "en_chat": 1},
}


#: The features of the English-only model (MiniLM), absent for a request in a language it does not read (issue 43:
#: it steps back for every language but English, and Chinese through its gloss). The training sets hold English
#: and Chinese requests only, so a share :data:`UNREAD_SHARE` of the episodes is also fitted as if the request
#: were in another language (these features NaN, and BM25's too: a request in another language shares few words
#: with the catalog; ``cjk`` 0, the top tool not written in its language), at :data:`UNREAD_WEIGHT` of its
#: weight: the model learns to decide from the multilingual model alone.
ENGLISH_ONLY = ("en_null", "en_top", "en_z", "en_gap", "en_null2", "en_chat", "lookalike_en", "kw_z", "name_hit")
UNREAD_SHARE, UNREAD_WEIGHT = 0.3, 0.5


def unread(x: np.ndarray) -> np.ndarray:
    """``x`` as a request the English model cannot read gives it (:data:`ENGLISH_ONLY` NaN, not Chinese, the
    top tool not in its language)."""
    from toolrag.decision.view import FEATURES

    out = x.copy()
    out[:, [FEATURES.index(f) for f in ENGLISH_ONLY]] = np.nan
    out[:, FEATURES.index("cjk")] = 0.0
    out[:, FEATURES.index("lang_match")] = 0.0
    return out


def _with_unread(x: np.ndarray, y: np.ndarray, w: np.ndarray, rows: np.ndarray,
                 pick: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The training rows ``rows`` and, for those of ``pick``, their :func:`unread` copies."""
    more = rows & pick
    return (np.vstack([x[rows], unread(x[more])]), np.concatenate([y[rows], y[more]]),
            np.concatenate([w[rows], UNREAD_WEIGHT * w[more]]))


def used() -> list[int]:
    from toolrag.decision.view import FEATURES

    return [i for i, name in enumerate(FEATURES) if name not in LEFT_OUT]


def _fit(family: str, x: np.ndarray, y: np.ndarray, w: np.ndarray, monotone: Mapping[str, int] | None = None,
         names: Sequence[str] = ()) -> Any:
    if family == "trees":
        from sklearn.ensemble import HistGradientBoostingClassifier

        cst = [int((monotone or {}).get(n, 0)) for n in names] if names else None
        model = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.06, max_leaf_nodes=15,
                                               min_samples_leaf=40, l2_regularization=1.0, early_stopping=False,
                                               random_state=0, monotonic_cst=cst)
        return model.fit(x, y, sample_weight=w)
    if family == "logistic":
        from sklearn.linear_model import LogisticRegression

        mean = np.nanmean(x, axis=0)
        mean = np.where(np.isfinite(mean), mean, 0.0)
        z = np.where(np.isfinite(x), x, mean)
        scale = z.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        model = LogisticRegression(C=1.0, max_iter=2000).fit((z - mean) / scale, y, sample_weight=w)
        model.toolrag_mean, model.toolrag_scale = mean, scale  # type: ignore[attr-defined]
        return model
    raise ValueError(f"unknown family {family!r}; choose trees or logistic")


def _proba(model: Any, x: np.ndarray) -> np.ndarray:
    if hasattr(model, "toolrag_mean"):
        z = np.where(np.isfinite(x), x, model.toolrag_mean)
        return np.asarray(model.predict_proba((z - model.toolrag_mean) / model.toolrag_scale))
    return np.asarray(model.predict_proba(x))


def _selection_data(records: Sequence[Mapping[str, Any]], y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows, targets, groups = [], [], []
    for r, label in zip(records, y, strict=True):
        if label != 0:
            continue
        gold = set(r["gold"])
        for j, row in enumerate(r["cand"], start=1):
            if j < len(r["top"]):
                rows.append(row)
                targets.append(int(r["top"][j] in gold))
                groups.append(r["group"])
    from toolrag.decision.view import SELECTION_FEATURES

    width = len(SELECTION_FEATURES)
    return (np.array(rows, dtype=np.float64).reshape(-1, width), np.array(targets, dtype=np.int64),
            np.array(groups))


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
    none = np.array([r["expect"] == "NO_TOOL" and r["kind"] not in _SIBLINGS for r in records])
    values, weights = p[none, 2], w[none]
    order = np.argsort(values, kind="mergesort")
    values, below = values[order], np.cumsum(weights[order]) / weights.sum()
    out = []
    for target in CLEAN_TARGETS:
        k = int(np.searchsorted(below, 1.0 - target + 1e-12))  # rows 0..k-1 hold at most 1 - target of the weight
        out.append((target, float(values[min(k, len(values) - 1)])))
    return out


_SIBLINGS = frozenset({"sibling", "cross_sibling"})


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


def _metrics(d: np.ndarray, y: np.ndarray, records: Sequence[Mapping[str, Any]], base: np.ndarray,
             p: np.ndarray | None = None) -> dict[str, Any]:
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
    out["agent"] = _agent(d, records, base)  # type: ignore[assignment]
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


def _baseline(x: np.ndarray) -> np.ndarray:
    from toolrag.decision.view import FEATURES

    en, sem = x[:, FEATURES.index("en_top")], x[:, FEATURES.index("sem_top")]
    return np.where(np.isfinite(en), en, np.where(np.isfinite(sem), sem - 1.0, -9.0))


def _heads(family: str, x: np.ndarray, y: np.ndarray, w: np.ndarray) -> dict[str, Any]:
    """The two heads fitted on ``x`` (every feature; the heads read :func:`used`): ``none`` on every episode,
    ``call`` (right) on the episodes a listed tool serves."""
    from toolrag.decision.view import FEATURES

    cols = used()
    names = [FEATURES[i] for i in cols]
    served = y != 2
    return {"none": _fit(family, x[:, cols], (y == 2).astype(np.int64), w, MONOTONE["none"], names),
            "call": _fit(family, x[served][:, cols], (y[served] == 0).astype(np.int64), w[served], MONOTONE["call"],
                         names)}


def _predict(heads: Mapping[str, Any], x: np.ndarray) -> np.ndarray:
    """The composed distribution (columns right, ask, none), as :meth:`DecisionModel.probabilities` gives it."""
    cols = used()
    none, call = (_proba(heads[name], x[:, cols])[:, 1] for name in ("none", "call"))
    return np.column_stack([(1 - none) * call, (1 - none) * (1 - call), none])


def fit_and_report(records: Sequence[Mapping[str, Any]], *, families: Sequence[str], export: bool) -> dict[str, Any]:
    """Leave-one-source-out results of every family, the winner's operating points, and (``export``) the
    shipped model fitted on every source."""
    from toolrag.decision.view import FEATURES

    x = np.stack([r["x"] for r in records])
    y = labels(records)
    groups = np.array([r["group"] for r in records])
    n = np.array([r["n"] for r in records])
    w = _weights(groups, np.array([r["kind"] for r in records]))
    base = _baseline(x)
    reader = np.nan_to_num(x[:, FEATURES.index("change_reader")]) > 0
    results: dict[str, Any] = {"episodes": len(records), "families": {}, "groups": sorted(set(groups)),
                               "classes": {c: int((y == k).sum()) for k, c in enumerate(("right", "ask", "none",
                                                                                          "missed"))}}
    pick = np.random.default_rng(7).random(len(records)) < UNREAD_SHARE
    best_family, best_score = None, -math.inf
    for family in families:
        oof = np.zeros((len(records), 3))
        oof_unread = np.zeros((len(records), 3))
        for group in sorted(set(groups)):
            held = groups == group
            heads = _heads(family, *_with_unread(x, y, w, ~held, pick))
            oof[held] = _predict(heads, x[held])
            oof_unread[held] = _predict(heads, unread(x[held]))
        points = operating_points(oof, y, w)
        cleans = clean_points(oof, records, w)
        execute_at, inject_below = dict(points)[DEFAULT_TARGET], dict(cleans)[DEFAULT_CLEAN]
        d = decide(oof, execute_at, inject_below, reader)
        per_group = {}
        for group in sorted(set(groups)):
            held = groups == group
            small = held & (n <= SMALL)
            per_group[group] = {scope: _metrics(d[rows], y[rows], [records[i] for i in np.flatnonzero(rows)],
                                                base[rows], oof[rows])
                                for scope, rows in (("all", held), ("small", small))}
        # the ranking quality of P(right) on held-out small catalogs, whatever the threshold: the mean precision
        # at 60% and 70% coverage over the groups
        score = float(np.nanmean([v["small"].get(f"at_{c}", math.nan) for v in per_group.values() for c in (60, 70)]))
        results["families"][family] = {"points": points, "clean_points": cleans, "groups": per_group,
                                       "score": score, "auc_none": _auc(oof[:, 2], y == 2, w),
                                       "tradeoff": _tradeoff(oof, y, w, points, cleans, records, reader),
                                       "reliability": _reliability(oof[:, 0], y == 0, w),
                                       "ece": _ece(oof[:, 0], y == 0, groups),
                                       "unread": _agent(decide(oof_unread, execute_at, inject_below, reader), records,
                                                        base)}
        if score > best_score:
            best_family, best_score = family, score
    results["winner"] = best_family
    if export and best_family is not None:
        results["exported"] = _export(best_family, records, x, y, w, results["families"][best_family], pick)
    return results


def _injected(d: np.ndarray, records: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """What each decision injects (EXECUTE the top tool, CLARIFY the top three, NO_TOOL nothing)."""
    return [tuple(r["top"][:1]) if k == 0 else tuple(r["top"][:3]) if k == 1 else ()
            for k, r in zip(d, records, strict=True)]


def _agent(d: np.ndarray, records: Sequence[Mapping[str, Any]], base: np.ndarray,
           w: np.ndarray | None = None) -> dict[str, float]:
    """The agent's outcome (:mod:`bench.agent_outcome`) of the episodes but the siblings (a request whose own
    tool was taken out: :func:`clean_points` says why; the "not EXECUTEd by kind" line reports them)."""
    from bench.agent_outcome import agent_outcome

    keep = np.array([r["kind"] not in _SIBLINGS for r in records], dtype=bool)  # see clean_points
    kept = [r for r, k in zip(records, keep, strict=True) if k]
    gold = [tuple(r["gold"]) if r["expect"] != "NO_TOOL" else () for r in kept]
    return agent_outcome(_injected(d[keep], kept), gold, [tuple(r["top"]) for r in kept], base[keep],
                         None if w is None else w[keep])


def _ece(p: np.ndarray, right: np.ndarray, groups: np.ndarray, bins: int = 10) -> dict[str, float]:
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


def _tradeoff(p: np.ndarray, y: np.ndarray, w: np.ndarray, points: Sequence[tuple[float, float]],
              cleans: Sequence[tuple[float, float]], records: Sequence[Mapping[str, Any]],
              reader: np.ndarray) -> list[dict[str, float]]:
    """Per operating point (each precision target at the default clean share, each clean share at the default
    precision target), what it gave on the held-out predictions (weighted as fitted): the share of EXECUTEs
    right, the share of served requests EXECUTEd right, the share of requests nothing serves kept out (not
    EXECUTEd) and kept clean (nothing injected), and the agent's reach against always the top three."""
    served = np.array([r["expect"] == "EXECUTE" for r in records])
    none = np.array([r["expect"] == "NO_TOOL" for r in records])
    base = _baseline(np.stack([r["x"] for r in records]))
    execute_default, clean_default = dict(points)[DEFAULT_TARGET], dict(cleans)[DEFAULT_CLEAN]
    out = []
    for kind, target, execute_at, inject_below in (
            *(("precision", t, v, clean_default) for t, v in points),
            *(("clean", t, execute_default, v) for t, v in cleans)):
        d = decide(p, execute_at, inject_below, reader)
        execute = d == 0
        agent = _agent(d, records, base, w)
        out.append({"kind": kind, "target": target, "threshold": execute_at if kind == "precision" else inject_below,
                    "precision": float(np.sum(w * execute * (y == 0)) / max(np.sum(w * execute), 1e-9)),
                    "coverage": float(np.sum(w * execute * (y == 0) * served) / max(np.sum(w * served), 1e-9)),
                    "kept_out": float(np.sum(w * ~execute * none) / max(np.sum(w * none), 1e-9)),
                    "clean": agent["clean"], "reach_ratio": agent["reach_ratio"], "injected": agent["injected"]})
    return out


def _reliability(p: np.ndarray, right: np.ndarray, w: np.ndarray, bins: int = 10) -> list[list[float]]:
    """Held-out reliability of P(right): per bin (mean predicted, observed right share, weight share)."""
    out = []
    edges = np.linspace(0, 1, bins + 1)
    for i in range(bins):
        sel = (p >= edges[i]) & ((p < edges[i + 1]) if i < bins - 1 else (p <= 1))
        if sel.any():
            out.append([float(np.average(p[sel], weights=w[sel])), float(np.average(right[sel], weights=w[sel])),
                        float(w[sel].sum() / w.sum())])
    return out


def _auc(score: np.ndarray, positive: np.ndarray, w: np.ndarray) -> float:
    """Weighted ROC AUC (P(a positive scores above a negative), ties one half)."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(positive, score, sample_weight=w)) if positive.any() and (~positive).any() else math.nan


def _export(family: str, records: Sequence[Mapping[str, Any]], x: np.ndarray, y: np.ndarray, w: np.ndarray,
            chosen: Mapping[str, Any], pick: np.ndarray) -> dict[str, Any]:
    from bench.decision_export import ensemble_json, write_model

    cols = used()
    everything = np.ones(len(x), dtype=bool)
    heads = {name: ensemble_json(model, x, cols)
             for name, model in _heads(family, *_with_unread(x, y, w, everything, pick)).items()}
    sx, sy, sg = _selection_data(records, y)
    selection = ensemble_json(_fit(family, sx, sy, _weights(sg)), sx, list(range(sx.shape[1])))
    summary = {g: {k: v for k, v in both["small"].items() if not isinstance(v, dict)} for g, both in
               chosen["groups"].items()}
    return write_model(heads, selection, points=chosen["points"], default_target=DEFAULT_TARGET,
                       clean_points=chosen["clean_points"], default_clean=DEFAULT_CLEAN, select_threshold=0.5,
                       trained={"family": family, "episodes": len(records), "sources": sorted(set(GROUPS)),
                                "left_out": list(LEFT_OUT), "held_out": summary, "tradeoff": chosen["tradeoff"],
                                "reliability": chosen["reliability"]})
