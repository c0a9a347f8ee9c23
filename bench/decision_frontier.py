"""The frontier, not the point: for each decision model file, the share of the top three's reach a right tool
reaches the agent with, at each share of requests nothing serves kept clean, per set of a stored
``bench.decisions`` run (its rows keep their searches and features), without searching again.

    python -m bench.decision_frontier <bench dir>/decisions.json toolrag/decision/model.json /tmp/trial.json

A model moves the frontier when it reaches more at the same clean share; a model that only reaches more at its
own default point may just sit elsewhere on the same frontier. For every clean share the P(no tool) threshold is
the highest that keeps at least that share of the set's rows nothing serves clean (the best the model can do on
that set: an upper bound for both models alike); the EXECUTE threshold is each model's default. Sets without rows
nothing serves are read at each model's own default point. The same approximations as
:mod:`bench.decision_rescore` (a CLARIFY injects the top three; no stuffing flags are stored).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import parse_args

__all__ = ["CLEAN_SHARES", "frontier", "main"]

#: The clean shares at which the frontier is read.
CLEAN_SHARES = (0.7, 0.8, 0.85, 0.9, 0.95)


def _called(row: dict[str, Any], model: Any) -> set[str]:
    """What an EXECUTE injects: the top tool and each next one whose P(also needed) reaches the threshold."""
    chosen = [row["top"][0]]
    if row.get("cand"):
        for tool, q in zip(row["top"][1:], model.also_needed(np.array(row["cand"], dtype=np.float64)), strict=False):
            if q < model.select_threshold:
                break
            chosen.append(tool)
    return set(chosen)


def frontier(rows: Sequence[dict[str, Any]], model: Any) -> dict[str, float]:
    """``{"own": reach ratio at the model's default point, "clean_<share>": the best reach ratio at that clean
    share or more}`` (NaN where the set has no such rows)."""
    from toolrag.decision.outcome import Decision, DecisionScores
    from toolrag.decision.policy import OperatingPoint, choose, operating_point
    from toolrag.decision.view import FEATURES

    point = operating_point(model)
    gold = [set(r["gold"]) for r in rows]
    served = np.array([bool(g) for g in gold])
    top3 = np.array([bool(set(r["top"][:3]) & g) for r, g in zip(rows, gold, strict=True)])
    probs = [model.probabilities(np.array(r["x"], dtype=np.float64)) if r["x"] and r["decided_by"] == "model"
             else None for r in rows]
    reach3 = top3[served].mean() if served.any() else math.nan

    reader = FEATURES.index("change_reader")
    scores = [None if p is None else DecisionScores(p["right"], p["ask"], p["none"]) for p in probs]
    called = [None if p is None else _called(r, model) for r, p in zip(rows, probs, strict=True)]

    def outcome(inject_below: float) -> tuple[float, float]:
        at = OperatingPoint(point.execute_at, inject_below, math.nan, math.nan)
        hit, empty = [], []
        for r, g, score, call in zip(rows, gold, scores, called, strict=True):
            if score is None or call is None:  # an invariant decided: its decision stays
                shown = set(r["selected"])
            else:
                decision = choose(score, at, change_reader=bool(np.nan_to_num(r["x"][reader]) > 0))
                shown = call if decision is Decision.EXECUTE else set(r["top"][:3]) \
                    if decision is Decision.CLARIFY else set()
            hit.append(bool(shown & g))
            empty.append(not shown)
        h, e = np.array(hit), np.array(empty)
        return (float(h[served].mean() / reach3) if served.any() and reach3 else math.nan,
                float(e[~served].mean()) if (~served).any() else math.nan)

    out = {"own": outcome(point.inject_below)[0]}
    if (~served).any():
        values = sorted({p["none"] for p in probs if p is not None})
        values = [0.0, *values[:: max(1, len(values) // 200)], *values[-1:], 1.01]  # at most ~200 thresholds
        points = [outcome(t) for t in values]
        for share in CLEAN_SHARES:
            ok = [reach for reach, clean in points if clean >= share - 1e-9]
            out[f"clean_{int(100 * share)}"] = max(ok) if ok else math.nan
    return out


def _pct(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{100 * value:.1f}"


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("results", type=Path, help="a bench.decisions results file (JSON) with stored rows")
        parser.add_argument("models", type=Path, nargs="+", help="decision model files (model.json)")

    args = parse_args("bench.decision_frontier", "the decision's frontier per set, for several models", argv, options)
    from toolrag.decision.model import DecisionModel

    stored = json.loads(args.results.read_text(encoding="utf-8"))
    sets: dict[str, list[dict[str, Any]]] = dict(stored.get("rows", {}))
    others = [r for name, rows in sets.items() if name.startswith("multilingual_") and name != "multilingual_en"
              for r in rows]
    sets = {k: v for k, v in sets.items() if not k.startswith("multilingual_") or k == "multilingual_en"}
    if others:
        sets["multilingual (8 languages)"] = others
    models = {str(m): DecisionModel.from_json(m.read_text(encoding="utf-8")) for m in args.models}
    shares = "/".join(f"{int(100 * s)}" for s in CLEAN_SHARES)
    print(f"Share of the top three's reach, at clean {shares} (rows nothing serves) or at the model's own point:\n")
    print("| set | " + " | ".join(models) + " |")
    print("|---|" + "---|" * len(models))
    table = {name: {label: frontier(rows, model) for label, model in models.items()} for name, rows in sets.items()}
    for name, per_model in table.items():
        cells = []
        for f in per_model.values():
            if "clean_70" in f:
                cells.append("/".join(_pct(f[f"clean_{int(100 * s)}"]) for s in CLEAN_SHARES))
            else:
                cells.append(f"{_pct(f['own'])} (own point)")
        print(f"| {name} | " + " | ".join(cells) + " |")
    # the mean at each share over the sets where every model reaches it (rows nothing serves, and that share)
    cells = []
    for label in models:
        means = []
        for share in CLEAN_SHARES:
            key = f"clean_{int(100 * share)}"
            both = [per[label][key] for per in table.values()
                    if key in per[label] and all(math.isfinite(f.get(key, math.nan)) for f in per.values())]
            means.append(float(np.mean(both)) if both else math.nan)
        cells.append("/".join(_pct(v) for v in means))
    print("| mean of the sets with rows nothing serves (where every model reaches the share) | " + " | ".join(cells)
          + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
