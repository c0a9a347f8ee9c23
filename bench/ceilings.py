"""How far any decision over these results could go: ceilings of issue 10's targets, with the answers known.

``python -m bench.decisions`` measures the shipped decision, fitted from each catalog alone. This script asks a
different question: with the *same* results (the same ranking, the same decision features, the shipped model's
own probabilities and decision), how well could a decision do if it were fitted on the set's own labels? Every
row runs through ``ToolRetriever.search`` with the shipped settings (``bench.decision_sets.SetOpener``: the same
sets, indexes and caches), and then, for each set:

- **no tool** (sets with rows that need none): out-of-fold P(no tool) of a logistic regression and of
  gradient-boosted trees fitted on the set's own labels (5-fold stratified cross-fitting, fixed seeds) over the
  decision features plus the shipped model's three probabilities and its decision; their AUC, and the accuracy
  at the best threshold chosen *with the labels* (optimistic on purpose: a ceiling). The shipped P(no tool) at
  its best threshold is beside them.
- **EXECUTE precision**: only rows whose top tool is right can be called rightly, so no decision calls more
  than ``top-1 / 0.9`` of the rows that need a tool at 90% precision (the oracle column, which knows which
  calls are right); the columns beside it give the share that the shipped P(right) and a cross-fitted P(right)
  (same features, the set's labels) can call at 90% precision.
- **the operating point**: decision accuracy per set had the model turned requests away from a lower
  P(no tool) than the shipped 0.5 (what one global threshold trades between sets).
- **the selection** (MetaTool single + two-tool, Seal-Tools in + out: one catalog each): P(a lower
  candidate is a gold tool too) cross-fitted on those requests, and the selection it would cut at several
  thresholds: Completeness of the requests with several gold tools against the tools injected.
- **bundled**: a three-class model of the expected decision (EXECUTE / CLARIFY / NO_TOOL), cross-fitted on
  the bundled rows: its decision accuracy and CLARIFY recall against the shipped decision's.

    python -m bench.ceilings                        # every set of bench.decisions but bundled_tuned and small
    python -m bench.ceilings --sets bundled,metatool_task1
    python -m bench.ceilings --write-docs           # ... and its section of docs/decisions.md

A ceiling under a target says that the target cannot be met by any decision rule or model over these
results: what would have to change is the ranking or the features (the models that read the requests).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.common import REPO, engine_description, git_rev, keep_results, machine, parse_args, say
from bench.decision_sets import DECISION_SETS, SetOpener, expected_decision
from bench.decisions import _pct, auc

__all__ = ["FeatureRow", "best_threshold_accuracy", "cross_fitted", "fittable", "main", "max_coverage_at",
           "selection_ceiling", "with_no_tool_threshold"]

DOC = REPO / "docs" / "decisions.md"
#: Precision at which the coverage columns are read (issue 10's EXECUTE-precision target).
PRECISION = 0.9
FOLDS = 5
#: P(no tool) thresholds of the operating-point table (the shipped one is 0.5).
THRESHOLDS = (0.5, 0.4, 0.3, 0.2)
#: Thresholds of the selection ceiling's table.
SELECT_THRESHOLDS = (0.5, 0.3, 0.2, 0.1, 0.05)
#: Sets read together for the selection ceiling: one catalog, single- and several-tool requests.
SELECTION_POOLS = {"metatool": ("metatool_single", "metatool_multi"), "seal_tools": ("seal_in", "seal_out")}
_DECISIONS = ("EXECUTE", "CLARIFY", "NO_TOOL")
_KINDS = ("logistic", "trees")


@dataclass(frozen=True)
class FeatureRow:
    """One request: what was expected, what the shipped decision said, and what it read."""

    expect: str
    needs_tool: bool
    right: bool
    decision: str
    p_right: float
    p_ambiguous: float
    p_no_tool: float
    features: tuple[float, ...]
    decided_by: str = "model"
    candidates: tuple[tuple[float, ...], ...] = ()
    """:func:`candidate_features` of candidates 2..k, in rank order."""
    gold_at: tuple[bool, ...] = ()
    """Whether candidates 1..k are gold tools."""
    gold_count: int = 0
    selected: int = 0

    def vector(self) -> list[float]:
        """The decision features, the shipped probabilities and the shipped decision (one-hot): everything the
        shipped decision knows about the result."""
        shipped = [float(self.decision == d) for d in _DECISIONS]
        return [*self.features, self.p_right, self.p_ambiguous, self.p_no_tool, *shipped]


#: The signals whose normalised score and rank describe a lower candidate (:func:`candidate_features`).
_CANDIDATE_SIGNALS = ("dense", "dense_en", "bm25")


def candidate_features(candidates: Sequence[Any], position: int) -> tuple[float, ...]:
    """What the selection ceiling reads about the candidate at ``position`` (0-based, >= 1): its fused score's gap
    to the top one's and to the one above it, its fused score, its position, and each text signal's normalised
    score and rank (NaN when the signal did not score it)."""
    c, top, above = candidates[position], candidates[0], candidates[position - 1]
    out = [top.score - c.score, above.score - c.score, c.score, float(position + 1)]
    for name in _CANDIDATE_SIGNALS:
        sig = c.signals.get(name)
        out += [sig.norm, float(sig.rank)] if sig is not None else [math.nan, math.nan]
    return tuple(out)


def collect(retriever: Any, rows: Sequence[Any], *, top_k: int = 5) -> list[FeatureRow]:
    """Each labelled row searched with the shipped settings, and what its result holds for the ceilings."""
    from toolrag.decision.view import FEATURES

    out = []
    for row in rows:
        result = retriever.search(row.query, image=row.image, permissions=row.permissions, role=row.role,
                                  history=row.history, top_k=top_k)
        scores = result.scores
        feats = result.decision_features
        out.append(FeatureRow(
            expected_decision(row), bool(row.gold), bool(result.ids) and result.ids[0] in row.gold, result.decision.value,
            scores.right if scores else 0.0, scores.ambiguous if scores else 0.0, scores.no_tool if scores else 1.0,
            tuple(float(feats.get(name, math.nan)) for name in FEATURES), result.decided_by.value,
            tuple(candidate_features(result.candidates, i) for i in range(1, len(result.candidates))),
            tuple(c.id in row.gold for c in result.candidates), len(set(row.gold)), len(result.selected)))
    return out


def _model(kind: str, seed: int) -> Any:
    """``logistic`` (missing values replaced by the training median, standardised, L2 with C = 1) or ``trees``
    (histogram gradient boosting, depth 3, 200 rounds, leaves of 5 rows or more, so that a set's few CLARIFY
    rows can have a leaf of their own; missing values as their own branch)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "logistic":
        return make_pipeline(SimpleImputer(strategy="median", keep_empty_features=True), StandardScaler(),
                             LogisticRegression(C=1.0, max_iter=2000))
    if kind == "trees":
        return HistGradientBoostingClassifier(max_depth=3, learning_rate=0.1, max_iter=200, min_samples_leaf=5,
                                              random_state=seed)
    raise ValueError(f"kind must be 'logistic' or 'trees', got {kind!r}")


