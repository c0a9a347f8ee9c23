"""What each model trained by ``bench.train`` gives on the evaluation splits it never saw, against the shipped
retriever: the tables of docs/models.md ("Models trained here").

    python -m bench.train_eval                        # every trial (after `python -m bench.train`)
    python -m bench.train_eval --trials relevance --relevance-dir DIR

Offline and exact: the shipped retriever's top 30 of every request of every split is mined once
(``python -m bench.train_mine --eval ...``), then each trial re-scores it:

* ``relevance``: the cross-encoder (exported to ONNX int8 as it would ship) re-ranks the top N by the fused score
  plus w x its logit; N and w are chosen on the dev splits (MetaTool single dev, Seal-Tools dev) and reported on
  the test splits; and how well its best logit separates MetaTool Task1's requests that need no tool.
* ``linear``: a residual linear map on each text model's query vectors (``bench.train_query.fit_linear``), the
  signal alone before and after.
* ``fusion``: the fusion's weights (z-scores of the three text signals, their presence, the fused score, the rank)
  learned on the training requests (listwise), against the shipped weights.

Labels of the evaluation splits are read only to score; nothing here is fitted on them, except the choice of N
and w on the dev splits, which are not reported.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import parse_args, say
from bench.datasets import SETS, bench_dir
from bench.train_data import FOLDERS
from bench.train_mine import mined_dir
from bench.train_sets import Mined, load_mined, ranking_metrics

__all__ = ["main"]

TRIALS = ("relevance", "linear", "fusion")
DEV = ("metatool_dev", "seal_dev")
TEST = ("metatool_single", "metatool_multi", "seal_in", "seal_out", "gorilla")
TOPS = (3, 5, 10)
MIX = (0.25, 0.5, 1.0, 2.0)
_SIG = ("dense", "dense_en", "bm25")


def _evalmined(root: Path, name: str) -> Mined:
    return load_mined(root / "evalmined" / name, name)


def _ranked(m: Mined, rescore: Any = None) -> np.ndarray:
    """A (requests x tools) score matrix: the shipped order of the top 30, optionally re-scored by ``rescore(i,
    cands)`` (scores of the candidates); everything below the top 30 after."""
    s = np.full((len(m.rows), len(m.ids)), -1e9)
    for i, c in enumerate(m.candidates(30)):
        s[i, c] = -np.arange(len(c)) - 1000.0
        if rescore is not None and len(c):
            new = rescore(i, c)
            s[i, c[: len(new)]] = new
    return s


def relevance_trial(root: Path, model_dir: Path) -> dict[str, Any]:
    from bench.train_cross import cards_of
    from toolrag.encode.relevance import RelevanceModel
    from toolrag.search.relevance_text import request_text

    model = RelevanceModel(model_dir)
    out: dict[str, Any] = {"model": model.model_id, "sets": {}}
    logits: dict[str, np.ndarray] = {}
    for name in (*DEV, *TEST, "metatool_task1"):
        m = _evalmined(root, name)
        cards = cards_of(SETS[name].catalog_dir(root), m.ids)
        logit = np.full((len(m.rows), max(TOPS)), np.nan)
        for i, (r, c) in enumerate(zip(m.rows, m.candidates(max(TOPS)), strict=True)):
            if len(c):
                logit[i, : len(c)] = model.logits(request_text(r["text"], r["gloss"]), [cards[j] for j in c])
        logits[name] = logit
        say(f"relevance: {name} scored")
    def mixed(name: str, n: int, w: float) -> dict[str, float]:
        m = _evalmined(root, name)
        fused = [np.array([c["fused"] for c in r["cands"][:n]]) for r in m.rows]
        return ranking_metrics(_ranked(m, lambda i, c: fused[i] + w * np.nan_to_num(logits[name][i, : len(fused[i])],
                                                                                    nan=-20.0)), m.gold)
    grid = {(n, w): np.mean([mixed(d, n, w)["ndcg@10"] for d in DEV]) for n in TOPS for w in MIX}
    best = max(grid, key=lambda k: grid[k])
    base_dev = np.mean([ranking_metrics(_ranked(_evalmined(root, d)), _evalmined(root, d).gold)["ndcg@10"] for d in DEV])
    out["chosen"] = {"top_n": best[0], "w": best[1], "dev_ndcg": float(grid[best]), "dev_ndcg_shipped": float(base_dev)}
    for name in TEST:
        m = _evalmined(root, name)
        out["sets"][name] = {"shipped": ranking_metrics(_ranked(m), m.gold), "relevance": mixed(name, *best)}
    m = _evalmined(root, "metatool_task1")
    needs = np.array([len(g) > 0 for g in m.gold])
    top_en = np.array([max((c["dense_en"][0] for c in r["cands"] if c["dense_en"][0] == c["dense_en"][0]), default=0.0)
                       for r in m.rows])
    out["task1_auc"] = {"relevance (best logit of the top 3)": _auc(np.nanmax(logits["metatool_task1"][:, :3], axis=1), needs),
                        "all-MiniLM-L6-v2's top cosine": _auc(top_en, needs)}
    return out


def _auc(score: np.ndarray, positive: np.ndarray) -> float:
    pos, neg = score[positive], score[~positive]
    if not len(pos) or not len(neg):
        return math.nan
    return float(((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()) * 100)


def linear_trial(root: Path) -> dict[str, Any]:
    from bench.train_query import apply_linear, fit_linear, score_space, space_of

    train = [load_mined(mined_dir(root / "train", f), f) for f in FOLDERS]
    out: dict[str, Any] = {}
    for kind in ("dense_en", "dense"):
        maps = {decay: fit_linear([space_of(m, kind) for m in train], epochs=20, decay=decay)
                for decay in (1e-2, 1e-3)}
        for name in TEST:
            sp = space_of(_evalmined(root, name), kind)
            row = {"base": ranking_metrics(score_space(sp, sp.vectors), sp.gold)}
            for decay, A in maps.items():
                row[f"map (decay {decay:g})"] = ranking_metrics(score_space(sp, apply_linear(A, sp.vectors)), sp.gold)
            out.setdefault(kind, {})[name] = row
        say(f"linear: {kind} done")
    return out


def _features(m: Mined) -> list[np.ndarray]:
    out = []
    for r in m.rows:
        rows = []
        for k, cand in enumerate(r["cands"]):
            row: list[float] = []
            for s in _SIG:
                z = cand[s][1]
                row += [0.0 if z != z else z, 0.0 if z != z else 1.0]
            rows.append([*row, cand["fused"], math.log1p(k)])
        out.append(np.array(rows, dtype=np.float32).reshape(-1, 2 * len(_SIG) + 2))
    return out


def fusion_trial(root: Path, *, epochs: int = 30) -> dict[str, Any]:
    import torch

    xs, ys = [], []
    for f in FOLDERS:
        m = load_mined(mined_dir(root / "train", f), f)
        for x, c, g in zip(_features(m), m.candidates(30), m.gold, strict=True):
            hit = np.isin(c, g)
            if hit.any():
                xs.append(torch.as_tensor(x))
                ys.append(torch.as_tensor(hit))
    w = torch.zeros(xs[0].shape[1], requires_grad=True)
    with torch.no_grad():
        w[2 * len(_SIG)] = 1.0  # start at the shipped fused score
    opt = torch.optim.Adam([w], lr=0.01)
    for _ in range(epochs):
        for x, y in zip(xs, ys, strict=True):
            s = x @ w
            loss = torch.logsumexp(s, 0) - torch.logsumexp(s[y], 0)
            opt.zero_grad()
            loss.backward()
            opt.step()
    weights = w.detach().numpy()
    out: dict[str, Any] = {"weights": [round(float(v), 3) for v in weights], "sets": {}}
    for name in TEST:
        m = _evalmined(root, name)
        feats = _features(m)
        out["sets"][name] = {"shipped": ranking_metrics(_ranked(m), m.gold),
                             "learned": ranking_metrics(_ranked(m, lambda i, c, f=feats: f[i] @ weights), m.gold)}
    return out


def format_tables(results: dict[str, Any]) -> str:
    lines: list[str] = []
    keys = ("ndcg@10", "recall@1", "recall@5")
    def cells(metrics: dict[str, float]) -> str:
        return " | ".join(f"{metrics[k]:.2f}" for k in keys)
    if "relevance" in results:
        r = results["relevance"]
        c = r["chosen"]
        lines += [f"Relevance model `{r['model']}`, reranking the top {c['top_n']} by fused + {c['w']} x logit (chosen on "
                  f"the dev splits: NDCG@10 {c['dev_ndcg']:.2f} against {c['dev_ndcg_shipped']:.2f} shipped).", "",
                  "| set | shipped NDCG@10 | R@1 | R@5 | with the model NDCG@10 | R@1 | R@5 |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {n} | {cells(s['shipped'])} | {cells(s['relevance'])} |" for n, s in r["sets"].items()]
        lines += ["", "MetaTool Task1, AUC of needing a tool: " + ", ".join(
            f"{k} {v:.2f}" for k, v in r["task1_auc"].items()), ""]
    if "linear" in results:
        for kind, sets in results["linear"].items():
            variants = list(next(iter(sets.values())))
            lines += [f"Linear query map on `{kind}` (the signal alone; NDCG@10 / R@1):", "",
                      "| set | " + " | ".join(variants) + " |", "|---|" + "---|" * len(variants)]
            lines += [f"| {n} | " + " | ".join(f"{v[x]['ndcg@10']:.2f} / {v[x]['recall@1']:.2f}" for x in variants) + " |"
                      for n, v in sets.items()]
            lines.append("")
    if "fusion" in results:
        f = results["fusion"]
        lines += [f"Fusion weights learned on the training requests ({f['weights']}):", "",
                  "| set | shipped NDCG@10 | R@1 | R@5 | learned NDCG@10 | R@1 | R@5 |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {n} | {cells(s['shipped'])} | {cells(s['learned'])} |" for n, s in f["sets"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--trials", default=",".join(TRIALS), help=f"comma-separated: {', '.join(TRIALS)}")
        parser.add_argument("--relevance-dir", help="an exported relevance model folder (default: the shipped one)")

    args = parse_args("bench.train_eval", __doc__.split("\n")[0], argv, options, results="train_eval.json")
    from bench.common import keep_results

    root = bench_dir(args.bench_dir)
    trials = [t.strip() for t in args.trials.split(",") if t.strip()]
    unknown = sorted(set(trials) - set(TRIALS))
    if unknown:
        raise SystemExit(f"unknown trial {unknown[0]!r}; choose from {', '.join(TRIALS)}")
    results: dict[str, Any] = {"command": args.command_line}
    if "relevance" in trials:
        from toolrag.encode.relevance import PACKAGED_RELEVANCE

        results["relevance"] = relevance_trial(root, Path(args.relevance_dir) if args.relevance_dir else PACKAGED_RELEVANCE)
    if "linear" in trials:
        results["linear"] = linear_trial(root)
    if "fusion" in trials:
        results["fusion"] = fusion_trial(root)
    return keep_results(args, results, "train_eval.json", format_tables)


if __name__ == "__main__":
    raise SystemExit(main())
