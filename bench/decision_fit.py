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

from bench.decision_measures import CURVE, agent_result, auc, baseline, ece, metrics, reliability, tradeoff
from bench.decision_points import (
    CLEAN_TARGETS,
    DEFAULT_CLEAN,
    DEFAULT_TARGET,
    SIBLINGS,
    TARGETS,
    clean_points,
    decide,
    operating_points,
)
from bench.decision_rows import (
    image_rows,
    image_weights,
    spoken_rows,
    text_rows,
    text_weights,
    turn_rows,
    turn_weights,
    weights,
)

__all__ = ["CLEAN_TARGETS", "CURVE", "DEFAULT_CLEAN", "DEFAULT_TARGET", "TARGETS", "clean_points", "decide",
           "fit_and_report", "labels", "operating_points"]

SMALL = 10


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


#: Features the heads do not read: the raw cosines depend on how a catalog is written (the view keeps them for the
#: reason and for the MiniLM baseline of the benchmarks).
LEFT_OUT = ("sem_top", "en_top")
#: Features the text and image heads do not read: the request's own standing beside the one mixed with its earlier
#: turns is for the history heads, fitted with the conversations (so a request without earlier turns is decided
#: exactly as without them).
HISTORY_ONLY = ("sem_own", "en_own")
#: Per head, features whose effect has a known direction (+1: more of it never lowers the probability).
MONOTONE: Mapping[str, Mapping[str, int]] = {
    "call": {"sem_null": 1, "en_null": 1, "sem_gap": 1, "en_gap": 1, "ocr_null": 1, "ocr_gap": 1, "name_hit": 1, "action": 1, "sem_chat": -1, "en_chat": -1, "change_reader": -1,
              "vague": -1, "open": -1},
    "none": {"sem_null": -1, "en_null": -1, "ocr_null": -1, "name_hit": -1,
             "sem_chat": 1, "en_chat": 1},
}


#: The training sets hold English and Chinese requests only, so a share :data:`UNREAD_SHARE` of the episodes is
#: also fitted as a request in another language reads (:func:`toolrag.decision.view.as_unread`: the English
#: model's and BM25's features absent, not Chinese, the top tool not in its language), at :data:`UNREAD_WEIGHT`
#: of its weight: the model learns to decide from the multilingual model alone. A search reads such a request
#: through the same function.
UNREAD_SHARE, UNREAD_WEIGHT = 0.3, 0.5


def _as_unread(x: np.ndarray) -> np.ndarray:
    from toolrag.decision.view import as_unread  # lazy: the bench's modules import toolrag when they run

    return as_unread(x)