def cross_fitted(x: np.ndarray, y: np.ndarray, *, kind: str, folds: int = FOLDS, seed: int = 0) -> np.ndarray:
    """Out-of-fold class probabilities (rows x classes, classes in ``np.unique(y)`` order) of a model fitted on
    the other folds (stratified, shuffled with ``seed``); ``kind``: see :func:`_model`."""
    from sklearn.model_selection import StratifiedKFold

    classes = np.unique(y)
    out = np.zeros((len(y), len(classes)))
    smallest = min(int((y == c).sum()) for c in classes)
    splitter = StratifiedKFold(n_splits=max(2, min(folds, smallest)), shuffle=True, random_state=seed)
    for train, test in splitter.split(x, y):
        model = _model(kind, seed)
        model.fit(x[train], y[train])
        got = model.predict_proba(x[test])
        for j, c in enumerate(model.classes_):
            out[test, int(np.searchsorted(classes, c))] = got[:, j]
    return out


def _descending(scores: Sequence[float], labels: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    """Scores sorted from the highest, with their labels (a stable sort: tied rows keep their order)."""
    s = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-s, kind="stable")
    return s[order], np.asarray(labels, dtype=bool)[order]


def best_threshold_accuracy(scores: Sequence[float], positive: Sequence[bool]) -> float:
    """The highest accuracy of "positive when score >= t" over every threshold t (the labels choose t: a
    ceiling, not an operating point). With scores sorted descending, calling the first i rows positive is
    right for (positives among them) + (negatives after them); ties are cut only between distinct scores."""
    s, y = _descending(scores, positive)
    if not len(s):
        return math.nan
    pos_before = np.concatenate([[0], np.cumsum(y)])
    neg_after = (~y).sum() - np.concatenate([[0], np.cumsum(~y)])
    cuts = [0, *(i for i in range(1, len(s)) if s[i] != s[i - 1]), len(s)]
    return float(max(pos_before[i] + neg_after[i] for i in cuts) / len(s))


