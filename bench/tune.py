"""Choose the default fusion from the dev splits: every weighting x normalisation, re-fused offline.

    python -m bench.tune [--sets metatool_dev,seal_dev] [--step 0.05] [--check 100]

Reads the per-query raw signal scores stored by ``bench/scores.py`` (the engine's own ``score_signals``
over the whole catalog, computed once) and re-fuses them with numpy for each candidate: the candidate pool
(exact scoring up to ``EXACT_LIMIT`` tools, else the union of each signal's top ``candidates``), min-max
over the pool or z-scores against the catalog (``toolrag.search.adaptive``: all tools up to 1,024, else 1,024
evenly spaced), weighted late fusion with absent signals' weight redistributed, ties broken by id - the
retriever's arithmetic. ``--check N`` re-runs the chosen setting through ``ToolRetriever.evaluate`` on N dev
queries and prints both numbers, which must agree.

Selection rule (documented in docs/benchmarks.md): the weighting whose worst margin over the dev sets,
NDCG@10(hybrid) - max(NDCG@10 of each signal alone), is largest, averaged over the weighting and its grid
neighbours (a point on a plateau beats a lucky spike). Only dev splits are read: MetaTool single offset 10
every 20th, Seal-Tools dev. Also calibrates the NO_TOOL threshold on the calibration half of MetaTool Task1.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import ENGINE, engine_description, machine, parse_args, say
from bench.datasets import bench_dir

__all__ = ["fuse", "grid", "metrics"]

SIGNALS = ("dense", "dense_en", "bm25")


def _scores_name(name: str) -> str:
    return f"{name}-{Path(ENGINE).name}" if ENGINE else name


def load(root: Path, name: str) -> dict[str, Any]:
    from bench.scores import load_scores

    data = load_scores(root, _scores_name(name))
    ids = data["ids"].astype(str)
    data["idrank"] = np.argsort(np.argsort(ids, kind="stable"), kind="stable")
    return data


def candidate_pool(data: dict[str, Any], *, exact_limit: int, candidates: int) -> np.ndarray:
    """Bool (queries x tools): the rows the retriever scores for each query."""
    n_q, n_t = data["dense"].shape
    if n_t <= max(exact_limit, candidates):
        return np.ones((n_q, n_t), dtype=bool)
    pool = np.zeros((n_q, n_t), dtype=bool)
    rows = np.arange(n_q)[:, None]
    for name in ("dense", "dense_en"):
        x = np.where(np.isnan(data[name]), -np.inf, data[name])
        top = np.argpartition(-x, candidates, axis=1)[:, :candidates]
        ok = np.isfinite(np.take_along_axis(x, top, 1))
        pool[np.broadcast_to(rows, top.shape)[ok], top[ok]] = True
    bm = np.where(data["bm25"] > 0, data["bm25"], -np.inf)
    top = np.argpartition(-bm, candidates, axis=1)[:, :candidates]
    ok = np.isfinite(np.take_along_axis(bm, top, 1))
    pool[np.broadcast_to(rows, top.shape)[ok], top[ok]] = True
    return pool


def _normalize(x: np.ndarray, pool: np.ndarray, method: str, reference: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    present = pool & ~np.isnan(x)
    with np.errstate(all="ignore"):
        if method == "minmax":
            xm = np.where(present, x, np.nan)
            lo, hi = np.nanmin(xm, 1, keepdims=True), np.nanmax(xm, 1, keepdims=True)
            out = np.where(hi > lo, (xm - lo) / (hi - lo), 0.0)
        elif method == "standard":
            within = reference if reference.ndim == 2 else reference[None, :]
            ref = np.where(within & ~np.isnan(x), x, np.nan)
            mu, sd = np.nanmean(ref, 1, keepdims=True), np.nanstd(ref, 1, keepdims=True)
            out = np.where(sd > 1e-12, (x - mu) / sd, 0.0)
        else:
            raise ValueError(f"unknown normalisation {method}")
    return np.where(present, out, 0.0), present


def fuse(data: dict[str, Any], weights: dict[str, float], method: str, pool: np.ndarray,
         *, pool_statistics: bool = False) -> np.ndarray:
    """Fused scores (queries x tools), -inf outside the pool, like ToolRetriever._fuse (late fusion).

    ``pool_statistics`` takes the z-score statistics from the candidate pool instead of the catalog (the
    design that toolrag.search.adaptive rejects; reported for comparison)."""
    from toolrag.search.adaptive import reference_rows

    n_t = data["dense"].shape[1]
    reference = np.zeros(n_t, dtype=bool)
    reference[reference_rows(np.arange(n_t))] = True
    if pool_statistics:
        reference = pool
    total = np.zeros(pool.shape)
    acc = np.zeros(pool.shape)
    for name, w in weights.items():
        if w <= 0:
            continue
        norm, present = _normalize(data[name], pool, method, reference)
        total += w * present
        acc += w * present * norm
    fused = np.where(total > 0, acc / np.where(total > 0, total, 1.0), 0.0)
    return np.where(pool, fused, -np.inf)


def top_k(fused: np.ndarray, idrank: np.ndarray, k: int = 10) -> np.ndarray:
    """Indices of the k best tools per query: fused score desc, then id asc."""
    n_t = fused.shape[1]
    width = min(n_t, k + 40)
    part = np.argpartition(-fused, width - 1, axis=1)[:, :width] if n_t > width else \
        np.tile(np.arange(n_t), (fused.shape[0], 1))
    out = np.empty((fused.shape[0], min(k, n_t)), dtype=np.int64)
    for i in range(fused.shape[0]):
        cand = part[i]
        out[i] = cand[np.lexsort((idrank[cand], -fused[i, cand]))[:k]]
    return out


def metrics(top: np.ndarray, gold: list[np.ndarray]) -> dict[str, float]:
    """Recall@5, NDCG@5/10, Completeness@5, MRR@10 (binary relevance), as toolrag.evaluation.metrics defines them."""
    disc = 1.0 / np.log2(np.arange(2, 12))
    acc = {"recall@5": 0.0, "ndcg@5": 0.0, "ndcg@10": 0.0, "completeness@5": 0.0, "mrr@10": 0.0}
    for row, g in zip(top, gold, strict=True):
        rel = np.isin(row[:10], g)
        acc["recall@5"] += rel[:5].sum() / len(g)
        acc["completeness@5"] += float(rel[:5].sum() == len(g))
        acc["ndcg@5"] += (rel[:5] * disc[:5]).sum() / disc[:min(len(g), 5)].sum()
        acc["ndcg@10"] += (rel * disc[:len(rel)]).sum() / disc[:min(len(g), 10)].sum()
        hit = np.flatnonzero(rel)
        acc["mrr@10"] += 1.0 / (hit[0] + 1) if len(hit) else 0.0
    return {k: v / len(gold) for k, v in acc.items()}


def grid(step: float) -> list[dict[str, float]]:
    from toolrag.evaluation.tune import simplex_grid

    return simplex_grid(list(SIGNALS), step)


def _neighbours(w: dict[str, float], table: dict[tuple[float, ...], float], step: float) -> list[float]:
    key = tuple(w[s] for s in SIGNALS)
    out = []
    for i in range(3):
        for j in range(3):
            if i == j:
                continue
            moved = list(key)
            moved[i], moved[j] = round(moved[i] + step, 6), round(moved[j] - step, 6)
            if tuple(moved) in table:
                out.append(table[tuple(moved)])
    return out


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--sets", default="metatool_dev,seal_dev")
        parser.add_argument("--step", type=float, default=0.05)
        parser.add_argument("--methods", default="minmax,standard")
        parser.add_argument("--check", type=int, default=0, help="re-run the choice through the engine on N queries")

    args = parse_args("bench.tune", "choose the default fusion on dev splits", argv, options)
    from toolrag.search.retriever import EXACT_LIMIT
    from toolrag.settings import Settings

    root = bench_dir(args.bench_dir)
    cfg = Settings()
    sets = args.sets.split(",")
    data = {name: load(root, name) for name in sets}
    pools = {name: candidate_pool(d, exact_limit=EXACT_LIMIT, candidates=cfg.candidates) for name, d in data.items()}
    singles = {name: {s: metrics(top_k(fuse(d, {s: 1.0}, "minmax", pools[name]), d["idrank"]), d["gold"])
                      for s in SIGNALS} for name, d in data.items()}
    best_single = {name: max(v["ndcg@10"] for v in singles[name].values()) for name in sets}
    results: list[dict[str, Any]] = []
    for method in args.methods.split(","):
        for w in grid(args.step):
            per = {name: metrics(top_k(fuse(d, w, method, pools[name]), d["idrank"]), d["gold"])
                   for name, d in data.items()}
            margin = min(per[n]["ndcg@10"] - best_single[n] for n in sets)
            results.append({"method": method, "weights": w, "sets": per, "margin": margin})
        say(f"{method}: {len(results)} settings evaluated")
    for method in args.methods.split(","):
        table = {tuple(r["weights"][s] for s in SIGNALS): r["margin"] for r in results if r["method"] == method}
        for r in results:
            if r["method"] == method:
                near = _neighbours(r["weights"], table, args.step)
                r["smoothed"] = float(np.mean([r["margin"], *near]))
    results.sort(key=lambda r: -r["smoothed"])
    chosen = results[0]
    say(f"chosen: {chosen['method']} {chosen['weights']} margin {100 * chosen['margin']:.2f} "
        f"(smoothed {100 * chosen['smoothed']:.2f})")
    out = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine(), "engine": engine_description(),
           "command": args.command_line, "sets": sets, "step": args.step,
           "exact_limit": EXACT_LIMIT, "singles": singles, "chosen": chosen, "top": results[:15],
           "current_defaults": _current(data, pools, cfg)}
    out["no_tool"] = _no_tool_threshold(root)
    if chosen["method"] == "standard":
        out["pool_statistics"] = {
            n: metrics(top_k(fuse(d, chosen["weights"], "standard", pools[n], pool_statistics=True), d["idrank"]),
                       d["gold"]) for n, d in data.items() if not pools[n].all()}
    if args.check:
        out["check"] = _check(root, sets[0], chosen, args.check, data[sets[0]], pools[sets[0]])
    target = root / f"tune{'-' + Path(ENGINE).name if ENGINE else ''}.json"
    target.write_text(json.dumps(out, indent=1, default=float), encoding="utf-8")
    say(f"wrote {target}")
    for r in results[:10]:
        cells = "  ".join(f"{n} {100 * r['sets'][n]['ndcg@10']:.2f}/{100 * r['sets'][n]['recall@5']:.2f}"
                          for n in sets)
        print(f"{r['method']:9s} {r['weights']}  margin {100 * r['margin']:+.2f} "
              f"smoothed {100 * r['smoothed']:+.2f}  {cells}")
    return 0


def _current(data: dict[str, Any], pools: dict[str, np.ndarray], cfg: Any) -> dict[str, Any]:
    w = {s: cfg.weights[s] for s in SIGNALS}
    method = cfg.normalization.value
    if method not in ("minmax", "standard"):
        return {"skipped": f"normalization {method} is not re-fused offline"}
    return {"weights": w, "method": method,
            "sets": {n: metrics(top_k(fuse(d, w, method, pools[n]), d["idrank"]), d["gold"]) for n, d in data.items()}}


def _no_tool_threshold(root: Path) -> dict[str, Any]:
    """The e5 confidence threshold that maximises decision accuracy on Task1's calibration half."""
    try:
        d = load(root, "metatool_task1")
    except FileNotFoundError:
        return {"skipped": "no stored scores for metatool_task1 (run bench/scores.py)"}
    positive = np.array([len(g) > 0 for g in d["gold"]])
    calibration = np.arange(len(positive)) % 4 < 2  # Task1 alternates need-a-tool / no-tool rows
    out: dict[str, Any] = {}
    for name in ("dense", "dense_en"):
        top = np.nanmax(d[name], axis=1)
        cands = np.unique(np.round(top[calibration], 3))
        acc = [float(((top[calibration] >= t) == positive[calibration]).mean()) for t in cands]
        best = float(cands[int(np.argmax(acc))])
        out[name] = {"threshold": best, "calibration_accuracy": max(acc),
                     "report_half_accuracy": float(((top[~calibration] >= best) == positive[~calibration]).mean())}
    return out


def _check(root: Path, name: str, chosen: dict[str, Any], n: int, data: dict[str, Any],
           pool: np.ndarray) -> dict[str, Any]:
    """The chosen setting through the real engine on the first n queries, against the offline re-fusion."""
    from bench.common import SETS, open_retriever
    from toolrag import Evaluator, load_queries
    from toolrag.settings import Settings

    spec = SETS[name]
    rows = load_queries(spec.queries_file(root))[:n]
    settings = Settings().with_overrides(normalization=chosen["method"], weights=chosen["weights"])
    engine = Evaluator(rows)(open_retriever(root, spec.source), settings=settings).metrics
    sub = {k: v[:n] for k, v in data.items() if isinstance(v, np.ndarray) and v.ndim == 2}
    sub.update(idrank=data["idrank"], gold=data["gold"][:n])
    offline = metrics(top_k(fuse(sub, chosen["weights"], chosen["method"], pool[:n]), data["idrank"]), data["gold"][:n])
    say(f"check on {n} {name} queries: engine ndcg@10 {engine['ndcg@10']:.4f}, offline {offline['ndcg@10']:.4f}")
    return {"n": n, "engine": {k: engine[k] for k in offline}, "offline": offline}


if __name__ == "__main__":
    raise SystemExit(main())
