"""The statistics and tables of ``bench.label_free``: how far the label-free risk agrees with labelled results
(pure functions, tested on hand-worked rows in tests/test_label_free_logic.py)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["agreement", "candidate_table", "evaluate_agreement", "fit_model", "format_tables", "split_half"]


def agreement(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Agreement of the label-free risk with the labelled one over ``rows`` ({p_first, labelled_first,
    rival, labelled_winner}): shares in [0, 1], kappa, Spearman's rho, AUC and the rival hit rate."""
    if not rows:
        return {"tools": 0}
    pred = np.array([r["p_first"] < 0.5 for r in rows])
    lab = np.array([r["labelled_first"] < 0.5 for r in rows])
    agree = float(np.mean(pred == lab))
    p_yes, l_yes = float(pred.mean()), float(lab.mean())
    chance = p_yes * l_yes + (1 - p_yes) * (1 - l_yes)
    kappa = (agree - chance) / (1 - chance) if chance < 1 else math.nan
    est = np.array([r["p_first"] for r in rows])
    share = np.array([r["labelled_first"] for r in rows])
    lost = [r for r in rows if r.get("labelled_winner")]
    return {"tools": len(rows), "labelled_at_risk": int(lab.sum()), "flagged": int(pred.sum()), "agreement": agree,
            "majority": max(l_yes, 1 - l_yes), "kappa": kappa, "rho": _spearman(est, share),
            "auc": _auc(-est, lab), "rival_hits": sum(r.get("rival") == r["labelled_winner"] for r in lost) / len(lost)
            if lost else math.nan, "rival_cases": len(lost)}


def _ranks(values: np.ndarray) -> np.ndarray:
    order = values.argsort(kind="mergesort")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values))
    for v in np.unique(values):  # ties share their mean rank
        ranks[values == v] = ranks[values == v].mean()
    return ranks


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return math.nan
    return float(np.corrcoef(_ranks(a), _ranks(b))[0, 1])


def _auc(scores: np.ndarray, positive: np.ndarray) -> float:
    pos, neg = scores[positive], scores[~positive]
    if not len(pos) or not len(neg):
        return math.nan
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def fit_model(rows: Sequence[Mapping[str, Any]], target: str) -> dict[str, float]:
    """Logistic regression of a tool's labelled share ``target`` (``labelled_first`` or ``labelled_top5``) on
    its features, each tool weighted by its number of labelled requests (successes and failures as two rows)."""
    from sklearn.linear_model import LogisticRegression

    names = ("own_first", "own_margin", "sentence_first")
    x, y, w = [], [], []
    for r in rows:
        vec = [r["features"][n] for n in names]
        k = r["n_labelled"]
        x += [vec, vec]
        y += [1, 0]
        w += [r[target] * k, (1 - r[target]) * k]
    model = LogisticRegression(C=1.0).fit(np.array(x), np.array(y), sample_weight=np.array(w))
    return {"intercept": round(float(model.intercept_[0]), 3),
            **{n: round(float(c), 3) for n, c in zip(names, model.coef_[0], strict=True)}}


def candidate_table(results: dict[str, Any]) -> str:
    """Rank correlation and AUC (at risk) of each candidate predictor with the labelled found-first share."""
    names = ("own_first", "own_margin", "sentence_first", "bank_first", "name_first", "nn_distance")
    sets = {n: s for n, s in results["sets"].items() if s.get("candidates")}
    if not sets:
        return ""
    lines = ["| candidate | " + " | ".join(sets) + " |", "|---|" + "---|" * len(sets)]
    for cand in names:
        cells = []
        for res in sets.values():
            rows = [r for r in res["rows"] if r["tool_id"] in res["candidates"]]
            value = np.array([res["candidates"][r["tool_id"]][cand] for r in rows])
            share = np.array([r["labelled_first"] for r in rows])
            cells.append(f"{_spearman(value, share):+.2f} / {_auc(-value, share < 0.5):.2f}")
        lines.append(f"| {cand} | " + " | ".join(cells) + " |")
    return ("Candidate predictors, each alone (rank correlation with the labelled found-first share / AUC of "
            "the tools at risk):\n\n" + "\n".join(lines))


def evaluate_agreement(results: dict[str, Any], model: Any) -> dict[str, dict[str, float]]:
    from toolrag.evaluation.risk import estimate

    table = {}
    for name, res in results["sets"].items():
        rows = [{**r, "p_first": estimate(r["features"], model)[0]} for r in res["rows"]]
        if name == "sample_tools" or not name.startswith("train_"):
            rows = [r for r in rows if r["n_labelled"] >= 1]
        table[name] = agreement(rows)
    return table


def _pct(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def format_tables(results: dict[str, Any]) -> str:
    lines = [f"Risk model: {results['model']}", "",
             "| set | tools | labelled at risk | flagged | agreement | constant answer | kappa | rho | AUC | "
             "rival = labelled winner |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, a in results["agreement"].items():
        if not a.get("tools"):
            continue
        lines.append(f"| {name} | {a['tools']} | {a['labelled_at_risk']} | {a['flagged']} | {_pct(a['agreement'])} | "
                     f"{_pct(a['majority'])} | {a['kappa']:.2f} | {a['rho']:.2f} | {a['auc']:.2f} | "
                     f"{_pct(a['rival_hits'])} of {a['rival_cases']} |")
    lines += ["", "Cost of the label-free check (tools checked, searches, seconds on this shared machine): " + "; ".join(
        f"{n} {len(s['rows'])}, {s['searched']}, {s['seconds']:.1f} s" for n, s in results["sets"].items())]
    if candidate_table(results):
        lines += ["", candidate_table(results)]
    if results.get("split_half"):
        lines += ["", "Split-half reliability of the labelled result itself (rank correlation of the found-first "
                  "share between the odd and the even requests of each tool): " + ", ".join(
                      f"{n} {v:.2f}" for n, v in results["split_half"].items())]
    return "\n".join(lines)


def split_half(sets: Mapping[str, Any]) -> dict[str, float]:
    """Per set, the rank correlation of each tool's found-first share over its odd and its even labelled
    requests (tools with at least 4): how far the labelled result itself repeats, the ceiling of any estimate."""
    out = {}
    for name, res in sets.items():
        halves = [(statistics.mean(r["hits"][0::2]), statistics.mean(r["hits"][1::2])) for r in res["rows"]
                  if len(r.get("hits", ())) >= 4]
        if len(halves) >= 10:
            a, b = np.array(halves).T
            out[name] = _spearman(a, b)
    return out