def max_coverage_at(p_right: Sequence[float], right: Sequence[bool], precision: float = PRECISION) -> float:
    """The largest share of rows that calling the rows of highest ``p_right`` first reaches with a precision of
    at least ``precision`` (0 when even the first row is wrong). Cuts fall only between distinct values, so
    tied rows are called or not together."""
    p, r = _descending(p_right, right)
    if not len(p):
        return math.nan
    hits = np.cumsum(r)
    best = 0
    for i in range(1, len(p) + 1):
        if (i == len(p) or p[i] != p[i - 1]) and hits[i - 1] >= precision * i:
            best = i
    return best / len(p)


def with_no_tool_threshold(rows: Sequence[FeatureRow], threshold: float) -> float:
    """Decision accuracy if rule 3 turned every request the model decided (``decided_by`` model) away from
    P(no tool) >= ``threshold`` instead of 0.5 (only lower thresholds are read: a call or a question the model
    made becomes NO_TOOL; a NO_TOOL stays one). The other rules keep their decisions."""
    right = 0
    for r in rows:
        decision = r.decision
        if decision != "NO_TOOL" and r.decided_by == "model" and r.p_no_tool >= threshold:
            decision = "NO_TOOL"
        right += decision == r.expect
    return right / len(rows) if rows else math.nan


def fittable(labels: Sequence[Any] | np.ndarray) -> bool:
    """Two classes or more, each with two rows or more: what cross-fitting needs (every training fold then
    holds every class). A set cut short by ``--limit`` may not; its model columns read n/a."""
    _, counts = np.unique(np.asarray(labels), return_counts=True)
    return len(counts) >= 2 and int(counts.min()) >= 2


def ceilings(rows: Sequence[FeatureRow]) -> dict[str, float]:
    """Every ceiling of one set (fractions)."""
    x = np.array([r.vector() for r in rows], dtype=np.float64)
    out: dict[str, float] = {"n": float(len(rows))}
    for t in THRESHOLDS:
        out[f"accuracy_at_{t:.2f}"] = with_no_tool_threshold(rows, t)
    needs = np.array([r.needs_tool for r in rows])
    if needs.any() and (~needs).any():
        none = ~needs
        out["no_tool_auc_shipped"] = auc([r.p_no_tool for r in rows], none)
        out["no_tool_acc_shipped"] = float(np.mean((np.array([r.decision for r in rows]) == "NO_TOOL") == none))
        out["no_tool_best_acc_shipped"] = best_threshold_accuracy([r.p_no_tool for r in rows], none)
        for kind in _KINDS if fittable(none) else ():
            p = cross_fitted(x, none.astype(int), kind=kind)[:, 1]
            out[f"no_tool_auc_{kind}"] = auc(p, none)
            out[f"no_tool_best_acc_{kind}"] = best_threshold_accuracy(p, none)
    tool = [r for r in rows if r.needs_tool]
    if tool:
        right = np.array([r.right for r in tool])
        out["top1"] = float(right.mean())
        out["coverage_oracle"] = min(1.0, float(right.mean()) / PRECISION)
        out["coverage_shipped"] = max_coverage_at([r.p_right for r in tool], right)
        if fittable(right):
            xt = np.array([r.vector() for r in tool], dtype=np.float64)
            for kind in _KINDS:
                out[f"coverage_{kind}"] = max_coverage_at(cross_fitted(xt, right.astype(int), kind=kind)[:, 1], right)
    expect = np.array([r.expect for r in rows])
    if (expect == "CLARIFY").any():
        decided = np.array([r.decision for r in rows])
        out["accuracy_shipped"] = float((decided == expect).mean())
        out["clarify_recall_shipped"] = float((decided[expect == "CLARIFY"] == "CLARIFY").mean())
        for kind in _KINDS if fittable(expect) else ():
            probs = cross_fitted(x, expect, kind=kind)
            guess = np.unique(expect)[probs.argmax(axis=1)]
            out[f"accuracy_{kind}"] = float((guess == expect).mean())
            out[f"clarify_recall_{kind}"] = float((guess[expect == "CLARIFY"] == "CLARIFY").mean())
    return out


