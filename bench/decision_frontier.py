"""The frontier, not the point: for each decision model file, the share of the top three's reach a right tool
reaches the agent with, at each share of requests nothing serves kept clean, per set of a stored
``bench.decisions`` run (its rows keep their searches and features), without searching again.

    python -m bench.decision_frontier <bench dir>/decisions.json toolrag/decision/model.json <bench dir>/trial.json
    python -m bench.decision_frontier <bench dir>/before.json toolrag/decision/model.json --searched-again <bench dir>/decisions.json

The second form compares one model on the same rows searched by two revisions (a change of what the search
reads, the model unchanged): the rows must be the same requests in the same order. A model moves the frontier
when it reaches more at the same clean share; a model that only reaches more at its
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import parse_args

__all__ = ["CLEAN_SHARES", "Outcomes", "frontier", "main", "outcomes", "paired_differences"]

#: The clean shares at which the frontier is read.
CLEAN_SHARES = (0.7, 0.8, 0.85, 0.9, 0.95)


def _called(row: dict[str, Any], model: Any) -> set[str]:
    """What an EXECUTE injects: the top tool and the lower candidates the model selects with it."""
    also = model.also_selected(np.array(row["cand"], dtype=np.float64)) if row.get("cand") else 0
    return set(row["top"][: 1 + also])


@dataclass(frozen=True)
class Outcomes:
    """One model's decisions on one set's rows, per P(no tool) threshold tried: whether a right tool was
    injected (``hit``, rows a listed tool serves) and whether nothing was (``empty``, rows nothing serves);
    rows x thresholds, and the default point's ``own`` column."""

    served: np.ndarray
    top3: np.ndarray
    hit: np.ndarray
    empty: np.ndarray
    own: np.ndarray

    def read(self, weights: np.ndarray | None = None) -> dict[str, float]:
        """``{"own": reach ratio at the default point, "clean_<share>": the best reach ratio at that clean share
        or more}`` (NaN where the set has no such rows), the rows weighted by ``weights`` (a bootstrap draw's
        counts; default one each)."""
        w = np.ones(len(self.served)) if weights is None else weights
        ws, wn = w * self.served, w * ~self.served
        reach3 = float(ws @ self.top3)
        if not reach3:
            return {"own": math.nan}
        out = {"own": float(ws @ self.own) / reach3}
        if wn.sum() > 0:
            reach, clean = (ws @ self.hit) / reach3, (wn @ self.empty) / wn.sum()
            for share in CLEAN_SHARES:
                ok = reach[clean >= share - 1e-9]
                out[f"clean_{int(100 * share)}"] = float(ok.max()) if len(ok) else math.nan
        return out