def _with_unread(x: np.ndarray, y: np.ndarray, w: np.ndarray, rows: np.ndarray,
                 pick: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The training rows ``rows`` and, for those of ``pick``, their :func:`unread` copies."""
    more = rows & pick
    return (np.vstack([x[rows], _as_unread(x[more])]), np.concatenate([y[rows], y[more]]),
            np.concatenate([w[rows], UNREAD_WEIGHT * w[more]]))


def used(left_out: Sequence[str] = ()) -> list[int]:
    """The features the heads read: all but :data:`LEFT_OUT` and a trial's ``left_out``."""
    from toolrag.decision.view import FEATURES

    return [i for i, name in enumerate(FEATURES) if name not in LEFT_OUT and name not in left_out]


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


def _heads(family: str, x: np.ndarray, y: np.ndarray, w: np.ndarray, left_out: Sequence[str] = ()) -> dict[str, Any]:
    """The two heads fitted on ``x`` (every feature; the heads read :func:`used` of ``left_out``): ``none`` on
    every episode, ``call`` (right) on the episodes a listed tool serves."""
    from toolrag.decision.view import FEATURES

    cols = [c for c in used(left_out) if np.isfinite(x[:, c]).any()]  # a feature no episode has (--no-images) is left out
    names = [FEATURES[i] for i in cols]
    served = y != 2
    heads = {"none": _fit(family, x[:, cols], (y == 2).astype(np.int64), w, MONOTONE["none"], names),
             "call": _fit(family, x[served][:, cols], (y[served] == 0).astype(np.int64), w[served], MONOTONE["call"],
                          names)}
    for model in heads.values():
        model.toolrag_cols = cols
    return heads


def _predict(heads: Mapping[str, Any], x: np.ndarray) -> np.ndarray:
    """The composed distribution (columns right, ask, none), as :meth:`DecisionModel.probabilities` gives it."""
    none, call = (_proba(heads[name], x[:, heads[name].toolrag_cols])[:, 1] for name in ("none", "call"))
    return np.column_stack([(1 - none) * call, (1 - none) * (1 - call), none])


def fit_and_report(records: Sequence[Mapping[str, Any]], *, families: Sequence[str], export: bool,
                   shift: Sequence[Mapping[str, Any]] = (), left_out: Sequence[str] = ()) -> dict[str, Any]:
    """Leave-one-source-out results of every family, the winner's operating points, (``shift``) what the winner
    fitted on every source gives on episodes of groups it never saw, and (``export``) that model written;
    ``left_out``: features a trial's heads do not read besides :data:`LEFT_OUT`."""
    from bench.decision_conversations import CONVERSATION_KINDS
    from toolrag.decision.view import FEATURES

    x = np.stack([r["x"] for r in records])
    y = labels(records)
    groups = np.array([r["group"] for r in records])
    n = np.array([r["n"] for r in records])
    w = weights(groups, np.array([r["kind"] for r in records]))
    base = baseline(x)
    reader = np.nan_to_num(x[:, FEATURES.index("change_reader")]) > 0
    results: dict[str, Any] = {"episodes": len(records), "families": {}, "groups": sorted(set(groups)),
                               "classes": {c: int((y == k).sum()) for k, c in enumerate(("right", "ask", "none",
                                                                                          "missed"))}}
    pick = np.random.default_rng(7).random(len(records)) < UNREAD_SHARE
    pictured = np.array([bool(r.get("image")) for r in records])
    text, turns, wh = text_rows(records), turn_rows(records), turn_weights(groups, records)
    wt, wi, seen = text_weights(groups, records, w), image_weights(groups, records, w), image_rows(records)
    # what the group tables report: what serving does (a stale episode's fresh copy stands in its place), and the
    # conversations apart (their own table: they are drawn, and their share of a group is arbitrary)
    spoken = spoken_rows(records)
    report = np.array([not r.get("stale") and r["kind"] not in CONVERSATION_KINDS for r in records], dtype=bool)
    best_family, best_score = None, -math.inf
    for family in families:
        # the text heads are fitted on the text episodes, the image heads (read when a request has an image) on
        # every episode but the conversations, the history heads (read when it has earlier turns) on every episode
        # without an image: drawn pictures and conversations must not move a decision about a request without them
        oof = np.zeros((len(records), 3))
        oof_unread = np.zeros((len(records), 3))
        text_on_images = np.zeros((len(records), 3))
        text_on_turns = np.zeros((len(records), 3))
        for group in sorted(set(groups)):
            held = groups == group
            heads = _heads(family, *_with_unread(x, y, wt, ~held & text, pick & text), (*left_out, *HISTORY_ONLY))
            oof[held & ~pictured] = _predict(heads, x[held & ~pictured])
            oof_unread[held] = _predict(heads, _as_unread(x[held]))
            text_on_turns[held & turns] = oof[held & turns]
            if wh is not None and (held & turns).any():  # the heads a request with earlier turns reads
                history_heads = _heads(family, *_with_unread(x, y, wh, ~held & spoken, pick & spoken), left_out)
                oof[held & turns] = _predict(history_heads, x[held & turns])
                oof_unread[held & turns] = _predict(history_heads, _as_unread(x[held & turns]))
            if (held & pictured).any():
                text_on_images[held & pictured] = oof[held & pictured] = _predict(heads, x[held & pictured])
                image_heads = _heads(family, *_with_unread(x, y, wi, ~held & seen, pick & seen),
                                     (*left_out, *HISTORY_ONLY))
                oof[held & pictured] = _predict(image_heads, x[held & pictured])
                oof_unread[held & pictured] = _predict(image_heads, _as_unread(x[held & pictured]))
        # the operating points on the text episodes: the image episodes are drawn, their share of the whole is
        # arbitrary, and their requests nothing serves (a photo that asks for nothing) are easy to keep clean
        points = operating_points(oof[text], y[text], wt[text])
        cleans = clean_points(oof[text], [r for r, t in zip(records, text, strict=True) if t], wt[text])
        # the history heads' own points, on their held-out predictions (each group the same weight among them)
        spoke = _history_points(oof, y, records, groups, turns) if wh is not None and turns.any() else None
        execute_at, inject_below = dict(points)[DEFAULT_TARGET], dict(cleans)[DEFAULT_CLEAN]
        d = decide(oof, execute_at, inject_below, reader)
        per_group = {}
        for group in sorted(set(groups)):
            held = (groups == group) & report
            small = held & (n <= SMALL)
            per_group[group] = {scope: metrics(d[rows], y[rows], [records[i] for i in np.flatnonzero(rows)],
                                               base[rows], oof[rows])
                                for scope, rows in (("all", held), ("small", small))}
        # the ranking quality of P(right) on held-out small catalogs, whatever the threshold: the mean precision
        # at 60% and 70% coverage over the groups
        score = float(np.nanmean([v["small"].get(f"at_{c}", math.nan) for v in per_group.values() for c in (60, 70)]))
        kept = [r for r, k in zip(records, report, strict=True) if k]
        o, u, yr, wr = oof[report], oof_unread[report], y[report], w[report]
        results["families"][family] = {"points": points, "clean_points": cleans, "groups": per_group,
                                       "history_points": spoke,
                                       "score": score, "auc_none": auc(o[:, 2], yr == 2, wr),
                                       "tradeoff": tradeoff(o, yr, wr, points, cleans, kept, reader[report]),
                                       "reliability": reliability(o[:, 0], yr == 0, wr),
                                       "ece": ece(o[:, 0], yr == 0, groups[report]),
                                       "unread": agent_result(decide(u, execute_at, inject_below, reader[report]),
                                                              kept, base[report])}
        if score > best_score:
            best_family, best_score = family, score
        results["families"][family]["oof"] = (oof, text_on_images, text_on_turns)
    results["winner"] = best_family
    for family in families:
        oof, text_on_images, text_on_turns = results["families"][family].pop("oof")
        if family == best_family and pictured.any():
            results["images"] = _kind_outcome(records, pictured, {"with image episodes": oof,
                                                                  "text episodes only": text_on_images},
                                              results["families"][family], base, reader, y)
        if family == best_family and wh is not None:
            chosen = results["families"][family]
            own = {"history heads, their own points": _at(chosen["history_points"]),
                   "history heads, their own EXECUTE point": (_at(chosen["history_points"])[0], _at(chosen)[1])} \
                if chosen["history_points"] else {}
            results["conversations"] = _kind_outcome(
                records, turns, {"history heads": oof, "text heads": text_on_turns,
                                 **dict.fromkeys(own, oof)}, chosen, base, reader, y, points=own)
    if shift and best_family is not None:
        results["shift"] = _shift_outcome(best_family, records, x, y, wt, pick, results["families"][best_family],
                                          shift, left_out)
    if export and best_family is not None:
        results["exported"] = _export(best_family, records, x, y, w, results["families"][best_family], pick,
                                      left_out)
    return results


def _shift_outcome(family: str, records: Sequence[Mapping[str, Any]], x: np.ndarray, y: np.ndarray, wt: np.ndarray,
                   pick: np.ndarray, chosen: Mapping[str, Any], shift: Sequence[Mapping[str, Any]],
                   left_out: Sequence[str] = ()) -> dict[str, Any]:
    """Per group of ``shift`` (episodes of sources never fitted on; their text episodes), at the default point: the
    text heads fitted on every text episode of ``records`` (as :func:`_export` fits them), and ECE of P(right)."""
    from toolrag.decision.view import FEATURES

    shift = [r for r in shift if not r.get("image")]

    text = text_rows(records)
    heads = _heads(family, *_with_unread(x, y, wt, text, pick & text), (*left_out, *HISTORY_ONLY))
    sx, sy = np.stack([r["x"] for r in shift]), labels(shift)
    p = _predict(heads, sx)
    wh, later = turn_weights(np.array([r["group"] for r in records]), records), turn_rows(shift)
    if wh is not None and later.any():
        spoken = spoken_rows(records)
        p[later] = _predict(_heads(family, *_with_unread(x, y, wh, spoken, pick & spoken), left_out), sx[later])
    reader = np.nan_to_num(sx[:, FEATURES.index("change_reader")]) > 0
    d = decide(p, *_at(chosen), reader)
    own, execute = d.copy(), d.copy()  # requests with earlier turns at the history heads' own points
    if chosen.get("history_points") and later.any():
        own[later] = decide(p[later], *_at(chosen["history_points"]), reader[later])
        execute[later] = decide(p[later], _at(chosen["history_points"])[0], _at(chosen)[1], reader[later])
    groups, n, base = np.array([r["group"] for r in shift]), np.array([r["n"] for r in shift]), baseline(sx)
    out: dict[str, Any] = {"ece": ece(p[:, 0], sy == 0, groups)}
    for group in sorted(set(groups)):
        held = groups == group
        scopes = [("all", held, d), ("small", held & (n <= SMALL), d)]
        if (held & later).any():
            scopes += [("turns", held & later, d)] + ([("turns_own", held & later, own),
                                                       ("turns_execute", held & later, execute)]
                                                      if chosen.get("history_points") else [])
        out[group] = {scope: metrics(e[rows], sy[rows], [shift[i] for i in np.flatnonzero(rows)], base[rows], p[rows])
                      for scope, rows, e in scopes}
    return out


def _history_points(oof: np.ndarray, y: np.ndarray, records: Sequence[Mapping[str, Any]], groups: np.ndarray,
                    turns: np.ndarray) -> dict[str, list[tuple[float, float]]]:
    """The operating points of the history heads, read off their held-out predictions on the episodes with earlier
    turns (each group the same total weight among them, each kind its weight)."""
    kept = [records[i] for i in np.flatnonzero(turns)]
    w = weights(groups[turns], np.array([r["kind"] for r in kept]))
    return {"points": operating_points(oof[turns], y[turns], w), "clean_points": clean_points(oof[turns], kept, w)}


def _at(points: Mapping[str, Any]) -> tuple[float, float]:
    """(P(right) threshold, P(no tool) threshold) of ``points`` at the default targets."""
    return dict(points["points"])[DEFAULT_TARGET], dict(points["clean_points"])[DEFAULT_CLEAN]


def _kind_outcome(records: Sequence[Mapping[str, Any]], rows: np.ndarray, predictions: Mapping[str, np.ndarray],
                  chosen: Mapping[str, Any], base: np.ndarray, reader: np.ndarray, y: np.ndarray, *,
                  points: Mapping[str, tuple[float, float]] | None = None) -> dict[str, Any]:
    """The agent's outcome on the held-out episodes ``rows`` (pooled over groups, and by kind) at the default point
    (or a name's own ``points``), per named set of held-out ``predictions``: the image heads against the text heads
    on the image episodes, the history heads against the text heads on the episodes with earlier turns (each group
    predicted by heads fitted on the others)."""
    shared = _at(chosen)
    out: dict[str, Any] = {}
    kinds = np.array([r["kind"] for r in records])
    for name, p in predictions.items():
        d = decide(p, *(points or {}).get(name, shared), reader)
        masks = {"all": rows, **{k: rows & (kinds == k) for k in sorted(set(kinds[rows])) if k not in SIBLINGS}}
        out[name] = {k: {**agent_result(d[m], [records[i] for i in np.flatnonzero(m)], base[m]),
                         "n": int(m.sum()), "accuracy": float(np.mean(
                             [("EXECUTE", "CLARIFY", "NO_TOOL")[c] == records[i]["expect"]
                              for c, i in zip(d[m], np.flatnonzero(m), strict=True)])),
                         "precision": float(np.mean(y[m][d[m] == 0] == 0)) if (d[m] == 0).any() else math.nan}
                     for k, m in masks.items()}
    return out


def _export(family: str, records: Sequence[Mapping[str, Any]], x: np.ndarray, y: np.ndarray, w: np.ndarray,
            chosen: Mapping[str, Any], pick: np.ndarray, left_out: Sequence[str] = ()) -> dict[str, Any]:
    from bench.decision_export import ensemble_json, write_model

    text, spoken = text_rows(records), spoken_rows(records)
    groups = np.array([r["group"] for r in records])
    wt, wh = text_weights(groups, records, w), turn_weights(groups, records)
    alone = (*left_out, *HISTORY_ONLY)
    heads = {name: ensemble_json(model, x, model.toolrag_cols)
             for name, model in _heads(family, *_with_unread(x, y, wt, text, pick & text), alone).items()}
    seen, wi = image_rows(records), image_weights(groups, records, w)
    image_heads = {name: ensemble_json(model, x, model.toolrag_cols)
                   for name, model in _heads(family, *_with_unread(x, y, wi, seen, pick & seen), alone).items()} \
        if any(r.get("image") for r in records) else {}
    history_heads = {name: ensemble_json(model, x, model.toolrag_cols) for name, model in
                     _heads(family, *_with_unread(x, y, wh, spoken, pick & spoken), left_out).items()} \
        if wh is not None else {}
    sx, sy, sg = _selection_data([r for r, t in zip(records, text, strict=True) if t], y[text])  # as the text heads
    selection = ensemble_json(_fit(family, sx, sy, weights(sg)), sx, list(range(sx.shape[1])))
    summary = {g: {k: v for k, v in both["small"].items() if not isinstance(v, dict)} for g, both in
               chosen["groups"].items()}
    return write_model(heads, selection, image_heads=image_heads, history_heads=history_heads,
                       history_points=(chosen["history_points"] or {}).get("points", ()), points=chosen["points"],
                       default_target=DEFAULT_TARGET,
                       clean_points=chosen["clean_points"], default_clean=DEFAULT_CLEAN, select_threshold=0.5,
                       trained={"family": family, "episodes": len(records), "sources": sorted({r["source"] for r in records}),
                                "left_out": [*LEFT_OUT, *left_out], "held_out": summary, "tradeoff": chosen["tradeoff"],
                                "reliability": chosen["reliability"]})