def selection_ceiling(rows: Sequence[FeatureRow], *, thresholds: Sequence[float] = SELECT_THRESHOLDS
                      ) -> list[dict[str, float]]:
    """The selection with the labels known: P(candidate 2..k is a gold tool too) cross-fitted (trees; the folds
    keep each request's candidates together) over every row of ``rows`` that needs a tool and was not turned
    away, then, for each threshold t, the selection the shipped rule would make with it (the top tool, then each
    next candidate while its P >= t). Per t: Completeness of the selection (every gold tool in it) on the rows
    with two gold tools or more, its mean size there and on the single-tool rows. The first entry (t = nan) is
    the shipped selection, the second (t = -1) the top five."""
    from sklearn.model_selection import GroupKFold

    used = [r for r in rows if r.needs_tool and r.selected and r.candidates]
    if len(used) < 2:
        return []  # nothing to cross-fit (e.g. --limit below the folds)
    x = np.array([c for r in used for c in r.candidates], dtype=np.float64)
    y = np.array([g for r in used for g in r.gold_at[1:len(r.candidates) + 1]], dtype=int)
    groups = np.array([i for i, r in enumerate(used) for _ in r.candidates])
    p = np.zeros(len(y))
    for train, test in GroupKFold(n_splits=min(FOLDS, len(used))).split(x, y, groups):
        model = _model("trees", 0)
        model.fit(x[train], y[train])
        p[test] = model.predict_proba(x[test])[:, list(model.classes_).index(1)]
    per_row = np.split(p, np.cumsum([len(r.candidates) for r in used])[:-1])
    multi = [i for i, r in enumerate(used) if r.gold_count >= 2]
    single = [i for i, r in enumerate(used) if r.gold_count == 1]

    def summary(t: float, sizes: list[int]) -> dict[str, float]:
        complete = [used[i].gold_at[: sizes[i]].count(True) == used[i].gold_count for i in multi]
        return {"threshold": t, "completeness": float(np.mean(complete)) if multi else math.nan,
                "size_multi": float(np.mean([sizes[i] for i in multi])) if multi else math.nan,
                "size_single": float(np.mean([sizes[i] for i in single])) if single else math.nan}

    out = [summary(math.nan, [r.selected for r in used])]
    out.append({**summary(math.inf, [min(5, len(r.gold_at)) for r in used]), "threshold": -1.0})
    for t in thresholds:
        sizes = []
        for probs in per_row:
            below = np.flatnonzero(probs < t)
            sizes.append(1 + (int(below[0]) if len(below) else len(probs)))
        out.append(summary(t, sizes))
    return out