def outcomes(rows: Sequence[dict[str, Any]], model: Any) -> Outcomes:
    """The decisions of ``model`` on ``rows`` (stored ``bench.decisions`` rows) at its default EXECUTE threshold,
    for at most about 200 P(no tool) thresholds (every distinct value it gives, thinned) and its default one."""
    from toolrag.decision.outcome import Decision, DecisionScores
    from toolrag.decision.policy import OperatingPoint, choose, operating_point
    from toolrag.decision.view import FEATURES

    point, later = operating_point(model), operating_point(model, history=True)  # later: earlier turns read
    gold = [set(r["gold"]) for r in rows]
    probs = [model.probabilities(np.array(r["x"], dtype=np.float64)) if r["x"] and r["decided_by"] == "model"
             else None for r in rows]
    reader = FEATURES.index("change_reader")
    scores = [None if p is None else DecisionScores(p["right"], p["ask"], p["none"]) for p in probs]
    called = [None if p is None else _called(r, model) for r, p in zip(rows, probs, strict=True)]

    turns = [r["x"] is not None and len(r["x"]) > 0 and model.reads_history(np.array(r["x"], dtype=np.float64))
             for r in rows]

    def outcome(inject_below: float | None) -> tuple[list[bool], list[bool]]:
        """At the P(no tool) threshold ``inject_below`` for every row (``None``: each row's own default)."""
        hit, empty = [], []
        for r, g, score, call, turn in zip(rows, gold, scores, called, turns, strict=True):
            own = later if turn else point
            at = OperatingPoint(own.execute_at, own.inject_below if inject_below is None else inject_below,
                                math.nan, math.nan)
            if score is None or call is None:  # an invariant decided: its decision stays
                shown = set(r["selected"])
            else:
                decision = choose(score, at, change_reader=bool(np.nan_to_num(r["x"][reader]) > 0))
                shown = call if decision is Decision.EXECUTE else set(r["top"][:3]) \
                    if decision is Decision.CLARIFY else set()
            hit.append(bool(shown & g))
            empty.append(not shown)
        return hit, empty

    values = sorted({p["none"] for p in probs if p is not None})
    values = [0.0, *values[:: max(1, len(values) // 200)], *values[-1:], 1.01]
    tried = [outcome(t) for t in values]
    return Outcomes(served=np.array([bool(g) for g in gold]),
                    top3=np.array([bool(set(r["top"][:3]) & g) for r, g in zip(rows, gold, strict=True)]),
                    hit=np.array([h for h, _ in tried], dtype=float).T, empty=np.array([e for _, e in tried],
                                                                                     dtype=float).T,
                    own=np.array(outcome(None)[0], dtype=float))


def frontier(rows: Sequence[dict[str, Any]], model: Any) -> dict[str, float]:
    """:meth:`Outcomes.read` of :func:`outcomes`: the reach ratio at the default point and at each clean share."""
    return outcomes(rows, model).read()


def paired_differences(sets: Mapping[str, Sequence[Outcomes]], *, draws: int = 200,
                       seed: int = 0) -> tuple[np.ndarray, list[list[tuple[float, float]]]]:
    """(per model and clean share, the mean reach ratio over ``sets``, each a list of every model's
    :class:`Outcomes` on it, where every model reaches the share; per model after the first and clean share, the
    difference of that mean from the first model's and its standard error over ``draws`` bootstrap draws of each
    set's rows, the same rows for every model)."""
    rng = np.random.default_rng(seed)
    names = list(sets)
    models = len(next(iter(sets.values())))

    def means(weights: Mapping[str, np.ndarray | None]) -> np.ndarray:
        out = np.full((models, len(CLEAN_SHARES)), math.nan)
        reads = {n: [o.read(weights[n]) for o in sets[n]] for n in names}
        for j, share in enumerate(CLEAN_SHARES):
            key = f"clean_{int(100 * share)}"
            kept = [n for n in names if all(math.isfinite(r.get(key, math.nan)) for r in reads[n])]
            if kept:
                out[:, j] = [np.mean([reads[n][m][key] for n in kept]) for m in range(models)]
        return out

    point = means(dict.fromkeys(names))
    if not draws:
        return point, [[(float(point[m, j] - point[0, j]), math.nan) for j in range(len(CLEAN_SHARES))]
                       for m in range(1, models)]
    spread = np.array([means({n: rng.multinomial(len(sets[n][0].served), np.full(len(sets[n][0].served),
                                                                                   1 / len(sets[n][0].served)))
                              .astype(float) for n in names}) for _ in range(draws)])
    diff = spread - spread[:, :1, :]
    return point, [[(float(point[m, j] - point[0, j]), float(np.nanstd(diff[:, m, j])) if draws else math.nan)
                    for j in range(len(CLEAN_SHARES))] for m in range(1, models)]


def _stored_sets(file: Path) -> dict[str, list[dict[str, Any]]]:
    """The stored rows of a ``bench.decisions`` results file per set, the eight other languages' sets as one."""
    stored = json.loads(file.read_text(encoding="utf-8"))
    sets: dict[str, list[dict[str, Any]]] = dict(stored.get("rows", {}))
    if not sets:
        raise SystemExit(f"{file}: no stored rows; write them with `python -m bench.decisions`")
    others = [r for name, rows in sets.items() if name.startswith("multilingual_") and name != "multilingual_en"
              for r in rows]
    sets = {k: v for k, v in sets.items() if not k.startswith("multilingual_") or k == "multilingual_en"}
    if others:
        sets["multilingual (8 languages)"] = others
    return sets


def _pct(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{100 * value:.1f}"


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("results", type=Path, help="a bench.decisions results file (JSON) with stored rows")
        parser.add_argument("models", type=Path, nargs="+", help="decision model files (model.json); the first is "
                                                                 "the one the others are compared with")
        parser.add_argument("--draws", type=int, default=200, help="bootstrap draws for the standard errors")
        parser.add_argument("--searched-again", type=Path, default=None,
                            help="a second results file of the same rows searched by another revision: the one "
                                 "model is read on both (the first is the one compared with)")

    args = parse_args("bench.decision_frontier", "the decision's frontier per set, for several models", argv, options)
    from toolrag.decision.model import DecisionModel

    again = [args.searched_again] if args.searched_again else []
    for file in (args.results, *args.models, *again):
        if not file.is_file():
            raise SystemExit(f"{file}: no such file (the results of `python -m bench.decisions`, then model files)")
    if again and len(args.models) != 1:
        raise SystemExit("--searched-again compares one model on two searches of the same rows: give one model file")
    searches = {str(f): _stored_sets(f) for f in (args.results, *again)}
    model_files = {str(m): DecisionModel.from_json(m.read_text(encoding="utf-8")) for m in args.models}
    first = next(iter(searches.values()))
    if again:
        second = searches[str(args.searched_again)]
        for name, rows in second.items():
            if name in first and [r["query"] for r in rows] != [r["query"] for r in first[name]]:
                raise SystemExit(f"{args.searched_again}: the rows of {name} are not those of {args.results} "
                                 "(the same requests in the same order are needed)")
        columns = {f"{label}, rows of {file}": (sets, model) for label, model in model_files.items()
                   for file, sets in searches.items()}
    else:
        columns = {label: (first, model) for label, model in model_files.items()}
    names = [n for n in first if all(n in sets for sets, _ in columns.values())]
    shares = "/".join(f"{int(100 * s)}" for s in CLEAN_SHARES)
    print(f"Share of the top three's reach, at clean {shares} (rows nothing serves) or at the model's own point:\n")
    print("| set | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    computed = {name: [outcomes(sets[name], model) for sets, model in columns.values()] for name in names}
    for name, per_model in computed.items():
        cells = []
        for o in per_model:
            f = o.read()
            if "clean_70" in f:
                cells.append("/".join(_pct(f[f"clean_{int(100 * s)}"]) for s in CLEAN_SHARES))
            else:
                cells.append(f"{_pct(f['own'])} (own point)")
        print(f"| {name} | " + " | ".join(cells) + " |")
    with_none = {n: o for n, o in computed.items() if "clean_70" in o[0].read()}
    point, differences = paired_differences(with_none, draws=args.draws)
    print("| mean of the sets with rows nothing serves (where every model reaches the share) | "
          + " | ".join("/".join(_pct(v) for v in row) for row in point) + " |")
    if len(columns) < 2:
        return 0
    print(f"\nThe mean's difference from {next(iter(columns))}, +- its standard error over {args.draws} bootstrap "
          "draws of each set's rows (the same rows for every column):\n")
    for label, diff in zip(list(columns)[1:], differences, strict=True):
        print(f"- {label}: " + ", ".join(f"{int(100 * s)}% {100 * d:+.1f} +- {100 * e:.1f}"
                                         for s, (d, e) in zip(CLEAN_SHARES, diff, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