def format_tables(results: dict[str, Any]) -> str:
    sets = results["sets"]
    lines = ["No tool (sets with requests that need none): AUC of P(no tool) and accuracy at the best threshold "
             "chosen with the labels; the shipped decision's own accuracy beside them.", "",
             "| set | rows | AUC shipped | AUC logistic, own labels | AUC trees, own labels | accuracy shipped "
             "(its decision) | best-threshold accuracy: shipped P | logistic | trees |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, s in sets.items():
        if "no_tool_auc_shipped" in s:
            lines.append(f"| {name} | {int(s['n'])} | {_pct(s['no_tool_auc_shipped'])} | "
                         f"{_pct(s.get('no_tool_auc_logistic'))} | {_pct(s.get('no_tool_auc_trees'))} | "
                         f"{_pct(s['no_tool_acc_shipped'])} | {_pct(s['no_tool_best_acc_shipped'])} | "
                         f"{_pct(s.get('no_tool_best_acc_logistic'))} | {_pct(s.get('no_tool_best_acc_trees'))} |")
    lines += ["", f"EXECUTE at {100 * PRECISION:.0f}% precision: the largest share of the requests that need a tool "
              "that can be called with at least that precision, calling the highest P(right) first.", "",
              "| set | top-1 right | oracle (knows which calls are right) | shipped P(right) | logistic, own labels "
              "| trees, own labels |", "|---|---|---|---|---|---|"]
    for name, s in sets.items():
        if "top1" in s:
            lines.append(f"| {name} | {_pct(s['top1'])} | {_pct(s['coverage_oracle'])} | {_pct(s['coverage_shipped'])}"
                         f" | {_pct(s.get('coverage_logistic'))} | {_pct(s.get('coverage_trees'))} |")
    lines += ["", "The operating point: decision accuracy if the model turned requests away from P(no tool) >= t instead "
              "of 0.5 (the shipped decisions otherwise).", "",
              "| set | " + " | ".join(f"t = {t:.1f}" for t in THRESHOLDS) + " |", "|---|" + "---|" * len(THRESHOLDS)]
    for name, s in sets.items():
        lines.append(f"| {name} | " + " | ".join(_pct(s[f'accuracy_at_{t:.2f}']) for t in THRESHOLDS) + " |")
    if results.get("selection"):
        lines += ["", "The selection with the labels known: P(a lower candidate is a gold tool too) cross-fitted on the "
                  "catalog's own requests (trees), cut at t as the shipped selection is cut; Completeness of the "
                  "requests with several gold tools, and the mean number of tools injected.", "",
                  "| catalog (sets) | selection | Completeness, several-tool requests | tools injected there | "
                  "tools injected, single-tool requests |", "|---|---|---|---|---|"]
        for pool, entries in results["selection"].items():
            for e in entries:
                t = e["threshold"]
                label = "shipped" if math.isnan(t) else "top five" if t < 0 else f"labels known, t = {t:.2f}"
                lines.append(f"| {pool} | {label} | {_pct(e['completeness'])} | {e['size_multi']:.2f} | "
                             f"{e['size_single']:.2f} |")
    rows3 = [(name, s) for name, s in sets.items() if "accuracy_shipped" in s]
    if rows3:
        lines += ["", "Expected decision (sets labelled EXECUTE / CLARIFY / NO_TOOL), a three-class model "
                  "cross-fitted on the set's own rows:", "",
                  "| set | accuracy shipped | logistic | trees | CLARIFY recall shipped | logistic | trees |",
                  "|---|---|---|---|---|---|---|"]
        for name, s in rows3:
            lines.append(f"| {name} | {_pct(s['accuracy_shipped'])} | {_pct(s.get('accuracy_logistic'))} | "
                         f"{_pct(s.get('accuracy_trees'))} | {_pct(s['clarify_recall_shipped'])} | "
                         f"{_pct(s.get('clarify_recall_logistic'))} | {_pct(s.get('clarify_recall_trees'))} |")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from toolrag.encode.models import load_models
    from toolrag.settings import Settings

    opener = SetOpener(args, load_models(Settings()))
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine(), "revision": git_rev(),
                               "engine": engine_description(), "command": args.command_line, "sets": {}}
    collected: dict[str, list[FeatureRow]] = {}
    for name in args.sets.split(","):
        if name not in DECISION_SETS or name in ("bundled_tuned", "small"):
            raise SystemExit(f"--sets: unknown set {name!r}; choose from "
                             f"{', '.join(s for s in DECISION_SETS if s not in ('bundled_tuned', 'small'))}")
        start = time.perf_counter()
        retriever, rows = opener.rows(name)
        got = collected[name] = collect(retriever, rows)
        opener.save()
        results["sets"][name] = ceilings(got)
        say(f"{name}: {len(got)} rows in {time.perf_counter() - start:.0f}s")
    for pool, names in SELECTION_POOLS.items():
        if all(n in collected for n in names):
            results.setdefault("selection", {})[f"{pool} ({' + '.join(names)})"] = selection_ceiling(
                [r for n in names for r in collected[n]])
    return results


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--sets", default=",".join(s for s in DECISION_SETS if s not in ("bundled_tuned", "small")))
        parser.add_argument("--limit", type=int, default=None, help="at most this many rows per set (evenly spaced)")

    args = parse_args("bench.ceilings", "ceilings of the decision targets, with each set's labels known", argv,
                      options, benchmarks=True, results="ceilings.json", docs="the ceilings section of docs/decisions.md")
    return keep_results(args, run(args), "ceilings.json", format_tables, _write_docs)


def _write_docs(results: dict[str, Any]) -> None:
    from bench.report import write_section

    header = [f"Command: `{results['command']}`  ", f"Date: {results['date']}; machine: {results['machine']}; "
              f"revision {results['revision']}  ", f"Engine: {results['engine']}", "", ""]
    write_section("ceilings", "\n".join(header) + format_tables(results), doc=DOC)


if __name__ == "__main__":
    raise SystemExit(main())
